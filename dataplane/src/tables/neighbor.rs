//! Reachability of the neighbours the switch learned from ARP and ND (neighbour
//! unreachability detection, RFC 4861 7.3, as Linux does it for IPv4 too).
//!
//! The forwarder keeps each nexthop's MAC for the fast path; this table, on the worker's
//! control side, decides when a learned MAC is no longer to be trusted: it asks again after
//! the reachable time and, when nobody answers, reports the neighbour lost, so traffic stops
//! going to a MAC that left and resolution starts afresh. Static neighbours are not tracked.
//!
//! A neighbour is an `(ip, interface)` pair: the same address on two L3 interfaces is two
//! neighbours. That is what IPv6 needs (BGP unnumbered peers each use a link-local address,
//! and `fe80::1` on one interface is not `fe80::1` on another) and what Linux does (one
//! neighbour table per interface). [`NeighborTable::learn`] only updates the neighbour of the
//! interface the ARP/ND packet arrived on; [`NeighborTable::add_nexthop`] deduplicates and
//! reference-counts, and learning an address the table does not track is ignored.
//!
//! # States and timers (all times in picoseconds, passed in)
//!
//! ```text
//!  add_nexthop ──> Incomplete ──learn──> Reachable ──reachable_time──> Stale ──learn──> Reachable
//!                    │  ^                                                │
//!        max_probes  │  │ failed_backoff                      max_probes │
//!        unanswered  v  │                                     unanswered v
//!                   Failed <──────────────────────────────────────────────┘
//! ```
//!
//! * `Incomplete`: no MAC. A request goes out at once, then every `retry_interval`, up to
//!   `max_probes`. No answer `retry_interval` after the last one: `Failed`.
//! * `Reachable`: confirmed by a learn at `updated`; lasts `reachable_time` (Linux's
//!   `base_reachable_time`, without its randomisation, which would break replay).
//! * `Stale`: still forwards with the old MAC (dropping traffic to a live neighbour because a
//!   timer ran out would be worse than a few frames to a MAC that just changed) while it is
//!   re-verified: a refresh request goes out at once and then as for `Incomplete`. These are
//!   RFC 4861 7.3.3's PROBE: [`NeighborTable::needs_resolution`] gives them with the cached
//!   MAC, for the caller to send them unicast to it (Linux's `ucast_probes`, also for ARP as
//!   RFC 1122 2.3.2.1 suggests); an `Incomplete` entry's go to broadcast / the solicited-node
//!   group. Like Linux with its default `mcast_resolicit = 0`, no broadcast follows the
//!   unanswered unicast ones: the entry fails and, once it is asked for again, is resolved
//!   afresh.
//! * `Failed`: no MAC ([`NeighborTable::expire`] reports the ids; the switch worker then
//!   drops the MAC in the forwarder, whose traffic to the neighbour resolves it afresh, and
//!   stops tracking it). Left tracked, resolution restarts `failed_backoff` after the failure.
//!
//! Transitions depend only on the recorded times, not on how often the caller polls: a failure
//! is dated at the deadline that passed (last probe + `retry_interval`), not at the `expire`
//! call that noticed it. Learning from any packet (ARP request or reply, NS or NA) confirms
//! reachability; the table does not distinguish solicited answers.

use std::collections::HashMap;
use std::net::IpAddr;

/// Picoseconds per second.
const PS_PER_SEC: u64 = 1_000_000_000_000;

/// Timers and limits of a [`NeighborTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighborConfig {
    /// How long a learned MAC is trusted before re-verification (default 30 s, Linux's
    /// `base_reachable_time`).
    pub reachable_time: u64,
    /// Minimum time between two requests for one neighbour, and the time the last one has to
    /// be answered (default 1 s, Linux's `retrans_time`).
    pub retry_interval: u64,
    /// Requests sent before giving up (default 3, Linux's `mcast_solicit`/`ucast_solicit`).
    pub max_probes: u32,
    /// Wait after a failure before resolving again (default 10 s), so a dead peer costs one
    /// burst of `max_probes` requests per backoff instead of a constant stream.
    pub failed_backoff: u64,
}

