//! Raw bindings to DPDK 22.11 as installed by Debian (`libdpdk`), generated at build time.
//!
//! Static-inline DPDK functions (`rte_eth_rx_burst`, `rte_pktmbuf_alloc`, ...) are reachable
//! through C wrappers that bindgen generates and `build.rs` compiles; their Rust names are the
//! DPDK names. This crate holds no logic: the safe layer is `dataplane::dpdk`.

#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all, clippy::undocumented_unsafe_blocks)]
#![allow(unsafe_op_in_unsafe_fn)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
