//! Traffic-manager tests against the rules of DESIGN.md, with expectations computed here from
//! those rules (depth before an arrival, line-rate serialisation), never from a previous run.

use super::*;
use crate::qos::ecn::{CE, ECT0, ECT1, NOT_ECT};
use crate::qos::{EcnProfile, PortQos, PortSpeed, Sched};
use crate::wire::checksum;

/// An Ethernet + IPv4 frame of `len` bytes with the given ECN codepoint; byte 40 tags it.
fn frame(len: usize, ecn: u8, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[15] = ecn;
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    let csum = !checksum::sum(&f[14..34]);
    f[24..26].copy_from_slice(&csum.to_be_bytes());
    f[40] = tag;
    f
}

fn spec(ports: usize, tune: impl Fn(&mut PortQos)) -> QosSpec {
    let mut spec = QosSpec::new(ports);
    for port in &mut spec.ports {
        tune(port);
    }
    spec.events = true;
    spec
}

fn tm(spec: &QosSpec) -> TrafficManager<Vec<u8>> {
    TrafficManager::new(spec, 4096, Arc::new(TmCounters::new(spec.ports.len())))
}

fn enqueue(
    tm: &mut TrafficManager<Vec<u8>>,
    now: Picos,
    egress: u16,
    tc: u8,
    ingress: u16,
    f: Vec<u8>,
) -> Admission {
    tm.enqueue(now, egress, tc, ingress, f, |f| f.as_mut_slice())
}

/// (time, ingress port, egress depth before the frame, what happened to it).
type Arrival = (Picos, u16, u64, Admission);

/// Two 100G ingress ports each deliver back-to-back frames into one 100G egress port (2:1
/// incast). Returns, per arrival, (time, ingress, depth before it, admission), and what left.
fn incast(
    tm: &mut TrafficManager<Vec<u8>>,
    frames_per_port: usize,
    len: usize,
    ecn: u8,
    tc: u8,
) -> (Vec<Arrival>, Vec<(u16, Vec<u8>)>) {
    let w = PortSpeed::Gbps(100).wire_time(len as u32);
    let mut arrivals = Vec::new();
    let mut sent = Vec::new();
    for k in 1..=frames_per_port as u64 {
        let at = k * w;
        tm.advance(at, false, |p, f| sent.push((p, f)));
        for ingress in [0u16, 1] {
            let before = tm.depth(2, tc);
            let tag = (k as u8).wrapping_mul(2).wrapping_add(ingress as u8);
            let outcome = enqueue(tm, at, 2, tc, ingress, frame(len, ecn, tag));
            arrivals.push((at, ingress, before, outcome));
        }
    }
    tm.drain(|p, f| sent.push((p, f)));
    (arrivals, sent)
}

#[test]
fn incast_queue_grows_by_one_frame_per_frame_time() {
    let spec = spec(3, |_| {});
    let mut tm = tm(&spec);
    let len = 1000;
    let (arrivals, sent) = incast(&mut tm, 50, len, NOT_ECT, 0);
    // The egress port starts at the first arrival and stays busy: by arrival instant k (k >= 1)
    // it has finished k - 1 frames, while 2(k - 1) have arrived before. So the first frame of
    // instant k finds (k - 1) frames queued, the second k.
    for (i, &(at, ingress, before, outcome)) in arrivals.iter().enumerate() {
        let k = (i / 2) as u64 + 1;
        assert_eq!(at, k * PortSpeed::Gbps(100).wire_time(len as u32));
        let frames = k - 1 + u64::from(ingress);
        assert_eq!(before, frames * len as u64, "arrival {i}");
        assert_eq!(outcome, Admission::Queued { marked: false });
    }
    assert_eq!(sent.len(), 100, "everything drains at the end");
    assert!(sent.iter().all(|(p, _)| *p == 2));
    // FIFO within the TC: arrival order.
    let tags: Vec<u8> = sent.iter().map(|(_, f)| f[40]).collect();
    let want: Vec<u8> = (1..=50u8).flat_map(|k| [k * 2, k * 2 + 1]).collect();
    assert_eq!(tags, want);
    let c = &tm.counters().queues[2][0];
    assert_eq!(c.enqueued_packets(), 100);
    assert_eq!(c.dequeued_packets(), 100);
    assert_eq!(c.depth_bytes.get(), 0);
    assert_eq!(
        c.peak_depth_bytes.get(),
        51 * len as u64,
        "50 queued + the one arriving"
    );
    assert_eq!(tm.ingress_depth(0, 0), 0);
    // Port 0 has sent k frames by instant k, and the egress port, alternating 0, 1, 0, ...,
    // has finished ceil((k - 1) / 2) of them.
    let peak_ingress = (1..=50u64).map(|k| k - (k - 1).div_ceil(2)).max().unwrap();
    assert_eq!(
        tm.counters().queues[0][0].peak_ingress_bytes.get(),
        peak_ingress * len as u64
    );
    assert!(!tm.is_busy());
}

#[test]
fn step_marker_marks_exactly_the_ect_frames_that_find_kmin_or_more() {
    let kmin = 10_000;
    let spec = spec(3, |p| {
        p.tcs[3].ecn = Some(EcnProfile {
            kmin,
            kmax: kmin,
            pmax: 1.0,
        });
    });
    for ecn in [ECT0, ECT1] {
        let mut tm = tm(&spec);
        let (arrivals, sent) = incast(&mut tm, 40, 500, ecn, 3);
        let mut expected_marks = 0;
        for &(_, _, before, outcome) in &arrivals {
            let want = before >= kmin;
            expected_marks += u64::from(want);
            assert_eq!(
                outcome,
                Admission::Queued { marked: want },
                "depth {before}"
            );
        }
        assert!(expected_marks > 0 && expected_marks < arrivals.len() as u64);
        let marked_out = sent.iter().filter(|(_, f)| f[15] & 3 == CE).count() as u64;
        assert_eq!(marked_out, expected_marks);
        for (_, f) in &sent {
            assert_eq!(
                checksum::sum(&f[14..34]),
                0xffff,
                "IPv4 checksum stays valid"
            );
        }
        assert_eq!(tm.counters().queues[2][3].ecn_marked.get(), expected_marks);
    }
}

