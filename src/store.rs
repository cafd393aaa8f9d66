//! State <-> Redis key through the low-level key API: read what the key holds,
//! write new state with its absolute expiry, and replicate the effect as plain
//! commands with absolute times (`SET … PXAT`, `ZREMRANGEBYSCORE` + `ZADD` +
//! `PEXPIREAT`), never the time-dependent command itself.

use std::os::raw::{c_int, c_longlong};
use std::ptr::NonNull;

use redis_module::raw;

use crate::algorithm::sliding_log::{score_of, LogView, LogWrite};
use crate::codec::parse_u64;

/// Calls a Redis module API function that the server is required to provide
/// (every one used here exists in Redis 7.0 and Valkey 8).
macro_rules! api {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the pointers passed come from Redis for the current command and
        // are used only while it runs; the function exists on every supported server.
        unsafe { raw::$name.expect(stringify!($name))($($arg),*) }
    };
}

/// What a key holds.
pub enum Held<'a> {
    Empty,
    String(&'a [u8]),
    Zset,
    Other,
}

/// A key opened for reading and writing; closed on drop, even during a panic.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: NonNull<raw::RedisModuleKey>,
}

/// A string created through the module API; freed on drop.
struct OwnedString {
    ctx: *mut raw::RedisModuleCtx,
    ptr: *mut raw::RedisModuleString,
}

impl OwnedString {
    fn new(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> OwnedString {
        let ptr = api!(RedisModule_CreateString(
            ctx,
            bytes.as_ptr().cast(),
            bytes.len()
        ));
        OwnedString { ctx, ptr }
    }

    fn from_i64(ctx: *mut raw::RedisModuleCtx, value: i64) -> OwnedString {
        let ptr = api!(RedisModule_CreateStringFromLongLong(ctx, value));
        OwnedString { ctx, ptr }
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        api!(RedisModule_FreeString(self.ctx, self.ptr));
    }
}

/// The bytes of a module string, valid while the string lives.
fn bytes_of<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    let ptr = api!(RedisModule_StringPtrLen(s, &mut len));
    // SAFETY: Redis returns a pointer to `len` bytes owned by the string.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// The argument bytes of a command.
pub fn arg_bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    bytes_of(s)
}

impl Key {
    /// Opens `name` for reading and writing. Returns `None` only if Redis refuses.
    pub fn open(ctx: *mut raw::RedisModuleCtx, name: *mut raw::RedisModuleString) -> Option<Key> {
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        let key = NonNull::new(api!(RedisModule_OpenKey(ctx, name, mode)))?;
        Some(Key { ctx, name, key })
    }

    fn ptr(&self) -> *mut raw::RedisModuleKey {
        self.key.as_ptr()
    }

