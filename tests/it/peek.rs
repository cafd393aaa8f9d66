//! RL.PEEK <ALGO> key params: the read-only twin of `RL.<ALGO> … PEEK`, against
//! real servers: same replies, nothing written, and it runs where write commands
//! cannot (a replica, EVAL_RO / FCALL_RO, maxmemory reached). Its replies on
//! fresh keys and its errors are test vectors (`tests/vectors/peek.txt`).

use crate::common::*;

/// Per algorithm: the command, its parameters, and RL.PEEK's algorithm word.
const ALGOS: [(&str, &str, &str); 7] = [
    ("RL.GCRA", "10 1h BURST 3", "GCRA"),
    ("RL.TOKENBUCKET", "3 1 1h", "TOKENBUCKET"),
    ("RL.LEAKY", "3 1 1h", "LEAKY"),
    ("RL.SLIDING", "3 1h", "SLIDING"),
    ("RL.SLIDINGLOG", "3 1h", "SLIDINGLOG"),
    ("RL.FIXED", "3 1h", "FIXED"),
    ("RL.ACQUIRE", "3 1h id-1", "ACQUIRE"),
];

fn cost(cmd: &str, n: u64) -> String {
    match cmd {
        "RL.ACQUIRE" => String::new(),
        _ => format!("COST {n}"),
    }
}

/// Everything a read must leave unchanged.
fn footprint(c: &mut redis::Connection, key: &str) -> (Option<Vec<u8>>, i64, u64, i64) {
    let dump = run(c, &format!("DUMP {key}"));
    (dump, pexpiretime(c, key), dirty(c), run(c, "DBSIZE"))
}

/// Times in replies may differ by the time between two calls (on a loaded
/// machine, up to a second): compare the first three integers exactly and the
/// two times within 1,000 ms.
fn same_reply(a: &[i64], b: &[i64]) {
    assert_eq!(a[..3], b[..3], "{a:?} vs {b:?}");
    for i in 3..5 {
        assert!((a[i] - b[i]).abs() <= 1_000, "{a:?} vs {b:?}");
    }
}

