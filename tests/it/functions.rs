//! The Functions library (`functions/rl.lua`) against the module: the test
//! vectors' scenarios (`tests/vectors/*.txt`) run on both backends, interleaved
//! call by call on two keys at the same real instants, must give the same replies
//! (times equal up to the real time between the two calls, and the replies the
//! vectors expect), the same stored state and the same errors; on a
//! server without the module; driven alternately by both on one key; under
//! random argument vectors (never a Lua runtime error); replicated to a
//! module-less replica and through an AOF restart, byte for byte.

use crate::common::backend::{fcall_args, is_lua_runtime_error, load_library, replies_agree};
use crate::common::vectors::{self, Scenario};
use crate::common::*;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// The ACL rules a user needs for the library, as docs/managed-redis.md gives them.
const LIBRARY_ACL: &str = "+fcall +fcall_ro +time +get +set +del +pexpireat +pexpiretime +zadd +zrem +zcard +zcount +zscore +zrange +zrangebyscore +zrevrangebyscore";

/// A stored state with its instants apart (19+ digit numbers, in ns; a penalty's
/// end and keep, in ms, scaled to ns): they must match to within the slack.
pub(crate) fn state(c: &mut redis::Connection, key: &str) -> (String, Vec<i128>) {
    let ty: String = run(c, &format!("TYPE {key}"));
    let v: String = match ty.as_str() {
        "string" => run(c, &format!("GET {key}")),
        "zset" => {
            // Members and scores (microseconds, as ns-like instants: scaled by 1000).
            let entries: Vec<(String, i128)> = run(c, &format!("ZRANGE {key} 0 -1 WITHSCORES"));
            let parts: Vec<String> = entries
                .iter()
                .map(|(m, score)| format!("{m}:{}", score * 1000))
                .collect();
            format!("zset:{}", parts.join(":"))
        }
        _ => return (ty, vec![]),
    };
    let mut shape = String::new();
    let mut instants = vec![];
    // The fields after `penalty`: its end and keep are instants in ms, its length is exact.
    let mut penalty_field = None;
    for piece in v.split_inclusive([':', '|']) {
        let part = piece.trim_end_matches([':', '|']);
        let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        penalty_field = match (part == "penalty", penalty_field) {
            (true, _) => Some(0),
            (false, Some(f)) if f < 3 => Some(f + 1),
            _ => None,
        };
        if digits && matches!(penalty_field, Some(1 | 3)) {
            shape.push_str("#ms");
            instants.push(part.parse::<i128>().unwrap() * 1_000_000);
        } else if digits && part.len() >= 19 {
            shape.push('#');
            instants.push(part.parse::<i128>().unwrap());
        } else {
            shape.push_str(part);
        }
        shape.push_str(&piece[part.len()..]);
    }
    (shape, instants)
}

/// Runs every scenario with the module on `cm` (keys `m<run>.<i>:*`) and with `side`
/// on `cl` (keys `l<run>.<i>:*`), call by call, and compares replies and stored
/// state; each reply must also be the one the vector expects, if it gives one.
fn conform(
    cm: &mut redis::Connection,
    cl: &mut redis::Connection,
    scenarios: &[Scenario],
    side: impl Fn(usize) -> Backend,
) {
    let tag: String = run::<String>(cm, "INCR conform:run");
    for (i, scenario) in scenarios.iter().enumerate() {
        let (pm, pl) = (format!("m{tag}.{i}"), format!("l{tag}.{i}"));
        let start_ms = now_ms();
        vectors::prepare(cm, &pm, start_ms);
        vectors::prepare(cl, &pl, start_ms);
        let start = Instant::now();
        for (j, step) in scenario.steps.iter().enumerate() {
            let cmd = vectors::text(&step.words);
            let (a, span_a) = vectors::call(
                Backend::Module,
                cm,
                &vectors::keyed(&step.words, &pm),
                start_ms,
            );
            let (b, span_b) =
                vectors::call(side(j), cl, &vectors::keyed(&step.words, &pl), start_ms);
            let slack = start.elapsed().as_millis() as i64 + 1;
            if let Err(e) = &b {
                assert!(!is_lua_runtime_error(e), "{cmd}: {e}");
            }
            // A key's time to live is read at each side's own instant: within the slack.
            let ttl = step.words[0].eq_ignore_ascii_case(b"PTTL");
            let agree = match (&a, &b) {
                (Ok(Value::Int(u)), Ok(Value::Int(v))) if ttl => (u - v).abs() <= slack,
                _ => replies_agree(&a, &b, slack),
            };
            assert!(
                agree,
                "{} {cmd}\n module: {a:?}\n other:  {b:?}",
                step.place
            );
            for (reply, span) in [(&a, span_a), (&b, span_b)] {
                if let Err(why) = vectors::check(step, reply, span) {
                    panic!("{why}");
                }
            }
        }
        let slack_ns = (start.elapsed().as_millis() as i128 + 1) * 1_000_000;
        let place = &scenario.place;
        for (km, kl) in vectors::keys(&pm).iter().zip(vectors::keys(&pl)) {
            let (sm, im) = state(cm, km);
            let (sl, il) = state(cl, &kl);
            assert_eq!(sm, sl, "{place}: {km} vs {kl}");
            for (x, y) in im.iter().zip(&il) {
                assert!(
                    (x - y).abs() <= slack_ns,
                    "{place}: {km} vs {kl}: {x} vs {y}"
                );
            }
            let (em, el) = (pexpiretime(cm, km), pexpiretime(cl, &kl));
            assert!(
                (em - el).abs() <= slack_ns as i64 / 1_000_000,
                "{place}: {km} vs {kl}: expiry {em} vs {el}"
            );
        }
    }
}

