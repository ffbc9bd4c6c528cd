//! Unit tests of the forwarding stage on byte arrays. Expected frames are built here from the
//! rules (reference checksum written in the test), never by the code under test.

use super::spec::*;
use super::*;
use crate::clock::PICOS_PER_SECOND;
use crate::counters::DropReason;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const ROUTER: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0];
const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const C: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0c];
const SPINE1: [u8; 6] = [0x02, 0, 0, 0, 0x51, 1];
const SPINE2: [u8; 6] = [0x02, 0, 0, 0, 0x51, 2];
const BCAST: [u8; 6] = [0xff; 6];
const T0: u64 = PICOS_PER_SECOND;

/// Ports: 0,1,2 access VLAN 10; 3 access VLAN 20; 4 trunk {10,20}; 5,6 routed uplinks.
/// Interfaces: 0 = port 5 (10.255.0.1/31, 2001:db8:ff::1/127), 1 = port 6 (10.255.0.3/31),
/// 2 = VLAN 10 (10.0.10.1/24, 2001:db8:10::1/64), 3 = VLAN 20 (10.0.20.1/24).
/// Nexthops: 0 = 10.255.0.0 via if 0, 1 = 10.255.0.2 via if 1, 2 = 2001:db8:ff:: via if 0.
/// Routes: 10.1.0.0/16 -> group 0 {nh0, nh1}; 10.2.0.0/16 -> nh0; 2001:db8:b::/48 -> nh2;
/// 10.9.0.0/16 -> blackhole.
fn leaf_spec() -> SwitchSpec {
    let mut spec = SwitchSpec::empty(7);
    spec.router_mac = ROUTER;
    spec.ports = vec![
        PortRole::Access { vlan: 10 },
        PortRole::Access { vlan: 10 },
        PortRole::Access { vlan: 10 },
        PortRole::Access { vlan: 20 },
        PortRole::Trunk {
            allowed: vec![10, 20],
            native: None,
        },
        PortRole::Routed { interface: 0 },
        PortRole::Routed { interface: 1 },
    ];
    spec.vlans = vec![
        VlanSpec {
            id: 10,
            interface: Some(2),
        },
        VlanSpec {
            id: 20,
            interface: Some(3),
        },
    ];
    spec.interfaces = vec![
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Port(5),
            ipv4: vec![(Ipv4Addr::new(10, 255, 0, 1), 31)],
            ipv6: vec![("2001:db8:ff::1".parse().unwrap(), 127)],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Port(6),
            ipv4: vec![(Ipv4Addr::new(10, 255, 0, 3), 31)],
            ipv6: vec![],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Vlan(10),
            ipv4: vec![(Ipv4Addr::new(10, 0, 10, 1), 24)],
            ipv6: vec![("2001:db8:10::1".parse().unwrap(), 64)],
        },
        InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Vlan(20),
            ipv4: vec![(Ipv4Addr::new(10, 0, 20, 1), 24)],
            ipv6: vec![],
        },
    ];
    spec.nexthops = vec![
        NexthopSpec {
            interface: 0,
            ip: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)),
        },
        NexthopSpec {
            interface: 1,
            ip: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2)),
        },
        NexthopSpec {
            interface: 0,
            ip: "2001:db8:ff::".parse().unwrap(),
        },
    ];
    spec.groups = vec![GroupSpec {
        members: vec![(0, 1), (1, 1)],
        balance: Default::default(),
    }];
    spec.routes = vec![
        RouteSpec {
            vrf: 0,
            prefix: "10.1.0.0".parse().unwrap(),
            len: 16,
            target: RouteTarget::Group(0),
        },
        RouteSpec {
            vrf: 0,
            prefix: "10.2.0.0".parse().unwrap(),
            len: 16,
            target: RouteTarget::Nexthop(0),
        },
        RouteSpec {
            vrf: 0,
            prefix: "2001:db8:b::".parse().unwrap(),
            len: 48,
            target: RouteTarget::Nexthop(2),
        },
        RouteSpec {
            vrf: 0,
            prefix: "10.9.0.0".parse().unwrap(),
            len: 16,
            target: RouteTarget::Blackhole,
        },
    ];
    spec
}

/// A xorshift64 generator (13, 7, 17) from `seed`: the random tests' reproducible source.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A routing drop the source hears about, from ingress interface `interface` (VRF 0).
fn router_error(reason: DropReason, kind: RouterErrorKind, interface: u16) -> Verdict {
    Verdict::DropWithRouterError {
        reason,
        error: RouterError {
            kind,
            interface,
            vrf: 0,
        },
    }
}

fn forwarder() -> Forwarder {
    Forwarder::new(&leaf_spec()).expect("valid spec")
}

fn eth(dst: [u8; 6], src: [u8; 6], vlan: Option<u16>, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if let Some(vid) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    while f.len() < 60 {
        f.push(0);
    }
    f
}

/// Straightforward RFC 1071 checksum for the reference.
fn reference_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        sum += u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ipv4(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 28, 0x12, 0x34, 0, 0, ttl, proto, 0, 0];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = reference_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&sport.to_be_bytes());
    ip.extend_from_slice(&dport.to_be_bytes());
    ip.extend_from_slice(&[0, 8, 0, 0]);
    ip
}

fn ipv6(src: &str, dst: &str, hop_limit: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = vec![0x60, 0x01, 0x23, 0x45];
    ip.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    ip.push(next);
    ip.push(hop_limit);
    ip.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
    ip.extend_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
    ip.extend_from_slice(payload);
    ip
}

fn arp_request(sender_mac: [u8; 6], sender_ip: [u8; 4], target_ip: [u8; 4]) -> Vec<u8> {
    let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
    arp.extend_from_slice(&sender_mac);
    arp.extend_from_slice(&sender_ip);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&target_ip);
    arp
}

fn neighbor_solicit(target: &str) -> Vec<u8> {
    let mut icmp = vec![135, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&target.parse::<Ipv6Addr>().unwrap().octets());
    icmp
}

#[test]
fn learning_then_unicast_and_flooding_of_unknown_and_broadcast() {
    let mut f = forwarder();
    let mut a_to_b = eth(B, A, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut a_to_b, 0, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
    let mut b_to_a = eth(A, B, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut b_to_a, 1, T0),
        Verdict::Forward {
            port: 0,
            tag: TagOp::Keep
        }
    );
    let mut a_to_b = eth(B, A, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut a_to_b, 0, T0),
        Verdict::Forward {
            port: 1,
            tag: TagOp::Keep
        }
    );
    let mut bcast = eth(BCAST, A, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut bcast, 0, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
    assert_eq!(f.vlan_members(10), &[0, 1, 2, 4]);
    assert_eq!(f.vlan_members(20), &[3, 4]);
}

#[test]
fn vlans_are_separate_and_moves_are_followed() {
    let mut f = forwarder();
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    // A is known in VLAN 10 only: a frame to A in VLAN 20 floods there.
    assert_eq!(
        f.process(&mut eth(A, C, None, 0x0800, &[]), 3, T0),
        Verdict::Flood {
            vlan: 20,
            ingress_tagged: false
        }
    );
    // A moves to port 2.
    f.process(&mut eth(B, A, None, 0x0800, &[]), 2, T0 + 1);
    assert_eq!(f.mac_moves, 1);
    assert_eq!(
        f.process(&mut eth(A, B, None, 0x0800, &[]), 1, T0 + 2),
        Verdict::Forward {
            port: 2,
            tag: TagOp::Keep
        }
    );
    // Destination on the ingress port: filtered.
    assert_eq!(
        f.process(&mut eth(A, C, None, 0x0800, &[]), 2, T0 + 3),
        Verdict::Drop(DropReason::SamePort)
    );
}

#[test]
fn a_host_that_moves_away_and_back_is_followed_despite_the_learning_caches() {
    let mut f = forwarder();
    let to_a = |f: &mut Forwarder, t: u64| f.process(&mut eth(A, B, None, 0x0800, &[]), 1, t);
    for (step, port) in [0u16, 2, 0, 2, 2, 0].into_iter().enumerate() {
        let t = T0 + step as u64 * 1000;
        f.process(&mut eth(B, A, None, 0x0800, &[]), port, t);
        assert_eq!(
            to_a(&mut f, t + 1),
            Verdict::Forward {
                port,
                tag: TagOp::Keep
            },
            "step {step}"
        );
        // Repeated frames within the refresh interval take the cached path and agree.
        f.process(&mut eth(B, A, None, 0x0800, &[]), port, t + 2);
        assert_eq!(
            to_a(&mut f, t + 3),
            Verdict::Forward {
                port,
                tag: TagOp::Keep
            },
            "step {step} cached"
        );
    }
    assert_eq!(f.mac_moves, 4);
}

#[test]
fn learned_macs_age_out() {
    let mut spec = leaf_spec();
    spec.mac_aging = 10 * PICOS_PER_SECOND;
    let mut f = Forwarder::new(&spec).unwrap();
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    assert_eq!(
        f.process(&mut eth(A, B, None, 0x0800, &[]), 1, T0 + PICOS_PER_SECOND),
        Verdict::Forward {
            port: 0,
            tag: TagOp::Keep
        }
    );
    let later = T0 + 11 * PICOS_PER_SECOND;
    assert_eq!(
        f.process(&mut eth(A, B, None, 0x0800, &[]), 1, later),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
}

#[test]
fn trunk_tags_are_checked_pushed_popped() {
    let mut f = forwarder();
    // Tagged VLAN 10 from the trunk to A (learned on access port 0): the tag comes off.
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    assert_eq!(
        f.process(&mut eth(A, C, Some(10), 0x0800, &[]), 4, T0),
        Verdict::Forward {
            port: 0,
            tag: TagOp::Pop
        }
    );
    // A to C (now known on the trunk in VLAN 10): the tag goes on.
    assert_eq!(
        f.process(&mut eth(C, A, None, 0x0800, &[]), 0, T0),
        Verdict::Forward {
            port: 4,
            tag: TagOp::Push(10)
        }
    );
    // VLAN 30 is not allowed on the trunk, untagged has no native VLAN there.
    assert_eq!(
        f.process(&mut eth(A, C, Some(30), 0x0800, &[]), 4, T0),
        Verdict::Drop(DropReason::VlanNotAllowed)
    );
    assert_eq!(
        f.process(&mut eth(A, C, None, 0x0800, &[]), 4, T0),
        Verdict::Drop(DropReason::VlanNotAllowed)
    );
    // Access ports take untagged or priority-tagged frames only.
    assert_eq!(
        f.process(&mut eth(A, C, Some(20), 0x0800, &[]), 1, T0),
        Verdict::Drop(DropReason::VlanNotAllowed)
    );
    assert_eq!(
        f.process(&mut eth(A, B, Some(0), 0x0800, &[]), 1, T0),
        Verdict::Forward {
            port: 0,
            tag: TagOp::Pop
        }
    );
}

#[test]
fn malformed_and_special_frames_are_dropped_with_their_reason() {
    let mut f = forwarder();
    let good = eth(B, A, None, 0x0800, &[]);
    for len in 0..14 {
        assert_eq!(
            f.process(&mut good[..len].to_vec(), 0, T0),
            Verdict::Drop(DropReason::Truncated),
            "len {len}"
        );
    }
    assert_eq!(
        f.process(&mut eth(B, BCAST, None, 0x0800, &[]), 0, T0),
        Verdict::Drop(DropReason::InvalidSourceMac)
    );
    let pfc = eth([0x01, 0x80, 0xc2, 0, 0, 1], A, None, 0x8808, &[1, 1, 0, 8]);
    assert_eq!(
        f.process(&mut pfc.clone(), 0, T0),
        Verdict::Drop(DropReason::MacControl)
    );
    let mut qinq = eth(B, A, Some(10), 0x8100, &[0, 20, 8, 0]);
    assert_eq!(
        f.process(&mut qinq, 4, T0),
        Verdict::Drop(DropReason::UnsupportedVlanStack)
    );
    let mut short_tag = eth(B, A, Some(10), 0x0800, &[]);
    short_tag.truncate(16);
    assert_eq!(
        f.process(&mut short_tag, 4, T0),
        Verdict::Drop(DropReason::Truncated)
    );
    // A tagged frame on a routed port.
    assert_eq!(
        f.process(&mut eth(ROUTER, A, Some(10), 0x0800, &[]), 5, T0),
        Verdict::Drop(DropReason::VlanNotAllowed)
    );
    // Unicast to another MAC on a routed port.
    assert_eq!(
        f.process(&mut eth(B, SPINE1, None, 0x0800, &[]), 5, T0),
        Verdict::Drop(DropReason::NotForUs)
    );
    // The peer's LLDP (01-80-C2-00-00-0E) and LACP (-02) on a routed port: the link's own
    // protocols (802.1Q table 8-1), not traffic that missed the router MAC; -10 is outside the
    // reserved block and misses as any other multicast the switch does not join.
    for (last, reason) in [
        (0x0e, DropReason::ReservedMulticast),
        (0x02, DropReason::ReservedMulticast),
        (0x10, DropReason::NotForUs),
    ] {
        let group = [0x01, 0x80, 0xc2, 0, 0, last];
        assert_eq!(
            f.process(&mut eth(group, SPINE1, None, 0x88cc, &[0; 46]), 5, T0),
            Verdict::Drop(reason),
            "01-80-c2-00-00-{last:02x}"
        );
    }
}

/// The frame an IPv4 packet from `frame` must become when routed to `dst_mac`: only the MACs,
/// the TTL and the checksum differ.
fn expected_routed_v4(frame: &[u8], l3: usize, dst_mac: [u8; 6]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[0..6].copy_from_slice(&dst_mac);
    out[6..12].copy_from_slice(&ROUTER);
    out[l3 + 8] -= 1;
    out[l3 + 10] = 0;
    out[l3 + 11] = 0;
    let c = reference_checksum(&out[l3..l3 + 20]);
    out[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    out
}

#[test]
fn ipv4_routing_resolves_nexthops_then_rewrites_ttl_checksum_and_macs() {
    let mut f = forwarder();
    let packet = ipv4([10, 0, 10, 5], [10, 2, 3, 4], 64, 17, 1000, 2000);
    let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
    assert_eq!(
        f.process(&mut frame.clone(), 0, T0),
        Verdict::Drop(DropReason::NeighborUnresolved)
    );
    let requests: Vec<_> = f.drain_requests().collect();
    assert_eq!(
        requests,
        vec![ControlRequest::Resolve {
            interface: 0,
            ip: "10.255.0.0".parse().unwrap()
        }]
    );
    // Within the resolve interval no second request.
    f.process(&mut frame.clone(), 0, T0 + PICOS_PER_SECOND / 2);
    assert_eq!(f.drain_requests().count(), 0);
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    let expected = expected_routed_v4(&frame, 14, SPINE1);
    assert_eq!(
        f.process(&mut frame, 0, T0 + 1),
        Verdict::Forward {
            port: 5,
            tag: TagOp::Keep
        }
    );
    assert_eq!(frame, expected, "only MACs, TTL and checksum change");
    assert_eq!(reference_checksum(&frame[14..34]), 0, "checksum verifies");
}

#[test]
fn ipv4_checksum_edge_cases_stay_valid_after_ttl_decrement() {
    let mut f = forwarder();
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    // Vary identification so the stored checksum sweeps many values, including 0x0000/0xffff.
    for ident in 0..=u16::MAX {
        let mut packet = ipv4(
            [10, 0, 10, 5],
            [10, 2, 3, 4],
            2 + (ident % 250) as u8,
            17,
            1,
            2,
        );
        packet[4..6].copy_from_slice(&ident.to_be_bytes());
        packet[10] = 0;
        packet[11] = 0;
        let c = reference_checksum(&packet[..20]);
        packet[10..12].copy_from_slice(&c.to_be_bytes());
        let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
        assert_eq!(
            f.process(&mut frame, 0, T0),
            Verdict::Forward {
                port: 5,
                tag: TagOp::Keep
            }
        );
        assert_eq!(reference_checksum(&frame[14..34]), 0, "ident {ident}");
    }
}

#[test]
fn connected_hosts_are_gleaned_then_reached_through_the_vlan() {
    let mut f = forwarder();
    // Host A lives on access port 0 in VLAN 10; C on the trunk in VLAN 10.
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
    f.process(&mut eth(B, C, Some(10), 0x0800, &[]), 4, T0);
    let to_a = ipv4([10, 7, 0, 1], [10, 0, 10, 5], 10, 6, 5, 6);
    let frame = eth(ROUTER, SPINE1, None, 0x0800, &to_a);
    assert_eq!(
        f.process(&mut frame.clone(), 5, T0),
        Verdict::Drop(DropReason::NeighborUnresolved)
    );
    assert_eq!(
        f.drain_requests().collect::<Vec<_>>(),
        vec![ControlRequest::Resolve {
            interface: 2,
            ip: "10.0.10.5".parse().unwrap()
        }]
    );
    f.neighbor_resolved(2, "10.0.10.5".parse().unwrap(), A);
    let mut routed = frame.clone();
    assert_eq!(
        f.process(&mut routed, 5, T0),
        Verdict::Forward {
            port: 0,
            tag: TagOp::Keep
        }
    );
    assert_eq!(routed, expected_routed_v4(&frame, 14, A));
    // Host C behind the trunk: the routed frame must be tagged with VLAN 10.
    f.neighbor_resolved(2, "10.0.10.7".parse().unwrap(), C);
    let to_c = ipv4([10, 7, 0, 1], [10, 0, 10, 7], 10, 6, 5, 6);
    assert_eq!(
        f.process(&mut eth(ROUTER, SPINE1, None, 0x0800, &to_c), 5, T0),
        Verdict::Forward {
            port: 4,
            tag: TagOp::Push(10)
        }
    );
}

#[test]
fn routing_between_two_tagged_vlans_rewrites_the_vid_in_place() {
    let mut f = forwarder();
    // B is in VLAN 20 behind the trunk; a host in VLAN 10 behind the trunk sends to it.
    f.process(&mut eth(A, B, Some(20), 0x0800, &[]), 4, T0);
    f.neighbor_resolved(3, "10.0.20.9".parse().unwrap(), B);
    let packet = ipv4([10, 0, 10, 7], [10, 0, 20, 9], 9, 17, 1, 2);
    let mut frame = eth(ROUTER, C, Some(10), 0x0800, &packet);
    assert_eq!(
        f.process(&mut frame, 4, T0),
        Verdict::Forward {
            port: 4,
            tag: TagOp::Keep
        }
    );
    assert_eq!(u16::from_be_bytes([frame[14], frame[15]]) & 0x0fff, 20);
    assert_eq!(&frame[0..6], &B);
    // From a tagged VLAN to a routed port: the tag comes off.
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    let packet = ipv4([10, 0, 10, 7], [10, 2, 0, 1], 9, 17, 1, 2);
    assert_eq!(
        f.process(&mut eth(ROUTER, C, Some(10), 0x0800, &packet), 4, T0),
        Verdict::Forward {
            port: 5,
            tag: TagOp::Pop
        }
    );
}

#[test]
fn ipv4_drops_and_punts() {
    let mut f = forwarder();
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    let send = |f: &mut Forwarder, packet: Vec<u8>| {
        f.process(&mut eth(ROUTER, A, None, 0x0800, &packet), 0, T0)
    };
    assert_eq!(
        send(&mut f, ipv4([10, 0, 10, 5], [10, 2, 0, 1], 1, 17, 1, 2)),
        router_error(DropReason::TtlExpired, RouterErrorKind::TimeExceeded, 2)
    );
    assert_eq!(
        send(&mut f, ipv4([10, 0, 10, 5], [10, 2, 0, 1], 0, 17, 1, 2)),
        router_error(DropReason::TtlExpired, RouterErrorKind::TimeExceeded, 2)
    );
    assert_eq!(
        send(&mut f, ipv4([10, 0, 10, 5], [192, 168, 1, 1], 64, 17, 1, 2)),
        router_error(DropReason::NoRoute, RouterErrorKind::NoRoute, 2)
    );
    // Blackhole routes stay silent.
    assert_eq!(
        send(&mut f, ipv4([10, 0, 10, 5], [10, 9, 1, 1], 64, 17, 1, 2)),
        Verdict::Drop(DropReason::Blackhole)
    );
    // To the gateway itself, even with TTL 1: for the control plane.
    assert_eq!(
        send(&mut f, ipv4([10, 0, 10, 5], [10, 0, 10, 1], 1, 1, 0, 0)),
        Verdict::Punt {
            reason: PuntReason::Local,
            interface: 2
        }
    );
    let mut bad_sum = ipv4([10, 0, 10, 5], [10, 2, 0, 1], 64, 17, 1, 2);
    bad_sum[10] ^= 0xff;
    assert_eq!(
        send(&mut f, bad_sum),
        Verdict::Drop(DropReason::BadIpv4Checksum)
    );
    let mut bad_ihl = ipv4([10, 0, 10, 5], [10, 2, 0, 1], 64, 17, 1, 2);
    bad_ihl[0] = 0x44;
    assert_eq!(
        send(&mut f, bad_ihl),
        Verdict::Drop(DropReason::BadIpv4Header)
    );
    let mut bad_version = ipv4([10, 0, 10, 5], [10, 2, 0, 1], 64, 17, 1, 2);
    bad_version[0] = 0x65;
    assert_eq!(
        send(&mut f, bad_version),
        Verdict::Drop(DropReason::BadIpv4Header)
    );
    let mut long = ipv4([10, 0, 10, 5], [10, 2, 0, 1], 64, 17, 1, 2);
    long[2..4].copy_from_slice(&1500u16.to_be_bytes());
    assert_eq!(send(&mut f, long), Verdict::Drop(DropReason::Truncated));
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x88cc, &[0; 46]), 0, T0),
        Verdict::Drop(DropReason::NotIp)
    );
}

