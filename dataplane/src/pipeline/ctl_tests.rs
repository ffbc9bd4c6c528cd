//! Run-time updates of the forwarder (crate::ctl): effects on forwarding, whole-batch
//! validation, and undo. Uses the leaf spec of `tests.rs`.

use super::*;
use crate::ctl::{Dump, DumpKind, Target, Update};

fn routes(f: &Forwarder) -> Dump {
    f.dump(DumpKind::Routes {
        vrf: None,
        limit: usize::MAX,
    })
}

fn apply(f: &mut Forwarder, updates: &[Update]) -> Result<(), (usize, String)> {
    f.validate_updates(updates)?;
    let mut undo = Vec::new();
    for (i, u) in updates.iter().enumerate() {
        f.apply_update(u, &mut undo).map_err(|e| (i, e))?;
    }
    Ok(())
}

fn to_10_7(f: &mut Forwarder) -> Verdict {
    let packet = ipv4([10, 0, 10, 5], [10, 7, 0, 9], 64, 17, 1000, 2000);
    let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
    f.process(&mut frame, 0, T0)
}

#[test]
fn a_route_added_at_run_time_carries_traffic_and_stops_when_deleted() {
    let mut f = forwarder();
    assert_eq!(
        to_10_7(&mut f),
        router_error(DropReason::NoRoute, RouterErrorKind::NoRoute, 2)
    );
    let via = Target::Via {
        interface: 1,
        ip: "10.255.0.2".parse().unwrap(),
    };
    apply(
        &mut f,
        &[
            Update::AddNeighbor {
                interface: 1,
                ip: "10.255.0.2".parse().unwrap(),
                mac: SPINE2,
            },
            Update::AddRoute {
                vrf: 0,
                prefix: "10.7.0.0".parse().unwrap(),
                len: 16,
                target: via,
            },
        ],
    )
    .unwrap();
    assert_eq!(
        to_10_7(&mut f),
        Verdict::Forward {
            port: 6,
            tag: TagOp::Keep
        }
    );
    apply(
        &mut f,
        &[Update::DelRoute {
            vrf: 0,
            prefix: "10.7.0.0".parse().unwrap(),
            len: 16,
        }],
    )
    .unwrap();
    assert_eq!(
        to_10_7(&mut f),
        router_error(DropReason::NoRoute, RouterErrorKind::NoRoute, 2)
    );
}