/// Words as text, for a failure's message.
fn shown(words: &[Vec<u8>]) -> String {
    let words: Vec<String> = words
        .iter()
        .map(|w| format!("{:?}", String::from_utf8_lossy(w)))
        .collect();
    words.join(" ")
}

/// Random argument vectors: the library answers exactly the module's error text,
/// or succeeds as it does; never a Lua runtime error. Every command (`RL.BAN`
/// too), `RL.PEEK` with each algorithm (`FCALL_RO rl_peek`), and options drawn
/// mostly as names (`BLOCK`, `PENALTY` and `ESCALATE` among them) with or without
/// a value, in any order. Returns
/// how many pairs were compared and how many of them were errors.
fn fuzz(c: &mut redis::Connection, seed: u64, vectors: usize) -> (usize, usize) {
    const PALETTE: &[&str] = &[
        "",
        "-1",
        "0",
        "1",
        "7",
        "100",
        "1000000000000",
        "1000000000001",
        "315360000000",
        "315360000001",
        "18446744073709551616",
        "99999999999999999999999999",
        "nan",
        "1e3",
        "1.5",
        " 1",
        "1s",
        "1500ms",
        "1m",
        "24h",
        "3650d",
        "3651d",
        "0ms",
        "1ms",
        "COST",
        "cost",
        "PEEK",
        "peek",
        "BURST",
        "burst",
        "REFUND",
        "DEBIT",
        "BLOCK",
        "block",
        "XYZ",
        "\0",
        "1\0",
        "\u{ff}",
        "\r\n",
        "GCRA",
        "FIXED",
        "SLIDING",
        "SLIDINGLOG",
        "TOKENBUCKET",
        "LEAKY",
        "ACQUIRE",
        "0000000000000000000000007",
        "PENALTY",
        "penalty",
        "ESCALATE",
        "00000000000000000000000000000000000007",
        "000000000000000000000000000000000000007",
        "QUOTA",
        "DAY",
        "week",
        "MONTH",
        "YEAR",
        "TZ",
        "ANCHOR",
        "Europe/Paris",
        "+05:30",
        "-24:00",
        "Mars/Olympus",
        "2001-01-31T02:30",
        "2001-02-29T00:00",
    ];
    /// RL.QUOTA's units, zones (each one the library's table holds, or none holds)
    /// and anchors, as a tidy vector draws them.
    const UNITS: &[&str] = &["DAY", "WEEK", "month", "YEAR"];
    const ZONES: &[&str] = &[
        "UTC",
        "America/New_York",
        "asia/kolkata",
        "-08:00",
        "+23:59",
        "Nowhere",
    ];
    const ANCHORS: &[&str] = &[
        "2001-01-01T00:00",
        "2026-01-04t09:00",
        "2000-01-31T02:30",
        "2001-13-01T00:00",
    ];
    /// Option names, as the generator draws them (a value follows most of them).
    const OPTIONS: &[&str] = &[
        "COST", "cost", "REFUND", "DEBIT", "debit", "PEEK", "peek", "BURST", "BLOCK", "block",
        "Block", "COST", "BLOCK", "PEEK", "XYZ", "DEBIT", "PENALTY", "penalty", "PENALTY",
        "ESCALATE", "escalate", "TZ", "ANCHOR", "tz",
    ];
    const COMMANDS: &[(&str, usize)] = &[
        ("RL.GCRA", 2),
        ("RL.TOKENBUCKET", 3),
        ("RL.LEAKY", 3),
        ("RL.SLIDING", 2),
        ("RL.FIXED", 2),
        ("RL.SLIDINGLOG", 2),
        ("RL.QUOTA", 2),
        ("CL.THROTTLE", 3),
        ("RL.ALL", 0),
        ("RL.ACQUIRE", 3),
        ("RL.RELEASE", 1),
        ("RL.PEEK", 0),
        ("RL.BAN", 1),
    ];
    /// RL.PEEK's algorithms and their parameters (ACQUIRE: limit timeout lease_id).
    const PEEKS: &[(&str, usize)] = &[
        ("GCRA", 2),
        ("TOKENBUCKET", 3),
        ("LEAKY", 3),
        ("SLIDING", 2),
        ("SLIDINGLOG", 2),
        ("FIXED", 2),
        ("QUOTA", 2),
        ("ACQUIRE", 3),
        ("acquire", 3),
        ("gcra", 2),
    ];
    let mut rng = StdRng::seed_from_u64(seed);
    let _: () = run(c, "SET fz:m:str hello");
    let _: () = run(c, "SET fz:l:str hello");
    let _: () = run(c, "RPUSH fz:m:list x");
    let _: () = run(c, "RPUSH fz:l:list x");
    let (mut compared, mut errors) = (0, 0);
    for n in 0..vectors {
        let (command, mut positional) = *COMMANDS.choose(&mut rng).unwrap();
        let key = |side: &str, rng: &mut StdRng| match rng.random_range(0..10) {
            0 => format!("fz:{side}:str"),
            1 => format!("fz:{side}:list"),
            _ => format!("fz:{side}:{n}"),
        };
        // A tidy vector draws only valid parameters and values, so that about
        // half the vectors succeed (or fail on their options alone).
        let tidy = rng.random_bool(0.5);
        let pick = |rng: &mut StdRng| -> String {
            if tidy {
                ["1", "7", "100", "1000"].choose(rng).unwrap().to_string()
            } else if rng.random_bool(0.5) {
                ["1", "7", "1000000000000", "1s", "1h", "3650d", "1ms", "0"]
                    .choose(rng)
                    .unwrap()
                    .to_string()
            } else {
                PALETTE.choose(rng).unwrap().to_string()
            }
        };
        // The last parameter (a period or window, mostly): long in a tidy vector,
        // so that no epoch-aligned window ends between the two calls of a pair.
        let last = |rng: &mut StdRng| -> String {
            match tidy {
                true => ["100000", "1h", "24h", "3650d"]
                    .choose(rng)
                    .unwrap()
                    .to_string(),
                false => pick(rng),
            }
        };
        let params = |rng: &mut StdRng, args: &mut Vec<String>, p: usize| {
            for j in 0..p {
                args.push(if j + 1 == p { last(rng) } else { pick(rng) });
            }
        };
        // Options: mostly a name and (usually) a value, else any word.
        let options = |rng: &mut StdRng, args: &mut Vec<String>| {
            for _ in 0..rng.random_range(0..4) {
                if tidy || rng.random_bool(0.6) {
                    let name = OPTIONS.choose(rng).unwrap();
                    args.push(name.to_string());
                    if tidy && name.eq_ignore_ascii_case("TZ") {
                        args.push(ZONES.choose(rng).unwrap().to_string());
                    } else if tidy && name.eq_ignore_ascii_case("ANCHOR") {
                        args.push(ANCHORS.choose(rng).unwrap().to_string());
                    } else if !name.eq_ignore_ascii_case("PEEK") && (tidy || rng.random_bool(0.8)) {
                        args.push(pick(rng));
                    }
                } else {
                    args.push(pick(rng));
                }
            }
        };
        let mut args: Vec<String> = vec![];
        // The index in `args` of the key, per side (none for RL.ALL).
        let mut key_at = Some(0);
        if command == "RL.ALL" {
            key_at = None;
            let k = rng.random_range(1..=3);
            args.push(k.to_string());
            for i in 0..k {
                args.push(format!("{{k}}{i}:{n}"));
            }
            for _ in 0..k {
                let (algo, p) = *COMMANDS[..7].choose(&mut rng).unwrap();
                args.push(algo[3..].to_string());
                params(&mut rng, &mut args, p);
                if tidy && algo == "RL.QUOTA" {
                    *args.last_mut().unwrap() = UNITS.choose(&mut rng).unwrap().to_string();
                }
                // Up to two options: an amount, BURST or a word a clause refuses.
                for _ in 0..2 {
                    if rng.random_bool(0.3) {
                        args.push(
                            [
                                "COST", "BURST", "BLOCK", "REFUND", "DEBIT", "debit", "PENALTY",
                                "ESCALATE",
                            ]
                            .choose(&mut rng)
                            .unwrap()
                            .to_string(),
                        );
                        args.push(pick(&mut rng));
                    }
                }
            }
            if rng.random_bool(0.2) {
                args.push("PEEK".into());
            }
        } else {
            if command == "RL.PEEK" {
                key_at = Some(1);
                let (algo, p) = match rng.random_bool(0.05) {
                    true => (*PALETTE.choose(&mut rng).unwrap(), 2),
                    false => *PEEKS.choose(&mut rng).unwrap(),
                };
                args.push(algo.to_string());
                positional = p;
            }
            args.push(String::new()); // the key, per side
            params(&mut rng, &mut args, positional);
            if tidy && (command == "RL.QUOTA" || args[0] == "QUOTA") {
                *args.last_mut().unwrap() = UNITS.choose(&mut rng).unwrap().to_string();
            }
            options(&mut rng, &mut args);
        }
        // A word may go missing, but not a key: a word of the vector taking a
        // key's place would be one key for both sides.
        let fixed = match key_at {
            Some(k) => k + 1,
            None => 1 + args.iter().filter(|a| a.starts_with("{k}")).count(),
        };
        if !tidy && rng.random_bool(0.2) && args.len() > fixed {
            let i = rng.random_range(fixed..args.len());
            args.remove(i);
        }
        let side_args = |side: &str, rng: &mut StdRng| -> Vec<Vec<u8>> {
            let mut v: Vec<Vec<u8>> = vec![command.as_bytes().to_vec()];
            for (i, a) in args.iter().enumerate() {
                if key_at == Some(i) {
                    v.push(key(side, rng).into_bytes());
                } else if key_at.is_none() && a.starts_with("{k}") {
                    v.push(format!("{{{side}}}{a}").into_bytes());
                } else {
                    v.push(a.as_bytes().to_vec());
                }
            }
            v
        };
        let mut r2 = rng.clone();
        let vm = side_args("m", &mut rng);
        let vl = side_args("l", &mut r2);
        let pair = Instant::now();
        let a = Backend::Module
            .cmd_args(&vm)
            .query::<Value>(c)
            .map_err(|e| error_text(&e));
        let b = Backend::Library
            .cmd_args(&vl)
            .query::<Value>(c)
            .map_err(|e| error_text(&e));
        if let Err(e) = &b {
            assert!(!is_lua_runtime_error(e), "{vl:?}: {e}");
            // FCALL's own refusals of RL.ALL's numkeys come before the library runs.
            if command == "RL.ALL" && (e.contains("umber of keys") || e.contains("not an integer"))
            {
                continue;
            }
        }
        // Errors are compared as texts, byte for byte.
        assert!(
            replies_agree(&a, &b, pair.elapsed().as_millis() as i64 + 1),
            "seed {seed} vector {n}: {}\n module: {a:?}\n library: {b:?}",
            shown(&fcall_args(&vl))
        );
        compared += 1;
        errors += usize::from(a.is_err());
    }
    (compared, errors)
}

