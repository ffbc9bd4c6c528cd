//! SRv6 behaviours at the pipeline level, on byte arrays. Every expected frame is built here
//! from the RFC 8986 / RFC 9800 rules (which bytes change and to what), never by the code
//! under test.

use super::spec::*;
use super::*;
use crate::clock::PICOS_PER_SECOND;
use crate::counters::DropReason;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const ROUTER: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0];
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const N0: [u8; 6] = [0x02, 0, 0, 0, 0x50, 0];
const N1: [u8; 6] = [0x02, 0, 0, 0, 0x50, 1];
const N2: [u8; 6] = [0x02, 0, 0, 0, 0x50, 2];
const N3: [u8; 6] = [0x02, 0, 0, 0, 0x50, 3];
const T0: u64 = PICOS_PER_SECOND;
const HEADROOM: usize = 128;
const UDP: u8 = 17;
const ICMPV6: u8 = 58;

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn sid(prefix: &str, len: u8, behavior: SidBehavior) -> SidSpec {
    SidSpec {
        name: format!("{prefix}/{len}"),
        vrf: 0,
        prefix: v6(prefix),
        len,
        behavior,
        next_csid: None,
        psp: false,
        usp: false,
    }
}

fn usid(prefix: &str, len: u8, behavior: SidBehavior, block: u8, shift: u8) -> SidSpec {
    SidSpec {
        next_csid: Some(CsidFormat {
            block_bits: block,
            shift_bits: shift,
        }),
        ..sid(prefix, len, behavior)
    }
}

/// Ports 0, 1 routed in VRF 0 (2001:db8:1::1/64, 2001:db8:2::1/64); port 2 routed in VRF 1
/// (10.0.0.1/24, 2001:db8:a::1/64). Neighbours: nh0 2001:db8:1::2 (N0), nh1 2001:db8:2::2
/// (N1), nh2 10.0.0.2 (N2), nh3 2001:db8:a::2 (N3).
/// FIB VRF 0: fcbb:bb00:0200::/48 and 2001:db8:b::/48 -> nh1, fcbb:bb00:0300::/48 -> nh0.
/// FIB VRF 1: 10.9.0.0/16 -> nh2, 2001:db8:c::/48 -> nh3, policies: 10.20.0.0/16 -> 0
/// (H.Encaps), 2001:db8:20::/48 -> 1 (H.Encaps.Red, 2 SIDs), 2001:db8:21::/48 -> 2
/// (H.Encaps.Red, 1 SID).
fn spec() -> SwitchSpec {
    let mut spec = SwitchSpec::empty(3);
    spec.router_mac = ROUTER;
    spec.vrf_count = 2;
    spec.ports = (0..3).map(|i| PortRole::Routed { interface: i }).collect();
    spec.interfaces = vec![
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Port(0),
            ipv4: vec![],
            ipv6: vec![(v6("2001:db8:1::1"), 64)],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Port(1),
            ipv4: vec![],
            ipv6: vec![(v6("2001:db8:2::1"), 64)],
        },
        InterfaceSpec {
            vrf: 1,
            attachment: Attachment::Port(2),
            ipv4: vec![(Ipv4Addr::new(10, 0, 0, 1), 24)],
            ipv6: vec![(v6("2001:db8:a::1"), 64)],
        },
    ];
    let neighbors = [
        (0, IpAddr::V6(v6("2001:db8:1::2")), N0),
        (1, IpAddr::V6(v6("2001:db8:2::2")), N1),
        (2, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), N2),
        (2, IpAddr::V6(v6("2001:db8:a::2")), N3),
    ];
    spec.nexthops = neighbors
        .iter()
        .map(|&(interface, ip, _)| NexthopSpec { interface, ip })
        .collect();
    spec.static_neighbors = neighbors
        .iter()
        .map(|&(interface, ip, mac)| StaticNeighbor { interface, ip, mac })
        .collect();
    let route = |vrf, prefix: &str, len, target| RouteSpec {
        vrf,
        prefix: prefix.parse().unwrap(),
        len,
        target,
    };
    spec.routes = vec![
        route(0, "fcbb:bb00:200::", 48, RouteTarget::Nexthop(1)),
        route(0, "2001:db8:b::", 48, RouteTarget::Nexthop(1)),
        route(0, "fcbb:bb00:300::", 48, RouteTarget::Nexthop(0)),
        route(1, "10.9.0.0", 16, RouteTarget::Nexthop(2)),
        route(1, "2001:db8:c::", 48, RouteTarget::Nexthop(3)),
        route(1, "10.20.0.0", 16, RouteTarget::Srv6Policy(0)),
        route(1, "2001:db8:20::", 48, RouteTarget::Srv6Policy(1)),
        route(1, "2001:db8:21::", 48, RouteTarget::Srv6Policy(2)),
    ];
    let end_x = SidBehavior::EndX {
        target: RouteTarget::Nexthop(1),
    };
    spec.srv6.sids = vec![
        usid("fcbb:bb00:100::", 48, SidBehavior::End, 32, 16),
        usid("fcbb:bb00:e001::", 48, end_x, 32, 16),
        usid(
            "fcbb:bb00:100:e002::",
            64,
            SidBehavior::EndX {
                target: RouteTarget::Nexthop(0),
            },
            32,
            32,
        ),
        sid("2001:db8:5::1", 128, SidBehavior::End),
        SidSpec {
            psp: true,
            ..sid("2001:db8:5::2", 128, SidBehavior::End)
        },
        SidSpec {
            usp: true,
            ..sid("2001:db8:5::3", 128, SidBehavior::End)
        },
        sid("2001:db8:5::4", 128, end_x),
        sid("2001:db8:5::10", 128, SidBehavior::EndDt4 { vrf: 1 }),
        sid("2001:db8:5::11", 128, SidBehavior::EndDt6 { vrf: 1 }),
        sid("2001:db8:5::12", 128, SidBehavior::EndDt46 { vrf: 1 }),
    ];
    let policy = |mode, segments: &[&str]| PolicySpec {
        name: "p".to_owned(),
        mode,
        segments: segments.iter().map(|s| v6(s)).collect(),
        source: v6("2001:db8:ff::1"),
        hop_limit: 64,
        outer_vrf: 0,
    };
    spec.srv6.policies = vec![
        policy(
            EncapMode::Encaps,
            &["fcbb:bb00:200:300::", "2001:db8:5::10"],
        ),
        policy(
            EncapMode::EncapsRed,
            &["fcbb:bb00:200:300::", "2001:db8:5::11"],
        ),
        policy(EncapMode::EncapsRed, &["fcbb:bb00:200:300::"]),
    ];
    spec
}

fn forwarder() -> Forwarder {
    Forwarder::new(&spec()).expect("valid spec")
}

fn eth(payload: &[u8], ethertype: u16) -> Vec<u8> {
    let mut f = ROUTER.to_vec();
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// IPv6 header (traffic class 0xb8, flow label 0x12345) + payload.
fn ipv6(src: &str, dst: &str, hop_limit: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = vec![0x6b, 0x81, 0x23, 0x45];
    ip.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    ip.push(next);
    ip.push(hop_limit);
    ip.extend_from_slice(&v6(src).octets());
    ip.extend_from_slice(&v6(dst).octets());
    ip.extend_from_slice(payload);
    ip
}

/// An SRH written field by field: Segment List in wire order (index 0 first).
pub(super) fn srh(next: u8, segments_left: u8, last_entry: u8, segments: &[&str]) -> Vec<u8> {
    let mut h = vec![
        next,
        (2 * segments.len()) as u8,
        4,
        segments_left,
        last_entry,
        0,
        0,
        0,
    ];
    for s in segments {
        h.extend_from_slice(&v6(s).octets());
    }
    h
}

fn udp() -> Vec<u8> {
    vec![0x30, 0x39, 0x00, 0x35, 0, 12, 0, 0, b'd', b'a', b't', b'a']
}

fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        sum += u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ipv4(dst: [u8; 4], ttl: u8, tos: u8) -> Vec<u8> {
    let payload = udp();
    let total = (20 + payload.len()) as u16;
    let mut ip = vec![0x45, tos];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0, 0, ttl, UDP, 0, 0, 10, 0, 0, 9]);
    ip.extend_from_slice(&dst);
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&payload);
    ip
}

