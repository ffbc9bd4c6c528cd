//! The forwarding stage: VLAN classification, MAC learning and bridging, ARP/ND punting, and
//! IPv4/IPv6 routing with ECMP, TTL/hop-limit and MAC rewrite. Tables are the P4 program's:
//! `mac_table`, `ipv4_lpm`, `ipv6_lpm`, `ecmp_group`, `nexthop`.

use super::spec::{Attachment, PortRole, RouteTarget, SwitchSpec};
use super::{Frame, PuntReason, RouterError, RouterErrorKind, TagOp, Verdict};
use crate::clock::{PICOS_PER_SECOND, Picos};
use crate::counters::{DropReason, WorkerCounters};
use crate::tables::ecmp::{EcmpGroup, Member};
use crate::tables::flowhash::{FlowKey, flow_hash, flow_hash_v4_wire, flow_hash_v6_wire};
use crate::tables::flowlet::{BalanceCounters, EgressLoad, FlowletMove, GroupBalancer};
use crate::tables::mac::{LearnOutcome, MacTable};
use crate::tables::{Lpm4, Lpm6, LpmError};
use crate::wire::checksum;
use crate::wire::ipv4::{self, HEADER_LEN, OptionScan};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
const IP_PROTO_TCP: u8 = 6;
const IP_PROTO_UDP: u8 = 17;
const IP_PROTO_ICMPV6: u8 = 58;
const ICMPV6_NEIGHBOR_SOLICIT: u8 = 135;
const ICMPV6_NEIGHBOR_ADVERT: u8 = 136;
const ARP_OP_REQUEST: u16 = 1;
/// Don't Fragment, in the IPv4 header's byte 6.
const IPV4_DONT_FRAGMENT: u8 = 0x40;

mod srv6;
// Reuse of the previous bridged frame's decision for frames with the same L2 header.
mod bridge_memo;

// The express lane: routed ports' usual frames, routed in burst passes.
mod lane;
pub use lane::{ExpressLane, LANE_L3, LANE_OTHER, route_one_flow};
pub use srv6::EndpointStep;
// Run-time table updates and snapshots (crate::ctl).
mod ctl;

/// How often the forwarder asks the control plane to resolve the same neighbour.
pub const RESOLVE_INTERVAL: Picos = PICOS_PER_SECOND;

/// Route values in the LPM tables: 3 bits of kind, 28 bits of index (LPM values stay below
/// `tables::MAX_VALUE`).
mod route_value {
    use super::RouteTarget;
    const SHIFT: u32 = 28;
    const INDEX: u32 = (1 << SHIFT) - 1;
    pub const MAX_INDEX: u32 = INDEX;

    pub fn encode(target: RouteTarget) -> u32 {
        match target {
            RouteTarget::Nexthop(i) => (1 << SHIFT) | (i & INDEX),
            RouteTarget::Group(i) => (2 << SHIFT) | (i & INDEX),
            RouteTarget::Connected(i) => (3 << SHIFT) | (u32::from(i) & INDEX),
            RouteTarget::Local => 4 << SHIFT,
            RouteTarget::Blackhole => 5 << SHIFT,
            RouteTarget::Srv6Policy(i) => (6 << SHIFT) | (i & INDEX),
        }
    }

    #[inline]
    pub fn decode(value: u32) -> RouteTarget {
        let index = value & INDEX;
        match value >> SHIFT {
            1 => RouteTarget::Nexthop(index),
            2 => RouteTarget::Group(index),
            3 => RouteTarget::Connected(index as u16),
            4 => RouteTarget::Local,
            6 => RouteTarget::Srv6Policy(index),
            _ => RouteTarget::Blackhole,
        }
    }
}

/// A request from the fast path to the control plane, which never blocks forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRequest {
    /// Send ARP or a Neighbor Solicitation for `ip` on `interface`.
    Resolve { interface: u16, ip: IpAddr },
}

/// A configuration the forwarder cannot build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwarderError(pub String);

impl fmt::Display for ForwarderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ForwarderError {}

impl From<LpmError> for ForwarderError {
    fn from(e: LpmError) -> Self {
        ForwarderError(format!("route table: {e}"))
    }
}

#[derive(Debug, Clone)]
enum PortMode {
    Access {
        vlan: u16,
    },
    Trunk {
        allowed: Box<[u64; 64]>,
        native: Option<u16>,
    },
    Routed {
        interface: u16,
    },
}

#[derive(Debug, Clone)]
struct PortState {
    mode: PortMode,
    up: bool,
}

#[derive(Debug, Clone, Default)]
struct VlanState {
    /// Ports in the VLAN, in port order (flood copies go out in this order).
    members: Vec<u16>,
    interface: Option<u16>,
    /// Declared by the spec (or a port's membership) or at run time; ports may join it.
    declared: bool,
}

#[derive(Debug, Clone)]
struct Interface {
    vrf: u16,
    attachment: Attachment,
    ipv4: Vec<Ipv4Addr>,
    ipv6: Vec<Ipv6Addr>,
    /// The network and broadcast addresses of its IPv4 subnets of /30 or wider (RFC 3021:
    /// a /31's two addresses are hosts): no host to resolve there.
    ipv4_subnet_ends: Vec<Ipv4Addr>,
    /// The largest IP packet that leaves by this interface: its port's MTU, or for a VLAN
    /// interface the smallest MTU of the VLAN's ports (a routed packet may leave by any of
    /// them). `NO_MTU_LIMIT` until the engine gives the ports' MTUs (`set_port_mtus`).
    mtu: u16,
}

/// The first five bytes of 01-80-C2-00-00-00..0F, the addresses IEEE 802.1Q reserves for the
/// link itself (STP, LACP, 802.1X, LLDP): never forwarded by a bridge.
const IEEE_RESERVED_MULTICAST: [u8; 5] = [0x01, 0x80, 0xc2, 0x00, 0x00];

/// Whether `dst` is one of the 802.1Q link-reserved group addresses (`IEEE_RESERVED_MULTICAST`).
fn is_ieee_reserved_multicast(dst: [u8; 6]) -> bool {
    dst[..5] == IEEE_RESERVED_MULTICAST && dst[5] <= 0x0f
}

/// `Interface::mtu` before any port MTU is known: nothing a frame holds exceeds it.
const NO_MTU_LIMIT: u16 = u16::MAX;

/// The smallest MTU an IPv4 packet is fragmented for (RFC 791: every router forwards 68-byte
/// datagrams; a 60-byte header leaves 8 bytes of data per fragment).
const IPV4_MIN_FRAGMENT_MTU: u16 = 68;

#[derive(Debug, Clone, Copy)]
struct Nexthop {
    interface: u16,
    ip: IpAddr,
    mac: Option<[u8; 6]>,
    /// When resolution was last requested (rate limit).
    last_request: Option<Picos>,
    /// The interface's port when it is a routed port (no VLAN, so no MAC table lookup on the
    /// way out); interfaces never change after start.
    routed_port: Option<u16>,
    /// While `mac` is known: the Ethernet addresses a frame routed here leaves with (`mac`,
    /// then the router MAC), written in one copy on the express path. Kept by `set_mac`.
    addresses: [u8; 12],
    /// `routed_port` while `mac` is known, else `NO_PORT`: whether the express lane can send
    /// a frame here with `addresses` alone, in one test. Kept by `set_mac`.
    express_port: u16,
    /// A static neighbour (config or API): its MAC is the operator's, so ARP and ND never
    /// change it and it never ages (Linux's PERMANENT).
    pinned: bool,
}

/// `Nexthop::express_port` of a nexthop the express lane cannot send to by itself.
const NO_PORT: u16 = u16::MAX;

impl Nexthop {
    fn new(interface: u16, ip: IpAddr, interfaces: &[Interface]) -> Nexthop {
        let routed_port = match interfaces
            .get(usize::from(interface))
            .map(|i| &i.attachment)
        {
            Some(Attachment::Port(port)) => Some(*port),
            _ => None,
        };
        Nexthop {
            interface,
            ip,
            mac: None,
            last_request: None,
            routed_port,
            addresses: [0; 12],
            express_port: NO_PORT,
            pinned: false,
        }
    }

    /// Sets (or forgets) the neighbour's MAC, and the addresses that follow from it.
    fn set_mac(&mut self, mac: Option<[u8; 6]>, router_mac: [u8; 6]) {
        self.mac = mac;
        if let Some(mac) = mac {
            self.addresses[..6].copy_from_slice(&mac);
            self.addresses[6..].copy_from_slice(&router_mac);
        }
        // (Ports from 64 on have no bit in `Forwarder::ports_up`.)
        self.express_port = match (mac, self.routed_port) {
            (Some(_), Some(port)) if port < 64 => port,
            _ => NO_PORT,
        };
    }
}

/// How often a source MAC already learned on its port is refreshed in the MAC table (the table
/// is skipped in between); a quarter of the aging time if that is shorter.
const LEARN_REFRESH: Picos = PICOS_PER_SECOND;
/// Slots of the destination-MAC cache (a power of two).
const DST_CACHE_SLOTS: usize = 1024;

/// The source most recently learned on a port: frames from the same host on the same port
/// skip the MAC table until the refresh is due, unless the table changed an answer since.
#[derive(Debug, Clone, Copy, Default)]
struct LearnCacheEntry {
    key: u64,
    generation: u64,
    refreshed: Picos,
}

/// A remembered destination lookup: valid while the table's generation is unchanged and the
/// entry cannot have aged out yet.
#[derive(Debug, Clone, Copy, Default)]
struct DstCacheEntry {
    key: u64,
    generation: u64,
    valid_until: Picos,
    port: u16,
}

#[inline]
fn mac_key(vlan: u16, mac: [u8; 6]) -> u64 {
    let [a, b, c, d, e, f] = mac;
    // Bit 63 marks a used slot, so the all-zero default never matches a real key.
    u64::from_be_bytes([0x80 | (vlan >> 8) as u8, vlan as u8, a, b, c, d, e, f])
}

