//! Seeded 32-bit flow hash over an IPv4 or IPv6 5-tuple, for ECMP bucket selection and flowlet
//! table indexing.
//!
//! The hash is the CRC-32C (Castagnoli) register run over a fixed serialisation of the key,
//! started at the seed, then MurmurHash3's finaliser `fmix32`:
//!
//! ```text
//! flow_hash(key, seed) = fmix32(crc32c_register(seed, serialise(key)))
//! ```
//!
//! `crc32c_register` is the reflected CRC-32C shift register (polynomial 0x1EDC6F41, reflected
//! 0x82F63B78) with no initial or final inversion: the standard CRC-32C of a message is
//! `!crc32c_register(!0, message)`. The serialisation is the key's fields in network byte
//! order, as on the wire, then one word that tells the families apart:
//!
//! | family | bytes |
//! |---|---|
//! | IPv4 | `src` (4), `dst` (4), `sport` (2), `dport` (2), `proto` (1), then `4 << 20` as 3 little-endian bytes (16 bytes) |
//! | IPv6 | `src` (16), `dst` (16), `sport` (2), `dport` (2), `proto` (1), then `flow_label \| 6 << 20` as 3 little-endian bytes (40 bytes) |
//!
//! Why this construction: x86-64 has CRC-32C in hardware (SSE4.2, which Debian's DPDK already
//! requires), so the 16-byte IPv4 key costs two instructions and the IPv6 key five, where
//! MurmurHash3's word rounds cost seven each. CRC is linear (flipping an input bit always
//! flips the same output bits), so it alone would map structured keys (consecutive ports or
//! addresses, the usual case for RoCE queue pairs) to structured values; `fmix32` after it
//! makes every input bit affect every output bit with probability one half, so such keys
//! spread evenly over the low or the high bits used to index power-of-two tables. Other
//! machines compute the same register in software (a 256-entry table), so traces and replays
//! hash identically everywhere.
//!
//! The hash is direction-specific: `(a, b, sport, dport)` and `(b, a, dport, sport)` hash
//! differently. ECMP only needs a flow to stay on one path per direction; the two directions of
//! a connection are routed independently anyway.
//!
//! The IPv6 flow label is always part of the input; a zero label (hosts that do not set it)
//! simply contributes nothing beyond the other fields. Only its 20 defined bits are used.
//! Each switch should use its own seed, so that two tiers of a Clos fabric do not make the same
//! choice for the same flow (hash polarisation).

/// The fields of a flow that the hash covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKey {
    /// An IPv4 flow.
    V4 {
        /// Source address, network byte order.
        src: [u8; 4],
        /// Destination address, network byte order.
        dst: [u8; 4],
        /// IP protocol number.
        proto: u8,
        /// Source port (0 for protocols without ports).
        sport: u16,
        /// Destination port (0 for protocols without ports).
        dport: u16,
    },
    /// An IPv6 flow.
    V6 {
        /// Source address, network byte order.
        src: [u8; 16],
        /// Destination address, network byte order.
        dst: [u8; 16],
        /// Flow label; only the low 20 bits are used.
        flow_label: u32,
        /// Next header (the upper-layer protocol after extension headers).
        proto: u8,
        /// Source port (0 for protocols without ports).
        sport: u16,
        /// Destination port (0 for protocols without ports).
        dport: u16,
    },
}

/// Mask of the 20 bits an IPv6 flow label has.
pub const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;

/// Low bits of the family word (bytes 13..16 of the serialisation, little-endian from bit 40):
/// the flow label, then the IP version from bit 20.
const FAMILY_SHIFT: u32 = 20;

/// Reflected CRC-32C polynomial.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse4.2"))))]
const CRC32C_REFLECTED: u32 = 0x82F6_3B78;