/// `ipv4(src, dst, ttl, UDP, 1, 2)` with `options`: see `with_ipv4_options`.
fn ipv4_with_options(src: [u8; 4], dst: [u8; 4], ttl: u8, options: &[u8]) -> Vec<u8> {
    with_ipv4_options(ipv4(src, dst, ttl, 17, 1, 2), options)
}

/// IPv4 packet `ip` (a 20-byte header) with `options` (a multiple of 4 bytes) between the
/// fixed header and the payload: IHL, total length and header checksum set for them.
fn with_ipv4_options(mut ip: Vec<u8>, options: &[u8]) -> Vec<u8> {
    ip.splice(20..20, options.iter().copied());
    let header_len = 20 + options.len();
    ip[0] = 0x40 | (header_len / 4) as u8;
    let total = ip.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = reference_checksum(&ip[..header_len]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

#[test]
fn source_routed_ipv4_is_dropped_before_routing_other_options_are_forwarded_unchanged() {
    let mut f = forwarder();
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    let send = |f: &mut Forwarder, packet: &[u8]| {
        f.process(&mut eth(ROUTER, A, None, 0x0800, packet), 0, T0)
    };
    let host = [10, 0, 10, 5];
    // NOP + LSRR with one hop; SSRR with one hop + End of Options List (RFC 791 3.1).
    let lsrr = [1, 131, 7, 4, 10, 2, 0, 9];
    let ssrr = [137, 7, 4, 10, 2, 0, 9, 0];
    for options in [&lsrr, &ssrr] {
        let drop = Verdict::Drop(DropReason::SourceRouteOption);
        // To a nexthop route, with no route (no ICMP error), with TTL 1 (no Time Exceeded),
        // to a blackhole, and to the switch itself (Linux drops those on input too: not
        // punted).
        for (dst, ttl) in [
            ([10, 2, 0, 1], 64),
            ([192, 168, 1, 1], 64),
            ([10, 2, 0, 1], 1),
            ([10, 9, 0, 1], 64),
            ([10, 0, 10, 1], 64),
            ([10, 255, 0, 1], 1),
        ] {
            let packet = ipv4_with_options(host, dst, ttl, options);
            assert_eq!(
                send(&mut f, &packet),
                drop,
                "{options:?} to {dst:?} ttl {ttl}"
            );
        }
        // The header checks come first: version, lengths, checksum; then the martian
        // destination.
        let mut bad_sum = ipv4_with_options(host, [10, 2, 0, 1], 64, options);
        bad_sum[22] ^= 0x10; // an option byte
        assert_eq!(
            send(&mut f, &bad_sum),
            Verdict::Drop(DropReason::BadIpv4Checksum)
        );
        let martian = ipv4_with_options(host, [127, 0, 0, 1], 64, options);
        assert_eq!(
            send(&mut f, &martian),
            Verdict::Drop(DropReason::MartianDestination)
        );
    }
    // Malformed lists: a length below 2, one past the options area, a type without its
    // length byte; and a source route followed by a bad option (the list is checked whole).
    for options in [
        &[7, 1, 0, 0][..],
        &[68, 12, 5, 0][..],
        &[1, 1, 1, 7][..],
        &[137, 7, 4, 10, 2, 0, 9, 148][..],
    ] {
        let packet = ipv4_with_options(host, [10, 2, 0, 1], 64, options);
        assert_eq!(
            send(&mut f, &packet),
            Verdict::Drop(DropReason::BadIpv4Header),
            "{options:?}"
        );
    }
    // Record Route (a free slot), Timestamp, Router Alert, NOPs, End, and bytes after End
    // that would be an LSRR: routed, options untouched; TTL - 1 and the checksum updated as
    // RFC 1624 eqn. 3 has it: HC' = ~(~HC + ~m + m') over the TTL/protocol word.
    for options in [
        &[7, 7, 4, 0, 0, 0, 0, 0][..],
        &[68, 12, 5, 0, 0, 0, 0, 1, 0, 0, 0, 2][..],
        &[148, 4, 0, 0][..],
        &[1, 1, 1, 1][..],
        &[0, 131, 7, 4][..],
    ] {
        let packet = ipv4_with_options(host, [10, 2, 0, 1], 64, options);
        let frame = eth(ROUTER, A, None, 0x0800, &packet);
        let mut routed = frame.clone();
        assert_eq!(
            f.process(&mut routed, 0, T0),
            Verdict::Forward {
                port: 5,
                tag: TagOp::Keep
            },
            "{options:?}"
        );
        let mut want = frame.clone();
        want[0..6].copy_from_slice(&SPINE1);
        want[6..12].copy_from_slice(&ROUTER);
        want[14 + 8] = 63;
        let fold = |mut sum: u32| {
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            sum as u16
        };
        let old_csum = u16::from_be_bytes([frame[24], frame[25]]);
        let (old_word, new_word) = (u16::from_be_bytes([64, 17]), u16::from_be_bytes([63, 17]));
        let new_csum = !fold(u32::from(!old_csum) + u32::from(!old_word) + u32::from(new_word));
        want[24..26].copy_from_slice(&new_csum.to_be_bytes());
        assert_eq!(routed, want, "{options:?}");
        let header_len = 20 + options.len();
        assert_eq!(reference_checksum(&routed[14..14 + header_len]), 0);
    }
}

#[test]
fn arp_and_neighbor_discovery_for_the_switch_are_punted_others_flooded() {
    let mut f = forwarder();
    let mut for_gateway = eth(
        BCAST,
        A,
        None,
        0x0806,
        &arp_request(A, [10, 0, 10, 5], [10, 0, 10, 1]),
    );
    assert_eq!(
        f.process(&mut for_gateway, 0, T0),
        Verdict::Punt {
            reason: PuntReason::Arp,
            interface: 2
        }
    );
    let mut for_host = eth(
        BCAST,
        A,
        None,
        0x0806,
        &arp_request(A, [10, 0, 10, 5], [10, 0, 10, 9]),
    );
    assert_eq!(
        f.process(&mut for_host, 0, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
    // ARP reply to the router MAC.
    let mut reply = eth(
        ROUTER,
        A,
        None,
        0x0806,
        &arp_request(A, [10, 0, 10, 5], [10, 0, 10, 1]),
    );
    assert_eq!(
        f.process(&mut reply, 0, T0),
        Verdict::Punt {
            reason: PuntReason::Arp,
            interface: 2
        }
    );
    // ARP for the routed port's address.
    let mut on_uplink = eth(
        BCAST,
        SPINE1,
        None,
        0x0806,
        &arp_request(SPINE1, [10, 255, 0, 0], [10, 255, 0, 1]),
    );
    assert_eq!(
        f.process(&mut on_uplink, 5, T0),
        Verdict::Punt {
            reason: PuntReason::Arp,
            interface: 0
        }
    );
    let solicited = [0x33, 0x33, 0xff, 0, 0, 1];
    let ns = ipv6(
        "2001:db8:10::5",
        "ff02::1:ff00:1",
        255,
        58,
        &neighbor_solicit("2001:db8:10::1"),
    );
    assert_eq!(
        f.process(&mut eth(solicited, A, None, 0x86dd, &ns), 0, T0),
        Verdict::Punt {
            reason: PuntReason::NeighborDiscovery,
            interface: 2
        }
    );
    let ns_other = ipv6(
        "2001:db8:10::5",
        "ff02::1:ff00:9",
        255,
        58,
        &neighbor_solicit("2001:db8:10::9"),
    );
    assert_eq!(
        f.process(&mut eth(solicited, A, None, 0x86dd, &ns_other), 0, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
}

#[test]
fn ipv6_routing_decrements_hop_limit_and_refuses_link_local() {
    let mut f = forwarder();
    f.neighbor_resolved(0, "2001:db8:ff::".parse().unwrap(), SPINE1);
    let packet = ipv6(
        "2001:db8:10::5",
        "2001:db8:b::7",
        64,
        17,
        &[0, 1, 0, 2, 0, 8, 0, 0],
    );
    let frame = eth(ROUTER, A, None, 0x86dd, &packet);
    let mut routed = frame.clone();
    assert_eq!(
        f.process(&mut routed, 0, T0),
        Verdict::Forward {
            port: 5,
            tag: TagOp::Keep
        }
    );
    let mut expected = frame.clone();
    expected[0..6].copy_from_slice(&SPINE1);
    expected[6..12].copy_from_slice(&ROUTER);
    expected[14 + 7] = 63;
    assert_eq!(routed, expected);
    let expired = ipv6("2001:db8:10::5", "2001:db8:b::7", 1, 17, &[0; 8]);
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &expired), 0, T0),
        router_error(DropReason::TtlExpired, RouterErrorKind::TimeExceeded, 2)
    );
    let link_local = ipv6("fe80::5", "2001:db8:b::7", 64, 17, &[0; 8]);
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &link_local), 0, T0),
        Verdict::Drop(DropReason::LinkLocal)
    );
    let no_route = ipv6("2001:db8:10::5", "2001:db9::1", 64, 17, &[0; 8]);
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &no_route), 0, T0),
        router_error(DropReason::NoRoute, RouterErrorKind::NoRoute, 2)
    );
    let mut truncated = ipv6("2001:db8:10::5", "2001:db8:b::7", 64, 17, &[0; 8]);
    truncated[5] = 200;
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &truncated), 0, T0),
        Verdict::Drop(DropReason::Truncated)
    );
    let to_me = ipv6(
        "2001:db8:10::5",
        "2001:db8:10::1",
        64,
        58,
        &[128, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &to_me), 0, T0),
        Verdict::Punt {
            reason: PuntReason::Local,
            interface: 2
        }
    );
}

#[test]
fn ipv4_mapped_sources_are_martian_ipv4_mapped_destinations_are_routed() {
    // RFC 4291 2.5.5.2: ::ffff:0:0/96 addresses are not used on the wire; Linux drops an IPv6
    // packet from one on input (ip6_rcv_core: ipv6_addr_v4mapped(&hdr->saddr)), and routes
    // one to such a destination by its FIB like any other (ipv6_addr_type gives it no
    // multicast, loopback or link-local bit). A route covers ::ffff:0:0/96 here.
    let mut spec = leaf_spec();
    spec.routes.push(RouteSpec {
        vrf: 0,
        prefix: "::ffff:0:0".parse().unwrap(),
        len: 96,
        target: RouteTarget::Nexthop(2),
    });
    let mut f = Forwarder::new(&spec).unwrap();
    f.neighbor_resolved(0, "2001:db8:ff::".parse().unwrap(), SPINE1);
    let send = |f: &mut Forwarder, src: &str, dst: &str| {
        let packet = ipv6(src, dst, 64, 17, &[0, 1, 0, 2, 0, 8, 0, 0]);
        f.process(&mut eth(ROUTER, A, None, 0x86dd, &packet), 0, T0)
    };
    let martian = Verdict::Drop(DropReason::MartianSource);
    let forward = Verdict::Forward {
        port: 5,
        tag: TagOp::Keep,
    };
    for src in [
        "::ffff:10.0.10.5",
        "::ffff:0.0.0.0",
        "::ffff:255.255.255.255",
    ] {
        for dst in ["2001:db8:b::7", "::ffff:10.1.2.3"] {
            assert_eq!(send(&mut f, src, dst), martian, "{src} to {dst}");
        }
    }
    // Next to the block, and IPv4-compatible (::/96, deprecated but not refused by Linux).
    for src in [
        "::fffe:ffff:ffff",
        "::1:0:0:0",
        "::10.0.10.5",
        "2001:db8:10::5",
    ] {
        assert_eq!(send(&mut f, src, "2001:db8:b::7"), forward, "{src}");
    }
    for dst in [
        "::ffff:10.1.2.3",
        "::ffff:0.0.0.0",
        "::ffff:255.255.255.255",
    ] {
        assert_eq!(send(&mut f, "2001:db8:10::5", dst), forward, "to {dst}");
    }
}

#[test]
fn ecmp_keeps_flows_on_one_member_and_moves_only_the_lost_members_flows() {
    let mut f = forwarder();
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    f.neighbor_resolved(1, "10.255.0.2".parse().unwrap(), SPINE2);
    let flow = |f: &mut Forwarder, sport: u16| {
        let packet = ipv4([10, 0, 10, 5], [10, 1, 0, 9], 64, 17, sport, 4791);
        match f.process(&mut eth(ROUTER, A, None, 0x0800, &packet), 0, T0) {
            Verdict::Forward { port, .. } => port,
            other => panic!("flow {sport}: {other:?}"),
        }
    };
    let flows = 2000u16;
    let before: HashMap<u16, u16> = (0..flows).map(|s| (s, flow(&mut f, s))).collect();
    for s in 0..flows {
        assert_eq!(
            flow(&mut f, s),
            before[&s],
            "flow {s} must stay on its member"
        );
    }
    // Equal weights: each member's share is binomial(2000, 1/2) around the bucket shares;
    // 5 standard deviations (sqrt(2000/4) = 22.4) is a tolerance that fails only on a real skew.
    let on5 = before.values().filter(|&&p| p == 5).count() as f64;
    assert!(
        (on5 - 1000.0).abs() < 5.0 * 22.4 + 2000.0 / 256.0,
        "member share {on5}"
    );
    f.set_port_up(5, false);
    for s in 0..flows {
        let now = flow(&mut f, s);
        assert_eq!(now, 6, "flow {s} must leave the down member");
    }
    f.set_port_up(5, true);
    let after: HashMap<u16, u16> = (0..flows).map(|s| (s, flow(&mut f, s))).collect();
    // On recovery flows only move to the returning member, which gets its share back.
    assert!(after.values().all(|&p| p == 5 || p == 6));
    let back = after.values().filter(|&&p| p == 5).count() as f64;
    assert!(
        (back - 1000.0).abs() < 5.0 * 22.4 + 2000.0 / 256.0,
        "share after recovery {back}"
    );
}

