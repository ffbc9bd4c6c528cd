//! Switch mode: every frame is classified into a traffic class and goes through the
//! `Forwarder`; verdicts become enqueues into the traffic manager (egress queues, ECN, shaper),
//! flood copies, slow-path work (answered inline, on this worker, so learning takes effect
//! before the next frame) or counted drops. Frames leave in TX bursts as the traffic manager
//! starts transmitting them.
//!
//! Live mode polls ports in turn and runs on the TSC. Replay mode (inputs that end: pcap files)
//! runs on virtual time (DESIGN.md "Time and the replay contract"): each input is a link from
//! an emulated peer that serialises its frames at the port's speed, arrivals from all inputs
//! are merged in time order (ties: lower port first), egress ports drain at line rate, and
//! every queue drains after the last arrival. The same traces give the same outputs, marks
//! and counters on any machine.

use super::{ScheduledAction, ScheduledEvent, WorkerShared};
use crate::clock::{PICOS_PER_SECOND, Picos, TscScale};
use crate::counters::{DropReason, WorkerCounters};
use crate::dpdk::{self, Mbuf, MbufBurst, Mempool, Port, RxQueue, StopSignal, TxQueue};
use crate::pipeline::spec::SwitchSpec;
use crate::pipeline::{
    ControlRequest, ExpressLane, Forwarder, ForwarderError, Frame, Icmpv6Error, LANE_OTHER,
    RouterError, RouterErrorKind, TagOp, Verdict,
};
use crate::qos::pfc;
use crate::qos::{
    self, Admission, CPU_PORT, IngressGate, PfcFrame, PortQos, TmCounters, TrafficManager,
};
use crate::slowpath::{Learned, Outgoing, SlowPath};
use crate::tables::flowlet::{BalanceCounters, BalanceSpec, EgressLoad};
use crate::tables::neighbor::NeighborTable;
use std::mem::MaybeUninit;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Learned MACs are aged this often (in the run's own time).
const AGING_PERIOD: Picos = PICOS_PER_SECOND;
/// Empty poll sweeps of an idle live worker between two runs of its timers.
const IDLE_SWEEPS_PER_TIMER_RUN: u32 = 4096;
/// Flooding copies to at most this many ports (DPDK's RTE_MAX_ETHPORTS).
const MAX_FLOOD_PORTS: usize = 32;

/// Pass 3's ways through an express frame (`SwitchWorker::handle_lane`): `route_lane`, for any
/// burst; the plain way of a burst of `Forwarder::lane_plain_family` IPv4 or IPv6; the
/// endpoints' way of a burst of `Forwarder::lane_all_endpoints`.
const LANE_ANY: u8 = 0;
const LANE_PLAIN_IPV4: u8 = 1;
const LANE_PLAIN_IPV6: u8 = 2;
const LANE_ENDPOINTS: u8 = 3;

/// TX queues and the bursts being gathered for them.
struct TxStage {
    queues: Vec<TxQueue>,
    /// Indexed by port: one for every port a switch may have, so that a frame's push finds
    /// its port's burst without a bounds check (ports are below `queues.len()`).
    bursts: Box<[MbufBurst; qos::tm::MAX_PORTS]>,
    burst: usize,
}

impl TxStage {
    #[inline(always)]
    fn push(&mut self, port: u16, mbuf: Mbuf, counters: &WorkerCounters) {
        let port = usize::from(port) % qos::tm::MAX_PORTS;
        let burst = &mut self.bursts[port];
        match burst.push(mbuf) {
            Ok(()) if burst.len() < self.burst => {}
            pushed => self.push_and_flush(port, pushed, counters),
        }
    }

    /// The rest of `push` when the port's burst is full: sends it, and a frame that did not
    /// fit goes into the emptied burst (then sent too if bursts are of one frame).
    #[cold]
    #[inline(never)]
    fn push_and_flush(&mut self, port: usize, pushed: Result<(), Mbuf>, counters: &WorkerCounters) {
        self.flush(port, counters);
        if let Err(mbuf) = pushed {
            // The burst was just emptied, so this push succeeds.
            let _ = self.bursts[port].push(mbuf);
            if self.bursts[port].len() >= self.burst {
                self.flush(port, counters);
            }
        }
    }

    fn flush(&mut self, port: usize, counters: &WorkerCounters) {
        let (sent, freed) = self.queues[port].tx_burst_or_free(&mut self.bursts[port]);
        counters.port(port).tx_packets.add(sent as u64);
        if freed > 0 {
            counters.drop_packets(DropReason::TxRingFull, freed as u64);
        }
    }

    fn flush_all(&mut self, counters: &WorkerCounters) {
        for port in 0..self.queues.len().min(qos::tm::MAX_PORTS) {
            if !self.bursts[port].is_empty() {
                self.flush(port, counters);
            }
        }
    }
}

#[path = "switch_replay.rs"]
mod replay;

// Run-time table updates and snapshots (crate::ctl), served between bursts.
#[path = "switch_ctl.rs"]
mod ctl;

pub(crate) struct SwitchWorker {
    forwarder: Forwarder,
    /// The express lane's passes over the RX burst being processed (live mode).
    lane: ExpressLane,
    slow: SlowPath,
    rx: Vec<RxQueue>,
    tx: TxStage,
    tm: TrafficManager<Mbuf>,
    /// Classification maps and link speeds, per port.
    port_qos: Vec<PortQos>,
    /// Per port, the class of an untagged IP frame by its DSCP (`qos::untagged_ip_classes`),
    /// which express frames take.
    untagged_ip_classes: Vec<[u8; 64]>,
    counters: Arc<WorkerCounters>,
    shared: Arc<WorkerShared>,
    pool: Arc<Mempool>,
    stop: StopSignal,
    burst: usize,
    /// In a replay, its time origin (`EngineConfig::trace_origin_us`); `None` when live.
    replay_origin_us: Option<u64>,
    outgoing: Vec<Outgoing>,
    learned: Vec<Learned>,
    requests: Vec<ControlRequest>,
    link_generation_seen: u64,
    last_aging: Picos,
    /// Reachability of the neighbours learned from ARP and ND, and its next timer
    /// (`Picos::MAX`: none).
    neighbors: NeighborTable,
    neighbor_deadline: Picos,
    /// Replay events not yet applied, latest first (so the next one pops off the end).
    schedule: Vec<ScheduledEvent>,
    /// Source MACs of the PFC frames each port sends.
    port_macs: Vec<[u8; 6]>,
    pfc_scratch: Vec<PfcFrame>,
    /// Replay's emulated peers: the pauses each input's peer honours, per TC.
    peers: Vec<[replay::PeerPause; qos::TC_COUNT]>,
}

/// Lets the forwarder's least-loaded groups read egress depths and transmitted bytes from the
/// traffic manager's counters (see `tables::flowlet::EgressLoad` for why a counter view), with
/// each class's ECN Kmin so they can tell a marking port.
fn attach_egress_load(forwarder: &mut Forwarder, spec: &SwitchSpec, counters: &Arc<TmCounters>) {
    let kmin = spec
        .qos
        .ports
        .iter()
        .map(|p| std::array::from_fn(|tc| p.tcs[tc].ecn.map_or(u64::MAX, |e| e.kmin)))
        .collect();
    forwarder.set_egress_load(EgressLoad::new(Arc::clone(counters), kmin));
}

impl SwitchWorker {
    /// Each ECMP group's balancing counters (readable while the worker runs).
    pub(crate) fn balance_counters(&self) -> Vec<Arc<BalanceCounters>> {
        self.forwarder.balance_counters()
    }

    /// Each ECMP group's balancing configuration.
    pub(crate) fn balance_specs(&self) -> Vec<BalanceSpec> {
        self.forwarder.balance_specs()
    }

    /// Gives the control thread, at the end of a run, the flowlet moves for the event log
    /// and each group's balancing as it ended (a `set_group` may have changed it).
    fn hand_over_balancing(&mut self) {
        *self
            .shared
            .flowlet_moves
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.forwarder.take_flowlet_moves();
        *self
            .shared
            .final_balancing
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self
            .balance_specs()
            .into_iter()
            .zip(self.balance_counters())
            .collect();
    }
}

impl SwitchWorker {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        spec: &SwitchSpec,
        ports: &mut [Port],
        port_mtus: &[u16],
        counters: Arc<WorkerCounters>,
        shared: Arc<WorkerShared>,
        pool: Arc<Mempool>,
        stop: StopSignal,
        burst: usize,
        replay_origin_us: Option<u64>,
        mut schedule: Vec<ScheduledEvent>,
        queue_counters: Arc<TmCounters>,
    ) -> Result<SwitchWorker, ForwarderError> {
        // `apply_schedule` pops from the end: latest first in the vector, and events at the
        // same time in reverse of the order given (the schedule file's), so ties apply in it.
        schedule.reverse();
        schedule.sort_by_key(|e| std::cmp::Reverse(e.at));
        let mut forwarder = Forwarder::new(spec)?;
        forwarder.set_port_mtus(port_mtus);
        forwarder.share_counters(Arc::clone(&counters));
        attach_egress_load(&mut forwarder, spec, &queue_counters);
        for (index, up) in shared.link_up.iter().enumerate() {
            forwarder.set_port_up(index as u16, up.load(Ordering::Relaxed));
        }
        let rx = ports
            .iter_mut()
            .map(|p| p.take_rx_queue(0).expect("RX queue 0 is free"))
            .collect();
        let tx = ports
            .iter_mut()
            .map(|p| p.take_tx_queue(0).expect("TX queue 0 is free"))
            .collect();
        if spec.qos.ports.len() != ports.len() {
            return Err(ForwarderError(format!(
                "QoS describes {} ports but {} are configured",
                spec.qos.ports.len(),
                ports.len()
            )));
        }
        if ports.len() > qos::tm::MAX_PORTS {
            return Err(ForwarderError(format!(
                "switch mode handles at most {} ports",
                qos::tm::MAX_PORTS
            )));
        }
        Ok(SwitchWorker {
            forwarder,
            lane: ExpressLane::default(),
            slow: SlowPath::new(spec),
            rx,
            tx: TxStage {
                queues: tx,
                bursts: Box::new(std::array::from_fn(|_| MbufBurst::new())),
                burst,
            },
            tm: TrafficManager::new(&spec.qos, pool.size() as usize, queue_counters),
            port_qos: spec.qos.ports.clone(),
            untagged_ip_classes: spec
                .qos
                .ports
                .iter()
                .map(qos::classify::untagged_ip_classes)
                .collect(),
            counters,
            shared,
            pool,
            stop,
            burst,
            replay_origin_us,
            outgoing: Vec::with_capacity(MAX_FLOOD_PORTS),
            learned: Vec::with_capacity(4),
            requests: Vec::with_capacity(256),
            link_generation_seen: 0,
            last_aging: 0,
            neighbors: NeighborTable::new(spec.neighbor_timers),
            neighbor_deadline: Picos::MAX,
            schedule,
            port_macs: ports.iter().map(|p| p.mac()).collect(),
            pfc_scratch: Vec::with_capacity(qos::tm::MAX_PORTS),
            peers: vec![Default::default(); ports.len()],
        })
    }

    /// The per-SID and per-policy counters the worker's forwarder writes.
    pub(crate) fn srv6_counters(&self) -> Arc<crate::counters::Srv6Counters> {
        self.forwarder.srv6_counters()
    }

    pub(crate) fn run(mut self) {
        let hz = dpdk::tsc_hz().max(1);
        let start = dpdk::tsc();
        if let Some(origin_us) = self.replay_origin_us {
            self.run_replay(origin_us);
        } else {
            self.run_live(start, hz);
        }
        self.tm
            .drain(|port, mbuf| self.tx.push(port, mbuf, &self.counters));
        self.after_tm();
        self.flush_all();
        *self
            .shared
            .qos_events
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.tm.take_events();
        self.hand_over_balancing();
        let nanos =
            (u128::from(dpdk::tsc().wrapping_sub(start)) * 1_000_000_000 / u128::from(hz)) as u64;
        self.shared
            .longest_forwarding_nanos
            .fetch_max(nanos, Ordering::Relaxed);
        self.shared.running.fetch_sub(1, Ordering::Release);
    }

    fn run_live(&mut self, start: u64, hz: u64) {
        self.tm.set_immediate(true);
        let mut burst = MbufBurst::new();
        let scale = TscScale::new(hz);
        let clock = |start: u64| scale.picos(dpdk::tsc().wrapping_sub(start));
        let mut idle_sweeps = 0u32;
        while !self.stop.is_requested() {
            // The time is read only when a link changed or a request waits: a TSC read per
            // sweep that nothing used.
            self.poll_links(|| clock(start));
            self.serve_control(|| clock(start));
            let mut busy = false;
            for port in 0..self.rx.len() {
                let received = self.rx[port].rx_burst(&mut burst, self.burst);
                if received == 0 {
                    continue;
                }
                busy = true;
                let now = clock(start);
                self.live_burst(&mut burst, port, received, now);
            }
            if self.tm.is_busy() {
                self.transmit_due(clock(start), true);
            }
            // Timers (MAC aging, neighbour reachability) otherwise run after bursts; an idle
            // switch runs them every so many empty sweeps (a few per millisecond), and sends
            // what they made (requests to neighbours) at once.
            idle_sweeps = if busy { 0 } else { idle_sweeps + 1 };
            if idle_sweeps == IDLE_SWEEPS_PER_TIMER_RUN {
                idle_sweeps = 0;
                let now = clock(start);
                self.age(now);
                self.transmit_due(now, true);
            }
        }
    }

    /// One received burst of live mode, through the express lane, the per-frame paths and the
    /// traffic manager.
    #[inline(never)]
    fn live_burst(&mut self, burst: &mut MbufBurst, port: usize, received: usize, now: Picos) {
        self.note_received(port, burst, received);
        let lane = self.stage_lane(burst, received, port as u16, now);
        // A copy: the loop below borrows the worker mutably.
        let classes = self
            .untagged_ip_classes
            .get(port)
            .copied()
            .unwrap_or([0; 64]);
        let ingress = self.tm.ingress_gate(port as u16);
        let whole_burst = u64::MAX >> (64 - received.clamp(1, 64));
        if lane == whole_burst {
            if let Some((port, addresses)) = self.forwarder.lane_one_flow_egress(&self.lane) {
                // An elephant flow's burst: one flow to one nexthop, looked up once.
                for (index, mbuf) in burst.drain().enumerate() {
                    self.handle_one_flow(mbuf, index, port, &addresses, ingress, now);
                }
            } else {
                // Routed bursts are all express as a rule: a loop of that path alone, and,
                // when pass 2 found every frame's nexthop and the burst is of one family, one
                // without the tests for an endpoint step, a choice in turn and the family.
                match self.forwarder.lane_plain_family(&self.lane) {
                    Some(false) => {
                        for (index, mbuf) in burst.drain().enumerate() {
                            self.handle_lane::<LANE_PLAIN_IPV4>(mbuf, index, ingress, now);
                        }
                    }
                    Some(true) => {
                        for (index, mbuf) in burst.drain().enumerate() {
                            self.handle_lane::<LANE_PLAIN_IPV6>(mbuf, index, ingress, now);
                        }
                    }
                    None if self.forwarder.lane_all_endpoints(&self.lane) => {
                        for (index, mbuf) in burst.drain().enumerate() {
                            self.handle_lane::<LANE_ENDPOINTS>(mbuf, index, ingress, now);
                        }
                    }
                    None => {
                        for (index, mbuf) in burst.drain().enumerate() {
                            self.handle_lane::<LANE_ANY>(mbuf, index, ingress, now);
                        }
                    }
                }
            }
        } else if lane == 0 {
            // Bridged bursts have no express frames: a loop without the test.
            for mbuf in burst.drain() {
                self.handle_not_express(mbuf, port, &classes, ingress, now);
            }
        } else {
            for (index, mbuf) in burst.drain().enumerate() {
                if lane >> index & 1 != 0 {
                    self.handle_lane::<LANE_ANY>(mbuf, index, ingress, now);
                } else {
                    self.handle_not_express(mbuf, port, &classes, ingress, now);
                }
            }
        }
        self.serve_requests(now);
        self.age(now);
        self.transmit_due(now, true);
    }

    /// A frame of a live burst that is not express: a repeat of the previous bridged frame
    /// takes its decision, any other frame the full path.
    #[inline(always)]
    fn handle_not_express(
        &mut self,
        mut mbuf: Mbuf,
        port: usize,
        classes: &[u8; 64],
        ingress: IngressGate,
        now: Picos,
    ) {
        if let Some(verdict) = self.repeated_bridging(&mut mbuf, port as u16, now) {
            let port_qos = &self.port_qos;
            let tc =
                qos::classify::classify_by_table(mbuf.packet().data(), classes, || &port_qos[port]);
            match verdict {
                // (A repeated decision's port is up: `repeated_bridging`.)
                Verdict::Forward { port, tag } => {
                    self.send_from::<true>(mbuf, port, tag, tc, ingress, now)
                }
                verdict => self.act_on(verdict, mbuf, ingress.port(), tc, now),
            }
        } else {
            self.handle(mbuf, port as u16, now);
        }
    }

    /// The express lane's passes over the burst, for a routed port that is up (a port that
    /// is down delivers nothing: `handle` counts it), to be routed at `now`. Returns the
    /// express frames.
    #[inline]
    fn stage_lane(&mut self, burst: &MbufBurst, received: usize, port: u16, now: Picos) -> u64 {
        let vrf = match self.forwarder.lane_vrf(port) {
            Some(vrf) if self.forwarder.port_up(port) => vrf,
            _ => {
                self.lane.clear();
                return 0;
            }
        };
        let mut scratch = [const { MaybeUninit::uninit() }; dpdk::MAX_BURST];
        let frames = burst.whole_frames(&mut scratch);
        debug_assert_eq!(frames.len(), received);
        let classes = self.untagged_ip_classes.get(usize::from(port));
        let classes = classes.unwrap_or(&[0; 64]);
        self.forwarder
            .stage_lane(&mut self.lane, frames, vrf, classes, now)
    }

    /// Lets the egress ports run up to `now` and sends what they started.
    #[inline]
    fn transmit_due(&mut self, now: Picos, choices_at_now: bool) {
        self.tm.advance(now, choices_at_now, |port, mbuf| {
            self.tx.push(port, mbuf, &self.counters)
        });
        self.after_tm();
        self.flush_all();
    }

    /// Sends the PFC frames the traffic manager decided on (ahead of every data queue) and
    /// counts the drops it made on its own.
    #[inline]
    fn after_tm(&mut self) {
        if self.tm.has_pfc_frames() {
            let mut frames = std::mem::take(&mut self.pfc_scratch);
            self.tm.take_pfc_frames(|f| frames.push(*f));
            for frame in &frames {
                let port = usize::from(frame.port);
                let bytes = pfc::encode(self.port_macs[port], frame.enable, frame.quanta);
                match Mbuf::from_bytes(&self.pool, &bytes) {
                    Some(mbuf) => self.tx.push(frame.port, mbuf, &self.counters),
                    None => self
                        .counters
                        .drop_packets(DropReason::ControlFrameNoMbuf, 1),
                }
                if self.replay_origin_us.is_some() {
                    self.peer_pause(frame);
                }
            }
            frames.clear();
            self.pfc_scratch = frames;
        }
        let counters = &self.counters;
        self.tm
            .take_drop_tally(|reason, n| counters.drop_packets(reason, n));
    }

    /// Applies every scheduled event due at or before `now` (events before a frame's arrival
    /// take effect first, DESIGN.md's tie rule).
    fn apply_schedule(&mut self, now: Picos) {
        while self.schedule.last().is_some_and(|e| e.at <= now) {
            let event = self.schedule.pop().expect("checked");
            match event.action {
                ScheduledAction::Link { port, up } => self.set_port_up(port, up, now),
                ScheduledAction::Apply(updates) => {
                    if let crate::ctl::Reply::Rejected { index, error } =
                        self.apply_batch(&updates, now)
                    {
                        self.shared
                            .schedule_rejections
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(super::ScheduleRejection {
                                index: event.index,
                                at: event.at,
                                why: format!("update {index}: {error}"),
                            });
                        // The run ends here (README): what follows was written for a switch
                        // that took the batch, so replaying it would only mislead.
                        self.schedule.clear();
                        self.shared.schedule_refused.store(true, Ordering::Release);
                        return;
                    }
                }
            }
        }
    }

    /// A link that goes down loses what its queues hold (counted as link_down drops).
    fn set_port_up(&mut self, port: u16, up: bool, now: Picos) {
        self.forwarder.set_port_up(port, up);
        if !up {
            let dropped = self.tm.flush_port(now, port);
            self.counters.drop_packets(DropReason::LinkDown, dropped);
        }
    }

    fn note_received(&self, port: usize, burst: &MbufBurst, received: usize) {
        let counters = self.counters.port(port);
        counters.rx_packets.add(received as u64);
        if let Some(ts) = burst.get(received - 1).and_then(|p| p.rx_timestamp()) {
            if counters.first_rx_timestamp.get() == 0 {
                counters
                    .first_rx_timestamp
                    .set(burst.get(0).and_then(|p| p.rx_timestamp()).unwrap_or(ts));
            }
            counters.last_rx_timestamp.set(ts);
        }
    }

    /// Applies the link changes the control thread saw, at `now()`.
    fn poll_links(&mut self, now: impl FnOnce() -> Picos) {
        let generation = self.shared.link_generation.load(Ordering::Acquire);
        if generation != self.link_generation_seen {
            self.link_generation_seen = generation;
            let now = now();
            for port in 0..self.shared.link_up.len() {
                let up = self.shared.link_up[port].load(Ordering::Relaxed);
                if up != self.forwarder.port_up(port as u16) {
                    self.set_port_up(port as u16, up, now);
                }
            }
        }
    }

    fn age(&mut self, now: Picos) {
        if now.saturating_sub(self.last_aging) >= AGING_PERIOD {
            self.last_aging = now;
            self.forwarder.age_macs(now);
        }
        if now >= self.neighbor_deadline {
            self.run_neighbor_timers(now);
        }
    }

    /// Neighbour reachability at `now`: learned neighbours past their reachable time are
    /// asked again (ARP request, Neighbor Solicitation), unicast to the MAC they have (on a
    /// VLAN, out of the port the bridge has it on, flooded in the VLAN if the MAC table lost
    /// it); those that did not answer lose their MAC in the forwarder, so traffic to them
    /// stops and is resolved afresh (broadcast). One `neighbor_probes` per request, whatever
    /// the number of frames it took.
    #[cold]
    #[inline(never)]
    pub(super) fn run_neighbor_timers(&mut self, now: Picos) {
        for request in self.neighbors.needs_resolution(now) {
            let (interface, ip) = (request.interface, request.ip);
            match request.mac {
                Some(mac) => {
                    let port = self.forwarder.bridge_port(interface, mac, now);
                    self.slow
                        .probe(interface, ip, mac, port, now, &mut self.outgoing);
                }
                None => self.slow.resolve(interface, ip, now, &mut self.outgoing),
            }
            self.counters.neighbor_probes.add(1);
        }
        for id in self.neighbors.expire(now) {
            if let Some(neighbor) = self.neighbors.nexthop(id) {
                self.forwarder
                    .neighbor_lost(neighbor.interface, neighbor.ip);
                self.neighbors.remove_nexthop(id);
                self.counters.neighbors_expired.add(1);
            }
        }
        self.neighbor_deadline = self.neighbors.next_deadline().unwrap_or(Picos::MAX);
        self.apply_slow_path_results(now);
    }

    /// A learned neighbour was heard at `now`: reachable for the reachable time from now.
    fn neighbor_heard(&mut self, interface: u16, ip: IpAddr, mac: [u8; 6], now: Picos) {
        if self.neighbors.find(ip, interface).is_none() {
            self.neighbors.add_nexthop(ip, interface);
        }
        self.neighbors.learn(ip, mac, interface, now);
        self.neighbor_deadline = self.neighbors.next_deadline().unwrap_or(Picos::MAX);
    }

    /// The operator made `ip` on `interface` a static neighbour or deleted it: not tracked.
    pub(super) fn forget_neighbor(&mut self, interface: u16, ip: IpAddr) {
        if let Some(id) = self.neighbors.find(ip, interface) {
            while !self.neighbors.remove_nexthop(id) {}
            self.neighbor_deadline = self.neighbors.next_deadline().unwrap_or(Picos::MAX);
        }
    }

    fn handle(&mut self, mut mbuf: Mbuf, in_port: u16, now: Picos) {
        if !self.forwarder.port_up(in_port) {
            // A link that is down delivers nothing; a replay trace may still hold frames.
            self.counters.drop_packets(DropReason::LinkDown, 1);
            return;
        }
        if mbuf.packet().segments() > 1 {
            self.counters.drop_packets(DropReason::MultiSegment, 1);
            return;
        }
        if let Some(control) = pfc::parse(mbuf.packet().data()) {
            // PAUSE/PFC are consumed by the port: they hold its egress queues, never forwarded.
            self.tm.receive_mac_control(now, in_port, control);
            self.counters.drop_packets(DropReason::MacControl, 1);
            return;
        }
        let tc = qos::classify(mbuf.packet().data(), &self.port_qos[usize::from(in_port)]);
        let verdict = self.process_resizable(&mut mbuf, in_port, now);
        self.act_on(verdict, mbuf, in_port, tc, now);
    }

    /// The burst's previous bridged verdict for a frame that repeats its L2 header
    /// (`Forwarder::repeated_bridging`): what `handle` would decide, without its checks. The
    /// port is up (the burst's first bridged frame found it so), and the header equals one
    /// that was bridged, so the frame is no MAC control frame; only its segments are left.
    #[inline(always)]
    fn repeated_bridging(&mut self, mbuf: &mut Mbuf, in_port: u16, now: Picos) -> Option<Verdict> {
        let mut packet = mbuf.packet_mut();
        if packet.segments() != 1 {
            return None;
        }
        self.forwarder
            .repeated_bridging(packet.data_mut(), in_port, now)
    }

    /// `handle` for frame `index` of the burst, an express frame of the lane (see
    /// `ExpressLane`): its class and route come from the lane's passes. `ingress` is the
    /// in-port's gate, read for the burst. `WAY` is the pass-3 loop the burst takes (the
    /// `LANE_*` constants): `route_lane` for any frame, or, for a burst that allows it, a
    /// way without some of its tests.
    #[inline(always)]
    fn handle_lane<const WAY: u8>(
        &mut self,
        mut mbuf: Mbuf,
        index: usize,
        ingress: IngressGate,
        now: Picos,
    ) {
        debug_assert_eq!(
            mbuf.packet().segments(),
            1,
            "the lane takes whole frames only"
        );
        let mut packet = mbuf.packet_mut();
        let frame = packet.data_mut();
        let tc = self.lane.class(index);
        debug_assert_eq!(
            tc,
            qos::classify(frame, &self.port_qos[usize::from(ingress.port())])
        );
        let (forwarder, lane) = (&mut self.forwarder, &self.lane);
        let port = match WAY {
            LANE_PLAIN_IPV4 | LANE_PLAIN_IPV6 => {
                let ipv6 = WAY == LANE_PLAIN_IPV6;
                #[cfg(debug_assertions)]
                let received = frame.to_vec();
                let nexthop = forwarder.lane_plain_nexthop(lane, index, frame, ipv6);
                let port = forwarder.route_lane_to(lane, index, frame, nexthop, ipv6, now);
                // Debug builds: a frame the plain way sends leaves as `route_lane` sends it
                // (whose path is then the same copy of the nexthop's addresses, no other
                // effect).
                #[cfg(debug_assertions)]
                if port != LANE_OTHER {
                    let mut routed = received;
                    let lane_port = forwarder.route_lane(lane, index, &mut routed, now);
                    assert_eq!((lane_port, &routed[..]), (port, &frame[..]), "plain lane");
                }
                port
            }
            LANE_ENDPOINTS => forwarder.route_lane_endpoint(lane, index, frame, now),
            _ => forwarder.route_lane(lane, index, frame, now),
        };
        match port {
            LANE_OTHER => {
                let verdict = self.forwarder.lane_verdict();
                self.act_on(verdict, mbuf, ingress.port(), tc, now);
            }
            // (Pass 3 returns only ports that are up.)
            port => self.send_from::<true>(mbuf, port, TagOp::Keep, tc, ingress, now),
        }
    }

    /// A frame of a burst of one flow that leaves by `port` with the nexthop's `addresses`
    /// (`Forwarder::lane_one_flow_egress`): `handle_lane` without the per-frame lookups.
    #[inline(always)]
    fn handle_one_flow(
        &mut self,
        mut mbuf: Mbuf,
        index: usize,
        port: u16,
        addresses: &[u8; 12],
        ingress: IngressGate,
        now: Picos,
    ) {
        let mut packet = mbuf.packet_mut();
        let frame = packet.data_mut();
        #[cfg(debug_assertions)]
        {
            let mut routed = frame.to_vec();
            let lane_port = self
                .forwarder
                .route_lane(&self.lane, index, &mut routed, now);
            crate::pipeline::route_one_flow(frame, addresses);
            assert_eq!(
                (lane_port, &routed[..]),
                (port, &frame[..]),
                "one-flow burst"
            );
        }
        #[cfg(not(debug_assertions))]
        crate::pipeline::route_one_flow(frame, addresses);
        let tc = self.lane.class(index);
        self.send_from::<true>(mbuf, port, TagOp::Keep, tc, ingress, now);
    }

    /// Carries out the pipeline's verdict on a frame of class `tc`.
    #[inline(always)]
    fn act_on(&mut self, verdict: Verdict, mbuf: Mbuf, in_port: u16, tc: u8, now: Picos) {
        match verdict {
            Verdict::Forward { port, tag } => self.send(mbuf, port, tag, tc, in_port, now),
            Verdict::Flood {
                vlan,
                ingress_tagged,
            } => self.flood(mbuf, in_port, vlan, ingress_tagged, tc, now),
            Verdict::Punt { reason, interface } => self.punt(mbuf, in_port, reason, interface, now),
            Verdict::Drop(reason) => self.counters.drop_packets(reason, 1),
            Verdict::DropWithIcmpError { reason, error } => {
                self.counters.drop_packets(reason, 1);
                self.send_icmp_error(&mbuf, in_port, error, now);
            }
            Verdict::DropWithRouterError { reason, error } => {
                self.counters.drop_packets(reason, 1);
                self.send_router_error(&mbuf, error, now);
            }
            Verdict::Fragment { mtu } => self.fragment(mbuf, in_port, mtu, now),
        }
    }

    /// Cuts an IPv4 packet too long for its way out into fragments of at most `mtu` bytes and
    /// takes each through the pipeline as if it had arrived so (TTL, route, SRv6 policy,
    /// class, counters all as for any frame). A fragment whose own way out is too small
    /// again (another member of an ECMP group, say) is dropped: fragmenting never recurses.
    /// What cannot be cut (a malformed header, no mbuf) is counted as `mtu_exceeded`.
    #[cold]
    #[inline(never)]
    fn fragment(&mut self, mbuf: Mbuf, in_port: u16, mtu: u16, now: Picos) {
        let fragments = crate::fragment::fragment_ipv4_frame(mbuf.packet().data(), mtu);
        drop(mbuf);
        let Some(fragments) = fragments else {
            self.counters.drop_packets(DropReason::MtuExceeded, 1);
            return;
        };
        self.counters.fragmented.add(1);
        for bytes in fragments {
            let Some(mut piece) = Mbuf::from_bytes(&self.pool, &bytes) else {
                self.counters.drop_packets(DropReason::MtuExceeded, 1);
                continue;
            };
            self.counters.fragments.add(1);
            let tc = qos::classify(piece.packet().data(), &self.port_qos[usize::from(in_port)]);
            match self.process_resizable(&mut piece, in_port, now) {
                Verdict::Fragment { .. } => self.counters.drop_packets(DropReason::MtuExceeded, 1),
                verdict => self.act_on(verdict, piece, in_port, tc, now),
            }
        }
    }

    /// Runs the pipeline on the mbuf's data with the rest of its buffer available (SRv6
    /// encapsulation grows the frame to the front, into the headroom or, when that is short,
    /// after moving the frame toward the tailroom; decapsulation shrinks it), then sets the
    /// mbuf's data window to where the pipeline left the frame.
    fn process_resizable(&mut self, mbuf: &mut Mbuf, in_port: u16, now: Picos) -> Verdict {
        let mut packet = mbuf.packet_mut();
        let (buffer, start, end) = packet.buffer_mut();
        let Some(mut frame) = Frame::new(buffer, start, end) else {
            return Verdict::Drop(DropReason::Truncated);
        };
        let verdict = self.forwarder.process_frame(&mut frame, in_port, now);
        let (new_start, new_end) = (frame.start(), frame.end());
        if (new_start, new_end) == (start, end) {
            return verdict;
        }
        // The frame only moves inside the buffer and `handle` let single segments through
        // only, so this succeeds.
        if !packet.set_data_window(new_start, new_end) {
            return Verdict::Drop(DropReason::NoHeadroom);
        }
        verdict
    }

    /// Answers a frame for the switch itself in the slow path, on this worker. Out of line, as
    /// are the other rare verdicts' handlers: the per-frame path stays small.
    #[cold]
    #[inline(never)]
    fn punt(
        &mut self,
        mbuf: Mbuf,
        in_port: u16,
        reason: crate::pipeline::PuntReason,
        interface: u16,
        now: Picos,
    ) {
        let replies_before = self.outgoing.len();
        self.slow.handle_punt(
            mbuf.packet().data(),
            in_port,
            reason,
            interface,
            now,
            &mut self.outgoing,
            &mut self.learned,
        );
        drop(mbuf);
        let answered = self.outgoing.len() > replies_before;
        // Used: answered, or a neighbour learned or confirmed by it (an announcement of a
        // neighbour the switch does not have, or of a static one, teaches nothing).
        if self.apply_slow_path_results(now) | answered {
            self.counters.punted.add(1);
        } else {
            self.counters.drop_packets(DropReason::SlowPathIgnored, 1);
        }
    }

    /// Sends the ICMPv6 error the RFC asks for about a dropped frame, if the slow path builds
    /// one (rate limit, quoting rules) and its destination is routable.
    #[cold]
    #[inline(never)]
    fn send_icmp_error(&mut self, mbuf: &Mbuf, in_port: u16, error: Icmpv6Error, now: Picos) {
        let built = self
            .slow
            .icmpv6_error(mbuf.packet().data(), in_port, error, now);
        if let Some(bytes) = built {
            self.route_and_send_error(&bytes, false, error.vrf, now);
        }
        self.publish_icmp_error_counters();
    }

    /// Sends the ICMP or ICMPv6 error a router sends about a packet it could not route (TTL
    /// or hop limit expired, no route), if the slow path builds one (RFC 1812 / RFC 4443
    /// rules, rate limit, an address on the ingress interface) and it is routable.
    #[cold]
    #[inline(never)]
    fn send_router_error(&mut self, mbuf: &Mbuf, error: RouterError, now: Picos) {
        let packet = mbuf.packet();
        let frame = packet.data();
        let built = if error.kind == RouterErrorKind::PacketTooBig {
            let mtu = self.forwarder.too_big_mtu();
            self.slow.packet_too_big(frame, error, mtu, now)
        } else {
            self.slow.router_error(frame, error, now)
        };
        if let Some(bytes) = built {
            let ipv4 = bytes.get(12..14) == Some(&[0x08, 0x00][..]);
            self.route_and_send_error(&bytes, ipv4, error.vrf, now);
        }
        self.publish_icmp_error_counters();
    }

    /// Routes an error the slow path built (an untagged frame) in `vrf` and queues it; what
    /// cannot be routed or finds no mbuf is counted as not sent.
    fn route_and_send_error(&mut self, bytes: &[u8], ipv4: bool, vrf: u16, now: Picos) {
        let Some(mut reply) = Mbuf::from_bytes(&self.pool, bytes) else {
            self.slow.icmp_errors_not_sent += 1;
            return;
        };
        let verdict = {
            let mut packet = reply.packet_mut();
            let mut frame = Frame::whole(packet.data_mut());
            if ipv4 {
                self.forwarder.route_originated_ipv4(&mut frame, vrf, now)
            } else {
                self.forwarder.route_originated_ipv6(&mut frame, vrf, now)
            }
        };
        self.serve_requests(now);
        match verdict {
            Verdict::Forward { port, tag } => {
                self.counters.generated.add(1);
                // Errors go in the class their own DSCP gives them (IPv4 CS6, IPv6 0), from
                // the CPU: lossy.
                let tc = qos::classify(reply.packet().data(), &self.port_qos[usize::from(port)]);
                self.send(reply, port, tag, tc, CPU_PORT, now);
            }
            // Its destination is a reachable neighbour whose MAC aged out of the MAC table:
            // flooded in the VLAN as a routed packet is (`routed_flooded`), while the
            // forwarder asks for the neighbour again. Classed by its DSCP on the VLAN's
            // first port (its ports share a VLAN's traffic, so their profiles as a rule).
            Verdict::Flood {
                vlan,
                ingress_tagged,
            } => {
                self.counters.generated.add(1);
                let first = self.forwarder.vlan_members(vlan).first();
                let profile = first.and_then(|&port| self.port_qos.get(usize::from(port)));
                let tc = profile.map_or(0, |p| qos::classify(reply.packet().data(), p));
                self.flood(reply, CPU_PORT, vlan, ingress_tagged, tc, now);
            }
            _ => self.slow.icmp_errors_not_sent += 1,
        }
    }

    /// Copies the slow path's error counters to the worker's counter block (single writer).
    fn publish_icmp_error_counters(&self) {
        let c = &self.counters;
        c.icmp_errors_built.set(self.slow.icmp_errors_built);
        c.icmp_errors_suppressed
            .set(self.slow.icmp_errors_suppressed);
        c.icmp_errors_not_sent.set(self.slow.icmp_errors_not_sent);
    }

    #[inline(never)]
    fn flood(
        &mut self,
        mbuf: Mbuf,
        in_port: u16,
        vlan: u16,
        ingress_tagged: bool,
        tc: u8,
        now: Picos,
    ) {
        // A routed packet meeting a MAC-table miss (only routed frames leave with the router
        // MAC as their source: own_source_mac) is flooded in lossy classes alone (the
        // forwarder already asked for its neighbour again).
        if self.tm.pfc_thresholds(in_port, tc).is_some()
            && mbuf.packet().data().get(6..12) == Some(&self.forwarder.router_mac()[..])
        {
            self.counters.drop_packets(DropReason::LosslessFlood, 1);
            return;
        }
        // ARP and Neighbor Advertisements flooded in a routed VLAN may announce a neighbour's
        // new MAC: the switch listens as the hosts do.
        if let Some(interface) = self.forwarder.vlan_interface(vlan)
            && is_arp_or_icmpv6(mbuf.packet().data())
        {
            self.slow
                .overhear(mbuf.packet().data(), interface, &mut self.learned);
            if !self.learned.is_empty() {
                self.apply_slow_path_results(now);
            }
        }
        let mut targets = [0u16; MAX_FLOOD_PORTS];
        let mut count = 0;
        for &port in self.forwarder.vlan_members(vlan) {
            if port != in_port && self.forwarder.port_up(port) && count < MAX_FLOOD_PORTS {
                targets[count] = port;
                count += 1;
            }
        }
        if count == 0 {
            self.counters.drop_packets(DropReason::NoEgressPort, 1);
            return;
        }
        let mut original = Some(mbuf);
        for (i, &port) in targets[..count].iter().enumerate() {
            let copy = if i + 1 == count {
                original.take()
            } else {
                original
                    .as_ref()
                    .and_then(|m| m.packet().copy_into(&self.pool))
            };
            let Some(mut copy) = copy else {
                self.counters.drop_packets(DropReason::FloodCopyFailed, 1);
                continue;
            };
            let tag = match (ingress_tagged, self.forwarder.egress_tagged(port, vlan)) {
                (false, false) => TagOp::Keep,
                (false, true) => TagOp::Push(vlan),
                (true, false) => TagOp::Pop,
                (true, true) => {
                    // A priority tag (VID 0) from an access port gets the VLAN's VID.
                    let mut packet = copy.packet_mut();
                    let data = packet.data_mut();
                    let tci = u16::from_be_bytes([data[14], data[15]]);
                    data[14..16].copy_from_slice(&((tci & 0xf000) | vlan).to_be_bytes());
                    TagOp::Keep
                }
            };
            self.send(copy, port, tag, tc, in_port, now);
        }
    }

    /// Rewrites the tag and offers the frame to (port, tc)'s egress queue. The common case (an
    /// untouched tag, a port with nothing queued: `TrafficManager::try_pass_through`) goes
    /// straight to the TX burst; everything else takes `send_in_full`.
    #[inline(always)]
    fn send(&mut self, mbuf: Mbuf, port: u16, tag: TagOp, tc: u8, in_port: u16, now: Picos) {
        let ingress = self.tm.ingress_gate(in_port);
        self.send_from::<false>(mbuf, port, tag, tc, ingress, now);
    }

    /// `send` with the in-port's part of the decision read already
    /// (`TrafficManager::ingress_gate`; the express path reads it once per burst).
    /// `PORT_IS_UP`: the caller knows `port` is up (a repeated bridging decision).
    #[inline(always)]
    fn send_from<const PORT_IS_UP: bool>(
        &mut self,
        mbuf: Mbuf,
        port: u16,
        tag: TagOp,
        tc: u8,
        ingress: IngressGate,
        now: Picos,
    ) {
        debug_assert!(!PORT_IS_UP || self.forwarder.port_up(port));
        if matches!(tag, TagOp::Keep) && (PORT_IS_UP || self.forwarder.port_up(port)) {
            let len = mbuf.packet().data().len() as u32;
            if self.tm.try_pass_through(now, port, tc, ingress, len) {
                self.tx.push(port, mbuf, &self.counters);
                return;
            }
        }
        self.send_in_full(mbuf, port, tag, tc, ingress.port(), now);
    }

    #[inline(never)]
    fn send_in_full(
        &mut self,
        mut mbuf: Mbuf,
        port: u16,
        tag: TagOp,
        tc: u8,
        in_port: u16,
        now: Picos,
    ) {
        if !self.forwarder.port_up(port) {
            self.counters.drop_packets(DropReason::LinkDown, 1);
            return;
        }
        let tagged_ok = match tag {
            TagOp::Keep => true,
            TagOp::Push(vid) => mbuf.packet_mut().push_vlan(vid),
            TagOp::Pop => mbuf.packet_mut().pop_vlan(),
        };
        if !tagged_ok {
            self.counters.drop_packets(DropReason::NoHeadroom, 1);
            return;
        }
        let admission = self.tm.enqueue_or_send(
            now,
            port,
            tc,
            in_port,
            mbuf,
            |m| m.packet_mut().into_data_mut(),
            |port, m| self.tx.push(port, m, &self.counters),
        );
        if let Admission::Dropped(reason) = admission {
            self.counters.drop_packets(reason, 1);
        }
        if self.tm.has_pfc_frames() {
            self.after_tm();
        }
    }

    fn flush_all(&mut self) {
        self.tx.flush_all(&self.counters);
    }

    fn serve_requests(&mut self, now: Picos) {
        if !self.forwarder.has_requests() {
            return;
        }
        self.requests.extend(self.forwarder.drain_requests());
        for index in 0..self.requests.len() {
            let ControlRequest::Resolve { interface, ip } = self.requests[index];
            self.slow.resolve(interface, ip, now, &mut self.outgoing);
        }
        self.requests.clear();
        self.apply_slow_path_results(now);
    }

    /// Installs what the slow path learned and transmits what it built.
    /// Returns whether any neighbour was learned, changed or confirmed.
    fn apply_slow_path_results(&mut self, now: Picos) -> bool {
        let mut heard = false;
        let mut learned = std::mem::take(&mut self.learned);
        for entry in learned.drain(..) {
            let (known, interface, ip, mac) = match entry {
                Learned::Neighbor { interface, ip, mac } => (
                    self.forwarder.neighbor_resolved(interface, ip, mac),
                    interface,
                    ip,
                    mac,
                ),
                Learned::NoOverride { interface, ip, mac } => (
                    self.forwarder
                        .neighbor_resolved_unless_known(interface, ip, mac),
                    interface,
                    ip,
                    mac,
                ),
                Learned::Refresh { interface, ip, mac } => (
                    self.forwarder.neighbor_refreshed(interface, ip, mac),
                    interface,
                    ip,
                    mac,
                ),
                // An answer to a unicast refresh without the neighbour's MAC in it: confirms
                // the MAC a learned neighbour has (the table holds exactly the learned
                // neighbours, with the forwarder's MAC); static ones are not tracked.
                Learned::Confirm { interface, ip } => {
                    let mac = self
                        .neighbors
                        .find(ip, interface)
                        .and_then(|id| self.neighbors.state(id))
                        .and_then(|state| state.mac());
                    match mac {
                        Some(mac) => (true, interface, ip, mac),
                        None => (false, interface, ip, [0; 6]),
                    }
                }
            };
            // What confirms a learned neighbour marks it reachable; static neighbours are
            // neither changed nor tracked.
            if known {
                self.neighbor_heard(interface, ip, mac, now);
            }
            heard |= known;
        }
        self.learned = learned;
        let outgoing = std::mem::take(&mut self.outgoing);
        for Outgoing { port, frame } in &outgoing {
            match Mbuf::from_bytes(&self.pool, frame) {
                Some(mbuf) => {
                    self.counters.generated.add(1);
                    let tc = qos::classify(frame, &self.port_qos[usize::from(*port)]);
                    self.send(mbuf, *port, TagOp::Keep, tc, CPU_PORT, now);
                }
                None => self.counters.drop_packets(DropReason::FloodCopyFailed, 1),
            }
        }
        self.outgoing = outgoing;
        self.outgoing.clear();
        heard
    }
}

/// Whether a frame (at most one 802.1Q tag) is ARP or IPv6 carrying ICMPv6 right after its
/// header: what `SlowPath::overhear` may learn from.
fn is_arp_or_icmpv6(frame: &[u8]) -> bool {
    let at = if frame.get(12..14) == Some(&[0x81, 0x00][..]) {
        16
    } else {
        12
    };
    match frame.get(at..at + 2) {
        Some([0x08, 0x06]) => true,
        Some([0x86, 0xdd]) => frame.get(at + 2 + 6) == Some(&58),
        _ => false,
    }
}
