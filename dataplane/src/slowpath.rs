//! The slow path: what the switch answers itself. The fast path ([`crate::pipeline::Forwarder`])
//! punts ARP and neighbour discovery for the switch's addresses and IP packets addressed to the
//! switch; this module answers them (ARP replies, Neighbor Advertisements, echo replies), learns
//! neighbours from them, and sends the ARP requests and Neighbor Solicitations the fast path asks
//! for with `ControlRequest::Resolve` (broadcast / to the solicited-node group), and those the
//! switch worker's neighbour timers ask for to re-verify a neighbour it has a MAC for (unicast
//! to that MAC, [`SlowPath::probe`]).
//!
//! Like the pipeline it is pure and deterministic: frames and time go in, frames to send and
//! neighbours learned come out. It never touches DPDK, so the engine can run it on the control
//! lcore and tests drive it with byte arrays. It keeps no per-neighbour state: the engine feeds
//! each [`Learned`] to `Forwarder::neighbor_resolved`, which is idempotent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::clock::Picos;
use crate::pipeline::PuntReason;
use crate::pipeline::spec::{Attachment, InterfaceSpec, PortRole, SwitchSpec};
use crate::wire::icmpv4::message as icmpv4_message;
use crate::wire::icmpv6::message as icmpv6_message;
use crate::wire::ip::protocol;
use crate::wire::ndisc::solicited_node;
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, EthernetRepr, Icmpv4Packet,
    Icmpv6Packet, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, L2Info, NdiscPacket, NdiscRepr,
    NeighborFlags, VlanTag, arp, ethernet, icmpv4, icmpv6, ipv4, ipv6, parse_l2,
    walk_extension_headers,
};

/// Frames shorter than this (without FCS) are padded with zeros before they leave: the
/// Ethernet minimum, which not every PMD enforces on transmit.
const MIN_FRAME_LEN: usize = 60;

/// TTL / hop limit of the packets the switch originates (echo replies), as Linux's default.
const ORIGINATED_HOP_LIMIT: u8 = 64;

/// ND messages must arrive with hop limit 255, proof that no router forwarded them
/// (RFC 4861 section 7.1).
const ND_HOP_LIMIT: u8 = 255;

/// ff02::1, where an answer to duplicate address detection goes (RFC 4861 section 7.2.4).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// ICMP and ICMPv6 errors the switch sends per second at most, and the burst it allows, in one
/// token bucket for both families (RFC 1812 4.3.2.8 and RFC 4443 2.4(f) ask for a limit;
/// Linux's default is about 1000/s per destination).
pub const ICMP_ERRORS_PER_SECOND: u32 = 100;
pub const ICMP_ERROR_BURST: u32 = 100;

/// An ICMPv6 error must fit the IPv6 minimum MTU (RFC 4443 2.4(c)).
const IPV6_MIN_MTU: usize = 1280;

/// An ICMP (IPv4) error datagram is at most 576 bytes (RFC 1812 4.3.2.3).
const IPV4_ERROR_MAX_LEN: usize = 576;

/// DSCP of the ICMP (IPv4) errors: CS6, IP precedence 6 (INTERNETWORK CONTROL), which RFC 1812
/// 4.3.2.5 asks of Time Exceeded and Destination Unreachable (Linux does the same).
const ICMP_ERROR_DSCP: u8 = 48;

/// A frame the slow path wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The egress port.
    pub port: u16,
    /// A complete Ethernet frame (no FCS), carrying an 802.1Q tag (PCP 0) when `port` needs one
    /// for the VLAN, and padded to at least 60 bytes.
    pub frame: Vec<u8>,
}

/// What the slow path learned from a punted frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Learned {
    /// `ip` on `interface` is at `mac`; hand to `Forwarder::neighbor_resolved`.
    Neighbor {
        /// The L3 interface the neighbour was heard on.
        interface: u16,
        /// The neighbour's address.
        ip: IpAddr,
        /// Its MAC.
        mac: [u8; 6],
    },
    /// A Neighbor Advertisement without the Override flag said `ip` on `interface` is at
    /// `mac`: it resolves a neighbour the switch has no MAC for, and changes no MAC it has
    /// (RFC 4861 7.2.5); hand to `Forwarder::neighbor_resolved_unless_known`.
    NoOverride {
        interface: u16,
        ip: IpAddr,
        mac: [u8; 6],
    },
    /// `ip` on `interface` announced that it is at `mac` (gratuitous ARP, unsolicited NA)
    /// to the whole VLAN; hand to `Forwarder::neighbor_refreshed`, which changes a neighbour
    /// the switch already has and creates none.
    Refresh {
        interface: u16,
        ip: IpAddr,
        mac: [u8; 6],
    },
    /// A solicited Neighbor Advertisement without a Target Link-Layer Address option said `ip`
    /// on `interface` is reachable: how a unicast solicitation is answered (RFC 4861 7.2.4
    /// lets the option be omitted then, and Linux omits it). It confirms the MAC the switch
    /// has for that neighbour and changes or creates none (RFC 4861 7.2.5).
    Confirm { interface: u16, ip: IpAddr },
}

/// The switch's own protocol handling: ARP, IPv6 neighbour discovery and ping.
///
/// Built once from the [`SwitchSpec`]; the counters are plain fields the engine reads.
#[derive(Debug, Clone)]
pub struct SlowPath {
    router_mac: EthernetAddress,
    /// Indexed by port number.
    ports: Vec<PortRole>,
    /// Indexed by interface number.
    interfaces: Vec<InterfaceSpec>,
    /// ARP replies sent.
    pub arp_replies_sent: u64,
    /// ARP request frames sent (one per egress port: a VLAN-wide broadcast counts per member).
    pub arp_requests_sent: u64,
    /// Neighbor Advertisements sent.
    pub nd_adverts_sent: u64,
    /// Neighbor Solicitation frames sent (one per egress port, like `arp_requests_sent`).
    pub nd_solicits_sent: u64,
    /// ICMPv4 and ICMPv6 echo replies sent.
    pub echo_replies_sent: u64,
    /// Neighbours reported in `learned` (refreshes of a known neighbour included).
    pub neighbors_learned: u64,
    /// Punted frames that produced neither a frame nor a neighbour: malformed, failing a
    /// check, or simply not something the switch answers.
    pub ignored: u64,
    /// ICMP and ICMPv6 errors built (SRv6 endpoint errors, TTL / hop limit expiry, no route).
    pub icmp_errors_built: u64,
    /// Errors not built: rate limit, or RFC 1812 4.3.2.7 / RFC 4443 2.4(e) forbids one.
    pub icmp_errors_suppressed: u64,
    /// Errors that could not be sent: the ingress interface has no address of the family to
    /// send from (counted here), no route back to the source, or no mbuf (the engine counts
    /// these); none is a drop of a received packet.
    pub icmp_errors_not_sent: u64,
    /// Token bucket of the error rate limit shared by ICMP and ICMPv6: tokens and last refill.
    icmp_error_tokens: u32,
    icmp_error_refilled: Picos,
}

impl SlowPath {
    /// Takes what it needs from the spec: router MAC, port roles and interfaces.
    /// The ports' roles after a run-time VLAN membership change (`Forwarder::port_roles`):
    /// which ports a VLAN's requests go out of, and tagged or not.
    pub fn set_port_roles(&mut self, roles: Vec<PortRole>) {
        self.ports = roles;
    }

    pub fn new(spec: &SwitchSpec) -> SlowPath {
        SlowPath {
            router_mac: EthernetAddress(spec.router_mac),
            ports: spec.ports.clone(),
            interfaces: spec.interfaces.clone(),
            arp_replies_sent: 0,
            arp_requests_sent: 0,
            nd_adverts_sent: 0,
            nd_solicits_sent: 0,
            echo_replies_sent: 0,
            neighbors_learned: 0,
            ignored: 0,
            icmp_errors_built: 0,
            icmp_errors_suppressed: 0,
            icmp_errors_not_sent: 0,
            icmp_error_tokens: ICMP_ERROR_BURST,
            icmp_error_refilled: 0,
        }
    }

    /// Builds the ICMPv6 error `error` about `frame` (as received, at most one 802.1Q tag):
    /// an untagged Ethernet frame (MACs left for the forwarder to fill) carrying IPv6 from the
    /// offending packet's destination (the local SID it was addressed to) to its source, hop
    /// limit 64, quoting as much of the offending packet as keeps the error within the IPv6
    /// minimum MTU (RFC 4443 2.4(c)).
    ///
    /// `None` when RFC 4443 2.4(e) forbids an error (the offending packet is itself an ICMPv6
    /// error, or came from an unspecified or multicast source, or to a multicast address, or
    /// as a link-layer multicast), when the frame is malformed, or past the rate limit of
    /// [`ICMP_ERRORS_PER_SECOND`] (burst [`ICMP_ERROR_BURST`]), which all ICMP and ICMPv6
    /// errors share.
    pub fn icmpv6_error(
        &mut self,
        frame: &[u8],
        _in_port: u16,
        error: crate::pipeline::Icmpv6Error,
        now: Picos,
    ) -> Option<Vec<u8>> {
        let built = self.build_icmpv6_error(frame, error, now);
        match built {
            Some(_) => self.icmp_errors_built += 1,
            None => self.icmp_errors_suppressed += 1,
        }
        built
    }

    fn build_icmpv6_error(
        &mut self,
        frame: &[u8],
        error: crate::pipeline::Icmpv6Error,
        now: Picos,
    ) -> Option<Vec<u8>> {
        let (offending, src, dst) = ipv6_error_allowed(frame)?;
        // Rate limit last, so suppressed packets do not spend tokens.
        if !self.take_error_token(now) {
            return None;
        }
        emit_icmpv6_error(
            self.router_mac,
            offending,
            dst,
            src,
            (error.msg_type, error.code, u32::from(error.pointer)),
        )
    }

    /// Builds the error a router sends about a packet it dropped while routing (`frame` as
    /// received on the interface `error.interface`, at most one 802.1Q tag): ICMP Time
    /// Exceeded or Destination Unreachable (net unreachable) for IPv4, ICMPv6 Time Exceeded or
    /// Destination Unreachable (no route) for IPv6. The result is an untagged Ethernet frame
    /// (MACs left for the forwarder to fill) from the ingress interface's address (the one on
    /// the offending source's subnet, else its first of the family) to the offending packet's
    /// source; route it in `error.vrf`.
    ///
    /// IPv4 (RFC 792, RFC 1812 4.3.2): TTL 64, DSCP CS6 (precedence 6, RFC 1812 4.3.2.5, as
    /// Linux), ECN 0, DF set and identification 0 (an atomic datagram, RFC 6864, like echo
    /// replies), quoting the offending datagram from its IP header on, as much as keeps the
    /// error within 576 bytes (RFC 1812 4.3.2.3). IPv6: as [`Self::icmpv6_error`] (hop limit
    /// 64, traffic class 0, quoting up to the 1280-byte minimum MTU).
    ///
    /// `None`, counted in `icmp_errors_suppressed`, when the RFCs forbid an error (RFC 1812
    /// 4.3.2.7, RFC 4443 2.4(e)): the packet is an ICMP error (ICMPv4 types 3, 4, 5, 11, 12;
    /// ICMPv6 types below 128), a non-first IPv4 fragment, sent to an IP broadcast (limited,
    /// or directed to a connected subnet) or multicast address, or as a link-layer broadcast
    /// or multicast, or its source is not a unicast host (IPv4: 0.0.0.0, 127/8, multicast,
    /// 240/4, broadcast; IPv6: unspecified or multicast); or past the shared rate limit; or
    /// the frame is malformed. `None`, counted in `icmp_errors_not_sent`, when the ingress
    /// interface has no address of the packet's family to send from (IPv6: no global one),
    /// or the IPv6 source is link-local (never routed).
    pub fn router_error(
        &mut self,
        frame: &[u8],
        error: crate::pipeline::RouterError,
        now: Picos,
    ) -> Option<Vec<u8>> {
        debug_assert!(
            error.kind != crate::pipeline::RouterErrorKind::PacketTooBig,
            "Packet Too Big names an MTU: packet_too_big"
        );
        self.count_router_error(frame, error, 0, now)
    }

    /// [`Self::router_error`] for `RouterErrorKind::PacketTooBig`: ICMP Fragmentation Needed
    /// (type 3 code 4) carrying `next_hop_mtu` (RFC 1191), or ICMPv6 Packet Too Big carrying
    /// it (RFC 4443 3.2), from the ingress interface to the packet's source, under the same
    /// rules and rate limit as the other router errors.
    pub fn packet_too_big(
        &mut self,
        frame: &[u8],
        error: crate::pipeline::RouterError,
        next_hop_mtu: u16,
        now: Picos,
    ) -> Option<Vec<u8>> {
        self.count_router_error(frame, error, next_hop_mtu, now)
    }

    fn count_router_error(
        &mut self,
        frame: &[u8],
        error: crate::pipeline::RouterError,
        mtu: u16,
        now: Picos,
    ) -> Option<Vec<u8>> {
        match self.build_router_error(frame, error, mtu, now) {
            Ok(built) => {
                self.icmp_errors_built += 1;
                Some(built)
            }
            Err(NotBuilt::Suppressed) => {
                self.icmp_errors_suppressed += 1;
                None
            }
            Err(NotBuilt::NoSource) => {
                self.icmp_errors_not_sent += 1;
                None
            }
        }
    }

