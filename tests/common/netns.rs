//! Real hosts for live end-to-end tests: network namespaces on veth pairs whose switch side
//! ironclos attaches with net_af_packet (DESIGN.md: link state works there), removed on drop
//! even when a test fails; and starting the switch up to its ready line.

use super::{TestDir, ironclos};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn sh(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn must(args: &[&str]) {
    let out = sh(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether the test can run here: root, and every command in `tools` on the PATH.
pub fn can_run(tools: &[&str]) -> bool {
    let root = sh(&["id", "-u"]).stdout == b"0\n";
    let found = tools.iter().all(|tool| {
        sh(&["sh", "-c", &format!("command -v {tool}")])
            .status
            .success()
    });
    if !(root && found) {
        eprintln!(
            "skipping: needs root and {} (scripts/setup.sh installs them)",
            tools.join(", ")
        );
    }
    root && found
}

/// The namespaces and veths of one test.
pub struct Namespaces {
    tag: String,
    hosts: Vec<String>,
}

impl Namespaces {
    pub fn new(tag: &str) -> Namespaces {
        Namespaces {
            tag: tag.to_owned(),
            hosts: Vec::new(),
        }
    }

    pub fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.tag)
    }

    /// The switch-side interface of `host`.
    pub fn veth(&self, host: &str) -> String {
        format!("{}-{host}", self.tag)
    }

    pub fn exec(&self, host: &str, args: &[&str]) -> Output {
        let ns = self.ns(host);
        let mut all = vec!["ip", "netns", "exec", ns.as_str()];
        all.extend_from_slice(args);
        sh(&all)
    }

    pub fn must(&self, host: &str, args: &[&str]) {
        let out = self.exec(host, args);
        assert!(
            out.status.success(),
            "{host}: {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A namespace `host` with `eth0` (and `lo`) up, the other end of the veth in the root
    /// namespace, still down: the caller configures the host, then calls `attach`.
    pub fn create(&mut self, host: &str) {
        let (ns, veth) = (self.ns(host), self.veth(host));
        self.hosts.push(host.to_owned());
        must(&["ip", "netns", "add", &ns]);
        must(&[
            "ip", "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ]);
        self.must(host, &["ip", "link", "set", "lo", "up"]);
        self.must(host, &["ip", "link", "set", "eth0", "up"]);
    }

    /// Brings the switch side of `host` up. What the host puts on the wire must be complete
    /// frames (no partial checksums from offload, no 64 KB GSO segments), and the root
    /// namespace must not answer on the switch's port itself.
    pub fn attach(&self, host: &str) {
        let veth = self.veth(host);
        let _ = self.exec(
            host,
            &[
                "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off", "gro", "off",
            ],
        );
        must(&["ip", "link", "set", &veth, "up", "promisc", "on"]);
        let _ = sh(&[
            "ethtool", "-K", &veth, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
        ]);
        let _ = sh(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{veth}.disable_ipv6=1"),
        ]);
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for host in &self.hosts {
            let _ = sh(&["ip", "netns", "del", &self.ns(host)]);
            let _ = sh(&["ip", "link", "del", &self.veth(host)]);
        }
    }
}

/// Starts ironclos and waits for its ready line; keeps draining its stdout so it never blocks
/// on a full pipe.
pub fn start_switch(config: &str) -> Child {
    let mut child = ironclos()
        .args(["run", "--config", config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ironclos");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    // Lines before it (the control socket's path) are passed over.
    let mut line = String::new();
    for _ in 0..8 {
        line.clear();
        stdout.read_line(&mut line).expect("ready line");
        if line.starts_with("ironclos ready") || line.is_empty() {
            break;
        }
    }
    assert!(
        line.starts_with("ironclos ready"),
        "expected the ready line, got {line:?}"
    );
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut sink);
    });
    child
}

/// Pings until three answers come in a row, for up to 10 s: the first packets may be dropped
/// while the switch resolves the destination (it never queues for resolution).
pub fn ping(hosts: &Namespaces, from: &str, ping: &[&str], to: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut args = ping.to_vec();
    args.extend_from_slice(&["-c", "3", "-i", "0.2", "-W", "1", to]);
    loop {
        let out = hosts.exec(from, &args);
        if out.status.success() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{from} cannot ping {to}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Stops a child process (tcpdump, a listener, the switch) on drop if the test did not.
pub struct Reaper(pub Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `bytes` over TCP from host `from` to `to_ip` (host `to`, IPv4 or IPv6) with a
/// Python listener and client, and returns what the listener received.
pub fn tcp_transfer(
    hosts: &Namespaces,
    dir: &TestDir,
    from: &str,
    to: &str,
    to_ip: &str,
    bytes: &[u8],
) -> Vec<u8> {
    let send = dir.file("send.bin");
    let recv = dir.file("recv.bin");
    std::fs::write(&send, bytes).expect("write payload");
    let _ = std::fs::remove_file(&recv);
    let (family, any) = if to_ip.contains(':') {
        ("socket.AF_INET6", "::")
    } else {
        ("socket.AF_INET", "0.0.0.0")
    };
    let server = format!(
        r#"
import socket, sys
s = socket.socket({family}); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{any}", 5001)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30)
with open(sys.argv[1], "wb") as f:
    while True:
        b = c.recv(65536)
        if not b: break
        f.write(b)
"#
    );
    let client = r#"
import socket, sys, time
for attempt in range(50):
    try:
        s = socket.create_connection((sys.argv[2], 5001), timeout=30); break
    except OSError:
        time.sleep(0.2)
with open(sys.argv[1], "rb") as f: s.sendall(f.read())
s.close()
"#;
    let ns_to = hosts.ns(to);
    let listener = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns_to,
            "python3",
            "-c",
            &server,
            recv.to_str().unwrap(),
        ])
        .spawn()
        .expect("start listener");
    let mut listener = Reaper(Some(listener));
    std::thread::sleep(Duration::from_millis(300));
    let out = hosts.exec(
        from,
        &["python3", "-c", client, send.to_str().unwrap(), to_ip],
    );
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = listener.0.take().unwrap().wait().expect("listener");
    assert!(status.success(), "listener failed");
    std::fs::read(&recv).expect("received file")
}
