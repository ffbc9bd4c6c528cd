//! Packet and drop counters. Each worker owns one `WorkerCounters` block and is its only
//! writer, so increments are plain relaxed load+store (no locked instructions on the hot
//! path); readers on the control lcore sum the blocks of all workers.

use std::sync::atomic::{AtomicU64, Ordering};

/// Why a packet was dropped. Every drop in the switch has exactly one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
// One byte, so verdicts that carry a reason stay small enough to return in registers.
#[repr(u8)]
pub enum DropReason {
    /// The egress device's TX ring was full.
    TxRingFull,
    /// The packet arrived on a port that has no forwarding peer.
    NoEgressPort,
    /// A chained (multi-segment) mbuf, which the pipeline does not process.
    MultiSegment,
    /// Shorter than the headers it announces.
    Truncated,
    /// Double-tagged (QinQ) or S-tagged frames; ports take at most one 802.1Q tag.
    UnsupportedVlanStack,
    /// Tagged with a VLAN the port is not a member of, or untagged on a trunk without a native
    /// VLAN, or tagged on a routed port (a priority tag, VID 0, is untagged everywhere).
    VlanNotAllowed,
    /// A multicast or broadcast source MAC, or the all-zero one (00:00:00:00:00:00): no
    /// station sends from those, and learning them would make them unicast destinations.
    InvalidSourceMac,
    /// The switch's own router MAC as the source: its own frames come back (a loop), or a
    /// host uses its address (a spoof); learned, it would draw the VLAN's frames to the router
    /// MAC to that host.
    OwnSourceMac,
    /// MAC Control frames (PAUSE/PFC) are consumed by the port, never forwarded.
    MacControl,
    /// The destination MAC is on the port the frame came from.
    SamePort,
    /// A unicast frame on a routed port addressed to another MAC, or non-ARP/ND broadcast there.
    NotForUs,
    /// IPv4 header with a bad version, header length or total length, or a malformed option
    /// list (an option without its length byte, with a length below 2, or with one that runs
    /// past the header: `wire::ipv4::scan_options`). Linux counts both as header errors
    /// (`InHdrErrors`).
    BadIpv4Header,
    /// IPv4 header checksum does not verify (RFC 1812 5.2.2).
    BadIpv4Checksum,
    /// IPv6 header with a bad version or payload length.
    BadIpv6Header,
    /// Addressed to the router MAC but neither IPv4, IPv6 nor ARP.
    NotIp,
    /// TTL or hop limit would reach zero.
    TtlExpired,
    /// No route to the destination in the VRF.
    NoRoute,
    /// Longer than the MTU of the interface it would leave by, and not to be fragmented
    /// (IPv6, or IPv4 with Don't Fragment): answered with ICMP Fragmentation Needed or
    /// ICMPv6 Packet Too Big.
    MtuExceeded,
    /// Matched a null route.
    Blackhole,
    /// The nexthop's MAC is not known yet (resolution was requested).
    NeighborUnresolved,
    /// A routed packet of a lossless class whose neighbour's MAC the MAC table lost: lossy
    /// classes flood it in the VLAN, but flooding lossless traffic can close a cycle of PFC
    /// pauses (Guo et al., SIGCOMM 2016), so it is dropped while the neighbour is asked again.
    LosslessFlood,
    /// IPv6 link-local source or destination must not be routed.
    LinkLocal,
    /// A source no packet may be routed from (RFC 1812 5.3.7, RFC 4291 2.5.2, 2.5.3, 2.7):
    /// IPv4 0/8, 127/8, multicast or class E, limited broadcast; IPv6 ::, ::1, multicast.
    MartianSource,
    /// To an address no packet may be routed to (RFC 1812 5.3.5.1, 5.3.7, RFC 4291 2.5.3,
    /// 2.7): IPv4 0/8, 127/8, multicast, class E, limited broadcast; IPv6 ::, ::1, multicast.
    MartianDestination,
    /// To the broadcast or network address of a connected IPv4 subnet: directed broadcasts
    /// are not forwarded (RFC 2644), and there is no one host to resolve.
    DirectedBroadcast,
    /// An IPv4 packet to route or for the switch itself with a Loose or Strict Source and
    /// Record Route option (types 131, 137): dropped without an ICMP error, as RFC 7126 4.3 and
    /// 4.4 advise by default and Linux does with `accept_source_route=0`.
    SourceRouteOption,
    /// Punted to the slow path (ARP, ND, ICMP for the switch) and neither answered nor learned
    /// from: malformed (a bad ICMP checksum), failing an RFC check (an NS with hop limit below
    /// 255), or nothing the switch answers (an echo reply addressed to it).
    SlowPathIgnored,
    /// To 01-80-C2-00-00-00..0F, the IEEE 802.1Q reserved addresses (STP, LACP, 802.1X,
    /// LLDP), which a bridge never forwards: they belong to the link they arrived on.
    ReservedMulticast,
    /// Every member of the ECMP group is down.
    EcmpNoLiveMember,
    /// The queue to the control plane was full.
    PuntQueueFull,
    /// No mbuf to copy a flooded frame into.
    FloodCopyFailed,
    /// No headroom left in the mbuf to insert a VLAN tag.
    NoHeadroom,
    /// Received on, or to be sent out of, a port whose link is down.
    LinkDown,
    /// The shared packet buffer is full.
    BufferFull,
    /// Tail drop: a lossy queue would exceed its byte limit.
    QueueFull,
    /// A Not-ECT frame of a lossy class dropped by the ECN/RED curve.
    RedDrop,
    /// A lossless frame found its ingress headroom full (XOFF threshold + headroom): the
    /// headroom is too small for the link (cable, speed, peer response).
    HeadroomFull,
    /// Dropped by the PFC watchdog's drop action (a queue in pause-storm state).
    PfcWatchdog,
    /// No mbuf for a frame the switch generates itself (PFC).
    ControlFrameNoMbuf,
    /// SRv6: hop limit at or below 1 at a SID that forwards (RFC 8986 S03, RFC 9800 N02);
    /// answered with ICMPv6 Time Exceeded.
    Srv6HopLimit,
    /// SRv6: Last Entry past the header or Segments Left above Last Entry + 1 (RFC 8986
    /// S05), answered with Parameter Problem code 0 pointing at Segments Left; or a Routing
    /// header of an unknown type with Segments Left above 0 (RFC 8200 4.4), pointed at its
    /// Routing Type.
    Srv6BadSrh,
    /// SRv6: an End.DT* SID reached with Segments Left not zero (RFC 8986 4.6 S02);
    /// answered with Parameter Problem code 0 pointing at Segments Left.
    Srv6SegmentsLeftNotZero,
    /// SRv6: the upper layer at the last segment is not one the SID handles (no SRH or SL 0 at
    /// End/End.X with other than ICMPv6, End.DT4 without IPv4 inside, ...); answered with
    /// Parameter Problem code 4 (SR Upper-layer Header Error).
    Srv6UpperLayer,
    /// SRv6: the extension header chain or the SRH is truncated or inconsistent with the
    /// payload length (no ICMP: nothing trustworthy to point at).
    Srv6MalformedHeaders,
    /// SRv6: more local SIDs in a row than the pipeline processes for one packet.
    Srv6TooManyLocalSids,
    /// SRv6: a policy's outer destination is routed into another policy (no nested encap).
    Srv6EncapRecursion,
}

