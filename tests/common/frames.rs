//! Frame builders for end-to-end tests, written from the RFC layouts and independent of the
//! switch's own wire code, with a plain reference checksum.

#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr};

pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];

/// RFC 1071 checksum, folded and complemented.
pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        sum += (u32::from(pair[0]) << 8) | u32::from(*pair.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ethernet frame, optionally 802.1Q-tagged, padded to 60 bytes.
pub fn ethernet(dst: Mac, src: Mac, vlan: Option<u16>, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(64 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if let Some(vid) = vlan {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f.resize(f.len().max(60), 0);
    f
}

/// IPv4/UDP packet (no Ethernet) with valid IPv4 and UDP checksums.
pub fn ipv4_udp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, ttl, 17, 0, 0];
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut udp = Vec::new();
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    pseudo.extend_from_slice(&udp);
    let c = match checksum(&pseudo) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&udp);
    ip
}

/// IPv6/UDP packet (no Ethernet) with a valid UDP checksum.
pub fn ipv6_udp(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let mut udp = Vec::new();
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&(udp_len as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    pseudo.extend_from_slice(&udp);
    let c = match checksum(&pseudo) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&(udp_len as u16).to_be_bytes());
    ip.push(17);
    ip.push(hop_limit);
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&udp);
    ip
}

/// ARP for Ethernet/IPv4 (RFC 826): operation 1 request, 2 reply.
pub fn arp(
    operation: u16,
    sender_mac: Mac,
    sender_ip: Ipv4Addr,
    target_mac: Mac,
    target_ip: Ipv4Addr,
) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&operation.to_be_bytes());
    a.extend_from_slice(&sender_mac);
    a.extend_from_slice(&sender_ip.octets());
    a.extend_from_slice(&target_mac);
    a.extend_from_slice(&target_ip.octets());
    a
}

/// What routing must do to an Ethernet frame carrying IPv4 at offset `l3`: new MACs, TTL - 1,
/// checksum recomputed from scratch.
pub fn routed_v4(frame: &[u8], l3: usize, dst: Mac, src: Mac) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[0..6].copy_from_slice(&dst);
    out[6..12].copy_from_slice(&src);
    out[l3 + 8] -= 1;
    out[l3 + 10] = 0;
    out[l3 + 11] = 0;
    let header_len = usize::from(out[l3] & 0x0f) * 4;
    let c = checksum(&out[l3..l3 + header_len]);
    out[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    out
}

/// Inserts an 802.1Q tag after the MACs.
pub fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&0x8100u16.to_be_bytes());
    out.extend_from_slice(&vid.to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// Removes the 802.1Q tag after the MACs.
pub fn untagged(frame: &[u8]) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&frame[16..]);
    out
}
