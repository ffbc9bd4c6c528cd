//! Packet buffers: an owned `Mbuf` (freed on drop) and `MbufBurst`, a fixed array that RX
//! fills and TX drains without per-packet calls into DPDK.

use super::Mempool;
use super::eal::rx_timestamp_field;
use dpdk_sys::rte_mbuf;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// The largest burst the engine moves at once.
pub const MAX_BURST: usize = 64;

/// One packet buffer, owned: it goes back to its pool when dropped unless handed to TX.
#[derive(Debug)]
pub struct Mbuf {
    raw: NonNull<rte_mbuf>,
}

// SAFETY: an mbuf is exclusively owned by whoever holds the pointer; moving that ownership to
// another lcore (e.g. through a ring) is how DPDK is meant to be used.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// A new single-segment packet holding a copy of `bytes`, or `None` if the pool is empty
    /// or the bytes do not fit one mbuf.
    pub fn from_bytes(pool: &Mempool, bytes: &[u8]) -> Option<Mbuf> {
        let len = u16::try_from(bytes.len()).ok()?;
        // SAFETY: alloc returns an exclusively owned mbuf or NULL.
        let raw = NonNull::new(unsafe { dpdk_sys::rte_pktmbuf_alloc(pool.as_ptr()) })?;
        let mbuf = Mbuf { raw };
        // SAFETY: append checks the tailroom and returns NULL when it is short; otherwise the
        // returned pointer is the start of `len` writable bytes inside this mbuf's buffer.
        let dst = unsafe { dpdk_sys::rte_pktmbuf_append(raw.as_ptr(), len) };
        if dst.is_null() {
            return None; // mbuf freed by drop
        }
        // SAFETY: `dst` has room for `len` bytes (checked above) and cannot overlap `bytes`,
        // which lives outside DPDK memory owned by this fresh mbuf.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), bytes.len()) };
        Some(mbuf)
    }

    /// Views this packet.
    #[inline]
    pub fn packet(&self) -> PacketRef<'_> {
        PacketRef {
            raw: self.raw.as_ptr(),
            _owner: std::marker::PhantomData,
        }
    }

    /// Views this packet mutably.
    #[inline]
    pub fn packet_mut(&mut self) -> PacketMut<'_> {
        PacketMut {
            raw: self.raw.as_ptr(),
            _owner: std::marker::PhantomData,
        }
    }

    pub(crate) fn into_raw(self) -> *mut rte_mbuf {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf (it came from a pool and was never handed to TX).
        unsafe { dpdk_sys::rte_pktmbuf_free(self.raw.as_ptr()) }
    }
}

/// A read-only view of one packet inside an `Mbuf` or a `MbufBurst`.
#[derive(Debug, Clone, Copy)]
pub struct PacketRef<'a> {
    raw: *const rte_mbuf,
    _owner: std::marker::PhantomData<&'a rte_mbuf>,
}

/// A mutable view of one packet.
#[derive(Debug)]
pub struct PacketMut<'a> {
    raw: *mut rte_mbuf,
    _owner: std::marker::PhantomData<&'a mut rte_mbuf>,
}

