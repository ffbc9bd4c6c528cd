//! End to end: SRv6 endpoint behaviours, edge cases and the headend through `ironclos run` on
//! net_pcap ports. Every expected frame is built here from RFC 8754 / 8986 / 9800 (which
//! fields change and to what), not taken from a run.

mod common;

use common::frames::{Mac, checksum, ipv4_udp, ipv6_udp};
use common::{TestDir, replay, u64_at};
use control::pcap::PcapPacket;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const ROUTER: Mac = [0x02, 0, 0, 0, 0x01, 0];
const UPSTREAM: Mac = [0x02, 0, 0, 0, 0x50, 0]; // 2001:db8:1::2 on p0
const DOWNSTREAM: Mac = [0x02, 0, 0, 0, 0x50, 1]; // 2001:db8:2::2 on p1
const TENANT_V4: Mac = [0x02, 0, 0, 0, 0x50, 2]; // 10.0.0.2 on p2
const TENANT_V6: Mac = [0x02, 0, 0, 0, 0x50, 3]; // 2001:db8:a::2 on p2
const TRUNK_HOST: Mac = [0x02, 0, 0, 0, 0x50, 4]; // 2001:db8:30::2 in VLAN 30 on trunk p3
const PORTS: usize = 4;
const L3: usize = 14;

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// p0, p1 routed in VRF default; p2 routed in VRF tenant; p3 a trunk for VLAN 30, where
/// fcbb:bb00:400::/48 is routed (out tagged). The switch's locator is
/// fcbb:bb00:0100::/48 (uN, F3216) with uA fcbb:bb00:e001::/48 toward p1 and a /64 uA with a
/// 32-bit shift toward p0; classic SIDs in 2001:db8:5::/64. Tenant policies encapsulate
/// toward fcbb:bb00:200:300:: (behind p1).
fn config(dir: &TestDir) -> String {
    config_with(dir, true)
}

