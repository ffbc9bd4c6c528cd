//! Definitions shared by IPv4 and IPv6: ECN codepoints and IP protocol numbers.

/// The ECN field (RFC 3168): the two low bits of the IPv4 TOS byte and IPv6 traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport: never marked, only dropped.
    NotEct = 0,
    /// ECN-capable transport, codepoint 1 (L4S uses it).
    Ect1 = 1,
    /// ECN-capable transport, codepoint 0 (classic ECN, DCTCP, DCQCN).
    Ect0 = 2,
    /// Congestion experienced.
    Ce = 3,
}

impl Ecn {
    /// Decodes the two low bits of `bits`; every value is a codepoint, so this cannot fail.
    #[inline]
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit codepoint.
    #[inline]
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// True for ECT(0) and ECT(1), the only codepoints a congested queue may turn into CE.
    #[inline]
    pub const fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// IP protocol / IPv6 next-header numbers (IANA "Assigned Internet Protocol Numbers").
pub mod protocol {
    /// IPv6 Hop-by-Hop Options.
    pub const HOP_BY_HOP: u8 = 0;
    /// ICMP for IPv4.
    pub const ICMP: u8 = 1;
    /// IPv4 encapsulation (IP-in-IP; SRv6 End.DT4 / H.Encaps of IPv4).
    pub const IPV4: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 encapsulation (SRv6 End.DT6 / H.Encaps of IPv6).
    pub const IPV6: u8 = 41;
    /// IPv6 Routing header (an SRH is routing type 4).
    pub const ROUTING: u8 = 43;
    /// IPv6 Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating Security Payload: opaque, ends the header walk.
    pub const ESP: u8 = 50;
    /// Authentication Header.
    pub const AH: u8 = 51;
    /// ICMP for IPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 No Next Header.
    pub const NO_NEXT_HEADER: u8 = 59;
    /// IPv6 Destination Options.
    pub const DESTINATION_OPTIONS: u8 = 60;
    /// Ethernet (SRv6 End.DX2 payloads, RFC 8986).
    pub const ETHERNET: u8 = 143;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_round_trips_and_masks() {
        for bits in 0..=255u8 {
            let ecn = Ecn::from_bits(bits);
            assert_eq!(ecn.bits(), bits & 3);
            assert_eq!(ecn.is_ect(), bits & 3 == 1 || bits & 3 == 2);
        }
    }
}