/// The CRC-32C register update for each byte value (software fallback).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse4.2"))))]
static CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ CRC32C_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// Runs the CRC-32C register `crc` over the eight bytes of `word` in little-endian order.
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
#[inline(always)]
fn crc32c_word(crc: u32, word: u64) -> u32 {
    crate::dpdk::crc32c_u64(crc, word)
}

/// Runs the CRC-32C register `crc` over the eight bytes of `word` in little-endian order.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.2")))]
#[inline(always)]
fn crc32c_word(crc: u32, word: u64) -> u32 {
    crc32c_word_by_table(crc, word)
}

/// `crc32c_word` without the instruction: one table step per byte.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse4.2"))))]
#[inline(always)]
fn crc32c_word_by_table(mut crc: u32, word: u64) -> u32 {
    for byte in word.to_le_bytes() {
        crc = CRC32C_TABLE[usize::from(crc as u8 ^ byte)] ^ (crc >> 8);
    }
    crc
}

/// MurmurHash3's finaliser: every input bit affects every output bit.
#[inline(always)]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The serialisation's last eight bytes: the ports (as on the wire) and the protocol, then the
/// flow label (0 for IPv4) and the IP version.
#[inline(always)]
fn tail_word(ports: [u8; 4], proto: u8, flow_label: u32, version: u32) -> u64 {
    let family = (flow_label & FLOW_LABEL_MASK) | (version << FAMILY_SHIFT);
    u64::from(u32::from_le_bytes(ports)) | (u64::from(proto) << 32) | (u64::from(family) << 40)
}

/// The ports of a key in wire order: source then destination, each big-endian.
#[inline(always)]
fn port_bytes(sport: u16, dport: u16) -> [u8; 4] {
    let ([s0, s1], [d0, d1]) = (sport.to_be_bytes(), dport.to_be_bytes());
    [s0, s1, d0, d1]
}

