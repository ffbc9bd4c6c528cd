//! Traffic classes, egress queues and the traffic manager: classification (DSCP/PCP -> TC),
//! admission with ECN marking and tail drop, a shared-buffer model with per-(port, TC)
//! ingress and egress accounting, per-port strict-priority + DWRR scheduling and a line-rate
//! shaper. Pure and time-driven (time is always passed in), so replay is exact and tests drive
//! it in memory.

pub mod classify;
pub mod dwrr;
pub mod ecn;
pub mod pfc;
pub mod tm;

pub use classify::{classify, classify_untagged_ip};
pub use pfc::{MacControl, PfcThresholds};
pub use tm::{
    Admission, CPU_PORT, IngressGate, PfcFrame, QosEvent, QosEventKind, QueueCounters, TmCounters,
    TrafficManager,
};

use crate::clock::{MIN_FRAME_BYTES, Picos, WIRE_OVERHEAD_BYTES};

/// Traffic classes (and egress queues) per port. PFC priority n is TC n.
pub const TC_COUNT: usize = 8;

/// Which header field decides a frame's traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The IP DSCP; non-IP frames use the 802.1Q PCP if tagged, else TC 0.
    Dscp,
    /// The 802.1Q PCP; untagged frames are PCP 0.
    Pcp,
}

/// How an egress queue competes for its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    /// Served before every DWRR queue; among strict queues the higher TC wins.
    Strict,
    /// Deficit weighted round robin among the DWRR queues; the weight is the quantum in bytes.
    Dwrr { weight: u32 },
}

/// RED/DCQCN-style ECN profile on the egress queue depth in bytes. No mark below `kmin`, every
/// ECT packet marked at or above `kmax`, probability rising linearly to `pmax` in between. A
/// step marker (DCTCP) is `kmin == kmax`: mark when depth >= kmin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EcnProfile {
    pub kmin: u64,
    pub kmax: u64,
    /// 0.0..=1.0
    pub pmax: f64,
}

/// One traffic class of one port.
#[derive(Debug, Clone, PartialEq)]
pub struct TcSpec {
    pub sched: Sched,
    /// A lossy class tail-drops when depth + packet would exceed this.
    pub queue_limit: u64,
    pub ecn: Option<EcnProfile>,
    /// Depths whose crossings (up and down) go to the event log.
    pub watermarks: Vec<u64>,
}

impl TcSpec {
    pub const DEFAULT_QUEUE_LIMIT: u64 = 1 << 20;
    pub const DEFAULT_DWRR_WEIGHT: u32 = 1500;
}

impl Default for TcSpec {
    fn default() -> Self {
        Self {
            sched: Sched::Dwrr {
                weight: Self::DEFAULT_DWRR_WEIGHT,
            },
            queue_limit: Self::DEFAULT_QUEUE_LIMIT,
            ecn: None,
            watermarks: Vec::new(),
        }
    }
}

/// A port's line rate; `Unlimited` turns the shaper off (benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSpeed {
    Gbps(u32),
    Unlimited,
}

impl PortSpeed {
    pub const DEFAULT: PortSpeed = PortSpeed::Gbps(100);

    /// Time a frame of `len` bytes (as stored, no FCS) occupies the link: padded to 60 bytes,
    /// plus FCS, preamble and inter-frame gap. Exact in picoseconds at every speed that
    /// divides 8000 Gb/s (10, 25, 40, 50, 100, 200, 400 ...).
    #[inline]
    pub fn wire_time(self, len: u32) -> Picos {
        match self {
            PortSpeed::Gbps(gbps) => {
                let bytes = u64::from(len).max(MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES;
                bytes * 8000 / u64::from(gbps.max(1))
            }
            PortSpeed::Unlimited => 0,
        }
    }

    /// Picoseconds per byte on the wire when that is a whole number (every speed that divides
    /// 8000 Gb/s), so the fast path multiplies instead of dividing; 0 when unlimited.
    pub fn picos_per_byte(self) -> Option<u64> {
        match self {
            PortSpeed::Gbps(gbps) if gbps > 0 && 8000 % gbps == 0 => Some(u64::from(8000 / gbps)),
            PortSpeed::Gbps(_) => None,
            PortSpeed::Unlimited => Some(0),
        }
    }
}

/// A port's wire-time calculator with the division done once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRate {
    speed: PortSpeed,
    picos_per_byte: Option<u64>,
}

