//! IPv6 longest-prefix match: a multibit trie with a first level of 24 or 16 bits and 8-bit
//! levels below it.
//!
//! The first level has one `u32` entry per /24 or /16 prefix. Below it, 256-entry groups each
//! resolve 8 more bits, so a prefix of length `len` lives `ceil((len - first) / 8)` groups
//! deep, expanded over the `2^(end - len)` entries it covers at that level. A lookup follows
//! group pointers until it meets a leaf: at most one read of the first level and then one per
//! group (13 with a 24-bit first level, 14 with a 16-bit one, for a /128), as many as the
//! longest prefix on its way needs, whatever the number of routes.
//!
//! The FIB takes the 24-bit first level (DIR-24-8-…-8, the shape of DPDK's `rte_fib6` trie):
//! one dependent read less per lookup under the /32 to /64 prefixes a fabric routes, for 64 MiB
//! of entries and 16 MiB of prefix lengths per table, committed as routes are painted over them
//! (all of it once a default route is; the IPv4 FIB's first level is the same size). Small
//! tables (the my-SID table) take the 16-bit level of DPDK's `rte_lpm6`: 256 KiB of entries
//! and 64 KiB of lengths.
//!
//! Every group costs 1 KiB of entries plus 256 bytes of lengths. A prefix needs a group per
//! 8-bit level between the first level and its length that it does not share with other
//! prefixes, so the memory depends on how clustered the table is: about one group per route
//! for scattered /48s, far less for routes under common aggregates. Groups are capped by
//! [`Lpm6::max_groups`] and recycled when their last longer prefix goes.

use std::fmt;
use std::net::Ipv6Addr;

use super::lpm::{EXT, GROUP_SIZE, LpmError, MAX_VALUE, RuleMap, Trie, rule_map_bytes};

/// Addresses `Lpm6::lookup_batch` walks in lockstep.
const BATCH: usize = 16;

/// IPv6 LPM table mapping prefixes to `u32` values (at most [`MAX_VALUE`]).
#[derive(Clone)]
pub struct Lpm6 {
    trie: Trie,
    /// Installed rules, indexed by prefix length, keyed by the masked prefix.
    rules: Box<[RuleMap<u128>]>,
    count: usize,
}

impl Default for Lpm6 {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Lpm6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lpm6")
            .field("routes", &self.count)
            .field("groups_in_use", &self.groups_in_use())
            .field("max_groups", &self.max_groups())
            .finish()
    }
}

#[inline]
fn mask(addr: u128, len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        addr & (u128::MAX << (128 - u32::from(len)))
    }
}

impl Lpm6 {
    /// Address width.
    pub const MAX_LEN: u8 = 128;
    /// Groups allowed by [`Lpm6::new`] and [`Lpm6::for_fib`] (65536 groups: 80 MiB when all
    /// are used).
    pub const DEFAULT_MAX_GROUPS: u32 = 1 << 16;
    /// Bits of the FIB's first level ([`Lpm6::for_fib`]).
    pub const FIB_FIRST_LEVEL_BITS: u32 = 24;
    /// Bits of a small table's first level ([`Lpm6::new`]).
    pub const SMALL_FIRST_LEVEL_BITS: u32 = 16;

    /// An empty small table (a 16-bit first level) allowing [`Lpm6::DEFAULT_MAX_GROUPS`]
    /// groups.
    #[must_use]
    pub fn new() -> Self {
        Self::with_max_groups(Self::DEFAULT_MAX_GROUPS)
    }

    /// An empty small table (a 16-bit first level) allowing at most `max_groups` groups
    /// (capped at 2^31 - 1).
    #[must_use]
    pub fn with_max_groups(max_groups: u32) -> Self {
        Self::with_first_level(Self::SMALL_FIRST_LEVEL_BITS, max_groups)
    }

    /// An empty FIB (a 24-bit first level) allowing [`Lpm6::DEFAULT_MAX_GROUPS`] groups.
    #[must_use]
    pub fn for_fib() -> Self {
        Self::with_first_level(Self::FIB_FIRST_LEVEL_BITS, Self::DEFAULT_MAX_GROUPS)
    }

    /// An empty table whose first level is indexed by `first_bits` (16 or 24; the lookups
    /// read whole bytes) allowing at most `max_groups` groups (capped at 2^31 - 1).
    ///
    /// # Panics
    ///
    /// If `first_bits` is neither 16 nor 24.
    #[must_use]
    pub fn with_first_level(first_bits: u32, max_groups: u32) -> Self {
        assert!(
            first_bits == Self::SMALL_FIRST_LEVEL_BITS || first_bits == Self::FIB_FIRST_LEVEL_BITS,
            "an IPv6 first level of {first_bits} bits"
        );
        Self {
            trie: Trie::new(first_bits, max_groups),
            rules: (0..=Self::MAX_LEN).map(|_| RuleMap::default()).collect(),
            count: 0,
        }
    }

