// generated from facts/rl.toml by scripts/generate-facts.py: do not edit
//! The facts this crate shares with the module, the Functions library and the other
//! client packages (facts/rl.toml): the kinds, the per-call bounds, the duration units and
//! the error texts.
#![allow(dead_code)]

/// One algorithm: its `RL.ALL` word, its command and the Functions library's function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindFacts {
    /// The word naming it in an `RL.ALL` clause and in `RL.PEEK`.
    pub algo: &'static str,
    /// Its command as users write it.
    pub label: &'static str,
    /// Its positional parameters after the key.
    pub params: &'static [&'static str],
    /// The Functions library's function.
    pub fcall: &'static str,
}

/// The algorithms, in facts/rl.toml's order.
pub const KINDS: [KindFacts; 7] = [
    KindFacts { algo: "GCRA", label: "RL.GCRA", params: &["limit", "period"], fcall: "rl_gcra" },
    KindFacts { algo: "TOKENBUCKET", label: "RL.TOKENBUCKET", params: &["capacity", "refill", "period"], fcall: "rl_tokenbucket" },
    KindFacts { algo: "LEAKY", label: "RL.LEAKY", params: &["capacity", "leak", "period"], fcall: "rl_leaky" },
    KindFacts { algo: "SLIDING", label: "RL.SLIDING", params: &["limit", "window"], fcall: "rl_sliding" },
    KindFacts { algo: "SLIDINGLOG", label: "RL.SLIDINGLOG", params: &["limit", "window"], fcall: "rl_slidinglog" },
    KindFacts { algo: "FIXED", label: "RL.FIXED", params: &["limit", "window"], fcall: "rl_fixed" },
    KindFacts { algo: "QUOTA", label: "RL.QUOTA", params: &["limit", "unit"], fcall: "rl_quota" },
];

/// The largest count a limit, capacity or rate may be.
pub const MAX_COUNT: u64 = 1_000_000_000_000;
/// The largest cost of one call (`COST n`, `REFUND n`, `DEBIT n`).
pub const MAX_COST: u64 = 1_000_000_000_000;
/// The largest debt a key may hold (a larger `DEBIT` saturates at it).
pub const MAX_DEBT: u64 = 1_000_000_000_000;
/// The longest duration, in milliseconds.
pub const MAX_DURATION_MS: u64 = 3650 * 86_400_000;
/// The most layers (keys) of one `RL.ALL`.
pub const MAX_LAYERS: u64 = 64;
/// The longest lease id, in bytes.
pub const MAX_LEASE_ID: usize = 256;
/// The longest server-side policy name.
pub const MAX_POLICY_NAME: usize = 64;

/// Each duration unit (case-insensitive) in milliseconds; `""` is a bare integer's.
pub const DURATION_UNITS_MS: [(&str, u64); 6] = [
    ("", 1_000),
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// The error replies, by name, as templates whose `{name}` is the argument of that name.
pub const ERRORS: [(&str, &str); 33] = [
    ("wrong_arity", "ERR wrong number of arguments for '{command}' command"),
    ("bad_integer", "ERR {name} must be an integer from {min} to {max}"),
    ("bad_duration", "ERR {name} must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)"),
    ("unknown_option", "ERR unknown option '{option}' for '{command}' (expected {expected})"),
    ("unknown_clause_option", "ERR unknown option '{option}' in RL.ALL clause {clause} (expected {expected})"),
    ("repeated_option", "ERR option {option} given more than once"),
    ("missing_value", "ERR option {option} needs a value"),
    ("rate_too_high", "ERR {rate} per {period} must be at most 1 per nanosecond: {period} / {rate} must be at least 1ns"),
    ("cost_with_refund", "ERR COST and REFUND cannot be used together"),
    ("debit_with", "ERR DEBIT cannot be used with {option}"),
    ("escalate_below_penalty", "ERR ESCALATE max must be at least PENALTY d"),
    ("bad_unit", "ERR unit must be DAY, WEEK or MONTH"),
    ("unknown_zone", "ERR unknown time zone '{zone}': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
    ("bad_anchor", "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
    ("clause_arity", "ERR RL.ALL clause {algo} has too few parameters"),
    ("syntax", "ERR {message}"),
    ("wrong_type", "WRONGTYPE Operation against a key holding the wrong kind of value"),
    ("other_algorithm", "ERR key holds {found} state, not {expected} state: use another key or DEL it"),
    ("foreign_value", "ERR key holds a value that {label} did not write: use another key or DEL it"),
    ("unblocked", "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"),
    ("oom", "OOM command not allowed when used memory > 'maxmemory'."),
    ("shutting_down", "UNBLOCKED the server is shutting down"),
    ("no_such_policy", "ERR no such policy '{name}'"),
    ("no_such_command", "ERR no such command '{name}' (RL.TOP COMMAND takes a limiter's command, e.g. rl.gcra)"),
    ("policy_reserved", "ERR the policy name '{name}' is reserved: INFO rl's field rl_policy_{name} is the module's own"),
    ("policy_name", "ERR a policy name is 1 to {max} of A-Z, a-z, 0-9 and _ . : -"),
    ("policy_algorithm", "ERR policy '{name}' is {was}: DEL it before giving it another algorithm"),
    ("too_many_policies", "ERR at most {max} policies (rl.max-policies)"),
    ("no_permission", "NOPERM this user has no permissions to run the '{command}' command"),
    ("policy_file", "ERR policy file {file}: {problem}"),
    ("policy_file_line", "ERR policy file {file} line {line}: {problem}"),
    ("no_policy_file", "ERR no policy file: load the module with policy-file PATH"),
    ("internal", "ERR internal error in {label}: the request was not applied"),
];

/// The error codes (a reply's first word) that mean Redis cannot decide right now: a
/// middleware answers 503, or lets the request through with `fail_open`. Every other
/// error is a configuration error: 500.
pub const UNAVAILABLE_CODES: [&str; 7] = [
    "LOADING",
    "BUSY",
    "MASTERDOWN",
    "CLUSTERDOWN",
    "TRYAGAIN",
    "OOM",
    "READONLY",
];

/// The `syntax` error's fixed texts (after `ERR `), by name.
pub const MESSAGES: [(&str, &str); 18] = [
    ("all_shape", "RL.ALL needs numkeys keys followed by one algorithm clause per key"),
    ("all_algorithm", "RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA"),
    ("all_clauses", "RL.ALL needs exactly one algorithm clause per key"),
    ("all_distinct", "RL.ALL keys must be distinct"),
    ("peek_algorithm", "RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED, QUOTA or ACQUIRE"),
    ("lease_id", "lease_id must be 1 to 256 bytes"),
    ("throttle_zero_rate", "count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate"),
    ("policy_algorithm", "RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA"),
    ("policy_line_long", "a line is longer than 1024 bytes"),
    ("policy_long", "a policy's line (its name and definition, as RL.POLICY GET gives it) is at most 1024 bytes"),
    ("policy_file_large", "larger than 16777216 bytes"),
    ("policy_file_not_regular", "not a regular file"),
    ("policy_file_link", "a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)"),
    ("policy_save_large", "the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written"),
    ("policy_file_folder_sync", "replaced, but its folder could not be flushed to disk"),
    ("policy_twice", "a policy of this name is on an earlier line"),
    ("top_shape", "syntax error: RL.TOP name [COUNT n] or RL.TOP COMMAND cmd [COUNT n]"),
    ("throttle_burst", "max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days"),
];
