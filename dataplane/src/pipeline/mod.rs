//! The switch pipeline, independent of DPDK: given a frame, its ingress port and the time, it
//! decides what happens to the frame and rewrites it in place. The engine moves mbufs
//! according to the verdict. Being pure, it is unit-tested with byte arrays and replayed
//! deterministically.

pub mod forward;
pub mod frame;
pub mod p4_names;
pub mod spec;
#[cfg(test)]
mod srv6_tests;
#[cfg(test)]
mod tests;

pub use forward::{
    ControlRequest, EndpointStep, ExpressLane, Forwarder, ForwarderError, LANE_L3, LANE_OTHER,
    route_one_flow,
};
pub use frame::Frame;

use crate::counters::DropReason;

/// How the engine must change the frame's VLAN tag on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TagOp {
    /// Leave the L2 header as it is (the forwarder already rewrote a VID if needed).
    #[default]
    Keep,
    /// Insert an 802.1Q tag with this VID after the source MAC.
    Push(u16),
    /// Remove the 802.1Q tag.
    Pop,
}

/// Why a frame goes to the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PuntReason {
    /// ARP for one of the switch's addresses, or an ARP reply to the switch.
    Arp,
    /// Neighbor Solicitation for, or Advertisement to, the switch.
    NeighborDiscovery,
    /// An IP packet addressed to the switch itself (e.g. ping of the gateway).
    Local,
    /// An IPv6 packet whose segment processing ended at one of the switch's SIDs with an
    /// ICMPv6 upper layer (RFC 8986 4.1.1): a ping of the SID.
    LocalSid,
    /// A neighbour on a routed port announcing its address and MAC to everyone: a gratuitous
    /// ARP (sender address = target address, RFC 5227) or a Neighbor Advertisement to a
    /// multicast address (RFC 4861 7.2.6). In a VLAN these are flooded and overheard instead.
    Announcement,
}

/// The pipeline's decision for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send out of `port` after applying `tag`.
    Forward {
        port: u16,
        tag: TagOp,
    },
    /// Copy to every member of `vlan` but the ingress port; `ingress_tagged` says whether the
    /// frame carries a tag now (each copy is tagged per its port's role).
    Flood {
        vlan: u16,
        ingress_tagged: bool,
    },
    /// Hand to the control plane, with the L3 interface it arrived on.
    Punt {
        reason: PuntReason,
        interface: u16,
    },
    Drop(DropReason),
    /// Dropped for `reason`, and the RFC asks for an ICMPv6 error to the packet's source
    /// (SRv6 endpoint errors). The frame is left as it arrived, so the slow path can quote it.
    DropWithIcmpError {
        reason: DropReason,
        error: Icmpv6Error,
    },
    /// Dropped for `reason` while routing (TTL or hop limit expired, no route), and a router
    /// tells the source (RFC 1812 4.3 for IPv4, RFC 4443 3 for IPv6): ICMP Time Exceeded or
    /// Destination Unreachable from the address of the interface the packet arrived on. The
    /// frame is left as it arrived, so the slow path can quote it and check what forbids an
    /// error (an error about an error, fragments, broadcast, bad sources).
    DropWithRouterError {
        reason: DropReason,
        error: RouterError,
    },
    /// An IPv4 packet without Don't Fragment, longer than the MTU of the interface it is
    /// routed out of: the engine cuts it into fragments of at most `mtu` bytes (RFC 791,
    /// RFC 1812 4.2.2.7) and routes each as if it had arrived so. The frame is left as it
    /// arrived.
    Fragment {
        mtu: u16,
    },
}

/// The ICMP errors a router sends about packets it cannot forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RouterErrorKind {
    /// TTL or hop limit expired in transit: ICMP type 11 code 0, ICMPv6 type 3 code 0.
    TimeExceeded,
    /// No route to the destination: ICMP type 3 code 0 (net unreachable), ICMPv6 type 1
    /// code 0 (no route to destination).
    NoRoute,
    /// Longer than the MTU of the interface it would leave by: ICMP type 3 code 4
    /// (fragmentation needed and DF set, with the next-hop MTU, RFC 1191), ICMPv6 type 2
    /// code 0 (Packet Too Big with the MTU, RFC 4443 3.2). The MTU is not in the verdict
    /// (which would no longer fit two registers): `Forwarder::too_big_mtu` keeps it.
    PacketTooBig,
}

/// A router's ICMP or ICMPv6 error (the family is the dropped packet's): what to send, the L3
/// interface the packet arrived on (whose address is the error's source) and the VRF the
/// error is routed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterError {
    pub kind: RouterErrorKind,
    pub interface: u16,
    pub vrf: u16,
}

impl RouterErrorKind {
    /// ICMP (IPv4) type and code, and the message's second word (the next-hop MTU, in its
    /// low 16 bits, for Packet Too Big; else zero) when the next hop's MTU is `mtu`.
    pub fn icmpv4(self, mtu: u16) -> (u8, u8, u32) {
        match self {
            RouterErrorKind::TimeExceeded => (11, 0, 0),
            RouterErrorKind::NoRoute => (3, 0, 0),
            RouterErrorKind::PacketTooBig => (3, 4, u32::from(mtu)),
        }
    }

    /// ICMPv6 type and code, and the message's second word (the MTU for Packet Too Big).
    pub fn icmpv6(self, mtu: u16) -> (u8, u8, u32) {
        match self {
            RouterErrorKind::TimeExceeded => (3, 0, 0),
            RouterErrorKind::NoRoute => (1, 0, 0),
            RouterErrorKind::PacketTooBig => (2, 0, u32::from(mtu)),
        }
    }
}

/// An ICMPv6 error to send about a dropped packet (RFC 4443), routed in `vrf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6Error {
    pub msg_type: u8,
    pub code: u8,
    /// Parameter Problem: offset of the offending field from the start of the IPv6 header
    /// (16 bits hold any offset in a frame ironclos carries, and keep `Verdict` at 8 bytes).
    pub pointer: u16,
    pub vrf: u16,
}

#[cfg(test)]
mod layout_tests {
    /// Verdicts are returned per frame: at one word they come back in a register
    /// instead of through memory (which profiles showed as a store-forwarding stall).
    #[test]
    fn a_verdict_fits_in_two_registers() {
        assert!(std::mem::size_of::<super::Verdict>() <= 8);
        assert!(std::mem::size_of::<super::RouterError>() <= 6);
    }
}
