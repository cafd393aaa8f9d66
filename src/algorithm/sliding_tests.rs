//! Unit tests of `sliding`.

use super::*;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;
const W0: u64 = 1_700_000_000 * SEC; // a 10 s window boundary

fn s(limit: u64) -> Sliding {
    Sliding::new(limit, 10 * SEC).unwrap()
}

#[test]
fn weighted_estimate_across_the_boundary() {
    let lim = s(10);
    // 10 admitted at 5 s into a window.
    let st = lim.decide(None, W0 + 5 * SEC, 10).write;
    assert_eq!(
        st,
        Some(SlidingState {
            start_ms: W0 / MS,
            previous: 0,
            current: 10
        })
    );
    let denied = lim.decide(st, W0 + 6 * SEC, 1);
    // Next window at 2.5 s: estimate = 10 * 0.75 = 7.5, so 1 more fits once the
    // estimate is <= 9, i.e. at elapsed 1 s into the next window: 4 s + 1 s.
    assert_eq!(denied.decision.reply(), [0, 10, 0, 5_000, 14_000]);
    let at = W0 + 12_500 * MS;
    let peek = lim.decide(st, at, 0);
    assert_eq!(peek.decision.reply(), [1, 10, 2, 0, 7_500]);
    let out = lim.decide(st, at, 2);
    assert_eq!(out.decision.reply(), [1, 10, 0, 0, 17_500]);
    assert_eq!(
        out.write,
        Some(SlidingState {
            start_ms: (W0 + 10 * SEC) / MS,
            previous: 10,
            current: 2
        })
    );
    assert_eq!(
        idle_at_ns(&out.write.unwrap(), lim.window_ns),
        (W0 + 30 * SEC) as u128
    );
}

#[test]
fn retry_within_the_current_window() {
    let lim = s(10);
    let st = Some(SlidingState {
        start_ms: W0 / MS,
        previous: 8,
        current: 4,
    });
    // At 2 s: estimate = 8*0.8 + 4 = 10.4. Cost 2 needs 8*(1-e) <= 4: e >= 5 s.
    let out = lim.decide(st, W0 + 2 * SEC, 2);
    assert_eq!(out.decision.reply(), [0, 10, 0, 3_000, 18_000]);
    // Exactly then it is admitted.
    assert!(lim.decide(st, W0 + 5 * SEC, 2).decision.allowed);
    assert!(!lim.decide(st, W0 + 5 * SEC - 1, 2).decision.allowed);
}

#[test]
fn old_state_is_forgotten_and_cost_above_limit_never() {
    let lim = s(5);
    let st = Some(SlidingState {
        start_ms: (W0 - 20 * SEC) / MS,
        previous: 5,
        current: 5,
    });
    assert_eq!(lim.decide(st, W0, 0).decision.reply(), [1, 5, 5, 0, 0]);
    assert_eq!(lim.decide(None, W0, 6).decision.reply(), [0, 5, 5, -1, 0]);
}

#[test]
fn refunds_take_from_the_current_window_first() {
    let lim = s(10);
    let st = Some(SlidingState {
        start_ms: W0 / MS,
        previous: 8,
        current: 4,
    });
    let out = lim.refund(st, W0 + 5 * SEC, 6);
    // 4 from the current window, 2 from the previous: estimate 6 * 0.5 = 3.
    assert_eq!(
        out.write,
        Some(SlidingState {
            start_ms: W0 / MS,
            previous: 6,
            current: 0
        })
    );
    assert_eq!(out.decision.reply(), [1, 10, 7, 0, 5_000]);
    assert_eq!(lim.refund(None, W0, 3).write, None);
}

#[test]
fn clock_stepping_back_keeps_the_largest_estimate() {
    let lim = s(4);
    let st = Some(SlidingState {
        start_ms: W0 / MS,
        previous: 4,
        current: 0,
    });
    // At the stored start the previous window weighs fully: nothing fits.
    let out = lim.decide(st, W0 - 3 * SEC, 1);
    assert!(!out.decision.allowed);
    assert_eq!(out.decision.reply()[3], 3_000 + 2_500);
}

/// A start stored under another window (off this window's boundaries), with
/// the clock behind it: a debit's reply is the state it leaves, which the next
/// call at the same instant reads (the reproduction of a reply that promised
/// `remaining 4` and an admission the next call refused).
#[test]
fn a_debit_behind_an_off_boundary_start_replies_what_it_leaves() {
    let lim = s(10);
    let st = Some(SlidingState {
        start_ms: 1_764_489_605_000,
        previous: 10,
        current: 0,
    });
    let now = 1_764_489_599_000 * MS;
    let out = lim.debit(st, now, 1);
    assert_eq!(out.decision.reply()[..4], [1, 10, 0, 3_000]);
    let next = lim.decide(out.write, now, 1);
    assert_eq!(next.decision.reply()[..4], [0, 10, 0, 3_000]);
}

/// Whatever the stored state (starts on or off the window's boundaries) and
/// however far the clock is behind or ahead of it, a write's reply describes
/// the state it leaves: a `COST 0` at the same instant on the written state
/// reports the same `remaining`, and a debit's `retry_after` is a cost of 1's.
#[test]
fn every_write_replies_the_state_it_leaves() {
    let mut seed = 0x5eed_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _ in 0..20_000 {
        let lim = s(1 + next(12));
        let st = Some(SlidingState {
            start_ms: W0 / MS + next(40_000),
            previous: next(15),
            current: next(15),
        });
        let now = W0 - 10 * SEC + next(60_000) * MS;
        let n = 1 + next(6);
        for (what, out) in [
            ("cost", lim.decide(st, now, n)),
            ("debit", lim.debit(st, now, n)),
            ("refund", lim.refund(st, now, n)),
        ] {
            let Some(written) = out.write else { continue };
            let seen = lim.decide(Some(written), now, 0).decision;
            let case = format!("{what} {n} on {st:?} at {now}");
            assert_eq!(seen.remaining, out.decision.remaining, "{case}");
            assert_eq!(seen.reset_after_ns, out.decision.reset_after_ns, "{case}");
            if what == "debit" {
                let one = lim.decide(Some(written), now, 1).decision;
                assert_eq!(one.retry_after, out.decision.retry_after, "{case}");
            }
        }
    }
}