#[test]
fn not_ect_is_never_marked_red_dropped_when_lossy_and_admitted_when_lossless() {
    let profile = EcnProfile {
        kmin: 2_000,
        kmax: 6_000,
        pmax: 0.5,
    };
    let lossy = spec(3, |p| p.tcs[0].ecn = Some(profile));
    let mut tm_lossy = tm(&lossy);
    let (arrivals, sent) = incast(&mut tm_lossy, 60, 500, NOT_ECT, 0);
    let mut red = 0;
    for &(_, _, before, outcome) in &arrivals {
        match outcome {
            Admission::Queued { marked } => assert!(!marked),
            Admission::Dropped(reason) => {
                assert_eq!(reason, DropReason::RedDrop);
                assert!(before > profile.kmin, "no drop below kmin (depth {before})");
                red += 1;
            }
        }
        if before >= profile.kmax {
            assert_eq!(
                outcome,
                Admission::Dropped(DropReason::RedDrop),
                "all dropped at kmax"
            );
        }
    }
    assert!(red > 0);
    assert!(sent.iter().all(|(_, f)| f[15] & 3 == NOT_ECT));
    assert_eq!(sent.len() + red, arrivals.len(), "conservation");

    let lossless = spec(3, |p| {
        p.tcs[0].ecn = Some(profile);
        p.lossless = 1;
    });
    let mut tm_lossless = tm(&lossless);
    let (arrivals, sent) = incast(&mut tm_lossless, 60, 500, NOT_ECT, 0);
    assert!(
        arrivals
            .iter()
            .all(|a| a.3 == Admission::Queued { marked: false })
    );
    assert_eq!(sent.len(), arrivals.len());
}

#[test]
fn red_marking_between_kmin_and_kmax_follows_the_curve() {
    // Hold the depth fixed inside the band (egress port never transmits: time stands still)
    // and count marks over many arrivals at that depth.
    let profile = EcnProfile {
        kmin: 0,
        kmax: 2_000_000,
        pmax: 0.4,
    };
    let spec = spec(2, |p| {
        p.tcs[0].ecn = Some(profile);
        p.tcs[0].queue_limit = u64::MAX;
    });
    let mut tm = tm(&spec);
    let mut marked = 0u64;
    let mut expected = 0.0;
    let n = 3000;
    for _ in 0..n {
        let before = tm.depth(1, 0);
        expected += 0.4 * before as f64 / 2_000_000.0;
        if enqueue(&mut tm, 0, 1, 0, 0, frame(600, ECT0, 0)) == (Admission::Queued { marked: true })
        {
            marked += 1;
        }
    }
    // Sum of independent Bernoulli trials: variance <= expected.
    let sd = expected.sqrt();
    assert!(
        (marked as f64 - expected).abs() < 5.0 * sd,
        "marked {marked}, expected {expected}"
    );
}

#[test]
fn lossy_tail_drop_counts_and_conserves() {
    let limit = 5_000;
    let spec = spec(3, |p| p.tcs[0].queue_limit = limit);
    let mut tm = tm(&spec);
    let (arrivals, sent) = incast(&mut tm, 40, 1000, ECT0, 0);
    let mut drops = 0;
    for &(_, _, before, outcome) in &arrivals {
        if before + 1000 > limit {
            assert_eq!(outcome, Admission::Dropped(DropReason::QueueFull));
            drops += 1;
        } else {
            assert_eq!(outcome, Admission::Queued { marked: false });
        }
    }
    assert!(drops > 0);
    assert_eq!(sent.len() + drops, arrivals.len());
    let c = &tm.counters().queues[2][0];
    assert_eq!(c.dropped_packets.get(), drops as u64);
    assert_eq!(c.enqueued_packets(), sent.len() as u64);
    assert!(c.peak_depth_bytes.get() <= limit);
}

#[test]
fn lossless_ignores_the_queue_limit_but_not_the_shared_buffer() {
    let mut spec = spec(3, |p| {
        p.tcs[3].queue_limit = 1000;
        p.lossless = 1 << 3;
    });
    spec.buffer_bytes = 20_000;
    let mut tm = tm(&spec);
    let (arrivals, sent) = incast(&mut tm, 40, 1000, NOT_ECT, 3);
    for &(_, _, before, outcome) in &arrivals {
        if before + 1000 > 20_000 {
            assert_eq!(outcome, Admission::Dropped(DropReason::BufferFull));
        } else {
            assert_eq!(outcome, Admission::Queued { marked: false });
        }
    }
    assert!(sent.len() > 20 && sent.len() < 80);
}

#[test]
fn completion_at_an_instant_comes_before_an_arrival_at_it() {
    let spec = spec(2, |p| {
        p.tcs[0].ecn = Some(EcnProfile {
            kmin: 1,
            kmax: 1,
            pmax: 1.0,
        })
    });
    let mut tm = tm(&spec);
    let w = PortSpeed::Gbps(100).wire_time(100);
    let mut sent = Vec::new();
    assert_eq!(
        enqueue(&mut tm, 0, 1, 0, 0, frame(100, ECT0, 1)),
        Admission::Queued { marked: false }
    );
    tm.advance(w, false, |p, f| sent.push((p, f)));
    assert_eq!(sent.len(), 1, "chosen at 0");
    // The first frame's last bit leaves at w, so a frame arriving at w finds an empty queue.
    assert_eq!(tm.depth(1, 0), 0);
    assert_eq!(
        enqueue(&mut tm, w, 1, 0, 0, frame(100, ECT0, 2)),
        Admission::Queued { marked: false }
    );
    // Its choice waits until nothing more can arrive at w.
    assert_eq!(sent.len(), 1);
    assert_eq!(
        enqueue(&mut tm, w, 1, 0, 0, frame(100, ECT0, 3)),
        Admission::Queued { marked: true }
    );
    tm.advance(w, true, |p, f| sent.push((p, f)));
    assert_eq!(sent.len(), 2);
    assert_eq!(tm.next_event(), Some(2 * w));
}

