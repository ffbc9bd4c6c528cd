//! Longest-prefix match: what [`Lpm4`](super::Lpm4) and [`Lpm6`](super::Lpm6) share.
//!
//! `Lpm4` and `Lpm6` map prefixes to a compact `u32` payload (a nexthop or ECMP-group index,
//! at most [`MAX_VALUE`]). Both are DIR-style multibit tries sharing one private core:
//!
//! * `Lpm4` is DIR-24-8: a 2^24-entry first level indexed by the top 24 address bits, plus
//!   256-entry second-level groups for /24s that hold prefixes longer than /24. A lookup is one
//!   or two dependent memory reads.
//! * `Lpm6` is DIR-24-8-8-…-8 for a FIB (the shape of DPDK's `rte_fib6` trie) and
//!   DIR-16-8-…-8 for small tables (`rte_lpm6`'s): a 2^24- or 2^16-entry first level and then
//!   up to thirteen or fourteen levels of 256-entry groups. A lookup stops as soon as it
//!   reaches a leaf, so the cost depends on the length of the matching prefixes, never on the
//!   number of routes (beyond cache effects).
//!
//! Every entry is a `u32`: `0` means "no route", a leaf holds `value + 1`, and an entry with bit
//! 31 set holds the index of a child group. Lookups read only these entries; they are `#[inline]`
//! and never allocate.
//!
//! The installed rules are also kept in a side structure (one hash map per prefix length). That
//! is what makes `remove` exact (the covering shorter prefix is found by probing the shorter
//! lengths), and it serves `len`, `get` and `iter`. A parallel array of one byte per entry
//! records which prefix length produced each leaf; it is only touched by inserts and removes.
//!
//! Inserts and removes run on the control plane and may allocate. Groups are allocated on demand,
//! up to a configurable maximum ([`LpmError::Full`] beyond it, with the table left unchanged),
//! and a group is recycled as soon as no prefix longer than its parent entry remains under it.
//!
//! Host bits set in a prefix are masked off (`10.1.2.3/8` installs and removes `10.0.0.0/8`);
//! the control plane validates configuration before it gets here.

use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};

/// Largest payload an LPM table can store (bit 31 of an entry marks a child group and leaves
/// hold `value + 1`).
pub const MAX_VALUE: u32 = 0x7FFF_FFFE;

/// Why an LPM update was refused. A refused update leaves the table unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LpmError {
    /// The prefix length exceeds the address width.
    InvalidLength {
        /// The length that was asked for.
        len: u8,
        /// The address width (32 or 128).
        max: u8,
    },
    /// The value is larger than [`MAX_VALUE`].
    ValueOutOfRange(u32),
    /// The insert needs more groups than the configured maximum allows.
    Full,
}

impl fmt::Display for LpmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidLength { len, max } => {
                write!(f, "prefix length /{len} exceeds the maximum /{max}")
            }
            Self::ValueOutOfRange(v) => {
                write!(f, "LPM value {v} exceeds the maximum {MAX_VALUE}")
            }
            Self::Full => write!(f, "LPM table full: no free group for a longer prefix"),
        }
    }
}

impl std::error::Error for LpmError {}

/// Entry flag: the low 31 bits index a child group.
pub(super) const EXT: u32 = 1 << 31;
/// Entries per group (one 8-bit stride).
pub(super) const GROUP_SIZE: usize = 256;
/// Deepest possible path: the first level plus fourteen 8-bit levels (IPv6, /128).
const MAX_LEVELS: usize = 15;

// ---------------------------------------------------------------------------------------------
// Rule maps: a seeded multiply-fold hasher (SipHash would dominate insert/remove time).

/// Per-table random seed, so that route keys chosen by a peer cannot be made to collide.
#[derive(Clone)]
pub(super) struct SeededState(u64);

impl Default for SeededState {
    fn default() -> Self {
        Self(RandomState::new().hash_one(0x01c0_c105_u64) | 1)
    }
}

impl BuildHasher for SeededState {
    type Hasher = FoldHasher;
    fn build_hasher(&self) -> FoldHasher {
        FoldHasher(self.0)
    }
}

pub(super) struct FoldHasher(u64);

