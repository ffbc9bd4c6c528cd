//! Synthetic traces: IPv4/UDP frames with real, valid headers, for the built-in demo, the
//! benchmarks and tests. Flow `i` differs from flow `j` in source address and ports, so a
//! flow hash spreads them like real traffic.
//!
//! IPv4 addressing plan: flow `i`'s source is the `i`-th host address counted from `src_ip`
//! within `src_ip`'s /8, skipping every `.0` and `.255` (so each /24 gives 254 hosts) and the
//! destination's /24 (only the destination itself if `src_ip` is in that /24), and wrapping
//! from x.255.255.254 to x.0.0.1. With the defaults (10.0.1.1 to 10.0.2.1): flows 0..=253
//! come from 10.0.1.1 ..= 10.0.1.254, flow 254 from 10.0.3.1, flow 508 from 10.0.4.1, and so
//! on. Its destination is `dst_ip` (or, with `spread_dst`, a host of `dst_ip`'s /8 picked per
//! flow, never `.0`, `.255` or the flow's source). Its ports are 1024 + i % 60000 to 4791
//! (RoCEv2). So up to `max_flows()` flows (16645890 with the defaults) have distinct
//! 5-tuples, a source outside their destination's subnet, and no network- or broadcast-like
//! address in a /24.

use crate::pcap::PcapPacket;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpTraceSpec {
    /// Distinct 5-tuples, visited round-robin.
    pub flows: u32,
    pub packets: u32,
    /// Frame length as stored (no FCS): 60 is a 64-byte frame on the wire.
    pub frame_len: usize,
    /// Time between packets, nanoseconds.
    pub gap_ns: u64,
    pub start_ns: u64,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// Flow 0's source; flow i uses the i-th host after it in its /8, skipping `.0`, `.255`
    /// and the destination's /24 (see the module's addressing plan).
    pub src_ip: [u8; 4],
    /// Every flow's destination, as given (unless `spread_dst`).
    pub dst_ip: [u8; 4],
    /// Also spread destinations: flow i goes to a host of `dst_ip`'s /8 picked by a
    /// permutation of i (flow 0 to `dst_ip`), so an LPM sees addresses all over the table
    /// (benchmarks of large route tables), not one cached entry. Never a `.0` or `.255` host,
    /// never the flow's source; distinct per flow but for the rare flow whose pick was its
    /// own source (it takes the next host).
    pub spread_dst: bool,
}

impl Default for UdpTraceSpec {
    fn default() -> Self {
        Self {
            flows: 1,
            packets: 1000,
            frame_len: 60,
            gap_ns: 1_000,
            start_ns: 1_700_000_000_000_000_000,
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_ip: [10, 0, 1, 1],
            dst_ip: [10, 0, 2, 1],
            spread_dst: false,
        }
    }
}

/// A bijective scramble of a flow number (odd multiplier), so spread IPv6 destinations are
/// not sequential.
fn scramble(flow: u32) -> u32 {
    flow.wrapping_mul(0x9e37_79b1).rotate_left(13)
}

/// Host addresses in a /24 that are neither its `.0` nor its `.255`.
const HOSTS_PER_24: u32 = 254;
/// Host addresses (`HOSTS_PER_24` in each /24) in a /8: what flows' sources count through.
const HOSTS_PER_8: u32 = 65_536 * HOSTS_PER_24;
/// Multiplier of the spread-destination permutation: coprime to `HOSTS_PER_8`
/// (2^17 * 127), so `i -> i * SPREAD + b` is a bijection modulo it.
const SPREAD: u64 = 0x9e37_79b1;

/// `addr`'s number among the hosts of its /8 (`HOSTS_PER_24` per /24, `.1` first); a `.0` is
/// taken as its `.1`, a `.255` as the next /24's `.1`.
fn host_index(addr: [u8; 4]) -> u32 {
    let net = u32::from(u16::from_be_bytes([addr[1], addr[2]]));
    match addr[3] {
        0 => net * HOSTS_PER_24,
        255 => (net + 1) * HOSTS_PER_24 % HOSTS_PER_8,
        host => net * HOSTS_PER_24 + u32::from(host) - 1,
    }
}

/// Host number `index` (modulo `HOSTS_PER_8`) of the /8 `first.0.0.0`.
fn host_addr(first: u8, index: u64) -> [u8; 4] {
    let index = (index % u64::from(HOSTS_PER_8)) as u32;
    let net = (index / HOSTS_PER_24) as u16;
    let [a, b] = net.to_be_bytes();
    [first, a, b, (index % HOSTS_PER_24 + 1) as u8]
}

