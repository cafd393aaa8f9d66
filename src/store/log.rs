//! The sliding log's sorted set: members `<ns>:<cost>:<sum>` (legacy keys: bare
//! `<ns>`), scores their microseconds (see `algorithm::sliding_log`). Reads seek
//! by score through the key API; counting and selecting legacy entries by rank
//! goes through `ZCOUNT` / `ZRANGE r r` (O(log n); the 7.0 key API has no rank).

use std::os::raw::c_int;

use redis_module::raw;

use super::{Effect, Key};
use crate::algorithm::sliding_log::{Corrupt, Entry, LogRefund, LogView, LogWrite};
use crate::bounds::TRIM_MAX;
use crate::ffi::{api, bytes_of, OwnedString};

impl Key {
    /// The entry at the current position of a scan; `None` if the module did not write it.
    fn current_entry(&self) -> Option<Entry> {
        let (member, score) = self.current();
        Entry::parse(bytes_of(member.ptr), score)
    }

    /// Views the sorted set as a sliding log; `None` if its oldest or newest entry
    /// is not a sliding-log entry (the key holds someone else's sorted set), or
    /// if a legacy entry follows a weighted one.
    ///
    /// `penalty`: the set holds a penalty member (scored below every entry,
    /// never an entry: not counted, not ranked).
    pub fn as_log(&self, penalty: bool) -> Option<ZsetLog<'_>> {
        self.log_from(penalty, self.oldest_entry())
    }

    /// [`Key::as_log`] with the oldest entry already read (`None`: not an
    /// entry), as [`Key::log_head`] reads it.
    pub fn log_from(&self, penalty: bool, oldest: Option<Option<Entry>>) -> Option<ZsetLog<'_>> {
        let oldest = oldest?;
        let mut newest = Some(None);
        self.scan_newest(|k| {
            newest = k.current_entry().map(Some);
            false
        });
        let newest = newest?;
        if let (Some(o), Some(n)) = (oldest, newest) {
            if o.sum.is_some() && n.sum.is_none() {
                return None;
            }
        }
        Some(ZsetLog {
            key: self,
            oldest,
            newest,
            penalty: u64::from(penalty),
        })
    }

    /// The oldest entry (`Some(None)`: there is none; `None`: the member
    /// there is not a sliding-log entry).
    pub(super) fn oldest_entry(&self) -> Option<Option<Entry>> {
        let mut found = Some(None);
        self.scan_all(|k| {
            found = k.current_entry().map(Some);
            false
        });
        found
    }

    /// Removes at most [`TRIM_MAX`] entries scored `<= cutoff_us` (oldest
    /// first) and replicates `ZREM key <exactly those members>`: lapsed log
    /// entries or leases leave a bounded number per write, never all at once.
    pub(super) fn trim_through(&self, cutoff_us: u64) {
        let mut lapsed = Vec::new();
        self.scan(super::FIRST_ENTRY_SCORE, cutoff_us as f64, false, |k| {
            lapsed.push(k.current().0);
            lapsed.len() < TRIM_MAX
        });
        self.remove_members(&lapsed);
    }

    /// Removes `members` and replicates `ZREM key members…` (nothing if empty).
    pub(super) fn remove_members(&self, members: &[OwnedString]) {
        if members.is_empty() {
            return;
        }
        for member in members {
            self.zset_rem(member);
        }
        let argv: Vec<*mut raw::RedisModuleString> = members.iter().map(|s| s.ptr).collect();
        self.effect(Effect::Zrem(&argv));
    }

    /// Adds one entry and replicates `ZADD key <score> <member>`.
    fn add_entry(&self, entry: &Entry) {
        self.zset_add(entry.score() as i64, entry.member().as_bytes());
    }

    /// Drops up to [`TRIM_MAX`] lapsed entries, adds the write's entry, removes
    /// the entry it replaces (a debit joining the newest), sets the expiry, and
    /// replicates the same effects (`ZREM`, `ZADD`, `ZREM`, `PEXPIREAT`).
    pub fn write_log(&self, write: &LogWrite, expire_ms: u64) {
        if write.lapsed {
            self.trim_through(write.cutoff_us);
        }
        self.add_entry(&write.entry);
        if let Some(joined) = write.replaces {
            let member = OwnedString::new(self.ctx, joined.member().as_bytes());
            self.remove_members(&[member]);
        }
        self.expire_at(expire_ms);
    }

    /// Applies a refund: adds the rewritten entry's new member if the refund
    /// rewrites one (`ZADD`, same score), removes the `remove` oldest live
    /// entries and the rewritten one's old member (`ZREM`), and sets the expiry
    /// (`PEXPIREAT`).
    pub fn refund_log(&self, refund: &LogRefund, expire_ms: u64) {
        let take = refund.remove + u64::from(refund.rewrite.is_some());
        let mut oldest = Vec::new();
        self.scan(
            refund.cutoff_us as f64,
            raw::REDISMODULE_POSITIVE_INFINITE,
            true,
            |k| {
                oldest.push(k.current().0);
                (oldest.len() as u64) < take
            },
        );
        // The rewritten entry goes in before the old members go out, so the set
        // never empties on the way (no `del` event for a key that stays).
        if let Some((_, new)) = refund.rewrite {
            self.add_entry(&new);
        }
        self.remove_members(&oldest);
        self.expire_at(expire_ms);
    }
}

