//! Run-time SRv6 and ECMP group changes (crate::ctl): SIDs, policies and groups added and
//! deleted between packets, whole-batch validation and undo. Uses the SRv6 spec of
//! `srv6_tests.rs`; expected frames follow the RFC 8986 rules, as there.

use super::*;
use crate::ctl::{Target, Update};
use crate::tables::flowlet::BalanceSpec;

fn apply(f: &mut Forwarder, updates: &[Update]) -> Result<(), (usize, String)> {
    f.validate_updates(updates)?;
    let mut undo = Vec::new();
    for (i, u) in updates.iter().enumerate() {
        if let Err(e) = f.apply_update(u, &mut undo) {
            f.undo_updates(undo);
            return Err((i, e));
        }
    }
    Ok(())
}

fn refused(f: &mut Forwarder, updates: &[Update]) -> (usize, String) {
    apply(f, updates).expect_err("the batch must be refused")
}

/// From port 0: to `sid` with an SRH [2001:db8:b::9, sid], Segments Left 1.
fn to_sid(sid: &str) -> Vec<u8> {
    let mut payload = srh(UDP, 1, 1, &["2001:db8:b::9", sid]);
    payload.extend_from_slice(&udp());
    eth(&ipv6("2001:db8:1::2", sid, 64, 43, &payload), 0x86dd)
}

/// What End makes of `to_sid(sid)`: out of port 1 to nh1, DA 2001:db8:b::9, SL 0, HL 63.
fn after_end(frame: &[u8]) -> Vec<u8> {
    let mut expected = rewritten(frame.to_vec(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 43] = 0;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("2001:db8:b::9").octets());
    expected
}

fn add_sid(slot: u32, s: SidSpec) -> Update {
    Update::AddSid {
        slot,
        spec: Box::new(s),
        via: None,
    }
}

fn del_sid(slot: u32, prefix: &str, len: u8) -> Update {
    Update::DelSid {
        slot,
        vrf: 0,
        prefix: v6(prefix),
        len,
    }
}

/// The spec has 10 SIDs (slots 0..=9) and 3 policies.
const NEXT_SID: u32 = 10;
const NEXT_POLICY: u32 = 3;

#[test]
fn a_sid_added_at_run_time_is_processed_and_stops_when_deleted() {
    let mut f = forwarder();
    let frame = to_sid("2001:db8:6::1");
    let (before, _) = run(&mut f, &frame, 0);
    assert!(
        matches!(
            before,
            Verdict::Drop(_) | Verdict::DropWithRouterError { .. }
        ),
        "{before:?}"
    );
    apply(
        &mut f,
        &[add_sid(
            NEXT_SID,
            sid("2001:db8:6::1", 128, SidBehavior::End),
        )],
    )
    .unwrap();
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    assert_eq!(out, after_end(&frame));
    let counters = f.srv6_counters();
    assert_eq!(counters.sids[NEXT_SID as usize].packets.get(), 1);
    assert_eq!(
        counters.sids[NEXT_SID as usize].bytes.get(),
        frame.len() as u64
    );

    apply(&mut f, &[del_sid(NEXT_SID, "2001:db8:6::1", 128)]).unwrap();
    assert_eq!(run(&mut f, &frame, 0).0, before);
    assert_eq!(counters.sids[NEXT_SID as usize].packets.get(), 1);

    // The free slot takes the next SID, with counters from zero; a slot past the table's end
    // is refused.
    let e = refused(
        &mut f,
        &[add_sid(
            NEXT_SID + 2,
            sid("2001:db8:6::2", 128, SidBehavior::End),
        )],
    );
    assert!(e.1.contains("is taken"), "{e:?}");
    apply(
        &mut f,
        &[add_sid(
            NEXT_SID,
            sid("2001:db8:6::2", 128, SidBehavior::End),
        )],
    )
    .unwrap();
    assert_eq!(counters.sids[NEXT_SID as usize].packets.get(), 0);
    let frame2 = to_sid("2001:db8:6::2");
    assert_eq!(run(&mut f, &frame2, 0).1, after_end(&frame2));
    assert_eq!(
        run(&mut f, &frame, 0).0,
        before,
        "the deleted SID stays gone"
    );
}