server_tests! {
    fn the_library_replies_and_stores_what_the_module_does(flavor) {
        let s = Server::start_library(flavor, true);
        let (cm, cl) = (&mut s.conn(), &mut s.conn());
        conform(cm, cl, &vectors::load(), |_| Backend::Library);
    }

    fn without_the_module_the_library_replies_what_the_module_does(flavor) {
        let m = Server::start(flavor);
        let l = Server::start_library(flavor, false);
        let (cm, cl) = (&mut m.conn(), &mut l.conn());
        conform(cm, cl, &vectors::load(), |_| Backend::Library);
        // The module's commands are absent there: the library is the only way in.
        assert!(rl_err(cl, "RL.GCRA k 1 1s").contains("unknown command"));
    }

    fn a_key_driven_alternately_decides_as_if_one_had_done_it_all(flavor) {
        let s = Server::start_library(flavor, true);
        let (cm, cl) = (&mut s.conn(), &mut s.conn());
        let scenarios = vectors::load();
        for first in [Backend::Library, Backend::Module] {
            let alternate = |j: usize| if j % 2 == 0 { first } else if first == Backend::Module { Backend::Library } else { Backend::Module };
            conform(cm, cl, &scenarios, alternate);
        }
    }

    fn foreign_values_get_the_modules_errors_and_stay_byte_identical(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
            let values = [
            "SET f:long bucket:1796047822884456000",
            "SET f:longtag gcra:not-a-number-but-long-enough",
            "SET f:int 42",
            "SET f:text hello",
            "SET f:tagged gcra:xyz",
            "SET f:other bucket:5",
            "SET f:cell 1764489600123456789",
            "RPUSH f:list a",
            "HSET f:hash a 1",
            "SADD f:set a",
            "ZADD f:zset 1 a",
            "ZADD f:lease 1 lease:x",
            "ZADD f:log 1764489600123456 1764489600123456789",
        ];
        // Each value twice: `m:` keys for the module, `l:` keys for the library.
        let mut keys = vec![];
        for words in values {
            for side in ["m:", "l:"] {
                let _: Value = run(c, &words.replacen(" f:", &format!(" {side}f:"), 1));
            }
            keys.push(words.split(' ').nth(1).unwrap().to_string());
        }
        let dump = |c: &mut redis::Connection| -> Vec<(Value, i64)> {
            keys.iter()
                .flat_map(|k| [format!("m:{k}"), format!("l:{k}")])
                .map(|k| (redis::cmd("DUMP").arg(&k).query(c).unwrap(), pexpiretime(c, &k)))
                .collect()
        };
        let before = dump(c);
        for k in &keys {
            for cmd in [
                "RL.GCRA {k} 1 1h",
                "RL.TOKENBUCKET {k} 1 1 1h",
                "RL.LEAKY {k} 1 1 1h COST 0",
                "RL.SLIDING {k} 1 1h",
                "RL.SLIDINGLOG {k} 1 1h",
                "RL.FIXED {k} 1 1h PEEK",
                "RL.ACQUIRE {k} 1 1h id",
                "RL.RELEASE {k} x",
                "RL.ALL 1 {k} GCRA 1 1h",
            ] {
                let words = cmd.replace("{k}", &format!("m:{k}"));
                let a = Backend::Module.value(c, &words);
                let b = Backend::Library.value(c, &cmd.replace("{k}", &format!("l:{k}")));
                if let Err(e) = &b {
                    assert!(!is_lua_runtime_error(e), "{words}: {e}");
                }
                // A module-written value (the legacy log, the lease) may decide: then
                // both decide alike, and the key was written by both.
                assert!(replies_agree(&a, &b, 1_000), "{words}\n module: {a:?}\n library: {b:?}");
            }
        }
        // Foreign values stay byte-identical; the values the commands recognise
        // (a token-bucket state, a TAT, a lease set, a legacy log) were decided on.
        let after = dump(c);
        let keys2: Vec<&String> = keys.iter().flat_map(|k| [k, k]).collect();
        for ((k, b), a) in keys2.iter().zip(&before).zip(&after) {
            if !["f:long", "f:other", "f:cell", "f:lease", "f:log"].contains(&k.as_str()) {
                assert_eq!(b, a, "{k} changed");
            }
        }
    }

    fn random_vectors_get_the_modules_errors_never_a_lua_error(flavor) {
        let s = Server::start_library(flavor, true);
        // RL_FUZZ_VECTORS and RL_FUZZ_SEED run a longer or another campaign.
        let env = |name: &str, default: u64| {
            std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let c = &mut s.conn();
        // A wait would show as a timeout, not a hang (fresh keys never make one).
        c.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        let (seed, vectors) = (env("RL_FUZZ_SEED", 7), env("RL_FUZZ_VECTORS", 3_000) as usize);
        let (compared, errors) = fuzz(c, seed, vectors);
        eprintln!("fuzz seed {seed}: {compared} of {vectors} vectors compared, {errors} of them errors");
        // Most vectors reach the comparison, and both errors and replies are among them.
        assert!(compared * 10 >= vectors * 9 && errors > 0 && errors < compared);
    }

    fn peek_through_fcall_ro_decides_and_writes_nothing(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        assert_eq!(rl(c, "FCALL rl_gcra 1 p 1 1h BURST 3 COST 2")[..3], [1, 3, 1]);
        let dirty_before = dirty(c);
        let peek = rl(c, "FCALL_RO rl_peek 1 p GCRA 1 1h BURST 3 COST 2");
        assert_eq!(peek[..3], [0, 3, 1]);
        assert_eq!(rl(c, "FCALL_RO rl_peek 1 p gcra 1 1h BURST 3")[..3], [1, 3, 0]);
        assert_eq!(rl(c, "FCALL_RO rl_peek 1 q FIXED 3 1h COST 3")[..4], [1, 3, 0, 0]);
        assert_eq!(dirty(c), dirty_before);
        assert_eq!(run::<i64>(c, "EXISTS q"), 0);
        assert_eq!(
            rl_err(c, "FCALL_RO rl_gcra 1 p 1 1h"),
            "ERR Can not execute a script with write flag using *_ro command."
        );
        assert!(rl_err(c, "FCALL_RO rl_peek 1 p NOPE 1 1h").starts_with("ERR RL.PEEK expects an algorithm"));
        // BLOCK is accepted and decides at once.
        assert_eq!(rl(c, "FCALL rl_fixed 1 b 1 1h BLOCK 100")[..3], [1, 1, 0]);
        assert_eq!(rl(c, "FCALL rl_fixed 1 b 1 1h BLOCK 0")[..3], [0, 1, 0]);
        assert_eq!(
            rl_err(c, "FCALL rl_fixed 1 b 1 1h BLOCK -1"),
            "ERR BLOCK must be an integer from 0 to 315360000000"
        );
        assert_eq!(
            rl_err(c, "FCALL rl_fixed 2 b c 1 1h"),
            "ERR rl_fixed takes exactly one key: FCALL rl_fixed 1 key ..."
        );
    }

    fn an_acl_user_needs_fcall_and_the_commands_the_library_calls(flavor) {
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        let _: () = run(c, "ACL SETUSER lim on >pw ~rl:* resetchannels -@all +fcall +fcall_ro");
        let u = &mut s.conn();
        let _: () = run(u, "AUTH lim pw");
        // Scripts run their commands with the caller's ACL: refused, with Redis's error.
        let refused = rl_err(u, "FCALL rl_gcra 1 rl:a 1 1h");
        assert!(refused.starts_with("ERR ") && refused.contains("command"), "{refused}");
        assert!(!is_lua_runtime_error(&refused), "{refused}");
        let _: () = run(c, &format!("ACL SETUSER lim {LIBRARY_ACL}"));
        for cmd in [
            "FCALL rl_gcra 1 rl:a 1 1h",
            "FCALL rl_slidinglog 1 rl:b 2 1h",
            "FCALL rl_acquire 1 rl:c 2 1h x",
            "FCALL rl_all 2 rl:{d}1 rl:{d}2 FIXED 2 1h SLIDINGLOG 2 1h",
            "FCALL cl_throttle 1 rl:e 1 1 60",
            "FCALL_RO rl_peek 1 rl:a GCRA 1 1h",
            // Penalties and bans: on a string state, a log, an absent key, lifted.
            "FCALL rl_gcra 1 rl:a 1 1h PENALTY 1h",
            "FCALL rl_slidinglog 1 rl:b 1 1h PENALTY 1h",
            "FCALL rl_ban 1 rl:b 60000",
            "FCALL rl_ban 1 rl:f 60000",
            "FCALL rl_ban 1 rl:a 0",
            "FCALL rl_ban 1 rl:f 0",
            "FCALL rl_slidinglog 1 rl:b 1 1h REFUND 1",
            "FCALL rl_slidinglog 1 rl:b 1 1h",
            "FCALL rl_slidinglog 1 rl:g 2 1h",
        ] {
            assert!(command(cmd).query::<Value>(u).is_ok(), "{cmd}");
        }
        assert_eq!(run::<i64>(u, "FCALL rl_release 1 rl:c x"), 1);
        assert!(rl_err(u, "FCALL rl_gcra 1 other 1 1h").starts_with("NOPERM"));
        // The rules name exactly the commands the library calls.
        let source = crate::common::backend::library_source();
        let mut called: Vec<String> = source
            .split("redis.")
            .filter_map(|s| s.strip_prefix("call('").or_else(|| s.strip_prefix("pcall('")))
            .map(|s| format!("+{}", s.split('\'').next().unwrap().to_lowercase()))
            .collect();
        called.extend(["+fcall".to_owned(), "+fcall_ro".to_owned()]);
        called.sort();
        called.dedup();
        let mut listed: Vec<&str> = LIBRARY_ACL.split(' ').collect();
        listed.sort();
        assert_eq!(called, listed);
        // Without the expiry's read, a ban on a log or a string is refused before any write.
        let _: () = run(c, "ACL SETUSER lim -pexpiretime");
        for key in ["rl:g", "rl:b"] {
            let before: Value = redis::cmd("DUMP").arg(key).query(c).unwrap();
            let refused = rl_err(u, &format!("FCALL rl_ban 1 {key} 60000"));
            assert!(refused.starts_with("ERR ") && !is_lua_runtime_error(&refused), "{refused}");
            assert_eq!(redis::cmd("DUMP").arg(key).query::<Value>(c).unwrap(), before, "{key}");
        }
    }

    fn out_of_memory_refuses_what_the_module_refuses(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        for backend in BACKENDS {
            backend.value(c, &format!("RL.ACQUIRE oom:{backend:?} 5 1h job")).unwrap();
        }
        let _: () = run(c, "CONFIG SET maxmemory 1");
        for backend in BACKENDS {
            // Decisions are refused (deny-oom) with Redis's own error, read-only peeks are not,
            // and releases go through (they only free).
            let refused = backend.err(c, "RL.GCRA oom:g 1 1h");
            assert!(refused.starts_with("OOM "), "{backend:?}: {refused}");
            let released = backend.value(c, &format!("RL.RELEASE oom:{backend:?} job"));
            assert_eq!(released, Ok(Value::Int(1)), "{backend:?}");
        }
        assert_eq!(
            Backend::Module.err(c, "RL.GCRA oom:g 1 1h"),
            Backend::Library.err(c, "RL.GCRA oom:g 1 1h")
        );
        assert_eq!(rl(c, "FCALL_RO rl_peek 1 oom:g GCRA 1 1h")[..3], [1, 1, 0]);
        let _: () = run(c, "CONFIG SET maxmemory 0");
    }

    fn concurrent_clients_get_exactly_the_limit_through_the_library(flavor) {
        let s = Server::start_library(flavor, false);
        for (cmd, limit) in [
            ("FCALL rl_gcra 1 hot 1 1h BURST 100", 100),
            ("FCALL rl_fixed 1 hot2 100 1h", 100),
            ("FCALL rl_sliding 1 hot3 100 1h", 100),
            ("FCALL cl_throttle 1 hot4 99 1 3600", 100),
        ] {
            let admitted: i64 = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..8)
                    .map(|_| {
                        let mut c = s.conn();
                        scope.spawn(move || {
                            let mut n = 0;
                            for _ in 0..60 {
                                let r: Vec<i64> = command(cmd).query(&mut c).unwrap();
                                n += if cmd.contains("cl_throttle") { 1 - r[0] } else { r[0] };
                            }
                            n
                        })
                    })
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).sum()
            });
            assert_eq!(admitted, limit, "{cmd}");
        }
    }

    fn the_library_keeps_its_caches_bounded(flavor) {
        // 20,000 distinct requests on as many keys: the library keeps at most 512
        // parsed requests and 64 parsed states, so its memory stays small (each
        // parsed request holds about a kilobyte: kept, they would take 20 MB).
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        let vm = |c: &mut redis::Connection| -> i64 {
            info(c, "memory", "used_memory_vm_functions").parse().unwrap()
        };
        for batch in 0..20 {
            let mut p = redis::pipe();
            for i in 0..1_000 {
                let n = batch * 1_000 + i + 1;
                p.add_command(command(&format!("FCALL rl_gcra 1 b{n} {n} 1h BURST 7")))
                    .ignore();
            }
            let _: () = p.query(c).unwrap();
        }
        let used = vm(c);
        assert!(used < 8 << 20, "the library's Lua memory grew to {used} bytes");
        // Nor do valid arguments padded with zeros: 400 requests of 64 KB each
        // (kept, they would take 26 MB).
        for i in 0..400 {
            let cost = format!("{}{i}", "0".repeat(65_536));
            let r: Vec<i64> = redis::cmd("FCALL")
                .arg(["rl_fixed", "1", "padded", "1000000000000", "1h", "COST"].as_slice())
                .arg(cost)
                .query(c)
                .unwrap();
            assert_eq!(r[0], 1);
        }
        let used = vm(c);
        assert!(used < 8 << 20, "padded arguments grew the library's memory to {used} bytes");
    }

    fn the_library_tracks_real_time(flavor) {
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        for (cmd, burst, rate) in [
            ("FCALL rl_gcra 1 rt1 100 1s BURST 10", 10.0, 100.0),
            ("FCALL rl_tokenbucket 1 rt2 20 200 1s", 20.0, 200.0),
        ] {
            let mut pipe = redis::pipe();
            for _ in 0..10 {
                pipe.add_command(command(cmd));
            }
            let (mut admitted, mut calls) = (0u64, 0u64);
            let start = Instant::now();
            while start.elapsed() < std::time::Duration::from_millis(1_500) {
                let replies: Vec<Vec<i64>> = pipe.query(c).unwrap();
                admitted += replies.iter().map(|r| r[0] as u64).sum::<u64>();
                calls += replies.len() as u64;
            }
            let expected = burst + rate * start.elapsed().as_secs_f64();
            let error = (admitted as f64 - expected).abs() / expected;
            assert!(error <= 0.02, "{cmd}: admitted {admitted} of {calls}, expected {expected:.0}");
            assert!(calls as f64 > expected * 2.0, "the limiter was not saturated");
        }
    }

    fn writes_replicate_byte_identical_to_a_module_less_replica(flavor) {
        let master = Server::start_with(flavor, &["--repl-diskless-sync-delay", "0"]);
        load_library(&mut master.conn());
        let replica = master.replica(false);
        let (c, r) = (&mut master.conn(), &mut replica.conn());
        for backend in BACKENDS {
            let p = format!("{backend:?}");
            for cmd in [
                "RL.GCRA K 1 1h BURST 5 COST 2",
                "RL.TOKENBUCKET K2 5 1 1h COST 3",
                "RL.LEAKY K3 5 1 1h",
                "RL.GCRA K 1 1h BURST 5 REFUND 9",
                "RL.FIXED K2x 3 1h COST 2",
                "RL.SLIDING K3x 3 1h COST 2",
                "RL.ALL 2 K4 K5 GCRA 1 1h BURST 2 FIXED 2 1h",
                "CL.THROTTLE K6 4 1 3600 2",
                "RL.SLIDINGLOG K7 5 1h COST 2",
                "RL.SLIDINGLOG K7 5 1h COST 1",
                "RL.SLIDINGLOG K7 5 1h REFUND 2",
                "RL.ACQUIRE K8 2 1h a",
                "RL.ACQUIRE K8 2 1h b",
                "RL.RELEASE K8 a",
            ] {
                let words = cmd.replace(" K", &format!(" {{{p}}}K"));
                backend.value(c, &words).unwrap();
            }
        }
        let offset: i64 = run(c, "WAIT 1 5000");
        assert_eq!(offset, 1);
        // The replica has the library too, and decides read-only calls on its copy.
        let peek = "FCALL_RO rl_peek 1 {Module}K2x FIXED 3 1h COST 0";
        let on_replica: Vec<i64> = run(r, peek);
        assert_eq!(on_replica[..3], [1, 3, 1]);
        assert_eq!(run::<Vec<i64>>(c, peek)[..3], on_replica[..3]);
        let keys: Vec<String> = run(c, "KEYS *");
        assert!(keys.len() >= 18, "{keys:?}");
        for k in keys {
            let dump = |c: &mut redis::Connection| -> (Value, i64) {
                (redis::cmd("DUMP").arg(&k).query(c).unwrap(), pexpiretime(c, &k))
            };
            assert_eq!(dump(c), dump(r), "{k}");
        }
    }

    fn library_state_survives_an_aof_restart(flavor) {
        let mut s = Server::start_with(flavor, &["--no-module", "--appendonly", "yes", "--appendfsync", "always"]);
        load_library(&mut s.conn());
        let c = &mut s.conn();
        assert_eq!(Backend::Library.rl(c, "RL.GCRA g 1 1h BURST 2 COST 2")[..3], [1, 2, 0]);
        assert_eq!(Backend::Library.rl(c, "RL.FIXED f 1 1h")[..3], [1, 1, 0]);
        let before: Vec<(Value, i64)> = ["g", "f"]
            .iter()
            .map(|k| (redis::cmd("DUMP").arg(k).query(c).unwrap(), pexpiretime(c, k)))
            .collect();
        s.restart();
        let c = &mut s.conn();
        let after: Vec<(Value, i64)> = ["g", "f"]
            .iter()
            .map(|k| (redis::cmd("DUMP").arg(k).query(c).unwrap(), pexpiretime(c, k)))
            .collect();
        assert_eq!(before, after);
        // The functions persist too, and the limiters are still exhausted.
        assert_eq!(Backend::Library.rl(c, "RL.GCRA g 1 1h BURST 2")[..3], [0, 2, 0]);
        assert_eq!(Backend::Library.rl(c, "RL.FIXED f 1 1h")[..3], [0, 1, 0]);
    }
}
