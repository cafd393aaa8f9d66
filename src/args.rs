//! The one parser for the shared grammar:
//! `RL.<ALGO> key <positional parameters> [COST n | REFUND n] [PEEK] [BLOCK ms]`
//! (plus `BURST b` for GCRA). Options are read left to right, so the first bad
//! one is the one an error names, whatever follows it. It works on the raw
//! argument bytes and allocates nothing on success.

use crate::algorithm::fixed::Fixed;
use crate::algorithm::gcra::Gcra;
use crate::algorithm::leaky::Leaky;
use crate::algorithm::sliding::Sliding;
use crate::algorithm::sliding_log::SlidingLog;
use crate::algorithm::token_bucket::TokenBucket;
use crate::algorithm::NANOS_PER_MS;
use crate::error::{sanitize, RlError};

pub const MAX_COUNT: u64 = 1_000_000_000_000;
pub const MAX_COST: u64 = 1_000_000_000_000;
pub const MAX_DURATION_MS: u64 = 3650 * 86_400_000;
/// The longest `BLOCK`, in milliseconds (as long as the longest duration).
pub const MAX_BLOCK_MS: u64 = MAX_DURATION_MS;
/// The default cap on `RL.SLIDINGLOG`'s limit (memory is O(limit) per key).
pub const DEFAULT_SLIDING_LOG_MAX: u64 = 100_000;

/// The decision commands, one per algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gcra,
    TokenBucket,
    Leaky,
    Sliding,
    SlidingLog,
    Fixed,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Gcra,
        Kind::TokenBucket,
        Kind::Leaky,
        Kind::Sliding,
        Kind::SlidingLog,
        Kind::Fixed,
    ];

    /// The command's name as Redis reports it.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Gcra => "rl.gcra",
            Kind::TokenBucket => "rl.tokenbucket",
            Kind::Leaky => "rl.leaky",
            Kind::Sliding => "rl.sliding",
            Kind::SlidingLog => "rl.slidinglog",
            Kind::Fixed => "rl.fixed",
        }
    }

    /// The command's name as users write it (in error messages).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Gcra => "RL.GCRA",
            Kind::TokenBucket => "RL.TOKENBUCKET",
            Kind::Leaky => "RL.LEAKY",
            Kind::Sliding => "RL.SLIDING",
            Kind::SlidingLog => "RL.SLIDINGLOG",
            Kind::Fixed => "RL.FIXED",
        }
    }

    /// The algorithm's name in an `RL.ALL` clause (`GCRA`, `TOKENBUCKET`, ...).
    pub fn tag_upper(self) -> &'static str {
        &self.label()[3..]
    }

    /// Names of the positional parameters after the key.
    fn positionals(self) -> &'static [&'static str] {
        match self {
            Kind::Gcra => &["limit", "period"],
            Kind::TokenBucket => &["capacity", "refill", "period"],
            Kind::Leaky => &["capacity", "leak", "period"],
            Kind::Sliding | Kind::SlidingLog | Kind::Fixed => &["limit", "window"],
        }
    }

    /// The options `form` accepts for this algorithm, as an error lists them:
    /// exactly those the loop in [`parse_form`] takes, no more, no fewer.
    fn expected_options(self, form: Form) -> &'static str {
        match (self, form) {
            (Kind::Gcra, Form::Command) => "BURST, COST, REFUND, PEEK or BLOCK",
            (_, Form::Command) => "COST, REFUND, PEEK or BLOCK",
            (Kind::Gcra, Form::Clause | Form::Peek) => "BURST or COST",
            (_, Form::Clause | Form::Peek) => "COST",
        }
    }

    /// The number of arguments including the command name and the key.
    pub fn min_argc(self) -> usize {
        2 + self.positionals().len()
    }
}

/// A parsed algorithm with valid parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    Gcra(Gcra),
    TokenBucket(TokenBucket),
    Leaky(Leaky),
    Sliding(Sliding),
    SlidingLog(SlidingLog),
    Fixed(Fixed),
}

/// A parsed decision request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub limiter: Limiter,
    /// Units to consume, or with `refund` to give back.
    pub cost: u64,
    /// `REFUND n`: give `cost` units back instead of consuming them.
    pub refund: bool,
    pub peek: bool,
    /// `BLOCK ms`, if given (whether the call may wait is `wait`'s to decide).
    pub block: Option<u64>,
}

