//! Launching work on EAL lcores, and the TSC.

use std::ffi::{c_int, c_void};
use std::fmt;

/// Why a closure could not be started on an lcore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// The lcore is not enabled in the EAL's core list, or it is the main lcore.
    NotAWorker(u32),
    /// The lcore is still running an earlier job.
    Busy(u32),
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::NotAWorker(lcore) => {
                write!(f, "lcore {lcore} is not an enabled worker lcore of the EAL")
            }
            LaunchError::Busy(lcore) => write!(f, "lcore {lcore} is busy"),
        }
    }
}

impl std::error::Error for LaunchError {}

type Job = Box<dyn FnOnce() + Send + 'static>;

unsafe extern "C" fn run_job(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the pointer produced by Box::into_raw in launch_on_lcore, handed to
    // exactly one lcore exactly once, so reclaiming the box here is the single owner.
    let job: Box<Job> = unsafe { Box::from_raw(arg.cast::<Job>()) };
    job();
    0
}

/// Runs `job` on worker lcore `lcore` (not the main lcore). Returns at once.
pub fn launch_on_lcore(lcore: u32, job: impl FnOnce() + Send + 'static) -> Result<(), LaunchError> {
    // SAFETY: plain queries of the EAL's lcore configuration.
    let (enabled, main) = unsafe {
        (
            dpdk_sys::rte_lcore_is_enabled(lcore) != 0,
            dpdk_sys::rte_get_main_lcore(),
        )
    };
    if !enabled || lcore == main {
        return Err(LaunchError::NotAWorker(lcore));
    }
    let job: Box<Job> = Box::new(Box::new(job));
    let arg = Box::into_raw(job).cast::<c_void>();
    // SAFETY: run_job matches lcore_function_t and takes ownership of `arg`; on failure the
    // job was not started, so we reclaim and drop the box ourselves.
    let ret = unsafe { dpdk_sys::rte_eal_remote_launch(Some(run_job), arg, lcore) };
    if ret != 0 {
        // SAFETY: the launch failed, so no lcore owns `arg`; it is still our Box.
        drop(unsafe { Box::from_raw(arg.cast::<Job>()) });
        return Err(LaunchError::Busy(lcore));
    }
    Ok(())
}

/// Waits until every worker lcore has finished its job.
pub fn wait_all_workers() {
    // SAFETY: called from the main lcore after launches; it only waits.
    unsafe { dpdk_sys::rte_eal_mp_wait_lcore() }
}

/// The EAL id of the calling lcore.
#[inline]
pub fn current_lcore() -> u32 {
    // SAFETY: reads a thread-local set by the EAL; valid on any thread.
    unsafe { dpdk_sys::rte_lcore_id() }
}

/// The time stamp counter, in cycles.
#[inline]
pub fn tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions.
    unsafe { dpdk_sys::rte_rdtsc() }
}

/// TSC cycles per second, as the EAL calibrated it.
pub fn tsc_hz() -> u64 {
    // SAFETY: valid after EAL init; before it returns 0, which callers treat as unknown.
    unsafe { dpdk_sys::rte_get_tsc_hz() }
}
