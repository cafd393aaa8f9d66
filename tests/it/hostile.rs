//! Hostile input: random argument vectors and keys the module did not write
//! (contract sections 1, 2, 5 and 6). The exact wording of every argument error is
//! a test vector (`tests/vectors/errors.txt`), checked on the module and the library.

use crate::common::*;

use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use redis::ServerError;

/// Each command with the number of count parameters before its duration and
/// whether it takes `BURST`.
const COMMANDS: [(&str, usize, bool); 6] = [
    ("RL.GCRA", 1, true),
    ("RL.TOKENBUCKET", 2, false),
    ("RL.LEAKY", 2, false),
    ("RL.SLIDING", 1, false),
    ("RL.SLIDINGLOG", 1, false),
    ("RL.FIXED", 1, false),
];

/// Random argument vectors sent to each command.
const VECTORS_PER_COMMAND: usize = 20_000;
/// Vectors per pipeline round trip.
const BATCH: usize = 300;
/// At most this many arguments after the command name.
const MAX_ARGS: usize = 10;

/// Valid and hostile arguments, mixed.
const PALETTE: &[&[u8]] = &[
    b"",
    b"-1",
    b"0",
    b"1",
    b"7",
    b"1000000000000",
    b"1000000000001",
    b"18446744073709551616",
    b"99999999999999999999999999",
    b"nan",
    b"inf",
    b"-inf",
    b"1e3",
    b"1.5",
    b" 1",
    b"1s",
    b"1500ms",
    b"1m",
    b"24h",
    b"3650d",
    b"3651d",
    b"0ms",
    b"COST",
    b"cost",
    b"PEEK",
    b"peek",
    b"BURST",
    b"burst",
    b"XYZ",
    b"\0",
    b"1\0",
    b"COST\0",
    b"\xff\xfe",
    b"7\xff",
    b"\r\n",
];

const COUNTS: [&str; 4] = ["1", "7", "100", "1000000000000"];
const DURATIONS: [&str; 7] = ["1ms", "1", "1s", "1500ms", "1m", "24h", "3650d"];
const COSTS: [&str; 4] = ["0", "1", "3", "1000000000000"];

/// A palette entry, random bytes, or (rarely) a 100 KB string.
fn hostile(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..200) {
        0 => vec![b'9'; 100 * 1024],
        1..=20 => {
            let len = rng.random_range(0..40);
            (0..len).map(|_| rng.random()).collect()
        }
        _ => PALETTE.choose(rng).unwrap().to_vec(),
    }
}

/// Mostly a key from a small pool (so state builds up, and `shared` sees every
/// algorithm), sometimes hostile bytes.
fn key(rng: &mut StdRng, command: &str) -> Vec<u8> {
    match rng.random_range(0..8) {
        0 => hostile(rng),
        1 => b"shared".to_vec(),
        n => format!("{command}:{}", n % 3).into_bytes(),
    }
}

/// A well-formed call: key, positionals, then options in random order.
fn plausible(rng: &mut StdRng, (command, counts, burst): (&str, usize, bool)) -> Vec<Vec<u8>> {
    let mut args = vec![key(rng, command)];
    for _ in 0..counts {
        args.push(COUNTS.choose(rng).unwrap().as_bytes().to_vec());
    }
    args.push(DURATIONS.choose(rng).unwrap().as_bytes().to_vec());
    let mut options: Vec<Vec<&str>> = Vec::new();
    if rng.random_bool(0.4) {
        options.push(vec!["COST", COSTS.choose(rng).unwrap()]);
    }
    if rng.random_bool(0.3) {
        options.push(vec!["PEEK"]);
    }
    if burst && rng.random_bool(0.4) {
        options.push(vec!["BURST", COUNTS.choose(rng).unwrap()]);
    }
    options.shuffle(rng);
    args.extend(options.concat().into_iter().map(|s| s.as_bytes().to_vec()));
    args
}