    pub fn held(&self) -> Held<'_> {
        match api!(RedisModule_KeyType(self.ptr())) as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Held::Empty,
            raw::REDISMODULE_KEYTYPE_STRING => {
                let mut len = 0usize;
                let ptr = api!(RedisModule_StringDMA(
                    self.ptr(),
                    &mut len,
                    raw::REDISMODULE_READ as c_int
                ));
                if ptr.is_null() {
                    return Held::Other;
                }
                // SAFETY: DMA gives `len` readable bytes, valid until the key is
                // modified or closed; the borrow of `self` outlives neither.
                Held::String(unsafe { std::slice::from_raw_parts(ptr.cast(), len) })
            }
            raw::REDISMODULE_KEYTYPE_ZSET => Held::Zset,
            _ => Held::Other,
        }
    }

    /// Stores `value` with an absolute expiry and replicates `SET key value PXAT ms`.
    pub fn write_string(&self, value: &[u8], expire_ms: u64) {
        let value = OwnedString::new(self.ctx, value);
        api!(RedisModule_StringSet(self.ptr(), value.ptr));
        api!(RedisModule_SetAbsExpire(
            self.ptr(),
            expire_ms as raw::mstime_t
        ));
        api!(RedisModule_Replicate(
            self.ctx,
            c"SET".as_ptr(),
            c"sscl".as_ptr(),
            self.name,
            value.ptr,
            c"PXAT".as_ptr(),
            expire_ms as c_longlong,
        ));
    }

    /// Deletes the key (its limiter is idle) and replicates `DEL`.
    pub fn delete(&self) {
        api!(RedisModule_DeleteKey(self.ptr()));
        api!(RedisModule_Replicate(
            self.ctx,
            c"DEL".as_ptr(),
            c"s".as_ptr(),
            self.name
        ));
    }

    /// The number of sorted-set entries.
    fn len(&self) -> u64 {
        api!(RedisModule_ValueLength(self.ptr())) as u64
    }

    /// Runs `visit` over the entries scored in `[min, max]` (`min` exclusive if
    /// `min_exclusive`), oldest first, until it returns `false`.
    fn scan(&self, min: f64, max: f64, min_exclusive: bool, mut visit: impl FnMut(&Key) -> bool) {
        let started = api!(RedisModule_ZsetFirstInScoreRange(
            self.ptr(),
            min,
            max,
            min_exclusive as c_int,
            0
        ));
        if started != raw::REDISMODULE_OK as c_int {
            return;
        }
        while api!(RedisModule_ZsetRangeEndReached(self.ptr())) == 0 {
            if !visit(self) || api!(RedisModule_ZsetRangeNext(self.ptr())) == 0 {
                break;
            }
        }
        api!(RedisModule_ZsetRangeStop(self.ptr()));
    }

    /// The current entry of a scan: its member (owned) and score.
    fn current(&self) -> (OwnedString, f64) {
        let mut score = 0f64;
        let ptr = api!(RedisModule_ZsetRangeCurrentElement(self.ptr(), &mut score));
        (OwnedString { ctx: self.ctx, ptr }, score)
    }

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

    /// The member and score of the sorted set's first (lowest) or last entry.
    fn zset_edge(&self, last: bool) -> Option<(OwnedString, f64)> {
        let mut edge = None;
        let take = |k: &Key| {
            edge = Some(k.current());
            false
        };
        if last {
            self.scan_newest(take);
        } else {
            self.scan(
                raw::REDISMODULE_NEGATIVE_INFINITE,
                raw::REDISMODULE_POSITIVE_INFINITE,
                false,
                take,
            );
        }
        edge
    }

    /// Entries scored above `cutoff_us` (those at or below it have lapsed or
    /// left the window; counting them visits only them).
    fn count_after(&self, cutoff_us: u64) -> u64 {
        let len = self.len();
        let mut stale = 0u64;
        self.scan(
            raw::REDISMODULE_NEGATIVE_INFINITE,
            cutoff_us as f64,
            false,
            |_| {
                stale += 1;
                true
            },
        );
        len - stale.min(len)
    }

    /// The score of the `k`-th (0-based) oldest entry scored above `cutoff_us`.
    fn nth_score_after(&self, cutoff_us: u64, k: u64) -> Option<u64> {
        let mut seen = 0u64;
        let mut found = None;
        self.scan(
            cutoff_us as f64,
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
        found
    }

    /// The member and score of the `k`-th (0-based) newest entry.
    fn nth_newest(&self, k: u64) -> Option<(OwnedString, f64)> {
        let mut seen = 0u64;
        let mut found = None;
        self.scan_newest(|key| {
            if seen == k {
                found = Some(key.current());
                return false;
            }
            seen += 1;
            true
        });
        found
    }

    /// Removes every entry scored `<= cutoff_us` and, if any went, replicates
    /// `ZREMRANGEBYSCORE key -inf <cutoff_us>`.
    fn drop_scored_through(&self, cutoff_us: u64) {
        let mut stale = Vec::new();
        self.scan(
            raw::REDISMODULE_NEGATIVE_INFINITE,
            cutoff_us as f64,
            false,
            |k| {
                stale.push(k.current().0);
                true
            },
        );
        if stale.is_empty() {
            return;
        }
        for member in &stale {
            api!(RedisModule_ZsetRem(
                self.ptr(),
                member.ptr,
                std::ptr::null_mut()
            ));
        }
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZREMRANGEBYSCORE".as_ptr(),
            c"scl".as_ptr(),
            self.name,
            c"-inf".as_ptr(),
            cutoff_us as c_longlong,
        ));
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
            api!(RedisModule_ZsetRem(
                self.ptr(),
                member.ptr,
                std::ptr::null_mut()
            ));
        }
        let argv: Vec<*mut raw::RedisModuleString> = newest.iter().map(|s| s.ptr).collect();
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZREM".as_ptr(),
            c"sv".as_ptr(),
            self.name,
            argv.as_ptr(),
            argv.len(),
        ));
        self.expire_at(expire_ms);
    }

    /// Sets the absolute expiry and replicates `PEXPIREAT`.
    fn expire_at(&self, expire_ms: u64) {
        api!(RedisModule_SetAbsExpire(
            self.ptr(),
            expire_ms as raw::mstime_t
        ));
        api!(RedisModule_Replicate(
            self.ctx,
            c"PEXPIREAT".as_ptr(),
            c"sl".as_ptr(),
            self.name,
            expire_ms as c_longlong,
        ));
    }

    /// Runs `visit` over all entries, newest first, until it returns `false`.
    fn scan_newest(&self, mut visit: impl FnMut(&Key) -> bool) {
        let (lo, hi) = (
            raw::REDISMODULE_NEGATIVE_INFINITE,
            raw::REDISMODULE_POSITIVE_INFINITE,
        );
        let started = api!(RedisModule_ZsetLastInScoreRange(self.ptr(), lo, hi, 0, 0));
        if started != raw::REDISMODULE_OK as c_int {
            return;
        }
        while api!(RedisModule_ZsetRangeEndReached(self.ptr())) == 0 {
            if !visit(self) || api!(RedisModule_ZsetRangePrev(self.ptr())) == 0 {
                break;
            }
        }
        api!(RedisModule_ZsetRangeStop(self.ptr()));
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
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZADD".as_ptr(),
            c"sv".as_ptr(),
            self.name,
            argv.as_ptr(),
            argv.len(),
        ));
        self.expire_at(expire_ms);
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        api!(RedisModule_CloseKey(self.ptr()));
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

// In-flight leases (RL.ACQUIRE / RL.RELEASE): a sorted set whose members are
// `lease:` + the lease id and whose scores are lapse times in microseconds.

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
        api!(RedisModule_ZsetAdd(
            self.ptr(),
            write.lapse_us as f64,
            member.ptr,
            std::ptr::null_mut()
        ));
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZADD".as_ptr(),
            c"sls".as_ptr(),
            self.name,
            write.lapse_us as c_longlong,
            member.ptr,
        ));
        self.expire_at(expire_ms);
    }

    /// Drops the lapsed leases and `member` (other leases stay held), sets the
    /// expiry, and replicates `ZREMRANGEBYSCORE` (if any lapsed) + `ZREM` + `PEXPIREAT`.
    pub fn release_lease(&self, member: &[u8], cutoff_us: u64, expire_ms: u64) {
        self.drop_scored_through(cutoff_us);
        let member = OwnedString::new(self.ctx, member);
        api!(RedisModule_ZsetRem(
            self.ptr(),
            member.ptr,
            std::ptr::null_mut()
        ));
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZREM".as_ptr(),
            c"ss".as_ptr(),
            self.name,
            member.ptr,
        ));
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
