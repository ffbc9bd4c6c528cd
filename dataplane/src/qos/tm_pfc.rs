//! The traffic manager's PFC side: pausing the peer when a port's ingress occupancy of a
//! lossless TC reaches XOFF (and resuming below XON, refreshing in between), holding egress
//! queues that received pauses, the headroom check, and the watchdog. All of it runs on the time
//! the caller gives, so replay stays exact.

use super::super::pfc::{self, MacControl, PfcThresholds, XOFF_QUANTA};
use super::super::{PortQos, PortSpeed, TC_COUNT, WatchdogAction, WatchdogSpec};
use super::{QosEventKind, TrafficManager};
use crate::clock::Picos;
use crate::counters::DropReason;

/// A pause frame the switch decided to send: out of `port` at `at`, for the TCs in `enable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcFrame {
    pub at: Picos,
    pub port: u16,
    pub enable: u8,
    pub quanta: [u16; TC_COUNT],
}

/// PFC state of one port, as an ingress (pausing its peer) and as an egress (paused by it).
pub(super) struct PortPfc {
    speed: PortSpeed,
    thresholds: [Option<PfcThresholds>; TC_COUNT],
    /// TCs this port currently asks its peer to pause.
    xoff_sent: u8,
    refresh_at: Option<Picos>,
    /// Half the longest pause: an XOFF is repeated this often while it holds.
    refresh_interval: Picos,
    /// Received pauses: egress TC n may not start a frame before `paused_until[n]`.
    paused_until: [Picos; TC_COUNT],
    /// At or after this instant no TC is paused (the latest `paused_until` ever set): lets
    /// `held_at` answer in one comparison on a port that is not being paused.
    pauses_over_at: Picos,
    /// Since when TC n has been paused without a gap (the watchdog's clock).
    pause_started: [Option<Picos>; TC_COUNT],
    last_pause_rx: [Picos; TC_COUNT],
    /// TCs in storm state.
    storm: u8,
    /// Lossless TCs of this port: the watchdog watches their egress queues.
    lossless: u8,
    watchdog: Option<WatchdogSpec>,
    /// The earliest timer (refresh, watchdog detection or restoration), if any.
    pub(super) timer_at: Option<Picos>,
}

impl PortPfc {
    pub(super) fn new(q: &PortQos) -> PortPfc {
        PortPfc {
            speed: q.speed,
            thresholds: q.pfc,
            xoff_sent: 0,
            refresh_at: None,
            refresh_interval: pfc::pause_time(XOFF_QUANTA, q.speed) / 2,
            paused_until: [0; TC_COUNT],
            pauses_over_at: 0,
            pause_started: [None; TC_COUNT],
            last_pause_rx: [0; TC_COUNT],
            storm: 0,
            lossless: q.lossless,
            watchdog: q.watchdog,
            timer_at: None,
        }
    }

    fn storm_action(&self) -> Option<WatchdogAction> {
        self.watchdog.map(|w| w.action)
    }

    /// True when a watchdog storm runs on some TC of this port.
    #[inline(always)]
    pub(super) fn in_storm(&self) -> bool {
        self.storm != 0
    }

    /// At or after this instant no TC is paused by a pause received so far.
    #[inline(always)]
    pub(super) fn pauses_over_at(&self) -> Picos {
        self.pauses_over_at
    }

    /// True when no received pause holds any TC at `at` and no TC is in storm state: nothing
    /// PFC decides changes what happens to a frame for this port.
    #[inline(always)]
    pub(super) fn quiet_at(&self, at: Picos) -> bool {
        at >= self.pauses_over_at && self.storm == 0
    }

    /// TCs whose egress queue may not start a frame at `at` (paused, unless the watchdog's
    /// forward action overrides the pause).
    #[inline]
    pub(super) fn held_at(&self, at: Picos) -> u8 {
        if at >= self.pauses_over_at {
            return 0;
        }
        let mut held = 0u8;
        for (t, until) in self.paused_until.iter().enumerate() {
            if *until > at {
                held |= 1 << t;
            }
        }
        if self.storm_action() == Some(WatchdogAction::Forward) {
            held &= !self.storm;
        }
        held
    }

    /// When the first of the paused queues in `queued` may send again.
    pub(super) fn first_resume(&self, queued: u8) -> Option<Picos> {
        (0..TC_COUNT)
            .filter(|&t| queued & (1 << t) != 0)
            .map(|t| self.paused_until[t])
            .min()
    }

