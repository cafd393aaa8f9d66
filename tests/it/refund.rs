//! REFUND n: units given back to a limiter, never beyond its idle state. The
//! replies and errors are test vectors (`tests/vectors/refund.txt`); here, what
//! is stored and replicated.

use crate::common::*;

/// Each command with parameters of limit 5 that cannot refill during the test.
const COMMANDS: [(&str, &str); 6] = [
    ("RL.GCRA", "1 1h BURST 5"),
    ("RL.TOKENBUCKET", "5 1 1h"),
    ("RL.LEAKY", "5 1 1h"),
    ("RL.SLIDING", "5 1h"),
    ("RL.SLIDINGLOG", "5 1h"),
    ("RL.FIXED", "5 3650d"),
];

fn peek_and_refund_0_write_nothing(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    for (cmd, params) in COMMANDS {
        let base = format!("{cmd} k:{cmd} {params}");
        assert_eq!(rl(c, &format!("{base} COST 4"))[0], 1, "{cmd}");
        assert_eq!(rl(c, &format!("{base} REFUND 2"))[0], 1, "{cmd}");
        let dump: Vec<u8> = run(c, &format!("DUMP k:{cmd}"));
        let expiry = pexpiretime(c, &format!("k:{cmd}"));
        assert_eq!(rl(c, &format!("{base} REFUND 1 PEEK"))[2], 4, "{cmd}");
        assert_eq!(rl(c, &format!("{base} REFUND 0"))[2], 3, "{cmd}");
        assert_eq!(run::<Vec<u8>>(c, &format!("DUMP k:{cmd}")), dump, "{cmd}");
        assert_eq!(pexpiretime(c, &format!("k:{cmd}")), expiry, "{cmd}");
    }
}

fn sliding_log_removes_the_oldest_entries(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    rl(c, "RL.SLIDINGLOG log 5 1h COST 2");
    std::thread::sleep(std::time::Duration::from_millis(5));
    rl(c, "RL.SLIDINGLOG log 5 1h COST 2");
    let before: Vec<String> = run(c, "ZRANGE log 0 -1");
    let expiry_before: i64 = run(c, "PEXPIRETIME log");
    assert_eq!(before.len(), 2, "one entry per request");
    rl(c, "RL.SLIDINGLOG log 5 1h REFUND 3");
    let after: Vec<String> = run(c, "ZRANGE log 0 -1");
    // The oldest entry (2 units) goes whole; the newest keeps its time and its
    // sum (4), 1 unit.
    let (ns, _) = before[1].split_once(':').unwrap();
    assert_eq!(
        after,
        [format!("{ns}:1:4")],
        "the newest entry stays, shrunk"
    );
    let expiry_after: i64 = run(c, "PEXPIRETIME log");
    assert_eq!(expiry_after, expiry_before, "the newest entry stays");
    let score: f64 = run(c, &format!("ZSCORE log {}", after[0]));
    assert_eq!(expiry_after, (score as i64 + 3_600_000_000 + 999) / 1_000);
}

fn refunds_replicate_as_effects(flavor: Flavor) {
    let master = Server::start_master(flavor);
    let replica = master.replica(false);
    let c = &mut master.conn();
    let r = &mut replica.conn();
    for (cmd, params) in COMMANDS {
        rl(c, &format!("{cmd} r:{cmd} {params} COST 4"));
        rl(c, &format!("{cmd} r:{cmd} {params} REFUND 1"));
        rl(c, &format!("{cmd} gone:{cmd} {params} COST 2"));
        rl(c, &format!("{cmd} gone:{cmd} {params} REFUND 2"));
    }
    assert_eq!(run::<i64>(c, "WAIT 1 5000"), 1);
    let keys: Vec<String> = run(c, "KEYS *");
    assert_eq!(keys.len(), 6, "fully refunded limiters are gone: {keys:?}");
    assert_eq!(run::<i64>(r, "DBSIZE"), 6);
    for key in keys {
        let read = if key.contains("SLIDINGLOG") {
            format!("ZRANGE {key} 0 -1 WITHSCORES")
        } else {
            format!("GET {key}")
        };
        assert_eq!(run::<Value>(c, &read), run::<Value>(r, &read), "{key}");
        let expiry = format!("PEXPIRETIME {key}");
        assert_eq!(run::<i64>(c, &expiry), run::<i64>(r, &expiry), "{key}");
    }
}

server_tests! {
    fn peek_and_refund_0_write_nothing(flavor) { super::peek_and_refund_0_write_nothing(flavor) }
    fn sliding_log_refund_removes_the_oldest_entries(flavor) { super::sliding_log_removes_the_oldest_entries(flavor) }
    fn refunds_replicate(flavor) { super::refunds_replicate_as_effects(flavor) }
}
