//! End to end: ECMP groups in `hash`, `flowlet` and `per-packet` modes on pcap replay in
//! virtual time. A leaf with four host ports (h0..h3, VLAN 10) and four routed uplinks
//! (u0..u3, all 100G) in one group. Expectations come from the flowlet rules (a flowlet ends
//! only after a gap longer than the timeout; a down member is left at once) and from the
//! traces' construction, not from previous runs.

mod common;

use common::frames::{Mac, ethernet, ipv4_udp};
use common::{TestDir, replay_with, u64_at};
use control::pcap::PcapPacket;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;

const ROUTER: Mac = [0x02, 0, 0, 0, 0x01, 0];
const HOSTS: usize = 4;
const UPLINKS: usize = 4;
const PORTS: usize = HOSTS + UPLINKS;
/// Trace time of the first frame, in microseconds.
const T0_US: u64 = 1_000_000;
const FRAME_LEN: usize = 1000;

fn host_mac(i: usize) -> Mac {
    [0x02, 0, 0, 0, 0, 0x10 + i as u8]
}

fn spine_mac(i: usize) -> Mac {
    [0x02, 0, 0, 0, 0x51, i as u8]
}

/// The leaf; `group_keys` are the balancing keys of the `spines` group. A second route,
/// 10.2.0.0/16, goes to u0 alone (to congest it on purpose).
fn config(dir: &TestDir, group_keys: &str) -> String {
    config_with(dir, group_keys, "", None)
}

/// As `config`, with `extra` TOML appended and uplink u0 on QoS profile `u0_qos`.
fn config_with(dir: &TestDir, group_keys: &str, extra: &str, u0_qos: Option<&str>) -> String {
    let members: Vec<String> = (0..UPLINKS)
        .map(|u| format!("{{ port = \"u{u}\", via = \"10.255.0.{}\" }}", 2 * u))
        .collect();
    let mut text = format!(
        r#"[switch]
name = "leaf-flowlet"
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
members = [{members}]
{group_keys}
[[route]]
prefix = "10.1.0.0/16"
group = "spines"
[[route]]
prefix = "10.2.0.0/16"
via = "10.255.0.0"
port = "u0"
"#,
        eal = dir.eal_toml(),
        members = members.join(", "),
    );
    for u in 0..UPLINKS {
        let [a, b, c, d, e, f] = spine_mac(u);
        text.push_str(&format!(
            "[[neighbor]]\nip = \"10.255.0.{}\"\nmac = \"{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}\"\nport = \"u{u}\"\n",
            2 * u
        ));
    }
    for p in 0..PORTS {
        let (name, mut role) = if p < HOSTS {
            (
                format!("h{p}"),
                "vlan = { mode = \"access\", id = 10 }".to_owned(),
            )
        } else {
            let u = p - HOSTS;
            (
                format!("u{u}"),
                format!("ipv4 = [\"10.255.0.{}/31\"]", 2 * u + 1),
            )
        };
        if let Some(profile) = u0_qos.filter(|_| p == HOSTS) {
            role.push_str(&format!("\nqos = \"{profile}\""));
        }
        text.push_str(&format!(
            "[[port]]\nname = \"{name}\"\ndevargs = \"net_pcap{p},rx_pcap={},tx_pcap={}\"\nspeed_gbps = 100\n{role}\n",
            dir.file(&format!("in{p}.pcap")).display(),
            dir.file(&format!("out{p}.pcap")).display()
        ));
    }
    text.push_str(extra);
    text
}

/// A flow: its UDP source port picks its hash; `dst` its route (10.1/16: the group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Flow {
    id: u8,
    sport: u16,
    dst: Ipv4Addr,
}

