//! `CL.THROTTLE`, the drop-in for redis-cell: its stored state (a decimal
//! nanosecond TAT, no prefix), its expiry, replication, and a "live swap" that
//! continues from a key in exactly the format redis-cell writes. Its replies that
//! do not depend on the clock (redis-cell's own cases among them) and its errors
//! are test vectors (`tests/vectors/throttle.txt`).

use crate::common::*;

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
    fn each_admission_moves_the_tat_by_one_interval(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // redis-cell's README example: 30 per 60 s (T = 2 s), max_burst 15.
        let before = now_ns();
        assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60")[0], 0);
        let after = now_ns();
        let first = tat(c, "user123");
        assert!((before + 2 * SEC_NS..=after + 2 * SEC_NS).contains(&first));
        assert_eq!(pexpiretime(c, "user123"), expiry_of(first));
        for k in 2..=16 {
            assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60")[0], 0);
            // Each admitted request moves the TAT by exactly T, and the expiry with it.
            let t = tat(c, "user123");
            assert_eq!(t, first + (k as i128 - 1) * 2 * SEC_NS);
            assert_eq!(pexpiretime(c, "user123"), expiry_of(t));
        }
        // Denied: nothing is written.
        assert_eq!(rl(c, "CL.THROTTLE user123 15 30 60")[0], 1);
        assert_eq!(tat(c, "user123"), first + 30 * SEC_NS);
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

    fn quantity_zero_and_denials_write_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 2")[0], 0);
        let (t, exp) = (tat(c, "peek"), pexpiretime(c, "peek"));
        // A peek reports the state and changes neither the value nor the expiry.
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 0")[0], 0);
        assert_eq!((tat(c, "peek"), pexpiretime(c, "peek")), (t, exp));
        // Nor does a quantity that can never pass, or one that does not pass yet.
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 6")[0], 1);
        assert_eq!(rl(c, "CL.THROTTLE peek 4 1 3600 4")[0], 1);
        assert_eq!((tat(c, "peek"), pexpiretime(c, "peek")), (t, exp));
    }

    fn random_arguments_give_an_error_or_a_sane_reply(flavor) {
        let mut s = Server::start(flavor);
        let c = &mut s.conn();
        const WORDS: [&str; 16] = [
            "0", "1", "2", "5", "60", "1000", "86400", "315360000", "1000000000",
            "1000000000000", "9223372036854775807", "18446744073709551616", "-1", "x", "", "1e3",
        ];
        random_calls::five_integers_or_an_error(c, "CL.THROTTLE", &WORDS, 3..=5, 7);
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