    fn build_router_error(
        &mut self,
        frame: &[u8],
        error: crate::pipeline::RouterError,
        mtu: u16,
        now: Picos,
    ) -> Result<Vec<u8>, NotBuilt> {
        let iface = self
            .interfaces
            .get(usize::from(error.interface))
            .ok_or(NotBuilt::Suppressed)?;
        let (l2, _) = split_l2(frame).ok_or(NotBuilt::Suppressed)?;
        match l2.ethertype {
            EtherType::IPV4 => {
                let (offending, src) = self
                    .ipv4_error_allowed(frame, error.vrf)
                    .ok_or(NotBuilt::Suppressed)?;
                let source = iface
                    .ipv4
                    .iter()
                    .find(|&&(own, len)| in_subnet4(src, own, len))
                    .or_else(|| iface.ipv4.first())
                    .ok_or(NotBuilt::NoSource)?
                    .0;
                if !self.take_error_token(now) {
                    return Err(NotBuilt::Suppressed);
                }
                emit_icmpv4_error(
                    self.router_mac,
                    offending,
                    source,
                    src,
                    error.kind.icmpv4(mtu),
                )
                .ok_or(NotBuilt::Suppressed)
            }
            EtherType::IPV6 => {
                let (offending, src, _) = ipv6_error_allowed(frame).ok_or(NotBuilt::Suppressed)?;
                // A link-local source is reachable only on its link, which the error would
                // have to leave by a route: it is never routed (the fast path's rule).
                if src.is_unicast_link_local() {
                    return Err(NotBuilt::NoSource);
                }
                // On the source's subnet, else a global address (a link-local one cannot
                // source a routed error), else none.
                let source = iface
                    .ipv6
                    .iter()
                    .find(|&&(own, len)| in_subnet6(src, own, len))
                    .or_else(|| {
                        iface
                            .ipv6
                            .iter()
                            .find(|&&(own, _)| !own.is_unicast_link_local())
                    })
                    .ok_or(NotBuilt::NoSource)?
                    .0;
                if !self.take_error_token(now) {
                    return Err(NotBuilt::Suppressed);
                }
                let message = error.kind.icmpv6(mtu);
                emit_icmpv6_error(self.router_mac, offending, source, src, message)
                    .ok_or(NotBuilt::Suppressed)
            }
            _ => Err(NotBuilt::Suppressed),
        }
    }

