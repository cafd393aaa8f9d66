//! What a command answers, sent to the client. Replies are sent only once a
//! call's outcome is complete, so a failure never leaves a half-written one.

use std::ffi::CString;
use std::os::raw::c_int;

use redis_module::raw;

use crate::error::RlError;
use crate::ffi::{api, OK};

/// What a command answers on success.
pub enum Reply {
    /// The five integers of a decision.
    Decision([i64; 5]),
    /// `RL.ALL`: the binding layer's five integers, then every layer's.
    Layers {
        binding: usize,
        layers: Vec<[i64; 5]>,
    },
    Ok,
    /// A single integer (`RL.RELEASE`: 1 if the lease was held, else 0).
    Integer(i64),
    /// A bulk string, or nil.
    Bulk(Option<String>),
    /// An array of bulk strings.
    Bulks(Vec<String>),
    /// An array of simple strings (`HELP`'s lines, as Redis answers `CONFIG HELP`).
    Lines(&'static [&'static str]),
    /// `RL.TOP`: `[key, denials, overestimate]` triples.
    Top(Vec<crate::observe::top::Entry>),
    /// The client waits (`BLOCK`): its reply comes when the wait ends.
    Blocked,
}

/// Sends `reply` (nothing for [`Reply::Blocked`]).
pub fn send(ctx: *mut raw::RedisModuleCtx, reply: &Reply) -> c_int {
    match reply {
        Reply::Decision(values) => integers(ctx, values),
        Reply::Layers { binding, layers } => {
            api!(RedisModule_ReplyWithArray(ctx, 6));
            for &v in &layers[*binding] {
                api!(RedisModule_ReplyWithLongLong(ctx, v));
            }
            api!(RedisModule_ReplyWithArray(ctx, layers.len() as _));
            for layer in layers {
                integers(ctx, layer);
            }
            OK
        }
        Reply::Ok => {
            api!(RedisModule_ReplyWithSimpleString(ctx, c"OK".as_ptr()));
            OK
        }
        Reply::Integer(v) => {
            api!(RedisModule_ReplyWithLongLong(ctx, *v));
            OK
        }
        Reply::Bulk(text) => {
            bulk(ctx, text.as_deref());
            OK
        }
        Reply::Bulks(texts) => {
            api!(RedisModule_ReplyWithArray(ctx, texts.len() as _));
            for text in texts {
                bulk(ctx, Some(text));
            }
            OK
        }
        Reply::Lines(lines) => {
            api!(RedisModule_ReplyWithArray(ctx, lines.len() as _));
            for line in *lines {
                let line = std::ffi::CString::new(*line).expect("help holds no NUL");
                api!(RedisModule_ReplyWithSimpleString(ctx, line.as_ptr()));
            }
            OK
        }
        Reply::Top(entries) => {
            api!(RedisModule_ReplyWithArray(ctx, entries.len() as _));
            for e in entries {
                api!(RedisModule_ReplyWithArray(ctx, 3));
                api!(RedisModule_ReplyWithStringBuffer(
                    ctx,
                    e.key.as_ptr().cast(),
                    e.key.len()
                ));
                api!(RedisModule_ReplyWithLongLong(ctx, clamp(e.count)));
                api!(RedisModule_ReplyWithLongLong(ctx, clamp(e.overestimate)));
            }
            OK
        }
        Reply::Blocked => OK,
    }
}

fn clamp(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

fn bulk(ctx: *mut raw::RedisModuleCtx, text: Option<&str>) {
    match text {
        Some(t) => api!(RedisModule_ReplyWithStringBuffer(
            ctx,
            t.as_ptr().cast(),
            t.len()
        )),
        None => api!(RedisModule_ReplyWithNull(ctx)),
    };
}

/// An array of integers.
pub fn integers(ctx: *mut raw::RedisModuleCtx, values: &[i64]) -> c_int {
    api!(RedisModule_ReplyWithArray(ctx, values.len() as _));
    for &v in values {
        api!(RedisModule_ReplyWithLongLong(ctx, v));
    }
    OK
}

/// An error reply.
pub fn error(ctx: *mut raw::RedisModuleCtx, err: &RlError) -> c_int {
    error_text(ctx, &err.to_string())
}

/// An error reply from its text (`ERR …`, `WRONGTYPE …`).
pub fn error_text(ctx: *mut raw::RedisModuleCtx, text: &str) -> c_int {
    // Messages never hold NUL bytes (client bytes are sanitized); fall back if one did.
    let text = CString::new(text).unwrap_or_else(|_| c"ERR invalid request".into());
    api!(RedisModule_ReplyWithError(ctx, text.as_ptr()));
    OK
}
