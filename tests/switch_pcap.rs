//! End to end: `ironclos run` in switch mode over net_pcap ports, replayed in timestamp order.
//! Expected outputs are built here from the forwarding rules, not taken from a run.

mod common;

use common::frames::{
    self, BROADCAST, Mac, checksum, ethernet, ipv4_udp, ipv6_udp, routed_v4, tagged, untagged,
};
use common::{TestDir, port_stats, replay, replay_with, u64_at};
use control::pcap::PcapPacket;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const ROUTER: Mac = [0x02, 0, 0, 0, 0x01, 0];
const HOST_A: Mac = [0x02, 0, 0, 0, 0, 0x0a];
const HOST_B: Mac = [0x02, 0, 0, 0, 0, 0x0b];
const HOST_C: Mac = [0x02, 0, 0, 0, 0, 0x0c];
const HOST_D: Mac = [0x02, 0, 0, 0, 0, 0x0d];
const SPINE1: Mac = [0x02, 0, 0, 0, 0x51, 1];
const SPINE2: Mac = [0x02, 0, 0, 0, 0x51, 2];
const PORTS: usize = 6;

/// A leaf: p0, p1 access VLAN 10; p2 access VLAN 20; p3 trunk {10, 20}; p4, p5 routed uplinks.
fn leaf_config(dir: &TestDir) -> String {
    let mut text = format!(
        r#"[switch]
name = "leaf-test"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
ipv6 = ["2001:db8:10::1/64"]

[[vlan]]
id = 20
ipv4 = ["10.0.20.1/24"]

[[nexthop_group]]
name = "spines"
members = [{{ port = "p4", via = "10.255.0.0" }}, {{ port = "p5", via = "10.255.0.2" }}]

[[route]]
prefix = "10.1.0.0/16"
group = "spines"

[[route]]
prefix = "2001:db8:b::/48"
via = "2001:db8:ff::"
port = "p4"

[[neighbor]]
ip = "10.255.0.0"
mac = "02:00:00:00:51:01"
port = "p4"

[[neighbor]]
ip = "10.255.0.2"
mac = "02:00:00:00:51:02"
port = "p5"

[[neighbor]]
ip = "2001:db8:ff::"
mac = "02:00:00:00:51:01"
port = "p4"
"#,
        eal = dir.eal_toml()
    );
    let roles = [
        "vlan = { mode = \"access\", id = 10 }",
        "vlan = { mode = \"access\", id = 10 }",
        "vlan = { mode = \"access\", id = 20 }",
        "vlan = { mode = \"trunk\", allowed = [10, 20] }",
        "ipv4 = [\"10.255.0.1/31\"]\nipv6 = [\"2001:db8:ff::1/127\"]",
        "ipv4 = [\"10.255.0.3/31\"]",
    ];
    for (i, role) in roles.iter().enumerate() {
        let input = dir.file(&format!("in{i}.pcap"));
        let output = dir.file(&format!("out{i}.pcap"));
        text.push_str(&format!(
            "\n[[port]]\nname = \"p{i}\"\ndevargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\n{role}\n",
            input.display(),
            output.display()
        ));
    }
    text
}

/// `config` with each listed port's `mtu` set.
fn with_port_mtus(config: &str, mtus: &[(&str, u32)]) -> String {
    let mut config = config.to_owned();
    for (port, mtu) in mtus {
        let name = format!("name = \"{port}\"\n");
        config = config.replace(&name, &format!("{name}mtu = {mtu}\n"));
    }
    config
}

/// `leaf_config`'s static neighbour entry for spine 2 (10.255.0.2 behind p5), which tests
/// that want the switch to learn or resolve that spine remove.
const SPINE2_STATIC_NEIGHBOR: &str =
    "[[neighbor]]\nip = \"10.255.0.2\"\nmac = \"02:00:00:00:51:02\"\nport = \"p5\"\n";

/// Frames per input port, each with a time; ports without frames get empty files.
struct Trace {
    inputs: Vec<Vec<PcapPacket>>,
    clock_us: u64,
}

impl Trace {
    fn new() -> Trace {
        Trace::starting_at(1_000_000)
    }

    /// A trace whose first frame comes 10 us after `start_us` (pcap time).
    fn starting_at(start_us: u64) -> Trace {
        Trace {
            inputs: vec![Vec::new(); PORTS],
            clock_us: start_us,
        }
    }

    /// Appends a frame on `port`, 10 us after the previous frame of the whole trace.
    fn send(&mut self, port: usize, frame: Vec<u8>) {
        self.clock_us += 10;
        self.inputs[port].push(PcapPacket {
            timestamp_ns: self.clock_us * 1_000,
            data: frame,
        });
    }

    fn write(&self, dir: &TestDir) {
        for (i, packets) in self.inputs.iter().enumerate() {
            dir.write_pcap(&format!("in{i}.pcap"), packets);
        }
    }
}

fn outputs(dir: &TestDir) -> Vec<Vec<Vec<u8>>> {
    (0..PORTS)
        .map(|i| {
            dir.read_pcap(&format!("out{i}.pcap"))
                .into_iter()
                .map(|p| p.data)
                .collect()
        })
        .collect()
}

fn payload(tag: u8) -> Vec<u8> {
    vec![tag; 46]
}

/// IPv6 UDP from host A (2001:db8:10::5, on p0) to 2001:db8:b::7, which the leaf routes out of
/// p4 to spine 1.
fn v6_a_to_b(payload: &[u8]) -> Vec<u8> {
    ethernet(
        ROUTER,
        HOST_A,
        None,
        0x86dd,
        &ipv6_udp(
            "2001:db8:10::5".parse().unwrap(),
            "2001:db8:b::7".parse().unwrap(),
            64,
            1,
            2,
            payload,
        ),
    )
}

/// What the leaf makes of `v6_a_to_b`: spine 1's MAC, the router's, hop limit 63.
fn v6_routed_to_spine1(frame: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[0..6].copy_from_slice(&SPINE1);
    out[6..12].copy_from_slice(&ROUTER);
    out[14 + 7] = 63;
    out
}

/// An untagged IPv6 frame as the leaf routes it to `mac`: MACs rewritten, hop limit - 1.
fn routed_v6(frame: &[u8], mac: Mac) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[0..6].copy_from_slice(&mac);
    out[6..12].copy_from_slice(&ROUTER);
    out[14 + 7] -= 1;
    out
}

/// The unicast frames output `port` sent (the switch's broadcast and multicast left out).
fn unicast_out(dir: &TestDir, port: usize) -> Vec<Vec<u8>> {
    outputs(dir)[port]
        .iter()
        .filter(|f| f[0] & 1 == 0)
        .cloned()
        .collect()
}

fn drops(stats: &serde_json::Value) -> HashMap<String, u64> {
    stats["drops"]
        .as_object()
        .expect("drops")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

#[test]
fn mac_learning_then_unicast_and_flooding_per_vlan() {
    let dir = TestDir::new("sw-l2");
    let mut trace = Trace::new();
    let a_to_b_1 = ethernet(HOST_B, HOST_A, None, 0x0800, &payload(1));
    let b_to_a = ethernet(HOST_A, HOST_B, None, 0x0800, &payload(2));
    let a_to_b_2 = ethernet(HOST_B, HOST_A, None, 0x0800, &payload(3));
    let c_broadcast = ethernet(BROADCAST, HOST_C, None, 0x0800, &payload(4));
    let d_to_c = ethernet(HOST_C, HOST_D, Some(20), 0x0800, &payload(5));
    let d_to_a_wrong_vlan = ethernet(HOST_A, HOST_D, Some(20), 0x0800, &payload(6));
    trace.send(0, a_to_b_1.clone()); // unknown: flood in VLAN 10
    trace.send(1, b_to_a.clone()); // A was learned on p0
    trace.send(0, a_to_b_2.clone()); // B was learned on p1
    trace.send(2, c_broadcast.clone()); // broadcast in VLAN 20
    trace.send(3, d_to_c.clone()); // tagged 20 on the trunk to C (learned on p2)
    trace.send(3, d_to_a_wrong_vlan.clone()); // A is known in VLAN 10 only: flood in 20
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);

    assert_eq!(out[0], vec![b_to_a.clone()], "p0 gets only B's reply");
    assert_eq!(
        out[1],
        vec![a_to_b_1.clone(), a_to_b_2.clone()],
        "p1 gets the flood and the unicast"
    );
    assert_eq!(
        out[2],
        vec![untagged(&d_to_c), untagged(&d_to_a_wrong_vlan)],
        "p2 (VLAN 20) gets D's frames without the tag"
    );
    assert_eq!(
        out[3],
        vec![tagged(&a_to_b_1, 10), tagged(&c_broadcast, 20)],
        "the trunk gets VLAN-tagged floods"
    );
    assert!(
        out[4].is_empty() && out[5].is_empty(),
        "routed ports never see bridged traffic"
    );
    assert!(
        drops(&stats).values().all(|&n| n == 0),
        "{:?}",
        drops(&stats)
    );
    assert_eq!(u64_at(port_stats(&stats, "p3"), "/rx_packets"), 2);
    assert_eq!(u64_at(port_stats(&stats, "p3"), "/tx_packets"), 2);
}

#[test]
fn ipv4_and_ipv6_routing_rewrite_byte_by_byte_and_count_drops() {
    let dir = TestDir::new("sw-l3");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let to_b = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(10, 1, 2, 3), 64, 1000, 4791, &[7; 18]),
    );
    let v6 = v6_a_to_b(&[9; 8]);
    let expired = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(10, 1, 2, 3), 1, 1000, 4791, &[]),
    );
    let no_route = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(192, 0, 2, 1), 64, 1, 2, &[]),
    );
    let mut bad_checksum = to_b.clone();
    bad_checksum[24] ^= 0x55;
    // Tagged VLAN 10 from the trunk, routed out of an untagged uplink: the tag comes off.
    let from_trunk = ethernet(
        ROUTER,
        HOST_D,
        Some(10),
        0x0800,
        &ipv4_udp(
            Ipv4Addr::new(10, 0, 10, 9),
            Ipv4Addr::new(10, 1, 2, 3),
            9,
            1000,
            4791,
            &[],
        ),
    );
    trace.send(0, to_b.clone());
    trace.send(0, v6.clone());
    trace.send(0, expired.clone());
    trace.send(0, no_route.clone());
    trace.send(0, bad_checksum);
    trace.send(3, from_trunk.clone());
    trace.write(&dir);
    // A is a known neighbour, so the ICMP errors about its dropped packets can reach it.
    let config = format!("{}{}", leaf_config(&dir), HOSTS_AS_NEIGHBORS);
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);

    // The router tells A, from VLAN 10's address, back out of p0 (RFC 1812 4.3): Time
    // Exceeded for the expired packet, net unreachable for the one without a route, each
    // quoting the whole 28-byte datagram and not the Ethernet padding behind it.
    let a_gateway = Ipv4Addr::new(10, 0, 10, 1);
    assert_eq!(
        out[0],
        vec![
            icmpv4_error(HOST_A, None, a_gateway, a_ip, 11, &expired[14..14 + 28]),
            icmpv4_error(HOST_A, None, a_gateway, a_ip, 3, &no_route[14..14 + 28]),
        ],
        "p0 gets the ICMP errors, nothing else"
    );

    // 10.1.2.3 with ports 1000 -> 4791 hashes to one spine; both frames of that flow (same
    // 5-tuple? the trunk one has another source) must be exact rewrites.
    let uplink_frames: Vec<&Vec<u8>> = out[4].iter().chain(out[5].iter()).collect();
    let expected_v4 = [
        routed_v4(&to_b, 14, SPINE1, ROUTER),
        routed_v4(&to_b, 14, SPINE2, ROUTER),
    ];
    assert!(
        uplink_frames.iter().any(|f| expected_v4.contains(f)),
        "IPv4 frame rewritten exactly: {uplink_frames:?}"
    );
    let expected_v6 = v6_routed_to_spine1(&v6);
    assert!(
        out[4].contains(&expected_v6),
        "IPv6 frame on p4 with hop limit 63"
    );
    let trunk_routed = untagged(&from_trunk);
    let expected_trunk = [
        routed_v4(&trunk_routed, 14, SPINE1, ROUTER),
        routed_v4(&trunk_routed, 14, SPINE2, ROUTER),
    ];
    assert!(
        uplink_frames.iter().any(|f| expected_trunk.contains(f)),
        "trunk frame untagged and routed"
    );
    assert_eq!(uplink_frames.len(), 3);
    for frame in out[4]
        .iter()
        .chain(out[5].iter())
        .filter(|f| f[12..14] == [8, 0])
    {
        assert_eq!(
            frames::checksum(&frame[14..34]),
            0,
            "IPv4 checksum verifies"
        );
    }
    let drops = drops(&stats);
    assert_eq!(drops["ttl_expired"], 1);
    assert_eq!(drops["no_route"], 1);
    assert_eq!(drops["bad_ipv4_checksum"], 1);
    assert_eq!(drops.values().sum::<u64>(), 3);
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 2, "suppressed": 0, "not_sent": 0})
    );
    assert_eq!(stats["generated"], 2);
}

/// Static neighbours for the hosts of VLAN 10 the ICMP error tests answer (appended to
/// `leaf_config`; TOML takes more `[[neighbor]]`s after the ports).
const HOSTS_AS_NEIGHBORS: &str = r#"
[[neighbor]]
ip = "10.0.10.5"
mac = "02:00:00:00:00:0a"
vlan = 10

[[neighbor]]
ip = "2001:db8:10::5"
mac = "02:00:00:00:00:0a"
vlan = 10

