//! Exact sliding log: one entry per admitted unit of cost, each at its own
//! nanosecond (so entries are unique) and scored by its microsecond; an entry
//! counts while `now_us < score + window_us`. Admitted iff `count + cost <= limit`.

use super::{Decision, Outcome, Wait, NANOS_PER_MS, NANOS_PER_US};

/// Invariant: every field is at least 1; `window_ns` is a whole number of milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    pub limit: u64,
    pub window_ns: u64,
}

/// Read access to the stored log (a sorted set in Redis, a vector in tests).
pub trait LogView {
    /// Entries whose score (µs) is greater than `cutoff_us`.
    fn count_after(&self, cutoff_us: u64) -> u64;
    /// The score of the `k`-th (0-based) oldest entry whose score is greater than `cutoff_us`.
    fn nth_after(&self, cutoff_us: u64, k: u64) -> Option<u64>;
    /// The nanosecond of the newest entry, if any.
    fn newest_ns(&self) -> Option<u64>;
    /// The nanosecond of the `k`-th (0-based) newest entry, if any.
    fn nth_newest_ns(&self, k: u64) -> Option<u64>;
}

/// The entries an admitted request adds: `count` of them, at nanoseconds
/// `first_ns .. first_ns + count`, after dropping every entry scored `<= cutoff_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    pub cutoff_us: u64,
    pub first_ns: u64,
    pub count: u64,
}

impl LogWrite {
    /// The last added entry's nanosecond.
    pub fn last_ns(&self) -> u64 {
        self.first_ns.saturating_add(self.count - 1)
    }
}

/// What a refund removes: the `remove` newest entries. `newest_left_ns` is the
/// newest entry that stays, `None` when no entry in the window stays (the key
/// then holds nothing that counts, and is deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRefund {
    pub remove: u64,
    pub newest_left_ns: Option<u64>,
}

/// The score of an entry at nanosecond `ns`.
pub fn score_of(ns: u64) -> u64 {
    ns / NANOS_PER_US
}

impl SlidingLog {
    fn window_us(&self) -> u64 {
        self.window_ns / NANOS_PER_US
    }

    /// When the entry at nanosecond `ns` leaves the window (absolute, ns).
    pub fn leaves_at_ns(&self, ns: u64) -> u128 {
        (score_of(ns) as u128 + self.window_us() as u128) * NANOS_PER_US as u128
    }

    pub fn decide(&self, log: &(impl LogView + ?Sized), now: u64, cost: u64) -> Outcome<LogWrite> {
        let cutoff_us = score_of(now).saturating_sub(self.window_us());
        let count = log.count_after(cutoff_us);
        let now_wide = now as u128;
        let until_leaves = |ns: u64| self.leaves_at_ns(ns).saturating_sub(now_wide);
        let newest_live = log.newest_ns().filter(|&ns| score_of(ns) > cutoff_us);
        let decision = |allowed, count: u64, retry_after, newest: Option<u64>| Decision {
            allowed,
            limit: self.limit,
            remaining: self.limit.saturating_sub(count),
            retry_after,
            reset_after_ns: newest.map_or(0, until_leaves),
        };
        if cost > self.limit {
            let d = decision(false, count, Wait::Never, newest_live);
            return Outcome {
                decision: d,
                write: None,
            };
        }
        if count + cost <= self.limit {
            if cost == 0 {
                let d = decision(true, count, Wait::After(0), newest_live);
                return Outcome {
                    decision: d,
                    write: None,
                };
            }
            // Entries get distinct nanoseconds after every stored one, even if the
            // clock stepped back: a duplicate member would silently merge two entries.
            let first_ns = log
                .newest_ns()
                .map_or(now, |ns| now.max(ns.saturating_add(1)));
            let write = LogWrite {
                cutoff_us,
                first_ns,
                count: cost,
            };
            let d = decision(true, count + cost, Wait::After(0), Some(write.last_ns()));
            return Outcome {
                decision: d,
                write: Some(write),
            };
        }
        // Denied: wait until the (count + cost - limit)-th oldest live entry leaves.
        let k = count + cost - self.limit;
        let retry = log
            .nth_after(cutoff_us, k - 1)
            .map(|score| (score as u128 + self.window_us() as u128) * NANOS_PER_US as u128)
            .map_or(Wait::Never, |at| Wait::After(at.saturating_sub(now_wide)));
        Outcome {
            decision: decision(false, count, retry, newest_live),
            write: None,
        }
    }

    /// Gives `units` back (`REFUND`) by removing the newest entries in the window.
    pub fn refund(
        &self,
        log: &(impl LogView + ?Sized),
        now: u64,
        units: u64,
    ) -> Outcome<LogRefund> {
        let cutoff_us = score_of(now).saturating_sub(self.window_us());
        let count = log.count_after(cutoff_us);
        let remove = units.min(count);
        let newest_left_ns = if remove < count {
            log.nth_newest_ns(remove)
        } else {
            None
        };
        let decision = Decision {
            allowed: true,
            limit: self.limit,
            remaining: self.limit.saturating_sub(count - remove),
            retry_after: Wait::After(0),
            reset_after_ns: newest_left_ns
                .map_or(0, |ns| self.leaves_at_ns(ns).saturating_sub(now as u128)),
        };
        let write = (remove > 0).then_some(LogRefund {
            remove,
            newest_left_ns,
        });
        Outcome { decision, write }
    }

