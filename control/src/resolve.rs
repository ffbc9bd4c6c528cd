//! Names to dataplane updates: what the server does with each `update` op before the worker
//! sees it, and the server's copy of what the worker holds by name (ECMP groups, SRv6 SIDs and
//! policies, PFC thresholds), kept in step as batches apply.
//!
//! SIDs, policies and groups live in slots: a deleted one leaves its slot free (an empty
//! name here) and the next addition takes the first free slot, or a new one at the end. The
//! worker refuses a slot that is taken by then (two clients racing), so a route never points
//! at the wrong object.

use crate::api::{BalanceRequest, RouteTo, SidOp, UpdateOp};
use crate::config::{
    Egress, check_forwarding_vrf, check_ipv6_mtu, check_member_vrf, check_port_in_vlan,
    check_unicast_mac, parse_mac, sid_behavior_kind, srv6_defaults,
};
use crate::ecmp_config::BalanceKey;
use crate::server::{Names, parse_ip, parse_prefix};
use dataplane::ctl::{NexthopEntry, Target, Update};
use dataplane::pipeline::spec::{
    CsidFormat, EncapMode, PolicySpec, PortRole, RouteTarget, SidBehavior, SidSpec, VlanSpec,
};
use dataplane::qos::{EcnProfile, PfcThresholds};
use dataplane::tables::flowlet::BalanceSpec;
use std::net::{IpAddr, Ipv6Addr};

/// Whether the server's names change when `update` applies.
pub fn renames(update: &Update) -> bool {
    matches!(
        update,
        Update::AddSid { .. }
            | Update::DelSid { .. }
            | Update::AddPolicy { .. }
            | Update::DelPolicy { .. }
            | Update::SetPolicy { .. }
            | Update::AddGroup { .. }
            | Update::DelGroup { .. }
            | Update::SetPfc { .. }
            | Update::AddVlan { .. }
            | Update::DelVlan { .. }
            | Update::SetPortVlans { .. }
    )
}

/// The API op an update is (`reload` names its updates so); a weight change, which only
/// `reload` makes, is `set_ecmp_weight`.
pub fn op_name(update: &Update) -> &'static str {
    match update {
        Update::AddRoute { .. } => "add_route",
        Update::DelRoute { .. } => "del_route",
        Update::AddNeighbor { .. } => "add_neighbor",
        Update::DelNeighbor { .. } => "del_neighbor",
        Update::AddEcmpMember { .. } => "add_ecmp_member",
        Update::DelEcmpMember { .. } => "del_ecmp_member",
        Update::SetEcmpWeight { .. } => "set_ecmp_weight",
        Update::AddMac { .. } => "add_mac",
        Update::DelMac { .. } => "del_mac",
        Update::SetPolicy { .. } => "set_policy",
        Update::SetEcn { .. } => "set_ecn",
        Update::AddSid { .. } => "add_sid",
        Update::DelSid { .. } => "del_sid",
        Update::AddPolicy { .. } => "add_policy",
        Update::DelPolicy { .. } => "del_policy",
        Update::AddGroup { .. } => "add_group",
        Update::DelGroup { .. } => "del_group",
        Update::SetGroupBalance { .. } => "set_group",
        Update::AddVlan { .. } => "add_vlan",
        Update::DelVlan { .. } => "del_vlan",
        Update::SetPortVlans { .. } => "set_port_vlan",
        Update::SetPfc { .. } => "set_pfc",
    }
}

/// The first free slot (an empty name), or the next one.
fn free_slot<'a>(names: impl Iterator<Item = &'a str>) -> u32 {
    let mut count = 0;
    for (i, name) in names.enumerate() {
        if name.is_empty() {
            return i as u32;
        }
        count = i + 1;
    }
    count as u32
}

fn put<T>(list: &mut Vec<T>, slot: u32, value: T) {
    let s = slot as usize;
    if s < list.len() {
        list[s] = value;
    } else {
        list.push(value);
    }
}

/// A name for a new policy or group: letters, digits, `-`, `_`, `.`, not in use.
fn check_new_name(kind: &str, name: &str, taken: bool) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "{kind} name `{name}`: use letters, digits, '-', '_' and '.'"
        ));
    }
    if taken {
        return Err(format!("{kind} `{name}` exists already"));
    }
    Ok(())
}

fn parse_v6(what: &str, text: &str) -> Result<Ipv6Addr, String> {
    match text.trim().parse::<Ipv6Addr>() {
        Ok(a) if !a.is_multicast() && !a.is_unspecified() => Ok(a),
        _ => Err(format!("{what} `{text}` is not a unicast IPv6 address")),
    }
}

impl Names {
    /// Mirrors `update` once it applied (or, while a batch is resolved, once the updates
    /// before it will have): `group_name` names a group it creates.
    pub fn note(&mut self, update: &Update, group_name: Option<&str>) {
        match update {
            Update::AddGroup { slot, members, .. } => {
                put(
                    &mut self.groups,
                    *slot,
                    group_name.unwrap_or("?").to_owned(),
                );
                // Its members share one VRF (`add_group` checks it).
                let vrf = members
                    .first()
                    .map_or(0, |&(interface, _, _)| self.interface_vrf(interface));
                if self.group_vrfs.len() < self.groups.len() {
                    self.group_vrfs.resize(self.groups.len(), 0);
                }
                self.group_vrfs[*slot as usize] = vrf;
            }
            Update::DelGroup { slot } => {
                if let Some(name) = self.groups.get_mut(*slot as usize) {
                    name.clear();
                }
            }
            _ => {}
        }
        match update {
            Update::AddSid { slot, via, .. } => match via {
                Some(via) => {
                    self.sid_vias.insert(*slot, *via);
                }
                None => {
                    self.sid_vias.remove(slot);
                }
            },
            Update::DelSid { slot, .. } => {
                self.sid_vias.remove(slot);
            }
            _ => {}
        }
        let Some(spec) = &mut self.spec else { return };
        match update {
            Update::AddSid { slot, spec: s, .. } => put(&mut spec.srv6.sids, *slot, (**s).clone()),
            Update::DelSid { slot, .. } => {
                if let Some(sid) = spec.srv6.sids.get_mut(*slot as usize) {
                    sid.name.clear();
                }
            }
            Update::AddPolicy { slot, spec: p } => {
                put(&mut spec.srv6.policies, *slot, (**p).clone())
            }
            Update::SetPolicy { policy, spec: p } => {
                put(&mut spec.srv6.policies, *policy, (**p).clone())
            }
            Update::DelPolicy { slot } => {
                if let Some(p) = spec.srv6.policies.get_mut(*slot as usize) {
                    p.name.clear();
                }
            }
            Update::SetPfc {
                port,
                tc,
                thresholds,
            } => {
                if let Some(p) = spec.qos.ports.get_mut(usize::from(*port)) {
                    p.pfc[usize::from(*tc)] = Some(*thresholds);
                }
            }
            Update::AddVlan { id } => {
                spec.vlans.push(VlanSpec {
                    id: *id,
                    interface: None,
                });
                spec.vlans.sort_by_key(|v| v.id);
            }
            Update::DelVlan { id } => spec.vlans.retain(|v| v.id != *id),
            Update::SetPortVlans { port, role } => {
                if let Some(r) = spec.ports.get_mut(usize::from(*port)) {
                    *r = role.clone();
                }
            }
            _ => {}
        }
    }

    /// The VRF of L3 interface `interface`.
    pub(crate) fn interface_vrf(&self, interface: u16) -> u16 {
        self.spec
            .as_ref()
            .and_then(|s| s.interfaces.get(usize::from(interface)))
            .map_or(0, |i| i.vrf)
    }

    /// The VRF group `slot` forwards in: its members' interfaces'.
    pub(crate) fn group_vrf(&self, slot: u32) -> u16 {
        self.group_vrfs.get(slot as usize).copied().unwrap_or(0)
    }

    /// The VRF rule (`config::check_forwarding_vrf`) for a route (`what` = "this route") or an
    /// End.X/uA SID ("this SID") of VRF `vrf` to `target`, a nexthop's interface or a group.
    /// A nexthop given by id (the P4 form) is looked up in `nexthops`, the worker's; one not
    /// there is left to the worker, which refuses it.
    pub(crate) fn check_target_vrf(
        &self,
        what: &str,
        vrf: u16,
        target: RouteTarget,
        nexthops: &[NexthopEntry],
    ) -> Result<(), String> {
        let vrf_name = |v| self.vrf_name(v);
        match target {
            RouteTarget::Group(g) => {
                let name = self.group_name(g);
                check_forwarding_vrf(what, vrf, Egress::Group(&name), self.group_vrf(g), vrf_name)
            }
            RouteTarget::Nexthop(id) => match nexthops.iter().find(|n| n.id == id) {
                Some(n) => check_forwarding_vrf(
                    what,
                    vrf,
                    Egress::Interface(&format!(
                        "nexthop {id} ({} on {})",
                        n.ip,
                        self.dev_name(n.interface)
                    )),
                    self.interface_vrf(n.interface),
                    vrf_name,
                ),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The worker's refusal of an update (`Reply::Rejected`'s error) with what it numbers
    /// named as the operator names them: ports, VRFs and L3 interfaces, and with `slots` ECMP
    /// groups and SRv6 policies too (`port 0 is not in VLAN 20` becomes `port a is not in VLAN
    /// 20`, `no route 10.9.0.0/16 in VRF 0` becomes `... in VRF default`). A number follows
    /// its kind's word (`port 3`, `VRF 0`, `interface 2`, `group 1`, `policy 0`); one that
    /// names nothing (a slot free by now, an id out of range) is left as it is. `slots` is for
    /// the names as they were when the batch was resolved (the server's): a replay's
    /// `--schedule` may have moved groups and policies on since.
    pub fn name_ids(&self, error: &str, slots: bool) -> String {
        let policies = if slots { self.policies() } else { Vec::new() };
        let named = |list: &[String], id: usize| list.get(id).filter(|n| !n.is_empty()).cloned();
        let mut out = String::with_capacity(error.len() + 16);
        let mut previous = "";
        for (i, word) in error.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let digits = word
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(word.len());
            let name = word[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|id| match previous {
                    "port" => named(&self.ports, id),
                    "VRF" => named(&self.vrfs, id),
                    "interface" => named(&self.interfaces, id),
                    "group" if slots => named(&self.groups, id).map(|g| format!("`{g}`")),
                    "policy" if slots => named(&policies, id).map(|p| format!("`{p}`")),
                    _ => None,
                });
            match name {
                Some(name) => {
                    out.push_str(&name);
                    out.push_str(&word[digits..]);
                }
                None => out.push_str(word),
            }
            previous = word;
        }
        out
    }

    /// The slot of local SID `prefix/len` in `vrf`.
    pub(crate) fn sid_slot(&self, vrf: u16, prefix: Ipv6Addr, len: u8) -> Option<u32> {
        let spec = self.spec.as_ref()?;
        let key = mask6(prefix, len);
        spec.srv6
            .sids
            .iter()
            .position(|s| {
                !s.name.is_empty() && s.vrf == vrf && s.len == len && mask6(s.prefix, s.len) == key
            })
            .map(|i| i as u32)
    }

    /// The slot a new SID takes.
    pub(crate) fn next_sid_slot(&self) -> u32 {
        self.spec.as_ref().map_or(0, |s| {
            free_slot(s.srv6.sids.iter().map(|s| s.name.as_str()))
        })
    }
}

fn mask6(addr: Ipv6Addr, len: u8) -> Ipv6Addr {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    };
    Ipv6Addr::from(u128::from(addr) & mask)
}

