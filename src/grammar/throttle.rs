//! `CL.THROTTLE key max_burst count period [quantity]`, as redis-cell reads
//! its arguments, each range-checked (an `ERR` naming it, never a crash).

use crate::algorithm::cell::{Cell, CellError};
use crate::bounds::{MAX_COST, MAX_COUNT, MAX_PERIOD_S};
use crate::decimal::parse_u64;
use crate::error::RlError;
use crate::facts::messages;

/// `max_burst count period [quantity]`, as redis-cell reads them (integers;
/// `period` in seconds; `quantity` 1 by default), each within its range.
pub fn parse(params: &[&[u8]]) -> Result<(Cell, u64), RlError> {
    let max_burst = integer("max_burst", params[0], 0, MAX_COUNT)?;
    let count = integer("count", params[1], 1, MAX_COUNT)?;
    let period = integer("period (seconds)", params[2], 1, MAX_PERIOD_S)?;
    let quantity = match params.get(3) {
        Some(bytes) => integer("quantity", bytes, 0, MAX_COST)?,
        None => 1,
    };
    let cell = Cell::new(max_burst, count, period).map_err(|e| {
        RlError::Syntax(match e {
            CellError::ZeroRate => messages::THROTTLE_ZERO_RATE,
            CellError::BurstTooLong => messages::THROTTLE_BURST,
        })
    })?;
    Ok((cell, quantity))
}

/// A decimal integer in `min..=max` (digits only: no sign, no spaces).
fn integer(name: &'static str, bytes: &[u8], min: u64, max: u64) -> Result<u64, RlError> {
    let bad = RlError::BadInteger { name, min, max };
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return Err(bad);
    }
    parse_u64(bytes)
        .filter(|v| (min..=max).contains(v))
        .ok_or(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &str) -> Result<(Cell, u64), RlError> {
        let v: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
        parse(&v)
    }

    #[test]
    fn parses_redis_cell_arguments() {
        let (cell, q) = p("15 30 60").unwrap();
        assert_eq!(
            (cell.limit(), cell.emission_ns(), q),
            (16, 2_000_000_000, 1)
        );
        assert_eq!(p("0 1 1 0").unwrap().1, 0);
        assert_eq!(p("0 1 1 1000000000000").unwrap().1, MAX_COST);
        assert_eq!(
            p("1000000000000 1000000000 1").unwrap().0.limit(),
            MAX_COUNT + 1
        );
    }

    #[test]
    fn errors_name_the_argument_and_range() {
        let bad = |name, min, max| Err(RlError::BadInteger { name, min, max });
        for words in ["-1 1 1", "+1 1 1", "1000000000001 1 1", " 1 1"] {
            assert_eq!(p(words), bad("max_burst", 0, MAX_COUNT), "{words}");
        }
        for words in ["1 0 1", "1 x 1", "1 1.5 1"] {
            assert_eq!(p(words), bad("count", 1, MAX_COUNT), "{words}");
        }
        for words in ["1 1 0", "1 1 1s", "1 1 315360001", "1 1 -60"] {
            assert_eq!(
                p(words),
                bad("period (seconds)", 1, MAX_PERIOD_S),
                "{words}"
            );
        }
        for words in ["1 1 1 -1", "1 1 1 99999999999999999999999", "1 1 1 1e3"] {
            assert_eq!(p(words), bad("quantity", 0, MAX_COST), "{words}");
        }
        assert!(matches!(p("1 2000000000 1"), Err(RlError::Syntax(m)) if m.starts_with("count")));
        assert!(matches!(p("3650 1 86400"), Err(RlError::Syntax(m)) if m.starts_with("max_burst")));
        assert!(p("3649 1 86400").is_ok());
    }
}
