//! The L2 forwarding table: (VLAN, MAC) -> port, learned from source addresses, with aging.
//!
//! Bounded: the table holds at most `max_entries` addresses. Its hash map is allocated once at
//! construction and never grows; a new address arriving when the table is full is refused
//! ([`LearnOutcome::TableFull`], counted in [`MacStats::table_full`]) and the frame's
//! destination lookups simply flood until [`MacTable::age`] frees room. Nothing is evicted to
//! make room, static entries least of all.
//!
//! Lookups and refreshes of known addresses never allocate. Inserting a new address does not
//! allocate either: the map is created with room for `2 * max_entries`, because std's
//! SwissTable (hashbrown) recovers the slots of deleted entries by rehashing in place only
//! while it is at most half full, and otherwise reallocates; at half load it never needs to.
//! The churn test below checks that it never reallocates. The price is memory: 24-byte slots
//! plus a control byte, rounded up to a power of two, come to roughly 60 to 115 bytes per
//! allowed address (6.5 MB for 64Ki addresses).
//!
//! Time is picoseconds passed in by the caller. A dynamic entry is live while
//! `now - last_seen < aging_time`; at exactly `aging_time` of idleness it is expired (as in the
//! Linux bridge, where `updated + hold_time <= now` means expired). Expired entries answer no
//! lookups and are reused by the next `learn`; [`MacTable::age`] deletes them. Static entries
//! never age and are never moved or overridden by learning.
//!
//! Keys come off the wire, so an attacker chooses them: the hasher is seeded per table from
//! std's `RandomState` (see [`MacHashState`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};

/// Picoseconds per second.
const PS_PER_SEC: u64 = 1_000_000_000_000;

/// Default aging time: 300 s, the IEEE 802.1Q recommended default and most switches' default.
pub const DEFAULT_AGING_TIME: u64 = 300 * PS_PER_SEC;

/// What the table knows about one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacEntry {
    /// Port the address was last seen on (or configured on).
    pub port: u16,
    /// When the address was last seen, in picoseconds (0 for static entries).
    pub last_seen: u64,
    /// Configured by the operator: never ages, never moves.
    pub is_static: bool,
}

/// Result of [`MacTable::learn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LearnOutcome {
    /// The address was not known (or its entry had expired) and is now.
    New,
    /// The address was already known on this port; its age restarts (a static entry on this
    /// port is left as it is).
    Refreshed,
    /// The address moved to this port from `from`.
    Moved {
        /// The port it was on.
        from: u16,
    },
    /// The address is new and the table is full: not learned.
    TableFull,
    /// The address is static on another port: not learned (a loop, a spoofer or a
    /// misconfiguration).
    StaticConflict,
}

/// Event counters, for `show` and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacStats {
    /// [`LearnOutcome::New`] results.
    pub learned: u64,
    /// [`LearnOutcome::Moved`] results.
    pub moved: u64,
    /// [`LearnOutcome::TableFull`] results.
    pub table_full: u64,
    /// [`LearnOutcome::StaticConflict`] results.
    pub static_conflicts: u64,
    /// Entries deleted by [`MacTable::age`].
    pub aged: u64,
}

/// [`MacTable::add_static`] needed a new entry and the table is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacTableFull;

impl std::fmt::Display for MacTableFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MAC table full")
    }
}

impl std::error::Error for MacTableFull {}

/// Hasher state for MAC keys: two secret 64-bit keys drawn once per table.
///
/// SipHash (std's default) costs more than the rest of a lookup for an 8-byte key. This is a
/// seeded folded multiply (the 128-bit product's halves xored, as in foldhash and aHash's
/// fallback), done twice: `fold(fold(key ^ k0, M) ^ k1, M)`. Every key bit reaches every hash
/// bit, and without the keys an attacker sending frames cannot aim many addresses at one
/// probe sequence. It is not a cryptographic PRF; the table's bound caps what a flood can
/// cost in memory either way.
#[derive(Clone, Debug)]
pub struct MacHashState {
    k0: u64,
    k1: u64,
}

impl MacHashState {
    /// Keys drawn from std's `RandomState` (seeded from the OS once per thread, then varied).
    #[must_use]
    pub fn random() -> Self {
        let rs = RandomState::new();
        Self {
            k0: rs.hash_one(0x6d61_6374_6162_6c65u64),
            k1: rs.hash_one(0x1c0c_1051_u64),
        }
    }
}

