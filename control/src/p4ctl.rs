//! The P4-style entry form: `table_add TABLE ACTION MATCH... => PARAMS...`, `table_delete`,
//! `table_dump`, with table and action names checked against `p4/ironclos.p4`
//! (`p4::schema()`). Writable: `ipv4_lpm`, `ipv6_lpm` (match: VRF, prefix), `mac_table`
//! (match: VID, MAC) and `my_sid` (match: VRF, SID prefix; actions `end`, `end_x`, `un`, `ua`,
//! `end_dt4`, `end_dt6`, `end_dt46` with the P4 program's parameters). Entries follow the
//! config's rules as the API's updates do: a prefix without host bits, not an interface's
//! subnet or address (`resolve::route_prefix_free`), and a route or End.X/uA SID forwards in
//! its own VRF (`config::check_forwarding_vrf`; for a nexthop given by id the server asks the
//! worker for its interface first, `needs_nexthops`). `table_dump` reads the writable tables
//! and `nexthop`.

use crate::config::{format_mac, parse_mac};
use crate::server::Names;
use dataplane::ctl::{DumpKind, MacDumpEntry, NexthopEntry, RouteEntry, SidEntry, Target, Update};
use dataplane::pipeline::spec::{Attachment, CsidFormat, RouteTarget, SidBehavior, SidSpec};
use serde_json::{Value, json};
use std::net::Ipv6Addr;

/// Tables this form writes.
pub const WRITABLE: [&str; 4] = ["ipv4_lpm", "ipv6_lpm", "mac_table", "my_sid"];

/// Tables `table_dump` reads: the writable ones and `nexthop` (the ids `set_nexthop` and an
/// End.X's route kind 1 take).
pub const DUMPABLE: [&str; 5] = ["ipv4_lpm", "ipv6_lpm", "mac_table", "my_sid", "nexthop"];

/// The P4 program's route kinds (`ROUTE_NEXTHOP`, `ROUTE_GROUP`) for End.X / uA targets.
const ROUTE_NEXTHOP: u32 = 1;
const ROUTE_GROUP: u32 = 2;

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

/// A VRF by name or id.
fn vrf(names: &Names, text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(n) if usize::from(n) < names.vrfs.len() => Ok(n),
        Ok(n) => Err(format!(
            "VRF {n} does not exist (VRFs: {})",
            names
                .vrfs
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{i} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(_) => names.vrf(Some(text)),
    }
}

fn index_or_name(text: &str, by_name: impl Fn(&str) -> Result<u32, String>) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) => Ok(n),
        Err(_) => by_name(text),
    }
}

/// An LPM entry's VRF and prefix, with the API's rules (`resolve::network_prefix`: no host
/// bits; for an entry `adding`, also `resolve::route_prefix_free`: not a prefix an interface
/// address of the VRF takes).
fn lpm_match(
    names: &Names,
    table: &str,
    matches: &[String],
    adding: bool,
) -> Result<(u16, std::net::IpAddr, u8), String> {
    let vrf = vrf(names, &matches[0])?;
    let (prefix, len) = crate::resolve::network_prefix(&matches[1])?;
    if adding {
        crate::resolve::route_prefix_free(names, vrf, (prefix, len))?;
    }
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
            let (vrf, prefix, len) = lpm_match(names, table, matches, true)?;
            let target = match action {
                "set_nexthop" => Target::Nexthop(params[0].parse().map_err(|_| {
                    format!(
                        "nexthop `{}` is not an index (see table_dump nexthop / show nexthops)",
                        params[0]
                    )
                })?),
                "set_ecmp_group" => {
                    let group = index_or_name(&params[0], |n| names.group(n))?;
                    names.check_target_vrf("this route", vrf, RouteTarget::Group(group), &[])?;
                    Target::Group(group)
                }
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
            let label = names
                .ports
                .get(usize::from(port))
                .map_or(params[0].as_str(), String::as_str);
            crate::resolve::static_mac(names, vid(&matches[0])?, &matches[1], port, label)
        }
        "my_sid" => my_sid_add(names, action, matches, params),
        _ => unreachable!("check() admits writable tables only"),
    }
}

