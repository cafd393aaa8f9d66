//! `RL.ALL numkeys key [key ...] ALGO params [COST n | REFUND n | DEBIT n] [ALGO
//! params ...] [PEEK]`: several limiters decided as one. Every layer is decided
//! first; only if all admit is anything written, so a request denied by one
//! layer spends nothing from the others (a refunding or debiting layer always
//! admits; a debit is never peeked). A clause may name a policy (`POLICY name
//! [amount]`); a
//! `SHADOW` policy's layer denies nothing (its own denial writes nothing and
//! is answered as a shadowed denial).

use super::command::{Command, Keys};
use super::limit::shadowed;
use crate::algorithm::Wait;
use crate::bounds::MAX_LAYERS;
use crate::config::Caps;
use crate::decision::Claim;
use crate::docs::{flag, integer, key, many, string, Doc};
use crate::error::RlError;
use crate::facts::messages;
use crate::grammar::policy::parse_amount;
use crate::grammar::{parse_form, Charge, Form, Kind, Request};
use crate::reply::Reply;
use crate::server::handler::handler;
use crate::server::{with_bytes, Arg, Ctx};
use crate::spend::{spend, Layer, Spend};
use crate::store::Key;
use crate::{clock, config, policy};

const LABEL: &str = "RL.ALL";

pub const ALL: Command = Command {
    name: c"rl.all",
    label: LABEL,
    handler: command,
    flags: c"write deny-oom getkeys-api",
    keys: Keys::Counted(1),
    stat: Some(c"all"),
    doc: Some(doc),
    optional: false,
};

// The handler; it also answers the server's key-position requests
// (`getkeys-api`), which `COMMAND GETKEYS`, ACL key patterns and cluster
// slot checks make.
handler!(command, LABEL, run, keys: key_positions);

/// The keys' positions, for the server's `getkeys-api` request (none if the
/// arguments are malformed: the call itself then fails).
fn key_positions(argv: &[Arg]) -> std::ops::Range<usize> {
    numkeys(argv).map_or(0..0, |n| 2..2 + n)
}

fn numkeys(argv: &[Arg]) -> Result<usize, RlError> {
    if argv.len() < 4 {
        return Err(RlError::WrongArity("rl.all"));
    }
    let n = std::str::from_utf8(argv[1].bytes())
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|n| (1..=MAX_LAYERS).contains(n))
        .ok_or_else(|| RlError::BadInteger {
            name: "numkeys",
            min: 1,
            max: MAX_LAYERS,
        })? as usize;
    if argv.len() < 2 + n + 1 {
        return Err(RlError::Syntax(messages::ALL_SHAPE));
    }
    Ok(n)
}

fn run(ctx: Ctx, argv: &[Arg]) -> Result<Reply, RlError> {
    let n = numkeys(argv)?;
    let names = &argv[2..2 + n];
    let (clauses, peek) = with_bytes(&argv[2 + n..], |tokens| parse_clauses(tokens, n))?;
    for (i, &a) in names.iter().enumerate() {
        if names[..i].iter().any(|&b| a.bytes() == b.bytes()) {
            return Err(RlError::Syntax(messages::ALL_DISTINCT));
        }
    }

    let now = clock::now_ns();
    let mut layers: Vec<Layer> = names
        .iter()
        .zip(clauses)
        .map(|(&name, clause)| {
            let key = Key::open(ctx, name).ok_or_else(|| RlError::Internal(LABEL))?;
            let (kind, request) = (clause.kind, clause.request);
            let mut layer = Layer::new(key, Claim::Limiter { kind, request });
            layer.shadow = clause.shadow;
            layer.policy = clause.policy;
            Ok(layer)
        })
        .collect::<Result<_, RlError>>()?;
    let how = Spend { peek, block: None };
    spend(&mut layers, now, how)?;
    let replies: Vec<[i64; 5]> = layers
        .iter()
        .map(|l| match l.shadow {
            true => shadowed(l.decision()),
            false => l.decision().reply(),
        })
        .collect();
    Ok(Reply::Layers {
        binding: binding_layer(&layers),
        layers: replies,
    })
}

/// One layer's clause: `ALGO params [BURST b] [amount]`, or `POLICY name
/// [amount]` (a shadow policy's layer denies nothing).
struct Clause {
    kind: Kind,
    request: Request,
    shadow: bool,
    /// A `POLICY` clause's policy (its id).
    policy: Option<u32>,
}

