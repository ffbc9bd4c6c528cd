//! Printing a run's counters: a table for people, JSON for tests and scripts.

use dataplane::engine::{QueueSnapshot, RunReport};
use dataplane::qos::{QosEvent, QosEventKind};
use serde_json::{Value, json};
use std::fmt::Write;

fn mac_string(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The counters as JSON (the `--stats-json` file).
pub fn to_json(report: &RunReport) -> Value {
    let ports: Vec<Value> = report
        .ports
        .iter()
        .enumerate()
        .map(|(index, p)| {
            let queues: Vec<Value> = report
                .queues
                .get(index)
                .map(|tcs| tcs.iter().map(queue_json).collect())
                .unwrap_or_default();
            json!({
                "name": p.info.name,
                "dpdk_port": p.info.dpdk_port_id,
                "mac": mac_string(&p.info.mac),
                "link_up": p.info.link.up,
                "speed_mbps": p.info.link.speed_mbps,
                "rx_packets": p.rx_packets,
                "tx_packets": p.tx_packets,
                "first_rx_timestamp_us": p.first_rx_timestamp,
                "last_rx_timestamp_us": p.last_rx_timestamp,
                "device": {
                    "rx_packets": p.device.rx_packets,
                    "rx_bytes": p.device.rx_bytes,
                    "tx_packets": p.device.tx_packets,
                    "tx_bytes": p.device.tx_bytes,
                    "rx_missed": p.device.rx_missed,
                    "rx_errors": p.device.rx_errors,
                    "tx_errors": p.device.tx_errors,
                    "rx_nombuf": p.device.rx_nombuf,
                },
                "queues": queues,
            })
        })
        .collect();
    let drops: serde_json::Map<String, Value> = report
        .drops
        .iter()
        .map(|(reason, count)| (reason.as_str().to_owned(), json!(count)))
        .collect();
    let srv6_objects = |objects: &[(String, dataplane::counters::ObjectSnapshot)]| -> Vec<Value> {
        objects
            .iter()
            .map(|(name, c)| {
                let drops: serde_json::Map<String, Value> = c
                    .drops
                    .iter()
                    .map(|(reason, count)| (reason.as_str().to_owned(), json!(count)))
                    .collect();
                json!({ "name": name, "packets": c.packets, "bytes": c.bytes, "drops": drops })
            })
            .collect()
    };
    json!({
        "srv6": {
            "sids": srv6_objects(&report.srv6_sids),
            "policies": srv6_objects(&report.srv6_policies),
        },
        "stop_cause": report.stop_cause.as_str(),
        "trace_origin_us": report.trace_origin_us,
        "forwarding_seconds": report.forwarding_time.as_secs_f64(),
        "ports": ports,
        "drops": drops,
        "punted": report.punted,
        "generated": report.generated,
        "icmp_errors": {
            "built": report.icmp_errors.built,
            "suppressed": report.icmp_errors.suppressed,
            "not_sent": report.icmp_errors.not_sent,
        },
        "fragmentation": {
            "packets": report.fragmentation.packets,
            "fragments": report.fragmentation.fragments,
        },
        "neighbors": {
            "probes": report.neighbors.probes,
            "expired": report.neighbors.expired,
        },
        "mac_table_full": report.mac_table.table_full,
        "routed_flooded": report.mac_table.routed_flooded,
        "qos_events_lost": report.qos_events_lost,
        "replay_stalled": report.replay_stalled,
    })
}

/// One (port, TC) queue's counters; the array index is the TC.
fn queue_json(q: &QueueSnapshot) -> Value {
    json!({
        "enqueued_packets": q.enqueued_packets,
        "enqueued_bytes": q.enqueued_bytes,
        "dequeued_packets": q.dequeued_packets,
        "dequeued_bytes": q.dequeued_bytes,
        "dropped_packets": q.dropped_packets,
        "dropped_bytes": q.dropped_bytes,
        "ecn_marked": q.ecn_marked,
        "depth_bytes": q.depth_bytes,
        "peak_depth_bytes": q.peak_depth_bytes,
        "ingress_bytes": q.ingress_bytes,
        "peak_ingress_bytes": q.peak_ingress_bytes,
        "pfc_tx_frames": q.pfc_tx_frames,
        "pfc_rx_frames": q.pfc_rx_frames,
        "xoff_transitions": q.xoff_transitions,
        "xon_transitions": q.xon_transitions,
        "paused_ps": q.paused_ps,
        "watchdog_storms": q.watchdog_storms,
        "watchdog_restorations": q.watchdog_restorations,
        "headroom_drops": q.headroom_drops,
        "watchdog_drops": q.watchdog_drops,
    })
}

/// One line of the `--events` log. Time is in picoseconds of the run's clock (virtual time in
/// a replay), so exact thresholds stay exact.
pub fn event_json(event: &QosEvent, port_names: &[&str]) -> Value {
    let (kind, threshold, quanta) = match event.kind {
        QosEventKind::WatermarkUp(t) => ("watermark_up", Some(t), None),
        QosEventKind::WatermarkDown(t) => ("watermark_down", Some(t), None),
        QosEventKind::EcnMarkingStart => ("ecn_marking_start", None, None),
        QosEventKind::EcnMarkingStop => ("ecn_marking_stop", None, None),
        QosEventKind::PfcXoff => ("pfc_xoff_sent", None, None),
        QosEventKind::PfcXon => ("pfc_xon_sent", None, None),
        QosEventKind::PfcReceived(q) => ("pfc_received", None, Some(q)),
        QosEventKind::WatchdogStorm => ("pfc_watchdog_storm", None, None),
        QosEventKind::WatchdogRestored => ("pfc_watchdog_restored", None, None),
    };
    let mut line = json!({
        "t_ps": event.at,
        "event": kind,
        "port": port_names.get(usize::from(event.port)).copied().unwrap_or("?"),
        "tc": event.tc,
    });
    // PFC generation reports the ingress occupancy that crossed the threshold; the rest, the
    // egress queue's depth.
    if matches!(event.kind, QosEventKind::PfcXoff | QosEventKind::PfcXon) {
        line["ingress_bytes"] = json!(event.depth);
    } else {
        line["depth_bytes"] = json!(event.depth);
    }
    if let Some(t) = threshold {
        line["threshold_bytes"] = json!(t);
    }
    if let Some(q) = quanta {
        line["quanta"] = json!(q);
    }
    line
}

/// The counters as a table.
pub fn to_text(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ironclos stopped ({}) after {:.3} s of forwarding",
        report.stop_cause.as_str(),
        report.forwarding_time.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>12} {:>14} {:>14} {:>10} {:>10} {:>10}  link",
        "port",
        "rx_packets",
        "tx_packets",
        "rx_bytes",
        "tx_bytes",
        "rx_missed",
        "rx_nombuf",
        "tx_errors"
    );
    for p in &report.ports {
        let _ = writeln!(
            out,
            "{:<10} {:>12} {:>12} {:>14} {:>14} {:>10} {:>10} {:>10}  {}",
            p.info.name,
            p.rx_packets,
            p.tx_packets,
            p.device.rx_bytes,
            p.device.tx_bytes,
            p.device.rx_missed,
            p.device.rx_nombuf,
            p.device.tx_errors,
            if p.info.link.up { "up" } else { "down" },
        );
    }
    let drops: Vec<String> = report
        .drops
        .iter()
        .map(|(r, n)| format!("{}={n}", r.as_str()))
        .collect();
    let _ = writeln!(out, "drops: {}", drops.join(" "));
    let busy: Vec<(usize, usize, &QueueSnapshot)> = report
        .queues
        .iter()
        .enumerate()
        .flat_map(|(port, tcs)| {
            tcs.iter()
                .enumerate()
                .filter(|(_, q)| !q.is_idle())
                .map(move |(tc, q)| (port, tc, q))
        })
        .collect();
    if !busy.is_empty() {
        let _ = writeln!(
            out,
            "{:<10} {:>2} {:>12} {:>12} {:>10} {:>10} {:>12} {:>12}",
            "queue",
            "tc",
            "enqueued",
            "dequeued",
            "dropped",
            "ecn_marked",
            "peak_bytes",
            "depth_bytes"
        );
        for (port, tc, q) in busy {
            let name = report.ports.get(port).map_or("?", |p| p.info.name.as_str());
            let _ = writeln!(
                out,
                "{:<10} {:>2} {:>12} {:>12} {:>10} {:>10} {:>12} {:>12}",
                name,
                tc,
                q.enqueued_packets,
                q.dequeued_packets,
                q.dropped_packets,
                q.ecn_marked,
                q.peak_depth_bytes,
                q.depth_bytes
            );
        }
    }
    let _ = writeln!(
        out,
        "slow path: {} frames punted (ARP/ND/ICMP for the switch), {} frames sent",
        report.punted, report.generated
    );
    let e = &report.icmp_errors;
    if *e != Default::default() {
        let _ = writeln!(
            out,
            "icmp errors: {} built, {} suppressed (RFC rules, rate limit), {} not sent",
            e.built, e.suppressed, e.not_sent
        );
    }
    let f = &report.fragmentation;
    if *f != Default::default() {
        let _ = writeln!(
            out,
            "fragmentation: {} IPv4 packets longer than their egress MTU cut into {} fragments",
            f.packets, f.fragments
        );
    }
    let n = &report.neighbors;
    if *n != Default::default() {
        let _ = writeln!(
            out,
            "neighbours: {} asked again after their reachable time, {} lost (no answer)",
            n.probes, n.expired
        );
    }
    let m = &report.mac_table;
    if *m != Default::default() {
        let _ = writeln!(
            out,
            "mac table: {} source MACs not learned (table full: mac_table_full), {} routed \
             packets flooded in their VLAN (neighbour's MAC not in the table: routed_flooded)",
            m.table_full, m.routed_flooded
        );
    }
    for (kind, objects) in [
        ("sid", &report.srv6_sids),
        ("policy", &report.srv6_policies),
    ] {
        for (name, c) in objects {
            let drops: Vec<String> = c
                .drops
                .iter()
                .map(|(r, n)| format!("{}={n}", r.as_str()))
                .collect();
            let _ = writeln!(
                out,
                "srv6 {kind} {name}: {} packets, {} bytes, drops: {}",
                c.packets,
                c.bytes,
                if drops.is_empty() {
                    "none".to_owned()
                } else {
                    drops.join(" ")
                }
            );
        }
    }
    out
}

