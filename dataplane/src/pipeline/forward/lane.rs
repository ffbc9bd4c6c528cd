//! The express lane: routing for the usual frame of a routed port, a burst at a time.
//!
//! Most frames a leaf or spine routes look alike: untagged, to the router MAC, a plain IPv4
//! or IPv6 header, a route to a resolved neighbour or an ECMP group; on an SRv6 fabric, a
//! frame to one of the switch's End or uN SIDs that takes one step and is routed on. The
//! lane takes those frames through a few short passes over the whole burst, as DPDK's l3fwd
//! and VPP's vector nodes do, so that the FIB's cache misses of one burst overlap and each
//! pass keeps its state in registers:
//!
//! 1. `stage_lane`, pass 1: screen every frame's headers for everything the full pipeline
//!    checks before it resolves a route (`screen`), and prefetch the IPv4 FIB's first-level
//!    entry of each IPv4 frame that passes;
//! 2. `stage_lane`, pass 2: look the routes up (IPv6: after the endpoint's step, for a frame
//!    to a local SID: `ipv6.rs`) and, for an ECMP group, compute the flow hash, and choose
//!    and count a `hash` group's member (its only effect is its counters, which add up the
//!    same in any order). A random-choice flowlet group's member is chosen here too, for an
//!    IPv4 frame every frame before which in the burst is express: its choice reads and
//!    writes only the group's flowlet table and counters, at the burst's one `now`, and pass
//!    2 meets those frames in burst order before pass 3 routes any frame, so each choice is
//!    the one pass 3 would make. A frame whose route is anything but a nexthop or a group
//!    (none, local, connected, blackhole, an SRv6 policy) leaves the lane here. An IPv4
//!    frame of the flow of the frame looked up before it takes what that frame found and
//!    counts to its member, in the same loop (an elephant flow fills whole bursts); an IPv6
//!    frame to where the frame before it goes takes its FIB answer (a policy's flows share
//!    its SIDs);
//! 3. `route_lane`, per frame and in burst order with the frames that take the full pipeline:
//!    apply the endpoint's step, choose any other flowlet or per-packet group's member (this
//!    updates the flowlet table and the loads least-loaded choice reads, so it keeps the
//!    burst's order), rewrite the Ethernet addresses in one copy and decrement the TTL or
//!    hop limit.
//!
//! Passes 1 and 2 read the frames and the tables and count `hash` members; everything else
//! happens in pass 3, in order. The FIB and the groups do not change within a burst in a way
//! the lane could see: updates and link changes land between bursts, and the one change a
//! frame's slow path can make (a connected host's route, when its neighbour resolves) is to
//! destinations whose route was `Connected`, which are not express. A frame the lane does not
//! take goes through the full pipeline as if the lane did not exist; tests hold the lane's
//! verdicts, bytes and counters to the pipeline's.

mod ipv6;

use super::srv6::EndpointStep;
use super::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, Forwarder, IP_PROTO_TCP, IP_PROTO_UDP, NO_PORT, PortMode,
    Verdict, is_martian_v4, route_value,
};
use crate::clock::Picos;
use crate::counters::DropReason;
use crate::dpdk::MAX_BURST;
use crate::pipeline::spec::RouteTarget;
use crate::tables::ecmp::EcmpGroup;
use crate::tables::flowhash::flow_hash_v4_wire;
use crate::tables::flowlet::{GroupBalancer, MemberCounters, PlaceAhead};
use crate::tables::lpm4::Lpm4Lookups;
use crate::wire::checksum;

/// Where an express frame's IP header starts: right after an untagged Ethernet header.
pub const LANE_L3: usize = 14;

/// `Forwarder::route_lane`'s answer when the verdict is not a forward with the tag kept
/// (`Forwarder::lane_verdict` has it). No port has this number (`tm::MAX_PORTS`).
pub const LANE_OTHER: u16 = u16::MAX;

/// The bytes of an express IPv4 frame that the lane reads: Ethernet, a 20-byte IPv4 header
/// and the four bytes where TCP and UDP keep their ports (a shorter frame takes the full
/// pipeline; every 60-byte minimum frame is long enough).
const IPV4_SEEN: usize = LANE_L3 + 20 + 4;

/// The same for IPv6: Ethernet, the 40-byte header and four bytes after it.
const IPV6_SEEN: usize = LANE_L3 + 40 + 4;

/// The lane's state for one RX burst: which frames are express, and what the passes found for
/// each (valid only where the frame's `express` bit is set).
pub struct ExpressLane {
    express: u64,
    /// The VRF the burst was staged in.
    vrf: u16,
    /// Bit i: frame i's member is still to be chosen, in its turn (a flowlet or per-packet
    /// group: `route` and `hash` hold its route and flow hash); else `nexthop` holds where
    /// it goes (a route to a nexthop, or a `hash` group's member, chosen and counted in pass
    /// 2: see `GroupBalancer::hashes_statically`).
    in_turn: u64,
    /// Bit i: frame i is IPv6 (else IPv4).
    ipv6: u64,
    /// Bit i: frame i is IPv6 to local SID `sid[i]`, whose step `step[i]` sends it on to
    /// `destination6[i]`.
    endpoint: u64,
    /// Pass 1: each IPv4 frame's destination.
    destination: [u32; MAX_BURST],
    /// Pass 1: each IPv6 frame's destination; pass 2: where its route was looked up (an
    /// endpoint's next destination).
    destination6: [WireAddr6; MAX_BURST],
    nexthop: [u32; MAX_BURST],
    route: [u32; MAX_BURST],
    hash: [u32; MAX_BURST],
    sid: [u32; MAX_BURST],
    step: [EndpointStep; MAX_BURST],
    /// A burst of IPv4 frames all of one flow to one nexthop (an elephant flow's): that
    /// nexthop, which every frame of the burst takes (`Forwarder::lane_one_flow_egress`).
    one_flow: Option<u32>,
    /// Pass 1: each frame's traffic class, by its DSCP (the in-port's table of classes).
    class: [u8; MAX_BURST],
    /// Pass 2's IPv6 FIB lookups, kept here so that no burst pays for zeroing them.
    lookups6: ipv6::Lookups,
    /// Tests: the frames that took another frame's staging (IPv4) or FIB answer (IPv6).
    #[cfg(test)]
    taken: u64,
}

