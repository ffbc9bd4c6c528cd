//! SRv6 in the forwarder: the my-SID table (`my_sid` in the P4 program), endpoint behaviours
//! (RFC 8986 End, End.X, End.DT4/DT6/DT46 with the PSP and USP flavours; RFC 9800 NEXT-C-SID
//! for uN and uA) and the H.Encaps / H.Encaps.Red headend.
//!
//! Checks run in the RFC's order and before the packet is changed, so a packet that is dropped
//! with an ICMPv6 error (`Verdict::DropWithIcmpError`) is still the one that arrived.

use super::{Forwarder, ForwarderError, RouteTarget, Unsent, route_value};
use crate::clock::Picos;
use crate::counters::{DropReason, Srv6Counters};
use crate::pipeline::spec::{MAX_SRH_SEGMENTS, SidBehavior, SidSpec, Srv6Spec};
use crate::pipeline::{Frame, Icmpv6Error, PuntReason, Verdict};
use crate::tables::SidTable;
use crate::wire::checksum;
use crate::wire::ip::protocol;
use crate::wire::srh::{self, SrhPacket};
use crate::wire::{Ipv6Packet, walk_extension_headers};
use std::net::Ipv6Addr;
use std::sync::Arc;

// Run-time policy replacement (crate::ctl).
#[path = "srv6_ctl.rs"]
mod srv6_ctl;
pub use srv6_ctl::{PolicyBackup, Srv6Undo};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ICMPV6_TIME_EXCEEDED: u8 = 3;
const ICMPV6_PARAM_PROBLEM: u8 = 4;
/// Parameter Problem codes: erroneous header field, SR Upper-layer Header Error (RFC 8754).
const PARAM_PROBLEM_FIELD: u8 = 0;
const PARAM_PROBLEM_SR_UPPER_LAYER: u8 = 4;
/// Offset of Routing Type in any Routing header (RFC 8200 4.4), where an unrecognised type's
/// Parameter Problem points.
const ROUTING_TYPE_OFFSET: usize = 2;
/// Local SIDs one packet may go through (e.g. uN then uA of the same node); bounds the work
/// a crafted packet can cause.
pub(super) const MAX_LOCAL_SIDS: u8 = 8;
/// Largest SRH a policy may push (the SRH format's limit, see
/// [`crate::pipeline::spec::MAX_SRH_SEGMENTS`]); frames it does not leave room for in the
/// mbuf are dropped as `no_headroom`.
pub const MAX_POLICY_SRH_LEN: usize = 8 + MAX_SRH_SEGMENTS * 16;

/// NEXT-C-SID shift parameters, precomputed as masks over the address as a `u128`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Csid {
    block_mask: u128,
    argument_mask: u128,
    shift: u32,
}

impl Csid {
    /// `block_bits` (LBL) and `shift_bits` (LNFL); the argument is the rest of the address.
    pub(crate) fn new(block_bits: u8, shift_bits: u8) -> Option<Csid> {
        let (block, shift) = (u32::from(block_bits), u32::from(shift_bits));
        if shift == 0 || block + shift >= 128 {
            return None;
        }
        Some(Csid {
            block_mask: u128::MAX.checked_shl(128 - block).unwrap_or(0),
            argument_mask: u128::MAX >> (block + shift),
            shift,
        })
    }

    /// Block mask, argument mask and shift (the P4 `un`/`ua` action parameters).
    pub(crate) fn masks(&self) -> (u128, u128, u32) {
        (self.block_mask, self.argument_mask, self.shift)
    }

