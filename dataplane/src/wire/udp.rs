//! UDP (RFC 768) header view.

use core::cmp::min;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::checksum;
use super::ip::protocol;
use super::{Error, be_u16, set_be_u16};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A view of a UDP datagram; the buffer is the IP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 8 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Validates the length field: at least the header ([`Error::Malformed`] otherwise) and
    /// within the buffer ([`Error::Truncated`] otherwise). A buffer longer than the length field
    /// is allowed, as IP permits.
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len > data.len() {
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

    /// Length field: header plus payload.
    #[inline]
    pub fn len(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// True when the length field says there is no payload.
    #[inline]
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum field (0 over IPv4 means "not computed").
    #[inline]
    pub fn checksum(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The datagram as the length field bounds it, clamped to the buffer.
    #[inline]
    fn datagram(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        &data[..min(usize::from(self.len()), data.len())]
    }

    /// The payload, up to the length field.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let datagram = self.datagram();
        &datagram[min(HEADER_LEN, datagram.len())..]
    }

    fn compute_checksum(&self, pseudo: u16) -> u16 {
        let data = self.datagram();
        let sum = checksum::combine(&[pseudo, checksum::sum(data), !self.checksum()]);
        // RFC 768: a computed zero is sent as all ones, zero meaning "no checksum".
        match !sum {
            0 => 0xffff,
            c => c,
        }
    }

    fn pseudo_v4(&self, src: &Ipv4Addr, dst: &Ipv4Addr) -> u16 {
        checksum::pseudo_header_v4(src, dst, protocol::UDP, u32::from(self.len()))
    }

    fn pseudo_v6(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        checksum::pseudo_header_v6(src, dst, protocol::UDP, u32::from(self.len()))
    }

    /// True when the checksum is absent (0) or correct for this IPv4 pseudo-header.
    pub fn verify_checksum_v4(&self, src: &Ipv4Addr, dst: &Ipv4Addr) -> bool {
        self.checksum() == 0
            || checksum::combine(&[self.pseudo_v4(src, dst), checksum::sum(self.datagram())])
                == 0xffff
    }

    /// True when the checksum is correct for this IPv6 pseudo-header (it is mandatory in IPv6).
    pub fn verify_checksum_v6(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        self.checksum() != 0
            && checksum::combine(&[self.pseudo_v6(src, dst), checksum::sum(self.datagram())])
                == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
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

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, len: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::CHECKSUM], checksum);
    }

    /// Computes and stores the checksum for an IPv4 pseudo-header.
    pub fn fill_checksum_v4(&mut self, src: &Ipv4Addr, dst: &Ipv4Addr) {
        let checksum = self.compute_checksum(self.pseudo_v4(src, dst));
        self.set_checksum(checksum);
    }

    /// Computes and stores the checksum for an IPv6 pseudo-header.
    pub fn fill_checksum_v6(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let checksum = self.compute_checksum(self.pseudo_v6(src, dst));
        self.set_checksum(checksum);
    }

    /// The payload up to the length field, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let data = self.buffer.as_mut();
        let end = min(usize::from(be_u16(&data[field::LENGTH])), data.len());
        &mut data[min(HEADER_LEN, end)..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::test_util::ref_sum;
    use crate::wire::{ipv4, ipv6};

    const SRC4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn udp4() -> [u8; 12] {
        ipv4::tests::UDP_FRAME[34..].try_into().unwrap()
    }

    #[test]
    fn literal_checksum_matches_reference() {
        let mut pseudo = [0u8; 12];
        pseudo[..4].copy_from_slice(&SRC4.octets());
        pseudo[4..8].copy_from_slice(&DST4.octets());
        pseudo[9] = 17;
        pseudo[11] = 12;
        let mut all = [0u8; 24];
        all[..12].copy_from_slice(&pseudo);
        all[12..].copy_from_slice(&udp4());
        assert_eq!(ref_sum(&all), 0xffff);
    }

    #[test]
    fn accessors() {
        let buf = udp4();
        let udp = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((udp.src_port(), udp.dst_port(), udp.len()), (12345, 53, 12));
        assert_eq!(udp.checksum(), 0x1dc8);
        assert!(!udp.is_empty());
        assert_eq!(udp.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        assert!(udp.verify_checksum_v4(&SRC4, &DST4));
        assert!(!udp.verify_checksum_v4(&DST4, &Ipv4Addr::new(10, 0, 0, 3)));
        let v6 = &ipv6::tests::UDP_FRAME[54..];
        let udp6 = UdpPacket::new_checked(v6).unwrap();
        let (s6, d6) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        assert!(udp6.verify_checksum_v6(&s6, &d6));
        // The pseudo-header sum is symmetric in the addresses, so change one instead.
        assert!(!udp6.verify_checksum_v6(&s6, &Ipv6Addr::LOCALHOST));
    }

    #[test]
    fn every_prefix_is_truncated_and_lengths_are_checked() {
        let buf = udp4();
        for n in 0..buf.len() {
            assert_eq!(UdpPacket::new_checked(&buf[..n]), Err(Error::Truncated));
        }
        let mut bad = buf;
        bad[5] = 7;
        assert_eq!(UdpPacket::new_checked(&bad[..]), Err(Error::Malformed));
        bad[5] = 8;
        assert!(
            UdpPacket::new_checked(&bad[..])
                .unwrap()
                .payload()
                .is_empty()
        );
        let mut longer = [0u8; 20];
        longer[..12].copy_from_slice(&buf);
        let udp = UdpPacket::new_checked(&longer[..]).unwrap();
        assert_eq!(udp.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        assert!(udp.verify_checksum_v4(&SRC4, &DST4));
    }

    #[test]
    fn setters_and_fill_round_trip() {
        let mut buf = udp4();
        let mut udp = UdpPacket::new_checked(&mut buf[..]).unwrap();
        udp.set_src_port(4791); // RoCEv2
        udp.set_dst_port(4791);
        udp.payload_mut()[0] = 0;
        udp.fill_checksum_v4(&SRC4, &DST4);
        assert!(udp.verify_checksum_v4(&SRC4, &DST4));
        assert_eq!((udp.src_port(), udp.dst_port()), (4791, 4791));
        udp.set_checksum(0);
        assert!(
            udp.verify_checksum_v4(&SRC4, &DST4),
            "zero means no checksum over IPv4"
        );
        let (s6, d6) = (Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);
        assert!(
            !udp.verify_checksum_v6(&s6, &d6),
            "zero is invalid over IPv6"
        );
        udp.fill_checksum_v6(&s6, &d6);
        assert!(udp.verify_checksum_v6(&s6, &d6));
        udp.set_len(100); // past the buffer: accessors clamp instead of panicking
        assert_eq!(udp.payload().len(), 4);
        assert_eq!(udp.payload_mut().len(), 4);
    }

    #[test]
    fn computed_zero_is_sent_as_all_ones() {
        // Choose the payload so that the datagram sums to negative zero with the checksum
        // field at zero: the computed checksum is then 0, which must go out as 0xffff.
        let mut buf = [0u8; 10];
        buf[4..6].copy_from_slice(&10u16.to_be_bytes());
        let mut pseudo = [0u8; 12];
        pseudo[..4].copy_from_slice(&SRC4.octets());
        pseudo[4..8].copy_from_slice(&DST4.octets());
        pseudo[9] = 17;
        pseudo[11] = 10;
        let mut all = [0u8; 22];
        all[..12].copy_from_slice(&pseudo);
        all[12..].copy_from_slice(&buf);
        let word = !ref_sum(&all);
        buf[8..10].copy_from_slice(&word.to_be_bytes());
        let mut udp = UdpPacket::new_checked(&mut buf[..]).unwrap();
        udp.fill_checksum_v4(&SRC4, &DST4);
        assert_eq!(udp.checksum(), 0xffff);
        assert!(udp.verify_checksum_v4(&SRC4, &DST4));
    }
}