impl Default for ExpressLane {
    fn default() -> Self {
        ExpressLane {
            express: 0,
            vrf: 0,
            in_turn: 0,
            ipv6: 0,
            endpoint: 0,
            destination: [0; MAX_BURST],
            destination6: [WireAddr6::default(); MAX_BURST],
            nexthop: [0; MAX_BURST],
            route: [0; MAX_BURST],
            hash: [0; MAX_BURST],
            sid: [0; MAX_BURST],
            step: [EndpointStep::Shift; MAX_BURST],
            one_flow: None,
            class: [0; MAX_BURST],
            lookups6: ipv6::Lookups::default(),
            #[cfg(test)]
            taken: 0,
        }
    }
}

impl ExpressLane {
    /// The burst's express frames (bit i: frame i), for [`Forwarder::route_lane`]. The caller
    /// still owes them what the pipeline checks outside the frame's bytes: the in-port up.
    #[inline(always)]
    pub fn express(&self) -> u64 {
        self.express
    }

    /// The traffic class of express frame `index`: what the in-port's table of classes gives
    /// for its DSCP (see `Forwarder::stage_lane`).
    #[inline(always)]
    pub fn class(&self, index: usize) -> u8 {
        self.class[index % MAX_BURST]
    }

    /// Forgets the previous burst: no frame is express.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.express = 0;
        self.one_flow = None;
    }

    /// The burst's express frames whose member pass 3 chooses.
    #[cfg(test)]
    pub(crate) fn in_turn(&self) -> u64 {
        self.in_turn
    }

    /// The burst's express frames that are IPv6 to a local SID whose step the lane applies.
    #[cfg(test)]
    pub(crate) fn endpoints(&self) -> u64 {
        self.express & self.endpoint
    }

    /// The burst's frames that took the staging of the IPv4 frame of their flow before them,
    /// or the FIB answer of the IPv6 frame to their destination before them.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> u64 {
        self.taken
    }
}

/// The indices of the set bits of `mask`, lowest first.
#[inline(always)]
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let index = mask.trailing_zeros() as usize;
        mask &= mask.wrapping_sub(1);
        (index < 64).then_some(index)
    })
}

/// The router MAC as the top 48 bits of a word: what a frame's first eight bytes read as a
/// little-endian word and shifted left by 16 give when they start with it (a shift, not a
/// mask, so that the pass keeps no 48-bit mask in a register).
#[inline(always)]
fn mac_word(mac: [u8; 6]) -> u64 {
    let [a, b, c, d, e, f] = mac;
    u64::from_le_bytes([0, 0, a, b, c, d, e, f])
}

/// An IPv6 address as the frame holds it, its 16 bytes in network order kept in a `u128`:
/// the lane compares, queues, hashes and writes destinations as they are on the wire, so it
/// swaps their bytes only where it computes with them (a uN shift, a SID's prefix).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct WireAddr6(u128);

impl WireAddr6 {
    #[inline(always)]
    pub(super) fn from_bytes(bytes: [u8; 16]) -> WireAddr6 {
        WireAddr6(u128::from_ne_bytes(bytes))
    }

    /// The address in host order (as `u128::from(Ipv6Addr)`).
    #[inline(always)]
    pub(super) fn from_host(address: u128) -> WireAddr6 {
        WireAddr6::from_bytes(address.to_be_bytes())
    }

    #[inline(always)]
    pub(super) fn bytes(self) -> [u8; 16] {
        self.0.to_ne_bytes()
    }

    #[inline(always)]
    pub(super) fn host(self) -> u128 {
        u128::from_be_bytes(self.bytes())
    }
}

/// What pass 1 found of a frame: its destination and its DSCP.
enum Screened {
    Ipv4(u32, u8),
    Ipv6(WireAddr6, u8),
    /// The frame takes the full pipeline.
    Not,
}

/// Pass 1 for one frame received on a routed port: whether it passes every check the
/// pipeline makes before it looks its route up (`Forwarder::process_frame` to `route_ipv4` or
/// `route_ipv6`), with its destination. At most `max_len` bytes (no MTU on the way out can be
/// exceeded: `Forwarder::lane_max_frame`), to the router MAC, untagged, a unicast source MAC
/// that is neither all-zero nor the router MAC; then `express_ipv4_destination` or
/// `express_ipv6_destination`.
#[inline(always)]
fn screen(frame: &[u8], router_mac: u64, max_len: usize) -> Screened {
    // Every express frame is at least as long as an IPv4 one the lane reads (IPv6 needs more,
    // and checks it): one length test covers the Ethernet header too.
    let Some(seen) = frame.first_chunk::<IPV4_SEEN>() else {
        return Screened::Not;
    };
    if frame.len() > max_len {
        return Screened::Not;
    }
    let to_router = u64::from_le_bytes(*seen.first_chunk().expect("8 bytes")) << 16 == router_mac;
    // The source MAC and the EtherType as one little-endian word: the source's group bit is
    // its lowest bit, the EtherType its top 16 bits in wire order (compared as such, without
    // turning it around).
    let source_and_type = u64::from_le_bytes(*seen[6..].first_chunk().expect("8 bytes"));
    let source = source_and_type << 16;
    let bad_source = (source_and_type & 1 != 0) | (source == 0) | (source == router_mac);
    if !to_router | bad_source {
        return Screened::Not;
    }
    const IPV4_ON_WIRE: u16 = u16::from_le_bytes(ETHERTYPE_IPV4.to_be_bytes());
    const IPV6_ON_WIRE: u16 = u16::from_le_bytes(ETHERTYPE_IPV6.to_be_bytes());
    match (source_and_type >> 48) as u16 {
        IPV4_ON_WIRE => match express_ipv4_destination(frame.len(), seen) {
            Some(destination) => Screened::Ipv4(destination, frame[LANE_L3 + 1] >> 2),
            None => Screened::Not,
        },
        IPV6_ON_WIRE => match express_ipv6_destination(frame) {
            // The traffic class spans the first two bytes' nibbles.
            Some(destination) => Screened::Ipv6(
                destination,
                (frame[LANE_L3] << 4 | frame[LANE_L3 + 1] >> 4) >> 2,
            ),
            None => Screened::Not,
        },
        _ => Screened::Not,
    }
}

