//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums here are ones-complement sums, folded to 16 bits and *not* complemented, so partial
//! sums (pseudo-header, header, payload) can be combined; the value stored in a header is
//! `!combine(...)`. A buffer verifies when the sum over it, checksum field included, is `0xffff`.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Folds a wide accumulator to 16 bits with end-around carry.
///
/// The result is `0` only when `sum` is `0`, which keeps the "negative zero" (`0xffff`) of the
/// RFC 1071 arithmetic intact.
#[inline]
pub const fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Unfolded sum of `data` as big-endian 16-bit words, a trailing odd byte padded with zero.
///
/// Adding 32-bit words is equivalent (2^16 is 1 modulo 2^16 - 1) and halves the iterations; a
/// `u64` cannot overflow for any buffer that fits in memory on a 64-bit machine's packets.
#[inline]
fn accumulate(data: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    match *chunks.remainder() {
        [a] => acc += u64::from(a) << 8,
        [a, b] => acc += u64::from(u16::from_be_bytes([a, b])),
        [a, b, c] => acc += u64::from(u16::from_be_bytes([a, b])) + (u64::from(c) << 8),
        _ => {}
    }
    acc
}

/// Ones-complement sum of `data` (folded, not complemented).
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    fold(accumulate(data))
}

/// Whether a 20-byte IPv4 header (checksum field included) sums to `0xffff`, i.e.
/// `sum(header) == 0xffff`, for the forwarding path's per-packet check.
///
/// The words are added in the machine's byte order: a ones-complement sum of byte-swapped
/// words is the byte-swapped sum (RFC 1071 2(B)), and `0xffff` is its own swap. Folding a
/// sum that is not zero ends in 1..=0xffff at its remainder modulo `0xffff` (each fold keeps
/// it, as 2^16 is 1 modulo `0xffff`), so it ends at `0xffff` exactly when the sum is a
/// non-zero multiple of `0xffff`. That is tested without a remainder: `0xffff` is odd, so
/// multiplying by its inverse modulo 2^64 maps the multiples `k * 0xffff` of the u64 range
/// onto `k` itself, 0..=`u64::MAX / 0xffff`, and every other sum above that range (Granlund
/// and Montgomery's divisibility test); one subtraction more also takes the zero sum out.
#[inline(always)]
pub fn ipv4_header_sums_to_ones(header: &[u8; 20]) -> bool {
    let word = |i: usize| {
        u64::from(u32::from_ne_bytes([
            header[i],
            header[i + 1],
            header[i + 2],
            header[i + 3],
        ]))
    };
    is_nonzero_multiple_of_ffff(word(0) + word(4) + word(8) + word(12) + word(16))
}

/// `n != 0 && n % 0xffff == 0`, by the inverse (see `ipv4_header_sums_to_ones`).
#[inline(always)]
const fn is_nonzero_multiple_of_ffff(n: u64) -> bool {
    /// The inverse of `0xffff` modulo 2^64: `0xffff * 0x0001_0001_0001_0001` is `2^64 - 1`.
    const INVERSE: u64 = 0x0001_0001_0001_0001u64.wrapping_neg();
    const MULTIPLES: u64 = u64::MAX / 0xffff;
    const _: () = assert!(0xffffu64.wrapping_mul(INVERSE) == 1);
    // `k - 1 < MULTIPLES` for `k` in 1..=MULTIPLES: a non-zero multiple.
    n.wrapping_mul(INVERSE).wrapping_sub(1) < MULTIPLES
}

/// Ones-complement sum of partial sums (folded, not complemented).
#[inline]
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u64::from(s)).sum())
}

/// Sum of the IPv4 pseudo-header (RFC 768 / RFC 793): addresses, protocol, L4 length.
#[inline]
pub fn pseudo_header_v4(src: &Ipv4Addr, dst: &Ipv4Addr, protocol: u8, length: u32) -> u16 {
    fold(
        accumulate(&src.octets())
            + accumulate(&dst.octets())
            + u64::from(protocol)
            + u64::from(length >> 16)
            + u64::from(length & 0xffff),
    )
}

