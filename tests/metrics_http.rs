//! End to end: the metrics listener's HTTP handling on a running switch (switch mode, two
//! `net_null` ports without RX, no hugepages): clients that open connections and never finish
//! their request cannot lock scrapes out, query strings are ignored, HEAD is answered and a
//! malformed request line gets 400.

mod common;

use common::{TestDir, dpdk_lock, ironclos};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// What every exposition starts with: the first family's HELP line.
const BODY_START: &str = "# HELP ironclos_port_rx_packets_total ";

/// The switch under test, killed and reaped on drop.
struct Switch {
    child: Child,
    port: u16,
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP port nobody listens on now (the kernel's pick).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn start(dir: &TestDir) -> Switch {
    let port = free_port();
    let config = format!(
        "[switch]\nname = \"metrics-http\"\nrouter_mac = \"02:00:00:00:01:00\"\n\
         [dataplane]\nmode = \"switch\"\nworker_lcores = [1]\n{eal}\n\
         [control]\nmetrics = \"127.0.0.1:{port}\"\n\
         [[vlan]]\nid = 10\n\
         [[port]]\nname = \"a\"\ndevargs = \"net_null0,no-rx=1\"\nvlan = {{ mode = \"access\", id = 10 }}\n\
         [[port]]\nname = \"b\"\ndevargs = \"net_null1,no-rx=1\"\nvlan = {{ mode = \"access\", id = 10 }}\n",
        eal = dir.eal_toml()
    );
    let path = dir.file("switch.toml");
    std::fs::write(&path, config).expect("config");
    let child = ironclos()
        .args(["run", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.file("stderr.txt")).expect("stderr file"))
        .spawn()
        .expect("spawn ironclos");
    let mut switch = Switch { child, port };
    // The listener is bound before DPDK starts; it answers once the control loop runs.
    let started = Instant::now();
    loop {
        if let Ok(reply) = http(port, b"GET /metrics HTTP/1.0\r\n\r\n")
            && reply.starts_with("HTTP/1.0 200")
        {
            return switch;
        }
        if let Some(status) = switch.child.try_wait().expect("wait") {
            let stderr = std::fs::read_to_string(dir.file("stderr.txt")).unwrap_or_default();
            panic!("ironclos exited ({status}): {stderr}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no metrics answer within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `request` on a fresh connection and reads the reply until the server closes.
fn http(port: u16, request: &[u8]) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(request)?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// The reply's head (status line and headers) and body.
fn split(reply: &str) -> (&str, &str) {
    reply
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {reply:?}"))
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap_or_else(|| panic!("no Content-Length in {head}"))
        .parse()
        .expect("a length")
}

/// A whole scrape that must succeed: 200 and the exposition.
fn scrape(port: u16, request: &[u8]) -> String {
    let reply = http(port, request).unwrap_or_else(|e| {
        panic!(
            "{}: {e}",
            String::from_utf8_lossy(request)
                .lines()
                .next()
                .unwrap_or("")
        )
    });
    let (head, body) = split(&reply);
    assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(body.starts_with(BODY_START), "{body}");
    assert_eq!(content_length(head), body.len());
    body.to_owned()
}

#[test]
fn idle_partial_connections_cannot_lock_scrapes_out() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("metrics-slowloris");
    let s = start(&dir);
    // 64 clients send the start of a request line and nothing more, and keep it open.
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
            c.write_all(b"GET /met").expect("partial request");
            c
        })
        .collect();
    // Let the switch accept (and read) them all.
    std::thread::sleep(Duration::from_millis(300));
    // Well within any timeout, scrapes still get their answer, again and again.
    let started = Instant::now();
    for _ in 0..5 {
        scrape(s.port, b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the scrapes waited for the idle connections to time out: {:?}",
        started.elapsed()
    );
    // The idle clients are closed; none of them is ever answered as if its request were whole.
    for mut c in idle {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut reply = Vec::new();
        let _ = c.read_to_end(&mut reply);
        let reply = String::from_utf8_lossy(&reply);
        assert!(!reply.contains("200 OK"), "{reply}");
    }
}

#[test]
fn a_query_string_is_ignored() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("metrics-query");
    let s = start(&dir);
    // What Prometheus sends for a scrape config with `params: {x: ["1"]}`.
    scrape(
        s.port,
        b"GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n",
    );
    scrape(s.port, b"GET /?x=1&y=2 HTTP/1.0\r\n\r\n");
    scrape(s.port, b"GET /metrics? HTTP/1.0\r\n\r\n");
    // Only the query is ignored: another path is still not found.
    let reply = http(s.port, b"GET /metricsx?x=1 HTTP/1.0\r\n\r\n").unwrap();
    assert!(reply.starts_with("HTTP/1.0 404 Not Found\r\n"), "{reply}");
}

#[test]
fn head_is_answered_with_the_headers_of_get() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("metrics-head");
    let s = start(&dir);
    let reply = http(s.port, b"HEAD /metrics HTTP/1.0\r\n\r\n").unwrap();
    let (head, body) = split(&reply);
    assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert_eq!(body, "", "HEAD has no body");
    // The length of what GET answers (the counters of idle ports do not change its size).
    let get = scrape(s.port, b"GET /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(content_length(head), get.len());
    let reply = http(s.port, b"HEAD /nothing HTTP/1.0\r\n\r\n").unwrap();
    let (head, body) = split(&reply);
    assert!(head.starts_with("HTTP/1.0 404 Not Found\r\n"), "{head}");
    assert_eq!(body, "");
    // Other methods are not allowed, and told which are.
    let reply = http(
        s.port,
        b"POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
    )
    .unwrap();
    let (head, _) = split(&reply);
    assert!(
        head.starts_with("HTTP/1.0 405 Method Not Allowed\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\nAllow: GET, HEAD\r\n"), "{head}");
}

#[test]
fn a_malformed_request_line_gets_400() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("metrics-garbage");
    let s = start(&dir);
    for request in [
        &b"garbage\r\n\r\n"[..],
        b"hello world\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET metrics HTTP/1.0\r\n\r\n",
        b"GET /metrics HTTP/1.0 extra\r\n\r\n",
        b"GET /metrics FTP/1.0\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        b"G(T /metrics HTTP/1.0\r\n\r\n",
    ] {
        let reply = http(s.port, request).unwrap();
        assert!(
            reply.starts_with("HTTP/1.0 400 Bad Request\r\n"),
            "{}: {reply}",
            String::from_utf8_lossy(request)
        );
    }
    // The listener still serves.
    scrape(s.port, b"GET /metrics HTTP/1.0\r\n\r\n");
}
