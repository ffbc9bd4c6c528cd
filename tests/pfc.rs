//! End to end: PFC on pcap replay in virtual time. Expectations come from an event-by-event
//! model written here from DESIGN.md's replay contract and REFERENCE.md section 1 (XOFF at
//! the threshold, XON below XON, the emulated peer stopping a peer delay later, a frame already
//! started completing), never from a previous run.

mod common;

use common::frames::{Mac, checksum, ethernet, ipv4_udp};
use common::{TestDir, port_stats, replay_with, u64_at};
use control::pcap::PcapPacket;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

const HOST_C: Mac = [0x02, 0, 0, 0, 0, 0x0c];
const GBPS: u64 = 100;
const START_US: u64 = 1_000_000;
const START_PS: u64 = START_US * 1_000_000;
const LEN: usize = 1000;
const CABLE_M: u64 = 20;
/// TC 3 from DSCP 3 (the default map).
const DSCP: u8 = 3;

fn wire_ps(len: usize) -> u64 {
    ((len.max(60) + 24) as u64) * 8 * 1000 / GBPS
}

/// REFERENCE.md 1.2: the cable round trip at 1.98e8 m/s plus the peer's response, 394 quanta
/// of 512 bit times at 100G.
fn peer_delay_ps() -> u64 {
    2 * CABLE_M * 1_000_000_000_000 / 198_000_000 + 394 * 512 * 1000 / GBPS
}

/// An XOFF pauses for 0xFFFF quanta.
fn xoff_pause_ps() -> u64 {
    0xffff * 512 * 1000 / GBPS
}

fn data_frame(port: u8, seq: u32, dscp: u8) -> Vec<u8> {
    let mut payload = vec![0u8; LEN - 14 - 28];
    payload[..4].copy_from_slice(&seq.to_be_bytes());
    payload[4] = port;
    let mut ip = ipv4_udp(
        Ipv4Addr::new(10, 0, 0, 1 + port),
        Ipv4Addr::new(10, 0, 0, 100),
        64,
        1000,
        4791,
        &payload,
    );
    ip[1] = (dscp << 2) | 2;
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ethernet(HOST_C, [0x02, 0, 0, 0, 1, port + 1], None, 0x0800, &ip)
}

/// A PFC frame built here from the 802.1Qbb layout (REFERENCE.md 1.1).
fn pfc_frame(src: Mac, enable: u8, quanta: [u16; 8]) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0x08, 0x01, 0x01, 0x00, enable]);
    for q in quanta {
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

fn identity(frame: &[u8]) -> (u8, u32) {
    let p = &frame[42..];
    (p[4], u32::from_be_bytes([p[0], p[1], p[2], p[3]]))
}

fn parse_mac(text: &str) -> Mac {
    let bytes: Vec<u8> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).expect("hex"))
        .collect();
    bytes.try_into().expect("six bytes")
}

/// `inputs` ports in VLAN 10 sending to C on the last port.
fn config(dir: &TestDir, inputs: usize, qos: &str) -> String {
    let mut text = format!(
        "[switch]\nname = \"pfc-test\"\nrouter_mac = \"02:00:00:00:01:00\"\n\n[dataplane]\nmode = \"switch\"\nworker_lcores = [1]\n{eal}\n\n[[vlan]]\nid = 10\n\n[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0c\"\nport = \"p{inputs}\"\n",
        eal = dir.eal_toml()
    );
    for i in 0..=inputs {
        text.push_str(&format!(
            "\n[[port]]\nname = \"p{i}\"\ndevargs = \"net_pcap{i},rx_pcap={},tx_pcap={}\"\nvlan = {{ mode = \"access\", id = 10 }}\nspeed_gbps = {GBPS}\ncable_m = {CABLE_M}\nqos = \"test\"\n",
            dir.file(&format!("in{i}.pcap")).display(),
            dir.file(&format!("out{i}.pcap")).display()
        ));
    }
    text.push('\n');
    text.push_str(qos);
    text
}

fn write_inputs(dir: &TestDir, per_port: &[Vec<PcapPacket>]) {
    for (i, packets) in per_port.iter().enumerate() {
        dir.write_pcap(&format!("in{i}.pcap"), packets);
    }
}

fn events(dir: &TestDir) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.file("events.jsonl"))
        .expect("event log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn run(dir: &TestDir, text: &str) -> (common::RunOutput, serde_json::Value) {
    let events = dir.file("events.jsonl");
    replay_with(dir, text, &["--events", events.to_str().unwrap()])
}

