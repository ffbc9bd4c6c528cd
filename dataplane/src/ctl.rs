//! Run-time control of a running switch: table updates and table snapshots, carried between
//! the control plane on the main lcore and the switch worker over two lock-free bounded
//! queues. The worker looks at the request queue once per poll loop (one atomic load when it
//! is empty) and serves a request between bursts: no lock is ever taken on the packet path and
//! forwarding never pauses for longer than the request itself takes to apply.
//!
//! A batch of updates is validated as a whole against the worker's tables first, then applied;
//! if applying still fails (a table is full) everything applied so far is undone. So a batch
//! takes effect entirely or not at all.

use crate::pipeline::spec::{PolicySpec, PortRole, RouteTarget, SidSpec};
use crate::qos::{EcnProfile, PfcThresholds};
use crate::tables::flowlet::BalanceSpec;
use crossbeam_queue::ArrayQueue;
use std::net::{IpAddr, Ipv6Addr};

/// Requests waiting for the worker at most (the control plane answers "busy" beyond).
pub const QUEUE_DEPTH: usize = 64;
/// Updates in one batch at most.
pub const MAX_BATCH: usize = 100_000;
/// Local SIDs and SRv6 policies that may be added at run time beyond those of the config
/// (their counters are allocated at start, so the control plane can read them at any time).
pub const RUNTIME_SRV6_SLOTS: usize = 256;

/// Where a route sends packets, in the terms the operator uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A neighbour `ip` on L3 interface `interface` (the nexthop is created if new).
    Via { interface: u16, ip: IpAddr },
    /// An existing nexthop by index (the P4 form's `set_nexthop`).
    Nexthop(u32),
    /// ECMP group by index.
    Group(u32),
    /// Dropped on purpose.
    Blackhole,
    /// Encapsulated by SRv6 policy by index.
    Srv6Policy(u32),
}

/// One change to the worker's tables or queues.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    AddRoute {
        vrf: u16,
        prefix: IpAddr,
        len: u8,
        target: Target,
    },
    DelRoute {
        vrf: u16,
        prefix: IpAddr,
        len: u8,
    },
    /// A static neighbour: the nexthop (interface, ip) resolves to `mac`.
    AddNeighbor {
        interface: u16,
        ip: IpAddr,
        mac: [u8; 6],
    },
    /// Forgets a neighbour's MAC (packets to it wait for resolution again).
    DelNeighbor {
        interface: u16,
        ip: IpAddr,
    },
    AddEcmpMember {
        group: u32,
        interface: u16,
        ip: IpAddr,
        weight: u32,
    },
    DelEcmpMember {
        group: u32,
        interface: u16,
        ip: IpAddr,
    },
    /// Changes the weight of an existing member.
    SetEcmpWeight {
        group: u32,
        interface: u16,
        ip: IpAddr,
        weight: u32,
    },
    AddMac {
        vlan: u16,
        mac: [u8; 6],
        port: u16,
    },
    DelMac {
        vlan: u16,
        mac: [u8; 6],
    },
    /// Replaces SRv6 policy `policy`'s encapsulation (mode, segments, source, hop limit,
    /// outer VRF); its routes follow the new path.
    SetPolicy {
        policy: u32,
        spec: Box<crate::pipeline::spec::PolicySpec>,
    },
    /// Replaces (or with `None` removes) the ECN profile of (port, tc).
    SetEcn {
        port: u16,
        tc: u8,
        ecn: Option<EcnProfile>,
    },
    /// Adds local SID `spec` (its my-SID entry and behaviour) in slot `slot`: the next slot
    /// (the table's length) or one a deleted SID left free. The control plane picks the slot
    /// so a batch can name it; a slot taken meanwhile is refused. With `via` (interface,
    /// neighbour), an End.X / uA goes to that nexthop (created if new) whatever
    /// `spec.behavior`'s target says.
    AddSid {
        slot: u32,
        spec: Box<SidSpec>,
        via: Option<(u16, IpAddr)>,
    },
    /// Removes the local SID in slot `slot`, which must be `prefix/len` in `vrf`'s my-SID
    /// table.
    DelSid {
        slot: u32,
        vrf: u16,
        prefix: Ipv6Addr,
        len: u8,
    },
    /// Creates SRv6 policy `spec` in slot `slot` (next or free, as for SIDs); routes may then
    /// point at it.
    AddPolicy {
        slot: u32,
        spec: Box<PolicySpec>,
    },
    /// Deletes SRv6 policy `slot`; no route may point at it.
    DelPolicy {
        slot: u32,
    },
    /// Creates ECMP group `slot` (next or free) with members (interface, neighbour, weight);
    /// nexthops are created as needed.
    AddGroup {
        slot: u32,
        members: Vec<(u16, IpAddr, u32)>,
        balance: BalanceSpec,
    },
    /// Deletes ECMP group `slot`; no route and no End.X/uA SID may point at it.
    DelGroup {
        slot: u32,
    },
    /// Replaces ECMP group `group`'s balancing (mode, path choice, flowlet timeout and table
    /// size, ECN avoidance); its members stay. Like a member change it rebuilds the group's
    /// balancer: flowlets choose again with their next packet and its counters start again.
    SetGroupBalance {
        group: u32,
        balance: BalanceSpec,
    },
    /// Declares VLAN `id` (1..=4094): ports may then join it.
    AddVlan {
        id: u16,
    },
    /// Removes VLAN `id`: no port may be in it and it may have no L3 interface; its MAC
    /// entries (static ones too) go with it.
    DelVlan {
        id: u16,
    },
    /// Makes L2 port `port` an access port of a VLAN or a trunk (`PortRole::Access` or
    /// `Trunk`, declared VLANs only); a routed port stays routed. Its learned MACs are flushed.
    SetPortVlans {
        port: u16,
        role: PortRole,
    },
    /// Replaces the PFC thresholds of (port, lossless tc): XON <= XOFF, as the config asks.
    SetPfc {
        port: u16,
        tc: u8,
        thresholds: PfcThresholds,
    },
}

