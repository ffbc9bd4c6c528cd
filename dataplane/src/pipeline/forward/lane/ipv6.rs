//! The lane's IPv6 half: pass 2 for IPv6 frames (the my-SID table and an endpoint's step,
//! then the FIB walked for the whole burst in lockstep) and pass 3 for a frame to a local SID.
//!
//! A frame to a local SID is express when its endpoint takes one step and routes the frame on
//! (`Srv6State::endpoint_step` to a destination that `Srv6State::leads_to_fib`): End, with NEXT-C-SID a uN shift of a non-zero argument
//! (RFC 9800: the shift comes before any SRH processing, so the SRH is not read), else RFC
//! 8986 4.1's SRH step with a valid SRH, Segments Left above 0 and no PSP removal; the new
//! destination neither link-local nor another local SID. Pass 2 looks up and hashes that new
//! destination; pass 3 applies the step (Segments Left, the destination, the hop limit) as
//! `Forwarder::srv6_endpoint` would, routes the frame and counts it to its SID.

#[cfg(debug_assertions)]
use super::express_ipv6_destination;
use super::{ExpressLane, LANE_L3, LastGroup, Staged, WireAddr6, bits};
use crate::clock::Picos;
use crate::counters::DropReason;
use crate::dpdk::MAX_BURST;
use crate::pipeline::Verdict;
use crate::pipeline::forward::srv6::{EndpointStep, SrhMemo};
use crate::pipeline::forward::{Forwarder, flow_hash_ipv6_to};
use crate::wire::srh;
use std::net::Ipv6Addr;

/// One burst's IPv6 FIB lookups: the destinations, the answers, and each frame's key.
pub(super) struct Lookups {
    /// In network byte order, as `Lpm6::lookup_batch` reads them.
    keys: [[u8; 16]; MAX_BURST],
    values: [Option<u32>; MAX_BURST],
    /// Frame i's key: `keys[key_of[i]]` (a run of frames to one destination shares one).
    /// Pass 2 reads each frame's answer through it, where copying the answers to the frames
    /// first cost a loop of 10 instructions a frame.
    key_of: [u8; MAX_BURST],
}

impl Default for Lookups {
    fn default() -> Self {
        Lookups {
            keys: [[0; 16]; MAX_BURST],
            values: [None; MAX_BURST],
            key_of: [0; MAX_BURST],
        }
    }
}

