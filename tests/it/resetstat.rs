//! `INFO rl` counters clear exactly when Redis's own command statistics clear:
//! by a `CONFIG RESETSTAT` that executes, never by one that is refused
//! (`NOAUTH`, `NOPERM`), queued then discarded, or refused inside a script.

use crate::common::*;

/// `INFO rl` calls per command, as `name=calls` for the non-zero ones.
fn rl_calls(c: &mut redis::Connection) -> Vec<String> {
    let info: String = run(c, "INFO rl");
    info.lines()
        .filter_map(|line| line.strip_prefix("rl_")?.split_once(':'))
        .filter_map(|(cmd, fields)| {
            let calls = fields.split(',').next()?.strip_prefix("calls=")?;
            (calls != "0").then(|| format!("{cmd}={calls}"))
        })
        .collect()
}

/// `INFO commandstats` calls of the module's commands, in the same form.
fn redis_calls(c: &mut redis::Connection) -> Vec<String> {
    let info: String = run(c, "INFO commandstats");
    let names = [
        ("rl.gcra", "gcra"),
        ("rl.tokenbucket", "tokenbucket"),
        ("rl.leaky", "leaky"),
        ("rl.sliding", "sliding"),
        ("rl.slidinglog", "slidinglog"),
        ("rl.fixed", "fixed"),
        ("rl.all", "all"),
        ("rl.acquire", "acquire"),
        ("rl.release", "release"),
        ("cl.throttle", "throttle"),
    ];
    names
        .iter()
        .filter_map(|(cmd, name)| {
            let line = info
                .lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:")))?;
            let calls = line.split(',').next()?.strip_prefix("calls=")?;
            Some(format!("{name}={calls}"))
        })
        .collect()
}

/// A workload touching every command, with errors, a transaction and a script.
fn workload(c: &mut redis::Connection) {
    for words in [
        "RL.GCRA g 1 1h",
        "RL.GCRA g 1 1h",
        "RL.TOKENBUCKET t 5 1 1h COST 2",
        "RL.LEAKY l 5 1 1h",
        "RL.SLIDING s 5 1h",
        "RL.SLIDINGLOG sl 5 1h",
        "RL.FIXED f 5 1h PEEK",
        "RL.ALL 2 a b FIXED 5 1h GCRA 1 1h",
        "RL.ACQUIRE q 5 1h x",
        "RL.RELEASE q x",
        "CL.THROTTLE c 5 1 60",
        "RL.GCRA g 0 1h",
        "RL.FIXED g 1 1h",
    ] {
        let _ = command(words).query::<Value>(c);
    }
    let _: Value = redis::pipe()
        .atomic()
        .add_command(command("RL.GCRA m 5 1h"))
        .add_command(command("RL.FIXED m2 5 1h"))
        .query(c)
        .unwrap();
    // A script: one decision, then one error (returned as the script's error).
    let script = redis::cmd("EVAL")
        .arg("redis.call('rl.gcra', KEYS[1], 5, '1h'); return redis.pcall('rl.gcra', KEYS[1], 0, '1h')")
        .arg(1)
        .arg("e")
        .query::<Value>(c);
    assert!(script.is_err());
}

fn refused_resets_clear_nothing(flavor: Flavor) {
    let s = Server::start(flavor);
    let admin = &mut s.conn();
    // A connection authenticated before the password was set stays authenticated.
    run::<String>(admin, "CONFIG SET requirepass secret");
    run::<String>(admin, "ACL SETUSER limited on >pw ~* &* +@all -config");
    workload(admin);
    let before = rl_calls(admin);
    assert!(before.len() == 10, "{before:?}");

    // Unauthenticated: NOAUTH.
    let anon = &mut s.conn();
    assert!(rl_err(anon, "CONFIG RESETSTAT").starts_with("NOAUTH"));
    // A user without +config: NOPERM.
    let limited = &mut s.conn();
    run::<String>(limited, "AUTH limited pw");
    assert!(rl_err(limited, "CONFIG RESETSTAT").starts_with("NOPERM"));
    // Queued, then discarded.
    run::<String>(admin, "MULTI");
    assert_eq!(run::<String>(admin, "CONFIG RESETSTAT"), "QUEUED");
    run::<String>(admin, "DISCARD");
    // Refused inside a script.
    let script: String = redis::cmd("EVAL")
        .arg("local r = redis.pcall('config', 'resetstat'); return r['err'] or 'ran'")
        .arg(0)
        .query(admin)
        .unwrap();
    assert_ne!(script, "ran");
    // A queued CONFIG RESETSTAT in a transaction that fails to EXEC (a WATCHed key changed).
    run::<String>(admin, "WATCH watched");
    run::<String>(&mut *limited, "SET watched 1");
    run::<String>(admin, "MULTI");
    run::<String>(admin, "CONFIG RESETSTAT");
    assert_eq!(command("EXEC").query::<Value>(admin).unwrap(), Value::Nil);

    assert_eq!(rl_calls(admin), before);
    assert_eq!(
        redis_calls(admin),
        before,
        "INFO rl counts what commandstats counts"
    );
}

