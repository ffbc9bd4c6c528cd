//! The express lane: routing for the usual frame of a routed port, a burst at a time.
//!
//! Most frames a leaf or spine routes look alike: untagged, to the router MAC, a plain IPv4
//! header (or IPv6 with no extension header the switch must read), a route to a resolved
//! neighbour or an ECMP group. The lane takes those frames through a few short passes over the
//! whole burst, as DPDK's l3fwd and VPP's vector nodes do, so that the FIB's cache misses of
//! one burst overlap and each pass keeps its state in registers:
//!
//! 1. `stage_lane`, pass 1: screen every frame's headers for everything the full pipeline
//!    checks before it resolves a route (see `express_ipv4_destination`), and prefetch the
//!    FIB's first-level entry of each frame that passes;
//! 2. `stage_lane`, pass 2: look the routes up and, for an ECMP group, compute the flow hash
//!    (and prefetch the group's flowlet slot). A frame whose route is anything but a nexthop
//!    or a group (none, local, connected, blackhole, an SRv6 policy) leaves the lane here;
//! 3. `route_lane`, per frame and in burst order with the frames that take the full pipeline:
//!    choose the group's member (this counts and updates flowlets, so it keeps the burst's
//!    order), rewrite the Ethernet addresses in one copy and decrement the TTL.
//!
//! Passes 1 and 2 only read (frames and FIB); whatever has side effects happens in pass 3, in
//! order. The FIB does not change within a burst in a way the lane could see: updates land
//! between bursts, and the one change a frame's slow path can make (a connected host's route,
//! when its neighbour resolves) is to destinations whose route was `Connected`, which are not
//! express. A frame the lane does not take goes through the full pipeline as if the lane did
//! not exist; a test holds the lane's verdicts and bytes to the pipeline's.

use super::{ETHERTYPE_IPV4, Forwarder, NO_PORT, PortMode, TagOp, Verdict, route_value};
use crate::clock::Picos;
use crate::counters::DropReason;
use crate::dpdk::MAX_BURST;
use crate::pipeline::spec::RouteTarget;
use crate::tables::lpm4::Lpm4Lookups;
use crate::wire::checksum;

/// Where an express frame's IP header starts: right after an untagged Ethernet header.
pub const LANE_L3: usize = 14;

/// The bytes of an express IPv4 frame that the lane reads: Ethernet, a 20-byte IPv4 header
/// and the four bytes where TCP and UDP keep their ports (a shorter frame takes the full
/// pipeline; every 60-byte minimum frame is long enough).
const IPV4_SEEN: usize = LANE_L3 + 20 + 4;

/// The lane's state for one RX burst: which frames are express, and what the passes found for
/// each (valid only where the frame's `express` bit is set).
pub struct ExpressLane {
    express: u64,
    /// Bit i: frame i's member is still to be chosen, in its turn (a flowlet or per-packet
    /// group: `route` and `hash` hold its route and flow hash); else `nexthop` holds where
    /// it goes (a route to a nexthop, or a `hash` group's member, chosen and counted in pass
    /// 2: see `GroupBalancer::hashes_statically`).
    in_turn: u64,
    /// Pass 1: each frame's IPv4 destination.
    destination: [u32; MAX_BURST],
    nexthop: [u32; MAX_BURST],
    route: [u32; MAX_BURST],
    hash: [u32; MAX_BURST],
}

