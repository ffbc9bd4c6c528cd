//! End to end with real Linux hosts: network namespaces on veth pairs, the switch side of each
//! pair attached with net_af_packet (DESIGN.md: link state works there, unlike a TAP moved
//! into a namespace). Hosts ping through ironclos and move 10 MB over TCP, routed between
//! VLANs, from a routed port to a VLAN, and bridged within one, over IPv4 and (routed) IPv6,
//! neighbours found by ARP and Neighbor Discovery both ways; the bytes are compared; `ping -t
//! 1` and a ping without a route get the switch's ICMP and ICMPv6 errors. Needs root (CI runs
//! as root).

mod common;

use common::netns::{self, Namespaces, Reaper, can_run, sh, start_switch};
use common::{TestDir, dpdk_lock, wait_with_timeout};
use std::time::Duration;

/// The test's hosts: an IPv4 address each behind the switch's gateway.
struct Hosts(Namespaces);

impl Hosts {
    fn new(tag: &str) -> Hosts {
        Hosts(Namespaces::new(tag))
    }

    fn veth(&self, host: &str) -> String {
        self.0.veth(host)
    }

    /// A host with an IPv4 address and, when `v6` is given, an IPv6 one (address, gateway),
    /// each with a default route to the switch.
    fn add(&mut self, host: &str, address: &str, gateway: &str, v6: Option<(&str, &str)>) {
        self.0.create(host);
        self.0
            .must(host, &["ip", "addr", "add", address, "dev", "eth0"]);
        self.0
            .must(host, &["ip", "route", "add", "default", "via", gateway]);
        if let Some((address, gateway)) = v6 {
            // No duplicate address detection: the address is usable at once.
            self.0.must(
                host,
                &["ip", "-6", "addr", "add", address, "dev", "eth0", "nodad"],
            );
            self.0.must(
                host,
                &["ip", "-6", "route", "add", "default", "via", gateway],
            );
        }
        self.0.attach(host);
    }
}

/// Writes a switch-mode config (named `tag`, router MAC 02:00:00:00:01:00, one worker, the
/// test's EAL options) followed by `body`, and starts the switch on it, holding the machine's
/// DPDK lock while it runs.
fn start(dir: &TestDir, tag: &str, body: &str) -> (common::DpdkLock, Reaper) {
    let config = format!(
        "[switch]\nname = \"{tag}\"\nrouter_mac = \"02:00:00:00:01:00\"\n[dataplane]\nmode = \"switch\"\nworker_lcores = [1]\n{}\n{body}",
        dir.eal_toml()
    );
    let path = dir.file("switch.toml");
    std::fs::write(&path, config).expect("write config");
    let lock = dpdk_lock();
    (lock, Reaper(Some(start_switch(path.to_str().unwrap()))))
}

/// Stops the switch as an operator would (SIGTERM): it must exit 0.
fn stop(mut switch: Reaper) {
    let switch = switch.0.take().expect("still running");
    let killed = sh(&["kill", "-TERM", &switch.id().to_string()]);
    assert!(killed.status.success());
    let out = wait_with_timeout(switch, Duration::from_secs(20));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
}

/// `ironclos ctl --json show WHAT` on the switch's control socket.
fn show_json(socket: &std::path::Path, what: &str) -> serde_json::Value {
    let out = common::ironclos()
        .args([
            "ctl",
            "--socket",
            socket.to_str().unwrap(),
            "--json",
            "show",
            what,
        ])
        .output()
        .expect("ctl");
    serde_json::from_slice(&out.stdout).expect("ctl JSON")
}

fn ping(hosts: &Hosts, from: &str, to: &str) {
    netns::ping(&hosts.0, from, &["ping"], to);
}

