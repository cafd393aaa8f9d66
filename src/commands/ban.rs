//! `RL.BAN key ms`: the key's penalty set by hand. It ends `ms` from now
//! (`0` lifts a ban or a penalty) whatever limiter the key holds, or on an
//! absent key (which then holds only the ban and expires at its end); every
//! limiter on the key, and `RL.PEEK`, sees it. Replies 1 if the key existed.

use super::command::{Command, Keys};
use crate::algorithm::penalty::Penalty;
use crate::bounds::MAX_DURATION_MS;
use crate::clock;
use crate::codec::split_penalty;
use crate::decimal::parse_u64;
use crate::docs::{integer, key, Doc};
use crate::error::RlError;
use crate::grammar::Kind;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{Arg, Ctx};
use crate::store::{Held, Key};

const LABEL: &str = "RL.BAN";

pub const BAN: Command = Command {
    name: c"rl.ban",
    label: LABEL,
    handler: command,
    flags: c"write deny-oom",
    keys: Keys::At(1),
    stat: Some(c"ban"),
    doc: Some(doc),
    optional: false,
};

handler!(command, LABEL, run);

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    if argv.len() != 3 {
        return Err(RlError::WrongArity("rl.ban"));
    }
    let ms = parse_u64(argv[2].bytes())
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or(RlError::BadInteger {
            name: "ms",
            min: 0,
            max: MAX_DURATION_MS,
        })?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(LABEL))?;
    let (existed, before) = held_penalty(&key)?;
    match (ms, before) {
        (0, Some(before)) => key.lift(&before),
        (0, None) => {}
        (ms, before) => {
            let keep = before.map_or(0, |b| b.keep_ms);
            key.penalize(before, &Penalty::from_now(now, ms, keep));
        }
    }
    Ok(Reply::Integer(existed as i64))
}

/// Whether the key exists, and its penalty; an error (nothing written) if it
/// holds no limiter's state: a value of another type, or one no limiter wrote.
fn held_penalty(key: &Key) -> Result<(bool, Option<Penalty>), RlError> {
    let foreign = || RlError::ForeignValue(LABEL);
    match key.held() {
        Held::Empty => Ok((false, None)),
        Held::String(bytes) => {
            let split = split_penalty(bytes).map_err(|()| foreign())?;
            match split.state {
                Some(state) if !is_limiter_state(state) => Err(foreign()),
                _ => Ok((true, split.penalty)),
            }
        }
        Held::Zset => {
            let penalty = key.log_penalty().map_err(|()| foreign())?;
            key.as_log(penalty.is_some()).ok_or_else(foreign)?;
            Ok((true, penalty))
        }
        Held::ShortString => Err(foreign()),
        Held::Other => Err(RlError::WrongType),
    }
}

/// True if `state` starts as one of the string limiters' states does (`<tag>:`).
fn is_limiter_state(state: &[u8]) -> bool {
    Kind::ALL.iter().any(|k| {
        state
            .strip_prefix(k.tag().as_bytes())
            .is_some_and(|rest| rest.starts_with(b":"))
    })
}

fn doc() -> Doc {
    Doc {
        summary: c"Bans a key for ms milliseconds (0 lifts a ban or a penalty): every limiter on it denies until then",
        complexity: c"O(1), O(log N) for a sliding log",
        arity: 3,
        args: vec![key(), integer(c"ms")],
    }
}
