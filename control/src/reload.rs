//! `ironclos reload`: the difference between the config the switch last loaded and the file
//! as it is now, as one batch of run-time updates (applied atomically, like any `update`).
//!
//! What can change without a restart: routes, static neighbours, ECMP groups (added, removed,
//! their members, weights and balancing), static MACs, ECN thresholds, SRv6 policies (added,
//! removed, their paths), local SIDs (added, removed, changed), VLANs without an L3 interface
//! (added, removed) and L2 ports' VLANs. Anything else that differs (ports, routed ports, VLAN
//! interfaces, interfaces, VRFs, other QoS settings, `[dataplane]`, `[control]`) is refused
//! with the list of what needs a restart, and nothing is applied.
//!
//! Groups and policies are matched by name and SIDs by VRF and prefix; their slots in the
//! running switch come from the server's names (`Names`), so objects `ctl` created or deleted
//! since do not shift them.

use crate::config::Config;
use crate::server::Names;
use dataplane::ctl::{Target, Update};
use dataplane::pipeline::spec::{
    PortRole, RouteTarget, SidBehavior, SidSpec, SwitchSpec, VlanSpec,
};
use dataplane::qos::TC_COUNT;
use dataplane::tables::flowlet::BalanceMode;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// The updates that turn `old` into `new` on a switch whose names are `names`, with the name
/// of each group they create (by slot), or what needs a restart.
pub fn diff(
    old: &Config,
    new: &Config,
    names: &Names,
) -> Result<(Vec<Update>, HashMap<u32, String>), String> {
    let mut restart = Vec::new();
    let mut check = |what: &str, same: bool| {
        if !same {
            restart.push(what.to_owned());
        }
    };
    check("switch.name", old.name == new.name);
    check("dataplane.mode", old.mode == new.mode);
    check(
        "[dataplane] lcores, burst, mbufs or descriptors",
        (
            old.main_lcore,
            &old.worker_lcores,
            old.burst,
            old.mbufs,
            old.mbuf_cache,
            old.rx_descriptors,
            old.tx_descriptors,
        ) == (
            new.main_lcore,
            &new.worker_lcores,
            new.burst,
            new.mbufs,
            new.mbuf_cache,
            new.rx_descriptors,
            new.tx_descriptors,
        ),
    );
    check("dataplane.eal", old.eal == new.eal);
    check("[[port]] names, devargs or MTUs", old.ports == new.ports);
    check("[control]", old.control == new.control);
    check("VRFs", old.vrf_names() == new.vrf_names());
    let (Some(a), Some(b)) = (old.switch_spec(), new.switch_spec()) else {
        return if restart.is_empty() {
            Ok((Vec::new(), HashMap::new()))
        } else {
            Err(needs_restart(&restart))
        };
    };
    check("switch.router_mac", a.router_mac == b.router_mac);
    // L2 ports may change VLANs and VLANs without an L3 interface may come and go; routed
    // ports and VLAN interfaces need a restart.
    check(
        "port roles (routed ports, or a port becoming routed or L2)",
        a.ports.len() == b.ports.len()
            && a.ports.iter().zip(&b.ports).all(|(x, y)| {
                x == y
                    || !(matches!(x, PortRole::Routed { .. })
                        || matches!(y, PortRole::Routed { .. }))
            }),
    );
    let svis = |s: &SwitchSpec| -> Vec<VlanSpec> {
        s.vlans
            .iter()
            .filter(|v| v.interface.is_some())
            .cloned()
            .collect()
    };
    check("VLAN interfaces", svis(&a) == svis(&b));
    check(
        "L3 interfaces or their addresses",
        a.interfaces == b.interfaces,
    );
    check(
        "[l2] or [ecmp] settings",
        (
            a.mac_aging,
            a.mac_capacity,
            a.flow_hash_seed,
            a.ecmp_buckets,
        ) == (
            b.mac_aging,
            b.mac_capacity,
            b.flow_hash_seed,
            b.ecmp_buckets,
        ),
    );
    let without_ecn = |spec: &SwitchSpec| {
        let mut qos = spec.qos.clone();
        for port in &mut qos.ports {
            for tc in &mut port.tcs {
                tc.ecn = None;
            }
        }
        qos
    };
    check(
        "QoS other than ECN thresholds",
        without_ecn(&a) == without_ecn(&b),
    );
    if !restart.is_empty() {
        return Err(needs_restart(&restart));
    }
    let sides = Sides {
        a: &a,
        b: &b,
        groups_a: old.group_names(),
        groups_b: new.group_names(),
    };
    sides.diff(names)
}