#[test]
fn a_configured_sid_can_be_deleted_and_every_behaviour_added() {
    let mut f = forwarder();
    // 2001:db8:5::1 (slot 3) is End.
    let frame = to_sid("2001:db8:5::1");
    assert_eq!(run(&mut f, &frame, 0).0, forward(1));
    let e = refused(&mut f, &[del_sid(4, "2001:db8:5::1", 128)]);
    assert!(
        e.1.contains("no local SID 2001:db8:5::1/128 in VRF 0 at slot 4"),
        "{e:?}"
    );
    apply(&mut f, &[del_sid(3, "2001:db8:5::1", 128)]).unwrap();
    assert_ne!(run(&mut f, &frame, 0).0, forward(1));

    // End.X (to nh0, port 0), uN, uA, End.DT4/DT6/DT46, with PSP/USP, in one batch.
    let end_x0 = SidBehavior::EndX {
        target: RouteTarget::Nexthop(0),
    };
    let batch = [
        add_sid(3, sid("2001:db8:7::1", 128, end_x0)),
        add_sid(
            NEXT_SID,
            SidSpec {
                psp: true,
                usp: true,
                ..sid("2001:db8:7::2", 128, SidBehavior::End)
            },
        ),
        add_sid(
            NEXT_SID + 1,
            usid("fcbb:bb00:700::", 48, SidBehavior::End, 32, 16),
        ),
        add_sid(NEXT_SID + 2, usid("fcbb:bb00:701::", 48, end_x0, 32, 16)),
        add_sid(
            NEXT_SID + 3,
            sid("2001:db8:7::10", 128, SidBehavior::EndDt4 { vrf: 1 }),
        ),
        add_sid(
            NEXT_SID + 4,
            sid("2001:db8:7::11", 128, SidBehavior::EndDt6 { vrf: 1 }),
        ),
        add_sid(
            NEXT_SID + 5,
            sid("2001:db8:7::12", 128, SidBehavior::EndDt46 { vrf: 1 }),
        ),
    ];
    apply(&mut f, &batch).unwrap();
    // End.X: the next segment goes out to its adjacency (port 0), not to the FIB (port 1).
    let frame = to_sid("2001:db8:7::1");
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(0));
    let mut expected = after_end(&frame);
    expected[0..6].copy_from_slice(&N0);
    assert_eq!(out, expected);
    // uN: fcbb:bb00:700:200:: shifts 16 bits to fcbb:bb00:200:: (routed to nh1, port 1).
    let frame = eth(
        &ipv6("2001:db8:1::2", "fcbb:bb00:700:200::", 64, UDP, &udp()),
        0x86dd,
    );
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(1));
    let mut expected = rewritten(frame.clone(), N1);
    expected[L3 + 7] = 63;
    expected[L3 + 24..L3 + 40].copy_from_slice(&v6("fcbb:bb00:200::").octets());
    assert_eq!(out, expected);
    // End.DT4: the inner IPv4 packet is routed in VRF 1 (10.9.0.0/16 -> nh2, port 2).
    let inner = ipv4([10, 9, 0, 1], 64, 0);
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:7::10", 64, 4, &inner),
        0x86dd,
    );
    assert_eq!(run(&mut f, &frame, 0).0, forward(2));
}

