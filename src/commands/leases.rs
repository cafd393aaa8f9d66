//! `RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]` and `RL.RELEASE key lease_id`:
//! in-flight (concurrency) limits. At most `limit` leases are held at once; a
//! lease not released within `timeout` lapses by itself, so a crashed client
//! cannot leak capacity; acquiring a held id renews it (a heartbeat).

use super::command::{Command, Keys};
use super::frame::spend_one;
use crate::decision::{lease::release_lease, Claim};
use crate::docs::{flag, integer, key, option, string, Doc};
use crate::error::RlError;
use crate::grammar::acquire::{check_id, parse_acquire};
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::{lease_member, Key};
use crate::wait;
use crate::{clock, config};

const ACQUIRE_LABEL: &str = "RL.ACQUIRE";
const RELEASE_LABEL: &str = "RL.RELEASE";

/// O(lapsed leases) per call, memory capped like the sliding log.
pub const ACQUIRE: Command = Command {
    name: c"rl.acquire",
    label: ACQUIRE_LABEL,
    handler: acquire,
    flags: c"write deny-oom fast",
    keys: Keys::At(1),
    stat: Some(c"acquire"),
    doc: Some(acquire_doc),
    optional: false,
};

pub const RELEASE: Command = Command {
    name: c"rl.release",
    label: RELEASE_LABEL,
    handler: release,
    flags: c"write fast",
    keys: Keys::At(1),
    stat: Some(c"release"),
    doc: Some(release_doc),
    optional: false,
};

handler!(acquire, ACQUIRE_LABEL, run_acquire);

handler!(release, RELEASE_LABEL, |ctx, argv| run_release(ctx, argv)
    .map(Reply::Integer));

fn run_acquire(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.acquire"));
    }
    let request = with_bytes(&argv[2..], |params| parse_acquire(params, config::caps()))?;
    let member = lease_member(argv[4].bytes());
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(ACQUIRE_LABEL))?;
    let claim = Claim::Acquire {
        lease: request.lease,
        member,
    };
    let how = Spend {
        peek: request.peek,
        block: request.block,
    };
    spend_one(key, claim, now, how)
}

fn run_release(ctx: Ctx, argv: &[Arg]) -> Result<i64, RlError> {
    if argv.len() != 3 {
        return Err(RlError::WrongArity("rl.release"));
    }
    let id = argv[2].bytes();
    check_id(id)?;
    let member = lease_member(id);
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(RELEASE_LABEL))?;
    let released = release_lease(&key, &member, now)?;
    if released.write.is_some() && wait::active() {
        wait::wake_key(&key);
    }
    Ok(released.held as i64)
}

fn acquire_doc() -> Doc {
    Doc {
        summary: c"In-flight limit: hold one of limit leases for at most timeout (renews a held lease_id)",
        complexity: c"O(log N), N the leases stored; a write also removes up to 64 lapsed leases",
        arity: -5,
        args: vec![
            key(),
            integer(c"limit"),
            string(c"timeout"),
            string(c"lease_id"),
            flag(c"PEEK", c"peek"),
            option(c"BLOCK", c"ms"),
        ],
    }
}

fn release_doc() -> Doc {
    Doc {
        summary: c"Releases a lease taken with RL.ACQUIRE: 1 if it was held, else 0",
        complexity: c"O(log N), N the leases stored; a write also removes up to 64 lapsed leases",
        arity: 3,
        args: vec![key(), string(c"lease_id")],
    }
}
