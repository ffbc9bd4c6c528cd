//! What the switch is, as plain data: ports and their roles, VLANs, L3 interfaces, nexthops,
//! ECMP groups, routes and static MACs. The control plane builds it from the config file; the
//! dataplane never parses files.

use crate::clock::{PICOS_PER_SECOND, Picos};
use crate::qos::QosSpec;
use crate::tables::flowlet::BalanceSpec;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// How a port takes part in forwarding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortRole {
    /// Untagged member of one VLAN (priority-tagged frames, VID 0, are accepted too).
    Access { vlan: u16 },
    /// Tagged member of `allowed` VLANs; untagged frames belong to `native` if set.
    Trunk {
        allowed: Vec<u16>,
        native: Option<u16>,
    },
    /// An L3 interface of its own (untagged); `interface` indexes `SwitchSpec::interfaces`.
    Routed { interface: u16 },
}

/// A VLAN and its optional L3 interface (an SVI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanSpec {
    pub id: u16,
    pub interface: Option<u16>,
}

/// Where an L3 interface lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    Port(u16),
    Vlan(u16),
}

/// An L3 interface: a routed port or a VLAN interface, with its addresses (each gives a
/// connected route and a local address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceSpec {
    pub vrf: u16,
    pub attachment: Attachment,
    pub ipv4: Vec<(Ipv4Addr, u8)>,
    pub ipv6: Vec<(Ipv6Addr, u8)>,
}

impl InterfaceSpec {
    /// The interface's addresses with their prefix lengths (its connected subnets), IPv4
    /// first.
    pub fn subnets(&self) -> impl Iterator<Item = (IpAddr, u8)> + Clone + '_ {
        let v4 = self.ipv4.iter().map(|&(a, l)| (IpAddr::V4(a), l));
        v4.chain(self.ipv6.iter().map(|&(a, l)| (IpAddr::V6(a), l)))
    }
}

/// A neighbour to forward to: its address on one interface. Its MAC is learned at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NexthopSpec {
    pub interface: u16,
    pub ip: IpAddr,
}

/// An ECMP group of nexthops (indices into `SwitchSpec::nexthops`) with weights.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupSpec {
    pub members: Vec<(u32, u32)>,
    /// Hash, flowlet or per-packet balancing (`tables::flowlet`).
    pub balance: BalanceSpec,
}

/// What a route points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteTarget {
    Nexthop(u32),
    Group(u32),
    /// A subnet on an interface: hosts in it are resolved on demand.
    Connected(u16),
    /// One of the switch's own addresses: delivered to the control plane.
    Local,
    /// Dropped on purpose (a null route).
    Blackhole,
    /// Encapsulated by SRv6 policy `n` (`Srv6Spec::policies[n]`), then forwarded on the outer
    /// destination.
    Srv6Policy(u32),
}

/// A static route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    pub vrf: u16,
    pub prefix: IpAddr,
    pub len: u8,
    pub target: RouteTarget,
}

/// A MAC address pinned to a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticMac {
    pub vlan: u16,
    pub mac: [u8; 6],
    pub port: u16,
}

/// A neighbour whose MAC is configured rather than resolved (static ARP/ND entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticNeighbor {
    pub interface: u16,
    pub ip: IpAddr,
    pub mac: [u8; 6],
}

/// The whole switch.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSpec {
    pub router_mac: [u8; 6],
    /// Indexed by port number.
    pub ports: Vec<PortRole>,
    pub vlans: Vec<VlanSpec>,
    pub vrf_count: u16,
    pub interfaces: Vec<InterfaceSpec>,
    pub nexthops: Vec<NexthopSpec>,
    pub groups: Vec<GroupSpec>,
    pub routes: Vec<RouteSpec>,
    pub static_macs: Vec<StaticMac>,
    pub static_neighbors: Vec<StaticNeighbor>,
    /// Learned MACs not seen for this long are forgotten.
    pub mac_aging: Picos,
    pub mac_capacity: usize,
    /// Reachability timers of learned neighbours (`[neighbor_timers]`).
    pub neighbor_timers: crate::tables::neighbor::NeighborConfig,
    pub flow_hash_seed: u32,
    /// Buckets per ECMP group (a power of two).
    pub ecmp_buckets: usize,
    /// Traffic classes, queues, shapers and ECN of every port.
    pub qos: QosSpec,
    /// SRv6 local SIDs and headend policies.
    pub srv6: Srv6Spec,
}

impl SwitchSpec {
    /// Defaults for the knobs most configs leave alone.
    pub const DEFAULT_MAC_AGING: Picos = 300 * PICOS_PER_SECOND;
    pub const DEFAULT_MAC_CAPACITY: usize = 65_536;
    pub const DEFAULT_ECMP_BUCKETS: usize = 256;

