//! Penalties (`PENALTY d [ESCALATE max]`, `RL.BAN`): a key that a limiter
//! denies is denied outright until the penalty ends, whatever its rate. Pure:
//! when a penalty starts, how long it lasts, and how a decision reads during
//! one. Times are milliseconds when stored, nanoseconds when compared with now.
//!
//! Invariants: `end > 0` for any penalty started or set; `keep >= end` (the key
//! remembers the penalty, for escalation, until `keep`); a length never exceeds
//! the rule's `max` (or `d` without one).

use std::num::NonZeroU64;

use super::{Decision, Wait, NANOS_PER_MS};

/// A key's penalty, as stored: it denies every call until `end_ms`; `len_ms`
/// is its length (the next one may double it); the key keeps it until `keep_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Penalty {
    pub end_ms: u64,
    pub len_ms: u64,
    pub keep_ms: u64,
}

/// A call's `PENALTY d [ESCALATE max]` (`max >= d`, checked by the grammar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub d_ms: NonZeroU64,
    /// `ESCALATE max`: a penalty starting within `max` of the previous one's
    /// end lasts twice as long as it, at most `max`.
    pub max_ms: Option<NonZeroU64>,
}

/// `now_ns` in whole milliseconds, rounded up: a penalty is never shorter than asked.
pub fn now_ms_up(now_ns: u64) -> u64 {
    now_ns.div_ceil(NANOS_PER_MS)
}

fn ns(ms: u64) -> u128 {
    ms as u128 * NANOS_PER_MS as u128
}

impl Penalty {
    /// A penalty of `len_ms` from `now_ns`, remembered until `keep_ms` (at least its end).
    pub fn from_now(now_ns: u64, len_ms: u64, keep_ms: u64) -> Penalty {
        let end_ms = now_ms_up(now_ns).saturating_add(len_ms);
        Penalty {
            end_ms,
            len_ms,
            keep_ms: keep_ms.max(end_ms),
        }
    }

    /// True while the penalty denies.
    pub fn active(&self, now_ns: u64) -> bool {
        (now_ns as u128) < ns(self.end_ms)
    }

    /// True while the key keeps the penalty (a write then carries it along).
    pub fn kept(&self, now_ns: u64) -> bool {
        (now_ns as u128) < ns(self.keep_ms)
    }

    /// Nanoseconds until the penalty ends (0 once it has).
    fn left_ns(&self, now_ns: u64) -> u128 {
        ns(self.end_ms).saturating_sub(now_ns as u128)
    }

    /// A decision `own` (the limiter's, for the same request) as the penalty
    /// answers it: denied, none left, retry at the later of the penalty's end
    /// and the limiter's own wait; reset no earlier than that.
    pub fn deny(&self, own: &Decision, now_ns: u64) -> Decision {
        let retry = later(self.left_ns(now_ns), own_wait(own));
        Decision {
            allowed: false,
            remaining: 0,
            retry_after: retry,
            reset_after_ns: reset_at_least(own.reset_after_ns, retry),
            ..*own
        }
    }

    /// `COST 0` during the penalty: `own` (the limiter's cost-0 decision) with
    /// none left and the wait a cost of 1 would get (`one`: the limiter's
    /// decision for a cost of 1).
    pub fn peek_zero(&self, own: &Decision, one: &Decision, now_ns: u64) -> Decision {
        let retry = later(self.left_ns(now_ns), own_wait(one));
        Decision {
            remaining: 0,
            retry_after: retry,
            reset_after_ns: reset_at_least(own.reset_after_ns, retry),
            ..*own
        }
    }

    /// A refund or a debit during the penalty: the limiter's decision with
    /// none left and a reset no earlier than the penalty's end.
    pub fn under(&self, own: &Decision, now_ns: u64) -> Decision {
        Decision {
            remaining: 0,
            reset_after_ns: own.reset_after_ns.max(self.left_ns(now_ns)),
            ..*own
        }
    }
}

/// How long the limiter itself makes this request wait: nothing if it admits.
fn own_wait(own: &Decision) -> Wait {
    match own.allowed {
        true => Wait::After(0),
        false => own.retry_after,
    }
}

fn later(left_ns: u128, own: Wait) -> Wait {
    match own {
        Wait::Never => Wait::Never,
        Wait::After(w) => Wait::After(w.max(left_ns)),
    }
}

fn reset_at_least(reset_ns: u128, retry: Wait) -> u128 {
    match retry {
        Wait::Never => reset_ns,
        Wait::After(w) => reset_ns.max(w),
    }
}

