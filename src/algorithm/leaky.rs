//! Leaky bucket as a queue (traffic shaping, like nginx `limit_req` with `burst`):
//! the bucket drains `leak` units per `period`; a request is admitted iff
//! `level + cost <= capacity` and is told to wait for the work queued ahead of it.
//! Stored as the instant the queue is drained (`level = (drained_at - now) / T`).

use std::num::NonZeroU64;

use super::schedule::{checked_rate, InstantLimiter, Schedule};
use super::{Outcome, Wait};

/// The leaky bucket's parameters, as checked by [`Leaky::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaky {
    capacity: NonZeroU64,
    leak: NonZeroU64,
    period_ns: NonZeroU64,
}

impl Leaky {
    /// `None` unless every parameter is at least 1 and `period_ns >= leak`
    /// (see [`checked_rate`]).
    pub fn new(capacity: u64, leak: u64, period_ns: u64) -> Option<Leaky> {
        let (leak, period_ns) = checked_rate(leak, period_ns)?;
        Some(Leaky {
            capacity: NonZeroU64::new(capacity)?,
            leak,
            period_ns,
        })
    }

    pub fn capacity(&self) -> u64 {
        self.capacity.get()
    }

    /// Units drained per period.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn leak(&self) -> u64 {
        self.leak.get()
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn period_ns(&self) -> u64 {
        self.period_ns.get()
    }
}

impl InstantLimiter for Leaky {
    fn schedule(&self) -> Schedule {
        Schedule::of(self.period_ns, self.leak, self.capacity)
    }

    fn idle_capacity(&self) -> u64 {
        self.capacity()
    }

    /// `drained_at` is the stored instant the queue is empty (`0` when absent).
    #[inline(always)]
    fn decide(&self, drained_at: u128, now: u128, cost: u64) -> Outcome<u128> {
        let step = self.schedule().step(drained_at, now, cost);
        let queued_ns = step.queued_ns;
        let mut out = step.outcome(self.capacity());
        if out.decision.allowed {
            // Admitted requests wait for the work queued ahead of them.
            out.decision.retry_after = Wait::After(queued_ns);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u128 = 1_000_000;
    const T0: u128 = 1_700_000_000_000 * MS;

    #[test]
    fn admitted_requests_wait_for_the_queue_ahead() {
        // Capacity 3, drains 2 per second (500 ms a unit).
        let lb = Leaky::new(3, 2, 1_000_000_000).unwrap();
        let mut at = 0;
        let mut replies = vec![];
        for _ in 0..4 {
            let out = lb.decide(at, T0, 1);
            at = out.write.unwrap_or(at);
            replies.push(out.decision.reply());
        }
        assert_eq!(
            replies,
            vec![
                [1, 3, 2, 0, 500],
                [1, 3, 1, 500, 1000],
                [1, 3, 0, 1000, 1500],
                [0, 3, 0, 500, 1500]
            ]
        );
        // 700 ms later the level is 1.6: one more fits, queued behind 800 ms of work.
        assert_eq!(
            lb.decide(at, T0 + 700 * MS, 1).decision.reply(),
            [1, 3, 0, 800, 1300]
        );
    }

    #[test]
    fn cost_above_capacity_is_never_admitted() {
        let lb = Leaky::new(3, 2, 1_000_000_000).unwrap();
        assert_eq!(lb.decide(0, T0, 4).decision.reply(), [0, 3, 3, -1, 0]);
    }
}