    /// A switch with `ports` ports and nothing else configured, for tests and io-like setups.
    pub fn empty(ports: usize) -> Self {
        Self {
            router_mac: [0x02, 0, 0, 0, 0x01, 0],
            ports: vec![PortRole::Access { vlan: 1 }; ports],
            vlans: Vec::new(),
            vrf_count: 1,
            interfaces: Vec::new(),
            nexthops: Vec::new(),
            groups: Vec::new(),
            routes: Vec::new(),
            static_macs: Vec::new(),
            static_neighbors: Vec::new(),
            mac_aging: Self::DEFAULT_MAC_AGING,
            mac_capacity: Self::DEFAULT_MAC_CAPACITY,
            neighbor_timers: Default::default(),
            flow_hash_seed: 0,
            ecmp_buckets: Self::DEFAULT_ECMP_BUCKETS,
            qos: QosSpec::new(ports),
            srv6: Srv6Spec::default(),
        }
    }
}

/// What a local SID does (RFC 8986 section 4). uN and uA are `End` and `EndX` with
/// [`SidSpec::next_csid`] set (RFC 9800).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidBehavior {
    /// Next segment, then a FIB lookup of the new destination.
    End,
    /// Next segment, then out to an adjacency: a nexthop or an ECMP group.
    EndX { target: RouteTarget },
    /// Decapsulate an inner IPv4 packet and look it up in VRF `vrf`.
    EndDt4 { vrf: u16 },
    /// Decapsulate an inner IPv6 packet and look it up in VRF `vrf`.
    EndDt6 { vrf: u16 },
    /// Decapsulate an inner IPv4 or IPv6 packet and look it up in VRF `vrf`.
    EndDt46 { vrf: u16 },
}

/// The compressed-SID format of a NEXT-C-SID SID (RFC 9800): Locator-Block length and the
/// shift (Locator-Node + Function length, the C-SID length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsidFormat {
    pub block_bits: u8,
    pub shift_bits: u8,
}

/// A local SID: `prefix/len` in the my-SID table of `vrf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidSpec {
    /// Shown in counters (the config's prefix text).
    pub name: String,
    pub vrf: u16,
    pub prefix: Ipv6Addr,
    pub len: u8,
    pub behavior: SidBehavior,
    /// NEXT-C-SID flavour (uN, uA): shift the destination while its argument is not zero.
    pub next_csid: Option<CsidFormat>,
    /// Penultimate Segment Pop (End, End.X).
    pub psp: bool,
    /// Ultimate Segment Pop (End, End.X).
    pub usp: bool,
}

/// H.Encaps or H.Encaps.Red (RFC 8986 section 5.1, 5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncapMode {
    Encaps,
    EncapsRed,
}

/// The most segments a policy's SRH may list: Hdr Ext Len is one octet counting 8-octet
/// units, two per segment (RFC 8754 section 2), so 127 is the format's own limit. The
/// headend has no smaller one: it grows a frame into the mbuf's headroom or, when that is
/// short, moves it toward the tailroom, so what counts is the whole mbuf buffer (2176 bytes
/// by default, see `control::config::defaults::MBUF_DATA_ROOM`; more when a port's MTU needs
/// it, `engine::mbuf_room_for_mtu`). A frame whose
/// encapsulation (plus a VLAN tag pushed on egress) does not fit it is dropped as
/// `no_headroom`; with 127 segments a minimum IPv4 packet still fits.
pub const MAX_SRH_SEGMENTS: usize = 127;

/// Bytes a policy with `segments` (S1 first) adds in front of the inner packet: the outer
/// IPv6 header and, unless H.Encaps.Red leaves none, the SRH.
pub const fn encap_overhead(mode: EncapMode, segments: usize) -> usize {
    let in_srh = match mode {
        EncapMode::Encaps => segments,
        EncapMode::EncapsRed => segments.saturating_sub(1),
    };
    40 + if in_srh == 0 { 0 } else { 8 + 16 * in_srh }
}

/// An SRv6 headend policy, attached to routes with `RouteTarget::Srv6Policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    /// Shown in counters.
    pub name: String,
    pub mode: EncapMode,
    /// The SID list in path order (S1 first); each may be a uSID container.
    pub segments: Vec<Ipv6Addr>,
    /// Outer source address.
    pub source: Ipv6Addr,
    /// Outer hop limit.
    pub hop_limit: u8,
    /// VRF in which the outer destination is looked up (the underlay).
    pub outer_vrf: u16,
}

/// SRv6: local SIDs and headend policies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Srv6Spec {
    pub sids: Vec<SidSpec>,
    pub policies: Vec<PolicySpec>,
}
