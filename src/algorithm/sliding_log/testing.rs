//! An in-memory sliding log for tests of the pure algorithm and its callers.

use super::{Corrupt, Entry, LogRefund, LogView, LogWrite, TRIM_MAX};

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
        if let Some(joined) = w.replaces {
            assert_eq!(self.0.pop(), Some(joined), "a debit joins the newest entry");
        }
        assert!(self.0.last().is_none_or(|e| e.ns < w.entry.ns));
        self.0.push(w.entry);
    }

    /// Applies a refund as the store does.
    pub fn apply_refund(&mut self, r: &LogRefund) {
        if r.newest_left_ns.is_none() {
            self.0.clear();
            return;
        }
        let first = self
            .0
            .iter()
            .take_while(|e| e.score() <= r.cutoff_us)
            .count();
        self.0.drain(first..first + r.remove as usize);
        if let Some((old, new)) = r.rewrite {
            let next = self.0.get_mut(first).expect("an entry to rewrite");
            assert_eq!(*next, old);
            *next = new;
        }
        assert_eq!(self.0.last().map(|e| e.ns), r.newest_left_ns);
    }
}
