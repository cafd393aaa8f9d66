//! Penalties and bans through the Functions library, where it stands on its own:
//! what it writes (each penalty's start, carry, lift and ban written and counted
//! as the module writes them, replicated byte for byte to a module-less
//! replica); `FCALL rl_ban` on every kind of key answered as `RL.BAN` answers it;
//! hand-edited penalties read, and foreign ones refused untouched, as the module
//! does; `BLOCK`, which the library decides at once.

use std::time::Instant;

use crate::common::backend::{is_lua_runtime_error, load_library, replies_agree};
use crate::common::*;
use crate::functions::state;

/// Runs `line` (module words; `{k}` is the key) on `m:<key>` through the module and
/// `l:<key>` through the library: the replies agree, and so do the dirty counter's
/// steps (the writes), the keys' states and their expiries. The module's reply.
fn both(c: &mut redis::Connection, line: &str, key: &str) -> Result<Value, String> {
    let start = Instant::now();
    let before = dirty(c);
    let a = Backend::Module.value(c, &line.replace("{k}", &format!("m:{key}")));
    let between = dirty(c);
    let b = Backend::Library.value(c, &line.replace("{k}", &format!("l:{key}")));
    let after = dirty(c);
    // The time the two calls took, and some: on a loaded machine the library's clock
    // (the server's TIME) was seen 3 ms behind the module's, read before it.
    let slack = start.elapsed().as_millis() as i64 + 20;
    if let Err(e) = &b {
        assert!(!is_lua_runtime_error(e), "{line}: {e}");
    }
    assert!(
        replies_agree(&a, &b, slack),
        "{line} on {key}\n module:  {a:?}\n library: {b:?}"
    );
    assert_eq!(
        between - before,
        after - between,
        "{line} on {key}: the writes"
    );
    let ((sm, im), (sl, il)) = (state(c, &format!("m:{key}")), state(c, &format!("l:{key}")));
    assert_eq!(sm, sl, "{line} on {key}");
    for (x, y) in im.iter().zip(&il) {
        assert!(
            (x - y).abs() <= slack as i128 * 1_000_000,
            "{line} on {key}: {x} vs {y}"
        );
    }
    let (em, el) = (
        pexpiretime(c, &format!("m:{key}")),
        pexpiretime(c, &format!("l:{key}")),
    );
    assert!(
        (em - el).abs() <= slack,
        "{line} on {key}: expires at {em} vs {el}"
    );
    a
}

/// Sets `m:<key>` and `l:<key>` with `words` (a command whose second word is `{k}`).
fn set_both(c: &mut redis::Connection, words: &str, key: &str) {
    for side in ["m", "l"] {
        let _: Value = run(c, &words.replace("{k}", &format!("{side}:{key}")));
    }
}

/// Each limiter on `{k}`, exhausted by its first call.
const LIMITERS: [&str; 6] = [
    "RL.GCRA {k} 1 1h",
    "RL.TOKENBUCKET {k} 1 1 1h",
    "RL.LEAKY {k} 1 1 1h",
    "RL.SLIDING {k} 1 1h",
    "RL.SLIDINGLOG {k} 1 1h",
    "RL.FIXED {k} 1 1h",
];

