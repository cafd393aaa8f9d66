//! The `INFO rl` section: `rl_stats`, one line per counted command, e.g.
//! `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1,near_limit=1`,
//! then the waits: the clients waiting now (a gauge) and the waits that ended
//! admitted or not (counters, cleared with commandstats). The server's `INFO`
//! callback (`server::callbacks::on_info`) writes these lines, and those of
//! the `rl_policies` section: one per named policy.
//!
//! Field names never collide: Redis prefixes each with `rl_`, the per-policy
//! lines are `policy_<name>`, and the one field of the module's own named so,
//! `policy_digest` (as the contract names it), is a name no policy may take
//! ([`is_reserved_policy_name`]); no other field starts with `policy_` (the
//! command table's fields are checked when it is compiled, the others below).

use std::ffi::CStr;

use super::ledger::Tally;
use super::{stats, waiting};

/// What every per-policy line's name starts with.
pub const POLICY_LINE_PREFIX: &str = "policy_";

/// Whether `field` is named as a per-policy line is.
pub const fn is_policy_line(field: &[u8]) -> bool {
    let prefix = POLICY_LINE_PREFIX.as_bytes();
    if field.len() < prefix.len() {
        return false;
    }
    let mut i = 0;
    while i < prefix.len() {
        if field[i] != prefix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The `rl_stats` section's fields after the commands' lines: the waits, the
/// number of policies held and their digest (`RL.POLICY DIGEST`).
pub const WAITS: &CStr = c"waits";
pub const POLICIES: &CStr = c"policies";
pub const POLICY_DIGEST: &CStr = c"policy_digest";
const _: () = assert!(!is_policy_line(WAITS.to_bytes()));
const _: () = assert!(!is_policy_line(POLICIES.to_bytes()));

/// Whether a policy named `name` would have the line of a field of the
/// module's own (`digest`: `policy_digest`): such a name is refused where a
/// policy is defined (`RL.POLICY SET`, the policy file).
pub fn is_reserved_policy_name(name: &str) -> bool {
    let digest = &POLICY_DIGEST.to_bytes()[POLICY_LINE_PREFIX.len()..];
    name.as_bytes() == digest
}

/// One `name:field=value,...` line: its name and its fields.
pub type Line = (&'static CStr, Vec<(&'static CStr, u64)>);

/// The section's lines, settled against the server's counts first unless
/// this is for a crash report.
pub fn section(for_crash_report: bool) -> Vec<Line> {
    let tallies = stats::tallies(for_crash_report);
    let mut lines: Vec<Line> = tallies
        .iter()
        .map(|(command, t)| {
            let fields = vec![
                (c"calls", t.calls),
                (c"admitted", t.admitted),
                (c"denied", t.denied),
                (c"errors", t.errors),
                (c"cost_admitted", t.cost_admitted),
                (c"cost_denied", t.cost_denied),
                (c"near_limit", t.near_limit),
            ];
            (command.field, fields)
        })
        .collect();
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(|(_, t)| f(t)).fold(0, u64::wrapping_add);
    lines.push((
        WAITS,
        vec![
            (c"waiting", waiting() as u64),
            (c"admitted", sum(|t| t.waits_admitted)),
            (c"timed_out", sum(|t| t.waits_timed_out)),
        ],
    ));
    lines
}

/// The `rl_policies` section's lines: `policy_<name>` for each `(name, id)`
/// held, in order (a `:` in a name is written `%3A`, as an INFO field name
/// ends at its first `:`; a name holds no `%`, so two names never give one
/// line name).
pub fn policy_lines(
    policies: &[(String, u32)],
) -> Vec<(std::ffi::CString, Vec<(&'static CStr, u64)>)> {
    let ids: Vec<u32> = policies.iter().map(|(_, id)| *id).collect();
    let tallies = stats::policy_tallies(&ids);
    policies
        .iter()
        .zip(tallies)
        .map(|((name, _), t)| {
            let field = format!("{POLICY_LINE_PREFIX}{}", name.replace(':', "%3A"));
            let fields = vec![
                (c"calls", t.calls),
                (c"admitted", t.admitted),
                (c"denied", t.denied),
                (c"shadow_denied", t.shadow_denied),
                (c"errors", t.errors),
                (c"penalties", t.penalties),
                (c"near_limit", t.near_limit),
            ];
            (
                std::ffi::CString::new(field).expect("names hold no NUL"),
                fields,
            )
        })
        .collect()
}