#[test]
fn strict_priority_drains_the_high_tc_first_under_congestion() {
    let spec = spec(2, |p| p.tcs[6].sched = Sched::Strict);
    let mut tm = tm(&spec);
    for i in 0..10 {
        enqueue(&mut tm, 0, 1, 0, 0, frame(200, 0, i));
        enqueue(&mut tm, 0, 1, 6, 0, frame(200, 0, 100 + i));
    }
    let mut order = Vec::new();
    tm.drain(|_, f| order.push(f[40]));
    let want: Vec<u8> = (100..110).chain(0..10).collect();
    assert_eq!(order, want);
}

#[test]
fn dwrr_shares_the_port_by_weight_over_a_long_backlog() {
    let spec = spec(2, |p| {
        p.tcs[1].sched = Sched::Dwrr { weight: 1000 };
        p.tcs[2].sched = Sched::Dwrr { weight: 3000 };
    });
    let mut tm = tm(&spec);
    let mut bytes = [0u64; 3];
    // Keep both queues backlogged; count bytes sent in the first 2000 transmissions.
    for i in 0..1000 {
        enqueue(&mut tm, 0, 1, 1, 0, frame(300, 0, (i % 200) as u8));
        enqueue(&mut tm, 0, 1, 2, 0, frame(1400, 0, 1));
    }
    let mut sent = 0;
    let mut now = 0;
    while sent < 1000 {
        now += PortSpeed::Gbps(100).wire_time(64);
        tm.advance(now, true, |_, f| {
            bytes[if f.len() == 300 { 1 } else { 2 }] += f.len() as u64;
            sent += 1;
        });
    }
    let share = bytes[2] as f64 / (bytes[1] + bytes[2]) as f64;
    assert!((share - 0.75).abs() < 0.02, "share {share}");
}

#[test]
fn unlimited_speed_sends_in_arrival_order_at_once() {
    let spec = spec(2, |p| p.speed = PortSpeed::Unlimited);
    let mut tm = tm(&spec);
    for i in 0..5 {
        enqueue(&mut tm, 7, 1, 0, 0, frame(64, 0, i));
    }
    let mut order = Vec::new();
    tm.advance(7, true, |_, f| order.push(f[40]));
    assert_eq!(order, vec![0, 1, 2, 3, 4]);
    assert!(!tm.is_busy());
    assert_eq!(tm.depth(1, 0), 0);
}

#[test]
fn events_record_watermarks_and_marking_onset_once_per_episode() {
    let spec = spec(2, |p| {
        p.tcs[0].ecn = Some(EcnProfile {
            kmin: 3000,
            kmax: 3000,
            pmax: 1.0,
        });
        p.tcs[0].watermarks = vec![6000, 3000];
    });
    let mut tm = tm(&spec);
    // Ten 1000-byte frames at once: the depth rises monotonically, then drains one frame time
    // at a time, so each threshold is crossed exactly once each way.
    for i in 0..10 {
        enqueue(&mut tm, 0, 1, 0, 0, frame(1000, ECT0, i));
    }
    tm.drain(|_, _| {});
    let w = PortSpeed::Gbps(100).wire_time(1000);
    let got: Vec<(Picos, QosEventKind, u64)> = tm
        .take_events()
        .iter()
        .map(|e| (e.at, e.kind, e.depth))
        .collect();
    assert_eq!(
        got,
        vec![
            // The third frame brings the depth to 3000; the fourth finds 3000 >= Kmin.
            (0, QosEventKind::WatermarkUp(3000), 3000),
            (0, QosEventKind::EcnMarkingStart, 4000),
            (0, QosEventKind::WatermarkUp(6000), 6000),
            // The n-th completion (at n * w) leaves 10000 - 1000 n bytes.
            (5 * w, QosEventKind::WatermarkDown(6000), 5000),
            (8 * w, QosEventKind::EcnMarkingStop, 2000),
            (8 * w, QosEventKind::WatermarkDown(3000), 2000),
        ]
    );
}

#[test]
fn flushing_a_down_port_drops_what_it_queued() {
    let spec = spec(2, |_| {});
    let mut tm = tm(&spec);
    for i in 0..4 {
        enqueue(&mut tm, 0, 1, 0, 0, frame(100, 0, i));
    }
    let mut sent = 0;
    tm.advance(0, true, |_, _| sent += 1);
    assert_eq!(sent, 1);
    assert_eq!(tm.flush_port(0, 1), 3);
    tm.drain(|_, _| sent += 1);
    assert_eq!(sent, 1);
    let c = &tm.counters().queues[1][0];
    assert_eq!(c.dropped_packets.get(), 3);
    assert_eq!(c.dequeued_packets(), 1);
    assert_eq!(tm.held_frames(), 0);
    assert_eq!(tm.depth(1, 0), 0);
}

#[test]
fn frames_from_the_cpu_are_lossy_and_accounted_apart() {
    let spec = spec(2, |p| {
        p.lossless = 1;
        p.tcs[0].queue_limit = 100;
    });
    let mut tm = tm(&spec);
    assert_eq!(
        enqueue(&mut tm, 0, 1, 0, CPU_PORT, frame(80, 0, 1)),
        Admission::Queued { marked: false }
    );
    assert_eq!(
        enqueue(&mut tm, 0, 1, 0, CPU_PORT, frame(80, 0, 2)),
        Admission::Dropped(DropReason::QueueFull),
        "the CPU's TC 0 is lossy even where port TC 0 is lossless"
    );
    assert_eq!(
        enqueue(&mut tm, 0, 1, 0, 0, frame(80, 0, 3)),
        Admission::Queued { marked: false }
    );
    assert_eq!(tm.ingress_depth(CPU_PORT, 0), 80);
    assert_eq!(tm.ingress_depth(0, 0), 80);
    assert_eq!(tm.ingress_depth(1, 0), 0);
    tm.drain(|_, _| {});
    assert_eq!(tm.ingress_depth(CPU_PORT, 0), 0);
}