/// What a snapshot covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpKind {
    /// Routes of one VRF (or every VRF), at most `limit`.
    Routes {
        vrf: Option<u16>,
        limit: usize,
    },
    Nexthops,
    Groups,
    /// MAC entries, at most `limit`.
    Macs {
        limit: usize,
    },
    /// Port forwarding state.
    Ports,
    /// Local SIDs (the my-SID table and each entry's behaviour).
    Sids,
}

/// A request to the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Apply(Vec<Update>),
    /// Snapshots taken together, between the same two bursts.
    Dump(Vec<DumpKind>),
}

/// One route as the worker holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteEntry {
    pub vrf: u16,
    pub prefix: IpAddr,
    pub len: u8,
    pub target: RouteTarget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NexthopEntry {
    pub id: u32,
    pub interface: u16,
    pub ip: IpAddr,
    pub mac: Option<[u8; 6]>,
    /// The neighbour's state: `static` (configured, pinned), `reachable` (learned, heard
    /// within the reachable time), `stale` (learned, being asked again), `unresolved`.
    pub state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMemberEntry {
    pub nexthop: u32,
    pub weight: u32,
    pub up: bool,
    /// Hash buckets the member owns (its share of new flows).
    pub buckets: usize,
    /// Packets and bytes the group sent to it (since the group's balancer was built).
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    pub id: u32,
    pub buckets: usize,
    pub members: Vec<GroupMemberEntry>,
    /// Balancing: mode (`hash`, `flowlet`, `per-packet`) and choice (`random`,
    /// `least-loaded`), flowlet timeout and table size.
    pub mode: &'static str,
    pub choice: &'static str,
    pub flowlet_timeout_ps: u64,
    pub flowlet_table_size: usize,
    /// Least-loaded choice skips members whose port is marking ECN.
    pub avoid_ecn: bool,
    /// Flowlets started, moved to another member, and moved because a member went down.
    pub flowlets: u64,
    pub moves: u64,
    pub forced_moves: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacDumpEntry {
    pub vlan: u16,
    pub mac: [u8; 6],
    pub port: u16,
    pub is_static: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PortEntry {
    /// Forwarding state (link up and admin up).
    pub up: bool,
}

/// One local SID as the worker holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidEntry {
    pub slot: u32,
    pub vrf: u16,
    pub prefix: Ipv6Addr,
    pub len: u8,
    pub behavior: crate::pipeline::spec::SidBehavior,
    /// NEXT-C-SID (uN, uA): the Locator-Block mask, the argument mask and the shift in bits,
    /// as the P4 program's `un`/`ua` actions take them.
    pub csid: Option<(u128, u128, u32)>,
    pub psp: bool,
    pub usp: bool,
}

/// A snapshot of tables.
#[derive(Debug, Clone, PartialEq)]
pub enum Dump {
    /// `total` counts every route, `routes` at most the limit.
    Routes {
        total: usize,
        routes: Vec<RouteEntry>,
    },
    Nexthops(Vec<NexthopEntry>),
    Groups(Vec<GroupEntry>),
    Macs {
        total: usize,
        macs: Vec<MacDumpEntry>,
    },
    Ports(Vec<PortEntry>),
    Sids(Vec<SidEntry>),
}

/// The worker's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Every update of the batch took effect. `replaced`: the (0-based) indices of the
    /// batch's `AddRoute` and `AddMac` updates that took the place of an entry there was
    /// (a route of the same prefix in the VRF, a MAC-table entry, static or learned, of the
    /// same VLAN and MAC), as the batch found it in its turn.
    Applied {
        count: usize,
        replaced: Vec<usize>,
    },
    /// None did: update `index` (0-based) was refused for `error`.
    Rejected {
        index: usize,
        error: String,
    },
    Dump(Vec<Dump>),
    /// The worker cannot serve this kind of request (io mode).
    Unsupported(String),
}

/// The two queues between the control plane and the switch worker. Requests carry an id the
/// reply repeats.
pub struct Channel {
    requests: ArrayQueue<(u64, Request)>,
    replies: ArrayQueue<(u64, Reply)>,
}

impl Default for Channel {
    fn default() -> Self {
        Channel::new()
    }
}

impl Channel {
    pub fn new() -> Channel {
        Channel {
            requests: ArrayQueue::new(QUEUE_DEPTH),
            // Room for every request's reply, so the worker never has to wait to answer.
            replies: ArrayQueue::new(QUEUE_DEPTH),
        }
    }

    /// Control plane: queues a request; gives it back if the queue is full.
    pub fn submit(&self, id: u64, request: Request) -> Result<(), Request> {
        self.requests.push((id, request)).map_err(|(_, r)| r)
    }

    /// Control plane: the next reply, if any.
    pub fn reply(&self) -> Option<(u64, Reply)> {
        self.replies.pop()
    }

    /// Worker: the next request, if any. When there is none this is two plain loads: the
    /// queue's `pop` finds it empty only after a sequentially consistent fence, which the
    /// worker would pay on every poll sweep. (A request that lands just after the test is
    /// served on the next sweep.)
    #[inline]
    pub fn next_request(&self) -> Option<(u64, Request)> {
        if self.requests.is_empty() {
            return None;
        }
        self.requests.pop()
    }

    /// Worker: answers a request. Replies never outnumber requests taken, and the control
    /// plane submits at most QUEUE_DEPTH requests before reading replies, so this has room.
    pub fn answer(&self, id: u64, reply: Reply) {
        let _ = self.replies.push((id, reply));
    }

    /// Requests waiting.
    pub fn pending(&self) -> usize {
        self.requests.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_keep_their_ids_and_a_full_queue_refuses() {
        let channel = Channel::new();
        for id in 0..QUEUE_DEPTH as u64 {
            channel
                .submit(id, Request::Dump(vec![DumpKind::Nexthops]))
                .unwrap();
        }
        assert!(
            channel
                .submit(99, Request::Dump(vec![DumpKind::Groups]))
                .is_err()
        );
        let (id, request) = channel.next_request().unwrap();
        assert_eq!((id, request), (0, Request::Dump(vec![DumpKind::Nexthops])));
        let applied = || Reply::Applied {
            count: 0,
            replaced: Vec::new(),
        };
        channel.answer(0, applied());
        assert_eq!(channel.reply(), Some((0, applied())));
        assert_eq!(channel.reply(), None);
    }
}
