//! `CL.THROTTLE`: redis-cell's GCRA, ported rule for rule so that its keys carry
//! over in both directions and its replies are the same integers.
//!
//! # The rules of redis-cell 0.5, and where they come from
//!
//! Sources: the public repository `brandur/redis-cell`. The limiter is
//! `src/cell/mod.rs` (`Rate::per_period`, `RateLimiter::new`, `rate_limit`; the
//! same code as `redis-cell-impl/src/lib.rs` of the workspace layout), the
//! command is `src/lib.rs` (`ThrottleCommand::run`; `redis-cell/src/lib.rs`), the
//! store is `src/cell/store.rs` / `redis-cell/src/store.rs`
//! (`InternalRedisStore`) with `src/redis/mod.rs` (`RedisKeyWritable::set_expire`).
//! `CHANGELOG.md` dates the rules that changed: 0.2.2 (#13) made the limited test
//! exact (older versions compared `diff.num_seconds() < 0`, which truncates to
//! whole seconds and let sub-second rates through), 0.2.5 (#42) refuses zero
//! rates, 0.3.0 (#53) replicates (verbatim), PR #58 (merged Aug 2022, in 0.3.1
//! and later) rounds the reply's seconds up, and 0.4.0 (#76, moving to `time`
//! 0.3) gave that rounding its present form (rule 9). The newest stored
//! sources, the Valkey-era tree of 0.5 (`valkey.Dockerfile` building from
//! source, `tests/e2e.rs`, whose expected replies these rules reproduce), use
//! `time` 0.3 and read the stored TAT as a `u64` (`Option<u64>`; older versions
//! used `i64` with -1 for "absent"); apart from rule 9, none of the arithmetic
//! below differs between 0.3.1 and them. (The stored `CHANGELOG.md` stops at
//! 0.4.0, 2024-09-05: no entry describes 0.5 beyond these files.) All durations
//! are nanoseconds.
//!
//! 1. **Emission interval** `T = ((period * 10^9) as f64 / count as f64) as i64`
//!    nanoseconds: an `f64` division truncated toward zero (`Rate::per_period`
//!    with `Duration::seconds(period)`). For periods up to 2^53 ns (104 days)
//!    this is exactly `floor(period * 10^9 / count)`. `T == 0` (count above
//!    `period * 10^9`, or a zero count or period) is the error "Zero rates are
//!    not supported".
//! 2. **Delay variation tolerance** `dvt = T * (max_burst + 1)`; `limit = max_burst + 1`.
//! 3. **State**: the theoretical arrival time (TAT) as decimal nanoseconds since
//!    the epoch, a plain string with no prefix. Absent key: `tat = now`.
//! 4. `increment = T * quantity`; `new_tat = max(tat, now) + increment`;
//!    `diff = now - (new_tat - dvt)`. **Limited iff `diff < 0`**, compared in
//!    nanoseconds (0.2.2 and later).
//! 5. **Limited**: nothing is written. `retry_after = -diff` if
//!    `increment <= dvt` (`quantity <= limit`), else it stays `-1 s` (the request
//!    can never pass). `ttl = tat - now`.
//! 6. **Allowed**: the key is set to `new_tat` with a relative expiry of
//!    `ttl = new_tat - now`, truncated to whole milliseconds
//!    (`RedisModule_SetExpire(key, ttl.whole_milliseconds())`). `retry_after = -1 s`.
//! 7. **Remaining**: `next = dvt - ttl`; if `next > -T`,
//!    `remaining = (whole_µs(next) as f64 / whole_µs(T) as f64) as i64`
//!    (microseconds, truncated toward zero), else 0.
//! 8. **`reset_after = ttl`.**
//! 9. **Reply** `[limited, limit, remaining, retry_after, reset_after]`, each time
//!    in seconds as `as_seconds_f64(d) as i64 + (subsec_milliseconds(d) > 0 ? 1 : 0)`,
//!    the form of `src/lib.rs` in 0.4 and 0.5 (with `time` 0.3, `d` is whole
//!    seconds and a nanosecond part of the same sign, and `as_seconds_f64` is
//!    `seconds as f64 + nanoseconds as f64 / 10^9`): truncated, then one more if
//!    at least a whole millisecond is left over (2.0009 s replies 2, 2.001 s
//!    replies 3; -1 s stays -1). The `f64` sum truncates to the whole seconds,
//!    except that from 2^24 s (194 days) on, a duration less than half an `f64`
//!    step below a whole second rounds up to it, and then gains one more:
//!    16,777,216.999999999 s replies 16,777,218. (0.3.1, on `time` 0.1, computed
//!    `num_seconds() + (num_milliseconds() > 0 ? 1 : 0)`, where `num_milliseconds`
//!    counts the whole duration: there every duration of at least 1 ms, whole
//!    seconds included, replied one more.)
//! 10. **Quantity 0** is a peek: it follows the same rules with `increment = 0`
//!     (so it is limited only when the TAT lies more than `dvt` ahead).
//!
//! # Where `CL.THROTTLE` deliberately differs
//!
//! - **Bad input is an `ERR`** naming the argument and its range, never a panic
//!   (redis-cell parses any `i64`: negative counts, bursts and quantities give
//!   nonsense, and huge values can overflow its `time` arithmetic, which panics
//!   inside the server). The command layer accepts
//!   `max_burst` 0..=10^12, `count` 1..=10^12, `period` 1..=315,360,000 seconds,
//!   `quantity` 0..=10^12, and requires `T >= 1 ns` and `dvt <= 3650 days`.
//! - **The expiry is absolute**: `PXAT ceil(new_tat / 1 ms)`, the instant the
//!   state becomes equivalent to an absent key, where redis-cell's relative TTL
//!   lands up to 1 ms earlier (it truncates). Replicated as `SET key tat PXAT ms`.
//! - **A stored TAT in the past counts as `now`**, also for `reset_after` and
//!   `remaining` of a limited request (redis-cell uses the raw stored value
//!   there; such a key is one its own TTL would already have expired).
//! - **Quantity 0 and limited requests write nothing** (redis-cell rewrites the
//!   same TAT on an allowed peek: an equivalent state).
//! - **`remaining` never exceeds `limit`**. redis-cell truncates `T` to whole
//!   microseconds before dividing, so when `T` is not a whole number of
//!   microseconds it can report more than `limit` (1.5 µs counts as 1 µs: up to
//!   1.5 × `limit`); below 1 µs it divides by zero and replies `i64::MAX` (or 0).
//!   We keep its formula, cap the result at `limit`, and below 1 µs divide in
//!   nanoseconds. Whenever `T` is a whole number of microseconds (1 per second,
//!   30 per 60 s, 1000 per second, ...) the replies are identical.

