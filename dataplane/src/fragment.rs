//! IPv4 fragmentation (RFC 791 3.2, RFC 1812 4.2.2.7) of a packet longer than the MTU of the
//! interface it is routed out of and without Don't Fragment. A cold path: the worker cuts
//! such a frame here (allocating the pieces) and takes each piece through the pipeline as if
//! it had arrived so; the fast path only decides that a packet needs it
//! (`Verdict::Fragment`).

use crate::wire::checksum;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: u16 = 0x8100;
const MORE_FRAGMENTS: u16 = 0x2000;
const DONT_FRAGMENT: u16 = 0x4000;
const OFFSET_MASK: u16 = 0x1fff;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
/// Option types with this bit are copied into every fragment (RFC 791 3.1).
const OPTION_COPIED: u8 = 0x80;

/// The fragments of `frame` (Ethernet, at most one 802.1Q tag, IPv4) for an MTU of `mtu`
/// bytes: each a frame with the same L2 header, an IPv4 header whose identification, TTL and
/// addresses are the packet's, total length, flags, offset and checksum its own, and at most
/// `mtu` bytes from its IP header on. The first carries every option, the others those with
/// the copied flag (padded to a 4-byte boundary); each but the last carries a multiple of 8
/// data bytes and More Fragments; the last keeps the packet's own More Fragments (the packet
/// may be a fragment itself). Ethernet padding after the packet is not carried.
///
/// `None` when the frame is not such an IPv4 packet, has Don't Fragment, malformed options,
/// or when `mtu` leaves a fragment no room for 8 data bytes.
pub fn fragment_ipv4_frame(frame: &[u8], mtu: u16) -> Option<Vec<Vec<u8>>> {
    let l3 = match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        ETHERTYPE_VLAN => 18,
        _ => 14,
    };
    if u16::from_be_bytes([*frame.get(l3 - 2)?, *frame.get(l3 - 1)?]) != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = frame.get(l3..)?;
    let header_len = usize::from(*ip.first()? & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if ip[0] >> 4 != 4 || header_len < 20 || total_len < header_len || total_len > ip.len() {
        return None;
    }
    let flags_offset = u16::from_be_bytes([ip[6], ip[7]]);
    if flags_offset & DONT_FRAGMENT != 0 {
        return None;
    }
    let header = &ip[..header_len];
    let copied = copied_options(&header[20..])?;
    let later_header_len = 20 + copied.len();
    let mtu = usize::from(mtu);
    let data_room = |hlen: usize| mtu.checked_sub(hlen).map(|room| room / 8 * 8);
    let (first_room, later_room) = (data_room(header_len)?, data_room(later_header_len)?);
    if first_room == 0 || later_room == 0 {
        return None;
    }
    let data = &ip[header_len..total_len];
    let base_offset = usize::from(flags_offset & OFFSET_MASK) * 8;
    let last_more = flags_offset & MORE_FRAGMENTS;
    let mut fragments = Vec::with_capacity(data.len() / later_room + 2);
    let mut at = 0;
    while at < data.len() || at == 0 {
        let first = at == 0;
        let room = if first { first_room } else { later_room };
        let take = room.min(data.len() - at);
        let last = at + take == data.len();
        let mut piece = Vec::with_capacity(l3 + later_header_len.max(header_len) + take);
        piece.extend_from_slice(&frame[..l3]);
        piece.extend_from_slice(&header[..20]);
        if first {
            piece.extend_from_slice(&header[20..]);
        } else {
            piece.extend_from_slice(&copied);
        }
        let hlen = piece.len() - l3;
        piece.extend_from_slice(&data[at..at + take]);
        let offset = u16::try_from((base_offset + at) / 8).ok()?;
        if offset > OFFSET_MASK {
            return None;
        }
        let more = if last { last_more } else { MORE_FRAGMENTS };
        let ip = &mut piece[l3..];
        ip[0] = 0x40 | (hlen / 4) as u8;
        ip[2..4].copy_from_slice(&((hlen + take) as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&(more | offset).to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let sum = !checksum::sum(&ip[..hlen]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        fragments.push(piece);
        at += take;
        if last {
            break;
        }
    }
    Some(fragments)
}

/// The options a non-first fragment carries: those with the copied flag, padded with
/// End of Options List to a 4-byte boundary. `None` for a malformed option list.
fn copied_options(options: &[u8]) -> Option<Vec<u8>> {
    let mut copied = Vec::new();
    let mut at = 0;
    while at < options.len() {
        let kind = options[at];
        match kind {
            OPTION_END => break,
            OPTION_NOP => at += 1,
            _ => {
                let len = usize::from(*options.get(at + 1)?);
                if len < 2 || at + len > options.len() {
                    return None;
                }
                if kind & OPTION_COPIED != 0 {
                    copied.extend_from_slice(&options[at..at + len]);
                }
                at += len;
            }
        }
    }
    while copied.len() % 4 != 0 {
        copied.push(OPTION_END);
    }
    Some(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A textbook RFC 1071 checksum, sharing nothing with `wire::checksum`.
    fn header_checksum_ok(header: &[u8]) -> bool {
        let mut sum: u32 = header
            .chunks(2)
            .map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0)))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    /// Ethernet (optionally tagged with VID 10), then IPv4 with `options`, identification
    /// 0x1234, `flags_offset`, TTL 64, UDP from 10.0.0.1 to 10.0.1.1, `data_len` data bytes
    /// counting up, and `padding` bytes of Ethernet padding after the packet.
    fn frame(
        tagged: bool,
        options: &[u8],
        flags_offset: u16,
        data_len: usize,
        padding: usize,
    ) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 1, 0, 0x02, 0, 0, 0, 0, 0x0a];
        if tagged {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 10]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let hlen = 20 + options.len();
        let total = (hlen + data_len) as u16;
        f.push(0x40 | (hlen / 4) as u8);
        f.push(0);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0x12, 0x34]);
        f.extend_from_slice(&flags_offset.to_be_bytes());
        f.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1]);
        f.extend_from_slice(options);
        f.extend((0..data_len).map(|i| i as u8));
        f.extend(std::iter::repeat_n(0xee, padding));
        let l3 = if tagged { 18 } else { 14 };
        let sum = {
            let mut sum: u32 = f[l3..l3 + hlen]
                .chunks(2)
                .map(|w| u32::from(w[0]) << 8 | u32::from(w[1]))
                .sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            !(sum as u16)
        };
        f[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        f
    }

    /// Checks every RFC 791 rule on `pieces` of `original` and returns the reassembled data.
    fn check(original: &[u8], pieces: &[Vec<u8>], mtu: usize, l3: usize) -> Vec<u8> {
        let ip = &original[l3..];
        let hlen = usize::from(ip[0] & 15) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let original_flags = u16::from_be_bytes([ip[6], ip[7]]);
        let mut data = Vec::new();
        for (n, piece) in pieces.iter().enumerate() {
            assert_eq!(piece[..l3], original[..l3], "L2 header kept");
            let p = &piece[l3..];
            let phlen = usize::from(p[0] & 15) * 4;
            let ptotal = usize::from(u16::from_be_bytes([p[2], p[3]]));
            assert_eq!(ptotal, p.len(), "total length is the fragment's");
            assert!(
                ptotal <= mtu,
                "fragment {n} of {ptotal} bytes over the MTU {mtu}"
            );
            assert!(header_checksum_ok(&p[..phlen]), "fragment {n} checksum");
            assert_eq!(p[4..6], ip[4..6], "identification");
            assert_eq!(p[8..10], ip[8..10], "TTL and protocol untouched");
            assert_eq!(p[12..20], ip[12..20], "addresses");
            let flags = u16::from_be_bytes([p[6], p[7]]);
            let offset = usize::from(flags & 0x1fff) * 8;
            assert_eq!(
                offset,
                usize::from(original_flags & 0x1fff) * 8 + data.len(),
                "fragment {n} offset continues the data"
            );
            let last = n == pieces.len() - 1;
            let more = flags & 0x2000 != 0;
            if last {
                assert_eq!(
                    more,
                    original_flags & 0x2000 != 0,
                    "last keeps the packet's MF"
                );
            } else {
                assert!(more, "fragment {n} has MF");
                assert_eq!((ptotal - phlen) % 8, 0, "fragment {n} data is 8-byte units");
            }
            data.extend_from_slice(&p[phlen..]);
        }
        assert_eq!(data, ip[hlen..total], "data reassembles to the packet's");
        data
    }

    #[test]
    fn a_packet_is_cut_into_the_fewest_fragments_the_mtu_allows() {
        // 1600 data bytes, MTU 1500: 1480 then 120 (RFC 791's arithmetic: (1500-20)/8*8).
        let original = frame(false, &[], 0, 1600, 0);
        let pieces = fragment_ipv4_frame(&original, 1500).unwrap();
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].len(), 14 + 20 + 1480);
        assert_eq!(pieces[1].len(), 14 + 20 + 120);
        check(&original, &pieces, 1500, 14);
    }

    #[test]
    fn data_room_is_rounded_down_to_eight_bytes() {
        // MTU 1000: (1000-20)/8*8 = 976 data bytes per fragment, 2000 = 976+976+48.
        let original = frame(false, &[], 0, 2000, 0);
        let pieces = fragment_ipv4_frame(&original, 1000).unwrap();
        let sizes: Vec<usize> = pieces.iter().map(|p| p.len() - 34).collect();
        assert_eq!(sizes, [976, 976, 48]);
        check(&original, &pieces, 1000, 14);
    }

    #[test]
    fn tagged_frames_keep_their_tag_and_padding_is_not_carried() {
        let original = frame(true, &[], 0, 700, 30);
        let pieces = fragment_ipv4_frame(&original, 576).unwrap();
        assert_eq!(pieces.len(), 2);
        check(&original, &pieces, 576, 18);
    }

    #[test]
    fn a_fragment_is_cut_again_with_offsets_from_its_own() {
        // A middle fragment (offset 185 units, MF set) of 1200 data bytes, MTU 600: every
        // piece, the last included, keeps MF, offsets continue from 1480.
        let original = frame(false, &[], 0x2000 | 185, 1200, 0);
        let pieces = fragment_ipv4_frame(&original, 600).unwrap();
        assert_eq!(pieces.len(), 3);
        check(&original, &pieces, 600, 14);
        // A last fragment (MF clear) keeps MF clear on its last piece only.
        let original = frame(false, &[], 185, 1200, 0);
        let pieces = fragment_ipv4_frame(&original, 600).unwrap();
        check(&original, &pieces, 600, 14);
    }

    #[test]
    fn only_copied_options_go_into_later_fragments() {
        // Record Route (7, not copied), 7 bytes, then NOP, then Security-like option 0x82
        // (copied) of 4 bytes = 12 bytes of options.
        let options = [7, 7, 4, 0, 0, 0, 0, 1, 0x82, 4, 0xaa, 0xbb];
        let original = frame(false, &options, 0, 1000, 0);
        let pieces = fragment_ipv4_frame(&original, 500).unwrap();
        let first = &pieces[0][14..];
        assert_eq!(first[0] & 15, 8, "the first fragment has every option");
        assert_eq!(first[20..32], options);
        for later in &pieces[1..] {
            let ip = &later[14..];
            assert_eq!(ip[0] & 15, 6, "20 bytes + 4 of copied options");
            assert_eq!(ip[20..24], [0x82, 4, 0xaa, 0xbb]);
        }
        check(&original, &pieces, 500, 14);
    }

    #[test]
    fn what_cannot_be_fragmented_is_refused() {
        // Don't Fragment.
        assert!(fragment_ipv4_frame(&frame(false, &[], 0x4000, 1600, 0), 1500).is_none());
        // An option whose length runs past the option list: malformed.
        let overlong = [[0x82u8, 24].as_slice(), &[0; 18]].concat();
        assert!(fragment_ipv4_frame(&frame(false, &overlong, 0, 200, 0), 1500).is_none());
        // 40 bytes of copied options: a 60-byte header in every fragment, so MTU 67 leaves
        // no room for 8 data bytes and 68 does.
        let copied = [[0x82u8, 20].as_slice(), &[0; 18], &[0x83, 20], &[0; 18]].concat();
        assert!(fragment_ipv4_frame(&frame(false, &copied, 0, 200, 0), 67).is_none());
        assert!(fragment_ipv4_frame(&frame(false, &copied, 0, 200, 0), 68).is_some());
        // Not IPv4, truncated, a total length beyond the frame.
        let mut arp = frame(false, &[], 0, 100, 0);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(fragment_ipv4_frame(&arp, 68).is_none());
        assert!(fragment_ipv4_frame(&arp[..20], 68).is_none());
        let mut short = frame(false, &[], 0, 100, 0);
        short.truncate(14 + 20 + 50);
        assert!(fragment_ipv4_frame(&short, 68).is_none());
    }

    #[test]
    fn every_size_and_mtu_reassembles() {
        for data_len in [1, 7, 8, 9, 100, 1479, 1480, 1481, 4000, 8980] {
            for mtu in [68, 69, 75, 76, 576, 1280, 1500, 9000] {
                let original = frame(false, &[], 0, data_len, 0);
                let pieces = fragment_ipv4_frame(&original, mtu).unwrap();
                check(&original, &pieces, usize::from(mtu), 14);
            }
        }
    }
}
