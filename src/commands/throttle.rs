//! `CL.THROTTLE key max_burst count period [quantity]`: a drop-in for
//! redis-cell's command, with its replies and its stored state (see
//! [`crate::algorithm::cell`] for the exact rules and their sources).
//!
//! Unlike redis-cell, every argument is range-checked (an `ERR` naming it, never
//! a crash), a key holding anything but a decimal TAT is an error left untouched,
//! and an admitted request replicates its effect, `SET key <tat_ns> PXAT <ms>`,
//! instead of the time-dependent command.

use super::command::{Command, Keys};
use crate::algorithm::cell;
use crate::algorithm::expire_ms;
use crate::clock;
use crate::decimal::parse_u64;
use crate::docs::{integer, key, optional, Doc};
use crate::error::RlError;
use crate::grammar::throttle::parse;
use crate::observe::stats;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::store::{Held, Key};

const LABEL: &str = "CL.THROTTLE";
const COMMAND: &str = "cl.throttle";

/// redis-cell's command, its replies and its stored state. It never waits
/// and takes no part in `BLOCK` queues: its state is redis-cell's, not a
/// limiter's of the shared grammar.
pub const THROTTLE: Command = Command {
    name: c"cl.throttle",
    label: LABEL,
    handler: command,
    flags: c"write deny-oom fast",
    keys: Keys::At(1),
    stat: Some(c"throttle"),
    doc: Some(doc),
    optional: false,
};

handler!(command, LABEL, run);

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    if !(5..=6).contains(&argv.len()) {
        return Err(RlError::WrongArity(COMMAND));
    }
    let (cell, quantity) = with_bytes(&argv[2..], parse)?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(LABEL))?;
    let stored = match key.held() {
        Held::Empty => None,
        // The state is a decimal TAT, at most 20 bytes: it must be read.
        Held::ShortString => {
            let bytes = key.short_string().ok_or_else(|| RlError::WrongType)?;
            Some(parse_u64(bytes).ok_or_else(|| RlError::ForeignValue(LABEL))?)
        }
        Held::String(_) => return Err(RlError::ForeignValue(LABEL)),
        Held::Zset | Held::Other => return Err(RlError::WrongType),
    };
    let out = cell::decide(&cell, stored, now, quantity);
    let reply = out.reply();
    let allowed = reply[0] == 0;
    let near = allowed && stats::near_limit(reply[2].max(0) as u64, reply[1].max(0) as u64);
    stats::decision(allowed, quantity, near);
    if !allowed {
        stats::denied(key.name().bytes(), None);
    }
    if let Some(tat) = out.new_tat_ns {
        key.write_string(tat.to_string().as_bytes(), expire_ms(tat.into()));
    }
    Ok(Reply::Decision(reply))
}

fn doc() -> Doc {
    Doc {
        summary: c"redis-cell's GCRA throttle: replies [limited, limit, remaining, retry_after s, reset_after s]",
        complexity: c"O(1)",
        arity: -5,
        args: vec![
            key(),
            integer(c"max_burst"),
            integer(c"count"),
            integer(c"period"),
            optional(integer(c"quantity")),
        ],
    }
}
