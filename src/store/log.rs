//! The sliding log's sorted set: members are decimal nanoseconds, scores their
//! microseconds (see `codec.rs`).

use redis_module::raw;

use super::{bytes_of, Effect, Key, OwnedString};
use crate::algorithm::sliding_log::{score_of, LogView, LogWrite};
use crate::codec::parse_u64;

impl Key {
    /// The member (as nanoseconds) of the first or last entry, if it is a
    /// well-formed sliding-log entry; `Err` if the entry is not one.
    fn log_edge(&self, last: bool) -> Result<Option<u64>, ()> {
        let Some((member, score)) = self.zset_edge(last) else {
            return Ok(None);
        };
        match parse_u64(bytes_of(member.ptr)) {
            Some(ns) if score == score_of(ns) as f64 => Ok(Some(ns)),
            _ => Err(()),
        }
    }

    /// Views the sorted set as a sliding log; `None` if its oldest or newest entry
    /// is not a sliding-log entry (the key holds someone else's sorted set).
    pub fn as_log(&self) -> Option<ZsetLog<'_>> {
        self.log_edge(false).ok()?;
        let newest = self.log_edge(true).ok()?;
        Some(ZsetLog { key: self, newest })
    }

    /// Removes the `count` newest entries, sets the expiry, and replicates
    /// `ZREM` + `PEXPIREAT`.
    pub fn remove_newest(&self, count: u64, expire_ms: u64) {
        let mut newest = Vec::with_capacity(count as usize);
        self.scan_newest(|k| {
            newest.push(k.current().0);
            (newest.len() as u64) < count
        });
        for member in &newest {
            self.zset_rem(member);
        }
        let argv: Vec<*mut raw::RedisModuleString> = newest.iter().map(|s| s.ptr).collect();
        self.effect(Effect::Zrem(&argv));
        self.expire_at(expire_ms);
    }

    /// Drops entries scored `<= cutoff_us`, adds the write's entries, sets the
    /// expiry, and replicates the same three effects.
    pub fn write_log(&self, write: &LogWrite, expire_ms: u64) {
        self.drop_scored_through(write.cutoff_us);
        let mut zadd_args = Vec::with_capacity(2 * write.count as usize);
        for ns in write.first_ns..=write.last_ns() {
            let score = score_of(ns);
            let member = OwnedString::new(self.ctx, ns.to_string().as_bytes());
            api!(RedisModule_ZsetAdd(
                self.ptr(),
                score as f64,
                member.ptr,
                std::ptr::null_mut()
            ));
            zadd_args.push(OwnedString::from_i64(self.ctx, score as i64));
            zadd_args.push(member);
        }
        let argv: Vec<*mut raw::RedisModuleString> = zadd_args.iter().map(|s| s.ptr).collect();
        // Every member is new: nanoseconds after the newest entry.
        self.effect(Effect::Zadd {
            args: &argv,
            changed: true,
        });
        self.expire_at(expire_ms);
    }
}

/// A sliding-log sorted set, read through iterators that allocate nothing
/// except for the one entry a denied request needs.
pub struct ZsetLog<'a> {
    key: &'a Key,
    newest: Option<u64>,
}

impl LogView for ZsetLog<'_> {
    fn count_after(&self, cutoff_us: u64) -> u64 {
        self.key.count_after(cutoff_us)
    }

    fn nth_after(&self, cutoff_us: u64, k: u64) -> Option<u64> {
        self.key.nth_score_after(cutoff_us, k)
    }

    fn newest_ns(&self) -> Option<u64> {
        self.newest
    }

    fn nth_newest_ns(&self, k: u64) -> Option<u64> {
        self.key
            .nth_newest(k)
            .and_then(|(member, _)| parse_u64(bytes_of(member.ptr)))
    }
}