/// Recently gleaned connected hosts, so an unresolved host does not ask the control plane
/// once per packet. Direct-mapped and fixed-size: no allocation on the fast path.
const GLEAN_SLOTS: usize = 256;

/// Forwarding state of one worker. Counters of drops are kept by the engine from verdicts;
/// the forwarder counts what verdicts do not show.
pub struct Forwarder {
    router_mac: [u8; 6],
    ports: Vec<PortState>,
    vlans: Vec<VlanState>,
    interfaces: Vec<Interface>,
    /// Bit p: port p (below 64) is up, as `ports[p].up`, for the express lane's one test.
    ports_up: u64,
    fib4: Vec<Lpm4>,
    fib6: Vec<Lpm6>,
    nexthops: Vec<Nexthop>,
    groups: Vec<EcmpGroup>,
    /// Per group, parallel to `groups`: hash, flowlet or per-packet member choice and its
    /// counters (`tables::flowlet`).
    balancers: Vec<GroupBalancer>,
    /// Parallel to `groups`: false where a group was deleted at run time (its slot is free
    /// for the next group created; nothing points at it).
    group_live: Vec<bool>,
    /// Buckets of every ECMP group (groups created at run time get as many).
    ecmp_buckets: usize,
    /// Egress queue depths and transmitted bytes for least-loaded choice.
    egress_load: EgressLoad,
    /// Length of the frame being processed (per-member byte counters of the groups).
    frame_len: u32,
    pub(crate) macs: MacTable,
    flow_hash_seed: u32,
    glean: [(IpAddr, Picos); GLEAN_SLOTS],
    requests: Vec<ControlRequest>,
    learn_cache: Vec<LearnCacheEntry>,
    dst_cache: Box<[DstCacheEntry; DST_CACHE_SLOTS]>,
    bridge_memo: bridge_memo::BridgeMemo,
    /// The verdict behind `route_lane`'s last `LANE_OTHER`.
    lane_verdict: Verdict,
    /// The longest frame the express lane takes: an untagged Ethernet header and the smallest
    /// interface MTU, so that no express frame can exceed the MTU of where it leaves (longer
    /// frames take the full pipeline, which checks each against its egress interface).
    lane_max_frame: usize,
    /// The MTU behind the last `RouterErrorKind::PacketTooBig` verdict (`too_big_mtu`).
    too_big_mtu: u16,
    /// Each port's MTU as its device took it (`set_port_mtus`); empty until then.
    port_mtus: Vec<u16>,
    /// Frames that reused the bridging memo (tests check the memo is exercised).
    #[cfg(test)]
    pub(crate) bridge_memo_hits: std::cell::Cell<u64>,
    mac_aging: Picos,
    /// MACs that moved between ports (a loop or a host moving).
    pub mac_moves: u64,
    /// Where the forwarder counts what its verdicts do not show (`mac_table_full`,
    /// `routed_flooded`): the worker's block once the engine shares it
    /// (`share_counters`), else a block of its own. Written on cold paths only.
    counters: Arc<WorkerCounters>,
    srv6: srv6::Srv6State,
}

impl fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forwarder")
            .field("ports", &self.ports.len())
            .field("interfaces", &self.interfaces.len())
            .field("nexthops", &self.nexthops.len())
            .field("groups", &self.groups.len())
            .field("macs", &self.macs.len())
            .finish()
    }
}

/// Most control requests one burst can produce before the engine drains them.
const MAX_PENDING_REQUESTS: usize = 256;

impl Forwarder {
    /// Builds the tables from a spec: VLAN membership, connected and local routes for every
    /// interface address, static routes, nexthops, ECMP groups and static MACs.
    pub fn new(spec: &SwitchSpec) -> Result<Forwarder, ForwarderError> {
        let err = |m: String| Err(ForwarderError(m));
        let port_count = spec.ports.len();
        let mut vlans = vec![VlanState::default(); 4096];
        let mut ports = Vec::with_capacity(port_count);
        for (index, role) in spec.ports.iter().enumerate() {
            let mode = match role {
                PortRole::Access { vlan } => {
                    if !(1..=4094).contains(vlan) {
                        return err(format!("port {index}: access VLAN {vlan} is not 1..=4094"));
                    }
                    vlans[usize::from(*vlan)].members.push(index as u16);
                    PortMode::Access { vlan: *vlan }
                }
                PortRole::Trunk { allowed, native } => {
                    let mut bitmap = Box::new([0u64; 64]);
                    for vlan in allowed.iter().chain(native.iter()) {
                        if !(1..=4094).contains(vlan) {
                            return err(format!("port {index}: trunk VLAN {vlan} is not 1..=4094"));
                        }
                        let (word, bit) = (usize::from(*vlan) / 64, vlan % 64);
                        if bitmap[word] & (1 << bit) == 0 {
                            bitmap[word] |= 1 << bit;
                            vlans[usize::from(*vlan)].members.push(index as u16);
                        }
                    }
                    PortMode::Trunk {
                        allowed: bitmap,
                        native: *native,
                    }
                }
                PortRole::Routed { interface } => {
                    if usize::from(*interface) >= spec.interfaces.len() {
                        return err(format!(
                            "port {index}: interface {interface} does not exist"
                        ));
                    }
                    PortMode::Routed {
                        interface: *interface,
                    }
                }
            };
            ports.push(PortState { mode, up: true });
        }
        for vlan in &spec.vlans {
            if !(1..=4094).contains(&vlan.id) {
                return err(format!("VLAN {} is not 1..=4094", vlan.id));
            }
            vlans[usize::from(vlan.id)].interface = vlan.interface;
        }
        for vlan in vlans.iter_mut() {
            vlan.declared = !vlan.members.is_empty();
        }
        for vlan in &spec.vlans {
            vlans[usize::from(vlan.id)].declared = true;
        }

        let vrfs = usize::from(spec.vrf_count.max(1));
        // Every port starts up.
        let ports_up = u64::MAX >> (64 - ports.len().clamp(1, 64));
        let ports_up = if ports.is_empty() { 0 } else { ports_up };
        let mut forwarder = Forwarder {
            router_mac: spec.router_mac,
            ports,
            ports_up,
            vlans,
            interfaces: Vec::with_capacity(spec.interfaces.len()),
            fib4: (0..vrfs).map(|_| Lpm4::new()).collect(),
            fib6: (0..vrfs).map(|_| Lpm6::for_fib()).collect(),
            nexthops: Vec::with_capacity(spec.nexthops.len()),
            groups: Vec::with_capacity(spec.groups.len()),
            balancers: Vec::with_capacity(spec.groups.len()),
            group_live: Vec::with_capacity(spec.groups.len()),
            ecmp_buckets: spec.ecmp_buckets,
            egress_load: EgressLoad::default(),
            frame_len: 0,
            macs: {
                let mut macs = MacTable::new(spec.mac_capacity);
                macs.set_aging_time(spec.mac_aging);
                macs
            },
            flow_hash_seed: spec.flow_hash_seed,
            glean: [(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0); GLEAN_SLOTS],
            requests: Vec::with_capacity(MAX_PENDING_REQUESTS),
            learn_cache: vec![LearnCacheEntry::default(); port_count],
            dst_cache: Box::new([DstCacheEntry::default(); DST_CACHE_SLOTS]),
            bridge_memo: Default::default(),
            lane_verdict: Verdict::Drop(DropReason::NoRoute),
            lane_max_frame: usize::MAX,
            too_big_mtu: NO_MTU_LIMIT,
            port_mtus: Vec::new(),
            #[cfg(test)]
            bridge_memo_hits: Default::default(),
            mac_aging: spec.mac_aging,
            mac_moves: 0,
            counters: Arc::new(WorkerCounters::new(0)),
            srv6: srv6::Srv6State::default(),
        };

        for (id, iface) in spec.interfaces.iter().enumerate() {
            let id = id as u16;
            if usize::from(iface.vrf) >= vrfs {
                return err(format!("interface {id}: VRF {} does not exist", iface.vrf));
            }
            match iface.attachment {
                Attachment::Port(p) if usize::from(p) >= port_count => {
                    return err(format!("interface {id}: port {p} does not exist"));
                }
                Attachment::Vlan(v) if !(1..=4094).contains(&v) => {
                    return err(format!("interface {id}: VLAN {v} is not 1..=4094"));
                }
                _ => {}
            }
            let vrf = usize::from(iface.vrf);
            for &(addr, len) in &iface.ipv4 {
                forwarder.fib4[vrf].insert(
                    mask4(addr, len),
                    len,
                    route_value::encode(RouteTarget::Connected(id)),
                )?;
                forwarder.fib4[vrf].insert(addr, 32, route_value::encode(RouteTarget::Local))?;
            }
            for &(addr, len) in &iface.ipv6 {
                forwarder.fib6[vrf].insert(
                    mask6(addr, len),
                    len,
                    route_value::encode(RouteTarget::Connected(id)),
                )?;
                forwarder.fib6[vrf].insert(addr, 128, route_value::encode(RouteTarget::Local))?;
            }
            forwarder.interfaces.push(Interface {
                vrf: iface.vrf,
                attachment: iface.attachment,
                ipv4: iface.ipv4.iter().map(|(a, _)| *a).collect(),
                ipv4_subnet_ends: iface
                    .ipv4
                    .iter()
                    .filter(|(_, len)| *len <= 30)
                    .flat_map(|&(a, len)| {
                        let mask = u32::MAX << (32 - len);
                        let net = u32::from(a) & mask;
                        [Ipv4Addr::from(net), Ipv4Addr::from(net | !mask)]
                    })
                    .collect(),
                ipv6: iface.ipv6.iter().map(|(a, _)| *a).collect(),
                mtu: NO_MTU_LIMIT,
            });
        }
        for (id, nh) in spec.nexthops.iter().enumerate() {
            if usize::from(nh.interface) >= forwarder.interfaces.len() {
                return err(format!(
                    "nexthop {id}: interface {} does not exist",
                    nh.interface
                ));
            }
            let nexthop = Nexthop::new(nh.interface, nh.ip, &forwarder.interfaces);
            forwarder.nexthops.push(nexthop);
        }
        for (id, group) in spec.groups.iter().enumerate() {
            if group.members.is_empty() {
                return err(format!("ECMP group {id} has no members"));
            }
            for (member, weight) in &group.members {
                if *member as usize >= forwarder.nexthops.len() {
                    return err(format!("ECMP group {id}: nexthop {member} does not exist"));
                }
                if *weight == 0 {
                    return err(format!("ECMP group {id}: member {member} has weight 0"));
                }
            }
            let members: Vec<Member> = group
                .members
                .iter()
                .map(|&(id, weight)| Member {
                    id,
                    weight,
                    up: true,
                })
                .collect();
            let built = EcmpGroup::with_buckets(spec.ecmp_buckets, &members)
                .map_err(|e| ForwarderError(format!("ECMP group {id}: {e}")))?;
            let balancer = forwarder.balancer_for(id as u32, &group.balance, &built, spec)?;
            forwarder.groups.push(built);
            forwarder.balancers.push(balancer);
            forwarder.group_live.push(true);
        }
        forwarder.srv6 = srv6::Srv6State::new(&spec.srv6, &forwarder)?;
        for route in &spec.routes {
            forwarder.add_route(route.vrf, route.prefix, route.len, route.target)?;
        }
        for entry in &spec.static_macs {
            if usize::from(entry.port) >= port_count {
                return err(format!("static MAC: port {} does not exist", entry.port));
            }
            forwarder
                .macs
                .add_static(entry.vlan, entry.mac, entry.port)
                .map_err(|_| {
                    ForwarderError("static MACs exceed the MAC table capacity".to_owned())
                })?;
        }
        for neighbor in &spec.static_neighbors {
            if usize::from(neighbor.interface) >= forwarder.interfaces.len() {
                return err(format!(
                    "static neighbour {}: interface {} does not exist",
                    neighbor.ip, neighbor.interface
                ));
            }
            forwarder.neighbor_pinned(neighbor.interface, neighbor.ip, neighbor.mac);
        }
        Ok(forwarder)
    }

