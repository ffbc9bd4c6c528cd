//! Hints about the fast path's memory: cache prefetch for burst-staged lookups, and huge pages
//! for the large lookup tables.

/// Asks the CPU to bring the cache line holding `value` into L1 without waiting for it, so a
/// later read of it does not stall. A hint only: it never faults and changes no state.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the pointer comes from a live reference, and PREFETCHT0 neither reads the
    // value into a register nor faults on any address; SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the 2 MiB-aligned part of `table`'s allocation (its whole
/// capacity, so later growth in place is covered) with transparent huge pages, when the system
/// allows them for advised memory (Debian's default). A table of tens of megabytes read at
/// random addresses (the IPv4 FIB's first level is 64 MiB) otherwise takes a TLB miss and a
/// page walk on nearly every lookup; DPDK's own tables avoid that by living in hugepage
/// memory. Pages not yet written are then faulted in as huge pages. A hint only: failure
/// changes nothing but speed.
// A `Vec`, not a slice: the capacity beyond the length is part of the allocation too.
#[allow(clippy::ptr_arg)]
pub fn advise_huge_pages<T>(table: &Vec<T>) {
    let start = table.as_ptr() as usize;
    let end = start + table.capacity() * std::mem::size_of::<T>();
    let aligned_start = start.next_multiple_of(HUGE_PAGE);
    let aligned_end = end - end % HUGE_PAGE;
    if aligned_end <= aligned_start {
        return;
    }
    // SAFETY: the range lies inside `table`'s allocation; MADV_HUGEPAGE changes only how
    // the kernel backs those pages, never their contents or mapping, so the Vec stays valid.
    unsafe {
        libc::madvise(
            aligned_start as *mut libc::c_void,
            aligned_end - aligned_start,
            libc::MADV_HUGEPAGE,
        );
    }
}
