//! A change to the named policies (`RL.POLICY SET`, `DEL`, `LOAD`): the
//! waiters that hold a policy (`RL.LIMIT … BLOCK`) are decided again at once,
//! by their policy as it is now, and those whose policy went (or no longer
//! parses under the caps in force) end with its error, nothing spent. Work is
//! bounded by the waiters (`rl.max-waiters`).

use super::ending::unblock;
use super::policy::Ending;
use super::queue::{self, QueueId};
use super::timers::schedule;
use crate::config;
use crate::decision::Claim;
use crate::error::RlError;
use crate::observe::waiting;
use crate::policy;
use crate::server::{Blocked, Ctx};
use crate::units::Millis;

/// Called after every change to the set of policies.
pub fn policies_changed(ctx: Ctx) {
    if waiting() == 0 {
        return;
    }
    let caps = config::caps();
    let (gone, held) = queue::with(|s| {
        let mut gone: Vec<(Blocked, RlError)> = Vec::new();
        let mut held: Vec<QueueId> = Vec::new();
        for (&qid, q) in &s.queues {
            let mut holds = false;
            for w in &q.waiters {
                if let Claim::Policy { by, .. } = &w.claim {
                    holds = true;
                    if let Err(e) = policy::current(by, caps) {
                        gone.push((w.bc, e));
                    }
                }
            }
            if holds {
                held.push(qid);
            }
        }
        (gone, held)
    });
    for (bc, error) in gone {
        if let Some(taken) = queue::take(ctx, bc) {
            unblock(&taken.waiter, Ending::Failed(error));
        }
    }
    // A queue emptied above is gone, and `schedule` passes it by.
    for qid in held {
        schedule(ctx, qid, Millis(0));
    }
}
