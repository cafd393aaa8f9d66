//! The six limiters: `RL.<ALGO> key <params> [COST n | REFUND n] [PEEK] [BLOCK ms]`.

use std::ffi::{c_int, CStr};

use super::command::{Command, Keys};
use super::frame::spend_one;
use crate::decision::Claim;
use crate::docs::{self, flag, integer, key, one_of, option, string, Doc};
use crate::error::RlError;
use crate::grammar::{self, Kind};
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::Spend;
use crate::store::Key;
use crate::{clock, config};

/// Declares a limiter: its handler and its descriptor (one key, counted,
/// documented by `$doc`).
macro_rules! limiter {
    ($descriptor:ident, $handler:ident, $kind:expr, $flags:expr, $stat:expr, $doc:ident) => {
        handler!($handler, $kind.label(), |ctx, argv| run(ctx, argv, $kind));
        pub const $descriptor: Command = Command {
            name: $kind.name(),
            label: $kind.label(),
            handler: $handler,
            flags: $flags,
            keys: Keys::At(1),
            stat: Some($stat),
            doc: Some($doc),
            optional: false,
        };
    };
}

/// O(1): `fast`.
const WRITE_FAST: &CStr = c"write deny-oom fast";

limiter!(GCRA, gcra, Kind::Gcra, WRITE_FAST, c"gcra", gcra_doc);
limiter!(
    TOKENBUCKET,
    token_bucket,
    Kind::TokenBucket,
    WRITE_FAST,
    c"tokenbucket",
    token_bucket_doc
);
limiter!(LEAKY, leaky, Kind::Leaky, WRITE_FAST, c"leaky", leaky_doc);
limiter!(
    SLIDING,
    sliding,
    Kind::Sliding,
    WRITE_FAST,
    c"sliding",
    sliding_doc
);
// Registered without `fast` as the contract has it (a call is O(log n), but
// a write may also remove up to 64 lapsed entries, and REFUND amortises).
limiter!(
    SLIDINGLOG,
    sliding_log,
    Kind::SlidingLog,
    c"write deny-oom",
    c"slidinglog",
    sliding_log_doc
);
limiter!(FIXED, fixed, Kind::Fixed, WRITE_FAST, c"fixed", fixed_doc);

fn run(ctx: Ctx, argv: &[Arg], kind: Kind) -> Result<Reply, RlError> {
    if argv.len() < kind.min_argc() {
        return Err(RlError::WrongArity(kind.command()));
    }
    let request = with_bytes(&argv[2..], |p| grammar::parse(kind, p, config::caps()))?;
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(kind.label()))?;
    let how = Spend {
        peek: request.peek,
        block: request.block,
    };
    spend_one(key, Claim::Limiter { kind, request }, now, how)
}

/// A limiter's documentation: the key, its parameters, then the options
/// every limiter takes.
fn doc(summary: &'static CStr, params: Vec<docs::Arg>) -> Doc {
    let arity = -(2 + params.len() as c_int);
    let mut args = vec![key()];
    args.extend(params);
    args.extend([
        one_of(
            c"amount",
            vec![option(c"COST", c"cost"), option(c"REFUND", c"refund")],
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

fn gcra_doc() -> Doc {
    let mut d = doc(
        c"GCRA: limit requests per period, evenly spaced, with bursts of up to burst",
        vec![integer(c"limit"), string(c"period")],
    );
    // BURST comes before the shared options, as the grammar lists it.
    d.args.insert(3, option(c"BURST", c"burst"));
    d
}

fn token_bucket_doc() -> Doc {
    doc(
        c"Token bucket: capacity tokens, refill per period",
        vec![integer(c"capacity"), integer(c"refill"), string(c"period")],
    )
}

fn leaky_doc() -> Doc {
    doc(
        c"Leaky bucket as a queue: admits up to capacity and tells each request when to run",
        vec![integer(c"capacity"), integer(c"leak"), string(c"period")],
    )
}

fn sliding_doc() -> Doc {
    doc(
        c"Sliding window counter: limit per window, weighted across two windows",
        vec![integer(c"limit"), string(c"window")],
    )
}

fn sliding_log_doc() -> Doc {
    Doc {
        complexity:
            c"O(log N), N the entries in the log; a write also removes up to 64 lapsed entries",
        ..doc(
            c"Exact sliding log: limit per window, one entry per admitted request",
            vec![integer(c"limit"), string(c"window")],
        )
    }
}

fn fixed_doc() -> Doc {
    doc(
        c"Fixed window counter: limit per window aligned to the epoch",
        vec![integer(c"limit"), string(c"window")],
    )
}
