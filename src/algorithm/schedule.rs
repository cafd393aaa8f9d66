//! Virtual scheduling: the exact core shared by GCRA, the token bucket and the
//! leaky bucket. All three reduce to one stored instant, the theoretical arrival
//! time (TAT): the moment the limiter is idle again.
//!
//! With `T = period / rate` (the time one unit of cost costs) and the "debt"
//! `tat - now` (how far the limiter is behind idle), a request of cost `n` is
//! admitted iff `debt + n*T <= burst*T`. Comparisons are made exactly in integers
//! scaled by `rate`; only the stored TAT is rounded, down to whole nanoseconds
//! (at most 1 ns per admitted request, and never when `T` is a whole number of
//! nanoseconds).

use std::num::{NonZeroU128, NonZeroU64};

use super::{clamp_u64, Decision, Outcome, Wait, MAX_DEBT};

/// Parameters of a virtual schedule, each at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Nanoseconds in which `rate` units are regained.
    pub period_ns: NonZeroU128,
    /// Units regained per period.
    pub rate: NonZeroU128,
    /// Units admissible at once when idle (burst, capacity).
    pub burst: NonZeroU128,
}

/// `rate` units per `period_ns` as GCRA, the token bucket and the leaky bucket
/// take it: both at least 1, and `period_ns >= rate`, so that one unit costs at
/// least 1 ns. The stored instant has nanosecond resolution: at a faster rate an
/// admitted request could spend nothing (the command grammar refuses such rates).
pub fn checked_rate(rate: u64, period_ns: u64) -> Option<(NonZeroU64, NonZeroU64)> {
    if period_ns < rate {
        return None;
    }
    Some((NonZeroU64::new(rate)?, NonZeroU64::new(period_ns)?))
}

/// Where one request leaves the schedule: its verdict and the TAT to store.
/// (Not the decision of a call: [`super::Outcome`] is that.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    pub allowed: bool,
    /// Nanoseconds the limiter was behind idle before this request (the leaky
    /// bucket's queue ahead of the request).
    pub queued_ns: u128,
    /// Whole units admissible right after this decision.
    pub remaining: u64,
    /// Denied: when the same request is admitted. Allowed: `After(0)`.
    pub retry_after: Wait,
    /// Nanoseconds until idle after this decision.
    pub reset_after_ns: u128,
    /// The TAT to store: `Some` only when admitted with a positive cost.
    pub new_tat: Option<u128>,
}

/// GCRA, the token bucket and the leaky bucket: limiters whose whole state is
/// one instant (the TAT, the time the bucket is full, the time the queue is empty),
/// `0` when the key is absent. The outcome's write is the new instant.
pub trait InstantLimiter {
    /// The virtual schedule the limiter runs on.
    fn schedule(&self) -> Schedule;
    /// The units admitted at once when idle (the reply's `limit`).
    fn idle_capacity(&self) -> u64;

    /// Decides a request of `cost` units at `now`, given the stored instant
    /// `at` (`0` when the key is absent); the outcome's write is the new one.
    /// (Inlined: its one caller is the decision on the key.)
    #[inline(always)]
    fn decide(&self, at: u128, now: u128, cost: u64) -> Outcome<u128> {
        self.schedule()
            .step(at, now, cost)
            .outcome(self.idle_capacity())
    }

    /// Gives `units` back (`REFUND`), never beyond the idle state.
    fn refund(&self, at: u128, now: u128, units: u64) -> Outcome<u128> {
        self.schedule()
            .refund(at, now, units)
            .outcome(self.idle_capacity())
    }

    /// Charges `units` whatever is left (`DEBIT`), up to the debt cap.
    fn debit(&self, at: u128, now: u128, units: u64) -> Outcome<u128> {
        self.schedule()
            .debit(at, now, units)
            .outcome(self.idle_capacity())
    }
}

impl Scheduled {
    /// The shared reply for a limiter whose idle capacity is `limit`, and the TAT to store.
    pub fn outcome(self, limit: u64) -> Outcome<u128> {
        Outcome {
            decision: Decision {
                allowed: self.allowed,
                limit,
                remaining: self.remaining,
                retry_after: self.retry_after,
                reset_after_ns: self.reset_after_ns,
            },
            write: self.new_tat,
        }
    }
}

impl Schedule {
    /// The schedule of a checked limiter (widened: no conversion can fail).
    pub fn of(period_ns: NonZeroU64, rate: NonZeroU64, burst: NonZeroU64) -> Schedule {
        Schedule {
            period_ns: period_ns.into(),
            rate: rate.into(),
            burst: burst.into(),
        }
    }

    /// Decides a request of `cost` units at `now`, given the stored TAT (`0` when absent).
    /// A TAT in the past counts as idle, so a clock that stepped backwards only
    /// lengthens the debt: it never grants capacity.
    pub fn step(&self, tat: u128, now: u128, cost: u64) -> Scheduled {
        let debt = tat.saturating_sub(now);
        let cost = cost as u128;
        let capacity = self.burst.get().saturating_mul(self.period_ns.get());

        if cost > self.burst.get() {
            return self.unchanged(debt, false, Wait::Never);
        }
        if cost == 0 {
            return self.unchanged(debt, true, Wait::After(0));
        }
        let spend = cost * self.period_ns.get(); // cost <= burst: no overflow.
        let room = capacity - spend;
        // Admitted iff debt*rate + spend <= capacity, i.e. debt <= room/rate (exact).
        if debt.saturating_mul(self.rate.get()) <= room {
            let debt_after = debt + spend / self.rate;
            return Scheduled {
                allowed: true,
                queued_ns: debt,
                remaining: self.remaining(debt_after),
                retry_after: Wait::After(0),
                reset_after_ns: debt_after,
                new_tat: Some(now + debt_after),
            };
        }
        // The first instant the debt has shrunk to room/rate: debt - floor(room/rate).
        self.unchanged(debt, false, Wait::After(debt - room / self.rate))
    }

