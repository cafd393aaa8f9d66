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
#[path = "cell_tests.rs"]
mod tests;