#[test]
fn malformed_sid_updates_are_refused_and_change_nothing() {
    let mut f = forwarder();
    let frame = to_sid("2001:db8:6::1");
    let before = run(&mut f, &frame, 0).0;
    let good = add_sid(NEXT_SID, sid("2001:db8:6::1", 128, SidBehavior::End));
    let cases: Vec<(Update, &str)> = vec![
        (
            add_sid(NEXT_SID + 2, sid("2001:db8:6::3", 128, SidBehavior::End)),
            "is taken",
        ),
        (
            add_sid(NEXT_SID + 1, sid("2001:db8:6::1", 128, SidBehavior::End)),
            "already a local SID",
        ),
        (
            add_sid(NEXT_SID + 1, sid("2001:db8:5::1", 128, SidBehavior::End)),
            "already a local SID",
        ),
        (
            add_sid(
                NEXT_SID + 1,
                SidSpec {
                    vrf: 7,
                    ..sid("2001:db8:6::3", 128, SidBehavior::End)
                },
            ),
            "VRF 7 does not exist",
        ),
        (
            add_sid(
                NEXT_SID + 1,
                sid(
                    "2001:db8:6::3",
                    128,
                    SidBehavior::EndX {
                        target: RouteTarget::Group(0),
                    },
                ),
            ),
            "End.X needs an existing nexthop or ECMP group",
        ),
        (
            add_sid(
                NEXT_SID + 1,
                SidSpec {
                    psp: true,
                    ..sid("2001:db8:6::3", 128, SidBehavior::EndDt4 { vrf: 1 })
                },
            ),
            "apply to End and End.X only",
        ),
        (
            add_sid(
                NEXT_SID + 1,
                usid("fcbb:bb00:800::", 48, SidBehavior::End, 64, 64),
            ),
            "must leave an argument",
        ),
        (
            add_sid(5000, sid("2001:db8:6::3", 128, SidBehavior::End)),
            "there is room for",
        ),
        (del_sid(NEXT_SID + 1, "2001:db8:6::1", 128), "no local SID"),
        (del_sid(2, "2001:db8:9::", 64), "no local SID"),
    ];
    for (bad, message) in cases {
        let (index, error) = refused(&mut f, &[good.clone(), bad.clone()]);
        assert_eq!(index, 1, "{bad:?}: {error}");
        assert!(error.contains(message), "{bad:?}: {error}");
        assert_eq!(run(&mut f, &frame, 0).0, before, "{bad:?} changed state");
    }
    // The same SID twice in one batch.
    let (index, error) = refused(&mut f, &[good.clone(), good.clone()]);
    assert_eq!(index, 1);
    assert!(error.contains("is taken"), "{error}");
}

fn policy_spec(name: &str, mode: EncapMode, segments: &[&str]) -> PolicySpec {
    PolicySpec {
        name: name.to_owned(),
        mode,
        segments: segments.iter().map(|s| v6(s)).collect(),
        source: v6("2001:db8:ff::1"),
        hop_limit: 64,
        outer_vrf: 0,
    }
}

fn route_10_20(target: Target) -> Update {
    Update::AddRoute {
        vrf: 1,
        prefix: "10.20.0.0".parse().unwrap(),
        len: 16,
        target,
    }
}

/// From port 2 (VRF 1) to 10.20.0.5: covered by 10.20.0.0/16.
fn to_10_20() -> Vec<u8> {
    eth(&ipv4([10, 20, 0, 5], 64, 0), 0x0800)
}

