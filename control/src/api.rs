//! The run-time API's wire format: JSON lines over a Unix stream socket, version 1.
//!
//! Each request is one JSON object on one line (at most [`MAX_REQUEST_BYTES`] bytes):
//! `{"v":1,"id":7,"cmd":"show_ports"}`. Each gets exactly one reply line, in order:
//! `{"v":1,"id":7,"ok":true,"result":...}` or `{"v":1,"id":7,"ok":false,"error":"..."}`.
//! `v` must be 1; `id` is any JSON number or string (or null or absent) and is echoed (null when
//! the request could not be read far enough to find it). Commands and their fields are in README.md, "Control
//! plane". This module turns a line into a [`Command`] and names precisely what is wrong with
//! a line that is not one; it knows nothing of the switch's names (the server resolves those).

use crate::config::{check_trunk, ecmp_weight};
use serde_json::{Map, Value, json};

/// The protocol version this build speaks.
pub const VERSION: u64 = 1;
/// Longest request line accepted (bytes, newline excluded); a longer one is answered with an
/// error and the connection closed.
pub const MAX_REQUEST_BYTES: usize = 8 << 20;
/// Most updates in one `update` request (and entries in one `table_add` batch).
pub const MAX_UPDATES: usize = dataplane::ctl::MAX_BATCH;
/// Most routes or MACs a show returns unless the request sets `limit`.
pub const DEFAULT_LIMIT: usize = 10_000;

/// Whether a request line is blank: the server skips such a line without answering it, so
/// a client must not wait for a reply to one (`ctl raw` refuses it).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// A request, its names not yet resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Version and identity of the switch.
    Hello,
    ShowPorts,
    ShowQueues {
        port: Option<String>,
    },
    ShowDrops,
    ShowRoutes {
        vrf: Option<String>,
        limit: usize,
    },
    ShowNexthops,
    ShowGroups,
    ShowMacs {
        limit: usize,
    },
    ShowSrv6,
    /// VLANs and their ports.
    ShowVlans,
    /// Updates applied as one atomic batch.
    Update(Vec<UpdateOp>),
    /// Admin state of a port.
    SetPort {
        port: String,
        up: bool,
    },
    TableAdd {
        table: String,
        action: String,
        matches: Vec<String>,
        params: Vec<String>,
    },
    TableDelete {
        table: String,
        matches: Vec<String>,
    },
    TableDump {
        table: String,
    },
    /// Re-read the config file and apply the difference.
    Reload,
}

/// Where a route goes, by name.
#[derive(Debug, Clone, PartialEq)]
pub enum RouteTo {
    Via { ip: String, dev: String },
    Group(String),
    Policy(String),
    Blackhole,
}

/// A group's balancing keys as a request gives them (`add_group`, `set_group`); the config's
/// rules and defaults apply (`ecmp_config::balance_spec`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BalanceRequest {
    pub mode: Option<String>,
    pub choice: Option<String>,
    pub flowlet_timeout_us: Option<u64>,
    pub flowlet_table_size: Option<u64>,
    pub avoid_ecn: Option<bool>,
}

/// One update of an `update` request (field `op`).
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOp {
    AddRoute {
        vrf: Option<String>,
        prefix: String,
        to: RouteTo,
    },
    DelRoute {
        vrf: Option<String>,
        prefix: String,
    },
    AddNeighbor {
        ip: String,
        dev: String,
        mac: String,
    },
    DelNeighbor {
        ip: String,
        dev: String,
    },
    AddEcmpMember {
        group: String,
        ip: String,
        dev: String,
        weight: u32,
    },
    DelEcmpMember {
        group: String,
        ip: String,
        dev: String,
    },
    AddMac {
        vlan: u16,
        mac: String,
        port: String,
    },
    DelMac {
        vlan: u16,
        mac: String,
    },
    /// A new encapsulation for an SRv6 policy: segments, and optionally mode, source, hop limit.
    SetPolicy {
        policy: String,
        segments: Vec<String>,
        mode: Option<String>,
        source: Option<String>,
        hop_limit: Option<u8>,
    },
    /// ECN thresholds of (port, tc) in bytes; `None` turns marking off.
    SetEcn {
        port: String,
        tc: u8,
        ecn: Option<(u64, u64, f64)>,
    },
    /// A new local SID (the keys of a config `[[srv6.sid]]`, `dev` for its port or VLAN).
    AddSid(Box<SidOp>),
    DelSid {
        sid: String,
        vrf: Option<String>,
    },
    /// A new SRv6 policy; routes point at it by name (`add_route` with `policy`).
    AddPolicy {
        policy: String,
        segments: Vec<String>,
        mode: Option<String>,
        source: Option<String>,
        hop_limit: Option<u8>,
    },
    DelPolicy {
        policy: String,
    },
    /// A new ECMP group with its members (neighbour, L3 interface, weight) and balancing.
    AddGroup {
        group: String,
        members: Vec<(String, String, u32)>,
        balance: BalanceRequest,
    },
    DelGroup {
        group: String,
    },
    /// Replaces a group's balancing with the one given (defaults for the keys not given).
    SetGroup {
        group: String,
        balance: BalanceRequest,
    },
    /// A new VLAN (ports join it with `SetPortVlan`).
    AddVlan {
        vlan: u16,
    },
    /// Removes a VLAN no port is in.
    DelVlan {
        vlan: u16,
    },
    /// An L2 port's membership: access port of `vlan`, or trunk of `allowed` (+ `native`).
    SetPortVlan {
        port: String,
        access: Option<u16>,
        allowed: Vec<u16>,
        native: Option<u16>,
    },
    /// PFC thresholds of (port, lossless tc) in bytes; those not given stay as they are.
    SetPfc {
        port: String,
        tc: u8,
        xoff: Option<u64>,
        xon: Option<u64>,
        headroom: Option<u64>,
    },
}

