//! Unit tests of `cell`.

use super::*;

const S: i128 = 1_000_000_000;
const MS: i128 = 1_000_000;
/// A start instant with a sub-millisecond part, like a real clock's.
const START: u64 = 1_700_000_000_123_456_789;

/// Applies a decision to the stored TAT, as the command layer does.
fn step(cell: &Cell, tat: &mut Option<u64>, now: u64, quantity: u64) -> Throttle {
    let out = decide(cell, *tat, now, quantity);
    if let Some(new) = out.new_tat_ns {
        *tat = Some(new);
    }
    out
}

/// One row of `it_rate_limits`: (case, now, volume, remaining, reset_after,
/// retry_after (`None` = -1 s), limited).
type Case = (u32, u64, u64, i64, i128, Option<i128>, bool);

/// redis-cell's own table-driven test, `it_rate_limits` (src/cell/mod.rs),
/// cases 0-14 with its expected values: limit 5 (max_burst 4), 1 per second.
#[rustfmt::skip]
#[test]
fn redis_cell_it_rate_limits() {
    let cell = Cell::new(4, 1, 1).unwrap();
    assert_eq!(cell.limit, 5);
    let at = |ms: u64| START + ms * 1_000_000;
    let cases: [Case; 15] = [
        // You can never make a request larger than the maximum.
        (0, at(0), 6, 5, 0, None, true),
        // Rate limit normal requests appropriately.
        (1, at(0), 1, 4, S, None, false),
        (2, at(0), 1, 3, 2 * S, None, false),
        (3, at(0), 1, 2, 3 * S, None, false),
        (4, at(0), 1, 1, 4 * S, None, false),
        (5, at(0), 1, 0, 5 * S, None, false),
        (6, at(0), 1, 0, 5 * S, Some(S), true),
        (7, at(3000), 1, 2, 3000 * MS, None, false),
        (8, at(3100), 1, 1, 3900 * MS, None, false),
        (9, at(4000), 1, 1, 4000 * MS, None, false),
        (10, at(8000), 1, 4, 1000 * MS, None, false),
        (11, at(9500), 1, 4, 1000 * MS, None, false),
        // Zero-volume request just peeks at the state.
        (12, at(9500), 0, 4, S, None, false),
        // High-volume request uses up more of the limit.
        (13, at(9500), 2, 2, 3 * S, None, false),
        // Large requests cannot exceed limits.
        (14, at(9500), 5, 2, 3 * S, Some(3 * S), true),
    ];
    let mut tat = None;
    for (case, now, volume, remaining, reset, retry, limited) in cases {
        let out = step(&cell, &mut tat, now, volume);
        assert_eq!(out.limited, limited, "case {case}");
        assert_eq!(out.limit, 5, "case {case}");
        assert_eq!(out.remaining, remaining, "case {case}");
        assert_eq!(out.reset_after_ns, reset, "case {case}");
        assert_eq!(out.retry_after_ns, retry, "case {case}");
        assert_eq!(out.new_tat_ns.is_some(), !limited && volume > 0, "case {case}");
    }
}

#[test]
fn emission_interval_is_redis_cells_float_division() {
    // Rate::per_second(5) = 200 ms; per_period(6, 2 min) = 20 s; 30 per 60 s = 2 s.
    assert_eq!(emission_interval_ns(5, 1), 200_000_000);
    assert_eq!(emission_interval_ns(6, 120), 20_000_000_000);
    assert_eq!(emission_interval_ns(30, 60), 2_000_000_000);
    // Truncated to the nanosecond, not rounded, and not to the millisecond.
    assert_eq!(emission_interval_ns(3, 1), 333_333_333);
    assert_eq!(emission_interval_ns(7, 1), 142_857_142);
    // Beyond 2^53 ns the f64 quotient is what redis-cell computes.
    let p = 315_360_000u64;
    assert_eq!(
        emission_interval_ns(7, p),
        ((p as i64 * 1_000_000_000) as f64 / 7.0) as i64 as u64
    );
    // Zero rates.
    assert_eq!(emission_interval_ns(2_000_000_000, 1), 0);
    assert_eq!(Cell::new(0, 2_000_000_000, 1), Err(CellError::ZeroRate));
    assert_eq!(Cell::new(0, 0, 1), Err(CellError::ZeroRate));
    assert_eq!(Cell::new(0, 1, 0), Err(CellError::ZeroRate));
    assert_eq!(Cell::new(0, 1_000_000_000, 1).unwrap().emission_ns, 1);
    // The burst window is capped at 3650 days.
    assert_eq!(
        Cell::new(3649, 1, 86_400).unwrap().dvt_ns() as u128,
        MAX_DVT_NS
    );
    assert_eq!(Cell::new(3650, 1, 86_400), Err(CellError::BurstTooLong));
}