server_tests! {
    fn each_start_carry_lift_and_ban_writes_and_counts_as_the_modules(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        for (i, limiter) in LIMITERS.iter().enumerate() {
            let key = format!("k{i}");
            let peek = format!("RL.PEEK {}", &limiter[3..]);
            for call in [
                "RL.BAN {k} 0".to_string(),
                limiter.to_string(),
                format!("{limiter} PENALTY 1h ESCALATE 1d"),
                limiter.to_string(),
                format!("{limiter} PENALTY 1m"),
                format!("{limiter} COST 0"),
                format!("{limiter} PEEK"),
                peek.clone(),
                format!("{limiter} BLOCK 10"),
                // A refund leaves the penalty (the key holding only it, idle), a debit too.
                format!("{limiter} REFUND 1"),
                format!("{limiter} REFUND 1"),
                format!("{limiter} DEBIT 1"),
                format!("{limiter} DEBIT 1"),
                // Bans replace it, then lift it.
                "RL.BAN {k} 7200000".to_string(),
                "RL.BAN {k} 60000".to_string(),
                limiter.to_string(),
                "RL.BAN {k} 0".to_string(),
                "RL.BAN {k} 0".to_string(),
                peek.clone(),
                format!("{limiter} REFUND 5"),
                "RL.BAN {k} 600000".to_string(),
                limiter.to_string(),
                format!("{limiter} PENALTY 1h ESCALATE 1d"),
                "RL.BAN {k} 0".to_string(),
            ] {
                let _ = both(c, &call, &key);
            }
        }
        // RL.ALL: the denying layers' starts only, each one write.
        for call in [
            "RL.ALL 3 {k}a {k}b {k}c FIXED 1 1h PENALTY 1h SLIDINGLOG 1 1h PENALTY 1h GCRA 5 1h",
            "RL.ALL 3 {k}a {k}b {k}c FIXED 1 1h PENALTY 1h SLIDINGLOG 1 1h PENALTY 1h GCRA 5 1h",
            "RL.ALL 3 {k}a {k}b {k}c FIXED 1 1h PENALTY 1h SLIDINGLOG 1 1h PENALTY 1h GCRA 5 1h PEEK",
            "RL.ALL 2 {k}a {k}b FIXED 1 1h REFUND 1 SLIDINGLOG 1 1h REFUND 1",
        ] {
            let _ = both(c, call, "all");
            for layer in ["a", "b", "c"] {
                let _ = both(c, &format!("RL.PEEK FIXED {{k}}{layer} 1 1h"), "all");
            }
        }
    }

    fn penalties_and_bans_replicate_byte_for_byte_to_a_module_less_replica(flavor) {
        let master = Server::start_with(flavor, &["--no-module", "--repl-diskless-sync-delay", "0"]);
        load_library(&mut master.conn());
        let replica = master.replica(false);
        let (c, r) = (&mut master.conn(), &mut replica.conn());
        let mut keys = vec![];
        for (i, limiter) in LIMITERS.iter().enumerate() {
            let key = format!("k{i}");
            for call in [
                limiter.to_string(),
                format!("{limiter} PENALTY 1h ESCALATE 2h"),
                format!("{limiter} REFUND 1"),
                limiter.to_string(),
                "RL.BAN {k} 60000".to_string(),
            ] {
                let _ = Backend::Library.value(c, &call.replace("{k}", &key));
            }
            keys.push(key);
        }
        for (key, calls) in [
            ("b1", &["RL.BAN {k} 60000", "RL.BAN {k} 120000"][..]),
            ("b2", &["RL.BAN {k} 60000", "RL.BAN {k} 0"][..]),
            ("b3", &["RL.SLIDINGLOG {k} 2 1h", "RL.BAN {k} 60000", "RL.BAN {k} 0"][..]),
            ("b4", &["RL.FIXED {k} 2 1h", "RL.BAN {k} 60000", "RL.BAN {k} 0"][..]),
        ] {
            for call in calls {
                let _ = Backend::Library.value(c, &call.replace("{k}", key));
            }
            keys.push(key.to_string());
        }
        let _: i64 = run(c, "WAIT 1 5000");
        for key in keys {
            let dump = |c: &mut redis::Connection| -> (Value, i64) {
                (redis::cmd("DUMP").arg(&key).query(c).unwrap(), pexpiretime(c, &key))
            };
            assert_eq!(dump(c), dump(r), "{key}");
        }
        assert_eq!(run::<i64>(r, "EXISTS b2"), 0);
    }

    fn rl_ban_answers_every_kind_of_key_as_the_module(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        let far = now_ms() + 3_600_000;
        let values = [
            // A limiter's state, and a key holding only a penalty.
            ("gcra", "RL.GCRA {k} 1 1h".to_string()),
            ("bucket", "RL.TOKENBUCKET {k} 1 1 1h".to_string()),
            ("leaky", "RL.LEAKY {k} 1 1 1h".to_string()),
            ("sliding", "RL.SLIDING {k} 1 1h".to_string()),
            ("log", "RL.SLIDINGLOG {k} 2 1h".to_string()),
            ("fixed", "RL.FIXED {k} 1 1h".to_string()),
            ("only", format!("SET {{k}} penalty:{far}:5:{far} PXAT {far}")),
            ("lapsed", "SET {k} penalty:1000000000000:5:1000000000000".to_string()),
            // A sorted set holding only a penalty member; a legacy log; a log's set
            // whose lowest member is not a penalty.
            ("zonly", format!("ZADD {{k}} -1 penalty:{far}:5:{far}")),
            ("legacy", "ZADD {k} 1764489600123456 1764489600123456789".to_string()),
            ("zforeign", "ZADD {k} -1 x".to_string()),
            ("zlow", "ZADD {k} -2 x".to_string()),
            // A string starting as a limiter's state does (ban.rs is_limiter_state).
            ("tagged", "SET {k} slidinglog:not-a-state-but-tagged".to_string()),
            ("tagged2", "SET {k} gcra:xyz-long-enough-to-be-read".to_string()),
            // Values no limiter wrote, and other types.
            ("short", "SET {k} 12".to_string()),
            ("text", "SET {k} hello-this-is-long-enough-to-read".to_string()),
            ("bad", "SET {k} gcra:1764489600123456789|penalty:1:2".to_string()),
            ("cell", "CL.THROTTLE {k} 1 1 60".to_string()),
            ("lease", "RL.ACQUIRE {k} 2 1h a".to_string()),
            ("zset", "ZADD {k} 1 x".to_string()),
            ("list", "RPUSH {k} a".to_string()),
            ("hash", "HSET {k} a 1".to_string()),
        ];
        for (key, setup) in &values {
            if setup.starts_with("RL.") || setup.starts_with("CL.") {
                let _ = both(c, setup, key);
            } else {
                set_both(c, setup, key);
            }
        }
        for ms in ["60000", "0", "7200000", "0", "600000"] {
            for (key, _) in &values {
                let _ = both(c, &format!("RL.BAN {{k}} {ms}"), key);
            }
        }
        // The limiters read what the bans left, as the module does.
        for (key, _) in &values {
            for limiter in LIMITERS {
                let _ = both(c, limiter, key);
            }
        }
    }

    fn hand_edited_penalties_are_read_and_foreign_ones_refused_untouched(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        // (A keep past 2^63 - 1 ms cannot be an expiry: not written here, see below.)
        let (max, keep) = (u64::MAX, i64::MAX);
        let values = [
            // Read: fields of up to 38 digits (leading zeros), up to 2^64 - 1.
            format!("fixed:1:1|penalty:{max}:1:{keep}"),
            format!("penalty:{max}:{max}:{keep}"),
            "penalty:00000000000000000000000000000000000001:1:1".to_string(),
            "gcra:1764489600123456789|penalty:0000000000000000000000000000000000001:1:1"
                .to_string(),
            "sliding:1:1:1|penalty:1:2:3".to_string(),
            // Refused: a field past 2^64 - 1 or of 39 digits, a missing or extra
            // field, no digits, text after the last separator, a state of no limiter.
            "fixed:1:1|penalty:18446744073709551616:1:1".to_string(),
            "penalty:000000000000000000000000000000000000001:1:1".to_string(),
            "gcra:1764489600123456789|penalty:1:2".to_string(),
            "gcra:1764489600123456789|penalty:1:2:3:4".to_string(),
            "gcra:1764489600123456789|penalty::2:3".to_string(),
            "gcra:1764489600123456789|penalty:1:2:3|".to_string(),
            "gcra:1764489600123456789|".to_string(),
            "fixed:1:1|penalty:1:1:1|penalty:1:1:1".to_string(),
            "|penalty:1764489600123:1:1764489600123".to_string(),
            "penalty:1764489600123:1:1764489600123:1".to_string(),
            "slidinglog:1|penalty:99999999999999:1:99999999999999".to_string(),
        ];
        for (i, value) in values.iter().enumerate() {
            let key = format!("v{i}");
            set_both(c, &format!("SET {{k}} {value}"), &key);
            for call in LIMITERS
                .iter()
                .map(|l| l.to_string())
                .chain([
                    "RL.PEEK FIXED {k} 1 1h".to_string(),
                    "RL.PEEK SLIDINGLOG {k} 1 1h COST 0".to_string(),
                    "RL.ALL 1 {k} GCRA 1 1h".to_string(),
                    "RL.FIXED {k} 5 1h COST 0".to_string(),
                    "RL.FIXED {k} 5 1h REFUND 1".to_string(),
                ])
            {
                let _ = both(c, &call, &key);
            }
            // Set again (a call may have decided on it), then banned, then lifted.
            set_both(c, &format!("SET {{k}} {value}"), &key);
            let _ = both(c, "RL.BAN {k} 60000", &key);
            set_both(c, &format!("SET {{k}} {value}"), &key);
            let _ = both(c, "RL.BAN {k} 0", &key);
        }
        // A refused value stays as it was.
        let foreign = "gcra:1764489600123456789|penalty:1:2";
        set_both(c, &format!("SET {{k}} {foreign}"), "f");
        assert!(both(c, "RL.GCRA {k} 1 1h", "f").is_err());
        assert!(both(c, "RL.BAN {k} 1000", "f").is_err());
        assert_eq!(run::<String>(c, "GET l:f"), foreign);
        // A keep past 2^63 - 1 ms (hand-edited: every keep the commands write is
        // within 7,300 days of now) expires at 2^63 - 1, the latest expiry Redis takes.
        let _: () = run(c, &format!("SET l:g penalty:{max}:1:{max}"));
        let _: i64 = run(c, "FCALL rl_ban 1 l:g 60000");
        assert_eq!(pexpiretime(c, "l:g"), i64::MAX);
        let stored: String = run(c, "GET l:g");
        assert!(stored.ends_with(&format!(":60000:{max}")), "{stored}");
    }

    fn block_decides_at_once_and_starts_no_penalty_the_module_would_wait_out(flavor) {
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        let l = |c: &mut redis::Connection, words: &str| Backend::Library.rl(c, words);
        // The limiter's own wait (100 ms) is within BLOCK: the module would wait and
        // admit; the library replies the denial at once, and starts no penalty.
        assert_eq!(l(c, "RL.GCRA w 10 1m")[0], 1);
        let d = l(c, "RL.GCRA w 10 1m BLOCK 10000 PENALTY 1h");
        assert_eq!(d[..3], [0, 1, 0]);
        within(d[3], 1, 6_000);
        let stored: String = run(c, "GET w");
        assert!(!stored.contains("penalty"), "{stored}");
        // Beyond BLOCK: denied at once, and the penalty starts (as the module does).
        let d = l(c, "RL.GCRA w 10 1m BLOCK 10 PENALTY 1h");
        within(d[3], 3_599_000, 3_600_001);
        let stored: String = run(c, "GET w");
        assert!(stored.contains("|penalty:"), "{stored}");
        // A penalty ending within BLOCK, which the module would wait out: at once.
        let _: i64 = run(c, "FCALL rl_ban 1 z 5000");
        let d = l(c, "RL.GCRA z 10 1s BLOCK 10000");
        assert_eq!(d[..3], [0, 1, 0]);
        within(d[3], 1, 5_001);
        let _: i64 = run(c, "FCALL rl_ban 1 z 0");
        assert_eq!(l(c, "RL.GCRA z 10 1s BLOCK 10000")[0], 1);
    }
}
