use super::*;
use crate::tables::ecmp::Member;

const US: Picos = PICOS_PER_MICRO;

fn group(weights: &[u32]) -> EcmpGroup {
    let members: Vec<Member> = weights
        .iter()
        .enumerate()
        .map(|(i, &weight)| Member {
            id: 10 + i as u32,
            weight,
            up: true,
        })
        .collect();
    EcmpGroup::with_buckets(256, &members).unwrap()
}

/// Member i on port i; `depths[i]` bytes queued on port i in TC 0.
fn egress(depths: &[u64]) -> (Arc<TmCounters>, EgressLoad) {
    let counters = Arc::new(TmCounters::new(depths.len()));
    for (port, &d) in depths.iter().enumerate() {
        counters.queues[port][0].depth_bytes.set(d);
    }
    let view = EgressLoad::new(
        Arc::clone(&counters),
        vec![[u64::MAX; TC_COUNT]; depths.len()],
    );
    (counters, view)
}

fn ports(n: usize) -> Vec<Option<u16>> {
    (0..n).map(|i| Some(i as u16)).collect()
}

fn balancer(spec: BalanceSpec, ecmp: &EcmpGroup) -> GroupBalancer {
    GroupBalancer::new(spec, 0, ecmp, &ports(ecmp.members().len()), 7, true).unwrap()
}

fn flowlet_spec(choice: PathChoice) -> BalanceSpec {
    BalanceSpec {
        mode: BalanceMode::Flowlet,
        choice,
        timeout: 100 * US,
        table_size: 1024,
        avoid_ecn: false,
    }
}

#[test]
fn table_sizes_must_be_powers_of_two_within_bounds() {
    assert!(FlowletTable::new(1).is_ok());
    assert!(FlowletTable::new(MAX_TABLE_SIZE).is_ok());
    for bad in [0, 3, 1000, MAX_TABLE_SIZE * 2] {
        assert_eq!(
            FlowletTable::new(bad).unwrap_err(),
            FlowletError::TableSize(bad)
        );
    }
}

#[test]
fn a_flowlet_goes_on_while_the_gap_is_at_most_the_timeout() {
    let mut t = FlowletTable::new(16).unwrap();
    let timeout = 100 * US;
    assert_eq!(t.lookup(5, 0, timeout), Lookup::New { previous: None });
    t.record(5, 2, 1_000 * US, true);
    assert_eq!(t.flowlet_id(5), 1);
    // Exactly the timeout later: still the same flowlet (the gap must be *longer*).
    assert_eq!(t.lookup(5, 1_100 * US, timeout), Lookup::Continue(2));
    t.record(5, 2, 1_100 * US, false);
    assert_eq!(t.flowlet_id(5), 1);
    // The time was refreshed: 1 ps more than the timeout after the last packet ends it.
    assert_eq!(t.lookup(5, 1_200 * US, timeout), Lookup::Continue(2));
    assert_eq!(
        t.lookup(5, 1_200 * US + 1, timeout),
        Lookup::New { previous: Some(2) }
    );
    // Another hash in the same slot (16 entries: low four bits) shares the flowlet.
    assert_eq!(t.lookup(5 + 16, 1_150 * US, timeout), Lookup::Continue(2));
    // An earlier time never moves an entry's clock back.
    t.record(5, 2, 900 * US, false);
    assert_eq!(t.lookup(5, 1_200 * US, timeout), Lookup::Continue(2));
    t.clear();
    assert_eq!(
        t.lookup(5, 1_200 * US, timeout),
        Lookup::New { previous: None }
    );
}

