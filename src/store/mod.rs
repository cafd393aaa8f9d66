//! State <-> Redis key through the low-level key API: read what the key holds,
//! write new state with its absolute expiry, and replicate the effect as plain
//! commands with absolute times (`SET … PXAT`, `ZREM` + `ZADD` + `PEXPIREAT`,
//! `DEL`), never the time-dependent command itself. Every write goes through
//! [`effect`], which also publishes keyspace events and marks the key to be
//! signalled modified.

use std::cell::{Cell, OnceCell};
use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::NonNull;

use redis_module::raw;

use crate::bounds::COPY_MAX;
use crate::ffi::{api, OwnedString};
use crate::server::{Arg, Ctx};

mod effect;
#[cfg(feature = "debug-commands")]
pub mod hooks;
pub use effect::init as init_effects;
mod leases;
mod log;
mod penalty;

use effect::Effect;

pub use leases::lease_member;
pub use penalty::LogHead;

/// Strings this long or shorter may be `int`-encoded, and reading one through
/// the module API would re-encode it: they are told apart by length alone.
/// Every string state the `RL.*` commands write is longer.
pub const SHORT_STRING: usize = 20;

/// Sliding-log entries and leases are scored from here (microseconds); a
/// sliding log's penalty member sits below (`facts::PENALTY_LOG_SCORE`), so
/// no scan of entries ever meets it.
pub const FIRST_ENTRY_SCORE: f64 = 0.0;
const _: () = assert!(crate::facts::PENALTY_LOG_SCORE < FIRST_ENTRY_SCORE);

const READ_WRITE: c_int = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;

/// What a key holds.
pub enum Held<'a> {
    Empty,
    /// A string of more than [`SHORT_STRING`] bytes, and its bytes.
    String(&'a [u8]),
    /// A string of at most [`SHORT_STRING`] bytes, not read (see [`Key::short_string`]).
    ShortString,
    Zset,
    Other,
}

/// A key opened for reading and writing; closed on drop, even during a panic.
/// Invariants:
/// - the key is signalled modified (`WATCH`, client tracking) when it is
///   closed if and only if an [`Effect`] was written to it (the module sets
///   `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`);
/// - no call into the server that can expire, evict or free a key runs while
///   the handle is open: [`Key::call`] closes it around `RedisModule_Call` and
///   reopens it. (Outside a command, e.g. in a timer, Redis 7.0 does not
///   freeze the clock, so the called command may expire the key; the handle
///   would then point at freed memory.) Decisions that may make such calls
///   run through [`Key::settled`], which decides again on the now-absent key
///   if the key vanished meanwhile.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: Cell<*mut raw::RedisModuleKey>,
    mode: c_int,
    written: Cell<bool>,
    vanished: Cell<bool>,
    /// A read-only handle's copy of the string value (see [`Key::string_bytes`]).
    copy: OnceCell<Option<Vec<u8>>>,
}

impl Key {
    /// Opens `name` for reading and writing. Returns `None` only if Redis refuses.
    #[inline]
    pub fn open(ctx: Ctx, name: Arg) -> Option<Key> {
        Key::with_mode(ctx, name, READ_WRITE)
    }

    #[inline]
    fn with_mode(ctx: Ctx, name: Arg, mode: c_int) -> Option<Key> {
        let (ctx, name) = (ctx.ptr(), name.ptr());
        let key = NonNull::new(api!(RedisModule_OpenKey(ctx, name, mode)))?;
        Some(Key {
            ctx,
            name,
            key: Cell::new(key.as_ptr()),
            mode,
            written: Cell::new(false),
            vanished: Cell::new(false),
            copy: OnceCell::new(),
        })
    }

    /// Opens `name` for reading only (`RL.PEEK`: works on replicas and in
    /// read-only scripts, and never signals the key). A missing key, which the
    /// read mode does not open, is opened empty in write mode: nothing is ever
    /// written through it, so it is never created or signalled.
    pub fn open_read(ctx: Ctx, name: Arg) -> Option<Key> {
        Key::with_mode(ctx, name, raw::REDISMODULE_READ as c_int).or_else(|| Key::open(ctx, name))
    }

    /// The context the key was opened in (its database is the key's).
    #[inline]
    pub fn ctx(&self) -> Ctx {
        Ctx::from_raw(self.ctx)
    }

    /// The key's name.
    #[inline]
    pub fn name(&self) -> Arg {
        Arg::from_raw(self.name)
    }

    fn ptr(&self) -> *mut raw::RedisModuleKey {
        self.key.get()
    }

    /// Runs `decide` on the key, and again if the key vanished while its
    /// handle was closed around a server call: every view read before then is
    /// stale, and the key is now absent (which needs no server call, so the
    /// second run is the last).
    pub fn settled<T>(&self, decide: impl Fn() -> T) -> T {
        let out = decide();
        match self.take_vanished() {
            true => decide(),
            false => out,
        }
    }

    /// True if the key vanished while its handle was closed around a server
    /// call since this was last asked (see [`Key::settled`]).
    #[inline]
    pub fn take_vanished(&self) -> bool {
        self.vanished.replace(false)
    }

