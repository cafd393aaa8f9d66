//! The shared form: `RL.<ALGO> key <positional parameters> [COST n | REFUND n |
//! DEBIT n] [PEEK] [BLOCK ms]` (plus `BURST b` for GCRA), an `RL.ALL` clause and an
//! `RL.PEEK` call. Options are read left to right, so the first bad one is the
//! one an error names, whatever follows it. It works on the raw argument bytes
//! and allocates nothing on success.

use super::amount::{Amount, Charge};
use super::block::parse_block;
use super::limiter::{CalendarOptions, Limiter, Params};
use super::scalars::{parse_count, parse_duration, set_once};
use super::Kind;
use crate::algorithm::penalty::Rule;
use crate::bounds::MAX_COUNT;
use crate::config::Caps;
use crate::error::{sanitize, RlError};
use crate::units::{Millis, NANOS_PER_MS};
use std::num::NonZeroU64;

/// A parsed decision request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub limiter: Limiter,
    /// Units to consume, give back or charge, as `charge` says.
    pub cost: u64,
    pub charge: Charge,
    pub peek: bool,
    /// `BLOCK ms`, if given (whether the call may wait is `wait`'s to decide).
    pub block: Option<Millis>,
    /// `PENALTY d [ESCALATE max]`, if given: a denial starts a penalty.
    pub penalty: Option<Rule>,
}

/// Where the arguments come from: a command of their own, or one clause of
/// `RL.ALL` (which takes the amount and `BURST` only; `PEEK` applies to the whole call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `RL.<ALGO>`: every option, `BLOCK ms` included (read in its place;
    /// waiting is `wait`'s).
    Command,
    /// An `RL.ALL` clause: `BURST` and `COST`, `REFUND` or `DEBIT` (`RL.ALL`
    /// refuses `BLOCK`).
    Clause,
    /// `RL.PEEK ALGO key params`: the parameters, `BURST` and `COST` only.
    Peek,
    /// A policy's definition (`RL.POLICY SET name ALGO params`): the
    /// parameters and `BURST` only; the cost is the call's.
    Policy,
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
            Form::Policy => RlError::WrongArity(POLICY_SET),
        });
    }
    let (positional, options) = params.split_at(names.len());

    let mut amount = Amount::default();
    let mut burst = None;
    let mut block = None;
    let mut penalty = None;
    let mut calendar = CalendarOptions::default();
    let mut peek = false;
    let mut rest = options.iter();
    let command = form == Form::Command;
    let any_amount = matches!(form, Form::Command | Form::Clause);
    while let Some(&option) = rest.next() {
        if form != Form::Policy && amount.read(option, &mut rest, any_amount)? {
            continue;
        }
        if command && option.eq_ignore_ascii_case(b"PEEK") {
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
        } else if kind == Kind::Quota && option.eq_ignore_ascii_case(b"TZ") {
            calendar.zone = value_at(options, &mut rest, calendar.zone, "TZ")?;
        } else if kind == Kind::Quota && option.eq_ignore_ascii_case(b"ANCHOR") {
            calendar.anchor = value_at(options, &mut rest, calendar.anchor, "ANCHOR")?;
        } else if form != Form::Peek && option.eq_ignore_ascii_case(b"PENALTY") {
            if penalty.is_some() {
                return Err(RlError::RepeatedOption("PENALTY"));
            }
            penalty = Some(parse_penalty(&mut rest)?);
        } else {
            let option = sanitize(option);
            let expected = expected_options(kind, form);
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
                Form::Policy => RlError::UnknownOption {
                    option,
                    command: POLICY_SET,
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
    let (cost, charge) = amount.finish(peek, block.is_some())?;

    // The kind reads its positionals after every option is checked.
    let limiter = Limiter::build(kind, || {
        Params::new(kind, positional, burst, options, calendar, caps)
    })?;
    Ok(Request {
        limiter,
        cost,
        charge,
        peek,
        block,
        penalty,
    })
}

/// The place among `options` of option `name`'s value, given once (`slot`
/// holds an earlier one's place, or 0).
fn value_at(
    options: &[&[u8]],
    rest: &mut std::slice::Iter<'_, &[u8]>,
    slot: u32,
    name: &'static str,
) -> Result<u32, RlError> {
    if slot > 0 {
        return Err(RlError::RepeatedOption(name));
    }
    rest.next().ok_or(RlError::MissingValue(name))?;
    // (At most the call's arguments: a server caps them far below u32::MAX.)
    Ok((options.len() - rest.len() - 1) as u32)
}

/// `d [ESCALATE max]` after `PENALTY`: two durations, `max >= d`.
pub fn parse_penalty(rest: &mut std::slice::Iter<'_, &[u8]>) -> Result<Rule, RlError> {
    let d = rest.next().ok_or(RlError::MissingValue("PENALTY"))?;
    let d_ms = parse_duration("PENALTY", d)? / NANOS_PER_MS;
    let escalate = rest
        .as_slice()
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case(b"ESCALATE"));
    if escalate {
        rest.next();
    }
    let max_ms = match escalate {
        false => None,
        true => {
            let max = rest.next().ok_or(RlError::MissingValue("ESCALATE"))?;
            let max_ms = parse_duration("ESCALATE", max)? / NANOS_PER_MS;
            if max_ms < d_ms {
                return Err(RlError::EscalateBelowPenalty);
            }
            NonZeroU64::new(max_ms)
        }
    };
    Ok(Rule {
        d_ms: NonZeroU64::new(d_ms).expect("a duration is at least 1 ms"),
        max_ms,
    })
}

/// The options `form` accepts for `kind`, as an error lists them: exactly
/// those the loop in [`parse_form`] takes, no more, no fewer.
fn expected_options(kind: Kind, form: Form) -> &'static str {
    match (kind, form) {
        (Kind::Gcra, Form::Command) => "BURST, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY",
        (Kind::Quota, Form::Command) => "TZ, ANCHOR, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY",
        (Kind::Quota, Form::Clause) => "TZ, ANCHOR, COST, REFUND, DEBIT or PENALTY",
        (Kind::Quota, Form::Peek) => "TZ, ANCHOR or COST",
        (Kind::Quota, Form::Policy) => "TZ, ANCHOR, PENALTY or SHADOW",
        (_, Form::Command) => "COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY",
        (Kind::Gcra, Form::Clause) => "BURST, COST, REFUND, DEBIT or PENALTY",
        (_, Form::Clause) => "COST, REFUND, DEBIT or PENALTY",
        (Kind::Gcra, Form::Peek) => "BURST or COST",
        (_, Form::Peek) => "COST",
        (Kind::Gcra, Form::Policy) => "BURST, PENALTY or SHADOW",
        (_, Form::Policy) => "PENALTY or SHADOW",
    }
}

/// `RL.POLICY SET` as Redis names a subcommand in its errors.
pub const POLICY_SET: &str = "rl.policy|set";
