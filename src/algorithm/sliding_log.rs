//! Exact sliding log: one entry per admitted request, whatever its cost. Each
//! entry has its own nanosecond (unique and strictly increasing per key), is
//! scored by that nanosecond's microsecond, and carries the request's `cost` and
//! `sum`, the running total of cost admitted into the key through it. An entry
//! counts while `now_us < score + window_us`. Admitted iff `units + cost <= limit`.
//!
//! The units in the window are `sum(newest) - (sum(oldest live) - cost(oldest live))`:
//! two seeks, however many entries the key holds or how many have lapsed. Keys
//! written before weighted entries existed hold *legacy* entries (one per unit,
//! member = bare nanosecond, no sum); they are all older than any weighted entry
//! of the same key, are counted by rank (`ZCOUNT`, `ZRANGE r r`: O(log n)), and
//! leave by themselves. Lapsed entries are never visited to be counted; a write
//! removes at most [`TRIM_MAX`] of them, oldest first.
//!
//! Stored arithmetic is checked: a member that would overflow (a hand-written
//! `18446744073709551615`, a sum at `u64::MAX`) is [`Corrupt`], never merged.

use super::decimal::StackBytes;
use super::{Decision, Outcome, Wait, NANOS_PER_MS, NANOS_PER_US};

/// At most this many lapsed entries are removed by one write (oldest first).
pub const TRIM_MAX: usize = 64;

/// Entries visited forward from the oldest live one before a denial's retry
/// time is searched by score instead.
const RETRY_SCAN: usize = 4;

/// Invariant: every field is at least 1; `window_ns` is a whole number of milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    pub limit: u64,
    pub window_ns: u64,
}

/// One stored entry: a request of `cost` units at nanosecond `ns`, and `sum`,
/// the running total through it (`None` for a legacy entry: one unit, no sum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ns: u64,
    pub cost: u64,
    pub sum: Option<u64>,
}

/// The stored log holds something the module did not write, or that would
/// overflow: the key is refused, untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

impl Entry {
    pub fn legacy(ns: u64) -> Entry {
        Entry {
            ns,
            cost: 1,
            sum: None,
        }
    }

    pub fn weighted(ns: u64, cost: u64, sum: u64) -> Entry {
        Entry {
            ns,
            cost,
            sum: Some(sum),
        }
    }

    pub fn score(&self) -> u64 {
        score_of(self.ns)
    }

    /// The sorted-set member: `<ns>:<cost>:<sum>` with `ns` zero-padded to 19
    /// digits (so members of one score sort by time), or the bare `<ns>` of a
    /// legacy entry.
    pub fn member(&self) -> Member {
        let mut member = Member::new();
        match self.sum {
            Some(sum) => {
                member.push_u64(self.ns, 19);
                member.push(b":");
                member.push_u64(self.cost, 1);
                member.push(b":");
                member.push_u64(sum, 1);
            }
            None => member.push_u64(self.ns, 1),
        }
        member
    }

    /// Parses a stored member and checks its score; `None` if the module did not
    /// write it (a weighted entry has `1 <= cost <= sum`).
    pub fn parse(member: &[u8], score: f64) -> Option<Entry> {
        // One pass over up to three fields of 1 to 20 digits, separated by `:`.
        let mut fields = [0u64; 3];
        let (mut field, mut len) = (0, 0);
        for &b in member {
            if b == b':' {
                if len == 0 || field == 2 {
                    return None;
                }
                (field, len) = (field + 1, 0);
            } else {
                let digit = b.wrapping_sub(b'0');
                if digit > 9 || len == 20 {
                    return None;
                }
                fields[field] = fields[field].checked_mul(10)?.checked_add(digit.into())?;
                len += 1;
            }
        }
        let entry = match (field, len) {
            (_, 0) | (1, _) => return None,
            (0, _) => Entry::legacy(fields[0]),
            _ => {
                let [ns, cost, sum] = fields;
                if cost == 0 || sum < cost {
                    return None;
                }
                Entry::weighted(ns, cost, sum)
            }
        };
        (score == entry.score() as f64).then_some(entry)
    }
}

