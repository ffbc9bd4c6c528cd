//! The per-port scheduler: strict-priority queues first (higher TC wins), then deficit
//! weighted round robin (Shreedhar and Varghese) among the DWRR queues, one frame at a time.
//! Each visit of a queue adds its weight (bytes) to its deficit; it sends while its head frame
//! fits in the deficit; an emptied queue forgets its deficit.

use super::{Sched, TC_COUNT};

#[derive(Debug, Clone)]
pub struct PortScheduler {
    /// Strict TCs, highest first.
    strict: Vec<u8>,
    /// Quantum in bytes for DWRR TCs, 0 for strict ones.
    quantum: [u64; TC_COUNT],
    deficit: [u64; TC_COUNT],
    /// The DWRR queue whose turn it is (its quantum for this turn is already added).
    current: Option<u8>,
}

impl PortScheduler {
    pub fn new(scheds: &[Sched; TC_COUNT]) -> PortScheduler {
        let mut strict: Vec<u8> = (0..TC_COUNT as u8)
            .filter(|&tc| scheds[usize::from(tc)] == Sched::Strict)
            .collect();
        strict.reverse();
        let mut quantum = [0u64; TC_COUNT];
        for (tc, sched) in scheds.iter().enumerate() {
            if let Sched::Dwrr { weight } = sched {
                quantum[tc] = u64::from((*weight).max(1));
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

    /// Picks the TC whose head frame goes next. `heads[tc]` is the head frame's length when the
    /// queue may send now (non-empty and not paused).
    #[inline]
    pub fn choose(&mut self, heads: &[Option<u32>; TC_COUNT]) -> Option<u8> {
        for &tc in &self.strict {
            if heads[usize::from(tc)].is_some() {
                return Some(tc);
            }
        }
        self.choose_dwrr(heads)
    }

    fn choose_dwrr(&mut self, heads: &[Option<u32>; TC_COUNT]) -> Option<u8> {
        let quantum = self.quantum;
        let eligible = |tc: usize| quantum[tc] > 0 && heads[tc].is_some();
        if !(0..TC_COUNT).any(eligible) {
            return None;
        }
        if let Some(tc) = self.current
            && let Some(tc) = self.try_send(tc, heads)
        {
            return Some(tc);
        }
        // Visit the others in cyclic TC order; after one fruitless cycle, skip the rounds in
        // which nobody could send (each would only add a quantum to every deficit).
        let start = self.current.map_or(0, |c| usize::from(c) + 1);
        for pass in 0..2 {
            for step in 0..TC_COUNT {
                let tc = (start + step) % TC_COUNT;
                if !eligible(tc) {
                    continue;
                }
                self.deficit[tc] += self.quantum[tc];
                self.current = Some(tc as u8);
                if let Some(tc) = self.try_send(tc as u8, heads) {
                    return Some(tc);
                }
            }
            if pass == 0 {
                let rounds = (0..TC_COUNT)
                    .filter(|&tc| eligible(tc))
                    .map(|tc| {
                        let head = u64::from(heads[tc].unwrap_or(0));
                        (head - self.deficit[tc]).div_ceil(self.quantum[tc])
                    })
                    .min()
                    .unwrap_or(1);
                for tc in (0..TC_COUNT).filter(|&tc| eligible(tc)) {
                    self.deficit[tc] += rounds.saturating_sub(1) * self.quantum[tc];
                }
            }
        }
        unreachable!("after skipping idle rounds some queue's deficit covers its head")
    }

    #[inline]
    fn try_send(&mut self, tc: u8, heads: &[Option<u32>; TC_COUNT]) -> Option<u8> {
        let index = usize::from(tc);
        let head = u64::from(heads[index]?);
        if head <= self.deficit[index] {
            self.deficit[index] -= head;
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

    /// Always-backlogged queues with fixed frame sizes: bytes served per TC.
    fn serve(sched: &mut PortScheduler, sizes: [Option<u32>; TC_COUNT], frames: usize) -> [u64; 8] {
        let mut bytes = [0u64; TC_COUNT];
        for _ in 0..frames {
            let tc = sched.choose(&sizes).expect("backlogged");
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
        assert_eq!(sched.choose(&heads), Some(6));
        heads[6] = None;
        assert_eq!(sched.choose(&heads), Some(5));
        heads[5] = None;
        let tc = sched.choose(&heads).unwrap();
        assert!(tc != 5 && tc != 6);
    }

    #[test]
    fn empty_and_paused_queues_are_skipped() {
        let mut sched = PortScheduler::new(&dwrr([1500; TC_COUNT]));
        assert_eq!(sched.choose(&[None; TC_COUNT]), None);
        let mut heads = [None; TC_COUNT];
        heads[3] = Some(60);
        for _ in 0..100 {
            assert_eq!(sched.choose(&heads), Some(3));
        }
    }

    #[test]
    fn an_emptied_queue_earns_no_credit_while_idle() {
        // TC0 idles while TC1 sends; when TC0 returns it does not get a burst of saved credit.
        let mut sched = PortScheduler::new(&dwrr([1500, 1500, 1, 1, 1, 1, 1, 1]));
        let mut heads = [None; TC_COUNT];
        heads[0] = Some(100);
        sched.choose(&heads);
        sched.queue_emptied(0);
        heads[0] = None;
        heads[1] = Some(1500);
        for _ in 0..10 {
            assert_eq!(sched.choose(&heads), Some(1));
        }
        heads[0] = Some(1500);
        let order: Vec<u8> = (0..6).map(|_| sched.choose(&heads).unwrap()).collect();
        assert_eq!(order.iter().filter(|&&t| t == 0).count(), 3, "{order:?}");
    }
}
