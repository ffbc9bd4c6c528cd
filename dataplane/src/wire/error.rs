//! The one error type of the wire views.

use core::fmt;

/// Why a packet could not be parsed, or a header could not be built.
///
/// The parse variants double as the dataplane's drop reasons for malformed input, so they are
/// specific enough to tell a truncated capture from a lying length field, and [`Error::as_str`]
/// gives each a stable name for counters and logs. Names are part of the metrics interface:
/// rename a variant if you must, never its string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Error {
    /// The buffer ends before a header does, or before the length a header announces
    /// (IPv4 total length, IPv6 payload length, UDP length, TCP data offset). Linux counts the
    /// latter as truncated packets too.
    Truncated,
    /// The IP version nibble does not match the header being parsed.
    BadVersion,
    /// A header-length field is below the header's minimum (IPv4 IHL < 5, TCP data offset < 5).
    BadHeaderLength,
    /// The IPv4 total length is smaller than the header length it must contain.
    BadTotalLength,
    /// A checksum was verified and is wrong. Views never verify on their own; `Repr::parse`
    /// and explicit `verify_checksum` callers do.
    BadChecksum,
    /// An IPv6 extension header's length runs past the packet, or a Hop-by-Hop header is not
    /// the first one.
    BadExtensionHeader,
    /// More IPv6 extension headers than [`crate::wire::ipv6::MAX_EXTENSION_HEADERS`]; bounding
    /// the walk bounds the per-packet cost of hostile header chains.
    TooManyExtensionHeaders,
    /// More than two stacked VLAN tags.
    TooManyVlanTags,
    /// A field has a value the protocol forbids (UDP length < 8, zero-length ND option, ARP
    /// address lengths that contradict its hardware type, VLAN tags in the wrong order, ...).
    Malformed,
    /// Well formed but not handled here (ARP for other than Ethernet/IPv4, IPv4 fragments in
    /// `Ipv4Repr`, ICMPv6 types other than NS/NA in the ND view).
    Unsupported,
    /// An `emit` target buffer is too small for what it was asked to build.
    BufferTooSmall,
}

impl Error {
    /// Every variant, in declaration order; `ALL[e as usize] == e`, so a counter array can be
    /// indexed by `e as usize` and named with [`Error::as_str`].
    pub const ALL: [Error; 11] = [
        Error::Truncated,
        Error::BadVersion,
        Error::BadHeaderLength,
        Error::BadTotalLength,
        Error::BadChecksum,
        Error::BadExtensionHeader,
        Error::TooManyExtensionHeaders,
        Error::TooManyVlanTags,
        Error::Malformed,
        Error::Unsupported,
        Error::BufferTooSmall,
    ];

    /// A stable snake_case name, usable as a counter or drop-reason name.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::BadVersion => "bad_version",
            Error::BadHeaderLength => "bad_header_length",
            Error::BadTotalLength => "bad_total_length",
            Error::BadChecksum => "bad_checksum",
            Error::BadExtensionHeader => "bad_extension_header",
            Error::TooManyExtensionHeaders => "too_many_extension_headers",
            Error::TooManyVlanTags => "too_many_vlan_tags",
            Error::Malformed => "malformed",
            Error::Unsupported => "unsupported",
            Error::BufferTooSmall => "buffer_too_small",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case_and_indexable() {
        for (i, e) in Error::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i, "ALL must follow declaration order");
            let name = e.as_str();
            assert!(!name.is_empty());
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert_eq!(e.to_string(), name);
            for other in &Error::ALL[i + 1..] {
                assert_ne!(name, other.as_str());
            }
        }
    }
}
