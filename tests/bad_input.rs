//! End to end: bad configs exit 2 naming file, line and field; a port that cannot start
//! names the port, exits non-zero and leaves nothing running; a device that cannot take the
//! configured MTU runs with its largest and says so, and so every example runs on its TAP
//! devices; signals stop the switch with its final counters.

mod common;

use common::{TestDir, dpdk_lock, ironclos, run_ironclos, wait_with_timeout};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

/// TAP ports need the kernel's TUN device (root has it here; a container may not).
fn has_tun() -> bool {
    let present = std::path::Path::new("/dev/net/tun").exists();
    if !present {
        eprintln!("skipped: no /dev/net/tun for TAP ports");
    }
    present
}

fn write_config(dir: &TestDir, text: &str) -> String {
    let path = dir.file("ironclos.toml");
    std::fs::write(&path, text).expect("write config");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn a_bad_field_exits_2_with_file_line_and_field() {
    let dir = TestDir::new("bad-field");
    let path = write_config(
        &dir,
        "[dataplane]\nburst = 32\n\n[[port]]\nname = \"p0\"\ndevargs = \"net_null0\"\n\n[[port]]\nname = \"p1\"\ndevargs = \"nul1\"\n",
    );
    for args in [
        vec!["check-config", path.as_str()],
        vec!["check-config", "--config", path.as_str()],
        vec!["run", "--config", path.as_str()],
    ] {
        let out = run_ironclos(&args, Duration::from_secs(20));
        assert_eq!(out.status, Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("{path}:10:")) && out.stderr.contains("port[1].devargs"),
            "{args:?} must name file, line 10 and the field: {}",
            out.stderr
        );
    }
}

#[test]
fn a_missing_config_exits_2_naming_the_file() {
    let out = run_ironclos(
        &["run", "--config", "/nonexistent/leaf.toml"],
        Duration::from_secs(20),
    );
    assert_eq!(out.status, Some(2));
    assert!(
        out.stderr.contains("/nonexistent/leaf.toml"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn a_good_config_checks_without_dpdk() {
    let dir = TestDir::new("check-ok");
    let path = write_config(
        &dir,
        &format!(
            "[dataplane]\n{}\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"b\"\ndevargs = \"net_null1\"\n",
            dir.eal_toml()
        ),
    );
    // Positional as documented, or named as `run` names it.
    for args in [
        vec!["check-config", path.as_str()],
        vec!["check-config", "-c", path.as_str()],
    ] {
        let out = ironclos().args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("port 0 a = net_null0 (io peer: b)"),
            "{args:?}: {stdout}"
        );
        // No MTU: mbufs of the default 2048 bytes of frame plus 128 of headroom.
        assert!(stdout.contains("mbufs 16383 of 2176 bytes\n"), "{stdout}");
    }
    // With an MTU the mbufs hold its largest frame: 9000 + Ethernet 14 + two tags 8 + 128.
    let jumbo = write_config(
        &dir,
        &format!(
            "[dataplane]\n{}\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nmtu = 9000\n",
            dir.eal_toml()
        ),
    );
    let out = ironclos()
        .args(["check-config", &jumbo])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("mbufs 16383 of 9150 bytes (for MTU 9000;"),
        "{stdout}"
    );
    // Both at once is ambiguous: a usage error.
    let out = ironclos()
        .args(["check-config", &path, "--config", &path])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !dir.dpdk_runtime_dir().exists(),
        "check-config must not start DPDK"
    );
}

#[test]
fn a_port_that_cannot_start_is_named_and_nothing_is_left_running() {
    let dir = TestDir::new("bad-port");
    for (devargs, hint) in [
        ("net_nosuchdriver0".to_owned(), "nosuchdriver"),
        (
            format!("net_pcap0,rx_pcap={}", dir.file("missing.pcap").display()),
            "missing.pcap",
        ),
    ] {
        let path = write_config(
            &dir,
            &format!(
                "[dataplane]\n{}\n[[port]]\nname = \"good\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"uplink7\"\ndevargs = \"{devargs}\"\n",
                dir.eal_toml()
            ),
        );
        let out = run_ironclos(&["run", "--config", &path], Duration::from_secs(30));
        assert_eq!(out.status, Some(1), "{devargs}: {}", out.stderr);
        assert!(
            out.stderr.contains("port uplink7"),
            "names the port: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains(hint),
            "shows the devargs: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert!(
            !dir.dpdk_runtime_dir().exists(),
            "DPDK runtime dir left behind"
        );
    }
}

