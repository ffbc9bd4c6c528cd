//! Safe types over DPDK: the EAL, mempools, mbufs, ethdev ports, lcores and the TSC, and the
//! CPU instructions DPDK's build assumes.
//!
//! This is the only module of `dataplane` allowed to hold `unsafe`. Every block says why it
//! is sound. Types here are thin: the engine above decides what to do with packets.

mod cpu;
pub mod cred;
mod eal;
mod hints;
mod lcore;
mod mbuf;
mod mempool;
mod port;
mod signal;

#[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
pub use cpu::crc32c_u64;
pub use eal::{Eal, RxTimestamp};
pub use hints::{advise_huge_pages, prefetch};
pub use lcore::{LaunchError, current_lcore, launch_on_lcore, tsc, tsc_hz, wait_all_workers};
pub use mbuf::{MAX_BURST, Mbuf, MbufBurst, PacketMut, PacketRef};
pub use mempool::Mempool;
pub use port::{LinkStatus, MtuOutcome, Port, PortConfig, PortStats, RxQueue, TxQueue};
pub use signal::{StopSignal, install_stop_signal_handlers};

use std::ffi::CStr;
use std::fmt;

/// A failed DPDK call: which operation, on what, and DPDK's own explanation of the errno.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpdkError {
    pub operation: &'static str,
    pub subject: String,
    pub errno: i32,
}

impl DpdkError {
    pub(crate) fn new(operation: &'static str, subject: impl Into<String>, errno: i32) -> Self {
        Self {
            operation,
            subject: subject.into(),
            errno: errno.abs(),
        }
    }

    /// For calls that report failure through `rte_errno` rather than their return value.
    pub(crate) fn from_rte_errno(operation: &'static str, subject: impl Into<String>) -> Self {
        // SAFETY: reads the calling thread's rte_errno through a C getter; no arguments.
        let errno = unsafe { dpdk_sys::ironclos_rte_errno() };
        Self::new(operation, subject, errno)
    }

    /// DPDK's text for the errno (covers both libc and DPDK-specific codes). Some failures
    /// set no errno (rte_eal_init's "Cannot init config" when another process holds the
    /// file prefix): their reason is in DPDK's own log lines, not in "Success".
    pub fn reason(&self) -> String {
        if self.errno == 0 {
            return "DPDK gave no error code; its log lines above say why".to_owned();
        }
        // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated
        // string that stays valid until the next call on this thread; we copy it at once.
        let text = unsafe { CStr::from_ptr(dpdk_sys::rte_strerror(self.errno)) };
        text.to_string_lossy().into_owned()
    }
}

impl fmt::Display for DpdkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subject.is_empty() {
            write!(
                f,
                "{} failed: {} (errno {})",
                self.operation,
                self.reason(),
                self.errno
            )
        } else {
            write!(
                f,
                "{} failed for {}: {} (errno {})",
                self.operation,
                self.subject,
                self.reason(),
                self.errno
            )
        }
    }
}

impl std::error::Error for DpdkError {}

#[cfg(test)]
mod tests {
    use super::DpdkError;

    #[test]
    fn a_failure_without_an_error_code_points_at_dpdks_log_not_at_success() {
        let e = DpdkError::new("rte_eal_init", "the EAL arguments", 0);
        let text = e.to_string();
        assert!(!text.contains("Success"), "{text}");
        assert!(text.contains("log lines above"), "{text}");
    }
}
