//! Flowlet switching for ECMP groups: a fixed-size table of flowlets indexed by flow hash, and
//! the per-group balancer that decides, for each packet of a group in `flowlet` or
//! `per-packet` mode, which member it leaves on (REFERENCE.md section 3).
//!
//! # The table
//!
//! `FlowletTable` is `2^k` entries of (last seen, member, flowlet id), allocated once. A packet
//! uses entry `hash & (size - 1)`. If the entry's last packet is at most `timeout` old and its
//! member is still live, the packet stays on that member: the flowlet goes on. Otherwise a new
//! flowlet starts and the group picks a member for it. Every packet refreshes the entry's
//! time, so aging is implicit: an entry idle for longer than the timeout is simply a new
//! flowlet the next time it is used, and nothing ever has to be swept.
//!
//! Collisions are deterministic and safe: flows whose hashes share an entry share one flowlet
//! (exactly like the P4 reference programs' register arrays). Each of them refreshes the time,
//! so the shared flowlet ends only when *all* of them have been idle for the timeout; then
//! every one of them has a gap longer than the timeout too, and moving it cannot reorder it.
//! A collision can only make flowlets longer (less balancing), never reorder a flow.
//!
//! # Choosing a member for a new flowlet
//!
//! * `random` (LetFlow): a pseudo-random draw indexes the group's resilient bucket table, so
//!   the draw honours weights and skips members that are down. The draw mixes the flow hash,
//!   the new flowlet's id (per packet: a packet count) and a seed from the config, as the P4
//!   program hashes the flow and its flowlet id into the member selector: the same trace gives
//!   the same choices, and no generator state chains one packet's draw to the previous one's.
//! * `least-loaded` (CONGA-like, local information only): each live member's load is the
//!   bytes held in its egress port's queues (all traffic classes) plus a decaying estimate of
//!   the bytes that port recently transmitted (a DRE, halved every `DRE_HALF_LIFE`), divided
//!   by the member's weight, compared in units of `LOAD_QUANTUM` bytes (as CONGA quantises
//!   its DRE: a flowlet does not move for a difference smaller than a frame, and loads that
//!   tie let choices pick from the least-loaded set found once, instead of scanning the
//!   members for each). The lowest load wins; ties go to the first member in an order
//!   rotated by the flow hash (starting at the flowlet's previous member, so a tie never
//!   moves a flowlet needlessly), which also spreads simultaneous new flows over idle members.
//!   With `avoid_ecn`, members whose port is marking ECN in some class are skipped unless
//!   every live member is marking.
//!
//! Members that go down are never chosen, and a flowlet whose member is down moves at once,
//! whatever its gap (that packet counts as a new flowlet and a forced move).

use super::ecmp::{EcmpGroup, Member, NO_MEMBER};
use crate::clock::{PICOS_PER_MICRO, Picos};
use crate::counters::Counter;
use crate::qos::{TC_COUNT, TmCounters};
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

/// Flowlet entries per group when not configured (SAI ARS defaults to 512 flows; RoCE fabrics
/// have few flows per leaf, but a larger table makes collisions rarer for little memory:
/// 16 bytes an entry, 64 KiB a group).
pub const DEFAULT_TABLE_SIZE: usize = 4096;
/// Largest flowlet table accepted (16 MiB per group).
pub const MAX_TABLE_SIZE: usize = 1 << 20;
/// The default idle gap that ends a flowlet (ConWeave's CONGA and LetFlow settings).
pub const DEFAULT_TIMEOUT: Picos = 100 * PICOS_PER_MICRO;
/// The recent-transmission estimate halves every this long (CONGA's DRE: period 50 us).
pub const DRE_HALF_LIFE: Picos = 50 * PICOS_PER_MICRO;
/// Least-loaded choice compares loads in units of this many bytes (`LOAD_QUANTUM_SHIFT`).
pub const LOAD_QUANTUM: u64 = 1 << LOAD_QUANTUM_SHIFT;
const LOAD_QUANTUM_SHIFT: u32 = 8;
/// Flowlet moves kept for the event log; later ones are only counted.
pub const EVENT_CAPACITY: usize = 1 << 16;
/// Members a balanced (`flowlet` or `per-packet`) group may have (SAI ARS allows 16 primary
/// members; a bound keeps the least-loaded scan short).
pub const MAX_BALANCED_MEMBERS: usize = 64;

/// How a group spreads traffic over its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BalanceMode {
    /// Static flow hashing: a flow stays on its bucket's member.
    #[default]
    Hash,
    /// A flow may change member only after an idle gap longer than the timeout.
    Flowlet,
    /// Every packet is placed on its own (spraying, for receivers that reorder).
    PerPacket,
}

impl BalanceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BalanceMode::Hash => "hash",
            BalanceMode::Flowlet => "flowlet",
            BalanceMode::PerPacket => "per-packet",
        }
    }
}

/// How a new flowlet (or, per packet, each packet) picks its member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathChoice {
    /// Uniformly at random by weight (LetFlow).
    #[default]
    Random,
    /// The member with the least egress queue depth plus recent transmitted bytes.
    LeastLoaded,
}

impl PathChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            PathChoice::Random => "random",
            PathChoice::LeastLoaded => "least-loaded",
        }
    }
}

/// A group's balancing configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BalanceSpec {
    pub mode: BalanceMode,
    pub choice: PathChoice,
    /// A flowlet ends after an idle gap longer than this.
    pub timeout: Picos,
    /// Flowlet entries (a power of two); unused in `hash` and `per-packet` modes.
    pub table_size: usize,
    /// Least-loaded choice skips members whose port is marking ECN (unless all are).
    pub avoid_ecn: bool,
}

impl Default for BalanceSpec {
    fn default() -> Self {
        Self {
            mode: BalanceMode::Hash,
            choice: PathChoice::Random,
            timeout: DEFAULT_TIMEOUT,
            table_size: DEFAULT_TABLE_SIZE,
            avoid_ecn: false,
        }
    }
}

/// Why a balancer cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowletError {
    /// The table size is not a power of two in `1..=MAX_TABLE_SIZE`.
    TableSize(usize),
    /// A balanced group has more than `MAX_BALANCED_MEMBERS` members.
    TooManyMembers(usize),
}

impl fmt::Display for FlowletError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowletError::TableSize(n) => write!(
                f,
                "flowlet table size {n} is not a power of two in 1..={MAX_TABLE_SIZE}"
            ),
            FlowletError::TooManyMembers(n) => write!(
                f,
                "{n} members: flowlet and per-packet groups take at most {MAX_BALANCED_MEMBERS}"
            ),
        }
    }
}

impl std::error::Error for FlowletError {}

/// Marks an entry that has never been used (no member index is this large).
const EMPTY: u32 = u32::MAX;