#[test]
fn a_policy_created_at_run_time_takes_a_route_and_is_deleted_when_unused() {
    let mut f = forwarder();
    let frame = to_10_20();
    // Policy 0 sends to fcbb:bb00:200:300:: (routed to nh1, port 1).
    assert_eq!(run(&mut f, &frame, 2).0, forward(1));
    // A new H.Encaps.Red policy with one segment (no SRH) toward fcbb:bb00:300:: (nh0, port
    // 0); the route moves to it in the same batch.
    apply(
        &mut f,
        &[
            Update::AddPolicy {
                slot: NEXT_POLICY,
                spec: Box::new(policy_spec(
                    "new",
                    EncapMode::EncapsRed,
                    &["fcbb:bb00:300::"],
                )),
            },
            route_10_20(Target::Srv6Policy(NEXT_POLICY)),
        ],
    )
    .unwrap();
    let (verdict, out) = run(&mut f, &frame, 2);
    assert_eq!(verdict, forward(0));
    // Outer: version 6, payload = the IPv4 packet, next header 4, hop limit 64, the
    // policy's source, DA = its only segment; then the inner packet with TTL 63.
    let inner = ipv4([10, 20, 0, 5], 64, 0);
    assert_eq!(out.len(), 14 + 40 + inner.len());
    assert_eq!(&out[0..6], &N0);
    assert_eq!(out[L3] >> 4, 6);
    assert_eq!(
        u16::from_be_bytes([out[L3 + 4], out[L3 + 5]]) as usize,
        inner.len()
    );
    assert_eq!((out[L3 + 6], out[L3 + 7]), (4, 64));
    assert_eq!(&out[L3 + 8..L3 + 24], &v6("2001:db8:ff::1").octets());
    assert_eq!(&out[L3 + 24..L3 + 40], &v6("fcbb:bb00:300::").octets());
    assert_eq!(out[L3 + 40 + 8], 63, "inner TTL");
    assert_eq!(
        f.srv6_counters().policies[NEXT_POLICY as usize]
            .packets
            .get(),
        1
    );

    // In use: refused, state unchanged.
    let (_, e) = refused(&mut f, &[Update::DelPolicy { slot: NEXT_POLICY }]);
    assert!(e.contains("in use by route 10.20.0.0/16 in VRF 1"), "{e}");
    assert_eq!(run(&mut f, &frame, 2).0, forward(0));
    // Moving the route back and deleting the policy in one batch works.
    apply(
        &mut f,
        &[
            route_10_20(Target::Srv6Policy(0)),
            Update::DelPolicy { slot: NEXT_POLICY },
        ],
    )
    .unwrap();
    assert_eq!(run(&mut f, &frame, 2).0, forward(1));
    // A route cannot point at the deleted policy; a deleted policy cannot be set.
    let (_, e) = refused(&mut f, &[route_10_20(Target::Srv6Policy(NEXT_POLICY))]);
    assert!(e.contains("SRv6 policy 3 does not exist"), "{e}");
    let (_, e) = refused(
        &mut f,
        &[Update::SetPolicy {
            policy: NEXT_POLICY,
            spec: Box::new(policy_spec("x", EncapMode::Encaps, &["fcbb:bb00:300::"])),
        }],
    );
    assert!(e.contains("does not exist"), "{e}");
    // Malformed policies.
    for (spec, message) in [
        (policy_spec("e", EncapMode::Encaps, &[]), "no segments"),
        (
            PolicySpec {
                outer_vrf: 9,
                ..policy_spec("v", EncapMode::Encaps, &["fcbb:bb00:300::"])
            },
            "VRF 9 does not exist",
        ),
        (
            PolicySpec {
                // One more than Hdr Ext Len can express.
                segments: vec!["fcbb:bb00:300::".parse().unwrap(); 128],
                ..policy_spec("long", EncapMode::Encaps, &["fcbb:bb00:300::"])
            },
            "128 segments do not fit an SRH (at most 127 in it)",
        ),
    ] {
        let (_, e) = refused(
            &mut f,
            &[Update::AddPolicy {
                slot: NEXT_POLICY,
                spec: Box::new(spec),
            }],
        );
        assert!(e.contains(message), "{e}");
    }
    assert_eq!(run(&mut f, &frame, 2).0, forward(1));
}

fn add_group(slot: u32, members: &[(u16, &str, u32)]) -> Update {
    Update::AddGroup {
        slot,
        members: members
            .iter()
            .map(|&(i, ip, w)| (i, ip.parse().unwrap(), w))
            .collect(),
        balance: BalanceSpec::default(),
    }
}

fn route_30(target: Target) -> Update {
    Update::AddRoute {
        vrf: 0,
        prefix: "2001:db8:30::".parse().unwrap(),
        len: 48,
        target,
    }
}

