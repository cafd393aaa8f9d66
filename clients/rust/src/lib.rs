//! Rate limiting on Redis and Valkey for async Rust services: the `rl` module's commands
//! (`RL.GCRA`, `RL.TOKENBUCKET`, `RL.LEAKY`, `RL.SLIDING`, `RL.SLIDINGLOG`, `RL.FIXED`,
//! `RL.QUOTA`, `RL.ALL`, ...), or its Functions library where the module is absent (loaded by
//! this crate where missing), over redis-rs's async connections: multiplexed connections,
//! `ConnectionManager` and the async Cluster client.
//!
//! The same decisions, errors, HTTP headers, denial cache and counters as the project's Python
//! and Node packages (docs/rust.md).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let url = std::env::var("RL_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
//! use redis_rl::{Limiter, Policy};
//!
//! let client = redis::Client::open(url)?;
//! let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);
//! let per_minute = Policy::sliding(100, "1m").name("api");
//! let d = limiter.decide("doc:lib:user:42", &per_minute).await?;
//! if !d.allowed {
//!     // 429 with d.all_headers(None)
//! }
//! # assert!(d.allowed);
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

pub mod cache;
mod call;
mod command;
pub mod decision;
pub mod error;
// Generated from facts/rl.toml by scripts/generate-facts.py, whose --check compares it byte
// for byte (tests/python/test_facts.py): its one-line table rows are not rustfmt's layout, so
// rustfmt leaves the file as generated.
#[rustfmt::skip]
mod facts;
mod limiter;
pub mod metrics;
mod policy;
mod reservation;

/// The tower layer (`--features tower`).
#[cfg(feature = "tower")]
pub mod tower;

pub use cache::DenialCache;
pub use call::{Call, IntoLayer, Layer};
pub use decision::{AllDecision, Backend, Decision, TopEntry};
pub use error::{Error, Holds, Result};
pub use limiter::{Limiter, LIBRARY};
pub use metrics::Metrics;
pub use policy::{quota_period_s, Dur, Policy, QuotaUnit};
pub use reservation::{Reservation, Settled};

/// The facts this crate shares with the module and the other packages (facts/rl.toml).
pub mod limits {
    pub use crate::facts::{
        MAX_COST, MAX_COUNT, MAX_DEBT, MAX_DURATION_MS, MAX_LAYERS, MAX_LEASE_ID, MAX_POLICY_NAME,
    };
}