#[test]
fn hosts_ping_and_move_10_mb_through_the_leaf_routed_and_bridged() {
    if !can_run(&["ip", "ping", "python3"]) {
        return;
    }
    let dir = TestDir::new("hosts");
    let tag = format!("ih{}", std::process::id() % 100_000);
    let mut hosts = Hosts::new(&tag);
    hosts.add(
        "h1",
        "10.0.10.2/24",
        "10.0.10.1",
        Some(("2001:db8:10::2/64", "2001:db8:10::1")),
    );
    hosts.add("h3", "10.0.10.3/24", "10.0.10.1", None);
    hosts.add(
        "h2",
        "10.0.20.2/24",
        "10.0.20.1",
        Some(("2001:db8:20::2/64", "2001:db8:20::1")),
    );
    hosts.add(
        "h4",
        "10.0.30.2/24",
        "10.0.30.1",
        Some(("2001:db8:30::2/64", "2001:db8:30::1")),
    );
    let config = format!(
        r#"[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
ipv6 = ["2001:db8:10::1/64"]
[[vlan]]
id = 20
ipv4 = ["10.0.20.1/24"]
ipv6 = ["2001:db8:20::1/64"]
[[port]]
name = "h1"
devargs = "net_af_packet0,iface={h1}"
vlan = {{ mode = "access", id = 10 }}
[[port]]
name = "h3"
devargs = "net_af_packet1,iface={h3}"
vlan = {{ mode = "access", id = 10 }}
[[port]]
name = "h2"
devargs = "net_af_packet2,iface={h2}"
vlan = {{ mode = "access", id = 20 }}
[[port]]
name = "h4"
devargs = "net_af_packet3,iface={h4}"
ipv4 = ["10.0.30.1/24"]
ipv6 = ["2001:db8:30::1/64"]
"#,
        h1 = hosts.veth("h1"),
        h2 = hosts.veth("h2"),
        h3 = hosts.veth("h3"),
        h4 = hosts.veth("h4"),
    );
    // Killed if the test fails before stopping it: a busy-polling switch left behind would
    // slow every later test.
    let (_lock, switch) = start(&dir, &tag, &config);

    ping(&hosts, "h1", "10.0.20.2");
    ping(&hosts, "h2", "10.0.10.2");
    ping(&hosts, "h1", "10.0.10.3");
    ping(&hosts, "h3", "10.0.10.2");
    ping(&hosts, "h1", "10.0.10.1");
    ping(&hosts, "h4", "10.0.10.2");
    ping(&hosts, "h1", "10.0.30.2");
    // IPv6: the hosts find their gateway by Neighbor Solicitation and the switch finds them
    // the same way (no static neighbours).
    let ping6 = |from: &str, to: &str| netns::ping(&hosts.0, from, &["ping", "-6"], to);
    ping6("h1", "2001:db8:10::1");
    ping6("h1", "2001:db8:20::2");
    ping6("h2", "2001:db8:10::2");
    ping6("h4", "2001:db8:10::2");
    ping6("h1", "2001:db8:30::2");

    // The switch is a router hop: TTL 1 toward another VLAN gets Time Exceeded, a
    // destination without a route gets net unreachable, both from h1's gateway address.
    for (to, from, expected) in [
        ("10.0.20.2", "10.0.10.1", "Time to live exceeded"),
        ("192.0.2.1", "10.0.10.1", "Destination Net Unreachable"),
        (
            "2001:db8:20::2",
            "2001:db8:10::1",
            "Time exceeded: Hop limit",
        ),
        (
            "2001:db8:99::1",
            "2001:db8:10::1",
            "Destination unreachable: No route",
        ),
    ] {
        let out = hosts
            .0
            .exec("h1", &["ping", "-n", "-c", "1", "-W", "2", "-t", "1", to]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success() && text.contains(&format!("From {from} icmp_seq=1 {expected}")),
            "h1 ping -t 1 {to}: {text}"
        );
    }

    let mut payload = vec![0u8; 10 * 1024 * 1024];
    let mut rng = common::Rng::new(42);
    payload.iter_mut().for_each(|b| *b = rng.next_u64() as u8);
    // Between VLANs through their interfaces; from a routed port, whose data frames take the
    // express lane (`Forwarder::stage_lane`); within VLAN 10.
    for (what, from, to, to_ip) in [
        ("routed", "h1", "h2", "10.0.20.2"),
        ("from the routed port", "h4", "h1", "10.0.10.2"),
        ("bridged", "h3", "h1", "10.0.10.2"),
        ("routed over IPv6", "h2", "h1", "2001:db8:10::2"),
    ] {
        let received = netns::tcp_transfer(&hosts.0, &dir, from, to, to_ip, &payload);
        assert!(
            received == payload,
            "{what} TCP transfer corrupted ({} of {} bytes)",
            received.len(),
            payload.len()
        );
    }

    stop(switch);
}