#[test]
fn an_ecmp_group_created_at_run_time_takes_routes_and_is_deleted_when_unused() {
    let mut f = forwarder();
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:30::5", 64, UDP, &udp()),
        0x86dd,
    );
    // The spec has no group: group 0 is new, with nh1 (port 1) only.
    apply(
        &mut f,
        &[
            add_group(0, &[(1, "2001:db8:2::2", 1)]),
            route_30(Target::Group(0)),
        ],
    )
    .unwrap();
    assert_eq!(run(&mut f, &frame, 0).0, forward(1));
    match f.dump(crate::ctl::DumpKind::Groups) {
        crate::ctl::Dump::Groups(g) => {
            assert_eq!(g.len(), 1);
            assert_eq!(
                (g[0].id, g[0].members.len(), g[0].members[0].nexthop),
                (0, 1, 1)
            );
        }
        other => panic!("{other:?}"),
    }
    // In use by a route, and by an End.X SID: refused.
    let (_, e) = refused(&mut f, &[Update::DelGroup { slot: 0 }]);
    assert!(
        e.contains("in use by route 2001:db8:30::/48 in VRF 0"),
        "{e}"
    );
    let end_x = add_sid(
        NEXT_SID,
        sid(
            "2001:db8:6::9",
            128,
            SidBehavior::EndX {
                target: RouteTarget::Group(0),
            },
        ),
    );
    let (i, e) = refused(
        &mut f,
        &[
            end_x.clone(),
            route_30(Target::Blackhole),
            Update::DelGroup { slot: 0 },
        ],
    );
    assert_eq!(i, 2);
    assert!(e.contains("adjacency of SID slot 10"), "{e}");
    assert_eq!(run(&mut f, &frame, 0).0, forward(1));
    // Unused: deleted; then its slot takes a new group (nh0, port 0) in the same batch as
    // the route's move.
    apply(
        &mut f,
        &[route_30(Target::Blackhole), Update::DelGroup { slot: 0 }],
    )
    .unwrap();
    assert_eq!(
        f.dump(crate::ctl::DumpKind::Groups),
        crate::ctl::Dump::Groups(vec![])
    );
    let (_, e) = refused(&mut f, &[route_30(Target::Group(0))]);
    assert!(e.contains("ECMP group 0 does not exist"), "{e}");
    apply(
        &mut f,
        &[
            add_group(0, &[(0, "2001:db8:1::2", 1)]),
            route_30(Target::Group(0)),
        ],
    )
    .unwrap();
    assert_eq!(run(&mut f, &frame, 0).0, forward(0));
    // Malformed groups.
    for (bad, message) in [
        (add_group(1, &[]), "at least one member"),
        (
            add_group(1, &[(9, "2001:db8:1::2", 1)]),
            "L3 interface 9 does not exist",
        ),
        (
            add_group(1, &[(0, "2001:db8:1::2", 0)]),
            "weight must be at least 1",
        ),
        (
            add_group(1, &[(0, "2001:db8:1::2", 1), (0, "2001:db8:1::2", 2)]),
            "given twice",
        ),
        (add_group(0, &[(0, "2001:db8:1::2", 1)]), "is taken"),
        (add_group(2, &[(0, "2001:db8:1::2", 1)]), "is taken"),
        (Update::DelGroup { slot: 1 }, "ECMP group 1 does not exist"),
        (
            Update::AddEcmpMember {
                group: 1,
                interface: 0,
                ip: "2001:db8:1::9".parse().unwrap(),
                weight: 1,
            },
            "ECMP group 1 does not exist",
        ),
    ] {
        let (_, e) = refused(&mut f, &[bad]);
        assert!(e.contains(message), "{e}");
    }
    assert_eq!(run(&mut f, &frame, 0).0, forward(0));
}

