//! IPv4 (RFC 791) header view, incremental checksum updates for the rewrite and ECN stages,
//! and an owned header for builders.

use core::cmp::min;
use std::net::Ipv4Addr;

use super::checksum;
use super::ip::Ecn;
use super::{Error, be_u16, ipv4_addr, set_be_u16};

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = field::DST.end;

/// IPv4 option types (RFC 791 section 3.1; IANA "IP Option Numbers"): the whole type byte,
/// copied flag and class included.
pub mod option {
    /// End of Options List: one byte; nothing after it is an option.
    pub const END: u8 = 0;
    /// No Operation: one byte, padding between options.
    pub const NOP: u8 = 1;
    /// Record Route (RFC 791).
    pub const RECORD_ROUTE: u8 = 7;
    /// Internet Timestamp (RFC 791).
    pub const TIMESTAMP: u8 = 68;
    /// Loose Source and Record Route (RFC 791).
    pub const LOOSE_SOURCE_ROUTE: u8 = 131;
    /// Strict Source and Record Route (RFC 791).
    pub const STRICT_SOURCE_ROUTE: u8 = 137;
    /// Router Alert (RFC 2113).
    pub const ROUTER_ALERT: u8 = 148;
}

/// What [`scan_options`] found in an IPv4 option list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionScan {
    /// Well formed (or empty), without a source route.
    Clean,
    /// Well formed, with a Loose or Strict Source and Record Route option (type 131 or 137),
    /// which routers drop by default (RFC 7126 4.3, 4.4; Linux `accept_source_route=0`).
    SourceRoute,
    /// An option other than End of Options List and No Operation without its length byte,
    /// with a length below 2, or with one that runs past the options area.
    Malformed,
}

