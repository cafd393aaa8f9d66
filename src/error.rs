//! Every error a command can reply with. Messages are complete Redis error
//! replies (they start with the error code) and never contain client bytes
//! other than a sanitized option name. The texts are facts (facts/rl.toml's
//! `errors`, which the Functions library and the clients share): each variant
//! is written by the function of `facts::errors` named after it, from its
//! fields in order.

use thiserror::Error;

use crate::facts::errors;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RlError {
    #[error(fmt = errors::wrong_arity)]
    WrongArity(&'static str),
    #[error(fmt = errors::bad_integer)]
    BadInteger {
        name: &'static str,
        min: u64,
        max: u64,
    },
    #[error(fmt = errors::bad_duration)]
    BadDuration(&'static str),
    #[error(fmt = errors::unknown_option)]
    UnknownOption {
        option: String,
        command: &'static str,
        expected: &'static str,
    },
    /// An option an `RL.ALL` clause does not take (`REFUND`, `PEEK`, `BLOCK`, ...).
    #[error(fmt = errors::unknown_clause_option)]
    UnknownClauseOption {
        option: String,
        clause: &'static str,
        expected: &'static str,
    },
    #[error(fmt = errors::repeated_option)]
    RepeatedOption(&'static str),
    #[error(fmt = errors::missing_value)]
    MissingValue(&'static str),
    #[error(fmt = errors::rate_too_high)]
    RateTooHigh {
        rate: &'static str,
        period: &'static str,
    },
    #[error(fmt = errors::cost_with_refund)]
    CostWithRefund,
    /// `DEBIT` with the option named (`COST`, `REFUND`, `PEEK` or `BLOCK`).
    #[error(fmt = errors::debit_with)]
    DebitWith(&'static str),
    /// `PENALTY d ESCALATE max` with `max < d`.
    #[error(fmt = errors::escalate_below_penalty)]
    EscalateBelowPenalty,
    /// `RL.QUOTA`'s unit is not `DAY`, `WEEK` or `MONTH`.
    #[error(fmt = errors::bad_unit)]
    BadUnit,
    /// `TZ zone` names no zone (the name as given, sanitized).
    #[error(fmt = errors::unknown_zone)]
    UnknownZone(String),
    /// `ANCHOR a` is not a real local date and time `yyyy-mm-ddThh:mm`.
    #[error(fmt = errors::bad_anchor)]
    BadAnchor,
    #[error(fmt = errors::clause_arity)]
    ClauseArity(&'static str),
    #[error(fmt = errors::syntax)]
    Syntax(&'static str),
    #[error(fmt = errors::wrong_type)]
    WrongType,
    #[error(fmt = errors::other_algorithm)]
    OtherAlgorithm {
        found: &'static str,
        expected: &'static str,
    },
    #[error(fmt = errors::foreign_value)]
    ForeignValue(&'static str),
    /// A wait (`BLOCK`) ended because the server stopped being a master.
    #[error(fmt = errors::unblocked)]
    Unblocked,
    /// A waiter would be admitted while the server is out of memory (`noeviction`).
    #[error(fmt = errors::oom)]
    Oom,
    /// A wait (`BLOCK`) ended because the server is shutting down.
    #[error(fmt = errors::shutting_down)]
    ShuttingDown,
    #[error(fmt = errors::no_such_policy)]
    NoSuchPolicy(String),
    #[error(fmt = errors::no_such_command)]
    NoSuchCommand(String),
    #[error(fmt = errors::policy_name)]
    PolicyName(usize),
    #[error(fmt = errors::policy_reserved)]
    PolicyReserved(String),
    #[error(fmt = errors::policy_algorithm)]
    PolicyAlgorithm { name: String, was: &'static str },
    #[error(fmt = errors::too_many_policies)]
    TooManyPolicies(usize),
    #[error(fmt = errors::no_permission)]
    NoPermission(&'static str),
    // (boxed texts: every call's `Result` carries an `RlError`, which these
    // rare variants would otherwise make larger)
    #[error(fmt = errors::policy_file)]
    PolicyFile { file: Box<str>, problem: Box<str> },
    #[error(fmt = errors::policy_file_line)]
    PolicyFileLine {
        file: Box<str>,
        line: usize,
        problem: Box<str>,
    },
    #[error(fmt = errors::no_policy_file)]
    NoPolicyFile,
    #[error(fmt = errors::internal)]
    Internal(&'static str),
}

/// At most this many bytes of a client's option are echoed, printable ASCII only.
const ECHO_MAX: usize = 32;

/// A client's bytes made safe to put in an error reply.
pub fn sanitize(bytes: &[u8]) -> String {
    let mut s: String = bytes
        .iter()
        .take(ECHO_MAX)
        .map(|&b| {
            if (0x21..0x7f).contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect();
    if bytes.len() > ECHO_MAX {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_echo_has_no_control_bytes() {
        assert_eq!(sanitize(b"FO\0O\r\n"), "FO?O??");
        assert_eq!(sanitize(&[b'x'; 40]).len(), 35);
    }

    /// Each variant's fields fill its text's arguments in the order they first
    /// appear there (the generated writers' parameters).
    #[test]
    fn fields_fill_their_arguments() {
        let cases = [
            (
                RlError::BadInteger {
                    name: "limit",
                    min: 1,
                    max: 9,
                },
                "ERR limit must be an integer from 1 to 9",
            ),
            (
                RlError::UnknownOption {
                    option: "X".into(),
                    command: "rl.gcra",
                    expected: "COST",
                },
                "ERR unknown option 'X' for 'rl.gcra' (expected COST)",
            ),
            (
                RlError::UnknownClauseOption {
                    option: "X".into(),
                    clause: "GCRA",
                    expected: "COST",
                },
                "ERR unknown option 'X' in RL.ALL clause GCRA (expected COST)",
            ),
            (
                RlError::RateTooHigh {
                    rate: "limit",
                    period: "period",
                },
                "ERR limit per period must be at most 1 per nanosecond: period / limit must be at least 1ns",
            ),
            (
                RlError::OtherAlgorithm {
                    found: "RL.FIXED",
                    expected: "RL.GCRA",
                },
                "ERR key holds RL.FIXED state, not RL.GCRA state: use another key or DEL it",
            ),
            (RlError::WrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
