//! The poll-mode engine: brings up the EAL, the mempool and the ports from a plain
//! `EngineConfig`, runs workers on their lcores, and keeps the main lcore as the control
//! loop (link state, stop conditions, the caller's periodic hook). Returns a report of every
//! counter when the run ends.

mod control;
mod io;
mod switch;

pub use control::{AdminState, ControlHandle, DeviceCounters};

use crate::counters::{
    CounterSnapshot, DropReason, FragmentationCounts, IcmpErrorCounts, MacTableCounts,
    NeighborCounts, ObjectSnapshot, Srv6Counters, WorkerCounters,
};
use crate::dpdk::{
    self, DpdkError, Eal, LaunchError, LinkStatus, MAX_BURST, Mempool, MtuOutcome, Port,
    PortConfig, PortStats, StopSignal,
};
use crate::qos::{QosEvent, TC_COUNT, TmCounters};
use crate::tables::flowlet::{BalanceCounters, BalanceSpec, FlowletMove};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One port as the engine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The operator's name for the port (used in every message and counter).
    pub name: String,
    /// DPDK devargs: a vdev (`net_pcap0,rx_pcap=...`) or a PCI address.
    pub devargs: String,
    pub mtu: Option<u16>,
}

/// What the workers do with packets.
#[derive(Debug, Clone, PartialEq)]
pub enum ForwardingMode {
    /// Ports in pairs (0<->1, 2<->3, ...; an odd last port loops back to itself); packets are
    /// moved without being looked at. The baseline every benchmark is compared with.
    Io,
    /// A leaf/spine switch: VLAN bridging, IPv4/IPv6 routing, ECMP (one worker).
    Switch(Box<crate::pipeline::spec::SwitchSpec>),
}

/// Everything the engine needs, already validated by the control plane.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Complete EAL argument list, program name first.
    pub eal_args: Vec<String>,
    pub ports: Vec<PortSpec>,
    /// Lcores that run workers (the EAL main lcore runs the control loop).
    pub worker_lcores: Vec<u32>,
    pub mode: ForwardingMode,
    pub mbufs: u32,
    pub mbuf_cache: u32,
    pub mbuf_data_room: u16,
    pub burst: usize,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    /// A replay's time origin in pcap microseconds: virtual time is a frame's pcap time less
    /// this (`clock::trace_origin_us`); schedules and the event log are in that time.
    pub trace_origin_us: u64,
    /// Stop once every input is exhausted (pcap end of file).
    pub exit_when_idle: bool,
    /// Stop after this long (benchmarks).
    pub duration: Option<Duration>,
}

/// Something that happens at a given trace time in a replay (`--schedule`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledEvent {
    /// Virtual time: the pcap timestamps' clock less the replay's origin
    /// (`EngineConfig::trace_origin_us`).
    pub at: crate::clock::Picos,
    /// Its place in the schedule file (`event[index]`), for messages.
    pub index: usize,
    pub action: ScheduledAction,
}

/// A scheduled batch the switch refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRejection {
    /// The event's place in the schedule file (`ScheduledEvent::index`) and its virtual time.
    pub index: usize,
    pub at: crate::clock::Picos,
    /// Which update of the batch, and why.
    pub why: String,
}

/// What a scheduled event does.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduledAction {
    /// The link of port `port` (index in the config) goes down or comes up.
    Link { port: u16, up: bool },
    /// A batch of table and queue updates, applied as one (as a control request would be:
    /// all of it or nothing).
    Apply(Vec<crate::ctl::Update>),
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    Signal,
    Duration,
    InputsExhausted,
    /// A replay's workers stopped because no frame could move (the mbufs ran out with the
    /// inputs not read to their end): `RunReport::replay_stalled`.
    ReplayStalled,
    /// The switch refused a `--schedule` event: the replay ended there
    /// (`RunReport::schedule_rejections`).
    ScheduleRefused,
}

impl StopCause {
    pub fn as_str(self) -> &'static str {
        match self {
            StopCause::Signal => "signal",
            StopCause::Duration => "duration",
            StopCause::InputsExhausted => "inputs_exhausted",
            StopCause::ReplayStalled => "replay_stalled",
            StopCause::ScheduleRefused => "schedule_refused",
        }
    }
}

