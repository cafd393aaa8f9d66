//! Fixed window counter: windows aligned to multiples of `window` since the Unix
//! epoch (so `1d` resets at 00:00 UTC); admitted iff `count + cost <= limit`.

use std::num::NonZeroU64;

use super::{Decision, Outcome, Wait, WholeMs};

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

/// The absolute expiry of a stored fixed window: its end.
pub fn idle_at_ns(state: &FixedState, window_ns: WholeMs) -> u128 {
    state.start_ms as u128 * super::NANOS_PER_MS as u128 + window_ns.get() as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MIN: u64 = 60_000 * MS;
    const START_MS: u64 = 1_699_999_980_000; // a minute boundary
    const T0: u64 = (START_MS + 40_000) * MS; // 40 s into that minute

    #[test]
    fn counts_within_the_window_and_resets_on_its_boundary() {
        let f = Fixed::new(3, MIN).unwrap();
        let mut st = None;
        for left in [2, 1, 0] {
            let out = f.decide(st, T0, 1);
            assert_eq!(out.decision.reply(), [1, 3, left, 0, 20_000]);
            st = out.write.or(st);
        }
        assert_eq!(st.unwrap().start_ms, START_MS);
        let denied = f.decide(st, T0 + 5_000 * MS + 1, 1);
        assert_eq!(denied.decision.reply(), [0, 3, 0, 15_000, 15_000]);
        assert_eq!(denied.write, None);
        // One nanosecond before the boundary: still denied; on it: a fresh window.
        assert!(!f.decide(st, T0 + 20_000 * MS - 1, 1).decision.allowed);
        let next = f.decide(st, T0 + 20_000 * MS, 1);
        assert_eq!(next.decision.reply(), [1, 3, 2, 0, 60_000]);
        assert_eq!(
            idle_at_ns(&next.write.unwrap(), f.window_ns),
            (T0 + 80_000 * MS) as u128
        );
    }

    #[test]
    fn day_windows_reset_at_midnight_utc() {
        let f = Fixed::new(10, 86_400_000 * MS).unwrap();
        let noon = (19_000 * 86_400_000 + 43_200_000) * MS;
        let out = f.decide(None, noon, 1);
        assert_eq!(out.write.unwrap().start_ms, 19_000 * 86_400_000);
        assert_eq!(out.decision.reply()[4], 43_200_000);
    }

    #[test]
    fn cost_above_limit_never_and_cost_zero_peeks() {
        let f = Fixed::new(3, MIN).unwrap();
        assert_eq!(f.decide(None, T0, 4).decision.reply(), [0, 3, 3, -1, 0]);
        let st = Some(FixedState {
            start_ms: START_MS,
            count: 2,
        });
        let peek = f.decide(st, T0, 0);
        assert_eq!(peek.decision.reply(), [1, 3, 1, 0, 20_000]);
        assert_eq!(peek.write, None);
    }

    #[test]
    fn refunds_give_back_within_the_window_only() {
        let f = Fixed::new(3, MIN).unwrap();
        let st = f.decide(None, T0, 3).write;
        let back = f.refund(st, T0 + MS, 2);
        assert_eq!(back.decision.reply(), [1, 3, 2, 0, 19_999]);
        assert_eq!(
            back.write,
            Some(FixedState {
                start_ms: START_MS,
                count: 1
            })
        );
        let all = f.refund(st, T0, 9);
        assert_eq!(
            all.write,
            Some(FixedState {
                start_ms: START_MS,
                count: 0
            })
        );
        // A refund in the next window has nothing to give back.
        assert_eq!(f.refund(st, T0 + MIN, 1).write, None);
    }

    #[test]
    fn clock_stepping_back_keeps_the_stored_window() {
        let f = Fixed::new(2, MIN).unwrap();
        let st = f.decide(None, T0, 2).write;
        let back = T0 - 10 * MIN;
        let out = f.decide(st, back, 1);
        assert!(!out.decision.allowed);
        assert!(out.decision.reply()[3] >= 20_000);
    }
}
