//! `RL.LIMIT … BLOCK` (CONTRACT.md section 10): a call by policy waits as its
//! command's `BLOCK` does; woken, it decides by its policy as it is then;
//! deleting the policy ends its waiters with `ERR no such policy`; a `SHADOW`
//! policy never waits; `INFO rl_policies` counts the waits as the policy's calls.

use crate::common::raw::{wait_for, waiters, waits, Reply};
use crate::common::*;

fn ok(c: &mut redis::Connection, words: &str) {
    assert_eq!(run::<String>(c, words), "OK", "{words}");
}

fn policy_line(c: &mut redis::Connection, name: &str) -> String {
    let text: String = run(c, "INFO rl_policies");
    let field = format!("rl_policy_{name}:");
    let line = text.lines().find(|l| l.starts_with(&field));
    line.unwrap_or_else(|| panic!("{field} in {text}"))
        .to_owned()
}

server_tests! {
    fn a_waiter_decides_by_its_policy_as_it_is_when_woken(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        assert_eq!(rl(c, "RL.LIMIT k p")[..3], [1, 1, 0]);
        let mut w = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 1);
        // Raising the limit wakes it: admitted by the policy as it is now.
        ok(c, "RL.POLICY SET p FIXED 2 1h");
        let reply = w[0].read();
        assert!(matches!(&reply, Reply::Integers(v) if v[..3] == [1, 2, 0]), "{reply:?}");
        assert!(run::<String>(c, "GET k").ends_with(":2"));
        // As RL.FIXED's own BLOCK: the deadline ends it denied, nothing spent.
        assert_eq!(rl(c, "RL.LIMIT k p BLOCK 30")[..3], [0, 2, 0]);
        assert_eq!(rl(c, "RL.FIXED k 2 1h BLOCK 30")[..3], [0, 2, 0]);
        assert!(run::<String>(c, "GET k").ends_with(":2"));
        assert_eq!(waits(c), (0, 1, 2));
        // Three calls by the policy: two admitted (one after waiting), one timed out.
        assert_eq!(
            policy_line(c, "p"),
            "rl_policy_p:calls=3,admitted=2,denied=1,shadow_denied=0,errors=0,penalties=0,near_limit=2"
        );
        // A call after a wait is no policy's.
        rl(c, "RL.FIXED other 1 1h");
        assert_eq!(policy_line(c, "p"), "rl_policy_p:calls=3,admitted=2,denied=1,shadow_denied=0,errors=0,penalties=0,near_limit=2");
    }

    fn deleting_a_policy_ends_its_waiters_and_no_others(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        ok(c, "RL.POLICY SET q FIXED 1 1h");
        assert_eq!(rl(c, "RL.LIMIT k q")[..3], [1, 1, 0]);
        // The head waits by q, the next two by p, the last by q.
        let mut head = waiters(&s, c, "RL.LIMIT k q BLOCK 0", 1);
        let mut by_p = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 2);
        let mut tail = waiters(&s, c, "RL.LIMIT k q BLOCK 0", 1);
        assert_eq!(run::<i64>(c, "RL.POLICY DEL p"), 1);
        for w in &mut by_p {
            assert_eq!(w.read().error(), Some("ERR no such policy 'p'"));
        }
        assert_eq!(waits(c).0, 2);
        // A policy made again under the name is another: its old waiters end as deleted.
        assert_eq!(run::<i64>(c, "RL.POLICY DEL q"), 1);
        ok(c, "RL.POLICY SET q FIXED 5 1h");
        for w in [&mut head[0], &mut tail[0]] {
            assert_eq!(w.read().error(), Some("ERR no such policy 'q'"));
        }
        assert_eq!(waits(c).0, 0);
        // Nothing was spent by any of them.
        assert!(run::<String>(c, "GET k").ends_with(":1"));
        assert_eq!(
            policy_line(c, "q"),
            "rl_policy_q:calls=0,admitted=0,denied=0,shadow_denied=0,errors=0,penalties=0,near_limit=0"
        );
    }

    fn calls_by_policy_and_spelt_out_share_the_key_queue_in_order(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        rl(c, "RL.FIXED k 1 1h");
        let mut first = waiters(&s, c, "RL.FIXED k 1 1h BLOCK 0", 1);
        let mut second = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 1);
        let mut third = waiters(&s, c, "RL.FIXED k 1 1h BLOCK 0", 1);
        // Each DEL of the key admits the head only (it spends the one unit again).
        for (n, w) in [&mut first[0], &mut second[0], &mut third[0]].into_iter().enumerate() {
            let _: i64 = run(c, "DEL k");
            let reply = w.read();
            assert!(reply.admitted(), "waiter {n}: {reply:?}");
        }
        assert_eq!(waits(c).0, 0);
    }

    fn calls_waiting_when_their_policy_turns_shadow_wait_on_as_enforced(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        rl(c, "RL.LIMIT k p");
        let mut w = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 1);
        ok(c, "RL.POLICY SET p FIXED 1 1h SHADOW");
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!w[0].ready(), "still waiting");
        assert_eq!(waits(c).0, 1);
        // A new call by it is shadowed at once; the waiter is admitted when the key goes.
        let v = rl(c, "RL.LIMIT k p BLOCK 0");
        assert!(v[..3] == [1, 1, 0] && v[3] > 0, "{v:?}");
        let _: i64 = run(c, "DEL k");
        assert!(w[0].read().admitted());
    }

    fn a_load_without_the_policy_ends_its_waiters(flavor) {
        let dir = temp_folder(&format!("load-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, "p FIXED 1 1h\nq FIXED 1 1h\n").unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        rl(c, "RL.LIMIT a p");
        rl(c, "RL.LIMIT b q");
        let mut by_p = waiters(&s, c, "RL.LIMIT a p BLOCK 0", 1);
        let mut by_q = waiters(&s, c, "RL.LIMIT b q BLOCK 0", 1);
        // The file keeps q (with a higher limit) and drops p.
        std::fs::write(&path, "q FIXED 2 1h\n").unwrap();
        ok(c, "RL.POLICY LOAD");
        assert_eq!(by_p[0].read().error(), Some("ERR no such policy 'p'"));
        let reply = by_q[0].read();
        assert!(matches!(&reply, Reply::Integers(v) if v[..3] == [1, 2, 0]), "{reply:?}");
        assert_eq!(waits(c).0, 0);
    }

    fn a_wait_by_policy_is_any_wait_in_transactions_scripts_and_client_commands(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        rl(c, "RL.LIMIT k p");
        // Where a client cannot block, BLOCK decides at once, as RL.FIXED's does.
        let in_multi: Vec<Vec<i64>> = redis::pipe()
            .atomic()
            .cmd("RL.LIMIT").arg("k").arg("p").arg("BLOCK").arg(0)
            .query(c)
            .unwrap();
        assert_eq!(in_multi[0][..3], [0, 1, 0]);
        let in_script: Vec<i64> = redis::cmd("EVAL")
            .arg("return redis.call('RL.LIMIT', 'k', 'p', 'BLOCK', '0')")
            .arg(0)
            .query(c)
            .unwrap();
        assert_eq!(in_script[..3], [0, 1, 0]);
        // CLIENT UNBLOCK: the denial of that instant, nothing spent; CLIENT KILL: gone.
        let mut unblocked = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 1);
        assert_eq!(run::<i64>(c, &format!("CLIENT UNBLOCK {}", unblocked[0].id)), 1);
        assert!(unblocked[0].read().denied());
        let killed = waiters(&s, c, "RL.LIMIT k p BLOCK 0", 1);
        let _: i64 = run(c, &format!("CLIENT KILL ID {}", killed[0].id));
        drop(killed);
        wait_for("no waiter left", || waits(c).0 == 0);
        assert!(run::<String>(c, "GET k").ends_with(":1"));
    }

    fn a_shadow_policy_never_waits(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET s FIXED 1 1h SHADOW");
        rl(c, "RL.LIMIT k s");
        // BLOCK 0 would wait for ever: the shadowed denial is answered at once.
        let v = rl(c, "RL.LIMIT k s BLOCK 0");
        assert!(v[..3] == [1, 1, 0] && v[3] > 0, "{v:?}");
        assert_eq!(waits(c), (0, 0, 0));
        assert_eq!(
            policy_line(c, "s"),
            "rl_policy_s:calls=2,admitted=1,denied=0,shadow_denied=1,errors=0,penalties=0,near_limit=1"
        );
    }

    fn block_is_an_option_of_rl_limit_as_of_its_command(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET p FIXED 1 1h");
        for (call, error) in [
            ("RL.LIMIT k p BLOCK", "ERR option BLOCK needs a value"),
            ("RL.LIMIT k p BLOCK 1 BLOCK 1", "ERR option BLOCK given more than once"),
            ("RL.LIMIT k p BLOCK x", "ERR BLOCK must be an integer from 0 to 315360000000"),
            ("RL.LIMIT k p BURST 1", "ERR unknown option 'BURST' for 'rl.limit' (expected COST, REFUND, DEBIT, PEEK or BLOCK)"),
        ] {
            assert_eq!(rl_err(c, call), error, "{call}");
            let spelt = call.replace("RL.LIMIT k p", "RL.FIXED k 1 1h");
            if !call.contains("BURST") {
                assert_eq!(rl_err(c, &spelt), error, "{spelt}");
            }
        }
        // PEEK and REFUND with BLOCK never wait, as for RL.FIXED.
        rl(c, "RL.LIMIT k p");
        assert_eq!(rl(c, "RL.LIMIT k p PEEK BLOCK 0")[..3], [0, 1, 0]);
        assert_eq!(rl(c, "RL.LIMIT k p REFUND 1 BLOCK 0")[..3], [1, 1, 1]);
        assert_eq!(waits(c), (0, 0, 0));
    }
}