    /// Installs or replaces a route.
    pub fn add_route(
        &mut self,
        vrf: u16,
        prefix: IpAddr,
        len: u8,
        target: RouteTarget,
    ) -> Result<(), ForwarderError> {
        let vrf_index = usize::from(vrf);
        if vrf_index >= self.fib4.len() {
            return Err(ForwarderError(format!("VRF {vrf} does not exist")));
        }
        match target {
            RouteTarget::Nexthop(i)
                if i as usize >= self.nexthops.len() || i > route_value::MAX_INDEX =>
            {
                return Err(ForwarderError(format!("nexthop {i} does not exist")));
            }
            RouteTarget::Group(i) if !self.group_live(i) || i > route_value::MAX_INDEX => {
                return Err(ForwarderError(format!("ECMP group {i} does not exist")));
            }
            RouteTarget::Connected(i) if usize::from(i) >= self.interfaces.len() => {
                return Err(ForwarderError(format!("interface {i} does not exist")));
            }
            RouteTarget::Srv6Policy(i)
                if !self.srv6.policy_live(i) || i > route_value::MAX_INDEX =>
            {
                return Err(ForwarderError(format!("SRv6 policy {i} does not exist")));
            }
            _ => {}
        }
        let value = route_value::encode(target);
        match prefix {
            IpAddr::V4(p) => self.fib4[vrf_index]
                .insert(mask4(p, len), len, value)
                .map(drop)?,
            IpAddr::V6(p) => self.fib6[vrf_index]
                .insert(mask6(p, len), len, value)
                .map(drop)?,
        }
        Ok(())
    }

    /// Whether ECMP group `g` exists (routes may point at it).
    pub(crate) fn group_live(&self, g: u32) -> bool {
        self.group_live.get(g as usize).copied().unwrap_or(false)
    }

    /// Removes a route; true if it existed.
    pub fn remove_route(&mut self, vrf: u16, prefix: IpAddr, len: u8) -> bool {
        let vrf = usize::from(vrf);
        match prefix {
            IpAddr::V4(p) => self
                .fib4
                .get_mut(vrf)
                .and_then(|t| t.remove(mask4(p, len), len))
                .is_some(),
            IpAddr::V6(p) => self
                .fib6
                .get_mut(vrf)
                .and_then(|t| t.remove(mask6(p, len), len))
                .is_some(),
        }
    }

    /// Adds a nexthop (or finds the existing one for the same interface and address).
    pub fn nexthop_for(&mut self, interface: u16, ip: IpAddr) -> u32 {
        if let Some(id) = self
            .nexthops
            .iter()
            .position(|n| n.interface == interface && n.ip == ip)
        {
            return id as u32;
        }
        self.nexthops
            .push(Nexthop::new(interface, ip, &self.interfaces));
        (self.nexthops.len() - 1) as u32
    }

    /// A neighbour's MAC became known (or changed) from ARP or ND: the nexthop with that
    /// address on that interface uses it, and a connected host gets a host route so the fast
    /// path finds it. Returns false, changing nothing, for a static neighbour.
    pub fn neighbor_resolved(&mut self, interface: u16, ip: IpAddr, mac: [u8; 6]) -> bool {
        if usize::from(interface) >= self.interfaces.len() {
            return false;
        }
        let id = self.nexthop_for(interface, ip);
        if self.nexthops[id as usize].pinned {
            return false;
        }
        self.install_neighbor(id, mac);
        true
    }

    /// An advertisement without Override (RFC 4861 7.2.5): resolves a learned neighbour that
    /// has no MAC yet, and changes none that has one. Returns whether the neighbour (learned)
    /// is now at `mac`, that is, whether this confirms it.
    pub fn neighbor_resolved_unless_known(
        &mut self,
        interface: u16,
        ip: IpAddr,
        mac: [u8; 6],
    ) -> bool {
        let known = self
            .nexthops
            .iter()
            .find(|n| n.interface == interface && n.ip == ip)
            .and_then(|n| n.mac.map(|m| (m, n.pinned)));
        match known {
            Some((current, pinned)) => current == mac && !pinned,
            None => self.neighbor_resolved(interface, ip, mac),
        }
    }

    /// A static neighbour (config or API): as `neighbor_resolved`, and pinned against ARP,
    /// ND and aging.
    pub fn neighbor_pinned(&mut self, interface: u16, ip: IpAddr, mac: [u8; 6]) {
        if usize::from(interface) >= self.interfaces.len() {
            return;
        }
        let id = self.nexthop_for(interface, ip);
        self.nexthops[id as usize].pinned = true;
        self.install_neighbor(id, mac);
    }

    fn install_neighbor(&mut self, id: u32, mac: [u8; 6]) {
        let router_mac = self.router_mac;
        let nh = &mut self.nexthops[id as usize];
        nh.set_mac(Some(mac), router_mac);
        let (interface, ip) = (nh.interface, nh.ip);
        let vrf = self.interfaces[usize::from(interface)].vrf;
        let host_len = if ip.is_ipv4() { 32 } else { 128 };
        // Only connected hosts need a host route; a nexthop of a static route is reached via it.
        let connected =
            matches!(self.route_of(vrf, ip), Some(RouteTarget::Connected(i)) if i == interface);
        if connected {
            let _ = self.add_route(vrf, ip, host_len, RouteTarget::Nexthop(id));
        }
    }

    /// A neighbour the switch has (a nexthop on `interface` for `ip`, not a static one)
    /// announced a new MAC: packets to it go there from now. Creates nothing for a host it
    /// does not know. Returns whether the switch has that neighbour, learned.
    pub fn neighbor_refreshed(&mut self, interface: u16, ip: IpAddr, mac: [u8; 6]) -> bool {
        let router_mac = self.router_mac;
        let mut known = false;
        for nh in self
            .nexthops
            .iter_mut()
            .filter(|n| n.interface == interface && n.ip == ip && n.mac.is_some() && !n.pinned)
        {
            known = true;
            if nh.mac != Some(mac) {
                nh.set_mac(Some(mac), router_mac);
            }
        }
        known
    }

    /// The L3 interface of `vlan`, if it has one.
    pub fn vlan_interface(&self, vlan: u16) -> Option<u16> {
        self.vlans.get(usize::from(vlan))?.interface
    }

    /// A learned neighbour stopped answering (or a static one was deleted, unpinned first):
    /// packets to it are dropped and resolution is asked for again. Static neighbours stay.
    pub fn neighbor_lost(&mut self, interface: u16, ip: IpAddr) {
        let router_mac = self.router_mac;
        for nh in self
            .nexthops
            .iter_mut()
            .filter(|n| n.interface == interface && n.ip == ip && !n.pinned)
        {
            nh.set_mac(None, router_mac);
        }
    }

    /// The ports' MTUs (the largest IP packet each sends, by port number), as the devices
    /// took them at start: routed packets longer than their egress interface's MTU are
    /// fragmented (IPv4 without Don't Fragment) or dropped with an ICMP Fragmentation Needed
    /// or ICMPv6 Packet Too Big. Until this is called no MTU limits routing.
    pub fn set_port_mtus(&mut self, mtus: &[u16]) {
        self.port_mtus = mtus.to_vec();
        self.refresh_interface_mtus();
    }

