//! Fixed window counter: windows aligned to multiples of `window` since the Unix
//! epoch (so `1d` resets at 00:00 UTC); admitted iff `count + cost <= limit`.

use std::num::NonZeroU64;

use super::{Decision, Outcome, Wait, WholeMs, MAX_DEBT};

/// `limit` units per window of `window_ns`. The fields' types are their checks:
/// at least 1, and a whole number of milliseconds (each window starts on one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixed {
    pub limit: NonZeroU64,
    pub window_ns: WholeMs,
}

/// The stored state: the window's start (ms since the epoch) and the cost admitted in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedState {
    pub start_ms: u64,
    pub count: u64,
}

impl Fixed {
    /// `None` unless `limit >= 1` and `window_ns` is a positive whole number of
    /// milliseconds.
    pub fn new(limit: u64, window_ns: u64) -> Option<Fixed> {
        Some(Fixed {
            limit: NonZeroU64::new(limit)?,
            window_ns: WholeMs::from_ns(window_ns)?,
        })
    }

    /// The current window's start and end (ns) and the count stored for it.
    /// A clock that stepped back into an earlier window stays in the stored one.
    fn current(&self, stored: Option<FixedState>, now: u64) -> (u64, u128, u64) {
        let stored_start = stored.map_or(0, |s| s.start_ms.saturating_mul(super::NANOS_PER_MS));
        let at = now.max(stored_start);
        let window_ns = self.window_ns.get();
        let start = at - at % window_ns;
        let count = match stored {
            Some(s) if stored_start >= start => s.count,
            _ => 0,
        };
        (start, start as u128 + window_ns as u128, count)
    }

    fn decision(&self, allowed: bool, count: u64, until_end: u128, retry_after: Wait) -> Decision {
        Decision {
            allowed,
            limit: self.limit.get(),
            remaining: self.limit.get().saturating_sub(count),
            retry_after,
            reset_after_ns: if count > 0 { until_end } else { 0 },
        }
    }

    #[inline(always)]
    pub fn decide(&self, stored: Option<FixedState>, now: u64, cost: u64) -> Outcome<FixedState> {
        let (start, end, count) = self.current(stored, now);
        let until_end = end - now as u128;
        let limit = self.limit.get();
        if cost > limit {
            let decision = self.decision(false, count, until_end, Wait::Never);
            return Outcome {
                decision,
                write: None,
            };
        }
        if count.saturating_add(cost) > limit {
            let decision = self.decision(false, count, until_end, Wait::After(until_end));
            return Outcome {
                decision,
                write: None,
            };
        }
        let after = count + cost;
        Outcome {
            decision: self.decision(true, after, until_end, Wait::After(0)),
            write: (cost > 0).then_some(FixedState {
                start_ms: start / super::NANOS_PER_MS,
                count: after,
            }),
        }
    }

    /// Gives `units` back to the current window (`REFUND`), never below zero.
    /// A write with `count == 0` means the limiter is idle.
    pub fn refund(&self, stored: Option<FixedState>, now: u64, units: u64) -> Outcome<FixedState> {
        let (start, end, count) = self.current(stored, now);
        let after = count.saturating_sub(units);
        Outcome {
            decision: self.decision(true, after, end - now as u128, Wait::After(0)),
            write: (after < count).then_some(FixedState {
                start_ms: start / super::NANOS_PER_MS,
                count: after,
            }),
        }
    }
}

impl Fixed {
    /// Charges `units` whatever is left (`DEBIT`): the window's count passes
    /// the limit, up to `limit + MAX_DEBT`, and never shrinks (a count already
    /// past it stays). Admitted; `retry_after` is when a request of cost 1 is:
    /// at once below the limit, else at the window's end.
    pub fn debit(&self, stored: Option<FixedState>, now: u64, units: u64) -> Outcome<FixedState> {
        let (start, end, count) = self.current(stored, now);
        let limit = self.limit.get();
        let after = count.max(count.saturating_add(units).min(limit + MAX_DEBT));
        let until_end = end - now as u128;
        let retry = if after < limit { 0 } else { until_end };
        Outcome {
            decision: self.decision(true, after, until_end, Wait::After(retry)),
            write: (after > count).then_some(FixedState {
                start_ms: start / super::NANOS_PER_MS,
                count: after,
            }),
        }
    }
}

/// The absolute expiry of a stored fixed window: its end.
pub fn idle_at_ns(state: &FixedState, window_ns: WholeMs) -> u128 {
    state.start_ms as u128 * super::NANOS_PER_MS as u128 + window_ns.get() as u128
}

#[cfg(test)]
#[path = "fixed_tests.rs"]
mod tests;
