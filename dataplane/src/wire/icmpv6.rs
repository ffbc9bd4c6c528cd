//! ICMP for IPv6 (RFC 4443): the common header, echo fields, and the checksum over the IPv6
//! pseudo-header.

use std::net::Ipv6Addr;

use super::checksum;
use super::ip::protocol;
use super::{Error, be_u16, set_be_u16};

mod field {
    use core::ops::{Range, RangeFrom};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const PAYLOAD: RangeFrom<usize> = 8..;
}

/// Bytes every defined ICMPv6 message has: type, code, checksum and four type-specific bytes
/// (error fields, echo identifier and sequence, ND flags or reserved).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// ICMPv6 message types the switch sends or answers.
pub mod message {
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time exceeded (code 0: hop limit exceeded in transit).
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem (SRv6 uses it for a bad Segments Left).
    pub const PARAM_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Router solicitation.
    pub const ROUTER_SOLICIT: u8 = 133;
    /// Router advertisement.
    pub const ROUTER_ADVERT: u8 = 134;
    /// Neighbor solicitation.
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    /// Neighbor advertisement.
    pub const NEIGHBOR_ADVERT: u8 = 136;
    /// Redirect.
    pub const REDIRECT: u8 = 137;
}

/// A view of an ICMPv6 message; the buffer is the upper-layer part of the IPv6 payload (its
/// length enters the checksum, so pass exactly the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 8 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Err(Truncated)` if the buffer cannot hold the 8-byte header.
    #[inline]
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Message type (see [`message`]).
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Message code.
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Echo identifier (meaningful for echo request/reply only).
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo sequence number (meaningful for echo request/reply only).
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Everything after the 8-byte header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }

    fn pseudo(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        // An ICMPv6 message is at most an IPv6 payload, far below u32::MAX.
        let len = self.buffer.as_ref().len() as u32;
        checksum::pseudo_header_v6(src, dst, protocol::ICMPV6, len)
    }

    /// True when the checksum is correct for this pseudo-header (`dst` is the final
    /// destination).
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        checksum::combine(&[self.pseudo(src, dst), checksum::sum(self.buffer.as_ref())]) == 0xffff
    }

    /// The checksum the message should carry (computed with the field taken as zero).
    pub fn compute_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        let data = checksum::sum(self.buffer.as_ref());
        !checksum::combine(&[self.pseudo(src, dst), data, !self.checksum()])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    /// Sets the message code.
    #[inline]
    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, value: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::ECHO_IDENT], value);
    }

    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq_no(&mut self, value: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::ECHO_SEQNO], value);
    }

    /// Computes and stores the checksum for this pseudo-header.
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let checksum = self.compute_checksum(src, dst);
        self.set_checksum(checksum);
    }

    /// Everything after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ndisc;
    use crate::wire::test_util::ref_sum;

    fn addrs() -> (Ipv6Addr, Ipv6Addr) {
        (
            "fe80::1".parse().unwrap(),
            "ff02::1:ff00:2".parse().unwrap(),
        )
    }

    #[test]
    fn checksum_of_the_ns_literal() {
        let msg = &ndisc::tests::NS_FRAME[54..];
        let (src, dst) = addrs();
        let icmp = Icmpv6Packet::new_checked(msg).unwrap();
        assert_eq!(
            (icmp.msg_type(), icmp.msg_code()),
            (message::NEIGHBOR_SOLICIT, 0)
        );
        assert_eq!(icmp.checksum(), 0x7a97);
        assert!(icmp.verify_checksum(&src, &dst));
        assert!(!icmp.verify_checksum(&src, &"ff02::1".parse().unwrap()));
        assert_eq!(icmp.compute_checksum(&src, &dst), 0x7a97);
        assert_eq!(icmp.payload().len(), 24);

        // Reference: pseudo-header bytes followed by the message.
        let mut all = [0u8; 72];
        all[..16].copy_from_slice(&src.octets());
        all[16..32].copy_from_slice(&dst.octets());
        all[35] = 32;
        all[39] = 58;
        all[40..].copy_from_slice(msg);
        assert_eq!(ref_sum(&all), 0xffff);
    }

    #[test]
    fn every_short_prefix_is_truncated() {
        let msg = &ndisc::tests::NS_FRAME[54..];
        for n in 0..HEADER_LEN {
            assert_eq!(Icmpv6Packet::new_checked(&msg[..n]), Err(Error::Truncated));
        }
    }

    #[test]
    fn echo_setters_and_fill() {
        let (src, dst) = addrs();
        let mut buf = [0u8; 12];
        let mut icmp = Icmpv6Packet::new_checked(&mut buf[..]).unwrap();
        icmp.set_msg_type(message::ECHO_REQUEST);
        icmp.set_msg_code(0);
        icmp.set_echo_ident(0xabcd);
        icmp.set_echo_seq_no(42);
        icmp.payload_mut().copy_from_slice(b"ping");
        icmp.fill_checksum(&src, &dst);
        assert!(icmp.verify_checksum(&src, &dst));
        assert_eq!((icmp.echo_ident(), icmp.echo_seq_no()), (0xabcd, 42));
        icmp.set_msg_type(message::ECHO_REPLY);
        assert!(!icmp.verify_checksum(&src, &dst));
        icmp.fill_checksum(&dst, &src);
        assert!(icmp.verify_checksum(&dst, &src));
        assert_eq!(icmp.payload(), b"ping");
    }
}
