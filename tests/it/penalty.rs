//! Penalties (`PENALTY d [ESCALATE max]`) and bans (`RL.BAN`) against real
//! servers: on each of the six limiters, in `RL.ALL`, in policies (shadow ones
//! too), with `BLOCK`; escalation on the test build's moved clock; one write
//! per penalty, replicated as its effect to a replica without the module; the
//! key's expiry; what `RL.BAN` does on every kind of key.

use crate::common::*;

const MIN: i64 = 60_000;

/// Each limiter exhausted by its first call (or two) on a fresh key: its
/// command, and the calls that exhaust it.
const LIMITERS: [(&str, usize); 6] = [
    ("RL.GCRA {k} 1 1h", 1),
    ("RL.TOKENBUCKET {k} 1 1 1h", 1),
    ("RL.LEAKY {k} 1 1 1h", 1),
    ("RL.SLIDING {k} 1 1h", 1),
    ("RL.SLIDINGLOG {k} 1 1h", 1),
    ("RL.FIXED {k} 1 1h", 1),
];

fn on(limiter: &str, key: &str) -> String {
    limiter.replace("{k}", key)
}

server_tests! {
    fn a_denial_starts_a_penalty_that_denies_every_call_until_it_ends(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (limiter, exhaust) in LIMITERS {
            let cmd = on(limiter, "k");
            let _: i64 = run(c, "DEL k");
            for _ in 0..exhaust {
                assert_eq!(rl(c, &cmd)[0], 1, "{cmd}");
            }
            // Without PENALTY a denial is the limiter's own (an hour's wait).
            let own = rl(c, &cmd);
            assert_eq!(own[0], 0, "{cmd}");
            let before: String = run(c, "TYPE k");
            let dirty_before = dirty(c);
            let t0 = now_ms();
            let start = rl(c, &format!("{cmd} PENALTY 2h ESCALATE 24h"));
            // One write: a string's SET; a log's ZADD (and its PEXPIREAT if
            // the memory outlasts the log's entries).
            let writes = if cmd.starts_with("RL.SLIDINGLOG") { 2 } else { 1 };
            assert_eq!(dirty(c), dirty_before + writes, "{cmd}: one write starts the penalty");
            assert_eq!(start[..3], [0, 1, 0], "{cmd}: {start:?}");
            within(start[3], 2 * 60 * MIN - 50, 2 * 60 * MIN + 1);
            assert!(start[4] >= start[3]);
            let (end, len, keep) = stored_penalty(c, "k").expect("stored");
            assert_eq!(len, 2 * 60 * MIN);
            within(end, t0 + len, now_ms() + len + 1);
            assert_eq!(keep, end + 24 * 60 * MIN);
            assert_eq!(run::<String>(c, "TYPE k"), before, "{cmd}: the state stays where it was");
            // The key is kept until the penalty's memory ends.
            within(pexpiretime(c, "k"), keep, keep);

            // During it: every spending call is denied, writing nothing,
            // with or without PENALTY, peeked or not.
            let dirty_during = dirty(c);
            for call in [
                cmd.clone(),
                format!("{cmd} PENALTY 1m"),
                format!("{cmd} PEEK"),
                format!("RL.PEEK {}", &cmd[3..]),
            ] {
                let d = rl(c, &call);
                assert_eq!(d[..3], [0, 1, 0], "{call}: {d:?}");
                within(d[3], 2 * 60 * MIN - 1000, 2 * 60 * MIN + 1);
            }
            assert_eq!(dirty(c), dirty_during, "{cmd}: denials during a penalty write nothing");
            assert_eq!(stored_penalty(c, "k").unwrap(), (end, len, keep));
            // COST 0 is allowed, with none left and the wait a unit would get.
            let zero = rl(c, &format!("{cmd} COST 0"));
            assert_eq!(zero[..3], [1, 1, 0], "{cmd}: {zero:?}");
            within(zero[3], 2 * 60 * MIN - 1000, 2 * 60 * MIN + 1);
            // A refund gives units back and leaves the penalty.
            let refund = rl(c, &format!("{cmd} REFUND 1"));
            assert_eq!(refund[..3], [1, 1, 0], "{cmd}: {refund:?}");
            assert_eq!(stored_penalty(c, "k").unwrap(), (end, len, keep), "{cmd}");
            assert_eq!(rl(c, &cmd)[0], 0, "{cmd}: still penalized after the refund");
            within(pexpiretime(c, "k"), keep, keep);
        }
    }

    fn a_call_that_could_never_be_admitted_or_would_wait_starts_no_penalty(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // A cost above the limit: never admissible (-1), no penalty.
        let never = rl(c, "RL.FIXED k 2 1h COST 3 PENALTY 1h");
        assert_eq!(never[..4], [0, 2, 2, -1]);
        assert_eq!(run::<i64>(c, "EXISTS k"), 0);
        // A peek that would be denied starts none either.
        rl(c, "RL.GCRA g 1 1h");
        assert_eq!(rl(c, "RL.GCRA g 1 1h PEEK PENALTY 2h")[0], 0);
        assert_eq!(stored_penalty(c, "g"), None);
        // BLOCK long enough to wait for the limiter: it waits, no penalty.
        rl(c, "RL.GCRA w 10 1s");
        let waited = rl(c, "RL.GCRA w 10 1s BLOCK 1000 PENALTY 1h");
        assert_eq!(waited[0], 1);
        assert_eq!(stored_penalty(c, "w"), None);
        // BLOCK too short: denied at once, and the penalty starts.
        rl(c, "RL.GCRA b 1 1h");
        let denied = rl(c, "RL.GCRA b 1 1h BLOCK 10 PENALTY 2h");
        assert_eq!(denied[0], 0);
        assert!(stored_penalty(c, "b").is_some());
        // During a penalty, BLOCK waits only if the penalty ends within it.
        let _: i64 = run(c, "RL.BAN z 300");
        assert_eq!(rl(c, "RL.GCRA z 10 1s BLOCK 5000")[0], 1, "waited the ban out");
        let _: i64 = run(c, "RL.BAN z 3600000");
        let at_once = rl(c, "RL.GCRA z 10 1s BLOCK 5000");
        assert_eq!(at_once[0], 0);
        within(at_once[3], 3_599_000, 3_600_001);
    }

    fn escalation_doubles_within_max_of_the_last_end_up_to_max_and_forgets_after(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let call = "RL.FIXED k 1 1m PENALTY 15m ESCALATE 24h";
        let mut offset = 0i64;
        let mut lens = Vec::new();
        for _ in 0..9 {
            set_clock(c, offset);
            rl(c, call);
            let d = rl(c, call);
            assert_eq!(d[0], 0);
            let (_, len, _) = stored_penalty(c, "k").unwrap();
            lens.push(len / MIN);
            within(d[3], len - 1000, len + 1);
            // Come back 5 minutes after the penalty's end.
            offset += len + 5 * MIN;
        }
        assert_eq!(lens, [15, 30, 60, 120, 240, 480, 960, 1440, 1440]);
        // More than max after the last end: the key is gone with its memory.
        offset += 24 * 60 * MIN + MIN;
        set_clock(c, offset);
        rl(c, call);
        rl(c, call);
        assert_eq!(stored_penalty(c, "k").unwrap().1, 15 * MIN);
        // Without ESCALATE the memory ends with the penalty: never longer.
        offset += 20 * MIN;
        set_clock(c, offset);
        rl(c, "RL.FIXED k 1 1m PENALTY 15m");
        rl(c, "RL.FIXED k 1 1m PENALTY 15m");
        assert_eq!(stored_penalty(c, "k").unwrap().1, 15 * MIN);
        set_clock(c, 0);
    }

    fn an_idle_limiter_keeps_its_penalty_memory_and_a_later_write_drops_it(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        for limiter in ["RL.GCRA k 1 1m", "RL.SLIDINGLOG k 1 1m"] {
            let _: i64 = run(c, "DEL k");
            set_clock(c, 0);
            rl(c, limiter);
            rl(c, &format!("{limiter} PENALTY 10m ESCALATE 1h"));
            let (end, _, keep) = stored_penalty(c, "k").unwrap();
            // After the penalty: admitted, and the write keeps the memory.
            set_clock(c, 11 * MIN);
            assert_eq!(rl(c, limiter)[0], 1, "{limiter}");
            assert_eq!(stored_penalty(c, "k").unwrap().0, end, "{limiter}");
            within(pexpiretime(c, "k"), keep, keep);
            // A refund to idle leaves only the penalty, until its keep.
            rl(c, &format!("{limiter} REFUND 1"));
            assert_eq!(run::<String>(c, "TYPE k"), "string", "{limiter}");
            let only: String = run(c, "GET k");
            assert!(only.starts_with("penalty:"), "{limiter}: {only}");
            within(pexpiretime(c, "k"), keep, keep);
            // The limiter takes the key back over (a sorted set for the log).
            assert_eq!(rl(c, limiter)[0], 1, "{limiter}");
            assert!(stored_penalty(c, "k").is_some(), "{limiter}");
            // Past the memory: the next write drops the penalty.
            set_clock(c, 80 * MIN);
            assert_eq!(rl(c, limiter)[0], 1, "{limiter}");
            assert_eq!(stored_penalty(c, "k"), None, "{limiter}");
        }
        set_clock(c, 0);
    }

    fn rl_ban_bans_any_limiters_key_or_an_absent_one_and_0_lifts_it(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // An absent key holds only the ban, expiring at its end.
        assert_eq!(run::<i64>(c, "RL.BAN fresh 600000"), 0);
        let (end, len, keep) = stored_penalty(c, "fresh").unwrap();
        assert_eq!((len, keep), (600_000, end));
        within(pexpiretime(c, "fresh"), end, end);
        for (limiter, _) in LIMITERS {
            let d = rl(c, &on(limiter, "fresh"));
            assert_eq!(d[..3], [0, 1, 0], "{limiter}");
            within(d[3], 599_000, 600_001);
        }
        assert_eq!(run::<i64>(c, "RL.BAN fresh 0"), 1);
        assert_eq!(run::<i64>(c, "EXISTS fresh"), 0, "lifting leaves nothing behind");
        assert_eq!(run::<i64>(c, "RL.BAN fresh 0"), 0);

        // A key of each limiter keeps its state and gets the ban.
        for (limiter, _) in LIMITERS {
            let cmd = on(limiter, "k");
            let _: i64 = run(c, "DEL k");
            rl(c, &format!("{cmd} PEEK"));
            let first = rl(c, &cmd);
            assert_eq!(first[0], 1);
            // The limiter's own wait now (the later of it and the ban's is answered).
            let own = rl(c, &format!("{cmd} PEEK"))[3];
            let wait = |ban: i64| (own.max(ban) - 1000, own.max(ban) + 1);
            assert_eq!(run::<i64>(c, "RL.BAN k 3600000"), 1, "{cmd}");
            let d = rl(c, &cmd);
            assert_eq!(d[..3], [0, 1, 0], "{cmd}");
            let (lo, hi) = wait(3_600_000);
            within(d[3], lo, hi);
            assert_eq!(rl(c, &format!("RL.PEEK {}", &cmd[3..]))[0], 0, "{cmd}");
            // A longer ban replaces it; 0 lifts it and the state is as it was.
            assert_eq!(run::<i64>(c, "RL.BAN k 7200000"), 1);
            let (lo, hi) = wait(7_200_000);
            within(rl(c, &cmd)[3], lo, hi);
            assert_eq!(run::<i64>(c, "RL.BAN k 0"), 1);
            assert_eq!(stored_penalty(c, "k"), None, "{cmd}");
            let after = rl(c, &format!("{cmd} PEEK"));
            assert_eq!(after[0], 0, "{cmd}: the limiter's own state is still spent");
            assert!(after[3] > 0, "{cmd}: {after:?}");
        }

        // Other values: an error, nothing written.
        let _: () = run(c, "HSET h a 1");
        assert_eq!(rl_err(c, "RL.BAN h 1000"), "WRONGTYPE Operation against a key holding the wrong kind of value");
        let _: () = run(c, "SET s hello");
        let foreign = "ERR key holds a value that RL.BAN did not write: use another key or DEL it";
        assert_eq!(rl_err(c, "RL.BAN s 1000"), foreign);
        let _: () = run(c, "SET n 12");
        assert_eq!(rl_err(c, "RL.BAN n 1000"), foreign);
        rl(c, "RL.ACQUIRE lease 2 1m a");
        assert_eq!(rl_err(c, "RL.BAN lease 1000"), foreign);
        assert_eq!(run::<String>(c, "GET s"), "hello");
        for bad in ["-1", "1.5", "1s", "315360000001", "x"] {
            assert_eq!(
                rl_err(c, &format!("RL.BAN x {bad}")),
                "ERR ms must be an integer from 0 to 315360000000",
                "{bad}"
            );
        }
        assert_eq!(rl_err(c, "RL.BAN x"), "ERR wrong number of arguments for 'rl.ban' command");
        assert_eq!(rl_err(c, "RL.BAN x 1 2"), "ERR wrong number of arguments for 'rl.ban' command");
        assert_eq!(run::<i64>(c, "EXISTS x"), 0);
        let line = info(c, "rl", "rl_ban");
        assert!(line.starts_with("calls="), "{line}");
    }

    fn penalties_and_bans_replicate_as_effects_to_a_replica_without_the_module(flavor) {
        let m = Server::start_master(flavor);
        let r = m.replica(false);
        let (mc, rc) = (&mut m.conn(), &mut r.conn());
        for (limiter, _) in LIMITERS {
            let cmd = on(limiter, "k");
            let _: i64 = run(mc, "DEL k");
            rl(mc, &cmd);
            rl(mc, &format!("{cmd} PENALTY 1h ESCALATE 2h"));
            rl(mc, &cmd);
        }
        let _: i64 = run(mc, "RL.BAN b 60000");
        rl(mc, "RL.SLIDINGLOG log 1 1h");
        let _: i64 = run(mc, "RL.BAN log 60000");
        let _: i64 = run(mc, "WAIT 1 5000");
        for key in ["k", "b", "log"] {
            let dump = |c: &mut redis::Connection| -> (String, Vec<(String, String)>, i64) {
                let kind: String = run(c, &format!("TYPE {key}"));
                let members = match kind.as_str() {
                    "zset" => run(c, &format!("ZRANGE {key} 0 -1 WITHSCORES")),
                    _ => vec![(run::<String>(c, &format!("GET {key}")), String::new())],
                };
                (kind, members, pexpiretime(c, key))
            };
            assert_eq!(dump(mc), dump(rc), "{key}");
        }
    }

    fn rl_all_starts_the_penalty_of_each_denying_layer_only(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "RL.FIXED a 1 1h");
        let dirty_before = dirty(c);
        let v: Vec<redis::Value> = run(c, "RL.ALL 2 a b FIXED 1 1h PENALTY 1h GCRA 10 1s PENALTY 1h");
        assert_eq!(v[0], redis::Value::Int(0), "{v:?}");
        assert_eq!(dirty(c), dirty_before + 1, "one write: a's penalty");
        assert!(stored_penalty(c, "a").is_some());
        assert_eq!(run::<i64>(c, "EXISTS b"), 0, "the admitting layer spent nothing");
        // PEEK starts none.
        rl(c, "RL.FIXED p 1 1h");
        let _: redis::Value = run(c, "RL.ALL 1 p FIXED 1 1h PENALTY 1h PEEK");
        assert_eq!(stored_penalty(c, "p"), None);
        // A penalized layer denies the whole call.
        let _: i64 = run(c, "RL.BAN b 60000");
        let v: Vec<redis::Value> = run(c, "RL.ALL 2 c b FIXED 5 1h GCRA 10 1s");
        assert_eq!(v[0], redis::Value::Int(0));
        assert_eq!(run::<i64>(c, "EXISTS c"), 0);
    }

    fn policies_carry_penalties_and_shadow_ones_record_them_as_if_enforced(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: String = run(c, "RL.POLICY SET login FIXED 1 15m penalty 15m escalate 24h");
        assert_eq!(
            run::<String>(c, "RL.POLICY GET login"),
            "login FIXED 1 15m PENALTY 15m ESCALATE 24h"
        );
        let _: String = run(c, "RL.POLICY SET watch GCRA 1 1h PENALTY 2h SHADOW");
        rl(c, "RL.LIMIT u login");
        let d = rl(c, "RL.LIMIT u login");
        assert_eq!(d[..3], [0, 1, 0]);
        within(d[3], 15 * MIN - 50, 15 * MIN + 1);
        rl(c, "RL.LIMIT u login");
        rl(c, "RL.LIMIT v watch");
        for _ in 0..2 {
            let shadowed = rl(c, "RL.LIMIT v watch");
            assert_eq!(shadowed[..3], [1, 1, 0], "a shadowed denial");
            within(shadowed[3], 2 * 60 * MIN - 1000, 2 * 60 * MIN + 1);
        }
        assert_eq!(stored_penalty(c, "v").unwrap().1, 2 * 60 * MIN, "recorded as if enforced");
        // A POLICY clause and RL.PEEK POLICY see the same penalty.
        assert_eq!(rl(c, "RL.PEEK POLICY u login")[0], 0);
        let text: String = run(c, "INFO rl_policies");
        // RL.PEEK POLICY counts as the policy's call.
        assert!(text.contains("rl_policy_login:calls=4,admitted=1,denied=3,shadow_denied=0,errors=0,penalties=1"), "{text}");
        assert!(text.contains("rl_policy_watch:calls=3,admitted=1,denied=0,shadow_denied=2,errors=0,penalties=1"), "{text}");
        let _: String = run(c, "CONFIG RESETSTAT");
        let text: String = run(c, "INFO rl_policies");
        assert!(text.contains("rl_policy_login:calls=0,admitted=0,denied=0,shadow_denied=0,errors=0,penalties=0"), "{text}");
    }

    fn a_penalty_adds_a_bounded_number_of_bytes_to_a_key(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // The largest penalty: 3650 days escalating to 3650 days.
        rl(c, "RL.FIXED k 1 1h");
        let plain: i64 = run(c, "STRLEN k");
        rl(c, "RL.FIXED k 1 1h PENALTY 3650d ESCALATE 3650d");
        let penalized: i64 = run(c, "STRLEN k");
        assert!(penalized - plain <= 1 + 8 + 3 * 16 + 2, "{plain} -> {penalized}");
        // Repeated denials, bans and penalties never grow it.
        for _ in 0..100 {
            rl(c, "RL.FIXED k 1 1h PENALTY 3650d ESCALATE 3650d");
            let _: i64 = run(c, "RL.BAN k 315360000000");
        }
        assert!(run::<i64>(c, "STRLEN k") <= penalized);
        rl(c, "RL.SLIDINGLOG log 1 1h");
        rl(c, "RL.SLIDINGLOG log 1 1h PENALTY 1h");
        for _ in 0..100 {
            let _: i64 = run(c, "RL.BAN log 315360000000");
        }
        assert_eq!(run::<i64>(c, "ZCARD log"), 2, "one entry and one penalty member");
    }

    fn penalty_grammar_errors_are_clear_and_write_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (call, error) in [
            ("RL.GCRA k 1 1s PENALTY", "ERR option PENALTY needs a value"),
            ("RL.GCRA k 1 1s PENALTY 0", "ERR PENALTY must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)"),
            ("RL.GCRA k 1 1s PENALTY 1m ESCALATE", "ERR option ESCALATE needs a value"),
            ("RL.GCRA k 1 1s PENALTY 1m ESCALATE 3651d", "ERR ESCALATE must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)"),
            ("RL.GCRA k 1 1s PENALTY 1h ESCALATE 1m", "ERR ESCALATE max must be at least PENALTY d"),
            ("RL.GCRA k 1 1s PENALTY 1m PENALTY 1m", "ERR option PENALTY given more than once"),
            ("RL.GCRA k 1 1s ESCALATE 1m", "ERR unknown option 'ESCALATE' for 'rl.gcra' (expected BURST, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"),
            ("RL.PEEK FIXED k 1 1s PENALTY 1m", "ERR unknown option 'PENALTY' for 'rl.peek' (expected COST)"),
            ("RL.ALL 1 k FIXED 1 1s PENALTY 1h ESCALATE 1m", "ERR ESCALATE max must be at least PENALTY d"),
            ("RL.POLICY SET p FIXED 1 1s PENALTY x", "ERR PENALTY must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)"),
        ] {
            assert_eq!(rl_err(c, call), error, "{call}");
        }
        let _: String = run(c, "RL.POLICY SET p FIXED 1 1s");
        assert_eq!(
            rl_err(c, "RL.LIMIT k p PENALTY 1m"),
            "ERR unknown option 'PENALTY' for 'rl.limit' (expected COST, REFUND, DEBIT, PEEK or BLOCK)"
        );
        assert_eq!(run::<i64>(c, "DBSIZE"), 0);
    }
}
