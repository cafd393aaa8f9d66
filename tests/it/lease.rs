//! RL.ACQUIRE / RL.RELEASE (in-flight limits) against real servers: replies,
//! renewal, lapse, release, expiry, foreign values, concurrency, replication. The
//! replies and errors that do not depend on the clock are test vectors
//! (`tests/vectors/lease.txt`).

use crate::common::*;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// The lease set as (member, score in µs), lowest score first.
fn leases(c: &mut redis::Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    let raw: Vec<(Vec<u8>, f64)> = run(c, &format!("ZRANGE {key} 0 -1 WITHSCORES"));
    raw.into_iter().map(|(m, s)| (m, s as i64)).collect()
}

/// The expiry a lease set must have: its latest lapse, rounded up to the ms.
fn expected_expiry(c: &mut redis::Connection, key: &str) -> i64 {
    let latest = leases(c, key).iter().map(|l| l.1).max().expect("a lease");
    (latest + 999) / 1_000
}

fn acquire_bytes(c: &mut redis::Connection, key: &str, params: &str, id: &[u8]) -> Vec<i64> {
    let mut cmd = redis::cmd("RL.ACQUIRE");
    cmd.arg(key)
        .arg(params.split_whitespace().collect::<Vec<_>>());
    cmd.arg(id);
    cmd.query(c).unwrap()
}

/// Everything a quiet request must leave unchanged.
fn footprint(c: &mut redis::Connection, key: &str) -> (Option<Vec<u8>>, i64, u64, i64) {
    let dump = run(c, &format!("DUMP {key}"));
    (dump, pexpiretime(c, key), dirty(c), run(c, "DBSIZE"))
}

