//! One module timer per key with waiters, set to the moment its head can be
//! admitted or the earliest deadline in its queue. Admissions happen only in
//! that timer's callback, head first, each decided, written and replicated as
//! an ordinary admitted call at that instant through the key API (so effects,
//! keyspace events and signals are those of a non-blocking call). Wakeups
//! only move the timer to now.

use std::cell::Cell;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::ending::finish;
use super::policy::{settle, Gate};
use super::queue::{self, QueueId};
use crate::clock;
use crate::ffi::{api, arg_bytes, context_flags, selected_db, OwnedString};
use crate::observe::ServerInfo;
use crate::store::Key;
use crate::units::{delay_ms, Millis, Nanos};

thread_local! {
    /// Set while a timer admits waiters: keyspace events it causes are its own.
    static IN_WAKE: Cell<bool> = const { Cell::new(false) };
}

/// True while a timer is admitting waiters.
pub fn in_wake() -> bool {
    IN_WAKE.with(Cell::get)
}

fn now_ms() -> Millis {
    Nanos(clock::now_ns()).floor_ms()
}

/// Wakes the waiters of key `name` (in the context's database): their timer
/// fires now. (A timer admitting waiters does not wake itself.)
pub fn wake(ctx: *mut raw::RedisModuleCtx, name: *mut raw::RedisModuleString) {
    if in_wake() {
        return;
    }
    if let Some(qid) = queue::find(selected_db(ctx), arg_bytes(name)) {
        schedule(ctx, qid, Millis(0));
    }
}

/// (Re)arms queue `qid`'s timer to fire in `delay`, unless it already fires by then.
pub fn schedule(ctx: *mut raw::RedisModuleCtx, qid: QueueId, delay: Millis) {
    let at = Millis(now_ms().0.saturating_add(delay.0));
    queue::with(|s| {
        let Some(q) = s.queues.get_mut(&qid) else {
            return;
        };
        if let Some((id, when)) = q.timer {
            if when <= at {
                return;
            }
            api!(RedisModule_StopTimer(ctx, id, std::ptr::null_mut()));
        }
        let period = delay.0.min(i64::MAX as u64) as raw::mstime_t;
        let id = api!(RedisModule_CreateTimer(
            ctx,
            period,
            Some(on_timer),
            qid as usize as *mut c_void
        ));
        q.timer = Some((id, at));
    });
}

/// The timer of one key: admits waiters from the head while they are
/// admissible, ends the waits whose deadline has passed, and re-arms itself.
extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let qid = data as usize as QueueId;
    IN_WAKE.with(|w| w.set(true));
    let _ = catch_unwind(AssertUnwindSafe(|| run_queue(ctx, qid)));
    IN_WAKE.with(|w| w.set(false));
}

fn run_queue(ctx: *mut raw::RedisModuleCtx, qid: QueueId) {
    let Some((db, name)) = queue::with(|s| {
        let q = s.queues.get_mut(&qid)?;
        q.timer = None;
        Some((q.db, q.name.clone()))
    }) else {
        return;
    };
    let paused = api!(RedisModule_AvoidReplicaTraffic()) != 0;
    api!(RedisModule_SelectDb(ctx, db));
    let name = OwnedString::new(ctx, &name);
    let mut next: Option<u128> = None;
    if let Some(key) = Key::open(ctx, name.ptr) {
        // Read after the open: outside a command the server's clock is not
        // frozen, and the open may have expired the key as of its own reading.
        let now = clock::now_ns();
        let gate = Gate {
            paused,
            out_of_memory: out_of_memory(ctx),
        };
        let settled = queue::with(|s| {
            let q = s.queues.get_mut(&qid)?;
            let settled = settle(
                &mut q.waiters,
                now,
                gate,
                |w| w.deadline.map(|d| d.0),
                |w, commit| {
                    let step = w.claim.decide(&key, now)?;
                    if let (true, true, Some(write)) = (commit, step.decision.allowed, &step.write)
                    {
                        w.claim.commit(&key, write);
                    }
                    Ok(step.decision)
                },
            );
            for (w, _) in &settled.ended {
                s.by_client.remove(&(w.bc as usize));
            }
            Some(settled)
        });
        if let Some(settled) = settled {
            next = settled.next_ns;
            for (w, ending) in settled.ended {
                finish(&w, ending);
            }
        }
        drop(key);
    }
    drop(name);
    let empty = queue::with(|s| {
        let empty = s.queues.get(&qid).is_some_and(|q| q.waiters.is_empty());
        if empty {
            s.remove(qid);
        }
        empty
    });
    if !empty {
        let delay = match (paused, next) {
            // Clients are paused (a failover, `CLIENT PAUSE`): look again soon.
            (true, n) => n.map_or(Millis(100), |n| delay_ms(n).min(Millis(100))),
            (false, Some(n)) => delay_ms(n),
            (false, None) => return,
        };
        schedule(ctx, qid, delay);
    }
}

/// True if an admission now would be refused as a `deny-oom` command is: the
/// server is above `maxmemory` and its policy evicts nothing. (Under an
/// eviction policy the next command's eviction makes room, as for any write.)
fn out_of_memory(ctx: *mut raw::RedisModuleCtx) -> bool {
    context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_OOM != 0 && policy_is_noeviction()
}

/// `maxmemory-policy` is `noeviction` (read from `INFO memory`, only when the
/// server is above `maxmemory`).
fn policy_is_noeviction() -> bool {
    ServerInfo::read(c"memory")
        .and_then(|info| info.field(c"maxmemory_policy").map(|p| p == b"noeviction"))
        .unwrap_or(true)
}