/// Path MTU through the switch with real hosts: j on a 1500-byte link, s on a 1280-byte one
/// (net_af_packet takes no MTU above 1500 in DPDK 22.11), each behind a routed port. j's
/// 1428-byte packets without DF are fragmented by the switch and answered; with DF they earn
/// ICMP Fragmentation Needed naming 1280, which the host's stack believes; over IPv6 the host
/// hears Packet Too Big and then fragments at the source.
#[test]
fn hosts_on_links_of_different_mtus_discover_the_path_mtu_through_the_switch() {
    if !can_run(&["ip", "ping", "python3"]) {
        return;
    }
    let dir = TestDir::new("hosts-mtu");
    let tag = format!("im{}", std::process::id() % 100_000);
    let mut hosts = Hosts::new(&tag);
    hosts.add(
        "j",
        "10.0.40.2/24",
        "10.0.40.1",
        Some(("2001:db8:40::2/64", "2001:db8:40::1")),
    );
    hosts.add(
        "s",
        "10.0.50.2/24",
        "10.0.50.1",
        Some(("2001:db8:50::2/64", "2001:db8:50::1")),
    );
    // The host's end of s's link; the switch sets its own end from `mtu`.
    hosts
        .0
        .must("s", &["ip", "link", "set", "eth0", "mtu", "1280"]);
    let config = format!(
        r#"[[port]]
name = "j"
devargs = "net_af_packet0,iface={j}"
ipv4 = ["10.0.40.1/24"]
ipv6 = ["2001:db8:40::1/64"]
[[port]]
name = "s"
devargs = "net_af_packet1,iface={s}"
mtu = 1280
ipv4 = ["10.0.50.1/24"]
ipv6 = ["2001:db8:50::1/64"]
"#,
        j = hosts.veth("j"),
        s = hosts.veth("s"),
    );
    let (_lock, switch) = start(&dir, &tag, &config);
    assert!(
        String::from_utf8_lossy(&sh(&["ip", "link", "show", &hosts.veth("s")]).stdout)
            .contains("mtu 1280"),
        "the switch set its end of s's link to MTU 1280"
    );

    ping(&hosts, "j", "10.0.50.2");
    // Without DF, before j knows anything of the path: the switch cuts the 1428-byte
    // packets to fit s's link; s reassembles them and answers (in fragments of its own).
    netns::ping(
        &hosts.0,
        "j",
        &["ping", "-M", "dont", "-s", "1400"],
        "10.0.50.2",
    );
    // With DF: the gateway says where it does not fit and how much does.
    let out = hosts.0.exec(
        "j",
        &[
            "ping",
            "-n",
            "-M",
            "do",
            "-s",
            "1400",
            "-c",
            "1",
            "-W",
            "2",
            "10.0.50.2",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("From 10.0.40.1 icmp_seq=1 Frag needed and DF set (mtu = 1280)"),
        "{text}"
    );
    // IPv6: Packet Too Big (once the switch knows s's address: it resolves a neighbour
    // before it knows the way out), after which j fragments at the source and gets through.
    netns::ping(&hosts.0, "j", &["ping", "-6"], "2001:db8:50::2");
    let out = hosts.0.exec(
        "j",
        &[
            "ping",
            "-6",
            "-n",
            "-s",
            "1400",
            "-c",
            "1",
            "-W",
            "2",
            "2001:db8:50::2",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("From 2001:db8:40::1 icmp_seq=1 Packet too big: mtu=1280"),
        "{text}"
    );
    netns::ping(
        &hosts.0,
        "j",
        &["ping", "-6", "-s", "1400"],
        "2001:db8:50::2",
    );

    stop(switch);
}

/// net_af_packet reports its link up whatever the kernel interface does (DPDK 22.11): the
/// switch reads the interface's carrier too, so a host whose link goes down is seen down
/// (and its port's ECMP members leave) and seen up again when it returns.
#[test]
fn a_hosts_link_going_down_and_up_is_seen_by_the_switch() {
    if !can_run(&["ip", "ping", "python3"]) {
        return;
    }
    let dir = TestDir::new("hosts-link");
    let tag = format!("il{}", std::process::id() % 100_000);
    let mut hosts = Hosts::new(&tag);
    hosts.add("a", "10.0.60.2/24", "10.0.60.1", None);
    let socket = dir.file("ctl.sock");
    let config = format!(
        r#"[control]
socket = "{socket}"
[[port]]
name = "a"
devargs = "net_af_packet0,iface={a}"
ipv4 = ["10.0.60.1/24"]
"#,
        socket = socket.display(),
        a = hosts.veth("a"),
    );
    let (_lock, switch) = start(&dir, &tag, &config);
    let link = || {
        show_json(&socket, "ports")[0]["link"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let wait_for = |state: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while link() != state {
            assert!(std::time::Instant::now() < deadline, "link never {state}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    ping(&hosts, "a", "10.0.60.1");
    wait_for("up");
    hosts.0.must("a", &["ip", "link", "set", "eth0", "down"]);
    wait_for("down");
    hosts.0.must("a", &["ip", "link", "set", "eth0", "up"]);
    wait_for("up");
    ping(&hosts, "a", "10.0.60.1");

    stop(switch);
}

/// Neighbour reachability against real hosts, with short timers (reachable 1 s, then three
/// requests 200 ms apart): on an idle switch, hosts that are there answer its requests and
/// stay resolved; a host that left (its address gone) stops answering and is forgotten.
#[test]
fn an_idle_switch_keeps_the_neighbours_that_answer_and_forgets_one_that_left() {
    if !can_run(&["ip", "ping", "python3"]) {
        return;
    }
    let dir = TestDir::new("hosts-nud");
    let tag = format!("nu{}", std::process::id() % 100_000);
    let mut hosts = Hosts::new(&tag);
    hosts.add("a", "10.0.63.2/24", "10.0.63.1", None);
    hosts.add("b", "10.0.64.2/24", "10.0.64.1", None);
    let socket = dir.file("ctl.sock");
    let config = format!(
        r#"[control]
socket = "{socket}"
[neighbor_timers]
reachable_s = 1
retrans_ms = 200
probes = 3
[[port]]
name = "a"
devargs = "net_af_packet0,iface={a}"
ipv4 = ["10.0.63.1/24"]
[[port]]
name = "b"
devargs = "net_af_packet1,iface={b}"
ipv4 = ["10.0.64.1/24"]
"#,
        socket = socket.display(),
        a = hosts.veth("a"),
        b = hosts.veth("b"),
    );
    let (_lock, switch) = start(&dir, &tag, &config);
    let neighbours = || show_json(&socket, "drops")["neighbors"].clone();
    let state_of = |ip: &str| -> String {
        let nexthops = show_json(&socket, "nexthops");
        let found = nexthops
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["ip"] == ip)
            .cloned();
        found.map_or("absent".into(), |n| n["state"].as_str().unwrap().into())
    };
    ping(&hosts, "a", "10.0.64.2");
    // Idle for several reachable times: each host is asked and answers, every time.
    std::thread::sleep(Duration::from_millis(3_500));
    let heard = neighbours();
    assert!(heard["probes"].as_u64().unwrap() >= 4, "{heard}");
    assert_eq!(heard["expired"], 0, "{heard}");
    for ip in ["10.0.63.2", "10.0.64.2"] {
        let state = state_of(ip);
        assert!(state == "reachable" || state == "stale", "{ip}: {state}");
    }
    // B leaves: within a reachable time and three requests it is forgotten; A stays.
    hosts.0.must("b", &["ip", "addr", "flush", "dev", "eth0"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while neighbours()["expired"] == 0 {
        assert!(std::time::Instant::now() < deadline, "B never expired");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(state_of("10.0.64.2"), "unresolved");
    assert_ne!(state_of("10.0.63.2"), "unresolved");
    assert_eq!(neighbours()["expired"], 1);
    ping(&hosts, "a", "10.0.63.1");

    stop(switch);
}