/// One flowlet: 16 bytes, four to a cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    last_seen: Picos,
    /// Index of the member in the group, or `EMPTY`.
    member: u32,
    /// Counts the flowlets this entry has started (wraps); the P4 program's `flowlet_id`.
    flowlet_id: u32,
}

const EMPTY_ENTRY: Entry = Entry {
    last_seen: 0,
    member: EMPTY,
    flowlet_id: 0,
};

/// What the table says about a packet's flowlet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The flowlet goes on, on this member (index in the group).
    Continue(u32),
    /// The gap was longer than the timeout (or the entry was never used): a new flowlet.
    /// `previous` is the member of the entry's last flowlet, if any.
    New { previous: Option<u32> },
}

/// The fixed-size flowlet table (see the module documentation). Entries are cells so that a
/// random choice, which otherwise changes only counters, can be made through a shared
/// reference (the express lane makes it ahead of the frame's turn:
/// [`GroupBalancer::place_flowlet_random`]); the table belongs to one worker.
#[derive(Clone)]
pub struct FlowletTable {
    entries: Box<[Cell<Entry>]>,
    mask: u32,
}

impl fmt::Debug for FlowletTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowletTable")
            .field("size", &self.entries.len())
            .finish()
    }
}

impl FlowletTable {
    /// A table of `size` entries (a power of two up to `MAX_TABLE_SIZE`), all empty.
    ///
    /// # Errors
    ///
    /// [`FlowletError::TableSize`].
    pub fn new(size: usize) -> Result<FlowletTable, FlowletError> {
        if !size.is_power_of_two() || size > MAX_TABLE_SIZE {
            return Err(FlowletError::TableSize(size));
        }
        Ok(FlowletTable {
            entries: vec![Cell::new(EMPTY_ENTRY); size].into_boxed_slice(),
            mask: (size - 1) as u32,
        })
    }

    pub fn size(&self) -> usize {
        self.entries.len()
    }

    /// Looks up the flowlet of `hash` at `now`. A flowlet goes on while the gap since the
    /// entry's last packet is at most `timeout` (a gap exactly equal to it does not end it).
    /// Does not change the table: call [`FlowletTable::record`] with the member used.
    #[inline]
    #[must_use]
    pub fn lookup(&self, hash: u32, now: Picos, timeout: Picos) -> Lookup {
        let entry = self.entries[(hash & self.mask) as usize].get();
        if entry.member == EMPTY {
            Lookup::New { previous: None }
        } else if now.saturating_sub(entry.last_seen) <= timeout {
            Lookup::Continue(entry.member)
        } else {
            Lookup::New {
                previous: Some(entry.member),
            }
        }
    }

    /// Records a packet of `hash` sent on `member` at `now`; `new_flowlet` starts a new
    /// flowlet id. Time never goes backward in an entry (live mode reads the TSC once per
    /// burst, so a later packet can carry an earlier `now`).
    #[inline]
    pub fn record(&self, hash: u32, member: u32, now: Picos, new_flowlet: bool) {
        let cell = &self.entries[(hash & self.mask) as usize];
        let entry = cell.get();
        cell.set(Entry {
            last_seen: entry.last_seen.max(now),
            member,
            flowlet_id: entry.flowlet_id.wrapping_add(u32::from(new_flowlet)),
        });
    }

    /// The flowlet id of `hash`'s entry (how many flowlets it started, wrapping).
    pub fn flowlet_id(&self, hash: u32) -> u32 {
        self.entries[(hash & self.mask) as usize].get().flowlet_id
    }

    /// Forgets every flowlet (members were added or removed, so indices changed).
    pub fn clear(&mut self) {
        self.entries.fill(Cell::new(EMPTY_ENTRY));
    }
}

/// Which of a group's choices the express lane makes in pass 2, ahead of the frames' turn
/// (`GroupBalancer::places_ahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceAhead {
    /// None: every choice is made in turn.
    No,
    /// Random flowlet choices.
    Random,
    /// Least-loaded flowlet choices, where the loads read the same in either pass.
    LeastLoaded,
}

/// A least-loaded flowlet choice (`GroupBalancer::flowlet_least_loaded`): the member (nexthop
/// id, index in the group) and what the event log notes of the flowlet.
#[derive(Clone, Copy)]
struct LeastChoice {
    id: u32,
    member: u32,
    last: u32,
    moved: bool,
    forced: bool,
}

/// A random flowlet choice (`GroupBalancer::flowlet_random`): the member (nexthop id, index
/// in the group, counters) and what the event log notes of the flowlet (its entry's previous
/// member, the draw's, whether it moved and whether by force).
struct RandomChoice<'a> {
    id: u32,
    member: u32,
    counters: Option<&'a MemberCounters>,
    last: u32,
    drawn: u32,
    moved: bool,
    forced: bool,
}

/// Packets and bytes a group sent to one member.
#[derive(Debug, Default)]
pub struct MemberCounters {
    pub packets: Counter,
    pub bytes: Counter,
}

impl MemberCounters {
    /// `packets` more frames sent to the member, `bytes` in all.
    #[inline(always)]
    pub fn count(&self, packets: u32, bytes: u32) {
        self.bytes.add(u64::from(bytes));
        self.packets.add(u64::from(packets));
    }
}

/// A group's counters, written by the worker and readable from any thread.
#[derive(Debug)]
pub struct BalanceCounters {
    /// Flowlets started (in `per-packet` mode: packets placed).
    pub flowlets: Counter,
    /// New flowlets placed on a different member than the entry's previous flowlet.
    pub moves: Counter,
    /// Of the moves, those forced because the member went down (gap not reached).
    pub forced_moves: Counter,
    /// What the group sent to each member (index as in the group's members). One pair per
    /// member, so that counting a frame finds both with one index.
    pub members: Vec<MemberCounters>,
    /// Moves not kept in the event log (it was full).
    pub events_lost: Counter,
}

impl BalanceCounters {
    pub fn new(members: usize) -> BalanceCounters {
        BalanceCounters {
            flowlets: Counter::default(),
            moves: Counter::default(),
            forced_moves: Counter::default(),
            members: (0..members).map(|_| MemberCounters::default()).collect(),
            events_lost: Counter::default(),
        }
    }

    /// Max member bytes over mean member bytes (1.0 is perfect balance; 0.0 when nothing was
    /// sent). Every member counts in the mean, so a member that sent nothing raises the ratio.
    pub fn imbalance(&self) -> f64 {
        imbalance(&self.member_bytes())
    }

    /// Bytes sent to each member.
    pub fn member_bytes(&self) -> Vec<u64> {
        self.members.iter().map(|m| m.bytes.get()).collect()
    }

    /// Packets sent to each member.
    pub fn member_packets(&self) -> Vec<u64> {
        self.members.iter().map(|m| m.packets.get()).collect()
    }
}

/// Max over mean of `loads` (0.0 when all are zero or there are none).
pub fn imbalance(loads: &[u64]) -> f64 {
    let total: u64 = loads.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let max = loads.iter().copied().max().unwrap_or(0);
    max as f64 * loads.len() as f64 / total as f64
}

