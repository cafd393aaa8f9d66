//! In-flight leases (RL.ACQUIRE / RL.RELEASE): a sorted set whose members are
//! `lease:` + the lease id and whose scores are lapse times in microseconds.
//! Lapsed leases stay stored until a write removes them, at most
//! [`TRIM_MAX`](crate::algorithm::sliding_log::TRIM_MAX) per write; they are
//! counted by `ZCOUNT` (O(log n)), never visited.

use std::os::raw::c_int;

use redis_module::raw;

use super::Key;
use crate::algorithm::lease::{LeaseView, LeaseWrite};
use crate::ffi::{api, bytes_of, OwnedString};

/// The prefix of every lease member; it tells a lease set from a sliding log.
pub const LEASE_PREFIX: &[u8] = b"lease:";

/// Up to this many leases are visited from the soonest to lapse before a rank
/// lookup (`ZRANGE r r`) is used instead.
const RANK_SCAN: u64 = 8;

/// The sorted-set member of lease `id`.
pub fn lease_member(id: &[u8]) -> Vec<u8> {
    [LEASE_PREFIX, id].concat()
}

/// A score that a lease set can hold: a whole, non-negative number of microseconds.
fn is_lapse_score(score: f64) -> bool {
    score >= 0.0 && score.fract() == 0.0 && score < u64::MAX as f64
}

impl Key {
    /// Views the sorted set as a lease set; `None` if its first or last entry is
    /// not a lease (the key holds someone else's sorted set, e.g. a sliding log).
    pub fn as_leases(&self) -> Option<ZsetLeases<'_>> {
        let is_lease = |k: &Key| {
            let (member, score) = k.current();
            bytes_of(member.ptr).starts_with(LEASE_PREFIX) && is_lapse_score(score)
        };
        let (mut first, mut last) = (true, true);
        self.scan_all(|k| {
            first = is_lease(k);
            false
        });
        self.scan_newest(|k| {
            last = is_lease(k);
            false
        });
        (first && last).then_some(ZsetLeases { key: self })
    }

    /// Drops up to `TRIM_MAX` lapsed leases, stores `member` with its lapse
    /// time, sets the expiry, and replicates `ZREM` (of exactly the dropped
    /// leases, if any) + `ZADD` + `PEXPIREAT`.
    pub fn write_lease(&self, member: &[u8], write: &LeaseWrite, expire_ms: u64) {
        self.trim_through(write.cutoff_us);
        self.zset_add(write.lapse_us as i64, member);
        self.expire_at(expire_ms);
    }

    /// Drops up to `TRIM_MAX` lapsed leases and `member` (other leases stay
    /// held), sets the expiry, and replicates `ZREM` (the dropped leases, if
    /// any) + `ZREM key member` + `PEXPIREAT`.
    pub fn release_lease(&self, member: &[u8], cutoff_us: u64, expire_ms: u64) {
        self.trim_through(cutoff_us);
        self.remove_members(&[OwnedString::new(self.ctx, member)]);
        self.expire_at(expire_ms);
    }
}

/// A lease set, read through the sorted set's own iterators and score lookup.
pub struct ZsetLeases<'a> {
    key: &'a Key,
}

impl ZsetLeases<'_> {
    /// Leases lapsed at `now_us` (scored at or before it), still stored.
    fn lapsed_at(&self, now_us: u64) -> u64 {
        let mut any = false;
        self.key.scan(
            raw::REDISMODULE_NEGATIVE_INFINITE,
            now_us as f64,
            false,
            |_| {
                any = true;
                false
            },
        );
        if !any {
            return 0;
        }
        // A count the sorted set keeps in O(log n); a failure counts none lapsed
        // (conservative: every stored lease is then held).
        self.key.zcount("-inf", &now_us.to_string()).unwrap_or(0)
    }
}

impl LeaseView for ZsetLeases<'_> {
    fn held_at(&self, now_us: u64) -> u64 {
        self.key.len().saturating_sub(self.lapsed_at(now_us))
    }

    fn lapse_of(&self, member: &[u8]) -> Option<u64> {
        let member = OwnedString::new(self.key.ctx, member);
        let mut score = 0f64;
        let found = api!(RedisModule_ZsetScore(
            self.key.ptr(),
            member.ptr,
            &mut score
        ));
        (found == raw::REDISMODULE_OK as c_int).then_some(score as u64)
    }

    fn nth_lapse_after(&self, now_us: u64, k: u64) -> Option<u64> {
        if k < RANK_SCAN {
            let (mut seen, mut found) = (0u64, None);
            self.key.scan(
                now_us as f64,
                raw::REDISMODULE_POSITIVE_INFINITE,
                true,
                |key| {
                    if seen == k {
                        found = Some(key.current().1 as u64);
                        return false;
                    }
                    seen += 1;
                    true
                },
            );
            return found;
        }
        let rank = self.lapsed_at(now_us).checked_add(k)?;
        self.key.zrange_one(rank).map(|(_, score)| score as u64)
    }

    fn nth_latest(&self, k: u64) -> Option<u64> {
        let (mut seen, mut found) = (0u64, None);
        self.key.scan_newest(|key| {
            if seen == k {
                found = Some(key.current().1 as u64);
                return false;
            }
            seen += 1;
            true
        });
        found
    }
}
