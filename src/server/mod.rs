//! The module API's wall: the few safe types the rest of the module reaches
//! the server through, and the frame of the command handlers. Of the crate,
//! only this folder, [`crate::ffi`], [`crate::store`], [`crate::reply`], the
//! module entry (`lib.rs`: registration), its callbacks (`callbacks.rs`) and
//! `docs.rs` (`COMMAND DOCS`) name a raw pointer or call the module API.
//!
//! - [`Ctx`]: the context of the current command or callback, with what
//!   commands and waits need of it (the database, whether the call may block,
//!   blocking a client, timers, the keyspace events a wait listens to);
//! - [`Arg`]: a command argument (or a key name), read as bytes;
//! - [`Blocked`] and [`TimerId`]: a blocked client's handle and a timer's id,
//!   as the wait queue keeps them;
//! - [`handler`]: the frame every command handler runs in (raw arguments to
//!   safe ones, the panic guard, the count, the reply);
//! - [`WaysIn`]: the callbacks this layer hands the server for blocked
//!   clients, timers and keyspace events, installed at load from
//!   `crate::callbacks` (which lies above, and calls down into
//!   [`crate::wait`] and [`crate::observe`]).
//!
//! Everything here runs on the server's main thread.

pub mod handler;

use std::os::raw::{c_int, c_void};

use redis_module::raw;

use crate::ffi::{api, OwnedString};
pub use crate::ffi::{Arg, ServerInfo};
use crate::observe::{stats, Token};
use crate::units::Millis;

/// The context of the command or callback running now: valid while it runs.
#[derive(Clone, Copy)]
pub struct Ctx(*mut raw::RedisModuleCtx);

/// Contexts in which a call never waits (as `BLPOP` does not).
const NO_WAIT: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
    | raw::REDISMODULE_CTX_FLAGS_LUA
    | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
    | raw::REDISMODULE_CTX_FLAGS_REPLICATED
    | raw::REDISMODULE_CTX_FLAGS_SLAVE
    | raw::REDISMODULE_CTX_FLAGS_LOADING;

impl Ctx {
    /// The context the server passed to a command or callback.
    #[inline]
    pub(crate) fn from_raw(ptr: *mut raw::RedisModuleCtx) -> Ctx {
        Ctx(ptr)
    }

    /// The raw context, for the API layer's own calls.
    #[inline]
    pub(crate) fn ptr(self) -> *mut raw::RedisModuleCtx {
        self.0
    }

    /// The database the context has selected.
    #[inline]
    pub fn db(self) -> c_int {
        api!(RedisModule_GetSelectedDb(self.0))
    }

    /// Selects database `db` (a timer's context, before it opens a key).
    pub fn select_db(self, db: c_int) {
        api!(RedisModule_SelectDb(self.0, db));
    }

    fn flags(self) -> u32 {
        api!(RedisModule_GetContextFlags(self.0)) as u32
    }

    /// False inside `MULTI`, a script, a replicated or loaded command, on a
    /// replica, or where blocking is denied: there a call never waits.
    pub fn may_block(self) -> bool {
        self.flags() & NO_WAIT == 0
    }

    /// True if the server is above `maxmemory`.
    pub fn above_maxmemory(self) -> bool {
        self.flags() & raw::REDISMODULE_CTX_FLAGS_OOM != 0
    }

    /// Whether the calling user may run `argv` as the server's ACL checks it
    /// (its command, subcommand and keys); true when no user calls (the
    /// server's own call: AOF loading, replication).
    pub fn caller_may(self, argv: &[&[u8]]) -> bool {
        let name = api!(RedisModule_GetCurrentUserName(self.0));
        if name.is_null() {
            return true;
        }
        let user = api!(RedisModule_GetModuleUserFromUserName(name));
        api!(RedisModule_FreeString(self.0, name));
        if user.is_null() {
            return false;
        }
        let strings: Vec<OwnedString> = argv.iter().map(|a| self.string(a)).collect();
        let mut ptrs: Vec<*mut raw::RedisModuleString> = strings.iter().map(|s| s.ptr).collect();
        let status = api!(RedisModule_ACLCheckCommandPermissions(
            user,
            ptrs.as_mut_ptr(),
            ptrs.len() as c_int
        ));
        api!(RedisModule_FreeModuleUser(user));
        status == raw::REDISMODULE_OK as c_int
    }

    /// A string the module owns, freed on drop.
    pub fn string(self, bytes: &[u8]) -> OwnedString {
        OwnedString::new(self.0, bytes)
    }

    /// Blocks the calling client with no server timeout; its reply, timeout,
    /// disconnection and private data go through the [`WaysIn`] installed.
    pub fn block(self) -> Blocked {
        let ways = ways_in();
        let bc = api!(RedisModule_BlockClient(
            self.0,
            ways.on_reply,
            ways.on_timeout,
            ways.free_finished,
            0
        ));
        api!(RedisModule_SetDisconnectCallback(bc, ways.on_disconnect));
        Blocked(bc)
    }

    /// Arms a timer that fires in `delay`, calling the wait queue's timer with `data`.
    pub fn create_timer(self, delay: Millis, data: u64) -> TimerId {
        let period = delay.0.min(i64::MAX as u64) as raw::mstime_t;
        TimerId(api!(RedisModule_CreateTimer(
            self.0,
            period,
            ways_in().on_timer,
            data as usize as *mut c_void
        )))
    }

