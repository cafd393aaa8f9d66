//! The `INFO rl` section: `rl_stats`, one line per counted command, e.g.
//! `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1`,
//! then the waits: the clients waiting now (a gauge) and the waits that ended
//! admitted or not (counters, cleared with commandstats).

use std::os::raw::c_int;

use redis_module::raw;

use super::ledger::Tally;
use super::{stats, waiting};
use crate::ffi::api;

/// The `INFO` callback.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let tallies = stats::tallies(for_crash_report != 0);
    api!(RedisModule_InfoAddSection(ctx, c"stats".as_ptr()));
    for (command, t) in &tallies {
        dict(
            ctx,
            command.field,
            &[
                (c"calls", t.calls),
                (c"admitted", t.admitted),
                (c"denied", t.denied),
                (c"errors", t.errors),
                (c"cost_admitted", t.cost_admitted),
                (c"cost_denied", t.cost_denied),
            ],
        );
    }
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(|(_, t)| f(t)).fold(0, u64::wrapping_add);
    dict(
        ctx,
        c"waits",
        &[
            (c"waiting", waiting() as u64),
            (c"admitted", sum(|t| t.waits_admitted)),
            (c"timed_out", sum(|t| t.waits_timed_out)),
        ],
    );
}

/// One `name:field=value,...` line.
fn dict(
    ctx: *mut raw::RedisModuleInfoCtx,
    name: &std::ffi::CStr,
    fields: &[(&std::ffi::CStr, u64)],
) {
    api!(RedisModule_InfoBeginDictField(ctx, name.as_ptr()));
    for (field, value) in fields {
        api!(RedisModule_InfoAddFieldULongLong(
            ctx,
            field.as_ptr(),
            *value
        ));
    }
    api!(RedisModule_InfoEndDictField(ctx));
}