/// A frame of `flow` from host `host`, carrying (flow id, round, seq) at payload offset 0..7;
/// `dscp` picks the traffic class (default map: 3 -> TC 3, else TC 0).
fn frame(host: usize, flow: Flow, round: u16, seq: u32, len: usize, dscp: u8) -> Vec<u8> {
    let mut payload = vec![0u8; len - 42];
    payload[0] = flow.id;
    payload[1..3].copy_from_slice(&round.to_be_bytes());
    payload[3..7].copy_from_slice(&seq.to_be_bytes());
    // The source address is the same from every host: a flow's hash depends on the flow
    // only, so a flow probed from one host hashes the same from another.
    let mut ip = ipv4_udp(
        Ipv4Addr::new(10, 0, 10, 5),
        flow.dst,
        64,
        flow.sport,
        4791,
        &payload,
    );
    if dscp != 0 {
        ip[1] = dscp << 2;
        ip[10..12].copy_from_slice(&[0, 0]);
        let c = common::frames::checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
    }
    ethernet(ROUTER, host_mac(host), None, 0x0800, &ip)
}

/// (flow id, round, seq) of a routed frame.
fn identity(frame: &[u8]) -> (u8, u16, u32) {
    let p = &frame[42..];
    (
        p[0],
        u16::from_be_bytes([p[1], p[2]]),
        u32::from_be_bytes([p[3], p[4], p[5], p[6]]),
    )
}

/// Input frames per port with their pcap times (us).
struct Trace {
    inputs: Vec<Vec<PcapPacket>>,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            inputs: vec![Vec::new(); PORTS],
        }
    }

    fn send(&mut self, port: usize, at_us: u64, data: Vec<u8>) {
        self.inputs[port].push(PcapPacket {
            timestamp_ns: at_us * 1000,
            data,
        });
    }

    fn write(&self, dir: &TestDir) {
        for (p, packets) in self.inputs.iter().enumerate() {
            let mut sorted = packets.clone();
            sorted.sort_by_key(|p| p.timestamp_ns);
            dir.write_pcap(&format!("in{p}.pcap"), &sorted);
        }
    }
}

/// Output frames of uplink `u`, in the order it sent them.
fn uplink_out(dir: &TestDir, u: usize) -> Vec<Vec<u8>> {
    dir.read_pcap(&format!("out{}.pcap", HOSTS + u))
        .into_iter()
        .map(|p| p.data)
        .collect()
}