/// The destination of an IPv4 frame of `len` bytes whose first bytes are `seen`, with
/// version 4 and a 20-byte header (options take the full pipeline), a total length from 20 to
/// what the frame holds (no bytes after the packet but padding: `ends_at_packet`), a valid header checksum and a TTL above 1 (the addresses are
/// screened once per flow in pass 2).
#[inline(always)]
fn express_ipv4_destination(len: usize, seen: &[u8; IPV4_SEEN]) -> Option<u32> {
    let ip: &[u8; 20] = seen[LANE_L3..].first_chunk()?;
    let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // One combined test: every frame of a routed burst passes them all. 20 <= total_len <=
    // len - 14 as one unsigned comparison (`len` is at least `IPV4_SEEN`).
    let express = (ip[0] == 0x45)
        & (ip[8] > 1)
        & (total_len.wrapping_sub(20) <= len - LANE_L3 - 20)
        & ends_at_packet(len, LANE_L3 + total_len);
    (express && checksum::ipv4_header_sums_to_ones(ip))
        .then(|| u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]))
}

/// Whether an IPv4 address with this first byte may take the lane: not one of those no packet
/// is routed from or to (`is_martian_v4`), which the full pipeline drops. One load each for
/// source and destination, where compares cost twice as many instructions.
const LANE_IPV4_FIRST_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = !is_martian_v4(byte as u8);
        byte += 1;
    }
    table
};

/// Whether an IPv6 address with this first byte may take the lane: not in ::/8 (::, ::1, the
/// IPv4-mapped ::ffff:0:0/96 and the reserved rest), fe00::/8 (link-local fe80::/10 among it)
/// or ff00::/8 (multicast). The full pipeline decides for those: it drops the martian
/// (`is_martian_v6`, and as sources `is_martian_v6_source`) and link-local ones and routes
/// the others. No address the pipeline drops may pass this table (the lane tests check it).
const LANE_IPV6_FIRST_BYTE: [bool; 256] = {
    let mut table = [true; 256];
    table[0x00] = false;
    table[0xfe] = false;
    table[0xff] = false;
    table
};

/// Whether a frame of `len` bytes whose IP packet ends at `packet_end` has no bytes after
/// the packet but Ethernet's padding: the full pipeline cuts any others (`trim_to_packet`),
/// so a frame with them is left to it.
#[inline(always)]
fn ends_at_packet(len: usize, packet_end: usize) -> bool {
    len <= packet_end.max(LANE_L3 + super::MIN_ETHERNET_PAYLOAD)
}

/// The destination of an IPv6 frame with version 6, its payload within the frame (and no
/// bytes after it but padding), both
/// addresses outside ::/8, fe00::/8 and ff00::/8 (`LANE_IPV6_FIRST_BYTE`) and a hop limit
/// above 1.
#[inline(always)]
fn express_ipv6_destination(frame: &[u8]) -> Option<WireAddr6> {
    let seen: &[u8; IPV6_SEEN] = frame.first_chunk()?;
    let ip: &[u8; 40] = seen[LANE_L3..].first_chunk()?;
    let payload_len = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    let destination = WireAddr6::from_bytes(*ip[24..].first_chunk().expect("16 bytes"));
    let express = (ip[0] >> 4 == 6)
        & (40 + payload_len <= frame.len() - LANE_L3)
        & ends_at_packet(frame.len(), LANE_L3 + 40 + payload_len)
        & LANE_IPV6_FIRST_BYTE[usize::from(ip[8])]
        & LANE_IPV6_FIRST_BYTE[usize::from(ip[24])]
        & (ip[7] > 1);
    express.then_some(destination)
}

/// The flow hash of an express IPv4 frame (`Forwarder::flow_hash_ipv4` of its 20-byte
/// header), from the bytes pass 1 checked are there: the ports count for TCP and UDP when
/// the frame is not a fragment.
#[inline(always)]
fn ipv4_flow_hash(seen: &[u8; IPV4_SEEN], seed: u32) -> u32 {
    let ip = &seen[LANE_L3..];
    let protocol = ip[9];
    let whole = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff == 0;
    let ports = if whole && (protocol == IP_PROTO_TCP || protocol == IP_PROTO_UDP) {
        [ip[20], ip[21], ip[22], ip[23]]
    } else {
        [0; 4]
    };
    let addresses = *ip[12..].first_chunk().expect("8 bytes");
    flow_hash_v4_wire(addresses, protocol, ports, seed)
}

/// Whether two express IPv4 frames to the same destination look up and hash alike: the same
/// source, protocol, fragment bits and the four bytes after the header (TCP and UDP ports).
#[inline(always)]
fn same_ipv4_flow(a: &[u8], b: &[u8]) -> bool {
    a.first_chunk::<IPV4_SEEN>()
        .is_some_and(|a| same_flow_as(a, b))
}

