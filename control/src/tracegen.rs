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
            timestamp_ns: spec.start_ns + u64::from(k) * spec.gap_ns,
            data: udp6_frame(spec, k % flows, k),
        })
        .collect()
}

/// The whole trace: packet k belongs to flow k % flows and is sent at start + k * gap.
pub fn udp_trace(spec: &UdpTraceSpec) -> Vec<PcapPacket> {
    let flows = spec.flows.max(1);
    (0..spec.packets)
        .map(|k| PcapPacket {
            timestamp_ns: spec.start_ns + u64::from(k) * spec.gap_ns,
            data: udp_frame(spec, k % flows, k),
        })
        .collect()
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
}