/// Runs `frame` through the forwarder with 128 bytes of headroom; the verdict and the frame
/// as it would leave.
fn run(f: &mut Forwarder, frame: &[u8], in_port: u16) -> (Verdict, Vec<u8>) {
    let mut buf = vec![0u8; HEADROOM];
    buf.extend_from_slice(frame);
    let end = buf.len();
    let mut window = Frame::new(&mut buf, HEADROOM, end).unwrap();
    let verdict = f.process_frame(&mut window, in_port, T0);
    (verdict, window.to_vec())
}

fn forward(port: u16) -> Verdict {
    Verdict::Forward {
        port,
        tag: TagOp::Keep,
    }
}

/// `frame` with MACs rewritten toward `mac`, as any routed frame leaves.
fn rewritten(mut frame: Vec<u8>, mac: [u8; 6]) -> Vec<u8> {
    frame[0..6].copy_from_slice(&mac);
    frame[6..12].copy_from_slice(&ROUTER);
    frame
}

fn icmp_error(reason: DropReason, msg_type: u8, code: u8, pointer: u16) -> Verdict {
    Verdict::DropWithIcmpError {
        reason,
        error: Icmpv6Error {
            msg_type,
            code,
            pointer,
            vrf: 0,
        },
    }
}

const L3: usize = 14;

#[test]
fn un_shifts_the_next_usid_in_and_keeps_segments_left() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 1, 0, &["2001:db8:b::1"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100:200:300::", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1), "fcbb:bb00:200::/48 is behind nh1");
    // RFC 9800: DA = block + argument shifted by 16 bits, zero-filled; HL - 1; SRH untouched.
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("fcbb:bb00:200:300::").octets());
    assert_eq!(out, expected);
}

#[test]
fn un_then_ua_of_the_same_node_in_one_container() {
    let mut f = forwarder();
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100:e001:300::", 64, UDP, &udp()),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    // uN shifts to fcbb:bb00:e001:300::, a local uA: it shifts again and goes to its
    // adjacency (nh1) although the FIB sends fcbb:bb00:300::/48 to nh0. One hop limit per SID.
    assert_eq!(verdict, forward(1));
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 62;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("fcbb:bb00:300::").octets());
    assert_eq!(out, expected);
}

#[test]
fn ua_installed_as_slash_64_shifts_32_bits() {
    let mut f = forwarder();
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100:e002:200::", 64, UDP, &udp()),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 1);
    assert_eq!(verdict, forward(0), "uA's adjacency is nh0");
    let mut expected = rewritten(frame.clone(), N0);
    expected[L3 + 7] = 63;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("fcbb:bb00:200::").octets());
    assert_eq!(out, expected);
}

#[test]
fn end_of_usid_container_falls_back_to_the_srh() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 1, 0, &["2001:db8:b::7"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100::", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    // RFC 8986 End: SL 1 -> 0, DA = Segment List[0], HL - 1.
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 40 + 3] = 0;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("2001:db8:b::7").octets());
    assert_eq!(out, expected);
}

#[test]
fn end_of_container_without_srh_is_upper_layer_processing() {
    let mut f = forwarder();
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100::", 64, UDP, &udp()),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(
        verdict,
        icmp_error(DropReason::Srv6UpperLayer, 4, 4, 40),
        "Parameter Problem code 4 pointing at the UDP header"
    );
    assert_eq!(out, frame, "the packet is left as it arrived for the error");
    let ping = eth(
        &ipv6(
            "2001:db8:1::2",
            "fcbb:bb00:100::",
            64,
            ICMPV6,
            &[128, 0, 0, 0, 0, 1, 0, 1],
        ),
        0x86dd,
    );
    assert_eq!(
        run(&mut f, &ping, 0).0,
        Verdict::Punt {
            reason: PuntReason::LocalSid,
            interface: 0
        }
    );
}

#[test]
fn hop_limit_is_checked_before_the_shift_and_before_the_srh() {
    let mut f = forwarder();
    for hop_limit in [0, 1] {
        let frame = eth(
            &ipv6(
                "2001:db8:1::2",
                "fcbb:bb00:100:200::",
                hop_limit,
                UDP,
                &udp(),
            ),
            0x86dd,
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(verdict, icmp_error(DropReason::Srv6HopLimit, 3, 0, 0));
        assert_eq!(out, frame);
        let mut payload = srh(UDP, 1, 0, &["2001:db8:b::7"]);
        payload.extend_from_slice(&udp());
        let frame = eth(
            &ipv6("2001:db8:1::2", "2001:db8:5::1", hop_limit, 43, &payload),
            0x86dd,
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(verdict, icmp_error(DropReason::Srv6HopLimit, 3, 0, 0));
        assert_eq!(out, frame);
    }
    // SL = 0 is checked first (S02 before S03): hop limit 1 is fine for local delivery.
    let mut payload = srh(ICMPV6, 0, 0, &["2001:db8:5::1"]);
    payload.extend_from_slice(&[128, 0, 0, 0, 0, 1, 0, 1]);
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 1, 43, &payload),
        0x86dd,
    );
    assert!(matches!(run(&mut f, &frame, 0).0, Verdict::Punt { .. }));
}

#[test]
fn end_with_srh_takes_the_next_segment() {
    let mut f = forwarder();
    let mut payload = srh(
        UDP,
        2,
        2,
        &["2001:db8:b::9", "2001:db8:b::8", "2001:db8:5::1"],
    );
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 43] = 1;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("2001:db8:b::8").octets());
    assert_eq!(out, expected);
}

#[test]
fn end_with_segments_left_zero_and_an_unsupported_upper_layer() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 0, 0, &["2001:db8:5::1"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(
        verdict,
        icmp_error(DropReason::Srv6UpperLayer, 4, 4, 40 + 24)
    );
    assert_eq!(out, frame);
}

#[test]
fn last_entry_past_the_header_or_segments_left_past_last_entry_is_a_parameter_problem() {
    let mut f = forwarder();
    // Two segments in the header: max_LE = 4/2 - 1 = 1.
    for (segments_left, last_entry) in [(1, 2), (2, 5), (3, 1), (2, 0)] {
        let mut payload = srh(
            UDP,
            segments_left,
            last_entry,
            &["2001:db8:b::9", "2001:db8:5::1"],
        );
        payload.extend_from_slice(&udp());
        let frame = eth(
            &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
            0x86dd,
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(
            verdict,
            icmp_error(DropReason::Srv6BadSrh, 4, 0, 43),
            "SL {segments_left} LE {last_entry}: pointer at Segments Left"
        );
        assert_eq!(out, frame);
    }
    // SL = LE + 1 is legal (what H.Encaps.Red sends).
    let mut payload = srh(UDP, 2, 1, &["2001:db8:b::9", "2001:db8:b::8"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    assert_eq!(&out[L3 + 24..L3 + 40], &v6("2001:db8:b::8").octets());
}

#[test]
fn truncated_or_lying_srh_is_a_counted_drop() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 1, 0, &["2001:db8:b::9"]);
    payload.extend_from_slice(&udp());
    let mut ip = ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload);
    ip[L3 + 40 + 1 - L3] = 9; // Hdr Ext Len runs past the payload
    let (verdict, _) = run(&mut f, &eth(&ip, 0x86dd), 0);
    assert_eq!(verdict, Verdict::Drop(DropReason::Srv6MalformedHeaders));
}

