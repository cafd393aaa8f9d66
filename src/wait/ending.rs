//! How a wait ends: the reply its client gets, and the blocked-client handle
//! released. Invariant: every handle is released exactly once, by whoever
//! takes its waiter out of the queues ([`finish`] for the waits the module
//! ends, [`release`] where the server ended them).

use std::os::raw::{c_int, c_void};

use redis_module::raw;

use super::policy::Ending;
use super::queue::Waiter;
use crate::error::RlError;
use crate::ffi::api;
use crate::observe::{self, stats, Token};
use crate::reply;

/// A finished wait's reply, handed to the server with the handle.
pub struct Finished {
    pub label: &'static str,
    pub reply: Result<[i64; 5], String>,
    pub allowed: bool,
    pub cost: u64,
    pub token: Token,
}

/// Ends waiter `w`'s wait (taken out of its queue) as `ending` says,
/// releasing its handle; the reply goes out from [`on_reply`].
pub fn finish(w: &Waiter, ending: Ending) {
    observe::wait_ended();
    let (reply, allowed) = match ending {
        Ending::Admitted(d) => (Ok(d.reply()), d.allowed),
        Ending::Denied(d) => (Ok(d.reply()), false),
        Ending::Failed(e) => (Err(e.to_string()), false),
    };
    let finished = Finished {
        label: w.claim.label(),
        reply,
        allowed,
        cost: w.claim.cost(),
        token: w.token,
    };
    let data = Box::into_raw(Box::new(finished));
    api!(RedisModule_UnblockClient(w.bc, data.cast()));
}

/// Ends every wait with `error`, nothing spent, and stops every timer.
pub fn end_all(ctx: *mut raw::RedisModuleCtx, error: RlError) {
    let queues = super::queue::with(|s| s.take_all());
    for (_, q) in queues {
        if let Some((id, _)) = q.timer {
            api!(RedisModule_StopTimer(ctx, id, std::ptr::null_mut()));
        }
        for w in q.waiters {
            finish(&w, Ending::Failed(error.clone()));
        }
    }
}

/// Releases the handle of a blocked client whose wait ended without an
/// admission reply (its client is gone, or was answered already).
pub fn release(bc: *mut raw::RedisModuleBlockedClient) {
    api!(RedisModule_UnblockClient(bc, std::ptr::null_mut()));
}

/// The finished wait the server hands back with a callback, if any.
pub fn finished<'a>(ctx: *mut raw::RedisModuleCtx) -> Option<&'a Finished> {
    let data = api!(RedisModule_GetBlockedClientPrivateData(ctx)) as *const Finished;
    // SAFETY: set by `finish` from a boxed `Finished`; freed by `free_privdata`
    // after the callback that reads it.
    (!data.is_null()).then(|| unsafe { &*data })
}

/// Sends a finished wait's reply and counts it.
pub fn send(ctx: *mut raw::RedisModuleCtx, f: &Finished) -> c_int {
    count(f);
    match &f.reply {
        Ok(values) => reply::integers(ctx, values),
        Err(text) => reply::error_text(ctx, text),
    }
}

/// Counts a finished wait in `INFO rl` (once: when it is sent, or when its
/// client went away before it could be).
pub fn count(f: &Finished) {
    if f.reply.is_ok() {
        stats::decision(f.allowed, f.cost);
    }
    stats::waited(f.token);
    stats::call(f.label, f.reply.is_err());
}

/// Sends a finished wait's reply (the blocked client's reply callback).
pub extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    match finished(ctx) {
        Some(f) => send(ctx, f),
        None => crate::ffi::OK,
    }
}

/// Frees a finished wait's reply once the server is done with it.
pub extern "C" fn free_privdata(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` came from `Box::into_raw` in `finish`, freed once here.
        drop(unsafe { Box::from_raw(data.cast::<Finished>()) });
    }
}
