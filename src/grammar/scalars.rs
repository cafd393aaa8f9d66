//! The scalars of every grammar: counts, durations, options given once.

use crate::bounds::MAX_DURATION_MS;
use crate::error::RlError;
use crate::facts::DURATION_UNITS_MS;
use crate::units::NANOS_PER_MS;

pub fn set_once<T>(
    slot: &mut Option<T>,
    name: &'static str,
    value: Option<&&[u8]>,
    parse: impl Fn(&[u8]) -> Result<T, RlError>,
) -> Result<(), RlError> {
    if slot.is_some() {
        return Err(RlError::RepeatedOption(name));
    }
    let value = value.ok_or_else(|| RlError::MissingValue(name))?;
    *slot = Some(parse(value)?);
    Ok(())
}

pub fn parse_count(name: &'static str, bytes: &[u8], max: u64) -> Result<u64, RlError> {
    parse_count_from(name, bytes, 1, max)
}

pub fn parse_count_from(
    name: &'static str,
    bytes: &[u8],
    min: u64,
    max: u64,
) -> Result<u64, RlError> {
    parse_digits(bytes)
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| RlError::BadInteger { name, min, max })
}

/// A duration in nanoseconds: digits with an optional case-insensitive unit
/// (`ms`, `s`, `m`, `h`, `d`; none means seconds: facts/rl.toml's `durations`),
/// from 1 ms to 3650 days.
pub fn parse_duration(name: &'static str, bytes: &[u8]) -> Result<u64, RlError> {
    let split = bytes
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(bytes.len());
    let (digits, unit) = bytes.split_at(split);
    let (_, unit_ms) = DURATION_UNITS_MS
        .iter()
        .find(|(suffix, _)| unit.eq_ignore_ascii_case(suffix.as_bytes()))
        .ok_or_else(|| RlError::BadDuration(name))?;
    parse_digits(digits)
        .and_then(|n| n.checked_mul(*unit_ms))
        .filter(|ms| (1..=MAX_DURATION_MS).contains(ms))
        .map(|ms| ms * NANOS_PER_MS)
        .ok_or_else(|| RlError::BadDuration(name))
}

/// A non-empty run of ASCII digits that fits a `u64`.
fn parse_digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}