    /// Each interface's MTU from its port's, or the smallest of its VLAN's ports' (run again
    /// when VLAN membership changes), and the express lane's longest frame from the smallest.
    pub(super) fn refresh_interface_mtus(&mut self) {
        if self.port_mtus.is_empty() {
            return;
        }
        let port_mtu = |port: &u16| {
            self.port_mtus
                .get(usize::from(*port))
                .copied()
                .unwrap_or(NO_MTU_LIMIT)
        };
        let mut smallest = NO_MTU_LIMIT;
        for iface in &mut self.interfaces {
            iface.mtu = match iface.attachment {
                Attachment::Port(port) => port_mtu(&port),
                Attachment::Vlan(vlan) => self.vlans[usize::from(vlan)]
                    .members
                    .iter()
                    .map(port_mtu)
                    .min()
                    .unwrap_or(NO_MTU_LIMIT),
            };
            smallest = smallest.min(iface.mtu);
        }
        self.lane_max_frame = lane::LANE_L3 + usize::from(smallest);
    }

    /// The MTU of the interface the last `RouterErrorKind::PacketTooBig` verdict's packet
    /// would have left by (the engine puts it in the ICMP error).
    pub fn too_big_mtu(&self) -> u16 {
        self.too_big_mtu
    }

    /// What becomes of a routed packet longer than `out_iface`'s MTU: fragments (IPv4 that
    /// may be fragmented), else a drop with Fragmentation Needed / Packet Too Big to the
    /// source from `in_iface` in `vrf`. `overhead` bytes are added to the packet on its way
    /// out (an SRv6 encapsulation): the MTU the source is told is less by as much.
    #[cold]
    #[inline(never)]
    fn exceeds_mtu(
        &mut self,
        out_iface: u16,
        overhead: usize,
        may_fragment: bool,
        in_iface: u16,
        vrf: u16,
    ) -> Verdict {
        let mtu = self.interfaces[usize::from(out_iface)].mtu;
        let mtu = u16::try_from(usize::from(mtu).saturating_sub(overhead)).unwrap_or(0);
        if may_fragment && mtu >= IPV4_MIN_FRAGMENT_MTU {
            return Verdict::Fragment { mtu };
        }
        self.too_big_mtu = mtu;
        Verdict::DropWithRouterError {
            reason: DropReason::MtuExceeded,
            error: RouterError {
                kind: RouterErrorKind::PacketTooBig,
                interface: in_iface,
                vrf,
            },
        }
    }

    /// Whether a packet of `len` bytes (from its IP header) exceeds `out_iface`'s MTU.
    #[inline(always)]
    fn exceeds_mtu_of(&self, out_iface: u16, len: usize) -> bool {
        len > usize::from(self.interfaces[usize::from(out_iface)].mtu)
    }

    /// Link state of a port: ECMP members behind a routed port leave their groups at once
    /// while it is down, and its learned MACs are flushed.
    pub fn set_port_up(&mut self, port: u16, up: bool) {
        self.forget_memos();
        let Some(state) = self.ports.get_mut(usize::from(port)) else {
            return;
        };
        state.up = up;
        if port < 64 {
            self.ports_up = self.ports_up & !(1 << port) | u64::from(up) << port;
        }
        if !up {
            self.macs.flush_port(port);
        }
        let behind_port: Vec<u32> = self
            .nexthops
            .iter()
            .enumerate()
            .filter(|(_, nh)| {
                self.interfaces[usize::from(nh.interface)].attachment == Attachment::Port(port)
            })
            .map(|(id, _)| id as u32)
            .collect();
        for group in &mut self.groups {
            for &id in &behind_port {
                // Err only means the nexthop is not a member of this group.
                let _ = group.set_member_up(id, up);
            }
        }
    }

    /// Forgets learned MACs idle longer than the aging time. Call now and then, not per packet.
    pub fn age_macs(&mut self, now: Picos) -> usize {
        self.macs.age(now)
    }

    /// Whether the fast path asked the slow path for something (`drain_requests`).
    #[inline]
    pub fn has_requests(&self) -> bool {
        !self.requests.is_empty()
    }

