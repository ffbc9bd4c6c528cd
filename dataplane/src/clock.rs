//! Time for the dataplane. Live mode reads the TSC; replay mode runs on virtual time taken
//! from the traces. Virtual time is kept in picoseconds: a 64-byte frame at 100 Gb/s lasts
//! 6.72 ns, so whole nanoseconds would drift (DESIGN.md "Time").

/// Picoseconds: the unit of virtual time. A u64 lasts about 213 days.
pub type Picos = u64;

pub const PICOS_PER_NANO: Picos = 1_000;
pub const PICOS_PER_MICRO: Picos = 1_000_000;
pub const PICOS_PER_SECOND: Picos = 1_000_000_000_000;

/// Bytes a frame occupies on the wire beyond the frame as stored in the mbuf (no FCS):
/// FCS 4 + preamble and start delimiter 8 + inter-frame gap 12.
pub const WIRE_OVERHEAD_BYTES: u64 = 4 + 8 + 12;
/// Frames shorter than this (without FCS) are padded on the wire.
pub const MIN_FRAME_BYTES: u64 = 60;

/// A source of "now" for the pipeline. The pipeline never reads a clock itself: time is
/// passed in, so tests and replay drive it exactly.
pub trait Clock {
    fn now(&mut self) -> Picos;
}

/// Wall-clock time from the TSC, as picoseconds since the clock was made.
#[derive(Debug, Clone)]
pub struct TscClock {
    start_cycles: u64,
    hz: u64,
    read: fn() -> u64,
}

impl TscClock {
    /// `read` returns cycles (the engine passes the TSC reader); `hz` is cycles per second.
    pub fn new(read: fn() -> u64, hz: u64) -> Self {
        Self {
            start_cycles: read(),
            hz: hz.max(1),
            read,
        }
    }

    /// Converts a cycle count to picoseconds without overflow for any u64 input.
    pub fn cycles_to_picos(cycles: u64, hz: u64) -> Picos {
        let hz = hz.max(1) as u128;
        ((cycles as u128 * PICOS_PER_SECOND as u128) / hz).min(u64::MAX as u128) as Picos
    }
}

/// Cycles to picoseconds at a fixed TSC rate by multiplication: live mode converts the TSC
/// once per RX burst, and the exact conversion (`TscClock::cycles_to_picos`) is a 128-bit
/// division, tens of cycles each time. At most 1 ps below the exact value, and monotonic.
#[derive(Debug, Clone, Copy)]
pub struct TscScale {
    /// Whole picoseconds per cycle, and the fraction beyond them in units of 2^-64.
    whole: u64,
    fraction: u64,
}

impl TscScale {
    pub fn new(hz: u64) -> Self {
        let hz = hz.max(1);
        let rest = u128::from(PICOS_PER_SECOND % hz);
        TscScale {
            whole: PICOS_PER_SECOND / hz,
            // rest < hz, so this is below 2^64.
            fraction: ((rest << 64) / u128::from(hz)) as u64,
        }
    }

    #[inline(always)]
    pub fn picos(self, cycles: u64) -> Picos {
        let fractional = ((u128::from(cycles) * u128::from(self.fraction)) >> 64) as u64;
        cycles.saturating_mul(self.whole).saturating_add(fractional)
    }
}

impl Clock for TscClock {
    fn now(&mut self) -> Picos {
        Self::cycles_to_picos((self.read)().wrapping_sub(self.start_cycles), self.hz)
    }
}

/// Virtual time driven by the traces: `advance_to` moves it forward (never backward).
#[derive(Debug, Clone, Default)]
pub struct TraceClock {
    now: Picos,
}

impl TraceClock {
    pub fn new(start: Picos) -> Self {
        Self { now: start }
    }

    /// Moves time to `t` if it is later than now; returns the new now.
    pub fn advance_to(&mut self, t: Picos) -> Picos {
        self.now = self.now.max(t);
        self.now
    }

    /// Virtual time of a pcap timestamp (the PMD stores microseconds since the epoch):
    /// picoseconds since `origin_us` (`trace_origin_us`), 0 for a timestamp before it. Picos
    /// since the epoch itself would not fit a u64 after August 1970.
    pub fn from_pcap_micros(micros: u64, origin_us: u64) -> Picos {
        micros
            .saturating_sub(origin_us)
            .saturating_mul(PICOS_PER_MICRO)
    }
}

/// Microseconds in a day.
pub const MICROS_PER_DAY: u64 = 86_400 * 1_000_000;

/// Where a replay's virtual time starts, in pcap microseconds: midnight (UTC) of the day of
/// `earliest_us`, the earliest first timestamp of the input traces. Whole days keep a trace's
/// time of day readable in virtual time, and traces stamped near the epoch (tests count from
/// 1 s) keep their timestamps as virtual time; a u64 of picoseconds then lasts 213 days.
pub fn trace_origin_us(earliest_us: u64) -> u64 {
    earliest_us - earliest_us % MICROS_PER_DAY
}

