//! What the module tells operators: `INFO rl` (per-command counters kept
//! exact across `CONFIG RESETSTAT`, and the waiting gauge) and the server
//! fields it reads to keep them. Everything here is below the commands and
//! the wait queue: they report into it; it reads none of them.

mod info;
mod ledger;
mod server_info;
pub mod stats;

use std::cell::Cell;

pub use info::info;
pub use ledger::Token;
pub use server_info::ServerInfo;

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
