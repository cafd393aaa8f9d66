//! The commands: one descriptor each (name, flags, key positions, `INFO rl`
//! slot, documentation) in [`TABLE`], which registration, `INFO rl` and
//! `COMMAND DOCS` all read, and one file per command family with its handlers.
//! A handler takes safe types (`server::Ctx`, `server::Arg`): it parses
//! (`grammar`), opens its keys (`store`) and spends through the one
//! decide-and-commit step (`spend::spend`), inside the API layer's frame
//! (`server::handler`).

mod all;
mod ban;
mod command;
#[cfg(feature = "debug-commands")]
mod debug;
mod frame;
mod gcra;
mod leases;
mod limit;
pub mod limiters;
mod peek;
pub mod policy;
mod throttle;
mod top;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::observe::stats::{self, Counted};

pub use command::Command;

/// The commands beside the limiters, counted ones first in their `INFO rl` order.
const OTHERS: [Command; 9] = [
    all::ALL,
    leases::ACQUIRE,
    leases::RELEASE,
    throttle::THROTTLE,
    peek::PEEK,
    limit::LIMIT,
    ban::BAN,
    top::TOP,
    gcra::GCRA,
];

/// Every command: the limiters (in `Kind::ALL` order), then the others; counted
/// ones first in their `INFO rl` order (`GCRA` only where it is registered:
/// see [`Command::optional`]).
pub const TABLE: [Command; limiters::LIMITERS.len() + OTHERS.len()] = {
    let mut table = [OTHERS[0]; limiters::LIMITERS.len() + OTHERS.len()];
    let mut i = 0;
    while i < table.len() {
        table[i] = match i < limiters::LIMITERS.len() {
            true => limiters::LIMITERS[i],
            false => OTHERS[i - limiters::LIMITERS.len()],
        };
        i += 1;
    }
    table
};

const _: () = assert!(TABLE.len() <= stats::SLOTS);

// No command's `INFO rl` field is named as a per-policy line is, so no policy's
// name can make its line collide with a command's (`observe::is_policy_line`;
// the one field so named, `policy_digest`, is a name policies may not take).
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        if let Some(field) = TABLE[i].stat {
            assert!(!crate::observe::is_policy_line(field.to_bytes()));
        }
        i += 1;
    }
};

/// Whether the optional commands (`GCRA`) are registered: set once at load,
/// before any command is registered, and never changed after.
static OPTIONAL_ENABLED: AtomicBool = AtomicBool::new(false);

/// Registers the optional commands (`GCRA`) too; called at load, before
/// [`registered`] and [`counted`] are read.
pub fn enable_optional(enabled: bool) {
    OPTIONAL_ENABLED.store(enabled, Ordering::Relaxed);
}

/// The command table as this server has it: without the optional commands
/// unless they were enabled at load.
fn table() -> impl Iterator<Item = &'static Command> {
    let optional = OPTIONAL_ENABLED.load(Ordering::Relaxed);
    TABLE.iter().filter(move |c| optional || !c.optional)
}

/// The commands registered in this build (`RL.DEBUG` in test builds too).
pub fn registered() -> impl Iterator<Item = &'static Command> {
    let debug: &'static [Command] = {
        #[cfg(feature = "debug-commands")]
        {
            &[debug::DEBUG]
        }
        #[cfg(not(feature = "debug-commands"))]
        {
            &[]
        }
    };
    table().chain(debug)
}

/// The commands `INFO rl` counts, in slot order.
pub fn counted() -> impl Iterator<Item = Counted> {
    table().filter_map(|c| {
        c.stat.map(|field| Counted {
            label: c.label,
            name: c.name,
            field,
        })
    })
}
