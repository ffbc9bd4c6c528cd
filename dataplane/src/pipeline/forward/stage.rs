//! Burst staging for routed IPv4 and IPv6: before a burst's frames go through the pipeline one
//! by one, short passes over the whole burst do their FIB lookups, so the cache misses of 32
//! frames overlap instead of stalling each frame in turn (the idea of DPDK's l3fwd and VPP's
//! vector nodes, kept outside the per-frame pipeline):
//!
//! 1. parse the destination and prefetch the FIB's first-level entry (IPv6: unless the
//!    destination is a local SID, which the my-SID table, small and cached, answers at once;
//!    for an End or uN SID whose one step sends the frame on to the FIB, the destination
//!    that step sets);
//! 2. IPv4: prefetch the second-level entry the first level points to; IPv6: walk the
//!    burst's lookups level by level in lockstep (`Lpm6::lookup_batch`);
//! 3. IPv4: look the route up (now cached); both: for an ECMP group, compute the frame's flow
//!    hash and prefetch the group's flowlet slot for it.
//!
//! A frame that repeats the flow of the frame looked up before it (same destination and the
//! same bytes wherever the hash reads: an elephant flow fills whole bursts) skips the passes
//! and takes that frame's staging. An IPv6 frame of another flow to the same destination
//! (SRv6: a policy's flows share its SIDs; incast) takes that frame's my-SID answer and, when
//! its endpoint step leads to the same next destination, its FIB answer
//! (`RouteStage::stage_like`); only its hash is its own.
//!
//! The last pass also marks the burst's *express* frames: untagged IPv4 and IPv6 frames on a
//! routed port that pass every check the pipeline makes before resolving their route
//! (unicast source; IPv4: a 20-byte header with a valid checksum and length, TTL above 1;
//! IPv6: a payload length within the frame, no link-local address, hop limit above 1, not a
//! local SID unless its endpoint takes one step to the FIB; a route to a nexthop or an ECMP
//! group, for a frame to a local SID that of the destination the step sets). The engine
//! sends them straight to `Forwarder::route_express`, skipping the per-frame parse, the
//! port-mode dispatch and the header checks, which the pass made for the whole burst in one
//! loop. The endpoint's step (`Srv6State::express_step`) is a uN shift (RFC 9800: a non-zero
//! argument is shifted before any SRH processing, so the SRH is not read) or End's SRH step
//! (RFC 8986 4.1: a valid SRH with Segments Left above 0, not removed by PSP).
//!
//! The route and hash are handed to the frame's own routing (`Forwarder::set_staged_route`),
//! which uses them only if the frame is routed in the VRF and to the destination they were
//! staged for; hashing a burst in one loop also lets the CPU overlap the hash chains of
//! consecutive frames. Staging is only ever a hint: a frame it skips or guesses wrong for (a
//! VLAN interface's VRF, a malformed header) is routed exactly the same, only without the head
//! start. The FIB does not change within a burst (updates land between bursts); debug builds
//! check every staged route and hash against what the pipeline finds itself.

pub use super::srv6::EndpointStep;
use super::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN, Forwarder, PortMode, flow_hash_ipv4,
    flow_hash_ipv6_to, is_link_local, route_value,
};
use crate::dpdk::MAX_BURST;
use crate::pipeline::spec::RouteTarget;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What the burst stage found for one frame, for that frame's routing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StagedRoute {
    /// VRF + 1 of the FIB the frame was looked up in; 0: not staged.
    vrf_plus_one: u16,
    v6: bool,
    /// Offset of the IP header.
    l3: u8,
    /// The destination the FIB is staged for (IPv4 in the low 32 bits): the frame's own, or,
    /// with an `endpoint` step, the one its local SID sends it to.
    dst: u128,
    /// IPv6: the local SID the frame's destination matches (then the FIB is staged only with
    /// an `endpoint` step).
    sid: Option<u32>,
    /// The step by which the SID's endpoint sends the frame on to the FIB with `dst`
    /// (`Srv6State::express_step`).
    endpoint: Option<EndpointStep>,
    /// The burst index of the frame this staging was looked up for (its repeats share it).
    head: u8,
    /// Whether later frames of the burst repeat this frame's flow (so its route is worth
    /// remembering for them: `Forwarder::remember_route`).
    repeated: bool,
    /// Whether `value` holds the FIB's answer yet.
    looked_up: bool,
    value: Option<u32>,
    hash: Option<u32>,
}

