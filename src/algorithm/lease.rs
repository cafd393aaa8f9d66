//! In-flight (concurrency) limits: at most `limit` leases held at once. A lease
//! is held from its acquisition until it is released or, at the latest, until
//! its lapse time `timeout` after it was last acquired or renewed, so a client
//! that crashes without releasing cannot keep its slot. Times are whole
//! microseconds since the epoch (the sorted set's scores); a lease lapsing at
//! `lapse_us` is held while `now_us < lapse_us`.
//!
//! Lease ids are opaque bytes here: the store adds its member prefix.

use std::num::NonZeroU64;

use super::{Decision, Outcome, Wait, WholeMs, NANOS_PER_US};

/// At most `limit` leases held at once, each lapsing `timeout_ns` after it was
/// last acquired. The fields' types are their checks: at least 1, and a whole
/// number of milliseconds (so of microseconds, the lapse times' unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    pub limit: NonZeroU64,
    pub timeout_ns: WholeMs,
}

/// Read access to the stored leases (a sorted set in Redis, a vector in tests):
/// each lease is an id and its lapse time in microseconds. The view may hold
/// lapsed leases (not yet dropped); they count for nothing.
pub trait LeaseView {
    /// The number of leases held at `now_us`: those lapsing after it.
    fn held_at(&self, now_us: u64) -> u64;
    /// The lapse time of lease `id`, if it is stored (held or lapsed).
    fn lapse_of(&self, id: &[u8]) -> Option<u64>;
    /// The `k`-th (0-based) earliest lapse time after `now_us`.
    fn nth_lapse_after(&self, now_us: u64, k: u64) -> Option<u64>;
    /// The `k`-th (0-based) latest lapse time of all stored leases.
    fn nth_latest(&self, k: u64) -> Option<u64>;
}

/// What an admitted acquisition writes: drop up to
/// [`TRIM_MAX`](super::sliding_log::TRIM_MAX) leases lapsing at or before
/// `cutoff_us` (soonest first; the rest stay stored, counting for nothing), store
/// the lease with `lapse_us`; afterwards the latest lapse of any stored lease is
/// `latest_us` (the key's expiry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseWrite {
    pub cutoff_us: u64,
    pub lapse_us: u64,
    pub latest_us: u64,
}

/// What releasing a held lease writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseWrite {
    /// No other lease is held: the key goes, as it would at its expiry.
    Delete,
    /// Drop up to `TRIM_MAX` leases lapsing at or before `cutoff_us` and the released one;
    /// the latest lapse of the leases left is `latest_us` (the key's expiry).
    Remove { cutoff_us: u64, latest_us: u64 },
}

/// The answer to a release: whether the lease was held, and the write if it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    pub held: bool,
    pub write: Option<ReleaseWrite>,
}

/// The microsecond a nanosecond instant falls in (lapse times are compared to it).
pub fn us_of(ns: u64) -> u64 {
    ns / NANOS_PER_US
}

/// A lapse time as an absolute instant in nanoseconds.
pub fn lapse_ns(lapse_us: u64) -> u128 {
    lapse_us as u128 * NANOS_PER_US as u128
}

/// The latest lapse time of the stored leases other than `id` (whose lapse is
/// `own`), if it is after `now_us`. Ties are handled: if another lease lapses
/// at the same time as `id`, the second latest is that time.
fn latest_other(view: &(impl LeaseView + ?Sized), own: Option<u64>, now_us: u64) -> Option<u64> {
    let latest = view.nth_latest(0);
    let other = match own {
        Some(l) if latest == Some(l) => view.nth_latest(1),
        _ => latest,
    };
    other.filter(|&l| l > now_us)
}

impl Lease {
    /// `None` unless `limit >= 1` and `timeout_ns` is a positive whole number of
    /// milliseconds.
    pub fn new(limit: u64, timeout_ns: u64) -> Option<Lease> {
        Some(Lease {
            limit: NonZeroU64::new(limit)?,
            timeout_ns: WholeMs::from_ns(timeout_ns)?,
        })
    }

    fn timeout_us(&self) -> u64 {
        self.timeout_ns.get() / NANOS_PER_US
    }

