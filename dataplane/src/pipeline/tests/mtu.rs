//! Routed packets against the MTU of the interface they leave by (RFC 791 / RFC 1812 4.2.2.7
//! for IPv4, RFC 8200 5 and RFC 4443 3.2 for IPv6): a packet that fits goes on; one that does
//! not is fragmented (IPv4 without Don't Fragment) or dropped with an error naming the MTU.

use super::*;
use crate::ctl::Update;

/// The leaf's ports' MTUs: 9000 everywhere but the uplinks (ports 5 and 6, 1500) and access
/// port 1 of VLAN 10 (1280).
const MTUS: [u16; 7] = [9000, 1280, 9000, 9000, 9000, 1500, 1500];

fn leaf_with_mtus() -> Forwarder {
    let mut f = forwarder();
    f.set_port_mtus(&MTUS);
    f.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
    f.neighbor_resolved(1, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2)), SPINE2);
    f.neighbor_resolved(0, "2001:db8:ff::".parse().unwrap(), SPINE1);
    f
}

/// IPv4 UDP from host A (VLAN 10) to 10.2.3.4 (routed out of uplink port 5) of `len` bytes
/// from its IP header, with Don't Fragment if `df`.
fn v4_to_uplink(len: usize, df: bool) -> Vec<u8> {
    v4_from_a_to([10, 2, 3, 4], len, df)
}

/// `v4_to_uplink` to `dst`.
fn v4_from_a_to(dst: [u8; 4], len: usize, df: bool) -> Vec<u8> {
    let mut ip = ipv4([10, 0, 10, 5], dst, 64, 17, 1000, 2000);
    ip.resize(len, 0x5a);
    ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    ip[6] = if df { 0x40 } else { 0 };
    ip[10..12].fill(0);
    let c = reference_checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    eth(ROUTER, A, None, 0x0800, &ip)
}

fn too_big(interface: u16) -> Verdict {
    router_error(
        DropReason::MtuExceeded,
        RouterErrorKind::PacketTooBig,
        interface,
    )
}

#[test]
fn ipv4_at_the_mtu_is_routed_longer_is_fragmented_or_refused_by_its_df_bit() {
    let mut f = leaf_with_mtus();
    let forward = Verdict::Forward {
        port: 5,
        tag: TagOp::Keep,
    };
    for df in [false, true] {
        let fits = v4_to_uplink(1500, df);
        let mut routed = fits.clone();
        assert_eq!(f.process(&mut routed, 0, T0), forward);
        assert_eq!(routed, expected_routed_v4(&fits, 14, SPINE1));
    }
    // One byte over: the frame is left as it arrived for the engine to cut or quote.
    let long = v4_to_uplink(1501, false);
    let mut frame = long.clone();
    assert_eq!(
        f.process(&mut frame, 0, T0),
        Verdict::Fragment { mtu: 1500 }
    );
    assert_eq!(frame, long);
    let long_df = v4_to_uplink(1501, true);
    let mut frame = long_df.clone();
    assert_eq!(f.process(&mut frame, 0, T0), too_big(2));
    assert_eq!(f.too_big_mtu(), 1500);
    assert_eq!(frame, long_df, "quoted as it arrived");
}

#[test]
fn ipv6_longer_than_the_mtu_is_refused_with_the_mtu() {
    let mut f = leaf_with_mtus();
    let packet = |len: usize| {
        ipv6(
            "2001:db8:10::5",
            "2001:db8:b::7",
            64,
            17,
            &vec![7; len - 40],
        )
    };
    let mut fits = eth(ROUTER, A, None, 0x86dd, &packet(1500));
    assert_eq!(
        f.process(&mut fits, 0, T0),
        Verdict::Forward {
            port: 5,
            tag: TagOp::Keep
        }
    );
    let long = eth(ROUTER, A, None, 0x86dd, &packet(1501));
    let mut frame = long.clone();
    assert_eq!(f.process(&mut frame, 0, T0), too_big(2));
    assert_eq!(f.too_big_mtu(), 1500);
    assert_eq!(frame, long);
}

#[test]
fn no_limit_before_the_engine_gives_the_ports_mtus() {
    let mut f = forwarder();
    f.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
    let mut frame = v4_to_uplink(9000, true);
    assert!(matches!(
        f.process(&mut frame, 0, T0),
        Verdict::Forward { port: 5, .. }
    ));
}

