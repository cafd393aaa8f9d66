//! Production concerns: persistence (AOF, RDB, AOF rewrite, and loading the files
//! on a server without the module), memory limits (`deny-oom` under `noeviction`,
//! eviction, expiry) and ACL users restricted to the rate-limiting commands.

use crate::common::*;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// A limiter: command, parameters, and its `limit` field (the cost that exhausts it).
type Spec = (&'static str, &'static str, i64);

/// One limiter per command that cannot refill, roll over or expire while a test
/// runs. Fixed and sliding windows of 3650 d align to the Unix epoch: the current
/// one runs from December 2019 to December 2029.
const SLOW: [Spec; 6] = [
    ("RL.GCRA", "1 1h BURST 3", 3),
    ("RL.TOKENBUCKET", "3 1 1h", 3),
    ("RL.LEAKY", "3 1 1h", 3),
    ("RL.SLIDING", "3 3650d", 3),
    ("RL.SLIDINGLOG", "3 1h", 3),
    ("RL.FIXED", "3 3650d", 3),
];

/// Each command with parameters used for a fresh-key comparison: limit 5, one
/// unit per hour (or per 3650-day window).
const FIVE: [Spec; 6] = [
    ("RL.GCRA", "1 1h BURST 5", 5),
    ("RL.TOKENBUCKET", "5 1 1h", 5),
    ("RL.LEAKY", "5 1 1h", 5),
    ("RL.SLIDING", "5 3650d", 5),
    ("RL.SLIDINGLOG", "5 1h", 5),
    ("RL.FIXED", "5 3650d", 5),
];

const COMMANDS: [&str; 6] = [
    "RL.GCRA",
    "RL.TOKENBUCKET",
    "RL.LEAKY",
    "RL.SLIDING",
    "RL.SLIDINGLOG",
    "RL.FIXED",
];

fn sleep_ms(ms: i64) {
    std::thread::sleep(Duration::from_millis(ms.max(0) as u64));
}

/// Asserts `v` lies within `[lo, hi]`.
fn within(v: i64, lo: i64, hi: i64, what: &str) {
    assert!((lo..=hi).contains(&v), "{what}: {v} not in [{lo}, {hi}]");
}

/// Polls `done` every 20 ms for up to 10 s.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A key as clients read it: its type, its value (`GET` for a string, `ZRANGE …
/// WITHSCORES` for a sorted set, nil when absent) and `PEXPIRETIME`.
type View = (String, Value, i64);

fn view(c: &mut redis::Connection, key: &str) -> View {
    let kind: String = run(c, &format!("TYPE {key}"));
    let read = if kind == "zset" {
        format!("ZRANGE {key} 0 -1 WITHSCORES")
    } else {
        format!("GET {key}")
    };
    let (value, expiry): (Value, i64) = redis::pipe()
        .atomic()
        .add_command(command(&read))
        .add_command(command(&format!("PEXPIRETIME {key}")))
        .query(c)
        .unwrap_or_else(|e| panic!("read {key}: {e}"));
    (kind, value, expiry)
}

fn dump(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    run(c, &format!("DUMP {key}"))
}

/// An exhausted limiter: the call that is denied, its reply and the key's view,
/// all read before a restart.
struct Exhausted {
    words: String,
    key: String,
    reply: Vec<i64>,
    view: View,
}

/// Exhausts each limiter on key `<prefix>:<command>` with one call of `COST limit`,
/// then records a denied call of cost 1 and the key's view.
fn exhaust(c: &mut redis::Connection, prefix: &str, specs: &[Spec]) -> Vec<Exhausted> {
    specs
        .iter()
        .map(|&(cmd, params, limit)| {
            let key = format!("{prefix}:{cmd}");
            let first = rl(c, &format!("{cmd} {key} {params} COST {limit}"));
            assert_eq!(
                first[..4],
                [1, limit, 0, 0],
                "{cmd} {key} {params} COST {limit}"
            );
            let words = format!("{cmd} {key} {params}");
            let reply = rl(c, &words);
            assert_eq!(reply[..3], [0, limit, 0], "{words}");
            assert!(reply[3] > 0 && reply[4] > 0, "{words}: {reply:?}");
            let view = view(c, &key);
            Exhausted {
                words,
                key,
                reply,
                view,
            }
        })
        .collect()
}