    /// Bits indexing the first level (16 or 24).
    #[must_use]
    pub fn first_level_bits(&self) -> u32 {
        self.trie.first
    }

    /// Installs `prefix/len -> value`, replacing and returning the previous value of the same
    /// prefix. Host bits of `prefix` are ignored. Fails, leaving the table unchanged, if `len`
    /// exceeds 128, `value` exceeds [`MAX_VALUE`], or the groups it needs are not available.
    ///
    /// # Errors
    ///
    /// [`LpmError::InvalidLength`], [`LpmError::ValueOutOfRange`] or [`LpmError::Full`].
    pub fn insert(
        &mut self,
        prefix: Ipv6Addr,
        len: u8,
        value: u32,
    ) -> Result<Option<u32>, LpmError> {
        if len > Self::MAX_LEN {
            return Err(LpmError::InvalidLength {
                len,
                max: Self::MAX_LEN,
            });
        }
        if value > MAX_VALUE {
            return Err(LpmError::ValueOutOfRange(value));
        }
        let key = mask(u128::from(prefix), len);
        self.trie.insert(key, u32::from(len), value + 1)?;
        let old = self.rules[usize::from(len)].insert(key, value);
        if old.is_none() {
            self.count += 1;
        }
        Ok(old)
    }

    /// Removes `prefix/len` (host bits ignored) and returns its value; `None` if it was not
    /// installed (or `len > 128`). Addresses it covered fall back to the next shorter prefix.
    pub fn remove(&mut self, prefix: Ipv6Addr, len: u8) -> Option<u32> {
        if len > Self::MAX_LEN {
            return None;
        }
        let key = mask(u128::from(prefix), len);
        let old = self.rules[usize::from(len)].remove(&key)?;
        self.count -= 1;
        let (entry, depth) = (0..len)
            .rev()
            .filter(|&l| !self.rules[usize::from(l)].is_empty())
            .find_map(|l| {
                self.rules[usize::from(l)]
                    .get(&mask(key, l))
                    .map(|&v| (v + 1, l))
            })
            .unwrap_or((0, 0));
        self.trie.remove(key, u32::from(len), entry, depth);
        Some(old)
    }

    /// The value installed for exactly `prefix/len` (host bits ignored).
    #[must_use]
    pub fn get(&self, prefix: Ipv6Addr, len: u8) -> Option<u32> {
        let map = self.rules.get(usize::from(len))?;
        map.get(&mask(u128::from(prefix), len)).copied()
    }

    /// Longest-prefix match for `addr` (an [`Ipv6Addr`] or a host-order `u128`): one read of
    /// the first level, then one per group on the way (at most 14 or 13 groups).
    #[inline]
    #[must_use]
    pub fn lookup(&self, addr: impl Into<u128>) -> Option<u32> {
        let a: u128 = addr.into();
        let mut shift = 128 - self.trie.first;
        let mut e = self.trie.top[(a >> shift) as usize];
        while e & EXT != 0 {
            // Groups of the last level (shift 0) hold only leaves, so this never wraps.
            shift = shift.wrapping_sub(8);
            e = self.trie.groups
                [((e & !EXT) as usize) * GROUP_SIZE + (a.wrapping_shr(shift) as usize & 0xff)];
        }
        e.checked_sub(1)
    }

    /// Looks up `addrs[i]` (an address's 16 bytes in network order, as a packet holds it) into
    /// `out[i]` for `i < min(addrs.len(), out.len())`. Walks 16 addresses at a time level by
    /// level, in lockstep, so the cache misses of different addresses overlap instead of
    /// queueing behind each other's dependent reads. Each group below the first level is
    /// indexed by one byte of the address, read as a byte: shifting a `u128` per level cost
    /// several instructions per address and level.
    #[inline]
    pub fn lookup_batch(&self, addrs: &[[u8; 16]], out: &mut [Option<u32>]) {
        let n = addrs.len().min(out.len());
        let (addrs, out) = (&addrs[..n], &mut out[..n]);
        let mut whole = addrs.chunks_exact(BATCH);
        let mut answers = out.chunks_exact_mut(BATCH);
        for (a, o) in (&mut whole).zip(&mut answers) {
            // Of a length the compiler knows, so that it lays each level's walk out without
            // a loop (whose count, pointer and test cost 4 of a level's 18 instructions).
            let a: &[[u8; 16]; BATCH] = a.try_into().expect("a whole chunk");
            self.walk_batch(a, o);
        }
        // The last few (often all: a burst's frames to one destination share its lookup) walk
        // in a loop, not padded to a whole batch.
        self.walk_batch(whole.remainder(), answers.into_remainder());
    }

