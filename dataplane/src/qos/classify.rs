//! Traffic-class classification: trust DSCP or PCP, then the port's map. Also finds the IP
//! header of a frame for ECN, which reads and writes the same byte as the DSCP.

use super::{PortQos, Trust};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERNET_HEADER: usize = 14;
const VLAN_TAG: usize = 4;

/// Which IP version a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    V4,
    V6,
}

/// Where a frame's IP header starts, and the PCP of its outer 802.1Q tag if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Location {
    pub ip: Option<(usize, IpVersion)>,
    pub pcp: Option<u8>,
}

/// Walks Ethernet and up to two VLAN tags. The IP header is reported only when its first
/// two bytes (version and DSCP/ECN) are inside the frame and the version matches.
#[inline]
pub fn locate_l3(frame: &[u8]) -> L3Location {
    let mut location = L3Location {
        ip: None,
        pcp: None,
    };
    if frame.len() < ETHERNET_HEADER {
        return location;
    }
    let mut offset = 12;
    let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let mut tags = 0;
    while (ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ) && tags < 2 {
        if frame.len() < offset + VLAN_TAG + 2 {
            return location;
        }
        if tags == 0 {
            location.pcp = Some(frame[offset + 2] >> 5);
        }
        offset += VLAN_TAG;
        ethertype = u16::from_be_bytes([frame[offset], frame[offset + 1]]);
        tags += 1;
    }
    let l3 = offset + 2;
    if frame.len() < l3 + 2 {
        return location;
    }
    location.ip = match (ethertype, frame[l3] >> 4) {
        (ETHERTYPE_IPV4, 4) => Some((l3, IpVersion::V4)),
        (ETHERTYPE_IPV6, 6) => Some((l3, IpVersion::V6)),
        _ => None,
    };
    location
}

/// The IP traffic-class byte (DSCP << 2 | ECN) of the header at `offset`.
#[inline]
pub fn traffic_class_byte(frame: &[u8], offset: usize, version: IpVersion) -> u8 {
    match version {
        IpVersion::V4 => frame[offset + 1],
        IpVersion::V6 => (frame[offset] << 4) | (frame[offset + 1] >> 4),
    }
}

/// The traffic class `qos` gives this frame as it arrives.
#[inline]
pub fn classify(frame: &[u8], qos: &PortQos) -> u8 {
    match untagged_ipv4_traffic_class(frame) {
        Some(traffic_class) => classify_untagged_ip(traffic_class, qos),
        None => classify_by_walk(frame, qos),
    }
}

/// [`classify`] with the port's [`untagged_ip_classes`] at hand (`classes`): an untagged
/// IPv4 frame takes one read of it, and only other frames need the port's maps (`qos`).
#[inline(always)]
pub fn classify_by_table<'q>(
    frame: &[u8],
    classes: &[u8; 64],
    qos: impl FnOnce() -> &'q PortQos,
) -> u8 {
    match untagged_ipv4_traffic_class(frame) {
        Some(traffic_class) => classes[usize::from(traffic_class >> 2)],
        None => classify_by_walk(frame, qos()),
    }
}

/// The traffic-class byte of an untagged IPv4 frame, the usual one, from one read of its
/// ethertype and first two IP bytes (what `locate_l3` would walk to); `None` for any other.
#[inline(always)]
fn untagged_ipv4_traffic_class(frame: &[u8]) -> Option<u8> {
    match frame.get(12..16) {
        Some(&[t0, t1, version_ihl, traffic_class])
            if u16::from_be_bytes([t0, t1]) == ETHERTYPE_IPV4 && version_ihl >> 4 == 4 =>
        {
            Some(traffic_class)
        }
        _ => None,
    }
}

/// [`classify`] by walking the frame's tags to its IP header ([`locate_l3`]).
#[inline]
fn classify_by_walk(frame: &[u8], qos: &PortQos) -> u8 {
    let location = locate_l3(frame);
    match qos.trust {
        Trust::Pcp => pcp_class(location.pcp, qos),
        Trust::Dscp => match location.ip {
            Some((offset, version)) => dscp_class(traffic_class_byte(frame, offset, version), qos),
            None if location.pcp.is_some() => pcp_class(location.pcp, qos),
            None => 0,
        },
    }
}

/// [`classify`] for an untagged IPv4 or IPv6 frame whose header's version the caller
/// checked, from its traffic-class byte (DSCP and ECN, [`traffic_class_byte`]), without
/// walking the frame again.
#[inline(always)]
pub fn classify_untagged_ip(traffic_class: u8, qos: &PortQos) -> u8 {
    match qos.trust {
        Trust::Pcp => pcp_class(None, qos),
        Trust::Dscp => dscp_class(traffic_class, qos),
    }
}

/// [`classify_untagged_ip`] for every DSCP (index: the traffic-class byte >> 2), worked out
/// once per port so a burst of express frames classifies each by one table read.
pub fn untagged_ip_classes(qos: &PortQos) -> [u8; 64] {
    std::array::from_fn(|dscp| classify_untagged_ip((dscp as u8) << 2, qos))
}

#[inline(always)]
fn pcp_class(pcp: Option<u8>, qos: &PortQos) -> u8 {
    qos.pcp_to_tc[usize::from(pcp.unwrap_or(0) & 7)]
}