    /// Acquires (or, if `id` is held, renews) a lease at `now` (ns). A renewal
    /// moves the lease's lapse time to `now + timeout` and takes no second slot,
    /// even if the limit was lowered below the leases held. It never moves a
    /// lapse time earlier: after the clock stepped back (or with a shorter
    /// `timeout`) the lease keeps its later lapse, so a holder that keeps
    /// renewing never loses its slot when the clock steps forward again.
    pub fn acquire(
        &self,
        view: &(impl LeaseView + ?Sized),
        now: u64,
        id: &[u8],
    ) -> Outcome<LeaseWrite> {
        let limit = self.limit.get();
        let now_us = us_of(now);
        let now_wide = now as u128;
        let until = |lapse_us: u64| lapse_ns(lapse_us).saturating_sub(now_wide);
        let held = view.held_at(now_us);
        let own = view.lapse_of(id);
        let renewal = own.is_some_and(|l| l > now_us);
        if renewal || held < limit {
            let lapse_us = match own {
                Some(l) if renewal => l.max(now_us.saturating_add(self.timeout_us())),
                _ => now_us.saturating_add(self.timeout_us()),
            };
            let latest_us = latest_other(view, own, now_us).map_or(lapse_us, |l| l.max(lapse_us));
            let held_after = if renewal { held } else { held + 1 };
            return Outcome {
                decision: Decision {
                    allowed: true,
                    limit,
                    remaining: limit.saturating_sub(held_after),
                    retry_after: Wait::After(0),
                    reset_after_ns: until(latest_us),
                },
                write: Some(LeaseWrite {
                    cutoff_us: now_us,
                    lapse_us,
                    latest_us,
                }),
            };
        }
        // Denied: a slot frees when the (held - limit + 1)-th earliest lease lapses
        // (the earliest one, unless the limit was lowered below the leases held).
        let retry = view
            .nth_lapse_after(now_us, held - limit)
            .map_or(Wait::Never, |l| Wait::After(until(l)));
        let latest = view.nth_latest(0).filter(|&l| l > now_us);
        Outcome {
            decision: Decision {
                allowed: false,
                limit,
                remaining: 0,
                retry_after: retry,
                reset_after_ns: latest.map_or(0, until),
            },
            write: None,
        }
    }
}