/// What the model predicts for an N:1 incast of equal frames in one lossless TC.
#[derive(Debug, Default)]
struct Incast {
    /// (time, port, ingress bytes, true = XOFF / false = XON)
    pfc: Vec<(u64, usize, u64, bool)>,
    /// Output order.
    sent: Vec<(usize, u32)>,
    headroom_drops: u64,
    peak_ingress: Vec<u64>,
}

/// The replay contract for `frames[i]` frames of LEN bytes on input i (all stamped START),
/// one egress FIFO at line rate, XOFF at `xoff`, XON below `xon`, drops beyond xoff + headroom.
fn model_incast(frames: &[u32], xoff: u64, xon: u64, headroom: u64) -> Incast {
    let n = frames.len();
    let w = wire_ps(LEN);
    let d = peer_delay_ps();
    let mut out = Incast {
        peak_ingress: vec![0; n],
        ..Default::default()
    };
    let mut next_seq = vec![0u32; n];
    let mut link_free = vec![0u64; n];
    let mut pause = vec![(0u64, 0u64); n]; // (from, until) at the peer
    let mut ingress = vec![0u64; n];
    let mut xoff_on = vec![false; n];
    let mut fifo: VecDeque<(usize, u32, u64)> = VecDeque::new(); // (port, seq, arrival)
    let mut in_flight: Option<(usize, u64)> = None; // (port, end)
    let mut free_at = 0u64;
    loop {
        let next_arrival = (0..n)
            .filter(|&p| next_seq[p] < frames[p])
            .map(|p| {
                let mut start = START_PS.max(link_free[p]);
                if pause[p].0 <= start && start < pause[p].1 {
                    start = pause[p].1;
                }
                (start + w, p)
            })
            .min();
        let arrival_at = next_arrival.map_or(u64::MAX, |a| a.0);
        if let Some((port, end)) = in_flight {
            if end <= arrival_at {
                // Completion (before an arrival at the same instant).
                in_flight = None;
                free_at = end;
                ingress[port] -= LEN as u64;
                if xoff_on[port] && ingress[port] < xon {
                    xoff_on[port] = false;
                    out.pfc.push((end, port, ingress[port], false));
                    let resume = end + d;
                    pause[port].1 = pause[port].1.min(resume.max(pause[port].0));
                }
                continue;
            }
        } else if let Some(&(_, _, first)) = fifo.front() {
            let t = free_at.max(first);
            if t < arrival_at {
                let (port, seq, _) = fifo.pop_front().unwrap();
                out.sent.push((port, seq));
                in_flight = Some((port, t + w));
                continue;
            }
        }
        let Some((at, port)) = next_arrival else {
            if in_flight.is_none() && fifo.is_empty() {
                break;
            }
            // Only egress work is left: run it without an arrival bound.
            if let Some(&(_, _, first)) = fifo.front()
                && in_flight.is_none()
            {
                let (p, seq, _) = fifo.pop_front().unwrap();
                let t = free_at.max(first);
                out.sent.push((p, seq));
                in_flight = Some((p, t + w));
            }
            continue;
        };
        let seq = next_seq[port];
        next_seq[port] += 1;
        link_free[port] = at;
        if ingress[port] + LEN as u64 > xoff + headroom {
            out.headroom_drops += 1;
            continue;
        }
        ingress[port] += LEN as u64;
        out.peak_ingress[port] = out.peak_ingress[port].max(ingress[port]);
        fifo.push_back((port, seq, at));
        if !xoff_on[port] && ingress[port] >= xoff {
            xoff_on[port] = true;
            out.pfc.push((at, port, ingress[port], true));
            let effective = at + d;
            let running = pause[port].0 <= effective && effective < pause[port].1;
            if !running {
                pause[port].0 = effective;
            }
            pause[port].1 = effective + xoff_pause_ps();
        }
    }
    out
}

fn qos_profile(xoff: u64, xon: u64, headroom: u64) -> String {
    format!(
        "[qos.test]\nlossless = [3]\npfc_watchdog = {{ enabled = false }}\n[qos.test.tc.3]\npfc = {{ xoff = {xoff}, xon = {xon}, headroom = {headroom} }}\n"
    )
}

fn incast_inputs(frames: &[u32]) -> Vec<Vec<PcapPacket>> {
    let mut inputs: Vec<Vec<PcapPacket>> = frames
        .iter()
        .enumerate()
        .map(|(port, &count)| {
            (0..count)
                .map(|seq| PcapPacket {
                    timestamp_ns: START_US * 1000,
                    data: data_frame(port as u8, seq, DSCP),
                })
                .collect()
        })
        .collect();
    inputs.push(Vec::new());
    inputs
}