/// Read access to the stored log (a sorted set in Redis, a vector in tests),
/// oldest first. Every operation is O(log n) on a sorted set, except the two
/// scans, which visit only what their callback asks for.
pub trait LogView {
    /// The number of stored entries (lapsed ones included).
    fn len(&self) -> u64;
    /// The number of entries scored above `cutoff_us` (`ZCOUNT key (cutoff +inf`).
    fn count_after(&self, cutoff_us: u64) -> Result<u64, Corrupt>;
    /// Visits the entries scored above `cutoff_us`, oldest first, while `visit` returns true.
    fn scan_after(
        &self,
        cutoff_us: u64,
        visit: &mut dyn FnMut(Entry) -> bool,
    ) -> Result<(), Corrupt>;
    /// The newest entry scored at or below `score_us`.
    fn last_through(&self, score_us: u64) -> Result<Option<Entry>, Corrupt>;
    /// Visits the entries, newest first, while `visit` returns true.
    fn scan_newest(&self, visit: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt>;
    /// The entry of rank `rank` (0 = oldest; `ZRANGE key rank rank`).
    fn at_rank(&self, rank: u64) -> Result<Option<Entry>, Corrupt>;
    /// The oldest entry.
    fn oldest(&self) -> Result<Option<Entry>, Corrupt> {
        self.at_rank(0)
    }
    /// The newest entry.
    fn newest(&self) -> Result<Option<Entry>, Corrupt> {
        let mut newest = None;
        self.scan_newest(&mut |e| {
            newest = Some(e);
            false
        })?;
        Ok(newest)
    }
}

/// What an admitted request writes: if `lapsed` (some entry is scored
/// `<= cutoff_us`), remove up to [`TRIM_MAX`] such entries (oldest first); then
/// add `entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    pub cutoff_us: u64,
    pub lapsed: bool,
    pub entry: Entry,
}

/// What a refund writes: remove the `remove` newest entries, then, if
/// `rewrite` is set, replace the next one (`.0`) by `.1` (same nanosecond and
/// score, smaller cost and sum). `newest_left_ns` is the newest entry that
/// stays; `None` when nothing in the window stays (the key is deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRefund {
    pub remove: u64,
    pub rewrite: Option<(Entry, Entry)>,
    pub newest_left_ns: Option<u64>,
}

/// A sorted-set member: at most 19 + 1 + 20 + 1 + 20 bytes.
pub type Member = StackBytes<61>;

/// The score of an entry at nanosecond `ns`.
pub fn score_of(ns: u64) -> u64 {
    ns / NANOS_PER_US
}

/// The live part of a log (entries scored above the cutoff), found in O(log n).
#[derive(Clone, Copy, Debug, Default)]
struct Census {
    /// Units in the window.
    units: u64,
    /// Live legacy entries (one unit each): ranks `first_rank ..`.
    legacy: u64,
    first_rank: u64,
    /// The sum before the oldest live weighted entry: weighted entry `e` holds
    /// the live units `legacy + e.sum - base` through it.
    base: u64,
    /// The oldest live weighted entry.
    first_weighted: Option<Entry>,
    /// The newest stored entry, live or not.
    newest: Option<Entry>,
    /// Whether some stored entry has lapsed.
    lapsed: bool,
}