/// Sum of the IPv6 pseudo-header (RFC 8200 section 8.1): addresses, upper-layer length, next
/// header. `dst` is the final destination (the last segment when an SRH is present).
#[inline]
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, length: u32) -> u16 {
    fold(
        accumulate(&src.octets())
            + accumulate(&dst.octets())
            + u64::from(next_header)
            + u64::from(length >> 16)
            + u64::from(length & 0xffff),
    )
}

/// Checksum after one 16-bit word of the covered data changed from `old_word` to `new_word`.
///
/// RFC 1624 equation 3, `HC' = ~(~HC + ~m + m')`: unlike the older `HC - m + m'` forms it never
/// produces `0xffff` where a full recomputation gives `0x0000`, so the result is bit-identical
/// to recomputing from scratch (the tests hold it to that), and it also repairs an incoming
/// checksum stored in its `0xffff` form. The one exception is covered data that becomes all
/// zeros (full recomputation gives `0xffff`, this gives `0x0000`, both valid); no IP header can
/// be all zeros because its version nibble is not.
#[inline]
pub const fn update_u16(old_csum: u16, old_word: u16, new_word: u16) -> u16 {
    // Three 16-bit terms sum below 3 * 2^16: two folds always end below 2^16 (what `fold`'s
    // loop would reach), without its loop on the forwarding path.
    let sum = !old_csum as u32 + !old_word as u32 + new_word as u32;
    let sum = (sum & 0xffff) + (sum >> 16);
    !(((sum & 0xffff) + (sum >> 16)) as u16)
}