/// `config`, or without the policies (then 10.20.0.0/16 is routed to the tenant host): the
/// far end of a tunnel the policies build.
fn config_with(dir: &TestDir, policies: bool) -> String {
    let mut text = format!(
        r#"[switch]
name = "srv6-test"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[[vrf]]
name = "tenant"

[[route]]
prefix = "fcbb:bb00:200::/48"
via = "2001:db8:2::2"
port = "p1"

[[route]]
prefix = "fcbb:bb00:300::/48"
via = "2001:db8:1::2"
port = "p0"

[[route]]
prefix = "2001:db8:b::/48"
via = "2001:db8:2::2"
port = "p1"

[[vlan]]
id = 30
ipv6 = ["2001:db8:30::1/64"]

[[route]]
prefix = "fcbb:bb00:400::/48"
via = "2001:db8:30::2"
vlan = 30

[[neighbor]]
ip = "2001:db8:30::2"
mac = "02:00:00:00:50:04"
vlan = 30

[[mac]]
vlan = 30
mac = "02:00:00:00:50:04"
port = "p3"

[[route]]
vrf = "tenant"
prefix = "10.9.0.0/16"
via = "10.0.0.2"
port = "p2"

[[route]]
vrf = "tenant"
prefix = "2001:db8:c::/48"
via = "2001:db8:a::2"
port = "p2"

[[neighbor]]
ip = "2001:db8:1::2"
mac = "02:00:00:00:50:00"
port = "p0"

[[neighbor]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:50:01"
port = "p1"

[[neighbor]]
ip = "10.0.0.2"
mac = "02:00:00:00:50:02"
port = "p2"

[[neighbor]]
ip = "2001:db8:a::2"
mac = "02:00:00:00:50:03"
port = "p2"

[[srv6.sid]]
prefix = "fcbb:bb00:100::/48"
behavior = "uN"

[[srv6.sid]]
prefix = "fcbb:bb00:e001::/48"
behavior = "uA"
via = "2001:db8:2::2"
port = "p1"

[[srv6.sid]]
prefix = "fcbb:bb00:100:e002::/64"
behavior = "uA"
block_bits = 32
shift_bits = 32
via = "2001:db8:1::2"
port = "p0"

[[srv6.sid]]
prefix = "2001:db8:5::1/128"
behavior = "End"

[[srv6.sid]]
prefix = "2001:db8:5::2/128"
behavior = "End"
flavors = ["psp"]

[[srv6.sid]]
prefix = "2001:db8:5::4/128"
behavior = "End.X"
via = "2001:db8:2::2"
port = "p1"

[[srv6.sid]]
prefix = "2001:db8:5::10/128"
behavior = "End.DT4"
lookup_vrf = "tenant"

[[srv6.sid]]
prefix = "2001:db8:5::11/128"
behavior = "End.DT6"
lookup_vrf = "tenant"

[[srv6.sid]]
prefix = "2001:db8:5::12/128"
behavior = "End.DT46"
lookup_vrf = "tenant"

{policies}"#,
        eal = dir.eal_toml(),
        policies = if policies {
            format!("{POLICIES}{}", long_policies_toml())
        } else {
            "[[route]]\nvrf = \"tenant\"\nprefix = \"10.20.0.0/16\"\nvia = \"10.0.0.2\"\nport = \"p2\"\n"
                .to_string()
        }
    );
    let roles = [
        "ipv6 = [\"2001:db8:1::1/64\"]",
        "ipv6 = [\"2001:db8:2::1/64\"]",
        "vrf = \"tenant\"\nipv4 = [\"10.0.0.1/24\"]\nipv6 = [\"2001:db8:a::1/64\"]",
        "vlan = { mode = \"trunk\", allowed = [30] }",
    ];
    for (i, role) in roles.iter().enumerate() {
        text.push_str(&format!(
            "\n[[port]]\nname = \"p{i}\"\ndevargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\n{role}\n",
            dir.file(&format!("in{i}.pcap")).display(),
            dir.file(&format!("out{i}.pcap")).display()
        ));
    }
    text
}

const POLICIES: &str = r#"[[srv6.policy]]
name = "v4-to-dt4"
vrf = "tenant"
prefix = "10.20.0.0/16"
mode = "encaps"
segments = ["fcbb:bb00:200:300::", "2001:db8:5::10"]
source = "2001:db8:ff::1"

[[srv6.policy]]
name = "v6-red"
vrf = "tenant"
prefix = "2001:db8:20::/48"
mode = "encaps.red"
segments = ["fcbb:bb00:200:300::", "2001:db8:5::11"]
source = "2001:db8:ff::1"
hop_limit = 32
"#;

/// Headend policies longer than the 128-byte mbuf headroom, and the shorter tagged one that
/// fills it exactly: (name, prefix, mode, segments). The config and the expected frames of
/// `headend_policies_longer_than_the_mbuf_headroom` both come from these.
const LONG_POLICIES: [(&str, &str, &str, &[&str]); 4] = [
    // Outer IPv6 + SRH of 7 SIDs = 160 bytes.
    ("v4-long", "10.21.0.0/16", "encaps", &LONG4),
    // H.Encaps.Red, 8 SIDs: 7 in the SRH, 160 bytes again.
    ("v6-long-red", "2001:db8:21::/48", "encaps.red", &LONG6_RED),
    // Out of the trunk (a VLAN tag pushed after the encapsulation): 7 SIDs (the frame moved)...
    ("v4-long-tagged", "10.22.0.0/16", "encaps", &TAGGED7),
    // ... and 5 SIDs: 40 + 8 + 80 = 128 bytes take the whole headroom, the tag goes behind.
    ("v4-five-tagged", "10.23.0.0/16", "encaps", &TAGGED5),
];
const LONG4: [&str; 7] = [
    "fcbb:bb00:200:300::",
    "2001:db8:6::1",
    "2001:db8:6::2",
    "2001:db8:6::3",
    "2001:db8:6::4",
    "2001:db8:6::5",
    "2001:db8:5::10",
];
const LONG6_RED: [&str; 8] = [
    "fcbb:bb00:200:300::",
    "2001:db8:6::1",
    "2001:db8:6::2",
    "2001:db8:6::3",
    "2001:db8:6::4",
    "2001:db8:6::5",
    "2001:db8:6::6",
    "2001:db8:5::11",
];
const TAGGED7: [&str; 7] = [
    "fcbb:bb00:400::",
    "2001:db8:6::1",
    "2001:db8:6::2",
    "2001:db8:6::3",
    "2001:db8:6::4",
    "2001:db8:6::5",
    "2001:db8:5::10",
];
const TAGGED5: [&str; 5] = [
    "fcbb:bb00:400::",
    "2001:db8:6::1",
    "2001:db8:6::2",
    "2001:db8:6::3",
    "2001:db8:5::10",
];

/// `LONG_POLICIES` as config (hop limit 32 for the H.Encaps.Red one, as its expected frame).
fn long_policies_toml() -> String {
    LONG_POLICIES
        .iter()
        .map(|(name, prefix, mode, segments)| {
            let segments: Vec<String> = segments.iter().map(|s| format!("\"{s}\"")).collect();
            let hop_limit = if *mode == "encaps.red" {
                "hop_limit = 32\n"
            } else {
                ""
            };
            format!(
                "\n[[srv6.policy]]\nname = \"{name}\"\nvrf = \"tenant\"\nprefix = \"{prefix}\"\n\
                 mode = \"{mode}\"\nsegments = [{}]\nsource = \"2001:db8:ff::1\"\n{hop_limit}",
                segments.join(", ")
            )
        })
        .collect()
}

fn eth(src: Mac, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = ROUTER.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// IPv6 header with `next` and `payload`; traffic class 0, flow label 0x00abc.
fn ipv6(src: &str, dst: &str, hop_limit: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = vec![0x60, 0x00, 0x0a, 0xbc];
    ip.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    ip.push(next);
    ip.push(hop_limit);
    ip.extend_from_slice(&v6(src).octets());
    ip.extend_from_slice(&v6(dst).octets());
    ip.extend_from_slice(payload);
    ip
}

/// An SRH, field by field (RFC 8754 section 2), Segment List[0] first.
fn srh(next: u8, segments_left: u8, last_entry: u8, segments: &[&str]) -> Vec<u8> {
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

fn udp_bytes() -> Vec<u8> {
    vec![0x04, 0xd2, 0x12, 0xb7, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
}

/// An SRv6 packet from the upstream host 2001:db8:1::2 on p0.
fn from_upstream(dst: &str, hop_limit: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    eth(
        UPSTREAM,
        0x86dd,
        &ipv6("2001:db8:1::2", dst, hop_limit, next, payload),
    )
}

fn with_srh(next_after: u8, sl: u8, le: u8, segments: &[&str], rest: &[u8]) -> Vec<u8> {
    let mut p = srh(next_after, sl, le, segments);
    p.extend_from_slice(rest);
    p
}

/// Routing's L2 rewrite: to `mac`, from the router MAC.
fn to(mac: Mac, mut frame: Vec<u8>) -> Vec<u8> {
    frame[0..6].copy_from_slice(&mac);
    frame[6..12].copy_from_slice(&ROUTER);
    frame
}

fn set_da(frame: &mut [u8], da: &str) {
    frame[L3 + 24..L3 + 40].copy_from_slice(&v6(da).octets());
}

/// The ICMPv6 error the switch must send about `offending` (an Ethernet frame as received):
/// from the SID it was addressed to, to its source, hop limit 64, quoting the IPv6 packet.
fn icmp_error(offending: &[u8], msg_type: u8, code: u8, pointer: u32) -> Vec<u8> {
    let packet = &offending[L3..];
    let (src, dst) = (&packet[8..24], &packet[24..40]);
    let mut message = vec![msg_type, code, 0, 0];
    message.extend_from_slice(&pointer.to_be_bytes());
    message.extend_from_slice(packet);
    let mut pseudo = dst.to_vec();
    pseudo.extend_from_slice(src);
    pseudo.extend_from_slice(&(message.len() as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 58]);
    pseudo.extend_from_slice(&message);
    let c = checksum(&pseudo);
    message[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&(message.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[58, 64]);
    ip.extend_from_slice(dst);
    ip.extend_from_slice(src);
    ip.extend_from_slice(&message);
    let mut frame = UPSTREAM.to_vec();
    frame.extend_from_slice(&ROUTER);
    frame.extend_from_slice(&0x86ddu16.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame
}

struct Trace {
    inputs: Vec<Vec<PcapPacket>>,
    clock_us: u64,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            inputs: vec![Vec::new(); PORTS],
            clock_us: 1_000_000,
        }
    }

    fn send(&mut self, port: usize, frame: &[u8]) {
        self.clock_us += 10;
        self.inputs[port].push(PcapPacket {
            timestamp_ns: self.clock_us * 1_000,
            data: frame.to_vec(),
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

fn drops(stats: &serde_json::Value) -> HashMap<String, u64> {
    stats["drops"]
        .as_object()
        .expect("drops")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .filter(|(_, v)| *v != 0)
        .collect()
}

fn object<'a>(stats: &'a serde_json::Value, kind: &str, name: &str) -> &'a serde_json::Value {
    stats["srv6"][kind]
        .as_array()
        .expect("srv6 array")
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} in {}", stats["srv6"]))
}

#[test]
fn endpoint_behaviours_and_rfc_edge_cases() {
    let dir = TestDir::new("srv6-endpoint");
    let mut trace = Trace::new();
    let udp = udp_bytes();
    let mut expected: Vec<Vec<Vec<u8>>> = vec![Vec::new(); PORTS];

    // uN with an SRH (SL 1): next uSID shifted in, SL unchanged, HL - 1.
    let un = from_upstream(
        "fcbb:bb00:100:200:300::",
        64,
        43,
        &with_srh(17, 1, 0, &["2001:db8:b::1"], &udp),
    );
    let mut e = to(DOWNSTREAM, un.clone());
    set_da(&mut e, "fcbb:bb00:200:300::");
    e[L3 + 7] = 63;
    trace.send(0, &un);
    expected[1].push(e);

    // uN then the same node's uA in one container: two shifts, two hops, uA's adjacency.
    let un_ua = from_upstream("fcbb:bb00:100:e001:300::", 64, 17, &udp);
    let mut e = to(DOWNSTREAM, un_ua.clone());
    set_da(&mut e, "fcbb:bb00:300::");
    e[L3 + 7] = 62;
    trace.send(0, &un_ua);
    expected[1].push(e);

    // uA installed as /64 with a 32-bit shift.
    let ua64 = eth(
        DOWNSTREAM,
        0x86dd,
        &ipv6("2001:db8:2::2", "fcbb:bb00:100:e002:200::", 64, 17, &udp),
    );
    let mut e = to(UPSTREAM, ua64.clone());
    set_da(&mut e, "fcbb:bb00:200::");
    e[L3 + 7] = 63;
    trace.send(1, &ua64);
    expected[0].push(e);

    // End of the container: RFC 8986 End on the SRH (SL 1 -> 0, DA = Segment List[0]).
    let exhausted = from_upstream(
        "fcbb:bb00:100::",
        64,
        43,
        &with_srh(17, 1, 0, &["2001:db8:b::7"], &udp),
    );
    let mut e = to(DOWNSTREAM, exhausted.clone());
    set_da(&mut e, "2001:db8:b::7");
    e[L3 + 7] = 63;
    e[L3 + 43] = 0;
    trace.send(0, &exhausted);
    expected[1].push(e);

    // End, SL 2 -> 1.
    let end = from_upstream(
        "2001:db8:5::1",
        64,
        43,
        &with_srh(
            17,
            2,
            2,
            &["2001:db8:b::9", "2001:db8:b::8", "2001:db8:5::1"],
            &udp,
        ),
    );
    let mut e = to(DOWNSTREAM, end.clone());
    set_da(&mut e, "2001:db8:b::8");
    e[L3 + 7] = 63;
    e[L3 + 43] = 1;
    trace.send(0, &end);
    expected[1].push(e);

    // PSP: the SRH is gone after the penultimate segment.
    let psp = from_upstream(
        "2001:db8:5::2",
        64,
        43,
        &with_srh(17, 1, 1, &["2001:db8:b::9", "2001:db8:5::2"], &udp),
    );
    trace.send(0, &psp);
    expected[1].push(to(DOWNSTREAM, from_upstream("2001:db8:b::9", 63, 17, &udp)));

    // End.X: out to its adjacency (p1) although the FIB sends fcbb:bb00:300::/48 to p0.
    let end_x = from_upstream(
        "2001:db8:5::4",
        64,
        43,
        &with_srh(17, 1, 1, &["fcbb:bb00:300::", "2001:db8:5::4"], &udp),
    );
    let mut e = to(DOWNSTREAM, end_x.clone());
    set_da(&mut e, "fcbb:bb00:300::");
    e[L3 + 7] = 63;
    e[L3 + 43] = 0;
    trace.send(0, &end_x);
    expected[1].push(e);

    // End.DT4 / End.DT46: the inner IPv4 packet, unchanged but for routing (TTL - 1),
    // routed in VRF tenant.
    let inner4 = ipv4_udp(
        Ipv4Addr::new(10, 8, 0, 1),
        Ipv4Addr::new(10, 9, 1, 1),
        20,
        1000,
        2000,
        &[5; 20],
    );
    let mut routed4 = inner4.clone();
    routed4[8] = 19;
    routed4[10..12].fill(0);
    let c = checksum(&routed4[..20]);
    routed4[10..12].copy_from_slice(&c.to_be_bytes());
    for sid in ["2001:db8:5::10", "2001:db8:5::12"] {
        let dt4 = from_upstream(sid, 64, 43, &with_srh(4, 0, 0, &[sid], &inner4));
        trace.send(0, &dt4);
        expected[2].push(to(TENANT_V4, eth(UPSTREAM, 0x0800, &routed4)));
    }
    // End.DT6 without an SRH (what H.Encaps.Red sends for one SID).
    let inner6 = ipv6_udp(v6("2001:db8:7::1"), v6("2001:db8:c::5"), 20, 1, 2, &[6; 12]);
    let mut routed6 = inner6.clone();
    routed6[7] = 19;
    let dt6 = from_upstream("2001:db8:5::11", 64, 41, &inner6);
    trace.send(0, &dt6);
    expected[2].push(to(TENANT_V6, eth(UPSTREAM, 0x86dd, &routed6)));

    // Errors the RFC answers with ICMPv6, back to the source on p0.
    let hop_limit_1 = from_upstream("fcbb:bb00:100:200::", 1, 17, &udp);
    trace.send(0, &hop_limit_1);
    expected[0].push(icmp_error(&hop_limit_1, 3, 0, 0));
    let last_entry_past = from_upstream(
        "2001:db8:5::1",
        64,
        43,
        &with_srh(17, 1, 3, &["2001:db8:b::9", "2001:db8:5::1"], &udp),
    );
    trace.send(0, &last_entry_past);
    expected[0].push(icmp_error(&last_entry_past, 4, 0, 43));
    let upper_layer = from_upstream(
        "2001:db8:5::1",
        64,
        43,
        &with_srh(17, 0, 0, &["2001:db8:5::1"], &udp),
    );
    trace.send(0, &upper_layer);
    expected[0].push(icmp_error(&upper_layer, 4, 4, 40 + 24));
    let dt_with_sl = from_upstream(
        "2001:db8:5::11",
        64,
        43,
        &with_srh(41, 1, 1, &["2001:db8:5::11", "2001:db8:5::11"], &inner6),
    );
    trace.send(0, &dt_with_sl);
    expected[0].push(icmp_error(&dt_with_sl, 4, 0, 43));

    // RFC 8200 4.4: a Routing header of a type the switch does not know (0, the deprecated
    // RH0) with Segments Left 1: Parameter Problem code 0 pointing at its Routing Type.
    let mut rh0 = srh(17, 1, 1, &["fc00:3::", "2001:db8:5::1"]);
    rh0[2] = 0;
    rh0.extend_from_slice(&udp);
    let unknown_routing_type = from_upstream("2001:db8:5::1", 64, 43, &rh0);
    trace.send(0, &unknown_routing_type);
    expected[0].push(icmp_error(&unknown_routing_type, 4, 0, 42));

    // Nine visits to one SID (its SRH lists it nine times): the ninth is one local SID too
    // many, a silent drop that counts once, at that SID.
    let mut nine = vec!["fc00:3::"];
    nine.extend(["2001:db8:5::1"; 9]);
    let looping = from_upstream("2001:db8:5::1", 64, 43, &with_srh(17, 9, 9, &nine, &udp));
    trace.send(0, &looping);

    // A lying Hdr Ext Len: a counted drop, nothing sent.
    let mut lying = from_upstream(
        "2001:db8:5::1",
        64,
        43,
        &with_srh(17, 1, 0, &["2001:db8:b::9"], &udp),
    );
    lying[L3 + 41] = 9;
    trace.send(0, &lying);

    trace.write(&dir);
    let (_, stats) = replay(&dir, &config(&dir));
    let out = outputs(&dir);
    for port in 0..PORTS {
        assert_eq!(
            out[port].len(),
            expected[port].len(),
            "frames out of p{port}"
        );
        for (i, (got, want)) in out[port].iter().zip(&expected[port]).enumerate() {
            assert_eq!(got, want, "p{port} frame {i}");
        }
    }
    let expected_drops: HashMap<String, u64> = [
        ("srv6_hop_limit", 1),
        ("srv6_bad_srh", 2),
        ("srv6_upper_layer", 1),
        ("srv6_segments_left_not_zero", 1),
        ("srv6_malformed_headers", 1),
        ("srv6_too_many_local_sids", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(drops(&stats), expected_drops);
    assert_eq!(u64_at(&stats, "/generated"), 5, "five ICMPv6 errors");
    // uN saw: the shift, the uN+uA container, the exhausted container, the hop-limit error.
    let un_sid = object(&stats, "sids", "fcbb:bb00:100::/48");
    assert_eq!(u64_at(un_sid, "/packets"), 4);
    assert_eq!(u64_at(un_sid, "/drops/srv6_hop_limit"), 1);
    let dt6_sid = object(&stats, "sids", "2001:db8:5::11/128");
    assert_eq!(u64_at(dt6_sid, "/packets"), 2);
    assert_eq!(u64_at(dt6_sid, "/drops/srv6_segments_left_not_zero"), 1);
    // End 2001:db8:5::1 saw: End SL 2 -> 1, Last Entry past the header, the upper layer at
    // SL 0, the unknown routing type, nine visits of one packet, the lying Hdr Ext Len. Each
    // dropped packet is one drop, whatever the number of visits.
    let end_sid = object(&stats, "sids", "2001:db8:5::1/128");
    assert_eq!(u64_at(end_sid, "/packets"), 14);
    let want: HashMap<String, u64> = [
        ("srv6_bad_srh", 2),
        ("srv6_upper_layer", 1),
        ("srv6_malformed_headers", 1),
        ("srv6_too_many_local_sids", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(drops(end_sid), want);
}

/// The outer header a policy must push, flow label zeroed (checked separately).
fn outer(next: u8, traffic_class: u8, hop_limit: u8, srh_bytes: &[u8], inner: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60 | (traffic_class >> 4), traffic_class << 4, 0, 0];
    h.extend_from_slice(&((srh_bytes.len() + inner.len()) as u16).to_be_bytes());
    h.push(next);
    h.push(hop_limit);
    h.extend_from_slice(&v6("2001:db8:ff::1").octets());
    h.extend_from_slice(&v6("fcbb:bb00:200:300::").octets());
    h.extend_from_slice(srh_bytes);
    h.extend_from_slice(inner);
    h
}

fn flow_label(frame: &[u8]) -> u32 {
    u32::from_be_bytes([0, frame[L3 + 1] & 0x0f, frame[L3 + 2], frame[L3 + 3]])
}

fn without_flow_label(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[L3 + 1] &= 0xf0;
    f[L3 + 2] = 0;
    f[L3 + 3] = 0;
    f
}

#[test]
fn headend_encapsulates_and_the_far_end_decapsulates() {
    let dir = TestDir::new("srv6-headend");
    let mut trace = Trace::new();
    // IPv4 with DSCP 46 / ECT(0) (TOS 0xba) from the tenant, twice the same flow, then another.
    let flow = |dst: [u8; 4], sport: u16| {
        let mut ip = ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::from(dst),
            30,
            sport,
            4791,
            &[1; 10],
        );
        ip[1] = 0xba;
        ip[10..12].fill(0);
        let c = checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        ip
    };
    let a = flow([10, 20, 1, 1], 1000);
    let b = flow([10, 20, 1, 1], 1001);
    for inner in [&a, &a, &b] {
        // Padded to 60 bytes on the wire: the padding must not enter the tunnel.
        let mut frame = eth(TENANT_V4, 0x0800, inner);
        frame.resize(frame.len().max(60), 0);
        trace.send(2, &frame);
    }
    let inner6 = ipv6_udp(v6("2001:db8:a::2"), v6("2001:db8:20::5"), 30, 7, 8, &[2; 8]);
    trace.send(2, &eth(TENANT_V6, 0x86dd, &inner6));
    trace.write(&dir);
    let (_, stats) = replay(&dir, &config(&dir));
    let out = outputs(&dir);
    assert_eq!(
        out[1].len(),
        4,
        "all encapsulated toward fcbb:bb00:200::/48"
    );

    let routed = |inner: &[u8]| {
        let mut r = inner.to_vec();
        r[8] -= 1;
        r[10..12].fill(0);
        let c = checksum(&r[..20]);
        r[10..12].copy_from_slice(&c.to_be_bytes());
        r
    };
    // H.Encaps: SRH [S2, S1], SL = LE = 1, next header 4; outer TC = inner TOS.
    let srh_full = srh(4, 1, 1, &["2001:db8:5::10", "fcbb:bb00:200:300::"]);
    for (i, inner) in [&a, &a, &b].into_iter().enumerate() {
        let want = to(
            DOWNSTREAM,
            eth(
                TENANT_V4,
                0x86dd,
                &outer(43, 0xba, 64, &srh_full, &routed(inner)),
            ),
        );
        assert_eq!(without_flow_label(&out[1][i]), want, "H.Encaps frame {i}");
    }
    assert_eq!(
        flow_label(&out[1][0]),
        flow_label(&out[1][1]),
        "one flow, one label"
    );
    assert_ne!(
        flow_label(&out[1][0]),
        flow_label(&out[1][2]),
        "another flow"
    );
    // H.Encaps.Red: SRH [S2] only, LE 0, SL 1; configured hop limit 32.
    let srh_red = srh(41, 1, 0, &["2001:db8:5::11"]);
    let mut routed6 = inner6.clone();
    routed6[7] = 29;
    let want = to(
        DOWNSTREAM,
        eth(TENANT_V6, 0x86dd, &outer(43, 0, 32, &srh_red, &routed6)),
    );
    assert_eq!(without_flow_label(&out[1][3]), want, "H.Encaps.Red");

    assert!(drops(&stats).is_empty(), "{:?}", drops(&stats));
    let policy = object(&stats, "policies", "v4-to-dt4");
    assert_eq!(u64_at(policy, "/packets"), 3);
    assert_eq!(u64_at(policy, "/bytes"), 3 * 60);
    assert_eq!(u64_at(object(&stats, "policies", "v6-red"), "/packets"), 1);

    // The far end: the same switch's End.DT4 decapsulates what the headend built (fed back in
    // on p1 as the next node would deliver it, DA = S2, SL 0), and the tenant gets the inner
    // packet as the headend received it, TTL - 2 (two routing hops).
    let dir2 = TestDir::new("srv6-far-end");
    let mut trace = Trace::new();
    let mut delivered = out[1][0].clone();
    delivered[0..6].copy_from_slice(&ROUTER);
    delivered[6..12].copy_from_slice(&DOWNSTREAM);
    set_da(&mut delivered, "2001:db8:5::10");
    delivered[L3 + 40 + 3] = 0;
    trace.send(1, &delivered);
    trace.write(&dir2);
    let (_, _) = replay(&dir2, &config_with(&dir2, false));
    let out2 = outputs(&dir2);
    let twice = routed(&routed(&a));
    assert_eq!(
        out2[2],
        vec![to(TENANT_V4, eth(DOWNSTREAM, 0x0800, &twice))]
    );
}

/// A frame that left tagged: the same frame without its 802.1Q tag, and the tag's TCI.
fn untagged(frame: &[u8]) -> (Vec<u8>, u16) {
    assert_eq!(&frame[12..14], &[0x81, 0x00], "tagged");
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&frame[16..]);
    (f, u16::from_be_bytes([frame[14], frame[15]]))
}

/// The IPv6 header and SRH RFC 8986 H.Encaps / H.Encaps.Red push for `segments` (path order,
/// S1 first) in front of `inner`: DA = S1; the SRH lists the segments in reverse order
/// (Segment List[0] = the last one), without S1 for H.Encaps.Red; SL = number of segments
/// - 1, LE = entries - 1. Flow label zero (checked apart).
fn encapsulated(
    segments: &[&str],
    reduced: bool,
    inner_next: u8,
    traffic_class: u8,
    hop_limit: u8,
    inner: &[u8],
) -> Vec<u8> {
    let listed: Vec<&str> = if reduced {
        segments[1..].iter().rev().copied().collect()
    } else {
        segments.iter().rev().copied().collect()
    };
    let sl = (segments.len() - 1) as u8;
    let srh_bytes = srh(inner_next, sl, (listed.len() - 1) as u8, &listed);
    let mut h = vec![0x60 | (traffic_class >> 4), traffic_class << 4, 0, 0];
    h.extend_from_slice(&((srh_bytes.len() + inner.len()) as u16).to_be_bytes());
    h.push(43);
    h.push(hop_limit);
    h.extend_from_slice(&v6("2001:db8:ff::1").octets());
    h.extend_from_slice(&v6(segments[0]).octets());
    h.extend_from_slice(&srh_bytes);
    h.extend_from_slice(inner);
    h
}

#[test]
fn headend_policies_longer_than_the_mbuf_headroom() {
    let dir = TestDir::new("srv6-long");
    let mut trace = Trace::new();
    let v4 = |dst: [u8; 4], payload: usize| {
        ipv4_udp(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::from(dst),
            30,
            1000,
            4791,
            &vec![0x5a; payload],
        )
    };
    let routed4 = |inner: &[u8]| {
        let mut r = inner.to_vec();
        r[8] -= 1;
        r[10..12].fill(0);
        let c = checksum(&r[..20]);
        r[10..12].copy_from_slice(&c.to_be_bytes());
        r
    };
    // Small (padded to 60 on the wire) and near a 1500-byte MTU: the whole frame moves.
    let small = v4([10, 21, 1, 1], 10);
    let big = v4([10, 21, 1, 2], 1472);
    for inner in [&small, &big] {
        let mut frame = eth(TENANT_V4, 0x0800, inner);
        frame.resize(frame.len().max(60), 0);
        trace.send(2, &frame);
    }
    let inner6 = ipv6_udp(
        v6("2001:db8:a::2"),
        v6("2001:db8:21::5"),
        30,
        7,
        8,
        &[2; 800],
    );
    trace.send(2, &eth(TENANT_V6, 0x86dd, &inner6));
    let to_trunk7 = v4([10, 22, 1, 1], 600);
    let to_trunk5 = v4([10, 23, 1, 1], 600);
    trace.send(2, &eth(TENANT_V4, 0x0800, &to_trunk7));
    trace.send(2, &eth(TENANT_V4, 0x0800, &to_trunk5));
    trace.write(&dir);
    // p1's MTU takes the 1500-byte packet with its 160 bytes of encapsulation, exactly.
    let config = config(&dir).replacen("name = \"p1\"\n", "name = \"p1\"\nmtu = 1660\n", 1);
    let (_, stats) = replay(&dir, &config);
    let out = outputs(&dir);
    assert!(drops(&stats).is_empty(), "{:?}", drops(&stats));

    assert_eq!(
        out[1].len(),
        3,
        "three encapsulated toward fcbb:bb00:200::/48"
    );
    for (i, inner) in [&small, &big].into_iter().enumerate() {
        let want = to(
            DOWNSTREAM,
            eth(
                TENANT_V4,
                0x86dd,
                &encapsulated(&LONG4, false, 4, 0, 64, &routed4(inner)),
            ),
        );
        assert_eq!(want.len(), 14 + 160 + inner.len());
        assert_eq!(
            without_flow_label(&out[1][i]),
            want,
            "H.Encaps, 7 SIDs, frame {i}"
        );
    }
    let mut routed6 = inner6.clone();
    routed6[7] = 29;
    let want = to(
        DOWNSTREAM,
        eth(
            TENANT_V6,
            0x86dd,
            &encapsulated(&LONG6_RED, true, 41, 0, 32, &routed6),
        ),
    );
    assert_eq!(want.len(), 14 + 160 + inner6.len());
    assert_eq!(without_flow_label(&out[1][2]), want, "H.Encaps.Red, 8 SIDs");

    // Out of the trunk: the same frames with a tag for VLAN 30 (PCP 0) after the MACs.
    assert_eq!(out[3].len(), 2, "two encapsulated toward VLAN 30");
    for (i, (segments, inner)) in [(&TAGGED7[..], &to_trunk7), (&TAGGED5[..], &to_trunk5)]
        .into_iter()
        .enumerate()
    {
        let (frame, tci) = untagged(&out[3][i]);
        assert_eq!(tci, 30, "trunk frame {i}");
        let want = to(
            TRUNK_HOST,
            eth(
                TENANT_V4,
                0x86dd,
                &encapsulated(segments, false, 4, 0, 64, &routed4(inner)),
            ),
        );
        assert_eq!(without_flow_label(&frame), want, "trunk frame {i}");
    }
    for (name, ..) in LONG_POLICIES {
        let policy = object(&stats, "policies", name);
        assert_eq!(
            u64_at(policy, "/packets"),
            if name == "v4-long" { 2 } else { 1 },
            "{name}"
        );
    }
}
