//! Unit tests of `fixed`.

use super::*;

const MS: u64 = 1_000_000;
const MIN: u64 = 60_000 * MS;
const START_MS: u64 = 1_699_999_980_000; // a minute boundary
const T0: u64 = (START_MS + 40_000) * MS; // 40 s into that minute

#[test]
fn counts_within_the_window_and_resets_on_its_boundary() {
    let f = Fixed::new(3, MIN).unwrap();
    let mut st = None;
    for left in [2, 1, 0] {
        let out = f.decide(st, T0, 1);
        assert_eq!(out.decision.reply(), [1, 3, left, 0, 20_000]);
        st = out.write.or(st);
    }
    assert_eq!(st.unwrap().start_ms, START_MS);
    let denied = f.decide(st, T0 + 5_000 * MS + 1, 1);
    assert_eq!(denied.decision.reply(), [0, 3, 0, 15_000, 15_000]);
    assert_eq!(denied.write, None);
    // One nanosecond before the boundary: still denied; on it: a fresh window.
    assert!(!f.decide(st, T0 + 20_000 * MS - 1, 1).decision.allowed);
    let next = f.decide(st, T0 + 20_000 * MS, 1);
    assert_eq!(next.decision.reply(), [1, 3, 2, 0, 60_000]);
    assert_eq!(
        idle_at_ns(&next.write.unwrap(), f.window_ns),
        (T0 + 80_000 * MS) as u128
    );
}

#[test]
fn day_windows_reset_at_midnight_utc() {
    let f = Fixed::new(10, 86_400_000 * MS).unwrap();
    let noon = (19_000 * 86_400_000 + 43_200_000) * MS;
    let out = f.decide(None, noon, 1);
    assert_eq!(out.write.unwrap().start_ms, 19_000 * 86_400_000);
    assert_eq!(out.decision.reply()[4], 43_200_000);
}

#[test]
fn cost_above_limit_never_and_cost_zero_peeks() {
    let f = Fixed::new(3, MIN).unwrap();
    assert_eq!(f.decide(None, T0, 4).decision.reply(), [0, 3, 3, -1, 0]);
    let st = Some(FixedState {
        start_ms: START_MS,
        count: 2,
    });
    let peek = f.decide(st, T0, 0);
    assert_eq!(peek.decision.reply(), [1, 3, 1, 0, 20_000]);
    assert_eq!(peek.write, None);
}

#[test]
fn refunds_give_back_within_the_window_only() {
    let f = Fixed::new(3, MIN).unwrap();
    let st = f.decide(None, T0, 3).write;
    let back = f.refund(st, T0 + MS, 2);
    assert_eq!(back.decision.reply(), [1, 3, 2, 0, 19_999]);
    assert_eq!(
        back.write,
        Some(FixedState {
            start_ms: START_MS,
            count: 1
        })
    );
    let all = f.refund(st, T0, 9);
    assert_eq!(
        all.write,
        Some(FixedState {
            start_ms: START_MS,
            count: 0
        })
    );
    // A refund in the next window has nothing to give back.
    assert_eq!(f.refund(st, T0 + MIN, 1).write, None);
}

#[test]
fn clock_stepping_back_keeps_the_stored_window() {
    let f = Fixed::new(2, MIN).unwrap();
    let st = f.decide(None, T0, 2).write;
    let back = T0 - 10 * MIN;
    let out = f.decide(st, back, 1);
    assert!(!out.decision.allowed);
    assert!(out.decision.reply()[3] >= 20_000);
}
