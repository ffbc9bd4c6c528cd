//! Synthetic traces: IPv4/UDP frames with real, valid headers, for the built-in demo, the
//! benchmarks and tests. Flow `i` differs from flow `j` in source address and ports, so a
//! flow hash spreads them like real traffic.

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
    /// Base addresses; flow i uses src + i.
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    /// Also spread destinations: flow i goes to the first octet of `dst_ip` and a scrambled i
    /// in the other 24 bits, so an LPM sees addresses all over the table (benchmarks of large
    /// route tables), not one cached entry.
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

/// A bijective scramble of a flow number (odd multiplier), so spread destinations are not
/// sequential.
fn scramble(flow: u32) -> u32 {
    flow.wrapping_mul(0x9e37_79b1).rotate_left(13)
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
    /// Whether `gen-trace` can write this trace as asked: a frame length in
    /// `MIN_FRAME_LEN..=MAX_FRAME_LEN`, at least one flow, and a last timestamp
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

    let src = u32::from_be_bytes(spec.src_ip)
        .wrapping_add(flow)
        .to_be_bytes();
    let dst_ip = if spec.spread_dst {
        ((u32::from_be_bytes(spec.dst_ip) & 0xff00_0000) | (scramble(flow) & 0x00ff_ffff))
            .to_be_bytes()
    } else {
        spec.dst_ip
    };
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
