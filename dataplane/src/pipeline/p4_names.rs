//! The P4 program's names (`p4/ironclos.p4`) for the tables and actions this pipeline
//! implements, as the control plane and counters name them. A test holds them to the program.

/// VLAN classification by port role (`Forwarder::process`, `PortMode`).
pub const PORT_VLAN: (&str, &[&str]) = (
    "port_vlan",
    &["set_access_vlan", "set_trunk", "set_routed_interface"],
);
/// Trunk membership and native VLAN; anything else is dropped (`vlan_not_allowed`).
pub const VLAN_MEMBERSHIP: (&str, &[&str]) = (
    "vlan_membership",
    &["allow_vlan", "set_native_vlan", "drop_packet"],
);
/// L2 forwarding by (VLAN, destination MAC); a miss floods the VLAN.
pub const MAC_TABLE: (&str, &[&str]) = ("mac_table", &["l2_forward", "flood"]);
/// Source learning (`MacTable::learn`).
pub const MAC_LEARN: (&str, &[&str]) = ("mac_learn", &["mac_known", "learn_mac"]);
/// Frames to the router MAC are routed on their ingress interface.
pub const ROUTER_MAC: (&str, &[&str]) = ("router_mac", &["route_packet"]);
/// Route targets (`RouteTarget`): nexthop, ECMP group, connected (glean), local, blackhole.
pub const IPV4_LPM: (&str, &[&str]) = (
    "ipv4_lpm",
    &[
        "set_nexthop",
        "set_ecmp_group",
        "glean",
        "punt_local",
        "blackhole",
        "drop_packet",
    ],
);
pub const IPV6_LPM: (&str, &[&str]) = (
    "ipv6_lpm",
    &[
        "set_nexthop",
        "set_ecmp_group",
        "glean",
        "punt_local",
        "blackhole",
        "drop_packet",
    ],
);
/// Flow-hash member selection (`EcmpGroup::select`).
pub const ECMP_GROUP: (&str, &[&str]) = ("ecmp_group", &["set_nexthop"]);
/// Nexthop rewrite (`Forwarder::egress_l2`); unresolved nexthops ask the control plane.
pub const NEXTHOP: (&str, &[&str]) = (
    "nexthop",
    &["rewrite_to_port", "rewrite_to_vlan", "resolve_nexthop"],
);
/// Classification (`qos::classify`): the trust mode, the two maps and the lossless set.
pub const QOS_TRUST: (&str, &[&str]) = ("qos_trust", &["trust_dscp", "trust_pcp"]);
pub const DSCP_TO_TC: (&str, &[&str]) = ("dscp_to_tc", &["set_tc"]);
pub const PCP_TO_TC: (&str, &[&str]) = ("pcp_to_tc", &["set_tc"]);
pub const LOSSLESS_TC: (&str, &[&str]) = ("lossless_tc", &["set_lossless"]);
/// ECN marking at enqueue (`qos::ecn::EcnCurve` in `qos::TrafficManager::enqueue`).
pub const ECN_PROFILE: (&str, &[&str]) = ("ecn_profile", &["set_ecn_profile"]);
/// Local SIDs (`forward::srv6::Srv6State::lookup_sid`, `SidBehavior`; uN and uA are End and
/// End.X with NEXT-C-SID).
pub const MY_SID: (&str, &[&str]) = (
    "my_sid",
    &["end", "end_x", "un", "ua", "end_dt4", "end_dt6", "end_dt46"],
);
/// Headend policies (`RouteTarget::Srv6Policy`, `EncapMode`).
pub const SRV6_POLICY: (&str, &[&str]) =
    ("srv6_policy", &["h_encaps", "h_encaps_red", "drop_packet"]);