fn needs_restart(what: &[String]) -> String {
    format!(
        "these changes need a restart (nothing was applied): {}",
        what.join("; ")
    )
}

/// Where a route goes, by name (so that slots do not matter when comparing).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Named {
    Via(u16, IpAddr),
    Group(String),
    Policy(String),
    Blackhole,
}

/// The two configs' specs and group names.
struct Sides<'a> {
    a: &'a SwitchSpec,
    b: &'a SwitchSpec,
    groups_a: &'a [String],
    groups_b: &'a [String],
}

fn named(spec: &SwitchSpec, groups: &[String], target: RouteTarget) -> Named {
    match target {
        RouteTarget::Nexthop(i) => {
            let nh = spec.nexthops[i as usize];
            Named::Via(nh.interface, nh.ip)
        }
        RouteTarget::Group(g) => Named::Group(groups[g as usize].clone()),
        RouteTarget::Srv6Policy(p) => Named::Policy(spec.srv6.policies[p as usize].name.clone()),
        // Connected and local routes come from interfaces, which did not change.
        RouteTarget::Blackhole | RouteTarget::Connected(_) | RouteTarget::Local => Named::Blackhole,
    }
}

fn members(spec: &SwitchSpec, group: usize) -> BTreeMap<(u16, IpAddr), u32> {
    spec.groups[group]
        .members
        .iter()
        .map(|&(nh, weight)| {
            let n = spec.nexthops[nh as usize];
            ((n.interface, n.ip), weight)
        })
        .collect()
}

/// A SID compared across configs: its End.X target by name.
fn sid_key(spec: &SwitchSpec, groups: &[String], sid: &SidSpec) -> (SidSpec, Option<Named>) {
    let target = match sid.behavior {
        SidBehavior::EndX { target } => Some(named(spec, groups, target)),
        _ => None,
    };
    let mut plain = sid.clone();
    if target.is_some() {
        plain.behavior = SidBehavior::EndX {
            target: RouteTarget::Blackhole,
        };
    }
    (plain, target)
}

