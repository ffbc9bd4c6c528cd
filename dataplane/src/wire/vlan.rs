//! IEEE 802.1Q / 802.1ad VLAN tags and the L2 parse that walks them.

use super::ethernet::{self, EtherType, EthernetAddress, EthernetFrame};
use super::{Error, be_u16, set_be_u16};

mod field {
    use core::ops::{Range, RangeFrom};
    pub const TCI: Range<usize> = 0..2;
    pub const ETHERTYPE: Range<usize> = 2..4;
    pub const PAYLOAD: RangeFrom<usize> = 4..;
}

/// Length of a VLAN tag as seen after the TPID: TCI and the inner EtherType. The TPID itself
/// is the EtherType field of the header in front of it.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Maximum VLAN ID; 0 means "priority tag only", 4095 is reserved.
pub const VID_MAX: u16 = 0x0fff;

/// A view of the four bytes that follow a VLAN TPID (TCI, inner EtherType) and the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanPacket<T> {
    /// Wraps `buffer` without checking it; accessors panic if it is shorter than 4 bytes.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Err(Truncated)` if the buffer cannot hold the tag.
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

    /// The whole tag control information word.
    #[inline]
    pub fn tci(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::TCI])
    }

    /// Priority code point (0..=7).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN ID (0..=4095).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MAX
    }

    /// The EtherType of what follows the tag (another TPID when tags are stacked).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(be_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// What follows the tag.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanPacket<T> {
    /// Sets the whole TCI word.
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        set_be_u16(&mut self.buffer.as_mut()[field::TCI], tci);
    }

    /// Sets the PCP; bits above the low three are ignored.
    #[inline]
    pub fn set_pcp(&mut self, pcp: u8) {
        self.set_tci((self.tci() & 0x1fff) | (u16::from(pcp & 7) << 13));
    }

    /// Sets the DEI bit.
    #[inline]
    pub fn set_dei(&mut self, dei: bool) {
        self.set_tci((self.tci() & !0x1000) | if dei { 0x1000 } else { 0 });
    }

    /// Sets the VID; bits above the low twelve are ignored.
    #[inline]
    pub fn set_vid(&mut self, vid: u16) {
        self.set_tci((self.tci() & !VID_MAX) | (vid & VID_MAX));
    }

    /// Sets the inner EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        set_be_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], ethertype.0);
    }

    /// What follows the tag, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// One VLAN tag as a value: its TPID and TCI fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// The TPID that introduced the tag: [`EtherType::VLAN`] or [`EtherType::QINQ`].
    pub tpid: EtherType,
    /// Priority code point (0..=7).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN ID (0..=4095).
    pub vid: u16,
}

impl VlanTag {
    /// Bytes a tag occupies in a frame (TPID + TCI).
    pub const LEN: usize = 4;

    /// The TCI word this tag encodes (out-of-range PCP/VID bits are masked off).
    #[inline]
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 7) << 13) | if self.dei { 0x1000 } else { 0 } | (self.vid & VID_MAX)
    }

    /// Writes TPID and TCI (4 bytes) at the start of `buf`, as when pushing a tag after the
    /// source MAC; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let out = buf.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        set_be_u16(&mut out[..2], self.tpid.0);
        set_be_u16(&mut out[2..], self.tci());
        Ok(Self::LEN)
    }
}

/// What [`parse_l2`] learns from the Ethernet header and its VLAN tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct L2Info {
    /// Destination MAC.
    pub dst: EthernetAddress,
    /// Source MAC.
    pub src: EthernetAddress,
    /// The first tag; a singly tagged frame has its tag here whatever its TPID.
    pub outer: Option<VlanTag>,
    /// The second tag of a double-tagged (QinQ) frame.
    pub inner: Option<VlanTag>,
    /// The EtherType after the last tag.
    pub ethertype: EtherType,
    /// Offset of the L3 header from the start of the frame.
    pub l3_offset: usize,
}

