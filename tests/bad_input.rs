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

#[test]
fn gen_trace_refuses_options_it_cannot_honour_and_writes_nothing() {
    let dir = TestDir::new("gen-trace-bad");
    let out = dir.file("x.pcap");
    let out = out.to_str().expect("utf-8");
    for (args, hint) in [
        (
            vec!["--frame-len", "18446744073709551615", "--packets", "1"],
            "60..=65535",
        ),
        (vec!["--frame-len", "70000"], "60..=65535"),
        (vec!["--frame-len", "10"], "60..=65535"),
        (vec!["--frame-len", "59"], "60..=65535"),
        (vec!["--flows", "0"], "--flows"),
        (
            vec!["--gap-ns", "18446744073709551615", "--packets", "2"],
            "--gap-ns 18446744073709551615",
        ),
        // No u64 overflow, but past the last second a pcap file can hold.
        (
            vec!["--gap-ns", "3000000000000000000", "--packets", "2"],
            "2106",
        ),
    ] {
        let mut all = vec!["gen-trace", "--out", out];
        all.extend_from_slice(&args);
        let result = ironclos().args(&all).output().expect("run");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            !std::path::Path::new(out).exists(),
            "{args:?} must write nothing"
        );
    }
    // The extremes of the range are written as asked.
    for len in ["60", "65535"] {
        let result = ironclos()
            .args([
                "gen-trace",
                "--out",
                out,
                "--frame-len",
                len,
                "--packets",
                "3",
                "--flows",
                "2",
            ])
            .output()
            .expect("run");
        assert_eq!(result.status.code(), Some(0), "{len}");
        let trace = dir.read_pcap("x.pcap");
        assert_eq!(trace.len(), 3);
        assert!(trace.iter().all(|p| p.data.len().to_string() == len));
    }
    // An output file that cannot be created is named, with nothing else written.
    let result = ironclos()
        .args(["gen-trace", "--out", "/nonexistent/dir/x.pcap"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/dir/x.pcap") && stderr.contains("No such file"),
        "{stderr}"
    );
}

/// An io-mode config of two null ports (nothing is ever started by the tests that use it).
fn io_config(dir: &TestDir) -> String {
    write_config(
        dir,
        &format!(
            "[dataplane]\n{}\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"b\"\ndevargs = \"net_null1\"\n",
            dir.eal_toml()
        ),
    )
}