/// `same_ipv4_flow` with the first frame's bytes known to be there.
#[inline(always)]
fn same_flow_as(head: &[u8; IPV4_SEEN], frame: &[u8]) -> bool {
    let Some(frame) = frame.first_chunk::<IPV4_SEEN>() else {
        return false;
    };
    let word =
        |f: &[u8; IPV4_SEEN], at: usize| u64::from_le_bytes(*f[at..].first_chunk().expect("8"));
    let ports =
        |f: &[u8; IPV4_SEEN]| u32::from_le_bytes(*f[LANE_L3 + 20..].first_chunk().expect("4"));
    // Bytes 4-11 of the header: the MF bit and fragment offset, the protocol; then the
    // source and destination; then the ports.
    const FRAGMENT_AND_PROTOCOL: u64 = 0x0000_ff00_ff3f_0000;
    (word(head, LANE_L3 + 4) ^ word(frame, LANE_L3 + 4)) & FRAGMENT_AND_PROTOCOL
        | word(head, LANE_L3 + 12) ^ word(frame, LANE_L3 + 12)
        | u64::from(ports(head) ^ ports(frame))
        == 0
}

/// Pass 3 for a frame of a burst of one flow whose egress `Forwarder::lane_one_flow_egress`
/// gave: what `Forwarder::route_lane` does to it (the addresses, the TTL and the checksum).
#[inline(always)]
pub fn route_one_flow(frame: &mut [u8], addresses: &[u8; 12]) {
    if let Some(header) = frame.first_chunk_mut::<{ LANE_L3 + 12 }>() {
        header[..12].copy_from_slice(addresses);
        super::decrement_hop_limit(&mut header[LANE_L3..], false);
    }
}

/// The group of the frame looked up before, kept to skip finding it again.
#[derive(Clone, Copy)]
struct LastGroup<'a> {
    group: u32,
    balancer: &'a GroupBalancer,
    ecmp: &'a EcmpGroup,
}

/// What pass 2 found for a frame.
#[derive(Clone, Copy)]
enum Staged<'a> {
    /// Not express: the frame takes the full pipeline.
    Not,
    /// A route to nexthop `id`.
    Nexthop(u32),
    /// A `hash` group's member, nexthop `id` (chosen and counted), with its counters (where
    /// the frames of the flow that repeat this frame count).
    Hashed {
        id: u32,
        member: Option<&'a MemberCounters>,
    },
    /// A flowlet or per-packet group's route and the frame's flow hash.
    InTurn { route: u32, hash: u32 },
}

impl Forwarder {
    /// The VRF of a routed port, whose bursts the express lane stages; `None` for any other
    /// port (the lane only takes untagged frames of routed ports).
    #[inline]
    pub fn lane_vrf(&self, in_port: u16) -> Option<u16> {
        match self.ports.get(usize::from(in_port)).map(|p| &p.mode) {
            Some(PortMode::Routed { interface }) => {
                let vrf = self.interfaces.get(usize::from(*interface))?.vrf;
                let vrf_index = usize::from(vrf);
                (vrf_index < self.fib4.len() && vrf_index < self.fib6.len()).then_some(vrf)
            }
            _ => None,
        }
    }

    /// Passes 1 and 2 of the lane over one RX burst (`frames`, at most `MAX_BURST`, from
    /// `MbufBurst::whole_frames`) received on a routed port of `vrf` (`Self::lane_vrf`).
    /// Reads the frames and the tables; counts the members that `hash` groups choose; gives
    /// each express frame its traffic class from its DSCP by `classes` (the in-port's
    /// `qos::classify::untagged_ip_classes`). Returns the express frames (also
    /// `ExpressLane::express`). `now` is the time pass 3 will route the burst at: the
    /// flowlet groups that place ahead choose at it in pass 2.
    pub fn stage_lane(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        vrf: u16,
        classes: &[u8; 64],
        now: Picos,
    ) -> u64 {
        let frames = &frames[..frames.len().min(MAX_BURST)];
        let Some(fib) = self.fib4.get(usize::from(vrf)) else {
            lane.clear();
            return 0;
        };
        let fib = fib.lookups();
        let (ipv4, ipv6) = self.screen_burst(lane, frames, &fib, classes);
        #[cfg(test)]
        {
            lane.taken = 0;
        }
        let (mut express, mut in_turn) = self.stage_ipv4(lane, frames, &fib, ipv4, now);
        (lane.endpoint, lane.vrf) = (0, vrf);
        if ipv6 != 0 {
            let (express6, in_turn6) = self.stage_ipv6(lane, frames, vrf, ipv6);
            express |= express6;
            in_turn |= in_turn6;
        }
        if in_turn != 0 {
            in_turn = self.place_least_loaded_ahead(lane, frames, express, in_turn, ipv6, now);
        }
        (lane.express, lane.in_turn, lane.ipv6) = (express, in_turn, ipv6);
        express
    }