#[test]
fn losing_one_of_three_members_moves_only_its_flows() {
    let mut spec = leaf_spec();
    spec.ports.push(PortRole::Routed { interface: 4 });
    spec.interfaces.push(InterfaceSpec {
        vrf: 0,
        attachment: Attachment::Port(7),
        ipv4: vec![(Ipv4Addr::new(10, 255, 0, 5), 31)],
        ipv6: vec![],
    });
    spec.nexthops.push(NexthopSpec {
        interface: 4,
        ip: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 4)),
    });
    spec.groups[0].members.push((3, 1));
    let mut f = Forwarder::new(&spec).unwrap();
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    f.neighbor_resolved(1, "10.255.0.2".parse().unwrap(), SPINE2);
    f.neighbor_resolved(4, "10.255.0.4".parse().unwrap(), C);
    let member = |f: &mut Forwarder, sport: u16| {
        let packet = ipv4([10, 0, 10, 5], [10, 1, 0, 9], 64, 6, sport, 80);
        match f.process(&mut eth(ROUTER, A, None, 0x0800, &packet), 0, T0) {
            Verdict::Forward { port, .. } => port,
            other => panic!("flow {sport}: {other:?}"),
        }
    };
    let before: Vec<u16> = (0..3000).map(|s| member(&mut f, s)).collect();
    for port in [5, 6, 7] {
        assert!(
            before.iter().filter(|&&p| p == port).count() > 800,
            "every member carries flows"
        );
    }
    f.set_port_up(6, false);
    for (s, &was) in before.iter().enumerate() {
        let now = member(&mut f, s as u16);
        if was == 6 {
            assert_ne!(now, 6, "flow {s} must leave the down member");
        } else {
            assert_eq!(
                now, was,
                "flow {s} was not on the lost member and must not move"
            );
        }
    }
}

#[test]
fn bad_specs_are_refused_with_a_reason() {
    let mut spec = leaf_spec();
    spec.groups[0].members.push((9, 1));
    assert!(Forwarder::new(&spec).unwrap_err().0.contains("nexthop 9"));
    let mut spec = leaf_spec();
    spec.ports[0] = PortRole::Access { vlan: 4095 };
    assert!(Forwarder::new(&spec).unwrap_err().0.contains("4095"));
    let mut spec = leaf_spec();
    spec.routes.push(RouteSpec {
        vrf: 3,
        prefix: "10.0.0.0".parse().unwrap(),
        len: 8,
        target: RouteTarget::Blackhole,
    });
    assert!(Forwarder::new(&spec).unwrap_err().0.contains("VRF 3"));
}

#[test]
fn a_flowlet_group_keeps_flows_within_the_timeout_and_leaves_a_down_port_at_once() {
    use crate::clock::PICOS_PER_MICRO;
    use crate::tables::flowlet::{BalanceMode, BalanceSpec, PathChoice};
    let mut spec = leaf_spec();
    spec.groups[0].balance = BalanceSpec {
        mode: BalanceMode::Flowlet,
        choice: PathChoice::Random,
        timeout: 100 * PICOS_PER_MICRO,
        table_size: 1 << 16,
        avoid_ecn: false,
    };
    let mut f = Forwarder::new(&spec).expect("valid spec");
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    f.neighbor_resolved(1, "10.255.0.2".parse().unwrap(), SPINE2);
    let send = |f: &mut Forwarder, sport: u16, now: u64| {
        let packet = ipv4([10, 0, 10, 5], [10, 1, 0, 9], 64, 17, sport, 4791);
        let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
        match f.process(&mut frame, 0, now) {
            Verdict::Forward { port, .. } => {
                let spine = if port == 5 { SPINE1 } else { SPINE2 };
                assert_eq!(frame[0..6], spine, "rewritten to the chosen member's MAC");
                port
            }
            other => panic!("flow {sport}: {other:?}"),
        }
    };
    let flows = 200u16;
    let first: Vec<u16> = (0..flows).map(|s| send(&mut f, s, T0)).collect();
    assert!(first.contains(&5) && first.contains(&6));
    // 100 us later (= the timeout): the same flowlets, the same members.
    let t1 = T0 + 100 * PICOS_PER_MICRO;
    for s in 0..flows {
        assert_eq!(send(&mut f, s, t1), first[usize::from(s)], "flow {s}");
    }
    // Flows sharing a flowlet entry share a flowlet: count entries (the flow hash itself is
    // checked against its reference construction in tables::flowhash).
    let slot = |sport: u16| {
        let key = crate::tables::flowhash::FlowKey::V4 {
            src: [10, 0, 10, 5],
            dst: [10, 1, 0, 9],
            proto: 17,
            sport,
            dport: 4791,
        };
        crate::tables::flowhash::flow_hash(&key, spec.flow_hash_seed) & 0xffff
    };
    let entries = |on: &dyn Fn(u16) -> bool| {
        let mut slots: Vec<u32> = (0..flows).filter(|&s| on(s)).map(slot).collect();
        slots.sort_unstable();
        slots.dedup();
        slots.len() as u64
    };
    let all_entries = entries(&|_| true);
    let counters = f.balance_counters();
    assert_eq!(counters[0].flowlets.get(), all_entries);
    assert_eq!(counters[0].moves.get(), 0);
    let sent: u64 = counters[0].member_packets().iter().sum();
    assert_eq!(sent, 2 * u64::from(flows));
    // Port 5 goes down: its flows move with their next packet, 1 us later.
    f.set_port_up(5, false);
    let on5 = entries(&|s| first[usize::from(s)] == 5);
    for s in 0..flows {
        assert_eq!(send(&mut f, s, t1 + PICOS_PER_MICRO), 6, "flow {s}");
    }
    assert_eq!(counters[0].forced_moves.get(), on5);
    assert_eq!(counters[0].moves.get(), on5);
    assert_eq!(counters[0].flowlets.get(), all_entries + on5);
}

/// One frame's outcome: its verdict, its window afterwards (SRv6 shrinks and moves frames)
/// and its bytes.
type Outcome = (Verdict, (usize, usize), Vec<u8>);

/// A frame through the full pipeline, alone.
fn through_pipeline(f: &mut Forwarder, frame: &[u8], in_port: u16, now: u64) -> Outcome {
    let mut bytes = frame.to_vec();
    let mut window = Frame::whole(&mut bytes);
    let verdict = f.process_frame(&mut window, in_port, now);
    let window = (window.start(), window.end());
    (verdict, window, bytes)
}

/// Which of pass 3's loops the engine takes for an express frame's burst.
#[derive(Clone, Copy)]
enum Pass3 {
    /// `route_lane`, for any burst.
    Any,
    /// `lane_plain_nexthop` and `route_lane_to`, for a burst of `lane_plain_family`.
    Plain { ipv6: bool },
    /// `route_lane_endpoint`, for a burst of `lane_all_endpoints`.
    Endpoints,
}

/// Frame `index` of the lane's burst through pass 3 as the engine takes an express frame
/// (its verdict rebuilt from the port the lane returns).
fn through_pass_3(
    f: &mut Forwarder,
    lane: &ExpressLane,
    index: usize,
    frame: &[u8],
    now: u64,
    way: Pass3,
) -> Outcome {
    let mut bytes = frame.to_vec();
    let port = match way {
        Pass3::Any => f.route_lane(lane, index, &mut bytes, now),
        Pass3::Plain { ipv6 } => {
            let nexthop = f.lane_plain_nexthop(lane, index, &bytes, ipv6);
            f.route_lane_to(lane, index, &mut bytes, nexthop, ipv6, now)
        }
        Pass3::Endpoints => f.route_lane_endpoint(lane, index, &mut bytes, now),
    };
    let verdict = match port {
        LANE_OTHER => f.lane_verdict(),
        port => Verdict::Forward {
            port,
            tag: TagOp::Keep,
        },
    };
    (verdict, (0, frame.len()), bytes)
}

/// Each ECMP group of `a` counted the packets and bytes of each member that `b`'s did, and
/// the same flowlets, moves and forced moves.
fn assert_same_member_counts(a: &Forwarder, b: &Forwarder) {
    for (x, y) in a.balance_counters().iter().zip(b.balance_counters()) {
        assert_eq!(x.member_packets(), y.member_packets(), "member packets");
        assert_eq!(x.member_bytes(), y.member_bytes(), "member bytes");
        assert_eq!(x.flowlets.get(), y.flowlets.get(), "flowlets");
        assert_eq!(x.moves.get(), y.moves.get(), "moves");
        assert_eq!(x.forced_moves.get(), y.forced_moves.get(), "forced moves");
    }
}

/// The table of classes the lane tests hand the lane: the class selector (the DSCP's top
/// three bits), so that every class byte position shows.
const LANE_CLASSES: [u8; 64] = {
    let mut classes = [0; 64];
    let mut dscp = 0;
    while dscp < 64 {
        classes[dscp] = (dscp >> 3) as u8;
        dscp += 1;
    }
    classes
};

/// The DSCP of an untagged IPv4 or IPv6 frame, from the bytes a frame walk reads.
fn dscp_of(frame: &[u8]) -> usize {
    let traffic_class = if frame[12..14] == [0x86, 0xdd] {
        frame[14] << 4 | frame[15] >> 4
    } else {
        frame[15]
    };
    usize::from(traffic_class >> 2)
}

/// A burst received on `in_port` at `now` through the express lane as the engine takes it:
/// the lane's passes over the burst, then each frame in burst order, an express one through
/// `route_lane`, any other through the full pipeline. Returns each frame's outcome and the
/// lane's express frames.
fn through_lane(
    f: &mut Forwarder,
    lane: &mut ExpressLane,
    burst: &[Vec<u8>],
    in_port: u16,
    now: u64,
) -> (Vec<Outcome>, u64) {
    let views: Vec<&[u8]> = burst.iter().map(Vec::as_slice).collect();
    let express = match f.lane_vrf(in_port) {
        Some(vrf) => f.stage_lane(lane, &views, vrf, &LANE_CLASSES, now),
        None => {
            lane.clear();
            0
        }
    };
    // A burst of one flow to one nexthop: the engine takes `route_one_flow` for each frame,
    // which must do what `route_lane` does.
    let one_flow = f.lane_one_flow_egress(lane);
    let whole_burst = u64::MAX >> (64 - burst.len().clamp(1, 64));
    if one_flow.is_some() {
        assert_eq!(express, whole_burst, "one flow: all express");
    }
    // Any other burst whose every frame is express, of one family and with each nexthop
    // found in pass 2: the engine takes `lane_plain_nexthop` and `route_lane_to`, which must
    // decide as `route_lane` does.
    let way = match f.lane_plain_family(lane) {
        Some(ipv6) if express == whole_burst && one_flow.is_none() => Pass3::Plain { ipv6 },
        // And a whole-express burst of endpoints alone takes `route_lane_endpoint`.
        None if express == whole_burst && f.lane_all_endpoints(lane) => Pass3::Endpoints,
        _ => Pass3::Any,
    };
    let outcomes = burst
        .iter()
        .enumerate()
        .map(|(index, frame)| {
            if express >> index & 1 != 0 {
                assert_eq!(
                    lane.class(index),
                    LANE_CLASSES[dscp_of(frame)],
                    "frame {index}"
                );
                let outcome = through_pass_3(f, lane, index, frame, now, way);
                if let Some((port, addresses)) = one_flow {
                    let mut bytes = frame.to_vec();
                    crate::pipeline::route_one_flow(&mut bytes, &addresses);
                    let forward = Verdict::Forward {
                        port,
                        tag: TagOp::Keep,
                    };
                    assert_eq!(outcome, (forward, (0, frame.len()), bytes), "frame {index}");
                }
                outcome
            } else {
                through_pipeline(f, frame, in_port, now)
            }
        })
        .collect();
    (outcomes, express)
}

/// Two forwarders on the leaf spec (one for the path under test, one for the full pipeline)
/// and the leaf's routed uplink.
fn leaf_pair() -> (Forwarder, Forwarder, u16) {
    let spec = leaf_spec();
    let uplink = spec
        .ports
        .iter()
        .position(|r| matches!(r, crate::pipeline::spec::PortRole::Routed { .. }))
        .expect("the leaf has a routed uplink") as u16;
    let (lane_side, plain) = forwarder_pair(&spec);
    (lane_side, plain, uplink)
}

/// Both forwarders know the MACs of the two spines (the uplinks' /31 peers 10.255.0.0 and
/// 10.255.0.2), so routes through them resolve.
fn resolve_spines(pair: [&mut Forwarder; 2]) {
    for f in pair {
        f.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
        f.neighbor_resolved(1, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2)), SPINE2);
    }
}

/// Two forwarders on `spec`: one for the path under test, one for the full pipeline.
fn forwarder_pair(spec: &SwitchSpec) -> (Forwarder, Forwarder) {
    (Forwarder::new(spec).unwrap(), Forwarder::new(spec).unwrap())
}

#[test]
fn the_lane_takes_plain_routed_ipv4_and_routes_it_as_the_pipeline_does() {
    let (mut lane_side, mut plain, uplink) = leaf_pair();
    resolve_spines([&mut lane_side, &mut plain]);
    // 10.1.0.0/16 goes to ECMP group 0, 10.2.0.0/16 to a single nexthop.
    let to = |third: u8, second: u8| {
        eth(
            ROUTER,
            SPINE1,
            None,
            0x0800,
            &ipv4(
                [10, 0, 10, 5],
                [10, second, third, 3],
                64,
                17,
                1234 + u16::from(third),
                4791,
            ),
        )
    };
    let mut lane = ExpressLane::default();
    let mut cases: Vec<(Vec<u8>, bool, &str)> = (0..8)
        .flat_map(|third| {
            [
                (to(third, 1), true, "to the group"),
                (to(third, 2), true, "to a nexthop"),
            ]
        })
        .collect();
    let mut bridged = to(0, 1);
    bridged[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x77]);
    cases.push((bridged, false, "not to the router MAC"));
    let mut arp = to(0, 1);
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    cases.push((arp, false, "ARP"));
    cases.push((to(0, 1)[..20].to_vec(), false, "a short frame"));
    let mut bad_ihl = to(0, 1);
    bad_ihl[14] = 0x4f;
    cases.push((bad_ihl, false, "a header beyond the frame"));
    let mut no_route = to(0, 1);
    no_route[31] = 77;
    no_route[24..26].copy_from_slice(&[0, 0]);
    let c = reference_checksum(&no_route[14..34]);
    no_route[24..26].copy_from_slice(&c.to_be_bytes());
    cases.push((no_route, false, "no route"));
    let burst: Vec<Vec<u8>> = cases.iter().map(|(f, _, _)| f.clone()).collect();
    let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
    for (index, (frame, want_express, what)) in cases.iter().enumerate() {
        assert_eq!(express >> index & 1 != 0, *want_express, "{what}");
        assert_eq!(
            outcomes[index],
            through_pipeline(&mut plain, frame, uplink, T0),
            "{what}"
        );
    }
    assert_same_member_counts(&lane_side, &plain);
}

#[test]
fn a_burst_takes_pass_3s_plain_or_endpoint_loop_only_when_every_frame_fits_it() {
    // Pass 3's plain path decrements the TTL or the hop limit by the burst's family, so the
    // engine takes it only for a burst of one family whose nexthops pass 2 found; a burst of
    // both families, or one with a member to choose in turn, takes `route_lane`. Its
    // endpoint loop applies each frame's SRv6 step, so it takes only bursts of endpoints.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let uplink = 5u16;
    let v4 = |second: u8, third: u8| {
        let ip = ipv4([10, 0, 10, 5], [10, second, third, 3], 64, 17, 1000, 4791);
        eth(ROUTER, SPINE1, None, 0x0800, &ip)
    };
    let v6 = |group: u16| {
        let dst = format!("2001:db8:e:{group:x}::1");
        let ip = ipv6(
            "2001:db8:10::5",
            &dst,
            64,
            17,
            &[0x03, 0xe8, 0x12, 0xb7, 0, 8, 0, 0],
        );
        eth(ROUTER, SPINE1, None, 0x86dd, &ip)
    };
    let ipv4_only: Vec<Vec<u8>> = (0..6u8).map(|i| v4(1 + i % 2, i)).collect();
    let ipv6_only: Vec<Vec<u8>> = (0..6u16).map(|i| v6(i * 77)).collect();
    let both: Vec<Vec<u8>> = (0..6u8)
        .map(|i| {
            if i % 2 == 0 {
                v4(1, i)
            } else {
                v6(u16::from(i))
            }
        })
        .collect();
    let (led_by_v6, chosen_in_turn) = {
        let mut led = both.clone();
        led.rotate_left(1);
        let mut in_turn = ipv4_only.clone();
        // 10.5.0.0/16: a group choosing per packet. (A random flowlet group's frames of such
        // a burst are placed in pass 2: see the next test.)
        in_turn[3] = v4(5, 9);
        (led, in_turn)
    };
    // uN SID fcbb:bb00:100::/48, whose next uSID (0x200) is routed to group 0.
    let to_sid = |flow: u16| {
        let ports = [(flow >> 8) as u8, flow as u8, 0x12, 0xb7, 0, 8, 0, 0];
        let ip = ipv6("2001:db8:10::5", "fcbb:bb00:100:200::", 64, 17, &ports);
        eth(ROUTER, SPINE1, None, 0x86dd, &ip)
    };
    let endpoints: Vec<Vec<u8>> = (0..6u16).map(to_sid).collect();
    let mut endpoints_and_ipv6 = endpoints.clone();
    endpoints_and_ipv6[2] = v6(5);
    let mut lane = ExpressLane::default();
    for (burst, family, all_endpoints, what) in [
        (&ipv4_only, Some(false), false, "IPv4 alone"),
        (&ipv6_only, Some(true), false, "IPv6 alone"),
        (&both, None, false, "both families, IPv4 first"),
        (&led_by_v6, None, false, "both families, IPv6 first"),
        (&chosen_in_turn, None, false, "a member chosen in turn"),
        (&endpoints, None, true, "uN endpoints alone"),
        (
            &endpoints_and_ipv6,
            None,
            false,
            "uN endpoints and an IPv6 frame",
        ),
    ] {
        // (The per-packet group's member may be 10.0.10.7, whose MAC no one resolved: both
        // sides drop that frame as unresolved.)
        let forwards_all = !what.starts_with("a member");
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, burst, uplink, T0);
        assert_eq!(express, (1 << burst.len()) - 1, "{what}: all express");
        assert_eq!(lane_side.lane_plain_family(&lane), family, "{what}");
        assert_eq!(lane_side.lane_all_endpoints(&lane), all_endpoints, "{what}");
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, T0);
            let forwarded = matches!(want.0, Verdict::Forward { .. });
            assert!(
                forwarded || !forwards_all,
                "{what}: frame {index} forwarded"
            );
            assert_eq!(outcomes[index], want, "{what} frame {index}");
        }
    }
    assert_same_member_counts(&lane_side, &plain);
}