#[test]
fn a_batch_with_one_bad_update_is_refused_whole_and_changes_nothing() {
    let f = forwarder();
    let before = (
        routes(&f),
        f.dump(DumpKind::Nexthops),
        f.dump(DumpKind::Groups),
    );
    let good = Update::AddRoute {
        vrf: 0,
        prefix: "10.7.0.0".parse().unwrap(),
        len: 16,
        target: Target::Via {
            interface: 1,
            ip: "10.255.0.9".parse().unwrap(),
        },
    };
    let cases: Vec<(Update, &str)> = vec![
        (
            Update::AddRoute {
                vrf: 3,
                prefix: "10.8.0.0".parse().unwrap(),
                len: 16,
                target: Target::Blackhole,
            },
            "VRF 3 does not exist",
        ),
        (
            Update::AddRoute {
                vrf: 0,
                prefix: "10.8.0.0".parse().unwrap(),
                len: 33,
                target: Target::Blackhole,
            },
            "longer than 32",
        ),
        (
            Update::DelRoute {
                vrf: 0,
                prefix: "10.0.10.0".parse().unwrap(),
                len: 24,
            },
            "interface address",
        ),
        (
            Update::DelRoute {
                vrf: 0,
                prefix: "10.99.0.0".parse().unwrap(),
                len: 16,
            },
            "no route",
        ),
        (
            Update::AddEcmpMember {
                group: 0,
                interface: 0,
                ip: "10.255.0.0".parse().unwrap(),
                weight: 1,
            },
            "already a member",
        ),
        (
            Update::AddMac {
                vlan: 10,
                mac: [1, 0, 0, 0, 0, 1],
                port: 0,
            },
            "not a unicast MAC",
        ),
        (
            Update::AddMac {
                vlan: 30,
                mac: [2, 0, 0, 0, 0, 9],
                port: 0,
            },
            "VLAN 30 does not exist",
        ),
        (
            Update::AddMac {
                vlan: 10,
                mac: [2, 0, 0, 0, 0, 9],
                port: 5,
            },
            "port 5 is not in VLAN 10: it is a routed port",
        ),
        (
            Update::AddMac {
                vlan: 20,
                mac: [2, 0, 0, 0, 0, 9],
                port: 0,
            },
            "port 0 is not in VLAN 20: it is an access port of VLAN 10",
        ),
        (
            Update::AddMac {
                vlan: 10,
                mac: f.router_mac(),
                port: 0,
            },
            "is the router MAC",
        ),
        (
            Update::AddRoute {
                vrf: 0,
                prefix: "10.8.0.0".parse().unwrap(),
                len: 16,
                target: Target::Group(7),
            },
            "ECMP group 7 does not exist",
        ),
    ];
    for (bad, message) in cases {
        let err = f
            .validate_updates(&[good.clone(), bad.clone()])
            .unwrap_err();
        assert_eq!(err.0, 1, "{bad:?}");
        assert!(err.1.contains(message), "{bad:?}: {}", err.1);
        let after = (
            routes(&f),
            f.dump(DumpKind::Nexthops),
            f.dump(DumpKind::Groups),
        );
        assert_eq!(before, after, "validation changes nothing");
    }
    // Later updates see earlier ones: add then delete in one batch is fine, deleting twice not.
    let del = Update::DelRoute {
        vrf: 0,
        prefix: "10.7.0.0".parse().unwrap(),
        len: 16,
    };
    assert!(f.validate_updates(&[good.clone(), del.clone()]).is_ok());
    assert_eq!(
        f.validate_updates(&[good, del.clone(), del]).unwrap_err().0,
        2
    );
}

#[test]
fn undo_restores_every_table() {
    let mut f = forwarder();
    let before = (
        routes(&f),
        f.dump(DumpKind::Nexthops),
        f.dump(DumpKind::Groups),
        f.dump(DumpKind::Macs { limit: 100 }),
    );
    let updates = [
        Update::AddRoute {
            vrf: 0,
            prefix: "10.2.0.0".parse().unwrap(),
            len: 16,
            target: Target::Blackhole,
        },
        Update::DelRoute {
            vrf: 0,
            prefix: "10.9.0.0".parse().unwrap(),
            len: 16,
        },
        Update::AddNeighbor {
            interface: 2,
            ip: "10.0.10.7".parse().unwrap(),
            mac: C,
        },
        Update::AddEcmpMember {
            group: 0,
            interface: 1,
            ip: "10.255.0.3".parse().unwrap(),
            weight: 2,
        },
        Update::DelEcmpMember {
            group: 0,
            interface: 0,
            ip: "10.255.0.0".parse().unwrap(),
        },
        Update::AddMac {
            vlan: 10,
            mac: B,
            port: 2,
        },
    ];
    f.validate_updates(&updates).unwrap();
    let mut undo = Vec::new();
    for u in &updates {
        f.apply_update(u, &mut undo).unwrap();
    }
    assert_ne!(routes(&f), before.0);
    f.undo_updates(undo);
    let after = (
        routes(&f),
        f.dump(DumpKind::Nexthops),
        f.dump(DumpKind::Groups),
        f.dump(DumpKind::Macs { limit: 100 }),
    );
    assert_eq!(before, after);
}

