//! Every write leaves the module through [`Key::effect`]: it replicates one plain
//! command, publishes the keyspace events that command publishes when a
//! module-less replica executes it (same names, same order), and marks the key
//! written, so that it is signalled modified (`WATCH`, client tracking) once,
//! when it is closed. A call that never reaches `effect` writes, replicates,
//! publishes and signals nothing.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use super::Key;
use crate::decimal::{Decimal, StackBytes};
use crate::ffi::api;

/// One replicated command, applied to the key before `effect` is called.
pub enum Effect<'a> {
    /// `SET key value PXAT ms`: `set`, then `expire`.
    Set { value: &'a [u8], expire_ms: u64 },
    /// `DEL key`: `del`.
    Del,
    /// `ZADD key score member`: `zadd` if the member was added or its score
    /// changed (`changed`), as `ZADD` publishes nothing otherwise.
    Zadd {
        score: i64,
        member: *mut raw::RedisModuleString,
        changed: bool,
    },
    /// `ZREM key member [member ...]`: `zrem`, then `del` if the set is now empty.
    Zrem(&'a [*mut raw::RedisModuleString]),
    /// `PEXPIREAT key ms`: `expire` if the key exists (a replica publishes
    /// nothing for a missing key).
    PexpireAt(u64),
}

/// The `PXAT` argument of every replicated `SET`, created once at load and
/// passed by reference (`'s'`): `RedisModule_Replicate` then only takes a
/// reference to it instead of building a new object per call.
static PXAT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(std::ptr::null_mut());

/// Creates the shared `PXAT` string; called once from the module's load.
pub fn init() {
    let pxat = api!(RedisModule_CreateString(
        std::ptr::null_mut(),
        c"PXAT".as_ptr(),
        4
    ));
    PXAT.store(pxat, Ordering::Relaxed);
}

const STRING: c_int = raw::REDISMODULE_NOTIFY_STRING as c_int;
const GENERIC: c_int = raw::REDISMODULE_NOTIFY_GENERIC as c_int;
const ZSET: c_int = raw::REDISMODULE_NOTIFY_ZSET as c_int;

impl Key {
    /// Replicates `effect`, publishes its keyspace events and marks the key
    /// written. Call it right after applying the effect to the key.
    pub(super) fn effect(&self, effect: Effect) {
        let (ctx, name) = (self.ctx, self.name);
        match effect {
            Effect::Set { value, expire_ms } => {
                let ms = Decimal::new(expire_ms);
                let ms = ms.as_bytes();
                api!(RedisModule_Replicate(
                    ctx,
                    c"SET".as_ptr(),
                    c"sbsb".as_ptr(),
                    name,
                    value.as_ptr(),
                    value.len(),
                    PXAT.load(Ordering::Relaxed),
                    ms.as_ptr(),
                    ms.len(),
                ));
                self.notify(STRING, c"set");
                self.notify(GENERIC, c"expire");
            }
            Effect::Del => {
                api!(RedisModule_Replicate(
                    ctx,
                    c"DEL".as_ptr(),
                    c"s".as_ptr(),
                    name
                ));
                self.notify(GENERIC, c"del");
            }
            Effect::Zadd {
                score,
                member,
                changed,
            } => {
                let mut text = StackBytes::<21>::new();
                if score < 0 {
                    text.push(b"-");
                }
                text.push(Decimal::new(score.unsigned_abs()).as_bytes());
                let score = text.as_bytes();
                api!(RedisModule_Replicate(
                    ctx,
                    c"ZADD".as_ptr(),
                    c"sbs".as_ptr(),
                    name,
                    score.as_ptr(),
                    score.len(),
                    member,
                ));
                if changed {
                    self.notify(ZSET, c"zadd");
                }
            }
            Effect::Zrem(members) => {
                self.replicate_zrem(members);
                self.notify(ZSET, c"zrem");
                self.notify_del_if_emptied();
            }
            Effect::PexpireAt(expire_ms) => {
                let ms = Decimal::new(expire_ms);
                let ms = ms.as_bytes();
                api!(RedisModule_Replicate(
                    ctx,
                    c"PEXPIREAT".as_ptr(),
                    c"sb".as_ptr(),
                    name,
                    ms.as_ptr(),
                    ms.len(),
                ));
                if !self.is_empty() {
                    self.notify(GENERIC, c"expire");
                }
            }
        }
        self.written.set(true);
    }

    /// Replicates `ZREM key members...`.
    fn replicate_zrem(&self, members: &[*mut raw::RedisModuleString]) {
        api!(RedisModule_Replicate(
            self.ctx,
            c"ZREM".as_ptr(),
            c"sv".as_ptr(),
            self.name,
            members.as_ptr(),
            members.len(),
        ));
    }

    fn notify(&self, class: c_int, event: &CStr) {
        api!(RedisModule_NotifyKeyspaceEvent(
            self.ctx,
            class,
            event.as_ptr(),
            self.name
        ));
    }

    /// A sorted set that a removal emptied is deleted: `del`, as core commands publish.
    fn notify_del_if_emptied(&self) {
        if self.is_empty() {
            self.notify(GENERIC, c"del");
        }
    }

    fn is_empty(&self) -> bool {
        api!(RedisModule_KeyType(self.ptr())) as isize == raw::REDISMODULE_KEYTYPE_EMPTY
    }
}
