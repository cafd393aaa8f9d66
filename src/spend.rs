//! The decide-and-commit step of every call that spends (`RL.GCRA` without
//! `BLOCK` passes through it as much as `RL.ALL` or a wait does): decide each
//! key's claim, let the waiters already queued on a key come first, wait if
//! asked and allowed, else commit (all or nothing), wake the waiters a refund
//! may serve, and count the call. Deciding and committing are the claim's
//! ([`crate::decision`]); waiting is the wait queue's ([`crate::wait`]).

use crate::algorithm::{Decision, Outcome, Wait};
use crate::decision::{Claim, ClaimWrite};
use crate::error::RlError;
use crate::observe::stats;
use crate::store::Key;
use crate::units::Millis;
use crate::wait;

/// One key of a call: its open key (which knows its name and context) and
/// what the call claims there. (Laid out in this order: the key and the
/// claim, copied in whole when a layer is made, at their natural places.)
#[repr(C)]
pub struct Layer {
    outcome: Option<Outcome<ClaimWrite>>,
    pub claim: Claim,
    pub key: Key,
    /// The named policy of an `RL.ALL` `POLICY` clause (its id): its
    /// denials count in the policy's `RL.TOP`, not the command's.
    pub policy: Option<u32>,
    /// A `SHADOW` policy's layer: its denial denies nothing (it writes
    /// nothing, as any denial, while the call's other layers commit).
    pub shadow: bool,
}

impl Layer {
    pub fn new(key: Key, claim: Claim) -> Layer {
        Layer {
            key,
            claim,
            shadow: false,
            policy: None,
            outcome: None,
        }
    }

    /// Whether this layer lets the call through: it admits, or it is a shadow.
    pub fn passes(&self) -> bool {
        self.shadow || self.decision().allowed
    }

    /// The decision [`spend`] gave this layer.
    pub fn decision(&self) -> &Decision {
        &self.outcome.as_ref().expect("spent").decision
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

/// The one step of every call that spends (see the module doc). Layers are
/// committed only if every one admits; when one denies, the layers that would
/// admit report their state as it is.
pub fn spend(layers: &mut [Layer], now: u64, how: Spend) -> Result<Spent, RlError> {
    for layer in layers.iter_mut() {
        layer.outcome = Some(layer.claim.decide(&layer.key, now)?);
    }
    if let ([layer], Some(block), false) = (&mut *layers, how.block, how.peek) {
        if may_wait_out(layer, now, block)?
            && wait::wait_if_due(&layer.key, &layer.claim, layer.decision(), now, block)?
        {
            return Ok(Spent::Blocked);
        }
    }
    if wait::active() {
        for layer in layers.iter_mut() {
            let outcome = layer.outcome.as_mut().expect("decided");
            if let Some(d) = wait::behind_queue(&layer.key, &layer.claim, &outcome.decision, now)? {
                *outcome = Outcome {
                    decision: d,
                    write: None,
                };
            }
        }
    }
    // One pass: whether the call is allowed, whether a layer denied (a shadow
    // one's denial admits), whether one is left near its limit (`near_limit`).
    let (allowed, some_denied, near) = match &*layers {
        [layer] => {
            let d = layer.decision();
            let near = stats::near_limit(d.remaining, d.limit);
            (layer.shadow || d.allowed, !d.allowed, near)
        }
        _ => {
            let (mut allowed, mut some_denied, mut near) = (true, false, false);
            for layer in layers.iter() {
                let d = layer.decision();
                allowed &= layer.shadow || d.allowed;
                some_denied |= !d.allowed;
                near |= stats::near_limit(d.remaining, d.limit);
            }
            (allowed, some_denied, near)
        }
    };
    if some_denied {
        // Only denials pay for `RL.TOP`.
        for layer in layers.iter().filter(|l| !l.decision().allowed) {
            stats::denied(layer.key.name().bytes(), layer.policy);
        }
    }
    if !how.peek {
        // All pass: every write. Else only the denying layers' (a denial
        // writes only the penalty it starts): nothing is spent.
        for layer in layers.iter().filter(|l| allowed || !l.decision().allowed) {
            if let Some(write) = &layer.outcome.as_ref().expect("decided").write {
                layer.claim.commit(&layer.key, write);
                if Claim::starts_penalty(write) {
                    stats::penalty_started();
                }
                if layer.claim.refunds() && wait::active() {
                    wait::wake_key(&layer.key);
                }
            }
        }
    }
    if !allowed {
        // Nothing is spent: a layer that would admit reports its state as it is.
        for layer in layers.iter_mut() {
            if let (true, Some(unspent)) = (layer.decision().allowed, layer.claim.unspent()) {
                layer.outcome = Some(unspent.decide(&layer.key, now)?);
            }
        }
    }
    let cost = layers
        .iter()
        .map(|l| l.claim.cost())
        .fold(0, u64::saturating_add);
    stats::decision(allowed, cost, allowed && near);
    Ok(Spent::Decided)
}

/// False if a `BLOCK` call is denied at once: it starts a penalty, or its key
/// is penalized beyond the call's time (a penalty is waited out only if it
/// ends within `BLOCK`).
fn may_wait_out(layer: &Layer, now: u64, block: Millis) -> Result<bool, RlError> {
    let outcome = layer.outcome.as_ref().expect("decided");
    if outcome.write.as_ref().is_some_and(Claim::starts_penalty) {
        return Ok(false);
    }
    let fits = match outcome.decision.retry_after {
        Wait::After(ns) => ns <= block.as_nanos().0 as u128,
        Wait::Never => false,
    };
    Ok(fits || !layer.claim.penalized(&layer.key, now)?)
}
