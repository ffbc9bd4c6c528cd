//! ARP (RFC 826) for Ethernet hardware and IPv4 protocol addresses, the only pairing a switch
//! resolves.

use core::fmt;
use std::net::Ipv4Addr;

use super::ethernet::{self, EtherType, EthernetAddress, EthernetRepr};
use super::{Error, be_u16, ipv4_addr, set_be_u16};

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = field::TPA.end;

/// Hardware type for Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

/// An ARP operation code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    /// "Who has TPA? Tell SPA."
    pub const REQUEST: ArpOperation = ArpOperation(1);
    /// "SPA is at SHA."
    pub const REPLY: ArpOperation = ArpOperation(2);
}

impl fmt::Debug for ArpOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArpOperation::REQUEST => f.write_str("Request"),
            ArpOperation::REPLY => f.write_str("Reply"),
            ArpOperation(op) => write!(f, "ArpOperation({op})"),
        }
    }
}

/// A view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 28 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that this is Ethernet/IPv4 ARP and that the buffer holds it.
    ///
    /// Other hardware or protocol types are [`Error::Unsupported`]; address lengths that
    /// contradict Ethernet/IPv4 (hlen != 6, plen != 4) are [`Error::Malformed`], since the
    /// fixed offsets of the accessors depend on them.
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < field::OPER.start {
            return Err(Error::Truncated);
        }
        if be_u16(&data[field::HTYPE]) != HTYPE_ETHERNET
            || be_u16(&data[field::PTYPE]) != EtherType::IPV4.0
        {
            return Err(Error::Unsupported);
        }
        if data[field::HLEN] != 6 || data[field::PLEN] != 4 {
            return Err(Error::Malformed);
        }
        if data.len() < PACKET_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type (1 after a successful check).
    #[inline]
    pub fn hardware_type(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::HTYPE])
    }

    /// Protocol type (0x0800 after a successful check).
    #[inline]
    pub fn protocol_type(&self) -> EtherType {
        EtherType(be_u16(&self.buffer.as_ref()[field::PTYPE]))
    }

    /// Hardware address length (6 after a successful check).
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length (4 after a successful check).
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation.
    #[inline]
    pub fn operation(&self) -> ArpOperation {
        ArpOperation(be_u16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Sender hardware address.
    #[inline]
    pub fn source_hardware_addr(&self) -> EthernetAddress {
        mac(&self.buffer.as_ref()[field::SHA])
    }

    /// Sender protocol address.
    #[inline]
    pub fn source_protocol_addr(&self) -> Ipv4Addr {
        ipv4_addr(&self.buffer.as_ref()[field::SPA])
    }

    /// Target hardware address (ignored in requests).
    #[inline]
    pub fn target_hardware_addr(&self) -> EthernetAddress {
        mac(&self.buffer.as_ref()[field::THA])
    }

    /// Target protocol address.
    #[inline]
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        ipv4_addr(&self.buffer.as_ref()[field::TPA])
    }
}

#[inline]
fn mac(b: &[u8]) -> EthernetAddress {
    EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]])
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    #[inline]
    pub fn set_hardware_type(&mut self, value: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::HTYPE], value);
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_protocol_type(&mut self, value: EtherType) {
        set_be_u16(&mut self.buffer.as_mut()[field::PTYPE], value.0);
    }

    /// Sets the hardware address length.
    #[inline]
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    /// Sets the protocol address length.
    #[inline]
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    /// Sets the operation.
    #[inline]
    pub fn set_operation(&mut self, value: ArpOperation) {
        set_be_u16(&mut self.buffer.as_mut()[field::OPER], value.0);
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_source_hardware_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&addr.0);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_source_protocol_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&addr.octets());
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_target_hardware_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&addr.0);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_target_protocol_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&addr.octets());
    }
}