#[test]
fn a_vlan_interface_takes_its_smallest_ports_mtu_and_follows_membership_changes() {
    let mut f = leaf_with_mtus();
    // Host A behind access port 0 (MTU 9000) of VLAN 10, whose port 1 has MTU 1280: routed
    // into VLAN 10, A can be sent no more than 1280 bytes.
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    f.neighbor_resolved(2, "10.0.10.5".parse().unwrap(), A);
    let to_a = |len: usize| from_spine1_df([10, 0, 10, 5], len);
    assert!(matches!(
        f.process(&mut to_a(1280), 5, T0),
        Verdict::Forward { port: 0, .. }
    ));
    assert_eq!(f.process(&mut to_a(1281), 5, T0), too_big(0));
    assert_eq!(f.too_big_mtu(), 1280);
    // Port 1 moves to VLAN 20: VLAN 10's smallest MTU is now 9000 (ports 0, 2 and trunk 4).
    let mut undo = Vec::new();
    f.apply_update(
        &Update::SetPortVlans {
            port: 1,
            role: PortRole::Access { vlan: 20 },
        },
        &mut undo,
    )
    .unwrap();
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    assert!(matches!(
        f.process(&mut to_a(4000), 5, T0),
        Verdict::Forward { port: 0, .. }
    ));
    f.undo_updates(undo);
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    assert_eq!(f.process(&mut to_a(1281), 5, T0), too_big(0));
}

#[test]
fn the_lane_leaves_frames_longer_than_the_smallest_mtu_to_the_pipeline() {
    let spec = leaf_spec();
    let (mut lane_side, mut plain) = forwarder_pair(&spec);
    for f in [&mut lane_side, &mut plain] {
        f.set_port_mtus(&MTUS);
    }
    resolve_spines([&mut lane_side, &mut plain]);
    // From spine 2 on uplink port 6 to 10.2.3.4 (out of uplink port 5, MTU 1500): short
    // frames, one at the smallest MTU (1280, express), one above it (not express, but fits
    // port 5), one above port 5's MTU with DF and one without.
    let from_spine2 = |len: usize, df: bool| {
        let mut frame = v4_to_uplink(len, df);
        frame[6..12].copy_from_slice(&SPINE2);
        frame
    };
    let burst = vec![
        from_spine2(60, true),
        from_spine2(1280, true),
        from_spine2(1281, true),
        from_spine2(1501, true),
        from_spine2(1501, false),
    ];
    let mut lane = ExpressLane::default();
    let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, 6, T0);
    assert_eq!(
        express, 0b00011,
        "only frames within the smallest MTU are express"
    );
    let expected: Vec<Outcome> = burst
        .iter()
        .map(|frame| through_pipeline(&mut plain, frame, 6, T0))
        .collect();
    assert_eq!(outcomes, expected);
    assert!(matches!(outcomes[2].0, Verdict::Forward { port: 5, .. }));
    assert_eq!(outcomes[3].0, too_big(1));
    assert_eq!(outcomes[4].0, Verdict::Fragment { mtu: 1500 });
}

/// IPv6 UDP from host A to `dst`, `len` bytes from the IP header on.
/// Runs `frame` through the pipeline and returns the verdict and the frame as it would leave
/// (its window, which trimming shortens).
fn process_window(f: &mut Forwarder, mut frame: Vec<u8>) -> (Verdict, Vec<u8>) {
    let mut window = Frame::whole(&mut frame);
    let verdict = f.process_frame(&mut window, 0, T0);
    let (start, end) = (window.start(), window.end());
    (verdict, frame[start..end].to_vec())
}

#[test]
fn bytes_after_the_ip_packet_are_cut_before_routing_so_the_mtu_holds_for_what_leaves() {
    let mut f = leaf_with_mtus();
    let forward = Verdict::Forward {
        port: 5,
        tag: TagOp::Keep,
    };
    // RFC 1812 5.2.2 / Linux's ip_rcv: the packet is what its Total Length says; bytes after
    // it (600 here, the frame 114 bytes over the uplink's 1500) are not sent on.
    let packet = v4_to_uplink(1000, true);
    let mut longer = packet.clone();
    longer.extend(std::iter::repeat_n(0xee, 600));
    let (verdict, out) = process_window(&mut f, longer);
    assert_eq!(verdict, forward);
    assert_eq!(out, expected_routed_v4(&packet, 14, SPINE1));
    // Ethernet padding up to 60 bytes stays: a 20-byte packet in a minimum frame.
    let small = v4_to_uplink(20, true);
    let mut padded = small.clone();
    padded.resize(60, 0);
    let (verdict, out) = process_window(&mut f, padded.clone());
    assert_eq!(verdict, forward);
    assert_eq!(out, expected_routed_v4(&padded, 14, SPINE1));
    // Past the padding it is cut to the minimum frame, not below.
    padded.resize(61, 0);
    let (_, out) = process_window(&mut f, padded.clone());
    assert_eq!(out, expected_routed_v4(&padded[..60], 14, SPINE1));
    // IPv6: the Payload Length (RFC 8200 3) bounds the packet.
    let v6 = v6_from_a("2001:db8:b::7", 1000);
    let mut longer = v6.clone();
    longer.extend(std::iter::repeat_n(0xee, 600));
    let (verdict, out) = process_window(&mut f, longer);
    assert_eq!(verdict, forward);
    assert_eq!(out.len(), v6.len());
    let mut header = v6[14..54].to_vec();
    header[7] -= 1; // the hop limit
    assert_eq!(out[14..54], header[..]);
    assert_eq!(out[54..], v6[54..]);
}