    /// The new destination per RFC 9800 (argument moved up by the shift, zeros after it), or
    /// `None` when the argument is zero (end of the container).
    #[inline]
    pub(crate) fn shifted(&self, da: u128) -> Option<u128> {
        let argument = da & self.argument_mask;
        (argument != 0).then(|| (da & self.block_mask) | (argument << self.shift))
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Sid {
    behavior: SidBehavior,
    csid: Option<Csid>,
    psp: bool,
    usp: bool,
}

#[derive(Debug, Clone)]
pub struct Policy {
    source: [u8; 16],
    first_segment: [u8; 16],
    hop_limit: u8,
    outer_vrf: u16,
    /// The SRH to push, next header still 0 (set per packet); empty when none is pushed.
    srh: Vec<u8>,
}

/// SRv6 tables and counters of one forwarder.
#[derive(Debug, Default)]
pub(crate) struct Srv6State {
    /// Per VRF; `None` when the VRF has no SID, so plain routing skips the lookup.
    my_sid: Vec<Option<SidTable>>,
    /// By slot; `None` where a SID was deleted at run time (the slot is free again).
    sids: Vec<Option<Sid>>,
    policies: Vec<Policy>,
    /// Parallel to `policies`: false where a policy was deleted at run time.
    policy_live: Vec<bool>,
    pub(super) counters: Arc<Srv6Counters>,
    /// Local SIDs processed for the current packet.
    pub(super) local_passes: u8,
}

impl Srv6State {
    pub(super) fn new(spec: &Srv6Spec, fw: &Forwarder) -> Result<Srv6State, ForwarderError> {
        let vrfs = fw.fib6.len();
        let mut state = Srv6State {
            my_sid: (0..vrfs).map(|_| None).collect(),
            sids: Vec::with_capacity(spec.sids.len()),
            policies: Vec::with_capacity(spec.policies.len()),
            policy_live: Vec::with_capacity(spec.policies.len()),
            // Room for what the control plane may add at run time (crate::ctl).
            counters: Arc::new(Srv6Counters::new(
                spec.sids.len() + crate::ctl::RUNTIME_SRV6_SLOTS,
                spec.policies.len() + crate::ctl::RUNTIME_SRV6_SLOTS,
            )),
            local_passes: 0,
        };
        for (index, s) in spec.sids.iter().enumerate() {
            let sid = Self::build_sid(s, vrfs, fw.nexthops.len(), |g| fw.group_live(g))?;
            state.my_sid[usize::from(s.vrf)]
                .get_or_insert_with(SidTable::new)
                .insert(s.prefix, s.len, index as u32)
                .map_err(|e| ForwarderError(format!("SID {}: {e}", s.name)))?;
            state.sids.push(Some(sid));
        }
        for p in &spec.policies {
            state.policies.push(Self::build_policy(p, vrfs)?);
            state.policy_live.push(true);
        }
        Ok(state)
    }

    /// The fast-path form of local SID `s`, or why it cannot be one. `nexthops` and
    /// `group_live` say what an End.X / uA may point at.
    pub(crate) fn build_sid(
        s: &SidSpec,
        vrfs: usize,
        nexthops: usize,
        group_live: impl Fn(u32) -> bool,
    ) -> Result<Sid, ForwarderError> {
        let err = |m: String| Err(ForwarderError(m));
        let what = format!("SID {}", s.name);
        let check_vrf = |vrf: u16| -> Result<(), ForwarderError> {
            if usize::from(vrf) >= vrfs {
                return Err(ForwarderError(format!("{what}: VRF {vrf} does not exist")));
            }
            Ok(())
        };
        check_vrf(s.vrf)?;
        if s.len > 128 {
            return err(format!(
                "{what}: prefix length {} is longer than 128",
                s.len
            ));
        }
        match s.behavior {
            SidBehavior::EndX {
                target: RouteTarget::Nexthop(n),
            } if (n as usize) < nexthops => {}
            SidBehavior::EndX {
                target: RouteTarget::Group(g),
            } if group_live(g) => {}
            SidBehavior::EndX { .. } => {
                return err(format!(
                    "{what}: End.X needs an existing nexthop or ECMP group"
                ));
            }
            SidBehavior::EndDt4 { vrf }
            | SidBehavior::EndDt6 { vrf }
            | SidBehavior::EndDt46 { vrf } => check_vrf(vrf)?,
            SidBehavior::End => {}
        }
        let decap = matches!(
            s.behavior,
            SidBehavior::EndDt4 { .. } | SidBehavior::EndDt6 { .. } | SidBehavior::EndDt46 { .. }
        );
        if decap && (s.psp || s.usp || s.next_csid.is_some()) {
            return err(format!(
                "{what}: PSP, USP and NEXT-C-SID apply to End and End.X only"
            ));
        }
        let csid = match s.next_csid {
            Some(f) => Some(Csid::new(f.block_bits, f.shift_bits).ok_or_else(|| {
                ForwarderError(format!(
                    "{what}: block {} + shift {} bits must leave an argument (< 128) and the shift must not be 0",
                    f.block_bits, f.shift_bits
                ))
            })?),
            None => None,
        };
        Ok(Sid {
            behavior: s.behavior,
            csid,
            psp: s.psp,
            usp: s.usp,
        })
    }

    /// Whether policy `index` exists (routes may point at it).
    pub(super) fn policy_live(&self, index: u32) -> bool {
        self.policy_live
            .get(index as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Whether `vrf` has any local SID (else no IPv6 frame of it needs the my-SID table).
    #[inline(always)]
    pub(super) fn has_sids(&self, vrf: u16) -> bool {
        self.my_sid
            .get(usize::from(vrf))
            .is_some_and(Option::is_some)
    }

    /// The local SID matching `dst` in `vrf`, if any.
    #[inline(always)]
    pub(super) fn lookup_sid(&self, vrf: u16, dst: Ipv6Addr) -> Option<u32> {
        self.my_sid.get(usize::from(vrf))?.as_ref()?.lookup(dst)
    }

    /// The one step of local SID `sid` for a packet to `dst` (`ip` from its IPv6 header on),
    /// when the SID is End (with or without NEXT-C-SID) and the step is: a uN shift of a
    /// non-zero argument, or else (RFC 8986 4.1) an SRH that passes every check with Segments
    /// Left above 0 and is not removed (PSP on the last segment shrinks the packet). Where the
    /// step leads is not checked.
    /// `memo` holds what an earlier frame's SRH gave (`SrhMemo`): a burst's End frames as a
    /// rule carry one policy's SRH.
    #[inline(always)]
    pub(super) fn endpoint_step(
        &self,
        sid: u32,
        dst: u128,
        ip: &[u8],
        memo: &mut SrhMemo,
    ) -> Option<(u128, EndpointStep)> {
        let Some(Some(sid)) = self.sids.get(sid as usize) else {
            return None;
        };
        if !matches!(sid.behavior, SidBehavior::End) {
            return None;
        }
        match sid.csid.and_then(|c| c.shifted(dst)) {
            Some(shifted) => Some((shifted, EndpointStep::Shift)),
            None => {
                let (offset, segments_left, segment) = memo.next_segment(ip)?;
                if sid.psp && segments_left == 1 {
                    return None;
                }
                let offset = u8::try_from(offset).ok()?;
                Some((u128::from(segment), EndpointStep::Srh { offset }))
            }
        }
    }

    /// Whether an endpoint step to `next` in `vrf` goes on to the FIB: `next` is neither
    /// link-local nor another local SID.
    #[inline(always)]
    pub(super) fn leads_to_fib(&self, vrf: u16, next: u128) -> bool {
        !super::is_link_local(&next.to_be_bytes())
            && self.lookup_sid(vrf, Ipv6Addr::from(next)).is_none()
    }
}

/// How an express frame's endpoint reaches its next destination (`Srv6State::endpoint_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointStep {
    /// A uN shift of the destination.
    Shift,
    /// The SRH at `offset` from the IPv6 header: Segments Left goes down by one and the
    /// destination becomes the segment it then points at.
    Srh { offset: u8 },
}

/// What the SRH checks of `SrhMemo::next_segment` found for the last frame whose SRH came right
/// after its IPv6 header and before its upper layer (`srh_first_and_only`'s shape): the bytes
/// they read and the Segments Left they accepted. A frame with the same bytes, whole within
/// the frame, passes the same checks, so only its next segment is read. Fields: the IPv6
/// Payload Length and Next Header, the SRH's first five bytes (Next Header, Hdr Ext Len,
/// Routing Type, Segments Left, Last Entry); Segments Left 0 (never accepted) when none.
#[derive(Debug, Default, Clone, Copy)]
pub struct SrhMemo {
    key: u64,
    segments_left: u8,
}

impl SrhMemo {
    /// The SRH of `ip` (an IPv6 packet whose payload the frame holds) when End may process
    /// it (RFC 8986 4.1, the checks of `Forwarder::srv6_behavior` in its order): the extension
    /// headers walk, the SRH is valid, Segments Left is above 0 and the segment list is
    /// consistent. Returns its offset, Segments Left and the segment that comes next. Inlined
    /// into the express lane's pass 2: out of line, the call, saved registers and the result
    /// passed through memory cost End frames 71 instructions each (cachegrind), more than the
    /// checks themselves.
    #[inline(always)]
    fn next_segment(&mut self, ip: &[u8]) -> Option<(usize, u8, Ipv6Addr)> {
        let head: &[u8; 48] = ip.first_chunk()?;
        let (key, packet_end) = Self::key_of(head);
        if let Some(segment) = self.answered_segment(ip, key, packet_end) {
            return Some((40, self.segments_left, Ipv6Addr::from(*segment)));
        }
        match srh_first_and_only(ip, packet_end) {
            Some(found) => {
                if let Some((_, segments_left, _)) = found {
                    *self = SrhMemo { key, segments_left };
                }
                found
            }
            None => srh_next_segment_by_walk(ip, packet_end),
        }
    }

    /// The memo's key of an IPv6 header with the 8 bytes after it (`head`), and where its
    /// packet ends (40 + Payload Length). Two loads, not eight: bytes 4-6 in the key's low 24
    /// bits, bytes 40-44 above them (byte by byte, the compiler gathered the key with eight
    /// loads and fourteen shifts).
    #[inline(always)]
    fn key_of(head: &[u8; 48]) -> (u64, usize) {
        let word = |at: usize| u64::from_le_bytes(*head[at..].first_chunk().expect("8 bytes"));
        let key = (word(0) >> 32 & 0xff_ffff) | (word(40) & 0xff_ffff_ffff) << 24;
        (
            key,
            40 + usize::from(u16::from_be_bytes([head[4], head[5]])),
        )
    }

    /// The segment that comes next in `ip` (whose header and the 8 bytes after it give `key`
    /// and `packet_end`, `key_of`) when this memo answers for it: the same checked bytes, and
    /// the packet whole within the frame.
    #[inline(always)]
    fn answered_segment<'a>(
        &self,
        ip: &'a [u8],
        key: u64,
        packet_end: usize,
    ) -> Option<&'a [u8; 16]> {
        if key != self.key || self.segments_left == 0 || packet_end > ip.len() {
            return None;
        }
        let at = 48 + usize::from(self.segments_left - 1) * 16;
        ip.get(at..)?.first_chunk()
    }

    /// Whether `next_segment` answers `ip` from this memo, with `segment` as the segment
    /// that comes next: then an End SID that took a step for the frame that set the memo,
    /// to the same destination, takes the same step for `ip` (the checks read only the
    /// memo's bytes, and the step's result is the segment). The express lane's pass 2 takes
    /// a run of End frames of one policy whole on this test.
    #[inline(always)]
    pub(super) fn answers_with(&self, ip: &[u8], segment: [u8; 16]) -> bool {
        let Some(head) = ip.first_chunk::<48>() else {
            return false;
        };
        let (key, packet_end) = Self::key_of(head);
        self.answered_segment(ip, key, packet_end) == Some(&segment)
    }
}

/// `SrhMemo::next_segment` for any chain of extension headers. Out of line: rare, and long.
#[inline(never)]
fn srh_next_segment_by_walk(ip: &[u8], packet_end: usize) -> Option<(usize, u8, Ipv6Addr)> {
    let upper = walk_extension_headers(&Ipv6Packet::new_unchecked(ip.get(..packet_end)?)).ok()?;
    let offset = upper.srh_offset?;
    let view = SrhPacket::new_checked(ip.get(offset..packet_end)?).ok()?;
    let segments_left = view.segments_left();
    if segments_left == 0 || view.check_segments().is_err() {
        return None;
    }
    // A Routing header of an unknown type with segments left before the SRH is refused
    // (`Forwarder::srv6_behavior`).
    if offset != 40 && unrecognized_routing_header(ip, upper.offset).is_some() {
        return None;
    }
    Some((offset, segments_left, view.segment(segments_left - 1)?))
}

/// RFC 8200 4.4: the Routing header of `ip` that makes this node, the packet's destination,
/// discard it with a Parameter Problem: one of a type it does not recognise (any but the SRH,
/// type 4) with Segments Left not zero, met before an SRH with Segments Left not zero (the
/// node acts on that one and leaves the headers after it to later segments). Routing headers
/// with Segments Left 0 are passed over, as the RFC asks. Returns its offset from the IPv6
/// header. `upper_offset` is where `walk_extension_headers` stopped, having checked every
/// header length before it.
#[cold]
#[inline(never)]
fn unrecognized_routing_header(ip: &[u8], upper_offset: usize) -> Option<usize> {
    let mut header = *ip.get(6)?;
    let mut offset = 40;
    while offset < upper_offset {
        let rest = ip.get(offset..)?;
        if header == protocol::ROUTING {
            let routing_type = *rest.get(ROUTING_TYPE_OFFSET)?;
            let segments_left = *rest.get(srh::SEGMENTS_LEFT_OFFSET)?;
            if segments_left != 0 {
                return (routing_type != crate::wire::ipv6::ROUTING_TYPE_SRH).then_some(offset);
            }
        }
        offset += match header {
            protocol::FRAGMENT => 8,
            protocol::AH => (usize::from(*rest.get(1)?) + 2) * 4,
            _ => (usize::from(*rest.get(1)?) + 1) * 8,
        };
        header = *rest.first()?;
    }
    None
}

/// `srh_next_segment` for the usual SRv6 packet, an SRH right after the IPv6 header and then
/// the upper layer, without the general walk: `None` when the packet is not of that shape
/// (then the walk decides), else what the walk and the checks after it find. The walk would
/// take the SRH at offset 40 whole (at least its 8 fixed bytes, within the packet) and stop
/// at the header after it.
#[inline(always)]
fn srh_first_and_only(ip: &[u8], packet_end: usize) -> Option<Option<(usize, u8, Ipv6Addr)>> {
    let srh = ip.get(40..packet_end)?;
    let (
        &[
            next_header,
            hdr_ext_len,
            routing_type,
            segments_left,
            last_entry,
        ],
        _,
    ) = srh.split_first_chunk::<5>()?;
    let header_len = (usize::from(hdr_ext_len) + 1) * 8;
    if ip[6] != protocol::ROUTING
        || routing_type != crate::wire::ipv6::ROUTING_TYPE_SRH
        || header_len > srh.len()
        || crate::wire::ipv6::is_extension_header(next_header)
    {
        return None;
    }
    // RFC 8986 S04-S05 (`SrhPacket::check_segments`), and Segments Left above 0.
    if segments_left == 0
        || usize::from(last_entry) + 1 > usize::from(hdr_ext_len) / 2
        || segments_left > last_entry.saturating_add(1)
    {
        return Some(None);
    }
    // Within the header: segments_left - 1 <= last_entry < hdr_ext_len / 2.
    let at = 8 + usize::from(segments_left - 1) * 16;
    let segment: [u8; 16] = srh.get(at..at + 16)?.try_into().ok()?;
    Some(Some((40, segments_left, Ipv6Addr::from(segment))))
}

/// What an endpoint decided before forwarding.
enum Next {
    /// Look the (new) destination up again: my-SID table, then FIB.
    Lookup,
    /// Out to this adjacency (End.X, uA).
    Adjacency(RouteTarget),
}

fn drop_with_error(
    reason: DropReason,
    msg_type: u8,
    code: u8,
    pointer: usize,
    vrf: u16,
) -> Verdict {
    Verdict::DropWithIcmpError {
        reason,
        error: Icmpv6Error {
            msg_type,
            code,
            pointer: u16::try_from(pointer).unwrap_or(u16::MAX),
            vrf,
        },
    }
}

fn reason_of(verdict: &Verdict) -> Option<DropReason> {
    match verdict {
        Verdict::Drop(reason)
        | Verdict::DropWithIcmpError { reason, .. }
        | Verdict::DropWithRouterError { reason, .. } => Some(*reason),
        _ => None,
    }
}

/// Offset, from the IPv6 header, of the Next Header field that names the header at `target`
/// (an offset the extension-header walk reached). `None` if the chain does not lead there.
fn next_header_field_before(ip: &[u8], target: usize) -> Option<usize> {
    let mut field = 6;
    let mut offset = 40;
    let mut header = *ip.get(6)?;
    while offset < target {
        let len = match header {
            protocol::FRAGMENT => 8,
            protocol::AH => (usize::from(*ip.get(offset + 1)?) + 2) * 4,
            _ => (usize::from(*ip.get(offset + 1)?) + 1) * 8,
        };
        field = offset;
        header = *ip.get(offset)?;
        offset += len;
    }
    (offset == target).then_some(field)
}

impl Forwarder {
    /// The per-SID and per-policy counters this forwarder writes (for the run's report).
    pub fn srv6_counters(&self) -> Arc<Srv6Counters> {
        Arc::clone(&self.srv6.counters)
    }