impl Forwarder {
    /// Pass 2 for the burst's IPv6 frames (`candidates`, their destinations in
    /// `lane.destination6`) received in `vrf`: a frame to a local SID takes its endpoint's
    /// step or leaves the lane; the FIB is walked for the burst's destinations in lockstep,
    /// once for each run of frames to the same one; then each frame's route, hash and `hash`
    /// member. Returns the express and in-turn frames; sets `lane.endpoint`. Out of line: a
    /// call per burst, and its loops keep their registers whatever pass 1 and the IPv4 half
    /// hold.
    #[inline(never)]
    pub(super) fn stage_ipv6(
        &self,
        lane: &mut ExpressLane,
        frames: &[&[u8]],
        vrf: u16,
        candidates: u64,
    ) -> (u64, u64) {
        let Some(fib) = self.fib6.get(usize::from(vrf)) else {
            return (0, 0);
        };
        let (mut routed, mut endpoint) = (candidates, 0u64);
        #[cfg(test)]
        let mut shared = 0u64;
        let mut previous: Option<WireAddr6> = None;
        let mut n = 0;
        // Frame `index`'s FIB key: queued for the walk, or, when the frame before it has the
        // same one (a run of frames to one destination), that frame's lookup is shared.
        let mut queue = |lane: &mut ExpressLane, index: usize, key: WireAddr6| {
            if previous == Some(key) {
                #[cfg(test)]
                {
                    shared |= 1 << index;
                }
            } else {
                previous = Some(key);
                lane.lookups6.keys[n % MAX_BURST] = key.bytes();
                n += 1;
            }
            lane.lookups6.key_of[index % MAX_BURST] = (n - 1) as u8;
        };
        if self.srv6.has_sids(vrf) {
            // The last destination whose SID was found and the last next destination checked
            // to lead to the FIB: a policy's flows share both.
            let mut last_sid: Option<(WireAddr6, Option<u32>)> = None;
            let mut last_next: Option<(WireAddr6, bool)> = None;
            let mut srh_memo = SrhMemo::default();
            // The last destination whose uN shift led to the FIB, with its SID and its next
            // destination: all three depend on the destination alone (the SID lookup, the
            // shift and the FIB check), so a frame to it takes them whole, ahead of the other
            // memos. An End step depends on the frame's SRH too, and never sets it.
            let mut last_shift: Option<(WireAddr6, u32, WireAddr6)> = None;
            // The same for End: the last destination whose SRH step led to the FIB, its SID,
            // the SRH memo that answered for the frame and the next destination. A frame to
            // the same destination that the memo answers with the same segment takes the
            // same step (`SrhMemo::answers_with`), so it skips the SID, the step's checks and
            // the FIB check.
            let mut last_end: Option<(WireAddr6, u32, SrhMemo, WireAddr6)> = None;
            let mut remaining = candidates;
            while remaining != 0 {
                let index = remaining.trailing_zeros() as usize % MAX_BURST;
                remaining &= remaining - 1;
                let mut key = lane.destination6[index];
                if let Some((destination, sid, next)) = last_shift
                    && destination == key
                {
                    lane.destination6[index] = next;
                    lane.sid[index] = sid;
                    lane.step[index] = EndpointStep::Shift;
                    endpoint |= 1 << index;
                    queue(lane, index, next);
                    continue;
                }
                if let Some((destination, sid, memo, next)) = last_end {
                    let answers = |index: usize| {
                        frames[index]
                            .get(LANE_L3..)
                            .is_some_and(|ip| memo.answers_with(ip, next.bytes()))
                    };
                    if destination == key && answers(index) {
                        // This frame, and the run of frames after it that match too, in a
                        // loop of their own: only the run's memo stays in registers (End
                        // 680 -> 647 instructions a frame).
                        let mut take = |lane: &mut ExpressLane, index: usize| {
                            lane.destination6[index] = next;
                            lane.sid[index] = sid;
                            lane.step[index] = EndpointStep::Srh { offset: 40 };
                            endpoint |= 1 << index;
                            queue(lane, index, next);
                        };
                        take(lane, index);
                        while remaining != 0 {
                            let following = remaining.trailing_zeros() as usize % MAX_BURST;
                            if lane.destination6[following] != destination || !answers(following) {
                                break;
                            }
                            remaining &= remaining - 1;
                            take(lane, following);
                        }
                        continue;
                    }
                }
                let sid = match last_sid {
                    Some((destination, sid)) if destination == key => sid,
                    _ => {
                        let sid = self.srv6.lookup_sid(vrf, Ipv6Addr::from(key.bytes()));
                        last_sid = Some((key, sid));
                        sid
                    }
                };
                if let Some(sid) = sid {
                    let step = frames[index].get(LANE_L3..).and_then(|ip| {
                        self.srv6
                            .endpoint_step(sid, key.host(), ip, &mut srh_memo)
                            .map(|(next, step)| (WireAddr6::from_host(next), step))
                    });
                    let Some((next, step)) = step else {
                        routed &= !(1 << index);
                        continue;
                    };
                    let leads_to_fib = match last_next {
                        Some((checked, leads)) if checked == next => leads,
                        _ => {
                            let leads = self.srv6.leads_to_fib(vrf, next.host());
                            last_next = Some((next, leads));
                            leads
                        }
                    };
                    if !leads_to_fib {
                        routed &= !(1 << index);
                        continue;
                    }
                    if step == EndpointStep::Shift {
                        last_shift = Some((key, sid, next));
                    } else if step == (EndpointStep::Srh { offset: 40 })
                        && frames[index]
                            .get(LANE_L3..)
                            .is_some_and(|ip| srh_memo.answers_with(ip, next.bytes()))
                    {
                        last_end = Some((key, sid, srh_memo, next));
                    }
                    key = next;
                    lane.destination6[index] = next;
                    lane.sid[index] = sid;
                    lane.step[index] = step;
                    endpoint |= 1 << index;
                }
                queue(lane, index, key);
            }
        } else {
            // No local SID: every frame is looked up as it came, in a loop of its own (the
            // endpoints' memos above would take its registers).
            for index in bits(candidates) {
                queue(lane, index, lane.destination6[index]);
            }
        }
        #[cfg(test)]
        {
            lane.taken |= shared;
        }
        let n = n.min(MAX_BURST);
        let lookups = &mut lane.lookups6;
        fib.lookup_batch(&lookups.keys[..n], &mut lookups.values[..n]);
        let seed = self.flow_hash_seed;
        let (mut express, mut in_turn) = (0u64, 0u64);
        let mut last_group: Option<LastGroup<'_>> = None;
        for index in bits(routed) {
            let key = usize::from(lane.lookups6.key_of[index % MAX_BURST]);
            let frame = frames[index];
            let Some(route) = lane.lookups6.values[key % MAX_BURST] else {
                continue;
            };
            if frame.len() < LANE_L3 + 40 {
                continue;
            }
            let with_ports = endpoint >> index & 1 == 0;
            let destination = lane.destination6[index].bytes();
            let hash = || flow_hash_ipv6_to(&frame[LANE_L3..], destination, with_ports, seed);
            match self.stage_route(route, hash, frame.len(), &mut last_group, || None) {
                Staged::Not => continue,
                Staged::Nexthop(id) | Staged::Hashed { id, .. } => lane.nexthop[index] = id,
                Staged::InTurn { route, hash } => {
                    lane.route[index] = route;
                    lane.hash[index] = hash;
                    in_turn |= 1 << index;
                }
            }
            express |= 1 << index;
        }
        lane.endpoint = endpoint;
        (express, in_turn)
    }