#[test]
fn undo_takes_back_sid_policy_and_group_changes() {
    let mut f = forwarder();
    let sid_frame = to_sid("2001:db8:5::1");
    let new_sid_frame = to_sid("2001:db8:6::1");
    let policy_frame = to_10_20();
    let before = (
        run(&mut f, &sid_frame, 0).0,
        run(&mut f, &new_sid_frame, 0).0,
        run(&mut f, &policy_frame, 2).0,
        f.dump(crate::ctl::DumpKind::Groups),
        f.dump(crate::ctl::DumpKind::Nexthops),
    );
    let updates = [
        del_sid(3, "2001:db8:5::1", 128),
        add_sid(3, sid("2001:db8:6::1", 128, SidBehavior::End)),
        add_sid(NEXT_SID, sid("2001:db8:6::2", 128, SidBehavior::End)),
        Update::AddPolicy {
            slot: NEXT_POLICY,
            spec: Box::new(policy_spec(
                "new",
                EncapMode::EncapsRed,
                &["fcbb:bb00:300::"],
            )),
        },
        route_10_20(Target::Srv6Policy(NEXT_POLICY)),
        Update::DelPolicy { slot: 2 },
        add_group(0, &[(1, "2001:db8:2::9", 1)]),
        add_group(1, &[(0, "2001:db8:1::2", 1)]),
        Update::DelGroup { slot: 1 },
    ];
    // Policy 2 is used by 2001:db8:21::/48: move that route away first.
    let mut batch = vec![Update::DelRoute {
        vrf: 1,
        prefix: "2001:db8:21::".parse().unwrap(),
        len: 48,
    }];
    batch.extend(updates);
    f.validate_updates(&batch).unwrap();
    let mut undo = Vec::new();
    for u in &batch {
        f.apply_update(u, &mut undo).unwrap();
    }
    assert_eq!(run(&mut f, &new_sid_frame, 0).0, forward(1));
    assert_eq!(run(&mut f, &policy_frame, 2).0, forward(0));
    f.undo_updates(undo);
    let after = (
        run(&mut f, &sid_frame, 0).0,
        run(&mut f, &new_sid_frame, 0).0,
        run(&mut f, &policy_frame, 2).0,
        f.dump(crate::ctl::DumpKind::Groups),
        f.dump(crate::ctl::DumpKind::Nexthops),
    );
    assert_eq!(before, after);
    // The slots are as they were: the next SID, policy and group go where they went before.
    apply(
        &mut f,
        &[
            add_sid(NEXT_SID, sid("2001:db8:6::2", 128, SidBehavior::End)),
            Update::AddPolicy {
                slot: NEXT_POLICY,
                spec: Box::new(policy_spec("new", EncapMode::Encaps, &["fcbb:bb00:300::"])),
            },
            add_group(0, &[(1, "2001:db8:2::2", 1)]),
        ],
    )
    .unwrap();
}

#[test]
fn an_end_x_to_a_new_neighbour_creates_its_nexthop_and_the_dump_shows_it() {
    let mut f = forwarder();
    let before = f.dump(crate::ctl::DumpKind::Nexthops);
    let crate::ctl::Dump::Nexthops(nexthops) = &before else {
        panic!()
    };
    let new_id = nexthops.len() as u32;
    // The placeholder target is replaced by the neighbour's nexthop.
    let update = Update::AddSid {
        slot: NEXT_SID,
        spec: Box::new(SidSpec {
            psp: true,
            ..sid(
                "2001:db8:6::1",
                128,
                SidBehavior::EndX {
                    target: RouteTarget::Nexthop(u32::MAX),
                },
            )
        }),
        via: Some((0, IpAddr::V6(v6("2001:db8:1::7")))),
    };
    // Refused whole with a bad second update: no nexthop is left behind.
    let (_, e) = refused(
        &mut f,
        &[update.clone(), del_sid(NEXT_SID + 1, "2001:db8:9::", 64)],
    );
    assert!(e.contains("no local SID"), "{e}");
    assert_eq!(f.dump(crate::ctl::DumpKind::Nexthops), before);
    apply(&mut f, &[update]).unwrap();
    let crate::ctl::Dump::Sids(sids) = f.dump(crate::ctl::DumpKind::Sids) else {
        panic!()
    };
    let entry = sids
        .iter()
        .find(|s| s.slot == NEXT_SID)
        .expect("the new SID");
    assert_eq!(
        (
            entry.vrf,
            entry.prefix,
            entry.len,
            entry.behavior,
            entry.psp
        ),
        (
            0,
            v6("2001:db8:6::1"),
            128,
            SidBehavior::EndX {
                target: RouteTarget::Nexthop(new_id)
            },
            true
        )
    );
    assert_eq!(sids.len(), 11);
    // The uN of the spec: block 32, shift 16 as masks.
    let un = sids.iter().find(|s| s.slot == 0).unwrap();
    assert_eq!(
        un.csid,
        Some((u128::MAX << 96, u128::MAX >> 48, 16)),
        "block mask, argument mask, shift"
    );
    // Its neighbour is not resolved yet: the packet waits for resolution (no MAC to send to).
    let frame = to_sid("2001:db8:6::1");
    assert_ne!(run(&mut f, &frame, 0).0, forward(1));
    f.neighbor_resolved(0, IpAddr::V6(v6("2001:db8:1::7")), N2);
    let (verdict, out) = run(&mut f, &frame, 0);
    assert_eq!(verdict, forward(0));
    assert_eq!(&out[0..6], &N2);
}

