//! `SlowPath::router_error`: the ICMP and ICMPv6 errors a router sends about packets it drops
//! while routing. Expected frames are written byte by byte here from RFC 792 / RFC 1812
//! (IPv4) and RFC 4443 (IPv6), with a textbook checksum that shares nothing with
//! `wire::checksum`.

use super::*;
use crate::pipeline::spec::VlanSpec;
use crate::pipeline::{RouterError, RouterErrorKind};

const R: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x01, 0x00];
const H: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0a];
const UDP: u8 = 17;

/// Port 0: access VLAN 10. Port 1: trunk allowing 10, native none. Port 2: routed,
/// interface 1. Interface 0: SVI of VLAN 10, 10.0.10.1/24, 2001:db8:10::1/64. Interface 1:
/// 10.255.0.0/31 then 192.0.2.1/24, 2001:db8:ff::1/64 then 2001:db8:fe::1/64. Interface 2:
/// SVI of VLAN 30 in VRF 1, 10.0.30.1/24, no IPv6. Interface 3: VLAN 40, IPv6 only,
/// fe80::1/64 first, then 2001:db8:40::1/64.
fn spec() -> SwitchSpec {
    let mut spec = SwitchSpec::empty(3);
    spec.router_mac = R;
    spec.vrf_count = 2;
    spec.ports = vec![
        PortRole::Access { vlan: 10 },
        PortRole::Trunk {
            allowed: vec![10],
            native: None,
        },
        PortRole::Routed { interface: 1 },
    ];
    spec.vlans = vec![
        VlanSpec {
            id: 10,
            interface: Some(0),
        },
        VlanSpec {
            id: 30,
            interface: Some(2),
        },
        VlanSpec {
            id: 40,
            interface: Some(3),
        },
    ];
    spec.interfaces = vec![
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Vlan(10),
            ipv4: vec![(v4("10.0.10.1"), 24)],
            ipv6: vec![(v6("2001:db8:10::1"), 64)],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Port(2),
            ipv4: vec![(v4("10.255.0.0"), 31), (v4("192.0.2.1"), 24)],
            ipv6: vec![(v6("2001:db8:ff::1"), 64), (v6("2001:db8:fe::1"), 64)],
        },
        InterfaceSpec {
            vrf: 1,
            attachment: Attachment::Vlan(30),
            ipv4: vec![(v4("10.0.30.1"), 24)],
            ipv6: vec![],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Vlan(40),
            ipv4: vec![],
            ipv6: vec![(v6("fe80::1"), 64), (v6("2001:db8:40::1"), 64)],
        },
    ];
    spec
}

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// RFC 1071, one 16-bit word at a time with end-around carry.
fn ref_sum(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for pair in data.chunks(2) {
        acc += (u32::from(pair[0]) << 8) | u32::from(*pair.get(1).unwrap_or(&0));
        if acc > 0xffff {
            acc -= 0xffff;
        }
    }
    acc as u16
}

/// An IPv4 datagram with a 20-byte header: `tos`, identification, flags and fragment offset
/// as the raw 16-bit field, a correct header checksum.
fn ipv4(src: &str, dst: &str, ttl: u8, proto: u8, flags_frag: u16, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut ip = vec![0x45, 0xb8];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&0x1234u16.to_be_bytes());
    ip.extend_from_slice(&flags_frag.to_be_bytes());
    ip.extend_from_slice(&[ttl, proto, 0, 0]);
    ip.extend_from_slice(&v4(src).octets());
    ip.extend_from_slice(&v4(dst).octets());
    let c = !ref_sum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(payload);
    ip
}

/// An IPv6 packet without extension headers.
fn ipv6(src: &str, dst: &str, hop_limit: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = vec![0x60, 0x00, 0x00, 0x00];
    ip.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[next, hop_limit]);
    ip.extend_from_slice(&v6(src).octets());
    ip.extend_from_slice(&v6(dst).octets());
    ip.extend_from_slice(payload);
    ip
}