impl BuildHasher for MacHashState {
    type Hasher = MacHasher;
    #[inline]
    fn build_hasher(&self) -> MacHasher {
        MacHasher {
            acc: self.k0,
            k1: self.k1,
        }
    }
}

/// The hasher built by [`MacHashState`].
#[derive(Clone, Debug)]
pub struct MacHasher {
    acc: u64,
    k1: u64,
}

const FOLD_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline]
fn fold_mul(x: u64) -> u64 {
    let p = u128::from(x) * u128::from(FOLD_MUL);
    (p as u64) ^ ((p >> 64) as u64)
}

impl Hasher for MacHasher {
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.acc = fold_mul(self.acc ^ x);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed in this module; this keeps the trait total.
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold_mul(self.acc ^ self.k1)
    }
}

/// `vlan << 48 | mac`: one integer compare and one hash per lookup.
#[inline]
fn pack(vlan: u16, mac: [u8; 6]) -> u64 {
    let [a, b, c, d, e, f] = mac;
    u64::from_be_bytes([(vlan >> 8) as u8, vlan as u8, a, b, c, d, e, f])
}

#[inline]
fn unpack(key: u64) -> (u16, [u8; 6]) {
    let [v0, v1, a, b, c, d, e, f] = key.to_be_bytes();
    (u16::from_be_bytes([v0, v1]), [a, b, c, d, e, f])
}

/// The MAC table. See the module documentation.
#[derive(Clone, Debug)]
pub struct MacTable {
    map: HashMap<u64, MacEntry, MacHashState>,
    max_entries: usize,
    aging_time: u64,
    stats: MacStats,
    /// Bumped whenever an existing address changes port or disappears (moves, removals,
    /// flushes, aging, static changes), so caches in front of the table know a remembered
    /// answer may be wrong. Adding a new address leaves it alone: no remembered answer changes.
    generation: u64,
}

impl MacTable {
    /// An empty table for at most `max_entries` addresses, aging after
    /// [`DEFAULT_AGING_TIME`], with a random hash seed. Allocates all its memory now.
    #[must_use]
    pub fn new(max_entries: usize) -> Self {
        Self::with_hasher(max_entries, MacHashState::random())
    }

    /// As [`MacTable::new`] with a given hasher state (e.g. fixed keys for a reproducible
    /// benchmark).
    #[must_use]
    pub fn with_hasher(max_entries: usize, hasher: MacHashState) -> Self {
        Self {
            map: HashMap::with_capacity_and_hasher(max_entries.saturating_mul(2), hasher),
            max_entries,
            aging_time: DEFAULT_AGING_TIME,
            stats: MacStats::default(),
            generation: 0,
        }
    }