[[neighbor]]
ip = "10.0.10.9"
mac = "02:00:00:00:00:0d"
vlan = 10

[[route]]
prefix = "10.9.0.0/16"
blackhole = true
"#;

/// The ICMP error RFC 792 / RFC 1812 describe, from the router to `dst_mac` (tagged `vlan`
/// if given): IPv4 version 4, IHL 5, DSCP CS6, total length, ID 0, DF, TTL 64, protocol 1,
/// header checksum; ICMP `msg_type` code 0, checksum, 4 unused bytes, then `quoted` (the
/// offending datagram from its IP header, at most 548 bytes so the error stays within 576).
fn icmpv4_error(
    dst_mac: Mac,
    vlan: Option<u16>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg_type: u8,
    quoted: &[u8],
) -> Vec<u8> {
    assert!(quoted.len() <= 548);
    let mut icmp = vec![msg_type, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(quoted);
    let c = frames::checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0xc0, 0, 0, 0, 0, 0x40, 0, 64, 1, 0, 0];
    ip[2..4].copy_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let c = frames::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&icmp);
    ethernet(dst_mac, ROUTER, vlan, 0x0800, &ip)
}

/// The ICMPv6 error of RFC 4443 from the router to `dst_mac`: traffic class 0, flow label 0,
/// next header 58, hop limit 64; `msg_type` code 0, checksum over the RFC 8200 8.1
/// pseudo-header, 4 unused bytes, then `quoted` (the offending packet, within 1280 bytes).
fn icmpv6_error(
    dst_mac: Mac,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    msg_type: u8,
    quoted: &[u8],
) -> Vec<u8> {
    assert!(quoted.len() <= 1280 - 48);
    let mut icmp = vec![msg_type, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(quoted);
    ethernet(
        dst_mac,
        ROUTER,
        None,
        0x86dd,
        &icmpv6_packet(src, dst, 64, icmp),
    )
}

/// An IPv6 packet (traffic class and flow label 0) carrying the ICMPv6 message `icmp` from
/// `src` to `dst` with `hop_limit`, its checksum computed over the RFC 8200 8.1 pseudo-header.
fn icmpv6_packet(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8, mut icmp: Vec<u8>) -> Vec<u8> {
    let mut pseudo = src.octets().to_vec();
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&(icmp.len() as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 58]);
    pseudo.extend_from_slice(&icmp);
    let c = frames::checksum(&pseudo);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[58, hop_limit]);
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&icmp);
    ip
}

#[test]
fn icmp_errors_go_back_to_the_source_tagged_as_its_port_needs_and_only_when_allowed() {
    let dir = TestDir::new("sw-icmp");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let d_ip = Ipv4Addr::new(10, 0, 10, 9);
    let gateway = Ipv4Addr::new(10, 0, 10, 1);
    let a6: Ipv6Addr = "2001:db8:10::5".parse().unwrap();
    let gateway6: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let from_a6 = |dst: &str, hop_limit: u8, payload: &[u8]| {
        ethernet(
            ROUTER,
            HOST_A,
            None,
            0x86dd,
            &ipv6_udp(a6, dst.parse().unwrap(), hop_limit, 3000, 4000, payload),
        )
    };
    // IPv6: hop limit 1 toward a routed prefix, and a destination without a route.
    let expired6 = from_a6("2001:db8:b::7", 1, &[5; 30]);
    let no_route6 = from_a6("2001:db9::1", 64, &[6; 30]);
    // From D on the trunk, tagged VLAN 10, with TTL 1: the error goes back tagged.
    let expired_tagged = ethernet(
        ROUTER,
        HOST_D,
        Some(10),
        0x0800,
        &ipv4_udp(d_ip, Ipv4Addr::new(10, 1, 2, 3), 1, 1000, 4791, &[8; 600]),
    );
    // Silent: a blackhole route; an ICMP error about to expire (RFC 1812 4.3.2.7); a
    // packet to VLAN 10's broadcast address with TTL 1.
    let blackholed = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(10, 9, 0, 1), 64, 1, 2, &[]),
    );
    let mut unreachable_about_something = vec![3, 1, 0, 0, 0, 0, 0, 0];
    unreachable_about_something.extend_from_slice(&[0x45; 28]);
    let c = frames::checksum(&unreachable_about_something);
    unreachable_about_something[2..4].copy_from_slice(&c.to_be_bytes());
    let mut error_expiring = ipv4_udp(a_ip, Ipv4Addr::new(10, 1, 2, 3), 1, 0, 0, &[]);
    error_expiring.truncate(20);
    error_expiring[9] = 1; // ICMP
    error_expiring[2..4].copy_from_slice(&(20u16 + 36).to_be_bytes());
    error_expiring[10..12].fill(0);
    let c = frames::checksum(&error_expiring);
    error_expiring[10..12].copy_from_slice(&c.to_be_bytes());
    error_expiring.extend_from_slice(&unreachable_about_something);
    let error_expiring = ethernet(ROUTER, HOST_A, None, 0x0800, &error_expiring);
    let to_broadcast = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(10, 0, 10, 255), 1, 1, 2, &[]),
    );
    trace.send(0, expired6.clone());
    trace.send(0, no_route6.clone());
    trace.send(3, expired_tagged.clone());
    trace.send(0, blackholed);
    trace.send(0, error_expiring);
    trace.send(0, to_broadcast);
    trace.write(&dir);
    let config = format!("{}{}", leaf_config(&dir), HOSTS_AS_NEIGHBORS);
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);

    let ip_len = |frame: &[u8]| 40 + usize::from(u16::from_be_bytes([frame[18], frame[19]]));
    assert_eq!(
        out[0],
        vec![
            icmpv6_error(
                HOST_A,
                gateway6,
                a6,
                3,
                &expired6[14..14 + ip_len(&expired6)]
            ),
            icmpv6_error(
                HOST_A,
                gateway6,
                a6,
                1,
                &no_route6[14..14 + ip_len(&no_route6)]
            ),
        ],
        "ICMPv6 Time Exceeded and no route from VLAN 10's address"
    );
    // 628 bytes offered: 548 quoted, so the datagram is exactly 576 bytes; out of the trunk
    // with the VLAN 10 tag D's frame arrived with.
    let quoted = &expired_tagged[18..18 + 548];
    assert_eq!(
        out[3],
        vec![icmpv4_error(HOST_D, Some(10), gateway, d_ip, 11, quoted)],
        "tagged Time Exceeded on the trunk"
    );
    assert_eq!(out[3][0].len(), 18 + 576);
    assert!(out[1].is_empty() && out[2].is_empty() && out[4].is_empty() && out[5].is_empty());
    let drops = drops(&stats);
    assert_eq!(drops["ttl_expired"], 4);
    assert_eq!(drops["no_route"], 1);
    assert_eq!(drops["blackhole"], 1);
    assert_eq!(drops.values().sum::<u64>(), 6);
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 3, "suppressed": 2, "not_sent": 0}),
        "no error about an error or a broadcast; the blackhole never asks"
    );
}

#[test]
fn unresolved_hosts_are_resolved_with_arp_then_reached() {
    let dir = TestDir::new("sw-arp");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let gateway = Ipv4Addr::new(10, 0, 10, 1);
    let from_spine = |seq: u8| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x0800,
            &ipv4_udp(Ipv4Addr::new(10, 7, 0, 1), a_ip, 30, 5000, 6000, &[seq; 4]),
        )
    };
    // 1. A packet for A arrives before A is known: dropped, and the switch ARPs for A on
    //    every VLAN 10 port (tagged on the trunk).
    trace.send(4, from_spine(1));
    // 2. A answers the switch.
    let reply = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0806,
        &frames::arp(2, HOST_A, a_ip, ROUTER, gateway),
    );
    trace.send(0, reply);
    // 3. Now the packet is routed to A.
    let second = from_spine(2);
    trace.send(4, second.clone());
    // 4. A asks for its gateway; the switch answers.
    let request = ethernet(
        BROADCAST,
        HOST_A,
        None,
        0x0806,
        &frames::arp(1, HOST_A, a_ip, [0; 6], gateway),
    );
    trace.send(0, request);
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);

    let arp_request = ethernet(
        BROADCAST,
        ROUTER,
        None,
        0x0806,
        &frames::arp(1, ROUTER, gateway, [0; 6], a_ip),
    );
    let arp_reply = ethernet(
        HOST_A,
        ROUTER,
        None,
        0x0806,
        &frames::arp(2, ROUTER, gateway, HOST_A, a_ip),
    );
    assert_eq!(
        out[0],
        vec![
            arp_request.clone(),
            routed_v4(&second, 14, HOST_A, ROUTER),
            arp_reply
        ]
    );
    assert_eq!(
        out[1],
        vec![arp_request.clone()],
        "the ARP request floods VLAN 10"
    );
    // Padding of a frame built tagged may differ from a padded frame tagged later: compare the
    // Ethernet + tag + ARP bytes and require a legal length.
    assert_eq!(out[3].len(), 1);
    assert_eq!(
        out[3][0][..18 + 28],
        tagged(&arp_request, 10)[..18 + 28],
        "tagged on the trunk"
    );
    assert!(out[3][0].len() >= 60);
    assert!(out[2].is_empty(), "VLAN 20 hears nothing");
    assert_eq!(drops(&stats)["neighbor_unresolved"], 1);
    assert_eq!(
        stats["punted"], 2,
        "the ARP reply and the ARP request for the gateway"
    );
}

#[test]
fn ecmp_spreads_flows_within_the_binomial_tolerance_and_keeps_each_flow_on_one_member() {
    let dir = TestDir::new("sw-ecmp");
    let mut trace = Trace::new();
    let flows = 2000u16;
    let mut sent = Vec::new();
    for round in 0..2u8 {
        for flow in 0..flows {
            let dst = Ipv4Addr::new(10, 1, (flow >> 8) as u8, flow as u8);
            let frame = ethernet(
                ROUTER,
                HOST_A,
                None,
                0x0800,
                &ipv4_udp(
                    Ipv4Addr::new(10, 0, 10, 5),
                    dst,
                    64,
                    10_000 + flow,
                    4791,
                    &[round; 8],
                ),
            );
            sent.push(frame.clone());
            trace.send(0, frame);
        }
    }
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);
    assert_eq!(
        out[4].len() + out[5].len(),
        sent.len(),
        "every packet leaves on an uplink"
    );
    // Each flow (destination address) on exactly one member, both rounds.
    let mut member_of: HashMap<[u8; 4], usize> = HashMap::new();
    for (port, frames) in [(4, &out[4]), (5, &out[5])] {
        for f in frames {
            let dst: [u8; 4] = f[30..34].try_into().unwrap();
            let expected_mac = if port == 4 { SPINE1 } else { SPINE2 };
            assert_eq!(f[0..6], expected_mac, "MAC of the member's spine");
            let previous = member_of.insert(dst, port);
            assert!(
                previous.is_none_or(|p| p == port),
                "flow {dst:?} split across members"
            );
        }
    }
    assert_eq!(member_of.len(), usize::from(flows));
    // Two equal members own 128 of 256 buckets each; a flow's bucket is a fair coin, so the
    // count on p4 is Binomial(2000, 1/2): mean 1000, sd sqrt(500) = 22.4. Five sd fails only
    // for a real skew (probability 6e-7 otherwise).
    let on_p4 = member_of.values().filter(|&&p| p == 4).count() as f64;
    assert!(
        (on_p4 - 1000.0).abs() <= 5.0 * 22.4,
        "p4 carries {on_p4} of 2000 flows"
    );
    assert!(drops(&stats).values().all(|&n| n == 0));
}

#[test]
fn replay_is_deterministic() {
    let run = || {
        let dir = TestDir::new("sw-det");
        let mut trace = Trace::new();
        for i in 0..300u16 {
            let port = usize::from(i % 4);
            let src = [0x02, 0, 0, 0, 1, (i % 7) as u8];
            let dst = [0x02, 0, 0, 0, 1, (i % 5) as u8];
            let vlan = if port == 3 {
                Some(10 + 10 * (i % 2))
            } else {
                None
            };
            trace.send(port, ethernet(dst, src, vlan, 0x0800, &payload(i as u8)));
        }
        trace.write(&dir);
        let (_, stats) = replay(&dir, &leaf_config(&dir));
        (outputs(&dir), stats["drops"].clone())
    };
    let first = run();
    let second = run();
    assert_eq!(first, second);
    let _: Vec<Ipv6Addr> = Vec::new();
}

/// p0: a host in VLAN 10; p1..p3: routed uplinks in one ECMP group.
fn three_uplinks_config(dir: &TestDir) -> String {
    let mut text = format!(
        r#"[switch]
name = "leaf-ecmp3"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}
[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
[[nexthop_group]]
name = "spines"
members = [{{ port = "p1", via = "10.255.0.0" }}, {{ port = "p2", via = "10.255.0.2" }}, {{ port = "p3", via = "10.255.0.4" }}]
[[route]]
prefix = "10.1.0.0/16"
group = "spines"
"#,
        eal = dir.eal_toml()
    );
    for (i, spine) in [(1, 0u8), (2, 2), (3, 4)] {
        text.push_str(&format!(
            "[[neighbor]]\nip = \"10.255.0.{spine}\"\nmac = \"02:00:00:00:51:0{i}\"\nport = \"p{i}\"\n"
        ));
    }
    let roles = [
        "vlan = { mode = \"access\", id = 10 }".to_owned(),
        "ipv4 = [\"10.255.0.1/31\"]".to_owned(),
        "ipv4 = [\"10.255.0.3/31\"]".to_owned(),
        "ipv4 = [\"10.255.0.5/31\"]".to_owned(),
    ];
    for (i, role) in roles.iter().enumerate() {
        text.push_str(&format!(
            "[[port]]\nname = \"p{i}\"\ndevargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\n{role}\n",
            dir.file(&format!("in{i}.pcap")).display(),
            dir.file(&format!("out{i}.pcap")).display()
        ));
    }
    text
}

