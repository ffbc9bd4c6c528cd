//! Seeded 32-bit flow hash over an IPv4 or IPv6 5-tuple, for ECMP bucket selection and flowlet
//! table indexing.
//!
//! The hash is MurmurHash3 x86_32 (Austin Appleby, public domain) over a fixed serialisation
//! of the key into little-endian 32-bit words:
//!
//! | family | words |
//! |---|---|
//! | IPv4 | `src`, `dst`, `sport << 16 \| dport`, `proto` (16 bytes) |
//! | IPv6 | `src[0..4]` … `src[12..16]`, `dst[0..4]` … `dst[12..16]`, `sport << 16 \| dport`, `flow_label << 8 \| proto` (40 bytes) |
//!
//! Addresses are taken as bytes in network order, so the value does not depend on the host's
//! endianness, and is the same as `murmur3_x86_32(serialisation, seed)` from any other
//! implementation: traces and replays hash identically everywhere. MurmurHash3 was chosen
//! because it is small, has published test vectors, and its finaliser (`fmix32`) avalanches
//! fully; every word goes through a multiply-rotate-multiply before it is combined, so
//! structured keys (consecutive ports or addresses, the usual case for RoCE queue pairs) still
//! spread evenly over the low bits used to index power-of-two tables.
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

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// One MurmurHash3 body round.
#[inline]
fn round(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// MurmurHash3's finaliser: every input bit affects every output bit.
#[inline]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[inline]
fn word(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Hashes `key` with `seed` (MurmurHash3 x86_32 over the serialisation in the module docs).
/// Deterministic across runs and machines; never allocates. Always inlined: callers build
/// the key from packet bytes, and a key passed through memory cost a store-forwarding stall.
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
            let mut h = seed;
            h = round(h, u32::from_le_bytes(src));
            h = round(h, u32::from_le_bytes(dst));
            h = round(h, (u32::from(sport) << 16) | u32::from(dport));
            h = round(h, u32::from(proto));
            fmix32(h ^ 16)
        }
        FlowKey::V6 {
            src,
            dst,
            flow_label,
            proto,
            sport,
            dport,
        } => {
            let mut h = seed;
            for i in (0..16).step_by(4) {
                h = round(h, word(&src, i));
            }
            for i in (0..16).step_by(4) {
                h = round(h, word(&dst, i));
            }
            h = round(h, (u32::from(sport) << 16) | u32::from(dport));
            h = round(h, ((flow_label & FLOW_LABEL_MASK) << 8) | u32::from(proto));
            fmix32(h ^ 40)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook MurmurHash3 x86_32 over bytes, checked against published vectors below; the
    /// reference the word-wise `flow_hash` must agree with.
    fn murmur3_ref(data: &[u8], seed: u32) -> u32 {
        let mut h = seed;
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            k = k.wrapping_mul(C1);
            k = k.rotate_left(15);
            k = k.wrapping_mul(C2);
            h ^= k;
            h = h.rotate_left(13);
            h = h.wrapping_mul(5).wrapping_add(0xe654_6b64);
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let mut k = 0u32;
            for (i, &b) in tail.iter().enumerate() {
                k |= u32::from(b) << (8 * i);
            }
            k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
            h ^= k;
        }
        h ^= data.len() as u32;
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^ (h >> 16)
    }

    fn serialise(key: &FlowKey) -> Vec<u8> {
        let mut v = Vec::new();
        match *key {
            FlowKey::V4 {
                src,
                dst,
                proto,
                sport,
                dport,
            } => {
                v.extend_from_slice(&src);
                v.extend_from_slice(&dst);
                v.extend_from_slice(&((u32::from(sport) << 16) | u32::from(dport)).to_le_bytes());
                v.extend_from_slice(&u32::from(proto).to_le_bytes());
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
                v.extend_from_slice(&((u32::from(sport) << 16) | u32::from(dport)).to_le_bytes());
                let w = ((flow_label & 0xF_FFFF) << 8) | u32::from(proto);
                v.extend_from_slice(&w.to_le_bytes());
            }
        }
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
    fn reference_matches_published_vectors() {
        // Test vectors published with MurmurHash3 ports (e.g. the Wikipedia article's table).
        assert_eq!(murmur3_ref(b"", 0), 0);
        assert_eq!(murmur3_ref(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_ref(b"", 0xffff_ffff), 0x81F1_6F39);
        assert_eq!(murmur3_ref(&[0, 0, 0, 0], 0), 0x2362_F9DE);
        assert_eq!(murmur3_ref(b"aaaa", 0x9747_b28c), 0x5A97_808A);
        assert_eq!(murmur3_ref(b"Hello, world!", 0x9747_b28c), 0x2488_4CBA);
        assert_eq!(
            murmur3_ref(b"The quick brown fox jumps over the lazy dog", 0x9747_b28c),
            0x2FA8_26CD
        );
    }

    #[test]
    fn equals_murmur3_of_the_documented_serialisation() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..2000 {
            let seed = rng.next() as u32;
            for key in [rng.v4(), rng.v6()] {
                assert_eq!(
                    flow_hash(&key, seed),
                    murmur3_ref(&serialise(&key), seed),
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
        // An all-zero IPv4 key and an all-zero IPv6 key differ (the length is mixed in).
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
