//! Every error a command can reply with. Messages are complete Redis error
//! replies (they start with the error code) and never contain client bytes
//! other than a sanitized option name.

use thiserror::Error;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RlError {
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(&'static str),
    #[error("ERR {name} must be an integer from {min} to {max}")]
    BadInteger {
        name: &'static str,
        min: u64,
        max: u64,
    },
    #[error("ERR {0} must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)")]
    BadDuration(&'static str),
    #[error("ERR unknown option '{option}' for '{command}' (expected {expected})")]
    UnknownOption {
        option: String,
        command: &'static str,
        expected: &'static str,
    },
    /// An option an `RL.ALL` clause does not take (`REFUND`, `PEEK`, `BLOCK`, ...).
    #[error("ERR unknown option '{option}' in RL.ALL clause {clause} (expected {expected})")]
    UnknownClauseOption {
        option: String,
        clause: &'static str,
        expected: &'static str,
    },
    #[error("ERR option {0} given more than once")]
    RepeatedOption(&'static str),
    #[error("ERR option {0} needs a value")]
    MissingValue(&'static str),
    #[error("ERR {rate} per {period} must be at most 1 per nanosecond: {period} / {rate} must be at least 1ns")]
    RateTooHigh {
        rate: &'static str,
        period: &'static str,
    },
    #[error("ERR COST and REFUND cannot be used together")]
    CostWithRefund,
    #[error("ERR RL.ALL clause {0} has too few parameters")]
    ClauseArity(&'static str),
    #[error("ERR {0}")]
    Syntax(&'static str),
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("ERR key holds {found} state, not {expected} state: use another key or DEL it")]
    OtherAlgorithm {
        found: &'static str,
        expected: &'static str,
    },
    #[error("ERR key holds a value that {0} did not write: use another key or DEL it")]
    ForeignValue(&'static str),
    /// A wait (`BLOCK`) ended because the server stopped being a master.
    #[error("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")]
    Unblocked,
    /// A waiter would be admitted while the server is out of memory (`noeviction`).
    #[error("OOM command not allowed when used memory > 'maxmemory'.")]
    Oom,
    /// A wait (`BLOCK`) ended because the server is shutting down.
    #[error("UNBLOCKED the server is shutting down")]
    ShuttingDown,
    #[error("ERR internal error in {0}: the request was not applied")]
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
}
