//! Wait scenarios shared by the ordinary suite and the memory-checked run
//! (`make memcheck`): each drives a real server and checks every reply.

use std::time::{SystemTime, UNIX_EPOCH};

use super::raw::{wait_for, waiters, waits, Raw, Reply};
use super::{command, rl, run, Server, Value};

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// What a reply must be.
type Expect = dyn Fn(&Reply) -> bool;

/// Reads every reply and checks it with `expect`.
pub fn replies(raws: Vec<Raw>, what: &str, expect: impl Fn(&Reply) -> bool) {
    for mut r in raws {
        let reply = r.read();
        assert!(expect(&reply), "{what}: unexpected reply {reply:?}");
    }
}

/// Lets `n` more clients wait at once, on one key too.
pub fn allow_waiters(c: &mut redis::Connection, n: usize) {
    let _: () = run(c, &format!("CONFIG SET rl.max-waiters {n}"));
    let _: () = run(c, &format!("CONFIG SET rl.max-waiters-per-key {n}"));
}

/// `keys` semaphores of one slot, `per_key` waiters queued behind each slot's
/// holder (every waiter a lease id of its own, 1 ms leases, `BLOCK 0`), all
/// released together: each admission's lease lapses, and with it the key, a
/// millisecond later, while the key's timer counts lapsed leases through the
/// server. Every waiter must be admitted; a count that freed the key under
/// an open handle answered `WRONGTYPE` or a denial here.
pub fn leases_lapsing_under_their_timers(
    s: &Server,
    c: &mut redis::Connection,
    keys: usize,
    per_key: usize,
) {
    allow_waiters(c, keys * per_key);
    let mut all = Vec::new();
    for k in 0..keys {
        assert_eq!(rl(c, &format!("RL.ACQUIRE q{k} 1 1h held"))[0], 1);
        for i in 0..per_key {
            all.push(Raw::send(s, &format!("RL.ACQUIRE q{k} 1 1ms L{i} BLOCK 0")));
        }
    }
    wait_for("every lease waiter to queue", || {
        waits(c).0 == (keys * per_key) as u64
    });
    let mut release = redis::pipe();
    for k in 0..keys {
        release
            .add_command(command(&format!("RL.RELEASE q{k} held")))
            .ignore();
    }
    let _: () = release.query(c).unwrap();
    replies(all, "a lease waiter", Reply::admitted);
}

/// Writes a sliding log in the legacy format (a bare nanosecond per unit,
/// scored by its microsecond) as the module did, expiring at `idle_ns`.
fn legacy_log(c: &mut redis::Connection, key: &str, entries_ns: &[i64], idle_ns: i64) {
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(key);
    for &ns in entries_ns {
        zadd.arg(ns / 1_000).arg(ns);
    }
    let expire_ms = idle_ns.div_euclid(1_000_000) + 1;
    let _: Value = redis::pipe()
        .add_command(zadd)
        .cmd("PEXPIREAT")
        .arg(key)
        .arg(expire_ms)
        .query(c)
        .unwrap();
}

/// Sliding logs in the legacy format (a bare nanosecond per unit) whose one
/// entry leaves the window, and the key expires, as their timers count
/// entries through the server: every waiter must be admitted.
pub fn legacy_logs_lapsing_under_their_timers(
    s: &Server,
    c: &mut redis::Connection,
    keys: usize,
    per_key: usize,
) {
    allow_waiters(c, keys * per_key);
    let window_ns = 2_000_000;
    let mut all = Vec::new();
    for k in 0..keys {
        let ns = now_ns();
        let key = format!("legacy{k}");
        legacy_log(c, &key, &[ns], ns + window_ns);
        for _ in 0..per_key {
            all.push(Raw::send(s, &format!("RL.SLIDINGLOG {key} 1 2ms BLOCK 0")));
        }
    }
    replies(all, "a sliding-log waiter", Reply::admitted);
}

/// For a test build pausing in every server call about a key
/// (`RL.DEBUG CALLDELAY`, at least `2 * span_ms`): per key, one waiter whose
/// timer fires (`4 * span_ms` from now) while the key still lives but must
/// count entries through the server (a lease or a legacy log entry has just
/// lapsed), and the key expires during that count (its last entry lapses
/// `span_ms` after the first). The waiter is decided again on the absent key:
/// admitted. Returns the number of keys that vanished during a count.
pub fn keys_expiring_during_counts(
    s: &Server,
    c: &mut redis::Connection,
    keys: usize,
    span_ms: i64,
) -> i64 {
    allow_waiters(c, 2 * keys);
    let before: i64 = run(c, "RL.DEBUG VANISHED");
    let mut all = Vec::new();
    for k in 0..keys {
        let key = format!("short{k}");
        let (lead_ms, last_ms) = (4 * span_ms, 5 * span_ms);
        assert_eq!(
            rl(c, &format!("RL.ACQUIRE {key} 2 {lead_ms}ms first"))[0],
            1
        );
        assert_eq!(rl(c, &format!("RL.ACQUIRE {key} 2 {last_ms}ms last"))[0], 1);
        all.push(Raw::send(s, &format!("RL.ACQUIRE {key} 2 1ms w BLOCK 0")));
        // Entries at now - span and now, in a window of 5 spans.
        let key = format!("oldlog{k}");
        let window_ns = last_ms * 1_000_000;
        let ns = now_ns();
        let first = ns - span_ms * 1_000_000;
        legacy_log(c, &key, &[first, ns], ns + window_ns);
        all.push(Raw::send(
            s,
            &format!("RL.SLIDINGLOG {key} 2 {last_ms}ms BLOCK 0"),
        ));
    }
    replies(
        all,
        "a waiter on a key expiring during a count",
        Reply::admitted,
    );
    run::<i64>(c, "RL.DEBUG VANISHED") - before
}

