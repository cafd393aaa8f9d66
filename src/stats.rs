//! `INFO rl`: per-command counters (calls, admitted, denied, errors, and the
//! total cost admitted and denied), kept by a [`Ledger`] so that they clear
//! exactly when Redis's own command statistics clear. Redis's counts are read
//! from `INFO commandstats` only when `INFO rl` is asked, and from the cron
//! event while calls are waiting to be settled: never while a command runs, and
//! no other command pays anything. Everything runs on Redis's main thread; the
//! mutex only makes the static `Sync`.

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use redis_module::raw;

use crate::ledger::{Ledger, Outcome, Tally, Token};
use crate::server_info::ServerInfo;

/// Each counted command: its label (as in error messages), its name in
/// `INFO commandstats`, its `INFO rl` field name.
const TABLE: [(&str, &CStr, &CStr); 11] = [
    ("RL.GCRA", c"cmdstat_rl.gcra", c"gcra"),
    ("RL.TOKENBUCKET", c"cmdstat_rl.tokenbucket", c"tokenbucket"),
    ("RL.LEAKY", c"cmdstat_rl.leaky", c"leaky"),
    ("RL.SLIDING", c"cmdstat_rl.sliding", c"sliding"),
    ("RL.SLIDINGLOG", c"cmdstat_rl.slidinglog", c"slidinglog"),
    ("RL.FIXED", c"cmdstat_rl.fixed", c"fixed"),
    ("RL.ALL", c"cmdstat_rl.all", c"all"),
    ("RL.ACQUIRE", c"cmdstat_rl.acquire", c"acquire"),
    ("RL.RELEASE", c"cmdstat_rl.release", c"release"),
    ("CL.THROTTLE", c"cmdstat_cl.throttle", c"throttle"),
    ("RL.PEEK", c"cmdstat_rl.peek", c"peek"),
];
const N: usize = TABLE.len();

/// Calls kept before a call settles them itself (16 bytes each): bounds the
/// memory when the cron event cannot run, e.g. during a long script. Test
/// builds use a small bound, so that tests reach it.
const MAX_RECENT: usize = if cfg!(feature = "debug-commands") {
    64
} else {
    1 << 20
};

struct State {
    ledger: Ledger<N>,
    /// The decision of the call in progress, if it made one.
    decided: Option<(bool, u64)>,
    /// The call in progress waited (`BLOCK`) before its decision: its token.
    waited: Option<Token>,
    /// The token of the next call that blocks.
    next_token: Token,
}

static STATE: Mutex<State> = Mutex::new(State {
    ledger: Ledger::new(),
    decided: None,
    waited: None,
    next_token: 0,
});

fn state() -> MutexGuard<'static, State> {
    // A panic never happens while the lock is held; recover the data if one did.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn index(label: &str) -> Option<usize> {
    TABLE.iter().position(|(l, _, _)| *l == label)
}

/// The call in progress decided: admitted or denied, for `cost` units (a
/// refund counts as admitted with no cost).
pub fn decision(_label: &str, allowed: bool, cost: u64) {
    state().decided = Some((allowed, cost));
}

/// The call in progress waited (`BLOCK`, under `token`) before its decision.
pub fn waited(token: Token) {
    state().waited = Some(token);
}

/// True where the server counts a blocked call when it blocks (Redis before
/// 7.2), not when it is answered (Redis 7.2+, Valkey).
fn counts_at_block() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static AT_BLOCK: AtomicU8 = AtomicU8::new(0);
    match AT_BLOCK.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: available on every supported server (Redis 6.0.9+).
            let version = unsafe { raw::RedisModule_GetServerVersion.expect("GetServerVersion")() };
            let at_block = version < 0x00_07_02_00;
            AT_BLOCK.store(if at_block { 1 } else { 2 }, Ordering::Relaxed);
            at_block
        }
    }
}

/// A waiting call of `label` (blocked under `token`) ended without a reply
/// (its client went away).
pub fn abandoned(label: &str, token: Token) {
    if counts_at_block() {
        if let Some(i) = index(label) {
            state().ledger.record(i, Outcome::Abandoned(token));
        }
    }
}

/// A call of `label` started waiting (`BLOCK`); it is recorded now if the
/// server counts it now, else when it is answered. Returns the token its
/// completion is reported with.
pub fn blocked(label: &str) -> Token {
    let mut state = state();
    let token = state.next_token;
    state.next_token = token.wrapping_add(1);
    if counts_at_block() {
        if let Some(i) = index(label) {
            if state.ledger.recent() >= MAX_RECENT {
                settle(&mut state);
            }
            state.ledger.record(i, Outcome::Blocked(token));
        }
    }
    token
}

