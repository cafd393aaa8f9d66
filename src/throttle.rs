//! `CL.THROTTLE key max_burst count period [quantity]`: a drop-in for
//! redis-cell's command, with its replies and its stored state (see
//! [`crate::algorithm::cell`] for the exact rules and their sources).
//!
//! Unlike redis-cell, every argument is range-checked (an `ERR` naming it, never
//! a crash), a key holding anything but a decimal TAT is an error left untouched,
//! and an admitted request replicates its effect, `SET key <tat_ns> PXAT <ms>`,
//! instead of the time-dependent command.

use std::os::raw::c_int;

use redis_module::raw;

use crate::algorithm::cell::{self, Cell, CellError};
use crate::algorithm::expire_ms;
use crate::args::{MAX_COST, MAX_COUNT};
use crate::codec::parse_u64;
use crate::command::{args, guarded, with_bytes, Reply};
use crate::error::RlError;
use crate::store::{Held, Key};
use crate::{clock, stats};

const LABEL: &str = "CL.THROTTLE";
const COMMAND: &str = "cl.throttle";

/// The longest `period`, in seconds: 3650 days, like every duration of the module.
pub const MAX_PERIOD_S: u64 = 3650 * 86_400;

/// The handler registered as `cl.throttle`.
pub extern "C" fn command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    guarded(ctx, LABEL, || {
        run(ctx, args(argv, argc)).map(Reply::Decision)
    })
}

fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<[i64; 5], RlError> {
    if !(5..=6).contains(&argv.len()) {
        return Err(RlError::WrongArity(COMMAND));
    }
    let (cell, quantity) = with_bytes(&argv[2..], parse)?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(LABEL))?;
    let stored = match key.held() {
        Held::Empty => None,
        // The state is a decimal TAT, at most 20 bytes: it must be read.
        Held::ShortString => {
            let bytes = key.short_string().ok_or(RlError::WrongType)?;
            Some(parse_u64(bytes).ok_or(RlError::ForeignValue(LABEL))?)
        }
        Held::String(_) => return Err(RlError::ForeignValue(LABEL)),
        Held::Zset | Held::Other => return Err(RlError::WrongType),
    };
    let out = cell::decide(&cell, stored, now, quantity);
    let reply = out.reply();
    stats::decision(LABEL, reply[0] == 0, quantity);
    if let Some(tat) = out.new_tat_ns {
        key.write_string(tat.to_string().as_bytes(), expire_ms(tat.into()));
    }
    Ok(reply)
}

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
            CellError::ZeroRate => {
                "count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate"
            }
            CellError::BurstTooLong => {
                "max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days"
            }
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