impl StagedRoute {
    /// The flow hash staged for an ECMP group's route, if any.
    #[inline]
    pub fn flow_hash(&self) -> Option<u32> {
        self.hash
    }

    /// The local SID the staged IPv6 destination matches.
    #[inline(always)]
    pub(crate) fn sid(&self) -> Option<u32> {
        self.sid
    }

    /// The staged FIB answer, if the FIB was looked up.
    #[inline(always)]
    pub(super) fn fib_answer(&self) -> Option<Option<u32>> {
        self.looked_up.then_some(self.value)
    }

    /// Whether the staged frame is IPv6 (else IPv4).
    #[inline(always)]
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// The VRF the frame was staged in.
    #[inline(always)]
    pub(super) fn vrf(&self) -> u16 {
        self.vrf_plus_one.saturating_sub(1)
    }

    /// The destination the FIB was staged for (a uN frame's after its shift).
    #[inline(always)]
    pub(super) fn dst(&self) -> IpAddr {
        if self.v6 {
            IpAddr::V6(Ipv6Addr::from(self.dst))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.dst as u32))
        }
    }

    /// Makes this staging match no lookup (a VRF + 1 of 0 is never a lookup's).
    #[inline(always)]
    pub(super) fn clear(&mut self) {
        self.vrf_plus_one = 0;
    }

    /// The burst index of the frame whose lookup this is (a repeat's head, or the frame).
    #[inline(always)]
    pub(crate) fn head(&self) -> u8 {
        self.head
    }

    /// Whether later frames of the burst repeat the flow of the frame whose lookup this is.
    #[inline(always)]
    pub(crate) fn repeated(&self) -> bool {
        self.repeated
    }

    /// This staging as a burst of this one frame would have it (looked up for frame 0, with no
    /// repeats).
    #[cfg(test)]
    pub(crate) fn as_alone(mut self) -> StagedRoute {
        self.head = 0;
        self.repeated = false;
        self
    }

    /// The endpoint step whose destination the FIB is staged for, if any.
    #[inline(always)]
    pub(crate) fn endpoint(&self) -> Option<EndpointStep> {
        self.endpoint
    }

    #[inline(always)]
    fn is_for(&self, v6: bool, vrf: u16, dst: u128) -> bool {
        self.v6 == v6 && self.dst == dst && u32::from(self.vrf_plus_one) == u32::from(vrf) + 1
    }
}

/// The staging of a frame the stage skipped.
const NOT_STAGED: StagedRoute = StagedRoute {
    vrf_plus_one: 0,
    v6: false,
    l3: 0,
    dst: 0,
    sid: None,
    endpoint: None,
    head: 0,
    repeated: false,
    looked_up: false,
    value: None,
    hash: None,
};

/// The staging state of one RX burst.
pub struct RouteStage {
    frames: [StagedRoute; MAX_BURST],
    /// Bit i: frame i of the burst is staged (`frames[i]` is stale otherwise). A burst of
    /// bridged frames then costs one parse check per frame and nothing else.
    staged: u64,
    /// Bit i: frame i is an express frame (a subset of `staged`).
    express: u64,
    /// Bit i: frame i repeats the flow of the last staged frame before it that was looked up
    /// itself (`same_flow`), so it takes that frame's staging instead of a lookup and a hash:
    /// an elephant flow fills whole bursts. A subset of `staged`.
    repeats: u64,
    /// For each repeat, the index of the frame whose staging it takes.
    head_of: [u8; MAX_BURST],
    /// Bit i: frame i takes the FIB answer of an earlier frame staged for the same
    /// destination (`RouteStage::stage_like`), frame `lookup_of[i]`. A subset of `staged`
    /// without `repeats`.
    shared: u64,
    lookup_of: [u8; MAX_BURST],
    /// Pass 2's IPv6 lookups (destination, frame, answer), kept here so that no burst pays
    /// for zeroing them.
    v6_batch: V6Batch,
}

