//! Token bucket: `capacity` tokens, full when new, regaining `refill` tokens per
//! `period` continuously. Stored as the instant the bucket is full again, which
//! makes it the virtual schedule with `burst = capacity` and `T = period / refill`:
//! its decisions equal GCRA's with those parameters, by construction and by test.

use std::num::NonZeroU64;

use super::schedule::{checked_rate, InstantLimiter, Schedule};

/// The token bucket's parameters, as checked by [`TokenBucket::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    capacity: NonZeroU64,
    refill: NonZeroU64,
    period_ns: NonZeroU64,
}

impl TokenBucket {
    /// `None` unless every parameter is at least 1 and `period_ns >= refill`
    /// (see [`checked_rate`]).
    pub fn new(capacity: u64, refill: u64, period_ns: u64) -> Option<TokenBucket> {
        let (refill, period_ns) = checked_rate(refill, period_ns)?;
        Some(TokenBucket {
            capacity: NonZeroU64::new(capacity)?,
            refill,
            period_ns,
        })
    }

    pub fn capacity(&self) -> u64 {
        self.capacity.get()
    }

    /// Tokens regained per period.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn refill(&self) -> u64 {
        self.refill.get()
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn period_ns(&self) -> u64 {
        self.period_ns.get()
    }
}

impl InstantLimiter for TokenBucket {
    fn schedule(&self) -> Schedule {
        Schedule::of(self.period_ns, self.refill, self.capacity)
    }

    fn idle_capacity(&self) -> u64 {
        self.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::gcra::Gcra;
    use rand::{Rng, SeedableRng};

    const MS: u128 = 1_000_000;
    const T0: u128 = 1_700_000_000_000 * MS;

    #[test]
    fn refill_and_exact_waits() {
        // 5 tokens, 1 token per 200 ms.
        let tb = TokenBucket::new(5, 1, 200_000_000).unwrap();
        let mut full_at = 0;
        let out = tb.decide(full_at, T0, 5);
        assert_eq!(out.decision.reply(), [1, 5, 0, 0, 1000]);
        full_at = out.write.unwrap();
        assert_eq!(
            tb.decide(full_at, T0 + 50 * MS, 2).decision.reply(),
            [0, 5, 0, 350, 950]
        );
        assert_eq!(
            tb.decide(full_at, T0 + 400 * MS, 0).decision.reply(),
            [1, 5, 2, 0, 600]
        );
        assert_eq!(
            tb.decide(full_at, T0 + 5_000 * MS, 0).decision.reply(),
            [1, 5, 5, 0, 0]
        );
    }

    #[test]
    fn equals_gcra_on_random_sequences() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        for _ in 0..200 {
            let capacity = rng.random_range(1..=50u64);
            let refill = rng.random_range(1..=1_000u64);
            let period_ns = rng.random_range(1..=10_000u64) * 1_000_000;
            let tb = TokenBucket::new(capacity, refill, period_ns).unwrap();
            let g = Gcra::new(refill, period_ns, capacity).unwrap();
            let (mut a, mut b) = (0u128, 0u128);
            let mut now = T0;
            for _ in 0..300 {
                now += rng.random_range(0..(period_ns as u128 / refill as u128 * 3 + 2));
                let cost = rng.random_range(0..=capacity + 1);
                let x = tb.decide(a, now, cost);
                let y = g.decide(b, now, cost);
                assert_eq!(x.decision, y.decision);
                a = x.write.unwrap_or(a);
                b = y.write.unwrap_or(b);
            }
        }
    }
}
