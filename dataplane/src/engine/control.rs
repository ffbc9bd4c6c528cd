//! What the engine hands the control plane on the main lcore: the request channel to the
//! switch worker, the counter blocks the workers write, and the ports' admin state.

use crate::counters::{Srv6Counters, WorkerCounters};
use crate::ctl::Channel;
use crate::dpdk::PortStats;
use crate::qos::TmCounters;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Read and drive a running switch (see `EngineHooks::attach`).
#[derive(Clone)]
pub struct ControlHandle {
    /// Table updates and snapshots, served by the switch worker between bursts.
    pub channel: Arc<Channel>,
    /// One block per worker: sum them (`CounterSnapshot::sum`).
    pub counters: Vec<Arc<WorkerCounters>>,
    /// Per (port, TC) queue counters; switch mode only.
    pub queues: Option<Arc<TmCounters>>,
    /// Per SID and per policy counters (spec order); switch mode only.
    pub srv6: Option<Arc<Srv6Counters>>,
    pub admin: Arc<AdminState>,
    /// The ports' PMD counters, refreshed by the control loop.
    pub devices: Arc<DeviceCounters>,
    /// False in io mode (no tables to update).
    pub switch_mode: bool,
}

/// Each port's PMD counters (bytes, device drops and errors) as the control loop last read
/// them, every link poll (100 ms): what `show ports` and metrics give while the switch runs.
/// Written and read on the main lcore only, never by a worker.
#[derive(Debug, Default)]
pub struct DeviceCounters {
    ports: Mutex<Vec<PortStats>>,
}

impl DeviceCounters {
    pub fn set(&self, stats: Vec<PortStats>) {
        *self.ports.lock().unwrap_or_else(|e| e.into_inner()) = stats;
    }

    /// Port `port`'s counters as last read (zero before the first read).
    pub fn port(&self, port: usize) -> PortStats {
        self.ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(port)
            .copied()
            .unwrap_or_default()
    }
}

/// The operator's up/down per port. A port is forwarding while its link is up and its admin
/// state is up; the control loop applies changes within one control period.
#[derive(Debug)]
pub struct AdminState {
    up: Vec<AtomicBool>,
    generation: AtomicU64,
}

impl AdminState {
    pub fn new(ports: usize) -> AdminState {
        AdminState {
            up: (0..ports).map(|_| AtomicBool::new(true)).collect(),
            generation: AtomicU64::new(0),
        }
    }

    /// Sets port `port` admin up or down; false if there is no such port.
    pub fn set(&self, port: usize, up: bool) -> bool {
        let Some(state) = self.up.get(port) else {
            return false;
        };
        state.store(up, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    pub fn is_up(&self, port: usize) -> bool {
        self.up.get(port).is_some_and(|s| s.load(Ordering::Relaxed))
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