/// Walks Ethernet and zero, one or two VLAN tags.
///
/// Accepted stacks: untagged; one tag with TPID 0x8100 or 0x88a8; an outer tag (0x88a8 or
/// 0x8100, the latter being common "double 0x8100" QinQ) followed by a 0x8100 tag. A third tag
/// is [`Error::TooManyVlanTags`]; a 0x88a8 S-tag inside another tag is [`Error::Malformed`]
/// (802.1ad puts the S-tag outermost).
pub fn parse_l2(frame: &[u8]) -> Result<L2Info, Error> {
    let eth = EthernetFrame::new_checked(frame)?;
    let mut info = L2Info {
        dst: eth.dst_addr(),
        src: eth.src_addr(),
        outer: None,
        inner: None,
        ethertype: eth.ethertype(),
        l3_offset: ethernet::HEADER_LEN,
    };
    if !is_tpid(info.ethertype) {
        return Ok(info);
    }
    let (tag, next) = read_tag(frame, info.ethertype, info.l3_offset)?;
    info.outer = Some(tag);
    info.ethertype = next;
    info.l3_offset += HEADER_LEN;
    match info.ethertype {
        EtherType::VLAN => {}
        EtherType::QINQ => return Err(Error::Malformed),
        _ => return Ok(info),
    }
    let (tag, next) = read_tag(frame, info.ethertype, info.l3_offset)?;
    info.inner = Some(tag);
    info.ethertype = next;
    info.l3_offset += HEADER_LEN;
    if is_tpid(info.ethertype) {
        return Err(Error::TooManyVlanTags);
    }
    Ok(info)
}

#[inline]
fn is_tpid(ethertype: EtherType) -> bool {
    ethertype == EtherType::VLAN || ethertype == EtherType::QINQ
}