/// Each ECMP group's balancing for `--stats-json`: mode, counters, per-member bytes and the
/// imbalance (max member bytes / mean). `names[g]` and `members[g][i]` label them.
pub fn groups_json(report: &RunReport, names: &[String], members: &[Vec<String>]) -> Value {
    let groups: Vec<Value> = report
        .groups
        .iter()
        .enumerate()
        .map(|(g, group)| {
            let member_list: Vec<Value> = group
                .member_bytes
                .iter()
                .zip(&group.member_packets)
                .enumerate()
                .map(|(i, (bytes, packets))| {
                    json!({
                        "member": members.get(g).and_then(|m| m.get(i)).map_or("?", String::as_str),
                        "bytes": bytes,
                        "packets": packets,
                    })
                })
                .collect();
            json!({
                "name": names.get(g).map_or("?", String::as_str),
                "mode": group.spec.mode.as_str(),
                "choice": group.spec.choice.as_str(),
                "flowlet_timeout_ps": group.spec.timeout,
                "flowlets": group.flowlets,
                "moves": group.moves,
                "forced_moves": group.forced_moves,
                "imbalance": group.imbalance(),
                "members": member_list,
                "events_lost": group.events_lost,
            })
        })
        .collect();
    Value::Array(groups)
}

/// Each ECMP group's balancing as a table: members' bytes and the imbalance.
pub fn groups_text(report: &RunReport, names: &[String], members: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (g, group) in report.groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "group {} ({}{}): {} flowlets, {} moves ({} forced), imbalance {:.3} (max member / mean)",
            names.get(g).map_or("?", String::as_str),
            group.spec.mode.as_str(),
            if group.spec.mode == dataplane::tables::flowlet::BalanceMode::Hash {
                String::new()
            } else {
                format!(", {}", group.spec.choice.as_str())
            },
            group.flowlets,
            group.moves,
            group.forced_moves,
            group.imbalance()
        );
        for (i, (bytes, packets)) in group
            .member_bytes
            .iter()
            .zip(&group.member_packets)
            .enumerate()
        {
            let _ = writeln!(
                out,
                "  {:<32} {:>12} packets {:>14} bytes",
                members
                    .get(g)
                    .and_then(|m| m.get(i))
                    .map_or("?", String::as_str),
                packets,
                bytes
            );
        }
    }
    out
}

/// One flowlet move for the `--events` log (same clock as the QoS events).
pub fn flowlet_move_json(
    event: &dataplane::tables::flowlet::FlowletMove,
    names: &[String],
    members: &[Vec<String>],
) -> Value {
    let g = event.group as usize;
    let member = |i: u32| {
        members
            .get(g)
            .and_then(|m| m.get(i as usize))
            .map_or("?", String::as_str)
            .to_owned()
    };
    json!({
        "t_ps": event.at,
        "event": "flowlet_move",
        "group": names.get(g).map_or("?", String::as_str),
        "slot": event.slot,
        "from": member(event.from),
        "to": member(event.to),
        "forced": event.forced,
    })
}