/// After a restart: each denied call answers as before, its times shorter by at
/// most the time elapsed since `since` (taken before the calls were recorded),
/// and each key reads identically (value and absolute expiry).
fn assert_still_exhausted(c: &mut redis::Connection, recorded: &[Exhausted], since: Instant) {
    for r in recorded {
        let reply = rl(c, &r.words);
        let elapsed = since.elapsed().as_millis() as i64;
        assert_eq!(
            reply[..3],
            r.reply[..3],
            "{}: {reply:?} vs {:?}",
            r.words,
            r.reply
        );
        let what = format!("{} retry_after (before {:?})", r.words, r.reply);
        within(reply[3], r.reply[3] - elapsed - 1, r.reply[3], &what);
        let what = format!("{} reset_after (before {:?})", r.words, r.reply);
        within(reply[4], r.reply[4] - elapsed - 1, r.reply[4], &what);
        assert_eq!(view(c, &r.key), r.view, "{} after the restart", r.key);
    }
}

/// A fast limiter is still denied after the restart, and admitted again once its
/// `retry_after` has passed: the restored state keeps counting in real time.
fn assert_fast_limiter_recovers(c: &mut redis::Connection, fast: &Exhausted, since: Instant) {
    let reply = rl(c, &fast.words);
    let elapsed = since.elapsed().as_millis() as i64;
    assert_eq!(reply[..3], fast.reply[..3], "{}", fast.words);
    let what = format!("{} retry_after (before {:?})", fast.words, fast.reply);
    within(reply[3], fast.reply[3] - elapsed - 1, fast.reply[3], &what);
    // The restart took some time, so the wait really shrank.
    assert!(reply[3] < fast.reply[3], "{}: {reply:?}", fast.words);
    assert_eq!(
        view(c, &fast.key),
        fast.view,
        "{} after the restart",
        fast.key
    );
    sleep_ms(reply[3]);
    assert_eq!(rl(c, &fast.words)[0], 1, "{} after retry_after", fast.words);
}

/// The whole persistence scenario: exhaust every command's slow limiter and one
/// fast limiter, `before_restart` (e.g. `SAVE`), restart, compare.
fn survives_restart(
    flavor: Flavor,
    args: &[&str],
    fast: Spec,
    before_restart: impl FnOnce(&mut redis::Connection) -> Vec<Exhausted>,
) {
    let mut s = Server::start_with(flavor, args);
    let c = &mut s.conn();
    let since = Instant::now();
    let mut recorded = exhaust(c, "slow", &SLOW);
    let fast = exhaust(c, "fast", &[fast]).pop().unwrap();
    recorded.extend(before_restart(c));
    let keys: i64 = run(c, "DBSIZE");

    s.restart();
    let c = &mut s.conn();
    assert_eq!(run::<i64>(c, "DBSIZE"), keys, "keys after the restart");
    assert_still_exhausted(c, &recorded, since);
    assert_fast_limiter_recovers(c, &fast, since);
}