    /// The change generation (see the field): equal generations mean no address moved or
    /// disappeared in between.
    #[inline]
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sets the aging time in picoseconds; it applies to existing entries too (their
    /// `last_seen` is kept, not a deadline).
    pub fn set_aging_time(&mut self, picos: u64) {
        self.aging_time = picos;
    }

    /// The aging time in picoseconds.
    #[must_use]
    pub fn aging_time(&self) -> u64 {
        self.aging_time
    }

    /// Whether `entry` answers lookups at `now`.
    #[inline]
    #[must_use]
    pub fn is_live(&self, entry: &MacEntry, now: u64) -> bool {
        // saturating: a worker may learn with a timestamp slightly ahead of the caller's now.
        entry.is_static || now.saturating_sub(entry.last_seen) < self.aging_time
    }

    /// The port for `(vlan, mac)` at `now`, or `None` (flood) if unknown or expired.
    /// Never allocates.
    #[inline]
    #[must_use]
    pub fn lookup(&self, vlan: u16, mac: [u8; 6], now: u64) -> Option<u16> {
        let e = self.map.get(&pack(vlan, mac))?;
        if self.is_live(e, now) {
            Some(e.port)
        } else {
            None
        }
    }

    /// The stored entry for `(vlan, mac)`, live or not.
    #[must_use]
    pub fn get(&self, vlan: u16, mac: [u8; 6]) -> Option<MacEntry> {
        self.map.get(&pack(vlan, mac)).copied()
    }

    /// Learns that `mac` in `vlan` was seen on `port` at `now` (a frame's source address).
    /// Never allocates; never overrides or moves a static entry; never evicts.
    #[inline]
    pub fn learn(&mut self, vlan: u16, mac: [u8; 6], port: u16, now: u64) -> LearnOutcome {
        let key = pack(vlan, mac);
        let aging_time = self.aging_time;
        if let Some(e) = self.map.get_mut(&key) {
            if e.is_static {
                if e.port == port {
                    return LearnOutcome::Refreshed;
                }
                self.stats.static_conflicts += 1;
                return LearnOutcome::StaticConflict;
            }
            let expired = now.saturating_sub(e.last_seen) >= aging_time;
            let from = e.port;
            if from != port {
                self.generation += 1;
            }
            e.port = port;
            e.last_seen = e.last_seen.max(now);
            return if expired {
                self.stats.learned += 1;
                LearnOutcome::New
            } else if from == port {
                LearnOutcome::Refreshed
            } else {
                self.stats.moved += 1;
                LearnOutcome::Moved { from }
            };
        }
        if self.map.len() >= self.max_entries {
            self.stats.table_full += 1;
            return LearnOutcome::TableFull;
        }
        self.map.insert(
            key,
            MacEntry {
                port,
                last_seen: now,
                is_static: false,
            },
        );
        self.stats.learned += 1;
        LearnOutcome::New
    }

    /// Installs a static entry, replacing any entry for the address. Returns the replaced
    /// entry.
    ///
    /// # Errors
    ///
    /// [`MacTableFull`] if the address is not in the table and the table is full.
    pub fn add_static(
        &mut self,
        vlan: u16,
        mac: [u8; 6],
        port: u16,
    ) -> Result<Option<MacEntry>, MacTableFull> {
        let key = pack(vlan, mac);
        if !self.map.contains_key(&key) && self.map.len() >= self.max_entries {
            return Err(MacTableFull);
        }
        self.generation += 1;
        Ok(self.map.insert(
            key,
            MacEntry {
                port,
                last_seen: 0,
                is_static: true,
            },
        ))
    }

    /// Deletes the entry for an address, static or dynamic.
    pub fn remove(&mut self, vlan: u16, mac: [u8; 6]) -> Option<MacEntry> {
        self.generation += 1;
        self.map.remove(&pack(vlan, mac))
    }

    /// Deletes the dynamic entries on `port` (its link went down: hosts behind it must be
    /// relearned wherever they reappear). Static entries stay. Returns how many went.
    pub fn flush_port(&mut self, port: u16) -> usize {
        let before = self.map.len();
        self.map.retain(|_, e| e.is_static || e.port != port);
        self.generation += 1;
        before - self.map.len()
    }

    /// Deletes the dynamic entries of `vlan`. Static entries stay. Returns how many went.
    pub fn flush_vlan(&mut self, vlan: u16) -> usize {
        let before = self.map.len();
        self.map.retain(|&k, e| e.is_static || unpack(k).0 != vlan);
        self.generation += 1;
        before - self.map.len()
    }

    /// Deletes the dynamic entries expired at `now`. Returns how many went. Called periodically
    /// by the control lcore; a scan of the whole table, so not on the packet path.
    pub fn age(&mut self, now: u64) -> usize {
        let before = self.map.len();
        let aging_time = self.aging_time;
        self.map
            .retain(|_, e| e.is_static || now.saturating_sub(e.last_seen) < aging_time);
        let aged = before - self.map.len();
        if aged > 0 {
            self.generation += 1;
        }
        self.stats.aged += aged as u64;
        aged
    }

    /// Entries stored (including expired ones [`MacTable::age`] has not deleted yet).
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no entry is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The bound on entries.
    #[must_use]
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Event counters.
    #[must_use]
    pub fn stats(&self) -> MacStats {
        self.stats
    }

    /// Every stored entry as `(vlan, mac, entry)`, in no particular order (for `show macs`;
    /// filter with [`MacTable::is_live`] to hide expired ones).
    pub fn iter(&self) -> impl Iterator<Item = (u16, [u8; 6], MacEntry)> + '_ {
        self.map.iter().map(|(&k, &e)| {
            let (vlan, mac) = unpack(k);
            (vlan, mac, e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = PS_PER_SEC;
    const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xaa];
    const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xbb];

    fn mac(i: u32) -> [u8; 6] {
        let b = i.to_be_bytes();
        [0x02, 0x42, b[0], b[1], b[2], b[3]]
    }

    #[test]
    fn learn_then_lookup() {
        let mut t = MacTable::new(16);
        assert_eq!(t.lookup(1, A, 0), None);
        assert_eq!(t.learn(1, A, 3, 10), LearnOutcome::New);
        assert_eq!(t.lookup(1, A, 20), Some(3));
        assert_eq!(t.learn(1, A, 3, 30), LearnOutcome::Refreshed);
        assert_eq!(
            t.get(1, A),
            Some(MacEntry {
                port: 3,
                last_seen: 30,
                is_static: false
            })
        );
        assert_eq!(t.lookup(1, B, 20), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.stats().learned, 1);
    }

    #[test]
    fn move_reports_the_old_port() {
        let mut t = MacTable::new(16);
        t.learn(5, A, 1, 0);
        assert_eq!(t.learn(5, A, 2, S), LearnOutcome::Moved { from: 1 });
        assert_eq!(t.lookup(5, A, S), Some(2));
        assert_eq!(t.stats().moved, 1);
    }

    #[test]
    fn aging_boundary_is_exclusive() {
        let mut t = MacTable::new(16);
        t.set_aging_time(300 * S);
        t.learn(1, A, 4, 1000);
        // Idle for one picosecond less than the aging time: live.
        assert_eq!(t.lookup(1, A, 1000 + 300 * S - 1), Some(4));
        assert_eq!(t.age(1000 + 300 * S - 1), 0);
        // Idle for exactly the aging time: expired.
        assert_eq!(t.lookup(1, A, 1000 + 300 * S), None);
        // Learning an expired address is a new learn, even on another port.
        let mut t2 = t.clone();
        assert_eq!(t2.learn(1, A, 9, 1000 + 300 * S), LearnOutcome::New);
        assert_eq!(t2.lookup(1, A, 1000 + 300 * S), Some(9));
        // age() deletes it at the same boundary.
        assert_eq!(t.age(1000 + 300 * S), 1);
        assert!(t.is_empty());
        assert_eq!(t.stats().aged, 1);
    }

    #[test]
    fn refresh_restarts_the_age() {
        let mut t = MacTable::new(16);
        t.set_aging_time(10 * S);
        t.learn(1, A, 1, 0);
        t.learn(1, A, 1, 8 * S);
        assert_eq!(t.lookup(1, A, 17 * S), Some(1));
        assert_eq!(t.lookup(1, A, 18 * S), None);
        // A timestamp older than the stored one (another worker's burst) does not rewind it.
        t.learn(1, B, 1, 20 * S);
        t.learn(1, B, 1, 19 * S);
        assert_eq!(t.get(1, B).unwrap().last_seen, 20 * S);
        assert_eq!(t.lookup(1, B, 19 * S), Some(1));
    }

    #[test]
    fn default_aging_time_is_300_s() {
        let mut t = MacTable::new(4);
        assert_eq!(t.aging_time(), 300_000_000_000_000);
        t.learn(1, A, 1, 0);
        assert_eq!(t.lookup(1, A, 299 * S), Some(1));
        assert_eq!(t.lookup(1, A, 300 * S), None);
    }

    #[test]
    fn static_never_ages_never_moves() {
        let mut t = MacTable::new(16);
        t.set_aging_time(S);
        assert_eq!(t.add_static(1, A, 7), Ok(None));
        assert_eq!(t.lookup(1, A, u64::MAX), Some(7));
        assert_eq!(t.age(u64::MAX), 0);
        assert_eq!(t.learn(1, A, 8, 5 * S), LearnOutcome::StaticConflict);
        assert_eq!(t.lookup(1, A, 5 * S), Some(7));
        assert_eq!(t.learn(1, A, 7, 5 * S), LearnOutcome::Refreshed);
        assert_eq!(
            t.get(1, A),
            Some(MacEntry {
                port: 7,
                last_seen: 0,
                is_static: true
            })
        );
        assert_eq!(t.stats().static_conflicts, 1);
        // A static entry replaces a dynamic one.
        t.learn(2, B, 1, 0);
        let old = t.add_static(2, B, 2).unwrap().unwrap();
        assert_eq!((old.port, old.is_static), (1, false));
        assert_eq!(t.lookup(2, B, 100 * S), Some(2));
        // Only remove() deletes it.
        assert_eq!(t.flush_port(7), 0);
        assert_eq!(t.flush_vlan(1), 0);
        assert!(t.remove(1, A).unwrap().is_static);
        assert_eq!(t.lookup(1, A, 0), None);
    }

    #[test]
    fn full_table_refuses_new_but_refreshes_known() {
        let mut t = MacTable::new(3);
        t.set_aging_time(10 * S);
        t.add_static(1, mac(0), 1).unwrap();
        assert_eq!(t.learn(1, mac(1), 1, 0), LearnOutcome::New);
        assert_eq!(t.learn(1, mac(2), 2, 0), LearnOutcome::New);
        assert_eq!(t.learn(1, mac(3), 3, 0), LearnOutcome::TableFull);
        assert_eq!(t.learn(1, mac(3), 3, S), LearnOutcome::TableFull);
        assert_eq!(t.stats().table_full, 2);
        assert_eq!(t.lookup(1, mac(3), S), None);
        assert_eq!(t.add_static(1, mac(4), 4), Err(MacTableFull));
        assert_eq!(t.len(), 3);
        // Known addresses still refresh and move; the static one is never evicted.
        assert_eq!(t.learn(1, mac(1), 1, 5 * S), LearnOutcome::Refreshed);
        assert_eq!(
            t.learn(1, mac(2), 4, 5 * S),
            LearnOutcome::Moved { from: 2 }
        );
        assert_eq!(
            t.add_static(1, mac(2), 5),
            Ok(Some(MacEntry {
                port: 4,
                last_seen: 5 * S,
                is_static: false
            }))
        );
        // An expired entry's slot is reused by its own address even when full...
        assert_eq!(t.learn(1, mac(1), 6, 15 * S), LearnOutcome::New);
        // ...but a new address waits for age() to free room.
        t.learn(1, mac(1), 6, 30 * S);
        assert_eq!(t.learn(1, mac(3), 3, 30 * S), LearnOutcome::TableFull);
        t.remove(1, mac(1));
        assert_eq!(t.learn(1, mac(3), 3, 30 * S), LearnOutcome::New);
        assert!(t.get(1, mac(0)).unwrap().is_static);
    }

    #[test]
    fn generation_changes_exactly_when_a_remembered_answer_could_change() {
        let mut t = MacTable::new(16);
        let g0 = t.generation();
        t.learn(1, A, 1, 0);
        t.learn(1, B, 2, 0);
        t.learn(1, A, 1, 5);
        assert_eq!(
            t.generation(),
            g0,
            "new addresses and refreshes change no answer"
        );
        t.learn(1, A, 3, 6);
        let g1 = t.generation();
        assert_ne!(g1, g0, "a move does");
        t.age(1);
        assert_eq!(t.generation(), g1, "aging that removes nothing does not");
        t.age(DEFAULT_AGING_TIME + 10);
        let g2 = t.generation();
        assert_ne!(g2, g1, "aging that removes does");
        let _ = t.add_static(1, B, 4);
        assert_ne!(t.generation(), g2, "static changes do");
        let g3 = t.generation();
        t.flush_port(4);
        assert_ne!(t.generation(), g3, "flushes do");
    }

    #[test]
    fn flush_port_removes_only_that_ports_dynamic_entries() {
        let mut t = MacTable::new(64);
        for i in 0..10 {
            t.learn(1, mac(i), (i % 3) as u16, 0);
        }
        t.add_static(1, mac(100), 1).unwrap();
        t.learn(2, mac(0), 1, 0);
        // Port 1 holds i = 1, 4, 7 in VLAN 1, mac(0) in VLAN 2, and the static entry.
        assert_eq!(t.flush_port(1), 4);
        for i in 0..10 {
            assert_eq!(t.lookup(1, mac(i), 0).is_some(), i % 3 != 1, "mac {i}");
        }
        assert_eq!(t.lookup(2, mac(0), 0), None);
        assert_eq!(t.lookup(1, mac(100), 0), Some(1));
        assert_eq!(t.len(), 8);
    }

    #[test]
    fn vlans_are_separate() {
        let mut t = MacTable::new(64);
        assert_eq!(t.learn(10, A, 1, 0), LearnOutcome::New);
        assert_eq!(t.learn(20, A, 2, 0), LearnOutcome::New);
        assert_eq!(t.lookup(10, A, 0), Some(1));
        assert_eq!(t.lookup(20, A, 0), Some(2));
        assert_eq!(t.lookup(30, A, 0), None);
        // Moving in one VLAN does not touch the other.
        assert_eq!(t.learn(10, A, 3, 1), LearnOutcome::Moved { from: 1 });
        assert_eq!(t.lookup(20, A, 1), Some(2));
        t.learn(10, B, 4, 0);
        t.add_static(10, [0x02, 0, 0, 0, 0, 0xcc], 4).unwrap();
        assert_eq!(t.flush_vlan(10), 2);
        assert_eq!(t.lookup(10, A, 1), None);
        assert_eq!(t.lookup(20, A, 1), Some(2));
        assert_eq!(t.lookup(10, [0x02, 0, 0, 0, 0, 0xcc], 1), Some(4));
        // Extreme VLAN and MAC values do not collide with each other.
        t.learn(0xffff, [0xff; 6], 9, 0);
        t.learn(0, [0; 6], 8, 0);
        assert_eq!(t.lookup(0xffff, [0xff; 6], 0), Some(9));
        assert_eq!(t.lookup(0, [0; 6], 0), Some(8));
    }

    #[test]
    fn age_removes_only_expired_dynamic_entries() {
        let mut t = MacTable::new(64);
        t.set_aging_time(10 * S);
        for i in 0..10u32 {
            t.learn(1, mac(i), 1, u64::from(i) * S);
        }
        t.add_static(1, mac(99), 2).unwrap();
        // At 15 s, entries learned at 0..=5 s have been idle >= 10 s.
        assert_eq!(t.age(15 * S), 6);
        let mut left: Vec<u32> = t
            .iter()
            .map(|(_, m, _)| u32::from_be_bytes([m[2], m[3], m[4], m[5]]))
            .collect();
        left.sort_unstable();
        assert_eq!(left, vec![6, 7, 8, 9, 99]);
        assert!(
            t.iter()
                .all(|(vlan, _, e)| vlan == 1 && t.is_live(&e, 15 * S))
        );
    }

    #[test]
    fn iter_yields_every_entry_unpacked() {
        let mut t = MacTable::new(8);
        t.learn(4094, [1, 2, 3, 4, 5, 6], 7, 42);
        t.add_static(1, A, 3).unwrap();
        let mut all: Vec<_> = t.iter().collect();
        all.sort_unstable_by_key(|x| x.0);
        assert_eq!(
            all,
            vec![
                (
                    1,
                    A,
                    MacEntry {
                        port: 3,
                        last_seen: 0,
                        is_static: true
                    }
                ),
                (
                    4094,
                    [1, 2, 3, 4, 5, 6],
                    MacEntry {
                        port: 7,
                        last_seen: 42,
                        is_static: false
                    }
                ),
            ]
        );
    }

    #[test]
    fn churn_at_full_never_reallocates() {
        // Insert and delete at the bound long enough for deleted-slot markers to pile up. The
        // map's reported capacity (entries plus free slots) drops while markers accumulate and
        // recovers when they are rehashed in place; it must never exceed its initial value,
        // which it would after a reallocation.
        for max in [1usize, 7, 100, 1000, 4096] {
            let mut t = MacTable::new(max);
            let cap = t.map.capacity();
            assert!(cap >= 2 * max);
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut live: Vec<[u8; 6]> = Vec::new();
            for step in 0..20 * max.max(100) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let m = mac(x as u32);
                if live.len() == max {
                    let victim = live.swap_remove((x >> 40) as usize % max);
                    assert!(t.remove(1, victim).is_some());
                }
                if t.learn(1, m, 1, step as u64) == LearnOutcome::New {
                    live.push(m);
                }
                assert!(
                    t.map.capacity() <= cap,
                    "max {max}, step {step}: reallocated"
                );
            }
            assert_eq!(t.len(), live.len());
        }
    }

    #[test]
    fn hasher_spreads_sequential_macs() {
        // Consecutive MACs (a NIC vendor's range) must land in distinct low-bit buckets about
        // as often as random keys: count distinct values of the low 12 bits over 4096 keys.
        // A uniform hash fills 1 - 1/e = 63.2 % of them (sd about 0.5 %); an identity-like one
        // would fill 100 %, and a poor one far fewer.
        let st = MacHashState {
            k0: 0x0123_4567_89ab_cdef,
            k1: 0xfedc_ba98_7654_3210,
        };
        for vlan in [1u16, 4094] {
            let mut seen = vec![false; 4096];
            for i in 0..4096u32 {
                seen[(st.hash_one(pack(vlan, mac(i))) & 4095) as usize] = true;
            }
            let filled = seen.iter().filter(|&&s| s).count() as f64 / 4096.0;
            assert!((0.60..0.66).contains(&filled), "vlan {vlan}: {filled}");
        }
        // Different seeds give different hashes.
        let other = MacHashState { k0: 1, k1: 2 };
        assert_ne!(st.hash_one(pack(1, A)), other.hash_one(pack(1, A)));
        assert_ne!(MacHashState::random().k0, MacHashState::random().k0);
    }
}
