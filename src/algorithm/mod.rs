//! Pure rate-limiting algorithms: no Redis, no clock. Each one is a function of
//! (parameters, stored state, now, cost) that returns a [`Decision`] and, when the
//! request is admitted with a positive cost, the state to store.
//!
//! Time is integer nanoseconds since the Unix epoch (`u128` where a value can run
//! far into the future, such as a theoretical arrival time with a huge burst).
//!
//! Parameters are checked once, when a limiter is built, and carried in types
//! that hold what was checked: a count or rate is a [`NonZeroU64`], a window or
//! a timeout a [`WholeMs`]. A limiter whose parameters are related as well (the
//! GCRA family's `period_ns >= rate`) keeps them private behind a checked `new`.
//!
//! Of the crate, this module imports only [`crate::decimal`] (pure as well):
//! `tests/it/functions_exact.rs` compiles the two on their own.

use std::num::NonZeroU64;

pub mod calendar;
pub mod cell;
pub mod fixed;
pub mod gcra;
pub mod leaky;
pub mod lease;
pub mod penalty;
pub mod quota;
pub mod schedule;
pub mod sliding;
pub mod sliding_log;
pub mod token_bucket;

pub const NANOS_PER_MS: u64 = 1_000_000;
pub const NANOS_PER_US: u64 = 1_000;

/// Expiry times are capped here (about the year 33658): a state whose idle time
/// lies beyond it is kept until then, which no real deployment will reach.
pub const MAX_EXPIRE_MS: u64 = 1_000_000_000_000_000;

/// The most units a limiter can owe beyond what it admits at once (`DEBIT`):
/// a debit past it saturates there (`crate::bounds::MAX_DEBT`, the same).
pub const MAX_DEBT: u64 = 1_000_000_000_000;

/// A duration in nanoseconds that is a positive whole number of milliseconds:
/// a window or a lease timeout. Its edges, aligned to multiples of it since the
/// epoch, are whole milliseconds (as stored) and whole microseconds (as scored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeMs(NonZeroU64);

impl WholeMs {
    /// `ns` if it is a positive whole number of milliseconds.
    pub const fn from_ns(ns: u64) -> Option<WholeMs> {
        match NonZeroU64::new(ns) {
            Some(ns) if ns.get() % NANOS_PER_MS == 0 => Some(WholeMs(ns)),
            _ => None,
        }
    }

    /// The duration in nanoseconds: at least [`NANOS_PER_MS`].
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

/// [`MAX_EXPIRE_MS`] in nanoseconds.
const MAX_EXPIRE_NS: u128 = MAX_EXPIRE_MS as u128 * NANOS_PER_MS as u128;

/// When a denied request could be admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// After this many nanoseconds from now.
    After(u128),
    /// Never: the cost is larger than the limiter can ever admit at once.
    Never,
}

/// The five integers of the shared reply, before rounding to milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Allowed: the delay before performing the request (non-zero only for the
    /// leaky bucket's queue). Denied: how long until the same request is admitted.
    pub retry_after: Wait,
    /// Nanoseconds until the limiter is back to its idle state.
    pub reset_after_ns: u128,
}

impl Decision {
    /// The reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`,
    /// times rounded up to whole milliseconds so a client is never told to come back early.
    pub fn reply(&self) -> [i64; 5] {
        let retry = match self.retry_after {
            Wait::After(ns) => ms_ceil(ns),
            Wait::Never => -1,
        };
        [
            self.allowed as i64,
            clamp_i64(self.limit as u128),
            clamp_i64(self.remaining as u128),
            retry,
            ms_ceil(self.reset_after_ns),
        ]
    }
}

impl Decision {
    /// Caps the decision's waits at the expiry cap: every key is gone, and
    /// its limiter idle, at [`MAX_EXPIRE_MS`] at the latest, so no reply
    /// promises a wait beyond the key's real expiry. (In place: the decision
    /// is not moved again on every call's path.)
    pub fn cap_expiry(&mut self, now: u128) {
        let horizon = MAX_EXPIRE_NS.saturating_sub(now);
        self.reset_after_ns = self.reset_after_ns.min(horizon);
        if let Wait::After(ns) = self.retry_after {
            self.retry_after = Wait::After(ns.min(horizon));
        }
    }
}

/// A decision and the write that applies it: the one type every layer uses
/// (here `S` is the state to store; above, the key's write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome<S> {
    pub decision: Decision,
    /// `Some` only when the request was admitted with a positive cost (or a
    /// refund gave units back).
    pub write: Option<S>,
}

impl<S> Outcome<S> {
    /// The same decision, its write (if any) turned into a `T` by `f`.
    #[inline]
    pub fn map_write<T>(self, f: impl FnOnce(S) -> T) -> Outcome<T> {
        Outcome {
            decision: self.decision,
            write: self.write.map(f),
        }
    }
}

/// Nanoseconds rounded up to whole milliseconds, saturating at `i64::MAX`.
pub fn ms_ceil(ns: u128) -> i64 {
    clamp_i64(div_ceil_ms(ns))
}

