//! The crate's errors: one [`Error`] with a variant per case a caller handles, as the Python
//! and Node packages' classes (`ConfigurationError`, `ServerUnavailableError`,
//! `LibraryUnavailableError`, `ForeignKeyError`, `ReservationSettledError`).
//!
//! Every error is of one of two classes ([`Error::is_unavailable`]): "unavailable" (the server
//! out of reach, or an error whose code is one of facts/rl.toml's unavailable codes: `LOADING`,
//! `BUSY`, `MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`), which a middleware
//! answers 503 (or lets through with `fail_open`); or any other error, a configuration's,
//! which it answers 500 whatever `fail_open` says.

use redis::RedisError;

use crate::facts::{ERRORS, MESSAGES, UNAVAILABLE_CODES};

/// What a key refused as foreign holds ([`Error::ForeignKey`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// Another Redis type (`WRONGTYPE`).
    Type,
    /// Another limiter kind's state.
    Limiter,
    /// A value of the right type that no limiter wrote.
    Value,
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error of a call: which case it is, its text (the server's, for a reply), and the
/// redis-rs error it came from ([`std::error::Error::source`]).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A limit or a call's arguments refused: by this crate before anything is sent, or by
    /// the server (the module's or the library's `ERR` about an argument).
    #[error("{message}")]
    Configuration {
        /// The text (the server's reply, code first, for a server's refusal).
        message: String,
        /// The server's error, when the server refused.
        #[source]
        source: Option<RedisError>,
    },
    /// The server cannot decide right now: connection refused or reset, a timeout, or an
    /// unavailable code (`LOADING`, `BUSY`, `MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`,
    /// `READONLY`).
    #[error("{message}")]
    Unavailable {
        /// The text.
        message: String,
        /// The error from redis-rs.
        #[source]
        source: Option<RedisError>,
    },
    /// The module is not loaded and the Functions library is missing and cannot be loaded (an
    /// ACL user who may not run `FUNCTION LOAD`, a read-only replica, a server without
    /// Functions).
    #[error("{message}")]
    LibraryUnavailable {
        /// Why, then the server's text.
        message: String,
        /// The server's error.
        #[source]
        source: Option<RedisError>,
    },
    /// The key holds what this call may not touch (`holds` says what); the key is left as
    /// it is.
    #[error("{message}")]
    ForeignKey {
        /// What the key holds.
        holds: Holds,
        /// The server's text.
        message: String,
        /// The server's error.
        #[source]
        source: Option<RedisError>,
    },
    /// A reservation settled a second time: nothing sent.
    #[error("this reservation is settled already")]
    ReservationSettled,
    /// Any other error from the server or from redis-rs, as it is.
    #[error(transparent)]
    Redis(RedisError),
}

/// What a LibraryUnavailable error says before the server's text.
pub(crate) const NOT_LOADABLE: &str =
    "the rl module is not loaded and the rl library could not be loaded";
pub(crate) const NO_FUNCTIONS: &str =
    "the rl module is not loaded and the server has no Functions (FCALL) for the library";
pub(crate) const NOT_LOADED: &str = "the rl library was loaded but the server does not have it";

impl Error {
    /// The server cannot decide right now (a middleware's 503, or its `fail_open`).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// A configuration error: a limit or arguments refused.
    pub fn is_configuration(&self) -> bool {
        matches!(self, Error::Configuration { .. })
    }

    /// The server's error code (`ERR`, `OOM`, `WRONGTYPE`, ...), for an error that is a reply.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Configuration { source, .. }
            | Error::Unavailable { source, .. }
            | Error::LibraryUnavailable { source, .. }
            | Error::ForeignKey { source, .. } => source.as_ref().and_then(RedisError::code),
            Error::Redis(e) => e.code(),
            Error::ReservationSettled => None,
        }
    }

    /// Refused before anything is sent.
    pub(crate) fn refused(message: impl Into<String>) -> Error {
        Error::Configuration {
            message: message.into(),
            source: None,
        }
    }
}

/// The server's reply text of `err`, code first (`ERR no such policy 'x'`), or None for an
/// error that is no reply.
pub(crate) fn reply_text(err: &RedisError) -> Option<String> {
    let code = err.code()?;
    Some(match err.detail() {
        Some(detail) => format!("{code} {detail}"),
        None => code.to_string(),
    })
}

/// The text after the code.
fn detail(err: &RedisError) -> String {
    err.detail().unwrap_or("").to_string()
}

