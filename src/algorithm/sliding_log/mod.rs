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

mod census;
mod decide;
mod entry;
mod view;

#[cfg(test)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use entry::{score_of, Corrupt, Entry};
// The type `Entry::member` returns: part of the interface, though no caller names it.
#[allow(unused_imports)]
pub use entry::Member;
pub use view::{LogRefund, LogView, LogWrite};

use std::num::NonZeroU64;

use super::{WholeMs, NANOS_PER_US};

/// At most this many lapsed entries are removed by one write (oldest first).
pub const TRIM_MAX: usize = 64;

/// `limit` units per window of `window_ns`. The fields' types are their checks:
/// at least 1, and a whole number of milliseconds (so of microseconds, the
/// entries' scores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    pub limit: NonZeroU64,
    pub window_ns: WholeMs,
}

impl SlidingLog {
    /// `None` unless `limit >= 1` and `window_ns` is a positive whole number of
    /// milliseconds.
    pub fn new(limit: u64, window_ns: u64) -> Option<SlidingLog> {
        Some(SlidingLog {
            limit: NonZeroU64::new(limit)?,
            window_ns: WholeMs::from_ns(window_ns)?,
        })
    }

    fn window_us(&self) -> u64 {
        self.window_ns.get() / NANOS_PER_US
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

    /// The absolute expiry after a write: when its (newest) entry leaves the window.
    pub fn idle_at_ns(&self, write: &LogWrite) -> u128 {
        self.leaves_at_ns(write.entry.ns)
    }
}

/// A window of whole milliseconds is one of whole microseconds: so are all its edges.
const _: () = assert!(super::NANOS_PER_MS % NANOS_PER_US == 0);