/// `staging_spec` with group 0 (10.1.0.0/16, the two spines) balanced by flowlets that
/// choose by `choice`.
fn flowlet_staging_spec(choice: crate::tables::flowlet::PathChoice) -> SwitchSpec {
    use crate::tables::flowlet::{BalanceMode, BalanceSpec};
    let mut spec = staging_spec();
    spec.groups[0].balance = BalanceSpec {
        mode: BalanceMode::Flowlet,
        choice,
        ..Default::default()
    };
    spec
}

/// A UDP frame from spine 1 to the router, 10.0.10.5 port `sport` to 10.`net`.0.9 port 4791;
/// `with_option`: with a header option (one word of NOPs), which the express lane leaves to
/// the full pipeline.
fn from_uplink(net: u8, sport: u16, with_option: bool) -> Vec<u8> {
    let ip = ipv4([10, 0, 10, 5], [10, net, 0, 9], 64, 17, sport, 4791);
    let ip = if with_option {
        with_ipv4_options(ip, &[1, 1, 1, 1])
    } else {
        ip
    };
    eth(ROUTER, SPINE1, None, 0x0800, &ip)
}

#[test]
fn random_flowlets_are_chosen_in_pass_2_up_to_the_first_frame_the_full_pipeline_takes() {
    // A random flowlet choice reads and writes only the flowlet table and counters, so the
    // lane makes it in pass 2 (and pass 3 takes its plain way) for the frames before the
    // first one that takes the full pipeline; from that frame on, in turn, so that the
    // choices keep the burst's order. Two flows that share a flowlet entry and, alone, would
    // start their flowlets on different members show the order: whichever frame reaches the
    // entry first decides where both go. What each frame gets comes from the full pipeline
    // (the other forwarder of each pair), and is checked against that rule too.
    // 10.1.0.0/16 goes to group 0: the two spines, behind routed ports 5 and 6.
    let spec = flowlet_staging_spec(crate::tables::flowlet::PathChoice::Random);
    let uplink = 5u16;
    let flow = |sport: u16| from_uplink(1, sport, false);
    // The same flow with a header option: it takes the full pipeline.
    let with_option = |sport: u16| from_uplink(1, sport, true);
    let pair = || {
        let (mut a, mut b) = forwarder_pair(&spec);
        resolve_spines([&mut a, &mut b]);
        (a, b)
    };
    let flowlets = |f: &Forwarder| f.balance_counters()[0].flowlets.get();
    let port_of = |outcome: &Outcome| match outcome.0 {
        Verdict::Forward { port, .. } => port,
        verdict => panic!("not forwarded: {verdict:?}"),
    };
    // Flow B shares flow A's entry when, a second after anything else, A's frame and then
    // B's start one flowlet between them.
    let a = 1000u16;
    let (mut finder, _) = pair();
    let mut sharing = (a + 1..u16::MAX).filter(|&b| {
        let now = T0 + u64::from(b) * PICOS_PER_SECOND;
        let before = flowlets(&finder);
        through_pipeline(&mut finder, &flow(a), uplink, now);
        through_pipeline(&mut finder, &flow(b), uplink, now);
        flowlets(&finder) == before + 1
    });
    // ... and at an instant when, alone, the two would start on different members.
    let alone =
        |sport: u16, now: u64| port_of(&through_pipeline(&mut pair().1, &flow(sport), uplink, now));
    let (b, now) = sharing
        .find_map(|b| {
            (0..8)
                .map(|k| T0 + k * PICOS_PER_SECOND)
                .find(|&now| alone(a, now) != alone(b, now))
                .map(|now| (b, now))
        })
        .expect("two flows that share an entry and start apart");
    let (on_a, on_b) = (alone(a, now), alone(b, now));
    let mut lane = ExpressLane::default();
    for (burst, first, placed_ahead, what) in [
        (vec![flow(b), flow(a)], on_b, true, "both express"),
        (
            vec![with_option(a), flow(b)],
            on_a,
            false,
            "A takes the full pipeline",
        ),
        (
            vec![flow(b), with_option(a), flow(a)],
            on_b,
            false,
            "B placed ahead, A's later frame in turn",
        ),
        (
            vec![flow(a), flow(a), flow(b), flow(a)],
            on_a,
            true,
            "A repeated",
        ),
        (vec![flow(b); 4], on_b, true, "one flow"),
    ] {
        let (mut lane_side, mut plain) = pair();
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, now);
        let candidates = burst.iter().map(|f| f[14] == 0x45);
        let expected: u64 = candidates.rev().fold(0, |bits, c| bits << 1 | u64::from(c));
        assert_eq!(express, expected, "{what}: express frames");
        // Pass 2 found every frame's nexthop (no member left to choose in turn) exactly when
        // every frame was placed ahead.
        assert_eq!(
            lane_side.lane_plain_family(&lane).is_some(),
            placed_ahead,
            "{what}"
        );
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, now);
            assert_eq!(outcomes[index], want, "{what}: frame {index}");
            assert_eq!(
                port_of(&want),
                first,
                "{what}: frame {index} follows the first"
            );
        }
        assert_eq!(flowlets(&plain), 1, "{what}");
        assert_same_member_counts(&lane_side, &plain);
        // A second later both flows start new flowlets (a move for either is counted).
        let later = now + PICOS_PER_SECOND;
        let (outcomes, _) = through_lane(&mut lane_side, &mut lane, &burst, uplink, later);
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, later);
            assert_eq!(outcomes[index], want, "{what}, later: frame {index}");
        }
        assert_same_member_counts(&lane_side, &plain);
    }
    // With only the other spine's MAC known, B's choice made ahead is taken back and B takes
    // the full pipeline (which finds the same member, unresolved): A's choice after it is
    // made in turn, and goes on in the flowlet B started.
    let half_resolved = || {
        let (mut a, mut b) = forwarder_pair(&spec);
        for f in [&mut a, &mut b] {
            let spine = if on_b == 5 {
                (1, Ipv4Addr::new(10, 255, 0, 2), SPINE2)
            } else {
                (0, Ipv4Addr::new(10, 255, 0, 0), SPINE1)
            };
            f.neighbor_resolved(spine.0, IpAddr::V4(spine.1), spine.2);
        }
        (a, b)
    };
    let (mut lane_side, mut plain) = half_resolved();
    let burst = [flow(b), flow(a)];
    let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, now);
    assert_eq!(express, 0b10, "B takes the full pipeline");
    assert_eq!(
        lane_side.lane_plain_family(&lane),
        None,
        "A chooses in turn"
    );
    for (index, frame) in burst.iter().enumerate() {
        let want = through_pipeline(&mut plain, frame, uplink, now);
        assert_eq!(
            want.0,
            Verdict::Drop(DropReason::NeighborUnresolved),
            "frame {index}"
        );
        assert_eq!(outcomes[index], want, "half resolved: frame {index}");
    }
    assert_same_member_counts(&lane_side, &plain);
    // A group with an event log chooses in turn, where its moves are logged: the lane logs
    // the moves the full pipeline logs (16 flows, a second apart: some move).
    let mut logging = spec.clone();
    logging.qos.events = true;
    let (mut lane_side, mut plain) = forwarder_pair(&logging);
    resolve_spines([&mut lane_side, &mut plain]);
    let burst: Vec<Vec<u8>> = (2000..2016).map(flow).collect();
    for at in [now, now + PICOS_PER_SECOND] {
        let (outcomes, _) = through_lane(&mut lane_side, &mut lane, &burst, uplink, at);
        assert_eq!(lane_side.lane_plain_family(&lane), None, "chosen in turn");
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, at);
            assert_eq!(outcomes[index], want, "with events: frame {index}");
        }
    }
    let moves = plain.take_flowlet_moves();
    assert!(!moves.is_empty(), "some flow moved");
    assert_eq!(lane_side.take_flowlet_moves(), moves);
    assert_same_member_counts(&lane_side, &plain);
}

#[test]
fn least_loaded_flowlets_are_chosen_in_pass_2_where_the_loads_read_as_in_pass_3() {
    // A least-loaded choice reads the members' loads at the instant's first choice; in pass
    // 3 that comes after the frames before it went to their queues, in pass 2 before any
    // did. So the lane chooses in pass 2 (after its loop) for the burst's first frame, and
    // for later ones (every frame before them express) only at an instant whose loads were
    // read already; the frames of a flow that follow choose too (each counts in the
    // member's load). A burst all of whose members pass 2 found takes pass 3's plain way;
    // what each frame gets, the members' counts and loads are the full pipeline's.
    // 10.1.0.0/16 goes to group 0 (the two spines), 10.2.0.0/16 to spine 1 alone.
    let spec = flowlet_staging_spec(crate::tables::flowlet::PathChoice::LeastLoaded);
    let uplink = 5u16;
    let (group, spine) = (
        |sport| from_uplink(1, sport, false),
        |sport| from_uplink(2, sport, false),
    );
    // A frame of the group with a header option: it takes the full pipeline, which chooses
    // in its turn, so no frame after it is chosen ahead.
    let with_option = |sport: u16| from_uplink(1, sport, true);
    for (burst, placed_ahead, what) in [
        (
            vec![group(1), group(2), group(3), group(4)],
            true,
            "new flows",
        ),
        (
            vec![spine(1), group(1), group(2)],
            false,
            "a frame queued first",
        ),
        (
            vec![group(1), spine(1), group(2)],
            true,
            "a frame queued after the first choice",
        ),
        (
            vec![group(1), group(1), group(2), group(1)],
            true,
            "a flow repeated",
        ),
        (vec![group(7); 4], true, "one flow"),
        (
            vec![group(1), with_option(2), group(3)],
            false,
            "a frame the full pipeline takes",
        ),
    ] {
        let (mut lane_side, mut plain) = forwarder_pair(&spec);
        resolve_spines([&mut lane_side, &mut plain]);
        let mut lane = ExpressLane::default();
        let plain_frames = burst.iter().map(|f| f[14] == 0x45);
        let all_plain = plain_frames.clone().all(|plain| plain);
        let expected: u64 = plain_frames
            .rev()
            .fold(0, |bits, p| bits << 1 | u64::from(p));
        // Then the same burst again at the same instant: its loads were read, so every
        // choice is made in pass 2, up to a frame the full pipeline takes.
        for (round, ahead) in [("first", placed_ahead), ("again", all_plain)] {
            let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
            assert_eq!(express, expected, "{what}, {round}: express frames");
            assert_eq!(
                lane_side.lane_plain_family(&lane).is_some(),
                ahead,
                "{what}, {round}: every member found in pass 2"
            );
            for (index, frame) in burst.iter().enumerate() {
                let want = through_pipeline(&mut plain, frame, uplink, T0);
                assert_eq!(outcomes[index], want, "{what}, {round}: frame {index}");
            }
            assert_same_member_counts(&lane_side, &plain);
            assert_eq!(
                lane_side.balancer_loads(),
                plain.balancer_loads(),
                "{what}, {round}: loads"
            );
        }
    }
    // An IPv6 frame to the group (2001:db8:e::/48) is chosen in turn, so no IPv4 frame after
    // it is chosen ahead, even at an instant whose loads were read.
    let to_group6 = eth(
        ROUTER,
        SPINE1,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", "2001:db8:e::9", 64, 17, &[0; 8]),
    );
    let burst = [group(1), to_group6, group(2)];
    let (mut lane_side, mut plain) = forwarder_pair(&spec);
    resolve_spines([&mut lane_side, &mut plain]);
    let mut lane = ExpressLane::default();
    for round in 0..2 {
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
        assert_eq!(express, 0b111, "round {round}");
        assert_eq!(lane.in_turn(), 0b110, "round {round}: in turn");
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, T0);
            assert_eq!(outcomes[index], want, "round {round}: frame {index}");
        }
        assert_eq!(
            lane_side.balancer_loads(),
            plain.balancer_loads(),
            "round {round}"
        );
    }
}

#[test]
fn a_burst_led_by_a_frame_to_the_all_ones_address_stages_like_any_other() {
    // A unicast frame to the router MAC may carry any destination, 255.255.255.255 too; the
    // lane once took that destination for "no frame looked up yet" and then indexed past a
    // burst shorter than 64 frames.
    let (mut lane_side, mut plain, uplink) = leaf_pair();
    let all_ones = eth(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4([10, 0, 10, 5], [255, 255, 255, 255], 64, 17, 1234, 4791),
    );
    let burst = vec![all_ones.clone(), all_ones];
    let mut lane = ExpressLane::default();
    let (outcomes, _) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
    for (index, frame) in burst.iter().enumerate() {
        assert_eq!(
            outcomes[index],
            through_pipeline(&mut plain, frame, uplink, T0),
            "frame {index}"
        );
    }
}

#[test]
fn a_burst_of_one_flow_is_looked_up_once_and_routes_as_the_pipeline_does() {
    // An elephant flow's burst: every frame of one flow (their TTLs, DSCPs and lengths may
    // differ), to the ECMP group, the single nexthop, a flowlet group, an unresolved
    // nexthop. Every frame routes and counts as through the pipeline; the lane names the
    // burst's one egress exactly when every frame leaves by the express path to one
    // nexthop, and no burst with a second flow has one.
    let (mut lane_side, mut plain) = express_pair();
    let uplink = 6;
    let frame = |dst: [u8; 4], ttl: u8, dscp: u8, extra: usize, sport: u16| {
        let mut ip = ipv4([10, 0, 20, 5], dst, ttl, 17, sport, 4791);
        ip[1] = dscp << 2;
        ip.extend(std::iter::repeat_n(0xab, extra));
        let total = ip.len() as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let c = reference_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        eth(ROUTER, SPINE1, None, 0x0800, &ip)
    };
    let one_flow_to = |dst: [u8; 4]| -> Vec<Vec<u8>> {
        (0..8)
            .map(|i| frame(dst, 2 + 9 * i as u8, (i * 7 % 64) as u8, i * 13, 1000))
            .collect()
    };
    let mut lane = ExpressLane::default();
    let cases: [(&str, Vec<Vec<u8>>, bool); 6] = [
        ("to the ECMP group", one_flow_to([10, 1, 3, 3]), true),
        ("to the single nexthop", one_flow_to([10, 2, 0, 9]), true),
        ("to a flowlet group", one_flow_to([10, 4, 0, 9]), false),
        (
            "to a nexthop not resolved",
            one_flow_to([10, 3, 0, 9]),
            false,
        ),
        ("one frame", one_flow_to([10, 1, 3, 3])[..1].to_vec(), true),
        (
            "a second flow last",
            {
                let mut burst = one_flow_to([10, 1, 3, 3]);
                burst[7] = frame([10, 1, 3, 3], 64, 0, 0, 1001);
                burst
            },
            false,
        ),
    ];
    for resolved in [false, true] {
        if resolved {
            resolve_spines([&mut lane_side, &mut plain]);
        }
        for (what, burst, one_egress) in &cases {
            let (outcomes, _) = through_lane(&mut lane_side, &mut lane, burst, uplink, T0);
            assert_eq!(
                lane_side.lane_one_flow_egress(&lane).is_some(),
                resolved && *one_egress,
                "{what}, resolved: {resolved}"
            );
            for (index, frame) in burst.iter().enumerate() {
                assert_eq!(
                    outcomes[index],
                    through_pipeline(&mut plain, frame, uplink, T0),
                    "{what}, resolved: {resolved}, frame {index}"
                );
            }
        }
    }
    assert_same_member_counts(&lane_side, &plain);
    // A burst the lane cannot stage (a VRF without tables) leaves nothing of the one-flow
    // burst before it.
    let burst = one_flow_to([10, 1, 3, 3]);
    let views: Vec<&[u8]> = burst.iter().map(Vec::as_slice).collect();
    lane_side.stage_lane(&mut lane, &views, 0, &LANE_CLASSES, T0);
    assert!(lane_side.lane_one_flow_egress(&lane).is_some());
    assert_eq!(
        lane_side.stage_lane(&mut lane, &views, 99, &LANE_CLASSES, T0),
        0
    );
    assert_eq!(lane_side.lane_one_flow_egress(&lane), None);
}