// ---- PFC ----

use crate::qos::pfc::{self as pfc_frame, MacControl, PfcThresholds};
use crate::qos::{WatchdogAction, WatchdogSpec};

fn lossless_spec(ports: usize, xoff: u64, xon: u64, headroom: u64) -> QosSpec {
    spec(ports, |p| {
        p.lossless = 1 << 3;
        p.pfc[3] = Some(PfcThresholds {
            xoff,
            xon,
            headroom,
        });
    })
}

fn frames(tm: &mut TrafficManager<Vec<u8>>) -> Vec<PfcFrame> {
    let mut out = Vec::new();
    tm.take_pfc_frames(|f| out.push(*f));
    out
}

#[test]
fn xoff_at_the_threshold_then_xon_below_xon_in_one_tc() {
    let spec = lossless_spec(2, 5_000, 2_000, 20_000);
    let mut tm = tm(&spec);
    let w = PortSpeed::Gbps(100).wire_time(1000);
    // Ten 1000-byte frames from port 0 at time 0: the fifth brings port 0's TC3 occupancy to
    // 5000 = XOFF.
    for i in 0..10 {
        assert_eq!(
            enqueue(&mut tm, 0, 1, 3, 0, frame(1000, 0, i)),
            Admission::Queued { marked: false }
        );
        let want = if i >= 4 { 1 << 3 } else { 0 };
        assert_eq!(tm.xoff_state(0), want, "after frame {i}");
    }
    let sent = frames(&mut tm);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].at, 0);
    assert_eq!(sent[0].port, 0, "out of the ingress port");
    assert_eq!(sent[0].enable, 1 << 3);
    assert_eq!(sent[0].quanta[3], 0xffff);
    // The n-th completion (at n * w) leaves 10000 - 1000 n bytes; below 2000 after the 9th.
    tm.advance(9 * w - 1, true, |_, _| {});
    assert!(frames(&mut tm).is_empty());
    tm.advance(9 * w, false, |_, _| {});
    let sent = frames(&mut tm);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].at, sent[0].enable, sent[0].quanta[3]),
        (9 * w, 1 << 3, 0)
    );
    assert_eq!(tm.xoff_state(0), 0);
    let c = &tm.counters().queues[0][3];
    assert_eq!(
        (
            c.xoff_transitions.get(),
            c.xon_transitions.get(),
            c.pfc_tx_frames.get()
        ),
        (1, 1, 2)
    );
}

#[test]
fn xoff_is_refreshed_at_half_the_pause_while_above_xon() {
    let spec = lossless_spec(2, 1_000, 500, 1 << 30);
    let mut tm = tm(&spec);
    // Slow the drain: 3000 frames of 1500 bytes keep port 0 above XON for ~0.37 ms at 100G.
    for i in 0..3000 {
        enqueue(&mut tm, 0, 1, 3, 0, frame(1500, 0, i as u8));
    }
    let half = pfc_frame::pause_time(0xffff, PortSpeed::Gbps(100)) / 2;
    tm.drain(|_, _| {});
    let sent = frames(&mut tm);
    let xoffs: Vec<Picos> = sent
        .iter()
        .filter(|f| f.quanta[3] == 0xffff)
        .map(|f| f.at)
        .collect();
    let drained_at = 3000 * PortSpeed::Gbps(100).wire_time(1500);
    let refreshes = (drained_at - 1) / half; // refreshes strictly before XON, roughly
    assert_eq!(xoffs[0], 0);
    for (k, at) in xoffs.iter().enumerate() {
        assert_eq!(*at, k as u64 * half, "refresh {k}");
    }
    assert!(
        xoffs.len() as u64 >= refreshes,
        "{} xoffs, {refreshes} refreshes",
        xoffs.len()
    );
    assert_eq!(sent.last().unwrap().quanta[3], 0, "ends with XON");
}

#[test]
fn tcs_crossing_at_one_instant_share_one_frame() {
    let spec = spec(2, |p| {
        p.lossless = (1 << 3) | (1 << 4);
        p.pfc[3] = Some(PfcThresholds {
            xoff: 100,
            xon: 50,
            headroom: 10_000,
        });
        p.pfc[4] = Some(PfcThresholds {
            xoff: 100,
            xon: 50,
            headroom: 10_000,
        });
    });
    let mut tm = tm(&spec);
    enqueue(&mut tm, 5, 1, 3, 0, frame(200, 0, 1));
    enqueue(&mut tm, 5, 1, 4, 0, frame(200, 0, 2));
    let sent = frames(&mut tm);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].enable, (1 << 3) | (1 << 4));
    assert_eq!((sent[0].quanta[3], sent[0].quanta[4]), (0xffff, 0xffff));
}

#[test]
fn headroom_overflow_drops_only_beyond_xoff_plus_headroom() {
    let spec = lossless_spec(2, 2_000, 1_000, 3_000);
    let mut tm = tm(&spec);
    let mut outcomes = Vec::new();
    for i in 0..8 {
        outcomes.push(enqueue(&mut tm, 0, 1, 3, 0, frame(1000, 0, i)));
    }
    // 5000 = XOFF + headroom holds five frames; the sixth would exceed it.
    assert!(
        outcomes[..5]
            .iter()
            .all(|o| *o == Admission::Queued { marked: false })
    );
    assert!(
        outcomes[5..]
            .iter()
            .all(|o| *o == Admission::Dropped(DropReason::HeadroomFull))
    );
    assert_eq!(tm.counters().queues[0][3].headroom_drops.get(), 3);
}

