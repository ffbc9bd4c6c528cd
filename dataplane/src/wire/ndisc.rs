//! Neighbor Solicitation and Advertisement (RFC 4861 sections 4.3, 4.4, 4.6.1): the part of
//! IPv6 neighbour discovery a switch answers and sends.

use core::fmt;
use core::ops::BitOr;
use std::net::Ipv6Addr;

use super::ethernet::{self, EtherType, EthernetAddress, EthernetRepr};
use super::icmpv6::{Icmpv6Packet, message};
use super::ip::protocol;
use super::ipv6::{self, Ipv6Repr};
use super::{Error, ipv6_addr};

mod field {
    use core::ops::{Range, RangeFrom};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    // 2..4 is the ICMPv6 checksum, read and written through `Icmpv6Packet`.
    pub const FLAGS: usize = 4;
    pub const RESERVED: Range<usize> = 4..8;
    pub const TARGET: Range<usize> = 8..24;
    pub const OPTIONS: RangeFrom<usize> = 24..;
}

/// Length of an NS or NA message without options.
pub const HEADER_LEN: usize = field::OPTIONS.start;

/// ND option types (RFC 4861 section 4.6).
pub mod option_type {
    /// Source link-layer address (in NS, RS, RA).
    pub const SOURCE_LINK_LAYER_ADDR: u8 = 1;
    /// Target link-layer address (in NA, redirect).
    pub const TARGET_LINK_LAYER_ADDR: u8 = 2;
    /// Prefix information.
    pub const PREFIX_INFORMATION: u8 = 3;
    /// Redirected header.
    pub const REDIRECTED_HEADER: u8 = 4;
    /// MTU.
    pub const MTU: u8 = 5;
    /// Nonce (RFC 7527, duplicate address detection).
    pub const NONCE: u8 = 14;
}

/// Length of a link-layer address option for Ethernet: type, length, six address bytes.
const LLADDR_OPTION_LEN: usize = 8;

/// The flags of a Neighbor Advertisement.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NeighborFlags(pub u8);

impl NeighborFlags {
    /// No flags.
    pub const NONE: NeighborFlags = NeighborFlags(0);
    /// R: the sender is a router.
    pub const ROUTER: NeighborFlags = NeighborFlags(0x80);
    /// S: sent in response to a solicitation.
    pub const SOLICITED: NeighborFlags = NeighborFlags(0x40);
    /// O: override an existing cache entry.
    pub const OVERRIDE: NeighborFlags = NeighborFlags(0x20);

    /// True if every flag of `other` is set in `self`.
    #[inline]
    pub const fn contains(self, other: NeighborFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for NeighborFlags {
    type Output = NeighborFlags;
    #[inline]
    fn bitor(self, rhs: NeighborFlags) -> NeighborFlags {
        NeighborFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for NeighborFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = if self.contains(Self::ROUTER) {
            "R"
        } else {
            "-"
        };
        let s = if self.contains(Self::SOLICITED) {
            "S"
        } else {
            "-"
        };
        let o = if self.contains(Self::OVERRIDE) {
            "O"
        } else {
            "-"
        };
        write!(f, "NeighborFlags({r}{s}{o})")
    }
}

/// One ND option: its type and the bytes after the type and length octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdiscOption<'a> {
    /// Option type (see [`option_type`]).
    pub kind: u8,
    /// Option body (`length * 8 - 2` bytes).
    pub data: &'a [u8],
}

/// Iterator over the options of an NS/NA; see [`NdiscPacket::options`].
#[derive(Debug, Clone)]
pub struct NdiscOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for NdiscOptions<'a> {
    type Item = NdiscOption<'a>;

    fn next(&mut self) -> Option<NdiscOption<'a>> {
        // Stops quietly at anything malformed: `check_len` has rejected that already for
        // checked views, and an unchecked view must still not panic.
        let rest = self.rest;
        let len = usize::from(*rest.get(1)?) * 8;
        if len == 0 || len > rest.len() {
            self.rest = &[];
            return None;
        }
        self.rest = &rest[len..];
        Some(NdiscOption {
            kind: rest[0],
            data: &rest[2..len],
        })
    }
}

