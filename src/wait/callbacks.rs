//! What the server tells the wait queue: a blocked client's timeout
//! (`CLIENT UNBLOCK`) or disconnection, keyspace events on keys with waiters,
//! flushes, `SWAPDB`, role changes and shutdown. Each ends or wakes waits;
//! none lets a panic cross into the server.

use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::ending::{count, end_all, finished, release, send, Finished};
use super::policy::behind;
use super::queue::{self, Taken};
use super::timers::{in_wake, schedule, wake};
use crate::clock;
use crate::error::RlError;
use crate::ffi::{api, OwnedString, OK};
use crate::observe::{stats, waiting};
use crate::reply;
use crate::store::Key;
use crate::units::Millis;

/// Subscribes to the keyspace events that wake a key's waiters (once).
pub fn subscribe(ctx: *mut raw::RedisModuleCtx) {
    thread_local! {
        static SUBSCRIBED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if SUBSCRIBED.with(|s| s.replace(true)) {
        return;
    }
    api!(RedisModule_SubscribeToKeyspaceEvents(
        ctx,
        (raw::REDISMODULE_NOTIFY_GENERIC
            | raw::REDISMODULE_NOTIFY_EXPIRED
            | raw::REDISMODULE_NOTIFY_EVICTED) as c_int,
        Some(on_keyspace)
    ));
}

/// `CLIENT UNBLOCK id` (the server gives no other timeout): the wait ends with
/// the denial the request gets at this instant; nothing is spent.
pub extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    if let Some(f) = finished(ctx) {
        // Already admitted or ended: that reply stands.
        return send(ctx, f);
    }
    let bc = api!(RedisModule_GetBlockedClientHandle(ctx));
    let Some(Taken {
        waiter: w,
        qid,
        was_head,
        name,
    }) = queue::take(ctx, bc)
    else {
        return reply::error(ctx, &RlError::Syntax("wait ended"));
    };
    let label = w.claim.label();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let name = OwnedString::new(ctx, &name);
        let now = clock::now_ns();
        Key::open(ctx, name.ptr).map(|key| {
            w.claim
                .decide(&key, now)
                .map(|step| match was_head && !step.decision.allowed {
                    true => step.decision,
                    false => behind(&step.decision, 0),
                })
        })
    }))
    .ok()
    .flatten()
    .unwrap_or(Err(RlError::Internal(label)));
    if was_head {
        schedule(ctx, qid, Millis(0));
    }
    let finished = Finished {
        label,
        allowed: false,
        cost: w.claim.cost(),
        token: w.token,
        reply: result.map(|d| d.reply()).map_err(|e| e.to_string()),
    };
    let sent = send(ctx, &finished);
    // The reply is sent; the handle is still the module's to release.
    release(bc);
    sent
}

/// The client went away (or `CLIENT UNBLOCK … ERROR`, or a role change ended
/// the wait): it loses its place and spends nothing.
pub extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    bc: *mut raw::RedisModuleBlockedClient,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(taken) = queue::take(ctx, bc) {
            release(bc);
            stats::abandoned(taken.waiter.claim.label(), taken.waiter.token);
            if taken.was_head {
                schedule(ctx, taken.qid, Millis(0));
            }
            return;
        }
        // The module had ended the wait (its handle is released), but the
        // client left before the reply was sent: the wait is counted here.
        if let Some(f) = finished(ctx) {
            count(f);
        }
    }));
}

/// A generic keyspace event (`del`, `expire`, `rename`, ...), an expiry or an
/// eviction of a key with waiters: look at its queue now.
extern "C" fn on_keyspace(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if waiting() > 0 && !in_wake() {
        let _ = catch_unwind(AssertUnwindSafe(|| wake(ctx, key)));
    }
    OK
}

/// Wakes every queue whose database `touched` says was replaced wholesale:
/// each is decided again on its key's new state, at once.
fn wake_databases(ctx: *mut raw::RedisModuleCtx, touched: impl Fn(c_int) -> bool) {
    let queues: Vec<queue::QueueId> = queue::with(|s| {
        let hit = s.queues.iter().filter(|(_, q)| touched(q.db));
        hit.map(|(&qid, _)| qid).collect()
    });
    for qid in queues {
        schedule(ctx, qid, Millis(0));
    }
}

/// `FLUSHALL` (sync or `ASYNC`), `FLUSHDB`, `DEBUG RELOAD`: once the data is
/// gone, the flushed databases' queues are decided again (no per-key events
/// are published for a flush).
pub extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END || data.is_null() || waiting() == 0 {
        return;
    }
    // SAFETY: the server passes a `RedisModuleFlushInfo` with this event.
    let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wake_databases(ctx, |db| dbnum == -1 || db == dbnum)
    }));
}

/// `SWAPDB a b`: the waiters of both databases are decided again on what
/// their keys now hold (as `BLPOP` is served after a swap).
pub extern "C" fn on_swapdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    if data.is_null() || waiting() == 0 {
        return;
    }
    // SAFETY: the server passes a `RedisModuleSwapDbInfo` with this event.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let (a, b) = (info.dbnum_first, info.dbnum_second);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wake_databases(ctx, |db| db == a || db == b)
    }));
}

/// The server is exiting: every handle is released (no reply reaches a client
/// after this; the connections close with the process).
pub extern "C" fn on_shutdown(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| end_all(ctx, RlError::ShuttingDown)));
}

/// The server became a replica (`REPLICAOF`, a cluster failover): every wait
/// ends with `-UNBLOCKED`, nothing spent. (Some servers end them themselves
/// first; those are gone from the queues by then.)
pub extern "C" fn on_role_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| end_all(ctx, RlError::Unblocked)));
}