#[test]
fn reply_rounds_up_whole_leftover_milliseconds_only() {
    assert_eq!(reply_seconds(0), 0);
    assert_eq!(reply_seconds(999_999), 0, "under 1 ms is dropped");
    assert_eq!(reply_seconds(MS), 1);
    assert_eq!(reply_seconds(S), 1);
    assert_eq!(reply_seconds(2 * S + 999_999), 2);
    assert_eq!(reply_seconds(2 * S + MS), 3);
    assert_eq!(reply_seconds(-S), -1);
    assert_eq!(reply_seconds(-S / 2), 0);
}

#[test]
fn reply_seconds_are_redis_cells_f64_sum() {
    // From 2^24 s, 999,999,999 ns rounds the f64 sum up to the next second,
    // which then gains one more for its leftover milliseconds.
    assert_eq!(reply_seconds(16_777_216 * S + 999_999_999), 16_777_218);
    assert_eq!(reply_seconds(16_777_215 * S + 999_999_999), 16_777_216);
    assert_eq!(reply_seconds(16_777_216 * S + 999_999_998), 16_777_217);
    assert_eq!(reply_seconds(298_582_783 * S + 1), 298_582_783);
    assert_eq!(reply_seconds(315_360_000 * S + 999_999_999), 315_360_002);
    // Beyond an i64 of seconds (no Duration holds it): saturated.
    assert_eq!(reply_seconds(i64::MAX as i128 * S + S - 1), i64::MAX);
    assert_eq!(reply_seconds(i128::MAX), i64::MAX);
    assert_eq!(reply_seconds(i128::MIN), i64::MIN);
    assert_eq!(reply_seconds(i64::MIN as i128 * S - S + 1), i64::MIN);
}

#[test]
fn burst_then_denial_replies_like_redis_cell() {
    // README example: CL.THROTTLE user123 15 30 60 -> [0, 16, 15, -1, 2].
    let cell = Cell::new(15, 30, 60).unwrap();
    let mut tat = None;
    assert_eq!(step(&cell, &mut tat, START, 1).reply(), [0, 16, 15, -1, 2]);
    assert_eq!(tat, Some(START + 2_000_000_000));
    for left in (0..15).rev() {
        let r = step(&cell, &mut tat, START, 1).reply();
        assert_eq!(r, [0, 16, left, -1, 2 * (16 - left)]);
    }
    let denied = step(&cell, &mut tat, START, 1);
    assert_eq!(denied.reply(), [1, 16, 0, 2, 32]);
    assert_eq!(denied.new_tat_ns, None);
    // 1.5 s later: 0.5 s to wait, replied as 1 s; the TAT is 30.5 s away.
    let r = step(&cell, &mut tat, START + 1_500_000_000, 1).reply();
    assert_eq!(r, [1, 16, 0, 1, 31]);
    // redis-cell's e2e test: 1 per 2 s, no burst.
    let strict = Cell::new(0, 1, 2).unwrap();
    let mut tat = None;
    assert_eq!(step(&strict, &mut tat, START, 1).reply(), [0, 1, 0, -1, 2]);
    assert_eq!(step(&strict, &mut tat, START, 1).reply(), [1, 1, 0, 2, 2]);
    assert_eq!(
        step(&strict, &mut tat, START + 2_000_000_000, 1).reply(),
        [0, 1, 0, -1, 2]
    );
}

