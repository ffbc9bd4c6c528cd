//! End to end: traffic classes, egress queues, line-rate shaping and ECN on pcap replay in
//! virtual time. Every expectation comes from a small event-by-event model written here from
//! DESIGN.md's replay contract (link serialisation, store-and-forward arrival, tie order,
//! depth before the arriving frame), never from a previous run.

mod common;

use common::frames::{Mac, checksum, ethernet, ipv4_udp};
use common::{TestDir, port_stats, replay_with, u64_at};
use control::pcap::PcapPacket;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

const HOST_A: Mac = [0x02, 0, 0, 0, 0, 0x0a];
const HOST_B: Mac = [0x02, 0, 0, 0, 0, 0x0b];
const HOST_C: Mac = [0x02, 0, 0, 0, 0, 0x0c];
const GBPS: u64 = 100;
/// Every input frame of a port carries this pcap time: the emulated peer then sends them
/// back to back at line rate (the link serialises them).
const START_US: u64 = 1_000_000;

const NOT_ECT: u8 = 0;
const ECT1: u8 = 1;
const ECT0: u8 = 2;
const CE: u8 = 3;

/// Wire time of a stored frame at `gbps`: padded to 60, + FCS, preamble and gap, in ps.
fn wire_ps(len: usize, gbps: u64) -> u64 {
    ((len.max(60) + 24) as u64) * 8 * 1000 / gbps
}

/// A test frame: Ethernet (to C) + IPv4/UDP with `dscp`/`ecn`, `len` bytes long, carrying its
/// input port and sequence number at payload offset 0..5.
fn frame(src: Mac, port: u8, seq: u32, len: usize, dscp: u8, ecn: u8) -> Vec<u8> {
    let mut payload = vec![0u8; len - 14 - 28];
    payload[..4].copy_from_slice(&seq.to_be_bytes());
    payload[4] = port;
    let mut ip = ipv4_udp(
        Ipv4Addr::new(10, 0, 0, 1 + port),
        Ipv4Addr::new(10, 0, 0, 100),
        64,
        1000 + u16::from(port),
        4791,
        &payload,
    );
    ip[1] = (dscp << 2) | ecn;
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ethernet(HOST_C, src, None, 0x0800, &ip)
}

/// (input port, sequence) of an output frame.
fn identity(frame: &[u8]) -> (u8, u32) {
    let p = &frame[42..];
    (p[4], u32::from_be_bytes([p[0], p[1], p[2], p[3]]))
}

fn ecn_of(frame: &[u8]) -> u8 {
    frame[15] & 3
}

/// Three access ports in VLAN 10, C pinned on p2 so p0 and p1 both send to p2.
fn config(dir: &TestDir, qos: &str) -> String {
    let mut text = format!(
        r#"[switch]
name = "qos-test"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[[vlan]]
id = 10

[[mac]]
vlan = 10
mac = "02:00:00:00:00:0c"
port = "p2"
"#,
        eal = dir.eal_toml()
    );
    for i in 0..3 {
        text.push_str(&format!(
            "\n[[port]]\nname = \"p{i}\"\ndevargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\nvlan = {{ mode = \"access\", id = 10 }}\nspeed_gbps = {GBPS}\nqos = \"test\"\n",
            dir.file(&format!("in{i}.pcap")).display(),
            dir.file(&format!("out{i}.pcap")).display()
        ));
    }
    text.push('\n');
    text.push_str(qos);
    text
}

/// One input frame as the model sees it.
#[derive(Debug, Clone)]
struct Input {
    port: u8,
    seq: u32,
    len: usize,
    tc: usize,
    ecn: u8,
    data: Vec<u8>,
}

/// What the model says happened to one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Queued { marked: bool },
    Dropped,
}

#[derive(Debug, Clone)]
struct Arrival {
    at: u64,
    input: Input,
    depth_before: u64,
    fate: Fate,
}

