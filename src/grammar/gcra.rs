//! `GCRA key max_burst tokens_per_period period [TOKENS count]`: Redis's
//! designed command (redis/redis `src/commands/gcra.json`, `src/gcra.c`), read
//! in three steps that keep Redis's errors where Redis has one:
//!
//! 1. [`parse`]: Redis's grammar and its error texts, in its order (arity,
//!    `max_burst`, `tokens_per_period`, `period`, `TOKENS`);
//! 2. [`GcraArgs::overflow`]: Redis's own overflow errors, computed as `gcra.c`
//!    computes them (the emission interval in whole microseconds, `i64`);
//! 3. [`GcraArgs::request`]: the module's bounds (`crate::bounds`), those of
//!    `RL.GCRA`, and the `RL.GCRA` request the command spends.
//!
//! So an input Redis refuses gets Redis's error, and one Redis accepts but the
//! module's bounds refuse gets the module's error naming the argument.

use crate::algorithm::gcra::Gcra;
use crate::bounds::{MAX_COST, MAX_COUNT, MAX_DURATION_MS};
use crate::error::RlError;
use crate::grammar::{Charge, Limiter, Request};
use crate::units::NANOS_PER_MS;

/// Redis's replies to bad input, word for word (`object.c`'s helpers and `gcra.c`).
pub const NOT_POSITIVE: &str = "value is out of range, must be positive";
pub const NOT_INTEGER: &str = "value is not an integer or out of range";
pub const BELOW_ONE: &str = "value is out of range, value must between 1 and 9223372036854775807";
pub const NOT_FLOAT: &str = "value is not a valid float";
pub const PERIOD_RANGE: &str = "period must be > 0 and < 1e12";
pub const SYNTAX: &str = "syntax error";
pub const MISSING_TOKENS: &str = "Missing TOKENS value";
pub const TOKENS_OVERFLOW: &str = "GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow";
pub const BURST_OVERFLOW: &str = "GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow";
/// The module's bound on `period` (Redis accepts up to 10^12 seconds).
pub const PERIOD_TOO_LONG: &str = "period must be at most 315360000 seconds (3650 days)";

const _: () = assert!(MAX_DURATION_MS == 315_360_000_000);

/// The arguments as Redis reads them, each within Redis's range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcraArgs {
    /// `0..=i64::MAX`.
    pub max_burst: u64,
    /// `1..=i64::MAX`.
    pub tokens_per_period: u64,
    /// Seconds, `> 0` and `< 10^12`, as Redis's double.
    pub period: f64,
    /// The same period in nanoseconds, exactly from its digits (rounded to the
    /// nearest nanosecond).
    pub period_ns: u128,
    /// `TOKENS`: `1..=i64::MAX`, 1 by default.
    pub tokens: u64,
}

/// Parses the arguments after the key with Redis's errors; `params` holds 3
/// to 5 arguments (the caller checks the arity).
pub fn parse(params: &[&[u8]]) -> Result<GcraArgs, RlError> {
    let max_burst = redis_long(params[0]).filter(|v| *v >= 0);
    let max_burst = max_burst.ok_or_else(|| RlError::Syntax(NOT_POSITIVE))? as u64;
    let tokens_per_period = at_least_one(params[1])?;
    let (period, period_ns) = parse_period(params[2])?;
    let tokens = match params.get(3) {
        None => 1,
        Some(word) if !word.eq_ignore_ascii_case(b"TOKENS") => return Err(RlError::Syntax(SYNTAX)),
        Some(_) => at_least_one(
            params
                .get(4)
                .ok_or_else(|| RlError::Syntax(MISSING_TOKENS))?,
        )?,
    };
    Ok(GcraArgs {
        max_burst,
        tokens_per_period,
        period,
        period_ns,
        tokens,
    })
}

impl GcraArgs {
    /// Redis's overflow errors at `now_us` (microseconds since the epoch), as
    /// `gcra.c` computes them: the emission interval rounded to the nearest
    /// microsecond (at least 1), times `TOKENS`, times `max_burst + 1`, and
    /// `now + TOKENS * interval`, each within an `i64`. (Redis adds the
    /// increment to the later of now and the stored TAT; the module checks it
    /// against now, before reading the key: where a stored TAT lies ahead, a
    /// request of nearly 292,000 years that Redis refuses is decided instead.)
    pub fn overflow(&self, now_us: i64) -> Option<RlError> {
        let period_us = self.period * 1_000_000.0;
        // `as` saturates where C's conversion would be undefined (never: period < 10^12).
        let interval = ((period_us / self.tokens_per_period as f64 + 0.5) as i64).max(1);
        let tokens = self.tokens as i64; // <= i64::MAX by parse
        let limit = (self.max_burst as i64).saturating_add(1);
        if interval > i64::MAX / tokens {
            return Some(RlError::Syntax(TOKENS_OVERFLOW));
        }
        if interval > i64::MAX / limit {
            return Some(RlError::Syntax(BURST_OVERFLOW));
        }
        if i64::MAX - now_us.max(0) < interval * tokens {
            return Some(RlError::Syntax(TOKENS_OVERFLOW));
        }
        None
    }