    /// Pass 3 for express frame `index`, IPv6 to a local SID: what `srv6_endpoint` does for
    /// it, as `route_lane` (a forward's port, else `LANE_OTHER` with the verdict). The step
    /// and the hop-limit decrement come before resolution, as there; the SID counts the frame
    /// with the verdict. `route_lane` takes it for such a frame, and the engine for each frame
    /// of a burst of [`Self::lane_all_endpoints`].
    #[inline(always)]
    pub fn route_lane_endpoint(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        frame: &mut [u8],
        now: Picos,
    ) -> u16 {
        debug_assert!(index < MAX_BURST && (lane.endpoint & lane.express) >> index & 1 != 0);
        let index = index % MAX_BURST;
        #[cfg(debug_assertions)]
        self.check_lane(lane, index, frame);
        let arrived_len = frame.len();
        let (sid, step, next) = (lane.sid[index], lane.step[index], lane.destination6[index]);
        let Some(ip) = frame.get_mut(LANE_L3..) else {
            unreachable!("express frames hold an IPv6 header");
        };
        if let EndpointStep::Srh { offset } = step
            && let Some(segments_left) = ip.get_mut(usize::from(offset) + srh::SEGMENTS_LEFT_OFFSET)
        {
            *segments_left -= 1;
        }
        if let Some(header) = ip.first_chunk_mut::<40>() {
            header[24..40].copy_from_slice(&next.bytes());
            header[7] -= 1;
        }
        let nexthop_id = self.lane_nexthop(lane, index, arrived_len, now);
        // The usual way out, a routed port and the neighbour's MAC known, counts the SID's
        // frame and returns the port without building a verdict: the verdict's packing and
        // its match for the SID's drop cost an endpoint 14 instructions a frame.
        if let Some((port, addresses)) = nexthop_id.and_then(|id| self.express_egress(id)) {
            frame[..12].copy_from_slice(addresses);
            if let Some(counters) = self.srv6.counters.sids.get(sid as usize) {
                counters.count(arrived_len, None);
            }
            return port;
        }
        self.endpoint_other_egress(lane, index, sid, nexthop_id, frame, arrived_len, now)
    }

