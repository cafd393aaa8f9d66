//! Unit tests of `ledger`.

use super::*;

const ADMIT: Outcome = Outcome::Decided {
    allowed: true,
    cost: 1,
    near: false,
};
const NEAR: Outcome = Outcome::Decided {
    allowed: true,
    cost: 1,
    near: true,
};
const DENY: Outcome = Outcome::Decided {
    allowed: false,
    cost: 5,
    near: false,
};

fn calls(l: &Ledger<2>) -> [u64; 2] {
    l.tallies().map(|t| t.calls)
}

#[test]
fn counts_while_redis_counts_along() {
    let mut l = Ledger::<2>::new();
    l.record(0, ADMIT);
    l.record(0, DENY);
    l.record(1, Outcome::Error);
    assert_eq!(calls(&l), [2, 1]);
    assert_eq!(l.recent(), 3);
    l.settle([2, 1]);
    l.record(0, ADMIT);
    l.settle([3, 1]);
    let t = l.tallies()[0];
    assert_eq!((t.calls, t.admitted, t.denied, t.cost_denied), (3, 2, 1, 5));
    assert_eq!(l.tallies()[1].errors, 1);
}

#[test]
fn a_settled_burst_leaves_no_memory_behind() {
    let mut l = Ledger::<2>::new();
    for _ in 0..100_000 {
        l.record(0, ADMIT);
    }
    l.settle([100_000, 0]);
    assert_eq!(l.tallies()[0].calls, 100_000);
    assert!(l.recent.capacity() <= KEPT_CAPACITY);
}

#[test]
fn a_reset_between_settles_keeps_only_the_calls_after_it() {
    let mut l = Ledger::<2>::new();
    for _ in 0..4 {
        l.record(0, ADMIT);
    }
    l.settle([4, 0]);
    // Two more calls, then a reset, then one denied call: Redis says 1.
    l.record(0, ADMIT);
    l.record(0, ADMIT);
    l.record(0, DENY);
    l.record(1, ADMIT);
    l.settle([1, 1]);
    let t = l.tallies();
    assert_eq!((t[0].calls, t[0].admitted, t[0].denied), (1, 0, 1));
    // Command 1 had no call before the reset: its one call stays.
    assert_eq!(t[1].calls, 1);
}

#[test]
fn a_reset_with_more_calls_after_it_than_before_is_still_seen() {
    let mut l = Ledger::<2>::new();
    l.record(0, DENY);
    l.settle([1, 0]);
    l.record(0, DENY);
    // Reset, then three admitted: Redis counts 3, above the old baseline 1.
    for _ in 0..3 {
        l.record(0, ADMIT);
    }
    l.settle([3, 0]);
    assert_eq!(l.tallies()[0], {
        let mut t = Tally::ZERO;
        (0..3).for_each(|_| t.add(ADMIT));
        t
    });
}

fn late(allowed: bool, cost: u64, token: Token) -> Outcome {
    Outcome::Late {
        allowed,
        cost,
        near: false,
        token,
    }
}

#[test]
fn a_blocked_call_counts_once_and_its_late_decision_is_not_a_call() {
    let mut l = Ledger::<2>::new();
    l.record(0, Outcome::Blocked(1));
    l.settle([1, 0]);
    l.record(0, late(true, 2, 1));
    l.settle([1, 0]);
    let t = l.tallies()[0];
    assert_eq!(
        (t.calls, t.admitted, t.cost_admitted, t.waits_admitted),
        (1, 1, 2, 1)
    );
    l.record(
        0,
        Outcome::Waited {
            allowed: false,
            cost: 1,
            near: false,
        },
    );
    l.settle([2, 0]);
    let t = l.tallies()[0];
    assert_eq!((t.calls, t.denied, t.waits_timed_out), (2, 1, 1));
    assert!(l.pending.is_empty());
}

#[test]
fn a_wait_across_a_reset_counts_in_neither_tally() {
    // Blocked, then reset, then its decision and one call: Redis says 1.
    let mut l = Ledger::<2>::new();
    l.record(0, Outcome::Blocked(1));
    l.record(0, late(false, 1, 1));
    l.record(0, ADMIT);
    l.settle([1, 0]);
    assert_eq!(l.tallies()[0], {
        let mut t = Tally::ZERO;
        t.add(ADMIT);
        t
    });
    // Blocked and settled, then reset, then its decision: nothing counts.
    let mut l = Ledger::<2>::new();
    l.record(0, ADMIT);
    l.record(0, Outcome::Blocked(2));
    l.settle([2, 0]);
    l.record(0, late(false, 1, 2));
    l.settle([0, 0]);
    assert_eq!(l.tallies()[0], Tally::ZERO);
    // An abandoned wait completes its call without a decision.
    l.record(0, Outcome::Blocked(3));
    l.record(0, Outcome::Abandoned(3));
    l.record(0, Outcome::Blocked(4));
    l.settle([2, 0]);
    l.record(0, late(false, 1, 4));
    l.settle([2, 0]);
    let t = l.tallies()[0];
    assert_eq!((t.calls, t.denied, t.waits_timed_out), (2, 1, 1));
    assert!(l.pending.is_empty());
}