#[test]
fn removing_an_ecmp_member_moves_only_its_flows_and_the_last_one_stays() {
    let mut f = forwarder();
    let nh0 = "10.255.0.0".parse().unwrap();
    let nh1 = "10.255.0.2".parse().unwrap();
    let Dump::Groups(groups) = f.dump(DumpKind::Groups) else {
        panic!()
    };
    assert_eq!(groups[0].members.len(), 2);
    assert_eq!(
        groups[0].members.iter().map(|m| m.buckets).sum::<usize>(),
        groups[0].buckets
    );
    apply(
        &mut f,
        &[Update::DelEcmpMember {
            group: 0,
            interface: 0,
            ip: nh0,
        }],
    )
    .unwrap();
    let Dump::Groups(groups) = f.dump(DumpKind::Groups) else {
        panic!()
    };
    assert_eq!(groups[0].members.len(), 1);
    assert_eq!(groups[0].members[0].nexthop, 1);
    assert_eq!(groups[0].members[0].buckets, groups[0].buckets);
    let err = apply(
        &mut f,
        &[Update::DelEcmpMember {
            group: 0,
            interface: 1,
            ip: nh1,
        }],
    )
    .unwrap_err();
    assert!(err.1.contains("without members"), "{}", err.1);
}

#[test]
fn a_member_weight_changes_its_share_of_buckets() {
    let mut f = forwarder();
    let nh1 = "10.255.0.2".parse().unwrap();
    apply(
        &mut f,
        &[Update::SetEcmpWeight {
            group: 0,
            interface: 1,
            ip: nh1,
            weight: 3,
        }],
    )
    .unwrap();
    let Dump::Groups(groups) = f.dump(DumpKind::Groups) else {
        panic!()
    };
    let m = groups[0].members.iter().find(|m| m.nexthop == 1).unwrap();
    // Weights 1 and 3 over 256 buckets: 3/4 of them.
    assert_eq!((m.weight, m.buckets), (3, 192));
    let err = f
        .validate_updates(&[Update::SetEcmpWeight {
            group: 0,
            interface: 1,
            ip: "10.255.0.9".parse().unwrap(),
            weight: 2,
        }])
        .unwrap_err();
    assert!(err.1.contains("not a member"), "{}", err.1);
}

/// Cost of applying a million routes through the run-time path (validate + apply), in batches
/// of 10k: `cargo test --release -p dataplane --lib million_routes -- --ignored --nocapture`.
#[test]
#[ignore]
fn million_routes_through_the_update_path() {
    let mut f = forwarder();
    let mut rng = 0x1c10_5eedu64;
    let updates: Vec<Update> = (0..1_000_000u32)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let first = 11 + (rng % 212) as u32;
            let bits = (first << 24) | ((rng >> 24) as u32 & 0x00ff_ff00);
            Update::AddRoute {
                vrf: 0,
                prefix: IpAddr::V4(Ipv4Addr::from(bits)),
                len: 24,
                target: Target::Group(0),
            }
        })
        .collect();
    let started = std::time::Instant::now();
    let mut validate = std::time::Duration::ZERO;
    for batch in updates.chunks(10_000) {
        let t = std::time::Instant::now();
        f.validate_updates(batch).unwrap();
        validate += t.elapsed();
        let mut undo = Vec::new();
        for u in batch {
            f.apply_update(u, &mut undo).unwrap();
        }
    }
    let total = started.elapsed();
    eprintln!(
        "1M routes: {:.2} s total, {:.2} s validating, {:.0} ns per route",
        total.as_secs_f64(),
        validate.as_secs_f64(),
        total.as_nanos() as f64 / 1e6
    );
}