/// An `add_sid` update.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SidOp {
    /// The SID prefix (`fcbb:bb00:9::/48`; a bare address is a /128).
    pub sid: String,
    pub vrf: Option<String>,
    /// End, End.X, End.DT4, End.DT6, End.DT46, uN, uA (uDT4/uDT6/uDT46 are End.DT*).
    pub behavior: String,
    pub block_bits: Option<u8>,
    pub shift_bits: Option<u8>,
    /// psp, usp.
    pub flavors: Vec<String>,
    /// End.X / uA: a neighbour on `dev`, or a group.
    pub via: Option<String>,
    pub dev: Option<String>,
    pub group: Option<String>,
    /// End.DT*: the VRF of the inner lookup (default: the SID's VRF).
    pub lookup_vrf: Option<String>,
}

/// A successful reply line (without the newline).
pub fn ok_line(id: &Value, result: Value) -> String {
    json!({"v": VERSION, "id": id, "ok": true, "result": result}).to_string()
}

/// An error reply line (without the newline).
pub fn error_line(id: &Value, error: &str) -> String {
    json!({"v": VERSION, "id": id, "ok": false, "error": error}).to_string()
}

/// A request line as the client writes it.
pub fn request_line(id: u64, cmd: &str, mut args: Map<String, Value>) -> String {
    args.insert("v".to_owned(), json!(VERSION));
    args.insert("id".to_owned(), json!(id));
    args.insert("cmd".to_owned(), json!(cmd));
    Value::Object(args).to_string()
}

/// The fields of one JSON object, read with messages that name the field and what it should be.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    /// Where the object is, for messages (`request`, `updates[3]`).
    context: String,
}

impl<'a> Fields<'a> {
    fn err(&self, field: &str, what: &str) -> String {
        format!("{}: field `{field}` {what}", self.context)
    }

    fn string(&self, field: &str) -> Result<String, String> {
        self.opt_string(field)?
            .ok_or_else(|| self.err(field, "is missing (a string)"))
    }