/// Something the control loop noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    LinkChanged { port: String, status: LinkStatus },
}

/// A port once it is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub dpdk_port_id: u16,
    pub mac: [u8; 6],
    pub link: LinkStatus,
    /// What became of the port's configured MTU (`None`: none configured).
    pub mtu: Option<MtuOutcome>,
    /// The MTU routed packets leaving by the port are held to: the configured one as the
    /// device took it (`MtuOutcome::routing_mtu`), else the device's own (ethdev's 1500).
    pub routing_mtu: u16,
}

/// One port's counters at the end of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortReport {
    pub info: PortInfo,
    /// Counted by the switch.
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// PMD receive timestamps (pcap: microseconds) of the first and last packet received.
    pub first_rx_timestamp: Option<u64>,
    pub last_rx_timestamp: Option<u64>,
    /// Counted by the PMD.
    pub device: PortStats,
}

/// One (port, TC) queue's counters at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueSnapshot {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub ecn_marked: u64,
    pub depth_bytes: u64,
    pub peak_depth_bytes: u64,
    pub ingress_bytes: u64,
    pub peak_ingress_bytes: u64,
    pub pfc_tx_frames: u64,
    pub pfc_rx_frames: u64,
    pub xoff_transitions: u64,
    pub xon_transitions: u64,
    pub paused_ps: u64,
    pub watchdog_storms: u64,
    pub watchdog_restorations: u64,
    pub headroom_drops: u64,
    pub watchdog_drops: u64,
}

impl QueueSnapshot {
    fn of(c: &crate::qos::QueueCounters) -> QueueSnapshot {
        QueueSnapshot {
            enqueued_packets: c.enqueued_packets(),
            enqueued_bytes: c.enqueued_bytes(),
            dequeued_packets: c.dequeued_packets(),
            dequeued_bytes: c.dequeued_bytes(),
            dropped_packets: c.dropped_packets.get(),
            dropped_bytes: c.dropped_bytes.get(),
            ecn_marked: c.ecn_marked.get(),
            depth_bytes: c.depth_bytes.get(),
            peak_depth_bytes: c.peak_depth_bytes.get(),
            ingress_bytes: c.ingress_bytes.get(),
            peak_ingress_bytes: c.peak_ingress_bytes.get(),
            pfc_tx_frames: c.pfc_tx_frames.get(),
            pfc_rx_frames: c.pfc_rx_frames.get(),
            xoff_transitions: c.xoff_transitions.get(),
            xon_transitions: c.xon_transitions.get(),
            paused_ps: c.paused_ps.get(),
            watchdog_storms: c.watchdog_storms.get(),
            watchdog_restorations: c.watchdog_restorations.get(),
            headroom_drops: c.headroom_drops.get(),
            watchdog_drops: c.watchdog_drops.get(),
        }
    }

    /// Whether anything passed through or happened in this queue.
    pub fn is_idle(&self) -> bool {
        *self == QueueSnapshot::default()
    }
}