#[test]
fn frames_to_one_end_sid_step_by_their_own_srh() {
    // One burst of frames to the End SID, each stepping by the SRH right after its IPv6
    // header or by another shape, next to frames whose SRHs differ in one field: each frame
    // steps by its own SRH (a shortcut that took a step from the frame before would have to
    // hold to this) and gets what the pipeline gives it.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let sid = "2001:db8:5::1";
    let frame = |srh: Vec<u8>, upper_len: usize| {
        let mut payload = srh;
        payload.extend(std::iter::repeat_n(0x5a, upper_len));
        eth(
            ROUTER,
            SPINE1,
            None,
            0x86dd,
            &ipv6("2001:db8:10::5", sid, 64, 43, &payload),
        )
    };
    let srh = super::srv6_tests::srh;
    let (a, b, c, d) = (
        "2001:db8:e::a",
        "2001:db8:e::b",
        "2001:db8:e::c",
        "2001:db8:e::d",
    );
    let burst = vec![
        frame(srh(17, 2, 1, &[b, a]), 8),
        // The same fields, other segments: the step goes to this frame's.
        frame(srh(17, 2, 1, &[d, c]), 8),
        frame(srh(17, 1, 1, &[d, c]), 8),
        frame(srh(17, 0, 1, &[d, c]), 8),
        // An extension header after the SRH: the full walk decides.
        frame(srh(0, 2, 1, &[b, a]), 8),
        frame(srh(17, 2, 1, &[b, a]), 8),
        // Last Entry beyond the list.
        frame(srh(17, 2, 5, &[b, a]), 8),
        frame(srh(17, 2, 1, &[c, d]), 8),
        // Another payload length.
        frame(srh(17, 2, 1, &[a, b]), 24),
        frame(srh(17, 2, 1, &[b, d]), 24),
        // Segments Left beyond Last Entry + 1.
        frame(srh(17, 3, 1, &[b, d]), 24),
        frame(srh(17, 1, 0, &[c]), 24),
    ];
    let mut lane = ExpressLane::default();
    let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, 6, T0);
    let mut forwarded = 0;
    for (index, frame) in burst.iter().enumerate() {
        let want = through_pipeline(&mut plain, frame, 6, T0);
        forwarded += usize::from(matches!(want.0, Verdict::Forward { .. }));
        assert_eq!(outcomes[index], want, "frame {index}");
    }
    assert!(express.count_ones() >= 6, "express: {express:#b}");
    assert!(forwarded >= 7, "{forwarded} forwarded");
}

/// A frame through the leaf from 2001:db8:10::5 to `destination` with `hop_limit`: an SRH
/// (`srv6_tests::srh`), the extension headers `after` it, then 8 bytes of upper layer.
fn srh_frame(destination: &str, hop_limit: u8, srh: Vec<u8>, after: &[u8]) -> Vec<u8> {
    let mut payload = srh;
    payload.extend_from_slice(after);
    payload.extend(std::iter::repeat_n(0x5a, 8));
    eth(
        ROUTER,
        SPINE1,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", destination, hop_limit, 43, &payload),
    )
}

/// `burst` through the lane of `lane_side` (port 6, at `T0`) and each of its frames alone
/// through `plain`'s full pipeline: every frame's outcome must be the pipeline's (`label`
/// names the burst in a failure). Returns the lane's express frames.
fn lane_as_pipeline(
    lane_side: &mut Forwarder,
    plain: &mut Forwarder,
    lane: &mut ExpressLane,
    burst: &[Vec<u8>],
    label: &str,
) -> u64 {
    let (outcomes, express) = through_lane(lane_side, lane, burst, 6, T0);
    for (index, frame) in burst.iter().enumerate() {
        let want = through_pipeline(plain, frame, 6, T0);
        assert_eq!(outcomes[index], want, "{label} frame {index}");
    }
    express
}

#[test]
fn an_end_step_is_taken_from_the_frame_before_only_to_its_destination_and_whole() {
    // Pass 2 takes an End frame's step from the frame before it when both go to one SID
    // address and the SRH memo answers for both with the same segment. A frame with the same
    // SRH to an address that is no SID, and one whose packet is cut short (its Payload
    // Length unchanged: pass 1 turns it away, and the memo would not answer for it), must
    // each get what the pipeline gives it alone.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let srh = super::srv6_tests::srh;
    let (a, b) = ("2001:db8:e::a", "2001:db8:e::b");
    let frame = |destination: &str| srh_frame(destination, 64, srh(17, 2, 1, &[b, a]), &[]);
    let sid = "2001:db8:5::1";
    let mut cut = frame(sid);
    cut.truncate(cut.len() - 4);
    let burst = vec![
        frame(sid),
        frame("2001:db8:e::9"),
        frame(sid),
        cut,
        frame(sid),
    ];
    let mut lane = ExpressLane::default();
    let express = lane_as_pipeline(&mut lane_side, &mut plain, &mut lane, &burst, "End");
    assert_eq!(express, 0b10111, "express: {express:#b}");
    assert_eq!(
        lane.endpoints(),
        0b10101,
        "endpoints: {:#b}",
        lane.endpoints()
    );

    // A PSP SID: the SRH memo holds a frame whose Segments Left is 1 (PSP: not a plain
    // step), then a frame steps by the full walk (a Destination Options header after its
    // SRH) to the segment the memo's frame would go to. The frame after it, like the first,
    // must not take that step.
    let psp_frame = |srh: Vec<u8>, after: &[u8]| srh_frame("2001:db8:6::1", 64, srh, after);
    let destination_options = [17, 0, 1, 4, 0, 0, 0, 0];
    let burst = vec![
        psp_frame(srh(17, 1, 1, &[a, b]), &[]),
        psp_frame(srh(60, 2, 1, &[b, a]), &destination_options),
        psp_frame(srh(17, 1, 1, &[a, b]), &[]),
    ];
    let express = lane_as_pipeline(&mut lane_side, &mut plain, &mut lane, &burst, "PSP");
    assert_eq!(
        lane.endpoints(),
        0b010,
        "PSP endpoints: {:#b} of {express:#b}",
        lane.endpoints()
    );
}

#[test]
fn an_end_run_stops_at_the_first_frame_that_is_not_of_it() {
    // Pass 2 takes the frames after an End frame that took the step of the frame before it
    // in a loop of their own while they match. It must stop at a frame with the same SRH to
    // an address that is no SID, and at the burst's end, whatever the lane's slots still
    // hold from an earlier burst: here slot 0 holds the SID's address (a PSP frame that the
    // lane turned away), and this burst's frame 0, one the lane does not take (hop limit 1),
    // has the run's SRH.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let srh = super::srv6_tests::srh;
    let (a, b) = ("2001:db8:e::a", "2001:db8:e::b");
    let frame = |destination: &str, hop_limit: u8, segments_left: u8| {
        srh_frame(
            destination,
            hop_limit,
            srh(17, segments_left, 1, &[b, a]),
            &[],
        )
    };
    let mut lane = ExpressLane::default();
    let mut check = |burst: &[Vec<u8>], express_want: u64, endpoints_want: u64| {
        let express = lane_as_pipeline(&mut lane_side, &mut plain, &mut lane, burst, "run");
        assert_eq!(express, express_want, "express: {express:#b}");
        assert_eq!(
            lane.endpoints(),
            endpoints_want,
            "endpoints: {:#b}",
            lane.endpoints()
        );
    };
    let (sid, other) = ("2001:db8:5::1", "2001:db8:e::9");
    check(
        &[
            frame(sid, 64, 2),
            frame(sid, 64, 2),
            frame(other, 64, 2),
            frame(sid, 64, 2),
            frame(sid, 64, 2),
        ],
        0b11111,
        0b11011,
    );
    let psp = "2001:db8:6::1";
    check(&[frame(psp, 64, 1)], 0, 0);
    check(
        &[
            frame(psp, 1, 2),
            frame(psp, 64, 2),
            frame(psp, 64, 2),
            frame(psp, 64, 2),
        ],
        0b1110,
        0b1110,
    );
}

/// The leaf with an IPv6 ECMP prefix (2001:db8:e::/48 to group 0) and a local End SID
/// (2001:db8:5::/48): staged frames to the SID skip the FIB and hand the SID to the pipeline.
/// Routes cover addresses no packet is routed to (127/8, 224/3, ff00::/8): those are still
/// dropped, whatever the routes say.
fn staging_spec() -> SwitchSpec {
    let mut spec = leaf_spec();
    for (prefix, len) in [
        ("2001:db8:e::", 48),
        ("127.0.0.0", 8),
        ("224.0.0.0", 3),
        ("ff00::", 8),
    ] {
        spec.routes.push(RouteSpec {
            vrf: 0,
            prefix: prefix.parse().unwrap(),
            len,
            target: RouteTarget::Group(0),
        });
    }
    spec.srv6.sids.push(SidSpec {
        name: "sid".into(),
        vrf: 0,
        prefix: "2001:db8:5::".parse().unwrap(),
        len: 48,
        behavior: SidBehavior::End,
        next_csid: None,
        psp: false,
        usp: false,
    });
    spec
}

#[test]
fn the_lane_never_panics_and_agrees_with_the_pipeline_on_any_frame() {
    // Random frames that look routed often enough to reach every check: to the router MAC,
    // IPv4 (sometimes tagged), destinations in the ECMP prefix, random lengths, header
    // lengths and fragment bits; a quarter IPv6, toward an ECMP prefix, a single nexthop, the
    // End SID (whose random SRHs keep those off the lane) or nowhere. In bursts of up to eight through the lane, each frame gets what the
    // pipeline alone gives it (and debug builds, the test profile, check the lane's hashes
    // and steps against the frame's own).
    let spec = staging_spec();
    let (mut lane_side, mut plain) = forwarder_pair(&spec);
    // (A group's member the lane sends to by its own copy: resolved.)
    resolve_spines([&mut lane_side, &mut plain]);
    let uplink = spec
        .ports
        .iter()
        .position(|r| matches!(r, crate::pipeline::spec::PortRole::Routed { .. }))
        .expect("the leaf has a routed uplink") as u16;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 7;
        state ^= state >> 9;
        state
    };
    let mut make = |round: u64| -> Vec<u8> {
        if round % 4 == 3 {
            let len = 14 + (next() % 110) as usize;
            let mut frame: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            frame[0..6].copy_from_slice(&ROUTER);
            frame[6] &= 0xfe;
            frame[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
            if len >= 54 {
                frame[14] = 0x60 | (frame[14] & 0x0f);
                let payload = (len - 54) as u16;
                frame[18..20].copy_from_slice(&payload.to_be_bytes());
                frame[21] = 64;
                frame[22..24].copy_from_slice(&[0x20, 0x01]);
                let prefix: [u8; 6] = match next() % 4 {
                    0 => [0x20, 0x01, 0x0d, 0xb8, 0, 0x0e],
                    1 => [0x20, 0x01, 0x0d, 0xb8, 0, 0x0b],
                    2 => [0x20, 0x01, 0x0d, 0xb8, 0, 0x05],
                    _ => [0x20, 0x01, 0x0d, 0xb8, 0, 0x77],
                };
                frame[38..44].copy_from_slice(&prefix);
                // Now and then an IPv4-mapped source (martian), or one next to those.
                match next() % 8 {
                    0 => frame[22..34].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]),
                    1 => frame[22..34].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe]),
                    _ => {}
                }
            }
            return frame;
        }
        let len = 14 + (next() % 90) as usize;
        let mut frame: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        frame[0..6].copy_from_slice(&ROUTER);
        frame[6] &= 0xfe;
        let l3 = if next() % 4 == 0 && len >= 18 {
            frame[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            frame[14..16].copy_from_slice(&10u16.to_be_bytes());
            frame[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
            18
        } else {
            frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            14
        };
        if len >= l3 + 20 {
            frame[l3] = 0x40 | ((5 + (next() % 4) as u8) * (next() % 4 != 0) as u8);
            frame[l3 + 16..l3 + 18].copy_from_slice(&[10, 1]);
            // Mostly valid headers, so most frames reach the route and its hash.
            let header_len = usize::from(frame[l3] & 0x0f) * 4;
            if header_len >= 20 && l3 + header_len <= len && next() % 8 != 0 {
                let total = (len - l3) as u16;
                frame[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
                frame[l3 + 8] = 64;
                frame[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
                let csum = !crate::wire::checksum::sum(&frame[l3..l3 + header_len]);
                frame[l3 + 10..l3 + 12].copy_from_slice(&csum.to_be_bytes());
            }
        }
        frame
    };
    let mut lane = ExpressLane::default();
    let (mut express_v4, mut express_v6) = (0, 0);
    let mut round = 0u64;
    while round < 20_000 {
        let size = 1 + (round % 8) as usize;
        let burst: Vec<Vec<u8>> = (0..size as u64).map(|i| make(round + i)).collect();
        round += size as u64;
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, T0);
            assert_eq!(
                outcomes[index], want,
                "round {round} frame {index}: {frame:02x?}"
            );
            if express >> index & 1 != 0 {
                if frame[12..14] == [0x86, 0xdd] {
                    express_v6 += 1;
                } else {
                    express_v4 += 1;
                }
            }
        }
    }
    assert!(
        express_v4 > 1_000,
        "only {express_v4} IPv4 frames took the lane"
    );
    assert!(
        express_v6 > 500,
        "only {express_v6} IPv6 frames took the lane"
    );
}

#[test]
fn frames_repeating_a_bridged_header_get_the_same_verdict_as_on_the_full_path() {
    // Random bursts of L2 frames between a few hosts (repeated headers, tags, VID 0, moves,
    // floods, frames to the router, time steps past the refresh and the aging time): one
    // forwarder reuses bridging decisions within and across bursts, the other takes the full
    // path for every frame. Verdicts, output bytes and the MAC tables must agree, whether the memo is
    // used inside `process_frame` or through `repeated_bridging` before it.
    let spec = leaf_spec();
    let mut memo = Forwarder::new(&spec).unwrap();
    let mut full = Forwarder::new(&spec).unwrap();
    let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
    let hosts = [A, B, C, [0x02, 0, 0, 0, 0, 0x0d]];
    let mut now = T0;
    // The last few frames: a repeat of an earlier one after a flood that moved a host must
    // not reuse a stale decision.
    let mut recent: Vec<(Vec<u8>, u16)> = Vec::new();
    let (mut frames, mut forwarded) = (0, 0);
    for _ in 0..3_000 {
        now += match next() % 8 {
            0 => 400 * PICOS_PER_SECOND,
            1 | 2 => 2 * PICOS_PER_SECOND,
            _ => 1_000,
        };
        if next().is_multiple_of(16) {
            assert_eq!(memo.age_macs(now), full.age_macs(now));
        }
        for _ in 0..1 + next() % 32 {
            if next().is_multiple_of(16) {
                // Time also moves within a burst in replays.
                now += 1_000;
            }
            let pick = (next() % 3) as usize;
            let (frame, in_port) = match recent.iter().rev().nth(pick) {
                // Mostly a recent frame again (payload bytes may differ).
                Some((frame, port)) if !next().is_multiple_of(4) => {
                    let mut frame = frame.clone();
                    let last = frame.len() - 1;
                    frame[last] = next() as u8;
                    (frame, *port)
                }
                _ => {
                    let dst = match next() % 8 {
                        0 => BCAST,
                        1 => ROUTER,
                        _ => hosts[(next() % 4) as usize],
                    };
                    let src = hosts[(next() % 4) as usize];
                    let in_port = (next() % 5) as u16;
                    let vlan = match next() % 4 {
                        0 => Some(10),
                        1 => Some(20),
                        2 => Some(0),
                        _ => None,
                    };
                    let payload: Vec<u8> = (0..46).map(|_| next() as u8).collect();
                    (eth(dst, src, vlan, 0x0800, &payload), in_port)
                }
            };
            let mut via_memo = frame.clone();
            // Half the time as the engine does it: the repeat check on its own first.
            let repeated = if next().is_multiple_of(2) {
                memo.repeated_bridging(&mut via_memo, in_port, now)
            } else {
                None
            };
            let got = repeated.unwrap_or_else(|| {
                let mut window = Frame::whole(&mut via_memo);
                memo.process_frame(&mut window, in_port, now)
            });
            let mut via_full = frame.clone();
            let want = full.process(&mut via_full, in_port, now);
            assert_eq!(
                got, want,
                "frame {frames} from port {in_port}: {frame:02x?}"
            );
            assert_eq!(via_memo, via_full, "frame {frames} bytes");
            forwarded += usize::from(matches!(want, Verdict::Forward { .. }));
            frames += 1;
            if recent.len() == 3 {
                recent.remove(0);
            }
            recent.push((frame, in_port));
        }
    }
    assert_eq!(memo.mac_count(), full.mac_count());
    assert_eq!(memo.mac_moves, full.mac_moves);
    for vlan in [10, 20] {
        for host in hosts {
            assert_eq!(
                memo.macs.lookup(vlan, host, now),
                full.macs.lookup(vlan, host, now),
                "{host:02x?} in VLAN {vlan}"
            );
        }
    }
    let hits = memo.bridge_memo_hits.get();
    assert!(
        forwarded > 1_000,
        "only {forwarded} of {frames} frames bridged"
    );
    assert!(hits > 500, "only {hits} frames reused a decision");
    assert_eq!(full.bridge_memo_hits.get(), 0);
}

