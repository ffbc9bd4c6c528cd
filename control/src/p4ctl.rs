//! The P4-style entry form: `table_add TABLE ACTION MATCH... => PARAMS...`, `table_delete`,
//! `table_dump`, with table and action names checked against `p4/ironclos.p4`
//! (`p4::schema()`). Writable: `ipv4_lpm`, `ipv6_lpm` (match: VRF, prefix) and `mac_table`
//! (match: VID, MAC).

use crate::config::{format_mac, parse_mac};
use crate::server::{Names, parse_prefix};
use dataplane::ctl::{DumpKind, MacDumpEntry, RouteEntry, Target, Update};
use dataplane::pipeline::spec::RouteTarget;
use serde_json::{Value, json};

/// Tables this form writes.
pub const WRITABLE: [&str; 3] = ["ipv4_lpm", "ipv6_lpm", "mac_table"];

/// Checks the table, the action and the number of match fields and parameters against the
/// P4 program.
fn check(table: &str, action: Option<&str>, matches: usize, params: usize) -> Result<(), String> {
    let schema = p4::schema();
    let Some(t) = schema.table(table) else {
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        return Err(format!(
            "unknown table `{table}` (P4 tables: {})",
            names.join(", ")
        ));
    };
    if !WRITABLE.contains(&table) {
        return Err(format!(
            "table `{table}` is filled by the switch itself; writable tables: {}",
            WRITABLE.join(", ")
        ));
    }
    if matches != t.keys.len() {
        let keys: Vec<String> = t
            .keys
            .iter()
            .map(|k| format!("{}:{}", k.field, k.match_kind))
            .collect();
        return Err(format!(
            "table `{table}` matches on {} fields ({}), {matches} given",
            t.keys.len(),
            keys.join(" ")
        ));
    }
    if let Some(action) = action {
        if !t.actions.iter().any(|a| a == action) {
            return Err(format!(
                "table `{table}` has no action `{action}` (actions: {})",
                t.actions.join(", ")
            ));
        }
        let declared = schema.action(action).map_or(0, |a| a.params.len());
        if params != declared {
            let names: Vec<String> = schema.action(action).map_or(Vec::new(), |a| {
                a.params
                    .iter()
                    .map(|p| format!("{}:bit<{}>", p.name, p.bits))
                    .collect()
            });
            return Err(format!(
                "action `{action}` takes {declared} parameters ({}), {params} given",
                names.join(" ")
            ));
        }
    }
    Ok(())
}

fn vrf(names: &Names, text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(n) => Ok(n),
        Err(_) => names.vrf(Some(text)),
    }
}

fn index_or_name(text: &str, by_name: impl Fn(&str) -> Result<u32, String>) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) => Ok(n),
        Err(_) => by_name(text),
    }
}

fn lpm_match(
    names: &Names,
    table: &str,
    matches: &[String],
) -> Result<(u16, std::net::IpAddr, u8), String> {
    let vrf = vrf(names, &matches[0])?;
    let (prefix, len) = parse_prefix(&matches[1])?;
    if (table == "ipv4_lpm") != prefix.is_ipv4() {
        return Err(format!(
            "`{}` is not an {} prefix",
            matches[1],
            if table == "ipv4_lpm" { "IPv4" } else { "IPv6" }
        ));
    }
    Ok((vrf, prefix, len))
}

fn vid(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|v| (1..=4094).contains(v))
        .ok_or_else(|| format!("`{text}` is not a VID (1..=4094)"))
}

pub fn table_add(
    names: &Names,
    table: &str,
    action: &str,
    matches: &[String],
    params: &[String],
) -> Result<Update, String> {
    check(table, Some(action), matches.len(), params.len())?;
    match table {
        "ipv4_lpm" | "ipv6_lpm" => {
            let (vrf, prefix, len) = lpm_match(names, table, matches)?;
            let target = match action {
                "set_nexthop" => Target::Nexthop(params[0].parse().map_err(|_| {
                    format!(
                        "nexthop `{}` is not an index (see table_dump nexthop / show nexthops)",
                        params[0]
                    )
                })?),
                "set_ecmp_group" => Target::Group(index_or_name(&params[0], |n| names.group(n))?),
                "set_srv6_policy" => {
                    Target::Srv6Policy(index_or_name(&params[0], |n| names.policy(n))?)
                }
                "blackhole" => Target::Blackhole,
                other => {
                    return Err(format!(
                        "action `{other}` is installed by the switch itself (interface addresses, default action)"
                    ));
                }
            };
            Ok(Update::AddRoute {
                vrf,
                prefix,
                len,
                target,
            })
        }
        "mac_table" => {
            if action != "l2_forward" {
                return Err(format!(
                    "action `{action}` is the table's default, not an entry"
                ));
            }
            let port = match params[0].parse::<u16>() {
                Ok(p) => p,
                Err(_) => names.port(&params[0])?,
            };
            Ok(Update::AddMac {
                vlan: vid(&matches[0])?,
                mac: parse_mac(&matches[1])?,
                port,
            })
        }
        _ => unreachable!("check() admits writable tables only"),
    }
}