    /// Requests produced since the last call.
    pub fn drain_requests(&mut self) -> std::vec::Drain<'_, ControlRequest> {
        self.requests.drain(..)
    }

    /// Ports that flood copies of a frame in `vlan` go to (the engine skips the ingress port).
    pub fn vlan_members(&self, vlan: u16) -> &[u16] {
        self.vlans
            .get(usize::from(vlan))
            .map_or(&[], |v| &v.members)
    }

    /// Whether frames of `vlan` leave `port` tagged.
    #[inline]
    pub fn egress_tagged(&self, port: u16, vlan: u16) -> bool {
        match self.ports.get(usize::from(port)).map(|p| &p.mode) {
            Some(PortMode::Trunk { native, .. }) => *native != Some(vlan),
            _ => false,
        }
    }

    /// Whether `port` is up (flood copies skip ports that are down).
    #[inline]
    pub fn port_up(&self, port: u16) -> bool {
        self.ports.get(usize::from(port)).is_some_and(|p| p.up)
    }

    /// The switch's router MAC.
    pub fn router_mac(&self) -> [u8; 6] {
        self.router_mac
    }

    /// The port where the bridge has `mac` (a live learned or a static entry of its MAC
    /// table) in the VLAN of L3 interface `interface`: where a frame to that MAC is bridged.
    /// None for a routed port's interface, or a MAC the VLAN's table lacks (a bridged frame
    /// to it is flooded). Read-only, cold: the switch worker aims its unicast neighbour
    /// refreshes with it.
    pub fn bridge_port(&self, interface: u16, mac: [u8; 6], now: Picos) -> Option<u16> {
        match self.interfaces.get(usize::from(interface))?.attachment {
            Attachment::Vlan(vlan) => self.macs.lookup(vlan, mac, now),
            Attachment::Port(_) => None,
        }
    }

    /// Number of learned and static MACs.
    pub fn mac_count(&self) -> usize {
        self.macs.len()
    }

    /// Counts from now on into `counters` (the worker's block, which the control thread reads)
    /// what the verdicts do not show: `mac_table_full`, `routed_flooded`. The forwarder runs on
    /// the worker, so the block keeps its one writer.
    pub fn share_counters(&mut self, counters: Arc<WorkerCounters>) {
        self.counters = counters;
    }

    /// The counters the forwarder writes (`share_counters`).
    pub fn counters(&self) -> &WorkerCounters {
        &self.counters
    }

    fn route_of(&self, vrf: u16, ip: IpAddr) -> Option<RouteTarget> {
        match ip {
            IpAddr::V4(a) => self
                .fib4
                .get(usize::from(vrf))?
                .lookup(a)
                .map(route_value::decode),
            IpAddr::V6(a) => self
                .fib6
                .get(usize::from(vrf))?
                .lookup(a)
                .map(route_value::decode),
        }
    }

    /// Decides the fate of one frame received on `in_port` at `now`, rewriting it in place
    /// (MACs, TTL, checksum, VID) when it is routed. A frame that SRv6 would have to make
    /// longer or shorter is dropped (`NoHeadroom`): callers that can resize use
    /// [`Self::process_frame`].
    #[inline]
    pub fn process(&mut self, frame: &mut [u8], in_port: u16, now: Picos) -> Verdict {
        // Callers of this form change tables between any two frames.
        self.forget_memos();
        let len = frame.len();
        let mut window = Frame::whole(frame);
        let verdict = self.process_frame(&mut window, in_port, now);
        if window.start() != 0 || window.end() != len {
            return Verdict::Drop(DropReason::NoHeadroom);
        }
        verdict
    }

    /// [`Self::process`] on a frame with headroom and tailroom: SRv6 encapsulation grows it
    /// to the front (moving it toward the end of the buffer when the headroom is short),
    /// decapsulation and SRH removal shrink it from the front, padding may be cut from the
    /// end. The caller applies the new window (`Frame::start`, `Frame::end`) to its buffer.
    /// A frame may reuse an earlier frame's bridging decision; the forwarder's own update
    /// methods forget what a change could make wrong.
    #[inline]
    pub fn process_frame(&mut self, frame: &mut Frame<'_>, in_port: u16, now: Picos) -> Verdict {
        self.srv6.local_passes = 0;
        if frame.len() < 14 {
            return Verdict::Drop(DropReason::Truncated);
        }
        self.frame_len = frame.len() as u32;
        let header = bridge_memo::header_of(frame);
        if let Some(header) = header
            && let Some(verdict) = self.remembered_bridging(frame, header, in_port, now)
        {
            return verdict;
        }
        let Some(port) = self.ports.get(usize::from(in_port)) else {
            return Verdict::Drop(DropReason::NoEgressPort);
        };
        let outer_type = u16::from_be_bytes([frame[12], frame[13]]);
        let (tag_vid, ethertype, l3) = match outer_type {
            ETHERTYPE_VLAN => {
                if frame.len() < 18 {
                    return Verdict::Drop(DropReason::Truncated);
                }
                let inner = u16::from_be_bytes([frame[16], frame[17]]);
                if inner == ETHERTYPE_VLAN || inner == ETHERTYPE_QINQ {
                    return Verdict::Drop(DropReason::UnsupportedVlanStack);
                }
                (
                    Some(u16::from_be_bytes([frame[14], frame[15]]) & 0x0fff),
                    inner,
                    18,
                )
            }
            ETHERTYPE_QINQ => return Verdict::Drop(DropReason::UnsupportedVlanStack),
            ETHERTYPE_MAC_CONTROL => return Verdict::Drop(DropReason::MacControl),
            other => (None, other, 14),
        };
        let tagged = tag_vid.is_some();
        let src: [u8; 6] = frame[6..12].try_into().expect("6 bytes");
        if src[0] & 1 != 0 || src == [0; 6] || src == self.router_mac {
            return Verdict::Drop(self.bad_source(src));
        }
        let dst: [u8; 6] = frame[0..6].try_into().expect("6 bytes");

        let vlan = match &port.mode {
            PortMode::Routed { interface } => {
                let interface = *interface;
                // A priority tag (VID 0, 802.1Q 9.6) carries only the PCP: as untagged, as on
                // an access port (RoCE hosts mark their class so on routed links too).
                if tag_vid.is_some_and(|vid| vid != 0) {
                    return Verdict::Drop(DropReason::VlanNotAllowed);
                }
                return self.routed_port_ingress(frame, dst, ethertype, l3, tagged, interface, now);
            }
            PortMode::Access { vlan } => match tag_vid {
                None | Some(0) => *vlan,
                Some(_) => return Verdict::Drop(DropReason::VlanNotAllowed),
            },
            PortMode::Trunk { allowed, native } => match tag_vid {
                None | Some(0) => match native {
                    Some(v) => *v,
                    None => return Verdict::Drop(DropReason::VlanNotAllowed),
                },
                Some(v) => {
                    if allowed[usize::from(v) / 64] & (1 << (v % 64)) == 0 {
                        return Verdict::Drop(DropReason::VlanNotAllowed);
                    }
                    v
                }
            },
        };

        let source_valid_until = self.learn_source(vlan, src, in_port, now);

        let svi = self.vlans[usize::from(vlan)].interface;
        if let Some(interface) = svi {
            if dst == self.router_mac {
                return self.route(frame, ethertype, l3, tagged, interface, now);
            }
            if dst[0] & 1 != 0
                && let Some(reason) = self.punt_if_for_us(frame, dst, ethertype, l3, interface)
            {
                return Verdict::Punt { reason, interface };
            }
        }
        if dst[0] & 1 != 0 {
            if is_ieee_reserved_multicast(dst) {
                return Verdict::Drop(DropReason::ReservedMulticast);
            }
            return Verdict::Flood {
                vlan,
                ingress_tagged: tagged,
            };
        }
        match self.lookup_destination(vlan, dst, now) {
            Some((out, _)) if out == in_port => Verdict::Drop(DropReason::SamePort),
            Some((out, destination_valid_until)) => {
                let tag = self.tag_op(frame, tagged, out, vlan);
                // Only to a port that is up: a repeat's sender may then skip that check (a
                // link change forgets the decision).
                if let Some(source_valid_until) = source_valid_until
                    && let Some(header) = header
                    && self.port_up(out)
                {
                    let valid_until = source_valid_until.min(destination_valid_until);
                    self.remember_bridging(frame, header, tagged, in_port, valid_until, out, tag);
                }
                Verdict::Forward { port: out, tag }
            }
            None => Verdict::Flood {
                vlan,
                ingress_tagged: tagged,
            },
        }
    }

    /// Why source MAC `src` (multicast, all-zero or the router MAC) is refused.
    #[cold]
    #[inline(never)]
    fn bad_source(&self, src: [u8; 6]) -> DropReason {
        if src == self.router_mac && src[0] & 1 == 0 {
            DropReason::OwnSourceMac
        } else {
            DropReason::InvalidSourceMac
        }
    }

    /// Learns a frame's source, skipping the table when the same host was just learned on the
    /// same port and nothing in the table changed since (one host per server port is the
    /// common case on a leaf).
    /// When the source is in the table for this port, the time until which a frame that
    /// repeats it may skip learning (the refresh is due then).
    #[inline(always)]
    fn learn_source(&mut self, vlan: u16, src: [u8; 6], in_port: u16, now: Picos) -> Option<Picos> {
        let key = mac_key(vlan, src);
        let generation = self.macs.generation();
        let cached = self.learn_cache[usize::from(in_port)];
        let refresh = LEARN_REFRESH.min(self.mac_aging / 4);
        if cached.key == key
            && cached.generation == generation
            && now.saturating_sub(cached.refreshed) < refresh
        {
            return Some(cached.refreshed.saturating_add(refresh));
        }
        // A bridging decision remembered for this port skipped learning on the strength of
        // the cache entry replaced below.
        self.forget_bridging_from(in_port);
        match self.macs.learn(vlan, src, in_port, now) {
            LearnOutcome::Moved { .. } => self.mac_moves += 1,
            LearnOutcome::TableFull => {
                self.table_full();
                return None;
            }
            LearnOutcome::StaticConflict => return None,
            _ => {}
        }
        self.learn_cache[usize::from(in_port)] = LearnCacheEntry {
            key,
            generation: self.macs.generation(),
            refreshed: now,
        };
        Some(now.saturating_add(refresh))
    }

    /// A source MAC refused by the full MAC table (`mac_table_full`).
    #[cold]
    #[inline(never)]
    fn table_full(&self) {
        self.counters.mac_table_full.add(1);
    }

    /// Looks up a destination MAC through a small direct-mapped cache of recent answers: the
    /// port, and the time until which the answer holds if the table does not change.
    #[inline(always)]
    fn lookup_destination(&mut self, vlan: u16, dst: [u8; 6], now: Picos) -> Option<(u16, Picos)> {
        let key = mac_key(vlan, dst);
        let generation = self.macs.generation();
        let slot = (key as usize ^ (key >> 16) as usize) & (DST_CACHE_SLOTS - 1);
        let cached = self.dst_cache[slot];
        if cached.key == key && cached.generation == generation && now < cached.valid_until {
            return Some((cached.port, cached.valid_until));
        }
        let port = self.macs.lookup(vlan, dst, now)?;
        let entry = self.macs.get(vlan, dst)?;
        let valid_until = if entry.is_static {
            Picos::MAX
        } else {
            entry.last_seen.saturating_add(self.mac_aging)
        };
        self.dst_cache[slot] = DstCacheEntry {
            key,
            generation,
            valid_until,
            port,
        };
        Some((port, valid_until))
    }

    /// How to turn the frame's current tagging into what `out` expects for `vlan`; a VID
    /// rewrite between two tagged ports is done in place.
    #[inline(always)]
    fn tag_op(&self, frame: &mut [u8], tagged: bool, out: u16, vlan: u16) -> TagOp {
        match (tagged, self.egress_tagged(out, vlan)) {
            (false, false) => TagOp::Keep,
            (false, true) => TagOp::Push(vlan),
            (true, false) => TagOp::Pop,
            (true, true) => {
                let tci = u16::from_be_bytes([frame[14], frame[15]]);
                frame[14..16].copy_from_slice(&((tci & 0xf000) | vlan).to_be_bytes());
                TagOp::Keep
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn routed_port_ingress(
        &mut self,
        frame: &mut Frame<'_>,
        dst: [u8; 6],
        ethertype: u16,
        l3: usize,
        tagged: bool,
        interface: u16,
        now: Picos,
    ) -> Verdict {
        if dst == self.router_mac {
            return self.route(frame, ethertype, l3, tagged, interface, now);
        }
        if dst[0] & 1 != 0 {
            if let Some(reason) = self.punt_if_for_us(frame, dst, ethertype, l3, interface) {
                return Verdict::Punt { reason, interface };
            }
            // A neighbour that changed its MAC says so to the link; the switch listens as the
            // hosts of a VLAN do.
            if is_announcement(frame, ethertype, l3) {
                return Verdict::Punt {
                    reason: PuntReason::Announcement,
                    interface,
                };
            }
            // LLDP, LACP, STP from the peer: the link's own protocols, which the switch does
            // not run; counted as such rather than as traffic that missed its address.
            if is_ieee_reserved_multicast(dst) {
                return Verdict::Drop(DropReason::ReservedMulticast);
            }
        }
        Verdict::Drop(DropReason::NotForUs)
    }

    /// Broadcast ARP requests for one of the interface's addresses and ND multicast for one of
    /// them go to the control plane instead of being flooded.
    fn punt_if_for_us(
        &self,
        frame: &[u8],
        dst: [u8; 6],
        ethertype: u16,
        l3: usize,
        interface: u16,
    ) -> Option<PuntReason> {
        let iface = &self.interfaces[usize::from(interface)];
        match ethertype {
            ETHERTYPE_ARP if dst == [0xff; 6] => {
                let arp = frame.get(l3..l3 + 28)?;
                let op = u16::from_be_bytes([arp[6], arp[7]]);
                let target = Ipv4Addr::new(arp[24], arp[25], arp[26], arp[27]);
                (op == ARP_OP_REQUEST && iface.ipv4.contains(&target)).then_some(PuntReason::Arp)
            }
            ETHERTYPE_IPV6 => {
                let ip = frame.get(l3..l3 + 40 + 24)?;
                let icmp_type = ip[40];
                let is_nd = ip[6] == IP_PROTO_ICMPV6
                    && (icmp_type == ICMPV6_NEIGHBOR_SOLICIT
                        || icmp_type == ICMPV6_NEIGHBOR_ADVERT);
                let target = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[48..64]).expect("16 bytes"));
                (is_nd && iface.ipv6.contains(&target)).then_some(PuntReason::NeighborDiscovery)
            }
            _ => None,
        }
    }

    fn route(
        &mut self,
        frame: &mut Frame<'_>,
        ethertype: u16,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        now: Picos,
    ) -> Verdict {
        let vrf = self.interfaces[usize::from(in_iface)].vrf;
        // Group members count a routed frame's bytes as it leaves a routed port: untagged.
        if tagged {
            self.frame_len -= 4;
        }
        match ethertype {
            ETHERTYPE_IPV4 => self.route_ipv4(frame, l3, tagged, in_iface, vrf, now),
            ETHERTYPE_IPV6 => self.route_ipv6(frame, l3, tagged, in_iface, vrf, now),
            ETHERTYPE_ARP => Verdict::Punt {
                reason: PuntReason::Arp,
                interface: in_iface,
            },
            _ => Verdict::Drop(DropReason::NotIp),
        }
    }

    #[inline]
    fn route_ipv4(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        vrf: u16,
        now: Picos,
    ) -> Verdict {
        let ip = &frame[l3..];
        if ip.len() < 20 {
            return Verdict::Drop(DropReason::Truncated);
        }
        let header_len = usize::from(ip[0] & 0x0f) * 4;
        let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ip[0] >> 4 != 4 || header_len < 20 || total_len < header_len || ip.len() < header_len {
            return Verdict::Drop(DropReason::BadIpv4Header);
        }
        if total_len > ip.len() {
            return Verdict::Drop(DropReason::Truncated);
        }
        // The member counters count the frame as it leaves, without the bytes cut.
        self.frame_len = self
            .frame_len
            .saturating_sub(trim_to_packet(frame, l3, total_len) as u32);
        let ip = &frame[l3..];
        if checksum::sum(&ip[..header_len]) != 0xffff {
            return Verdict::Drop(DropReason::BadIpv4Checksum);
        }
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        // Whatever the routes say (a default route covers them all).
        if is_martian_v4(ip[16]) {
            return Verdict::Drop(DropReason::MartianDestination);
        }
        // Options, before anything depends on the route: Linux (`ip_rcv_options`) drops a
        // source-routed packet on input when `accept_source_route` is 0, its default, whether
        // it is to be forwarded or is for the host; so this drop comes before the Local punt
        // too, and before a missing route could earn the source an ICMP error. Linux checks
        // martian sources first (in its route lookup); here a martian with a source route
        // counts as `source_route_option`: dropped either way. Frames with options never take
        // the express lane (its screen wants IHL 5), so this is the only place they are seen.
        if header_len > HEADER_LEN
            && let Some(reason) = ipv4_options_drop(&ip[HEADER_LEN..header_len])
        {
            return Verdict::Drop(reason);
        }
        let Some(value) = self.fib4[usize::from(vrf)].lookup(dst) else {
            return router_error(DropReason::NoRoute, in_iface, vrf);
        };
        let target = route_value::decode(value);
        // matches!, not ==: the derived comparison takes the target by reference, which kept
        // it in memory and cost a store-forwarding stall per packet on reloading it.
        if matches!(target, RouteTarget::Local) {
            return Verdict::Punt {
                reason: PuntReason::Local,
                interface: in_iface,
            };
        }
        if is_martian_v4(ip[12]) {
            return Verdict::Drop(DropReason::MartianSource);
        }
        if let RouteTarget::Srv6Policy(policy) = target {
            return self.srv6_headend(frame, l3, tagged, in_iface, policy, now);
        }
        if ip[8] <= 1 {
            return router_error(DropReason::TtlExpired, in_iface, vrf);
        }
        let seed = self.flow_hash_seed;
        let hash = || flow_hash_ipv4(ip, header_len, seed);
        let (out_iface, dst_mac) =
            match self.resolve_target(target, || IpAddr::V4(dst), hash, total_len, now) {
                Ok(found) => found,
                Err(Unsent::Drop(reason)) => return Verdict::Drop(reason),
                Err(Unsent::TooBig(out_iface)) => {
                    // Not sent as it is: dropped, or its fragments are routed (placed, counted
                    // and resolved) anew.
                    let may_fragment = ip[6] & IPV4_DONT_FRAGMENT == 0;
                    return self.exceeds_mtu(out_iface, 0, may_fragment, in_iface, vrf);
                }
            };
        self.send_routed(frame, l3, false, tagged, out_iface, dst_mac, now)
    }

    /// The end of routing once the nexthop is known and the packet fits its MTU: the L2
    /// rewrite (`egress_l2`: forwarded, or flooded in the neighbour's VLAN), the hop limit
    /// (IPv6) or TTL and checksum (IPv4, RFC 1624 update).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn send_routed(
        &mut self,
        frame: &mut [u8],
        l3: usize,
        ipv6: bool,
        tagged: bool,
        out_iface: u16,
        dst_mac: [u8; 6],
        now: Picos,
    ) -> Verdict {
        let out = self.egress_l2(frame, tagged, out_iface, dst_mac, now);
        decrement_hop_limit(&mut frame[l3..], ipv6);
        out
    }

    #[inline]
    fn route_ipv6(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        vrf: u16,
        now: Picos,
    ) -> Verdict {
        let ip = &frame[l3..];
        if ip.len() < 40 {
            return Verdict::Drop(DropReason::Truncated);
        }
        if ip[0] >> 4 != 6 {
            return Verdict::Drop(DropReason::BadIpv6Header);
        }
        let packet_len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        if packet_len > ip.len() {
            return Verdict::Drop(DropReason::Truncated);
        }
        // The member counters count the frame as it leaves, without the bytes cut.
        self.frame_len = self
            .frame_len
            .saturating_sub(trim_to_packet(frame, l3, packet_len) as u32);
        let ip = &frame[l3..];
        let src: [u8; 16] = ip[8..24].try_into().expect("16 bytes");
        let dst_bytes: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_bytes);
        if is_martian_v6(u128::from_be_bytes(dst_bytes)) {
            return Verdict::Drop(DropReason::MartianDestination);
        }
        if let Some(sid) = self.srv6.lookup_sid(vrf, dst) {
            // Every behaviour sends the packet (or its inner one) on: a source no router
            // forwards from is refused first, as Linux's ip6_rcv_core does on input.
            if is_martian_v6_source(u128::from_be_bytes(src)) {
                return Verdict::Drop(DropReason::MartianSource);
            }
            return self.srv6_endpoint(frame, l3, tagged, in_iface, vrf, sid, now);
        }
        let Some(value) = self.fib6[usize::from(vrf)].lookup(dst) else {
            return router_error(DropReason::NoRoute, in_iface, vrf);
        };
        let target = route_value::decode(value);
        // matches!, not == (see route_ipv4).
        if matches!(target, RouteTarget::Local) {
            return Verdict::Punt {
                reason: PuntReason::Local,
                interface: in_iface,
            };
        }
        if is_martian_v6_source(u128::from_be_bytes(src)) {
            return Verdict::Drop(DropReason::MartianSource);
        }
        if let RouteTarget::Srv6Policy(policy) = target {
            return self.srv6_headend(frame, l3, tagged, in_iface, policy, now);
        }
        if is_link_local(&src) || is_link_local(&dst_bytes) {
            return Verdict::Drop(DropReason::LinkLocal);
        }
        if ip[7] <= 1 {
            return router_error(DropReason::TtlExpired, in_iface, vrf);
        }
        let seed = self.flow_hash_seed;
        let hash = || flow_hash_ipv6(ip, seed);
        let (out_iface, dst_mac) =
            match self.resolve_target(target, || IpAddr::V6(dst), hash, packet_len, now) {
                Ok(found) => found,
                Err(Unsent::Drop(reason)) => return Verdict::Drop(reason),
                Err(Unsent::TooBig(out_iface)) => {
                    return self.exceeds_mtu(out_iface, 0, false, in_iface, vrf);
                }
            };
        self.send_routed(frame, l3, true, tagged, out_iface, dst_mac, now)
    }

    /// Routes an IPv4 packet the switch built (an ICMP error) in `vrf`: FIB only, TTL as
    /// built. `frame` is an untagged Ethernet frame with a 20-byte IPv4 header. Drops if the
    /// destination is not routable, is the switch itself or is reached through an SRv6 policy
    /// (the same rules as [`Self::route_originated_ipv6`]).
    pub fn route_originated_ipv4(
        &mut self,
        frame: &mut Frame<'_>,
        vrf: u16,
        now: Picos,
    ) -> Verdict {
        if frame.len() < 14 + 20 || usize::from(vrf) >= self.fib4.len() {
            return Verdict::Drop(DropReason::Truncated);
        }
        let ip = &frame[14..];
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let target = match self.fib4[usize::from(vrf)].lookup(dst) {
            Some(value) => route_value::decode(value),
            None => return Verdict::Drop(DropReason::NoRoute),
        };
        if matches!(target, RouteTarget::Local | RouteTarget::Srv6Policy(_)) {
            return Verdict::Drop(DropReason::NoRoute);
        }
        let key = FlowKey::V4 {
            src: [ip[12], ip[13], ip[14], ip[15]],
            dst: dst.octets(),
            proto: ip[9],
            sport: 0,
            dport: 0,
        };
        let hash = flow_hash(&key, self.flow_hash_seed);
        let len = frame.len() - 14;
        match self.resolve_target(target, || IpAddr::V4(dst), || hash, len, now) {
            Ok((out_iface, dst_mac)) => self.egress_l2(frame, false, out_iface, dst_mac, now),
            Err(unsent) => Verdict::Drop(unsent.reason()),
        }
    }

    /// The interface and MAC a routed packet of `len` bytes (from its IP header, as it will
    /// leave) is sent to, or why not. The egress interface's MTU is checked first, as soon as
    /// the interface is known (the nexthop chosen, or the connected route's interface) and
    /// before the neighbour is looked at: a packet too big for it is `Unsent::TooBig` whether
    /// its neighbour is resolved or not, as in Linux, where `ip_forward` (`ip_exceeds_mtu`)
    /// and `ip6_forward` (`ip6_pkt_too_big`) answer before the packet reaches the neighbour
    /// layer, so the source learns the path MTU while the neighbour is being resolved. Like
    /// Linux, no resolution is asked for a packet dropped as too big (an IPv4 packet that may
    /// be fragmented asks through its fragments, which are routed anew). Otherwise asks the
    /// control plane to resolve what is missing (rate-limited), never waits for it. A group
    /// member chosen (and counted) for a packet that does not leave is uncounted.
    #[inline(always)]
    fn resolve_target(
        &mut self,
        target: RouteTarget,
        dst: impl FnOnce() -> IpAddr,
        hash: impl FnOnce() -> u32,
        len: usize,
        now: Picos,
    ) -> Result<(u16, [u8; 6]), Unsent> {
        let nexthop_id = self.choose_nexthop(target, dst, hash, len, now)?;
        let out_iface = self.nexthops[nexthop_id as usize].interface;
        if self.exceeds_mtu_of(out_iface, len) {
            self.uncount_member(target, nexthop_id, self.frame_len);
            return Err(Unsent::TooBig(out_iface));
        }
        match self.resolved_nexthop(nexthop_id, now) {
            Ok(found) => Ok(found),
            Err(reason) => {
                self.uncount_member(target, nexthop_id, self.frame_len);
                Err(Unsent::Drop(reason))
            }
        }
    }

    /// A frame placed on group member `nexthop_id` (`target` a group) and counted there did
    /// not leave after all (unresolved, longer than the MTU, no way out): its member counters
    /// say what the group sent.
    #[cold]
    #[inline(never)]
    fn uncount_member(&self, target: RouteTarget, nexthop_id: u32, len: u32) {
        if let RouteTarget::Group(group) = target
            && let Some(balancer) = self.balancers.get(group as usize)
        {
            balancer.uncount(nexthop_id, len);
        }
    }

    /// The nexthop a route's target sends a packet of `len` bytes to (an ECMP group's member
    /// chosen and counted). A connected route's packet is checked against its interface's MTU
    /// before its host is gleaned (see `resolve_target`).
    #[inline(always)]
    fn choose_nexthop(
        &mut self,
        target: RouteTarget,
        dst: impl FnOnce() -> IpAddr,
        hash: impl FnOnce() -> u32,
        len: usize,
        now: Picos,
    ) -> Result<u32, Unsent> {
        let nexthop_id = match target {
            RouteTarget::Nexthop(id) => id,
            RouteTarget::Group(group) => {
                let g = group as usize;
                let chosen = self.balancers[g].select_member(
                    &self.groups[g],
                    hash(),
                    self.frame_len,
                    now,
                    &self.egress_load,
                );
                match chosen {
                    Some((member, _)) => member,
                    None => return Err(Unsent::Drop(DropReason::EcmpNoLiveMember)),
                }
            }
            RouteTarget::Connected(interface) => {
                let dst = dst();
                if let IpAddr::V4(v4) = dst
                    && self.interfaces[usize::from(interface)]
                        .ipv4_subnet_ends
                        .contains(&v4)
                {
                    return Err(Unsent::Drop(DropReason::DirectedBroadcast));
                }
                // Too big: answered, and (as Linux) no resolution asked for it.
                if self.exceeds_mtu_of(interface, len) {
                    return Err(Unsent::TooBig(interface));
                }
                self.glean(interface, dst, now);
                return Err(Unsent::Drop(DropReason::NeighborUnresolved));
            }
            RouteTarget::Blackhole => return Err(Unsent::Drop(DropReason::Blackhole)),
            // Policies are applied before resolution; an outer destination routed into one
            // again would nest encapsulations.
            RouteTarget::Srv6Policy(_) => {
                return Err(Unsent::Drop(DropReason::Srv6EncapRecursion));
            }
            RouteTarget::Local => unreachable!("local routes are punted before resolution"),
        };
        Ok(nexthop_id)
    }

    /// Nexthop `nexthop_id`'s interface and MAC, or `NeighborUnresolved` after asking the
    /// control plane to resolve it (rate-limited).
    #[inline(always)]
    fn resolved_nexthop(
        &mut self,
        nexthop_id: u32,
        now: Picos,
    ) -> Result<(u16, [u8; 6]), DropReason> {
        let nh = &mut self.nexthops[nexthop_id as usize];
        match nh.mac {
            Some(mac) => Ok((nh.interface, mac)),
            None => {
                if nh
                    .last_request
                    .is_none_or(|t| now.saturating_sub(t) >= RESOLVE_INTERVAL)
                {
                    nh.last_request = Some(now);
                    let request = ControlRequest::Resolve {
                        interface: nh.interface,
                        ip: nh.ip,
                    };
                    if self.requests.len() < MAX_PENDING_REQUESTS {
                        self.requests.push(request);
                    }
                }
                Err(DropReason::NeighborUnresolved)
            }
        }
    }

    /// Asks for a connected host's MAC, at most once per `RESOLVE_INTERVAL` per slot.
    fn glean(&mut self, interface: u16, ip: IpAddr, now: Picos) {
        let slot = match ip {
            IpAddr::V4(a) => u32::from(a) as usize,
            IpAddr::V6(a) => (u128::from(a) as u32) as usize,
        } % GLEAN_SLOTS;
        let (last_ip, last_time) = self.glean[slot];
        if last_ip == ip && last_time != 0 && now.saturating_sub(last_time) < RESOLVE_INTERVAL {
            return;
        }
        self.glean[slot] = (ip, now.max(1));
        if self.requests.len() < MAX_PENDING_REQUESTS {
            self.requests
                .push(ControlRequest::Resolve { interface, ip });
        }
    }

    /// Rewrites the L2 header for a routed packet leaving `out_iface` toward `dst_mac`, and
    /// where it goes: a forward with the port and tag operation it leaves with (a routed port;
    /// in a VLAN, the port where the MAC table has `dst_mac`), or, when the VLAN's table lacks
    /// `dst_mac`, a flood in the VLAN (`flood_routed`). Never a drop: a packet whose
    /// neighbour is resolved always leaves.
    #[inline(always)]
    fn egress_l2(
        &mut self,
        frame: &mut [u8],
        tagged: bool,
        out_iface: u16,
        dst_mac: [u8; 6],
        now: Picos,
    ) -> Verdict {
        let (port, vlan) = match self.interfaces[usize::from(out_iface)].attachment {
            Attachment::Port(p) => (p, None),
            Attachment::Vlan(v) => match self.lookup_destination(v, dst_mac, now) {
                Some((p, _)) => (p, Some(v)),
                None => return self.flood_routed(frame, tagged, out_iface, v, dst_mac, now),
            },
        };
        frame[0..6].copy_from_slice(&dst_mac);
        frame[6..12].copy_from_slice(&self.router_mac);
        let tag = match vlan {
            None => {
                if tagged {
                    TagOp::Pop
                } else {
                    TagOp::Keep
                }
            }
            Some(v) => self.tag_op(frame, tagged, port, v),
        };
        Verdict::Forward { port, tag }
    }

    /// A routed packet to a neighbour in `vlan` whose MAC the VLAN's MAC table lacks (aged
    /// out before the neighbour did, flushed with its port's link, never learned): rewritten
    /// and flooded to the VLAN's members, as a bridge floods an unknown unicast (never back
    /// out of the ingress port; each copy tagged as its port needs, `Verdict::Flood`), and
    /// counted in `routed_flooded`. A neighbour at `dst_mac` on the interface is asked for
    /// again (rate-limited): its answer teaches the table the MAC's port, and the packets
    /// after it are unicast again.
    ///
    /// Flooding lossless traffic can deadlock PFC when the MAC table and the neighbours
    /// disagree for long (Guo et al., SIGCOMM 2016): `routed_flooded` shows how often, and
    /// a MAC aging time longer than the neighbour reachable time keeps it rare.
    #[cold]
    #[inline(never)]
    fn flood_routed(
        &mut self,
        frame: &mut [u8],
        tagged: bool,
        out_iface: u16,
        vlan: u16,
        dst_mac: [u8; 6],
        now: Picos,
    ) -> Verdict {
        let ip = self
            .nexthops
            .iter()
            .find(|n| n.interface == out_iface && n.mac == Some(dst_mac))
            .map(|n| n.ip);
        if let Some(ip) = ip {
            self.glean(out_iface, ip, now);
        }
        frame[0..6].copy_from_slice(&dst_mac);
        frame[6..12].copy_from_slice(&self.router_mac);
        self.counters.routed_flooded.add(1);
        // A tag the frame came with keeps its PCP; the engine gives each tagged copy the
        // VLAN's VID (the ingress VLAN's is still in it) and takes it off the others.
        Verdict::Flood {
            vlan,
            ingress_tagged: tagged,
        }
    }
}