/// Eight bytes of an address, in wire order.
#[inline(always)]
fn address_word(bytes: &[u8; 16], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Hashes `key` with `seed` (the construction in the module docs). Deterministic across runs
/// and machines; never allocates. Always inlined: callers build the key from packet bytes,
/// and a key passed through memory cost a store-forwarding stall.
#[inline(always)]
#[must_use]
pub fn flow_hash(key: &FlowKey, seed: u32) -> u32 {
    match *key {
        FlowKey::V4 {
            src,
            dst,
            proto,
            sport,
            dport,
        } => {
            let [s0, s1, s2, s3] = src;
            let [d0, d1, d2, d3] = dst;
            let addresses = [s0, s1, s2, s3, d0, d1, d2, d3];
            flow_hash_v4_wire(addresses, proto, port_bytes(sport, dport), seed)
        }
        FlowKey::V6 {
            src,
            dst,
            flow_label,
            proto,
            sport,
            dport,
        } => {
            let ports = port_bytes(sport, dport);
            flow_hash_v6_wire(&src, &dst, flow_label, proto, ports, seed)
        }
    }
}

/// [`flow_hash`] of an IPv4 key given as packet bytes: `addresses` the source and destination
/// (the header's bytes 12..20), `ports` the four bytes after the header (source then
/// destination port, network order) or zeros. The packet path calls this, so that the ports
/// go from the packet into the hash without a round trip through host order.
#[inline(always)]
#[must_use]
pub fn flow_hash_v4_wire(addresses: [u8; 8], proto: u8, ports: [u8; 4], seed: u32) -> u32 {
    let h = crc32c_word(seed, u64::from_le_bytes(addresses));
    fmix32(crc32c_word(h, tail_word(ports, proto, 0, 4)))
}

/// [`flow_hash`] of an IPv6 key given as packet bytes (as [`flow_hash_v4_wire`]); only the
/// flow label's 20 low bits count.
#[inline(always)]
#[must_use]
pub fn flow_hash_v6_wire(
    src: &[u8; 16],
    dst: &[u8; 16],
    flow_label: u32,
    proto: u8,
    ports: [u8; 4],
    seed: u32,
) -> u32 {
    let mut h = crc32c_word(seed, address_word(src, 0));
    h = crc32c_word(h, address_word(src, 8));
    h = crc32c_word(h, address_word(dst, 0));
    h = crc32c_word(h, address_word(dst, 8));
    fmix32(crc32c_word(h, tail_word(ports, proto, flow_label, 6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CRC-32C register, one bit at a time from the polynomial's definition: the reference
    /// both the instruction and the table must agree with.
    fn crc32c_register_ref(mut crc: u32, data: &[u8]) -> u32 {
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    /// The standard CRC-32C of `data` (initial and final inversion), for published vectors.
    fn crc32c_ref(data: &[u8]) -> u32 {
        !crc32c_register_ref(!0, data)
    }

    /// MurmurHash3's finaliser as its reference code writes it.
    fn fmix32_ref(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^= h >> 16;
        h
    }

    /// The serialisation of the module docs' table, built byte by byte.
    fn serialise(key: &FlowKey) -> Vec<u8> {
        let mut v = Vec::new();
        let (sport, dport, proto, family) = match *key {
            FlowKey::V4 {
                src,
                dst,
                proto,
                sport,
                dport,
            } => {
                v.extend_from_slice(&src);
                v.extend_from_slice(&dst);
                (sport, dport, proto, 4 << 20)
            }
            FlowKey::V6 {
                src,
                dst,
                flow_label,
                proto,
                sport,
                dport,
            } => {
                v.extend_from_slice(&src);
                v.extend_from_slice(&dst);
                (sport, dport, proto, (flow_label & 0xF_FFFF) | 6 << 20)
            }
        };
        v.extend_from_slice(&sport.to_be_bytes());
        v.extend_from_slice(&dport.to_be_bytes());
        v.push(proto);
        v.extend_from_slice(&u32::to_le_bytes(family)[..3]);
        v
    }

    /// xorshift64*.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn bytes<const N: usize>(&mut self) -> [u8; N] {
            std::array::from_fn(|_| self.next() as u8)
        }
        fn v4(&mut self) -> FlowKey {
            FlowKey::V4 {
                src: self.bytes(),
                dst: self.bytes(),
                proto: self.next() as u8,
                sport: self.next() as u16,
                dport: self.next() as u16,
            }
        }
        fn v6(&mut self) -> FlowKey {
            FlowKey::V6 {
                src: self.bytes(),
                dst: self.bytes(),
                flow_label: self.next() as u32 & FLOW_LABEL_MASK,
                proto: self.next() as u8,
                sport: self.next() as u16,
                dport: self.next() as u16,
            }
        }
    }

    /// Every input bit of the key, as (field name, a copy of `key` with that bit flipped).
    fn flips(key: &FlowKey) -> Vec<(&'static str, FlowKey)> {
        let mut out = Vec::new();
        match *key {
            FlowKey::V4 {
                src,
                dst,
                proto,
                sport,
                dport,
            } => {
                for b in 0..32 {
                    let mut s = src;
                    s[b / 8] ^= 1 << (b % 8);
                    out.push((
                        "src",
                        FlowKey::V4 {
                            src: s,
                            dst,
                            proto,
                            sport,
                            dport,
                        },
                    ));
                    let mut d = dst;
                    d[b / 8] ^= 1 << (b % 8);
                    out.push((
                        "dst",
                        FlowKey::V4 {
                            src,
                            dst: d,
                            proto,
                            sport,
                            dport,
                        },
                    ));
                }
                for b in 0..8 {
                    let proto = proto ^ (1 << b);
                    out.push((
                        "proto",
                        FlowKey::V4 {
                            src,
                            dst,
                            proto,
                            sport,
                            dport,
                        },
                    ));
                }
                for b in 0..16 {
                    let s = sport ^ (1 << b);
                    out.push((
                        "sport",
                        FlowKey::V4 {
                            src,
                            dst,
                            proto,
                            sport: s,
                            dport,
                        },
                    ));
                    let d = dport ^ (1 << b);
                    out.push((
                        "dport",
                        FlowKey::V4 {
                            src,
                            dst,
                            proto,
                            sport,
                            dport: d,
                        },
                    ));
                }
            }
            FlowKey::V6 {
                src,
                dst,
                flow_label,
                proto,
                sport,
                dport,
            } => {
                let k = |src, dst, flow_label, proto, sport, dport| FlowKey::V6 {
                    src,
                    dst,
                    flow_label,
                    proto,
                    sport,
                    dport,
                };
                for b in 0..128 {
                    let mut s = src;
                    s[b / 8] ^= 1 << (b % 8);
                    out.push(("src", k(s, dst, flow_label, proto, sport, dport)));
                    let mut d = dst;
                    d[b / 8] ^= 1 << (b % 8);
                    out.push(("dst", k(src, d, flow_label, proto, sport, dport)));
                }
                for b in 0..20 {
                    let fl = flow_label ^ (1 << b);
                    out.push(("flow_label", k(src, dst, fl, proto, sport, dport)));
                }
                for b in 0..8 {
                    let p = proto ^ (1 << b);
                    out.push(("proto", k(src, dst, flow_label, p, sport, dport)));
                }
                for b in 0..16 {
                    let s = sport ^ (1 << b);
                    out.push(("sport", k(src, dst, flow_label, proto, s, dport)));
                    let d = dport ^ (1 << b);
                    out.push(("dport", k(src, dst, flow_label, proto, sport, d)));
                }
            }
        }
        out
    }

    #[test]
    fn references_match_published_vectors() {
        // CRC-32C: the catalogue check value, and RFC 3720 appendix B.4.
        assert_eq!(crc32c_ref(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_ref(&[0; 32]), 0x8A91_36AA);
        assert_eq!(crc32c_ref(&[0xff; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c_ref(&ascending), 0x46DD_794E);
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c_ref(&descending), 0x113F_DB5C);
        // fmix32 is all MurmurHash3 x86_32 does to an empty input: its published vectors.
        assert_eq!(fmix32_ref(0), 0);
        assert_eq!(fmix32_ref(1), 0x514E_28B7);
        assert_eq!(fmix32_ref(0xffff_ffff), 0x81F1_6F39);
    }

    #[test]
    fn instruction_and_table_agree_with_the_bitwise_register() {
        let mut rng = Rng(0x0c2c_32c0);
        for _ in 0..20_000 {
            let (crc, word) = (rng.next() as u32, rng.next());
            let want = crc32c_register_ref(crc, &word.to_le_bytes());
            assert_eq!(crc32c_word(crc, word), want, "{crc:#x} {word:#x}");
            assert_eq!(crc32c_word_by_table(crc, word), want, "{crc:#x} {word:#x}");
        }
    }

    #[test]
    fn equals_the_documented_construction() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..2000 {
            let seed = rng.next() as u32;
            for key in [rng.v4(), rng.v6()] {
                let bytes = serialise(&key);
                assert_eq!(
                    bytes.len(),
                    if matches!(key, FlowKey::V4 { .. }) {
                        16
                    } else {
                        40
                    }
                );
                assert_eq!(
                    flow_hash(&key, seed),
                    fmix32_ref(crc32c_register_ref(seed, &bytes)),
                    "{key:?}"
                );
            }
        }
    }

    #[test]
    fn deterministic() {
        let mut rng = Rng(7);
        for _ in 0..1000 {
            let key = rng.v6();
            let copy = key;
            assert_eq!(flow_hash(&key, 99), flow_hash(&copy, 99));
            let key = rng.v4();
            assert_eq!(flow_hash(&key, 99), flow_hash(&key, 99));
        }
    }

    #[test]
    fn seed_changes_output() {
        let mut rng = Rng(11);
        for _ in 0..1000 {
            for key in [rng.v4(), rng.v6()] {
                let (a, b) = (rng.next() as u32, rng.next() as u32);
                assert_ne!(a, b);
                assert_ne!(flow_hash(&key, a), flow_hash(&key, b), "{key:?}");
            }
        }
    }

    #[test]
    fn direction_specific_and_families_distinct() {
        let fwd = FlowKey::V4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            proto: 17,
            sport: 49152,
            dport: 4791,
        };
        let rev = FlowKey::V4 {
            src: [10, 0, 0, 2],
            dst: [10, 0, 0, 1],
            proto: 17,
            sport: 4791,
            dport: 49152,
        };
        assert_ne!(flow_hash(&fwd, 0), flow_hash(&rev, 0));
        // An all-zero IPv4 key and an all-zero IPv6 key differ (the IP version is mixed in).
        let z4 = FlowKey::V4 {
            src: [0; 4],
            dst: [0; 4],
            proto: 0,
            sport: 0,
            dport: 0,
        };
        let z6 = FlowKey::V6 {
            src: [0; 16],
            dst: [0; 16],
            flow_label: 0,
            proto: 0,
            sport: 0,
            dport: 0,
        };
        assert_ne!(flow_hash(&z4, 0), flow_hash(&z6, 0));
    }

    #[test]
    fn flow_label_bits_above_20_are_ignored() {
        let k = |flow_label| FlowKey::V6 {
            src: [1; 16],
            dst: [2; 16],
            flow_label,
            proto: 6,
            sport: 1,
            dport: 2,
        };
        assert_eq!(flow_hash(&k(0x12345), 5), flow_hash(&k(0xFFF1_2345), 5));
        assert_ne!(flow_hash(&k(0x12345), 5), flow_hash(&k(0x12344), 5));
    }

    #[test]
    fn every_single_bit_flip_changes_the_hash() {
        let mut rng = Rng(0xfeed);
        for _ in 0..50 {
            for key in [rng.v4(), rng.v6()] {
                let h = flow_hash(&key, 0x5eed);
                for (field, flipped) in flips(&key) {
                    assert_ne!(flow_hash(&flipped, 0x5eed), h, "flip in {field} of {key:?}");
                }
            }
        }
    }

    /// For each input bit, the mean number of output bits that flip over `n` random keys must
    /// be 16 ± 4 (a mean of n samples of Binomial(32, 1/2) has standard deviation 2.83/sqrt(n),
    /// so with n = 2000 the band is over 60 sigma wide for a good mixer; a field that is not
    /// mixed in at all scores 0 and one mixed only by a rotate scores about 1). Each (input bit,
    /// output bit) pair must also flip with probability 1/2 ± 0.1 (strict avalanche; 0.1 is
    /// 9 sigma at n = 2000, so only a real bias fails).
    fn check_avalanche(gen_key: &mut dyn FnMut(&mut Rng) -> FlowKey) {
        let n = 2000;
        let mut rng = Rng(0xa5a5_5a5a);
        let mut counts: Vec<(&'static str, [u32; 32])> = Vec::new();
        for _ in 0..n {
            let key = gen_key(&mut rng);
            let seed = rng.next() as u32;
            let h = flow_hash(&key, seed);
            let fl = flips(&key);
            if counts.is_empty() {
                counts = fl.iter().map(|(f, _)| (*f, [0; 32])).collect();
            }
            for (i, (_, k)) in fl.iter().enumerate() {
                let d = h ^ flow_hash(k, seed);
                for (o, c) in counts[i].1.iter_mut().enumerate() {
                    *c += (d >> o) & 1;
                }
            }
        }
        for (i, (field, c)) in counts.iter().enumerate() {
            let mean = f64::from(c.iter().sum::<u32>()) / f64::from(n);
            assert!(
                (12.0..=20.0).contains(&mean),
                "input bit {i} ({field}): mean {mean}"
            );
            for (o, &x) in c.iter().enumerate() {
                let p = f64::from(x) / f64::from(n);
                assert!(
                    (0.4..=0.6).contains(&p),
                    "input bit {i} ({field}) -> output {o}: {p}"
                );
            }
        }
    }

    #[test]
    fn avalanche_v4() {
        check_avalanche(&mut Rng::v4);
    }

    #[test]
    fn avalanche_v6() {
        check_avalanche(&mut Rng::v6);
    }

    /// Upper quantile of the chi-square distribution with `k` degrees of freedom at standard
    /// normal deviate `z` (Wilson–Hilferty: (X/k)^(1/3) is close to normal with mean
    /// 1 - 2/(9k) and variance 2/(9k); accurate to well under 1% at k = 63).
    fn chi2_quantile(k: f64, z: f64) -> f64 {
        let v = 2.0 / (9.0 * k);
        k * (1.0 - v + z * v.sqrt()).powi(3)
    }

    /// Chi-square statistic of `keys` hashed into 64 buckets, by the low and by the high six
    /// bits (tables index with either).
    fn chi2_64(keys: impl Iterator<Item = FlowKey>, seed: u32) -> (f64, f64) {
        let mut low = [0u32; 64];
        let mut high = [0u32; 64];
        let mut n = 0u32;
        for key in keys {
            let h = flow_hash(&key, seed);
            low[(h & 63) as usize] += 1;
            high[(h >> 26) as usize] += 1;
            n += 1;
        }
        let e = f64::from(n) / 64.0;
        let stat = |b: &[u32; 64]| b.iter().map(|&o| (f64::from(o) - e).powi(2) / e).sum();
        (stat(&low), stat(&high))
    }

    #[test]
    fn sequential_flows_fill_64_buckets_uniformly() {
        // 63 degrees of freedom; z = 3.719 is the 1e-4 tail on each side. The lower bound
        // matters as much as the upper: an identity-like hash over consecutive ports would put
        // exactly n/64 in every bucket and score ~0, which the test must reject.
        let hi = chi2_quantile(63.0, 3.719);
        let lo = chi2_quantile(63.0, -3.719);
        assert!(
            (110.0..118.0).contains(&hi) && (27.0..32.0).contains(&lo),
            "{lo} {hi}"
        );
        let n = 100_000u32;
        // RoCEv2: fixed addresses and destination port 4791, consecutive source ports.
        let roce = (0..n).map(|i| FlowKey::V4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 1, 1],
            proto: 17,
            sport: (i % 65536) as u16,
            dport: 4791 + (i / 65536) as u16,
        });
        // Consecutive source addresses.
        let hosts = (0..n).map(|i| FlowKey::V4 {
            src: (0x0a00_0000 + i).to_be_bytes(),
            dst: [10, 255, 0, 1],
            proto: 6,
            sport: 40000,
            dport: 80,
        });
        // IPv6: consecutive flow labels, and consecutive interface IDs.
        let labels = (0..n).map(|i| FlowKey::V6 {
            src: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            dst: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            flow_label: i,
            proto: 17,
            sport: 1000,
            dport: 4791,
        });
        let iids = (0..n).map(|i| {
            let mut src = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            src[12..].copy_from_slice(&i.to_be_bytes());
            FlowKey::V6 {
                src,
                dst: [0xfd; 16],
                flow_label: 0,
                proto: 6,
                sport: 1,
                dport: 2,
            }
        });
        for (name, (l, h)) in [
            ("roce", chi2_64(roce.clone(), 0)),
            ("roce seed", chi2_64(roce, 0xdead_beef)),
            ("hosts", chi2_64(hosts, 1)),
            ("labels", chi2_64(labels, 2)),
            ("iids", chi2_64(iids, 3)),
        ] {
            assert!(
                l > lo && l < hi,
                "{name}: low-bit chi2 {l} outside ({lo}, {hi})"
            );
            assert!(
                h > lo && h < hi,
                "{name}: high-bit chi2 {h} outside ({lo}, {hi})"
            );
        }
    }
}