#[test]
fn a_lost_uplink_moves_only_its_own_flows_and_gets_them_back_when_it_returns() {
    let dir = TestDir::new("sw-failover");
    let flows = 600u16;
    let mut packets = Vec::new();
    let mut t_us = 1_000_000u64;
    let mut phase_start = Vec::new();
    for phase in 1..=3u8 {
        phase_start.push(t_us);
        for flow in 0..flows {
            t_us += 1;
            let dst = Ipv4Addr::new(10, 1, (flow >> 8) as u8, flow as u8);
            let udp = ipv4_udp(
                Ipv4Addr::new(10, 0, 10, 5),
                dst,
                64,
                20_000 + flow,
                4791,
                &[phase; 8],
            );
            packets.push(PcapPacket {
                timestamp_ns: t_us * 1_000,
                data: ethernet(ROUTER, HOST_A, None, 0x0800, &udp),
            });
        }
        t_us += 100;
    }
    dir.write_pcap("in0.pcap", &packets);
    // While p2 is down a frame arriving on it must be dropped as link_down, not forwarded.
    let on_down_link = ethernet(
        ROUTER,
        SPINE2,
        None,
        0x0800,
        &ipv4_udp(
            Ipv4Addr::new(10, 7, 0, 1),
            Ipv4Addr::new(10, 0, 10, 5),
            9,
            1,
            2,
            &[9; 8],
        ),
    );
    dir.write_pcap(
        "in2.pcap",
        &[PcapPacket {
            timestamp_ns: (phase_start[1] + 5) * 1_000,
            data: on_down_link,
        }],
    );
    for i in [1, 3] {
        dir.write_pcap(&format!("in{i}.pcap"), &[]);
    }
    // p2 goes down just before phase 2 starts and comes back just before phase 3.
    let schedule = format!(
        "[[event]]\nat_us = {}\nport = \"p2\"\nlink = \"down\"\n[[event]]\nat_us = {}\nport = \"p2\"\nlink = \"up\"\n",
        phase_start[1], phase_start[2]
    );
    let schedule_path = dir.file("schedule.toml");
    std::fs::write(&schedule_path, schedule).unwrap();
    let (_, stats) = replay_with(
        &dir,
        &three_uplinks_config(&dir),
        &["--schedule", schedule_path.to_str().unwrap()],
    );

    // member[phase][flow] = output port.
    let mut member: Vec<HashMap<[u8; 4], usize>> = vec![HashMap::new(); 4];
    for port in 1..=3usize {
        for frame in dir.read_pcap(&format!("out{port}.pcap")) {
            let dst: [u8; 4] = frame.data[30..34].try_into().unwrap();
            let phase = usize::from(frame.data[42]);
            assert!(
                member[phase].insert(dst, port).is_none(),
                "flow {dst:?} sent twice in phase {phase}"
            );
        }
    }
    for (phase, members) in member.iter().enumerate().skip(1) {
        assert_eq!(
            members.len(),
            usize::from(flows),
            "every packet of phase {phase} leaves"
        );
    }
    assert!(
        member[1].values().filter(|&&p| p == 2).count() > 100,
        "p2 carried flows before it failed"
    );
    for (dst, &before) in &member[1] {
        let during = member[2][dst];
        assert_ne!(during, 2, "nothing is sent to the down port");
        if before != 2 {
            assert_eq!(
                during, before,
                "flow {dst:?} was not on the lost member and must not move"
            );
        }
        let after = member[3][dst];
        assert!(
            after == during || after == 2,
            "on recovery flows only move to the returning member"
        );
    }
    let back = member[3].values().filter(|&&p| p == 2).count();
    assert!(back > 100, "the returning member takes flows back ({back})");
    let drops = drops(&stats);
    assert_eq!(
        drops["link_down"], 1,
        "the frame that arrived on the down link"
    );
    assert_eq!(drops.values().sum::<u64>(), 1, "{drops:?}");
}

#[test]
fn scheduled_updates_and_config_changes_take_effect_at_their_trace_times() {
    // Ten frames from host A to 10.9.0.1, 10 us apart (trace times 1_000_010 .. 1_000_100 us).
    // No route at first; at 1_000_045 a batch adds 10.9.0.0/16 via spine 2 (p5); at 1_000_075
    // another deletes it; at 1_000_085 a config file adds it via spine 1 (p4). So frames 0-3
    // and 7 are no-route drops, 4-6 leave on p5 and 8-9 on p4.
    let mut trace = Trace::new();
    let frames: Vec<Vec<u8>> = (0..10u8)
        .map(|k| {
            let ip = ipv4_udp(
                Ipv4Addr::new(10, 0, 10, 5),
                Ipv4Addr::new(10, 9, 0, 1),
                64,
                1000,
                2000,
                &payload(k),
            );
            ethernet(ROUTER, HOST_A, None, 0x0800, &ip)
        })
        .collect();
    for frame in &frames {
        trace.send(0, frame.clone());
    }
    let on = |range: std::ops::Range<usize>, spine: Mac| -> Vec<Vec<u8>> {
        frames[range]
            .iter()
            .map(|f| routed_v4(f, 14, spine, ROUTER))
            .collect()
    };
    // The same a second time with the trace and schedule moved to 2023-11-14 22:13:20 UTC
    // (gen-trace's start, as any capture's, beyond what picoseconds since 1970 hold in a
    // u64): virtual time then counts from that day's midnight, the run's `trace_origin_us`.
    for (start_us, origin_us) in [
        (1_000_000u64, 0u64),
        (1_700_000_000_000_000, 1_699_920_000_000_000),
    ] {
        let dir = TestDir::new(&format!("switch-schedule-updates-{start_us}"));
        let mut moved = Trace::starting_at(start_us);
        for frame in &frames {
            moved.send(0, frame.clone());
        }
        moved.write(&dir);
        let config = leaf_config(&dir);
        let route_via_p4 =
            "\n[[route]]\nprefix = \"10.9.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"p4\"\n";
        std::fs::write(dir.file("v2.toml"), format!("{config}{route_via_p4}")).unwrap();
        let schedule = format!(
            r#"
[[event]]
at_us = {}
updates = [{{ op = "add_route", prefix = "10.9.0.0/16", via = "10.255.0.2", dev = "p5" }}]
[[event]]
at_us = {}
updates = [{{ op = "del_route", prefix = "10.9.0.0/16" }}]
[[event]]
at_us = {}
config = "v2.toml"
"#,
            start_us - 1_000_000 + 1000045,
            start_us - 1_000_000 + 1000075,
            start_us - 1_000_000 + 1000085
        );
        let schedule_path = dir.file("schedule.toml");
        std::fs::write(&schedule_path, schedule).unwrap();
        let (_, stats) = replay_with(
            &dir,
            &config,
            &["--schedule", schedule_path.to_str().unwrap()],
        );
        let out = outputs(&dir);
        assert_eq!(out[5], on(4..7, SPINE2), "p5 while the batch's route stood");
        assert_eq!(out[4], on(8..10, SPINE1), "p4 after the config change");
        assert_eq!(drops(&stats)["no_route"], 5);
        assert_eq!(stats["trace_origin_us"], origin_us);
    }

    // Events at the same time apply in file order (README): add via p5, delete, add via p4
    // leaves the route via p4 for frames 4-9; any other order refuses the delete or ends on p5.
    let dir = TestDir::new("switch-schedule-ties");
    trace.write(&dir);
    let add = |spine: &str, port: &str| {
        format!(
            "[[event]]\nat_us = 1000045\nupdates = [{{ op = \"add_route\", prefix = \"10.9.0.0/16\", via = \"{spine}\", dev = \"{port}\" }}]\n"
        )
    };
    let delete = "[[event]]\nat_us = 1000045\nupdates = [{ op = \"del_route\", prefix = \"10.9.0.0/16\" }]\n";
    let schedule_path = dir.file("schedule.toml");
    std::fs::write(
        &schedule_path,
        format!(
            "{}{delete}{}",
            add("10.255.0.2", "p5"),
            add("10.255.0.0", "p4")
        ),
    )
    .unwrap();
    let (_, stats) = replay_with(
        &dir,
        &leaf_config(&dir),
        &["--schedule", schedule_path.to_str().unwrap()],
    );
    let out = outputs(&dir);
    assert_eq!(
        out[4],
        on(4..10, SPINE1),
        "the last of the tied events stands"
    );
    assert!(out[5].is_empty());
    assert_eq!(drops(&stats)["no_route"], 4);

    // A batch the switch refuses (deleting a route it does not have) ends the run with
    // status 2, naming the event, at its time: nothing of the batch applies and the frames
    // after it are not replayed.
    let dir = TestDir::new("switch-schedule-refused");
    trace.write(&dir);
    let config_path = dir.file("ironclos.toml");
    std::fs::write(&config_path, leaf_config(&dir)).unwrap();
    let schedule_path = dir.file("schedule.toml");
    std::fs::write(
        &schedule_path,
        "[[event]]\nat_us = 1000045\nupdates = [{ op = \"add_route\", prefix = \"10.9.0.0/16\", via = \"10.255.0.2\", dev = \"p5\" }, { op = \"del_route\", prefix = \"10.77.0.0/16\" }]\n",
    )
    .unwrap();
    let stats_path = dir.file("stats.json");
    let run = common::run_ironclos(
        &[
            "run",
            "--config",
            config_path.to_str().unwrap(),
            "--exit-when-idle",
            "--stats-json",
            stats_path.to_str().unwrap(),
            "--schedule",
            schedule_path.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(run.status, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("event[0] at 1000045 us was refused")
            && run.stderr.contains("update 1"),
        "{}",
        run.stderr
    );
    assert!(
        dir.read_pcap("out5.pcap").is_empty(),
        "the batch's route never applied"
    );
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).unwrap()).unwrap();
    assert_eq!(stats["stop_cause"], "schedule_refused");
    assert_eq!(
        drops(&stats)["no_route"],
        4,
        "frames 0-3 came before the event; 4-9 were never replayed"
    );
}

#[test]
fn jumbo_frames_route_when_the_ports_mtu_allows_them_and_are_counted_when_not() {
    // IPv6 from A (p0, VLAN 10) to 2001:db8:b::7, routed out of p4 to spine 1: a 4000-byte
    // frame and the largest MTU 9000 allows untagged (14 + 9000 bytes).
    let frame = |len: usize| v6_a_to_b(&vec![0x5a; len - 14 - 40 - 8]);
    let jumbo = [frame(4000), frame(9014)];
    let run = |name: &str, mtu: bool| {
        let dir = TestDir::new(name);
        let mut trace = Trace::new();
        for f in &jumbo {
            trace.send(0, f.clone());
        }
        trace.write(&dir);
        let mut config = leaf_config(&dir);
        if mtu {
            for port in ["p0", "p4"] {
                let name = format!("name = \"{port}\"\n");
                config = config.replace(&name, &format!("{name}mtu = 9000\n"));
            }
        }
        let (_, stats) = replay(&dir, &config);
        (outputs(&dir)[4].clone(), drops(&stats))
    };
    // With MTU 9000 on both ports the mbufs hold such frames: both leave, rewritten.
    let (out, dropped) = run("sw-jumbo", true);
    assert_eq!(
        out,
        jumbo
            .iter()
            .map(|f| v6_routed_to_spine1(f))
            .collect::<Vec<_>>()
    );
    assert_eq!(dropped["multi_segment"], 0);
    // Without an MTU the mbufs hold 2048-byte frames: longer ones arrive chained and are
    // dropped as such, counted.
    let (out, dropped) = run("sw-jumbo-no-mtu", false);
    assert!(out.is_empty());
    assert_eq!(dropped["multi_segment"], 2);
}

/// `frame` (an ICMP or ICMPv6 error built by `icmpv4_error` / `icmpv6_error`, untagged) with
/// its message's code and second word set and its checksum computed again.
fn with_code_and_word(mut frame: Vec<u8>, code: u8, word: u32) -> Vec<u8> {
    let ipv6 = frame[12..14] == [0x86, 0xdd];
    let at = 14 + if ipv6 { 40 } else { 20 };
    frame[at + 1] = code;
    frame[at + 4..at + 8].copy_from_slice(&word.to_be_bytes());
    frame[at + 2..at + 4].fill(0);
    let mut summed = Vec::new();
    if ipv6 {
        summed.extend_from_slice(&frame[14 + 8..14 + 40]);
        summed.extend_from_slice(&((frame.len() - at) as u32).to_be_bytes());
        summed.extend_from_slice(&[0, 0, 0, 58]);
    }
    summed.extend_from_slice(&frame[at..]);
    let c = frames::checksum(&summed);
    frame[at + 2..at + 4].copy_from_slice(&c.to_be_bytes());
    frame
}

/// The error host A (p0) hears from VLAN 10's IPv4 address about `frame`, an IPv4 frame it
/// sent: Destination Unreachable, code 4 (fragmentation needed and DF set), the next-hop
/// `mtu` in the low 16 bits of the second word (RFC 1191), 548 bytes quoted (576 in all).
fn frag_needed_to_a(frame: &[u8], mtu: u32) -> Vec<u8> {
    let (gateway, a_ip) = (Ipv4Addr::new(10, 0, 10, 1), Ipv4Addr::new(10, 0, 10, 5));
    let quoted = &frame[14..14 + 548];
    with_code_and_word(icmpv4_error(HOST_A, None, gateway, a_ip, 3, quoted), 4, mtu)
}

