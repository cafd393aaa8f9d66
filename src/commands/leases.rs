//! `RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]` and `RL.RELEASE key lease_id`:
//! in-flight (concurrency) limits. At most `limit` leases are held at once; a
//! lease not released within `timeout` lapses by itself, so a crashed client
//! cannot leak capacity; acquiring a held id renews it (a heartbeat).

use redis_module::raw;

use super::command::{Command, Keys};
use super::frame::{handler, spend_one};
use crate::decision::{lease::release_lease, Claim};
use crate::docs::{flag, integer, key, option, string, Doc};
use crate::error::RlError;
use crate::ffi::{arg_bytes, with_bytes};
use crate::grammar::acquire::{check_id, parse_acquire};
use crate::reply::Reply;
use crate::store::{lease_member, Key};
use crate::wait::{self, Spend};
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

fn run_acquire(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<Reply, RlError> {
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.acquire"));
    }
    let request = with_bytes(&argv[2..], |params| parse_acquire(params, config::caps()))?;
    let member = lease_member(arg_bytes(argv[4]));
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(ACQUIRE_LABEL))?;
    let claim = Claim::Acquire {
        lease: request.lease,
        member,
    };
    let how = Spend {
        peek: request.peek,
        block: request.block,
    };
    spend_one(ctx, argv[1], key, claim, now, how)
}

fn run_release(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<i64, RlError> {
    if argv.len() != 3 {
        return Err(RlError::WrongArity("rl.release"));
    }
    let id = arg_bytes(argv[2]);
    check_id(id)?;
    let member = lease_member(id);
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(RELEASE_LABEL))?;
    let released = release_lease(&key, &member, now)?;
    if released.write.is_some() && wait::active() {
        wait::wake(ctx, argv[1]);
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
