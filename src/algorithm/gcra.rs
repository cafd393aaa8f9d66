//! GCRA: `limit` requests per `period`, evenly spaced, with up to `burst` at once.
//! State: the theoretical arrival time (TAT).

use std::num::NonZeroU64;

use super::schedule::{checked_rate, InstantLimiter, Schedule};
use super::{Decision, Wait};

const NANOS_PER_SEC: u128 = 1_000_000_000;

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

/// A decision as Redis's designed `GCRA` command replies it: `[limited,
/// max_burst + 1, remaining, retry_after, full_burst_after]`, times in whole
/// seconds rounded up (`ceil` in `gcra.c`), `retry_after` -1 when allowed or
/// when the request can never fit (`TOKENS` above `max_burst + 1`).
pub fn redis_reply(d: &Decision) -> [i64; 5] {
    let seconds = |ns: u128| ns.div_ceil(NANOS_PER_SEC).min(i64::MAX as u128) as i64;
    let retry_after = match (d.allowed, d.retry_after) {
        (false, Wait::After(ns)) => seconds(ns),
        (true, _) | (false, Wait::Never) => -1,
    };
    [
        i64::from(!d.allowed),
        d.limit.min(i64::MAX as u64) as i64,
        d.remaining.min(i64::MAX as u64) as i64,
        retry_after,
        seconds(d.reset_after_ns),
    ]
}

#[cfg(test)]
#[path = "gcra_tests.rs"]
mod tests;
