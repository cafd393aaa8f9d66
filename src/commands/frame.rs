//! What every handler runs inside: the panic guard, the count and the reply;
//! and the one-key spend most commands make.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::algorithm::Decision;
use crate::decision::Claim;
use crate::error::RlError;
use crate::ffi::OK;
use crate::observe::stats;
use crate::reply::{self, Reply};
use crate::store::Key;
use crate::wait::{self, Layer, Spend, Spent};

/// Declares the `extern "C"` handler `$name`: `$run(ctx, argv)` behind
/// [`guarded`] as `$label`.
macro_rules! handler {
    ($name:ident, $label:expr, $run:expr) => {
        extern "C" fn $name(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            let argv = $crate::ffi::args(argv, argc);
            $crate::commands::frame::guarded(ctx, $label, || $run(ctx, argv))
        }
    };
}
pub(crate) use handler;

/// Runs a command body behind `catch_unwind`, counts it and sends its reply:
/// a panic becomes an `ERR` naming the command, and nothing was replied
/// before it. A call that waits is counted and answered when its wait ends.
pub fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    label: &'static str,
    body: impl FnOnce() -> Result<Reply, RlError>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(RlError::Internal(label)));
    if let Ok(Reply::Blocked) = result {
        return OK;
    }
    stats::call(label, result.is_err());
    match result {
        Ok(r) => reply::send(ctx, &r),
        Err(err) => reply::error(ctx, &err),
    }
}

/// Spends `claim` on one key and replies with its five integers (or waits).
pub fn spend_one(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: Key,
    claim: Claim,
    now: u64,
    how: Spend,
) -> Result<Reply, RlError> {
    spend_one_as(ctx, name, key, claim, now, how, Decision::reply)
}

/// [`spend_one`], its decision replied as `reply` makes it (`GCRA`: seconds).
/// A call that waits is answered by the shared reply: only calls that never
/// wait may choose another.
pub fn spend_one_as(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: Key,
    claim: Claim,
    now: u64,
    how: Spend,
    reply: fn(&Decision) -> [i64; 5],
) -> Result<Reply, RlError> {
    let mut layers = [Layer::new(name, key, claim)];
    Ok(match wait::spend(ctx, &mut layers, now, how)? {
        Spent::Blocked => Reply::Blocked,
        Spent::Decided => Reply::Decision(reply(layers[0].decision())),
    })
}