    /// A packet to local SID `sid`: counts it for the SID and runs the behaviour.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn srv6_endpoint(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        vrf: u16,
        sid: u32,
        now: Picos,
    ) -> Verdict {
        let arrived_len = frame.len();
        // Every SID the packet reaches counts it, one more pass each (the one past the limit
        // too, so the SID before it knows it was not the last).
        let pass = self.srv6.local_passes;
        self.srv6.local_passes = pass + 1;
        let verdict = if pass >= MAX_LOCAL_SIDS {
            Verdict::Drop(DropReason::Srv6TooManyLocalSids)
        } else {
            self.srv6_behavior(frame, l3, tagged, in_iface, vrf, sid, now)
        };
        if let Some(counters) = self.srv6.counters.sids.get(sid as usize) {
            // A drop is the last SID's, the one where it happened: a SID whose step led to
            // another local SID leaves it to that one (a packet is one drop).
            let dropped = reason_of(&verdict).filter(|_| self.srv6.local_passes == pass + 1);
            counters.count(arrived_len, dropped);
        }
        verdict
    }

    #[allow(clippy::too_many_arguments)]
    fn srv6_behavior(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        vrf: u16,
        sid: u32,
        now: Picos,
    ) -> Verdict {
        let Some(&Some(sid)) = self.srv6.sids.get(sid as usize) else {
            return Verdict::Drop(DropReason::NoRoute);
        };
        let ip = &frame[l3..];
        let hop_limit = ip[7];
        let forwarding = match sid.behavior {
            SidBehavior::End => Some(Next::Lookup),
            SidBehavior::EndX { target } => Some(Next::Adjacency(target)),
            _ => None,
        };

        // RFC 9800 4.1: with NEXT-C-SID, a non-zero argument is shifted in before any SRH or
        // upper-layer processing; Segments Left is not touched.
        if let (Some(next), Some(csid)) = (&forwarding, sid.csid) {
            let da = u128::from_be_bytes(ip[24..40].try_into().expect("16 bytes"));
            if let Some(new_da) = csid.shifted(da) {
                if hop_limit <= 1 {
                    return drop_with_error(
                        DropReason::Srv6HopLimit,
                        ICMPV6_TIME_EXCEEDED,
                        0,
                        0,
                        vrf,
                    );
                }
                let ip = &mut frame[l3..];
                ip[24..40].copy_from_slice(&new_da.to_be_bytes());
                ip[7] = hop_limit - 1;
                let next = match next {
                    Next::Lookup => Next::Lookup,
                    Next::Adjacency(t) => Next::Adjacency(*t),
                };
                return self.srv6_forward(frame, l3, tagged, in_iface, vrf, next, now);
            }
        }

        let packet = Ipv6Packet::new_unchecked(ip);
        let Ok(upper) = walk_extension_headers(&packet) else {
            return Verdict::Drop(DropReason::Srv6MalformedHeaders);
        };
        // RFC 8200 4.4: a Routing header of a type this node does not know (any but the SRH)
        // is ignored with Segments Left 0, else refused with a Parameter Problem at its type.
        // The usual chains, none or just an SRH right after the IPv6 header, hold no such
        // header; only other chains are walked again.
        let only_an_srh = match upper.srh_offset {
            None => upper.offset == 40,
            Some(40) => !crate::wire::ipv6::is_extension_header(ip[40]),
            Some(_) => false,
        };
        if !only_an_srh && let Some(offset) = unrecognized_routing_header(ip, upper.offset) {
            return drop_with_error(
                DropReason::Srv6BadSrh,
                ICMPV6_PARAM_PROBLEM,
                PARAM_PROBLEM_FIELD,
                offset + ROUTING_TYPE_OFFSET,
                vrf,
            );
        }
        let packet_end = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let srh_view = match upper.srh_offset {
            Some(offset) => match SrhPacket::new_checked(&ip[offset..packet_end]) {
                Ok(view) => Some((offset, view)),
                Err(_) => return Verdict::Drop(DropReason::Srv6MalformedHeaders),
            },
            None => None,
        };

        let Some(next) = forwarding else {
            // End.DT4 / End.DT6 / End.DT46 (RFC 8986 4.6-4.8): Segments Left must be 0, then
            // the upper layer must be an inner packet of the right family.
            if let Some((offset, view)) = &srh_view
                && view.segments_left() != 0
            {
                return drop_with_error(
                    DropReason::Srv6SegmentsLeftNotZero,
                    ICMPV6_PARAM_PROBLEM,
                    PARAM_PROBLEM_FIELD,
                    offset + srh::SEGMENTS_LEFT_OFFSET,
                    vrf,
                );
            }
            let table = match (sid.behavior, upper.protocol) {
                (SidBehavior::EndDt4 { vrf } | SidBehavior::EndDt46 { vrf }, protocol::IPV4) => {
                    Some(vrf)
                }
                (SidBehavior::EndDt6 { vrf } | SidBehavior::EndDt46 { vrf }, protocol::IPV6) => {
                    Some(vrf)
                }
                _ => None,
            };
            return match table {
                Some(table) if !upper.fragment => self.srv6_decapsulate(
                    frame,
                    l3,
                    tagged,
                    in_iface,
                    upper.offset,
                    packet_end,
                    upper.protocol,
                    table,
                    now,
                ),
                _ => self.srv6_upper_layer(upper.protocol, upper.offset, in_iface, vrf),
            };
        };

        // RFC 8986 4.1 End (and End.X, 4.2): the SRH.
        let Some((offset, view)) = srh_view else {
            // No SRH: upper-layer processing (RFC 8986 4.1.1).
            return self.srv6_upper_layer(upper.protocol, upper.offset, in_iface, vrf);
        };
        let segments_left = view.segments_left();
        if segments_left == 0 {
            // S02: process the next header. USP (4.16.2) removes the SRH first, but only for a
            // packet the switch will deliver: an error quotes the packet as it arrived.
            let srh_len = view.header_len();
            let verdict = self.srv6_upper_layer(upper.protocol, upper.offset, in_iface, vrf);
            if sid.usp && matches!(verdict, Verdict::Punt { .. }) {
                self.srv6_remove_srh(frame, l3, offset, srh_len);
            }
            return verdict;
        }
        if hop_limit <= 1 {
            return drop_with_error(DropReason::Srv6HopLimit, ICMPV6_TIME_EXCEEDED, 0, 0, vrf);
        }
        if view.check_segments().is_err() {
            return drop_with_error(
                DropReason::Srv6BadSrh,
                ICMPV6_PARAM_PROBLEM,
                PARAM_PROBLEM_FIELD,
                offset + srh::SEGMENTS_LEFT_OFFSET,
                vrf,
            );
        }
        let segments_left = segments_left - 1;
        let Some(segment) = view.segment(segments_left) else {
            // check_len and check_segments put every index <= Last Entry in the header.
            return Verdict::Drop(DropReason::Srv6MalformedHeaders);
        };
        let srh_len = view.header_len();
        let ip = &mut frame[l3..];
        ip[7] = hop_limit - 1;
        ip[offset + srh::SEGMENTS_LEFT_OFFSET] = segments_left;
        ip[24..40].copy_from_slice(&segment.octets());
        if sid.psp && segments_left == 0 {
            self.srv6_remove_srh(frame, l3, offset, srh_len);
        }
        self.srv6_forward(frame, l3, tagged, in_iface, vrf, next, now)
    }

