//! Forwarding tables: pure Rust, bounded, independent of DPDK.
//!
//! * [`Lpm4`], [`Lpm6`]: longest-prefix match for IPv4 (DIR-24-8) and IPv6 (DIR-24-8-…-8 for a
//!   FIB, DIR-16-8-…-8 for small tables),
//!   mapping prefixes to `u32` nexthop or ECMP-group indices (see [`lpm4`], [`lpm6`] and the
//!   private `lpm` module they share for the layout).
//! * [`SidTable`]: the my-SID table, an [`Lpm6`] that a handful of SIDs answer from a short
//!   list.

pub mod ecmp;
pub mod flowhash;
pub mod flowlet;
mod lpm;
pub mod lpm4;
pub mod lpm6;
pub mod mac;
pub mod neighbor;
pub mod sid_table;

pub use lpm::{LpmError, MAX_VALUE};
pub use lpm4::Lpm4;
pub use lpm6::Lpm6;
pub use sid_table::SidTable;