/// A flowlet that changed member, for the event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowletMove {
    pub at: Picos,
    pub group: u32,
    /// The flowlet table entry (hash & mask).
    pub slot: u32,
    /// Member indices in the group.
    pub from: u32,
    pub to: u32,
    /// The old member was down: the flowlet moved before its gap.
    pub forced: bool,
}

/// What the balancer needs to know about egress ports: how many bytes each holds now, how
/// many it has transmitted so far, and whether it is marking ECN.
///
/// Why a view over `TmCounters` rather than a trait object or a slice the engine hands in per
/// call: the traffic manager already keeps every (port, TC) egress depth and dequeued byte
/// count current in `TmCounters` (relaxed atomics, written only by the worker that owns the
/// port), so the forwarder can read them at the instant it processes a frame without locks,
/// without copying anything per packet, and without the engine's call into `Forwarder::process`
/// changing. In replay this is deterministic: the worker advanced the traffic manager to the
/// frame's arrival time before processing it, and nothing else writes. The ECN state is
/// derived from the same depth and each class's configured Kmin (the depth at which the
/// traffic manager starts marking).
#[derive(Debug, Clone, Default)]
pub struct EgressLoad {
    counters: Option<Arc<TmCounters>>,
    /// Per port, per TC: the depth from which the queue marks ECN (`u64::MAX`: never).
    ecn_kmin: Vec<[u64; TC_COUNT]>,
}

impl EgressLoad {
    /// A view of the traffic manager's counters; `ecn_kmin[port][tc]` as configured.
    pub fn new(counters: Arc<TmCounters>, ecn_kmin: Vec<[u64; TC_COUNT]>) -> EgressLoad {
        EgressLoad {
            counters: Some(counters),
            ecn_kmin,
        }
    }

    /// Bytes held in `port`'s egress queues (all TCs; in a replay the frame on the wire too).
    #[inline]
    pub fn queued_bytes(&self, port: u16) -> u64 {
        self.queues(port)
            .map_or(0, |q| q.iter().map(|c| c.depth_bytes.get()).sum())
    }

    /// Bytes `port` has sent since the start (in live mode: handed to its TX ring).
    #[inline]
    pub fn transmitted_bytes(&self, port: u16) -> u64 {
        self.queues(port)
            .map_or(0, |q| q.iter().map(|c| c.dequeued_bytes()).sum())
    }

    /// `queued_bytes` and `transmitted_bytes` of `port`, in one pass over its classes.
    #[inline]
    pub fn queued_and_transmitted_bytes(&self, port: u16) -> (u64, u64) {
        self.queues(port).map_or((0, 0), |q| {
            q.iter().fold((0, 0), |(queued, sent), c| {
                (queued + c.depth_bytes.get(), sent + c.dequeued_bytes())
            })
        })
    }

    /// Whether some class of `port` holds at least its ECN Kmin (so arrivals get marked).
    #[inline]
    pub fn marking(&self, port: u16) -> bool {
        let (Some(q), Some(kmin)) = (self.queues(port), self.ecn_kmin.get(usize::from(port)))
        else {
            return false;
        };
        q.iter()
            .zip(kmin)
            .any(|(c, &k)| k != u64::MAX && c.depth_bytes.get() >= k)
    }

    fn queues(&self, port: u16) -> Option<&[crate::qos::QueueCounters; TC_COUNT]> {
        self.counters
            .as_ref()?
            .queues
            .get(usize::from(port))
            .map(|row| &**row)
    }
}

/// Per-member state of least-loaded choice.
#[derive(Debug, Clone, Copy)]
struct MemberLoad {
    /// The member's egress port, if it is a routed port (a VLAN member's port is only known
    /// per packet; its load is then the group's own recent bytes to it).
    port: Option<u16>,
    /// Decaying estimate of recent transmitted bytes, and when it was last decayed.
    dre: u64,
    dre_at: Picos,
    /// The cumulative byte count last folded into `dre`.
    seen: u64,
}

/// The draw of `random` choice over the flow hash, the seed and a salt that differs per flowlet
/// (or per packet), spread by the golden ratio so consecutive salts land far apart. The flow
/// hash already ends in MurmurHash3's full-avalanche finaliser, so one multiply is enough to
/// make the salt's change reach the bucket index: the index (the low bits, at most 16 of them,
/// `ecmp::MAX_BUCKETS`) is taken from the product's high half, rotated down, where each bit
/// depends on every bit below it (multiplicative hashing). A rotate, not the finaliser's
/// fold of the high half into the low: every packet of a random-choice group draws.
#[inline]
fn draw(hash: u32, seed: u32, salt: u32) -> u32 {
    let h = (hash ^ seed ^ salt.wrapping_mul(0x9e37_79b9)).wrapping_mul(0x85eb_ca6b);
    h.rotate_left(16)
}

/// The salt of a new flowlet's draw: its start time, folded to 32 bits. A flow's flowlets
/// start at least a timeout apart, so each draws afresh (and a replay draws as it did before);
/// unlike the entry's flowlet id, the time is at hand before the entry is read, so the draw
/// comes before that read instead of after it.
#[inline(always)]
fn flowlet_salt(now: Picos) -> u32 {
    (now ^ (now >> 32)) as u32
}

/// A member's load as least-loaded choice compares it: in `LOAD_QUANTUM` units.
#[inline(always)]
fn quantized(bytes: u64) -> u64 {
    bytes >> LOAD_QUANTUM_SHIFT
}

/// The members of `eligible` (bit i: `loads[i]`) whose load is the least among them.
#[inline]
fn least_set(loads: &[Cell<u64>], eligible: u64) -> u64 {
    // Without branches: which member is lighter is data, a branch on it mispredicted.
    let (mut least, mut set) = (u64::MAX, 0u64);
    for (i, load) in loads.iter().enumerate().take(64) {
        let load = quantized(load.get());
        let eligible = eligible >> i & 1 != 0;
        let lighter = eligible & (load < least);
        least = std::hint::select_unpredictable(lighter, load, least);
        set = std::hint::select_unpredictable(lighter, 0, set);
        set |= u64::from(eligible & (load == least)) << i;
    }
    set
}

/// The first member of `set` (bit i: member i) at or after member `start` (below 64),
/// wrapping around: the least-loaded member a choice starting at `start` takes.
#[inline(always)]
fn first_from(set: u64, start: usize) -> Option<u32> {
    let from_start = set & (u64::MAX << (start & 63));
    // Whether the set wraps past `start` is data: a select, not a branch.
    let pick = std::hint::select_unpredictable(from_start != 0, from_start, set);
    (pick != 0).then(|| pick.trailing_zeros())
}