server_tests! {
    fn peek_replies_what_the_peek_option_replies_and_writes_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for (i, (cmd, params, algo)) in ALGOS.iter().enumerate() {
            let key = format!("k{i}");
            // Empty, partly spent, exhausted.
            for round in 0..3 {
                for n in [0, 1, 2, 3, 4] {
                    if *cmd == "RL.ACQUIRE" && n != 1 {
                        continue;
                    }
                    let before = footprint(c, &key);
                    let peeked = rl(c, &format!("RL.PEEK {algo} {key} {params} {}", cost(cmd, n)));
                    assert_eq!(footprint(c, &key), before, "{cmd} round {round} cost {n}");
                    let option = rl(c, &format!("{cmd} {key} {params} {} PEEK", cost(cmd, n)));
                    same_reply(&peeked, &option);
                }
                let spend = match *cmd {
                    "RL.ACQUIRE" => format!("RL.ACQUIRE {key} 3 1h id-{round}-x"),
                    _ => format!("{cmd} {key} {params} COST 1"),
                };
                assert_eq!(rl(c, &spend)[0], 1, "{spend}");
            }
        }
    }

    fn peek_without_a_key_is_an_arity_error(flavor) {
        // The module's alone: through the library, a call without a key is an FCALL
        // with no key, which the library refuses in its own words.
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl_err(c, "RL.PEEK GCRA"), "ERR wrong number of arguments for 'rl.peek' command");
    }

    fn a_user_with_read_only_key_access_may_peek(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: () = run(c, "ACL SETUSER peeker on >pw %R~rl:* resetchannels -@all +rl.peek +rl.gcra");
        assert_eq!(rl(c, "RL.GCRA rl:a 1 1h")[0], 1);
        let u = &mut s.conn();
        let _: () = run(u, "AUTH peeker pw");
        assert_eq!(rl(u, "RL.PEEK GCRA rl:a 1 1h")[..3], [0, 1, 0]);
        assert!(rl_err(u, "RL.GCRA rl:a 1 1h PEEK").starts_with("NOPERM"));
        assert!(rl_err(u, "RL.PEEK GCRA other 1 1h").starts_with("NOPERM"));
    }

    fn peek_runs_on_a_replica_in_read_only_scripts_and_out_of_memory(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(true);
        let m = &mut master.conn();
        assert_eq!(rl(m, "RL.GCRA g 10 1h BURST 3 COST 2"), vec![1, 3, 1, 0, 720_000]);
        let _: i64 = run(m, "WAIT 1 5000");
        let r = &mut replica.conn();
        assert!(rl_err(r, "RL.GCRA g 10 1h BURST 3 PEEK").starts_with("READONLY"));
        let on_replica = rl(r, "RL.PEEK GCRA g 10 1h BURST 3");
        same_reply(&on_replica, &rl(m, "RL.GCRA g 10 1h BURST 3 PEEK"));
        assert_eq!(on_replica[..3], [1, 3, 0]);

        // EVAL_RO, and FCALL_RO through a no-writes function.
        let script = "return redis.call('RL.PEEK', 'GCRA', KEYS[1], '10', '1h', 'BURST', '3')";
        let got: Vec<i64> = redis::cmd("EVAL_RO").arg(script).arg(1).arg("g").query(r).unwrap();
        assert_eq!(got[..3], [1, 3, 0]);
        let write = "return redis.call('RL.GCRA', KEYS[1], '10', '1h', 'BURST', '3', 'PEEK')";
        let err = redis::cmd("EVAL_RO").arg(write).arg(1).arg("g").query::<Value>(m).unwrap_err();
        assert!(error_text(&err).contains("Write commands are not allowed"), "{err}");
        let lib = "#!lua name=peeklib\nredis.register_function{function_name='peek', \
                   callback=function(keys, args) return redis.call('RL.PEEK', 'FIXED', keys[1], '2', '1h', 'COST', '0') end, \
                   flags={'no-writes'}}";
        let _: String = redis::cmd("FUNCTION").arg("LOAD").arg(lib).query(m).unwrap();
        let got: Vec<i64> = redis::cmd("FCALL_RO").arg("peek").arg(1).arg("f").query(m).unwrap();
        assert_eq!(got, vec![1, 2, 2, 0, 0]);

        // maxmemory reached: writes are refused, RL.PEEK answers.
        let _: () = run(m, "CONFIG SET maxmemory-policy noeviction");
        let _: () = run(m, "CONFIG SET maxmemory 1");
        assert!(rl_err(m, "RL.GCRA g 10 1h BURST 3").starts_with("OOM"));
        assert_eq!(rl(m, "RL.PEEK GCRA g 10 1h BURST 3")[..3], [1, 3, 0]);
        let _: () = run(m, "CONFIG SET maxmemory 0");
    }

    fn peek_changes_no_encoding_on_a_master_a_replica_or_for_a_read_only_user(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(true);
        let m = &mut master.conn();
        let encoding = |c: &mut redis::Connection, key: &str| -> String {
            run(c, &format!("OBJECT ENCODING {key}"))
        };
        // A foreign 25-byte string, and a state the module wrote (replicated
        // as SET … PXAT, so embedded on the replica).
        let _: () = run(m, "SET foreign aaaaaaaaaaaaaaaaaaaaaaaaa");
        assert_eq!(rl(m, "RL.GCRA g 10 1h BURST 3")[0], 1);
        let _: i64 = run(m, "WAIT 1 5000");
        let r = &mut replica.conn();
        let replicated = encoding(r, "g");
        assert_eq!(encoding(m, "foreign"), "embstr");
        let _: () = run(m, "ACL SETUSER peeker on >pw %R~* resetchannels -@all +rl.peek");
        let u = &mut master.conn();
        let _: () = run(u, "AUTH peeker pw");
        for c in [&mut *m, &mut *r, &mut *u] {
            assert!(rl_err(c, "RL.PEEK GCRA foreign 10 1h").contains("did not write"));
            assert_eq!(rl(c, "RL.PEEK GCRA g 10 1h BURST 3")[..3], [1, 3, 1]);
        }
        assert_eq!(encoding(m, "foreign"), "embstr");
        assert_eq!(encoding(r, "foreign"), "embstr");
        assert_eq!(encoding(r, "g"), replicated);
    }

    fn peek_is_described_as_a_read_only_command_with_its_key_at_2(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let info: Value = run(c, "COMMAND INFO rl.peek");
        let text = format!("{info:?}");
        for word in ["readonly", "fast", "RO"] {
            assert!(text.contains(word), "{word} in {text}");
        }
        assert!(!text.contains("\"write\"") && !text.contains("RW"), "{text}");
        let keys: Vec<String> = run(c, "COMMAND GETKEYS RL.PEEK GCRA user:42 10 1s BURST 5");
        assert_eq!(keys, vec!["user:42"]);
        let docs: Value = run(c, "COMMAND DOCS rl.peek");
        let text = format!("{docs:?}");
        assert!(text.contains("PEEK replies") && text.contains("algorithm"), "{text}");
        if flavor == Flavor::Valkey {
            let cats: Vec<String> = run(c, "ACL CAT read");
            assert!(cats.iter().any(|c| c == "rl.peek"), "{cats:?}");
            let cats: Vec<String> = run(c, "ACL CAT write");
            assert!(!cats.iter().any(|c| c == "rl.peek"), "{cats:?}");
        }
    }
}