fn census(log: &(impl LogView + ?Sized), cutoff_us: u64) -> Result<Census, Corrupt> {
    let newest = log.newest()?;
    // The oldest live entry: the oldest stored one, unless it has lapsed.
    let mut oldest = log.oldest()?;
    let lapsed = oldest.is_some_and(|e| e.score() <= cutoff_us);
    if lapsed {
        oldest = None;
        log.scan_after(cutoff_us, &mut |e| {
            oldest = Some(e);
            false
        })?;
    }
    let (Some(newest), Some(oldest)) = (newest, oldest) else {
        return Ok(Census {
            newest,
            lapsed,
            ..Census::default()
        });
    };
    let before = |e: Entry, sum: u64| sum.checked_sub(e.cost).ok_or(Corrupt);
    match (oldest.sum, newest.sum) {
        // The common case: no live legacy entry.
        (Some(first), Some(last)) => {
            let base = before(oldest, first)?;
            Ok(Census {
                units: last.checked_sub(base).ok_or(Corrupt)?,
                base,
                first_weighted: Some(oldest),
                newest: Some(newest),
                lapsed,
                ..Census::default()
            })
        }
        // Only legacy entries: one unit each.
        (None, None) => {
            let live = log.count_after(cutoff_us)?;
            Ok(Census {
                units: live,
                legacy: live,
                first_rank: log.len().checked_sub(live).ok_or(Corrupt)?,
                newest: Some(newest),
                lapsed,
                ..Census::default()
            })
        }
        // Legacy entries, then weighted ones: find the first weighted by rank.
        (None, Some(last)) => {
            let len = log.len();
            let first_rank = len
                .checked_sub(log.count_after(cutoff_us)?)
                .ok_or(Corrupt)?;
            // Invariant: rank `lo` is legacy, rank `hi` is weighted.
            let (mut lo, mut hi) = (first_rank, len.checked_sub(1).ok_or(Corrupt)?);
            let mut first = newest;
            while hi > lo + 1 {
                let mid = lo + (hi - lo) / 2;
                let e = log.at_rank(mid)?.ok_or(Corrupt)?;
                if e.sum.is_some() {
                    (hi, first) = (mid, e);
                } else {
                    lo = mid;
                }
            }
            let base = before(first, first.sum.ok_or(Corrupt)?)?;
            let legacy = hi - first_rank;
            Ok(Census {
                units: legacy
                    .checked_add(last.checked_sub(base).ok_or(Corrupt)?)
                    .ok_or(Corrupt)?,
                legacy,
                first_rank,
                base,
                first_weighted: Some(first),
                newest: Some(newest),
                lapsed,
            })
        }
        // A legacy entry after a weighted one: not written by the module.
        (Some(_), None) => Err(Corrupt),
    }
}

impl SlidingLog {
    fn window_us(&self) -> u64 {
        self.window_ns / NANOS_PER_US
    }

    fn cutoff_us(&self, now: u64) -> u64 {
        score_of(now).saturating_sub(self.window_us())
    }

    /// When the entry at nanosecond `ns` leaves the window (absolute, ns).
    pub fn leaves_at_ns(&self, ns: u64) -> u128 {
        self.score_leaves_at_ns(score_of(ns))
    }

    fn score_leaves_at_ns(&self, score_us: u64) -> u128 {
        (score_us as u128 + self.window_us() as u128) * NANOS_PER_US as u128
    }