impl DropReason {
    pub const ALL: [DropReason; 46] = [
        DropReason::TxRingFull,
        DropReason::NoEgressPort,
        DropReason::MultiSegment,
        DropReason::Truncated,
        DropReason::UnsupportedVlanStack,
        DropReason::VlanNotAllowed,
        DropReason::InvalidSourceMac,
        DropReason::OwnSourceMac,
        DropReason::MacControl,
        DropReason::SamePort,
        DropReason::NotForUs,
        DropReason::BadIpv4Header,
        DropReason::BadIpv4Checksum,
        DropReason::BadIpv6Header,
        DropReason::NotIp,
        DropReason::TtlExpired,
        DropReason::NoRoute,
        DropReason::MtuExceeded,
        DropReason::Blackhole,
        DropReason::NeighborUnresolved,
        DropReason::LosslessFlood,
        DropReason::LinkLocal,
        DropReason::MartianSource,
        DropReason::MartianDestination,
        DropReason::DirectedBroadcast,
        DropReason::SourceRouteOption,
        DropReason::SlowPathIgnored,
        DropReason::ReservedMulticast,
        DropReason::EcmpNoLiveMember,
        DropReason::PuntQueueFull,
        DropReason::FloodCopyFailed,
        DropReason::NoHeadroom,
        DropReason::LinkDown,
        DropReason::BufferFull,
        DropReason::QueueFull,
        DropReason::RedDrop,
        DropReason::HeadroomFull,
        DropReason::PfcWatchdog,
        DropReason::ControlFrameNoMbuf,
        DropReason::Srv6HopLimit,
        DropReason::Srv6BadSrh,
        DropReason::Srv6SegmentsLeftNotZero,
        DropReason::Srv6UpperLayer,
        DropReason::Srv6MalformedHeaders,
        DropReason::Srv6TooManyLocalSids,
        DropReason::Srv6EncapRecursion,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// Stable snake_case name used in counters output and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::TxRingFull => "tx_ring_full",
            DropReason::NoEgressPort => "no_egress_port",
            DropReason::MultiSegment => "multi_segment",
            DropReason::Truncated => "truncated",
            DropReason::UnsupportedVlanStack => "unsupported_vlan_stack",
            DropReason::VlanNotAllowed => "vlan_not_allowed",
            DropReason::InvalidSourceMac => "invalid_source_mac",
            DropReason::OwnSourceMac => "own_source_mac",
            DropReason::MacControl => "mac_control",
            DropReason::SamePort => "same_port",
            DropReason::NotForUs => "not_for_us",
            DropReason::BadIpv4Header => "bad_ipv4_header",
            DropReason::BadIpv4Checksum => "bad_ipv4_checksum",
            DropReason::BadIpv6Header => "bad_ipv6_header",
            DropReason::NotIp => "not_ip",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::NoRoute => "no_route",
            DropReason::MtuExceeded => "mtu_exceeded",
            DropReason::Blackhole => "blackhole",
            DropReason::NeighborUnresolved => "neighbor_unresolved",
            DropReason::LosslessFlood => "lossless_flood",
            DropReason::LinkLocal => "link_local",
            DropReason::MartianSource => "martian_source",
            DropReason::MartianDestination => "martian_destination",
            DropReason::DirectedBroadcast => "directed_broadcast",
            DropReason::SourceRouteOption => "source_route_option",
            DropReason::SlowPathIgnored => "slow_path_ignored",
            DropReason::ReservedMulticast => "reserved_multicast",
            DropReason::EcmpNoLiveMember => "ecmp_no_live_member",
            DropReason::PuntQueueFull => "punt_queue_full",
            DropReason::FloodCopyFailed => "flood_copy_failed",
            DropReason::NoHeadroom => "no_headroom",
            DropReason::LinkDown => "link_down",
            DropReason::BufferFull => "buffer_full",
            DropReason::QueueFull => "queue_full",
            DropReason::RedDrop => "red_drop",
            DropReason::HeadroomFull => "headroom_full",
            DropReason::PfcWatchdog => "pfc_watchdog",
            DropReason::ControlFrameNoMbuf => "control_frame_no_mbuf",
            DropReason::Srv6HopLimit => "srv6_hop_limit",
            DropReason::Srv6BadSrh => "srv6_bad_srh",
            DropReason::Srv6SegmentsLeftNotZero => "srv6_segments_left_not_zero",
            DropReason::Srv6UpperLayer => "srv6_upper_layer",
            DropReason::Srv6MalformedHeaders => "srv6_malformed_headers",
            DropReason::Srv6TooManyLocalSids => "srv6_too_many_local_sids",
            DropReason::Srv6EncapRecursion => "srv6_encap_recursion",
        }
    }
}