fn v6_from_a(dst: &str, len: usize) -> Vec<u8> {
    eth(
        ROUTER,
        A,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", dst, 64, 17, &vec![7; len - 40]),
    )
}

#[test]
fn a_packet_too_big_for_its_egress_is_answered_while_its_neighbour_is_unresolved() {
    // As Linux (ip_forward's ip_exceeds_mtu, ip6_forward's ip6_pkt_too_big) the MTU is
    // checked before the neighbour: the source learns the path MTU while nobody has resolved
    // the nexthop yet, and a packet dropped as too big asks for no resolution. No neighbour
    // is known here.
    let mut f = forwarder();
    f.set_port_mtus(&MTUS);
    // Nexthop 0 (10.255.0.0 out of uplink port 5, MTU 1500).
    let long_df = v4_to_uplink(1501, true);
    let mut frame = long_df.clone();
    assert_eq!(f.process(&mut frame, 0, T0), too_big(2));
    assert_eq!(f.too_big_mtu(), 1500);
    assert_eq!(frame, long_df, "quoted as it arrived");
    // Without DF: fragmented (each fragment is routed anew, and asks then).
    let long = v4_to_uplink(1501, false);
    assert_eq!(
        f.process(&mut long.clone(), 0, T0),
        Verdict::Fragment { mtu: 1500 }
    );
    // Nexthop 2 (2001:db8:ff:: out of port 5).
    assert_eq!(
        f.process(&mut v6_from_a("2001:db8:b::7", 1501), 0, T0),
        too_big(2)
    );
    assert_eq!(f.too_big_mtu(), 1500);
    // Group 0 (nexthops 0 and 1, both unresolved): no member sent the packet.
    let to_group = v4_from_a_to([10, 1, 3, 4], 1501, true);
    assert_eq!(f.process(&mut to_group.clone(), 0, T0), too_big(2));
    // A connected host of VLAN 10 (MTU 1280, port 1's) from spine 1: not gleaned.
    let to_vlan_host = |len: usize| from_spine1_df([10, 0, 10, 77], len);
    assert_eq!(f.process(&mut to_vlan_host(1281), 5, T0), too_big(0));
    assert_eq!(f.too_big_mtu(), 1280);
    assert_eq!(
        f.drain_requests().collect::<Vec<_>>(),
        vec![],
        "no resolution for packets dropped as too big"
    );
    for counters in f.balance_counters() {
        assert!(counters.member_packets().iter().all(|&p| p == 0));
        assert!(counters.member_bytes().iter().all(|&b| b == 0));
    }
    // Packets that fit are dropped while their neighbours are resolved, and ask for it.
    let unresolved = Verdict::Drop(DropReason::NeighborUnresolved);
    assert_eq!(f.process(&mut v4_to_uplink(1500, true), 0, T0), unresolved);
    assert_eq!(
        f.process(&mut v6_from_a("2001:db8:b::7", 1500), 0, T0),
        unresolved
    );
    assert_eq!(f.process(&mut to_vlan_host(1280), 5, T0), unresolved);
    let requests: Vec<_> = f.drain_requests().collect();
    assert_eq!(
        requests,
        vec![
            ControlRequest::Resolve {
                interface: 0,
                ip: "10.255.0.0".parse().unwrap()
            },
            ControlRequest::Resolve {
                interface: 0,
                ip: "2001:db8:ff::".parse().unwrap()
            },
            ControlRequest::Resolve {
                interface: 2,
                ip: "10.0.10.77".parse().unwrap()
            },
        ]
    );
}

