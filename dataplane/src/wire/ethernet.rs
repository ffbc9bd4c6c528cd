//! Ethernet II: MAC addresses, EtherTypes and the frame header view.

use core::fmt;
use core::str::FromStr;
use std::net::Ipv6Addr;

use super::{Error, be_u16, set_be_u16};

/// A 48-bit IEEE MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// The six octets, first on the wire first.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Copies an address out of the first six bytes of `b`, or `None` if `b` is shorter.
    #[inline]
    pub fn from_bytes(b: &[u8]) -> Option<EthernetAddress> {
        let octets: &[u8; 6] = b.get(..6)?.try_into().ok()?;
        Some(EthernetAddress(*octets))
    }

    /// True for ff:ff:ff:ff:ff:ff.
    #[inline]
    pub const fn is_broadcast(&self) -> bool {
        matches!(self.0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    }

    /// True when the I/G bit is set (multicast, broadcast included).
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// True when the I/G bit is clear.
    #[inline]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// True when the U/L bit is set (locally administered, like the 02:... router MACs).
    #[inline]
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// The Ethernet group address of an IPv6 multicast address (RFC 2464 section 7):
    /// 33:33 followed by its last four octets.
    #[inline]
    pub const fn from_ipv6_multicast(addr: &Ipv6Addr) -> EthernetAddress {
        let o = addr.octets();
        EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
    }
}

impl From<[u8; 6]> for EthernetAddress {
    #[inline]
    fn from(octets: [u8; 6]) -> Self {
        EthernetAddress(octets)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EthernetAddress({self})")
    }
}

/// The error of parsing an [`EthernetAddress`] from text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddrParseError;

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid MAC address: expected six two-digit hex octets like 02:00:00:00:01:00")
    }
}

impl std::error::Error for AddrParseError {}

impl FromStr for EthernetAddress {
    type Err = AddrParseError;

    /// Parses `aa:bb:cc:dd:ee:ff` (or with `-` separators), either case, exactly two hex digits
    /// per octet: configuration typos should fail, not be guessed at.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut octets = [0u8; 6];
        let mut parts = s.split(sep);
        for octet in &mut octets {
            let part = parts.next().ok_or(AddrParseError)?;
            if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(AddrParseError);
            }
            *octet = u8::from_str_radix(part, 16).map_err(|_| AddrParseError)?;
        }
        if parts.next().is_some() {
            return Err(AddrParseError);
        }
        Ok(EthernetAddress(octets))
    }
}

/// An EtherType (or, below 0x0600, an 802.3 length).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// ARP.
    pub const ARP: EtherType = EtherType(0x0806);
    /// IEEE 802.1Q customer VLAN tag (C-tag).
    pub const VLAN: EtherType = EtherType(0x8100);
    /// IEEE 802.1ad service VLAN tag (S-tag, "QinQ" outer tag).
    pub const QINQ: EtherType = EtherType(0x88a8);
    /// IPv6.
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// MAC Control: PAUSE (802.3x) and PFC (802.1Qbb) frames.
    pub const MAC_CONTROL: EtherType = EtherType(0x8808);

    /// True when the field is an 802.3 length rather than a type (values below 0x0600): such
    /// frames carry LLC and are bridged, never routed.
    #[inline]
    pub const fn is_length(self) -> bool {
        self.0 < 0x0600
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.0)
    }
}

impl fmt::Debug for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EtherType(0x{:04x})", self.0)
    }
}

mod field {
    use core::ops::{Range, RangeFrom};
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of the Ethernet II header (no VLAN tags, no FCS).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of an Ethernet II frame (as DPDK delivers it: no preamble, no FCS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than the header.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// `Err(Truncated)` if the buffer cannot hold the 14-byte header.
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

    /// Destination MAC.
    #[inline]
    pub fn dst_addr(&self) -> EthernetAddress {
        let b = &self.buffer.as_ref()[field::DST];
        EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// Source MAC.
    #[inline]
    pub fn src_addr(&self) -> EthernetAddress {
        let b = &self.buffer.as_ref()[field::SRC];
        EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// The EtherType field (a VLAN TPID when the frame is tagged).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(be_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// Everything after the header, VLAN tags and any padding included.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    /// Sets the source MAC.
    #[inline]
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        set_be_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], ethertype.0);
    }

