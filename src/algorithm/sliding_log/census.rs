//! The census of a log: its live part (entries scored above the cutoff),
//! found in O(log n) whatever the number of entries or lapsed ones.

use super::{Corrupt, Entry, LogView};

/// The live part of a log (entries scored above the cutoff), found in O(log n).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Census {
    /// Units in the window.
    pub(super) units: u64,
    /// Live legacy entries (one unit each): ranks `first_rank ..`.
    pub(super) legacy: u64,
    pub(super) first_rank: u64,
    /// The sum before the oldest live weighted entry: weighted entry `e` holds
    /// the live units `legacy + e.sum - base` through it.
    pub(super) base: u64,
    /// The oldest live weighted entry.
    pub(super) first_weighted: Option<Entry>,
    /// The newest stored entry, live or not.
    pub(super) newest: Option<Entry>,
    /// Whether some stored entry has lapsed.
    pub(super) lapsed: bool,
}

pub(super) fn census(log: &(impl LogView + ?Sized), cutoff_us: u64) -> Result<Census, Corrupt> {
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