/// ECMP balancing (flowlets, least-loaded choice): building the per-group balancers and
/// reading their counters and events.
impl Forwarder {
    fn balancer_for(
        &self,
        id: u32,
        balance: &crate::tables::flowlet::BalanceSpec,
        group: &EcmpGroup,
        spec: &SwitchSpec,
    ) -> Result<GroupBalancer, ForwarderError> {
        GroupBalancer::new(
            *balance,
            id,
            group,
            &self.member_ports(group),
            u64::from(spec.flow_hash_seed),
            spec.qos.events,
        )
        .map_err(|e| ForwarderError(format!("ECMP group {id}: {e}")))
    }

    /// Each member's egress port, when its nexthop sits on a routed port: a member's load is
    /// its port's. A member behind a VLAN interface has no port of its own.
    pub(super) fn member_ports(&self, group: &EcmpGroup) -> Vec<Option<u16>> {
        group
            .members()
            .iter()
            .map(|m| {
                let nexthop = &self.nexthops[m.id as usize];
                match self.interfaces[usize::from(nexthop.interface)].attachment {
                    Attachment::Port(p) => Some(p),
                    Attachment::Vlan(_) => None,
                }
            })
            .collect()
    }

    /// Lets least-loaded groups see the egress queues (the engine passes the traffic
    /// manager's counters; without it every queue looks empty).
    pub fn set_egress_load(&mut self, view: EgressLoad) {
        self.egress_load = view;
    }