server_tests! {
    fn aof_restart_keeps_exhausted_limiters(flavor) {
        super::aof_restart_keeps_exhausted_limiters(flavor)
    }

    fn rdb_save_restart_keeps_exhausted_limiters(flavor) {
        super::rdb_save_restart_keeps_exhausted_limiters(flavor)
    }

    fn bgrewriteaof_restart_keeps_exhausted_limiters(flavor) {
        super::bgrewriteaof_restart_keeps_exhausted_limiters(flavor)
    }

    fn a_server_without_the_module_loads_the_state_byte_identical(flavor) {
        super::a_server_without_the_module_loads_the_state_byte_identical(flavor)
    }

    fn noeviction_refuses_writes_with_oom_and_corrupts_nothing(flavor) {
        super::noeviction_refuses_writes_with_oom_and_corrupts_nothing(flavor)
    }

    fn an_evicted_limiter_behaves_like_an_absent_one(flavor) {
        super::an_evicted_limiter_behaves_like_an_absent_one(flavor)
    }

    fn no_key_outlives_its_documented_expiry(flavor) {
        super::no_key_outlives_its_documented_expiry(flavor)
    }

    fn acl_user_limited_to_rl_keys(flavor) {
        super::acl_user_limited_to_rl_keys(flavor)
    }
}

const AOF_ALWAYS: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

fn aof_restart_keeps_exhausted_limiters(flavor: Flavor) {
    survives_restart(flavor, &AOF_ALWAYS, ("RL.GCRA", "1 4s", 1), |c| {
        assert_eq!(info(c, "persistence", "aof_enabled"), "1");
        Vec::new()
    });
}

fn rdb_save_restart_keeps_exhausted_limiters(flavor: Flavor) {
    let args = ["--appendonly", "no"];
    survives_restart(flavor, &args, ("RL.SLIDINGLOG", "1 4s", 1), |c| {
        assert_eq!(run::<String>(c, "SAVE"), "OK");
        // `restart()` shuts down with NOSAVE: the RDB written here is what loads.
        Vec::new()
    });
}

fn bgrewriteaof_restart_keeps_exhausted_limiters(flavor: Flavor) {
    survives_restart(flavor, &AOF_ALWAYS, ("RL.TOKENBUCKET", "1 1 4s", 1), |c| {
        let _: Value = run(c, "BGREWRITEAOF");
        wait_for("the AOF rewrite", || {
            info(c, "persistence", "aof_rewrite_in_progress") == "0"
                && info(c, "persistence", "aof_rewrite_scheduled") == "0"
        });
        assert_eq!(info(c, "persistence", "aof_last_bgrewrite_status"), "ok");
        assert_eq!(info(c, "persistence", "aof_rewrites"), "1");
        // Writes after the rewrite land in the new incremental file.
        exhaust(c, "after-rewrite", &SLOW)
    });
}

/// Long-lived parameters (nothing expires during the test) and 100 ms ones.
const ALGOS: [(&str, &str, &str); 6] = [
    ("RL.GCRA", "5 1h BURST 3", "1 100ms BURST 2"),
    ("RL.TOKENBUCKET", "5 2 1h", "2 1 100ms"),
    ("RL.LEAKY", "4 2 1h", "2 1 100ms"),
    ("RL.SLIDING", "5 1d", "3 100ms"),
    ("RL.SLIDINGLOG", "5 1h", "3 100ms"),
    ("RL.FIXED", "5 1d", "3 100ms"),
];

/// Parameters with a 10 ms window or period, in the order of `ALGOS`.
const TINY: [&str; 6] = [
    "5 10ms BURST 5",
    "5 5 10ms",
    "5 5 10ms",
    "5 10ms",
    "5 10ms",
    "5 10ms",
];

/// Options of the traffic's calls, taken in turn: admitted, denied and quiet calls.
/// Every three consecutive options include a write, so every key gets written.
const CALLS: [&str; 6] = ["COST 1", "COST 0", "COST 2", "PEEK", "COST 1", "COST 9"];

/// Copies the files of directory `from` into a new directory `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The live keys of a server, sorted (`KEYS` skips expired keys).
fn keys(c: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = run(c, "KEYS *");
    keys.sort();
    keys
}