fn bit(text: &str, name: &str) -> Result<bool, String> {
    match text {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("{name} `{text}` is not a bit (0 or 1)")),
    }
}

/// A 128-bit mask: an IPv6 address (`ffff:ffff::`) or hex (`0xffffffff000...`).
fn mask(text: &str, name: &str) -> Result<u128, String> {
    if let Ok(a) = text.parse::<Ipv6Addr>() {
        return Ok(u128::from(a));
    }
    text.strip_prefix("0x")
        .and_then(|h| u128::from_str_radix(h, 16).ok())
        .ok_or_else(|| format!("{name} `{text}` is not an IPv6 address or 0x-hex mask"))
}

/// The NEXT-C-SID format the `un`/`ua` masks describe: the block mask must be leading ones,
/// the argument mask the bits after block + shift (as Rust's `Csid` computes them).
fn csid_format(block: &str, argument: &str, shift: &str) -> Result<CsidFormat, String> {
    let block_mask = mask(block, "block_mask")?;
    let argument_mask = mask(argument, "argument_mask")?;
    let block_bits = block_mask.leading_ones();
    if block_mask.checked_shl(block_bits).unwrap_or(0) != 0 {
        return Err(format!("block_mask `{block}` is not a run of leading ones"));
    }
    let shift_bits: u32 = shift
        .parse()
        .ok()
        .filter(|s| (1..128).contains(s))
        .ok_or_else(|| format!("shift `{shift}` is not 1..=127"))?;
    if block_bits + shift_bits >= 128 {
        return Err(format!(
            "block {block_bits} + shift {shift_bits} bits must leave an argument (< 128)"
        ));
    }
    let expected = u128::MAX >> (block_bits + shift_bits);
    if argument_mask != expected {
        return Err(format!(
            "argument_mask `{argument}` must be the {} bits after block + shift ({})",
            128 - block_bits - shift_bits,
            Ipv6Addr::from(expected)
        ));
    }
    Ok(CsidFormat {
        block_bits: block_bits as u8,
        shift_bits: shift_bits as u8,
    })
}

/// End.X / uA target: route kind 1 (nexthop index) or 2 (group index or name).
fn adjacency(names: &Names, kind: &str, target: &str) -> Result<RouteTarget, String> {
    match kind.parse::<u32>() {
        Ok(ROUTE_NEXTHOP) => Ok(RouteTarget::Nexthop(target.parse().map_err(|_| {
            format!("nexthop `{target}` is not an index (see show nexthops)")
        })?)),
        Ok(ROUTE_GROUP) => Ok(RouteTarget::Group(index_or_name(target, |n| {
            names.group(n)
        })?)),
        _ => Err(format!(
            "route_kind `{kind}`: an adjacency is {ROUTE_NEXTHOP} (nexthop) or {ROUTE_GROUP} (ECMP group)"
        )),
    }
}

fn my_sid_add(
    names: &Names,
    action: &str,
    matches: &[String],
    params: &[String],
) -> Result<Update, String> {
    let (vrf, prefix, len) = my_sid_match(names, matches)?;
    if names.sid_slot(vrf, prefix, len).is_some() {
        return Err(format!(
            "{prefix}/{len} is already a local SID in VRF {}",
            names.vrf_name(vrf)
        ));
    }
    let (mut psp, mut usp, mut next_csid) = (false, false, None);
    let behavior = match action {
        "end" | "end_x" | "un" | "ua" => {
            psp = bit(&params[0], "psp")?;
            usp = bit(&params[1], "usp")?;
            if matches!(action, "un" | "ua") {
                next_csid = Some(csid_format(&params[2], &params[3], &params[4])?);
            }
            match action {
                "end" | "un" => SidBehavior::End,
                "end_x" => SidBehavior::EndX {
                    target: adjacency(names, &params[2], &params[3])?,
                },
                _ => SidBehavior::EndX {
                    target: adjacency(names, &params[5], &params[6])?,
                },
            }
        }
        _ => {
            let table = vrf_param(names, &params[0])?;
            match action {
                "end_dt4" => SidBehavior::EndDt4 { vrf: table },
                "end_dt6" => SidBehavior::EndDt6 { vrf: table },
                _ => SidBehavior::EndDt46 { vrf: table },
            }
        }
    };
    if let SidBehavior::EndX { target } = behavior {
        // A nexthop by id is checked by the server with the worker's nexthops.
        names.check_target_vrf("this SID", vrf, target, &[])?;
    }
    Ok(Update::AddSid {
        slot: names.next_sid_slot(),
        spec: Box::new(SidSpec {
            name: format!("{prefix}/{len}"),
            vrf,
            prefix,
            len,
            behavior,
            next_csid,
            psp,
            usp,
        }),
        via: None,
    })
}