/// Everything a run counted.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// `EngineConfig::trace_origin_us`: what the run's virtual times count from.
    pub trace_origin_us: u64,
    pub ports: Vec<PortReport>,
    pub drops: Vec<(DropReason, u64)>,
    /// Frames handed to the slow path (ARP/ND/ICMP for the switch) and frames it sent.
    pub punted: u64,
    pub generated: u64,
    /// ICMP and ICMPv6 errors about dropped packets: built, suppressed, not sent.
    pub icmp_errors: IcmpErrorCounts,
    /// IPv4 packets fragmented for an egress MTU, and the fragments made.
    pub fragmentation: FragmentationCounts,
    /// Learned neighbours asked again after their reachable time, and those lost.
    pub neighbors: NeighborCounts,
    /// Source MACs the full MAC table refused, and routed packets flooded in their VLAN for
    /// want of the neighbour's MAC in it.
    pub mac_table: MacTableCounts,
    /// `[port][tc]` queue counters (switch mode; empty in io mode).
    pub queues: Vec<[QueueSnapshot; TC_COUNT]>,
    /// Watermark crossings and ECN onsets, oldest first (when the spec asked for them).
    pub qos_events: Vec<QosEvent>,
    pub qos_events_lost: u64,
    /// Per ECMP group (by group id): balancing mode and counters (switch mode).
    pub groups: Vec<GroupReport>,
    /// Flowlets that changed member, oldest first (when the spec asked for events).
    pub flowlet_moves: Vec<FlowletMove>,
    /// The replay could not go on for lack of mbufs (see `[dataplane] mbufs`).
    pub replay_stalled: bool,
    /// The scheduled update batch the worker refused, which ended the replay (at most one).
    pub schedule_rejections: Vec<ScheduleRejection>,
    /// Longest time a worker spent forwarding.
    pub forwarding_time: Duration,
    pub stop_cause: StopCause,
    /// SRv6 counters per local SID and per policy, by name (switch mode).
    pub srv6_sids: Vec<(String, ObjectSnapshot)>,
    pub srv6_policies: Vec<(String, ObjectSnapshot)>,
}

/// One ECMP group's balancing at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupReport {
    pub spec: BalanceSpec,
    pub flowlets: u64,
    pub moves: u64,
    pub forced_moves: u64,
    /// By member index (the order of the group's members in the config).
    pub member_bytes: Vec<u64>,
    pub member_packets: Vec<u64>,
    pub events_lost: u64,
}

impl GroupReport {
    fn of(spec: &BalanceSpec, c: &BalanceCounters) -> GroupReport {
        GroupReport {
            spec: *spec,
            flowlets: c.flowlets.get(),
            moves: c.moves.get(),
            forced_moves: c.forced_moves.get(),
            member_bytes: c.member_bytes(),
            member_packets: c.member_packets(),
            events_lost: c.events_lost.get(),
        }
    }

    /// Max member bytes over mean member bytes (`tables::flowlet::imbalance`).
    pub fn imbalance(&self) -> f64 {
        crate::tables::flowlet::imbalance(&self.member_bytes)
    }
}

/// The end-of-run report of each group the run started with: its counters, and the
/// balancing it ended with when a `set_group` changed it (the counters block is the same).
/// A group rebuilt for new members counts in a new block: it is reported as it started.
fn final_group_reports(
    started: &[(BalanceSpec, Arc<BalanceCounters>)],
    ended: &[(BalanceSpec, Arc<BalanceCounters>)],
) -> Vec<GroupReport> {
    started
        .iter()
        .enumerate()
        .map(|(g, (spec, counters))| {
            let spec = ended
                .get(g)
                .filter(|(_, last)| Arc::ptr_eq(last, counters))
                .map_or(spec, |(last_spec, _)| last_spec);
            GroupReport::of(spec, counters)
        })
        .collect()
}

impl RunReport {
    pub fn rx_nombuf(&self) -> u64 {
        self.ports.iter().map(|p| p.device.rx_nombuf).sum()
    }
}

/// Why the engine could not start or run.
#[derive(Debug)]
pub enum EngineError {
    Eal(DpdkError),
    Mempool(DpdkError),
    Port {
        port: String,
        error: DpdkError,
    },
    Launch(LaunchError),
    NoWorkers,
    /// The configuration cannot run (e.g. the switch spec does not build).
    Config(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Eal(e) => write!(f, "DPDK EAL initialisation: {e}"),
            EngineError::Mempool(e) => write!(f, "mbuf pool: {e}"),
            EngineError::Port { port, error } => write!(f, "port {port}: {error}"),
            EngineError::Launch(e) => write!(f, "worker launch: {e}"),
            EngineError::NoWorkers => write!(f, "no worker lcore configured"),
            EngineError::Config(e) => write!(f, "configuration: {e}"),
        }
    }
}

impl std::error::Error for EngineError {}