impl Default for ExpressLane {
    fn default() -> Self {
        ExpressLane {
            express: 0,
            in_turn: 0,
            destination: [0; MAX_BURST],
            nexthop: [0; MAX_BURST],
            route: [0; MAX_BURST],
            hash: [0; MAX_BURST],
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

    /// Forgets the previous burst: no frame is express.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.express = 0;
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

/// The router MAC as the low 48 bits of a little-endian word, to compare with a frame's first
/// eight bytes in one test.
#[inline(always)]
fn mac_word(mac: [u8; 6]) -> u64 {
    let [a, b, c, d, e, f] = mac;
    u64::from_le_bytes([a, b, c, d, e, f, 0, 0])
}

/// The destination of an IPv4 frame that passes, on a routed port, every check the pipeline
/// makes before it looks its route up (`Forwarder::process_frame` to `route_ipv4`): to the
/// router MAC, untagged, a unicast source MAC, version 4 with a 20-byte header (options take
/// the full pipeline), a total length from 20 to what the frame holds, a valid header
/// checksum and a TTL above 1. With it, the frame's flow: the words the route and the flow
/// hash depend on (`FlowWords`).
#[inline(always)]
fn express_ipv4(frame: &[u8], router_mac: u64) -> Option<(u32, FlowWords)> {
    let seen: &[u8; IPV4_SEEN] = frame.first_chunk()?;
    let word = |at: usize| u64::from_le_bytes(*seen[at..].first_chunk().expect("8 bytes"));
    let ip: &[u8; 20] = seen[LANE_L3..].first_chunk()?;
    let to_router = word(0) & 0xffff_ffff_ffff == router_mac;
    let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // One combined test: every frame of a routed burst passes them all.
    let express = to_router
        & (seen[6] & 1 == 0)
        & (u16::from_be_bytes([seen[12], seen[13]]) == ETHERTYPE_IPV4)
        & (ip[0] == 0x45)
        & (ip[8] > 1)
        & (total_len >= 20)
        & (total_len <= frame.len() - LANE_L3);
    if !(express && checksum::ipv4_header_sums_to_ones(ip)) {
        return None;
    }
    let flow = FlowWords(
        word(LANE_L3 + 4) & FRAGMENT_AND_PROTOCOL,
        word(LANE_L3 + 12),
        u32::from_le_bytes(*seen[LANE_L3 + 20..].first_chunk().expect("4 bytes")),
    );
    Some((u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]), flow))
}

/// In the little-endian word of an IPv4 header's bytes 4 to 11: the flags' MF bit and the
/// fragment offset (bytes 6 and 7 less DF and the reserved bit) and the protocol (byte 9).
const FRAGMENT_AND_PROTOCOL: u64 = 0x0000_ff00_ff3f_0000;

/// What an express IPv4 frame's route and flow hash depend on: the fragment bits and the
/// protocol, the addresses, and the four bytes after the header (where TCP and UDP keep
/// their ports). Two frames with equal words look up and hash alike.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FlowWords(u64, u64, u32);

impl Forwarder {
    /// The VRF of a routed port, whose bursts the express lane stages; `None` for any other
    /// port (the lane only takes untagged frames of routed ports).
    #[inline]
    pub fn lane_vrf(&self, in_port: u16) -> Option<u16> {
        match self.ports.get(usize::from(in_port)).map(|p| &p.mode) {
            Some(PortMode::Routed { interface }) => {
                let vrf = self.interfaces.get(usize::from(*interface))?.vrf;
                (usize::from(vrf) < self.fib4.len()).then_some(vrf)
            }
            _ => None,
        }
    }

    /// Passes 1 and 2 of the lane over one RX burst (`frames`, at most `MAX_BURST`, from
    /// `MbufBurst::whole_frames`) received on a routed port of `vrf` (`Self::lane_vrf`).
    /// Reads the frames and the FIB; counts the members that `hash` groups choose. Returns
    /// the express frames (also `ExpressLane::express`).
    pub fn stage_lane(&self, lane: &mut ExpressLane, frames: &[&[u8]], vrf: u16) -> u64 {
        let frames = &frames[..frames.len().min(MAX_BURST)];
        let Some(fib) = self.fib4.get(usize::from(vrf)) else {
            lane.express = 0;
            return 0;
        };
        let fib = fib.lookups();
        let router_mac = mac_word(self.router_mac);
        // Pass 1. A frame of the same flow as the candidate before it (an elephant flow fills
        // whole bursts) is a repeat: pass 2 gives it that frame's route and hash.
        let (mut candidates, mut repeats) = (0u64, 0u64);
        let mut previous = None;
        for (index, frame) in frames.iter().enumerate() {
            let Some((destination, flow)) = express_ipv4(frame, router_mac) else {
                continue;
            };
            candidates |= 1 << index;
            if previous == Some(flow) {
                repeats |= 1 << index;
                continue;
            }
            previous = Some(flow);
            fib.prefetch(destination);
            lane.destination[index] = destination;
        }
        // Pass 2.
        let seed = self.flow_hash_seed;
        let (mut express, mut in_turn) = (0u64, 0u64);
        // The last frame looked up: whether it is express (then in turn or not) and its
        // nexthop or route and hash.
        let mut last = Staged::Not;
        for index in bits(candidates) {
            let frame = frames[index];
            let len = frame.len() as u32;
            if repeats >> index & 1 == 0 {
                last = self.stage_ipv4(&fib, lane.destination[index], frame, seed);
            }
            match last {
                Staged::Not => continue,
                Staged::Nexthop(id) => lane.nexthop[index] = id,
                Staged::Hashed { group, id, counter } => {
                    lane.nexthop[index] = id;
                    if let Some(index) = counter {
                        self.balancers[group as usize].count_member(index, len);
                    }
                }
                Staged::InTurn { route, hash } => {
                    lane.route[index] = route;
                    lane.hash[index] = hash;
                    in_turn |= 1 << index;
                }
            }
            express |= 1 << index;
        }
        (lane.express, lane.in_turn) = (express, in_turn);
        express
    }

