//! The traffic manager: admission (shared buffer, tail drop, ECN/RED), eight queues per egress
//! port in a fixed slab of packet slots (no allocation after start), per-(port, TC) ingress
//! and egress byte accounting, and per-port transmission one frame at a time at line rate.
//!
//! Time only moves when the caller says so (`advance`), which makes replay exact. Events at the
//! same instant follow DESIGN.md's tie rule: frames finishing transmission, then timers (PFC
//! refresh, watchdog), then arrivals (the caller's enqueues and received pauses), then
//! scheduler choices. A frame counts in its queue's depth (and its ingress port's depth) from its
//! arrival until its last bit has left the port.
//!
//! PFC (`tm_pfc.rs`): ingress occupancy per (port, TC) crossing XOFF/XON produces pause frames
//! for the engine to send (`take_pfc_frames`); received pauses hold egress queues; the watchdog
//! runs on timers.

use super::dwrr::PortScheduler;
use super::ecn::{self, EcnCurve, MarkRng};
use super::{LineRate, QosSpec, TC_COUNT};
use crate::clock::Picos;
use crate::counters::{Counter, DropReason};
use std::sync::Arc;

const NIL: u32 = u32::MAX;
/// Events kept for the log; later ones are counted in `events_lost`.
const EVENT_CAPACITY: usize = 1 << 20;
/// Ports the active-port mask can hold.
pub const MAX_PORTS: usize = 64;
/// The ingress of frames the switch itself sends (ARP/ND/ICMP replies): always lossy, and
/// accounted apart from every front-panel port.
pub const CPU_PORT: u16 = u16::MAX;

/// Per (port, TC) counters, written by the worker only and readable from any thread.
#[derive(Debug, Default)]
pub struct QueueCounters {
    /// Frames admitted to the queue, and sent from it (their last bit left the port in a
    /// replay; handed to its TX ring live), by the full path (`enqueue_or_send`, `advance`).
    /// Read the totals with `enqueued_packets()` and the rest.
    pub(crate) queued_in_packets: Counter,
    pub(crate) queued_in_bytes: Counter,
    pub(crate) queued_out_packets: Counter,
    pub(crate) queued_out_bytes: Counter,
    /// Frames `try_pass_through` sent at once: enqueued and dequeued, counted once for both
    /// (two counter updates per frame fewer on the common path).
    pub(crate) passed_packets: Counter,
    pub(crate) passed_bytes: Counter,
    pub dropped_packets: Counter,
    pub dropped_bytes: Counter,
    pub ecn_marked: Counter,
    /// Egress bytes held now and the most ever held.
    pub depth_bytes: Counter,
    pub peak_depth_bytes: Counter,
    /// Bytes held for frames that arrived on this port in this TC (the PFC side).
    pub ingress_bytes: Counter,
    pub peak_ingress_bytes: Counter,
    /// PFC frames that carried this TC, sent out of / received on this port.
    pub pfc_tx_frames: Counter,
    pub pfc_rx_frames: Counter,
    /// This port (as an ingress) started / stopped pausing its peer for this TC.
    pub xoff_transitions: Counter,
    pub xon_transitions: Counter,
    /// Time this egress queue was held by received pauses, in picoseconds.
    pub paused_ps: Counter,
    pub watchdog_storms: Counter,
    pub watchdog_restorations: Counter,
    /// Lossless frames from this ingress that found its headroom full.
    pub headroom_drops: Counter,
    /// Frames dropped by the watchdog's drop action (queued, arriving for, or arriving on).
    pub watchdog_drops: Counter,
}

impl QueueCounters {
    /// Frames admitted to the queue (those passed straight to the port included).
    pub fn enqueued_packets(&self) -> u64 {
        self.queued_in_packets.get() + self.passed_packets.get()
    }

    pub fn enqueued_bytes(&self) -> u64 {
        self.queued_in_bytes.get() + self.passed_bytes.get()
    }

    /// Frames whose last bit has left the port (replay) or that were handed to its TX ring
    /// (live).
    pub fn dequeued_packets(&self) -> u64 {
        self.queued_out_packets.get() + self.passed_packets.get()
    }

    pub fn dequeued_bytes(&self) -> u64 {
        self.queued_out_bytes.get() + self.passed_bytes.get()
    }
}

/// Every queue's counters, `[port][tc]`. Each port's row is shared on its own, so that the
/// port's pass-through counts find it without indexing the table.
#[derive(Debug)]
pub struct TmCounters {
    pub queues: Vec<Arc<[QueueCounters; TC_COUNT]>>,
    pub events_lost: Counter,
}

impl TmCounters {
    pub fn new(ports: usize) -> TmCounters {
        TmCounters {
            queues: (0..ports).map(|_| Default::default()).collect(),
            events_lost: Counter::default(),
        }
    }
}