#[test]
fn a_flowlet_group_changed_at_run_time_forwards_to_its_new_members_only() {
    use crate::clock::PICOS_PER_MICRO;
    use crate::tables::flowlet::{BalanceMode, BalanceSpec, PathChoice};
    let mut spec = leaf_spec();
    spec.groups[0].balance = BalanceSpec {
        mode: BalanceMode::Flowlet,
        choice: PathChoice::LeastLoaded,
        timeout: 100 * PICOS_PER_MICRO,
        table_size: 1 << 10,
        avoid_ecn: false,
    };
    let mut f = Forwarder::new(&spec).expect("valid spec");
    f.neighbor_resolved(0, "10.255.0.0".parse().unwrap(), SPINE1);
    f.neighbor_resolved(1, "10.255.0.2".parse().unwrap(), SPINE2);
    let send = |f: &mut Forwarder, sport: u16, now: u64| {
        let packet = ipv4([10, 0, 10, 5], [10, 1, 0, 9], 64, 17, sport, 4791);
        let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
        match f.process(&mut frame, 0, now) {
            Verdict::Forward { port, .. } => port,
            other => panic!("flow {sport}: {other:?}"),
        }
    };
    let first: Vec<u16> = (0..64).map(|s| send(&mut f, s, T0)).collect();
    assert!(first.contains(&5) && first.contains(&6), "{first:?}");
    apply(
        &mut f,
        &[Update::DelEcmpMember {
            group: 0,
            interface: 0,
            ip: "10.255.0.0".parse().unwrap(),
        }],
    )
    .unwrap();
    // Within the flowlet timeout too: the removed member is gone at once.
    for s in 0..64 {
        assert_eq!(send(&mut f, s, T0 + PICOS_PER_MICRO), 6, "flow {s}");
    }
    apply(
        &mut f,
        &[Update::AddEcmpMember {
            group: 0,
            interface: 0,
            ip: "10.255.0.0".parse().unwrap(),
            weight: 1,
        }],
    )
    .unwrap();
    // New flowlets (after the timeout) use both members again.
    let later: Vec<u16> = (0..64)
        .map(|s| send(&mut f, s, T0 + 1_000 * PICOS_PER_MICRO))
        .collect();
    assert!(later.contains(&5) && later.contains(&6), "{later:?}");
}

#[test]
fn a_vlan_added_at_run_time_takes_ports_and_goes_when_empty() {
    use crate::pipeline::spec::PortRole;
    let mut f = forwarder();
    let access = |vlan| PortRole::Access { vlan };
    // Refused: an unknown VLAN, a routed port, VLAN 10 (members, an interface), VLAN 0.
    for (bad, message) in [
        (
            Update::SetPortVlans {
                port: 2,
                role: access(31),
            },
            "VLAN 31 does not exist",
        ),
        (
            Update::SetPortVlans {
                port: 5,
                role: access(10),
            },
            "port 5 is routed",
        ),
        (
            Update::SetPortVlans {
                port: 2,
                role: PortRole::Routed { interface: 0 },
            },
            "becomes routed only with a restart",
        ),
        (Update::DelVlan { id: 10 }, "has an L3 interface"),
        (Update::DelVlan { id: 31 }, "VLAN 31 does not exist"),
        (Update::AddVlan { id: 0 }, "VLAN 0 is not 1..=4094"),
        (Update::AddVlan { id: 20 }, "VLAN 20 exists already"),
    ] {
        let (_, e) = apply(&mut f, &[Update::AddVlan { id: 30 }, bad.clone()])
            .expect_err(&format!("{bad:?}"));
        assert!(e.contains(message), "{bad:?}: {e}");
    }
    assert_eq!(f.vlan_members(30), &[] as &[u16]);
    // VLAN 30 with ports 2 (access) and 4 (trunk, also 10 and 20) in one batch.
    apply(
        &mut f,
        &[
            Update::AddVlan { id: 30 },
            Update::SetPortVlans {
                port: 2,
                role: access(30),
            },
            Update::SetPortVlans {
                port: 4,
                role: PortRole::Trunk {
                    allowed: vec![10, 20, 30],
                    native: None,
                },
            },
        ],
    )
    .unwrap();
    assert_eq!(f.vlan_members(30), &[2, 4]);
    assert_eq!(f.vlan_members(10), &[0, 1, 4], "port 2 left VLAN 10");
    assert!(f.egress_tagged(4, 30) && !f.egress_tagged(2, 30));
    // An unknown destination from port 2 floods in VLAN 30 now.
    let mut frame = eth(B, A, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut frame, 2, T0),
        Verdict::Flood {
            vlan: 30,
            ingress_tagged: false
        }
    );
    // A static MAC in VLAN 30; the VLAN cannot go while ports are in it.
    apply(
        &mut f,
        &[Update::AddMac {
            vlan: 30,
            mac: C,
            port: 4,
        }],
    )
    .unwrap();
    let (_, e) = apply(&mut f, &[Update::DelVlan { id: 30 }]).unwrap_err();
    assert!(e.contains("port 2 is in VLAN 30"), "{e}");
    // Undo puts membership and the VLAN back as they were.
    let before = (f.vlan_members(10).to_vec(), f.vlan_members(30).to_vec());
    let batch = [
        Update::SetPortVlans {
            port: 2,
            role: access(10),
        },
        Update::SetPortVlans {
            port: 4,
            role: PortRole::Trunk {
                allowed: vec![10, 20],
                native: None,
            },
        },
        Update::DelVlan { id: 30 },
    ];
    f.validate_updates(&batch).unwrap();
    let mut undo = Vec::new();
    for u in &batch {
        f.apply_update(u, &mut undo).unwrap();
    }
    assert_eq!(f.vlan_members(30), &[] as &[u16]);
    let Dump::Macs { macs, .. } = f.dump(DumpKind::Macs { limit: 100 }) else {
        panic!()
    };
    assert!(
        macs.iter().all(|m| m.vlan != 30),
        "VLAN 30's MACs went with it"
    );
    f.undo_updates(undo);
    assert_eq!(
        (f.vlan_members(10).to_vec(), f.vlan_members(30).to_vec()),
        before
    );
    let Dump::Macs { macs, .. } = f.dump(DumpKind::Macs { limit: 100 }) else {
        panic!()
    };
    assert!(
        macs.iter()
            .any(|m| m.vlan == 30 && m.mac == C && m.is_static)
    );
    // Now for real: the ports move back, VLAN 30 and its static MAC go.
    apply(&mut f, &batch).unwrap();
    let Dump::Macs { macs, .. } = f.dump(DumpKind::Macs { limit: 100 }) else {
        panic!()
    };
    assert!(macs.iter().all(|m| m.vlan != 30));
    assert_eq!(f.vlan_members(10), &[0, 1, 2, 4]);
    let mut frame = eth(B, A, None, 0x0800, &[0; 46]);
    assert_eq!(
        f.process(&mut frame, 2, T0),
        Verdict::Flood {
            vlan: 10,
            ingress_tagged: false
        }
    );
    let (_, e) = apply(
        &mut f,
        &[Update::SetPortVlans {
            port: 2,
            role: access(30),
        }],
    )
    .unwrap_err();
    assert!(e.contains("VLAN 30 does not exist"), "{e}");
}