    /// `lookup_batch` for at most `BATCH` addresses.
    #[inline(always)]
    fn walk_batch(&self, a: &[[u8; 16]], out: &mut [Option<u32>]) {
        let first = self.trie.first;
        // The first level's index: the address's first 2 or 3 bytes.
        let top_shift = 32 - first;
        let first_group_byte = (first / 8) as usize;
        let mut e = [0u32; BATCH];
        // The entries' bits OR-ed together: whether any is still extended (EXT).
        let mut seen = 0u32;
        for (e, x) in e.iter_mut().zip(a) {
            let head = u32::from_be_bytes([x[0], x[1], x[2], x[3]]);
            *e = self.trie.top[(head >> top_shift) as usize];
            seen |= *e;
        }
        // The first 2 or 3 bytes index the first level; the next the group under it, and so on.
        for byte in first_group_byte..16 {
            if seen & EXT == 0 {
                break;
            }
            seen = 0;
            // Without a branch per address: where the walk of an address ends is data (a
            // table's addresses end at different depths), a branch on it a coin toss the CPU
            // mispredicts. An address whose walk ended reads entry 0, in cache, and keeps its
            // own (a group exists: some address is still extended).
            for (e, x) in e.iter_mut().zip(a) {
                let extended = *e & EXT != 0;
                let at = ((*e & !EXT) as usize) * GROUP_SIZE + usize::from(x[byte]);
                let next = self.trie.groups[std::hint::select_unpredictable(extended, at, 0)];
                *e = std::hint::select_unpredictable(extended, next, *e);
                seen |= *e;
            }
        }
        for (o, &e) in out.iter_mut().zip(&e) {
            *o = e.checked_sub(1);
        }
    }