fn run(dir: &TestDir, trace: &Trace, keys: &str, extra: &[&str]) -> serde_json::Value {
    trace.write(dir);
    let events = dir.file("events.jsonl");
    let mut args = vec!["--events", events.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (_, stats) = replay_with(dir, &config(dir, keys), &args);
    stats
}

fn group_stats(stats: &serde_json::Value) -> &serde_json::Value {
    let groups = stats["groups"].as_array().expect("groups in stats");
    assert_eq!(groups[0]["name"], "spines");
    &groups[0]
}

fn drops_total(stats: &serde_json::Value) -> u64 {
    stats["drops"]
        .as_object()
        .expect("drops")
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// Sends one packet of each of `n` candidate flows in hash mode and returns each candidate's
/// uplink: the trace then picks flows that collide. Uses the switch's own hash (the point is
/// to build a collision, not to check the hash).
fn probe_members(n: u16) -> Vec<(Flow, usize)> {
    let dir = TestDir::new("flowlet-probe");
    let mut trace = Trace::new();
    let flows: Vec<Flow> = (0..n)
        .map(|i| Flow {
            id: 0,
            sport: 50_000 + i,
            dst: Ipv4Addr::new(10, 1, 0, 1),
        })
        .collect();
    for (i, f) in flows.iter().enumerate() {
        trace.send(0, T0_US + i as u64, frame(0, *f, 0, i as u32, 100, 0));
    }
    run(&dir, &trace, "", &[]);
    let mut member = HashMap::new();
    for u in 0..UPLINKS {
        for f in uplink_out(&dir, u) {
            let sport = u16::from_be_bytes([f[34], f[35]]);
            member.insert(sport, u);
        }
    }
    flows.into_iter().map(|f| (f, member[&f.sport])).collect()
}

/// Four flows, two hashing to one uplink and two to another.
fn colliding_flows() -> [Flow; 4] {
    let probed = probe_members(64);
    let mut by_member: BTreeMap<usize, Vec<Flow>> = BTreeMap::new();
    for (f, u) in probed {
        by_member.entry(u).or_default().push(f);
    }
    let pairs: Vec<&Vec<Flow>> = by_member.values().filter(|v| v.len() >= 2).collect();
    assert!(pairs.len() >= 2, "64 flows over 4 uplinks fill two pairs");
    let mut chosen = [pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]];
    for (i, f) in chosen.iter_mut().enumerate() {
        f.id = i as u8;
    }
    chosen
}

const ROUNDS: u16 = 24;
const BURST: u32 = 50;
const PERIOD_US: u64 = 150;

/// Elephants with gaps: flow i on host i sends ROUNDS bursts of BURST back-to-back frames,
/// one burst every PERIOD_US, flows staggered by a quarter period. A burst lasts 50 x 1024 B
/// at 100G = 4.1 us, so the gap between bursts of a flow is about 146 us: longer than a
/// 100 us timeout, and every burst is a flowlet.
fn elephants(flows: &[Flow; 4]) -> Trace {
    let mut trace = Trace::new();
    for (h, flow) in flows.iter().enumerate() {
        for round in 0..ROUNDS {
            let at = T0_US + h as u64 * PERIOD_US / 4 + u64::from(round) * PERIOD_US;
            for seq in 0..BURST {
                trace.send(
                    h,
                    at,
                    frame(
                        h,
                        *flow,
                        round,
                        u32::from(round) * BURST + seq,
                        FRAME_LEN,
                        0,
                    ),
                );
            }
        }
    }
    trace
}

/// Bytes each uplink sent, and per flow the uplink of each round, checking that every
/// round of every flow left complete, on one uplink, in sequence order.
fn uplink_loads(dir: &TestDir) -> ([u64; UPLINKS], BTreeMap<(u8, u16), usize>) {
    let mut bytes = [0u64; UPLINKS];
    let mut round_member: BTreeMap<(u8, u16), usize> = BTreeMap::new();
    let mut count: BTreeMap<(u8, u16), u32> = BTreeMap::new();
    for (u, load) in bytes.iter_mut().enumerate() {
        let mut last_seq: HashMap<u8, u32> = HashMap::new();
        for f in uplink_out(dir, u) {
            assert_eq!(f[0..6], spine_mac(u), "the member's spine MAC");
            *load += f.len() as u64;
            let (flow, round, seq) = identity(&f);
            if let Some(&prev) = last_seq.get(&flow) {
                assert!(
                    seq > prev,
                    "flow {flow} reordered on u{u}: {seq} after {prev}"
                );
            }
            last_seq.insert(flow, seq);
            let first = *round_member.entry((flow, round)).or_insert(u);
            assert_eq!(
                first, u,
                "flow {flow} round {round} split over u{first} and u{u}"
            );
            *count.entry((flow, round)).or_default() += 1;
        }
    }
    for (key, n) in &count {
        assert_eq!(*n, BURST, "every frame of flow/round {key:?} left");
    }
    assert_eq!(count.len(), 4 * usize::from(ROUNDS));
    (bytes, round_member)
}

#[test]
fn colliding_elephants_are_2x_imbalanced_with_hashing_and_balanced_within_10_percent_with_flowlets()
{
    let flows = colliding_flows();
    let total = 4 * u64::from(ROUNDS) * u64::from(BURST) * FRAME_LEN as u64;

    // hash: two members carry two flows each, two carry nothing: max / mean = 2.
    let dir = TestDir::new("flowlet-hash");
    let stats = run(&dir, &elephants(&flows), "mode = \"hash\"", &[]);
    let (bytes, _) = uplink_loads(&dir);
    let mut sorted = bytes;
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 0, total / 2, total / 2], "{bytes:?}");
    let g = group_stats(&stats);
    assert_eq!(g["mode"], "hash");
    assert_eq!(g["imbalance"].as_f64(), Some(2.0));
    assert_eq!(u64_at(g, "/flowlets"), 0);
    let member_bytes: Vec<u64> = (0..UPLINKS)
        .map(|u| u64_at(g, &format!("/members/{u}/bytes")))
        .collect();
    assert_eq!(
        member_bytes,
        bytes.to_vec(),
        "group counters = what the uplinks sent"
    );
    assert_eq!(drops_total(&stats), 0);

    // flowlet, least-loaded: every burst is a flowlet, and the loads even out.
    let dir = TestDir::new("flowlet-ll");
    let stats = run(
        &dir,
        &elephants(&flows),
        "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_timeout_us = 100",
        &[],
    );
    let (bytes, _) = uplink_loads(&dir);
    let (max, min) = (*bytes.iter().max().unwrap(), *bytes.iter().min().unwrap());
    assert!(
        max as f64 <= 1.1 * min as f64,
        "member loads within 10%: {bytes:?}"
    );
    let g = group_stats(&stats);
    assert_eq!(g["mode"], "flowlet");
    assert_eq!(
        u64_at(g, "/flowlets"),
        4 * u64::from(ROUNDS),
        "each burst is one flowlet"
    );
    assert!(g["imbalance"].as_f64().unwrap() <= 1.1);
    assert_eq!(drops_total(&stats), 0);

    // The same trace with a timeout longer than the gaps: each flow is one flowlet and stays
    // where it started (no moves at all).
    let dir = TestDir::new("flowlet-long");
    let stats = run(
        &dir,
        &elephants(&flows),
        "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_timeout_us = 200",
        &[],
    );
    let (_, round_member) = uplink_loads(&dir);
    for flow in 0..4u8 {
        let members: BTreeSet<usize> = round_member
            .iter()
            .filter(|((f, _), _)| *f == flow)
            .map(|(_, &u)| u)
            .collect();
        assert_eq!(members.len(), 1, "flow {flow} never had a long gap");
    }
    let g = group_stats(&stats);
    assert_eq!(u64_at(g, "/flowlets"), 4);
    assert_eq!(u64_at(g, "/moves"), 0);
}