/// Runs an incast and checks it against the model: output order, PFC frames on each input's
/// port (content and count), XOFF/XON instants and occupancies in the event log, no drops
/// unless the model has headroom drops.
fn check_incast(name: &str, frames: &[u32], xoff: u64, xon: u64, headroom: u64) -> Incast {
    let model = model_incast(frames, xoff, xon, headroom);
    let n = frames.len();
    let dir = TestDir::new(name);
    write_inputs(&dir, &incast_inputs(frames));
    let (out, stats) = run(&dir, &config(&dir, n, &qos_profile(xoff, xon, headroom)));

    let got: Vec<(usize, u32)> = dir
        .read_pcap(&format!("out{n}.pcap"))
        .iter()
        .map(|p| {
            let (port, seq) = identity(&p.data);
            (usize::from(port), seq)
        })
        .collect();
    assert_eq!(got, model.sent, "output order");

    let log = events(&dir);
    let logged: Vec<(u64, usize, u64, bool)> = log
        .iter()
        .filter(|e| e["event"] == "pfc_xoff_sent" || e["event"] == "pfc_xon_sent")
        .map(|e| {
            let port: usize = e["port"].as_str().unwrap()[1..].parse().unwrap();
            (
                u64_at(e, "/t_ps"),
                port,
                u64_at(e, "/ingress_bytes"),
                e["event"] == "pfc_xoff_sent",
            )
        })
        .collect();
    assert_eq!(logged, model.pfc, "XOFF/XON instants and occupancies");

    for port in 0..n {
        let name = format!("p{port}");
        let mac = parse_mac(port_stats(&stats, &name)["mac"].as_str().unwrap());
        let sent: Vec<Vec<u8>> = dir
            .read_pcap(&format!("out{port}.pcap"))
            .into_iter()
            .map(|p| p.data)
            .collect();
        let want: Vec<Vec<u8>> = model
            .pfc
            .iter()
            .filter(|e| e.1 == port)
            .map(|e| {
                let mut quanta = [0u16; 8];
                quanta[3] = if e.3 { 0xffff } else { 0 };
                pfc_frame(mac, 1 << 3, quanta)
            })
            .collect();
        assert_eq!(sent, want, "PFC frames out of {name}");
        let q = &port_stats(&stats, &name)["queues"][3];
        let xoffs = model.pfc.iter().filter(|e| e.1 == port && e.3).count() as u64;
        assert_eq!(u64_at(q, "/xoff_transitions"), xoffs);
        assert_eq!(u64_at(q, "/peak_ingress_bytes"), model.peak_ingress[port]);
    }
    let headroom_drops = stats["drops"]["headroom_full"].as_u64().unwrap_or(0);
    assert_eq!(headroom_drops, model.headroom_drops);
    if model.headroom_drops > 0 {
        assert!(
            out.stderr.contains("PFC headroom full"),
            "warned: {}",
            out.stderr
        );
    }
    let total: u64 = frames.iter().map(|&f| u64::from(f)).sum();
    assert_eq!(got.len() as u64 + headroom_drops, total, "conservation");
    model
}

#[test]
fn lossless_2_to_1_incast_pauses_only_the_port_over_xoff_and_loses_nothing() {
    let model = check_incast("pfc-2to1", &[300, 30], 20_000, 10_000, 60_000);
    let paused: Vec<usize> = model.pfc.iter().filter(|e| e.3).map(|e| e.1).collect();
    assert!(
        !paused.is_empty() && paused.iter().all(|&p| p == 0),
        "{paused:?}"
    );
    assert_eq!(model.headroom_drops, 0);
    assert_eq!(model.sent.len(), 330, "every input packet comes out");
    assert!(model.pfc.last().is_some_and(|e| !e.3), "XON follows");
}

#[test]
fn lossless_4_to_1_incast_pauses_every_port_and_loses_nothing() {
    let model = check_incast("pfc-4to1", &[120, 120, 120, 120], 16_000, 8_000, 60_000);
    for port in 0..4 {
        assert!(
            model.pfc.iter().any(|e| e.1 == port && e.3),
            "port {port} paused"
        );
        assert!(
            model
                .pfc
                .iter()
                .rev()
                .find(|e| e.1 == port)
                .is_some_and(|e| !e.3)
        );
    }
    assert_eq!(model.headroom_drops, 0);
    // The whole incast is shorter than half a pause: no refresh is due (the model has none).
    let last = model.pfc.last().unwrap().0;
    assert!(last - START_PS < xoff_pause_ps() / 2);
}