/// `ironclos run --config PATH --exit-when-idle --schedule SCHEDULE`.
fn replay_with_schedule(path: &str, schedule: &std::path::Path) -> common::RunOutput {
    run_ironclos(
        &[
            "run",
            "--config",
            path,
            "--exit-when-idle",
            "--schedule",
            schedule.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    )
}

#[test]
fn a_schedule_in_io_mode_is_a_bad_command_line_found_before_dpdk() {
    let dir = TestDir::new("schedule-io");
    let path = io_config(&dir);
    let schedule = dir.file("s.toml");
    std::fs::write(
        &schedule,
        "[[event]]\nat_us = 10\nport = \"a\"\nlink = \"down\"\n",
    )
    .unwrap();
    let out = replay_with_schedule(&path, &schedule);
    assert_eq!(out.status, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("--schedule") && out.stderr.contains("mode = \"switch\""),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("ironclos ready"), "{}", out.stdout);
    assert!(
        !dir.dpdk_runtime_dir().exists(),
        "the check comes before DPDK starts"
    );
}

#[test]
fn schedule_errors_name_the_event_and_its_field() {
    let dir = TestDir::new("schedule-fields");
    let path = write_config(
        &dir,
        &format!(
            "[switch]\nrouter_mac = \"02:00:00:00:00:01\"\n[dataplane]\nmode = \"switch\"\n{}\n[[port]]\nname = \"up1\"\ndevargs = \"net_null0\"\nipv4 = [\"10.0.0.1/31\"]\n",
            dir.eal_toml()
        ),
    );
    let schedule = dir.file("s.toml");
    for (text, expected) in [
        (
            "[[event]]\nat_us = -10\nport = \"up1\"\nlink = \"down\"\n",
            ":2:9: field `event[0].at_us`: invalid value",
        ),
        (
            "[[event]]\nat_us = 1.5\nport = \"up1\"\nlink = \"down\"\n",
            ":2:9: field `event[0].at_us`: invalid type",
        ),
        (
            "[[event]]\nat_us = 10\nport = \"up1\"\nlink = \"down\"\nfoo = 1\n",
            ":5:1: field `event[0].foo`: unknown field `foo`",
        ),
        ("foo = 1\n", ":1:1: field `foo`: unknown field `foo`"),
    ] {
        std::fs::write(&schedule, text).unwrap();
        let out = replay_with_schedule(&path, &schedule);
        assert_eq!(out.status, Some(2), "{text:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("{}{expected}", schedule.display())),
            "{text:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn switch_rules_exit_2_at_the_offending_field_and_defaults_fill_in() {
    let dir = TestDir::new("switch-rules");
    let base = format!(
        "[switch]\nrouter_mac = \"02:00:00:00:00:01\"\n[dataplane]\nmode = \"switch\"\n{}\n[[port]]\nname = \"up1\"\ndevargs = \"net_null0\"\nipv4 = [\"10.0.0.1/31\"]\nipv6 = [\"2001:db8:ff::1/127\"]\n[[port]]\nname = \"up2\"\ndevargs = \"net_null1\"\nipv4 = [\"10.0.3.1/24\"]\n",
        dir.eal_toml()
    );
    let lines = base.lines().count();
    for (extra, line, field, expected) in [
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up2\", via = \"10.0.3.255\" }]\n",
            3,
            "nexthop_group[0].members[0].via",
            "10.0.3.255 is the subnet's broadcast address (host part all ones) on interface 1 (port up2) (10.0.3.1/24)",
        ),
        (
            "[[route]]\nprefix = \"10.9.0.0/16\"\nvia = \"10.0.3.0\"\nport = \"up2\"\n",
            3,
            "route[0].via",
            "10.0.3.0 is the subnet's network address (host part all zero)",
        ),
        (
            "[[neighbor]]\nip = \"10.0.3.255\"\nmac = \"02:00:00:00:51:01\"\nport = \"up2\"\n",
            2,
            "neighbor[0].ip",
            "10.0.3.255 is the subnet's broadcast address",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up2\", via = \"10.0.3.2\", weight = 65536 }]\n",
            3,
            "nexthop_group[0].members[0].weight",
            "65536 is out of range 1..=65535",
        ),
        (
            "[[srv6.sid]]\nprefix = \"2001:db8:ff::/64\"\nbehavior = \"End\"\n",
            2,
            "srv6.sid[0].prefix",
            "2001:db8:ff::/64 covers the connected subnet 2001:db8:ff::/127 of interface 0 (port up1) (2001:db8:ff::1/127): the my-SID table is looked up before the FIB",
        ),
        (
            "[[srv6.sid]]\nprefix = \"2001:db8:ff::1/128\"\nbehavior = \"End.DT6\"\n",
            2,
            "srv6.sid[0].prefix",
            "2001:db8:ff::1/128 is this switch's own address on interface 0 (port up1)",
        ),
        // A policy's prefix is a route: as a [[route]]'s, not an interface's subnet or address.
        (
            "[[srv6.policy]]\nprefix = \"10.0.3.0/24\"\nsegments = [\"fcbb:bb00:100::\"]\n",
            2,
            "srv6.policy[0].prefix",
            "10.0.3.0/24 is the connected subnet of interface 1 (port up2) (10.0.3.1/24); it is routed there already",
        ),
        (
            "[[srv6.policy]]\nname = \"p\"\nprefix = \"10.0.0.1/32\"\nsegments = [\"fcbb:bb00:100::\"]\n",
            3,
            "srv6.policy[0].prefix",
            "10.0.0.1/32 is this switch's own address on interface 0 (port up1)",
        ),
        // IPv6 needs a link MTU of at least 1280 bytes (RFC 8200 section 5).
        (
            "[[port]]\nname = \"up3\"\ndevargs = \"net_null2\"\nmtu = 576\nipv4 = [\"10.0.4.1/24\"]\nipv6 = [\"2001:db8:4::1/64\"]\n",
            4,
            "port[2].mtu",
            "576 is below 1280, the smallest link MTU IPv6 allows (RFC 8200 section 5), and this routed port has IPv6 addresses (`ipv6`); raise the MTU to at least 1280 or carry no IPv6 on this port",
        ),
    ] {
        let path = write_config(&dir, &format!("{base}{extra}"));
        for args in [
            vec!["check-config", path.as_str()],
            vec!["run", "--config", path.as_str()],
        ] {
            let out = run_ironclos(&args, Duration::from_secs(20));
            assert_eq!(out.status, Some(2), "{args:?} {extra:?}: {}", out.stderr);
            let at = format!("{path}:{}:", lines + line);
            assert!(
                out.stderr.contains(&at)
                    && out.stderr.contains(&format!("field `{field}`"))
                    && out.stderr.contains(expected),
                "{args:?} {extra:?}: want {at} {field} {expected}: {}",
                out.stderr
            );
        }
    }
    // Both addresses of a /31 are hosts (RFC 3021); a policy without `mode` is H.Encaps.
    let path = write_config(
        &dir,
        &format!(
            "{base}[[route]]\nprefix = \"10.9.0.0/16\"\nvia = \"10.0.0.0\"\nport = \"up1\"\n[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\nsegments = [\"fcbb:bb00:100::\"]\n"
        ),
    );
    let out = run_ironclos(&["check-config", path.as_str()], Duration::from_secs(20));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("-> SRv6 policy 10.20.0.0/16 (Encaps, segments [fcbb:bb00:100::]"),
        "{}",
        out.stdout
    );
}

#[test]
fn output_files_that_cannot_be_created_exit_2_before_the_run() {
    let dir = TestDir::new("unwritable-outputs");
    let io = io_config(&dir);
    let switch = dir.file("switch.toml");
    std::fs::write(
        &switch,
        format!(
            "[switch]\nrouter_mac = \"02:00:00:00:00:01\"\n[dataplane]\nmode = \"switch\"\n{}\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nipv4 = [\"10.0.0.1/31\"]\n",
            dir.eal_toml()
        ),
    )
    .unwrap();
    let in_a_directory = dir.path.to_str().unwrap().to_owned();
    for (config, option, file, reason) in [
        (
            io.as_str(),
            "--stats-json",
            "/nonexistent/dir/s.json",
            "No such file or directory",
        ),
        (
            switch.to_str().unwrap(),
            "--events",
            "/nonexistent/dir/ev.jsonl",
            "No such file or directory",
        ),
        (
            io.as_str(),
            "--stats-json",
            in_a_directory.as_str(),
            "Is a directory",
        ),
    ] {
        let out = run_ironclos(
            &["run", "--config", config, "--duration", "5", option, file],
            Duration::from_secs(30),
        );
        assert_eq!(out.status, Some(2), "{option} {file}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("{option} {file}")) && out.stderr.contains(reason),
            "{option} {file}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("ironclos ready"), "{}", out.stdout);
        assert!(
            !dir.dpdk_runtime_dir().exists(),
            "checked before DPDK starts"
        );
    }
    // One file for both would hold neither.
    let both = dir.file("out.json");
    let both = both.to_str().unwrap();
    let out = run_ironclos(
        &[
            "run",
            "--config",
            switch.to_str().unwrap(),
            "--duration",
            "5",
            "--stats-json",
            both,
            "--events",
            both,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.status, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("the same file"), "{}", out.stderr);
    assert!(!dir.dpdk_runtime_dir().exists());
}

#[test]
fn run_help_describes_what_readme_does() {
    let help = |args: &[&str]| {
        let out = ironclos().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = help(&["--help"]);
    for text in ["rx_nombuf", "replay_stalled", "3 a replay is incomplete"] {
        assert!(
            top.contains(text),
            "`ironclos --help` lacks {text:?}:\n{top}"
        );
    }
    let run = help(&["run", "--help"]);
    for text in [
        // --schedule: all three actions.
        "link = \"down\"",
        "updates = [...]",
        "config = \"FILE\"",
        // --events: every event README lists.
        "watermark_up",
        "ecn_marking_start",
        "pfc_xoff_sent",
        "pfc_received",
        "pfc_watchdog_storm",
        "pfc_watchdog_restored",
        "flowlet_move",
        // --exit-when-idle: the statuses other than 0.
        "or 3 if the replay is incomplete",
        "or 2 if the switch refused a --schedule event",
    ] {
        assert!(
            run.contains(text),
            "`ironclos run --help` lacks {text:?}:\n{run}"
        );
    }
    let gen_trace = help(&["gen-trace", "--help"]);
    assert!(gen_trace.contains("60..=65535"), "{gen_trace}");
}

/// The entries of a clap help text's `Arguments:`, `Options:` and `Commands:` sections (the
/// name as written, e.g. `<PREFIX>`, `--vrf <VRF>`, `route`) that have no description: no
/// text after the name on its line, nor (in `--help`'s long form) on the lines below it.
/// clap's own notes (`[possible values: ...]`, `[default: ...]`) are no description.
fn undescribed_help_entries(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let clap_note =
        |text: &str| text.starts_with("[possible values") || text.starts_with("[default");
    let mut missing = Vec::new();
    let mut in_section = false;
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_section = ["Arguments:", "Options:", "Commands:"].contains(&line.trim_end());
            continue;
        }
        // An entry starts at column 2 (or 6, an option without a short form); its
        // description follows two spaces on, or on deeper-indented lines below.
        if !in_section || line.trim().is_empty() || indent(line) > 6 {
            continue;
        }
        let entry = line.trim();
        let (name, text) = match entry.find("  ") {
            Some(at) => (&entry[..at], entry[at..].trim()),
            None => (entry, ""),
        };
        let below = lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && indent(l) > 6)
            .map(|l| l.trim())
            .find(|t| !clap_note(t));
        if (text.is_empty() || clap_note(text)) && below.is_none() {
            missing.push(name.to_owned());
        }
    }
    missing
}

/// The subcommands a help text's `Commands:` section lists (but `help`).
fn help_subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_commands = line.trim_end() == "Commands:";
            continue;
        }
        if in_commands && line.starts_with("  ") && !line.starts_with("   ") {
            let name = line.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" {
                out.push(name.to_owned());
            }
        }
    }
    out
}