use super::NANOS_PER_US;

const NANOS_PER_SEC: i128 = 1_000_000_000;
const NANOS_PER_MS: i128 = 1_000_000;

/// `CL.THROTTLE`'s parameters, built only by [`Cell::new`], which checks
/// `T >= 1 ns` and `dvt <= MAX_DVT_NS`, so every instant fits an `i64` for centuries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// `max_burst + 1`: requests admitted at once when idle.
    limit: u64,
    /// The emission interval `T` in nanoseconds (rule 1).
    emission_ns: u64,
}

/// The largest delay variation tolerance: 3650 days, the longest duration the
/// module accepts anywhere.
pub const MAX_DVT_NS: u128 = 3650 * 86_400 * NANOS_PER_SEC as u128;

/// Why parameters are refused (each a range of the command's grammar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellError {
    /// `T` would be 0: more than one request per nanosecond.
    ZeroRate,
    /// `(max_burst + 1) * T` is beyond [`MAX_DVT_NS`].
    BurstTooLong,
}

impl Cell {
    /// redis-cell's rate from `count` per `period_s` seconds with `max_burst`
    /// (rules 1 and 2). A zero `count` or `period_s` is a zero rate.
    pub fn new(max_burst: u64, count: u64, period_s: u64) -> Result<Cell, CellError> {
        let emission_ns = emission_interval_ns(count, period_s);
        if emission_ns == 0 {
            return Err(CellError::ZeroRate);
        }
        let limit = max_burst.saturating_add(1);
        if (emission_ns as u128).saturating_mul(limit as u128) > MAX_DVT_NS {
            return Err(CellError::BurstTooLong);
        }
        Ok(Cell { limit, emission_ns })
    }

    /// `max_burst + 1`: requests admitted at once when idle (at least 1).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The emission interval `T` in nanoseconds (rule 1; at least 1).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn emission_ns(&self) -> u64 {
        self.emission_ns
    }

    /// The delay variation tolerance `T * limit` (rule 2).
    pub fn dvt_ns(&self) -> i128 {
        self.emission_ns as i128 * self.limit as i128
    }
}