/// A call finished: with an error, or with a reply.
pub fn call(label: &str, failed: bool) {
    let mut state = state();
    let decided = state.decided.take();
    let waited = state.waited.take();
    if state.ledger.recent() >= MAX_RECENT {
        // Every call recorded so far has returned, so Redis has counted it; this
        // one is not recorded yet.
        settle(&mut state);
    }
    if let Some(i) = index(label) {
        let outcome = match (failed, decided) {
            // A blocked call the server counted when it blocked (`blocked`).
            (true, _) => match waited {
                Some(token) if counts_at_block() => Outcome::Abandoned(token),
                _ => Outcome::Error,
            },
            (false, Some((allowed, cost))) => match waited {
                Some(token) if counts_at_block() => Outcome::Late {
                    allowed,
                    cost,
                    token,
                },
                Some(_) => Outcome::Waited { allowed, cost },
                None => Outcome::Decided { allowed, cost },
            },
            (false, None) => Outcome::Answered,
        };
        state.ledger.record(i, outcome);
    }
}

/// Each counted command's `calls` in `INFO commandstats` (absent: 0); `None`
/// if the server does not answer.
fn redis_calls() -> Option<[u64; N]> {
    let info = ServerInfo::read(c"commandstats")?;
    let mut calls = [0u64; N];
    for (slot, (_, field, _)) in calls.iter_mut().zip(TABLE) {
        *slot = info.field(field).map_or(0, calls_of);
    }
    Some(calls)
}

/// `calls=N` in a commandstats value (`calls=3,usec=...`); 0 if absent.
fn calls_of(text: &[u8]) -> u64 {
    text.split(|&b| b == b',')
        .find_map(|kv| kv.strip_prefix(b"calls="))
        .and_then(crate::codec::parse_u64)
        .unwrap_or(0)
}

/// Settles the ledger against Redis's counts.
fn settle(state: &mut State) {
    if let Some(calls) = redis_calls() {
        state.ledger.settle(calls);
    }
}

/// The cron event (server `hz` times a second): settles calls recorded since
/// the last look, so a reset is seen before the record grows large.
pub extern "C" fn on_cron(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    let mut state = state();
    if state.ledger.recent() > 0 {
        settle(&mut state);
    }
}

/// The `INFO` callback: section `rl_stats`, one line per command, e.g.
/// `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1`.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    // A crash report must not take the lock or call into the server.
    let tallies = match (for_crash_report, STATE.try_lock()) {
        (0, Ok(mut state)) => {
            settle(&mut state);
            state.ledger.tallies()
        }
        (_, Ok(state)) => state.ledger.tallies(),
        (_, Err(_)) => [Tally::default(); N],
    };
    // SAFETY: Redis calls this with a live info context; every string is NUL-terminated.
    unsafe {
        raw::RedisModule_InfoAddSection.expect("InfoAddSection")(ctx, c"stats".as_ptr());
        for ((_, _, name), t) in TABLE.iter().zip(tallies) {
            raw::RedisModule_InfoBeginDictField.expect("InfoBeginDictField")(ctx, name.as_ptr());
            for (field, value) in [
                (c"calls", t.calls),
                (c"admitted", t.admitted),
                (c"denied", t.denied),
                (c"errors", t.errors),
                (c"cost_admitted", t.cost_admitted),
                (c"cost_denied", t.cost_denied),
            ] {
                raw::RedisModule_InfoAddFieldULongLong.expect("InfoAddFieldULongLong")(
                    ctx,
                    field.as_ptr(),
                    value,
                );
            }
            raw::RedisModule_InfoEndDictField.expect("InfoEndDictField")(ctx);
        }
        // Waiting (`BLOCK`): the clients waiting now (a gauge), and the waits
        // that ended admitted or not (counters, cleared with commandstats).
        let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).fold(0u64, u64::wrapping_add);
        raw::RedisModule_InfoBeginDictField.expect("InfoBeginDictField")(ctx, c"waits".as_ptr());
        for (field, value) in [
            (c"waiting", crate::wait::waiting() as u64),
            (c"admitted", sum(|t| t.waits_admitted)),
            (c"timed_out", sum(|t| t.waits_timed_out)),
        ] {
            raw::RedisModule_InfoAddFieldULongLong.expect("InfoAddFieldULongLong")(
                ctx,
                field.as_ptr(),
                value,
            );
        }
        raw::RedisModule_InfoEndDictField.expect("InfoEndDictField")(ctx);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_calls_from_a_commandstats_value() {
        assert_eq!(
            super::calls_of(b"calls=42,usec=7,usec_per_call=0.17,rejected_calls=0"),
            42
        );
        assert_eq!(super::calls_of(b"usec=7"), 0);
    }
}