impl FoldHasher {
    #[inline]
    fn mix(&mut self, x: u64) {
        let m = u128::from(self.0 ^ x) * 0x9E37_79B9_7F4A_7C15u128;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(b));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.mix(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }
    fn write_u128(&mut self, x: u128) {
        self.mix(x as u64);
        self.mix((x >> 64) as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type RuleMap<K> = std::collections::HashMap<K, u32, SeededState>;

/// Approximate heap bytes of a rule map (buckets plus one control byte each).
pub(super) fn rule_map_bytes<K>(m: &RuleMap<K>) -> usize {
    m.capacity() * (std::mem::size_of::<(K, u32)>() + 1)
}

// ---------------------------------------------------------------------------------------------
// The shared trie core. Keys are left-aligned in a u128 (an IPv4 address is `addr << 96`).
// Level 0 is indexed by the top `first` bits; level k >= 1 by the 8 bits starting at
// `first + 8 (k - 1)`. A prefix of length `len` lives at the level whose end is the first one
// >= `len`, expanded over `2^(end - len)` entries of that level.

/// An entry: in the first level, or in the group array (`group * 256 + index`).
#[derive(Clone, Copy)]
enum Loc {
    Top(usize),
    Grp(usize),
}

#[derive(Clone)]
pub(super) struct Trie {
    /// Bits indexing the first level (24 for IPv4; 24 or 16 for IPv6: `Lpm6`).
    pub(super) first: u32,
    /// First-level entries (read by lookups).
    pub(super) top: Box<[u32]>,
    /// Prefix length that produced each first-level leaf (control plane only).
    top_depth: Box<[u8]>,
    /// All groups back to back, 256 entries each (read by lookups).
    pub(super) groups: Vec<u32>,
    /// Prefix length per group entry (control plane only).
    group_depth: Vec<u8>,
    /// Per group, the length of the longest prefix covering all of it (its "background"). A
    /// group's descendants have backgrounds at least as long, which lets updates of shorter
    /// prefixes skip whole subtrees that a longer prefix shadows.
    group_bg: Vec<u8>,
    /// Recycled group indices.
    free: Vec<u32>,
    /// Upper bound on `groups.len() / 256`.
    pub(super) max_groups: u32,
}

impl Trie {
    pub(super) fn new(first: u32, max_groups: u32) -> Self {
        // `vec![0; n]` is calloc-backed: the pages are only committed once written, so the
        // huge-page advice comes before any of them is.
        let top = vec![0u32; 1 << first];
        crate::dpdk::advise_huge_pages(&top);
        Self {
            first,
            top: top.into_boxed_slice(),
            top_depth: vec![0u8; 1 << first].into_boxed_slice(),
            groups: Vec::new(),
            group_depth: Vec::new(),
            group_bg: Vec::new(),
            free: Vec::new(),
            max_groups: max_groups.min(EXT - 1),
        }
    }

    fn groups_allocated(&self) -> usize {
        self.groups.len() / GROUP_SIZE
    }

    pub(super) fn groups_in_use(&self) -> usize {
        self.groups_allocated() - self.free.len()
    }

    pub(super) fn memory_bytes(&self) -> usize {
        // Group arrays grow by doubling (realloc moves them with mremap, without copying); the
        // spare capacity is never written, so it is not resident and not counted.
        self.top.len() * 4
            + self.top_depth.len()
            + self.groups.len() * 4
            + self.group_depth.len()
            + self.group_bg.len()
            + self.free.capacity() * 4
    }

    /// Level holding prefixes of length `len`.
    fn level_of(&self, len: u32) -> usize {
        if len <= self.first {
            0
        } else {
            (len - self.first).div_ceil(8) as usize
        }
    }

    /// Number of prefix bits consumed after `level`.
    fn end(&self, level: usize) -> u32 {
        self.first + 8 * level as u32
    }

    /// Index into the table or group of `level` for `key`.
    fn index(&self, key: u128, level: usize) -> usize {
        if level == 0 {
            (key >> (128 - self.first)) as usize
        } else {
            ((key << (self.end(level) - 8)) >> 120) as usize
        }
    }

    fn get(&self, loc: Loc) -> (u32, u8) {
        match loc {
            Loc::Top(i) => (self.top[i], self.top_depth[i]),
            Loc::Grp(i) => (self.groups[i], self.group_depth[i]),
        }
    }

    fn set(&mut self, loc: Loc, entry: u32, depth: u8) {
        match loc {
            Loc::Top(i) => {
                self.top[i] = entry;
                self.top_depth[i] = depth;
            }
            Loc::Grp(i) => {
                self.groups[i] = entry;
                self.group_depth[i] = depth;
            }
        }
    }

    /// Walks from level 0 towards the level of `len` along `key`: fills `path[0..=level]` with
    /// the entry met at each level, stopping early at a leaf. Returns the levels filled.
    fn walk(&self, key: u128, len: u32, path: &mut [Loc; MAX_LEVELS]) -> usize {
        let target = self.level_of(len);
        path[0] = Loc::Top(self.index(key, 0));
        for level in 0..target {
            let (e, _) = self.get(path[level]);
            if e & EXT == 0 {
                return level + 1;
            }
            path[level + 1] =
                Loc::Grp(((e & !EXT) as usize) * GROUP_SIZE + self.index(key, level + 1));
        }
        target + 1
    }

    /// Groups an insert of `key/len` would have to allocate.
    fn groups_needed(&self, key: u128, len: u32) -> usize {
        let mut path = [Loc::Top(0); MAX_LEVELS];
        let filled = self.walk(key, len, &mut path);
        self.level_of(len) + 1 - filled
    }

    fn groups_available(&self) -> usize {
        self.free.len() + (self.max_groups as usize).saturating_sub(self.groups_allocated())
    }

    /// A group whose every entry is `(entry, depth)`. Capacity must have been checked.
    fn alloc_group(&mut self, entry: u32, depth: u8) -> u32 {
        if let Some(g) = self.free.pop() {
            let r = g as usize * GROUP_SIZE..(g as usize + 1) * GROUP_SIZE;
            self.groups[r.clone()].fill(entry);
            self.group_depth[r].fill(depth);
            self.group_bg[g as usize] = depth;
            g
        } else {
            let g = self.groups_allocated() as u32;
            let capacity = self.groups.capacity();
            self.groups.resize(self.groups.len() + GROUP_SIZE, entry);
            if self.groups.capacity() != capacity {
                crate::dpdk::advise_huge_pages(&self.groups);
            }
            self.group_depth
                .resize(self.group_depth.len() + GROUP_SIZE, depth);
            self.group_bg.push(depth);
            g
        }
    }

    /// Installs leaf `entry` for the (masked) prefix `key/len`: every entry in its range whose
    /// leaf comes from a prefix no longer than `len` is overwritten, recursively through groups.
    /// The caller has already checked that `len` is valid.
    pub(super) fn insert(&mut self, key: u128, len: u32, entry: u32) -> Result<(), LpmError> {
        if self.groups_needed(key, len) > self.groups_available() {
            return Err(LpmError::Full);
        }
        let target = self.level_of(len);
        let mut loc = Loc::Top(self.index(key, 0));
        for level in 0..target {
            let (e, d) = self.get(loc);
            let g = if e & EXT != 0 {
                e & !EXT
            } else {
                let g = self.alloc_group(e, d);
                self.set(loc, EXT | g, 0);
                g
            };
            loc = Loc::Grp(g as usize * GROUP_SIZE + self.index(key, level + 1));
        }
        let count = 1usize << (self.end(target) - len);
        self.paint_range(loc, count, Paint::Insert(len as u8), entry, len as u8);
        Ok(())
    }

    /// Removes the leaves of `key/len` (which must be installed), replacing them with the
    /// covering prefix's `(entry, depth)` (`(0, 0)` if none), then recycles groups on the path
    /// that no longer hold anything longer than their parent entry.
    pub(super) fn remove(&mut self, key: u128, len: u32, parent_entry: u32, parent_depth: u8) {
        let mut path = [Loc::Top(0); MAX_LEVELS];
        let target = self.level_of(len);
        let filled = self.walk(key, len, &mut path);
        debug_assert_eq!(
            filled,
            target + 1,
            "removing a prefix that is not installed"
        );
        if filled != target + 1 {
            return;
        }
        let count = 1usize << (self.end(target) - len);
        self.paint_range(
            path[target],
            count,
            Paint::Remove(len as u8),
            parent_entry,
            parent_depth,
        );
        for level in (1..=target).rev() {
            let Loc::Grp(i) = path[level] else { break };
            let g = i / GROUP_SIZE;
            let r = g * GROUP_SIZE..(g + 1) * GROUP_SIZE;
            // Uniform when nothing under it is longer than the parent entry's prefix.
            let limit = (self.end(level) - 8) as u8;
            let uniform = self.groups[r.clone()].iter().all(|&e| e & EXT == 0)
                && self.group_depth[r.clone()].iter().all(|&d| d <= limit);
            if !uniform {
                break;
            }
            let (e, d) = (self.groups[r.start], self.group_depth[r.start]);
            self.set(path[level - 1], e, d);
            self.free.push(g as u32);
        }
    }

    /// Applies `mode` to the `count` entries of one table from `loc` on: leaves it selects get
    /// `(entry, depth)`, group pointers are followed (the range covers their whole group).
    fn paint_range(&mut self, loc: Loc, count: usize, mode: Paint, entry: u32, depth: u8) {
        let (base, top) = match loc {
            Loc::Top(b) => (b, true),
            Loc::Grp(b) => (b, false),
        };
        for i in base..base + count {
            let (e, d) = if top {
                (self.top[i], self.top_depth[i])
            } else {
                (self.groups[i], self.group_depth[i])
            };
            if e & EXT != 0 {
                self.paint_group((e & !EXT) as usize, mode, entry, depth);
            } else if mode.selects(d) {
                if top {
                    self.top[i] = entry;
                    self.top_depth[i] = depth;
                } else {
                    self.groups[i] = entry;
                    self.group_depth[i] = depth;
                }
            }
        }
    }

    /// `paint_range` for a whole group, reached from above: the prefix being painted covers it.
    fn paint_group(&mut self, g: usize, mode: Paint, entry: u32, depth: u8) {
        // Only the background leaves can come from a prefix that covers the whole group; if the
        // background is not selected, nothing in this subtree is.
        if !mode.selects(self.group_bg[g]) {
            return;
        }
        self.group_bg[g] = depth;
        for i in g * GROUP_SIZE..(g + 1) * GROUP_SIZE {
            let e = self.groups[i];
            if e & EXT != 0 {
                self.paint_group((e & !EXT) as usize, mode, entry, depth);
            } else if mode.selects(self.group_depth[i]) {
                self.groups[i] = entry;
                self.group_depth[i] = depth;
            }
        }
    }
}

/// Which leaves an update overwrites.
#[derive(Clone, Copy)]
enum Paint {
    /// Inserting a prefix of this length: leaves from prefixes no longer than it.
    Insert(u8),
    /// Removing the prefix of this length: its own leaves.
    Remove(u8),
}

impl Paint {
    #[inline]
    fn selects(self, depth: u8) -> bool {
        match self {
            Self::Insert(len) => depth <= len,
            Self::Remove(len) => depth == len,
        }
    }
}

/// Helpers shared by the LPM tests: a tiny PRNG and a hasher for the reference maps.
#[cfg(test)]
pub(super) mod test_support {
    use std::collections::HashMap;
    use std::hash::{BuildHasherDefault, Hasher};

    /// xorshift64*.
    pub struct Rng(u64);

    impl Rng {
        pub fn new(seed: u64) -> Self {
            Self(seed | 1)
        }
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        pub fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        pub fn u128(&mut self) -> u128 {
            (u128::from(self.next()) << 64) | u128::from(self.next())
        }
    }

    /// Multiply-xorshift hasher for the reference maps (they only ever hash one integer).
    #[derive(Default)]
    pub struct MulHasher(u64);

    impl Hasher for MulHasher {
        fn write(&mut self, _: &[u8]) {
            unreachable!("reference keys are integers")
        }
        fn write_u32(&mut self, x: u32) {
            self.write_u64(u64::from(x));
        }
        fn write_u64(&mut self, x: u64) {
            let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            self.0 = h ^ (h >> 32);
        }
        fn write_u128(&mut self, x: u128) {
            self.write_u64(x as u64);
            self.write_u64((x >> 64) as u64);
        }
        fn finish(&self) -> u64 {
            self.0
        }
    }

    pub type Map<K> = HashMap<K, u32, BuildHasherDefault<MulHasher>>;
}