/// The Packet Too Big host A hears from VLAN 10's IPv6 address about `frame`, an IPv6 frame
/// it sent: code 0, the `mtu` in the second word (RFC 8201, RFC 4443 3.2), as much quoted as
/// fits 1280 bytes.
fn too_big_to_a(frame: &[u8], mtu: u32) -> Vec<u8> {
    let gateway6: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let a6: Ipv6Addr = "2001:db8:10::5".parse().unwrap();
    let ip_len = 40 + usize::from(u16::from_be_bytes([frame[18], frame[19]]));
    let quoted = &frame[14..14 + (1280 - 48).min(ip_len)];
    with_code_and_word(icmpv6_error(HOST_A, gateway6, a6, 2, quoted), 0, mtu)
}

#[test]
fn packets_longer_than_the_egress_mtu_are_fragmented_or_answered_with_packet_too_big() {
    let dir = TestDir::new("sw-mtu");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    // From A (p0, MTU 9000) to the spines (p4 and p5, MTU 1400), `len` bytes of IP.
    let v4 = |len: usize, df: bool| {
        let mut ip = ipv4_udp(
            a_ip,
            Ipv4Addr::new(10, 1, 2, 3),
            64,
            1000,
            4791,
            &vec![0x77; len - 28],
        );
        if !df {
            ip[6] = 0;
            ip[10..12].fill(0);
            let c = frames::checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        ethernet(ROUTER, HOST_A, None, 0x0800, &ip)
    };
    let df_long = v4(1600, true);
    let long = v4(1600, false);
    let at_mtu = v4(1400, false);
    let v6_long = v6_a_to_b(&vec![0x66; 1500 - 48]);
    for frame in [&df_long, &long, &at_mtu, &v6_long] {
        trace.send(0, frame.clone());
    }
    trace.write(&dir);
    let mut config = format!("{}{}", leaf_config(&dir), HOSTS_AS_NEIGHBORS);
    config = with_port_mtus(&config, &[("p0", 9000), ("p4", 1400), ("p5", 1400)]);
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);

    // A hears Fragmentation Needed with the next-hop MTU (RFC 1191) about the DF packet and
    // Packet Too Big with the MTU (RFC 4443 3.2) about the IPv6 one, from VLAN 10's
    // addresses, quoting as much as each family's error may hold.
    assert_eq!(
        out[0],
        vec![
            frag_needed_to_a(&df_long, 1400),
            too_big_to_a(&v6_long, 1400)
        ]
    );
    // The packet that may be fragmented leaves in two fragments (RFC 791: (1400 - 20) / 8 * 8
    // = 1376 data bytes, then the other 204), each routed: TTL 63, its own length, flags,
    // offset and checksum; the one that fits leaves whole.
    let fragment = |data: std::ops::Range<usize>, more: bool| {
        let ip = &long[14..];
        let mut header = ip[..20].to_vec();
        header[2..4].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        let flags = if more { 0x2000u16 } else { 0 } | (data.start / 8) as u16;
        header[6..8].copy_from_slice(&flags.to_be_bytes());
        header[8] = 63;
        header[10..12].fill(0);
        let c = frames::checksum(&header);
        header[10..12].copy_from_slice(&c.to_be_bytes());
        header.extend_from_slice(&ip[20 + data.start..20 + data.end]);
        header
    };
    let mut expected = vec![
        fragment(0..1376, true),
        fragment(1376..1580, false),
        routed_v4(&at_mtu, 14, SPINE1, ROUTER)[14..].to_vec(),
    ];
    let mut sent = Vec::new();
    for (port, spine) in [(4, SPINE1), (5, SPINE2)] {
        for frame in &out[port] {
            assert_eq!(
                frame[..12],
                [spine, ROUTER].concat(),
                "p{port} goes to its spine"
            );
            assert_eq!(frame[12..14], [0x08, 0x00]);
            sent.push(frame[14..].to_vec());
        }
    }
    expected.sort();
    sent.sort();
    assert_eq!(sent, expected);
    let fragments_on = |port: usize| {
        out[port]
            .iter()
            .filter(|f| f[14 + 6] & 0x20 != 0 || f[14 + 7] != 0)
            .count()
    };
    assert!(
        fragments_on(4) == 2 || fragments_on(5) == 2,
        "both fragments take one uplink"
    );

    let drops = drops(&stats);
    assert_eq!(drops["mtu_exceeded"], 2);
    assert_eq!(drops.values().sum::<u64>(), 2);
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 2, "suppressed": 0, "not_sent": 0})
    );
    assert_eq!(
        stats["fragmentation"],
        serde_json::json!({"packets": 1, "fragments": 2})
    );
}

/// `leaf_config`'s static neighbour entry for spine 1's IPv6 address (2001:db8:ff:: behind
/// p4), which tests that want it unresolved remove.
const SPINE1_V6_STATIC_NEIGHBOR: &str =
    "[[neighbor]]\nip = \"2001:db8:ff::\"\nmac = \"02:00:00:00:51:01\"\nport = \"p4\"\n";

#[test]
fn packets_too_big_for_an_unresolved_neighbour_are_answered_with_the_mtu_and_never_resolved() {
    // As Linux (ip_forward's ip_exceeds_mtu, ip6_forward's ip6_pkt_too_big, before the
    // neighbour layer): the source hears the next-hop MTU whether the neighbour is resolved
    // or not, and a packet dropped as too big makes the switch ask for no neighbour. From A
    // (p0, MTU 9000): IPv4 with DF to 10.5/16 via spine 2 (10.255.0.2 on p5, MTU 1400, not
    // known), IPv6 to 2001:db8:b::/48 via spine 1 (2001:db8:ff:: on p4, MTU 1280, not known),
    // and IPv4 with DF to a VLAN 20 host never seen (VLAN 20's MTU: p2's 1300).
    let dir = TestDir::new("sw-mtu-unresolved");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let v4_df = |dst: Ipv4Addr, len: usize| {
        let ip = ipv4_udp(a_ip, dst, 64, 1000, 4791, &vec![0x77; len - 28]);
        assert_eq!(ip[6] & 0x40, 0x40, "DF");
        ethernet(ROUTER, HOST_A, None, 0x0800, &ip)
    };
    let via_spine2 = v4_df(Ipv4Addr::new(10, 5, 0, 1), 1600);
    let v6_long = v6_a_to_b(&vec![0x66; 1500 - 48]);
    let to_vlan20 = v4_df(Ipv4Addr::new(10, 0, 20, 7), 1400);
    for frame in [&via_spine2, &v6_long, &to_vlan20] {
        trace.send(0, frame.clone());
    }
    trace.write(&dir);
    let mut config = format!("{}{}", leaf_config(&dir), HOSTS_AS_NEIGHBORS)
        .replace(SPINE2_STATIC_NEIGHBOR, "")
        .replace(SPINE1_V6_STATIC_NEIGHBOR, "");
    assert!(!config.contains("ip = \"2001:db8:ff::\"") && !config.contains("\"10.255.0.2\"\nmac"));
    config.push_str("\n[[route]]\nprefix = \"10.5.0.0/16\"\nvia = \"10.255.0.2\"\nport = \"p5\"\n");
    config = with_port_mtus(
        &config,
        &[("p0", 9000), ("p2", 1300), ("p4", 1280), ("p5", 1400)],
    );
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);

    // RFC 1191: Destination Unreachable, code 4 (fragmentation needed and DF set), the
    // next-hop MTU in the low 16 bits of the second word; RFC 8201 / RFC 4443 3.2: Packet Too
    // Big, code 0, the MTU in the second word. From VLAN 10's addresses, quoting as much as
    // each family's error may hold (576 bytes in all for IPv4, 1280 for IPv6).
    assert_eq!(
        out[0],
        vec![
            frag_needed_to_a(&via_spine2, 1400),
            too_big_to_a(&v6_long, 1280),
            frag_needed_to_a(&to_vlan20, 1300),
        ]
    );
    // No ARP for 10.255.0.2 (p5) or for the VLAN 20 host (p2, p3), no Neighbor Solicitation
    // for 2001:db8:ff:: (p4): nothing else leaves.
    for (port, frames) in out.iter().enumerate().skip(1) {
        assert!(frames.is_empty(), "p{port} sent {frames:02x?}");
    }
    let drops = drops(&stats);
    assert_eq!(drops["mtu_exceeded"], 3);
    assert_eq!(drops.values().sum::<u64>(), 3, "{drops:?}");
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 3, "suppressed": 0, "not_sent": 0})
    );
}

#[test]
fn ipv4_mapped_ipv6_sources_are_martian_ipv4_mapped_destinations_are_routed() {
    // RFC 4291 2.5.5.2: IPv4-mapped addresses (::ffff:0:0/96) are not used on the wire. Linux
    // drops a packet from one on input (ip6_rcv_core) and routes one to such a destination by
    // its FIB; so does the switch. From spine 1 on p4 (a routed port, the express lane's) to
    // host A, and from A to a route covering ::ffff:0:0/96 (via spine 1).
    let dir = TestDir::new("sw-v4-mapped");
    let mut trace = Trace::new();
    let a6: Ipv6Addr = "2001:db8:10::5".parse().unwrap();
    let from_spine = |src: &str| {
        let packet = ipv6_udp(src.parse().unwrap(), a6, 30, 5000, 6000, &[1; 4]);
        ethernet(ROUTER, SPINE1, None, 0x86dd, &packet)
    };
    // A first: the switch learns where A's MAC is.
    let to_mapped = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x86dd,
        &ipv6_udp(
            a6,
            "::ffff:10.1.2.3".parse().unwrap(),
            30,
            5000,
            6000,
            &[2; 4],
        ),
    );
    trace.send(0, to_mapped.clone());
    for src in [
        "::ffff:10.7.0.1",
        "::ffff:0.0.0.0",
        "::ffff:255.255.255.255",
    ] {
        trace.send(4, from_spine(src));
    }
    // Next to the block: routed.
    let beside = from_spine("::fffe:ffff:ffff");
    trace.send(4, beside.clone());
    trace.write(&dir);
    let config = format!(
        "{}{}\n[[route]]\nprefix = \"::ffff:0:0/96\"\nvia = \"2001:db8:ff::\"\nport = \"p4\"\n",
        leaf_config(&dir),
        HOSTS_AS_NEIGHBORS
    );
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    assert_eq!(out[0], vec![routed_v6(&beside, HOST_A)]);
    assert_eq!(out[4], vec![routed_v6(&to_mapped, SPINE1)]);
    for port in [1, 2, 3, 5] {
        assert!(out[port].is_empty(), "p{port} sent {:02x?}", out[port]);
    }
    let drops = drops(&stats);
    assert_eq!(drops["martian_source"], 3);
    assert_eq!(drops.values().sum::<u64>(), 3, "{drops:?}");
}

#[test]
fn a_replay_that_runs_out_of_mbufs_says_it_stalled() {
    // 3000 frames at one instant into a 400G port, flooded to a 10G one, with 1023 mbufs:
    // the 10G port's queue holds the frames in mbufs until the pool runs dry, so the input
    // cannot be read to its end, and the run must say so (exit 3, stop cause
    // `replay_stalled`), not that the inputs were exhausted.
    let dir = TestDir::new("sw-stall");
    let frame = ethernet(HOST_B, HOST_A, None, 0x0800, &[0x11; 1000]);
    let packets: Vec<PcapPacket> = (0..3000)
        .map(|_| PcapPacket {
            timestamp_ns: 1_000_000_000,
            data: frame.clone(),
        })
        .collect();
    dir.write_pcap("in0.pcap", &packets);
    dir.write_pcap("in1.pcap", &[]);
    let mut config = format!(
        "[switch]\nname = \"stall\"\nrouter_mac = \"02:00:00:00:01:00\"\n[dataplane]\n\
         mode = \"switch\"\nmbufs = 1023\n{}\n[[vlan]]\nid = 10\n",
        dir.eal_toml()
    );
    for (i, speed) in [400, 10].into_iter().enumerate() {
        config.push_str(&format!(
            "\n[[port]]\nname = \"p{i}\"\nspeed_gbps = {speed}\n\
             devargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\nvlan = {{ mode = \"access\", id = 10 }}\n",
            dir.file(&format!("in{i}.pcap")).display(),
            dir.file(&format!("out{i}.pcap")).display()
        ));
    }
    let config_path = dir.file("ironclos.toml");
    std::fs::write(&config_path, config).unwrap();
    let stats_path = dir.file("stats.json");
    let out = common::run_ironclos(
        &[
            "run",
            "--config",
            config_path.to_str().unwrap(),
            "--exit-when-idle",
            "--stats-json",
            stats_path.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(out.status, Some(3), "{}\n{}", out.stdout, out.stderr);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).unwrap()).unwrap();
    assert_eq!(stats["replay_stalled"], true);
    assert_eq!(stats["stop_cause"], "replay_stalled");
    assert!(
        out.stdout.contains("stopped (replay_stalled)"),
        "{}",
        out.stdout
    );
}