#[test]
fn a_flow_without_a_gap_longer_than_the_timeout_never_changes_member() {
    // Steady: a frame every 100 us (= the timeout: not longer, so one flowlet). Gappy: every
    // 101 us (each frame a new flowlet). Both 1500 B, so a re-decision would leave the
    // steady flow's uplink, the busiest by its recent bytes.
    let dir = TestDir::new("flowlet-steady");
    let steady = Flow {
        id: 1,
        sport: 40_001,
        dst: Ipv4Addr::new(10, 1, 0, 7),
    };
    let gappy = Flow {
        id: 2,
        sport: 40_002,
        dst: Ipv4Addr::new(10, 1, 0, 8),
    };
    let n = 40u32;
    let mut trace = Trace::new();
    for k in 0..n {
        trace.send(
            0,
            T0_US + 100 * u64::from(k),
            frame(0, steady, 0, k, 1500, 0),
        );
        trace.send(
            1,
            T0_US + 101 * u64::from(k),
            frame(1, gappy, 0, k, 1500, 0),
        );
    }
    let stats = run(
        &dir,
        &trace,
        "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_timeout_us = 100",
        &[],
    );
    let mut steady_on = BTreeSet::new();
    let mut steady_seen = 0;
    for u in 0..UPLINKS {
        for f in uplink_out(&dir, u) {
            if identity(&f).0 == 1 {
                steady_on.insert(u);
                steady_seen += 1;
            }
        }
    }
    assert_eq!(steady_seen, n);
    assert_eq!(steady_on.len(), 1, "steady flow on {steady_on:?}");
    let g = group_stats(&stats);
    // Store-and-forward arrival keeps the pcap spacing (each link is otherwise idle), so the
    // steady flow's gaps are exactly 100 us and the gappy flow's 101 us.
    assert_eq!(u64_at(g, "/flowlets"), 1 + u64::from(n));
    assert_eq!(drops_total(&stats), 0);
}