#[test]
fn a_port_that_leaves_a_vlan_takes_its_static_macs_there_with_it() {
    use crate::pipeline::spec::PortRole;
    let mut f = forwarder();
    let (in_10, in_20) = ([2, 0, 0, 0, 0x77, 1], [2, 0, 0, 0, 0x77, 2]);
    // Port 4, the trunk of VLANs 10 and 20, gets a static MAC in each.
    apply(
        &mut f,
        &[
            Update::AddMac {
                vlan: 10,
                mac: in_10,
                port: 4,
            },
            Update::AddMac {
                vlan: 20,
                mac: in_20,
                port: 4,
            },
        ],
    )
    .unwrap();
    let leave_20 = Update::SetPortVlans {
        port: 4,
        role: PortRole::Trunk {
            allowed: vec![10],
            native: None,
        },
    };
    let mut undo = Vec::new();
    f.apply_update(&leave_20, &mut undo).unwrap();
    assert!(f.macs.get(20, in_20).is_none(), "VLAN 20's went");
    assert_eq!(
        f.macs.get(10, in_10).map(|e| e.port),
        Some(4),
        "VLAN 10's stays"
    );
    // A frame to that MAC from another member of VLAN 20 (port 3, access) is flooded.
    let mut frame = eth(in_20, A, None, 0x0800, &[0; 46]);
    assert!(matches!(
        f.process(&mut frame, 3, T0),
        Verdict::Flood { vlan: 20, .. }
    ));
    // Undone, the MAC is back on port 4.
    f.undo_updates(undo);
    let entry = f.macs.get(20, in_20).expect("restored");
    assert!(entry.is_static && entry.port == 4);
}

