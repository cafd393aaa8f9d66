//! `BLOCK ms`, and every call on a key that may have waiters. A request that
//! would be denied waits inside the server until it is admitted or `ms`
//! passes, then gets the ordinary reply.
//!
//! [`spend`] is the one step of every call that spends: decide each key's
//! claim, let the waiters already queued on a key come first, wait if asked
//! and allowed, else commit (all or nothing), wake the waiters a refund may
//! serve, and count the call. Per key (database and name) a FIFO queue of
//! waiters ([`queue`]) and one timer ([`timers`]); the fairness rules are
//! pure ([`policy`]); what the server reports goes through [`callbacks`] and
//! every wait ends through [`ending`]. Clients are blocked with no server
//! timeout (Redis 7.0 handles timeouts before module unblocks in the same
//! pass): deadlines are the module's own, kept by the same timer.
//!
//! Everything here runs on the server's main thread.

pub mod callbacks;
mod ending;
mod policy;
mod queue;
mod timers;

use redis_module::raw;

use crate::algorithm::{Decision, Outcome};
use crate::config;
use crate::decision::{Claim, ClaimWrite};
use crate::error::RlError;
use crate::ffi::{api, arg_bytes, context_flags, selected_db};
use crate::observe::{stats, waiting};
use crate::store::Key;
use crate::units::{delay_ms, Millis, Nanos};

use ending::{free_privdata, on_reply};
use policy::{behind, never, wait_ns};
use queue::{QueueId, Waiter};
use timers::schedule;

pub use timers::wake;

/// True if some client waits anywhere (one thread-local load).
pub fn active() -> bool {
    waiting() > 0
}

/// One key of a call: its name, its open key and what the call claims there.
pub struct Layer {
    pub name: *mut raw::RedisModuleString,
    pub key: Key,
    pub claim: Claim,
    step: Option<Outcome<ClaimWrite>>,
}

impl Layer {
    pub fn new(name: *mut raw::RedisModuleString, key: Key, claim: Claim) -> Layer {
        Layer {
            name,
            key,
            claim,
            step: None,
        }
    }

    /// The decision [`spend`] gave this layer.
    pub fn decision(&self) -> &Decision {
        &self.step.as_ref().expect("spent").decision
    }
}

/// How a call spends.
#[derive(Clone, Copy, Default)]
pub struct Spend {
    /// Decide only: write nothing.
    pub peek: bool,
    /// `BLOCK ms`: wait for admission where the call may (one key only).
    pub block: Option<Millis>,
}

/// What became of a call.
pub enum Spent {
    /// Decided: each layer's decision is its own (writes committed only if
    /// every layer admitted and the call does not peek).
    Decided,
    /// The client waits; its reply comes when the wait ends.
    Blocked,
}

/// Contexts in which a call never waits (as `BLPOP` does not).
const NO_WAIT: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
    | raw::REDISMODULE_CTX_FLAGS_LUA
    | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
    | raw::REDISMODULE_CTX_FLAGS_REPLICATED
    | raw::REDISMODULE_CTX_FLAGS_SLAVE
    | raw::REDISMODULE_CTX_FLAGS_LOADING;