#[test]
fn least_loaded_picks_the_uplink_not_congested_by_another_traffic_class() {
    // h0 and h1 each send 400 x 1000 B of DSCP 3 (TC 3) to 10.2/16, routed to u0 only: 200G
    // into 100G, so u0's TC 3 queue grows by about one frame per frame time (81.92 ns).
    // 20 us later, 20 new TC 0 flows from h2 to the group: u0 then holds about 240 frames
    // (240 KB) while the other uplinks hold nothing, so every new flow must avoid u0.
    let congest = |keys: &str, name: &str| {
        let dir = TestDir::new(name);
        let mut trace = Trace::new();
        let hog = Flow {
            id: 9,
            sport: 7,
            dst: Ipv4Addr::new(10, 2, 0, 1),
        };
        for h in 0..2 {
            for k in 0..400 {
                trace.send(h, T0_US, frame(h, hog, 0, k, FRAME_LEN, 3));
            }
        }
        for i in 0..20u16 {
            let flow = Flow {
                id: 10 + i as u8,
                sport: 30_000 + i,
                dst: Ipv4Addr::new(10, 1, 1, 1),
            };
            trace.send(
                2,
                T0_US + 20 + u64::from(i) / 4,
                frame(2, flow, 0, 0, 100, 0),
            );
        }
        let stats = run(&dir, &trace, keys, &[]);
        assert_eq!(drops_total(&stats), 0);
        let mut new_flows_on = [0usize; UPLINKS];
        for (u, on) in new_flows_on.iter_mut().enumerate() {
            *on = uplink_out(&dir, u)
                .iter()
                .filter(|f| identity(f).0 >= 10)
                .count();
        }
        (stats, new_flows_on)
    };
    let (stats, on) = congest(
        "mode = \"flowlet\"\nchoice = \"least-loaded\"",
        "flowlet-congest",
    );
    assert_eq!(on.iter().sum::<usize>(), 20);
    assert_eq!(on[0], 0, "no new flow joins the congested uplink: {on:?}");
    assert!(
        u64_at(&stats["ports"][HOSTS]["queues"][3], "/peak_depth_bytes") > 100_000,
        "u0 was congested"
    );
    // The control: hashing ignores the congestion, and some of the same flows land on u0.
    let (_, on) = congest("mode = \"hash\"", "flowlet-congest-hash");
    assert!(on[0] > 0, "hashing puts some flows on u0: {on:?}");
}

