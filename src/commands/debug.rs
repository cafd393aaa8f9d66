//! `RL.DEBUG`, compiled only with the `debug-commands` feature (test builds):
//! `RL.DEBUG CLOCK <offset_ms>` shifts the module's clock (negative steps it
//! back), `RL.DEBUG PANIC` panics inside a command to prove it becomes an error,
//! `RL.DEBUG CALLDELAY <us>` pauses every server call made about a key (so a
//! test can make the key expire during it) and `RL.DEBUG VANISHED` counts the
//! keys that did.

use super::command::{Command, Keys};
use crate::clock;
use crate::error::RlError;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{Arg, Ctx};
use crate::store::hooks;

/// Test builds only: no flags, no keys, not counted, not documented.
pub const DEBUG: Command = Command {
    name: c"rl.debug",
    label: "RL.DEBUG",
    handler: command,
    flags: c"",
    keys: Keys::None,
    stat: None,
    doc: None,
    optional: false,
};

handler!(command, "RL.DEBUG", run);

fn run(_ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    let word = |i: usize| argv.get(i).map(|a| a.bytes());
    match (word(1), word(2)) {
        (Some(sub), Some(ms)) if sub.eq_ignore_ascii_case(b"CLOCK") => {
            let ms: i64 = std::str::from_utf8(ms)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| RlError::BadInteger {
                    name: "offset_ms",
                    min: 0,
                    max: i64::MAX as u64,
                })?;
            clock::offset::set(ms.saturating_mul(1_000_000));
            Ok(Reply::Ok)
        }
        (Some(sub), Some(us)) if sub.eq_ignore_ascii_case(b"CALLDELAY") => {
            let us = crate::decimal::parse_u64(us).ok_or_else(|| RlError::BadInteger {
                name: "delay_us",
                min: 0,
                max: u64::MAX,
            })?;
            hooks::set_call_delay(us);
            Ok(Reply::Ok)
        }
        (Some(sub), None) if sub.eq_ignore_ascii_case(b"VANISHED") => {
            Ok(Reply::Integer(hooks::vanished() as i64))
        }
        (Some(sub), None) if sub.eq_ignore_ascii_case(b"PANIC") => {
            panic!("RL.DEBUG PANIC: a deliberate panic")
        }
        _ => Err(RlError::WrongArity("rl.debug")),
    }
}