fn executed_resets_clear_and_counting_resumes(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    workload(c);
    assert_eq!(rl_calls(c), redis_calls(c));
    assert_eq!(run::<String>(c, "CONFIG RESETSTAT"), "OK");
    assert_eq!(rl_calls(c), Vec::<String>::new());

    // Calls before and after a reset, with no INFO in between: only the later count.
    workload(c);
    run::<String>(c, "CONFIG RESETSTAT");
    rl(c, "RL.GCRA g 1 1h"); // denied
    rl(c, "RL.FIXED f2 5 1h COST 2"); // admitted
    let info: String = run(c, "INFO rl");
    assert!(
        info.contains("rl_gcra:calls=1,admitted=0,denied=1,errors=0,cost_admitted=0,cost_denied=1"),
        "{info}"
    );
    assert!(
        info.contains(
            "rl_fixed:calls=1,admitted=1,denied=0,errors=0,cost_admitted=2,cost_denied=0"
        ),
        "{info}"
    );
    assert_eq!(rl_calls(c), redis_calls(c));

    // The same, with time for the server's cron tick (hz 10) to settle the calls
    // before and after the reset: the counts are the same either way.
    workload(c);
    std::thread::sleep(std::time::Duration::from_millis(300));
    run::<String>(c, "CONFIG RESETSTAT");
    rl(c, "RL.GCRA g 1 1h");
    rl(c, "RL.FIXED f3 5 1h COST 2");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after: String = run(c, "INFO rl");
    for line in info.lines().filter(|l| l.starts_with("rl_")) {
        assert!(after.contains(line), "{after}");
    }

    // A reset inside a transaction that executes clears too.
    workload(c);
    let _: Value = redis::pipe()
        .atomic()
        .add_command(command("RL.GCRA g 1 1h"))
        .add_command(command("CONFIG RESETSTAT"))
        .add_command(command("RL.SLIDING s 5 1h"))
        .query(c)
        .unwrap();
    assert_eq!(rl_calls(c), ["sliding=1"]);
    assert_eq!(redis_calls(c), ["sliding=1"]);
}

/// In the test build a call settles the ledger itself every 64 calls (as one
/// does every 2^20 calls when no cron tick comes, e.g. inside a long script):
/// the counts stay exact.
fn calls_that_settle_the_ledger_themselves_count_exactly(flavor: Flavor) {
    let s = Server::start_debug(flavor);
    let c = &mut s.conn();
    let script =
        "for i = 1, tonumber(ARGV[1]) do redis.call('rl.fixed', KEYS[1], 1000000, '1h') end";
    let eval = |c: &mut redis::Connection, n: u32| {
        let _: Value = redis::cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg("k")
            .arg(n)
            .query(c)
            .unwrap();
    };
    eval(c, 150);
    run::<String>(c, "CONFIG RESETSTAT");
    eval(c, 200);
    assert_eq!(rl_calls(c), ["fixed=200"]);
    assert_eq!(redis_calls(c), ["fixed=200"]);
    let info: String = run(c, "INFO rl");
    assert!(
        info.contains("rl_fixed:calls=200,admitted=200,denied=0,errors=0,cost_admitted=200,"),
        "{info}"
    );
}

/// Waits pending across a reset count in neither tally, whatever order the
/// waits end in; waits made after it count exactly.
fn waits_pending_across_a_reset_count_exactly(flavor: Flavor) {
    use crate::common::raw::{wait_for, waiters, waits, Raw};
    let s = Server::start(flavor);
    let c = &mut s.conn();
    assert_eq!(rl(c, "RL.FIXED old 1 1d")[0], 1);
    assert_eq!(rl(c, "RL.FIXED new 1 1d")[0], 1);
    let mut old = waiters(&s, c, "RL.FIXED old 1 1d BLOCK 0", 2);
    let _: () = run(c, "CONFIG RESETSTAT");
    // Three new waits time out first, then the old ones end.
    let new: Vec<Raw> = (0..3)
        .map(|_| Raw::send(&s, "RL.FIXED new 1 1d BLOCK 30"))
        .collect();
    for mut r in new {
        assert!(r.read().denied());
    }
    let _: () = run(c, &format!("CLIENT UNBLOCK {}", old[0].id));
    assert!(old[0].read().denied());
    drop(old.pop());
    wait_for("the old waits to end", || waits(c).0 == 0);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let fixed = info(c, "rl", "rl_fixed");
    let commandstats = info(c, "commandstats", "cmdstat_rl.fixed");
    let calls = |line: &str| line.split(',').next().unwrap().to_string();
    assert_eq!(
        calls(&fixed),
        calls(&commandstats),
        "{fixed} vs {commandstats}"
    );
    // Redis 7.0 counted the old waits when they blocked, before the reset;
    // Valkey counts a blocked call when it is answered: the old wait answered
    // after the reset is one of its calls (the one whose client left is not).
    let n = if flavor == Flavor::Redis { 3 } else { 4 };
    let expected =
        format!("calls={n},admitted=0,denied={n},errors=0,cost_admitted=0,cost_denied={n}");
    assert!(fixed.starts_with(&expected), "{fixed}");
    assert_eq!(waits(c), (0, 0, n));
}

server_tests! {
    fn waits_pending_across_resetstat_count_in_neither_tally(flavor) {
        super::waits_pending_across_a_reset_count_exactly(flavor)
    }

    fn calls_settling_the_ledger_in_a_long_script_count_exactly(flavor) {
        super::calls_that_settle_the_ledger_themselves_count_exactly(flavor)
    }

    fn refused_queued_and_script_resetstat_clear_nothing(flavor) {
        super::refused_resets_clear_nothing(flavor)
    }

    fn executed_resetstat_clears_and_counting_resumes_exactly(flavor) {
        super::executed_resets_clear_and_counting_resumes(flavor)
    }
}