/// DESIGN.md's replay contract for one egress port of `GBPS`: arrivals at
/// max(stamp, link free) + wire time, merged by (time, port); completions before arrivals
/// before choices at the same instant; `admit(depth_before, input)` decides each arrival.
/// The scheduler serves `priority` (highest first), FIFO within a TC.
struct Model {
    arrivals: Vec<Arrival>,
    /// Output order (indices into `arrivals`), with each frame's transmission start.
    sent: Vec<(usize, u64)>,
    peak_depth: [u64; 8],
}

fn model(
    inputs: &[Vec<Input>],
    priority: &[usize],
    mut admit: impl FnMut(u64, &Input) -> Fate,
) -> Model {
    // Arrival times per input link, then the merge.
    let mut timed: Vec<(u64, u8, Input)> = Vec::new();
    for frames in inputs {
        let mut link_free = 0;
        for f in frames {
            let at = (START_US * 1_000_000).max(link_free) + wire_ps(f.len, GBPS);
            link_free = at;
            timed.push((at, f.port, f.clone()));
        }
    }
    timed.sort_by_key(|(at, port, _)| (*at, *port));

    let mut arrivals: Vec<Arrival> = Vec::new();
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); 8];
    let mut depth = [0u64; 8];
    let mut peak_depth = [0u64; 8];
    let mut in_flight: Option<(usize, u64)> = None;
    let mut free_at = 0u64;
    let mut sent = Vec::new();
    // Runs the port until `until`: completions at or before it, choices before it (at it too
    // when `inclusive`).
    let mut run = |until: u64,
                   inclusive: bool,
                   arrivals: &Vec<Arrival>,
                   queues: &mut Vec<VecDeque<usize>>,
                   depth: &mut [u64; 8],
                   sent: &mut Vec<(usize, u64)>| loop {
        if let Some((i, end)) = in_flight {
            if end > until {
                return;
            }
            depth[arrivals[i].input.tc] -= arrivals[i].input.len as u64;
            free_at = end;
            in_flight = None;
            continue;
        }
        let Some(first) = queues.iter().flatten().map(|&i| arrivals[i].at).min() else {
            return;
        };
        let t = free_at.max(first);
        if t > until || (t == until && !inclusive) {
            return;
        }
        let tc = *priority
            .iter()
            .find(|&&tc| queues[tc].front().is_some_and(|&i| arrivals[i].at <= t))
            .expect("a frame has arrived by t");
        let i = queues[tc].pop_front().expect("non-empty");
        in_flight = Some((i, t + wire_ps(arrivals[i].input.len, GBPS)));
        sent.push((i, t));
    };
    for (at, _, input) in timed {
        run(at, false, &arrivals, &mut queues, &mut depth, &mut sent);
        let depth_before = depth[input.tc];
        let fate = admit(depth_before, &input);
        let index = arrivals.len();
        if let Fate::Queued { .. } = fate {
            depth[input.tc] += input.len as u64;
            peak_depth[input.tc] = peak_depth[input.tc].max(depth[input.tc]);
            queues[input.tc].push_back(index);
        }
        arrivals.push(Arrival {
            at,
            input,
            depth_before,
            fate,
        });
    }
    run(
        u64::MAX,
        true,
        &arrivals,
        &mut queues,
        &mut depth,
        &mut sent,
    );
    Model {
        arrivals,
        sent,
        peak_depth,
    }
}

/// Writes the inputs as pcaps (every frame stamped START_US) and an empty p2 input.
fn write_inputs(dir: &TestDir, inputs: &[Vec<Input>]) {
    for (port, frames) in inputs.iter().enumerate() {
        let packets: Vec<PcapPacket> = frames
            .iter()
            .map(|f| PcapPacket {
                timestamp_ns: START_US * 1000,
                data: f.data.clone(),
            })
            .collect();
        dir.write_pcap(&format!("in{port}.pcap"), &packets);
    }
    dir.write_pcap("in2.pcap", &[]);
}