/// A plausible call, a mutated one, or pure noise; at most `MAX_ARGS` arguments.
fn vector(rng: &mut StdRng, spec: (&str, usize, bool)) -> Vec<Vec<u8>> {
    let mut args = match rng.random_range(0..5) {
        0 => {
            let len = rng.random_range(0..=MAX_ARGS);
            let mut args: Vec<Vec<u8>> = (0..len).map(|_| hostile(rng)).collect();
            if let Some(first) = args.first_mut() {
                *first = key(rng, spec.0);
            }
            args
        }
        1 | 2 => plausible(rng, spec),
        _ => {
            let mut args = plausible(rng, spec);
            let edits = rng.random_range(1..=3);
            mutate(rng, &mut args, edits);
            args
        }
    };
    args.truncate(MAX_ARGS);
    args
}

/// Replaces, removes or inserts hostile arguments at `edits` random places.
fn mutate(rng: &mut StdRng, args: &mut Vec<Vec<u8>>, edits: usize) {
    for _ in 0..edits {
        let at = rng.random_range(0..=args.len());
        match rng.random_range(0..3) {
            0 if at < args.len() => args[at] = hostile(rng),
            1 if at < args.len() => drop(args.remove(at)),
            _ => args.insert(at, hostile(rng)),
        }
    }
}

/// A call, readable in a failure message (long arguments shortened).
fn show(command: &str, args: &[Vec<u8>]) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            let text = String::from_utf8_lossy(&a[..a.len().min(40)]);
            let more = if a.len() > 40 { "..." } else { "" };
            format!("{text:?}{more}")
        })
        .collect();
    format!("{command} {}", args.join(" "))
}

/// An error reply as the server sent it: `CODE message`.
fn server_error_text(e: &ServerError) -> String {
    format!("{} {}", e.code(), e.details().unwrap_or_default())
}

/// Checks one reply against the shared reply (contract section 2) or the error
/// rules (section 6): five sane integers, or an `ERR `/`WRONGTYPE ` error that
/// is not a caught panic.
fn check_reply(reply: &Value) -> Result<(), String> {
    match reply {
        Value::Array(items) if items.len() == 5 => {
            let ints: Vec<i64> = items
                .iter()
                .filter_map(|v| match v {
                    Value::Int(n) => Some(*n),
                    _ => None,
                })
                .collect();
            let [allowed, limit, remaining, retry, reset] = ints[..] else {
                return Err(format!("not five integers: {reply:?}"));
            };
            let sane = (allowed == 0 || allowed == 1)
                && (0..=limit).contains(&remaining)
                && retry >= -1
                && reset >= 0;
            sane.then_some(())
                .ok_or(format!("inconsistent reply {ints:?}"))
        }
        Value::ServerError(e) => {
            let text = server_error_text(e);
            let shaped = matches!(e.code(), "ERR" | "WRONGTYPE") && e.details().is_some();
            if !shaped || text.starts_with("ERR internal error") {
                return Err(format!("bad error {text:?}"));
            }
            Ok(())
        }
        other => Err(format!("unexpected reply {other:?}")),
    }
}

/// The database's keys and their PTTLs.
fn all_pttls(c: &mut redis::Connection) -> Vec<(Vec<u8>, i64)> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("PTTL").arg(k);
    }
    let pttls: Vec<i64> = pipe.query(c).unwrap();
    keys.into_iter().zip(pttls).collect()
}

/// The Redis type a key holds, as the module sees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    String,
    Zset,
    Other,
}