    pub fn decide(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        cost: u64,
    ) -> Result<Outcome<LogWrite>, Corrupt> {
        let cutoff_us = self.cutoff_us(now);
        let c = census(log, cutoff_us)?;
        let now_wide = now as u128;
        let until_leaves = |ns: u64| self.leaves_at_ns(ns).saturating_sub(now_wide);
        let newest_live = c.newest.filter(|e| e.score() > cutoff_us).map(|e| e.ns);
        let decision = |allowed, units: u64, retry_after, newest: Option<u64>| Decision {
            allowed,
            limit: self.limit,
            remaining: self.limit.saturating_sub(units),
            retry_after,
            reset_after_ns: newest.map_or(0, until_leaves),
        };
        let quiet = |d| {
            Ok(Outcome {
                decision: d,
                write: None,
            })
        };
        if cost > self.limit {
            return quiet(decision(false, c.units, Wait::Never, newest_live));
        }
        if c.units.saturating_add(cost) <= self.limit {
            if cost == 0 {
                return quiet(decision(true, c.units, Wait::After(0), newest_live));
            }
            // A nanosecond after every stored entry, even if the clock stepped back:
            // a duplicate would merge two entries. Sums run on from the newest.
            let (ns, sum) = match c.newest {
                None => (now, cost),
                Some(e) => (
                    now.max(e.ns.checked_add(1).ok_or(Corrupt)?),
                    e.sum.unwrap_or(0).checked_add(cost).ok_or(Corrupt)?,
                ),
            };
            let entry = Entry::weighted(ns, cost, sum);
            return Ok(Outcome {
                decision: decision(true, c.units + cost, Wait::After(0), Some(ns)),
                write: Some(LogWrite {
                    cutoff_us,
                    lapsed: c.lapsed,
                    entry,
                }),
            });
        }
        // Denied: wait until the oldest entries holding `excess` units have left.
        let excess = c.units.saturating_add(cost) - self.limit;
        let score = self.score_reaching(log, &c, excess)?;
        let retry = Wait::After(self.score_leaves_at_ns(score).saturating_sub(now_wide));
        quiet(decision(false, c.units, retry, newest_live))
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

    /// Gives `units` back (`REFUND`): removes the newest entries whole while
    /// their cost fits in what is left to give, then takes the rest from the next
    /// one's cost and sum. Work: one step per removed entry (each was added by
    /// one admitted request), plus the census.
    pub fn refund(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        units: u64,
    ) -> Result<Outcome<LogRefund>, Corrupt> {
        let c = census(log, self.cutoff_us(now))?;
        let give = units.min(c.units);
        let (mut remove, mut rewrite, mut newest_left_ns) = (0u64, None, None);
        if give < c.units {
            let mut left = give;
            log.scan_newest(&mut |e| {
                if left >= e.cost {
                    left -= e.cost;
                    remove += 1;
                    return true;
                }
                if let (true, Some(sum)) = (left > 0, e.sum) {
                    rewrite = Some((e, Entry::weighted(e.ns, e.cost - left, sum - left)));
                }
                newest_left_ns = Some(e.ns);
                false
            })?;
            newest_left_ns.ok_or(Corrupt)?;
        }
        let decision = Decision {
            allowed: true,
            limit: self.limit,
            remaining: self.limit.saturating_sub(c.units - give),
            retry_after: Wait::After(0),
            reset_after_ns: newest_left_ns
                .map_or(0, |ns| self.leaves_at_ns(ns).saturating_sub(now as u128)),
        };
        let write = (give > 0).then_some(LogRefund {
            remove,
            rewrite,
            newest_left_ns,
        });
        Ok(Outcome { decision, write })
    }

    /// The absolute expiry after a write: when its (newest) entry leaves the window.
    pub fn idle_at_ns(&self, write: &LogWrite) -> u128 {
        self.leaves_at_ns(write.entry.ns)
    }
}

/// `window_ns` must be whole milliseconds: so are all window edges.
const _: () = assert!(NANOS_PER_MS % NANOS_PER_US == 0);

/// An in-memory sliding log for tests of the pure algorithm and its callers.
#[cfg(test)]
pub mod testing {
    use super::*;

    /// Entries oldest first (scores, then members, ascending), as a sorted set holds them.
    #[derive(Default, Debug, Clone)]
    pub struct VecLog(pub Vec<Entry>);

    impl LogView for VecLog {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn count_after(&self, cutoff_us: u64) -> Result<u64, Corrupt> {
            Ok(self.0.iter().filter(|e| e.score() > cutoff_us).count() as u64)
        }
        fn scan_after(
            &self,
            cutoff_us: u64,
            visit: &mut dyn FnMut(Entry) -> bool,
        ) -> Result<(), Corrupt> {
            for e in self.0.iter().filter(|e| e.score() > cutoff_us) {
                if !visit(*e) {
                    break;
                }
            }
            Ok(())
        }
        fn last_through(&self, score_us: u64) -> Result<Option<Entry>, Corrupt> {
            Ok(self.0.iter().rev().find(|e| e.score() <= score_us).copied())
        }
        fn scan_newest(&self, visit: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt> {
            for e in self.0.iter().rev() {
                if !visit(*e) {
                    break;
                }
            }
            Ok(())
        }
        fn at_rank(&self, rank: u64) -> Result<Option<Entry>, Corrupt> {
            Ok(usize::try_from(rank)
                .ok()
                .and_then(|r| self.0.get(r))
                .copied())
        }
    }

    impl VecLog {
        /// Legacy entries (one unit each) at these nanoseconds.
        pub fn legacy(ns: impl IntoIterator<Item = u64>) -> VecLog {
            VecLog(ns.into_iter().map(Entry::legacy).collect())
        }