fn a_server_without_the_module_loads_the_state_byte_identical(flavor: Flavor) {
    let source = Server::start_with(flavor, &AOF_ALWAYS);
    let c = &mut source.conn();
    // Per command: `long:<i>` keys see only long-lived calls; `mixed` sees 100 ms
    // calls 60 ms apart (windows roll over), then plan changes (below); `gone`
    // sees only 100 ms calls and expires before the files are loaded.
    for round in 0..4 {
        for (a, (cmd, long, short)) in ALGOS.iter().enumerate() {
            for i in 0..3 {
                let opts = CALLS[(a + i + round) % CALLS.len()];
                let _ = rl(c, &format!("{cmd} {cmd}:long:{i} {long} {opts}"));
            }
            for key in ["mixed", "gone"] {
                let _ = rl(c, &format!("{cmd} {cmd}:{key} {short} COST 1"));
            }
        }
        sleep_ms(60);
    }
    // Plan changes on `mixed`: long-lived, then a 10 ms window 20 ms later (the
    // sliding log admits it and drops the lapsed entries, up to 64: `ZREM`; the
    // GCRA family keeps its debt), then long-lived again.
    for (cmd, long, _) in ALGOS {
        let _ = rl(c, &format!("{cmd} {cmd}:mixed {long} COST 1"));
    }
    sleep_ms(20);
    for ((cmd, long, _), tiny) in ALGOS.iter().zip(TINY) {
        let words = format!("{cmd} {cmd}:mixed {tiny} COST 1");
        let allowed = rl(c, &words)[0];
        assert!(*cmd != "RL.SLIDINGLOG" || allowed == 1, "{words}");
        let words = format!("{cmd} {cmd}:mixed {long} COST 1");
        assert_eq!(rl(c, &words)[0], 1, "{words}");
    }
    // Every `gone` key has expired (the latest expiry was at most 200 ms after
    // the last round).
    sleep_ms(300);
    for (cmd, _, _) in ALGOS {
        assert_eq!(
            run::<i64>(c, &format!("EXISTS {cmd}:gone")),
            0,
            "{cmd}:gone"
        );
    }
    let expected = keys(c);
    assert_eq!(expected.len(), ALGOS.len() * 4, "{expected:?}");

    // The AOF as the module wrote it: plain commands only, sliding-log drops included.
    let aof_dir = source.dir.join("appendonlydir");
    let mut aof = Vec::new();
    for entry in std::fs::read_dir(&aof_dir).unwrap() {
        aof.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let aof = String::from_utf8_lossy(&aof);
    for word in ["$4\r\nZREM\r\n", "ZADD", "PEXPIREAT", "PXAT"] {
        assert!(
            aof.to_ascii_uppercase().contains(word),
            "the AOF has no {word}"
        );
    }
    assert!(
        !aof.to_ascii_uppercase().contains("ZREMRANGEBYSCORE"),
        "a bounded drop replicates ZREM"
    );
    for cmd in COMMANDS {
        let resp = format!("${}\r\n{cmd}\r\n", cmd.len()).to_ascii_lowercase();
        let found = aof.to_ascii_lowercase().contains(&resp);
        assert!(!found, "the AOF holds an {cmd} command");
    }

    // Copies of the AOF and of an RDB, each loaded by a server without the module.
    assert_eq!(run::<String>(c, "SAVE"), "OK");
    let aof_copy = source.dir.join("aof-copy");
    copy_dir(&aof_dir, &aof_copy.join("appendonlydir"));
    let rdb_copy = source.dir.join("rdb-copy");
    std::fs::create_dir_all(&rdb_copy).unwrap();
    std::fs::copy(source.dir.join("dump.rdb"), rdb_copy.join("dump.rdb")).unwrap();
    // The harness passes its own `--dir` first; the last one given wins.
    let aof_dir_arg = aof_copy.to_str().unwrap();
    let rdb_dir_arg = rdb_copy.to_str().unwrap();
    let loaded = [
        Server::start_with(
            flavor,
            &["--no-module", "--appendonly", "yes", "--dir", aof_dir_arg],
        ),
        Server::start_with(
            flavor,
            &["--no-module", "--appendonly", "no", "--dir", rdb_dir_arg],
        ),
    ];
    for (server, (from, dir)) in loaded.iter().zip([("AOF", &aof_copy), ("RDB", &rdb_copy)]) {
        let l = &mut server.conn();
        // Valkey lists its built-in `lua` scripting engine as a module.
        let modules: Vec<HashMap<String, Value>> = run(l, "MODULE LIST");
        let rl_loaded = modules
            .iter()
            .any(|m| m.get("name") == Some(&Value::BulkString(b"rl".to_vec())));
        assert!(!rl_loaded, "{from}: the module is loaded: {modules:?}");
        let config: Vec<String> = run(l, "CONFIG GET dir");
        assert_eq!(
            Path::new(&config[1]),
            dir.as_path(),
            "{from}: the server's dir"
        );
        assert_eq!(keys(l), expected, "{from}: the loaded keys");
        for key in &expected {
            assert_eq!(view(l, key), view(c, key), "{from}: {key}");
            assert_eq!(dump(l, key), dump(c, key), "{from}: DUMP {key}");
        }
    }
}

fn noeviction_refuses_writes_with_oom_and_corrupts_nothing(flavor: Flavor) {
    let s = Server::start_with(flavor, &["--maxmemory-policy", "noeviction"]);
    let c = &mut s.conn();
    let mut before = Vec::new();
    for (cmd, params, limit) in SLOW {
        let key = format!("rl:{cmd}");
        assert_eq!(
            rl(c, &format!("{cmd} {key} {params}"))[..3],
            [1, limit, limit - 1]
        );
        before.push((dump(c, &key), run::<i64>(c, &format!("PEXPIRETIME {key}"))));
    }
    let keys: i64 = run(c, "DBSIZE");

    // Used memory is now far above the limit.
    assert_eq!(run::<String>(c, "CONFIG SET maxmemory 1"), "OK");
    for (cmd, params, _) in SLOW {
        for key in [format!("rl:{cmd}"), format!("new:{cmd}")] {
            for opts in ["", "COST 2", "COST 0", "PEEK"] {
                let words = format!("{cmd} {key} {params} {opts}");
                let err = rl_err(c, &words);
                assert!(err.starts_with("OOM"), "{words}: {err}");
            }
        }
    }
    for ((cmd, _, _), (dumped, expiry)) in SLOW.iter().zip(&before) {
        let key = format!("rl:{cmd}");
        assert_eq!(dump(c, &key), *dumped, "{key} changed under OOM");
        assert_eq!(
            run::<i64>(c, &format!("PEXPIRETIME {key}")),
            *expiry,
            "{key}"
        );
    }
    assert_eq!(run::<i64>(c, "DBSIZE"), keys, "a key was created under OOM");

    // Without the limit, every limiter continues from its state before the refusals.
    assert_eq!(run::<String>(c, "CONFIG SET maxmemory 0"), "OK");
    for (cmd, params, limit) in SLOW {
        let words = format!("{cmd} rl:{cmd} {params}");
        // (`retry_after` of an admitted RL.LEAKY call is its delay in the queue.)
        assert_eq!(rl(c, &words)[..3], [1, limit, limit - 2], "{words}");
        let words = format!("{cmd} new:{cmd} {params}");
        assert_eq!(rl(c, &words)[..4], [1, limit, limit - 1, 0], "{words}");
    }
}

/// Keys named like the limiters of `FIVE`, `<prefix>:<command>`, still present.
fn live_limiters(c: &mut redis::Connection, prefix: &str) -> usize {
    // `KEYS` does not touch the keys' LRU clock (`EXISTS` would).
    run::<Vec<String>>(c, &format!("KEYS {prefix}:*")).len()
}

/// Exhausts a limiter per command, fills memory under `policy` until every
/// limiter has been evicted, then compares each evicted limiter's next reply
/// with a fresh key's, both in one transaction.
fn evict_limiters(flavor: Flavor, policy: &str) {
    let s = Server::start_with(flavor, &["--maxmemory-policy", policy]);
    let c = &mut s.conn();
    for (cmd, params, limit) in FIVE {
        let words = format!("evicted:{cmd}");
        let r = rl(c, &format!("{cmd} {words} {params} COST {limit}"));
        assert_eq!(r[..3], [1, limit, 0], "{cmd}");
        assert_eq!(
            rl(c, &format!("{cmd} {words} {params}"))[..3],
            [0, limit, 0]
        );
    }

    // A limit 1 MB above the current usage, then 16 KB values without expiry
    // until eviction has taken every limiter.
    let used: i64 = info(c, "memory", "used_memory").parse().unwrap();
    let limit = used + (1 << 20);
    assert_eq!(
        run::<String>(c, &format!("CONFIG SET maxmemory {limit}")),
        "OK"
    );
    let filler = vec![b'x'; 16 * 1024];
    let mut written = 0;
    while live_limiters(c, "evicted") > 0 {
        assert!(
            written < 20_000,
            "{policy}: limiters still present after {written} fillers"
        );
        let set: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("filler:{written}"))
            .arg(&filler)
            .query(c);
        if let Err(e) = set {
            // Only once nothing evictable is left may a write be refused.
            assert!(error_text(&e).starts_with("OOM"), "{e}");
            assert_eq!(
                live_limiters(c, "evicted"),
                0,
                "{policy}: OOM before eviction: {e}"
            );
        }
        written += 1;
    }
    let evicted: i64 = info(c, "stats", "evicted_keys").parse().unwrap();
    assert!(
        evicted >= FIVE.len() as i64,
        "{policy}: {evicted} keys evicted"
    );

    // Room again: an evicted limiter answers exactly as a key never used.
    assert_eq!(run::<String>(c, "CONFIG SET maxmemory 0"), "OK");
    for (cmd, params, limit) in FIVE {
        let (evicted, fresh): (Vec<i64>, Vec<i64>) = redis::pipe()
            .atomic()
            .add_command(command(&format!("{cmd} evicted:{cmd} {params}")))
            .add_command(command(&format!("{cmd} fresh:{cmd} {params}")))
            .query(c)
            .unwrap();
        assert_eq!(evicted[..4], [1, limit, limit - 1, 0], "{policy}: {cmd}");
        assert_eq!(evicted[..4], fresh[..4], "{policy}: {cmd}");
        // Window-aligned commands' reset depends on the call's instant: the two
        // calls are microseconds apart.
        within(
            evicted[4] - fresh[4],
            -1,
            1,
            &format!("{policy}: {cmd} reset_after"),
        );
        let (kind, value, _) = view(c, &format!("evicted:{cmd}"));
        let (fresh_kind, fresh_value, _) = view(c, &format!("fresh:{cmd}"));
        assert_eq!(kind, fresh_kind, "{cmd}");
        if let (Value::BulkString(a), Value::BulkString(b)) = (&value, &fresh_value) {
            // Same format and fields but the time: `gcra:<ns>`, `fixed:<start>:1`, ...
            let shape = |v: &[u8]| {
                let text = String::from_utf8_lossy(v).to_string();
                let mut fields: Vec<String> = text.split(':').map(String::from).collect();
                if matches!(cmd, "RL.GCRA" | "RL.TOKENBUCKET" | "RL.LEAKY") {
                    fields.pop();
                }
                fields
            };
            assert_eq!(shape(a), shape(b), "{cmd}");
        }
    }
}

