//! State, expiry and replication (CONTRACT.md section 5): a write reaches replicas
//! as plain Redis commands with absolute times, so a replica with or without the
//! module ends with identical state and expiry; every write raises the dirty
//! counter; a denied request, `PEEK` and `COST 0` write, replicate and dirty nothing.

use crate::common::*;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Each command with parameters for long-lived keys (nothing refills, rolls over
/// or expires while a test runs) and for 1 s keys (windows roll over during the
/// test, and every write keeps its key for about 1 s). Limits are small so that
/// traffic is both admitted and denied (`COST 9` is above every long-lived limit,
/// `DEBIT 4` charges into debt);
/// the 1 s sliding log admits 10 so that it still writes after its entries age out.
const ALGOS: [(&str, &str, &str); 6] = [
    ("RL.GCRA", "5 1h BURST 3", "1 1s BURST 2"),
    ("RL.TOKENBUCKET", "5 2 1h", "2 1 1s"),
    ("RL.LEAKY", "4 2 1h", "2 1 1s"),
    ("RL.SLIDING", "5 1d", "2 1s"),
    ("RL.SLIDINGLOG", "5 1h", "10 1s"),
    ("RL.FIXED", "5 1d", "2 1s"),
];

/// Keys per command in the traffic; the first `SHORT_KEYS` use the 1 s parameters.
const KEYS: usize = 20;
const SHORT_KEYS: usize = 4;

/// The options of the traffic's calls, taken in turn.
const CALLS: [&str; 8] = [
    "COST 1",
    "COST 2",
    "COST 0",
    "COST 1 PEEK",
    "COST 1",
    "COST 9",
    "DEBIT 4",
    "COST 3",
];

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

fn sleep_until_ms(at_ms: u64) {
    std::thread::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms())));
}

/// Makes sure `replicas` replicas have acknowledged every write so far.
fn wait_replicas(master: &mut redis::Connection, replicas: i64) {
    let acked: i64 = run(master, &format!("WAIT {replicas} 5000"));
    assert_eq!(acked, replicas, "replicas did not catch up");
}

/// Sends one round of traffic, pipelined: two calls on each of the `KEYS` keys
/// of every command, options taken in turn from `CALLS`. Returns, per command,
/// how many calls were admitted and denied.
fn traffic(c: &mut redis::Connection, round: usize) -> Vec<[usize; 2]> {
    let mut pipe = redis::pipe();
    for (a, (cmd, long, short)) in ALGOS.iter().enumerate() {
        for i in 0..KEYS {
            let params = if i < SHORT_KEYS { short } else { long };
            for j in 0..2 {
                let opts = CALLS[(a + i + 2 * round + j) % CALLS.len()];
                pipe.add_command(command(&format!("{cmd} {cmd}:{i} {params} {opts}")));
            }
        }
    }
    let replies: Vec<Vec<i64>> = pipe.query(c).expect("traffic");
    replies
        .chunks(2 * KEYS)
        .map(|calls| {
            let admitted = calls.iter().filter(|r| r[0] == 1).count();
            [admitted, calls.len() - admitted]
        })
        .collect()
}

/// A key as clients read it, in one atomic step: its type, its value (`GET` for
/// a string, `ZRANGE … WITHSCORES` for a sorted set) and its absolute expiry.
type Snapshot = (String, Value, i64);

fn snapshot(c: &mut redis::Connection, key: &str, kind: &str) -> Snapshot {
    let read = if kind == "zset" {
        format!("ZRANGE {key} 0 -1 WITHSCORES")
    } else {
        format!("GET {key}")
    };
    redis::pipe()
        .atomic()
        .add_command(command(&format!("TYPE {key}")))
        .add_command(command(&read))
        .add_command(command(&format!("PEXPIRETIME {key}")))
        .query(c)
        .unwrap_or_else(|e| panic!("read {key}: {e}"))
}

