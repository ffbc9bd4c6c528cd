//! io mode: ports in pairs, packets moved without being looked at.

use super::{WorkerShared, io_peer};
use crate::counters::{DropReason, WorkerCounters};
use crate::dpdk::{self, MbufBurst, Mempool, Port, RxQueue, StopSignal, TxQueue};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// One RX queue and where its packets go.
pub(crate) struct IoLane {
    rx: RxQueue,
    rx_index: usize,
    tx: TxQueue,
    tx_index: usize,
    exhausted: bool,
}

/// Port i's RX queue goes to worker i % workers, which transmits on its own TX queue of the
/// peer port.
pub(crate) fn io_lanes(ports: &mut [Port], workers: usize) -> Vec<Vec<IoLane>> {
    let mut lanes: Vec<Vec<IoLane>> = (0..workers).map(|_| Vec::new()).collect();
    let count = ports.len();
    for index in 0..count {
        let worker = index % workers;
        let peer = io_peer(index, count);
        let rx = ports[index]
            .take_rx_queue(0)
            .expect("each RX queue is taken once");
        let tx = ports[peer]
            .take_tx_queue(u16::try_from(worker).expect("worker count fits the TX queue count"))
            .expect("each worker takes one TX queue per peer port");
        lanes[worker].push(IoLane {
            rx,
            rx_index: index,
            tx,
            tx_index: peer,
            exhausted: false,
        });
    }
    lanes
}

pub(crate) struct IoWorker {
    pub(crate) lanes: Vec<IoLane>,
    pub(crate) counters: Arc<WorkerCounters>,
    pub(crate) shared: Arc<WorkerShared>,
    pub(crate) pool: Arc<Mempool>,
    pub(crate) stop: StopSignal,
    pub(crate) burst: usize,
    pub(crate) exit_when_idle: bool,
}

impl IoWorker {
    pub(crate) fn run(mut self) {
        let hz = dpdk::tsc_hz().max(1);
        let start = dpdk::tsc();
        let mut burst = MbufBurst::new();
        let mut live_lanes = self.lanes.len();
        while !self.stop.is_requested() && live_lanes > 0 {
            for lane in self.lanes.iter_mut() {
                let received = lane.rx.rx_burst(&mut burst, self.burst);
                if received == 0 {
                    // The pcap PMD also returns 0 when it cannot allocate; only a 0 with
                    // mbufs to spare means the input is really exhausted.
                    if self.exit_when_idle
                        && !lane.exhausted
                        && self.pool.available() as usize >= self.burst
                    {
                        lane.exhausted = true;
                        live_lanes -= 1;
                    }
                    continue;
                }
                let rx_counters = self.counters.port(lane.rx_index);
                rx_counters.rx_packets.add(received as u64);
                // One timestamp read per burst: where in the trace this port is.
                if let Some(ts) = burst.get(received - 1).and_then(|p| p.rx_timestamp()) {
                    if rx_counters.first_rx_timestamp.get() == 0 {
                        let first = burst.get(0).and_then(|p| p.rx_timestamp()).unwrap_or(ts);
                        rx_counters.first_rx_timestamp.set(first);
                    }
                    rx_counters.last_rx_timestamp.set(ts);
                }
                let chained = burst.drop_chained();
                if chained > 0 {
                    self.counters
                        .drop_packets(DropReason::MultiSegment, chained as u64);
                }
                let (sent, freed) = lane.tx.tx_burst_or_free(&mut burst);
                self.counters
                    .port(lane.tx_index)
                    .tx_packets
                    .add(sent as u64);
                if freed > 0 {
                    self.counters
                        .drop_packets(DropReason::TxRingFull, freed as u64);
                }
            }
        }
        let nanos =
            (u128::from(dpdk::tsc().wrapping_sub(start)) * 1_000_000_000 / u128::from(hz)) as u64;
        self.shared
            .longest_forwarding_nanos
            .fetch_max(nanos, Ordering::Relaxed);
        // Release: the counters written above are visible to whoever sees running == 0.
        self.shared.running.fetch_sub(1, Ordering::Release);
    }
}
