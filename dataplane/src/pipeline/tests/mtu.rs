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
    let mut ip = ipv4([10, 0, 10, 5], [10, 2, 3, 4], 64, 17, 1000, 2000);
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
    let to_a = |len: usize| {
        let mut ip = ipv4([10, 7, 0, 1], [10, 0, 10, 5], 10, 6, 5, 6);
        ip.resize(len, 1);
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[6] = 0x40;
        ip[10..12].fill(0);
        let c = reference_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        eth(ROUTER, SPINE1, None, 0x0800, &ip)
    };
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
