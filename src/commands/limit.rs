//! `RL.LIMIT key policy [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]`: decides
//! exactly as the policy's own command with the same options on the same key
//! (its state, replies, replication, waits and bounds). A `SHADOW` policy
//! answers a denial as `allowed 1`, `remaining 0`, with the enforced
//! `retry_after_ms` and `reset_after_ms`; it decides and writes as enforced,
//! and never waits. A call that waits holds its policy by name
//! ([`Claim::Policy`]): woken, it decides by the policy as it is then.

use super::command::{Command, Keys};
use super::frame::spend_one_as;
use crate::algorithm::Decision;
use crate::decision::Claim;
use crate::docs::{flag, key, one_of, option, string, Doc};
use crate::error::RlError;
use crate::grammar::policy::parse_limit_options;
use crate::grammar::Request;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::Key;
use crate::{clock, config, policy};

const LABEL: &str = "RL.LIMIT";

/// Without `fast`: its policy may be a sliding log (see `RL.SLIDINGLOG`).
pub const LIMIT: Command = Command {
    name: c"rl.limit",
    label: LABEL,
    handler: command,
    flags: c"write deny-oom",
    keys: Keys::At(1),
    stat: Some(c"limit"),
    doc: Some(doc),
    optional: false,
};

handler!(command, LABEL, run);

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    if argv.len() < 3 {
        return Err(RlError::WrongArity("rl.limit"));
    }
    // The policy first: a call's errors past it are counted as the policy's.
    let definition = policy::lookup_counted(argv[2].bytes(), config::caps())?;
    let options = with_bytes(&argv[3..], parse_limit_options)?;
    // A shadow policy never waits (its denials admit).
    let block = options.block.filter(|_| !definition.shadow);
    let request = Request {
        peek: options.peek,
        block,
        ..definition.request(options.cost, options.charge)
    };
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(LABEL))?;
    let how = Spend {
        peek: request.peek,
        block,
    };
    let claim = match block {
        Some(_) => Claim::Policy {
            by: policy::reference(argv[2].bytes())?,
            request,
        },
        None => Claim::Limiter {
            kind: definition.kind,
            request,
        },
    };
    let reply = match definition.shadow {
        true => shadowed,
        false => Decision::reply,
    };
    spend_one_as(key, claim, now, how, reply)
}

/// A shadow policy's reply: a denial answered as admitted with nothing left,
/// its waits as enforcement gives them (so a non-zero `retry_after_ms` with
/// `allowed 1` is a shadowed denial).
pub fn shadowed(d: &Decision) -> [i64; 5] {
    let mut reply = d.reply();
    if !d.allowed {
        reply[0] = 1;
        reply[2] = 0;
    }
    reply
}

fn doc() -> Doc {
    Doc {
        summary: c"Decides by a named policy exactly as its own command would",
        complexity: c"As the policy's command: O(1), O(log N) for a sliding log",
        arity: -3,
        args: vec![
            key(),
            string(c"policy"),
            one_of(
                c"amount",
                vec![
                    option(c"COST", c"cost"),
                    option(c"REFUND", c"refund"),
                    option(c"DEBIT", c"debit"),
                ],
            ),
            flag(c"PEEK", c"peek"),
            option(c"BLOCK", c"ms"),
        ],
    }
}
