//! `BLOCK ms` against real servers with real concurrent clients: arrival order,
//! spacing, timeouts, disconnects, `CLIENT UNBLOCK`, wakeups by `RL.RELEASE`,
//! `REFUND` and `DEL`, decisions at once where Redis cannot block, replication
//! to a module-less replica, AOF restarts with waiters pending, `INFO rl`.

use crate::common::raw::{wait_for, waits};
use crate::common::*;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Waits until `n` clients wait.
fn until_waiting(c: &mut redis::Connection, n: u64) {
    wait_for(&format!("{n} waiting"), || waits(c).0 == n);
}

type Outcome = (Result<Vec<i64>, String>, Instant);

/// A client running one command in its own thread.
struct Client {
    id: i64,
    handle: JoinHandle<Outcome>,
}

impl Client {
    fn join(self) -> Outcome {
        self.handle.join().expect("client thread")
    }
    fn reply(self) -> Vec<i64> {
        self.join().0.expect("a reply")
    }
}

/// Sends `words` from a new connection, in its own thread.
fn send(s: &Server, words: &str) -> Client {
    let mut c = s.conn();
    let id: i64 = run(&mut c, "CLIENT ID");
    let cmd = command(words);
    let handle = std::thread::spawn(move || {
        let r = cmd.query::<Vec<i64>>(&mut c).map_err(|e| error_text(&e));
        (r, Instant::now())
    });
    Client { id, handle }
}

/// Sends `words` and waits until it has joined its queue (it may already have
/// been admitted or timed out: a loaded machine can be slower than a limiter),
/// so that calls sent one after the other arrive in that order. `_n` is the
/// number of waiters expected on an idle machine.
fn enqueue(s: &Server, c: &mut redis::Connection, words: &str, _n: u64) -> Client {
    let entered = |c: &mut redis::Connection| {
        let (w, a, t) = waits(c);
        w + a + t
    };
    let before = entered(c);
    let client = send(s, words);
    wait_for("the call to wait", || entered(c) > before);
    client
}

/// What a key holds, as replicas must hold it too.
fn state(c: &mut redis::Connection, key: &str) -> (String, Option<Vec<u8>>, i64) {
    let kind: String = run(c, &format!("TYPE {key}"));
    let value = match kind.as_str() {
        "string" => run(c, &format!("GET {key}")),
        "zset" => {
            let v: Vec<Vec<u8>> = run(c, &format!("ZRANGE {key} 0 -1 WITHSCORES"));
            Some(v.concat())
        }
        _ => None,
    };
    (kind, value, pexpiretime(c, key))
}

