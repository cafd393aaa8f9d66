//! The `INFO rl` section: `rl_stats`, one line per counted command, e.g.
//! `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1`,
//! then the waits: the clients waiting now (a gauge) and the waits that ended
//! admitted or not (counters, cleared with commandstats). The server's `INFO`
//! callback (`server::callbacks::on_info`) writes these lines.

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
