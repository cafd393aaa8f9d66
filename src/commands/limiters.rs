//! The limiters: `RL.<ALGO> key <params> [COST n | REFUND n] [PEEK] [BLOCK ms]`,
//! one command per kind, expanded from the facts' list of kinds.

use std::ffi::{c_int, CStr};

use super::command::{Command, Keys};
use super::frame::spend_one;
use crate::decision::Claim;
use crate::docs::{self, flag, key, one_of, option, Doc};
use crate::error::RlError;
use crate::facts::with_kinds;
use crate::grammar::{self, Kind};
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::Key;
use crate::{clock, config};

/// A kind's command beyond its name and grammar: its registration flags, its
/// `INFO rl` field and its documentation (written in `crate::kinds`).
pub trait LimiterCommand {
    const FLAGS: &'static CStr;
    const STAT: &'static CStr;
    fn doc() -> Doc;
}

/// A limiter that is O(1): `fast`.
pub const WRITE_FAST: &CStr = c"write deny-oom fast";

macro_rules! commands {
    ($($variant:ident($module:ident)),*) => {
        $(handler!($module, Kind::$variant.label(), |ctx, argv| run(ctx, argv, Kind::$variant));)*

        /// Each kind's command (one key, counted), in `Kind::ALL` order.
        pub const LIMITERS: [Command; Kind::ALL.len()] = [$(Command {
            name: Kind::$variant.name(),
            label: Kind::$variant.label(),
            handler: $module,
            flags: <crate::algorithm::$module::$variant as LimiterCommand>::FLAGS,
            keys: Keys::At(1),
            stat: Some(<crate::algorithm::$module::$variant as LimiterCommand>::STAT),
            doc: Some(<crate::algorithm::$module::$variant as LimiterCommand>::doc),
            optional: false,
        },)*];
    };
}

with_kinds!(commands);

fn run(ctx: Ctx, argv: &[Arg], kind: Kind) -> Result<Reply, RlError> {
    if argv.len() < kind.min_argc() {
        return Err(RlError::WrongArity(kind.command()));
    }
    let request = with_bytes(&argv[2..], |p| grammar::parse(kind, p, config::caps()))?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or_else(|| RlError::Internal(kind.label()))?;
    let how = Spend {
        peek: request.peek,
        block: request.block,
    };
    spend_one(key, Claim::Limiter { kind, request }, now, how)
}

/// A limiter's documentation: the key, its parameters, then the options
/// every limiter takes.
pub fn doc(summary: &'static CStr, params: Vec<docs::Arg>) -> Doc {
    let arity = -(2 + params.len() as c_int);
    let mut args = vec![key()];
    args.extend(params);
    args.extend([
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
    ]);
    Doc {
        summary,
        complexity: c"O(1)",
        arity,
        args,
    }
}
