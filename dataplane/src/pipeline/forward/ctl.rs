//! Run-time changes to the forwarder's tables (`crate::ctl`): whole-batch validation, apply
//! with an undo log, and snapshots. Called by the worker between bursts, never per packet.

use super::PortMode;
use super::route_value;
use super::srv6::{Srv6State, Srv6Undo};
use super::{Forwarder, Nexthop, mask4, mask6};
use crate::ctl::{
    Dump, DumpKind, GroupEntry, GroupMemberEntry, MacDumpEntry, NexthopEntry, PortEntry,
    RouteEntry, Target, Update,
};
use crate::pipeline::spec::{Attachment, PortRole, RouteTarget, SidBehavior};
use crate::tables::ecmp::{EcmpGroup, Member};
use crate::tables::flowlet::{BalanceMode, GroupBalancer, MAX_BALANCED_MEMBERS};
use crate::tables::mac::MacEntry;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr};

/// Whether a port of `role` is a member of `vlan` (a routed port is of none).
fn role_carries(role: &PortRole, vlan: u16) -> bool {
    match role {
        PortRole::Access { vlan: v } => *v == vlan,
        PortRole::Trunk { allowed, native } => allowed.contains(&vlan) || *native == Some(vlan),
        PortRole::Routed { .. } => false,
    }
}

/// How to take back one applied change.
#[derive(Debug, Clone)]
pub enum Undo {
    /// Put the raw LPM value back (or remove the route if there was none).
    Route {
        vrf: u16,
        prefix: IpAddr,
        len: u8,
        previous: Option<u32>,
    },
    /// Forget nexthops created from this index on.
    NexthopsTruncate(usize),
    NexthopMac {
        id: u32,
        previous: Option<[u8; 6]>,
        pinned: bool,
    },
    /// A group and its balancer (rebuilt for the new members) as they were.
    Group {
        id: u32,
        previous: Box<EcmpGroup>,
        balancer: Box<GroupBalancer>,
    },
    Mac {
        vlan: u16,
        mac: [u8; 6],
        previous: Option<MacEntry>,
    },
    Policy {
        index: u32,
        previous: Box<super::srv6::PolicyBackup>,
    },
    /// A SID or policy added or deleted.
    Srv6(Box<Srv6Undo>),
    /// A group created in `slot`; `previous` is the deleted group it replaced (`None`: the
    /// table grew by it).
    GroupAdded {
        slot: u32,
        previous: Option<Box<(EcmpGroup, GroupBalancer)>>,
    },
    GroupDeleted {
        slot: u32,
    },
    /// Whether VLAN `id` was declared.
    VlanDeclared {
        id: u16,
        previous: bool,
    },
    /// A port's VLAN membership as it was.
    PortRole {
        port: u16,
        previous: PortRole,
    },
}

/// Whether a port in `role` is in `vlan`.
fn role_has(role: &PortRole, vlan: u16) -> bool {
    match role {
        PortRole::Access { vlan: v } => *v == vlan,
        PortRole::Trunk { allowed, native } => allowed.contains(&vlan) || *native == Some(vlan),
        PortRole::Routed { .. } => false,
    }
}

/// Whether `slot` may take a new entry: the next one (`len`, the table's length as the batch
/// left it so far) or one that is free, within `capacity`.
fn check_slot(
    slot: u32,
    len: usize,
    used: bool,
    capacity: usize,
    what: &str,
) -> Result<(), String> {
    let s = slot as usize;
    if s >= capacity {
        return Err(format!("{what} slot {slot}: there is room for {capacity}"));
    }
    if s > len || (s < len && used) {
        return Err(format!(
            "{what} slot {slot} is taken (another update raced this one); retry"
        ));
    }
    Ok(())
}

/// What a batch has changed so far in the slot tables (groups, SIDs, policies), for
/// validation: `live[slot]` overrides the table, `len` is its length after the batch's pushes.
struct Slots {
    live: HashMap<u32, bool>,
    len: usize,
}

impl Slots {
    fn new(len: usize) -> Slots {
        Slots {
            live: HashMap::new(),
            len,
        }
    }

    fn is_live(&self, slot: u32, current: impl Fn(u32) -> bool) -> bool {
        self.live
            .get(&slot)
            .copied()
            .unwrap_or_else(|| current(slot))
    }

    fn take(&mut self, slot: u32) {
        self.live.insert(slot, true);
        self.len = self.len.max(slot as usize + 1);
    }
}