    /// The rest of `route_lane_endpoint` for a frame that does not leave by the express path:
    /// no live member, an unresolved neighbour, or a neighbour to resolve or flood to.
    /// Returns `LANE_OTHER` with the verdict, and counts the SID's frame with it.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn endpoint_other_egress(
        &mut self,
        lane: &ExpressLane,
        index: usize,
        sid: u32,
        nexthop_id: Option<u32>,
        frame: &mut [u8],
        arrived_len: usize,
        now: Picos,
    ) -> u16 {
        let verdict = match nexthop_id {
            None => Verdict::Drop(DropReason::EcmpNoLiveMember),
            Some(nexthop_id) => {
                let verdict = self.endpoint_slow_egress(nexthop_id, frame, now);
                self.uncount_unsent(lane, index, nexthop_id, arrived_len, verdict);
                verdict
            }
        };
        if let Some(counters) = self.srv6.counters.sids.get(sid as usize) {
            let dropped = match verdict {
                Verdict::Drop(reason) => Some(reason),
                _ => None,
            };
            counters.count(arrived_len, dropped);
        }
        self.lane_other(verdict)
    }

    /// An endpoint frame's way out to `nexthop_id` when not by the express path
    /// (`express_egress`), its hop limit decremented already: the verdict.
    fn endpoint_slow_egress(&mut self, nexthop_id: u32, frame: &mut [u8], now: Picos) -> Verdict {
        if nexthop_id as usize >= self.nexthops.len() {
            return Verdict::Drop(DropReason::NeighborUnresolved);
        }
        // Within every MTU, as any express frame: no MTU check to come before the neighbour's
        // (see `route_lane`).
        debug_assert!(
            self.fits_every_mtu(frame.len()),
            "express frame over an MTU"
        );
        match self.resolved_nexthop(nexthop_id, now) {
            Ok((out_iface, dst_mac)) => self.egress_l2(frame, false, out_iface, dst_mac, now),
            Err(reason) => Verdict::Drop(reason),
        }
    }

    /// Debug builds: pass 2's SID, step, next destination and hash for IPv6 frame `index`
    /// are what the frame itself gives.
    #[cfg(debug_assertions)]
    pub(super) fn check_lane_ipv6(&self, lane: &ExpressLane, index: usize, frame: &[u8]) {
        let destination = express_ipv6_destination(frame).expect("lane frame no longer express");
        let ip = &frame[LANE_L3..];
        let vrf = lane.vrf;
        let endpoint = lane.endpoint >> index & 1 != 0;
        let sid = self
            .srv6
            .lookup_sid(vrf, Ipv6Addr::from(destination.bytes()));
        assert_eq!(
            sid,
            endpoint.then_some(lane.sid[index]),
            "the lane's SID is the frame's"
        );
        let key = if endpoint {
            let step = self
                .srv6
                .endpoint_step(
                    lane.sid[index],
                    destination.host(),
                    ip,
                    &mut SrhMemo::default(),
                )
                .filter(|&(next, _)| self.srv6.leads_to_fib(vrf, next))
                .expect("the lane's step is the frame's");
            assert_eq!(
                step,
                (lane.destination6[index].host(), lane.step[index]),
                "lane step"
            );
            step.0
        } else {
            destination.host()
        };
        if lane.in_turn >> index & 1 != 0 {
            let hash = flow_hash_ipv6_to(ip, key.to_be_bytes(), !endpoint, self.flow_hash_seed);
            assert_eq!(lane.hash[index], hash, "lane hash");
        }
    }
}