/// Names the field an error is in (`` `prefix`: host bits set: ... ``).
fn in_field(field: &'static str) -> impl Fn(String) -> String {
    move |message| format!("`{field}`: {message}")
}

/// A prefix as an update gives it (a bare address is a host prefix), with the config's rule
/// for a route's or a SID's prefix: no host bits (`config::network_address`).
pub(crate) fn network_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (prefix, len) = parse_prefix(text)?;
    crate::config::network_address(prefix, len, text)?;
    Ok((prefix, len))
}

/// An `add_route`'s prefix in VRF `vrf`, with the config's rules: no host bits, and not a
/// prefix one of the VRF's interface addresses takes (`route_prefix_free`).
fn new_route_prefix(n: &Names, vrf: u16, text: &str) -> Result<(IpAddr, u8), String> {
    let prefix = network_prefix(text).map_err(in_field("prefix"))?;
    route_prefix_free(n, vrf, prefix).map_err(in_field("prefix"))?;
    Ok(prefix)
}

/// That a new route's `prefix/len` in VRF `vrf` is not one an interface address of the VRF
/// takes (`config::check_route_prefix`): `add_route` and the P4 form's LPM entries.
pub(crate) fn route_prefix_free(n: &Names, vrf: u16, prefix: (IpAddr, u8)) -> Result<(), String> {
    match &n.spec {
        Some(spec) => {
            crate::config::check_route_prefix(prefix, vrf, &spec.interfaces, |id| n.dev_name(id))
        }
        None => Ok(()),
    }
}

/// An IPv6 SID prefix, without host bits as in the config.
fn sid_network(text: &str) -> Result<(Ipv6Addr, u8), String> {
    match network_prefix(text)? {
        (IpAddr::V6(prefix), len) => Ok((prefix, len)),
        (IpAddr::V4(_), _) => Err(format!("`{text}`: a SID is an IPv6 prefix")),
    }
}

/// An IPv6 SID prefix (without host bits) and its VRF.
pub(crate) fn sid_prefix(
    names: &Names,
    vrf: Option<&str>,
    text: &str,
) -> Result<(u16, Ipv6Addr, u8), String> {
    let (prefix, len) = sid_network(text)?;
    Ok((names.vrf(vrf)?, prefix, len))
}

/// The SID of an `add_sid` or `del_sid` and its VRF: `sid_prefix`, errors in field `sid` named.
fn sid_field(
    names: &Names,
    op_vrf: Option<&str>,
    text: &str,
) -> Result<(u16, Ipv6Addr, u8), String> {
    let (prefix, len) = sid_network(text).map_err(in_field("sid"))?;
    Ok((names.vrf(op_vrf)?, prefix, len))
}

/// A new local SID's prefix with the config's rule (`config::check_sid_prefix`): clear of
/// the connected subnets and own addresses of its VRF's interfaces. `add_sid` and the P4
/// form's `table_add my_sid` check it.
pub(crate) fn sid_clear_of_subnets(
    names: &Names,
    vrf: u16,
    prefix: Ipv6Addr,
    len: u8,
) -> Result<(), String> {
    let Some(spec) = &names.spec else {
        return Ok(());
    };
    crate::config::check_sid_prefix(prefix, len, vrf, &spec.interfaces, |id| {
        names
            .interfaces
            .get(usize::from(id))
            .map_or_else(|| format!("interface {id}"), String::clone)
    })
}

/// A local SID from `add_sid`'s keys, with the config's rules and defaults, and the neighbour
/// an End.X / uA goes to (resolved to a nexthop by the worker).
fn sid_spec(names: &Names, op: &SidOp) -> Result<(SidSpec, Option<(u16, IpAddr)>), String> {
    let (vrf, prefix, len) = sid_field(names, op.vrf.as_deref(), &op.sid)?;
    if names.sid_slot(vrf, prefix, len).is_some() {
        return Err(format!("{prefix}/{len} is already a local SID in this VRF"));
    }
    sid_clear_of_subnets(names, vrf, prefix, len)?;
    let behavior_text = op.behavior.trim();
    let (kind, csid) = sid_behavior_kind(behavior_text)?;
    let adjacency = kind == "end.x";
    let decap = kind.starts_with("end.dt");
    let stray = [
        (op.block_bits.is_some(), "block_bits", csid),
        (op.shift_bits.is_some(), "shift_bits", csid),
        (op.via.is_some(), "via", adjacency),
        (op.dev.is_some(), "dev", adjacency),
        (op.group.is_some(), "group", adjacency),
        (op.lookup_vrf.is_some(), "lookup_vrf", decap),
        (!op.flavors.is_empty(), "flavors", !decap),
    ];
    for (given, key, allowed) in stray {
        if given && !allowed {
            return Err(format!(
                "`{key}` does not apply to behaviour {behavior_text}"
            ));
        }
    }
    let next_csid = if csid {
        let block = op.block_bits.map_or(srv6_defaults::BLOCK_BITS, i64::from);
        let shift = op.shift_bits.map_or(srv6_defaults::SHIFT_BITS, i64::from);
        if shift == 0 || block + shift >= 128 {
            return Err(format!(
                "block_bits {block} + shift_bits {shift} must be below 128 (an argument must remain) and the shift above 0"
            ));
        }
        if i64::from(len) > block + shift {
            return Err(format!(
                "/{len} is longer than block + shift ({}): the SID would match part of its own argument",
                block + shift
            ));
        }
        Some(CsidFormat {
            block_bits: block as u8,
            shift_bits: shift as u8,
        })
    } else {
        None
    };
    let (mut psp, mut usp) = (false, false);
    for flavor in &op.flavors {
        let (seen, name) = match flavor.to_ascii_lowercase().as_str() {
            "psp" => (&mut psp, "psp"),
            "usp" => (&mut usp, "usp"),
            other => {
                return Err(format!(
                    "`{other}` is not a flavour; use \"psp\" and/or \"usp\""
                ));
            }
        };
        if *seen {
            return Err(format!("flavour `{name}` is listed twice"));
        }
        *seen = true;
    }
    let mut via = None;
    let behavior = match kind {
        "end" => SidBehavior::End,
        "end.x" => {
            let target = match (&op.group, &op.via, &op.dev) {
                (Some(group), None, None) => {
                    let target = RouteTarget::Group(names.group(group)?);
                    names.check_target_vrf("this SID", vrf, target, &[])?;
                    target
                }
                (None, Some(ip), Some(dev)) => {
                    let interface = names.dev(dev)?;
                    check_forwarding_vrf(
                        "this SID",
                        vrf,
                        Egress::Interface(dev),
                        names.interface_vrf(interface),
                        |v| names.vrf_name(v),
                    )?;
                    via = Some((interface, on_link(names, interface, ip)?));
                    // Resolved by the worker (`via`).
                    RouteTarget::Nexthop(u32::MAX)
                }
                (None, Some(_), None) => {
                    return Err("`via` needs `dev` (the neighbour's L3 interface)".to_owned());
                }
                (Some(_), _, _) => {
                    return Err("give `group` or `via` with `dev`, not both".to_owned());
                }
                _ => {
                    return Err(format!(
                        "{behavior_text} forwards to an adjacency: give `group`, or `via` with `dev`"
                    ));
                }
            };
            SidBehavior::EndX { target }
        }
        _ => {
            let table = match &op.lookup_vrf {
                Some(v) => names.vrf(Some(v))?,
                None => vrf,
            };
            match kind {
                "end.dt4" => SidBehavior::EndDt4 { vrf: table },
                "end.dt6" => SidBehavior::EndDt6 { vrf: table },
                _ => SidBehavior::EndDt46 { vrf: table },
            }
        }
    };
    Ok((
        SidSpec {
            name: format!("{prefix}/{len}"),
            vrf,
            prefix,
            len,
            behavior,
            next_csid,
            psp,
            usp,
        },
        via,
    ))
}

fn encap_mode(text: &str) -> Result<EncapMode, String> {
    match text.to_ascii_lowercase().as_str() {
        "encaps" | "h.encaps" | "encap" => Ok(EncapMode::Encaps),
        "encaps.red" | "h.encaps.red" | "encap.red" => Ok(EncapMode::EncapsRed),
        other => Err(format!(
            "mode `{other}` is neither \"encaps\" nor \"encaps.red\""
        )),
    }
}

fn segments(list: &[String], mode: EncapMode) -> Result<Vec<Ipv6Addr>, String> {
    let segments: Vec<Ipv6Addr> = list
        .iter()
        .map(|s| parse_v6("segment", s))
        .collect::<Result<_, _>>()?;
    crate::config::check_segment_count(segments.len(), mode)
        .map_err(|e| format!("`segments`: {e}"))?;
    Ok(segments)
}

/// A group's balancing from `add_group`'s or `set_group`'s keys, with the config's rules.
fn balance(request: &BalanceRequest) -> Result<BalanceSpec, String> {
    let signed = |key: BalanceKey, v: Option<u64>| match v {
        Some(v) => i64::try_from(v)
            .map(Some)
            .map_err(|_| format!("`{}` {v} is out of range", key.name())),
        None => Ok(None),
    };
    crate::ecmp_config::balance_spec(
        request.mode.as_deref(),
        request.choice.as_deref(),
        signed(BalanceKey::FlowletTimeoutUs, request.flowlet_timeout_us)?,
        signed(BalanceKey::FlowletTableSize, request.flowlet_table_size)?,
        request.avoid_ecn,
    )
    .map_err(|(key, message)| format!("`{}`: {message}", key.name()))
}

/// A neighbour's address on L3 interface `interface`, with the config's rule
/// (`config::on_link`): inside one of the interface's connected subnets, not the switch's
/// own address there, nor an IPv4 subnet's network or broadcast address.
fn on_link(n: &Names, interface: u16, text: &str) -> Result<IpAddr, String> {
    let ip = parse_ip(text)?;
    let Some(iface) = n
        .spec
        .as_ref()
        .and_then(|spec| spec.interfaces.get(usize::from(interface)))
    else {
        return Ok(ip);
    };
    let subnets: Vec<(IpAddr, u8)> = iface.subnets().collect();
    let name = n
        .interfaces
        .get(usize::from(interface))
        .map_or("the interface", String::as_str);
    crate::config::on_link(ip, &subnets, name)?;
    Ok(ip)
}