#[test]
fn a_forgotten_bridging_memo_matches_no_frame() {
    // Before any decision and after each burst start, no frame repeats anything: not even one
    // whose header bytes are all zero, from port 0 at time 0 with the MAC table as it started
    // (the state a zeroed memo would describe).
    let mut forwarder = Forwarder::new(&leaf_spec()).unwrap();
    let zero_header = vec![0u8; 60];
    let mut learned = eth(B, A, None, 0x0800, &[0u8; 46]);
    for round in 0..2 {
        for (frame, in_port, now) in [(&zero_header, 0, 0), (&learned, 0, 0), (&learned, 1, T0)] {
            let mut frame = frame.clone();
            assert_eq!(
                forwarder.repeated_bridging(&mut frame, in_port, now),
                None,
                "round {round}: {frame:02x?} from port {in_port} at {now}"
            );
        }
        // A decision remembered within a burst, then the next burst.
        let mut window = Frame::whole(&mut learned);
        let _ = forwarder.process_frame(&mut window, 1, T0);
    }
}

#[test]
fn a_bridging_memo_outlives_bursts_only_while_what_it_skipped_would_not_change() {
    // A remembered decision lets repeats skip learning and the destination lookup. It stays
    // across bursts until the source's learning is due again, and goes when the port learns
    // another source (the full path would learn this one again), when a link or the
    // configuration changes. It is made only for a port that is up.
    let mut forwarder = Forwarder::new(&leaf_spec()).unwrap();
    let a_to_b = eth(B, A, None, 0x0800, &[0u8; 46]);
    let remember = |forwarder: &mut Forwarder, now: u64| {
        let mut b_to_a = eth(A, B, None, 0x0800, &[0u8; 46]);
        let _ = forwarder.process(&mut b_to_a, 1, now);
        let mut frame = a_to_b.clone();
        let mut window = Frame::whole(&mut frame);
        let verdict = forwarder.process_frame(&mut window, 0, now);
        assert_eq!(
            verdict,
            Verdict::Forward {
                port: 1,
                tag: TagOp::Keep
            }
        );
    };
    let repeats = |forwarder: &Forwarder, now: u64| {
        let mut frame = a_to_b.clone();
        forwarder.repeated_bridging(&mut frame, 0, now).is_some()
    };
    // The learn cache's refresh: a second at the default aging time.
    let refresh = PICOS_PER_SECOND;

    remember(&mut forwarder, T0);
    assert!(
        repeats(&forwarder, T0 + 1_000),
        "a later burst reuses the decision"
    );
    assert!(repeats(&forwarder, T0 + refresh - 1));
    assert!(
        !repeats(&forwarder, T0 + refresh),
        "the source's learning is due"
    );

    let t1 = 10 * T0;
    remember(&mut forwarder, t1);
    // `process_frame`, not `process`: the latter forgets every decision on its own.
    let mut from_another_port = eth(BCAST, C, None, 0x0800, &[0u8; 46]);
    let _ = forwarder.process_frame(&mut Frame::whole(&mut from_another_port), 2, t1 + 1_000);
    assert!(
        repeats(&forwarder, t1 + 2_000),
        "a source learned on another port changes nothing this decision skipped"
    );
    let mut from_the_same_port = eth(BCAST, [0x02, 0, 0, 0, 0, 0x0d], None, 0x0800, &[0u8; 46]);
    let _ = forwarder.process_frame(&mut Frame::whole(&mut from_the_same_port), 0, t1 + 3_000);
    assert!(
        !repeats(&forwarder, t1 + 4_000),
        "the port's learn cache moved on: a repeat must learn its source again"
    );

    let t2 = 20 * T0;
    remember(&mut forwarder, t2);
    forwarder.set_port_up(2, false);
    assert!(!repeats(&forwarder, t2), "a link change");

    let t3 = 30 * T0;
    remember(&mut forwarder, t3);
    assert!(repeats(&forwarder, t3));
    let mut undo = Vec::new();
    forwarder
        .apply_update(&crate::ctl::Update::AddVlan { id: 30 }, &mut undo)
        .unwrap();
    assert!(!repeats(&forwarder, t3), "a configuration change");
    remember(&mut forwarder, t3);
    forwarder.undo_updates(undo);
    assert!(!repeats(&forwarder, t3), "a configuration change undone");

    // A decision to a port that is down is not remembered (a repeat's sender does not check
    // the port again): B pinned to port 1 while its link is down.
    let t4 = 40 * T0;
    forwarder.set_port_up(1, false);
    let mut undo = Vec::new();
    forwarder
        .apply_update(
            &crate::ctl::Update::AddMac {
                vlan: 10,
                mac: B,
                port: 1,
            },
            &mut undo,
        )
        .unwrap();
    let mut frame = a_to_b.clone();
    let verdict = forwarder.process_frame(&mut Frame::whole(&mut frame), 0, t4);
    assert_eq!(
        verdict,
        Verdict::Forward {
            port: 1,
            tag: TagOp::Keep
        }
    );
    assert!(
        !repeats(&forwarder, t4),
        "a decision to a port that is down"
    );
    forwarder.set_port_up(1, true);
    let mut frame = a_to_b.clone();
    let _ = forwarder.process_frame(&mut Frame::whole(&mut frame), 0, t4);
    assert!(
        repeats(&forwarder, t4),
        "the same decision once the port is up"
    );
}

#[test]
fn a_lane_burst_routes_each_frame_as_the_pipeline_does_alone() {
    // Bursts mixing bridged frames, IPv4 and IPv6 frames to ECMP groups, to a single nexthop
    // and to local SIDs (End, uN, uA), with runs of one flow and of one destination: each
    // frame of a burst through the lane gets the verdict and bytes the pipeline gives it
    // alone, whether it repeats the flow of the frame before it, shares its destination or
    // differs from it in one byte that the route or the hash reads.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let uplink = 5u16;
    let mut next = xorshift(0x1234_5678_9abc_def1u64);
    let mut make = |kind: u64| -> Vec<u8> {
        let mut payload = vec![0u8; 8];
        payload[0..2].copy_from_slice(&((next() % 60_000) as u16).to_be_bytes());
        payload[2..4].copy_from_slice(&4791u16.to_be_bytes());
        match kind {
            0 => eth(
                B,
                A,
                None,
                0x0800,
                &ipv4([10, 0, 10, 5], [10, 0, 10, 6], 64, 17, 1, 2),
            ),
            1 | 2 => {
                let third = (next() % 256) as u8;
                let dst = if kind == 1 {
                    [10, 1, third, 3]
                } else {
                    [10, 2, third, 3]
                };
                let sport = (next() % 60_000) as u16;
                let mut ip = ipv4([10, 0, 10, 5], dst, 64, 17, sport, 4791);
                if next().is_multiple_of(4) {
                    // A header with options (one word of NOPs): the ports move to byte 24.
                    ip = with_ipv4_options(ip, &[1, 1, 1, 1]);
                }
                eth(ROUTER, SPINE1, None, 0x0800, &ip)
            }
            3 | 5 => {
                // To the ECMP prefix, or to a uN or uA SID.
                let dst = if kind == 3 {
                    format!("2001:db8:e:{:x}::1", next() % 65_536)
                } else {
                    usid_destination(&mut next)
                };
                eth(
                    ROUTER,
                    SPINE1,
                    None,
                    0x86dd,
                    &ipv6("2001:db8:10::5", &dst, 64, 17, &payload),
                )
            }
            _ => {
                // To the End SID, one in three with an SRH whose next segment is routed.
                let dst = format!("2001:db8:5:{:x}::1", next() % 65_536);
                let ip = if next().is_multiple_of(3) {
                    let segment = format!("2001:db8:e:{:x}::1", next() % 65_536);
                    let mut srh = super::srv6_tests::srh(17, 1, 0, &[&segment]);
                    srh.extend_from_slice(&payload);
                    ipv6("2001:db8:10::5", &dst, 64, 43, &srh)
                } else {
                    ipv6("2001:db8:10::5", &dst, 64, 17, &payload)
                };
                eth(ROUTER, SPINE1, None, 0x86dd, &ip)
            }
        }
    };
    // Runs of one flow: a frame may repeat the one before it with bytes the flow hash does
    // not read changed (TTL or hop limit, IPv4 id, payload, IPv6 traffic class), which the
    // lane takes as a repeat, or with one it does read changed (an address, a port, the
    // protocol, fragment bits, the flow label, ports cut off, an SRH's segment, a VLAN tag
    // pushed), which it must not. Those to the same destination (another source, port or
    // segment, a tag) may take the lookups of the frame before them, where they are the same.
    let mut repeat_draw = xorshift(0x5eed_0ff1_0a7e_1100);
    let mut coin = move |n: u64| repeat_draw() % n;
    let repeat = |previous: &[u8], which: u64| -> Vec<u8> {
        let mut frame = previous.to_vec();
        let last = frame.len() - 1;
        let v6 = frame[12..14] == [0x86, 0xdd];
        match (v6, which) {
            (false, 0) => frame[22] ^= 0x21, // TTL
            (false, 1) => frame[18] ^= 0x40, // identification
            (false, 2) => frame[26] ^= 1,    // source address
            (false, 3) => {
                // The source port, after the options if any.
                let at = 14 + usize::from(frame[14] & 0x0f) * 4 + 1;
                if let Some(byte) = frame.get_mut(at) {
                    *byte ^= 1;
                }
            }
            (false, 4) => frame[20] |= 0x20, // more fragments
            (false, 5) => frame[23] = 6,     // protocol
            (_, 8) => {}                     // a tag, below
            (false, _) => frame.truncate(14 + 20 + 2), // no room for the ports
            (true, 0) => frame[21] ^= 0x21,  // hop limit
            (true, 1) => frame[14] ^= 0x05,  // traffic class
            (true, 2) => frame[22] ^= 1,     // source address
            (true, 3) => frame[55] ^= 1,     // source port
            (true, 4) => frame[20] = 6,      // next header
            (true, 5) => frame[15] ^= 0x01,  // flow label
            (true, 6) => frame[37] ^= 1,     // source address, its last byte
            (true, 7) if frame[20] == 43 && frame.len() > 65 => frame[65] ^= 1, // SRH segment
            (true, _) => frame.truncate(14 + 40 + 2), // no room for the ports
        }
        if which < 2 {
            frame[last] ^= 0xff;
        }
        let header_end = 14 + usize::from(frame[14] & 0x0f) * 4;
        if !v6 && frame.len() >= header_end {
            frame[24..26].copy_from_slice(&[0, 0]);
            let c = reference_checksum(&frame[14..header_end]);
            frame[24..26].copy_from_slice(&c.to_be_bytes());
        }
        if which == 8 {
            frame.splice(12..12, [0x81, 0x00, 0x00, 0x0a]);
        }
        frame
    };
    let (mut express_frames, mut frames_seen, mut forwarded, mut taken) = (0, 0, 0, 0);
    let mut lane = ExpressLane::default();
    for round in 0..300u64 {
        let size = 1 + (round * 7 % 32) as usize;
        let mut burst: Vec<Vec<u8>> = Vec::with_capacity(size);
        for i in 0..size {
            let frame = match burst.last() {
                Some(previous) if coin(2) == 0 => repeat(previous, coin(10)),
                _ => make((round + i as u64 * 3) % 6),
            };
            burst.push(frame);
        }
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, uplink, T0);
        taken += lane.taken().count_ones() as usize;
        express_frames += express.count_ones() as usize;
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, uplink, T0);
            assert_eq!(outcomes[index], want, "round {round} frame {index}");
            frames_seen += 1;
            forwarded += usize::from(matches!(want.0, Verdict::Forward { .. }));
        }
    }
    // Bridged frames, IPv4 with options and tagged repeats take the pipeline.
    assert!(
        express_frames * 3 > frames_seen,
        "{express_frames} of {frames_seen} express"
    );
    assert!(
        forwarded * 3 > frames_seen,
        "{forwarded} of {frames_seen} forwarded"
    );
    // Half the frames repeat the one before, a fifth of those with only bytes the hash
    // ignores changed, and runs of one destination share its IPv6 lookup.
    assert!(
        taken * 13 > frames_seen,
        "only {taken} of {frames_seen} frames took another's staging"
    );
    assert_same_member_counts(&lane_side, &plain);
}

#[test]
fn a_frame_to_the_destination_of_the_frame_before_it_takes_its_lookup_only_where_it_routes() {
    // Frames to one End SID address after a first frame that takes no endpoint step (tagged:
    // only untagged frames take the lane), each with an SRH whose next segment is that same
    // address or a routed one, the first with and without a tag itself. A step that leads
    // back to the local SID goes nowhere near the FIB; a step to the routed segment does, and
    // the next frame with the same step takes its lookup. Each gets what the pipeline gives
    // it alone.
    let (mut lane_side, mut plain) = express_pair_with_spines();
    let sid = "2001:db8:5::1";
    let frame = |tag: Option<u16>, segment: &str, sport: u16| {
        let mut upper = vec![0u8; 8];
        upper[0..2].copy_from_slice(&sport.to_be_bytes());
        let mut srh = super::srv6_tests::srh(17, 1, 0, &[segment]);
        srh.extend_from_slice(&upper);
        eth(
            ROUTER,
            SPINE1,
            tag,
            0x86dd,
            &ipv6("2001:db8:10::5", sid, 64, 43, &srh),
        )
    };
    let mut lane = ExpressLane::default();
    for first_tag in [Some(10), None] {
        let burst = [
            frame(first_tag, sid, 1),
            frame(None, sid, 2),
            frame(None, "2001:db8:e::1", 3),
            frame(None, "2001:db8:e::1", 4),
            frame(None, sid, 5),
        ];
        let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &burst, 5, T0);
        for (index, frame) in burst.iter().enumerate() {
            let want = through_pipeline(&mut plain, frame, 5, T0);
            assert_eq!(
                outcomes[index], want,
                "first tagged: {first_tag:?}, frame {index}"
            );
        }
        // Only the steps to the routed segment are express, and the second takes the first's
        // lookup.
        assert_eq!(express, 0b01100, "first tagged: {first_tag:?}");
        assert_eq!(lane.taken(), 0b01000, "first tagged: {first_tag:?}");
    }
    // An IPv4 frame's destination 10.1.7.3 and the IPv6 one ::10.1.7.3 after it share
    // nothing.
    let v4 = eth(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4([10, 0, 10, 5], [10, 1, 7, 3], 64, 17, 1, 2),
    );
    let v6 = eth(
        ROUTER,
        SPINE1,
        None,
        0x86dd,
        &ipv6("2001:db8:10::5", "::10.1.7.3", 64, 17, &[0; 8]),
    );
    let burst = [v4, v6];
    let (outcomes, _) = through_lane(&mut lane_side, &mut lane, &burst, 5, T0);
    assert_eq!(lane.taken(), 0);
    for (index, frame) in burst.iter().enumerate() {
        assert_eq!(outcomes[index], through_pipeline(&mut plain, frame, 5, T0));
    }
}

/// Two forwarders on `express_spec`: one to take a path under test, one to take the full
/// pipeline unstaged.
fn express_pair() -> (Forwarder, Forwarder) {
    forwarder_pair(&express_spec())
}

/// `express_pair` with the spines resolved in both (`resolve_spines`).
fn express_pair_with_spines() -> (Forwarder, Forwarder) {
    let (mut lane_side, mut plain) = express_pair();
    resolve_spines([&mut lane_side, &mut plain]);
    (lane_side, plain)
}

/// The staging spec plus what only some express frames reach: a nexthop behind a VLAN
/// interface (10.3.0.0/16 -> 10.0.10.7, whose port comes from the MAC table), groups of it
/// and nh1 choosing by random flowlets (10.4.0.0/16), per packet (10.5.0.0/16) and by
/// least-loaded flowlets (10.6.0.0/16), and a route over link-local destinations (fe80::/16,
/// which no router should have: such packets are still never forwarded).
fn express_spec() -> SwitchSpec {
    let mut spec = staging_spec();
    spec.nexthops.push(NexthopSpec {
        interface: 2,
        ip: IpAddr::V4(Ipv4Addr::new(10, 0, 10, 7)),
    });
    use crate::tables::flowlet::{BalanceMode, BalanceSpec, PathChoice};
    for (mode, choice) in [
        (BalanceMode::Flowlet, PathChoice::Random),
        (BalanceMode::PerPacket, PathChoice::Random),
        (BalanceMode::Flowlet, PathChoice::LeastLoaded),
    ] {
        spec.groups.push(GroupSpec {
            members: vec![(1, 1), (3, 2)],
            balance: BalanceSpec {
                mode,
                choice,
                ..Default::default()
            },
        });
    }
    for (prefix, target) in [
        ("10.3.0.0", RouteTarget::Nexthop(3)),
        ("10.4.0.0", RouteTarget::Group(1)),
        ("10.5.0.0", RouteTarget::Group(2)),
        ("10.6.0.0", RouteTarget::Group(3)),
        ("fe80::", RouteTarget::Nexthop(2)),
    ] {
        spec.routes.push(RouteSpec {
            vrf: 0,
            prefix: prefix.parse().unwrap(),
            len: 16,
            target,
        });
    }
    // A host route inside the ECMP /48: destinations that differ only in their last bits
    // route apart.
    spec.routes.push(RouteSpec {
        vrf: 0,
        prefix: "2001:db8:e::77".parse().unwrap(),
        len: 128,
        target: RouteTarget::Nexthop(2),
    });
    // NEXT-C-SID SIDs (see `usid_destination`): a uN and a uA (32-bit block, 16-bit uSIDs),
    // whose next uSIDs lead to both groups, a nexthop, nowhere or a local SID; and a uN with
    // an 8-bit block and 8-bit uSIDs whose shift may make a link-local destination.
    let csid = |name: &str, prefix: &str, len, behavior, block_bits, shift_bits| SidSpec {
        name: name.into(),
        vrf: 0,
        prefix: prefix.parse().unwrap(),
        len,
        behavior,
        next_csid: Some(CsidFormat {
            block_bits,
            shift_bits,
        }),
        psp: false,
        usp: false,
    };
    let ua = SidBehavior::EndX {
        target: RouteTarget::Nexthop(2),
    };
    spec.srv6.sids.extend([
        csid("un", "fcbb:bb00:100::", 48, SidBehavior::End, 32, 16),
        csid("ua", "fcbb:bb00:600::", 48, ua, 32, 16),
        csid("un8", "fe11::", 16, SidBehavior::End, 8, 8),
        SidSpec {
            name: "end-psp".into(),
            vrf: 0,
            prefix: "2001:db8:6::".parse().unwrap(),
            len: 48,
            behavior: SidBehavior::End,
            next_csid: None,
            psp: true,
            usp: false,
        },
    ]);
    for (prefix, len, target) in [
        ("fcbb:bb00:200::", 48, RouteTarget::Group(0)),
        ("fcbb:bb00:300::", 48, RouteTarget::Nexthop(2)),
        ("fcbb:bb00:500::", 48, RouteTarget::Group(1)),
        // Covers the SIDs: a shift to a SID must reach the SID, not this route.
        ("fcbb:bb00::", 37, RouteTarget::Nexthop(2)),
    ] {
        spec.routes.push(RouteSpec {
            vrf: 0,
            prefix: prefix.parse().unwrap(),
            len,
            target,
        });
    }
    spec
}