/// `ns` in whole milliseconds, rounded up. A wait or an instant below 2^64 ns
/// (every one before the year 2554) is divided as a u64: a division by a
/// constant is then a multiplication, where a u128 one is a library call.
#[inline(always)]
fn div_ceil_ms(ns: u128) -> u128 {
    match u64::try_from(ns) {
        Ok(ns) => u128::from(ns.div_ceil(NANOS_PER_MS)),
        Err(_) => ns.div_ceil(NANOS_PER_MS as u128),
    }
}

/// An absolute time in nanoseconds as a Redis expiry in milliseconds, rounded up
/// (a key must never expire before its state is idle) and capped at [`MAX_EXPIRE_MS`].
pub fn expire_ms(at_ns: u128) -> u64 {
    div_ceil_ms(at_ns).min(MAX_EXPIRE_MS as u128) as u64
}

fn clamp_i64(v: u128) -> i64 {
    v.min(i64::MAX as u128) as i64
}

/// `v` saturated into a `u64`.
fn clamp_u64(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod extremes {
    //! Every algorithm at the edges of the grammar's ranges: counts and costs up
    //! to 10^12, durations from 1 ms to 3650 days, clocks near 0 and far in the
    //! future, and clocks that step backwards. Nothing may panic or overflow
    //! (tests build with overflow checks), and every reply keeps its invariants.

    use super::fixed::Fixed;
    use super::gcra::Gcra;
    use super::leaky::Leaky;
    use super::schedule::InstantLimiter;
    use super::sliding::Sliding;
    use super::sliding_log::{testing::VecLog, SlidingLog};
    use super::token_bucket::TokenBucket;
    use super::*;

    const COUNTS: [u64; 4] = [1, 7, 1_000_000, 1_000_000_000_000];
    const PERIODS_NS: [u64; 4] = [
        1_000_000,
        1_000_000_000,
        86_400_000_000_000,
        3650 * 86_400_000_000_000,
    ];
    const COSTS: [u64; 5] = [0, 1, 3, 1_000_000, 1_000_000_000_000];
    /// Times: the epoch, today, and near the end of u64 nanoseconds, with back steps.
    const NOWS: [u64; 6] = [
        0,
        5,
        1_764_489_600_000_000_000,
        1_764_489_000_000_000_000,
        u64::MAX / 2,
        u64::MAX - 1,
    ];

    fn check(d: &Decision, cost: u64) {
        assert!(d.remaining <= d.limit);
        if d.allowed {
            assert!(cost <= d.limit);
        } else if cost <= d.limit {
            assert!(matches!(d.retry_after, Wait::After(ns) if ns > 0));
        } else {
            assert_eq!(d.retry_after, Wait::Never);
        }
        let r = d.reply();
        assert!(r[3] >= -1 && r[4] >= 0);
    }

    #[test]
    fn no_panic_no_overflow_and_invariants_hold() {
        for limit in COUNTS {
            for period in PERIODS_NS {
                // GCRA and the token bucket refuse rates above 1 per nanosecond.
                let g = Gcra::new(limit, period, limit);
                let tb = TokenBucket::new(limit, limit, period);
                assert_eq!(
                    (g.is_some(), tb.is_some()),
                    (period >= limit, period >= limit)
                );
                let lb = Leaky::new(limit, 1, period).unwrap();
                let fx = Fixed::new(limit, period).unwrap();
                let sw = Sliding::new(limit, period).unwrap();
                let sl = SlidingLog::new(limit, period).unwrap();
                let (mut tat, mut full, mut drained) = (0u128, 0u128, 0u128);
                let (mut fs, mut ss, mut log) = (None, None, VecLog::default());
                for now in NOWS {
                    for cost in COSTS {
                        let wide = now as u128;
                        if let Some(g) = g {
                            let o = g.decide(tat, wide, cost);
                            check(&o.decision, cost);
                            tat = o.write.unwrap_or(tat);
                        }
                        if let Some(tb) = tb {
                            let o = tb.decide(full, wide, cost);
                            check(&o.decision, cost);
                            full = o.write.unwrap_or(full);
                        }
                        let o = lb.decide(drained, wide, cost);
                        check(&o.decision, cost);
                        drained = o.write.unwrap_or(drained);
                        let o = fx.decide(fs, now, cost);
                        check(&o.decision, cost);
                        fs = o.write.or(fs);
                        let o = sw.decide(ss, now, cost);
                        check(&o.decision, cost);
                        ss = o.write.or(ss);
                        // The last nanosecond of u64 cannot take a new entry: refused, never merged.
                        match sl.decide(&log, now, cost) {
                            Ok(o) => {
                                check(&o.decision, cost);
                                if let Some(w) = o.write {
                                    log.apply(&w);
                                    let _ = expire_ms(sl.idle_at_ns(&w));
                                }
                            }
                            Err(_) => assert_eq!(log.0.last().map(|e| e.ns), Some(u64::MAX)),
                        }
                        let _ = (expire_ms(tat), expire_ms(full), expire_ms(drained));
                    }
                }
            }
        }
    }
}
