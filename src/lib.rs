//! `rl`: native rate limiting commands for Redis and Valkey.
//!
//! This file only loads the module: it registers the command table
//! (`commands::TABLE`), the server events the wait queue and `INFO rl`
//! follow, and the settings (`config.rs`). Modules depend downwards only:
//! `commands` → `spend` → `wait` → `decision` → `store`/`algorithm`, with
//! `server`, `grammar`, `observe`, `reply`, `ffi`, `bounds`, `config` and
//! `units` beneath them, `ffi` lowest; the server's ways in (this file,
//! `callbacks`, and `server::handler`, the frame of every command) call down,
//! and `server` reaches the callbacks it hands the server only through what
//! this file installs (`server::install`). Only the API layer (`server`,
//! `store`, `reply`, `ffi`, this file, `callbacks` and `docs`) touches the
//! module API.
// Under `cfg(test)` the module entry point is compiled out, leaving the Redis glue unused.
#![cfg_attr(test, allow(dead_code))]
// `RlError` has drop glue (some variants hold text): an eager
// `.ok_or(RlError::…)` builds and drops an error on every success, which
// `make bench-profile` counted at about 130 instructions per RL.GCRA call. Errors
// are built lazily, `.ok_or_else(|| RlError::…)`, whatever the variant.
#![allow(clippy::unnecessary_lazy_evaluations)]

mod algorithm;
mod bounds;
mod callbacks;
mod clock;
mod codec;
mod commands;
mod config;
mod decimal;
mod decision;
mod docs;
mod error;
// Generated from facts/rl.toml by scripts/generate-facts.py, which --check compares
// byte for byte: rustfmt leaves it as generated.
#[rustfmt::skip]
mod facts;
mod ffi;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod fuzz_debit;
mod grammar;
mod kinds;
#[cfg(test)]
mod library_tests;
mod observe;
mod policy;
mod reply;
mod server;
mod spend;
mod store;
mod units;
mod wait;

use std::os::raw::c_int;

use redis_module::{raw, Context, RedisString, RedisValue, Status};

use ffi::api;

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(problem) = config::check_module_args(&args) {
        ctx.log_warning(&format!("rl: {problem}; the module is not loaded"));
        return Status::Err;
    }
    let warnings = config::fix_policy_file().and_then(|_| policy::load_at_start());
    match warnings {
        Ok(warnings) => warnings
            .iter()
            .for_each(|w| ctx.log_warning(&format!("rl: {w}"))),
        Err(problem) => {
            ctx.log_warning(&format!("rl: {problem}; the module is not loaded"));
            return Status::Err;
        }
    }
    server::install(callbacks::WAYS_IN);
    store::init_effects();
    commands::enable_optional(gcra_wanted(ctx));
    #[cfg(feature = "debug-commands")]
    ctx.log_warning("rl: built with debug-commands: RL.DEBUG is registered (test builds only)");
    for command in commands::registered() {
        let (first, last, step) = command.key_range();
        let status = api!(RedisModule_CreateCommand(
            ctx.ctx,
            command.name.as_ptr(),
            Some(command.handler),
            command.flags.as_ptr(),
            first,
            last,
            step,
        ));
        if status != raw::REDISMODULE_OK as c_int {
            ctx.log_warning(&format!("rl: could not register {:?}", command.name));
            return Status::Err;
        }
    }
    if !register_policy_commands(ctx) {
        ctx.log_warning("rl: could not register RL.POLICY");
        return Status::Err;
    }
    observe::stats::register(commands::counted());
    // Keys are signalled modified only when written (`store::Key`), not
    // whenever one opened for writing is closed. The call sets every option.
    api!(RedisModule_SetModuleOptions(
        ctx.ctx,
        raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
    ));
    api!(RedisModule_RegisterInfoFunc(
        ctx.ctx,
        Some(callbacks::on_info)
    ));
    // The cron settles `INFO rl`'s counters; a master that becomes a replica
    // ends every wait (BLOCK); flushes, SWAPDB and shutdown end or wake waits.
    let events: [(u64, raw::RedisModuleEventCallback); 5] = [
        (raw::REDISMODULE_EVENT_CRON_LOOP, Some(callbacks::on_cron)),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            Some(callbacks::on_role_change),
        ),
        (raw::REDISMODULE_EVENT_FLUSHDB, Some(callbacks::on_flush)),
        (raw::REDISMODULE_EVENT_SWAPDB, Some(callbacks::on_swapdb)),
        (
            raw::REDISMODULE_EVENT_SHUTDOWN,
            Some(callbacks::on_shutdown),
        ),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        api!(RedisModule_SubscribeToServerEvent(ctx.ctx, event, callback));
    }
    for command in commands::registered() {
        if let Some(doc) = command.doc {
            docs::declare(
                ctx.ctx,
                command.name,
                command.acl(),
                command.key_spec(),
                &doc(),
            );
        }
    }
    Status::Ok
}