#[test]
fn psp_removes_the_srh_at_the_penultimate_segment() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 1, 1, &["2001:db8:b::9", "2001:db8:5::2"]);
    let srh_len = payload.len();
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::2", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    // RFC 8986 4.16.1: after S09 with SL = 0: NH = SRH's NH, payload length - SRH, no SRH.
    let expected = rewritten(
        eth(
            &ipv6("2001:db8:1::2", "2001:db8:b::9", 63, UDP, &udp()),
            0x86dd,
        ),
        N1,
    );
    assert_eq!(out, expected);
    assert_eq!(out.len(), frame.len() - srh_len);
}

#[test]
fn usp_removes_the_srh_at_the_ultimate_segment() {
    let mut f = forwarder();
    let ping = [128, 0, 0, 0, 0, 1, 0, 1];
    let mut payload = srh(ICMPV6, 0, 0, &["2001:db8:5::3"]);
    payload.extend_from_slice(&ping);
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::3", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert!(matches!(verdict, Verdict::Punt { .. }));
    let expected = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::3", 64, ICMPV6, &ping),
        0x86dd,
    );
    assert_eq!(out, expected);
}

#[test]
fn end_x_goes_to_its_adjacency_not_to_the_fib() {
    let mut f = forwarder();
    let mut payload = srh(UDP, 1, 1, &["fcbb:bb00:300::", "2001:db8:5::4"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::4", 64, 43, &payload),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1), "FIB says nh0 (port 0), End.X says nh1");
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 43] = 0;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("fcbb:bb00:300::").octets());
    assert_eq!(out, expected);
}

#[test]
fn end_dt4_dt6_dt46_decapsulate_and_route_the_inner_packet_in_their_vrf() {
    let mut f = forwarder();
    let inner4 = ipv4([10, 9, 1, 1], 20, 0x2e);
    let inner6 = ipv6("2001:db8:7::1", "2001:db8:c::5", 20, UDP, &udp());
    // Expected: the inner packet behind a rewritten L2 header, TTL / hop limit - 1 (it is
    // forwarded in VRF 1), IPv4 checksum recomputed by the reference.
    let mut routed4 = inner4.clone();
    routed4[8] = 19;
    routed4[10..12].fill(0);
    let c = checksum(&routed4[..20]);
    routed4[10..12].copy_from_slice(&c.to_be_bytes());
    let expected4 = rewritten(eth(&routed4, 0x0800), N2);
    let mut routed6 = inner6.clone();
    routed6[7] = 19;
    let expected6 = rewritten(eth(&routed6, 0x86dd), N3);

    for (sid, inner, next, expected) in [
        ("2001:db8:5::10", &inner4, 4u8, &expected4),
        ("2001:db8:5::12", &inner4, 4, &expected4),
        ("2001:db8:5::11", &inner6, 41, &expected6),
        ("2001:db8:5::12", &inner6, 41, &expected6),
    ] {
        // With an SRH (SL 0) and without one (H.Encaps.Red with one SID).
        let mut with_srh = srh(next, 0, 0, &[sid]);
        with_srh.extend_from_slice(inner);
        for (nh, payload) in [(43, with_srh), (next, inner.clone())] {
            let frame = eth(&ipv6("2001:db8:1::2", sid, 64, nh, &payload), 0x86dd);
            let (verdict, out) = run(&mut f, &frame, 0);
            assert_eq!(verdict, forward(2), "{sid} nh {nh}");
            assert_eq!(&out, expected, "{sid} nh {nh}");
        }
    }
    // Segments Left not 0 at End.DT6: Parameter Problem code 0 at Segments Left.
    let mut payload = srh(41, 1, 1, &["2001:db8:5::11", "2001:db8:5::11"]);
    payload.extend_from_slice(&inner6);
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::11", 64, 43, &payload),
        0x86dd,
    );
    assert_eq!(
        run(&mut f, &frame, 0).0,
        icmp_error(DropReason::Srv6SegmentsLeftNotZero, 4, 0, 43)
    );
    // End.DT4 carrying IPv6, End.DT6 carrying IPv4: upper-layer errors (code 4).
    for (sid, next, inner) in [
        ("2001:db8:5::10", 41, &inner6),
        ("2001:db8:5::11", 4, &inner4),
    ] {
        let frame = eth(&ipv6("2001:db8:1::2", sid, 64, next, inner), 0x86dd);
        assert_eq!(
            run(&mut f, &frame, 0).0,
            icmp_error(DropReason::Srv6UpperLayer, 4, 4, 40)
        );
    }
}

/// The outer header H.Encaps(.Red) must write, flow label aside (checked separately).
fn expected_outer(next: u8, traffic_class: u8, payload_len: usize, srh_bytes: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60 | (traffic_class >> 4), traffic_class << 4, 0, 0];
    h.extend_from_slice(&((srh_bytes.len() + payload_len) as u16).to_be_bytes());
    h.push(next);
    h.push(64);
    h.extend_from_slice(&v6("2001:db8:ff::1").octets());
    h.extend_from_slice(&v6("fcbb:bb00:200:300::").octets());
    h.extend_from_slice(srh_bytes);
    h
}

fn without_flow_label(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[L3 + 1] &= 0xf0;
    f[L3 + 2] = 0;
    f[L3 + 3] = 0;
    f
}

fn flow_label(frame: &[u8]) -> u32 {
    u32::from_be_bytes([0, frame[L3 + 1] & 0x0f, frame[L3 + 2], frame[L3 + 3]])
}

/// An IPv4 header and payload as a router forwards it: TTL one lower, checksum recomputed.
fn ipv4_after_hop(packet: &[u8]) -> Vec<u8> {
    let mut routed = packet.to_vec();
    routed[8] -= 1;
    routed[10..12].fill(0);
    let c = checksum(&routed[..20]);
    routed[10..12].copy_from_slice(&c.to_be_bytes());
    routed
}

#[test]
fn h_encaps_pushes_ipv6_and_a_full_srh() {
    let mut f = forwarder();
    let inner = ipv4([10, 20, 1, 1], 30, 0xb9);
    let mut frame = eth(&inner, 0x0800);
    frame.resize(60, 0); // Ethernet padding must not end up inside the tunnel
    let (verdict, out) = run(&mut f, &frame, 2);
    assert_eq!(verdict, forward(1), "S1 fcbb:bb00:200:300:: is behind nh1");
    // SRH: Segment List[0] = S2 (last), [1] = S1; SL = LE = 1; NH = 4 (IPv4 inside).
    let srh_bytes = srh(4, 1, 1, &["2001:db8:5::10", "fcbb:bb00:200:300::"]);
    let routed = ipv4_after_hop(&inner);
    let mut payload = expected_outer(43, 0xb9, routed.len(), &srh_bytes);
    payload.extend_from_slice(&routed);
    assert_eq!(
        without_flow_label(&out),
        rewritten(eth(&payload, 0x86dd), N1)
    );
    // Flow label from the inner flow: same flow, same label; another flow, another label.
    let (_, again) = run(&mut f, &frame, 2);
    assert_eq!(flow_label(&again), flow_label(&out));
    let other = eth(&ipv4([10, 20, 1, 2], 30, 0xb9), 0x0800);
    let (_, other_out) = run(&mut f, &other, 2);
    assert_ne!(flow_label(&other_out), flow_label(&out));
}

