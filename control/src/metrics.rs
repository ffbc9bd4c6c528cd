//! Prometheus text exposition (format 0.0.4) over a tiny non-blocking HTTP/1.0 responder,
//! served from the control loop on the main lcore. `GET /metrics` (or `/`; a query string is
//! ignored) answers the counters, `HEAD` the same headers without the body; another path gets
//! 404, another method 405, a malformed request line 400. One request per connection, then
//! close.
//!
//! Connections are few (`MAX_CONNECTIONS`) and short-lived: a client has `HEADER_TIMEOUT` to
//! send its request, and when every slot is taken a new connection takes the slot of the one
//! idle the longest (one still sending its request, or one not reading its answer), so clients
//! that open connections and never finish them cannot lock scrapes out.

use serde_json::Value;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Header bytes accepted from a scraper.
const MAX_HEADER: usize = 8192;
/// A connection that has not sent its whole request by then is closed (with 408).
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection that has not taken its whole answer by then is closed.
const CONN_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections open at once. When all are taken, a new one closes the longest-idle one that
/// is not about to be answered (see `HttpConn::idle_since`).
const MAX_CONNECTIONS: usize = 16;

struct HttpConn {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The request was read; `output` holds the whole answer.
    answered: bool,
    /// The client shut its side (or the socket failed): no more request bytes will come.
    eof: bool,
    /// When it was accepted.
    since: Instant,
    /// When bytes last came in or went out.
    last_active: Instant,
}

impl HttpConn {
    fn new(stream: TcpStream) -> HttpConn {
        let now = Instant::now();
        HttpConn {
            stream,
            input: Vec::new(),
            output: Vec::new(),
            answered: false,
            eof: false,
            since: now,
            last_active: now,
        }
    }