#[test]
fn flows_on_a_member_that_goes_down_move_at_once_and_nothing_is_sent_to_it() {
    // 16 flows, a frame each every 10 us for 2 ms (never a gap near the 100 us timeout); u1
    // goes down at 1 ms.
    let dir = TestDir::new("flowlet-down");
    let flows: Vec<Flow> = (0..16u16)
        .map(|i| Flow {
            id: i as u8,
            sport: 20_000 + i,
            dst: Ipv4Addr::new(10, 1, 2, 1),
        })
        .collect();
    let mut trace = Trace::new();
    let mut sent_at: HashMap<(u8, u32), u64> = HashMap::new();
    for k in 0..200u32 {
        for (i, flow) in flows.iter().enumerate() {
            let at = T0_US + 10 * u64::from(k);
            // Flows spread over the four hosts (each link carries 4 frames per 10 us).
            trace.send(i % HOSTS, at, frame(i % HOSTS, *flow, 0, k, 200, 0));
            sent_at.insert((flow.id, k), at);
        }
    }
    let down_us = T0_US + 1000;
    let schedule = dir.file("schedule.toml");
    std::fs::write(
        &schedule,
        format!("[[event]]\nat_us = {down_us}\nport = \"u1\"\nlink = \"down\"\n"),
    )
    .unwrap();
    let stats = run(
        &dir,
        &trace,
        // A large table: no two of the 16 flows share a flowlet entry, so each forced move
        // is one flow's.
        "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_table_size = 1048576",
        &["--schedule", schedule.to_str().unwrap()],
    );
    // member[flow][phase]: the uplinks a flow used before and after the failure.
    let mut before: HashMap<u8, BTreeSet<usize>> = HashMap::new();
    let mut after: HashMap<u8, BTreeSet<usize>> = HashMap::new();
    let mut first_after: HashMap<u8, u32> = HashMap::new();
    for u in 0..UPLINKS {
        for f in uplink_out(&dir, u) {
            let (flow, _, seq) = identity(&f);
            // Frames stamped at the failure instant arrive after it (store-and-forward).
            if sent_at[&(flow, seq)] < down_us {
                before.entry(flow).or_default().insert(u);
            } else {
                assert_ne!(u, 1, "flow {flow} frame {seq} sent to the down uplink");
                after.entry(flow).or_default().insert(u);
                let e = first_after.entry(flow).or_insert(seq);
                *e = (*e).min(seq);
            }
        }
    }
    let on_u1: Vec<u8> = (0..16u8).filter(|f| before[f].contains(&1)).collect();
    assert!(!on_u1.is_empty(), "some flows used u1 before it failed");
    for flow in 0..16u8 {
        assert_eq!(before[&flow].len(), 1, "flow {flow}: one member before");
        assert_eq!(after[&flow].len(), 1, "flow {flow}: one member after");
        if !on_u1.contains(&flow) {
            assert_eq!(
                before[&flow], after[&flow],
                "flow {flow} had no reason to move"
            );
        }
        // The first frame stamped at the failure leaves (on a live member), so the move
        // happened at once, not after a gap.
        assert_eq!(first_after[&flow], 100, "flow {flow}");
    }
    let g = group_stats(&stats);
    assert_eq!(u64_at(g, "/forced_moves"), on_u1.len() as u64);
    assert_eq!(u64_at(g, "/moves"), on_u1.len() as u64);
    // Conservation: what did not leave was dropped at the failure, nowhere else.
    let out: u64 = (0..UPLINKS).map(|u| uplink_out(&dir, u).len() as u64).sum();
    let link_down = stats["drops"]["link_down"].as_u64().unwrap_or(0);
    assert_eq!(out + link_down, 16 * 200);
    assert_eq!(drops_total(&stats), link_down);
    // The event log names each forced move.
    let log = std::fs::read_to_string(dir.file("events.jsonl")).unwrap();
    let forced: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "flowlet_move")
        .collect();
    assert_eq!(forced.len(), on_u1.len());
    for e in &forced {
        assert_eq!(e["forced"], true);
        assert_eq!(e["from"], "u1 via 10.255.0.2");
        assert!(e["t_ps"].as_u64().unwrap() >= down_us * 1_000_000);
    }
}

#[test]
fn the_same_trace_gives_the_same_output_with_random_choice() {
    let flows = [0u16, 1, 2, 3].map(|i| Flow {
        id: i as u8,
        sport: 61_000 + i,
        dst: Ipv4Addr::new(10, 1, 3, 3),
    });
    let once = || {
        let dir = TestDir::new("flowlet-det");
        let stats = run(
            &dir,
            &elephants(&flows),
            "mode = \"flowlet\"\nchoice = \"random\"",
            &[],
        );
        let (bytes, round_member) = uplink_loads(&dir);
        let outputs: Vec<Vec<Vec<u8>>> = (0..UPLINKS).map(|u| uplink_out(&dir, u)).collect();
        let events = std::fs::read_to_string(dir.file("events.jsonl")).unwrap();
        (
            bytes,
            round_member,
            outputs,
            events,
            stats["groups"].clone(),
        )
    };
    let first = once();
    let second = once();
    assert!(first == second, "two replays differ");
    // Random choice did re-place flowlets (else the test shows nothing).
    assert!(
        first.1.values().collect::<BTreeSet<_>>().len() > 1,
        "flowlets used several uplinks"
    );
    assert!(u64_at(&first.4[0], "/moves") > 0);
}