server_tests! {
    fn a_renewal_moves_the_lease_last(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for id in ["a", "b", "c"] {
            assert_eq!(rl(c, &format!("RL.ACQUIRE jobs 3 1h {id}"))[0], 1, "{id}");
        }
        // A holder renews (a heartbeat) without taking a second slot.
        let before = leases(c, "jobs");
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(rl(c, "RL.ACQUIRE jobs 3 1h a"), vec![1, 3, 0, 0, HOUR_MS]);
        let after = leases(c, "jobs");
        assert_eq!(after.len(), 3);
        assert_eq!(after[2].0, b"lease:a", "the renewed lease lapses last");
        assert!(after[2].1 > before[0].1 + 4_000, "{before:?} -> {after:?}");
        assert_eq!(pexpiretime(c, "jobs"), expected_expiry(c, "jobs"));
    }

    fn a_lease_lapses_after_its_timeout(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.ACQUIRE w 1 200ms crashed"), vec![1, 1, 0, 0, 200]);
        let denied = rl(c, "RL.ACQUIRE w 1 200ms next");
        assert_eq!(denied[..3], [0, 1, 0]);
        within(denied[3], 150, 200);
        assert_eq!(denied[3], denied[4]);
        std::thread::sleep(Duration::from_millis(denied[3] as u64 + 5));
        // The crashed client's lease lapsed; the write dropped it.
        assert_eq!(rl(c, "RL.ACQUIRE w 1 200ms next"), vec![1, 1, 0, 0, 200]);
        let held = leases(c, "w");
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].0, b"lease:next");
        // Releasing a lapsed lease reports 0.
        assert_eq!(run::<i64>(c, "RL.RELEASE w crashed"), 0);
        // The key itself goes at the last lapse.
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(run::<i64>(c, "EXISTS w"), 0);
    }

    fn state_format_and_expiry(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before_us = now_ms() * 1_000;
        let id: &[u8] = b"\x00bin\xff ary\r\n";
        assert_eq!(acquire_bytes(c, "st", "5 1m", id), vec![1, 5, 4, 0, 60_000]);
        let after_us = now_ms() * 1_000 + 1_000;
        let held = leases(c, "st");
        assert_eq!(held[0].0, [b"lease:".as_slice(), id].concat());
        within(held[0].1, before_us + 60_000_000, after_us + 60_000_000);
        assert_eq!(pexpiretime(c, "st"), expected_expiry(c, "st"));
        // A longer timeout moves the expiry to the new latest lapse.
        rl(c, "RL.ACQUIRE st 5 1h long");
        assert_eq!(pexpiretime(c, "st"), expected_expiry(c, "st"));
        within(pexpiretime(c, "st") - now_ms(), HOUR_MS - 1_000, HOUR_MS + 1);
        // Releasing the latest lease moves the expiry back to the remaining latest.
        assert_eq!(run::<i64>(c, "RL.RELEASE st long"), 1);
        assert_eq!(pexpiretime(c, "st"), expected_expiry(c, "st"));
        within(pexpiretime(c, "st") - now_ms(), 59_000, 60_001);
        // Ids are binary-safe and 1 to 256 bytes.
        let mut rel = redis::cmd("RL.RELEASE");
        rel.arg("st").arg(id);
        assert_eq!(rel.query::<i64>(c).unwrap(), 1);
        assert_eq!(acquire_bytes(c, "st", "5 1m", &[b'x'; 256])[0], 1);
        let mut long = redis::cmd("RL.ACQUIRE");
        long.arg("st").arg(5).arg("1m").arg(vec![b'x'; 257]);
        let err = long.query::<Value>(c).unwrap_err();
        assert_eq!(error_text(&err), "ERR lease_id must be 1 to 256 bytes");
    }

    fn peek_and_denials_write_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "RL.ACQUIRE q 2 1h a PEEK");
        assert_eq!(run::<i64>(c, "DBSIZE"), 0);
        rl(c, "RL.ACQUIRE q 2 1h a");
        let quiet = footprint(c, "q");
        rl(c, "RL.ACQUIRE q 2 1h b peek");
        rl(c, "RL.ACQUIRE q 2 1h a PEEK");
        assert_eq!(run::<i64>(c, "RL.RELEASE q unknown"), 0);
        assert_eq!(footprint(c, "q"), quiet);
        rl(c, "RL.ACQUIRE q 2 1h b");
        let full = footprint(c, "q");
        assert_eq!(rl(c, "RL.ACQUIRE q 2 1h c")[0], 0);
        assert_eq!(rl(c, "RL.ACQUIRE q 2 1h c PEEK")[0], 0);
        assert_eq!(footprint(c, "q"), full);
        // Writes raise the dirty counter.
        let before = dirty(c);
        assert_eq!(run::<i64>(c, "RL.RELEASE q a"), 1);
        assert!(dirty(c) > before);
    }

    fn foreign_values_are_errors_and_left_untouched(flavor) {
        // The error texts: tests/vectors/lease.txt. Here: nothing changes.
        let s = Server::start(flavor);
        let c = &mut s.conn();
        run::<i64>(c, "ZADD words 1 alpha 2 beta");
        rl(c, "RL.SLIDINGLOG log 5 1h");
        run::<i64>(c, "ZADD mixed 1 lease:a 2 other");
        run::<String>(c, "SET str hello");
        run::<i64>(c, "HSET hash f v");
        run::<i64>(c, "RPUSH list x");
        for key in ["words", "log", "mixed", "str", "hash", "list"] {
            let dump: Vec<u8> = run(c, &format!("DUMP {key}"));
            let ttl: i64 = run(c, &format!("PEXPIRETIME {key}"));
            for cmd in [
                format!("RL.ACQUIRE {key} 5 1s a"),
                format!("RL.ACQUIRE {key} 5 1s a PEEK"),
                format!("RL.RELEASE {key} a"),
            ] {
                rl_err(c, &cmd);
            }
            assert_eq!(run::<Vec<u8>>(c, &format!("DUMP {key}")), dump, "{key} changed");
            assert_eq!(pexpiretime(c, key), ttl, "{key}'s expiry changed");
        }
        // RL.SLIDINGLOG (alone or in RL.ALL) and RL.GCRA refuse a lease set and leave it alone.
        rl(c, "RL.ACQUIRE leases 5 1h a");
        let dump: Vec<u8> = run(c, "DUMP leases");
        rl_err(c, "RL.SLIDINGLOG leases 5 1h");
        rl_err(c, "RL.ALL 1 leases SLIDINGLOG 5 1h");
        rl_err(c, "RL.GCRA leases 5 1h");
        assert_eq!(run::<Vec<u8>>(c, "DUMP leases"), dump);
    }

    fn the_limit_cap_is_the_sliding_logs_and_configurable(flavor) {
        // The other argument errors: tests/vectors/lease.txt.
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(run::<String>(c, "CONFIG SET rl.sliding-log-max-limit 10"), "OK");
        assert_eq!(rl_err(c, "RL.ACQUIRE k 11 1s a"), "ERR limit must be an integer from 1 to 10");
        assert_eq!(rl(c, "RL.ACQUIRE k 10 1s a")[..3], [1, 10, 9]);
        assert_eq!(run::<String>(c, "CONFIG SET rl.sliding-log-max-limit 1000000"), "OK");
        assert_eq!(rl(c, "RL.ACQUIRE k 1000000 1s b")[..3], [1, 1_000_000, 999_998]);
        assert_eq!(run::<i64>(c, "DBSIZE"), 1);
    }

    fn concurrent_clients_never_hold_more_than_the_limit(flavor) {
        const LIMIT: i64 = 3;
        const CLIENTS: usize = 8;
        const ROUNDS: usize = 150;
        let s = Server::start(flavor);
        let in_flight = AtomicI64::new(0);
        let peak = AtomicI64::new(0);
        let admitted = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for client in 0..CLIENTS {
                let (s, in_flight, peak, admitted) = (&s, &in_flight, &peak, &admitted);
                scope.spawn(move || {
                    let c = &mut s.conn();
                    for round in 0..ROUNDS {
                        let id = format!("c{client}-r{round}");
                        let r = rl(c, &format!("RL.ACQUIRE sem {LIMIT} 10s {id}"));
                        if r[0] == 0 {
                            assert!(r[3] > 0, "a denial says when to retry: {r:?}");
                            continue;
                        }
                        // Counted between the server's grant and the release, so
                        // this never exceeds what the server holds.
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert!(now <= LIMIT, "{now} leases held at once");
                        assert!((0..LIMIT).contains(&r[2]), "{r:?}");
                        admitted.fetch_add(1, Ordering::Relaxed);
                        let card: i64 = run(c, "ZCARD sem");
                        assert!(card <= LIMIT, "{card} leases stored");
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(run::<i64>(c, &format!("RL.RELEASE sem {id}")), 1);
                    }
                });
            }
        });
        assert!(admitted.load(Ordering::Relaxed) > ROUNDS as u64, "too few admitted");
        assert!(peak.load(Ordering::SeqCst) >= 2, "no overlap was exercised");
        // Every lease was released: the key is gone.
        assert_eq!(run::<i64>(&mut s.conn(), "EXISTS sem"), 0);
    }

    fn a_clock_stepping_back_grants_nothing(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        rl(c, "RL.ACQUIRE back 2 1s a");
        rl(c, "RL.ACQUIRE back 2 1s b");
        let dump: Vec<u8> = run(c, "DUMP back");
        set_clock(c, -5_000);
        let r = rl(c, "RL.ACQUIRE back 2 1s c");
        assert_eq!(r[..3], [0, 2, 0]);
        within(r[3], 5_900, 6_000);
        assert_eq!(run::<Vec<u8>>(c, "DUMP back"), dump);
        // A holder still renews on the stepped-back clock; nobody else gets in.
        assert_eq!(rl(c, "RL.ACQUIRE back 2 1s a")[..3], [1, 2, 0]);
        assert_eq!(rl(c, "RL.ACQUIRE back 2 1s c")[0], 0);
        set_clock(c, 0);
        assert_eq!(rl(c, "RL.ACQUIRE back 2 1s c")[0], 0, "b is still held");
        assert_eq!(pexpiretime(c, "back"), expected_expiry(c, "back"));
    }

    fn replicas_hold_identical_lease_sets(flavor) {
        let master = Server::start_master(flavor);
        let replicas = [master.replica(true), master.replica(false)];
        let m = &mut master.conn();
        // Each round, on every key: a short lease and a long one, both renewed; the
        // previous round's short lease has lapsed (the first write drops it: a
        // ZREM of exactly the lapsed leases), releasing it returns 0; odd keys release the previous
        // long lease; even keys fill up, so their last PEEK is denied.
        for round in 0..3 {
            if round > 0 {
                std::thread::sleep(Duration::from_millis(150));
            }
            for k in 0..6 {
                let key = format!("pool:{k}");
                for words in [
                    format!("RL.ACQUIRE {key} 4 100ms s{round}"),
                    format!("RL.ACQUIRE {key} 4 1h l{round}"),
                    format!("RL.ACQUIRE {key} 4 1h l{round}"),
                    format!("RL.ACQUIRE {key} 4 100ms s{round}"),
                ] {
                    assert_eq!(rl(m, &words)[0], 1, "{words}");
                }
                let full = round == 2 && k % 2 == 0;
                let peek = rl(m, &format!("RL.ACQUIRE {key} 4 1h extra PEEK"));
                assert_eq!(peek[0], i64::from(!full), "{key} round {round}: {peek:?}");
                if round > 0 {
                    let prev = round - 1;
                    assert_eq!(run::<i64>(m, &format!("RL.RELEASE {key} s{prev}")), 0);
                    if k % 2 == 1 {
                        assert_eq!(run::<i64>(m, &format!("RL.RELEASE {key} l{prev}")), 1);
                    }
                }
                assert_eq!(run::<i64>(m, &format!("RL.RELEASE {key} nobody")), 0);
            }
        }
        rl(m, "RL.ACQUIRE gone 3 1h x");
        let _: i64 = run(m, "RL.RELEASE gone x");
        let acked: i64 = run(m, "WAIT 2 5000");
        assert_eq!(acked, 2);

        let read = |c: &mut redis::Connection, key: &str| -> (Value, i64) {
            redis::pipe()
                .atomic()
                .add_command(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").clone())
                .add_command(redis::cmd("PEXPIRETIME").arg(key).clone())
                .query(c)
                .unwrap()
        };
        let keys: Vec<String> = run(m, "KEYS *");
        assert_eq!(keys.len(), 6, "{keys:?}");
        let mut conns: Vec<_> = replicas.iter().map(Server::conn).collect();
        for key in &keys {
            let on_master = read(m, key);
            assert_eq!(on_master.1, expected_expiry(m, key), "{key}");
            within(on_master.1 - now_ms(), HOUR_MS - 10_000, HOUR_MS + 1);
            for r in conns.iter_mut() {
                assert_eq!(read(r, key), on_master, "{key}");
            }
        }
        for r in conns.iter_mut() {
            assert_eq!(run::<i64>(r, "EXISTS gone"), 0);
            let stats: String = run(r, "INFO commandstats");
            assert!(!stats.contains("cmdstat_rl."), "{stats}");
            assert_eq!(info(r, "stats", "unexpected_error_replies"), "0");
        }
        let plain: String = run(&mut conns[1], "INFO commandstats");
        assert!(!plain.contains("cmdstat_zremrangebyscore"), "{plain}");
        for effect in ["zadd", "zrem", "pexpireat", "del"] {
            assert!(plain.contains(&format!("cmdstat_{effect}:")), "no {effect}: {plain}");
        }
        assert!(!replicas[1].log().contains("unknown command"));
    }
}
