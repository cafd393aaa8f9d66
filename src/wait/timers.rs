//! One module timer per key with waiters, set to the moment its head can be
//! admitted or the earliest deadline in its queue. Admissions happen only in
//! that timer's callback, head first, each decided, written and replicated as
//! an ordinary admitted call at that instant through the key API (so effects,
//! keyspace events and signals are those of a non-blocking call). Wakeups
//! only move the timer to now.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::ending::finish;
use super::policy::{settle, Gate};
use super::queue::{self, QueueId};
use crate::clock;
use crate::server::{avoid_replica_traffic, Ctx, ServerInfo};
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
pub fn wake(ctx: Ctx, name: &[u8]) {
    if in_wake() {
        return;
    }
    if let Some(qid) = queue::find(ctx.db(), name) {
        schedule(ctx, qid, Millis(0));
    }
}

/// (Re)arms queue `qid`'s timer to fire in `delay`, unless it already fires by then.
pub fn schedule(ctx: Ctx, qid: QueueId, delay: Millis) {
    let at = Millis(now_ms().0.saturating_add(delay.0));
    queue::with(|s| {
        let Some(q) = s.queues.get_mut(&qid) else {
            return;
        };
        if let Some((id, when)) = q.timer {
            if when <= at {
                return;
            }
            ctx.stop_timer(id);
        }
        q.timer = Some((ctx.create_timer(delay, qid), at));
    });
}

/// The timer of one key: admits waiters from the head while they are
/// admissible, ends the waits whose deadline has passed, and re-arms itself.
pub fn on_timer(ctx: Ctx, qid: QueueId) {
    IN_WAKE.with(|w| w.set(true));
    let _ = catch_unwind(AssertUnwindSafe(|| run_queue(ctx, qid)));
    IN_WAKE.with(|w| w.set(false));
}

fn run_queue(ctx: Ctx, qid: QueueId) {
    let Some((db, name)) = queue::with(|s| {
        let q = s.queues.get_mut(&qid)?;
        q.timer = None;
        Some((q.db, q.name.clone()))
    }) else {
        return;
    };
    let paused = avoid_replica_traffic();
    ctx.select_db(db);
    let name = ctx.string(&name);
    let mut next: Option<u128> = None;
    if let Some(key) = Key::open(ctx, name.arg()) {
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
                    let outcome = w.claim.decide(&key, now)?;
                    if let (true, true, Some(write)) =
                        (commit, outcome.decision.allowed, &outcome.write)
                    {
                        w.claim.commit(&key, write);
                    }
                    Ok(outcome.decision)
                },
            );
            for (w, _) in &settled.ended {
                s.by_client.remove(&w.bc.id());
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
fn out_of_memory(ctx: Ctx) -> bool {
    ctx.above_maxmemory() && policy_is_noeviction()
}

/// `maxmemory-policy` is `noeviction` (read from `INFO memory`, only when the
/// server is above `maxmemory`).
fn policy_is_noeviction() -> bool {
    ServerInfo::read(c"memory")
        .and_then(|info| info.field(c"maxmemory_policy").map(|p| p == b"noeviction"))
        .unwrap_or(true)
}