/// What a queue did at an instant, for the event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosEventKind {
    /// The egress depth rose to or above a watermark.
    WatermarkUp(u64),
    /// The egress depth fell below a watermark.
    WatermarkDown(u64),
    /// The first CE mark since the depth was last below Kmin.
    EcnMarkingStart,
    /// The depth fell below Kmin after marking.
    EcnMarkingStop,
    /// This port asked its peer to pause the TC (ingress occupancy reached XOFF); `depth` is
    /// the ingress occupancy.
    PfcXoff,
    /// ... and to resume (occupancy fell below XON).
    PfcXon,
    /// A PFC (or PAUSE) frame arrived for the TC with these quanta.
    PfcReceived(u16),
    /// The watchdog found the queue paused beyond the detection time.
    WatchdogStorm,
    WatchdogRestored,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosEvent {
    pub at: Picos,
    pub port: u16,
    pub tc: u8,
    /// Egress depth of (port, tc) right after the change.
    pub depth: u64,
    pub kind: QosEventKind,
}

/// The admission decision for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Queued; `marked` says whether CE was set on the way in.
    Queued {
        marked: bool,
    },
    Dropped(DropReason),
}

struct Slot<P> {
    packet: Option<P>,
    len: u32,
    ingress: u16,
    next: u32,
}

#[derive(Debug, Clone, Copy)]
struct Queue {
    head: u32,
    tail: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct InFlight {
    tc: u8,
    ingress: u16,
    len: u32,
    end: Picos,
}

/// Live mode hands a port's TX ring at most this much transmission time ahead of now (frames
/// there have left the switch's buffer); beyond it frames wait in the queues.
const COMMIT_HORIZON: Picos = crate::clock::PICOS_PER_MICRO;

struct TcConfig {
    queue_limit: u64,
    ecn: Option<EcnCurve>,
    watermarks: Vec<u64>,
}

struct EgressPort {
    rate: LineRate,
    /// The port's picoseconds per wire byte for `try_pass_through`, when whole (every speed
    /// that divides 8000 Gb/s; 0 unlimited); a port whose speed gives fractions never passes
    /// (`pass_gate`), so the pass needs no division.
    pass_picos_per_byte: u64,
    /// This port's row of `TmCounters` (its queues' counters).
    counters: Arc<[QueueCounters; TC_COUNT]>,
    lossless: u8,
    tcs: [TcConfig; TC_COUNT],
    scheduler: PortScheduler,
    queues: [Queue; TC_COUNT],
    /// Bit n: queue n holds frames.
    nonempty: u8,
    /// Bytes held per TC, the in-flight frame included.
    depth: [u64; TC_COUNT],
    /// Per TC, the longest frame `try_pass_through` may send at depth 0: the queue limit, or
    /// 0 when the ECN curve already acts at depth 0 (a step marker at Kmin 0). The limits are
    /// fixed at start, so the pass-through check reads one word instead of working them out.
    pass_limit: [u64; TC_COUNT],
    marking: [bool; TC_COUNT],
    /// Replay: the frame being transmitted (one at a time, counted until its last bit leaves).
    wire: Option<InFlight>,
    /// When the port is idle with frames queued: the instant of its next scheduler choice.
    decision_at: Option<Picos>,
    /// End of the last transmission.
    free_at: Picos,
    /// `try_pass_through` passes a frame for this port only at or after this instant: the end
    /// of the pauses it received, while the traffic manager is immediate and no queue of the
    /// port holds a frame or storms; `Picos::MAX` otherwise. Kept by `refresh_pass_gate`
    /// wherever one of those changes, so the per-frame check is one comparison.
    pass_gate: Picos,
    /// As an ingress, the TCs whose frames `try_pass_through` leaves to the full path: the
    /// lossless ones (their ingress bytes are accounted), or all while a TC storms.
    ingress_blocks: u8,
    pfc: tm_pfc::PortPfc,
}

/// An ingress port's part of `TrafficManager::try_pass_through`'s decision, read once per
/// RX burst (`TrafficManager::ingress_gate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngressGate {
    port: u16,
    /// Bit t: frames of TC t from this port take the full path.
    blocks: u8,
}

impl IngressGate {
    /// The ingress port this gate was read for.
    #[inline(always)]
    pub fn port(self) -> u16 {
        self.port
    }
}

/// The queues and links of every egress port. `P` is the packet handle (an mbuf in the engine,
/// anything in tests); the traffic manager never looks inside it except through the frame
/// accessor given to `enqueue`.
pub struct TrafficManager<P> {
    ports: Vec<EgressPort>,
    slots: Vec<Slot<P>>,
    free_slot: u32,
    /// `[ingress port][tc]` bytes held.
    ingress: Vec<[u64; TC_COUNT]>,
    buffer_used: u64,
    buffer_bytes: u64,
    /// `buffer_bytes - buffer_used`, kept with it, for the pass-through's one comparison.
    buffer_room: u64,
    rng: MarkRng,
    /// Bit p: port p has a transmission in flight or a pending choice.
    active: u64,
    counters: Arc<TmCounters>,
    record_events: bool,
    events: Vec<QosEvent>,
    /// PFC frames decided but not yet taken by the engine.
    pfc_out: Vec<tm_pfc::PfcFrame>,
    /// Frames the PFC watchdog dropped on its own (the one drop the traffic manager decides
    /// outside an admission), not yet taken by the engine. One word rather than a tally by
    /// reason: `take_drop_tally` runs after every burst, and testing 46 words each time cost
    /// every frame three instructions.
    untaken_watchdog_drops: u64,
    /// Live mode: frames for an idle port start in `enqueue_or_send`.
    immediate: bool,
}