    fn recompute_timer(&mut self) {
        let mut next = self.refresh_at;
        let mut consider = |at: Picos| next = Some(next.map_or(at, |n| n.min(at)));
        if let Some(w) = self.watchdog {
            for t in 0..TC_COUNT {
                if self.lossless & (1 << t) == 0 {
                    continue;
                }
                if self.storm & (1 << t) != 0 {
                    consider(self.last_pause_rx[t] + w.restoration);
                } else if let Some(since) = self.pause_started[t] {
                    consider(since + w.detection);
                }
            }
        }
        self.timer_at = next;
    }
}

impl<P> TrafficManager<P> {
    /// The PFC thresholds of (port, tc), if the TC is lossless there.
    pub fn pfc_thresholds(&self, port: u16, tc: u8) -> Option<PfcThresholds> {
        *self
            .ports
            .get(usize::from(port))?
            .pfc
            .thresholds
            .get(usize::from(tc))?
    }

    /// Why `thresholds` cannot be (port, tc)'s, if they cannot: the TC must be lossless on the
    /// port (PFC is configured per lossless TC) and the thresholds meet `PfcThresholds::check`.
    pub fn check_pfc(&self, port: u16, tc: u8, thresholds: PfcThresholds) -> Result<(), String> {
        if usize::from(port) >= self.ports.len() {
            return Err(format!("port {port} does not exist"));
        }
        if self.pfc_thresholds(port, tc).is_none() {
            return Err(format!(
                "TC {tc} is not lossless on port {port}: PFC thresholds apply to lossless TCs"
            ));
        }
        thresholds
            .check()
            .map_err(|(key, message)| format!("{key} {message}"))
    }

    /// Replaces the PFC thresholds of (port, lossless tc) (checked with `check_pfc`) at `now`:
    /// an occupancy already at the new XOFF pauses the peer, one below the new XON of a paused
    /// TC resumes it, and the headroom check uses the new XOFF + headroom from the next frame.
    pub fn set_pfc(&mut self, now: Picos, port: u16, tc: u8, thresholds: PfcThresholds) {
        let (p, t) = (usize::from(port), usize::from(tc));
        let Some(slot) = self
            .ports
            .get_mut(p)
            .and_then(|e| e.pfc.thresholds.get_mut(t))
        else {
            return;
        };
        if slot.is_none() {
            return;
        }
        *slot = Some(thresholds);
        self.check_xoff(now, p, t);
        self.check_xon(now, p, t);
    }

    /// Takes the pause frames decided since the last call, oldest first.
    pub fn take_pfc_frames(&mut self, mut send: impl FnMut(&PfcFrame)) {
        for frame in &self.pfc_out {
            send(frame);
        }
        self.pfc_out.clear();
    }

    /// Whether PFC frames wait to be taken.
    pub fn has_pfc_frames(&self) -> bool {
        !self.pfc_out.is_empty()
    }

    fn send_pfc(&mut self, at: Picos, port: usize, tcs: u8, quanta: u16) {
        for t in 0..TC_COUNT {
            if tcs & (1 << t) != 0 {
                self.counters.queues[port][t].pfc_tx_frames.add(1);
            }
        }
        // TCs that change at the same instant share one frame.
        if let Some(last) = self.pfc_out.last_mut()
            && last.at == at
            && usize::from(last.port) == port
        {
            last.enable |= tcs;
            for t in 0..TC_COUNT {
                if tcs & (1 << t) != 0 {
                    last.quanta[t] = quanta;
                }
            }
            return;
        }
        let mut all = [0u16; TC_COUNT];
        for (t, q) in all.iter_mut().enumerate() {
            if tcs & (1 << t) != 0 {
                *q = quanta;
            }
        }
        self.pfc_out.push(PfcFrame {
            at,
            port: port as u16,
            enable: tcs,
            quanta: all,
        });
    }

    fn arm(&mut self, e: usize) {
        self.ports[e].pfc.recompute_timer();
        if self.ports[e].pfc.timer_at.is_some() {
            self.active |= 1 << e;
        }
    }