pub fn table_delete(names: &Names, table: &str, matches: &[String]) -> Result<Update, String> {
    check(table, None, matches.len(), 0)?;
    match table {
        "ipv4_lpm" | "ipv6_lpm" => {
            let (vrf, prefix, len) = lpm_match(names, table, matches)?;
            Ok(Update::DelRoute { vrf, prefix, len })
        }
        "mac_table" => Ok(Update::DelMac {
            vlan: vid(&matches[0])?,
            mac: parse_mac(&matches[1])?,
        }),
        _ => unreachable!("check() admits writable tables only"),
    }
}

/// The snapshot a `table_dump` needs.
pub fn dump_kinds(table: &str) -> Result<Vec<DumpKind>, String> {
    let keys = p4::schema().table(table).map_or(0, |t| t.keys.len());
    check(table, None, keys, 0)?;
    Ok(match table {
        "mac_table" => vec![DumpKind::Macs { limit: usize::MAX }],
        _ => vec![DumpKind::Routes {
            vrf: None,
            limit: usize::MAX,
        }],
    })
}

fn entry(table: &str, action: &str, matches: Vec<String>, params: Vec<String>) -> Value {
    json!({"table": table, "action": action, "match": matches, "params": params})
}

pub fn dump_routes(names: &Names, table: &str, routes: &[RouteEntry]) -> Value {
    let v4 = table == "ipv4_lpm";
    Value::Array(
        routes
            .iter()
            .filter(|r| r.prefix.is_ipv4() == v4)
            .map(|r| {
                let matches = vec![r.vrf.to_string(), format!("{}/{}", r.prefix, r.len)];
                let (action, params) = match r.target {
                    RouteTarget::Nexthop(n) => ("set_nexthop", vec![n.to_string()]),
                    RouteTarget::Group(g) => ("set_ecmp_group", vec![g.to_string()]),
                    RouteTarget::Connected(i) => ("glean", vec![i.to_string()]),
                    RouteTarget::Local => ("punt_local", vec![]),
                    RouteTarget::Blackhole => ("blackhole", vec![]),
                    RouteTarget::Srv6Policy(p) => ("set_srv6_policy", vec![p.to_string()]),
                };
                let _ = names;
                entry(table, action, matches, params)
            })
            .collect(),
    )
}

pub fn dump_macs(names: &Names, table: &str, macs: &[MacDumpEntry]) -> Value {
    let _ = names;
    Value::Array(
        macs.iter()
            .map(|m| {
                entry(
                    table,
                    "l2_forward",
                    vec![m.vlan.to_string(), format_mac(m.mac)],
                    vec![m.port.to_string()],
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_against_the_p4_program() {
        assert!(check("ipv4_lpm", Some("set_nexthop"), 2, 1).is_ok());
        assert!(check("mac_table", Some("l2_forward"), 2, 1).is_ok());
        let e = check("ipv4_lpmx", Some("set_nexthop"), 2, 1).unwrap_err();
        assert!(e.contains("unknown table `ipv4_lpmx`"), "{e}");
        let e = check("ipv4_lpm", Some("l2_forward"), 2, 1).unwrap_err();
        assert!(e.contains("has no action `l2_forward`"), "{e}");
        let e = check("ipv4_lpm", Some("set_nexthop"), 1, 1).unwrap_err();
        assert!(e.contains("matches on 2 fields"), "{e}");
        let e = check("ipv4_lpm", Some("set_nexthop"), 2, 0).unwrap_err();
        assert!(e.contains("takes 1 parameters"), "{e}");
        // Every writable table exists in the P4 program.
        for t in WRITABLE {
            assert!(p4::schema().table(t).is_some(), "{t}");
        }
    }
}
