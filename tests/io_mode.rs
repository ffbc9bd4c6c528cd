//! End to end: `ironclos run` in io mode over net_pcap ports, without hugepages.

mod common;

use common::{Rng, TestDir, port_stats, replay, u64_at};
use control::pcap::PcapPacket;
use control::tracegen::{UdpTraceSpec, udp_trace};

fn pcap_port(dir: &TestDir, index: usize, rx: Option<&str>, tx: &str) -> String {
    let rx = rx
        .map(|f| format!(",rx_pcap={}", dir.file(f).display()))
        .unwrap_or_default();
    format!(
        "[[port]]\nname = \"p{index}\"\ndevargs = \"net_pcap{index}{rx},tx_pcap={}\"\n",
        dir.file(tx).display()
    )
}

fn config(dir: &TestDir, ports: &[String]) -> String {
    format!(
        "[switch]\nname = \"io-test\"\n[dataplane]\nmode = \"io\"\nworker_lcores = [1]\n{}\n\n{}",
        dir.eal_toml(),
        ports.join("\n")
    )
}

/// Frames of random lengths 60..=1514 with random bytes after a fixed Ethernet header: io mode
/// must not care what is inside.
fn random_frames(seed: u64, count: usize) -> Vec<PcapPacket> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|k| {
            let len = 60 + rng.below(1514 - 60 + 1) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            data[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
            data[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
            data[12..16].copy_from_slice(&(k as u32).to_be_bytes()); // sequence, to see order
            PcapPacket {
                timestamp_ns: 1_000_000_000 + k as u64 * 1_000,
                data,
            }
        })
        .collect()
}

fn total_bytes(packets: &[PcapPacket]) -> u64 {
    packets.iter().map(|p| p.data.len() as u64).sum()
}

#[test]
fn io_mode_forwards_every_packet_unchanged_and_in_order_both_ways() {
    let dir = TestDir::new("io-pairs");
    let a = random_frames(1, 3000);
    let b = udp_trace(&UdpTraceSpec {
        flows: 64,
        packets: 1700,
        ..Default::default()
    });
    dir.write_pcap("in0.pcap", &a);
    dir.write_pcap("in1.pcap", &b);
    let cfg = config(
        &dir,
        &[
            pcap_port(&dir, 0, Some("in0.pcap"), "out0.pcap"),
            pcap_port(&dir, 1, Some("in1.pcap"), "out1.pcap"),
        ],
    );
    let (out, stats) = replay(&dir, &cfg);

    let out1 = dir.read_pcap("out1.pcap");
    let out0 = dir.read_pcap("out0.pcap");
    assert_eq!(out1.len(), a.len(), "every packet of p0 leaves p1");
    assert_eq!(out0.len(), b.len(), "every packet of p1 leaves p0");
    for (k, (sent, got)) in a.iter().zip(&out1).enumerate() {
        assert_eq!(
            sent.data, got.data,
            "p0->p1 packet {k} changed or reordered"
        );
    }
    for (k, (sent, got)) in b.iter().zip(&out0).enumerate() {
        assert_eq!(
            sent.data, got.data,
            "p1->p0 packet {k} changed or reordered"
        );
    }

    // The switch's own counters and the PMD's agree with the files.
    let p0 = port_stats(&stats, "p0");
    let p1 = port_stats(&stats, "p1");
    assert_eq!(u64_at(p0, "/rx_packets"), a.len() as u64);
    assert_eq!(u64_at(p1, "/tx_packets"), a.len() as u64);
    assert_eq!(u64_at(p1, "/rx_packets"), b.len() as u64);
    assert_eq!(u64_at(p0, "/tx_packets"), b.len() as u64);
    assert_eq!(u64_at(p0, "/device/rx_bytes"), total_bytes(&a));
    assert_eq!(u64_at(p1, "/device/tx_bytes"), total_bytes(&out1));
    assert_eq!(u64_at(p1, "/device/rx_bytes"), total_bytes(&b));
    assert_eq!(u64_at(p0, "/device/tx_bytes"), total_bytes(&out0));
    assert_eq!(stats["stop_cause"], "inputs_exhausted");
    // The pcap PMD's timestamps reach the switch through the mbuf dynamic field (microseconds).
    assert_eq!(
        u64_at(p0, "/first_rx_timestamp_us"),
        a[0].timestamp_ns / 1_000
    );
    assert_eq!(
        u64_at(p0, "/last_rx_timestamp_us"),
        a[a.len() - 1].timestamp_ns / 1_000
    );
    assert_eq!(
        u64_at(p1, "/first_rx_timestamp_us"),
        b[0].timestamp_ns / 1_000
    );
    assert_eq!(
        u64_at(p1, "/last_rx_timestamp_us"),
        b[b.len() - 1].timestamp_ns / 1_000
    );
    for (reason, count) in stats["drops"].as_object().expect("drops") {
        assert_eq!(count, 0, "drop reason {reason}");
    }
    assert!(
        out.stdout.contains("ironclos ready: 2 ports"),
        "ready line:\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("drops: tx_ring_full=0"),
        "final counters printed:\n{}",
        out.stdout
    );
}

