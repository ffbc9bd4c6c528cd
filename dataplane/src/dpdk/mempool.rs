//! Packet buffer pools.

use super::DpdkError;
use std::ffi::CString;
use std::ptr::NonNull;

/// A pool of packet mbufs (`rte_pktmbuf_pool_create`). Freed on drop; drop it only after every
/// port using it is closed and every mbuf returned.
#[derive(Debug)]
pub struct Mempool {
    raw: NonNull<dpdk_sys::rte_mempool>,
    size: u32,
}

// SAFETY: an rte_mempool is designed for concurrent use from many lcores (lock-free ring plus
// per-lcore caches); we only hand out the pointer to DPDK calls that are thread-safe.
unsafe impl Send for Mempool {}
// SAFETY: as above; shared references only call DPDK's thread-safe pool functions.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `size` mbufs with `data_room` bytes each (headroom included) and a
    /// per-lcore cache of `cache` mbufs, on the caller's NUMA socket.
    pub fn new(name: &str, size: u32, cache: u32, data_room: u16) -> Result<Mempool, DpdkError> {
        let c_name = CString::new(name)
            .map_err(|_| DpdkError::new("rte_pktmbuf_pool_create", name, libc::EINVAL))?;
        // SAFETY: c_name is a valid NUL-terminated string for the duration of the call; the
        // other arguments are plain integers; SOCKET_ID_ANY (-1) is accepted.
        let raw = unsafe {
            dpdk_sys::rte_pktmbuf_pool_create(c_name.as_ptr(), size, cache, 0, data_room, -1)
        };
        let raw = NonNull::new(raw)
            .ok_or_else(|| DpdkError::from_rte_errno("rte_pktmbuf_pool_create", name))?;
        Ok(Mempool { raw, size })
    }

    /// Number of mbufs the pool was created with.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Free mbufs, per-lcore caches included. Costs a walk over all lcore caches: call it
    /// only when a port is idle, never per packet.
    pub fn available(&self) -> u32 {
        // SAFETY: raw is a live pool (owned by self); the call only reads counters.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    pub(crate) fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.raw.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: we own the pool; the engine drops it after the ports using it are closed.
        unsafe { dpdk_sys::rte_mempool_free(self.raw.as_ptr()) }
    }
}
