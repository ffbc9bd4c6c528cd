//! IPv4 longest-prefix match: DIR-24-8.
//!
//! The first level has one `u32` entry per /24 (2^24 entries, 64 MiB, plus a 16 MiB byte array
//! of prefix lengths used only by updates). Both are allocated at construction with
//! `vec![0; 1 << 24]`, which is calloc-backed: an empty table costs address space, not memory,
//! and pages are committed as routes are written into them. A /24 that holds a prefix longer
//! than /24 points to a 256-entry group (1 KiB of entries plus 256 bytes of lengths), allocated
//! on demand up to [`Lpm4::max_groups`] and recycled when its last long prefix goes.

use std::fmt;
use std::net::Ipv4Addr;

use super::lpm::{EXT, GROUP_SIZE, LpmError, MAX_VALUE, RuleMap, Trie, rule_map_bytes};

/// IPv4 LPM table mapping prefixes to `u32` values (at most [`MAX_VALUE`]).
#[derive(Clone)]
pub struct Lpm4 {
    trie: Trie,
    /// Installed rules, indexed by prefix length, keyed by the masked prefix.
    rules: [RuleMap<u32>; 33],
    count: usize,
}

impl Default for Lpm4 {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Lpm4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lpm4")
            .field("routes", &self.count)
            .field("groups_in_use", &self.groups_in_use())
            .field("max_groups", &self.max_groups())
            .finish()
    }
}

#[inline]
fn mask(addr: u32, len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        addr & (u32::MAX << (32 - u32::from(len)))
    }
}

/// The lookup half of an [`Lpm4`] for one burst of lookups: its first level as an array of
/// fixed size, so that indexing it by an address's top 24 bits needs no bounds check.
#[derive(Clone, Copy)]
pub struct Lpm4Lookups<'a> {
    top: &'a [u32; 1 << 24],
    groups: &'a [u32],
}

impl Lpm4Lookups<'_> {
    /// Starts fetching the first-level entry of `addr`.
    #[inline(always)]
    pub fn prefetch(&self, addr: u32) {
        crate::dpdk::prefetch(&self.top[(addr >> 8) as usize]);
    }

    /// [`Lpm4::lookup`].
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> Option<u32> {
        let mut e = self.top[(addr >> 8) as usize];
        if e & EXT != 0 {
            let at = ((e & !EXT) as usize) * GROUP_SIZE + (addr & 0xff) as usize;
            e = self.groups.get(at).copied().unwrap_or(0);
        }
        e.checked_sub(1)
    }
}

impl Lpm4 {
    /// The table's lookups for a burst (see [`Lpm4Lookups`]).
    #[inline(always)]
    pub fn lookups(&self) -> Lpm4Lookups<'_> {
        Lpm4Lookups {
            top: (&*self.trie.top)
                .try_into()
                .expect("an IPv4 first level has 2^24 entries"),
            groups: &self.trie.groups,
        }
    }
}

impl Lpm4 {
    /// Address width.
    pub const MAX_LEN: u8 = 32;
    /// Second-level groups allowed by [`Lpm4::new`] (65536 groups: 80 MiB when all are used).
    pub const DEFAULT_MAX_GROUPS: u32 = 1 << 16;

    /// An empty table allowing [`Lpm4::DEFAULT_MAX_GROUPS`] second-level groups.
    #[must_use]
    pub fn new() -> Self {
        Self::with_max_groups(Self::DEFAULT_MAX_GROUPS)
    }

    /// An empty table allowing at most `max_groups` second-level groups, i.e. /24s holding
    /// prefixes longer than /24 (capped at 2^31 - 1).
    #[must_use]
    pub fn with_max_groups(max_groups: u32) -> Self {
        Self {
            trie: Trie::new(24, max_groups),
            rules: std::array::from_fn(|_| RuleMap::default()),
            count: 0,
        }
    }

