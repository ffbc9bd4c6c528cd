//! ECN marking: the RED/DCQCN probability curve on the egress queue depth, a seeded random
//! source so replay stays deterministic, and setting CE in IPv4 (with an incremental checksum
//! update) and IPv6 headers.

use super::EcnProfile;
use super::classify::{IpVersion, locate_l3, traffic_class_byte};
use crate::wire::checksum;

/// RFC 3168 codepoints in the two low bits of the traffic-class byte.
pub const NOT_ECT: u8 = 0b00;
pub const ECT1: u8 = 0b01;
pub const ECT0: u8 = 0b10;
pub const CE: u8 = 0b11;

/// A marking probability in fixed point: `p / 2^32`; `ALWAYS` is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Probability(u64);

impl Probability {
    pub const NEVER: Probability = Probability(0);
    pub const ALWAYS: Probability = Probability(1 << 32);

    pub fn from_f64(p: f64) -> Probability {
        Probability((p.clamp(0.0, 1.0) * (1u64 << 32) as f64).round() as u64)
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / (1u64 << 32) as f64
    }

    /// Whether a uniform 32-bit draw falls under the probability.
    #[inline]
    pub fn hit(self, draw: u32) -> bool {
        u64::from(draw) < self.0
    }
}

/// A profile in the form the fast path uses: thresholds and `pmax` in fixed point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EcnCurve {
    kmin: u64,
    kmax: u64,
    pmax: Probability,
}

impl EcnCurve {
    pub fn new(profile: &EcnProfile) -> EcnCurve {
        EcnCurve {
            kmin: profile.kmin,
            kmax: profile.kmax.max(profile.kmin),
            pmax: Probability::from_f64(profile.pmax),
        }
    }

    pub fn kmin(&self) -> u64 {
        self.kmin
    }

    /// The marking probability for a packet that finds the queue `depth` bytes deep: zero below
    /// Kmin, one at or above Kmax, `pmax * (depth - kmin) / (kmax - kmin)` in between.
    #[inline]
    pub fn probability(&self, depth: u64) -> Probability {
        if depth < self.kmin {
            Probability::NEVER
        } else if depth >= self.kmax {
            Probability::ALWAYS
        } else {
            let span = u128::from(self.kmax - self.kmin);
            let above = u128::from(depth - self.kmin);
            Probability((u128::from(self.pmax.0) * above / span) as u64)
        }
    }
}

/// SplitMix64: tiny, fast and good enough for marking decisions; seeded from the config so a
/// replay gives the same marks on every run and machine.
#[derive(Debug, Clone)]
pub struct MarkRng(u64);

