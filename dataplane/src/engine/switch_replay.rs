//! Replay on virtual time (DESIGN.md "Time and the replay contract"). Each input port is a
//! link from an emulated peer: it sends the trace's frames in order at the port's speed, except
//! that frames of a TC it has been asked to pause wait (in order) while other TCs go on; a frame
//! starts at max(its timestamp, the end of the link's previous frame, the end of its TC's pause)
//! and arrives when its last bit is in. A PFC frame the switch sends at t reaches the peer at
//! t + the port's peer delay (cable round trip + peer response); a frame already started
//! completes. Arrivals from all inputs merge in time order (ties: lower port); between them the
//! traffic manager runs one instant at a time, so a pause decided at t can never be applied
//! after an arrival it should have held back.

use super::{SwitchWorker, WorkerShared};
use crate::clock::{Picos, TraceClock};
use crate::dpdk::{Mbuf, MbufBurst};
use crate::qos::{self, LineRate, PfcFrame, pfc};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;

/// A pause the emulated peer honours for one TC: no frame of the TC starts in [from, until).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PeerPause {
    from: Picos,
    until: Picos,
}

/// A frame read from an input and not yet delivered, with the TC its port's maps give it.
struct Pending {
    mbuf: Mbuf,
    tc: u8,
    stamp: Picos,
    len: u32,
}

impl SwitchWorker {
    /// The emulated peer of `frame.port` learns of a pause (or resume) after its delay.
    pub(super) fn peer_pause(&mut self, frame: &PfcFrame) {
        let port = usize::from(frame.port);
        let qos = &self.port_qos[port];
        let effective = frame.at + qos.peer_delay;
        for (tc, pause) in self.peers[port].iter_mut().enumerate() {
            if frame.enable & (1 << tc) == 0 {
                continue;
            }
            let quanta = frame.quanta[tc];
            if quanta > 0 {
                let running = pause.from <= effective && effective < pause.until;
                if !running {
                    pause.from = effective;
                }
                pause.until = effective + pfc::pause_time(quanta, qos.speed);
            } else if pause.until > effective {
                pause.until = effective.max(pause.from);
            }
        }
    }

    /// The next frame input `port` delivers: (arrival time, index in `pending`), and whether a
    /// pause held some frame back (then frames not read yet may come sooner).
    fn next_arrival(
        &self,
        port: usize,
        pending: &VecDeque<Pending>,
        link_free: Picos,
        rate: LineRate,
    ) -> (Option<(Picos, usize)>, bool) {
        let pauses = &self.peers[port];
        let mut best: Option<(Picos, usize)> = None;
        let mut seen = 0u8;
        let mut held = false;
        for (index, frame) in pending.iter().enumerate() {
            let bit = 1u8 << frame.tc;
            if seen & bit != 0 {
                continue;
            }
            seen |= bit;
            let mut start = frame.stamp.max(link_free);
            let pause = pauses[usize::from(frame.tc)];
            if pause.from <= start && start < pause.until {
                start = pause.until;
                held = true;
            }
            let at = start + rate.wire_time(frame.len);
            if best.is_none_or(|(b, _)| at < b) {
                best = Some((at, index));
            }
            if !held || seen == 0xff {
                // In trace order, the first frame not held back goes first.
                break;
            }
        }
        (best, held)
    }

