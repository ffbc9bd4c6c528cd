//! Segment Routing Header (RFC 8754 section 2) view.
//!
//! ```text
//!  0                   1                   2                   3
//! | Next Header   |  Hdr Ext Len  | Routing Type=4| Segments Left |
//! |  Last Entry   |     Flags     |              Tag              |
//! |            Segment List[0] (128 bits)   ...                   |
//! |            Segment List[n] (128 bits)                         |
//! //         Optional TLV objects (variable, Pad1 / PadN / ...)   //
//! ```
//!
//! [`SrhPacket::check_len`] validates only what every use needs: the fixed part, the routing
//! type and that Hdr Ext Len fits the buffer. RFC 8986 processes a packet whose Last Entry runs
//! past the header differently from a truncated one (a Parameter Problem pointing at Segments
//! Left, after checking Segments Left and the hop limit), so [`SrhPacket::check_segments`] and
//! [`SrhPacket::check_tlvs`] are separate steps, and [`SrhPacket::segment`] returns `None`
//! instead of panicking for an index outside the header.

use std::net::Ipv6Addr;

use super::ipv6::ROUTING_TYPE_SRH;
use super::{Error, be_u16, ipv6_addr};

mod field {
    pub const NEXT_HEADER: usize = 0;
    pub const HDR_EXT_LEN: usize = 1;
    pub const ROUTING_TYPE: usize = 2;
    pub const SEGMENTS_LEFT: usize = 3;
    pub const LAST_ENTRY: usize = 4;
    pub const FLAGS: usize = 5;
    pub const TAG: core::ops::Range<usize> = 6..8;
    pub const SEGMENTS: usize = 8;
}

/// Length of the fixed part before the segment list.
pub const FIXED_LEN: usize = field::SEGMENTS;
/// Offset of Segments Left inside the SRH (the pointer of RFC 8986's Parameter Problems).
pub const SEGMENTS_LEFT_OFFSET: usize = field::SEGMENTS_LEFT;
/// Length of one segment.
pub const SEGMENT_LEN: usize = 16;

/// TLV types of RFC 8754 section 2.1.1.
pub mod tlv_type {
    /// One byte of padding, no length field.
    pub const PAD1: u8 = 0;
    /// `length` bytes of padding.
    pub const PADN: u8 = 4;
    /// HMAC TLV (RFC 8754 section 2.1.2).
    pub const HMAC: u8 = 5;
}