/// Rule 1, with redis-cell's floating point: `(period_ns as f64 / count as f64) as i64`,
/// truncated toward zero (and saturating, as Rust's `as` does).
pub fn emission_interval_ns(count: u64, period_s: u64) -> u64 {
    if count == 0 || period_s == 0 {
        return 0;
    }
    let period_ns = (period_s as i128 * NANOS_PER_SEC).min(i64::MAX as i128) as i64;
    ((period_ns as f64) / (count as f64)) as i64 as u64
}

/// One decision. Times are signed nanoseconds, as redis-cell's `Duration`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    pub limited: bool,
    pub limit: u64,
    pub remaining: i64,
    /// `None`: the `-1 s` of an allowed request or one that can never pass.
    pub retry_after_ns: Option<i128>,
    pub reset_after_ns: i128,
    /// The TAT to store: `Some` only for an allowed request with `quantity > 0`.
    pub new_tat_ns: Option<u64>,
}

impl Throttle {
    /// `[limited, limit, remaining, retry_after_s, reset_after_s]` (rule 9).
    pub fn reply(&self) -> [i64; 5] {
        [
            self.limited as i64,
            self.limit.min(i64::MAX as u64) as i64,
            self.remaining,
            self.retry_after_ns.map_or(-1, reply_seconds),
            reply_seconds(self.reset_after_ns),
        ]
    }
}

/// Rule 9, as redis-cell 0.5 computes it from a `time` 0.3 `Duration` of `ns`:
/// `as_seconds_f64() as i64`, plus one if `subsec_milliseconds() > 0`.
/// Saturates where the seconds do not fit an `i64` (no `Duration` holds them).
pub fn reply_seconds(ns: i128) -> i64 {
    let Ok(seconds) = i64::try_from(ns / NANOS_PER_SEC) else {
        return if ns < 0 { i64::MIN } else { i64::MAX };
    };
    // Truncated toward zero: the same sign as `seconds`, as in a `Duration`.
    let nanoseconds = (ns % NANOS_PER_SEC) as i32;
    let as_seconds_f64 = seconds as f64 + nanoseconds as f64 / 1_000_000_000.0;
    let subsec_milliseconds = (nanoseconds / NANOS_PER_MS as i32) as i16;
    let truncated = as_seconds_f64 as i64;
    if subsec_milliseconds > 0 {
        truncated.saturating_add(1)
    } else {
        truncated
    }
}

/// Decides `quantity` at `now_ns` given the stored TAT (`None`: absent key), as
/// redis-cell 0.5 does (rules 3-10, with the differences listed above).
pub fn decide(cell: &Cell, stored_tat_ns: Option<u64>, now_ns: u64, quantity: u64) -> Throttle {
    let now = now_ns as i128;
    let t = cell.emission_ns as i128;
    let dvt = cell.dvt_ns();
    // Rule 3; a TAT in the past is the idle state.
    let tat = stored_tat_ns.map_or(now, |v| (v as i128).max(now));
    let increment = t * quantity as i128;
    let new_tat = tat + increment;
    let diff = now - (new_tat - dvt);

    let (limited, ttl, retry_after_ns, new_tat_ns) = if diff < 0 {
        let retry = (increment <= dvt).then_some(-diff);
        (true, tat - now, retry, None)
    } else {
        // Allowed means new_tat <= now + dvt: it fits a u64 for any real clock.
        let write = (quantity > 0).then_some(new_tat.min(u64::MAX as i128) as u64);
        (false, new_tat - now, None, write)
    };

    Throttle {
        limited,
        limit: cell.limit,
        remaining: remaining(dvt - ttl, t).min(cell.limit.min(i64::MAX as u64) as i64),
        retry_after_ns,
        reset_after_ns: ttl,
        new_tat_ns,
    }
}

/// Rule 7: `next / T` in whole microseconds with `f64` division, truncated;
/// 0 unless `next > -T`. Below 1 µs per request, in nanoseconds.
fn remaining(next: i128, t: i128) -> i64 {
    if next <= -t {
        return 0;
    }
    let us = NANOS_PER_US as i128;
    let t_us = t / us;
    if t_us == 0 {
        return (next / t).clamp(0, i64::MAX as i128) as i64;
    }
    ((next / us) as f64 / t_us as f64) as i64
}

#[cfg(test)]
mod tests {
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
}
