//! The per-port scheduler: strict-priority queues first (higher TC wins), then deficit
//! weighted round robin (Shreedhar and Varghese) among the DWRR queues, one frame at a time.
//! Each visit of a queue adds its weight (bytes) to its deficit; it sends while its head frame
//! fits in the deficit; an emptied queue forgets its deficit.

use super::{Sched, TC_COUNT};

#[derive(Debug, Clone)]
pub struct PortScheduler {
    /// Bit n: TC n is strict.
    strict: u8,
    /// Quantum in bytes for DWRR TCs, 0 for strict ones.
    quantum: [u64; TC_COUNT],
    deficit: [u64; TC_COUNT],
    /// The DWRR queue whose turn it is (its quantum for this turn is already added).
    current: Option<u8>,
}

impl PortScheduler {
    pub fn new(scheds: &[Sched; TC_COUNT]) -> PortScheduler {
        let mut strict = 0u8;
        let mut quantum = [0u64; TC_COUNT];
        for (tc, sched) in scheds.iter().enumerate() {
            match sched {
                Sched::Strict => strict |= 1 << tc,
                Sched::Dwrr { weight } => quantum[tc] = u64::from((*weight).max(1)),
            }
        }
        PortScheduler {
            strict,
            quantum,
            deficit: [0; TC_COUNT],
            current: None,
        }
    }

    /// The queue an emptied TC leaves: DRR resets its deficit so idle time earns no credit.
    #[inline]
    pub fn queue_emptied(&mut self, tc: u8) {
        self.deficit[usize::from(tc)] = 0;
        if self.current == Some(tc) {
            self.current = None;
        }
    }

    /// Picks the TC whose head frame goes next among `eligible` (bit n: TC n may send now:
    /// non-empty, not paused); `head(tc)` is the length of that TC's head frame.
    #[inline]
    pub fn choose(&mut self, eligible: u8, head: impl Fn(usize) -> u32) -> Option<u8> {
        let strict = eligible & self.strict;
        if strict != 0 {
            return Some(7 - strict.leading_zeros() as u8);
        }
        self.choose_dwrr(eligible, head)
    }

    #[inline]
    fn choose_dwrr(&mut self, eligible: u8, head: impl Fn(usize) -> u32) -> Option<u8> {
        if eligible == 0 {
            return None;
        }
        if let Some(tc) = self.current
            && eligible & (1 << tc) != 0
            && let Some(tc) = self.try_send(tc, &head)
        {
            return Some(tc);
        }
        // Visit the others in cyclic TC order after the current one; after one fruitless
        // cycle, skip the rounds in which nobody could send (each would only add a quantum to
        // every deficit).
        let start = self
            .current
            .map_or(0, |c| (u32::from(c) + 1) % TC_COUNT as u32);
        let order = eligible.rotate_right(start);
        for pass in 0..2 {
            let mut rest = order;
            while rest != 0 {
                let tc = ((rest.trailing_zeros() + start) % TC_COUNT as u32) as u8;
                rest &= rest - 1;
                self.deficit[usize::from(tc)] += self.quantum[usize::from(tc)];
                self.current = Some(tc);
                if let Some(tc) = self.try_send(tc, &head) {
                    return Some(tc);
                }
            }
            if pass == 0 {
                let mut rounds = u64::MAX;
                let mut rest = eligible;
                while rest != 0 {
                    let tc = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    let need = u64::from(head(tc)) - self.deficit[tc];
                    rounds = rounds.min(need.div_ceil(self.quantum[tc]));
                }
                let mut rest = eligible;
                while rest != 0 {
                    let tc = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    self.deficit[tc] += rounds.saturating_sub(1) * self.quantum[tc];
                }
            }
        }
        unreachable!("after skipping idle rounds some queue's deficit covers its head")
    }

