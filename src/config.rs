//! Operator settings: `loadmodule librl.so <name> <value> ...` at load time and
//! `CONFIG SET/GET rl.<name>` at run time. Redis refuses out-of-range values
//! with its own error naming the setting.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::args::{Caps, DEFAULT_SLIDING_LOG_MAX};

/// `rl.sliding-log-max-limit`: the largest `limit` RL.SLIDINGLOG accepts (each
/// key holds up to `limit` entries). Invariant: within [`SLIDING_LOG_MAX_RANGE`].
pub static SLIDING_LOG_MAX_LIMIT: AtomicI64 = AtomicI64::new(DEFAULT_SLIDING_LOG_MAX as i64);
pub const SLIDING_LOG_MAX_RANGE: (i64, i64) = (1, 100_000_000);

/// The caps in force for this call.
pub fn caps() -> Caps {
    Caps {
        sliding_log_max: SLIDING_LOG_MAX_LIMIT.load(Ordering::Relaxed).max(1) as u64,
    }
}
