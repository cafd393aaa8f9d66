//! Every per-call cap, in one place: what one call may ask for and what it may
//! cost the server, whatever its arguments or the key hold (the operations
//! guide's "Per-call bounds"). Operator-tunable limits are settings
//! (`config.rs`); these are fixed. Those the library and the clients share
//! are facts (facts/rl.toml's `bounds`).

use crate::facts;

/// The largest count parameter (`limit`, `capacity`, `refill`, `leak`, `BURST`,
/// `max_burst`, `count`).
pub const MAX_COUNT: u64 = facts::MAX_COUNT;
/// The largest `COST`, `REFUND`, `DEBIT` and `quantity`.
pub const MAX_COST: u64 = facts::MAX_COST;
/// The most units a key's limiter can owe beyond what it admits at once
/// (`DEBIT`): a debit past it saturates there.
pub const MAX_DEBT: u64 = facts::MAX_DEBT;
const _: () = assert!(MAX_DEBT == crate::algorithm::MAX_DEBT);
/// The longest duration parameter (`period`, `window`, `timeout`): 3650 days.
pub const MAX_DURATION_MS: u64 = facts::MAX_DURATION_MS;
/// The longest `BLOCK`, in milliseconds (as long as the longest duration).
pub const MAX_BLOCK_MS: u64 = MAX_DURATION_MS;
/// The longest `CL.THROTTLE` period, in seconds (the longest duration).
pub const MAX_PERIOD_S: u64 = MAX_DURATION_MS / 1_000;
/// At most this many layers in one `RL.ALL`.
pub const MAX_LAYERS: u64 = facts::MAX_LAYERS;
/// Lease ids are 1 to this many bytes (any bytes).
pub const MAX_LEASE_ID: usize = facts::MAX_LEASE_ID;
/// The most bytes `RL.PEEK`'s read-only handle copies of a string value. Every
/// state the module writes is shorter (a tag and at most three 38-digit fields,
/// or a quota's three counts and calendar, with a penalty after either: at most
/// `codec::Penalized`'s 216 bytes), so a longer value is foreign whatever its
/// further bytes: the copy decides as the whole value would.
pub const COPY_MAX: usize = 256;
/// The most lapsed sorted-set entries (sliding-log entries or leases) one
/// write removes; the rest leave with later writes or the key's expiry.
pub use crate::algorithm::sliding_log::TRIM_MAX;
