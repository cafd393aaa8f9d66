//! Bounded work and memory per call (CONTRACT.md §8, issue 10): one sorted-set
//! entry per admitted request whatever its `COST`, lapsed entries removed a
//! bounded number per write (and replicated as `ZREM` of exactly those), keys
//! written in the legacy one-entry-per-unit format deciding as before, and
//! overflowing members refused. Speed is measured by `make bench`, not here.

use crate::common::*;

use std::collections::BTreeMap;

/// Entries a write removes at most (`sliding_log::TRIM_MAX`).
const TRIM_MAX: i64 = 64;

const NS_PER_MS: i64 = 1_000_000;

/// A key as every server must hold it: type, members with scores, expiry.
fn snapshot(c: &mut redis::Connection, key: &str) -> (String, Value, i64) {
    redis::pipe()
        .atomic()
        .add_command(command(&format!("TYPE {key}")))
        .add_command(command(&format!("ZRANGE {key} 0 -1 WITHSCORES")))
        .add_command(command(&format!("PEXPIRETIME {key}")))
        .query(c)
        .unwrap_or_else(|e| panic!("read {key}: {e}"))
}

/// Every key of the master, read on the master and on each replica, after the
/// replicas acknowledged every write made on `m` (`WAIT` waits for the writes
/// of its own connection): all byte-identical.
fn assert_replicas_identical(m: &mut redis::Connection, replicas: &[&Server]) {
    let acked: i64 = run(m, &format!("WAIT {} 10000", replicas.len()));
    assert_eq!(acked, replicas.len() as i64, "replicas did not catch up");
    let keys: Vec<String> = run(m, "KEYS *");
    let on_master: BTreeMap<&String, _> = keys.iter().map(|k| (k, snapshot(m, k))).collect();
    for replica in replicas {
        let r = &mut replica.conn();
        assert_eq!(run::<i64>(r, "DBSIZE"), keys.len() as i64);
        for (key, want) in &on_master {
            assert_eq!(&snapshot(r, key), want, "{key} differs on a replica");
        }
    }
}

fn used_memory(c: &mut redis::Connection) -> i64 {
    info(c, "memory", "used_memory").parse().unwrap()
}

fn sync_full(c: &mut redis::Connection) -> i64 {
    info(c, "stats", "sync_full").parse().unwrap()
}

/// Adds legacy sliding-log members (one per unit: the bare nanosecond, scored
/// by its microsecond), as the module wrote them before weighted entries,
/// pipelined `count` at a time.
fn add_legacy(c: &mut redis::Connection, key: &str, ns: &[i64]) {
    let mut pipe = redis::pipe();
    for chunk in ns.chunks(1_000) {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(key);
        for &n in chunk {
            zadd.arg(n / 1_000).arg(n);
        }
        pipe.add_command(zadd).ignore();
    }
    pipe.query::<()>(c).expect("ZADD legacy members");
}

/// The members of a key, oldest first.
fn members(c: &mut redis::Connection, key: &str) -> Vec<String> {
    run(c, &format!("ZRANGE {key} 0 -1"))
}

/// Parses a member written by this module: `(ns, cost, sum)`.
fn weighted(member: &str) -> (i64, i64, i64) {
    let parts: Vec<&str> = member.split(':').collect();
    assert_eq!(parts.len(), 3, "{member} is not <ns>:<cost>:<sum>");
    assert_eq!(parts[0].len(), 19, "{member}: ns has 19 digits");
    let n = |i: usize| parts[i].parse::<i64>().unwrap();
    (n(0), n(1), n(2))
}

/// The `RL.ALL` attack from issue 10: 64 layers, each `SLIDINGLOG 100000 1h COST 100000`.
fn all_64_layers(prefix: &str) -> String {
    let keys: Vec<String> = (0..64).map(|i| format!("{prefix}{{z}}:L{i}")).collect();
    let clauses = "SLIDINGLOG 100000 1h COST 100000 ".repeat(64);
    format!("RL.ALL 64 {} {clauses}", keys.join(" "))
}