    /// Pass 2's least-loaded choices, after its loop: the frames of `in_turn` (of `express`,
    /// staged in `lane` with their route and hash) of least-loaded flowlet groups that place
    /// ahead, in burst order, each while every frame before it is express and the group's
    /// loads read as pass 3 would read them (`GroupBalancer::may_place_least_loaded`: pass 3
    /// reads them at the instant's first choice, after the frames before it went to their
    /// queues). The first frame of such a group that may not, or the first IPv6 frame in turn
    /// (pass 3 routes those), stops them: it and every later one choose in turn, in order.
    /// Frames of other groups stay in turn (their choices read nothing a least-loaded choice
    /// writes). Returns the frames left in turn. A pass of its own, out of line: in pass 2's
    /// loop the choice's call moved the registers of the loop every mode takes (hashing
    /// 545.5 instructions a frame against 541.6).
    #[inline(never)]
    fn place_least_loaded_ahead(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        express: u64,
        mut in_turn: u64,
        ipv6: u64,
        now: Picos,
    ) -> u64 {
        // The frames before the first that is not express, and before the first IPv6 frame
        // in turn, are the ones that may be chosen here.
        let stop = (!express)
            .trailing_zeros()
            .min((in_turn & ipv6).trailing_zeros());
        let may = u64::MAX.checked_shr(64 - stop).unwrap_or(0);
        // The route of the frame before and its group, when that places least-loaded
        // choices ahead (a burst's frames mostly share one route).
        let mut last: Option<(u32, &GroupBalancer, &EcmpGroup)> = None;
        for index in bits(in_turn & may) {
            let Some(frame) = frames.get(index) else {
                break;
            };
            let route = lane.route[index % MAX_BURST];
            let (balancer, ecmp) = match last {
                Some((seen, balancer, ecmp)) if seen == route => (balancer, ecmp),
                _ => {
                    let Some((balancer, ecmp)) = self.least_loaded_ahead_group(route) else {
                        continue;
                    };
                    last = Some((route, balancer, ecmp));
                    (balancer, ecmp)
                }
            };
            if !balancer.may_place_least_loaded(now, index == 0) {
                break;
            }
            let (hash, len) = (lane.hash[index % MAX_BURST], frame.len() as u32);
            match balancer.place_flowlet_least_loaded(ecmp, hash, len, now, &self.egress_load) {
                Some(id) if self.sends_express(id) => {
                    lane.nexthop[index % MAX_BURST] = id;
                    in_turn &= !(1 << index);
                }
                Some(id) => {
                    // Chosen again in turn (the flowlet it started goes on), which counts the
                    // frame where it leaves; so do the frames after it.
                    balancer.unplace(id, len);
                    break;
                }
                // No live member: in turn, where the lane drops it (as the pipeline would).
                None => break,
            }
        }
        in_turn
    }

    /// Pass 1 over `frames`: the IPv4 and the IPv6 frames the lane may take (bit i: frame
    /// i), each with its destination (its first-level FIB entry prefetched, for IPv4) and
    /// traffic class in the lane. Out of line: inlined, its loop shared the registers of the
    /// function with pass 2's, and a change to either moved the other's spills.
    #[inline(never)]
    fn screen_burst(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        fib: &Lpm4Lookups<'_>,
        classes: &[u8; 64],
    ) -> (u64, u64) {
        let frames = &frames[..frames.len().min(MAX_BURST)];
        let router_mac = mac_word(self.router_mac);
        let max_len = self.lane_max_frame;
        let (mut ipv4, mut ipv6) = (0u64, 0u64);
        for (index, frame) in frames.iter().enumerate() {
            match screen(frame, router_mac, max_len) {
                Screened::Ipv4(destination, dscp) => {
                    fib.prefetch(destination);
                    lane.destination[index] = destination;
                    lane.class[index] = classes[usize::from(dscp & 63)];
                    ipv4 |= 1 << index;
                }
                Screened::Ipv6(destination, dscp) => {
                    lane.destination6[index] = destination;
                    lane.class[index] = classes[usize::from(dscp & 63)];
                    ipv6 |= 1 << index;
                }
                Screened::Not => {}
            }
        }
        (ipv4, ipv6)
    }

    /// The group of `route` and its members, when it is a least-loaded flowlet group that
    /// places its choices ahead (`place_least_loaded_ahead`).
    fn least_loaded_ahead_group(&self, route: u32) -> Option<(&GroupBalancer, &EcmpGroup)> {
        let RouteTarget::Group(group) = route_value::decode(route) else {
            return None;
        };
        let balancer = self.balancers.get(group as usize)?;
        (balancer.places_ahead() == PlaceAhead::LeastLoaded)
            .then_some((balancer, self.groups.get(group as usize)?))
    }

    /// Pass 2 for the burst's IPv4 frames (`candidates`): each frame's route, hash and `hash`
    /// member, found once for a run of frames of one flow (an elephant flow fills whole
    /// bursts): a frame of the flow of the frame looked up before it repeats what that frame
    /// found, and counts to its member. Returns the express and in-turn frames.
    ///
    /// A flowlet group that places ahead (`GroupBalancer::places_ahead`) chooses here for a
    /// frame every frame before which is express, so that no frame the full pipeline takes
    /// (one pass 1 or this pass turned away: a frame of an SRv6 policy, for one, is routed
    /// again once encapsulated, perhaps by the same group) comes before it: those choices
    /// come in burst order, before any other of the burst, as in pass 3. Later frames choose
    /// in turn; the repeats of a flow placed ahead only count (at one `now` a flow's later
    /// frames go on in its flowlet, whoever touched the entry in between).
    #[inline(always)]
    fn stage_ipv4(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        fib: &Lpm4Lookups<'_>,
        candidates: u64,
        now: Picos,
    ) -> (u64, u64) {
        lane.one_flow = None;
        let whole_burst = u64::MAX >> (64 - frames.len().clamp(1, 64));
        if candidates == whole_burst
            && let Some(found) = self.stage_one_flow(lane, frames, fib, now)
        {
            return found;
        }
        let seed = self.flow_hash_seed;
        let (mut express, mut in_turn) = (0u64, 0u64);
        // The frame looked up last: its destination and index (its staging is in the lane's
        // arrays and masks), and the counters of its `hash` or placed member. Kept as an
        // index rather than the frame and its staging: four registers fewer across the loop.
        let (mut head_to, mut head) = (0u32, usize::MAX);
        let mut head_member: Option<&MemberCounters> = None;
        for index in bits(candidates) {
            let (destination, frame) = (lane.destination[index], frames[index]);
            if head_to == destination
                && let Some(first) = frames.get(head)
                && same_ipv4_flow(first, frame)
            {
                #[cfg(test)]
                {
                    lane.taken |= 1 << index;
                }
                if express & (1 << head) == 0 {
                    continue;
                }
                if in_turn & (1 << head) != 0 {
                    lane.route[index] = lane.route[head];
                    lane.hash[index] = lane.hash[head];
                    in_turn |= 1 << index;
                } else {
                    lane.nexthop[index] = lane.nexthop[head];
                    if let Some(member) = head_member {
                        member.count(1, frame.len() as u32);
                    }
                }
                express |= 1 << index;
                continue;
            }
            // A frame may be placed ahead when every frame before it is express (tested only
            // for a group that places ahead: by instruction counts, a loop-carried flag cost
            // the hash path 9 to 13 instructions a frame, a second loop 17, this 4). Frames
            // come in order, so `express` holds only frames before this one, and all of them
            // are express when it counts `index` frames: one popcount, not a mask built.
            let ahead = move || (express.count_ones() as usize == index).then_some(now);
            let staged = self.stage_ipv4_frame(fib, destination, frame, seed, ahead);
            (head_to, head, head_member) = (destination, index, None);
            match staged {
                Staged::Not => continue,
                Staged::Nexthop(id) => lane.nexthop[index] = id,
                Staged::Hashed { id, member } => {
                    lane.nexthop[index] = id;
                    head_member = member;
                }
                Staged::InTurn { route, hash } => {
                    lane.route[index] = route;
                    lane.hash[index] = hash;
                    in_turn |= 1 << index;
                }
            }
            express |= 1 << index;
        }
        (express, in_turn)
    }