impl Sides<'_> {
    /// Updates from `a` to `b`. Order: neighbours, new groups and policies, members, SIDs
    /// (deleted first, so a changed one can come back), routes, ECN; then removals (routes
    /// before the groups and policies they used), with a kept group's new balancing after its
    /// members' removals unless it is hashing.
    fn diff(&self, names: &Names) -> Result<(Vec<Update>, HashMap<u32, String>), String> {
        let (a, b) = (self.a, self.b);
        let mut scratch = names.clone();
        let mut group_names = HashMap::new();
        let mut updates = Vec::new();
        let mut removals = Vec::new();
        let mut rebalances = Vec::new();
        let note = |scratch: &mut Names, update: Update, name: Option<&str>| {
            scratch.note(&update, name);
            update
        };

        let neighbors = |s: &SwitchSpec| -> HashMap<(u16, IpAddr), [u8; 6]> {
            s.static_neighbors
                .iter()
                .map(|n| ((n.interface, n.ip), n.mac))
                .collect()
        };
        let (na, nb) = (neighbors(a), neighbors(b));
        for (&(interface, ip), &mac) in &nb {
            if na.get(&(interface, ip)) != Some(&mac) {
                updates.push(Update::AddNeighbor { interface, ip, mac });
            }
        }

        // VLANs first (ports join new ones), then L2 ports' membership; VLANs go last.
        for v in &b.vlans {
            if !a.vlans.iter().any(|x| x.id == v.id) {
                updates.push(note(&mut scratch, Update::AddVlan { id: v.id }, None));
            }
        }
        for (port, (ra, rb)) in a.ports.iter().zip(&b.ports).enumerate() {
            if ra != rb {
                let update = Update::SetPortVlans {
                    port: port as u16,
                    role: rb.clone(),
                };
                updates.push(note(&mut scratch, update, None));
            }
        }

        // Groups: new ones are created, kept ones get their member changes.
        for (gb, name) in self.groups_b.iter().enumerate() {
            let mb = members(b, gb);
            match self.groups_a.iter().position(|n| n == name) {
                None => {
                    let slot = free_group_slot(&scratch);
                    let update = Update::AddGroup {
                        slot,
                        members: mb.iter().map(|(&(i, ip), &w)| (i, ip, w)).collect(),
                        balance: b.groups[gb].balance,
                    };
                    updates.push(note(&mut scratch, update, Some(name)));
                    group_names.insert(slot, name.clone());
                }
                Some(ga) => {
                    let slot = names.group(name)?;
                    let balance = b.groups[gb].balance;
                    if a.groups[ga].balance != balance {
                        // Hashing takes any number of members: set it before members are
                        // added; a balanced mode after they are removed, when the group has
                        // no more members than the new config allows it.
                        let update = Update::SetGroupBalance {
                            group: slot,
                            balance,
                        };
                        if balance.mode == BalanceMode::Hash {
                            updates.push(update);
                        } else {
                            rebalances.push(update);
                        }
                    }
                    let ma = members(a, ga);
                    for (&(interface, ip), &weight) in &mb {
                        match ma.get(&(interface, ip)) {
                            None => updates.push(Update::AddEcmpMember {
                                group: slot,
                                interface,
                                ip,
                                weight,
                            }),
                            Some(&w) if w != weight => updates.push(Update::SetEcmpWeight {
                                group: slot,
                                interface,
                                ip,
                                weight,
                            }),
                            Some(_) => {}
                        }
                    }
                    for &(interface, ip) in ma.keys() {
                        if !mb.contains_key(&(interface, ip)) {
                            removals.push(Update::DelEcmpMember {
                                group: slot,
                                interface,
                                ip,
                            });
                        }
                    }
                }
            }
        }
        let mut late_removals = Vec::new();
        for name in self.groups_a {
            if !self.groups_b.contains(name) {
                late_removals.push(Update::DelGroup {
                    slot: names.group(name)?,
                });
            }
        }

        // Policies by name.
        for pb in &b.srv6.policies {
            match a.srv6.policies.iter().find(|p| p.name == pb.name) {
                None => {
                    let slot = free_policy_slot(&scratch);
                    let update = Update::AddPolicy {
                        slot,
                        spec: Box::new(pb.clone()),
                    };
                    updates.push(note(&mut scratch, update, None));
                }
                Some(pa) if pa != pb => updates.push(Update::SetPolicy {
                    policy: names.policy(&pb.name)?,
                    spec: Box::new(pb.clone()),
                }),
                Some(_) => {}
            }
        }
        for pa in &a.srv6.policies {
            if !b.srv6.policies.iter().any(|p| p.name == pa.name) {
                late_removals.push(Update::DelPolicy {
                    slot: names.policy(&pa.name)?,
                });
            }
        }

        // SIDs by (VRF, prefix): a changed one is deleted and added again.
        let keyed = |spec: &SwitchSpec, groups: &[String]| -> HashMap<_, _> {
            spec.srv6
                .sids
                .iter()
                .map(|s| ((s.vrf, s.prefix, s.len), sid_key(spec, groups, s)))
                .collect()
        };
        let (sa, sb) = (keyed(a, self.groups_a), keyed(b, self.groups_b));
        for sid in &a.srv6.sids {
            let key = (sid.vrf, sid.prefix, sid.len);
            if sb.get(&key) != sa.get(&key) {
                let slot = scratch
                    .sid_slot(sid.vrf, sid.prefix, sid.len)
                    .ok_or_else(|| format!("SID {} is not in the running switch", sid.name))?;
                let update = Update::DelSid {
                    slot,
                    vrf: sid.vrf,
                    prefix: sid.prefix,
                    len: sid.len,
                };
                updates.push(note(&mut scratch, update, None));
            }
        }
        for sid in &b.srv6.sids {
            let key = (sid.vrf, sid.prefix, sid.len);
            if sa.get(&key) == sb.get(&key) {
                continue;
            }
            let mut spec = sid.clone();
            let mut via = None;
            if let SidBehavior::EndX { target } = sid.behavior {
                match named(b, self.groups_b, target) {
                    Named::Via(interface, ip) => {
                        via = Some((interface, ip));
                        spec.behavior = SidBehavior::EndX {
                            target: RouteTarget::Nexthop(u32::MAX),
                        };
                    }
                    Named::Group(g) => {
                        spec.behavior = SidBehavior::EndX {
                            target: RouteTarget::Group(scratch.group(&g)?),
                        };
                    }
                    _ => {}
                }
            }
            let update = Update::AddSid {
                slot: scratch.next_sid_slot(),
                spec: Box::new(spec),
                via,
            };
            updates.push(note(&mut scratch, update, None));
        }

        // Routes, their targets resolved through the names as the batch leaves them.
        let routes = |s: &SwitchSpec, groups: &[String]| -> HashMap<(u16, IpAddr, u8), Named> {
            s.routes
                .iter()
                .map(|r| ((r.vrf, r.prefix, r.len), named(s, groups, r.target)))
                .collect()
        };
        let (ra, rb) = (routes(a, self.groups_a), routes(b, self.groups_b));
        for r in &b.routes {
            let key = (r.vrf, r.prefix, r.len);
            if ra.get(&key) == rb.get(&key) {
                continue;
            }
            let target = match &rb[&key] {
                Named::Via(interface, ip) => Target::Via {
                    interface: *interface,
                    ip: *ip,
                },
                Named::Group(g) => Target::Group(scratch.group(g)?),
                Named::Policy(p) => Target::Srv6Policy(scratch.policy(p)?),
                Named::Blackhole => Target::Blackhole,
            };
            updates.push(Update::AddRoute {
                vrf: r.vrf,
                prefix: r.prefix,
                len: r.len,
                target,
            });
        }
        for r in &a.routes {
            if !rb.contains_key(&(r.vrf, r.prefix, r.len)) {
                removals.push(Update::DelRoute {
                    vrf: r.vrf,
                    prefix: r.prefix,
                    len: r.len,
                });
            }
        }

        let macs = |s: &SwitchSpec| -> HashMap<(u16, [u8; 6]), u16> {
            s.static_macs
                .iter()
                .map(|m| ((m.vlan, m.mac), m.port))
                .collect()
        };
        let (xa, xb) = (macs(a), macs(b));
        for m in &b.static_macs {
            if xa.get(&(m.vlan, m.mac)) != Some(&m.port) {
                updates.push(Update::AddMac {
                    vlan: m.vlan,
                    mac: m.mac,
                    port: m.port,
                });
            }
        }
        for m in &a.static_macs {
            if !xb.contains_key(&(m.vlan, m.mac)) {
                removals.push(Update::DelMac {
                    vlan: m.vlan,
                    mac: m.mac,
                });
            }
        }
        for (port, (pa, pb)) in a.qos.ports.iter().zip(&b.qos.ports).enumerate() {
            for tc in 0..TC_COUNT {
                if pa.tcs[tc].ecn != pb.tcs[tc].ecn {
                    updates.push(Update::SetEcn {
                        port: port as u16,
                        tc: tc as u8,
                        ecn: pb.tcs[tc].ecn,
                    });
                }
            }
        }
        for (&(interface, ip), _) in na.iter().filter(|(k, _)| !nb.contains_key(k)) {
            late_removals.push(Update::DelNeighbor { interface, ip });
        }
        for v in &a.vlans {
            if !b.vlans.iter().any(|x| x.id == v.id) {
                late_removals.push(Update::DelVlan { id: v.id });
            }
        }
        updates.extend(removals);
        updates.extend(rebalances);
        updates.extend(late_removals);
        Ok((updates, group_names))
    }
}

