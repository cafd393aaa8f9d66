//! Redis Cluster: each command has one key, so a cluster-aware client routes it to the
//! master that owns the key's slot, and its state lives there; hash tags keep a
//! client's limiters on one master; a manual failover loses no limiter state, because
//! writes reach replicas as plain effect commands with absolute times.

use crate::common::cluster::{call, wait_until, Cluster};
use crate::common::{now_ms, HOUR_MS};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One command of each kind, with parameters under which a fresh key admits exactly
/// `N` calls at once and then nothing for the rest of the test, and the documented
/// format of its stored string after those calls (`None`: a sorted set).
struct Kind {
    command: &'static str,
    /// The parameters after the key; `N` stands for the limit.
    params: &'static str,
    /// Fields separated by `:`; `*` is any number, `N` the limit.
    state: Option<&'static str>,
    /// Refills within an hour (else a 3650-day window: the next boundary is in 2029).
    hourly: bool,
}

const KINDS: [Kind; 6] = [
    Kind {
        command: "RL.GCRA",
        params: "1 1h BURST N",
        state: Some("gcra:*"),
        hourly: true,
    },
    Kind {
        command: "RL.TOKENBUCKET",
        params: "N 1 1h",
        state: Some("bucket:*"),
        hourly: true,
    },
    Kind {
        command: "RL.LEAKY",
        params: "N 1 1h",
        state: Some("leaky:*"),
        hourly: true,
    },
    Kind {
        command: "RL.SLIDING",
        params: "N 3650d",
        state: Some("sliding:*:0:N"),
        hourly: false,
    },
    Kind {
        command: "RL.SLIDINGLOG",
        params: "N 1h",
        state: None,
        hourly: true,
    },
    Kind {
        command: "RL.FIXED",
        params: "N 3650d",
        state: Some("fixed:*:N"),
        hourly: false,
    },
];
const DAYS_3650_MS: i64 = 3650 * 24 * HOUR_MS;

impl Kind {
    fn words(&self, key: &str, limit: i64) -> String {
        let params = self.params.replace('N', &limit.to_string());
        format!("{} {key} {params}", self.command)
    }

    /// Calls a fresh key `limit + 1` times: the first `limit` are admitted with exact
    /// replies, the last is denied.
    fn exhaust(&self, c: &mut impl redis::ConnectionLike, key: &str, limit: i64) {
        let words = self.words(key, limit);
        for i in 1..=limit {
            let r: Vec<i64> = call(c, &words);
            assert_eq!(r[..3], [1, limit, limit - i], "{words} (call {i})");
            // Allowed: no wait, except the leaky queue's delay for the work ahead.
            let wait = if self.command == "RL.LEAKY" {
                (i - 1) * HOUR_MS
            } else {
                0
            };
            assert!(
                r[3] <= wait && r[3] > wait - 60_000 && r[4] > 0,
                "{words} (call {i}): {r:?}"
            );
        }
        self.assert_denied(c, key, limit, "");
    }

    /// A call (with `extra` options) on an exhausted key is denied: nothing remains,
    /// and it may retry only later.
    fn assert_denied(
        &self,
        c: &mut impl redis::ConnectionLike,
        key: &str,
        limit: i64,
        extra: &str,
    ) {
        let words = format!("{} {extra}", self.words(key, limit));
        let r: Vec<i64> = call(c, &words);
        assert_eq!(r[..3], [0, limit, 0], "{words} is denied: {r:?}");
        let max_retry = if self.hourly {
            HOUR_MS
        } else {
            2 * DAYS_3650_MS
        };
        assert!(
            r[3] > 0 && r[3] <= max_retry && r[4] > 0,
            "{words} is denied: {r:?}"
        );
    }

