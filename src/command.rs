//! The command layer: arguments -> typed request -> stored state -> pure decision
//! -> write and replicate -> reply. Every handler runs behind `catch_unwind`, and
//! the reply is sent only after the decision is complete, so a panic becomes an
//! `ERR` reply and never a half-written one.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::algorithm::sliding_log::LogView;
use crate::algorithm::{expire_ms, fixed, sliding, Decision, Outcome};
use crate::args::{self, Kind, Limiter, Request};
use crate::codec::{decode, encode};
use crate::error::RlError;
use crate::store::{arg_bytes, Held, Key};
use crate::{clock, config};

/// Arguments beyond this many are only ever errors; they are parsed from the heap.
const STACK_ARGS: usize = 16;

/// What a command answers on success.
pub enum Reply {
    /// The five integers of a decision.
    Decision([i64; 5]),
    #[cfg_attr(not(feature = "debug-commands"), allow(dead_code))]
    Ok,
}

/// Runs a command body behind `catch_unwind` and sends its reply: a panic
/// becomes an `ERR` naming the command, and nothing was replied before it.
pub fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    label: &'static str,
    body: impl FnOnce() -> Result<Reply, RlError>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(RlError::Internal(label)));
    match result {
        Ok(Reply::Decision(values)) => reply_integers(ctx, &values),
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
    guarded(ctx, kind.label(), || {
        run(ctx, args(argv, argc), kind).map(Reply::Decision)
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
    decide_and_store(&key, kind, &request, now).map(|d| d.reply())
}

fn parse_params(params: &[*mut raw::RedisModuleString], kind: Kind) -> Result<Request, RlError> {
    let caps = config::caps();
    if params.len() <= STACK_ARGS {
        let mut slices: [&[u8]; STACK_ARGS] = [&[]; STACK_ARGS];
        for (slot, &arg) in slices.iter_mut().zip(params) {
            *slot = arg_bytes(arg);
        }
        args::parse(kind, &slices[..params.len()], caps)
    } else {
        let slices: Vec<&[u8]> = params.iter().map(|&arg| arg_bytes(arg)).collect();
        args::parse(kind, &slices, caps)
    }
}

fn decide_and_store(key: &Key, kind: Kind, req: &Request, now: u64) -> Result<Decision, RlError> {
    let wide = now as u128;
    let write = !req.peek;
    Ok(match req.limiter {
        Limiter::Gcra(p) => instant(key, kind, write, |tat| p.decide(tat, wide, req.cost))?,
        Limiter::TokenBucket(p) => instant(key, kind, write, |t| p.decide(t, wide, req.cost))?,
        Limiter::Leaky(p) => instant(key, kind, write, |t| p.decide(t, wide, req.cost))?,
        Limiter::Fixed(p) => {
            let stored = read_string::<2>(key, kind)?.map(|[start_ms, count]| fixed::FixedState {
                start_ms: narrow(start_ms),
                count: narrow(count),
            });
            let out = p.decide(stored, now, req.cost);
            if let (true, Some(s)) = (write, out.write) {
                let text = encode(kind, [s.start_ms as u128, s.count as u128]);
                key.write_string(
                    text.as_bytes(),
                    expire_ms(fixed::idle_at_ns(&s, p.window_ns)),
                );
            }
            out.decision
        }
        Limiter::Sliding(p) => {
            let stored = read_string::<3>(key, kind)?.map(|[start_ms, previous, current]| {
                sliding::SlidingState {
                    start_ms: narrow(start_ms),
                    previous: narrow(previous),
                    current: narrow(current),
                }
            });
            let out = p.decide(stored, now, req.cost);
            if let (true, Some(s)) = (write, out.write) {
                let fields = [s.start_ms as u128, s.previous as u128, s.current as u128];
                let text = encode(kind, fields);
                key.write_string(
                    text.as_bytes(),
                    expire_ms(sliding::idle_at_ns(&s, p.window_ns)),
                );
            }
            out.decision
        }
        Limiter::SlidingLog(p) => {
            let out = match key.held() {
                Held::Empty => p.decide(&EmptyLog, now, req.cost),
                Held::Zset => {
                    let log = key.as_log().ok_or(RlError::ForeignValue(kind.label()))?;
                    p.decide(&log, now, req.cost)
                }
                Held::String(_) | Held::Other => return Err(RlError::WrongType),
            };
            if let (true, Some(w)) = (write, out.write) {
                key.write_log(&w, expire_ms(p.idle_at_ns(&w)));
            }
            out.decision
        }
    })
}

/// Decides with a limiter whose state is one instant (GCRA, token bucket, leaky
/// bucket) and stores the new instant, which is also the key's expiry.
fn instant(
    key: &Key,
    kind: Kind,
    write: bool,
    decide: impl FnOnce(u128) -> Outcome<u128>,
) -> Result<Decision, RlError> {
    let stored = read_string::<1>(key, kind)?.map_or(0, |[t]| t);
    let out = decide(stored);
    if let (true, Some(t)) = (write, out.write) {
        key.write_string(encode(kind, [t]).as_bytes(), expire_ms(t));
    }
    Ok(out.decision)
}

/// The fields of a string state `kind` wrote, `None` if the key is empty.
fn read_string<const N: usize>(key: &Key, kind: Kind) -> Result<Option<[u128; N]>, RlError> {
    match key.held() {
        Held::Empty => Ok(None),
        Held::String(bytes) => decode::<N>(kind, bytes).map(Some),
        Held::Zset | Held::Other => Err(RlError::WrongType),
    }
}

/// A stored count or millisecond field; values beyond `u64` saturate (they can
/// only come from a hand-edited key and still decide conservatively).
fn narrow(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

/// An absent sliding log.
struct EmptyLog;

impl LogView for EmptyLog {
    fn count_after(&self, _: u64) -> u64 {
        0
    }
    fn nth_after(&self, _: u64, _: u64) -> Option<u64> {
        None
    }
    fn newest_ns(&self) -> Option<u64> {
        None
    }
}

fn reply_integers(ctx: *mut raw::RedisModuleCtx, values: &[i64]) -> c_int {
    // SAFETY: `ctx` is the live context of the current command.
    unsafe {
        raw::RedisModule_ReplyWithArray.expect("ReplyWithArray")(ctx, values.len() as _);
        for &v in values {
            raw::RedisModule_ReplyWithLongLong.expect("ReplyWithLongLong")(ctx, v);
        }
    }
    raw::REDISMODULE_OK as c_int
}

fn reply_error(ctx: *mut raw::RedisModuleCtx, err: &RlError) -> c_int {
    // Messages never hold NUL bytes (client bytes are sanitized); fall back if one did.
    let text = CString::new(err.to_string()).unwrap_or_else(|_| c"ERR invalid request".into());
    // SAFETY: `ctx` is the live context of the current command.
    unsafe { raw::RedisModule_ReplyWithError.expect("ReplyWithError")(ctx, text.as_ptr()) };
    raw::REDISMODULE_OK as c_int
}