impl<P> TrafficManager<P> {
    /// `slots` bounds the frames held at once (the engine passes its mbuf count).
    pub fn new(spec: &QosSpec, slots: usize, counters: Arc<TmCounters>) -> TrafficManager<P> {
        assert!(spec.ports.len() <= MAX_PORTS, "at most {MAX_PORTS} ports");
        assert!(counters.queues.len() >= spec.ports.len());
        let ports = spec
            .ports
            .iter()
            .enumerate()
            .map(|(e, q)| EgressPort {
                rate: LineRate::new(q.speed),
                pass_picos_per_byte: q.speed.picos_per_byte().unwrap_or(0),
                counters: Arc::clone(&counters.queues[e]),
                lossless: q.lossless,
                tcs: std::array::from_fn(|tc| {
                    let t = &q.tcs[tc];
                    let mut watermarks = t.watermarks.clone();
                    watermarks.sort_unstable();
                    watermarks.dedup();
                    TcConfig {
                        queue_limit: t.queue_limit,
                        ecn: t.ecn.as_ref().map(EcnCurve::new),
                        watermarks,
                    }
                }),
                scheduler: PortScheduler::new(&std::array::from_fn(|tc| q.tcs[tc].sched)),
                queues: [Queue {
                    head: NIL,
                    tail: NIL,
                }; TC_COUNT],
                nonempty: 0,
                depth: [0; TC_COUNT],
                pass_limit: std::array::from_fn(|tc| {
                    let t = &q.tcs[tc];
                    let marks_at_zero = t.ecn.as_ref().is_some_and(|e| {
                        EcnCurve::new(e).probability(0) != ecn::Probability::NEVER
                    });
                    if marks_at_zero { 0 } else { t.queue_limit }
                }),
                marking: [false; TC_COUNT],
                wire: None,
                decision_at: None,
                free_at: 0,
                pass_gate: Picos::MAX,
                ingress_blocks: 0xff,
                pfc: tm_pfc::PortPfc::new(q),
            })
            .collect();
        let slots_count = slots.clamp(1, NIL as usize - 1);
        let slots = (0..slots_count)
            .map(|i| Slot {
                packet: None,
                len: 0,
                ingress: 0,
                next: if i + 1 == slots_count {
                    NIL
                } else {
                    i as u32 + 1
                },
            })
            .collect();
        let mut tm = TrafficManager {
            ports,
            slots,
            free_slot: 0,
            ingress: vec![[0; TC_COUNT]; spec.ports.len() + 1],
            buffer_used: 0,
            buffer_bytes: spec.buffer_bytes,
            buffer_room: spec.buffer_bytes,
            rng: MarkRng::new(spec.ecn_seed),
            active: 0,
            counters,
            record_events: spec.events,
            events: Vec::with_capacity(if spec.events { 4096 } else { 0 }),
            pfc_out: Vec::with_capacity(MAX_PORTS),
            untaken_watchdog_drops: 0,
            immediate: false,
        };
        for e in 0..tm.ports.len() {
            tm.refresh_pass_gate(e);
        }
        tm
    }

    /// Works out port `e`'s `pass_gate` and `ingress_blocks` again, after a change of what
    /// they summarise (the immediate mode, the port's queued TCs, its storms or its pauses).
    #[inline]
    pub(super) fn refresh_pass_gate(&mut self, e: usize) {
        let immediate = self.immediate;
        let Some(port) = self.ports.get_mut(e) else {
            return;
        };
        let storm = port.pfc.in_storm();
        let whole_rate = port.rate.picos_per_byte().is_some();
        port.pass_gate = if immediate && port.nonempty == 0 && !storm && whole_rate {
            port.pfc.pauses_over_at()
        } else {
            Picos::MAX
        };
        port.ingress_blocks = port.lossless | if storm { 0xff } else { 0 };
    }

    pub fn counters(&self) -> &Arc<TmCounters> {
        &self.counters
    }

    /// Whether TC `tc` is lossless for frames arriving on `port`.
    #[inline]
    pub fn is_lossless(&self, port: u16, tc: u8) -> bool {
        self.ports
            .get(usize::from(port))
            .is_some_and(|p| p.lossless & (1 << (tc & 7)) != 0)
    }

    /// Where the accounting of frames from `port` lives (the CPU has the last row).
    #[inline]
    fn ingress_index(&self, port: u16) -> u16 {
        if usize::from(port) < self.ports.len() {
            port
        } else {
            self.ports.len() as u16
        }
    }

