//! `RL.PEEK <ALGO> key params [COST n]`: what `RL.<ALGO> key params … PEEK`
//! replies, as a read-only command: it opens the key for reading, writes,
//! replicates and signals nothing, and so runs on replicas, in `EVAL_RO` and
//! `FCALL_RO`, and under `maxmemory` pressure. `ALGO` is one of the six
//! limiters (options `BURST` for GCRA and `COST` only: no `REFUND`, `PEEK` or
//! `BLOCK`) or `ACQUIRE` (`RL.PEEK ACQUIRE key limit timeout lease_id`, no
//! options at all), or `POLICY` (`RL.PEEK POLICY key name [COST n]`, a named
//! policy, answered as `RL.LIMIT … PEEK` answers). On a
//! master with waiters (`BLOCK`) on the key, their claims count ahead, exactly
//! as for `PEEK`.

use super::command::{Command, Keys};
use super::frame::{spend_one, spend_one_as};
use super::limit::shadowed;
use crate::algorithm::Decision;
use crate::decision::Claim;
use crate::docs::{key, many, string, Doc};
use crate::error::RlError;
use crate::facts::messages;
use crate::grammar::policy::parse_amount;
use crate::grammar::{self, acquire::parse_acquire, Form, Kind, Request};
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::{lease_member, Key};
use crate::{clock, config, policy};

const LABEL: &str = "RL.PEEK";

/// Read-only, its key at position 2 (after the algorithm).
pub const PEEK: Command = Command {
    name: c"rl.peek",
    label: LABEL,
    handler: command,
    flags: c"readonly fast",
    keys: Keys::At(2),
    stat: Some(c"peek"),
    doc: Some(doc),
    optional: false,
};

/// It always peeks and never waits.
const HOW: Spend = Spend {
    peek: true,
    block: None,
};

handler!(command, LABEL, run);

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    // The server checks the arity (-4: `POLICY key name`) first.
    if argv.len() < 4 {
        return Err(RlError::WrongArity("rl.peek"));
    }
    let algo = argv[1].bytes();
    let name = argv[2];
    // The arguments as `RL.<ALGO>` sees them: name, key, params.
    let rest = &argv[2..];
    let arity = |e: RlError| match e {
        RlError::WrongArity(_) => RlError::WrongArity("rl.peek"),
        e => e,
    };
    let now = clock::now_ns();
    if algo.eq_ignore_ascii_case(b"POLICY") {
        // `RL.PEEK POLICY key name [COST n]`: as `RL.LIMIT key name [COST n] PEEK`.
        let definition = policy::lookup_counted(rest[1].bytes(), config::caps())?;
        let (cost, charge) = with_bytes(&rest[2..], |options| {
            parse_amount(options, false, |option| RlError::UnknownOption {
                option,
                command: "rl.peek",
                expected: "COST",
            })
        })?;
        let request = Request {
            peek: true,
            ..definition.request(cost, charge)
        };
        let key = Key::open_read(ctx, name).ok_or_else(|| RlError::Internal(LABEL))?;
        let claim = Claim::Limiter {
            kind: definition.kind,
            request,
        };
        let reply = match definition.shadow {
            true => shadowed,
            false => Decision::reply,
        };
        return spend_one_as(key, claim, now, HOW, reply);
    }
    // Every other form is `ALGO key` and at least two parameters (arity -5).
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.peek"));
    }
    if algo.eq_ignore_ascii_case(b"ACQUIRE") {
        // Exactly `key limit timeout lease_id`: RL.PEEK takes no option of
        // RL.ACQUIRE's (it always peeks and never waits).
        if rest.len() != 4 {
            return Err(RlError::WrongArity("rl.peek"));
        }
        let request =
            with_bytes(&rest[1..], |p| parse_acquire(p, config::caps())).map_err(arity)?;
        let member = lease_member(rest[3].bytes());
        let key = Key::open_read(ctx, name).ok_or_else(|| RlError::Internal(LABEL))?;
        let claim = Claim::Acquire {
            lease: request.lease,
            member,
        };
        return spend_one(key, claim, now, HOW);
    }
    let kind = Kind::ALL
        .into_iter()
        .find(|k| algo.eq_ignore_ascii_case(k.tag_upper().as_bytes()))
        .ok_or_else(|| RlError::Syntax(messages::PEEK_ALGORITHM))?;
    let request = with_bytes(&rest[1..], |p| {
        grammar::parse_form(kind, p, config::caps(), Form::Peek)
    })?;
    let key = Key::open_read(ctx, name).ok_or_else(|| RlError::Internal(LABEL))?;
    spend_one(key, Claim::Limiter { kind, request }, now, HOW)
}

fn doc() -> Doc {
    Doc {
        summary: c"Read-only: replies what RL.<ALGO> key params ... PEEK replies, writing nothing (works on replicas and in read-only scripts)",
        complexity: c"O(1) (RL.SLIDINGLOG and ACQUIRE: O(log N))",
        arity: -4,
        args: vec![string(c"algorithm"), key(), many(string(c"param"))],
    }
}
