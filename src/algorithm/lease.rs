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
#[path = "lease_tests.rs"]
mod tests;