#[test]
fn a_flow_without_a_long_gap_never_moves_even_when_its_member_becomes_the_busiest() {
    let ecmp = group(&[1, 1, 1, 1]);
    let (counters, view) = egress(&[0, 0, 0, 0]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    let first = b.select(&ecmp, 0xabcd, 1000, 1_000 * US, &view).unwrap();
    let port = (first - 10) as usize;
    // Its port gets the deepest queue; packets keep coming every 100 us (= the timeout).
    counters.queues[port][0].depth_bytes.set(500_000);
    for k in 1..50 {
        let at = (1_000 + 100 * k) * US;
        assert_eq!(b.select(&ecmp, 0xabcd, 1000, at, &view), Some(first));
    }
    assert_eq!(b.counters().flowlets.get(), 1);
    assert_eq!(b.counters().moves.get(), 0);
    assert_eq!(b.counters().members[port].packets.get(), 50);
    assert_eq!(b.counters().members[port].bytes.get(), 50_000);
    // A gap one picosecond longer than the timeout starts a flowlet, which leaves the busy port.
    let at = (1_000 + 100 * 49 + 100) * US + 1;
    let next = b.select(&ecmp, 0xabcd, 1000, at, &view).unwrap();
    assert_ne!(next, first);
    assert_eq!(b.counters().flowlets.get(), 2);
    assert_eq!(b.counters().moves.get(), 1);
    assert_eq!(b.counters().forced_moves.get(), 0);
    let events = b.take_events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].from, events[0].to, events[0].forced),
        (port as u32, next - 10, false)
    );
}

