//! End to end: a config whose text is not UTF-8, and IPv6 interface addresses that only carry
//! an IPv4 address (RFC 4291 2.5.5), exit 2 naming the file, line, column and field, before
//! DPDK starts, from `check-config` and `run` alike.

mod common;

use common::{TestDir, run_ironclos};
use std::time::Duration;

/// Runs `check-config` and `run --config` on `path`; each must exit 2 with `head` (the
/// file, line, column and field) and `message` on stderr, and start no DPDK.
fn assert_refused(dir: &TestDir, path: &str, head: &str, message: &str) {
    for args in [vec!["check-config", path], vec!["run", "--config", path]] {
        let out = run_ironclos(&args, Duration::from_secs(20));
        assert_eq!(out.status, Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(head) && out.stderr.contains(message),
            "{args:?}: want {head:?} and {message:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert!(
            !dir.dpdk_runtime_dir().exists(),
            "a bad config must not start DPDK"
        );
    }
}

#[test]
fn a_config_that_is_not_utf8_exits_2_at_the_line_and_column_where_it_stops() {
    let dir = TestDir::new("not-utf8");
    let path = dir.file("leaf.toml");
    // Line 3, a comment, holds a Latin-1 'é' (0xE9) at column 6: the field is the table's.
    let mut bytes = format!("[dataplane]\n{}\n# caf", dir.eal_toml()).into_bytes();
    bytes.push(0xe9);
    bytes.extend_from_slice(b"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n");
    std::fs::write(&path, &bytes).expect("write config");
    let path = path.to_str().expect("utf-8 path");
    assert_refused(
        &dir,
        path,
        &format!("{path}:3:6: field `dataplane`: "),
        "the text is not UTF-8 from here: byte 0xE9",
    );

    // In a value, the field is the key's.
    let value = dir.file("value.toml");
    let mut bytes = b"[dataplane]\nburst = 32\n[switch]\nname = \"l".to_vec();
    bytes.extend_from_slice(b"\xc3\x28af1\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n");
    std::fs::write(&value, &bytes).expect("write config");
    let value = value.to_str().expect("utf-8 path");
    assert_refused(
        &dir,
        value,
        &format!("{value}:4:10: field `switch.name`: "),
        "byte 0xC3 (file offset 41) begins no valid UTF-8 character; save the file as UTF-8",
    );
}

#[test]
fn ipv6_interface_addresses_carrying_ipv4_exit_2_at_the_field() {
    let dir = TestDir::new("v4-in-v6");
    let base = format!(
        "[switch]\nrouter_mac = \"02:00:00:00:00:01\"\n[dataplane]\nmode = \"switch\"\n{}\n[[port]]\nname = \"up1\"\ndevargs = \"net_null0\"\nipv6 = [\"2001:db8:ff::1/64\"]\n",
        dir.eal_toml()
    );
    let lines = base.lines().count();
    for (extra, line, column, field, message) in [
        (
            "[[port]]\nname = \"up2\"\ndevargs = \"net_null1\"\nipv6 = [\"::ffff:10.0.3.1/120\"]\n",
            4,
            9,
            "port[1].ipv6[0]",
            "::ffff:10.0.3.1 is an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node 10.0.3.1 and is never assigned to an interface (RFC 4291 2.5.5.2); list IPv4 addresses in `ipv4`",
        ),
        (
            "[[vlan]]\nid = 10\nipv6 = [\"2001:db8:10::1/64\", \"::10.0.10.1/120\"]\n",
            3,
            30,
            "vlan[0].ipv6[1]",
            "::a00:a01 is an IPv4-compatible address (::/96), deprecated by RFC 4291 2.5.5.1",
        ),
        // A neighbour's address is an interface's too.
        (
            "[[neighbor]]\nip = \"::ffff:10.0.3.2\"\nmac = \"02:00:00:00:00:09\"\nport = \"up1\"\n",
            2,
            6,
            "neighbor[0].ip",
            "::ffff:10.0.3.2 is an IPv4-mapped address",
        ),
    ] {
        let path = dir.file("leaf.toml");
        std::fs::write(&path, format!("{base}{extra}")).expect("write config");
        let path = path.to_str().expect("utf-8 path");
        assert_refused(
            &dir,
            path,
            &format!("{path}:{}:{column}: field `{field}`: ", lines + line),
            message,
        );
    }
}
