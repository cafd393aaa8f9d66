//! The fairness rules on a fake key: a counter of free units.

use std::cell::Cell;
use std::collections::VecDeque;

use super::*;

const MS: u64 = 1_000_000;

/// A waiter wanting `need` units, waiting until `deadline`.
#[derive(Debug, PartialEq)]
struct W {
    id: u32,
    need: u64,
    deadline: Option<u64>,
}

/// A key with `free` units; one unit comes back every millisecond.
struct Fake {
    free: Cell<u64>,
    limit: u64,
}

impl Fake {
    fn decide(&self, w: &W, commit: bool) -> Result<Decision, RlError> {
        let free = self.free.get();
        let allowed = w.need <= free;
        if allowed && commit {
            self.free.set(free - w.need);
        }
        let retry_after = match (allowed, w.need > self.limit) {
            (true, _) => Wait::After(0),
            (false, true) => Wait::Never,
            (false, false) => Wait::After(((w.need - free) * MS) as u128),
        };
        Ok(Decision {
            allowed,
            limit: self.limit,
            remaining: free.saturating_sub(w.need),
            retry_after,
            reset_after_ns: 0,
        })
    }
}

fn queue(ws: &[(u32, u64, Option<u64>)]) -> VecDeque<W> {
    ws.iter()
        .map(|&(id, need, deadline)| W { id, need, deadline })
        .collect()
}

fn run(q: &mut VecDeque<W>, key: &Fake, now: u64, gate: Gate) -> Settled<W> {
    settle(
        q,
        now,
        gate,
        |w| w.deadline,
        |w, commit| key.decide(w, commit),
    )
}

fn ids(s: &Settled<W>) -> Vec<(u32, &'static str)> {
    s.ended
        .iter()
        .map(|(w, e)| {
            let how = match e {
                Ending::Admitted(_) => "admitted",
                Ending::Denied(_) => "denied",
                Ending::Failed(_) => "failed",
            };
            (w.id, how)
        })
        .collect()
}

#[test]
fn admits_from_the_head_and_a_smaller_later_request_never_overtakes() {
    let key = Fake {
        free: Cell::new(3),
        limit: 10,
    };
    let mut q = queue(&[(1, 2, None), (2, 5, None), (3, 1, None)]);
    let s = run(&mut q, &key, 0, Gate::default());
    assert_eq!(ids(&s), [(1, "admitted")]);
    // The head wants 5 with 1 free: 4 ms; waiter 3 (1 unit) still waits behind it.
    assert_eq!(s.next_ns, Some(4 * MS as u128));
    assert_eq!(q.iter().map(|w| w.id).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(key.free.get(), 1);
}

#[test]
fn a_lapsed_wait_ends_behind_the_head_and_the_next_deadline_is_kept() {
    let key = Fake {
        free: Cell::new(0),
        limit: 10,
    };
    let mut q = queue(&[
        (1, 4, Some(10 * MS)),
        (2, 1, Some(5 * MS)),
        (3, 1, Some(20 * MS)),
    ]);
    let s = run(&mut q, &key, 5 * MS, Gate::default());
    assert_eq!(ids(&s), [(2, "denied")]);
    let Ending::Denied(d) = &s.ended[0].1 else {
        panic!()
    };
    // Its own wait is 1 ms, the head's 4 ms: it is told the longer.
    assert_eq!((d.allowed, d.remaining), (false, 0));
    assert_eq!(d.retry_after, Wait::After(4 * MS as u128));
    assert_eq!(s.next_ns, Some(4 * MS as u128));
}

#[test]
fn when_the_head_lapses_the_next_one_is_decided_at_once() {
    let key = Fake {
        free: Cell::new(2),
        limit: 10,
    };
    let mut q = queue(&[(1, 5, Some(MS)), (2, 2, None)]);
    let s = run(&mut q, &key, MS, Gate::default());
    assert_eq!(ids(&s), [(1, "denied"), (2, "admitted")]);
    let Ending::Denied(d) = &s.ended[0].1 else {
        panic!()
    };
    assert_eq!(
        d.retry_after,
        Wait::After(3 * MS as u128),
        "the head's own wait"
    );
    assert_eq!(s.next_ns, None);
}

#[test]
fn a_request_that_can_never_pass_ends_at_once() {
    let key = Fake {
        free: Cell::new(10),
        limit: 10,
    };
    let mut q = queue(&[(1, 11, None), (2, 1, None)]);
    let s = run(&mut q, &key, 0, Gate::default());
    assert_eq!(ids(&s), [(1, "denied"), (2, "admitted")]);
}

#[test]
fn paused_clients_admit_nothing_and_out_of_memory_ends_admissible_waits() {
    let key = Fake {
        free: Cell::new(5),
        limit: 10,
    };
    let mut q = queue(&[(1, 1, None)]);
    let paused = Gate {
        paused: true,
        out_of_memory: false,
    };
    let s = run(&mut q, &key, 0, paused);
    assert!(s.ended.is_empty());
    assert_eq!(s.next_ns, Some(0));
    let full = Gate {
        paused: false,
        out_of_memory: true,
    };
    let s = run(&mut q, &key, 0, full);
    assert!(matches!(s.ended[..], [(_, Ending::Failed(RlError::Oom))]));
    assert_eq!(key.free.get(), 5, "nothing spent");
}

#[test]
fn a_denial_behind_waiters_keeps_never_and_waits_at_least_1ns() {
    let admitted = Decision {
        allowed: true,
        limit: 5,
        remaining: 4,
        retry_after: Wait::After(0),
        reset_after_ns: 7,
    };
    let d = behind(&admitted, 0);
    assert_eq!(
        (d.allowed, d.remaining, d.retry_after),
        (false, 0, Wait::After(1))
    );
    assert_eq!(d.reset_after_ns, 7);
    let never_ = Decision {
        allowed: false,
        retry_after: Wait::Never,
        ..admitted
    };
    assert!(never(&never_));
    assert_eq!(behind(&never_, 5).retry_after, Wait::Never);
    assert_eq!(wait_ns(Wait::Never), u128::MAX);
}