    /// Replays the inputs; a frame's pcap time less `origin_us` is its virtual timestamp.
    pub(super) fn run_replay(&mut self, origin_us: u64) {
        let ports = self.rx.len();
        // How far ahead of a held-back TC an input is read, to find frames of other TCs.
        let read_ahead = (self.pool.size() as usize / ports.max(1) / 2).max(self.burst);
        let mut pending: Vec<VecDeque<Pending>> = (0..ports)
            .map(|_| VecDeque::with_capacity(read_ahead.min(4096)))
            .collect();
        let mut exhausted = vec![false; ports];
        let mut link_free: Vec<Picos> = vec![0; ports];
        let rates: Vec<LineRate> = self
            .port_qos
            .iter()
            .map(|q| LineRate::new(q.speed))
            .collect();
        let mut held = vec![false; ports];
        let mut burst = MbufBurst::new();
        let mut now: Picos = 0;
        while !self.stop.is_requested() && !self.schedule_refused() {
            self.poll_links(|| now);
            let mut unread: Option<(Picos, usize)> = None;
            for port in 0..ports {
                let wants = !exhausted[port]
                    && (pending[port].is_empty()
                        || (held[port] && pending[port].len() < read_ahead));
                if !wants {
                    continue;
                }
                if (self.pool.available() as usize) < self.burst {
                    // The pcap PMD loses a frame it has read when no mbuf is free: never ask.
                    // Whatever this input holds next starts no sooner than its link is free.
                    let bound = (link_free[port] + rates[port].wire_time(0), port);
                    unread = Some(unread.map_or(bound, |u| u.min(bound)));
                    continue;
                }
                let received = self.rx[port].rx_burst(&mut burst, self.burst);
                if received == 0 {
                    exhausted[port] = true;
                    continue;
                }
                self.note_received(port, &burst, received);
                let maps = &self.port_qos[port];
                for mbuf in burst.drain() {
                    let packet = mbuf.packet();
                    let tc = qos::classify(packet.data(), maps);
                    let stamp =
                        TraceClock::from_pcap_micros(packet.rx_timestamp().unwrap_or(0), origin_us);
                    let len = packet.len() as u32;
                    pending[port].push_back(Pending {
                        mbuf,
                        tc,
                        stamp,
                        len,
                    });
                }
            }
            let mut next: Option<(Picos, usize, usize)> = None;
            for port in 0..ports {
                let (arrival, was_held) =
                    self.next_arrival(port, &pending[port], link_free[port], rates[port]);
                held[port] = was_held;
                if let Some((at, index)) = arrival
                    && next.is_none_or(|(b, p, _)| (at, port) < (b, p))
                {
                    next = Some((at, port, index));
                }
            }
            // The earliest instant anything can arrive.
            let horizon = match (next, unread) {
                (Some((at, port, _)), Some(bound)) => Some((at, port).min(bound).0),
                (Some((at, _, _)), None) => Some(at),
                (None, Some(bound)) => Some(bound.0),
                (None, None) => None,
            };
            let scheduled = self.schedule.last().map(|e| e.at);
            // Neighbour timers matter only while frames are still to come: after the last
            // one, nothing would hear their requests.
            let neighbors = (self.neighbor_deadline != Picos::MAX && horizon.is_some())
                .then_some(self.neighbor_deadline.max(now));
            let event = [self.tm.next_event(), scheduled, neighbors]
                .into_iter()
                .flatten()
                .min();
            if let Some(at) = event
                && horizon.is_none_or(|h| at < h)
            {
                // Before the next arrival: one instant of egress, timers and schedule. What it
                // decides (a pause) can still hold back frames not started yet.
                self.run_until(at);
                self.tm.advance(at, true, |port, mbuf| {
                    self.tx.push(port, mbuf, &self.counters)
                });
                self.after_tm();
                if at >= self.neighbor_deadline {
                    now = now.max(at);
                    self.run_neighbor_timers(at);
                }
                continue;
            }
            match (next, unread) {
                (Some((at, port, index)), bound) if bound.is_none_or(|b| (at, port) < b) => {
                    let frame = pending[port]
                        .remove(index)
                        .expect("index from next_arrival");
                    link_free[port] = at;
                    now = now.max(at);
                    self.run_until(now);
                    if self.schedule_refused() {
                        // The frame arrives after the refused event: the run ended before it.
                        break;
                    }
                    self.handle(frame.mbuf, port as u16, now);
                    self.serve_requests(now);
                    self.age(now);
                }
                (_, Some((bound, _))) => {
                    // Out of mbufs with an input unread, and nothing for egress to do before
                    // that input could deliver: the frames the pool lacks are held in queues
                    // waiting for later arrivals. Going on would reorder; stop instead.
                    self.flush_all();
                    if (self.pool.available() as usize) < self.burst {
                        let _ = bound;
                        self.shared_stalled();
                        break;
                    }
                }
                _ => break,
            }
        }
        // After the last arrival: scheduled events still apply as the queues drain.
        while let Some(at) = self.schedule.last().map(|e| e.at) {
            self.run_until(at);
        }
    }

    fn schedule_refused(&self) -> bool {
        self.shared.schedule_refused.load(Ordering::Relaxed)
    }

    fn shared_stalled(&self) {
        let shared: &WorkerShared = &self.shared;
        shared.replay_stalled.store(true, Ordering::Relaxed);
    }

    /// Advances egress and the schedule to `until` in DESIGN.md's tie order: completions and
    /// timers, then scheduled events, then (the caller's) arrivals; choices at `until` wait.
    pub(super) fn run_until(&mut self, until: Picos) {
        while let Some(at) = self.schedule.last().map(|e| e.at).filter(|&at| at <= until) {
            self.tm.advance(at, false, |port, mbuf| {
                self.tx.push(port, mbuf, &self.counters)
            });
            self.after_tm();
            self.apply_schedule(at);
        }
        self.tm.advance(until, false, |port, mbuf| {
            self.tx.push(port, mbuf, &self.counters)
        });
        self.after_tm();
    }
}