#[test]
fn h_encaps_red_leaves_the_first_sid_out_of_the_srh_or_omits_it() {
    let mut f = forwarder();
    let inner = ipv6("2001:db8:7::1", "2001:db8:20::5", 30, UDP, &udp());
    let mut routed = inner.clone();
    routed[7] = 29;
    let (verdict, out) = run(&mut f, &eth(&inner, 0x86dd), 2);
    assert_eq!(verdict, forward(1));
    // Red: SRH holds S2 only, LE = 0, SL = 1.
    let srh_bytes = srh(41, 1, 0, &["2001:db8:5::11"]);
    let mut payload = expected_outer(43, 0xb8, routed.len(), &srh_bytes);
    payload.extend_from_slice(&routed);
    assert_eq!(
        without_flow_label(&out),
        rewritten(eth(&payload, 0x86dd), N1)
    );

    let inner = ipv6("2001:db8:7::1", "2001:db8:21::5", 30, UDP, &udp());
    let mut routed = inner.clone();
    routed[7] = 29;
    let (verdict, out) = run(&mut f, &eth(&inner, 0x86dd), 2);
    assert_eq!(verdict, forward(1));
    let mut payload = expected_outer(41, 0xb8, routed.len(), &[]);
    payload.extend_from_slice(&routed);
    assert_eq!(
        without_flow_label(&out),
        rewritten(eth(&payload, 0x86dd), N1)
    );
}

/// `run` in a buffer of `headroom`, the frame and `tailroom`; also where the frame ended up.
fn run_in(
    f: &mut Forwarder,
    frame: &[u8],
    headroom: usize,
    tailroom: usize,
) -> (Verdict, Vec<u8>, (usize, usize)) {
    let mut buf = vec![0u8; headroom];
    buf.extend_from_slice(frame);
    let end = buf.len();
    buf.resize(end + tailroom, 0);
    let mut window = Frame::new(&mut buf, headroom, end).unwrap();
    let verdict = f.process_frame(&mut window, 2, T0);
    (verdict, window.to_vec(), (window.start(), window.end()))
}

#[test]
fn h_encaps_beyond_the_headroom_moves_the_frame_into_the_tailroom() {
    // Seven SIDs: outer IPv6 40 + SRH 8 + 7 * 16 = 160 bytes, more than 128 of headroom.
    let sids = [
        "fcbb:bb00:200:300::",
        "2001:db8:6::1",
        "2001:db8:6::2",
        "2001:db8:6::3",
        "2001:db8:6::4",
        "2001:db8:6::5",
        "2001:db8:5::10",
    ];
    let mut s = spec();
    s.srv6.policies[0].segments = sids.iter().map(|a| v6(a)).collect();
    let mut f = Forwarder::new(&s).expect("seven SIDs are a valid policy");
    let inner = ipv4([10, 20, 1, 1], 30, 0xb9);
    let frame = eth(&inner, 0x0800);
    // RFC 8986 H.Encaps: Segment List[0] = S7 ... [6] = S1, SL = LE = 6, NH = 4.
    let reversed: Vec<&str> = sids.iter().rev().copied().collect();
    let srh_bytes = srh(4, 6, 6, &reversed);
    let routed = ipv4_after_hop(&inner);
    let mut payload = expected_outer(43, 0xb9, routed.len(), &srh_bytes);
    payload.extend_from_slice(&routed);
    let want = rewritten(eth(&payload, 0x86dd), N1);
    assert_eq!(want.len(), frame.len() + 160);

    let (verdict, out, (start, end)) = run_in(&mut f, &frame, HEADROOM, 2048);
    assert_eq!(verdict, forward(1));
    assert_eq!(without_flow_label(&out), want);
    // Moved to the end of the buffer: all the room left is in front (for a VLAN tag).
    let total = HEADROOM + frame.len() + 2048;
    assert_eq!((start, end), (total - want.len(), total));

    // Exactly enough room in front and behind together; then one byte short.
    let (verdict, out, window) = run_in(&mut f, &frame, HEADROOM, 160 - HEADROOM);
    assert_eq!(verdict, forward(1));
    assert_eq!(without_flow_label(&out), want);
    assert_eq!(window, (0, HEADROOM + frame.len() + 160 - HEADROOM));
    let (verdict, out, window) = run_in(&mut f, &frame, HEADROOM, 160 - HEADROOM - 1);
    assert_eq!(verdict, Verdict::Drop(DropReason::NoHeadroom));
    assert_eq!(
        (out, window),
        (frame.clone(), (HEADROOM, HEADROOM + frame.len()))
    );
    // Without any headroom (`process`) it is still a no_headroom drop.
    let mut whole = frame.clone();
    assert_eq!(
        f.process(&mut whole, 2, T0),
        Verdict::Drop(DropReason::NoHeadroom)
    );
}

#[test]
fn headend_without_headroom_or_with_expired_ttl_drops() {
    let mut f = forwarder();
    let mut frame = eth(&ipv4([10, 20, 1, 1], 30, 0), 0x0800);
    assert_eq!(
        f.process(&mut frame, 2, T0),
        Verdict::Drop(DropReason::NoHeadroom)
    );
    // The inner packet is routed by this node first: Time Exceeded from the ingress
    // interface, routed in its VRF.
    let frame = eth(&ipv4([10, 20, 1, 1], 1, 0), 0x0800);
    assert_eq!(
        run(&mut f, &frame, 2).0,
        Verdict::DropWithRouterError {
            reason: DropReason::TtlExpired,
            error: RouterError {
                kind: RouterErrorKind::TimeExceeded,
                interface: 2,
                vrf: 1,
            },
        }
    );
}

#[test]
fn decapsulated_packets_that_cannot_be_routed_are_dropped_silently() {
    // End.DT4 / End.DT6: the inner packet is in the tenant VRF while the ingress interface
    // is in the underlay, and the frame no longer holds what arrived: no ICMP error.
    let mut f = forwarder();
    let expired4 = ipv4([10, 9, 1, 1], 1, 0);
    let unrouted4 = ipv4([192, 0, 2, 1], 20, 0);
    let expired6 = ipv6("2001:db8:7::1", "2001:db8:c::5", 1, UDP, &udp());
    let unrouted6 = ipv6("2001:db8:7::1", "2001:db8:99::5", 20, UDP, &udp());
    for (sid, inner, next, reason) in [
        ("2001:db8:5::10", &expired4, 4u8, DropReason::TtlExpired),
        ("2001:db8:5::10", &unrouted4, 4, DropReason::NoRoute),
        ("2001:db8:5::11", &expired6, 41, DropReason::TtlExpired),
        ("2001:db8:5::11", &unrouted6, 41, DropReason::NoRoute),
    ] {
        let frame = eth(&ipv6("2001:db8:1::2", sid, 64, next, inner), 0x86dd);
        assert_eq!(run(&mut f, &frame, 0).0, Verdict::Drop(reason), "{sid}");
    }
}

#[test]
fn link_local_is_never_tunnelled_nor_a_next_segment() {
    let mut f = forwarder();
    let inner = ipv6("fe80::7", "2001:db8:20::5", 30, UDP, &udp());
    assert_eq!(
        run(&mut f, &eth(&inner, 0x86dd), 2).0,
        Verdict::Drop(DropReason::LinkLocal)
    );
    let mut payload = srh(UDP, 1, 0, &["fe80::9"]);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
        0x86dd,
    );
    assert_eq!(
        run(&mut f, &frame, 0).0,
        Verdict::Drop(DropReason::LinkLocal)
    );
}

#[test]
fn a_chain_of_local_sids_is_bounded() {
    let mut f = forwarder();
    let segments = ["2001:db8:5::1"; 12];
    let mut payload = srh(UDP, 11, 11, &segments);
    payload.extend_from_slice(&udp());
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
        0x86dd,
    );
    assert_eq!(
        run(&mut f, &frame, 0).0,
        Verdict::Drop(DropReason::Srv6TooManyLocalSids)
    );
}