/// The IPv4 header checksum bytes after the TTL dropped by one: `update_u16` for the word
/// (TTL, protocol) going from `m` to `m - 0x0100`, where `~m + m'` is always `0xfeff`, so the
/// update needs neither word and one fold (`~HC + 0xfeff` is below `0x1_feff`). The sum is
/// taken in the machine's byte order (RFC 1071 2(B), as `ipv4_header_sums_to_ones`), which
/// saves swapping the bytes in and out. Equal to `update_u16` for every checksum and every
/// TTL above 0 (the tests try them all); the forwarding path calls it for a TTL above 1.
#[inline(always)]
pub const fn after_ttl_decrement(stored: [u8; 2]) -> [u8; 2] {
    let sum = !u16::from_ne_bytes(stored) as u32 + u16::from_ne_bytes([0xfe, 0xff]) as u32;
    (!(((sum & 0xffff) + (sum >> 16)) as u16)).to_ne_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::test_util::{XorShift, ref_sum};

    #[test]
    fn ttl_decrement_update_equals_the_general_update() {
        for csum in 0..=u16::MAX {
            for ttl in 1..=u8::MAX {
                // The protocol byte cancels out; two values check it does.
                for protocol in [6u8, 17] {
                    let old = u16::from_be_bytes([ttl, protocol]);
                    let new = u16::from_be_bytes([ttl - 1, protocol]);
                    assert_eq!(
                        after_ttl_decrement(csum.to_be_bytes()),
                        update_u16(csum, old, new).to_be_bytes(),
                        "checksum {csum:#06x}, TTL {ttl}"
                    );
                }
            }
        }
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 works this sum out by hand.
        assert_eq!(
            sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }

    #[test]
    fn sum_matches_reference_for_every_length_and_alignment() {
        let mut rng = XorShift::new(7);
        let mut buf = [0u8; 300];
        for _ in 0..200 {
            rng.fill(&mut buf);
            for len in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 299, 300] {
                let start = rng.below(buf.len() - len + 1);
                let data = &buf[start..start + len];
                assert_eq!(sum(data), ref_sum(data), "len {len}");
            }
        }
        // Saturated data exercises the carries: 0xffff words must stay negative zero.
        assert_eq!(sum(&[0xff; 301]), ref_sum(&[0xff; 301]));
        assert_eq!(sum(&[0xff; 300]), 0xffff);
        assert_eq!(sum(&[]), 0);
    }

    #[test]
    fn header_check_agrees_with_sum() {
        let mut rng = XorShift::new(23);
        let mut header = [0u8; 20];
        for round in 0..20_000 {
            rng.fill(&mut header);
            if round % 2 == 0 {
                // Half the headers carry their valid checksum (the case the check passes).
                header[10..12].fill(0);
                let valid = !sum(&header);
                header[10..12].copy_from_slice(&valid.to_be_bytes());
            }
            if round % 7 == 0 {
                // Saturated words stress the end-around carries.
                header[..8].fill(0xff);
            }
            assert_eq!(
                ipv4_header_sums_to_ones(&header),
                sum(&header) == 0xffff,
                "{header:02x?}"
            );
        }
        assert!(ipv4_header_sums_to_ones(&[0xff; 20]));
        assert!(!ipv4_header_sums_to_ones(&[0; 20]));
    }

    #[test]
    fn the_divisibility_test_is_the_remainder() {
        let by_remainder = |n: u64| n != 0 && n.is_multiple_of(0xffff);
        // Every sum up to 2^24, then around every multiple a header's five words can reach
        // (below 5 * 2^32), then around the top of the u64 range.
        let near_multiples = (0..=5 * (1u64 << 32) / 0xffff + 1)
            .flat_map(|k| (k * 0xffff).saturating_sub(2)..=k * 0xffff + 2);
        let top = u64::MAX - (1 << 20)..=u64::MAX;
        for n in (0..1 << 24).chain(near_multiples).chain(top) {
            assert_eq!(is_nonzero_multiple_of_ffff(n), by_remainder(n), "{n:#x}");
        }
    }

    #[test]
    fn combine_equals_sum_of_concatenation() {
        let mut rng = XorShift::new(11);
        let mut buf = [0u8; 64];
        for _ in 0..500 {
            rng.fill(&mut buf);
            // Split at even offsets only: an odd split shifts the word alignment.
            let cut = 2 * rng.below(33);
            assert_eq!(
                combine(&[sum(&buf[..cut]), sum(&buf[cut..])]),
                ref_sum(&buf)
            );
        }
    }

    #[test]
    fn pseudo_headers_match_their_byte_layout() {
        let mut rng = XorShift::new(3);
        for _ in 0..200 {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            let len = (rng.next_u64() as u32) & 0x1_ffff;
            let proto = rng.next_u8();

            let (s4, d4) = (Ipv4Addr::from(a as u32), Ipv4Addr::from(b as u32));
            let mut v4 = [0u8; 12];
            v4[..4].copy_from_slice(&s4.octets());
            v4[4..8].copy_from_slice(&d4.octets());
            v4[9] = proto;
            // The IPv4 pseudo-header carries a 16-bit length; only test lengths that fit.
            v4[10..12].copy_from_slice(&(len as u16).to_be_bytes());
            assert_eq!(
                pseudo_header_v4(&s4, &d4, proto, len & 0xffff),
                ref_sum(&v4)
            );

            let s6 = Ipv6Addr::from((u128::from(a) << 64) | u128::from(b));
            let d6 = Ipv6Addr::from((u128::from(b) << 64) | u128::from(a));
            let mut v6 = [0u8; 40];
            v6[..16].copy_from_slice(&s6.octets());
            v6[16..32].copy_from_slice(&d6.octets());
            v6[32..36].copy_from_slice(&len.to_be_bytes());
            v6[39] = proto;
            assert_eq!(pseudo_header_v6(&s6, &d6, proto, len), ref_sum(&v6));
        }
    }

    #[test]
    fn incremental_update_equals_recomputation() {
        let mut rng = XorShift::new(0xfeed);
        let mut buf = [0u8; 40];
        for i in 0..20_000 {
            let len = 2 + 2 * rng.below(20);
            let data = &mut buf[..len];
            rng.fill(data);
            // Every few rounds force the extremes: all-ones data (sum 0xffff, checksum 0) and
            // words that flip to and from 0x0000 / 0xffff.
            match i % 5 {
                0 => data.fill(0xff),
                1 => data[..2].copy_from_slice(&[0, 0]),
                _ => {}
            }
            let at = 2 * rng.below(len / 2);
            let old_csum = !ref_sum(data);
            let old_word = u16::from_be_bytes([data[at], data[at + 1]]);
            let new_word = match i % 7 {
                0 => 0,
                1 => 0xffff,
                _ => rng.next_u16(),
            };
            data[at..at + 2].copy_from_slice(&new_word.to_be_bytes());
            if data.iter().all(|&b| b == 0) {
                // The one documented exception (see `update_u16`).
                assert_eq!(update_u16(old_csum, old_word, new_word), 0);
                continue;
            }
            assert_eq!(update_u16(old_csum, old_word, new_word), !ref_sum(data));
        }
    }
}