    /// Number of installed prefixes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if no prefix is installed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Installed routes as `(prefix, len, value)`, by increasing length, in no particular order
    /// within a length.
    pub fn iter(&self) -> impl Iterator<Item = (Ipv6Addr, u8, u32)> + '_ {
        self.rules.iter().enumerate().flat_map(|(len, m)| {
            m.iter()
                .map(move |(&k, &v)| (Ipv6Addr::from(k), len as u8, v))
        })
    }

    /// Calls `f(prefix, len, value)` for every installed route (same order as [`Lpm6::iter`]).
    pub fn for_each(&self, mut f: impl FnMut(Ipv6Addr, u8, u32)) {
        self.iter().for_each(|(p, l, v)| f(p, l, v));
    }

    /// Groups currently in use.
    #[must_use]
    pub fn groups_in_use(&self) -> usize {
        self.trie.groups_in_use()
    }

    /// Configured maximum number of groups.
    #[must_use]
    pub fn max_groups(&self) -> u32 {
        self.trie.max_groups
    }

    /// Approximate heap bytes: the first level, the groups ever allocated (in use or free), the
    /// rule maps at capacity.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes() + self.rules.iter().map(rule_map_bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::lpm::test_support::{Map, Rng};
    use super::*;

    /// Reference model: one map per prefix length; lookup probes lengths from 128 down to 0.
    struct Ref {
        maps: Vec<Map<u128>>,
    }

    fn ref_mask(a: u128, len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            (a >> (128 - len)) << (128 - len)
        }
    }

    /// Last address of `p/len`.
    fn last(p: u128, len: u8) -> u128 {
        p | u128::MAX.checked_shr(u32::from(len)).unwrap_or(0)
    }

    impl Ref {
        fn new() -> Self {
            Self {
                maps: (0..=128).map(|_| Map::default()).collect(),
            }
        }
        fn insert(&mut self, p: u128, len: u8, v: u32) -> Option<u32> {
            self.maps[usize::from(len)].insert(ref_mask(p, len), v)
        }
        fn remove(&mut self, p: u128, len: u8) -> Option<u32> {
            self.maps[usize::from(len)].remove(&ref_mask(p, len))
        }
        fn lookup(&self, a: u128) -> Option<u32> {
            (0..=128u8)
                .rev()
                .filter(|&l| !self.maps[usize::from(l)].is_empty())
                .find_map(|l| self.maps[usize::from(l)].get(&ref_mask(a, l)).copied())
        }
        fn len(&self) -> usize {
            self.maps.iter().map(Map::len).sum()
        }
        fn routes(&self) -> Vec<(u128, u8, u32)> {
            let mut v: Vec<_> = (0..=128u8)
                .flat_map(|l| {
                    self.maps[usize::from(l)]
                        .iter()
                        .map(move |(&p, &v)| (p, l, v))
                })
                .collect();
            v.sort_unstable();
            v
        }
    }

    fn ip(a: u128) -> Ipv6Addr {
        Ipv6Addr::from(a)
    }

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn routes_of(t: &Lpm6) -> Vec<(u128, u8, u32)> {
        let mut v: Vec<_> = t.iter().map(|(p, l, v)| (u128::from(p), l, v)).collect();
        v.sort_unstable();
        v
    }

    /// Every how many prefixes `check` probes around (all of them in release builds).
    const PROBE_STRIDE: usize = if cfg!(debug_assertions) { 8 } else { 1 };

    /// Compares `t` with `r`: `random` random addresses, and for every prefix in `probe` its
    /// first and last address, the addresses just outside it, and one inside at random.
    fn check(t: &Lpm6, r: &Ref, probe: &[(u128, u8)], random: usize, rng: &mut Rng) {
        assert_eq!(t.len(), r.len());
        for _ in 0..random {
            let a = rng.u128();
            assert_eq!(t.lookup(a), r.lookup(a), "random {}", ip(a));
        }
        for &(p, len) in probe.iter().step_by(PROBE_STRIDE) {
            let l = last(p, len);
            let inside = p | (rng.u128() & (l - p));
            for a in [p, l, p.wrapping_sub(1), l.wrapping_add(1), inside] {
                assert_eq!(
                    t.lookup(ip(a)),
                    r.lookup(a),
                    "{} near {}/{len}",
                    ip(a),
                    ip(p)
                );
            }
        }
        // The batch path must agree with the scalar one, on deep and on random addresses.
        let addrs: Vec<u128> = probe
            .iter()
            .take(1000)
            .flat_map(|&(p, len)| [p, last(p, len), rng.u128()])
            .collect();
        let bytes: Vec<[u8; 16]> = addrs.iter().map(|a| a.to_be_bytes()).collect();
        let mut out = vec![None; addrs.len()];
        t.lookup_batch(&bytes, &mut out);
        for (&a, &o) in addrs.iter().zip(&out) {
            assert_eq!(o, t.lookup(a), "batch {}", ip(a));
        }
    }

    /// Address pools shaped like a real table: /32 allocations, /48 sites, /64 subnets.
    struct Pools {
        p32: Vec<u128>,
        p48: Vec<u128>,
        p64: Vec<u128>,
    }

    impl Pools {
        fn new(rng: &mut Rng) -> Self {
            let p32: Vec<u128> = (0..512).map(|_| ref_mask(rng.u128(), 32)).collect();
            let p48: Vec<u128> = (0..4096)
                .map(|_| p32[rng.below(512) as usize] | ref_mask(rng.u128() >> 32, 16))
                .collect();
            let p64: Vec<u128> = (0..4096)
                .map(|_| p48[rng.below(4096) as usize] | ref_mask(rng.u128() >> 48, 16))
                .collect();
            Self { p32, p48, p64 }
        }

        fn pick(v: &[u128], rng: &mut Rng) -> u128 {
            v[rng.below(v.len() as u64) as usize]
        }

        /// A prefix: mostly /16../64 under the pools, 10% /65../128 under the /64s.
        fn prefix(&self, rng: &mut Rng) -> (u128, u8) {
            let (base, len) = match rng.below(100) {
                0..=2 => (Self::pick(&self.p32, rng), 16 + rng.below(16) as u8),
                3..=7 => (rng.u128(), 29 + rng.below(4) as u8),
                8..=22 => (
                    Self::pick(&self.p32, rng) | (rng.u128() >> 32),
                    33 + rng.below(15) as u8,
                ),
                23..=62 => (Self::pick(&self.p32, rng) | (rng.u128() >> 32), 48),
                63..=89 => (
                    Self::pick(&self.p48, rng) | (rng.u128() >> 48),
                    49 + rng.below(16) as u8,
                ),
                _ => (
                    Self::pick(&self.p64, rng) | (rng.u128() >> 64),
                    65 + rng.below(64) as u8,
                ),
            };
            (ref_mask(base, len), len)
        }
    }

    fn random_value(rng: &mut Rng) -> u32 {
        rng.below(u64::from(MAX_VALUE) + 1) as u32
    }

    #[test]
    fn empty_table_misses() {
        let t = Lpm6::new();
        assert!(t.is_empty());
        assert_eq!(t.lookup(0u128), None);
        assert_eq!(t.lookup(a("2001:db8::1")), None);
        assert_eq!(t.lookup(u128::MAX), None);
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.iter().count(), 0);
    }

    #[test]
    fn default_route_covers_everything_until_removed() {
        let mut t = Lpm6::new();
        assert_eq!(t.insert(Ipv6Addr::UNSPECIFIED, 0, 7), Ok(None));
        for x in [0u128, 1, 1 << 127, u128::MAX, u128::from(a("2001:db8::1"))] {
            assert_eq!(t.lookup(x), Some(7));
        }
        t.insert(a("2001:db8::"), 32, 8).unwrap();
        t.insert(a("2001:db8:0:1::"), 64, 9).unwrap();
        assert_eq!(t.lookup(a("2001:db8:0:1::5")), Some(9));
        assert_eq!(t.lookup(a("2001:db8:0:2::5")), Some(8));
        assert_eq!(t.lookup(a("2001:db9::")), Some(7));
        assert_eq!(t.insert(Ipv6Addr::UNSPECIFIED, 0, 17), Ok(Some(7)));
        assert_eq!(t.lookup(a("2001:db9::")), Some(17));
        assert_eq!(t.lookup(a("2001:db8:0:1::5")), Some(9));
        assert_eq!(t.remove(Ipv6Addr::UNSPECIFIED, 0), Some(17));
        assert_eq!(t.lookup(a("2001:db9::")), None);
        assert_eq!(t.lookup(u128::MAX), None);
        assert_eq!(t.lookup(a("2001:db8:0:2::5")), Some(8));
        assert_eq!(t.remove(Ipv6Addr::UNSPECIFIED, 0), None);
    }

    #[test]
    fn host_routes_use_all_fifteen_levels() {
        let mut t = Lpm6::new();
        let h = a("2001:db8:1:2:3:4:5:6");
        t.insert(a("2001:db8::"), 32, 1).unwrap();
        assert_eq!(t.insert(h, 128, 2), Ok(None));
        assert_eq!(t.groups_in_use(), 14);
        assert_eq!(t.lookup(h), Some(2));
        assert_eq!(t.lookup(u128::from(h) - 1), Some(1));
        assert_eq!(t.lookup(u128::from(h) + 1), Some(1));
        assert_eq!(t.lookup(u128::from(h) ^ (1 << 127)), None);
        assert_eq!(t.insert(Ipv6Addr::from(u128::MAX), 128, 3), Ok(None));
        assert_eq!(t.insert(Ipv6Addr::UNSPECIFIED, 128, 4), Ok(None));
        assert_eq!(t.lookup(u128::MAX), Some(3));
        assert_eq!(t.lookup(u128::MAX - 1), None);
        assert_eq!(t.lookup(0u128), Some(4));
        assert_eq!(t.lookup(1u128), None);
        assert_eq!(t.groups_in_use(), 42);
        assert_eq!(t.remove(h, 128), Some(2));
        assert_eq!(t.lookup(h), Some(1));
        assert_eq!(t.remove(Ipv6Addr::from(u128::MAX), 128), Some(3));
        assert_eq!(t.remove(Ipv6Addr::UNSPECIFIED, 128), Some(4));
        // The /32 keeps the groups for bits 16..24 and 24..32.
        assert_eq!(t.groups_in_use(), 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t.remove(a("2001:db8::"), 32), Some(1));
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(u128::MAX), None);
    }

    /// A FIB's 24-bit first level: prefixes up to /24 need no group, a longer one a group per
    /// 8 bits past /24 (a /128: thirteen, shared with the prefixes above it), and a lookup
    /// follows them.
    #[test]
    fn a_fib_resolves_24_bits_in_its_first_level() {
        let mut t = Lpm6::for_fib();
        assert_eq!(t.first_level_bits(), 24);
        t.insert(a("2001:d00::"), 24, 1).unwrap();
        t.insert(a("2001:db8::"), 23, 2).unwrap();
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(a("2001:dff::1")), Some(1));
        assert_eq!(t.lookup(a("2001:c00::1")), Some(2));
        assert_eq!(t.lookup(a("2001:e00::1")), None);
        t.insert(a("2001:d00::"), 25, 3).unwrap();
        assert_eq!(t.groups_in_use(), 1);
        assert_eq!(t.lookup(a("2001:d7f:ffff::")), Some(3));
        assert_eq!(t.lookup(a("2001:d80::")), Some(1));
        let h = a("2001:db8:1:2:3:4:5:6");
        t.insert(h, 128, 4).unwrap();
        // It shares the /25's group for bits 24..32 and needs one for each byte after it.
        assert_eq!(t.groups_in_use(), 1 + 12);
        let probes = [
            h,
            a("2001:db8:1:2:3:4:5:7"),
            a("2001:d12::"),
            a("2001:dff::"),
        ];
        let want = [Some(4), Some(1), Some(3), Some(1)];
        let bytes: Vec<[u8; 16]> = probes.iter().map(|p| p.octets()).collect();
        let mut out = [None; 4];
        t.lookup_batch(&bytes, &mut out);
        assert_eq!(out, want);
        for (p, w) in probes.iter().zip(want) {
            assert_eq!(t.lookup(*p), w);
        }
        assert_eq!(t.remove(h, 128), Some(4));
        assert_eq!(t.remove(a("2001:d00::"), 25), Some(3));
        assert_eq!(t.groups_in_use(), 0);
    }

    #[test]
    #[should_panic(expected = "an IPv6 first level of 20 bits")]
    fn a_first_level_must_be_whole_bytes_the_lookups_read() {
        let _ = Lpm6::with_first_level(20, 1);
    }

    #[test]
    fn replace_returns_old_value() {
        let mut t = Lpm6::new();
        let p = a("2001:db8::");
        assert_eq!(t.insert(p, 32, 1), Ok(None));
        assert_eq!(t.insert(p, 32, 2), Ok(Some(1)));
        assert_eq!(t.len(), 1);
        let q = a("2001:db8:0:5::");
        assert_eq!(t.insert(q, 64, 3), Ok(None));
        let groups = t.groups_in_use();
        assert_eq!(t.insert(q, 64, 4), Ok(Some(3)));
        assert_eq!(t.groups_in_use(), groups);
        assert_eq!(t.lookup(a("2001:db8:0:5:ffff::")), Some(4));
        assert_eq!(t.lookup(a("2001:db8:0:6::")), Some(2));
        assert_eq!(t.insert(p, 32, 5), Ok(Some(2)));
        assert_eq!(t.lookup(a("2001:db8:0:5:ffff::")), Some(4));
        assert_eq!(t.lookup(a("2001:db8:0:6::")), Some(5));
        assert_eq!(t.get(q, 64), Some(4));
        assert_eq!(t.get(q, 63), None);
    }

    #[test]
    fn invalid_length_and_value_are_rejected_without_change() {
        let mut t = Lpm6::new();
        t.insert(a("2001:db8::"), 32, 1).unwrap();
        assert_eq!(
            t.insert(a("2001:db8::1"), 129, 2),
            Err(LpmError::InvalidLength { len: 129, max: 128 })
        );
        assert_eq!(
            t.insert(a("2001:db8::1"), 255, 2),
            Err(LpmError::InvalidLength { len: 255, max: 128 })
        );
        assert_eq!(
            t.insert(a("2001:db8::1"), 128, MAX_VALUE + 1),
            Err(LpmError::ValueOutOfRange(MAX_VALUE + 1))
        );
        assert_eq!(t.remove(a("2001:db8::1"), 129), None);
        assert_eq!(t.get(a("2001:db8::1"), 129), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.groups_in_use(), 2);
        assert_eq!(t.lookup(a("2001:db8::1")), Some(1));
        assert_eq!(t.insert(a("2001:db8::1"), 128, MAX_VALUE), Ok(None));
        assert_eq!(t.lookup(a("2001:db8::1")), Some(MAX_VALUE));
    }

    #[test]
    fn host_bits_are_masked() {
        let mut t = Lpm6::new();
        assert_eq!(t.insert(a("2001:db8:1:2::3"), 32, 1), Ok(None));
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![(a("2001:db8::"), 32, 1)]);
        assert_eq!(t.get(a("2001:db8:ffff::"), 32), Some(1));
        assert_eq!(t.remove(a("2001:db8:9::9"), 32), Some(1));
        assert!(t.is_empty());
    }

    #[test]
    fn remove_48_with_longer_children_and_32_under_48() {
        let mut t = Lpm6::new();
        let mut r = Ref::new();
        let routes: Vec<(u128, u8, u32)> = [
            ("2001:db8::", 32, 1),
            ("2001:db8:aa::", 48, 2),
            ("2001:db8:aa:1::", 64, 3),
            ("2001:db8:aa:1:8000::", 65, 4),
            ("2001:db8:aa:1::1", 128, 5),
            ("2001:db8:aa:ff00::", 56, 6),
            ("2001:db8:ab::", 48, 7),
        ]
        .iter()
        .map(|&(p, l, v)| (u128::from(a(p)), l, v))
        .collect();
        for &(p, l, v) in &routes {
            assert_eq!(t.insert(ip(p), l, v), Ok(r.insert(p, l, v)));
        }
        let probe: Vec<_> = routes.iter().map(|&(p, l, _)| (p, l)).collect();
        let mut rng = Rng::new(6);
        check(&t, &r, &probe, 1000, &mut rng);
        let groups = t.groups_in_use();
        assert_eq!(t.remove(a("2001:db8:aa::"), 48), Some(2));
        r.remove(u128::from(a("2001:db8:aa::")), 48);
        assert_eq!(t.groups_in_use(), groups);
        check(&t, &r, &probe, 1000, &mut rng);
        assert_eq!(t.lookup(a("2001:db8:aa:2::")), Some(1));
        assert_eq!(t.lookup(a("2001:db8:aa:1::1")), Some(5));
        assert_eq!(t.lookup(a("2001:db8:aa:1::2")), Some(3));
        assert_eq!(t.lookup(a("2001:db8:aa:1:8000::2")), Some(4));
        assert_eq!(t.lookup(a("2001:db8:aa:ff01::")), Some(6));
        // The /32 goes from under the /48s and /64s.
        assert_eq!(t.remove(a("2001:db8::"), 32), Some(1));
        r.remove(u128::from(a("2001:db8::")), 32);
        check(&t, &r, &probe, 1000, &mut rng);
        assert_eq!(t.lookup(a("2001:db8:aa:2::")), None);
        assert_eq!(t.lookup(a("2001:db8:ab:2::")), Some(7));
        assert_eq!(t.lookup(a("2001:db8:aa:1::1")), Some(5));
        // Back again, then the children go: only the /48 level groups remain.
        t.insert(a("2001:db8::"), 32, 11).unwrap();
        r.insert(u128::from(a("2001:db8::")), 32, 11);
        for &(p, l, _) in &routes[2..6] {
            assert_eq!(t.remove(ip(p), l), r.remove(p, l));
            check(&t, &r, &probe, 100, &mut rng);
        }
        // 2001:db8:ab::/48 needs the groups for bits 16..24, 24..32, 32..40 and 40..48.
        assert_eq!(t.groups_in_use(), 4);
        assert_eq!(t.remove(a("2001:db8:ab::"), 48), Some(7));
        assert_eq!(t.groups_in_use(), 2);
        assert_eq!(t.remove(a("2001:db8::"), 32), Some(11));
        assert_eq!(t.groups_in_use(), 0);
        assert!(t.is_empty());
    }

    #[test]
    fn full_when_out_of_groups_and_unchanged() {
        let mut t = Lpm6::with_max_groups(14);
        t.insert(a("2001:db8::"), 32, 1).unwrap();
        t.insert(a("2001:db8::1:0:0:1"), 128, 2).unwrap();
        assert_eq!(t.groups_in_use(), 14);
        let before = routes_of(&t);
        for (p, l) in [
            ("2001:db8:1::", 64),
            ("2001:db9::", 48),
            ("2001:db8::1:0:0:100", 128),
        ] {
            assert_eq!(t.insert(a(p), l, 3), Err(LpmError::Full));
            assert_eq!(routes_of(&t), before);
            assert_eq!(t.groups_in_use(), 14);
            assert_eq!(t.get(a(p), l), None);
        }
        assert_eq!(t.lookup(a("2001:db8:0:1::")), Some(1));
        assert_eq!(t.lookup(a("2001:db8::1:0:0:100")), Some(1));
        // Only needs existing groups.
        assert_eq!(t.insert(a("2001:db8::1:0:0:2"), 127, 4), Ok(None));
        assert_eq!(t.insert(a("2001:db8::"), 64, 5), Ok(None));
        assert_eq!(t.insert(a("2001:db8::1:0:0:80"), 121, 6), Ok(None));
        assert_eq!(t.lookup(a("2001:db8::1:0:0:3")), Some(4));
        assert_eq!(t.lookup(a("2001:db8::1:0:0:ff")), Some(6));
        assert_eq!(t.lookup(a("2001:db8::1:0:1:0")), Some(5));
        let mut z = Lpm6::with_max_groups(0);
        assert_eq!(z.insert(a("2001:db8::"), 17, 1), Err(LpmError::Full));
        assert_eq!(z.insert(a("2001:db8::"), 16, 1), Ok(None));
        assert!(z.lookup(a("2001:db8::")).is_some());
    }

    /// Prefixes of all lengths over 1024 addresses that differ only in bits next to the stride
    /// boundaries, inserted and removed at random, checked on all of them (and their
    /// neighbours) as they go.
    #[test]
    fn dense_interleaved_updates() {
        dense_interleaved_updates_with(Lpm6::SMALL_FIRST_LEVEL_BITS);
    }

    #[test]
    fn dense_interleaved_updates_in_a_fib() {
        dense_interleaved_updates_with(Lpm6::FIB_FIRST_LEVEL_BITS);
    }

    fn dense_interleaved_updates_with(first_bits: u32) {
        let mut rng = Rng::new(0xd15e6);
        const BITS: [u32; 10] = [0, 15, 16, 23, 24, 47, 63, 64, 120, 127];
        let base = BITS
            .iter()
            .fold(rng.u128(), |b, &i| b & !(1u128 << (127 - i)));
        let addrs: Vec<u128> = (0..1u32 << BITS.len())
            .map(|m| {
                BITS.iter()
                    .enumerate()
                    .filter(|&(j, _)| m >> j & 1 == 1)
                    .fold(base, |b, (_, &i)| b | 1 << (127 - i))
            })
            .collect();
        const LENS: [u8; 22] = [
            0, 1, 2, 15, 16, 17, 23, 24, 25, 31, 32, 47, 48, 63, 64, 65, 100, 120, 121, 126, 127,
            128,
        ];
        let mut t = Lpm6::with_first_level(first_bits, 1 << 14);
        let mut r = Ref::new();
        let mut installed: Vec<(u128, u8)> = Vec::new();
        let ops = if cfg!(debug_assertions) { 1000 } else { 6000 };
        for op in 0..ops {
            if installed.is_empty() || rng.below(10) < 6 {
                let len = if rng.below(4) == 0 {
                    rng.below(129) as u8
                } else {
                    LENS[rng.below(22) as usize]
                };
                let p = ref_mask(addrs[rng.below(1024) as usize], len);
                let v = rng.below(1000) as u32;
                assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
                installed.push((p, len));
            } else {
                let (p, len) = installed.swap_remove(rng.below(installed.len() as u64) as usize);
                assert_eq!(t.remove(ip(p), len), r.remove(p, len));
            }
            if op % 20 == 0 {
                for &x in addrs.iter().step_by(if op % 100 == 0 { 1 } else { 5 }) {
                    for y in [x, x.wrapping_sub(1), x.wrapping_add(1)] {
                        assert_eq!(t.lookup(y), r.lookup(y), "{} after op {op}", ip(y));
                    }
                }
                assert_eq!(t.len(), r.len());
            }
        }
        assert_eq!(routes_of(&t), r.routes());
        for (p, len) in installed {
            assert_eq!(t.remove(ip(p), len), r.remove(p, len));
        }
        assert!(t.is_empty());
        assert_eq!(t.groups_in_use(), 0);
        for &x in &addrs {
            assert_eq!(t.lookup(x), None);
        }
    }

    /// Random routes (100k in debug builds, 300k in release) against the reference, through
    /// inserts, removes, re-inserts and the removal of every prefix longer than /16.
    #[test]
    fn random_routes_match_reference() {
        random_routes_match_reference_with(Lpm6::SMALL_FIRST_LEVEL_BITS);
    }

    #[test]
    fn random_routes_match_reference_in_a_fib() {
        random_routes_match_reference_with(Lpm6::FIB_FIRST_LEVEL_BITS);
    }

    fn random_routes_match_reference_with(first_bits: u32) {
        let n = if cfg!(debug_assertions) {
            100_000
        } else {
            300_000
        };
        let mut rng = Rng::new(0x01c0_c106);
        let pools = Pools::new(&mut rng);
        let mut t = Lpm6::with_first_level(first_bits, 1 << 22);
        let mut r = Ref::new();
        let mut routes: Vec<(u128, u8)> = Vec::with_capacity(n);
        for _ in 0..n {
            let (p, len) = pools.prefix(&mut rng);
            let v = random_value(&mut rng);
            assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
            routes.push((p, len));
        }
        check(&t, &r, &routes, n / 8, &mut rng);
        assert_eq!(routes_of(&t), r.routes());

        let mut removed = Vec::new();
        for &(p, len) in &routes {
            if rng.below(2) == 0 {
                assert_eq!(t.remove(ip(p), len), r.remove(p, len));
                removed.push((p, len));
            }
        }
        check(&t, &r, &routes, n / 16, &mut rng);

        for &(p, len) in removed.iter().step_by(3).chain(routes.iter().step_by(7)) {
            let v = random_value(&mut rng);
            assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
        }
        check(&t, &r, &routes, n / 16, &mut rng);
        assert_eq!(routes_of(&t), r.routes());

        for &(p, len) in routes.iter().filter(|&&(_, l)| l > 16) {
            assert_eq!(t.remove(ip(p), len), r.remove(p, len));
        }
        assert_eq!(t.groups_in_use(), 0);
        check(&t, &r, &routes, n / 16, &mut rng);

        for &(p, len) in &routes {
            assert_eq!(t.remove(ip(p), len), r.remove(p, len));
        }
        assert!(t.is_empty());
        check(&t, &r, &routes[..1000], 10_000, &mut rng);
    }
}