#[test]
fn sids_and_policies_count_packets_bytes_and_drops() {
    let mut f = forwarder();
    let counters = f.srv6_counters();
    let ok = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100:200::", 64, UDP, &udp()),
        0x86dd,
    );
    let expired = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:100:200::", 1, UDP, &udp()),
        0x86dd,
    );
    run(&mut f, &ok, 0);
    run(&mut f, &expired, 0);
    let un = counters.sids[0].snapshot();
    assert_eq!(
        (un.packets, un.bytes),
        (2, (ok.len() + expired.len()) as u64)
    );
    assert_eq!(un.drops, vec![(DropReason::Srv6HopLimit, 1)]);
    run(&mut f, &eth(&ipv4([10, 20, 1, 1], 30, 0), 0x0800), 2);
    let policy = counters.policies[0].snapshot();
    assert_eq!((policy.packets, policy.drops.len()), (1, 0));
}

#[test]
fn bad_srv6_specs_are_refused() {
    let mut s = spec();
    s.srv6.sids[0].next_csid = Some(CsidFormat {
        block_bits: 64,
        shift_bits: 64,
    });
    assert!(Forwarder::new(&s).is_err());
    let mut s = spec();
    s.srv6.sids[7].psp = true; // End.DT4
    assert!(Forwarder::new(&s).is_err());
    let mut s = spec();
    s.srv6.sids[6].behavior = SidBehavior::EndX {
        target: RouteTarget::Nexthop(99),
    };
    assert!(Forwarder::new(&s).is_err());
    let mut s = spec();
    s.srv6.policies[0].segments = vec![v6("fcbb::1"); 128];
    assert!(
        Forwarder::new(&s).is_err(),
        "128 SIDs do not fit an SRH (Hdr Ext Len)"
    );
    let mut s = spec();
    s.routes[5].target = RouteTarget::Srv6Policy(9);
    assert!(Forwarder::new(&s).is_err());
}

mod icmp_errors {
    use super::*;
    use crate::slowpath::{ICMP_ERROR_BURST, SlowPath};

    fn error(msg_type: u8, code: u8, pointer: u16) -> Icmpv6Error {
        Icmpv6Error {
            msg_type,
            code,
            pointer,
            vrf: 0,
        }
    }

    /// RFC 4443 checksum over the pseudo-header, written out for the reference.
    fn icmpv6_checksum_ok(ip: &[u8]) -> bool {
        let len = ip.len() - 40;
        let mut pseudo = ip[8..40].to_vec();
        pseudo.extend_from_slice(&(len as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 58]);
        pseudo.extend_from_slice(&ip[40..]);
        checksum(&pseudo) == 0
    }

    #[test]
    fn parameter_problem_quotes_the_packet_from_the_sid_to_the_source() {
        let mut sp = SlowPath::new(&spec());
        let offending = ipv6("2001:db8:1::2", "2001:db8:5::1", 64, UDP, &udp());
        let mut frame = eth(&offending, 0x86dd);
        frame.resize(80, 0); // padding is not quoted
        let built = sp
            .icmpv6_error(&frame, 0, error(4, 4, 40), T0)
            .expect("an error");
        assert_eq!(&built[12..14], &[0x86, 0xdd]);
        let ip = &built[14..];
        assert_eq!(ip[6], 58);
        assert_eq!(ip[7], 64);
        assert_eq!(&ip[8..24], &v6("2001:db8:5::1").octets(), "from the SID");
        assert_eq!(&ip[24..40], &v6("2001:db8:1::2").octets(), "to the source");
        assert_eq!(
            usize::from(u16::from_be_bytes([ip[4], ip[5]])),
            8 + offending.len()
        );
        assert_eq!(&ip[40..42], &[4, 4]);
        assert_eq!(&ip[44..48], &40u32.to_be_bytes());
        assert_eq!(&ip[48..], &offending[..]);
        assert!(icmpv6_checksum_ok(ip));
    }

    #[test]
    fn long_packets_are_cut_to_the_minimum_mtu_and_errors_are_rate_limited() {
        let mut sp = SlowPath::new(&spec());
        let big = ipv6("2001:db8:1::2", "2001:db8:5::1", 64, UDP, &[7u8; 1400]);
        let built = sp
            .icmpv6_error(&eth(&big, 0x86dd), 0, error(3, 0, 0), T0)
            .unwrap();
        assert_eq!(built.len() - 14, 1280);
        assert!(icmpv6_checksum_ok(&built[14..]));
        let small = eth(
            &ipv6("2001:db8:1::2", "2001:db8:5::1", 1, UDP, &udp()),
            0x86dd,
        );
        for _ in 1..ICMP_ERROR_BURST {
            assert!(sp.icmpv6_error(&small, 0, error(3, 0, 0), T0).is_some());
        }
        assert!(sp.icmpv6_error(&small, 0, error(3, 0, 0), T0).is_none());
        assert!(
            sp.icmpv6_error(&small, 0, error(3, 0, 0), T0 + PICOS_PER_SECOND)
                .is_some()
        );
    }

    #[test]
    fn no_error_about_an_error_or_from_an_unanswerable_source() {
        let mut sp = SlowPath::new(&spec());
        let about_error = eth(
            &ipv6(
                "2001:db8:1::2",
                "2001:db8:5::1",
                64,
                ICMPV6,
                &[1, 0, 0, 0, 0, 0, 0, 0],
            ),
            0x86dd,
        );
        assert!(
            sp.icmpv6_error(&about_error, 0, error(4, 4, 40), T0)
                .is_none()
        );
        let unspecified = eth(&ipv6("::", "2001:db8:5::1", 64, UDP, &udp()), 0x86dd);
        assert!(
            sp.icmpv6_error(&unspecified, 0, error(4, 4, 40), T0)
                .is_none()
        );
        assert!(
            sp.icmpv6_error(&[0u8; 20], 0, error(4, 4, 40), T0)
                .is_none()
        );
    }

    #[test]
    fn the_error_is_routed_back_to_the_source() {
        let mut f = forwarder();
        let mut sp = SlowPath::new(&spec());
        let frame = eth(
            &ipv6("2001:db8:2::2", "fcbb:bb00:100:200::", 1, UDP, &udp()),
            0x86dd,
        );
        let Verdict::DropWithIcmpError { error, .. } = run(&mut f, &frame, 1).0 else {
            panic!("hop limit 1 at uN must ask for Time Exceeded");
        };
        let mut built = sp.icmpv6_error(&frame, 1, error, T0).unwrap();
        let mut window = Frame::whole(&mut built);
        assert_eq!(f.route_originated_ipv6(&mut window, 0, T0), forward(1));
        assert_eq!(&built[0..6], &N1);
    }
}

#[test]
fn mutated_and_truncated_srv6_frames_never_panic() {
    let mut f = forwarder();
    let mut seeds: Vec<(Vec<u8>, u16)> = Vec::new();
    for (dst, segments_left, last_entry) in [
        ("fcbb:bb00:100:e001:300::", 1, 1),
        ("2001:db8:5::1", 1, 1),
        ("2001:db8:5::2", 1, 1),
        ("2001:db8:5::3", 0, 1),
        ("2001:db8:5::12", 0, 1),
    ] {
        let mut payload = srh(4, segments_left, last_entry, &["2001:db8:b::9", dst]);
        payload.extend_from_slice(&ipv4([10, 9, 1, 1], 20, 0));
        seeds.push((
            eth(&ipv6("2001:db8:1::2", dst, 64, 43, &payload), 0x86dd),
            0,
        ));
    }
    seeds.push((eth(&ipv4([10, 20, 1, 1], 30, 0), 0x0800), 2));
    seeds.push((
        eth(
            &ipv6("2001:db8:7::1", "2001:db8:20::5", 30, UDP, &udp()),
            0x86dd,
        ),
        2,
    ));
    let mut rng = crate::wire::test_util::XorShift::new(2026);
    for _ in 0..20_000 {
        let (seed, port) = &seeds[rng.below(seeds.len())];
        let mut frame = seed.clone();
        for _ in 0..1 + rng.below(4) {
            let at = L3 + rng.below(frame.len() - L3);
            frame[at] = rng.next_u8();
        }
        frame.truncate(L3 + rng.below(frame.len() - L3 + 1));
        let (verdict, out) = run(&mut f, &frame, *port);
        if let Verdict::Forward { .. } = verdict {
            assert!(out.len() >= L3, "a forwarded frame keeps its L2 header");
        }
    }
}

