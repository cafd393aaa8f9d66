//! Every command's stored state and expiry against a real server. The replies
//! themselves are test vectors (`tests/vectors/*.txt`, run by `tests/it/vectors.rs`
//! on the module and on the Functions library).

use crate::common::*;

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
    fn gcra_stores_its_tat_and_expires_at_it(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        for _ in 0..5 {
            assert_eq!(rl(c, "RL.GCRA user:42 1 1h BURST 5")[0], 1);
        }
        assert_eq!(rl(c, "RL.GCRA user:42 1 1h BURST 5")[0], 0);
        // The TAT is five emission intervals after the first call, in nanoseconds.
        let tat_ms = (field(&get(c, "user:42"), "gcra:") / 1_000_000) as i64;
        within(tat_ms, before + 5 * HOUR_MS, now_ms() + 5 * HOUR_MS);
        // The key expires exactly when the TAT is reached (rounded up to the ms).
        within(pexpiretime(c, "user:42") - tat_ms, 0, 1);
    }

    fn token_bucket_refills_and_stores_the_full_instant(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.TOKENBUCKET tb 3 1 1h COST 2")[0], 1);
        let full_ms = (field(&get(c, "tb"), "bucket:") / 1_000_000) as i64;
        within(full_ms - now_ms(), 2 * HOUR_MS - 1_000, 2 * HOUR_MS);
        within(pexpiretime(c, "tb") - full_ms, 0, 1);
        // A fast bucket refills within the test: 10 tokens per 100 ms.
        assert_eq!(rl(c, "RL.TOKENBUCKET fast 10 10 100ms COST 10")[..3], [1, 10, 0]);
        std::thread::sleep(std::time::Duration::from_millis(120));
        assert_eq!(rl(c, "RL.TOKENBUCKET fast 10 10 100ms COST 0"), vec![1, 10, 10, 0, 0]);
    }

    fn leaky_bucket_stores_its_level(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.LEAKY q 2 1 1h")[0], 1);
        assert!(get(c, "q").starts_with("leaky:"));
        within(pexpiretime(c, "q") - now_ms(), HOUR_MS - 1_000, HOUR_MS + 1);
    }

    fn sliding_window_counts_both_windows_in_one_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        assert_eq!(rl(c, "RL.SLIDING sw 3 1h COST 2")[0], 1);
        assert_eq!(rl(c, "RL.SLIDING sw 3 1h")[0], 1);
        assert_eq!(rl(c, "RL.SLIDING sw 3 1h")[0], 0);
        let start = before - before % HOUR_MS;
        assert_eq!(get(c, "sw"), format!("sliding:{start}:0:3"));
        // The count decays to nothing by the end of the next window.
        assert_eq!(pexpiretime(c, "sw"), start + 2 * HOUR_MS);
    }

    fn sliding_log_keeps_one_entry_per_request(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = now_ms();
        assert_eq!(rl(c, "RL.SLIDINGLOG log 3 1h COST 2")[0], 1);
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
        let newest_us = entries[0].1 as i64;
        assert_eq!(pexpiretime(c, "log"), (newest_us + HOUR_MS * 1_000 + 999) / 1_000);
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
        assert_eq!(rl(c, "RL.FIXED fw 2 1h")[0], 1);
        assert_eq!(rl(c, "RL.FIXED fw 2 1h")[0], 1);
        assert_eq!(rl(c, "RL.FIXED fw 2 1h")[0], 0);
        let start = before - before % HOUR_MS;
        assert_eq!(get(c, "fw"), format!("fixed:{start}:2"));
        assert_eq!(pexpiretime(c, "fw"), start + HOUR_MS);
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
            // On an absent key: still absent (the replies: tests/vectors/first_calls.txt).
            rl(c, &format!("{cmd} PEEK"));
            rl(c, &format!("{cmd} COST 0"));
            assert_eq!(run::<i64>(c, &format!("EXISTS {key}")), 0, "{cmd}");
            // With state: PEEK, admitted or denied, and COST 0 change nothing.
            rl(c, cmd);
            let dump: Vec<u8> = run(c, &format!("DUMP {key}"));
            let expiry = pexpiretime(c, key);
            assert_eq!(rl(c, &format!("{cmd} PEEK"))[0], 1, "{cmd}");
            assert_eq!(rl(c, &format!("{cmd} peek cost 2"))[0], 0, "{cmd}");
            assert_eq!(rl(c, &format!("{cmd} COST 0"))[0], 1, "{cmd}");
            assert_eq!(run::<Vec<u8>>(c, &format!("DUMP {key}")), dump, "{cmd}");
            assert_eq!(pexpiretime(c, key), expiry, "{cmd}");
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
}
