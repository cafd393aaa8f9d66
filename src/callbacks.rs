//! The server's ways in besides the command handlers: every callback it calls for waits,
//! a blocked client's reply, timeout (`CLIENT UNBLOCK`) and disconnection, a
//! key's timer, keyspace events, flushes, `SWAPDB`, role changes and
//! shutdown; for `INFO rl`, the `INFO` callback and the cron event. Each turns
//! its raw arguments into [`Ctx`], [`Blocked`] and bytes and calls a safe
//! function of [`crate::wait`] or [`crate::observe`]; none lets a panic cross
//! into the server. This file sits at the top, beside `lib.rs`, which registers
//! them: they call down into the layers, and [`crate::server`] reaches the
//! ones it hands the server (blocked clients, timers, keyspace events) through
//! [`WAYS_IN`], never by importing this file.

use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::error::RlError;
use crate::ffi::{api, bytes_of, OK};
use crate::observe;
use crate::policy;
use crate::reply;
use crate::server::{Blocked, Ctx, Finished, WaysIn};
use crate::wait;

/// The finished wait the server hands back with a callback, if any.
fn finished<'a>(ctx: *mut raw::RedisModuleCtx) -> Option<&'a Finished> {
    let data = api!(RedisModule_GetBlockedClientPrivateData(ctx)) as *const Finished;
    // SAFETY: set by `Blocked::unblock` from a boxed `Finished`; freed by
    // `free_finished` after the callback that reads it.
    (!data.is_null()).then(|| unsafe { &*data })
}

/// Sends a finished wait's reply and counts it.
fn send(ctx: *mut raw::RedisModuleCtx, f: &Finished) -> c_int {
    f.count();
    match &f.reply {
        Ok(values) => reply::integers(ctx, values),
        Err(text) => reply::error_text(ctx, text),
    }
}

/// Sends a finished wait's reply (the blocked client's reply callback).
pub extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    match finished(ctx) {
        Some(f) => send(ctx, f),
        None => OK,
    }
}

/// Frees a finished wait's reply once the server is done with it.
pub extern "C" fn free_finished(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` came from `Box::into_raw` in `Blocked::unblock`, freed once here.
        drop(unsafe { Box::from_raw(data.cast::<Finished>()) });
    }
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
    let bc = Blocked::from_raw(api!(RedisModule_GetBlockedClientHandle(ctx)));
    let Some(finished) = wait::timed_out(Ctx::from_raw(ctx), bc) else {
        return reply::error(ctx, &RlError::Syntax("wait ended"));
    };
    let sent = send(ctx, &finished);
    // The reply is sent; the handle is still the module's to release.
    bc.release();
    sent
}

/// The client went away (or `CLIENT UNBLOCK … ERROR`, or a role change ended
/// the wait): it loses its place and spends nothing.
pub extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    bc: *mut raw::RedisModuleBlockedClient,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if wait::left(Ctx::from_raw(ctx), Blocked::from_raw(bc)) {
            return;
        }
        // The module had ended the wait (its handle is released), but the
        // client left before the reply was sent: the wait is counted here.
        if let Some(f) = finished(ctx) {
            f.count();
        }
    }));
}

/// The timer of one key's queue (`data` is the queue's id).
pub extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    wait::on_timer(Ctx::from_raw(ctx), data as usize as u64);
}

/// A generic keyspace event (`del`, `expire`, `rename`, ...), an expiry or an
/// eviction of a key with waiters: look at its queue now.
pub extern "C" fn on_keyspace(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wait::key_event(Ctx::from_raw(ctx), bytes_of(key))
    }));
    OK
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
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END || data.is_null() {
        return;
    }
    // SAFETY: the server passes a `RedisModuleFlushInfo` with this event.
    let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wait::wake_databases(Ctx::from_raw(ctx), |db| dbnum == -1 || db == dbnum)
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
    if data.is_null() {
        return;
    }
    // SAFETY: the server passes a `RedisModuleSwapDbInfo` with this event.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let (a, b) = (info.dbnum_first, info.dbnum_second);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wait::wake_databases(Ctx::from_raw(ctx), |db| db == a || db == b)
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
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wait::end_all(Ctx::from_raw(ctx), RlError::ShuttingDown)
    }));
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
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wait::end_all(Ctx::from_raw(ctx), RlError::Unblocked)
    }));
}

/// The `INFO` callback: the `rl` module's `stats` section, as
/// [`observe::section`] gives its lines, then the policies held.
pub extern "C" fn on_info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let lines = observe::section(for_crash_report != 0);
    api!(RedisModule_InfoAddSection(ctx, c"stats".as_ptr()));
    for (name, fields) in &lines {
        api!(RedisModule_InfoBeginDictField(ctx, name.as_ptr()));
        for (field, value) in fields {
            api!(RedisModule_InfoAddFieldULongLong(
                ctx,
                field.as_ptr(),
                *value
            ));
        }
        api!(RedisModule_InfoEndDictField(ctx));
    }
    // The policies this node holds and their digest (`RL.POLICY DIGEST`).
    if let Some((count, digest)) = policy::held() {
        api!(RedisModule_InfoAddFieldULongLong(
            ctx,
            observe::POLICIES.as_ptr(),
            count as u64
        ));
        let digest = std::ffi::CString::new(digest).expect("hex");
        api!(RedisModule_InfoAddFieldCString(
            ctx,
            observe::POLICY_DIGEST.as_ptr(),
            digest.as_ptr()
        ));
    }
    // `INFO rl_policies`: one line per policy (not in a crash report, which must
    // not settle the counters against the server).
    if for_crash_report == 0 {
        api!(RedisModule_InfoAddSection(ctx, c"policies".as_ptr()));
        for (name, fields) in observe::policy_lines(&policy::counted()) {
            api!(RedisModule_InfoBeginDictField(ctx, name.as_ptr()));
            for (field, value) in fields {
                api!(RedisModule_InfoAddFieldULongLong(
                    ctx,
                    field.as_ptr(),
                    value
                ));
            }
            api!(RedisModule_InfoEndDictField(ctx));
        }
    }
}

/// The cron event (server `hz` times a second): `INFO rl` settles its counters.
pub extern "C" fn on_cron(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    observe::stats::cron();
}

/// The callbacks [`crate::server`] hands the server for blocked clients, timers
/// and keyspace events (installed at load by `lib.rs`).
pub const WAYS_IN: WaysIn = WaysIn {
    on_reply: Some(on_reply),
    on_timeout: Some(on_timeout),
    free_finished: Some(free_finished),
    on_disconnect: Some(on_disconnect),
    on_timer: Some(on_timer),
    on_keyspace: Some(on_keyspace),
};