/// Where the arguments come from: a command of their own, or one clause of
/// `RL.ALL` (which takes `COST` and `BURST` only; `PEEK` applies to the whole call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `RL.<ALGO>`: every option, `BLOCK ms` included (read in its place;
    /// waiting is `wait`'s).
    Command,
    /// An `RL.ALL` clause: `BURST` and `COST` only (`RL.ALL` refuses `BLOCK`).
    Clause,
    /// `RL.PEEK ALGO key params`: the parameters, `BURST` and `COST` only.
    Peek,
}

/// Limits that operators may configure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub sliding_log_max: u64,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            sliding_log_max: DEFAULT_SLIDING_LOG_MAX,
        }
    }
}

/// Parses the arguments after the key (`params[0]` is the first positional).
pub fn parse(kind: Kind, params: &[&[u8]], caps: Caps) -> Result<Request, RlError> {
    parse_form(kind, params, caps, Form::Command)
}

/// Parses a command's or a clause's parameters.
pub fn parse_form(
    kind: Kind,
    params: &[&[u8]],
    caps: Caps,
    form: Form,
) -> Result<Request, RlError> {
    let names = kind.positionals();
    if params.len() < names.len() {
        return Err(match form {
            Form::Command => RlError::WrongArity(kind.command()),
            Form::Clause => RlError::ClauseArity(kind.tag_upper()),
            Form::Peek => RlError::WrongArity("rl.peek"),
        });
    }
    let (positional, options) = params.split_at(names.len());
    let count = |i: usize| parse_count(names[i], positional[i], MAX_COUNT);
    let duration = |i: usize| parse_duration(names[i], positional[i]);

    let mut cost = None;
    let mut refund = None;
    let mut burst = None;
    let mut block = None;
    let mut peek = false;
    let mut rest = options.iter();
    let command = form == Form::Command;
    while let Some(&option) = rest.next() {
        if option.eq_ignore_ascii_case(b"COST") {
            set_once(&mut cost, "COST", rest.next(), |v| {
                parse_count_from("COST", v, 0, MAX_COST)
            })?;
        } else if command && option.eq_ignore_ascii_case(b"REFUND") {
            set_once(&mut refund, "REFUND", rest.next(), |v| {
                parse_count_from("REFUND", v, 0, MAX_COST)
            })?;
        } else if command && option.eq_ignore_ascii_case(b"PEEK") {
            if peek {
                return Err(RlError::RepeatedOption("PEEK"));
            }
            peek = true;
        } else if command && option.eq_ignore_ascii_case(b"BLOCK") {
            set_once(&mut block, "BLOCK", rest.next(), parse_block)?;
        } else if kind == Kind::Gcra && option.eq_ignore_ascii_case(b"BURST") {
            set_once(&mut burst, "BURST", rest.next(), |v| {
                parse_count("BURST", v, MAX_COUNT)
            })?;
        } else {
            let option = sanitize(option);
            let expected = kind.expected_options(form);
            return Err(match form {
                Form::Command => RlError::UnknownOption {
                    option,
                    command: kind.command(),
                    expected,
                },
                Form::Peek => RlError::UnknownOption {
                    option,
                    command: "rl.peek",
                    expected,
                },
                Form::Clause => RlError::UnknownClauseOption {
                    option,
                    clause: kind.tag_upper(),
                    expected,
                },
            });
        }
    }
    if cost.is_some() && refund.is_some() {
        return Err(RlError::CostWithRefund);
    }

    // Counts are at least 1 and durations whole milliseconds by now, so the
    // constructors can refuse only a rate or a window.
    let rate = || RlError::RateTooHigh {
        rate: names[names.len() - 2],
        period: names[names.len() - 1],
    };
    let window = || RlError::BadDuration(names[1]);
    let limiter = match kind {
        Kind::Gcra => {
            Limiter::Gcra(Gcra::new(count(0)?, duration(1)?, burst.unwrap_or(1)).ok_or_else(rate)?)
        }
        Kind::TokenBucket => Limiter::TokenBucket(
            TokenBucket::new(count(0)?, count(1)?, duration(2)?).ok_or_else(rate)?,
        ),
        Kind::Leaky => {
            Limiter::Leaky(Leaky::new(count(0)?, count(1)?, duration(2)?).ok_or_else(rate)?)
        }
        Kind::Sliding => {
            Limiter::Sliding(Sliding::new(count(0)?, duration(1)?).ok_or_else(window)?)
        }
        Kind::SlidingLog => Limiter::SlidingLog(
            SlidingLog::new(
                parse_count(names[0], positional[0], caps.sliding_log_max)?,
                duration(1)?,
            )
            .ok_or_else(window)?,
        ),
        Kind::Fixed => Limiter::Fixed(Fixed::new(count(0)?, duration(1)?).ok_or_else(window)?),
    };
    Ok(Request {
        limiter,
        cost: refund.or(cost).unwrap_or(1),
        refund: refund.is_some(),
        peek,
        block,
    })
}

