//! IPv6 (RFC 8200) header view, the bounded extension-header walk, and an owned header for
//! builders.

use core::cmp::min;
use std::net::Ipv6Addr;

use super::ip::{Ecn, protocol};
use super::{Error, be_u16, be_u32, ipv6_addr, set_be_u16, set_be_u32};

mod field {
    use core::ops::Range;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Range<usize> = 8..24;
    pub const DST: Range<usize> = 24..40;
}

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = field::DST.end;

/// How many extension headers [`walk_extension_headers`] follows before giving up. RFC 8200
/// defines at most about six in one chain; the bound caps the cost of hostile chains (RFC 7112
/// and RFC 9098 discuss why devices limit it).
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// Routing type of a Segment Routing Header (RFC 8754).
pub const ROUTING_TYPE_SRH: u8 = 4;

const FLOW_LABEL_MASK: u32 = 0x000f_ffff;

/// A view of an IPv6 packet.
///
/// The buffer may be longer than the packet (link-layer padding): [`Self::payload`] ends at the
/// payload length. Jumbograms (payload length 0 with a Jumbo option) are not supported: they
/// cannot occur on Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 40 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Validates the version and that the payload length fits in the buffer (else
    /// [`Error::Truncated`], as Linux counts it).
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 6 {
            return Err(Error::BadVersion);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > data.len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    fn ver_tc_flow(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }

    /// Version nibble (6 after a successful check).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class byte (DSCP and ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    /// DSCP (high six bits of the traffic class).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// ECN codepoint (low two bits of the traffic class).
    #[inline]
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & FLOW_LABEL_MASK
    }

    /// Payload length: everything after the fixed header, extension headers included.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Next header of the fixed header (the first extension header or the upper layer).
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        ipv6_addr(&self.buffer.as_ref()[field::SRC])
    }

    /// Destination address (the current segment when an SRH is present).
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        ipv6_addr(&self.buffer.as_ref()[field::DST])
    }

    /// End of the packet, clamped so that a payload-length setter cannot make slicing panic.
    #[inline]
    fn packet_end(&self) -> usize {
        min(
            HEADER_LEN + usize::from(self.payload_len()),
            self.buffer.as_ref().len(),
        )
    }

    /// The payload (extension headers included), up to the payload length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.packet_end()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline]
    fn set_ver_tc_flow(&mut self, value: u32) {
        set_be_u32(&mut self.buffer.as_mut()[field::VER_TC_FLOW], value);
    }

    /// Sets the version nibble.
    #[inline]
    pub fn set_version(&mut self, version: u8) {
        let v = self.ver_tc_flow();
        self.set_ver_tc_flow((v & 0x0fff_ffff) | (u32::from(version & 0x0f) << 28));
    }

    /// Sets the traffic class byte.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let v = self.ver_tc_flow();
        self.set_ver_tc_flow((v & 0xf00f_ffff) | (u32::from(tc) << 20));
    }

    /// Sets the DSCP, keeping ECN.
    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        let tc = self.traffic_class();
        self.set_traffic_class((tc & 0x03) | (dscp << 2));
    }

    /// Sets the ECN codepoint, keeping DSCP. IPv6 has no header checksum to patch.
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let tc = self.traffic_class();
        self.set_traffic_class((tc & !0x03) | ecn.bits());
    }

    /// Marks congestion like Linux's `IP6_ECN_set_ce`: ECT(0)/ECT(1) become CE, Not-ECT is
    /// untouched. Returns true if the packet now carries CE.
    #[inline]
    pub fn mark_ce(&mut self) -> bool {
        match self.ecn() {
            Ecn::NotEct => false,
            Ecn::Ce => true,
            Ecn::Ect0 | Ecn::Ect1 => {
                self.set_ecn(Ecn::Ce);
                true
            }
        }
    }

    /// Sets the flow label (bits above the low 20 are ignored).
    #[inline]
    pub fn set_flow_label(&mut self, label: u32) {
        let v = self.ver_tc_flow();
        self.set_ver_tc_flow((v & !FLOW_LABEL_MASK) | (label & FLOW_LABEL_MASK));
    }

    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, len: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, next_header: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = next_header;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hop_limit;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.octets());
    }

    /// The payload up to the payload length, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.packet_end();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// Where the upper layer starts, as found by [`walk_extension_headers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UpperLayer {
    /// The upper-layer protocol (TCP, UDP, ICMPv6, ESP, 4/41 for SRv6 decapsulation, 59 for
    /// "no next header", ...).
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header. For a non-first
    /// fragment it points at fragment data, not at a header.
    pub offset: usize,
    /// Offset of the first Segment Routing Header (routing type 4), if any, from the start of
    /// the IPv6 header.
    pub srh_offset: Option<usize>,
    /// True if a Fragment header was seen: L4 fields are then absent or incomplete, so callers
    /// must not hash or match on ports.
    pub fragment: bool,
    /// True if that Fragment header's offset is not zero: no upper-layer header is here at
    /// all, `protocol` names what the first fragment carries.
    pub later_fragment: bool,
}