#[test]
fn an_odd_last_port_loops_back_to_itself() {
    let dir = TestDir::new("io-loop");
    let a = random_frames(7, 500);
    dir.write_pcap("in0.pcap", &a);
    let cfg = config(&dir, &[pcap_port(&dir, 0, Some("in0.pcap"), "out0.pcap")]);
    let (_, stats) = replay(&dir, &cfg);
    let out = dir.read_pcap("out0.pcap");
    assert_eq!(
        out.iter().map(|p| &p.data).collect::<Vec<_>>(),
        a.iter().map(|p| &p.data).collect::<Vec<_>>()
    );
    assert_eq!(u64_at(port_stats(&stats, "p0"), "/tx_packets"), 500);
}

#[test]
fn an_empty_trace_and_a_port_without_input_finish_cleanly() {
    let dir = TestDir::new("io-empty");
    dir.write_pcap("in0.pcap", &[]);
    let cfg = config(
        &dir,
        &[
            pcap_port(&dir, 0, Some("in0.pcap"), "out0.pcap"),
            pcap_port(&dir, 1, None, "out1.pcap"),
        ],
    );
    let (_, stats) = replay(&dir, &cfg);
    assert!(dir.read_pcap("out0.pcap").is_empty());
    assert!(dir.read_pcap("out1.pcap").is_empty());
    for port in ["p0", "p1"] {
        assert_eq!(u64_at(port_stats(&stats, port), "/rx_packets"), 0);
        assert_eq!(u64_at(port_stats(&stats, port), "/tx_packets"), 0);
    }
}

#[test]
fn several_port_pairs_stay_separate() {
    let dir = TestDir::new("io-four");
    let traces: Vec<Vec<PcapPacket>> = (0..4)
        .map(|i| random_frames(100 + i, 200 + 50 * i as usize))
        .collect();
    let mut ports = Vec::new();
    for (i, trace) in traces.iter().enumerate() {
        dir.write_pcap(&format!("in{i}.pcap"), trace);
        ports.push(pcap_port(
            &dir,
            i,
            Some(&format!("in{i}.pcap")),
            &format!("out{i}.pcap"),
        ));
    }
    replay(&dir, &config(&dir, &ports));
    for (input, output) in [(0, 1), (1, 0), (2, 3), (3, 2)] {
        let out = dir.read_pcap(&format!("out{output}.pcap"));
        assert_eq!(
            out.iter().map(|p| &p.data).collect::<Vec<_>>(),
            traces[input].iter().map(|p| &p.data).collect::<Vec<_>>(),
            "p{input} -> p{output}"
        );
    }
}

#[test]
fn frames_longer_than_the_mbufs_are_dropped_and_counted_not_sent_or_crashed_on() {
    // A pcap (written here: its snaplen is 262144, beyond what control::pcap writes) with
    // two 60-byte frames around a 4000-byte one, which arrives as a chain of mbufs, and a
    // 70000-byte one, past the 16 bits in which net_pcap keeps a chain's length: io mode
    // sent the first truncated and crashed in the pcap PMD's TX on the second.
    let dir = TestDir::new("io-chained");
    let frame = |len: usize, tag: u8| {
        let mut data = vec![tag; len];
        data[0..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        data
    };
    let frames = [frame(60, 1), frame(4000, 2), frame(70_000, 3), frame(60, 4)];
    let mut file = Vec::new();
    file.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&4u16.to_le_bytes());
    for word in [0u32, 0, 262_144, 1] {
        file.extend_from_slice(&word.to_le_bytes());
    }
    for (i, data) in frames.iter().enumerate() {
        let len = data.len() as u32;
        for word in [1_000_000u32, i as u32, len, len] {
            file.extend_from_slice(&word.to_le_bytes());
        }
        file.extend_from_slice(data);
    }
    std::fs::write(dir.file("in0.pcap"), &file).unwrap();
    let cfg = config(
        &dir,
        &[
            pcap_port(&dir, 0, Some("in0.pcap"), "out0.pcap"),
            pcap_port(&dir, 1, None, "out1.pcap"),
        ],
    );
    let (_, stats) = replay(&dir, &cfg);
    let out: Vec<Vec<u8>> = dir
        .read_pcap("out1.pcap")
        .into_iter()
        .map(|p| p.data)
        .collect();
    assert_eq!(out, vec![frames[0].clone(), frames[3].clone()]);
    assert_eq!(u64_at(&stats, "/drops/multi_segment"), 2);
    assert_eq!(u64_at(port_stats(&stats, "p0"), "/rx_packets"), 4);
    assert_eq!(u64_at(port_stats(&stats, "p1"), "/tx_packets"), 2);
}