    /// RFC 8986 4.1.1: the switch takes ICMPv6 (echo to a SID answers like a ping of the
    /// switch); anything else is a Parameter Problem, code 4, pointing at the upper layer.
    fn srv6_upper_layer(
        &mut self,
        upper_protocol: u8,
        upper_offset: usize,
        in_iface: u16,
        vrf: u16,
    ) -> Verdict {
        if upper_protocol == protocol::ICMPV6 {
            return Verdict::Punt {
                reason: PuntReason::LocalSid,
                interface: in_iface,
            };
        }
        drop_with_error(
            DropReason::Srv6UpperLayer,
            ICMPV6_PARAM_PROBLEM,
            PARAM_PROBLEM_SR_UPPER_LAYER,
            upper_offset,
            vrf,
        )
    }

    /// PSP / USP: takes the SRH at `srh_offset` (from the IPv6 header) out of the packet by
    /// moving the L2 and IPv6 headers (and any extension header before the SRH) forward.
    fn srv6_remove_srh(&mut self, frame: &mut Frame<'_>, l3: usize, srh_offset: usize, len: usize) {
        let ip = &mut frame[l3..];
        let Some(field) = next_header_field_before(ip, srh_offset) else {
            return;
        };
        ip[field] = ip[srh_offset];
        let payload = u16::from_be_bytes([ip[4], ip[5]]).saturating_sub(len as u16);
        ip[4..6].copy_from_slice(&payload.to_be_bytes());
        frame.copy_within(0..l3 + srh_offset, len);
        frame.shrink_front(len);
    }