    /// Per group, the members' loads as least-loaded choice reads them now.
    #[cfg(test)]
    pub(crate) fn balancer_loads(&self) -> Vec<Vec<u64>> {
        self.balancers.iter().map(|b| b.load_snapshots()).collect()
    }

    /// Each group's balancing counters, by group id.
    pub fn balance_counters(&self) -> Vec<std::sync::Arc<BalanceCounters>> {
        self.balancers
            .iter()
            .map(|b| std::sync::Arc::clone(b.counters()))
            .collect()
    }

    /// The flowlet moves recorded since the last call (when the spec asks for events), in
    /// time order.
    pub fn take_flowlet_moves(&mut self) -> Vec<FlowletMove> {
        let mut moves: Vec<FlowletMove> = self
            .balancers
            .iter_mut()
            .flat_map(|b| b.take_events())
            .collect();
        moves.sort_by_key(|m| (m.at, m.group));
        moves
    }

    /// Each group's balancing configuration and member ports, by group id.
    pub fn balance_specs(&self) -> Vec<crate::tables::flowlet::BalanceSpec> {
        self.balancers.iter().map(|b| *b.spec()).collect()
    }
}

/// The flow hash of an IPv4 packet (`ip` from its header on, `header_len` checked by the
/// caller to be within `ip`): the ECMP and flowlet key.
#[inline(always)]
fn flow_hash_ipv4(ip: &[u8], header_len: usize, seed: u32) -> u32 {
    let ports = l4_ports(ip, ip[9], header_len, ip[6] & 0x3f != 0 || ip[7] != 0);
    let addresses = ip[12..20].try_into().expect("8 bytes");
    flow_hash_v4_wire(addresses, ip[9], ports, seed)
}