/// A sliding-log sorted set.
pub struct ZsetLog<'a> {
    key: &'a Key,
    oldest: Option<Entry>,
    newest: Option<Entry>,
    /// 1 if the set holds a penalty member (rank 0, below every entry), else 0.
    penalty: u64,
}

impl LogView for ZsetLog<'_> {
    fn len(&self) -> u64 {
        self.key.len() - self.penalty
    }

    fn count_after(&self, cutoff_us: u64) -> Result<u64, Corrupt> {
        self.key
            .zcount(&format!("({cutoff_us}"), "+inf")
            .ok_or(Corrupt)
    }

    fn scan_after(
        &self,
        cutoff_us: u64,
        visit: &mut dyn FnMut(Entry) -> bool,
    ) -> Result<(), Corrupt> {
        let mut result = Ok(());
        self.key.scan(
            cutoff_us as f64,
            raw::REDISMODULE_POSITIVE_INFINITE,
            true,
            |k| match k.current_entry() {
                Some(e) => visit(e),
                None => {
                    result = Err(Corrupt);
                    false
                }
            },
        );
        result
    }

    fn last_through(&self, score_us: u64) -> Result<Option<Entry>, Corrupt> {
        let key = self.key.ptr();
        let lo = super::FIRST_ENTRY_SCORE;
        if api!(RedisModule_ZsetLastInScoreRange(
            key,
            lo,
            score_us as f64,
            0,
            0
        )) != raw::REDISMODULE_OK as c_int
        {
            return Ok(None);
        }
        let entry = (api!(RedisModule_ZsetRangeEndReached(key)) == 0)
            .then(|| self.key.current_entry().ok_or(Corrupt));
        api!(RedisModule_ZsetRangeStop(key));
        entry.transpose()
    }

    fn scan_newest(&self, visit: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt> {
        let mut result = Ok(());
        self.key.scan_newest(|k| match k.current_entry() {
            Some(e) => visit(e),
            None => {
                result = Err(Corrupt);
                false
            }
        });
        result
    }

    fn oldest(&self) -> Result<Option<Entry>, Corrupt> {
        Ok(self.oldest)
    }

    fn newest(&self) -> Result<Option<Entry>, Corrupt> {
        Ok(self.newest)
    }

    fn at_rank(&self, rank: u64) -> Result<Option<Entry>, Corrupt> {
        match self.key.zrange_one(rank + self.penalty) {
            None => Ok(None),
            Some((member, score)) => Entry::parse(&member, score).map(Some).ok_or(Corrupt),
        }
    }
}
