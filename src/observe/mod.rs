//! What the module tells operators: `INFO rl` (per-command counters kept
//! exact across `CONFIG RESETSTAT`, and the waiting gauge). It takes safe
//! types only: the server's `INFO` callback and cron event
//! (`server::callbacks`) call into it. Everything here is below the commands and
//! the wait queue: they report into it; it reads none of them.

mod info;
mod ledger;
pub mod stats;
pub mod top;

use std::cell::Cell;

pub use info::{
    is_policy_line, is_reserved_policy_name, policy_lines, section, POLICIES, POLICY_DIGEST,
};
pub use ledger::Token;

thread_local! {
    /// Clients waiting now (`BLOCK`); zero means no call pays for waiting.
    static WAITING: Cell<usize> = const { Cell::new(0) };
}

/// The number of clients waiting now.
pub fn waiting() -> usize {
    WAITING.with(Cell::get)
}

/// A client began waiting.
pub fn wait_began() {
    WAITING.with(|c| c.set(c.get() + 1));
}

/// A client stopped waiting (however its wait ended).
pub fn wait_ended() {
    WAITING.with(|c| c.set(c.get().saturating_sub(1)));
}