fn vrf_param(names: &Names, text: &str) -> Result<u16, String> {
    vrf(names, text)
}

fn my_sid_match(names: &Names, matches: &[String]) -> Result<(u16, Ipv6Addr, u8), String> {
    let vrf = vrf(names, &matches[0])?;
    let (_, prefix, len) = crate::resolve::sid_prefix(names, None, &matches[1])?;
    Ok((vrf, prefix, len))
}

pub fn table_delete(names: &Names, table: &str, matches: &[String]) -> Result<Update, String> {
    check(table, None, matches.len(), 0)?;
    match table {
        "ipv4_lpm" | "ipv6_lpm" => {
            let (vrf, prefix, len) = lpm_match(names, table, matches, false)?;
            Ok(Update::DelRoute { vrf, prefix, len })
        }
        "mac_table" => Ok(Update::DelMac {
            vlan: vid(&matches[0])?,
            mac: parse_mac(&matches[1])?,
        }),
        "my_sid" => {
            let (vrf, prefix, len) = my_sid_match(names, matches)?;
            let slot = names.sid_slot(vrf, prefix, len).ok_or_else(|| {
                format!("no local SID {prefix}/{len} in VRF {}", names.vrf_name(vrf))
            })?;
            Ok(Update::DelSid {
                slot,
                vrf,
                prefix,
                len,
            })
        }
        _ => unreachable!("check() admits writable tables only"),
    }
}

/// Whether `update`, an entry of this form, forwards to a nexthop given by id: its VRF rule
/// needs the nexthop's interface, which the worker knows (nexthops are made as neighbours
/// are learned too). The server asks for the worker's nexthops first and checks the entry
/// with `Names::check_target_vrf`, the VRF and target this returns.
pub fn needs_nexthops(update: &Update) -> Option<(&'static str, u16, RouteTarget)> {
    match update {
        Update::AddRoute {
            vrf,
            target: Target::Nexthop(id),
            ..
        } => Some(("this route", *vrf, RouteTarget::Nexthop(*id))),
        Update::AddSid { spec, .. } => match spec.behavior {
            SidBehavior::EndX {
                target: target @ RouteTarget::Nexthop(_),
            } => Some(("this SID", spec.vrf, target)),
            _ => None,
        },
        _ => None,
    }
}

