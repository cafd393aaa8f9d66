//! Per-command counters for `INFO rl`: calls, admitted, denied, errors, and the
//! total cost admitted and denied. `CONFIG RESETSTAT` clears them (a command
//! filter sees it go by). Commands run on Redis's main thread, so relaxed
//! atomics are only needed to make the statics `Sync`.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use redis_module::raw;

#[derive(Default)]
pub struct Counters {
    calls: AtomicU64,
    admitted: AtomicU64,
    denied: AtomicU64,
    errors: AtomicU64,
    cost_admitted: AtomicU64,
    cost_denied: AtomicU64,
}

impl Counters {
    const fn new() -> Counters {
        Counters {
            calls: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            cost_admitted: AtomicU64::new(0),
            cost_denied: AtomicU64::new(0),
        }
    }

    fn fields(&self) -> [(&'static std::ffi::CStr, u64); 6] {
        [
            (c"calls", self.calls.load(Relaxed)),
            (c"admitted", self.admitted.load(Relaxed)),
            (c"denied", self.denied.load(Relaxed)),
            (c"errors", self.errors.load(Relaxed)),
            (c"cost_admitted", self.cost_admitted.load(Relaxed)),
            (c"cost_denied", self.cost_denied.load(Relaxed)),
        ]
    }

    fn reset(&self) {
        for c in [
            &self.calls,
            &self.admitted,
            &self.denied,
            &self.errors,
            &self.cost_admitted,
            &self.cost_denied,
        ] {
            c.store(0, Relaxed);
        }
    }
}

/// Each counted command: its label (as in error messages), its INFO field name, its counters.
static TABLE: [(&str, &std::ffi::CStr, Counters); 10] = [
    ("RL.GCRA", c"gcra", Counters::new()),
    ("RL.TOKENBUCKET", c"tokenbucket", Counters::new()),
    ("RL.LEAKY", c"leaky", Counters::new()),
    ("RL.SLIDING", c"sliding", Counters::new()),
    ("RL.SLIDINGLOG", c"slidinglog", Counters::new()),
    ("RL.FIXED", c"fixed", Counters::new()),
    ("RL.ALL", c"all", Counters::new()),
    ("RL.ACQUIRE", c"acquire", Counters::new()),
    ("RL.RELEASE", c"release", Counters::new()),
    ("CL.THROTTLE", c"throttle", Counters::new()),
];

fn counters(label: &str) -> Option<&'static Counters> {
    TABLE
        .iter()
        .find(|(l, _, _)| *l == label)
        .map(|(_, _, c)| c)
}

/// A call finished: with an error, or with a reply.
pub fn call(label: &str, failed: bool) {
    if let Some(c) = counters(label) {
        c.calls.fetch_add(1, Relaxed);
        if failed {
            c.errors.fetch_add(1, Relaxed);
        }
    }
}

/// A decision: admitted or denied, for `cost` units (a refund counts as admitted with no cost).
pub fn decision(label: &str, allowed: bool, cost: u64) {
    if let Some(c) = counters(label) {
        let (n, total) = if allowed {
            (&c.admitted, &c.cost_admitted)
        } else {
            (&c.denied, &c.cost_denied)
        };
        n.fetch_add(1, Relaxed);
        total.fetch_add(cost, Relaxed);
    }
}

/// The `INFO` callback: section `rl_stats`, one line per command, e.g.
/// `rl_gcra:calls=3,admitted=2,denied=1,errors=0,cost_admitted=2,cost_denied=1`.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    // SAFETY: Redis calls this with a live info context; every string is NUL-terminated.
    unsafe {
        raw::RedisModule_InfoAddSection.expect("InfoAddSection")(ctx, c"stats".as_ptr());
        for (_, name, counters) in &TABLE {
            raw::RedisModule_InfoBeginDictField.expect("InfoBeginDictField")(ctx, name.as_ptr());
            for (field, value) in counters.fields() {
                raw::RedisModule_InfoAddFieldULongLong.expect("InfoAddFieldULongLong")(
                    ctx,
                    field.as_ptr(),
                    value,
                );
            }
            raw::RedisModule_InfoEndDictField.expect("InfoEndDictField")(ctx);
        }
    }
}

/// A command filter that clears the counters when `CONFIG RESETSTAT` goes by
/// (Redis gives modules no event for it). It changes no command.
pub extern "C" fn on_command(filter: *mut raw::RedisModuleCommandFilterCtx) {
    let arg = |i: c_int| -> &[u8] {
        // SAFETY: `filter` is live during this callback and `i` is below the count.
        unsafe {
            let s = raw::RedisModule_CommandFilterArgGet.expect("CommandFilterArgGet")(filter, i);
            let mut len = 0usize;
            let ptr = raw::RedisModule_StringPtrLen.expect("StringPtrLen")(s, &mut len);
            std::slice::from_raw_parts(ptr.cast(), len)
        }
    };
    // SAFETY: as above.
    let count =
        unsafe { raw::RedisModule_CommandFilterArgsCount.expect("CommandFilterArgsCount")(filter) };
    if count == 2
        && arg(0).eq_ignore_ascii_case(b"CONFIG")
        && arg(1).eq_ignore_ascii_case(b"RESETSTAT")
    {
        for (_, _, counters) in &TABLE {
            counters.reset();
        }
    }
}
