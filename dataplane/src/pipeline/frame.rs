//! A frame inside a larger buffer, so the pipeline can change its length at the front (SRv6
//! encapsulation takes headroom, decapsulation and SRH removal give it back) without copying
//! the payload in the common case. It dereferences to the frame's bytes, so code that only
//! rewrites in place treats it as a `&mut [u8]`.

use std::ops::{Deref, DerefMut};

/// `buf[start..end]` is the frame; `buf[..start]` is headroom the pipeline may grow into and
/// `buf[end..]` tailroom: when the headroom is short, [`Frame::grow_front`] moves the frame
/// toward the end of the buffer (so the end may grow). The owner of the buffer applies the
/// final window ([`Frame::start`], [`Frame::end`]) afterwards.
#[derive(Debug)]
pub struct Frame<'a> {
    buf: &'a mut [u8],
    start: usize,
    end: usize,
}

impl<'a> Frame<'a> {
    /// The frame `buf[start..end]`, or `None` if that is not a range of `buf`.
    pub fn new(buf: &'a mut [u8], start: usize, end: usize) -> Option<Frame<'a>> {
        (start <= end && end <= buf.len()).then_some(Frame { buf, start, end })
    }

    /// All of `buf`, without headroom.
    pub fn whole(buf: &'a mut [u8]) -> Frame<'a> {
        let end = buf.len();
        Frame { buf, start: 0, end }
    }

    /// Where the frame starts in the buffer.
    #[inline]
    pub fn start(&self) -> usize {
        self.start
    }

    /// Where the frame ends in the buffer.
    #[inline]
    pub fn end(&self) -> usize {
        self.end
    }

    /// Bytes free in front of the frame.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.start
    }

    /// Bytes free after the frame.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.buf.len() - self.end
    }

    /// Extends the frame `len` bytes to the front (their content is whatever the buffer
    /// held). Takes the headroom when it is long enough; otherwise, if headroom and tailroom
    /// together suffice, first moves the frame's bytes to the very end of the buffer (one
    /// copy), which leaves all the room that is left in front of it (for a VLAN tag pushed
    /// later). False, and nothing changed, when the buffer cannot hold `len` more bytes.
    #[inline]
    pub fn grow_front(&mut self, len: usize) -> bool {
        if len <= self.start {
            self.start -= len;
            return true;
        }
        self.move_to_end_and_grow(len)
    }

    /// [`Self::grow_front`] when the headroom is short.
    #[cold]
    #[inline(never)]
    fn move_to_end_and_grow(&mut self, len: usize) -> bool {
        let (frame_len, total) = (self.end - self.start, self.buf.len());
        if len > total - frame_len {
            return false;
        }
        let new_start = total - frame_len;
        self.buf.copy_within(self.start..self.end, new_start);
        self.start = new_start - len;
        self.end = total;
        true
    }

    /// Drops `len` bytes from the front; false, and nothing changed, if the frame is shorter.
    #[inline]
    pub fn shrink_front(&mut self, len: usize) -> bool {
        if len > self.end - self.start {
            return false;
        }
        self.start += len;
        true
    }

    /// Shortens the frame to `len` bytes (no-op if it is not longer).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.end = self.end.min(self.start + len);
    }
}

impl Deref for Frame<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
}

impl DerefMut for Frame<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_moves_within_the_buffer_only() {
        let mut buf: Vec<u8> = (0..10).collect();
        assert!(Frame::new(&mut buf, 5, 4).is_none());
        assert!(Frame::new(&mut buf, 0, 11).is_none());
        let mut frame = Frame::new(&mut buf, 4, 10).unwrap();
        assert_eq!(&frame[..], &[4, 5, 6, 7, 8, 9]);
        assert!(!frame.grow_front(5));
        assert!(frame.grow_front(4));
        assert_eq!(frame.len(), 10);
        assert!(frame.shrink_front(7));
        assert!(!frame.shrink_front(4));
        assert_eq!(&frame[..], &[7, 8, 9]);
        frame.truncate(2);
        frame.truncate(5);
        assert_eq!(
            (&frame[..], frame.start(), frame.end()),
            (&[7u8, 8][..], 7, 9)
        );
        frame[0] = 70;
        assert_eq!(buf[7], 70);
    }

    #[test]
    fn growth_beyond_the_headroom_moves_the_frame_to_the_end_of_the_buffer() {
        // Headroom 2, frame [2..6) = 2 3 4 5, tailroom 4.
        let mut buf: Vec<u8> = (0..10).collect();
        let mut frame = Frame::new(&mut buf, 2, 6).unwrap();
        assert_eq!((frame.headroom(), frame.tailroom()), (2, 4));
        assert!(frame.grow_front(5));
        // The content moved to buf[6..10) and 5 bytes were added in front of it.
        assert_eq!((frame.start(), frame.end()), (1, 10));
        assert_eq!(&frame[5..], &[2, 3, 4, 5]);
        assert_eq!(frame.len(), 9);
        assert_eq!((frame.headroom(), frame.tailroom()), (1, 0));
        frame[0] = 99;
        assert_eq!(buf[1], 99);
        assert_eq!(&buf[6..], &[2, 3, 4, 5]);
    }

    #[test]
    fn growth_beyond_the_whole_buffer_fails_and_changes_nothing() {
        let mut buf: Vec<u8> = (0..10).collect();
        let mut frame = Frame::new(&mut buf, 2, 6).unwrap();
        // 2 + 4 bytes free: 7 does not fit.
        assert!(!frame.grow_front(7));
        assert_eq!((frame.start(), frame.end()), (2, 6));
        assert_eq!(&frame[..], &[2, 3, 4, 5]);
        // Exactly the free room fits, and the frame then fills the buffer.
        assert!(frame.grow_front(6));
        assert_eq!((frame.start(), frame.end()), (0, 10));
        assert_eq!(&frame[6..], &[2, 3, 4, 5]);
        assert!(!frame.grow_front(1));
        assert_eq!((frame.start(), frame.end()), (0, 10));
        assert_eq!(&buf[6..], &[2, 3, 4, 5]);
        // A whole buffer has neither headroom nor tailroom.
        let mut buf: Vec<u8> = (0..4).collect();
        let mut frame = Frame::whole(&mut buf);
        assert!(!frame.grow_front(1));
        assert_eq!(&frame[..], &[0, 1, 2, 3]);
    }
}