/// The balancing state of one ECMP group.
#[derive(Debug, Clone)]
pub struct GroupBalancer {
    spec: BalanceSpec,
    group: u32,
    table: FlowletTable,
    /// Seed of `random` draws (from the config, different per group).
    seed: u32,
    /// Packets placed in `per-packet` mode (the salt of their draws).
    placed: u32,
    // Least-loaded state is in cells, as the flowlet table is: the express lane's pass 2
    // chooses through a shared reference (`Self::place_flowlet_least_loaded`).
    /// Per member: where its recent-transmission estimate stands.
    loads: Box<[Cell<MemberLoad>]>,
    /// Per member: its load (queued + `MemberLoad::dre`) as read at `snapshot_at`, plus the
    /// bytes this group has sent to it since.
    snapshots: Box<[Cell<u64>]>,
    /// When the members' loads were last read (`Picos::MAX`: never). Choices at the same
    /// instant (one RX burst in live mode; frames arriving together in replay) reuse that
    /// reading plus the group's own bytes since, so a burst of new flowlets reads the
    /// counters once and still spreads.
    snapshot_at: Cell<Picos>,
    /// Least-loaded choice among equal weights: the eligible members at the least load when
    /// last scanned (`scan_least`), less each that has been sent bytes since (its load rose
    /// above the others'); empty when a scan is due. A choice takes the first of them from
    /// its start, which is what a scan of all members would pick.
    least: Cell<u64>,
    /// The `EcmpGroup::generation` whose up flags that scan read.
    least_generation: Cell<u64>,
    /// Read with the loads: bit i set when member i's port is marking ECN and the group
    /// avoids such members while others are up; and whether all members weigh the same.
    avoided: Cell<u64>,
    equal_weights: Cell<bool>,
    /// Member index by nexthop id (`u16::MAX`: not a member), for counting bytes in `hash`
    /// mode where the bucket table names the nexthop.
    index_of: Box<[u16]>,
    counters: Arc<BalanceCounters>,
    record_events: bool,
    /// `Self::places_ahead`.
    places_ahead: PlaceAhead,
    events: Vec<FlowletMove>,
}

impl GroupBalancer {
    /// A balancer for group number `group` over `ecmp`'s members; `member_ports[i]` is member
    /// i's egress port when it has a port of its own. `seed` seeds random choice.
    ///
    /// # Errors
    ///
    /// [`FlowletError`] for a bad table size (flowlet mode) or too many members.
    pub fn new(
        spec: BalanceSpec,
        group: u32,
        ecmp: &EcmpGroup,
        member_ports: &[Option<u16>],
        seed: u64,
        record_events: bool,
    ) -> Result<GroupBalancer, FlowletError> {
        let members = ecmp.members();
        if spec.mode != BalanceMode::Hash && members.len() > MAX_BALANCED_MEMBERS {
            return Err(FlowletError::TooManyMembers(members.len()));
        }
        let table = match spec.mode {
            BalanceMode::Flowlet => FlowletTable::new(spec.table_size)?,
            _ => FlowletTable::new(1)?,
        };
        let max_id = members.iter().map(|m| m.id as usize).max().unwrap_or(0);
        let mut index_of = vec![u16::MAX; max_id + 1].into_boxed_slice();
        for (i, m) in members.iter().enumerate() {
            index_of[m.id as usize] = i as u16;
        }
        Ok(GroupBalancer {
            spec,
            group,
            table,
            // Each group draws its own sequence from the one seed.
            seed: draw(seed as u32 ^ (seed >> 32) as u32, group, 0x5eed),
            placed: 0,
            loads: (0..members.len())
                .map(|i| {
                    Cell::new(MemberLoad {
                        port: member_ports.get(i).copied().flatten(),
                        dre: 0,
                        dre_at: 0,
                        seen: 0,
                    })
                })
                .collect(),
            snapshots: (0..members.len()).map(|_| Cell::new(0)).collect(),
            snapshot_at: Cell::new(Picos::MAX),
            least: Cell::new(0),
            least_generation: Cell::new(0),
            avoided: Cell::new(0),
            equal_weights: Cell::new(true),
            index_of,
            counters: Arc::new(BalanceCounters::new(members.len())),
            record_events,
            places_ahead: match spec.choice {
                _ if spec.mode != BalanceMode::Flowlet || record_events => PlaceAhead::No,
                PathChoice::Random => PlaceAhead::Random,
                PathChoice::LeastLoaded => PlaceAhead::LeastLoaded,
            },
            // Room for the usual run; a busier log grows (only with --events) up to
            // EVENT_CAPACITY.
            events: Vec::with_capacity(if record_events { 1024 } else { 0 }),
        })
    }

    /// This group balanced as `spec` says: a new flowlet table and new loads, so every flow
    /// chooses again with its next packet, but the same counters and event log (the members
    /// are the same), so counts and flowlet events go on across the change. `self` keeps no
    /// events.
    ///
    /// # Errors
    ///
    /// As [`GroupBalancer::new`].
    pub fn rebalanced(
        &mut self,
        spec: BalanceSpec,
        ecmp: &EcmpGroup,
        member_ports: &[Option<u16>],
        seed: u64,
    ) -> Result<GroupBalancer, FlowletError> {
        let mut next = GroupBalancer::new(
            spec,
            self.group,
            ecmp,
            member_ports,
            seed,
            self.record_events,
        )?;
        next.counters = Arc::clone(&self.counters);
        next.events = std::mem::take(&mut self.events);
        Ok(next)
    }

    pub fn spec(&self) -> &BalanceSpec {
        &self.spec
    }

    pub fn counters(&self) -> &Arc<BalanceCounters> {
        &self.counters
    }

    /// Takes the recorded flowlet moves (oldest first).
    pub fn take_events(&mut self) -> Vec<FlowletMove> {
        std::mem::take(&mut self.events)
    }

    /// The flowlet table (for inspection).
    pub fn table(&self) -> &FlowletTable {
        &self.table
    }

    /// Starts fetching the flowlet slot of flow `hash` (flowlet mode only), for a frame whose
    /// choice comes a little later.
    #[inline]
    pub fn prefetch_slot(&self, hash: u32) {
        if self.spec.mode == BalanceMode::Flowlet
            && let Some(entry) = self.table.entries.get((hash & self.table.mask) as usize)
        {
            crate::dpdk::prefetch(entry);
        }
    }

    /// The nexthop for a packet of flow `hash` and `len` bytes at `now`, or `None` when no
    /// member is live. `ecmp` is the group's bucket table and member list.
    #[inline]
    pub fn select(
        &mut self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        self.select_member(ecmp, hash, len, now, egress)
            .map(|(id, _)| id)
    }