/// Whether next header `next` is one [`walk_extension_headers`] walks through.
#[inline(always)]
#[must_use]
pub fn is_extension_header(next: u8) -> bool {
    matches!(
        next,
        protocol::HOP_BY_HOP
            | protocol::ROUTING
            | protocol::FRAGMENT
            | protocol::AH
            | protocol::DESTINATION_OPTIONS
    )
}

/// Walks the extension headers of a checked `packet` to the upper layer.
///
/// Follows Hop-by-Hop (0, only as the first header), Routing (43), Fragment (44, 8 bytes),
/// Authentication (51, `(len + 2) * 4` bytes) and Destination Options (60); anything else,
/// including 59 (no next header) and ESP, ends the walk. At most
/// [`MAX_EXTENSION_HEADERS`] are followed. Lengths are validated against the payload length,
/// not the buffer, so padding is never read as headers:
///
/// - fewer bytes left than a header's fixed part: [`Error::Truncated`];
/// - a header length that runs past the payload, or Hop-by-Hop after the first position:
///   [`Error::BadExtensionHeader`];
/// - a ninth extension header: [`Error::TooManyExtensionHeaders`].
///
/// A Fragment header with a non-zero offset ends the walk: what follows is the middle of the
/// original packet, not headers (RFC 8200 puts the whole chain in the first fragment).
pub fn walk_extension_headers<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<UpperLayer, Error> {
    let data = packet.buffer.as_ref();
    let end = packet.packet_end();
    let mut upper = UpperLayer {
        protocol: packet.next_header(),
        offset: HEADER_LEN,
        srh_offset: None,
        fragment: false,
        later_fragment: false,
    };
    let mut count = 0;
    loop {
        let header = upper.protocol;
        // Bytes needed before the length can be read (all of them for the fixed-size Fragment).
        let fixed_len = match header {
            protocol::HOP_BY_HOP
            | protocol::ROUTING
            | protocol::DESTINATION_OPTIONS
            | protocol::AH => 2,
            protocol::FRAGMENT => 8,
            _ => return Ok(upper),
        };
        if count == MAX_EXTENSION_HEADERS {
            return Err(Error::TooManyExtensionHeaders);
        }
        count += 1;
        if header == protocol::HOP_BY_HOP && upper.offset != HEADER_LEN {
            return Err(Error::BadExtensionHeader);
        }
        let rest = data.get(upper.offset..end).unwrap_or_default();
        if rest.len() < fixed_len {
            return Err(Error::Truncated);
        }
        let len = match header {
            protocol::FRAGMENT => 8,
            protocol::AH => (usize::from(rest[1]) + 2) * 4,
            _ => (usize::from(rest[1]) + 1) * 8,
        };
        if len > rest.len() {
            return Err(Error::BadExtensionHeader);
        }
        if header == protocol::ROUTING && rest[2] == ROUTING_TYPE_SRH && upper.srh_offset.is_none()
        {
            upper.srh_offset = Some(upper.offset);
        }
        upper.protocol = rest[0];
        upper.offset += len;
        if header == protocol::FRAGMENT {
            upper.fragment = true;
            if be_u16(&rest[2..4]) >> 3 != 0 {
                upper.later_fragment = true;
                return Ok(upper);
            }
        }
    }
}

