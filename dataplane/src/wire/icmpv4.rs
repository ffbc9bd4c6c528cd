//! ICMP for IPv4 (RFC 792): the common header and echo fields.

use super::checksum;
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

/// Length of the ICMP header every message has: type, code, checksum and four bytes whose
/// meaning depends on the type.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// ICMPv4 message types the switch sends or answers.
pub mod message {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Source quench (deprecated, RFC 6633; still an error message).
    pub const SOURCE_QUENCH: u8 = 4;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded (code 0: TTL expired in transit).
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAM_PROBLEM: u8 = 12;
}

/// A view of an ICMPv4 message; the buffer is the IPv4 payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 8 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv4Packet { buffer }
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

    /// Everything after the 8-byte header: echo data, or the invoking packet of an error.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }

    /// True when the checksum over the whole message is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.buffer.as_ref()) == 0xffff
    }

    /// The checksum the message should carry (computed with the field taken as zero).
    #[inline]
    pub fn compute_checksum(&self) -> u16 {
        !checksum::combine(&[checksum::sum(self.buffer.as_ref()), !self.checksum()])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
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

    /// Recomputes and stores the checksum over the whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self) {
        let checksum = self.compute_checksum();
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
    use crate::wire::ipv4::{self, Ipv4Packet};
    use crate::wire::test_util::ref_sum;

    fn echo() -> [u8; 12] {
        ipv4::tests::ICMP_FRAME[34..].try_into().unwrap()
    }

    #[test]
    fn accessors() {
        let ip = Ipv4Packet::new_checked(&ipv4::tests::ICMP_FRAME[14..]).unwrap();
        let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (icmp.msg_type(), icmp.msg_code()),
            (message::ECHO_REQUEST, 0)
        );
        assert_eq!(icmp.checksum(), 0x2104);
        assert_eq!((icmp.echo_ident(), icmp.echo_seq_no()), (0x1234, 1));
        assert_eq!(icmp.payload(), b"abcd");
        assert_eq!(ref_sum(ip.payload()), 0xffff);
        assert!(icmp.verify_checksum());
        assert_eq!(icmp.compute_checksum(), 0x2104);
    }

    #[test]
    fn every_short_prefix_is_truncated() {
        let buf = echo();
        for n in 0..HEADER_LEN {
            assert_eq!(Icmpv4Packet::new_checked(&buf[..n]), Err(Error::Truncated));
        }
        // ICMP has no length field: a shorter message is just a different (invalid) checksum.
        assert!(
            !Icmpv4Packet::new_checked(&buf[..10])
                .unwrap()
                .verify_checksum()
        );
    }

    #[test]
    fn echo_reply_in_place() {
        let mut buf = echo();
        let mut icmp = Icmpv4Packet::new_checked(&mut buf[..]).unwrap();
        icmp.set_msg_type(message::ECHO_REPLY);
        icmp.fill_checksum();
        assert!(icmp.verify_checksum());
        assert_eq!(ref_sum(&buf), 0xffff);
        let mut icmp = Icmpv4Packet::new_checked(&mut buf[..]).unwrap();
        icmp.set_msg_code(3);
        icmp.set_echo_ident(7);
        icmp.set_echo_seq_no(8);
        icmp.payload_mut()[0] = b'z';
        icmp.set_checksum(0);
        assert!(!icmp.verify_checksum());
        icmp.fill_checksum();
        assert_eq!(
            (icmp.msg_code(), icmp.echo_ident(), icmp.echo_seq_no()),
            (3, 7, 8)
        );
        assert_eq!(icmp.payload(), b"zbcd");
        assert_eq!(ref_sum(&buf), 0xffff);
    }
}