/// Registers `RL.POLICY` and its subcommands, each with its own flags (and
/// so ACL categories): `commands::policy`.
fn register_policy_commands(ctx: &Context) -> bool {
    use commands::policy::{CONTAINER, SUBCOMMANDS};
    let ok = raw::REDISMODULE_OK as c_int;
    let status = api!(RedisModule_CreateCommand(
        ctx.ctx,
        CONTAINER.as_ptr(),
        None,
        c"".as_ptr(),
        0,
        0,
        0,
    ));
    let parent = api!(RedisModule_GetCommand(ctx.ctx, CONTAINER.as_ptr()));
    if status != ok || parent.is_null() {
        return false;
    }
    let mut categorized = true;
    for sub in &SUBCOMMANDS {
        let created = api!(RedisModule_CreateSubcommand(
            parent,
            sub.name.as_ptr(),
            Some(sub.handler),
            sub.flags.as_ptr(),
            0,
            0,
            0,
        ));
        if created != ok {
            return false;
        }
        let mut full = CONTAINER.to_bytes().to_vec();
        full.push(b'|');
        full.extend_from_slice(sub.name.to_bytes());
        let full = std::ffi::CString::new(full).expect("no NUL");
        let command = api!(RedisModule_GetCommand(ctx.ctx, full.as_ptr()));
        // SAFETY: the OnLoad context; `command` was just created.
        categorized &= match unsafe { raw::RedisModule_SetCommandACLCategories } {
            Some(set) if !command.is_null() => unsafe { set(command, sub.acl.as_ptr()) == ok },
            _ => false,
        };
    }
    commands::policy::CATEGORIZED.store(categorized, std::sync::atomic::Ordering::Relaxed);
    true
}

/// Whether to register `GCRA`: the `gcra-command` setting is `yes` and the
/// server has no command of that name (Redis's own, another module's, or one
/// renamed to it), as `COMMAND INFO gcra` tells before the module registers
/// anything. Logged either way, so the server log says which `GCRA` runs.
fn gcra_wanted(ctx: &Context) -> bool {
    if !config::gcra_command() {
        ctx.log_notice("rl: GCRA not registered: gcra-command is no");
        return false;
    }
    let taken = match ctx.call("COMMAND", &["INFO", "gcra"]) {
        Ok(RedisValue::Array(found)) => !matches!(found.as_slice(), [RedisValue::Null]),
        // Unknown: registering would fail on a taken name and refuse the load.
        _ => true,
    };
    ctx.log_notice(if taken {
        "rl: GCRA not registered: the server already has a GCRA command"
    } else {
        "rl: GCRA registered (Redis's GCRA command on RL.GCRA's state)"
    });
    !taken
}

/// `MODULE UNLOAD rl` is always refused: a transaction can hold queued calls to
/// the module's commands, and Redis 7.0 and Valkey crash running them after an
/// unload. Upgrade by restart or replica failover (docs/operations.md, "Upgrading").
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
                config::DEFAULT_SLIDING_LOG_MAX as i64,
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
            [
                "max-policies",
                &config::MAX_POLICIES,
                config::DEFAULT_MAX_POLICIES,
                config::MAX_POLICIES_RANGE.0,
                config::MAX_POLICIES_RANGE.1,
                redis_module::configuration::ConfigurationFlags::DEFAULT,
                None
            ],
            [
                "top-keys",
                &config::TOP_KEYS,
                config::DEFAULT_TOP_KEYS,
                config::TOP_KEYS_RANGE.0,
                config::TOP_KEYS_RANGE.1,
                redis_module::configuration::ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        string: [
            [
                "policy-file",
                &config::POLICY_FILE,
                "",
                redis_module::configuration::ConfigurationFlags::IMMUTABLE,
                None
            ],
        ],
        bool: [
            [
                "gcra-command",
                &config::GCRA_COMMAND,
                config::DEFAULT_GCRA_COMMAND,
                redis_module::configuration::ConfigurationFlags::IMMUTABLE,
                None
            ],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