fn an_evicted_limiter_behaves_like_an_absent_one(flavor: Flavor) {
    // Only the limiters have an expiry: `volatile-ttl` must evict exactly them.
    evict_limiters(flavor, "volatile-ttl");
    // Everything is evictable: the limiters go among the fillers.
    evict_limiters(flavor, "allkeys-lru");
}

/// Short-lived limiters, with the window (ms) their documented expiry uses.
const SHORT: [(&str, &str, i64); 6] = [
    ("RL.GCRA", "2 100ms BURST 2", 0),
    ("RL.TOKENBUCKET", "3 3 300ms", 0),
    ("RL.LEAKY", "2 1 50ms", 0),
    ("RL.SLIDING", "3 200ms", 200),
    ("RL.SLIDINGLOG", "3 250ms", 250),
    ("RL.FIXED", "3 300ms", 300),
];

/// The expiry (ms) a key's state implies, from the state formats in docs/commands.md.
fn documented_expiry(key: &str, (kind, value, _): &View, window_ms: i64) -> i64 {
    match value {
        Value::BulkString(bytes) => {
            let text = String::from_utf8(bytes.clone()).unwrap();
            let fields: Vec<&str> = text.split(':').collect();
            let number = |i: usize| -> i128 { fields[i].parse().unwrap() };
            match fields[0] {
                // The idle instant in ns, rounded up to the ms.
                "gcra" | "bucket" | "leaky" => (number(1) as u128).div_ceil(1_000_000) as i64,
                "fixed" => number(1) as i64 + window_ms,
                "sliding" => number(1) as i64 + 2 * window_ms,
                _ => panic!("{key}: unknown state {text:?}"),
            }
        }
        Value::Array(items) => {
            assert_eq!(kind, "zset", "{key}");
            // Members and scores alternate; the newest entry leaves the window at
            // its score (µs) plus the window.
            let newest = items
                .chunks(2)
                .map(|pair| match &pair[1] {
                    Value::BulkString(s) => String::from_utf8_lossy(s).parse::<i64>().unwrap(),
                    other => panic!("{key}: score {other:?}"),
                })
                .max()
                .unwrap_or_else(|| panic!("{key}: empty sorted set"));
            ((newest + window_ms * 1000) as u64).div_ceil(1000) as i64
        }
        other => panic!("{key}: {other:?}"),
    }
}

