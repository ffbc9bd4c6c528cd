//! Prometheus text exposition (format 0.0.4) over a tiny non-blocking HTTP/1.0 responder,
//! served from the control loop on the main lcore. `GET /metrics` (or `/`) answers the
//! counters; anything else gets 404. One request per connection, then close.

use serde_json::Value;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Header bytes accepted from a scraper.
const MAX_HEADER: usize = 8192;
/// A connection that has not sent its request or taken its answer by then is closed.
const CONN_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_CONNECTIONS: usize = 16;

struct HttpConn {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The request was read; `output` holds the whole answer.
    answered: bool,
    since: Instant,
}

pub struct MetricsServer {
    listener: TcpListener,
    conns: Vec<HttpConn>,
}

impl MetricsServer {
    pub fn bind(addr: SocketAddr) -> Result<MetricsServer, String> {
        let listener =
            TcpListener::bind(addr).map_err(|e| format!("metrics listener {addr}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("metrics listener {addr}: {e}"))?;
        Ok(MetricsServer {
            listener,
            conns: Vec::new(),
        })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Accepts and reads; true if some request waits for the metrics text.
    pub fn poll(&mut self) -> bool {
        while let Ok((stream, _)) = self.listener.accept() {
            if self.conns.len() >= MAX_CONNECTIONS || stream.set_nonblocking(true).is_err() {
                continue;
            }
            self.conns.push(HttpConn {
                stream,
                input: Vec::new(),
                output: Vec::new(),
                answered: false,
                since: Instant::now(),
            });
        }
        let mut waiting = false;
        for conn in &mut self.conns {
            if conn.answered {
                continue;
            }
            let mut buf = [0u8; 2048];
            loop {
                match conn.stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        conn.input.extend_from_slice(&buf[..n]);
                        if conn.input.len() > MAX_HEADER {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            waiting |= header_complete(&conn.input) || conn.input.len() > MAX_HEADER;
        }
        waiting
    }

    /// Answers every complete request with `text` (or an error status), writes what the
    /// sockets take and closes finished or stale connections.
    pub fn respond(&mut self, text: Option<&str>) {
        for conn in &mut self.conns {
            if conn.answered {
                continue;
            }
            let complete = header_complete(&conn.input);
            if !complete && conn.input.len() <= MAX_HEADER {
                continue;
            }
            let request = String::from_utf8_lossy(&conn.input);
            let first = request.lines().next().unwrap_or("");
            let mut parts = first.split_whitespace();
            let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            conn.output = match (complete, method, path, text) {
                (false, ..) => response(
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    "header too large\n",
                ),
                (true, "GET", "/metrics" | "/", Some(text)) => {
                    response("200 OK", "text/plain; version=0.0.4; charset=utf-8", text)
                }
                (true, "GET", _, _) => response("404 Not Found", "text/plain", "try /metrics\n"),
                _ => response("405 Method Not Allowed", "text/plain", "GET only\n"),
            };
            conn.answered = true;
        }
        self.conns.retain_mut(|conn| {
            while conn.answered && !conn.output.is_empty() {
                match conn.stream.write(&conn.output) {
                    Ok(0) => return false,
                    Ok(n) => {
                        conn.output.drain(..n);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
            }
            let done = conn.answered && conn.output.is_empty();
            !done && conn.since.elapsed() < CONN_TIMEOUT
        });
    }
}

fn header_complete(input: &[u8]) -> bool {
    input.windows(4).any(|w| w == b"\r\n\r\n") || input.windows(2).any(|w| w == b"\n\n")
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An ECMP group's balancing counters and its members'.
pub struct GroupMetrics {
    pub name: String,
    pub flowlets: u64,
    pub moves: u64,
    pub forced_moves: u64,
    pub members: Vec<MemberMetrics>,
}

/// One member of a group: its nexthop address, share of the group's buckets, whether it
/// takes traffic, and what the group sent it.
pub struct MemberMetrics {
    pub address: String,
    pub share: f64,
    pub up: bool,
    pub packets: u64,
    pub bytes: u64,
}

/// What the exposition is made of (the same JSON `ironclos ctl show ...` returns, so the two
/// agree by construction of their source, not by a second reading of the counters).
pub struct MetricsInput {
    pub ports: Value,
    pub queues: Value,
    pub drops: Value,
    pub srv6: Value,
    /// ECMP groups, when the worker has answered a snapshot.
    pub groups: Option<Vec<GroupMetrics>>,
}

/// A label value with `\`, `"` and newlines escaped.
pub fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

fn num(v: &Value, field: &str) -> f64 {
    v.get(field).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text<'v>(v: &'v Value, field: &str) -> &'v str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// The whole exposition.
pub fn render(input: &MetricsInput) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let mut f = Family { out: &mut out };
    let ports = items(&input.ports);
    for (name, field, kind, help) in [
        (
            "ironclos_port_rx_packets_total",
            "rx_packets",
            "counter",
            "Frames received on the port.",
        ),
        (
            "ironclos_port_tx_packets_total",
            "tx_packets",
            "counter",
            "Frames sent out of the port.",
        ),
        (
            "ironclos_port_rx_bytes_total",
            "rx_bytes",
            "counter",
            "Bytes the device received (its counter, read every 100 ms).",
        ),
        (
            "ironclos_port_tx_bytes_total",
            "tx_bytes",
            "counter",
            "Bytes the device sent (its counter, read every 100 ms).",
        ),
        (
            "ironclos_port_rx_missed_total",
            "rx_missed",
            "counter",
            "Frames the device dropped because its receive ring was full.",
        ),
        (
            "ironclos_port_rx_nombuf_total",
            "rx_nombuf",
            "counter",
            "Frames the device dropped for lack of an mbuf.",
        ),
        (
            "ironclos_port_rx_errors_total",
            "rx_errors",
            "counter",
            "Erroneous frames the device received.",
        ),
        (
            "ironclos_port_tx_errors_total",
            "tx_errors",
            "counter",
            "Frames the device failed to send.",
        ),
        (
            "ironclos_port_speed_mbps",
            "speed_mbps",
            "gauge",
            "Link speed in Mb/s (0 when unknown).",
        ),
        (
            "ironclos_port_mtu",
            "mtu",
            "gauge",
            "The MTU routed packets leaving by the port are held to (bytes of IP).",
        ),
    ] {
        f.header(name, kind, help);
        for p in ports {
            f.sample(name, &[("port", text(p, "name"))], num(p, field));
        }
    }
    for (name, field, help) in [
        ("ironclos_port_link_up", "link", "1 if the link is up."),
        (
            "ironclos_port_admin_up",
            "admin",
            "1 if the operator has the port up.",
        ),
    ] {
        f.header(name, "gauge", help);
        for p in ports {
            let up = text(p, field) == "up";
            f.sample(name, &[("port", text(p, "name"))], f64::from(u8::from(up)));
        }
    }
    let queues = items(&input.queues);
    for (name, field, kind, scale, help) in [
        (
            "ironclos_queue_depth_bytes",
            "depth_bytes",
            "gauge",
            1.0,
            "Bytes queued now.",
        ),
        (
            "ironclos_queue_peak_depth_bytes",
            "peak_depth_bytes",
            "gauge",
            1.0,
            "Most bytes ever queued.",
        ),
        (
            "ironclos_queue_enqueued_packets_total",
            "enqueued_packets",
            "counter",
            1.0,
            "Frames admitted to the queue.",
        ),
        (
            "ironclos_queue_enqueued_bytes_total",
            "enqueued_bytes",
            "counter",
            1.0,
            "Bytes admitted to the queue.",
        ),
        (
            "ironclos_queue_dequeued_packets_total",
            "dequeued_packets",
            "counter",
            1.0,
            "Frames sent from the queue.",
        ),
        (
            "ironclos_queue_dropped_packets_total",
            "dropped_packets",
            "counter",
            1.0,
            "Frames the queue dropped.",
        ),
        (
            "ironclos_ecn_marked_packets_total",
            "ecn_marked",
            "counter",
            1.0,
            "Frames marked CE.",
        ),
        (
            "ironclos_pfc_tx_frames_total",
            "pfc_tx_frames",
            "counter",
            1.0,
            "PFC frames sent for this priority.",
        ),
        (
            "ironclos_pfc_rx_frames_total",
            "pfc_rx_frames",
            "counter",
            1.0,
            "PFC frames received for this priority.",
        ),
        (
            "ironclos_pfc_xoff_transitions_total",
            "xoff_transitions",
            "counter",
            1.0,
            "Times the port started pausing its peer.",
        ),
        (
            "ironclos_pfc_paused_seconds_total",
            "paused_ps",
            "counter",
            1e-12,
            "Time the queue was paused by the peer.",
        ),
        (
            "ironclos_pfc_watchdog_storms_total",
            "watchdog_storms",
            "counter",
            1.0,
            "Pause storms the watchdog detected.",
        ),
        (
            "ironclos_pfc_headroom_drops_total",
            "headroom_drops",
            "counter",
            1.0,
            "Lossless frames dropped for lack of headroom.",
        ),
    ] {
        f.header(name, kind, help);
        for q in queues {
            let tc = num(q, "tc").to_string();
            f.sample(
                name,
                &[("port", text(q, "port")), ("tc", &tc)],
                num(q, field) * scale,
            );
        }
    }
    f.header(
        "ironclos_drops_total",
        "counter",
        "Frames dropped, by reason.",
    );
    if let Some(reasons) = input.drops.get("reasons").and_then(Value::as_object) {
        for (reason, n) in reasons {
            f.sample(
                "ironclos_drops_total",
                &[("reason", reason)],
                n.as_f64().unwrap_or(0.0),
            );
        }
    }
    f.header(
        "ironclos_icmp_errors_total",
        "counter",
        "ICMP and ICMPv6 errors about dropped packets, by result (built, suppressed, not_sent).",
    );
    if let Some(errors) = input.drops.get("icmp_errors").and_then(Value::as_object) {
        for (result, n) in errors {
            f.sample(
                "ironclos_icmp_errors_total",
                &[("result", result)],
                n.as_f64().unwrap_or(0.0),
            );
        }
    }
    f.header(
        "ironclos_fragmentation_total",
        "counter",
        "IPv4 packets cut into fragments for an egress MTU (kind packets) and the fragments made.",
    );
    if let Some(cut) = input.drops.get("fragmentation").and_then(Value::as_object) {
        for (kind, n) in cut {
            f.sample(
                "ironclos_fragmentation_total",
                &[("kind", kind)],
                n.as_f64().unwrap_or(0.0),
            );
        }
    }
    f.header(
        "ironclos_neighbors_total",
        "counter",
        "Learned neighbours asked again after their reachable time (event probes) and those lost \
         for not answering (event expired).",
    );
    if let Some(heard) = input.drops.get("neighbors").and_then(Value::as_object) {
        for (event, n) in heard {
            f.sample(
                "ironclos_neighbors_total",
                &[("event", event)],
                n.as_f64().unwrap_or(0.0),
            );
        }
    }
    for (kind, list) in [("sid", "sids"), ("policy", "policies")] {
        let objects = input.srv6.get(list).map_or(&[][..], items);
        for (field, unit) in [("packets", "packets"), ("bytes", "bytes")] {
            let name = format!("ironclos_srv6_{kind}_{unit}_total");
            f.header(
                &name,
                "counter",
                &format!("Traffic matched by the SRv6 {kind}, in {unit}."),
            );
            for o in objects {
                f.sample(&name, &[(kind, text(o, "name"))], num(o, field));
            }
        }
        let name = format!("ironclos_srv6_{kind}_drops_total");
        f.header(
            &name,
            "counter",
            &format!("Packets of the SRv6 {kind} dropped, by reason."),
        );
        for o in objects {
            if let Some(drops) = o.get("drops").and_then(Value::as_object) {
                for (reason, n) in drops {
                    f.sample(
                        &name,
                        &[(kind, text(o, "name")), ("reason", reason)],
                        n.as_f64().unwrap_or(0.0),
                    );
                }
            }
        }
    }
    if let Some(groups) = &input.groups {
        type MemberValue = fn(&MemberMetrics) -> f64;
        let per_member: [(&str, &str, &str, MemberValue); 4] = [
            (
                "ironclos_ecmp_member_share",
                "gauge",
                "Share of the group's hash buckets the member owns.",
                |m| m.share,
            ),
            (
                "ironclos_ecmp_member_up",
                "gauge",
                "1 if the member takes traffic.",
                |m| f64::from(u8::from(m.up)),
            ),
            (
                "ironclos_ecmp_member_packets_total",
                "counter",
                "Packets the group sent to the member (since the group's members last changed).",
                |m| m.packets as f64,
            ),
            (
                "ironclos_ecmp_member_bytes_total",
                "counter",
                "Bytes the group sent to the member (since the group's members last changed).",
                |m| m.bytes as f64,
            ),
        ];
        for (name, kind, help, value) in per_member {
            f.header(name, kind, help);
            for g in groups {
                for m in &g.members {
                    f.sample(
                        name,
                        &[("group", &g.name), ("member", &m.address)],
                        value(m),
                    );
                }
            }
        }
        type GroupValue = fn(&GroupMetrics) -> f64;
        let per_group: [(&str, &str, &str, GroupValue); 4] = [
            (
                "ironclos_ecmp_flowlets_total",
                "counter",
                "Flowlets the group started (flowlet mode; per packet when spraying).",
                |g| g.flowlets as f64,
            ),
            (
                "ironclos_ecmp_flowlet_moves_total",
                "counter",
                "Flowlets that went to another member than the flow's previous one.",
                |g| g.moves as f64,
            ),
            (
                "ironclos_ecmp_flowlet_forced_moves_total",
                "counter",
                "Flowlets moved because their member went down.",
                |g| g.forced_moves as f64,
            ),
            (
                "ironclos_ecmp_imbalance",
                "gauge",
                "The busiest member's bytes over the mean of the members' (1 is even).",
                |g| {
                    dataplane::tables::flowlet::imbalance(
                        &g.members.iter().map(|m| m.bytes).collect::<Vec<_>>(),
                    )
                },
            ),
        ];
        for (name, kind, help, value) in per_group {
            f.header(name, kind, help);
            for g in groups {
                f.sample(name, &[("group", &g.name)], value(g));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_are_escaped_and_every_sample_has_a_typed_family() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let text = render(&MetricsInput {
            ports: json!([{"name": "eth\"1", "rx_packets": 5, "tx_packets": 7, "rx_bytes": 320, "rx_missed": 2, "speed_mbps": 0, "link": "up", "admin": "down"}]),
            queues: json!([{"port": "eth1", "tc": 3, "depth_bytes": 10, "paused_ps": 2_000_000_000_000u64}]),
            drops: json!({"total": 2, "reasons": {"no_route": 2}}),
            srv6: json!({"sids": [{"name": "un", "packets": 7, "bytes": 700, "drops": {"srv6_hop_limit": 2}}], "policies": []}),
            groups: Some(vec![GroupMetrics {
                name: "up".into(),
                flowlets: 4,
                moves: 1,
                forced_moves: 0,
                members: vec![
                    MemberMetrics {
                        address: "10.0.0.1".into(),
                        share: 0.5,
                        up: true,
                        packets: 9,
                        bytes: 900,
                    },
                    MemberMetrics {
                        address: "10.0.0.3".into(),
                        share: 0.5,
                        up: true,
                        packets: 3,
                        bytes: 300,
                    },
                ],
            }]),
        });
        assert!(
            text.contains("ironclos_port_rx_packets_total{port=\"eth\\\"1\"} 5\n"),
            "{text}"
        );
        assert!(text.contains("ironclos_port_admin_up{port=\"eth\\\"1\"} 0\n"));
        assert!(text.contains("ironclos_port_rx_bytes_total{port=\"eth\\\"1\"} 320\n"));
        assert!(text.contains("ironclos_port_rx_missed_total{port=\"eth\\\"1\"} 2\n"));
        assert!(text.contains("ironclos_pfc_paused_seconds_total{port=\"eth1\",tc=\"3\"} 2\n"));
        assert!(text.contains("ironclos_drops_total{reason=\"no_route\"} 2\n"));
        assert!(
            text.contains(
                "ironclos_ecmp_member_packets_total{group=\"up\",member=\"10.0.0.1\"} 9\n"
            )
        );
        assert!(
            text.contains("ironclos_ecmp_member_share{group=\"up\",member=\"10.0.0.1\"} 0.5\n")
        );
        assert!(
            text.contains(
                "ironclos_ecmp_member_bytes_total{group=\"up\",member=\"10.0.0.3\"} 300\n"
            )
        );
        assert!(text.contains("ironclos_ecmp_flowlets_total{group=\"up\"} 4\n"));
        assert!(text.contains("ironclos_ecmp_flowlet_moves_total{group=\"up\"} 1\n"));
        assert!(text.contains("ironclos_srv6_sid_packets_total{sid=\"un\"} 7\n"));
        assert!(
            text.contains(
                "ironclos_srv6_sid_drops_total{sid=\"un\",reason=\"srv6_hop_limit\"} 2\n"
            )
        );
        // 900 bytes over a mean of 600.
        assert!(text.contains("ironclos_ecmp_imbalance{group=\"up\"} 1.5\n"));
        let mut typed = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.insert(rest.split(' ').next().unwrap().to_owned());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(typed.contains(name), "{line} has no TYPE before it");
            }
        }
    }
}