fn is_host(addr: [u8; 4]) -> bool {
    !matches!(addr[3], 0 | 255)
}

/// Smallest frame that holds Ethernet + IPv4 + UDP headers.
pub const MIN_UDP_FRAME: usize = 14 + 20 + 8;

/// Shortest frame `ironclos gen-trace` writes: Ethernet's minimum without FCS (a 64-byte frame
/// on the wire). `udp_frame` itself builds frames down to `MIN_UDP_FRAME`, but shorter than
/// this they are runts a real link never carries.
pub const MIN_FRAME_LEN: usize = 60;

/// Longest frame `ironclos gen-trace` writes: the pcap writer's snaplen (the IPv4 total
/// length, 14 bytes less, fits in its 16 bits).
pub const MAX_FRAME_LEN: usize = crate::pcap::SNAPLEN as usize;

/// The latest capture time a (classic, 32-bit seconds) pcap file can hold, in nanoseconds
/// since the epoch: 2106-02-07T06:28:15.999999999Z.
pub const MAX_PCAP_TIMESTAMP_NS: u64 = u32::MAX as u64 * 1_000_000_000 + 999_999_999;

impl UdpTraceSpec {
    /// The hosts the sources skip, if the fixed destination is in their /8: where they start
    /// among the sources' hosts (counted from `src_ip`) and how many. The destination's /24,
    /// unless `src_ip` is in it (then the destination alone).
    fn skipped_by_sources(&self) -> Option<(u32, u32)> {
        if self.spread_dst || self.dst_ip[0] != self.src_ip[0] {
            return None;
        }
        let src = host_index(self.src_ip);
        let from = |start: u32| (start + HOSTS_PER_8 - src) % HOSTS_PER_8;
        let dst_net = u32::from(u16::from_be_bytes([self.dst_ip[1], self.dst_ip[2]]));
        if src / HOSTS_PER_24 != dst_net {
            Some((from(dst_net * HOSTS_PER_24), HOSTS_PER_24))
        } else if is_host(self.dst_ip) {
            Some((from(host_index(self.dst_ip)), 1))
        } else {
            None
        }
    }

    /// Flows with distinct IPv4 sources: every host of `src_ip`'s /8 but those skipped (the
    /// destination's /24, or the destination alone when `src_ip` is in its /24).
    pub fn max_flows(&self) -> u32 {
        HOSTS_PER_8 - self.skipped_by_sources().map_or(0, |(_, n)| n)
    }

    /// Flow `flow`'s IPv4 source and destination (the module's addressing plan).
    pub fn addresses(&self, flow: u32) -> ([u8; 4], [u8; 4]) {
        let skip = match self.skipped_by_sources() {
            Some((start, n)) if flow >= start => n,
            _ => 0,
        };
        let src = host_addr(
            self.src_ip[0],
            u64::from(host_index(self.src_ip)) + u64::from(flow) + u64::from(skip),
        );
        if !self.spread_dst {
            return (src, self.dst_ip);
        }
        let pick = u64::from(flow) * SPREAD + u64::from(host_index(self.dst_ip));
        let mut dst = host_addr(self.dst_ip[0], pick);
        if dst == src {
            dst = host_addr(self.dst_ip[0], pick % u64::from(HOSTS_PER_8) + 1);
        }
        (src, dst)
    }

    /// Whether `gen-trace` can write this trace as asked: a frame length in
    /// `MIN_FRAME_LEN..=MAX_FRAME_LEN`, one flow to `max_flows()`, and a last timestamp
    /// (`start_ns + (packets - 1) * gap_ns`) that neither overflows nor passes what pcap holds.
    /// The error names the option (`--frame-len`, `--flows`, `--gap-ns`).
    pub fn check(&self) -> Result<(), String> {
        if !(MIN_FRAME_LEN..=MAX_FRAME_LEN).contains(&self.frame_len) {
            return Err(format!(
                "--frame-len {}: must be {MIN_FRAME_LEN}..={MAX_FRAME_LEN} bytes ({MIN_FRAME_LEN} is the \
                 shortest Ethernet frame without FCS, {MAX_FRAME_LEN} the pcap snaplen)",
                self.frame_len
            ));
        }
        if self.flows == 0 {
            return Err("--flows 0: must be at least 1".to_owned());
        }
        if self.flows > self.max_flows() {
            let [a, ..] = self.src_ip;
            return Err(format!(
                "--flows {}: at most {}: each flow has its own source address, a host of \
                 {a}.0.0.0/8 (neither .0 nor .255 in its /24) outside the destination's /24",
                self.flows,
                self.max_flows()
            ));
        }
        if self.packets > 1 {
            let steps = u64::from(self.packets - 1);
            let last = steps
                .checked_mul(self.gap_ns)
                .and_then(|span| span.checked_add(self.start_ns))
                .filter(|&last| last <= MAX_PCAP_TIMESTAMP_NS);
            if last.is_none() {
                let max_gap = MAX_PCAP_TIMESTAMP_NS.saturating_sub(self.start_ns) / steps;
                return Err(format!(
                    "--gap-ns {}: the last of {} packets would come after the last time a \
                     pcap file can hold (2106-02-07); for {} packets the gap is at most \
                     {max_gap} ns",
                    self.gap_ns, self.packets, self.packets
                ));
            }
        }
        Ok(())
    }
}

