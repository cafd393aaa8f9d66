//! What the server tells the wait queue (through
//! [`crate::server::callbacks`]): a blocked client's timeout
//! (`CLIENT UNBLOCK`) or disconnection, keyspace events on keys with waiters,
//! flushes and `SWAPDB`. Each ends or wakes waits.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::policy::behind;
use super::queue::{self, Taken};
use super::timers::{in_wake, schedule, wake};
use crate::clock;
use crate::error::RlError;
use crate::observe::{stats, waiting};
use crate::server::{Blocked, Ctx, Finished};
use crate::store::Key;
use crate::units::Millis;

/// `CLIENT UNBLOCK id` on waiter `bc`: its wait ends with the denial the
/// request gets at this instant; nothing is spent. `None` if `bc` no longer
/// waits. The caller sends the reply, then releases the handle.
pub fn timed_out(ctx: Ctx, bc: Blocked) -> Option<Finished> {
    let Taken {
        waiter: w,
        qid,
        was_head,
        name,
    } = queue::take(ctx, bc)?;
    let label = w.claim.label();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let name = ctx.string(&name);
        let now = clock::now_ns();
        Key::open(ctx, name.arg()).map(|key| {
            w.claim
                .decide(&key, now)
                .map(|o| match was_head && !o.decision.allowed {
                    true => o.decision,
                    false => behind(&o.decision, 0),
                })
        })
    }))
    .ok()
    .flatten()
    .unwrap_or_else(|| Err(RlError::Internal(label)));
    if was_head {
        schedule(ctx, qid, Millis(0));
    }
    Some(Finished {
        label,
        allowed: false,
        cost: w.claim.cost(),
        token: w.token,
        policy: w.claim.policy_id(),
        reply: result.map(|d| d.reply()).map_err(|e| e.to_string()),
    })
}

/// Waiter `bc`'s client went away: it loses its place and spends nothing.
/// False if it no longer waited (the module had ended its wait).
pub fn left(ctx: Ctx, bc: Blocked) -> bool {
    let Some(taken) = queue::take(ctx, bc) else {
        return false;
    };
    bc.release();
    stats::abandoned(taken.waiter.claim.label(), taken.waiter.token);
    if taken.was_head {
        schedule(ctx, taken.qid, Millis(0));
    }
    true
}

/// A generic keyspace event, an expiry or an eviction of key `name`: its
/// queue, if any, is looked at now (unless a timer admitting waiters caused it).
pub fn key_event(ctx: Ctx, name: &[u8]) {
    if waiting() > 0 && !in_wake() {
        wake(ctx, name);
    }
}

/// Wakes every queue whose database `touched` says was replaced wholesale
/// (a flush, `SWAPDB`): each is decided again on its key's new state, at once.
pub fn wake_databases(ctx: Ctx, touched: impl Fn(c_int) -> bool) {
    if waiting() == 0 {
        return;
    }
    let queues: Vec<queue::QueueId> = queue::with(|s| {
        let hit = s.queues.iter().filter(|(_, q)| touched(q.db));
        hit.map(|(&qid, _)| qid).collect()
    });
    for qid in queues {
        schedule(ctx, qid, Millis(0));
    }
}