server_tests! {
    fn waiters_are_admitted_in_arrival_order_about_100ms_apart(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 10 per second, no burst: one admission every 100 ms.
        let t0 = Instant::now();
        assert_eq!(rl(c, "RL.GCRA g 10 1s")[0], 1);
        let n = 6;
        let clients: Vec<Client> = (1..=n)
            .map(|i| enqueue(&s, c, "RL.GCRA g 10 1s BLOCK 10000", i))
            .collect();
        let start = Instant::now();
        let outcomes: Vec<Outcome> = clients.into_iter().map(Client::join).collect();
        for (r, _) in &outcomes {
            assert_eq!(r.as_ref().unwrap()[..4], [1, 1, 0, 0], "{r:?}");
        }
        // Replies come in arrival order, about 100 ms apart: the server admits
        // exactly 100 ms apart; the tolerances cover a loaded 2-core machine
        // scheduling the client threads (and the server) late.
        let times: Vec<Instant> = outcomes.iter().map(|o| o.1).collect();
        for pair in times.windows(2) {
            assert!(pair[1] > pair[0], "replies out of arrival order");
            let gap = pair[1].duration_since(pair[0]).as_millis() as i64;
            within(gap, 1, 1000);
        }
        let span = times[times.len() - 1].duration_since(times[0]).as_millis() as i64;
        within(span, (n as i64 - 1) * 80, (n as i64 - 1) * 100 + 1500);
        // Never early: the last of the 6 waiters is admitted 600 ms after the first call.
        let last = times[times.len() - 1].duration_since(t0).as_millis() as i64;
        assert!(last >= n as i64 * 100 - 5, "the last waiter was admitted after {last} ms");
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(waits(c), (0, n, 0));
    }

    fn a_later_smaller_request_never_overtakes_and_no_call_steals_a_turn(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // 5 tokens, one back every 100 ms.
        assert_eq!(rl(c, "RL.TOKENBUCKET t 5 10 1s COST 5")[0], 1);
        let order = Arc::new(Mutex::new(Vec::new()));
        let big = enqueue(&s, c, "RL.TOKENBUCKET t 5 10 1s COST 5 BLOCK 10000", 1);
        let small = enqueue(&s, c, "RL.TOKENBUCKET t 5 10 1s COST 1 BLOCK 10000", 2);
        // 250 ms later, 2 tokens are back: a call without BLOCK that they would
        // cover is denied, as the waiters come first, and so is RL.PEEK.
        std::thread::sleep(Duration::from_millis(250));
        let denied = rl(c, "RL.TOKENBUCKET t 5 10 1s COST 1");
        assert_eq!(denied[..3], [0, 5, 0], "{denied:?}");
        assert!(denied[3] >= 1, "{denied:?}");
        assert_eq!(rl(c, "RL.PEEK TOKENBUCKET t 5 10 1s COST 1")[..3], [0, 5, 0]);
        assert_eq!(rl(c, "RL.TOKENBUCKET t 5 10 1s COST 1 PEEK")[..3], [0, 5, 0]);
        let all: Value = run(c, "RL.ALL 1 t TOKENBUCKET 5 10 1s COST 1");
        let Value::Array(all) = all else { panic!("{all:?}") };
        assert_eq!(all[0], Value::Int(0), "RL.ALL stole a turn");
        // COST 0 reports the state and is allowed.
        assert_eq!(rl(c, "RL.TOKENBUCKET t 5 10 1s COST 0")[0], 1);
        let o = order.clone();
        let watcher = std::thread::spawn(move || {
            let (r, at) = big.join();
            o.lock().unwrap().push(("big", at));
            r
        });
        let (small_reply, small_at) = small.join();
        let big_reply = watcher.join().unwrap();
        let big_at = order.lock().unwrap()[0].1;
        assert!(big_at <= small_at, "the smaller, later request overtook");
        assert_eq!(big_reply.unwrap()[..3], [1, 5, 0]);
        assert_eq!(small_reply.unwrap()[..3], [1, 5, 0]);
    }

    fn a_wait_ends_at_its_timeout_with_the_denial_of_that_instant(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        let before = state(c, "f");
        let sent = Instant::now();
        let client = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 200", 1);
        let (reply, at) = client.join();
        let reply = reply.unwrap();
        let waited = at.duration_since(sent).as_millis() as i64;
        assert!(waited >= 195, "answered after {waited} ms");
        assert_eq!(reply[..3], [0, 1, 0]);
        within(reply[3], 1, HOUR_MS);
        assert_eq!(state(c, "f"), before);
        assert_eq!(waits(c), (0, 0, 1));
    }

    fn never_admissible_multi_scripts_and_peek_decide_at_once(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let at_once = |c: &mut redis::Connection, words: &str| {
            let t = Instant::now();
            let r = rl(c, words);
            assert!(t.elapsed() < Duration::from_millis(1000), "{words} waited");
            r
        };
        // cost > limit: never admissible, answered at once.
        assert_eq!(at_once(c, "RL.GCRA g 1 1s COST 2 BLOCK 0"), vec![0, 1, 1, -1, 0]);
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        assert_eq!(at_once(c, "RL.FIXED f 1 1h PEEK BLOCK 0")[0], 0);
        assert_eq!(at_once(c, "RL.FIXED f 1 1h COST 0 BLOCK 0")[0], 1);
        // MULTI: decided at once, as BLPOP is there.
        let _: () = run(c, "MULTI");
        let _: () = run(c, "RL.FIXED f 1 1h BLOCK 0");
        let t = Instant::now();
        let replies: Vec<Vec<i64>> = run(c, "EXEC");
        assert!(t.elapsed() < Duration::from_millis(1000));
        assert_eq!(replies[0][..3], [0, 1, 0]);
        // Lua and functions.
        let script = "return redis.call('RL.FIXED', KEYS[1], '1', '1h', 'BLOCK', '0')";
        let t = Instant::now();
        let r: Vec<i64> = redis::cmd("EVAL").arg(script).arg(1).arg("f").query(c).unwrap();
        assert!(t.elapsed() < Duration::from_millis(1000));
        assert_eq!(r[..3], [0, 1, 0]);
        assert_eq!(waits(c), (0, 0, 0));
        // Errors.
        assert_eq!(rl_err(c, "RL.FIXED f 1 1h BLOCK"), "ERR option BLOCK needs a value");
        assert_eq!(
            rl_err(c, "RL.FIXED f 1 1h BLOCK -1"),
            "ERR BLOCK must be an integer from 0 to 315360000000"
        );
        assert_eq!(rl_err(c, "RL.FIXED f 1 1h BLOCK 1 BLOCK 1"), "ERR option BLOCK given more than once");
        assert!(rl_err(c, "RL.ALL 1 f FIXED 1 1h BLOCK 10").starts_with("ERR"));
    }

    fn a_client_that_disconnects_loses_its_place_and_spends_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.ACQUIRE sem 1 1h holder")[0], 1);
        let gone = enqueue(&s, c, "RL.ACQUIRE sem 1 1h gone BLOCK 0", 1);
        let next = enqueue(&s, c, "RL.ACQUIRE sem 1 1h next BLOCK 0", 2);
        let _: () = run(c, &format!("CLIENT KILL ID {}", gone.id));
        assert!(gone.join().0.is_err());
        until_waiting(c, 1);
        assert_eq!(run::<i64>(c, "RL.RELEASE sem holder"), 1);
        assert_eq!(next.reply()[..3], [1, 1, 0]);
        let members: Vec<String> = run(c, "ZRANGE sem 0 -1");
        assert_eq!(members, vec!["lease:next"]);
        assert_eq!(waits(c), (0, 1, 0));
    }

    fn client_unblock_ends_a_wait_with_the_denial_or_an_error(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.GCRA g 1 1h")[0], 1);
        let before = state(c, "g");
        let a = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 0", 1);
        assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {}", a.id)), 1);
        let r = a.reply();
        assert_eq!(r[..3], [0, 1, 0]);
        within(r[3], HOUR_MS - 5000, HOUR_MS);
        let b = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 0", 1);
        assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {} ERROR", b.id)), 1);
        let err = b.join().0.unwrap_err();
        assert_eq!(err, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
        assert_eq!(state(c, "g"), before);
        assert_eq!(waits(c).0, 0);
    }

    fn acquire_block_is_a_semaphore_woken_by_release_refund_and_del(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        // Leases last an hour: only RL.RELEASE can free a slot in time.
        assert_eq!(rl(c, "RL.ACQUIRE sem 2 1h a")[0], 1);
        assert_eq!(rl(c, "RL.ACQUIRE sem 2 1h b")[0], 1);
        let w = enqueue(&s, c, "RL.ACQUIRE sem 2 1h c BLOCK 0", 1);
        // A holder renews while others wait.
        assert_eq!(rl(c, "RL.ACQUIRE sem 2 1h a")[0], 1);
        let released = Instant::now();
        assert_eq!(run::<i64>(c, "RL.RELEASE sem a"), 1);
        let (r, at) = w.join();
        assert_eq!(r.unwrap()[..3], [1, 2, 0]);
        assert!(at.duration_since(released) < Duration::from_millis(1000));
        // REFUND wakes a waiter.
        assert_eq!(rl(c, "RL.GCRA g 1 1h")[0], 1);
        let w = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 0", 1);
        assert_eq!(rl(c, "RL.GCRA g 1 1h REFUND 1")[0], 1);
        assert_eq!(w.reply()[0], 1);
        // DEL of the key wakes a waiter.
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        let w = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", 1);
        let _: i64 = run(c, "DEL f");
        assert_eq!(w.reply()[..3], [1, 1, 0]);
        // So do UNLINK and a shorter expiry.
        let w = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", 1);
        let _: i64 = run(c, "UNLINK f");
        assert_eq!(w.reply()[0], 1);
        let w = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", 1);
        let _: i64 = run(c, "PEXPIRE f 1");
        assert_eq!(w.reply()[0], 1);
        assert_eq!(waits(c), (0, 5, 0));
    }

    fn a_module_less_replica_holds_what_the_master_holds_after_waits(flavor) {
        let master = Server::start_master(flavor);
        let replicas = [master.replica(false), master.replica(true)];
        let m = &mut master.conn();
        let keys = [
            ("g", "RL.GCRA g 20 1s BURST 2"),
            ("l", "RL.SLIDINGLOG l 2 300ms"),
            ("b", "RL.TOKENBUCKET b 2 10 1s"),
        ];
        for (_, cmd) in keys {
            assert_eq!(rl(m, &format!("{cmd} COST 2"))[0], 1);
        }
        let mut clients = Vec::new();
        for (i, (_, cmd)) in keys.iter().enumerate() {
            for j in 0..3 {
                clients.push(enqueue(&master, m, &format!("{cmd} BLOCK 5000"), (i * 3 + j + 1) as u64));
            }
        }
        for client in clients {
            assert_eq!(client.reply()[0], 1);
        }
        let _: i64 = run(m, "WAIT 2 5000");
        for r in &replicas {
            let rc = &mut r.conn();
            for (key, _) in keys {
                assert_eq!(state(rc, key), state(m, key), "{key} on a replica");
            }
        }
    }

    fn an_aof_restart_with_waiters_pending_keeps_only_admitted_waits(flavor) {
        let mut s = Server::start_with(flavor, &["--appendonly", "yes", "--appendfsync", "always"]);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.GCRA g 10 1s BURST 1")[0], 1);
        let admitted = enqueue(&s, c, "RL.GCRA g 10 1s BLOCK 5000", 1);
        assert_eq!(admitted.reply()[0], 1);
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        let pending: Vec<Client> = (1..=3)
            .map(|i| enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", i))
            .collect();
        let before = (state(c, "g"), state(c, "f"));
        s.restart();
        for p in pending {
            assert!(p.join().0.is_err());
        }
        let c = &mut s.conn();
        // `g` lapses 200 ms after its second admission: a slow restart may outlive it.
        let g = state(c, "g");
        if g.0 == "none" {
            assert!(before.0 .2 <= now_ms(), "g vanished before its expiry: {before:?}");
        } else {
            assert_eq!(g, before.0);
        }
        assert_eq!(state(c, "f"), before.1);
        assert_eq!(waits(c).0, 0);
    }

    fn a_role_change_ends_waits_unblocked_with_nothing_spent(flavor) {
        let s = Server::start(flavor);
        let other = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        let w = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", 1);
        let _: () = run(c, &format!("REPLICAOF 127.0.0.1 {}", other.port));
        let err = w.join().0.unwrap_err();
        assert!(err.starts_with("UNBLOCKED"), "{err}");
        assert_eq!(waits(c).0, 0);
    }

    fn max_waiters_caps_the_waiting_clients(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: () = run(c, "CONFIG SET rl.max-waiters 1");
        assert_eq!(run::<Vec<String>>(c, "CONFIG GET rl.max-waiters")[1], "1");
        assert_eq!(rl(c, "RL.FIXED f 1 1h")[0], 1);
        let first = enqueue(&s, c, "RL.FIXED f 1 1h BLOCK 0", 1);
        let t = Instant::now();
        let r = rl(c, "RL.FIXED f 1 1h BLOCK 0");
        assert!(t.elapsed() < Duration::from_millis(1000));
        assert_eq!(r[..3], [0, 1, 0]);
        assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {}", first.id)), 1);
        assert_eq!(first.reply()[0], 0);
        // 0 turns waiting off.
        let _: () = run(c, "CONFIG SET rl.max-waiters 0");
        let t = Instant::now();
        assert_eq!(rl(c, "RL.FIXED f 1 1h BLOCK 0")[0], 0);
        assert!(t.elapsed() < Duration::from_millis(1000));
        assert_eq!(waits(c).0, 0);
    }

    fn nobody_is_admitted_while_clients_are_paused_and_replicas_refuse_block(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(true);
        let c = &mut master.conn();
        assert_eq!(rl(c, "RL.GCRA g 10 1s")[0], 1);
        let w = enqueue(&master, c, "RL.GCRA g 10 1s BLOCK 5000", 1);
        let paused = Instant::now();
        let _: () = run(c, "CLIENT PAUSE 500 WRITE");
        let (r, at) = w.join();
        assert_eq!(r.unwrap()[0], 1);
        let after = at.duration_since(paused).as_millis() as i64;
        assert!(after >= 450, "admitted {after} ms into a 500 ms pause");
        let rc = &mut replica.conn();
        assert!(rl_err(rc, "RL.GCRA g 10 1s BLOCK 1000").starts_with("READONLY"));
    }

    fn info_rl_counts_waits_like_commandstats(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.GCRA g 10 1s")[0], 1);
        let a = enqueue(&s, c, "RL.GCRA g 10 1s BLOCK 5000", 1);
        assert_eq!(a.reply()[0], 1);
        let b = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 50", 1);
        assert_eq!(b.reply()[0], 0);
        let d = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 0", 1);
        let _: () = run(c, &format!("CLIENT KILL ID {}", d.id));
        let _ = d.join();
        let e = enqueue(&s, c, "RL.GCRA g 1 1h BLOCK 0", 1);
        let _: i64 = run(c, &format!("CLIENT UNBLOCK {}", e.id));
        assert_eq!(e.reply()[0], 0);
        // Let the cron settle the ledger against commandstats.
        std::thread::sleep(Duration::from_millis(300));
        let line = info(c, "rl", "rl_gcra");
        let stats = info(c, "commandstats", "cmdstat_rl.gcra");
        let calls = |s: &str| s.split(',').find_map(|kv| kv.strip_prefix("calls=")).unwrap().to_string();
        assert_eq!(calls(&line), calls(&stats), "{line} vs {stats}");
        assert_eq!(waits(c), (0, 1, 2));
        let _: () = run(c, "CONFIG RESETSTAT");
        assert_eq!(waits(c), (0, 0, 0));
    }
}
