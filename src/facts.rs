// generated from facts/rl.toml by scripts/generate-facts.py: do not edit
//! The facts the module shares with the Functions library and the client packages
//! (facts/rl.toml): the kinds, the per-call bounds, the duration units, the settings'
//! defaults and ranges, and the error texts. Each language has every fact; the module
//! uses most of them (`fcall` names the library's functions).
#![allow(dead_code)]

use std::ffi::CStr;

/// The decision commands, one per algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gcra,
    TokenBucket,
    Leaky,
    Sliding,
    SlidingLog,
    Fixed,
    Quota,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Gcra,
        Kind::TokenBucket,
        Kind::Leaky,
        Kind::Sliding,
        Kind::SlidingLog,
        Kind::Fixed,
        Kind::Quota,
    ];
}

/// One algorithm's names and positional parameters.
pub struct KindFacts {
    /// The word naming it in an `RL.ALL` clause and in `RL.PEEK`.
    pub algo: &'static str,
    /// Its name as registered (and as Redis reports it).
    pub command: &'static CStr,
    /// Its name as users write it (in error messages).
    pub label: &'static str,
    /// The prefix of the state it stores.
    pub tag: &'static str,
    /// Its positional parameters after the key.
    pub params: &'static [&'static str],
    /// The Functions library's function.
    pub fcall: &'static str,
}

/// Each kind's facts, at `kind as usize`.
pub const KINDS: [KindFacts; 7] = [
    KindFacts {
        algo: "GCRA",
        command: c"rl.gcra",
        label: "RL.GCRA",
        tag: "gcra",
        params: &["limit", "period"],
        fcall: "rl_gcra",
    },
    KindFacts {
        algo: "TOKENBUCKET",
        command: c"rl.tokenbucket",
        label: "RL.TOKENBUCKET",
        tag: "bucket",
        params: &["capacity", "refill", "period"],
        fcall: "rl_tokenbucket",
    },
    KindFacts {
        algo: "LEAKY",
        command: c"rl.leaky",
        label: "RL.LEAKY",
        tag: "leaky",
        params: &["capacity", "leak", "period"],
        fcall: "rl_leaky",
    },
    KindFacts {
        algo: "SLIDING",
        command: c"rl.sliding",
        label: "RL.SLIDING",
        tag: "sliding",
        params: &["limit", "window"],
        fcall: "rl_sliding",
    },
    KindFacts {
        algo: "SLIDINGLOG",
        command: c"rl.slidinglog",
        label: "RL.SLIDINGLOG",
        tag: "slidinglog",
        params: &["limit", "window"],
        fcall: "rl_slidinglog",
    },
    KindFacts {
        algo: "FIXED",
        command: c"rl.fixed",
        label: "RL.FIXED",
        tag: "fixed",
        params: &["limit", "window"],
        fcall: "rl_fixed",
    },
    KindFacts {
        algo: "QUOTA",
        command: c"rl.quota",
        label: "RL.QUOTA",
        tag: "quota",
        params: &["limit", "unit"],
        fcall: "rl_quota",
    },
];

/// Calls `$callback!` with every kind as `Variant(module)`, in `Kind::ALL` order: the
/// one list the module's per-kind code is expanded from (the `grammar::Limiter` enum, its
/// dispatch in `decision::limiter`, the commands). `module` names the kind's algorithm
/// (`crate::algorithm::<module>::<Variant>`) and its file in `crate::kinds`.
macro_rules! with_kinds {
    ($callback:ident) => {
        $callback! { Gcra(gcra), TokenBucket(token_bucket), Leaky(leaky), Sliding(sliding), SlidingLog(sliding_log), Fixed(fixed), Quota(quota) }
    };
}
pub(crate) use with_kinds;

pub const MAX_COUNT: u64 = 1_000_000_000_000;
pub const MAX_COST: u64 = 1_000_000_000_000;
pub const MAX_DEBT: u64 = 1_000_000_000_000;
pub const MAX_DURATION_MS: u64 = 3650 * 86_400_000;
pub const MAX_LAYERS: u64 = 64;
pub const MAX_LEASE_ID: usize = 256;
pub const MAX_POLICY_NAME: usize = 64;
pub const MAX_POLICY_LINE: usize = 1_024;
pub const MAX_POLICY_FILE: u64 = 16_777_216;

