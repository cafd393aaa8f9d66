//! Decide and commit, on one key: what a call (or a waiter) claims, the
//! decision the key's state gives it, and the write that applies it. Deciding
//! writes nothing; committing writes exactly what was decided. Whether a
//! queue of waiters comes first is the wait queue's (`crate::wait`), above.

pub mod lease;
pub mod limiter;

use crate::algorithm::lease::{Lease, LeaseWrite};
use crate::algorithm::Outcome;
use crate::config;
use crate::error::RlError;
use crate::grammar::{Charge, Kind, Request};
use crate::policy::{self, PolicyRef};
use crate::store::Key;

/// What a call, or a waiter, asks of its key.
#[derive(Clone)]
pub enum Claim {
    /// One of the six limiters (also one `RL.ALL` layer).
    Limiter { kind: Kind, request: Request },
    /// A lease: `member` is the stored (prefixed) lease id.
    Acquire { lease: Lease, member: Vec<u8> },
    /// `RL.LIMIT … BLOCK`: a named policy, read again at every decision (so a
    /// waiter decides by its policy as it is when woken). `request` holds the
    /// call's options; its limiter is the policy's, replaced at each reading.
    Policy { by: PolicyRef, request: Request },
}

/// The write of an admitted claim (or a refund).
pub enum ClaimWrite {
    Limiter(limiter::KeyWrite),
    Lease(LeaseWrite),
}

impl Claim {
    /// The command's name in errors and `INFO rl`.
    pub fn label(&self) -> &'static str {
        match self {
            Claim::Limiter { kind, .. } => kind.label(),
            Claim::Acquire { .. } => "RL.ACQUIRE",
            Claim::Policy { .. } => "RL.LIMIT",
        }
    }

    /// The limiter request the claim makes (none for a lease).
    fn request(&self) -> Option<&Request> {
        match self {
            Claim::Limiter { request, .. } | Claim::Policy { request, .. } => Some(request),
            Claim::Acquire { .. } => None,
        }
    }

    /// The units the claim spends if admitted (`REFUND` spends none; a
    /// `DEBIT` its units, as the limiter may hold them).
    pub fn cost(&self) -> u64 {
        match self.request() {
            Some(r) if r.charge == Charge::Refund => 0,
            Some(r) => r.cost,
            None => 1,
        }
    }

    /// True if the claim gives capacity back (`REFUND`): waiters may now fit.
    pub fn refunds(&self) -> bool {
        self.request().is_some_and(|r| r.charge == Charge::Refund)
    }

    /// The named policy's id, for a claim made by one (`INFO rl_policies`).
    pub fn policy_id(&self) -> Option<u32> {
        match self {
            Claim::Policy { by, .. } => Some(by.id),
            _ => None,
        }
    }

    /// True if the claim takes capacity only if admitted (a `COST` above 0,
    /// not a renewal of a held lease): it must queue behind waiters. A
    /// `REFUND` gives, and a `DEBIT` is charged after the fact: neither queues.
    pub fn spends(&self, key: &Key, now: u64) -> Result<bool, RlError> {
        match self {
            Claim::Limiter { request, .. } | Claim::Policy { request, .. } => {
                Ok(request.cost > 0 && request.charge == Charge::Cost)
            }
            Claim::Acquire { member, .. } => Ok(!lease::is_held(key, member, now)?),
        }
    }

    /// The decision `key`'s state gives the claim at `now` and the write that
    /// would apply it, writing nothing.
    pub fn decide(&self, key: &Key, now: u64) -> Result<Outcome<ClaimWrite>, RlError> {
        Ok(match self {
            Claim::Limiter { kind, request } => {
                limiter::decide(key, *kind, request, now)?.map_write(ClaimWrite::Limiter)
            }
            Claim::Acquire { lease: l, member } => {
                lease::decide_acquire(key, l, member, now)?.map_write(ClaimWrite::Lease)
            }
            Claim::Policy { by, request } => {
                let definition = policy::current(by, config::caps())?;
                let request = Request {
                    limiter: definition.limiter,
                    penalty: definition.penalty,
                    ..*request
                };
                limiter::decide(key, definition.kind, &request, now)?.map_write(ClaimWrite::Limiter)
            }
        })
    }

    /// The same claim spending nothing: what the key reports as it is.
    pub fn unspent(&self) -> Option<Claim> {
        match self {
            Claim::Limiter { kind, request } => Some(Claim::Limiter {
                kind: *kind,
                request: Request {
                    cost: 0,
                    charge: Charge::Cost,
                    ..*request
                },
            }),
            Claim::Policy { by, request } => Some(Claim::Policy {
                by: by.clone(),
                request: Request {
                    cost: 0,
                    charge: Charge::Cost,
                    ..*request
                },
            }),
            Claim::Acquire { .. } => None,
        }
    }

    /// True if the claim's key holds a penalty in force at `now` (never for a lease).
    pub fn penalized(&self, key: &Key, now: u64) -> Result<bool, RlError> {
        match self {
            Claim::Limiter { kind, .. } => limiter::penalized(key, *kind, now),
            Claim::Policy { by, .. } => {
                limiter::penalized(key, policy::current(by, config::caps())?.kind, now)
            }
            Claim::Acquire { .. } => Ok(false),
        }
    }

    /// True if committing `write` starts a penalty.
    pub fn starts_penalty(write: &ClaimWrite) -> bool {
        matches!(write, ClaimWrite::Limiter(w) if w.starts_penalty())
    }

    /// Applies `write`, decided for this claim on `key`, replicating its effect.
    pub fn commit(&self, key: &Key, write: &ClaimWrite) {
        match (self, write) {
            (_, ClaimWrite::Limiter(w)) => limiter::commit(key, w),
            (Claim::Acquire { member, .. }, ClaimWrite::Lease(w)) => {
                lease::commit_acquire(key, member, w)
            }
            (Claim::Limiter { .. } | Claim::Policy { .. }, ClaimWrite::Lease(_)) => {}
        }
    }
}