    /// Closes the handle, runs `f` (a call into the server about this key),
    /// and reopens the handle in the same mode (a read-only handle of a key
    /// that has gone is reopened for writing, as [`Key::open_read`] does).
    fn closed_for<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = api!(RedisModule_KeyType(self.ptr()));
        api!(RedisModule_CloseKey(self.ptr()));
        self.key.set(std::ptr::null_mut());
        #[cfg(feature = "debug-commands")]
        hooks::before_call();
        let out = f();
        let mut key = api!(RedisModule_OpenKey(self.ctx, self.name, self.mode));
        if key.is_null() {
            key = api!(RedisModule_OpenKey(self.ctx, self.name, READ_WRITE));
        }
        assert!(!key.is_null(), "the server refused to reopen a key");
        self.key.set(key);
        if api!(RedisModule_KeyType(key)) != before {
            self.vanished.set(true);
            #[cfg(feature = "debug-commands")]
            hooks::note_vanished();
        }
        out
    }

    pub fn held(&self) -> Held<'_> {
        match api!(RedisModule_KeyType(self.ptr())) as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Held::Empty,
            raw::REDISMODULE_KEYTYPE_STRING => {
                // The length of an `int`-encoded value is computed without decoding it.
                if api!(RedisModule_ValueLength(self.ptr())) <= SHORT_STRING {
                    return Held::ShortString;
                }
                self.string_bytes().map_or(Held::Other, Held::String)
            }
            raw::REDISMODULE_KEYTYPE_ZSET => Held::Zset,
            _ => Held::Other,
        }
    }

    /// The bytes of a [`Held::ShortString`]. Redis's module API reads a string
    /// only by direct access, which re-encodes an `int` or `embstr` value as
    /// `raw` (its content is unchanged): only `CL.THROTTLE`, whose state is a
    /// decimal integer, reads short strings.
    pub fn short_string(&self) -> Option<&[u8]> {
        self.string_bytes()
    }

    /// The string value's bytes. A read-only handle (`RL.PEEK`) reads a copy
    /// through `GETRANGE` (at most [`COPY_MAX`] bytes: enough to tell any
    /// state from a foreign value), because direct access would re-encode an
    /// `embstr` value as `raw`, a change a read must not make.
    fn string_bytes(&self) -> Option<&[u8]> {
        if self.mode & raw::REDISMODULE_WRITE as c_int == 0 {
            return self.copy.get_or_init(|| self.copy_string()).as_deref();
        }
        let mut len = 0usize;
        let ptr = api!(RedisModule_StringDMA(
            self.ptr(),
            &mut len,
            raw::REDISMODULE_READ as c_int
        ));
        // SAFETY: DMA gives `len` readable bytes, valid until the key is
        // modified or closed; the borrow of `self` outlives neither.
        (!ptr.is_null()).then(|| unsafe { std::slice::from_raw_parts(ptr.cast(), len) })
    }

    /// Stores `value` with an absolute expiry and replicates `SET key value PXAT ms`.
    /// The value is written in place (resize, then copy through DMA): cheaper than
    /// replacing the value object, and the key keeps its expiry entry to update.
    pub fn write_string(&self, value: &[u8], expire_ms: u64) {
        let mut len = 0usize;
        // A state usually keeps its length (an instant stays 19 digits): resize only if not.
        let resized = if api!(RedisModule_ValueLength(self.ptr())) == value.len() {
            raw::REDISMODULE_OK as c_int
        } else {
            api!(RedisModule_StringTruncate(self.ptr(), value.len()))
        };
        let dma = api!(RedisModule_StringDMA(
            self.ptr(),
            &mut len,
            raw::REDISMODULE_WRITE as c_int
        ));
        if resized == raw::REDISMODULE_OK as c_int && !dma.is_null() && len == value.len() {
            // SAFETY: DMA gives `len` writable bytes, valid until the key is modified or closed.
            unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), dma.cast::<u8>(), len) };
        } else {
            // Not expected on any supported server; replacing the value is always correct.
            let value = OwnedString::new(self.ctx, value);
            api!(RedisModule_StringSet(self.ptr(), value.ptr));
        }
        api!(RedisModule_SetAbsExpire(
            self.ptr(),
            expire_ms as raw::mstime_t
        ));
        self.effect(Effect::Set { value, expire_ms });
    }

    /// Deletes the key (its limiter is idle) and replicates `DEL`.
    pub fn delete(&self) {
        api!(RedisModule_DeleteKey(self.ptr()));
        self.effect(Effect::Del);
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

    /// Runs `visit` over all entries (scored from [`FIRST_ENTRY_SCORE`]),
    /// oldest first, until it returns `false`.
    fn scan_all(&self, visit: impl FnMut(&Key) -> bool) {
        self.scan(
            FIRST_ENTRY_SCORE,
            raw::REDISMODULE_POSITIVE_INFINITE,
            false,
            visit,
        );
    }

    /// Removes one sorted-set member (not replicated: callers replicate the effect).
    fn zset_rem(&self, member: &OwnedString) {
        api!(RedisModule_ZsetRem(
            self.ptr(),
            member.ptr,
            std::ptr::null_mut()
        ));
    }

    /// Adds (or moves) `member` at `score` and replicates `ZADD key <score> <member>`.
    fn zset_add(&self, score: i64, member: &[u8]) {
        let member = OwnedString::new(self.ctx, member);
        let mut flags: c_int = 0;
        api!(RedisModule_ZsetAdd(
            self.ptr(),
            score as f64,
            member.ptr,
            &mut flags
        ));
        self.effect(Effect::Zadd {
            score,
            member: member.ptr,
            changed: flags & (raw::REDISMODULE_ZADD_ADDED | raw::REDISMODULE_ZADD_UPDATED) as c_int
                != 0,
        });
    }

    /// Runs a read-only command on this key through `RedisModule_Call` (for what
    /// the key API cannot do in O(log n): counting and selecting by rank). The
    /// call is not replicated and checks no ACL (the caller's command was allowed).
    /// The handle is closed during the call (see the invariants of [`Key`]).
    fn call(&self, command: &CStr, args: &[&str]) -> Option<CallReply> {
        let args: Vec<OwnedString> = args
            .iter()
            .map(|a| OwnedString::new(self.ctx, a.as_bytes()))
            .collect();
        let mut argv: Vec<*mut raw::RedisModuleString> = vec![self.name];
        argv.extend(args.iter().map(|a| a.ptr));
        let reply = self.closed_for(|| {
            api!(RedisModule_Call(
                self.ctx,
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_ptr(),
                argv.len(),
            ))
        });
        NonNull::new(reply).map(CallReply)
    }

    /// `GETRANGE key 0 COPY_MAX-1`: the first bytes of a string value, read
    /// without changing its encoding.
    fn copy_string(&self) -> Option<Vec<u8>> {
        let last = (COPY_MAX - 1).to_string();
        let reply = self.call(c"GETRANGE", &["0", &last])?;
        let mut len = 0usize;
        let ptr = api!(RedisModule_CallReplyStringPtr(reply.ptr(), &mut len));
        // SAFETY: Redis returns `len` bytes owned by the reply, which outlives this read.
        (!ptr.is_null())
            .then(|| unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec())
    }

    /// `ZCOUNT key min max`: O(log n).
    fn zcount(&self, min: &str, max: &str) -> Option<u64> {
        let reply = self.call(c"ZCOUNT", &[min, max])?;
        (reply.kind() == raw::REDISMODULE_REPLY_INTEGER)
            .then(|| api!(RedisModule_CallReplyInteger(reply.ptr())))
            .and_then(|n| u64::try_from(n).ok())
    }

    /// `ZRANGE key rank rank WITHSCORES`: the member and score of the entry of
    /// rank `rank` (0 = lowest score), in O(log n).
    fn zrange_one(&self, rank: u64) -> Option<(Vec<u8>, f64)> {
        let rank = rank.to_string();
        let reply = self.call(c"ZRANGE", &[&rank, &rank, "WITHSCORES"])?;
        if reply.kind() != raw::REDISMODULE_REPLY_ARRAY
            || api!(RedisModule_CallReplyLength(reply.ptr())) != 2
        {
            return None;
        }
        let text = |i: usize| {
            let element = api!(RedisModule_CallReplyArrayElement(reply.ptr(), i));
            let mut len = 0usize;
            let ptr = api!(RedisModule_CallReplyStringPtr(element, &mut len));
            if ptr.is_null() {
                return None;
            }
            // SAFETY: Redis returns `len` bytes owned by the reply, which outlives this read.
            Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec())
        };
        let member = text(0)?;
        let score = std::str::from_utf8(&text(1)?).ok()?.parse::<f64>().ok()?;
        Some((member, score))
    }

    /// Sets the absolute expiry and replicates `PEXPIREAT`.
    fn expire_at(&self, expire_ms: u64) {
        api!(RedisModule_SetAbsExpire(
            self.ptr(),
            expire_ms as raw::mstime_t
        ));
        self.effect(Effect::PexpireAt(expire_ms));
    }

    /// Runs `visit` over all entries (scored from [`FIRST_ENTRY_SCORE`]),
    /// newest first, until it returns `false`.
    fn scan_newest(&self, mut visit: impl FnMut(&Key) -> bool) {
        let (lo, hi) = (FIRST_ENTRY_SCORE, raw::REDISMODULE_POSITIVE_INFINITE);
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
}

/// A reply of `RedisModule_Call`; freed on drop.
struct CallReply(NonNull<raw::RedisModuleCallReply>);

impl CallReply {
    fn ptr(&self) -> *mut raw::RedisModuleCallReply {
        self.0.as_ptr()
    }

    fn kind(&self) -> isize {
        api!(RedisModule_CallReplyType(self.ptr())) as isize
    }
}

impl Drop for CallReply {
    fn drop(&mut self) {
        api!(RedisModule_FreeCallReply(self.ptr()));
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if self.written.get() {
            api!(RedisModule_SignalModifiedKey(self.ctx, self.name));
        }
        api!(RedisModule_CloseKey(self.ptr()));
    }
}