macro_rules! read_accessors {
    () => {
        /// A deep copy of the whole packet in a new mbuf from `pool` (flooding), or `None`
        /// when the pool is empty.
        #[inline]
        pub fn copy_into(&self, pool: &Mempool) -> Option<Mbuf> {
            // SAFETY: the source mbuf is live and borrowed; rte_pktmbuf_copy reads it and
            // returns a new, exclusively owned mbuf from `pool` or NULL.
            let raw = unsafe { dpdk_sys::rte_pktmbuf_copy(self.raw, pool.as_ptr(), 0, u32::MAX) };
            NonNull::new(raw).map(|raw| Mbuf { raw })
        }

        /// The first segment's bytes (ironclos configures ports for single-segment packets).
        #[inline]
        pub fn data(&self) -> &[u8] {
            // SAFETY: the view borrows a live, exclusively owned mbuf; buf_addr + data_off is
            // the start of data_len initialised bytes inside the mbuf's buffer (DPDK's mtod).
            unsafe {
                let m = &*self.raw;
                std::slice::from_raw_parts(
                    m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                    usize::from(m.data_len),
                )
            }
        }

        /// Length of the whole packet (all segments).
        #[inline]
        pub fn len(&self) -> usize {
            // SAFETY: reading a plain field of a live mbuf we borrow.
            unsafe { (*self.raw).pkt_len as usize }
        }

        /// True for a zero-length packet.
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Number of segments; more than one means a chained (jumbo or scattered) packet.
        #[inline]
        pub fn segments(&self) -> u16 {
            // SAFETY: reading a plain field of a live mbuf we borrow.
            unsafe { (*self.raw).nb_segs }
        }

        /// The DPDK port the packet was received on.
        #[inline]
        pub fn rx_port(&self) -> u16 {
            // SAFETY: reading a plain field of a live mbuf we borrow.
            unsafe { (*self.raw).port }
        }

        /// The receive timestamp a PMD stored (pcap: microseconds since the epoch), if set.
        #[inline]
        pub fn rx_timestamp(&self) -> Option<u64> {
            let field = rx_timestamp_field()?;
            // SAFETY: the dynfield offset was registered with the EAL and lies inside the mbuf
            // structure, 8-byte aligned, holding a u64; we read it only when the PMD set the
            // flag that says it is valid.
            unsafe {
                if (*self.raw).ol_flags & field.flag == 0 {
                    return None;
                }
                Some(self.raw.cast::<u8>().add(field.offset).cast::<u64>().read())
            }
        }
    };
}

impl<'a> PacketRef<'a> {
    read_accessors!();

    /// The first segment's bytes for as long as the burst that owns the mbuf is borrowed.
    #[inline]
    pub fn into_data(self) -> &'a [u8] {
        // SAFETY: as `data`; the view is consumed and its shared borrow of the mbuf for 'a
        // passes to the returned slice.
        unsafe {
            let m = &*self.raw;
            std::slice::from_raw_parts(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        }
    }
}

impl<'a> PacketMut<'a> {
    read_accessors!();

    /// The first segment's bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `data`, and the view holds the only mutable borrow of the mbuf.
        unsafe {
            let m = &*self.raw;
            std::slice::from_raw_parts_mut(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        }
    }

    /// The first segment's bytes, writable for as long as the view's borrow of the mbuf.
    #[inline]
    pub fn into_data_mut(self) -> &'a mut [u8] {
        // SAFETY: as `data_mut`; the view is consumed and held the mbuf's only mutable borrow
        // for 'a, which the returned slice now holds instead.
        unsafe {
            let m = &*self.raw;
            std::slice::from_raw_parts_mut(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        }
    }

    /// The first segment's whole buffer (headroom, data and tailroom) and where the data
    /// starts and ends in it: the pipeline grows a frame into the headroom in place, or moves
    /// it toward the tailroom when the headroom is short, and the caller then applies the new
    /// window with [`Self::set_data_window`].
    #[inline]
    pub fn buffer_mut(&mut self) -> (&mut [u8], usize, usize) {
        // SAFETY: the view holds the only mutable borrow of a live mbuf; buf_addr is the start
        // of its buf_len-byte buffer and data_off + data_len <= buf_len. ironclos never
        // attaches external or indirect buffers (flooding deep-copies), so the buffer is this
        // mbuf's alone. Headroom and tailroom are mapped pool memory (zeroed by the OS when
        // mapped, or stale packet bytes since): initialised u8s.
        unsafe {
            let m = &*self.raw;
            let start = usize::from(m.data_off);
            (
                std::slice::from_raw_parts_mut(m.buf_addr.cast::<u8>(), usize::from(m.buf_len)),
                start,
                start + usize::from(m.data_len),
            )
        }
    }

