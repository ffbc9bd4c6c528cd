//! The bridging decision of the previous frame, reused for the frames after it that carry the
//! same L2 header. Between two servers traffic is mostly one such run (the same MACs and tag
//! for every flow between them), and a bridged frame's verdict depends on nothing but its
//! ingress port, its L2 header, the MAC table, the configuration and the time; so a frame whose
//! first 14 bytes (18 when tagged) equal the previous bridged frame's, on the same port, with
//! the MAC table unchanged, skips parsing, learning and the destination lookup until the
//! decision's time runs out.
//!
//! Only a known-unicast bridged frame whose source was learned (or is freshly cached), to a
//! port that is up, is remembered: floods, punts, drops and routed frames always take the full
//! path, and a repeat's verdict always names a port that is up. The decision
//! holds until the earlier of two times: when the source's learning is due again (the learn
//! cache's refresh) and when the destination's entry would age out. Learning a new source on
//! the port forgets it (the full path would learn this frame's source again), and so does
//! every configuration, update or link change (`Forwarder::forget_memos`), so the memo lives
//! across bursts without changing any verdict.

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
    /// The decision holds for frames before this time ([`FORGOTTEN`]'s 0: none).
    valid_until: Picos,
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
    valid_until: 0,
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
            && now < self.valid_until
            && self.generation == generation
    }
}

impl Forwarder {
    /// Forgets every remembered decision: after any change to the tables, the configuration
    /// or a link, made other than by forwarding frames.
    #[inline]
    pub fn forget_memos(&mut self) {
        self.bridge_memo = FORGOTTEN;
    }

    /// Forgets the bridging decision if it was made for a frame from `in_port`.
    #[inline(always)]
    pub(super) fn forget_bridging_from(&mut self, in_port: u16) {
        if self.bridge_memo.in_port == in_port {
            self.bridge_memo = FORGOTTEN;
        }
    }

    /// The verdict of the previous bridged frame for `frame` (a whole, single-segment
    /// frame received on `in_port` at `now`), if it repeats that frame's header: what
    /// [`Self::process_frame`] decides for it, without its parse. Its port is up. The engine tries it first
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
        valid_until: Picos,
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
            valid_until,
            generation: self.macs.generation(),
            out_port,
            tag,
            rewritten_tci: (tagged && matches!(tag, TagOp::Keep)).then(|| [frame[14], frame[15]]),
        };
    }
}