#[test]
fn too_little_headroom_for_the_cable_drops_lossless_frames_and_warns() {
    // The peer delay at 20 m is about 2.2 us, ~26 frames of 1000 bytes; 8 KB of headroom
    // cannot hold them.
    let model = check_incast("pfc-headroom", &[200, 200], 10_000, 5_000, 8_000);
    assert!(model.headroom_drops > 0);
    // check-config says so before any run: 8000 B is less than one frame of the largest size
    // the port may carry (no mtu: 9100 B), which is dropped once the bytes held pass
    // xoff + headroom - 9100 = xoff - 1100.
    let dir = TestDir::new("pfc-headroom-check");
    let path = dir.file("check.toml");
    std::fs::write(&path, config(&dir, 2, &qos_profile(10_000, 5_000, 8_000))).unwrap();
    let out = common::run_ironclos(
        &["check-config", path.to_str().unwrap()],
        std::time::Duration::from_secs(30),
    );
    out.assert_success();
    assert!(
        out.stdout.contains(
            "warning: port p0 TC 3: PFC headroom 8000 B is less than one 9100-byte frame \
             (no mtu: 9100 assumed): a frame that size is dropped (headroom_full) once the \
             ingress bytes pass xoff - 1100 B"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn the_same_incast_on_a_lossy_tc_sends_no_pfc_and_tail_drops() {
    let frames = [200u32, 200];
    let dir = TestDir::new("pfc-lossy");
    write_inputs(&dir, &incast_inputs(&frames));
    let limit = 30_000;
    let qos = format!("[qos.test]\n[qos.test.tc.3]\nqueue_limit = {limit}\n");
    let (_, stats) = run(&dir, &config(&dir, 2, &qos));
    for port in 0..2 {
        assert!(
            dir.read_pcap(&format!("out{port}.pcap")).is_empty(),
            "no PFC"
        );
    }
    // Tail drops as the QoS model says: depth before + frame > limit.
    let w = wire_ps(LEN);
    let mut depth_ends: VecDeque<u64> = VecDeque::new();
    let mut last_end = 0u64;
    let mut drops = 0u64;
    for k in 1..=200u64 {
        let at = START_PS + k * w;
        for _ in 0..2 {
            while depth_ends.front().is_some_and(|&e| e <= at) {
                depth_ends.pop_front();
            }
            if (depth_ends.len() as u64 + 1) * LEN as u64 > limit {
                drops += 1;
            } else {
                let start = last_end.max(at);
                last_end = start + w;
                depth_ends.push_back(last_end);
            }
        }
    }
    assert!(drops > 0);
    assert_eq!(u64_at(&stats, "/drops/queue_full"), drops);
    let out = dir.read_pcap("out2.pcap").len() as u64;
    assert_eq!(out + drops, 400, "conservation");
}

/// p0 sends TC3 and TC0 frames to p2; p2's peer (its input) pauses TC3.
fn received_pause_run(name: &str, pauses: &[(u64, u16)]) -> (Vec<(u8, u32)>, serde_json::Value) {
    let dir = TestDir::new(name);
    let mut p0 = Vec::new();
    for seq in 0..10u32 {
        let dscp = if seq % 2 == 0 { DSCP } else { 0 };
        p0.push(PcapPacket {
            timestamp_ns: (START_US + 5) * 1000,
            data: data_frame(0, seq, dscp),
        });
    }
    let p2: Vec<PcapPacket> = pauses
        .iter()
        .map(|&(at_us, q)| {
            let mut quanta = [0u16; 8];
            quanta[3] = q;
            PcapPacket {
                timestamp_ns: at_us * 1000,
                data: pfc_frame([0x02, 0, 0, 0, 9, 9], 1 << 3, quanta),
            }
        })
        .collect();
    write_inputs(&dir, &[p0, Vec::new(), p2]);
    let qos = "[qos.test]\nlossless = [3]\npfc_watchdog = { enabled = false }\n";
    let (_, stats) = run(&dir, &config(&dir, 2, qos));
    let got = dir
        .read_pcap("out2.pcap")
        .iter()
        .map(|p| identity(&p.data))
        .collect();
    (got, stats)
}

#[test]
fn a_received_pause_holds_exactly_that_tc_for_its_duration() {
    // A pause of 60000 quanta (307.2 us at 100G) received at START: TC0 frames (odd seq) pass,
    // TC3 frames (even seq) wait, in order.
    let (got, stats) = received_pause_run("pfc-rx", &[(START_US, 60_000)]);
    let tc0: Vec<(u8, u32)> = (0..10).filter(|s| s % 2 == 1).map(|s| (0, s)).collect();
    let tc3: Vec<(u8, u32)> = (0..10).filter(|s| s % 2 == 0).map(|s| (0, s)).collect();
    assert_eq!(got, [tc0, tc3].concat());
    let q = &port_stats(&stats, "p2")["queues"][3];
    // The PFC frame arrives (store and forward) one minimum frame time after START.
    assert_eq!(u64_at(q, "/paused_ps"), 60_000 * 512 * 1000 / GBPS);
    assert_eq!(u64_at(q, "/pfc_rx_frames"), 1);
    assert_eq!(
        u64_at(&stats, "/drops/mac_control"),
        1,
        "consumed, never forwarded"
    );
    assert!(port_stats(&stats, "p0")["queues"][0]["pfc_rx_frames"] == 0);
}

#[test]
fn quanta_zero_resumes_early_and_a_refresh_extends() {
    // Pause at START for 60000 quanta, refreshed at +100 us, resumed at +250 us: paused for
    // exactly 250 us (+ the same arrival offset on both frames, which cancels).
    let (got, stats) = received_pause_run(
        "pfc-rx-refresh",
        &[
            (START_US, 60_000),
            (START_US + 100, 60_000),
            (START_US + 250, 0),
        ],
    );
    assert_eq!(got.len(), 10);
    let q = &port_stats(&stats, "p2")["queues"][3];
    assert_eq!(u64_at(q, "/paused_ps"), 250 * 1_000_000);
    assert_eq!(u64_at(q, "/pfc_rx_frames"), 3);
}

#[test]
fn a_pause_storm_trips_the_watchdog_which_drops_then_restores() {
    let dir = TestDir::new("pfc-storm");
    // p2's peer pauses TC3 every 100 us from START to START + 5 ms.
    let last_pause_us = START_US + 5000;
    let p2: Vec<PcapPacket> = (START_US..=last_pause_us)
        .step_by(100)
        .map(|at| {
            let mut quanta = [0u16; 8];
            quanta[3] = 0xffff;
            PcapPacket {
                timestamp_ns: at * 1000,
                data: pfc_frame([0x02, 0, 0, 0, 9, 9], 1 << 3, quanta),
            }
        })
        .collect();
    // p0 sends TC3 frames at START + 0.5 ms (queued, paused), + 2 ms (during the storm) and
    // + 8 ms (after restoration at last pause + 2 ms).
    let mut p0 = Vec::new();
    for (i, at) in [START_US + 500, START_US + 2000, START_US + 8000]
        .iter()
        .enumerate()
    {
        for k in 0..5u32 {
            p0.push(PcapPacket {
                timestamp_ns: at * 1000,
                data: data_frame(0, i as u32 * 10 + k, DSCP),
            });
        }
    }
    write_inputs(&dir, &[p0, Vec::new(), p2]);
    let qos = "[qos.test]\nlossless = [3]\npfc_watchdog = { action = \"drop\", detection_ms = 1, restoration_ms = 2 }\n";
    let (_, stats) = run(&dir, &config(&dir, 2, qos));
    let got: Vec<(u8, u32)> = dir
        .read_pcap("out2.pcap")
        .iter()
        .map(|p| identity(&p.data))
        .collect();
    assert_eq!(
        got,
        (20..25).map(|s| (0, s)).collect::<Vec<_>>(),
        "only the frames after restoration"
    );
    assert_eq!(u64_at(&stats, "/drops/pfc_watchdog"), 10);
    let q = &port_stats(&stats, "p2")["queues"][3];
    assert_eq!(u64_at(q, "/watchdog_storms"), 1);
    assert_eq!(u64_at(q, "/watchdog_restorations"), 1);
    let log = events(&dir);
    let at = |kind: &str| {
        log.iter()
            .find(|e| e["event"] == kind)
            .map(|e| u64_at(e, "/t_ps"))
            .unwrap_or_else(|| panic!("{kind} logged"))
    };
    // Each pause frame arrives one minimum-frame wire time after its stamp.
    let frame_time = wire_ps(60);
    assert_eq!(
        at("pfc_watchdog_storm"),
        START_PS + frame_time + 1_000_000_000
    );
    assert_eq!(
        at("pfc_watchdog_restored"),
        last_pause_us * 1_000_000 + frame_time + 2_000_000_000
    );
}
