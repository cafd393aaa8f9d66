//! `RL.TOP` (the keys a policy or a command denied most, from a Space-Saving
//! summary) and `near_limit` (`INFO rl`, `INFO rl_policies`) against real
//! servers: the summary's bounds on a skewed stream of denials, its memory
//! with many long distinct names, `CONFIG RESETSTAT`, a policy's deletion,
//! `rl.top-keys 0`, which calls count where, and nothing replicated.

use std::collections::BTreeMap;

use crate::common::*;
use redis::Value;

/// `RL.TOP …`'s triples.
fn top(c: &mut redis::Connection, words: &str) -> Vec<(Vec<u8>, u64, u64)> {
    command(words)
        .query(c)
        .unwrap_or_else(|e| panic!("{words}: {e}"))
}

fn fields(c: &mut redis::Connection, section: &str, line: &str) -> BTreeMap<String, u64> {
    let text = info(c, section, line);
    text.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("k=v");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

server_tests! {
    fn near_limit_counts_admissions_leaving_a_fifth_or_less(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // limit 10: remaining 9..0 after each call; near when remaining <= 2.
        for _ in 0..12 {
            rl(c, "RL.FIXED k 10 1h");
        }
        let f = fields(c, "rl", "rl_fixed");
        assert_eq!((f["admitted"], f["near_limit"], f["denied"]), (10, 3, 2), "{f:?}");
        // limit 4: a fifth rounds down to 0, so only the last admission is near.
        for _ in 0..4 {
            rl(c, "RL.SLIDING s 4 1h");
        }
        assert_eq!(fields(c, "rl", "rl_sliding")["near_limit"], 1);
        let _: String = run(c, "RL.POLICY SET p FIXED 5 1h");
        for _ in 0..6 {
            rl(c, "RL.LIMIT u p");
        }
        let f = fields(c, "rl_policies", "rl_policy_p");
        assert_eq!((f["admitted"], f["near_limit"], f["denied"]), (5, 2, 1), "{f:?}");
        let _: String = run(c, "CONFIG RESETSTAT");
        assert_eq!(fields(c, "rl", "rl_fixed")["near_limit"], 0);
        assert_eq!(fields(c, "rl_policies", "rl_policy_p")["near_limit"], 0);
    }

    fn top_lists_the_heaviest_keys_within_the_summarys_bounds(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: String = run(c, "CONFIG SET rl.top-keys 8");
        let _: String = run(c, "RL.POLICY SET p FIXED 1 1h");
        // A skewed stream: key i denied about 60 / (i + 1) times, interleaved,
        // over 40 keys (each key's first call is admitted).
        let mut truth = BTreeMap::<String, u64>::new();
        let mut denials = 0;
        let mut pipe = redis::pipe();
        for round in 0..60u64 {
            for i in 0..40u64 {
                if round % (i + 1) == 0 {
                    let key = format!("user:{i}");
                    if round > 0 {
                        *truth.entry(key.clone()).or_default() += 1;
                        denials += 1;
                    }
                    pipe.cmd("RL.LIMIT").arg(&key).arg("p");
                }
            }
        }
        let _: Vec<Value> = pipe.query(c).unwrap();
        let listed = top(c, "RL.TOP p COUNT 8");
        assert_eq!(listed.len(), 8);
        for (key, count, over) in &listed {
            let t = truth[std::str::from_utf8(key).unwrap()];
            assert!(count - over <= t && t <= *count, "{key:?}: {count} - {over} vs {t}");
        }
        for w in listed.windows(2) {
            assert!(w[0].1 >= w[1].1, "heaviest first: {listed:?}");
        }
        for (key, &t) in &truth {
            if t > denials / 8 {
                assert!(listed.iter().any(|(k, _, _)| k == key.as_bytes()), "{key} ({t}) missing");
            }
        }
        assert_eq!(listed[0].0, b"user:0");
        assert_eq!(top(c, "RL.TOP p").len(), 8);
        assert_eq!(top(c, "RL.TOP p COUNT 3").len(), 3);
        // Policy calls count in the policy's summary, not the command's.
        assert!(top(c, "RL.TOP COMMAND rl.limit").is_empty());
        assert!(top(c, "RL.TOP COMMAND rl.fixed").is_empty());
    }

    fn command_summaries_count_spelled_out_calls_only(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: String = run(c, "RL.POLICY SET p FIXED 1 1h");
        for _ in 0..3 {
            rl(c, "RL.FIXED a 1 1h");
            rl(c, "RL.LIMIT b p");
        }
        let _: Value = run(c, "RL.ALL 2 x y FIXED 1 1h POLICY p");
        let _: Value = run(c, "RL.ALL 2 x y FIXED 1 1h POLICY p");
        assert_eq!(top(c, "RL.TOP COMMAND rl.fixed"), vec![(b"a".to_vec(), 2, 0)]);
        assert_eq!(top(c, "RL.TOP COMMAND RL.FIXED"), vec![(b"a".to_vec(), 2, 0)]);
        // The POLICY clause's denial counts in its policy's summary, the
        // spelled-out clause's in RL.ALL's.
        assert_eq!(top(c, "RL.TOP COMMAND rl.all"), vec![(b"x".to_vec(), 1, 0)]);
        let mut p = top(c, "RL.TOP p");
        p.sort();
        assert_eq!(p, vec![(b"b".to_vec(), 2, 0), (b"y".to_vec(), 1, 0)]);
        assert!(rl_err(c, "RL.TOP nope").contains("no such policy 'nope'"));
        assert!(rl_err(c, "RL.TOP COMMAND get").contains("no such command 'get'"));
        assert!(rl_err(c, "RL.TOP p COUNT 0").contains("count"));
        assert!(rl_err(c, "RL.TOP p LIMIT 3").contains("syntax"));
        assert!(rl_err(c, "RL.TOP").contains("wrong number of arguments"));
        // Read-only, counted like every command.
        let flags: Value = run(c, "COMMAND INFO rl.top");
        assert!(format!("{flags:?}").contains("readonly"), "{flags:?}");
        assert!(fields(c, "rl", "rl_top")["calls"] >= 4);
    }

    fn top_is_cleared_by_resetstat_and_policy_deletion_and_off_at_zero(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: String = run(c, "RL.POLICY SET p FIXED 1 1h");
        for _ in 0..3 {
            rl(c, "RL.FIXED a 1 1h");
            rl(c, "RL.LIMIT b p");
        }
        assert_eq!(top(c, "RL.TOP p").len(), 1);
        let _: String = run(c, "CONFIG RESETSTAT");
        assert!(top(c, "RL.TOP p").is_empty());
        assert!(top(c, "RL.TOP COMMAND rl.fixed").is_empty());
        // Denials after the reset count, even before anything settled.
        rl(c, "RL.FIXED a 1 1h");
        rl(c, "RL.LIMIT b p");
        assert_eq!(top(c, "RL.TOP COMMAND rl.fixed"), vec![(b"a".to_vec(), 1, 0)]);
        assert_eq!(top(c, "RL.TOP p"), vec![(b"b".to_vec(), 1, 0)]);
        // Deleted, then made again: the new policy starts empty.
        let _: i64 = run(c, "RL.POLICY DEL p");
        assert!(rl_err(c, "RL.TOP p").contains("no such policy"));
        let _: String = run(c, "RL.POLICY SET p FIXED 1 1h");
        assert!(top(c, "RL.TOP p").is_empty());
        // Off: nothing kept, an empty array.
        let _: String = run(c, "CONFIG SET rl.top-keys 0");
        rl(c, "RL.FIXED a 1 1h");
        assert!(top(c, "RL.TOP COMMAND rl.fixed").is_empty());
        let _: String = run(c, "CONFIG SET rl.top-keys 32");
        assert!(top(c, "RL.TOP COMMAND rl.fixed").is_empty(), "cleared while off");
        assert!(rl_err(c, "CONFIG SET rl.top-keys 1001").contains("rl.top-keys"));
    }

    fn top_memory_is_bounded_whatever_the_names(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let used = |c: &mut redis::Connection| -> i64 { info(c, "memory", "used_memory").parse().unwrap() };
        // Warm up the summary and the server's buffers.
        let long = |i: usize| format!("{i}:{}", "x".repeat(10_000));
        let deny_all = |c: &mut redis::Connection, from: usize, to: usize| {
            let mut pipe = redis::pipe();
            for i in from..to {
                pipe.cmd("RL.FIXED").arg(long(i)).arg(1).arg("1h").arg("COST").arg(2).ignore();
            }
            let _: () = pipe.query(c).unwrap();
        };
        deny_all(c, 0, 200);
        let _ = top(c, "RL.TOP COMMAND rl.fixed");
        let before = used(c);
        deny_all(c, 200, 2_200);
        let listed = top(c, "RL.TOP COMMAND rl.fixed COUNT 100");
        let after = used(c);
        assert_eq!(listed.len(), 32);
        for (key, count, over) in &listed {
            assert_eq!(key.len(), 128 + 3, "kept up to 128 bytes and marked");
            assert!(key.ends_with(b"..."));
            assert!(count - over <= 1, "each name denied once");
        }
        // 2,000 names of 10 KB denied: the summary holds 32 of 131 bytes.
        assert!(after - before < 1_000_000, "{before} -> {after}");
    }

    fn top_is_per_node_and_never_replicated(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(true);
        let m = &mut master.conn();
        let r = &mut replica.conn();
        for _ in 0..3 {
            rl(m, "RL.FIXED a 1 1h");
        }
        let dirty_before = dirty(m);
        assert_eq!(top(m, "RL.TOP COMMAND rl.fixed"), vec![(b"a".to_vec(), 2, 0)]);
        assert_eq!(dirty(m), dirty_before, "RL.TOP writes nothing");
        let offset = |c: &mut redis::Connection| -> u64 { info(c, "replication", "master_repl_offset").parse().unwrap() };
        let _: () = redis::cmd("WAIT").arg(1).arg(5000).query(m).map(|_: i64| ()).unwrap();
        assert!(offset(r) > 0);
        // The replica applied the writes, and counts no denial.
        assert!(top(r, "RL.TOP COMMAND rl.fixed").is_empty());
        let _: String = run(r, "CONFIG SET rl.top-keys 32");
        assert!(top(r, "RL.TOP COMMAND rl.fixed").is_empty());
    }
}