    /// Installs `prefix/len -> value`, replacing and returning the previous value of the same
    /// prefix. Host bits of `prefix` are ignored. Fails, leaving the table unchanged, if `len`
    /// exceeds 32, `value` exceeds [`MAX_VALUE`], or a new group is needed and none is left.
    ///
    /// # Errors
    ///
    /// [`LpmError::InvalidLength`], [`LpmError::ValueOutOfRange`] or [`LpmError::Full`].
    pub fn insert(
        &mut self,
        prefix: Ipv4Addr,
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
        let key = mask(u32::from(prefix), len);
        self.trie
            .insert(u128::from(key) << 96, u32::from(len), value + 1)?;
        let old = self.rules[usize::from(len)].insert(key, value);
        if old.is_none() {
            self.count += 1;
        }
        Ok(old)
    }

    /// Removes `prefix/len` (host bits ignored) and returns its value; `None` if it was not
    /// installed (or `len > 32`). Addresses it covered fall back to the next shorter prefix.
    pub fn remove(&mut self, prefix: Ipv4Addr, len: u8) -> Option<u32> {
        if len > Self::MAX_LEN {
            return None;
        }
        let key = mask(u32::from(prefix), len);
        let old = self.rules[usize::from(len)].remove(&key)?;
        self.count -= 1;
        let (entry, depth) = (0..len)
            .rev()
            .find_map(|l| {
                self.rules[usize::from(l)]
                    .get(&mask(key, l))
                    .map(|&v| (v + 1, l))
            })
            .unwrap_or((0, 0));
        self.trie
            .remove(u128::from(key) << 96, u32::from(len), entry, depth);
        Some(old)
    }

    /// The value installed for exactly `prefix/len` (host bits ignored).
    #[must_use]
    pub fn get(&self, prefix: Ipv4Addr, len: u8) -> Option<u32> {
        let map = self.rules.get(usize::from(len))?;
        map.get(&mask(u32::from(prefix), len)).copied()
    }

    /// Longest-prefix match for `addr` (an [`Ipv4Addr`] or a host-order `u32`): one read of the
    /// first level, and a second one only when that /24 holds prefixes longer than /24.
    #[inline]
    #[must_use]
    pub fn lookup(&self, addr: impl Into<u32>) -> Option<u32> {
        let a: u32 = addr.into();
        let mut e = self.trie.top[(a >> 8) as usize];
        if e & EXT != 0 {
            e = self.trie.groups[((e & !EXT) as usize) * GROUP_SIZE + (a & 0xff) as usize];
        }
        e.checked_sub(1)
    }

