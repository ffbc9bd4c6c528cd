//! A frame inside a larger buffer, so the pipeline can change its length at the front (SRv6
//! encapsulation takes headroom, decapsulation and SRH removal give it back) without copying
//! the payload. It dereferences to the frame's bytes, so code that only rewrites in place
//! treats it as a `&mut [u8]`.

use std::ops::{Deref, DerefMut};

/// `buf[start..end]` is the frame; `buf[..start]` is headroom the pipeline may grow into.
/// The end never grows: what follows the frame is not the pipeline's to use.
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

    /// Extends the frame `len` bytes to the front (their content is whatever the buffer
    /// held); false, and nothing changed, without that much headroom.
    #[inline]
    pub fn grow_front(&mut self, len: usize) -> bool {
        if len > self.start {
            return false;
        }
        self.start -= len;
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
}