pub(crate) fn set_once(
    slot: &mut Option<u64>,
    name: &'static str,
    value: Option<&&[u8]>,
    parse: impl Fn(&[u8]) -> Result<u64, RlError>,
) -> Result<(), RlError> {
    if slot.is_some() {
        return Err(RlError::RepeatedOption(name));
    }
    let value = value.ok_or(RlError::MissingValue(name))?;
    *slot = Some(parse(value)?);
    Ok(())
}

/// `BLOCK ms`: milliseconds from 0 (no time limit) to [`MAX_BLOCK_MS`].
pub fn parse_block(bytes: &[u8]) -> Result<u64, RlError> {
    parse_count_from("BLOCK", bytes, 0, MAX_BLOCK_MS)
}

pub(crate) fn parse_count(name: &'static str, bytes: &[u8], max: u64) -> Result<u64, RlError> {
    parse_count_from(name, bytes, 1, max)
}

fn parse_count_from(name: &'static str, bytes: &[u8], min: u64, max: u64) -> Result<u64, RlError> {
    parse_digits(bytes)
        .filter(|v| (min..=max).contains(v))
        .ok_or(RlError::BadInteger { name, min, max })
}

/// A duration in nanoseconds: digits with an optional case-insensitive unit
/// (`ms`, `s`, `m`, `h`, `d`; none means seconds), from 1 ms to 3650 days.
pub(crate) fn parse_duration(name: &'static str, bytes: &[u8]) -> Result<u64, RlError> {
    let split = bytes
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(bytes.len());
    let (digits, unit) = bytes.split_at(split);
    const UNITS: [(&[u8], u64); 6] = [
        (b"", 1_000),
        (b"s", 1_000),
        (b"ms", 1),
        (b"m", 60_000),
        (b"h", 3_600_000),
        (b"d", 86_400_000),
    ];
    let (_, unit_ms) = UNITS
        .iter()
        .find(|(suffix, _)| unit.eq_ignore_ascii_case(suffix))
        .ok_or(RlError::BadDuration(name))?;
    parse_digits(digits)
        .and_then(|n| n.checked_mul(*unit_ms))
        .filter(|ms| (1..=MAX_DURATION_MS).contains(ms))
        .map(|ms| ms * NANOS_PER_MS)
        .ok_or(RlError::BadDuration(name))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: Kind, args: &str) -> Result<Request, RlError> {
        let v: Vec<&[u8]> = args.split_whitespace().map(str::as_bytes).collect();
        parse(kind, &v, Caps::default())
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn durations_with_units() {
        for (text, ns) in [
            ("60", 60 * SEC),
            ("1500ms", 1_500_000_000),
            ("1500MS", 1_500_000_000),
            ("1m", 60 * SEC),
            ("24h", 86_400 * SEC),
            ("2D", 2 * 86_400 * SEC),
            ("1ms", 1_000_000),
            ("3650d", 3650 * 86_400 * SEC),
        ] {
            assert_eq!(parse_duration("period", text.as_bytes()), Ok(ns), "{text}");
        }
        for bad in [
            "",
            "0",
            "0ms",
            "3651d",
            "1.5s",
            "-1",
            "1 s",
            "s",
            "1w",
            "99999999999999999999999",
        ] {
            assert_eq!(
                parse_duration("period", bad.as_bytes()),
                Err(RlError::BadDuration("period")),
                "{bad}"
            );
        }
    }

    #[test]
    fn gcra_with_options_in_any_order_and_case() {
        let r = p(Kind::Gcra, "10 1s peek Cost 3 burst 5").unwrap();
        assert_eq!(
            r,
            Request {
                limiter: Limiter::Gcra(Gcra::new(10, SEC, 5).unwrap()),
                cost: 3,
                refund: false,
                peek: true,
                block: None
            }
        );
        let d = p(Kind::Gcra, "10 1s").unwrap();
        assert_eq!((d.cost, d.peek), (1, false));
        assert!(matches!(d.limiter, Limiter::Gcra(g) if g.burst() == 1));
    }

    #[test]
    fn errors_name_the_argument_and_range() {
        assert_eq!(p(Kind::Gcra, "10"), Err(RlError::WrongArity("rl.gcra")));
        assert_eq!(
            p(Kind::Fixed, "0 1s"),
            Err(RlError::BadInteger {
                name: "limit",
                min: 1,
                max: MAX_COUNT
            })
        );
        assert_eq!(
            p(Kind::TokenBucket, "5 1000000000001 1s"),
            Err(RlError::BadInteger {
                name: "refill",
                min: 1,
                max: MAX_COUNT
            })
        );
        assert_eq!(
            p(Kind::Fixed, "5 1s COST -1"),
            Err(RlError::BadInteger {
                name: "COST",
                min: 0,
                max: MAX_COST
            })
        );
        assert_eq!(
            p(Kind::Fixed, "5 1s COST"),
            Err(RlError::MissingValue("COST"))
        );
        assert_eq!(
            p(Kind::Fixed, "5 1s COST 1 cost 2"),
            Err(RlError::RepeatedOption("COST"))
        );
        assert_eq!(
            p(Kind::Fixed, "5 1s PEEK PEEK"),
            Err(RlError::RepeatedOption("PEEK"))
        );
        assert!(matches!(
            p(Kind::Fixed, "5 1s BURST 2"),
            Err(RlError::UnknownOption {
                command: "rl.fixed",
                ..
            })
        ));
        assert_eq!(
            p(Kind::SlidingLog, "100001 1s"),
            Err(RlError::BadInteger {
                name: "limit",
                min: 1,
                max: DEFAULT_SLIDING_LOG_MAX
            })
        );
        assert_eq!(
            p(Kind::Leaky, "5 1 nan"),
            Err(RlError::BadDuration("period"))
        );
    }

    #[test]
    fn refund_replaces_cost() {
        let r = p(Kind::Fixed, "5 1s REFUND 2").unwrap();
        assert_eq!((r.cost, r.refund), (2, true));
        assert_eq!(
            p(Kind::Fixed, "5 1s REFUND 1 COST 1"),
            Err(RlError::CostWithRefund)
        );
        assert_eq!(
            p(Kind::Fixed, "5 1s REFUND"),
            Err(RlError::MissingValue("REFUND"))
        );
        let clause = parse_form(
            Kind::Fixed,
            &[b"5", b"1s", b"REFUND", b"1"],
            Caps::default(),
            Form::Clause,
        );
        assert_eq!(
            clause,
            Err(RlError::UnknownClauseOption {
                option: "REFUND".into(),
                clause: "FIXED",
                expected: "COST",
            })
        );
    }

    fn form(kind: Kind, args: &str, form: Form) -> Result<Request, RlError> {
        let v: Vec<&[u8]> = args.split_whitespace().map(str::as_bytes).collect();
        parse_form(kind, &v, Caps::default(), form)
    }

    fn text(r: Result<Request, RlError>) -> String {
        r.expect_err("an error").to_string()
    }

    #[test]
    fn block_is_an_option_of_the_commands_read_in_its_place() {
        let r = p(Kind::Gcra, "10 1s BLOCK 0 COST 2 block 315360000000").map(|_| ());
        assert_eq!(r, Err(RlError::RepeatedOption("BLOCK")));
        assert_eq!(
            p(Kind::Gcra, "10 1s BLOCK 315360000000 COST 2")
                .unwrap()
                .cost,
            2
        );
        assert!(p(Kind::Fixed, "1 1s peek block 5").unwrap().peek);
        for (args, error) in [
            ("1 1s BLOCK", "ERR option BLOCK needs a value"),
            (
                "1 1s BLOCK -1",
                "ERR BLOCK must be an integer from 0 to 315360000000",
            ),
            (
                "1 1s BLOCK 315360000001",
                "ERR BLOCK must be an integer from 0 to 315360000000",
            ),
            (
                "1 1s BLOCK 1 BLOCK 1",
                "ERR option BLOCK given more than once",
            ),
            // A value is a value: COST's, even when it reads BLOCK.
            (
                "1 1s COST BLOCK 5",
                "ERR COST must be an integer from 0 to 1000000000000",
            ),
            (
                "1 1s BLOCK COST 5",
                "ERR BLOCK must be an integer from 0 to 315360000000",
            ),
            // Left to right: the first bad option is the one named.
            (
                "1 1s FOO BLOCK x",
                "ERR unknown option 'FOO' for 'rl.fixed' (expected COST, REFUND, PEEK or BLOCK)",
            ),
            (
                "1 1s COST x BLOCK x",
                "ERR COST must be an integer from 0 to 1000000000000",
            ),
            (
                "1 1s BLOCK x COST x",
                "ERR BLOCK must be an integer from 0 to 315360000000",
            ),
            // Options before the parameters, as without BLOCK.
            (
                "0 1s BLOCK x",
                "ERR BLOCK must be an integer from 0 to 315360000000",
            ),
            (
                "0 1s BLOCK 5",
                "ERR limit must be an integer from 1 to 1000000000000",
            ),
        ] {
            assert_eq!(text(p(Kind::Fixed, args)), error, "{args}");
        }
        assert_eq!(
            text(p(Kind::Gcra, "1 1s BURST BLOCK")),
            "ERR BURST must be an integer from 1 to 1000000000000"
        );
    }

    #[test]
    fn each_form_lists_exactly_the_options_it_takes() {
        for (kind, args, f, error) in [
            (Kind::Gcra, "1 1s XYZ", Form::Command, "ERR unknown option 'XYZ' for 'rl.gcra' (expected BURST, COST, REFUND, PEEK or BLOCK)"),
            (Kind::Sliding, "1 1s BURST 2", Form::Command, "ERR unknown option 'BURST' for 'rl.sliding' (expected COST, REFUND, PEEK or BLOCK)"),
            (Kind::Gcra, "1 1s BLOCK 5", Form::Peek, "ERR unknown option 'BLOCK' for 'rl.peek' (expected BURST or COST)"),
            (Kind::Fixed, "1 1s block 5", Form::Peek, "ERR unknown option 'block' for 'rl.peek' (expected COST)"),
            (Kind::Fixed, "1 1s PEEK", Form::Peek, "ERR unknown option 'PEEK' for 'rl.peek' (expected COST)"),
            (Kind::TokenBucket, "1 1 1s REFUND 1", Form::Peek, "ERR unknown option 'REFUND' for 'rl.peek' (expected COST)"),
            (Kind::Fixed, "1 1s BLOCK 5", Form::Clause, "ERR unknown option 'BLOCK' in RL.ALL clause FIXED (expected COST)"),
            (Kind::Gcra, "1 1s PEEK", Form::Clause, "ERR unknown option 'PEEK' in RL.ALL clause GCRA (expected BURST or COST)"),
            (Kind::Leaky, "1 1 1s REFUND 1", Form::Clause, "ERR unknown option 'REFUND' in RL.ALL clause LEAKY (expected COST)"),
        ] {
            assert_eq!(text(form(kind, args, f)), error, "{args}");
        }
        // What the lists name, each form takes.
        assert!(form(Kind::Gcra, "1 1s BURST 2 COST 1", Form::Peek).is_ok());
        assert!(form(Kind::Gcra, "1 1s BURST 2 COST 1", Form::Clause).is_ok());
        assert!(form(
            Kind::Gcra,
            "1 1s BURST 2 REFUND 1 PEEK BLOCK 1",
            Form::Command
        )
        .is_ok());
    }

    #[test]
    fn cost_zero_is_valid() {
        assert_eq!(p(Kind::Sliding, "5 1m COST 0").unwrap().cost, 0);
    }
}