    /// End.DT*: the inner packet at `inner_offset` (from the IPv6 header) replaces the outer
    /// headers behind the same L2 header, and is routed in VRF `table`.
    #[allow(clippy::too_many_arguments)]
    fn srv6_decapsulate(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        inner_offset: usize,
        packet_end: usize,
        inner_protocol: u8,
        table: u16,
        now: Picos,
    ) -> Verdict {
        frame.truncate(l3 + packet_end);
        frame.copy_within(0..l3, inner_offset);
        frame.shrink_front(inner_offset);
        let ethertype = if inner_protocol == protocol::IPV4 {
            ETHERTYPE_IPV4
        } else {
            ETHERTYPE_IPV6
        };
        frame[l3 - 2..l3].copy_from_slice(&ethertype.to_be_bytes());
        let verdict = if ethertype == ETHERTYPE_IPV4 {
            self.route_ipv4(frame, l3, tagged, in_iface, table, now)
        } else {
            self.route_ipv6(frame, l3, tagged, in_iface, table, now)
        };
        // The inner packet belongs to the tenant VRF `table` while the ingress interface (the
        // error's source) is in the underlay, and the frame no longer holds the packet that
        // arrived: an error could neither be quoted nor sourced truthfully. Silent drop.
        // Fragments would be routed as arrived, in the underlay: the same reasons.
        match verdict {
            Verdict::DropWithRouterError { reason, .. } => Verdict::Drop(reason),
            Verdict::Fragment { .. } => Verdict::Drop(DropReason::MtuExceeded),
            other => other,
        }
    }

