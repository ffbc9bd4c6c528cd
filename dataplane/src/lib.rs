//! The ironclos packet path. Everything here is safe Rust except `dpdk`, the one module that
//! wraps DPDK's EAL, mempools, mbufs and ethdev ports behind safe types.

#![deny(unsafe_code)]

pub mod clock;
pub mod counters;
pub mod ctl;
#[allow(unsafe_code)]
pub mod dpdk;
pub mod engine;
pub mod fragment;
pub mod pipeline;
pub mod qos;
pub mod slowpath;
pub mod tables;
pub mod wire;
