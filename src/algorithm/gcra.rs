//! GCRA: `limit` requests per `period`, evenly spaced, with up to `burst` at once.
//! State: the theoretical arrival time (TAT).

use std::num::NonZeroU64;

use super::schedule::{checked_rate, InstantLimiter, Schedule};
use super::Outcome;

/// GCRA's parameters, as checked by [`Gcra::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    limit: NonZeroU64,
    period_ns: NonZeroU64,
    burst: NonZeroU64,
}

impl Gcra {
    /// `None` unless every parameter is at least 1 and `period_ns >= limit`
    /// (see [`checked_rate`]).
    pub fn new(limit: u64, period_ns: u64, burst: u64) -> Option<Gcra> {
        let (limit, period_ns) = checked_rate(limit, period_ns)?;
        Some(Gcra {
            limit,
            period_ns,
            burst: NonZeroU64::new(burst)?,
        })
    }

    /// Requests regained per period.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn limit(&self) -> u64 {
        self.limit.get()
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn period_ns(&self) -> u64 {
        self.period_ns.get()
    }

    /// Requests admitted at once when idle.
    pub fn burst(&self) -> u64 {
        self.burst.get()
    }

    fn schedule(&self) -> Schedule {
        Schedule::of(self.period_ns, self.limit, self.burst)
    }
}

impl InstantLimiter for Gcra {
    /// `tat` is the stored TAT in nanoseconds (`0` when the key is absent);
    /// the outcome's write is the new TAT.
    fn decide(&self, tat: u128, now: u128, cost: u64) -> Outcome<u128> {
        self.schedule().step(tat, now, cost).outcome(self.burst())
    }

    /// Gives `units` back (`REFUND`).
    fn refund(&self, tat: u128, now: u128, units: u64) -> Outcome<u128> {
        self.schedule()
            .refund(tat, now, units)
            .outcome(self.burst())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Wait;

    const MS: u128 = 1_000_000;
    const T0: u128 = 1_700_000_000_000 * MS;

    fn run(g: &Gcra, tat: &mut u128, now: u128, cost: u64) -> [i64; 5] {
        let out = g.decide(*tat, now, cost);
        if let Some(new) = out.write {
            *tat = new;
        }
        out.decision.reply()
    }

    #[test]
    fn burst_then_denial_with_exact_times() {
        // 10 per second (T = 100 ms), burst 5.
        let g = Gcra::new(10, 1_000 * MS as u64, 5).unwrap();
        let mut tat = 0;
        assert_eq!(run(&g, &mut tat, T0, 1), [1, 5, 4, 0, 100]);
        for left in (0..4).rev() {
            let r = run(&g, &mut tat, T0, 1);
            assert_eq!(r[..3], [1, 5, left]);
        }
        assert_eq!(run(&g, &mut tat, T0, 1), [0, 5, 0, 100, 500]);
        // 40 ms later: still 60 ms to wait.
        assert_eq!(run(&g, &mut tat, T0 + 40 * MS, 1), [0, 5, 0, 60, 460]);
        // After exactly T one unit is back.
        assert_eq!(run(&g, &mut tat, T0 + 100 * MS, 1), [1, 5, 0, 0, 500]);
        // Cost 3 needs 300 ms of room.
        assert_eq!(run(&g, &mut tat, T0 + 100 * MS, 3), [0, 5, 0, 300, 500]);
    }

    #[test]
    fn strict_spacing_by_default() {
        let g = Gcra::new(2, 1_000 * MS as u64, 1).unwrap();
        let mut tat = 0;
        assert_eq!(run(&g, &mut tat, T0, 1), [1, 1, 0, 0, 500]);
        assert_eq!(run(&g, &mut tat, T0 + 1, 1), [0, 1, 0, 500, 500]);
        assert_eq!(run(&g, &mut tat, T0 + 500 * MS, 1), [1, 1, 0, 0, 500]);
    }

    #[test]
    fn cost_above_burst_is_never_admitted_and_cost_zero_peeks() {
        let g = Gcra::new(10, 1_000 * MS as u64, 5).unwrap();
        let out = g.decide(0, T0, 6);
        assert_eq!(out.decision.retry_after, Wait::Never);
        assert_eq!(out.decision.reply(), [0, 5, 5, -1, 0]);
        assert_eq!(out.write, None);
        let peek = g.decide(T0 + 250 * MS, T0, 0);
        assert_eq!(peek.decision.reply(), [1, 5, 2, 0, 250]);
        assert_eq!(peek.write, None);
    }

    #[test]
    fn refills_continuously() {
        let g = Gcra::new(10, 1_000 * MS as u64, 10).unwrap();
        let mut tat = 0;
        assert_eq!(run(&g, &mut tat, T0, 10)[..3], [1, 10, 0]);
        // 350 ms later 3.5 units are back: 3 whole ones.
        assert_eq!(run(&g, &mut tat, T0 + 350 * MS, 0), [1, 10, 3, 0, 650]);
        assert_eq!(run(&g, &mut tat, T0 + 350 * MS, 4), [0, 10, 3, 50, 650]);
        // Fully idle after a second.
        assert_eq!(run(&g, &mut tat, T0 + 1_000 * MS, 0), [1, 10, 10, 0, 0]);
    }

    #[test]
    fn clock_stepping_back_grants_nothing() {
        let g = Gcra::new(10, 1_000 * MS as u64, 2).unwrap();
        let mut tat = 0;
        run(&g, &mut tat, T0, 2);
        // The clock jumps back an hour: the limiter is further from idle, not closer.
        let back = T0 - 3_600_000 * MS;
        let r = run(&g, &mut tat, back, 1);
        assert_eq!(r[0], 0);
        assert_eq!(r[2], 0);
        assert!(r[3] >= 100);
    }

    #[test]
    fn a_million_per_second_is_exact() {
        let g = Gcra::new(1_000_000, 1_000 * MS as u64, 1).unwrap();
        let mut tat = 0;
        let mut admitted = 0;
        // One attempt every 250 ns for 1 ms: exactly one admission per microsecond.
        for i in 0..4_000u128 {
            if run(&g, &mut tat, T0 + i * 250, 1)[0] == 1 {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 1_000);
    }
}