#[test]
fn every_ctl_subcommand_and_argument_has_a_description() {
    // Both help forms: `-h` (short, one line each) and `--help` (long, descriptions below
    // the names when any is long).
    let help = |args: &[String]| {
        let out = ironclos().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut pending = vec![vec!["ctl".to_owned()]];
    let mut seen = 0;
    let mut missing = Vec::new();
    while let Some(command) = pending.pop() {
        for flag in ["-h", "--help"] {
            let mut args = command.clone();
            args.push(flag.to_owned());
            let text = help(&args);
            for entry in undescribed_help_entries(&text) {
                missing.push(format!("ironclos {} {flag}: {entry}", command.join(" ")));
            }
            if flag == "-h" {
                for sub in help_subcommands(&text) {
                    let mut next = command.clone();
                    next.push(sub);
                    pending.push(next);
                }
            }
        }
        seen += 1;
    }
    assert!(seen > 30, "only {seen} ctl commands found");
    assert!(
        missing.is_empty(),
        "help entries without a description:\n{}",
        missing.join("\n")
    );
    // The parser sees a missing description, in both forms.
    assert_eq!(
        undescribed_help_entries(
            "Usage: x\n\nArguments:\n  <PREFIX>  \n  <MODE>  [possible values: a, b]\n\nOptions:\n      --vrf <VRF>  \n  -h, --help   Print help\n"
        ),
        ["<PREFIX>", "<MODE>", "--vrf <VRF>"]
    );
    assert_eq!(
        undescribed_help_entries(
            "Options:\n      --socket <SOCKET>\n          The socket\n\n      --vrf <VRF>\n\n  -h, --help\n          Print help\n"
        ),
        ["--vrf <VRF>"]
    );
}

#[test]
fn table_add_without_the_arrow_is_a_bad_command_line_with_a_clean_message() {
    // Checked before the switch is reached: no socket needed.
    let out = ironclos()
        .args([
            "ctl",
            "--socket",
            "/nonexistent/ironclos.sock",
            "table_add",
            "ipv4_lpm",
            "blackhole",
            "0",
            "10.9.0.0/16",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "ironclos ctl: table_add needs `=>` between the match fields and the action \
         parameters (e.g. `table_add ipv4_lpm blackhole 0 10.9.0.0/16 =>`)"
    );
}

#[test]
fn ctl_json_errors_are_json_on_stdout_with_the_exit_status() {
    let ctl = |args: &[&str]| {
        let out = ironclos().arg("ctl").args(args).output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let socket = ["--socket", "/nonexistent/ironclos.sock"];
    // A bad command line (2), a switch that cannot be reached (1), no socket given (2).
    for (args, code, error) in [
        (
            vec!["table_add", "ipv4_lpm", "blackhole", "0", "10.9.0.0/16"],
            2,
            "table_add needs `=>` between the match fields and the action parameters \
             (e.g. `table_add ipv4_lpm blackhole 0 10.9.0.0/16 =>`)",
        ),
        (
            vec!["show", "ports"],
            1,
            "cannot connect to /nonexistent/ironclos.sock: No such file or directory (os error 2)",
        ),
    ] {
        let all: Vec<&str> = socket.iter().copied().chain(args.clone()).collect();
        let (status, out, err) = ctl(&all);
        assert_eq!(status, Some(code), "{args:?}: {out}{err}");
        assert_eq!(
            err,
            format!("ironclos ctl: {error}\n"),
            "{args:?}: text on stderr"
        );
        assert_eq!(out, "", "{args:?}");
        let json: Vec<&str> = std::iter::once("--json").chain(all).collect();
        let (status, out, err) = ctl(&json);
        assert_eq!(status, Some(code), "{json:?}: {out}{err}");
        assert_eq!(err, "", "{json:?}: nothing on stderr");
        let value: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
        assert_eq!(
            value,
            serde_json::json!({"ok": false, "error": error}),
            "{json:?}"
        );
    }
    let (status, out, err) = ironclos()
        .args(["ctl", "--json", "show", "ports"])
        .env_remove("IRONCLOS_SOCKET")
        .output()
        .map(|o| {
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .expect("run");
    assert_eq!((status, err.as_str()), (Some(2), ""), "{out}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).expect("JSON"),
        serde_json::json!({"ok": false, "error": "give --socket, --config or $IRONCLOS_SOCKET"})
    );
}

#[test]
fn group_balancing_options_without_mode_are_a_bad_command_line() {
    // A group update without --mode sets hash balancing (`group set` replaces the balancing,
    // whatever the group's mode now): an option of the other modes cannot apply, and is
    // refused before the switch is reached (no socket needed).
    let ctl = |args: &[&str]| {
        let out = ironclos()
            .args(["ctl", "--socket", "/nonexistent/ironclos.sock"])
            .args(args)
            .output()
            .expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let without_mode = "a group update without --mode sets hash balancing, so give --mode";
    for (args, expected) in [
        (
            &["group", "set", "g", "--flowlet-timeout-us", "10"][..],
            "--flowlet-timeout-us is for flowlet balancing: {} flowlet",
        ),
        (
            &["group", "set", "g", "--flowlet-table-size", "1024"],
            "--flowlet-table-size is for flowlet balancing: {} flowlet",
        ),
        (
            &["group", "set", "g", "--choice", "least-loaded"],
            "--choice is for flowlet or per-packet balancing: {} flowlet or --mode per-packet",
        ),
        (
            &["group", "set", "g", "--avoid-ecn"],
            "--avoid-ecn is for least-loaded flowlet or per-packet balancing: {} flowlet or \
             --mode per-packet (with --choice least-loaded)",
        ),
        (
            &[
                "group",
                "add",
                "g",
                "--member",
                "10.0.0.0,up1",
                "--flowlet-timeout-us",
                "10",
            ],
            "--flowlet-timeout-us is for flowlet balancing: {} flowlet",
        ),
    ] {
        let (code, stderr) = ctl(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("ironclos ctl: {}", expected.replace("{}", without_mode)),
            "{args:?}"
        );
    }
    // With a mode, the command line is good: ctl goes on to the (missing) socket.
    let (code, stderr) = ctl(&[
        "group",
        "set",
        "g",
        "--mode",
        "flowlet",
        "--flowlet-timeout-us",
        "10",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    let out = ironclos()
        .args(["ctl", "group", "set", "--help"])
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&out.stdout);
    for text in ["without --mode the group hashes", "needs --mode flowlet"] {
        assert!(
            help.contains(text),
            "`ctl group set --help` lacks {text:?}:\n{help}"
        );
    }
}

#[test]
fn a_blank_raw_request_is_a_bad_command_line_refused_at_once() {
    // The switch skips blank lines unanswered: ctl refuses one before reaching it (no socket
    // needed), rather than wait for a reply that never comes.
    for blank in ["", "   ", "\n \t\n"] {
        let out = ironclos()
            .args([
                "ctl",
                "--socket",
                "/nonexistent/ironclos.sock",
                "raw",
                blank,
            ])
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{blank:?}: {stderr}");
        assert!(
            stderr.starts_with("ironclos ctl: raw: the request is blank"),
            "{blank:?}: {stderr}"
        );
    }
    let out = ironclos()
        .args(["ctl", "raw", "--help"])
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&out.stdout);
    for text in ["one request", "every reply", "blank", "exit status is 1"] {
        assert!(
            help.contains(text),
            "`ctl raw --help` lacks {text:?}:\n{help}"
        );
    }
}

#[test]
fn eal_options_ironclos_sets_are_refused_after_the_double_dash_too() {
    let dir = TestDir::new("eal-after-dashes");
    let path = io_config(&dir);
    for arg in ["-l0-1", "--main-lcore=1", "--vdev=net_null9"] {
        let out = run_ironclos(
            &["run", "--config", &path, "--exit-when-idle", "--", arg],
            Duration::from_secs(30),
        );
        assert_eq!(out.status, Some(2), "{arg}: {}", out.stderr);
        assert!(
            out.stderr.contains("EAL arguments after `--`") && out.stderr.contains(arg),
            "{arg}: {}",
            out.stderr
        );
        assert!(
            !dir.dpdk_runtime_dir().exists(),
            "{arg}: before DPDK starts"
        );
    }
}
