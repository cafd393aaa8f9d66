//! Calendar quota: a fixed window whose edges are a calendar's renewals
//! (`calendar`): admitted iff `count + cost <= limit` in the current period.
//!
//! The stored period is used as it is while `now` is before its end and the
//! call's calendar is the stored one (no time zone is looked at: the common
//! call). A clock that stepped back before its start stays in it. At its end,
//! on an absent key, or under another calendar, the period holding `now` is
//! computed; the count carries over to a new calendar's period while the
//! stored period has not ended (changing the calendar never gives units back
//! mid-period), and starts at 0 otherwise.

use std::num::NonZeroU64;

use super::calendar::Calendar;
use super::{Decision, Outcome, Wait, MAX_DEBT, NANOS_PER_MS};

/// `limit` units per period of `calendar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub limit: NonZeroU64,
    pub calendar: Calendar,
}

/// The stored state: the period `[start_ms, end_ms)`, the cost admitted in
/// it, and whether its calendar is the call's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaState {
    pub start_ms: u64,
    pub end_ms: u64,
    pub count: u64,
    pub same_calendar: bool,
}

/// The state to store: the period and its count (under the call's calendar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaWrite {
    pub start_ms: u64,
    pub end_ms: u64,
    pub count: u64,
}

/// The period's instant `ms` in nanoseconds.
fn ns(ms: u64) -> u128 {
    ms as u128 * NANOS_PER_MS as u128
}

