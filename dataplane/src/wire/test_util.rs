//! Test-only helpers: a deterministic PRNG and a reference checksum that shares no code with
//! the implementation under test.

/// xorshift64 (Marsaglia): tiny, deterministic, good enough to vary test inputs.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // Zero is a fixed point of xorshift.
        XorShift(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn next_u16(&mut self) -> u16 {
        (self.next_u64() >> 32) as u16
    }

    pub fn next_u8(&mut self) -> u8 {
        (self.next_u64() >> 40) as u8
    }

    /// Uniform enough in `0..n` for test purposes; `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next_u8();
        }
    }
}

/// Textbook RFC 1071 sum: one 16-bit word at a time, end-around carry after every addition.
pub fn ref_sum(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    let mut i = 0;
    while i < data.len() {
        let hi = u32::from(data[i]) << 8;
        let lo = if i + 1 < data.len() {
            u32::from(data[i + 1])
        } else {
            0
        };
        acc += hi | lo;
        if acc > 0xffff {
            acc -= 0xffff;
        }
        i += 2;
    }
    acc as u16
}