impl Default for NeighborConfig {
    fn default() -> Self {
        Self {
            reachable_time: 30 * PS_PER_SEC,
            retry_interval: PS_PER_SEC,
            max_probes: 3,
            failed_backoff: 10 * PS_PER_SEC,
        }
    }
}

/// A nexthop: where a route sends packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Nexthop {
    /// Its index, as stored in routes and ECMP groups.
    pub id: u32,
    /// The neighbour's address.
    pub ip: IpAddr,
    /// The interface the neighbour is on.
    pub interface: u16,
}

/// What the fast path needs to send to a nexthop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Egress interface.
    pub interface: u16,
    /// Destination MAC to write into the frame.
    pub dst_mac: [u8; 6],
}

/// Resolution state of a neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeighborState {
    /// No MAC known; `probes` requests sent so far, the last at `last_probe`.
    Incomplete {
        /// Requests sent in this attempt.
        probes: u32,
        /// When the last one went out (`None`: none yet).
        last_probe: Option<u64>,
    },
    /// MAC confirmed at `updated`.
    Reachable {
        /// The neighbour's MAC.
        mac: [u8; 6],
        /// When it was last confirmed.
        updated: u64,
    },
    /// MAC older than the reachable time, still used while being re-verified.
    Stale {
        /// The neighbour's MAC.
        mac: [u8; 6],
        /// When it was last confirmed.
        updated: u64,
        /// Refresh requests sent so far.
        probes: u32,
        /// When the last one went out (`None`: none yet).
        last_probe: Option<u64>,
    },
    /// Resolution failed at `since`; retried after the backoff.
    Failed {
        /// When the last request's answer was due.
        since: u64,
    },
}

impl NeighborState {
    /// The MAC to forward with, if any.
    #[must_use]
    pub fn mac(&self) -> Option<[u8; 6]> {
        match *self {
            Self::Reachable { mac, .. } | Self::Stale { mac, .. } => Some(mac),
            Self::Incomplete { .. } | Self::Failed { .. } => None,
        }
    }
}

/// A request [`NeighborTable::needs_resolution`] says is due: an ARP request for IPv4, a
/// Neighbor Solicitation for IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighborRequest {
    /// The neighbour's address (the request's target).
    pub ip: IpAddr,
    /// The interface it is on.
    pub interface: u16,
    /// The MAC the neighbour is cached at, when the request re-verifies it (`Stale`): send the
    /// request unicast to it (RFC 4861 7.3.3). `None` (`Incomplete`): nobody to address,
    /// broadcast (ARP) or to the solicited-node group (ND).
    pub mac: Option<[u8; 6]>,
}

/// Result of [`NeighborTable::learn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeighborLearn {
    /// No nexthop uses this address on this interface: ignored.
    NotTracked,
    /// The nexthop had no MAC (`Incomplete` or `Failed`) and now has one: it can carry traffic.
    Resolved {
        /// The nexthop's id.
        id: u32,
    },
    /// The same MAC was confirmed again.
    Confirmed {
        /// The nexthop's id.
        id: u32,
    },
    /// The neighbour answered with a different MAC, which is used from now on.
    MacChanged {
        /// The nexthop's id.
        id: u32,
        /// The MAC it had.
        old: [u8; 6],
    },
}

#[derive(Clone, Debug)]
struct Slot {
    nh: Nexthop,
    state: NeighborState,
    /// `add_nexthop` calls not yet matched by `remove_nexthop`.
    refs: u32,
}

/// Nexthops and their neighbour state. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct NeighborTable {
    config: NeighborConfig,
    /// By id; `None` for a freed id.
    slots: Vec<Option<Slot>>,
    /// By id: what the fast path reads. Kept apart from `slots` so it stays dense.
    resolved: Vec<Option<Resolved>>,
    by_key: HashMap<(IpAddr, u16), u32>,
    /// Freed ids, reused last-freed first.
    free: Vec<u32>,
}