    /// Egress bytes held for (port, tc), the frame on the wire included.
    pub fn depth(&self, port: u16, tc: u8) -> u64 {
        self.ports[usize::from(port)].depth[usize::from(tc & 7)]
    }

    /// Bytes held for frames that arrived on `port` in `tc`.
    pub fn ingress_depth(&self, port: u16, tc: u8) -> u64 {
        let index = self.ingress_index(port);
        self.ingress[usize::from(index)][usize::from(tc & 7)]
    }

    /// Frames held in queues or on the wire.
    pub fn held_frames(&self) -> usize {
        self.slots.iter().filter(|s| s.packet.is_some()).count()
            + self
                .ports
                .iter()
                .map(|p| usize::from(p.wire.is_some()))
                .sum::<usize>()
    }

    /// Whether any port still has something to send or finish.
    pub fn is_busy(&self) -> bool {
        self.active != 0
    }

    /// The earliest pending completion or choice, if any.
    pub fn next_event(&self) -> Option<Picos> {
        self.earliest().map(|(at, _, _)| at)
    }

    /// Takes the recorded events (oldest first).
    pub fn take_events(&mut self) -> Vec<QosEvent> {
        std::mem::take(&mut self.events)
    }

    /// Admits or drops a frame that arrives at `now` for (egress, tc) from `ingress`. On
    /// admission ECN may set CE in the frame (reached through `frame_of`); on drop the packet is
    /// released here and the reason returned.
    #[inline]
    pub fn enqueue(
        &mut self,
        now: Picos,
        egress: u16,
        tc: u8,
        ingress: u16,
        packet: P,
        frame_of: impl FnOnce(&mut P) -> &mut [u8],
    ) -> Admission {
        self.enqueue_or_send(now, egress, tc, ingress, packet, frame_of, |_, _| {
            unreachable!("only immediate mode sends from enqueue")
        })
    }

    /// Live mode: a frame leaves the switch's buffer when it is handed to the port's TX ring,
    /// which takes at most `COMMIT_HORIZON` of line-rate transmission ahead of now. A frame
    /// that finds its port's queues empty and the ring short goes there at once (`transmit`
    /// gets it from `enqueue_or_send`) and never counts in a depth; the others queue, count
    /// until `advance` hands them to the ring, and the depths ECN and PFC see are those of the
    /// queues. Replay keeps DESIGN.md's exact contract instead (a frame counts until its last
    /// bit has left, choices after all arrivals of an instant), so it does not use this.
    pub fn set_immediate(&mut self, immediate: bool) {
        self.immediate = immediate;
        for e in 0..self.ports.len() {
            self.refresh_pass_gate(e);
        }
    }

    /// What `try_pass_through` needs of ingress port `ingress`: the TCs it bars as an
    /// ingress (none for a port the traffic manager does not know, such as the CPU). That only
    /// changes in `advance` (storms) and with the configuration, so the frames of one RX burst
    /// may share one reading.
    #[inline]
    pub fn ingress_gate(&self, ingress: u16) -> IngressGate {
        IngressGate {
            port: ingress,
            blocks: self
                .ports
                .get(usize::from(ingress))
                .map_or(0, |p| p.ingress_blocks),
        }
    }

    /// Live mode's common case, decided in a few loads before the engine does anything else
    /// with the frame: true when a frame of `len` bytes for `egress` in `tc` goes straight to
    /// the TX ring, and it is then counted (enqueued and dequeued) and the caller transmits it.
    /// That is when the port's queues are all empty and its ring has room, no pause is in force
    /// and no watchdog storm runs on the egress or ingress port, the class is lossy, and at its
    /// depth the frame neither overflows the queue or the buffer nor meets the ECN curve: then
    /// `enqueue_or_send` would do the same, and false leaves every other case to it.
    #[inline(always)]
    pub fn try_pass_through(
        &mut self,
        now: Picos,
        egress: u16,
        tc: u8,
        ingress: IngressGate,
        len: u32,
    ) -> bool {
        let (e, t) = (usize::from(egress), usize::from(tc & 7));
        let buffer_room = self.buffer_room;
        debug_assert_eq!(buffer_room, self.buffer_bytes - self.buffer_used);
        debug_assert!(self.ports.get(usize::from(ingress.port)).is_none_or(|p| {
            (p.ingress_blocks >> t & 1 == 0) == (p.lossless & (1 << t) == 0 && !p.pfc.in_storm())
        }));
        debug_assert_eq!(
            ingress,
            self.ingress_gate(ingress.port),
            "stale ingress gate"
        );
        let immediate = self.immediate;
        let Some(port) = self.ports.get_mut(e) else {
            return false;
        };
        // With no queue of the port holding a frame, every depth is 0 in live mode (it counts
        // no frame in flight; a replay does, but never passes), so the queue limit and the
        // ECN curve are those of depth 0.
        debug_assert!(!immediate || port.nonempty != 0 || port.depth[t] == 0);
        // `pass_gate` and `ingress_blocks` summarise these; they must never drift from them.
        debug_assert_eq!(
            now >= port.pass_gate,
            immediate
                && port.nonempty == 0
                && port.pfc.quiet_at(now)
                && port.rate.picos_per_byte().is_some()
        );
        debug_assert_eq!(
            Some(port.pass_picos_per_byte),
            port.rate.picos_per_byte().or(Some(0))
        );
        let passes = now >= port.pass_gate
            && port.free_at <= now + COMMIT_HORIZON
            && ingress.blocks >> t & 1 == 0
            && u64::from(len) <= port.pass_limit[t]
            && u64::from(len) <= buffer_room;
        if !passes {
            return false;
        }
        let counters = &port.counters[t];
        counters.passed_packets.add(1);
        counters.passed_bytes.add(u64::from(len));
        // `LineRate::wire_time` with the whole picoseconds per byte the gate requires.
        let wire_bytes = u64::from(len).max(super::MIN_FRAME_BYTES) + super::WIRE_OVERHEAD_BYTES;
        port.free_at = port.free_at.max(now) + wire_bytes * port.pass_picos_per_byte;
        true
    }