    /// Makes `buffer[start..end]` (offsets in [`Self::buffer_mut`]'s buffer) the packet's
    /// data: data_off, data_len and pkt_len. Only for a single-segment packet; false, and
    /// nothing changed, for a chained one or a window that is not inside the buffer.
    #[inline]
    pub fn set_data_window(&mut self, start: usize, end: usize) -> bool {
        // SAFETY: the view holds the only mutable borrow of a live mbuf, so plain writes to
        // its fields race with nothing. Every byte of the buffer is initialised (see
        // `buffer_mut`), so any window inside buf_len is valid data for `data`/`data_mut`;
        // the checks keep it inside, and a single segment's pkt_len is its data_len.
        unsafe {
            let m = &mut *self.raw;
            if m.nb_segs != 1 || start > end || end > usize::from(m.buf_len) {
                return false;
            }
            // buf_len is a u16, so both fit.
            m.data_off = start as u16;
            m.data_len = (end - start) as u16;
            m.pkt_len = (end - start) as u32;
        }
        true
    }

    /// Adds `len` bytes in front of the data (from the headroom) and returns them, or `None`
    /// when the headroom is too small.
    #[inline]
    pub fn prepend(&mut self, len: u16) -> Option<&mut [u8]> {
        // SAFETY: rte_pktmbuf_prepend checks the headroom and returns NULL when it is short;
        // otherwise the returned pointer is the start of `len` bytes inside the buffer.
        unsafe {
            let start = dpdk_sys::rte_pktmbuf_prepend(self.raw, len);
            if start.is_null() {
                return None;
            }
            Some(std::slice::from_raw_parts_mut(
                start.cast::<u8>(),
                usize::from(len),
            ))
        }
    }

    /// Removes `len` bytes from the front. False (nothing changed) if the packet is shorter.
    #[inline]
    pub fn adj(&mut self, len: u16) -> bool {
        // SAFETY: rte_pktmbuf_adj checks the length against the first segment and returns
        // NULL without changing anything when it is too long.
        unsafe { !dpdk_sys::rte_pktmbuf_adj(self.raw, len).is_null() }
    }

    /// Inserts an 802.1Q tag (TPID 0x8100, PCP 0) with `vid` after the MAC addresses: in the
    /// headroom (the MACs move 4 bytes to the front) or, when the headroom is short (an SRv6
    /// encapsulation took it), in the tailroom (what follows the MACs moves 4 bytes to the
    /// back). False (nothing changed) for a frame shorter than two MACs or without 4 free
    /// bytes in the buffer.
    #[inline]
    pub fn push_vlan(&mut self, vid: u16) -> bool {
        if self.data().len() < 12 {
            return false;
        }
        if self.prepend(4).is_some() {
            self.data_mut().copy_within(4..16, 0);
        } else if !self.push_vlan_into_tailroom() {
            return false;
        }
        let data = self.data_mut();
        data[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        data[14..16].copy_from_slice(&(vid & 0x0fff).to_be_bytes());
        true
    }

    /// Makes room for a tag after the MACs by moving the rest of the frame 4 bytes back.
    #[cold]
    #[inline(never)]
    fn push_vlan_into_tailroom(&mut self) -> bool {
        if self.segments() != 1 {
            return false;
        }
        let (buffer, start, end) = self.buffer_mut();
        if end + 4 > buffer.len() {
            return false;
        }
        buffer.copy_within(start + 12..end, start + 16);
        self.set_data_window(start, end + 4)
    }

    /// Removes the 802.1Q tag after the MAC addresses. False (nothing changed) if the frame
    /// is too short to hold one.
    #[inline]
    pub fn pop_vlan(&mut self) -> bool {
        if self.data().len() < 18 {
            return false;
        }
        self.data_mut().copy_within(0..12, 4);
        self.adj(4)
    }

    /// Removes `len` bytes from the end. False (nothing changed) if the packet is shorter.
    #[inline]
    pub fn trim(&mut self, len: u16) -> bool {
        // SAFETY: rte_pktmbuf_trim checks the length against the last segment and returns -1
        // without changing anything when it is too long.
        unsafe { dpdk_sys::rte_pktmbuf_trim(self.raw, len) == 0 }
    }
}

/// Up to `MAX_BURST` owned mbufs. RX appends, TX takes from the front; whatever is left when
/// the burst is cleared or dropped goes back to its pool in one bulk call.
pub struct MbufBurst {
    mbufs: [*mut rte_mbuf; MAX_BURST],
    len: usize,
}

// SAFETY: the burst exclusively owns the mbufs below `len` (as `Mbuf` does); moving it to
// another lcore moves that ownership, which is how DPDK hands packets between lcores.
unsafe impl Send for MbufBurst {}

impl Default for MbufBurst {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MbufBurst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MbufBurst").field("len", &self.len).finish()
    }
}

