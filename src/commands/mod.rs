//! The commands: one descriptor each (name, flags, key positions, `INFO rl`
//! slot, documentation) in [`TABLE`], which registration, `INFO rl` and
//! `COMMAND DOCS` all read, and one file per command family with its handlers.
//! A handler parses (`grammar`), opens its keys (`store`) and spends through
//! the wait queue's one step (`wait::spend`), behind `frame::guarded`.

mod all;
mod command;
#[cfg(feature = "debug-commands")]
mod debug;
mod frame;
mod leases;
mod limiters;
mod peek;
mod throttle;

use crate::observe::stats::{self, Counted};

pub use command::Command;

/// Every command, counted ones first in their `INFO rl` order.
pub const TABLE: [Command; 11] = [
    limiters::GCRA,
    limiters::TOKENBUCKET,
    limiters::LEAKY,
    limiters::SLIDING,
    limiters::SLIDINGLOG,
    limiters::FIXED,
    all::ALL,
    leases::ACQUIRE,
    leases::RELEASE,
    throttle::THROTTLE,
    peek::PEEK,
];

const _: () = assert!(TABLE.len() <= stats::SLOTS);

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
    TABLE.iter().chain(debug)
}

/// The commands `INFO rl` counts, in slot order.
pub fn counted() -> impl Iterator<Item = Counted> {
    TABLE.iter().filter_map(|c| {
        c.stat.map(|field| Counted {
            label: c.label,
            name: c.name,
            field,
        })
    })
}