    /// As `enqueue`; in immediate (live) mode a frame for an idle port goes to `transmit` at
    /// once.
    // The two closures are what keeps the traffic manager free of mbufs and TX queues.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn enqueue_or_send(
        &mut self,
        now: Picos,
        egress: u16,
        tc: u8,
        ingress: u16,
        mut packet: P,
        frame_of: impl FnOnce(&mut P) -> &mut [u8],
        transmit: impl FnOnce(u16, P),
    ) -> Admission {
        let tc = tc & 7;
        let (e, t) = (usize::from(egress), usize::from(tc));
        let lossless = self.is_lossless(ingress, tc);
        let ingress = self.ingress_index(ingress);
        let frame = frame_of(&mut packet);
        let len = frame.len() as u32;
        let port = &self.ports[e];
        // Nothing queued may go before it: only frames of other, paused TCs may be waiting
        // (the scheduler would choose this one now anyway).
        if self.immediate && port.free_at <= now + COMMIT_HORIZON && {
            let held = port.pfc.held_at(now);
            (port.nonempty & !held) | (held & 1 << t) == 0
        } {
            let marked = match self.admit::<false>(now, e, t, ingress, lossless, frame) {
                Ok(marked) => marked,
                Err(reason) => return Admission::Dropped(reason),
            };
            let counters = &self.counters.queues[e][t];
            counters.queued_out_packets.add(1);
            counters.queued_out_bytes.add(u64::from(len));
            let port = &mut self.ports[e];
            port.free_at = port.free_at.max(now) + port.rate.wire_time(len);
            transmit(egress, packet);
            return Admission::Queued { marked };
        }
        let marked = match self.admit::<true>(now, e, t, ingress, lossless, frame) {
            Ok(marked) => marked,
            Err(reason) => return Admission::Dropped(reason),
        };
        let slot = self
            .take_slot(packet, len, ingress)
            .expect("admit checked for a free slot");
        let port = &mut self.ports[e];
        let queue = &mut port.queues[t];
        if queue.tail == NIL {
            queue.head = slot;
        } else {
            self.slots[queue.tail as usize].next = slot;
        }
        queue.tail = slot;
        port.nonempty |= 1 << t;
        // (What `refresh_pass_gate` works out for a port with a queued frame.)
        port.pass_gate = Picos::MAX;
        if self.immediate {
            self.active |= 1 << e;
        } else if port.wire.is_none() {
            // An idle port chooses at once, even if it was waiting for a paused queue.
            let at = now.max(port.free_at);
            port.decision_at = Some(port.decision_at.map_or(at, |d| d.min(at)));
            self.active |= 1 << e;
        }
        Admission::Queued { marked }
    }

    /// Admission, and for an admitted frame the accounting (depths, counters, PFC, events):
    /// whether CE was marked. The result is two bytes on purpose: a wider tuple was built
    /// through memory and cost a store-forwarding stall per frame.
    /// `HOLD` is false for a frame that goes straight to the TX ring (live mode): it is counted
    /// as enqueued but never held.
    #[inline(always)]
    fn admit<const HOLD: bool>(
        &mut self,
        now: Picos,
        e: usize,
        t: usize,
        ingress: u16,
        lossless: bool,
        frame: &mut [u8],
    ) -> Result<bool, DropReason> {
        let len = frame.len() as u32;
        let depth = self.ports[e].depth[t];
        let verdict = if HOLD && self.free_slot == NIL {
            Err(DropReason::BufferFull)
        } else {
            self.admission(e, t, usize::from(ingress), lossless, depth, frame)
        };
        let marked = match verdict {
            Ok(marked) => marked,
            Err(reason) => {
                let counters = &self.counters.queues[e][t];
                counters.dropped_packets.add(1);
                counters.dropped_bytes.add(u64::from(len));
                self.count_pfc_drop(reason, e, t, usize::from(ingress));
                return Err(reason);
            }
        };
        if HOLD {
            self.hold(now, e, t, usize::from(ingress), u64::from(len));
        }
        let counters = &self.counters.queues[e][t];
        counters.queued_in_packets.add(1);
        counters.queued_in_bytes.add(u64::from(len));
        if marked {
            counters.ecn_marked.add(1);
            let port = &mut self.ports[e];
            if !port.marking[t] {
                port.marking[t] = true;
                let depth = port.depth[t];
                self.record(now, e as u16, t as u8, depth, QosEventKind::EcnMarkingStart);
            }
        }
        Ok(marked)
    }

    /// The DESIGN.md admission order: shared buffer, tail drop (lossy), then the ECN curve on
    /// the depth before this frame: mark ECT, RED-drop Not-ECT of a lossy class, admit the rest.
    #[inline]
    fn admission(
        &mut self,
        e: usize,
        t: usize,
        ingress: usize,
        lossless: bool,
        depth: u64,
        frame: &mut [u8],
    ) -> Result<bool, DropReason> {
        let len = frame.len() as u64;
        if self.watchdog_drops(e, t, ingress) {
            return Err(DropReason::PfcWatchdog);
        }
        if self.buffer_used + len > self.buffer_bytes {
            return Err(DropReason::BufferFull);
        }
        if lossless && self.headroom_full(ingress, t, len) {
            return Err(DropReason::HeadroomFull);
        }
        let config = &self.ports[e].tcs[t];
        if !lossless && depth + len > config.queue_limit {
            return Err(DropReason::QueueFull);
        }
        let Some(curve) = config.ecn else {
            return Ok(false);
        };
        let p = curve.probability(depth);
        if p == ecn::Probability::NEVER {
            return Ok(false);
        }
        match ecn::codepoint(frame) {
            Some(ecn::ECT0 | ecn::ECT1) => {
                if self.rng.decide(p) {
                    Ok(ecn::mark_ce(frame))
                } else {
                    Ok(false)
                }
            }
            Some(ecn::CE) => Ok(false),
            _ if lossless => Ok(false),
            _ => {
                if self.rng.decide(p) {
                    Err(DropReason::RedDrop)
                } else {
                    Ok(false)
                }
            }
        }
    }

    #[inline]
    fn take_slot(&mut self, packet: P, len: u32, ingress: u16) -> Option<u32> {
        let index = self.free_slot;
        if index == NIL {
            return None;
        }
        let slot = &mut self.slots[index as usize];
        self.free_slot = slot.next;
        slot.packet = Some(packet);
        slot.len = len;
        slot.ingress = ingress;
        slot.next = NIL;
        Some(index)
    }

    fn hold(&mut self, now: Picos, e: usize, t: usize, ingress: usize, len: u64) {
        self.buffer_used += len;
        self.buffer_room = self.buffer_bytes - self.buffer_used;
        self.ingress[ingress][t] += len;
        let ingress_depth = self.ingress[ingress][t];
        let port = &mut self.ports[e];
        let before = port.depth[t];
        port.depth[t] += len;
        let after = port.depth[t];
        let counters = &self.counters.queues[e][t];
        counters.depth_bytes.set(after);
        if after > counters.peak_depth_bytes.get() {
            counters.peak_depth_bytes.set(after);
        }
        if let Some(ingress_counters) = self.counters.queues.get(ingress).map(|q| &q[t]) {
            ingress_counters.ingress_bytes.set(ingress_depth);
            if ingress_depth > ingress_counters.peak_ingress_bytes.get() {
                ingress_counters.peak_ingress_bytes.set(ingress_depth);
            }
        }
        if ingress < self.ports.len() {
            self.check_xoff(now, ingress, t);
        }
        if self.record_events {
            for i in 0..self.ports[e].tcs[t].watermarks.len() {
                let mark = self.ports[e].tcs[t].watermarks[i];
                if before < mark && after >= mark {
                    self.record(
                        now,
                        e as u16,
                        t as u8,
                        after,
                        QosEventKind::WatermarkUp(mark),
                    );
                }
            }
        }
    }

    fn release(&mut self, now: Picos, e: usize, t: usize, ingress: usize, len: u64) {
        self.buffer_used -= len;
        self.buffer_room = self.buffer_bytes - self.buffer_used;
        self.ingress[ingress][t] -= len;
        if let Some(queue) = self.counters.queues.get(ingress) {
            queue[t].ingress_bytes.set(self.ingress[ingress][t]);
            self.check_xon(now, ingress, t);
        }
        let port = &mut self.ports[e];
        let before = port.depth[t];
        port.depth[t] -= len;
        let after = port.depth[t];
        let counters = &self.counters.queues[e][t];
        counters.depth_bytes.set(after);
        counters.queued_out_packets.add(1);
        counters.queued_out_bytes.add(len);
        let stop_marking = port.marking[t] && port.tcs[t].ecn.is_some_and(|c| after < c.kmin());
        if stop_marking {
            port.marking[t] = false;
            self.record(now, e as u16, t as u8, after, QosEventKind::EcnMarkingStop);
        }
        if self.record_events {
            for i in (0..self.ports[e].tcs[t].watermarks.len()).rev() {
                let mark = self.ports[e].tcs[t].watermarks[i];
                if before >= mark && after < mark {
                    self.record(
                        now,
                        e as u16,
                        t as u8,
                        after,
                        QosEventKind::WatermarkDown(mark),
                    );
                }
            }
        }
    }

    fn record(&mut self, at: Picos, port: u16, tc: u8, depth: u64, kind: QosEventKind) {
        if !self.record_events {
            return;
        }
        if self.events.len() < EVENT_CAPACITY {
            self.events.push(QosEvent {
                at,
                port,
                tc,
                depth,
                kind,
            });
        } else {
            self.counters.events_lost.add(1);
        }
    }

    /// The earliest pending event over all ports: (time, 0 = completion / 1 = timer /
    /// 2 = choice, port).
    #[inline]
    fn earliest(&self) -> Option<(Picos, u8, usize)> {
        let mut best: Option<(Picos, u8, usize)> = None;
        let mut active = self.active;
        while active != 0 {
            let e = active.trailing_zeros() as usize;
            active &= active - 1;
            let port = &self.ports[e];
            let event = match (port.wire, port.decision_at) {
                (Some(f), _) => Some((f.end, 0, e)),
                (None, Some(at)) => Some((at, 2, e)),
                (None, None) => None,
            };
            let timer = port.pfc.timer_at.map(|at| (at, 1, e));
            for candidate in [event, timer].into_iter().flatten() {
                if best.is_none_or(|b| candidate < b) {
                    best = Some(candidate);
                }
            }
        }
        best
    }

    /// Runs every transmission completion at or before `until` and every scheduler choice
    /// before it (at it too when `choices_at_until`: nothing more arrives at `until`), in time
    /// order. `transmit(port, packet)` receives each frame as its transmission starts.
    #[inline]
    pub fn advance(
        &mut self,
        until: Picos,
        choices_at_until: bool,
        mut transmit: impl FnMut(u16, P),
    ) {
        if self.immediate && choices_at_until {
            self.advance_each_port(until, transmit);
            return;
        }
        while let Some((at, kind, e)) = self.earliest() {
            let due = at < until || (at == until && (kind < 2 || choices_at_until));
            if !due {
                break;
            }
            match kind {
                0 => self.complete(e),
                1 => self.run_timers(e, at),
                _ => {
                    if let Some(packet) = self.choose(e, at) {
                        transmit(e as u16, packet);
                    }
                }
            }
        }
    }

    /// Live mode: ports are independent (nothing needs a global event order there), so each
    /// runs its own timers up to `until` and hands queued frames to its TX ring while the ring
    /// holds less than `COMMIT_HORIZON` of transmission, without scanning for the earliest.
    #[inline]
    fn advance_each_port(&mut self, until: Picos, mut transmit: impl FnMut(u16, P)) {
        let mut active = self.active;
        while active != 0 {
            let e = active.trailing_zeros() as usize;
            active &= active - 1;
            // Draining at the end of a live run (`until` is the end of time) sends what is
            // queued and stops: timers there would re-arm without end (an XOFF refresh waits
            // for another port's queue to drain), and nothing comes after the drain.
            let draining = until == Picos::MAX;
            loop {
                let port = &self.ports[e];
                if let Some(at) = port.pfc.timer_at.filter(|&at| at <= until && !draining) {
                    self.run_timers(e, at);
                } else if port.nonempty == 0 {
                    if port.pfc.timer_at.is_none() || draining {
                        self.active &= !(1 << e);
                    }
                    break;
                } else if port.free_at > until.saturating_add(COMMIT_HORIZON) {
                    break;
                } else {
                    let start = if draining {
                        port.free_at
                    } else {
                        port.free_at.max(until)
                    };
                    match self.commit_to_ring(e, start) {
                        Some(packet) => transmit(e as u16, packet),
                        None if draining => {
                            let port = &mut self.ports[e];
                            match port.pfc.first_resume(port.nonempty) {
                                Some(resume) if resume > port.free_at => port.free_at = resume,
                                _ => break,
                            }
                        }
                        // Everything queued is paused; a later call looks again.
                        None => break,
                    }
                }
            }
        }
    }

    /// Live mode: the scheduler's choice among port `e`'s unpaused queues leaves the buffer for
    /// the TX ring, starting on the wire at `start`.
    fn commit_to_ring(&mut self, e: usize, start: Picos) -> Option<P> {
        let eligible = self.ports[e].nonempty & !self.ports[e].pfc.held_at(start);
        let (tc, len, ingress, packet) = self.dequeue_choice(e, eligible)?;
        let port = &mut self.ports[e];
        port.free_at = start + port.rate.wire_time(len);
        self.release(
            start,
            e,
            usize::from(tc),
            usize::from(ingress),
            u64::from(len),
        );
        packet
    }

    /// Takes the head of the queue the scheduler picks among `eligible`: (tc, len, ingress,
    /// packet).
    #[inline]
    fn dequeue_choice(&mut self, e: usize, eligible: u8) -> Option<(u8, u32, u16, Option<P>)> {
        let port = &mut self.ports[e];
        let slots = &self.slots;
        let queues = &port.queues;
        let tc = port
            .scheduler
            .choose(eligible, |t| slots[queues[t].head as usize].len)?;
        let t = usize::from(tc);
        let index = port.queues[t].head;
        let slot = &mut self.slots[index as usize];
        port.queues[t].head = slot.next;
        if slot.next == NIL {
            port.queues[t].tail = NIL;
            port.nonempty &= !(1 << t);
            port.scheduler.queue_emptied(tc);
        }
        let emptied = port.nonempty == 0;
        let packet = slot.packet.take();
        let (len, ingress) = (slot.len, slot.ingress);
        slot.next = self.free_slot;
        self.free_slot = index;
        if emptied {
            self.refresh_pass_gate(e);
        }
        Some((tc, len, ingress, packet))
    }

    /// Drains every queue: all remaining choices and completions, whatever their time.
    pub fn drain(&mut self, transmit: impl FnMut(u16, P)) {
        self.advance(Picos::MAX, true, transmit);
    }

    fn complete(&mut self, e: usize) {
        let port = &mut self.ports[e];
        let Some(frame) = port.wire.take() else {
            return;
        };
        port.free_at = frame.end;
        if port.nonempty != 0 {
            port.decision_at = Some(frame.end);
        } else if port.pfc.timer_at.is_none() {
            self.active &= !(1 << e);
        }
        self.release(
            frame.end,
            e,
            usize::from(frame.tc),
            usize::from(frame.ingress),
            u64::from(frame.len),
        );
    }

    fn choose(&mut self, e: usize, at: Picos) -> Option<P> {
        let port = &mut self.ports[e];
        port.decision_at = None;
        let eligible = port.nonempty & !port.pfc.held_at(at);
        let Some((tc, len, ingress, packet)) = self.dequeue_choice(e, eligible) else {
            // Everything queued is paused: choose again when the first pause ends.
            let port = &mut self.ports[e];
            port.decision_at = port.pfc.first_resume(port.nonempty);
            if port.decision_at.is_none() && port.pfc.timer_at.is_none() {
                self.active &= !(1 << e);
            }
            return None;
        };
        let port = &mut self.ports[e];
        debug_assert!(port.wire.is_none());
        port.wire = Some(InFlight {
            tc,
            ingress,
            len,
            end: at + port.rate.wire_time(len),
        });
        packet
    }

    /// Drops everything queued (not the frame on the wire) for a port whose link went down;
    /// returns how many frames were dropped.
    pub fn flush_port(&mut self, now: Picos, port: u16) -> u64 {
        let e = usize::from(port);
        let mut dropped = 0;
        for t in 0..TC_COUNT {
            dropped += self.flush_queue(now, e, t);
        }
        if self.ports[e].wire.is_none() {
            self.ports[e].decision_at = None;
            if self.ports[e].pfc.timer_at.is_none() {
                self.active &= !(1 << e);
            }
        }
        dropped
    }

    /// Drops what queue (port, tc) holds (not the frame on the wire), counting each frame as
    /// `reason` in the queue's counters; returns how many.
    fn flush_queue(&mut self, now: Picos, e: usize, t: usize) -> u64 {
        let mut dropped = 0;
        while self.ports[e].queues[t].head != NIL {
            let index = self.ports[e].queues[t].head;
            let slot = &mut self.slots[index as usize];
            self.ports[e].queues[t].head = slot.next;
            drop(slot.packet.take());
            let (len, ingress) = (u64::from(slot.len), usize::from(slot.ingress));
            slot.next = self.free_slot;
            self.free_slot = index;
            self.release(now, e, t, ingress, len);
            let counters = &self.counters.queues[e][t];
            counters
                .queued_out_packets
                .set(counters.queued_out_packets.get() - 1);
            counters
                .queued_out_bytes
                .set(counters.queued_out_bytes.get() - len);
            counters.dropped_packets.add(1);
            counters.dropped_bytes.add(len);
            dropped += 1;
        }
        self.ports[e].queues[t].tail = NIL;
        self.ports[e].nonempty &= !(1 << t);
        self.ports[e].scheduler.queue_emptied(t as u8);
        self.refresh_pass_gate(e);
        dropped
    }

    /// Drops the traffic manager decided by itself since the last call (watchdog).
    #[inline]
    pub fn take_drop_tally(&mut self, mut count: impl FnMut(DropReason, u64)) {
        if self.untaken_watchdog_drops != 0 {
            count(
                DropReason::PfcWatchdog,
                std::mem::take(&mut self.untaken_watchdog_drops),
            );
        }
    }
}

#[path = "tm_pfc.rs"]
mod tm_pfc;
// Run-time ECN changes (crate::ctl).
#[path = "tm_ctl.rs"]
mod tm_ctl;
pub use tm_pfc::PfcFrame;

#[cfg(test)]
#[path = "tm_tests.rs"]
mod tests;