/// The flow hash of an IPv6 packet (`ip` from its header on, at least 40 bytes): source,
/// destination, flow label, next header and the ports right after the fixed header.
#[inline(always)]
fn flow_hash_ipv6(ip: &[u8], seed: u32) -> u32 {
    flow_hash_ipv6_to(ip, ip[24..40].try_into().expect("16 bytes"), true, seed)
}

/// The flow hash of an IPv6 packet once its destination is `dst`, over its ports only when
/// `with_ports` (SRv6 endpoints hash without them, see `srv6::outer_hash`).
#[inline(always)]
fn flow_hash_ipv6_to(ip: &[u8], dst: [u8; 16], with_ports: bool, seed: u32) -> u32 {
    let next = ip[6];
    let ports = if with_ports {
        l4_ports(ip, next, 40, false)
    } else {
        [0; 4]
    };
    let src = ip[8..24].try_into().expect("16 bytes");
    let flow_label = u32::from_be_bytes([0, ip[1] & 0x0f, ip[2], ip[3]]);
    flow_hash_v6_wire(src, &dst, flow_label, next, ports, seed)
}

/// Decrements the hop limit of the IPv6 header, or the TTL of the IPv4 header and updates its
/// checksum (RFC 1624), at the start of `ip` (checked above 1 before).
#[inline(always)]
fn decrement_hop_limit(ip: &mut [u8], ipv6: bool) {
    // One length check for the fields below (both headers are longer).
    let ip: &mut [u8; 12] = (&mut ip[..12]).try_into().expect("12 bytes");
    if ipv6 {
        ip[7] -= 1;
    } else {
        ip[8] -= 1;
        let csum = checksum::after_ttl_decrement([ip[10], ip[11]]);
        ip[10..12].copy_from_slice(&csum);
    }
}

/// Why a routed IPv4 packet with these options (the bytes after the fixed header) is dropped:
/// a Loose or Strict Source and Record Route (`source_route_option`, RFC 7126 4.3 and 4.4:
/// drop by default), or a malformed option list (`bad_ipv4_header`: Linux's
/// `ip_options_compile` fails it and counts a header error). Well-formed lists of other
/// options (Record Route, Timestamp, Router Alert, NOP, End) are forwarded unchanged: the
/// switch neither records its address nor stamps. No ICMP error either way: Linux sends none
/// for a source route it refuses, and the Parameter Problem it sends for a malformed list is
/// left out as for every other malformed header here. Out of line: most routed packets have
/// no options.
#[cold]
#[inline(never)]
fn ipv4_options_drop(options: &[u8]) -> Option<DropReason> {
    match ipv4::scan_options(options) {
        OptionScan::Clean => None,
        OptionScan::SourceRoute => Some(DropReason::SourceRouteOption),
        OptionScan::Malformed => Some(DropReason::BadIpv4Header),
    }
}

/// A routing drop the source is told about: `TtlExpired` gets Time Exceeded, `NoRoute`
/// Destination Unreachable (the slow path builds the error, or suppresses it).
#[inline(always)]
fn router_error(reason: DropReason, in_iface: u16, vrf: u16) -> Verdict {
    let kind = match reason {
        DropReason::TtlExpired => RouterErrorKind::TimeExceeded,
        DropReason::NoRoute => RouterErrorKind::NoRoute,
        other => return Verdict::Drop(other),
    };
    Verdict::DropWithRouterError {
        reason,
        error: RouterError {
            kind,
            interface: in_iface,
            vrf,
        },
    }
}

/// Source and destination ports of TCP/UDP as on the wire, or zeros (other protocols,
/// fragments).
#[inline]
fn l4_ports(ip: &[u8], protocol: u8, offset: usize, fragment: bool) -> [u8; 4] {
    if fragment || (protocol != IP_PROTO_TCP && protocol != IP_PROTO_UDP) {
        return [0; 4];
    }
    match ip.get(offset..offset + 4) {
        Some(p) => [p[0], p[1], p[2], p[3]],
        None => [0; 4],
    }
}

fn is_link_local(addr: &[u8; 16]) -> bool {
    addr[0] == 0xfe && addr[1] & 0xc0 == 0x80
}

/// Whether a multicast frame at `l3` is a neighbour's announcement: an ARP whose sender
/// address is its target (RFC 5227's announcement, request or reply) or a Neighbor
/// Advertisement (ICMPv6 type 136, hop limit 255) to a multicast address. The slow path checks
/// the rest.
fn is_announcement(frame: &[u8], ethertype: u16, l3: usize) -> bool {
    match ethertype {
        ETHERTYPE_ARP => frame
            .get(l3..l3 + 28)
            .is_some_and(|arp| arp[14..18] == arp[24..28]),
        ETHERTYPE_IPV6 => frame.get(l3..l3 + 41).is_some_and(|ip| {
            ip[6] == IP_PROTO_ICMPV6
                && ip[7] == 255
                && ip[24] == 0xff
                && ip[40] == ICMPV6_NEIGHBOR_ADVERT
        }),
        _ => false,
    }
}

/// Whether an IPv4 address with first byte `first` is one no packet may be routed from or to
/// (RFC 1812 5.3.7, 5.3.5.1; this switch routes no multicast): 0/8, 127/8, multicast and class
/// E (224/3, with 255.255.255.255). Two compares, as the express lane's screen makes them.
#[inline(always)]
pub(super) const fn is_martian_v4(first: u8) -> bool {
    !((first.wrapping_sub(1) < 223) & (first != 127))
}

/// Whether an IPv6 address is one no packet may be routed from or to: unspecified or loopback
/// (RFC 4291 2.5.2, 2.5.3), or multicast (2.7; this switch routes no multicast).
#[inline(always)]
pub(super) fn is_martian_v6(address: u128) -> bool {
    (address <= 1) | (address >> 120 == 0xff)
}

/// Whether an IPv6 source address is one no packet may be routed from: `is_martian_v6`, or
/// IPv4-mapped (::ffff:0:0/96), which RFC 4291 2.5.5.2 keeps off the wire and Linux drops
/// on input (`ip6_rcv_core`: `ipv6_addr_v4mapped(&hdr->saddr)`). An IPv4-mapped destination
/// is not martian: Linux checks only the source and routes the destination by its FIB
/// (`ipv6_addr_type` gives it no multicast, loopback or link-local bit, so neither
/// `ip6_route_input` nor `ip6_forward` refuses it), and so does this switch.
#[inline(always)]
pub(super) fn is_martian_v6_source(source: u128) -> bool {
    is_martian_v6(source) | (source >> 32 == 0xffff)
}

/// Why a routed packet is not sent to its nexthop (`Forwarder::resolve_target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unsent {
    /// Dropped for this reason (a neighbour being resolved among them).
    Drop(DropReason),
    /// Longer than the MTU of this egress interface (whether its neighbour is resolved or
    /// not): the caller decides between fragments and an error (`Forwarder::exceeds_mtu`).
    TooBig(u16),
}

impl Unsent {
    /// The reason a packet that gets neither fragments nor an error is counted under.
    fn reason(self) -> DropReason {
        match self {
            Unsent::Drop(reason) => reason,
            Unsent::TooBig(_) => DropReason::MtuExceeded,
        }
    }
}

fn mask4(addr: Ipv4Addr, len: u8) -> Ipv4Addr {
    let bits = u32::from(addr);
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    };
    Ipv4Addr::from(bits & mask)
}

fn mask6(addr: Ipv6Addr, len: u8) -> Ipv6Addr {
    let bits = u128::from(addr);
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    };
    Ipv6Addr::from(bits & mask)
}

/// Ethernet's smallest payload: a shorter packet is padded up to it (to 60 bytes untagged,
/// 64 with an 802.1Q tag, without the FCS).
const MIN_ETHERNET_PAYLOAD: usize = 46;

/// Cuts the routed frame to its IP packet (at `l3`, `packet_len` bytes by its header) where
/// bytes follow it beyond Ethernet's padding, as Linux trims a packet on input: they are no
/// part of the packet, would be sent on with it, and would not count against the egress MTU,
/// which is checked on the packet's length. Returns how many bytes it cut.
#[inline(always)]
fn trim_to_packet(frame: &mut Frame<'_>, l3: usize, packet_len: usize) -> usize {
    let end = l3 + packet_len.max(MIN_ETHERNET_PAYLOAD);
    let cut = frame.len().saturating_sub(end);
    if cut > 0 {
        frame.truncate(end);
    }
    cut
}