    /// Gives `units` back: the debt shrinks by `units * T` (rounded down, so a
    /// refund never exceeds what was spent), never below idle.
    pub fn refund(&self, tat: u128, now: u128, units: u64) -> Scheduled {
        let debt = tat.saturating_sub(now);
        let back = units as u128 * self.period_ns.get() / self.rate;
        let debt_after = debt.saturating_sub(back);
        Scheduled {
            new_tat: (debt > 0 && units > 0).then_some(now + debt_after),
            ..self.unchanged(debt_after, true, Wait::After(0))
        }
    }

    /// Charges `units` whatever the debt (`DEBIT`): it grows by `units * T`
    /// (rounded down, as a spend's), saturating at `burst + MAX_DEBT` units'
    /// worth, and never shrinks (a debt already past the cap stays). Admitted;
    /// `retry_after` is when a request of cost 1 is.
    pub fn debit(&self, tat: u128, now: u128, units: u64) -> Scheduled {
        let debt = tat.saturating_sub(now);
        let (period, rate) = (self.period_ns.get(), self.rate.get());
        let charged = debt.saturating_add(units as u128 * period / rate);
        // The cap, (burst + MAX_DEBT) * T, is at least MAX_DEBT ns (T >= 1 ns):
        // a shorter debt is within it. Else it is at most (2 * 10^12) * (3650 d
        // in ns): no overflow.
        let debt_after = match charged <= MAX_DEBT as u128 {
            true => charged,
            false => {
                let cap = (self.burst.get() + MAX_DEBT as u128) * period;
                match charged.saturating_mul(rate) <= cap {
                    true => charged,
                    false => debt.max(cap / rate),
                }
            }
        };
        let mut after = self.unchanged(debt_after, true, Wait::After(0));
        // A cost of 1 fits iff a unit remains; else once the debt has shrunk
        // to burst*T - T (as in `step`).
        if after.remaining == 0 {
            let room = (self.burst.get() - 1) * period;
            after.retry_after = Wait::After(debt_after - room / rate);
        }
        after.new_tat = (debt_after > debt).then_some(now + debt_after);
        after
    }

    fn unchanged(&self, debt: u128, allowed: bool, retry_after: Wait) -> Scheduled {
        Scheduled {
            allowed,
            queued_ns: debt,
            remaining: self.remaining(debt),
            retry_after,
            reset_after_ns: debt,
            new_tat: None,
        }
    }

    /// `floor((burst*T - debt) / T)`, at least 0.
    fn remaining(&self, debt: u128) -> u64 {
        let capacity = self.burst.get().saturating_mul(self.period_ns.get());
        clamp_u64(capacity.saturating_sub(debt.saturating_mul(self.rate.get())) / self.period_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u128 = 1_000_000_000;

    fn sched(period_ns: u128, rate: u128, burst: u128) -> Schedule {
        let positive = |v| NonZeroU128::new(v).unwrap();
        Schedule {
            period_ns: positive(period_ns),
            rate: positive(rate),
            burst: positive(burst),
        }
    }

    #[test]
    fn burst_is_exact_when_period_does_not_divide() {
        // 3 per second, burst 3: T = 333_333_333.3 ns.
        let s = sched(S, 3, 3);
        let now = 1_000 * S;
        let mut tat = 0;
        for left in [2, 1, 0] {
            let step = s.step(tat, now, 1);
            assert!(step.allowed);
            assert_eq!(step.remaining, left);
            tat = step.new_tat.unwrap();
        }
        let denied = s.step(tat, now, 1);
        assert!(!denied.allowed);
        // Exactly T (rounded up to the nanosecond) until one unit is back.
        assert_eq!(denied.retry_after, Wait::After(333_333_333));
        assert_eq!(denied.new_tat, None);
    }

    #[test]
    fn refunds_give_units_back_but_never_beyond_idle() {
        let s = sched(S, 10, 5); // T = 100 ms
        let now = 1_000 * S;
        let tat = s.step(0, now, 4).new_tat.unwrap();
        let back = s.refund(tat, now, 3);
        assert_eq!((back.remaining, back.reset_after_ns), (4, S / 10));
        assert_eq!(back.new_tat, Some(now + S / 10));
        let all = s.refund(tat, now, 100);
        assert_eq!(
            (all.remaining, all.reset_after_ns, all.new_tat),
            (5, 0, Some(now))
        );
        assert_eq!(s.refund(0, now, 1).new_tat, None, "nothing to give back");
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let period = 3650 * 86_400 * S;
        let s = sched(period, 1, 1_000_000_000_000);
        let step = s.step(0, u64::MAX as u128, 1_000_000_000_000);
        assert!(step.allowed);
        assert_eq!(step.reset_after_ns, period * 1_000_000_000_000);
        let again = s.step(step.new_tat.unwrap(), u64::MAX as u128, 1);
        assert_eq!(again.retry_after, Wait::After(period));
    }

    #[test]
    fn downgrade_with_large_debt_saturates_instead_of_overflowing() {
        let big = sched(3650 * 86_400 * S, 1, 1_000_000_000_000);
        let tat = big.step(0, 0, 1_000_000_000_000).new_tat.unwrap();
        let small = sched(1_000_000, 1_000_000_000_000, 1);
        let step = small.step(tat, 0, 1);
        assert!(!step.allowed);
        assert_eq!(step.remaining, 0);
    }
}