/// Ends `n` waits each way the module or an operator can end them.
pub fn every_end(s: &Server, c: &mut redis::Connection, n: usize) {
    allow_waiters(c, n);
    let exhaust = format!("RL.FIXED e {n} 1d COST {n}");
    let wait = format!("RL.FIXED e {n} 1d BLOCK 0");
    let queue = |c: &mut redis::Connection| {
        let _: () = run(c, "FLUSHALL");
        assert_eq!(rl(c, &exhaust)[0], 1);
        waiters(s, c, &wait, n)
    };
    let unblocked = |r: &Reply| r.error().is_some_and(|e| e.starts_with("UNBLOCKED"));
    // Disconnects.
    drop(queue(c));
    // CLIENT KILL, CLIENT UNBLOCK, CLIENT UNBLOCK ERROR.
    let closed = |r: &Reply| *r == Reply::Closed;
    let ends: [(&str, &str, &Expect); 3] = [
        ("CLIENT KILL ID", "", &closed),
        ("CLIENT UNBLOCK", "", &Reply::denied),
        ("CLIENT UNBLOCK", " ERROR", &unblocked),
    ];
    for (how, suffix, expect) in ends {
        let raws = queue(c);
        for r in &raws {
            let _: i64 = run(c, &format!("{how} {}{suffix}", r.id));
        }
        replies(raws, how, expect);
    }
    // Generic key actions and flushes: admitted on the key's new state.
    for action in [
        "DEL e",
        "UNLINK e",
        "FLUSHALL",
        "FLUSHALL ASYNC",
        "FLUSHDB",
        "SWAPDB 0 1",
        "RENAME e e2",
        "MOVE e 1",
    ] {
        let raws = queue(c);
        let _: Value = run(c, action);
        replies(raws, action, Reply::admitted);
    }
    // Waits by a named policy: a change re-decides them (still denied), and
    // deleting the policy ends them, head and the rest, nothing spent.
    let _: () = run(c, "FLUSHALL");
    assert_eq!(rl(c, &exhaust)[0], 1);
    let _: () = run(c, &format!("RL.POLICY SET day FIXED {n} 1d"));
    let raws = waiters(s, c, "RL.LIMIT e day BLOCK 0", n);
    let _: () = run(c, &format!("RL.POLICY SET day FIXED {n} 2d"));
    let _: i64 = run(c, "RL.POLICY DEL day");
    replies(raws, "RL.POLICY DEL", |r| {
        r.error() == Some("ERR no such policy 'day'")
    });
    // Own timeouts.
    let _: () = run(c, "FLUSHALL");
    assert_eq!(rl(c, &exhaust)[0], 1);
    let raws: Vec<Raw> = (0..n)
        .map(|_| Raw::send(s, &format!("RL.FIXED e {n} 1d BLOCK 20")))
        .collect();
    replies(raws, "a timeout", Reply::denied);
    // A role change.
    let raws = queue(c);
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = nowhere.local_addr().unwrap().port();
    drop(nowhere);
    let _: () = run(c, &format!("REPLICAOF 127.0.0.1 {port}"));
    replies(raws, "a role change", unblocked);
    let _: () = run(c, "REPLICAOF NO ONE");
    wait_for("no waiter left", || waits(c).0 == 0);
}

/// A pipelined flood of every command, with and without `BLOCK`, on a few
/// hot keys; the server must still answer and nobody may be left waiting.
pub fn flood(s: &Server, c: &mut redis::Connection, calls: usize) {
    allow_waiters(c, calls);
    let commands = [
        "RL.GCRA f1 100 1s BURST 5",
        "RL.TOKENBUCKET f2 10 5 1s",
        "RL.LEAKY f3 10 100 1s",
        "RL.SLIDING f4 20 1s",
        "RL.SLIDINGLOG f5 20 100ms",
        "RL.FIXED f6 20 100ms",
        "RL.ACQUIRE f7 3 50ms",
        "CL.THROTTLE f8 5 10 1",
        "RL.PEEK GCRA f1 100 1s",
    ];
    let mut pipe = redis::pipe();
    for i in 0..calls {
        let base = commands[i % commands.len()];
        let words = match base.starts_with("RL.ACQUIRE") {
            true => format!("{base} id{}", i % 7),
            false => base.to_string(),
        };
        pipe.add_command(command(&words)).ignore();
    }
    let _: () = pipe.query(c).unwrap();
    let blocking: Vec<Raw> = (0..calls / 10)
        .map(|i| {
            let base = commands[i % 7];
            let words = match base.starts_with("RL.ACQUIRE") {
                true => format!("{base} b{i} BLOCK 200"),
                false => format!("{base} BLOCK 200"),
            };
            Raw::send(s, &words)
        })
        .collect();
    replies(
        blocking,
        "a blocking flood call",
        |r| matches!(r, Reply::Integers(v) if v.len() == 5),
    );
    wait_for("no waiter left", || waits(c).0 == 0);
}