        /// Applies a write as the store does: at most `TRIM_MAX` lapsed entries go.
        pub fn apply(&mut self, w: &LogWrite) {
            let lapsed = self
                .0
                .iter()
                .take(TRIM_MAX)
                .take_while(|e| e.score() <= w.cutoff_us)
                .count();
            assert_eq!(
                w.lapsed,
                lapsed > 0,
                "the write knows whether entries lapsed"
            );
            self.0.drain(..lapsed);
            assert!(self.0.last().is_none_or(|e| e.ns < w.entry.ns));
            self.0.push(w.entry);
        }

        /// Applies a refund as the store does.
        pub fn apply_refund(&mut self, r: &LogRefund) {
            if r.newest_left_ns.is_none() {
                self.0.clear();
                return;
            }
            self.0.truncate(self.0.len() - r.remove as usize);
            if let Some((old, new)) = r.rewrite {
                let last = self.0.last_mut().expect("an entry to rewrite");
                assert_eq!(*last, old);
                *last = new;
            }
            assert_eq!(self.0.last().map(|e| e.ns), r.newest_left_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::VecLog;
    use super::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 1_700_000_000_000 * MS;

    fn run(l: &SlidingLog, log: &mut VecLog, now: u64, cost: u64) -> [i64; 5] {
        let out = l.decide(log, now, cost).unwrap();
        if let Some(w) = out.write {
            log.apply(&w);
        }
        out.decision.reply()
    }

    fn refund(l: &SlidingLog, log: &mut VecLog, now: u64, units: u64) -> [i64; 5] {
        let out = l.refund(log, now, units).unwrap();
        if let Some(r) = out.write {
            log.apply_refund(&r);
        }
        out.decision.reply()
    }

    fn per_second(limit: u64) -> SlidingLog {
        SlidingLog {
            limit,
            window_ns: 1_000 * MS,
        }
    }

    #[test]
    fn exact_window_and_retry() {
        let l = per_second(3);
        let mut log = VecLog::default();
        assert_eq!(run(&l, &mut log, T0, 1), [1, 3, 2, 0, 1_000]);
        assert_eq!(run(&l, &mut log, T0 + 300 * MS, 2), [1, 3, 0, 0, 1_000]);
        assert_eq!(
            log.0,
            vec![
                Entry::weighted(T0, 1, 1),
                Entry::weighted(T0 + 300 * MS, 2, 3)
            ]
        );
        // Cost 2 must wait for the two oldest units: the second leaves at 1300 ms.
        assert_eq!(run(&l, &mut log, T0 + 500 * MS, 2), [0, 3, 0, 800, 800]);
        // The first entry leaves exactly at T0 + 1 s.
        assert_eq!(run(&l, &mut log, T0 + 1_000 * MS - 1_000, 1)[0], 0);
        assert_eq!(run(&l, &mut log, T0 + 1_000 * MS, 1), [1, 3, 0, 0, 1_000]);
        assert_eq!(log.0.len(), 2, "the lapsed entry was trimmed");
        assert_eq!(log.0[1], Entry::weighted(T0 + 1_000 * MS, 1, 4));
    }

    #[test]
    fn one_entry_per_request_whatever_its_cost() {
        let l = per_second(100_000_000);
        let mut log = VecLog::default();
        assert_eq!(run(&l, &mut log, T0, 100_000_000)[..3], [1, 100_000_000, 0]);
        assert_eq!(log.0, vec![Entry::weighted(T0, 100_000_000, 100_000_000)]);
        assert_eq!(
            run(&l, &mut log, T0 + 1, 1),
            [0, 100_000_000, 0, 1_000, 1_000]
        );
    }

    #[test]
    fn cost_above_limit_is_denied_before_anything_is_added() {
        let l = SlidingLog {
            limit: 5,
            window_ns: 1_000 * MS,
        };
        let mut log = VecLog::default();
        assert_eq!(run(&l, &mut log, T0, 6), [0, 5, 5, -1, 0]);
        assert!(log.0.is_empty());
        assert_eq!(run(&l, &mut log, T0, 0), [1, 5, 5, 0, 0]);
        assert!(log.0.is_empty());
    }

    #[test]
    fn retry_finds_the_entry_that_frees_enough_units_among_many() {
        // 1,000 requests of cost 3, 1 ms apart: the retry of a request needing
        // the k-th oldest unit is when the entry holding it leaves.
        let l = per_second(3_000);
        let mut log = VecLog::default();
        for i in 0..1_000 {
            assert_eq!(run(&l, &mut log, T0 + i * MS, 3)[0], 1);
        }
        let now = T0 + 999 * MS;
        for (cost, entry) in [(1, 0), (3, 0), (4, 1), (13, 4), (2_998, 999), (3_000, 999)] {
            let r = l.decide(&log, now, cost).unwrap().decision.reply();
            assert_eq!(r[..4], [0, 3_000, 0, 1_000 - 999 + entry], "cost {cost}");
        }
        // The same with a legacy log holding the same units, three per microsecond.
        let mut legacy = VecLog::legacy((0..1_000).flat_map(|i| {
            let at = T0 + i * MS;
            [at, at + 1, at + 2]
        }));
        for cost in [1, 3, 4, 13, 2_000, 2_998, 3_000] {
            assert_eq!(
                l.decide(&log, now, cost).unwrap().decision,
                l.decide(&legacy, now, cost).unwrap().decision,
                "cost {cost}"
            );
        }
        // Legacy logs accept weighted entries after their own.
        let later = T0 + 1_500 * MS;
        assert_eq!(run(&l, &mut legacy, later, 5)[..3], [1, 3_000, 1_498]);
        assert_eq!(legacy.0.last(), Some(&Entry::weighted(later, 5, 5)));
    }

    /// A log with legacy entries, then weighted ones, decides exactly as an
    /// all-legacy log holding the same units at the same microseconds.
    #[test]
    fn mixed_logs_decide_as_legacy_logs_holding_the_same_units() {
        let l = per_second(40);
        // Legacy: 10 units at 0..9 ms (one per ms). Weighted: costs 1..=5 at 20, 40, .. ms.
        let mut mixed = VecLog::legacy((0..10).map(|i| T0 + i * MS));
        let mut all_legacy = mixed.clone();
        let mut sum = 0;
        for (i, cost) in (1..=5u64).enumerate() {
            let ns = T0 + (20 + 20 * i as u64) * MS;
            sum += cost;
            mixed.0.push(Entry::weighted(ns, cost, sum));
            all_legacy
                .0
                .extend((0..cost).map(|j| Entry::legacy(ns + j)));
        }
        // 25 units. Every instant from before the first leaves until after the last.
        for at_ms in [
            0, 500, 999, 1_000, 1_003, 1_009, 1_010, 1_020, 1_030, 1_040, 1_059, 1_060, 1_080,
            1_099, 1_100, 1_150,
        ] {
            for cost in [0, 1, 5, 15, 16, 20, 30, 40, 41] {
                let now = T0 + at_ms * MS + 17;
                assert_eq!(
                    l.decide(&mixed, now, cost).unwrap().decision,
                    l.decide(&all_legacy, now, cost).unwrap().decision,
                    "at {at_ms} ms, cost {cost}"
                );
            }
            for units in [1, 3, 12, 25, 30] {
                let now = T0 + at_ms * MS;
                assert_eq!(
                    l.refund(&mixed, now, units).unwrap().decision,
                    l.refund(&all_legacy, now, units).unwrap().decision,
                    "refund {units} at {at_ms} ms"
                );
            }
        }
    }

    #[test]
    fn refunds_remove_whole_entries_then_shrink_the_next() {
        let l = SlidingLog {
            limit: 10,
            window_ns: 1_000 * MS,
        };
        let mut log = VecLog::default();
        run(&l, &mut log, T0, 2);
        run(&l, &mut log, T0 + 400 * MS, 3);
        run(&l, &mut log, T0 + 450 * MS, 1);
        // 6 units; giving 2 back removes the newest (1) and takes 1 from the next (3).
        let out = l.refund(&log, T0 + 500 * MS, 2).unwrap();
        assert_eq!(
            out.write,
            Some(LogRefund {
                remove: 1,
                rewrite: Some((
                    Entry::weighted(T0 + 400 * MS, 3, 5),
                    Entry::weighted(T0 + 400 * MS, 2, 4)
                )),
                newest_left_ns: Some(T0 + 400 * MS)
            })
        );
        assert_eq!(out.decision.reply(), [1, 10, 6, 0, 900]);
        log.apply_refund(&out.write.unwrap());
        // The log still decides right: 4 units, sums running on.
        assert_eq!(run(&l, &mut log, T0 + 600 * MS, 6)[..3], [1, 10, 0]);
        assert_eq!(log.0.last(), Some(&Entry::weighted(T0 + 600 * MS, 6, 10)));
        // An exact whole-entry refund rewrites nothing.
        let out = l.refund(&log, T0 + 600 * MS, 6).unwrap();
        assert_eq!(
            out.write,
            Some(LogRefund {
                remove: 1,
                rewrite: None,
                newest_left_ns: Some(T0 + 400 * MS)
            })
        );
        // Giving back more than is held empties the log.
        let all = l.refund(&log, T0 + 600 * MS, 99).unwrap();
        assert_eq!(all.write.and_then(|r| r.newest_left_ns), None);
        assert_eq!(all.decision.reply(), [1, 10, 10, 0, 0]);
        assert_eq!(l.refund(&VecLog::default(), T0, 1).unwrap().write, None);
        // Refunds reach into legacy entries one unit at a time.
        let mut legacy = VecLog::legacy([T0, T0 + 1, T0 + 2]);
        run(&l, &mut legacy, T0 + 100 * MS, 4);
        assert_eq!(
            refund(&l, &mut legacy, T0 + 200 * MS, 5),
            [1, 10, 8, 0, 800]
        );
        assert_eq!(legacy.0, VecLog::legacy([T0, T0 + 1]).0);
    }

    #[test]
    fn lapsed_entries_are_trimmed_a_bounded_number_per_write() {
        let l = per_second(10);
        // 1,000 lapsed legacy entries and nothing live.
        let mut log = VecLog::legacy((0..1_000).map(|i| T0 + i * 1_000));
        let later = T0 + 5_000 * MS;
        assert_eq!(run(&l, &mut log, later, 3), [1, 10, 7, 0, 1_000]);
        assert_eq!(log.0.len(), 1_000 - TRIM_MAX + 1);
        for i in 1..=9u64 {
            let r = run(&l, &mut log, later + i * MS, 1);
            assert_eq!(r[..3], [i64::from(i < 8), 10, (7 - i as i64).max(0)]);
        }
        assert_eq!(log.0.iter().filter(|e| e.sum.is_some()).count(), 8);
    }

    #[test]
    fn overflowing_members_are_refused_never_merged() {
        let l = per_second(5);
        let max = VecLog::legacy([u64::MAX]);
        assert_eq!(l.decide(&max, u64::MAX, 3), Err(Corrupt));
        // Read-only decisions still answer.
        assert_eq!(
            l.decide(&max, u64::MAX, 0).unwrap().decision.reply()[..3],
            [1, 5, 4]
        );
        let full = VecLog(vec![Entry::weighted(T0, 1, u64::MAX)]);
        assert_eq!(l.decide(&full, T0 + 1, 1), Err(Corrupt));
        // A legacy entry after a weighted one, or a sum below its cost, is not ours.
        let swapped = VecLog(vec![Entry::weighted(T0, 1, 1), Entry::legacy(T0 + 1)]);
        assert_eq!(l.decide(&swapped, T0 + 2, 1), Err(Corrupt));
        let bad = VecLog(vec![
            Entry::weighted(T0, 3, 7),
            Entry::weighted(T0 + 1, 1, 2),
        ]);
        assert_eq!(l.decide(&bad, T0 + 2, 1), Err(Corrupt));
    }

    /// The member grammar written the obvious way: fields split on `:`, each
    /// of 1 to 20 digits.
    fn reference_parse(member: &[u8], score: f64) -> Option<Entry> {
        let digits = |b: &[u8]| {
            if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
                return None;
            }
            b.iter().try_fold(0u64, |acc, &d| {
                acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
        };
        let fields: Vec<&[u8]> = member.split(|&b| b == b':').collect();
        let entry = match fields[..] {
            [ns] => Entry::legacy(digits(ns)?),
            [ns, cost, sum] => {
                let (ns, cost, sum) = (digits(ns)?, digits(cost)?, digits(sum)?);
                if cost == 0 || sum < cost {
                    return None;
                }
                Entry::weighted(ns, cost, sum)
            }
            _ => return None,
        };
        (score == entry.score() as f64).then_some(entry)
    }

    #[test]
    fn parse_agrees_with_the_obvious_grammar() {
        let pieces: [&[u8]; 12] = [
            b"",
            b":",
            b"0",
            b"1",
            b"5",
            b"9",
            b"00",
            b"x",
            b"18446744073709551615",
            b"18446744073709551616",
            b"00000000000000000001",
            b"1700000000123456789",
        ];
        // Every member of up to four pieces: separators, digits, overflow, junk.
        let mut members = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = members
                .iter()
                .flat_map(|m| pieces.iter().map(move |p| [&m[..], p].concat()))
                .collect();
            members.extend(longer);
            members.dedup();
        }
        for member in &members {
            // The score the first field implies, and two others.
            let first = member.split(|&b| b == b':').next().unwrap_or_default();
            let implied = std::str::from_utf8(first)
                .ok()
                .and_then(|f| f.parse::<u64>().ok())
                .map_or(0.5, |ns| score_of(ns) as f64);
            for score in [implied, 0.0, 1.0] {
                assert_eq!(
                    Entry::parse(member, score),
                    reference_parse(member, score),
                    "{:?}",
                    String::from_utf8_lossy(member)
                );
            }
        }
    }

    #[test]
    fn members_round_trip_and_foreign_ones_are_refused() {
        let e = Entry::weighted(1_700_000_000_123_456_789, 100_000, 7_100_000);
        assert_eq!(e.member().as_bytes(), b"1700000000123456789:100000:7100000");
        assert_eq!(
            Entry::parse(e.member().as_bytes(), e.score() as f64),
            Some(e)
        );
        let early = Entry::weighted(5_000, 1, 1);
        assert_eq!(early.member().as_bytes(), b"0000000000000005000:1:1");
        assert_eq!(Entry::parse(early.member().as_bytes(), 5.0), Some(early));
        let legacy = Entry::legacy(1_700_000_000_123_456_789);
        assert_eq!(legacy.member().as_bytes(), b"1700000000123456789");
        assert_eq!(
            Entry::parse(b"1700000000123456789", 1_700_000_000_123_456.0),
            Some(legacy)
        );
        // Members sort by time within a score.
        assert!(
            Entry::legacy(1_700_000_000_123_456_788).member().as_bytes() < e.member().as_bytes()
        );
        for (bad, score) in [
            (&b"1700000000123456789:0:5"[..], 1_700_000_000_123_456.0),
            (b"1700000000123456789:6:5", 1_700_000_000_123_456.0),
            (b"1700000000123456789:1", 1_700_000_000_123_456.0),
            (b"1700000000123456789:1:1:1", 1_700_000_000_123_456.0),
            (b"1700000000123456789:1:1", 1_700_000_000_123_457.0),
            (b"18446744073709551616", 18_446_744_073_709_551.0),
            (b"1:x:1", 0.0),
            (b"", 0.0),
            (b"lease:a", 0.0),
        ] {
            assert_eq!(
                Entry::parse(bad, score),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn clock_stepping_back_keeps_entries_unique_and_counted() {
        let l = per_second(4);
        let mut log = VecLog::default();
        run(&l, &mut log, T0, 2);
        let r = run(&l, &mut log, T0 - 5_000 * MS, 2);
        assert_eq!(r[..3], [1, 4, 0]);
        assert_eq!(
            log.0,
            vec![Entry::weighted(T0, 2, 2), Entry::weighted(T0 + 1, 2, 4)]
        );
        assert_eq!(run(&l, &mut log, T0 - 5_000 * MS, 1)[0], 0);
    }
}
