//! What the algorithm reads from a stored log, and what it asks the store to write.

use super::{Corrupt, Entry};

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
/// `<= cutoff_us`), remove up to [`TRIM_MAX`](super::TRIM_MAX) such entries (oldest first); then
/// add `entry`, and remove `replaces` if set (a debit joining the newest entry:
/// `entry` is that entry moved to the debit's time, its weight grown by the debit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    pub cutoff_us: u64,
    pub lapsed: bool,
    pub entry: Entry,
    pub replaces: Option<Entry>,
}

/// What a refund writes: remove the `remove` oldest live entries (scored above
/// `cutoff_us`), then, if `rewrite` is set, replace the next one (`.0`) by `.1`
/// (same nanosecond, score and sum, smaller cost). `newest_left_ns` is the
/// newest entry, which stays; `None` when nothing in the window stays (the key
/// is deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRefund {
    pub cutoff_us: u64,
    pub remove: u64,
    pub rewrite: Option<(Entry, Entry)>,
    pub newest_left_ns: Option<u64>,
}