/// Whether `text` is `template` whole, each `{name}` standing for any text.
fn matches_template(template: &str, text: &str) -> bool {
    fn go(t: &str, s: &str) -> bool {
        match t.find('{') {
            None => t == s,
            Some(open) => {
                let Some(close) = t[open..].find('}') else {
                    return t == s;
                };
                if !s.starts_with(&t[..open]) {
                    return false;
                }
                let (rest_t, rest_s) = (&t[open + close + 1..], &s[open..]);
                (0..=rest_s.len())
                    .filter(|&i| rest_s.is_char_boundary(i))
                    .any(|i| go(rest_t, &rest_s[i..]))
            }
        }
    }
    go(template, text)
}

fn error_template(name: &str) -> &'static str {
    ERRORS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .unwrap_or("")
}

/// facts/rl.toml's error `name` matches the whole reply `text` (code first).
fn is_error(name: &str, text: &str) -> bool {
    matches_template(error_template(name), text)
}

/// The module's refusals of an argument (facts/rl.toml's errors that name one).
const ARGUMENT: [&str; 16] = [
    "wrong_arity",
    "bad_integer",
    "bad_duration",
    "unknown_option",
    "unknown_clause_option",
    "repeated_option",
    "missing_value",
    "rate_too_high",
    "cost_with_refund",
    "clause_arity",
    "no_such_policy",
    "policy_name",
    "escalate_below_penalty",
    "bad_unit",
    "unknown_zone",
    "bad_anchor",
];

/// redis-rs's errors of a server out of reach (not a refused password: the app's to fix).
fn unreachable(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || matches!(err.kind(), redis::ErrorKind::ClusterConnectionNotFound)
}

/// Whether the server cannot decide right now.
pub(crate) fn unavailable(err: &RedisError) -> bool {
    unreachable(err) || err.code().is_some_and(|c| UNAVAILABLE_CODES.contains(&c))
}

/// The server has no such command (the module is not loaded).
pub(crate) fn unknown_command(err: &RedisError) -> bool {
    err.code() == Some("ERR")
        && detail(err)
            .to_ascii_lowercase()
            .starts_with("unknown command")
}

/// `FCALL` of a function the server does not have: the library is not loaded.
pub(crate) fn function_missing(err: &RedisError) -> bool {
    err.code().is_some()
        && detail(err)
            .to_ascii_lowercase()
            .contains("function not found")
}

/// The crate's error for `err`.
pub(crate) fn classify(err: RedisError) -> Error {
    let text = reply_text(&err).unwrap_or_else(|| err.to_string());
    if unavailable(&err) {
        return Error::Unavailable {
            message: text,
            source: Some(err),
        };
    }
    if err.code().is_none() || unknown_command(&err) || function_missing(&err) {
        return Error::Redis(err);
    }
    let holds = if err.code() == Some("WRONGTYPE") {
        Some(Holds::Type)
    } else if is_error("other_algorithm", &text) {
        Some(Holds::Limiter)
    } else if is_error("foreign_value", &text) {
        Some(Holds::Value)
    } else {
        None
    };
    if let Some(holds) = holds {
        return Error::ForeignKey {
            holds,
            message: text,
            source: Some(err),
        };
    }
    let argument = ARGUMENT.iter().any(|name| is_error(name, &text))
        || MESSAGES
            .iter()
            .any(|(_, m)| text.strip_prefix("ERR ") == Some(*m));
    if argument {
        return Error::Configuration {
            message: text,
            source: Some(err),
        };
    }
    Error::Redis(err)
}

/// The error of a library that cannot be used: `why`, then the server's text: unavailable
/// where the reply's code says the server cannot do it right now (`OOM`, `READONLY`, ...) or
/// the server is out of reach, else LibraryUnavailable.
pub(crate) fn library_unavailable(err: RedisError, why: &str) -> Error {
    if unavailable(&err) {
        return classify(err);
    }
    match reply_text(&err) {
        Some(text) => Error::LibraryUnavailable {
            message: format!("{why}: {text}"),
            source: Some(err),
        },
        None => classify(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        assert!(is_error("no_such_policy", "ERR no such policy 'free'"));
        assert!(!is_error(
            "no_such_policy",
            "ERR no such policy 'free' at all!"
        ));
        assert!(is_error(
            "bad_integer",
            "ERR limit must be an integer from 1 to 1000000000000"
        ));
        assert!(is_error(
            "other_algorithm",
            "ERR key holds gcra state, not fixed state: use another key or DEL it"
        ));
    }
}