#[test]
fn after_a_port_changes_vlan_the_switch_resolves_neighbours_out_of_the_new_members() {
    // host A sends to 10.0.20.9 (no neighbour) at 1_000_010 us; p2 leaves VLAN 20 for VLAN
    // 10 at 1_000_015; A sends again a second later. The switch's ARP request for it goes out of VLAN 20's members as they
    // are now: the trunk p3 only (tagged 20), not p2, whose stale role it used to keep.
    let dir = TestDir::new("switch-vlan-move-arp");
    let mut trace = Trace::new();
    let ip = ipv4_udp(
        Ipv4Addr::new(10, 0, 10, 5),
        Ipv4Addr::new(10, 0, 20, 9),
        64,
        1000,
        2000,
        &payload(1),
    );
    trace.send(0, ethernet(ROUTER, HOST_A, None, 0x0800, &ip)); // at 1_000_010: before
    // Past the one-second resolve interval, so that the second frame asks again.
    trace.clock_us += 1_100_000;
    trace.send(0, ethernet(ROUTER, HOST_A, None, 0x0800, &ip)); // at 2_100_020: after
    trace.write(&dir);
    let schedule = r#"
[[event]]
at_us = 1000015
updates = [{ op = "set_port_vlan", port = "p2", mode = "access", vlan = 10 }]
"#;
    let schedule_path = dir.file("schedule.toml");
    std::fs::write(&schedule_path, schedule).unwrap();
    let (_, stats) = replay_with(
        &dir,
        &leaf_config(&dir),
        &["--schedule", schedule_path.to_str().unwrap()],
    );
    let out = outputs(&dir);
    let request = frames::arp(
        1,
        ROUTER,
        Ipv4Addr::new(10, 0, 20, 1),
        [0; 6],
        Ipv4Addr::new(10, 0, 20, 9),
    );
    let request = ethernet(BROADCAST, ROUTER, None, 0x0806, &request);
    // p2 got the request from before its move only; p3 both, tagged.
    assert_eq!(
        out[2],
        vec![request.clone()],
        "p2: the request from before its move"
    );
    assert_eq!(out[3], vec![tagged(&request, 20); 2]);
    assert_eq!(drops(&stats)["neighbor_unresolved"], 2);
}

/// An ICMPv6 Neighbor Advertisement from `src` (MAC `mac`) to `dst` (MAC `dst_mac`) for
/// `src` itself, with `flags` (0x40 Solicited, 0x20 Override) and a target link-layer
/// address option, hop limit 255, checksum over the RFC 8200 8.1 pseudo-header.
fn neighbor_advert(mac: Mac, dst_mac: Mac, src: Ipv6Addr, dst: Ipv6Addr, flags: u8) -> Vec<u8> {
    let mut icmp = vec![136, 0, 0, 0, flags, 0, 0, 0];
    icmp.extend_from_slice(&src.octets());
    icmp.extend_from_slice(&[2, 1]);
    icmp.extend_from_slice(&mac);
    ethernet(
        dst_mac,
        mac,
        None,
        0x86dd,
        &icmpv6_packet(src, dst, 255, icmp),
    )
}

#[test]
fn a_neighbour_that_announces_a_new_mac_is_reached_at_it() {
    // Host X (10.0.10.9, 2001:db8:10::9 on p1) answers the switch's ARP and NS with MAC
    // X1, then changes to X2 and says so to the VLAN: a gratuitous ARP and an unsolicited NA
    // with Override to all nodes (what Linux sends with arp_notify / ndisc_notify). Routed
    // packets for X must then go to X2, not black-hole at X1.
    let dir = TestDir::new("sw-neighbor-moves");
    let mut trace = Trace::new();
    let (x1, x2): (Mac, Mac) = ([2, 0, 0, 0, 0, 0x91], [2, 0, 0, 0, 0, 0x92]);
    let x4 = Ipv4Addr::new(10, 0, 10, 9);
    let x6: Ipv6Addr = "2001:db8:10::9".parse().unwrap();
    let gateway = Ipv4Addr::new(10, 0, 10, 1);
    let gateway6: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let to_x4 = |seq: u8| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x0800,
            &ipv4_udp(Ipv4Addr::new(10, 7, 0, 1), x4, 30, 5000, 6000, &[seq; 4]),
        )
    };
    let to_x6 = |seq: u8| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x86dd,
            &ipv6_udp(
                "2001:db8:7::1".parse().unwrap(),
                x6,
                30,
                5000,
                6000,
                &[seq; 4],
            ),
        )
    };
    // The switch asks for X (both families); X answers from X1; packets reach X1.
    trace.send(4, to_x4(1));
    trace.send(4, to_x6(1));
    let arp_reply = ethernet(
        ROUTER,
        x1,
        None,
        0x0806,
        &frames::arp(2, x1, x4, ROUTER, gateway),
    );
    trace.send(1, arp_reply);
    trace.send(1, neighbor_advert(x1, ROUTER, x6, gateway6, 0x60));
    let (at_x1_4, at_x1_6) = (to_x4(2), to_x6(2));
    trace.send(4, at_x1_4.clone());
    trace.send(4, at_x1_6.clone());
    // X moves to X2 and announces it to everyone.
    let gratuitous = ethernet(
        BROADCAST,
        x2,
        None,
        0x0806,
        &frames::arp(1, x2, x4, [0; 6], x4),
    );
    trace.send(1, gratuitous);
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    trace.send(
        1,
        neighbor_advert(x2, [0x33, 0x33, 0, 0, 0, 1], x6, all_nodes, 0x20),
    );
    let (at_x2_4, at_x2_6) = (to_x4(3), to_x6(3));
    trace.send(4, at_x2_4.clone());
    trace.send(4, at_x2_6.clone());
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let routed = |frame: &[u8], mac: Mac| {
        if frame[12..14] == [0x08, 0x00] {
            return routed_v4(frame, 14, mac, ROUTER);
        }
        routed_v6(frame, mac)
    };
    assert_eq!(
        unicast_out(&dir, 1),
        vec![
            routed(&at_x1_4, x1),
            routed(&at_x1_6, x1),
            routed(&at_x2_4, x2),
            routed(&at_x2_6, x2),
        ]
    );
    assert_eq!(drops(&stats)["neighbor_unresolved"], 2);
}

/// Host A (10.0.10.5 on p0) and the switch's gateway 10.0.10.1 talking ARP: what the
/// neighbour tests send and expect.
struct HostAArp {
    a_ip: Ipv4Addr,
    gateway: Ipv4Addr,
    /// A asks for its gateway (broadcast): the switch learns A.
    request_from_a: Vec<u8>,
    /// The switch's answer to that.
    reply_to_a: Vec<u8>,
    /// The switch resolving A afresh (broadcast).
    switch_asks: Vec<u8>,
    /// A answering the switch.
    a_answers: Vec<u8>,
}

impl HostAArp {
    fn new() -> HostAArp {
        let a_ip = Ipv4Addr::new(10, 0, 10, 5);
        let gateway = Ipv4Addr::new(10, 0, 10, 1);
        let arp = |dst, src, op, sha, spa, tha, tpa| {
            ethernet(dst, src, None, 0x0806, &frames::arp(op, sha, spa, tha, tpa))
        };
        HostAArp {
            a_ip,
            gateway,
            request_from_a: arp(BROADCAST, HOST_A, 1, HOST_A, a_ip, [0; 6], gateway),
            reply_to_a: arp(HOST_A, ROUTER, 2, ROUTER, gateway, HOST_A, a_ip),
            switch_asks: arp(BROADCAST, ROUTER, 1, ROUTER, gateway, [0; 6], a_ip),
            a_answers: arp(ROUTER, HOST_A, 2, HOST_A, a_ip, ROUTER, gateway),
        }
    }
}

/// A UDP packet from beyond spine 1 (10.7.0.1, arriving on p4) to host A, tagged `seq`.
fn routed_to_a(seq: u8) -> Vec<u8> {
    ethernet(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4_udp(
            Ipv4Addr::new(10, 7, 0, 1),
            Ipv4Addr::new(10, 0, 10, 5),
            30,
            5000,
            6000,
            &[seq; 4],
        ),
    )
}

#[test]
fn a_learned_neighbour_is_asked_again_after_its_reachable_time_and_forgotten_if_silent() {
    // Host A (10.0.10.5 on p0) asks for its gateway at T: the switch learns it, reachable
    // for 30 s (the default reachable time). At T + 30 s it asks A again, every second up to
    // three times; an answer keeps A (second replay); without one A is lost one second after
    // the third request, so a packet for A at T + 34 s is held (dropped, counted) while the
    // switch resolves A afresh. Static neighbours (the spines) are never asked.
    // The renewed requests are unicast to A's MAC (RFC 1122 2.3.2.1's unicast poll, RFC 4861
    // 7.3.3's probe, as Linux sends them: target hardware address still zero) and leave only
    // p0, where VLAN 10's MAC table has A; only the fresh resolution of A, who then has no
    // MAC, is a broadcast to all of VLAN 10.
    const SECOND_US: u64 = 1_000_000;
    let HostAArp {
        a_ip,
        gateway,
        request_from_a,
        reply_to_a,
        switch_asks,
        a_answers,
    } = HostAArp::new();
    let to_a = routed_to_a;
    let switch_asks_a = ethernet(
        HOST_A,
        ROUTER,
        None,
        0x0806,
        &frames::arp(1, ROUTER, gateway, [0; 6], a_ip),
    );
    let run = |answer: bool| {
        let dir = TestDir::new(if answer {
            "sw-nud-answered"
        } else {
            "sw-nud-silent"
        });
        let mut trace = Trace::new();
        trace.send(0, request_from_a.clone());
        let learned_at = trace.clock_us;
        trace.send(4, to_a(1));
        if answer {
            // Half a second after the first renewed request.
            trace.clock_us = learned_at + 30 * SECOND_US + SECOND_US / 2;
            trace.send(0, a_answers.clone());
        }
        trace.clock_us = learned_at + 34 * SECOND_US;
        trace.send(4, to_a(2));
        trace.write(&dir);
        let (_, stats) = replay(&dir, &leaf_config(&dir));
        (outputs(&dir), stats)
    };

    let (out, stats) = run(false);
    let padded = |frame: &[u8]| {
        let mut f = frame.to_vec();
        f.resize(f.len().max(60), 0);
        f
    };
    let on_p0: Vec<Vec<u8>> = out[0].iter().map(|f| padded(f)).collect();
    assert_eq!(
        on_p0,
        vec![
            padded(&reply_to_a),
            routed_v4(&to_a(1), 14, HOST_A, ROUTER),
            // Three renewed requests at T + 30, 31 and 32 s, then, A lost at T + 33 s, the
            // packet at T + 34 s makes the switch resolve A again.
            padded(&switch_asks_a),
            padded(&switch_asks_a),
            padded(&switch_asks_a),
            padded(&switch_asks),
        ]
    );
    assert_eq!(
        out[1],
        vec![padded(&switch_asks)],
        "only the fresh resolution goes to all of VLAN 10"
    );
    assert_eq!(out[3], vec![tagged(&padded(&switch_asks), 10)]);
    assert!(
        out[4].is_empty() && out[5].is_empty(),
        "static neighbours are not asked"
    );
    assert_eq!(drops(&stats)["neighbor_unresolved"], 1);
    assert_eq!(stats["neighbors"]["probes"], 3);
    assert_eq!(stats["neighbors"]["expired"], 1);

    let (out, stats) = run(true);
    let on_p0: Vec<Vec<u8>> = out[0].iter().map(|f| padded(f)).collect();
    assert_eq!(
        on_p0,
        vec![
            padded(&reply_to_a),
            routed_v4(&to_a(1), 14, HOST_A, ROUTER),
            padded(&switch_asks_a),
            routed_v4(&to_a(2), 14, HOST_A, ROUTER),
        ]
    );
    assert!(
        out[1].is_empty() && out[3].is_empty(),
        "the renewed request leaves only A's port"
    );
    assert_eq!(
        drops(&stats)
            .get("neighbor_unresolved")
            .copied()
            .unwrap_or(0),
        0
    );
    assert_eq!(stats["neighbors"]["probes"], 1);
    assert_eq!(stats["neighbors"]["expired"], 0);
}

/// A Neighbor Solicitation (RFC 4861 4.3) for `target` from `src` at `mac` to `dst` at
/// `dst_mac`, hop limit 255, with a source link-layer address option.
fn neighbor_solicit(
    mac: Mac,
    dst_mac: Mac,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    target: Ipv6Addr,
) -> Vec<u8> {
    let mut icmp = vec![135, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&target.octets());
    icmp.extend_from_slice(&[1, 1]);
    icmp.extend_from_slice(&mac);
    ethernet(
        dst_mac,
        mac,
        None,
        0x86dd,
        &icmpv6_packet(src, dst, 255, icmp),
    )
}

