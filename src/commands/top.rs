//! `RL.TOP name [COUNT n]` and `RL.TOP COMMAND cmd [COUNT n]`: the keys a
//! named policy (or a spelled-out command, by its registered name, e.g.
//! `rl.gcra`) denied most since the counters were last cleared, as
//! `[key, denials, overestimate]` triples, heaviest first, at most `n`
//! (default 10). The two forms differ in their number of arguments, so a
//! policy named `COMMAND` is still asked with `RL.TOP COMMAND [COUNT n]`.
//! Read-only and per node: it reads `INFO rl`'s bookkeeping
//! ([`crate::observe::top`]), never a key.

use super::command::{Command, Keys};
use crate::decimal::parse_u64;
use crate::docs::{option, string, string_option, Doc};
use crate::error::RlError;
use crate::facts::messages;
use crate::observe::stats::{self, TopOf};
use crate::policy;
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{Arg, Ctx};

const LABEL: &str = "RL.TOP";

/// The entries listed without `COUNT`.
const DEFAULT_COUNT: usize = 10;
/// The largest `COUNT`.
const MAX_COUNT: u64 = 1_000_000;

pub const TOP: Command = Command {
    name: c"rl.top",
    label: LABEL,
    handler: command,
    flags: c"readonly",
    keys: Keys::None,
    stat: Some(c"top"),
    doc: Some(doc),
    optional: false,
};

handler!(command, LABEL, run);

fn run(_ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    // `RL.TOP name` and `RL.TOP name COUNT n` have an even number of words,
    // `RL.TOP COMMAND cmd [COUNT n]` an odd one.
    let (target, rest) = match argv.len() {
        2 | 4 => (None, &argv[2..]),
        3 | 5 if argv[1].bytes().eq_ignore_ascii_case(b"COMMAND") => {
            (Some(argv[2].bytes()), &argv[3..])
        }
        3 | 5 => return Err(RlError::Syntax(messages::TOP_SHAPE)),
        _ => return Err(RlError::WrongArity("rl.top")),
    };
    let count = match rest {
        [] => DEFAULT_COUNT,
        [token, n] if token.bytes().eq_ignore_ascii_case(b"COUNT") => parse_u64(n.bytes())
            .filter(|n| (1..=MAX_COUNT).contains(n))
            .ok_or(RlError::BadInteger {
                name: "count",
                min: 1,
                max: MAX_COUNT,
            })? as usize,
        _ => return Err(RlError::Syntax(messages::TOP_SHAPE)),
    };
    let of = match target {
        Some(name) => TopOf::Command(name),
        None => TopOf::Policy(policy::reference(argv[1].bytes())?.id),
    };
    let entries = stats::top(of, count).ok_or_else(|| {
        RlError::NoSuchCommand(String::from_utf8_lossy(target.unwrap_or_default()).into_owned())
    })?;
    Ok(Reply::Top(entries))
}

fn doc() -> Doc {
    Doc {
        summary: c"The keys a policy (or, with COMMAND, a command) denied most: [key, denials, overestimate], heaviest first",
        complexity: c"O(M log M) where M is rl.top-keys",
        arity: -2,
        args: vec![
            string_option(c"COMMAND", c"command"),
            string(c"policy"),
            option(c"COUNT", c"count"),
        ],
    }
}