/// A counter with one writer: `add` is a relaxed load and store, not a read-modify-write.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, amount: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(amount),
            Ordering::Relaxed,
        );
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline]
    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

/// Per-port counters kept by the switch itself (the PMD keeps its own, see `PortStats`).
#[derive(Debug, Default)]
pub struct PortCounters {
    pub rx_packets: Counter,
    pub tx_packets: Counter,
    /// Receive timestamps (pcap: microseconds) of the first and last packet seen, 0 if none
    /// carried one. Sampled once per burst, so replay can tell where in the trace it is.
    pub first_rx_timestamp: Counter,
    pub last_rx_timestamp: Counter,
}

/// All counters one worker writes.
#[derive(Debug)]
pub struct WorkerCounters {
    ports: Vec<PortCounters>,
    drops: [Counter; DropReason::COUNT],
    /// Frames consumed by the slow path (not drops: they were answered or learned from).
    pub punted: Counter,
    /// Frames the slow path built and sent (ARP/ND replies and requests, echo replies, ICMP
    /// errors).
    pub generated: Counter,
    /// ICMP and ICMPv6 errors about dropped packets: built, suppressed (RFC rules, rate
    /// limit), not sent (no source address on the ingress interface, no route back, no mbuf).
    pub icmp_errors_built: Counter,
    pub icmp_errors_suppressed: Counter,
    pub icmp_errors_not_sent: Counter,
    /// IPv4 packets cut into fragments for an egress MTU, and the fragments made.
    pub fragmented: Counter,
    pub fragments: Counter,
    /// Requests (ARP, NS) asking a learned neighbour again after its reachable time, and
    /// neighbours that did not answer them and lost their MAC.
    pub neighbor_probes: Counter,
    pub neighbors_expired: Counter,
    /// Written by the worker's forwarder (`Forwarder::share_counters`): source MACs it could
    /// not learn because the MAC table was full (once per frame that tried: the frame is still
    /// forwarded, and frames to that MAC flood), and routed packets it flooded in their VLAN
    /// because the neighbour's MAC was not in the MAC table.
    pub mac_table_full: Counter,
    pub routed_flooded: Counter,
}

