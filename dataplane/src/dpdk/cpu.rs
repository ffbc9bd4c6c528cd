//! CPU instructions that DPDK's own build assumes (Debian builds it for `-march=corei7`, and
//! `.cargo/config.toml` builds ironclos for the same `x86-64-v2` set), for the fast path's
//! arithmetic.

/// Runs the CRC-32C (Castagnoli) register `crc` over the eight bytes of `word` in
/// little-endian order, without inversions: SSE4.2's `CRC32` instruction, as DPDK's
/// `rte_hash_crc_8byte` uses it.
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
#[inline(always)]
#[must_use]
pub fn crc32c_u64(crc: u32, word: u64) -> u32 {
    // SAFETY: the intrinsic only requires the CPU to have SSE4.2, and this function exists
    // only when the build targets it (cfg above); it reads and writes registers alone.
    let register = unsafe { core::arch::x86_64::_mm_crc32_u64(u64::from(crc), word) };
    // The instruction zero-extends its 32-bit result.
    register as u32
}