/// An SRH (now and then behind a Hop-by-Hop header) carrying `upper` as UDP, for a packet
/// to an End SID: its segments lead to a group, a nexthop, no route, a link-local address or
/// a local SID; Segments Left, Last Entry, the routing type and the header length are right
/// most of the time and anything now and then. Returns the next header and the payload.
fn srh_payload(next: &mut dyn FnMut() -> u64, upper: &[u8]) -> (u8, Vec<u8>) {
    const SEGMENTS: [&str; 8] = [
        "2001:db8:e::1",
        "2001:db8:b::1",
        "2001:db8:77::1",
        "fe80::1",
        "2001:db8:5::2",
        "fcbb:bb00:100:200::",
        "fcbb:bb00:200::7",
        "2001:db8:e::2",
    ];
    let count = 1 + (next() % 3) as usize;
    let segments: Vec<&str> = (0..count)
        .map(|_| SEGMENTS[(next() % 8) as usize])
        .collect();
    let segments_left = [1, 1, 2, 3, 0][(next() % 5) as usize];
    let last_entry = match next() % 6 {
        0 => (next() % 4) as u8,
        _ => count as u8 - 1,
    };
    let mut header = super::srv6_tests::srh(17, segments_left, last_entry, &segments);
    match next() % 12 {
        0 => header[2] = 3,                       // another routing type
        1 => header[1] = (next() % 8) as u8,      // any header length
        2 => header.truncate(8 + 16 * count - 4), // cut short
        _ => {}
    }
    header.extend_from_slice(upper);
    if next().is_multiple_of(6) {
        // A Hop-by-Hop header first: one PadN option filling its 8 bytes.
        let mut with_hop_by_hop = vec![43, 0, 1, 4, 0, 0, 0, 0];
        with_hop_by_hop.extend_from_slice(&header);
        return (0, with_hop_by_hop);
    }
    (43, header)
}

/// A destination to one of `express_spec`'s NEXT-C-SID SIDs. Behind the uN or the uA, the
/// next uSID leads to a group, a nexthop, no route or a local SID, or is zero (the container
/// ends: End processing, no shift); the uSIDs after it are zero or not. Behind the 8-bit uN,
/// the shift makes a link-local destination (routed, by `fe80::/16`) or another one.
fn usid_destination(next: &mut dyn FnMut() -> u64) -> String {
    if next().is_multiple_of(5) {
        let next_usid = [0x80, 0xbf, 0x40, 0xc0][(next() % 4) as usize];
        return format!("fe11:{next_usid:02x}{:02x}::", next() % 256);
    }
    let sid = [0x100, 0x600][(next() % 2) as usize];
    let next_usid = [0x200, 0x300, 0x900, 0x500, 0x100, 0x600, 0][(next() % 7) as usize];
    let after = [0, next() % 65_536][(next() % 2) as usize];
    format!("fcbb:bb00:{sid:x}:{next_usid:x}:{after:x}::")
}

#[test]
fn lane_frames_get_the_verdict_bytes_and_counts_of_the_full_pipeline() {
    // Random bursts on a routed uplink (and now and then an access port): IPv4 frames to
    // every kind of route (groups in hash, flowlet, per-packet and least-loaded flowlet mode,
    // nexthops on a routed port and behind a VLAN, unresolved, connected, blackhole, local,
    // none), with every header check failing now and then (version, IHL, options whose first
    // 20 bytes sum right, source-routing or malformed options, total length, checksum, TTL,
    // martian source, multicast source MAC, a
    // tag, another MAC,
    // ARP), IPv6 frames to a group, a nexthop, a local SID, a uN SID (its next uSID routed or
    // not), an End SID with an SRH (valid or broken, behind a Hop-by-Hop header, PSP) or no
    // route (hop limit, version, payload length, link-local source or destination), and runs
    // of one flow and of other flows to one destination, while neighbours resolve, the VLAN
    // host moves (between access ports and a trunk) and an uplink goes down and up between
    // bursts. One forwarder takes each burst through the express lane (`through_lane`: the
    // lane's frames through `route_lane`, the rest through the pipeline); the other takes
    // every frame through the pipeline alone. Verdicts, bytes, control requests, learned
    // MACs, the groups' counters and loads and the SIDs' counters must agree.
    let (mut express_side, mut plain) = express_pair();
    let uplink = 5u16;
    let mut next = xorshift(0x0dd_b1a5_e5ca_1ab1u64);
    // The last three are no one's to route to, whatever the routes (a default route here).
    let destinations: [[u8; 2]; 13] = [
        [10, 1],
        [10, 2],
        [10, 3],
        [10, 4],
        [10, 5],
        [10, 6],
        [10, 9],
        [10, 0],
        [10, 255],
        [192, 168],
        [127, 0],
        [224, 0],
        [255, 255],
    ];
    let make = |next: &mut dyn FnMut() -> u64| -> Vec<u8> {
        let pick = |next: &mut dyn FnMut() -> u64, n: u64| next() % n;
        let prefix = destinations[pick(next, 13) as usize];
        let host = match prefix {
            // The switch's own address, its /31 peer, or a connected VLAN host.
            [10, 255] => [0, pick(next, 2) as u8],
            [10, 0] => [10, pick(next, 10) as u8],
            _ => [pick(next, 256) as u8, pick(next, 256) as u8],
        };
        let dst = [prefix[0], prefix[1], host[0], host[1]];
        let ttl = [0, 1, 2, 64][pick(next, 4) as usize];
        let sport = pick(next, 60_000) as u16;
        let mut ip = ipv4([10, 0, 10, 5], dst, ttl, 17, sport, 4791);
        let mutation = pick(next, 16);
        match mutation {
            0 => ip[0] = 0x40 | (pick(next, 16) as u8),   // any IHL
            1 => ip[0] = (pick(next, 16) as u8) << 4 | 5, // any version
            2 => {
                // Options: one word of NOPs, of LSRR (length 3) and End, or of a malformed
                // option (length 1); the checksum covers only the first 20 bytes.
                let word = [[1, 1, 1, 1], [131, 3, 4, 0], [7, 1, 0, 0]][pick(next, 3) as usize];
                ip[0] = 0x46;
                ip.splice(20..20, word);
                ip[2..4].copy_from_slice(&32u16.to_be_bytes());
                ip[10..12].copy_from_slice(&[0, 0]);
                let c = reference_checksum(&ip[..20]);
                ip[10..12].copy_from_slice(&c.to_be_bytes());
                if pick(next, 2) == 0 {
                    // Now right over all 24 bytes: a valid header with options.
                    ip[10..12].copy_from_slice(&[0, 0]);
                    let c = reference_checksum(&ip[..24]);
                    ip[10..12].copy_from_slice(&c.to_be_bytes());
                }
            }
            3 => {
                let total = [0u16, 19, 20, 27, 29, 1500][pick(next, 6) as usize];
                ip[2..4].copy_from_slice(&total.to_be_bytes());
            }
            4 => ip[10] ^= 1 << pick(next, 8),
            5 => ip[4] ^= 0x40, // identification: the checksum no longer matches
            // A source no router forwards from, or the edges of those it does.
            6 => ip[12] = [0, 1, 127, 223, 224, 240, 255][pick(next, 7) as usize],
            _ => {}
        }
        if mutation == 6 || matches!(mutation, 0 | 1 | 3) && pick(next, 2) == 0 {
            // The first 20 bytes sum right again, so only the changed field can fail.
            ip[10..12].copy_from_slice(&[0, 0]);
            let c = reference_checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let (src_mac, vlan, dst_mac, ethertype) = match pick(next, 24) {
            0 => ([0x03, 0, 0, 0, 0, 1], None, ROUTER, 0x0800),
            // Sources the pipeline refuses: all-zero, the router MAC.
            4 => ([0; 6], None, ROUTER, 0x0800),
            5 => (ROUTER, None, ROUTER, 0x0800),
            1 => (SPINE1, Some(10), ROUTER, 0x0800),
            2 => (SPINE1, None, B, 0x0800),
            3 => (SPINE1, None, ROUTER, 0x0806),
            _ => (SPINE1, None, ROUTER, 0x0800),
        };
        if pick(next, 3) == 0 {
            // IPv6 to a group, a nexthop, a local SID or nowhere, from or to a link-local
            // address now and then, with any hop limit, version or payload length.
            let dst = if pick(next, 3) == 0 {
                usid_destination(next)
            } else {
                format!(
                    "{}:{:x}::{:x}",
                    [
                        "2001:db8", "2001:db8", "2001:db8", "2001:db8", "2001:db8", "2001:db8",
                        "fe80:0", "ff05:0"
                    ][pick(next, 8) as usize],
                    [0xb, 0xe, 0x5, 0x77][pick(next, 4) as usize],
                    // Now and then the host route's address.
                    [pick(next, 65_536), 0x77][usize::from(pick(next, 4) == 0)]
                )
            };
            // Now and then link-local, or a source no router forwards from (IPv4-mapped
            // among them), or one next to those that it does.
            let src = match pick(next, 20) {
                0 | 1 => "fe80::5",
                2 => "::",
                3 => "::1",
                4 => "ff05::1",
                5 => "::ffff:10.0.10.5",
                6 => "::ffff:0.0.0.0",
                7 => "::fffe:ffff:ffff",
                _ => "2001:db8:10::5",
            };
            let mut ip6 = if pick(next, 2) == 0 {
                // An SRH to End (with PSP or not) or to a uN (its argument zero or not).
                let dst = match pick(next, 4) {
                    0 => format!("2001:db8:5::{:x}", pick(next, 65_536)),
                    1 => format!("2001:db8:6::{:x}", pick(next, 65_536)),
                    2 => "fcbb:bb00:100::".to_string(),
                    _ => usid_destination(next),
                };
                let (next_header, payload) = srh_payload(next, &ip[20..]);
                ipv6(src, &dst, ttl, next_header, &payload)
            } else {
                ipv6(src, &dst, ttl, 17, &ip[20..])
            };
            match mutation {
                0 => ip6[0] = (pick(next, 16) as u8) << 4,
                1 => {
                    let payload = [0u16, 7, 8, 9, 200][pick(next, 5) as usize];
                    ip6[4..6].copy_from_slice(&payload.to_be_bytes());
                }
                _ => {}
            }
            let ethertype = if ethertype == 0x0800 {
                0x86dd
            } else {
                ethertype
            };
            return eth(dst_mac, src_mac, vlan, ethertype, &ip6);
        }
        let mut frame = eth(dst_mac, src_mac, vlan, ethertype, &ip);
        // Bytes beyond Ethernet's padding (to 60 bytes) after the IP packet, sometimes: the
        // full pipeline cuts them, and the lane leaves such frames to it.
        frame.resize(frame.len() + [0, 0, 6][pick(next, 3) as usize], 0);
        if mutation == 3 && sport.is_multiple_of(2) {
            // A total length at the frame's edge: all the bytes it holds, or one more (the
            // header's sum right again). Chosen by the source port, drawn already, so that
            // the frames after this one stay as they were.
            let at = if vlan.is_some() { 18 } else { 14 };
            let total = (frame.len() - at + usize::from(sport / 2 % 2)) as u16;
            frame[at + 2..at + 4].copy_from_slice(&total.to_be_bytes());
            frame[at + 10..at + 12].copy_from_slice(&[0, 0]);
            let c = reference_checksum(&frame[at..at + 20]);
            frame[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
        }
        frame
    };
    let mut now = T0;
    let (mut express_frames, mut express_forwarded, mut frames) = (0, 0, 0);
    let (mut shifts_forwarded, mut srh_steps_forwarded) = (0, 0);
    let mut repeats_forwarded = 0;
    let mut lane = ExpressLane::default();
    let mut hosts = 0u16;
    for round in 0..2_000u64 {
        now += match next() % 8 {
            0 => 200 * crate::clock::PICOS_PER_MICRO,
            1 => 2 * PICOS_PER_SECOND,
            _ => 1_000,
        };
        if round % 100 == 99 {
            // A long pause: every learned MAC ages out (the VLAN host's too, which stays a
            // resolved neighbour: routed packets to it flood until it speaks again).
            now += 301 * PICOS_PER_SECOND;
        }
        // Neighbours come and go, the VLAN host answers from one port or another, an uplink
        // fails: the same events on both sides, between bursts.
        let event = next() % 16;
        for f in [&mut express_side, &mut plain] {
            match event {
                0 => {
                    f.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
                }
                1 => f.neighbor_lost(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0))),
                2 => {
                    f.neighbor_resolved(1, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2)), SPINE2);
                }
                3 => {
                    f.neighbor_resolved(2, IpAddr::V4(Ipv4Addr::new(10, 0, 10, 7)), C);
                }
                7 => {
                    f.neighbor_resolved(0, "2001:db8:ff::".parse().unwrap(), SPINE1);
                }
                4 => f.set_port_up(6, round % 3 != 0),
                _ => {}
            }
        }
        if (5..=6).contains(&event) || event == 8 {
            // The VLAN host speaks from access port 0 or 1, or tagged from trunk port 4 (routed
            // frames to it then get a tag pushed): both sides learn it there.
            let (in_port, tag) = match event {
                5 => (0, None),
                6 => (1, None),
                _ => (4, Some(10)),
            };
            let hello = eth(BCAST, C, tag, 0x0806, &[0u8; 28]);
            assert_eq!(
                express_side.process(&mut hello.clone(), in_port, now),
                plain.process(&mut hello.clone(), in_port, now)
            );
        }
        // Now and then a burst from an access port of VLAN 10, each frame from a new host: routed
        // through its VLAN interface, never express (the pipeline learns each source first).
        let in_port = if next().is_multiple_of(4) { 0 } else { uplink };
        let size = 1 + (next() % 32) as usize;
        let mut burst: Vec<Vec<u8>> = Vec::with_capacity(size);
        for _ in 0..size {
            let mut frame = match burst.last() {
                // Runs of one flow (the stage's and the lane's repeats), the payload changed.
                Some(previous) if next().is_multiple_of(4) => {
                    let mut frame = previous.clone();
                    let last = frame.len() - 1;
                    frame[last] ^= 0x5a;
                    frame
                }
                // Another flow to the same destination: only what the flow hash reads
                // differs (a source port, the source address, the protocol, the fragment
                // bits; the header checksum made right again), which must not be taken for a
                // repeat.
                Some(previous)
                    if next().is_multiple_of(4)
                        && previous.len() >= 38
                        && previous[12..14] == [0x08, 0x00] =>
                {
                    let mut frame = previous.clone();
                    match next() % 4 {
                        0 => frame[35] ^= 1 + (next() % 255) as u8,
                        1 => frame[29] ^= 1 + (next() % 255) as u8,
                        2 => frame[23] = [6, 17, 1][(next() % 3) as usize],
                        _ => frame[20] ^= 0x20, // More Fragments
                    }
                    frame[24..26].copy_from_slice(&[0, 0]);
                    let c = reference_checksum(&frame[14..34]);
                    frame[24..26].copy_from_slice(&c.to_be_bytes());
                    frame
                }
                _ => make(&mut next),
            };
            if in_port != uplink {
                hosts += 1;
                frame[10..12].copy_from_slice(&hosts.to_be_bytes());
            }
            burst.push(frame);
        }
        let (outcomes, express_mask) =
            through_lane(&mut express_side, &mut lane, &burst, in_port, now);
        let endpoints = lane.endpoints();
        for (index, frame) in burst.iter().enumerate() {
            let express = express_mask >> index & 1 != 0;
            let want = through_pipeline(&mut plain, frame, in_port, now);
            assert_eq!(
                outcomes[index], want,
                "round {round} frame {index} (express {express}): {frame:02x?}"
            );
            frames += 1;
            express_frames += usize::from(express);
            let forwarded = express && matches!(want.0, Verdict::Forward { .. });
            express_forwarded += usize::from(forwarded);
            repeats_forwarded += usize::from(forwarded && lane.taken() >> index & 1 != 0);
            if forwarded && endpoints >> index & 1 != 0 {
                // A uN shift leaves Segments Left alone; End's SRH step takes one.
                if frame.get(20) == Some(&43) {
                    srh_steps_forwarded += 1;
                } else {
                    shifts_forwarded += 1;
                }
            }
        }
        assert_eq!(
            express_side.drain_requests().collect::<Vec<_>>(),
            plain.drain_requests().collect::<Vec<_>>(),
            "round {round}: control requests"
        );
        // Least-loaded choice reads the group's own bytes of the instant.
        assert_eq!(
            express_side.balancer_loads(),
            plain.balancer_loads(),
            "round {round}: member loads"
        );
    }
    assert_eq!(express_side.mac_count(), plain.mac_count(), "learned MACs");
    // Routed packets to the VLAN host while its MAC was not in the table (before it spoke,
    // after it aged out) were flooded, by both alike.
    let floods = |f: &Forwarder| f.counters().routed_flooded.get();
    assert_eq!(floods(&express_side), floods(&plain), "routed floods");
    assert!(floods(&plain) > 0, "no routed packet was flooded");
    for (x, p) in express_side
        .srv6_counters()
        .sids
        .iter()
        .zip(&plain.srv6_counters().sids)
    {
        assert_eq!(x.snapshot(), p.snapshot(), "SID counters");
    }
    assert!(
        repeats_forwarded * 40 > express_forwarded,
        "{repeats_forwarded} of {express_forwarded} forwarded express frames repeated a flow"
    );
    assert!(
        shifts_forwarded > 0 && srh_steps_forwarded > 0,
        "express endpoints forwarded {shifts_forwarded} uN shifts, {srh_steps_forwarded} SRH steps"
    );
    for (x, p) in express_side
        .balance_counters()
        .iter()
        .zip(plain.balance_counters())
    {
        assert_eq!(x.flowlets.get(), p.flowlets.get());
        assert_eq!(x.moves.get(), p.moves.get());
        assert_eq!(x.member_bytes(), p.member_bytes());
        assert_eq!(x.member_packets(), p.member_packets());
    }
    // About one frame in eighteen passes every check (half the destinations are routes to
    // nexthops or groups, half the TTLs are above 1, most headers and L2 headers are valid,
    // three bursts in four are on the uplink, and one IPv4 frame in three has bytes after
    // its padding, which the full pipeline cuts).
    assert!(
        express_frames * 22 > frames,
        "only {express_frames} of {frames} frames were express"
    );
    assert!(
        express_forwarded * 4 > express_frames,
        "only {express_forwarded} of {express_frames} express frames were forwarded"
    );
    assert!(
        express_forwarded < express_frames,
        "no express frame was dropped after resolution"
    );
}