/// A view of a Neighbor Solicitation or Advertisement; the buffer is the ICMPv6 message
/// (verify its checksum with [`Icmpv6Packet::verify_checksum`]).
///
/// RFC 4861 section 7.1 also requires hop limit 255 and, for NS from the unspecified address,
/// a solicited-node destination and no source link-layer option: those live in the IPv6 header
/// and are the caller's to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdiscPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NdiscPacket<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 24 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        NdiscPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that this is an NS or NA ([`Error::Unsupported`] for other ICMPv6 types) with
    /// code 0 and well-formed options: a zero length, an option running past the message or a
    /// link-layer address option that is not 8 bytes (Ethernet) is [`Error::Malformed`].
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if !matches!(
            data[field::TYPE],
            message::NEIGHBOR_SOLICIT | message::NEIGHBOR_ADVERT
        ) {
            return Err(Error::Unsupported);
        }
        if data[field::CODE] != 0 {
            return Err(Error::Malformed);
        }
        let mut rest = &data[field::OPTIONS];
        while !rest.is_empty() {
            let len = usize::from(*rest.get(1).ok_or(Error::Malformed)?) * 8;
            if len == 0 || len > rest.len() {
                return Err(Error::Malformed);
            }
            let is_lladdr = matches!(
                rest[0],
                option_type::SOURCE_LINK_LAYER_ADDR | option_type::TARGET_LINK_LAYER_ADDR
            );
            if is_lladdr && len != LLADDR_OPTION_LEN {
                return Err(Error::Malformed);
            }
            rest = &rest[len..];
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// ICMPv6 type: NS (135) or NA (136) after a successful check.
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// NA flags (an NS carries zeros here).
    #[inline]
    pub fn flags(&self) -> NeighborFlags {
        NeighborFlags(self.buffer.as_ref()[field::FLAGS] & 0xe0)
    }

    /// The target address.
    #[inline]
    pub fn target_addr(&self) -> Ipv6Addr {
        ipv6_addr(&self.buffer.as_ref()[field::TARGET])
    }

    /// The options, in order.
    #[inline]
    pub fn options(&self) -> NdiscOptions<'_> {
        NdiscOptions {
            rest: &self.buffer.as_ref()[field::OPTIONS],
        }
    }

    fn lladdr(&self, kind: u8) -> Option<EthernetAddress> {
        // RFC 4861 section 7.1: later duplicates are ignored, like Linux does.
        let option = self.options().find(|o| o.kind == kind)?;
        EthernetAddress::from_bytes(option.data)
    }

    /// The source link-layer address option (sent in NS).
    #[inline]
    pub fn source_lladdr(&self) -> Option<EthernetAddress> {
        self.lladdr(option_type::SOURCE_LINK_LAYER_ADDR)
    }

    /// The target link-layer address option (sent in NA).
    #[inline]
    pub fn target_lladdr(&self) -> Option<EthernetAddress> {
        self.lladdr(option_type::TARGET_LINK_LAYER_ADDR)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NdiscPacket<T> {
    /// Sets the ICMPv6 type.
    #[inline]
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    /// Sets the flags and clears the reserved bits after them.
    #[inline]
    pub fn set_flags(&mut self, flags: NeighborFlags) {
        let reserved = &mut self.buffer.as_mut()[field::RESERVED];
        reserved.fill(0);
        reserved[0] = flags.0 & 0xe0;
    }

    /// Sets the target address.
    #[inline]
    pub fn set_target_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET].copy_from_slice(&addr.octets());
    }

    /// The options area, mutable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::OPTIONS]
    }
}

/// The solicited-node multicast address of `addr` (RFC 4291 section 2.7.1), where NS for it
/// are sent: ff02::1:ff followed by its low 24 bits.
#[inline]
pub fn solicited_node(addr: &Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// An owned NS or NA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdiscRepr {
    /// Neighbor Solicitation.
    NeighborSolicit {
        /// The address being resolved.
        target_addr: Ipv6Addr,
        /// The solicitor's MAC (source link-layer option); absent in duplicate address
        /// detection.
        lladdr: Option<EthernetAddress>,
    },
    /// Neighbor Advertisement.
    NeighborAdvert {
        /// R, S, O flags.
        flags: NeighborFlags,
        /// The address advertised.
        target_addr: Ipv6Addr,
        /// Its MAC (target link-layer option).
        lladdr: Option<EthernetAddress>,
    },
}