    /// Pass 2 for a burst of IPv4 frames (every frame a candidate) of one flow, an elephant
    /// flow's: the first frame looked up, and what it found taken by all; `one_flow` set
    /// when that is a nexthop. `None` when the burst holds another flow. Out of line: inlined,
    /// it crowds the registers of the loop that every other burst takes.
    #[inline(never)]
    fn stage_one_flow(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        fib: &Lpm4Lookups<'_>,
        now: Picos,
    ) -> Option<(u64, u64)> {
        let (first, rest) = frames.split_first()?;
        let head = first.first_chunk::<IPV4_SEEN>()?;
        let n = frames.len().min(MAX_BURST);
        let destination = lane.destination[0];
        let mut bytes = 0u32;
        for (frame, &to) in rest.iter().zip(&lane.destination[1..n]) {
            if to != destination || !same_flow_as(head, frame) {
                return None;
            }
            bytes += frame.len() as u32;
        }
        let all = u64::MAX >> (64 - n);
        #[cfg(test)]
        {
            lane.taken = all & !1;
        }
        let seed = self.flow_hash_seed;
        match self.stage_ipv4_frame(fib, destination, first, seed, || Some(now)) {
            Staged::Not => Some((0, 0)),
            Staged::Nexthop(id) => {
                lane.nexthop[..n].fill(id);
                lane.one_flow = Some(id);
                Some((all, 0))
            }
            Staged::Hashed { id, member } => {
                if let Some(member) = member {
                    member.count(rest.len() as u32, bytes);
                }
                lane.nexthop[..n].fill(id);
                lane.one_flow = Some(id);
                Some((all, 0))
            }
            Staged::InTurn { route, hash } => {
                lane.route[..n].fill(route);
                lane.hash[..n].fill(hash);
                Some((all, all))
            }
        }
    }