#[path = "srv6_ctl_tests.rs"]
mod srv6_ctl_tests;

/// SRv6 against egress MTUs: the headend answers for what its encapsulation adds; endpoints
/// answer like any router about the packet they send; decapsulated packets are dropped
/// silently (like their other routing errors).
mod mtu {
    use super::*;

    /// Port 1 (toward nh1 and the policies' first SID) has MTU 1500, the others 9000.
    fn forwarder_with_mtus(mtus: [u16; 3]) -> Forwarder {
        let mut f = forwarder();
        f.set_port_mtus(&mtus);
        f
    }

    /// IPv4 UDP from 10.0.0.9 to `dst`, `len` bytes from the IP header on.
    fn ipv4_of_len(dst: [u8; 4], len: usize, df: bool) -> Vec<u8> {
        let mut ip = ipv4(dst, 30, 0);
        ip.resize(len, 0x33);
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[6] = if df { 0x40 } else { 0 };
        ip[10..12].fill(0);
        let c = checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        ip
    }

    fn too_big(interface: u16, vrf: u16) -> Verdict {
        Verdict::DropWithRouterError {
            reason: DropReason::MtuExceeded,
            error: RouterError {
                kind: RouterErrorKind::PacketTooBig,
                interface,
                vrf,
            },
        }
    }

    #[test]
    fn the_headend_tells_the_source_the_mtu_less_its_encapsulation() {
        let mut f = forwarder_with_mtus([9000, 1500, 9000]);
        // Policy 0 (10.20/16), H.Encaps with two SIDs: 40 + 8 + 32 = 80 bytes added.
        let fits = eth(&ipv4_of_len([10, 20, 1, 1], 1420, true), 0x0800);
        assert_eq!(run(&mut f, &fits, 2).0, forward(1));
        let long = eth(&ipv4_of_len([10, 20, 1, 1], 1421, true), 0x0800);
        let (verdict, out) = run(&mut f, &long, 2);
        assert_eq!(verdict, too_big(2, 1));
        assert_eq!(f.too_big_mtu(), 1420);
        assert_eq!(out, long, "the inner packet is quoted as it arrived");
        let may_fragment = eth(&ipv4_of_len([10, 20, 1, 1], 1421, false), 0x0800);
        let (verdict, out) = run(&mut f, &may_fragment, 2);
        assert_eq!(verdict, Verdict::Fragment { mtu: 1420 });
        assert_eq!(out, may_fragment);
        // Policy 2 (2001:db8:21::/48), H.Encaps.Red with one SID: 40 bytes, no SRH.
        let inner = |len: usize| {
            let payload = vec![9; len - 40];
            eth(
                &ipv6("2001:db8:7::1", "2001:db8:21::5", 30, UDP, &payload),
                0x86dd,
            )
        };
        assert_eq!(run(&mut f, &inner(1460), 2).0, forward(1));
        assert_eq!(run(&mut f, &inner(1461), 2).0, too_big(2, 1));
        assert_eq!(f.too_big_mtu(), 1460);
        // The policy counts the drop by its reason.
        let dropped = f.srv6_counters().policies[0].snapshot().drops;
        assert!(
            dropped.contains(&(DropReason::MtuExceeded, 1)),
            "{dropped:?}"
        );
    }

    #[test]
    fn an_endpoint_answers_about_the_packet_it_would_send() {
        let mut f = forwarder_with_mtus([9000, 1500, 9000]);
        // End at 2001:db8:5::1 sends on to 2001:db8:b::8, behind port 1.
        let packet = |len: usize| {
            let mut payload = srh(
                UDP,
                2,
                2,
                &["2001:db8:b::9", "2001:db8:b::8", "2001:db8:5::1"],
            );
            payload.resize(len - 40, 0x44);
            eth(
                &ipv6("2001:db8:1::2", "2001:db8:5::1", 64, 43, &payload),
                0x86dd,
            )
        };
        assert_eq!(run(&mut f, &packet(1500), 0).0, forward(1));
        let (verdict, out) = run(&mut f, &packet(1501), 0);
        assert_eq!(verdict, too_big(0, 0));
        assert_eq!(f.too_big_mtu(), 1500);
        // As Linux's seg6local End does, the error quotes the packet as the End left it.
        assert_eq!(&out[L3 + 24..L3 + 40], &v6("2001:db8:b::8").octets());
    }

    #[test]
    fn decapsulated_packets_too_long_for_the_tenant_side_are_dropped_silently() {
        let mut f = forwarder_with_mtus([9000, 9000, 1280]);
        // End.DT4 into VRF 1, where 10.9/16 leaves by port 2 (MTU 1280).
        for df in [true, false] {
            let inner = ipv4_of_len([10, 9, 1, 1], 1281, df);
            let frame = eth(
                &ipv6("2001:db8:1::2", "2001:db8:5::10", 64, 4, &inner),
                0x86dd,
            );
            assert_eq!(
                run(&mut f, &frame, 0).0,
                Verdict::Drop(DropReason::MtuExceeded),
                "df {df}"
            );
        }
    }
}

#[test]
fn a_policy_whose_first_segment_is_a_local_sid_takes_it_here_and_one_without_a_route_is_unreachable()
 {
    let mut s = spec();
    // Policy 0 (10.20/16): first a local End SID (in the my-SID table, not the FIB), then
    // 2001:db8:b::8 (behind nh1). Policy 1 (2001:db8:20::/48): a first segment with no route.
    s.srv6.policies[0].segments = vec![v6("2001:db8:5::1"), v6("2001:db8:b::8")];
    s.srv6.policies[1].segments = vec![v6("2001:db9::1")];
    let mut f = Forwarder::new(&s).expect("valid spec");
    let (verdict, out) = run(&mut f, &eth(&ipv4([10, 20, 1, 1], 30, 0), 0x0800), 2);
    assert_eq!(verdict, forward(1));
    // The End step ran: destination the next segment, Segments Left 0, hop limit 64 - 1.
    assert_eq!(&out[L3 + 24..L3 + 40], &v6("2001:db8:b::8").octets());
    assert_eq!(out[L3 + 40 + 3], 0, "Segments Left");
    assert_eq!(out[L3 + 7], 63);
    let inner = ipv6("2001:db8:a::2", "2001:db8:20::5", 30, UDP, &udp());
    let frame = eth(&inner, 0x86dd);
    let (verdict, out) = run(&mut f, &frame, 2);
    assert_eq!(
        verdict,
        Verdict::DropWithRouterError {
            reason: DropReason::NoRoute,
            error: RouterError {
                kind: RouterErrorKind::NoRoute,
                interface: 2,
                vrf: 1,
            },
        }
    );
    assert_eq!(out, frame, "quoted as it arrived");
}

/// Routing headers other than the SRH at a local SID (RFC 8200 4.4): one of a type the node
/// does not recognise is ignored when its Segments Left is 0; with Segments Left above 0 the
/// packet is discarded with a Parameter Problem, code 0, pointing at its Routing Type field.
/// The node acts on the routing headers in the order they come: one that stops processing
/// (an unknown type with segments left, an SRH with segments left that sends the packet on)
/// leaves the later ones alone.
mod routing_types {
    use super::*;

    /// A Routing header of `routing_type` with the layout the SRH shares with every Routing
    /// header (RFC 8200 4.4: Next Header, Hdr Ext Len, Routing Type, Segments Left, then
    /// type-specific data), `segments` as its addresses.
    fn routing_header(
        routing_type: u8,
        next: u8,
        segments_left: u8,
        last_entry: u8,
        segments: &[&str],
    ) -> Vec<u8> {
        let mut h = srh(next, segments_left, last_entry, segments);
        h[2] = routing_type;
        h
    }