#[test]
fn waits_made_after_a_reset_count_whatever_order_waits_end_in() {
    // Two waits pending from before a reset; three new ones that time out
    // first, then the old ones end.
    let mut l = Ledger::<2>::new();
    l.record(0, Outcome::Blocked(10));
    l.record(0, Outcome::Blocked(11));
    l.settle([2, 0]);
    for token in 20..23 {
        l.record(0, Outcome::Blocked(token));
    }
    l.settle([3, 0]);
    for token in 20..23 {
        l.record(0, late(false, 1, token));
    }
    l.record(0, late(true, 1, 10));
    l.record(0, Outcome::Abandoned(11));
    l.settle([3, 0]);
    let t = l.tallies()[0];
    assert_eq!(
        (
            t.calls,
            t.admitted,
            t.denied,
            t.waits_timed_out,
            t.waits_admitted
        ),
        (3, 0, 3, 3, 0)
    );
    assert!(l.pending.is_empty());
}

#[test]
fn a_reset_with_no_call_since_clears_the_tally() {
    let mut l = Ledger::<2>::new();
    l.record(1, ADMIT);
    l.settle([0, 1]);
    l.settle([0, 0]);
    assert_eq!(l.tallies(), [Tally::ZERO; 2]);
}

#[test]
fn policies_count_their_calls_and_clear_with_their_command() {
    let mut l = Ledger::<2>::new();
    l.add_policy(7);
    l.add_policy(8);
    l.record_policy(1, ADMIT, by(7, false));
    l.record_policy(1, DENY, by(7, false));
    l.record_policy(1, DENY, by(8, true)); // a shadow policy's denial
    l.record_policy(1, Outcome::Error, by(8, true));
    l.record(0, ADMIT); // another command's call is no policy's
    let t = |l: &Ledger<2>, id| {
        let t = l.policy_tally(id);
        (t.calls, t.admitted, t.denied, t.shadow_denied, t.errors)
    };
    assert_eq!(t(&l, 7), (2, 1, 1, 0, 0));
    assert_eq!(t(&l, 8), (2, 0, 0, 1, 1));
    l.settle([1, 4]);
    assert_eq!(t(&l, 7), (2, 1, 1, 0, 0));
    // Reset, then two calls of policy 8: only those count, and policy 7 is cleared.
    l.record_policy(1, ADMIT, by(7, false));
    l.record_policy(1, ADMIT, by(8, true));
    l.record_policy(1, DENY, by(8, true));
    l.settle([1, 2]);
    assert_eq!(t(&l, 7), (0, 0, 0, 0, 0));
    assert_eq!(t(&l, 8), (2, 1, 0, 1, 0));
    // The other command's reset leaves the policies alone.
    l.settle([0, 2]);
    assert_eq!(t(&l, 8), (2, 1, 0, 1, 0));
    // A removed policy's tally and its recent calls go; an unknown id counts nothing.
    l.record_policy(1, ADMIT, by(8, true));
    l.remove_policy(8);
    l.record_policy(1, ADMIT, by(9, false));
    l.settle([0, 4]);
    assert_eq!(t(&l, 8), (0, 0, 0, 0, 0));
    assert_eq!(t(&l, 9), (0, 0, 0, 0, 0));
    assert_eq!(l.tallies()[1].calls, 4);
}

/// A call by policy `id` (`shadow`: a shadow one) that started no penalty.
fn by(id: u32, shadow: bool) -> ByPolicy {
    ByPolicy {
        id,
        shadow,
        penalized: false,
    }
}

#[test]
fn penalties_are_counted_per_policy_and_cleared_with_the_rest() {
    let mut l: Ledger<2> = Ledger::new();
    l.add_policy(7);
    let started = ByPolicy {
        penalized: true,
        ..by(7, false)
    };
    l.record_policy(1, DENY, started);
    l.record_policy(1, DENY, by(7, false));
    assert_eq!(l.policy_tally(7).penalties, 1);
    l.settle([0, 2]);
    assert_eq!(l.policy_tally(7).penalties, 1);
    // A reset of the command's statistics clears it with every other counter.
    l.settle([0, 0]);
    assert_eq!(l.policy_tally(7).penalties, 0);
}

#[test]
fn near_limit_counts_near_admissions_per_command_and_policy() {
    let mut l = Ledger::<2>::new();
    l.add_policy(7);
    let by = ByPolicy {
        id: 7,
        shadow: false,
        penalized: false,
    };
    l.record(0, ADMIT);
    l.record_policy(0, NEAR, by);
    l.record(1, NEAR);
    l.record(1, DENY);
    assert_eq!(l.tallies().map(|t| t.near_limit), [1, 1]);
    l.settle([2, 2]);
    assert_eq!(l.tallies().map(|t| t.near_limit), [1, 1]);
    assert_eq!(l.policy_tally(7).near_limit, 1);
    assert_eq!(l.policy_tally(7).admitted, 1);
    // A reset clears them.
    l.settle([0, 0]);
    assert_eq!(l.tallies().map(|t| t.near_limit), [0, 0]);
    assert_eq!(l.policy_tally(7).near_limit, 0);
}