/// Walks the options bytes of an IPv4 header (`Ipv4Packet::options`, at most 40 bytes)
/// without allocating: End of Options List (0) ends the list (what follows is padding), No
/// Operation (1) is one byte, every other type carries a length byte that counts the type and
/// length bytes too (RFC 791 3.1). The whole list is checked before a source route counts, as
/// Linux's `ip_options_compile` does: a malformed list is [`OptionScan::Malformed`] whatever
/// it holds before the fault.
pub fn scan_options(options: &[u8]) -> OptionScan {
    let mut source_route = false;
    let mut rest = options;
    while let Some((&kind, after_kind)) = rest.split_first() {
        match kind {
            option::END => break,
            option::NOP => rest = after_kind,
            _ => {
                let Some(&len) = after_kind.first() else {
                    return OptionScan::Malformed;
                };
                let len = usize::from(len);
                if len < 2 || len > rest.len() {
                    return OptionScan::Malformed;
                }
                source_route |= matches!(
                    kind,
                    option::LOOSE_SOURCE_ROUTE | option::STRICT_SOURCE_ROUTE
                );
                rest = &rest[len..];
            }
        }
    }
    if source_route {
        OptionScan::SourceRoute
    } else {
        OptionScan::Clean
    }
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet.
///
/// The buffer may be longer than the packet (Ethernet pads short frames to 60 bytes):
/// [`Self::payload`] ends at the total length, not at the end of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 20 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Validates version, IHL and total length against each other and the buffer:
    /// `version == 4`, `IHL >= 5`, `IHL * 4 <= total length <= buffer length`.
    ///
    /// The order follows Linux's `ip_rcv_core`, so drop counters read the same: a total length
    /// beyond the buffer is [`Error::Truncated`], one shorter than the header is
    /// [`Error::BadTotalLength`]. The checksum is not verified here: see
    /// [`Self::verify_checksum`].
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::BadVersion);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::BadHeaderLength);
        }
        let total_len = usize::from(self.total_len());
        if total_len > data.len() {
            return Err(Error::Truncated);
        }
        if total_len < header_len {
            return Err(Error::BadTotalLength);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version nibble (4 after a successful check).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL * 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (the high six bits of the TOS byte).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// ECN codepoint (the low two bits of the TOS byte).
    #[inline]
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.buffer.as_ref()[field::DSCP_ECN])
    }

    /// Total length: header plus payload, excluding any link-layer padding.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::IDENT])
    }

    /// Don't Fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        be_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_DF != 0
    }

    /// More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        be_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (be_u16(&self.buffer.as_ref()[field::FLG_OFF]) & OFFSET_MASK) << 3
    }

    /// True for any fragment, first or later: L4 ports are only in the first, and ECMP must
    /// hash all fragments of a datagram alike, so callers hash fragments on addresses only.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        be_u16(&self.buffer.as_ref()[field::FLG_OFF]) & (FLAG_MF | OFFSET_MASK) != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload (see [`crate::wire::ip::protocol`]).
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        ipv4_addr(&self.buffer.as_ref()[field::SRC])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        ipv4_addr(&self.buffer.as_ref()[field::DST])
    }

    /// End of the header, clamped so that a header-length setter cannot make slicing panic.
    #[inline]
    fn header_end(&self) -> usize {
        min(self.header_len(), self.buffer.as_ref().len())
    }

    /// End of the packet, clamped to the buffer for the same reason.
    #[inline]
    fn packet_end(&self) -> usize {
        min(usize::from(self.total_len()), self.buffer.as_ref().len())
    }

    /// The options bytes between the fixed header and the payload (usually empty).
    #[inline]
    pub fn options(&self) -> &[u8] {
        let end = self.header_end();
        &self.buffer.as_ref()[min(HEADER_LEN, end)..end]
    }

    /// [`scan_options`] of [`Self::options`]: whether the options are well formed and carry
    /// a source route.
    #[inline]
    pub fn scan_options(&self) -> OptionScan {
        scan_options(self.options())
    }

    /// The payload, up to the total length (link-layer padding excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let end = self.packet_end();
        &self.buffer.as_ref()[min(self.header_end(), end)..end]
    }

    /// True when the header checksum is correct (RFC 1812 requires routers to check it).
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(&self.buffer.as_ref()[..self.header_end()]) == 0xffff
    }

    /// The checksum the header should carry, computed with the checksum field taken as zero.
    #[inline]
    pub fn compute_checksum(&self) -> u16 {
        let header = &self.buffer.as_ref()[..self.header_end()];
        // Summing everything and removing the stored value avoids copying the header.
        !checksum::combine(&[checksum::sum(header), !self.checksum()])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version nibble.
    #[inline]
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the header length in bytes (stored as `len / 4`, at most 60).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    /// Sets the DSCP without touching the checksum.
    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (dscp << 2);
    }

    /// Sets the ECN codepoint without touching the checksum.
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & !0x03) | ecn.bits();
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, ident: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::IDENT], ident);
    }

    #[inline]
    fn set_flg_off(&mut self, mask: u16, value: u16) {
        let b = &mut self.buffer.as_mut()[field::FLG_OFF];
        let old = be_u16(b);
        set_be_u16(b, (old & !mask) | (value & mask));
    }

    /// Sets the Don't Fragment flag.
    #[inline]
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flg_off(FLAG_DF, if value { FLAG_DF } else { 0 });
    }

    /// Sets the More Fragments flag.
    #[inline]
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flg_off(FLAG_MF, if value { FLAG_MF } else { 0 });
    }

    /// Sets the fragment offset in bytes (rounded down to the 8-byte unit the field holds).
    #[inline]
    pub fn set_frag_offset(&mut self, offset: u16) {
        self.set_flg_off(OFFSET_MASK, offset >> 3);
    }

    /// Sets the TTL without touching the checksum.
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::CHECKSUM], checksum);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.octets());
    }

    /// Recomputes and stores the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        let checksum = self.compute_checksum();
        self.set_checksum(checksum);
    }

    /// Replaces the header word at `at` (even offset) and patches the checksum incrementally.
    #[inline]
    fn update_word(&mut self, at: usize, new_word: u16) {
        let data = self.buffer.as_mut();
        let old_word = be_u16(&data[at..at + 2]);
        set_be_u16(&mut data[at..at + 2], new_word);
        let old_csum = be_u16(&data[field::CHECKSUM]);
        let new_csum = checksum::update_u16(old_csum, old_word, new_word);
        set_be_u16(&mut data[field::CHECKSUM], new_csum);
    }

    /// Sets the TTL and patches the checksum per RFC 1624 instead of re-summing the header:
    /// the forwarding fast path. The caller decides what to do with TTL 0 or 1 first.
    #[inline]
    pub fn set_ttl_and_update_checksum(&mut self, ttl: u8) {
        let protocol = self.protocol();
        self.update_word(field::TTL, u16::from_be_bytes([ttl, protocol]));
    }

    /// Sets the ECN codepoint and patches the checksum incrementally (as Linux's
    /// `IP_ECN_set_ce` does, but for any codepoint).
    #[inline]
    pub fn set_ecn_and_update_checksum(&mut self, ecn: Ecn) {
        let data = self.buffer.as_ref();
        let tos = (data[field::DSCP_ECN] & !0x03) | ecn.bits();
        self.update_word(
            field::VER_IHL,
            u16::from_be_bytes([data[field::VER_IHL], tos]),
        );
    }

    /// Sets the DSCP and patches the checksum incrementally (DSCP remarking).
    #[inline]
    pub fn set_dscp_and_update_checksum(&mut self, dscp: u8) {
        let data = self.buffer.as_ref();
        let tos = (data[field::DSCP_ECN] & 0x03) | (dscp << 2);
        self.update_word(
            field::VER_IHL,
            u16::from_be_bytes([data[field::VER_IHL], tos]),
        );
    }

    /// Marks congestion the way Linux's `IP_ECN_set_ce` does: ECT(0) and ECT(1) become CE
    /// (checksum patched), Not-ECT is left alone. Returns true if the packet now carries CE,
    /// i.e. false exactly when the packet is Not-ECT and the caller must drop instead of mark.
    #[inline]
    pub fn mark_ce(&mut self) -> bool {
        match self.ecn() {
            Ecn::NotEct => false,
            Ecn::Ce => true,
            Ecn::Ect0 | Ecn::Ect1 => {
                self.set_ecn_and_update_checksum(Ecn::Ce);
                true
            }
        }
    }

    /// The options bytes, mutable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_end();
        &mut self.buffer.as_mut()[min(HEADER_LEN, end)..end]
    }

    /// The payload up to the total length, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.packet_end();
        let start = min(self.header_end(), end);
        &mut self.buffer.as_mut()[start..end]
    }
}

