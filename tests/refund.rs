//! REFUND n: units given back to a limiter, never beyond its idle state.

mod common;
use common::*;

/// Each command with parameters of limit 5 that cannot refill during the test.
const COMMANDS: [(&str, &str); 6] = [
    ("RL.GCRA", "1 1h BURST 5"),
    ("RL.TOKENBUCKET", "5 1 1h"),
    ("RL.LEAKY", "5 1 1h"),
    ("RL.SLIDING", "5 1h"),
    ("RL.SLIDINGLOG", "5 1h"),
    ("RL.FIXED", "5 3650d"),
];

fn gives_back_what_was_spent(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    for (cmd, params) in COMMANDS {
        let base = format!("{cmd} k:{cmd} {params}");
        assert_eq!(rl(c, &format!("{base} COST 4"))[..3], [1, 5, 1], "{cmd}");
        // Two units back: three spent.
        let r = rl(c, &format!("{base} REFUND 2"));
        assert_eq!(r[..4], [1, 5, 3, 0], "{cmd}");
        assert_eq!(rl(c, &format!("{base} COST 0"))[2], 3, "{cmd}");
        // PEEK and REFUND 0 report without writing.
        let dump: Vec<u8> = run(c, &format!("DUMP k:{cmd}"));
        assert_eq!(rl(c, &format!("{base} REFUND 1 PEEK"))[2], 4, "{cmd}");
        assert_eq!(rl(c, &format!("{base} REFUND 0"))[2], 3, "{cmd}");
        assert_eq!(run::<Vec<u8>>(c, &format!("DUMP k:{cmd}")), dump, "{cmd}");
        // Never beyond idle: a large refund leaves the limiter as if it were new.
        assert_eq!(
            rl(c, &format!("{base} REFUND 1000")),
            vec![1, 5, 5, 0, 0],
            "{cmd}"
        );
        assert_eq!(
            run::<i64>(c, &format!("EXISTS k:{cmd}")),
            0,
            "{cmd}: idle state is no key"
        );
        assert_eq!(rl(c, &format!("{base} COST 5"))[..3], [1, 5, 0], "{cmd}");
        // Refunding an absent limiter writes nothing.
        assert_eq!(
            rl(c, &format!("{cmd} none:{cmd} {params} REFUND 3")),
            vec![1, 5, 5, 0, 0]
        );
        assert_eq!(run::<i64>(c, &format!("EXISTS none:{cmd}")), 0, "{cmd}");
    }
}

fn sliding_log_removes_the_newest_entries(flavor: Flavor) {
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
    // The newest entry (2 units) goes whole; the oldest keeps its time, 1 unit.
    let (ns, _) = before[0].split_once(':').unwrap();
    assert_eq!(
        after,
        [format!("{ns}:1:1")],
        "the oldest entry stays, shrunk"
    );
    let expiry_after: i64 = run(c, "PEXPIRETIME log");
    assert!(
        expiry_after < expiry_before,
        "the expiry follows the newest entry left"
    );
    let score: f64 = run(c, &format!("ZSCORE log {}", after[0]));
    assert_eq!(expiry_after, (score as i64 + 3_600_000_000 + 999) / 1_000);
}

fn errors(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    for (cmd, params) in COMMANDS {
        let base = format!("{cmd} e {params}");
        assert_eq!(
            rl_err(c, &format!("{base} REFUND 1 COST 1")),
            "ERR COST and REFUND cannot be used together"
        );
        assert_eq!(
            rl_err(c, &format!("{base} REFUND")),
            "ERR option REFUND needs a value"
        );
        assert_eq!(
            rl_err(c, &format!("{base} REFUND -1")),
            "ERR REFUND must be an integer from 0 to 1000000000000"
        );
        assert_eq!(
            rl_err(c, &format!("{base} REFUND 1 refund 1")),
            "ERR option REFUND given more than once"
        );
    }
    assert_eq!(run::<i64>(c, "DBSIZE"), 0);
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
    fn refund_gives_back_what_was_spent_never_beyond_idle(flavor) { super::gives_back_what_was_spent(flavor) }
    fn sliding_log_refund_removes_the_newest_entries(flavor) { super::sliding_log_removes_the_newest_entries(flavor) }
    fn refund_errors(flavor) { super::errors(flavor) }
    fn refunds_replicate(flavor) { super::refunds_replicate_as_effects(flavor) }
}