#[test]
fn a_learned_ipv6_neighbour_is_asked_again_unicast_out_of_its_port() {
    // Host D (2001:db8:10::d, behind trunk p3, VLAN 10 tagged) solicits its gateway at T:
    // the switch answers and learns D. From T + 30 s it asks D again with unicast
    // solicitations (RFC 4861 7.3.3): to D's MAC and to D's address, not the solicited-node
    // group, out of p3 only, where VLAN 10's MAC table has D, tagged as p3 needs.
    // * D answers as Linux answers a unicast NS: solicited, no Override, no target
    //   link-layer address option (RFC 4861 7.2.4); that confirms D (RFC 4861 7.2.5), so the
    //   packet at T + 34 s reaches it.
    // * D is silent: lost one second after the third request, so the packet at T + 34 s is
    //   dropped and D resolved afresh, to the solicited-node group, in all of VLAN 10.
    // * D is silent and VLAN 10's MAC table forgot it (10 s MAC aging): the unicast
    //   solicitations are flooded in VLAN 10, as the bridge floods an unknown unicast.
    const SECOND_US: u64 = 1_000_000;
    let d_ip: Ipv6Addr = "2001:db8:10::d".parse().unwrap();
    let gateway: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let to_d = |seq: u8| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x86dd,
            &ipv6_udp(
                "2001:db8:7::1".parse().unwrap(),
                d_ip,
                30,
                5000,
                6000,
                &[seq; 4],
            ),
        )
    };
    let d_solicits = neighbor_solicit(
        HOST_D,
        [0x33, 0x33, 0xff, 0, 0, 0x01],
        d_ip,
        "ff02::1:ff00:1".parse().unwrap(),
        gateway,
    );
    let switch_answers = neighbor_advert(ROUTER, HOST_D, gateway, d_ip, 0xe0);
    let switch_asks_d = neighbor_solicit(ROUTER, HOST_D, gateway, d_ip, d_ip);
    let switch_asks_everyone = neighbor_solicit(
        ROUTER,
        [0x33, 0x33, 0xff, 0, 0, 0x0d],
        gateway,
        "ff02::1:ff00:d".parse().unwrap(),
        d_ip,
    );
    let mut answer = vec![136, 0, 0, 0, 0x40, 0, 0, 0];
    answer.extend_from_slice(&d_ip.octets());
    let d_answers = ethernet(
        ROUTER,
        HOST_D,
        Some(10),
        0x86dd,
        &icmpv6_packet(d_ip, gateway, 255, answer),
    );
    #[derive(Clone, Copy, PartialEq)]
    enum Case {
        Answered,
        Silent,
        Forgotten,
    }
    let run = |case: Case| {
        let dir = TestDir::new(match case {
            Case::Answered => "sw-nud6-answered",
            Case::Silent => "sw-nud6-silent",
            Case::Forgotten => "sw-nud6-forgotten",
        });
        let mut trace = Trace::new();
        trace.send(3, tagged(&d_solicits, 10));
        let learned_at = trace.clock_us;
        trace.send(4, to_d(1));
        if case == Case::Answered {
            trace.clock_us = learned_at + 30 * SECOND_US + SECOND_US / 2;
            trace.send(3, d_answers.clone());
        }
        trace.clock_us = learned_at + 34 * SECOND_US;
        trace.send(4, to_d(2));
        trace.write(&dir);
        let mut config = leaf_config(&dir);
        if case == Case::Forgotten {
            config.push_str("\n[l2]\nmac_aging_s = 10\n");
        }
        let (_, stats) = replay(&dir, &config);
        (outputs(&dir), stats)
    };
    let on_p3 = |frame: &[u8]| tagged(frame, 10);

    let (out, stats) = run(Case::Answered);
    assert_eq!(
        out[3],
        vec![
            on_p3(&switch_answers),
            on_p3(&routed_v6(&to_d(1), HOST_D)),
            on_p3(&switch_asks_d),
            on_p3(&routed_v6(&to_d(2), HOST_D)),
        ]
    );
    assert!(
        out[0].is_empty() && out[1].is_empty(),
        "the renewed solicitation leaves only D's port"
    );
    assert_eq!(stats["neighbors"]["probes"], 1);
    assert_eq!(stats["neighbors"]["expired"], 0);
    assert_eq!(
        drops(&stats)
            .get("neighbor_unresolved")
            .copied()
            .unwrap_or(0),
        0
    );

    let (out, stats) = run(Case::Silent);
    assert_eq!(
        out[3],
        vec![
            on_p3(&switch_answers),
            on_p3(&routed_v6(&to_d(1), HOST_D)),
            on_p3(&switch_asks_d),
            on_p3(&switch_asks_d),
            on_p3(&switch_asks_d),
            on_p3(&switch_asks_everyone),
        ]
    );
    for port in [0, 1] {
        assert_eq!(
            out[port],
            vec![switch_asks_everyone.clone()],
            "only the fresh resolution goes to all of VLAN 10 (p{port})"
        );
    }
    assert_eq!(stats["neighbors"]["probes"], 3);
    assert_eq!(stats["neighbors"]["expired"], 1);
    assert_eq!(drops(&stats)["neighbor_unresolved"], 1);

    let (out, stats) = run(Case::Forgotten);
    let flooded = |tag: bool| {
        let mut frames = vec![switch_asks_d.clone(); 3];
        frames.push(switch_asks_everyone.clone());
        if tag {
            frames = frames.iter().map(|f| on_p3(f)).collect();
        }
        frames
    };
    let mut expected_p3 = vec![on_p3(&switch_answers), on_p3(&routed_v6(&to_d(1), HOST_D))];
    expected_p3.extend(flooded(true));
    assert_eq!(out[3], expected_p3);
    assert_eq!(out[0], flooded(false));
    assert_eq!(out[1], flooded(false));
    assert!(out[2].is_empty(), "p2 is in VLAN 20");
    assert_eq!(stats["neighbors"]["probes"], 3);
    assert_eq!(stats["neighbors"]["expired"], 1);
}

#[test]
fn a_neighbour_on_a_routed_port_that_announces_a_new_mac_is_reached_at_it() {
    // The spine behind p5 (10.255.0.2) and the one behind p4 (2001:db8:ff::) are learned here,
    // not configured: each answers the switch from MAC S1, then moves to S2 and announces it
    // on its point-to-point link (gratuitous ARP; unsolicited NA with Override to all nodes).
    // A static neighbour's address announced from another MAC changes nothing.
    let dir = TestDir::new("sw-routed-announce");
    let config = leaf_config(&dir)
        .replace(SPINE2_STATIC_NEIGHBOR, "")
        .replace(
            "[[neighbor]]\nip = \"2001:db8:ff::\"\nmac = \"02:00:00:00:51:01\"\nport = \"p4\"\n",
            "",
        );
    assert!(!config.contains("10.255.0.2\"\nmac") && !config.contains("2001:db8:ff::\"\nmac"));
    let mut trace = Trace::new();
    let (s1, s2): (Mac, Mac) = ([2, 0, 0, 0, 0x52, 1], [2, 0, 0, 0, 0x52, 2]);
    let spine4 = Ipv4Addr::new(10, 255, 0, 2);
    let own4 = Ipv4Addr::new(10, 255, 0, 3);
    let spine6: Ipv6Addr = "2001:db8:ff::".parse().unwrap();
    let own6: Ipv6Addr = "2001:db8:ff::1".parse().unwrap();
    let static4 = Ipv4Addr::new(10, 255, 0, 0);
    let from_a4 = |dst: Ipv4Addr, seq: u8| {
        ethernet(
            ROUTER,
            HOST_A,
            None,
            0x0800,
            &ipv4_udp(Ipv4Addr::new(10, 0, 10, 5), dst, 30, 5000, 6000, &[seq; 4]),
        )
    };
    let from_a6 = |seq: u8| {
        ethernet(
            ROUTER,
            HOST_A,
            None,
            0x86dd,
            &ipv6_udp(
                "2001:db8:10::5".parse().unwrap(),
                spine6,
                30,
                5000,
                6000,
                &[seq; 4],
            ),
        )
    };
    // Resolved from S1.
    trace.send(0, from_a4(spine4, 1));
    trace.send(0, from_a6(1));
    trace.send(
        5,
        ethernet(
            ROUTER,
            s1,
            None,
            0x0806,
            &frames::arp(2, s1, spine4, ROUTER, own4),
        ),
    );
    trace.send(4, neighbor_advert(s1, ROUTER, spine6, own6, 0x60));
    let (at_s1_4, at_s1_6) = (from_a4(spine4, 2), from_a6(2));
    trace.send(0, at_s1_4.clone());
    trace.send(0, at_s1_6.clone());
    // Moved to S2, announced; and someone claims the static neighbour's address.
    trace.send(
        5,
        ethernet(
            BROADCAST,
            s2,
            None,
            0x0806,
            &frames::arp(1, s2, spine4, [0; 6], spine4),
        ),
    );
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    trace.send(
        4,
        neighbor_advert(s2, [0x33, 0x33, 0, 0, 0, 1], spine6, all_nodes, 0x20),
    );
    trace.send(
        4,
        ethernet(
            BROADCAST,
            s2,
            None,
            0x0806,
            &frames::arp(1, s2, static4, [0; 6], static4),
        ),
    );
    let (at_s2_4, at_s2_6, to_static) = (from_a4(spine4, 3), from_a6(3), from_a4(static4, 3));
    trace.send(0, at_s2_4.clone());
    trace.send(0, at_s2_6.clone());
    trace.send(0, to_static.clone());
    trace.write(&dir);
    let (_, stats) = replay(&dir, &config);
    assert_eq!(
        unicast_out(&dir, 5),
        vec![
            routed_v4(&at_s1_4, 14, s1, ROUTER),
            routed_v4(&at_s2_4, 14, s2, ROUTER)
        ]
    );
    assert_eq!(
        unicast_out(&dir, 4),
        vec![
            routed_v6(&at_s1_6, s1),
            routed_v6(&at_s2_6, s2),
            routed_v4(&to_static, 14, SPINE1, ROUTER)
        ]
    );
    assert_eq!(drops(&stats)["neighbor_unresolved"], 2);
    assert_eq!(
        drops(&stats).get("not_for_us").copied().unwrap_or(0),
        0,
        "announcements are heard, not dropped"
    );
    // Both answers and both announcements taught the switch something; the claim on the
    // static neighbour's address taught it nothing.
    assert_eq!(stats["punted"], 4);
    assert_eq!(drops(&stats)["slow_path_ignored"], 1);
}

#[test]
fn martian_sources_and_directed_broadcasts_are_dropped_and_counted_never_resolved() {
    // From the spine on p4: packets whose source no router may forward from (RFC 1812 5.3.7,
    // RFC 4291 2.5.2, 2.5.3, 2.7) and packets to VLAN 10's network and broadcast addresses
    // (RFC 2644: directed broadcasts are not forwarded; there is no host to ARP for). The
    // edges of the allowed IPv4 sources, 1.0.0.1 and 223.255.255.254, are routed as usual:
    // toward a host not resolved yet, so they make the switch ARP for it.
    let dir = TestDir::new("sw-martians");
    let mut trace = Trace::new();
    let host = Ipv4Addr::new(10, 0, 10, 5);
    let v4 = |src: [u8; 4], dst: Ipv4Addr| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x0800,
            &ipv4_udp(Ipv4Addr::from(src), dst, 30, 5000, 6000, &[1; 4]),
        )
    };
    let v6 = |src: &str| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x86dd,
            &ipv6_udp(
                src.parse().unwrap(),
                "2001:db8:10::5".parse().unwrap(),
                30,
                5000,
                6000,
                &[1; 4],
            ),
        )
    };
    let martians4 = [
        [0, 0, 0, 0],
        [0, 1, 2, 3],
        [127, 0, 0, 1],
        [224, 0, 0, 1],
        [240, 0, 0, 1],
        [255, 255, 255, 255],
    ];
    for src in martians4 {
        trace.send(4, v4(src, host));
    }
    for src in ["::", "::1", "ff05::1"] {
        trace.send(4, v6(src));
    }
    for dst in [[10, 0, 10, 255], [10, 0, 10, 0]] {
        trace.send(4, v4([10, 7, 0, 1], Ipv4Addr::from(dst)));
    }
    trace.send(4, v4([1, 0, 0, 1], host));
    trace.send(4, v4([223, 255, 255, 254], host));
    // And a ping of the switch's p4 address whose ICMP checksum is wrong: the slow path
    // ignores it, and that is a drop with its reason too.
    let mut echo = v4([10, 255, 0, 0], Ipv4Addr::new(10, 255, 0, 1));
    echo[14 + 9] = 1;
    echo[14 + 10..14 + 12].copy_from_slice(&[0, 0]);
    let header_sum = frames::checksum(&echo[14..34]);
    echo[14 + 10..14 + 12].copy_from_slice(&header_sum.to_be_bytes());
    echo[34..38].copy_from_slice(&[8, 0, 0, 0]);
    assert_ne!(
        frames::checksum(&echo[34..]),
        0,
        "the ICMP checksum is wrong"
    );
    trace.send(4, echo);
    // Destinations nothing is routed to, though default routes cover them (RFC 1812
    // 5.3.5.1, 5.3.7; RFC 4291 2.5.3, 2.7): from host A in VLAN 10.
    let martian_destinations4 = [
        [127, 0, 0, 1],
        [0, 0, 0, 5],
        [224, 0, 0, 5],
        [240, 0, 0, 1],
        [255, 255, 255, 255],
    ];
    for dst in martian_destinations4 {
        let packet = ipv4_udp(host, Ipv4Addr::from(dst), 30, 5000, 6000, &[1; 4]);
        trace.send(0, ethernet(ROUTER, HOST_A, None, 0x0800, &packet));
    }
    for dst in ["::1", "::", "ff02::1", "ff0e::1"] {
        let packet = ipv6_udp(
            "2001:db8:10::5".parse().unwrap(),
            dst.parse().unwrap(),
            30,
            5000,
            6000,
            &[1; 4],
        );
        trace.send(0, ethernet(ROUTER, HOST_A, None, 0x86dd, &packet));
    }
    trace.write(&dir);
    let config = leaf_config(&dir).replace(
        "[[neighbor]]\nip = \"10.255.0.0\"",
        "[[route]]\nprefix = \"0.0.0.0/0\"\ngroup = \"spines\"\n\n[[route]]\nprefix = \"::/0\"\n\
         via = \"2001:db8:ff::\"\nport = \"p4\"\n\n[[neighbor]]\nip = \"10.255.0.0\"",
    );
    assert!(config.contains("0.0.0.0/0"));
    let (_, stats) = replay(&dir, &config);
    let drops = drops(&stats);
    assert_eq!(drops["martian_destination"], 9);
    assert_eq!(drops["slow_path_ignored"], 1);
    assert_eq!(stats["punted"], 0);
    assert_eq!(drops["martian_source"], martians4.len() as u64 + 3);
    assert_eq!(drops["directed_broadcast"], 2);
    assert_eq!(
        drops["neighbor_unresolved"], 2,
        "the allowed edges are routed"
    );
    let out = outputs(&dir);
    // One ARP request for the host (the second packet finds it requested already), on every
    // VLAN 10 port; nothing else leaves.
    let asks_for = |frame: &[u8], target: [u8; 4]| {
        let at = if frame[12..14] == [0x81, 0x00] {
            18
        } else {
            14
        };
        frame[at - 2..at] == [0x08, 0x06] && frame[at + 24..at + 28] == target
    };
    for port in [0, 1, 3] {
        assert_eq!(out[port].len(), 1, "port {port}: {:?}", out[port]);
        assert!(asks_for(&out[port][0], [10, 0, 10, 5]));
    }
    assert!(out[2].is_empty() && out[4].is_empty() && out[5].is_empty());
}