/// The one step of every call that spends (see the module doc). Layers are
/// committed only if every one admits; when one denies, the layers that would
/// admit report their state as it is.
pub fn spend(
    ctx: *mut raw::RedisModuleCtx,
    layers: &mut [Layer],
    now: u64,
    how: Spend,
) -> Result<Spent, RlError> {
    for layer in layers.iter_mut() {
        layer.step = Some(layer.claim.decide(&layer.key, now)?);
    }
    if let ([layer], Some(block), false) = (&mut *layers, how.block, how.peek) {
        let queue = queue::find(selected_db(ctx), arg_bytes(layer.name));
        if may_wait(ctx, layer, queue, now)? {
            enqueue(ctx, layer, queue, now, block);
            return Ok(Spent::Blocked);
        }
    }
    if active() {
        for layer in layers.iter_mut() {
            let step = layer.step.as_mut().expect("decided");
            if let Some(d) = queued(
                ctx,
                layer.name,
                &layer.key,
                &layer.claim,
                &step.decision,
                now,
            )? {
                *step = Outcome {
                    decision: d,
                    write: None,
                };
            }
        }
    }
    let allowed = layers.iter().all(|l| l.decision().allowed);
    if allowed && !how.peek {
        for layer in layers.iter() {
            if let Some(write) = &layer.step.as_ref().expect("decided").write {
                layer.claim.commit(&layer.key, write);
                if layer.claim.refunds() && active() {
                    wake(ctx, layer.name);
                }
            }
        }
    } else if !allowed {
        // Nothing is spent: a layer that would admit reports its state as it is.
        for layer in layers.iter_mut() {
            if let (true, Some(unspent)) = (layer.decision().allowed, layer.claim.unspent()) {
                layer.step = Some(unspent.decide(&layer.key, now)?);
            }
        }
    }
    let cost = layers
        .iter()
        .map(|l| l.claim.cost())
        .fold(0, u64::saturating_add);
    stats::decision(allowed, cost);
    Ok(Spent::Decided)
}

/// True if a call with `BLOCK` may wait here rather than be decided at once.
fn may_wait(
    ctx: *mut raw::RedisModuleCtx,
    layer: &Layer,
    queue: Option<QueueId>,
    now: u64,
) -> Result<bool, RlError> {
    let decision = layer.decision();
    Ok(context_flags(ctx) & NO_WAIT == 0
        && layer.claim.spends(&layer.key, now)?
        && !never(decision)
        && (queue.is_some() || !decision.allowed)
        && waiting() < config::max_waiters()
        && queue.map_or(0, queue::len) < config::max_waiters_per_key()
        && api!(RedisModule_AvoidReplicaTraffic()) == 0)
}

/// If `claim` spends on a key that has waiters, the denial it gets behind them
/// (see [`behind`]), the head's wait decided at this instant. `None`: no queue
/// comes first.
fn queued(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &Key,
    claim: &Claim,
    own: &Decision,
    now: u64,
) -> Result<Option<Decision>, RlError> {
    let Some(qid) = queue::find(selected_db(ctx), arg_bytes(name)) else {
        return Ok(None);
    };
    if !claim.spends(key, now)? {
        return Ok(None);
    }
    let head_wait = queue::with(|s| {
        let head = s.queues.get(&qid).and_then(|q| q.waiters.front());
        head.map(|w| w.claim.decide(key, now).map(|step| step.decision))
    });
    let head_wait = match head_wait {
        Some(Ok(d)) if !d.allowed => wait_ns(d.retry_after),
        _ => 0,
    };
    Ok(Some(behind(own, head_wait)))
}

/// Blocks the client and queues it at the tail of its key's queue.
fn enqueue(
    ctx: *mut raw::RedisModuleCtx,
    layer: &Layer,
    queue: Option<QueueId>,
    now: u64,
    block: Millis,
) {
    let db = selected_db(ctx);
    let name = arg_bytes(layer.name);
    // The first waiter of a key looks again when it could be admitted.
    let head_wait = match queue {
        Some(_) => None,
        None => Some(wait_ns(layer.decision().retry_after)),
    };
    let claim = layer.claim.clone();
    let token = stats::blocked(claim.label());
    let bc = api!(RedisModule_BlockClient(
        ctx,
        Some(on_reply),
        Some(callbacks::on_timeout),
        Some(free_privdata),
        0
    ));
    api!(RedisModule_SetDisconnectCallback(
        bc,
        Some(callbacks::on_disconnect)
    ));
    let deadline = (block.0 > 0).then(|| Nanos(now).saturating_add(block.as_nanos()));
    callbacks::subscribe(ctx);
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