    #[inline]
    fn try_send(&mut self, tc: u8, head: &impl Fn(usize) -> u32) -> Option<u8> {
        let index = usize::from(tc);
        let len = u64::from(head(index));
        if len <= self.deficit[index] {
            self.deficit[index] -= len;
            Some(tc)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dwrr(weights: [u32; TC_COUNT]) -> [Sched; TC_COUNT] {
        weights.map(|weight| Sched::Dwrr { weight })
    }

    /// The scheduler's inputs from a per-TC array of head lengths.
    fn pick(sched: &mut PortScheduler, heads: &[Option<u32>; TC_COUNT]) -> Option<u8> {
        let eligible = (0..TC_COUNT).fold(0u8, |m, tc| m | (u8::from(heads[tc].is_some()) << tc));
        sched.choose(eligible, |tc| heads[tc].expect("eligible"))
    }

    /// Always-backlogged queues with fixed frame sizes: bytes served per TC.
    fn serve(sched: &mut PortScheduler, sizes: [Option<u32>; TC_COUNT], frames: usize) -> [u64; 8] {
        let mut bytes = [0u64; TC_COUNT];
        for _ in 0..frames {
            let tc = pick(sched, &sizes).expect("backlogged");
            bytes[usize::from(tc)] += u64::from(sizes[usize::from(tc)].unwrap());
        }
        bytes
    }

    #[test]
    fn dwrr_shares_bytes_by_weight_whatever_the_frame_sizes() {
        let mut sched = PortScheduler::new(&dwrr([1000, 3000, 100, 100, 100, 100, 100, 100]));
        let sizes = [Some(64), Some(1500), None, None, None, None, None, None];
        let bytes = serve(&mut sched, sizes, 200_000);
        let share = bytes[1] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.75).abs() < 0.01, "share {share}");
    }

    #[test]
    fn dwrr_with_weights_below_the_frame_size_still_progresses_fairly() {
        let mut sched = PortScheduler::new(&dwrr([10, 20, 1, 1, 1, 1, 1, 1]));
        let sizes = [Some(1500), Some(1500), None, None, None, None, None, None];
        let bytes = serve(&mut sched, sizes, 30_000);
        let ratio = bytes[1] as f64 / bytes[0] as f64;
        assert!((ratio - 2.0).abs() < 0.02, "ratio {ratio}");
    }

    #[test]
    fn strict_queues_go_first_highest_tc_first() {
        let mut scheds = dwrr([1500; TC_COUNT]);
        scheds[6] = Sched::Strict;
        scheds[5] = Sched::Strict;
        let mut sched = PortScheduler::new(&scheds);
        let mut heads = [Some(100u32); TC_COUNT];
        assert_eq!(pick(&mut sched, &heads), Some(6));
        heads[6] = None;
        assert_eq!(pick(&mut sched, &heads), Some(5));
        heads[5] = None;
        let tc = pick(&mut sched, &heads).unwrap();
        assert!(tc != 5 && tc != 6);
    }

    #[test]
    fn empty_and_paused_queues_are_skipped() {
        let mut sched = PortScheduler::new(&dwrr([1500; TC_COUNT]));
        assert_eq!(pick(&mut sched, &[None; TC_COUNT]), None);
        let mut heads = [None; TC_COUNT];
        heads[3] = Some(60);
        for _ in 0..100 {
            assert_eq!(pick(&mut sched, &heads), Some(3));
        }
    }

    #[test]
    fn an_emptied_queue_earns_no_credit_while_idle() {
        // TC0 idles while TC1 sends; when TC0 returns it does not get a burst of saved credit.
        let mut sched = PortScheduler::new(&dwrr([1500, 1500, 1, 1, 1, 1, 1, 1]));
        let mut heads = [None; TC_COUNT];
        heads[0] = Some(100);
        pick(&mut sched, &heads);
        sched.queue_emptied(0);
        heads[0] = None;
        heads[1] = Some(1500);
        for _ in 0..10 {
            assert_eq!(pick(&mut sched, &heads), Some(1));
        }
        heads[0] = Some(1500);
        let order: Vec<u8> = (0..6).map(|_| pick(&mut sched, &heads).unwrap()).collect();
        assert_eq!(order.iter().filter(|&&t| t == 0).count(), 3, "{order:?}");
    }
}