/// Keys the module never wrote: key, its type, the command creating it (after
/// the key), and whether it gets a TTL.
#[rustfmt::skip]
const FOREIGN: &[(&str, Held, &[&[u8]], bool)] = &[
    ("str:hello",   Held::String, &[b"SET", b"hello"], true),
    ("str:empty",   Held::String, &[b"SET", b""], false),
    ("str:binary",  Held::String, &[b"SET", b"\0\xffgcra:1\0\r\n"], false),
    ("str:gcra12x", Held::String, &[b"SET", b"gcra:12x"], true),
    ("str:fixed1",  Held::String, &[b"SET", b"fixed:1"], false),
    ("str:sliding", Held::String, &[b"SET", b"sliding:1:2"], true),
    // Valid GCRA state: foreign to every other algorithm only.
    ("str:gcra5",   Held::String, &[b"SET", b"gcra:5"], false),
    ("hash",        Held::Other,  &[b"HSET", b"f", b"v"], true),
    ("list",        Held::Other,  &[b"RPUSH", b"a", b"b"], false),
    ("set",         Held::Other,  &[b"SADD", b"a"], true),
    ("zset:words",  Held::Zset,   &[b"ZADD", b"1", b"alpha", b"2", b"beta"], false),
    // A numeric member whose score is not its microseconds.
    ("zset:score5", Held::Zset,   &[b"ZADD", b"5", b"1700000000000000000"], true),
    ("stream",      Held::Other,  &[b"XADD", b"*", b"f", b"v"], false),
];

/// Valid parameters per command, and option tails tried with each.
const PARAMS: [(&str, &str); 6] = [
    ("RL.GCRA", "10 1s BURST 5"),
    ("RL.TOKENBUCKET", "10 1 1s"),
    ("RL.LEAKY", "10 1 1s"),
    ("RL.SLIDING", "10 1s"),
    ("RL.SLIDINGLOG", "10 1s"),
    ("RL.FIXED", "10 1s"),
];
const TAILS: [&str; 4] = ["", "PEEK", "COST 0", "COST 1000000000000"];

/// Each key's DUMP and absolute expiry.
fn snapshot(c: &mut redis::Connection) -> Vec<(Value, i64)> {
    let mut pipe = redis::pipe();
    for (key, ..) in FOREIGN {
        pipe.cmd("DUMP").arg(key).cmd("PEXPIRETIME").arg(key);
    }
    pipe.query(c).unwrap()
}

/// Runs a refused call and checks that it created no key.
fn refused(c: &mut redis::Connection, words: &str) -> String {
    let text = rl_err(c, words);
    if let Some(key) = words.split_whitespace().nth(1) {
        assert_eq!(
            run::<i64>(c, &format!("EXISTS {key}")),
            0,
            "{words} created {key}"
        );
    }
    text
}

// Each test runs on Redis 7.0 and on Valkey 9.1.
server_tests! {
    fn random_argument_vectors_never_hurt_the_server(flavor) {
        super::random_argument_vectors_never_hurt_the_server(flavor)
    }

    fn foreign_values_are_reported_and_left_byte_identical(flavor) {
        super::foreign_values_are_reported_and_left_byte_identical(flavor)
    }

    fn random_vectors_for_the_other_commands_never_hurt_the_server(flavor) {
        super::random_vectors_for_the_other_commands(flavor)
    }

    fn a_command_without_a_key_gets_the_arity_error(flavor) {
        super::a_command_without_a_key_gets_the_arity_error(flavor)
    }
}

