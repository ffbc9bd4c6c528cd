//! End to end: the run-time control plane of a running switch (live mode, traffic flowing).
//!
//! Inputs are `net_pcap` files replayed forever (`infinite_rx=1`); outputs are `net_null`
//! ports (`no-rx=1`), whose TX never fails, so every frame the switch sends is counted by its
//! `tx_packets`. Three flows from three access ports, each alone on its input port:
//! - X (p0) to 10.7.0.5: no route at start; routed out of p6 once `ctl` adds one.
//! - E (p1), 16 flows to 10.1.0.0/16: ECMP group "spines" over p3 and p4.
//! - P (p7) to 10.8.0.5: SRv6 policy "pa" (out of p8), moved to "pb" (out of p4) and back.
//! - U (p2) to 10.2.0.9: via p5, never touched. No U frame may be lost whatever is updated:
//!   at the end p5's tx_packets must equal p2's rx_packets exactly.

mod common;

use common::frames::{ethernet, ipv6_udp};
use common::{TestDir, dpdk_lock, ironclos};
use control::pcap::PcapPacket;
use control::pcap::write_pcap_file;
use control::tracegen::{UdpTraceSpec, udp_trace};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ROUTER: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0];

fn trace(dir: &TestDir, name: &str, src_mac: u8, flows: u32, dst: [u8; 4]) -> PathBuf {
    let spec = UdpTraceSpec {
        flows,
        packets: 64,
        frame_len: 60,
        src_mac: [0x02, 0, 0, 0, 0, src_mac],
        dst_mac: ROUTER,
        src_ip: [10, 0, 10, 5],
        dst_ip: dst,
        ..Default::default()
    };
    let path = dir.file(name);
    write_pcap_file(&path, &udp_trace(&spec)).expect("write trace");
    path
}

fn config(dir: &TestDir, socket: &Path, metrics_port: u16) -> String {
    let x = trace(dir, "x.pcap", 0x0a, 1, [10, 7, 0, 5]);
    let e = trace(dir, "e.pcap", 0x0b, 16, [10, 1, 0, 9]);
    let u = trace(dir, "u.pcap", 0x0c, 1, [10, 2, 0, 9]);
    let p = trace(dir, "p.pcap", 0x0d, 1, [10, 8, 0, 5]);
    let input = |n: usize, p: &Path| {
        format!(
            "devargs = \"net_pcap{n},rx_pcap={},infinite_rx=1\"\nvlan = {{ mode = \"access\", id = 10 }}",
            p.display()
        )
    };
    let routed = |n: usize, ip: &str| {
        format!("devargs = \"net_null{n},no-rx=1\"\nipv4 = [\"{ip}\"]\nspeed_gbps = 100")
    };
    let routed6 = |n: usize, ip: &str, ip6: &str| format!("{}\nipv6 = [\"{ip6}\"]", routed(n, ip));
    let ports = [
        input(0, &x),
        input(1, &e),
        input(2, &u),
        routed6(0, "10.255.0.1/31", "2001:db8:ff::1/127"),
        routed6(1, "10.255.0.3/31", "2001:db8:ff::3/127"),
        routed(2, "10.255.0.5/31"),
        routed(3, "10.255.0.7/31"),
        input(3, &p),
        routed6(4, "10.255.0.9/31", "2001:db8:ff::5/127"),
    ];
    let mut text = format!(
        r#"[switch]
name = "ctl-test"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[control]
socket = "{socket}"
metrics = "127.0.0.1:{metrics_port}"

[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]

[[nexthop_group]]
name = "spines"
members = [{{ port = "p3", via = "10.255.0.0" }}, {{ port = "p4", via = "10.255.0.2" }}]

[[route]]
prefix = "10.1.0.0/16"
group = "spines"

[[route]]
prefix = "10.2.0.0/16"
via = "10.255.0.4"
port = "p5"

[[neighbor]]
ip = "10.255.0.0"
mac = "02:00:00:00:51:01"
port = "p3"

[[neighbor]]
ip = "10.255.0.2"
mac = "02:00:00:00:51:02"
port = "p4"

[[neighbor]]
ip = "10.255.0.4"
mac = "02:00:00:00:51:03"
port = "p5"

[[neighbor]]
ip = "2001:db8:ff::4"
mac = "02:00:00:00:51:08"
port = "p8"

[[neighbor]]
ip = "2001:db8:ff::2"
mac = "02:00:00:00:51:02"
port = "p4"

[[route]]
prefix = "fcbb:bb00:100::/48"
via = "2001:db8:ff::4"
port = "p8"

[[route]]
prefix = "fcbb:bb00:200::/48"
via = "2001:db8:ff::2"
port = "p4"

[[srv6.policy]]
name = "pa"
prefix = "10.8.0.0/16"
mode = "encaps.red"
segments = ["fcbb:bb00:100::"]

[[srv6.policy]]
name = "pb"
prefix = "10.9.0.0/16"
mode = "encaps.red"
segments = ["fcbb:bb00:200::"]
"#,
        eal = dir.eal_toml(),
        socket = socket.display(),
    );
    for (i, body) in ports.iter().enumerate() {
        text.push_str(&format!("\n[[port]]\nname = \"p{i}\"\n{body}\n"));
    }
    text
}

/// The switch under test; stopped (SIGINT) and reaped on drop.
struct Switch {
    child: Option<Child>,
    socket: PathBuf,
}

impl Switch {
    fn stop(&mut self) -> Output {
        let child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let started = Instant::now();
        let mut child = child;
        while child.try_wait().expect("wait").is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().expect("output")
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `ironclos ctl --socket S args...`: (exit status, stdout, stderr).
fn ctl_with(bin: &Path, socket: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .output()
        .expect("run ctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ironclos"))
}

impl Switch {
    /// A ctl command that must succeed; its text output.
    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = ctl_with(&bin(), &self.socket, args);
        assert_eq!(code, 0, "ctl {args:?} failed: {err}{out}");
        out
    }

