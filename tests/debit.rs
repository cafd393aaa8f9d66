//! `DEBIT n` (CONTRACT.md section 10) against real servers, where the vectors
//! (`tests/vectors/debit.txt`) cannot reach: a debit never queues behind
//! waiters, and they wake when the debt is paid off, not before; a shadow
//! policy's debit is an admission, and `INFO rl` counts it as admitted with its
//! units; the work of one debit is bounded.

mod common;
use common::raw::{wait_for, waits, Raw, Reply};
use common::*;

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
            text.contains("policy_tpm:calls=2,admitted=1,denied=0,shadow_denied=1,errors=0"),
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

    fn a_debit_adds_one_entry_and_rewrites_one_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // However far past the limit, one debit is one entry, one write.
        for n in 1..=50 {
            let before = dirty(c);
            assert_eq!(rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000")[0], 1);
            assert_eq!(run::<i64>(c, "ZCARD log"), n);
            assert!(dirty(c) - before <= 2, "{} writes", dirty(c) - before);
        }
        // At the cap a debit writes nothing.
        let _: i64 = run(c, "DEL log");
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000000");
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1000000000000");
        let before = dirty(c);
        let _ = rl(c, "RL.SLIDINGLOG log 5 1h DEBIT 1");
        assert_eq!((run::<i64>(c, "ZCARD log"), dirty(c)), (2, before));
    }
}