    /// Ingress occupancy of (port, tc) grew: pause the peer at XOFF.
    pub(super) fn check_xoff(&mut self, now: Picos, port: usize, t: usize) {
        let state = &self.ports[port].pfc;
        let bit = 1u8 << t;
        let Some(th) = state.thresholds[t] else {
            return;
        };
        if state.xoff_sent & bit != 0 || self.ingress[port][t] < th.xoff {
            return;
        }
        if state.storm & bit != 0 && state.storm_action() == Some(WatchdogAction::Drop) {
            // The watchdog's drop action: never pause upstream for a storming TC.
            return;
        }
        let occupancy = self.ingress[port][t];
        let state = &mut self.ports[port].pfc;
        state.xoff_sent |= bit;
        if state.refresh_at.is_none() && state.refresh_interval > 0 {
            state.refresh_at = Some(now + state.refresh_interval);
        }
        self.counters.queues[port][t].xoff_transitions.add(1);
        self.send_pfc(now, port, bit, XOFF_QUANTA);
        self.record(now, port as u16, t as u8, occupancy, QosEventKind::PfcXoff);
        self.arm(port);
    }

    /// Ingress occupancy of (port, tc) shrank: resume the peer below XON.
    pub(super) fn check_xon(&mut self, now: Picos, port: usize, t: usize) {
        let state = &self.ports[port].pfc;
        let bit = 1u8 << t;
        if state.xoff_sent & bit == 0 {
            return;
        }
        let Some(th) = state.thresholds[t] else {
            return;
        };
        if self.ingress[port][t] >= th.xon {
            return;
        }
        self.resume_peer(now, port, t);
    }

    fn resume_peer(&mut self, now: Picos, port: usize, t: usize) {
        let occupancy = self.ingress[port][t];
        let state = &mut self.ports[port].pfc;
        state.xoff_sent &= !(1u8 << t);
        if state.xoff_sent == 0 {
            state.refresh_at = None;
        }
        self.counters.queues[port][t].xon_transitions.add(1);
        self.send_pfc(now, port, 1 << t, 0);
        self.record(now, port as u16, t as u8, occupancy, QosEventKind::PfcXon);
        self.arm(port);
    }

    /// A lossless frame that would take (ingress, tc) beyond XOFF + headroom.
    #[inline]
    pub(super) fn headroom_full(&self, ingress: usize, t: usize, len: u64) -> bool {
        match self.ports.get(ingress).and_then(|p| p.pfc.thresholds[t]) {
            Some(th) => self.ingress[ingress][t] + len > th.xoff + th.headroom,
            None => false,
        }
    }

    /// The watchdog's drop action covers frames for a storming egress queue and frames arriving
    /// on the storming port in that TC.
    #[inline]
    pub(super) fn watchdog_drops(&self, e: usize, t: usize, ingress: usize) -> bool {
        let drops = |p: &super::EgressPort| {
            p.pfc.storm & (1 << t) != 0 && p.pfc.storm_action() == Some(WatchdogAction::Drop)
        };
        drops(&self.ports[e]) || self.ports.get(ingress).is_some_and(drops)
    }

    pub(super) fn count_pfc_drop(
        &mut self,
        reason: DropReason,
        e: usize,
        t: usize,
        ingress: usize,
    ) {
        match reason {
            DropReason::HeadroomFull => {
                if let Some(q) = self.counters.queues.get(ingress) {
                    q[t].headroom_drops.add(1);
                }
            }
            DropReason::PfcWatchdog => self.counters.queues[e][t].watchdog_drops.add(1),
            _ => {}
        }
    }

    /// A MAC Control frame arrived on `port` at `now`: PFC pauses (or resumes) the TCs it
    /// enables, PAUSE all of them, for quanta × 512 bit times at the port's speed.
    pub fn receive_mac_control(&mut self, now: Picos, port: u16, frame: MacControl) {
        let e = usize::from(port);
        if e >= self.ports.len() {
            return;
        }
        let (enable, quanta) = match frame {
            MacControl::Pfc { enable, quanta } => (enable, quanta),
            MacControl::Pause { quanta } => (0xff, [quanta; TC_COUNT]),
            MacControl::Other => return,
        };
        for (t, &q) in quanta.iter().enumerate() {
            if enable & (1 << t) == 0 {
                continue;
            }
            self.counters.queues[e][t].pfc_rx_frames.add(1);
            let state = &mut self.ports[e].pfc;
            let remaining = state.paused_until[t].saturating_sub(now);
            let duration = pfc::pause_time(q, state.speed);
            let paused = &self.counters.queues[e][t].paused_ps;
            // The new frame replaces the running pause timer (802.1Qbb).
            paused.set(paused.get() - remaining.min(paused.get()) + duration);
            if q > 0 {
                if state.paused_until[t] <= now {
                    state.pause_started[t] = Some(now);
                }
                state.paused_until[t] = now + duration;
                state.pauses_over_at = state.pauses_over_at.max(now + duration);
                state.last_pause_rx[t] = now;
                self.refresh_pass_gate(e);
            } else {
                state.paused_until[t] = now;
                state.pause_started[t] = None;
            }
            let depth = self.ports[e].depth[t];
            self.record(now, port, t as u8, depth, QosEventKind::PfcReceived(q));
        }
        // A resume (or a pause shorter than the wait) may let a queue send sooner.
        let port_state = &mut self.ports[e];
        if port_state.wire.is_none() && port_state.nonempty != 0 {
            port_state.decision_at = Some(port_state.decision_at.map_or(now, |d| d.min(now)));
            self.active |= 1 << e;
        }
        self.arm(e);
    }