    /// Checks a key's state on the node that holds it: the documented format, the
    /// `limit` units admitted, an expiry in the future.
    fn assert_state(&self, node: &mut redis::Connection, key: &str, limit: usize) {
        match self.state {
            Some(format) => {
                let value: String = call(node, &format!("GET {key}"));
                let fields: Vec<&str> = value.split(':').collect();
                let expected: Vec<&str> = format.split(':').collect();
                let matches = fields.len() == expected.len()
                    && fields.iter().zip(&expected).all(|(f, e)| match *e {
                        "*" => f.parse::<u128>().is_ok(),
                        "N" => *f == limit.to_string(),
                        _ => f == e,
                    });
                assert!(matches, "{key} holds {value}, not {format}");
            }
            None => {
                let log: Vec<String> = call(node, &format!("ZRANGE {key} 0 -1"));
                assert_eq!(log.len(), limit, "{key} holds {log:?}");
            }
        }
        let expiry: i64 = call(node, &format!("PEXPIRETIME {key}"));
        assert!(expiry > now_ms(), "{key} expires at {expiry}");
    }
}

/// A key's state as one node holds it: its type, value (the members and scores of
/// a sorted set) and absolute expiry.
fn snapshot(node: &mut redis::Connection, key: &str) -> (String, Vec<String>, i64) {
    let kind: String = call(node, &format!("TYPE {key}"));
    let value = match kind.as_str() {
        "string" => vec![call(node, &format!("GET {key}"))],
        _ => call(node, &format!("ZRANGE {key} 0 -1 WITHSCORES")),
    };
    (kind, value, call(node, &format!("PEXPIRETIME {key}")))
}

/// Sets its flag when dropped, even by a panic.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The first `count` keys `<prefix>:<i>` whose slot `master` serves.
fn keys_on(cluster: &Cluster, master: u16, prefix: &str, count: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}:{i}"))
        .filter(|k| cluster.master_of(k) == master)
        .take(count)
        .collect()
}