/// An IPv4 packet (from `ipv4_udp`) with `options`, a multiple of 4 bytes, put between its
/// fixed header and its payload (RFC 791): IHL, total length and header checksum set for them.
/// The UDP checksum does not cover the IP header, so it stays right.
fn with_ipv4_options(packet: &[u8], options: &[u8]) -> Vec<u8> {
    assert!(options.len().is_multiple_of(4) && options.len() <= 40);
    let header_len = 20 + options.len();
    let mut ip = packet[..20].to_vec();
    ip.extend_from_slice(options);
    ip.extend_from_slice(&packet[20..]);
    ip[0] = 0x40 | (header_len / 4) as u8;
    let total = ip.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&ip[..header_len]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

#[test]
fn source_routed_ipv4_is_dropped_and_counted_other_options_are_routed_unchanged() {
    // RFC 7126 4.3 and 4.4 advise routers to drop packets with Loose or Strict Source and
    // Record Route options by default, and Linux does (accept_source_route=0): on input,
    // whether to be forwarded or for the router itself, with no ICMP error. Other options are
    // routed as any packet is. A malformed option list is a bad header. From host A on p0
    // toward 10.2.0.0/16, routed out of p4 to spine 1.
    let dir = TestDir::new("sw-srr");
    let mut trace = Trace::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let far = Ipv4Addr::new(10, 2, 0, 7);
    let from_a = |dst: Ipv4Addr, ttl: u8, options: &[u8]| {
        let packet = ipv4_udp(a_ip, dst, ttl, 4000, 4791, &[0x5a; 18]);
        ethernet(
            ROUTER,
            HOST_A,
            None,
            0x0800,
            &with_ipv4_options(&packet, options),
        )
    };
    // Options as RFC 791 3.1 lays them out: type, length (type and length bytes counted),
    // pointer (1-based, from the type byte), route data.
    let lsrr = [1, 131, 7, 4, 10, 2, 0, 9]; // NOP, LSRR with one hop to go
    let ssrr = [137, 7, 4, 10, 2, 0, 9, 0]; // SSRR with one hop, End of Options List
    // Record Route whose one slot host A filled (pointer 8 = length + 1: full), so RFC 791
    // has a router forward it as it is; the switch records nothing in any case.
    let record_route = [7, 7, 8, 10, 0, 10, 5, 0];
    let too_short = [7, 1, 0, 0]; // Record Route of length 1
    let too_long = [68, 12, 5, 0]; // a 12-byte Timestamp in 4 bytes of options
    let routed_rr = from_a(far, 64, &record_route);
    trace.send(0, from_a(far, 64, &lsrr));
    trace.send(0, from_a(far, 64, &ssrr));
    trace.send(0, routed_rr.clone());
    trace.send(0, from_a(far, 64, &too_short));
    trace.send(0, from_a(far, 64, &too_long));
    // No route, and TTL 1: without the option A would hear Destination Unreachable and
    // Time Exceeded; a refused source route earns nothing.
    trace.send(0, from_a(Ipv4Addr::new(192, 0, 2, 1), 64, &lsrr));
    trace.send(0, from_a(far, 1, &ssrr));
    // To the switch's own VLAN 10 address: dropped, not punted.
    trace.send(0, from_a(Ipv4Addr::new(10, 0, 10, 1), 64, &lsrr));
    trace.write(&dir);
    let config = format!(
        "{}{}\n[[route]]\nprefix = \"10.2.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"p4\"\n",
        leaf_config(&dir),
        HOSTS_AS_NEIGHBORS
    );
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);

    // The Record Route packet, rewritten as RFC 1812 5.3.1 and RFC 1624 say: spine 1's MAC,
    // the router's, TTL 63, and the header checksum updated for the TTL/protocol word alone
    // (eqn. 3: HC' = ~(~HC + ~m + m')); the options and everything else as they came.
    let mut expected = routed_rr.clone();
    expected[0..6].copy_from_slice(&SPINE1);
    expected[6..12].copy_from_slice(&ROUTER);
    expected[14 + 8] = 63;
    let old_checksum = u16::from_be_bytes([routed_rr[24], routed_rr[25]]);
    let (old_word, new_word) = (u16::from_be_bytes([64, 17]), u16::from_be_bytes([63, 17]));
    let mut sum = u32::from(!old_checksum) + u32::from(!old_word) + u32::from(new_word);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    expected[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    assert_eq!(
        checksum(&expected[14..14 + 28]),
        0,
        "the expected header verifies"
    );
    assert_eq!(
        expected[14 + 20..14 + 28],
        record_route,
        "options untouched"
    );
    assert_eq!(
        out[4],
        vec![expected],
        "p4 gets the Record Route packet alone"
    );
    for port in [0, 1, 2, 3, 5] {
        assert!(out[port].is_empty(), "p{port}: {:?}", out[port]);
    }

    let drops = drops(&stats);
    assert_eq!(drops["source_route_option"], 5, "{drops:?}");
    assert_eq!(drops["bad_ipv4_header"], 2, "{drops:?}");
    assert_eq!(drops.values().sum::<u64>(), 7, "{drops:?}");
    assert_eq!(stats["punted"], 0);
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 0, "suppressed": 0, "not_sent": 0})
    );
    assert_eq!(u64_at(port_stats(&stats, "p0"), "/rx_packets"), 8);
    assert_eq!(u64_at(port_stats(&stats, "p4"), "/tx_packets"), 1);
}

#[test]
fn priority_tagged_frames_on_a_routed_port_are_routed_and_answered_untagged() {
    // A spine marking its class in a VLAN-0 tag (PCP 3, as RoCE hosts do): ARP for the
    // switch's address is answered and a routed packet leaves untagged, TTL decremented; a
    // real VLAN tag on the routed port is still refused.
    let dir = TestDir::new("sw-priority-tag");
    let mut trace = Trace::new();
    let priority = |frame: &[u8]| tagged(frame, 0x6000);
    let spine = Ipv4Addr::new(10, 255, 0, 2);
    let own = Ipv4Addr::new(10, 255, 0, 3);
    let request = ethernet(
        BROADCAST,
        SPINE2,
        None,
        0x0806,
        &frames::arp(1, SPINE2, spine, [0; 6], own),
    );
    trace.send(5, priority(&request));
    let to_spines = ethernet(
        ROUTER,
        SPINE2,
        None,
        0x0800,
        &ipv4_udp(
            Ipv4Addr::new(10, 0, 10, 5),
            Ipv4Addr::new(10, 1, 2, 3),
            30,
            1,
            2,
            &[7; 4],
        ),
    );
    trace.send(5, priority(&to_spines));
    trace.send(5, tagged(&to_spines, 0x6000 | 10));
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);
    let reply = ethernet(
        SPINE2,
        ROUTER,
        None,
        0x0806,
        &frames::arp(2, ROUTER, own, SPINE2, spine),
    );
    let arps: Vec<&Vec<u8>> = out[5]
        .iter()
        .filter(|f| f[12..14] == [0x08, 0x06])
        .collect();
    assert_eq!(arps.len(), 1);
    assert_eq!(arps[0][..42], reply[..42]);
    let routed: Vec<&Vec<u8>> = out[4]
        .iter()
        .chain(&out[5])
        .filter(|f| f[12..14] == [0x08, 0x00])
        .collect();
    assert_eq!(routed.len(), 1);
    let member = routed[0][..6].try_into().unwrap();
    assert!(member == SPINE1 || member == SPINE2);
    assert_eq!(*routed[0], routed_v4(&to_spines, 14, member, ROUTER));
    assert_eq!(drops(&stats)["vlan_not_allowed"], 1);
}

#[test]
fn frames_to_the_ieee_reserved_addresses_stay_on_their_link() {
    // STP, LACP, 802.1X and LLDP frames (01-80-C2-00-00-00, -02, -03, -0E) from host A are
    // not a bridge's to forward (IEEE 802.1Q); the next address up, 01-80-C2-00-00-10, and
    // other multicast are flooded in the VLAN as always.
    let dir = TestDir::new("sw-reserved-mcast");
    let mut trace = Trace::new();
    for last in [0x00, 0x02, 0x03, 0x0e, 0x0f] {
        trace.send(
            0,
            ethernet(
                [0x01, 0x80, 0xc2, 0, 0, last],
                HOST_A,
                None,
                0x88cc,
                &[0; 46],
            ),
        );
    }
    let flooded = ethernet(
        [0x01, 0x80, 0xc2, 0, 0, 0x10],
        HOST_A,
        None,
        0x88b5,
        &[1; 46],
    );
    trace.send(0, flooded.clone());
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);
    assert_eq!(drops(&stats)["reserved_multicast"], 5);
    assert_eq!(out[1], vec![flooded.clone()]);
    assert_eq!(out[3], vec![tagged(&flooded, 10)]);
    assert!(out[2].is_empty() && out[4].is_empty() && out[5].is_empty());
}

#[test]
fn an_advertisement_without_override_resolves_a_neighbour_but_never_changes_its_mac() {
    // RFC 4861 7.2.5: with the Override flag clear, a Neighbor Advertisement whose link-layer
    // address differs from the one the switch has changes nothing (an anycast or proxy
    // answer); for a neighbour with no MAC yet it is the answer all the same.
    let dir = TestDir::new("sw-na-override");
    let mut trace = Trace::new();
    let (h1, h2): (Mac, Mac) = ([2, 0, 0, 0, 0, 0x21], [2, 0, 0, 0, 0, 0x22]);
    let x: Ipv6Addr = "2001:db8:10::20".parse().unwrap();
    let y: Ipv6Addr = "2001:db8:10::30".parse().unwrap();
    let gateway: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let to = |dst: Ipv6Addr, seq: u8| {
        ethernet(
            ROUTER,
            SPINE1,
            None,
            0x86dd,
            &ipv6_udp(
                "2001:db8:7::1".parse().unwrap(),
                dst,
                30,
                5000,
                6000,
                &[seq; 4],
            ),
        )
    };
    // X and Y are asked for; X answers with Override (from H1), Y without (from H2).
    trace.send(4, to(x, 1));
    trace.send(4, to(y, 1));
    let solicited_override = 0x60;
    let solicited = 0x40;
    trace.send(
        1,
        neighbor_advert(h1, ROUTER, x, gateway, solicited_override),
    );
    trace.send(1, neighbor_advert(h2, ROUTER, y, gateway, solicited));
    let (x_at_h1, y_at_h2) = (to(x, 2), to(y, 2));
    trace.send(4, x_at_h1.clone());
    trace.send(4, y_at_h2.clone());
    // H2 claims X without Override, solicited and unsolicited: X stays at H1.
    trace.send(1, neighbor_advert(h2, ROUTER, x, gateway, solicited));
    trace.send(
        1,
        neighbor_advert(h2, [0x33, 0x33, 0, 0, 0, 1], x, all_nodes, 0),
    );
    let x_still_at_h1 = to(x, 3);
    trace.send(4, x_still_at_h1.clone());
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    assert_eq!(
        unicast_out(&dir, 1),
        vec![
            routed_v6(&x_at_h1, h1),
            routed_v6(&y_at_h2, h2),
            routed_v6(&x_still_at_h1, h1),
        ]
    );
    assert_eq!(drops(&stats)["neighbor_unresolved"], 2);
}

