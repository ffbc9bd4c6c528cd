//! TCP (RFC 9293) header view: enough for flow hashing, ACL-style matching and test builders.

use core::cmp::min;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::checksum;
use super::ip::protocol;
use super::{Error, be_u16, be_u32, set_be_u16, set_be_u32};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

/// TCP flag bits, as found in the flags byte.
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push function.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer field is significant.
    pub const URG: u8 = 0x20;
    /// ECN-Echo (RFC 3168).
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: u8 = 0x80;
}

/// A view of a TCP segment; the buffer is the IP payload (the segment ends where it ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 20 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Validates the data offset: at least 5 words ([`Error::BadHeaderLength`]) and within
    /// the buffer ([`Error::Truncated`]).
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::BadHeaderLength);
        }
        if header_len > data.len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// Header length in bytes (data offset * 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// The flags byte (see [`flags`]).
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    #[inline]
    fn flag(&self, bit: u8) -> bool {
        self.flags() & bit != 0
    }

    /// FIN flag.
    #[inline]
    pub fn fin(&self) -> bool {
        self.flag(flags::FIN)
    }

    /// SYN flag.
    #[inline]
    pub fn syn(&self) -> bool {
        self.flag(flags::SYN)
    }

    /// RST flag.
    #[inline]
    pub fn rst(&self) -> bool {
        self.flag(flags::RST)
    }

    /// PSH flag.
    #[inline]
    pub fn psh(&self) -> bool {
        self.flag(flags::PSH)
    }

    /// ACK flag.
    #[inline]
    pub fn ack(&self) -> bool {
        self.flag(flags::ACK)
    }

    /// URG flag.
    #[inline]
    pub fn urg(&self) -> bool {
        self.flag(flags::URG)
    }

    /// ECE flag.
    #[inline]
    pub fn ece(&self) -> bool {
        self.flag(flags::ECE)
    }

    /// CWR flag.
    #[inline]
    pub fn cwr(&self) -> bool {
        self.flag(flags::CWR)
    }

    /// Window size.
    #[inline]
    pub fn window_len(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::WIN_SIZE])
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent_at(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::URGENT])
    }

    /// End of the header, clamped so that a data-offset setter cannot make slicing panic.
    #[inline]
    fn header_end(&self) -> usize {
        min(self.header_len(), self.buffer.as_ref().len())
    }

    /// Option bytes between the fixed header and the payload.
    #[inline]
    pub fn options(&self) -> &[u8] {
        let end = self.header_end();
        &self.buffer.as_ref()[min(HEADER_LEN, end)..end]
    }

    /// The segment's data.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_end()..]
    }

    fn segment_len(&self) -> u32 {
        // A segment is at most an IP payload, far below u32::MAX.
        self.buffer.as_ref().len() as u32
    }

    /// True when the checksum is correct for this IPv4 pseudo-header.
    pub fn verify_checksum_v4(&self, src: &Ipv4Addr, dst: &Ipv4Addr) -> bool {
        let pseudo = checksum::pseudo_header_v4(src, dst, protocol::TCP, self.segment_len());
        checksum::combine(&[pseudo, checksum::sum(self.buffer.as_ref())]) == 0xffff
    }

    /// True when the checksum is correct for this IPv6 pseudo-header.
    pub fn verify_checksum_v6(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let pseudo = checksum::pseudo_header_v6(src, dst, protocol::TCP, self.segment_len());
        checksum::combine(&[pseudo, checksum::sum(self.buffer.as_ref())]) == 0xffff
    }

    fn compute_checksum(&self, pseudo: u16) -> u16 {
        !checksum::combine(&[
            pseudo,
            checksum::sum(self.buffer.as_ref()),
            !self.checksum(),
        ])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, port: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::SRC_PORT], port);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, port: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::DST_PORT], port);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, seq: u32) {
        set_be_u32(&mut self.buffer.as_mut()[field::SEQ_NUM], seq);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, ack: u32) {
        set_be_u32(&mut self.buffer.as_mut()[field::ACK_NUM], ack);
    }

    /// Sets the header length in bytes (stored as `len / 4`, at most 60); keeps the reserved
    /// bits.
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | (((len / 4) as u8) << 4);
    }

    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[field::FLAGS] = flags;
    }

    /// Sets the window size.
    #[inline]
    pub fn set_window_len(&mut self, window: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::WIN_SIZE], window);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::CHECKSUM], checksum);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_at(&mut self, urgent: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::URGENT], urgent);
    }

    /// Computes and stores the checksum for an IPv4 pseudo-header.
    pub fn fill_checksum_v4(&mut self, src: &Ipv4Addr, dst: &Ipv4Addr) {
        let pseudo = checksum::pseudo_header_v4(src, dst, protocol::TCP, self.segment_len());
        let checksum = self.compute_checksum(pseudo);
        self.set_checksum(checksum);
    }

    /// Computes and stores the checksum for an IPv6 pseudo-header.
    pub fn fill_checksum_v6(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let pseudo = checksum::pseudo_header_v6(src, dst, protocol::TCP, self.segment_len());
        let checksum = self.compute_checksum(pseudo);
        self.set_checksum(checksum);
    }

    /// The segment's data, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_end();
        &mut self.buffer.as_mut()[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4;
    use crate::wire::test_util::ref_sum;

    const SRC4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn syn() -> [u8; 24] {
        ipv4::tests::TCP_FRAME[34..].try_into().unwrap()
    }

    #[test]
    fn literal_checksum_matches_reference() {
        let mut all = [0u8; 36];
        all[..4].copy_from_slice(&SRC4.octets());
        all[4..8].copy_from_slice(&DST4.octets());
        all[9] = 6;
        all[11] = 24;
        all[12..].copy_from_slice(&syn());
        assert_eq!(ref_sum(&all), 0xffff);
    }

    #[test]
    fn accessors() {
        let buf = syn();
        let tcp = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((tcp.src_port(), tcp.dst_port()), (50000, 80));
        assert_eq!((tcp.seq_number(), tcp.ack_number()), (0x0102_0304, 0));
        assert_eq!(tcp.header_len(), 24);
        assert_eq!(tcp.flags(), flags::SYN);
        assert!(tcp.syn() && !tcp.ack() && !tcp.fin() && !tcp.rst());
        assert!(!tcp.psh() && !tcp.urg() && !tcp.ece() && !tcp.cwr());
        assert_eq!(
            (tcp.window_len(), tcp.checksum(), tcp.urgent_at()),
            (0xffff, 0xbc7d, 0)
        );
        assert_eq!(tcp.options(), &[0x02, 0x04, 0x05, 0xb4]);
        assert!(tcp.payload().is_empty());
        assert!(tcp.verify_checksum_v4(&SRC4, &DST4));
        assert!(!tcp.verify_checksum_v4(&SRC4, &Ipv4Addr::new(10, 0, 0, 3)));
    }

    #[test]
    fn every_prefix_is_truncated() {
        let buf = syn();
        for n in 0..buf.len() {
            assert_eq!(
                TcpPacket::new_checked(&buf[..n]),
                Err(Error::Truncated),
                "len {n}"
            );
        }
    }

    #[test]
    fn data_offset_checks() {
        let mut buf = syn();
        buf[12] = 0x40; // data offset 4
        assert_eq!(
            TcpPacket::new_checked(&buf[..]),
            Err(Error::BadHeaderLength)
        );
        buf[12] = 0x70; // 28 bytes in a 24-byte segment
        assert_eq!(TcpPacket::new_checked(&buf[..]), Err(Error::Truncated));
        buf[12] = 0x50; // no options: the MSS bytes become payload
        let tcp = TcpPacket::new_checked(&buf[..]).unwrap();
        assert!(tcp.options().is_empty());
        assert_eq!(tcp.payload(), &[0x02, 0x04, 0x05, 0xb4]);
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; 28];
        buf[..24].copy_from_slice(&syn());
        let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
        tcp.set_src_port(1);
        tcp.set_dst_port(2);
        tcp.set_seq_number(0xdead_beef);
        tcp.set_ack_number(0x0bad_cafe);
        tcp.set_flags(flags::ACK | flags::PSH | flags::ECE | flags::CWR | flags::FIN);
        tcp.set_window_len(512);
        tcp.set_urgent_at(9);
        tcp.payload_mut().copy_from_slice(b"data");
        tcp.fill_checksum_v4(&SRC4, &DST4);
        let tcp = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((tcp.src_port(), tcp.dst_port()), (1, 2));
        assert_eq!(
            (tcp.seq_number(), tcp.ack_number()),
            (0xdead_beef, 0x0bad_cafe)
        );
        assert!(tcp.ack() && tcp.psh() && tcp.ece() && tcp.cwr() && tcp.fin() && !tcp.syn());
        assert_eq!((tcp.window_len(), tcp.urgent_at()), (512, 9));
        assert_eq!(tcp.payload(), b"data");
        assert!(tcp.verify_checksum_v4(&SRC4, &DST4));

        let (s6, d6) = (Ipv6Addr::LOCALHOST, "2001:db8::2".parse().unwrap());
        let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
        tcp.fill_checksum_v6(&s6, &d6);
        assert!(tcp.verify_checksum_v6(&s6, &d6));
        assert!(!tcp.verify_checksum_v4(&SRC4, &DST4));

        // A data offset past the buffer set after the check cannot make accessors panic.
        tcp.set_header_len(60);
        assert_eq!(tcp.header_len(), 60);
        assert_eq!(tcp.options().len(), 8);
        assert!(tcp.payload().is_empty() && tcp.payload_mut().is_empty());
    }
}