    /// Everything after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// An owned Ethernet header, for building frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source MAC.
    pub src_addr: EthernetAddress,
    /// Destination MAC.
    pub dst_addr: EthernetAddress,
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of `frame`, checking its length first.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self, Error> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes [`Self::emit`] writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 14-byte header at the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let header = buf.get_mut(..HEADER_LEN).ok_or(Error::BufferTooSmall)?;
        let mut frame = EthernetFrame::new_unchecked(header);
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // dst 02:00:00:00:00:02, src 02:00:00:00:00:01, IPv4, then two payload bytes.
    const FRAME: [u8; 16] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0xaa,
        0xbb,
    ];

    #[test]
    fn accessors() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), EthernetAddress([2, 0, 0, 0, 0, 2]));
        assert_eq!(f.src_addr(), EthernetAddress([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.ethertype(), EtherType::IPV4);
        assert_eq!(f.payload(), &[0xaa, 0xbb]);
        assert_eq!(f.into_inner().len(), 16);
    }

    #[test]
    fn every_short_prefix_is_truncated() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                EthernetFrame::new_checked(&FRAME[..n]),
                Err(Error::Truncated)
            );
        }
        // A bare header is a valid frame with an empty payload.
        let f = EthernetFrame::new_checked(&FRAME[..HEADER_LEN]).unwrap();
        assert!(f.payload().is_empty());
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = FRAME;
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        f.set_dst_addr(EthernetAddress::BROADCAST);
        f.set_src_addr(EthernetAddress([0x02, 1, 2, 3, 4, 5]));
        f.set_ethertype(EtherType::ARP);
        f.payload_mut()[0] = 0x11;
        assert_eq!(f.dst_addr(), EthernetAddress::BROADCAST);
        assert_eq!(f.src_addr(), EthernetAddress([0x02, 1, 2, 3, 4, 5]));
        assert_eq!(f.ethertype(), EtherType::ARP);
        assert_eq!(&buf[12..15], &[0x08, 0x06, 0x11]);
    }

    #[test]
    fn repr_parse_emit_round_trip() {
        let repr = EthernetRepr::parse(&EthernetFrame::new_checked(&FRAME[..]).unwrap()).unwrap();
        let mut out = [0u8; 14];
        assert_eq!(repr.emit(&mut out), Ok(14));
        assert_eq!(out, FRAME[..14]);
        assert_eq!(repr.emit(&mut out[..13]), Err(Error::BufferTooSmall));
    }

    #[test]
    fn address_classes() {
        let b = EthernetAddress::BROADCAST;
        assert!(b.is_broadcast() && b.is_multicast() && !b.is_unicast());
        let m = EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x01]);
        assert!(!m.is_broadcast() && m.is_multicast() && !m.is_local());
        let u = EthernetAddress([0x02, 0, 0, 0, 1, 0]);
        assert!(u.is_unicast() && u.is_local() && !u.is_broadcast());
        let g = EthernetAddress([0x00, 0x1b, 0x21, 0, 0, 1]);
        assert!(g.is_unicast() && !g.is_local());
        let mc: Ipv6Addr = "ff02::1:ff00:2".parse().unwrap();
        assert_eq!(
            EthernetAddress::from_ipv6_multicast(&mc),
            EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x00, 0x02])
        );
        assert_eq!(
            EthernetAddress::from_bytes(&FRAME),
            Some(EthernetAddress([2, 0, 0, 0, 0, 2]))
        );
        assert_eq!(EthernetAddress::from_bytes(&FRAME[..5]), None);
    }

    #[test]
    fn display_and_parse() {
        let a = EthernetAddress([0x02, 0xab, 0x00, 0x0f, 0xff, 0x10]);
        assert_eq!(a.to_string(), "02:ab:00:0f:ff:10");
        assert_eq!(format!("{a:?}"), "EthernetAddress(02:ab:00:0f:ff:10)");
        assert_eq!("02:ab:00:0f:ff:10".parse(), Ok(a));
        assert_eq!("02-AB-00-0F-FF-10".parse(), Ok(a));
        for bad in [
            "",
            "02:ab:00:0f:ff",
            "02:ab:00:0f:ff:10:11",
            "02:ab:00:0f:ff:1",
            "02:ab:00:0f:ff:100",
            "02:ab:00:0f:ff:+1",
            "02:ab:00:0f:ff:g0",
            "02:ab-00:0f:ff:10",
            "02:ab:00:0f:ff:10:",
        ] {
            assert_eq!(
                bad.parse::<EthernetAddress>(),
                Err(AddrParseError),
                "{bad:?}"
            );
        }
        assert_eq!(EtherType::IPV6.to_string(), "0x86dd");
        assert!(EtherType(0x05dc).is_length() && !EtherType::ARP.is_length());
    }
}