/// The snapshot a `table_dump` needs.
pub fn dump_kinds(table: &str) -> Result<Vec<DumpKind>, String> {
    if p4::schema().table(table).is_none() {
        // As for the other commands: the P4 program's tables.
        check(table, None, 0, 0)?;
    }
    if !DUMPABLE.contains(&table) {
        return Err(format!(
            "table `{table}` cannot be dumped; table_dump reads {} (the switch's other tables: see show ports, show vlans, show groups, show queues)",
            DUMPABLE.join(", ")
        ));
    }
    Ok(match table {
        "mac_table" => vec![DumpKind::Macs { limit: usize::MAX }],
        "my_sid" => vec![DumpKind::Sids],
        "nexthop" => vec![DumpKind::Nexthops],
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

pub fn dump_sids(names: &Names, table: &str, sids: &[SidEntry]) -> Value {
    let _ = names;
    let bit = |b: bool| if b { "1" } else { "0" }.to_owned();
    let target = |t: RouteTarget| match t {
        RouteTarget::Group(g) => vec![ROUTE_GROUP.to_string(), g.to_string()],
        RouteTarget::Nexthop(n) => vec![ROUTE_NEXTHOP.to_string(), n.to_string()],
        other => vec!["0".to_owned(), format!("{other:?}")],
    };
    Value::Array(
        sids.iter()
            .map(|s| {
                let matches = vec![s.vrf.to_string(), format!("{}/{}", s.prefix, s.len)];
                let mut params = Vec::new();
                let action = match (s.behavior, s.csid) {
                    (SidBehavior::End | SidBehavior::EndX { .. }, csid) => {
                        params.push(bit(s.psp));
                        params.push(bit(s.usp));
                        if let Some((block, argument, shift)) = csid {
                            params.push(Ipv6Addr::from(block).to_string());
                            params.push(Ipv6Addr::from(argument).to_string());
                            params.push(shift.to_string());
                        }
                        if let SidBehavior::EndX { target: t } = s.behavior {
                            params.extend(target(t));
                        }
                        match (s.behavior, csid.is_some()) {
                            (SidBehavior::End, false) => "end",
                            (SidBehavior::End, true) => "un",
                            (_, false) => "end_x",
                            (_, true) => "ua",
                        }
                    }
                    (SidBehavior::EndDt4 { vrf }, _) => {
                        params.push(vrf.to_string());
                        "end_dt4"
                    }
                    (SidBehavior::EndDt6 { vrf }, _) => {
                        params.push(vrf.to_string());
                        "end_dt6"
                    }
                    (SidBehavior::EndDt46 { vrf }, _) => {
                        params.push(vrf.to_string());
                        "end_dt46"
                    }
                };
                entry(table, action, matches, params)
            })
            .collect(),
    )
}

/// The `nexthop` table as the P4 program has it: a resolved neighbour behind a routed port is
/// `rewrite_to_port` (port, MAC), behind a VLAN interface `rewrite_to_vlan` (VID, MAC); one
/// not resolved yet takes the default action, `resolve_nexthop`, listed too so that every id
/// `set_nexthop` may take is seen.
pub fn dump_nexthops(names: &Names, table: &str, nexthops: &[NexthopEntry]) -> Value {
    let attachment = |interface: u16| {
        names
            .spec
            .as_ref()
            .and_then(|s| s.interfaces.get(usize::from(interface)))
            .map(|i| i.attachment)
    };
    Value::Array(
        nexthops
            .iter()
            .map(|n| {
                let matches = vec![n.id.to_string()];
                let (action, params) = match (n.mac, attachment(n.interface)) {
                    (Some(mac), Some(Attachment::Port(port))) => {
                        ("rewrite_to_port", vec![port.to_string(), format_mac(mac)])
                    }
                    (Some(mac), Some(Attachment::Vlan(vid))) => {
                        ("rewrite_to_vlan", vec![vid.to_string(), format_mac(mac)])
                    }
                    _ => ("resolve_nexthop", vec![]),
                };
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

#[cfg(test)]
mod my_sid_tests {
    use super::*;

    #[test]
    fn un_masks_give_back_the_block_and_shift() {
        assert_eq!(
            csid_format("ffff:ffff::", "::ffff:ffff:ffff:ffff:ffff", "16"),
            Ok(CsidFormat {
                block_bits: 32,
                shift_bits: 16
            })
        );
        assert_eq!(
            csid_format("0xffffffffff000000000000000000000000", "::ffff:ffff:ffff:ffff", "24"),
            Err("block_mask `0xffffffffff000000000000000000000000` is not an IPv6 address or 0x-hex mask".to_owned()),
            "more than 128 bits"
        );
        let e = csid_format("ffff:0:ffff::", "::ffff", "16").unwrap_err();
        assert!(e.contains("not a run of leading ones"), "{e}");
        let e = csid_format("ffff:ffff::", "::ffff", "16").unwrap_err();
        assert!(e.contains("must be the 80 bits after block + shift"), "{e}");
        let e = csid_format("ffff:ffff::", "::", "0").unwrap_err();
        assert!(e.contains("shift `0`"), "{e}");
        assert!(check("my_sid", Some("ua"), 2, 7).is_ok());
        assert!(check("my_sid", Some("end_dt46"), 2, 1).is_ok());
        let e = check("my_sid", Some("end_x"), 2, 2).unwrap_err();
        assert!(e.contains("takes 4 parameters"), "{e}");
    }
}
