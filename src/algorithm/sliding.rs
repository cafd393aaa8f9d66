//! Sliding window counter: the current and the previous fixed window's counts,
//! weighted `estimate = previous * (1 - elapsed/window) + current`; admitted iff
//! `estimate + cost <= limit`. Computed exactly, in integers scaled by the window.

use std::num::NonZeroU64;

use super::{clamp_u64, Decision, Outcome, Wait, WholeMs, MAX_DEBT, NANOS_PER_MS};

/// `limit` units per window of `window_ns`. The fields' types are their checks:
/// at least 1, and a whole number of milliseconds (each window starts on one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sliding {
    pub limit: NonZeroU64,
    pub window_ns: WholeMs,
}

/// The stored state: the current window's start (ms since the epoch) and both counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingState {
    pub start_ms: u64,
    pub previous: u64,
    pub current: u64,
}

/// The windows as seen at one call.
struct View {
    /// The current window's start (ns).
    start: u64,
    /// The instant decided at: `now`, or the start of the window holding the
    /// stored start if the clock stepped back before it (which keeps the
    /// largest estimate).
    at: u64,
    previous: u64,
    current: u64,
}

impl Sliding {
    /// `None` unless `limit >= 1` and `window_ns` is a positive whole number of
    /// milliseconds.
    pub fn new(limit: u64, window_ns: u64) -> Option<Sliding> {
        Some(Sliding {
            limit: NonZeroU64::new(limit)?,
            window_ns: WholeMs::from_ns(window_ns)?,
        })
    }

    fn view(&self, stored: Option<SlidingState>, now: u64) -> View {
        let stored_start = stored.map_or(0, |s| s.start_ms.saturating_mul(NANOS_PER_MS));
        let window_ns = self.window_ns.get();
        // A clock behind the stored start decides at the start of the window
        // holding it: the instant a write here stores (a start written under
        // another window may lie off this one's boundaries), so the reply
        // describes the state the next call reads.
        let at = now.max(stored_start - stored_start % window_ns);
        let start = at - at % window_ns;
        let (previous, current) = match stored {
            Some(s) if stored_start >= start => (s.previous, s.current),
            Some(s) if stored_start as u128 + window_ns as u128 >= start as u128 => (s.current, 0),
            _ => (0, 0),
        };
        View {
            start,
            at,
            previous,
            current,
        }
    }

    /// Whether the window holds `current` units in its current count (a
    /// request's included) within the limit, the previous count weighted:
    /// `previous * (w - elapsed) + current * w <= limit * w`, exactly.
    fn admits(&self, v: &View, current: u128) -> bool {
        let w = self.window_ns.get() as u128;
        let weighted_prev = v.previous as u128 * (w - (v.at - v.start) as u128);
        weighted_prev + current * w <= self.limit.get() as u128 * w
    }

    /// The reply with counts `(p, c)` in view `v`; `estimate * w = p * (w - elapsed) + c * w`.
    fn decision(
        &self,
        v: &View,
        now: u64,
        allowed: bool,
        (p, c): (u128, u128),
        retry_after: Wait,
    ) -> Decision {
        let w = self.window_ns.get() as u128;
        let scaled = p * (w - (v.at - v.start) as u128) + c * w;
        let window_end = v.start as u128 + w - now as u128; // from the caller's now
        Decision {
            allowed,
            limit: self.limit.get(),
            remaining: clamp_u64((self.limit.get() as u128 * w).saturating_sub(scaled) / w),
            retry_after,
            reset_after_ns: if c > 0 {
                window_end + w
            } else if p > 0 {
                window_end
            } else {
                0
            },
        }
    }

    #[inline(always)]
    pub fn decide(
        &self,
        stored: Option<SlidingState>,
        now: u64,
        cost: u64,
    ) -> Outcome<SlidingState> {
        let v = self.view(stored, now);
        let w = self.window_ns.get() as u128;
        let limit = self.limit.get() as u128;
        let (p, c, n) = (v.previous as u128, v.current as u128, cost as u128);
        let elapsed = (v.at - v.start) as u128;
        if n > limit {
            let decision = self.decision(&v, now, false, (p, c), Wait::Never);
            return Outcome {
                decision,
                write: None,
            };
        }
        if self.admits(&v, c + n) {
            let write = (n > 0).then_some(SlidingState {
                start_ms: v.start / NANOS_PER_MS,
                previous: v.previous,
                current: v.current + cost,
            });
            let decision = self.decision(&v, now, true, (p, c + n), Wait::After(0));
            return Outcome { decision, write };
        }
        // Denied: the earliest elapsed time e_t with p*(w - e_t) <= (limit - c - n)*w,
        // in this window if it comes before its end, else in the next (previous = c).
        let in_this = (c + n <= limit).then(|| w - (limit - c - n) * w / p);
        let wait = match in_this {
            Some(e_t) if e_t < w => e_t - elapsed,
            _ => {
                let e_next = ((limit - n) * w)
                    .checked_div(c)
                    .map_or(0, |x| w.saturating_sub(x));
                (w - elapsed) + e_next
            }
        };
        let wait = wait + (v.at - now) as u128;
        let decision = self.decision(&v, now, false, (p, c), Wait::After(wait));
        Outcome {
            decision,
            write: None,
        }
    }

    /// Gives `units` back (`REFUND`): from the current window's count first, then
    /// the previous one's, never below zero. A write with both counts 0 means idle.
    pub fn refund(
        &self,
        stored: Option<SlidingState>,
        now: u64,
        units: u64,
    ) -> Outcome<SlidingState> {
        let v = self.view(stored, now);
        let from_current = units.min(v.current);
        let from_previous = (units - from_current).min(v.previous);
        let (previous, current) = (v.previous - from_previous, v.current - from_current);
        let decision = self.decision(
            &v,
            now,
            true,
            (previous as u128, current as u128),
            Wait::After(0),
        );
        let write = (from_current + from_previous > 0).then_some(SlidingState {
            start_ms: v.start / NANOS_PER_MS,
            previous,
            current,
        });
        Outcome { decision, write }
    }
}

impl Sliding {
    /// Charges `units` whatever is left (`DEBIT`): the current window's count
    /// passes the limit, up to `limit + MAX_DEBT`, and never shrinks. Admitted;
    /// `retry_after` is when a request of cost 1 is (the denial's wait of one
    /// unit on the state after the charge).
    pub fn debit(
        &self,
        stored: Option<SlidingState>,
        now: u64,
        units: u64,
    ) -> Outcome<SlidingState> {
        let v = self.view(stored, now);
        let cap = self.limit.get() + MAX_DEBT;
        let current = v.current.max(v.current.saturating_add(units).min(cap));
        let after = SlidingState {
            start_ms: v.start / NANOS_PER_MS,
            previous: v.previous,
            current,
        };
        let counts = (v.previous as u128, current as u128);
        // A cost of 1 fits (as `decide` admits it), or waits as `decide` says.
        let retry = match self.admits(&v, counts.1 + 1) {
            true => Wait::After(0),
            false => self.decide(Some(after), now, 1).decision.retry_after,
        };
        Outcome {
            decision: self.decision(&v, now, true, counts, retry),
            write: (current > v.current).then_some(after),
        }
    }
}

/// The absolute expiry of a stored sliding window: the end of the window after it,
/// when its current count has fully decayed.
pub fn idle_at_ns(state: &SlidingState, window_ns: WholeMs) -> u128 {
    state.start_ms as u128 * NANOS_PER_MS as u128 + 2 * window_ns.get() as u128
}

#[cfg(test)]
#[path = "sliding_tests.rs"]
mod tests;