fn random_argument_vectors_never_hurt_the_server(flavor: Flavor) {
    let seed: u64 = std::env::var("RL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("seed {seed} (RL_SEED={seed} reproduces this run)");
    let mut rng = StdRng::seed_from_u64(seed);
    let s = Server::start(flavor);
    let mut c = s.conn();
    let mut decisions = 0;
    for spec in COMMANDS {
        for _ in 0..VECTORS_PER_COMMAND / BATCH {
            let calls: Vec<_> = (0..BATCH).map(|_| vector(&mut rng, spec)).collect();
            let mut pipe = redis::pipe();
            for args in &calls {
                pipe.cmd(spec.0).arg(args).cmd("PING");
            }
            // `ignore_errors` keeps each command's error in place as a Value.
            let replies: Vec<Value> = pipe
                .ignore_errors()
                .query(&mut c)
                .unwrap_or_else(|e| panic!("seed {seed}: connection lost: {e}"));
            assert_eq!(replies.len(), 2 * calls.len(), "seed {seed}");
            for (args, pair) in calls.iter().zip(replies.chunks(2)) {
                let call = show(spec.0, args);
                // The reply is a decision or a well-formed error.
                if let Err(why) = check_reply(&pair[0]) {
                    panic!("seed {seed}: {call}: {why}");
                }
                decisions += usize::from(matches!(pair[0], Value::Array(_)));
                // The server is still serving after every call.
                assert_eq!(
                    pair[1],
                    Value::SimpleString("PONG".into()),
                    "seed {seed}: {call}"
                );
            }
        }
    }
    assert_eq!(run::<String>(&mut c, "PING"), "PONG");
    let pttls = all_pttls(&mut c);
    println!("{decisions} decisions, {} keys", pttls.len());
    // No key was left without an expiry (0: under 1 ms left; -2: expired
    // between KEYS and PTTL).
    for (key, pttl) in pttls {
        assert!(
            pttl >= 0 || pttl == -2,
            "seed {seed}: key {:?} has PTTL {pttl}",
            String::from_utf8_lossy(&key)
        );
    }
}

fn foreign_values_are_reported_and_left_byte_identical(flavor: Flavor) {
    let s = Server::start(flavor);
    let mut c = s.conn();
    for (key, _, create, ttl) in FOREIGN {
        let mut cmd = redis::cmd(std::str::from_utf8(create[0]).unwrap());
        cmd.arg(key).arg(&create[1..]);
        cmd.query::<Value>(&mut c).unwrap();
        if *ttl {
            run::<i64>(&mut c, &format!("PEXPIRE {key} 3600000"));
        }
    }
    let before = snapshot(&mut c);

    let mut pipe = redis::pipe();
    let mut calls = Vec::new();
    for (key, held, ..) in FOREIGN {
        for (command, params) in PARAMS {
            if *key == "str:gcra5" && command == "RL.GCRA" {
                continue;
            }
            for tail in TAILS {
                let words = format!("{command} {key} {params} {tail}");
                let mut cmd = redis::cmd(command);
                cmd.arg(words.split_whitespace().skip(1).collect::<Vec<_>>());
                pipe.add_command(cmd);
                let uses = if command == "RL.SLIDINGLOG" {
                    Held::Zset
                } else {
                    Held::String
                };
                calls.push((words, *held == uses));
            }
        }
    }
    let replies: Vec<Value> = pipe.ignore_errors().query(&mut c).unwrap();
    for ((words, right_type), reply) in calls.iter().zip(&replies) {
        let Value::ServerError(e) = reply else {
            panic!("{words}: expected an error, got {reply:?}");
        };
        let text = server_error_text(e);
        if *right_type {
            // Foreign content in the type the command uses: an ERR naming the problem.
            assert!(
                text.starts_with("ERR ") && !text.contains("internal"),
                "{words}: {text}"
            );
        } else {
            // A type the command never uses: Redis's own WRONGTYPE.
            assert_eq!(
                text, "WRONGTYPE Operation against a key holding the wrong kind of value",
                "{words}"
            );
        }
    }

    // The module never touched a value or an expiry it did not write.
    assert_eq!(snapshot(&mut c), before);
    assert_eq!(run::<usize>(&mut c, "DBSIZE"), FOREIGN.len());
}

/// The module's alone: through the library, a call without a key is an FCALL with
/// no key, which the library refuses in its own words.
fn a_command_without_a_key_gets_the_arity_error(flavor: Flavor) {
    let s = Server::start(flavor);
    let mut c = s.conn();
    for (command, ..) in COMMANDS {
        let lower = command.to_lowercase();
        let arity = format!("ERR wrong number of arguments for '{lower}' command");
        assert_eq!(refused(&mut c, command), arity);
    }
    assert_eq!(run::<usize>(&mut c, "DBSIZE"), 0);
}

/// Random calls of RL.ALL, RL.ACQUIRE, RL.RELEASE and CL.THROTTLE: plausible ones
/// (clauses built like the single commands' calls) mixed with mutated ones.
fn other_vector(rng: &mut StdRng, command: &str) -> Vec<Vec<u8>> {
    let word = |s: &str| s.as_bytes().to_vec();
    let mut args: Vec<Vec<u8>> = match command {
        "RL.ALL" => {
            let n = rng.random_range(1..=3);
            let mut args = vec![word(&n.to_string())];
            args.extend((0..n).map(|i| format!("all:{i}").into_bytes()));
            for _ in 0..n {
                let spec = *COMMANDS.choose(rng).unwrap();
                let clause = plausible(rng, spec);
                args.push(word(&spec.0[3..]));
                args.extend(clause.into_iter().skip(1).filter(|a| a != b"PEEK"));
            }
            if rng.random_bool(0.3) {
                args.push(word("PEEK"));
            }
            args
        }
        "RL.ACQUIRE" => vec![
            key(rng, command),
            word(COUNTS.choose(rng).unwrap()),
            word(DURATIONS.choose(rng).unwrap()),
            if rng.random_bool(0.8) {
                word(&format!("lease{}", rng.random_range(0..20)))
            } else {
                hostile(rng)
            },
        ],
        "RL.RELEASE" => vec![
            key(rng, "RL.ACQUIRE"),
            word(&format!("lease{}", rng.random_range(0..20))),
        ],
        _ => {
            let mut args = vec![key(rng, command)];
            args.extend((0..3).map(|_| word(COUNTS.choose(rng).unwrap())));
            if rng.random_bool(0.5) {
                args.push(word(COSTS.choose(rng).unwrap()));
            }
            args
        }
    };
    let edits = rng.random_range(0..=2);
    mutate(rng, &mut args, edits);
    args
}

/// The reply shapes of the other commands: RL.ALL's six elements (five integers
/// and every layer's five), RL.RELEASE's 0 or 1, five integers otherwise; or an error.
fn check_other_reply(command: &str, reply: &Value) -> Result<(), String> {
    match (command, reply) {
        (_, Value::ServerError(_)) => check_reply(reply),
        ("RL.ALL", Value::Array(items)) if items.len() == 6 => {
            check_reply(&Value::Array(items[..5].to_vec()))?;
            match &items[5] {
                Value::Array(layers) if !layers.is_empty() => {
                    layers.iter().try_for_each(check_reply)
                }
                other => Err(format!("bad layers {other:?}")),
            }
        }
        ("RL.RELEASE", Value::Int(0 | 1)) => Ok(()),
        ("CL.THROTTLE", Value::Array(items))
            if items.len() == 5 && items.iter().all(|v| matches!(v, Value::Int(_))) =>
        {
            Ok(())
        }
        ("RL.ACQUIRE", _) => check_reply(reply),
        (_, other) => Err(format!("unexpected reply {other:?}")),
    }
}

fn random_vectors_for_the_other_commands(flavor: Flavor) {
    let seed: u64 = std::env::var("RL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("seed {seed} (RL_SEED={seed} reproduces this run)");
    let mut rng = StdRng::seed_from_u64(seed);
    let s = Server::start(flavor);
    let mut c = s.conn();
    for command in ["RL.ALL", "RL.ACQUIRE", "RL.RELEASE", "CL.THROTTLE"] {
        for _ in 0..VECTORS_PER_COMMAND / BATCH {
            let calls: Vec<_> = (0..BATCH)
                .map(|_| other_vector(&mut rng, command))
                .collect();
            let mut pipe = redis::pipe();
            for args in &calls {
                pipe.cmd(command).arg(args).cmd("PING");
            }
            let replies: Vec<Value> = pipe
                .ignore_errors()
                .query(&mut c)
                .unwrap_or_else(|e| panic!("seed {seed}: connection lost: {e}"));
            for (args, pair) in calls.iter().zip(replies.chunks(2)) {
                let call = show(command, args);
                if let Err(why) = check_other_reply(command, &pair[0]) {
                    panic!("seed {seed}: {call}: {why}");
                }
                assert_eq!(
                    pair[1],
                    Value::SimpleString("PONG".into()),
                    "seed {seed}: {call}"
                );
            }
        }
    }
    for (key, ttl) in all_pttls(&mut c) {
        assert!(
            ttl >= 0 || ttl == -2,
            "{} has no expiry",
            String::from_utf8_lossy(&key)
        );
    }
}