impl WorkerCounters {
    pub fn new(port_count: usize) -> Self {
        Self {
            ports: (0..port_count).map(|_| PortCounters::default()).collect(),
            drops: std::array::from_fn(|_| Counter::default()),
            punted: Counter::default(),
            generated: Counter::default(),
            icmp_errors_built: Counter::default(),
            icmp_errors_suppressed: Counter::default(),
            icmp_errors_not_sent: Counter::default(),
            fragmented: Counter::default(),
            fragments: Counter::default(),
            neighbor_probes: Counter::default(),
            neighbors_expired: Counter::default(),
            mac_table_full: Counter::default(),
            routed_flooded: Counter::default(),
        }
    }

    #[inline]
    pub fn port(&self, index: usize) -> &PortCounters {
        &self.ports[index]
    }

    #[inline]
    pub fn drop_packets(&self, reason: DropReason, count: u64) {
        self.drops[reason as usize].add(count);
    }

    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize].get()
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }
}

/// One port's counters summed over workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortSnapshot {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub first_rx_timestamp: Option<u64>,
    pub last_rx_timestamp: Option<u64>,
}

/// A point-in-time sum over workers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CounterSnapshot {
    pub ports: Vec<PortSnapshot>,
    /// Per reason, in `DropReason::ALL` order.
    pub drops: Vec<(DropReason, u64)>,
    pub punted: u64,
    pub generated: u64,
    pub icmp_errors: IcmpErrorCounts,
    pub fragmentation: FragmentationCounts,
    pub neighbors: NeighborCounts,
    pub mac_table: MacTableCounts,
}

/// What the MAC table missed, without a drop: learn attempts refused because the table was
/// full (`mac_table_full`: the frame is forwarded, and traffic to its source floods until
/// aging makes room), and routed packets that found their neighbour's MAC missing from the
/// table (`routed_flooded`: aged out, or flushed with its port's link), flooded in its VLAN,
/// or in a lossless class dropped as `lossless_flood`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MacTableCounts {
    pub table_full: u64,
    pub routed_flooded: u64,
}