/// A key's penalty: its tag, the separator after a string state, its sliding-log score.
pub const PENALTY_TAG: &str = "penalty";
pub const PENALTY_SEPARATOR: &str = "|";
pub const PENALTY_LOG_SCORE: f64 = -1.0;

/// Each duration unit (case-insensitive) in milliseconds; `""` is a bare integer's.
pub const DURATION_UNITS_MS: [(&str, u64); 6] = [
    ("", 1_000),
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// The operator settings: defaults and ranges.
pub mod settings {
    /// An integer setting: its name, default and valid range.
    pub struct Integer {
        pub name: &'static str,
        pub default: i64,
        pub range: (i64, i64),
    }

    pub const SLIDING_LOG_MAX_LIMIT: Integer = Integer {
        name: "sliding-log-max-limit",
        default: 100_000,
        range: (1, 100_000_000),
    };

    pub const MAX_WAITERS: Integer = Integer {
        name: "max-waiters",
        default: 1_000,
        range: (0, 1_000_000),
    };

    pub const MAX_WAITERS_PER_KEY: Integer = Integer {
        name: "max-waiters-per-key",
        default: 100,
        range: (0, 1_000_000),
    };

    pub const MAX_POLICIES: Integer = Integer {
        name: "max-policies",
        default: 1_000,
        range: (0, 100_000),
    };

    pub const TOP_KEYS: Integer = Integer {
        name: "top-keys",
        default: 32,
        range: (0, 1_000),
    };

    pub const GCRA_COMMAND: bool = true;

    pub const INTEGERS: [Integer; 5] = [
        SLIDING_LOG_MAX_LIMIT,
        MAX_WAITERS,
        MAX_WAITERS_PER_KEY,
        MAX_POLICIES,
        TOP_KEYS,
    ];
    /// The yes/no settings.
    pub const SWITCHES: [&str; 1] = ["gcra-command"];
    /// Every setting's name, for messages.
    pub const NAMES: &str = "sliding-log-max-limit, max-waiters, max-waiters-per-key, max-policies, top-keys, gcra-command";
}

/// The error replies' texts, each written by a function of its arguments (in the order
/// they first appear) and the formatter: `#[error(fmt = ...)]` in `error.rs`.
pub mod errors {
    use std::fmt::{Display, Formatter, Result};

    pub fn wrong_arity(command: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR wrong number of arguments for '{command}' command")
    }

    pub fn bad_integer(name: impl Display, min: impl Display, max: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR {name} must be an integer from {min} to {max}")
    }

    pub fn bad_duration(name: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR {name} must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)")
    }

    pub fn unknown_option(option: impl Display, command: impl Display, expected: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR unknown option '{option}' for '{command}' (expected {expected})")
    }

    pub fn unknown_clause_option(option: impl Display, clause: impl Display, expected: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR unknown option '{option}' in RL.ALL clause {clause} (expected {expected})")
    }

    pub fn repeated_option(option: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR option {option} given more than once")
    }

    pub fn missing_value(option: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR option {option} needs a value")
    }

    pub fn rate_too_high(rate: impl Display, period: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR {rate} per {period} must be at most 1 per nanosecond: {period} / {rate} must be at least 1ns")
    }

    pub fn cost_with_refund(f: &mut Formatter<'_>) -> Result {
        f.write_str("ERR COST and REFUND cannot be used together")
    }

    pub fn debit_with(option: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR DEBIT cannot be used with {option}")
    }

    pub fn escalate_below_penalty(f: &mut Formatter<'_>) -> Result {
        f.write_str("ERR ESCALATE max must be at least PENALTY d")
    }

    pub fn bad_unit(f: &mut Formatter<'_>) -> Result {
        f.write_str("ERR unit must be DAY, WEEK or MONTH")
    }

    pub fn unknown_zone(zone: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR unknown time zone '{zone}': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris")
    }

    pub fn bad_anchor(f: &mut Formatter<'_>) -> Result {
        f.write_str("ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)")
    }

    pub fn clause_arity(algo: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR RL.ALL clause {algo} has too few parameters")
    }

    pub fn syntax(message: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR {message}")
    }

    pub fn wrong_type(f: &mut Formatter<'_>) -> Result {
        f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
    }

    pub fn other_algorithm(found: impl Display, expected: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR key holds {found} state, not {expected} state: use another key or DEL it")
    }

    pub fn foreign_value(label: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR key holds a value that {label} did not write: use another key or DEL it")
    }

    pub fn unblocked(f: &mut Formatter<'_>) -> Result {
        f.write_str("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")
    }

    pub fn oom(f: &mut Formatter<'_>) -> Result {
        f.write_str("OOM command not allowed when used memory > 'maxmemory'.")
    }

    pub fn shutting_down(f: &mut Formatter<'_>) -> Result {
        f.write_str("UNBLOCKED the server is shutting down")
    }

    pub fn no_such_policy(name: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR no such policy '{name}'")
    }

    pub fn no_such_command(name: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR no such command '{name}' (RL.TOP COMMAND takes a limiter's command, e.g. rl.gcra)")
    }

    pub fn policy_reserved(name: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR the policy name '{name}' is reserved: INFO rl's field rl_policy_{name} is the module's own")
    }

    pub fn policy_name(max: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR a policy name is 1 to {max} of A-Z, a-z, 0-9 and _ . : -")
    }

    pub fn policy_algorithm(name: impl Display, was: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR policy '{name}' is {was}: DEL it before giving it another algorithm")
    }

    pub fn too_many_policies(max: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR at most {max} policies (rl.max-policies)")
    }

    pub fn no_permission(command: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "NOPERM this user has no permissions to run the '{command}' command")
    }

    pub fn policy_file(file: impl Display, problem: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR policy file {file}: {problem}")
    }

    pub fn policy_file_line(file: impl Display, line: impl Display, problem: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR policy file {file} line {line}: {problem}")
    }

    pub fn no_policy_file(f: &mut Formatter<'_>) -> Result {
        f.write_str("ERR no policy file: load the module with policy-file PATH")
    }

    pub fn internal(label: impl Display, f: &mut Formatter<'_>) -> Result {
        write!(f, "ERR internal error in {label}: the request was not applied")
    }
}

