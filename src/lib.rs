//! `rl`: native rate limiting commands for Redis and Valkey.
//! This file only registers the module: command names, flags and key positions.
// Under `cfg(test)` the module entry point is compiled out, leaving the Redis glue unused.
#![cfg_attr(test, allow(dead_code))]

mod algorithm;
mod all;
mod args;
mod clock;
mod codec;
mod command;
mod config;
#[cfg(feature = "debug-commands")]
mod debug;
mod decision;
mod docs;
mod error;
#[cfg(test)]
mod fuzz;
mod lease;
mod ledger;
mod peek;
mod server_info;
mod stats;
mod store;
mod throttle;
mod wait;

use std::os::raw::c_int;

use redis_module::{raw, Context, RedisString, Status};

use args::Kind;

/// Declares one `extern "C"` handler per decision command.
macro_rules! handlers {
    ($($handler:ident => $kind:expr),* $(,)?) => {$(
        extern "C" fn $handler(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            command::dispatch(ctx, argv, argc, $kind)
        }
    )*};
}

handlers! {
    gcra => Kind::Gcra,
    token_bucket => Kind::TokenBucket,
    leaky => Kind::Leaky,
    sliding => Kind::Sliding,
    sliding_log => Kind::SlidingLog,
    fixed => Kind::Fixed,
}

type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Where a command's keys are: first, last, step (as `RedisModule_CreateCommand` takes them).
type KeySpec = (c_int, c_int, c_int);
/// One key, at position 1.
const KEY_1: KeySpec = (1, 1, 1);
/// Keys found by asking the handler (`getkeys-api`).
const ASKED: KeySpec = (0, 0, 0);
/// The flags of a write command that runs in O(1).
const WRITE_FAST: &std::ffi::CStr = c"write deny-oom fast";

