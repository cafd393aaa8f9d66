//! `RL.POLICY SET | DEL | LOAD | SAVE | GET | LIST | DIGEST | HELP`: the named policies this
//! node holds (`crate::policy`). Registered as subcommands, each with its own flags
//! and ACL categories: `SET`, `DEL`, `LOAD` and `SAVE` are `@admin` (where the server cannot
//! declare a module command's categories, Redis 7.0, they require the
//! caller's permission to run `CONFIG SET`, an `@admin` command) and refused
//! inside scripts and functions (`deny-script`, as `CONFIG SET` and `ACL
//! SETUSER` are `noscript`), the others read-only. None is replicated or
//! written to the AOF: policies are per node, like ACL users.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config;
use crate::error::RlError;
use crate::reply::Reply;
use crate::server::handler::{handler, Handler};
use crate::server::{with_bytes, Arg, Ctx};
use crate::{policy, wait};

/// The container command the subcommands hang from.
pub const CONTAINER: &CStr = c"rl.policy";

/// A subcommand of [`CONTAINER`].
pub struct Subcommand {
    /// As registered (Redis names it `rl.policy|<name>`).
    pub name: &'static CStr,
    pub handler: Handler,
    pub flags: &'static CStr,
    /// Its ACL categories, where the server lets a module declare them.
    pub acl: &'static CStr,
}

/// Whether the server put the subcommands in their ACL categories (set once,
/// at load).
pub static CATEGORIZED: AtomicBool = AtomicBool::new(false);

/// Changing policies is `@admin`: on a server without module categories, the
/// caller must be allowed `CONFIG SET` (an `@admin` command).
fn may_change(ctx: Ctx, command: &'static str) -> Result<(), RlError> {
    let by_acl = CATEGORIZED.load(Ordering::Relaxed);
    match by_acl || ctx.caller_may(&[b"config", b"set", b"rl.max-policies", b"1000"]) {
        true => Ok(()),
        false => Err(RlError::NoPermission(command)),
    }
}

/// The changing subcommands' flags: administrative, never from a script.
const CHANGES: &CStr = c"admin deny-script";

pub const SUBCOMMANDS: [Subcommand; 8] = [
    Subcommand {
        name: c"set",
        handler: set,
        flags: CHANGES,
        acl: c"admin dangerous slow",
    },
    Subcommand {
        name: c"del",
        handler: del,
        flags: CHANGES,
        acl: c"admin dangerous slow",
    },
    Subcommand {
        name: c"load",
        handler: load,
        flags: CHANGES,
        acl: c"admin dangerous slow",
    },
    Subcommand {
        name: c"save",
        handler: save,
        flags: CHANGES,
        acl: c"admin dangerous slow",
    },
    Subcommand {
        name: c"get",
        handler: get,
        flags: c"readonly",
        acl: c"slow",
    },
    Subcommand {
        name: c"list",
        handler: list,
        flags: c"readonly",
        acl: c"slow",
    },
    Subcommand {
        name: c"digest",
        handler: digest,
        flags: c"readonly fast",
        acl: c"fast",
    },
    Subcommand {
        name: c"help",
        handler: help,
        flags: c"readonly fast allow-loading allow-stale",
        acl: c"fast",
    },
];

/// `RL.POLICY HELP`, as Redis's own `CONFIG HELP` answers: a line naming each
/// subcommand, then what it does.
const HELP: [&str; 17] = [
    "RL.POLICY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "SET <name> <algorithm> <params> [BURST <b>] [SHADOW]",
    "    Create or replace the policy <name> (not with another algorithm).",
    "DEL <name>",
    "    Delete the policy <name>: 1 if it existed, else 0.",
    "GET <name>",
    "    The policy's line, as a policy file holds it, or nil.",
    "LIST",
    "    Every policy's line, sorted by name.",
    "DIGEST",
    "    The SHA-1 of LIST's lines, each ended by a newline, in hex.",
    "LOAD",
    "    Replace every policy by the policy file's, all or nothing.",
    "SAVE",
    "    Write every policy to the policy file, replacing it whole.",
    "HELP",
    "    Print this help.",
];

handler!(set, "RL.POLICY", |ctx: Ctx, argv: &[Arg]| {
    // RL.POLICY SET name ALGO params...
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.policy|set"));
    }
    may_change(ctx, "rl.policy|set")?;
    with_bytes(&argv[3..], |words| {
        policy::set(argv[2].bytes(), words, config::caps())
    })?;
    wait::policies_changed(ctx);
    Ok(Reply::Ok)
});

handler!(del, "RL.POLICY", |ctx: Ctx, argv: &[Arg]| {
    let [_, _, name] = argv else {
        return Err(RlError::WrongArity("rl.policy|del"));
    };
    may_change(ctx, "rl.policy|del")?;
    let deleted = policy::delete(name.bytes())?;
    wait::policies_changed(ctx);
    Ok(Reply::Integer(deleted.into()))
});

handler!(get, "RL.POLICY", |_: Ctx, argv: &[Arg]| {
    let [_, _, name] = argv else {
        return Err(RlError::WrongArity("rl.policy|get"));
    };
    Ok(Reply::Bulk(policy::get(name.bytes())?))
});

handler!(list, "RL.POLICY", |_: Ctx, argv: &[Arg]| {
    if argv.len() != 2 {
        return Err(RlError::WrongArity("rl.policy|list"));
    }
    Ok(Reply::Bulks(policy::list()))
});

handler!(digest, "RL.POLICY", |_: Ctx, argv: &[Arg]| {
    if argv.len() != 2 {
        return Err(RlError::WrongArity("rl.policy|digest"));
    }
    Ok(Reply::Bulk(Some(policy::digest())))
});

handler!(load, "RL.POLICY", |ctx: Ctx, argv: &[Arg]| {
    if argv.len() != 2 {
        return Err(RlError::WrongArity("rl.policy|load"));
    }
    may_change(ctx, "rl.policy|load")?;
    policy::load()?;
    wait::policies_changed(ctx);
    Ok(Reply::Ok)
});

handler!(save, "RL.POLICY", |ctx: Ctx, argv: &[Arg]| {
    if argv.len() != 2 {
        return Err(RlError::WrongArity("rl.policy|save"));
    }
    may_change(ctx, "rl.policy|save")?;
    policy::save()?;
    Ok(Reply::Ok)
});

handler!(help, "RL.POLICY", |_: Ctx, argv: &[Arg]| {
    if argv.len() != 2 {
        return Err(RlError::WrongArity("rl.policy|help"));
    }
    Ok(Reply::Lines(&HELP))
});
