//! The bridging decision of the previous frame, reused for the frames right after it that carry
//! the same L2 header. Between two servers a burst is mostly one such run (the same MACs and
//! tag for every flow between them), and a bridged frame's verdict depends on nothing but its
//! ingress port, its L2 header, the MAC table and the time; so a frame whose first 14 bytes (18
//! when tagged) equal the previous bridged frame's, on the same port, at the same instant, with
//! the MAC table unchanged, skips parsing, learning and the destination lookup.
//!
//! Only a known-unicast bridged frame whose source was learned (or is freshly cached) is
//! remembered: floods, punts, drops and routed frames always take the full path. Everything
//! else a verdict depends on (port modes, VLANs) changes only between bursts, so the engine
//! forgets the memo at each burst (`Forwarder::begin_burst`).

use super::{Forwarder, TagOp, Verdict};
use crate::clock::Picos;

/// The first 16 bytes of an untagged frame cover its two MACs and its ethertype, then two bytes
/// of the payload that the decision does not read; a tagged frame's 16 bytes end with the TCI.
const UNTAGGED_HEADER: u128 = (1 << 112) - 1;
const TAGGED_HEADER: u128 = !0;

#[derive(Debug, Clone, Copy)]
pub(super) struct BridgeMemo {
    /// The remembered frame's header bytes under `mask`. A header with bits outside the mask
    /// matches no frame ([`FORGOTTEN`]), so the match needs no separate validity test.
    header: u128,
    mask: u128,
    in_port: u16,
    now: Picos,
    generation: u64,
    out_port: u16,
    tag: TagOp,
    /// The TCI bytes a tagged-to-tagged frame gets (the VID rewrite `tag_op` did in place).
    rewritten_tci: Option<[u8; 2]>,
}

/// The 16 header bytes as one number (little-endian, so byte 0 is the low byte), if the frame
/// is long enough for the tagged form. Every Ethernet frame is (60 bytes at least).
#[inline(always)]
pub(super) fn header_of(frame: &[u8]) -> Option<u128> {
    let bytes: [u8; 16] = frame.get(..16)?.try_into().ok()?;
    (frame.len() >= 18).then(|| u128::from_le_bytes(bytes))
}

/// A memo that matches no frame: no header under mask 0 is 1.
const FORGOTTEN: BridgeMemo = BridgeMemo {
    header: 1,
    mask: 0,
    in_port: 0,
    now: 0,
    generation: 0,
    out_port: 0,
    tag: TagOp::Keep,
    rewritten_tci: None,
};

impl Default for BridgeMemo {
    fn default() -> Self {
        FORGOTTEN
    }
}

impl BridgeMemo {
    #[inline(always)]
    fn matches(&self, header: u128, in_port: u16, now: Picos, generation: u64) -> bool {
        header & self.mask == self.header
            && self.in_port == in_port
            && self.now == now
            && self.generation == generation
    }
}

impl Forwarder {
    /// Forgets the remembered bridging decision and express route: called by the engine before
    /// each burst (and before each replayed frame), so that table and configuration changes
    /// made between bursts are always seen.
    #[inline]
    pub fn begin_burst(&mut self) {
        self.bridge_memo = FORGOTTEN;
        self.route_memo.forget();
    }

    /// The verdict of the burst's previous bridged frame for `frame` (a whole, single-segment
    /// frame received on `in_port` at `now`), if it repeats that frame's header: what
    /// [`Self::process_frame`] decides for it, without its parse. The engine tries it first
    /// for each frame of a burst that is not express.
    #[inline(always)]
    pub fn repeated_bridging(&self, frame: &mut [u8], in_port: u16, now: Picos) -> Option<Verdict> {
        let header = header_of(frame)?;
        self.remembered_bridging(frame, header, in_port, now)
    }

    /// The previous bridged frame's verdict, if `frame` repeats its header (see the module).
    #[inline(always)]
    pub(super) fn remembered_bridging(
        &self,
        frame: &mut [u8],
        header: u128,
        in_port: u16,
        now: Picos,
    ) -> Option<Verdict> {
        let memo = &self.bridge_memo;
        if !memo.matches(header, in_port, now, self.macs.generation()) {
            return None;
        }
        #[cfg(test)]
        self.bridge_memo_hits.set(self.bridge_memo_hits.get() + 1);
        if let Some(tci) = memo.rewritten_tci {
            frame[14..16].copy_from_slice(&tci);
        }
        Some(Verdict::Forward {
            port: memo.out_port,
            tag: memo.tag,
        })
    }

    /// Remembers a known-unicast bridging decision for the frames that follow. `header` is the
    /// frame's header before any VID rewrite; `frame` is after it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn remember_bridging(
        &mut self,
        frame: &[u8],
        header: u128,
        tagged: bool,
        in_port: u16,
        now: Picos,
        out_port: u16,
        tag: TagOp,
    ) {
        let mask = if tagged {
            TAGGED_HEADER
        } else {
            UNTAGGED_HEADER
        };
        self.bridge_memo = BridgeMemo {
            header: header & mask,
            mask,
            in_port,
            now,
            generation: self.macs.generation(),
            out_port,
            tag,
            rewritten_tci: (tagged && matches!(tag, TagOp::Keep)).then(|| [frame[14], frame[15]]),
        };
    }
}