fn no_key_outlives_its_documented_expiry(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    let mut latest = 0;
    let mut checked = 0;
    // Rounds 70 ms apart: windows roll over, buckets partly drain, entries age out.
    for round in 0..5 {
        for (cmd, params, window_ms) in SHORT {
            for k in 0..2 {
                let key = format!("{cmd}:{k}");
                let cost = 1 + (round + k) % 2;
                let _ = rl(c, &format!("{cmd} {key} {params} COST {cost}"));
                let v = view(c, &key);
                if v.2 == -2 {
                    continue; // denied on a key that expired meanwhile: nothing stored
                }
                let expected = documented_expiry(&key, &v, window_ms);
                assert_eq!(v.2, expected, "{key} holds {:?}", v.1);
                latest = latest.max(v.2);
                checked += 1;
            }
        }
        sleep_ms(70);
    }
    assert!(checked >= 50, "only {checked} keys checked");
    // Past the latest expiry, nothing is left.
    sleep_ms(latest + 20 - now_ms());
    let left: Vec<String> = run(c, "KEYS *");
    assert_eq!(left, Vec::<String>::new(), "keys outlived their expiry");
    // `KEYS` skips expired keys without deleting them (Redis 7.0, Valkey 9.1);
    // reading each one deletes it, after which the database is empty: no key
    // was kept alive, and none was created that the test did not expect.
    for (cmd, _, _) in SHORT {
        for k in 0..2 {
            assert_eq!(run::<i64>(c, &format!("EXISTS {cmd}:{k}")), 0);
        }
    }
    assert_eq!(run::<i64>(c, "DBSIZE"), 0);
}