fn host_len(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn masked(prefix: IpAddr, len: u8) -> IpAddr {
    match prefix {
        IpAddr::V4(p) => IpAddr::V4(mask4(p, len)),
        IpAddr::V6(p) => IpAddr::V6(mask6(p, len)),
    }
}

fn mac_text(mac: [u8; 6]) -> String {
    let [a, b, c, d, e, f] = mac;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

impl Forwarder {
    /// Whether `update`, applied now, takes the place of an entry: an `AddRoute` of a prefix
    /// the VRF routes already, an `AddMac` of a VLAN and MAC the table has (static or
    /// learned). The control plane tells the operator so (`ip route replace` semantics).
    pub fn replaces_entry(&self, update: &Update) -> bool {
        match *update {
            Update::AddRoute {
                vrf, prefix, len, ..
            } => self.raw_route(vrf, prefix, len).is_some(),
            Update::AddMac { vlan, mac, .. } => self.macs.get(vlan, mac).is_some(),
            _ => false,
        }
    }

    fn raw_route(&self, vrf: u16, prefix: IpAddr, len: u8) -> Option<u32> {
        match prefix {
            IpAddr::V4(p) => self.fib4.get(usize::from(vrf))?.get(p, len),
            IpAddr::V6(p) => self.fib6.get(usize::from(vrf))?.get(p, len),
        }
    }

    fn find_nexthop(&self, interface: u16, ip: IpAddr) -> Option<u32> {
        self.nexthops
            .iter()
            .position(|n| n.interface == interface && n.ip == ip)
            .map(|i| i as u32)
    }

    /// Whether the nexthop's port (if it sits on a routed port) is up.
    fn nexthop_port_up(&self, interface: u16) -> bool {
        match self
            .interfaces
            .get(usize::from(interface))
            .map(|i| i.attachment)
        {
            Some(Attachment::Port(p)) => self.port_up(p),
            _ => true,
        }
    }

    /// Group `group` for a batch's change of its `what` (members or balancing): live by then,
    /// and not one the batch creates (the creating update gives its members and balancing).
    fn group_to_change(
        &self,
        group: u32,
        groups: &Slots,
        new_groups: &HashSet<u32>,
        what: &str,
    ) -> Result<&EcmpGroup, String> {
        if new_groups.contains(&group) {
            return Err(format!(
                "ECMP group {group} is created by this batch: give its {what} there"
            ));
        }
        match self.groups.get(group as usize) {
            Some(g) if groups.is_live(group, |g| self.group_live(g)) => Ok(g),
            _ => Err(format!("ECMP group {group} does not exist")),
        }
    }

    /// Checks every update of a batch against the tables as they will be when the updates
    /// before it have applied. `Err((index, message))` names the first refused update.
    /// `SetEcn` is the traffic manager's and only checked for shape here.
    pub fn validate_updates(&self, updates: &[Update]) -> Result<(), (usize, String)> {
        // Routes the batch added (with their target) or deleted (`None`).
        let mut routes: HashMap<(u16, IpAddr, u8), Option<Target>> = HashMap::new();
        let mut nexthops: Vec<(u16, IpAddr)> = Vec::new();
        let mut groups = Slots::new(self.groups.len());
        let mut new_groups: HashSet<u32> = HashSet::new();
        let mut policies = Slots::new(self.srv6.policy_slots());
        let mut sids = Slots::new(self.srv6.sid_slots());
        // SIDs the batch added (slot, End.X target) or deleted, and my-SID keys it changed.
        let mut sid_targets: HashMap<u32, Option<RouteTarget>> = HashMap::new();
        let mut sid_keys: HashMap<(u16, Ipv6Addr, u8), Option<u32>> = HashMap::new();
        // VLANs the batch declared or removed, and ports whose membership it changed.
        let mut vlans_declared: HashMap<u16, bool> = HashMap::new();
        let mut port_roles: HashMap<u16, PortRole> = HashMap::new();
        let mut members: HashMap<(u32, u16, IpAddr), bool> = HashMap::new();
        let mut member_counts: HashMap<u32, usize> = HashMap::new();
        let mut macs: HashMap<(u16, [u8; 6]), bool> = HashMap::new();
        let mut mac_count = self.macs.len();
        for (index, update) in updates.iter().enumerate() {
            let fail = |m: String| Err((index, m));
            let check_interface = |interface: u16| {
                if usize::from(interface) >= self.interfaces.len() {
                    Err((index, format!("L3 interface {interface} does not exist")))
                } else {
                    Ok(())
                }
            };
            let check_route = |vrf: u16, prefix: IpAddr, len: u8| {
                if usize::from(vrf) >= self.fib4.len() {
                    return Err((index, format!("VRF {vrf} does not exist")));
                }
                if len > host_len(prefix) {
                    return Err((
                        index,
                        format!("prefix length {len} is longer than {}", host_len(prefix)),
                    ));
                }
                Ok(())
            };
            match *update {
                Update::AddRoute {
                    vrf,
                    prefix,
                    len,
                    target,
                } => {
                    check_route(vrf, prefix, len)?;
                    let key = (vrf, masked(prefix, len), len);
                    if self.raw_route(vrf, prefix, len).is_some_and(|v| {
                        matches!(
                            route_value::decode(v),
                            RouteTarget::Local | RouteTarget::Connected(_)
                        )
                    }) {
                        return fail(format!(
                            "{}/{len} belongs to an interface address and cannot be replaced",
                            key.1
                        ));
                    }
                    match target {
                        Target::Via { interface, ip } => {
                            check_interface(interface)?;
                            if self.find_nexthop(interface, ip).is_none()
                                && !nexthops.contains(&(interface, ip))
                            {
                                if self.nexthops.len() + nexthops.len()
                                    > route_value::MAX_INDEX as usize
                                {
                                    return fail("too many nexthops".to_owned());
                                }
                                nexthops.push((interface, ip));
                            }
                        }
                        Target::Nexthop(n) if n as usize >= self.nexthops.len() => {
                            return fail(format!("nexthop {n} does not exist"));
                        }
                        Target::Group(g) if !groups.is_live(g, |g| self.group_live(g)) => {
                            return fail(format!("ECMP group {g} does not exist"));
                        }
                        Target::Srv6Policy(p)
                            if !policies.is_live(p, |p| self.srv6.policy_live(p)) =>
                        {
                            return fail(format!("SRv6 policy {p} does not exist"));
                        }
                        _ => {}
                    }
                    routes.insert(key, Some(target));
                }
                Update::DelRoute { vrf, prefix, len } => {
                    check_route(vrf, prefix, len)?;
                    let key = (vrf, masked(prefix, len), len);
                    let current = self.raw_route(vrf, prefix, len);
                    let exists = routes.get(&key).map_or(current.is_some(), |t| t.is_some());
                    if !exists {
                        return fail(format!("no route {}/{len} in VRF {vrf}", key.1));
                    }
                    if current.is_some_and(|v| {
                        matches!(
                            route_value::decode(v),
                            RouteTarget::Local | RouteTarget::Connected(_)
                        )
                    }) {
                        return fail(format!(
                            "{}/{len} belongs to an interface address and cannot be deleted",
                            key.1
                        ));
                    }
                    routes.insert(key, None);
                }
                Update::AddNeighbor { interface, ip, mac } => {
                    check_interface(interface)?;
                    if mac[0] & 1 != 0 || mac == [0; 6] {
                        return fail(format!("{} is not a unicast MAC", mac_text(mac)));
                    }
                    if self.find_nexthop(interface, ip).is_none()
                        && !nexthops.contains(&(interface, ip))
                    {
                        nexthops.push((interface, ip));
                    }
                }
                Update::DelNeighbor { interface, ip } => {
                    check_interface(interface)?;
                    if self.find_nexthop(interface, ip).is_none()
                        && !nexthops.contains(&(interface, ip))
                    {
                        return fail(format!("no neighbour {ip} on interface {interface}"));
                    }
                }
                Update::AddEcmpMember {
                    group,
                    interface,
                    ip,
                    weight,
                } => {
                    check_interface(interface)?;
                    let g = self
                        .group_to_change(group, &groups, &new_groups, "members")
                        .map_err(|e| (index, e))?;
                    if weight == 0 {
                        return fail("weight must be at least 1".to_owned());
                    }
                    let current = self
                        .find_nexthop(interface, ip)
                        .is_some_and(|id| g.members().iter().any(|m| m.id == id));
                    let key = (group, interface, ip);
                    if members.get(&key).copied().unwrap_or(current) {
                        return fail(format!("{ip} is already a member of group {group}"));
                    }
                    if self.find_nexthop(interface, ip).is_none()
                        && !nexthops.contains(&(interface, ip))
                    {
                        nexthops.push((interface, ip));
                    }
                    members.insert(key, true);
                    *member_counts.entry(group).or_insert(g.members().len()) += 1;
                }
                Update::DelEcmpMember {
                    group,
                    interface,
                    ip,
                } => {
                    let g = self
                        .group_to_change(group, &groups, &new_groups, "members")
                        .map_err(|e| (index, e))?;
                    let current = self
                        .find_nexthop(interface, ip)
                        .is_some_and(|id| g.members().iter().any(|m| m.id == id));
                    let key = (group, interface, ip);
                    if !members.get(&key).copied().unwrap_or(current) {
                        return fail(format!("{ip} is not a member of group {group}"));
                    }
                    let count = member_counts.entry(group).or_insert(g.members().len());
                    if *count <= 1 {
                        return fail(format!(
                            "removing {ip} would leave group {group} without members"
                        ));
                    }
                    *count -= 1;
                    members.insert(key, false);
                }
                Update::SetEcmpWeight {
                    group,
                    interface,
                    ip,
                    weight,
                } => {
                    let g = self
                        .group_to_change(group, &groups, &new_groups, "members")
                        .map_err(|e| (index, e))?;
                    if weight == 0 {
                        return fail("weight must be at least 1".to_owned());
                    }
                    let current = self
                        .find_nexthop(interface, ip)
                        .is_some_and(|id| g.members().iter().any(|m| m.id == id));
                    if !members
                        .get(&(group, interface, ip))
                        .copied()
                        .unwrap_or(current)
                    {
                        return fail(format!("{ip} is not a member of group {group}"));
                    }
                }
                Update::AddMac { vlan, mac, port } => {
                    if !(1..=4094).contains(&vlan) {
                        return fail(format!("VLAN {vlan} is not 1..=4094"));
                    }
                    if usize::from(port) >= self.ports.len() {
                        return fail(format!("port {port} does not exist"));
                    }
                    if mac[0] & 1 != 0 {
                        return fail(format!("{} is not a unicast MAC", mac_text(mac)));
                    }
                    if mac == self.router_mac {
                        return fail(format!(
                            "{} is the router MAC: frames to it are routed, never bridged",
                            mac_text(mac)
                        ));
                    }
                    if !vlans_declared
                        .get(&vlan)
                        .copied()
                        .unwrap_or(self.vlans[usize::from(vlan)].declared)
                    {
                        return fail(format!("VLAN {vlan} does not exist"));
                    }
                    let role = port_roles
                        .get(&port)
                        .cloned()
                        .unwrap_or_else(|| self.port_role(port));
                    if !role_carries(&role, vlan) {
                        let is = match role {
                            PortRole::Access { vlan } => format!("an access port of VLAN {vlan}"),
                            PortRole::Trunk { .. } => "a trunk without it".to_owned(),
                            PortRole::Routed { .. } => "a routed port".to_owned(),
                        };
                        return fail(format!("port {port} is not in VLAN {vlan}: it is {is}"));
                    }
                    let exists = macs
                        .get(&(vlan, mac))
                        .copied()
                        .unwrap_or(self.macs.get(vlan, mac).is_some());
                    if !exists {
                        if mac_count >= self.macs.max_entries() {
                            return fail("the MAC table is full".to_owned());
                        }
                        mac_count += 1;
                    }
                    macs.insert((vlan, mac), true);
                }
                Update::DelMac { vlan, mac } => {
                    let exists = macs
                        .get(&(vlan, mac))
                        .copied()
                        .unwrap_or(self.macs.get(vlan, mac).is_some());
                    if !exists {
                        return fail(format!("no MAC {} in VLAN {vlan}", mac_text(mac)));
                    }
                    mac_count -= 1;
                    macs.insert((vlan, mac), false);
                }
                Update::SetPolicy { policy, ref spec } => {
                    if !policies.is_live(policy, |p| self.srv6.policy_live(p)) {
                        return fail(format!("SRv6 policy {policy} does not exist"));
                    }
                    Srv6State::build_policy(spec, self.fib6.len()).map_err(|e| (index, e.0))?;
                }
                Update::AddPolicy { slot, ref spec } => {
                    let used = policies.is_live(slot, |p| self.srv6.policy_live(p));
                    check_slot(
                        slot,
                        policies.len,
                        used,
                        self.srv6
                            .policy_capacity()
                            .min(route_value::MAX_INDEX as usize + 1),
                        "SRv6 policy",
                    )
                    .map_err(|e| (index, e))?;
                    Srv6State::build_policy(spec, self.fib6.len()).map_err(|e| (index, e.0))?;
                    policies.take(slot);
                }
                Update::DelPolicy { slot } => {
                    if !policies.is_live(slot, |p| self.srv6.policy_live(p)) {
                        return fail(format!("SRv6 policy {slot} does not exist"));
                    }
                    if let Some(route) = self.route_pointing_at(&routes, Target::Srv6Policy(slot)) {
                        return fail(format!(
                            "SRv6 policy {slot} is in use by route {route}: move or delete its routes first"
                        ));
                    }
                    policies.live.insert(slot, false);
                }
                Update::AddSid {
                    slot,
                    ref spec,
                    via,
                } => {
                    let used = sids.is_live(slot, |s| self.srv6.sid_used(s));
                    check_slot(slot, sids.len, used, self.srv6.sid_capacity(), "SID")
                        .map_err(|e| (index, e))?;
                    let mut nexthop_count = self.nexthops.len() + nexthops.len();
                    let mut checked = (**spec).clone();
                    if let Some((interface, ip)) = via {
                        check_interface(interface)?;
                        if !matches!(spec.behavior, SidBehavior::EndX { .. }) {
                            return fail(format!(
                                "SID {}: only End.X and uA go to a neighbour",
                                spec.name
                            ));
                        }
                        if self.find_nexthop(interface, ip).is_none()
                            && !nexthops.contains(&(interface, ip))
                        {
                            nexthops.push((interface, ip));
                        }
                        nexthop_count = nexthop_count.max(1);
                        checked.behavior = SidBehavior::EndX {
                            target: RouteTarget::Nexthop(0),
                        };
                    }
                    Srv6State::build_sid(&checked, self.fib6.len(), nexthop_count, |g| {
                        groups.is_live(g, |g| self.group_live(g))
                    })
                    .map_err(|e| (index, e.0))?;
                    let key = (spec.vrf, mask6(spec.prefix, spec.len), spec.len);
                    let taken = sid_keys
                        .get(&key)
                        .copied()
                        .unwrap_or_else(|| self.srv6.sid_at(key.0, key.1, key.2))
                        .is_some();
                    if taken {
                        return fail(format!(
                            "{}/{} is already a local SID in VRF {}",
                            key.1, key.2, key.0
                        ));
                    }
                    sid_keys.insert(key, Some(slot));
                    let target = match spec.behavior {
                        SidBehavior::EndX { target } => Some(target),
                        _ => None,
                    };
                    sid_targets.insert(slot, target);
                    sids.take(slot);
                }
                Update::DelSid {
                    slot,
                    vrf,
                    prefix,
                    len,
                } => {
                    if len > 128 {
                        return fail(format!("prefix length {len} is longer than 128"));
                    }
                    let key = (vrf, mask6(prefix, len), len);
                    let at = sid_keys
                        .get(&key)
                        .copied()
                        .unwrap_or_else(|| self.srv6.sid_at(vrf, key.1, len));
                    if at != Some(slot) {
                        return fail(format!(
                            "no local SID {}/{len} in VRF {vrf} at slot {slot}",
                            key.1
                        ));
                    }
                    sid_keys.insert(key, None);
                    sid_targets.insert(slot, None);
                    sids.live.insert(slot, false);
                }
                Update::AddGroup {
                    slot,
                    ref members,
                    balance,
                } => {
                    let used = groups.is_live(slot, |g| self.group_live(g));
                    check_slot(
                        slot,
                        groups.len,
                        used,
                        route_value::MAX_INDEX as usize + 1,
                        "ECMP group",
                    )
                    .map_err(|e| (index, e))?;
                    if members.is_empty() {
                        return fail(format!("ECMP group {slot} needs at least one member"));
                    }
                    if balance.mode != BalanceMode::Hash && members.len() > MAX_BALANCED_MEMBERS {
                        return fail(format!(
                            "{} members: a {} group balances at most {MAX_BALANCED_MEMBERS}",
                            members.len(),
                            balance.mode.as_str()
                        ));
                    }
                    let mut seen = HashSet::new();
                    for &(interface, ip, weight) in members {
                        check_interface(interface)?;
                        if weight == 0 {
                            return fail(format!("member {ip}: weight must be at least 1"));
                        }
                        if !seen.insert((interface, ip)) {
                            return fail(format!("member {ip} is given twice"));
                        }
                        if self.find_nexthop(interface, ip).is_none()
                            && !nexthops.contains(&(interface, ip))
                        {
                            if self.nexthops.len() + nexthops.len()
                                > route_value::MAX_INDEX as usize
                            {
                                return fail("too many nexthops".to_owned());
                            }
                            nexthops.push((interface, ip));
                        }
                    }
                    groups.take(slot);
                    new_groups.insert(slot);
                }
                Update::DelGroup { slot } => {
                    if !groups.is_live(slot, |g| self.group_live(g)) {
                        return fail(format!("ECMP group {slot} does not exist"));
                    }
                    if let Some(route) = self.route_pointing_at(&routes, Target::Group(slot)) {
                        return fail(format!(
                            "ECMP group {slot} is in use by route {route}: move or delete its routes first"
                        ));
                    }
                    let current_sids = self
                        .srv6
                        .sids_pointing_at(RouteTarget::Group(slot))
                        .into_iter()
                        .filter(|s| !sid_targets.contains_key(s));
                    let batch_sids = sid_targets
                        .iter()
                        .filter(|(_, t)| **t == Some(RouteTarget::Group(slot)))
                        .map(|(s, _)| *s);
                    if let Some(sid) = current_sids.chain(batch_sids).next() {
                        return fail(format!(
                            "ECMP group {slot} is the adjacency of SID slot {sid}: delete that SID first"
                        ));
                    }
                    groups.live.insert(slot, false);
                    new_groups.remove(&slot);
                }
                Update::SetGroupBalance { group, balance } => {
                    let g = self
                        .group_to_change(group, &groups, &new_groups, "balancing")
                        .map_err(|e| (index, e))?;
                    let count = member_counts
                        .get(&group)
                        .copied()
                        .unwrap_or(g.members().len());
                    if balance.mode != BalanceMode::Hash && count > MAX_BALANCED_MEMBERS {
                        return fail(format!(
                            "{count} members: a {} group balances at most {MAX_BALANCED_MEMBERS}",
                            balance.mode.as_str()
                        ));
                    }
                }
                Update::AddVlan { id } => {
                    if !(1..=4094).contains(&id) {
                        return fail(format!("VLAN {id} is not 1..=4094"));
                    }
                    if self.vlan_declared(&vlans_declared, id) {
                        return fail(format!("VLAN {id} exists already"));
                    }
                    vlans_declared.insert(id, true);
                }
                Update::DelVlan { id } => {
                    if !(1..=4094).contains(&id) || !self.vlan_declared(&vlans_declared, id) {
                        return fail(format!("VLAN {id} does not exist"));
                    }
                    if let Some(i) = self.vlans[usize::from(id)].interface {
                        return fail(format!(
                            "VLAN {id} has an L3 interface ({i}): it goes only with a restart"
                        ));
                    }
                    for p in 0..self.ports.len() as u16 {
                        let role = port_roles
                            .get(&p)
                            .cloned()
                            .unwrap_or_else(|| self.port_role(p));
                        if role_has(&role, id) {
                            return fail(format!(
                                "port {p} is in VLAN {id}: move it to another VLAN first"
                            ));
                        }
                    }
                    vlans_declared.insert(id, false);
                }
                Update::SetPortVlans { port, ref role } => {
                    if usize::from(port) >= self.ports.len() {
                        return fail(format!("port {port} does not exist"));
                    }
                    if matches!(self.ports[usize::from(port)].mode, PortMode::Routed { .. }) {
                        return fail(format!(
                            "port {port} is routed: it becomes an L2 port only with a restart"
                        ));
                    }
                    let vlans: Vec<u16> = match role {
                        PortRole::Access { vlan } => vec![*vlan],
                        PortRole::Trunk { allowed, native } => {
                            allowed.iter().chain(native.iter()).copied().collect()
                        }
                        PortRole::Routed { .. } => {
                            return fail(format!("port {port} becomes routed only with a restart"));
                        }
                    };
                    for vlan in vlans {
                        if !(1..=4094).contains(&vlan) || !self.vlan_declared(&vlans_declared, vlan)
                        {
                            return fail(format!("VLAN {vlan} does not exist (add it first)"));
                        }
                    }
                    port_roles.insert(port, role.clone());
                }
                Update::SetPfc {
                    port,
                    tc,
                    thresholds,
                } => {
                    if usize::from(port) >= self.ports.len() {
                        return fail(format!("port {port} does not exist"));
                    }
                    if usize::from(tc) >= crate::qos::TC_COUNT {
                        return fail(format!("TC {tc} is not 0..=7"));
                    }
                    if thresholds.xon > thresholds.xoff {
                        return fail(format!(
                            "xon {} is above xoff {}: XON must be at or below XOFF",
                            thresholds.xon, thresholds.xoff
                        ));
                    }
                }
                Update::SetEcn { port, tc, ecn } => {
                    if usize::from(port) >= self.ports.len() {
                        return fail(format!("port {port} does not exist"));
                    }
                    if usize::from(tc) >= crate::qos::TC_COUNT {
                        return fail(format!("TC {tc} is not 0..=7"));
                    }
                    if let Some(p) = ecn {
                        if p.kmin > p.kmax {
                            return fail(format!("kmin {} is above kmax {}", p.kmin, p.kmax));
                        }
                        if !(0.0..=1.0).contains(&p.pmax) {
                            return fail(format!("pmax {} is not in 0..=1", p.pmax));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn vlan_declared(&self, batch: &HashMap<u16, bool>, id: u16) -> bool {
        batch
            .get(&id)
            .copied()
            .unwrap_or_else(|| self.vlans.get(usize::from(id)).is_some_and(|v| v.declared))
    }

    /// Every port's role as it stands (run-time VLAN changes included), by port number.
    pub fn port_roles(&self) -> Vec<PortRole> {
        (0..self.ports.len() as u16)
            .map(|p| self.port_role(p))
            .collect()
    }

    /// Port `port`'s VLAN membership as a role.
    fn port_role(&self, port: u16) -> PortRole {
        match &self.ports[usize::from(port)].mode {
            PortMode::Access { vlan } => PortRole::Access { vlan: *vlan },
            PortMode::Trunk { allowed, native } => PortRole::Trunk {
                allowed: (1..4095u16)
                    .filter(|v| allowed[usize::from(*v) / 64] & (1 << (v % 64)) != 0)
                    .filter(|v| Some(*v) != *native)
                    .collect(),
                native: *native,
            },
            PortMode::Routed { interface } => PortRole::Routed {
                interface: *interface,
            },
        }
    }

    /// Makes L2 port `port` a member of the VLANs of `role` (access or trunk) and of no
    /// other; its learned MACs are flushed (they are learned again in their new VLAN).
    fn set_port_role(&mut self, port: u16, role: &PortRole) {
        for vlan in &mut self.vlans {
            vlan.members.retain(|&m| m != port);
        }
        let join = |vlans: &mut Vec<super::VlanState>, vlan: u16| {
            let members = &mut vlans[usize::from(vlan)].members;
            if let Err(at) = members.binary_search(&port) {
                members.insert(at, port);
            }
        };
        let mode = match role {
            PortRole::Access { vlan } => {
                join(&mut self.vlans, *vlan);
                PortMode::Access { vlan: *vlan }
            }
            PortRole::Trunk { allowed, native } => {
                let mut bitmap = Box::new([0u64; 64]);
                for &vlan in allowed.iter().chain(native.iter()) {
                    bitmap[usize::from(vlan) / 64] |= 1 << (vlan % 64);
                    join(&mut self.vlans, vlan);
                }
                PortMode::Trunk {
                    allowed: bitmap,
                    native: *native,
                }
            }
            PortRole::Routed { .. } => return,
        };
        self.ports[usize::from(port)].mode = mode;
        self.macs.flush_port(port);
        // A VLAN interface's MTU is its ports' smallest.
        self.refresh_interface_mtus();
    }

    /// A route (`prefix/len in VRF v`) that will point at `target` once the batch's route
    /// changes so far (`batch`) apply: one of the batch's, or a current one it left alone.
    /// Scans the FIB: a deletion costs a pass over the routes.
    fn route_pointing_at(
        &self,
        batch: &HashMap<(u16, IpAddr, u8), Option<Target>>,
        target: Target,
    ) -> Option<String> {
        let text = |(vrf, prefix, len): (u16, IpAddr, u8)| format!("{prefix}/{len} in VRF {vrf}");
        if let Some((key, _)) = batch.iter().find(|(_, t)| **t == Some(target)) {
            return Some(text(*key));
        }
        let wanted = match target {
            Target::Group(g) => RouteTarget::Group(g),
            Target::Srv6Policy(p) => RouteTarget::Srv6Policy(p),
            _ => return None,
        };
        for vrf in 0..self.fib4.len() {
            let v16 = vrf as u16;
            let v4 = self.fib4[vrf].iter().map(|(p, l, x)| (IpAddr::V4(p), l, x));
            let v6 = self.fib6[vrf].iter().map(|(p, l, x)| (IpAddr::V6(p), l, x));
            for (prefix, len, value) in v4.chain(v6) {
                if route_value::decode(value) == wanted && !batch.contains_key(&(v16, prefix, len))
                {
                    return Some(text((v16, prefix, len)));
                }
            }
        }
        None
    }

    fn set_raw_route(&mut self, vrf: u16, prefix: IpAddr, len: u8, value: Option<u32>) {
        let vrf = usize::from(vrf);
        match (prefix, value) {
            (IpAddr::V4(p), Some(v)) => {
                let _ = self.fib4[vrf].insert(p, len, v);
            }
            (IpAddr::V4(p), None) => {
                self.fib4[vrf].remove(p, len);
            }
            (IpAddr::V6(p), Some(v)) => {
                let _ = self.fib6[vrf].insert(p, len, v);
            }
            (IpAddr::V6(p), None) => {
                self.fib6[vrf].remove(p, len);
            }
        }
    }

    fn nexthop_logged(&mut self, interface: u16, ip: IpAddr, undo: &mut Vec<Undo>) -> u32 {
        if let Some(id) = self.find_nexthop(interface, ip) {
            return id;
        }
        undo.push(Undo::NexthopsTruncate(self.nexthops.len()));
        self.nexthops
            .push(Nexthop::new(interface, ip, &self.interfaces));
        (self.nexthops.len() - 1) as u32
    }

    /// Applies `change` to ECMP group `group`, logging the group and its balancer as they were
    /// so the batch can be undone, then rebuilds the balancer over the new members.
    fn change_group<E: std::fmt::Display>(
        &mut self,
        group: u32,
        undo: &mut Vec<Undo>,
        change: impl FnOnce(&mut EcmpGroup) -> Result<usize, E>,
    ) -> Result<(), String> {
        let g = &mut self.groups[group as usize];
        let previous = Box::new(g.clone());
        change(g).map_err(|e| e.to_string())?;
        undo.push(Undo::Group {
            id: group,
            previous,
            balancer: Box::new(self.balancers[group as usize].clone()),
        });
        self.rebuild_balancer(group)
    }

    /// A new balancer for group `group` after its members changed: member indices, their
    /// ports and counters follow the new member list; flowlets start afresh (each chooses
    /// again with its next packet). The group's balancing counters start again in a new
    /// block (the end-of-run report keeps the one it was given at start), and a rebuilt
    /// group records no flowlet events.
    fn rebuild_balancer(&mut self, group: u32) -> Result<(), String> {
        let g = group as usize;
        let spec = *self.balancers[g].spec();
        let member_ports = self.member_ports(&self.groups[g]);
        self.balancers[g] = GroupBalancer::new(
            spec,
            group,
            &self.groups[g],
            &member_ports,
            u64::from(self.flow_hash_seed),
            false,
        )
        .map_err(|e| format!("ECMP group {group}: {e}"))?;
        Ok(())
    }

    /// Applies one validated update (not `SetEcn` or `SetPfc`), logging how to undo it. An error (a
    /// table ran out of room) leaves the log complete for what did apply.
    pub fn apply_update(&mut self, update: &Update, undo: &mut Vec<Undo>) -> Result<(), String> {
        self.forget_memos();
        match *update {
            Update::AddRoute {
                vrf,
                prefix,
                len,
                target,
            } => {
                let target = match target {
                    Target::Via { interface, ip } => {
                        RouteTarget::Nexthop(self.nexthop_logged(interface, ip, undo))
                    }
                    Target::Nexthop(n) => RouteTarget::Nexthop(n),
                    Target::Group(g) => RouteTarget::Group(g),
                    Target::Blackhole => RouteTarget::Blackhole,
                    Target::Srv6Policy(p) => RouteTarget::Srv6Policy(p),
                };
                let previous = self.raw_route(vrf, prefix, len);
                self.add_route(vrf, prefix, len, target).map_err(|e| e.0)?;
                undo.push(Undo::Route {
                    vrf,
                    prefix: masked(prefix, len),
                    len,
                    previous,
                });
            }
            Update::DelRoute { vrf, prefix, len } => {
                let previous = self.raw_route(vrf, prefix, len);
                self.remove_route(vrf, prefix, len);
                undo.push(Undo::Route {
                    vrf,
                    prefix: masked(prefix, len),
                    len,
                    previous,
                });
            }
            Update::AddNeighbor { interface, ip, mac } => {
                let id = self.nexthop_logged(interface, ip, undo);
                undo.push(Undo::NexthopMac {
                    id,
                    previous: self.nexthops[id as usize].mac,
                    pinned: self.nexthops[id as usize].pinned,
                });
                let vrf = self.interfaces[usize::from(interface)].vrf;
                let len = host_len(ip);
                undo.push(Undo::Route {
                    vrf,
                    prefix: ip,
                    len,
                    previous: self.raw_route(vrf, ip, len),
                });
                self.neighbor_pinned(interface, ip, mac);
            }
            Update::DelNeighbor { interface, ip } => {
                if let Some(id) = self.find_nexthop(interface, ip) {
                    undo.push(Undo::NexthopMac {
                        id,
                        previous: self.nexthops[id as usize].mac,
                        pinned: self.nexthops[id as usize].pinned,
                    });
                    self.nexthops[id as usize].pinned = false;
                    // The host route a connected neighbour got goes too (it is gleaned again
                    // if the host shows up).
                    let vrf = self.interfaces[usize::from(interface)].vrf;
                    let len = host_len(ip);
                    let previous = self.raw_route(vrf, ip, len);
                    if previous.map(route_value::decode) == Some(RouteTarget::Nexthop(id)) {
                        self.remove_route(vrf, ip, len);
                        undo.push(Undo::Route {
                            vrf,
                            prefix: ip,
                            len,
                            previous,
                        });
                    }
                }
                self.neighbor_lost(interface, ip);
            }
            Update::AddEcmpMember {
                group,
                interface,
                ip,
                weight,
            } => {
                let id = self.nexthop_logged(interface, ip, undo);
                let up = self.nexthop_port_up(interface);
                self.change_group(group, undo, |g| g.add_member(Member { id, weight, up }))?;
            }
            Update::DelEcmpMember {
                group,
                interface,
                ip,
            } => {
                let id = self
                    .find_nexthop(interface, ip)
                    .ok_or_else(|| format!("no nexthop {ip}"))?;
                self.change_group(group, undo, |g| g.remove_member(id))?;
            }
            Update::SetEcmpWeight {
                group,
                interface,
                ip,
                weight,
            } => {
                let id = self
                    .find_nexthop(interface, ip)
                    .ok_or_else(|| format!("no nexthop {ip}"))?;
                self.change_group(group, undo, |g| g.set_weight(id, weight))?;
            }
            Update::SetGroupBalance { group, balance } => {
                let g = group as usize;
                undo.push(Undo::Group {
                    id: group,
                    previous: Box::new(self.groups[g].clone()),
                    balancer: Box::new(self.balancers[g].clone()),
                });
                let member_ports = self.member_ports(&self.groups[g]);
                self.balancers[g] = self.balancers[g]
                    .rebalanced(
                        balance,
                        &self.groups[g],
                        &member_ports,
                        u64::from(self.flow_hash_seed),
                    )
                    .map_err(|e| format!("ECMP group {group}: {e}"))?;
            }
            Update::AddMac { vlan, mac, port } => {
                let previous = self.macs.get(vlan, mac);
                self.macs
                    .add_static(vlan, mac, port)
                    .map_err(|e| e.to_string())?;
                undo.push(Undo::Mac {
                    vlan,
                    mac,
                    previous,
                });
            }
            Update::DelMac { vlan, mac } => {
                let previous = self.macs.remove(vlan, mac);
                undo.push(Undo::Mac {
                    vlan,
                    mac,
                    previous,
                });
            }
            Update::SetPolicy { policy, ref spec } => {
                let previous = self
                    .srv6
                    .replace_policy(policy, spec, self.fib6.len())
                    .map_err(|e| e.0)?;
                undo.push(Undo::Policy {
                    index: policy,
                    previous: Box::new(previous),
                });
            }
            Update::AddSid {
                slot,
                ref spec,
                via,
            } => {
                let mut spec = (**spec).clone();
                if let Some((interface, ip)) = via {
                    spec.behavior = SidBehavior::EndX {
                        target: RouteTarget::Nexthop(self.nexthop_logged(interface, ip, undo)),
                    };
                }
                let sid = Srv6State::build_sid(&spec, self.fib6.len(), self.nexthops.len(), |g| {
                    self.group_live(g)
                })
                .map_err(|e| e.0)?;
                let done = self.srv6.add_sid(slot, &spec, sid).map_err(|e| e.0)?;
                undo.push(Undo::Srv6(Box::new(done)));
            }
            Update::DelSid {
                slot,
                vrf,
                prefix,
                len,
            } => {
                let done = self
                    .srv6
                    .del_sid(slot, vrf, mask6(prefix, len), len)
                    .map_err(|e| e.0)?;
                undo.push(Undo::Srv6(Box::new(done)));
            }
            Update::AddPolicy { slot, ref spec } => {
                let done = self
                    .srv6
                    .add_policy(slot, spec, self.fib6.len())
                    .map_err(|e| e.0)?;
                undo.push(Undo::Srv6(Box::new(done)));
            }
            Update::DelPolicy { slot } => {
                let done = self.srv6.del_policy(slot).map_err(|e| e.0)?;
                undo.push(Undo::Srv6(Box::new(done)));
            }
            Update::AddGroup {
                slot,
                ref members,
                balance,
            } => {
                let mut built = Vec::with_capacity(members.len());
                for &(interface, ip, weight) in members {
                    let id = self.nexthop_logged(interface, ip, undo);
                    built.push(Member {
                        id,
                        weight,
                        up: self.nexthop_port_up(interface),
                    });
                }
                let group = EcmpGroup::with_buckets(self.ecmp_buckets, &built)
                    .map_err(|e| format!("ECMP group {slot}: {e}"))?;
                let balancer = GroupBalancer::new(
                    balance,
                    slot,
                    &group,
                    &self.member_ports(&group),
                    u64::from(self.flow_hash_seed),
                    false,
                )
                .map_err(|e| format!("ECMP group {slot}: {e}"))?;
                let s = slot as usize;
                let previous = if s == self.groups.len() {
                    self.groups.push(group);
                    self.balancers.push(balancer);
                    self.group_live.push(true);
                    None
                } else if s < self.groups.len() && !self.group_live[s] {
                    self.group_live[s] = true;
                    Some(Box::new((
                        std::mem::replace(&mut self.groups[s], group),
                        std::mem::replace(&mut self.balancers[s], balancer),
                    )))
                } else {
                    return Err(format!("ECMP group slot {slot} is taken"));
                };
                undo.push(Undo::GroupAdded { slot, previous });
            }
            Update::DelGroup { slot } => {
                if !self.group_live(slot) {
                    return Err(format!("ECMP group {slot} does not exist"));
                }
                self.group_live[slot as usize] = false;
                undo.push(Undo::GroupDeleted { slot });
            }
            Update::AddVlan { id } => {
                let vlan = &mut self.vlans[usize::from(id)];
                undo.push(Undo::VlanDeclared {
                    id,
                    previous: vlan.declared,
                });
                vlan.declared = true;
            }
            Update::DelVlan { id } => {
                let entries: Vec<([u8; 6], MacEntry)> = self
                    .macs
                    .iter()
                    .filter(|(v, _, _)| *v == id)
                    .map(|(_, mac, e)| (mac, e))
                    .collect();
                for (mac, entry) in entries {
                    self.macs.remove(id, mac);
                    undo.push(Undo::Mac {
                        vlan: id,
                        mac,
                        previous: Some(entry),
                    });
                }
                let vlan = &mut self.vlans[usize::from(id)];
                undo.push(Undo::VlanDeclared {
                    id,
                    previous: vlan.declared,
                });
                vlan.declared = false;
            }
            Update::SetPortVlans { port, ref role } => {
                undo.push(Undo::PortRole {
                    port,
                    previous: self.port_role(port),
                });
                // Static MACs on the port in VLANs it leaves go (as a deleted VLAN's do):
                // frames to them would otherwise cross into the port's new VLANs.
                let stranded: Vec<(u16, [u8; 6], MacEntry)> = self
                    .macs
                    .iter()
                    .filter(|&(vlan, _, e)| {
                        e.is_static && e.port == port && !role_carries(role, vlan)
                    })
                    .collect();
                for (vlan, mac, entry) in stranded {
                    self.macs.remove(vlan, mac);
                    undo.push(Undo::Mac {
                        vlan,
                        mac,
                        previous: Some(entry),
                    });
                }
                self.set_port_role(port, role);
            }
            Update::SetEcn { .. } | Update::SetPfc { .. } => {}
        }
        Ok(())
    }

    /// Takes back what `apply_update` logged, newest first.
    pub fn undo_updates(&mut self, undo: Vec<Undo>) {
        self.forget_memos();
        for entry in undo.into_iter().rev() {
            match entry {
                Undo::Route {
                    vrf,
                    prefix,
                    len,
                    previous,
                } => self.set_raw_route(vrf, prefix, len, previous),
                Undo::NexthopsTruncate(len) => self.nexthops.truncate(len),
                Undo::NexthopMac {
                    id,
                    previous,
                    pinned,
                } => {
                    let router_mac = self.router_mac;
                    if let Some(nh) = self.nexthops.get_mut(id as usize) {
                        nh.set_mac(previous, router_mac);
                        nh.pinned = pinned;
                    }
                }
                Undo::Group {
                    id,
                    previous,
                    balancer,
                } => {
                    self.groups[id as usize] = *previous;
                    self.balancers[id as usize] = *balancer;
                }
                Undo::Policy { index, previous } => self.srv6.restore_policy(index, *previous),
                Undo::Srv6(done) => self.srv6.undo(*done),
                Undo::GroupAdded { slot, previous } => match previous {
                    None => {
                        let s = slot as usize;
                        self.groups.truncate(s);
                        self.balancers.truncate(s);
                        self.group_live.truncate(s);
                    }
                    Some(old) => {
                        let (group, balancer) = *old;
                        self.groups[slot as usize] = group;
                        self.balancers[slot as usize] = balancer;
                        self.group_live[slot as usize] = false;
                    }
                },
                Undo::GroupDeleted { slot } => self.group_live[slot as usize] = true,
                Undo::VlanDeclared { id, previous } => {
                    self.vlans[usize::from(id)].declared = previous;
                }
                Undo::PortRole { port, previous } => self.set_port_role(port, &previous),
                Undo::Mac {
                    vlan,
                    mac,
                    previous,
                } => {
                    self.macs.remove(vlan, mac);
                    // A learned entry is not put back: the host is learned again on its
                    // next frame.
                    if let Some(entry) = previous.filter(|e| e.is_static) {
                        let _ = self.macs.add_static(vlan, mac, entry.port);
                    }
                }
            }
        }
    }

    /// A snapshot of one table.
    pub fn dump(&self, kind: DumpKind) -> Dump {
        match kind {
            DumpKind::Routes { vrf, limit } => {
                let mut routes = Vec::new();
                let mut total = 0;
                for v in 0..self.fib4.len() {
                    let v16 = v as u16;
                    if vrf.is_some_and(|want| want != v16) {
                        continue;
                    }
                    total += self.fib4[v].len() + self.fib6[v].len();
                    let room = limit.saturating_sub(routes.len());
                    let v4 = self.fib4[v].iter().map(|(p, l, x)| (IpAddr::V4(p), l, x));
                    let v6 = self.fib6[v].iter().map(|(p, l, x)| (IpAddr::V6(p), l, x));
                    routes.extend(
                        v4.chain(v6)
                            .take(room)
                            .map(|(prefix, len, value)| RouteEntry {
                                vrf: v16,
                                prefix,
                                len,
                                target: route_value::decode(value),
                            }),
                    );
                }
                routes.sort_by_key(|r| (r.vrf, r.prefix, r.len));
                Dump::Routes { total, routes }
            }
            DumpKind::Nexthops => Dump::Nexthops(
                self.nexthops
                    .iter()
                    .enumerate()
                    .map(|(id, n)| NexthopEntry {
                        id: id as u32,
                        interface: n.interface,
                        ip: n.ip,
                        mac: n.mac,
                        // A learned one's reachability is the worker's to tell.
                        state: match (n.pinned, n.mac) {
                            (true, _) => "static",
                            (false, Some(_)) => "reachable",
                            (false, None) => "unresolved",
                        },
                    })
                    .collect(),
            ),
            DumpKind::Groups => Dump::Groups(
                self.groups
                    .iter()
                    .zip(&self.balancers)
                    .enumerate()
                    .filter(|(id, _)| self.group_live[*id])
                    .map(|(id, (g, b))| {
                        let spec = b.spec();
                        let c = b.counters();
                        let at = |i: usize| {
                            c.members
                                .get(i)
                                .map_or((0, 0), |m| (m.packets.get(), m.bytes.get()))
                        };
                        GroupEntry {
                            id: id as u32,
                            buckets: g.bucket_count(),
                            members: g
                                .members()
                                .iter()
                                .enumerate()
                                .map(|(i, m)| GroupMemberEntry {
                                    nexthop: m.id,
                                    weight: m.weight,
                                    up: m.up,
                                    buckets: g.buckets_of(m.id),
                                    packets: at(i).0,
                                    bytes: at(i).1,
                                })
                                .collect(),
                            mode: spec.mode.as_str(),
                            choice: spec.choice.as_str(),
                            flowlet_timeout_ps: spec.timeout,
                            flowlet_table_size: spec.table_size,
                            avoid_ecn: spec.avoid_ecn,
                            flowlets: c.flowlets.get(),
                            moves: c.moves.get(),
                            forced_moves: c.forced_moves.get(),
                        }
                    })
                    .collect(),
            ),
            DumpKind::Macs { limit } => {
                let mut macs: Vec<MacDumpEntry> = self
                    .macs
                    .iter()
                    .take(limit)
                    .map(|(vlan, mac, e)| MacDumpEntry {
                        vlan,
                        mac,
                        port: e.port,
                        is_static: e.is_static,
                    })
                    .collect();
                macs.sort_by_key(|m| (m.vlan, m.mac));
                Dump::Macs {
                    total: self.macs.len(),
                    macs,
                }
            }
            DumpKind::Sids => Dump::Sids(self.srv6.sid_entries()),
            DumpKind::Ports => {
                Dump::Ports(self.ports.iter().map(|p| PortEntry { up: p.up }).collect())
            }
        }
    }
}