    /// Pass 2 for one IPv4 frame (`destination`'s first-level FIB entry prefetched): its
    /// route, and for a group its flow hash and, in `hash` mode, its member (counted).
    /// `ahead` is the time to choose at in a flowlet group that places ahead, if the frame may
    /// (see `stage_route`). The group is found afresh for each frame: kept across the loop,
    /// as IPv6's pass does, its three words spilled the loop's registers (by instruction
    /// counts, hashing at 8192 flows 544.6 with it, 543.4 without; random flowlets 637.5,
    /// 635.4).
    #[inline(always)]
    fn stage_ipv4_frame<'a>(
        &'a self,
        fib: &Lpm4Lookups<'_>,
        destination: u32,
        frame: &[u8],
        seed: u32,
        ahead: impl FnOnce() -> Option<Picos>,
    ) -> Staged<'a> {
        let Some(seen) = frame.first_chunk::<IPV4_SEEN>() else {
            return Staged::Not;
        };
        // Addresses no packet is routed from or to: the full pipeline's drops. Checked here,
        // once per flow (the frames of a flow that follow share its staging), not per frame.
        let ip = &seen[LANE_L3..];
        if !(LANE_IPV4_FIRST_BYTE[usize::from(ip[12])] & LANE_IPV4_FIRST_BYTE[usize::from(ip[16])])
        {
            return Staged::Not;
        }
        let Some(route) = fib.lookup(destination) else {
            return Staged::Not;
        };
        self.stage_route(
            route,
            || ipv4_flow_hash(seen, seed),
            frame.len(),
            &mut None,
            ahead,
        )
    }

    /// What pass 2 makes of a frame of `len` bytes routed by `route` (`route_value`), whose
    /// flow hash `hash` computes. A `hash` group's member is chosen and counted here; so is a
    /// flowlet group's when it places ahead and `ahead` gives the time to choose at (the
    /// caller's word that every choice before the frame's in the burst was made here, in
    /// order); any other group's is chosen in turn.
    #[inline(always)]
    fn stage_route<'a>(
        &'a self,
        route: u32,
        hash: impl FnOnce() -> u32,
        len: usize,
        last: &mut Option<LastGroup<'a>>,
        ahead: impl FnOnce() -> Option<Picos>,
    ) -> Staged<'a> {
        match route_value::decode(route) {
            RouteTarget::Nexthop(id) => Staged::Nexthop(id),
            RouteTarget::Group(group) => {
                let hash = hash();
                let cached = match *last {
                    Some(cached) if cached.group == group => cached,
                    _ => {
                        let (Some(balancer), Some(ecmp)) = (
                            self.balancers.get(group as usize),
                            self.groups.get(group as usize),
                        ) else {
                            return Staged::Not;
                        };
                        let cached = LastGroup {
                            group,
                            balancer,
                            ecmp,
                        };
                        *last = Some(cached);
                        cached
                    }
                };
                let LastGroup { balancer, ecmp, .. } = cached;
                let placed = if balancer.hashes_statically() {
                    balancer.place_by_hash(ecmp, hash, len as u32)
                } else if balancer.places_ahead() == PlaceAhead::Random
                    && let Some(now) = ahead()
                {
                    balancer.place_flowlet_random(ecmp, hash, len as u32, now)
                } else {
                    balancer.prefetch_slot(hash);
                    return Staged::InTurn { route, hash };
                };
                // No live member: the full pipeline drops the frame.
                match placed {
                    Some((id, member)) if self.sends_express(id) => Staged::Hashed { id, member },
                    Some((id, _)) => {
                        // The full pipeline places it again, and counts it where it leaves.
                        balancer.uncount(id, len as u32);
                        Staged::Not
                    }
                    None => Staged::Not,
                }
            }
            // No route, local, connected, blackhole, an SRv6 policy: the full pipeline.
            _ => Staged::Not,
        }
    }

    /// Pass 3 for express frame `index` of the lane's burst (`frame`, its only segment):
    /// decides exactly as [`Self::process_frame`] would, skipping what the passes did. The
    /// usual verdict, a forward with the tag kept to a port that is up, comes back as its
    /// port; any other as [`LANE_OTHER`], with the verdict for [`Self::lane_verdict`] (two
    /// words of verdict cost the per-frame path a pack and an unpack).
    #[inline(always)]
    pub fn route_lane(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        frame: &mut [u8],
        now: Picos,
    ) -> u16 {
        debug_assert!(index < MAX_BURST && lane.express >> index & 1 != 0);
        let index = index % MAX_BURST;
        let ipv6 = lane.ipv6 >> index & 1 != 0;
        if ipv6 && lane.endpoint >> index & 1 != 0 {
            return self.route_lane_endpoint(lane, index, frame, now);
        }
        #[cfg(debug_assertions)]
        self.check_lane(lane, index, frame);
        let Some(nexthop_id) = self.lane_nexthop(lane, index, frame.len(), now) else {
            return self.lane_other(Verdict::Drop(DropReason::EcmpNoLiveMember));
        };
        self.route_lane_to(lane, index, frame, nexthop_id, ipv6, now)
    }

    /// The family of every express frame of the lane's burst when pass 2 found each one's
    /// nexthop (no endpoint step, no member to choose in turn): `Some(true)` for IPv6. Then
    /// pass 3 may take [`Self::lane_plain_nexthop`] for all of them, without those tests.
    #[inline]
    pub fn lane_plain_family(&self, lane: &ExpressLane) -> Option<bool> {
        if lane.in_turn != 0 || lane.endpoint != 0 {
            return None;
        }
        match lane.ipv6 & lane.express {
            0 => Some(false),
            ipv6 if ipv6 == lane.express => Some(true),
            _ => None,
        }
    }

    /// Whether every express frame of the lane's burst is IPv6 to a local SID (pass 2 found
    /// its step): pass 3 may then take [`Self::route_lane_endpoint`] for each, without
    /// `route_lane`'s tests of the family and the step.
    #[inline]
    pub fn lane_all_endpoints(&self, lane: &ExpressLane) -> bool {
        lane.endpoint == lane.express && lane.express != 0
    }

    /// The nexthop pass 2 found for express frame `index` (`frame`) of a burst of
    /// [`Self::lane_plain_family`] `ipv6`: pass 3 then takes [`Self::route_lane_to`] for it,
    /// as `route_lane` would after its tests.
    #[inline(always)]
    pub fn lane_plain_nexthop(
        &self,
        lane: &ExpressLane,
        index: usize,
        frame: &[u8],
        ipv6: bool,
    ) -> u32 {
        debug_assert_eq!(self.lane_plain_family(lane), Some(ipv6));
        debug_assert!(index < MAX_BURST && lane.express >> index & 1 != 0);
        #[cfg(debug_assertions)]
        self.check_lane(lane, index, frame);
        #[cfg(not(debug_assertions))]
        let _ = frame;
        lane.nexthop[index % MAX_BURST]
    }

    /// The rest of `route_lane` for express frame `index` once its nexthop is known (`ipv6`:
    /// the frame's family).
    #[inline(always)]
    pub fn route_lane_to(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        frame: &mut [u8],
        nexthop_id: u32,
        ipv6: bool,
        now: Picos,
    ) -> u16 {
        let Some(header) = frame.first_chunk_mut::<{ LANE_L3 + 12 }>() else {
            unreachable!("express frames hold an IP header");
        };
        if let Some((port, addresses)) = self.express_egress(nexthop_id) {
            header[..12].copy_from_slice(addresses);
            super::decrement_hop_limit(&mut header[LANE_L3..], ipv6);
            return port;
        }
        if nexthop_id as usize >= self.nexthops.len() {
            return self.lane_other(Verdict::Drop(DropReason::NeighborUnresolved));
        }
        // The pipeline checks the egress MTU before the neighbour (`resolve_target`); an
        // express frame is within every interface's MTU (`lane_max_frame`), so the neighbour
        // decides alone here.
        debug_assert!(
            self.fits_every_mtu(frame.len()),
            "express frame over an MTU"
        );
        let verdict = match self.resolved_nexthop(nexthop_id, now) {
            Ok((out_iface, dst_mac)) => {
                self.send_routed(frame, LANE_L3, ipv6, false, out_iface, dst_mac, now)
            }
            Err(reason) => Verdict::Drop(reason),
        };
        self.uncount_unsent(lane, index, nexthop_id, frame.len(), verdict);
        self.lane_other(verdict)
    }

    /// A frame whose member was chosen in its turn (and counted) and that did not leave
    /// (neither forwarded nor flooded in the member's VLAN): its count is taken back, as the
    /// full pipeline does. (Members placed in pass 2, `hash` members and flowlet members
    /// placed ahead, are placed there only when the frame leaves by the express path.)
    #[cold]
    pub(super) fn uncount_unsent(
        &self,
        lane: &ExpressLane,
        index: usize,
        nexthop_id: u32,
        len: usize,
        verdict: Verdict,
    ) {
        let left = matches!(verdict, Verdict::Forward { .. } | Verdict::Flood { .. });
        if lane.in_turn >> index & 1 != 0 && !left {
            let target = route_value::decode(lane.route[index % MAX_BURST]);
            self.uncount_member(target, nexthop_id, len as u32);
        }
    }

    /// Whether a frame to `nexthop_id` leaves by the express path's copy of its addresses:
    /// a routed port, the neighbour's MAC known.
    #[inline(always)]
    fn sends_express(&self, nexthop_id: u32) -> bool {
        self.nexthops
            .get(nexthop_id as usize)
            .is_some_and(|n| n.express_port != NO_PORT)
    }

    /// Where a burst of one flow that `stage_lane` sent to one nexthop (`ExpressLane`'s
    /// `one_flow`) leaves, when by the express path: the port and the 12 address bytes every
    /// frame of it takes (`route_one_flow`). `None` for any other burst: each of its express
    /// frames takes `route_lane`. Valid until the next burst is staged (nothing else changes
    /// the nexthops or the ports' links while a burst goes through pass 3).
    #[inline]
    pub fn lane_one_flow_egress(&self, lane: &ExpressLane) -> Option<(u16, [u8; 12])> {
        let (port, addresses) = self.express_egress(lane.one_flow?)?;
        Some((port, *addresses))
    }

    /// The port a frame to nexthop `nexthop_id` leaves by with the nexthop's 12 address bytes
    /// alone, and those bytes: what `egress_l2` does for an untagged frame to a routed port
    /// that is up, the neighbour's MAC known, in one copy. `None` for any other nexthop.
    #[inline(always)]
    fn express_egress(&self, nexthop_id: u32) -> Option<(u16, &[u8; 12])> {
        let nexthop = self.nexthops.get(nexthop_id as usize)?;
        let port = nexthop.express_port;
        (port != NO_PORT && self.ports_up >> (port % 64) & 1 != 0)
            .then_some((port, &nexthop.addresses))
    }

    /// The nexthop of express frame `index` (`len` bytes): pass 2's, or a flowlet or
    /// per-packet group's member chosen now; `None` when the group has no live member.
    #[inline(always)]
    fn lane_nexthop(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        len: usize,
        now: Picos,
    ) -> Option<u32> {
        if lane.in_turn >> index & 1 == 0 {
            return lane.nexthop.get(index).copied();
        }
        let (route, hash) = (lane.route[index % MAX_BURST], lane.hash[index % MAX_BURST]);
        let RouteTarget::Group(group) = route_value::decode(route) else {
            unreachable!("only groups choose in turn");
        };
        let g = group as usize;
        let (balancer, ecmp) = (self.balancers.get_mut(g)?, self.groups.get(g)?);
        balancer
            .select_member(ecmp, hash, len as u32, now, &self.egress_load)
            .map(|(id, _)| id)
    }

    /// Whether a frame of `len` bytes (from its Ethernet header) fits the MTU of every
    /// interface, as express frames do (the pipeline's egress MTU check, which comes before
    /// the neighbour's, never refuses them). For debug assertions.
    pub(super) fn fits_every_mtu(&self, len: usize) -> bool {
        (0..self.interfaces.len() as u16)
            .all(|iface| !self.exceeds_mtu_of(iface, len.saturating_sub(LANE_L3)))
    }

    /// Keeps a verdict of `route_lane` other than a plain forward for `lane_verdict`.
    #[cold]
    fn lane_other(&mut self, verdict: Verdict) -> u16 {
        self.lane_verdict = verdict;
        LANE_OTHER
    }

    /// The verdict behind the last `LANE_OTHER` that `route_lane` returned.
    #[inline]
    pub fn lane_verdict(&self) -> Verdict {
        self.lane_verdict
    }

    /// Debug builds: what the passes found for frame `index` is what the frame's own lookup
    /// and hash give.
    #[cfg(debug_assertions)]
    fn check_lane(&self, lane: &ExpressLane, index: usize, frame: &[u8]) {
        if lane.ipv6 >> index & 1 != 0 {
            return self.check_lane_ipv6(lane, index, frame);
        }
        let found = frame
            .first_chunk()
            .and_then(|seen| express_ipv4_destination(frame.len(), seen));
        assert_eq!(found, Some(lane.destination[index]), "lane destination");
        let hash = super::flow_hash_ipv4(&frame[LANE_L3..], 20, self.flow_hash_seed);
        let seen = frame.first_chunk().expect("express frames are long enough");
        assert_eq!(ipv4_flow_hash(seen, self.flow_hash_seed), hash, "lane hash");
        if lane.in_turn >> index & 1 != 0 {
            assert_eq!(lane.hash[index], hash, "lane hash");
        }
    }
}
