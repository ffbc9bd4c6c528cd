//! Run-time changes to the forwarder's tables (`crate::ctl`): whole-batch validation, apply
//! with an undo log, and snapshots. Called by the worker between bursts, never per packet.

use super::route_value;
use super::{Forwarder, Nexthop, mask4, mask6};
use crate::ctl::{
    Dump, DumpKind, GroupEntry, GroupMemberEntry, MacDumpEntry, NexthopEntry, PortEntry,
    RouteEntry, Target, Update,
};
use crate::pipeline::spec::{Attachment, RouteTarget};
use crate::tables::ecmp::{EcmpGroup, Member};
use crate::tables::flowlet::GroupBalancer;
use crate::tables::mac::MacEntry;
use std::collections::HashMap;
use std::net::IpAddr;

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

    /// Checks every update of a batch against the tables as they will be when the updates
    /// before it have applied. `Err((index, message))` names the first refused update.
    /// `SetEcn` is the traffic manager's and only checked for shape here.
    pub fn validate_updates(&self, updates: &[Update]) -> Result<(), (usize, String)> {
        let mut routes: HashMap<(u16, IpAddr, u8), bool> = HashMap::new();
        let mut nexthops: Vec<(u16, IpAddr)> = Vec::new();
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
                        Target::Group(g) if g as usize >= self.groups.len() => {
                            return fail(format!("ECMP group {g} does not exist"));
                        }
                        Target::Srv6Policy(p) if p as usize >= self.srv6.policy_count() => {
                            return fail(format!("SRv6 policy {p} does not exist"));
                        }
                        _ => {}
                    }
                    routes.insert(key, true);
                }
                Update::DelRoute { vrf, prefix, len } => {
                    check_route(vrf, prefix, len)?;
                    let key = (vrf, masked(prefix, len), len);
                    let current = self.raw_route(vrf, prefix, len);
                    let exists = routes.get(&key).copied().unwrap_or(current.is_some());
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
                    routes.insert(key, false);
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
                    let Some(g) = self.groups.get(group as usize) else {
                        return fail(format!("ECMP group {group} does not exist"));
                    };
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
                    let Some(g) = self.groups.get(group as usize) else {
                        return fail(format!("ECMP group {group} does not exist"));
                    };
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
                    let Some(g) = self.groups.get(group as usize) else {
                        return fail(format!("ECMP group {group} does not exist"));
                    };
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
                    self.srv6
                        .check_policy(policy, spec, self.fib6.len())
                        .map_err(|e| (index, e.0))?;
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
        self.nexthops.push(Nexthop {
            interface,
            ip,
            mac: None,
            last_request: None,
        });
        (self.nexthops.len() - 1) as u32
    }

    /// A new balancer for group `group` after its members changed: member indices, their
    /// ports and counters follow the new member list; flowlets start afresh (each chooses
    /// again with its next packet). The group's balancing counters start again in a new
    /// block (the end-of-run report keeps the one it was given at start), and a rebuilt
    /// group records no flowlet events.
    fn rebuild_balancer(&mut self, group: u32) -> Result<(), String> {
        let g = group as usize;
        let spec = *self.balancers[g].spec();
        let member_ports: Vec<Option<u16>> = self.groups[g]
            .members()
            .iter()
            .map(|m| {
                let nexthop = &self.nexthops[m.id as usize];
                match self.interfaces[usize::from(nexthop.interface)].attachment {
                    Attachment::Port(p) => Some(p),
                    Attachment::Vlan(_) => None,
                }
            })
            .collect();
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

    /// Applies one validated update (not `SetEcn`), logging how to undo it. An error (a
    /// table ran out of room) leaves the log complete for what did apply.
    pub fn apply_update(&mut self, update: &Update, undo: &mut Vec<Undo>) -> Result<(), String> {
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
                });
                let vrf = self.interfaces[usize::from(interface)].vrf;
                let len = host_len(ip);
                undo.push(Undo::Route {
                    vrf,
                    prefix: ip,
                    len,
                    previous: self.raw_route(vrf, ip, len),
                });
                self.neighbor_resolved(interface, ip, mac);
            }
            Update::DelNeighbor { interface, ip } => {
                if let Some(id) = self.find_nexthop(interface, ip) {
                    undo.push(Undo::NexthopMac {
                        id,
                        previous: self.nexthops[id as usize].mac,
                    });
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
                let g = &mut self.groups[group as usize];
                let previous = Box::new(g.clone());
                g.add_member(Member { id, weight, up })
                    .map_err(|e| e.to_string())?;
                undo.push(Undo::Group {
                    id: group,
                    previous,
                    balancer: Box::new(self.balancers[group as usize].clone()),
                });
                self.rebuild_balancer(group)?;
            }
            Update::DelEcmpMember {
                group,
                interface,
                ip,
            } => {
                let id = self
                    .find_nexthop(interface, ip)
                    .ok_or_else(|| format!("no nexthop {ip}"))?;
                let g = &mut self.groups[group as usize];
                let previous = Box::new(g.clone());
                g.remove_member(id).map_err(|e| e.to_string())?;
                undo.push(Undo::Group {
                    id: group,
                    previous,
                    balancer: Box::new(self.balancers[group as usize].clone()),
                });
                self.rebuild_balancer(group)?;
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
                let g = &mut self.groups[group as usize];
                let previous = Box::new(g.clone());
                g.set_weight(id, weight).map_err(|e| e.to_string())?;
                undo.push(Undo::Group {
                    id: group,
                    previous,
                    balancer: Box::new(self.balancers[group as usize].clone()),
                });
                self.rebuild_balancer(group)?;
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
            Update::SetEcn { .. } => {}
        }
        Ok(())
    }

    /// Takes back what `apply_update` logged, newest first.
    pub fn undo_updates(&mut self, undo: Vec<Undo>) {
        for entry in undo.into_iter().rev() {
            match entry {
                Undo::Route {
                    vrf,
                    prefix,
                    len,
                    previous,
                } => self.set_raw_route(vrf, prefix, len, previous),
                Undo::NexthopsTruncate(len) => self.nexthops.truncate(len),
                Undo::NexthopMac { id, previous } => {
                    if let Some(nh) = self.nexthops.get_mut(id as usize) {
                        nh.mac = previous;
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
                    })
                    .collect(),
            ),
            DumpKind::Groups => Dump::Groups(
                self.groups
                    .iter()
                    .zip(&self.balancers)
                    .enumerate()
                    .map(|(id, (g, b))| {
                        let spec = b.spec();
                        let c = b.counters();
                        let at = |v: &[crate::counters::Counter], i: usize| {
                            v.get(i).map_or(0, |c| c.get())
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
                                    packets: at(&c.member_packets, i),
                                    bytes: at(&c.member_bytes, i),
                                })
                                .collect(),
                            mode: spec.mode.as_str(),
                            choice: spec.choice.as_str(),
                            flowlet_timeout_ps: spec.timeout,
                            flowlet_table_size: spec.table_size,
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
            DumpKind::Ports => {
                Dump::Ports(self.ports.iter().map(|p| PortEntry { up: p.up }).collect())
            }
        }
    }
}