#[test]
fn a_packet_too_big_for_a_group_is_no_members_resolved_or_not() {
    // Group 0: nexthop 0 (port 5, MTU 1500) resolved, nexthop 1 (port 6, MTU 1500) not.
    // Packets too big for either are nobody's: both members' counters stay at zero, and the
    // unresolved member is not asked for.
    let mut f = forwarder();
    f.set_port_mtus(&MTUS);
    f.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
    for flow in 0..32u16 {
        let mut ip = ipv4([10, 0, 10, 5], [10, 1, 0, 7], 30, 17, 1000 + flow, 2000);
        ip.resize(1600, 3);
        ip[2..4].copy_from_slice(&1600u16.to_be_bytes());
        ip[6] = 0x40;
        ip[10..12].fill(0);
        let c = reference_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let mut frame = eth(ROUTER, A, None, 0x0800, &ip);
        assert_eq!(f.process(&mut frame, 0, T0), too_big(2), "flow {flow}");
    }
    assert_eq!(f.drain_requests().count(), 0);
    let counters = &f.balance_counters()[0];
    assert_eq!(counters.member_packets(), vec![0, 0]);
    assert_eq!(counters.member_bytes(), vec![0, 0]);
}

/// `staging_spec` (its End SID 2001:db8:5::/48) with an SRv6 policy for 10.20.0.0/16:
/// H.Encaps.Red to 2001:db8:b::1 alone (40 bytes added), behind nexthop 2 (port 5).
fn srv6_leaf() -> Forwarder {
    let mut spec = staging_spec();
    spec.srv6.policies.push(PolicySpec {
        name: "to-b".into(),
        mode: EncapMode::EncapsRed,
        segments: vec!["2001:db8:b::1".parse().unwrap()],
        source: "2001:db8:ff::1".parse().unwrap(),
        hop_limit: 64,
        outer_vrf: 0,
    });
    spec.routes.push(RouteSpec {
        vrf: 0,
        prefix: "10.20.0.0".parse().unwrap(),
        len: 16,
        target: RouteTarget::Srv6Policy(0),
    });
    let mut f = Forwarder::new(&spec).unwrap();
    f.set_port_mtus(&MTUS);
    f
}

#[test]
fn srv6_headends_and_endpoints_answer_too_big_while_the_neighbour_is_unresolved() {
    let mut f = srv6_leaf();
    // The headend: 1461 bytes + 40 leave 1501 for port 5; the source hears of 1460.
    let inner = v4_from_a_to([10, 20, 3, 4], 1461, true);
    assert_eq!(f.process(&mut inner.clone(), 0, T0), too_big(2));
    assert_eq!(f.too_big_mtu(), 1460);
    // The End SID sends on to 2001:db8:b::8 (nexthop 2, port 5): 1501 bytes do not fit.
    let mut payload = super::super::srv6_tests::srh(17, 1, 1, &["2001:db8:b::8", "2001:db8:5::1"]);
    payload.resize(1501 - 40, 0x44);
    let to_sid = eth(
        ROUTER,
        SPINE2,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", "2001:db8:5::1", 64, 43, &payload),
    );
    assert_eq!(f.process(&mut to_sid.clone(), 6, T0), too_big(1));
    assert_eq!(f.too_big_mtu(), 1500);
    assert_eq!(f.drain_requests().count(), 0, "no resolution asked");
    // One byte less: both fit, and wait for the neighbour.
    let unresolved = Verdict::Drop(DropReason::NeighborUnresolved);
    let mut fits = v4_from_a_to([10, 20, 3, 4], 1460, true);
    assert_eq!(f.process(&mut fits, 0, T0), unresolved);
    let mut fits = to_sid.clone();
    fits.truncate(fits.len() - 1);
    fits[18..20].copy_from_slice(&(1500u16 - 40).to_be_bytes());
    assert_eq!(f.process(&mut fits, 6, T0), unresolved);
    assert_eq!(
        f.drain_requests().collect::<Vec<_>>(),
        vec![ControlRequest::Resolve {
            interface: 0,
            ip: "2001:db8:ff::".parse().unwrap()
        }]
    );
}

/// A `len`-byte IPv4 packet with DF set from 10.7.0.1 (behind spine 1) to `dst`, framed to the
/// router.
fn from_spine1_df(dst: [u8; 4], len: usize) -> Vec<u8> {
    let mut ip = ipv4([10, 7, 0, 1], dst, 10, 6, 5, 6);
    ip.resize(len, 1);
    ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[10..12].fill(0);
    let c = reference_checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    eth(ROUTER, SPINE1, None, 0x0800, &ip)
}