/// A static MAC entry (`add_mac`, the P4 form's `mac_table` entry) with the config's rules for
/// a `[[mac]]`: a VLAN that exists, a port in it (`port`, named `label` as the operator wrote
/// it, so refusals name it so), a unicast MAC that is not the router MAC.
pub(crate) fn static_mac(
    n: &Names,
    vlan: u16,
    mac: &str,
    port: u16,
    label: &str,
) -> Result<Update, String> {
    let mac = parse_mac(mac)?;
    let Some(spec) = n.spec.as_ref() else {
        return Err("io mode has no tables (mode = \"switch\" has)".to_owned());
    };
    if !spec.vlans.iter().any(|v| v.id == vlan) {
        return Err(format!("VLAN {vlan} does not exist"));
    }
    match spec.ports.get(usize::from(port)) {
        Some(role) => check_port_in_vlan(label, role, vlan)?,
        None => return Err(format!("no port {port} (there are {})", spec.ports.len())),
    }
    Ok(Update::AddMac {
        vlan,
        mac: check_unicast_mac(mac, spec.router_mac)?,
        port,
    })
}

/// Turns one named update into a dataplane update; for a group it creates, also its name.
pub fn resolve(n: &Names, op: &UpdateOp) -> Result<(Update, Option<String>), String> {
    let Some(spec) = n.spec.as_ref() else {
        return Err("io mode has no tables (mode = \"switch\" has)".to_owned());
    };
    let mut group_name = None;
    let update = match op {
        UpdateOp::AddRoute {
            vrf,
            prefix: text,
            to,
        } => {
            let vrf = n.vrf(vrf.as_deref())?;
            let (prefix, len) = new_route_prefix(n, vrf, text)?;
            let target = match to {
                RouteTo::Via { ip, dev } => {
                    let interface = n.dev(dev)?;
                    check_forwarding_vrf(
                        "this route",
                        vrf,
                        Egress::Interface(dev),
                        n.interface_vrf(interface),
                        |v| n.vrf_name(v),
                    )?;
                    Target::Via {
                        interface,
                        ip: on_link(n, interface, ip)?,
                    }
                }
                RouteTo::Group(g) => {
                    let group = n.group(g)?;
                    n.check_target_vrf("this route", vrf, RouteTarget::Group(group), &[])?;
                    Target::Group(group)
                }
                RouteTo::Policy(p) => Target::Srv6Policy(n.policy(p)?),
                RouteTo::Blackhole => Target::Blackhole,
            };
            Update::AddRoute {
                vrf,
                prefix,
                len,
                target,
            }
        }
        UpdateOp::DelRoute { vrf, prefix: text } => {
            let (prefix, len) = network_prefix(text).map_err(in_field("prefix"))?;
            Update::DelRoute {
                vrf: n.vrf(vrf.as_deref())?,
                prefix,
                len,
            }
        }
        UpdateOp::AddNeighbor { ip, dev, mac } => {
            let interface = n.dev(dev)?;
            Update::AddNeighbor {
                interface,
                ip: on_link(n, interface, ip)?,
                // As a [[neighbor]]'s: unicast and not the router MAC.
                mac: check_unicast_mac(parse_mac(mac)?, spec.router_mac)?,
            }
        }
        UpdateOp::DelNeighbor { ip, dev } => Update::DelNeighbor {
            interface: n.dev(dev)?,
            ip: parse_ip(ip)?,
        },
        UpdateOp::AddEcmpMember {
            group,
            ip,
            dev,
            weight,
        } => {
            let interface = n.dev(dev)?;
            let slot = n.group(group)?;
            // A group's members share one VRF: the group's, so its routes stay in theirs.
            check_member_vrf(
                dev,
                n.interface_vrf(interface),
                &format!("group `{group}`"),
                n.group_vrf(slot),
                |v| n.vrf_name(v),
            )?;
            Update::AddEcmpMember {
                group: slot,
                interface,
                ip: on_link(n, interface, ip)?,
                weight: *weight,
            }
        }
        UpdateOp::DelEcmpMember { group, ip, dev } => Update::DelEcmpMember {
            group: n.group(group)?,
            interface: n.dev(dev)?,
            ip: parse_ip(ip)?,
        },
        UpdateOp::AddMac { vlan, mac, port } => static_mac(n, *vlan, mac, n.port(port)?, port)?,
        UpdateOp::DelMac { vlan, mac } => Update::DelMac {
            vlan: *vlan,
            mac: parse_mac(mac)?,
        },
        UpdateOp::SetPolicy {
            policy,
            segments: list,
            mode,
            source,
            hop_limit,
        } => {
            let index = n.policy(policy)?;
            let mut p = spec.srv6.policies[index as usize].clone();
            if let Some(mode) = mode {
                p.mode = encap_mode(mode)?;
            }
            p.segments = segments(list, p.mode)?;
            if let Some(source) = source {
                p.source = parse_v6("source", source)?;
            }
            if let Some(h) = hop_limit {
                p.hop_limit = *h;
            }
            Update::SetPolicy {
                policy: index,
                spec: Box::new(p),
            }
        }
        UpdateOp::SetEcn { port, tc, ecn } => Update::SetEcn {
            port: n.port(port)?,
            tc: *tc,
            ecn: ecn.map(|(kmin, kmax, pmax)| EcnProfile { kmin, kmax, pmax }),
        },
        UpdateOp::AddSid(op) => {
            let (sid, via) = sid_spec(n, op)?;
            Update::AddSid {
                slot: n.next_sid_slot(),
                spec: Box::new(sid),
                via,
            }
        }
        UpdateOp::DelSid { sid, vrf } => {
            let (vrf, prefix, len) = sid_field(n, vrf.as_deref(), sid)?;
            let slot = n
                .sid_slot(vrf, prefix, len)
                .ok_or_else(|| format!("no local SID {prefix}/{len} in VRF {}", n.vrf_name(vrf)))?;
            Update::DelSid {
                slot,
                vrf,
                prefix,
                len,
            }
        }
        UpdateOp::AddPolicy {
            policy,
            segments: list,
            mode,
            source,
            hop_limit,
        } => {
            check_new_name("SRv6 policy", policy, n.policy(policy).is_ok())?;
            let mode = encap_mode(mode.as_deref().unwrap_or("encaps"))?;
            let source = match source {
                Some(s) => parse_v6("source", s)?,
                // As in the config: a global IPv6 address of the default VRF.
                None => spec
                    .interfaces
                    .iter()
                    .filter(|i| i.vrf == 0)
                    .flat_map(|i| i.ipv6.iter())
                    .map(|(a, _)| *a)
                    .find(|a| a.segments()[0] & 0xffc0 != 0xfe80)
                    .ok_or("`source` is needed: no interface of the default VRF has a global IPv6 address to use")?,
            };
            Update::AddPolicy {
                slot: free_slot(spec.srv6.policies.iter().map(|p| p.name.as_str())),
                spec: Box::new(PolicySpec {
                    name: policy.clone(),
                    mode,
                    segments: segments(list, mode)?,
                    source,
                    hop_limit: hop_limit.unwrap_or(srv6_defaults::HOP_LIMIT as u8),
                    outer_vrf: 0,
                }),
            }
        }
        UpdateOp::DelPolicy { policy } => Update::DelPolicy {
            slot: n.policy(policy)?,
        },
        UpdateOp::AddGroup {
            group,
            members,
            balance: request,
        } => {
            check_new_name("ECMP group", group, n.group(group).is_ok())?;
            let members = members
                .iter()
                .map(|(ip, dev, weight)| {
                    let interface = n.dev(dev)?;
                    Ok((interface, on_link(n, interface, ip)?, *weight))
                })
                .collect::<Result<Vec<_>, String>>()?;
            // The members share one VRF, as a [[nexthop_group]]'s.
            if let Some(&(first, _, _)) = members.first() {
                for (j, &(interface, _, _)) in members.iter().enumerate().skip(1) {
                    check_member_vrf(
                        &n.dev_name(interface),
                        n.interface_vrf(interface),
                        "members[0]",
                        n.interface_vrf(first),
                        |v| n.vrf_name(v),
                    )
                    .map_err(|m| format!("`members[{j}]`: {m}"))?;
                }
            }
            group_name = Some(group.clone());
            Update::AddGroup {
                slot: free_slot(n.groups.iter().map(String::as_str)),
                balance: balance(request)?,
                members,
            }
        }
        UpdateOp::DelGroup { group } => Update::DelGroup {
            slot: n.group(group)?,
        },
        UpdateOp::SetGroup {
            group,
            balance: request,
        } => Update::SetGroupBalance {
            group: n.group(group)?,
            // The group's current mode does not count: the balancing is replaced, and the
            // refusal says so rather than only blame a hashing the client did not ask for.
            balance: balance(request).map_err(|m| match request.mode {
                None => {
                    format!("{m}; a set_group without `mode` sets hash balancing, so give `mode`")
                }
                Some(_) => m,
            })?,
        },
        UpdateOp::AddVlan { vlan } => {
            if !(1..=4094).contains(vlan) {
                return Err(format!("VLAN {vlan} is not 1..=4094"));
            }
            if spec.vlans.iter().any(|v| v.id == *vlan) {
                return Err(format!("VLAN {vlan} exists already"));
            }
            Update::AddVlan { id: *vlan }
        }
        UpdateOp::DelVlan { vlan } => {
            let Some(declared) = spec.vlans.iter().find(|v| v.id == *vlan) else {
                return Err(format!("VLAN {vlan} does not exist"));
            };
            if let Some(i) = declared.interface {
                return Err(format!(
                    "VLAN {vlan} has an L3 interface ({}): it goes only with a restart",
                    n.dev_name(i)
                ));
            }
            for (i, role) in spec.ports.iter().enumerate() {
                let member = match role {
                    PortRole::Access { vlan: v } => v == vlan,
                    PortRole::Trunk { allowed, native } => {
                        allowed.contains(vlan) || native == &Some(*vlan)
                    }
                    PortRole::Routed { .. } => false,
                };
                if member {
                    return Err(format!(
                        "port {} is in VLAN {vlan}: move it to another VLAN first",
                        n.ports[i]
                    ));
                }
            }
            Update::DelVlan { id: *vlan }
        }
        UpdateOp::SetPortVlan {
            port,
            access,
            allowed,
            native,
        } => {
            let index = n.port(port)?;
            if let Some(PortRole::Routed { .. }) = spec.ports.get(usize::from(index)) {
                return Err(format!(
                    "port {port} is routed: it becomes an L2 port only with a restart"
                ));
            }
            for v in access.iter().chain(allowed).chain(native) {
                if !spec.vlans.iter().any(|d| d.id == *v) {
                    return Err(format!("VLAN {v} does not exist (add it first)"));
                }
            }
            let role = match access {
                Some(vlan) => PortRole::Access { vlan: *vlan },
                None => PortRole::Trunk {
                    allowed: allowed.clone(),
                    native: *native,
                },
            };
            // A VLAN interface's MTU is the smallest of its ports': one below 1280 would
            // take an interface with IPv6 below IPv6's minimum, as the config refuses.
            let mtu = n.port_mtus.get(usize::from(index)).copied().flatten();
            check_ipv6_mtu(mtu, &role, &spec.vlans, &spec.interfaces)
                .map_err(|m| format!("port {port}: mtu {m}"))?;
            Update::SetPortVlans { port: index, role }
        }
        UpdateOp::SetPfc {
            port,
            tc,
            xoff,
            xon,
            headroom,
        } => {
            let index = n.port(port)?;
            let current = spec
                .qos
                .ports
                .get(usize::from(index))
                .and_then(|p| p.pfc[usize::from(*tc)])
                .ok_or_else(|| {
                    format!(
                        "TC {tc} is not lossless on port {port}: PFC thresholds apply to the lossless TCs of the port's QoS profile"
                    )
                })?;
            let thresholds = PfcThresholds {
                xoff: xoff.unwrap_or(current.xoff),
                xon: xon.unwrap_or(current.xon),
                headroom: headroom.unwrap_or(current.headroom),
            };
            // The config's rules (`pfc::check_xoff` and the others), for what is given and
            // what is kept alike.
            thresholds
                .check()
                .map_err(|(key, message)| format!("{key} {message}"))?;
            Update::SetPfc {
                port: index,
                tc: *tc,
                thresholds,
            }
        }
    };
    Ok((update, group_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Command, parse_request};
    use crate::config::Config;
    use dataplane::clock::PICOS_PER_MICRO;
    use dataplane::tables::flowlet::{BalanceMode, PathChoice};
    use std::path::Path;

    fn names() -> Names {
        let config =
            Config::parse(Path::new("r.toml"), names_config()).unwrap_or_else(|e| panic!("{e}"));
        Names::of(&config)
    }

    /// The test switch: p0 (10.255.0.1/31, 2001:db8:ff::1/127), p1 (10.255.0.3/31), p2
    /// (10.0.4.1/24, 10.0.6.1/30), group `up`, SID fcbb:bb00:1::/48.
    fn names_config() -> &'static str {
        r#"[switch]
name = "r"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
[qos.rdma]
lossless = [3]
[[port]]
name = "p0"
devargs = "net_null0"
ipv4 = ["10.255.0.1/31"]
ipv6 = ["2001:db8:ff::1/127"]
speed_gbps = 100
qos = "rdma"
[[port]]
name = "p1"
devargs = "net_null1"
ipv4 = ["10.255.0.3/31"]
[[port]]
name = "p2"
devargs = "net_null2"
ipv4 = ["10.0.4.1/24", "10.0.6.1/30"]
[[nexthop_group]]
name = "up"
members = [{ port = "p0", via = "10.255.0.0" }]
[[srv6.sid]]
prefix = "fcbb:bb00:1::/48"
behavior = "uN"
"#
    }

    fn ops(line: &str) -> Vec<UpdateOp> {
        let request = format!(r#"{{"v":1,"id":1,"cmd":"update","updates":{line}}}"#);
        match parse_request(request.as_bytes()) {
            Ok((_, Command::Update(ops))) => ops,
            other => panic!("{other:?}"),
        }
    }

    fn op(line: &str) -> UpdateOp {
        ops(&format!("[{line}]")).remove(0)
    }

    /// Resolves a batch as the server does: later updates see the names earlier ones made.
    fn batch(n: &Names, line: &str) -> Result<Vec<Update>, String> {
        let mut scratch = n.clone();
        let mut out = Vec::new();
        for op in ops(line) {
            let (update, group) = resolve(&scratch, &op)?;
            scratch.note(&update, group.as_deref());
            out.push(update);
        }
        Ok(out)
    }

    fn err(n: &Names, line: &str) -> String {
        resolve(n, &op(line)).unwrap_err()
    }

    #[test]
    fn routes_and_neighbours_follow_the_configs_rules() {
        let n = names();
        for (line, expected) in [
            (
                r#"{"op":"add_route","prefix":"10.7.0.1/16","blackhole":true}"#,
                "host bits set: `10.7.0.1/16` is not a network address; write 10.7.0.0/16",
            ),
            (
                r#"{"op":"del_route","prefix":"10.7.0.1/16"}"#,
                "host bits set: `10.7.0.1/16`",
            ),
            (
                r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.9.9.9","dev":"p0"}"#,
                "10.9.9.9 is not in a connected subnet of p0 (10.255.0.1/31, 2001:db8:ff::1/127)",
            ),
            (
                r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.1","dev":"p0"}"#,
                "10.255.0.1 is this switch's own address on p0",
            ),
            (
                r#"{"op":"add_neighbor","ip":"10.255.0.0","dev":"p1","mac":"02:00:00:00:00:09"}"#,
                "10.255.0.0 is not in a connected subnet of p1 (10.255.0.3/31)",
            ),
            (
                r#"{"op":"add_ecmp_member","group":"up","via":"2001:db8:fe::","dev":"p0"}"#,
                "2001:db8:fe:: is not in a connected subnet of p0",
            ),
            (
                r#"{"op":"add_group","group":"g","members":[{"via":"10.255.0.2","dev":"p0"}]}"#,
                "10.255.0.2 is not in a connected subnet of p0",
            ),
        ] {
            let error = err(&n, line);
            assert!(error.contains(expected), "{line}: {error}");
        }
        // What the rules allow: the peer on each link, a host route by its bare address.
        for line in [
            r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.0","dev":"p0"}"#,
            r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"2001:db8:ff::","dev":"p0"}"#,
            r#"{"op":"add_route","prefix":"10.7.0.9","via":"10.255.0.2","dev":"p1"}"#,
        ] {
            assert!(resolve(&n, &op(line)).is_ok(), "{line}");
        }
    }

    #[test]
    fn a_neighbour_or_via_carrying_an_ipv4_address_is_refused_as_the_config_refuses_it() {
        // The config's rule (`config::on_link`): IPv4-mapped and IPv4-compatible addresses are
        // no interface's (RFC 4291 2.5.5), so no neighbour's either.
        let n = names();
        for line in [
            r#"{"op":"add_neighbor","ip":"::ffff:10.255.0.0","dev":"p0","mac":"02:00:00:00:00:09"}"#,
            r#"{"op":"add_route","prefix":"2001:db8:7::/48","via":"::ffff:10.255.0.0","dev":"p0"}"#,
            r#"{"op":"add_ecmp_member","group":"up","via":"::ffff:10.255.0.0","dev":"p0"}"#,
            r#"{"op":"add_group","group":"g","members":[{"via":"::ffff:10.255.0.0","dev":"p0"}]}"#,
        ] {
            let error = err(&n, line);
            assert!(
                error.contains(
                    "::ffff:10.255.0.0 is an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node 10.255.0.0"
                ),
                "{line}: {error}"
            );
        }
        let error = err(
            &n,
            r#"{"op":"add_neighbor","ip":"::10.255.0.0","dev":"p0","mac":"02:00:00:00:00:09"}"#,
        );
        assert!(
            error.contains("::aff:0 is an IPv4-compatible address (::/96)"),
            "{error}"
        );
    }

    #[test]
    fn a_via_is_a_host_of_its_subnet_and_a_neighbour_not_the_router_mac() {
        let n = names();
        for (line, expected) in [
            (
                r#"{"op":"add_ecmp_member","group":"up","via":"10.0.4.255","dev":"p2"}"#,
                "10.0.4.255 is the subnet's broadcast address (host part all ones) on p2 (10.0.4.1/24)",
            ),
            (
                r#"{"op":"add_neighbor","ip":"10.0.4.255","dev":"p2","mac":"02:00:00:00:00:09"}"#,
                "10.0.4.255 is the subnet's broadcast address",
            ),
            (
                r#"{"op":"add_neighbor","ip":"10.0.4.0","dev":"p2","mac":"02:00:00:00:00:09"}"#,
                "10.0.4.0 is the subnet's network address (host part all zero) on p2",
            ),
            (
                r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.0.6.3","dev":"p2"}"#,
                "10.0.6.3 is the subnet's broadcast address",
            ),
            (
                r#"{"op":"add_group","group":"g","members":[{"via":"10.0.6.0","dev":"p2"}]}"#,
                "10.0.6.0 is the subnet's network address",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"uA","via":"10.0.4.0","dev":"p2"}"#,
                "10.0.4.0 is the subnet's network address",
            ),
            // The config's rule for a static neighbour's MAC.
            (
                r#"{"op":"add_neighbor","ip":"10.0.4.2","dev":"p2","mac":"02:00:00:00:01:00"}"#,
                "02:00:00:00:01:00 is the switch's own router_mac",
            ),
            (
                r#"{"op":"add_neighbor","ip":"10.0.4.2","dev":"p2","mac":"01:00:5e:00:00:01"}"#,
                "01:00:5e:00:00:01 is a multicast address",
            ),
        ] {
            let error = err(&n, line);
            assert!(error.contains(expected), "{line}: {error}");
        }
        // Hosts of a /24 and a /30; both addresses of a /31 (RFC 3021).
        for line in [
            r#"{"op":"add_ecmp_member","group":"up","via":"10.0.4.254","dev":"p2"}"#,
            r#"{"op":"add_ecmp_member","group":"up","via":"10.0.4.2","dev":"p2","weight":65535}"#,
            r#"{"op":"add_neighbor","ip":"10.0.6.2","dev":"p2","mac":"02:00:00:00:00:09"}"#,
            r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.0","dev":"p0"}"#,
            r#"{"op":"add_route","prefix":"10.7.0.0/16","via":"10.255.0.2","dev":"p1"}"#,
        ] {
            assert!(resolve(&n, &op(line)).is_ok(), "{line}");
        }
    }

    #[test]
    fn a_policy_or_group_created_in_a_batch_is_named_by_later_updates() {
        let n = names();
        let updates = batch(
            &n,
            r#"[{"op":"add_policy","policy":"pn","segments":["fcbb:bb00:2::"]},
                {"op":"add_route","prefix":"10.8.0.0/16","policy":"pn"},
                {"op":"add_group","group":"g2","members":[{"via":"10.255.0.2","dev":"p1","weight":2}]},
                {"op":"add_route","prefix":"10.9.0.0/16","group":"g2"}]"#,
        )
        .unwrap();
        let Update::AddPolicy { slot: 0, spec } = &updates[0] else {
            panic!("{:?}", updates[0]);
        };
        // Defaults as in the config: H.Encaps, hop limit 64, the default VRF's global address.
        assert_eq!(
            (spec.mode, spec.hop_limit, spec.source),
            (
                EncapMode::Encaps,
                64,
                "2001:db8:ff::1".parse::<Ipv6Addr>().unwrap()
            )
        );
        assert!(matches!(
            updates[1],
            Update::AddRoute {
                target: Target::Srv6Policy(0),
                ..
            }
        ));
        let Update::AddGroup {
            slot: 1,
            members,
            balance,
        } = &updates[2]
        else {
            panic!("{:?}", updates[2]);
        };
        assert_eq!(members, &vec![(1, "10.255.0.2".parse().unwrap(), 2)]);
        assert_eq!(*balance, BalanceSpec::default());
        assert!(matches!(
            updates[3],
            Update::AddRoute {
                target: Target::Group(1),
                ..
            }
        ));
        // The names themselves are untouched until the worker applied the batch.
        assert!(n.policy("pn").is_err() && n.group("g2").is_err());
    }

    #[test]
    fn deleted_slots_are_taken_again_first() {
        let mut n = names();
        let (del, _) = resolve(&n, &op(r#"{"op":"del_group","group":"up"}"#)).unwrap();
        assert_eq!(del, Update::DelGroup { slot: 0 });
        n.note(&del, None);
        assert!(n.group("up").is_err());
        let (add, name) = resolve(
            &n,
            &op(r#"{"op":"add_group","group":"g","members":[{"via":"10.255.0.0","dev":"p0"}]}"#),
        )
        .unwrap();
        assert!(matches!(add, Update::AddGroup { slot: 0, .. }));
        n.note(&add, name.as_deref());
        assert_eq!(n.group("g"), Ok(0));
        // SIDs: the configured one is slot 0; deleted, its slot takes the next one.
        let (del, _) = resolve(&n, &op(r#"{"op":"del_sid","sid":"fcbb:bb00:1::/48"}"#)).unwrap();
        assert!(matches!(
            del,
            Update::DelSid {
                slot: 0,
                len: 48,
                ..
            }
        ));
        n.note(&del, None);
        let (add, _) = resolve(
            &n,
            &op(r#"{"op":"add_sid","sid":"fcbb:bb00:9::/48","behavior":"End"}"#),
        )
        .unwrap();
        assert!(matches!(add, Update::AddSid { slot: 0, .. }));
    }

    #[test]
    fn sids_follow_the_config_rules() {
        let n = names();
        let (update, _) = resolve(
            &n,
            &op(r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"uA","via":"10.255.0.2","dev":"p1","flavors":["psp"]}"#),
        )
        .unwrap();
        let Update::AddSid { slot: 1, spec, via } = update else {
            panic!("{update:?}");
        };
        assert_eq!(via, Some((1, "10.255.0.2".parse().unwrap())));
        assert_eq!(
            spec.next_csid,
            Some(CsidFormat {
                block_bits: 32,
                shift_bits: 16
            })
        );
        assert!(spec.psp && !spec.usp);
        let (update, _) = resolve(
            &n,
            &op(r#"{"op":"add_sid","sid":"2001:db8:5::10","behavior":"End.DT46"}"#),
        )
        .unwrap();
        let Update::AddSid { spec, .. } = update else {
            panic!()
        };
        assert_eq!(
            (spec.len, spec.behavior),
            (128, SidBehavior::EndDt46 { vrf: 0 })
        );
        for (line, message) in [
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:1::/48","behavior":"End"}"#,
                "already a local SID",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/64","behavior":"uN"}"#,
                "/64 is longer than block + shift (48)",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"uN","flavors":["psp","PSP"]}"#,
                "flavour `psp` is listed twice",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"End.DT4","flavors":["psp"]}"#,
                "`flavors` does not apply",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"End","group":"up"}"#,
                "`group` does not apply",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"End.X","group":"nosuch"}"#,
                "no ECMP group `nosuch`",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::/48","behavior":"End","flavors":["xsp"]}"#,
                "`xsp` is not a flavour",
            ),
            (
                r#"{"op":"del_sid","sid":"fcbb:bb00:2::/48"}"#,
                "no local SID fcbb:bb00:2::/48 in VRF default",
            ),
        ] {
            let e = err(&n, line);
            assert!(e.contains(message), "{line}: {e}");
        }
    }

    #[test]
    fn policies_and_groups_are_checked_before_the_worker_sees_them() {
        let n = names();
        for (line, message) in [
            (
                r#"{"op":"add_policy","policy":"bad name","segments":["fc00::1"]}"#,
                "use letters, digits",
            ),
            (
                r#"{"op":"add_policy","policy":"p","segments":["fc00::1"],"mode":"tunnel"}"#,
                "mode `tunnel`",
            ),
            (r#"{"op":"del_policy","policy":"p"}"#, "no SRv6 policy `p`"),
            (
                r#"{"op":"add_group","group":"up","members":[{"via":"10.255.0.0","dev":"p0"}]}"#,
                "ECMP group `up` exists already",
            ),
            (
                r#"{"op":"add_group","group":"g","members":[{"via":"10.255.0.0","dev":"p0"}],"choice":"random"}"#,
                "with hashing the flow hash chooses",
            ),
            (
                r#"{"op":"add_group","group":"g","members":[{"via":"10.255.0.0","dev":"p0"}],"mode":"flowlet","flowlet_table_size":1000}"#,
                "`flowlet_table_size`: 1000: must be a power of two",
            ),
        ] {
            let e = err(&n, line);
            assert!(e.contains(message), "{line}: {e}");
        }
        // As many SIDs as an SRH lists (127, one more with H.Encaps.Red), not one more.
        let sids = |count: usize| {
            (1..=count)
                .map(|i| format!("\"fc00::{i:x}\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        for (mode, fits) in [("encaps", 127), ("encaps.red", 128)] {
            let line = |count| {
                format!(
                    r#"{{"op":"add_policy","policy":"p","mode":"{mode}","segments":[{}]}}"#,
                    sids(count)
                )
            };
            assert!(resolve(&n, &op(&line(fits))).is_ok(), "{mode} {fits}");
            let e = err(&n, &line(fits + 1));
            assert!(
                e.contains(&format!(
                    "`segments`: {} segments: give 1 to {fits}",
                    fits + 1
                )),
                "{mode}: {e}"
            );
        }
        let (update, _) = resolve(
            &n,
            &op(r#"{"op":"add_group","group":"g","members":[{"via":"10.255.0.0","dev":"p0"}],"mode":"flowlet","choice":"least-loaded","flowlet_timeout_us":50,"avoid_ecn":true}"#),
        )
        .unwrap();
        let Update::AddGroup { balance, .. } = update else {
            panic!()
        };
        let least_loaded_50us = BalanceSpec {
            mode: BalanceMode::Flowlet,
            choice: PathChoice::LeastLoaded,
            timeout: 50 * PICOS_PER_MICRO,
            avoid_ecn: true,
            ..BalanceSpec::default()
        };
        assert_eq!(balance, least_loaded_50us);
        // `set_group` takes the same keys, for a group that exists; missing keys are defaults.
        let (update, name) = resolve(
            &n,
            &op(r#"{"op":"set_group","group":"up","mode":"flowlet","choice":"least-loaded","flowlet_timeout_us":50,"avoid_ecn":true}"#),
        )
        .unwrap();
        assert_eq!(name, None, "no group is created");
        assert_eq!(
            update,
            Update::SetGroupBalance {
                group: 0,
                balance: least_loaded_50us
            }
        );
        let (update, _) = resolve(&n, &op(r#"{"op":"set_group","group":"up"}"#)).unwrap();
        assert_eq!(
            update,
            Update::SetGroupBalance {
                group: 0,
                balance: BalanceSpec::default()
            }
        );
        for (line, message) in [
            (r#"{"op":"set_group","group":"nope"}"#, "nope"),
            (
                r#"{"op":"set_group","group":"up","mode":"flowlet","avoid_ecn":true}"#,
                "`avoid_ecn`: applies to choice \"least-loaded\"",
            ),
            (
                r#"{"op":"set_group","group":"up","flowlet_timeout_us":50}"#,
                "`flowlet_timeout_us`: applies to mode \"flowlet\" only (this group is \"hash\")",
            ),
            (
                r#"{"op":"set_group","group":"up","mode":"flowlet","flowlet_timeout_us":0}"#,
                "`flowlet_timeout_us`: 0 is out of range 1..=1000000",
            ),
            (
                r#"{"op":"set_group","group":"up","mode":"flowlet","flowlet_timeout_us":18446744073709551615}"#,
                "out of range",
            ),
        ] {
            let e = err(&n, line);
            assert!(e.contains(message), "{line}: {e}");
        }
        let request = br#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"set_group","group":"up","members":[]}]}"#;
        assert!(
            parse_request(request)
                .unwrap_err()
                .1
                .contains("unknown field `members`")
        );
        // The API refuses a group without members and unknown member fields.
        let request = br#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"add_group","group":"g","members":[]}]}"#;
        assert!(
            parse_request(request)
                .unwrap_err()
                .1
                .contains("`members` is empty")
        );
        let request =
            br#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"add_group","group":"g"}]}"#;
        assert!(
            parse_request(request)
                .unwrap_err()
                .1
                .contains("`members` is missing")
        );
        let request = br#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"add_group","group":"g","members":[{"via":"1.2.3.4","dev":"p0","port":1}]}]}"#;
        assert!(
            parse_request(request)
                .unwrap_err()
                .1
                .contains("unknown field `port`")
        );
    }

    #[test]
    fn a_sid_stays_clear_of_connected_subnets_as_in_the_config() {
        // p0 has 2001:db8:ff::1/127: the my-SID table is looked up before the FIB.
        let n = names();
        for (sid, message) in [
            (
                "2001:db8:ff::/64",
                "2001:db8:ff::/64 covers the connected subnet 2001:db8:ff::/127 of p0 (2001:db8:ff::1/127): the my-SID table is looked up before the FIB",
            ),
            (
                "2001:db8:ff::/127",
                "2001:db8:ff::/127 is the connected subnet of p0 (2001:db8:ff::1/127)",
            ),
            (
                "2001:db8:ff::1",
                "2001:db8:ff::1/128 is this switch's own address on p0",
            ),
            (
                "2001:db8:ff::",
                "2001:db8:ff::/128 is inside the connected subnet 2001:db8:ff::/127 of p0",
            ),
            (
                "::/0",
                "::/0 covers the connected subnet 2001:db8:ff::/127 of p0",
            ),
        ] {
            let e = err(
                &n,
                &format!(r#"{{"op":"add_sid","sid":"{sid}","behavior":"End"}}"#),
            );
            assert!(e.contains(message), "{sid}: {e}");
        }
        for sid in ["2001:db8:fe::/64", "2001:db8:ff::2/127", "fcbb:bb00:2::/48"] {
            resolve(
                &n,
                &op(&format!(
                    r#"{{"op":"add_sid","sid":"{sid}","behavior":"End"}}"#
                )),
            )
            .unwrap_or_else(|e| panic!("{sid}: {e}"));
        }
    }

    /// The config's message for `extra` appended to the test switch's config: what follows
    /// the field it names.
    fn config_refusal(extra: &str, field: &str) -> String {
        let text = format!("{}{extra}", names_config());
        let error = Config::parse(Path::new("r.toml"), &text).unwrap_err();
        assert_eq!(error.field, field, "{extra}: {error}");
        error.message
    }

    #[test]
    fn a_sid_prefix_has_no_host_bits_as_in_the_config() {
        // The config refuses the prefix; `add_sid` and `del_sid` refuse it with the same
        // words in field `sid`, rather than drop the host bits (a `del_sid` would then
        // delete the SID fcbb:bb00:1::/48 of the config).
        let n = names();
        let message = config_refusal(
            "[[srv6.sid]]\nprefix = \"fcbb:bb00:2::5/48\"\nbehavior = \"uN\"\n",
            "srv6.sid[1].prefix",
        );
        assert_eq!(
            message,
            "host bits set: `fcbb:bb00:2::5/48` is not a network address; write fcbb:bb00:2::/48"
        );
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_sid","sid":"fcbb:bb00:2::5/48","behavior":"uN"}"#
            ),
            format!("`sid`: {message}")
        );
        assert_eq!(
            err(&n, r#"{"op":"del_sid","sid":"fcbb:bb00:1::1/48"}"#),
            "`sid`: host bits set: `fcbb:bb00:1::1/48` is not a network address; write fcbb:bb00:1::/48"
        );
        // As a route's prefix.
        assert_eq!(
            err(&n, r#"{"op":"del_route","prefix":"10.7.0.1/16"}"#),
            "`prefix`: host bits set: `10.7.0.1/16` is not a network address; write 10.7.0.0/16"
        );
        // A bare address is a /128, and the network address is taken.
        for sid in ["fcbb:bb00:2::5", "fcbb:bb00:2::/48"] {
            resolve(
                &n,
                &op(&format!(
                    r#"{{"op":"add_sid","sid":"{sid}","behavior":"End"}}"#
                )),
            )
            .unwrap_or_else(|e| panic!("{sid}: {e}"));
        }
        resolve(&n, &op(r#"{"op":"del_sid","sid":"fcbb:bb00:1::/48"}"#)).unwrap();
    }

    #[test]
    fn a_route_takes_no_interface_prefix_whatever_its_target_as_in_the_config() {
        // The config's rule for a [[route]] and an [[srv6.policy]]'s prefix: not an
        // interface's connected subnet nor the switch's own address (`add_route` to a policy
        // is how the API gives a policy a prefix). p0 has 10.255.0.1/31 and 2001:db8:ff::1/127.
        let n = names();
        let policy = |prefix: &str| {
            format!("[[srv6.policy]]\nprefix = \"{prefix}\"\nsegments = [\"fcbb:bb00:2::\"]\n")
        };
        for (prefix, config_message, api_message) in [
            (
                "10.255.0.0/31",
                "10.255.0.0/31 is the connected subnet of interface 0 (port p0) (10.255.0.1/31); it is routed there already",
                "10.255.0.0/31 is the connected subnet of p0 (10.255.0.1/31); it is routed there already",
            ),
            (
                "10.0.6.0/30",
                "10.0.6.0/30 is the connected subnet of interface 2 (port p2) (10.0.6.1/30); it is routed there already",
                "10.0.6.0/30 is the connected subnet of p2 (10.0.6.1/30); it is routed there already",
            ),
            (
                "2001:db8:ff::1/128",
                "2001:db8:ff::1/128 is this switch's own address on interface 0 (port p0)",
                "2001:db8:ff::1/128 is this switch's own address on p0",
            ),
        ] {
            assert_eq!(
                config_refusal(&policy(prefix), "srv6.policy[0].prefix"),
                config_message
            );
            let api_message = format!("`prefix`: {api_message}");
            let routes = batch(
                &n,
                &format!(
                    r#"[{{"op":"add_policy","policy":"pn","segments":["fcbb:bb00:2::"]}},
                        {{"op":"add_route","prefix":"{prefix}","policy":"pn"}}]"#
                ),
            );
            assert_eq!(routes.unwrap_err(), api_message, "{prefix}");
            for target in [
                r#""blackhole":true"#,
                r#""group":"up""#,
                r#""via":"10.0.4.2","dev":"p2""#,
            ] {
                let line = format!(r#"{{"op":"add_route","prefix":"{prefix}",{target}}}"#);
                assert_eq!(err(&n, &line), api_message, "{line}");
            }
        }
        // Inside a connected subnet (not the switch's address) or around one: the longest
        // match decides, as between any two routes; the config takes them too.
        for prefix in ["10.255.0.0/32", "10.0.4.128/25", "10.0.0.0/8", "::/0"] {
            let text = format!("{}{}", names_config(), policy(prefix));
            Config::parse(Path::new("r.toml"), &text).unwrap_or_else(|e| panic!("{prefix}: {e}"));
            batch(
                &n,
                &format!(
                    r#"[{{"op":"add_policy","policy":"pn","segments":["fcbb:bb00:2::"]}},
                        {{"op":"add_route","prefix":"{prefix}","policy":"pn"}}]"#
                ),
            )
            .unwrap_or_else(|e| panic!("{prefix}: {e}"));
        }
    }

    #[test]
    fn a_set_group_without_mode_says_it_sets_hashing() {
        // The group's current mode does not count: set_group replaces the balancing.
        let n = names();
        for (keys, key) in [
            (r#""flowlet_timeout_us":200"#, "flowlet_timeout_us"),
            (r#""choice":"least-loaded""#, "choice"),
        ] {
            let e = err(&n, &format!(r#"{{"op":"set_group","group":"up",{keys}}}"#));
            assert!(e.starts_with(&format!("`{key}`: applies to mode")), "{e}");
            assert!(
                e.ends_with("; a set_group without `mode` sets hash balancing, so give `mode`"),
                "{e}"
            );
            let e = err(
                &n,
                &format!(r#"{{"op":"set_group","group":"up","mode":"hash",{keys}}}"#),
            );
            assert!(!e.contains("without `mode`"), "{e}");
        }
    }

    #[test]
    fn vlans_and_port_membership() {
        let n = names();
        let updates = batch(
            &n,
            r#"[{"op":"add_vlan","vlan":20},
                {"op":"set_port_vlan","port":"p1","mode":"trunk","allowed":[20],"native":null}]"#,
        );
        // p1 is routed in this config.
        assert!(updates.unwrap_err().contains("port p1 is routed"));
        // VLAN ids out of range are refused as the request is read.
        let request = br#"{"v":1,"id":1,"cmd":"update","updates":[{"op":"add_vlan","vlan":0}]}"#;
        assert!(
            parse_request(request)
                .unwrap_err()
                .1
                .contains("field `vlan` is 0; VLAN ids are 1..=4094")
        );
        for (line, message) in [
            (r#"{"op":"del_vlan","vlan":20}"#, "VLAN 20 does not exist"),
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"access","vlan":20}"#,
                "port p0 is routed",
            ),
        ] {
            let e = err(&n, line);
            assert!(e.contains(message), "{line}: {e}");
        }
        for (line, message) in [
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"trunk"}"#,
                "field `allowed`: a trunk needs `allowed`, the list of VLANs it carries",
            ),
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"access","vlan":5,"native":5}"#,
                "`allowed` and `native` are for mode \"trunk\"",
            ),
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"trunk","vlan":5}"#,
                "`vlan` is for mode \"access\"",
            ),
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"hybrid","vlan":5}"#,
                "not \"access\" or \"trunk\"",
            ),
            (
                r#"{"op":"set_port_vlan","port":"p0","mode":"trunk","allowed":[5000]}"#,
                "holds 5000, not a VID",
            ),
        ] {
            let request = format!(r#"{{"v":1,"id":1,"cmd":"update","updates":[{line}]}}"#);
            let e = parse_request(request.as_bytes()).unwrap_err().1;
            assert!(e.contains(message), "{line}: {e}");
        }
        let mut n2 = n.clone();
        let (add, _) = resolve(&n2, &op(r#"{"op":"add_vlan","vlan":20}"#)).unwrap();
        n2.note(&add, None);
        assert!(n2.spec.as_ref().unwrap().vlans.iter().any(|v| v.id == 20));
        let e = err(&n2, r#"{"op":"add_vlan","vlan":20}"#);
        assert!(e.contains("VLAN 20 exists already"), "{e}");
    }

    /// The test switch with a VRF `red`: routed port p3 (10.3.0.1/24) and VLAN 20's
    /// interface vlan20 (10.20.0.1/24, 2001:db8:20::1/64) are in it, and group `redg` over p3;
    /// port a is an access port of VLAN 20, port b of VLAN 30 (no interface), port c (MTU 576)
    /// of VLAN 30 too.
    fn red_config() -> String {
        format!(
            r#"{}[[vrf]]
name = "red"
[[vlan]]
id = 20
vrf = "red"
ipv4 = ["10.20.0.1/24"]
ipv6 = ["2001:db8:20::1/64"]
[[vlan]]
id = 30
[[port]]
name = "p3"
devargs = "net_null3"
vrf = "red"
ipv4 = ["10.3.0.1/24"]
[[port]]
name = "a"
devargs = "net_null4"
vlan = {{ mode = "access", id = 20 }}
[[port]]
name = "b"
devargs = "net_null5"
vlan = {{ mode = "access", id = 30 }}
[[port]]
name = "c"
devargs = "net_null6"
mtu = 576
vlan = {{ mode = "access", id = 30 }}
[[nexthop_group]]
name = "redg"
members = [{{ port = "p3", via = "10.3.0.2" }}]
"#,
            names_config()
        )
    }

    fn red_names() -> Names {
        let config =
            Config::parse(Path::new("r.toml"), &red_config()).unwrap_or_else(|e| panic!("{e}"));
        Names::of(&config)
    }

    /// The config's message for `extra` appended to `red_config`: what follows the field it
    /// names.
    fn red_refusal(extra: &str, field: &str) -> String {
        let text = format!("{}{extra}", red_config());
        let error = Config::parse(Path::new("r.toml"), &text).unwrap_err();
        assert_eq!(error.field, field, "{extra}: {error}");
        error.message
    }

    #[test]
    fn a_run_time_route_forwards_in_its_own_vrf_as_in_the_config() {
        let n = red_names();
        // The config's words, with the interface named as the API names it.
        assert_eq!(
            red_refusal(
                "[[route]]\nvrf = \"red\"\nprefix = \"10.60.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"p0\"\n",
                "route[0].via"
            ),
            "interface 0 (port p0) is in VRF default, but this route is in VRF red"
        );
        for (line, message) in [
            // A red route out of a default port, and the reverse, by port and by VLAN.
            (
                r#"{"op":"add_route","vrf":"red","prefix":"10.60.0.0/16","via":"10.255.0.0","dev":"p0"}"#,
                "p0 is in VRF default, but this route is in VRF red",
            ),
            (
                r#"{"op":"add_route","prefix":"10.60.0.0/16","via":"10.3.0.2","dev":"p3"}"#,
                "p3 is in VRF red, but this route is in VRF default",
            ),
            (
                r#"{"op":"add_route","prefix":"10.60.0.0/16","via":"10.20.0.2","dev":"vlan20"}"#,
                "vlan20 is in VRF red, but this route is in VRF default",
            ),
            // To a group: its members' VRF.
            (
                r#"{"op":"add_route","vrf":"red","prefix":"10.60.0.0/16","group":"up"}"#,
                "group `up` forwards in VRF default (its members' interfaces), but this route is in VRF red",
            ),
            (
                r#"{"op":"add_route","prefix":"10.60.0.0/16","group":"redg"}"#,
                "group `redg` forwards in VRF red (its members' interfaces), but this route is in VRF default",
            ),
        ] {
            assert_eq!(err(&n, line), message, "{line}");
        }
        assert_eq!(
            red_refusal(
                "[[route]]\nvrf = \"red\"\nprefix = \"10.60.0.0/16\"\ngroup = \"up\"\n",
                "route[0].group"
            ),
            "group `up` forwards in VRF default (its members' interfaces), but this route is in VRF red"
        );
        for line in [
            r#"{"op":"add_route","vrf":"red","prefix":"10.60.0.0/16","via":"10.3.0.2","dev":"p3"}"#,
            r#"{"op":"add_route","vrf":"red","prefix":"10.60.0.0/16","via":"10.20.0.2","dev":"vlan20"}"#,
            r#"{"op":"add_route","vrf":"red","prefix":"10.60.0.0/16","group":"redg"}"#,
            r#"{"op":"add_route","prefix":"10.60.0.0/16","group":"up"}"#,
            // A blackhole and an SRv6 policy (the headend's encapsulation leaves the VRF by
            // design, as in the config) have no interface.
            r#"{"op":"add_route","vrf":"red","prefix":"10.61.0.0/16","blackhole":true}"#,
        ] {
            resolve(&n, &op(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        batch(
            &n,
            r#"[{"op":"add_policy","policy":"pn","segments":["fcbb:bb00:2::"]},
                {"op":"add_route","vrf":"red","prefix":"10.62.0.0/16","policy":"pn"}]"#,
        )
        .unwrap();
    }

    #[test]
    fn a_groups_members_share_its_vrf_at_run_time_as_in_the_config() {
        let n = red_names();
        assert!(
            red_refusal(
                "[[nexthop_group]]\nname = \"mix\"\nmembers = [{ port = \"p0\", via = \"10.255.0.0\" }, { port = \"p3\", via = \"10.3.0.2\" }]\n",
                "nexthop_group[2].members[1].via"
            )
            .ends_with("is in VRF red, but members[0] is in VRF default: a group's members share one VRF")
        );
        for (line, message) in [
            (
                r#"{"op":"add_group","group":"mix","members":[{"via":"10.255.0.0","dev":"p0"},{"via":"10.3.0.2","dev":"p3"}]}"#,
                "`members[1]`: p3 is in VRF red, but members[0] is in VRF default: a group's members share one VRF",
            ),
            (
                r#"{"op":"add_ecmp_member","group":"up","via":"10.3.0.2","dev":"p3"}"#,
                "p3 is in VRF red, but group `up` is in VRF default: a group's members share one VRF",
            ),
            (
                r#"{"op":"add_ecmp_member","group":"redg","via":"10.255.0.0","dev":"p0"}"#,
                "p0 is in VRF default, but group `redg` is in VRF red: a group's members share one VRF",
            ),
        ] {
            assert_eq!(err(&n, line), message, "{line}");
        }
        resolve(
            &n,
            &op(r#"{"op":"add_ecmp_member","group":"redg","via":"10.20.0.2","dev":"vlan20"}"#),
        )
        .unwrap();
        // A group made at run time forwards in its members' VRF: later routes (and a slot
        // taken again by another group) follow it.
        let routes = |vrf: &str| {
            batch(
                &n,
                &format!(
                    r#"[{{"op":"add_group","group":"g2","members":[{{"via":"10.3.0.2","dev":"p3"}}]}},
                        {{"op":"add_route","vrf":"{vrf}","prefix":"10.63.0.0/16","group":"g2"}}]"#
                ),
            )
        };
        routes("red").unwrap();
        assert_eq!(
            routes("default").unwrap_err(),
            "group `g2` forwards in VRF red (its members' interfaces), but this route is in VRF default"
        );
        let mut n2 = n.clone();
        for update in batch(
            &n,
            r#"[{"op":"del_group","group":"redg"},
                {"op":"add_group","group":"g3","members":[{"via":"10.255.0.2","dev":"p1"}]}]"#,
        )
        .unwrap()
        {
            let name = matches!(update, Update::AddGroup { .. }).then_some("g3");
            n2.note(&update, name);
        }
        assert_eq!(n2.group("g3"), Ok(1), "g3 takes redg's slot");
        resolve(
            &n2,
            &op(r#"{"op":"add_route","prefix":"10.64.0.0/16","group":"g3"}"#),
        )
        .unwrap();
    }

    #[test]
    fn an_end_x_sid_forwards_in_its_own_vrf() {
        let n = red_names();
        assert_eq!(
            red_refusal(
                "[[srv6.sid]]\nvrf = \"red\"\nprefix = \"fcbb:bb00:9::/48\"\nbehavior = \"uA\"\nvia = \"10.255.0.0\"\nport = \"p0\"\n",
                "srv6.sid[1].via"
            ),
            "interface 0 (port p0) is in VRF default, but this SID is in VRF red"
        );
        assert_eq!(
            red_refusal(
                "[[srv6.sid]]\nprefix = \"fcbb:bb00:9::/48\"\nbehavior = \"End.X\"\ngroup = \"redg\"\n",
                "srv6.sid[1].group"
            ),
            "group `redg` forwards in VRF red (its members' interfaces), but this SID is in VRF default"
        );
        for (line, message) in [
            (
                r#"{"op":"add_sid","vrf":"red","sid":"fcbb:bb00:9::/48","behavior":"uA","via":"10.255.0.0","dev":"p0"}"#,
                "p0 is in VRF default, but this SID is in VRF red",
            ),
            (
                r#"{"op":"add_sid","sid":"fcbb:bb00:9::/48","behavior":"End.X","group":"redg"}"#,
                "group `redg` forwards in VRF red (its members' interfaces), but this SID is in VRF default",
            ),
        ] {
            assert_eq!(err(&n, line), message, "{line}");
        }
        for line in [
            r#"{"op":"add_sid","vrf":"red","sid":"fcbb:bb00:9::/48","behavior":"uA","via":"10.3.0.2","dev":"p3"}"#,
            r#"{"op":"add_sid","sid":"fcbb:bb00:9::/48","behavior":"End.X","group":"up"}"#,
            // Decapsulation into another VRF is what End.DT* is for.
            r#"{"op":"add_sid","sid":"fcbb:bb00:9::/48","behavior":"End.DT4","lookup_vrf":"red"}"#,
        ] {
            resolve(&n, &op(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        // A neighbour has no VRF of its own: any interface's.
        resolve(
            &n,
            &op(r#"{"op":"add_neighbor","ip":"10.3.0.2","dev":"p3","mac":"02:00:00:00:00:09"}"#),
        )
        .unwrap();
    }

    #[test]
    fn the_p4_form_forwards_in_the_entrys_vrf_too() {
        let n = red_names();
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let add = |table: &str, action: &str, matches: &[&str], params: &[&str]| {
            crate::p4ctl::table_add(&n, table, action, &strings(matches), &strings(params))
        };
        assert_eq!(
            add(
                "ipv4_lpm",
                "set_ecmp_group",
                &["red", "10.70.0.0/16"],
                &["up"]
            )
            .unwrap_err(),
            "group `up` forwards in VRF default (its members' interfaces), but this route is in VRF red"
        );
        assert!(
            add(
                "ipv4_lpm",
                "set_ecmp_group",
                &["red", "10.70.0.0/16"],
                &["redg"]
            )
            .is_ok()
        );
        assert_eq!(
            add(
                "my_sid",
                "end_x",
                &["red", "fcbb:bb00:9::/48"],
                &["0", "0", "2", "up"]
            )
            .unwrap_err(),
            "group `up` forwards in VRF default (its members' interfaces), but this SID is in VRF red"
        );
        // A nexthop by id: checked against the worker's nexthops (the server asks for them).
        let nexthops = [
            NexthopEntry {
                id: 0,
                interface: 0,
                ip: "10.255.0.0".parse().unwrap(),
                mac: None,
                state: "unresolved",
            },
            NexthopEntry {
                id: 7,
                interface: 3,
                ip: "10.3.0.9".parse().unwrap(),
                mac: None,
                state: "reachable",
            },
        ];
        let held = |matches: &[&str], params: &[&str]| {
            let update = add("ipv4_lpm", "set_nexthop", matches, params).unwrap();
            let (what, vrf, target) =
                crate::p4ctl::needs_nexthops(&update).expect("held for the nexthops");
            n.check_target_vrf(what, vrf, target, &nexthops)
        };
        assert_eq!(
            held(&["red", "10.70.0.0/16"], &["0"]).unwrap_err(),
            "nexthop 0 (10.255.0.0 on p0) is in VRF default, but this route is in VRF red"
        );
        assert_eq!(
            held(&["0", "10.70.0.0/16"], &["7"]).unwrap_err(),
            "nexthop 7 (10.3.0.9 on p3) is in VRF red, but this route is in VRF default"
        );
        held(&["red", "10.70.0.0/16"], &["7"]).unwrap();
        held(&["default", "10.70.0.0/16"], &["0"]).unwrap();
        let update = add(
            "my_sid",
            "end_x",
            &["red", "fcbb:bb00:9::/48"],
            &["0", "0", "1", "0"],
        )
        .unwrap();
        let (what, vrf, target) = crate::p4ctl::needs_nexthops(&update).unwrap();
        assert_eq!(
            n.check_target_vrf(what, vrf, target, &nexthops)
                .unwrap_err(),
            "nexthop 0 (10.255.0.0 on p0) is in VRF default, but this SID is in VRF red"
        );
        // Nothing to hold for the worker's nexthops otherwise.
        let blackhole = add("ipv4_lpm", "blackhole", &["red", "10.70.0.0/16"], &[]).unwrap();
        assert_eq!(crate::p4ctl::needs_nexthops(&blackhole), None);
    }

    #[test]
    fn a_schedule_event_forwards_in_its_routes_vrf_too() {
        let config = Config::parse(Path::new("r.toml"), &red_config()).unwrap();
        let schedule = "[[event]]\nat_us = 10\nupdates = [{ op = \"add_route\", vrf = \"red\", prefix = \"10.60.0.0/16\", via = \"10.255.0.0\", dev = \"p0\" }]\n";
        let error = crate::schedule::parse(Path::new("s.toml"), schedule, &config, 0).unwrap_err();
        assert_eq!(error.field, "event[0].updates");
        assert!(
            error
                .message
                .ends_with("updates[0]: p0 is in VRF default, but this route is in VRF red"),
            "{error}"
        );
    }

    #[test]
    fn the_p4_form_refuses_host_bits_as_the_config_and_the_api_do() {
        let n = names();
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let message = "host bits set: `10.70.0.1/16` is not a network address; write 10.70.0.0/16";
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_route","prefix":"10.70.0.1/16","blackhole":true}"#
            ),
            format!("`prefix`: {message}")
        );
        for (table, prefix, message) in [
            ("ipv4_lpm", "10.70.0.1/16", message),
            (
                "ipv6_lpm",
                "2001:db8:70::1/48",
                "host bits set: `2001:db8:70::1/48` is not a network address; write 2001:db8:70::/48",
            ),
        ] {
            let matches = strings(&["0", prefix]);
            assert_eq!(
                crate::p4ctl::table_add(&n, table, "blackhole", &matches, &[]).unwrap_err(),
                message
            );
            assert_eq!(
                crate::p4ctl::table_delete(&n, table, &matches).unwrap_err(),
                message
            );
        }
        // As `add_route`: not an interface's own subnet or address either.
        assert_eq!(
            crate::p4ctl::table_add(
                &n,
                "ipv4_lpm",
                "blackhole",
                &strings(&["0", "10.255.0.0/31"]),
                &[]
            )
            .unwrap_err(),
            "10.255.0.0/31 is the connected subnet of p0 (10.255.0.1/31); it is routed there already"
        );
        assert!(
            crate::p4ctl::table_add(
                &n,
                "ipv4_lpm",
                "blackhole",
                &strings(&["0", "10.70.0.0/16"]),
                &[]
            )
            .is_ok()
        );
    }

    #[test]
    fn a_port_below_1280_bytes_joins_no_vlan_with_ipv6() {
        let n = red_names();
        // The config: a routed port with IPv6, or a VLAN member whose VLAN's interface has it.
        let message = red_refusal(
            "[[port]]\nname = \"d\"\ndevargs = \"net_null7\"\nmtu = 576\nipv4 = [\"10.9.0.1/24\"]\nipv6 = [\"2001:db8:9::1/64\"]\n",
            "port[7].mtu",
        );
        assert_eq!(
            message,
            "576 is below 1280, the smallest link MTU IPv6 allows (RFC 8200 section 5), and this routed port has IPv6 addresses (`ipv6`); raise the MTU to at least 1280 or carry no IPv6 on this port"
        );
        assert!(
            red_refusal(
                "[[port]]\nname = \"d\"\ndevargs = \"net_null7\"\nmtu = 1279\nvlan = { mode = \"trunk\", allowed = [30, 20] }\n",
                "port[7].mtu",
            )
            .contains("1279 is below 1280, the smallest link MTU IPv6 allows (RFC 8200 section 5), and the port is in VLAN 20, whose interface has IPv6 addresses")
        );
        // IPv4 only, or 1280 bytes: fine.
        for port in [
            "mtu = 576\nipv4 = [\"10.9.0.1/24\"]",
            "mtu = 1280\nipv6 = [\"2001:db8:9::1/64\"]",
            "mtu = 576\nvlan = { mode = \"access\", id = 30 }",
        ] {
            let text = format!(
                "{}[[port]]\nname = \"d\"\ndevargs = \"net_null7\"\n{port}\n",
                red_config()
            );
            Config::parse(Path::new("r.toml"), &text).unwrap_or_else(|e| panic!("{port}: {e}"));
        }
        // At run time: port c (MTU 576) may not join VLAN 20, whose interface has IPv6.
        assert_eq!(
            err(
                &n,
                r#"{"op":"set_port_vlan","port":"c","mode":"access","vlan":20}"#
            ),
            "port c: mtu 576 is below 1280, the smallest link MTU IPv6 allows (RFC 8200 section 5), and the port is in VLAN 20, whose interface has IPv6 addresses (a VLAN interface's MTU is the smallest of its ports'); raise the MTU to at least 1280 or carry no IPv6 on this port"
        );
        assert!(
            err(
                &n,
                r#"{"op":"set_port_vlan","port":"c","mode":"trunk","allowed":[30,20],"native":30}"#
            )
            .contains("the port is in VLAN 20")
        );
        resolve(
            &n,
            &op(r#"{"op":"set_port_vlan","port":"b","mode":"access","vlan":20}"#),
        )
        .unwrap();
    }

    #[test]
    fn refusals_name_ports_and_vrfs_as_the_operator_does() {
        let n = red_names();
        // A static MAC: refused before the worker sees numbers, as the config words it.
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_mac","vlan":30,"mac":"02:00:00:00:77:01","port":"a"}"#
            ),
            "port `a` is not in VLAN 30 (it is an access port of VLAN 20)"
        );
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_mac","vlan":20,"mac":"02:00:00:00:77:01","port":"p3"}"#
            ),
            "port `p3` is not in VLAN 20 (it is a routed port)"
        );
        assert_eq!(
            red_refusal(
                "[[mac]]\nvlan = 20\nmac = \"02:00:00:00:77:01\"\nport = \"p3\"\n",
                "mac[0].port"
            ),
            "port `p3` is not in VLAN 20 (it is a routed port)"
        );
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_mac","vlan":40,"mac":"02:00:00:00:77:01","port":"a"}"#
            ),
            "VLAN 40 does not exist"
        );
        assert_eq!(
            err(
                &n,
                r#"{"op":"add_mac","vlan":20,"mac":"02:00:00:00:01:00","port":"a"}"#
            ),
            "02:00:00:00:01:00 is the switch's own router_mac"
        );
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            crate::p4ctl::table_add(
                &n,
                "mac_table",
                "l2_forward",
                &strings(&["30", "02:00:00:00:77:01"]),
                &strings(&["4"])
            )
            .unwrap_err(),
            "port `a` is not in VLAN 30 (it is an access port of VLAN 20)"
        );
        // What only the worker can refuse, in its words with the names put in.
        let forwarder = dataplane::pipeline::Forwarder::new(n.spec.as_ref().unwrap()).unwrap();
        for (update, worker, named) in [
            (
                Update::DelRoute {
                    vrf: 1,
                    prefix: "10.99.0.0".parse().unwrap(),
                    len: 16,
                },
                "no route 10.99.0.0/16 in VRF 1",
                "no route 10.99.0.0/16 in VRF red",
            ),
            (
                Update::AddMac {
                    vlan: 30,
                    mac: [2, 0, 0, 0, 0x77, 1],
                    port: 4,
                },
                "port 4 is not in VLAN 30",
                "port a is not in VLAN 30",
            ),
            (
                Update::DelNeighbor {
                    interface: 3,
                    ip: "10.3.0.77".parse().unwrap(),
                },
                "no neighbour 10.3.0.77 on interface 3",
                "no neighbour 10.3.0.77 on interface p3",
            ),
            (
                Update::DelEcmpMember {
                    group: 1,
                    interface: 0,
                    ip: "10.255.0.0".parse().unwrap(),
                },
                "10.255.0.0 is not a member of group 1",
                "10.255.0.0 is not a member of group `redg`",
            ),
        ] {
            let (_, error) = forwarder
                .validate_updates(std::slice::from_ref(&update))
                .unwrap_err();
            assert!(error.contains(worker), "{update:?}: {error}");
            let renamed = n.name_ids(&error, true);
            assert!(renamed.contains(named), "{update:?}: {renamed}");
        }
        // Numbers that name nothing stay; without `slots`, groups and policies stay numbers.
        assert_eq!(
            n.name_ids("port 99 does not exist", true),
            "port 99 does not exist"
        );
        assert_eq!(
            n.name_ids("ECMP group 1 does not exist: port 0, VRF 1", false),
            "ECMP group 1 does not exist: port p0, VRF red"
        );
        assert_eq!(
            n.name_ids("ECMP group slot 1 is taken", true),
            "ECMP group slot 1 is taken"
        );
        // The P4 form names a VRF by its name too.
        assert_eq!(
            crate::p4ctl::table_delete(&n, "my_sid", &strings(&["red", "fcbb:bb00:1::/48"]))
                .unwrap_err(),
            "no local SID fcbb:bb00:1::/48 in VRF red"
        );
        assert_eq!(
            crate::p4ctl::table_delete(&n, "ipv4_lpm", &strings(&["5", "10.9.0.0/16"]))
                .unwrap_err(),
            "VRF 5 does not exist (VRFs: 0 default, 1 red)"
        );
    }

    #[test]
    fn pfc_thresholds_keep_what_is_not_given_and_xon_stays_at_or_below_xoff() {
        let n = names();
        let current = n.spec.as_ref().unwrap().qos.ports[0].pfc[3].expect("TC 3 is lossless");
        let (update, _) = resolve(
            &n,
            &op(r#"{"op":"set_pfc","port":"p0","tc":3,"xoff":"40KB","xon":20000}"#),
        )
        .unwrap();
        assert_eq!(
            update,
            Update::SetPfc {
                port: 0,
                tc: 3,
                thresholds: PfcThresholds {
                    xoff: 40_000,
                    xon: 20_000,
                    headroom: current.headroom
                }
            }
        );
        let mut n2 = n.clone();
        n2.note(&update, None);
        assert_eq!(
            n2.spec.as_ref().unwrap().qos.ports[0].pfc[3].unwrap().xoff,
            40_000
        );
        for (line, message) in [
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"xoff":1000,"xon":2000}"#,
                "xon 2000 is above xoff (1000): XON must be at or below XOFF",
            ),
            // The config's rules at run time: XON 0 would never be sent, XOFF 0 pauses an
            // empty port, headroom under a frame holds nothing, and xoff + headroom must not
            // overflow the admission limit.
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"xon":0}"#,
                "xon 0 bytes: XON is sent when the ingress bytes fall below xon",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"xoff":0,"xon":0}"#,
                "xoff 0 bytes: XOFF is sent when the ingress bytes reach xoff",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"headroom":10}"#,
                "headroom 10 bytes cannot hold one 64-byte frame above xoff",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"headroom":17179869185}"#,
                "headroom 17179869185 bytes is above the largest buffer",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":2,"xoff":1000}"#,
                "TC 2 is not lossless on port p0",
            ),
            (
                r#"{"op":"set_pfc","port":"p1","tc":3,"xoff":1000}"#,
                "TC 3 is not lossless on port p1",
            ),
        ] {
            let e = err(&n, line);
            assert!(e.contains(message), "{line}: {e}");
        }
        for (line, message) in [
            (
                r#"{"op":"set_pfc","port":"p0","tc":3}"#,
                "at least one of `xoff`, `xon`, `headroom`",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"xoff":"1 parsec"}"#,
                "field `xoff` `1 parsec`: unknown unit",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":3,"xoff":-5}"#,
                "field `xoff` -5 is negative",
            ),
            (
                r#"{"op":"set_pfc","port":"p0","tc":8,"xoff":5}"#,
                "above the maximum 7",
            ),
        ] {
            let request = format!(r#"{{"v":1,"id":1,"cmd":"update","updates":[{line}]}}"#);
            let e = parse_request(request.as_bytes()).unwrap_err().1;
            assert!(e.contains(message), "{line}: {e}");
        }
    }
}