    /// Stops a timer that has not fired.
    pub fn stop_timer(self, id: TimerId) {
        api!(RedisModule_StopTimer(self.0, id.0, std::ptr::null_mut()));
    }

    /// Subscribes to the keyspace events that wake a key's waiters (once).
    pub fn subscribe_key_events(self) {
        thread_local! {
            static SUBSCRIBED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if SUBSCRIBED.with(|s| s.replace(true)) {
            return;
        }
        api!(RedisModule_SubscribeToKeyspaceEvents(
            self.0,
            (raw::REDISMODULE_NOTIFY_GENERIC
                | raw::REDISMODULE_NOTIFY_EXPIRED
                | raw::REDISMODULE_NOTIFY_EVICTED) as c_int,
            ways_in().on_keyspace
        ));
    }
}

/// What the server calls for a blocked client (its reply, timeout, private
/// data and disconnection), a timer and a keyspace event: the module's ways in
/// (`crate::callbacks`), which call into the layers above this one. They are
/// handed here once, at load, so that this layer never imports them.
#[derive(Clone, Copy)]
pub struct WaysIn {
    pub on_reply: raw::RedisModuleCmdFunc,
    pub on_timeout: raw::RedisModuleCmdFunc,
    pub free_finished: Option<unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut c_void)>,
    pub on_disconnect: raw::RedisModuleDisconnectFunc,
    pub on_timer: raw::RedisModuleTimerProc,
    pub on_keyspace: raw::RedisModuleNotificationFunc,
}

static WAYS_IN: std::sync::OnceLock<WaysIn> = std::sync::OnceLock::new();

/// Installs the ways in (at load, before any command can block a client, arm a
/// timer or subscribe to keyspace events). A second call changes nothing.
pub fn install(ways: WaysIn) {
    let _ = WAYS_IN.set(ways);
}

fn ways_in() -> &'static WaysIn {
    WAYS_IN.get().expect("the ways in are installed at load")
}

/// True while clients are paused for a failover (`CLIENT PAUSE`): writes
/// that would reach replicas wait.
pub fn avoid_replica_traffic() -> bool {
    api!(RedisModule_AvoidReplicaTraffic()) != 0
}

/// Arguments beyond this many are only ever errors; they are collected on the heap.
const STACK_ARGS: usize = 16;

/// Runs `f` on the arguments' bytes, collected on the stack when they are few.
#[inline]
pub fn with_bytes<T>(params: &[Arg], f: impl FnOnce(&[&[u8]]) -> T) -> T {
    if params.len() <= STACK_ARGS {
        let mut slices: [&[u8]; STACK_ARGS] = [&[]; STACK_ARGS];
        for (slot, &arg) in slices.iter_mut().zip(params) {
            *slot = arg.bytes();
        }
        f(&slices[..params.len()])
    } else {
        let slices: Vec<&[u8]> = params.iter().map(|&arg| arg.bytes()).collect();
        f(&slices)
    }
}

/// A blocked client's handle: released exactly once, by [`Blocked::unblock`]
/// or [`Blocked::release`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Blocked(*mut raw::RedisModuleBlockedClient);

impl Blocked {
    /// A handle the server passed to a callback.
    #[inline]
    pub(crate) fn from_raw(ptr: *mut raw::RedisModuleBlockedClient) -> Blocked {
        Blocked(ptr)
    }

    /// The handle as a number (the wait queue's index from client to queue).
    pub fn id(self) -> usize {
        self.0 as usize
    }

    /// Ends the wait: the server then calls the installed `on_reply`, which
    /// sends `finished`, and frees it after.
    pub fn unblock(self, finished: Box<Finished>) {
        let data = Box::into_raw(finished);
        api!(RedisModule_UnblockClient(self.0, data.cast()));
    }

    /// Releases the handle of a wait that ended with no reply to send (its
    /// client is gone, or was answered already).
    pub fn release(self) {
        api!(RedisModule_UnblockClient(self.0, std::ptr::null_mut()));
    }
}

/// A module timer's id.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TimerId(raw::RedisModuleTimerID);

/// A finished wait's reply, handed to the server with its handle.
pub struct Finished {
    pub label: &'static str,
    pub reply: Result<[i64; 5], String>,
    pub allowed: bool,
    pub cost: u64,
    pub token: Token,
    /// The named policy the call decided by (`RL.LIMIT … BLOCK`), if any.
    pub policy: Option<u32>,
}

impl Finished {
    /// Counts the wait in `INFO rl` (once: when its reply is sent, or when its
    /// client went away before it could be).
    pub fn count(&self) {
        if self.reply.is_ok() {
            let near = match &self.reply {
                Ok(r) => self.allowed && stats::near_limit(r[2] as u64, r[1] as u64),
                Err(_) => false,
            };
            stats::decision(self.allowed, self.cost, near);
        }
        stats::waited(self.token);
        if let Some(id) = self.policy {
            // A shadow policy never waits.
            stats::by_policy(id, false);
        }
        stats::call(self.label, self.reply.is_err());
    }
}