#[test]
fn ecmp_member_counters_count_what_each_member_sent() {
    // The spines group with one member (10.255.0.2 on p5) unresolved: frames hashed to it are
    // dropped while the switch resolves it, and are not the member's; frames from the trunk
    // (tagged on arrival) count as they leave the routed uplinks, untagged; a DF packet too
    // long for p4's MTU is nobody's. Each member's packets and bytes then equal its port's
    // output.
    let dir = TestDir::new("sw-ecmp-counters");
    let config = leaf_config(&dir)
        .replace(SPINE2_STATIC_NEIGHBOR, "")
        .replace(
            "devargs = \"net_pcap4,",
            // The least an IPv6 link may have (RFC 8200 5); p4 has IPv6 addresses.
            "mtu = 1280\ndevargs = \"net_pcap4,",
        );
    let mut trace = Trace::new();
    for flow in 0..64u16 {
        let packet = ipv4_udp(
            Ipv4Addr::new(10, 0, 10, 5),
            Ipv4Addr::new(10, 1, 0, 7),
            30,
            1000 + flow,
            2000,
            &[3; 8],
        );
        let frame = ethernet(ROUTER, HOST_A, None, 0x0800, &packet);
        let mut frame = if flow % 2 == 0 {
            frame
        } else {
            tagged(&frame, 10)
        };
        if flow % 4 < 2 {
            // Bytes after the packet beyond the padding: cut before routing, never counted.
            frame.extend([0xee; 20]);
        }
        trace.send(if flow % 2 == 0 { 0 } else { 3 }, frame);
    }
    for flow in 0..8u16 {
        let packet = ipv4_udp(
            Ipv4Addr::new(10, 0, 10, 5),
            Ipv4Addr::new(10, 1, 0, 9),
            30,
            3000 + flow,
            2000,
            &[4; 1400],
        );
        trace.send(0, ethernet(ROUTER, HOST_A, None, 0x0800, &packet));
    }
    trace.write(&dir);
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    let group = &stats["groups"][0];
    assert_eq!(group["name"], "spines");
    let sent = |port: usize| -> (u64, u64) {
        let frames: Vec<&Vec<u8>> = out[port].iter().filter(|f| f[12..14] == [8, 0]).collect();
        (
            frames.len() as u64,
            frames.iter().map(|f| f.len() as u64).sum(),
        )
    };
    for (i, port) in [(0, 4), (1, 5)] {
        let member = &group["members"][i];
        let (packets, bytes) = sent(port);
        assert_eq!(
            (u64_at(member, "/packets"), u64_at(member, "/bytes")),
            (packets, bytes),
            "member {i} on p{port}: {member}"
        );
    }
    let drops = drops(&stats);
    assert!(drops["neighbor_unresolved"] > 0, "some flows hash to p5");
    assert!(
        u64_at(&group["members"][0], "/packets") > 0,
        "and some to p4"
    );
    assert!(drops["mtu_exceeded"] + stats["fragmentation"]["packets"].as_u64().unwrap() > 0);
}

#[test]
fn a_routed_packet_to_a_neighbour_whose_mac_aged_out_floods_its_vlan() {
    // MACs age after 20 s, neighbours stay reachable 30 s (the default). Host A (10.0.10.5
    // on p0) asks for its gateway at T: the switch learns A, as a neighbour and in VLAN 10's
    // MAC table. A packet routed to A at T + 1 s leaves p0 alone. At T + 25 s A is still a
    // reachable neighbour but its MAC has aged out of the table: the routed packet leaves,
    // rewritten, on every port of VLAN 10 (p0, p1 untagged, the trunk p3 tagged; not p2 in
    // VLAN 20, not the ingress p4), as a bridge floods an unknown unicast, and the switch
    // asks for A again. A answers, is relearned, and the packet at T + 26 s is unicast again.
    const SECOND_US: u64 = 1_000_000;
    let dir = TestDir::new("sw-routed-flood");
    let HostAArp {
        request_from_a,
        reply_to_a,
        switch_asks,
        a_answers,
        ..
    } = HostAArp::new();
    let to_a = routed_to_a;
    let mut trace = Trace::new();
    trace.send(0, request_from_a);
    let learned_at = trace.clock_us;
    trace.clock_us = learned_at + SECOND_US;
    trace.send(4, to_a(1));
    trace.clock_us = learned_at + 25 * SECOND_US;
    trace.send(4, to_a(2));
    trace.clock_us += 100;
    trace.send(0, a_answers);
    trace.clock_us = learned_at + 26 * SECOND_US;
    trace.send(4, to_a(3));
    trace.write(&dir);
    let mut config = leaf_config(&dir);
    config.push_str("\n[l2]\nmac_aging_s = 20\n");
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    let routed = |seq: u8| routed_v4(&to_a(seq), 14, HOST_A, ROUTER);
    assert_eq!(
        out[0],
        vec![
            reply_to_a,
            routed(1),
            routed(2),
            switch_asks.clone(),
            routed(3)
        ]
    );
    assert_eq!(out[1], vec![routed(2), switch_asks.clone()]);
    assert_eq!(
        out[3],
        vec![tagged(&routed(2), 10), tagged(&switch_asks, 10)]
    );
    assert!(out[2].is_empty(), "p2 is in VLAN 20");
    assert!(out[4].is_empty() && out[5].is_empty(), "routed ports");
    assert_eq!(stats["routed_flooded"], 1);
    assert_eq!(stats["mac_table_full"], 0);
    assert!(
        drops(&stats).values().all(|&n| n == 0),
        "{:?}",
        drops(&stats)
    );
}

#[test]
fn an_icmp_error_to_a_neighbour_whose_mac_aged_out_floods_its_vlan_too() {
    // As above, but what meets the MAC-table miss is the switch's own ICMP error: at T + 25 s
    // a packet from host A's address (an asymmetric path: it arrives from spine 1 on p4)
    // with TTL 1 expires, and its Time Exceeded (from p4's address, the one it arrived on)
    // goes to A, a reachable neighbour whose MAC aged out at T + 20 s. It floods VLAN 10
    // like a routed packet (p0, p1, the trunk p3 tagged), and the switch asks for A again.
    const SECOND_US: u64 = 1_000_000;
    let dir = TestDir::new("sw-error-flood");
    let HostAArp {
        request_from_a,
        reply_to_a,
        switch_asks,
        ..
    } = HostAArp::new();
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let expiring = ethernet(
        ROUTER,
        SPINE1,
        None,
        0x0800,
        &ipv4_udp(a_ip, Ipv4Addr::new(10, 1, 2, 3), 1, 1000, 4791, &[9; 20]),
    );
    let mut trace = Trace::new();
    trace.send(0, request_from_a);
    trace.clock_us += 25 * SECOND_US;
    trace.send(4, expiring.clone());
    trace.write(&dir);
    let mut config = leaf_config(&dir);
    config.push_str("\n[l2]\nmac_aging_s = 20\n");
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    let error = icmpv4_error(
        HOST_A,
        None,
        Ipv4Addr::new(10, 255, 0, 1),
        a_ip,
        11,
        &expiring[14..],
    );
    let sorted = |mut frames: Vec<Vec<u8>>| {
        frames.sort();
        frames
    };
    assert_eq!(out[0][0], reply_to_a);
    let mut flooded = vec![error.clone(), switch_asks.clone()];
    assert_eq!(sorted(out[0][1..].to_vec()), sorted(flooded.clone()));
    assert_eq!(sorted(out[1].clone()), sorted(flooded.clone()));
    flooded = flooded.iter().map(|f| tagged(f, 10)).collect();
    assert_eq!(sorted(out[3].clone()), sorted(flooded));
    assert!(out[2].is_empty(), "p2 is in VLAN 20");
    assert!(out[4].is_empty() && out[5].is_empty(), "routed ports");
    assert_eq!(stats["routed_flooded"], 1);
    assert_eq!(
        stats["icmp_errors"],
        serde_json::json!({"built": 1, "suppressed": 0, "not_sent": 0})
    );
    assert_eq!(drops(&stats)["ttl_expired"], 1);
}

#[test]
fn frames_from_the_zero_mac_or_the_router_mac_are_dropped_and_never_learned() {
    // In VLAN 10 a host sends from 00:00:00:00:00:00 (p1) and another from the switch's
    // router MAC (p1, and tagged on the trunk p3); on the routed uplink p4 frames to the
    // router MAC come from either. All are dropped and counted (invalid_source_mac,
    // own_source_mac) and none is learned: A's frame to 00:00:00:00:00:00 then floods in
    // VLAN 10, and A's packet to the router MAC is routed to the spines, not bridged to p1.
    let dir = TestDir::new("sw-bad-sources");
    const ZERO: Mac = [0; 6];
    let a_ip = Ipv4Addr::new(10, 0, 10, 5);
    let packet = |dst: Ipv4Addr| ipv4_udp(a_ip, dst, 64, 1000, 2000, &payload(1));
    let mut trace = Trace::new();
    trace.send(1, ethernet(HOST_A, ZERO, None, 0x0800, &payload(1)));
    trace.send(1, ethernet(HOST_A, ROUTER, None, 0x0800, &payload(2)));
    trace.send(3, ethernet(HOST_A, ROUTER, Some(10), 0x0800, &payload(3)));
    let to_zero = ethernet(ZERO, HOST_A, None, 0x0800, &payload(4));
    trace.send(0, to_zero.clone());
    // To 10.1.0.0/16: the spines' group.
    let routed_by_a = ethernet(
        ROUTER,
        HOST_A,
        None,
        0x0800,
        &packet(Ipv4Addr::new(10, 1, 0, 1)),
    );
    trace.send(0, routed_by_a.clone());
    let from_spine = |src: Mac| {
        ethernet(
            ROUTER,
            src,
            None,
            0x0800,
            &ipv4_udp(Ipv4Addr::new(10, 7, 0, 1), a_ip, 30, 5000, 6000, &[5; 4]),
        )
    };
    trace.send(4, from_spine(ZERO));
    trace.send(4, from_spine(ROUTER));
    trace.write(&dir);
    let (_, stats) = replay(&dir, &leaf_config(&dir));
    let out = outputs(&dir);
    assert_eq!(out[1], vec![to_zero.clone()], "the zero MAC is unknown");
    assert_eq!(out[3], vec![tagged(&to_zero, 10)]);
    let to_spine1 = routed_v4(&routed_by_a, 14, SPINE1, ROUTER);
    let to_spine2 = routed_v4(&routed_by_a, 14, SPINE2, ROUTER);
    assert!(
        (out[4].clone(), out[5].clone()) == (vec![to_spine1], vec![])
            || (out[4].clone(), out[5].clone()) == (vec![], vec![to_spine2]),
        "A's packet to the router MAC is routed to one spine: {:02x?}",
        &out[4..]
    );
    assert!(out[0].is_empty() && out[2].is_empty());
    let drops = drops(&stats);
    assert_eq!(drops["invalid_source_mac"], 2, "{drops:?}");
    assert_eq!(drops["own_source_mac"], 3, "{drops:?}");
    assert_eq!(
        drops.values().sum::<u64>(),
        5,
        "nothing else dropped: {drops:?}"
    );
}

#[test]
fn a_full_mac_table_counts_the_sources_it_cannot_learn() {
    // Room for 16 MACs, 20 hosts on p0 each broadcast once: 16 are learned, 4 are refused
    // (mac_table_full 4, not a drop: their broadcasts are flooded). A frame to a learned host
    // from p1 goes to p0 alone; one to a refused host floods. Their sender, a 21st source, is
    // refused at each of its two frames: 6 in all.
    let dir = TestDir::new("sw-mac-full");
    let host = |i: u8| -> Mac { [0x02, 0, 0, 0, 0x77, i] };
    let mut trace = Trace::new();
    let mut broadcasts = Vec::new();
    for i in 0..20 {
        let frame = ethernet(BROADCAST, host(i), None, 0x0800, &payload(i));
        broadcasts.push(frame.clone());
        trace.send(0, frame);
    }
    let to_learned = ethernet(host(3), HOST_B, None, 0x0800, &payload(30));
    let to_refused = ethernet(host(19), HOST_B, None, 0x0800, &payload(31));
    trace.send(1, to_learned.clone());
    trace.send(1, to_refused.clone());
    trace.write(&dir);
    let mut config = leaf_config(&dir);
    config.push_str("\n[l2]\nmac_table_size = 16\n");
    let (run, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    assert_eq!(out[0], vec![to_learned, to_refused.clone()]);
    assert_eq!(out[1], broadcasts);
    let mut expected_p3: Vec<Vec<u8>> = broadcasts.iter().map(|f| tagged(f, 10)).collect();
    expected_p3.push(tagged(&to_refused, 10));
    assert_eq!(out[3], expected_p3);
    assert_eq!(stats["mac_table_full"], 6);
    assert!(
        drops(&stats).values().all(|&n| n == 0),
        "{:?}",
        drops(&stats)
    );
    assert!(
        run.stdout.contains("6 source MACs not learned"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_lossless_routed_packet_is_not_flooded_for_a_mac_table_miss() {
    // As the routed-flood test, with p4 (the spine uplink) in a profile whose TC 3 is
    // lossless: at T + 25 s host A's MAC has aged out of VLAN 10's table while A is still a
    // reachable neighbour. A packet to A in TC 3 (DSCP 3, the default map) is dropped
    // (lossless_flood: flooding lossless traffic can deadlock PFC, Guo et al. 2016); the same
    // packet in TC 0 right after it is flooded to VLAN 10 as before.
    const SECOND_US: u64 = 1_000_000;
    let dir = TestDir::new("sw-lossless-no-flood");
    let HostAArp { request_from_a, .. } = HostAArp::new();
    let mut lossless = routed_to_a(1);
    lossless[15] = 3 << 2;
    lossless[24..26].fill(0);
    let sum = checksum(&lossless[14..34]);
    lossless[24..26].copy_from_slice(&sum.to_be_bytes());
    let lossy = routed_to_a(2);
    let mut trace = Trace::new();
    trace.send(0, request_from_a);
    let learned_at = trace.clock_us;
    trace.clock_us = learned_at + 25 * SECOND_US;
    trace.send(4, lossless.clone());
    trace.send(4, lossy.clone());
    trace.write(&dir);
    let config = leaf_config(&dir).replace("name = \"p4\"\n", "name = \"p4\"\nqos = \"rdma\"\n")
        + "\n[l2]\nmac_aging_s = 20\n\n[qos.rdma]\nlossless = [3]\n";
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    let ipv4 = |port: usize| -> Vec<Vec<u8>> {
        out[port]
            .iter()
            .filter(|f| f[12..14] == [8, 0])
            .cloned()
            .collect()
    };
    let flooded = routed_v4(&lossy, 14, HOST_A, ROUTER);
    assert_eq!(ipv4(0), vec![flooded.clone()]);
    assert_eq!(ipv4(1), vec![flooded]);
    assert_eq!(drops(&stats)["lossless_flood"], 1, "{:?}", drops(&stats));
    assert_eq!(stats["routed_flooded"], 2, "both met the miss");
}