impl NdiscRepr {
    /// Reads `packet`, checking it first. A multicast target is [`Error::Malformed`]
    /// (RFC 4861 sections 7.1.1 and 7.1.2). The ICMPv6 checksum is not verified here.
    pub fn parse<T: AsRef<[u8]>>(packet: &NdiscPacket<T>) -> Result<Self, Error> {
        packet.check_len()?;
        let target_addr = packet.target_addr();
        if target_addr.is_multicast() {
            return Err(Error::Malformed);
        }
        Ok(if packet.msg_type() == message::NEIGHBOR_SOLICIT {
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr: packet.source_lladdr(),
            }
        } else {
            NdiscRepr::NeighborAdvert {
                flags: packet.flags(),
                target_addr,
                lladdr: packet.target_lladdr(),
            }
        })
    }

    /// The answer a router owning `target_addr` gives to this solicitation from `solicitor`
    /// (its IPv6 source): NA with R and O set, S set unless the solicitor was unspecified
    /// (duplicate address detection, answered to all-nodes per RFC 4861 section 7.2.4).
    /// Returns `None` for anything but an NS.
    pub fn advert_for(&self, solicitor: &Ipv6Addr, hardware_addr: EthernetAddress) -> Option<Self> {
        let NdiscRepr::NeighborSolicit { target_addr, .. } = *self else {
            return None;
        };
        let mut flags = NeighborFlags::ROUTER | NeighborFlags::OVERRIDE;
        if !solicitor.is_unspecified() {
            flags = flags | NeighborFlags::SOLICITED;
        }
        Some(NdiscRepr::NeighborAdvert {
            flags,
            target_addr,
            lladdr: Some(hardware_addr),
        })
    }

    /// Bytes [`Self::emit`] writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        let lladdr = match self {
            NdiscRepr::NeighborSolicit { lladdr, .. }
            | NdiscRepr::NeighborAdvert { lladdr, .. } => lladdr,
        };
        HEADER_LEN
            + if lladdr.is_some() {
                LLADDR_OPTION_LEN
            } else {
                0
            }
    }

    /// Writes the ICMPv6 message with its checksum for the given IPv6 source and destination
    /// at the start of `buf`; returns the bytes written.
    pub fn emit(&self, src: &Ipv6Addr, dst: &Ipv6Addr, buf: &mut [u8]) -> Result<usize, Error> {
        let len = self.buffer_len();
        let out = buf.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        out.fill(0);
        let (msg_type, flags, target_addr, option, lladdr) = match *self {
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr,
            } => (
                message::NEIGHBOR_SOLICIT,
                NeighborFlags::NONE,
                target_addr,
                option_type::SOURCE_LINK_LAYER_ADDR,
                lladdr,
            ),
            NdiscRepr::NeighborAdvert {
                flags,
                target_addr,
                lladdr,
            } => (
                message::NEIGHBOR_ADVERT,
                flags,
                target_addr,
                option_type::TARGET_LINK_LAYER_ADDR,
                lladdr,
            ),
        };
        let mut p = NdiscPacket::new_unchecked(&mut *out);
        p.set_msg_type(msg_type);
        p.set_flags(flags);
        p.set_target_addr(target_addr);
        if let Some(addr) = lladdr {
            let o = p.options_mut();
            o[0] = option;
            o[1] = (LLADDR_OPTION_LEN / 8) as u8;
            o[2..LLADDR_OPTION_LEN].copy_from_slice(&addr.0);
        }
        Icmpv6Packet::new_unchecked(out).fill_checksum(src, dst);
        Ok(len)
    }

    /// Writes a whole untagged frame: Ethernet, IPv6 (hop limit 255, as ND requires) and the
    /// message. Returns the frame length.
    ///
    /// For an NS, `ip_dst` is usually [`solicited_node`] of the target and `eth_dst` its
    /// [`EthernetAddress::from_ipv6_multicast`]; for a solicited NA, the solicitor's addresses.
    pub fn emit_frame(
        &self,
        eth_src: EthernetAddress,
        eth_dst: EthernetAddress,
        ip_src: &Ipv6Addr,
        ip_dst: &Ipv6Addr,
        buf: &mut [u8],
    ) -> Result<usize, Error> {
        let msg_len = self.buffer_len();
        let total = ethernet::HEADER_LEN + ipv6::HEADER_LEN + msg_len;
        if buf.len() < total {
            return Err(Error::BufferTooSmall);
        }
        let eth = EthernetRepr {
            src_addr: eth_src,
            dst_addr: eth_dst,
            ethertype: EtherType::IPV6,
        };
        let mut at = eth.emit(buf)?;
        let ip = Ipv6Repr {
            src_addr: *ip_src,
            dst_addr: *ip_dst,
            next_header: protocol::ICMPV6,
            payload_len: msg_len,
            hop_limit: 255,
            traffic_class: 0,
            flow_label: 0,
        };
        at += ip.emit(&mut buf[at..])?;
        at += self.emit(ip_src, ip_dst, &mut buf[at..])?;
        Ok(at)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::ipv6::{Ipv6Packet, walk_extension_headers};

    /// fe80::1 (02:00:00:00:00:01) asks for fe80::2, sent to ff02::1:ff00:2 / 33:33:ff:00:00:02.
    /// ICMPv6 checksum 0x7a97 worked out off-line; `icmpv6` re-checks it with the reference sum.
    pub(crate) const NS_FRAME: [u8; 86] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86,
        0xdd, // eth
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // IPv6, 32 bytes of ICMPv6, hlim 255
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // fe80::1
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0x00, 0x02, // ff02::1:ff00:2
        0x87, 0x00, 0x7a, 0x97, 0x00, 0x00, 0x00, 0x00, // NS, reserved
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // target fe80::2
        0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source link-layer address
    ];

    /// fe80::2 (02:00:00:00:00:02) answers fe80::1: solicited, override; checksum 0x181a.
    const NA_FRAME: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x86,
        0xdd, // eth
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, // IPv6
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // fe80::2
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // fe80::1
        0x88, 0x00, 0x18, 0x1a, 0x60, 0x00, 0x00, 0x00, // NA, S|O
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // target fe80::2
        0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // target link-layer address
    ];

    const H1: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const H2: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn msg(frame: &[u8]) -> &[u8] {
        &frame[54..]
    }

    #[test]
    fn ns_accessors_through_the_stack() {
        let ip = Ipv6Packet::new_checked(&NS_FRAME[14..]).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        let ul = walk_extension_headers(&ip).unwrap();
        assert_eq!((ul.protocol, ul.offset), (protocol::ICMPV6, 40));
        let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
        let ns = NdiscPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(ns.msg_type(), message::NEIGHBOR_SOLICIT);
        assert_eq!(ns.flags(), NeighborFlags::NONE);
        assert_eq!(ns.target_addr(), a("fe80::2"));
        assert_eq!(ns.source_lladdr(), Some(H1));
        assert_eq!(ns.target_lladdr(), None);
        let opts: Vec<_> = ns.options().collect();
        assert_eq!(
            opts,
            [NdiscOption {
                kind: 1,
                data: &[2, 0, 0, 0, 0, 1]
            }]
        );
        assert_eq!(
            NdiscRepr::parse(&ns),
            Ok(NdiscRepr::NeighborSolicit {
                target_addr: a("fe80::2"),
                lladdr: Some(H1)
            })
        );
    }

    #[test]
    fn na_accessors() {
        let na = NdiscPacket::new_checked(msg(&NA_FRAME)).unwrap();
        assert_eq!(na.msg_type(), message::NEIGHBOR_ADVERT);
        let flags = na.flags();
        assert!(
            flags.contains(NeighborFlags::SOLICITED) && flags.contains(NeighborFlags::OVERRIDE)
        );
        assert!(!flags.contains(NeighborFlags::ROUTER));
        assert_eq!(format!("{flags:?}"), "NeighborFlags(-SO)");
        assert_eq!(na.target_lladdr(), Some(H2));
        assert_eq!(na.source_lladdr(), None);
        let icmp = Icmpv6Packet::new_checked(msg(&NA_FRAME)).unwrap();
        assert!(icmp.verify_checksum(&a("fe80::2"), &a("fe80::1")));
    }

    #[test]
    fn every_prefix_fails() {
        // Through the stack, the IPv6 payload length catches every truncation.
        for n in 0..NS_FRAME.len() - 14 {
            assert_eq!(
                Ipv6Packet::new_checked(&NS_FRAME[14..14 + n]),
                Err(Error::Truncated)
            );
        }
        // The ND view alone: a cut header is truncated, a cut option is malformed.
        for n in 0..HEADER_LEN {
            assert_eq!(
                NdiscPacket::new_checked(&msg(&NS_FRAME)[..n]),
                Err(Error::Truncated)
            );
        }
        for n in HEADER_LEN + 1..32 {
            assert_eq!(
                NdiscPacket::new_checked(&msg(&NS_FRAME)[..n]),
                Err(Error::Malformed)
            );
        }
        assert!(NdiscPacket::new_checked(&msg(&NS_FRAME)[..HEADER_LEN]).is_ok());
    }

    #[test]
    fn malformed_options_and_types() {
        let mut m = [0u8; 32];
        m.copy_from_slice(msg(&NS_FRAME));
        let check = |m: &[u8]| NdiscPacket::new_checked(m).map(|_| ());

        let mut bad = m;
        bad[25] = 0; // option length 0: would loop forever if accepted
        assert_eq!(check(&bad), Err(Error::Malformed));
        bad[25] = 2; // 16 bytes, past the end
        assert_eq!(check(&bad), Err(Error::Malformed));

        let mut long = [0u8; 40];
        long[..32].copy_from_slice(&m);
        long[25] = 2; // a 16-byte link-layer address option is not Ethernet's
        assert_eq!(check(&long), Err(Error::Malformed));
        long[24] = option_type::NONCE; // other options may be any multiple of 8
        assert_eq!(check(&long), Ok(()));
        let ns = NdiscPacket::new_checked(&long[..]).unwrap();
        assert_eq!(ns.source_lladdr(), None);
        assert_eq!(ns.options().count(), 1);

        let mut bad = m;
        bad[1] = 1; // code must be 0
        assert_eq!(check(&bad), Err(Error::Malformed));
        let mut bad = m;
        bad[0] = message::ROUTER_SOLICIT;
        assert_eq!(check(&bad), Err(Error::Unsupported));
        let mut bad = m;
        bad[8] = 0xff; // multicast target
        let p = NdiscPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(NdiscRepr::parse(&p), Err(Error::Malformed));
    }

    #[test]
    fn unchecked_option_iteration_never_panics() {
        let mut m = [0u8; 33];
        m[..32].copy_from_slice(msg(&NS_FRAME));
        for (at, value) in [(25, 0), (25, 9), (32, 1)] {
            let mut bad = m;
            bad[at] = value;
            let p = NdiscPacket::new_unchecked(&bad[..]);
            let _ = p.options().count();
            let _ = (p.source_lladdr(), p.target_lladdr());
        }
        // A trailing single byte is not an option.
        let p = NdiscPacket::new_unchecked(&m[..]);
        assert_eq!(p.options().count(), 1);
    }

    #[test]
    fn build_ns_and_na_frames() {
        let ns = NdiscRepr::NeighborSolicit {
            target_addr: a("fe80::2"),
            lladdr: Some(H1),
        };
        let dst = solicited_node(&a("fe80::2"));
        assert_eq!(dst, a("ff02::1:ff00:2"));
        let mut out = [0u8; 128];
        let eth_dst = EthernetAddress::from_ipv6_multicast(&dst);
        let n = ns
            .emit_frame(H1, eth_dst, &a("fe80::1"), &dst, &mut out)
            .unwrap();
        assert_eq!(out[..n], NS_FRAME);

        let na = ns.advert_for(&a("fe80::1"), H2).unwrap();
        let NdiscRepr::NeighborAdvert { flags, .. } = na else {
            panic!("not an NA: {na:?}")
        };
        assert_eq!(
            flags,
            NeighborFlags::ROUTER | NeighborFlags::SOLICITED | NeighborFlags::OVERRIDE
        );
        // The literal NA is from a host (no R flag).
        let host_na = NdiscRepr::NeighborAdvert {
            flags: NeighborFlags::SOLICITED | NeighborFlags::OVERRIDE,
            target_addr: a("fe80::2"),
            lladdr: Some(H2),
        };
        let n = host_na
            .emit_frame(H2, H1, &a("fe80::2"), &a("fe80::1"), &mut out)
            .unwrap();
        assert_eq!(out[..n], NA_FRAME);
        let parsed = NdiscRepr::parse(&NdiscPacket::new_checked(&out[54..n]).unwrap()).unwrap();
        assert_eq!(parsed, host_na);

        let dad = ns.advert_for(&Ipv6Addr::UNSPECIFIED, H2).unwrap();
        let NdiscRepr::NeighborAdvert { flags, .. } = dad else {
            panic!("not an NA")
        };
        assert!(!flags.contains(NeighborFlags::SOLICITED));
        assert_eq!(na.advert_for(&a("fe80::1"), H2), None);

        // Without the option, and with buffers too small.
        let bare = NdiscRepr::NeighborSolicit {
            target_addr: a("fe80::2"),
            lladdr: None,
        };
        assert_eq!(bare.buffer_len(), 24);
        assert_eq!(bare.emit(&a("::"), &dst, &mut out), Ok(24));
        assert!(
            Icmpv6Packet::new_checked(&out[..24])
                .unwrap()
                .verify_checksum(&a("::"), &dst)
        );
        assert_eq!(
            bare.emit(&a("::"), &dst, &mut out[..23]),
            Err(Error::BufferTooSmall)
        );
        assert_eq!(
            ns.emit_frame(H1, eth_dst, &a("fe80::1"), &dst, &mut out[..85]),
            Err(Error::BufferTooSmall)
        );
    }
}
