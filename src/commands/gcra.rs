//! `GCRA key max_burst tokens_per_period period [TOKENS count]`: Redis's
//! designed command (redis/redis#14826, renamed in #14950; see
//! [`crate::grammar::gcra`] for its grammar and errors), registered only where
//! the server has no `GCRA` of its own and the `gcra-command` setting is `yes`.
//!
//! It is `RL.GCRA key <tokens_per_period> <period> BURST <max_burst + 1>
//! COST <count>` on the same state (`gcra:<tat_ns>`), through the same spend
//! (waiters on the key come first, effects replicate as `SET … PXAT`), replied
//! in Redis's form: `[limited, max_burst + 1, remaining, retry_after s,
//! full_burst_after s]` ([`redis_reply`]). It never waits.

use super::command::{Command, Keys};
use super::frame::spend_one_as;
use crate::algorithm::gcra::redis_reply;
use crate::clock;
use crate::decision::Claim;
use crate::docs::{double, integer, key, option, Doc};
use crate::error::RlError;
use crate::grammar::gcra::parse;
use crate::grammar::Kind;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::{Held, Key};

const LABEL: &str = "GCRA";
const COMMAND: &str = "gcra";

/// Redis's flags for it (`WRITE DENYOOM FAST`); registered only when enabled.
pub const GCRA: Command = Command {
    name: c"gcra",
    label: LABEL,
    handler: command,
    flags: c"write deny-oom fast",
    keys: Keys::At(1),
    stat: Some(c"gcra_command"),
    doc: Some(doc),
    optional: true,
};

/// It decides at once: no `PEEK` (`TOKENS` is at least 1), no `BLOCK`.
const HOW: Spend = Spend {
    peek: false,
    block: None,
};

handler!(command, LABEL, run);

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    // The server checks the arity (-5) first; `gcra.c` refuses more than 7.
    if !(5..=7).contains(&argv.len()) {
        return Err(RlError::WrongArity(COMMAND));
    }
    let args = with_bytes(&argv[2..], parse)?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(LABEL))?;
    if let Some(overflow) = args.overflow((now / 1_000) as i64) {
        // As in `gcra.c`, a key of another type is reported first.
        return Err(match key.held() {
            Held::Zset | Held::Other => RlError::WrongType,
            _ => overflow,
        });
    }
    let request = args.request()?;
    let claim = Claim::Limiter {
        kind: Kind::Gcra,
        request,
    };
    spend_one_as(key, claim, now, HOW, redis_reply)
}

fn doc() -> Doc {
    Doc {
        summary: c"Redis's GCRA command on RL.GCRA's state: replies [limited, max_burst + 1, remaining, retry_after s, full_burst_after s]",
        complexity: c"O(1)",
        arity: -5,
        args: vec![
            key(),
            integer(c"max-burst"),
            integer(c"tokens-per-period"),
            double(c"period"),
            option(c"TOKENS", c"count"),
        ],
    }
}