    /// After an endpoint changed the destination: another local SID, or the FIB (End) or the
    /// adjacency (End.X) without a second hop-limit decrement.
    #[allow(clippy::too_many_arguments)]
    fn srv6_forward(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        vrf: u16,
        next: Next,
        now: Picos,
    ) -> Verdict {
        let ip = &frame[l3..];
        let dst_bytes: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_bytes);
        if super::is_link_local(&dst_bytes) {
            // A segment may not send the packet to a link-local address (never routed).
            return Verdict::Drop(DropReason::LinkLocal);
        }
        let target = match next {
            Next::Adjacency(target) => target,
            Next::Lookup => {
                if let Some(sid) = self.srv6.lookup_sid(vrf, dst) {
                    return self.srv6_endpoint(frame, l3, tagged, in_iface, vrf, sid, now);
                }
                let Some(value) = self.fib6[usize::from(vrf)].lookup(dst) else {
                    return Verdict::Drop(DropReason::NoRoute);
                };
                route_value::decode(value)
            }
        };
        if matches!(target, RouteTarget::Local) {
            return Verdict::Punt {
                reason: PuntReason::Local,
                interface: in_iface,
            };
        }
        let hash = outer_hash(ip, self.flow_hash_seed);
        let packet_len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        match self.resolve_target(target, || dst.into(), || hash, packet_len, now) {
            Ok((out_iface, dst_mac)) => self.egress_l2(frame, tagged, out_iface, dst_mac, now),
            // The packet as this node sends it is quoted (as Linux's seg6local does): the
            // step has changed it already. Checked before the neighbour (`resolve_target`).
            Err(Unsent::TooBig(out_iface)) => self.exceeds_mtu(out_iface, 0, false, in_iface, vrf),
            Err(Unsent::Drop(reason)) => Verdict::Drop(reason),
        }
    }

    /// A route with SRv6 policy `policy` matched: H.Encaps or H.Encaps.Red.
    #[inline(never)]
    pub(super) fn srv6_headend(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        policy: u32,
        now: Picos,
    ) -> Verdict {
        let arrived_len = frame.len();
        let verdict = self.srv6_encapsulate(frame, l3, tagged, in_iface, policy as usize, now);
        if let Some(counters) = self.srv6.counters.policies.get(policy as usize) {
            counters.count(arrived_len, reason_of(&verdict));
        }
        verdict
    }

    fn srv6_encapsulate(
        &mut self,
        frame: &mut Frame<'_>,
        l3: usize,
        tagged: bool,
        in_iface: u16,
        policy: usize,
        now: Picos,
    ) -> Verdict {
        let Some(p) = self.srv6.policies.get(policy) else {
            return Verdict::Drop(DropReason::NoRoute);
        };
        let (source, first_segment, outer_hop_limit, outer_vrf) =
            (p.source, p.first_segment, p.hop_limit, p.outer_vrf);
        let srh_len = p.srh.len();
        let ingress_vrf = self.interfaces[usize::from(in_iface)].vrf;
        let ip = &frame[l3..];
        // The inner packet is forwarded by this node first: its TTL or hop limit is checked
        // and decremented like any routed packet's (as Linux does before seg6 encap).
        let (inner_len, inner_protocol, traffic_class, hash) = if ip[0] >> 4 == 4 {
            // route_ipv4 validated the header.
            let header_len = usize::from(ip[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if ip[8] <= 1 {
                return super::router_error(DropReason::TtlExpired, in_iface, ingress_vrf);
            }
            (
                total,
                protocol::IPV4,
                ip[1],
                super::flow_hash_ipv4(ip, header_len, self.flow_hash_seed),
            )
        } else {
            let (src, dst) = (&ip[8..24], &ip[24..40]);
            if super::is_link_local(src.try_into().expect("16 bytes"))
                || super::is_link_local(dst.try_into().expect("16 bytes"))
            {
                return Verdict::Drop(DropReason::LinkLocal);
            }
            if ip[7] <= 1 {
                return super::router_error(DropReason::TtlExpired, in_iface, ingress_vrf);
            }
            let tc = (ip[0] << 4) | (ip[1] >> 4);
            let len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            (
                len,
                protocol::IPV6,
                tc,
                super::flow_hash_ipv6(ip, self.flow_hash_seed),
            )
        };
        let may_fragment =
            inner_protocol == protocol::IPV4 && ip[6] & super::IPV4_DONT_FRAGMENT == 0;
        let outer_len = 40 + srh_len;
        let Ok(payload_len) = u16::try_from(srh_len + inner_len) else {
            return Verdict::Drop(DropReason::NoHeadroom);
        };
        // Where the encapsulated packet goes is found before the packet changes, so that a
        // packet too big for that interface is answered with itself quoted.
        let dst = Ipv6Addr::from(first_segment);
        // A first segment that is one of this switch's SIDs is processed right here (SIDs are
        // in the my-SID table, not the FIB).
        let local_sid = self.srv6.lookup_sid(outer_vrf, dst);
        let target = match local_sid {
            Some(_) => RouteTarget::Local,
            None => match self.fib6[usize::from(outer_vrf)].lookup(dst) {
                Some(value) => route_value::decode(value),
                // The inner packet's source hears of it, as of any packet without a route.
                None => return super::router_error(DropReason::NoRoute, in_iface, ingress_vrf),
            },
        };
        let egress = if matches!(target, RouteTarget::Local) {
            None
        } else {
            let len = outer_len + inner_len;
            match self.resolve_target(target, || dst.into(), || hash, len, now) {
                Ok(found) => Some(found),
                // Checked before the neighbour (`resolve_target`).
                Err(Unsent::TooBig(out_iface)) => {
                    return self.exceeds_mtu(
                        out_iface,
                        outer_len,
                        may_fragment,
                        in_iface,
                        ingress_vrf,
                    );
                }
                Err(Unsent::Drop(reason)) => return Verdict::Drop(reason),
            }
        };
        // Ethernet padding does not enter the tunnel (and is not moved if the frame must be).
        frame.truncate(l3 + inner_len);
        if !frame.grow_front(outer_len) {
            return Verdict::Drop(DropReason::NoHeadroom);
        }
        // Decrement the inner TTL / hop limit (now at l3 + outer_len).
        let inner = l3 + outer_len;
        if inner_protocol == protocol::IPV4 {
            let old = u16::from_be_bytes([frame[inner + 8], frame[inner + 9]]);
            frame[inner + 8] -= 1;
            let new = u16::from_be_bytes([frame[inner + 8], frame[inner + 9]]);
            let csum = u16::from_be_bytes([frame[inner + 10], frame[inner + 11]]);
            let csum = checksum::update_u16(csum, old, new);
            frame[inner + 10..inner + 12].copy_from_slice(&csum.to_be_bytes());
        } else {
            frame[inner + 7] -= 1;
        }
        frame.copy_within(outer_len..outer_len + l3, 0);
        frame[l3 - 2..l3].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        // Outer header: traffic class (DSCP + ECN) copied from the inner packet (RFC 2983
        // uniform model, RFC 6040 for ECN), flow label from the inner flow's hash (RFC 6437),
        // so transit ECMP spreads encapsulated flows like the flows themselves.
        let flow_label = hash & 0x000f_ffff;
        let outer = &mut frame[l3..l3 + outer_len];
        let first_word = (6u32 << 28) | (u32::from(traffic_class) << 20) | flow_label;
        outer[0..4].copy_from_slice(&first_word.to_be_bytes());
        outer[4..6].copy_from_slice(&payload_len.to_be_bytes());
        outer[6] = if srh_len == 0 {
            inner_protocol
        } else {
            protocol::ROUTING
        };
        outer[7] = outer_hop_limit;
        outer[8..24].copy_from_slice(&source);
        outer[24..40].copy_from_slice(&first_segment);
        if srh_len != 0 {
            let srh_bytes = &self.srv6.policies[policy].srh;
            outer[40..].copy_from_slice(srh_bytes);
            outer[40] = inner_protocol;
        }
        match egress {
            Some((out_iface, dst_mac)) => self.egress_l2(frame, tagged, out_iface, dst_mac, now),
            None => match local_sid {
                Some(sid) => self.srv6_endpoint(frame, l3, tagged, in_iface, outer_vrf, sid, now),
                None => Verdict::Punt {
                    reason: PuntReason::Local,
                    interface: in_iface,
                },
            },
        }
    }

    /// Routes an IPv6 packet the switch built (an ICMPv6 error) in `vrf`: FIB only, hop limit
    /// as built. `frame` is an untagged Ethernet frame. Drops if the destination is not
    /// routable or is the switch itself.
    pub fn route_originated_ipv6(
        &mut self,
        frame: &mut Frame<'_>,
        vrf: u16,
        now: Picos,
    ) -> Verdict {
        if frame.len() < 14 + 40 || usize::from(vrf) >= self.fib6.len() {
            return Verdict::Drop(DropReason::Truncated);
        }
        let dst_bytes: [u8; 16] = frame[14 + 24..14 + 40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_bytes);
        let target = match self.fib6[usize::from(vrf)].lookup(dst) {
            Some(value) => route_value::decode(value),
            None => return Verdict::Drop(DropReason::NoRoute),
        };
        if matches!(target, RouteTarget::Local | RouteTarget::Srv6Policy(_)) {
            return Verdict::Drop(DropReason::NoRoute);
        }
        let hash = outer_hash(&frame[14..], self.flow_hash_seed);
        let len = frame.len() - 14;
        match self.resolve_target(target, || dst.into(), || hash, len, now) {
            Ok((out_iface, dst_mac)) => self.egress_l2(frame, false, out_iface, dst_mac, now),
            Err(unsent) => Verdict::Drop(unsent.reason()),
        }
    }
}

/// ECMP hash of an SRv6 packet: addresses, flow label and next header (the flow label carries
/// the inner flow's entropy; ports are not looked for behind the SRH).
fn outer_hash(ip: &[u8], seed: u32) -> u32 {
    super::flow_hash_ipv6_to(ip, ip[24..40].try_into().expect("16 bytes"), false, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference shift on a bit vector, written from RFC 9800's words: copy bits
    /// [LBL+LNFL..127] to [LBL..LBL+AL-1], zero [LBL+AL..127].
    fn reference_shift(da: u128, block: usize, shift: usize) -> Option<u128> {
        let bits: Vec<bool> = (0..128).map(|i| da >> (127 - i) & 1 == 1).collect();
        let argument = &bits[block + shift..];
        if argument.iter().all(|b| !b) {
            return None;
        }
        let mut out = bits[..block].to_vec();
        out.extend_from_slice(argument);
        out.resize(128, false);
        Some(out.iter().fold(0u128, |acc, &b| (acc << 1) | u128::from(b)))
    }

    #[test]
    fn usid_shift_matches_the_rfc_for_every_block_and_usid_length() {
        let mut rng = crate::wire::test_util::XorShift::new(99);
        let mut combinations = 0;
        for block in 0..=128usize {
            for shift in 0..=128usize {
                let Some(csid) = Csid::new(block as u8, shift as u8) else {
                    assert!(
                        shift == 0 || block + shift >= 128,
                        "block {block} shift {shift} leaves an argument and must be accepted"
                    );
                    continue;
                };
                assert!(shift > 0 && block + shift < 128);
                combinations += 1;
                for _ in 0..8 {
                    let da = u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64());
                    assert_eq!(
                        csid.shifted(da),
                        reference_shift(da, block, shift),
                        "block {block} shift {shift} da {da:032x}"
                    );
                    // End of container: the argument is all zeros.
                    let exhausted = da & !(u128::MAX >> (block + shift));
                    assert_eq!(csid.shifted(exhausted), None);
                    // A single 1 in the last argument bit still shifts.
                    assert_eq!(
                        csid.shifted(exhausted | 1),
                        reference_shift(exhausted | 1, block, shift)
                    );
                }
            }
        }
        // Every block 0..=126 with every shift that leaves at least one argument bit.
        assert_eq!(combinations, (0..128).map(|b| 127 - b).sum::<usize>());
    }

    #[test]
    fn usid_shift_examples_from_rfc_9800_style_addresses() {
        let f3216 = Csid::new(32, 16).unwrap();
        let da: u128 = "fcbb:bb00:0100:0200:0300::"
            .parse::<Ipv6Addr>()
            .unwrap()
            .into();
        let next: u128 = "fcbb:bb00:0200:0300::".parse::<Ipv6Addr>().unwrap().into();
        assert_eq!(f3216.shifted(da), Some(next));
        let last: u128 = "fcbb:bb00:0300::".parse::<Ipv6Addr>().unwrap().into();
        assert_eq!(f3216.shifted(next), Some(last));
        assert_eq!(f3216.shifted(last), None);
        // uA installed as /64 with a 32-bit shift.
        let ua = Csid::new(32, 32).unwrap();
        let da: u128 = "fcbb:bb00:0100:e001:0200:0300::"
            .parse::<Ipv6Addr>()
            .unwrap()
            .into();
        let next: u128 = "fcbb:bb00:0200:0300::".parse::<Ipv6Addr>().unwrap().into();
        assert_eq!(ua.shifted(da), Some(next));
        assert!(Csid::new(0, 16).is_some(), "a 0-bit block is legal");
        assert!(Csid::new(32, 0).is_none());
        assert!(Csid::new(64, 64).is_none(), "no argument left");
    }

    #[test]
    fn an_srh_right_after_the_header_is_read_as_the_walk_reads_it() {
        // Packets whose first extension header is usually an SRH, with every field the walk
        // and the segment checks read drawn near its edges: header length, routing type,
        // Segments Left, Last Entry, the next header (an upper layer or another extension
        // header), the payload length against the bytes there are; read afresh and through
        // `SrhMemo`, whose memo of a packet answers for the same checked bytes.
        use crate::wire::test_util::XorShift;
        let mut rng = XorShift::new(0x5e90_fa57);
        let (mut fast, mut found, mut reused) = (0, 0, 0);
        let mut carried = SrhMemo::default();
        for _ in 0..200_000 {
            let hdr_ext_len = [0, 1, 2, 4, 6, 255][rng.below(6)] as u8;
            let header_len = (usize::from(hdr_ext_len) + 1) * 8;
            let mut ip = vec![0u8; 40 + header_len + 8];
            rng.fill(&mut ip);
            ip[6] = [protocol::ROUTING, protocol::ROUTING, protocol::UDP][rng.below(3)];
            let next = [
                17,
                41,
                59,
                protocol::ROUTING,
                protocol::HOP_BY_HOP,
                protocol::FRAGMENT,
            ];
            ip[40] = next[rng.below(next.len())];
            ip[41] = hdr_ext_len;
            ip[42] = if rng.below(8) == 0 { 3 } else { 4 };
            // Last Entry usually fits the header (hdr_ext_len / 2 - 1), Segments Left usually
            // at most Last Entry + 1.
            let last_entry = match rng.below(4) {
                0 => rng.next_u8(),
                _ => (hdr_ext_len / 2).saturating_sub(rng.below(2) as u8 + 1),
            };
            ip[43] = rng.below(usize::from(last_entry) + 3) as u8;
            ip[44] = last_entry;
            let payload = (header_len + 8) as isize + [0, 0, -1, -8, -400, 3][rng.below(6)];
            let payload = payload.max(0) as u16;
            ip[4..6].copy_from_slice(&payload.to_be_bytes());
            ip.truncate([ip.len(), ip.len(), 45, 40 + header_len - 1][rng.below(4)]);
            let packet_end = 40 + usize::from(payload);
            let want = srh_next_segment_by_walk(&ip, packet_end);
            let mut memo = SrhMemo::default();
            assert_eq!(memo.next_segment(&ip), want, "{ip:02x?}");
            // A memo another packet left (as a burst's previous frame does).
            assert_eq!(carried.next_segment(&ip), want, "{ip:02x?} after another");
            // The same checked bytes again (or one of them changed), with other segments,
            // maybe cut short: the memo of this packet answers as the walk does.
            let mut again = ip.clone();
            again.iter_mut().skip(48).for_each(|b| *b = rng.next_u8());
            if rng.below(4) == 0 && again.len() >= 45 {
                // One of the checked bytes differs: the memo must not answer.
                again[[4, 5, 6, 40, 41, 42, 43, 44][rng.below(8)]] = rng.next_u8();
            }
            if rng.below(4) == 0 {
                let shortest = again.len().min(45);
                again.truncate(shortest + rng.below(again.len() - shortest + 1));
            }
            let again_end = 40 + usize::from(u16::from_be_bytes([again[4], again[5]]));
            let want_again = srh_next_segment_by_walk(&again, again_end);
            reused += usize::from(want_again.is_some() && memo.segments_left != 0);
            assert_eq!(memo.next_segment(&again), want_again, "{again:02x?} again");
            let shortcut = srh_first_and_only(&ip, packet_end);
            fast += usize::from(shortcut.is_some());
            found += usize::from(matches!(shortcut, Some(Some(_))));
        }
        assert!(reused > 1_000, "{reused} segments found by a memo");
        // Both paths are taken often, and the shortcut often finds the segment.
        assert!(
            fast > 10_000 && fast < 190_000,
            "{fast} read without the walk"
        );
        assert!(found > 5_000, "{found} segments found without the walk");
    }

    #[test]
    fn next_header_field_is_found_through_extension_headers() {
        let mut ip = vec![0u8; 40 + 8 + 16];
        ip[6] = protocol::ROUTING;
        assert_eq!(next_header_field_before(&ip, 40), Some(6));
        ip[6] = protocol::HOP_BY_HOP;
        ip[40] = protocol::ROUTING;
        ip[41] = 0;
        assert_eq!(next_header_field_before(&ip, 48), Some(40));
        assert_eq!(next_header_field_before(&ip, 44), None);
        assert_eq!(next_header_field_before(&ip[..41], 48), None);
    }
}