    /// `select`, with the chosen member's index in the group when it has counters.
    #[inline(always)]
    pub fn select_member(
        &mut self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<(u32, Option<u32>)> {
        let (id, index) = match self.spec.mode {
            BalanceMode::Hash => return self.select_by_hash(ecmp, hash, len),
            // One predictable branch per packet, so that each choice's path is compiled
            // for it alone: random choice never tests for least-loaded bookkeeping.
            BalanceMode::Flowlet => match self.spec.choice {
                PathChoice::Random => self.select_flowlet_random(ecmp, hash, len, now)?,
                PathChoice::LeastLoaded => {
                    self.select_flowlet_least_loaded(ecmp, hash, len, now, egress)?
                }
            },
            BalanceMode::PerPacket => return self.select_per_packet(ecmp, hash, len, now, egress),
        };
        Some((id, Some(index)))
    }

    /// Whether the group chooses by the flow hash alone (`hash` mode): then a choice has no
    /// effect but the chosen member's counters, which add up the same in any order, so the
    /// express lane makes it ahead of the frame's turn (`Self::select_by_hash`).
    #[inline(always)]
    pub fn hashes_statically(&self) -> bool {
        self.spec.mode == BalanceMode::Hash
    }

    /// `select_member` of a `hash` group: the bucket's member, counted (with its index in
    /// the group, if it has counters: a member added after start has none and is still used).
    #[inline(always)]
    pub fn select_by_hash(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
    ) -> Option<(u32, Option<u32>)> {
        debug_assert!(self.hashes_statically());
        let id = ecmp.select(hash)?;
        let index = self.index_of.get(id as usize).map(|&i| u32::from(i));
        if let Some(index) = index {
            self.count(index as usize, len);
        }
        Some((id, index))
    }

    /// `select_by_hash` for the express lane: the member's nexthop id (counted for a frame
    /// of `len` bytes) and its counters, where the frames of the flow that follow in the
    /// burst count.
    #[inline(always)]
    pub fn place_by_hash(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
    ) -> Option<(u32, Option<&MemberCounters>)> {
        debug_assert!(self.hashes_statically());
        let id = ecmp.select(hash)?;
        let member = self
            .index_of
            .get(id as usize)
            .and_then(|&i| self.counters.members.get(usize::from(i)));
        if let Some(member) = member {
            member.count(1, len);
        }
        Some((id, member))
    }

    /// Takes back what a choice counted for a frame of `len` bytes placed on nexthop `id`
    /// that did not leave after all (see `Forwarder::uncount_member`). Balancing state (the
    /// flowlet, the loads) keeps the choice: it was made.
    #[cold]
    pub fn uncount(&self, id: u32, len: u32) {
        let member = self
            .index_of
            .get(id as usize)
            .and_then(|&i| self.counters.members.get(usize::from(i)));
        if let Some(member) = member {
            member.packets.add(1u64.wrapping_neg());
            member.bytes.add(u64::from(len).wrapping_neg());
        }
    }

    /// Takes back a choice the express lane made in pass 2 for a frame of `len` bytes placed
    /// on nexthop `id` that does not leave by the express path after all, so that it is
    /// chosen again in its turn (by pass 3 or the full pipeline; the flowlet it started goes
    /// on): its counters, and for a least-loaded group its bytes in the member's load, which
    /// the second choice counts. The least-loaded set stays as it is: the second choice
    /// raises the load as the first did, and takes the member out of the set if the first
    /// did; no other choice of the group comes between the two.
    #[cold]
    pub fn unplace(&self, id: u32, len: u32) {
        self.uncount(id, len);
        if self.places_ahead == PlaceAhead::LeastLoaded
            && let Some(&index) = self.index_of.get(id as usize)
            && let Some(snapshot) = self.snapshots.get(usize::from(index))
        {
            snapshot.set(snapshot.get().saturating_sub(u64::from(len)));
        }
    }

    /// `select_member` of a group that sprays per packet. Out of line: the modes of most
    /// groups inline theirs into the forwarding path, and this one would crowd it.
    #[inline(never)]
    fn select_per_packet(
        &mut self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<(u32, Option<u32>)> {
        self.counters.flowlets.add(1);
        self.placed = self.placed.wrapping_add(1);
        let index = self.choose(ecmp, hash, self.placed, None, now, egress)?;
        self.count_choice(index, len);
        ecmp.members()
            .get(index as usize)
            .map(|m| (m.id, Some(index)))
    }

    /// Each member's load as least-loaded choice reads it at the current instant.
    #[cfg(test)]
    pub(crate) fn load_snapshots(&self) -> Vec<u64> {
        self.snapshots.iter().map(Cell::get).collect()
    }

    /// `count_choice` for a group whose choice is known to be least-loaded (`LEAST_LOADED`)
    /// or random.
    #[inline(always)]
    fn count_chosen<const LEAST_LOADED: bool>(&self, index: u32, len: u32) {
        self.count(index as usize, len);
        if LEAST_LOADED {
            self.add_recent_bytes(index, len);
        }
    }

    /// The counters of a flowlet or per-packet choice of member `index`.
    #[inline(always)]
    fn count_choice(&self, index: u32, len: u32) {
        // Only least-loaded choice reads the loads.
        if self.spec.choice == PathChoice::LeastLoaded {
            self.count_chosen::<true>(index, len);
        } else {
            self.count_chosen::<false>(index, len);
        }
    }

    /// Least-loaded choice: member `index` was sent `len` bytes since the loads were read,
    /// so it leaves the least-loaded set if that raised its quantised load.
    #[inline(always)]
    fn add_recent_bytes(&self, index: u32, len: u32) {
        if let Some(snapshot) = self.snapshots.get(index as usize) {
            let before = snapshot.get();
            let after = before + u64::from(len);
            snapshot.set(after);
            let rose = quantized(after) != quantized(before);
            // (`snapshots` has at most 64 members.)
            self.least
                .set(self.least.get() & !(u64::from(rose) << (index & 63)));
        }
    }

    #[inline]
    fn count(&self, index: usize, len: u32) {
        if let Some(member) = self.counters.members.get(index) {
            member.bytes.add(u64::from(len));
            member.packets.add(1);
        }
    }

    /// `select_member` of a least-loaded flowlet group: [`Self::flowlet_least_loaded`], and
    /// the event log's part of the flowlet when there is a log. Out of line: inlined, it
    /// lengthens the worker loop that every other mode runs too, for no measurable gain (A/B
    /// rates: 0.97x hashing for 1.03x least-loaded with the per-choice scan; 0.99-1.00x
    /// least-loaded with the set).
    #[inline(never)]
    fn select_flowlet_least_loaded(
        &mut self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<(u32, u32)> {
        let choice = self.flowlet_least_loaded(ecmp, hash, len, now, egress)?;
        if self.record_events {
            let LeastChoice {
                member,
                last,
                moved,
                forced,
                ..
            } = choice;
            self.log_new_flowlet(hash, last, member, moved, forced, now);
        }
        Some((choice.id, choice.member))
    }

    /// The member of flow `hash`'s flowlet at `now` in a least-loaded group: the entry's
    /// while the flowlet goes on and its member is up, else a new flowlet's choice; the
    /// choice's counters for a packet of `len` bytes included. The entry is found once and
    /// written in place. Unlike random choice it branches on whether the flowlet goes on: a
    /// new flowlet's choice is a scan of the members, too dear to make for every packet.
    #[inline(always)]
    fn flowlet_least_loaded(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<LeastChoice> {
        debug_assert_eq!(self.spec.choice, PathChoice::LeastLoaded);
        let members = ecmp.members();
        let slot = (hash & self.table.mask) as usize;
        let cell = self.table.entries.get(slot)?;
        let entry = cell.get();
        let last = entry.member;
        if last != EMPTY && now.saturating_sub(entry.last_seen) <= self.spec.timeout {
            let Some(m) = members.get(last as usize).filter(|m| m.up) else {
                return self.forced_move(ecmp, hash, last, len, now, egress);
            };
            cell.set(Entry {
                last_seen: entry.last_seen.max(now),
                ..entry
            });
            self.count_chosen::<true>(last, len);
            return Some(LeastChoice {
                id: m.id,
                member: last,
                last,
                moved: false,
                forced: false,
            });
        }
        // A new flowlet after a gap (or the entry's first): it may move, never by force.
        let previous = (last != EMPTY).then_some(last);
        let member = self.least_loaded_new_flowlet(ecmp, hash, previous, now, egress)?;
        let id = members.get(member as usize)?.id;
        cell.set(Entry {
            last_seen: entry.last_seen.max(now),
            member,
            flowlet_id: entry.flowlet_id.wrapping_add(1),
        });
        let moved = self.count_new_flowlet(last, member, len);
        Some(LeastChoice {
            id,
            member,
            last,
            moved,
            forced: false,
        })
    }

    /// Whether the express lane may make a least-loaded choice of this group at `now` in
    /// pass 2, for a frame before which every frame of the burst is express (`first`: it is
    /// the burst's first). In pass 3 the loads are read at the instant's first choice, after
    /// the frames before it went to their queues; in pass 2 none has, so only a frame with
    /// none before it, or one at an instant whose loads were read already, may choose there.
    /// (The bytes of choices made since the reading count either way: `add_recent_bytes`.)
    #[inline(always)]
    pub fn may_place_least_loaded(&self, now: Picos, first: bool) -> bool {
        first | (self.snapshot_at.get() == now)
    }

    /// The express lane's choice for a frame of flow `hash` and `len` bytes at `now` in a
    /// least-loaded group that [`Self::places_ahead`], where [`Self::may_place_least_loaded`]
    /// allows: what [`Self::select_member`] does, through a shared reference. Returns the
    /// member's nexthop id, `None` when no member is live. A later frame of the flow in the
    /// burst chooses again (its bytes count in the member's load).
    #[inline(always)]
    pub fn place_flowlet_least_loaded(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        debug_assert_eq!(self.places_ahead, PlaceAhead::LeastLoaded);
        self.flowlet_least_loaded(ecmp, hash, len, now, egress)
            .map(|c| c.id)
    }

    /// The counters of a new least-loaded flowlet on `member` whose entry's last member was
    /// `last` (`EMPTY` for none) for a packet of `len` bytes; returns whether it moved.
    /// Without a branch on the move. The counters are read once: they are atomics, which
    /// the compiler cannot tell from the balancer's own words, so each use through `self`
    /// would load them again (714.0 -> 710.2 instructions a frame).
    #[inline(always)]
    fn count_new_flowlet(&self, last: u32, member: u32, len: u32) -> bool {
        let counters: &BalanceCounters = &self.counters;
        counters.flowlets.add(1);
        let moved = (last != member) & (last != EMPTY);
        counters.moves.add(u64::from(moved));
        self.count_chosen::<true>(member, len);
        moved
    }

    /// Whether, and how, the express lane may choose this group's members ahead of the
    /// frames' turn: a `flowlet` group without an event log (the log's order would follow
    /// the passes). A random choice ([`Self::place_flowlet_random`]) reads and writes only
    /// the flowlet table and counters, so choices made in burst order, at the burst's one
    /// `now`, are the same whichever pass makes them. A least-loaded one
    /// ([`Self::place_flowlet_least_loaded`]) reads the egress ports' loads too, once per
    /// instant, and may be made ahead only where that reading comes out the same
    /// ([`Self::may_place_least_loaded`]).
    #[inline(always)]
    pub fn places_ahead(&self) -> PlaceAhead {
        self.places_ahead
    }

    /// The express lane's choice for a frame of flow `hash` and `len` bytes at `now` in a
    /// group that [`Self::places_ahead`]: what [`Self::select_member`] does (the flowlet
    /// table and every counter), through a shared reference; with the member's nexthop id
    /// its counters, where the frames of the flow that follow in the burst count (at the
    /// same `now` they go on in the flowlet this frame left in, so counting is all their
    /// choice does). `None` when no member is live.
    #[inline(always)]
    pub fn place_flowlet_random(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
    ) -> Option<(u32, Option<&MemberCounters>)> {
        debug_assert_eq!(self.places_ahead, PlaceAhead::Random);
        let choice = self.flowlet_random(ecmp, hash, len, now)?;
        Some((choice.id, choice.counters))
    }

    /// `select_member` of a random-choice flowlet group: [`Self::flowlet_random`], and the
    /// event log's part of the flowlet when there is a log. Out of line: the express lane
    /// places most frames of such groups in pass 2 (`Self::place_flowlet_random`), and this
    /// copy would crowd the registers of the pass-3 loop that every burst takes.
    #[inline(never)]
    fn select_flowlet_random(
        &mut self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
    ) -> Option<(u32, u32)> {
        let RandomChoice {
            id,
            member,
            last,
            drawn,
            moved,
            forced,
            ..
        } = self.flowlet_random(ecmp, hash, len, now)?;
        if self.record_events {
            self.log_new_flowlet(hash, last, drawn, moved, forced, now);
        }
        Some((id, member))
    }

    /// The member of flow `hash`'s flowlet at `now` in a random-choice group, as
    /// `select_flowlet_least_loaded` finds it, without a branch on whether the flowlet goes
    /// on, counted for a packet of `len` bytes. With more flows than the table has entries
    /// that is close to a coin toss (two flows share each entry at 8192 flows, and the other
    /// may have sent moments ago), which the CPU cannot predict; so every packet draws a new
    /// flowlet's member (a few instructions, before the entry's load: the draw's salt is the
    /// time, not the entry's flowlet id) and a select takes the entry's member or the draw's.
    /// Only a flowlet whose member went down branches (links rarely go down).
    #[inline(always)]
    fn flowlet_random(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        len: u32,
        now: Picos,
    ) -> Option<RandomChoice<'_>> {
        debug_assert_eq!(self.spec.choice, PathChoice::Random);
        // The draw comes before the entry is read: it needs only the hash and the time, and
        // made first it holds two words, not five, while the entry's test runs (inlined into
        // the express lane's pass 2, whose loop keeps most registers: 622.4 instructions a
        // frame against 635.4 with the entry read first).
        // The bucket table holds live members only, in proportion to their weights.
        let drawn = ecmp
            .select(draw(hash, self.seed, flowlet_salt(now)))
            .unwrap_or(NO_MEMBER);
        let drawn_index = self
            .index_of
            .get(drawn as usize)
            .map_or(EMPTY, |&i| u32::from(i));
        // No live member: no choice. (A flowlet going on has its member up, so there is one;
        // every member of the bucket table has an index, the balancer being rebuilt with the
        // group.)
        if drawn_index == EMPTY {
            return None;
        }
        let members = ecmp.members();
        let slot = (hash & self.table.mask) as usize;
        let cell = self.table.entries.get(slot)?;
        let entry = cell.get();
        let last = entry.member;
        // Within the timeout: `now - last_seen <= timeout`, as `FlowletTable::lookup` has it,
        // put so that the bound does not wait for the entry's load.
        let fresh = entry.last_seen >= now.saturating_sub(self.spec.timeout);
        let starts = !fresh;
        let member = std::hint::select_unpredictable(starts, drawn_index, last);
        // The picked member is read, not the entry's: whether the flowlet goes on stays a
        // select (with more flows than entries it is a coin toss, a branch on it mispredicted
        // at full rate), and only a flowlet going on whose member went down (or an unused
        // entry stamped within a timeout of now, at the start of virtual time) branches away:
        // links rarely go down. The draw's member is always up.
        let Some(picked) = members.get(member as usize).filter(|m| m.up) else {
            return Some(self.restart_flowlet(cell, drawn, drawn_index, len, now));
        };
        let choice = RandomChoice {
            id: picked.id,
            member,
            counters: None,
            last,
            drawn: drawn_index,
            // Only a flowlet that starts can take another member than its entry's (the
            // draw's), so the pick tells the move without `starts`: 2 instructions a frame
            // fewer than counting it from the draw and `starts`, whose registers the pass-2
            // loop had to spill (rates, eight alternating rounds: no difference to tell).
            moved: (member != last) & (last != EMPTY),
            forced: false,
        };
        Some(self.record_random(cell, entry, starts, choice, len, now))
    }

    /// `flowlet_random` for an entry within its timeout whose member is not up: a flowlet
    /// whose member went down moves to the draw's (`drawn`, index `drawn_index`) at once, a
    /// forced move; an unused entry starts its first flowlet there. (The entry is read
    /// again here: passed, it would be kept in memory on the common path too.)
    #[cold]
    #[inline(never)]
    fn restart_flowlet(
        &self,
        cell: &Cell<Entry>,
        drawn: u32,
        drawn_index: u32,
        len: u32,
        now: Picos,
    ) -> RandomChoice<'_> {
        let entry = cell.get();
        let last = entry.member;
        let forced = last != EMPTY;
        self.counters.forced_moves.add(u64::from(forced));
        let choice = RandomChoice {
            id: drawn,
            member: drawn_index,
            counters: None,
            last,
            drawn: drawn_index,
            moved: forced & (last != drawn_index),
            forced,
        };
        self.record_random(cell, entry, true, choice, len, now)
    }

    /// The flowlet table's entry (`cell`, read as `entry`) and the counters after a random
    /// choice for a packet of `len` bytes at `now`: `starts` when the choice starts a flowlet.
    /// Returns the choice with the member's counters.
    #[inline(always)]
    fn record_random<'a>(
        &'a self,
        cell: &Cell<Entry>,
        entry: Entry,
        starts: bool,
        mut choice: RandomChoice<'a>,
        len: u32,
        now: Picos,
    ) -> RandomChoice<'a> {
        cell.set(Entry {
            last_seen: entry.last_seen.max(now),
            member: choice.member,
            flowlet_id: entry.flowlet_id.wrapping_add(u32::from(starts)),
        });
        // Read once: the counters are atomics, which the compiler cannot tell from the
        // balancer's own words, so each use through `self` would load the pointer again.
        let counters: &'a BalanceCounters = &self.counters;
        counters.flowlets.add(u64::from(starts));
        counters.moves.add(u64::from(choice.moved));
        choice.counters = counters.members.get(choice.member as usize);
        if let Some(counters) = choice.counters {
            counters.count(1, len);
        }
        choice
    }