    /// The absolute expiry after a write: when its newest entry leaves the window.
    pub fn idle_at_ns(&self, write: &LogWrite) -> u128 {
        self.leaves_at_ns(write.last_ns())
    }
}

/// `window_ns` must be whole milliseconds: so are all window edges.
const _: () = assert!(NANOS_PER_MS % NANOS_PER_US == 0);

/// An in-memory sliding log for tests of the pure algorithm and its callers.
#[cfg(test)]
pub mod testing {
    use super::*;

    /// Entries by nanosecond, oldest first.
    #[derive(Default)]
    pub struct VecLog(pub Vec<u64>);

    impl LogView for VecLog {
        fn count_after(&self, cutoff_us: u64) -> u64 {
            self.0
                .iter()
                .filter(|&&ns| score_of(ns) > cutoff_us)
                .count() as u64
        }
        fn nth_after(&self, cutoff_us: u64, k: u64) -> Option<u64> {
            let mut live = self
                .0
                .iter()
                .map(|&ns| score_of(ns))
                .filter(|&s| s > cutoff_us);
            live.nth(k as usize)
        }
        fn newest_ns(&self) -> Option<u64> {
            self.0.last().copied()
        }
        fn nth_newest_ns(&self, k: u64) -> Option<u64> {
            self.0.iter().rev().nth(k as usize).copied()
        }
    }

    impl VecLog {
        /// Applies a write, keeping at most its `keep` newest entries (tests with
        /// costs up to 10^12 need only the newest ones).
        pub fn apply(&mut self, w: &LogWrite, keep: u64) {
            self.0.retain(|&ns| score_of(ns) > w.cutoff_us);
            let from = w
                .first_ns
                .max(w.last_ns().saturating_sub(keep.saturating_sub(1)));
            self.0.extend(from..=w.last_ns());
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
        let out = l.decide(log, now, cost);
        if let Some(w) = out.write {
            log.apply(&w, u64::MAX);
        }
        out.decision.reply()
    }

    #[test]
    fn exact_window_and_retry() {
        let l = SlidingLog {
            limit: 3,
            window_ns: 1_000 * MS,
        };
        let mut log = VecLog::default();
        assert_eq!(run(&l, &mut log, T0, 1), [1, 3, 2, 0, 1_000]);
        assert_eq!(run(&l, &mut log, T0 + 300 * MS, 2), [1, 3, 0, 0, 1_000]);
        assert_eq!(log.0, vec![T0, T0 + 300 * MS, T0 + 300 * MS + 1]);
        // Cost 2 must wait for the two oldest entries: the second leaves at 1300 ms.
        assert_eq!(run(&l, &mut log, T0 + 500 * MS, 2), [0, 3, 0, 800, 800]);
        // The first entry leaves exactly at T0 + 1 s.
        assert_eq!(run(&l, &mut log, T0 + 1_000 * MS - 1_000, 1)[0], 0);
        assert_eq!(run(&l, &mut log, T0 + 1_000 * MS, 1), [1, 3, 0, 0, 1_000]);
        assert_eq!(log.0.len(), 3);
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
    fn refunds_remove_the_newest_entries() {
        let l = SlidingLog {
            limit: 5,
            window_ns: 1_000 * MS,
        };
        let mut log = VecLog::default();
        run(&l, &mut log, T0, 2);
        run(&l, &mut log, T0 + 400 * MS, 2);
        let out = l.refund(&log, T0 + 500 * MS, 3);
        assert_eq!(
            out.write,
            Some(LogRefund {
                remove: 3,
                newest_left_ns: Some(T0)
            })
        );
        assert_eq!(out.decision.reply(), [1, 5, 4, 0, 500]);
        let all = l.refund(&log, T0 + 500 * MS, 9);
        assert_eq!(
            all.write,
            Some(LogRefund {
                remove: 4,
                newest_left_ns: None
            })
        );
        assert_eq!(all.decision.reply(), [1, 5, 5, 0, 0]);
        assert_eq!(l.refund(&VecLog::default(), T0, 1).write, None);
    }

    #[test]
    fn clock_stepping_back_keeps_entries_unique_and_counted() {
        let l = SlidingLog {
            limit: 4,
            window_ns: 1_000 * MS,
        };
        let mut log = VecLog::default();
        run(&l, &mut log, T0, 2);
        let r = run(&l, &mut log, T0 - 5_000 * MS, 2);
        assert_eq!(r[..3], [1, 4, 0]);
        assert_eq!(log.0, vec![T0, T0 + 1, T0 + 2, T0 + 3]);
        assert_eq!(run(&l, &mut log, T0 - 5_000 * MS, 1)[0], 0);
    }
}
