//! `GCRA`, Redis's designed command: the cases of Redis's `tests/unit/gcra.tcl`
//! (redis/redis, after #14950's renaming) that do not depend on Redis's
//! internal `gcra` type, each named after its Tcl test and asserting at least
//! what it asserts (error texts exactly, where the Tcl matches a pattern).
//! Left out, as they test that type: `GCRASETVALUE - basic functionality`,
//! the RDB, AOF and `DEBUG DIGEST` round trips of a `gcra` value, and the
//! replication of `GCRASETVALUE`; `DUMP and RESTORE roundtrip` and
//! `Replication works` are kept with the module's string state in its place.

use crate::common::*;

fn arity(c: &mut redis::Connection, words: &str) {
    assert_eq!(
        rl_err(c, words),
        "ERR wrong number of arguments for 'gcra' command",
        "{words}"
    );
}

server_tests! {
    fn argument_validation(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for words in ["GCRA", "GCRA mykey", "GCRA mykey 10", "GCRA mykey 10 5"] {
            arity(c, words);
        }
        arity(c, "GCRA mykey 10 5 10 TOKENS 1 extra");
        let cases = [
            // max_burst must be a non-negative integer
            ("GCRA mykey -1 5 10", "ERR value is out of range, must be positive"),
            ("GCRA mykey notanumber 5 10", "ERR value is out of range, must be positive"),
            // tokens_per_period must be >= 1
            ("GCRA mykey 10 0 10", "ERR value is out of range, value must between 1 and 9223372036854775807"),
            ("GCRA mykey 10 -1 10", "ERR value is out of range, value must between 1 and 9223372036854775807"),
            ("GCRA mykey 10 notanumber 10", "ERR value is not an integer or out of range"),
            // period must be positive
            ("GCRA mykey 10 5 0", "ERR period must be > 0 and < 1e12"),
            ("GCRA mykey 10 5 -1", "ERR period must be > 0 and < 1e12"),
            ("GCRA mykey 10 5 notanumber", "ERR value is not a valid float"),
            // TOKENS (optional) must be >= 1
            ("GCRA mykey 10 5 10 TOKENS", "ERR Missing TOKENS value"),
            ("GCRA mykey 10 5 10 TOKENS 0", "ERR value is out of range, value must between 1 and 9223372036854775807"),
            ("GCRA mykey 10 5 10 TOKENS -1", "ERR value is out of range, value must between 1 and 9223372036854775807"),
            ("GCRA mykey 10 5 10 TOKENS notanumber", "ERR value is not an integer or out of range"),
            // Not in the Tcl: gcra.c's syntax error for anything but TOKENS.
            ("GCRA mykey 10 5 10 COST 1", "ERR syntax error"),
            ("GCRA mykey 10 5 10 COST", "ERR syntax error"),
        ];
        for (words, error) in cases {
            assert_eq!(rl_err(c, words), error, "{words}");
        }
        assert_eq!(run::<i64>(c, "EXISTS mykey"), 0, "errors write nothing");
        // Valid arguments with default tokens
        let r = rl(c, "GCRA mykey 10 5 60");
        assert_eq!((r.len(), r[0], r[1]), (5, 0, 11));
        // Valid arguments with explicit tokens
        run::<i64>(c, "DEL mykey");
        let r = rl(c, "GCRA mykey 10 5 60 TOKENS 2");
        assert_eq!((r.len(), r[1]), (5, 11));
        // Period accepts fractional seconds
        run::<i64>(c, "DEL mykey");
        assert_eq!(rl(c, "GCRA mykey 10 5 0.5").len(), 5);
    }

    fn first_request_is_allowed(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "GCRA mykey 5 10 60")[0], 0);
    }

    fn sub_millisecond_tat_does_not_expire_key_at_current_ms(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 10,000 tokens per second: the TAT is 100 µs ahead, within the
        // current millisecond; the expiry is rounded up, so the key stays.
        // (The Tcl reads EXISTS and PTTL after the call, which races the
        // clock; in a transaction no key expires, so the same is exact.)
        let before_ms = now_ms();
        let (r, exists, value, expiry): (Vec<i64>, i64, String, i64) = redis::pipe()
            .atomic()
            .add_command(command("GCRA mykey 1 10000 1"))
            .add_command(command("EXISTS mykey"))
            .add_command(command("GET mykey"))
            .add_command(command("PEXPIRETIME mykey"))
            .query(c)
            .unwrap();
        assert_eq!((r[0], exists), (0, 1));
        let tat_ns: i64 = value.strip_prefix("gcra:").unwrap().parse().unwrap();
        assert!(expiry > before_ms, "{expiry} <= {before_ms}");
        assert_eq!(expiry, (tat_ns + 999_999) / 1_000_000);
    }

    fn requests_within_burst_are_allowed(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for i in 0..6 {
            assert_eq!(rl(c, "GCRA mykey 5 1 60")[0], 0, "request {i} should be allowed");
        }
        assert_eq!(rl(c, "GCRA mykey 5 1 60")[0], 1, "request 6 should be limited");
    }

    fn retry_after_is_positive_when_limited(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for _ in 0..3 {
            rl(c, "GCRA mykey 2 1 60");
        }
        let r = rl(c, "GCRA mykey 2 1 60");
        assert_eq!(r[0], 1);
        assert!(r[3] > 0, "{r:?}");
    }

    fn retry_after_is_negative_when_allowed(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let r = rl(c, "GCRA mykey 5 1 60");
        assert_eq!(r[0], 0);
        assert!(r[3] < 0, "{r:?}");
    }

    fn num_avail_req_decreases_with_each_request(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let first = rl(c, "GCRA mykey 5 1 60")[2];
        let second = rl(c, "GCRA mykey 5 1 60")[2];
        assert!(second < first, "{second} after {first}");
    }

    fn multiple_tokens_consumed_per_request(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "GCRA mykey 5 1 60")[2], 5);
        run::<i64>(c, "DEL mykey");
        assert_eq!(rl(c, "GCRA mykey 5 1 60 TOKENS 3")[2], 3);
    }

    fn rate_recovery_over_time(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "GCRA mykey 1 1 1");
        rl(c, "GCRA mykey 1 1 1");
        assert_eq!(rl(c, "GCRA mykey 1 1 1")[0], 1, "should be limited");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(rl(c, "GCRA mykey 1 1 1")[0], 0, "should be allowed after recovery");
    }

    fn full_burst_after_indicates_time_to_full_recovery(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "GCRA mykey 5 1 60");
        rl(c, "GCRA mykey 5 1 60");
        // Three tokens of a minute each taken: 180 s, rounded up (the Tcl: >= 179).
        assert_eq!(rl(c, "GCRA mykey 5 1 60")[4], 180);
        run::<i64>(c, "DEL mykey");
        rl(c, "GCRA mykey 5 1 60");
        assert_eq!(rl(c, "GCRA mykey 5 1 60 TOKENS 4")[4], 300);
    }

    fn different_keys_are_independent(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for _ in 0..3 {
            rl(c, "GCRA key1 2 1 60");
        }
        assert_eq!(rl(c, "GCRA key1 2 1 60")[0], 1, "key1 should be limited");
        assert_eq!(rl(c, "GCRA key2 2 1 60")[0], 0, "key2 should be allowed");
    }

    fn max_burst_of_0_allows_only_sustained_rate(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let r = rl(c, "GCRA mykey 0 1 1");
        assert_eq!((r[0], r[1]), (0, 1), "first request allowed, max_req_num 1");
        assert_eq!(rl(c, "GCRA mykey 0 1 1")[0], 1, "second request limited");
    }

    fn wrong_type_error(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
        run::<i64>(c, "LPUSH mykey value");
        assert_eq!(rl_err(c, "GCRA mykey 5 1 60"), wrongtype);
        run::<i64>(c, "DEL mykey");
        run::<i64>(c, "SADD mykey value");
        assert_eq!(rl_err(c, "GCRA mykey 5 1 60"), wrongtype);
        // As in gcra.c, the key's type is checked before the overflow.
        assert_eq!(rl_err(c, "GCRA mykey 200000000 1 86400"), wrongtype);
        assert_eq!(run::<Vec<String>>(c, "SMEMBERS mykey"), ["value"]);
    }

    fn overflow(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let tokens = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow";
        let burst = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow";
        assert_eq!(rl_err(c, "GCRA mykey 1 1 86400 TOKENS 200000000"), tokens);
        assert_eq!(rl_err(c, "GCRA mykey 200000000 1 86400"), burst);
        assert_eq!(rl_err(c, "GCRA mykey 1 1 2147483647 TOKENS 2147483647"), tokens);
        assert_eq!(run::<i64>(c, "EXISTS mykey"), 0);
    }

    fn dump_and_restore_roundtrip(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "GCRA mykey 5 1 60");
        rl(c, "GCRA mykey 5 1 60");
        let dump: Vec<u8> = run(c, "DUMP mykey");
        let ttl: i64 = run(c, "PTTL mykey");
        let mut restore = redis::cmd("RESTORE");
        restore.arg("mykey2").arg(ttl).arg(dump);
        let _: String = restore.query(c).unwrap();
        // The module's state is a string (Redis's own command has its `gcra` type).
        assert_eq!(run::<String>(c, "TYPE mykey2"), "string");
        let original = rl(c, "GCRA mykey 5 1 60");
        let restored = rl(c, "GCRA mykey2 5 1 60");
        assert_eq!(original[2], restored[2]);
        assert_eq!(original[..3], [0, 6, 3]);
    }

    fn replication_works(flavor) {
        let master = Server::start_master(flavor);
        // A replica without the module: the effect arrives as a plain SET.
        let replica = master.replica(false);
        let (m, r) = (&mut master.conn(), &mut replica.conn());
        rl(m, "GCRA mykey 2 1 1000 TOKENS 2");
        assert_eq!(run::<i64>(m, "WAIT 1 5000"), 1);
        assert!(info(r, "commandstats", "cmdstat_set").starts_with("calls=1,"));
        let value: String = run(m, "GET mykey");
        assert_eq!(run::<String>(r, "GET mykey"), value);
        assert_eq!(pexpiretime(r, "mykey"), pexpiretime(m, "mykey"));
    }
}