#[test]
fn a_groups_balancing_changes_at_run_time_and_goes_back_with_an_undone_batch() {
    use crate::tables::flowlet::{BalanceMode, MAX_BALANCED_MEMBERS};
    let mut f = forwarder();
    apply(
        &mut f,
        &[
            add_group(0, &[(0, "2001:db8:1::2", 1), (1, "2001:db8:2::2", 1)]),
            route_30(Target::Group(0)),
        ],
    )
    .unwrap();
    // One flow: hashing keeps it on one member; spraying sends it to both (64 random draws
    // all alike: 2^-63).
    let frame = eth(
        &ipv6("2001:db8:1::2", "2001:db8:30::5", 64, UDP, &udp()),
        0x86dd,
    );
    let ports_used = |f: &mut Forwarder| {
        let mut used = [false; 3];
        for _ in 0..64 {
            match run(f, &frame, 0).0 {
                Verdict::Forward { port, .. } => used[usize::from(port)] = true,
                other => panic!("{other:?}"),
            }
        }
        used.iter().filter(|&&u| u).count()
    };
    let balancing = |f: &Forwarder| match f.dump(crate::ctl::DumpKind::Groups) {
        crate::ctl::Dump::Groups(g) => (g[0].mode, g[0].members.len()),
        other => panic!("{other:?}"),
    };
    assert_eq!(ports_used(&mut f), 1);
    let spray = BalanceSpec {
        mode: BalanceMode::PerPacket,
        ..BalanceSpec::default()
    };
    let set = |balance| Update::SetGroupBalance { group: 0, balance };
    apply(&mut f, &[set(spray)]).unwrap();
    assert_eq!(balancing(&f), ("per-packet", 2), "the members stay");
    assert_eq!(ports_used(&mut f), 2);

    // Back to hashing in a batch that is then undone: spraying again.
    f.validate_updates(&[set(BalanceSpec::default())]).unwrap();
    let mut undo = Vec::new();
    f.apply_update(&set(BalanceSpec::default()), &mut undo)
        .unwrap();
    assert_eq!(balancing(&f), ("hash", 2));
    assert_eq!(ports_used(&mut f), 1);
    f.undo_updates(undo);
    assert_eq!(balancing(&f), ("per-packet", 2));
    assert_eq!(ports_used(&mut f), 2);

    // Refused: no such group, a group of the same batch, more members than a balanced
    // group takes (until the batch removes one).
    let (_, e) = refused(
        &mut f,
        &[Update::SetGroupBalance {
            group: 5,
            balance: spray,
        }],
    );
    assert!(e.contains("ECMP group 5 does not exist"), "{e}");
    let (i, e) = refused(
        &mut f,
        &[
            add_group(1, &[(0, "2001:db8:1::2", 1)]),
            Update::SetGroupBalance {
                group: 1,
                balance: spray,
            },
        ],
    );
    assert_eq!(i, 1);
    assert!(e.contains("created by this batch"), "{e}");
    let many: Vec<String> = (0..=MAX_BALANCED_MEMBERS)
        .map(|i| format!("2001:db8:1::{:x}", 0x100 + i))
        .collect();
    let members: Vec<(u16, &str, u32)> = many.iter().map(|ip| (0, ip.as_str(), 1)).collect();
    apply(&mut f, &[add_group(1, &members)]).unwrap();
    let (_, e) = refused(
        &mut f,
        &[Update::SetGroupBalance {
            group: 1,
            balance: spray,
        }],
    );
    assert!(
        e.contains(&format!(
            "{} members: a per-packet group balances at most {MAX_BALANCED_MEMBERS}",
            MAX_BALANCED_MEMBERS + 1
        )),
        "{e}"
    );
    apply(
        &mut f,
        &[
            Update::DelEcmpMember {
                group: 1,
                interface: 0,
                ip: many[0].parse().unwrap(),
            },
            Update::SetGroupBalance {
                group: 1,
                balance: spray,
            },
        ],
    )
    .unwrap();
    assert_eq!(ports_used(&mut f), 2, "group 0 is as it was");
}
