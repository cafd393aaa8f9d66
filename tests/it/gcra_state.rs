//! `GCRA` on the module's state: exact replies in whole seconds, fractional
//! periods, the `-1`s, `RL.GCRA`'s stored state shared both ways, foreign
//! values, the module's bounds after Redis's checks, and what a denial writes
//! (nothing). The ported cases of Redis's own tests are in `tests/it/gcra.rs`.

use crate::common::*;

use std::time::{SystemTime, UNIX_EPOCH};

const SEC_NS: i128 = 1_000_000_000;

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

/// The stored TAT of an `RL.GCRA` state, `gcra:<tat_ns>`.
fn tat(c: &mut redis::Connection, key: &str) -> i128 {
    let value: String = run(c, &format!("GET {key}"));
    let digits = value
        .strip_prefix("gcra:")
        .unwrap_or_else(|| panic!("{value:?}"));
    digits.parse().unwrap()
}

server_tests! {
    fn replies_are_whole_seconds_rounded_up(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // One token a minute, bursts of 6: every time below is a whole number
        // of minutes less the little time the calls take, so rounded up it is
        // exact.
        assert_eq!(rl(c, "GCRA k 5 1 60"), [0, 6, 5, -1, 60]);
        assert_eq!(rl(c, "GCRA k 5 1 60"), [0, 6, 4, -1, 120]);
        assert_eq!(rl(c, "GCRA k 5 1 60 TOKENS 4"), [0, 6, 0, -1, 360]);
        assert_eq!(rl(c, "GCRA k 5 1 60"), [1, 6, 0, 60, 360]);
        assert_eq!(rl(c, "GCRA k 5 1 60 TOKENS 6"), [1, 6, 0, 360, 360]);
    }

    fn tokens_above_the_burst_can_never_fit(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // retry_after -1 on a limited request: it can never be admitted.
        assert_eq!(rl(c, "GCRA k 5 1 60 TOKENS 7"), [1, 6, 6, -1, 0]);
        assert_eq!(run::<i64>(c, "EXISTS k"), 0);
        assert_eq!(rl(c, "GCRA k 5 1 60 TOKENS 2"), [0, 6, 4, -1, 120]);
        assert_eq!(rl(c, "GCRA k 5 1 60 TOKENS 1000"), [1, 6, 4, -1, 120]);
    }

    fn fractional_periods_are_exact(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // Two tokens per half second: one every 250 ms, no burst.
        let before = now_ns();
        assert_eq!(rl(c, "GCRA k 0 2 0.5"), [0, 1, 0, -1, 1]);
        let after = now_ns();
        let t = tat(c, "k");
        assert!((before + SEC_NS / 4..=after + SEC_NS / 4).contains(&t), "{t}");
        // The key expires when the limiter is idle again: the TAT, rounded up.
        assert_eq!(pexpiretime(c, "k") as i128, (t + 999_999) / 1_000_000);
        // 250 ms less a little to wait: 1 s, rounded up.
        assert_eq!(rl(c, "GCRA k 0 2 0.5"), [1, 1, 0, 1, 1]);
        while now_ns() < t {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let before = now_ns();
        assert_eq!(rl(c, "GCRA k 0 2 0.5")[0], 0);
        let next = tat(c, "k");
        assert!((before + SEC_NS / 4..=now_ns() + SEC_NS / 4).contains(&next), "{next}");
        // 1e-3 s, written as an exponent, per 1 token: T = 1 ms, so 100,000 tokens put
        // the TAT 100 s ahead (a key that outlives a slow machine's next call).
        let before = now_ns();
        assert_eq!(rl(c, "GCRA e 100000 1 1e-3 TOKENS 100000")[0], 0);
        let t = tat(c, "e");
        assert!((before + 100 * SEC_NS..=now_ns() + 100 * SEC_NS).contains(&t), "{t}");
    }

    fn the_state_is_rl_gcra_state_both_ways(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // GCRA k 5 10 60 is RL.GCRA k 10 60s BURST 6: T = 6 s.
        let before = now_ns();
        assert_eq!(rl(c, "GCRA k 5 10 60")[..3], [0, 6, 5]);
        let after = now_ns();
        let first = tat(c, "k");
        assert!((before + 6 * SEC_NS..=after + 6 * SEC_NS).contains(&first));
        let r = rl(c, "RL.GCRA k 10 60s BURST 6");
        assert_eq!(r[..4], [1, 6, 4, 0]);
        assert_eq!(tat(c, "k"), first + 6 * SEC_NS);
        // Alternating, they spend the same burst and deny at the same call.
        for i in 0..4 {
            match i % 2 {
                0 => assert_eq!(rl(c, "GCRA k 5 10 60")[..3], [0, 6, 3 - i]),
                _ => assert_eq!(rl(c, "RL.GCRA k 10 60s BURST 6")[..3], [1, 6, 3 - i]),
            }
        }
        assert_eq!(rl(c, "GCRA k 5 10 60")[..4], [1, 6, 0, 6]);
        let denied = rl(c, "RL.GCRA k 10 60s BURST 6");
        assert_eq!(denied[..3], [0, 6, 0]);
        within(denied[3], 5_000, 6_000);
        assert_eq!(tat(c, "k"), first + 30 * SEC_NS);
        // And the other way round: RL.GCRA first, GCRA continues.
        rl(c, "RL.GCRA j 10 60s BURST 6 COST 5");
        assert_eq!(rl(c, "GCRA j 5 10 60")[..3], [0, 6, 0]);
        assert_eq!(rl(c, "GCRA j 5 10 60")[0], 1);
    }

    fn foreign_values_are_errors_left_untouched(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let foreign = "ERR key holds a value that RL.GCRA did not write: use another key or DEL it";
        for value in ["hello", "12345", "1796197934555676919", "gcra:12x", "bucket"] {
            run::<String>(c, &format!("SET k {value}"));
            assert_eq!(rl_err(c, "GCRA k 5 1 60"), foreign, "{value}");
            assert_eq!(run::<String>(c, "GET k"), value);
        }
        rl(c, "RL.FIXED f 5 1h");
        let fixed: String = run(c, "GET f");
        assert_eq!(
            rl_err(c, "GCRA f 5 1 60"),
            "ERR key holds RL.FIXED state, not RL.GCRA state: use another key or DEL it"
        );
        assert_eq!(run::<String>(c, "GET f"), fixed);
        run::<i64>(c, "ZADD z 1 a");
        assert!(rl_err(c, "GCRA z 5 1 60").starts_with("WRONGTYPE"));
    }

    fn the_module_bounds_apply_after_redis_checks(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let cases = [
            ("GCRA k 1000000000001 1000000 1", "ERR max_burst must be an integer from 0 to 1000000000000"),
            ("GCRA k 1 1000000000001 3600", "ERR tokens_per_period must be an integer from 1 to 1000000000000"),
            ("GCRA k 1 1 1 TOKENS 1000000000001", "ERR TOKENS must be an integer from 1 to 1000000000000"),
            ("GCRA k 1 1 315360001", "ERR period must be at most 315360000 seconds (3650 days)"),
            ("GCRA k 1 2 0.000000001", "ERR tokens_per_period per period must be at most 1 per nanosecond: period / tokens_per_period must be at least 1ns"),
            // Redis's own errors come first.
            ("GCRA k 1 1 1e12", "ERR period must be > 0 and < 1e12"),
            ("GCRA k 1 1 2147483647 TOKENS 2147483647", "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"),
        ];
        for (words, error) in cases {
            assert_eq!(rl_err(c, words), error, "{words}");
        }
        assert_eq!(run::<i64>(c, "EXISTS k"), 0);
        // At the bounds, admitted.
        assert_eq!(rl(c, "GCRA k 1000000000000 1000000 1")[..2], [0, 1_000_000_000_001]);
        assert_eq!(rl(c, "GCRA k2 0 1 315360000"), [0, 1, 0, -1, 315_360_000]);
        assert_eq!(rl(c, "GCRA k3 0 1000000000 1")[..4], [0, 1, 0, -1]);
    }

    fn denials_write_and_replicate_nothing(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(false);
        let (m, r) = (&mut master.conn(), &mut replica.conn());
        rl(m, "GCRA k 1 1 3600 TOKENS 2");
        let (value, expiry): (String, i64) = (run(m, "GET k"), pexpiretime(m, "k"));
        let dirty_before = dirty(m);
        assert_eq!(rl(m, "GCRA k 1 1 3600")[0], 1);
        assert_eq!(rl(m, "GCRA k 1 1 3600 TOKENS 3")[0], 1);
        assert_eq!(dirty(m), dirty_before);
        assert_eq!((run::<String>(m, "GET k"), pexpiretime(m, "k")), (value.clone(), expiry));
        // The replica, without the module, holds the same bytes and expiry.
        assert_eq!(run::<i64>(m, "WAIT 1 5000"), 1);
        assert_eq!((run::<String>(r, "GET k"), pexpiretime(r, "k")), (value, expiry));
        assert_eq!(info(r, "commandstats", "cmdstat_set").split(',').next(), Some("calls=1"));
    }

    fn info_rl_counts_it_on_its_own_line(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "GCRA k 1 1 3600 TOKENS 2");
        rl(c, "GCRA k 1 1 3600 TOKENS 3");
        rl_err(c, "GCRA k 1 0 3600");
        assert_eq!(
            info(c, "rl", "rl_gcra_command"),
            "calls=3,admitted=1,denied=1,errors=1,cost_admitted=2,cost_denied=3,near_limit=1"
        );
        assert!(info(c, "rl", "rl_gcra").starts_with("calls=0,"));
    }

    fn random_arguments_give_an_error_or_a_sane_reply(flavor) {
        let mut s = Server::start(flavor);
        let c = &mut s.conn();
        const WORDS: [&str; 20] = [
            "0", "1", "2", "5", "60", "0.5", "1e-9", "86400", "315360000", "1000000000",
            "1000000000000", "9223372036854775807", "-1", "x", "", "1e3", "inf", "nan",
            "TOKENS", "tokens",
        ];
        random_calls::five_integers_or_an_error(c, "GCRA", &WORDS, 3..=6, 14826);
        assert!(s.alive());
    }
}