    /// The offending IPv4 datagram (from its header to its total length) and its source, if
    /// RFC 1812 4.3.2.7 allows an ICMP error about it.
    fn ipv4_error_allowed<'f>(&self, frame: &'f [u8], vrf: u16) -> Option<(&'f [u8], Ipv4Addr)> {
        let (l2, l3) = split_l2(frame)?;
        if l2.dst.0[0] & 1 != 0 {
            return None;
        }
        let packet = Ipv4Packet::new_checked(l3).ok()?;
        if !packet.verify_checksum() || packet.frag_offset() != 0 {
            return None;
        }
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        let reserved = |a: Ipv4Addr| a.octets()[0] >= 240;
        if !is_unicast_source_v4(src)
            || reserved(src)
            || dst.is_broadcast()
            || dst.is_multicast()
            || self.is_directed_broadcast_v4(vrf, src)
            || self.is_directed_broadcast_v4(vrf, dst)
        {
            return None;
        }
        let offending = &l3[..usize::from(packet.total_len())];
        let header_len = packet.header_len();
        if packet.protocol() == protocol::ICMP
            && offending.get(header_len).is_some_and(|&t| {
                matches!(
                    t,
                    icmpv4_message::DEST_UNREACHABLE
                        | icmpv4_message::SOURCE_QUENCH
                        | icmpv4_message::REDIRECT
                        | icmpv4_message::TIME_EXCEEDED
                        | icmpv4_message::PARAM_PROBLEM
                )
            })
        {
            return None;
        }
        Some((offending, src))
    }

    /// The broadcast address of one of `vrf`'s connected IPv4 subnets (prefixes up to /30;
    /// /31 and /32 have none).
    fn is_directed_broadcast_v4(&self, vrf: u16, addr: Ipv4Addr) -> bool {
        self.interfaces
            .iter()
            .filter(|i| i.vrf == vrf)
            .flat_map(|i| i.ipv4.iter())
            .any(|&(own, len)| {
                len <= 30 && {
                    let host = u32::MAX >> len;
                    u32::from(addr) == (u32::from(own) | host)
                }
            })
    }

    /// Takes a token from the ICMP error rate limit (RFC 1812 4.3.2.8, RFC 4443 2.4(f)): one
    /// bucket for every error the switch sends, IPv4 and IPv6, refilled at
    /// [`ICMP_ERRORS_PER_SECOND`] up to [`ICMP_ERROR_BURST`].
    fn take_error_token(&mut self, now: Picos) -> bool {
        let elapsed = now.saturating_sub(self.icmp_error_refilled);
        let refill =
            elapsed / (crate::clock::PICOS_PER_SECOND / Picos::from(ICMP_ERRORS_PER_SECOND));
        if refill > 0 {
            self.icmp_error_tokens =
                (self.icmp_error_tokens as u64 + refill).min(u64::from(ICMP_ERROR_BURST)) as u32;
            self.icmp_error_refilled = now;
        }
        if self.icmp_error_tokens == 0 {
            return false;
        }
        self.icmp_error_tokens -= 1;
        true
    }

    /// Handles one frame the fast path punted: `frame` exactly as received on `in_port` (at
    /// most one 802.1Q tag), `reason` and `interface` from `Verdict::Punt`.
    ///
    /// Replies go to `out` (always out of `in_port`, tagged per its role), neighbours to
    /// `learned`. Anything malformed, failing a protocol check, or not answered is counted in
    /// `ignored`, never a panic.
    ///
    /// The frame's content decides more than `reason` does: a unicast Neighbor Advertisement
    /// answering one of our solicitations, or a unicast NS probing reachability, is addressed
    /// to one of the switch's IPv6 addresses, so the fast path punts it as
    /// [`PuntReason::Local`]; it is handled as neighbour discovery all the same.
    ///
    /// `_now` is accepted so that rate limits can come without changing callers; nothing here
    /// depends on time yet.
    #[allow(clippy::too_many_arguments)]
    pub fn handle_punt(
        &mut self,
        frame: &[u8],
        in_port: u16,
        reason: PuntReason,
        interface: u16,
        _now: Picos,
        out: &mut Vec<Outgoing>,
        learned: &mut Vec<Learned>,
    ) {
        let before = (out.len(), learned.len());
        let ctx = Punt {
            in_port,
            interface,
            out,
            learned,
            to_sid: reason == PuntReason::LocalSid,
        };
        // Each handler returns None at its first failed check: the counter below sees that
        // nothing came out.
        let _ = match reason {
            PuntReason::Arp => self.handle_arp(frame, ctx),
            PuntReason::NeighborDiscovery | PuntReason::Local | PuntReason::LocalSid => {
                self.handle_ip(frame, ctx)
            }
            PuntReason::Announcement => {
                self.overhear(frame, interface, ctx.learned);
                Some(())
            }
        };
        if (out.len(), learned.len()) == before {
            self.ignored += 1;
        }
    }

    /// Listens to an ARP packet or a Neighbor Advertisement flooded in the VLAN of L3
    /// interface `interface`, or sent to a multicast address on that routed port
    /// (`PuntReason::Announcement`) (`frame` as received, at most one tag): a neighbour that changed
    /// its MAC says so to everyone (gratuitous ARP, RFC 5227; unsolicited NA with Override,
    /// RFC 4861 7.2.6), and a switch that kept the old MAC would black-hole it. Yields
    /// `Learned::Refresh` for the sender (ARP) or target (NA) under the rules punted frames
    /// are learned by (a unicast neighbour MAC, an on-link address that is not ours).
    pub fn overhear(&mut self, frame: &[u8], interface: u16, learned: &mut Vec<Learned>) {
        let Some((l2, l3)) = split_l2(frame) else {
            return;
        };
        let Some(iface) = self.interfaces.get(usize::from(interface)) else {
            return;
        };
        if l2.ethertype == EtherType::ARP {
            let Ok(arp) = ArpRepr::parse(&ArpPacket::new_unchecked(l3)) else {
                return;
            };
            let sender = arp.source_protocol_addr;
            let ours = iface.ipv4.iter().any(|&(own, _)| own == sender);
            let on_link = iface
                .ipv4
                .iter()
                .any(|&(net, len)| in_subnet4(sender, net, len));
            if self.is_neighbor_mac(arp.source_hardware_addr)
                && !sender.is_unspecified()
                && !ours
                && on_link
            {
                learned.push(Learned::Refresh {
                    interface,
                    ip: IpAddr::V4(sender),
                    mac: arp.source_hardware_addr.0,
                });
            }
            return;
        }
        // An NA to all nodes: the punted-frame rules apply (checksum, hop limit 255, not
        // solicited when multicast, an on-link target), then its result is only a refresh.
        let mut out = Vec::new();
        let mut heard = Vec::new();
        let ctx = Punt {
            in_port: 0,
            interface,
            out: &mut out,
            learned: &mut heard,
            to_sid: false,
        };
        if l2.ethertype == EtherType::IPV6 && is_neighbor_advert(l3) {
            let _ = self.handle_ip(frame, ctx);
        }
        for entry in heard {
            // An announcement without Override changes no MAC the switch has, and it
            // creates none: nothing to hear.
            if let Learned::Neighbor { interface, ip, mac } = entry {
                learned.push(Learned::Refresh { interface, ip, mac });
            }
        }
    }

    /// Sends what resolves `ip` on `interface`: an ARP request (IPv4) or a Neighbor
    /// Solicitation to the solicited-node address (IPv6), from the router MAC and the
    /// interface address on the same subnet as `ip` (else its first address of that family).
    ///
    /// A routed port gets one frame; a VLAN interface one per member port of the VLAN, tagged
    /// per port. Nothing is sent for an unknown interface, one without an address of `ip`'s
    /// family, or an `ip` that cannot be a neighbour (unspecified, multicast, broadcast, or the
    /// switch's own).
    pub fn resolve(&mut self, interface: u16, ip: IpAddr, _now: Picos, out: &mut Vec<Outgoing>) {
        self.request(interface, ip, None, out);
    }

    /// Asks a neighbour the switch has a MAC for, `mac`, whether it is still there (neighbour
    /// unreachability detection): the request [`Self::resolve`] sends, but unicast to `mac`,
    /// as RFC 4861 7.3.3 has a node in the PROBE state do and Linux does for ARP too
    /// (`ucast_probes`; RFC 1122 2.3.2.1 suggests unicast polls). So a refresh disturbs only
    /// the neighbour it is about, not every host of the VLAN:
    ///
    /// * ARP: Ethernet destination `mac`, the rest as a broadcast request's (target hardware
    ///   address 00:00:00:00:00:00).
    /// * ND: Ethernet destination `mac` and IPv6 destination the target address itself, not
    ///   its solicited-node group; hop limit 255 and the source link-layer address option as
    ///   ever (RFC 4861 7.2.2: with it, the target need not resolve the switch to answer).
    ///
    /// A routed port gets one frame. On a VLAN interface it leaves only `port`, where the
    /// bridge has `mac` (its MAC table), tagged as that port needs; with no such port (the
    /// MAC aged out of the table, or `port` is not a member of the VLAN) it leaves every
    /// member, as the bridge floods an unknown unicast. A `mac` no neighbour can have (group,
    /// zero, the router's) is not aimed at: the request goes as [`Self::resolve`]'s.
    pub fn probe(
        &mut self,
        interface: u16,
        ip: IpAddr,
        mac: [u8; 6],
        port: Option<u16>,
        _now: Picos,
        out: &mut Vec<Outgoing>,
    ) {
        let mac = EthernetAddress(mac);
        if !self.is_neighbor_mac(mac) {
            self.request(interface, ip, None, out);
            return;
        }
        self.request(interface, ip, Some((mac, port)), out);
    }

    /// An ARP request or NS for `ip` out of `interface`: broadcast / to the solicited-node
    /// group out of every port of the interface when `unicast` is None; else to its MAC, out
    /// of its port when that is a member of the interface's VLAN (see [`Self::probe`]).
    fn request(
        &mut self,
        interface: u16,
        ip: IpAddr,
        unicast: Option<(EthernetAddress, Option<u16>)>,
        out: &mut Vec<Outgoing>,
    ) {
        let Some(iface) = self.interfaces.get(usize::from(interface)) else {
            return;
        };
        let to = unicast.map(|(mac, _)| mac);
        let frame = match ip {
            IpAddr::V4(target) => self.arp_request(iface, target, to),
            IpAddr::V6(target) => self.neighbor_solicit(iface, target, to),
        };
        let Some(frame) = frame else { return };
        let vlan = vlan_of(iface);
        let ports: Vec<u16> = match iface.attachment {
            Attachment::Port(port) => vec![port],
            Attachment::Vlan(v) => match unicast.and_then(|(_, port)| port) {
                Some(port) if self.is_member(port, v) => vec![port],
                _ => (0..self.ports.len())
                    .filter_map(|p| u16::try_from(p).ok())
                    .filter(|&p| self.is_member(p, v))
                    .collect(),
            },
        };
        for port in ports {
            let Some(outgoing) = self.finish(port, vlan, &frame) else {
                continue;
            };
            out.push(outgoing);
            match ip {
                IpAddr::V4(_) => self.arp_requests_sent += 1,
                IpAddr::V6(_) => self.nd_solicits_sent += 1,
            }
        }
    }

    // ---- ARP -------------------------------------------------------------------------------

    /// ARP for one of the interface's addresses: answer requests, learn from requests and
    /// from replies to us.
    fn handle_arp(&mut self, frame: &[u8], ctx: Punt<'_>) -> Option<()> {
        let (l2, l3) = split_l2(frame)?;
        if l2.ethertype != EtherType::ARP {
            return None;
        }
        let iface = self.interfaces.get(usize::from(ctx.interface))?;
        let arp = ArpRepr::parse(&ArpPacket::new_unchecked(l3)).ok()?;
        // Answering or learning a multicast or zero MAC would aim traffic at a group or at
        // nobody; our own MAC means the frame looped back.
        if !self.is_neighbor_mac(arp.source_hardware_addr) {
            return None;
        }
        let ours = |a: Ipv4Addr| iface.ipv4.iter().any(|&(own, _)| own == a);
        if !ours(arp.target_protocol_addr) {
            return None;
        }
        let sender = arp.source_protocol_addr;
        // RFC 5227: a probe (sender 0.0.0.0) asks whether the address is taken; it is, so it is
        // answered, but it teaches nothing. A sender claiming our own address is a conflict,
        // not a neighbour; an off-subnet sender cannot be reached directly.
        let learnable = !sender.is_unspecified()
            && !ours(sender)
            && iface
                .ipv4
                .iter()
                .any(|&(net, len)| in_subnet4(sender, net, len));
        match arp.operation {
            ArpOperation::REQUEST => {
                let mut buf = [0u8; ethernet::HEADER_LEN + arp::PACKET_LEN];
                let len = arp.reply(self.router_mac).emit_frame(&mut buf).ok()?;
                let outgoing = self.finish(ctx.in_port, vlan_of(iface), &buf[..len])?;
                ctx.out.push(outgoing);
                self.arp_replies_sent += 1;
            }
            ArpOperation::REPLY => {}
            _ => return None,
        }
        if learnable {
            self.learn(
                ctx.learned,
                ctx.interface,
                IpAddr::V4(sender),
                arp.source_hardware_addr,
            );
        }
        Some(())
    }

    /// An ARP request frame (untagged, unpadded) for `target`, broadcast or, with `to`, unicast
    /// to that MAC; None when there is nothing sensible to send.
    fn arp_request(
        &self,
        iface: &InterfaceSpec,
        target: Ipv4Addr,
        to: Option<EthernetAddress>,
    ) -> Option<Vec<u8>> {
        if target.is_unspecified()
            || target.is_broadcast()
            || target.is_multicast()
            || iface.ipv4.iter().any(|&(own, _)| own == target)
        {
            return None;
        }
        let source = iface
            .ipv4
            .iter()
            .find(|&&(net, len)| in_subnet4(target, net, len))
            .or_else(|| iface.ipv4.first())?
            .0;
        // A unicast request (a refresh) keeps the target hardware address zero rather than
        // the cached MAC: in RFC 826 the requester does not know it (the responder fills it
        // in when it answers), Linux's `arp_process` does not read it in a request, and
        // Linux's own unicast probes (`arp_solicit`, which passes no target_hw to
        // `arp_create`) zero it too. So a refresh is a broadcast request readdressed,
        // nothing a host could treat otherwise.
        let request = ArpRepr {
            operation: ArpOperation::REQUEST,
            source_hardware_addr: self.router_mac,
            source_protocol_addr: source,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: target,
        };
        let mut buf = vec![0u8; ethernet::HEADER_LEN + arp::PACKET_LEN];
        let len = request.emit_frame(&mut buf).ok()?;
        buf.truncate(len);
        if let Some(mac) = to {
            // `emit_frame` sends requests to broadcast: readdress the Ethernet header.
            buf[..6].copy_from_slice(&mac.0);
        }
        Some(buf)
    }

    // ---- IPv4 / IPv6 -----------------------------------------------------------------------

    /// IP punts: neighbour discovery (whatever the reason, see [`Self::handle_punt`]) and
    /// echo requests.
    fn handle_ip(&mut self, frame: &[u8], ctx: Punt<'_>) -> Option<()> {
        let (l2, l3) = split_l2(frame)?;
        match l2.ethertype {
            EtherType::IPV4 => self.handle_ipv4(&l2, l3, ctx),
            EtherType::IPV6 => self.handle_ipv6(&l2, l3, ctx),
            _ => None,
        }
    }

    /// An IPv4 packet for the switch: only echo requests are answered.
    fn handle_ipv4(&mut self, l2: &L2Info, l3: &[u8], ctx: Punt<'_>) -> Option<()> {
        let iface = self.interfaces.get(usize::from(ctx.interface))?;
        let packet = Ipv4Packet::new_checked(l3).ok()?;
        // Checks the header checksum and rejects fragments: a fragmented echo request would
        // need reassembly, which the switch does not do.
        let ip = Ipv4Repr::parse(&packet).ok()?;
        if ip.protocol != protocol::ICMP
            || !self.is_local_v4(iface.vrf, ip.dst_addr)
            || !is_unicast_source_v4(ip.src_addr)
            || !self.is_neighbor_mac(l2.src)
        {
            return None;
        }
        // The payload view ends at the total length, so Ethernet padding is not echoed.
        let request = Icmpv4Packet::new_checked(packet.payload()).ok()?;
        if request.msg_type() != icmpv4_message::ECHO_REQUEST
            || request.msg_code() != 0
            || !request.verify_checksum()
        {
            return None;
        }
        let message = packet.payload();
        let at = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
        let mut buf = vec![0u8; at + message.len()];
        // Back to the MAC it came from: the host itself, or the router in front of it.
        EthernetRepr {
            src_addr: self.router_mac,
            dst_addr: l2.src,
            ethertype: EtherType::IPV4,
        }
        .emit(&mut buf)
        .ok()?;
        Ipv4Repr {
            src_addr: ip.dst_addr,
            dst_addr: ip.src_addr,
            protocol: protocol::ICMP,
            payload_len: message.len(),
            ttl: ORIGINATED_HOP_LIMIT,
            // Same class of service as the request (like Linux); ECN belongs to transports.
            dscp: ip.dscp,
            ecn: Ecn::NotEct,
            // DF set makes the datagram atomic, so the identification is unused (RFC 6864).
            ident: 0,
            dont_frag: true,
        }
        .emit(&mut buf[ethernet::HEADER_LEN..])
        .ok()?;
        buf[at..].copy_from_slice(message);
        let mut reply = Icmpv4Packet::new_checked(&mut buf[at..]).ok()?;
        reply.set_msg_type(icmpv4_message::ECHO_REPLY);
        reply.fill_checksum();
        let outgoing = self.finish(ctx.in_port, vlan_of(iface), &buf)?;
        ctx.out.push(outgoing);
        self.echo_replies_sent += 1;
        Some(())
    }

    /// An IPv6 packet punted to the switch: neighbour discovery or an echo request.
    fn handle_ipv6(&mut self, l2: &L2Info, l3: &[u8], ctx: Punt<'_>) -> Option<()> {
        let packet = Ipv6Packet::new_checked(l3).ok()?;
        let upper = walk_extension_headers(&packet).ok()?;
        // RFC 6980 forbids fragmented ND, and echo would need reassembly.
        if upper.fragment || upper.protocol != protocol::ICMPV6 {
            return None;
        }
        let end = ipv6::HEADER_LEN + usize::from(packet.payload_len());
        let message = l3.get(upper.offset..end)?;
        let icmp = Icmpv6Packet::new_checked(message).ok()?;
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        if !icmp.verify_checksum(&src, &dst) {
            return None;
        }
        match icmp.msg_type() {
            icmpv6_message::NEIGHBOR_SOLICIT | icmpv6_message::NEIGHBOR_ADVERT => {
                if packet.hop_limit() != ND_HOP_LIMIT {
                    return None;
                }
                self.handle_nd(l2, src, dst, message, ctx)
            }
            icmpv6_message::ECHO_REQUEST if icmp.msg_code() == 0 => {
                self.echo_v6(l2, &packet, message, ctx)
            }
            _ => None,
        }
    }

    /// A checksum-verified ND message with hop limit 255: answer solicitations for the
    /// interface's addresses, learn solicitors and advertised targets.
    fn handle_nd(
        &mut self,
        l2: &L2Info,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        message: &[u8],
        ctx: Punt<'_>,
    ) -> Option<()> {
        let iface = self.interfaces.get(usize::from(ctx.interface))?;
        // Rejects bad option lengths and multicast targets (RFC 4861 sections 7.1.1, 7.1.2).
        let nd = NdiscRepr::parse(&NdiscPacket::new_checked(message).ok()?).ok()?;
        if src.is_multicast() {
            return None;
        }
        let ours = |a: Ipv6Addr| iface.ipv6.iter().any(|&(own, _)| own == a);
        match nd {
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr,
            } => {
                if !ours(target_addr) {
                    return None;
                }
                let dad = src.is_unspecified();
                // RFC 4861 section 7.1.1: duplicate address detection goes to the
                // solicited-node address and carries no link-layer address.
                if dad && (lladdr.is_some() || dst != solicited_node(&target_addr)) {
                    return None;
                }
                if lladdr.is_some_and(|mac| !self.is_neighbor_mac(mac)) {
                    return None;
                }
                let (eth_dst, ip_dst) = if dad {
                    (EthernetAddress::from_ipv6_multicast(&ALL_NODES), ALL_NODES)
                } else {
                    // A unicast NS probing reachability may omit the option (RFC 4861
                    // section 4.3); the frame's source MAC is then the solicitor's.
                    let mac = lladdr.unwrap_or(l2.src);
                    if !self.is_neighbor_mac(mac) {
                        return None;
                    }
                    (mac, src)
                };
                let learn = lladdr.filter(|_| self.is_on_link_v6(iface, src));
                let vlan = vlan_of(iface);
                let advert = nd.advert_for(&src, self.router_mac)?;
                let mut buf = vec![0u8; frame_len_v6(advert.buffer_len())];
                let len = advert
                    .emit_frame(self.router_mac, eth_dst, &target_addr, &ip_dst, &mut buf)
                    .ok()?;
                let outgoing = self.finish(ctx.in_port, vlan, &buf[..len])?;
                ctx.out.push(outgoing);
                self.nd_adverts_sent += 1;
                // Only with the option: the Ethernet source of a unicast NS may be a proxy's.
                if let Some(mac) = learn {
                    self.learn(ctx.learned, ctx.interface, IpAddr::V6(src), mac);
                }
                Some(())
            }
            NdiscRepr::NeighborAdvert {
                flags,
                target_addr,
                lladdr,
            } => {
                // RFC 4861 section 7.1.2: a multicast advertisement cannot be solicited.
                if dst.is_multicast() && flags.contains(NeighborFlags::SOLICITED) {
                    return None;
                }
                let Some(mac) = lladdr else {
                    // RFC 4861 7.2.5: without the option, a solicited advertisement (the
                    // answer to a unicast NS, which the switch's refreshes are) confirms the
                    // MAC the switch has; an unsolicited one says nothing.
                    if !flags.contains(NeighborFlags::SOLICITED)
                        || !self.is_on_link_v6(iface, target_addr)
                    {
                        return None;
                    }
                    ctx.learned.push(Learned::Confirm {
                        interface: ctx.interface,
                        ip: IpAddr::V6(target_addr),
                    });
                    self.neighbors_learned += 1;
                    return Some(());
                };
                if !self.is_neighbor_mac(mac) || !self.is_on_link_v6(iface, target_addr) {
                    return None;
                }
                if flags.contains(NeighborFlags::OVERRIDE) {
                    self.learn(ctx.learned, ctx.interface, IpAddr::V6(target_addr), mac);
                } else {
                    ctx.learned.push(Learned::NoOverride {
                        interface: ctx.interface,
                        ip: IpAddr::V6(target_addr),
                        mac: mac.0,
                    });
                    self.neighbors_learned += 1;
                }
                Some(())
            }
        }
    }

    /// Answers an ICMPv6 echo request (checksum already verified) to one of our addresses.
    fn echo_v6(
        &mut self,
        l2: &L2Info,
        packet: &Ipv6Packet<&[u8]>,
        message: &[u8],
        ctx: Punt<'_>,
    ) -> Option<()> {
        let iface = self.interfaces.get(usize::from(ctx.interface))?;
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        if !(ctx.to_sid || self.is_local_v6(iface.vrf, dst))
            || src.is_unspecified()
            || src.is_multicast()
            || src.is_loopback()
            || !self.is_neighbor_mac(l2.src)
            || message.len() < icmpv6::HEADER_LEN
        {
            return None;
        }
        let at = ethernet::HEADER_LEN + ipv6::HEADER_LEN;
        let mut buf = vec![0u8; at + message.len()];
        EthernetRepr {
            src_addr: self.router_mac,
            dst_addr: l2.src,
            ethertype: EtherType::IPV6,
        }
        .emit(&mut buf)
        .ok()?;
        // Extension headers of the request are not echoed: the reply is a plain ICMPv6
        // packet, with the request's DSCP (ECN cleared) like Linux.
        Ipv6Repr {
            src_addr: dst,
            dst_addr: src,
            next_header: protocol::ICMPV6,
            payload_len: message.len(),
            hop_limit: ORIGINATED_HOP_LIMIT,
            traffic_class: packet.traffic_class() & !0x03,
            flow_label: 0,
        }
        .emit(&mut buf[ethernet::HEADER_LEN..])
        .ok()?;
        buf[at..].copy_from_slice(message);
        let mut reply = Icmpv6Packet::new_checked(&mut buf[at..]).ok()?;
        reply.set_msg_type(icmpv6_message::ECHO_REPLY);
        reply.fill_checksum(&dst, &src);
        let outgoing = self.finish(ctx.in_port, vlan_of(iface), &buf)?;
        ctx.out.push(outgoing);
        self.echo_replies_sent += 1;
        Some(())
    }

    /// A Neighbor Solicitation frame (untagged, unpadded) for `target`: to its solicited-node
    /// group or, with `to`, unicast to that MAC and to `target` itself (RFC 4861 7.2.2); None
    /// when there is nothing sensible to send.
    fn neighbor_solicit(
        &self,
        iface: &InterfaceSpec,
        target: Ipv6Addr,
        to: Option<EthernetAddress>,
    ) -> Option<Vec<u8>> {
        if target.is_unspecified()
            || target.is_multicast()
            || target.is_loopback()
            || iface.ipv6.iter().any(|&(own, _)| own == target)
        {
            return None;
        }
        let source = iface
            .ipv6
            .iter()
            .find(|&&(net, len)| in_subnet6(target, net, len))
            .or_else(|| iface.ipv6.first())?
            .0;
        let solicit = NdiscRepr::NeighborSolicit {
            target_addr: target,
            lladdr: Some(self.router_mac),
        };
        let (eth_dst, ip_dst) = match to {
            Some(mac) => (mac, target),
            None => {
                let group = solicited_node(&target);
                (EthernetAddress::from_ipv6_multicast(&group), group)
            }
        };
        let mut buf = vec![0u8; frame_len_v6(solicit.buffer_len())];
        let len = solicit
            .emit_frame(self.router_mac, eth_dst, &source, &ip_dst, &mut buf)
            .ok()?;
        buf.truncate(len);
        Some(buf)
    }

    // ---- helpers ---------------------------------------------------------------------------

    fn learn(
        &mut self,
        learned: &mut Vec<Learned>,
        interface: u16,
        ip: IpAddr,
        mac: EthernetAddress,
    ) {
        learned.push(Learned::Neighbor {
            interface,
            ip,
            mac: mac.0,
        });
        self.neighbors_learned += 1;
    }

    /// A MAC a neighbour can have: unicast, not all zeros, not ours.
    fn is_neighbor_mac(&self, mac: EthernetAddress) -> bool {
        mac.is_unicast() && mac.0 != [0; 6] && mac != self.router_mac
    }

    /// Whether a neighbour at `addr` is reachable on the link without a router: inside one of
    /// the interface's prefixes, or link-local (the usual BGP nexthop). Learning only these
    /// keeps spoofed advertisements from filling the nexthop table with arbitrary addresses.
    fn is_on_link_v6(&self, iface: &InterfaceSpec, addr: Ipv6Addr) -> bool {
        !addr.is_unspecified()
            && !iface.ipv6.iter().any(|&(own, _)| own == addr)
            && (addr.is_unicast_link_local()
                || iface
                    .ipv6
                    .iter()
                    .any(|&(net, len)| in_subnet6(addr, net, len)))
    }

    /// One of the switch's IPv4 addresses in `vrf` (the fast path punts any local route of the
    /// ingress VRF, not only the ingress interface's addresses).
    fn is_local_v4(&self, vrf: u16, addr: Ipv4Addr) -> bool {
        self.interfaces
            .iter()
            .filter(|i| i.vrf == vrf)
            .any(|i| i.ipv4.iter().any(|&(own, _)| own == addr))
    }

    /// One of the switch's IPv6 addresses in `vrf`.
    fn is_local_v6(&self, vrf: u16, addr: Ipv6Addr) -> bool {
        self.interfaces
            .iter()
            .filter(|i| i.vrf == vrf)
            .any(|i| i.ipv6.iter().any(|&(own, _)| own == addr))
    }

    /// Whether `port` carries `vlan` (as an access port, or a trunk allowing it or with it as
    /// native), the forwarder's flood membership.
    fn is_member(&self, port: u16, vlan: u16) -> bool {
        match self.ports.get(usize::from(port)) {
            Some(PortRole::Access { vlan: v }) => *v == vlan,
            Some(PortRole::Trunk { allowed, native }) => {
                allowed.contains(&vlan) || *native == Some(vlan)
            }
            _ => false,
        }
    }

    /// The VID a frame of `vlan` must carry out of `port`: trunks tag all but their native
    /// VLAN; access and routed ports never tag.
    fn egress_tag(&self, port: u16, vlan: Option<u16>) -> Option<u16> {
        let vlan = vlan?;
        match self.ports.get(usize::from(port))? {
            PortRole::Trunk { native, .. } if *native != Some(vlan) => Some(vlan),
            _ => None,
        }
    }

    /// Turns an untagged, unpadded frame into what leaves `port`: padded to the Ethernet
    /// minimum first, then tagged, so the frame stays valid if a later bridge strips the tag.
    /// None for a port that does not exist or a frame too short to hold a header.
    fn finish(&self, port: u16, vlan: Option<u16>, untagged: &[u8]) -> Option<Outgoing> {
        if usize::from(port) >= self.ports.len() || untagged.len() < ethernet::HEADER_LEN {
            return None;
        }
        let mut frame = Vec::with_capacity(untagged.len().max(MIN_FRAME_LEN) + VlanTag::LEN);
        frame.extend_from_slice(untagged);
        frame.resize(frame.len().max(MIN_FRAME_LEN), 0);
        if let Some(vid) = self.egress_tag(port, vlan) {
            let mut tag = [0u8; VlanTag::LEN];
            VlanTag {
                tpid: EtherType::VLAN,
                pcp: 0,
                dei: false,
                vid,
            }
            .emit(&mut tag)
            .ok()?;
            // The tag goes between the source MAC and the EtherType.
            frame.splice(12..12, tag);
        }
        Some(Outgoing { port, frame })
    }
}

