//! How a wait ends: the reply its client gets, and the blocked-client handle
//! released. Invariant: every handle is released exactly once, by whoever
//! takes its waiter out of the queues ([`finish`] for the waits the module
//! ends, [`Blocked::release`](crate::server::Blocked::release) where the
//! server ended them).

use super::policy::Ending;
use super::queue::Waiter;
use crate::error::RlError;
use crate::observe;
use crate::server::{Ctx, Finished};

/// Ends waiter `w`'s wait (taken out of its queue) as `ending` says,
/// releasing its handle; the reply goes out when the server calls back.
pub fn finish(w: &Waiter, ending: Ending) {
    observe::wait_ended();
    unblock(w, ending);
}

/// [`finish`] for a waiter [`queue::take`](super::queue::take) took out (it
/// counted the wait's end).
pub fn unblock(w: &Waiter, ending: Ending) {
    let (reply, allowed) = match ending {
        Ending::Admitted(d) => (Ok(d.reply()), d.allowed),
        Ending::Denied(d) => (Ok(d.reply()), false),
        Ending::Failed(e) => (Err(e.to_string()), false),
    };
    w.bc.unblock(Box::new(Finished {
        label: w.claim.label(),
        reply,
        allowed,
        cost: w.claim.cost(),
        token: w.token,
        policy: w.claim.policy_id(),
    }));
}

/// Ends every wait with `error`, nothing spent, and stops every timer
/// (shutdown, or the server became a replica).
pub fn end_all(ctx: Ctx, error: RlError) {
    let queues = super::queue::with(|s| s.take_all());
    for (_, q) in queues {
        if let Some((id, _)) = q.timer {
            ctx.stop_timer(id);
        }
        for w in q.waiters {
            finish(&w, Ending::Failed(error.clone()));
        }
    }
}