    fn opt_string(&self, field: &str) -> Result<Option<String>, String> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(field, &format!("must be a string, not {}", kind(other)))),
        }
    }

    fn opt_u64(&self, field: &str) -> Result<Option<u64>, String> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.err(
                    field,
                    &format!("must be a non-negative integer, not {}", kind(v)),
                )
            }),
        }
    }

    fn u64_in(&self, field: &str, max: u64) -> Result<u64, String> {
        let value = self
            .opt_u64(field)?
            .ok_or_else(|| self.err(field, "is missing (an integer)"))?;
        if value > max {
            return Err(self.err(field, &format!("is {value}, above the maximum {max}")));
        }
        Ok(value)
    }

    /// A byte count: an integer, or a string with a unit (`"20KB"`, `"1MiB"`).
    fn opt_size(&self, field: &str) -> Result<Option<u64>, String> {
        let raw = match self.object.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => crate::qos_config::RawSize::Bytes(i),
                None => return Err(self.err(field, "must be a whole number of bytes")),
            },
            Some(Value::String(t)) => crate::qos_config::RawSize::Text(t.clone()),
            Some(other) => {
                return Err(self.err(
                    field,
                    &format!("must be bytes (a number or \"20KB\"), not {}", kind(other)),
                ));
            }
        };
        crate::qos_config::parse_size(&raw)
            .map(Some)
            .map_err(|m| self.err(field, &m))
    }

    fn opt_u8_in(
        &self,
        field: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u8>, String> {
        match self.opt_u64(field)? {
            None => Ok(None),
            Some(v) if range.contains(&v) && v <= 255 => Ok(Some(v as u8)),
            Some(v) => Err(self.err(
                field,
                &format!("is {v}, not {}..={}", range.start(), range.end()),
            )),
        }
    }

    fn opt_f64(&self, field: &str) -> Result<Option<f64>, String> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.err(field, &format!("must be a number, not {}", kind(v)))),
        }
    }

    fn opt_bool(&self, field: &str) -> Result<Option<bool>, String> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(
                field,
                &format!("must be true or false, not {}", kind(other)),
            )),
        }
    }

    fn strings(&self, field: &str) -> Result<Vec<String>, String> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => {
                        Err(self.err(field, &format!("must hold strings, not {}", kind(other))))
                    }
                })
                .collect(),
            Some(other) => Err(self.err(
                field,
                &format!("must be an array of strings, not {}", kind(other)),
            )),
        }
    }

    /// Refuses fields the command does not know (a typo must not be silently ignored).
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.object.keys().find(|k| !known.contains(&k.as_str())) {
            Some(unknown) => Err(format!(
                "{}: unknown field `{unknown}` (known: {})",
                self.context,
                known.join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// The balancing keys of an `add_group` or `set_group`.
const BALANCE_KEYS: [&str; 5] = [
    "mode",
    "choice",
    "flowlet_timeout_us",
    "flowlet_table_size",
    "avoid_ecn",
];

fn balance_request(f: &Fields) -> Result<BalanceRequest, String> {
    Ok(BalanceRequest {
        mode: f.opt_string("mode")?,
        choice: f.opt_string("choice")?,
        flowlet_timeout_us: f.opt_u64("flowlet_timeout_us")?,
        flowlet_table_size: f.opt_u64("flowlet_table_size")?,
        avoid_ecn: f.opt_bool("avoid_ecn")?,
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The commands, for messages.
pub const COMMANDS: [&str; 16] = [
    "reload",
    "hello",
    "show_ports",
    "show_queues",
    "show_drops",
    "show_routes",
    "show_nexthops",
    "show_groups",
    "show_macs",
    "show_srv6",
    "show_vlans",
    "update",
    "set_port",
    "table_add",
    "table_delete",
    "table_dump",
];

/// Reads one request line. On error, the id (if it could be read) and a message naming the
/// problem.
pub fn parse_request(line: &[u8]) -> Result<(Value, Command), (Value, String)> {
    match fast_route_update(line) {
        Some(fast) => Ok(fast),
        None => parse_general(line),
    }
}

/// Any request, through `Value`, with precise errors.
fn parse_general(line: &[u8]) -> Result<(Value, Command), (Value, String)> {
    let text = std::str::from_utf8(line)
        .map_err(|e| (Value::Null, format!("request is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| (Value::Null, format!("request is not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err((
            Value::Null,
            format!("request must be a JSON object, not {}", kind(&value)),
        ));
    };
    let id = match object.get("id") {
        None | Some(Value::Null) => Value::Null,
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        Some(other) => {
            return Err((
                Value::Null,
                format!(
                    "field `id` must be a number or a string, not {}",
                    kind(other)
                ),
            ));
        }
    };
    let fail = |m: String| Err((id.clone(), m));
    match object.get("v") {
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(v) => {
            return fail(format!(
                "protocol version {v} is not supported (this switch speaks {VERSION})"
            ));
        }
        None => {
            return fail(format!(
                "field `v` (protocol version, {VERSION}) is missing"
            ));
        }
    }
    let cmd = match object.get("cmd") {
        Some(Value::String(c)) => c.clone(),
        Some(other) => return fail(format!("field `cmd` must be a string, not {}", kind(other))),
        None => return fail("field `cmd` is missing".to_owned()),
    };
    let fields = Fields {
        object: &object,
        context: cmd.clone(),
    };
    let base = ["v", "id", "cmd"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    let limit = |f: &Fields| -> Result<usize, String> {
        Ok(f.opt_u64("limit")?
            .map_or(DEFAULT_LIMIT, |l| l.min(usize::MAX as u64) as usize))
    };
    let command = (|| -> Result<Command, String> {
        Ok(match cmd.as_str() {
            "hello" => {
                fields.only(&base)?;
                Command::Hello
            }
            "show_ports" => {
                fields.only(&base)?;
                Command::ShowPorts
            }
            "show_queues" => {
                fields.only(&with(&["port"]))?;
                Command::ShowQueues {
                    port: fields.opt_string("port")?,
                }
            }
            "show_drops" => {
                fields.only(&base)?;
                Command::ShowDrops
            }
            "show_routes" => {
                fields.only(&with(&["vrf", "limit"]))?;
                Command::ShowRoutes {
                    vrf: fields.opt_string("vrf")?,
                    limit: limit(&fields)?,
                }
            }
            "show_nexthops" => {
                fields.only(&base)?;
                Command::ShowNexthops
            }
            "show_groups" => {
                fields.only(&base)?;
                Command::ShowGroups
            }
            "show_macs" => {
                fields.only(&with(&["limit"]))?;
                Command::ShowMacs {
                    limit: limit(&fields)?,
                }
            }
            "show_srv6" => {
                fields.only(&base)?;
                Command::ShowSrv6
            }
            "show_vlans" => {
                fields.only(&base)?;
                Command::ShowVlans
            }
            "update" => {
                fields.only(&with(&["updates"]))?;
                let Some(Value::Array(items)) = object.get("updates") else {
                    return Err(match object.get("updates") {
                        None => "update: field `updates` is missing (an array)".to_owned(),
                        Some(other) => format!(
                            "update: field `updates` must be an array, not {}",
                            kind(other)
                        ),
                    });
                };
                if items.is_empty() {
                    return Err("update: `updates` is empty".to_owned());
                }
                if items.len() > MAX_UPDATES {
                    return Err(format!(
                        "update: {} updates is more than one batch may hold ({MAX_UPDATES})",
                        items.len()
                    ));
                }
                Command::Update(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| parse_update(i, item))
                        .collect::<Result<_, _>>()?,
                )
            }
            "set_port" => {
                fields.only(&with(&["port", "admin"]))?;
                let admin = fields.string("admin")?;
                let up = match admin.as_str() {
                    "up" => true,
                    "down" => false,
                    other => {
                        return Err(format!(
                            "set_port: field `admin` must be \"up\" or \"down\", not \"{other}\""
                        ));
                    }
                };
                Command::SetPort {
                    port: fields.string("port")?,
                    up,
                }
            }
            "table_add" => {
                fields.only(&with(&["table", "action", "match", "params"]))?;
                Command::TableAdd {
                    table: fields.string("table")?,
                    action: fields.string("action")?,
                    matches: fields.strings("match")?,
                    params: fields.strings("params")?,
                }
            }
            "table_delete" => {
                fields.only(&with(&["table", "match"]))?;
                Command::TableDelete {
                    table: fields.string("table")?,
                    matches: fields.strings("match")?,
                }
            }
            "reload" => {
                fields.only(&base)?;
                Command::Reload
            }
            "table_dump" => {
                fields.only(&with(&["table"]))?;
                Command::TableDump {
                    table: fields.string("table")?,
                }
            }
            other => {
                return Err(format!(
                    "unknown command `{other}` (known: {})",
                    COMMANDS.join(", ")
                ));
            }
        })
    })();
    match command {
        Ok(c) => Ok((id, c)),
        Err(m) => fail(m),
    }
}

/// An `update` of route adds and deletes, read straight into typed fields (about three times
/// faster than through `Value` for big batches). Anything else, and anything wrong, returns
/// `None` and goes the general way, which names the problem.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastUpdate {
    v: u64,
    id: Option<Value>,
    cmd: String,
    updates: Vec<FastRouteOp>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastRouteOp {
    op: String,
    prefix: String,
    vrf: Option<String>,
    via: Option<String>,
    dev: Option<String>,
    group: Option<String>,
    policy: Option<String>,
    blackhole: Option<bool>,
}

fn fast_route_update(line: &[u8]) -> Option<(Value, Command)> {
    let request: FastUpdate = serde_json::from_slice(line).ok()?;
    let id = match request.id {
        None | Some(Value::Null) => Value::Null,
        Some(id @ (Value::Number(_) | Value::String(_))) => id,
        Some(_) => return None,
    };
    if request.v != VERSION
        || request.cmd != "update"
        || request.updates.is_empty()
        || request.updates.len() > MAX_UPDATES
    {
        return None;
    }
    let mut ops = Vec::with_capacity(request.updates.len());
    for u in request.updates {
        let op = match u.op.as_str() {
            "add_route" => {
                let blackhole = u.blackhole.unwrap_or(false);
                let to = match (u.via, u.dev, u.group, u.policy, blackhole) {
                    (Some(ip), Some(dev), None, None, false) => RouteTo::Via { ip, dev },
                    (None, None, Some(g), None, false) => RouteTo::Group(g),
                    (None, None, None, Some(p), false) => RouteTo::Policy(p),
                    (None, None, None, None, true) => RouteTo::Blackhole,
                    _ => return None,
                };
                UpdateOp::AddRoute {
                    vrf: u.vrf,
                    prefix: u.prefix,
                    to,
                }
            }
            "del_route"
                if u.via.is_none()
                    && u.dev.is_none()
                    && u.group.is_none()
                    && u.policy.is_none()
                    && u.blackhole.is_none() =>
            {
                UpdateOp::DelRoute {
                    vrf: u.vrf,
                    prefix: u.prefix,
                }
            }
            _ => return None,
        };
        ops.push(op);
    }
    Some((id, Command::Update(ops)))
}

/// The update operations of a batch written as the API's `updates` array (a schedule file's
/// `updates` use it), each checked as a request's would be.
pub fn parse_update_list(items: &[Value]) -> Result<Vec<UpdateOp>, String> {
    if items.is_empty() {
        return Err("`updates` is empty".to_owned());
    }
    if items.len() > MAX_UPDATES {
        return Err(format!(
            "{} updates is more than one batch may hold ({MAX_UPDATES})",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_update(i, item))
        .collect()
}

fn parse_update(index: usize, item: &Value) -> Result<UpdateOp, String> {
    let Value::Object(object) = item else {
        return Err(format!(
            "updates[{index}] must be an object, not {}",
            kind(item)
        ));
    };
    let mut f = Fields {
        object,
        context: format!("updates[{index}]"),
    };
    let op = f.string("op")?;
    f.context = format!("updates[{index}] ({op})");
    let vlan = |f: &Fields| -> Result<u16, String> {
        match f.u64_in("vlan", u64::MAX)? {
            v @ 1..=4094 => Ok(v as u16),
            v => Err(f.err("vlan", &format!("is {v}; VLAN ids are 1..=4094"))),
        }
    };
    Ok(match op.as_str() {
        "add_route" => {
            f.only(&[
                "op",
                "vrf",
                "prefix",
                "via",
                "dev",
                "group",
                "policy",
                "blackhole",
            ])?;
            let via = f.opt_string("via")?;
            let group = f.opt_string("group")?;
            let policy = f.opt_string("policy")?;
            let blackhole = f.opt_bool("blackhole")?.unwrap_or(false);
            let given = usize::from(via.is_some())
                + usize::from(group.is_some())
                + usize::from(policy.is_some())
                + usize::from(blackhole);
            if given != 1 {
                return Err(format!(
                    "{}: give exactly one of `via` (with `dev`), `group`, `policy`, `blackhole`",
                    f.context
                ));
            }
            let to = if let Some(ip) = via {
                RouteTo::Via {
                    ip,
                    dev: f.string("dev")?,
                }
            } else if let Some(g) = group {
                RouteTo::Group(g)
            } else if let Some(p) = policy {
                RouteTo::Policy(p)
            } else {
                RouteTo::Blackhole
            };
            UpdateOp::AddRoute {
                vrf: f.opt_string("vrf")?,
                prefix: f.string("prefix")?,
                to,
            }
        }
        "del_route" => {
            f.only(&["op", "vrf", "prefix"])?;
            UpdateOp::DelRoute {
                vrf: f.opt_string("vrf")?,
                prefix: f.string("prefix")?,
            }
        }
        "add_neighbor" => {
            f.only(&["op", "ip", "dev", "mac"])?;
            UpdateOp::AddNeighbor {
                ip: f.string("ip")?,
                dev: f.string("dev")?,
                mac: f.string("mac")?,
            }
        }
        "del_neighbor" => {
            f.only(&["op", "ip", "dev"])?;
            UpdateOp::DelNeighbor {
                ip: f.string("ip")?,
                dev: f.string("dev")?,
            }
        }
        "add_ecmp_member" => {
            f.only(&["op", "group", "via", "dev", "weight"])?;
            UpdateOp::AddEcmpMember {
                group: f.string("group")?,
                ip: f.string("via")?,
                dev: f.string("dev")?,
                weight: match f.opt_u64("weight")? {
                    None => 1,
                    Some(w) => ecmp_weight(w).map_err(|m| f.err("weight", &m))?,
                },
            }
        }
        "del_ecmp_member" => {
            f.only(&["op", "group", "via", "dev"])?;
            UpdateOp::DelEcmpMember {
                group: f.string("group")?,
                ip: f.string("via")?,
                dev: f.string("dev")?,
            }
        }
        "add_mac" => {
            f.only(&["op", "vlan", "mac", "port"])?;
            UpdateOp::AddMac {
                vlan: vlan(&f)?,
                mac: f.string("mac")?,
                port: f.string("port")?,
            }
        }
        "del_mac" => {
            f.only(&["op", "vlan", "mac"])?;
            UpdateOp::DelMac {
                vlan: vlan(&f)?,
                mac: f.string("mac")?,
            }
        }
        "set_policy" => {
            f.only(&["op", "policy", "segments", "mode", "source", "hop_limit"])?;
            let segments = f.strings("segments")?;
            if segments.is_empty() {
                return Err(f.err("segments", "is empty (give a non-empty array of IPv6 SIDs)"));
            }
            UpdateOp::SetPolicy {
                policy: f.string("policy")?,
                segments,
                mode: f.opt_string("mode")?,
                source: f.opt_string("source")?,
                hop_limit: match f.opt_u64("hop_limit")? {
                    None => None,
                    Some(h) if (1..=255).contains(&h) => Some(h as u8),
                    Some(h) => return Err(f.err("hop_limit", &format!("is {h}, not 1..=255"))),
                },
            }
        }
        "set_ecn" => {
            f.only(&["op", "port", "tc", "kmin", "kmax", "pmax", "off"])?;
            let off = f.opt_bool("off")?.unwrap_or(false);
            let ecn = if off {
                None
            } else {
                let kmin = f
                    .opt_u64("kmin")?
                    .ok_or_else(|| f.err("kmin", "is missing (bytes; or give \"off\": true)"))?;
                let kmax = f.opt_u64("kmax")?.unwrap_or(kmin);
                let pmax = f.opt_f64("pmax")?.unwrap_or(1.0);
                Some((kmin, kmax, pmax))
            };
            UpdateOp::SetEcn {
                port: f.string("port")?,
                tc: f.u64_in("tc", 7)? as u8,
                ecn,
            }
        }
        "add_sid" => {
            f.only(&[
                "op",
                "sid",
                "vrf",
                "behavior",
                "block_bits",
                "shift_bits",
                "flavors",
                "via",
                "dev",
                "group",
                "lookup_vrf",
            ])?;
            UpdateOp::AddSid(Box::new(SidOp {
                sid: f.string("sid")?,
                vrf: f.opt_string("vrf")?,
                behavior: f.string("behavior")?,
                block_bits: f.opt_u8_in("block_bits", 0..=120)?,
                shift_bits: f.opt_u8_in("shift_bits", 0..=120)?,
                flavors: f.strings("flavors")?,
                via: f.opt_string("via")?,
                dev: f.opt_string("dev")?,
                group: f.opt_string("group")?,
                lookup_vrf: f.opt_string("lookup_vrf")?,
            }))
        }
        "del_sid" => {
            f.only(&["op", "sid", "vrf"])?;
            UpdateOp::DelSid {
                sid: f.string("sid")?,
                vrf: f.opt_string("vrf")?,
            }
        }
        "add_policy" => {
            f.only(&["op", "policy", "segments", "mode", "source", "hop_limit"])?;
            let segments = f.strings("segments")?;
            if segments.is_empty() {
                return Err(f.err("segments", "is empty (give a non-empty array of IPv6 SIDs)"));
            }
            UpdateOp::AddPolicy {
                policy: f.string("policy")?,
                segments,
                mode: f.opt_string("mode")?,
                source: f.opt_string("source")?,
                hop_limit: f.opt_u8_in("hop_limit", 1..=255)?,
            }
        }
        "del_policy" => {
            f.only(&["op", "policy"])?;
            UpdateOp::DelPolicy {
                policy: f.string("policy")?,
            }
        }
        "add_group" => {
            f.only(&[&["op", "group", "members"][..], &BALANCE_KEYS].concat())?;
            let members = match object.get("members") {
                Some(Value::Array(items)) if !items.is_empty() => items
                    .iter()
                    .enumerate()
                    .map(|(m, item)| {
                        let Value::Object(member) = item else {
                            return Err(f.err(
                                "members",
                                &format!("[{m}] must be an object, not {}", kind(item)),
                            ));
                        };
                        let mf = Fields {
                            object: member,
                            context: format!("{}: members[{m}]", f.context),
                        };
                        mf.only(&["via", "dev", "weight"])?;
                        let weight = match mf.opt_u64("weight")? {
                            None => 1,
                            Some(w) => ecmp_weight(w).map_err(|m| mf.err("weight", &m))?,
                        };
                        Ok((mf.string("via")?, mf.string("dev")?, weight))
                    })
                    .collect::<Result<Vec<_>, String>>()?,
                Some(Value::Array(_)) => {
                    return Err(f.err(
                        "members",
                        "is empty (give a non-empty array of {\"via\", \"dev\", \"weight\"})",
                    ));
                }
                None | Some(Value::Null) => {
                    return Err(f.err(
                        "members",
                        "is missing (a non-empty array of {\"via\", \"dev\", \"weight\"})",
                    ));
                }
                Some(other) => {
                    return Err(f.err("members", &format!("must be an array, not {}", kind(other))));
                }
            };
            UpdateOp::AddGroup {
                group: f.string("group")?,
                members,
                balance: balance_request(&f)?,
            }
        }
        "del_group" => {
            f.only(&["op", "group"])?;
            UpdateOp::DelGroup {
                group: f.string("group")?,
            }
        }
        "set_group" => {
            f.only(&[&["op", "group"][..], &BALANCE_KEYS].concat())?;
            UpdateOp::SetGroup {
                group: f.string("group")?,
                balance: balance_request(&f)?,
            }
        }
        "add_vlan" => {
            f.only(&["op", "vlan"])?;
            UpdateOp::AddVlan { vlan: vlan(&f)? }
        }
        "del_vlan" => {
            f.only(&["op", "vlan"])?;
            UpdateOp::DelVlan { vlan: vlan(&f)? }
        }
        "set_port_vlan" => {
            f.only(&["op", "port", "mode", "vlan", "allowed", "native"])?;
            let mode = f.string("mode")?;
            let vid = |v: u64, field: &str| -> Result<u16, String> {
                if (1..=4094).contains(&v) {
                    Ok(v as u16)
                } else {
                    Err(f.err(field, &format!("holds {v}, not a VID 1..=4094")))
                }
            };
            let (access, allowed, native) = match mode.as_str() {
                "access" => {
                    let given = |k: &str| f.object.get(k).is_some_and(|v| !v.is_null());
                    if given("allowed") || given("native") {
                        return Err(format!(
                            "{}: `allowed` and `native` are for mode \"trunk\"",
                            f.context
                        ));
                    }
                    (
                        Some(vid(f.u64_in("vlan", 4095)?, "vlan")?),
                        Vec::new(),
                        None,
                    )
                }
                "trunk" => {
                    if f.object.get("vlan").is_some_and(|v| !v.is_null()) {
                        return Err(format!(
                            "{}: `vlan` is for mode \"access\"; a trunk takes `allowed` and `native`",
                            f.context
                        ));
                    }
                    let allowed = match f.object.get("allowed") {
                        Some(Value::Array(items)) => Some(
                            items
                                .iter()
                                .map(|i| match i.as_u64() {
                                    Some(v) => vid(v, "allowed"),
                                    None => Err(f.err("allowed", "must hold VLAN ids")),
                                })
                                .collect::<Result<Vec<u16>, String>>()?,
                        ),
                        None | Some(Value::Null) => None,
                        Some(other) => {
                            return Err(f.err(
                                "allowed",
                                &format!("must be an array, not {}", kind(other)),
                            ));
                        }
                    };
                    let native = f.opt_u64("native")?.map(|v| vid(v, "native")).transpose()?;
                    // The config's rules, in its words (`port[N].vlan.allowed[1]` there,
                    // `allowed[1]` here).
                    check_trunk(allowed.as_deref(), native).map_err(|(fault, message)| {
                        format!("{}: field `{}`: {message}", f.context, fault.field())
                    })?;
                    (None, allowed.unwrap_or_default(), native)
                }
                other => {
                    return Err(f.err(
                        "mode",
                        &format!("is \"{other}\", not \"access\" or \"trunk\""),
                    ));
                }
            };
            UpdateOp::SetPortVlan {
                port: f.string("port")?,
                access,
                allowed,
                native,
            }
        }
        "set_pfc" => {
            f.only(&["op", "port", "tc", "xoff", "xon", "headroom"])?;
            let (xoff, xon, headroom) = (
                f.opt_size("xoff")?,
                f.opt_size("xon")?,
                f.opt_size("headroom")?,
            );
            if xoff.is_none() && xon.is_none() && headroom.is_none() {
                return Err(format!(
                    "{}: give at least one of `xoff`, `xon`, `headroom` (bytes)",
                    f.context
                ));
            }
            UpdateOp::SetPfc {
                port: f.string("port")?,
                tc: f.u64_in("tc", 7)? as u8,
                xoff,
                xon,
                headroom,
            }
        }
        other => {
            return Err(format!(
                "updates[{index}]: unknown op `{other}` (known: add_route, del_route, \
                 add_neighbor, del_neighbor, add_ecmp_member, del_ecmp_member, add_group, \
                 del_group, set_group, add_mac, del_mac, add_vlan, del_vlan, set_port_vlan, set_ecn, set_pfc, \
                 add_sid, del_sid, add_policy, del_policy, set_policy)"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> (Value, String) {
        parse_request(line.as_bytes()).unwrap_err()
    }

    #[test]
    fn a_request_is_read_and_its_id_echoed() {
        let (id, cmd) = parse_request(br#"{"v":1,"id":7,"cmd":"show_ports"}"#).unwrap();
        assert_eq!((id, cmd), (json!(7), Command::ShowPorts));
        let (id, cmd) =
            parse_request(br#"{"v":1,"id":"a","cmd":"show_routes","vrf":"blue","limit":5}"#)
                .unwrap();
        assert_eq!(id, json!("a"));
        assert_eq!(
            cmd,
            Command::ShowRoutes {
                vrf: Some("blue".into()),
                limit: 5
            }
        );
    }

    #[test]
    fn malformed_requests_name_the_problem() {
        assert!(err("garbage").1.contains("not valid JSON"));
        assert!(
            err(r#"{"v":1,"id":3,"cmd":"show_po"#)
                .1
                .contains("not valid JSON")
        );
        assert!(err("[1,2]").1.contains("must be a JSON object"));
        let (id, m) = err(r#"{"v":2,"id":3,"cmd":"show_ports"}"#);
        assert_eq!(id, json!(3));
        assert!(m.contains("version 2 is not supported"), "{m}");
        assert!(err(r#"{"id":3,"cmd":"show_ports"}"#).1.contains("`v`"));
        let (id, m) = err(r#"{"v":1,"id":4,"cmd":"frobnicate"}"#);
        assert_eq!(id, json!(4));
        assert!(m.contains("unknown command `frobnicate`"), "{m}");
        assert!(
            err(r#"{"v":1,"id":4,"cmd":7}"#)
                .1
                .contains("`cmd` must be a string")
        );
        let m = err(r#"{"v":1,"id":4,"cmd":"show_ports","extra":1}"#).1;
        assert!(m.contains("unknown field `extra`"), "{m}");
        let m = err(r#"{"v":1,"id":4,"cmd":"show_routes","limit":"ten"}"#).1;
        assert!(
            m.contains("`limit` must be a non-negative integer, not a string"),
            "{m}"
        );
        let m = err(r#"{"v":1,"id":4,"cmd":"update","updates":[{"op":"add_mac","vlan":"10","mac":"02:00:00:00:00:01","port":"eth1"}]}"#).1;
        assert!(
            m.contains(
                "updates[0] (add_mac): field `vlan` must be a non-negative integer, not a string"
            ),
            "{m}"
        );
        let m = err(r#"{"v":1,"id":4,"cmd":"update","updates":[{"op":"add_mac","vlan":5000,"mac":"02:00:00:00:00:01","port":"eth1"}]}"#).1;
        assert!(
            m.contains("field `vlan` is 5000; VLAN ids are 1..=4094"),
            "{m}"
        );
        let m = err(r#"{"v":1,"id":4,"cmd":"update","updates":[{"op":"set_policy","policy":"p","segments":[]}]}"#).1;
        assert!(m.contains("`segments` is empty"), "{m}");
        let m = err(
            r#"{"v":1,"id":4,"cmd":"update","updates":[{"op":"add_route","prefix":"10.0.0.0/8"}]}"#,
        )
        .1;
        assert!(m.contains("exactly one of"), "{m}");
        let m = err(r#"{"v":1,"id":4,"cmd":"update","updates":{}}"#).1;
        assert!(m.contains("must be an array, not an object"), "{m}");
        let m = err(r#"{"v":1,"id":4,"cmd":"update","updates":[{"op":"nuke"}]}"#).1;
        assert!(m.contains("unknown op `nuke`"), "{m}");
        let m = err(r#"{"v":1,"id":[1],"cmd":"hello"}"#).1;
        assert!(m.contains("`id` must be a number or a string"), "{m}");
    }

    #[test]
    fn ecmp_weights_are_those_the_config_takes() {
        // As a [[nexthop_group]] member's `weight`: 1..=65535, with the config's wording.
        for (update, field) in [
            (
                r#"{"op":"add_ecmp_member","group":"g","via":"10.0.4.2","dev":"p3","weight":W}"#,
                "updates[0] (add_ecmp_member): field `weight`",
            ),
            (
                r#"{"op":"add_group","group":"h","members":[{"via":"10.0.4.2","dev":"p3","weight":W}]}"#,
                "updates[0] (add_group): members[0]: field `weight`",
            ),
        ] {
            let line = |w: u64| {
                format!(
                    r#"{{"v":1,"id":1,"cmd":"update","updates":[{}]}}"#,
                    update.replace('W', &w.to_string())
                )
            };
            for w in [0, 65_536, 4_294_967_295, 4_294_967_296] {
                let m = err(&line(w)).1;
                assert!(
                    m.contains(&format!("{field} {w} is out of range 1..=65535")),
                    "{w}: {m}"
                );
            }
            for w in [1, 65_535] {
                let (_, cmd) = parse_request(line(w).as_bytes()).unwrap();
                let Command::Update(ops) = cmd else {
                    panic!("{cmd:?}")
                };
                let weight = match &ops[0] {
                    UpdateOp::AddEcmpMember { weight, .. } => *weight,
                    UpdateOp::AddGroup { members, .. } => members[0].2,
                    other => panic!("{other:?}"),
                };
                assert_eq!(u64::from(weight), w);
            }
        }
    }

    #[test]
    fn the_fast_route_path_reads_what_the_general_one_reads_and_leaves_it_the_rest() {
        let lines: [&[u8]; 6] = [
            br#"{"v":1,"id":3,"cmd":"update","updates":[{"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.2","dev":"eth2"},{"op":"del_route","prefix":"10.8.0.0/16","vrf":"blue"},{"op":"add_route","prefix":"10.9.0.0/16","blackhole":true},{"op":"add_route","prefix":"::/0","group":"up","vrf":null}]}"#,
            br#"{"v":1,"id":"x","cmd":"update","updates":[{"op":"add_route","prefix":"10.7.0.0/16","policy":"pa"}]}"#,
            // Not for the fast path: each must give the general path's answer.
            br#"{"v":1,"id":3,"cmd":"update","updates":[{"op":"del_route","prefix":"10.8.0.0/16","via":"1.2.3.4"}]}"#,
            br#"{"v":1,"id":3,"cmd":"update","updates":[{"op":"add_route","prefix":"10.8.0.0/16"}]}"#,
            br#"{"v":1,"id":3,"cmd":"update","updates":[{"op":"add_route","prefix":"10.8.0.0/16","blackhole":false,"group":"g","via":"1.1.1.1"}]}"#,
            br#"{"v":2,"id":3,"cmd":"update","updates":[{"op":"add_route","prefix":"10.8.0.0/16","blackhole":true}]}"#,
        ];
        for (i, line) in lines.iter().enumerate() {
            let fast = fast_route_update(line);
            assert_eq!(fast.is_some(), i < 2, "line {i}");
            let general = parse_request(line);
            if let Some(fast) = fast {
                assert_eq!(Ok(fast.clone()), general);
                assert_eq!(Ok(fast), parse_general(line), "line {i}: both paths agree");
            } else {
                assert!(general.is_err(), "line {i}: {general:?}");
            }
        }
    }

    #[test]
    fn trunks_follow_the_configs_rules_in_its_words() {
        // The same trunk in a config and in `set_port_vlan`: refused at the same place
        // (`port[0].vlan.X` there, `X` here) with the same message (`config::check_trunk`).
        let config = |vlan: &str| {
            format!(
                "[switch]\nname = \"t\"\nrouter_mac = \"02:00:00:00:01:00\"\n\
                 [dataplane]\nmode = \"switch\"\nworker_lcores = [1]\n\
                 [[vlan]]\nid = 10\n[[vlan]]\nid = 20\n\
                 [[port]]\nname = \"h2\"\ndevargs = \"net_null0\"\nvlan = {vlan}\n"
            )
        };
        for (allowed, native, field, message) in [
            (
                Some("[10, 10]"),
                None,
                "allowed[1]",
                "VLAN 10 is listed twice",
            ),
            (
                Some("[20, 10, 20]"),
                None,
                "allowed[2]",
                "VLAN 20 is listed twice",
            ),
            (
                Some("[10]"),
                Some(20),
                "native",
                "native VLAN 20 is not in allowed [10]",
            ),
            (Some("[]"), None, "allowed", "is empty"),
            (Some("[]"), Some(20), "allowed", "is empty"),
            (None, Some(20), "allowed", "a trunk needs `allowed`"),
        ] {
            let mut toml = String::from("{ mode = \"trunk\"");
            let mut json = String::from(r#"{"op":"set_port_vlan","port":"h2","mode":"trunk""#);
            if let Some(a) = allowed {
                toml.push_str(&format!(", allowed = {a}"));
                json.push_str(&format!(r#","allowed":{a}"#));
            }
            if let Some(n) = native {
                toml.push_str(&format!(", native = {n}"));
                json.push_str(&format!(r#","native":{n}"#));
            }
            toml.push_str(" }");
            json.push('}');
            let refused =
                crate::config::Config::parse(std::path::Path::new("t.toml"), &config(&toml))
                    .unwrap_err()
                    .to_string();
            let (place, config_message) = refused.split_once("`: ").expect("field: message");
            assert!(
                place.ends_with(&format!("field `port[0].vlan.{field}")),
                "{toml}: {refused}"
            );
            assert!(config_message.contains(message), "{toml}: {refused}");
            let (_, api_message) = err(&format!(
                r#"{{"v":1,"id":1,"cmd":"update","updates":[{json}]}}"#
            ));
            assert_eq!(
                api_message,
                format!("updates[0] (set_port_vlan): field `{field}`: {config_message}"),
                "{json}"
            );
        }
        // What the config takes, the API takes.
        for (toml, json) in [
            (
                "allowed = [10, 20], native = 20",
                r#""allowed":[10,20],"native":20"#,
            ),
            ("allowed = [20]", r#""allowed":[20],"native":null"#),
        ] {
            crate::config::Config::parse(
                std::path::Path::new("t.toml"),
                &config(&format!("{{ mode = \"trunk\", {toml} }}")),
            )
            .unwrap_or_else(|e| panic!("{toml}: {e}"));
            let line = format!(
                r#"{{"v":1,"id":1,"cmd":"update","updates":[{{"op":"set_port_vlan","port":"h2","mode":"trunk",{json}}}]}}"#
            );
            parse_request(line.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e:?}"));
        }
    }

    #[test]
    fn updates_are_read_with_their_defaults() {
        let (_, cmd) = parse_request(
            br#"{"v":1,"id":1,"cmd":"update","updates":[
                {"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.2","dev":"eth2"},
                {"op":"add_ecmp_member","group":"up","via":"10.255.0.4","dev":"eth3"},
                {"op":"set_ecn","port":"eth1","tc":3,"kmin":1000},
                {"op":"set_ecn","port":"eth1","tc":4,"off":true}]}"#,
        )
        .unwrap();
        assert_eq!(
            cmd,
            Command::Update(vec![
                UpdateOp::AddRoute {
                    vrf: None,
                    prefix: "10.7.0.0/16".into(),
                    to: RouteTo::Via {
                        ip: "10.255.0.2".into(),
                        dev: "eth2".into()
                    }
                },
                UpdateOp::AddEcmpMember {
                    group: "up".into(),
                    ip: "10.255.0.4".into(),
                    dev: "eth3".into(),
                    weight: 1
                },
                UpdateOp::SetEcn {
                    port: "eth1".into(),
                    tc: 3,
                    ecn: Some((1000, 1000, 1.0))
                },
                UpdateOp::SetEcn {
                    port: "eth1".into(),
                    tc: 4,
                    ecn: None
                },
            ])
        );
    }
}

#[cfg(test)]
mod timing {
    /// `cargo test --release -p control --lib parse_cost -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn parse_cost_of_a_10k_route_batch() {
        let ops: Vec<String> = (0..10_000)
            .map(|i| {
                format!(
                    r#"{{"op":"add_route","prefix":"20.{}.{}.0/24","group":"spines"}}"#,
                    i / 256,
                    i % 256
                )
            })
            .collect();
        let line = format!(
            r#"{{"v":1,"id":1,"cmd":"update","updates":[{}]}}"#,
            ops.join(",")
        );
        let t = std::time::Instant::now();
        for _ in 0..10 {
            super::parse_request(line.as_bytes()).unwrap();
        }
        eprintln!("parse: {:?} per 10k batch", t.elapsed() / 10);
    }
}