    /// A Destination Options header of 8 bytes (one PadN option).
    fn destination_options(next: u8) -> Vec<u8> {
        vec![next, 0, 1, 4, 0, 0, 0, 0]
    }

    fn packet(dst: &str, hop_limit: u8, next: u8, headers: &[Vec<u8>], upper: &[u8]) -> Vec<u8> {
        let mut payload = headers.concat();
        payload.extend_from_slice(upper);
        eth(
            &ipv6("2001:db8:1::2", dst, hop_limit, next, &payload),
            0x86dd,
        )
    }

    const ROUTING: u8 = 43;
    const DESTINATION_OPTIONS: u8 = 60;
    const PING: [u8; 8] = [128, 0, 0, 0, 0, 1, 0, 1];

    fn unknown_routing_type(pointer: u16) -> Verdict {
        icmp_error(DropReason::Srv6BadSrh, 4, 0, pointer)
    }

    #[test]
    fn an_unknown_routing_type_with_segments_left_is_a_parameter_problem_at_its_type() {
        // The SIDs of every behaviour: End (plain, PSP, USP), End.X, End.DT4/DT6/DT46, and
        // uN / uA at the end of their container (argument 0: RFC 8986 processing).
        let sids = [
            "2001:db8:5::3",
            "2001:db8:5::1",
            "2001:db8:5::2",
            "2001:db8:5::4",
            "2001:db8:5::10",
            "2001:db8:5::11",
            "2001:db8:5::12",
            "fcbb:bb00:100::",
            "fcbb:bb00:e001::",
        ];
        let inner6 = ipv6("2001:db8:7::1", "2001:db8:c::5", 20, UDP, &udp());
        for routing_type in [0, 1, 2, 3, 5, 253, 255] {
            for dst in sids {
                for (upper_protocol, upper) in [(UDP, udp()), (41, inner6.clone())] {
                    let rh = routing_header(routing_type, upper_protocol, 1, 1, &["fc00:3::", dst]);
                    // Hop limit 1 too: the routing header is refused before any forwarding.
                    for hop_limit in [64, 1] {
                        let frame =
                            packet(dst, hop_limit, ROUTING, std::slice::from_ref(&rh), &upper);
                        let (verdict, out) = run(&mut forwarder(), &frame, 0);
                        assert_eq!(
                            verdict,
                            unknown_routing_type(40 + 2),
                            "type {routing_type} to {dst}, upper {upper_protocol}, \
                             hop limit {hop_limit}"
                        );
                        assert_eq!(out, frame, "the error quotes the packet as it arrived");
                    }
                }
            }
        }
    }

    #[test]
    fn the_repro_counts_a_parameter_problem_at_the_sid() {
        let mut f = forwarder();
        let counters = f.srv6_counters();
        for routing_type in [0, 3] {
            let rh = routing_header(routing_type, UDP, 1, 1, &["fc00:3::", "2001:db8:5::3"]);
            let frame = packet("2001:db8:5::3", 64, ROUTING, &[rh], &udp());
            assert_eq!(run(&mut f, &frame, 0).0, unknown_routing_type(42));
        }
        let usp = counters.sids[5].snapshot();
        assert_eq!(usp.packets, 2);
        assert_eq!(usp.drops, vec![(DropReason::Srv6BadSrh, 2)]);
    }

    #[test]
    fn the_pointer_is_the_routing_type_of_the_header_that_has_segments_left() {
        let mut f = forwarder();
        let sid = "2001:db8:5::1";
        let unknown = routing_header(0, UDP, 1, 1, &["fc00:3::", sid]);
        // Behind a Destination Options header: 40 + 8 + 2.
        let frame = packet(
            sid,
            64,
            DESTINATION_OPTIONS,
            &[destination_options(ROUTING), unknown.clone()],
            &udp(),
        );
        assert_eq!(run(&mut f, &frame, 0).0, unknown_routing_type(50));
        // Before an SRH with segments left: the unknown one comes first.
        let srh_next = srh(UDP, 1, 1, &["2001:db8:b::9", sid]);
        let mut first = unknown.clone();
        first[0] = ROUTING;
        let frame = packet(sid, 64, ROUTING, &[first, srh_next.clone()], &udp());
        assert_eq!(run(&mut f, &frame, 0).0, unknown_routing_type(42));
        // After an SRH whose Segments Left is 0 (S02: process the next header): 40 + 24 + 2.
        let srh_done = srh(ROUTING, 0, 0, &[sid]);
        let frame = packet(sid, 64, ROUTING, &[srh_done, unknown.clone()], &udp());
        assert_eq!(run(&mut f, &frame, 0).0, unknown_routing_type(66));
        // After an unknown one with Segments Left 0 (ignored).
        let mut ignored = routing_header(3, ROUTING, 0, 1, &["fc00:3::", sid]);
        ignored[0] = ROUTING;
        let frame = packet(sid, 64, ROUTING, &[ignored, unknown], &udp());
        assert_eq!(run(&mut f, &frame, 0).0, unknown_routing_type(40 + 40 + 2));
    }

