//! GCRA: `limit` requests per `period`, evenly spaced, with up to `burst` at once.
//! State: the theoretical arrival time (TAT).

use std::num::NonZeroU64;

use super::schedule::{checked_rate, InstantLimiter, Schedule};

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
}

impl InstantLimiter for Gcra {
    fn schedule(&self) -> Schedule {
        Schedule::of(self.period_ns, self.limit, self.burst)
    }

    fn idle_capacity(&self) -> u64 {
        self.burst()
    }
}

#[cfg(test)]
#[path = "gcra_tests.rs"]
mod tests;
