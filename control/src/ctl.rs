//! `ironclos ctl`: the client side of the run-time API. Sends one request line, reads one
//! reply line, and prints the result as text (or as JSON with `--json`).

use crate::api;
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A reply that is not `ok`, or a failure to talk to the switch.
#[derive(Debug)]
pub enum CtlError {
    /// The switch answered with an error.
    Refused(String),
    /// No answer (cannot connect, connection closed, not a reply).
    Transport(String),
}

impl std::fmt::Display for CtlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CtlError::Refused(m) => write!(f, "error: {m}"),
            CtlError::Transport(m) => f.write_str(m),
        }
    }
}

/// A connection to a running switch.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
}

impl Client {
    pub fn connect(socket: &Path) -> Result<Client, CtlError> {
        let stream = UnixStream::connect(socket).map_err(|e| {
            CtlError::Transport(format!("cannot connect to {}: {e}", socket.display()))
        })?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let writer = stream
            .try_clone()
            .map_err(|e| CtlError::Transport(e.to_string()))?;
        Ok(Client {
            reader: BufReader::new(stream),
            writer,
            next_id: 1,
        })
    }

    /// Sends one raw request line (one of `raw_requests`: no newline in it, not blank, else
    /// there is no single reply to wait for) and returns its raw reply line.
    pub fn raw(&mut self, line: &str) -> Result<String, CtlError> {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| CtlError::Transport(format!("cannot send: {e}")))?;
        let mut reply = String::new();
        match self.reader.read_line(&mut reply) {
            Ok(0) => Err(CtlError::Transport(
                "the switch closed the connection".to_owned(),
            )),
            Ok(_) => Ok(reply.trim_end().to_owned()),
            Err(e) => Err(CtlError::Transport(format!("no reply: {e}"))),
        }
    }

    /// Runs `cmd` with `args`; the result, or the switch's error.
    pub fn call(&mut self, cmd: &str, args: Map<String, Value>) -> Result<Value, CtlError> {
        self.send(cmd, args)?;
        self.receive()
    }

    /// Sends a request without waiting for its reply (replies come in request order, so a
    /// client may keep several requests in flight and `receive` them in turn).
    pub fn send(&mut self, cmd: &str, args: Map<String, Value>) -> Result<(), CtlError> {
        let id = self.next_id;
        self.next_id += 1;
        self.writer
            .write_all(format!("{}\n", api::request_line(id, cmd, args)).as_bytes())
            .map_err(|e| CtlError::Transport(format!("cannot send: {e}")))
    }

    /// The next reply's result, or the switch's error.
    pub fn receive(&mut self) -> Result<Value, CtlError> {
        let mut reply = String::new();
        match self.reader.read_line(&mut reply) {
            Ok(0) => {
                return Err(CtlError::Transport(
                    "the switch closed the connection".to_owned(),
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(CtlError::Transport(format!("no reply: {e}"))),
        }
        let value: Value = serde_json::from_str(&reply)
            .map_err(|e| CtlError::Transport(format!("reply is not JSON ({e}): {reply}")))?;
        if value["ok"] == json!(true) {
            Ok(value["result"].clone())
        } else {
            Err(CtlError::Refused(
                value["error"]
                    .as_str()
                    .unwrap_or("unknown error")
                    .to_owned(),
            ))
        }
    }
}

/// For `ctl route add` and `ctl mac add` (a batch of one `add_route` or `add_mac`), which
/// replace an entry that exists (as `ip route replace`, and as the API's `add_route`/`add_mac`
/// do): whether the switch's `result` says that one did (its `replaced` indices, as the worker
/// found the tables when it applied the update), so the reply can say so. `None` for other
/// requests.
pub fn replaced_entry(cmd: &str, request: &Map<String, Value>, result: &Value) -> Option<bool> {
    if cmd != "update" {
        return None;
    }
    let updates = request.get("updates")?.as_array()?;
    let [op] = updates.as_slice() else {
        return None;
    };
    if !matches!(op["op"].as_str()?, "add_route" | "add_mac") {
        return None;
    }
    let replaced = result["replaced"].as_array();
    Some(replaced.is_some_and(|indices| indices.contains(&json!(0))))
}

/// The reply of a `route add` or `mac add` that replaced an entry (`replaced_entry`): what was
/// replaced, and where it goes now.
pub fn replaced_text(request: &Map<String, Value>) -> String {
    let op = &request["updates"][0];
    if op["op"] == "add_mac" {
        return format!(
            "ok (replaced the entry of {} in VLAN {}: now to port {})",
            s(&op["mac"]),
            s(&op["vlan"]),
            s(&op["port"])
        );
    }
    let target = if op["via"].is_string() {
        format!("via {} dev {}", s(&op["via"]), s(&op["dev"]))
    } else if op["group"].is_string() {
        format!("group {}", s(&op["group"]))
    } else if op["policy"].is_string() {
        format!("srv6 policy {}", s(&op["policy"]))
    } else {
        "blackhole".to_owned()
    };
    let vrf = op["vrf"].as_str().unwrap_or("default");
    format!(
        "ok (replaced the route to {} in VRF {vrf}: now {target})",
        s(&op["prefix"])
    )
}

/// The requests of `ctl raw`'s argument, as the server reads them: one request a line (split
/// at `\n`, sent as written), blank lines skipped (`api::is_blank`: the server skips them
/// without an answer). None at all is a usage error: there would be no reply to wait for.
pub fn raw_requests(text: &str) -> Result<Vec<&str>, String> {
    let requests: Vec<&str> = text
        .split('\n')
        .filter(|line| !api::is_blank(line.as_bytes()))
        .collect();
    if requests.is_empty() {
        return Err("raw: the request is blank; give a JSON request line, e.g. \
             '{\"v\":1,\"id\":1,\"cmd\":\"hello\"}' (the switch skips blank lines without \
             answering them)"
            .to_owned());
    }
    Ok(requests)
}

/// The error of a raw reply line that is not `ok` (the switch refused the request), or
/// `None` for an `ok` one.
pub fn raw_refusal(reply: &str) -> Option<String> {
    match serde_json::from_str::<Value>(reply) {
        Ok(value) if value.is_object() => (value["ok"] != json!(true)).then(|| {
            value["error"]
                .as_str()
                .unwrap_or("unknown error")
                .to_owned()
        }),
        _ => Some(format!("not a reply of the API: {reply}")),
    }
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// A SID's or policy's drops: `reason=count` for each reason that dropped any, or 0.
fn drops_by_reason(drops: &Value) -> String {
    let nonzero: Vec<String> = drops
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, n)| n.as_u64().is_some_and(|n| n > 0))
                .map(|(reason, n)| format!("{reason}={n}"))
                .collect()
        })
        .unwrap_or_default();
    if nonzero.is_empty() {
        "0".to_owned()
    } else {
        nonzero.join(",")
    }
}