server_tests! {
    fn entries_the_module_wrote_lapse_and_leave_64_per_write(flavor) {
        // The test build's clock (RL.DEBUG CLOCK) moves two hours on: all 1,000
        // entries the module wrote lapse at once.
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let mut pipe = redis::pipe();
        for _ in 0..1_000 {
            pipe.add_command(command("RL.SLIDINGLOG k 1000 1h")).ignore();
        }
        pipe.query::<()>(c).unwrap();
        assert_eq!(rl(c, "RL.SLIDINGLOG k 1000 1h COST 0")[..3], [1, 1_000, 0]);
        set_clock(c, 2 * HOUR_MS);
        let mut stored = 1_000;
        for i in 1..=20 {
            assert_eq!(rl(c, "RL.SLIDINGLOG k 1000 1h COST 2")[..3], [1, 1_000, 1_000 - 2 * i]);
            stored = (stored - TRIM_MAX).max(i - 1) + 1;
            assert_eq!(run::<i64>(c, "ZCARD k"), stored, "after call {i}");
        }
        // Sums ran on from the lapsed entries: 1,000 units, then 20 calls of 2.
        assert_eq!(weighted(members(c, "k").last().unwrap()).2, 1_040);
        set_clock(c, 0);
    }

    fn a_cost_at_the_cap_stores_one_entry(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.SLIDINGLOG k 100000 1h COST 100000"), [1, 100_000, 0, 0, HOUR_MS]);
        assert_eq!(run::<i64>(c, "ZCARD k"), 1);
        let (_, cost, sum) = weighted(&members(c, "k")[0]);
        assert_eq!((cost, sum), (100_000, 100_000));
        rl(c, "RL.SLIDINGLOG one 100000 1h");
        let big: i64 = run(c, "MEMORY USAGE k");
        let small: i64 = run(c, "MEMORY USAGE one");
        assert!(big <= small + 32 && big < 256, "COST 100000 uses {big} bytes, COST 1 {small}");
        // The log is full: the next unit waits for the whole entry to leave.
        let denied = rl(c, "RL.SLIDINGLOG k 100000 1h");
        assert_eq!(denied[..3], [0, 100_000, 0]);
        within(denied[3], HOUR_MS - 5_000, HOUR_MS + 1);
        assert_eq!(rl(c, "RL.SLIDINGLOG k 100000 1h COST 100001")[3], -1);
        assert_eq!(run::<i64>(c, "ZCARD k"), 1);
    }

    fn all_with_64_full_layers_adds_a_few_kb_and_keeps_its_replica(flavor) {
        let master = Server::start_master(flavor);
        let plain = master.replica(false);
        let with_module = master.replica(true);
        let m = &mut master.conn();
        let syncs = sync_full(m);
        let before = used_memory(m);
        // As the issue wrote it: a user allowed only RL.ALL on rl:* keys.
        run::<String>(m, "ACL SETUSER attacker on >pw +rl.all ~rl:*");
        let a = &mut master.conn();
        run::<String>(a, "AUTH attacker pw");
        let attack = all_64_layers("rl:");
        let reply: Vec<Value> = command(&attack).query(a).unwrap();
        assert_eq!(reply.len(), 6);
        let first: Vec<i64> = redis::from_redis_value(reply[0].clone()).map(|v: i64| vec![v]).unwrap();
        assert_eq!(first, [1]);
        for i in 0..64 {
            assert_eq!(run::<i64>(m, &format!("ZCARD rl:{{z}}:L{i}")), 1);
        }
        let grown = used_memory(m) - before;
        assert!(grown < 256 * 1024, "64 layers took {grown} bytes");
        // Again: every layer is full now, so it is denied and writes nothing.
        for _ in 0..3 {
            let reply: Vec<Value> = command(&attack).query(a).unwrap();
            assert_eq!(redis::from_redis_value::<i64>(reply[0].clone()).unwrap(), 0);
        }
        assert_replicas_identical(m, &[&plain, &with_module]);
        assert_eq!(sync_full(m), syncs, "a replica was dropped and fully resynced");
        assert_eq!(info(&mut plain.conn(), "replication", "master_link_status"), "up");
    }

    fn a_raised_cap_under_maxmemory_stores_one_entry(flavor) {
        let s = Server::start_with(flavor, &["--maxmemory", "30mb"]);
        let c = &mut s.conn();
        run::<String>(c, "CONFIG SET rl.sliding-log-max-limit 2000000");
        let before = used_memory(c);
        assert_eq!(rl(c, "RL.SLIDINGLOG k 2000000 1h COST 2000000")[..3], [1, 2_000_000, 0]);
        assert_eq!(run::<i64>(c, "ZCARD k"), 1);
        let reply: Vec<Value> = command(&all_64_layers("")).query(c).unwrap();
        assert_eq!(redis::from_redis_value::<i64>(reply[0].clone()).unwrap(), 1);
        let grown = used_memory(c) - before;
        assert!(grown < 256 * 1024, "grew {grown} bytes");
    }

    fn lapsed_entries_leave_a_bounded_number_per_write(flavor) {
        let master = Server::start_master(flavor);
        let plain = master.replica(false);
        let m = &mut master.conn();
        // 100,000 legacy entries from two hours ago, and 3 live ones from a minute ago.
        let old = (now_ms() - 2 * HOUR_MS) * NS_PER_MS;
        let lapsed: Vec<i64> = (0..100_000).map(|i| old + i * 7_000).collect();
        add_legacy(m, "k", &lapsed);
        let recent = (now_ms() - 60_000) * NS_PER_MS;
        add_legacy(m, "k", &[recent, recent + 1, recent + 2]);
        let mut stored = 100_003;
        // Read-only calls remove nothing.
        assert_eq!(rl(m, "RL.SLIDINGLOG k 10 1h COST 0")[..3], [1, 10, 7]);
        assert_eq!(rl(m, "RL.SLIDINGLOG k 10 1h PEEK")[..3], [1, 10, 6]);
        assert_eq!(run::<i64>(m, "ZCARD k"), stored);
        // Each admitted call removes 64 lapsed entries and adds one; the count is right meanwhile.
        for i in 1..=7 {
            let r = rl(m, "RL.SLIDINGLOG k 10 1h");
            assert_eq!(r[..3], [1, 10, 7 - i]);
            stored += 1 - TRIM_MAX;
            assert_eq!(run::<i64>(m, "ZCARD k"), stored);
        }
        // Full: denied, nothing removed; the oldest live unit leaves in about 59 minutes.
        let r = rl(m, "RL.SLIDINGLOG k 10 1h");
        assert_eq!(r[..3], [0, 10, 0]);
        within(r[3], HOUR_MS - 65_000, HOUR_MS - 59_000);
        assert_eq!(run::<i64>(m, "ZCARD k"), stored);
        // A refund gives units back (writing) and removes no lapsed entry.
        assert_eq!(rl(m, "RL.SLIDINGLOG k 10 1h REFUND 2")[..3], [1, 10, 2]);
        assert_eq!(run::<i64>(m, "ZCARD k"), stored - 2);
        // The key still expires when its newest entry leaves.
        within(pexpiretime(m, "k") - now_ms(), HOUR_MS - 5_000, HOUR_MS + 1);
        assert_replicas_identical(m, &[&plain]);
        let stats: String = run(&mut plain.conn(), "INFO commandstats");
        assert!(stats.contains("cmdstat_zrem:"), "{stats}");
        assert!(!stats.contains("cmdstat_zremrangebyscore"), "{stats}");
    }

    fn legacy_keys_decide_as_before_and_grow_weighted_entries(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let t = now_ms();
        let at = |ago_ms: i64| (t - ago_ms) * NS_PER_MS;
        // 6 units in the window (2 from 30 min ago, 1 from 20, 3 from 10), 5 lapsed.
        let units = [
            at(30 * 60_000), at(30 * 60_000) + 1,
            at(20 * 60_000),
            at(10 * 60_000), at(10 * 60_000) + 1, at(10 * 60_000) + 2,
        ];
        let gone: Vec<i64> = (0..5).map(|i| at(2 * HOUR_MS) + i).collect();
        add_legacy(c, "old", &gone);
        add_legacy(c, "old", &units);
        // The same units as weighted entries, after the same lapsed legacy ones.
        add_legacy(c, "new", &gone);
        for (ns, cost, sum) in [(units[0], 2, 2), (units[2], 1, 3), (units[3], 3, 6)] {
            run::<i64>(c, &format!("ZADD new {} {ns}:{cost}:{sum}", ns / 1_000));
        }
        // Decided at one instant (RL.ALL ... PEEK), both keys answer alike.
        for cost in 0..=7 {
            let words = format!("RL.ALL 2 old new SLIDINGLOG 6 1h COST {cost} SLIDINGLOG 6 1h COST {cost} PEEK");
            let reply: Vec<Value> = command(&words).query(c).unwrap();
            let layers: Vec<Vec<i64>> = redis::from_redis_value(reply[5].clone()).unwrap();
            assert_eq!(layers[0], layers[1], "{words}");
        }
        // And as the one-entry-per-unit module did: the k-th unit leaves when its entry does.
        let slack = now_ms() - t + 1_000;
        for (cost, leaves_in_min) in [(1, 30), (2, 30), (3, 40), (4, 50), (6, 50)] {
            let r = rl(c, &format!("RL.SLIDINGLOG old 6 1h COST {cost}"));
            assert_eq!(r[..3], [0, 6, 0], "cost {cost}");
            within(r[3], leaves_in_min * 60_000 - slack, leaves_in_min * 60_000);
            within(r[4], 50 * 60_000 - slack, 50 * 60_000);
        }
        assert_eq!(rl(c, "RL.SLIDINGLOG old 6 1h COST 7")[3], -1);
        // A refund removes the oldest live legacy units; a new write adds one
        // weighted entry after the others and drops the lapsed ones.
        assert_eq!(rl(c, "RL.SLIDINGLOG old 6 1h REFUND 2")[..3], [1, 6, 2]);
        assert_eq!(rl(c, "RL.SLIDINGLOG old 6 1h COST 2")[..3], [1, 6, 0]);
        let stored = members(c, "old");
        assert_eq!(stored.len(), 5);
        assert_eq!(stored[..4], units[2..].iter().map(i64::to_string).collect::<Vec<_>>()[..]);
        let (ns, cost, sum) = weighted(&stored[4]);
        assert!(ns > units[3]);
        assert_eq!((cost, sum), (2, 2));
        assert_eq!(rl(c, "RL.SLIDINGLOG old 6 1h COST 0")[..3], [1, 6, 0]);
        // The oldest unit left is the one from 20 minutes ago.
        let r = rl(c, "RL.SLIDINGLOG old 6 1h");
        within(r[3], 40 * 60_000 - slack - 1_000, 40 * 60_000);
        within(pexpiretime(c, "old") - now_ms(), HOUR_MS - 5_000, HOUR_MS + 1);
        // Sums run on in the weighted key.
        assert_eq!(rl(c, "RL.SLIDINGLOG new 7 1h")[..3], [1, 7, 0]);
        assert_eq!(weighted(members(c, "new").last().unwrap()).2, 7);
    }

    fn overflowing_members_are_refused_not_merged(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let refused = "ERR key holds a value that RL.SLIDINGLOG did not write: use another key or DEL it";
        run::<i64>(c, "ZADD max 18446744073709551 18446744073709551615");
        assert_eq!(rl_err(c, "RL.SLIDINGLOG max 5 1h COST 3"), refused);
        assert_eq!(members(c, "max"), ["18446744073709551615"]);
        // A running sum at the top of u64 cannot take one more unit.
        let ns = now_ms() * NS_PER_MS;
        run::<i64>(c, &format!("ZADD sum {} {ns}:1:18446744073709551615", ns / 1_000));
        assert_eq!(rl_err(c, "RL.SLIDINGLOG sum 5 1h"), refused);
        assert_eq!(run::<i64>(c, "ZCARD sum"), 1);
        // Neither is a member this module writes: cost 0, sums below costs, extra fields.
        for (key, member) in [("zero", "0"), ("below", "3"), ("extra", "1:1")] {
            let m = format!("{ns}:{member}:{}", if key == "below" { 2 } else { 1 });
            run::<i64>(c, &format!("ZADD {key} {} {m}", ns / 1_000));
            assert_eq!(rl_err(c, &format!("RL.SLIDINGLOG {key} 5 1h")), refused, "{m}");
            assert_eq!(members(c, key), [m]);
        }
        assert_eq!(rl_err(c, "RL.ALL 1 max SLIDINGLOG 5 1h COST 3"), refused);
    }

    fn lapsed_leases_leave_a_bounded_number_per_write(flavor) {
        let master = Server::start_master(flavor);
        let plain = master.replica(false);
        let m = &mut master.conn();
        let lapsed_us = (now_ms() - HOUR_MS) * 1_000;
        let mut zadd = redis::cmd("ZADD");
        zadd.arg("sem");
        for i in 0..1_000 {
            zadd.arg(lapsed_us + i).arg(format!("lease:old{i}"));
        }
        zadd.query::<i64>(m).unwrap();
        assert_eq!(rl(m, "RL.ACQUIRE sem 3 1m a PEEK")[..3], [1, 3, 2]);
        assert_eq!(run::<i64>(m, "ZCARD sem"), 1_000);
        assert_eq!(rl(m, "RL.ACQUIRE sem 3 1m a")[..3], [1, 3, 2]);
        assert_eq!(run::<i64>(m, "ZCARD sem"), 1_000 - TRIM_MAX + 1);
        assert_eq!(rl(m, "RL.ACQUIRE sem 3 1m b")[..3], [1, 3, 1]);
        assert_eq!(rl(m, "RL.ACQUIRE sem 3 1m c")[..3], [1, 3, 0]);
        let r = rl(m, "RL.ACQUIRE sem 3 1m d");
        assert_eq!(r[..3], [0, 3, 0]);
        within(r[3], 55_000, 60_000);
        assert_eq!(run::<i64>(m, "RL.RELEASE sem b"), 1);
        assert_eq!(run::<i64>(m, "ZCARD sem"), 1_000 - 4 * TRIM_MAX + 2);
        assert_eq!(run::<i64>(m, "RL.RELEASE sem old999"), 0);
        assert_replicas_identical(m, &[&plain]);
    }

    fn every_shape_replicates_byte_identical(flavor) {
        let master = Server::start_master(flavor);
        let plain = master.replica(false);
        let with_module = master.replica(true);
        let m = &mut master.conn();
        let t = now_ms();
        // A legacy key with lapsed and live units, then writes and refunds on it.
        let gone: Vec<i64> = (0..200).map(|i| (t - 2 * HOUR_MS) * NS_PER_MS + i * 1_000).collect();
        add_legacy(m, "mixed", &gone);
        add_legacy(m, "mixed", &[(t - 60_000) * NS_PER_MS, (t - 60_000) * NS_PER_MS + 1]);
        for words in [
            "RL.SLIDINGLOG mixed 20 1h COST 5",
            "RL.SLIDINGLOG mixed 20 1h COST 3",
            "RL.SLIDINGLOG mixed 20 1h REFUND 4",
            "RL.SLIDINGLOG mixed 20 1h COST 1",
            "RL.SLIDINGLOG mixed 20 1h REFUND 7",
            "RL.SLIDINGLOG mixed 20 1h COST 9",
            "RL.SLIDINGLOG weighted 10 1h COST 4",
            "RL.SLIDINGLOG weighted 10 1h COST 4",
            "RL.SLIDINGLOG weighted 10 1h REFUND 5",
            "RL.SLIDINGLOG gone 10 1h COST 4",
            "RL.SLIDINGLOG gone 10 1h REFUND 9",
            "RL.ALL 2 a b SLIDINGLOG 3 1h COST 3 SLIDINGLOG 100000 1d COST 99999",
            "RL.ACQUIRE sem 2 1h x",
            "RL.ACQUIRE sem 2 1h y",
            "RL.RELEASE sem x",
        ] {
            let _: Value = command(words).query(m).unwrap_or_else(|e| panic!("{words}: {e}"));
        }
        assert_eq!(run::<i64>(m, "EXISTS gone"), 0, "refunding everything deletes the key");
        assert_eq!(run::<i64>(m, "ZCARD weighted"), 1);
        // The refund took the oldest entry (4) and 1 of the next, whose sum stays.
        assert_eq!(weighted(&members(m, "weighted")[0]).1..=weighted(&members(m, "weighted")[0]).2, 3..=8);
        assert_replicas_identical(m, &[&plain, &with_module]);
        let plain_log = plain.log();
        assert!(!plain_log.contains("unknown command"), "{plain_log}");
    }
}
