//! The ironclos control plane: configuration, the `ironclos` command, reports, and the
//! trace tools used by the demo, the benchmarks and the tests. It never touches packets on
//! the forwarding path; that is `dataplane`'s job.

#![forbid(unsafe_code)]

pub mod api;
pub mod config;
pub mod ctl;
pub mod ecmp_config;
pub mod metrics;
pub mod p4ctl;
pub mod pcap;
pub mod qos_config;
pub mod reload;
pub mod report;
pub mod resolve;
pub mod schedule;
pub mod server;
pub mod tracegen;