#[test]
fn a_balancing_changed_by_a_scheduled_set_group_applies_from_that_instant() {
    // One flow, a 1000-byte frame every 1 us from h0; hashing until 500 us, when a scheduled
    // `set_group` makes the group spray per packet.
    const N: u64 = 1000;
    const SWITCH_AT: u64 = 500;
    let dir = TestDir::new("flowlet-set-group");
    let flow = Flow {
        id: 2,
        sport: 7777,
        dst: Ipv4Addr::new(10, 1, 8, 8),
    };
    let mut trace = Trace::new();
    for k in 0..N {
        trace.send(0, T0_US + k, frame(0, flow, 0, k as u32, FRAME_LEN, 0));
    }
    let schedule = dir.file("schedule.toml");
    std::fs::write(
        &schedule,
        format!(
            "[[event]]\nat_us = {}\nupdates = [{{ op = \"set_group\", group = \"spines\", mode = \"per-packet\" }}]\n",
            T0_US + SWITCH_AT
        ),
    )
    .unwrap();
    let stats = run(
        &dir,
        &trace,
        "",
        &["--schedule", schedule.to_str().unwrap()],
    );
    assert_eq!(drops_total(&stats), 0);
    let mut before = BTreeSet::new();
    let mut after = [0u64; UPLINKS];
    for (u, count) in after.iter_mut().enumerate() {
        for f in uplink_out(&dir, u) {
            let (_, _, seq) = identity(&f);
            if u64::from(seq) < SWITCH_AT {
                before.insert(u);
            } else {
                *count += 1;
            }
        }
    }
    assert_eq!(before.len(), 1, "hashing keeps the flow on one uplink");
    // From the switch on, each frame picks one of four uplinks: Binomial(500, 1/4) each,
    // mean 125, sd 9.7; five sd either side.
    let sd = ((N - SWITCH_AT) as f64 * 0.25 * 0.75).sqrt();
    for (u, &c) in after.iter().enumerate() {
        assert!(
            (c as f64 - (N - SWITCH_AT) as f64 / 4.0).abs() <= 5.0 * sd,
            "uplink {u} got {c} of the {} frames after the change",
            N - SWITCH_AT
        );
    }
    // The report gives the balancing the group ended with, and counters across the change:
    // every frame sprayed started a flowlet, and members' packets add up to the whole flow.
    let g = group_stats(&stats);
    assert_eq!(g["mode"], "per-packet");
    assert_eq!(u64_at(g, "/flowlets"), N - SWITCH_AT);
    let packets: u64 = g["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["packets"].as_u64().unwrap())
        .sum();
    assert_eq!(packets, N);
}

#[test]
fn per_packet_spraying_spreads_one_flow_over_every_uplink() {
    // One flow, 1000 frames of 1000 B, one every 1 us from h0 (a 100G uplink sends one in
    // 81.92 ns: nothing queues). Per-packet mode places every frame anew.
    const N: usize = 1000;
    let flow = Flow {
        id: 1,
        sport: 5555,
        dst: Ipv4Addr::new(10, 1, 7, 7),
    };
    let spray = |choice: &str| {
        let dir = TestDir::new(&format!("flowlet-spray-{choice}"));
        let mut trace = Trace::new();
        for k in 0..N {
            trace.send(
                0,
                T0_US + k as u64,
                frame(0, flow, 0, k as u32, FRAME_LEN, 0),
            );
        }
        let stats = run(
            &dir,
            &trace,
            &format!("mode = \"per-packet\"\nchoice = \"{choice}\""),
            &[],
        );
        assert_eq!(drops_total(&stats), 0);
        assert_eq!(u64_at(group_stats(&stats), "/flowlets"), N as u64);
        let counts: Vec<usize> = (0..UPLINKS).map(|u| uplink_out(&dir, u).len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), N, "every frame leaves once");
        counts
    };
    // Random: each frame picks one of four uplinks uniformly, so each count is
    // Binomial(1000, 1/4): mean 250, sd sqrt(1000 * 1/4 * 3/4) = 13.7. Five sd either side.
    let sd = (N as f64 * 0.25 * 0.75).sqrt();
    for (u, &c) in spray("random").iter().enumerate() {
        assert!(
            (c as f64 - N as f64 / 4.0).abs() <= 5.0 * sd,
            "uplink {u} got {c} of {N} frames"
        );
    }
    // Least-loaded: equal frames go to the uplink with the fewest recent bytes, so the counts
    // stay within a few frames of each other (each 1000-byte frame is more than the 256-byte
    // unit loads compare in; the decaying byte estimate is halved in whole bytes, which can
    // break a near tie either way): far tighter than random's spread of several sd.
    let counts = spray("least-loaded");
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(max - min <= 4, "least-loaded spread {counts:?}");
}