#[test]
fn quantity_zero_peeks_and_quantity_above_limit_never_passes() {
    let cell = Cell::new(4, 1, 1).unwrap();
    let fresh = decide(&cell, None, START, 0);
    assert_eq!(fresh.reply(), [0, 5, 5, -1, 0]);
    assert_eq!(fresh.new_tat_ns, None);
    let over = decide(&cell, None, START, 6);
    assert_eq!(over.reply(), [1, 5, 5, -1, 0]);
    assert_eq!(over.new_tat_ns, None);
    // A TAT more than dvt ahead (a plan change): even a peek is limited.
    let ahead = Some(START + 7_000_000_000);
    let peek = decide(&cell, ahead, START, 0);
    assert_eq!(peek.reply(), [1, 5, 0, 2, 7]);
    assert_eq!(peek.new_tat_ns, None);
}

#[test]
fn a_past_tat_is_idle() {
    let cell = Cell::new(4, 1, 1).unwrap();
    let stale = Some(START - 10_000_000_000);
    assert_eq!(
        decide(&cell, stale, START, 6),
        decide(&cell, None, START, 6)
    );
    assert_eq!(
        decide(&cell, stale, START, 1),
        decide(&cell, None, START, 1)
    );
    assert_eq!(decide(&cell, Some(0), START, 2).reply(), [0, 5, 3, -1, 2]);
}

#[test]
fn remaining_counts_whole_microseconds_like_redis_cell() {
    // 3 per second: T = 333_333_333 ns = 333_333 µs; dvt = 3 T = 999_999_999 ns.
    let cell = Cell::new(2, 3, 1).unwrap();
    let mut tat = None;
    let r = step(&cell, &mut tat, START, 1);
    // next = 2 T = 666_666_666 ns -> 666_666 µs / 333_333 µs = 2.
    assert_eq!((r.remaining, r.reset_after_ns), (2, 333_333_333));
    // T = 1.5 µs counts as 1 µs: redis-cell would say 150 of a limit of 100.
    let odd = Cell::new(99, 666_666, 1).unwrap();
    assert_eq!(odd.emission_ns, 1_500);
    assert_eq!(decide(&odd, None, START, 0).remaining, 100);
    // After one: redis-cell says 148 (148.5 µs / 1 µs); capped, still 100.
    assert_eq!(decide(&odd, None, START, 1).remaining, 100);
    // Sub-microsecond intervals: redis-cell would divide by zero; we count ns.
    let fast = Cell::new(9, 2_000_000, 1).unwrap(); // T = 500 ns
    let r = decide(&fast, None, START, 1);
    assert_eq!((r.limited, r.remaining, r.reset_after_ns), (false, 9, 500));
}

#[test]
fn extremes_do_not_overflow() {
    let max = 1_000_000_000_000u64;
    let cells = [
        Cell::new(0, 1, 315_360_000).unwrap(),
        Cell::new(max - 1, max, 315_360_000).unwrap(),
        Cell::new(0, 1_000_000_000, 1).unwrap(),
        Cell::new(max, 1_000_000_000, 1).unwrap(),
    ];
    for cell in cells {
        for now in [0, 5, START, u64::MAX / 2] {
            for stored in [None, Some(0), Some(now), Some(u64::MAX)] {
                for q in [0, 1, 2, max] {
                    let out = decide(&cell, stored, now, q);
                    let r = out.reply();
                    assert!(r[2] >= 0 && r[2] <= r[1], "{cell:?} {r:?}");
                    assert!(r[3] >= -1 && r[4] >= 0, "{cell:?} {r:?}");
                    if q > out.limit {
                        assert!(out.limited && out.retry_after_ns.is_none());
                    }
                    assert_eq!(out.new_tat_ns.is_some(), !out.limited && q > 0);
                }
            }
        }
    }
}