/// A view of a Segment Routing Header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SrhPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SrhPacket<T> {
    /// Wraps `buffer` without checks; accessors of the fixed part panic on fewer than 8 bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        SrhPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let srh = Self::new_unchecked(buffer);
        srh.check_len()?;
        Ok(srh)
    }

    /// The fixed part is present ([`Error::Truncated`]), the routing type is 4
    /// ([`Error::Unsupported`]) and `(Hdr Ext Len + 1) * 8` bytes are in the buffer
    /// ([`Error::BadExtensionHeader`]: the length field lies about the packet).
    pub fn check_len(&self) -> Result<(), Error> {
        let data = self.buffer.as_ref();
        if data.len() < FIXED_LEN {
            return Err(Error::Truncated);
        }
        if data[field::ROUTING_TYPE] != ROUTING_TYPE_SRH {
            return Err(Error::Unsupported);
        }
        if self.header_len() > data.len() {
            return Err(Error::BadExtensionHeader);
        }
        Ok(())
    }

    /// RFC 8986 S04-S05 as a check: Last Entry within the header (`Last Entry <= Hdr Ext Len /
    /// 2 - 1`) and Segments Left at most Last Entry + 1; else [`Error::Malformed`].
    pub fn check_segments(&self) -> Result<(), Error> {
        let max_last_entry = i32::from(self.hdr_ext_len()) / 2 - 1;
        let last_entry = i32::from(self.last_entry());
        if last_entry > max_last_entry || i32::from(self.segments_left()) > last_entry + 1 {
            return Err(Error::Malformed);
        }
        Ok(())
    }

    /// The TLV area (after the segment list, up to Hdr Ext Len) is a sequence of whole TLVs:
    /// Pad1 is one byte, every other TLV `2 + length` bytes; one that runs past the header is
    /// [`Error::Malformed`]. Call after [`Self::check_segments`].
    pub fn check_tlvs(&self) -> Result<(), Error> {
        let mut tlvs = self.tlvs();
        for tlv in &mut tlvs {
            tlv?;
        }
        Ok(())
    }

    /// Total header length in bytes: `(Hdr Ext Len + 1) * 8`.
    #[inline]
    pub fn header_len(&self) -> usize {
        (usize::from(self.hdr_ext_len()) + 1) * 8
    }

    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    #[inline]
    pub fn hdr_ext_len(&self) -> u8 {
        self.buffer.as_ref()[field::HDR_EXT_LEN]
    }

    #[inline]
    pub fn routing_type(&self) -> u8 {
        self.buffer.as_ref()[field::ROUTING_TYPE]
    }

    #[inline]
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[field::SEGMENTS_LEFT]
    }

    #[inline]
    pub fn last_entry(&self) -> u8 {
        self.buffer.as_ref()[field::LAST_ENTRY]
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    #[inline]
    pub fn tag(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::TAG])
    }

    /// Segment List[index], or `None` when `index` is past Last Entry or the segment does not
    /// lie inside the header (and buffer).
    #[inline]
    pub fn segment(&self, index: u8) -> Option<Ipv6Addr> {
        if index > self.last_entry() {
            return None;
        }
        let start = FIXED_LEN + usize::from(index) * SEGMENT_LEN;
        let end = start + SEGMENT_LEN;
        if end > self.header_len() {
            return None;
        }
        self.buffer.as_ref().get(start..end).map(ipv6_addr)
    }

    /// The TLVs after Segment List[Last Entry], as `(type, value)`; padding included.
    pub fn tlvs(&self) -> Tlvs<'_> {
        let data = self.buffer.as_ref();
        let end = self.header_len().min(data.len());
        let start = (FIXED_LEN + (usize::from(self.last_entry()) + 1) * SEGMENT_LEN).min(end);
        Tlvs {
            data: &data[start..end],
            failed: false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SrhPacket<T> {
    #[inline]
    pub fn set_next_header(&mut self, value: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value;
    }

    #[inline]
    pub fn set_segments_left(&mut self, value: u8) {
        self.buffer.as_mut()[field::SEGMENTS_LEFT] = value;
    }
}

/// Iterator over the TLVs of an SRH; yields [`Error::Malformed`] once (and then stops) for a
/// TLV whose length runs past the header.
#[derive(Debug, Clone)]
pub struct Tlvs<'a> {
    data: &'a [u8],
    failed: bool,
}

impl<'a> Iterator for Tlvs<'a> {
    type Item = Result<(u8, &'a [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.data.is_empty() {
            return None;
        }
        let kind = self.data[0];
        if kind == tlv_type::PAD1 {
            self.data = &self.data[1..];
            return Some(Ok((kind, &[])));
        }
        let Some(&len) = self.data.get(1) else {
            self.failed = true;
            return Some(Err(Error::Malformed));
        };
        let end = 2 + usize::from(len);
        let Some(value) = self.data.get(2..end) else {
            self.failed = true;
            return Some(Err(Error::Malformed));
        };
        self.data = &self.data[end..];
        Some(Ok((kind, value)))
    }
}