#[inline(always)]
fn dscp_class(traffic_class: u8, qos: &PortQos) -> u8 {
    qos.dscp_to_tc[usize::from(traffic_class >> 2)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(dscp: u8, ecn: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[14] = 0x45;
        f[15] = (dscp << 2) | ecn;
        f
    }

    fn ipv6(dscp: u8, ecn: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        let tc = (dscp << 2) | ecn;
        f[14] = 0x60 | (tc >> 4);
        f[15] = (tc << 4) | 0x0a; // flow label bits must not leak into the class
        f
    }

    fn tagged(mut f: Vec<u8>, pcp: u8, vid: u16) -> Vec<u8> {
        let tci = (u16::from(pcp) << 13) | vid;
        let mut tag = ETHERTYPE_VLAN.to_be_bytes().to_vec();
        tag.extend_from_slice(&tci.to_be_bytes());
        f.splice(12..12, tag);
        f
    }

    #[test]
    fn dscp_trust_uses_the_map_for_ipv4_and_ipv6() {
        let qos = PortQos::default();
        for (dscp, tc) in [(0, 0), (3, 3), (4, 4), (48, 6), (46, 0), (63, 0)] {
            assert_eq!(classify(&ipv4(dscp, 2), &qos), tc, "v4 dscp {dscp}");
            assert_eq!(classify(&ipv6(dscp, 1), &qos), tc, "v6 dscp {dscp}");
            assert_eq!(classify(&tagged(ipv4(dscp, 0), 7, 10), &qos), tc);
        }
    }

    #[test]
    fn the_untagged_ip_shortcuts_classify_as_the_frame_walk() {
        let mut dscp_to_tc = [0u8; 64];
        for (dscp, tc) in dscp_to_tc.iter_mut().enumerate() {
            *tc = (dscp * 5 % 8) as u8;
        }
        for trust in [Trust::Dscp, Trust::Pcp] {
            let qos = PortQos {
                trust,
                dscp_to_tc,
                pcp_to_tc: [3, 0, 2, 1, 4, 5, 6, 7],
                ..PortQos::default()
            };
            let classes = untagged_ip_classes(&qos);
            for byte in 0..=255u8 {
                for (frame, version) in [
                    (ipv4(byte >> 2, byte & 3), IpVersion::V4),
                    (ipv6(byte >> 2, byte & 3), IpVersion::V6),
                ] {
                    let traffic_class = traffic_class_byte(&frame, ETHERNET_HEADER, version);
                    assert_eq!(traffic_class, byte);
                    assert_eq!(
                        classify_untagged_ip(traffic_class, &qos),
                        classify(&frame, &qos),
                        "{trust:?} {version:?} traffic class {byte:#04x}"
                    );
                    assert_eq!(
                        classes[usize::from(traffic_class >> 2)],
                        classify(&frame, &qos),
                        "table: {trust:?} {version:?} traffic class {byte:#04x}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_ipv4_shortcuts_classify_as_the_frame_walk() {
        // Random frames around the shortcut's conditions: every ethertype that matters, any
        // version nibble, tags, and lengths that cut the header anywhere.
        let mut rng = crate::wire::test_util::XorShift::new(0x2545_f491_4f6c_dd1d);
        for trust in [Trust::Dscp, Trust::Pcp] {
            let qos = PortQos {
                trust,
                dscp_to_tc: std::array::from_fn(|dscp| (dscp * 5 % 8) as u8),
                pcp_to_tc: [3, 0, 2, 1, 4, 5, 6, 7],
                ..PortQos::default()
            };
            let classes = untagged_ip_classes(&qos);
            for _ in 0..20_000 {
                let mut frame = vec![0u8; 24];
                rng.fill(&mut frame);
                let ethertypes = [ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN, 0x0806];
                let at = if rng.below(4) == 0 { 16 } else { 12 };
                for offset in [12, at] {
                    let ethertype = ethertypes[rng.below(4)];
                    frame[offset..offset + 2].copy_from_slice(&ethertype.to_be_bytes());
                }
                frame[14] = (frame[14] & 0x0f) | [0x40, 0x60, 0x50][rng.below(3)];
                frame.truncate(rng.below(25));
                assert_eq!(
                    classify(&frame, &qos),
                    classify_by_walk(&frame, &qos),
                    "{trust:?} {frame:02x?}"
                );
                assert_eq!(
                    classify_by_table(&frame, &classes, || &qos),
                    classify_by_walk(&frame, &qos),
                    "table: {trust:?} {frame:02x?}"
                );
            }
        }
    }

    #[test]
    fn pcp_trust_reads_the_outer_tag() {
        let qos = PortQos {
            trust: Trust::Pcp,
            pcp_to_tc: [1, 0, 2, 3, 4, 5, 6, 7],
            ..PortQos::default()
        };
        assert_eq!(classify(&tagged(ipv4(48, 0), 5, 10), &qos), 5);
        assert_eq!(classify(&tagged(ipv4(48, 0), 0, 10), &qos), 1);
        assert_eq!(classify(&ipv4(48, 0), &qos), 1, "untagged is PCP 0");
    }

    #[test]
    fn non_ip_under_dscp_trust_falls_back_to_pcp_then_tc0() {
        let qos = PortQos::default();
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(classify(&arp, &qos), 0);
        assert_eq!(classify(&tagged(arp, 4, 10), &qos), 4);
    }

    #[test]
    fn short_or_inconsistent_frames_never_panic() {
        let qos = PortQos::default();
        for len in 0..20 {
            let f = ipv4(3, 0);
            let _ = classify(&f[..len.min(f.len())], &qos);
            let t = tagged(ipv6(4, 0), 3, 1);
            let _ = classify(&t[..len.min(t.len())], &qos);
        }
        // EtherType says IPv4 but the version nibble is 6: not IP for classification.
        let mut f = ipv4(3, 0);
        f[14] = 0x65;
        assert_eq!(locate_l3(&f).ip, None);
    }

    #[test]
    fn traffic_class_byte_spans_the_ipv6_nibbles() {
        let f = ipv6(0b101011, 0b11);
        let (offset, version) = locate_l3(&f).ip.unwrap();
        assert_eq!(traffic_class_byte(&f, offset, version), 0b1010_1111);
    }
}