/// N frames on each of p0 and p1, all for p2. `ecn(port, seq)` picks each frame's codepoint.
fn incast(
    frames: u32,
    len: usize,
    dscp: u8,
    tc: usize,
    ecn: impl Fn(u8, u32) -> u8,
) -> Vec<Vec<Input>> {
    (0..2u8)
        .map(|port| {
            let src = if port == 0 { HOST_A } else { HOST_B };
            (0..frames)
                .map(|seq| {
                    let e = ecn(port, seq);
                    Input {
                        port,
                        seq,
                        len,
                        tc,
                        ecn: e,
                        data: frame(src, port, seq, len, dscp, e),
                    }
                })
                .collect()
        })
        .collect()
}

fn events(dir: &TestDir) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.file("events.jsonl"))
        .expect("event log written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// The time the model's depth of `tc` first reaches `mark` (the arrival that does it).
fn first_reaching(model: &Model, mark: u64) -> Option<&Arrival> {
    model.arrivals.iter().find(|a| {
        matches!(a.fate, Fate::Queued { .. })
            && a.depth_before < mark
            && a.depth_before + a.input.len as u64 >= mark
    })
}

fn run_replay(dir: &TestDir, config_text: &str) -> serde_json::Value {
    let events = dir.file("events.jsonl");
    let (_, stats) = replay_with(dir, config_text, &["--events", events.to_str().unwrap()]);
    stats
}

#[test]
fn incast_2_to_1_grows_the_queue_as_modelled_and_a_step_marker_marks_from_kmin() {
    let kmin: u64 = 20_000;
    let qos = format!(
        "[qos.test]\ntrust = \"dscp\"\n[qos.test.tc.0]\necn = {{ kmin = {kmin}, kmax = {kmin} }}\nwatermarks = [\"10KB\", \"20KB\", \"40KB\"]\n"
    );
    // ECT(0), ECT(1) and Not-ECT mixed on both ports; Not-ECT of a lossy class at or above
    // Kmin is dropped (a step marker's probability is 1 there).
    let inputs = incast(300, 500, 0, 0, |port, seq| {
        match (seq + u32::from(port)) % 5 {
            0 => NOT_ECT,
            1 | 2 => ECT1,
            _ => ECT0,
        }
    });
    let m = model(&inputs, &[0], |depth, input| {
        if depth < kmin {
            Fate::Queued { marked: false }
        } else if input.ecn == NOT_ECT {
            Fate::Dropped
        } else {
            Fate::Queued { marked: true }
        }
    });
    let marked: Vec<&Arrival> = m
        .arrivals
        .iter()
        .filter(|a| a.fate == Fate::Queued { marked: true })
        .collect();
    let dropped = m
        .arrivals
        .iter()
        .filter(|a| a.fate == Fate::Dropped)
        .count() as u64;
    assert!(
        !marked.is_empty() && dropped > 0,
        "the trace must reach Kmin"
    );
    // Sanity of the model itself: at 2:1 the queue grows by about one frame per frame time.
    let w = wire_ps(500, GBPS);
    let a = first_reaching(&m, kmin).expect("reaches kmin");
    let frame_times = (a.at - START_US * 1_000_000) / w;
    assert!(
        (frame_times as i64 - (kmin / 500) as i64).abs() <= 2,
        "{frame_times}"
    );

    let dir = TestDir::new("qos-step");
    write_inputs(&dir, &inputs);
    let stats = run_replay(&dir, &config(&dir, &qos));

    let out = dir.read_pcap("out2.pcap");
    let got: Vec<(u8, u32)> = out.iter().map(|p| identity(&p.data)).collect();
    let want: Vec<(u8, u32)> = m
        .sent
        .iter()
        .map(|&(i, _)| (m.arrivals[i].input.port, m.arrivals[i].input.seq))
        .collect();
    assert_eq!(got, want, "output order is the model's");
    for (packet, &(i, _)) in out.iter().zip(&m.sent) {
        let arrival = &m.arrivals[i];
        let expected_ecn = match arrival.fate {
            Fate::Queued { marked: true } => CE,
            _ => arrival.input.ecn,
        };
        assert_eq!(
            ecn_of(&packet.data),
            expected_ecn,
            "frame {:?} found depth {}",
            identity(&packet.data),
            arrival.depth_before
        );
        assert_eq!(
            checksum(&packet.data[14..34]),
            0,
            "IPv4 header checksum verifies"
        );
        let mut unmarked = packet.data.clone();
        unmarked[15] = (unmarked[15] & !3) | arrival.input.ecn;
        unmarked[24..26].copy_from_slice(&arrival.input.data[24..26]);
        assert_eq!(
            unmarked, arrival.input.data,
            "only the ECN bits and checksum change"
        );
    }
    assert!(
        marked.iter().all(|a| a.input.ecn != NOT_ECT),
        "Not-ECT is never marked"
    );

    // Counters agree with the model and the files.
    let q = &port_stats(&stats, "p2")["queues"][0];
    assert_eq!(u64_at(q, "/enqueued_packets"), m.sent.len() as u64);
    assert_eq!(u64_at(q, "/dequeued_packets"), m.sent.len() as u64);
    assert_eq!(u64_at(q, "/ecn_marked"), marked.len() as u64);
    assert_eq!(u64_at(q, "/dropped_packets"), dropped);
    assert_eq!(u64_at(q, "/peak_depth_bytes"), m.peak_depth[0]);
    assert_eq!(u64_at(q, "/depth_bytes"), 0, "everything drained");
    assert_eq!(u64_at(&stats, "/drops/red_drop"), dropped);
    let rx = u64_at(port_stats(&stats, "p0"), "/rx_packets")
        + u64_at(port_stats(&stats, "p1"), "/rx_packets");
    assert_eq!(rx, 600);
    assert_eq!(rx, out.len() as u64 + dropped, "conservation");

    // The event log: crossings at the instants the model reaches each watermark.
    let log = events(&dir);
    let first_mark = marked[0];
    let onset = log
        .iter()
        .find(|e| e["event"] == "ecn_marking_start")
        .expect("marking onset logged");
    assert_eq!(onset["port"], "p2");
    assert_eq!(onset["tc"], 0);
    assert_eq!(u64_at(onset, "/t_ps"), first_mark.at);
    for mark in [10_000u64, 20_000, 40_000] {
        let up = log
            .iter()
            .find(|e| e["event"] == "watermark_up" && e["threshold_bytes"] == mark)
            .unwrap_or_else(|| panic!("watermark {mark} crossing logged"));
        let a = first_reaching(&m, mark).expect("the model reaches it");
        assert_eq!(u64_at(up, "/t_ps"), a.at, "watermark {mark}");
        assert_eq!(u64_at(up, "/depth_bytes"), a.depth_before + 500);
    }

    // Determinism: the same trace and config give the same outputs and log.
    let again = TestDir::new("qos-step-again");
    write_inputs(&again, &inputs);
    let stats_again = run_replay(&again, &config(&again, &qos));
    let out_again = again.read_pcap("out2.pcap");
    assert_eq!(
        out.iter().map(|p| &p.data).collect::<Vec<_>>(),
        out_again.iter().map(|p| &p.data).collect::<Vec<_>>()
    );
    assert_eq!(log, events(&again));
    assert_eq!(stats["drops"], stats_again["drops"]);
}

#[test]
fn red_band_marks_by_probability_everything_above_kmax_and_never_not_ect() {
    let (kmin, kmax, pmax) = (10_000u64, 40_000u64, 0.5f64);
    // TC 3 (DSCP 3) is lossless: its Not-ECT frames are admitted, never marked. PFC thresholds
    // far above what the trace holds keep the peers from pausing (tests/pfc.rs covers that).
    let qos = format!(
        "[qos.test]\nlossless = [3]\n[qos.test.tc.3]\necn = {{ kmin = {kmin}, kmax = {kmax}, pmax = {pmax} }}\npfc = {{ xoff = \"10MB\", xon = \"9MB\", headroom = \"1MB\" }}\n"
    );
    let inputs = incast(400, 400, 3, 3, |port, seq| {
        if (seq + u32::from(port)) % 4 == 0 {
            NOT_ECT
        } else {
            ECT0
        }
    });
    // Marking does not change depth, so the depth each frame finds is fixed by the model.
    let m = model(&inputs, &[3], |_, _| Fate::Queued { marked: false });
    let dir = TestDir::new("qos-red");
    write_inputs(&dir, &inputs);
    let stats = run_replay(&dir, &config(&dir, &qos));
    let out = dir.read_pcap("out2.pcap");
    assert_eq!(out.len(), 800, "lossless: nothing dropped");
    let mut expected = 0.0;
    let mut band_marks = 0u64;
    let mut total_marks = 0u64;
    for (packet, &(i, _)) in out.iter().zip(&m.sent) {
        let a = &m.arrivals[i];
        assert_eq!(identity(&packet.data), (a.input.port, a.input.seq));
        let got = ecn_of(&packet.data);
        total_marks += u64::from(got == CE);
        if a.input.ecn == NOT_ECT {
            assert_eq!(got, NOT_ECT, "Not-ECT never marked");
        } else if a.depth_before < kmin {
            assert_eq!(got, ECT0, "no mark below kmin (depth {})", a.depth_before);
        } else if a.depth_before >= kmax {
            assert_eq!(
                got, CE,
                "all ECT marked at or above kmax (depth {})",
                a.depth_before
            );
        } else {
            expected += pmax * (a.depth_before - kmin) as f64 / (kmax - kmin) as f64;
            band_marks += u64::from(got == CE);
        }
        assert_eq!(checksum(&packet.data[14..34]), 0);
    }
    // A sum of independent Bernoulli draws: variance <= mean.
    assert!(expected > 20.0, "the band must see traffic ({expected})");
    assert!(
        (band_marks as f64 - expected).abs() < 5.0 * expected.sqrt(),
        "{band_marks} marks in the band, {expected:.1} expected"
    );
    let q = &port_stats(&stats, "p2")["queues"][3];
    assert_eq!(u64_at(q, "/ecn_marked"), total_marks);
    assert_eq!(u64_at(q, "/dropped_packets"), 0);
    assert_eq!(u64_at(q, "/peak_depth_bytes"), m.peak_depth[3]);
    // Ingress accounting: each input port held its share, all released at the end.
    for port in ["p0", "p1"] {
        let q = &port_stats(&stats, port)["queues"][3];
        assert!(u64_at(q, "/peak_ingress_bytes") > 0);
        assert_eq!(u64_at(q, "/ingress_bytes"), 0);
    }
}

#[test]
fn strict_priority_drains_the_high_class_first_under_congestion() {
    let qos = "[qos.test]\n[qos.test.tc.6]\nsched = \"strict\"\n";
    // p0 sends TC0 (DSCP 0), p1 sends TC6 (DSCP 48, CS6), both at line rate into p2.
    let mut inputs = incast(200, 300, 0, 0, |_, _| NOT_ECT);
    inputs[1] = (0..200)
        .map(|seq| Input {
            port: 1,
            seq,
            len: 300,
            tc: 6,
            ecn: NOT_ECT,
            data: frame(HOST_B, 1, seq, 300, 48, NOT_ECT),
        })
        .collect();
    let m = model(&inputs, &[6, 0], |_, _| Fate::Queued { marked: false });
    let dir = TestDir::new("qos-strict");
    write_inputs(&dir, &inputs);
    let stats = run_replay(&dir, &config(&dir, qos));
    let got: Vec<(u8, u32)> = dir
        .read_pcap("out2.pcap")
        .iter()
        .map(|p| identity(&p.data))
        .collect();
    let want: Vec<(u8, u32)> = m
        .sent
        .iter()
        .map(|&(i, _)| (m.arrivals[i].input.port, m.arrivals[i].input.seq))
        .collect();
    assert_eq!(got, want);
    // Equal frames at line rate on both inputs: at every choice a TC6 frame has just arrived
    // (arrivals precede choices at an instant), so all of TC6 leaves before any TC0.
    assert!(got[..200].iter().all(|&(p, _)| p == 1), "{:?}", &got[..4]);
    assert!(got[200..].iter().all(|&(p, _)| p == 0));
    assert_eq!(
        u64_at(&port_stats(&stats, "p2")["queues"][6], "/dequeued_packets"),
        200
    );
}

#[test]
fn dwrr_shares_the_port_by_weight_over_a_long_trace() {
    let qos = "[qos.test]\ndscp_to_tc = { 10 = 1, 20 = 2 }\n[qos.test.tc.1]\nweight = 1000\n[qos.test.tc.2]\nweight = 3000\n";
    let mut inputs = vec![Vec::new(), Vec::new()];
    for seq in 0..400 {
        inputs[0].push(Input {
            port: 0,
            seq,
            len: 1500,
            tc: 1,
            ecn: NOT_ECT,
            data: frame(HOST_A, 0, seq, 1500, 10, NOT_ECT),
        });
    }
    for seq in 0..1163 {
        inputs[1].push(Input {
            port: 1,
            seq,
            len: 500,
            tc: 2,
            ecn: NOT_ECT,
            data: frame(HOST_B, 1, seq, 500, 20, NOT_ECT),
        });
    }
    let dir = TestDir::new("qos-dwrr");
    write_inputs(&dir, &inputs);
    run_replay(&dir, &config(&dir, qos));
    let out = dir.read_pcap("out2.pcap");
    assert_eq!(out.len(), 1563, "nothing dropped");
    // Both queues stay backlogged while both inputs send (each input alone fills the port),
    // i.e. for about the first half of the output bytes: measure the first 40%.
    let total: usize = out.iter().map(|p| p.data.len()).sum();
    let mut bytes = [0usize; 2];
    let mut seen = 0;
    for p in &out {
        if seen + p.data.len() > total * 4 / 10 {
            break;
        }
        seen += p.data.len();
        bytes[usize::from(identity(&p.data).0)] += p.data.len();
    }
    let share = bytes[1] as f64 / (bytes[0] + bytes[1]) as f64;
    assert!(
        (share - 0.75).abs() < 0.03,
        "TC2 got {share:.3} of the bytes, weight says 0.75"
    );
    // Within each class the order is the arrival order.
    for port in 0..2u8 {
        let seqs: Vec<u32> = out
            .iter()
            .map(|p| identity(&p.data))
            .filter(|i| i.0 == port)
            .map(|i| i.1)
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn lossy_overflow_tail_drops_exactly_what_exceeds_the_limit_and_conserves() {
    let limit: u64 = 15_000;
    let qos = format!("[qos.test]\n[qos.test.tc.0]\nqueue_limit = {limit}\n");
    let inputs = incast(250, 700, 0, 0, |_, _| ECT0);
    let m = model(&inputs, &[0], |depth, input| {
        if depth + input.len as u64 > limit {
            Fate::Dropped
        } else {
            Fate::Queued { marked: false }
        }
    });
    let dropped = m
        .arrivals
        .iter()
        .filter(|a| a.fate == Fate::Dropped)
        .count() as u64;
    assert!(dropped > 100);
    let dir = TestDir::new("qos-tail");
    write_inputs(&dir, &inputs);
    let stats = run_replay(&dir, &config(&dir, &qos));
    let got: Vec<(u8, u32)> = dir
        .read_pcap("out2.pcap")
        .iter()
        .map(|p| identity(&p.data))
        .collect();
    let want: Vec<(u8, u32)> = m
        .sent
        .iter()
        .map(|&(i, _)| (m.arrivals[i].input.port, m.arrivals[i].input.seq))
        .collect();
    assert_eq!(got, want, "exactly the model's survivors, in its order");
    assert_eq!(u64_at(&stats, "/drops/queue_full"), dropped);
    let q = &port_stats(&stats, "p2")["queues"][0];
    assert_eq!(u64_at(q, "/dropped_packets"), dropped);
    assert!(u64_at(q, "/peak_depth_bytes") <= limit);
    assert_eq!(500, got.len() as u64 + dropped, "received = sent + dropped");
    assert_eq!(
        u64_at(port_stats(&stats, "p2"), "/tx_packets"),
        got.len() as u64
    );
}