#[test]
fn a_device_that_takes_a_smaller_mtu_runs_with_its_largest_and_says_so() {
    // A TAP device takes 1522-byte frames: MTU 1504 at most (ethdev's rule: 1522 less the
    // 18 bytes of Ethernet header and CRC). A jumbo MTU in the config must not stop the run.
    if !has_tun() {
        return;
    }
    let dir = TestDir::new("tap-mtu");
    let iface = format!("icmtu{}", std::process::id() % 100_000);
    let path = write_config(
        &dir,
        &format!(
            "[dataplane]\n{}\n[[port]]\nname = \"t\"\ndevargs = \"net_tap0,iface={iface}\"\nmtu = 9100\n[[port]]\nname = \"n\"\ndevargs = \"net_null0\"\nmtu = 1500\n",
            dir.eal_toml()
        ),
    );
    let out = run_ironclos(
        &["run", "--config", &path, "--duration", "0.3"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "port t: the device takes an MTU of at most 1504: using 1504, not the configured 9100"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("port n:"), "{}", out.stderr);
}

#[test]
fn every_example_runs_on_its_tap_devices() {
    // The examples are what an engineer starts from: each must run as README says, on the
    // TAP devices it names (their MTU capped at 1504, with the note above), and stop cleanly.
    if !has_tun() {
        return;
    }
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for (name, ports) in [("leaf.toml", 5), ("spine.toml", 4), ("srv6.toml", 3)] {
        let path = examples.join(name);
        let out = run_ironclos(
            &[
                "run",
                "--config",
                path.to_str().unwrap(),
                "--duration",
                "0.5",
            ],
            Duration::from_secs(30),
        );
        assert_eq!(out.status, Some(0), "{name}: {}", out.stderr);
        assert!(
            out.stdout
                .contains(&format!("ironclos ready: {ports} ports")),
            "{name}: {}",
            out.stdout
        );
        assert!(
            out.stderr
                .contains("the device takes an MTU of at most 1504"),
            "{name}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{name}: {}", out.stderr);
    }
}

#[test]
fn sigterm_stops_a_live_switch_and_prints_final_counters() {
    let dir = TestDir::new("sigterm");
    let path = write_config(
        &dir,
        &format!(
            "[dataplane]\n{}\n[[port]]\nname = \"src\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"sink\"\ndevargs = \"net_null1,no-rx=1\"\n",
            dir.eal_toml()
        ),
    );
    let stats = dir.file("stats.json");
    let _lock = dpdk_lock();
    let mut child = ironclos()
        .args([
            "run",
            "--config",
            &path,
            "--stats-json",
            stats.to_str().expect("utf-8"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ready = String::new();
    stdout.read_line(&mut ready).expect("read ready line");
    assert!(ready.starts_with("ironclos ready: 2 ports"), "{ready}");
    std::thread::sleep(Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read rest");
    let out = wait_with_timeout(child, Duration::from_secs(20));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(rest.contains("ironclos stopped (signal)"), "{rest}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    // net_null0 produced packets for 300 ms; io mode moved them to sink.
    let forwarded = json["ports"][1]["tx_packets"].as_u64().expect("tx_packets");
    assert!(forwarded > 0, "{json}");
    assert_eq!(
        json["ports"][0]["rx_packets"].as_u64(),
        Some(forwarded + json["drops"]["tx_ring_full"].as_u64().unwrap())
    );
    assert!(
        !dir.dpdk_runtime_dir().exists(),
        "DPDK runtime dir left behind"
    );
}