#[test]
fn a_received_pause_holds_exactly_its_tc_for_the_pause_time() {
    let spec = spec(2, |_| {});
    let mut tm = tm(&spec);
    let mut quanta = [0u16; 8];
    quanta[3] = 1000;
    tm.receive_mac_control(
        0,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    let hold = pfc_frame::pause_time(1000, PortSpeed::Gbps(100));
    assert_eq!(hold, 5_120_000);
    enqueue(&mut tm, 0, 1, 3, 0, frame(100, 0, 3));
    enqueue(&mut tm, 0, 1, 0, 0, frame(100, 0, 0));
    let mut sent = Vec::new();
    tm.drain(|_, f| sent.push(f[40]));
    assert_eq!(sent, vec![0, 3], "TC0 goes first; TC3 waits for the pause");
    let events = tm.take_events();
    assert!(
        events
            .iter()
            .any(|e| e.kind == QosEventKind::PfcReceived(1000))
    );
    assert_eq!(tm.counters().queues[1][3].paused_ps.get(), hold);
    assert_eq!(tm.counters().queues[1][3].pfc_rx_frames.get(), 1);

    // Timing: TC3's frame starts exactly when the pause ends.
    let mut tm = super::TrafficManager::<Vec<u8>>::new(&spec, 64, Arc::new(TmCounters::new(2)));
    tm.receive_mac_control(
        0,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    enqueue(&mut tm, 0, 1, 3, 0, frame(100, 0, 3));
    let mut starts = Vec::new();
    tm.advance(hold - 1, true, |_, _| starts.push(()));
    assert!(starts.is_empty());
    tm.advance(hold, true, |_, _| starts.push(()));
    assert_eq!(starts.len(), 1);

    // Quanta 0 resumes early; a refresh extends.
    let mut tm = super::TrafficManager::<Vec<u8>>::new(&spec, 64, Arc::new(TmCounters::new(2)));
    tm.receive_mac_control(
        0,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    enqueue(&mut tm, 0, 1, 3, 0, frame(100, 0, 3));
    tm.receive_mac_control(
        hold / 2,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    let mut sent = 0;
    tm.advance(hold, true, |_, _| sent += 1);
    assert_eq!(
        sent, 0,
        "the refresh at hold/2 extends the pause to 1.5 hold"
    );
    tm.receive_mac_control(
        hold + 10,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta: [0; 8],
        },
    );
    tm.advance(hold + 10, true, |_, _| sent += 1);
    assert_eq!(sent, 1, "quanta 0 resumes at once");
    assert_eq!(tm.counters().queues[1][3].paused_ps.get(), hold + 10);
}

#[test]
fn pause_8023x_holds_every_tc() {
    let spec = spec(2, |_| {});
    let mut tm = tm(&spec);
    tm.receive_mac_control(0, 1, MacControl::Pause { quanta: 100 });
    for tc in 0..8 {
        enqueue(&mut tm, 0, 1, tc, 0, frame(100, 0, tc));
    }
    let hold = pfc_frame::pause_time(100, PortSpeed::Gbps(100));
    let mut sent = 0;
    tm.advance(hold - 1, true, |_, _| sent += 1);
    assert_eq!(sent, 0);
    tm.drain(|_, _| sent += 1);
    assert_eq!(sent, 8);
}

#[test]
fn watchdog_storm_drops_the_queue_stops_pausing_upstream_and_restores() {
    let ms = crate::clock::PICOS_PER_MICRO * 1000;
    let mut spec = spec(2, |p| {
        p.lossless = 1 << 3;
        p.pfc[3] = Some(PfcThresholds {
            xoff: 1_000,
            xon: 500,
            headroom: 1 << 20,
        });
        p.watchdog = Some(WatchdogSpec {
            detection: ms,
            restoration: 2 * ms,
            action: WatchdogAction::Drop,
        });
    });
    spec.events = true;
    let mut tm = tm(&spec);
    // Port 1's peer pauses TC3 forever (a refresh every 100 us) until 3 ms.
    let mut quanta = [0u16; 8];
    quanta[3] = 0xffff;
    let step = 100 * crate::clock::PICOS_PER_MICRO;
    // Traffic arriving on port 1 in TC3 and stuck behind the pause (hairpinned into port 1's
    // own TC3 queue) makes port 1 pause its peer (XOFF) and keeps it above XON.
    for i in 0..4 {
        enqueue(&mut tm, 0, 1, 3, 1, frame(500, 0, i));
    }
    // And traffic for port 1's paused TC3 queue from port 0.
    for i in 0..4 {
        enqueue(&mut tm, 0, 1, 3, 0, frame(500, 0, 10 + i));
    }
    assert_eq!(tm.xoff_state(1), 1 << 3, "port 1 pauses its peer");
    let mut t = 0;
    let mut sent_on_1 = 0;
    while t <= 3 * ms {
        tm.advance(t, false, |p, _| sent_on_1 += u32::from(p == 1));
        tm.receive_mac_control(
            t,
            1,
            MacControl::Pfc {
                enable: 1 << 3,
                quanta,
            },
        );
        t += step;
    }
    assert_eq!(
        tm.storm_state(1),
        1 << 3,
        "storm after 1 ms of continuous pause"
    );
    let storm_at = tm
        .take_events()
        .iter()
        .find(|e| e.kind == QosEventKind::WatchdogStorm)
        .map(|e| e.at)
        .expect("storm logged");
    assert_eq!(storm_at, ms);
    assert_eq!(sent_on_1, 0, "nothing left through the paused queue");
    assert_eq!(tm.depth(1, 3), 0, "the drop action emptied the queue");
    let mut tally = 0;
    tm.take_drop_tally(|r, n| {
        assert_eq!(r, DropReason::PfcWatchdog);
        tally += n;
    });
    assert_eq!(tally, 8);
    assert_eq!(
        enqueue(&mut tm, 3 * ms, 1, 3, 0, frame(500, 0, 20)),
        Admission::Dropped(DropReason::PfcWatchdog),
        "new frames for the storming queue drop"
    );
    assert_eq!(
        enqueue(&mut tm, 3 * ms, 0, 3, 1, frame(500, 0, 21)),
        Admission::Dropped(DropReason::PfcWatchdog),
        "and so do frames arriving on the storming port in that TC"
    );
    let frames_sent = frames(&mut tm);
    let xon = frames_sent
        .iter()
        .find(|f| f.port == 1 && f.quanta[3] == 0)
        .expect("XON to the peer");
    assert_eq!(xon.at, ms, "stops pausing upstream when the storm starts");
    // The last pause arrived at 3 ms: restored at 3 ms + 2 ms.
    tm.advance(5 * ms - 1, true, |_, _| {});
    assert_eq!(tm.storm_state(1), 1 << 3);
    tm.advance(5 * ms, true, |_, _| {});
    assert_eq!(tm.storm_state(1), 0);
    let c = &tm.counters().queues[1][3];
    assert_eq!(
        (c.watchdog_storms.get(), c.watchdog_restorations.get()),
        (1, 1)
    );
}

#[test]
fn a_pause_holds_frames_that_arrive_after_it_one_by_one() {
    let spec = spec(3, |p| p.lossless = 1 << 3);
    let mut tm = tm(&spec);
    let mut quanta = [0u16; 8];
    quanta[3] = 60_000;
    tm.receive_mac_control(
        6_720,
        2,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    let w = PortSpeed::Gbps(100).wire_time(1000);
    let mut sent = Vec::new();
    for k in 0..10u64 {
        let at = 5_000_000 + (k + 1) * w;
        tm.advance(at, false, |_, f| sent.push(f[40]));
        let tc = if k % 2 == 0 { 3 } else { 0 };
        enqueue(&mut tm, at, 2, tc, 0, frame(1000, 0, k as u8));
    }
    tm.drain(|_, f| sent.push(f[40]));
    assert_eq!(sent, vec![1, 3, 5, 7, 9, 0, 2, 4, 6, 8]);
}

#[test]
fn immediate_mode_commits_up_to_the_horizon_then_queues() {
    // 10G: a 100-byte frame takes 124 * 800 = 99200 ps; frame i starts at i * w and goes to
    // the TX ring while its start is within COMMIT_HORIZON of now. Frames in the ring have
    // left the buffer; only the queued ones count in the depth.
    let spec = spec(2, |p| p.speed = PortSpeed::Gbps(10));
    let mut tm = tm(&spec);
    tm.set_immediate(true);
    let w = PortSpeed::Gbps(10).wire_time(100);
    let horizon = super::COMMIT_HORIZON;
    // Frames whose start k * w is at most `until` + horizon, of 20.
    let committed_by = |until: u64| (((until + horizon) / w + 1) as usize).min(20);
    assert_eq!(committed_by(0), 11);
    let mut sent = Vec::new();
    for i in 0..20u8 {
        let outcome = tm.enqueue_or_send(
            0,
            1,
            0,
            0,
            frame(100, 0, i),
            |f| f.as_mut_slice(),
            |_, f| sent.push(f[40]),
        );
        assert_eq!(outcome, Admission::Queued { marked: false });
    }
    assert_eq!(
        sent,
        (0..committed_by(0) as u8).collect::<Vec<_>>(),
        "handed to the TX ring at once"
    );
    assert_eq!(tm.depth(1, 0), 100 * (20 - committed_by(0) as u64));
    // As time passes the ring takes queued frames, in order, one frame time each.
    let until = 2 * w - 1;
    tm.advance(until, true, |_, f| sent.push(f[40]));
    assert_eq!(sent.len(), committed_by(until));
    assert_eq!(tm.depth(1, 0), 100 * (20 - committed_by(until) as u64));
    tm.drain(|_, f| sent.push(f[40]));
    assert_eq!(sent, (0..20).collect::<Vec<_>>(), "in order");
    let c = &tm.counters().queues[1][0];
    assert_eq!((c.enqueued_packets(), c.dequeued_packets()), (20, 20));
    assert_eq!(tm.depth(1, 0), 0);
    // A new frame long after: the port is idle again and it goes at once.
    tm.enqueue_or_send(
        1_000 * w,
        1,
        0,
        0,
        frame(100, 0, 99),
        |f| f.as_mut_slice(),
        |_, f| sent.push(f[40]),
    );
    assert_eq!(sent.last(), Some(&99));
}

#[test]
fn live_mode_holds_a_paused_tc_in_its_queue_until_the_pause_ends() {
    let spec = spec(2, |_| {});
    let mut tm = tm(&spec);
    tm.set_immediate(true);
    let mut quanta = [0u16; 8];
    quanta[3] = 1000;
    tm.receive_mac_control(
        0,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    let hold = pfc_frame::pause_time(1000, PortSpeed::Gbps(100));
    let mut sent = Vec::new();
    for (tc, tag) in [(3u8, 3u8), (0, 0)] {
        tm.enqueue_or_send(
            0,
            1,
            tc,
            0,
            frame(100, 0, tag),
            |f| f.as_mut_slice(),
            |_, f| sent.push(f[40]),
        );
    }
    assert_eq!(sent, vec![0], "TC0 goes to the ring at once; TC3 is paused");
    assert_eq!(
        tm.depth(1, 3),
        100,
        "the paused frame counts while it waits"
    );
    tm.advance(hold - 1, true, |_, f| sent.push(f[40]));
    assert_eq!(sent, vec![0]);
    tm.advance(hold, true, |_, f| sent.push(f[40]));
    assert_eq!(sent, vec![0, 3], "TC3 leaves when the pause ends");
    assert_eq!(tm.depth(1, 3), 0);
    assert!(!tm.is_busy());
}

#[test]
fn pfc_thresholds_changed_at_run_time_pause_and_resume_at_the_new_levels() {
    let spec = lossless_spec(2, 5_000, 2_000, 20_000);
    let mut tm = tm(&spec);
    // 3000 bytes from port 0 in TC3: below XOFF 5000.
    for i in 0..3 {
        enqueue(&mut tm, 0, 1, 3, 0, frame(1000, 0, i));
    }
    assert_eq!(tm.xoff_state(0), 0);
    assert!(frames(&mut tm).is_empty());
    // XOFF lowered to 3000 (XON 1000): the occupancy is at XOFF, so the peer is paused now.
    let th = |xoff, xon, headroom| PfcThresholds {
        xoff,
        xon,
        headroom,
    };
    tm.check_pfc(0, 3, th(3_000, 1_000, 500)).unwrap();
    tm.set_pfc(7, 0, 3, th(3_000, 1_000, 500));
    assert_eq!(tm.pfc_thresholds(0, 3), Some(th(3_000, 1_000, 500)));
    assert_eq!(tm.xoff_state(0), 1 << 3);
    let sent = frames(&mut tm);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].at, sent[0].enable, sent[0].quanta[3]),
        (7, 1 << 3, 0xffff)
    );
    // The headroom is now 500 above XOFF 3000: a 1000-byte frame (3000 + 1000 > 3500) is a
    // headroom drop, a 500-byte one fits.
    assert_ne!(
        enqueue(&mut tm, 8, 1, 3, 0, frame(1000, 0, 9)),
        Admission::Queued { marked: false }
    );
    assert_eq!(tm.counters().queues[0][3].headroom_drops.get(), 1);
    // XON raised to 4000 (XOFF 6000): 3000 held is below XON, so the peer resumes now.
    tm.set_pfc(9, 0, 3, th(6_000, 4_000, 500));
    assert_eq!(tm.xoff_state(0), 0);
    let sent = frames(&mut tm);
    assert_eq!((sent.len(), sent[0].at, sent[0].quanta[3]), (1, 9, 0));
    // Refused: XON above XOFF, a lossy TC, a port that does not exist.
    let e = tm.check_pfc(0, 3, th(1_000, 2_000, 500)).unwrap_err();
    assert!(e.contains("xon 2000 is above xoff (1000)"), "{e}");
    let e = tm.check_pfc(0, 2, th(2_000, 1_000, 0)).unwrap_err();
    assert!(e.contains("TC 2 is not lossless on port 0"), "{e}");
    assert!(tm.check_pfc(5, 3, th(2_000, 1_000, 0)).is_err());
    assert_eq!(tm.pfc_thresholds(0, 3), Some(th(6_000, 4_000, 500)));
}

#[test]
fn a_live_drain_ends_while_a_pause_refresh_waits_for_another_port() {
    // Port 0 (ingress, lossless TC 3, XOFF 3000) has pushed 5000 bytes into port 1's TC 3
    // queue, which a received pause holds: port 0 keeps refreshing its XOFF. The drain at the
    // end of a live run must still send everything and return.
    let spec = lossless_spec(2, 3_000, 1_000, 20_000);
    let mut tm = tm(&spec);
    tm.set_immediate(true);
    let mut quanta = [0u16; 8];
    quanta[3] = 0xffff;
    tm.receive_mac_control(
        0,
        1,
        MacControl::Pfc {
            enable: 1 << 3,
            quanta,
        },
    );
    let mut sent = Vec::new();
    for i in 0..5 {
        tm.enqueue_or_send(
            0,
            1,
            3,
            0,
            frame(1000, 0, i),
            |f| f.as_mut_slice(),
            |_, f| sent.push(f[40]),
        );
    }
    assert!(sent.is_empty(), "TC 3 is paused");
    assert_eq!(tm.xoff_state(0), 1 << 3, "port 0 pauses its peer");
    tm.drain(|_, f| sent.push(f[40]));
    assert_eq!(sent, vec![0, 1, 2, 3, 4]);
    assert!(!tm.is_busy());
}

#[test]
fn a_replay_never_passes_a_frame_through_even_to_a_port_with_no_queued_frame() {
    // In a replay the frame on the wire still counts in its queue's depth after its queue
    // emptied: the one state where no queued frame does not mean depth 0.
    let spec = spec(2, |_| {});
    let mut tm = tm(&spec);
    enqueue(&mut tm, 0, 1, 0, 0, frame(1000, NOT_ECT, 0));
    let mut sent = Vec::new();
    tm.advance(0, true, |_, f| sent.push(f));
    assert_eq!(sent.len(), 1, "handed over as its transmission starts");
    assert_eq!(
        tm.depth(1, 0),
        1000,
        "and counted until its last bit has left"
    );
    assert!(!tm.try_pass_through(1, 1, 0, tm.ingress_gate(0), 64));
    assert_eq!(tm.counters().queues[1][0].enqueued_packets(), 1);
}

#[test]
fn a_port_whose_speed_is_not_whole_picoseconds_per_byte_takes_the_full_path_only() {
    // The pass-through multiplies by whole picoseconds per byte; at 3 Gb/s a byte takes
    // 2666.67 ps, so such a port never passes a frame, and `enqueue_or_send` sends it at once
    // and times it with the exact division; a 25 Gb/s port (320 ps) passes.
    let spec = spec(2, |p| p.speed = PortSpeed::Gbps(25));
    let mut spec = spec;
    spec.ports[1].speed = PortSpeed::Gbps(3);
    let mut tm = tm(&spec);
    tm.set_immediate(true);
    let gate = tm.ingress_gate(0);
    assert!(!tm.try_pass_through(0, 1, 0, gate, 1_000), "3 Gb/s");
    let mut sent = Vec::new();
    let admission = tm.enqueue_or_send(
        0,
        1,
        0,
        0,
        frame(1_000, NOT_ECT, 0),
        |f| f.as_mut_slice(),
        |p, f| sent.push((p, f.len())),
    );
    assert_eq!(admission, Admission::Queued { marked: false });
    assert_eq!(sent, vec![(1, 1_000)], "sent at once");
    assert_eq!(tm.counters().queues[1][0].dequeued_bytes(), 1_000);
    assert!(tm.try_pass_through(0, 0, 0, gate, 1_000), "25 Gb/s");
    assert_eq!(tm.counters().queues[0][0].dequeued_bytes(), 1_000);
}

#[test]
fn pass_through_decides_exactly_as_the_full_path() {
    // Two live-mode traffic managers see the same random arrivals, pauses and time steps: one
    // offers every frame to `try_pass_through` first, the other only to `enqueue_or_send`.
    // Small queue limits (below some frames) and buffer, a lossless class whose headroom is
    // smaller than some frames, ECN curves (a step marker at depth 0) and 10G ports (so the ring fills and
    // frames queue) reach every branch, and a PFC watchdog turns long pauses of the lossless
    // class into storms (which bar passing on the egress and the ingress side). Whatever the
    // fast path takes, the full path must have sent at once, unmarked, with the same accounting.
    let micro = crate::clock::PICOS_PER_MICRO;
    let spec = {
        let mut spec = spec(3, |p| {
            p.speed = PortSpeed::Gbps(10);
            p.lossless = 1 << 3;
            p.pfc[3] = Some(PfcThresholds {
                xoff: 500,
                xon: 200,
                headroom: 300,
            });
            p.tcs[1].queue_limit = 1_000;
            p.tcs[2].ecn = Some(EcnProfile {
                kmin: 0,
                kmax: 0,
                pmax: 1.0,
            });
            p.tcs[4].ecn = Some(EcnProfile {
                kmin: 2_000,
                kmax: 6_000,
                pmax: 1.0,
            });
            p.watchdog = Some(WatchdogSpec {
                detection: 200 * micro,
                restoration: 400 * micro,
                action: WatchdogAction::Forward,
            });
        });
        spec.buffer_bytes = 15_000;
        spec
    };
    let (mut fast, mut full) = (tm(&spec), tm(&spec));
    fast.set_immediate(true);
    full.set_immediate(true);
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut sent_fast, mut sent_full) = (Vec::new(), Vec::new());
    let (mut now, mut taken, mut sent_at_once) = (0u64, 0, 0);
    for id in 0..20_000u32 {
        // Half the frames arrive at the same instant as the one before (a burst).
        now += match next() % 8 {
            0..=3 => 0,
            4 => 10_000,
            5 => 1_000_000,
            _ => 5_000_000,
        };
        if next() % 64 == 0 {
            // Long pauses of one TC fill the buffer while other ports stay idle; the lossless
            // class's, repeated, start storms.
            let mut quanta = [0u16; 8];
            let paused = if next() % 2 == 0 { 3 } else { next() % 8 };
            quanta[paused as usize] = (next() % 20_000) as u16;
            let pause = MacControl::Pfc {
                enable: 0xff,
                quanta,
            };
            let port = (next() % 3) as u16;
            fast.receive_mac_control(now, port, pause);
            full.receive_mac_control(now, port, pause);
        }
        if next() % 2 == 0 {
            fast.advance(now, true, |p, f| sent_fast.push((p, f)));
            full.advance(now, true, |p, f| sent_full.push((p, f)));
        }
        let (egress, tc) = ((next() % 3) as u16, (next() % 8) as u8);
        // Ingress: another port, or the CPU (generated frames).
        let ingress = if next() % 16 == 0 {
            CPU_PORT
        } else {
            (egress + 1) % 3
        };
        let len = 60 + (next() % 1_440) as usize;
        let ecn = [NOT_ECT, ECT0, ECT1, CE][(next() % 4) as usize];
        let mut f = frame(len, ecn, 0);
        f[40..44].copy_from_slice(&id.to_be_bytes());
        let g = f.clone();
        let gate = fast.ingress_gate(ingress);
        let fast_outcome = if fast.try_pass_through(now, egress, tc, gate, len as u32) {
            taken += 1;
            sent_fast.push((egress, f));
            Admission::Queued { marked: false }
        } else {
            fast.enqueue_or_send(
                now,
                egress,
                tc,
                ingress,
                f,
                |f| f.as_mut_slice(),
                |p, f| sent_fast.push((p, f)),
            )
        };
        let before = sent_full.len();
        let full_outcome = full.enqueue_or_send(
            now,
            egress,
            tc,
            ingress,
            g,
            |f| f.as_mut_slice(),
            |p, f| sent_full.push((p, f)),
        );
        sent_at_once += usize::from(sent_full.len() > before);
        assert_eq!(fast_outcome, full_outcome, "frame {id}");
        assert_eq!(sent_fast.len(), sent_full.len(), "frame {id}");
    }
    fast.drain(|p, f| sent_fast.push((p, f)));
    full.drain(|p, f| sent_full.push((p, f)));
    assert!(
        sent_fast == sent_full,
        "same frames, same order, same bytes"
    );
    for port in 0..3 {
        for tc in 0..8 {
            let (a, b) = (
                &fast.counters().queues[port][tc],
                &full.counters().queues[port][tc],
            );
            let pick = |c: &QueueCounters| {
                [
                    c.enqueued_packets(),
                    c.enqueued_bytes(),
                    c.dequeued_packets(),
                    c.dequeued_bytes(),
                    c.dropped_packets.get(),
                    c.ecn_marked.get(),
                    c.peak_depth_bytes.get(),
                ]
            };
            assert_eq!(pick(a), pick(b), "port {port} tc {tc}");
        }
    }
    // Both paths were busy: the fast path took a good share of what went at once (not all:
    // lossless frames, and frames for a port with a paused queue, are the full path's).
    assert!(
        taken > 1_000 && sent_at_once > taken,
        "{taken} of {sent_at_once} sent at once"
    );
    let queued: u64 = (0..3)
        .flat_map(|p| (0..8).map(move |t| (p, t)))
        .map(|(p, t)| full.counters().queues[p][t].peak_depth_bytes.get())
        .sum();
    assert!(
        queued > 0,
        "no frame ever queued: the full path was not exercised"
    );
    let storms: u64 = (0..3)
        .map(|p| full.counters().queues[p][3].watchdog_storms.get())
        .sum();
    assert!(storms > 0, "no storm: the watchdog was not exercised");
}