    /// Looks up `addrs[i]` into `out[i]` for `i < min(addrs.len(), out.len())`. All first-level
    /// reads are issued before any second-level read, so their cache misses overlap.
    #[inline]
    pub fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<u32>]) {
        let n = addrs.len().min(out.len());
        let mut first = [0u32; 16];
        for (a, o) in addrs[..n].chunks(16).zip(out[..n].chunks_mut(16)) {
            for (f, &x) in first.iter_mut().zip(a) {
                *f = self.trie.top[(x >> 8) as usize];
            }
            for ((o, &x), &e) in o.iter_mut().zip(a).zip(&first) {
                let e = if e & EXT != 0 {
                    self.trie.groups[((e & !EXT) as usize) * GROUP_SIZE + (x & 0xff) as usize]
                } else {
                    e
                };
                *o = e.checked_sub(1);
            }
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
    pub fn iter(&self) -> impl Iterator<Item = (Ipv4Addr, u8, u32)> + '_ {
        self.rules.iter().enumerate().flat_map(|(len, m)| {
            m.iter()
                .map(move |(&k, &v)| (Ipv4Addr::from(k), len as u8, v))
        })
    }

    /// Calls `f(prefix, len, value)` for every installed route (same order as [`Lpm4::iter`]).
    pub fn for_each(&self, mut f: impl FnMut(Ipv4Addr, u8, u32)) {
        self.iter().for_each(|(p, l, v)| f(p, l, v));
    }

    /// Second-level groups currently in use.
    #[must_use]
    pub fn groups_in_use(&self) -> usize {
        self.trie.groups_in_use()
    }

    /// Configured maximum number of second-level groups.
    #[must_use]
    pub fn max_groups(&self) -> u32 {
        self.trie.max_groups
    }

    /// Approximate heap bytes: the first level in full (even where its pages are untouched),
    /// the groups ever allocated (in use or free), the rule maps at capacity.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes() + self.rules.iter().map(rule_map_bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::lpm::test_support::{Map, Rng};
    use super::*;

    /// Reference model: one map per prefix length; lookup probes lengths from 32 down to 0.
    struct Ref {
        maps: Vec<Map<u32>>,
    }

    fn ref_mask(a: u32, len: u8) -> u32 {
        if len == 0 {
            0
        } else {
            (a >> (32 - len)) << (32 - len)
        }
    }

    /// Last address of `p/len`.
    fn last(p: u32, len: u8) -> u32 {
        p | u32::MAX.checked_shr(u32::from(len)).unwrap_or(0)
    }

    impl Ref {
        fn new() -> Self {
            Self {
                maps: (0..=32).map(|_| Map::default()).collect(),
            }
        }
        fn insert(&mut self, p: u32, len: u8, v: u32) -> Option<u32> {
            self.maps[usize::from(len)].insert(ref_mask(p, len), v)
        }
        fn remove(&mut self, p: u32, len: u8) -> Option<u32> {
            self.maps[usize::from(len)].remove(&ref_mask(p, len))
        }
        fn lookup(&self, a: u32) -> Option<u32> {
            (0..=32u8)
                .rev()
                .filter(|&l| !self.maps[usize::from(l)].is_empty())
                .find_map(|l| self.maps[usize::from(l)].get(&ref_mask(a, l)).copied())
        }
        fn len(&self) -> usize {
            self.maps.iter().map(Map::len).sum()
        }
        fn routes(&self) -> Vec<(u32, u8, u32)> {
            let mut v: Vec<_> = (0..=32u8)
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

    fn ip(a: u32) -> Ipv4Addr {
        Ipv4Addr::from(a)
    }

    fn routes_of(t: &Lpm4) -> Vec<(u32, u8, u32)> {
        let mut v: Vec<_> = t.iter().map(|(p, l, v)| (u32::from(p), l, v)).collect();
        v.sort_unstable();
        v
    }

    /// Every how many prefixes `check` probes around (all of them in release builds).
    const PROBE_STRIDE: usize = if cfg!(debug_assertions) { 3 } else { 1 };

    /// Compares `t` with `r`: `random` random addresses, and for every prefix in `probe` its
    /// first and last address, the addresses just outside it, and one inside at random.
    fn check(t: &Lpm4, r: &Ref, probe: &[(u32, u8)], random: usize, rng: &mut Rng) {
        assert_eq!(t.len(), r.len());
        for _ in 0..random {
            let a = rng.next() as u32;
            assert_eq!(t.lookup(a), r.lookup(a), "random {}", ip(a));
        }
        for &(p, len) in probe.iter().step_by(PROBE_STRIDE) {
            let l = last(p, len);
            let inside = p | (rng.next() as u32 & (l - p));
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
        // The batch path must agree with the scalar one.
        let addrs: Vec<u32> = (0..100).map(|_| rng.next() as u32).collect();
        let mut out = vec![None; addrs.len()];
        t.lookup_batch(&addrs, &mut out);
        for (&a, &o) in addrs.iter().zip(&out) {
            assert_eq!(o, r.lookup(a));
        }
    }

    /// A realistic-ish length mix: mostly /24, a tail of shorter ones, 3% longer than /24.
    fn random_len(rng: &mut Rng) -> u8 {
        const CUMULATIVE: [(u64, u8); 11] = [
            (550, 24),
            (630, 23),
            (730, 22),
            (780, 21),
            (830, 20),
            (870, 19),
            (900, 18),
            (920, 17),
            (950, 16),
            (969, 15),
            (970, 8),
        ];
        let x = rng.below(1000);
        match CUMULATIVE.iter().find(|&&(c, _)| x < c) {
            Some(&(_, 15)) => 9 + rng.below(7) as u8,
            Some(&(_, l)) => l,
            None => 25 + rng.below(8) as u8,
        }
    }

    fn random_value(rng: &mut Rng) -> u32 {
        rng.below(u64::from(MAX_VALUE) + 1) as u32
    }

    #[test]
    fn empty_table_misses() {
        let t = Lpm4::new();
        assert!(t.is_empty());
        assert_eq!(t.len(), 0);
        assert_eq!(t.lookup(0u32), None);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 2, 3)), None);
        assert_eq!(t.lookup(u32::MAX), None);
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.iter().count(), 0);
    }

    #[test]
    fn default_route_covers_everything_until_removed() {
        let mut t = Lpm4::new();
        assert_eq!(t.insert(Ipv4Addr::UNSPECIFIED, 0, 7), Ok(None));
        for a in [0u32, 1, 0x0a00_0001, 0x7fff_ffff, 0x8000_0000, u32::MAX] {
            assert_eq!(t.lookup(a), Some(7));
        }
        t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 8).unwrap();
        t.insert(Ipv4Addr::new(10, 1, 1, 128), 25, 9).unwrap();
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 1, 200)), Some(9));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 1, 1)), Some(8));
        assert_eq!(t.lookup(Ipv4Addr::new(11, 0, 0, 0)), Some(7));
        assert_eq!(t.insert(Ipv4Addr::UNSPECIFIED, 0, 17), Ok(Some(7)));
        assert_eq!(t.lookup(Ipv4Addr::new(11, 0, 0, 0)), Some(17));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 1, 1)), Some(8));
        assert_eq!(t.remove(Ipv4Addr::UNSPECIFIED, 0), Some(17));
        assert_eq!(t.lookup(Ipv4Addr::new(11, 0, 0, 0)), None);
        assert_eq!(t.lookup(u32::MAX), None);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 1, 200)), Some(9));
        assert_eq!(t.remove(Ipv4Addr::UNSPECIFIED, 0), None);
    }

    #[test]
    fn host_routes() {
        let mut t = Lpm4::new();
        let h = Ipv4Addr::new(192, 0, 2, 77);
        t.insert(Ipv4Addr::new(192, 0, 2, 0), 24, 1).unwrap();
        assert_eq!(t.insert(h, 32, 2), Ok(None));
        assert_eq!(t.groups_in_use(), 1);
        assert_eq!(t.lookup(h), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(192, 0, 2, 76)), Some(1));
        assert_eq!(t.lookup(Ipv4Addr::new(192, 0, 2, 78)), Some(1));
        assert_eq!(t.insert(Ipv4Addr::BROADCAST, 32, 3), Ok(None));
        assert_eq!(t.insert(Ipv4Addr::UNSPECIFIED, 32, 4), Ok(None));
        assert_eq!(t.lookup(u32::MAX), Some(3));
        assert_eq!(t.lookup(u32::MAX - 1), None);
        assert_eq!(t.lookup(0u32), Some(4));
        assert_eq!(t.lookup(1u32), None);
        assert_eq!(t.groups_in_use(), 3);
        assert_eq!(t.remove(h, 32), Some(2));
        assert_eq!(t.lookup(h), Some(1));
        assert_eq!(t.remove(Ipv4Addr::BROADCAST, 32), Some(3));
        assert_eq!(t.remove(Ipv4Addr::UNSPECIFIED, 32), Some(4));
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(u32::MAX), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn replace_returns_old_value() {
        let mut t = Lpm4::new();
        let p = Ipv4Addr::new(10, 0, 0, 0);
        assert_eq!(t.insert(p, 16, 1), Ok(None));
        assert_eq!(t.insert(p, 16, 2), Ok(Some(1)));
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 200, 1)), Some(2));
        let q = Ipv4Addr::new(10, 0, 5, 16);
        assert_eq!(t.insert(q, 28, 3), Ok(None));
        assert_eq!(t.insert(q, 28, 4), Ok(Some(3)));
        assert_eq!(t.groups_in_use(), 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 5, 31)), Some(4));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 5, 32)), Some(2));
        // Replacing the covering prefix keeps the longer one in front.
        assert_eq!(t.insert(p, 16, 5), Ok(Some(2)));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 5, 17)), Some(4));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 5, 15)), Some(5));
        assert_eq!(t.get(p, 16), Some(5));
        assert_eq!(t.get(q, 28), Some(4));
        assert_eq!(t.get(q, 27), None);
    }

    #[test]
    fn invalid_length_and_value_are_rejected_without_change() {
        let mut t = Lpm4::new();
        t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 1).unwrap();
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 0, 1), 33, 2),
            Err(LpmError::InvalidLength { len: 33, max: 32 })
        );
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 0, 1), 255, 2),
            Err(LpmError::InvalidLength { len: 255, max: 32 })
        );
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 0, 1), 32, MAX_VALUE + 1),
            Err(LpmError::ValueOutOfRange(MAX_VALUE + 1))
        );
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 0, 1), 32, u32::MAX),
            Err(LpmError::ValueOutOfRange(u32::MAX))
        );
        assert_eq!(t.remove(Ipv4Addr::new(10, 0, 0, 1), 33), None);
        assert_eq!(t.get(Ipv4Addr::new(10, 0, 0, 1), 33), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 0, 1)), Some(1));
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 0, 1), 32, MAX_VALUE),
            Ok(None)
        );
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 0, 1)), Some(MAX_VALUE));
        assert_eq!(t.insert(Ipv4Addr::new(10, 0, 0, 2), 32, 0), Ok(None));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 0, 2)), Some(0));
        assert!(
            LpmError::InvalidLength { len: 33, max: 32 }
                .to_string()
                .contains("/33")
        );
    }

    #[test]
    fn host_bits_are_masked() {
        let mut t = Lpm4::new();
        assert_eq!(t.insert(Ipv4Addr::new(10, 1, 2, 3), 8, 1), Ok(None));
        assert_eq!(
            t.iter().collect::<Vec<_>>(),
            vec![(Ipv4Addr::new(10, 0, 0, 0), 8, 1)]
        );
        assert_eq!(t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 2), Ok(Some(1)));
        assert_eq!(t.get(Ipv4Addr::new(10, 255, 0, 0), 8), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 200, 0, 1)), Some(2));
        assert_eq!(t.remove(Ipv4Addr::new(10, 9, 9, 9), 8), Some(2));
        assert!(t.is_empty());
        assert_eq!(t.lookup(Ipv4Addr::new(10, 200, 0, 1)), None);
    }

    #[test]
    fn remove_24_with_longer_children() {
        let mut t = Lpm4::new();
        let mut r = Ref::new();
        let routes: [(u32, u8, u32); 6] = [
            (0x0a01_0000, 16, 1),
            (0x0a01_0200, 24, 2),
            (0x0a01_0200, 25, 3),
            (0x0a01_02c0, 26, 4),
            (0x0a01_02ff, 32, 5),
            (0x0a01_0300, 24, 6),
        ];
        for &(p, l, v) in &routes {
            assert_eq!(t.insert(ip(p), l, v), Ok(r.insert(p, l, v)));
        }
        let probe: Vec<_> = routes.iter().map(|&(p, l, _)| (p, l)).collect();
        let mut rng = Rng::new(1);
        check(&t, &r, &probe, 1000, &mut rng);
        assert_eq!(t.remove(ip(0x0a01_0200), 24), r.remove(0x0a01_0200, 24));
        check(&t, &r, &probe, 1000, &mut rng);
        assert_eq!(
            t.lookup(0x0a01_0280u32),
            Some(1),
            "the /16 now covers the /24's gap"
        );
        assert_eq!(t.lookup(0x0a01_0200u32), Some(3));
        assert_eq!(t.lookup(0x0a01_02c1u32), Some(4));
        assert_eq!(t.lookup(0x0a01_02ffu32), Some(5));
        assert_eq!(t.groups_in_use(), 1);
        // Remove the children: the group goes back.
        for (p, l) in [(0x0a01_0200, 25), (0x0a01_02c0, 26), (0x0a01_02ff, 32)] {
            assert_eq!(t.remove(ip(p), l), r.remove(p, l));
            check(&t, &r, &probe, 100, &mut rng);
        }
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(0x0a01_02ffu32), Some(1));
        // Re-insert the /24 and a child; remove the child first this time.
        for &(p, l, v) in &[(0x0a01_0200, 24, 12), (0x0a01_0210, 28, 13)] {
            assert_eq!(t.insert(ip(p), l, v), Ok(r.insert(p, l, v)));
        }
        check(&t, &r, &probe, 100, &mut rng);
        assert_eq!(t.remove(ip(0x0a01_0210), 28), Some(13));
        r.remove(0x0a01_0210, 28);
        assert_eq!(t.groups_in_use(), 0);
        assert_eq!(t.lookup(0x0a01_0211u32), Some(12));
        check(&t, &r, &probe, 100, &mut rng);
    }

    #[test]
    fn remove_8_under_16() {
        let mut t = Lpm4::new();
        t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 1).unwrap();
        t.insert(Ipv4Addr::new(10, 20, 0, 0), 16, 2).unwrap();
        t.insert(Ipv4Addr::new(10, 20, 30, 40), 30, 3).unwrap();
        assert_eq!(t.lookup(Ipv4Addr::new(10, 21, 0, 0)), Some(1));
        assert_eq!(t.remove(Ipv4Addr::new(10, 0, 0, 0), 8), Some(1));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 21, 0, 0)), None);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 19, 255, 255)), None);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 0, 0)), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 255, 255)), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 30, 41)), Some(3));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 30, 44)), Some(2));
        t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 4).unwrap();
        assert_eq!(t.lookup(Ipv4Addr::new(10, 21, 0, 0)), Some(4));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 30, 44)), Some(2));
        assert_eq!(t.remove(Ipv4Addr::new(10, 20, 0, 0), 16), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 30, 44)), Some(4));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 20, 30, 41)), Some(3));
    }

    #[test]
    fn full_when_out_of_groups_and_unchanged() {
        let mut t = Lpm4::with_max_groups(2);
        assert_eq!(t.max_groups(), 2);
        t.insert(Ipv4Addr::new(10, 0, 0, 0), 8, 1).unwrap();
        t.insert(Ipv4Addr::new(10, 0, 1, 0), 25, 2).unwrap();
        t.insert(Ipv4Addr::new(10, 0, 2, 0), 26, 3).unwrap();
        assert_eq!(t.groups_in_use(), 2);
        let before = routes_of(&t);
        assert_eq!(
            t.insert(Ipv4Addr::new(10, 0, 3, 0), 32, 4),
            Err(LpmError::Full)
        );
        assert_eq!(routes_of(&t), before);
        assert_eq!(t.len(), 3);
        assert_eq!(t.groups_in_use(), 2);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 3, 0)), Some(1));
        assert_eq!(t.get(Ipv4Addr::new(10, 0, 3, 0), 32), None);
        assert!(!LpmError::Full.to_string().is_empty());
        // No new group needed: fine.
        assert_eq!(t.insert(Ipv4Addr::new(10, 0, 1, 255), 32, 5), Ok(None));
        assert_eq!(t.insert(Ipv4Addr::new(10, 0, 3, 0), 24, 6), Ok(None));
        // Freeing a group makes room.
        assert_eq!(t.remove(Ipv4Addr::new(10, 0, 2, 0), 26), Some(3));
        assert_eq!(t.groups_in_use(), 1);
        assert_eq!(t.insert(Ipv4Addr::new(10, 0, 3, 0), 32, 4), Ok(None));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 3, 0)), Some(4));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 3, 1)), Some(6));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 2, 0)), Some(1));
        let mut z = Lpm4::with_max_groups(0);
        assert_eq!(
            z.insert(Ipv4Addr::new(10, 0, 3, 0), 25, 4),
            Err(LpmError::Full)
        );
        assert_eq!(z.insert(Ipv4Addr::new(10, 0, 3, 0), 24, 4), Ok(None));
    }

    /// Many overlapping prefixes of all lengths inside one /20, inserted and removed at random,
    /// checked on every address of the /20 (and around it) as they go.
    #[test]
    fn dense_interleaved_updates() {
        let mut rng = Rng::new(0xd15e);
        let mut t = Lpm4::with_max_groups(16);
        let mut r = Ref::new();
        let base = 0xc633_6000u32; // 198.51.96.0/20
        let mut installed: Vec<(u32, u8)> = Vec::new();
        let ops = if cfg!(debug_assertions) { 1500 } else { 6000 };
        for op in 0..ops {
            if installed.is_empty() || rng.below(10) < 6 {
                let len = match rng.below(10) {
                    // Short prefixes repaint up to 2^24 entries: keep /0../8 rare, and in
                    // unoptimised builds use /8 only.
                    0 if rng.below(16) == 0 => {
                        if cfg!(debug_assertions) {
                            8
                        } else {
                            rng.below(9) as u8
                        }
                    }
                    0 => 9 + rng.below(11) as u8,
                    1..=3 => 20 + rng.below(5) as u8,
                    _ => 25 + rng.below(8) as u8,
                };
                let p = ref_mask(base | (rng.next() as u32 & 0xfff), len);
                let v = rng.below(1000) as u32;
                assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
                installed.push((p, len));
            } else {
                let (p, len) = installed.swap_remove(rng.below(installed.len() as u64) as usize);
                assert_eq!(t.remove(ip(p), len), r.remove(p, len));
            }
            if op % 10 == 0 {
                for a in (base - 256..base + 4096 + 256).step_by(if op % 150 == 0 { 1 } else { 13 })
                {
                    assert_eq!(t.lookup(a), r.lookup(a), "{} after op {op}", ip(a));
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
        for a in base - 256..base + 4096 + 256 {
            assert_eq!(t.lookup(a), None);
        }
    }

    /// Up to a million random routes (100k in debug builds) against the reference, through
    /// inserts, removes, re-inserts and the removal of every long prefix.
    #[test]
    fn random_routes_match_reference() {
        let n = if cfg!(debug_assertions) {
            100_000
        } else {
            1_000_000
        };
        let mut rng = Rng::new(0x01c0_c105);
        let mut t = Lpm4::with_max_groups(1 << 20);
        let mut r = Ref::new();
        let mut routes: Vec<(u32, u8)> = Vec::with_capacity(n);
        for _ in 0..n {
            let len = random_len(&mut rng);
            let p = ref_mask(rng.next() as u32, len);
            let v = random_value(&mut rng);
            assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
            routes.push((p, len));
        }
        check(&t, &r, &routes, n, &mut rng);
        assert_eq!(routes_of(&t), r.routes());

        // Remove about half (some entries are duplicates: the second remove finds nothing).
        let mut removed = Vec::new();
        for &(p, len) in &routes {
            if rng.below(2) == 0 {
                assert_eq!(t.remove(ip(p), len), r.remove(p, len));
                removed.push((p, len));
            }
        }
        check(&t, &r, &routes, n / 4, &mut rng);

        // Re-insert a third of them with new values, and replace some live ones.
        for &(p, len) in removed.iter().step_by(3).chain(routes.iter().step_by(7)) {
            let v = random_value(&mut rng);
            assert_eq!(t.insert(ip(p), len, v), Ok(r.insert(p, len, v)));
        }
        check(&t, &r, &routes, n / 4, &mut rng);
        assert_eq!(routes_of(&t), r.routes());

        // Without prefixes longer than /24, no group is needed any more.
        for &(p, len) in routes.iter().filter(|&&(_, l)| l > 24) {
            assert_eq!(t.remove(ip(p), len), r.remove(p, len));
        }
        assert_eq!(t.groups_in_use(), 0);
        check(&t, &r, &routes, n / 4, &mut rng);

        for &(p, len) in &routes {
            assert_eq!(t.remove(ip(p), len), r.remove(p, len));
        }
        assert!(t.is_empty());
        check(&t, &r, &routes[..1000], 10_000, &mut rng);
    }
}
