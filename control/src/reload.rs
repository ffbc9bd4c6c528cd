//! `ironclos reload`: the difference between the config the switch last loaded and the file
//! as it is now, as one batch of run-time updates (applied atomically, like any `update`).
//!
//! What can change without a restart: routes, static neighbours, ECMP group members and
//! weights, static MACs, ECN thresholds, SRv6 policies' paths. Anything else that differs
//! (ports, VLANs, interfaces, VRFs, groups or policies added or removed, SIDs, other QoS
//! settings, `[dataplane]`, `[control]`) is refused with the list of what needs a restart, and
//! nothing is applied.

use crate::config::Config;
use dataplane::ctl::{Target, Update};
use dataplane::pipeline::spec::{RouteTarget, SwitchSpec};
use dataplane::qos::TC_COUNT;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// The updates that turn `old` into `new`, or what needs a restart.
pub fn diff(old: &Config, new: &Config) -> Result<Vec<Update>, String> {
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
    check(
        "ECMP groups (added, removed or renamed)",
        old.group_names() == new.group_names(),
    );
    let (Some(a), Some(b)) = (old.switch_spec(), new.switch_spec()) else {
        return if restart.is_empty() {
            Ok(Vec::new())
        } else {
            Err(needs_restart(&restart))
        };
    };
    check("switch.router_mac", a.router_mac == b.router_mac);
    check(
        "port roles (VLAN mode, routed addresses)",
        a.ports == b.ports,
    );
    check("VLANs", a.vlans == b.vlans);
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
    check(
        "ECMP group balancing (mode, choice, flowlet keys)",
        a.groups
            .iter()
            .map(|g| g.balance)
            .eq(b.groups.iter().map(|g| g.balance)),
    );
    check("SRv6 SIDs", a.srv6.sids == b.srv6.sids);
    check(
        "SRv6 policies added, removed or renamed",
        a.srv6.policies.len() == b.srv6.policies.len()
            && a.srv6
                .policies
                .iter()
                .zip(&b.srv6.policies)
                .all(|(x, y)| x.name == y.name),
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
    Ok(spec_diff(&a, &b))
}

fn needs_restart(what: &[String]) -> String {
    format!(
        "these changes need a restart (nothing was applied): {}",
        what.join("; ")
    )
}

fn route_target(spec: &SwitchSpec, target: RouteTarget) -> Target {
    match target {
        RouteTarget::Nexthop(i) => {
            let nh = spec.nexthops[i as usize];
            Target::Via {
                interface: nh.interface,
                ip: nh.ip,
            }
        }
        RouteTarget::Group(g) => Target::Group(g),
        RouteTarget::Srv6Policy(p) => Target::Srv6Policy(p),
        // Connected and local routes come from interfaces, which did not change.
        RouteTarget::Blackhole | RouteTarget::Connected(_) | RouteTarget::Local => {
            Target::Blackhole
        }
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

/// Updates from `a` to `b`, two specs with the same structure. Order: neighbours and group
/// members first (routes may use them), then routes, then removals.
fn spec_diff(a: &SwitchSpec, b: &SwitchSpec) -> Vec<Update> {
    let mut updates = Vec::new();
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
    let mut removals = Vec::new();
    for group in 0..b.groups.len() {
        let (ma, mb) = (members(a, group), members(b, group));
        for (&(interface, ip), &weight) in &mb {
            match ma.get(&(interface, ip)) {
                None => updates.push(Update::AddEcmpMember {
                    group: group as u32,
                    interface,
                    ip,
                    weight,
                }),
                Some(&w) if w != weight => updates.push(Update::SetEcmpWeight {
                    group: group as u32,
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
                    group: group as u32,
                    interface,
                    ip,
                });
            }
        }
    }
    let routes = |s: &SwitchSpec| -> HashMap<(u16, IpAddr, u8), Target> {
        s.routes
            .iter()
            .map(|r| ((r.vrf, r.prefix, r.len), route_target(s, r.target)))
            .collect()
    };
    let (ra, rb) = (routes(a), routes(b));
    for r in &b.routes {
        let key = (r.vrf, r.prefix, r.len);
        if ra.get(&key) != rb.get(&key) {
            updates.push(Update::AddRoute {
                vrf: r.vrf,
                prefix: r.prefix,
                len: r.len,
                target: rb[&key],
            });
        }
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
    for (index, (pa, pb)) in a.srv6.policies.iter().zip(&b.srv6.policies).enumerate() {
        if pa != pb {
            updates.push(Update::SetPolicy {
                policy: index as u32,
                spec: Box::new(pb.clone()),
            });
        }
    }
    for (&(interface, ip), _) in na.iter().filter(|(k, _)| !nb.contains_key(k)) {
        removals.push(Update::DelNeighbor { interface, ip });
    }
    updates.extend(removals);
    updates
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
        assert_eq!(diff(&old, &old), Ok(Vec::new()), "no change, no update");
        let new = config(
            "[[route]]\nprefix = \"10.1.0.0/16\"\ngroup = \"up\"\n\
             [[route]]\nprefix = \"10.3.0.0/16\"\nvia = \"10.255.0.2\"\nport = \"p1\"\n",
        );
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            diff(&old, &new).unwrap(),
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
        let err = diff(&old, &text_members).unwrap_err();
        assert!(err.contains("need a restart"), "{err}");
        assert!(err.contains("[[port]]"), "{err}");
    }
}