/// Callbacks from the control loop on the main lcore.
pub trait EngineHooks {
    /// Every port is up and workers are about to start.
    fn ready(&mut self, _ports: &[PortInfo]) {}
    fn event(&mut self, _event: &EngineEvent) {}
    /// Called about every 10 ms while running.
    fn tick(&mut self) {}
    /// Before `ready`: what the control plane may read and drive while the switch runs.
    fn attach(&mut self, _handle: ControlHandle) {}
}

/// Hooks that do nothing.
pub struct NoHooks;
impl EngineHooks for NoHooks {}

const CONTROL_PERIOD: Duration = Duration::from_millis(10);
const LINK_POLL_PERIOD: Duration = Duration::from_millis(100);

/// Runs the switch until a signal, the duration, or the end of every input.
pub fn run(config: &EngineConfig, hooks: &mut dyn EngineHooks) -> Result<RunReport, EngineError> {
    run_with_schedule(config, &[], hooks)
}

/// As `run`, applying `schedule` (sorted by time) as trace time passes. Replays of switch
/// mode only: it needs trace time.
pub fn run_with_schedule(
    config: &EngineConfig,
    schedule: &[ScheduledEvent],
    hooks: &mut dyn EngineHooks,
) -> Result<RunReport, EngineError> {
    let replaying_switch =
        config.exit_when_idle && matches!(config.mode, ForwardingMode::Switch(_));
    if !schedule.is_empty() && !replaying_switch {
        return Err(EngineError::Config(
            "a schedule needs switch mode and a replay (--exit-when-idle on pcap inputs)"
                .to_owned(),
        ));
    }
    if config.worker_lcores.is_empty() {
        return Err(EngineError::NoWorkers);
    }
    let eal = Eal::init(&config.eal_args).map_err(EngineError::Eal)?;
    let result = run_with_eal(config, schedule, hooks);
    // Ports and pool are dropped inside run_with_eal, before the EAL goes away.
    eal.cleanup();
    result
}

/// The mbuf data room a frame of `mtu` bytes of L3 needs: DPDK's 128-byte headroom, the
/// Ethernet header and two VLAN tags (22 bytes). The engine sizes its mbufs for the largest
/// MTU the ports take (never below `EngineConfig::mbuf_data_room`).
pub fn mbuf_room_for_mtu(mtu: u16) -> u16 {
    mtu.saturating_add(128 + 22)
}