/// The registration table: name (lowercase, like Redis's own commands, so
/// `COMMAND` and `INFO commandstats` list `rl.gcra`), handler, flags, keys.
const COMMANDS: [(&std::ffi::CStr, Handler, &std::ffi::CStr, KeySpec); 11] = [
    (c"rl.gcra", gcra, WRITE_FAST, KEY_1),
    (c"rl.tokenbucket", token_bucket, WRITE_FAST, KEY_1),
    (c"rl.leaky", leaky, WRITE_FAST, KEY_1),
    (c"rl.sliding", sliding, WRITE_FAST, KEY_1),
    // Registered without `fast` as the contract has it (a call is O(log n), but a
    // write may also remove up to 64 lapsed entries, and REFUND amortises).
    (c"rl.slidinglog", sliding_log, c"write deny-oom", KEY_1),
    (c"rl.fixed", fixed, WRITE_FAST, KEY_1),
    // redis-cell's command, its replies and its stored state (src/throttle.rs).
    (c"cl.throttle", throttle::command, WRITE_FAST, KEY_1),
    // In-flight limits: O(lapsed leases) per call, memory capped like the sliding log.
    (c"rl.acquire", lease::acquire, WRITE_FAST, KEY_1),
    (c"rl.release", lease::release_command, c"write fast", KEY_1),
    // RL.PEEK <ALGO> key ...: read-only, its key at position 2.
    (c"rl.peek", peek::command, c"readonly fast", (2, 2, 1)),
    // RL.ALL's keys move with numkeys: Redis asks the handler for their positions.
    (
        c"rl.all",
        all::command,
        c"write deny-oom getkeys-api",
        ASKED,
    ),
];

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(problem) = config::check_module_args(&args) {
        ctx.log_warning(&format!("rl: {problem}; the module is not loaded"));
        return Status::Err;
    }
    store::init_effects();
    for (name, handler, flags, (first, last, step)) in COMMANDS {
        // SAFETY: called from RedisModule_OnLoad with a live context.
        let status = unsafe {
            raw::RedisModule_CreateCommand.expect("CreateCommand")(
                ctx.ctx,
                name.as_ptr(),
                Some(handler),
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            ctx.log_warning(&format!("rl: could not register {name:?}"));
            return Status::Err;
        }
    }
    // SAFETY: as above; the callbacks live as long as the module, which is never unloaded.
    unsafe {
        // Keys are signalled modified only when written (`store::Key`), not
        // whenever one opened for writing is closed. The call sets every option.
        raw::RedisModule_SetModuleOptions.expect("SetModuleOptions")(
            ctx.ctx,
            raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
        );
        raw::RedisModule_RegisterInfoFunc.expect("RegisterInfoFunc")(ctx.ctx, Some(stats::info));
        let cron = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_CRON_LOOP,
            dataver: 1,
        };
        raw::RedisModule_SubscribeToServerEvent.expect("SubscribeToServerEvent")(
            ctx.ctx,
            cron,
            Some(stats::on_cron),
        );
        // A master that becomes a replica ends every wait (BLOCK).
        let role = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            dataver: 1,
        };
        raw::RedisModule_SubscribeToServerEvent.expect("SubscribeToServerEvent")(
            ctx.ctx,
            role,
            Some(wait::on_role_change),
        );
        // Flushes, SWAPDB and shutdown end or wake waits too.
        let waits: [(u64, raw::RedisModuleEventCallback); 3] = [
            (raw::REDISMODULE_EVENT_FLUSHDB, Some(wait::on_flush)),
            (raw::REDISMODULE_EVENT_SWAPDB, Some(wait::on_swapdb)),
            (raw::REDISMODULE_EVENT_SHUTDOWN, Some(wait::on_shutdown)),
        ];
        for (id, callback) in waits {
            let event = raw::RedisModuleEvent { id, dataver: 1 };
            raw::RedisModule_SubscribeToServerEvent.expect("SubscribeToServerEvent")(
                ctx.ctx, event, callback,
            );
        }
    }
    for doc in docs::all_docs() {
        docs::declare(ctx.ctx, &doc);
    }
    #[cfg(feature = "debug-commands")]
    {
        ctx.log_warning("rl: built with debug-commands: RL.DEBUG is registered (test builds only)");
        // SAFETY: as above.
        unsafe {
            raw::RedisModule_CreateCommand.expect("CreateCommand")(
                ctx.ctx,
                c"rl.debug".as_ptr(),
                Some(debug::command),
                c"".as_ptr(),
                0,
                0,
                0,
            )
        };
    }
    Status::Ok
}

/// `MODULE UNLOAD rl` is always refused: a transaction can hold queued calls to
/// the module's commands, and Redis 7.0 and Valkey crash running them after an
/// unload. Upgrade by restart or replica failover (README, "Upgrading").
fn deinit(ctx: &Context) -> Status {
    ctx.log_warning(
        "rl: MODULE UNLOAD refused: the rl module cannot be unloaded safely; \
         upgrade it by restarting the server or failing over to an upgraded replica",
    );
    Status::Err
}

// Unit tests run without Redis: they keep the system allocator.
#[cfg(not(test))]
redis_module::redis_module! {
    name: "rl",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    deinit: deinit,
    configurations: [
        i64: [
            [
                "sliding-log-max-limit",
                &config::SLIDING_LOG_MAX_LIMIT,
                args::DEFAULT_SLIDING_LOG_MAX as i64,
                config::SLIDING_LOG_MAX_RANGE.0,
                config::SLIDING_LOG_MAX_RANGE.1,
                redis_module::configuration::ConfigurationFlags::DEFAULT,
                None
            ],
            [
                "max-waiters",
                &config::MAX_WAITERS,
                config::DEFAULT_MAX_WAITERS,
                config::MAX_WAITERS_RANGE.0,
                config::MAX_WAITERS_RANGE.1,
                redis_module::configuration::ConfigurationFlags::DEFAULT,
                None
            ],
            [
                "max-waiters-per-key",
                &config::MAX_WAITERS_PER_KEY,
                config::DEFAULT_MAX_WAITERS_PER_KEY,
                config::MAX_WAITERS_PER_KEY_RANGE.0,
                config::MAX_WAITERS_PER_KEY_RANGE.1,
                redis_module::configuration::ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        // The macro needs every kind listed, even when empty.
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