    /// The `RL.GCRA` request these arguments make, within the module's bounds:
    /// `RL.GCRA key <tokens_per_period> <period> BURST <max_burst + 1> COST <TOKENS>`.
    pub fn request(&self) -> Result<Request, RlError> {
        let bound = |name, value: u64, min, max| match value <= max {
            true => Ok(value),
            false => Err(RlError::BadInteger { name, min, max }),
        };
        let max_burst = bound("max_burst", self.max_burst, 0, MAX_COUNT)?;
        let rate = bound("tokens_per_period", self.tokens_per_period, 1, MAX_COUNT)?;
        let tokens = bound("TOKENS", self.tokens, 1, MAX_COST)?;
        if self.period_ns > MAX_DURATION_MS as u128 * NANOS_PER_MS as u128 {
            return Err(RlError::Syntax(PERIOD_TOO_LONG));
        }
        let gcra = Gcra::new(rate, self.period_ns as u64, max_burst + 1).ok_or_else(|| {
            RlError::RateTooHigh {
                rate: "tokens_per_period",
                period: "period",
            }
        })?;
        Ok(Request {
            limiter: Limiter::Gcra(gcra),
            cost: tokens,
            charge: Charge::Cost,
            peek: false,
            block: None,
            penalty: None,
        })
    }
}

/// `getRangeLongFromObjectOrReply(c, o, 1, LONG_MAX, &v, NULL)`.
fn at_least_one(bytes: &[u8]) -> Result<u64, RlError> {
    match redis_long(bytes) {
        None => Err(RlError::Syntax(NOT_INTEGER)),
        Some(v) if v < 1 => Err(RlError::Syntax(BELOW_ONE)),
        Some(v) => Ok(v as u64),
    }
}

/// Redis's `string2ll`: an optional `-`, then `0` alone or digits not starting
/// with `0`, fitting an `i64`, in at most 20 bytes.
pub fn redis_long(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    if !matches!(digits.first(), Some(b'1'..=b'9')) {
        return None;
    }
    // At most 20 digits: an i128 holds them all.
    let magnitude = digits.iter().try_fold(0i128, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + i128::from(b - b'0'))
    })?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// `period` as Redis reads it (`getDoubleFromObjectOrReply`: fast_float's
/// grammar, `nan` refused), then `0 < period < 10^12`; with its exact value in
/// nanoseconds.
fn parse_period(bytes: &[u8]) -> Result<(f64, u128), RlError> {
    // Whole seconds, the common case: at most 15 digits are exact in a double.
    if (1..=15).contains(&bytes.len()) && bytes.iter().all(u8::is_ascii_digit) {
        let seconds = bytes
            .iter()
            .fold(0u64, |acc, &b| acc * 10 + u64::from(b - b'0'));
        return match seconds {
            0 => Err(RlError::Syntax(PERIOD_RANGE)),
            s if s >= 1_000_000_000_000 => Err(RlError::Syntax(PERIOD_RANGE)),
            s => Ok((s as f64, u128::from(s) * 1_000_000_000)),
        };
    }
    let text = std::str::from_utf8(bytes).map_err(|_| RlError::Syntax(NOT_FLOAT))?;
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let infinite = ["inf", "infinity"]
        .iter()
        .any(|w| unsigned.eq_ignore_ascii_case(w));
    if !infinite && !is_decimal(unsigned) {
        return Err(RlError::Syntax(NOT_FLOAT));
    }
    let value: f64 = text.parse().map_err(|_| RlError::Syntax(NOT_FLOAT))?;
    if !(value > 0.0 && value < 1e12) {
        return Err(RlError::Syntax(PERIOD_RANGE));
    }
    Ok((value, decimal_ns(unsigned)))
}

/// fast_float's decimal form: digits with an optional fraction (at least one
/// digit in all), then an optional exponent `e`/`E`, an optional sign and digits.
fn is_decimal(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.map_or(true, |e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// The nanoseconds in `text` seconds (a positive [`is_decimal`] below 10^12),
/// rounded to the nearest, half up. Significant digits beyond the 30th are
/// dropped: they weigh less than 10^-8 ns.
fn decimal_ns(text: &str) -> u128 {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let (mut value, mut scale, mut kept) = (0u128, exponent.clamp(-400, 400) + 9, 0);
    for (i, b) in int.bytes().chain(frac.bytes()).enumerate() {
        if i >= int.len() {
            scale -= 1; // a fraction digit
        }
        if kept == 30 {
            scale += 1; // dropped: the digits kept stand for ten times more
            continue;
        }
        value = value * 10 + u128::from(b - b'0');
        kept += usize::from(value > 0);
    }
    if scale >= 0 {
        // value < 10^30 and value * 10^scale < 10^21 (period < 10^12 s).
        return value.saturating_mul(10u128.saturating_pow(scale as u32));
    }
    match 10u128.checked_pow(scale.unsigned_abs() as u32) {
        Some(divisor) => (value + divisor / 2) / divisor,
        None => 0, // below 10^-38 of the digits: less than half a nanosecond
    }
}

#[cfg(test)]
#[path = "gcra_tests.rs"]
mod tests;
