//! `RL.ALL numkeys key [key ...] ALGO params [COST n] [ALGO params [COST n] ...] [PEEK]`:
//! several limiters decided as one. Every layer is decided first; only if all
//! admit is anything written, so a request denied by one layer spends nothing
//! from the others.

use std::os::raw::c_int;

use redis_module::raw;

use crate::algorithm::Wait;
use crate::args::{parse_form, Form, Kind, Request};
use crate::command::{args, guarded, with_bytes, Reply};
use crate::decision::{self, Pending};
use crate::error::RlError;
use crate::store::{arg_bytes, Key};
use crate::{clock, config, stats, wait};

/// At most this many layers in one call.
pub const MAX_LAYERS: u64 = 64;

const LABEL: &str = "RL.ALL";

/// The handler; also answers Redis's key-position requests (`getkeys-api`),
/// which is what `COMMAND GETKEYS`, ACL key patterns and cluster slot checks use.
pub extern "C" fn command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let argv = args(argv, argc);
    // SAFETY: `ctx` is the live context of the current call.
    if unsafe { raw::RedisModule_IsKeysPositionRequest.expect("IsKeysPositionRequest")(ctx) } != 0 {
        if let Ok(n) = numkeys(argv) {
            for pos in 2..2 + n {
                // SAFETY: as above; `pos` is within `argv` (checked by `numkeys`).
                unsafe { raw::RedisModule_KeyAtPos.expect("KeyAtPos")(ctx, pos as c_int) };
            }
        }
        return raw::REDISMODULE_OK as c_int;
    }
    guarded(ctx, LABEL, || run(ctx, argv))
}

/// The number of keys, checked against the arguments that follow it.
fn numkeys(argv: &[*mut raw::RedisModuleString]) -> Result<usize, RlError> {
    if argv.len() < 4 {
        return Err(RlError::WrongArity("rl.all"));
    }
    let n = std::str::from_utf8(arg_bytes(argv[1]))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|n| (1..=MAX_LAYERS).contains(n))
        .ok_or(RlError::BadInteger {
            name: "numkeys",
            min: 1,
            max: MAX_LAYERS,
        })? as usize;
    if argv.len() < 2 + n + 1 {
        return Err(RlError::Syntax(
            "RL.ALL needs numkeys keys followed by one algorithm clause per key",
        ));
    }
    Ok(n)
}

fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<Reply, RlError> {
    let n = numkeys(argv)?;
    let names = &argv[2..2 + n];
    let (clauses, peek) = with_bytes(&argv[2 + n..], |tokens| parse_clauses(tokens, n))?;
    for (i, &a) in names.iter().enumerate() {
        if names[..i].iter().any(|&b| arg_bytes(a) == arg_bytes(b)) {
            return Err(RlError::Syntax("RL.ALL keys must be distinct"));
        }
    }

    let now = clock::now_ns();
    let keys: Vec<Key> = names
        .iter()
        .map(|&name| Key::open(ctx, name).ok_or(RlError::Internal(LABEL)))
        .collect::<Result<_, _>>()?;
    let mut layers: Vec<Pending> = keys
        .iter()
        .zip(&clauses)
        .map(|(key, (kind, req))| decision::decide(key, *kind, req, now))
        .collect::<Result<_, _>>()?;
    if wait::active() {
        // Waiters (`BLOCK`) on a layer's key come first there.
        for ((layer, (kind, req)), (key, &name)) in
            layers.iter_mut().zip(&clauses).zip(keys.iter().zip(names))
        {
            let claim = wait::Claim::Decision {
                kind: *kind,
                request: *req,
            };
            if let Some(d) = wait::queued(ctx, name, key, &claim, &layer.decision, now)? {
                *layer = Pending {
                    decision: d,
                    write: None,
                };
            }
        }
    }

    let all_admit = layers.iter().all(|l| l.decision.allowed);
    if all_admit && !peek {
        for (key, layer) in keys.iter().zip(&layers) {
            if let Some(write) = &layer.write {
                decision::commit(key, write);
            }
        }
    } else if !all_admit {
        // Nothing is spent: a layer that would admit reports its state as it is.
        for ((key, (kind, req)), layer) in keys.iter().zip(&clauses).zip(layers.iter_mut()) {
            if layer.decision.allowed {
                let unspent = Request { cost: 0, ..*req };
                *layer = decision::decide(key, *kind, &unspent, now)?;
            }
        }
    }
    let cost = clauses
        .iter()
        .map(|(_, req)| req.cost)
        .fold(0u64, u64::saturating_add);
    stats::decision(LABEL, all_admit, cost);
    let replies: Vec<[i64; 5]> = layers.iter().map(|l| l.decision.reply()).collect();
    let binding = binding_layer(&layers);
    Ok(Reply::Layers {
        binding,
        layers: replies,
    })
}

/// Splits the tokens after the keys into one clause per key and a final `PEEK`.
fn parse_clauses(tokens: &[&[u8]], n: usize) -> Result<(Vec<(Kind, Request)>, bool), RlError> {
    let (tokens, peek) = match tokens.split_last() {
        Some((last, rest)) if last.eq_ignore_ascii_case(b"PEEK") => (rest, true),
        _ => (tokens, false),
    };
    let algorithm = |t: &[u8]| {
        Kind::ALL
            .into_iter()
            .find(|k| t.eq_ignore_ascii_case(k.tag_upper().as_bytes()))
    };
    let starts: Vec<usize> = (0..tokens.len())
        .filter(|&i| algorithm(tokens[i]).is_some())
        .collect();
    if starts.first() != Some(&0) {
        return Err(RlError::Syntax(
            "RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG or FIXED",
        ));
    }
    if starts.len() != n {
        return Err(RlError::Syntax(
            "RL.ALL needs exactly one algorithm clause per key",
        ));
    }
    let caps = config::caps();
    let clauses = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(tokens.len());
            let kind = algorithm(tokens[start]).expect("clause starts with an algorithm");
            parse_form(kind, &tokens[start + 1..end], caps, Form::Clause).map(|req| (kind, req))
        })
        .collect::<Result<_, _>>()?;
    Ok((clauses, peek))
}

/// The layer whose five integers lead the reply: on denial, the denying layer
/// that makes the client wait longest (never admissible counts as longest);
/// when all admit, the one with the least remaining. Ties go to the first.
fn binding_layer(layers: &[Pending]) -> usize {
    let wait = |p: &Pending| match p.decision.retry_after {
        Wait::Never => u128::MAX,
        Wait::After(ns) => ns,
    };
    let denied = layers
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.decision.allowed);
    let longest = denied.fold(None, |best: Option<(usize, u128)>, (i, l)| match best {
        Some((_, w)) if w >= wait(l) => best,
        _ => Some((i, wait(l))),
    });
    longest.map_or_else(
        || {
            let least = layers
                .iter()
                .enumerate()
                .min_by_key(|(_, l)| l.decision.remaining);
            least.map_or(0, |(i, _)| i)
        },
        |(i, _)| i,
    )
}