#[test]
fn avoid_ecn_keeps_new_flowlets_off_a_marking_uplink_that_least_loaded_would_pick() {
    // u1..u3 each carry about 160 KB in the 20 us before T0 (h2 and h3 at line rate, spread
    // over three single-uplink routes: no queue, but a large recent-bytes estimate). At T0, h0
    // and h1 each send 20 x 1000 B ECT(0) frames of TC 3 to u0 alone: 2:1 into u0, whose TC 3
    // queue grows by about one frame per frame time past its 2 KB Kmin (every ECT frame is
    // marked from the 4 KB Kmax on), so u0 is marking, yet
    // its load (queue + recent bytes, about 24 KB at T0 + 1 us) is far below the others'. At
    // T0 + 1 us, 12 new TC 0 flows to the group: least-loaded alone puts them all on u0;
    // with avoid_ecn none goes there.
    let single_uplink_routes: String = (1..UPLINKS)
        .map(|u| {
            format!(
                "[[route]]\nprefix = \"10.{}.0.0/16\"\nvia = \"10.255.0.{}\"\nport = \"u{u}\"\n",
                2 + u,
                2 * u
            )
        })
        .collect();
    let extra = format!(
        "{single_uplink_routes}[qos.marky]\n[qos.marky.tc.3]\necn = {{ kmin = \"2KB\", kmax = \"4KB\", pmax = 1.0 }}\n"
    );
    let ect0 = |mut f: Vec<u8>| {
        f[15] |= 0b10;
        f[24..26].copy_from_slice(&[0, 0]);
        let c = common::frames::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    };
    let mut trace = Trace::new();
    for h in 2..4 {
        for k in 0..240u32 {
            let u = 1 + (k as usize + h) % 3;
            let filler = Flow {
                id: 5,
                sport: 9 + u as u16,
                dst: Ipv4Addr::new(10, 2 + u as u8, 0, 1),
            };
            trace.send(h, T0_US - 20, frame(h, filler, 0, k, FRAME_LEN, 0));
        }
    }
    let hog = Flow {
        id: 9,
        sport: 7,
        dst: Ipv4Addr::new(10, 2, 0, 1),
    };
    for h in 0..2 {
        for k in 0..20 {
            trace.send(h, T0_US, ect0(frame(h, hog, 0, k, FRAME_LEN, 3)));
        }
    }
    for i in 0..12u16 {
        let flow = Flow {
            id: 10 + i as u8,
            sport: 40_000 + i,
            dst: Ipv4Addr::new(10, 1, 2, 2),
        };
        trace.send(2, T0_US + 1, frame(2, flow, 0, 0, 100, 0));
    }
    let place = |keys: &str, name: &str| {
        let dir = TestDir::new(name);
        trace.write(&dir);
        let (_, stats) = replay_with(&dir, &config_with(&dir, keys, &extra, Some("marky")), &[]);
        assert_eq!(drops_total(&stats), 0);
        let u0_tc3 = &stats["ports"][HOSTS]["queues"][3];
        assert!(
            u64_at(u0_tc3, "/peak_depth_bytes") >= 2_000,
            "u0 passed Kmin"
        );
        assert!(u64_at(u0_tc3, "/ecn_marked") > 0, "u0 marked");
        let mut new_flows_on = [0usize; UPLINKS];
        for (u, on) in new_flows_on.iter_mut().enumerate() {
            *on = uplink_out(&dir, u)
                .iter()
                .filter(|f| identity(f).0 >= 10)
                .count();
        }
        assert_eq!(new_flows_on.iter().sum::<usize>(), 12);
        new_flows_on
    };
    let least_loaded = "mode = \"flowlet\"\nchoice = \"least-loaded\"";
    let on = place(least_loaded, "flowlet-ecn-plain");
    assert_eq!(on[0], 12, "u0 has the least load: {on:?}");
    let on = place(
        &format!("{least_loaded}\navoid_ecn = true"),
        "flowlet-ecn-avoid",
    );
    assert_eq!(on[0], 0, "no new flowlet on the marking uplink: {on:?}");
}