fn acl_user_limited_to_rl_keys(flavor: Flavor) {
    let s = Server::start(flavor);
    let admin = &mut s.conn();
    let setuser = "ACL SETUSER limiter on >secret ~rl:* resetchannels -@all \
                   +rl.gcra +rl.tokenbucket +rl.leaky +rl.sliding +rl.slidinglog +rl.fixed";
    assert_eq!(run::<String>(admin, setuser), "OK");
    let _: Value = run(admin, "SET other:secret x");

    let url = format!("redis://limiter:secret@127.0.0.1:{}/", s.port);
    let c = &mut redis::Client::open(url).unwrap().get_connection().unwrap();
    for (cmd, params, limit) in SLOW {
        let words = format!("{cmd} rl:{cmd} {params}");
        assert_eq!(rl(c, &words)[..3], [1, limit, limit - 1], "{words}");
        assert_eq!(rl(c, &format!("{words} PEEK"))[..3], [1, limit, limit - 2]);
        for key in ["other:x", "other:secret", "RL:x", "x"] {
            let words = format!("{cmd} {key} {params}");
            let err = rl_err(c, &words);
            assert!(err.starts_with("NOPERM"), "{words}: {err}");
        }
    }
    for words in [
        "GET rl:RL.FIXED",
        "GET other:secret",
        "SET rl:x 1",
        "DEL rl:RL.GCRA",
        "KEYS *",
    ] {
        let err = rl_err(c, words);
        assert!(err.starts_with("NOPERM"), "{words}: {err}");
    }
    // The refused calls changed nothing.
    assert_eq!(run::<i64>(admin, "EXISTS other:x"), 0);
    assert_eq!(run::<String>(admin, "GET other:secret"), "x");
    assert_eq!(run::<i64>(admin, "DBSIZE"), 7);

    // Where the server lets modules declare ACL categories (Valkey, Redis 7.2+),
    // the commands are in @write and @fast or @slow, like core commands with the
    // same flags; Redis 7.0 gives module commands none (COMMAND INFO's 7th field).
    let categorized = flavor == Flavor::Valkey;
    for cmd in COMMANDS {
        let info: Vec<Vec<Value>> = run(admin, &format!("COMMAND INFO {cmd}"));
        let categories = format!("{:?}", info[0][6]);
        assert_eq!(
            categories.contains("@write"),
            categorized,
            "{cmd}: {categories}"
        );
    }
    let write: Vec<String> = run(admin, "ACL CAT write");
    for cmd in COMMANDS {
        let listed = write.iter().any(|n| n.eq_ignore_ascii_case(cmd));
        assert_eq!(listed, categorized, "@write and {cmd}");
    }
    // So categories grant and revoke them exactly where they are declared; `+@all`
    // always grants them. And a key pattern must allow both reading and writing.
    let users = [
        ("bycategory", "~* +@write +@read +@fast +@slow", categorized),
        ("allbutwrite", "~* +@all -@write", !categorized),
        ("readkeys", "%R~rl:* +@all", false),
        ("writekeys", "%W~rl:* +@all", false),
    ];
    for (user, rules, allowed) in users {
        let setuser = format!("ACL SETUSER {user} on >pw {rules}");
        assert_eq!(run::<String>(admin, &setuser), "OK");
        let url = format!("redis://{user}:pw@127.0.0.1:{}/", s.port);
        let u = &mut redis::Client::open(url).unwrap().get_connection().unwrap();
        for (cmd, params, _) in SLOW {
            for opts in ["", "PEEK", "COST 0"] {
                let words = format!("{cmd} rl:{user}:{cmd} {params} {opts}");
                if allowed {
                    assert_eq!(rl(u, &words)[0], 1, "{words} as {user} ({rules})");
                } else {
                    let err = rl_err(u, &words);
                    assert!(
                        err.starts_with("NOPERM"),
                        "{words} as {user} ({rules}): {err}"
                    );
                }
            }
        }
    }
}