/// Which format a key holds: the algorithm tag of a string, else its type.
fn format_of((kind, value, _): &Snapshot) -> String {
    match value {
        Value::BulkString(v) => String::from_utf8_lossy(v)
            .split(':')
            .next()
            .unwrap_or_default()
            .to_string(),
        _ => kind.clone(),
    }
}

/// Everything a quiet request must leave unchanged: the key's `DUMP` and
/// `PEXPIRETIME`, the server's dirty counter and its number of keys.
fn footprint(c: &mut redis::Connection, key: &str) -> (Option<Vec<u8>>, i64, u64, i64) {
    let dump = run(c, &format!("DUMP {key}"));
    let expire = run(c, &format!("PEXPIRETIME {key}"));
    (dump, expire, dirty(c), run(c, "DBSIZE"))
}

/// Runs requests that must write nothing on `key` (PEEK, COST 0, a cost above the
/// limit; and when `exhausted`, requests denied for lack of capacity), checks the
/// `allowed` flag of each and that none changed the key, the dirty counter or the
/// number of keys.
fn assert_quiet(c: &mut redis::Connection, cmd: &str, key: &str, params: &str, exhausted: bool) {
    let requests: &[(&str, i64)] = if exhausted {
        &[
            ("COST 1", 0),
            ("PEEK", 0),
            ("COST 0", 1),
            ("COST 0 PEEK", 1),
            ("COST 9", 0),
        ]
    } else {
        &[
            ("PEEK", 1),
            ("COST 0", 1),
            ("COST 9", 0),
            ("COST 9 PEEK", 0),
        ]
    };
    let before = footprint(c, key);
    for (opts, allowed) in requests {
        let words = format!("{cmd} {key} {params} {opts}");
        assert_eq!(rl(c, &words)[0], *allowed, "{words}");
        assert_eq!(footprint(c, key), before, "{words} wrote something");
    }
}