fn run_with_eal(
    config: &EngineConfig,
    schedule: &[ScheduledEvent],
    hooks: &mut dyn EngineHooks,
) -> Result<RunReport, EngineError> {
    let stop = dpdk::install_stop_signal_handlers();
    // Declared before the ports so that, on every return, the ports (whose rings hold its
    // mbufs) are closed before the pool is freed; created once the ports' MTUs are known.
    let pool: Arc<Mempool>;
    let mut ports = Vec::with_capacity(config.ports.len());
    let mut largest_mtu = 0;
    for spec in &config.ports {
        let port_error = |error| EngineError::Port {
            port: spec.name.clone(),
            error,
        };
        let port = Port::probe(&spec.name, &spec.devargs).map_err(port_error)?;
        if let Some(asked) = spec.mtu {
            largest_mtu = largest_mtu.max(port.mtu_for(asked).map_err(port_error)?);
        }
        ports.push(port);
    }
    // Every frame a port's MTU allows must arrive in one mbuf: the pipeline reads a frame
    // from one contiguous buffer and drops chained ones (`multi_segment`).
    let data_room = config.mbuf_data_room.max(mbuf_room_for_mtu(largest_mtu));
    pool = Arc::new(
        Mempool::new("ironclos_mbufs", config.mbufs, config.mbuf_cache, data_room)
            .map_err(EngineError::Mempool)?,
    );
    let workers = config.worker_lcores.len();
    let port_config = |spec: &PortSpec| PortConfig {
        rx_queues: 1,
        tx_queues: u16::try_from(workers).unwrap_or(u16::MAX),
        rx_descriptors: config.rx_descriptors,
        tx_descriptors: config.tx_descriptors,
        mtu: spec.mtu,
        promiscuous: true,
    };
    let mut mtus = Vec::with_capacity(config.ports.len());
    for (spec, port) in config.ports.iter().zip(&mut ports) {
        let mtu = port
            .configure_and_start(&port_config(spec), &pool)
            .map_err(|error| EngineError::Port {
                port: spec.name.clone(),
                error,
            })?;
        mtus.push(mtu);
    }
    let infos: Vec<PortInfo> = ports
        .iter()
        .zip(mtus)
        .map(|(port, mtu)| PortInfo {
            name: port.label().to_owned(),
            dpdk_port_id: port.id(),
            mac: port.mac(),
            link: port.link(),
            mtu,
            routing_mtu: mtu.map_or_else(|| port.mtu(), MtuOutcome::routing_mtu),
        })
        .collect();

    let shared = Arc::new(WorkerShared {
        running: AtomicUsize::new(workers),
        longest_forwarding_nanos: AtomicU64::new(0),
        link_up: infos.iter().map(|i| AtomicBool::new(i.link.up)).collect(),
        link_generation: AtomicU64::new(0),
        replay_stalled: AtomicBool::new(false),
        schedule_refused: AtomicBool::new(false),
        schedule_rejections: Mutex::new(Vec::new()),
        qos_events: Mutex::new(Vec::new()),
        ctl: Arc::new(crate::ctl::Channel::new()),
        flowlet_moves: Mutex::new(Vec::new()),
        final_balancing: Mutex::new(Vec::new()),
    });
    let admin = Arc::new(AdminState::new(ports.len()));
    let queue_counters = Arc::new(TmCounters::new(ports.len()));
    let counters: Vec<Arc<WorkerCounters>> = (0..workers)
        .map(|_| Arc::new(WorkerCounters::new(ports.len())))
        .collect();
    let burst = config.burst.clamp(1, MAX_BURST);

    let mut jobs: Vec<Box<dyn FnOnce() + Send>> = Vec::with_capacity(workers);
    let mut balance: Vec<(BalanceSpec, Arc<BalanceCounters>)> = Vec::new();
    // Switch mode: the worker's SRv6 counters and the names to report them by.
    let mut srv6: Option<(Arc<Srv6Counters>, Vec<String>, Vec<String>)> = None;
    match &config.mode {
        ForwardingMode::Io => {
            for (worker, lanes) in io::io_lanes(&mut ports, workers).into_iter().enumerate() {
                let job = io::IoWorker {
                    lanes,
                    counters: Arc::clone(&counters[worker]),
                    shared: Arc::clone(&shared),
                    pool: Arc::clone(&pool),
                    stop,
                    burst,
                    exit_when_idle: config.exit_when_idle,
                };
                jobs.push(Box::new(move || job.run()));
            }
        }
        ForwardingMode::Switch(spec) => {
            if workers != 1 {
                return Err(EngineError::Config(
                    "switch mode runs on exactly one worker lcore for now".to_owned(),
                ));
            }
            if spec.ports.len() != ports.len() {
                return Err(EngineError::Config(format!(
                    "the switch spec describes {} ports but {} are configured",
                    spec.ports.len(),
                    ports.len()
                )));
            }
            let port_mtus: Vec<u16> = infos.iter().map(|info| info.routing_mtu).collect();
            let job = switch::SwitchWorker::new(
                spec,
                &mut ports,
                &port_mtus,
                Arc::clone(&counters[0]),
                Arc::clone(&shared),
                Arc::clone(&pool),
                stop,
                burst,
                config.exit_when_idle.then_some(config.trace_origin_us),
                schedule.to_vec(),
                Arc::clone(&queue_counters),
            )
            .map_err(|e| EngineError::Config(e.to_string()))?;
            balance = job
                .balance_specs()
                .into_iter()
                .zip(job.balance_counters())
                .collect();
            srv6 = Some((
                job.srv6_counters(),
                spec.srv6.sids.iter().map(|s| s.name.clone()).collect(),
                spec.srv6.policies.iter().map(|p| p.name.clone()).collect(),
            ));
            jobs.push(Box::new(move || job.run()));
        }
    }

    let handle = ControlHandle {
        channel: Arc::clone(&shared.ctl),
        counters: counters.clone(),
        queues: matches!(config.mode, ForwardingMode::Switch(_))
            .then(|| Arc::clone(&queue_counters)),
        srv6: srv6.as_ref().map(|(c, _, _)| Arc::clone(c)),
        admin: Arc::clone(&admin),
        devices: Arc::new(DeviceCounters::default()),
        switch_mode: matches!(config.mode, ForwardingMode::Switch(_)),
    };
    handle.devices.set(ports.iter().map(Port::stats).collect());
    hooks.attach(handle.clone());
    hooks.ready(&infos);
    for (job, lcore) in jobs.into_iter().zip(&config.worker_lcores) {
        if let Err(error) = dpdk::launch_on_lcore(*lcore, job) {
            stop.request();
            dpdk::wait_all_workers();
            return Err(EngineError::Launch(error));
        }
    }

    let stop_cause = control_loop(config, &ports, &infos, &shared, &handle, stop, hooks);
    stop.request();
    dpdk::wait_all_workers();

    let snapshot = CounterSnapshot::sum(&counters);
    let reports = ports
        .iter()
        .zip(infos)
        .enumerate()
        .map(|(index, (port, info))| PortReport {
            info: PortInfo {
                link: port.link(),
                ..info
            },
            rx_packets: snapshot.ports[index].rx_packets,
            tx_packets: snapshot.ports[index].tx_packets,
            first_rx_timestamp: snapshot.ports[index].first_rx_timestamp,
            last_rx_timestamp: snapshot.ports[index].last_rx_timestamp,
            device: port.stats(),
        })
        .collect();
    let (srv6_sids, srv6_policies) = match &srv6 {
        Some((counters, sid_names, policy_names)) => (
            sid_names
                .iter()
                .cloned()
                .zip(counters.sids.iter().map(|c| c.snapshot()))
                .collect(),
            policy_names
                .iter()
                .cloned()
                .zip(counters.policies.iter().map(|c| c.snapshot()))
                .collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    // Close every port (flushing pcap outputs) before the pool they draw from is freed.
    drop(ports);
    drop(pool);
    Ok(RunReport {
        trace_origin_us: config.trace_origin_us,
        ports: reports,
        drops: snapshot.drops,
        punted: snapshot.punted,
        generated: snapshot.generated,
        icmp_errors: snapshot.icmp_errors,
        fragmentation: snapshot.fragmentation,
        neighbors: snapshot.neighbors,
        mac_table: snapshot.mac_table,
        queues: if matches!(config.mode, ForwardingMode::Switch(_)) {
            queue_counters
                .queues
                .iter()
                .map(|tcs| std::array::from_fn(|tc| QueueSnapshot::of(&tcs[tc])))
                .collect()
        } else {
            Vec::new()
        },
        qos_events: std::mem::take(
            &mut *shared.qos_events.lock().unwrap_or_else(|e| e.into_inner()),
        ),
        qos_events_lost: queue_counters.events_lost.get(),
        groups: final_group_reports(
            &balance,
            &shared
                .final_balancing
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ),
        flowlet_moves: std::mem::take(
            &mut *shared
                .flowlet_moves
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ),
        replay_stalled: shared.replay_stalled.load(Ordering::Relaxed),
        schedule_rejections: std::mem::take(
            &mut *shared
                .schedule_rejections
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ),
        forwarding_time: Duration::from_nanos(
            shared.longest_forwarding_nanos.load(Ordering::Relaxed),
        ),
        stop_cause,
        srv6_sids,
        srv6_policies,
    })
}

fn control_loop(
    config: &EngineConfig,
    ports: &[Port],
    infos: &[PortInfo],
    shared: &WorkerShared,
    handle: &ControlHandle,
    stop: StopSignal,
    hooks: &mut dyn EngineHooks,
) -> StopCause {
    let admin = &handle.admin;
    let started = Instant::now();
    let mut admin_generation_seen = 0;
    let mut last_links: Vec<LinkStatus> = infos.iter().map(|info| info.link).collect();
    let mut last_link_poll = started;
    loop {
        std::thread::sleep(CONTROL_PERIOD);
        if stop.is_requested() {
            return StopCause::Signal;
        }
        if shared.running.load(Ordering::Acquire) == 0 {
            // Acquire above: a worker sets the stall flag before it stops running.
            if shared.replay_stalled.load(Ordering::Relaxed) {
                return StopCause::ReplayStalled;
            }
            if shared.schedule_refused.load(Ordering::Relaxed) {
                return StopCause::ScheduleRefused;
            }
            return StopCause::InputsExhausted;
        }
        if config
            .duration
            .is_some_and(|limit| started.elapsed() >= limit)
        {
            return StopCause::Duration;
        }
        if last_link_poll.elapsed() >= LINK_POLL_PERIOD {
            last_link_poll = Instant::now();
            handle.devices.set(ports.iter().map(Port::stats).collect());
            for (index, (port, last)) in ports.iter().zip(last_links.iter_mut()).enumerate() {
                let now = port.link();
                if now != *last {
                    *last = now;
                    shared.link_up[index].store(now.up && admin.is_up(index), Ordering::Relaxed);
                    shared.link_generation.fetch_add(1, Ordering::Release);
                    hooks.event(&EngineEvent::LinkChanged {
                        port: port.label().to_owned(),
                        status: now,
                    });
                }
            }
        }
        hooks.tick();
        // Admin state: a port taken down by the operator looks like a link down to workers.
        let generation = admin.generation();
        if generation != admin_generation_seen {
            admin_generation_seen = generation;
            for (index, last) in last_links.iter().enumerate() {
                let up = last.up && admin.is_up(index);
                if shared.link_up[index].swap(up, Ordering::Relaxed) != up {
                    shared.link_generation.fetch_add(1, Ordering::Release);
                }
            }
        }
    }
}

/// The io-mode peer of port `index`: pairs (0,1), (2,3), ...; an odd last port is its own.
pub fn io_peer(index: usize, port_count: usize) -> usize {
    let peer = index ^ 1;
    if peer < port_count { peer } else { index }
}

pub(crate) struct WorkerShared {
    /// Workers still polling; the control loop ends the run when it reaches zero.
    pub(crate) running: AtomicUsize,
    pub(crate) longest_forwarding_nanos: AtomicU64,
    /// Link state per port as the control loop last saw it, and a generation bumped on every
    /// change so workers notice with one load per poll.
    pub(crate) link_up: Vec<AtomicBool>,
    pub(crate) link_generation: AtomicU64,
    /// A replay ran out of mbufs with every free one held in queues: it could not go on.
    pub(crate) replay_stalled: AtomicBool,
    /// The worker refused a scheduled event and ended its replay there.
    pub(crate) schedule_refused: AtomicBool,
    /// Scheduled update batches the worker refused (written by the worker, read at the end).
    pub(crate) schedule_rejections: Mutex<Vec<ScheduleRejection>>,
    /// The switch worker's QoS event log, handed over once at the end of the run.
    pub(crate) qos_events: Mutex<Vec<QosEvent>>,
    /// Run-time requests to the switch worker (crate::ctl).
    pub(crate) ctl: Arc<crate::ctl::Channel>,
    /// The switch worker's flowlet moves, handed over once at the end of the run.
    pub(crate) flowlet_moves: Mutex<Vec<FlowletMove>>,
    /// Each group's balancing and counters as the switch worker ended, handed over with them.
    pub(crate) final_balancing: Mutex<Vec<(BalanceSpec, Arc<BalanceCounters>)>>,
}

#[cfg(test)]
mod tests {
    use super::io_peer;

    #[test]
    fn io_ports_pair_up_and_an_odd_last_port_loops_back() {
        assert_eq!(
            (0..4).map(|i| io_peer(i, 4)).collect::<Vec<_>>(),
            vec![1, 0, 3, 2]
        );
        assert_eq!(
            (0..3).map(|i| io_peer(i, 3)).collect::<Vec<_>>(),
            vec![1, 0, 2]
        );
        assert_eq!(io_peer(0, 1), 0);
    }
}
