//! Every command's reply and stored state against a real server.

mod common;
use common::*;

fn get(c: &mut redis::Connection, key: &str) -> String {
    run(c, &format!("GET {key}"))
}

/// The number after `prefix` in a stored value, e.g. `gcra:<ns>`.
fn field(value: &str, prefix: &str) -> i128 {
    value
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{value:?} does not start with {prefix:?}"))
        .parse()
        .unwrap()
}

server_tests! {
    fn gcra_burst_then_denial_and_state(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        assert_eq!(rl(c, "RL.GCRA user:42 1 1h BURST 5"), vec![1, 5, 4, 0, HOUR_MS]);
        for left in (0..4).rev() {
            let r = rl(c, "RL.GCRA user:42 1 1h BURST 5");
            assert_eq!(r[..4], [1, 5, left, 0]);
        }
        let denied = rl(c, "RL.GCRA user:42 1 1h BURST 5");
        assert_eq!(denied[..3], [0, 5, 0]);
        within(denied[3], HOUR_MS - 1_000, HOUR_MS);
        within(denied[4], 5 * HOUR_MS - 1_000, 5 * HOUR_MS);
        // The TAT is five emission intervals after the first call, in nanoseconds.
        let tat_ms = (field(&get(c, "user:42"), "gcra:") / 1_000_000) as i64;
        within(tat_ms, before + 5 * HOUR_MS, now_ms() + 5 * HOUR_MS);
        // The key expires exactly when the TAT is reached (rounded up to the ms).
        within(pexpiretime(c, "user:42") - tat_ms, 0, 1);
        // Strict spacing by default: BURST 1.
        assert_eq!(rl(c, "RL.GCRA strict 2 1s"), vec![1, 1, 0, 0, 500]);
        assert_eq!(rl(c, "RL.GCRA strict 2 1s")[..3], [0, 1, 0]);
    }

    fn token_bucket_refills_and_stores_the_full_instant(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.TOKENBUCKET tb 3 1 1h COST 2"), vec![1, 3, 1, 0, 2 * HOUR_MS]);
        let denied = rl(c, "RL.TOKENBUCKET tb 3 1 1h COST 2");
        assert_eq!(denied[..3], [0, 3, 1]);
        within(denied[3], HOUR_MS - 1_000, HOUR_MS);
        let full_ms = (field(&get(c, "tb"), "bucket:") / 1_000_000) as i64;
        within(pexpiretime(c, "tb") - full_ms, 0, 1);
        // A fast bucket refills within the test: 10 tokens per 100 ms.
        assert_eq!(rl(c, "RL.TOKENBUCKET fast 10 10 100ms COST 10")[..3], [1, 10, 0]);
        std::thread::sleep(std::time::Duration::from_millis(120));
        assert_eq!(rl(c, "RL.TOKENBUCKET fast 10 10 100ms COST 0"), vec![1, 10, 10, 0, 0]);
    }

    fn leaky_bucket_tells_admitted_requests_to_wait(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.LEAKY q 2 1 1h"), vec![1, 2, 1, 0, HOUR_MS]);
        let second = rl(c, "RL.LEAKY q 2 1 1h");
        assert_eq!(second[..3], [1, 2, 0]);
        within(second[3], HOUR_MS - 1_000, HOUR_MS); // queued behind one unit
        let denied = rl(c, "RL.LEAKY q 2 1 1h");
        assert_eq!(denied[..3], [0, 2, 0]);
        within(denied[3], HOUR_MS - 1_000, HOUR_MS);
        assert!(get(c, "q").starts_with("leaky:"));
    }

    fn sliding_window_counts_both_windows_in_one_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        assert_eq!(rl(c, "RL.SLIDING sw 3 1h COST 2")[..4], [1, 3, 1, 0]);
        assert_eq!(rl(c, "RL.SLIDING sw 3 1h")[..4], [1, 3, 0, 0]);
        let denied = rl(c, "RL.SLIDING sw 3 1h");
        assert_eq!(denied[..3], [0, 3, 0]);
        let start = before - before % HOUR_MS;
        assert_eq!(get(c, "sw"), format!("sliding:{start}:0:3"));
        // The count decays to nothing by the end of the next window.
        assert_eq!(pexpiretime(c, "sw"), start + 2 * HOUR_MS);
        within(denied[4], start + 2 * HOUR_MS - now_ms(), start + 2 * HOUR_MS - before);
        // Denied in this window: retry once the weighted estimate leaves room.
        within(denied[3], start + HOUR_MS - now_ms(), start + 2 * HOUR_MS - before);
    }

    fn sliding_log_keeps_one_entry_per_request(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        assert_eq!(rl(c, "RL.SLIDINGLOG log 3 1h COST 2"), vec![1, 3, 1, 0, HOUR_MS]);
        let entries: Vec<(String, f64)> = run(c, "ZRANGE log 0 -1 WITHSCORES");
        assert_eq!(entries.len(), 1, "one entry per request, whatever its cost");
        for (member, score) in &entries {
            // <ns>:<cost>:<sum>, ns in 19 digits.
            let fields: Vec<&str> = member.split(':').collect();
            assert_eq!(fields[1..], ["2", "2"], "{member}");
            assert_eq!(fields[0].len(), 19, "{member}");
            let ns: u64 = fields[0].parse().unwrap();
            assert_eq!(*score, (ns / 1_000) as f64, "score is the entry's microsecond");
            within((ns / 1_000_000) as i64, before, now_ms());
        }
        let denied = rl(c, "RL.SLIDINGLOG log 3 1h COST 2");
        assert_eq!(denied[..3], [0, 3, 1]);
        within(denied[3], HOUR_MS - 1_000, HOUR_MS);
        let newest_us = entries[0].1 as i64;
        assert_eq!(pexpiretime(c, "log"), (newest_us + HOUR_MS * 1_000 + 999) / 1_000);
        // A cost above the limit is denied before anything is stored.
        assert_eq!(rl(c, "RL.SLIDINGLOG big 3 1h COST 4"), vec![0, 3, 3, -1, 0]);
        assert_eq!(run::<i64>(c, "EXISTS big"), 0);
    }

    fn sliding_log_entries_leave_the_window(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.SLIDINGLOG log 2 200ms COST 2")[..3], [1, 2, 0]);
        assert_eq!(rl(c, "RL.SLIDINGLOG log 2 200ms")[0], 0);
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert_eq!(rl(c, "RL.SLIDINGLOG log 2 200ms")[..3], [1, 2, 1]);
        // The old entry (both units) was dropped when the new one was added.
        assert_eq!(run::<i64>(c, "ZCARD log"), 1);
    }

    fn fixed_window_is_aligned_to_the_epoch(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        let r = rl(c, "RL.FIXED fw 2 1h");
        let start = before - before % HOUR_MS;
        assert_eq!(r[..4], [1, 2, 1, 0]);
        within(r[4], start + HOUR_MS - now_ms(), start + HOUR_MS - before);
        assert_eq!(rl(c, "RL.FIXED fw 2 1h")[..3], [1, 2, 0]);
        let denied = rl(c, "RL.FIXED fw 2 1h");
        assert_eq!(denied[..3], [0, 2, 0]);
        assert_eq!(denied[3], denied[4]);
        assert_eq!(get(c, "fw"), format!("fixed:{start}:2"));
        assert_eq!(pexpiretime(c, "fw"), start + HOUR_MS);
    }

    fn durations_take_units(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (i, d) in ["1500ms", "90", "90s", "2m", "1H", "1d", "3650d"].iter().enumerate() {
            let r = rl(c, &format!("RL.GCRA d{i} 1 {d}"));
            let expected: i64 = match *d {
                "1500ms" => 1_500,
                "90" | "90s" => 90_000,
                "2m" => 120_000,
                "1H" => HOUR_MS,
                "1d" => 86_400_000,
                _ => 3650 * 86_400_000,
            };
            assert_eq!(r, vec![1, 1, 0, 0, expected], "{d}");
        }
    }

    fn cost_above_the_limit_is_never_admitted(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for cmd in [
            "RL.GCRA k1 10 1s BURST 5 COST 6",
            "RL.TOKENBUCKET k2 5 1 1s COST 6",
            "RL.LEAKY k3 5 1 1s COST 6",
            "RL.SLIDING k4 5 1s COST 6",
            "RL.SLIDINGLOG k5 5 1s COST 6",
            "RL.FIXED k6 5 1s COST 6",
        ] {
            assert_eq!(rl(c, cmd), vec![0, 5, 5, -1, 0], "{cmd}");
        }
        assert_eq!(run::<i64>(c, "DBSIZE"), 0);
    }

    fn peek_and_cost_zero_decide_without_writing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (cmd, key) in [
            ("RL.GCRA p1 1 1h BURST 2", "p1"),
            ("RL.TOKENBUCKET p2 2 1 1h", "p2"),
            ("RL.LEAKY p3 2 1 1h", "p3"),
            ("RL.SLIDING p4 2 1h", "p4"),
            ("RL.SLIDINGLOG p5 2 1h", "p5"),
            ("RL.FIXED p6 2 1h", "p6"),
        ] {
            // On an absent key: admitted, and still absent.
            assert_eq!(rl(c, &format!("{cmd} PEEK"))[..4], [1, 2, 1, 0], "{cmd}");
            assert_eq!(rl(c, &format!("{cmd} COST 0"))[..4], [1, 2, 2, 0], "{cmd}");
            assert_eq!(run::<i64>(c, &format!("EXISTS {key}")), 0, "{cmd}");
            // With state: PEEK reports what the call would do, and changes nothing.
            rl(c, cmd);
            let dump: Vec<u8> = run(c, &format!("DUMP {key}"));
            let peek = rl(c, &format!("{cmd} PEEK"));
            assert_eq!(peek[..3], [1, 2, 0], "{cmd}");
            assert_eq!(rl(c, &format!("{cmd} peek cost 2"))[..3], [0, 2, 1], "{cmd}");
            assert_eq!(run::<Vec<u8>>(c, &format!("DUMP {key}")), dump, "{cmd}");
        }
    }

    fn every_written_key_has_an_expiry(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for i in 0..20 {
            rl(c, &format!("RL.GCRA a{i} 5 1s BURST 3"));
            rl(c, &format!("RL.TOKENBUCKET b{i} 5 1 1m"));
            rl(c, &format!("RL.LEAKY c{i} 5 1 1m"));
            rl(c, &format!("RL.SLIDING d{i} 5 1m COST 2"));
            rl(c, &format!("RL.SLIDINGLOG e{i} 5 1m COST 3"));
            rl(c, &format!("RL.FIXED f{i} 5 1d"));
        }
        let keys: Vec<String> = run(c, "KEYS *");
        assert_eq!(keys.len(), 120);
        for key in keys {
            let ttl: i64 = run(c, &format!("PTTL {key}"));
            assert!(ttl > 0, "{key} has no expiry ({ttl})");
        }
    }

    fn a_plan_change_applies_from_the_next_call(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 10 tokens, exhausted: the bucket is an hour from full.
        assert_eq!(rl(c, "RL.TOKENBUCKET plan 10 10 1h COST 10")[..3], [1, 10, 0]);
        // Capacity raised to 100: the 10 missing tokens stay missing, 90 are there.
        assert_eq!(rl(c, "RL.TOKENBUCKET plan 100 10 1h COST 0")[..3], [1, 100, 90]);
        // Refill raised tenfold too: still an hour from full, now 100 tokens short.
        assert_eq!(rl(c, "RL.TOKENBUCKET plan 100 100 1h COST 0")[..3], [1, 100, 0]);
        // Lowered to 5: still exhausted, nothing granted.
        assert_eq!(rl(c, "RL.TOKENBUCKET plan 5 5 1h")[..3], [0, 5, 0]);
        // Fixed window: a larger limit in the same window keeps the count.
        assert_eq!(rl(c, "RL.FIXED fplan 2 1h COST 2")[..3], [1, 2, 0]);
        assert_eq!(rl(c, "RL.FIXED fplan 5 1h")[..3], [1, 5, 2]);
    }

    fn wrong_algorithm_and_wrong_type_are_errors(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "RL.GCRA shared 1 1s");
        assert_eq!(
            rl_err(c, "RL.TOKENBUCKET shared 1 1 1s"),
            "ERR key holds RL.GCRA state, not RL.TOKENBUCKET state: use another key or DEL it"
        );
        assert_eq!(
            rl_err(c, "RL.SLIDINGLOG shared 1 1s"),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
        rl(c, "RL.SLIDINGLOG zs 1 1s");
        assert_eq!(
            rl_err(c, "RL.FIXED zs 1 1s"),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }
}