/// Releases lease `id` at `now` (ns). Only a held lease is released (and written);
/// an unknown or lapsed one writes nothing.
pub fn release(view: &(impl LeaseView + ?Sized), now: u64, id: &[u8]) -> Released {
    let now_us = us_of(now);
    let own = view.lapse_of(id);
    if !own.is_some_and(|l| l > now_us) {
        return Released {
            held: false,
            write: None,
        };
    }
    let write = if view.held_at(now_us) <= 1 {
        ReleaseWrite::Delete
    } else {
        // Another lease is held, so one lapses after `now_us`.
        match latest_other(view, own, now_us) {
            Some(latest_us) => ReleaseWrite::Remove {
                cutoff_us: now_us,
                latest_us,
            },
            None => ReleaseWrite::Delete,
        }
    };
    Released {
        held: true,
        write: Some(write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 1_700_000_000_000 * MS;

    /// Leases as (id, lapse_us), in insertion order (the view does not rely on order).
    #[derive(Default, Debug)]
    struct VecLeases(Vec<(Vec<u8>, u64)>);

    impl LeaseView for VecLeases {
        fn held_at(&self, now_us: u64) -> u64 {
            self.0.iter().filter(|(_, l)| *l > now_us).count() as u64
        }
        fn lapse_of(&self, id: &[u8]) -> Option<u64> {
            self.0.iter().find(|(i, _)| i == id).map(|(_, l)| *l)
        }
        fn nth_lapse_after(&self, now_us: u64, k: u64) -> Option<u64> {
            let mut live: Vec<u64> = self
                .0
                .iter()
                .map(|(_, l)| *l)
                .filter(|&l| l > now_us)
                .collect();
            live.sort_unstable();
            live.get(k as usize).copied()
        }
        fn nth_latest(&self, k: u64) -> Option<u64> {
            let mut all: Vec<u64> = self.0.iter().map(|(_, l)| *l).collect();
            all.sort_unstable_by(|a, b| b.cmp(a));
            all.get(k as usize).copied()
        }
    }

    impl VecLeases {
        /// Drops at most `TRIM_MAX` lapsed leases, soonest first, as the store does.
        fn trim(&mut self, cutoff_us: u64) {
            let mut lapsed: Vec<u64> = self
                .0
                .iter()
                .map(|(_, l)| *l)
                .filter(|&l| l <= cutoff_us)
                .collect();
            lapsed.sort_unstable();
            if let Some(&bound) = lapsed.get(super::super::sliding_log::TRIM_MAX) {
                // Ties at the bound: keep every lease lapsing at `bound` or later.
                self.0.retain(|(_, l)| *l >= bound);
            } else {
                self.0.retain(|(_, l)| *l > cutoff_us);
            }
        }

        fn apply(&mut self, id: &[u8], w: &LeaseWrite) {
            self.trim(w.cutoff_us);
            self.0.retain(|(i, _)| i != id);
            self.0.push((id.to_vec(), w.lapse_us));
            assert_eq!(
                self.nth_latest(0),
                Some(w.latest_us),
                "latest after the write"
            );
        }

        fn apply_release(&mut self, id: &[u8], w: &ReleaseWrite) {
            match *w {
                ReleaseWrite::Delete => self.0.clear(),
                ReleaseWrite::Remove {
                    cutoff_us,
                    latest_us,
                } => {
                    self.trim(cutoff_us);
                    self.0.retain(|(i, _)| i != id);
                    assert_eq!(self.nth_latest(0), Some(latest_us), "latest after release");
                }
            }
        }
    }

    fn acquire(l: &Lease, s: &mut VecLeases, now: u64, id: &str) -> [i64; 5] {
        let out = l.acquire(s, now, id.as_bytes());
        assert_eq!(out.decision.allowed, out.write.is_some());
        if let Some(w) = out.write {
            s.apply(id.as_bytes(), &w);
        }
        out.decision.reply()
    }

    fn release_(s: &mut VecLeases, now: u64, id: &str) -> bool {
        let r = release(s, now, id.as_bytes());
        assert_eq!(r.held, r.write.is_some());
        if let Some(w) = r.write {
            s.apply_release(id.as_bytes(), &w);
        }
        r.held
    }

    fn three_per_second() -> Lease {
        Lease::new(3, 1_000 * MS).unwrap()
    }

    #[test]
    fn acquire_to_the_limit_then_deny_with_exact_retry() {
        let l = three_per_second();
        let mut s = VecLeases::default();
        assert_eq!(acquire(&l, &mut s, T0, "a"), [1, 3, 2, 0, 1_000]);
        assert_eq!(acquire(&l, &mut s, T0 + 100 * MS, "b"), [1, 3, 1, 0, 1_000]);
        assert_eq!(acquire(&l, &mut s, T0 + 250 * MS, "c"), [1, 3, 0, 0, 1_000]);
        // Full: the next slot frees when "a" lapses at T0 + 1 s; the last lapse is at 1250 ms.
        assert_eq!(acquire(&l, &mut s, T0 + 400 * MS, "d"), [0, 3, 0, 600, 850]);
        // Rounded up: 1 µs before the lapse still waits 1 ms.
        let almost = acquire(&l, &mut s, T0 + 1_000 * MS - 1_000, "d");
        assert_eq!(almost, [0, 3, 0, 1, 251]);
        assert_eq!(s.0.len(), 3, "denials write nothing");
    }

    #[test]
    fn renewals_take_no_slot_and_move_the_lapse() {
        let l = three_per_second();
        let mut s = VecLeases::default();
        acquire(&l, &mut s, T0, "a");
        assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "a"), [1, 3, 2, 0, 1_000]);
        assert_eq!(s.0, vec![(b"a".to_vec(), us_of(T0 + 1_300 * MS))]);
        acquire(&l, &mut s, T0 + 400 * MS, "b");
        acquire(&l, &mut s, T0 + 500 * MS, "c");
        // Full, yet every holder may renew (a heartbeat), and still holds one slot.
        for (at, id) in [(600, "a"), (700, "b"), (800, "c"), (900, "a")] {
            assert_eq!(acquire(&l, &mut s, T0 + at * MS, id), [1, 3, 0, 0, 1_000]);
        }
        assert_eq!(s.0.len(), 3);
        // "b" lapses first now (renewed at 700 ms): the wait is until 1700 ms.
        assert_eq!(
            acquire(&l, &mut s, T0 + 1_000 * MS, "d"),
            [0, 3, 0, 700, 900]
        );
        // A renewal never moves a lapse earlier (a shorter timeout on this call).
        let short = Lease::new(3, 100 * MS).unwrap();
        assert_eq!(
            acquire(&short, &mut s, T0 + 1_000 * MS, "a"),
            [1, 3, 0, 0, 900]
        );
    }

    #[test]
    fn a_lease_lapses_exactly_at_its_timeout() {
        let l = Lease::new(1, 200 * MS).unwrap();
        let mut s = VecLeases::default();
        assert_eq!(acquire(&l, &mut s, T0, "a"), [1, 1, 0, 0, 200]);
        // One nanosecond before the lapse, its microsecond is not reached yet.
        assert_eq!(acquire(&l, &mut s, T0 + 200 * MS - 1, "b"), [0, 1, 0, 1, 1]);
        // At the lapse the slot is free; the lapsed lease is dropped by the write.
        assert_eq!(acquire(&l, &mut s, T0 + 200 * MS, "b"), [1, 1, 0, 0, 200]);
        assert_eq!(s.0, vec![(b"b".to_vec(), us_of(T0 + 400 * MS))]);
        // A lapsed id acquires a new slot like any other: "a" is not held any more.
        assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "a")[..4], [0, 1, 0, 100]);
        assert!(!release_(&mut s, T0 + 400 * MS, "b"), "lapsed: not held");
        assert_eq!(s.0.len(), 1, "releasing a lapsed lease writes nothing");
    }

    #[test]
    fn release_frees_a_slot_and_reports_whether_it_was_held() {
        let l = three_per_second();
        let mut s = VecLeases::default();
        acquire(&l, &mut s, T0, "a");
        acquire(&l, &mut s, T0 + 100 * MS, "b");
        acquire(&l, &mut s, T0 + 200 * MS, "c");
        assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "d")[0], 0);
        // Releasing the latest lease moves the key's expiry to "b"'s lapse.
        let r = release(&s, T0 + 300 * MS, b"c");
        assert_eq!(
            r.write,
            Some(ReleaseWrite::Remove {
                cutoff_us: us_of(T0 + 300 * MS),
                latest_us: us_of(T0 + 1_100 * MS)
            })
        );
        assert!(release_(&mut s, T0 + 300 * MS, "c"));
        assert!(
            !release_(&mut s, T0 + 300 * MS, "c"),
            "twice: no longer held"
        );
        assert!(!release_(&mut s, T0 + 300 * MS, "never"));
        assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "d"), [1, 3, 0, 0, 1_000]);
        assert!(release_(&mut s, T0 + 400 * MS, "a"));
        assert!(release_(&mut s, T0 + 400 * MS, "b"));
        // The last held lease: the key is deleted.
        assert_eq!(
            release(&s, T0 + 400 * MS, b"d").write,
            Some(ReleaseWrite::Delete)
        );
        assert!(release_(&mut s, T0 + 400 * MS, "d"));
        assert!(s.0.is_empty());
        assert_eq!(acquire(&l, &mut s, T0 + 400 * MS, "e"), [1, 3, 2, 0, 1_000]);
    }

    #[test]
    fn releasing_the_last_held_lease_deletes_even_with_lapsed_ones_stored() {
        let l = three_per_second();
        let mut s = VecLeases(vec![(b"old".to_vec(), us_of(T0))]);
        acquire(&l, &mut s, T0 - 500 * MS, "a");
        assert_eq!(s.0.len(), 2);
        assert_eq!(
            release(&s, T0 + 10 * MS, b"a").write,
            Some(ReleaseWrite::Delete)
        );
    }

    #[test]
    fn ties_in_lapse_times_keep_the_right_latest() {
        let l = three_per_second();
        let mut s = VecLeases::default();
        acquire(&l, &mut s, T0, "a");
        acquire(&l, &mut s, T0, "b");
        assert_eq!(
            release(&s, T0 + 10 * MS, b"a").write,
            Some(ReleaseWrite::Remove {
                cutoff_us: us_of(T0 + 10 * MS),
                latest_us: us_of(T0 + 1_000 * MS)
            })
        );
        // Renewing one of two leases with the same lapse: the other keeps the latest.
        let short = Lease::new(3, MS).unwrap();
        let out = short.acquire(&s, T0, b"a");
        assert_eq!(out.write.map(|w| w.latest_us), Some(us_of(T0 + 1_000 * MS)));
    }

    #[test]
    fn a_lowered_limit_keeps_held_leases_and_waits_for_enough_lapses() {
        let l = three_per_second();
        let mut s = VecLeases::default();
        for (at, id) in [(0, "a"), (100, "b"), (200, "c")] {
            acquire(&l, &mut s, T0 + at * MS, id);
        }
        let one = Lease::new(1, 1_000 * MS).unwrap();
        // Three held, limit 1: a new lease waits until all three have lapsed (1200 ms).
        assert_eq!(
            acquire(&one, &mut s, T0 + 300 * MS, "d"),
            [0, 1, 0, 900, 900]
        );
        // A holder still renews.
        assert_eq!(
            acquire(&one, &mut s, T0 + 300 * MS, "a"),
            [1, 1, 0, 0, 1_000]
        );
    }

    #[test]
    fn a_clock_stepping_back_grants_nothing() {
        let l = Lease::new(2, 1_000 * MS).unwrap();
        let mut s = VecLeases::default();
        acquire(&l, &mut s, T0, "a");
        acquire(&l, &mut s, T0 + 500 * MS, "b");
        // The clock steps back 5 s: both leases are still held, for longer.
        let back = T0 - 5_000 * MS;
        assert_eq!(acquire(&l, &mut s, back, "c"), [0, 2, 0, 6_000, 6_500]);
        // Forward again, past "a"'s lapse, then back before it: "a" is dropped
        // only by a write at or after its lapse, and a dropped lease stays dropped.
        assert_eq!(acquire(&l, &mut s, T0 + 1_000 * MS, "c")[0], 1);
        assert_eq!(
            acquire(&l, &mut s, T0 + 900 * MS, "a"),
            [0, 2, 0, 600, 1_100]
        );
        // A renewal on a stepped-back clock keeps its one slot and its later lapse,
        // so the lease is still held when the clock steps forward again.
        assert_eq!(acquire(&l, &mut s, back, "b"), [1, 2, 0, 0, 7_000]);
        assert_eq!(s.lapse_of(b"b"), Some(us_of(T0 + 1_500 * MS)));
        assert_eq!(s.0.len(), 2);
        assert_eq!(acquire(&l, &mut s, T0 + 1_400 * MS, "d")[0], 0);
        assert_eq!(acquire(&l, &mut s, back, "d")[0], 0);
        // Nothing panics at the ends of time.
        for now in [0, 1, u64::MAX - 1, u64::MAX] {
            let _ = l.acquire(&s, now, b"x").decision.reply();
            let _ = release(&s, now, b"b");
        }
    }

    #[test]
    fn extremes_of_the_grammar_do_not_overflow() {
        let l = Lease::new(1_000_000_000_000, 3650 * 86_400_000 * MS).unwrap();
        let mut s = VecLeases::default();
        let r = acquire(&l, &mut s, T0, "a");
        assert_eq!(
            r,
            [1, 1_000_000_000_000, 999_999_999_999, 0, 3650 * 86_400_000]
        );
        let out = l.acquire(&s, u64::MAX, b"b");
        assert!(out.decision.allowed);
        assert_eq!(
            out.write.map(|w| w.lapse_us),
            Some(u64::MAX / 1_000 + 3650 * 86_400_000_000)
        );
    }
}
