//! Edge arithmetic: a rate of exactly one unit per nanosecond spends (the
//! refusal of faster rates, and the replies at the largest counts, are test
//! vectors: `tests/vectors/extremes.txt`);
//! `reset_after_ms` never runs past the key's real expiry; and a call that
//! writes nothing leaves a foreign value's object as it was, encoding included.

use crate::common::*;

/// The expiry cap (ms since the epoch), about the year 33658.
const MAX_EXPIRE_MS: i64 = 1_000_000_000_000_000;

server_tests! {
    fn one_unit_per_nanosecond_spends_and_then_denies(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 10^12 per 1000 s: the first call spends all (its reply is a vector), the
        // next one is denied; how many units came back meanwhile depends on the clock.
        for full in [
            "RL.GCRA k 1000000000000 1000s BURST 1000000000000 COST 1000000000000",
            "RL.TOKENBUCKET t 1000000000000 1000000000000 1000s COST 1000000000000",
        ] {
            assert_eq!(rl(c, full)[0], 1, "{full}");
            let denied = rl(c, full);
            assert_eq!(denied[..2], [0, 1_000_000_000_000], "{full}");
            within(denied[4], 999_000, 1_000_000);
        }
    }

    fn reset_after_never_runs_past_the_keys_expiry(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        let r = rl(c, "RL.GCRA k 1 3650d BURST 1000000000000 COST 1000000000000");
        assert_eq!(r[..4], [1, 1_000_000_000_000, 0, 0]);
        let expiry = pexpiretime(c, "k");
        assert_eq!(expiry, MAX_EXPIRE_MS);
        // The reply's reset is measured from the server's clock, read after `before`.
        assert!(r[4] <= expiry - before, "{r:?}");
        within(r[4], MAX_EXPIRE_MS - now_ms() - 1, MAX_EXPIRE_MS - before);
        // A denial's retry_after is capped the same way.
        let d = rl(c, "RL.GCRA k 1 3650d BURST 1000000000000 COST 1");
        assert_eq!(d[0], 0);
        assert!(d[3] <= expiry - before && d[4] <= expiry - before, "{d:?}");
        // The token and leaky buckets too.
        for words in [
            "RL.TOKENBUCKET t 1000000000000 1 3650d COST 1000000000000",
            "RL.LEAKY l 1000000000000 1 3650d COST 1000000000000",
        ] {
            let r = rl(c, words);
            let key = words.split(' ').nth(1).unwrap();
            assert_eq!(pexpiretime(c, key), MAX_EXPIRE_MS, "{words}");
            assert!(r[4] <= MAX_EXPIRE_MS - before, "{words}: {r:?}");
        }
    }

    fn calls_that_write_nothing_leave_short_foreign_values_unencoded(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // An integer (int-encoded) and a short string (embstr): never read.
        run::<String>(c, "SET n 42");
        run::<String>(c, "SET e hello");
        let object = |c: &mut redis::Connection, key: &str| -> (String, i64, Vec<u8>) {
            (
                run(c, &format!("OBJECT ENCODING {key}")),
                run(c, &format!("MEMORY USAGE {key}")),
                run(c, &format!("DUMP {key}")),
            )
        };
        let (n, e) = (object(c, "n"), object(c, "e"));
        assert_eq!((n.0.as_str(), e.0.as_str()), ("int", "embstr"));
        for key in ["n", "e"] {
            for words in [
                "RL.GCRA {} 1 1s PEEK",
                "RL.GCRA {} 1 1s",
                "RL.TOKENBUCKET {} 5 1 1s COST 0",
                "RL.FIXED {} 5 1s",
                "RL.SLIDING {} 5 1s PEEK",
                "RL.ALL 1 {} LEAKY 5 1 1s",
            ] {
                let words = words.replace("{}", key);
                assert!(rl_err(c, &words).starts_with("ERR key holds a value"), "{words}");
            }
            for words in ["RL.SLIDINGLOG {} 5 1s", "RL.ACQUIRE {} 5 1s a", "RL.RELEASE {} a"] {
                let words = words.replace("{}", key);
                assert!(rl_err(c, &words).starts_with("WRONGTYPE"), "{words}");
            }
        }
        assert_eq!(object(c, "n"), n);
        assert_eq!(object(c, "e"), e);
    }

    fn longer_foreign_strings_keep_their_content(flavor) {
        // 21 to 44 bytes: stored embstr; the module API reads a string only by
        // direct access, which makes it raw. Content, expiry and DUMP never change.
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let value = "a-foreign-value-of-30-bytes-xx";
        run::<String>(c, &format!("SET v {value} PX 3600000"));
        assert_eq!(run::<String>(c, "OBJECT ENCODING v"), "embstr");
        let dump: Vec<u8> = run(c, "DUMP v");
        let expiry = pexpiretime(c, "v");
        assert!(rl_err(c, "RL.GCRA v 1 1s PEEK").starts_with("ERR key holds a value"));
        assert_eq!(run::<String>(c, "GET v"), value);
        assert_eq!(run::<Vec<u8>>(c, "DUMP v"), dump);
        assert_eq!(pexpiretime(c, "v"), expiry);
        assert_eq!(run::<String>(c, "OBJECT ENCODING v"), "raw");
        // CL.THROTTLE's state is a decimal integer: it reads short strings, the same way.
        run::<String>(c, "SET n 1764489600123456789");
        assert_eq!(run::<String>(c, "OBJECT ENCODING n"), "int");
        assert_eq!(rl(c, "CL.THROTTLE n 0 1 60 0")[0], 0);
        assert_eq!(run::<String>(c, "GET n"), "1764489600123456789");
        assert_eq!(run::<String>(c, "OBJECT ENCODING n"), "raw");
    }
}