/// A frame from host H to `dst_mac`, tagged with `vlan` if given, padded to 60 bytes.
fn frame(dst_mac: [u8; 6], vlan: Option<u16>, ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = dst_mac.to_vec();
    f.extend_from_slice(&H);
    if let Some(vid) = vlan {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f.resize(f.len().max(60), 0);
    f
}

/// UDP-ish payload of `len` bytes (ports 1000 -> 2000, then a counting pattern).
fn payload(len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    p[..4.min(len)].copy_from_slice(&[0x03, 0xe8, 0x07, 0xd0][..4.min(len)]);
    p
}

/// The ICMP error RFC 792 / RFC 1812 describe, written field by field: Ethernet R -> R (the
/// forwarder rewrites MACs), IPv4 version 4, IHL 5, DSCP CS6 (0xc0), total length, ID 0, DF,
/// TTL 64, protocol 1, header checksum, source, destination; ICMP type, code, checksum, 4
/// unused bytes, then the offending datagram from its IP header, cut so that the whole
/// datagram is at most 576 bytes (RFC 1812 4.3.2.3).
fn expected_v4(src: &str, dst: &str, msg_type: u8, code: u8, offending: &[u8]) -> Vec<u8> {
    let quoted = &offending[..offending.len().min(576 - 20 - 8)];
    let mut icmp = vec![msg_type, code, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(quoted);
    let c = !ref_sum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0xc0];
    ip.extend_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0x00, 64, 1, 0, 0]);
    ip.extend_from_slice(&v4(src).octets());
    ip.extend_from_slice(&v4(dst).octets());
    let c = !ref_sum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = R.to_vec();
    f.extend_from_slice(&R);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&icmp);
    f
}

/// The ICMPv6 error of RFC 4443: IPv6 (traffic class 0, flow label 0, next header 58, hop
/// limit 64), type, code, checksum over the pseudo-header (RFC 8200 8.1), 4 unused bytes,
/// then as much of the offending packet as keeps the error within 1280 bytes.
fn expected_v6(src: &str, dst: &str, msg_type: u8, code: u8, offending: &[u8]) -> Vec<u8> {
    let quoted = &offending[..offending.len().min(1280 - 40 - 8)];
    let mut icmp = vec![msg_type, code, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(quoted);
    let mut pseudo = v6(src).octets().to_vec();
    pseudo.extend_from_slice(&v6(dst).octets());
    pseudo.extend_from_slice(&(icmp.len() as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 58]);
    pseudo.extend_from_slice(&icmp);
    let c = !ref_sum(&pseudo);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut f = R.to_vec();
    f.extend_from_slice(&R);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&ipv6(src, dst, 64, 58, &icmp));
    f
}

fn error(kind: RouterErrorKind, interface: u16) -> RouterError {
    RouterError {
        kind,
        interface,
        vrf: 0,
    }
}

const TIME: RouterErrorKind = RouterErrorKind::TimeExceeded;
const NO_ROUTE: RouterErrorKind = RouterErrorKind::NoRoute;

/// (built, suppressed, not sent)
fn counts(sp: &SlowPath) -> (u64, u64, u64) {
    (
        sp.icmp_errors_built,
        sp.icmp_errors_suppressed,
        sp.icmp_errors_not_sent,
    )
}

#[test]
fn ipv4_time_exceeded_quotes_the_whole_short_datagram_from_the_ingress_address() {
    let mut sp = SlowPath::new(&spec());
    let offending = ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0, &payload(108));
    let got = sp
        .router_error(&frame(R, None, 0x0800, &offending), error(TIME, 0), 0)
        .expect("an error");
    let want = expected_v4("10.0.10.1", "10.0.10.5", 11, 0, &offending);
    assert_eq!(got, want);
    // The checks the receiver makes, on the bytes we wrote: both checksums verify, the quote
    // is the offending header and more than 8 bytes of its payload.
    assert_eq!(ref_sum(&got[14..34]), 0xffff);
    assert_eq!(ref_sum(&got[34..]), 0xffff);
    assert_eq!(&got[42..62], &offending[..20]);
    assert_eq!(got.len(), 14 + 20 + 8 + 128);
    assert_eq!(counts(&sp), (1, 0, 0));
}