#[test]
fn lane_frames_route_as_the_forwarder_stands_in_their_turn() {
    // A burst of one flow through the lane, its later frames repeats that take the first
    // one's staging, with the forwarder changed between them the ways a burst's own frames
    // can change it (links and table updates land between bursts): a MAC move learned
    // through the full pipeline, a neighbour's new MAC, a neighbour lost. Each frame must get
    // what the pipeline decides for it alone at its turn.
    let (mut lane_side, mut plain) = express_pair();
    let uplink = 5u16;
    let spine1 = IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0));
    let spine2 = IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2));
    let host_c = IpAddr::V4(Ipv4Addr::new(10, 0, 10, 7));
    let hello_from = |port: u16| (eth(BCAST, C, None, 0x0806, &[0u8; 28]), port);
    for f in [&mut lane_side, &mut plain] {
        f.neighbor_resolved(0, spine1, SPINE1);
        f.neighbor_resolved(1, spine2, SPINE2);
        f.neighbor_resolved(2, host_c, C);
        let (mut hello, port) = hello_from(0);
        f.process(&mut hello, port, T0);
    }
    /// What happens to both forwarders between two frames of the burst.
    enum Change {
        Frame(Vec<u8>, u16),
        Resolved(u16, IpAddr, [u8; 6]),
        Lost(u16, IpAddr),
    }
    // A flow of the ECMP group that its hash sends out of port 6 (to spine 2).
    let group_flow = (1..)
        .map(|sport| {
            eth(
                ROUTER,
                SPINE1,
                None,
                0x0800,
                &ipv4([10, 0, 10, 5], [10, 1, 0, 9], 64, 17, sport, 4791),
            )
        })
        .find(|frame| {
            matches!(
                plain.process(&mut frame.clone(), uplink, T0),
                Verdict::Forward { port: 6, .. }
            )
        })
        .unwrap();
    let vlan_flow = eth(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4([10, 0, 10, 5], [10, 3, 0, 9], 64, 17, 7, 4791),
    );
    let scenarios = [
        (vlan_flow.clone(), vec![Change::Frame(hello_from(1).0, 1)]),
        (vlan_flow, vec![Change::Resolved(2, host_c, A)]),
        (group_flow.clone(), vec![Change::Resolved(1, spine2, A)]),
        (group_flow, vec![Change::Lost(1, spine2)]),
    ];
    let mut lane = ExpressLane::default();
    for (round, (frame, changes)) in scenarios.into_iter().enumerate() {
        let now = T0 + round as u64 * PICOS_PER_SECOND;
        let burst = vec![frame; changes.len() + 2];
        let views: Vec<&[u8]> = burst.iter().map(Vec::as_slice).collect();
        let express = lane_side.stage_lane(&mut lane, &views, 0, &LANE_CLASSES, now);
        assert_eq!(express.count_ones() as usize, burst.len(), "round {round}");
        assert_eq!(lane.taken(), express & !1, "round {round}: the repeats");
        for (index, frame) in burst.iter().enumerate() {
            if index >= 2 {
                match &changes[index - 2] {
                    Change::Frame(hello, port) => {
                        for f in [&mut lane_side, &mut plain] {
                            f.process_frame(&mut Frame::whole(&mut hello.clone()), *port, now);
                        }
                    }
                    Change::Resolved(interface, ip, mac) => {
                        for f in [&mut lane_side, &mut plain] {
                            f.neighbor_resolved(*interface, *ip, *mac);
                        }
                    }
                    Change::Lost(interface, ip) => {
                        for f in [&mut lane_side, &mut plain] {
                            f.neighbor_lost(*interface, *ip);
                        }
                    }
                }
            }
            let got = through_pass_3(&mut lane_side, &lane, index, frame, now, Pass3::Any);
            let want = through_pipeline(&mut plain, frame, uplink, now);
            assert_eq!(got, want, "round {round} frame {index}");
        }
    }
}

// Run-time updates (crate::ctl), on the leaf spec above.
#[path = "ctl_tests.rs"]
mod ctl_tests;

#[test]
fn the_lane_forwards_by_itself_only_to_a_port_that_is_up() {
    // 10.2.0.0/16 goes to nexthop 0, spine 1 behind routed port 5. While port 5 is up the
    // lane returns it; while it is down the lane returns `LANE_OTHER` with the pipeline's
    // forward, so the engine's full send finds the link down (its express send skips that
    // check for the ports the lane returns).
    let mut forwarder = Forwarder::new(&leaf_spec()).unwrap();
    forwarder.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
    let frame = eth(
        ROUTER,
        SPINE2,
        None,
        0x0800,
        &ipv4([10, 0, 20, 5], [10, 2, 0, 9], 64, 17, 5000, 53),
    );
    let mut lane = ExpressLane::default();
    for up in [true, false, true] {
        forwarder.set_port_up(5, up);
        // (Received on uplink 6, which stays up.)
        assert_eq!(
            forwarder.stage_lane(&mut lane, &[&frame], 0, &LANE_CLASSES, T0),
            1
        );
        let port = forwarder.route_lane(&lane, 0, &mut frame.clone(), T0);
        if up {
            assert_eq!(port, 5);
        } else {
            assert_eq!(port, LANE_OTHER);
            assert_eq!(
                forwarder.lane_verdict(),
                Verdict::Forward {
                    port: 5,
                    tag: TagOp::Keep
                }
            );
        }
    }
}

#[test]
fn the_lane_takes_routed_ports_only() {
    // A routed port's bursts go through the lane in its interface's VRF; an access or trunk
    // port's never (a frame to a VLAN interface takes the full pipeline), and a burst that
    // skips the lane leaves nothing of the lane's previous burst express.
    let mut forwarder = Forwarder::new(&leaf_spec()).unwrap();
    forwarder.neighbor_resolved(0, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)), SPINE1);
    forwarder.neighbor_resolved(1, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 2)), SPINE2);
    assert_eq!(forwarder.lane_vrf(0), None, "an access port");
    assert_eq!(forwarder.lane_vrf(4), None, "the trunk");
    assert_eq!(forwarder.lane_vrf(5), Some(0), "the routed uplink");
    let routed = eth(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4([10, 0, 20, 5], [10, 1, 0, 9], 64, 17, 5000, 53),
    );
    let mut lane = ExpressLane::default();
    assert_eq!(
        forwarder.stage_lane(&mut lane, &[&routed], 0, &LANE_CLASSES, T0),
        1
    );
    assert_eq!(lane.express(), 1);
    lane.clear();
    assert_eq!(lane.express(), 0);
}

// Egress MTUs: fragmentation, Fragmentation Needed and Packet Too Big.
mod mtu;

#[test]
fn a_routed_packet_to_a_neighbour_whose_mac_aged_out_is_flooded_in_its_vlan() {
    // Host A (10.0.10.5, 2001:db8:10::5) on access port 0 of VLAN 10 is a resolved
    // neighbour; MACs age after 10 s, neighbours are kept longer (their own timers). Once A's
    // MAC has left VLAN 10's table, a packet routed to A leaves rewritten (MACs, TTL or hop
    // limit, checksum) as a flood in VLAN 10, as a bridge floods an unknown unicast, instead
    // of being dropped as neighbor_unresolved; A is asked for again, and once A speaks its
    // packets are unicast again. The lane (a nexthop behind a VLAN interface is express)
    // gives the same verdicts and bytes.
    let mut spec = leaf_spec();
    spec.mac_aging = 10 * PICOS_PER_SECOND;
    let (mut f, mut lane_side) = forwarder_pair(&spec);
    for f in [&mut f, &mut lane_side] {
        f.process(&mut eth(B, A, None, 0x0800, &[]), 0, T0);
        f.neighbor_resolved(2, "10.0.10.5".parse().unwrap(), A);
        f.neighbor_resolved(2, "2001:db8:10::5".parse().unwrap(), A);
        f.drain_requests().for_each(drop);
    }
    let v4 = eth(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4([10, 7, 0, 1], [10, 0, 10, 5], 30, 17, 5000, 6000),
    );
    let v6 = eth(
        ROUTER,
        SPINE1,
        None,
        0x86dd,
        &ipv6(
            "2001:db8:7::1",
            "2001:db8:10::5",
            30,
            17,
            &[0, 1, 0, 2, 0, 8, 0, 0],
        ),
    );
    let routed_v4 = expected_routed_v4(&v4, 14, A);
    let mut routed_v6 = v6.clone();
    routed_v6[0..6].copy_from_slice(&A);
    routed_v6[6..12].copy_from_slice(&ROUTER);
    routed_v6[14 + 7] = 29;
    let to_a = Verdict::Forward {
        port: 0,
        tag: TagOp::Keep,
    };
    assert_eq!(
        through_pipeline(&mut f, &v4, 5, T0 + PICOS_PER_SECOND),
        (to_a, (0, v4.len()), routed_v4.clone()),
        "A's MAC is live: unicast to its port"
    );
    let later = T0 + 11 * PICOS_PER_SECOND;
    let mut lane = ExpressLane::default();
    for (frame, routed) in [(&v4, &routed_v4), (&v6, &routed_v6)] {
        let flooded = (
            Verdict::Flood {
                vlan: 10,
                ingress_tagged: false,
            },
            (0, frame.len()),
            routed.clone(),
        );
        assert_eq!(through_pipeline(&mut f, frame, 5, later), flooded);
        let (outcomes, express) = through_lane(
            &mut lane_side,
            &mut lane,
            std::slice::from_ref(frame),
            5,
            later,
        );
        assert_eq!(
            express, 1,
            "a nexthop behind a VLAN interface takes the lane"
        );
        assert_eq!(outcomes[0], flooded, "the lane floods as the pipeline does");
    }
    for side in [&f, &lane_side] {
        assert_eq!(side.counters().routed_flooded.get(), 2);
    }
    // A is asked for again, once (a neighbour at its MAC; one answer teaches VLAN 10's table
    // its port).
    for side in [&mut f, &mut lane_side] {
        assert_eq!(
            side.drain_requests().collect::<Vec<_>>(),
            vec![ControlRequest::Resolve {
                interface: 2,
                ip: "10.0.10.5".parse().unwrap()
            }]
        );
    }
    // Routed from VLAN 20, tagged on the trunk (PCP 5): the copies keep the tag the frame
    // came with (the engine gives each tagged copy VLAN 10's VID and takes it off the others).
    let mut from_20 = eth(
        ROUTER,
        C,
        Some(20),
        0x0800,
        &ipv4([10, 0, 20, 9], [10, 0, 10, 5], 30, 17, 1, 2),
    );
    from_20[14] |= 0xa0;
    assert_eq!(
        through_pipeline(&mut f, &from_20, 4, later),
        (
            Verdict::Flood {
                vlan: 10,
                ingress_tagged: true,
            },
            (0, from_20.len()),
            expected_routed_v4(&from_20, 18, A),
        )
    );
    assert_eq!(f.counters().routed_flooded.get(), 3);
    // A speaks: unicast again.
    f.process(&mut eth(B, A, None, 0x0800, &[]), 0, later + 1);
    assert_eq!(
        through_pipeline(&mut f, &v4, 5, later + 2),
        (to_a, (0, v4.len()), routed_v4)
    );
    assert_eq!(f.counters().routed_flooded.get(), 3);
}

#[test]
fn zero_and_router_mac_sources_are_dropped_before_learning_on_every_port() {
    // 00:00:00:00:00:00 is no station's address (invalid_source_mac, as a multicast source
    // is), and the router MAC as a source is the switch's own frames come back or a spoof
    // (own_source_mac): neither is learned, so neither becomes a destination, and frames to
    // the router MAC are still routed. Routed ports drop them too, and the express lane's
    // screen leaves them to the pipeline.
    let (mut f, mut lane_side) = forwarder_pair(&leaf_spec());
    resolve_spines([&mut f, &mut lane_side]);
    const ZERO: [u8; 6] = [0; 6];
    assert_eq!(
        f.process(&mut eth(B, ZERO, None, 0x0800, &[]), 0, T0),
        Verdict::Drop(DropReason::InvalidSourceMac)
    );
    assert_eq!(
        f.process(&mut eth(B, ROUTER, None, 0x0800, &[]), 1, T0),
        Verdict::Drop(DropReason::OwnSourceMac)
    );
    assert_eq!(
        f.process(&mut eth(B, ROUTER, Some(10), 0x0800, &[]), 4, T0),
        Verdict::Drop(DropReason::OwnSourceMac)
    );
    assert_eq!(f.mac_count(), 0, "nothing learned");
    assert_eq!(
        f.process(&mut eth(ZERO, A, None, 0x0800, &[]), 2, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        },
        "00:00:00:00:00:00 is unknown"
    );
    let packet = ipv4([10, 0, 10, 5], [10, 2, 3, 4], 64, 17, 1000, 2000);
    assert_eq!(
        f.process(&mut eth(ROUTER, A, None, 0x0800, &packet), 2, T0),
        Verdict::Forward {
            port: 5,
            tag: TagOp::Keep
        },
        "the router MAC is routed, not bridged to who claimed it"
    );
    let mut lane = ExpressLane::default();
    let routed = |src: [u8; 6]| {
        eth(
            ROUTER,
            src,
            None,
            0x0800,
            &ipv4([10, 7, 0, 1], [10, 2, 0, 9], 64, 17, 1, 2),
        )
    };
    for (src, reason) in [
        (ZERO, DropReason::InvalidSourceMac),
        (ROUTER, DropReason::OwnSourceMac),
        ([0x01, 0, 0x5e, 0, 0, 1], DropReason::InvalidSourceMac),
    ] {
        let frame = routed(src);
        let (outcomes, express) = through_lane(
            &mut lane_side,
            &mut lane,
            std::slice::from_ref(&frame),
            5,
            T0,
        );
        assert_eq!(express, 0, "{src:02x?} is screened out of the lane");
        assert_eq!(outcomes[0].0, Verdict::Drop(reason));
        assert_eq!(
            through_pipeline(&mut f, &frame, 5, T0).0,
            Verdict::Drop(reason)
        );
    }
    let (outcomes, express) = through_lane(&mut lane_side, &mut lane, &[routed(SPINE1)], 5, T0);
    assert_eq!(express, 1);
    assert_eq!(
        outcomes[0].0,
        Verdict::Forward {
            port: 5,
            tag: TagOp::Keep
        }
    );
}

#[test]
fn a_full_mac_table_forwards_new_sources_frames_and_counts_each_refusal() {
    // Room for two MACs: a third host's frames are still forwarded (and frames to it flood),
    // and every frame of it that tries to be learned counts in mac_table_full, in the block
    // the engine shares.
    let mut spec = leaf_spec();
    spec.mac_capacity = 2;
    let mut f = Forwarder::new(&spec).unwrap();
    let shared = std::sync::Arc::new(crate::counters::WorkerCounters::new(7));
    f.share_counters(std::sync::Arc::clone(&shared));
    let flood = Verdict::Flood {
        vlan: 10,
        ingress_tagged: false,
    };
    assert_eq!(f.process(&mut eth(C, A, None, 0x0800, &[]), 0, T0), flood);
    assert_eq!(f.process(&mut eth(C, B, None, 0x0800, &[]), 1, T0), flood);
    assert_eq!(shared.mac_table_full.get(), 0);
    for t in 0..2 {
        assert_eq!(
            f.process(&mut eth(A, C, None, 0x0800, &[]), 2, T0 + t),
            Verdict::Forward {
                port: 0,
                tag: TagOp::Keep
            }
        );
    }
    assert_eq!(shared.mac_table_full.get(), 2);
    assert_eq!(
        f.process(&mut eth(C, A, None, 0x0800, &[]), 0, T0 + 2),
        flood
    );
    assert_eq!(f.mac_count(), 2);
}
