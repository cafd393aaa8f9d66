//! Every way a `BLOCK` wait ends leaves nothing behind: after hundreds of
//! waits ended one way, the server's `used_memory` and `INFO rl`'s waiting
//! gauge are back at their baseline, and every client got the reply that way
//! of ending promises. A blocked-client handle the module forgot to release
//! keeps about 35 KB, so one forgotten handle in a round already fails.

use crate::common::raw::{memory_back_to, settled_memory, wait_for, waiters, waits, Raw, Reply};
use crate::common::*;

/// Waits per measured round.
const N: usize = 300;
/// Growth allowed over a round: less than one forgotten handle (about 35 KB).
const SLACK: i64 = 24 * 1024;

/// A server whose per-key cap lets a whole round wait on one key.
fn server(flavor: Flavor, extra: &[&str]) -> Server {
    let s = Server::start_with(flavor, extra);
    let c = &mut s.conn();
    let _: () = run(c, "CONFIG SET rl.max-waiters-per-key 1000");
    s
}

/// Runs `round` once to warm the server up, then measures a second round;
/// `round` queues waits, ends them, and checks each client's reply.
fn leaves_nothing(s: &Server, round: impl Fn(&Server, &mut redis::Connection)) {
    let c = &mut s.conn();
    round(s, c);
    let before = settled_memory(c);
    round(s, c);
    let after = memory_back_to(c, before + SLACK);
    assert!(
        after - before <= SLACK,
        "used_memory grew by {} bytes over {N} waits ({before} -> {after})",
        after - before
    );
    assert_eq!(waits(c).0, 0, "the waiting gauge is back at 0");
}

/// Exhausts `RL.FIXED k N 1d`, so that `RL.FIXED k N 1d BLOCK …` waits.
const EXHAUST: &str = "RL.FIXED k 300 1d COST 300";
const WAIT: &str = "RL.FIXED k 300 1d BLOCK 0";

/// Queues a round of `WAIT`ers on an exhausted `k`.
fn queued(s: &Server, c: &mut redis::Connection) -> Vec<Raw> {
    let _: () = run(c, "FLUSHALL");
    assert_eq!(rl(c, EXHAUST)[0], 1);
    waiters(s, c, WAIT, N)
}

/// Reads every reply and checks it with `expect`.
fn replies(raws: Vec<Raw>, expect: impl Fn(&Reply) -> bool) {
    for mut r in raws {
        let reply = r.read();
        assert!(expect(&reply), "unexpected reply {reply:?}");
    }
}

/// Ends a round with one generic command on the key; every waiter is then
/// decided on the key's new state: admitted on a key that is now absent.
fn key_action_admits(flavor: Flavor, action: &'static str) {
    let s = server(flavor, &["--enable-debug-command", "yes"]);
    leaves_nothing(&s, |s, c| {
        let raws = queued(s, c);
        for part in action.split(';') {
            let _: Value = run(c, part);
        }
        replies(raws, Reply::admitted);
    });
}