/// A group's balancing (`tables::flowlet::BalanceMode`, `Forwarder::balancers`).
pub const ECMP_BALANCE: (&str, &[&str]) = (
    "ecmp_balance",
    &["balance_hash", "balance_flowlet", "balance_per_packet"],
);
/// The flowlet table's entry fields as P4 registers (`tables::flowlet::FlowletTable`: the
/// entry's `last_seen` and `flowlet_id`; the member is the selector's pick for the id).
pub const FLOWLET_REGISTERS: &[&str] = &["flowlet_last_seen", "flowlet_id"];
/// io mode's port pairs.
pub const IO_FORWARD: (&str, &[&str]) = ("io_forward", &["forward", "drop_packet"]);

/// Every table above.
pub const TABLES: &[(&str, &[&str])] = &[
    PORT_VLAN,
    VLAN_MEMBERSHIP,
    MAC_TABLE,
    MAC_LEARN,
    ROUTER_MAC,
    IPV4_LPM,
    IPV6_LPM,
    ECMP_GROUP,
    NEXTHOP,
    MY_SID,
    SRV6_POLICY,
    IO_FORWARD,
    QOS_TRUST,
    DSCP_TO_TC,
    PCP_TO_TC,
    LOSSLESS_TC,
    ECN_PROFILE,
    ECMP_BALANCE,
];

#[cfg(test)]
mod tests {
    #[test]
    fn rust_tables_and_actions_exist_in_ironclos_p4() {
        if let Err(mismatches) = p4::schema().check_names(super::TABLES) {
            panic!(
                "Rust and p4/ironclos.p4 disagree:\n{}",
                mismatches.join("\n")
            );
        }
    }

    /// The P4 program's drop reasons (`const bit<8> DROP_NAME = n;  // name`) are Rust's: each
    /// comment is a `DropReason::as_str`, the constant its upper-case form, the numbers
    /// distinct, above 0 and below `DROP_REASONS` (the size of `drop_counter`).
    #[test]
    fn p4_drop_reasons_are_rust_drop_reasons() {
        use crate::counters::DropReason;
        let mut names = Vec::new();
        let mut numbers = Vec::new();
        let mut size = None;
        for line in p4::SOURCE.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("const bit<32> DROP_REASONS =") {
                let (value, _) = rest.split_once(';').expect("DROP_REASONS ends with ;");
                size = Some(value.trim().parse::<u32>().expect("a number"));
                continue;
            }
            let Some(rest) = line.strip_prefix("const bit<8> DROP_") else {
                continue;
            };
            let (constant, rest) = rest.split_once('=').expect(line);
            let (number, comment) = rest.split_once(';').expect(line);
            let name = comment.trim().strip_prefix("//").expect(line).trim();
            assert!(
                DropReason::ALL.iter().any(|r| r.as_str() == name),
                "P4 names {name}, which is no Rust DropReason: {line}"
            );
            assert_eq!(constant.trim(), name.to_ascii_uppercase(), "{line}");
            names.push(name.to_owned());
            numbers.push(number.trim().parse::<u32>().expect(line));
        }
        let size = size.expect("DROP_REASONS is declared");
        assert!(
            names.iter().any(|n| n == "source_route_option"),
            "{names:?}"
        );
        let mut distinct = numbers.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), numbers.len(), "numbers repeat: {numbers:?}");
        assert!(
            numbers.iter().all(|&n| n > 0 && n < size),
            "{numbers:?} within 1..{size}"
        );
    }

    #[test]
    fn flowlet_registers_are_the_p4_programs() {
        assert_eq!(super::FLOWLET_REGISTERS, p4::FLOWLET_REGISTERS);
    }

    #[test]
    fn every_switch_table_of_the_p4_program_is_implemented() {
        for (table, _) in p4::SWITCH_TABLES
            .iter()
            .chain(p4::QOS_TABLES)
            .chain(p4::FLOWLET_TABLES)
        {
            assert!(
                super::TABLES.iter().any(|(t, _)| t == table),
                "P4 table {table} has no Rust counterpart"
            );
        }
    }
}