/// The IPv6 lookups of one burst's pass 2 (the first `n` of each array are current).
struct V6Batch {
    addrs: [u128; MAX_BURST],
    which: [u8; MAX_BURST],
    values: [Option<u32>; MAX_BURST],
}

/// Where an express frame's IPv4 header starts: right after an untagged Ethernet header.
pub const EXPRESS_L3: usize = 14;

impl Default for RouteStage {
    fn default() -> Self {
        RouteStage {
            frames: [StagedRoute::default(); MAX_BURST],
            staged: 0,
            express: 0,
            repeats: 0,
            head_of: [0; MAX_BURST],
            shared: 0,
            lookup_of: [0; MAX_BURST],
            v6_batch: V6Batch {
                addrs: [0; MAX_BURST],
                which: [0; MAX_BURST],
                values: [None; MAX_BURST],
            },
        }
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

impl RouteStage {
    /// Forgets the previous burst's staging: the next burst is not staged (its port cannot
    /// route, `Forwarder::staging_vrf`), as `run` would find.
    #[inline]
    pub fn skip(&mut self) {
        self.staged = 0;
        self.express = 0;
        self.repeats = 0;
        self.shared = 0;
    }

    /// Stages `frames` (one RX burst, received on `in_port`; at most `MAX_BURST`).
    pub fn run(&mut self, forwarder: &Forwarder, frames: &[&[u8]], in_port: u16) {
        match forwarder.staging_vrf(in_port) {
            Some(vrf) => self.run_in(forwarder, frames, in_port, vrf, 0),
            None => self.skip(),
        }
    }

    /// `run` for a port whose bursts are staged in `vrf` (`Forwarder::staging_vrf`), for a
    /// caller that asked already (the engine, before it lists the burst's frames). The frames
    /// of `skip` are not staged (the express lane took them).
    pub fn run_in(
        &mut self,
        forwarder: &Forwarder,
        frames: &[&[u8]],
        in_port: u16,
        vrf: u16,
        skip: u64,
    ) {
        let count = frames.len().min(MAX_BURST);
        self.skip();
        // The masks are built in registers and stored once.
        let (mut staged_mask, mut repeats) = (0u64, 0u64);
        let routed_port = matches!(
            forwarder.ports.get(usize::from(in_port)).map(|p| &p.mode),
            Some(PortMode::Routed { .. })
        );
        let mut v6_frames = 0;
        // The last frame looked up itself, which a repeat of its flow copies, and its
        // destination (kept in a register: reading it back from the staging just written
        // would stall on store forwarding for every frame).
        let mut head: Option<(usize, u128)> = None;
        // IPv6 frames to the destination of the head before them but not of its flow: staged
        // after this pass, from the head's staging (`Self::stage_like`). (An IPv4 frame is
        // staged by itself: its lookup, in the cache after the head's, costs little.)
        let mut alike = 0u64;
        for (index, &frame) in frames[..count].iter().enumerate() {
            if skip >> index & 1 != 0 {
                continue;
            }
            let Some(parsed) = stage_parse(frame, forwarder.router_mac) else {
                continue;
            };
            staged_mask |= 1 << index;
            if let Some((looked_up, head_dst)) = head
                && head_dst == parsed.dst
            {
                if same_flow(frames[looked_up], &self.frames[looked_up], frame, parsed) {
                    repeats |= 1 << index;
                    self.head_of[index] = looked_up as u8;
                    continue;
                }
                // (An IPv4 head's destination is an IPv6 one too: `::a.b.c.d`.)
                if parsed.v6 && self.frames[looked_up].v6 {
                    // The head's staging stands in for what `same_flow` reads of this
                    // frame's until `stage_alike` stages it: its SID, and its step when the
                    // step is a uN shift (by the destination alone).
                    let mut like = self.frames[looked_up];
                    like.l3 = parsed.l3;
                    self.frames[index] = like;
                    self.head_of[index] = looked_up as u8;
                    alike |= 1 << index;
                    head = Some((index, parsed.dst));
                    continue;
                }
            }
            head = Some((index, parsed.dst));
            self.head_of[index] = index as u8;
            v6_frames += usize::from(self.stage_itself(index, parsed, frame, forwarder, vrf));
        }
        if alike != 0 {
            v6_frames += self.stage_alike(alike, frames, forwarder, vrf);
        }
        (self.staged, self.repeats) = (staged_mask, repeats);
        if staged_mask == 0 {
            return;
        }
        let heads = staged_mask & !repeats;
        for index in bits(repeats) {
            self.frames[usize::from(self.head_of[index])].repeated = true;
        }
        for index in bits(heads) {
            let staged = &self.frames[index];
            if !staged.v6 {
                forwarder.fib4[usize::from(vrf)].prefetch_second(staged.dst as u32);
            }
        }
        if v6_frames > 0 {
            self.look_up_v6(forwarder, vrf, heads);
        }
        // Heads whose staging lets their frames be express (what `is_express` checks outside
        // each frame's own bytes); a repeat shares its head's.
        let (mut express_heads, mut express) = (0u64, 0u64);
        for index in bits(heads) {
            let (staged, frame) = (&mut self.frames[index], frames[index]);
            if !staged.v6 {
                staged.value = forwarder.fib4[usize::from(vrf)].lookup(staged.dst as u32);
                staged.looked_up = true;
            }
            forwarder.stage_hash(staged, frame);
            if routed_port && staging_is_express(staged) {
                express_heads |= 1 << index;
                express |= u64::from(frame_is_express(staged.v6, frame)) << index;
            }
        }
        for index in bits(repeats) {
            let head = usize::from(self.head_of[index]);
            if express_heads >> head & 1 != 0
                && frame_is_express(self.frames[head].v6, frames[index])
            {
                express |= 1 << index;
            }
        }
        self.express = express;
    }

    /// Stages frame `index` (`frame`, parsed as `parsed`) by itself: the my-SID table for
    /// IPv6, an endpoint step, and the prefetch of the FIB's first level for the destination
    /// the frame goes to the FIB with. Returns whether that is an IPv6 lookup (pass 2's).
    #[inline(always)]
    fn stage_itself(
        &mut self,
        index: usize,
        parsed: Parsed,
        frame: &[u8],
        forwarder: &Forwarder,
        vrf: u16,
    ) -> bool {
        let staged = &mut self.frames[index];
        *staged = StagedRoute {
            vrf_plus_one: vrf + 1,
            v6: parsed.v6,
            l3: parsed.l3,
            dst: parsed.dst,
            head: index as u8,
            ..StagedRoute::default()
        };
        if !staged.v6 {
            forwarder.fib4[usize::from(vrf)].prefetch_first(staged.dst as u32);
            return false;
        }
        staged.sid = forwarder.srv6.lookup_sid(vrf, Ipv6Addr::from(staged.dst));
        // Only an untagged frame can be express, so only its step is worth finding.
        let (dst, ip) = (staged.dst, &frame[EXPRESS_L3..]);
        let step = staged
            .sid
            .filter(|_| usize::from(staged.l3) == EXPRESS_L3)
            .and_then(|sid| forwarder.srv6.express_step(vrf, sid, dst, ip));
        if let Some((next, step)) = step {
            staged.dst = next;
            staged.endpoint = Some(step);
        }
        let looks_up = staged.sid.is_none() || staged.endpoint.is_some();
        if looks_up {
            forwarder.fib6[usize::from(vrf)].prefetch_first(staged.dst);
        }
        looks_up
    }

    /// Stages the `alike` frames (IPv6), each from the staging of the frame before it whose
    /// destination it shares (`head_of`; staged before it, by pass 1 or by this loop), where
    /// `Self::stage_like` can, and else by itself. Returns the IPv6 lookups this adds to
    /// pass 2.
    #[inline(never)]
    fn stage_alike(
        &mut self,
        alike: u64,
        frames: &[&[u8]],
        forwarder: &Forwarder,
        vrf: u16,
    ) -> usize {
        let mut v6_lookups = 0;
        for index in bits(alike) {
            let (like, frame) = (usize::from(self.head_of[index]), frames[index]);
            // Pass 1 left the frame's header offset in its staging and checked the header is
            // in the frame.
            let l3 = self.frames[index].l3;
            let Some(dst) = frame.get(usize::from(l3) + 24..usize::from(l3) + 40) else {
                continue;
            };
            let parsed = Parsed {
                v6: true,
                l3,
                dst: u128::from_be_bytes(dst.try_into().expect("16 bytes")),
            };
            self.head_of[index] = index as u8;
            match self.stage_like(like, index, parsed, frame, forwarder) {
                Some(true) => {
                    self.lookup_of[index] = like as u8;
                    self.shared |= 1 << index;
                }
                Some(false) => {}
                None => {
                    v6_lookups +=
                        usize::from(self.stage_itself(index, parsed, frame, forwarder, vrf));
                }
            }
        }
        v6_lookups
    }

    /// Stages frame `index` (IPv6, parsed as `parsed`, to the destination of the frame
    /// staged at `like` but not of its flow) from `like`'s staging, which pass 1 copied to
    /// it, when that needs no lookup, and returns whether it takes `like`'s FIB answer: the
    /// my-SID table and the FIB answer by destination alone, and where `like`'s endpoint step
    /// led was checked to lead to the FIB. `None`: the frame is to be staged by itself (its
    /// SID's step leads elsewhere). Frames of many flows to one destination are the rule for
    /// SRv6 (a policy's flows share its SIDs) and for incast.
    #[inline(always)]
    fn stage_like(
        &mut self,
        like: usize,
        index: usize,
        parsed: Parsed,
        frame: &[u8],
        forwarder: &Forwarder,
    ) -> Option<bool> {
        let (like_endpoint, like_dst) = (self.frames[like].endpoint, self.frames[like].dst);
        // The VRF, family, header offset and SID are right already; the FIB answer, the hash
        // and whether the flow repeats are filled in later, as for every frame.
        let staged = &mut self.frames[index];
        staged.dst = parsed.dst;
        staged.endpoint = None;
        staged.head = index as u8;
        let Some(sid) = staged.sid else {
            return Some(true);
        };
        if usize::from(parsed.l3) != EXPRESS_L3 {
            return Some(false);
        }
        match forwarder
            .srv6
            .endpoint_step(sid, parsed.dst, &frame[EXPRESS_L3..])
        {
            Some((next, step)) if like_endpoint.is_some() && like_dst == next => {
                staged.dst = next;
                staged.endpoint = Some(step);
                Some(true)
            }
            Some(_) => None,
            None => Some(false),
        }
    }

    /// Pass 2 for the burst's IPv6 frames: one lockstep walk of their FIB lookups (all staged
    /// in the in-port's VRF), for the frames of `heads` that need one; the `shared` frames
    /// then take the answers of the frames they share them with.
    fn look_up_v6(&mut self, forwarder: &Forwarder, vrf: u16, heads: u64) {
        let V6Batch {
            addrs,
            which,
            values,
        } = &mut self.v6_batch;
        let mut n = 0;
        for index in bits(heads & !self.shared) {
            let staged = &self.frames[index];
            if staged.v6 && (staged.sid.is_none() || staged.endpoint.is_some()) {
                addrs[n] = staged.dst;
                which[n] = index as u8;
                n += 1;
            }
        }
        forwarder.fib6[usize::from(vrf)].lookup_batch(&addrs[..n], &mut values[..n]);
        for (&index, &value) in which[..n].iter().zip(&values[..n]) {
            let staged = &mut self.frames[usize::from(index)];
            staged.value = value;
            staged.looked_up = true;
        }
        // In burst order, so a frame sharing the answer of a frame that shares one finds it.
        for index in bits(self.shared) {
            let value = self.frames[usize::from(self.lookup_of[index])].value;
            let staged = &mut self.frames[index];
            staged.value = value;
            staged.looked_up = true;
        }
    }

    /// What was staged for frame `index` of the burst.
    #[inline]
    pub fn staged(&self, index: usize) -> StagedRoute {
        *self.staged_ref(index)
    }

    /// The staging of express frame `index` (a bit of [`Self::express`]), as `staged` without
    /// the copy: an express frame is staged, so its index is below `MAX_BURST` and its head's
    /// staging is current (the masks keep the indices in the array without a bounds check).
    #[inline(always)]
    pub fn express_staged(&self, index: usize) -> &StagedRoute {
        debug_assert!(index < MAX_BURST && self.express >> index & 1 != 0);
        &self.frames[usize::from(self.head_of[index % MAX_BURST]) % MAX_BURST]
    }

    /// `staged` without the copy (a repeat's is its head's).
    #[inline(always)]
    fn staged_ref(&self, index: usize) -> &StagedRoute {
        if index < MAX_BURST && self.staged >> index & 1 != 0 {
            &self.frames[usize::from(self.head_of[index])]
        } else {
            &NOT_STAGED
        }
    }

    /// The burst's frames that took the staging of an earlier frame of their flow.
    #[cfg(test)]
    pub(crate) fn repeats(&self) -> u64 {
        self.repeats
    }

    /// The burst's frames that took the FIB answer of an earlier frame.
    #[cfg(test)]
    pub(crate) fn shared(&self) -> u64 {
        self.shared
    }

    /// The burst's express frames (bit i: frame i), for `Forwarder::route_express` with
    /// [`Self::staged`]; the caller still owes them what the pipeline checks outside the
    /// frame's bytes (the in-port up, a single segment).
    #[inline]
    pub fn express(&self) -> u64 {
        self.express
    }

    /// Hands what was staged for frame `index` to the forwarder, right before that frame
    /// (`Forwarder::set_staged_route` without copying an empty staging).
    #[inline]
    pub fn hand_to(&self, forwarder: &mut Forwarder, index: usize) {
        if index < MAX_BURST && self.staged >> index & 1 != 0 {
            forwarder.staged = self.frames[usize::from(self.head_of[index])];
        } else {
            forwarder.staged.clear();
        }
    }
}

/// What the first pass reads of a frame to the router MAC: its family, the offset of its IP
/// header and its destination (IPv4 in the low 32 bits).
#[derive(Debug, Clone, Copy)]
struct Parsed {
    v6: bool,
    l3: u8,
    dst: u128,
}

/// The destination and header offset of an IPv4 or IPv6 frame to `router_mac`.
#[inline(always)]
fn stage_parse(frame: &[u8], router_mac: [u8; 6]) -> Option<Parsed> {
    if frame.len() < 34 || frame[0..6] != router_mac {
        return None;
    }
    let (ethertype, l3) = match u16::from_be_bytes([frame[12], frame[13]]) {
        ETHERTYPE_VLAN => (u16::from_be_bytes([frame[16], frame[17]]), 18),
        other => (other, 14),
    };
    match ethertype {
        ETHERTYPE_IPV4 if frame.len() >= l3 + 20 => {
            let dst: [u8; 4] = frame[l3 + 16..l3 + 20].try_into().ok()?;
            Some(Parsed {
                v6: false,
                l3: l3 as u8,
                dst: u128::from(u32::from_be_bytes(dst)),
            })
        }
        ETHERTYPE_IPV6 if frame.len() >= l3 + 40 => {
            let dst: [u8; 16] = frame[l3 + 24..l3 + 40].try_into().ok()?;
            Some(Parsed {
                v6: true,
                l3: l3 as u8,
                dst: u128::from_be_bytes(dst),
            })
        }
        _ => None,
    }
}

/// Whether `frame`, parsed as `parsed`, looks up and hashes exactly as `head` did, staged as
/// `head_staged` (in the same VRF: one burst is staged in one): the same family and header
/// offset, and the same bytes wherever the lookup and the flow hash read (IPv4: header
/// length, fragment bits, protocol, addresses; IPv6: flow label, next header, addresses; both:
/// the ports, present in both or neither). The destinations are compared as bytes: a uN
/// frame's staging holds its shifted one.
#[inline(always)]
fn same_flow(head: &[u8], head_staged: &StagedRoute, frame: &[u8], parsed: Parsed) -> bool {
    if head_staged.v6 != parsed.v6 || head_staged.l3 != parsed.l3 {
        return false;
    }
    let l3 = usize::from(parsed.l3);
    let (a, b) = (&head[l3..], &frame[l3..]);
    // A local SID's endpoint step reads an SRH, which is not compared, unless it is a uN
    // shift (the destination alone) or there are no extension headers (no SRH either).
    if head_staged.sid.is_some()
        && head_staged.endpoint != Some(EndpointStep::Shift)
        && crate::wire::ipv6::is_extension_header(a[6])
    {
        return false;
    }
    let ports_at = |offset: usize| a.get(offset..offset + 4) == b.get(offset..offset + 4);
    if parsed.v6 {
        // Five words: the first under the mask of the flow label and next header, then the
        // addresses.
        let (Some(x), Some(y)) = (a.first_chunk::<40>(), b.first_chunk::<40>()) else {
            return false;
        };
        let word = |bytes: &[u8; 40], at: usize| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        const FIRST: u64 = 0x00ff_0000_ffff_0f00;
        let differ = (word(x, 0) ^ word(y, 0)) & FIRST
            | (word(x, 8) ^ word(y, 8))
            | (word(x, 16) ^ word(y, 16))
            | (word(x, 24) ^ word(y, 24))
            | (word(x, 32) ^ word(y, 32));
        differ == 0 && ports_at(40)
    } else if let (Some(x), Some(y)) = (a.first_chunk::<24>(), b.first_chunk::<24>())
        && b[0] == 0x45
    {
        // The common case, a 20-byte header followed by the ports, compared as three words
        // under the mask of the bytes above: version and header length, fragment bits;
        // protocol, source; destination and ports.
        let word = |bytes: &[u8; 24], at: usize| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        const FIRST: u64 = 0xffff_0000_0000_00ff;
        const SECOND: u64 = 0xffff_ffff_0000_ff00;
        (word(x, 0) ^ word(y, 0)) & FIRST
            | (word(x, 8) ^ word(y, 8)) & SECOND
            | (word(x, 16) ^ word(y, 16))
            == 0
    } else {
        let header_len = usize::from(b[0] & 0x0f) * 4;
        a[0] == b[0]
            && a[6..8] == b[6..8]
            && a[9] == b[9]
            && a[12..20] == b[12..20]
            && (a.len() >= header_len) == (b.len() >= header_len)
            && ports_at(header_len)
    }
}

/// Whether a staged frame (to the router MAC, received on a routed port, so staged in its
/// VRF) is express: it passes every check `Forwarder::process_frame` makes before it resolves
/// the route. The checks are the staging's (`staging_is_express`), shared by a flow's repeats,
/// and the frame's own (`frame_is_express`). Frames that would be dropped, punted,
/// encapsulated, gleaned or handled as a local SID before resolution take the full pipeline.
///
/// The staging's part of being express: untagged, a route to a nexthop or to an ECMP group
/// with the flow hash staged, and for a local SID an endpoint step to the FIB.
#[inline(always)]
fn staging_is_express(staged: &StagedRoute) -> bool {
    let resolvable = match staged.value.map(route_value::decode) {
        Some(RouteTarget::Nexthop(_)) => true,
        Some(RouteTarget::Group(_)) => staged.hash.is_some(),
        _ => false,
    };
    usize::from(staged.l3) == EXPRESS_L3
        && resolvable
        && (!staged.v6 || staged.sid.is_none() || staged.endpoint.is_some())
}

/// The frame's own part of being express (after an untagged Ethernet header): a unicast
/// source, and the header checks of `is_express_ipv4` or `is_express_ipv6`.
#[inline(always)]
fn frame_is_express(v6: bool, frame: &[u8]) -> bool {
    let Some(ip) = frame.get(EXPRESS_L3..) else {
        return false;
    };
    frame[6] & 1 == 0
        && if v6 {
            is_express_ipv6(ip)
        } else {
            is_express_ipv4(ip)
        }
}

/// Version 4 with a 20-byte header (options take the full pipeline), a total length within
/// the frame, a valid header checksum and TTL above 1.
#[inline(always)]
fn is_express_ipv4(ip: &[u8]) -> bool {
    let Some(header) = ip.first_chunk::<20>() else {
        return false;
    };
    let total_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    header[0] == 0x45
        && (20..=ip.len()).contains(&total_len)
        && header[8] > 1
        && crate::wire::checksum::ipv4_header_sums_to_ones(header)
}

/// Version 6, the payload within the frame, neither address link-local, hop limit above 1.
#[inline(always)]
fn is_express_ipv6(ip: &[u8]) -> bool {
    let Some(header) = ip.get(..40) else {
        return false;
    };
    let payload_len = usize::from(u16::from_be_bytes([header[4], header[5]]));
    let address = |at: usize| -> &[u8; 16] { header[at..at + 16].try_into().expect("16 bytes") };
    header[0] >> 4 == 6
        && 40 + payload_len <= ip.len()
        && !is_link_local(address(8))
        && !is_link_local(address(24))
        && header[7] > 1
}

/// The FIB's answer for a lookup: the staged one when the stage looked this lookup up, else
/// `lookup`'s (debug builds check the two agree).
#[inline(always)]
pub(super) fn staged_or_looked_up(
    staged: Option<StagedRoute>,
    lookup: impl Fn() -> Option<u32>,
) -> Option<u32> {
    match staged.and_then(|s| s.fib_answer()) {
        Some(value) => {
            debug_assert_eq!(value, lookup(), "staged route differs");
            value
        }
        None => lookup(),
    }
}

impl Forwarder {
    /// The VRF a burst from `in_port` is most likely routed in: a routed port's, else the
    /// default VRF (a frame on a VLAN interface of another VRF only wastes its staging).
    /// `None` when nothing from the port can be routed: it is not a routed port and the
    /// switch has no VLAN interface (interfaces are fixed at start), so bridging alone pays
    /// nothing for the stage.
    #[inline]
    pub(crate) fn staging_vrf(&self, in_port: u16) -> Option<u16> {
        let vrf = match self.ports.get(usize::from(in_port)).map(|p| &p.mode) {
            Some(PortMode::Routed { interface }) => self
                .interfaces
                .get(usize::from(*interface))
                .map_or(0, |i| i.vrf),
            _ if self.vlan_interfaces => 0,
            _ => return None,
        };
        (usize::from(vrf) < self.fib4.len() && usize::from(vrf) < self.fib6.len()).then_some(vrf)
    }

    /// Pass 3's hash: for a route to an ECMP group, the flow hash, and a prefetch of the
    /// group's flowlet slot for it.
    #[inline]
    fn stage_hash(&self, staged: &mut StagedRoute, frame: &[u8]) {
        let Some(value) = staged.value else {
            return;
        };
        let RouteTarget::Group(group) = route_value::decode(value) else {
            return;
        };
        let ip = &frame[usize::from(staged.l3)..];
        let hash = if staged.v6 {
            // A frame to a local SID hashes as its endpoint will, with the destination it
            // sets (`srv6::outer_hash`).
            let dst = staged.dst.to_be_bytes();
            let with_ports = staged.endpoint.is_none();
            flow_hash_ipv6_to(ip, dst, with_ports, self.flow_hash_seed)
        } else {
            let header_len = usize::from(ip[0] & 0x0f) * 4;
            if header_len < 20 || header_len > ip.len() {
                return;
            }
            flow_hash_ipv4(ip, header_len, self.flow_hash_seed)
        };
        staged.hash = Some(hash);
        if let Some(balancer) = self.balancers.get(group as usize) {
            balancer.prefetch_slot(hash);
        }
    }

    /// Hands what the burst stage found for the next frame to its processing; the engine sets
    /// it right before each frame (`StagedRoute::default()`: nothing staged).
    #[inline]
    pub fn set_staged_route(&mut self, staged: StagedRoute) {
        self.staged = staged;
    }

    /// What was staged for this lookup, if the frame's staging was for it; either way the
    /// staging is used up (it belongs to the first lookup of one frame).
    #[inline(always)]
    pub(super) fn take_staged(&mut self, v6: bool, vrf: u16, dst: u128) -> Option<StagedRoute> {
        let staged = self.staged;
        self.staged.clear();
        staged.is_for(v6, vrf, dst).then_some(staged)
    }
}