    /// The event log's part of a new flowlet: a move is noted. Out of line, so that the
    /// new-flowlet path branches only on whether there is a log (the test of `moved` stays
    /// in here, where the compiler cannot hoist it).
    #[cold]
    #[inline(never)]
    fn log_new_flowlet(
        &mut self,
        hash: u32,
        last: u32,
        member: u32,
        moved: bool,
        forced: bool,
        now: Picos,
    ) {
        if moved {
            self.note_move(hash, last, member, forced, now);
        }
    }

    /// A flowlet of a least-loaded group whose member went down moves at once, whatever its
    /// gap: a new flowlet, its move counted as forced, with the counters for a packet of
    /// `len` bytes. Out of line: links rarely go down.
    #[cold]
    #[inline(never)]
    fn forced_move(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        previous: u32,
        len: u32,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<LeastChoice> {
        let member = self.choose(ecmp, hash, flowlet_salt(now), Some(previous), now, egress)?;
        self.table.record(hash, member, now, true);
        self.counters.flowlets.add(1);
        // A down member is never chosen, so this always moves; counted as the choice finds.
        let moved = member != previous;
        self.counters.moves.add(u64::from(moved));
        self.counters.forced_moves.add(u64::from(moved));
        self.count_choice(member, len);
        Some(LeastChoice {
            id: ecmp.members().get(member as usize)?.id,
            member,
            last: previous,
            moved,
            forced: true,
        })
    }

    /// A flowlet that moved: its entry in the event log, if there is one. Out of line: only
    /// forced moves and runs with an event log get here.
    #[cold]
    #[inline(never)]
    fn note_move(&mut self, hash: u32, from: u32, member: u32, forced: bool, now: Picos) {
        if self.record_events {
            if self.events.len() < EVENT_CAPACITY {
                self.events.push(FlowletMove {
                    at: now,
                    group: self.group,
                    slot: hash & self.table.mask,
                    from,
                    to: member,
                    forced,
                });
            } else {
                self.counters.events_lost.add(1);
            }
        }
    }

    /// A live member for a new flowlet (index in the group), by the group's choice.
    #[inline]
    fn choose(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        salt: u32,
        previous: Option<u32>,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        match self.spec.choice {
            PathChoice::Random => {
                // The bucket table holds live members only, in proportion to their weights.
                let id = ecmp.select(draw(hash, self.seed, salt))?;
                self.index_of.get(id as usize).map(|&i| u32::from(i))
            }
            PathChoice::LeastLoaded => self.least_loaded(ecmp, hash, previous, now, egress),
        }
    }

    /// A live member for a new flowlet of a least-loaded group. Inline: every caller
    /// (`select_flowlet_least_loaded`, `forced_move`, `select_per_packet`) is out of the
    /// worker loop already, and a call would save and restore registers for each choice.
    #[inline(always)]
    fn least_loaded(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        previous: Option<u32>,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        let members = ecmp.members();
        // The balancer was sized for the group's members; a group changed since (members are
        // only marked up or down today) is never indexed past either.
        let n = members.len().min(self.snapshots.len());
        if n == 0 {
            return None;
        }
        if now != self.snapshot_at.get() {
            self.refresh_loads(now, ecmp, egress);
        }
        let start = self.start(hash, previous, n);
        // Up or down is read per choice (a link event may land between two choices of an
        // instant: the group's generation tells); a marking member is avoided only while some
        // other member is up.
        if self.equal_weights.get() {
            if self.least.get() == 0 || self.least_generation.get() != ecmp.generation() {
                self.scan_least(members, n, ecmp.generation());
            }
            return first_from(self.least.get(), start);
        }
        let eligible = self.eligible(members, n);
        let best = self.least_loaded_weighted(members, n, start, eligible);
        (best != usize::MAX).then_some(best as u32)
    }

    /// `least_loaded` for a new flowlet of `select_flowlet_least_loaded`. The usual case, a
    /// set found already at this instant for these up flags, is taken inline; anything else
    /// (a new instant, an empty set, unequal weights: they leave the set empty) out of line,
    /// so that the reading and the scan do not take registers from every choice.
    #[inline(always)]
    fn least_loaded_new_flowlet(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        previous: Option<u32>,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        let least = self.least.get();
        if least != 0
            && self.snapshot_at.get() == now
            && self.least_generation.get() == ecmp.generation()
        {
            return first_from(least, self.start(hash, previous, ecmp.members().len()));
        }
        self.least_loaded_anew(ecmp, hash, previous, now, egress)
    }

    /// `least_loaded`, out of line for `least_loaded_new_flowlet`.
    #[cold]
    #[inline(never)]
    fn least_loaded_anew(
        &self,
        ecmp: &EcmpGroup,
        hash: u32,
        previous: Option<u32>,
        now: Picos,
        egress: &EgressLoad,
    ) -> Option<u32> {
        self.least_loaded(ecmp, hash, previous, now, egress)
    }

    /// Where a least-loaded choice among `members` (as many as the balancer has loads for)
    /// starts: at the previous member (ties keep it), else at a member picked by hash bits
    /// that the bucket index does not use (multiply-shift: no division on this path).
    #[inline(always)]
    fn start(&self, hash: u32, previous: Option<u32>, members: usize) -> usize {
        let n = members.min(self.snapshots.len());
        match previous {
            Some(p) if (p as usize) < n => p as usize,
            _ => ((u64::from(hash >> 16) * n as u64) >> 16) as usize,
        }
    }

    /// The members (bit i: member i) to choose among: the up ones, less those marking ECN
    /// while some other member is up.
    #[inline]
    fn eligible(&self, members: &[Member], n: usize) -> u64 {
        let up = members[..n]
            .iter()
            .enumerate()
            .fold(0u64, |mask, (i, m)| mask | u64::from(m.up) << i);
        let avoided = self.avoided.get();
        if up & !avoided != 0 {
            up & !avoided
        } else {
            up
        }
    }

    /// Finds the eligible members at the least load (`least`), with the group generation
    /// whose up flags it read. Out of line: between two scans every member of the set is
    /// chosen once (with equal frame sizes the loads stay within a frame of each other, so
    /// most of them tie), and a choice only picks from the set.
    #[inline(never)]
    fn scan_least(&self, members: &[Member], n: usize, generation: u64) {
        self.least
            .set(least_set(&self.snapshots[..n], self.eligible(members, n)));
        self.least_generation.set(generation);
    }

    /// The first member at or after `start` (wrapping) among the eligible ones with the least
    /// load per unit of weight (cross-multiplied): least-loaded choice among unequal weights.
    fn least_loaded_weighted(
        &self,
        members: &[Member],
        n: usize,
        start: usize,
        eligible: u64,
    ) -> usize {
        // The argmin is written so the compiler can use conditional moves: which member wins
        // is data, and a mispredicted branch per member cost more than the comparison.
        let (mut best, mut best_bytes, mut best_weight) = (usize::MAX, u64::MAX, 1u64);
        for k in 0..n {
            let i = if start + k >= n {
                start + k - n
            } else {
                start + k
            };
            let eligible = eligible >> i & 1 != 0;
            let (bytes, weight) = (
                quantized(self.snapshots[i].get()),
                u64::from(members[i].weight),
            );
            // load_i / weight_i < load_b / weight_b, cross-multiplied; saturating only
            // beyond 2^56 bytes of load, far past any queue.
            let better =
                eligible && bytes.saturating_mul(best_weight) < best_bytes.saturating_mul(weight);
            best = if better { i } else { best };
            best_bytes = if better { bytes } else { best_bytes };
            best_weight = if better { weight } else { best_weight };
        }
        best
    }

    /// Reads every member's load at `now`: its port's queued bytes plus its recent-bytes
    /// estimate, decayed to `now`. Out of line: once per instant, not per choice.
    #[inline(never)]
    fn refresh_loads(&self, now: Picos, ecmp: &EcmpGroup, egress: &EgressLoad) {
        self.snapshot_at.set(now);
        self.least.set(0);
        let members = ecmp.members();
        self.equal_weights
            .set(members.iter().all(|m| m.weight == members[0].weight));
        let mut avoided = 0;
        if self.spec.avoid_ecn {
            for (i, load) in self.loads.iter().enumerate() {
                if load.get().port.is_some_and(|p| egress.marking(p)) {
                    avoided |= 1 << i;
                }
            }
        }
        self.avoided.set(avoided);
        for (i, (cell, snapshot)) in self.loads.iter().zip(&self.snapshots).enumerate() {
            let mut load = cell.get();
            let (queued, total) = match load.port {
                Some(port) => egress.queued_and_transmitted_bytes(port),
                None => (0, self.counters.members[i].bytes.get()),
            };
            let halvings = now.saturating_sub(load.dre_at) / DRE_HALF_LIFE;
            if halvings > 0 {
                load.dre = if halvings >= 64 {
                    0
                } else {
                    load.dre >> halvings
                };
                load.dre_at = if halvings >= 64 {
                    now
                } else {
                    load.dre_at + halvings * DRE_HALF_LIFE
                };
            }
            load.dre += total.saturating_sub(load.seen);
            load.seen = total;
            snapshot.set(queued.saturating_add(load.dre));
            cell.set(load);
        }
    }
}

#[cfg(test)]
#[path = "flowlet_tests.rs"]
mod tests;