/// An owned Ethernet/IPv4 ARP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request, reply, or anything else the sender put there.
    pub operation: ArpOperation,
    /// Sender MAC.
    pub source_hardware_addr: EthernetAddress,
    /// Sender IPv4 address.
    pub source_protocol_addr: Ipv4Addr,
    /// Target MAC (zero in requests).
    pub target_hardware_addr: EthernetAddress,
    /// Target IPv4 address.
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// Reads `packet`, checking it first (so an unchecked view is fine).
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<Self, Error> {
        packet.check_len()?;
        Ok(ArpRepr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// The reply to this request from the owner of `target_protocol_addr`, whose MAC is
    /// `hardware_addr`.
    pub fn reply(&self, hardware_addr: EthernetAddress) -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::REPLY,
            source_hardware_addr: hardware_addr,
            source_protocol_addr: self.target_protocol_addr,
            target_hardware_addr: self.source_hardware_addr,
            target_protocol_addr: self.source_protocol_addr,
        }
    }

    /// Bytes [`Self::emit`] writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the 28-byte ARP packet at the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let out = buf.get_mut(..PACKET_LEN).ok_or(Error::BufferTooSmall)?;
        let mut p = ArpPacket::new_unchecked(out);
        p.set_hardware_type(HTYPE_ETHERNET);
        p.set_protocol_type(EtherType::IPV4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(self.operation);
        p.set_source_hardware_addr(self.source_hardware_addr);
        p.set_source_protocol_addr(self.source_protocol_addr);
        p.set_target_hardware_addr(self.target_hardware_addr);
        p.set_target_protocol_addr(self.target_protocol_addr);
        Ok(PACKET_LEN)
    }

    /// Writes a whole untagged frame (42 bytes, unpadded): requests go to broadcast, everything
    /// else to the target MAC, from the sender MAC. Returns the frame length. Callers that need
    /// the 60-byte Ethernet minimum on ports that do not pad must zero-fill the rest themselves.
    pub fn emit_frame(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let len = ethernet::HEADER_LEN + PACKET_LEN;
        if buf.len() < len {
            return Err(Error::BufferTooSmall);
        }
        let dst_addr = if self.operation == ArpOperation::REQUEST {
            EthernetAddress::BROADCAST
        } else {
            self.target_hardware_addr
        };
        let eth = EthernetRepr {
            src_addr: self.source_hardware_addr,
            dst_addr,
            ethertype: EtherType::ARP,
        };
        let n = eth.emit(buf)?;
        Ok(n + self.emit(&mut buf[n..])?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Who has 10.0.0.2? Tell 10.0.0.1 (02:00:00:00:00:01), broadcast.
    pub(crate) const REQUEST_FRAME: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // Ethernet/IPv4, request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01, // sender
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02, // target
    ];

    /// 10.0.0.2 is at 02:00:00:00:00:02, to the requester.
    const REPLY_FRAME: [u8; 42] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // src
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, // Ethernet/IPv4, reply
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x02, // sender
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01, // target
    ];

    const H1: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const H2: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    #[test]
    fn accessors() {
        let p = ArpPacket::new_checked(&REQUEST_FRAME[14..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), EtherType::IPV4);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), ArpOperation::REQUEST);
        assert_eq!(p.source_hardware_addr(), H1);
        assert_eq!(p.source_protocol_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.target_hardware_addr(), EthernetAddress([0; 6]));
        assert_eq!(p.target_protocol_addr(), Ipv4Addr::new(10, 0, 0, 2));
    }

    #[test]
    fn every_prefix_is_truncated() {
        for n in 0..PACKET_LEN {
            assert_eq!(
                ArpPacket::new_checked(&REQUEST_FRAME[14..14 + n]),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn wrong_lengths_and_types() {
        let mut p = REQUEST_FRAME;
        p[14 + 4] = 8; // hlen 8 with htype Ethernet
        assert_eq!(ArpPacket::new_checked(&p[14..]), Err(Error::Malformed));
        let mut p = REQUEST_FRAME;
        p[14 + 5] = 16; // plen 16 with ptype IPv4
        assert_eq!(ArpPacket::new_checked(&p[14..]), Err(Error::Malformed));
        let mut p = REQUEST_FRAME;
        p[14 + 1] = 6; // IEEE 802 hardware
        assert_eq!(ArpPacket::new_checked(&p[14..]), Err(Error::Unsupported));
        let mut p = REQUEST_FRAME;
        p[14 + 2] = 0x86; // ptype IPv6-ish
        assert_eq!(ArpPacket::new_checked(&p[14..]), Err(Error::Unsupported));
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; PACKET_LEN];
        let mut p = ArpPacket::new_unchecked(&mut buf[..]);
        p.set_hardware_type(1);
        p.set_protocol_type(EtherType::IPV4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(ArpOperation(9));
        p.set_source_hardware_addr(H2);
        p.set_source_protocol_addr(Ipv4Addr::new(192, 0, 2, 1));
        p.set_target_hardware_addr(H1);
        p.set_target_protocol_addr(Ipv4Addr::new(192, 0, 2, 2));
        let p = ArpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.operation(), ArpOperation(9));
        assert_eq!(p.source_hardware_addr(), H2);
        assert_eq!(p.source_protocol_addr(), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(p.target_hardware_addr(), H1);
        assert_eq!(p.target_protocol_addr(), Ipv4Addr::new(192, 0, 2, 2));
        assert_eq!(format!("{:?}", p.operation()), "ArpOperation(9)");
    }

    #[test]
    fn request_reply_build() {
        let req = ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST_FRAME[14..])).unwrap();
        let reply = req.reply(H2);
        assert_eq!(reply.operation, ArpOperation::REPLY);
        let mut out = [0u8; 64];
        assert_eq!(reply.emit_frame(&mut out), Ok(42));
        assert_eq!(out[..42], REPLY_FRAME);
        assert_eq!(req.emit_frame(&mut out), Ok(42));
        assert_eq!(out[..42], REQUEST_FRAME);
        assert_eq!(req.emit_frame(&mut out[..41]), Err(Error::BufferTooSmall));
        assert_eq!(req.emit(&mut out[..27]), Err(Error::BufferTooSmall));
        assert_eq!(req.buffer_len(), 28);
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST_FRAME[14..30])),
            Err(Error::Truncated)
        );
    }
}
