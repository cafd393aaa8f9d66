//! `BLOCK ms`, and every call on a key that may have waiters. A request that
//! would be denied waits inside the server until it is admitted or `ms`
//! passes, then gets the ordinary reply.
//!
//! The decide-and-commit step ([`crate::spend`]) asks here whether a call
//! waits ([`wait_if_due`]) and what a key's queue leaves it
//! ([`behind_queue`]). Per key (database and name) a FIFO queue of waiters
//! ([`queue`]) and one timer ([`timers`]); the fairness rules are pure
//! ([`policy`]); what the server reports ([`crate::server::callbacks`]) comes
//! in through [`ends`] and [`timers`], and every wait ends through
//! [`ending`]. Clients are blocked with no server timeout (Redis 7.0 handles
//! timeouts before module unblocks in the same pass): deadlines are the
//! module's own, kept by the same timer. Everything here takes the safe
//! types of [`crate::server`].
//!
//! Everything here runs on the server's main thread.

mod ending;
mod ends;
mod policy;
mod policy_change;
mod queue;
mod timers;

use crate::algorithm::Decision;
use crate::config;
use crate::decision::Claim;
use crate::error::RlError;
use crate::observe::{stats, waiting};
use crate::server::avoid_replica_traffic;
use crate::store::Key;
use crate::units::{delay_ms, Millis, Nanos};

use policy::{behind, never, wait_ns};
use queue::{QueueId, Waiter};
use timers::schedule;

pub use ending::end_all;
pub use ends::{key_event, left, timed_out, wake_databases};
pub use policy_change::policies_changed;
pub use timers::{on_timer, wake};

/// True if some client waits anywhere (one thread-local load).
#[inline]
pub fn active() -> bool {
    waiting() > 0
}

/// Wakes the waiters of `key` (a refund or a release may serve them).
pub fn wake_key(key: &Key) {
    wake(key.ctx(), key.name().bytes());
}

/// If a call with `BLOCK` may wait here rather than be decided at once,
/// blocks its client, queues it at the tail of its key's queue and returns
/// true.
pub fn wait_if_due(
    key: &Key,
    claim: &Claim,
    decision: &Decision,
    now: u64,
    block: Millis,
) -> Result<bool, RlError> {
    let queue = queue::find(key.ctx().db(), key.name().bytes());
    if !may_wait(key, claim, decision, queue, now)? {
        return Ok(false);
    }
    enqueue(key, claim, decision, queue, now, block);
    Ok(true)
}

fn may_wait(
    key: &Key,
    claim: &Claim,
    decision: &Decision,
    queue: Option<QueueId>,
    now: u64,
) -> Result<bool, RlError> {
    Ok(key.ctx().may_block()
        && claim.spends(key, now)?
        && !never(decision)
        && (queue.is_some() || !decision.allowed)
        && waiting() < config::max_waiters()
        && queue.map_or(0, queue::len) < config::max_waiters_per_key()
        && !avoid_replica_traffic())
}

/// If `claim` spends on a key that has waiters, the denial it gets behind them
/// (see [`behind`]), the head's wait decided at this instant. `None`: no queue
/// comes first.
pub fn behind_queue(
    key: &Key,
    claim: &Claim,
    own: &Decision,
    now: u64,
) -> Result<Option<Decision>, RlError> {
    let Some(qid) = queue::find(key.ctx().db(), key.name().bytes()) else {
        return Ok(None);
    };
    if !claim.spends(key, now)? {
        return Ok(None);
    }
    let head_wait = queue::with(|s| {
        let head = s.queues.get(&qid).and_then(|q| q.waiters.front());
        head.map(|w| w.claim.decide(key, now).map(|o| o.decision))
    });
    let head_wait = match head_wait {
        Some(Ok(d)) if !d.allowed => wait_ns(d.retry_after),
        _ => 0,
    };
    Ok(Some(behind(own, head_wait)))
}

/// Blocks the client and queues it at the tail of its key's queue.
fn enqueue(
    key: &Key,
    claim: &Claim,
    decision: &Decision,
    queue: Option<QueueId>,
    now: u64,
    block: Millis,
) {
    let ctx = key.ctx();
    let db = ctx.db();
    let name = key.name().bytes();
    // The first waiter of a key looks again when it could be admitted.
    let head_wait = match queue {
        Some(_) => None,
        None => Some(wait_ns(decision.retry_after)),
    };
    let claim = claim.clone();
    let token = stats::blocked(claim.label());
    let bc = ctx.block();
    let deadline = (block.0 > 0).then(|| Nanos(now).saturating_add(block.as_nanos()));
    ctx.subscribe_key_events();
    let qid = queue::with(|s| {
        s.push(
            db,
            name,
            Waiter {
                bc,
                claim,
                deadline,
                token,
            },
        )
    });
    let mut delay_ns = deadline.map_or(u128::MAX, |d| d.since(Nanos(now)).0 as u128);
    if let Some(head) = head_wait {
        delay_ns = delay_ns.min(head);
    }
    if delay_ns != u128::MAX {
        schedule(ctx, qid, delay_ms(delay_ns));
    }
}
