//! The frame every command handler runs in: the server's raw context and
//! arguments become a [`Ctx`] and [`Arg`]s, the body runs behind the panic
//! guard, and the call is counted and answered.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::Ctx;
use crate::error::RlError;
use crate::ffi::{api, OK};
use crate::observe::stats;
use crate::reply::{self, Reply};

/// A command handler as the server calls it.
pub type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Declares the `extern "C"` handler `$name`: `$run(ctx, argv)` (a
/// [`Ctx`] and the arguments as [`Arg`]s) behind [`guarded`] as `$label`.
/// With `keys: $keys`, a request for the key positions (`getkeys-api`) is
/// answered with the positions `$keys(argv)` returns.
macro_rules! handler {
    ($name:ident, $label:expr, $run:expr) => {
        extern "C" fn $name(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            let argv = $crate::ffi::args(argv, argc);
            let ctx = $crate::server::Ctx::from_raw(ctx);
            $crate::server::handler::guarded(ctx, $label, || $run(ctx, argv))
        }
    };
    ($name:ident, $label:expr, $run:expr, keys: $keys:expr) => {
        extern "C" fn $name(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            let argv = $crate::ffi::args(argv, argc);
            let ctx = $crate::server::Ctx::from_raw(ctx);
            if $crate::server::handler::declare_keys(ctx, || $keys(argv)) {
                return $crate::ffi::OK;
            }
            $crate::server::handler::guarded(ctx, $label, || $run(ctx, argv))
        }
    };
}
pub(crate) use handler;

/// Runs a command body behind `catch_unwind`, counts it and sends its reply:
/// a panic becomes an `ERR` naming the command, and nothing was replied
/// before it. A call that waits is counted and answered when its wait ends.
#[inline]
pub fn guarded(
    ctx: Ctx,
    label: &'static str,
    body: impl FnOnce() -> Result<Reply, RlError>,
) -> c_int {
    let result =
        catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| Err(RlError::Internal(label)));
    if let Ok(Reply::Blocked) = result {
        return OK;
    }
    stats::call(label, result.is_err());
    match result {
        Ok(r) => reply::send(ctx.ptr(), &r),
        Err(err) => reply::error(ctx.ptr(), &err),
    }
}

/// True if the server asks for the command's key positions, which are then
/// declared (those `positions` gives; none if the arguments are malformed).
pub fn declare_keys(ctx: Ctx, positions: impl FnOnce() -> std::ops::Range<usize>) -> bool {
    if api!(RedisModule_IsKeysPositionRequest(ctx.ptr())) == 0 {
        return false;
    }
    for pos in positions() {
        api!(RedisModule_KeyAtPos(ctx.ptr(), pos as c_int));
    }
    true
}