impl MbufBurst {
    pub fn new() -> Self {
        Self {
            mbufs: [std::ptr::null_mut(); MAX_BURST],
            len: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Views packet `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<PacketRef<'_>> {
        (index < self.len).then(|| PacketRef {
            raw: self.mbufs[index],
            _owner: std::marker::PhantomData,
        })
    }

    /// The bytes of every packet, in order, written into `scratch`, with an empty slice for
    /// a packet in more than one segment (which the pipeline drops): what a pass over the
    /// whole burst reads, without filling the unused rest of an array of `MAX_BURST` slices
    /// first.
    #[inline]
    pub fn whole_frames<'a>(
        &'a self,
        scratch: &'a mut [MaybeUninit<&'a [u8]>; MAX_BURST],
    ) -> &'a [&'a [u8]] {
        let len = self.len.min(MAX_BURST);
        for (slot, &raw) in scratch.iter_mut().zip(&self.mbufs[..len]) {
            let packet = PacketRef {
                raw,
                _owner: std::marker::PhantomData,
            };
            let single = packet.segments() == 1;
            let data = packet.into_data();
            slot.write(if single { data } else { &data[..0] });
        }
        // SAFETY: the loop initialised the first `len` slots (`self.mbufs` has `MAX_BURST`,
        // so `zip` stops at `len`), and `MaybeUninit<T>` has `T`'s layout; the slices borrow
        // the burst for 'a, as does the result.
        unsafe { std::slice::from_raw_parts(scratch.as_ptr().cast::<&'a [u8]>(), len) }
    }

    /// Frees every packet of more than one segment, keeping the others in order; returns how
    /// many it freed. A device hands over a frame longer than its mbufs as a chain (`net_pcap`
    /// builds an inconsistent one past 65535 bytes, which its own TX then reads out of
    /// bounds): io mode, which forwards without looking, keeps to whole frames like the
    /// switch pipeline.
    #[inline]
    pub fn drop_chained(&mut self) -> usize {
        let len = self.len.min(MAX_BURST);
        let mut kept = 0;
        for index in 0..len {
            let raw = self.mbufs[index];
            // SAFETY: slots below `len` hold owned, live mbufs (see `drain`).
            if unsafe { (*raw).nb_segs } == 1 {
                self.mbufs[kept] = raw;
                kept += 1;
            } else {
                // SAFETY: the burst owns this mbuf and forgets it here (`len` is cut below
                // and `kept` never reaches past it again), so it is freed exactly once.
                unsafe { dpdk_sys::rte_pktmbuf_free(raw) };
            }
        }
        self.len = kept;
        len - kept
    }

    /// Views packet `index` mutably.
    #[inline]
    pub fn get_mut(&mut self, index: usize) -> Option<PacketMut<'_>> {
        (index < self.len).then(|| PacketMut {
            raw: self.mbufs[index],
            _owner: std::marker::PhantomData,
        })
    }

    /// Appends an owned mbuf; gives it back if the burst is full.
    #[inline]
    pub fn push(&mut self, mbuf: Mbuf) -> Result<(), Mbuf> {
        // The length is read once: `self.len += 1` after the store would read it back, and
        // the compiler cannot tell that the store did not change it.
        let len = self.len;
        let Some(slot) = self.mbufs.get_mut(len) else {
            return Err(mbuf);
        };
        *slot = mbuf.into_raw();
        self.len = len + 1;
        Ok(())
    }

    /// Takes every packet out as owned mbufs, in order.
    pub fn drain(&mut self) -> impl Iterator<Item = Mbuf> + '_ {
        let len = std::mem::replace(&mut self.len, 0);
        self.mbufs[..len].iter().map(|&raw| {
            debug_assert!(!raw.is_null());
            // SAFETY: the burst only ever stores non-null pointers below `len`: mbufs that
            // `rte_eth_rx_burst` returned (it counts only those it wrote) or that `push` took
            // from an `Mbuf`, whose pointer is a `NonNull`.
            let raw = unsafe { NonNull::new_unchecked(raw) };
            Mbuf { raw }
        })
    }

    /// Returns every packet to its pool.
    #[inline]
    pub fn clear(&mut self) {
        if self.len > 0 {
            // SAFETY: the first `len` slots are owned mbufs; free_bulk returns each to its
            // own pool and tolerates mixed pools; we then forget them by resetting len.
            unsafe {
                dpdk_sys::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr(), self.len as u32);
            }
            self.len = 0;
        }
    }

    /// Room for `rx_burst` to append into: (pointer to the first free slot, free count).
    #[inline]
    pub(crate) fn spare(&mut self) -> (*mut *mut rte_mbuf, usize) {
        // The pointer stays inside the array (len <= MAX_BURST).
        (self.mbufs[self.len..].as_mut_ptr(), MAX_BURST - self.len)
    }

    /// Records that `count` slots after `len` were filled by DPDK.
    #[inline]
    pub(crate) fn commit(&mut self, count: usize) {
        debug_assert!(self.len + count <= MAX_BURST);
        self.len += count;
    }

    /// The owned pointers, for handing to `tx_burst`.
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut *mut rte_mbuf {
        self.mbufs.as_mut_ptr()
    }

    /// Forgets the first `count` packets (TX took them) and moves the rest to the front.
    #[inline]
    pub(crate) fn consume_front(&mut self, count: usize) {
        debug_assert!(count <= self.len);
        // The usual TX burst is taken whole: no call to memmove to move nothing.
        if count < self.len {
            self.mbufs.copy_within(count..self.len, 0);
        }
        self.len -= count;
    }
}

impl Drop for MbufBurst {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst of `n` distinct placeholder pointers (never dereferenced: `forget` empties the
    /// burst before it drops).
    fn placeholders(n: usize) -> MbufBurst {
        let mut burst = MbufBurst::new();
        for i in 0..n {
            burst.mbufs[i] = std::ptr::without_provenance_mut(0x1000 * (i + 1));
        }
        burst.commit(n);
        burst
    }

    fn forget(mut burst: MbufBurst) -> Vec<usize> {
        let left = burst.mbufs[..burst.len].iter().map(|p| p.addr()).collect();
        burst.len = 0;
        left
    }

    #[test]
    fn consume_front_keeps_what_tx_did_not_take_in_order() {
        // TX took all, some, or none of a burst: what it did not take stays, first in line.
        for (len, taken) in [(5, 5), (5, 2), (5, 0), (MAX_BURST, MAX_BURST - 1), (1, 1)] {
            let mut burst = placeholders(len);
            burst.consume_front(taken);
            let want: Vec<usize> = (taken..len).map(|i| 0x1000 * (i + 1)).collect();
            assert_eq!(forget(burst), want, "{taken} of {len} taken");
        }
    }
}
