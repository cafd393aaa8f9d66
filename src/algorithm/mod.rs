//! Pure rate-limiting algorithms: no Redis, no clock. Each one is a function of
//! (parameters, stored state, now, cost) that returns a [`Decision`] and, when the
//! request is admitted with a positive cost, the state to store.
//!
//! Time is integer nanoseconds since the Unix epoch (`u128` where a value can run
//! far into the future, such as a theoretical arrival time with a huge burst).

pub mod fixed;
pub mod gcra;
pub mod leaky;
pub mod schedule;
pub mod sliding;
pub mod sliding_log;
pub mod token_bucket;

pub const NANOS_PER_MS: u64 = 1_000_000;
pub const NANOS_PER_US: u64 = 1_000;

/// Expiry times are capped here (about the year 33658): a state whose idle time
/// lies beyond it is kept until then, which no real deployment will reach.
pub const MAX_EXPIRE_MS: u64 = 1_000_000_000_000_000;

/// When a denied request could be admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// After this many nanoseconds from now.
    After(u128),
    /// Never: the cost is larger than the limiter can ever admit at once.
    Never,
}

/// The five integers of the shared reply, before rounding to milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Allowed: the delay before performing the request (non-zero only for the
    /// leaky bucket's queue). Denied: how long until the same request is admitted.
    pub retry_after: Wait,
    /// Nanoseconds until the limiter is back to its idle state.
    pub reset_after_ns: u128,
}

impl Decision {
    /// The reply: `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`,
    /// times rounded up to whole milliseconds so a client is never told to come back early.
    pub fn reply(&self) -> [i64; 5] {
        let retry = match self.retry_after {
            Wait::After(ns) => ms_ceil(ns),
            Wait::Never => -1,
        };
        [
            self.allowed as i64,
            clamp_i64(self.limit as u128),
            clamp_i64(self.remaining as u128),
            retry,
            ms_ceil(self.reset_after_ns),
        ]
    }
}

/// What a decision asks the store to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome<S> {
    pub decision: Decision,
    /// `Some` only when the request was admitted with a positive cost.
    pub write: Option<S>,
}

/// Nanoseconds rounded up to whole milliseconds, saturating at `i64::MAX`.
pub fn ms_ceil(ns: u128) -> i64 {
    clamp_i64(ns.div_ceil(NANOS_PER_MS as u128))
}

/// An absolute time in nanoseconds as a Redis expiry in milliseconds, rounded up
/// (a key must never expire before its state is idle) and capped at [`MAX_EXPIRE_MS`].
pub fn expire_ms(at_ns: u128) -> u64 {
    at_ns
        .div_ceil(NANOS_PER_MS as u128)
        .min(MAX_EXPIRE_MS as u128) as u64
}

fn clamp_i64(v: u128) -> i64 {
    v.min(i64::MAX as u128) as i64
}

/// `v` saturated into a `u64`.
fn clamp_u64(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}