/// Internet checksum (RFC 1071) of `bytes`, folded, not inverted.
fn ones_complement_sum(bytes: &[u8], mut sum: u32) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for pair in &mut chunks {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// Builds one Ethernet/IPv4/UDP frame of `frame_len` bytes for flow `flow`, packet `seq`.
pub fn udp_frame(spec: &UdpTraceSpec, flow: u32, seq: u32) -> Vec<u8> {
    let len = spec.frame_len.max(MIN_UDP_FRAME);
    let mut frame = vec![0u8; len];
    frame[0..6].copy_from_slice(&spec.dst_mac);
    frame[6..12].copy_from_slice(&spec.src_mac);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());

    let (src, dst_ip) = spec.addresses(flow);
    let ip_total = (len - 14) as u16;
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
    ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst_ip);
    let checksum = !(ones_complement_sum(ip, 0) as u16);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());

    let udp_len = ip_total - 20;
    let src_port = 1024 + (flow % 60_000) as u16;
    let dst_port: u16 = 4791; // RoCEv2
    {
        let udp = &mut frame[34..];
        udp[0..2].copy_from_slice(&src_port.to_be_bytes());
        udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
        udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
        // Payload: the sequence number, so tests can check order.
        if udp.len() >= 12 {
            udp[8..12].copy_from_slice(&seq.to_be_bytes());
        }
    }
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src);
    pseudo[4..8].copy_from_slice(&dst_ip);
    pseudo[9] = 17;
    pseudo[10..12].copy_from_slice(&udp_len.to_be_bytes());
    let sum = ones_complement_sum(
        &frame[34..34 + usize::from(udp_len)],
        ones_complement_sum(&pseudo, 0),
    );
    let checksum = match !(sum as u16) {
        0 => 0xffff, // 0 means "no checksum" in UDP over IPv4
        c => c,
    };
    frame[40..42].copy_from_slice(&checksum.to_be_bytes());
    frame
}