/// The `syntax` error's fixed texts (`RlError::Syntax`).
pub mod messages {
    pub const ALL_SHAPE: &str = "RL.ALL needs numkeys keys followed by one algorithm clause per key";
    pub const ALL_ALGORITHM: &str = "RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA";
    pub const ALL_CLAUSES: &str = "RL.ALL needs exactly one algorithm clause per key";
    pub const ALL_DISTINCT: &str = "RL.ALL keys must be distinct";
    pub const PEEK_ALGORITHM: &str = "RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED, QUOTA or ACQUIRE";
    pub const LEASE_ID: &str = "lease_id must be 1 to 256 bytes";
    pub const THROTTLE_ZERO_RATE: &str = "count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate";
    pub const POLICY_ALGORITHM: &str = "RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA";
    pub const POLICY_LINE_LONG: &str = "a line is longer than 1024 bytes";
    pub const POLICY_LONG: &str = "a policy's line (its name and definition, as RL.POLICY GET gives it) is at most 1024 bytes";
    pub const POLICY_FILE_LARGE: &str = "larger than 16777216 bytes";
    pub const POLICY_FILE_NOT_REGULAR: &str = "not a regular file";
    pub const POLICY_FILE_LINK: &str = "a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)";
    pub const POLICY_SAVE_LARGE: &str = "the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written";
    pub const POLICY_FILE_FOLDER_SYNC: &str = "replaced, but its folder could not be flushed to disk";
    pub const POLICY_TWICE: &str = "a policy of this name is on an earlier line";
    pub const TOP_SHAPE: &str = "syntax error: RL.TOP name [COUNT n] or RL.TOP COMMAND cmd [COUNT n]";
    pub const THROTTLE_BURST: &str = "max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days";
}
