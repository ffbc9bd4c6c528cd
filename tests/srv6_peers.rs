//! End to end with Linux as the SRv6 peers: two network namespaces on veth pairs attached to
//! ironclos with net_af_packet. Each host is a headend (`encap seg6 mode encap`) toward the
//! other and its far end (`seg6local End.DT6`). From a to b's address, the SID list sends
//! every packet through ironclos as an End SID and then its uN SID; from a to b's second
//! address, through the End SID alone, whose next segment is b's; from b, through the uN SID
//! alone. (The last two are the express lane's endpoints: one step, then the FIB.)
//! Ping and a TCP transfer must succeed, and a capture at b must show the destination set as
//! RFC 8986 and RFC 9800 say. Needs root.

mod common;

use common::netns::{self, Namespaces, Reaper, can_run, sh, start_switch};
use common::{TestDir, dpdk_lock, wait_with_timeout};
use std::net::Ipv6Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

const ROUTER_MAC: &str = "02:00:00:00:01:00";

/// The test's hosts: an IPv6 address each, MAC fixed so the switch can name it as a static
/// neighbour, and the kernel's SRv6 on.
struct Peers(Namespaces);

impl Peers {
    fn ns(&self, host: &str) -> String {
        self.0.ns(host)
    }

    fn veth(&self, host: &str) -> String {
        self.0.veth(host)
    }

    /// Runs `command` (words separated by spaces) in `host`; it must succeed.
    fn must(&self, host: &str, command: &str) {
        let args: Vec<&str> = command.split_whitespace().collect();
        self.0.must(host, &args)
    }

    /// A host at `address`/64 behind the switch's `gateway`.
    fn add(&mut self, host: &str, mac: &str, address: &str, gateway: &str) {
        self.0.create(host);
        self.must(host, &format!("ip link set eth0 address {mac}"));
        self.must(host, &format!("ip -6 addr add {address}/64 dev eth0 nodad"));
        self.must(
            host,
            &format!("ip -6 neigh add {gateway} lladdr {ROUTER_MAC} dev eth0 nud permanent"),
        );
        // seg6local routes are input routes of a router: forwarding must be on.
        for setting in [
            "net.ipv6.conf.all.seg6_enabled=1",
            "net.ipv6.conf.eth0.seg6_enabled=1",
            "net.ipv6.conf.all.forwarding=1",
        ] {
            self.must(host, &format!("sysctl -qw {setting}"));
        }
        self.0.attach(host);
    }
}

fn ping(peers: &Peers, from: &str, to: &str) {
    netns::ping(&peers.0, from, &["ping", "-6"], to);
}

/// RFC 9800 shift by hand on the address's bits: keep the 32-bit block, move the rest up by
/// 16 bits, fill with zeros.
fn usid_shift_f3216(address: Ipv6Addr) -> Ipv6Addr {
    let mut words = address.segments().to_vec();
    words.remove(2);
    words.push(0);
    Ipv6Addr::from(<[u16; 8]>::try_from(words).unwrap())
}