server_tests! {
    fn all_commands_work_across_every_master(flavor) {
        const LIMIT: i64 = 3;
        const KEYS_PER_KIND: usize = 16;
        let cluster = Cluster::start(flavor);
        let masters = cluster.masters();
        let mut nodes: BTreeMap<u16, redis::Connection> =
            masters.iter().map(|&m| (m, cluster.conn(m))).collect();
        let mut held: BTreeMap<u16, usize> = BTreeMap::new();
        let mut client = cluster.client();
        for kind in &KINDS {
            let mut owners = BTreeSet::new();
            for i in 0..KEYS_PER_KIND {
                let key = format!("{}:user{i}", kind.command.to_lowercase());
                kind.exhaust(&mut client, &key, LIMIT);
                let owner = cluster.master_of(&key);
                kind.assert_state(nodes.get_mut(&owner).unwrap(), &key, LIMIT as usize);
                owners.insert(owner);
                *held.entry(owner).or_default() += 1;
            }
            assert_eq!(
                owners.into_iter().collect::<Vec<_>>(),
                masters,
                "{}: every master owns some of the keys",
                kind.command
            );
        }
        // Each master holds exactly the keys whose slots it owns, and nothing else.
        for (master, node) in &mut nodes {
            let size: usize = call(node, "DBSIZE");
            assert_eq!(size, held[master], "keys on master {master}");
        }
    }

    fn hash_tags_land_together(flavor) {
        let cluster = Cluster::start(flavor);
        let slot = cluster.keyslot("{u42}:sec");
        assert_eq!(cluster.keyslot("{u42}:hour"), slot);
        assert_eq!(cluster.keyslot("u42"), slot, "only the tag is hashed");
        let owner = cluster.master_of("{u42}:sec");
        assert_eq!(cluster.master_of("{u42}:hour"), owner);

        let mut client = cluster.client();
        let r: Vec<i64> = call(&mut client, "RL.GCRA {u42}:sec 10 1s BURST 10");
        assert_eq!(r[..2], [1, 10], "{r:?}");
        let r: Vec<i64> = call(&mut client, "RL.SLIDING {u42}:hour 100 1h");
        assert_eq!(r[..4], [1, 100, 99, 0], "{r:?}");

        // Both states live on the one master, so one transaction there can check both.
        let node = &mut cluster.conn(owner);
        let sec: String = call(node, "GET {u42}:sec");
        let hour: String = call(node, "GET {u42}:hour");
        assert!(sec.starts_with("gcra:") && hour.starts_with("sliding:"), "{sec} {hour}");
        let (sec, hour): (Vec<i64>, Vec<i64>) = redis::pipe()
            .atomic()
            .cmd("RL.GCRA").arg("{u42}:sec").arg(10).arg("1s").arg("BURST").arg(10)
            .cmd("RL.SLIDING").arg("{u42}:hour").arg(100).arg("1h")
            .query(node)
            .expect("MULTI/EXEC over both keys");
        assert_eq!((sec[0], hour[..3].to_vec()), (1, vec![1, 100, 98]));

        // RL.ALL over one tagged client routes like any multi-key command...
        let both: Vec<redis::Value> = call(
            &mut client,
            "RL.ALL 2 {u42}:sec {u42}:hour GCRA 10 1s BURST 10 SLIDING 100 1h",
        );
        let binding: Vec<i64> = both[..5]
            .iter()
            .map(|v| redis::from_redis_value(v.clone()).unwrap())
            .collect();
        assert_eq!(binding[..3], [1, 10, 7], "{both:?}");
        // ...and keys in two slots get Redis's own CROSSSLOT error.
        assert_ne!(cluster.keyslot("a"), cluster.keyslot("b"));
        let err = redis::cmd("RL.ALL")
            .arg(&["2", "a", "b", "FIXED", "1", "1s", "FIXED", "1", "1s"])
            .query::<redis::Value>(&mut cluster.conn(cluster.master_of("a")))
            .unwrap_err();
        assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
    }

    fn failover_loses_nothing(flavor) {
        const LIMIT: i64 = 5;
        let cluster = Cluster::start(flavor);
        let (master, replica) = cluster.pairs()[0];

        // Exhaust one limiter of each kind on `master`, on one connection, and wait
        // until its replica has acknowledged those writes.
        let limiters = keys_on(&cluster, master, "exhausted", KINDS.len());
        let busy = keys_on(&cluster, master, "busy", 4);
        let node = &mut cluster.conn(master);
        for (kind, key) in KINDS.iter().zip(&limiters) {
            kind.exhaust(node, key, LIMIT);
        }
        let acks: i64 = call(node, "WAIT 1 5000");
        assert_eq!(acks, 1, "the replica acknowledged the writes");
        let before: Vec<_> = limiters.iter().map(|k| snapshot(node, k)).collect();
        let replica_node = &mut cluster.conn(replica);
        call::<String>(replica_node, "READONLY");
        for (key, state) in limiters.iter().zip(&before) {
            assert_eq!(&snapshot(replica_node, key), state, "{key} on the replica");
        }

        // The client learns the current layout (PEEK writes nothing).
        let mut client = cluster.client();
        for (kind, key) in KINDS.iter().zip(&limiters) {
            kind.assert_denied(&mut client, key, LIMIT, "PEEK");
        }

        // Fail over while another client keeps writing counters on `master`; count
        // each counter's acknowledged calls and the calls that failed (they may or may
        // not have been applied).
        let stop = AtomicBool::new(false);
        let progress = AtomicU64::new(0);
        let (acked, failed) = std::thread::scope(|s| {
            let traffic = s.spawn(|| {
                let mut c = cluster.client();
                let mut acked = vec![0i64; busy.len()];
                let mut failed = vec![0i64; busy.len()];
                for (i, key) in busy.iter().enumerate().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let reply = redis::cmd("RL.FIXED")
                        .arg(key)
                        .arg(1_000_000_000_000i64)
                        .arg("3650d")
                        .query::<Vec<i64>>(&mut c);
                    match reply {
                        Ok(r) => {
                            assert_eq!(r[0], 1, "{key}: {r:?}");
                            acked[i] += 1;
                            progress.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => failed[i] += 1,
                    }
                }
                (acked, failed)
            });
            // Stops the traffic also when a check below panics (the scope joins it).
            let stop_traffic = SetOnDrop(&stop);
            let wait_for_traffic = |what: &str| {
                let start = progress.load(Ordering::Relaxed);
                wait_until(Duration::from_secs(20), what, || {
                    progress.load(Ordering::Relaxed) >= start + 200
                });
            };
            wait_for_traffic("traffic on the master");
            let ok: String = call(replica_node, "CLUSTER FAILOVER");
            assert_eq!(ok, "OK");
            wait_until(Duration::from_secs(20), "the replica becomes master", || {
                cluster.master_port(replica).is_none()
            });
            wait_for_traffic("traffic on the new master");
            drop(stop_traffic);
            traffic.join().unwrap()
        });
        cluster.wait_settled(Duration::from_secs(20));
        assert!(cluster.pairs().contains(&(replica, master)), "{:?}", cluster.pairs());

        // Through the same client, which follows the MOVED redirections: every limiter
        // is still exhausted, with the state and expiry the old master had.
        let new_master = &mut cluster.conn(replica);
        for ((kind, key), state) in KINDS.iter().zip(&limiters).zip(&before) {
            assert_eq!(cluster.master_of(key), replica);
            kind.assert_denied(&mut client, key, LIMIT, "");
            assert_eq!(&snapshot(new_master, key), state, "{key} on the new master");
        }
        // No acknowledged counter write was lost.
        for ((key, acked), failed) in busy.iter().zip(acked).zip(failed) {
            let value: String = call(new_master, &format!("GET {key}"));
            let count: i64 = value.rsplit(':').next().unwrap().parse().unwrap();
            assert!(
                acked <= count && count <= acked + failed,
                "{key}: {value} after {acked} acknowledged and {failed} failed calls"
            );
        }
    }

    fn block_answers_moved_before_waiting_and_a_failover_ends_waits_unspent(flavor) {
        let cluster = Cluster::start(flavor);
        let (master, replica) = cluster.pairs()[0];
        let key = keys_on(&cluster, master, "wait", 1).remove(0);
        let node = &mut cluster.conn(master);
        let words = format!("RL.FIXED {key} 1 3650d");
        assert_eq!(call::<Vec<i64>>(node, &words)[0], 1);
        // A node that does not serve the slot redirects at once.
        let other = cluster.masters().into_iter().find(|&p| p != master).unwrap();
        let started = std::time::Instant::now();
        let moved = redis::cmd("RL.FIXED")
            .arg(&key)
            .arg(&["1", "3650d", "BLOCK", "0"][..])
            .query::<Vec<i64>>(&mut cluster.conn(other))
            .unwrap_err();
        assert_eq!(moved.code(), Some("MOVED"), "{moved}");
        assert!(started.elapsed() < Duration::from_secs(2));
        // A waiter on the master; the replica takes over.
        let acks: i64 = call(node, "WAIT 1 5000");
        assert_eq!(acks, 1);
        let before = snapshot(node, &key);
        let mut waiter = cluster.conn(master);
        let blocked = format!("{words} BLOCK 0");
        let handle = std::thread::spawn(move || call_result(&mut waiter, &blocked));
        wait_until(Duration::from_secs(10), "the client waits", || {
            let info: String = call(node, "INFO rl");
            info.contains("rl_waits:waiting=1,")
        });
        let replica_node = &mut cluster.conn(replica);
        let ok: String = call(replica_node, "CLUSTER FAILOVER");
        assert_eq!(ok, "OK");
        let ended = handle.join().unwrap().unwrap_err();
        let ended = ended.to_uppercase();
        assert!(ended.contains("UNBLOCKED") || ended.contains("MOVED"), "{ended}");
        wait_until(Duration::from_secs(20), "the replica becomes master", || {
            cluster.master_port(replica).is_none()
        });
        cluster.wait_settled(Duration::from_secs(20));
        assert_eq!(snapshot(&mut cluster.conn(replica), &key), before);
        let info: String = call(node, "INFO rl");
        assert!(info.contains("rl_waits:waiting=0,"), "{info}");
    }
}

fn call_result(c: &mut redis::Connection, words: &str) -> Result<Vec<i64>, String> {
    let v: Vec<&str> = words.split_whitespace().collect();
    redis::cmd(v[0])
        .arg(&v[1..])
        .query(c)
        .map_err(|e| e.to_string())
}