impl Rule {
    /// The penalty this rule starts at `now_ns` on a key that held `before`
    /// (not active): `d`; with `ESCALATE max`, twice `before`'s length (at
    /// least `d`, at most `max`) if `before` ended at most `max` ago.
    pub fn start(&self, before: Option<Penalty>, now_ns: u64) -> Penalty {
        let d = self.d_ms.get();
        let Some(max) = self.max_ms.map(NonZeroU64::get) else {
            return Penalty::from_now(now_ns, d, 0);
        };
        let recent = before.filter(|b| now_ns as u128 <= ns(b.end_ms.saturating_add(max)));
        let len = match recent {
            Some(b) => b.len_ms.saturating_mul(2).max(d).min(max),
            None => d,
        };
        let end_ms = now_ms_up(now_ns).saturating_add(len);
        Penalty::from_now(now_ns, len, end_ms.saturating_add(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;
    const T0: u64 = 1_764_489_600_000 * NANOS_PER_MS;

    fn rule(d: u64, max: Option<u64>) -> Rule {
        Rule {
            d_ms: NonZeroU64::new(d).unwrap(),
            max_ms: max.map(|m| NonZeroU64::new(m).unwrap()),
        }
    }

    #[test]
    fn a_first_penalty_lasts_d_and_is_kept_max_past_its_end() {
        let p = rule(15 * MIN, Some(1440 * MIN)).start(None, T0);
        assert_eq!(p.len_ms, 15 * MIN);
        assert_eq!(p.end_ms, T0 / NANOS_PER_MS + 15 * MIN);
        assert_eq!(p.keep_ms, p.end_ms + 1440 * MIN);
        let plain = rule(15 * MIN, None).start(None, T0 + 1);
        assert_eq!(plain.end_ms, T0 / NANOS_PER_MS + 1 + 15 * MIN, "rounded up");
        assert_eq!(plain.keep_ms, plain.end_ms);
    }

    #[test]
    fn escalation_doubles_within_max_of_the_end_caps_at_max_and_forgets_after() {
        let r = rule(15 * MIN, Some(24 * 60 * MIN));
        let mut p = r.start(None, T0);
        let mut lens = vec![p.len_ms / MIN];
        for _ in 0..8 {
            let at = p.end_ms * NANOS_PER_MS + 5 * MIN * NANOS_PER_MS;
            p = r.start(Some(p), at);
            lens.push(p.len_ms / MIN);
        }
        assert_eq!(lens, [15, 30, 60, 120, 240, 480, 960, 1440, 1440]);
        // Exactly max after the end still escalates; a nanosecond later it does not.
        let edge = (p.end_ms + 24 * 60 * MIN) * NANOS_PER_MS;
        assert_eq!(r.start(Some(p), edge).len_ms, 1440 * MIN);
        assert_eq!(r.start(Some(p), edge + 1).len_ms, 15 * MIN);
        // Without ESCALATE a penalty never grows.
        assert_eq!(rule(15 * MIN, None).start(Some(p), T0).len_ms, 15 * MIN);
        // A short ban before: doubled, but never below d.
        let ban = Penalty::from_now(T0, 1, 0);
        assert_eq!(r.start(Some(ban), T0 + 2 * NANOS_PER_MS).len_ms, 15 * MIN);
    }

    #[test]
    fn a_penalty_denies_until_its_end_and_waits_for_the_limiter_too() {
        let p = Penalty::from_now(T0, 1000, 0);
        let own = Decision {
            allowed: true,
            limit: 5,
            remaining: 4,
            retry_after: Wait::After(0),
            reset_after_ns: 10,
        };
        let d = p.deny(&own, T0);
        assert_eq!(d.reply(), [0, 5, 0, 1000, 1000]);
        let slow = Decision {
            allowed: false,
            retry_after: Wait::After(3000 * NANOS_PER_MS as u128),
            reset_after_ns: 9000 * NANOS_PER_MS as u128,
            ..own
        };
        assert_eq!(p.deny(&slow, T0).reply(), [0, 5, 0, 3000, 9000]);
        let never = Decision {
            retry_after: Wait::Never,
            ..slow
        };
        assert_eq!(p.deny(&never, T0).reply(), [0, 5, 0, -1, 9000]);
        assert!(p.active(T0 + 999_999_999) && !p.active(T0 + 1_000_000_000));
        assert_eq!(p.peek_zero(&own, &own, T0).reply(), [1, 5, 0, 1000, 1000]);
        assert_eq!(p.under(&own, T0).reply(), [1, 5, 0, 0, 1000]);
    }
}