    /// Pass 2 for one IPv4 frame (`destination`'s first-level FIB entry prefetched): its
    /// route, and for a group its flow hash and, in `hash` mode, its member (not counted yet).
    #[inline(always)]
    fn stage_ipv4(
        &self,
        fib: &Lpm4Lookups<'_>,
        destination: u32,
        frame: &[u8],
        seed: u32,
    ) -> Staged {
        let Some(route) = fib.lookup(destination) else {
            return Staged::Not;
        };
        match route_value::decode(route) {
            RouteTarget::Nexthop(id) => Staged::Nexthop(id),
            RouteTarget::Group(group) => {
                let hash = super::flow_hash_ipv4(&frame[LANE_L3..], 20, seed);
                let (Some(balancer), Some(ecmp)) = (
                    self.balancers.get(group as usize),
                    self.groups.get(group as usize),
                ) else {
                    return Staged::Not;
                };
                if !balancer.hashes_statically() {
                    balancer.prefetch_slot(hash);
                    return Staged::InTurn { route, hash };
                }
                match balancer.member_by_hash(ecmp, hash) {
                    // No live member: the full pipeline drops the frame.
                    None => Staged::Not,
                    Some((id, counter)) => Staged::Hashed { group, id, counter },
                }
            }
            // No route, local, connected, blackhole, an SRv6 policy: the full pipeline.
            _ => Staged::Not,
        }
    }

    /// Pass 3 for express frame `index` of the lane's burst (`frame`, its only segment):
    /// decides exactly as [`Self::process_frame`] would, skipping what the passes did.
    #[inline(always)]
    pub fn route_lane(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        frame: &mut [u8],
        now: Picos,
    ) -> Verdict {
        debug_assert!(index < MAX_BURST && lane.express >> index & 1 != 0);
        let index = index % MAX_BURST;
        #[cfg(debug_assertions)]
        self.check_lane(lane, index, frame);
        let nexthop_id = if lane.in_turn >> index & 1 == 0 {
            lane.nexthop[index]
        } else {
            match self.choose_in_turn(lane.route[index], lane.hash[index], frame.len() as u32, now)
            {
                Some(id) => id,
                None => return Verdict::Drop(DropReason::EcmpNoLiveMember),
            }
        };
        let Some(nexthop) = self.nexthops.get(nexthop_id as usize) else {
            return Verdict::Drop(DropReason::NeighborUnresolved);
        };
        let Some(header) = frame.first_chunk_mut::<{ LANE_L3 + 12 }>() else {
            unreachable!("express frames hold an IPv4 header");
        };
        if nexthop.express_port != NO_PORT {
            // What `egress_l2` does for an untagged frame to a routed port, in one copy.
            header[..12].copy_from_slice(&nexthop.addresses);
            super::decrement_hop_limit(&mut header[LANE_L3..], false);
            return Verdict::Forward {
                port: nexthop.express_port,
                tag: TagOp::Keep,
            };
        }
        self.frame_len = frame.len() as u32;
        match self.resolved_nexthop(nexthop_id, now) {
            Ok((out_iface, dst_mac)) => super::forwarded(
                self.send_routed(frame, LANE_L3, false, false, out_iface, dst_mac, now),
            ),
            Err(reason) => Verdict::Drop(reason),
        }
    }

    /// The member of a flowlet or per-packet group for a frame in its turn (`route` names
    /// the group), chosen and counted as the full pipeline would.
    #[inline(always)]
    fn choose_in_turn(&mut self, route: u32, hash: u32, len: u32, now: Picos) -> Option<u32> {
        let RouteTarget::Group(group) = route_value::decode(route) else {
            unreachable!("only groups choose in turn");
        };
        let g = group as usize;
        let (balancer, ecmp) = (self.balancers.get_mut(g)?, self.groups.get(g)?);
        balancer
            .select_member(ecmp, hash, len, now, &self.egress_load)
            .map(|(id, _)| id)
    }

    /// Debug builds: what the passes found for frame `index` is what the frame's own lookup
    /// and hash give.
    #[cfg(debug_assertions)]
    fn check_lane(&self, lane: &ExpressLane, index: usize, frame: &[u8]) {
        let found = express_ipv4(frame, mac_word(self.router_mac));
        assert!(found.is_some(), "lane frame no longer express");
        if lane.in_turn >> index & 1 != 0 {
            assert_eq!(
                lane.hash[index],
                super::flow_hash_ipv4(&frame[LANE_L3..], 20, self.flow_hash_seed),
                "lane hash"
            );
        }
    }
}

/// What pass 2 found for a frame.
#[derive(Clone, Copy)]
enum Staged {
    /// Not express: the frame takes the full pipeline.
    Not,
    /// A route to nexthop `id`.
    Nexthop(u32),
    /// A `hash` group's member: nexthop `id`, with its counters' index in the group.
    Hashed {
        group: u32,
        id: u32,
        counter: Option<u32>,
    },
    /// A flowlet or per-packet group's route and the frame's flow hash.
    InTurn { route: u32, hash: u32 },
}