    /// Runs port `e`'s timers due at `at`: XOFF refresh, watchdog detection and restoration.
    pub(super) fn run_timers(&mut self, e: usize, at: Picos) {
        let state = &self.ports[e].pfc;
        if state.refresh_at.is_some_and(|r| r <= at) {
            let tcs = state.xoff_sent;
            let next = at + state.refresh_interval;
            self.ports[e].pfc.refresh_at = (tcs != 0).then_some(next);
            if tcs != 0 {
                self.send_pfc(at, e, tcs, XOFF_QUANTA);
            }
        }
        if let Some(w) = self.ports[e].pfc.watchdog {
            for t in 0..TC_COUNT {
                let bit = 1u8 << t;
                let state = &self.ports[e].pfc;
                if state.lossless & bit == 0 {
                    continue;
                }
                if state.storm & bit != 0 {
                    if state.last_pause_rx[t] + w.restoration <= at {
                        self.ports[e].pfc.storm &= !bit;
                        self.ports[e].pfc.pause_started[t] = None;
                        self.refresh_pass_gate(e);
                        self.counters.queues[e][t].watchdog_restorations.add(1);
                        let depth = self.ports[e].depth[t];
                        self.record(at, e as u16, t as u8, depth, QosEventKind::WatchdogRestored);
                    }
                } else if let Some(since) = state.pause_started[t]
                    && since + w.detection <= at
                {
                    if state.paused_until[t] >= since + w.detection {
                        self.enter_storm(e, t, at, w.action);
                    } else {
                        // The pause lapsed before the detection time: not continuous.
                        self.ports[e].pfc.pause_started[t] = None;
                    }
                }
            }
        }
        self.ports[e].pfc.recompute_timer();
        let port = &self.ports[e];
        if port.pfc.timer_at.is_none()
            && port.wire.is_none()
            && port.decision_at.is_none()
            && port.nonempty == 0
        {
            self.active &= !(1 << e);
        }
    }

    fn enter_storm(&mut self, e: usize, t: usize, at: Picos, action: WatchdogAction) {
        self.ports[e].pfc.storm |= 1 << t;
        self.refresh_pass_gate(e);
        self.counters.queues[e][t].watchdog_storms.add(1);
        let depth = self.ports[e].depth[t];
        self.record(at, e as u16, t as u8, depth, QosEventKind::WatchdogStorm);
        match action {
            WatchdogAction::Drop => {
                let dropped = self.flush_queue(at, e, t);
                self.counters.queues[e][t].watchdog_drops.add(dropped);
                self.untaken_watchdog_drops += dropped;
                if self.ports[e].pfc.xoff_sent & (1 << t) != 0 {
                    self.resume_peer(at, e, t);
                }
            }
            WatchdogAction::Forward => {
                let port = &mut self.ports[e];
                if port.wire.is_none() && port.nonempty != 0 {
                    port.decision_at = Some(at);
                    self.active |= 1 << e;
                }
            }
            WatchdogAction::Alert => {}
        }
    }

    /// TCs port `e` currently asks its peer to pause (for tests and `ctl`).
    pub fn xoff_state(&self, e: u16) -> u8 {
        self.ports[usize::from(e)].pfc.xoff_sent
    }

    /// TCs of port `e` in watchdog storm state.
    pub fn storm_state(&self, e: u16) -> u8 {
        self.ports[usize::from(e)].pfc.storm
    }
}