fn free_group_slot(names: &Names) -> u32 {
    names
        .groups
        .iter()
        .position(String::is_empty)
        .unwrap_or(names.groups.len()) as u32
}

fn free_policy_slot(names: &Names) -> u32 {
    let policies = names.policies();
    policies
        .iter()
        .position(String::is_empty)
        .unwrap_or(policies.len()) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(extra: &str) -> Config {
        let text = format!(
            r#"[switch]
name = "r"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
[[port]]
name = "p0"
devargs = "net_null0"
ipv4 = ["10.255.0.1/31"]
[[port]]
name = "p1"
devargs = "net_null1"
ipv4 = ["10.255.0.3/31"]
[[nexthop_group]]
name = "up"
members = [{{ port = "p0", via = "10.255.0.0" }}]
{extra}"#
        );
        Config::parse(Path::new("r.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_difference_is_routes_members_and_macs_and_structure_needs_a_restart() {
        let old = config(
            "[[route]]\nprefix = \"10.1.0.0/16\"\ngroup = \"up\"\n\
             [[route]]\nprefix = \"10.2.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"p0\"\n",
        );
        assert_eq!(
            diff(&old, &old, &Names::of(&old)).map(|(u, _)| u),
            Ok(Vec::new()),
            "no change, no update"
        );
        let new = config(
            "[[route]]\nprefix = \"10.1.0.0/16\"\ngroup = \"up\"\n\
             [[route]]\nprefix = \"10.3.0.0/16\"\nvia = \"10.255.0.2\"\nport = \"p1\"\n",
        );
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            diff(&old, &new, &Names::of(&old)).unwrap().0,
            vec![
                Update::AddRoute {
                    vrf: 0,
                    prefix: ip("10.3.0.0"),
                    len: 16,
                    target: Target::Via {
                        interface: 1,
                        ip: ip("10.255.0.2")
                    }
                },
                Update::DelRoute {
                    vrf: 0,
                    prefix: ip("10.2.0.0"),
                    len: 16
                },
            ]
        );
        let mut text_members = config(
            "[[route]]\nprefix = \"10.1.0.0/16\"\ngroup = \"up\"\n\
             [[route]]\nprefix = \"10.2.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"p0\"\n",
        );
        // A structural change is refused as a whole.
        text_members.ports[1].devargs = "net_null7".to_owned();
        let err = diff(&old, &text_members, &Names::of(&old)).unwrap_err();
        assert!(err.contains("need a restart"), "{err}");
        assert!(err.contains("[[port]]"), "{err}");
    }
}

#[cfg(test)]
mod additions {
    use super::*;
    use dataplane::clock::PICOS_PER_MICRO;
    use dataplane::pipeline::spec::CsidFormat;
    use dataplane::tables::flowlet::{BalanceSpec, PathChoice};
    use std::path::Path;

    const BASE: &str = r#"[switch]
name = "r"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
[[port]]
name = "p0"
devargs = "net_null0"
ipv4 = ["10.255.0.1/31"]
ipv6 = ["2001:db8:ff::1/127"]
[[port]]
name = "p1"
devargs = "net_null1"
ipv4 = ["10.255.0.3/31"]
[[nexthop_group]]
name = "up"
members = [{ port = "p0", via = "10.255.0.0" }]
[[route]]
prefix = "10.1.0.0/16"
group = "up"
"#;

    const MORE: &str = r#"
[[nexthop_group]]
name = "g2"
members = [{ port = "p1", via = "10.255.0.2", weight = 3 }]
[[route]]
prefix = "10.9.0.0/16"
group = "g2"
[[srv6.sid]]
prefix = "fcbb:bb00:1::/48"
behavior = "uA"
group = "g2"
[[srv6.policy]]
name = "pn"
prefix = "10.8.0.0/16"
mode = "encaps.red"
segments = ["fcbb:bb00:2::"]
"#;

    fn config(text: &str) -> Config {
        Config::parse(Path::new("r.toml"), text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn groups_policies_and_sids_added_and_removed_by_reload() {
        let old = config(BASE);
        let new = config(&format!("{BASE}{MORE}"));
        let names = Names::of(&old);
        let (updates, group_names) = diff(&old, &new, &names).unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(group_names, HashMap::from([(1, "g2".to_owned())]));
        assert_eq!(
            updates[0],
            Update::AddGroup {
                slot: 1,
                members: vec![(1, ip("10.255.0.2"), 3)],
                balance: Default::default(),
            }
        );
        let Update::AddPolicy { slot: 0, spec } = &updates[1] else {
            panic!("{:?}", updates[1]);
        };
        assert_eq!(spec.name, "pn");
        let Update::AddSid {
            slot: 0,
            spec,
            via: None,
        } = &updates[2]
        else {
            panic!("{:?}", updates[2]);
        };
        assert_eq!(
            (spec.behavior, spec.next_csid),
            (
                SidBehavior::EndX {
                    target: RouteTarget::Group(1)
                },
                Some(CsidFormat {
                    block_bits: 32,
                    shift_bits: 16
                })
            )
        );
        let mut routes: Vec<_> = updates[3..]
            .iter()
            .map(|u| match u {
                Update::AddRoute { prefix, target, .. } => (*prefix, *target),
                other => panic!("{other:?}"),
            })
            .collect();
        routes.sort_by_key(|r| r.0);
        assert_eq!(
            routes,
            vec![
                (ip("10.8.0.0"), Target::Srv6Policy(0)),
                (ip("10.9.0.0"), Target::Group(1))
            ]
        );

        // And back: routes go before the SID, the group and the policy they used.
        let mut applied = names.clone();
        for u in &updates {
            applied.note(u, group_names.get(&1).map(String::as_str));
        }
        let (back, none) = diff(&new, &old, &applied).unwrap();
        assert!(none.is_empty());
        assert_eq!(
            back[0],
            Update::DelSid {
                slot: 0,
                vrf: 0,
                prefix: "fcbb:bb00:1::".parse().unwrap(),
                len: 48
            }
        );
        let tail: Vec<&Update> = back[1..].iter().collect();
        assert!(matches!(tail[0], Update::DelRoute { .. }));
        assert!(matches!(tail[1], Update::DelRoute { .. }));
        assert_eq!(
            tail[2..],
            [
                &Update::DelGroup { slot: 1 },
                &Update::DelPolicy { slot: 0 }
            ]
        );

        // Slots come from the running switch: with group slot 1 taken by a group `ctl`
        // created, g2 goes to slot 2.
        let mut busy = names.clone();
        busy.groups.push("from-ctl".to_owned());
        let (updates, group_names) = diff(&old, &new, &busy).unwrap();
        assert!(matches!(updates[0], Update::AddGroup { slot: 2, .. }));
        assert_eq!(group_names[&2], "g2");
        assert!(updates.contains(&Update::AddRoute {
            vrf: 0,
            prefix: ip("10.9.0.0"),
            len: 16,
            target: Target::Group(2)
        }));
    }

    #[test]
    fn a_kept_groups_balancing_is_set_around_its_member_changes() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let old = config(BASE);
        let names = Names::of(&old);
        let (p0, p1) = (
            "{ port = \"p0\", via = \"10.255.0.0\" }",
            "{ port = \"p1\", via = \"10.255.0.2\" }",
        );
        let up = |members: &str, keys: &str| {
            config(&BASE.replace(
                &format!("members = [{p0}]\n"),
                &format!("members = [{members}]\n{keys}"),
            ))
        };
        let flowlet = BalanceSpec {
            mode: BalanceMode::Flowlet,
            choice: PathChoice::LeastLoaded,
            timeout: 250 * PICOS_PER_MICRO,
            ..BalanceSpec::default()
        };
        let keys = "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_timeout_us = 250\n";
        let set = |balance| Update::SetGroupBalance { group: 0, balance };

        // Only the balancing changes: one update.
        let (updates, _) = diff(&old, &up(p0, keys), &names).unwrap();
        assert_eq!(updates, [set(flowlet)]);

        // To a balanced mode: after the members' removals (p0 out, p1 in).
        let (updates, _) = diff(&old, &up(p1, keys), &names).unwrap();
        let add = Update::AddEcmpMember {
            group: 0,
            interface: 1,
            ip: ip("10.255.0.2"),
            weight: 1,
        };
        let del = Update::DelEcmpMember {
            group: 0,
            interface: 0,
            ip: ip("10.255.0.0"),
        };
        assert_eq!(updates, [add.clone(), del.clone(), set(flowlet)]);

        // Back to hashing: before the members are added.
        let balanced = up(p0, keys);
        let (updates, _) = diff(&balanced, &up(p1, ""), &Names::of(&balanced)).unwrap();
        assert_eq!(updates, [set(BalanceSpec::default()), add, del]);
    }
}

#[cfg(test)]
mod vlans {
    use super::*;
    use std::path::Path;

    fn config(access: u16, extra: &str) -> Config {
        let text = format!(
            r#"[switch]
name = "r"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
{extra}
[[port]]
name = "p0"
devargs = "net_null0"
vlan = {{ mode = "access", id = {access} }}
[[port]]
name = "p1"
devargs = "net_null1"
ipv4 = ["10.255.0.3/31"]
"#
        );
        Config::parse(Path::new("r.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn l2_vlans_and_port_membership_reload_and_vlan_interfaces_need_a_restart() {
        let old = config(10, "");
        let new = config(20, "[[vlan]]\nid = 20\n");
        let (updates, _) = diff(&old, &new, &Names::of(&old)).unwrap();
        assert_eq!(
            updates,
            vec![
                Update::AddVlan { id: 20 },
                Update::SetPortVlans {
                    port: 0,
                    role: PortRole::Access { vlan: 20 }
                },
            ]
        );
        let (back, _) = diff(&new, &old, &Names::of(&new)).unwrap();
        assert_eq!(
            back,
            vec![
                Update::SetPortVlans {
                    port: 0,
                    role: PortRole::Access { vlan: 10 }
                },
                Update::DelVlan { id: 20 },
            ]
        );
        let svi = config(10, "[[vlan]]\nid = 20\nipv4 = [\"10.0.20.1/24\"]\n");
        let e = diff(&old, &svi, &Names::of(&old)).unwrap_err();
        assert!(e.contains("VLAN interfaces"), "{e}");
    }
}
