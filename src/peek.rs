//! `RL.PEEK <ALGO> key params [COST n]`: what `RL.<ALGO> key params … PEEK`
//! replies, as a read-only command: it opens the key for reading, writes,
//! replicates and signals nothing, and so runs on replicas, in `EVAL_RO` and
//! `FCALL_RO`, and under `maxmemory` pressure. `ALGO` is one of the six
//! limiters (options `BURST` for GCRA and `COST` only: no `REFUND`, `PEEK` or
//! `BLOCK`) or `ACQUIRE` (`RL.PEEK ACQUIRE key limit timeout lease_id`, no
//! options at all). On a
//! master with waiters (`BLOCK`) on the key, their claims count ahead, exactly
//! as for `PEEK`.

use std::os::raw::c_int;

use redis_module::raw;

use crate::args::{self as grammar, Kind};
use crate::command::{args, guarded, with_bytes, Reply};
use crate::error::RlError;
use crate::lease;
use crate::store::{arg_bytes, lease_member, Key};
use crate::{clock, config, decision, stats, wait};

const LABEL: &str = "RL.PEEK";

/// The handler.
pub extern "C" fn command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    guarded(ctx, LABEL, || {
        run(ctx, args(argv, argc)).map(Reply::Decision)
    })
}

fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<[i64; 5], RlError> {
    // The server checks the arity (-5) first; this is the library's check too.
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.peek"));
    }
    let algo = arg_bytes(argv[1]);
    let name = argv[2];
    // The arguments as `RL.<ALGO>` sees them: name, key, params.
    let rest = &argv[2..];
    let arity = |e: RlError| match e {
        RlError::WrongArity(_) => RlError::WrongArity("rl.peek"),
        e => e,
    };
    let now = clock::now_ns();
    if algo.eq_ignore_ascii_case(b"ACQUIRE") {
        // Exactly `key limit timeout lease_id`: RL.PEEK takes no option of
        // RL.ACQUIRE's (it always peeks and never waits).
        if rest.len() != 4 {
            return Err(RlError::WrongArity("rl.peek"));
        }
        let request =
            with_bytes(&rest[1..], |p| lease::parse_acquire(p, config::caps())).map_err(arity)?;
        let member = lease_member(arg_bytes(rest[3]));
        let key = Key::open_read(ctx, name).ok_or(RlError::Internal(LABEL))?;
        let mut out = lease::decide_acquire(&key, &request.lease, &member, now)?;
        if wait::active() {
            let claim = wait::Claim::acquire(request.lease, &member);
            wait::queue_ahead(ctx, name, &key, &claim, now, &mut out)?;
        }
        stats::decision(LABEL, out.decision.allowed, 1);
        return Ok(out.decision.reply());
    }
    let kind = Kind::ALL
        .into_iter()
        .find(|k| algo.eq_ignore_ascii_case(k.tag_upper().as_bytes()))
        .ok_or(RlError::Syntax(
            "RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or ACQUIRE",
        ))?;
    let request = with_bytes(&rest[1..], |p| {
        grammar::parse_form(kind, p, config::caps(), grammar::Form::Peek)
    })?;
    let key = Key::open_read(ctx, name).ok_or(RlError::Internal(LABEL))?;
    let mut pending = decision::decide(&key, kind, &request, now)?;
    if wait::active() {
        let claim = wait::Claim::Decision { kind, request };
        if let Some(d) = wait::queued(ctx, name, &key, &claim, &pending.decision, now)? {
            pending.decision = d;
        }
    }
    let counted = if request.refund { 0 } else { request.cost };
    stats::decision(LABEL, pending.decision.allowed, counted);
    Ok(pending.decision.reply())
}
