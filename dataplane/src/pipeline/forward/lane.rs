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

use super::{ETHERTYPE_IPV4, Forwarder, NO_PORT, PortMode, Verdict, route_value};
use crate::clock::Picos;
use crate::counters::DropReason;
use crate::dpdk::MAX_BURST;
use crate::pipeline::spec::RouteTarget;
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
    /// A frame looked up whose `hash` member has counters: the group and the member's index.
    counter: [Option<(u32, u32)>; MAX_BURST],
    /// A repeat: the burst index of the frame whose staging it takes.
    head: [u8; MAX_BURST],
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
            counter: [None; MAX_BURST],
            head: [0; MAX_BURST],
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
/// checksum and a TTL above 1.
#[inline(always)]
fn express_ipv4_destination(frame: &[u8], router_mac: u64) -> Option<u32> {
    let seen: &[u8; IPV4_SEEN] = frame.first_chunk()?;
    let ip: &[u8; 20] = seen[LANE_L3..].first_chunk()?;
    let to_router =
        u64::from_le_bytes(*seen.first_chunk().expect("8 bytes")) & 0xffff_ffff_ffff == router_mac;
    let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // One combined test: every frame of a routed burst passes them all.
    let express = to_router
        & (seen[6] & 1 == 0)
        & (u16::from_be_bytes([seen[12], seen[13]]) == ETHERTYPE_IPV4)
        & (ip[0] == 0x45)
        & (ip[8] > 1)
        & (total_len >= 20)
        & (total_len <= frame.len() - LANE_L3);
    (express && checksum::ipv4_header_sums_to_ones(ip))
        .then(|| u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]))
}