server_tests! {
    fn admitted_waits_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let _: () = run(c, "FLUSHALL");
            // One admission per millisecond.
            assert_eq!(rl(c, "RL.GCRA g 1000 1s")[0], 1);
            let raws: Vec<Raw> = (0..N).map(|_| Raw::send(s, "RL.GCRA g 1000 1s BLOCK 0")).collect();
            replies(raws, Reply::admitted);
        });
    }

    fn waits_that_time_out_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let _: () = run(c, "FLUSHALL");
            assert_eq!(rl(c, EXHAUST)[0], 1);
            let raws: Vec<Raw> = (0..N).map(|_| Raw::send(s, "RL.FIXED k 300 1d BLOCK 30")).collect();
            replies(raws, Reply::denied);
        });
    }

    fn waits_whose_client_disconnects_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| drop(queued(s, c)));
    }

    fn waits_ended_by_client_kill_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            for r in &raws {
                let _: i64 = run(c, &format!("CLIENT KILL ID {}", r.id));
            }
            replies(raws, |r| *r == Reply::Closed);
        });
    }

    fn waits_ended_by_client_unblock_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            for r in &raws {
                assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {}", r.id)), 1);
            }
            // The denial of that instant, nothing spent.
            replies(raws, Reply::denied);
        });
    }

    fn waits_ended_by_client_unblock_error_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            for r in &raws {
                assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {} ERROR", r.id)), 1);
            }
            replies(raws, |r| r.error().is_some_and(|e| e.starts_with("UNBLOCKED")));
        });
    }

    fn waits_ended_by_deleting_their_policy_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let _: () = run(c, "FLUSHALL");
            let _: () = run(c, "RL.POLICY SET day FIXED 300 1d");
            // The policy's key is the key its command writes: EXHAUST's.
            assert_eq!(rl(c, EXHAUST)[0], 1);
            let raws = waiters(s, c, "RL.LIMIT k day BLOCK 0", N);
            assert_eq!(run::<i64>(c, "RL.POLICY DEL day"), 1);
            replies(raws, |r| r.error() == Some("ERR no such policy 'day'"));
        });
    }

    fn waits_ended_by_a_role_change_leave_nothing(flavor) {
        let s = server(flavor, &[]);
        // A port nothing listens on: the server stays a replica that never syncs.
        let nowhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = nowhere.local_addr().unwrap().port();
        drop(nowhere);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            let _: () = run(c, &format!("REPLICAOF 127.0.0.1 {port}"));
            replies(raws, |r| r.error().is_some_and(|e| e.starts_with("UNBLOCKED")));
            let _: () = run(c, "REPLICAOF NO ONE");
            // Nothing was spent: the key still holds exactly the exhausting call.
            assert_eq!(rl(c, "RL.PEEK FIXED k 300 1d")[2], 0);
        });
    }

    fn flushall_wakes_waiters_and_leaves_nothing(flavor) {
        key_action_admits(flavor, "FLUSHALL");
    }

    fn flushall_async_wakes_waiters_and_leaves_nothing(flavor) {
        key_action_admits(flavor, "FLUSHALL ASYNC");
    }

    fn flushdb_wakes_waiters_and_leaves_nothing(flavor) {
        key_action_admits(flavor, "FLUSHDB");
    }

    fn swapdb_wakes_waiters_and_leaves_nothing(flavor) {
        key_action_admits(flavor, "SWAPDB 0 1");
    }

    fn debug_reload_wakes_waiters_on_the_reloaded_state(flavor) {
        let s = server(flavor, &["--enable-debug-command", "yes"]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            // The key is still exhausted after the reload: the waiters are
            // looked at again and keep waiting; a DEL then admits them.
            let _: () = run(c, "DEBUG RELOAD");
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(waits(c).0, N as u64);
            let _: i64 = run(c, "DEL k");
            replies(raws, Reply::admitted);
        });
    }

    fn move_rename_del_unlink_and_expiry_wake_waiters_and_leave_nothing(flavor) {
        for action in ["MOVE k 1", "RENAME k k2", "DEL k", "UNLINK k", "PEXPIRE k 1"] {
            key_action_admits(flavor, action);
        }
    }

    fn eviction_wakes_waiters_and_leaves_nothing(flavor) {
        let s = server(flavor, &["--maxmemory-policy", "allkeys-random"]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            // Far below what the server uses: the next write evicts every key.
            let _: () = run(c, "CONFIG SET maxmemory 1");
            let _ = command("SET other 1").query::<Value>(c);
            let _: () = run(c, "CONFIG SET maxmemory 0");
            replies(raws, Reply::admitted);
        });
    }

    fn a_key_replaced_by_another_type_ends_its_waits_with_an_error(flavor) {
        let s = server(flavor, &[]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            let _: Value = redis::pipe()
                .atomic()
                .cmd("DEL").arg("k")
                .cmd("RPUSH").arg("k").arg("x")
                .query(c)
                .unwrap();
            replies(raws, |r| r.error().is_some_and(|e| e.starts_with("WRONGTYPE")));
            assert_eq!(run::<i64>(c, "LLEN k"), 1, "the list is untouched");
        });
    }

    fn waiters_woken_under_noeviction_oom_end_with_oom_and_spend_nothing(flavor) {
        let s = server(flavor, &["--maxmemory-policy", "noeviction"]);
        leaves_nothing(&s, |s, c| {
            let raws = queued(s, c);
            let _: () = run(c, "CONFIG SET maxmemory 1");
            let _: i64 = run(c, "DEL k");
            replies(raws, |r| r.error().is_some_and(|e| e.starts_with("OOM")));
            let _: () = run(c, "CONFIG SET maxmemory 0");
            assert_eq!(run::<i64>(c, "EXISTS k"), 0, "nothing was written");
        });
    }

    fn shutdown_with_waiters_exits_cleanly(flavor) {
        let mut s = server(flavor, &[]);
        let c = &mut s.conn();
        let raws = queued(&s, c);
        let _ = command("SHUTDOWN NOSAVE").query::<Value>(c);
        replies(raws, |r| *r == Reply::Closed || r.error().is_some());
        wait_for("the server to exit", || !s.alive());
        let log = s.log();
        assert!(!log.contains("crashed") && !log.contains("Guru"), "{log}");
        s.restart();
        assert_eq!(waits(&mut s.conn()).0, 0);
    }

    fn a_live_waiter_costs_about_35_kb_as_the_readme_budgets(flavor) {
        let s = server(flavor, &[]);
        let c = &mut s.conn();
        assert_eq!(rl(c, EXHAUST)[0], 1);
        // Connections first, so that only the waiting is measured.
        let mut raws: Vec<Raw> = (0..100).map(|_| Raw::send(&s, "PING")).collect();
        for r in &mut raws {
            assert_eq!(r.read(), Reply::Status("PONG".into()));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let before: i64 = info(c, "memory", "used_memory").parse().unwrap();
        for r in &mut raws {
            r.again(WAIT);
        }
        wait_for("100 waiters", || waits(c).0 == 100);
        let during: i64 = info(c, "memory", "used_memory").parse().unwrap();
        let per_waiter = (during - before) / 100;
        assert!((25_000..=45_000).contains(&per_waiter), "{per_waiter} bytes per waiter");
    }

    fn a_per_key_cap_keeps_one_key_from_taking_every_slot(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let _: () = run(c, "CONFIG SET rl.max-waiters-per-key 3");
        assert_eq!(rl(c, "RL.FIXED a 1 1d")[0], 1);
        assert_eq!(rl(c, "RL.FIXED b 1 1d")[0], 1);
        let a = waiters(&s, c, "RL.FIXED a 1 1d BLOCK 0", 3);
        // The fourth on `a` is decided at once; another key still waits.
        let t = std::time::Instant::now();
        assert_eq!(rl(c, "RL.FIXED a 1 1d BLOCK 0")[..3], [0, 1, 0]);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        let b = waiters(&s, c, "RL.FIXED b 1 1d BLOCK 0", 1);
        assert_eq!(waits(c).0, 4);
        drop((a, b));
        wait_for("the waits to end", || waits(c).0 == 0);
    }
}