impl MarkRng {
    pub fn new(seed: u64) -> MarkRng {
        MarkRng(seed)
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    /// Decides an event of probability `p`, drawing only when the outcome is uncertain (so a
    /// step marker never consumes randomness and its marks depend on depth alone).
    #[inline]
    pub fn decide(&mut self, p: Probability) -> bool {
        if p == Probability::NEVER {
            false
        } else if p >= Probability::ALWAYS {
            true
        } else {
            p.hit(self.next_u32())
        }
    }
}

/// The frame's ECN codepoint, or `None` when it is not IP.
#[inline]
pub fn codepoint(frame: &[u8]) -> Option<u8> {
    let (offset, version) = locate_l3(frame).ip?;
    Some(traffic_class_byte(frame, offset, version) & 0b11)
}

/// Sets CE on an ECT(0)/ECT(1) frame; returns false (and leaves the frame alone) for Not-ECT,
/// CE already set, or non-IP frames. The IPv4 header checksum is updated incrementally
/// (RFC 1624) so a valid checksum stays valid.
#[inline]
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Some((offset, version)) = locate_l3(frame).ip else {
        return false;
    };
    let codepoint = traffic_class_byte(frame, offset, version) & 0b11;
    if codepoint != ECT0 && codepoint != ECT1 {
        return false;
    }
    match version {
        IpVersion::V4 => {
            if frame.len() < offset + 12 {
                return false;
            }
            let old = u16::from_be_bytes([frame[offset], frame[offset + 1]]);
            frame[offset + 1] |= CE;
            let new = u16::from_be_bytes([frame[offset], frame[offset + 1]]);
            let stored = u16::from_be_bytes([frame[offset + 10], frame[offset + 11]]);
            let updated = checksum::update_u16(stored, old, new);
            frame[offset + 10..offset + 12].copy_from_slice(&updated.to_be_bytes());
        }
        // The ECN bits are bits 4-5 of the second byte (traffic class straddles the bytes).
        IpVersion::V6 => frame[offset + 1] |= CE << 4,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_frame(ecn: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[1] = (26 << 2) | ecn;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 1, 2]);
        let csum = !checksum::sum(ip);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        f
    }

    fn ipv6_frame(tc: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        f[14] = 0x60 | (tc >> 4);
        f[15] = (tc << 4) | 0x0c;
        f[16] = 0x12;
        f
    }

    #[test]
    fn ipv4_ce_mark_keeps_the_checksum_valid_and_the_dscp() {
        for ecn in [ECT0, ECT1] {
            let mut f = ipv4_frame(ecn);
            assert!(mark_ce(&mut f));
            assert_eq!(f[15], (26 << 2) | CE);
            assert_eq!(checksum::sum(&f[14..34]), 0xffff, "header verifies");
            let mut fresh = ipv4_frame(CE);
            fresh[24..26].copy_from_slice(&[0, 0]);
            let want = !checksum::sum(&fresh[14..34]);
            assert_eq!(
                u16::from_be_bytes([f[24], f[25]]),
                want,
                "same as recomputed"
            );
        }
    }

    #[test]
    fn not_ect_and_ce_are_never_changed() {
        for ecn in [NOT_ECT, CE] {
            let mut f = ipv4_frame(ecn);
            let before = f.clone();
            assert!(!mark_ce(&mut f));
            assert_eq!(f, before);
        }
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert!(!mark_ce(&mut arp));
        assert_eq!(codepoint(&arp), None);
    }

    #[test]
    fn ipv6_ce_mark_touches_only_the_ecn_bits() {
        let mut f = ipv6_frame((46 << 2) | ECT1);
        assert!(mark_ce(&mut f));
        let mut want = ipv6_frame((46 << 2) | CE);
        want[16] = 0x12;
        assert_eq!(f, want);
        assert_eq!(codepoint(&f), Some(CE));
        let mut not_ect = ipv6_frame(46 << 2);
        assert!(!mark_ce(&mut not_ect));
    }

    #[test]
    fn probability_curve_is_red_shaped() {
        let curve = EcnCurve::new(&EcnProfile {
            kmin: 1000,
            kmax: 3000,
            pmax: 0.2,
        });
        assert_eq!(curve.probability(0), Probability::NEVER);
        assert_eq!(curve.probability(999), Probability::NEVER);
        assert_eq!(curve.probability(1000), Probability::NEVER);
        assert!((curve.probability(2000).as_f64() - 0.1).abs() < 1e-9);
        assert!((curve.probability(2999).as_f64() - 0.2 * 1999.0 / 2000.0).abs() < 1e-9);
        assert_eq!(curve.probability(3000), Probability::ALWAYS);
        assert_eq!(curve.probability(u64::MAX), Probability::ALWAYS);
    }

    #[test]
    fn step_marker_marks_from_kmin() {
        let curve = EcnCurve::new(&EcnProfile {
            kmin: 1500,
            kmax: 1500,
            pmax: 1.0,
        });
        assert_eq!(curve.probability(1499), Probability::NEVER);
        assert_eq!(curve.probability(1500), Probability::ALWAYS);
    }

    #[test]
    fn marking_rate_matches_the_probability() {
        // 200k Bernoulli trials at p = 0.1: sd = sqrt(n p (1-p)) ~ 134; allow 5 sd.
        let mut rng = MarkRng::new(7);
        let p = Probability::from_f64(0.1);
        let n = 200_000;
        let hits = (0..n).filter(|_| rng.decide(p)).count() as f64;
        let sd = (n as f64 * 0.1 * 0.9).sqrt();
        assert!((hits - n as f64 * 0.1).abs() < 5.0 * sd, "hits {hits}");
    }

    #[test]
    fn the_random_source_is_deterministic_per_seed() {
        let a: Vec<u32> = (0..8)
            .scan(MarkRng::new(42), |r, _| Some(r.next_u32()))
            .collect();
        let b: Vec<u32> = (0..8)
            .scan(MarkRng::new(42), |r, _| Some(r.next_u32()))
            .collect();
        let c: Vec<u32> = (0..8)
            .scan(MarkRng::new(43), |r, _| Some(r.next_u32()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