impl Clock for TraceClock {
    fn now(&mut self) -> Picos {
        self.now
    }
}

/// Time a frame of `len` bytes (as stored, no FCS) occupies a link of `gbps` Gb/s:
/// `(max(len, 60) + 24) * 8` bits. Exact in picoseconds for every standard speed.
pub fn wire_time(len: usize, gbps: u32) -> Picos {
    let bytes = (len as u64).max(MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES;
    // bits * 1000 / gbps = picoseconds (1 Gb/s moves one bit per 1000 ps).
    bytes * 8 * 1000 / u64::from(gbps.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_scale_is_the_exact_conversion_to_within_a_picosecond_and_monotonic() {
        let rates = [
            1,
            999,
            1_000_000_007,
            2_000_000_000,
            2_893_204_000,
            3_000_000_007,
            PICOS_PER_SECOND,
            PICOS_PER_SECOND + 1,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for hz in rates {
            let scale = TscScale::new(hz);
            let mut cycles: Vec<u64> = (0..2000u64).collect();
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Up to a year of cycles at 4 GHz (2^57).
                cycles.push(x >> 7);
            }
            cycles.sort_unstable();
            let mut last = 0;
            for &c in &cycles {
                let exact = TscClock::cycles_to_picos(c, hz);
                let fast = scale.picos(c);
                assert!(fast <= exact && exact - fast <= 1, "{c} cycles at {hz} Hz");
                assert!(fast >= last, "monotonic at {c} cycles, {hz} Hz");
                last = fast;
            }
        }
    }

    #[test]
    fn minimum_frame_at_100g_is_6_72_ns() {
        // 64-byte frame on the wire = 60 stored + 4 FCS, + 20 preamble/IFG = 84 bytes.
        assert_eq!(wire_time(60, 100), 6_720);
        assert_eq!(wire_time(10, 100), 6_720, "short frames are padded to 60");
        assert_eq!(wire_time(1514, 100), (1514 + 24) * 8 * 10);
    }

    #[test]
    fn wire_time_at_each_standard_speed() {
        // 84 bytes = 672 bits; 1 Gb/s is 1000 ps per bit.
        for (gbps, picos) in [
            (10, 67_200),
            (25, 26_880),
            (40, 16_800),
            (100, 6_720),
            (400, 1_680),
        ] {
            assert_eq!(wire_time(60, gbps), picos, "{gbps} Gb/s");
        }
    }

    #[test]
    fn tsc_conversion_is_exact_and_does_not_overflow() {
        assert_eq!(
            TscClock::cycles_to_picos(2_000_000_000, 2_000_000_000),
            PICOS_PER_SECOND
        );
        assert_eq!(TscClock::cycles_to_picos(3, 3_000_000_000), 1_000);
        assert_eq!(TscClock::cycles_to_picos(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn pcap_time_counts_from_the_origin_day() {
        // 2023-11-14 22:13:20 UTC, gen-trace's start: 80_000 s into its day.
        let stamp = 1_700_000_000_000_000;
        let origin = trace_origin_us(stamp);
        assert_eq!(origin, 1_699_920_000_000_000);
        assert_eq!(origin % MICROS_PER_DAY, 0);
        assert_eq!(
            TraceClock::from_pcap_micros(stamp + 7, origin),
            (80_000 * 1_000_000 + 7) * PICOS_PER_MICRO,
            "microseconds apart stay microseconds apart"
        );
        assert_eq!(TraceClock::from_pcap_micros(origin - 1, origin), 0);
        // Traces of the first day (the tests' 1 s start) keep their timestamps.
        assert_eq!(trace_origin_us(1_000_000), 0);
        assert_eq!(
            TraceClock::from_pcap_micros(1_000_010, 0),
            1_000_010 * PICOS_PER_MICRO
        );
    }

    #[test]
    fn trace_clock_never_goes_backward() {
        let mut clock = TraceClock::new(TraceClock::from_pcap_micros(5, 0));
        assert_eq!(clock.now(), 5 * PICOS_PER_MICRO);
        clock.advance_to(3 * PICOS_PER_MICRO);
        assert_eq!(clock.now(), 5 * PICOS_PER_MICRO);
        clock.advance_to(9 * PICOS_PER_MICRO);
        assert_eq!(clock.now(), 9 * PICOS_PER_MICRO);
    }

    #[test]
    fn tsc_clock_counts_from_creation() {
        fn fake_cycles() -> u64 {
            use std::sync::atomic::{AtomicU64, Ordering};
            static CYCLES: AtomicU64 = AtomicU64::new(100);
            CYCLES.fetch_add(50, Ordering::Relaxed)
        }
        let mut clock = TscClock::new(fake_cycles, 1_000_000_000);
        // Created at 100, next read 150: 50 cycles at 1 GHz = 50 ns.
        assert_eq!(clock.now(), 50 * PICOS_PER_NANO);
    }
}