impl LineRate {
    pub fn new(speed: PortSpeed) -> LineRate {
        LineRate {
            speed,
            picos_per_byte: speed.picos_per_byte(),
        }
    }

    /// Picoseconds per wire byte, when whole (see `PortSpeed::picos_per_byte`).
    #[inline]
    pub fn picos_per_byte(self) -> Option<u64> {
        self.picos_per_byte
    }

    /// As `PortSpeed::wire_time`.
    #[inline]
    pub fn wire_time(self, len: u32) -> Picos {
        // (Unlimited is 0 picoseconds per byte: the product is 0 without a branch.)
        match self.picos_per_byte {
            Some(per_byte) => {
                (u64::from(len).max(MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES) * per_byte
            }
            None => self.speed.wire_time(len),
        }
    }
}

/// What the PFC watchdog does to a queue in storm state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchdogAction {
    /// Drop what the queue holds and what arrives for it, and stop pausing upstream for the TC.
    Drop,
    /// Ignore the received pauses and transmit.
    Forward,
    /// Count and log only.
    Alert,
}

/// The PFC watchdog of a port's lossless queues (REFERENCE.md 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchdogSpec {
    /// A queue paused continuously this long enters storm state.
    pub detection: Picos,
    /// A storm ends after this long without a received pause.
    pub restoration: Picos,
    pub action: WatchdogAction,
}

impl Default for WatchdogSpec {
    fn default() -> Self {
        Self {
            detection: 200 * crate::clock::PICOS_PER_MICRO * 1000,
            restoration: 200 * crate::clock::PICOS_PER_MICRO * 1000,
            action: WatchdogAction::Drop,
        }
    }
}

/// Classification and queueing for one port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortQos {
    pub speed: PortSpeed,
    pub trust: Trust,
    pub dscp_to_tc: [u8; 64],
    pub pcp_to_tc: [u8; 8],
    /// Bit n set: TC n is lossless on this port (never tail-dropped or RED-dropped).
    pub lossless: u8,
    pub tcs: [TcSpec; TC_COUNT],
    /// PFC thresholds of this port's lossless TCs as an ingress; `None`: no PFC for the TC.
    pub pfc: [Option<pfc::PfcThresholds>; TC_COUNT],
    /// Replay's emulated peer: from a PFC frame leaving this port to the peer stopping (cable
    /// round trip plus the peer's response time).
    pub peer_delay: Picos,
    /// `None`: no watchdog.
    pub watchdog: Option<WatchdogSpec>,
}

impl PortQos {
    /// DSCP 3 -> TC 3, 4 -> TC 4, 48 (CS6, network control) -> TC 6, the rest TC 0.
    pub fn default_dscp_map() -> [u8; 64] {
        let mut map = [0u8; 64];
        map[3] = 3;
        map[4] = 4;
        map[48] = 6;
        map
    }

    /// PCP n -> TC n (so PFC priority n pauses TC n).
    pub fn default_pcp_map() -> [u8; 8] {
        [0, 1, 2, 3, 4, 5, 6, 7]
    }

    /// Cable length assumed when the config gives none (server to leaf).
    pub const DEFAULT_CABLE_M: u32 = 5;
    /// The frame size headroom is computed for when the port has no MTU (SONiC's default).
    pub const DEFAULT_LOSSLESS_MTU: u32 = 9100;

    pub fn is_lossless(&self, tc: u8) -> bool {
        self.lossless & (1 << (tc & 7)) != 0
    }
}