/// Neighbour reachability: requests asking learned neighbours again after their reachable
/// time, and neighbours that did not answer and lost their MAC (their traffic is then
/// dropped as `neighbor_unresolved` while the switch resolves them afresh).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NeighborCounts {
    pub probes: u64,
    pub expired: u64,
}

/// IPv4 packets longer than their egress interface's MTU, without Don't Fragment, that the
/// switch cut into fragments (RFC 791), and the fragments it made (each then routed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragmentationCounts {
    pub packets: u64,
    pub fragments: u64,
}

/// ICMP and ICMPv6 errors about dropped packets (SRv6 endpoint errors, TTL / hop limit
/// expiry, no route), both families together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IcmpErrorCounts {
    /// Built by the slow path (sent unless counted in `not_sent`).
    pub built: u64,
    /// Not built: RFC 1812 4.3.2.7 / RFC 4443 2.4(e) forbid an error, or the rate limit.
    pub suppressed: u64,
    /// Not sent: no address on the ingress interface to send from, no route back to the
    /// source, or no mbuf.
    pub not_sent: u64,
}

impl CounterSnapshot {
    pub fn sum(workers: &[impl AsRef<WorkerCounters>]) -> Self {
        let port_count = workers.first().map_or(0, |w| w.as_ref().port_count());
        let ports = (0..port_count)
            .map(|port| {
                let each = || workers.iter().map(|w| w.as_ref().port(port));
                let nonzero = |v: u64| (v != 0).then_some(v);
                PortSnapshot {
                    rx_packets: each().map(|c| c.rx_packets.get()).sum(),
                    tx_packets: each().map(|c| c.tx_packets.get()).sum(),
                    first_rx_timestamp: each()
                        .filter_map(|c| nonzero(c.first_rx_timestamp.get()))
                        .min(),
                    last_rx_timestamp: each()
                        .filter_map(|c| nonzero(c.last_rx_timestamp.get()))
                        .max(),
                }
            })
            .collect();
        let drops = DropReason::ALL
            .iter()
            .map(|&reason| {
                (
                    reason,
                    workers.iter().map(|w| w.as_ref().dropped(reason)).sum(),
                )
            })
            .collect();
        Self {
            ports,
            drops,
            punted: workers.iter().map(|w| w.as_ref().punted.get()).sum(),
            generated: workers.iter().map(|w| w.as_ref().generated.get()).sum(),
            icmp_errors: IcmpErrorCounts {
                built: workers
                    .iter()
                    .map(|w| w.as_ref().icmp_errors_built.get())
                    .sum(),
                suppressed: workers
                    .iter()
                    .map(|w| w.as_ref().icmp_errors_suppressed.get())
                    .sum(),
                not_sent: workers
                    .iter()
                    .map(|w| w.as_ref().icmp_errors_not_sent.get())
                    .sum(),
            },
            fragmentation: FragmentationCounts {
                packets: workers.iter().map(|w| w.as_ref().fragmented.get()).sum(),
                fragments: workers.iter().map(|w| w.as_ref().fragments.get()).sum(),
            },
            neighbors: NeighborCounts {
                probes: workers
                    .iter()
                    .map(|w| w.as_ref().neighbor_probes.get())
                    .sum(),
                expired: workers
                    .iter()
                    .map(|w| w.as_ref().neighbors_expired.get())
                    .sum(),
            },
            mac_table: MacTableCounts {
                table_full: workers
                    .iter()
                    .map(|w| w.as_ref().mac_table_full.get())
                    .sum(),
                routed_flooded: workers
                    .iter()
                    .map(|w| w.as_ref().routed_flooded.get())
                    .sum(),
            },
        }
    }

    pub fn total_drops(&self) -> u64 {
        self.drops.iter().map(|(_, n)| n).sum()
    }
}

/// Counters of one SRv6 object (a local SID or a headend policy): packets and bytes it
/// matched (frame length on arrival), and how many of those the pipeline dropped, by reason.
#[derive(Debug)]
pub struct ObjectCounters {
    pub packets: Counter,
    pub bytes: Counter,
    drops: [Counter; DropReason::COUNT],
}