/// An owned IPv6 fixed header, for builders and the control lcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header.
    pub next_header: u8,
    /// Payload length in bytes (extension headers included).
    pub payload_len: usize,
    /// Hop limit (255 for neighbour discovery).
    pub hop_limit: u8,
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Reads the fixed header of `packet`, checking it first.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Self, Error> {
        packet.check_len()?;
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Bytes of header [`Self::emit`] writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 40-byte fixed header at the start of `buf` and returns its length; the
    /// payload goes at `buf[40..]`. `buf` must have room for header and payload.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let payload_len = u16::try_from(self.payload_len).map_err(|_| Error::Malformed)?;
        if buf.len() < HEADER_LEN + self.payload_len {
            return Err(Error::BufferTooSmall);
        }
        let mut p = Ipv6Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_ver_tc_flow(6 << 28);
        p.set_traffic_class(self.traffic_class);
        p.set_flow_label(self.flow_label);
        p.set_payload_len(payload_len);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::ethernet::EthernetFrame;
    use crate::wire::udp::UdpPacket;

    /// 2001:db8::1 -> 2001:db8::2, traffic class 0xba (DSCP 46, ECT(0)), flow label 0x12345,
    /// hop limit 64, UDP 12345 -> 53 with payload de ad be ef (UDP checksum 0xd655).
    pub(crate) const UDP_FRAME: [u8; 66] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86,
        0xdd, // eth
        0x6b, 0xa1, 0x23, 0x45, 0x00, 0x0c, 0x11,
        0x40, // ver/tc/flow, length 12, UDP, hlim 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // src
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // dst
        0x30, 0x39, 0x00, 0x35, 0x00, 0x0c, 0xd6, 0x55, 0xde, 0xad, 0xbe, 0xef, // udp
    ];

    fn ip_of(frame: &[u8]) -> &[u8] {
        &frame[14..]
    }

    #[test]
    fn accessors() {
        let eth = EthernetFrame::new_checked(&UDP_FRAME[..]).unwrap();
        let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.version(), 6);
        assert_eq!(ip.traffic_class(), 0xba);
        assert_eq!((ip.dscp(), ip.ecn()), (46, Ecn::Ect0));
        assert_eq!(ip.flow_label(), 0x12345);
        assert_eq!(ip.payload_len(), 12);
        assert_eq!(ip.next_header(), protocol::UDP);
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.src_addr(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(ip.dst_addr(), "2001:db8::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(ip.payload(), &UDP_FRAME[54..]);
        let ul = walk_extension_headers(&ip).unwrap();
        assert_eq!(
            ul,
            UpperLayer {
                protocol: protocol::UDP,
                offset: 40,
                srh_offset: None,
                fragment: false,
                later_fragment: false,
            }
        );
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum_v6(&ip.src_addr(), &ip.dst_addr()));
    }

    #[test]
    fn every_prefix_is_truncated_and_padding_is_ignored() {
        for n in 0..52 {
            assert_eq!(
                Ipv6Packet::new_checked(&ip_of(&UDP_FRAME)[..n]),
                Err(Error::Truncated)
            );
        }
        let mut padded = [0u8; 60];
        padded[..52].copy_from_slice(ip_of(&UDP_FRAME));
        let ip = Ipv6Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(ip.payload(), &UDP_FRAME[54..]);
    }

    #[test]
    fn malformed_headers() {
        let mut p = [0u8; 52];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        p[5] = 13; // payload length beyond the buffer
        assert_eq!(Ipv6Packet::new_checked(&p[..]), Err(Error::Truncated));
        p[5] = 12;
        p[0] = 0x4b; // version 4
        assert_eq!(Ipv6Packet::new_checked(&p[..]), Err(Error::BadVersion));
    }

    #[test]
    fn setters_round_trip() {
        let mut p = [0u8; 52];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        let mut ip = Ipv6Packet::new_checked(&mut p[..]).unwrap();
        ip.set_dscp(26);
        assert_eq!(
            (ip.dscp(), ip.ecn(), ip.flow_label()),
            (26, Ecn::Ect0, 0x12345)
        );
        ip.set_ecn(Ecn::Ect1);
        assert_eq!(
            (ip.dscp(), ip.ecn(), ip.flow_label()),
            (26, Ecn::Ect1, 0x12345)
        );
        assert!(ip.mark_ce());
        assert_eq!(
            (ip.dscp(), ip.ecn(), ip.flow_label()),
            (26, Ecn::Ce, 0x12345)
        );
        ip.set_ecn(Ecn::NotEct);
        assert!(!ip.mark_ce());
        assert_eq!(ip.ecn(), Ecn::NotEct);
        ip.set_flow_label(0xfff_ffff); // extra bits must not reach the traffic class
        assert_eq!(
            (ip.traffic_class(), ip.flow_label(), ip.version()),
            (26 << 2, 0xfffff, 6)
        );
        ip.set_traffic_class(0xff);
        assert_eq!(
            (ip.traffic_class(), ip.flow_label(), ip.version()),
            (0xff, 0xfffff, 6)
        );
        ip.set_hop_limit(1);
        ip.set_next_header(protocol::TCP);
        ip.set_src_addr(Ipv6Addr::LOCALHOST);
        ip.set_dst_addr("fcbb:bb00:100::".parse().unwrap());
        ip.payload_mut()[0] = 0x77;
        ip.set_version(4);
        assert_eq!(
            (ip.hop_limit(), ip.next_header(), ip.version()),
            (1, protocol::TCP, 4)
        );
        assert_eq!(ip.src_addr(), Ipv6Addr::LOCALHOST);
        assert_eq!(
            ip.dst_addr(),
            "fcbb:bb00:100::".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(p[40], 0x77);
        assert_eq!(&p[..4], &[0x4f, 0xff, 0xff, 0xff]);

        // A payload length beyond the buffer set after the check cannot make payload() panic.
        let mut ip = Ipv6Packet::new_unchecked(&mut p[..]);
        ip.set_payload_len(9000);
        assert_eq!(ip.payload().len(), 12);
        assert_eq!(ip.payload_mut().len(), 12);
    }

    /// Builds an IPv6 packet whose chain is `headers` (next-header value, total length) then
    /// `upper` with an 8-byte body; extension headers get their real next-header fields.
    fn chain(buf: &mut [u8], headers: &[(u8, usize)], upper: u8) -> usize {
        buf.fill(0);
        let mut offset = HEADER_LEN;
        buf[0] = 0x60;
        buf[field::NXT_HDR] = headers.first().map_or(upper, |h| h.0);
        for (i, &(kind, len)) in headers.iter().enumerate() {
            buf[offset] = headers.get(i + 1).map_or(upper, |h| h.0);
            buf[offset + 1] = match kind {
                protocol::FRAGMENT => 0,
                protocol::AH => (len / 4 - 2) as u8,
                _ => (len / 8 - 1) as u8,
            };
            if kind == protocol::ROUTING {
                buf[offset + 2] = ROUTING_TYPE_SRH;
            }
            offset += len;
        }
        let total = offset + 8;
        buf[4..6].copy_from_slice(&((total - HEADER_LEN) as u16).to_be_bytes());
        total
    }

    #[test]
    fn walk_through_every_kind() {
        let mut buf = [0u8; 400];
        let headers = [
            (protocol::HOP_BY_HOP, 8),
            (protocol::DESTINATION_OPTIONS, 16),
            (protocol::ROUTING, 40), // SRH with two segments
            (protocol::FRAGMENT, 8), // offset 0: first fragment, keep walking
            (protocol::AH, 24),
            (protocol::DESTINATION_OPTIONS, 8),
        ];
        let len = chain(&mut buf, &headers, protocol::TCP);
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        let ul = walk_extension_headers(&ip).unwrap();
        assert_eq!(
            ul,
            UpperLayer {
                protocol: protocol::TCP,
                offset: 40 + 8 + 16 + 40 + 8 + 24 + 8,
                srh_offset: Some(40 + 8 + 16),
                fragment: true,
                later_fragment: false,
            }
        );

        // A routing header of another type is walked but not remembered as an SRH.
        buf[40 + 8 + 16 + 2] = 2;
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip).unwrap().srh_offset, None);
    }

    #[test]
    fn walk_stops_at_non_first_fragment_and_no_next_header() {
        let mut buf = [0u8; 100];
        let len = chain(
            &mut buf,
            &[(protocol::FRAGMENT, 8)],
            protocol::DESTINATION_OPTIONS,
        );
        buf[40 + 2..40 + 4].copy_from_slice(&(185u16 << 3).to_be_bytes()); // offset 1480
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        let ul = walk_extension_headers(&ip).unwrap();
        // The next header says Destination Options, but it lives in the first fragment.
        assert_eq!(
            (ul.protocol, ul.offset, ul.fragment, ul.later_fragment),
            (protocol::DESTINATION_OPTIONS, 48, true, true)
        );

        let len = chain(
            &mut buf,
            &[(protocol::ROUTING, 8)],
            protocol::NO_NEXT_HEADER,
        );
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        let ul = walk_extension_headers(&ip).unwrap();
        assert_eq!(
            (ul.protocol, ul.offset, ul.srh_offset),
            (protocol::NO_NEXT_HEADER, 48, Some(40))
        );
    }

    #[test]
    fn extension_header_length_beyond_packet() {
        let mut buf = [0u8; 100];
        let len = chain(
            &mut buf,
            &[(protocol::DESTINATION_OPTIONS, 8)],
            protocol::UDP,
        );
        buf[41] = 1; // claims 16 bytes; only 8 + 8 remain, so it would swallow the UDP header
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip).map(|_| ()), Ok(()));
        buf[41] = 2; // 24 bytes: past the end
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::BadExtensionHeader));

        // The padding after the payload length is not part of the packet.
        let ip = Ipv6Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::BadExtensionHeader));

        // AH counts in 4-byte units plus two.
        let len = chain(&mut buf, &[(protocol::AH, 12)], protocol::UDP);
        buf[41] = 4; // 24 bytes
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::BadExtensionHeader));
    }

    #[test]
    fn extension_header_fixed_part_missing() {
        let mut buf = [0u8; 100];
        // Next header says Routing but the payload is empty.
        chain(&mut buf, &[], protocol::ROUTING);
        buf[4..6].copy_from_slice(&[0, 1]); // one byte of payload: not even the length field
        let ip = Ipv6Packet::new_checked(&buf[..41]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::Truncated));
        // A fragment header needs all eight bytes.
        buf[4..6].copy_from_slice(&[0, 7]);
        buf[6] = protocol::FRAGMENT;
        let ip = Ipv6Packet::new_checked(&buf[..47]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::Truncated));
    }

    #[test]
    fn hop_by_hop_must_come_first() {
        let mut buf = [0u8; 100];
        let len = chain(
            &mut buf,
            &[
                (protocol::DESTINATION_OPTIONS, 8),
                (protocol::HOP_BY_HOP, 8),
            ],
            protocol::UDP,
        );
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip), Err(Error::BadExtensionHeader));
    }

    #[test]
    fn extension_header_bound() {
        let mut buf = [0u8; 200];
        let eight = [(protocol::DESTINATION_OPTIONS, 8); MAX_EXTENSION_HEADERS];
        let len = chain(&mut buf, &eight, protocol::UDP);
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(walk_extension_headers(&ip).unwrap().offset, 40 + 64);

        let nine = [(protocol::DESTINATION_OPTIONS, 8); MAX_EXTENSION_HEADERS + 1];
        let len = chain(&mut buf, &nine, protocol::UDP);
        let ip = Ipv6Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(
            walk_extension_headers(&ip),
            Err(Error::TooManyExtensionHeaders)
        );
    }

    #[test]
    fn repr_round_trip() {
        let ip = Ipv6Packet::new_checked(ip_of(&UDP_FRAME)).unwrap();
        let repr = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!(repr.payload_len, 12);
        assert_eq!(repr.flow_label, 0x12345);
        let mut out = [0u8; 52];
        assert_eq!(repr.emit(&mut out), Ok(40));
        assert_eq!(out[..40], UDP_FRAME[14..54]);
        assert_eq!(repr.emit(&mut out[..51]), Err(Error::BufferTooSmall));
        let huge = Ipv6Repr {
            payload_len: 65536,
            ..repr
        };
        assert_eq!(huge.emit(&mut out), Err(Error::Malformed));
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&out[..45])),
            Err(Error::Truncated)
        );
    }
}