impl NeighborTable {
    /// An empty table with the given timers.
    #[must_use]
    pub fn new(config: NeighborConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// The timers in use.
    #[must_use]
    pub fn config(&self) -> NeighborConfig {
        self.config
    }

    /// The id of the nexthop `(ip, interface)`, creating it (`Incomplete`, to be resolved by the
    /// next [`NeighborTable::needs_resolution`]) if it does not exist. Each call takes a
    /// reference that [`NeighborTable::remove_nexthop`] releases.
    pub fn add_nexthop(&mut self, ip: IpAddr, interface: u16) -> u32 {
        if let Some(&id) = self.by_key.get(&(ip, interface)) {
            if let Some(slot) = self.slots[id as usize].as_mut() {
                slot.refs += 1;
            }
            return id;
        }
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.resolved.push(None);
            (self.slots.len() - 1) as u32
        });
        self.slots[id as usize] = Some(Slot {
            nh: Nexthop { id, ip, interface },
            state: NeighborState::Incomplete {
                probes: 0,
                last_probe: None,
            },
            refs: 1,
        });
        self.resolved[id as usize] = None;
        self.by_key.insert((ip, interface), id);
        id
    }

    /// Releases one reference to nexthop `id`; the last one deletes it and frees the id for
    /// reuse (the caller must have removed it from routes and groups by then). Returns whether
    /// it was deleted.
    pub fn remove_nexthop(&mut self, id: u32) -> bool {
        let Some(slot) = self.slots.get_mut(id as usize).and_then(Option::as_mut) else {
            return false;
        };
        slot.refs -= 1;
        if slot.refs > 0 {
            return false;
        }
        let key = (slot.nh.ip, slot.nh.interface);
        self.slots[id as usize] = None;
        self.resolved[id as usize] = None;
        self.by_key.remove(&key);
        self.free.push(id);
        true
    }

    /// Where to send a packet for nexthop `id`, if its neighbour's MAC is known (`Reachable` or
    /// `Stale`). The fast path's only call: a `Vec` index, never hashes or allocates.
    #[inline]
    #[must_use]
    pub fn resolved(&self, id: u32) -> Option<Resolved> {
        self.resolved.get(id as usize).copied().flatten()
    }

    /// The nexthop with this id.
    #[must_use]
    pub fn nexthop(&self, id: u32) -> Option<Nexthop> {
        self.slot(id).map(|s| s.nh)
    }

    /// The id of the nexthop `(ip, interface)`, if there is one.
    #[must_use]
    pub fn find(&self, ip: IpAddr, interface: u16) -> Option<u32> {
        self.by_key.get(&(ip, interface)).copied()
    }

    /// The neighbour state of nexthop `id`.
    #[must_use]
    pub fn state(&self, id: u32) -> Option<NeighborState> {
        self.slot(id).map(|s| s.state)
    }

    /// Number of nexthops.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether there are no nexthops.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Every nexthop and its state, by id (for `show neighbors`).
    pub fn iter(&self) -> impl Iterator<Item = (Nexthop, NeighborState)> + '_ {
        self.slots.iter().flatten().map(|s| (s.nh, s.state))
    }

    /// Records that `ip` on `interface` has `mac` (from an ARP request or reply, or an NS/NA), at
    /// `now`. The nexthop becomes `Reachable` whatever its state.
    pub fn learn(&mut self, ip: IpAddr, mac: [u8; 6], interface: u16, now: u64) -> NeighborLearn {
        let Some(&id) = self.by_key.get(&(ip, interface)) else {
            return NeighborLearn::NotTracked;
        };
        let Some(slot) = self.slots[id as usize].as_mut() else {
            return NeighborLearn::NotTracked;
        };
        let outcome = match slot.state {
            NeighborState::Reachable { mac: old, updated }
            | NeighborState::Stale {
                mac: old, updated, ..
            } => {
                // Keep time monotone if packets from two workers arrive out of order.
                let updated = updated.max(now);
                slot.state = NeighborState::Reachable { mac, updated };
                if old == mac {
                    NeighborLearn::Confirmed { id }
                } else {
                    NeighborLearn::MacChanged { id, old }
                }
            }
            NeighborState::Incomplete { .. } | NeighborState::Failed { .. } => {
                slot.state = NeighborState::Reachable { mac, updated: now };
                NeighborLearn::Resolved { id }
            }
        };
        self.resolved[id as usize] = Some(Resolved {
            interface,
            dst_mac: mac,
        });
        outcome
    }

    /// The requests to send now: an ARP request for IPv4, a neighbour solicitation for IPv6,
    /// with the MAC to send it to when the neighbour has one (`Stale`). Calling this records
    /// them as sent at `now`, so each is returned once per retry interval; call it (and
    /// [`NeighborTable::expire`]) every tick of the control loop, in either order. Returned in
    /// id order.
    pub fn needs_resolution(&mut self, now: u64) -> impl Iterator<Item = NeighborRequest> + use<> {
        let cfg = self.config;
        let mut out = Vec::new();
        for slot in self.slots.iter_mut().flatten() {
            Self::age_reachable(slot, &cfg, now);
            let due = |probes: u32, last: Option<u64>| {
                probes < cfg.max_probes
                    && last.is_none_or(|t| now.saturating_sub(t) >= cfg.retry_interval)
            };
            match &mut slot.state {
                NeighborState::Incomplete { probes, last_probe }
                | NeighborState::Stale {
                    probes, last_probe, ..
                } => {
                    if !due(*probes, *last_probe) {
                        continue;
                    }
                    *probes += 1;
                    *last_probe = Some(now);
                }
                NeighborState::Failed { since } => {
                    if now.saturating_sub(*since) < cfg.failed_backoff || cfg.max_probes == 0 {
                        continue;
                    }
                    slot.state = NeighborState::Incomplete {
                        probes: 1,
                        last_probe: Some(now),
                    };
                }
                NeighborState::Reachable { .. } => continue,
            }
            out.push(NeighborRequest {
                ip: slot.nh.ip,
                interface: slot.nh.interface,
                mac: slot.state.mac(),
            });
        }
        out.into_iter()
    }

    /// Applies the timers at `now`: `Reachable` entries past the reachable time become `Stale`,
    /// and entries whose last request went unanswered become `Failed`. Returns the ids that
    /// lost their MAC (were `Stale`, so the fast path stops using them; `Incomplete` ones had
    /// none), in id order.
    pub fn expire(&mut self, now: u64) -> Vec<u32> {
        let cfg = self.config;
        let mut lost = Vec::new();
        for slot in self.slots.iter_mut().flatten() {
            Self::age_reachable(slot, &cfg, now);
            let (probes, last, had_mac) = match slot.state {
                NeighborState::Incomplete { probes, last_probe } => (probes, last_probe, false),
                NeighborState::Stale {
                    probes, last_probe, ..
                } => (probes, last_probe, true),
                NeighborState::Reachable { .. } | NeighborState::Failed { .. } => continue,
            };
            let deadline = last.map(|t| t.saturating_add(cfg.retry_interval));
            match deadline {
                Some(d) if probes >= cfg.max_probes && now >= d => {
                    slot.state = NeighborState::Failed { since: d };
                    if had_mac {
                        self.resolved[slot.nh.id as usize] = None;
                        lost.push(slot.nh.id);
                    }
                }
                _ => {}
            }
        }
        lost
    }

    /// The earliest time at which [`NeighborTable::needs_resolution`] or
    /// [`NeighborTable::expire`] would change something (a reachable time running out, a
    /// request due, an unanswered last request failing, a backoff ending), or `None` when no
    /// timer runs. Replay on virtual time runs the timers at exactly these instants.
    #[must_use]
    pub fn next_deadline(&self) -> Option<u64> {
        let cfg = self.config;
        self.slots
            .iter()
            .flatten()
            .filter_map(|slot| match slot.state {
                NeighborState::Reachable { updated, .. } => {
                    Some(updated.saturating_add(cfg.reachable_time))
                }
                NeighborState::Incomplete { probes, last_probe }
                | NeighborState::Stale {
                    probes, last_probe, ..
                } => match last_probe {
                    // Due at once (if requests are allowed at all).
                    None => (probes < cfg.max_probes).then_some(0),
                    Some(t) => Some(t.saturating_add(cfg.retry_interval)),
                },
                NeighborState::Failed { since } => {
                    (cfg.max_probes > 0).then(|| since.saturating_add(cfg.failed_backoff))
                }
            })
            .min()
    }

    /// Forgets the MACs of every neighbour on `interface` (its link went down: whatever answers
    /// when it comes back must be asked again). They become `Incomplete`, to be resolved at
    /// the next [`NeighborTable::needs_resolution`]. Returns the ids that lost their MAC.
    pub fn flush_interface(&mut self, interface: u16) -> Vec<u32> {
        let mut lost = Vec::new();
        for slot in self
            .slots
            .iter_mut()
            .flatten()
            .filter(|s| s.nh.interface == interface)
        {
            if slot.state.mac().is_some() {
                lost.push(slot.nh.id);
            }
            slot.state = NeighborState::Incomplete {
                probes: 0,
                last_probe: None,
            };
            self.resolved[slot.nh.id as usize] = None;
        }
        lost
    }

    fn slot(&self, id: u32) -> Option<&Slot> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    /// `Reachable` -> `Stale` once `reachable_time` has passed since the last confirmation.
    fn age_reachable(slot: &mut Slot, cfg: &NeighborConfig, now: u64) {
        if let NeighborState::Reachable { mac, updated } = slot.state
            && now.saturating_sub(updated) >= cfg.reachable_time
        {
            slot.state = NeighborState::Stale {
                mac,
                updated,
                probes: 0,
                last_probe: None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const S: u64 = PS_PER_SEC;
    const MS: u64 = S / 1000;
    const MAC1: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
    const MAC2: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    fn probes(t: &mut NeighborTable, now: u64) -> Vec<(IpAddr, u16)> {
        t.needs_resolution(now)
            .map(|r| (r.ip, r.interface))
            .collect()
    }

    #[test]
    fn refresh_requests_carry_the_cached_mac_and_first_resolutions_none() {
        // RFC 4861 7.3.3: a neighbour whose MAC is known but unconfirmed (Stale, the PROBE
        // state) is asked unicast at that MAC; one with no MAC (Incomplete, or after a
        // failure) is asked by broadcast / multicast.
        let mut t = NeighborTable::default();
        let known = t.add_nexthop(v4(1), 1);
        let unknown = t.add_nexthop(v4(2), 1);
        t.learn(v4(1), MAC1, 1, 0);
        let request = |ip, mac| NeighborRequest {
            ip,
            interface: 1,
            mac,
        };
        let due = |t: &mut NeighborTable, now| t.needs_resolution(now).collect::<Vec<_>>();
        assert_eq!(due(&mut t, 0), vec![request(v4(2), None)]);
        t.remove_nexthop(unknown);
        // Every refresh of the Stale entry, the first and the retries, is unicast.
        for s in 30..33 {
            assert_eq!(
                due(&mut t, s * S),
                vec![request(v4(1), Some(MAC1))],
                "at {s} s"
            );
        }
        assert_eq!(t.expire(33 * S), vec![known]);
        // Failed, it has no MAC any more: after the backoff it is asked by broadcast again.
        assert_eq!(due(&mut t, 43 * S), vec![request(v4(1), None)]);
    }

    #[test]
    fn next_deadline_is_when_the_timers_next_change_something() {
        let mut t = NeighborTable::default();
        assert_eq!(t.next_deadline(), None);
        let id = t.add_nexthop(v4(1), 1);
        assert_eq!(
            t.next_deadline(),
            Some(0),
            "an incomplete entry asks at once"
        );
        t.learn(v4(1), MAC1, 1, 5 * S);
        assert_eq!(t.next_deadline(), Some(35 * S), "reachable time runs out");
        // Just before, nothing changes; at it, the first renewed request.
        assert!(probes(&mut t, 35 * S - 1).is_empty());
        assert_eq!(probes(&mut t, 35 * S), vec![(v4(1), 1)]);
        assert_eq!(t.next_deadline(), Some(36 * S));
        assert_eq!(probes(&mut t, 36 * S), vec![(v4(1), 1)]);
        assert_eq!(probes(&mut t, 37 * S), vec![(v4(1), 1)]);
        // The third request's answer is due at 38 s: the entry fails then, not before.
        assert_eq!(t.next_deadline(), Some(38 * S));
        assert!(t.expire(38 * S - 1).is_empty());
        assert_eq!(t.expire(38 * S), vec![id]);
        assert_eq!(t.next_deadline(), Some(48 * S), "the backoff ends");
        t.remove_nexthop(id);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn defaults_are_documented_values() {
        let c = NeighborConfig::default();
        assert_eq!(c.reachable_time, 30_000_000_000_000);
        assert_eq!(c.retry_interval, 1_000_000_000_000);
        assert_eq!(c.max_probes, 3);
        assert_eq!(c.failed_backoff, 10_000_000_000_000);
    }

    #[test]
    fn nexthops_are_deduplicated_and_reference_counted() {
        let mut t = NeighborTable::default();
        let a = t.add_nexthop(v4(1), 1);
        let b = t.add_nexthop(v4(1), 2);
        assert_eq!((a, b), (0, 1));
        assert_eq!(t.add_nexthop(v4(1), 1), a);
        assert_eq!(t.len(), 2);
        assert_eq!(t.find(v4(1), 2), Some(b));
        assert_eq!(
            t.nexthop(b),
            Some(Nexthop {
                id: b,
                ip: v4(1),
                interface: 2
            })
        );
        // Two references: the first removal keeps it.
        assert!(!t.remove_nexthop(a));
        assert_eq!(t.find(v4(1), 1), Some(a));
        assert!(t.remove_nexthop(a));
        assert_eq!(t.find(v4(1), 1), None);
        assert_eq!(t.nexthop(a), None);
        assert!(!t.remove_nexthop(a));
        // The freed id is reused, starting unresolved.
        t.learn(v4(1), MAC1, 2, 0);
        assert_eq!(t.add_nexthop(v4(9), 9), a);
        assert_eq!(t.resolved(a), None);
        assert_eq!(
            t.state(a),
            Some(NeighborState::Incomplete {
                probes: 0,
                last_probe: None
            })
        );
        assert_eq!(t.resolved(12345), None);
    }

    #[test]
    fn incomplete_probes_then_fails_then_retries_after_backoff() {
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(1), 3);
        let t0 = 5 * S;
        // First request at once, then one per second, three in all.
        assert_eq!(probes(&mut t, t0), vec![(v4(1), 3)]);
        assert_eq!(probes(&mut t, t0), vec![]);
        assert_eq!(probes(&mut t, t0 + S - 1), vec![]);
        assert_eq!(probes(&mut t, t0 + S), vec![(v4(1), 3)]);
        assert_eq!(
            t.state(id),
            Some(NeighborState::Incomplete {
                probes: 2,
                last_probe: Some(t0 + S)
            })
        );
        assert_eq!(probes(&mut t, t0 + 2 * S + 500 * MS), vec![(v4(1), 3)]);
        assert_eq!(probes(&mut t, t0 + 4 * S), vec![], "only three requests");
        assert_eq!(t.resolved(id), None);
        // The last request (t0 + 2.5 s) has until t0 + 3.5 s to be answered.
        assert!(t.expire(t0 + 3 * S + 500 * MS - 1).is_empty());
        assert!(matches!(
            t.state(id),
            Some(NeighborState::Incomplete { probes: 3, .. })
        ));
        // Failing an unresolved entry loses no MAC, so it is not reported.
        assert!(t.expire(t0 + 10 * S).is_empty());
        let since = t0 + 3 * S + 500 * MS;
        assert_eq!(t.state(id), Some(NeighborState::Failed { since }));
        // Backoff: nothing until since + 10 s, then a new attempt of three requests.
        assert_eq!(probes(&mut t, since + 10 * S - 1), vec![]);
        assert_eq!(probes(&mut t, since + 10 * S), vec![(v4(1), 3)]);
        assert_eq!(
            t.state(id),
            Some(NeighborState::Incomplete {
                probes: 1,
                last_probe: Some(since + 10 * S)
            })
        );
    }

    #[test]
    fn learn_resolves_an_incomplete_or_failed_entry() {
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(2), 4);
        probes(&mut t, 0);
        assert_eq!(
            t.learn(v4(2), MAC1, 4, 300 * MS),
            NeighborLearn::Resolved { id }
        );
        assert_eq!(
            t.state(id),
            Some(NeighborState::Reachable {
                mac: MAC1,
                updated: 300 * MS
            })
        );
        assert_eq!(
            t.resolved(id),
            Some(Resolved {
                interface: 4,
                dst_mac: MAC1
            })
        );
        assert_eq!(probes(&mut t, 2 * S), vec![]);
        // From Failed too.
        let id2 = t.add_nexthop(v4(3), 4);
        for s in 0..3 {
            probes(&mut t, s * S);
        }
        t.expire(3 * S);
        assert_eq!(t.state(id2), Some(NeighborState::Failed { since: 3 * S }));
        assert_eq!(
            t.learn(v4(3), MAC2, 4, 4 * S),
            NeighborLearn::Resolved { id: id2 }
        );
        assert_eq!(
            t.resolved(id2),
            Some(Resolved {
                interface: 4,
                dst_mac: MAC2
            })
        );
    }

    #[test]
    fn reachable_goes_stale_after_reachable_time_and_keeps_forwarding() {
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(1), 1);
        t.learn(v4(1), MAC1, 1, 10 * S);
        assert!(t.expire(40 * S - 1).is_empty());
        assert_eq!(probes(&mut t, 40 * S - 1), vec![]);
        assert!(matches!(t.state(id), Some(NeighborState::Reachable { .. })));
        // Exactly reachable_time after the confirmation: stale, still forwarding.
        assert!(t.expire(40 * S).is_empty());
        assert_eq!(
            t.state(id),
            Some(NeighborState::Stale {
                mac: MAC1,
                updated: 10 * S,
                probes: 0,
                last_probe: None
            })
        );
        assert_eq!(
            t.resolved(id),
            Some(Resolved {
                interface: 1,
                dst_mac: MAC1
            })
        );
        // Refresh request at once.
        assert_eq!(probes(&mut t, 40 * S), vec![(v4(1), 1)]);
        // A confirmation makes it reachable again for another 30 s.
        assert_eq!(
            t.learn(v4(1), MAC1, 1, 40 * S + 2 * MS),
            NeighborLearn::Confirmed { id }
        );
        assert_eq!(
            t.state(id),
            Some(NeighborState::Reachable {
                mac: MAC1,
                updated: 40 * S + 2 * MS
            })
        );
        assert_eq!(probes(&mut t, 41 * S), vec![]);
        assert!(t.expire(70 * S).is_empty());
        assert!(matches!(t.state(id), Some(NeighborState::Reachable { .. })));
    }

    #[test]
    fn needs_resolution_alone_notices_staleness() {
        // Whichever of the two calls comes first in a tick, the refresh goes out on time.
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(1), 1);
        t.learn(v4(1), MAC1, 1, 0);
        assert_eq!(probes(&mut t, 30 * S), vec![(v4(1), 1)]);
        assert!(matches!(
            t.state(id),
            Some(NeighborState::Stale { probes: 1, .. })
        ));
    }

    #[test]
    fn stale_unanswered_fails_and_is_reported() {
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(7), 2);
        let other = t.add_nexthop(v4(8), 2);
        t.learn(v4(7), MAC1, 2, 0);
        t.learn(v4(8), MAC2, 2, 0);
        for s in 30..33 {
            assert_eq!(probes(&mut t, s * S).len(), 2);
            assert!(t.expire(s * S).is_empty());
        }
        // The other neighbour answers its last refresh.
        t.learn(v4(8), MAC2, 2, 32 * S + 1);
        assert_eq!(probes(&mut t, 33 * S), vec![]);
        // The third refresh went out at 32 s; unanswered at 33 s.
        assert!(t.expire(33 * S - 1).is_empty());
        assert_eq!(
            t.resolved(id),
            Some(Resolved {
                interface: 2,
                dst_mac: MAC1
            })
        );
        assert_eq!(t.expire(33 * S), vec![id]);
        assert_eq!(t.state(id), Some(NeighborState::Failed { since: 33 * S }));
        assert_eq!(t.resolved(id), None);
        assert!(t.expire(34 * S).is_empty(), "reported once");
        assert_eq!(
            t.resolved(other),
            Some(Resolved {
                interface: 2,
                dst_mac: MAC2
            })
        );
    }

    #[test]
    fn mac_change_is_reported_and_used() {
        let mut t = NeighborTable::default();
        let id = t.add_nexthop(v4(1), 1);
        t.learn(v4(1), MAC1, 1, 0);
        assert_eq!(
            t.learn(v4(1), MAC2, 1, S),
            NeighborLearn::MacChanged { id, old: MAC1 }
        );
        assert_eq!(
            t.resolved(id),
            Some(Resolved {
                interface: 1,
                dst_mac: MAC2
            })
        );
        // A learn stamped earlier than the last confirmation does not rewind it.
        t.learn(v4(1), MAC2, 1, S / 2);
        assert_eq!(
            t.state(id),
            Some(NeighborState::Reachable {
                mac: MAC2,
                updated: S
            })
        );
    }

    #[test]
    fn learning_is_per_interface_and_only_for_tracked_neighbours() {
        let ll = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
        let mut t = NeighborTable::default();
        let on3 = t.add_nexthop(ll, 3);
        let on5 = t.add_nexthop(ll, 5);
        assert_eq!(t.learn(ll, MAC1, 3, 0), NeighborLearn::Resolved { id: on3 });
        assert_eq!(
            t.resolved(on3),
            Some(Resolved {
                interface: 3,
                dst_mac: MAC1
            })
        );
        assert_eq!(
            t.resolved(on5),
            None,
            "same address on another link is another neighbour"
        );
        assert_eq!(t.learn(ll, MAC2, 5, 0), NeighborLearn::Resolved { id: on5 });
        assert_eq!(
            t.resolved(on3),
            Some(Resolved {
                interface: 3,
                dst_mac: MAC1
            })
        );
        assert_eq!(t.learn(v4(99), MAC1, 3, 0), NeighborLearn::NotTracked);
        assert_eq!(t.learn(ll, MAC1, 4, 0), NeighborLearn::NotTracked);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn requests_come_in_id_order_for_both_families() {
        let g = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));
        let mut t = NeighborTable::default();
        t.add_nexthop(g, 1);
        t.add_nexthop(v4(1), 0);
        t.add_nexthop(v4(2), 7);
        assert_eq!(probes(&mut t, 0), vec![(g, 1), (v4(1), 0), (v4(2), 7)]);
        let it: Vec<_> = t.iter().map(|(nh, _)| nh.id).collect();
        assert_eq!(it, vec![0, 1, 2]);
    }

    #[test]
    fn custom_timers_apply() {
        let cfg = NeighborConfig {
            reachable_time: 5 * MS,
            retry_interval: MS,
            max_probes: 1,
            failed_backoff: 2 * MS,
        };
        let mut t = NeighborTable::new(cfg);
        assert_eq!(t.config(), cfg);
        let id = t.add_nexthop(v4(1), 1);
        t.learn(v4(1), MAC1, 1, 0);
        assert_eq!(probes(&mut t, 5 * MS).len(), 1);
        assert_eq!(probes(&mut t, 6 * MS).len(), 0, "max_probes = 1");
        assert_eq!(t.expire(6 * MS), vec![id]);
        assert_eq!(probes(&mut t, 8 * MS - 1).len(), 0);
        assert_eq!(probes(&mut t, 8 * MS).len(), 1);
    }

    #[test]
    fn flush_port_forgets_macs_on_that_interface() {
        let mut t = NeighborTable::default();
        let a = t.add_nexthop(v4(1), 1);
        let b = t.add_nexthop(v4(2), 1);
        let c = t.add_nexthop(v4(3), 2);
        t.learn(v4(1), MAC1, 1, 0);
        t.learn(v4(3), MAC2, 2, 0);
        assert_eq!(t.flush_interface(1), vec![a]);
        assert_eq!(t.resolved(a), None);
        assert_eq!(
            t.state(b),
            Some(NeighborState::Incomplete {
                probes: 0,
                last_probe: None
            })
        );
        assert_eq!(
            t.resolved(c),
            Some(Resolved {
                interface: 2,
                dst_mac: MAC2
            })
        );
        assert_eq!(probes(&mut t, S), vec![(v4(1), 1), (v4(2), 1)]);
    }
}
