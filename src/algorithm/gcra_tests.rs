//! Unit tests of `gcra`.

use super::*;
use crate::algorithm::Wait;

const MS: u128 = 1_000_000;
const T0: u128 = 1_700_000_000_000 * MS;

fn run(g: &Gcra, tat: &mut u128, now: u128, cost: u64) -> [i64; 5] {
    let out = g.decide(*tat, now, cost);
    if let Some(new) = out.write {
        *tat = new;
    }
    out.decision.reply()
}

#[test]
fn burst_then_denial_with_exact_times() {
    // 10 per second (T = 100 ms), burst 5.
    let g = Gcra::new(10, 1_000 * MS as u64, 5).unwrap();
    let mut tat = 0;
    assert_eq!(run(&g, &mut tat, T0, 1), [1, 5, 4, 0, 100]);
    for left in (0..4).rev() {
        let r = run(&g, &mut tat, T0, 1);
        assert_eq!(r[..3], [1, 5, left]);
    }
    assert_eq!(run(&g, &mut tat, T0, 1), [0, 5, 0, 100, 500]);
    // 40 ms later: still 60 ms to wait.
    assert_eq!(run(&g, &mut tat, T0 + 40 * MS, 1), [0, 5, 0, 60, 460]);
    // After exactly T one unit is back.
    assert_eq!(run(&g, &mut tat, T0 + 100 * MS, 1), [1, 5, 0, 0, 500]);
    // Cost 3 needs 300 ms of room.
    assert_eq!(run(&g, &mut tat, T0 + 100 * MS, 3), [0, 5, 0, 300, 500]);
}

#[test]
fn strict_spacing_by_default() {
    let g = Gcra::new(2, 1_000 * MS as u64, 1).unwrap();
    let mut tat = 0;
    assert_eq!(run(&g, &mut tat, T0, 1), [1, 1, 0, 0, 500]);
    assert_eq!(run(&g, &mut tat, T0 + 1, 1), [0, 1, 0, 500, 500]);
    assert_eq!(run(&g, &mut tat, T0 + 500 * MS, 1), [1, 1, 0, 0, 500]);
}

#[test]
fn cost_above_burst_is_never_admitted_and_cost_zero_peeks() {
    let g = Gcra::new(10, 1_000 * MS as u64, 5).unwrap();
    let out = g.decide(0, T0, 6);
    assert_eq!(out.decision.retry_after, Wait::Never);
    assert_eq!(out.decision.reply(), [0, 5, 5, -1, 0]);
    assert_eq!(out.write, None);
    let peek = g.decide(T0 + 250 * MS, T0, 0);
    assert_eq!(peek.decision.reply(), [1, 5, 2, 0, 250]);
    assert_eq!(peek.write, None);
}

#[test]
fn refills_continuously() {
    let g = Gcra::new(10, 1_000 * MS as u64, 10).unwrap();
    let mut tat = 0;
    assert_eq!(run(&g, &mut tat, T0, 10)[..3], [1, 10, 0]);
    // 350 ms later 3.5 units are back: 3 whole ones.
    assert_eq!(run(&g, &mut tat, T0 + 350 * MS, 0), [1, 10, 3, 0, 650]);
    assert_eq!(run(&g, &mut tat, T0 + 350 * MS, 4), [0, 10, 3, 50, 650]);
    // Fully idle after a second.
    assert_eq!(run(&g, &mut tat, T0 + 1_000 * MS, 0), [1, 10, 10, 0, 0]);
}

#[test]
fn clock_stepping_back_grants_nothing() {
    let g = Gcra::new(10, 1_000 * MS as u64, 2).unwrap();
    let mut tat = 0;
    run(&g, &mut tat, T0, 2);
    // The clock jumps back an hour: the limiter is further from idle, not closer.
    let back = T0 - 3_600_000 * MS;
    let r = run(&g, &mut tat, back, 1);
    assert_eq!(r[0], 0);
    assert_eq!(r[2], 0);
    assert!(r[3] >= 100);
}

#[test]
fn a_million_per_second_is_exact() {
    let g = Gcra::new(1_000_000, 1_000 * MS as u64, 1).unwrap();
    let mut tat = 0;
    let mut admitted = 0;
    // One attempt every 250 ns for 1 ms: exactly one admission per microsecond.
    for i in 0..4_000u128 {
        if run(&g, &mut tat, T0 + i * 250, 1)[0] == 1 {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 1_000);
}

/// `GCRA key max_burst tokens_per_period period [TOKENS n]` is this limiter with
/// `limit = tokens_per_period`, `burst = max_burst + 1` and `cost = n`.
fn redis(g: &Gcra, tat: &mut u128, now: u128, tokens: u64) -> [i64; 5] {
    let out = g.decide(*tat, now, tokens);
    if let Some(t) = out.write {
        *tat = t;
    }
    redis_reply(&out.decision)
}

#[test]
fn redis_reply_is_in_whole_seconds_rounded_up() {
    // GCRA k 5 1 60: one token a minute, bursts of 6.
    let g = Gcra::new(1, 60_000 * MS as u64, 6).unwrap();
    let mut tat = 0;
    assert_eq!(redis(&g, &mut tat, T0, 1), [0, 6, 5, -1, 60]);
    assert_eq!(redis(&g, &mut tat, T0, 1), [0, 6, 4, -1, 120]);
    // A nanosecond later, 119.999999999 s: still 120 (ceil), never 119.
    assert_eq!(redis(&g, &mut tat, T0 + 1, 4), [0, 6, 0, -1, 360]);
    // Denied: retry_after is the wait for one token, rounded up.
    assert_eq!(redis(&g, &mut tat, T0 + 1, 1), [1, 6, 0, 60, 360]);
    assert_eq!(redis(&g, &mut tat, T0 + 1_500 * MS, 1), [1, 6, 0, 59, 359]);
    assert_eq!(redis(&g, &mut tat, T0 + 60_000 * MS, 1), [0, 6, 0, -1, 360]);
}

#[test]
fn redis_reply_says_minus_one_when_the_request_can_never_fit() {
    let g = Gcra::new(1, 60_000 * MS as u64, 6).unwrap();
    let mut tat = 0;
    // TOKENS 7 with max_burst 5: limited, no retry, nothing written.
    assert_eq!(redis(&g, &mut tat, T0, 7), [1, 6, 6, -1, 0]);
    assert_eq!(tat, 0);
    assert_eq!(redis(&g, &mut tat, T0, 6), [0, 6, 0, -1, 360]);
    assert_eq!(redis(&g, &mut tat, T0, 7), [1, 6, 0, -1, 360]);
}

#[test]
fn redis_reply_of_a_fractional_period() {
    // GCRA k 0 2 0.5: a token every 250 ms, no burst.
    let g = Gcra::new(2, 500 * MS as u64, 1).unwrap();
    let mut tat = 0;
    assert_eq!(redis(&g, &mut tat, T0, 1), [0, 1, 0, -1, 1]);
    assert_eq!(redis(&g, &mut tat, T0 + 100 * MS, 1), [1, 1, 0, 1, 1]);
    assert_eq!(redis(&g, &mut tat, T0 + 250 * MS, 1), [0, 1, 0, -1, 1]);
}