impl Quota {
    /// The current period and the count it holds; `None` only if the calendar
    /// cannot place `now` (beyond the civil calendar's years).
    fn current(&self, stored: Option<QuotaState>, now: u64) -> Option<QuotaWrite> {
        if let Some(s) = stored.filter(|s| s.same_calendar && (now as u128) < ns(s.end_ms)) {
            return Some(QuotaWrite {
                start_ms: s.start_ms,
                end_ms: s.end_ms,
                count: s.count,
            });
        }
        let p = self.calendar.period_at(now / NANOS_PER_MS)?;
        let count = match stored {
            Some(s) if !s.same_calendar && (now as u128) < ns(s.end_ms) => s.count,
            _ => 0,
        };
        Some(QuotaWrite {
            start_ms: p.start_ms,
            end_ms: p.end_ms,
            count,
        })
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

    pub fn decide(
        &self,
        stored: Option<QuotaState>,
        now: u64,
        cost: u64,
    ) -> Option<Outcome<QuotaWrite>> {
        let cur = self.current(stored, now)?;
        let until_end = ns(cur.end_ms) - now as u128;
        let (limit, count) = (self.limit.get(), cur.count);
        if cost > limit {
            let decision = self.decision(false, count, until_end, Wait::Never);
            return Some(Outcome {
                decision,
                write: None,
            });
        }
        if count.saturating_add(cost) > limit {
            let decision = self.decision(false, count, until_end, Wait::After(until_end));
            return Some(Outcome {
                decision,
                write: None,
            });
        }
        let after = count + cost;
        Some(Outcome {
            decision: self.decision(true, after, until_end, Wait::After(0)),
            write: (cost > 0).then_some(QuotaWrite {
                count: after,
                ..cur
            }),
        })
    }

    /// Gives `units` back to the current period (`REFUND`), never below zero.
    /// A write with `count == 0` means the quota is idle.
    pub fn refund(
        &self,
        stored: Option<QuotaState>,
        now: u64,
        units: u64,
    ) -> Option<Outcome<QuotaWrite>> {
        let cur = self.current(stored, now)?;
        let after = cur.count.saturating_sub(units);
        Some(Outcome {
            decision: self.decision(true, after, ns(cur.end_ms) - now as u128, Wait::After(0)),
            write: (after < cur.count).then_some(QuotaWrite {
                count: after,
                ..cur
            }),
        })
    }

    /// Charges `units` whatever is left (`DEBIT`), as `Fixed::debit` does.
    pub fn debit(
        &self,
        stored: Option<QuotaState>,
        now: u64,
        units: u64,
    ) -> Option<Outcome<QuotaWrite>> {
        let cur = self.current(stored, now)?;
        let limit = self.limit.get();
        let count = cur.count;
        let after = count.max(count.saturating_add(units).min(limit + MAX_DEBT));
        let until_end = ns(cur.end_ms) - now as u128;
        let retry = if after < limit { 0 } else { until_end };
        Some(Outcome {
            decision: self.decision(true, after, until_end, Wait::After(retry)),
            write: (after > count).then_some(QuotaWrite {
                count: after,
                ..cur
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::calendar::{Anchor, Calendar, Unit, Zone};
    use super::*;

    const MS: u64 = NANOS_PER_MS;
    /// 2026-12-09T00:00Z; its month (UTC, the 1st) is [2026-12-01, 2027-01-01).
    const NOW: u64 = 1_796_774_400_000 * MS;
    const DEC: u64 = 1_796_083_200_000;
    const JAN: u64 = 1_798_761_600_000;

    fn quota(limit: u64, unit: &str, zone: &str) -> Quota {
        Quota {
            limit: NonZeroU64::new(limit).unwrap(),
            calendar: Calendar {
                unit: Unit::parse(unit.as_bytes()).unwrap(),
                anchor: Anchor::DEFAULT,
                zone: Zone::parse(zone.as_bytes()).unwrap(),
            },
        }
    }

    fn state(w: QuotaWrite, same_calendar: bool) -> QuotaState {
        QuotaState {
            start_ms: w.start_ms,
            end_ms: w.end_ms,
            count: w.count,
            same_calendar,
        }
    }

    #[test]
    fn counts_to_the_renewal() {
        let q = quota(3, "MONTH", "UTC");
        let o = q.decide(None, NOW, 2).unwrap();
        let w = o.write.unwrap();
        assert_eq!((w.start_ms, w.end_ms, w.count), (DEC, JAN, 2));
        assert_eq!(o.decision.reply(), [1, 3, 1, 0, (JAN - NOW / MS) as i64]);
        let o = q.decide(Some(state(w, true)), NOW, 2).unwrap();
        assert_eq!(o.write, None);
        assert_eq!(o.decision.reply()[..4], [0, 3, 1, (JAN - NOW / MS) as i64]);
        assert_eq!(
            q.decide(Some(state(w, true)), NOW, 4)
                .unwrap()
                .decision
                .retry_after,
            Wait::Never
        );
        // At the renewal the count starts again.
        let o = q.decide(Some(state(w, true)), JAN * MS, 3).unwrap();
        assert_eq!(o.write.unwrap().start_ms, JAN);
        assert!(o.decision.allowed);
        // A clock stepped back before the period stays in it.
        let o = q.decide(Some(state(w, true)), (DEC - 5) * MS, 1).unwrap();
        assert_eq!(o.write.unwrap(), QuotaWrite { count: 3, ..w });
        // COST 0 writes nothing; a refund to 0 is a write of 0.
        assert_eq!(q.decide(Some(state(w, true)), NOW, 0).unwrap().write, None);
        assert_eq!(
            q.refund(Some(state(w, true)), NOW, 9)
                .unwrap()
                .write
                .unwrap()
                .count,
            0
        );
        let d = q.debit(Some(state(w, true)), NOW, 9).unwrap();
        assert_eq!((d.write.unwrap().count, d.decision.remaining), (11, 0));
    }

    #[test]
    fn a_new_calendar_keeps_the_count_until_the_old_period_ends() {
        let month = quota(10, "MONTH", "UTC");
        let w = month.decide(None, NOW, 4).unwrap().write.unwrap();
        let day = quota(10, "DAY", "Asia/Kolkata");
        let o = day.decide(Some(state(w, false)), NOW, 1).unwrap();
        let nw = o.write.unwrap();
        // 2026-12-09T00:00Z is 05:30 in Kolkata: the day began at 2026-12-08T18:30Z.
        assert_eq!(
            (nw.start_ms, nw.end_ms - nw.start_ms, nw.count),
            (NOW / MS - 19_800_000, 86_400_000, 5)
        );
        // Past the old period's end, the new calendar starts from 0.
        let o = day.decide(Some(state(w, false)), JAN * MS + 1, 1).unwrap();
        assert_eq!(o.write.unwrap().count, 1);
    }
}