impl Default for PortQos {
    fn default() -> Self {
        Self {
            speed: PortSpeed::DEFAULT,
            trust: Trust::Dscp,
            dscp_to_tc: Self::default_dscp_map(),
            pcp_to_tc: Self::default_pcp_map(),
            lossless: 0,
            tcs: Default::default(),
            pfc: [None; TC_COUNT],
            peer_delay: pfc::HeadroomInputs {
                gbps: 100,
                cable_m: Self::DEFAULT_CABLE_M,
                mtu: Self::DEFAULT_LOSSLESS_MTU,
            }
            .peer_delay(),
            watchdog: Some(WatchdogSpec::default()),
        }
    }
}

/// The switch's buffer and every port's QoS.
#[derive(Debug, Clone, PartialEq)]
pub struct QosSpec {
    /// Indexed by port number.
    pub ports: Vec<PortQos>,
    /// The shared packet buffer; nothing is admitted beyond it.
    pub buffer_bytes: u64,
    /// Seed of the random source behind ECN/RED probabilities (replay stays deterministic).
    pub ecn_seed: u64,
    /// Record watermark crossings and ECN onsets (the `--events` log).
    pub events: bool,
}

impl QosSpec {
    pub const DEFAULT_BUFFER_BYTES: u64 = 32 << 20;

    pub fn new(ports: usize) -> Self {
        Self {
            ports: vec![PortQos::default(); ports],
            buffer_bytes: Self::DEFAULT_BUFFER_BYTES,
            ecn_seed: 1,
            events: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_time_at_each_speed_counts_padding_fcs_preamble_and_gap() {
        // 64-byte frame on the wire: 60 stored + 4 FCS + 8 preamble + 12 IFG = 84 bytes = 672 bits.
        for (gbps, picos) in [
            (10, 67_200),
            (25, 26_880),
            (40, 16_800),
            (100, 6_720),
            (400, 1_680),
        ] {
            assert_eq!(PortSpeed::Gbps(gbps).wire_time(60), picos, "{gbps}G");
            assert_eq!(PortSpeed::Gbps(gbps).wire_time(20), picos, "{gbps}G padded");
        }
        // 1500 stored -> 1524 bytes = 12192 bits: 121.92 ns at 100G, 30.48 ns at 400G.
        assert_eq!(PortSpeed::Gbps(100).wire_time(1500), 121_920);
        assert_eq!(PortSpeed::Gbps(400).wire_time(1500), 30_480);
        assert_eq!(PortSpeed::Gbps(25).wire_time(1500), 487_680);
        assert_eq!(PortSpeed::Unlimited.wire_time(1500), 0);
    }

    #[test]
    fn line_rate_multiplies_to_the_same_wire_time() {
        for speed in [10, 25, 40, 50, 100, 200, 400, 3, 7] {
            let rate = LineRate::new(PortSpeed::Gbps(speed));
            for len in [0u32, 59, 60, 61, 64, 1500, 9000] {
                assert_eq!(rate.wire_time(len), PortSpeed::Gbps(speed).wire_time(len));
            }
        }
        assert_eq!(LineRate::new(PortSpeed::Unlimited).wire_time(9000), 0);
    }

    #[test]
    fn wire_time_agrees_with_the_clock_formula() {
        for len in [1u32, 60, 61, 64, 1000, 1514, 9000] {
            for gbps in [10, 25, 40, 50, 100, 200, 400] {
                assert_eq!(
                    PortSpeed::Gbps(gbps).wire_time(len),
                    crate::clock::wire_time(len as usize, gbps)
                );
            }
        }
    }

    #[test]
    fn default_maps_follow_the_issue() {
        let q = PortQos::default();
        for dscp in 0..64 {
            let want = match dscp {
                3 => 3,
                4 => 4,
                48 => 6,
                _ => 0,
            };
            assert_eq!(q.dscp_to_tc[dscp], want, "dscp {dscp}");
        }
        assert_eq!(q.pcp_to_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(!q.is_lossless(3));
    }
}