    #[test]
    fn an_unknown_routing_type_with_segments_left_zero_is_ignored() {
        let mut f = forwarder();
        let sid = "2001:db8:5::1";
        let ignored = |next| routing_header(0, next, 0, 1, &["fc00:3::", sid]);
        // Then the upper layer: ICMPv6 is for the switch, UDP a Parameter Problem code 4 at
        // the UDP header (40 + 40), as without the routing header.
        let ping = packet(sid, 64, ROUTING, &[ignored(ICMPV6)], &PING);
        assert!(matches!(
            run(&mut f, &ping, 0).0,
            Verdict::Punt {
                reason: PuntReason::LocalSid,
                ..
            }
        ));
        let frame = packet(sid, 64, ROUTING, &[ignored(UDP)], &udp());
        assert_eq!(
            run(&mut f, &frame, 0).0,
            icmp_error(DropReason::Srv6UpperLayer, 4, 4, 80)
        );
        // Then an SRH with segments left: RFC 8986 End on it (SL 1 -> 0 at its offset, 80).
        let frame = packet(
            sid,
            64,
            ROUTING,
            &[ignored(ROUTING), srh(UDP, 1, 1, &["2001:db8:b::9", sid])],
            &udp(),
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(verdict, forward(1));
        let mut expected = rewritten(frame.clone(), N1);
        expected[L3 + 7] = 63;
        expected[L3 + 80 + 3] = 0;
        expected[L3 + 24..L3 + 40].copy_from_slice(&v6("2001:db8:b::9").octets());
        assert_eq!(out, expected);
        // End.DT6: decapsulates the inner packet behind it.
        let inner6 = ipv6("2001:db8:7::1", "2001:db8:c::5", 20, UDP, &udp());
        let mut routed6 = inner6.clone();
        routed6[7] = 19;
        let dt6 = "2001:db8:5::11";
        let frame = packet(
            dt6,
            64,
            ROUTING,
            &[routing_header(0, 41, 0, 1, &["fc00:3::", dt6])],
            &inner6,
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(verdict, forward(2));
        assert_eq!(out, rewritten(eth(&routed6, 0x86dd), N3));
    }

    #[test]
    fn an_srh_with_segments_left_leaves_later_routing_headers_to_later_nodes() {
        let mut f = forwarder();
        let sid = "2001:db8:5::1";
        let frame = packet(
            sid,
            64,
            ROUTING,
            &[
                srh(ROUTING, 1, 1, &["2001:db8:b::9", sid]),
                routing_header(0, UDP, 1, 1, &["fc00:3::", sid]),
            ],
            &udp(),
        );
        let (verdict, out) = run(&mut f, &frame, 0);
        assert_eq!(verdict, forward(1));
        let mut expected = rewritten(frame.clone(), N1);
        expected[L3 + 7] = 63;
        expected[L3 + 40 + 3] = 0;
        expected[L3 + 24..L3 + 40].copy_from_slice(&v6("2001:db8:b::9").octets());
        assert_eq!(out, expected);
    }

    /// `frame` through the express lane as the engine takes it: the lane's passes, then
    /// `route_lane` if it took the frame, else the full pipeline. Whether it took it, the
    /// verdict.
    fn through_lane(f: &mut Forwarder, frame: &[u8]) -> (bool, Verdict) {
        let mut lane = ExpressLane::default();
        let vrf = f.lane_vrf(0).expect("port 0 is routed");
        let express = f.stage_lane(&mut lane, &[frame], vrf, &[0; 64], T0) & 1 != 0;
        let mut bytes = frame.to_vec();
        let verdict = if express {
            match f.route_lane(&lane, 0, &mut bytes, T0) {
                LANE_OTHER => f.lane_verdict(),
                port => forward(port),
            }
        } else {
            let mut window = Frame::whole(&mut bytes);
            f.process_frame(&mut window, 0, T0)
        };
        (express, verdict)
    }

    #[test]
    fn a_packet_to_a_local_sid_from_a_martian_source_is_dropped_before_its_endpoint() {
        // An End step forwards the packet, so a source no router forwards from (RFC 4291:
        // loopback, multicast, IPv4-mapped 2.5.5.2; the unspecified address) is refused as
        // for any routed packet, by the lane and the pipeline alike; the same packet from a
        // host address is routed on.
        let mut f = forwarder();
        let sid = "2001:db8:5::1";
        let from = |src: &str| {
            let mut payload = srh(UDP, 1, 1, &["2001:db8:b::9", sid]);
            payload.extend_from_slice(&udp());
            eth(&ipv6(src, sid, 64, ROUTING, &payload), 0x86dd)
        };
        for src in ["::1", "ff02::1", "::ffff:10.0.0.1", "::"] {
            assert_eq!(
                through_lane(&mut f, &from(src)),
                (false, Verdict::Drop(DropReason::MartianSource)),
                "{src}"
            );
        }
        assert_eq!(
            through_lane(&mut f, &from("2001:db8:1::2")),
            (true, forward(1))
        );
    }

    #[test]
    fn the_express_lane_leaves_an_srh_behind_an_unknown_routing_type_to_the_pipeline() {
        let mut f = forwarder();
        let sid = "2001:db8:5::1";
        let mut unknown = routing_header(0, ROUTING, 1, 1, &["fc00:3::", sid]);
        let srh_next = srh(UDP, 1, 1, &["2001:db8:b::9", sid]);
        let frame = packet(
            sid,
            64,
            ROUTING,
            &[unknown.clone(), srh_next.clone()],
            &udp(),
        );
        assert_eq!(
            through_lane(&mut f, &frame),
            (false, unknown_routing_type(42))
        );
        // With Segments Left 0 the unknown one is ignored: the lane takes the SRH step.
        unknown[3] = 0;
        let frame = packet(sid, 64, ROUTING, &[unknown, srh_next], &udp());
        assert_eq!(through_lane(&mut f, &frame), (true, forward(1)));
    }
}

/// A packet dropped after it went through several local SIDs is one drop, counted by the
/// SID where it was dropped (the last one it reached); every SID it reached counts it as a
/// packet.
mod sid_drop_counts {
    use super::*;

    const END: usize = 3; // 2001:db8:5::1
    const USP: usize = 5; // 2001:db8:5::3

    /// To `dst` from port 0 with an SRH listing `segments` (wire order), Segments Left the
    /// last index.
    fn through(f: &mut Forwarder, dst: &str, hop_limit: u8, segments: &[&str]) -> Verdict {
        let last = (segments.len() - 1) as u8;
        let mut payload = srh(UDP, last, last, segments);
        payload.extend_from_slice(&udp());
        let frame = eth(&ipv6("2001:db8:1::2", dst, hop_limit, 43, &payload), 0x86dd);
        run(f, &frame, 0).0
    }

    fn counts(f: &Forwarder, sid: usize) -> (u64, Vec<(DropReason, u64)>) {
        let s = f.srv6_counters().sids[sid].snapshot();
        (s.packets, s.drops)
    }

    #[test]
    fn a_sid_listed_again_and_again_counts_the_drop_once() {
        // Hop limit 3: the first two visits forward (3 -> 2 -> 1), the third has 1 (S03).
        let mut f = forwarder();
        let mut segments = vec!["fc00:3::"];
        segments.extend(["2001:db8:5::3"; 5]);
        assert!(matches!(
            through(&mut f, "2001:db8:5::3", 3, &segments),
            Verdict::DropWithIcmpError {
                reason: DropReason::Srv6HopLimit,
                ..
            }
        ));
        assert_eq!(counts(&f, USP), (3, vec![(DropReason::Srv6HopLimit, 1)]));
        // Nine visits: eight are processed, the ninth is one too many.
        let mut f = forwarder();
        let mut segments = vec!["fc00:3::"];
        segments.extend(["2001:db8:5::3"; 9]);
        assert_eq!(
            through(&mut f, "2001:db8:5::3", 64, &segments),
            Verdict::Drop(DropReason::Srv6TooManyLocalSids)
        );
        assert_eq!(
            counts(&f, USP),
            (9, vec![(DropReason::Srv6TooManyLocalSids, 1)])
        );
    }

    #[test]
    fn sids_taking_turns_charge_the_drop_to_the_last_one() {
        // 5::1 (HL 3 -> 2), 5::3 (2 -> 1), 5::1 again: hop limit 1, dropped there.
        let mut f = forwarder();
        let segments = [
            "fc00:3::",
            "2001:db8:5::3",
            "2001:db8:5::1",
            "2001:db8:5::3",
            "2001:db8:5::1",
        ];
        assert!(matches!(
            through(&mut f, "2001:db8:5::1", 3, &segments),
            Verdict::DropWithIcmpError {
                reason: DropReason::Srv6HopLimit,
                ..
            }
        ));
        assert_eq!(counts(&f, END), (2, vec![(DropReason::Srv6HopLimit, 1)]));
        assert_eq!(counts(&f, USP), (1, vec![]));
        // Alternating until the ninth SID: the ninth (5::1) is the one too many.
        let mut f = forwarder();
        let mut segments = vec!["fc00:3::"];
        for i in 0..9 {
            segments.push(["2001:db8:5::1", "2001:db8:5::3"][i % 2]);
        }
        assert_eq!(
            through(&mut f, "2001:db8:5::1", 64, &segments),
            Verdict::Drop(DropReason::Srv6TooManyLocalSids)
        );
        assert_eq!(
            counts(&f, END),
            (5, vec![(DropReason::Srv6TooManyLocalSids, 1)])
        );
        assert_eq!(counts(&f, USP), (4, vec![]));
        // A drop after the last SID (no route to its next segment) is that SID's.
        let mut f = forwarder();
        let segments = ["fc00:3::", "2001:db8:5::3", "2001:db8:5::1"];
        assert_eq!(
            through(&mut f, "2001:db8:5::1", 64, &segments),
            Verdict::Drop(DropReason::NoRoute)
        );
        assert_eq!(counts(&f, END), (1, vec![]));
        assert_eq!(counts(&f, USP), (1, vec![(DropReason::NoRoute, 1)]));
    }

    #[test]
    fn a_packet_forwarded_through_several_sids_is_no_drop_anywhere() {
        let mut f = forwarder();
        let segments = ["2001:db8:b::9", "2001:db8:5::3", "2001:db8:5::1"];
        assert_eq!(through(&mut f, "2001:db8:5::1", 64, &segments), forward(1));
        assert_eq!(counts(&f, END), (1, vec![]));
        assert_eq!(counts(&f, USP), (1, vec![]));
    }
}