    /// A ctl command with `--json` that must succeed; its result.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ctl {args:?}: {e}: {out}"))
    }

    /// A ctl command that must fail with exit 1 and an error naming `expected`.
    fn refused(&self, args: &[&str], expected: &str) {
        let (code, out, err) = ctl_with(&bin(), &self.socket, args);
        assert_eq!(code, 1, "ctl {args:?} should fail: {out}{err}");
        assert!(
            err.contains(expected),
            "ctl {args:?}: `{err}` lacks `{expected}`"
        );
    }

    fn port(&self, name: &str) -> Value {
        self.json(&["show", "ports"])
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("port {name}"))
    }

    fn tx(&self, name: &str) -> u64 {
        self.port(name)["tx_packets"].as_u64().expect("tx")
    }

    fn drops(&self, reason: &str) -> u64 {
        self.json(&["show", "drops"])["reasons"][reason]
            .as_u64()
            .expect("reason")
    }

    /// Waits until `port`'s tx_packets grows (traffic is reaching it).
    fn wait_tx_growth(&self, port: &str) {
        let before = self.tx(port);
        let started = Instant::now();
        while self.tx(port) == before {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{port} sends nothing"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asserts `port` sends nothing for a while (after in-flight frames settle).
    fn assert_tx_stopped(&self, port: &str) {
        std::thread::sleep(Duration::from_millis(100));
        let before = self.tx(port);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(self.tx(port), before, "{port} still sends");
    }
}

fn start(dir: &TestDir, socket: &Path, metrics_port: u16) -> Switch {
    start_with(dir, socket, &config(dir, socket, metrics_port))
}

fn start_with(dir: &TestDir, socket: &Path, config_text: &str) -> Switch {
    let config_path = dir.file("switch.toml");
    std::fs::write(&config_path, config_text).expect("config");
    let child = ironclos()
        .args(["run", "--config"])
        .arg(&config_path)
        .arg("--stats-json")
        .arg(dir.file("stats.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ironclos");
    let switch = Switch {
        child: Some(child),
        socket: socket.to_owned(),
    };
    let started = Instant::now();
    loop {
        let (code, _, _) = ctl_with(&bin(), socket, &["show", "version"]);
        if code == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the switch did not answer on its socket"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    switch
}

/// Sends raw bytes on a fresh connection and reads one reply line.
fn raw(socket: &Path, bytes: &[u8]) -> Value {
    let mut stream = UnixStream::connect(socket).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(bytes).expect("send");
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).expect("reply");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("reply `{line}`: {e}"))
}

fn scrape(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("metrics");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

/// One sample: metric name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// Parses Prometheus text exposition strictly enough to catch malformed output: every sample
/// line is `name{label="value",...} number` with a `# TYPE` for its family before it.
fn parse_prometheus(text: &str) -> Vec<Sample> {
    let mut typed = std::collections::HashSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().unwrap().to_owned();
            let kind = parts.next().expect("type");
            assert!(
                ["counter", "gauge", "untyped", "histogram", "summary"].contains(&kind),
                "{line}"
            );
            typed.insert(name);
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        assert!(!line.starts_with('#'), "stray comment {line}");
        let (series, value) = line.rsplit_once(' ').expect("value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value in {line}"));
        let (name, labels) = match series.split_once('{') {
            None => (series.to_owned(), Vec::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                let labels = body
                    .split("\",")
                    .map(|pair| {
                        let (k, v) = pair.split_once("=\"").expect("label=\"value\"");
                        (k.to_owned(), v.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels)
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{name}"
        );
        assert!(typed.contains(&name), "{name} has no # TYPE before it");
        samples.push((name, labels, value));
    }
    samples
}

fn sample(samples: &[Sample], name: &str, label: (&str, &str)) -> f64 {
    samples
        .iter()
        .find(|(n, l, _)| n == name && l.iter().any(|(k, v)| k == label.0 && v == label.1))
        .unwrap_or_else(|| panic!("{name}{{{}=\"{}\"}} missing", label.0, label.1))
        .2
}

fn routes(s: &Switch) -> Vec<String> {
    s.json(&["show", "routes"])["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prefix"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn ctl_drives_a_running_switch_without_losing_unaffected_traffic() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("ctl");
    let socket = dir.file("ctl.sock");
    let metrics_port = 19_000 + (std::process::id() % 1000) as u16;
    let mut s = start(&dir, &socket, metrics_port);

    // The socket is the switch's own, mode 0600.
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // ---- show, text and JSON ----
    let version = s.json(&["show", "version"]);
    assert_eq!(version["protocol"], 1);
    assert_eq!(version["switch"], "ctl-test");
    assert!(s.ok(&["show", "version"]).contains("switch ctl-test"));
    let ports = s.json(&["show", "ports"]);
    assert_eq!(ports.as_array().unwrap().len(), 9);
    for p in ports.as_array().unwrap() {
        assert_eq!(p["admin"], "up");
        assert_eq!(p["link"], "up", "{p}");
    }
    let text = s.ok(&["show", "ports"]);
    assert!(text.starts_with("PORT"), "{text}");
    assert_eq!(text.lines().count(), 10, "{text}");
    s.wait_tx_growth("p5");
    s.wait_tx_growth("p3");
    s.wait_tx_growth("p4");
    assert_eq!(s.tx("p6"), 0, "X has no route yet");
    let no_route = s.drops("no_route");
    assert!(no_route > 0, "X is dropped for lack of a route");
    assert!(s.ok(&["show", "drops"]).contains("no_route"));
    let queues = s.json(&["show", "queues", "p5"]);
    assert_eq!(queues.as_array().unwrap().len(), 8, "eight TCs");
    assert!(
        queues[0]["enqueued_packets"].as_u64().unwrap() > 0,
        "{queues}"
    );
    assert!(s.ok(&["show", "queues"]).contains("ECN(kmin/kmax/pmax)"));
    let srv6 = s.json(&["show", "srv6"]);
    assert_eq!(srv6["sids"], json!([]));
    assert_eq!(srv6["policies"][0]["name"], "pa");
    assert_eq!(srv6["policies"][1]["segments"], json!(["fcbb:bb00:200::"]));
    assert!(s.ok(&["show", "srv6"]).contains("encaps.red"));
    let nexthops = s.json(&["show", "nexthops"]);
    assert!(
        nexthops
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["ip"] == "10.255.0.4"
                && n["dev"] == "p5"
                && n["mac"] == "02:00:00:00:51:03"
                && n["state"] == "static"),
        "{nexthops}"
    );
    let table = s.ok(&["show", "nexthops"]);
    assert!(
        table.lines().next().is_some_and(|h| h.contains("STATE"))
            && table
                .lines()
                .any(|l| l.contains("10.255.0.4") && l.contains("static")),
        "{table}"
    );
    assert!(s.ok(&["show", "neighbors"]).contains("02:00:00:00:51:03"));
    let before_routes = routes(&s);
    assert!(before_routes.contains(&"10.1.0.0/16".to_owned()));
    assert!(s.ok(&["show", "routes"]).contains("group spines"));
    let macs = s.json(&["show", "macs"]);
    assert!(
        macs["macs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mac"] == "02:00:00:00:00:0c" && m["port"] == "p2" && m["static"] == false),
        "U's source is learned on p2: {macs}"
    );
    assert!(s.ok(&["show", "macs"]).contains("learned"));

    // ---- a route added at run time carries X; deleted, X stops ----
    s.ok(&[
        "neighbor",
        "add",
        "10.255.0.6",
        "--dev",
        "p6",
        "--mac",
        "02:00:00:00:66:01",
    ]);
    let out = s.ok(&[
        "route",
        "add",
        "10.7.0.0/16",
        "--via",
        "10.255.0.6",
        "--dev",
        "p6",
    ]);
    assert!(out.contains("1 update(s) applied"), "{out}");
    s.wait_tx_growth("p6");
    let shown = s.json(&["show", "routes", "--vrf", "default"]);
    assert!(
        shown["routes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["prefix"] == "10.7.0.0/16" && r["via"] == "10.255.0.6" && r["dev"] == "p6"),
        "{shown}"
    );
    s.ok(&["route", "del", "10.7.0.0/16"]);
    s.assert_tx_stopped("p6");
    assert!(s.drops("no_route") > no_route);
    s.refused(&["route", "del", "10.7.0.0/16"], "no route 10.7.0.0/16");
    s.ok(&["neighbor", "del", "10.255.0.6", "--dev", "p6"]);
    // The config's rules: a neighbour is not the router MAC, and a `via` is a host of its
    // subnet (not the network or broadcast address of vlan10's 10.0.10.0/24).
    s.refused(
        &[
            "neighbor",
            "add",
            "10.255.0.6",
            "--dev",
            "p6",
            "--mac",
            "02:00:00:00:01:00",
        ],
        "02:00:00:00:01:00 is the switch's own router_mac",
    );
    s.refused(
        &[
            "neighbor",
            "add",
            "10.0.10.255",
            "--dev",
            "vlan10",
            "--mac",
            "02:00:00:00:66:01",
        ],
        "10.0.10.255 is the subnet's broadcast address",
    );
    s.refused(
        &[
            "ecmp",
            "add",
            "spines",
            "--via",
            "10.0.10.0",
            "--dev",
            "vlan10",
        ],
        "10.0.10.0 is the subnet's network address",
    );
    assert!(
        !s.ok(&["show", "nexthops"]).contains("10.0.10.255"),
        "nothing was added"
    );

    // ---- ECMP: a port taken down fails over to the other member, and back ----
    let groups = s.json(&["show", "groups"]);
    assert_eq!(
        (groups[0]["name"].clone(), groups[0]["mode"].clone()),
        (json!("spines"), json!("hash"))
    );
    let members = groups[0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    for m in members {
        assert!(
            m["packets"].as_u64().unwrap() > 0,
            "E uses both members: {groups}"
        );
    }
    assert_eq!(
        members[0]["buckets"].as_u64().unwrap() + members[1]["buckets"].as_u64().unwrap(),
        256
    );
    // The imbalance is the busier member's bytes over the mean of the two.
    let bytes: Vec<f64> = members
        .iter()
        .map(|m| m["bytes"].as_u64().unwrap() as f64)
        .collect();
    let expected = bytes[0].max(bytes[1]) / ((bytes[0] + bytes[1]) / 2.0);
    let imbalance = groups[0]["imbalance"].as_f64().unwrap();
    assert!((imbalance - expected).abs() < 1e-9, "{groups}");
    assert!((1.0..2.0).contains(&imbalance), "{groups}");
    assert!(s.ok(&["show", "groups"]).contains("imbalance "));
    s.ok(&["port", "p3", "down"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(s.port("p3")["admin"], "down");
    s.assert_tx_stopped("p3");
    s.wait_tx_growth("p4");
    let groups = s.json(&["show", "groups"]);
    let members = groups[0]["members"].as_array().unwrap();
    assert_eq!(
        (members[0]["dev"].clone(), members[0]["up"].clone()),
        (json!("p3"), json!(false))
    );
    assert_eq!(members[1]["buckets"], 256, "p4 owns every bucket: {groups}");
    assert!(
        members[1]["port_tx_packets"].as_u64().unwrap() > 0,
        "{groups}"
    );
    assert!(s.ok(&["show", "groups"]).contains("down"));
    s.ok(&["port", "p3", "up"]);
    s.wait_tx_growth("p3");
    // Removing the member from the group has the same effect; adding it back restores it.
    s.ok(&[
        "ecmp",
        "del",
        "spines",
        "--via",
        "10.255.0.0",
        "--dev",
        "p3",
    ]);
    s.assert_tx_stopped("p3");
    s.refused(
        &[
            "ecmp",
            "del",
            "spines",
            "--via",
            "10.255.0.2",
            "--dev",
            "p4",
        ],
        "without members",
    );
    // Weights as in the config: 1..=65535.
    s.refused(
        &[
            "ecmp",
            "add",
            "spines",
            "--via",
            "10.255.0.0",
            "--dev",
            "p3",
            "--weight",
            "65536",
        ],
        "field `weight` 65536 is out of range 1..=65535",
    );
    s.ok(&[
        "ecmp",
        "add",
        "spines",
        "--via",
        "10.255.0.0",
        "--dev",
        "p3",
        "--weight",
        "3",
    ]);
    s.wait_tx_growth("p3");
    let groups = s.json(&["show", "groups"]);
    let p3 = groups[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["dev"] == "p3")
        .cloned()
        .unwrap();
    assert_eq!(p3["weight"], 3);
    assert_eq!(p3["buckets"], 192, "weight 3 of 4 owns 3/4 of 256 buckets");

    // ---- move P from SRv6 policy pa to pb and back ----
    let policy = |name: &str| {
        s.json(&["show", "srv6"])["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["packets"]
            .as_u64()
            .unwrap()
    };
    let wait_policy_growth = |name: &str| {
        let before = policy(name);
        let started = Instant::now();
        while policy(name) == before {
            assert!(started.elapsed() < Duration::from_secs(10), "{name} unused");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_policy_growth("pa");
    assert_eq!(policy("pb"), 0, "nothing goes to 10.9.0.0/16");
    s.wait_tx_growth("p8");
    s.ok(&["route", "add", "10.8.0.0/16", "--policy", "pb"]);
    wait_policy_growth("pb");
    s.assert_tx_stopped("p8");
    std::thread::sleep(Duration::from_millis(50));
    let pa = policy("pa");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(policy("pa"), pa, "P left policy pa");
    s.ok(&["route", "add", "10.8.0.0/16", "--policy", "pa"]);
    wait_policy_growth("pa");
    let shown = s.json(&["show", "routes"]);
    assert!(
        shown["routes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["prefix"] == "10.8.0.0/16" && r["policy"] == "pa"),
        "{shown}"
    );

    // Or give the policy itself a new path: pa's segment now leads out of p4, then back.
    s.ok(&["policy", "set", "pa", "--segments", "fcbb:bb00:200::"]);
    s.assert_tx_stopped("p8");
    assert_eq!(
        s.json(&["show", "srv6"])["policies"][0]["segments"],
        json!(["fcbb:bb00:200::"])
    );
    let pa = policy("pa");
    wait_policy_growth("pa");
    assert!(policy("pa") > pa, "P still counted by pa");
    // One SID more than an SRH can list (Hdr Ext Len: 2 * 128 > 255).
    let too_many = (1..=128)
        .map(|i| format!("fc00::{i:x}"))
        .collect::<Vec<_>>()
        .join(",");
    s.refused(
        &[
            "policy",
            "set",
            "pa",
            "--mode",
            "encaps",
            "--segments",
            &too_many,
        ],
        "`segments`: 128 segments: give 1 to 127",
    );
    s.ok(&["policy", "set", "pa", "--segments", "fcbb:bb00:100::"]);
    s.wait_tx_growth("p8");

    // ---- a batch file and a raw request ----
    let batch = dir.file("batch.json");
    std::fs::write(
        &batch,
        r#"[{"op":"add_route","prefix":"10.10.0.0/16","blackhole":true},
            {"op":"add_route","prefix":"10.11.0.0/16","group":"spines"}]"#,
    )
    .unwrap();
    assert!(
        s.ok(&["batch", batch.to_str().unwrap()])
            .contains("2 update(s) applied")
    );
    let r = routes(&s);
    assert!(r.contains(&"10.10.0.0/16".to_owned()) && r.contains(&"10.11.0.0/16".to_owned()));
    std::fs::write(
        &batch,
        r#"[{"op":"del_route","prefix":"10.10.0.0/16"},{"op":"del_route","prefix":"10.11.0.0/16"}]"#,
    )
    .unwrap();
    assert_eq!(
        s.json(&["batch", batch.to_str().unwrap()]),
        json!({"applied": 2})
    );
    let raw_reply = s.ok(&["raw", r#"{"v":1,"id":"x","cmd":"show_drops"}"#]);
    let raw_reply: Value = serde_json::from_str(&raw_reply).unwrap();
    assert_eq!(
        (raw_reply["id"].clone(), raw_reply["ok"].clone()),
        (json!("x"), json!(true))
    );
    // One request a line, one reply a line: every reply is printed, in order.
    let raw_replies = s.ok(&[
        "raw",
        "{\"v\":1,\"id\":1,\"cmd\":\"hello\"}\n\n{\"v\":1,\"id\":2,\"cmd\":\"show_drops\"}\n",
    ]);
    let raw_replies: Vec<Value> = raw_replies
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(
        raw_replies
            .iter()
            .map(|r| (r["id"].clone(), r["ok"].clone()))
            .collect::<Vec<_>>(),
        [(json!(1), json!(true)), (json!(2), json!(true))]
    );
    // A refused request exits 1 with the reason on stderr, its reply on stdout; the lines
    // after it are still sent (each line is a request of its own).
    let (code, out, err) = ctl_with(
        &bin(),
        &socket,
        &["raw", "garbage\n{\"v\":1,\"id\":3,\"cmd\":\"hello\"}"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("error: request is not valid JSON"), "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["ok"], json!(false));
    assert_eq!(
        (lines[1]["id"].clone(), lines[1]["ok"].clone()),
        (json!(3), json!(true))
    );
    // A blank request, which the switch would skip unanswered, is a usage error at once.
    let started = Instant::now();
    let (code, out, err) = ctl_with(&bin(), &socket, &["raw", "   "]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("the request is blank"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );

    // ---- MACs, ECN ----
    s.ok(&["mac", "add", "10", "02:00:00:00:77:01", "p0"]);
    let macs = s.json(&["show", "macs"]);
    assert!(
        macs["macs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mac"] == "02:00:00:00:77:01" && m["static"] == true)
    );
    s.ok(&["mac", "del", "10", "02:00:00:00:77:01"]);
    s.refused(&["mac", "del", "10", "02:00:00:00:77:01"], "no MAC");
    s.ok(&[
        "ecn", "p5", "3", "--kmin", "1000", "--kmax", "2000", "--pmax", "0.5",
    ]);
    let q = s.json(&["show", "queues", "p5"]);
    assert_eq!(
        q[3]["ecn"],
        json!({"kmin": 1000, "kmax": 2000, "pmax": 0.5})
    );
    s.refused(
        &["ecn", "p5", "3", "--kmin", "3000", "--kmax", "2000"],
        "kmin 3000 is above kmax 2000",
    );
    s.ok(&["ecn", "p5", "3", "--off"]);
    assert_eq!(s.json(&["show", "queues", "p5"])[3]["ecn"], Value::Null);

    // ---- the P4 form ----
    s.ok(&[
        "table_add",
        "ipv4_lpm",
        "blackhole",
        "0",
        "10.99.0.0/16",
        "=>",
    ]);
    s.ok(&[
        "table_add",
        "ipv6_lpm",
        "blackhole",
        "default",
        "2001:db8:9::/48",
        "=>",
    ]);
    s.ok(&[
        "table_add",
        "mac_table",
        "l2_forward",
        "10",
        "02:00:00:00:77:02",
        "=>",
        "p1",
    ]);
    let dump = s.ok(&["table_dump", "ipv4_lpm"]);
    assert!(
        dump.contains("ipv4_lpm blackhole 0 10.99.0.0/16 =>"),
        "{dump}"
    );
    assert!(
        dump.contains("ipv4_lpm set_ecmp_group 0 10.1.0.0/16 => 0"),
        "{dump}"
    );
    let dump6 = s.json(&["table_dump", "ipv6_lpm"]);
    assert!(
        dump6
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["match"] == json!(["0", "2001:db8:9::/48"]))
    );
    assert!(
        s.ok(&["table_dump", "mac_table"])
            .contains("mac_table l2_forward 10 02:00:00:00:77:02 => 1")
    );
    s.refused(
        &[
            "table_add",
            "ipv4_lpmx",
            "blackhole",
            "0",
            "10.99.0.0/16",
            "=>",
        ],
        "unknown table `ipv4_lpmx`",
    );
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "l2_forward",
            "0",
            "10.99.0.0/16",
            "=>",
            "1",
        ],
        "has no action `l2_forward`",
    );
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "set_nexthop",
            "0",
            "10.99.0.0/16",
            "=>",
        ],
        "takes 1 parameters",
    );
    s.refused(
        &[
            "table_add",
            "ipv6_lpm",
            "blackhole",
            "0",
            "10.99.0.0/16",
            "=>",
        ],
        "not an IPv6 prefix",
    );
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "set_nexthop",
            "0",
            "10.99.0.0/16",
            "=>",
            "99",
        ],
        "nexthop 99 does not exist",
    );
    s.ok(&["table_delete", "ipv4_lpm", "0", "10.99.0.0/16"]);
    s.ok(&["table_delete", "ipv6_lpm", "0", "2001:db8:9::/48"]);
    s.ok(&["table_delete", "mac_table", "10", "02:00:00:00:77:02"]);
    assert_eq!(routes(&s), before_routes, "everything added was deleted");

    // ---- malformed requests: errors naming the problem, nothing changed, still forwarding ----
    let table_before = s.ok(&["table_dump", "ipv4_lpm"]);
    let cases: [(&[u8], &str); 8] = [
        (b"garbage\n", "not valid JSON"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"show_po\n", "not valid JSON"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"frobnicate\"}\n", "unknown command `frobnicate`"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"show_routes\",\"limit\":\"x\"}\n", "must be a non-negative integer"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"table_add\",\"table\":\"nope\",\"action\":\"a\",\"match\":[],\"params\":[]}\n", "unknown table `nope`"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"update\",\"updates\":[{\"op\":\"add_route\",\"prefix\":\"10.98.0.0/16\",\"blackhole\":true},{\"op\":\"add_route\",\"prefix\":\"10.8.1.0/24\",\"group\":\"nosuch\"}]}\n", "updates[1]: no ECMP group `nosuch`"),
        (b"{\"v\":1,\"id\":5,\"cmd\":\"update\",\"updates\":[{\"op\":\"add_route\",\"prefix\":\"10.98.0.0/16\",\"blackhole\":true},{\"op\":\"del_route\",\"prefix\":\"10.0.10.0/24\"}]}\n", "updates[1]: 10.0.10.0/24 belongs to an interface address"),
        (b"{\"v\":9,\"id\":5,\"cmd\":\"hello\"}\n", "version 9 is not supported"),
    ];
    for (bytes, expected) in cases {
        let reply = raw(&socket, bytes);
        assert_eq!(reply["ok"], false, "{reply}");
        let error = reply["error"].as_str().unwrap();
        assert!(error.contains(expected), "`{error}` lacks `{expected}`");
    }
    // A huge request: refused and the connection closed, the switch unharmed.
    let mut huge = b"{\"v\":1,\"id\":1,\"cmd\":\"hello\",\"pad\":\"".to_vec();
    huge.resize(9 << 20, b'a');
    let mut stream = UnixStream::connect(&socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = stream.write_all(&huge);
    let mut reply = String::new();
    let _ = BufReader::new(&stream).read_line(&mut reply);
    assert!(reply.contains("request longer than"), "{reply}");
    drop(stream);
    assert_eq!(
        s.ok(&["table_dump", "ipv4_lpm"]),
        table_before,
        "nothing half-applied"
    );
    assert!(!routes(&s).contains(&"10.98.0.0/16".to_owned()));
    s.wait_tx_growth("p5");

    // ---- a reader that stops early (`ctl show ports | head -1`) is no crash ----
    let mut child = Command::new(bin())
        .args(["ctl", "--socket"])
        .arg(&socket)
        .args(["show", "ports"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // ---- metrics: valid exposition that agrees with ctl ----
    let rx_before = s.port("p2")["rx_packets"].as_u64().unwrap();
    let rx_bytes_before = s.port("p2")["rx_bytes"].as_u64().unwrap();
    let drops_before = s.drops("no_route");
    let samples = parse_prometheus(&scrape(metrics_port));
    let rx_after = s.port("p2")["rx_packets"].as_u64().unwrap();
    let rx_bytes_after = s.port("p2")["rx_bytes"].as_u64().unwrap();
    let drops_after = s.drops("no_route");
    // The device's byte counter: p2 receives 60-byte frames only.
    let rx_bytes = sample(&samples, "ironclos_port_rx_bytes_total", ("port", "p2")) as u64;
    assert!(
        (rx_bytes_before..=rx_bytes_after).contains(&rx_bytes),
        "{rx_bytes_before} <= {rx_bytes} <= {rx_bytes_after}"
    );
    assert!(rx_bytes > 0 && rx_bytes.is_multiple_of(60), "{rx_bytes}");
    assert_eq!(
        sample(&samples, "ironclos_port_rx_missed_total", ("port", "p2")),
        0.0
    );
    let rx = sample(&samples, "ironclos_port_rx_packets_total", ("port", "p2")) as u64;
    assert!(
        (rx_before..=rx_after).contains(&rx),
        "{rx_before} <= {rx} <= {rx_after}"
    );
    let nr = sample(&samples, "ironclos_drops_total", ("reason", "no_route")) as u64;
    assert!((drops_before..=drops_after).contains(&nr));
    // 60-byte frames never need fragmenting: the family is there, at zero.
    for kind in ["packets", "fragments"] {
        assert_eq!(
            sample(&samples, "ironclos_fragmentation_total", ("kind", kind)),
            0.0
        );
    }
    assert_eq!(
        sample(&samples, "ironclos_port_admin_up", ("port", "p3")),
        1.0
    );
    // p5's speed_gbps = 100: the traffic manager's line rate, whatever the null device says.
    assert_eq!(s.port("p5")["line_rate_mbps"], 100_000);
    // No `mtu` in the config: routed packets are held to the device's own, ethdev's 1500.
    assert_eq!(s.port("p5")["mtu"], 1500);
    assert_eq!(
        sample(&samples, "ironclos_port_mtu", ("port", "p5")),
        1500.0
    );
    let speed = s.port("p5")["speed_mbps"].as_f64().unwrap();
    assert_eq!(
        sample(&samples, "ironclos_port_speed_mbps", ("port", "p5")),
        speed
    );
    let shares: f64 = samples
        .iter()
        .filter(|(n, l, _)| {
            n == "ironclos_ecmp_member_share" && l.contains(&("group".into(), "spines".into()))
        })
        .map(|(_, _, v)| v)
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "shares sum to 1: {shares}");
    assert!(
        samples
            .iter()
            .any(|(n, _, v)| n == "ironclos_ecmp_member_packets_total" && *v > 0.0)
    );
    // The imbalance gauge follows from the byte counters of the same scrape.
    let member_bytes: Vec<f64> = samples
        .iter()
        .filter(|(n, l, _)| {
            n == "ironclos_ecmp_member_bytes_total"
                && l.contains(&("group".into(), "spines".into()))
        })
        .map(|(_, _, v)| *v)
        .collect();
    assert_eq!(member_bytes.len(), 2);
    let mean = member_bytes.iter().sum::<f64>() / 2.0;
    let busiest = member_bytes.iter().copied().fold(0.0, f64::max);
    let imbalance = sample(&samples, "ironclos_ecmp_imbalance", ("group", "spines"));
    assert!((imbalance - busiest / mean).abs() < 1e-9, "{imbalance}");
    assert_eq!(
        sample(
            &samples,
            "ironclos_ecmp_flowlets_total",
            ("group", "spines")
        ),
        0.0,
        "a hashing group starts no flowlets"
    );

    // ---- another user is refused ----
    let nobody_bin = dir.file("ironclos-copy");
    std::fs::copy(bin(), &nobody_bin).unwrap();
    std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&nobody_bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let as_nobody = || {
        Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(&nobody_bin)
            .args(["ctl", "--socket"])
            .arg(&socket)
            .args(["show", "ports"])
            .output()
            .expect("setpriv")
    };
    let out = as_nobody();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "mode 0600 keeps nobody out"
    );
    // Even with the file mode opened up, the peer-credential check refuses the connection.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = as_nobody();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("permission denied: uid 65534 is neither the switch's user"),
        "{err}"
    );
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();

    // ---- reload: the config file's difference applies; structural changes are refused ----
    let config_path = dir.file("switch.toml");
    let original = std::fs::read_to_string(&config_path).unwrap();
    let reload = || {
        let out = Command::new(bin())
            .args(["reload", "--socket"])
            .arg(&socket)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let with_x = format!(
        "{original}\n[[route]]\nprefix = \"10.7.0.0/16\"\nvia = \"10.255.0.6\"\nport = \"p6\"\n\n\
         [[neighbor]]\nip = \"10.255.0.6\"\nmac = \"02:00:00:00:66:01\"\nport = \"p6\"\n"
    );
    std::fs::write(&config_path, &with_x).unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("2 update(s) applied (add_neighbor 1, add_route 1)"),
        "{out}"
    );
    assert!(
        out.starts_with(&format!("reloaded {}:", config_path.display())),
        "{out}"
    );
    s.wait_tx_growth("p6");
    std::fs::write(
        &config_path,
        with_x.replace("net_null3,no-rx=1", "net_null9,no-rx=1"),
    )
    .unwrap();
    let (code, _, err) = reload();
    assert_eq!(code, Some(1));
    assert!(
        err.contains("need a restart") && err.contains("[[port]]"),
        "{err}"
    );
    s.wait_tx_growth("p6");
    std::fs::write(&config_path, &original).unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("2 update(s) applied (del_neighbor 1, del_route 1)"),
        "{out}"
    );
    s.assert_tx_stopped("p6");

    // ---- clients that connect and never send cannot lock the socket ----
    // Right after a client closed its connection (answered, then dropped: well within a
    // tick): the server reaps closed connections before it accepts new ones, so that one
    // holds no slot the 32 idle ones need.
    assert_eq!(
        raw(&socket, b"{\"v\":1,\"id\":1,\"cmd\":\"hello\"}\n")["ok"],
        json!(true)
    );
    let idle: Vec<UnixStream> = (0..32)
        .map(|_| UnixStream::connect(&socket).expect("connect"))
        .collect();
    s.refused(&["show", "ports"], "busy: 32 connections are open already");
    std::thread::sleep(Duration::from_millis(10_500));
    // Idle past 10 s: the longest-idle one makes room and is told why.
    s.ok(&["show", "ports"]);
    let told: Vec<String> = idle
        .into_iter()
        .filter_map(|stream| {
            stream
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut line = String::new();
            BufReader::new(stream).read_line(&mut line).ok()?;
            (!line.is_empty()).then_some(line)
        })
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    // (Not told `busy`, whose text says "none idle for 10 s": the 32 all had a slot.)
    assert!(
        told[0].contains("closing: idle for 10 s while every connection slot is taken"),
        "{}",
        told[0]
    );

    // ---- stop: U lost nothing through all of the above ----
    let out = s.stop();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!socket.exists(), "the socket is removed at exit");
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.file("stats.json")).unwrap()).unwrap();
    let port = |name: &str| {
        stats["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap()
    };
    let u_in = port("p2")["rx_packets"].as_u64().unwrap();
    let u_out = port("p5")["tx_packets"].as_u64().unwrap();
    assert!(u_in > 10_000, "U flowed: {u_in}");
    assert_eq!(u_out, u_in, "every U frame received on p2 left p5");
}

#[test]
fn an_unsafe_socket_path_is_refused_at_start() {
    let dir = TestDir::new("ctl-perm");
    let open_dir = dir.file("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let write = |socket: &Path| {
        let text = format!(
            "[switch]\nname = \"perm\"\n[dataplane]\nmode = \"io\"\n{}\n[control]\nsocket = \"{}\"\n[[port]]\nname = \"p0\"\ndevargs = \"net_null0\"\n",
            dir.eal_toml(),
            socket.display()
        );
        let path = dir.file("perm.toml");
        std::fs::write(&path, text).unwrap();
        path
    };
    let run = |config: &Path| {
        let out = ironclos()
            .args(["run", "--duration", "1", "--config"])
            .arg(config)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A directory every user may write to (no sticky bit): someone could swap the socket.
    let (code, err) = run(&write(&open_dir.join("s.sock")));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has mode 0777"), "{err}");
    // A path that is not a socket.
    let file = dir.file("not-a-socket");
    std::fs::write(&file, "x").unwrap();
    let (code, err) = run(&write(&file));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exists and is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x", "left alone");
}

/// A switch for the run-time SIDs, policies, groups and PFC thresholds:
/// - S (p0, routed) to fcbb:bb00:100:200::: no SID and no route at start (dropped); a uN SID
///   fcbb:bb00:100::/48 added at run time shifts it to fcbb:bb00:200:: (routed out of p1);
///   a uA with the same prefix sends it to its adjacency on p2 instead.
/// - Q (p6) to 10.8.0.5: no route at start; a policy created at run time (segment
///   fcbb:bb00:300::, routed out of p2) takes it.
/// - R (p7), 16 flows to 10.9.0.0/16: no route at start; a group created at run time over
///   p4 and p5 takes it.
///
/// - L (p9, access VLAN 40, alone) to an unknown MAC: flooded nowhere until p8 (access VLAN
///   30) and p9 join a VLAN created at run time.
///
/// p4 has a QoS profile with lossless TC 3 (PFC thresholds changed at run time).
fn runtime_config(dir: &TestDir, socket: &Path) -> String {
    let s_frame = ethernet(
        ROUTER,
        [0x02, 0, 0, 0, 0, 0x0e],
        None,
        0x86dd,
        &ipv6_udp(
            "2001:db8:a::2".parse().unwrap(),
            "fcbb:bb00:100:200::".parse().unwrap(),
            64,
            1000,
            2000,
            &[0; 18],
        ),
    );
    let s_path = dir.write_pcap(
        "s.pcap",
        &(0..64)
            .map(|i| PcapPacket {
                timestamp_ns: 1_000_000_000 + i * 1000,
                data: s_frame.clone(),
            })
            .collect::<Vec<_>>(),
    );
    let q = trace(dir, "q.pcap", 0x0d, 1, [10, 8, 0, 5]);
    let r = trace(dir, "r.pcap", 0x0f, 16, [10, 9, 0, 9]);
    // L (p9): to a MAC nobody has, flooded in its VLAN.
    let l = dir.file("l.pcap");
    let l_spec = UdpTraceSpec {
        flows: 1,
        packets: 64,
        frame_len: 60,
        src_mac: [0x02, 0, 0, 0, 0, 0x10],
        dst_mac: [0x02, 0, 0, 0, 0x99, 0x99],
        src_ip: [10, 0, 40, 5],
        dst_ip: [10, 0, 40, 6],
        ..Default::default()
    };
    write_pcap_file(&l, &udp_trace(&l_spec)).expect("write trace");
    let input = |n: usize, p: &Path| {
        format!(
            "devargs = \"net_pcap{n},rx_pcap={},infinite_rx=1\"\nvlan = {{ mode = \"access\", id = 10 }}",
            p.display()
        )
    };
    let routed = |n: usize, ip: &str, ip6: &str| {
        format!(
            "devargs = \"net_null{n},no-rx=1\"\nipv4 = [\"{ip}\"]\nipv6 = [\"{ip6}\"]\nspeed_gbps = 100"
        )
    };
    let ports = [
        format!(
            "devargs = \"net_pcap0,rx_pcap={},infinite_rx=1\"\nipv4 = [\"10.254.0.1/31\"]\nipv6 = [\"2001:db8:a::1/64\"]",
            s_path.display()
        ),
        routed(1, "10.255.0.1/31", "2001:db8:ff::1/127"),
        routed(2, "10.255.0.3/31", "2001:db8:ff::3/127"),
        routed(3, "10.255.0.5/31", "2001:db8:ff::5/127"),
        format!(
            "{}\nqos = \"rdma\"",
            routed(4, "10.255.0.7/31", "2001:db8:ff::7/127")
        ),
        routed(5, "10.255.0.9/31", "2001:db8:ff::9/127"),
        input(1, &q),
        input(2, &r),
        "devargs = \"net_null8,no-rx=1\"\nvlan = { mode = \"access\", id = 30 }".to_owned(),
        format!(
            "devargs = \"net_pcap3,rx_pcap={},infinite_rx=1\"\nvlan = {{ mode = \"access\", id = 40 }}",
            l.display()
        ),
    ];
    let mut text = format!(
        r#"[switch]
name = "ctl-runtime"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[control]
socket = "{socket}"

[qos.rdma]
lossless = [3]

[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]

[[vlan]]
id = 30

[[vlan]]
id = 40

[[neighbor]]
ip = "2001:db8:ff::0"
mac = "02:00:00:00:52:01"
port = "p1"

[[neighbor]]
ip = "2001:db8:ff::2"
mac = "02:00:00:00:52:02"
port = "p2"

[[neighbor]]
ip = "10.255.0.6"
mac = "02:00:00:00:52:04"
port = "p4"

[[neighbor]]
ip = "10.255.0.8"
mac = "02:00:00:00:52:05"
port = "p5"

[[route]]
prefix = "fcbb:bb00:200::/48"
via = "2001:db8:ff::0"
port = "p1"

[[route]]
prefix = "fcbb:bb00:300::/48"
via = "2001:db8:ff::2"
port = "p2"
"#,
        eal = dir.eal_toml(),
        socket = socket.display(),
    );
    for (i, body) in ports.iter().enumerate() {
        text.push_str(&format!("\n[[port]]\nname = \"p{i}\"\n{body}\n"));
    }
    text
}

impl Switch {
    fn sids(&self) -> Vec<Value> {
        self.json(&["show", "srv6"])["sids"]
            .as_array()
            .unwrap()
            .clone()
    }

    fn sid_packets(&self, prefix: &str) -> u64 {
        self.sids()
            .iter()
            .find(|s| s["prefix"] == prefix)
            .unwrap_or_else(|| panic!("no SID {prefix}"))["packets"]
            .as_u64()
            .unwrap()
    }

    fn policy_packets(&self, name: &str) -> u64 {
        self.json(&["show", "srv6"])["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no policy {name}"))["packets"]
            .as_u64()
            .unwrap()
    }

    fn group_names(&self) -> Vec<String> {
        self.json(&["show", "groups"])
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn pfc(&self, port: &str, tc: usize) -> Value {
        self.json(&["show", "queues", port])[tc]["pfc"].clone()
    }
}

#[test]
fn sids_policies_groups_and_pfc_change_at_run_time() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("ctl-runtime");
    let socket = dir.file("ctl.sock");
    let mut s = start_with(&dir, &socket, &runtime_config(&dir, &socket));
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        let started = Instant::now();
        while !f() {
            assert!(started.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let grows = |what: &str, f: &dyn Fn() -> u64| {
        let before = f();
        wait(what, &|| f() > before);
    };

    // ---- SIDs ----
    assert_eq!(s.sids(), Vec::<Value>::new());
    wait("S arrives and is dropped", &|| s.drops("no_route") > 0);
    assert_eq!(s.tx("p1"), 0, "no SID: S goes nowhere");
    // Malformed: refused, nothing added.
    for (args, expected) in [
        (
            vec!["sid", "add", "fcbb:bb00:100::/48", "--behavior", "uX"],
            "`uX` is not a behaviour",
        ),
        (
            vec![
                "sid",
                "add",
                "fcbb:bb00:100::/48",
                "--behavior",
                "uN",
                "--via",
                "2001:db8:ff::0",
                "--dev",
                "p1",
            ],
            "`via` does not apply to behaviour uN",
        ),
        (
            vec!["sid", "add", "10.1.0.0/16", "--behavior", "End"],
            "a SID is an IPv6 prefix",
        ),
        (
            vec![
                "sid",
                "add",
                "fcbb:bb00:100::/48",
                "--behavior",
                "uN",
                "--shift-bits",
                "0",
            ],
            "the shift above 0",
        ),
        (
            vec!["sid", "add", "fcbb:bb00:100::/48", "--behavior", "End.X"],
            "forwards to an adjacency",
        ),
        (
            vec![
                "sid",
                "add",
                "fcbb:bb00:100::/48",
                "--behavior",
                "End.DT4",
                "--lookup-vrf",
                "red",
            ],
            "no VRF `red`",
        ),
        (
            vec!["sid", "del", "fcbb:bb00:100::/48"],
            "no local SID fcbb:bb00:100::/48",
        ),
        // As in the config: no host bits, in field `sid` (`sid del` too, below).
        (
            vec!["sid", "add", "fcbb:bb00:100::5/48", "--behavior", "uN"],
            "updates[0]: `sid`: host bits set: `fcbb:bb00:100::5/48` is not a network address; \
             write fcbb:bb00:100::/48",
        ),
        (
            vec![
                "raw",
                r#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"add_sid","sid":"fcbb:bb00:100::5/48","behavior":"uN"}]}"#,
            ],
            "`sid`: host bits set",
        ),
        // Clear of connected subnets (p0 has 2001:db8:a::1/64, p1 2001:db8:ff::1/127): the
        // my-SID table is looked up before the FIB.
        (
            vec!["sid", "add", "2001:db8:a::/64", "--behavior", "End"],
            "2001:db8:a::/64 is the connected subnet of p0 (2001:db8:a::1/64)",
        ),
        (
            vec!["sid", "add", "2001:db8:ff::/48", "--behavior", "End"],
            "2001:db8:ff::/48 covers the connected subnet 2001:db8:ff::/127 of p1",
        ),
        (
            vec!["sid", "add", "2001:db8:a::1", "--behavior", "End"],
            "2001:db8:a::1/128 is this switch's own address on p0",
        ),
        (
            vec!["sid", "add", "2001:db8:a::77", "--behavior", "End.DT4"],
            "2001:db8:a::77/128 is inside the connected subnet 2001:db8:a::/64 of p0",
        ),
    ] {
        s.refused(&args, expected);
    }
    assert_eq!(s.sids(), Vec::<Value>::new(), "nothing was added");
    // An End.DT4 shows the VRF it looks the inner packet up in.
    s.ok(&["sid", "add", "2001:db8:77::1", "--behavior", "End.DT4"]);
    assert_eq!(s.sids()[0]["adjacency"], "vrf default");
    s.ok(&["sid", "del", "2001:db8:77::1"]);
    assert_eq!(s.sids(), Vec::<Value>::new());

    // uN: S is shifted to fcbb:bb00:200:: and routed out of p1, counted by the SID.
    s.ok(&["sid", "add", "fcbb:bb00:100::/48", "--behavior", "uN"]);
    s.wait_tx_growth("p1");
    let sids = s.sids();
    assert_eq!(sids.len(), 1);
    assert_eq!(
        (sids[0]["behavior"].clone(), sids[0]["vrf"].clone()),
        (json!("uN"), json!("default"))
    );
    grows("the SID counts S", &|| s.sid_packets("fcbb:bb00:100::/48"));
    assert!(s.ok(&["show", "srv6"]).contains("uN"));
    s.refused(
        &["sid", "del", "fcbb:bb00:100::1/48"],
        "`sid`: host bits set: `fcbb:bb00:100::1/48`",
    );
    assert_eq!(s.sids().len(), 1, "the SID stays");
    s.refused(
        &["sid", "add", "fcbb:bb00:100::/48", "--behavior", "End"],
        "already a local SID",
    );
    let dump = s.ok(&["table_dump", "my_sid"]);
    assert!(
        dump.contains(
            "my_sid un 0 fcbb:bb00:100::/48 => 0 0 ffff:ffff:: ::ffff:ffff:ffff:ffff:ffff 16"
        ),
        "{dump}"
    );
    // Deleted: S stops.
    s.ok(&["sid", "del", "fcbb:bb00:100::/48"]);
    s.assert_tx_stopped("p1");
    assert_eq!(s.sids(), Vec::<Value>::new());
    // uA to the neighbour on p2 (a nexthop the switch creates): S goes to p2, not the FIB's p1.
    s.ok(&[
        "sid",
        "add",
        "fcbb:bb00:100::/48",
        "--behavior",
        "uA",
        "--via",
        "2001:db8:ff::2",
        "--dev",
        "p2",
        "--flavors",
        "psp",
    ]);
    s.wait_tx_growth("p2");
    s.assert_tx_stopped("p1");
    assert_eq!(s.sids()[0]["adjacency"], "2001:db8:ff::2 dev p2");
    assert!(
        s.ok(&["show", "srv6"]).contains("2001:db8:ff::2 dev p2"),
        "the table shows where the uA sends"
    );
    let dump = s.json(&["table_dump", "my_sid"]);
    assert_eq!(dump[0]["action"], "ua", "{dump}");
    assert_eq!(dump[0]["params"][0], "1", "psp: {dump}");
    assert_eq!(dump[0]["params"][5], "1", "route kind nexthop: {dump}");
    // The P4 form: the uA goes, a uN comes back through table_add with the P4 masks.
    s.ok(&["table_delete", "my_sid", "0", "fcbb:bb00:100::/48"]);
    s.assert_tx_stopped("p2");
    s.refused(
        &[
            "table_add",
            "my_sid",
            "un",
            "0",
            "fcbb:bb00:100::/48",
            "=>",
            "0",
            "0",
            "ffff:ffff::",
            "::ffff",
            "16",
        ],
        "argument_mask `::ffff` must be the 80 bits after block + shift",
    );
    s.refused(
        &[
            "table_add",
            "my_sid",
            "un",
            "0",
            "fcbb:bb00:100::/48",
            "=>",
            "0",
            "0",
        ],
        "takes 5 parameters",
    );
    s.refused(
        &[
            "table_add",
            "my_sid",
            "end_dt4",
            "0",
            "fcbb:bb00:100::/48",
            "=>",
            "7",
        ],
        "VRF 7 does not exist",
    );
    // As `sid add`: clear of the connected subnets (p0 has 2001:db8:a::1/64).
    s.refused(
        &[
            "table_add",
            "my_sid",
            "end",
            "0",
            "2001:db8:a::/64",
            "=>",
            "0",
            "0",
        ],
        "2001:db8:a::/64 is the connected subnet of p0 (2001:db8:a::1/64)",
    );
    assert_eq!(s.sids(), Vec::<Value>::new(), "nothing was added");
    s.ok(&[
        "table_add",
        "my_sid",
        "un",
        "0",
        "fcbb:bb00:100::/48",
        "=>",
        "0",
        "0",
        "ffff:ffff::",
        "::ffff:ffff:ffff:ffff:ffff",
        "16",
    ]);
    s.wait_tx_growth("p1");
    s.ok(&["table_delete", "my_sid", "0", "fcbb:bb00:100::/48"]);
    s.assert_tx_stopped("p1");

    // ---- a policy created at run time, and a route moved onto it ----
    s.refused(
        &["policy", "add", "pn", "--segments", "ff02::1"],
        "not a unicast IPv6 address",
    );
    s.refused(
        &["route", "add", "10.8.0.0/16", "--policy", "pn"],
        "no SRv6 policy `pn`",
    );
    s.ok(&[
        "policy",
        "add",
        "pn",
        "--segments",
        "fcbb:bb00:300::",
        "--mode",
        "encaps.red",
    ]);
    s.refused(
        &["policy", "add", "pn", "--segments", "fcbb:bb00:300::"],
        "SRv6 policy `pn` exists already",
    );
    // As a [[srv6.policy]]'s prefix: not a connected subnet (p0 has 2001:db8:a::1/64).
    s.refused(
        &["route", "add", "2001:db8:a::/64", "--policy", "pn"],
        "updates[0]: `prefix`: 2001:db8:a::/64 is the connected subnet of p0 (2001:db8:a::1/64); \
         it is routed there already",
    );
    let p2 = s.tx("p2");
    s.ok(&["route", "add", "10.8.0.0/16", "--policy", "pn"]);
    grows("Q is encapsulated by pn", &|| s.policy_packets("pn"));
    wait("Q leaves p2", &|| s.tx("p2") > p2);
    let srv6 = s.json(&["show", "srv6"]);
    assert_eq!(
        (
            srv6["policies"][0]["segments"].clone(),
            srv6["policies"][0]["source"].clone()
        ),
        (json!(["fcbb:bb00:300::"]), json!("2001:db8:a::1")),
        "the default source is the default VRF's global address"
    );
    s.refused(&["policy", "del", "pn"], "is in use by route 10.8.0.0/16");
    assert_eq!(
        s.json(&["show", "srv6"])["policies"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Route and policy go in one batch (route first, so the policy is unused when deleted).
    let batch = dir.file("batch.json");
    std::fs::write(
        &batch,
        r#"[{"op":"del_route","prefix":"10.8.0.0/16"},{"op":"del_policy","policy":"pn"}]"#,
    )
    .unwrap();
    s.ok(&["batch", batch.to_str().unwrap()]);
    s.assert_tx_stopped("p2");
    assert_eq!(s.json(&["show", "srv6"])["policies"], json!([]));
    // A policy and its route in one batch; a bad third update refuses all three.
    std::fs::write(
        &batch,
        r#"[{"op":"add_policy","policy":"pm","segments":["fcbb:bb00:300::"]},
            {"op":"add_route","prefix":"10.8.0.0/16","policy":"pm"},
            {"op":"add_route","prefix":"10.8.1.0/24","policy":"nosuch"}]"#,
    )
    .unwrap();
    s.refused(
        &["batch", batch.to_str().unwrap()],
        "updates[2]: no SRv6 policy `nosuch`",
    );
    assert_eq!(s.json(&["show", "srv6"])["policies"], json!([]));
    assert!(!routes(&s).contains(&"10.8.0.0/16".to_owned()));
    std::fs::write(
        &batch,
        r#"[{"op":"add_policy","policy":"pm","segments":["fcbb:bb00:300::"]},
            {"op":"add_route","prefix":"10.8.0.0/16","policy":"pm"}]"#,
    )
    .unwrap();
    s.ok(&["batch", batch.to_str().unwrap()]);
    grows("Q is encapsulated by pm", &|| s.policy_packets("pm"));
    s.wait_tx_growth("p2");

    // ---- an ECMP group created at run time, and a route pointed at it ----
    s.refused(
        &["group", "add", "g2", "--member", "10.255.0.6,p19"],
        "no L3 interface `p19`",
    );
    s.refused(
        &["group", "add", "g2", "--member", "10.255.0.6,p4,0"],
        "field `weight` 0 is out of range 1..=65535",
    );
    s.refused(
        &[
            "group",
            "add",
            "g2",
            "--member",
            "10.255.0.6,p4",
            "--member",
            "10.255.0.8,p5,4294967295",
        ],
        "members[1]: field `weight` 4294967295 is out of range 1..=65535",
    );
    s.refused(
        &["route", "add", "10.9.0.0/16", "--group", "g2"],
        "no ECMP group `g2`",
    );
    assert_eq!(s.group_names(), Vec::<String>::new());
    s.ok(&[
        "group",
        "add",
        "g2",
        "--member",
        "10.255.0.6,p4",
        "--member",
        "10.255.0.8,p5,1",
    ]);
    s.refused(
        &["group", "add", "g2", "--member", "10.255.0.6,p4"],
        "ECMP group `g2` exists already",
    );
    s.ok(&["route", "add", "10.9.0.0/16", "--group", "g2"]);
    s.wait_tx_growth("p4");
    s.wait_tx_growth("p5");
    let groups = s.json(&["show", "groups"]);
    assert_eq!(groups[0]["name"], "g2");
    let members = groups[0]["members"].as_array().unwrap();
    assert_eq!(
        members
            .iter()
            .map(|m| (m["via"].as_str().unwrap(), m["dev"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        vec![("10.255.0.6", "p4"), ("10.255.0.8", "p5")]
    );
    assert_eq!(
        members[0]["buckets"].as_u64().unwrap() + members[1]["buckets"].as_u64().unwrap(),
        256
    );
    assert!(s.ok(&["show", "routes"]).contains("group g2"));

    // ---- its balancing changes while R flows through it: flowlets, then hashing again ----
    s.refused(
        &["group", "set", "g9", "--mode", "flowlet"],
        "no ECMP group `g9`",
    );
    // Without `mode` a set_group sets hashing (`group set` refuses flowlet options without
    // --mode as a bad command line: tests/bad_input.rs).
    s.refused(
        &[
            "raw",
            r#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"set_group","group":"g2","flowlet_timeout_us":200}]}"#,
        ],
        "`flowlet_timeout_us`: applies to mode \"flowlet\" only (this group is \"hash\"); \
         a set_group without `mode` sets hash balancing, so give `mode`",
    );
    s.ok(&[
        "group",
        "set",
        "g2",
        "--mode",
        "flowlet",
        "--choice",
        "least-loaded",
        "--flowlet-timeout-us",
        "200",
        "--avoid-ecn",
    ]);
    let balancing = || {
        let g = &s.json(&["show", "groups"])[0];
        (
            g["mode"].clone(),
            g["choice"].clone(),
            g["flowlet_timeout_us"].clone(),
            g["flowlet_table_size"].clone(),
            g["avoid_ecn"].clone(),
            g["members"].as_array().unwrap().len(),
        )
    };
    assert_eq!(
        balancing(),
        (
            json!("flowlet"),
            json!("least-loaded"),
            json!(200),
            json!(4096),
            json!(true),
            2
        )
    );
    assert!(
        s.ok(&["show", "groups"])
            .contains("group g2: flowlet (least-loaded, timeout 200 us, 4096 entries, avoids ECN)")
    );
    // Hashing started none; R's 16 flows start theirs at once after the change (R sends
    // without gaps, so whether more follow depends on how the worker is scheduled), and
    // they go on over the group (which member each takes depends on the loads then).
    let flowlets = || s.json(&["show", "groups"])[0]["flowlets"].as_u64().unwrap();
    wait("R's packets start flowlets", &|| flowlets() > 0);
    grows("R flows through the group", &|| s.tx("p4") + s.tx("p5"));
    s.ok(&["group", "set", "g2"]);
    assert_eq!(
        balancing(),
        (
            json!("hash"),
            json!("random"),
            json!(100),
            json!(4096),
            json!(false),
            2
        )
    );
    // The counters go on across the change, and hashing starts no flowlets.
    let started = flowlets();
    assert!(started > 0);
    s.wait_tx_growth("p4");
    s.wait_tx_growth("p5");
    assert_eq!(flowlets(), started);
    s.refused(&["group", "del", "g2"], "is in use by route 10.9.0.0/16");
    s.ok(&["route", "del", "10.9.0.0/16"]);
    s.ok(&["group", "del", "g2"]);
    s.assert_tx_stopped("p5");
    assert_eq!(s.group_names(), Vec::<String>::new());
    s.refused(&["group", "del", "g2"], "no ECMP group `g2`");

    // ---- PFC thresholds ----
    let auto = s.pfc("p4", 3);
    assert!(auto["xoff"].as_u64().unwrap() > 0, "{auto}");
    assert_eq!(s.pfc("p4", 2), Value::Null, "TC 2 is lossy");
    assert_eq!(s.pfc("p5", 3), Value::Null, "p5 has no lossless TC");
    s.ok(&["pfc", "p4", "3", "xoff=40KB", "xon=20000", "headroom=50KB"]);
    assert_eq!(
        s.pfc("p4", 3),
        json!({"xoff": 40_000, "xon": 20_000, "headroom": 50_000})
    );
    // Only xon: the others stay.
    s.ok(&["pfc", "p4", "3", "xon=10KiB"]);
    assert_eq!(
        s.pfc("p4", 3),
        json!({"xoff": 40_000, "xon": 10_240, "headroom": 50_000})
    );
    assert!(
        s.ok(&["show", "queues", "p4"])
            .contains("40000/10240/50000")
    );
    for (args, expected) in [
        (
            vec!["pfc", "p4", "3", "xon=45KB"],
            "xon 45000 is above xoff (40000)",
        ),
        (
            vec!["pfc", "p4", "3", "xoff=1000", "xon=2000"],
            "XON must be at or below XOFF",
        ),
        (
            vec!["pfc", "p4", "2", "xoff=1000"],
            "TC 2 is not lossless on port p4",
        ),
        (
            vec!["pfc", "p5", "3", "xoff=1000"],
            "TC 3 is not lossless on port p5",
        ),
        (vec!["pfc", "p19", "3", "xoff=1000"], "no port `p19`"),
        (vec!["pfc", "p4", "3", "xoff=lots"], "unknown unit `lots`"),
        // The config's rules (README): XOFF 0 pauses an empty port, XON 0 never resumes it.
        (
            vec!["pfc", "p4", "3", "xoff=0", "xon=0"],
            "xoff 0 bytes: XOFF is sent when the ingress bytes reach xoff",
        ),
        (
            vec!["pfc", "p4", "3", "xon=0"],
            "xon 0 bytes: XON is sent when the ingress bytes fall below xon",
        ),
        (
            vec!["pfc", "p4", "3", "headroom=32"],
            "headroom 32 bytes cannot hold one 64-byte frame",
        ),
        (vec!["pfc", "p4", "9", "xoff=1000"], "above the maximum 7"),
    ] {
        s.refused(&args, expected);
    }
    // A key the command line does not know: a bad command line (exit 2).
    let (code, _, err) = ctl_with(&bin(), &socket, &["pfc", "p4", "3", "xof=1000"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`xof` is not xoff, xon or headroom"), "{err}");
    assert_eq!(
        s.pfc("p4", 3),
        json!({"xoff": 40_000, "xon": 10_240, "headroom": 50_000}),
        "refused changes left the thresholds alone"
    );

    // ---- VLANs ----
    let vlans = s.json(&["show", "vlans"]);
    assert_eq!(
        vlans,
        json!([
            {"vlan": 10, "interface": "vlan10", "ports": [{"port": "p6", "tagged": false}, {"port": "p7", "tagged": false}]},
            {"vlan": 30, "interface": null, "ports": [{"port": "p8", "tagged": false}]},
            {"vlan": 40, "interface": null, "ports": [{"port": "p9", "tagged": false}]},
        ])
    );
    assert_eq!(s.tx("p8"), 0, "L floods in VLAN 40, where it is alone");
    for (args, expected) in [
        (vec!["vlan", "add", "30"], "VLAN 30 exists already"),
        (
            vec!["vlan", "add", "4095"],
            "field `vlan` is 4095; VLAN ids are 1..=4094",
        ),
        (
            vec!["vlan", "port", "p8", "access", "50"],
            "VLAN 50 does not exist",
        ),
        (
            vec!["vlan", "port", "p1", "access", "30"],
            "port p1 is routed",
        ),
        (vec!["vlan", "del", "30"], "port p8 is in VLAN 30"),
        (
            vec!["vlan", "del", "10"],
            "VLAN 10 has an L3 interface (vlan10)",
        ),
        (vec!["vlan", "del", "50"], "VLAN 50 does not exist"),
        // The config's trunk rules, in its words.
        (
            vec![
                "vlan",
                "port",
                "p8",
                "trunk",
                "--allowed",
                "30",
                "--native",
                "40",
            ],
            "field `native`: native VLAN 40 is not in allowed [30]; list it there too",
        ),
        (
            vec!["vlan", "port", "p8", "trunk", "--allowed", "30,30"],
            "field `allowed[1]`: VLAN 30 is listed twice",
        ),
    ] {
        s.refused(&args, expected);
    }
    let (code, _, err) = ctl_with(
        &bin(),
        &socket,
        &["vlan", "port", "p8", "trunk", "--native", "30"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a trunk needs --allowed"), "{err}");
    assert_eq!(s.json(&["show", "vlans"]), vlans, "nothing changed");
    s.ok(&["vlan", "add", "50"]);
    s.ok(&["vlan", "port", "p8", "access", "50"]);
    s.ok(&["vlan", "port", "p9", "access", "50"]);
    s.wait_tx_growth("p8");
    s.ok(&["vlan", "port", "p8", "trunk", "--allowed", "30,50"]);
    s.wait_tx_growth("p8");
    assert_eq!(
        s.json(&["show", "vlans"])[3],
        json!({"vlan": 50, "interface": null, "ports": [{"port": "p8", "tagged": true}, {"port": "p9", "tagged": false}]})
    );
    assert!(s.ok(&["show", "vlans"]).contains("p8(tagged)"));
    s.refused(&["vlan", "del", "50"], "port p8 is in VLAN 50");
    s.ok(&["vlan", "port", "p8", "access", "30"]);
    s.ok(&["vlan", "port", "p9", "access", "40"]);
    s.assert_tx_stopped("p8");
    s.ok(&["vlan", "del", "50"]);
    assert_eq!(s.json(&["show", "vlans"]), vlans);

    // ---- reload adds a group, a SID and routes from the config file, and takes them away ----
    let config_path = dir.file("switch.toml");
    let original = std::fs::read_to_string(&config_path).unwrap();
    let reload = || {
        let out = Command::new(bin())
            .args(["reload", "--socket"])
            .arg(&socket)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    std::fs::write(
        &config_path,
        format!(
            "{original}
[[nexthop_group]]
name = \"g3\"
             members = [{{ port = \"p5\", via = \"10.255.0.8\" }}]
             [[route]]
prefix = \"10.9.0.0/16\"
group = \"g3\"
             [[srv6.sid]]
prefix = \"fcbb:bb00:100::/48\"
behavior = \"uN\"
"
        ),
    )
    .unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("3 update(s) applied (add_group 1, add_route 1, add_sid 1)"),
        "{out}"
    );
    assert_eq!(s.group_names(), vec!["g3".to_owned()]);
    s.wait_tx_growth("p5");
    s.wait_tx_growth("p1");
    grows("the reloaded SID counts S", &|| {
        s.sid_packets("fcbb:bb00:100::/48")
    });
    // A kept group's balancing: one update, applied while traffic flows.
    let with_g3 = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        with_g3.replace("name = \"g3\"\n", "name = \"g3\"\nmode = \"per-packet\"\n"),
    )
    .unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 update(s) applied (set_group 1)"), "{out}");
    assert_eq!(s.json(&["show", "groups"])[0]["mode"], "per-packet");
    s.wait_tx_growth("p5");
    std::fs::write(&config_path, &original).unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("3 update(s) applied (del_group 1, del_route 1, del_sid 1)"),
        "{out}"
    );
    s.assert_tx_stopped("p1");
    s.assert_tx_stopped("p5");
    assert_eq!(s.group_names(), Vec::<String>::new());
    assert_eq!(s.sids(), Vec::<Value>::new());
    // An L2 VLAN and two ports moved into it by reload; and back.
    let moved = original
        .replace("id = 30 }", "id = 60 }")
        .replace("id = 40 }", "id = 60 }")
        .replace(
            "[[vlan]]\nid = 40\n",
            "[[vlan]]\nid = 40\n\n[[vlan]]\nid = 60\n",
        );
    assert_ne!(moved, original);
    std::fs::write(&config_path, &moved).unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("3 update(s) applied (add_vlan 1, set_port_vlan 2)"),
        "{out}"
    );
    s.wait_tx_growth("p8");
    assert_eq!(
        s.json(&["show", "vlans"])[3],
        json!({"vlan": 60, "interface": null, "ports": [{"port": "p8", "tagged": false}, {"port": "p9", "tagged": false}]})
    );
    std::fs::write(&config_path, &original).unwrap();
    let (code, out, err) = reload();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("3 update(s) applied (del_vlan 1, set_port_vlan 2)"),
        "{out}"
    );
    s.assert_tx_stopped("p8");
    assert_eq!(s.json(&["show", "vlans"]), vlans);

    let out = s.stop();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A switch with a VRF `red` (routed port r0) beside the default one (routed port d0, with a
/// static neighbour and group `up` behind it), and an access port `a` of VLAN 10. No
/// traffic: the refusals and replies of the control plane.
fn vrf_config(dir: &TestDir, socket: &Path) -> String {
    format!(
        r#"[switch]
name = "ctl-vrf"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}

[control]
socket = "{socket}"

[[vrf]]
name = "red"

[[vlan]]
id = 10

[[port]]
name = "d0"
devargs = "net_null0,no-rx=1"
ipv4 = ["10.255.0.1/31"]

[[port]]
name = "r0"
devargs = "net_null1,no-rx=1"
vrf = "red"
ipv4 = ["10.254.0.1/31"]

[[port]]
name = "a"
devargs = "net_null2,no-rx=1"
vlan = {{ mode = "access", id = 10 }}

[[neighbor]]
ip = "10.255.0.0"
mac = "02:00:00:00:51:01"
port = "d0"

[[nexthop_group]]
name = "up"
members = [{{ port = "d0", via = "10.255.0.0" }}]
"#,
        eal = dir.eal_toml(),
        socket = socket.display(),
    )
}

impl Switch {
    /// A ctl command with `--json` that must fail with exit `code`: the error object it
    /// prints on stdout (nothing on stderr).
    fn json_error(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (status, out, err) = ctl_with(&bin(), &self.socket, &all);
        assert_eq!(status, code, "ctl {all:?}: {out}{err}");
        assert_eq!(err, "", "ctl {all:?}: the error goes to stdout");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ctl {all:?}: {e}: {out}"))
    }
}

#[test]
fn run_time_updates_keep_vrfs_apart_and_replies_name_what_the_operator_wrote() {
    let _lock = dpdk_lock();
    let dir = TestDir::new("ctl-vrf");
    let socket = dir.file("ctl.sock");
    let mut s = start_with(&dir, &socket, &vrf_config(&dir, &socket));
    let routes_of =
        |s: &Switch, vrf: &str| s.json(&["show", "routes", "--vrf", vrf])["routes"].clone();
    let red_routes = routes_of(&s, "red");

    // ---- the VRF rule: a red route never leaves by a default port, nor the reverse ----
    s.refused(
        &[
            "route",
            "add",
            "10.60.0.0/16",
            "--via",
            "10.255.0.0",
            "--dev",
            "d0",
            "--vrf",
            "red",
        ],
        "d0 is in VRF default, but this route is in VRF red",
    );
    s.refused(
        &[
            "route",
            "add",
            "10.60.0.0/16",
            "--via",
            "10.254.0.0",
            "--dev",
            "r0",
        ],
        "r0 is in VRF red, but this route is in VRF default",
    );
    s.refused(
        &["route", "add", "10.60.0.0/16", "--group", "up", "--vrf", "red"],
        "group `up` forwards in VRF default (its members' interfaces), but this route is in VRF red",
    );
    s.refused(
        &["ecmp", "add", "up", "--via", "10.254.0.0", "--dev", "r0"],
        "r0 is in VRF red, but group `up` is in VRF default: a group's members share one VRF",
    );
    // The P4 form, a nexthop by id too (the worker's nexthop 0 is d0's neighbour).
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "set_nexthop",
            "red",
            "10.70.0.0/16",
            "=>",
            "0",
        ],
        "nexthop 0 (10.255.0.0 on d0) is in VRF default, but this route is in VRF red",
    );
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "set_ecmp_group",
            "red",
            "10.70.0.0/16",
            "=>",
            "up",
        ],
        "group `up` forwards in VRF default",
    );
    assert_eq!(routes_of(&s, "red"), red_routes, "nothing went in");
    s.ok(&[
        "table_add",
        "ipv4_lpm",
        "set_nexthop",
        "default",
        "10.70.0.0/16",
        "=>",
        "0",
    ]);
    s.ok(&[
        "route",
        "add",
        "10.60.0.0/16",
        "--via",
        "10.254.0.0",
        "--dev",
        "r0",
        "--vrf",
        "red",
    ]);
    let has_route = |s: &Switch, vrf: &str, line: &str| {
        s.ok(&["show", "routes", "--vrf", vrf])
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == line)
    };
    assert!(has_route(
        &s,
        "red",
        "red 10.60.0.0/16 via 10.254.0.0 dev r0"
    ));
    // The P4 form refuses host bits, as the config and `route add` do.
    s.refused(
        &[
            "table_add",
            "ipv4_lpm",
            "blackhole",
            "0",
            "10.71.0.1/16",
            "=>",
        ],
        "host bits set: `10.71.0.1/16` is not a network address; write 10.71.0.0/16",
    );
    s.refused(
        &["table_delete", "ipv4_lpm", "0", "10.70.0.1/16"],
        "host bits set",
    );

    // ---- refusals name ports and VRFs as the operator wrote them ----
    s.refused(
        &["mac", "add", "10", "02:00:00:00:77:01", "d0"],
        "port `d0` is not in VLAN 10 (it is a routed port)",
    );
    s.refused(
        &["mac", "add", "20", "02:00:00:00:77:01", "a"],
        "VLAN 20 does not exist",
    );
    s.refused(
        &["route", "del", "10.99.0.0/16"],
        "no route 10.99.0.0/16 in VRF default",
    );
    s.refused(
        &["route", "del", "10.99.0.0/16", "--vrf", "red"],
        "no route 10.99.0.0/16 in VRF red",
    );
    s.refused(
        &["neighbor", "del", "10.255.0.0", "--dev", "r0"],
        "no neighbour 10.255.0.0 on interface r0",
    );

    // ---- --json: errors are the API's error object, on stdout, with the exit status ----
    assert_eq!(
        s.json_error(&["route", "del", "10.99.0.0/16", "--vrf", "red"], 1),
        json!({"ok": false, "error": "updates[0]: no route 10.99.0.0/16 in VRF red; nothing was applied"})
    );
    let bad = s.json_error(
        &["table_add", "ipv4_lpm", "blackhole", "0", "10.9.0.0/16"],
        2,
    );
    assert_eq!(bad["ok"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("needs `=>`"),
        "{bad}"
    );

    // ---- table_dump reads the nexthop table; other tables say which can be dumped ----
    let dump = s.ok(&["table_dump", "nexthop"]);
    assert!(
        dump.contains("nexthop rewrite_to_port 0 => 0 02:00:00:00:51:01"),
        "{dump}"
    );
    s.refused(
        &["table_dump", "port_vlan"],
        "table `port_vlan` cannot be dumped; table_dump reads ipv4_lpm, ipv6_lpm, mac_table, my_sid, nexthop",
    );

    // ---- an add of an entry that exists replaces it, and says so ----
    let out = s.ok(&["route", "add", "10.80.0.0/16", "--blackhole"]);
    assert_eq!(out, "ok: 1 update(s) applied\n");
    let out = s.ok(&[
        "route",
        "add",
        "10.80.0.0/16",
        "--via",
        "10.255.0.0",
        "--dev",
        "d0",
    ]);
    assert_eq!(
        out,
        "ok (replaced the route to 10.80.0.0/16 in VRF default: now via 10.255.0.0 dev d0)\n"
    );
    assert_eq!(
        s.json(&["route", "add", "10.80.0.0/16", "--group", "up"]),
        json!({"applied": 1, "replaced": true})
    );
    assert_eq!(
        s.json(&["route", "add", "10.81.0.0/16", "--blackhole"]),
        json!({"applied": 1, "replaced": false})
    );
    assert!(
        has_route(&s, "default", "default 10.80.0.0/16 group up"),
        "the last add holds"
    );
    assert_eq!(
        s.ok(&["mac", "add", "10", "02:00:00:00:77:01", "a"]),
        "ok: 1 update(s) applied\n"
    );
    assert_eq!(
        s.ok(&["mac", "add", "10", "02:00:00:00:77:01", "a"]),
        "ok (replaced the entry of 02:00:00:00:77:01 in VLAN 10: now to port a)\n"
    );
    // The switch reports it from the tables as it applies each update: in a batch, the
    // second add of one prefix replaces the first; the API's result lists it, and the text
    // of a batch counts it.
    let batch = r#"{"v":1,"id":7,"cmd":"update","updates":[{"op":"add_route","prefix":"10.82.0.0/16","blackhole":true},{"op":"add_route","prefix":"10.82.0.0/16","via":"10.255.0.0","dev":"d0"},{"op":"add_route","prefix":"10.83.0.0/16","blackhole":true}]}"#;
    assert_eq!(
        raw(&s.socket, format!("{batch}\n").as_bytes()),
        json!({"v": 1, "id": 7, "ok": true, "result": {"applied": 3, "replaced": [1]}})
    );
    let again: serde_json::Value = serde_json::from_str(&s.ok(&["raw", batch])).unwrap();
    assert_eq!(
        again["result"],
        json!({"applied": 3, "replaced": [0, 1, 2]}),
        "sent again, every add finds its prefix routed"
    );
    // Nothing replaced is not mentioned.
    assert_eq!(
        s.json(&["route", "del", "10.83.0.0/16"]),
        json!({"applied": 1})
    );
    // Asking changed nothing: a delete of a missing entry is still refused, once.
    s.ok(&["mac", "del", "10", "02:00:00:00:77:01"]);
    s.refused(
        &["mac", "del", "10", "02:00:00:00:77:01"],
        "no MAC 02:00:00:00:77:01 in VLAN 10",
    );

    let out = s.stop();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
