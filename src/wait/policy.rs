//! The fairness rules of a key's queue, pure (no server): who is admitted,
//! whose wait ends and with what, and when to look again. Waiters are
//! admitted strictly from the head, so a later, smaller request never
//! overtakes an earlier one; a call that spends on a key with waiters is
//! denied behind them.

use std::collections::VecDeque;

use crate::algorithm::{Decision, Wait};
use crate::error::RlError;

/// A denial that no wait can turn into an admission (`cost > limit`).
pub fn never(d: &Decision) -> bool {
    !d.allowed && d.retry_after == Wait::Never
}

/// A wait in nanoseconds; never is the longest.
pub fn wait_ns(w: Wait) -> u128 {
    match w {
        Wait::After(ns) => ns,
        Wait::Never => u128::MAX,
    }
}

/// `own` as a denial behind a queue whose head is admitted in `head_wait` ns:
/// remaining `0`, and `retry_after` the longer of its own wait and the head's
/// (at least 1 ns, so at least 1 ms once rounded).
pub fn behind(own: &Decision, head_wait: u128) -> Decision {
    let retry_after = match own.retry_after {
        Wait::Never if !own.allowed => Wait::Never,
        w => {
            let mine = if own.allowed { 0 } else { wait_ns(w) };
            Wait::After(mine.max(head_wait).max(1))
        }
    };
    Decision {
        allowed: false,
        remaining: 0,
        retry_after,
        ..*own
    }
}

/// What stops the head from being admitted although its key would admit it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gate {
    /// Clients are paused (a failover, `CLIENT PAUSE`): admit nothing now.
    pub paused: bool,
    /// The server refuses writes for memory (`noeviction` above `maxmemory`).
    pub out_of_memory: bool,
}

/// How one wait ended.
#[derive(Debug)]
pub enum Ending {
    /// Admitted: its write was committed.
    Admitted(Decision),
    /// Ended denied (its deadline passed, or it can never be admitted).
    Denied(Decision),
    /// Ended with an error (the key holds something else; out of memory).
    Failed(RlError),
}

/// What a look at a queue did.
pub struct Settled<W> {
    /// Nanoseconds until the queue needs looking at again (`None`: only a
    /// wakeup can change anything, or the queue is empty).
    pub next_ns: Option<u128>,
    /// The waits that ended, in the order their replies go out.
    pub ended: Vec<(W, Ending)>,
}

/// Admits from the head while the head is admissible, then ends the waits
/// whose deadline has passed (with the denial each gets now), and again if
/// the head left. `decide(w, commit)` decides `w`'s claim at this instant and,
/// if `commit` and it is admitted, commits it; `deadline(w)` is its deadline
/// (ns since the epoch; `None`: no limit).
pub fn settle<W>(
    waiters: &mut VecDeque<W>,
    now: u64,
    gate: Gate,
    deadline: impl Fn(&W) -> Option<u64>,
    mut decide: impl FnMut(&W, bool) -> Result<Decision, RlError>,
) -> Settled<W> {
    let mut ended = Vec::new();
    let admit = !gate.paused && !gate.out_of_memory;
    let mut head_wait: u128;
    loop {
        head_wait = u128::MAX;
        while let Some(head) = waiters.front() {
            let ending = match decide(head, admit) {
                Ok(d) if d.allowed && admit => Ending::Admitted(d),
                // As a `deny-oom` command woken from `BLPOP`-style waiting is
                // refused: the wait ends with `-OOM`, nothing spent.
                Ok(d) if d.allowed && !gate.paused => Ending::Failed(RlError::Oom),
                Ok(d) if d.allowed => {
                    head_wait = 0;
                    break;
                }
                Ok(d) if d.retry_after == Wait::Never => Ending::Denied(d),
                Ok(d) => {
                    head_wait = wait_ns(d.retry_after);
                    break;
                }
                Err(e) => Ending::Failed(e),
            };
            ended.push((waiters.pop_front().expect("head"), ending));
        }
        let mut head_left = false;
        let mut i = 0;
        while i < waiters.len() {
            if deadline(&waiters[i]).is_some_and(|d| d <= now) {
                let w = waiters.remove(i).expect("index in range");
                let ending = match decide(&w, false) {
                    Ok(d) if i == 0 && !d.allowed => Ending::Denied(d),
                    Ok(d) => Ending::Denied(behind(&d, head_wait)),
                    Err(e) => Ending::Failed(e),
                };
                ended.push((w, ending));
                head_left |= i == 0;
            } else {
                i += 1;
            }
        }
        if !head_left || waiters.is_empty() {
            break;
        }
    }
    let first_deadline = waiters
        .iter()
        .filter_map(&deadline)
        .min()
        .map(|d| (d - now.min(d)) as u128);
    let next_ns = match (waiters.is_empty(), first_deadline) {
        (true, _) => None,
        (false, Some(d)) => Some(d.min(head_wait)),
        (false, None) => (head_wait != u128::MAX).then_some(head_wait),
    };
    Settled { next_ns, ended }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