/// Where a punted frame's answers go and what it taught, bundled to keep signatures short.
struct Punt<'a> {
    in_port: u16,
    interface: u16,
    out: &'a mut Vec<Outgoing>,
    learned: &'a mut Vec<Learned>,
    /// The fast path found the destination to be one of the switch's SIDs (which the slow
    /// path does not keep: they change at run time): an echo request to it is answered from it.
    to_sid: bool,
}

/// The L2 header and the L3 bytes of a frame with at most one VLAN tag (the fast path drops
/// stacked tags, so two here means the frame is not what it claims).
/// Whether `l3` is an IPv6 packet carrying a Neighbor Advertisement directly after its
/// header (as RFC 4861 sends them).
fn is_neighbor_advert(l3: &[u8]) -> bool {
    l3.get(6) == Some(&protocol::ICMPV6) && l3.get(40) == Some(&136)
}

fn split_l2(frame: &[u8]) -> Option<(L2Info, &[u8])> {
    let l2 = parse_l2(frame).ok()?;
    if l2.inner.is_some() {
        return None;
    }
    Some((l2, frame.get(l2.l3_offset..)?))
}

/// The VLAN an interface lives in (None for a routed port).
fn vlan_of(iface: &InterfaceSpec) -> Option<u16> {
    match iface.attachment {
        Attachment::Vlan(v) => Some(v),
        Attachment::Port(_) => None,
    }
}

/// Bytes of an untagged Ethernet + IPv6 frame around an ICMPv6 message of `message_len`.
fn frame_len_v6(message_len: usize) -> usize {
    ethernet::HEADER_LEN + ipv6::HEADER_LEN + message_len
}

/// Why [`SlowPath::router_error`] built nothing.
enum NotBuilt {
    /// The RFCs forbid an error, the rate limit holds it back, or the frame is malformed.
    Suppressed,
    /// The ingress interface has no address of the packet's family to send it from, or the
    /// error could not be routed to the source (IPv6 link-local).
    NoSource,
}

/// The offending IPv6 packet (from its header to its payload length), its source and
/// destination, if RFC 4443 2.4(e) allows an ICMPv6 error about it: not sent as a link-layer
/// multicast, not from an unspecified or multicast source, not to a multicast address, not an
/// ICMPv6 error itself.
fn ipv6_error_allowed(frame: &[u8]) -> Option<(&[u8], Ipv6Addr, Ipv6Addr)> {
    let (l2, l3) = split_l2(frame)?;
    if l2.ethertype != EtherType::IPV6 || l2.dst.0[0] & 1 != 0 {
        return None;
    }
    let packet = Ipv6Packet::new_checked(l3).ok()?;
    let (src, dst) = (packet.src_addr(), packet.dst_addr());
    if src.is_unspecified() || src.is_multicast() || dst.is_multicast() {
        return None;
    }
    // A later fragment holds no ICMPv6 header to read a type from (RFC 4443 2.4(e) exempts
    // only errors, and it may be part of one or not).
    if let Ok(upper) = walk_extension_headers(&packet)
        && upper.protocol == protocol::ICMPV6
        && !upper.later_fragment
        && l3
            .get(upper.offset)
            .is_some_and(|&t| t < icmpv6_message::ECHO_REQUEST)
    {
        return None;
    }
    Some((
        &l3[..ipv6::HEADER_LEN + usize::from(packet.payload_len())],
        src,
        dst,
    ))
}

/// An untagged Ethernet frame (both MACs `mac`: the forwarder rewrites them) carrying the
/// ICMPv6 error `(type, code, second word)` (the word: Parameter Problem's pointer, Packet
/// Too Big's MTU) from `src` to `dst`, hop limit 64, traffic class 0, quoting as much of
/// `offending` as fits the IPv6 minimum MTU.
fn emit_icmpv6_error(
    mac: EthernetAddress,
    offending: &[u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    (msg_type, code, word): (u8, u8, u32),
) -> Option<Vec<u8>> {
    let quoted = offending
        .len()
        .min(IPV6_MIN_MTU - ipv6::HEADER_LEN - icmpv6::HEADER_LEN);
    let message_len = icmpv6::HEADER_LEN + quoted;
    let mut buf = vec![0u8; frame_len_v6(message_len)];
    EthernetRepr {
        src_addr: mac,
        dst_addr: mac,
        ethertype: EtherType::IPV6,
    }
    .emit(&mut buf)
    .ok()?;
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: protocol::ICMPV6,
        payload_len: message_len,
        hop_limit: ORIGINATED_HOP_LIMIT,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut buf[ethernet::HEADER_LEN..])
    .ok()?;
    let at = ethernet::HEADER_LEN + ipv6::HEADER_LEN;
    buf[at + 4..at + 8].copy_from_slice(&word.to_be_bytes());
    buf[at + icmpv6::HEADER_LEN..].copy_from_slice(&offending[..quoted]);
    let mut message = Icmpv6Packet::new_checked(&mut buf[at..]).ok()?;
    message.set_msg_type(msg_type);
    message.set_msg_code(code);
    message.fill_checksum(&src, &dst);
    Some(buf)
}

/// An untagged Ethernet frame (both MACs `mac`) carrying the ICMP error `(type, code, second
/// word)` (the word: the next-hop MTU of Fragmentation Needed, else zero) from `src` to `dst`
/// (TTL 64, DSCP CS6, DF, identification 0), quoting `offending` up to a 576-byte datagram
/// (RFC 1812 4.3.2.3; RFC 792 asks for the header and 8 bytes at least).
fn emit_icmpv4_error(
    mac: EthernetAddress,
    offending: &[u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    (msg_type, code, word): (u8, u8, u32),
) -> Option<Vec<u8>> {
    let quoted = offending
        .len()
        .min(IPV4_ERROR_MAX_LEN - ipv4::HEADER_LEN - icmpv4::HEADER_LEN);
    let message_len = icmpv4::HEADER_LEN + quoted;
    let at = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
    let mut buf = vec![0u8; at + message_len];
    EthernetRepr {
        src_addr: mac,
        dst_addr: mac,
        ethertype: EtherType::IPV4,
    }
    .emit(&mut buf)
    .ok()?;
    Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: protocol::ICMP,
        payload_len: message_len,
        ttl: ORIGINATED_HOP_LIMIT,
        dscp: ICMP_ERROR_DSCP,
        ecn: Ecn::NotEct,
        ident: 0,
        dont_frag: true,
    }
    .emit(&mut buf[ethernet::HEADER_LEN..])
    .ok()?;
    buf[at + 4..at + 8].copy_from_slice(&word.to_be_bytes());
    buf[at + icmpv4::HEADER_LEN..].copy_from_slice(&offending[..quoted]);
    let mut message = Icmpv4Packet::new_checked(&mut buf[at..]).ok()?;
    message.set_msg_type(msg_type);
    message.set_msg_code(code);
    message.fill_checksum();
    Some(buf)
}

/// A source address that can be answered: not unspecified, broadcast, multicast or loopback.
fn is_unicast_source_v4(addr: Ipv4Addr) -> bool {
    !(addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() || addr.is_loopback())
}

fn in_subnet4(addr: Ipv4Addr, net: Ipv4Addr, len: u8) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0);
    u32::from(addr) & mask == u32::from(net) & mask
}

fn in_subnet6(addr: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0);
    u128::from(addr) & mask == u128::from(net) & mask
}