impl Default for ObjectCounters {
    fn default() -> Self {
        Self {
            packets: Counter::default(),
            bytes: Counter::default(),
            drops: std::array::from_fn(|_| Counter::default()),
        }
    }
}

impl ObjectCounters {
    /// Starts again from zero (a run-time SID or policy reusing a deleted one's slot). Only
    /// the writer calls it.
    pub fn reset(&self) {
        self.packets.set(0);
        self.bytes.set(0);
        for c in &self.drops {
            c.set(0);
        }
    }

    #[inline]
    pub fn count(&self, bytes: usize, dropped: Option<DropReason>) {
        self.packets.add(1);
        self.bytes.add(bytes as u64);
        if let Some(reason) = dropped {
            self.drops[reason as usize].add(1);
        }
    }

    pub fn snapshot(&self) -> ObjectSnapshot {
        ObjectSnapshot {
            packets: self.packets.get(),
            bytes: self.bytes.get(),
            drops: DropReason::ALL
                .iter()
                .map(|&r| (r, self.drops[r as usize].get()))
                .filter(|&(_, n)| n != 0)
                .collect(),
        }
    }
}

/// Per-SID and per-policy counters of one worker (indexed like `Srv6Spec::sids` and
/// `Srv6Spec::policies`). The forwarder is their only writer.
#[derive(Debug, Default)]
pub struct Srv6Counters {
    pub sids: Vec<ObjectCounters>,
    pub policies: Vec<ObjectCounters>,
}

impl Srv6Counters {
    pub fn new(sids: usize, policies: usize) -> Self {
        Self {
            sids: (0..sids).map(|_| ObjectCounters::default()).collect(),
            policies: (0..policies).map(|_| ObjectCounters::default()).collect(),
        }
    }
}

/// One SRv6 object's counters at a point in time; `drops` lists only reasons seen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectSnapshot {
    pub packets: u64,
    pub bytes: u64,
    pub drops: Vec<(DropReason, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn snapshot_sums_workers_per_port_and_reason() {
        let a = Arc::new(WorkerCounters::new(2));
        let b = Arc::new(WorkerCounters::new(2));
        a.port(0).rx_packets.add(3);
        b.port(0).rx_packets.add(4);
        b.port(1).tx_packets.add(5);
        a.port(0).first_rx_timestamp.set(20);
        b.port(0).first_rx_timestamp.set(10);
        a.port(0).last_rx_timestamp.set(90);
        a.drop_packets(DropReason::TxRingFull, 2);
        b.drop_packets(DropReason::TxRingFull, 1);
        b.drop_packets(DropReason::MultiSegment, 7);
        a.mac_table_full.add(2);
        b.mac_table_full.add(1);
        b.routed_flooded.add(4);
        let snap = CounterSnapshot::sum(&[a, b]);
        assert_eq!((snap.ports[0].rx_packets, snap.ports[0].tx_packets), (7, 0));
        assert_eq!((snap.ports[1].rx_packets, snap.ports[1].tx_packets), (0, 5));
        assert_eq!(
            snap.ports[0].first_rx_timestamp,
            Some(10),
            "earliest over workers"
        );
        assert_eq!(snap.ports[0].last_rx_timestamp, Some(90));
        assert_eq!(snap.ports[1].first_rx_timestamp, None, "0 means never seen");
        assert_eq!(snap.total_drops(), 10);
        assert!(snap.drops.contains(&(DropReason::TxRingFull, 3)));
        assert!(snap.drops.contains(&(DropReason::NoEgressPort, 0)));
        assert_eq!(
            snap.mac_table,
            MacTableCounts {
                table_full: 3,
                routed_flooded: 4
            }
        );
    }

    #[test]
    fn drop_reason_names_are_unique_snake_case() {
        let names: Vec<_> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
        for (i, name) in names.iter().enumerate() {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
            assert!(!names[i + 1..].contains(name), "duplicate {name}");
        }
        for (i, reason) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*reason as usize, i, "ALL must be in discriminant order");
        }
    }
}
