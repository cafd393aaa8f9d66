//! The command layer: arguments -> typed request -> stored state -> pure decision
//! -> write and replicate -> reply. Every handler runs behind `catch_unwind`, and
//! the reply is sent only after the decision is complete, so a panic becomes an
//! `ERR` reply and never a half-written one.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::args::{self, Kind, Request};
use crate::error::RlError;
use crate::store::{arg_bytes, Key};
use crate::{clock, config, decision, stats, wait};

/// Arguments beyond this many are only ever errors; they are parsed from the heap.
const STACK_ARGS: usize = 16;

/// What a command answers on success.
pub enum Reply {
    /// The five integers of a decision.
    Decision([i64; 5]),
    /// `RL.ALL`: the binding layer's five integers, then every layer's.
    Layers {
        binding: usize,
        layers: Vec<[i64; 5]>,
    },
    #[cfg_attr(not(feature = "debug-commands"), allow(dead_code))]
    Ok,
    /// A single integer (`RL.RELEASE`: 1 if the lease was held, else 0).
    Integer(i64),
}

/// Runs a command body behind `catch_unwind` and sends its reply: a panic
/// becomes an `ERR` naming the command, and nothing was replied before it.
pub fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    label: &'static str,
    body: impl FnOnce() -> Result<Reply, RlError>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(RlError::Internal(label)));
    stats::call(label, result.is_err());
    match result {
        Ok(Reply::Integer(v)) => {
            // SAFETY: `ctx` is the live context of the current command.
            unsafe { raw::RedisModule_ReplyWithLongLong.expect("ReplyWithLongLong")(ctx, v) };
            raw::REDISMODULE_OK as c_int
        }
        Ok(Reply::Decision(values)) => reply_integers(ctx, &values),
        Ok(Reply::Layers { binding, layers }) => {
            // SAFETY: `ctx` is the live context of the current command.
            unsafe {
                raw::RedisModule_ReplyWithArray.expect("ReplyWithArray")(ctx, 6);
                for &v in &layers[binding] {
                    raw::RedisModule_ReplyWithLongLong.expect("ReplyWithLongLong")(ctx, v);
                }
                raw::RedisModule_ReplyWithArray.expect("ReplyWithArray")(ctx, layers.len() as _);
            }
            for layer in &layers {
                reply_integers(ctx, layer);
            }
            raw::REDISMODULE_OK as c_int
        }
        Ok(Reply::Ok) => {
            // SAFETY: `ctx` is the live context of the current command.
            unsafe {
                raw::RedisModule_ReplyWithSimpleString.expect("ReplyWithSimpleString")(
                    ctx,
                    c"OK".as_ptr(),
                )
            };
            raw::REDISMODULE_OK as c_int
        }
        Err(err) => reply_error(ctx, &err),
    }
}

/// The raw arguments of a command.
pub fn args<'a>(
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> &'a [*mut raw::RedisModuleString] {
    // SAFETY: Redis passes `argc` valid argument pointers, alive for the whole command.
    unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) }
}

/// Runs one decision command and replies to the client.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    kind: Kind,
) -> c_int {
    let argv = args(argv, argc);
    if wait::wants_block(argv, kind.min_argc()) {
        return wait::dispatch(ctx, argv, wait::Target::Decision(kind));
    }
    guarded(ctx, kind.label(), || {
        run(ctx, argv, kind).map(Reply::Decision)
    })
}

fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
    kind: Kind,
) -> Result<[i64; 5], RlError> {
    if argv.len() < kind.min_argc() {
        return Err(RlError::WrongArity(kind.command()));
    }
    let request = parse_params(&argv[2..], kind)?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(kind.label()))?;
    let mut pending = decision::decide(&key, kind, &request, now)?;
    if wait::active() {
        let claim = wait::Claim::Decision { kind, request };
        if let Some(d) = wait::queued(ctx, argv[1], &key, &claim, &pending.decision, now)? {
            pending = decision::Pending {
                decision: d,
                write: None,
            };
        }
    }
    if let (false, Some(write)) = (request.peek, &pending.write) {
        decision::commit(&key, write);
        if request.refund && wait::active() {
            drop(key);
            wait::wake(ctx, argv[1]);
        }
    }
    let counted = if request.refund { 0 } else { request.cost };
    stats::decision(kind.label(), pending.decision.allowed, counted);
    Ok(pending.decision.reply())
}

pub fn parse_params(
    params: &[*mut raw::RedisModuleString],
    kind: Kind,
) -> Result<Request, RlError> {
    with_bytes(params, |slices| args::parse(kind, slices, config::caps()))
}

/// Runs `f` on the arguments' bytes, collected on the stack when they are few.
pub fn with_bytes<T>(params: &[*mut raw::RedisModuleString], f: impl FnOnce(&[&[u8]]) -> T) -> T {
    if params.len() <= STACK_ARGS {
        let mut slices: [&[u8]; STACK_ARGS] = [&[]; STACK_ARGS];
        for (slot, &arg) in slices.iter_mut().zip(params) {
            *slot = arg_bytes(arg);
        }
        f(&slices[..params.len()])
    } else {
        let slices: Vec<&[u8]> = params.iter().map(|&arg| arg_bytes(arg)).collect();
        f(&slices)
    }
}

pub fn reply_integers(ctx: *mut raw::RedisModuleCtx, values: &[i64]) -> c_int {
    // SAFETY: `ctx` is the live context of the current command.
    unsafe {
        raw::RedisModule_ReplyWithArray.expect("ReplyWithArray")(ctx, values.len() as _);
        for &v in values {
            raw::RedisModule_ReplyWithLongLong.expect("ReplyWithLongLong")(ctx, v);
        }
    }
    raw::REDISMODULE_OK as c_int
}

pub fn reply_error(ctx: *mut raw::RedisModuleCtx, err: &RlError) -> c_int {
    // Messages never hold NUL bytes (client bytes are sanitized); fall back if one did.
    let text = CString::new(err.to_string()).unwrap_or_else(|_| c"ERR invalid request".into());
    // SAFETY: `ctx` is the live context of the current command.
    unsafe { raw::RedisModule_ReplyWithError.expect("ReplyWithError")(ctx, text.as_ptr()) };
    raw::REDISMODULE_OK as c_int
}