#[test]
fn least_loaded_picks_the_emptiest_member_by_depth_over_weight() {
    let ecmp = group(&[1, 1, 2]);
    // Loads per weight: 3000, 1000, 1500: member 1.
    let (_c, view) = egress(&[3000, 1000, 3000]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    for flow in 0..20u32 {
        // Distinct slots, far apart in time so nothing recent distorts the depths.
        let at = (1 + u64::from(flow)) * 10_000 * US;
        assert_eq!(
            b.select(&ecmp, flow << 20 | flow, 100, at, &view),
            Some(11),
            "flow {flow}"
        );
    }
}

#[test]
fn a_new_flowlet_keeps_its_member_unless_another_is_lighter_by_a_load_quantum() {
    let ecmp = group(&[1, 1]);
    let (counters, view) = egress(&[0, 0]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    // A quantum-aligned base, so that "less than a quantum" means the same unit.
    let base = 64 * LOAD_QUANTUM;
    let mut at = 1_000 * US;
    let flow = 5;
    // Place the flow on member 0 (port 0 empty, port 1 loaded).
    counters.queues[1][0].depth_bytes.set(base);
    assert_eq!(b.select(&ecmp, flow, 100, at, &view), Some(10));
    // After each gap the flow starts a new flowlet; its member is the previous one.
    for (extra, expected) in [
        (LOAD_QUANTUM - 1, 10), // member 0 heavier by less than a quantum: stays
        (LOAD_QUANTUM, 11),     // a whole quantum heavier: moves
    ] {
        counters.queues[0][0].depth_bytes.set(base + extra);
        counters.queues[1][0].depth_bytes.set(base);
        at += 10_000 * US;
        // Nothing was transmitted (the counters say so), so the loads are the depths.
        assert_eq!(
            b.select(&ecmp, flow, 100, at, &view),
            Some(expected),
            "member 0 heavier by {extra} bytes"
        );
        // Back onto member 0 for the next case.
        counters.queues[0][0].depth_bytes.set(0);
        at += 10_000 * US;
        b.select(&ecmp, flow, 100, at, &view);
    }
    assert_eq!(b.counters().moves.get(), 2, "one move there, one back");
}

#[test]
fn recent_transmissions_count_as_load_and_decay_by_half_every_half_life() {
    let ecmp = group(&[1, 1]);
    let (counters, view) = egress(&[0, 0]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    // Prime the estimates at t0 with nothing sent.
    let t0 = 1_000 * US;
    b.select(&ecmp, 1, 100, t0, &view).unwrap();
    // Port 0 transmitted 8000 bytes, port 1 12000 bytes; port 0 holds 3000 more in queue.
    counters.queues[0][0].queued_out_bytes.set(8000);
    counters.queues[1][0].queued_out_bytes.set(12_000);
    counters.queues[0][0].depth_bytes.set(3000);
    // 11000 < 12000: member 0 (whatever the slot's start).
    assert_eq!(b.select(&ecmp, 2, 100, t0 + 1, &view), Some(10));
    // One half-life later the estimates are 4000 and 6000; 7000 > 6000: member 1.
    assert_eq!(b.select(&ecmp, 3, 100, t0 + DRE_HALF_LIFE, &view), Some(11));
}

#[test]
fn a_down_member_is_never_chosen_and_its_flowlets_move_at_once() {
    let mut ecmp = group(&[1, 1, 1]);
    let (_c, view) = egress(&[0, 0, 0]);
    for choice in [PathChoice::Random, PathChoice::LeastLoaded] {
        let mut b = balancer(flowlet_spec(choice), &ecmp);
        // 300 flows, one packet each every 10 us (well inside the timeout).
        let flows: Vec<u32> = (0..300u32).map(|f| f.wrapping_mul(0x9e37_79b9)).collect();
        let mut member_of = Vec::new();
        for (k, &h) in flows.iter().enumerate() {
            member_of.push(
                b.select(&ecmp, h, 100, 1_000 * US + k as u64, &view)
                    .unwrap(),
            );
        }
        let on_11: Vec<usize> = (0..flows.len()).filter(|&k| member_of[k] == 11).collect();
        assert!(!on_11.is_empty(), "{choice:?}");
        ecmp.set_member_up(11, false).unwrap();
        let before = b.counters().moves.get();
        let shared_slots = {
            // Flows sharing a table slot share a flowlet: count distinct slots on member 11.
            let mut slots: Vec<u32> = on_11.iter().map(|&k| flows[k] & 1023).collect();
            slots.sort_unstable();
            slots.dedup();
            slots.len() as u64
        };
        for (k, &h) in flows.iter().enumerate() {
            let now = 1_010 * US + k as u64;
            let m = b.select(&ecmp, h, 100, now, &view).unwrap();
            assert_ne!(m, 11, "{choice:?}: nothing goes to the down member");
            if member_of[k] != 11 {
                // Its slot may have been shared with a moved flow only if the slots collide.
                let slot_moved = on_11.iter().any(|&j| flows[j] & 1023 == h & 1023);
                if !slot_moved {
                    assert_eq!(
                        m, member_of[k],
                        "{choice:?}: flow {k} had no reason to move"
                    );
                }
            }
        }
        assert_eq!(b.counters().moves.get() - before, shared_slots);
        assert_eq!(b.counters().forced_moves.get(), shared_slots);
        ecmp.set_member_up(11, true).unwrap();
    }
}

#[test]
fn random_choice_is_seeded_weighted_and_skips_down_members() {
    let mut ecmp = group(&[3, 1]);
    let (_c, view) = egress(&[0, 0]);
    let spec = BalanceSpec {
        mode: BalanceMode::PerPacket,
        ..flowlet_spec(PathChoice::Random)
    };
    let run = |ecmp: &EcmpGroup| {
        let mut b = balancer(spec, ecmp);
        (0..4000u64)
            .map(|k| b.select(ecmp, 42, 100, k, &view).unwrap())
            .collect::<Vec<_>>()
    };
    let first = run(&ecmp);
    assert_eq!(first, run(&ecmp), "same seed, same choices");
    // Weights 3:1 over 256 buckets are 192:64, so each packet is member 10 with p = 3/4:
    // Binomial(4000, 3/4) has mean 3000 and sd 27.4; six sd fail only for a real bias.
    let on_10 = first.iter().filter(|&&m| m == 10).count() as f64;
    assert!((on_10 - 3000.0).abs() < 6.0 * 27.4, "{on_10}");
    let other_seed = {
        let mut b = GroupBalancer::new(spec, 0, &ecmp, &ports(2), 8, false).unwrap();
        (0..4000u64)
            .map(|k| b.select(&ecmp, 42, 100, k, &view).unwrap())
            .collect::<Vec<_>>()
    };
    assert_ne!(first, other_seed);
    ecmp.set_member_up(10, false).unwrap();
    assert!(run(&ecmp).iter().all(|&m| m == 11));
    ecmp.set_member_up(11, false).unwrap();
    let mut b = balancer(spec, &ecmp);
    assert_eq!(b.select(&ecmp, 1, 100, 0, &view), None);
}

#[test]
fn per_packet_least_loaded_sprays_onto_the_emptiest_member_each_time() {
    let ecmp = group(&[1, 1]);
    let (counters, view) = egress(&[0, 0]);
    let spec = BalanceSpec {
        mode: BalanceMode::PerPacket,
        ..flowlet_spec(PathChoice::LeastLoaded)
    };
    let mut b = balancer(spec, &ecmp);
    counters.queues[0][0].depth_bytes.set(5000);
    assert_eq!(b.select(&ecmp, 9, 100, 10_000 * US, &view), Some(11));
    counters.queues[1][0].depth_bytes.set(9000);
    assert_eq!(b.select(&ecmp, 9, 100, 20_000 * US, &view), Some(10));
    assert_eq!(b.counters().flowlets.get(), 2);
}

#[test]
fn avoid_ecn_skips_marking_members_unless_all_mark() {
    let ecmp = group(&[1, 1]);
    let counters = Arc::new(TmCounters::new(2));
    let mut kmin = vec![[u64::MAX; TC_COUNT]; 2];
    kmin[0][3] = 10_000; // port 0 marks TC 3 from 10 KB
    kmin[1][3] = 10_000;
    let view = EgressLoad::new(Arc::clone(&counters), kmin);
    // Port 0: 10 KB in TC 3 (marking); port 1: 50 KB in TC 0 (no ECN there, not marking).
    counters.queues[0][3].depth_bytes.set(10_000);
    counters.queues[1][0].depth_bytes.set(50_000);
    assert!(view.marking(0) && !view.marking(1));
    let spec = |avoid_ecn| BalanceSpec {
        avoid_ecn,
        ..flowlet_spec(PathChoice::LeastLoaded)
    };
    let mut plain = balancer(spec(false), &ecmp);
    assert_eq!(plain.select(&ecmp, 1, 100, 1_000 * US, &view), Some(10));
    let mut avoiding = balancer(spec(true), &ecmp);
    assert_eq!(avoiding.select(&ecmp, 1, 100, 1_000 * US, &view), Some(11));
    // Both marking: the least loaded again.
    counters.queues[1][3].depth_bytes.set(10_000);
    assert_eq!(avoiding.select(&ecmp, 2, 100, 1_001 * US, &view), Some(10));
}

#[test]
fn hash_mode_is_the_bucket_table_and_counts_bytes_per_member() {
    let ecmp = group(&[1, 1, 1]);
    let (_c, view) = egress(&[0, 0, 0]);
    let mut b = balancer(BalanceSpec::default(), &ecmp);
    let mut expected = [0u64; 3];
    for h in 0..1000u32 {
        let h = h.wrapping_mul(0x0101_0101);
        let m = b.select(&ecmp, h, 64, 0, &view).unwrap();
        assert_eq!(Some(m), ecmp.select(h));
        expected[(m - 10) as usize] += 64;
    }
    let got: Vec<u64> = b.counters().member_bytes();
    assert_eq!(got, expected);
    assert_eq!(b.counters().flowlets.get(), 0);
}

#[test]
fn imbalance_is_max_over_mean() {
    assert_eq!(imbalance(&[]), 0.0);
    assert_eq!(imbalance(&[0, 0]), 0.0);
    assert_eq!(imbalance(&[10, 10, 10, 10]), 1.0);
    // Two of four members carry everything: 2x.
    assert_eq!(imbalance(&[20, 20, 0, 0]), 2.0);
    assert_eq!(imbalance(&[30, 10]), 1.5);
}

#[test]
fn too_many_members_for_a_balanced_group_are_refused() {
    let weights = vec![1; MAX_BALANCED_MEMBERS + 1];
    let ecmp = group(&weights);
    let err =
        GroupBalancer::new(flowlet_spec(PathChoice::Random), 0, &ecmp, &[], 0, false).unwrap_err();
    assert_eq!(err, FlowletError::TooManyMembers(MAX_BALANCED_MEMBERS + 1));
    assert!(GroupBalancer::new(BalanceSpec::default(), 0, &ecmp, &[], 0, false).is_ok());
}

#[test]
fn new_flowlets_at_one_instant_read_the_loads_once_and_count_their_own_bytes() {
    let ecmp = group(&[1, 1, 1, 1]);
    let (counters, view) = egress(&[0, 0, 0, 0]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    let now = 1_000 * US;
    // Four new flows at the same instant: each sees the bytes of those before it, so they
    // take four different members.
    let mut chosen: Vec<u32> = (0..4u32)
        .map(|f| b.select(&ecmp, f * 7919, 1000, now, &view).unwrap())
        .collect();
    chosen.sort_unstable();
    assert_eq!(chosen, vec![10, 11, 12, 13]);
    // (Slots 0, 751, 478 and 205 of 1024; the next two flows use slots 1 and 2.)
    // A counter change at the same instant is not read again: the fifth flow sees four equal
    // loads (1000 each) and keeps to its start; a picosecond later the change counts.
    for port in 0..3 {
        counters.queues[port][0].depth_bytes.set(50_000);
    }
    // Its hash's bits 16..32 are 0x4000: the second quarter of their range, so member 1 of 4.
    let fifth = b.select(&ecmp, 0x4000 << 16 | 1, 1000, now, &view).unwrap();
    assert_eq!(fifth, 11, "ties go to the hash's start member");
    assert_eq!(b.select(&ecmp, 6 << 16 | 2, 1000, now + 1, &view), Some(13));
}

#[test]
fn equal_weight_choices_from_the_least_set_agree_with_a_full_scan_every_time() {
    // Least-loaded choice among equal weights keeps the set of least-loaded members between
    // choices. Whatever happens between two choices (bytes sent to a member, a member going
    // down or up, ECN marking, a new instant), each choice must be what a scan of every
    // member's load at that moment picks: the least load among eligible members, ties to the
    // first at or after the start, wrapping (the cross-multiplied scan with all weights 1).
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..300 {
        let n = 1 + (next() % 7) as usize;
        let mut ecmp = group(&vec![1; n]);
        let counters = Arc::new(TmCounters::new(n));
        let mut kmin = vec![[u64::MAX; TC_COUNT]; n];
        for k in &mut kmin {
            k[3] = 1_000;
        }
        let view = EgressLoad::new(Arc::clone(&counters), kmin);
        let spec = BalanceSpec {
            avoid_ecn: round % 2 == 1,
            ..flowlet_spec(PathChoice::LeastLoaded)
        };
        let b = balancer(spec, &ecmp);
        let mut now = 1_000 * US;
        for _ in 0..200 {
            match next() % 16 {
                0 => now += 1 + next() % (20 * US),
                1 => {
                    let id = 10 + (next() % n as u64) as u32;
                    let up = next() % 3 != 0;
                    ecmp.set_member_up(id, up).unwrap();
                }
                2 => {
                    // Queue depths (TC 0) and marking (TC 3) change; read at the next instant.
                    let port = (next() % n as u64) as usize;
                    counters.queues[port][0].depth_bytes.set(next() % 4 * 64);
                    counters.queues[port][3].depth_bytes.set(next() % 2 * 1_000);
                }
                3 => {
                    // Bytes of a flowlet going on (few sizes, so loads tie often; 0 too).
                    let member = (next() % n as u64) as u32;
                    b.count_choice(member, (next() % 3 * 64) as u32);
                }
                _ => {
                    if now != b.snapshot_at.get() {
                        b.refresh_loads(now, &ecmp, &view);
                    }
                    let previous = (next() % 2 == 0).then(|| (next() % n as u64) as u32);
                    let hash = next() as u32;
                    let start = match previous {
                        Some(p) => p as usize,
                        None => ((u64::from(hash >> 16) * n as u64) >> 16) as usize,
                    };
                    let up = ecmp
                        .members()
                        .iter()
                        .enumerate()
                        .fold(0u64, |m, (i, x)| m | u64::from(x.up) << i);
                    let avoided = b.avoided.get();
                    let eligible = if up & !avoided != 0 {
                        up & !avoided
                    } else {
                        up
                    };
                    let scan = b.least_loaded_weighted(ecmp.members(), n, start, eligible);
                    let expected = (scan != usize::MAX).then_some(scan as u32);
                    // Both ways in: a new flowlet's (the set at hand taken inline) and the
                    // forced move's and per-packet choice's.
                    let chosen = if next() % 2 == 0 {
                        b.least_loaded_new_flowlet(&ecmp, hash, previous, now, &view)
                    } else {
                        b.least_loaded(&ecmp, hash, previous, now, &view)
                    };
                    assert_eq!(
                        chosen,
                        expected,
                        "round {round}: loads {:?} eligible {eligible:b} start {start}",
                        b.load_snapshots()
                    );
                    if let Some(member) = chosen {
                        b.count_choice(member, 64);
                    }
                }
            }
        }
    }
}

#[test]
fn random_draws_spread_each_flow_s_flowlets_and_many_flows_evenly() {
    // Each new flowlet draws a member from the 512-bucket table: over 4000 flowlets of one
    // flow, or the first flowlet of 4000 flows, each of 4 equal members gets Binomial(4000,
    // 1/4) of them: mean 1000, sd sqrt(4000 * 1/4 * 3/4) = 27.4. Five sd either side.
    let ecmp = group(&[1, 1, 1, 1]);
    let seed = 0x1234_5678;
    let member_of = |hash: u32, salt: u32| {
        let id = ecmp.select(draw(hash, seed, salt)).unwrap();
        (id - 10) as usize
    };
    let sd = (4000.0f64 * 0.25 * 0.75).sqrt();
    let check = |counts: [u32; 4], what: &str| {
        for (m, &c) in counts.iter().enumerate() {
            assert!(
                (f64::from(c) - 1000.0).abs() <= 5.0 * sd,
                "{what}: member {m} got {c} of 4000"
            );
        }
    };
    for hash in [0u32, 1, 0xdead_beef, 0x8000_0000] {
        let mut counts = [0u32; 4];
        for salt in 1..=4000 {
            counts[member_of(hash, salt)] += 1;
        }
        check(counts, &format!("flow {hash:#x}"));
    }
    // Consecutive flow hashes (the worst case for a weak mix), first flowlet each.
    let mut counts = [0u32; 4];
    for hash in 0..4000u32 {
        counts[member_of(hash, 1)] += 1;
    }
    check(counts, "4000 flows");
}

/// The flowlet rules of the module documentation, step by step through the table's own
/// `lookup` and `record`: what `select` must choose and count for each packet.
struct FlowletModel {
    table: FlowletTable,
    timeout: Picos,
    seed: u32,
    flowlets: u64,
    moves: u64,
    forced_moves: u64,
    moved: Vec<(u32, u32, bool)>,
}

impl FlowletModel {
    fn select(&mut self, ecmp: &EcmpGroup, hash: u32, now: Picos) -> Option<u32> {
        let members = ecmp.members();
        let (previous, forced) = match self.table.lookup(hash, now, self.timeout) {
            Lookup::Continue(m) if members[m as usize].up => {
                self.table.record(hash, m, now, false);
                return Some(members[m as usize].id);
            }
            Lookup::Continue(m) => (Some(m), true),
            Lookup::New { previous } => (previous, false),
        };
        let salt = flowlet_salt(now);
        let id = ecmp.select(draw(hash, self.seed, salt))?;
        let member = members.iter().position(|m| m.id == id).unwrap() as u32;
        self.table.record(hash, member, now, true);
        self.flowlets += 1;
        if let Some(from) = previous.filter(|&p| p != member) {
            self.moves += 1;
            self.forced_moves += u64::from(forced);
            self.moved.push((from, member, forced));
        }
        Some(id)
    }
}

#[test]
fn random_flowlet_choices_follow_the_table_rules_packet_by_packet() {
    // Gaps around the timeout (some exactly at it, some back in time), hashes that share
    // slots of a small table, members going down and up: every choice, counter and recorded move as the model has it.
    let mut ecmp = group(&[1, 2, 1, 3]);
    let (_c, view) = egress(&[0; 4]);
    let spec = BalanceSpec {
        table_size: 16,
        ..flowlet_spec(PathChoice::Random)
    };
    let mut b = balancer(spec, &ecmp);
    let mut model = FlowletModel {
        table: FlowletTable::new(16).unwrap(),
        timeout: spec.timeout,
        seed: b.seed,
        flowlets: 0,
        moves: 0,
        forced_moves: 0,
        moved: Vec::new(),
    };
    let mut state = 0x5eed_f10e_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = (state ^ (state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut now = 0;
    let mut packets_on = [0u64; 4];
    for step in 0..100_000 {
        let r = next();
        if step < 64 {
            // First uses of the slots at the very start, before a timeout has passed since
            // time zero: empty entries start flowlets, they do not continue one.
            let hash = (step as u32 % 40).wrapping_mul(0x0101_0101);
            let got = b.select(&ecmp, hash, 64, now, &view);
            assert_eq!(
                got,
                model.select(&ecmp, hash, now),
                "packet {step} at the start"
            );
            packets_on[(got.unwrap() - 10) as usize] += 1;
            now += r % 1000;
            continue;
        }
        if r % 23 == 0 {
            let member = 10 + (r >> 8) as u32 % 4;
            let up = (r >> 16) & 1 == 0;
            // The last live member cannot be taken down.
            let _ = ecmp.set_member_up(member, up);
            continue;
        }
        // Live mode reads the clock once per burst, so a packet may carry an earlier instant.
        now = match (r >> 8) % 5 {
            0 => now,
            1 => now + spec.timeout,
            2 => now + spec.timeout + 1,
            3 => now.saturating_sub((r >> 16) % (spec.timeout / 4)),
            _ => now + (r >> 16) % (spec.timeout / 8),
        };
        let hash = ((r >> 32) as u32 % 40).wrapping_mul(0x0101_0101);
        let expected = model.select(&ecmp, hash, now);
        let got = b.select(&ecmp, hash, 64, now, &view);
        assert_eq!(got, expected, "packet {step}: hash {hash:#x} at {now}");
        // The entry counts its flowlets (the P4 program's `flowlet_id` register).
        assert_eq!(
            b.table().flowlet_id(hash),
            model.table.flowlet_id(hash),
            "packet {step}: flowlet id of hash {hash:#x}"
        );
        if let Some(id) = got {
            packets_on[(id - 10) as usize] += 1;
        }
    }
    let counters = b.counters();
    assert_eq!(counters.flowlets.get(), model.flowlets);
    assert_eq!(counters.moves.get(), model.moves);
    assert_eq!(counters.forced_moves.get(), model.forced_moves);
    assert!(model.forced_moves > 0 && model.moves > model.forced_moves);
    for (i, &n) in packets_on.iter().enumerate() {
        assert_eq!(counters.members[i].packets.get(), n, "member {i}");
    }
    let events: Vec<_> = b
        .take_events()
        .iter()
        .map(|e| (e.from, e.to, e.forced))
        .collect();
    assert_eq!(events, model.moved);
}

#[test]
fn the_least_set_orders_by_quantised_load_then_place_after_the_start() {
    let pick = |loads: &[Option<u64>], start: usize| {
        let members: Vec<Cell<u64>> = loads.iter().map(|l| Cell::new(l.unwrap_or(0))).collect();
        let eligible = (0..loads.len()).fold(0u64, |m, i| m | u64::from(loads[i].is_some()) << i);
        first_from(least_set(&members, eligible), start)
    };
    const Q: u64 = LOAD_QUANTUM;
    assert_eq!(pick(&[Some(3 * Q), Some(Q), Some(2 * Q)], 0), Some(1));
    // Ties go to the first member at or after the start, wrapping.
    assert_eq!(pick(&[Some(Q), Some(2 * Q), Some(Q)], 1), Some(2));
    assert_eq!(
        pick(&[Some(Q), Some(2 * Q), Some(Q), Some(2 * Q)], 3),
        Some(0)
    );
    // Loads within one quantum tie; a quantum apart they do not.
    assert_eq!(pick(&[Some(Q), Some(2 * Q - 1), Some(Q + 7)], 1), Some(1));
    assert_eq!(pick(&[Some(Q), Some(2 * Q), Some(Q + 7)], 1), Some(2));
    assert_eq!(pick(&[Some(Q - 1), Some(Q)], 1), Some(0));
    // Loads compare whole, however large.
    assert_eq!(pick(&[Some(u64::MAX), Some(u64::MAX - Q)], 0), Some(1));
    assert_eq!(pick(&[None, Some(u64::MAX), None], 2), Some(1));
    assert_eq!(pick(&[None, None], 1), None);
    // 64 members, the most a balanced group has: the last one, wrapping from the start.
    let mut loads = vec![Some(9 * Q); 64];
    loads[63] = Some(0);
    assert_eq!(pick(&loads, 63), Some(63));
    loads[63] = Some(9 * Q);
    assert_eq!(pick(&loads, 63), Some(63));
    assert_eq!(pick(&loads, 0), Some(0));
}

#[test]
fn a_rebalanced_group_keeps_its_counters_and_events_and_chooses_afresh() {
    let ecmp = group(&[1, 1, 1, 1]);
    let (counters, view) = egress(&[0, 0, 0, 0]);
    let mut b = balancer(flowlet_spec(PathChoice::LeastLoaded), &ecmp);
    let first = b.select(&ecmp, 0xabcd, 1000, 1_000 * US, &view).unwrap();
    counters.queues[(first - 10) as usize][0]
        .depth_bytes
        .set(500_000);
    let at = 1_200 * US;
    let moved = b.select(&ecmp, 0xabcd, 1000, at, &view).unwrap();
    assert_ne!(
        moved, first,
        "a gap past the timeout leaves the busy member"
    );
    assert_eq!(b.counters().moves.get(), 1);

    // A longer timeout: the flow's next packet is a new flowlet all the same (new table),
    // counted in the same block; the move recorded before the change is not lost.
    let longer = BalanceSpec {
        timeout: 10_000 * US,
        ..flowlet_spec(PathChoice::LeastLoaded)
    };
    let mut next = b.rebalanced(longer, &ecmp, &ports(4), 7).unwrap();
    assert!(Arc::ptr_eq(next.counters(), b.counters()));
    assert_eq!(*next.spec(), longer);
    assert!(b.take_events().is_empty());
    next.select(&ecmp, 0xabcd, 1000, at + US, &view).unwrap();
    assert_eq!(next.counters().flowlets.get(), 3);
    assert_eq!(next.take_events().len(), 1);
    // Refused like a new balancer: the old one is untouched.
    let bad = BalanceSpec {
        table_size: 1000,
        ..longer
    };
    assert_eq!(
        next.rebalanced(bad, &ecmp, &ports(4), 7).unwrap_err(),
        FlowletError::TableSize(1000)
    );
    assert_eq!(*next.spec(), longer);
}
