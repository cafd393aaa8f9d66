//! The `INFO rl` section: `rl_stats`, one line per counted command, e.g.
//! `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1`,
//! then the waits: the clients waiting now (a gauge) and the waits that ended
//! admitted or not (counters, cleared with commandstats). The server's `INFO`
//! callback (`server::callbacks::on_info`) writes these lines, and those of
//! the `rl_policies` section: one per named policy.

use std::ffi::CStr;

use super::ledger::Tally;
use super::{stats, waiting};

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
            ];
            (command.field, fields)
        })
        .collect();
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(|(_, t)| f(t)).fold(0, u64::wrapping_add);
    lines.push((
        c"waits",
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
/// ends at its first `:`).
pub fn policy_lines(
    policies: &[(String, u32)],
) -> Vec<(std::ffi::CString, Vec<(&'static CStr, u64)>)> {
    let ids: Vec<u32> = policies.iter().map(|(_, id)| *id).collect();
    let tallies = stats::policy_tallies(&ids);
    policies
        .iter()
        .zip(tallies)
        .map(|((name, _), t)| {
            let field = format!("policy_{}", name.replace(':', "%3A"));
            let fields = vec![
                (c"calls", t.calls),
                (c"admitted", t.admitted),
                (c"denied", t.denied),
                (c"shadow_denied", t.shadow_denied),
                (c"errors", t.errors),
            ];
            (
                std::ffi::CString::new(field).expect("names hold no NUL"),
                fields,
            )
        })
        .collect()
}