#[test]
fn ipv4_unreachable_is_cut_at_576_bytes_and_comes_from_the_address_on_the_sources_subnet() {
    let mut sp = SlowPath::new(&spec());
    let offending = ipv4("192.0.2.77", "203.0.113.9", 64, UDP, 0x4000, &payload(1380));
    // Arrives on the routed port (interface 1): 192.0.2.1 is on the source's subnet, so it
    // answers rather than the interface's first address 10.255.0.0.
    let got = sp
        .router_error(&frame(R, None, 0x0800, &offending), error(NO_ROUTE, 1), 0)
        .expect("an error");
    assert_eq!(
        got,
        expected_v4("192.0.2.1", "192.0.2.77", 3, 0, &offending)
    );
    assert_eq!(got.len() - 14, 576);
    // From another source, the interface's first address.
    let offending = ipv4("10.255.0.1", "203.0.113.9", 64, UDP, 0, &payload(8));
    let got = sp
        .router_error(&frame(R, None, 0x0800, &offending), error(NO_ROUTE, 1), 0)
        .unwrap();
    assert_eq!(
        got,
        expected_v4("10.255.0.0", "10.255.0.1", 3, 0, &offending)
    );
}

#[test]
fn ipv4_quote_stops_at_the_total_length_and_ignores_the_vlan_tag() {
    let mut sp = SlowPath::new(&spec());
    // 20 + 4 bytes: less than the 8 payload bytes RFC 792 asks for exists, so all of it is
    // quoted, and nothing of the Ethernet padding behind it.
    let offending = ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0, &[1, 2, 3, 4]);
    let tagged = frame(R, Some(10), 0x0800, &offending);
    assert!(tagged.len() > 18 + offending.len(), "padded");
    let got = sp.router_error(&tagged, error(TIME, 0), 0).unwrap();
    assert_eq!(
        got,
        expected_v4("10.0.10.1", "10.0.10.5", 11, 0, &offending)
    );
}

#[test]
fn ipv6_time_exceeded_and_no_route_come_from_the_ingress_interface() {
    let mut sp = SlowPath::new(&spec());
    let offending = ipv6("2001:db8:10::5", "2001:db8:99::7", 1, UDP, &payload(100));
    let got = sp
        .router_error(&frame(R, None, 0x86dd, &offending), error(TIME, 0), 0)
        .unwrap();
    assert_eq!(
        got,
        expected_v6("2001:db8:10::1", "2001:db8:10::5", 3, 0, &offending)
    );
    // A long packet is cut at the minimum MTU; the address on the source's subnet answers.
    let offending = ipv6("2001:db8:fe::9", "2001:db8:99::7", 64, UDP, &payload(1400));
    let got = sp
        .router_error(&frame(R, None, 0x86dd, &offending), error(NO_ROUTE, 1), 0)
        .unwrap();
    assert_eq!(
        got,
        expected_v6("2001:db8:fe::1", "2001:db8:fe::9", 1, 0, &offending)
    );
    assert_eq!(got.len() - 14, 1280);
    assert_eq!(counts(&sp), (2, 0, 0));
}

#[test]
fn no_ipv4_error_about_an_icmp_error_but_about_other_icmp() {
    let mut sp = SlowPath::new(&spec());
    let icmp = |t: u8| {
        ipv4(
            "10.0.10.5",
            "198.51.100.7",
            1,
            1,
            0,
            &[t, 0, 0, 0, 0, 0, 0, 0],
        )
    };
    for t in [3, 4, 5, 11, 12] {
        let f = frame(R, None, 0x0800, &icmp(t));
        assert_eq!(sp.router_error(&f, error(TIME, 0), 0), None, "type {t}");
    }
    for t in [0, 8, 13] {
        let f = frame(R, None, 0x0800, &icmp(t));
        assert!(sp.router_error(&f, error(TIME, 0), 0).is_some(), "type {t}");
    }
    assert_eq!(counts(&sp), (3, 5, 0));
}