    /// Reads what the client sent, up to just past `MAX_HEADER` bytes.
    fn read(&mut self) {
        if self.answered || self.eof {
            return;
        }
        let mut buf = [0u8; 2048];
        while self.input.len() <= MAX_HEADER {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.input.extend_from_slice(&buf[..n]);
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.eof = true;
                    break;
                }
            }
        }
    }

    /// Whether what was read is a request to answer (whole, or too large to be one).
    fn request_ready(&self) -> bool {
        header_complete(&self.input) || self.input.len() > MAX_HEADER
    }

    /// Since when the connection may be closed to make room for a new one: while its request
    /// is incomplete, or its answer waits for the client to read it. A request read and not
    /// answered yet (it will be in this same tick) keeps its slot.
    fn idle_since(&self) -> Option<Instant> {
        (self.answered || !self.request_ready()).then_some(self.last_active)
    }
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

    /// Reads and accepts; true if some request waits for the metrics text.
    pub fn poll(&mut self) -> bool {
        // The open connections first: a request that came whole is then safe from eviction.
        for conn in &mut self.conns {
            conn.read();
        }
        while let Ok((stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            // Read at once: a scraper's request usually came with its connection.
            let mut conn = HttpConn::new(stream);
            conn.read();
            if self.conns.len() >= MAX_CONNECTIONS && !self.evict_idle() {
                // Every slot holds a request about to be answered (a burst of scrapes).
                let _ = conn.stream.write(&response(
                    "503 Service Unavailable",
                    "text/plain",
                    "busy\n",
                    &Reply::default(),
                ));
                continue;
            }
            self.conns.push(conn);
        }
        self.conns.iter().any(|c| !c.answered && c.request_ready())
    }

    /// Closes the connection idle the longest (`HttpConn::idle_since`, however briefly: a
    /// slot is worth more to a new client than to one that has not sent its request yet);
    /// whether there was one.
    fn evict_idle(&mut self) -> bool {
        let idle = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.idle_since()?)));
        let Some((index, _)) = crate::server::longest_idle(idle, Instant::now(), Duration::ZERO)
        else {
            return false;
        };
        let mut conn = self.conns.swap_remove(index);
        if !conn.answered {
            // Best effort, as the connection closes: why (an answer being sent is cut short).
            let _ = conn.stream.write(&response(
                "503 Service Unavailable",
                "text/plain",
                "closed to make room: every connection slot is taken\n",
                &Reply::default(),
            ));
        }
        true
    }

    /// Answers every complete request with `text` (or an error status), writes what the
    /// sockets take and closes finished, abandoned or stale connections.
    pub fn respond(&mut self, text: Option<&str>) {
        let now = Instant::now();
        for conn in &mut self.conns {
            if conn.answered || !conn.request_ready() {
                continue;
            }
            conn.output = answer(&conn.input, text);
            conn.answered = true;
            conn.last_active = now;
        }
        self.conns.retain_mut(|conn| {
            if !conn.answered {
                if conn.since.elapsed() >= HEADER_TIMEOUT && !conn.eof {
                    let _ = conn.stream.write(&response(
                        "408 Request Timeout",
                        "text/plain",
                        "no whole request in time\n",
                        &Reply::default(),
                    ));
                    return false;
                }
                // A client that hung up before its request was whole is gone.
                return !conn.eof;
            }
            while !conn.output.is_empty() {
                match conn.stream.write(&conn.output) {
                    Ok(0) => return false,
                    Ok(n) => {
                        conn.output.drain(..n);
                        conn.last_active = Instant::now();
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
            }
            !conn.output.is_empty() && conn.since.elapsed() < CONN_TIMEOUT
        });
    }
}

fn header_complete(input: &[u8]) -> bool {
    input.windows(4).any(|w| w == b"\r\n\r\n") || input.windows(2).any(|w| w == b"\n\n")
}

/// A token character (RFC 9110 `tchar`): what a method is made of.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The method and path (without query string) of a request line `METHOD TARGET HTTP/x.y`
/// (the version may be left out, as in HTTP/0.9); `None` if it is not one. The target is
/// origin-form (`/path?query`), absolute-form (`http://host/path?query`) or `*`.
fn parse_request_line(line: &str) -> Option<(&str, &str)> {
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    let version = parts.next();
    if parts.next().is_some() || !method.chars().all(is_tchar) {
        return None;
    }
    if let Some(version) = version {
        let digits = version.strip_prefix("HTTP/")?.as_bytes();
        if !matches!(digits, [major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit())
        {
            return None;
        }
    }
    let path = if target.starts_with('/') || target == "*" {
        target
    } else {
        let rest = target
            .strip_prefix("http://")
            .or_else(|| target.strip_prefix("https://"))?;
        rest.find('/').map_or("/", |i| &rest[i..])
    };
    let path = path.split_once(['?', '#']).map_or(path, |(path, _)| path);
    Some((method, path))
}

/// The whole answer to `input`, a request read to its blank line (or too large to be one):
/// `text` for `GET /metrics` (or `/`), its headers alone for `HEAD`.
fn answer(input: &[u8], text: Option<&str>) -> Vec<u8> {
    if !header_complete(input) {
        return response(
            "431 Request Header Fields Too Large",
            "text/plain",
            "header too large\n",
            &Reply::default(),
        );
    }
    let request = String::from_utf8_lossy(input);
    // A server should ignore empty lines before the request line (RFC 9112, 2.2).
    let line = request.lines().find(|l| !l.is_empty()).unwrap_or("");
    let Some((method, path)) = parse_request_line(line) else {
        return response(
            "400 Bad Request",
            "text/plain",
            "malformed request line\n",
            &Reply::default(),
        );
    };
    let head_only = Reply {
        head_only: method == "HEAD",
        allow: false,
    };
    match (method, path, text) {
        ("GET" | "HEAD", "/metrics" | "/", Some(text)) => response(
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            text,
            &head_only,
        ),
        // Not reached: the server renders the text whenever a request waits.
        ("GET" | "HEAD", "/metrics" | "/", None) => response(
            "503 Service Unavailable",
            "text/plain",
            "no metrics yet\n",
            &head_only,
        ),
        ("GET" | "HEAD", ..) => {
            response("404 Not Found", "text/plain", "try /metrics\n", &head_only)
        }
        _ => response(
            "405 Method Not Allowed",
            "text/plain",
            "GET or HEAD only\n",
            &Reply {
                head_only: false,
                allow: true,
            },
        ),
    }
}

/// How to shape a response beyond its status and body.
#[derive(Default)]
struct Reply {
    /// An answer to HEAD: the headers of the body, without it.
    head_only: bool,
    /// Say which methods are (`Allow: GET, HEAD`), with 405.
    allow: bool,
}

fn response(status: &str, content_type: &str, body: &str, reply: &Reply) -> Vec<u8> {
    let allow = if reply.allow {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    // HEAD: the Content-Length GET would have, no body.
    let sent = if reply.head_only { "" } else { body };
    format!(
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n{sent}",
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
    // Not drops: the frames were forwarded (or flooded).
    for (name, field, help) in [
        (
            "ironclos_mac_table_full_total",
            "mac_table_full",
            "Source MACs not learned because the MAC table was full (the frames were forwarded; \
             frames to those MACs flood).",
        ),
        (
            "ironclos_routed_flooded_total",
            "routed_flooded",
            "Routed packets whose neighbour's MAC was not in the MAC table: flooded in its VLAN \
             (dropped as lossless_flood in a lossless class).",
        ),
    ] {
        f.header(name, "counter", help);
        if let Some(n) = input.drops.get(field).and_then(Value::as_f64) {
            f.sample(name, &[], n);
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

    fn answer_to(request: &str) -> String {
        String::from_utf8(answer(request.as_bytes(), Some("up 1\n"))).unwrap()
    }

    #[test]
    fn requests_are_answered_by_method_and_path_without_the_query() {
        let ok = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
                  Content-Length: 5\r\nConnection: close\r\n\r\n";
        for request in [
            "GET /metrics HTTP/1.0\r\n\r\n",
            "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /?x=1&y=%20 HTTP/1.1\r\n\r\n",
            "GET http://127.0.0.1:9417/metrics?x=1 HTTP/1.1\r\n\r\n",
            "\r\nGET /metrics HTTP/1.0\r\n\r\n",
            "GET /metrics\n\n",
        ] {
            assert_eq!(answer_to(request), format!("{ok}up 1\n"), "{request:?}");
        }
        // HEAD: GET's headers (its length too), no body.
        assert_eq!(answer_to("HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"), ok);
        let not_found = answer_to("HEAD /x HTTP/1.0\r\n\r\n");
        assert!(
            not_found.starts_with("HTTP/1.0 404 Not Found\r\n"),
            "{not_found}"
        );
        assert!(not_found.ends_with("Content-Length: 13\r\nConnection: close\r\n\r\n"));
        for request in [
            "GET /metricsx?x=1 HTTP/1.0\r\n\r\n",
            "GET * HTTP/1.0\r\n\r\n",
        ] {
            let reply = answer_to(request);
            assert!(reply.starts_with("HTTP/1.0 404 Not Found\r\n"), "{reply}");
        }
        for request in [
            "POST /metrics HTTP/1.0\r\n\r\n",
            "get /metrics HTTP/1.0\r\n\r\n",
        ] {
            let reply = answer_to(request);
            assert!(
                reply.starts_with("HTTP/1.0 405 Method Not Allowed\r\n"),
                "{reply}"
            );
            assert!(reply.contains("\r\nAllow: GET, HEAD\r\n"), "{reply}");
        }
        for request in [
            "garbage\r\n\r\n",
            "\r\n\r\n",
            "GET\r\n\r\n",
            "hello world\r\n\r\n",
            "GET metrics HTTP/1.0\r\n\r\n",
            "GET /metrics HTTP/1.0 x\r\n\r\n",
            "GET /metrics HTTP/10\r\n\r\n",
            "GET /metrics SIP/2.0\r\n\r\n",
            "G\u{1}T /metrics HTTP/1.0\r\n\r\n",
            "GET ftp://host/metrics HTTP/1.0\r\n\r\n",
        ] {
            let reply = answer_to(request);
            assert!(
                reply.starts_with("HTTP/1.0 400 Bad Request\r\n"),
                "{request:?}: {reply}"
            );
        }
        let reply = String::from_utf8(answer(b"\x16\x03\x01\xff\xfe\r\n\r\n", None)).unwrap();
        assert!(reply.starts_with("HTTP/1.0 400 Bad Request\r\n"), "{reply}");
        let reply = String::from_utf8(answer(&[b'a'; MAX_HEADER + 1], None)).unwrap();
        assert!(reply.starts_with("HTTP/1.0 431 "), "{reply}");
    }

    /// Serves `server` until `client` has read a whole answer (the server closes), at most
    /// `within`; the answer.
    fn serve_until_answered(
        server: &mut MetricsServer,
        client: &mut TcpStream,
        within: Duration,
    ) -> String {
        client.set_nonblocking(true).unwrap();
        let started = Instant::now();
        let mut reply = Vec::new();
        loop {
            if server.poll() {
                server.respond(Some("up 1\n"));
            } else {
                server.respond(None);
            }
            let mut buf = [0u8; 4096];
            match client.read(&mut buf) {
                Ok(0) => return String::from_utf8_lossy(&reply).into_owned(),
                Ok(n) => reply.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e} after {:?}", String::from_utf8_lossy(&reply)),
            }
            assert!(
                started.elapsed() < within,
                "no whole answer within {within:?}: {:?}",
                String::from_utf8_lossy(&reply)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn listener() -> (MetricsServer, SocketAddr) {
        let server = MetricsServer::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = server.local_addr().unwrap();
        (server, addr)
    }

    #[test]
    fn idle_partial_requests_make_room_for_a_scrape() {
        let (mut server, addr) = listener();
        let idle: Vec<TcpStream> = (0..64)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(b"GET /met").unwrap();
                c
            })
            .collect();
        for _ in 0..10 {
            server.poll();
            server.respond(None);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.conns.len(), MAX_CONNECTIONS);
        for _ in 0..3 {
            let mut scrape = TcpStream::connect(addr).unwrap();
            scrape.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
            let reply = serve_until_answered(&mut server, &mut scrape, Duration::from_secs(1));
            assert!(reply.starts_with("HTTP/1.0 200 OK\r\n"), "{reply}");
            assert!(reply.ends_with("\r\n\r\nup 1\n"), "{reply}");
        }
        // A scraper whose request comes after its connection is not the one closed for a
        // newer idle client.
        let mut slow = TcpStream::connect(addr).unwrap();
        server.poll();
        let mut newer = TcpStream::connect(addr).unwrap();
        newer.write_all(b"GET").unwrap();
        server.poll();
        slow.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        let reply = serve_until_answered(&mut server, &mut slow, Duration::from_secs(1));
        assert!(reply.starts_with("HTTP/1.0 200 OK\r\n"), "{reply}");
        // Those closed to make room are told why, never answered.
        for mut c in idle {
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut reply = Vec::new();
            let _ = c.read_to_end(&mut reply);
            let reply = String::from_utf8_lossy(&reply);
            assert!(
                reply.is_empty() || reply.starts_with("HTTP/1.0 503 "),
                "{reply}"
            );
        }
    }

    #[test]
    fn a_request_not_whole_in_time_is_closed() {
        let (mut server, addr) = listener();
        let mut partial = TcpStream::connect(addr).unwrap();
        partial.write_all(b"GET /metrics HTTP/1.0\r\nHost").unwrap();
        let started = Instant::now();
        let reply = serve_until_answered(&mut server, &mut partial, HEADER_TIMEOUT * 2);
        assert!(started.elapsed() >= HEADER_TIMEOUT);
        assert!(
            reply.starts_with("HTTP/1.0 408 Request Timeout\r\n"),
            "{reply}"
        );
        assert!(server.conns.is_empty());
        // A client that gives up before its request is whole frees its slot at once.
        let mut gone = TcpStream::connect(addr).unwrap();
        gone.write_all(b"GET /").unwrap();
        server.poll();
        assert_eq!(server.conns.len(), 1);
        drop(gone);
        std::thread::sleep(Duration::from_millis(20));
        server.poll();
        server.respond(None);
        assert!(server.conns.is_empty());
    }

    #[test]
    fn mac_table_counters_are_exposed_from_the_drops_snapshot() {
        let text = render(&MetricsInput {
            ports: json!([]),
            queues: json!([]),
            drops: json!({"total": 0, "reasons": {}, "mac_table_full": 4, "routed_flooded": 3}),
            srv6: json!({"sids": [], "policies": []}),
            groups: None,
        });
        assert!(
            text.contains("# TYPE ironclos_mac_table_full_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("\nironclos_mac_table_full_total 4\n"),
            "{text}"
        );
        assert!(
            text.contains("\nironclos_routed_flooded_total 3\n"),
            "{text}"
        );
    }

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