#[cfg(test)]
#[path = "slowpath_router_error_tests.rs"]
mod router_error_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::spec::VlanSpec;

    const R: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x01, 0x00];
    const H: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0a];

    /// Port 0: access VLAN 10. Port 1: trunk allowing 10 and 20, native 20 (so VLAN 10 is
    /// tagged on it). Port 2: routed, interface 1. Port 3: access VLAN 30.
    /// Interface 0: SVI of VLAN 10, 10.0.10.1/24 and 2001:db8:10::1/64.
    /// Interface 1: port 2, 10.255.0.0/31, 192.0.2.1/24, 2001:db8:ff::1/64, 2001:db8:fe::1/64.
    /// Interface 2: SVI of VLAN 30 in VRF 1, 10.0.30.1/24, no IPv6.
    fn spec() -> SwitchSpec {
        let mut spec = SwitchSpec::empty(4);
        spec.router_mac = R;
        spec.vrf_count = 2;
        spec.ports = vec![
            PortRole::Access { vlan: 10 },
            PortRole::Trunk {
                allowed: vec![10, 20],
                native: Some(20),
            },
            PortRole::Routed { interface: 1 },
            PortRole::Access { vlan: 30 },
        ];
        spec.vlans = vec![
            VlanSpec {
                id: 10,
                interface: Some(0),
            },
            VlanSpec {
                id: 20,
                interface: None,
            },
            VlanSpec {
                id: 30,
                interface: Some(2),
            },
        ];
        spec.interfaces = vec![
            InterfaceSpec {
                vrf: 0,
                attachment: Attachment::Vlan(10),
                ipv4: vec![(v4("10.0.10.1"), 24)],
                ipv6: vec![(v6("2001:db8:10::1"), 64)],
            },
            InterfaceSpec {
                vrf: 0,
                attachment: Attachment::Port(2),
                ipv4: vec![(v4("10.255.0.0"), 31), (v4("192.0.2.1"), 24)],
                ipv6: vec![(v6("2001:db8:ff::1"), 64), (v6("2001:db8:fe::1"), 64)],
            },
            InterfaceSpec {
                vrf: 1,
                attachment: Attachment::Vlan(30),
                ipv4: vec![(v4("10.0.30.1"), 24)],
                ipv6: vec![],
            },
        ];
        spec
    }

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// Textbook RFC 1071 sum, one 16-bit word at a time with end-around carry; shares nothing
    /// with `wire::checksum`.
    fn ref_sum(data: &[u8]) -> u16 {
        let mut acc: u32 = 0;
        for pair in data.chunks(2) {
            let word = (u32::from(pair[0]) << 8) | u32::from(*pair.get(1).unwrap_or(&0));
            acc += word;
            if acc > 0xffff {
                acc -= 0xffff;
            }
        }
        acc as u16
    }

    /// The RFC 8200 section 8.1 pseudo-header followed by the ICMPv6 message.
    fn with_pseudo_v6(src: &[u8], dst: &[u8], message: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(src);
        v.extend_from_slice(dst);
        v.extend_from_slice(&(message.len() as u32).to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, 58]);
        v.extend_from_slice(message);
        v
    }

    /// The ICMPv6 message of an untagged frame with a bare IPv6 header verifies.
    fn assert_icmpv6_checksum(frame: &[u8]) {
        let ip = &frame[14..];
        let len = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let whole = with_pseudo_v6(&ip[8..24], &ip[24..40], &ip[40..40 + len]);
        assert_eq!(ref_sum(&whole), 0xffff, "ICMPv6 checksum of {frame:02x?}");
    }

    /// Rewrites the ICMPv6 checksum of an untagged frame with the reference sum, for tests
    /// that change one field and want only that change to matter.
    fn fix_icmpv6_checksum(frame: &mut [u8]) {
        frame[56..58].copy_from_slice(&[0, 0]);
        let sum = ref_sum(&with_pseudo_v6(
            &frame[22..38],
            &frame[38..54],
            &frame[54..],
        ));
        frame[56..58].copy_from_slice(&(!sum).to_be_bytes());
    }

    /// Rewrites the IPv4 header checksum of an untagged frame with the reference sum.
    fn fix_ipv4_checksum(frame: &mut [u8]) {
        frame[24..26].copy_from_slice(&[0, 0]);
        let sum = ref_sum(&frame[14..34]);
        frame[24..26].copy_from_slice(&(!sum).to_be_bytes());
    }

    struct Run {
        out: Vec<Outgoing>,
        learned: Vec<Learned>,
    }

    fn punt(sp: &mut SlowPath, frame: &[u8], port: u16, reason: PuntReason, iface: u16) -> Run {
        let mut run = Run {
            out: Vec::new(),
            learned: Vec::new(),
        };
        sp.handle_punt(
            frame,
            port,
            reason,
            iface,
            0,
            &mut run.out,
            &mut run.learned,
        );
        run
    }

    fn neighbor(interface: u16, ip: IpAddr, mac: [u8; 6]) -> Learned {
        Learned::Neighbor { interface, ip, mac }
    }

    fn padded(bytes: &[u8], len: usize) -> Vec<u8> {
        let mut v = bytes.to_vec();
        v.resize(len, 0);
        v
    }

    // ---- ARP (RFC 826) ----------------------------------------------------------------------

    /// Who has 10.0.10.1? Tell 10.0.10.10 (H). Broadcast, untagged, unpadded.
    const ARP_REQUEST: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst: broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x08, 0x06, // ARP
        0x00, 0x01, // htype Ethernet
        0x08, 0x00, // ptype IPv4
        0x06, 0x04, // hlen, plen
        0x00, 0x01, // request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // sha: H
        0x0a, 0x00, 0x0a, 0x0a, // spa: 10.0.10.10
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha: unknown
        0x0a, 0x00, 0x0a, 0x01, // tpa: 10.0.10.1
    ];

    /// 10.0.10.1 is at R, to H: 42 bytes of ARP then zero padding to 60.
    const ARP_REPLY_TO_H: [u8; 42] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // Ethernet/IPv4
        0x00, 0x02, // reply
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // sha: R
        0x0a, 0x00, 0x0a, 0x01, // spa: 10.0.10.1
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // tha: H
        0x0a, 0x00, 0x0a, 0x0a, // tpa: 10.0.10.10
    ];

    /// Inserts an 802.1Q tag (PCP 0) with `vid` after the source MAC.
    fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
        let mut v = frame[..12].to_vec();
        v.extend_from_slice(&[0x81, 0x00, (vid >> 8) as u8, vid as u8]);
        v.extend_from_slice(&frame[12..]);
        v
    }

    #[test]
    fn arp_request_on_access_port_is_answered_and_learned() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &ARP_REQUEST, 0, PuntReason::Arp, 0);
        assert_eq!(
            run.out,
            [Outgoing {
                port: 0,
                frame: padded(&ARP_REPLY_TO_H, 60)
            }]
        );
        assert_eq!(run.learned, [neighbor(0, IpAddr::V4(v4("10.0.10.10")), H)]);
        assert_eq!(
            (sp.arp_replies_sent, sp.neighbors_learned, sp.ignored),
            (1, 1, 0)
        );
    }

    #[test]
    fn arp_request_padded_like_on_the_wire_is_answered() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &padded(&ARP_REQUEST, 60), 0, PuntReason::Arp, 0);
        assert_eq!(run.out.len(), 1);
        assert_eq!(run.out[0].frame, padded(&ARP_REPLY_TO_H, 60));
    }

    #[test]
    fn arp_request_on_trunk_gets_tagged_reply() {
        let mut sp = SlowPath::new(&spec());
        let request = tagged(&ARP_REQUEST, 10);
        let run = punt(&mut sp, &request, 1, PuntReason::Arp, 0);
        // Padded to 60 as an untagged frame, then tagged: 64 bytes, VID 10 in the TCI.
        let expected = tagged(&padded(&ARP_REPLY_TO_H, 60), 10);
        assert_eq!(expected.len(), 64);
        assert_eq!(expected[12..16], [0x81, 0x00, 0x00, 0x0a]);
        assert_eq!(
            run.out,
            [Outgoing {
                port: 1,
                frame: expected
            }]
        );
        assert_eq!(run.learned, [neighbor(0, IpAddr::V4(v4("10.0.10.10")), H)]);
    }

    #[test]
    fn arp_probe_is_answered_but_teaches_nothing() {
        let mut sp = SlowPath::new(&spec());
        let mut probe = ARP_REQUEST;
        probe[28..32].copy_from_slice(&[0, 0, 0, 0]); // spa 0.0.0.0 (RFC 5227 probe)
        let run = punt(&mut sp, &probe, 0, PuntReason::Arp, 0);
        let mut expected = ARP_REPLY_TO_H;
        expected[38..42].copy_from_slice(&[0, 0, 0, 0]); // tpa: the probe's 0.0.0.0
        assert_eq!(
            run.out,
            [Outgoing {
                port: 0,
                frame: padded(&expected, 60)
            }]
        );
        assert!(run.learned.is_empty());
        assert_eq!((sp.arp_replies_sent, sp.neighbors_learned), (1, 0));
    }

    #[test]
    fn arp_request_from_off_subnet_sender_is_answered_not_learned() {
        let mut sp = SlowPath::new(&spec());
        let mut request = ARP_REQUEST;
        request[28..32].copy_from_slice(&[192, 168, 1, 5]);
        let run = punt(&mut sp, &request, 0, PuntReason::Arp, 0);
        assert_eq!(run.out.len(), 1);
        assert_eq!(run.out[0].frame[38..42], [192, 168, 1, 5]);
        assert!(run.learned.is_empty());
    }

    #[test]
    fn arp_not_for_us_or_with_bad_sender_mac_is_ignored() {
        let mut sp = SlowPath::new(&spec());
        let mut other_target = ARP_REQUEST;
        other_target[41] = 0x63; // who has 10.0.10.99?
        let mut multicast_sender = ARP_REQUEST;
        multicast_sender[22] = 0x01; // sha 01:00:...
        let mut our_mac = ARP_REQUEST;
        our_mac[22..28].copy_from_slice(&R);
        let mut odd_op = ARP_REQUEST;
        odd_op[21] = 3; // RARP request
        for frame in [other_target, multicast_sender, our_mac, odd_op] {
            let run = punt(&mut sp, &frame, 0, PuntReason::Arp, 0);
            assert!(run.out.is_empty() && run.learned.is_empty());
        }
        // The right request on an interface that does not own the target.
        let run = punt(&mut sp, &ARP_REQUEST, 2, PuntReason::Arp, 1);
        assert!(run.out.is_empty() && run.learned.is_empty());
        assert_eq!(sp.ignored, 5);
    }

    #[test]
    fn arp_sender_claiming_our_address_is_answered_not_learned() {
        // Gratuitous ARP for 10.0.10.1 from H: an address conflict, defended by the reply but
        // never a neighbour entry for our own address.
        let mut sp = SlowPath::new(&spec());
        let mut conflict = ARP_REQUEST;
        conflict[28..32].copy_from_slice(&[10, 0, 10, 1]);
        let run = punt(&mut sp, &conflict, 0, PuntReason::Arp, 0);
        assert_eq!(run.out.len(), 1);
        assert_eq!(run.out[0].frame[38..42], [10, 0, 10, 1]);
        assert!(run.learned.is_empty());
    }

    /// 10.0.10.10 is at H, to 10.0.10.1 (R): what a host answers to our request.
    const ARP_REPLY_FROM_H: [u8; 42] = [
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // dst: R
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // ARP, Ethernet/IPv4
        0x00, 0x02, // reply
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // sha: H
        0x0a, 0x00, 0x0a, 0x0a, // spa: 10.0.10.10
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // tha: R
        0x0a, 0x00, 0x0a, 0x01, // tpa: 10.0.10.1
    ];

    #[test]
    fn arp_reply_to_us_is_learned() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(
            &mut sp,
            &tagged(&ARP_REPLY_FROM_H, 10),
            1,
            PuntReason::Arp,
            0,
        );
        assert!(run.out.is_empty());
        assert_eq!(run.learned, [neighbor(0, IpAddr::V4(v4("10.0.10.10")), H)]);
        assert_eq!(
            (sp.neighbors_learned, sp.arp_replies_sent, sp.ignored),
            (1, 0, 0)
        );
        // A reply for someone else's address is not ours to learn from.
        let mut elsewhere = ARP_REPLY_FROM_H;
        elsewhere[41] = 0x63;
        let run = punt(&mut sp, &elsewhere, 0, PuntReason::Arp, 0);
        assert!(run.out.is_empty() && run.learned.is_empty());
        assert_eq!(sp.ignored, 1);
    }

    // ---- ND (RFC 4861) ----------------------------------------------------------------------

    /// 2001:db8:10::a (H) solicits 2001:db8:10::1, to ff02::1:ff00:1 / 33:33:ff:00:00:01,
    /// hop limit 255, with a source link-layer address option. Checksum 0x1bf7 worked out
    /// off-line, re-checked with `ref_sum` in the tests.
    const NS: [u8; 86] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0x01, // dst: solicited-node group MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, // version 6, class 0, flow 0
        0x00, 0x20, 0x3a, 0xff, // 32 bytes of ICMPv6, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0x00, 0x01, // ff02::1:ff00:1
        0x87, 0x00, 0x1b, 0xf7, // NS, code 0, checksum
        0x00, 0x00, 0x00, 0x00, // reserved
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // target
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // source link-layer address: H
    ];

    /// The answer: 2001:db8:10::1 at R, to H, flags R|S|O; checksum 0x093c.
    const NA_TO_H: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H (from the option)
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes of ICMPv6, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0x88, 0x00, 0x09, 0x3c, // NA, code 0, checksum
        0xe0, 0x00, 0x00, 0x00, // R S O
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // target
        0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // target link-layer address: R
    ];

    #[test]
    fn expected_nd_frames_have_valid_checksums() {
        // The literals above are the test's own reference; hold them to the RFC sum.
        for frame in [&NS[..], &NA_TO_H, &DAD_NS, &DAD_NA, &NA_FROM_H, &NS_FOR_H] {
            assert_icmpv6_checksum(frame);
        }
    }

    #[test]
    fn ns_for_gateway_gets_solicited_router_advert() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &NS, 0, PuntReason::NeighborDiscovery, 0);
        assert_eq!(run.out.len(), 1);
        let Outgoing { port, frame } = &run.out[0];
        assert_eq!(*port, 0);
        assert_eq!(frame[..], NA_TO_H);
        // The fields the brief asks for, named: hop limit, flags, target, option, checksum.
        assert_eq!(frame[21], 255);
        assert_eq!(frame[54], 136);
        assert_eq!(frame[58], 0x80 | 0x40 | 0x20);
        assert_eq!(frame[62..78], v6("2001:db8:10::1").octets());
        assert_eq!(frame[78..80], [2, 1]);
        assert_eq!(frame[80..86], R);
        assert_icmpv6_checksum(frame);
        assert_eq!(
            run.learned,
            [neighbor(0, IpAddr::V6(v6("2001:db8:10::a")), H)]
        );
        assert_eq!((sp.nd_adverts_sent, sp.neighbors_learned), (1, 1));
    }

    #[test]
    fn ns_on_trunk_gets_tagged_advert() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(
            &mut sp,
            &tagged(&NS, 10),
            1,
            PuntReason::NeighborDiscovery,
            0,
        );
        assert_eq!(
            run.out,
            [Outgoing {
                port: 1,
                frame: tagged(&NA_TO_H, 10)
            }]
        );
    }

    #[test]
    fn unicast_ns_punted_as_local_is_answered() {
        // Reachability probe straight to our address (RFC 4861 section 7.3.1): the fast path
        // routes it to the local address and punts it as Local.
        let mut ns = NS;
        ns[..6].copy_from_slice(&R);
        ns[38..54].copy_from_slice(&v6("2001:db8:10::1").octets());
        fix_icmpv6_checksum(&mut ns);
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &ns, 0, PuntReason::Local, 0);
        assert_eq!(run.out.len(), 1);
        assert_eq!(run.out[0].frame[..], NA_TO_H);
    }

    /// Duplicate address detection for 2001:db8:10::1: from ::, no option; checksum 0x4cdd.
    const DAD_NS: [u8; 78] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x18, 0x3a, 0xff, // 24 bytes of ICMPv6, hop limit 255
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // ::
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0x00, 0x01, // ff02::1:ff00:1
        0x87, 0x00, 0x4c, 0xdd, 0x00, 0x00, 0x00, 0x00, // NS
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // target
    ];

    /// The defence: to all-nodes, R|O without S; checksum 0x780b.
    const DAD_NA: [u8; 86] = [
        0x33, 0x33, 0x00, 0x00, 0x00, 0x01, // dst: all-nodes MAC
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // ff02::1
        0x88, 0x00, 0x78, 0x0b, // NA
        0xa0, 0x00, 0x00, 0x00, // R O
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // target
        0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // target link-layer address: R
    ];

    #[test]
    fn dad_ns_is_defended_to_all_nodes_and_teaches_nothing() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &DAD_NS, 0, PuntReason::NeighborDiscovery, 0);
        assert_eq!(
            run.out,
            [Outgoing {
                port: 0,
                frame: DAD_NA.to_vec()
            }]
        );
        assert!(run.learned.is_empty());
        assert_eq!((sp.nd_adverts_sent, sp.neighbors_learned), (1, 0));
    }

    #[test]
    fn ns_failing_rfc4861_checks_is_ignored() {
        let mut sp = SlowPath::new(&spec());
        let mut hop64 = NS; // the hop limit is outside the checksum: only 7.1.1 rejects it
        hop64[21] = 64;
        let mut bad_checksum = NS;
        bad_checksum[57] ^= 1;
        let mut other_target = NS;
        other_target[77] = 0x02; // 2001:db8:10::2 is not ours
        fix_icmpv6_checksum(&mut other_target);
        let mut dad_to_all_nodes = DAD_NS.to_vec();
        dad_to_all_nodes[38..54].copy_from_slice(&v6("ff02::1").octets());
        fix_icmpv6_checksum(&mut dad_to_all_nodes);
        for frame in [&hop64[..], &bad_checksum, &other_target, &dad_to_all_nodes] {
            let run = punt(&mut sp, frame, 0, PuntReason::NeighborDiscovery, 0);
            assert!(run.out.is_empty() && run.learned.is_empty(), "{frame:02x?}");
        }
        assert_eq!(sp.ignored, 4);
        assert_eq!(sp.nd_adverts_sent, 0);
    }

    /// 2001:db8:10::a advertises itself at H to 2001:db8:10::1, flags S|O; checksum 0x8a29.
    const NA_FROM_H: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // dst: R
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0x88, 0x00, 0x8a, 0x29, // NA
        0x60, 0x00, 0x00, 0x00, // S O
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // target
        0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // target link-layer address: H
    ];

    #[test]
    fn na_teaches_target_lladdr() {
        let mut sp = SlowPath::new(&spec());
        // Unicast to our address, so the fast path punts it as Local; ND punts work too.
        for reason in [PuntReason::Local, PuntReason::NeighborDiscovery] {
            let run = punt(&mut sp, &NA_FROM_H, 0, reason, 0);
            assert!(run.out.is_empty());
            assert_eq!(
                run.learned,
                [neighbor(0, IpAddr::V6(v6("2001:db8:10::a")), H)]
            );
        }
        assert_eq!((sp.neighbors_learned, sp.ignored), (2, 0));
        // Without the option and unsolicited (flags O) there is nothing to learn; hop
        // limit 254 is not ND.
        let mut unsolicited_no_option = no_option_na(0x20);
        fix_icmpv6_checksum(&mut unsolicited_no_option);
        let mut hop254 = NA_FROM_H;
        hop254[21] = 254;
        for frame in [&unsolicited_no_option[..], &hop254] {
            let run = punt(&mut sp, frame, 0, PuntReason::Local, 0);
            assert!(run.out.is_empty() && run.learned.is_empty());
        }
        assert_eq!(sp.ignored, 2);
    }

    /// `NA_FROM_H` without its target link-layer address option, with `flags`; checksum left
    /// for the caller to fix.
    fn no_option_na(flags: u8) -> Vec<u8> {
        let mut na = NA_FROM_H.to_vec();
        na.truncate(78);
        na[19] = 0x18;
        na[58] = flags;
        na
    }

    #[test]
    fn a_solicited_na_without_the_option_confirms_the_neighbour() {
        // How Linux answers a unicast NS (the switch's refresh): solicited, no Override, no
        // target link-layer address option (RFC 4861 7.2.4 allows leaving it out). RFC 4861
        // 7.2.5: it makes the entry reachable with the MAC it has.
        let mut sp = SlowPath::new(&spec());
        let mut answer = no_option_na(0x40);
        fix_icmpv6_checksum(&mut answer);
        for reason in [PuntReason::Local, PuntReason::NeighborDiscovery] {
            let run = punt(&mut sp, &answer, 0, reason, 0);
            assert!(run.out.is_empty());
            assert_eq!(
                run.learned,
                [Learned::Confirm {
                    interface: 0,
                    ip: IpAddr::V6(v6("2001:db8:10::a"))
                }]
            );
        }
        assert_eq!((sp.neighbors_learned, sp.ignored), (2, 0));
        // Not for an off-link target, and not when multicast (it cannot be solicited then).
        let mut off_link = answer.clone();
        off_link[62..78].copy_from_slice(&v6("2001:db8:99::a").octets());
        fix_icmpv6_checksum(&mut off_link);
        let mut to_all_nodes = answer.clone();
        to_all_nodes[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
        to_all_nodes[38..54].copy_from_slice(&v6("ff02::1").octets());
        fix_icmpv6_checksum(&mut to_all_nodes);
        for frame in [&off_link, &to_all_nodes] {
            let run = punt(&mut sp, frame, 0, PuntReason::NeighborDiscovery, 0);
            assert!(run.out.is_empty() && run.learned.is_empty(), "{frame:02x?}");
        }
        assert_eq!(sp.ignored, 2);
    }

    #[test]
    fn multicast_na_is_learned_only_when_unsolicited() {
        // An unsolicited announcement to ff02::1 (flags O) teaches; one claiming to be
        // solicited while multicast breaks RFC 4861 section 7.1.2 and is dropped.
        let mut sp = SlowPath::new(&spec());
        let mut announce = NA_FROM_H;
        announce[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
        announce[38..54].copy_from_slice(&v6("ff02::1").octets());
        announce[58] = 0x20;
        fix_icmpv6_checksum(&mut announce);
        let mut solicited = announce;
        solicited[58] = 0x60;
        fix_icmpv6_checksum(&mut solicited);
        let run = punt(&mut sp, &announce, 0, PuntReason::NeighborDiscovery, 0);
        assert_eq!(
            run.learned,
            [neighbor(0, IpAddr::V6(v6("2001:db8:10::a")), H)]
        );
        let run = punt(&mut sp, &solicited, 0, PuntReason::NeighborDiscovery, 0);
        assert!(run.out.is_empty() && run.learned.is_empty());
        assert_eq!(sp.ignored, 1);
    }

    #[test]
    fn na_for_an_off_link_target_is_not_learned() {
        // Learning is limited to the interface's prefixes and link-local addresses, so
        // spoofed advertisements cannot fill the nexthop table with arbitrary addresses.
        let mut sp = SlowPath::new(&spec());
        let mut off_link = NA_FROM_H;
        off_link[62..78].copy_from_slice(&v6("2001:db8:99::a").octets());
        fix_icmpv6_checksum(&mut off_link);
        let mut link_local = NA_FROM_H;
        link_local[62..78].copy_from_slice(&v6("fe80::a").octets());
        fix_icmpv6_checksum(&mut link_local);
        assert!(
            punt(&mut sp, &off_link, 0, PuntReason::Local, 0)
                .learned
                .is_empty()
        );
        assert_eq!(
            punt(&mut sp, &link_local, 0, PuntReason::Local, 0).learned,
            [neighbor(0, IpAddr::V6(v6("fe80::a")), H)]
        );
    }

    // ---- ping (RFC 792, RFC 4443) -----------------------------------------------------------

    /// 10.0.10.10 (H) pings 10.0.10.1: ident 0xbeef, TTL 64, echo id 0x1234 seq 1, "abcdefgh".
    /// IPv4 checksum 0x93df, ICMP checksum 0x5435, worked out off-line.
    const PING4: [u8; 50] = [
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // dst: R
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x08, 0x00, // IPv4
        0x45, 0x00, 0x00, 0x24, // v4, IHL 5, TOS 0, total length 36
        0xbe, 0xef, 0x00, 0x00, // ident, no flags
        0x40, 0x01, 0x93, 0xdf, // TTL 64, ICMP, checksum
        0x0a, 0x00, 0x0a, 0x0a, // 10.0.10.10
        0x0a, 0x00, 0x0a, 0x01, // 10.0.10.1
        0x08, 0x00, 0x54, 0x35, // echo request, code 0, checksum
        0x12, 0x34, 0x00, 0x01, // id, seq
        b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h',
    ];

    /// The reply: ident 0, DF, TTL 64, addresses swapped; IPv4 checksum 0x12cf, ICMP 0x5c35.
    const PONG4: [u8; 50] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x08, 0x00, // IPv4
        0x45, 0x00, 0x00, 0x24, // total length 36
        0x00, 0x00, 0x40, 0x00, // ident 0, DF
        0x40, 0x01, 0x12, 0xcf, // TTL 64, ICMP, checksum
        0x0a, 0x00, 0x0a, 0x01, // 10.0.10.1
        0x0a, 0x00, 0x0a, 0x0a, // 10.0.10.10
        0x00, 0x00, 0x5c, 0x35, // echo reply, code 0, checksum
        0x12, 0x34, 0x00, 0x01, // same id, seq
        b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h',
    ];

    #[test]
    fn expected_ipv4_frames_have_valid_checksums() {
        for frame in [&PING4[..], &PONG4, &PING4_SMALL, &PONG4_SMALL] {
            let len = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
            assert_eq!(ref_sum(&frame[14..34]), 0xffff, "IPv4 header");
            assert_eq!(ref_sum(&frame[34..14 + len]), 0xffff, "ICMP");
        }
    }

    #[test]
    fn ipv4_ping_gets_exact_echo_reply() {
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &PING4, 0, PuntReason::Local, 0);
        assert_eq!(
            run.out,
            [Outgoing {
                port: 0,
                frame: padded(&PONG4, 60)
            }]
        );
        assert!(run.learned.is_empty());
        assert_eq!((sp.echo_replies_sent, sp.ignored), (1, 0));
        // On the trunk, the reply is tagged with the SVI's VLAN.
        let run = punt(&mut sp, &tagged(&PING4, 10), 1, PuntReason::Local, 0);
        assert_eq!(run.out[0].frame, tagged(&padded(&PONG4, 60), 10));
    }

    /// H pings 192.0.2.1 (another interface, same VRF) with 4 bytes of data: 46 bytes, which
    /// arrive padded to 60. IPv4 checksum 0xa4d1, ICMP 0x0704.
    const PING4_SMALL: [u8; 46] = [
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0xa4, 0xd1, // length 32
        0x0a, 0x00, 0x0a, 0x0a, 0xc0, 0x00, 0x02, 0x01, // 10.0.10.10 -> 192.0.2.1
        0x08, 0x00, 0x07, 0x04, 0x00, 0x07, 0x00, 0x02, // echo request id 7 seq 2
        b'w', b'x', b'y', b'z',
    ];

    /// Its reply: IPv4 checksum 0x64d2, ICMP 0x0f04.
    const PONG4_SMALL: [u8; 46] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x20, 0x00, 0x00, 0x40, 0x00, 0x40, 0x01, 0x64, 0xd2, // DF, TTL 64
        0xc0, 0x00, 0x02, 0x01, 0x0a, 0x00, 0x0a, 0x0a, // 192.0.2.1 -> 10.0.10.10
        0x00, 0x00, 0x0f, 0x04, 0x00, 0x07, 0x00, 0x02, // echo reply id 7 seq 2
        b'w', b'x', b'y', b'z',
    ];

    #[test]
    fn padding_is_not_echoed() {
        let mut sp = SlowPath::new(&spec());
        let mut wire = padded(&PING4_SMALL, 60);
        wire[46..].fill(0xee); // padding need not be zeros
        let run = punt(&mut sp, &wire, 0, PuntReason::Local, 0);
        assert_eq!(
            run.out,
            [Outgoing {
                port: 0,
                frame: padded(&PONG4_SMALL, 60)
            }]
        );
    }

    #[test]
    fn ping_of_another_vrf_or_not_an_echo_request_is_ignored() {
        let mut sp = SlowPath::new(&spec());
        // 10.0.30.1 lives in VRF 1; interface 0 is in VRF 0.
        let mut other_vrf = PING4.to_vec();
        other_vrf[32] = 30;
        fix_ipv4_checksum(&mut other_vrf);
        let mut bad_ip_checksum = PING4;
        bad_ip_checksum[25] ^= 1;
        let mut bad_icmp_checksum = PING4;
        bad_icmp_checksum[37] ^= 1;
        let mut reply = PING4; // an echo reply to us is not answered
        reply[34] = 0;
        reply[36] = 0x5c;
        let mut fragment = PING4.to_vec();
        fragment[20] = 0x20; // MF
        fix_ipv4_checksum(&mut fragment);
        for frame in [
            &other_vrf[..],
            &bad_ip_checksum,
            &bad_icmp_checksum,
            &reply,
            &fragment,
        ] {
            let run = punt(&mut sp, frame, 0, PuntReason::Local, 0);
            assert!(run.out.is_empty() && run.learned.is_empty(), "{frame:02x?}");
        }
        assert_eq!((sp.ignored, sp.echo_replies_sent), (5, 0));
    }

    /// 2001:db8:10::a pings 2001:db8:10::1, hop limit 64: id 0xabcd seq 5, "hello!";
    /// checksum 0x3454.
    const PING6: [u8; 68] = [
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // dst: R
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // src: H
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x3a, 0x40, // 14 bytes of ICMPv6, hop limit 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0x80, 0x00, 0x34, 0x54, // echo request, checksum
        0xab, 0xcd, 0x00, 0x05, // id, seq
        b'h', b'e', b'l', b'l', b'o', b'!',
    ];

    /// The reply: addresses swapped, hop limit 64, type 129; checksum 0x3354.
    const PONG6: [u8; 68] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x3a, 0x40, // 14 bytes, hop limit 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0x81, 0x00, 0x33, 0x54, // echo reply, checksum
        0xab, 0xcd, 0x00, 0x05, // same id, seq
        b'h', b'e', b'l', b'l', b'o', b'!',
    ];

    #[test]
    fn ipv6_ping_gets_echo_reply_with_valid_checksum() {
        assert_icmpv6_checksum(&PING6);
        let mut sp = SlowPath::new(&spec());
        let run = punt(&mut sp, &PING6, 0, PuntReason::Local, 0);
        assert_eq!(run.out.len(), 1);
        let frame = &run.out[0].frame;
        assert_icmpv6_checksum(frame);
        assert_eq!(frame[21], 64);
        assert_eq!(frame[54], 129);
        assert_eq!(frame[..], PONG6);
        assert_eq!(sp.echo_replies_sent, 1);
        // A corrupted request is not answered.
        let mut bad = PING6;
        bad[67] ^= 0x20;
        assert!(punt(&mut sp, &bad, 0, PuntReason::Local, 0).out.is_empty());
        assert_eq!(sp.ignored, 1);
    }

    #[test]
    fn a_ping_of_a_local_sid_is_answered_from_the_sid_when_the_fast_path_says_sid() {
        // RFC 8986 4.1.1: a packet whose segments end at one of the switch's SIDs with an
        // ICMPv6 upper layer is the switch's to process, so an echo request is answered from
        // the SID. The slow path does not keep SIDs (they change at run time): it relies on
        // the fast path's `LocalSid`.
        let sid: Ipv6Addr = "fcbb:bb00:100::".parse().unwrap();
        let host: Ipv6Addr = "2001:db8:10::a".parse().unwrap();
        let mut ping = PING6.to_vec();
        ping[38..54].copy_from_slice(&sid.octets());
        ping[56..58].copy_from_slice(&[0, 0]);
        Icmpv6Packet::new_checked(&mut ping[54..])
            .unwrap()
            .fill_checksum(&host, &sid);
        assert_icmpv6_checksum(&ping);
        let mut sp = SlowPath::new(&spec());
        assert!(
            punt(&mut sp, &ping, 0, PuntReason::Local, 0).out.is_empty(),
            "not an interface address: a plain local punt is not answered"
        );
        let run = punt(&mut sp, &ping, 0, PuntReason::LocalSid, 0);
        assert_eq!(run.out.len(), 1);
        let mut expected = PONG6.to_vec();
        expected[22..38].copy_from_slice(&sid.octets());
        expected[56..58].copy_from_slice(&[0, 0]);
        Icmpv6Packet::new_checked(&mut expected[54..])
            .unwrap()
            .fill_checksum(&sid, &host);
        assert_eq!(run.out[0].frame, expected);
        assert_icmpv6_checksum(&run.out[0].frame);
    }

    // ---- resolve ----------------------------------------------------------------------------

    /// Who has `target`? Tell `sender` (R): broadcast, padded to 60.
    #[test]
    fn overheard_announcements_refresh_only_learnable_neighbours() {
        let mut sp = SlowPath::new(&spec());
        let x = [0x02, 0, 0, 0, 0, 0x92];
        // A gratuitous ARP from x for 10.0.10.9 (sender = target), as a host sends it.
        let gratuitous = |mac: [u8; 6], ip: [u8; 4]| {
            let mut f = vec![0xff; 6];
            f.extend_from_slice(&mac);
            f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
            f.extend_from_slice(&mac);
            f.extend_from_slice(&ip);
            f.extend_from_slice(&[0; 6]);
            f.extend_from_slice(&ip);
            padded(&f, 60)
        };
        let heard = |sp: &mut SlowPath, frame: &[u8], interface: u16| {
            let mut learned = Vec::new();
            sp.overhear(frame, interface, &mut learned);
            learned
        };
        assert_eq!(
            heard(&mut sp, &gratuitous(x, [10, 0, 10, 9]), 0),
            vec![Learned::Refresh {
                interface: 0,
                ip: IpAddr::V4(v4("10.0.10.9")),
                mac: x
            }]
        );
        // Not from an on-link sender, not claiming our own address, not from a group MAC,
        // not on an interface that does not exist.
        for (frame, interface) in [
            (gratuitous(x, [10, 0, 11, 9]), 0),
            (gratuitous(x, [10, 0, 10, 1]), 0),
            (gratuitous([0x03, 0, 0, 0, 0, 1], [10, 0, 10, 9]), 0),
            (gratuitous(R, [10, 0, 10, 9]), 0),
            (gratuitous(x, [10, 0, 10, 9]), 9),
        ] {
            assert_eq!(heard(&mut sp, &frame, interface), vec![], "{frame:02x?}");
        }
        // An IPv6 packet that is no NA teaches nothing.
        let mut not_na = vec![0x33, 0x33, 0, 0, 0, 1];
        not_na.extend_from_slice(&x);
        not_na.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, 58, 255]);
        not_na.extend_from_slice(&v6("2001:db8:10::9").octets());
        not_na.extend_from_slice(&v6("ff02::1").octets());
        not_na.extend_from_slice(&[128, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(heard(&mut sp, &not_na, 0), vec![]);
    }

    fn arp_request_from_r(sender: [u8; 4], target: [u8; 4]) -> Vec<u8> {
        let mut f = vec![
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst: broadcast
            0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
            0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // ARP, Ethernet/IPv4
            0x00, 0x01, // request
            0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // sha: R
        ];
        f.extend_from_slice(&sender);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        padded(&f, 60)
    }

    /// R solicits 2001:db8:10::a from 2001:db8:10::1: to ff02::1:ff00:a / 33:33:ff:00:00:0a,
    /// hop limit 255, source link-layer address R; checksum 0x1af8.
    const NS_FOR_H: [u8; 86] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0x0a, // dst: solicited-node group MAC
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0x00, 0x0a, // ff02::1:ff00:a
        0x87, 0x00, 0x1a, 0xf8, 0x00, 0x00, 0x00, 0x00, // NS, checksum, reserved
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // target
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // source link-layer address: R
    ];

    #[test]
    fn resolve_on_routed_port_sends_one_untagged_frame() {
        let mut sp = SlowPath::new(&spec());
        let mut out = Vec::new();
        sp.resolve(1, IpAddr::V4(v4("10.255.0.1")), 0, &mut out);
        // The source address is the one on the target's subnet, else the first.
        sp.resolve(1, IpAddr::V4(v4("192.0.2.77")), 0, &mut out);
        sp.resolve(1, IpAddr::V4(v4("203.0.113.9")), 0, &mut out);
        let expected = [
            arp_request_from_r([10, 255, 0, 0], [10, 255, 0, 1]),
            arp_request_from_r([192, 0, 2, 1], [192, 0, 2, 77]),
            arp_request_from_r([10, 255, 0, 0], [203, 0, 113, 9]),
        ];
        assert_eq!(out, expected.map(|frame| Outgoing { port: 2, frame }));
        assert_eq!(sp.arp_requests_sent, 3);

        let mut out = Vec::new();
        sp.resolve(1, IpAddr::V6(v6("2001:db8:fe::2")), 0, &mut out);
        assert_eq!(out.len(), 1);
        let Outgoing { port, frame } = &out[0];
        assert_eq!(*port, 2);
        assert_eq!(frame.len(), 86);
        assert_eq!(frame[..6], [0x33, 0x33, 0xff, 0x00, 0x00, 0x02]);
        assert_eq!(frame[6..12], R);
        assert_eq!(frame[21], 255);
        assert_eq!(frame[22..38], v6("2001:db8:fe::1").octets()); // same-subnet source
        assert_eq!(frame[38..54], v6("ff02::1:ff00:2").octets());
        assert_eq!(frame[54], 135);
        assert_eq!(frame[62..78], v6("2001:db8:fe::2").octets());
        assert_eq!(frame[78..86], [1, 1, 2, 0, 0, 0, 1, 0]);
        assert_icmpv6_checksum(frame);
        assert_eq!(sp.nd_solicits_sent, 1);
    }

    #[test]
    fn resolve_on_vlan_sends_one_frame_per_member_tagged_per_port() {
        let mut sp = SlowPath::new(&spec());
        let mut out = Vec::new();
        sp.resolve(0, IpAddr::V4(v4("10.0.10.10")), 0, &mut out);
        let request = arp_request_from_r([10, 0, 10, 1], [10, 0, 10, 10]);
        // Port 0 is an access member, port 1 a trunk with native VLAN 20; port 3 is in VLAN 30.
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 0,
                    frame: request.clone()
                },
                Outgoing {
                    port: 1,
                    frame: tagged(&request, 10)
                },
            ]
        );
        assert_eq!(sp.arp_requests_sent, 2);

        let mut out = Vec::new();
        sp.resolve(0, IpAddr::V6(v6("2001:db8:10::a")), 0, &mut out);
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 0,
                    frame: NS_FOR_H.to_vec()
                },
                Outgoing {
                    port: 1,
                    frame: tagged(&NS_FOR_H, 10)
                },
            ]
        );
        assert_eq!(sp.nd_solicits_sent, 2);
    }

    #[test]
    fn resolve_sends_nothing_it_cannot_send() {
        let mut sp = SlowPath::new(&spec());
        let mut out = Vec::new();
        sp.resolve(2, IpAddr::V6(v6("2001:db8:30::5")), 0, &mut out); // no IPv6 address
        sp.resolve(9, IpAddr::V4(v4("10.0.10.10")), 0, &mut out); // no such interface
        sp.resolve(0, IpAddr::V4(v4("10.0.10.1")), 0, &mut out); // our own address
        sp.resolve(0, IpAddr::V4(v4("255.255.255.255")), 0, &mut out);
        sp.resolve(0, IpAddr::V6(v6("ff02::1")), 0, &mut out);
        sp.resolve(0, IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0, &mut out);
        assert!(out.is_empty());
        // The VRF 1 SVI still resolves IPv4 on its one access member.
        sp.resolve(2, IpAddr::V4(v4("10.0.30.5")), 0, &mut out);
        assert_eq!(
            out,
            [Outgoing {
                port: 3,
                frame: arp_request_from_r([10, 0, 30, 1], [10, 0, 30, 5])
            }]
        );
    }

    // ---- probe: unicast refreshes ------------------------------------------------------------

    /// Who has 10.0.10.10? Tell 10.0.10.1 (R), unicast to H: a refresh of a neighbour the
    /// switch has at H (RFC 1122 2.3.2.1's unicast poll, as Linux sends it). Only the
    /// Ethernet destination differs from a broadcast request; the target hardware address
    /// stays unknown (zero).
    const UNICAST_ARP_FOR_H: [u8; 42] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // Ethernet/IPv4
        0x00, 0x01, // request
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // sha: R
        0x0a, 0x00, 0x0a, 0x01, // spa: 10.0.10.1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha: unknown
        0x0a, 0x00, 0x0a, 0x0a, // tpa: 10.0.10.10
    ];

    /// R solicits 2001:db8:10::a from 2001:db8:10::1, unicast (RFC 4861 7.3.3 PROBE): to H
    /// and to 2001:db8:10::a itself, not its solicited-node group (7.2.2), hop limit 255,
    /// source link-layer address R. Checksum 0xeb33 worked out off-line, re-checked with
    /// `ref_sum`.
    const UNICAST_NS_FOR_H: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:10::1
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // 2001:db8:10::a
        0x87, 0x00, 0xeb, 0x33, 0x00, 0x00, 0x00, 0x00, // NS, checksum, reserved
        0x20, 0x01, 0x0d, 0xb8, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // target
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // source link-layer address: R
    ];

    /// The same from 2001:db8:fe::1 for 2001:db8:fe::2 at H, on the routed port; checksum
    /// 0xe879 worked out off-line.
    const UNICAST_NS_ON_ROUTED_PORT: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, // dst: H
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // src: R
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // 32 bytes, hop limit 255
        0x20, 0x01, 0x0d, 0xb8, 0, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // 2001:db8:fe::1
        0x20, 0x01, 0x0d, 0xb8, 0, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // 2001:db8:fe::2
        0x87, 0x00, 0xe8, 0x79, 0x00, 0x00, 0x00, 0x00, // NS, checksum, reserved
        0x20, 0x01, 0x0d, 0xb8, 0, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // target
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, // source link-layer address: R
    ];

    #[test]
    fn expected_unicast_solicitations_have_valid_checksums() {
        assert_icmpv6_checksum(&UNICAST_NS_FOR_H);
        assert_icmpv6_checksum(&UNICAST_NS_ON_ROUTED_PORT);
    }

    #[test]
    fn probe_on_a_vlan_goes_unicast_out_of_the_port_the_bridge_has_the_mac_on() {
        let mut sp = SlowPath::new(&spec());
        let h4 = IpAddr::V4(v4("10.0.10.10"));
        let h6 = IpAddr::V6(v6("2001:db8:10::a"));
        let mut out = Vec::new();
        // H behind port 0 (access): one untagged frame there, none on port 1.
        sp.probe(0, h4, H, Some(0), 0, &mut out);
        sp.probe(0, h6, H, Some(0), 0, &mut out);
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 0,
                    frame: padded(&UNICAST_ARP_FOR_H, 60)
                },
                Outgoing {
                    port: 0,
                    frame: UNICAST_NS_FOR_H.to_vec()
                },
            ]
        );
        // H behind port 1 (trunk, VLAN 10 tagged): tagged there, none on port 0.
        let mut out = Vec::new();
        sp.probe(0, h4, H, Some(1), 0, &mut out);
        sp.probe(0, h6, H, Some(1), 0, &mut out);
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 1,
                    frame: tagged(&padded(&UNICAST_ARP_FOR_H, 60), 10)
                },
                Outgoing {
                    port: 1,
                    frame: tagged(&UNICAST_NS_FOR_H, 10)
                },
            ]
        );
        // Counted per frame, as broadcast ones are.
        assert_eq!((sp.arp_requests_sent, sp.nd_solicits_sent), (2, 2));
    }

    #[test]
    fn probe_floods_the_vlan_when_the_bridge_does_not_have_the_mac() {
        // As the bridge floods an unknown unicast: every member, each tagged as it needs; a
        // port that is not a member of the VLAN (routed port 2, VLAN 30's port 3) is no answer.
        let mut sp = SlowPath::new(&spec());
        let unicast = padded(&UNICAST_ARP_FOR_H, 60);
        let flooded = [
            Outgoing {
                port: 0,
                frame: unicast.clone(),
            },
            Outgoing {
                port: 1,
                frame: tagged(&unicast, 10),
            },
        ];
        for port in [None, Some(2), Some(3), Some(99)] {
            let mut out = Vec::new();
            sp.probe(0, IpAddr::V4(v4("10.0.10.10")), H, port, 0, &mut out);
            assert_eq!(out, flooded, "{port:?}");
        }
        let mut out = Vec::new();
        sp.probe(0, IpAddr::V6(v6("2001:db8:10::a")), H, None, 0, &mut out);
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 0,
                    frame: UNICAST_NS_FOR_H.to_vec()
                },
                Outgoing {
                    port: 1,
                    frame: tagged(&UNICAST_NS_FOR_H, 10)
                },
            ]
        );
        assert_eq!((sp.arp_requests_sent, sp.nd_solicits_sent), (8, 2));
    }

    #[test]
    fn probe_on_a_routed_port_is_one_unicast_frame() {
        let mut sp = SlowPath::new(&spec());
        let mut out = Vec::new();
        // A port argument means nothing to a routed port's interface.
        sp.probe(1, IpAddr::V4(v4("10.255.0.1")), H, None, 0, &mut out);
        sp.probe(1, IpAddr::V4(v4("10.255.0.1")), H, Some(0), 0, &mut out);
        sp.probe(1, IpAddr::V6(v6("2001:db8:fe::2")), H, None, 0, &mut out);
        let mut arp = arp_request_from_r([10, 255, 0, 0], [10, 255, 0, 1]);
        arp[..6].copy_from_slice(&H);
        assert_eq!(
            out,
            [
                Outgoing {
                    port: 2,
                    frame: arp.clone()
                },
                Outgoing {
                    port: 2,
                    frame: arp
                },
                Outgoing {
                    port: 2,
                    frame: UNICAST_NS_ON_ROUTED_PORT.to_vec()
                },
            ]
        );
    }

    #[test]
    fn probe_to_a_mac_no_neighbour_can_have_is_a_broadcast_request() {
        let mut sp = SlowPath::new(&spec());
        for mac in [[0xff; 6], [0x01, 0, 0x5e, 0, 0, 1], [0; 6], R] {
            let (mut probed, mut resolved) = (Vec::new(), Vec::new());
            sp.probe(
                0,
                IpAddr::V6(v6("2001:db8:10::a")),
                mac,
                Some(0),
                0,
                &mut probed,
            );
            sp.resolve(0, IpAddr::V6(v6("2001:db8:10::a")), 0, &mut resolved);
            assert_eq!(probed, resolved, "{mac:02x?}");
            assert_eq!(probed[0].frame, NS_FOR_H);
        }
        // And what resolve would not send, probe does not either.
        let mut out = Vec::new();
        sp.probe(0, IpAddr::V4(v4("10.0.10.1")), H, Some(0), 0, &mut out);
        sp.probe(2, IpAddr::V6(v6("2001:db8:30::5")), H, Some(3), 0, &mut out);
        sp.probe(9, IpAddr::V4(v4("10.0.10.10")), H, Some(0), 0, &mut out);
        assert!(out.is_empty());
    }

    // ---- with the fast path ------------------------------------------------------------------

    #[test]
    fn fast_path_punts_reach_the_slow_path_and_learning_closes_the_loop() {
        use crate::pipeline::{Forwarder, TagOp, Verdict};
        let spec = spec();
        let mut fwd = Forwarder::new(&spec).unwrap();
        let mut sp = SlowPath::new(&spec);
        // How each frame arrives on port 0 (access VLAN 10, interface 0): the punt reason
        // the slow path is handed is the fast path's own.
        let cases: [(&[u8], PuntReason); 5] = [
            (&ARP_REQUEST, PuntReason::Arp),
            (&ARP_REPLY_FROM_H, PuntReason::Arp),
            (&NS, PuntReason::NeighborDiscovery),
            (&NA_FROM_H, PuntReason::Local), // unicast to our address
            (&PING4, PuntReason::Local),
        ];
        let mut learned = Vec::new();
        for (frame, expected) in cases {
            let mut copy = frame.to_vec();
            let verdict = fwd.process(&mut copy, 0, 1);
            assert_eq!(
                verdict,
                Verdict::Punt {
                    reason: expected,
                    interface: 0
                }
            );
            let mut out = Vec::new();
            sp.handle_punt(frame, 0, expected, 0, 1, &mut out, &mut learned);
            assert!(!out.is_empty() || !learned.is_empty());
        }
        assert_eq!(sp.ignored, 0);
        for entry in learned {
            let Learned::Neighbor { interface, ip, mac } = entry else {
                panic!("punted frames teach neighbours: {entry:?}");
            };
            fwd.neighbor_resolved(interface, ip, mac);
        }
        // A packet routed in from port 2 (interface 1) to 10.0.10.10 now reaches H on port 0.
        let mut packet = PING4.to_vec();
        packet[..6].copy_from_slice(&R);
        packet[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0x51, 1]);
        packet[26..30].copy_from_slice(&[192, 0, 2, 9]);
        packet[30..34].copy_from_slice(&[10, 0, 10, 10]);
        fix_ipv4_checksum(&mut packet);
        assert_eq!(
            fwd.process(&mut packet, 2, 2),
            Verdict::Forward {
                port: 0,
                tag: TagOp::Keep
            }
        );
        assert_eq!(packet[..6], H);
    }

    #[test]
    fn native_vlan_of_a_trunk_leaves_untagged() {
        // Give VLAN 20, port 1's native VLAN, an interface: its frames leave port 1 bare.
        let mut spec = spec();
        spec.interfaces.push(InterfaceSpec {
            vrf: 0,
            attachment: Attachment::Vlan(20),
            ipv4: vec![(v4("10.0.20.1"), 24)],
            ipv6: vec![],
        });
        let mut sp = SlowPath::new(&spec);
        let mut out = Vec::new();
        sp.resolve(3, IpAddr::V4(v4("10.0.20.7")), 0, &mut out);
        assert_eq!(
            out,
            [Outgoing {
                port: 1,
                frame: arp_request_from_r([10, 0, 20, 1], [10, 0, 20, 7])
            }]
        );
    }

    // ---- robustness -------------------------------------------------------------------------

    /// Every frame a test above feeds in, with the punt it arrives as.
    fn punted_frames() -> Vec<(Vec<u8>, u16, PuntReason)> {
        vec![
            (ARP_REQUEST.to_vec(), 0, PuntReason::Arp),
            (tagged(&ARP_REQUEST, 10), 1, PuntReason::Arp),
            (ARP_REPLY_FROM_H.to_vec(), 0, PuntReason::Arp),
            (NS.to_vec(), 0, PuntReason::NeighborDiscovery),
            (tagged(&NS, 10), 1, PuntReason::NeighborDiscovery),
            (DAD_NS.to_vec(), 0, PuntReason::NeighborDiscovery),
            (NA_FROM_H.to_vec(), 0, PuntReason::Local),
            (
                {
                    let mut na = no_option_na(0x40);
                    fix_icmpv6_checksum(&mut na);
                    na
                },
                0,
                PuntReason::Local,
            ),
            (PING4.to_vec(), 0, PuntReason::Local),
            (PING4_SMALL.to_vec(), 0, PuntReason::Local),
            (PING6.to_vec(), 0, PuntReason::Local),
        ]
    }

    #[test]
    fn every_truncation_is_ignored() {
        let mut sp = SlowPath::new(&spec());
        let mut ignored = 0;
        for (frame, port, reason) in punted_frames() {
            // The whole frame does something, so the prefixes below test something.
            let run = punt(&mut sp, &frame, port, reason, 0);
            assert!(
                !run.out.is_empty() || !run.learned.is_empty(),
                "{frame:02x?}"
            );
            for n in 0..frame.len() {
                let run = punt(&mut sp, &frame[..n], port, reason, 0);
                assert!(
                    run.out.is_empty() && run.learned.is_empty(),
                    "prefix {n} of {frame:02x?}"
                );
                ignored += 1;
            }
        }
        assert_eq!(sp.ignored, ignored);
    }

    #[test]
    fn mutated_frames_never_panic_and_answers_stay_well_formed() {
        // xorshift64: deterministic input variation without a crate.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let frames = punted_frames();
        let mut sp = SlowPath::new(&spec());
        let reasons = [
            PuntReason::Arp,
            PuntReason::NeighborDiscovery,
            PuntReason::Local,
        ];
        for _ in 0..20_000 {
            let (seed, port, reason) = &frames[next() as usize % frames.len()];
            let mut frame = seed.clone();
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % frame.len();
                frame[at] = next() as u8;
            }
            // Now and then a wrong reason, port or interface, as a confused caller might pass.
            let (port, reason, iface) = match next() % 8 {
                0 => (
                    (next() % 6) as u16,
                    reasons[next() as usize % 3],
                    (next() % 4) as u16,
                ),
                _ => (*port, *reason, 0),
            };
            let run = punt(&mut sp, &frame, port, reason, iface);
            for o in &run.out {
                assert!(o.frame.len() >= 60);
                assert_eq!(o.frame[6..12], R);
                assert_eq!(o.port, port);
            }
        }
    }
}