#[test]
fn no_ipv4_error_about_a_later_fragment_but_about_the_first() {
    let mut sp = SlowPath::new(&spec());
    let udp = payload(16);
    // More fragments, offset 0: the first fragment (its header is quoted).
    let first = ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0x2000, &udp);
    assert!(
        sp.router_error(&frame(R, None, 0x0800, &first), error(TIME, 0), 0)
            .is_some()
    );
    for flags_frag in [0x2001, 0x0001, 0x00b9] {
        let later = ipv4("10.0.10.5", "198.51.100.7", 1, UDP, flags_frag, &udp);
        let f = frame(R, None, 0x0800, &later);
        assert_eq!(sp.router_error(&f, error(TIME, 0), 0), None);
    }
    assert_eq!(counts(&sp), (1, 3, 0));
}

#[test]
fn a_later_ipv6_fragment_is_not_read_as_an_icmpv6_error() {
    // RFC 4443 2.4(e) forbids errors about ICMPv6 errors; a fragment at a non-zero offset
    // holds data, not an ICMPv6 header, so its first byte (here 113, an error type if it were
    // one) decides nothing. The first fragment of an error is still exempt.
    let mut sp = SlowPath::new(&spec());
    let fragment = |offset_units: u16, data: &[u8]| {
        let mut header = vec![58, 0];
        header.extend_from_slice(&((offset_units << 3) | 1).to_be_bytes());
        header.extend_from_slice(&[0, 0, 0, 7]);
        header.extend_from_slice(data);
        ipv6("2001:db8:10::5", "2001:db8:77::1", 1, 44, &header)
    };
    let later = frame(R, None, 0x86dd, &fragment(10, &[b'q'; 16]));
    assert!(sp.router_error(&later, error(TIME, 0), 0).is_some());
    let first_of_an_error = frame(R, None, 0x86dd, &fragment(0, &[1, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(sp.router_error(&first_of_an_error, error(TIME, 0), 0), None);
    assert_eq!(counts(&sp), (1, 1, 0));
}

#[test]
fn no_ipv4_error_about_broadcast_or_multicast_packets() {
    let mut sp = SlowPath::new(&spec());
    for dst in [
        "255.255.255.255",
        "10.0.10.255",
        "192.0.2.255",
        "224.0.0.5",
        "239.1.2.3",
    ] {
        let p = ipv4("10.0.10.5", dst, 1, UDP, 0, &payload(8));
        let f = frame(R, None, 0x0800, &p);
        assert_eq!(sp.router_error(&f, error(TIME, 0), 0), None, "{dst}");
    }
    // Unicast IP sent as a link-layer broadcast or multicast.
    let p = ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0, &payload(8));
    for mac in [[0xff; 6], [0x01, 0x00, 0x5e, 0, 0, 1]] {
        let f = frame(mac, None, 0x0800, &p);
        assert_eq!(sp.router_error(&f, error(TIME, 0), 0), None, "{mac:02x?}");
    }
    assert_eq!(counts(&sp), (0, 7, 0));
}

#[test]
fn no_ipv4_error_to_a_source_that_is_not_one_host() {
    let mut sp = SlowPath::new(&spec());
    for src in [
        "0.0.0.0",
        "127.0.0.1",
        "127.255.0.9",
        "224.0.0.1",
        "255.255.255.255",
        "240.0.0.1",
        "10.0.10.255",
    ] {
        let p = ipv4(src, "198.51.100.7", 1, UDP, 0, &payload(8));
        let f = frame(R, None, 0x0800, &p);
        assert_eq!(sp.router_error(&f, error(TIME, 0), 0), None, "{src}");
    }
    assert_eq!(counts(&sp), (0, 7, 0));
}

#[test]
fn no_ipv6_error_about_an_error_a_multicast_or_from_an_unanswerable_source() {
    let mut sp = SlowPath::new(&spec());
    let send = |sp: &mut SlowPath, mac: [u8; 6], p: &[u8]| {
        sp.router_error(&frame(mac, None, 0x86dd, p), error(NO_ROUTE, 0), 0)
    };
    for t in [1u8, 2, 3, 4, 127] {
        let p = ipv6(
            "2001:db8:10::5",
            "2001:db8:99::7",
            64,
            58,
            &[t, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(send(&mut sp, R, &p), None, "type {t}");
    }
    let echo = ipv6(
        "2001:db8:10::5",
        "2001:db8:99::7",
        64,
        58,
        &[128, 0, 0, 0, 0, 0, 0, 0],
    );
    assert!(send(&mut sp, R, &echo).is_some());
    for (src, dst) in [
        ("::", "2001:db8:99::7"),
        ("ff02::1", "2001:db8:99::7"),
        ("2001:db8:10::5", "ff0e::1"),
    ] {
        let p = ipv6(src, dst, 64, UDP, &payload(8));
        assert_eq!(send(&mut sp, R, &p), None, "{src} -> {dst}");
    }
    let p = ipv6("2001:db8:10::5", "2001:db8:99::7", 64, UDP, &payload(8));
    assert_eq!(send(&mut sp, [0x33, 0x33, 0, 0, 0, 1], &p), None);
    assert_eq!(counts(&sp), (1, 9, 0));
}

#[test]
fn an_interface_without_an_address_of_the_family_sends_nothing_and_counts_it() {
    let mut sp = SlowPath::new(&spec());
    // Interface 2 has no IPv6 address, interface 3 no IPv4 one.
    let p6 = ipv6("2001:db8:30::5", "2001:db8:99::7", 1, UDP, &payload(8));
    let e = RouterError {
        kind: TIME,
        interface: 2,
        vrf: 1,
    };
    assert_eq!(sp.router_error(&frame(R, None, 0x86dd, &p6), e, 0), None);
    let p4 = ipv4("10.0.40.5", "198.51.100.7", 1, UDP, 0, &payload(8));
    assert_eq!(
        sp.router_error(&frame(R, None, 0x0800, &p4), error(TIME, 3), 0),
        None
    );
    assert_eq!(counts(&sp), (0, 0, 2));
    // And it spent no token: a full burst still goes out.
    let ok = frame(
        R,
        None,
        0x0800,
        &ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0, &payload(8)),
    );
    for _ in 0..ICMP_ERROR_BURST {
        assert!(sp.router_error(&ok, error(TIME, 0), 0).is_some());
    }
}

#[test]
fn ipv6_errors_come_from_a_global_address_and_never_go_to_a_link_local_source() {
    let mut sp = SlowPath::new(&spec());
    let offending = ipv6("2001:db8:77::5", "2001:db8:99::7", 1, UDP, &payload(8));
    let got = sp
        .router_error(&frame(R, None, 0x86dd, &offending), error(TIME, 3), 0)
        .unwrap();
    assert_eq!(
        got,
        expected_v6("2001:db8:40::1", "2001:db8:77::5", 3, 0, &offending),
        "not the interface's first address, fe80::1"
    );
    let from_link_local = ipv6("fe80::5", "2001:db8:99::7", 1, UDP, &payload(8));
    assert_eq!(
        sp.router_error(&frame(R, None, 0x86dd, &from_link_local), error(TIME, 3), 0),
        None
    );
    assert_eq!(counts(&sp), (1, 0, 1));
}

#[test]
fn errors_of_both_families_share_one_rate_limit() {
    let mut sp = SlowPath::new(&spec());
    let f4 = frame(
        R,
        None,
        0x0800,
        &ipv4("10.0.10.5", "198.51.100.7", 1, UDP, 0, &payload(8)),
    );
    let f6 = frame(
        R,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", "2001:db8:99::7", 1, UDP, &payload(8)),
    );
    // The burst, half and half.
    for i in 0..ICMP_ERROR_BURST {
        let f = if i % 2 == 0 { &f4 } else { &f6 };
        assert!(sp.router_error(f, error(TIME, 0), 0).is_some(), "error {i}");
    }
    assert_eq!(sp.router_error(&f4, error(TIME, 0), 0), None);
    assert_eq!(sp.router_error(&f6, error(NO_ROUTE, 0), 0), None);
    // SRv6 endpoint errors draw on the same bucket.
    let srv6 = crate::pipeline::Icmpv6Error {
        msg_type: 3,
        code: 0,
        pointer: 0,
        vrf: 0,
    };
    assert_eq!(sp.icmpv6_error(&f6, 0, srv6, 0), None);
    // One token every 1/ICMP_ERRORS_PER_SECOND seconds.
    let tick = crate::clock::PICOS_PER_SECOND / Picos::from(ICMP_ERRORS_PER_SECOND);
    assert!(sp.router_error(&f4, error(TIME, 0), tick).is_some());
    assert_eq!(sp.router_error(&f6, error(TIME, 0), tick), None);
    assert!(sp.icmpv6_error(&f6, 0, srv6, 2 * tick).is_some());
    assert_eq!(counts(&sp), (u64::from(ICMP_ERROR_BURST) + 2, 4, 0));
}

#[test]
fn malformed_or_mutated_frames_never_panic() {
    let mut sp = SlowPath::new(&spec());
    let seeds = [
        frame(
            R,
            None,
            0x0800,
            &ipv4(
                "10.0.10.5",
                "198.51.100.7",
                1,
                1,
                0,
                &[3, 0, 0, 0, 0, 0, 0, 0],
            ),
        ),
        frame(
            R,
            Some(10),
            0x86dd,
            &ipv6("2001:db8:10::5", "2001:db8:99::7", 1, UDP, &payload(20)),
        ),
    ];
    let mut rng = crate::wire::test_util::XorShift::new(7);
    for i in 0..20_000u64 {
        let mut f = seeds[(i % 2) as usize].clone();
        let at = rng.next_u64() as usize % f.len();
        f[at] = rng.next_u64() as u8;
        f.truncate(rng.next_u64() as usize % (f.len() + 1));
        let kind = if i % 3 == 0 { NO_ROUTE } else { TIME };
        let iface = (rng.next_u64() % 6) as u16;
        if let Some(out) = sp.router_error(&f, error(kind, iface), i) {
            assert!(out.len() >= 14 + 20 + 8);
            assert_eq!(out[0..12], [R, R].concat()[..]);
        }
    }
}

/// `expected` with its ICMP message's second word (bytes 4..8 after the IP header) set to
/// `word` and the ICMP checksum fixed up by the reference sum (over the pseudo-header for
/// ICMPv6).
fn with_second_word(mut expected: Vec<u8>, word: u32, ipv6: bool) -> Vec<u8> {
    let at = 14 + if ipv6 { 40 } else { 20 };
    expected[at + 4..at + 8].copy_from_slice(&word.to_be_bytes());
    expected[at + 2..at + 4].fill(0);
    let mut summed = Vec::new();
    if ipv6 {
        summed.extend_from_slice(&expected[14 + 8..14 + 40]);
        summed.extend_from_slice(&((expected.len() - at) as u32).to_be_bytes());
        summed.extend_from_slice(&[0, 0, 0, 58]);
    }
    summed.extend_from_slice(&expected[at..]);
    let c = !ref_sum(&summed);
    expected[at + 2..at + 4].copy_from_slice(&c.to_be_bytes());
    expected
}

#[test]
fn packet_too_big_carries_the_next_hop_mtu_in_both_families() {
    let mut sp = SlowPath::new(&spec());
    let too_big = error(RouterErrorKind::PacketTooBig, 0);
    // RFC 1191: type 3 code 4, next-hop MTU in the low 16 bits of the second word.
    let offending = ipv4("10.0.10.5", "198.51.100.7", 64, UDP, 0x4000, &payload(1480));
    let got = sp
        .packet_too_big(&frame(R, None, 0x0800, &offending), too_big, 1400, 0)
        .expect("an error");
    let want = expected_v4("10.0.10.1", "10.0.10.5", 3, 4, &offending);
    assert_eq!(got, with_second_word(want, 1400, false));
    assert_eq!(u16::from_be_bytes([got[34 + 6], got[34 + 7]]), 1400);
    // RFC 4443 3.2: type 2 code 0, the MTU in the second word.
    let offending = ipv6("2001:db8:10::5", "2001:db8:b::7", 64, UDP, &payload(1460));
    let got = sp
        .packet_too_big(&frame(R, None, 0x86dd, &offending), too_big, 1280, 0)
        .expect("an error");
    let want = expected_v6("2001:db8:10::1", "2001:db8:10::5", 2, 0, &offending);
    assert_eq!(got, with_second_word(want, 1280, true));
    assert_eq!(counts(&sp), (2, 0, 0));
}