#[test]
fn linux_headend_and_end_dt6_through_ironclos_as_end_and_un() {
    if !can_run(&["ip", "ping", "python3", "tcpdump"]) {
        return;
    }
    let dir = TestDir::new("srv6-peers");
    let tag = format!("is{}", std::process::id() % 100_000);
    let mut peers = Peers(Namespaces::new(&tag));
    peers.add("a", "02:00:00:00:0a:01", "2001:db8:a1::2", "2001:db8:a1::1");
    peers.add("b", "02:00:00:00:0b:01", "2001:db8:b1::2", "2001:db8:b1::1");
    // a -> b: End at the switch (2001:db8:5::1), then the switch's uN with b's uSID 0200;
    // b decapsulates fcbb:bb00:200::/48. b -> a: the switch's uN with a's uSID 0300 only.
    for (host, src, far, segments) in [
        (
            "a",
            "2001:db8:a1::2",
            "2001:db8:b1::/64",
            "2001:db8:5::1,fcbb:bb00:100:200::",
        ),
        (
            "b",
            "2001:db8:b1::2",
            "2001:db8:a1::/64",
            "fcbb:bb00:100:300::",
        ),
    ] {
        let gateway = if host == "a" {
            "2001:db8:a1::1"
        } else {
            "2001:db8:b1::1"
        };
        peers.must(host, &format!("ip sr tunsrc set {src}"));
        peers.must(
            host,
            &format!(
                "ip -6 route add {far} encap seg6 mode encap segs {segments} dev eth0 advmss 1200"
            ),
        );
        for prefix in ["fcbb::/16", "2001:db8:5::/64"] {
            peers.must(
                host,
                &format!("ip -6 route add {prefix} via {gateway} dev eth0"),
            );
        }
    }
    for (host, sid) in [("b", "fcbb:bb00:200::/48"), ("a", "fcbb:bb00:300::/48")] {
        peers.must(
            host,
            &format!("ip -6 route add {sid} encap seg6local action End.DT6 table 255 dev eth0"),
        );
    }
    // b's second address, reached from a through the End SID alone (its next segment is b's
    // End.DT6 SID, routed by the switch's FIB).
    peers.must("b", "ip link set lo up");
    peers.must("b", "ip -6 addr add 2001:db8:b2::2/128 dev lo");
    peers.must(
        "a",
        "ip -6 route add 2001:db8:b2::/64 encap seg6 mode encap segs \
         2001:db8:5::1,fcbb:bb00:200:: dev eth0",
    );

    let config = format!(
        r#"[switch]
name = "{tag}"
router_mac = "{ROUTER_MAC}"
[dataplane]
mode = "switch"
worker_lcores = [1]
{eal}
[[port]]
name = "a"
devargs = "net_af_packet0,iface={va}"
ipv6 = ["2001:db8:a1::1/64"]
[[port]]
name = "b"
devargs = "net_af_packet1,iface={vb}"
ipv6 = ["2001:db8:b1::1/64"]
[[neighbor]]
ip = "2001:db8:a1::2"
mac = "02:00:00:00:0a:01"
port = "a"
[[neighbor]]
ip = "2001:db8:b1::2"
mac = "02:00:00:00:0b:01"
port = "b"
[[route]]
prefix = "fcbb:bb00:200::/48"
via = "2001:db8:b1::2"
port = "b"
[[route]]
prefix = "fcbb:bb00:300::/48"
via = "2001:db8:a1::2"
port = "a"
[[srv6.sid]]
prefix = "fcbb:bb00:100::/48"
behavior = "uN"
[[srv6.sid]]
prefix = "2001:db8:5::1/128"
behavior = "End"
"#,
        eal = dir.eal_toml(),
        va = peers.veth("a"),
        vb = peers.veth("b"),
    );
    let path = dir.file("switch.toml");
    std::fs::write(&path, config).expect("write config");
    let _lock = dpdk_lock();
    let mut switch = Reaper(Some(start_switch(path.to_str().unwrap())));

    // Capture what reaches b, as b's kernel receives it.
    let capture = dir.file("at-b.pcap");
    let tcpdump = Command::new("ip")
        .args([
            "netns",
            "exec",
            &peers.ns("b"),
            "tcpdump",
            "-i",
            "eth0",
            // What b receives only: b's own headend traffic is addressed to fcbb::/16 too.
            "-Q",
            "in",
            "-U",
            "-w",
            capture.to_str().unwrap(),
            "ip6 and dst net fcbb::/16",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump");
    let mut tcpdump = Reaper(Some(tcpdump));
    std::thread::sleep(Duration::from_millis(500));

    ping(&peers, "a", "2001:db8:b1::2");
    ping(&peers, "b", "2001:db8:a1::2");
    ping(&peers, "a", "2001:db8:b2::2");
    // The switch's own SIDs answer a ping (RFC 8986 4.1.1 upper-layer processing): the End
    // SID, and the uN SID whose container ends after its own uSID. From a, so b's capture
    // holds only the SRv6 traffic it checks below.
    ping(&peers, "a", "2001:db8:5::1");
    ping(&peers, "a", "fcbb:bb00:100::");
    let mut payload = vec![0u8; 2 * 1024 * 1024];
    let mut rng = common::Rng::new(7);
    payload.iter_mut().for_each(|b| *b = rng.next_u64() as u8);
    let received = netns::tcp_transfer(&peers.0, &dir, "a", "b", "2001:db8:b1::2", &payload);
    assert!(
        received == payload,
        "TCP over SRv6 corrupted ({} of {} bytes)",
        received.len(),
        payload.len()
    );

    std::thread::sleep(Duration::from_millis(300));
    if let Some(mut t) = tcpdump.0.take() {
        let _ = sh(&["kill", "-INT", &t.id().to_string()]);
        let _ = t.wait();
    }
    let packets = control::pcap::read_pcap_file(&capture).expect("capture");
    assert!(!packets.is_empty(), "nothing captured at b");
    // Every SRv6 packet at b: SRH with SL 0 after the End; Segment List[0] either the uSID
    // container a put there, with the DA that container shifted by one uSID (RFC 9800), or
    // b's SID itself, which the End made the DA.
    let container: Ipv6Addr = "fcbb:bb00:100:200::".parse().unwrap();
    let (mut checked, mut end_only) = (0, 0);
    for packet in &packets {
        let frame = &packet.data;
        if frame.len() < 14 + 40 + 8 + 32 || frame[12..14] != [0x86, 0xdd] {
            continue;
        }
        let ip = &frame[14..];
        let da = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
        assert_eq!(ip[6], 43, "routing header kept (no PSP configured)");
        let srh = &ip[40..];
        assert_eq!(
            (srh[2], srh[3], srh[4]),
            (4, 0, 1),
            "SRH type 4, SL 0, LE 1"
        );
        let segment0 = Ipv6Addr::from(<[u8; 16]>::try_from(&srh[8..24]).unwrap());
        let b_sid: Ipv6Addr = "fcbb:bb00:200::".parse().unwrap();
        if segment0 == container {
            assert_eq!(da, usid_shift_f3216(container), "DA after uN");
            assert_eq!(da, b_sid);
            checked += 1;
        } else {
            // Through the End SID alone: DA = Segment List[SL] (RFC 8986 4.1 S14-S15).
            assert_eq!(segment0, b_sid, "Segment List[0] of a's second policy");
            assert_eq!(da, segment0, "DA after End");
            end_only += 1;
        }
    }
    assert!(
        checked >= 3,
        "only {checked} SRv6 packets through End and uN captured at b"
    );
    assert!(
        end_only >= 3,
        "only {end_only} packets through the End SID alone captured at b"
    );

    let mut child = switch.0.take().unwrap();
    let killed = sh(&["kill", "-TERM", &child.id().to_string()]);
    assert!(killed.status.success());
    let out = wait_with_timeout(
        {
            let _ = child.stdout.take();
            child
        },
        Duration::from_secs(20),
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
}