/// Whether two express IPv4 frames to the same destination look up and hash alike: the same
/// source, protocol, fragment bits and the four bytes after the header (TCP and UDP ports).
#[inline(always)]
fn same_ipv4_flow(a: &[u8], b: &[u8]) -> bool {
    let (Some(a), Some(b)) = (a.first_chunk::<IPV4_SEEN>(), b.first_chunk::<IPV4_SEEN>()) else {
        return false;
    };
    let word =
        |f: &[u8; IPV4_SEEN], at: usize| u64::from_le_bytes(*f[at..].first_chunk().expect("8"));
    // Bytes 4-11 of the header: the MF bit and fragment offset, the protocol; then the
    // source and destination; then the ports.
    const FRAGMENT_AND_PROTOCOL: u64 = 0x0000_ff00_ff3f_0000;
    (word(a, LANE_L3 + 4) ^ word(b, LANE_L3 + 4)) & FRAGMENT_AND_PROTOCOL
        | word(a, LANE_L3 + 12) ^ word(b, LANE_L3 + 12)
        | u64::from(
            u32::from_le_bytes(*a[LANE_L3 + 20..].first_chunk().expect("4"))
                ^ u32::from_le_bytes(*b[LANE_L3 + 20..].first_chunk().expect("4")),
        )
        == 0
}

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
        let mut candidates = 0u64;
        for (index, frame) in frames.iter().enumerate() {
            if let Some(destination) = express_ipv4_destination(frame, router_mac) {
                fib.prefetch(destination);
                lane.destination[index] = destination;
                candidates |= 1 << index;
            }
        }
        // Pass 2, in three short loops. First the repeats: frames of the flow of the frame
        // before them (an elephant flow fills whole bursts), which take its staging.
        let mut repeats = 0u64;
        let mut head = (u32::MAX, usize::MAX);
        for index in bits(candidates) {
            let destination = lane.destination[index];
            if destination == head.0 && same_ipv4_flow(frames[head.1 % MAX_BURST], frames[index]) {
                repeats |= 1 << index;
                lane.head[index] = head.1 as u8;
            } else {
                head = (destination, index);
            }
        }
        // Then the frames looked up.
        let seed = self.flow_hash_seed;
        let (mut express, mut in_turn) = (0u64, 0u64);
        for index in bits(candidates & !repeats) {
            match self.stage_ipv4(&fib, lane.destination[index], frames[index], seed) {
                Staged::Not => continue,
                Staged::Nexthop(id) => lane.nexthop[index] = id,
                Staged::Hashed { id, counter } => {
                    lane.nexthop[index] = id;
                    lane.counter[index] = counter;
                }
                Staged::InTurn { route, hash } => {
                    lane.route[index] = route;
                    lane.hash[index] = hash;
                    in_turn |= 1 << index;
                }
            }
            express |= 1 << index;
        }
        // Then the repeats take their heads' staging; a `hash` member's counts for a head's
        // repeats are added at once.
        let mut run = (usize::MAX, 0u32, 0u32);
        for index in bits(repeats) {
            let head = usize::from(lane.head[index]) % MAX_BURST;
            if express >> head & 1 == 0 {
                continue;
            }
            if head != run.0 {
                self.count_repeats(lane, run.0, run.1, run.2);
                run = (head, 0, 0);
            }
            (run.1, run.2) = (run.1 + 1, run.2 + frames[index].len() as u32);
            lane.nexthop[index] = lane.nexthop[head];
            lane.route[index] = lane.route[head];
            lane.hash[index] = lane.hash[head];
            in_turn |= (in_turn >> head & 1) << index;
            express |= 1 << index;
        }
        self.count_repeats(lane, run.0, run.1, run.2);
        (lane.express, lane.in_turn) = (express, in_turn);
        express
    }

    /// Counts `packets` repeats of `head`, of `bytes` in all, to its `hash` member, if it has
    /// one.
    #[inline(always)]
    fn count_repeats(&self, lane: &ExpressLane, head: usize, packets: u32, bytes: u32) {
        if packets > 0
            && lane.in_turn >> head & 1 == 0
            && let Some(counter) = lane.counter.get(head).copied().flatten()
            && let Some(balancer) = self.balancers.get(counter.0 as usize)
        {
            balancer.count_member(counter.1, packets, bytes);
        }
    }

    /// Pass 2 for one IPv4 frame (`destination`'s first-level FIB entry prefetched): its
    /// route, and for a group its flow hash and, in `hash` mode, its member (counted).
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
                // No live member: the full pipeline drops the frame.
                match balancer.select_by_hash(ecmp, hash, frame.len() as u32) {
                    Some((id, counter)) => Staged::Hashed {
                        id,
                        counter: counter.map(|c| (group, c)),
                    },
                    None => Staged::Not,
                }
            }
            // No route, local, connected, blackhole, an SRv6 policy: the full pipeline.
            _ => Staged::Not,
        }
    }

    /// Pass 3 for express frame `index` of the lane's burst (`frame`, its only segment):
    /// decides exactly as [`Self::process_frame`] would, skipping what the passes did. The
    /// usual verdict, a forward with the tag kept, comes back as its port; any other as
    /// [`LANE_OTHER`], with the verdict for [`Self::lane_verdict`] (two words of verdict cost
    /// the per-frame path a pack and an unpack).
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
        #[cfg(debug_assertions)]
        self.check_lane(lane, index, frame);
        let nexthop_id = if lane.in_turn >> index & 1 == 0 {
            lane.nexthop[index]
        } else {
            let (route, hash) = (lane.route[index], lane.hash[index]);
            match self.choose_in_turn(route, hash, frame.len() as u32, now) {
                Some(id) => id,
                None => return self.lane_other(Verdict::Drop(DropReason::EcmpNoLiveMember)),
            }
        };
        let Some(nexthop) = self.nexthops.get(nexthop_id as usize) else {
            return self.lane_other(Verdict::Drop(DropReason::NeighborUnresolved));
        };
        let Some(header) = frame.first_chunk_mut::<{ LANE_L3 + 12 }>() else {
            unreachable!("express frames hold an IPv4 header");
        };
        if nexthop.express_port != NO_PORT {
            // What `egress_l2` does for an untagged frame to a routed port, in one copy.
            header[..12].copy_from_slice(&nexthop.addresses);
            super::decrement_hop_limit(&mut header[LANE_L3..], false);
            return nexthop.express_port;
        }
        self.frame_len = frame.len() as u32;
        let verdict = match self.resolved_nexthop(nexthop_id, now) {
            Ok((out_iface, dst_mac)) => super::forwarded(
                self.send_routed(frame, LANE_L3, false, false, out_iface, dst_mac, now),
            ),
            Err(reason) => Verdict::Drop(reason),
        };
        self.lane_other(verdict)
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
        let found = express_ipv4_destination(frame, mac_word(self.router_mac));
        assert_eq!(found, Some(lane.destination[index]), "lane destination");
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
    /// A `hash` group's member, nexthop `id` (chosen and counted), with its group and its
    /// counters' index in the group.
    Hashed {
        id: u32,
        counter: Option<(u32, u32)>,
    },
    /// A flowlet or per-packet group's route and the frame's flow hash.
    InTurn { route: u32, hash: u32 },
}
