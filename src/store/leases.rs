//! In-flight leases (RL.ACQUIRE / RL.RELEASE): a sorted set whose members are
//! `lease:` + the lease id and whose scores are lapse times in microseconds.

use std::os::raw::c_int;

use redis_module::raw;

use super::{bytes_of, Effect, Key, OwnedString};
use crate::algorithm::lease::{LeaseView, LeaseWrite};

/// The prefix of every lease member; it tells a lease set from a sliding log.
pub const LEASE_PREFIX: &[u8] = b"lease:";

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
        for last in [false, true] {
            if let Some((member, score)) = self.zset_edge(last) {
                if !bytes_of(member.ptr).starts_with(LEASE_PREFIX) || !is_lapse_score(score) {
                    return None;
                }
            }
        }
        Some(ZsetLeases { key: self })
    }

    /// Drops the lapsed leases, stores `member` with its lapse time, sets the
    /// expiry, and replicates `ZREMRANGEBYSCORE` (if any lapsed) + `ZADD` + `PEXPIREAT`.
    pub fn write_lease(&self, member: &[u8], write: &LeaseWrite, expire_ms: u64) {
        self.drop_scored_through(write.cutoff_us);
        let member = OwnedString::new(self.ctx, member);
        let mut flags: c_int = 0;
        api!(RedisModule_ZsetAdd(
            self.ptr(),
            write.lapse_us as f64,
            member.ptr,
            &mut flags
        ));
        let score = OwnedString::from_i64(self.ctx, write.lapse_us as i64);
        self.effect(Effect::Zadd {
            args: &[score.ptr, member.ptr],
            changed: flags & (raw::REDISMODULE_ZADD_ADDED | raw::REDISMODULE_ZADD_UPDATED) as c_int
                != 0,
        });
        self.expire_at(expire_ms);
    }

    /// Drops the lapsed leases and `member` (other leases stay held), sets the
    /// expiry, and replicates `ZREMRANGEBYSCORE` (if any lapsed) + `ZREM` + `PEXPIREAT`.
    pub fn release_lease(&self, member: &[u8], cutoff_us: u64, expire_ms: u64) {
        self.drop_scored_through(cutoff_us);
        let member = OwnedString::new(self.ctx, member);
        self.zset_rem(&member);
        self.effect(Effect::Zrem(&[member.ptr]));
        self.expire_at(expire_ms);
    }
}

/// A lease set, read through the sorted set's own iterators and score lookup.
pub struct ZsetLeases<'a> {
    key: &'a Key,
}

impl LeaseView for ZsetLeases<'_> {
    fn held_at(&self, now_us: u64) -> u64 {
        self.key.count_after(now_us)
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
        self.key.nth_score_after(now_us, k)
    }

    fn nth_latest(&self, k: u64) -> Option<u64> {
        self.key.nth_newest(k).map(|(_, score)| score as u64)
    }
}