fn rows(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// Aligned columns.
fn table(header: &[&str], lines: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for line in &lines {
        for (i, cell) in line.iter().enumerate() {
            widths[i] = widths[i].max(cell.len());
        }
    }
    let mut out = String::new();
    let mut put = |cells: Vec<String>| {
        let last = cells.len() - 1;
        for (i, cell) in cells.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
    };
    put(header.iter().map(|h| h.to_string()).collect());
    for line in lines {
        put(line);
    }
    out
}

/// The text form of a command's result.
pub fn to_text(cmd: &str, result: &Value) -> String {
    match cmd {
        "show_ports" => table(
            &[
                "PORT",
                "LINK",
                "ADMIN",
                "SPEED",
                "LINE_RATE",
                "MTU",
                "RX_PACKETS",
                "TX_PACKETS",
                "RX_BYTES",
                "TX_BYTES",
                "RX_MISSED",
                "RX_NOMBUF",
            ],
            rows(result)
                .iter()
                .map(|p| {
                    vec![
                        s(&p["name"]),
                        s(&p["link"]),
                        s(&p["admin"]),
                        format!("{}M", s(&p["speed_mbps"])),
                        match p["line_rate_mbps"].as_u64() {
                            Some(m) => format!("{m}M"),
                            None => "-".to_owned(),
                        },
                        s(&p["mtu"]),
                        s(&p["rx_packets"]),
                        s(&p["tx_packets"]),
                        s(&p["rx_bytes"]),
                        s(&p["tx_bytes"]),
                        s(&p["rx_missed"]),
                        s(&p["rx_nombuf"]),
                    ]
                })
                .collect(),
        ),
        "show_queues" => table(
            &[
                "PORT",
                "TC",
                "DEPTH",
                "PEAK",
                "ENQUEUED",
                "DROPPED",
                "ECN_MARKED",
                "PFC_TX",
                "PFC_RX",
                "ECN(kmin/kmax/pmax)",
                "PFC(xoff/xon/headroom)",
            ],
            rows(result)
                .iter()
                .map(|q| {
                    vec![
                        s(&q["port"]),
                        s(&q["tc"]),
                        s(&q["depth_bytes"]),
                        s(&q["peak_depth_bytes"]),
                        s(&q["enqueued_packets"]),
                        s(&q["dropped_packets"]),
                        s(&q["ecn_marked"]),
                        s(&q["pfc_tx_frames"]),
                        s(&q["pfc_rx_frames"]),
                        match &q["ecn"] {
                            Value::Null => "off".to_owned(),
                            e => format!("{}/{}/{}", s(&e["kmin"]), s(&e["kmax"]), s(&e["pmax"])),
                        },
                        match &q["pfc"] {
                            Value::Null => "-".to_owned(),
                            p => {
                                format!("{}/{}/{}", s(&p["xoff"]), s(&p["xon"]), s(&p["headroom"]))
                            }
                        },
                    ]
                })
                .collect(),
        ),
        "show_vlans" => table(
            &["VLAN", "INTERFACE", "PORTS"],
            rows(result)
                .iter()
                .map(|v| {
                    let ports: Vec<String> = rows(&v["ports"])
                        .iter()
                        .map(|p| {
                            if p["tagged"] == true {
                                format!("{}(tagged)", s(&p["port"]))
                            } else {
                                s(&p["port"])
                            }
                        })
                        .collect();
                    vec![
                        s(&v["vlan"]),
                        match &v["interface"] {
                            Value::Null => "-".to_owned(),
                            i => s(i),
                        },
                        ports.join(" "),
                    ]
                })
                .collect(),
        ),
        "show_drops" => {
            let mut lines: Vec<Vec<String>> = result["reasons"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(_, n)| n.as_u64() != Some(0))
                        .map(|(r, n)| vec![r.clone(), s(n)])
                        .collect()
                })
                .unwrap_or_default();
            lines.push(vec!["total".to_owned(), s(&result["total"])]);
            // Not drops: what the switch told the sources of dropped packets.
            if let Some(errors) = result["icmp_errors"].as_object()
                && errors.values().any(|n| n.as_u64() != Some(0))
            {
                for (what, n) in errors {
                    lines.push(vec![format!("(icmp errors {what})"), s(n)]);
                }
            }
            // Not drops either: packets cut to fit an egress MTU.
            if let Some(cut) = result["fragmentation"].as_object()
                && cut.values().any(|n| n.as_u64() != Some(0))
            {
                for (what, n) in cut {
                    lines.push(vec![format!("(fragmentation {what})"), s(n)]);
                }
            }
            // Nor these: learned neighbours asked again, and those that did not answer.
            if let Some(heard) = result["neighbors"].as_object()
                && heard.values().any(|n| n.as_u64() != Some(0))
            {
                for (what, n) in heard {
                    lines.push(vec![format!("(neighbors {what})"), s(n)]);
                }
            }
            table(&["REASON", "PACKETS"], lines)
        }
        "show_routes" => {
            let mut out = table(
                &["VRF", "PREFIX", "TARGET"],
                rows(&result["routes"])
                    .iter()
                    .map(|r| {
                        let target = match r["kind"].as_str().unwrap_or("") {
                            "nexthop" => format!("via {} dev {}", s(&r["via"]), s(&r["dev"])),
                            "group" => format!("group {}", s(&r["group"])),
                            "connected" => format!("connected dev {}", s(&r["dev"])),
                            "srv6_policy" => format!("srv6 policy {}", s(&r["policy"])),
                            other => other.to_owned(),
                        };
                        vec![s(&r["vrf"]), s(&r["prefix"]), target]
                    })
                    .collect(),
            );
            out.push_str(&format!(
                "{} of {} routes\n",
                s(&result["shown"]),
                s(&result["total"])
            ));
            out
        }
        "show_nexthops" => table(
            &["ID", "IP", "DEV", "MAC", "STATE"],
            rows(result)
                .iter()
                .map(|n| {
                    vec![
                        s(&n["id"]),
                        s(&n["ip"]),
                        s(&n["dev"]),
                        s(&n["mac"]),
                        s(&n["state"]),
                    ]
                })
                .collect(),
        ),
        "show_groups" => {
            let mut lines = Vec::new();
            for g in rows(result) {
                for m in rows(&g["members"]) {
                    lines.push(vec![
                        s(&g["name"]),
                        format!("{} dev {}", s(&m["via"]), s(&m["dev"])),
                        s(&m["weight"]),
                        if m["up"] == json!(true) { "up" } else { "down" }.to_owned(),
                        format!("{}/{}", s(&m["buckets"]), s(&g["buckets"])),
                        s(&m["packets"]),
                        s(&m["port_tx_packets"]),
                    ]);
                }
            }
            let summary: String = rows(result)
                .iter()
                .map(|g| {
                    let avoids_ecn = if g["avoid_ecn"] == json!(true) {
                        ", avoids ECN"
                    } else {
                        ""
                    };
                    let balancing = match g["mode"].as_str() {
                        Some("hash") => "hash".to_owned(),
                        Some("flowlet") => format!(
                            "flowlet ({}, timeout {} us, {} entries{avoids_ecn})",
                            s(&g["choice"]),
                            s(&g["flowlet_timeout_us"]),
                            s(&g["flowlet_table_size"])
                        ),
                        _ => format!("{} ({}{avoids_ecn})", s(&g["mode"]), s(&g["choice"])),
                    };
                    format!(
                        "group {}: {balancing}, {} flowlets, {} moves ({} forced), imbalance {:.3} (max member bytes / mean)\n",
                        s(&g["name"]),
                        s(&g["flowlets"]),
                        s(&g["moves"]),
                        s(&g["forced_moves"]),
                        g["imbalance"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect();
            table(
                &[
                    "GROUP", "MEMBER", "WEIGHT", "STATE", "BUCKETS", "PACKETS", "PORT_TX",
                ],
                lines,
            ) + &summary
        }
        "show_macs" => {
            let mut out = table(
                &["VLAN", "MAC", "PORT", "TYPE"],
                rows(&result["macs"])
                    .iter()
                    .map(|m| {
                        vec![
                            s(&m["vlan"]),
                            s(&m["mac"]),
                            s(&m["port"]),
                            if m["static"] == json!(true) {
                                "static"
                            } else {
                                "learned"
                            }
                            .to_owned(),
                        ]
                    })
                    .collect(),
            );
            out.push_str(&format!(
                "{} of {} entries\n",
                s(&result["shown"]),
                s(&result["total"])
            ));
            out
        }
        "show_srv6" => {
            let mut out = table(
                &["SID", "BEHAVIOR", "VRF", "TO", "PACKETS", "BYTES", "DROPS"],
                rows(&result["sids"])
                    .iter()
                    .map(|x| {
                        vec![
                            s(&x["prefix"]),
                            s(&x["behavior"]),
                            s(&x["vrf"]),
                            s(&x["adjacency"]),
                            s(&x["packets"]),
                            s(&x["bytes"]),
                            drops_by_reason(&x["drops"]),
                        ]
                    })
                    .collect(),
            );
            out.push_str(&table(
                &["POLICY", "MODE", "SEGMENTS", "PACKETS", "BYTES", "DROPS"],
                rows(&result["policies"])
                    .iter()
                    .map(|x| {
                        let segs: Vec<String> = rows(&x["segments"]).iter().map(s).collect();
                        vec![
                            s(&x["name"]),
                            s(&x["mode"]),
                            segs.join(","),
                            s(&x["packets"]),
                            s(&x["bytes"]),
                            drops_by_reason(&x["drops"]),
                        ]
                    })
                    .collect(),
            ));
            out
        }
        "table_dump" => rows(result)
            .iter()
            .map(|e| {
                let m: Vec<String> = rows(&e["match"]).iter().map(s).collect();
                let p: Vec<String> = rows(&e["params"]).iter().map(s).collect();
                format!(
                    "{} {} {} => {}\n",
                    s(&e["table"]),
                    s(&e["action"]),
                    m.join(" "),
                    p.join(" ")
                )
            })
            .collect(),
        "update" | "table_add" | "table_delete" => {
            let replaced = result["replaced"].as_array().map_or(0, Vec::len);
            let note = match replaced {
                0 => String::new(),
                n => format!(" ({n} replaced an entry there was)"),
            };
            format!("ok: {} update(s) applied{note}\n", s(&result["applied"]))
        }
        "reload" => {
            let kinds: Vec<String> = result["updates"]
                .as_object()
                .map(|m| m.iter().map(|(op, n)| format!("{op} {n}")).collect())
                .unwrap_or_default();
            format!(
                "reloaded {}: {} update(s) applied{}\n",
                s(&result["config"]),
                s(&result["applied"]),
                if kinds.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", kinds.join(", "))
                }
            )
        }
        "set_port" => format!(
            "ok: port {} admin {}\n",
            s(&result["port"]),
            s(&result["admin"])
        ),
        "hello" => format!(
            "switch {} (ironclos {}, protocol {}, mode {})\n",
            s(&result["switch"]),
            s(&result["version"]),
            s(&result["protocol"]),
            s(&result["mode"])
        ),
        _ => format!("{result}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::{raw_refusal, raw_requests, replaced_entry, replaced_text, to_text};
    use serde_json::json;

    #[test]
    fn raw_sends_every_line_the_server_answers_and_refuses_a_blank_request() {
        // The server reads one request a line and skips blank ones unanswered: each other
        // line is a request with a reply to wait for; none at all is a usage error.
        assert_eq!(raw_requests(r#"{"v":1}"#), Ok(vec![r#"{"v":1}"#]));
        assert_eq!(
            raw_requests("{\"a\":1}\n\n \t\r\n{\"b\":2}\n"),
            Ok(vec!["{\"a\":1}", "{\"b\":2}"])
        );
        // Not blank to the server (vertical tab is no ASCII whitespace there): answered.
        assert_eq!(raw_requests("\u{b}"), Ok(vec!["\u{b}"]));
        for blank in ["", "   ", "\n", " \t\r\n\n  "] {
            let e = raw_requests(blank).unwrap_err();
            assert!(
                e.contains("the request is blank") && e.contains("skips blank lines"),
                "{blank:?}: {e}"
            );
        }
    }

    #[test]
    fn route_and_mac_adds_say_what_they_replaced() {
        let request = |op: serde_json::Value| {
            json!({ "updates": [op] })
                .as_object()
                .cloned()
                .expect("object")
        };
        let route = request(
            json!({"op": "add_route", "prefix": "10.7.0.0/16", "vrf": null,
                                   "via": "10.255.0.2", "dev": "p5"}),
        );
        let replaced = json!({"applied": 1, "replaced": [0]});
        let added = json!({"applied": 1});
        assert_eq!(replaced_entry("update", &route, &replaced), Some(true));
        assert_eq!(replaced_entry("update", &route, &added), Some(false));
        assert_eq!(
            replaced_text(&route),
            "ok (replaced the route to 10.7.0.0/16 in VRF default: now via 10.255.0.2 dev p5)"
        );
        let blackhole = request(
            json!({"op": "add_route", "prefix": "10.7.0.0/16", "vrf": "red", "blackhole": true}),
        );
        assert_eq!(
            replaced_text(&blackhole),
            "ok (replaced the route to 10.7.0.0/16 in VRF red: now blackhole)"
        );
        let mac = request(
            json!({"op": "add_mac", "vlan": 10, "mac": "02:00:00:00:77:01", "port": "eth1"}),
        );
        assert_eq!(replaced_entry("update", &mac, &replaced), Some(true));
        assert_eq!(
            replaced_text(&mac),
            "ok (replaced the entry of 02:00:00:00:77:01 in VLAN 10: now to port eth1)"
        );
        // Nothing else is told so: other ops, batches, other commands.
        let deleted = request(json!({"op": "del_route", "prefix": "10.7.0.0/16"}));
        assert_eq!(replaced_entry("update", &deleted, &replaced), None);
        let two = json!({"updates": [route["updates"][0], route["updates"][0]]});
        let two = two.as_object().unwrap();
        assert_eq!(replaced_entry("update", two, &replaced), None);
        assert_eq!(replaced_entry("table_add", &route, &replaced), None);
        // Batches and the P4 form count what they replaced.
        assert_eq!(
            to_text("update", &json!({"applied": 2, "replaced": [1]})),
            "ok: 2 update(s) applied (1 replaced an entry there was)\n"
        );
        assert_eq!(to_text("table_add", &added), "ok: 1 update(s) applied\n");
    }

    #[test]
    fn a_raw_reply_that_is_not_ok_is_a_refusal() {
        assert_eq!(raw_refusal(r#"{"v":1,"id":1,"ok":true,"result":{}}"#), None);
        assert_eq!(
            raw_refusal(r#"{"v":1,"id":null,"ok":false,"error":"not JSON: expected value"}"#),
            Some("not JSON: expected value".to_owned())
        );
        assert_eq!(
            raw_refusal(r#"{"ok":false}"#),
            Some("unknown error".to_owned())
        );
        assert!(raw_refusal("garbage").unwrap().contains("not a reply"));
    }

    #[test]
    fn the_ports_table_gives_line_rate_bytes_and_device_drops() {
        let text = to_text(
            "show_ports",
            &json!([{"name": "eth1", "link": "up", "admin": "up", "speed_mbps": 10000,
                     "line_rate_mbps": 100000, "mtu": 9000, "rx_packets": 5, "tx_packets": 4,
                     "rx_bytes": 300, "tx_bytes": 240, "rx_missed": 7, "rx_nombuf": 1}]),
        );
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines[0],
            [
                "PORT",
                "LINK",
                "ADMIN",
                "SPEED",
                "LINE_RATE",
                "MTU",
                "RX_PACKETS",
                "TX_PACKETS",
                "RX_BYTES",
                "TX_BYTES",
                "RX_MISSED",
                "RX_NOMBUF"
            ]
        );
        assert_eq!(
            lines[1],
            [
                "eth1", "up", "up", "10000M", "100000M", "9000", "5", "4", "300", "240", "7", "1"
            ]
        );
    }

    #[test]
    fn srv6_tables_give_each_sids_and_policys_drops_by_reason() {
        let text = to_text(
            "show_srv6",
            &json!({
                "sids": [
                    {"prefix": "fcbb:bb00:100::/48", "behavior": "uN", "vrf": "default",
                     "packets": 9, "bytes": 900, "drops": {"srv6_hop_limit": 2, "srv6_bad_srh": 0}},
                    {"prefix": "2001:db8:5::1/128", "behavior": "End", "vrf": "default",
                     "packets": 0, "bytes": 0, "drops": {}},
                    {"prefix": "fcbb:bb00:e049::/48", "behavior": "uA", "vrf": "default",
                     "adjacency": "2001:db8:ff:: dev eth49", "packets": 0, "bytes": 0,
                     "drops": {}}
                ],
                "policies": [
                    {"name": "p", "mode": "encaps", "segments": ["fc00::1", "fc00::2"],
                     "packets": 1, "bytes": 100, "drops": {"no_route": 1}}
                ]
            }),
        );
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0].last(), Some(&"DROPS"));
        assert_eq!(lines[1].last(), Some(&"srv6_hop_limit=2"), "{text}");
        assert_eq!(lines[2].last(), Some(&"0"), "{text}");
        assert_eq!(lines[2][3], "-", "End has no adjacency: {text}");
        assert_eq!(lines[3][3..6], ["2001:db8:ff::", "dev", "eth49"], "{text}");
        let policy = lines
            .iter()
            .find(|l| l.first() == Some(&"p"))
            .expect("policy row");
        assert_eq!(policy[2], "fc00::1,fc00::2");
        assert_eq!(policy.last(), Some(&"no_route=1"), "{text}");
    }
}
