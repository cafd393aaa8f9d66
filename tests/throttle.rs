//! `CL.THROTTLE`, the drop-in for redis-cell: its replies, its stored state (a
//! decimal nanosecond TAT, no prefix), its expiry, errors, replication, and a
//! "live swap" that continues from a key in exactly the format redis-cell writes.

mod common;
use common::*;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SEC_NS: i128 = 1_000_000_000;

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

/// The stored TAT, which must be plain decimal nanoseconds.
fn tat(c: &mut redis::Connection, key: &str) -> i128 {
    let value: String = run(c, &format!("GET {key}"));
    assert!(
        !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
        "{value:?} is not decimal nanoseconds"
    );
    value.parse().unwrap()
}

/// The expiry the module sets: the TAT rounded up to the millisecond.
fn expiry_of(tat_ns: i128) -> i64 {
    ((tat_ns + 999_999) / 1_000_000) as i64
}

server_tests! {
    fn burst_then_denial_with_redis_cells_replies(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // redis-cell's README example: 30 per 60 s (T = 2 s), max_burst 15.
        let before = now_ns();
        assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60"), vec![0, 16, 15, -1, 2]);
        let after = now_ns();
        let first = tat(c, "user123");
        assert!((before + 2 * SEC_NS..=after + 2 * SEC_NS).contains(&first));
        assert_eq!(pexpiretime(c, "user123"), expiry_of(first));
        for k in 2..=16 {
            assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60"), vec![0, 16, 16 - k, -1, 2 * k]);
            // Each admitted request moves the TAT by exactly T, and the expiry with it.
            let t = tat(c, "user123");
            assert_eq!(t, first + (k as i128 - 1) * 2 * SEC_NS);
            assert_eq!(pexpiretime(c, "user123"), expiry_of(t));
        }
        // Denied: retry in T (2 s), reset in 16 T; nothing is written.
        assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60"), vec![1, 16, 0, 2, 32]);
        assert_eq!(tat(c, "user123"), first + 30 * SEC_NS);
        // redis-cell's end-to-end test: 1 per 2 s, no burst.
        assert_eq!(rl(c, "CL.THROTTLE e2e 0 1 2 1"), vec![0, 1, 0, -1, 2]);
        assert_eq!(rl(c, "CL.THROTTLE e2e 0 1 2 1"), vec![1, 1, 0, 2, 2]);
    }

    fn partial_seconds_round_up_and_admission_follows_the_tat(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 4 per second (T = 250 ms), max_burst 0: one at a time.
        assert_eq!(rl(c, "CL.THROTTLE fast 0 4 1"), vec![0, 1, 0, -1, 1]);
        let t = tat(c, "fast");
        // 250 ms (less a little) to wait: replied as 1 s, like redis-cell.
        assert_eq!(rl(c, "CL.THROTTLE fast 0 4 1"), vec![1, 1, 0, 1, 1]);
        while now_ns() < t + 1_000_000 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(rl(c, "CL.THROTTLE fast 0 4 1"), vec![0, 1, 0, -1, 1]);
        assert!(tat(c, "fast") >= t + 250_000_000);
    }

    fn quantity_zero_peeks_and_writes_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // A fresh key: everything is available; no key is created.
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 0"), vec![0, 5, 5, -1, 0]);
        assert_eq!(run::<i64>(c, "EXISTS peek"), 0);
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 2"), vec![0, 5, 3, -1, 7200]);
        let (t, exp) = (tat(c, "peek"), pexpiretime(c, "peek"));
        // A peek reports the state and changes neither the value nor the expiry.
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 0"), vec![0, 5, 3, -1, 7200]);
        assert_eq!((tat(c, "peek"), pexpiretime(c, "peek")), (t, exp));
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600"), vec![0, 5, 2, -1, 10800]);
    }

    fn quantity_above_the_limit_is_limited_for_ever(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // limit = max_burst + 1 = 5: quantity 6 can never pass (retry_after -1).
        assert_eq!(rl(c, "CL.THROTTLE big 4 1 1 6"), vec![1, 5, 5, -1, 0]);
        assert_eq!(run::<i64>(c, "EXISTS big"), 0);
        // Quantity equal to the limit passes once, and empties the key.
        assert_eq!(rl(c, "CL.THROTTLE big 4 1 60 5"), vec![0, 5, 0, -1, 300]);
        let t = tat(c, "big");
        assert_eq!(rl(c, "CL.THROTTLE big 4 1 60 6"), vec![1, 5, 0, -1, 300]);
        assert_eq!(rl(c, "CL.THROTTLE big 4 1 60 1"), vec![1, 5, 0, 60, 300]);
        assert_eq!(tat(c, "big"), t);
    }

    fn bad_input_is_an_error_and_never_a_crash(flavor) {
        let mut s = Server::start(flavor);
        let c = &mut s.conn();
        let arity = "ERR wrong number of arguments for 'cl.throttle' command";
        assert_eq!(rl_err(c, "CL.THROTTLE k 1 1"), arity);
        assert_eq!(rl_err(c, "CL.THROTTLE k 1 1 1 1 1"), arity);
        let burst = "ERR max_burst must be an integer from 0 to 1000000000000";
        let count = "ERR count must be an integer from 1 to 1000000000000";
        let period = "ERR period (seconds) must be an integer from 1 to 315360000";
        let quantity = "ERR quantity must be an integer from 0 to 1000000000000";
        for (words, error) in [
            ("k -1 1 1", burst),
            ("k x 1 1", burst),
            ("k 1000000000001 1 1", burst),
            ("k 1 0 1", count),
            ("k 1 -5 1", count),
            ("k 1 1.5 1", count),
            ("k 1 1 0", period),
            ("k 1 1 -1", period),
            ("k 1 1 1m", period),
            ("k 1 1 315360001", period),
            ("k 1 1 1 -1", quantity),
            ("k 1 1 1 1000000000001", quantity),
            ("k 1 1 1 99999999999999999999999999", quantity),
        ] {
            assert_eq!(rl_err(c, &format!("CL.THROTTLE {words}")), error, "{words}");
        }
        assert!(rl_err(c, "CL.THROTTLE k 1 2000000000 1").starts_with("ERR count must be at most"));
        assert!(rl_err(c, "CL.THROTTLE k 3650 1 86400").starts_with("ERR max_burst is too large"));
        assert_eq!(run::<i64>(c, "EXISTS k"), 0);

        // A key that holds anything but a decimal TAT is refused and left as it was.
        let foreign = "ERR key holds a value that CL.THROTTLE did not write: use another key or DEL it";
        for value in ["hello", "-5", "1.5", "gcra:1764489600123456789", "99999999999999999999"] {
            run::<()>(c, &format!("SET s {value} PXAT 4102444800000"));
            assert_eq!(rl_err(c, "CL.THROTTLE s 1 1 1"), foreign, "{value}");
            assert_eq!(run::<String>(c, "GET s"), value);
            assert_eq!(pexpiretime(c, "s"), 4_102_444_800_000);
        }
        redis::cmd("SET").arg("s").arg("").query::<()>(c).unwrap();
        assert_eq!(rl_err(c, "CL.THROTTLE s 1 1 1"), foreign);
        run::<i64>(c, "RPUSH list a");
        assert!(rl_err(c, "CL.THROTTLE list 1 1 1").starts_with("WRONGTYPE"));
        run::<i64>(c, "ZADD zset 1 a");
        assert!(rl_err(c, "CL.THROTTLE zset 1 1 1").starts_with("WRONGTYPE"));
        assert_eq!(run::<Vec<String>>(c, "LRANGE list 0 -1"), vec!["a".to_string()]);
        assert!(s.alive());
    }

    fn random_arguments_give_an_error_or_a_sane_reply(flavor) {
        let mut s = Server::start(flavor);
        let c = &mut s.conn();
        const WORDS: [&str; 16] = [
            "0", "1", "2", "5", "60", "1000", "86400", "315360000", "1000000000",
            "1000000000000", "9223372036854775807", "18446744073709551616", "-1", "x", "", "1e3",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        for i in 0..2_000 {
            let argc = rng.random_range(3..=5);
            let args: Vec<&str> = (0..argc).map(|_| *WORDS.choose(&mut rng).unwrap()).collect();
            let mut cmd = redis::cmd("CL.THROTTLE");
            cmd.arg(format!("k{}", i % 7)).arg(&args);
            match cmd.query::<Vec<i64>>(c) {
                Ok(r) => {
                    assert_eq!(r.len(), 5, "{args:?}");
                    assert!(matches!(r[0], 0 | 1), "{args:?} {r:?}");
                    assert!((0..=r[1]).contains(&r[2]), "{args:?} {r:?}");
                    assert!(r[3] >= -1 && r[4] >= 0, "{args:?} {r:?}");
                    assert!(r[0] == 1 || r[3] == -1, "{args:?} {r:?}");
                }
                Err(e) => {
                    let text = error_text(&e);
                    assert!(text.starts_with("ERR "), "{args:?}: {text}");
                }
            }
        }
        assert!(s.alive());
    }

    fn live_swap_continues_from_a_redis_cell_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // redis-cell, for `CL.THROTTLE user 4 1 10` (T = 10 s, limit 5), after three
        // requests at `t0`, stores the TAT t0 + 30 s as decimal nanoseconds with a
        // relative TTL of (TAT - now) in whole milliseconds.
        let now = now_ns();
        let t0 = now - 1_234_567; // the three requests were a moment ago
        let cell_tat = t0 + 30 * SEC_NS;
        let expire_ms = now / 1_000_000 + (cell_tat - now) / 1_000_000;
        run::<()>(c, &format!("SET user {cell_tat} PXAT {expire_ms}"));

        // Our module continues exactly where redis-cell left off: two left, then denied.
        assert_eq!(rl(c, "CL.THROTTLE user 4 1 10 0"), vec![0, 5, 2, -1, 30]);
        assert_eq!(rl(c, "CL.THROTTLE user 4 1 10"), vec![0, 5, 1, -1, 40]);
        assert_eq!(tat(c, "user"), cell_tat + 10 * SEC_NS);
        assert_eq!(rl(c, "CL.THROTTLE user 4 1 10"), vec![0, 5, 0, -1, 50]);
        let t = tat(c, "user");
        assert_eq!(t, cell_tat + 20 * SEC_NS);
        assert_eq!(rl(c, "CL.THROTTLE user 4 1 10"), vec![1, 5, 0, 10, 50]);
        // The state stays in redis-cell's format, so the swap also works backwards;
        // the expiry is absolute, at the TAT rounded up to the millisecond.
        assert_eq!(pexpiretime(c, "user"), expiry_of(t));
        let ttl: i64 = run(c, "PTTL user");
        assert!((49_000..=50_000).contains(&ttl), "{ttl}");

        // A redis-cell key whose TAT just passed (its TTL truncates, ours rounds
        // up) is the idle state, not extra capacity.
        let past = now_ns() - 500_000;
        run::<()>(c, &format!("SET idle {past} PX 60000"));
        assert_eq!(rl(c, "CL.THROTTLE idle 4 1 10"), vec![0, 5, 4, -1, 10]);
    }

    fn admitted_requests_replicate_as_set_pxat(flavor) {
        let master = Server::start_master(flavor);
        let replicas = [master.replica(true), master.replica(false)];
        let m = &mut master.conn();
        for _ in 0..3 {
            rl(m, "CL.THROTTLE rep 1 1 3600");
        }
        rl(m, "CL.THROTTLE rep 1 1 3600 0");
        rl(m, "CL.THROTTLE quiet 1 1 3600 0");
        assert_eq!(run::<i64>(m, "WAIT 2 5000"), 2);
        let (t, exp) = (tat(m, "rep"), pexpiretime(m, "rep"));
        for replica in &replicas {
            let r = &mut replica.conn();
            assert_eq!((tat(r, "rep"), pexpiretime(r, "rep")), (t, exp));
            assert_eq!(run::<i64>(r, "EXISTS quiet"), 0);
            let stats: String = run(r, "INFO commandstats");
            assert!(!stats.contains("cmdstat_cl.throttle"), "{stats}");
            assert!(stats.contains("cmdstat_set:calls=2,"), "{stats}");
        }
        assert!(!replicas[1].log().contains("unknown command"), "{}", replicas[1].log());
    }
}