/// Writes an SRH with `segments` (already in wire order: Segment List[0] first), Segments
/// Left and Last Entry as given, no flags, tag or TLVs, into `buf`; returns its length
/// (`8 + 16 * segments.len()`), or [`Error::BufferTooSmall`] (also for no segments or more
/// than 127, which Hdr Ext Len cannot express).
pub fn emit(
    buf: &mut [u8],
    next_header: u8,
    segments_left: u8,
    last_entry: u8,
    segments: &[[u8; 16]],
) -> Result<usize, Error> {
    let len = FIXED_LEN + SEGMENT_LEN * segments.len();
    if buf.len() < len || segments.is_empty() || segments.len() > 127 {
        return Err(Error::BufferTooSmall);
    }
    buf[field::NEXT_HEADER] = next_header;
    buf[field::HDR_EXT_LEN] = (2 * segments.len()) as u8;
    buf[field::ROUTING_TYPE] = ROUTING_TYPE_SRH;
    buf[field::SEGMENTS_LEFT] = segments_left;
    buf[field::LAST_ENTRY] = last_entry;
    buf[field::FLAGS] = 0;
    buf[field::TAG].fill(0);
    for (i, segment) in segments.iter().enumerate() {
        let start = FIXED_LEN + i * SEGMENT_LEN;
        buf[start..start + SEGMENT_LEN].copy_from_slice(segment);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(last: u8) -> [u8; 16] {
        let mut s = [0u8; 16];
        s[0] = 0xfc;
        s[15] = last;
        s
    }

    /// An SRH built by hand (not with `emit`): 2 segments, SL 1, LE 1, flags 0x5a, tag 0xbeef,
    /// then 16 bytes of TLVs: a PadN of 4 value bytes, two Pad1, a PadN of 6 (6+1+1+8 = 16).
    /// Hdr Ext Len 6: 56 bytes in all.
    fn sample() -> Vec<u8> {
        let mut v = vec![17, 6, 4, 1, 1, 0x5a, 0xbe, 0xef];
        v.extend_from_slice(&seg(1));
        v.extend_from_slice(&seg(2));
        v.extend_from_slice(&[4, 4, 0, 0, 0, 0, 0, 0, 4, 6, 0, 0, 0, 0, 0, 0]);
        v
    }

    #[test]
    fn fields_segments_and_tlvs_read_as_written() {
        let bytes = sample();
        let srh = SrhPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(srh.header_len(), 56);
        assert_eq!(
            (srh.next_header(), srh.segments_left(), srh.last_entry()),
            (17, 1, 1)
        );
        assert_eq!((srh.flags(), srh.tag()), (0x5a, 0xbeef));
        assert_eq!(srh.segment(0), Some(Ipv6Addr::from(seg(1))));
        assert_eq!(srh.segment(1), Some(Ipv6Addr::from(seg(2))));
        assert_eq!(srh.segment(2), None, "index 2 is TLV space, not a segment");
        srh.check_segments().unwrap();
        srh.check_tlvs().unwrap();
        let tlvs: Vec<_> = srh.tlvs().map(|t| t.unwrap()).collect();
        assert_eq!(
            tlvs,
            vec![
                (tlv_type::PADN, &[0u8; 4][..]),
                (tlv_type::PAD1, &[][..]),
                (tlv_type::PAD1, &[][..]),
                (tlv_type::PADN, &[0u8; 6][..])
            ]
        );
    }

    #[test]
    fn short_or_lying_headers_are_errors_not_panics() {
        let bytes = sample();
        for cut in 0..FIXED_LEN {
            assert_eq!(
                SrhPacket::new_checked(&bytes[..cut]).unwrap_err(),
                Error::Truncated
            );
        }
        for cut in FIXED_LEN..bytes.len() {
            assert_eq!(
                SrhPacket::new_checked(&bytes[..cut]).unwrap_err(),
                Error::BadExtensionHeader,
                "Hdr Ext Len says 56 bytes, buffer has {cut}"
            );
        }
        let mut other_type = bytes.clone();
        other_type[2] = 0;
        assert_eq!(
            SrhPacket::new_checked(&other_type[..]).unwrap_err(),
            Error::Unsupported
        );
    }

    #[test]
    fn last_entry_and_segments_left_follow_rfc8986_s04_s05() {
        // Hdr Ext Len 6: max_LE = 6/2 - 1 = 2 (the TLV bytes could hold one more segment).
        for (last_entry, segments_left, ok) in [
            (0u8, 0u8, true),
            (0, 1, true), // SL = LE + 1 is allowed (H.Encaps.Red)
            (0, 2, false),
            (2, 3, true),
            (2, 4, false),
            (3, 0, false), // past the header
            (255, 0, false),
        ] {
            let mut bytes = sample();
            bytes[4] = last_entry;
            bytes[3] = segments_left;
            let srh = SrhPacket::new_checked(&bytes[..]).unwrap();
            assert_eq!(
                srh.check_segments().is_ok(),
                ok,
                "LE {last_entry} SL {segments_left}"
            );
        }
        // Hdr Ext Len 0 and 1 cannot hold a segment at all: max_LE = -1.
        for hdr_ext_len in [0u8, 1] {
            let mut bytes = vec![17, hdr_ext_len, 4, 0, 0, 0, 0, 0];
            bytes.resize(usize::from(hdr_ext_len + 1) * 8, 0);
            let srh = SrhPacket::new_checked(&bytes[..]).unwrap();
            assert_eq!(srh.check_segments(), Err(Error::Malformed));
            assert_eq!(srh.segment(0), None);
        }
    }

    #[test]
    fn tlvs_running_past_the_header_are_malformed() {
        // The first PadN claiming 15 value bytes in a 16-byte TLV area.
        let mut bytes = sample();
        bytes[41] = 15;
        let srh = SrhPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(srh.check_tlvs(), Err(Error::Malformed));
        // A TLV type with its length byte missing (last byte of the area).
        let mut bytes = sample();
        bytes[40..56].fill(0);
        bytes[55] = 5;
        let srh = SrhPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(srh.check_tlvs(), Err(Error::Malformed));
        // The iterator stops after reporting the error.
        assert_eq!(srh.tlvs().filter(|t| t.is_err()).count(), 1);
    }

    #[test]
    fn emit_writes_what_the_view_reads() {
        let mut buf = [0u8; 64];
        let len = emit(&mut buf, 41, 2, 2, &[seg(3), seg(2), seg(1)]).unwrap();
        assert_eq!(len, 56);
        let srh = SrhPacket::new_checked(&buf[..len]).unwrap();
        assert_eq!(srh.hdr_ext_len(), 6);
        assert_eq!(
            (srh.next_header(), srh.segments_left(), srh.last_entry()),
            (41, 2, 2)
        );
        assert_eq!(srh.segment(2), Some(Ipv6Addr::from(seg(1))));
        srh.check_segments().unwrap();
        srh.check_tlvs().unwrap();
        assert_eq!(
            emit(&mut buf[..39], 41, 0, 0, &[seg(1), seg(2)]),
            Err(Error::BufferTooSmall)
        );
    }

    #[test]
    fn emit_stops_at_what_hdr_ext_len_can_express() {
        // 127 segments: Hdr Ext Len 254; 128 would need 256, which one octet cannot hold.
        let mut buf = vec![0u8; 8 + 16 * 128];
        let segments = vec![seg(1); 128];
        let len = emit(&mut buf, 41, 126, 126, &segments[..127]).unwrap();
        let srh = SrhPacket::new_checked(&buf[..len]).unwrap();
        assert_eq!((len, srh.hdr_ext_len()), (8 + 16 * 127, 254));
        assert_eq!(
            emit(&mut buf, 41, 127, 127, &segments),
            Err(Error::BufferTooSmall)
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = crate::wire::test_util::XorShift::new(7);
        let mut buf = [0u8; 96];
        for _ in 0..20_000 {
            let len = rng.below(buf.len() + 1);
            rng.fill(&mut buf[..len]);
            if len > 2 {
                buf[2] = 4;
            }
            if let Ok(srh) = SrhPacket::new_checked(&buf[..len]) {
                let _ = srh.check_segments();
                let _ = srh.check_tlvs();
                for i in 0..=255u8 {
                    let _ = srh.segment(i);
                }
                let _ = (srh.flags(), srh.tag(), srh.tlvs().count());
            }
        }
    }
}