/// Splits the tokens after the keys into one clause per key and a final `PEEK`.
fn parse_clauses(tokens: &[&[u8]], n: usize) -> Result<(Vec<Clause>, bool), RlError> {
    let (tokens, peek) = match tokens.split_last() {
        Some((last, rest)) if last.eq_ignore_ascii_case(b"PEEK") => (rest, true),
        _ => (tokens, false),
    };
    let algorithm = |t: &[u8]| {
        Kind::ALL
            .into_iter()
            .find(|k| t.eq_ignore_ascii_case(k.tag_upper().as_bytes()))
    };
    let is_policy = |t: &[u8]| t.eq_ignore_ascii_case(b"POLICY");
    // A clause starts at an algorithm's word or at POLICY, whose next token is
    // a name (which may be an algorithm's word: it starts nothing).
    let mut starts = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if is_policy(tokens[i]) {
            starts.push(i);
            i += 2;
            continue;
        }
        if algorithm(tokens[i]).is_some() {
            starts.push(i);
        }
        i += 1;
    }
    if starts.first() != Some(&0) {
        return Err(RlError::Syntax(messages::ALL_ALGORITHM));
    }
    if starts.len() != n {
        return Err(RlError::Syntax(messages::ALL_CLAUSES));
    }
    let caps = config::caps();
    let clauses: Vec<Clause> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(tokens.len());
            if is_policy(tokens[start]) {
                return policy_clause(&tokens[start + 1..end], caps);
            }
            let kind = algorithm(tokens[start]).expect("clause starts with an algorithm");
            let request = parse_form(kind, &tokens[start + 1..end], caps, Form::Clause)?;
            Ok(Clause {
                kind,
                request,
                shadow: false,
                policy: None,
            })
        })
        .collect::<Result<_, _>>()?;
    // A debit is charged at once: never peeked.
    if peek && clauses.iter().any(|c| c.request.charge == Charge::Debit) {
        return Err(RlError::DebitWith("PEEK"));
    }
    // A peeked layer starts no penalty.
    let clauses = clauses
        .into_iter()
        .map(|c| Clause {
            request: Request { peek, ..c.request },
            ..c
        })
        .collect();
    Ok((clauses, peek))
}

/// `POLICY name [COST n | REFUND n | DEBIT n]`: the policy's algorithm, the
/// clause's amount.
fn policy_clause(tokens: &[&[u8]], caps: Caps) -> Result<Clause, RlError> {
    let (&name, options) = tokens
        .split_first()
        .ok_or_else(|| RlError::ClauseArity("POLICY"))?;
    let definition = policy::lookup(name, caps)?;
    let (cost, charge) = parse_amount(options, true, |option| RlError::UnknownClauseOption {
        option,
        clause: "POLICY",
        expected: "COST, REFUND or DEBIT",
    })?;
    Ok(Clause {
        kind: definition.kind,
        request: definition.request(cost, charge),
        shadow: definition.shadow,
        policy: Some(policy::reference(name)?.id),
    })
}

/// The layer whose five integers lead the reply: on denial, the denying layer
/// that makes the client wait longest (never admissible counts as longest);
/// when all admit, the one with the least remaining. Ties go to the first.
fn binding_layer(layers: &[Layer]) -> usize {
    let wait = |l: &Layer| match l.decision().retry_after {
        Wait::Never => u128::MAX,
        Wait::After(ns) => ns,
    };
    let denied = layers.iter().enumerate().filter(|(_, l)| !l.passes());
    let longest = denied.fold(None, |best: Option<(usize, u128)>, (i, l)| match best {
        Some((_, w)) if w >= wait(l) => best,
        _ => Some((i, wait(l))),
    });
    longest.map_or_else(
        || {
            let least = layers
                .iter()
                .enumerate()
                .min_by_key(|(_, l)| match l.decision().allowed {
                    true => l.decision().remaining,
                    false => 0, // a shadow's denial: answered with none left
                });
            least.map_or(0, |(i, _)| i)
        },
        |(i, _)| i,
    )
}

fn doc() -> Doc {
    Doc {
        summary: c"Several limiters decided as one: writes only if every layer admits",
        complexity: c"O(K) for K layers, plus each layer's own cost",
        arity: -5,
        args: vec![
            integer(c"numkeys"),
            many(key()),
            many(string(c"clause")),
            flag(c"PEEK", c"peek"),
        ],
    }
}
