//! `DEBIT n` (CONTRACT.md section 10) against real servers, where the vectors
//! (`tests/vectors/debit.txt`) cannot reach: a debit never queues behind
//! waiters, and they wake when the debt is paid off, not before; a shadow
//! policy's debit is an admission, and `INFO rl` counts it as admitted with its
//! units; the work of one debit is bounded.

use crate::common::raw::{wait_for, waits, Raw, Reply};
use crate::common::*;

use std::time::Instant;

server_tests! {
    fn a_debit_passes_waiters_and_they_wake_when_the_debt_is_paid(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (limiter, debt_ms) in [
            ("RL.GCRA k 10 1s", 600),
            ("RL.TOKENBUCKET k 1 10 1s", 600),
            ("RL.LEAKY k 1 10 1s", 600),
            ("RL.SLIDINGLOG k 1 700ms", 700),
        ] {
            let _: i64 = run(c, "DEL k");
            assert_eq!(rl(c, limiter)[0], 1, "{limiter}");
            // A waiter queues for the next unit (due in 100 ms, or 700 for the log).
            let mut waiter = Raw::send(&s, &format!("{limiter} BLOCK 5000"));
            wait_for("the waiter", || waits(c).0 == 1);
            // The debit is answered at once, while the waiter still waits.
            let charged = Instant::now();
            let debit = rl(c, &format!("{limiter} DEBIT 5"));
            assert_eq!(debit[..3], [1, 1, 0], "{limiter}: {debit:?}");
            assert_eq!(waits(c).0, 1, "{limiter}: the debit went before the waiter");
            // The GCRA family owes 600 ms now; the log holds its first entry
            // (leaving at 700 ms) and the debit's (leaving a window later).
            within(debit[3], debt_ms - 100, debt_ms);
            match waiter.read() {
                Reply::Integers(r) => assert_eq!(r[0], 1, "{limiter}: {r:?}"),
                other => panic!("{limiter}: {other:?}"),
            }
            let waited = charged.elapsed().as_millis() as i64;
            assert!(
                waited >= debit[3] - 10,
                "{limiter}: admitted after {waited} ms, before the debt of {} ms was paid",
                debit[3]
            );
            assert_eq!(waits(c).0, 0);
        }
    }

    fn a_shadow_policy_counts_a_debit_as_an_admission(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: String = run(c, "RL.POLICY SET tpm FIXED 3 1h SHADOW");
        let debit = rl(c, "RL.LIMIT k tpm DEBIT 5");
        assert_eq!(debit[..3], [1, 3, 0]);
        let shadowed = rl(c, "RL.LIMIT k tpm");
        assert_eq!(shadowed[..3], [1, 3, 0], "a shadowed denial");
        assert!(shadowed[3] > 0);
        let text: String = run(c, "INFO rl_policies");
        assert!(
            text.contains("policy_tpm:calls=2,admitted=1,denied=0,shadow_denied=1,errors=0,penalties=0"),
            "{text}"
        );
    }

    fn info_rl_counts_a_debit_as_admitted_with_its_units(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.FIXED k 3 1h DEBIT 5")[0], 1);
        assert_eq!(rl(c, "RL.FIXED k 3 1h")[0], 0);
        let text: String = run(c, "INFO rl");
        assert!(
            text.contains("rl_fixed:calls=2,admitted=1,denied=1,errors=0,cost_admitted=5,cost_denied=1"),
            "{text}"
        );
    }

    fn a_log_in_debt_holds_at_most_limit_entries(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        for backend in BACKENDS {
            let key = format!("log:{backend:?}");
            // Under the limit each debit is its own entry; once the window is at
            // its limit a debit joins the newest entry, moved to its own time.
            for n in 1..=2_000i64 {
                let before = dirty(c);
                let words = format!("RL.SLIDINGLOG {key} 10 1h DEBIT 1");
                let reply = backend.rl(c, &words);
                assert_eq!(reply[..3], [1, 10, 0.max(10 - n)], "{backend:?} debit {n}");
                assert_eq!(run::<i64>(c, &format!("ZCARD {key}")), n.min(10), "{backend:?}");
                assert!(dirty(c) - before <= 3, "{} writes", dirty(c) - before);
            }
            // Every unit is still owed: a cost of 1 waits for the whole hour.
            let denied = backend.rl(c, &format!("RL.SLIDINGLOG {key} 10 1h"));
            assert_eq!(denied[..3], [0, 10, 0], "{backend:?}");
            within(denied[3], 3_590_000, 3_600_000);
        }
        // Both backends left the same entries but for their times.
        let mut sums = |key: &str| -> Vec<String> {
            let members: Vec<String> = run(c, &format!("ZRANGE {key} 0 -1"));
            members.iter().map(|m| m.split_once(':').unwrap().1.to_string()).collect()
        };
        assert_eq!(sums("log:Module"), sums("log:Library"));
    }

    fn a_debit_adds_at_most_one_entry_and_rewrites_one_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // However far past the limit, one debit is one write of one key.
        for _ in 1..=50 {
            let before = dirty(c);
            assert_eq!(rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000")[0], 1);
            assert_eq!(run::<i64>(c, "ZCARD log"), 1);
            assert!(dirty(c) - before <= 3, "{} writes", dirty(c) - before);
        }
        // At the cap a debit writes nothing.
        let _: i64 = run(c, "DEL log");
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000000");
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000000");
        let before = dirty(c);
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1");
        assert_eq!((run::<i64>(c, "ZCARD log"), dirty(c)), (1, before));
    }

    fn a_reply_is_the_state_a_sliding_window_leaves_behind_its_start(flavor) {
        let s = Server::start_library(flavor, true);
        let c = &mut s.conn();
        for backend in BACKENDS {
            // A start written under a 5 s window, 5 s into a 10 s one and 10 to
            // 20 s ahead of the clock: the clock is behind it.
            let now_ms = now_ms();
            let start = now_ms - now_ms % 10_000 + 15_000;
            let key = format!("sw:{backend:?}");
            let state = format!("SET {key} sliding:{start}:10:0 PXAT {}", start + 100_000);
            let _: String = run(c, &state);
            let asked = std::time::Instant::now();
            let debit = backend.rl(c, &format!("RL.SLIDING {key} 10 10s DEBIT 1"));
            let next = backend.rl(c, &format!("RL.SLIDING {key} 10 10s"));
            // The second wait is the first's, less the time between the calls.
            let between = asked.elapsed().as_millis() as i64 + 1;
            // The debit left the previous window's 10 and its 1: nothing fits.
            assert_eq!(debit[..3], [1, 10, 0], "{backend:?}: {debit:?}");
            assert_eq!(next[..3], [0, 10, 0], "{backend:?}: {next:?}");
            within(debit[3] - next[3], 0, between);
        }
    }
}