/// Builds one Ethernet/IPv6/UDP frame (at least 62 bytes: 14 + 40 + 8) for flow `flow`:
/// source `2001:db8:1::` + flow, destination `2001:db8:` + a scrambled 32-bit flow spread.
pub fn udp6_frame(spec: &UdpTraceSpec, flow: u32, seq: u32) -> Vec<u8> {
    let len = spec.frame_len.max(14 + 40 + 8);
    let mut frame = vec![0u8; len];
    frame[0..6].copy_from_slice(&spec.dst_mac);
    frame[6..12].copy_from_slice(&spec.src_mac);
    frame[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let payload_len = (len - 14 - 40) as u16;
    let mut src = [0u8; 16];
    src[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    src[12..].copy_from_slice(&flow.to_be_bytes());
    let mut dst = [0u8; 16];
    dst[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    dst[4..8].copy_from_slice(&scramble(flow).to_be_bytes());
    dst[15] = 1;
    {
        let ip = &mut frame[14..54];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&payload_len.to_be_bytes());
        ip[6] = 17;
        ip[7] = 64;
        ip[8..24].copy_from_slice(&src);
        ip[24..40].copy_from_slice(&dst);
    }
    let src_port = 1024 + (flow % 60_000) as u16;
    frame[54..56].copy_from_slice(&src_port.to_be_bytes());
    frame[56..58].copy_from_slice(&4791u16.to_be_bytes());
    frame[58..60].copy_from_slice(&payload_len.to_be_bytes());
    if frame.len() >= 66 {
        frame[62..66].copy_from_slice(&seq.to_be_bytes());
    }
    let mut pseudo = Vec::with_capacity(40);
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&u32::from(payload_len).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    let sum = ones_complement_sum(&frame[54..], ones_complement_sum(&pseudo, 0));
    let checksum = match !(sum as u16) {
        0 => 0xffff,
        c => c,
    };
    frame[60..62].copy_from_slice(&checksum.to_be_bytes());
    frame
}

/// The IPv6 version of `udp_trace`.
pub fn udp6_trace(spec: &UdpTraceSpec) -> Vec<PcapPacket> {
    let flows = spec.flows.max(1);
    (0..spec.packets)
        .map(|k| PcapPacket {
            timestamp_ns: timestamp(spec, k),
            data: udp6_frame(spec, k % flows, k),
        })
        .collect()
}

/// Packet k's time, start + k * gap (saturating: `UdpTraceSpec::check` refuses specs whose
/// times do not fit).
fn timestamp(spec: &UdpTraceSpec, k: u32) -> u64 {
    spec.start_ns
        .saturating_add(u64::from(k).saturating_mul(spec.gap_ns))
}

/// Packet `k` of the trace: it belongs to flow k % flows and is sent at start + k * gap.
pub fn udp_packet(spec: &UdpTraceSpec, k: u32) -> PcapPacket {
    PcapPacket {
        timestamp_ns: timestamp(spec, k),
        data: udp_frame(spec, k % spec.flows.max(1), k),
    }
}

/// The whole trace: packet k belongs to flow k % flows and is sent at start + k * gap.
pub fn udp_trace(spec: &UdpTraceSpec) -> Vec<PcapPacket> {
    (0..spec.packets).map(|k| udp_packet(spec, k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straightforward reference: sum 16-bit words, fold, invert.
    fn reference_checksum(words: &[u8]) -> u16 {
        let mut sum: u64 = 0;
        for i in (0..words.len()).step_by(2) {
            let hi = u64::from(words[i]) << 8;
            let lo = words.get(i + 1).copied().map_or(0, u64::from);
            sum += hi | lo;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn frames_have_valid_ipv4_and_udp_checksums() {
        let spec = UdpTraceSpec {
            flows: 300,
            packets: 600,
            frame_len: 60,
            ..Default::default()
        };
        for packet in udp_trace(&spec) {
            let frame = &packet.data;
            assert_eq!(frame.len(), 60);
            assert_eq!(
                reference_checksum(&frame[14..34]),
                0,
                "IPv4 header sums to 0xffff"
            );
            let udp_len = usize::from(u16::from_be_bytes([frame[38], frame[39]]));
            let mut pseudo = Vec::new();
            pseudo.extend_from_slice(&frame[26..34]);
            pseudo.extend_from_slice(&[0, 17]);
            pseudo.extend_from_slice(&frame[38..40]);
            pseudo.extend_from_slice(&frame[34..34 + udp_len]);
            assert_eq!(reference_checksum(&pseudo), 0, "UDP checksum verifies");
        }
    }

    #[test]
    fn flows_differ_in_source_and_repeat_round_robin() {
        let spec = UdpTraceSpec {
            flows: 4,
            packets: 8,
            ..Default::default()
        };
        let trace = udp_trace(&spec);
        let key = |p: &PcapPacket| (p.data[26..30].to_vec(), p.data[34..36].to_vec());
        assert_ne!(key(&trace[0]), key(&trace[1]));
        assert_eq!(key(&trace[1]), key(&trace[5]));
        assert_eq!(trace[3].timestamp_ns - trace[2].timestamp_ns, spec.gap_ns);
    }

    #[test]
    fn spread_destinations_differ_per_flow_and_stay_valid() {
        let spec = UdpTraceSpec {
            flows: 5000,
            packets: 5000,
            spread_dst: true,
            ..Default::default()
        };
        let trace = udp_trace(&spec);
        let dsts: std::collections::HashSet<_> =
            trace.iter().map(|p| p.data[30..34].to_vec()).collect();
        assert_eq!(dsts.len(), 5000);
        for p in &trace {
            assert_eq!(p.data[30], 10, "stays inside 10.0.0.0/8");
            assert_eq!(reference_checksum(&p.data[14..34]), 0);
        }
    }

    /// A frame's IPv4 source, destination and UDP ports.
    fn five_tuple(frame: &[u8]) -> ([u8; 4], [u8; 4], u16, u16) {
        let at = |i: usize| u16::from_be_bytes([frame[i], frame[i + 1]]);
        (
            frame[26..30].try_into().unwrap(),
            frame[30..34].try_into().unwrap(),
            at(34),
            at(36),
        )
    }

    #[test]
    fn every_flow_has_its_own_5_tuple_and_sane_addresses() {
        for spec in [
            UdpTraceSpec::default(),
            UdpTraceSpec {
                spread_dst: true,
                ..Default::default()
            },
            // The demo's second trace: the sources start past the destination.
            UdpTraceSpec {
                src_ip: [10, 0, 2, 1],
                dst_ip: [10, 0, 1, 1],
                ..Default::default()
            },
            // Sources start on a network address and wrap at the end of the /8.
            UdpTraceSpec {
                src_ip: [10, 255, 255, 0],
                dst_ip: [10, 0, 0, 7],
                ..Default::default()
            },
            // The destination in the sources' first /24 (tests/ctl.rs): skipped alone.
            UdpTraceSpec {
                src_ip: [10, 0, 40, 5],
                dst_ip: [10, 0, 40, 6],
                ..Default::default()
            },
            UdpTraceSpec {
                src_ip: [10, 0, 40, 5],
                dst_ip: [20, 0, 0, 1],
                spread_dst: true,
                ..Default::default()
            },
        ] {
            let mut seen = std::collections::HashSet::new();
            for flow in 0..100_000 {
                let tuple = five_tuple(&udp_frame(&spec, flow, 0));
                let (src, dst, ..) = tuple;
                assert_ne!(src, dst, "flow {flow} of {spec:?}");
                if !spec.spread_dst && spec.src_ip[..3] != spec.dst_ip[..3] {
                    assert_ne!(src[..3], dst[..3], "flow {flow} of {spec:?}: same /24");
                }
                for addr in [src, dst] {
                    assert!(is_host(addr), "flow {flow}: {addr:?} of {spec:?}");
                }
                assert_eq!(src[0], spec.src_ip[0], "the sources stay in their /8");
                assert_eq!(dst[0], spec.dst_ip[0], "the destinations stay in their /8");
                assert!(
                    seen.insert(tuple),
                    "flow {flow} repeats {tuple:?} of {spec:?}"
                );
            }
        }
    }

    #[test]
    fn sources_count_up_from_the_base_skipping_what_is_not_a_host() {
        let spec = UdpTraceSpec::default();
        let src = |flow| spec.addresses(flow).0;
        // As before for the first /24.
        for flow in 0..254 {
            assert_eq!(src(flow), [10, 0, 1, 1 + flow as u8]);
        }
        // Then the next /24 but the destination's (10.0.2.0/24), without its .0.
        assert_eq!(src(254), [10, 0, 3, 1]);
        assert_eq!(src(255), [10, 0, 3, 2]);
        assert_eq!(src(256), [10, 0, 3, 3]);
        assert_eq!(src(254 + 253), [10, 0, 3, 254]);
        assert_eq!(src(2 * 254), [10, 0, 4, 1]);
        // A source in the destination's /24 skips the destination alone.
        let same = UdpTraceSpec {
            src_ip: [10, 0, 40, 5],
            dst_ip: [10, 0, 40, 6],
            ..Default::default()
        };
        let src = |flow| same.addresses(flow).0;
        assert_eq!((src(0), src(1)), ([10, 0, 40, 5], [10, 0, 40, 7]));
        assert_eq!(same.max_flows(), HOSTS_PER_8 - 1);
        let wrap = UdpTraceSpec {
            src_ip: [10, 255, 255, 253],
            ..Default::default()
        };
        let src = |flow| wrap.addresses(flow).0;
        assert_eq!(
            (src(0), src(1), src(2)),
            ([10, 255, 255, 253], [10, 255, 255, 254], [10, 0, 0, 1])
        );
    }

    #[test]
    fn the_most_flows_have_distinct_sources_and_one_more_is_refused() {
        let spec = UdpTraceSpec::default();
        let max = spec.max_flows();
        assert_eq!(
            max,
            (65_536 - 1) * 254,
            "every host of 10.0.0.0/8 but 10.0.2.0/24's"
        );
        let mut seen = vec![false; 1 << 24];
        for flow in 0..max {
            let (src, dst) = spec.addresses(flow);
            assert!(
                is_host(src) && src[..3] != dst[..3] && src[0] == 10,
                "{flow}: {src:?}"
            );
            let low = usize::from(src[1]) << 16 | usize::from(src[2]) << 8 | usize::from(src[3]);
            assert!(
                !std::mem::replace(&mut seen[low], true),
                "{flow}: {src:?} again"
            );
        }
        let at_most = |flows| {
            UdpTraceSpec {
                flows,
                ..spec.clone()
            }
            .check()
        };
        assert_eq!(at_most(max), Ok(()));
        let error = at_most(max + 1).unwrap_err();
        assert!(
            error.starts_with(&format!("--flows {}: at most {max}", max + 1)),
            "{error}"
        );
        // With the destination elsewhere (or spread), every host of the /8 is a source.
        let elsewhere = UdpTraceSpec {
            dst_ip: [20, 0, 0, 1],
            ..Default::default()
        };
        assert_eq!(elsewhere.max_flows(), HOSTS_PER_8);
    }

    #[test]
    fn ipv6_frames_have_valid_udp_checksums() {
        let spec = UdpTraceSpec {
            flows: 50,
            packets: 100,
            frame_len: 78,
            ..Default::default()
        };
        for packet in udp6_trace(&spec) {
            let f = &packet.data;
            assert_eq!(f.len(), 78);
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            let payload_len = usize::from(u16::from_be_bytes([f[18], f[19]]));
            assert_eq!(payload_len, 78 - 54);
            let mut pseudo = Vec::new();
            pseudo.extend_from_slice(&f[22..54]);
            pseudo.extend_from_slice(&(payload_len as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 17]);
            pseudo.extend_from_slice(&f[54..54 + payload_len]);
            assert_eq!(
                reference_checksum(&pseudo),
                0,
                "UDP over IPv6 checksum verifies"
            );
        }
    }

    #[test]
    fn short_lengths_are_raised_to_hold_the_headers() {
        let spec = UdpTraceSpec {
            frame_len: 10,
            packets: 1,
            ..Default::default()
        };
        assert_eq!(udp_trace(&spec)[0].data.len(), MIN_UDP_FRAME);
    }

    #[test]
    fn check_refuses_what_cannot_be_written_faithfully() {
        let ok = UdpTraceSpec::default();
        assert_eq!(ok.check(), Ok(()));
        fn with(f: impl FnOnce(&mut UdpTraceSpec)) -> Result<(), String> {
            let mut spec = UdpTraceSpec::default();
            f(&mut spec);
            spec.check()
        }
        for (spec, option) in [
            (with(|s| s.frame_len = 10), "--frame-len 10"),
            (with(|s| s.frame_len = 59), "--frame-len 59"),
            (with(|s| s.frame_len = 65_536), "--frame-len 65536"),
            (with(|s| s.frame_len = usize::MAX), "--frame-len"),
            (with(|s| s.flows = 0), "--flows 0"),
            (with(|s| s.gap_ns = u64::MAX), "--gap-ns"),
            // No overflow, but past 2106: the pcap writer could not store it.
            (with(|s| s.gap_ns = 3_000_000_000_000_000), "--gap-ns"),
        ] {
            let error = spec.expect_err(option);
            assert!(error.starts_with(option), "{error}");
        }
        // The extremes that can be written are accepted.
        assert_eq!(with(|s| s.frame_len = 60), Ok(()));
        assert_eq!(with(|s| s.frame_len = 65_535), Ok(()));
        // One packet has no gap after it; the largest gap for two packets ends in 2106.
        assert_eq!(
            with(|s| {
                s.packets = 1;
                s.gap_ns = u64::MAX;
            }),
            Ok(())
        );
        let last_gap = MAX_PCAP_TIMESTAMP_NS - UdpTraceSpec::default().start_ns;
        assert_eq!(
            with(|s| {
                s.packets = 2;
                s.gap_ns = last_gap;
            }),
            Ok(())
        );
        let error = with(|s| {
            s.packets = 2;
            s.gap_ns = last_gap + 1;
        })
        .unwrap_err();
        assert!(error.contains(&format!("at most {last_gap} ns")), "{error}");
    }

    #[test]
    fn the_longest_frame_round_trips_through_pcap() {
        let spec = UdpTraceSpec {
            frame_len: MAX_FRAME_LEN,
            packets: 2,
            ..Default::default()
        };
        let mut file = Vec::new();
        crate::pcap::write_pcap(&mut file, &udp_trace(&spec)).unwrap();
        let back = crate::pcap::parse_pcap(&file).unwrap();
        assert_eq!(back[1].data.len(), MAX_FRAME_LEN);
        assert_eq!(back[1].data, udp_packet(&spec, 1).data);
    }
}