#[inline]
fn read_tag(frame: &[u8], tpid: EtherType, offset: usize) -> Result<(VlanTag, EtherType), Error> {
    let tag = VlanPacket::new_checked(frame.get(offset..).ok_or(Error::Truncated)?)?;
    Ok((
        VlanTag {
            tpid,
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
        },
        tag.ethertype(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

    // QinQ: S-tag 0x88a8 PCP 5 DEI 0 VID 100, C-tag 0x8100 PCP 3 DEI 1 VID 4094, then IPv6.
    const QINQ_FRAME: [u8; 24] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x88, 0xa8, 0xa0, 0x64, // S-tag: 101 0 000001100100
        0x81, 0x00, 0x7f, 0xfe, // C-tag: 011 1 111111111110
        0x86, 0xdd, // IPv6
        0x60, 0x00, // start of the L3 header
    ];

    #[test]
    fn untagged() {
        let mut f = [0u8; 16];
        f[..6].copy_from_slice(&DST);
        f[6..12].copy_from_slice(&SRC);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        let info = parse_l2(&f).unwrap();
        assert_eq!(info.dst, EthernetAddress(DST));
        assert_eq!(info.src, EthernetAddress(SRC));
        assert_eq!((info.outer, info.inner), (None, None));
        assert_eq!(info.ethertype, EtherType::ARP);
        assert_eq!(info.l3_offset, 14);
    }

    #[test]
    fn single_tag() {
        let mut f = [0u8; 20];
        f[12..18].copy_from_slice(&[0x81, 0x00, 0x20, 0x0a, 0x08, 0x00]);
        let info = parse_l2(&f).unwrap();
        let tag = VlanTag {
            tpid: EtherType::VLAN,
            pcp: 1,
            dei: false,
            vid: 10,
        };
        assert_eq!(info.outer, Some(tag));
        assert_eq!(info.inner, None);
        assert_eq!(info.ethertype, EtherType::IPV4);
        assert_eq!(info.l3_offset, 18);
        assert_eq!(tag.tci(), 0x200a);
    }

    #[test]
    fn double_tag() {
        let info = parse_l2(&QINQ_FRAME).unwrap();
        assert_eq!(
            info.outer,
            Some(VlanTag {
                tpid: EtherType::QINQ,
                pcp: 5,
                dei: false,
                vid: 100
            })
        );
        assert_eq!(
            info.inner,
            Some(VlanTag {
                tpid: EtherType::VLAN,
                pcp: 3,
                dei: true,
                vid: 4094
            })
        );
        assert_eq!(info.ethertype, EtherType::IPV6);
        assert_eq!(info.l3_offset, 22);
        assert_eq!(&QINQ_FRAME[info.l3_offset..], &[0x60, 0x00]);

        // Double 0x8100 is accepted too.
        let mut f = QINQ_FRAME;
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(parse_l2(&f).unwrap().outer.unwrap().tpid, EtherType::VLAN);
    }

    #[test]
    fn every_truncation_of_the_tags_fails() {
        // Up to the end of the last tag nothing can be parsed; from there on the L3 header is
        // someone else's business and the L2 parse succeeds.
        for n in 0..22 {
            assert_eq!(parse_l2(&QINQ_FRAME[..n]), Err(Error::Truncated), "len {n}");
        }
        assert!(parse_l2(&QINQ_FRAME[..22]).is_ok());
    }

    #[test]
    fn three_tags_are_too_many() {
        let mut f = [0u8; 30];
        f[12..26].copy_from_slice(&[
            0x88, 0xa8, 0x00, 0x01, 0x81, 0x00, 0x00, 0x02, 0x81, 0x00, 0x00, 0x03, 0x08, 0x00,
        ]);
        assert_eq!(parse_l2(&f), Err(Error::TooManyVlanTags));
        // A third tag with an S-tag TPID is counted the same.
        f[20..22].copy_from_slice(&[0x88, 0xa8]);
        assert_eq!(parse_l2(&f), Err(Error::TooManyVlanTags));
    }

    #[test]
    fn s_tag_inside_a_tag_is_malformed() {
        let mut f = QINQ_FRAME;
        f[16..18].copy_from_slice(&[0x88, 0xa8]);
        assert_eq!(parse_l2(&f), Err(Error::Malformed));
    }

    #[test]
    fn view_accessors_and_setters_round_trip() {
        let mut buf = [0xa0, 0x64, 0x81, 0x00, 0x99];
        let mut v = VlanPacket::new_checked(&mut buf[..]).unwrap();
        assert_eq!(
            (v.pcp(), v.dei(), v.vid(), v.ethertype()),
            (5, false, 100, EtherType::VLAN)
        );
        assert_eq!(v.payload(), &[0x99]);
        v.set_pcp(7);
        v.set_dei(true);
        v.set_vid(4095);
        v.set_ethertype(EtherType::IPV4);
        assert_eq!(
            (v.pcp(), v.dei(), v.vid(), v.ethertype()),
            (7, true, 4095, EtherType::IPV4)
        );
        v.set_pcp(0);
        v.set_dei(false);
        v.set_vid(0xf001); // high bits are not a VID and must not leak into PCP/DEI
        assert_eq!((v.pcp(), v.dei(), v.vid()), (0, false, 1));
        v.payload_mut()[0] = 0x42;
        assert_eq!(buf, [0x00, 0x01, 0x08, 0x00, 0x42]);
        for n in 0..4 {
            assert_eq!(VlanPacket::new_checked(&buf[..n]), Err(Error::Truncated));
        }
    }

    #[test]
    fn tag_emit() {
        let tag = VlanTag {
            tpid: EtherType::QINQ,
            pcp: 5,
            dei: false,
            vid: 100,
        };
        let mut out = [0u8; 4];
        assert_eq!(tag.emit(&mut out), Ok(4));
        assert_eq!(out, QINQ_FRAME[12..16]);
        assert_eq!(tag.emit(&mut out[..3]), Err(Error::BufferTooSmall));
    }
}
