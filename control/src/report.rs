//! Printing a run's counters: a table for people, JSON for tests and scripts.

use dataplane::engine::RunReport;
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
        .map(|p| {
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
        "forwarding_seconds": report.forwarding_time.as_secs_f64(),
        "ports": ports,
        "drops": drops,
        "punted": report.punted,
        "generated": report.generated,
    })
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
    let _ = writeln!(
        out,
        "slow path: {} frames punted (ARP/ND/ICMP for the switch), {} frames sent",
        report.punted, report.generated
    );
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
