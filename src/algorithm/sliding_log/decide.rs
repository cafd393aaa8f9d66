//! Deciding a request on a log, refunding into it and debiting it.

use super::super::{Decision, Outcome, Wait, MAX_DEBT};
use super::census::{census, Census};
use super::{Corrupt, Entry, LogRefund, LogView, LogWrite, SlidingLog};

/// Entries visited forward from the oldest live one before a denial's retry
/// time is searched by score instead.
const RETRY_SCAN: usize = 4;

impl SlidingLog {
    pub fn decide(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        cost: u64,
    ) -> Result<Outcome<LogWrite>, Corrupt> {
        let limit = self.limit.get();
        let cutoff_us = self.cutoff_us(now);
        let c = census(log, cutoff_us)?;
        let now_wide = now as u128;
        let until_leaves = |ns: u64| self.leaves_at_ns(ns).saturating_sub(now_wide);
        let newest_live = c.newest.filter(|e| e.score() > cutoff_us).map(|e| e.ns);
        let decision = |allowed, units: u64, retry_after, newest: Option<u64>| Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(units),
            retry_after,
            reset_after_ns: newest.map_or(0, until_leaves),
        };
        let quiet = |d| {
            Ok(Outcome {
                decision: d,
                write: None,
            })
        };
        if cost > limit {
            return quiet(decision(false, c.units, Wait::Never, newest_live));
        }
        if c.units.saturating_add(cost) <= limit {
            if cost == 0 {
                return quiet(decision(true, c.units, Wait::After(0), newest_live));
            }
            let entry = next_entry(&c, now, cost)?;
            let ns = entry.ns;
            return Ok(Outcome {
                decision: decision(true, c.units + cost, Wait::After(0), Some(ns)),
                write: Some(LogWrite {
                    cutoff_us,
                    lapsed: c.lapsed,
                    entry,
                    replaces: None,
                }),
            });
        }
        // Denied: wait until the oldest entries holding `excess` units have left.
        let excess = c.units.saturating_add(cost) - limit;
        let score = self.score_reaching(log, &c, excess)?;
        let retry = Wait::After(self.score_leaves_at_ns(score).saturating_sub(now_wide));
        quiet(decision(false, c.units, retry, newest_live))
    }

    /// Charges `units` whatever is left (`DEBIT`): one entry of weight
    /// `units`, or less where the window would pass `limit + MAX_DEBT` (none
    /// at the cap). Once the window holds `limit` units, the debit joins the
    /// newest entry instead, moved to the debit's time: a log never holds more
    /// than `limit` live entries (an entry is at least one unit, and one is
    /// added only while the window holds fewer than `limit`), however many
    /// debits it takes, and the joined units leave no earlier than they would
    /// apart. Admitted;
    /// `retry_after` is when a request of cost 1 is: once the oldest entries
    /// holding the excess have left.
    pub fn debit(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        units: u64,
    ) -> Result<Outcome<LogWrite>, Corrupt> {
        let limit = self.limit.get();
        let cutoff_us = self.cutoff_us(now);
        let c = census(log, cutoff_us)?;
        let weight = units.min((limit + MAX_DEBT).saturating_sub(c.units));
        let after = c.units + weight;
        // The newest entry a debit joins: live (the window holds `limit`
        // units, so it is) and weighted.
        let joins = c
            .newest
            .filter(|e| weight > 0 && c.units >= limit && e.sum.is_some());
        let (write, newest_ns) = match weight {
            0 => (
                None,
                c.newest.filter(|e| e.score() > cutoff_us).map(|e| e.ns),
            ),
            _ => {
                let mut entry = next_entry(&c, now, weight)?;
                if let Some(newest) = joins {
                    entry.cost = newest.cost.checked_add(weight).ok_or(Corrupt)?;
                }
                let write = LogWrite {
                    cutoff_us,
                    lapsed: c.lapsed,
                    entry,
                    replaces: joins,
                };
                (Some(write), Some(entry.ns))
            }
        };
        // The units in entries older than the one the debit adds (or joins).
        let older = c.units - joins.map_or(0, |e| e.cost);
        let now_wide = now as u128;
        let retry = match after.checked_sub(limit) {
            None => 0,
            // The oldest entries holding `excess` units, or all of them and
            // part of the newest (which then leaves last).
            Some(over) => {
                let excess = over + 1;
                let leaves = match (excess <= older, newest_ns) {
                    (true, _) => self.score_leaves_at_ns(self.score_reaching(log, &c, excess)?),
                    (false, Some(ns)) => self.leaves_at_ns(ns),
                    (false, None) => return Err(Corrupt),
                };
                leaves.saturating_sub(now_wide)
            }
        };
        let decision = Decision {
            allowed: true,
            limit,
            remaining: limit.saturating_sub(after),
            retry_after: Wait::After(retry),
            reset_after_ns: newest_ns
                .map_or(0, |ns| self.leaves_at_ns(ns).saturating_sub(now_wide)),
        };
        Ok(Outcome { decision, write })
    }

    /// The score of the oldest live entry through which the live units reach
    /// `k` (`1 <= k <= units`): by rank among legacy entries, else a few entries
    /// forward from the oldest live weighted one, else a binary search on score
    /// (sums grow with scores): O(log(window) * log n).
    fn score_reaching(
        &self,
        log: &(impl LogView + ?Sized),
        c: &Census,
        k: u64,
    ) -> Result<u64, Corrupt> {
        if k <= c.legacy {
            let e = log.at_rank(c.first_rank + k - 1)?.ok_or(Corrupt)?;
            return Ok(e.score());
        }
        let target = c.base.checked_add(k - c.legacy).ok_or(Corrupt)?;
        let reaches = |e: &Entry| e.sum.is_some_and(|s| s >= target);
        let first = c.first_weighted.ok_or(Corrupt)?;
        // The scan below visits `first` as its first weighted entry (the oldest
        // live one): when it reaches the target, that is the answer, with no
        // seek. Not only a shortcut: a sorted set's scores are doubles, and
        // beyond 2^53 us `score - 1` can round to `first`'s own score, which the
        // exclusive scan would then skip. `functions/rl.lua` answers the same way.
        if reaches(&first) {
            return Ok(first.score());
        }
        let (mut found, mut seen, mut lo) = (None, 0, first.score());
        log.scan_after(first.score().saturating_sub(1), &mut |e| {
            if e.sum.is_none() {
                return true;
            }
            lo = e.score();
            if reaches(&e) {
                found = Some(lo);
                return false;
            }
            seen += 1;
            seen < RETRY_SCAN
        })?;
        if let Some(score) = found {
            return Ok(score);
        }
        let newest = c.newest.ok_or(Corrupt)?;
        if !reaches(&newest) {
            return Err(Corrupt);
        }
        let through = |s: u64| -> Result<bool, Corrupt> {
            Ok(log.last_through(s)?.is_some_and(|e| reaches(&e)))
        };
        if through(lo)? {
            return Ok(lo);
        }
        // Invariant: nothing through score `lo` reaches the target; through `hi` does.
        let mut hi = newest.score();
        if hi <= lo {
            return Err(Corrupt);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if through(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// Gives `units` back (`REFUND`): removes the oldest live entries whole
    /// while their cost fits in what is left to give, then takes the rest from
    /// the next one's cost (its sum stays: the units through it are its sum
    /// less its cost). Oldest first, because a refund does not say which entry
    /// was its own: the entries that stay are the newest, so the log never
    /// holds fewer units in any window ending now than the requests in it
    /// used, whichever of them gives back. Work: one step per removed entry
    /// (each was added by one admitted request), plus the census.
    pub fn refund(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        units: u64,
    ) -> Result<Outcome<LogRefund>, Corrupt> {
        let cutoff_us = self.cutoff_us(now);
        let c = census(log, cutoff_us)?;
        let mut give = units.min(c.units);
        let (mut remove, mut rewrite, mut newest_left_ns) = (0u64, None, None);
        if give < c.units {
            let (mut left, mut stopped) = (give, false);
            log.scan_after(cutoff_us, &mut |e| {
                if left >= e.cost {
                    left -= e.cost;
                    remove += 1;
                    return true;
                }
                if let (true, Some(sum)) = (left > 0, e.sum) {
                    rewrite = Some((e, Entry::weighted(e.ns, e.cost - left, sum)));
                }
                stopped = true;
                false
            })?;
            if stopped {
                // An entry stays, so the newest one, live, stays.
                newest_left_ns = Some(c.newest.ok_or(Corrupt)?.ns);
            } else {
                // Every live entry went: the census counted units of entries an
                // earlier refund removed (their sums run on through the entries
                // after them) behind lapsed ones a clock stepping back brought
                // back. The key goes, as when everything is given back.
                give = c.units;
            }
        }
        let decision = Decision {
            allowed: true,
            limit: self.limit.get(),
            remaining: self.limit.get().saturating_sub(c.units - give),
            retry_after: Wait::After(0),
            reset_after_ns: newest_left_ns
                .map_or(0, |ns| self.leaves_at_ns(ns).saturating_sub(now as u128)),
        };
        let write = (give > 0).then_some(LogRefund {
            cutoff_us,
            remove,
            rewrite,
            newest_left_ns,
        });
        Ok(Outcome { decision, write })
    }
}

/// The entry a request of `cost` units adds: a nanosecond after every stored
/// entry, even if the clock stepped back (a duplicate would merge two
/// entries), its sum running on from the newest's.
fn next_entry(c: &Census, now: u64, cost: u64) -> Result<Entry, Corrupt> {
    let (ns, sum) = match c.newest {
        None => (now, cost),
        Some(e) => (
            now.max(e.ns.checked_add(1).ok_or(Corrupt)?),
            e.sum.unwrap_or(0).checked_add(cost).ok_or(Corrupt)?,
        ),
    };
    Ok(Entry::weighted(ns, cost, sum))
}