server_tests! {
    fn replica_holds_identical_state_and_expiry(flavor) {
        let master = Server::start_master(flavor);
        let replicas = [master.replica(true), master.replica(false)];
        let mut m = master.conn();

        // Three rounds timed against a whole second b: the 1 s windows roll over
        // between rounds 1 and 2 (at b + 1000 ms), round 2 drops sliding-log entries
        // of round 0 (older than 1 s) from keys that round 1 kept alive, and every
        // 1 s key written in round 2 lives until about b + 2000 ms, well after the
        // comparison below.
        let b = (now_ms() / 1000 + 1) * 1000;
        let mut counts = vec![[0; 2]; ALGOS.len()];
        for (round, at) in [10, 600, 1100].into_iter().enumerate() {
            sleep_until_ms(b + at);
            for (total, got) in counts.iter_mut().zip(traffic(&mut m, round)) {
                total[0] += got[0];
                total[1] += got[1];
            }
        }
        for ((cmd, _, _), [admitted, denied]) in ALGOS.iter().zip(&counts) {
            assert!(*admitted > 0 && *denied > 0, "{cmd}: {admitted} admitted, {denied} denied");
        }
        wait_replicas(&mut m, 2);

        // Every key reads the same on the master and on both replicas. Reads on the
        // three servers are not simultaneous, so a key may differ only once its
        // expiry has passed (then it is gone or about to go everywhere).
        let keys: Vec<String> = run(&mut m, "KEYS *");
        let mut replica_conns: Vec<_> = replicas.iter().map(Server::conn).collect();
        let (mut formats, mut compared) = (BTreeSet::new(), 0);
        for key in &keys {
            let kind: String = run(&mut m, &format!("TYPE {key}"));
            let on_master = snapshot(&mut m, key, &kind);
            let on_replicas: Vec<Snapshot> =
                replica_conns.iter_mut().map(|r| snapshot(r, key, &kind)).collect();
            if on_replicas.iter().all(|s| *s == on_master) {
                compared += 1;
            } else {
                let read_at = now_ms() as i64;
                assert!(
                    on_replicas.iter().chain([&on_master]).all(|s| s.2 <= read_at),
                    "{key} differs: master {on_master:?}, replicas {on_replicas:?}"
                );
            }
            formats.insert(format_of(&on_master));
        }
        // The long-lived keys never expire during the test, so they are all compared.
        let long_keys = ALGOS.len() * (KEYS - SHORT_KEYS);
        assert!(compared >= long_keys, "{compared} of {} keys compared", keys.len());
        let expected = ["bucket", "fixed", "gcra", "leaky", "sliding", "zset"];
        assert_eq!(formats, expected.map(String::from).into(), "formats on the master");

        // The module-less replica received sliding-log writes that dropped entries.
        let stats: String = run(&mut replica_conns[1], "INFO commandstats");
        assert!(stats.contains("cmdstat_zrem:"), "{stats}");
        assert!(!stats.contains("cmdstat_zremrangebyscore"), "{stats}");
    }

    fn replication_stream_carries_only_plain_commands(flavor) {
        let master = Server::start_master(flavor);
        let replicas = [master.replica(true), master.replica(false)];
        let mut m = master.conn();
        for round in 0..2 {
            traffic(&mut m, round);
        }
        wait_replicas(&mut m, 2);
        assert!(dirty(&mut m) > 0, "admitted writes left the dirty counter at 0");

        // No replica was sent an `RL.*` command: none ran one, none rejected one,
        // and the module-less replica executed the effects as plain commands.
        let plain = &replicas[1];
        assert!(!plain.log().contains("unknown command"), "{}", plain.log());
        for replica in &replicas {
            let mut r = replica.conn();
            let stats: String = run(&mut r, "INFO commandstats");
            assert!(!stats.contains("cmdstat_rl."), "{stats}");
            assert_eq!(info(&mut r, "stats", "unexpected_error_replies"), "0");
            let size: i64 = run(&mut r, "DBSIZE");
            assert_eq!(size, run::<i64>(&mut m, "DBSIZE"));
        }
        let stats: String = run(&mut plain.conn(), "INFO commandstats");
        for effect in ["cmdstat_set:", "cmdstat_zadd:", "cmdstat_pexpireat:"] {
            assert!(stats.contains(effect), "no {effect} on the replica: {stats}");
        }

        // On a fresh master: PEEK, COST 0 and a cost above the limit create no key
        // and leave the dirty counter alone; each admitted request raises it.
        let fresh = Server::start(flavor);
        let mut c = fresh.conn();
        for (cmd, params, _) in ALGOS {
            assert_quiet(&mut c, cmd, cmd, params, false);
        }
        assert_eq!(run::<i64>(&mut c, "DBSIZE"), 0);
        for (cmd, params, _) in ALGOS {
            let before = dirty(&mut c);
            assert_eq!(rl(&mut c, &format!("{cmd} {cmd} {params}"))[0], 1);
            assert!(dirty(&mut c) > before, "{cmd}: a write left the dirty counter at {before}");
        }
    }

    fn peek_cost_zero_and_denials_write_nothing(flavor) {
        let s = Server::start(flavor);
        let mut c = s.conn();
        for (cmd, params, _) in ALGOS {
            // A key with state and capacity left.
            let first = rl(&mut c, &format!("{cmd} {cmd} {params}"));
            assert_eq!(first[0], 1, "{cmd}: {first:?}");
            assert_quiet(&mut c, cmd, cmd, params, false);

            // The same key exhausted: consuming what remains changes it, and then
            // every further request is denied without writing.
            let before = footprint(&mut c, cmd);
            let last = rl(&mut c, &format!("{cmd} {cmd} {params} COST {}", first[2]));
            assert_eq!(last[..3], [1, first[1], 0], "{cmd}: {last:?}");
            assert_ne!(footprint(&mut c, cmd).0, before.0, "{cmd}: DUMP missed a write");
            assert_quiet(&mut c, cmd, cmd, params, true);
        }
    }
}