/// The destination MAC a frame to 10.7.0.9 leaves with, or the verdict when it does not leave.
fn to_10_7_mac(f: &mut Forwarder) -> Result<[u8; 6], Verdict> {
    let packet = ipv4([10, 0, 10, 5], [10, 7, 0, 9], 64, 17, 1000, 2000);
    let mut frame = eth(ROUTER, A, None, 0x0800, &packet);
    match f.process(&mut frame, 0, T0) {
        Verdict::Forward { .. } => Ok(frame[..6].try_into().unwrap()),
        other => Err(other),
    }
}

#[test]
fn a_static_neighbour_is_the_operators_until_deleted_and_arp_or_aging_cannot_change_it() {
    let mut f = forwarder();
    let spine2: IpAddr = "10.255.0.2".parse().unwrap();
    let pin = Update::AddNeighbor {
        interface: 1,
        ip: spine2,
        mac: SPINE2,
    };
    let route = Update::AddRoute {
        vrf: 0,
        prefix: "10.7.0.0".parse().unwrap(),
        len: 16,
        target: Target::Via {
            interface: 1,
            ip: spine2,
        },
    };
    apply(&mut f, &[pin, route]).unwrap();
    assert_eq!(to_10_7_mac(&mut f), Ok(SPINE2));
    // What the wire says (an ARP from another MAC claiming the address, an announcement) and
    // the neighbour timers leave it alone.
    assert!(!f.neighbor_resolved(1, spine2, C));
    assert!(!f.neighbor_refreshed(1, spine2, C));
    f.neighbor_lost(1, spine2);
    assert_eq!(to_10_7_mac(&mut f), Ok(SPINE2));
    // Deleting it, undone, leaves it pinned.
    let delete = Update::DelNeighbor {
        interface: 1,
        ip: spine2,
    };
    let mut undo = Vec::new();
    f.apply_update(&delete, &mut undo).unwrap();
    f.undo_updates(undo);
    assert!(!f.neighbor_resolved(1, spine2, C));
    assert_eq!(to_10_7_mac(&mut f), Ok(SPINE2));
    // Deleted, it is the wire's again: unresolved until it answers, then learned.
    apply(&mut f, &[delete]).unwrap();
    assert_eq!(
        to_10_7_mac(&mut f),
        Err(Verdict::Drop(DropReason::NeighborUnresolved))
    );
    assert!(f.neighbor_resolved(1, spine2, C));
    assert_eq!(to_10_7_mac(&mut f), Ok(C));
    assert!(f.neighbor_refreshed(1, spine2, B));
    assert_eq!(to_10_7_mac(&mut f), Ok(B));
    f.neighbor_lost(1, spine2);
    assert_eq!(
        to_10_7_mac(&mut f),
        Err(Verdict::Drop(DropReason::NeighborUnresolved))
    );
}

#[test]
fn the_nexthop_dump_says_which_neighbours_are_static_learned_or_unresolved() {
    let mut f = forwarder();
    let spine1: IpAddr = "10.255.0.0".parse().unwrap();
    let spine2: IpAddr = "10.255.0.2".parse().unwrap();
    apply(
        &mut f,
        &[Update::AddNeighbor {
            interface: 1,
            ip: spine2,
            mac: SPINE2,
        }],
    )
    .unwrap();
    let state_of = |f: &Forwarder, ip: IpAddr| {
        let Dump::Nexthops(nexthops) = f.dump(DumpKind::Nexthops) else {
            panic!("a nexthop dump")
        };
        nexthops.iter().find(|n| n.ip == ip).map(|n| n.state)
    };
    assert_eq!(state_of(&f, spine2), Some("static"));
    assert_eq!(state_of(&f, spine1), Some("unresolved"));
    f.neighbor_resolved(0, spine1, SPINE1);
    assert_eq!(state_of(&f, spine1), Some("reachable"));
    f.neighbor_lost(0, spine1);
    assert_eq!(state_of(&f, spine1), Some("unresolved"));
}
