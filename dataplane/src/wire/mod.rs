//! Zero-copy packet views ("wire views") in the style of smoltcp's `wire` module.
//!
//! Every header has a view, `FooPacket<T: AsRef<[u8]>>`, that wraps a byte buffer without
//! copying it:
//!
//! - `new_unchecked(buffer)` wraps anything; accessors may then panic on a short buffer.
//! - `new_checked(buffer)` (= `new_unchecked` + `check_len`) validates every length and
//!   version field once and returns a specific [`Error`]. After it succeeded, no accessor of the
//!   view panics, so the fast path pays for validation exactly once and a malformed packet is a
//!   drop reason, never a crash.
//! - Getters read big-endian fields in place; setters (when `T: AsMut<[u8]>`) write them in
//!   place; `payload()` / `payload_mut()` return the bytes after the header, limited by the
//!   header's own length field where it has one (so Ethernet padding never leaks into L4).
//! - Variable-length parts (options, payloads) are computed with clamped ranges, so even a setter
//!   that breaks a length field cannot make a later accessor panic.
//!
//! Small owned `Repr` types (`EthernetRepr`, `ArpRepr`, `Ipv4Repr`, `Ipv6Repr`, `NdiscRepr`)
//! `parse` a view and `emit` into a `&mut [u8]`; they are meant for the control lcore (ARP and
//! neighbour discovery replies) and for tests, not for per-packet work.
//!
//! Nothing here allocates, and nothing depends on DPDK: the views work on any byte slice.

pub mod arp;
pub mod checksum;
mod error;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod ndisc;
pub mod srh;
pub mod tcp;
pub mod udp;
pub mod vlan;

#[cfg(test)]
pub(crate) mod test_util;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use error::Error;
pub use ethernet::{AddrParseError, EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use icmpv4::Icmpv4Packet;
pub use icmpv6::Icmpv6Packet;
pub use ip::Ecn;
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr, UpperLayer, walk_extension_headers};
pub use ndisc::{NdiscOption, NdiscPacket, NdiscRepr, NeighborFlags};
pub use srh::SrhPacket;
pub use tcp::TcpPacket;
pub use udp::UdpPacket;
pub use vlan::{L2Info, VlanPacket, VlanTag, parse_l2};

use std::net::{Ipv4Addr, Ipv6Addr};

// Byte helpers shared by the views. Callers pass slices cut with the constant field ranges, so
// the length is known at compile time and the indexing below compiles to plain loads.

#[inline]
fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

#[inline]
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
fn set_be_u16(b: &mut [u8], value: u16) {
    b[..2].copy_from_slice(&value.to_be_bytes());
}

#[inline]
fn set_be_u32(b: &mut [u8], value: u32) {
    b[..4].copy_from_slice(&value.to_be_bytes());
}

#[inline]
fn ipv4_addr(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

#[inline]
fn ipv6_addr(b: &[u8]) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&b[..16]);
    Ipv6Addr::from(octets)
}

#[cfg(test)]
mod tests {
    //! Whole-stack robustness: random mutations and truncations of valid frames go through the
    //! same parse chain the dataplane uses; whatever parses must be readable without panics.

    use super::test_util::XorShift;
    use super::*;

    /// Parses as deep as possible and touches every accessor of every view that parsed.
    fn parse_everything(frame: &[u8]) -> Result<(), Error> {
        let l2 = parse_l2(frame)?;
        let eth = EthernetFrame::new_checked(frame)?;
        let _ = (
            eth.dst_addr(),
            eth.src_addr(),
            eth.ethertype(),
            eth.payload().len(),
        );
        let l3 = &frame[l2.l3_offset..];
        match l2.ethertype {
            EtherType::ARP => {
                let arp = ArpPacket::new_checked(l3)?;
                let _ = ArpRepr::parse(&arp)?;
            }
            EtherType::IPV4 => {
                let ip = Ipv4Packet::new_checked(l3)?;
                let _ = (
                    ip.options(),
                    ip.verify_checksum(),
                    ip.frag_offset(),
                    ip.dscp(),
                );
                let _ = Ipv4Repr::parse(&ip);
                upper(ip.protocol(), ip.payload(), None)?;
            }
            EtherType::IPV6 => {
                let ip = Ipv6Packet::new_checked(l3)?;
                let _ = (ip.flow_label(), ip.ecn(), ip.src_addr(), ip.dst_addr());
                let _ = Ipv6Repr::parse(&ip)?;
                let ul = walk_extension_headers(&ip)?;
                let end = ipv6::HEADER_LEN + usize::from(ip.payload_len());
                if !ul.fragment {
                    upper(
                        ul.protocol,
                        &l3[ul.offset..end],
                        Some((ip.src_addr(), ip.dst_addr())),
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn upper(protocol: u8, data: &[u8], v6: Option<(Ipv6Addr, Ipv6Addr)>) -> Result<(), Error> {
        let (s, d) = v6.unwrap_or((Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED));
        match protocol {
            ip::protocol::UDP => {
                let udp = UdpPacket::new_checked(data)?;
                let _ = (udp.src_port(), udp.dst_port(), udp.payload().len());
                let _ = udp.verify_checksum_v6(&s, &d);
            }
            ip::protocol::TCP => {
                let tcp = TcpPacket::new_checked(data)?;
                let _ = (tcp.options(), tcp.payload(), tcp.flags(), tcp.seq_number());
                let _ = tcp.verify_checksum_v6(&s, &d);
            }
            ip::protocol::ICMP => {
                let icmp = Icmpv4Packet::new_checked(data)?;
                let _ = (icmp.verify_checksum(), icmp.echo_ident(), icmp.payload());
            }
            ip::protocol::ICMPV6 => {
                let icmp = Icmpv6Packet::new_checked(data)?;
                let _ = (
                    icmp.verify_checksum(&s, &d),
                    icmp.echo_seq_no(),
                    icmp.payload(),
                );
                if let Ok(nd) = NdiscPacket::new_checked(data) {
                    let _ = (nd.target_addr(), nd.source_lladdr(), nd.target_lladdr());
                    let _ = nd.options().count();
                    let _ = NdiscRepr::parse(&nd);
                }
            }
            _ => {}
        }
        Ok(())
    }

    #[test]
    fn mutated_and_truncated_frames_never_panic() {
        let seeds: [&[u8]; 5] = [
            &ipv4::tests::UDP_FRAME,
            &ipv4::tests::TCP_FRAME,
            &ipv6::tests::UDP_FRAME,
            &ndisc::tests::NS_FRAME,
            &arp::tests::REQUEST_FRAME,
        ];
        for seed in seeds {
            assert_eq!(parse_everything(seed), Ok(()));
        }
        let mut rng = XorShift::new(0x1234_5678_9abc_def0);
        let mut buf = [0u8; 128];
        for _ in 0..20_000 {
            let seed = seeds[rng.below(seeds.len())];
            buf[..seed.len()].copy_from_slice(seed);
            // A few byte flips concentrated in the headers, where the length fields live.
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(seed.len().min(70));
                buf[at] = rng.next_u8();
            }
            let len = if rng.below(4) == 0 {
                rng.below(seed.len() + 1)
            } else {
                seed.len()
            };
            let _ = parse_everything(&buf[..len]);
        }
    }
}