/// An owned IPv4 header without options, for builders and the control lcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP.
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Reads `packet`, checking lengths and the header checksum. Options are skipped; fragments
    /// are [`Error::Unsupported`] because a `Repr` describes a whole datagram and nothing here
    /// reassembles.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Self, Error> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        if packet.is_fragment() {
            return Err(Error::Unsupported);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// Bytes of header [`Self::emit`] writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 20-byte header, checksum included, at the start of `buf` and returns its
    /// length; the payload goes at `buf[20..]`. `buf` must have room for header and payload so
    /// that the total length written is true.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let total_len_field = u16::try_from(self.payload_len)
            .ok()
            .and_then(|len| len.checked_add(HEADER_LEN as u16))
            .ok_or(Error::Malformed)?;
        if buf.len() < usize::from(total_len_field) {
            return Err(Error::BufferTooSmall);
        }
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_version(4);
        p.set_header_len(HEADER_LEN);
        p.set_dscp(self.dscp);
        p.set_ecn(self.ecn);
        p.set_total_len(total_len_field);
        p.set_ident(self.ident);
        p.set_flg_off(0xffff, if self.dont_frag { FLAG_DF } else { 0 });
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        p.set_checksum(0);
        p.fill_checksum();
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::ethernet::{EtherType, EthernetFrame};
    use crate::wire::ip::protocol;
    use crate::wire::test_util::{XorShift, ref_sum};
    use crate::wire::udp::UdpPacket;

    /// 02:00:00:00:00:01 -> 02:00:00:00:00:02, IPv4 10.0.0.1 -> 10.0.0.2, DSCP 46 (EF) ECT(0),
    /// ident 0x1234, DF, TTL 64, UDP 12345 -> 53 with payload de ad be ef. Checksums worked out
    /// off-line and re-checked below with the reference sum.
    pub(crate) const UDP_FRAME: [u8; 46] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08,
        0x00, // eth
        0x45, 0xba, 0x00, 0x20, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x13, 0xdd, // ipv4
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, // addresses
        0x30, 0x39, 0x00, 0x35, 0x00, 0x0c, 0x1d, 0xc8, // udp
        0xde, 0xad, 0xbe, 0xef, // payload
    ];

    /// 10.0.0.1:50000 -> 10.0.0.2:80 TCP SYN, seq 0x01020304, window 65535, MSS 1460.
    pub(crate) const TCP_FRAME: [u8; 58] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08,
        0x00, // eth
        0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x40, 0x00, 0x40, 0x06, 0x26, 0xc9, // ipv4
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, // addresses
        0xc3, 0x50, 0x00, 0x50, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00,
        0x00, // ports seq ack
        0x60, 0x02, 0xff, 0xff, 0xbc, 0x7d, 0x00, 0x00, // off/flags window csum urg
        0x02, 0x04, 0x05, 0xb4, // MSS option
    ];

    /// 10.0.0.1 -> 10.0.0.2 ICMP echo request id 0x1234 seq 1, data "abcd", no DF.
    pub(crate) const ICMP_FRAME: [u8; 46] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08,
        0x00, // eth
        0x45, 0x00, 0x00, 0x20, 0x00, 0x02, 0x00, 0x00, 0x40, 0x01, 0x66, 0xd9, // ipv4
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, // addresses
        0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, 0x61, 0x62, 0x63, 0x64, // icmp
    ];

    fn ip_of(frame: &[u8]) -> &[u8] {
        &frame[14..]
    }

    #[test]
    fn reference_checksums_of_the_literals_hold() {
        for frame in [&UDP_FRAME[..], &TCP_FRAME[..], &ICMP_FRAME[..]] {
            assert_eq!(ref_sum(&frame[14..34]), 0xffff);
        }
    }

    #[test]
    fn accessors() {
        let eth = EthernetFrame::new_checked(&UDP_FRAME[..]).unwrap();
        assert_eq!(eth.ethertype(), EtherType::IPV4);
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.version(), 4);
        assert_eq!(ip.header_len(), 20);
        assert_eq!(ip.dscp(), 46);
        assert_eq!(ip.ecn(), Ecn::Ect0);
        assert_eq!(ip.total_len(), 32);
        assert_eq!(ip.ident(), 0x1234);
        assert!(ip.dont_frag() && !ip.more_frags() && !ip.is_fragment());
        assert_eq!(ip.frag_offset(), 0);
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.protocol(), protocol::UDP);
        assert_eq!(ip.checksum(), 0x13dd);
        assert!(ip.verify_checksum());
        assert_eq!(ip.compute_checksum(), 0x13dd);
        assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 0, 2));
        assert!(ip.options().is_empty());
        assert_eq!(ip.payload(), &UDP_FRAME[34..]);
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!((udp.src_port(), udp.dst_port()), (12345, 53));
    }

    #[test]
    fn ethernet_padding_is_not_payload() {
        let mut padded = [0u8; 60];
        padded[..46].copy_from_slice(&UDP_FRAME);
        let ip = Ipv4Packet::new_checked(&padded[14..]).unwrap();
        assert_eq!(ip.payload(), &UDP_FRAME[34..]);
    }

    #[test]
    fn every_prefix_is_truncated() {
        for n in 0..32 {
            assert_eq!(
                Ipv4Packet::new_checked(&ip_of(&UDP_FRAME)[..n]),
                Err(Error::Truncated),
                "len {n}"
            );
        }
    }

    #[test]
    fn malformed_headers() {
        let mut p = [0u8; 32];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        let check = |p: &[u8]| Ipv4Packet::new_checked(p).map(|_| ());

        let mut bad = p;
        bad[0] = 0x44; // IHL 4
        assert_eq!(check(&bad), Err(Error::BadHeaderLength));
        bad[0] = 0x40; // IHL 0
        assert_eq!(check(&bad), Err(Error::BadHeaderLength));
        bad[0] = 0x65; // version 6
        assert_eq!(check(&bad), Err(Error::BadVersion));

        let mut bad = p;
        bad[3] = 33; // total length > buffer
        assert_eq!(check(&bad), Err(Error::Truncated));
        bad[3] = 19; // total length < IHL * 4
        assert_eq!(check(&bad), Err(Error::BadTotalLength));
        bad[0] = 0x46; // IHL 6 (24 bytes) with total length 20
        bad[3] = 20;
        assert_eq!(check(&bad), Err(Error::BadTotalLength));
        bad[0] = 0x4f; // IHL 15 (60 bytes) beyond a 32-byte packet with total length 32
        bad[3] = 32;
        assert_eq!(check(&bad), Err(Error::BadTotalLength));

        // A header of exactly total length is fine: empty payload.
        let mut ok = p;
        ok[3] = 20;
        assert!(
            Ipv4Packet::new_checked(&ok[..])
                .unwrap()
                .payload()
                .is_empty()
        );
        // Options: IHL 6 takes the first four UDP bytes as options.
        ok[0] = 0x46;
        ok[3] = 32;
        let ip = Ipv4Packet::new_checked(&ok[..]).unwrap();
        assert_eq!(ip.options(), &p[20..24]);
        assert_eq!(ip.payload(), &p[24..32]);
    }

    /// Options of each kind the walk must tell apart, laid out by hand from RFC 791 3.1.
    const LSRR: [u8; 12] = [1, 131, 11, 4, 10, 1, 0, 1, 10, 2, 0, 1]; // NOP, then 2 hops
    const SSRR: [u8; 8] = [137, 7, 4, 10, 1, 0, 1, 0]; // 1 hop, then End of Options List
    const RECORD_ROUTE: [u8; 8] = [7, 7, 4, 0, 0, 0, 0, 0]; // 1 empty slot, then End
    const TIMESTAMP: [u8; 12] = [68, 12, 5, 0, 0, 0, 0, 1, 0, 0, 0, 2]; // 2 timestamps
    const ROUTER_ALERT: [u8; 4] = [148, 4, 0, 0];

    #[test]
    fn option_walk_finds_source_routes_among_well_formed_options() {
        use OptionScan::{Clean, SourceRoute};
        let cat = |parts: &[&[u8]]| parts.concat();
        let cases: Vec<(Vec<u8>, OptionScan, &str)> = vec![
            (vec![], Clean, "no options"),
            (vec![1, 1, 1, 1], Clean, "NOPs"),
            (vec![0, 0, 0, 0], Clean, "End of Options List"),
            (RECORD_ROUTE.to_vec(), Clean, "Record Route"),
            (TIMESTAMP.to_vec(), Clean, "Timestamp"),
            (ROUTER_ALERT.to_vec(), Clean, "Router Alert"),
            (
                cat(&[&ROUTER_ALERT, &RECORD_ROUTE, &TIMESTAMP]),
                Clean,
                "three options",
            ),
            (LSRR.to_vec(), SourceRoute, "LSRR after a NOP"),
            (SSRR.to_vec(), SourceRoute, "SSRR"),
            (
                cat(&[&RECORD_ROUTE[..7], &LSRR[1..], &[0]]),
                SourceRoute,
                "LSRR after Record Route",
            ),
            (
                vec![131, 3, 4, 0],
                SourceRoute,
                "LSRR without room for a hop",
            ),
            // After End of Options List nothing is an option, even bytes that would be.
            (vec![0, 131, 7, 4], Clean, "LSRR bytes after End"),
            (vec![1, 0, 137, 200], Clean, "SSRR bytes after NOP, End"),
            // The type byte is the whole byte: 3 and 9 (class 0, copied flag clear) are not
            // source routes, nor is 131 as a length or data byte.
            (vec![3, 4, 0, 0], Clean, "type 3"),
            (vec![9, 4, 131, 137], Clean, "131 and 137 as data"),
            (vec![7, 3, 131, 0], Clean, "131 as Record Route's pointer"),
            // 40 bytes, the most an IHL of 15 holds, taken by one option.
            (
                cat(&[&[7, 40, 4], &[0; 37]]),
                Clean,
                "a 40-byte Record Route",
            ),
            (
                cat(&[&[137, 40, 4], &[0; 37]]),
                SourceRoute,
                "a 40-byte SSRR",
            ),
        ];
        for (options, want, what) in cases {
            assert_eq!(scan_options(&options), want, "{what}: {options:?}");
        }
    }

    #[test]
    fn option_walk_reports_malformed_and_truncated_lists() {
        use OptionScan::{Clean, Malformed};
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![7], "a type without its length byte"),
            (vec![1, 1, 1, 131], "LSRR's type as the last byte"),
            (vec![7, 0, 0, 0], "length 0"),
            (vec![131, 1, 0, 0], "length 1"),
            (vec![68, 5, 5, 0], "a length past a 4-byte area"),
            (
                vec![7, 9, 4, 0, 0, 0, 0, 0],
                "a length one past an 8-byte area",
            ),
            (vec![1, 7, 40, 4], "a length of 40 after a NOP"),
            (vec![148, 4, 0, 0, 7, 255, 4, 0], "a length of 255"),
            // The whole list is checked: a source route before the fault does not count.
            ([&SSRR[..7], &[7, 2, 7]].concat(), "SSRR, then a bad length"),
            ([&LSRR[..], &[68]].concat(), "LSRR, then a bare type"),
        ];
        for (options, what) in cases {
            assert_eq!(scan_options(&options), Malformed, "{what}: {options:?}");
        }
        // Every cut of a length-carrying option that leaves its type byte is malformed; a cut
        // before the type (or right after a leading NOP) leaves a clean list.
        for option in [
            &LSRR[1..],
            &SSRR[..7],
            &RECORD_ROUTE[..7],
            &TIMESTAMP,
            &ROUTER_ALERT,
        ] {
            assert_eq!(scan_options(&option[..0]), Clean);
            for cut in 1..option.len() {
                assert_eq!(
                    scan_options(&option[..cut]),
                    Malformed,
                    "{:?} cut to {cut}",
                    option
                );
            }
        }
        assert_eq!(scan_options(&LSRR[..1]), Clean, "the NOP alone");
    }

    /// The walk written as a reference would read RFC 791: find where each option starts,
    /// by index, and judge the list from that; no early exit in the middle of a list.
    fn reference_scan(options: &[u8]) -> OptionScan {
        let mut starts = Vec::new();
        let mut i = 0;
        while i < options.len() && options[i] != 0 {
            starts.push(i);
            if options[i] == 1 {
                i += 1;
                continue;
            }
            if i + 1 >= options.len() {
                return OptionScan::Malformed;
            }
            let len = options[i + 1] as usize;
            if len < 2 || i + len > options.len() {
                return OptionScan::Malformed;
            }
            i += len;
        }
        if starts
            .iter()
            .any(|&s| options[s] == 131 || options[s] == 137)
        {
            OptionScan::SourceRoute
        } else {
            OptionScan::Clean
        }
    }

    #[test]
    fn option_walk_agrees_with_the_reference_on_every_short_list_and_random_long_ones() {
        // Every list of up to two bytes, and every three-byte list whose first byte is a
        // type of interest or an unknown one.
        for a in 0..=255u8 {
            assert_eq!(scan_options(&[a]), reference_scan(&[a]), "{a}");
            for b in 0..=255u8 {
                let list = [a, b];
                assert_eq!(scan_options(&list), reference_scan(&list), "{list:?}");
            }
        }
        for a in [0u8, 1, 7, 68, 131, 137, 148, 200] {
            for b in 0..=255u8 {
                for c in 0..=255u8 {
                    let list = [a, b, c];
                    assert_eq!(scan_options(&list), reference_scan(&list), "{list:?}");
                }
            }
        }
        // Random lists of 4 to 40 bytes built option by option (NOP, End, or a type with a
        // length that fits), then one byte in eight of them overwritten now and then.
        let mut rng = XorShift::new(791);
        let mut seen = [0usize; 3];
        for round in 0..200_000 {
            let len = 4 * (1 + rng.below(10));
            let mut list = [0u8; 40];
            let mut at = 0;
            while at < len {
                let room = len - at;
                match rng.below(6) {
                    0 => at += 1, // NOP
                    1 if rng.below(4) == 0 => {
                        list[at] = 0; // End, then anything
                        rng.fill(&mut list[at + 1..len]);
                        break;
                    }
                    _ if room >= 2 => {
                        let kind = [7, 68, 131, 137, 148, rng.next_u8()][rng.below(6)];
                        let option_len = 2 + rng.below(room - 1);
                        list[at] = kind;
                        list[at + 1] = option_len as u8;
                        rng.fill(&mut list[at + 2..at + option_len]);
                        at += option_len;
                        continue;
                    }
                    _ => at += 1,
                }
                list[at - 1] = 1;
            }
            if round % 4 == 0 {
                list[rng.below(len)] = rng.next_u8();
            }
            let want = reference_scan(&list[..len]);
            seen[want as usize] += 1;
            assert_eq!(scan_options(&list[..len]), want, "{:?}", &list[..len]);
        }
        assert!(
            seen.iter().all(|&n| n > 1000),
            "every outcome drawn: {seen:?}"
        );
    }

    #[test]
    fn packet_scans_its_own_options() {
        // UDP_FRAME's header grown by LSRR's 12 bytes (IHL 8), and by a malformed word.
        let mut p = [0u8; 44];
        p[..20].copy_from_slice(&ip_of(&UDP_FRAME)[..20]);
        p[20..32].copy_from_slice(&LSRR);
        p[32..].copy_from_slice(&ip_of(&UDP_FRAME)[20..]);
        p[0] = 0x48;
        p[3] = 44;
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!(ip.options(), &LSRR);
        assert_eq!(ip.scan_options(), OptionScan::SourceRoute);
        p[21] = 7; // Record Route, 11 bytes, after the NOP
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!(ip.scan_options(), OptionScan::Clean);
        p[0] = 0x46; // now only 4 bytes of options: the 11-byte option runs past them
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!(ip.scan_options(), OptionScan::Malformed);
        let plain = Ipv4Packet::new_checked(ip_of(&UDP_FRAME)).unwrap();
        assert_eq!(plain.scan_options(), OptionScan::Clean);
    }

    #[test]
    fn bad_checksum_is_reported_by_repr() {
        let mut p = [0u8; 32];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        p[11] ^= 1;
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert!(!ip.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&ip), Err(Error::BadChecksum));
    }

    #[test]
    fn setters_round_trip() {
        let mut p = [0u8; 32];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_dscp(10);
        ip.set_ecn(Ecn::Ce);
        ip.set_ident(0xbeef);
        ip.set_dont_frag(false);
        ip.set_more_frags(true);
        ip.set_frag_offset(1480);
        ip.set_ttl(7);
        ip.set_protocol(protocol::TCP);
        ip.set_src_addr(Ipv4Addr::new(192, 0, 2, 1));
        ip.set_dst_addr(Ipv4Addr::new(198, 51, 100, 7));
        ip.payload_mut()[0] = 0xaa;
        ip.fill_checksum();
        assert_eq!((ip.dscp(), ip.ecn(), ip.ident()), (10, Ecn::Ce, 0xbeef));
        assert!(!ip.dont_frag() && ip.more_frags() && ip.is_fragment());
        assert_eq!(
            (ip.frag_offset(), ip.ttl(), ip.protocol()),
            (1480, 7, protocol::TCP)
        );
        assert_eq!(ip.src_addr(), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(198, 51, 100, 7));
        assert!(ip.verify_checksum());
        assert_eq!(ref_sum(&p[..20]), 0xffff);
        assert_eq!(p[20], 0xaa);
        assert_eq!(p[6..8], [0x20, 0xb9]); // MF, offset 185 units

        // Growing the header past the buffer must not make accessors panic.
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_header_len(60);
        ip.set_total_len(1500);
        assert_eq!(ip.options().len(), 12);
        assert!(ip.payload().is_empty());
        assert!(ip.payload_mut().is_empty());
        assert_eq!(ip.options_mut().len(), 12);
        ip.set_version(6);
        assert_eq!(ip.version(), 6);
    }

    #[test]
    fn later_fragments_are_fragments() {
        let mut p = [0u8; 32];
        p.copy_from_slice(ip_of(&UDP_FRAME));
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_frag_offset(8);
        ip.fill_checksum();
        assert!(ip.is_fragment() && !ip.more_frags());
        assert_eq!(Ipv4Repr::parse(&ip), Err(Error::Unsupported));
    }

    /// Builds a random but valid header: version 4, IHL 5..=15, random fields, correct checksum
    /// from the reference sum.
    fn random_header(rng: &mut XorShift, buf: &mut [u8; 60]) -> usize {
        rng.fill(buf);
        let ihl = 5 + rng.below(11);
        buf[0] = 0x40 | ihl as u8;
        let len = ihl * 4;
        buf[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        buf[10..12].copy_from_slice(&[0, 0]);
        let csum = !ref_sum(&buf[..len]);
        buf[10..12].copy_from_slice(&csum.to_be_bytes());
        len
    }

    /// Chooses the ident field so that the header's correct checksum is `target` and stores
    /// it; `target` must not be 0xffff (no non-zero header has that canonical checksum).
    fn force_checksum(buf: &mut [u8], len: usize, target: u16) {
        buf[4..6].copy_from_slice(&[0, 0]);
        buf[10..12].copy_from_slice(&[0, 0]);
        // Want sum(rest) + ident == !target (mod 0xffff).
        let rest = u32::from(ref_sum(&buf[..len]));
        let ident = ((u32::from(!target) + 0xffff - rest) % 0xffff) as u16;
        buf[4..6].copy_from_slice(&ident.to_be_bytes());
        buf[10..12].copy_from_slice(&target.to_be_bytes());
        assert_eq!(
            ref_sum(&buf[..len]),
            0xffff,
            "forcing checksum {target:#06x}"
        );
    }

    fn decrement_and_compare(buf: &mut [u8], len: usize) {
        let mut ip = Ipv4Packet::new_checked(&mut buf[..len]).unwrap();
        let ttl = ip.ttl();
        ip.set_ttl_and_update_checksum(ttl.wrapping_sub(1));
        let incremental = ip.checksum();
        buf[10..12].copy_from_slice(&[0, 0]);
        let recomputed = !ref_sum(&buf[..len]);
        assert_eq!(
            incremental,
            recomputed,
            "ttl {ttl} header {:02x?}",
            &buf[..len]
        );
    }

    #[test]
    fn ttl_decrement_incremental_equals_recomputed() {
        let mut rng = XorShift::new(0x1624);
        let mut buf = [0u8; 60];
        for i in 0..5000 {
            let len = random_header(&mut rng, &mut buf);
            match i % 4 {
                0 => buf[8] = 1, // TTL 1 -> 0: the word's high byte goes to zero
                1 => buf[8] = 0, // wraps to 255: high byte from zero to all ones
                _ => {}
            }
            buf[10..12].copy_from_slice(&[0, 0]);
            let csum = !ref_sum(&buf[..len]);
            buf[10..12].copy_from_slice(&csum.to_be_bytes());
            decrement_and_compare(&mut buf, len);
        }
    }

    #[test]
    fn ttl_decrement_checksum_edge_cases() {
        let mut rng = XorShift::new(0xffff);
        let mut buf = [0u8; 60];
        for _ in 0..50 {
            // Incoming checksum 0x0000 (header sum is negative zero).
            let len = random_header(&mut rng, &mut buf);
            force_checksum(&mut buf, len, 0x0000);
            decrement_and_compare(&mut buf, len);

            // The same kind of header with its checksum stored as 0xffff, the other zero: it
            // verifies, and the update must come out in the canonical form.
            let len = random_header(&mut rng, &mut buf);
            force_checksum(&mut buf, len, 0x0000);
            buf[10..12].copy_from_slice(&[0xff, 0xff]);
            assert!(
                Ipv4Packet::new_checked(&buf[..len])
                    .unwrap()
                    .verify_checksum()
            );
            decrement_and_compare(&mut buf, len);

            // Decrementing the TTL lowers the header sum by 0x0100 and so raises the checksum
            // by 0x0100: from 0xfeff it must land on 0x0000, never on 0xffff.
            let len = random_header(&mut rng, &mut buf);
            buf[8] = 1 + rng.below(255) as u8;
            force_checksum(&mut buf, len, 0xfeff);
            decrement_and_compare(&mut buf, len);
            assert_eq!(be_u16(&buf[10..12]), 0x0000);

            // Around the wrap: 0xff00 and 0xfffe go over the top.
            for target in [0xff00, 0xfffe, 0x0001] {
                let len = random_header(&mut rng, &mut buf);
                buf[8] = 1 + rng.below(255) as u8;
                force_checksum(&mut buf, len, target);
                decrement_and_compare(&mut buf, len);
            }
        }
    }

    #[test]
    fn ecn_ce_marking_keeps_checksum_valid() {
        let mut rng = XorShift::new(3168);
        let mut buf = [0u8; 60];
        for i in 0..2000 {
            let len = random_header(&mut rng, &mut buf);
            let from = [Ecn::Ect0, Ecn::Ect1, Ecn::NotEct, Ecn::Ce][i % 4];
            buf[1] = (buf[1] & !3) | from.bits();
            buf[10..12].copy_from_slice(&[0, 0]);
            let csum = !ref_sum(&buf[..len]);
            buf[10..12].copy_from_slice(&csum.to_be_bytes());
            let dscp = buf[1] >> 2;

            let mut ip = Ipv4Packet::new_checked(&mut buf[..len]).unwrap();
            let marked = ip.mark_ce();
            assert_eq!(marked, from != Ecn::NotEct);
            let expect = if from == Ecn::NotEct {
                Ecn::NotEct
            } else {
                Ecn::Ce
            };
            assert_eq!(ip.ecn(), expect);
            assert_eq!(ip.dscp(), dscp);
            assert!(ip.verify_checksum());
            let stored = ip.checksum();
            buf[10..12].copy_from_slice(&[0, 0]);
            assert_eq!(stored, !ref_sum(&buf[..len]));
        }
    }

    #[test]
    fn dscp_remark_and_generic_ecn_keep_checksum_valid() {
        let mut rng = XorShift::new(2474);
        let mut buf = [0u8; 60];
        for _ in 0..500 {
            let len = random_header(&mut rng, &mut buf);
            let mut ip = Ipv4Packet::new_checked(&mut buf[..len]).unwrap();
            let ecn = ip.ecn();
            let dscp = rng.next_u8() >> 2;
            ip.set_dscp_and_update_checksum(dscp);
            assert_eq!((ip.dscp(), ip.ecn()), (dscp, ecn));
            assert!(ip.verify_checksum());
            let ecn = Ecn::from_bits(rng.next_u8());
            ip.set_ecn_and_update_checksum(ecn);
            assert_eq!((ip.dscp(), ip.ecn()), (dscp, ecn));
            assert!(ip.verify_checksum());
        }
    }

    #[test]
    fn repr_round_trip() {
        let ip = Ipv4Packet::new_checked(ip_of(&UDP_FRAME)).unwrap();
        let repr = Ipv4Repr::parse(&ip).unwrap();
        assert_eq!(
            repr,
            Ipv4Repr {
                src_addr: Ipv4Addr::new(10, 0, 0, 1),
                dst_addr: Ipv4Addr::new(10, 0, 0, 2),
                protocol: protocol::UDP,
                payload_len: 12,
                ttl: 64,
                dscp: 46,
                ecn: Ecn::Ect0,
                ident: 0x1234,
                dont_frag: true,
            }
        );
        let mut out = [0u8; 32];
        assert_eq!(repr.emit(&mut out), Ok(20));
        assert_eq!(out[..20], UDP_FRAME[14..34]);
        assert_eq!(repr.emit(&mut out[..31]), Err(Error::BufferTooSmall));
        let huge = Ipv4Repr {
            payload_len: 65516,
            ..repr
        };
        assert_eq!(huge.emit(&mut out), Err(Error::Malformed));

        let icmp = Ipv4Repr::parse(&Ipv4Packet::new_checked(ip_of(&ICMP_FRAME)).unwrap()).unwrap();
        assert!(!icmp.dont_frag);
        assert_eq!(icmp.emit(&mut out), Ok(20));
        assert_eq!(out[..20], ICMP_FRAME[14..34]);
    }
}
