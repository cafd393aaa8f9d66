//! What operators see: INFO counters, configuration, and the command table.

use crate::common::*;
use std::process::Command;

/// `INFO rl` as `{command: {counter: value}}`.
fn stats(c: &mut redis::Connection) -> std::collections::BTreeMap<String, Vec<(String, u64)>> {
    let info: String = run(c, "INFO rl");
    info.lines()
        .filter_map(|line| line.strip_prefix("rl_")?.split_once(':'))
        // The counters' lines (`rl_policies:2` and the digest are single values).
        .filter(|(_, fields)| fields.contains('='))
        .map(|(cmd, fields)| {
            let fields = fields
                .split(',')
                .map(|f| {
                    f.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
                        .unwrap()
                })
                .collect();
            (cmd.to_string(), fields)
        })
        .collect()
}

fn counters(c: &mut redis::Connection, cmd: &str) -> Vec<u64> {
    stats(c)[cmd].iter().map(|(_, v)| *v).collect()
}

fn info_counts_a_known_workload(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    let names: Vec<String> = stats(c)["gcra"].iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        names,
        [
            "calls",
            "admitted",
            "denied",
            "errors",
            "cost_admitted",
            "cost_denied",
            "near_limit"
        ]
    );
    rl(c, "RL.GCRA k 1 1h BURST 5 COST 3"); // admitted, cost 3
    rl(c, "RL.GCRA k 1 1h BURST 5 COST 3"); // denied, cost 3
    rl(c, "RL.GCRA k 1 1h BURST 5 COST 0 PEEK"); // admitted, cost 0
    rl_err(c, "RL.GCRA k 0 1h"); // error
    rl(c, "RL.GCRA k 1 1h BURST 5 REFUND 1"); // admitted, no cost
    assert_eq!(counters(c, "gcra"), [5, 3, 1, 1, 3, 3, 0]);
    rl(c, "RL.FIXED f 10 1h COST 4");
    assert_eq!(counters(c, "fixed"), [1, 1, 0, 0, 4, 0, 0]);
    let v: Vec<Value> = run(c, "RL.ALL 2 a b FIXED 5 1h COST 2 SLIDING 5 1h COST 3");
    assert_eq!(v.len(), 6);
    assert_eq!(counters(c, "all"), [1, 1, 0, 0, 5, 0, 0]);
    assert_eq!(
        counters(c, "sliding"),
        [0; 7],
        "RL.ALL counts as itself only"
    );
    // CONFIG RESETSTAT clears them, and counting resumes.
    assert_eq!(run::<String>(c, "CONFIG RESETSTAT"), "OK");
    for (cmd, fields) in stats(c) {
        assert!(fields.iter().all(|(_, v)| *v == 0), "{cmd}: {fields:?}");
    }
    rl(c, "RL.FIXED f 10 1h");
    assert_eq!(counters(c, "fixed"), [1, 1, 0, 0, 1, 0, 0]);
}

fn sliding_log_cap_is_configurable(flavor: Flavor) {
    let s = Server::start_with(flavor, &["sliding-log-max-limit", "50"]);
    let c = &mut s.conn();
    assert_eq!(
        run::<Vec<String>>(c, "CONFIG GET rl.sliding-log-max-limit"),
        ["rl.sliding-log-max-limit", "50"]
    );
    assert_eq!(
        rl_err(c, "RL.SLIDINGLOG k 51 1s"),
        "ERR limit must be an integer from 1 to 50"
    );
    assert_eq!(rl(c, "RL.SLIDINGLOG k 50 1s")[..3], [1, 50, 49]);
    assert_eq!(
        run::<String>(c, "CONFIG SET rl.sliding-log-max-limit 1000"),
        "OK"
    );
    assert_eq!(rl(c, "RL.SLIDINGLOG k2 1000 1s")[..3], [1, 1000, 999]);
    for bad in ["0", "100000001", "-5", "many"] {
        let err = rl_err(c, &format!("CONFIG SET rl.sliding-log-max-limit {bad}"));
        assert!(err.starts_with("ERR CONFIG SET failed"), "{bad}: {err}");
    }
    assert_eq!(
        run::<Vec<String>>(c, "CONFIG GET rl.sliding-log-max-limit")[1],
        "1000"
    );
}

fn bad_module_arguments_refuse_the_load(flavor: Flavor) {
    // Started without the module: `MODULE UNLOAD rl` is refused (tests/it/unload.rs).
    let s = Server::start_with(flavor, &["--enable-module-command", "yes", "--no-module"]);
    for (args, message) in [
        (
            &["sliding-log-max-limit", "0"][..],
            "sliding-log-max-limit must be an integer from 1 to 100000000",
        ),
        (
            &["sliding-log-max-limit", "100000001"][..],
            "sliding-log-max-limit must be an integer from 1 to 100000000",
        ),
        (&["bogus", "1"][..], "unknown module argument 'bogus'"),
    ] {
        // MODULE LOAD with bad arguments fails and leaves no module behind.
        let mut load = redis::cmd("MODULE");
        load.arg("LOAD")
            .arg(module_path().to_str().unwrap())
            .arg(args);
        let c = &mut s.conn();
        assert!(load.query::<Value>(c).is_err(), "{args:?}");
        assert!(s.log().contains(message), "{args:?}: log lacks {message:?}");
        let modules: Value = run(c, "MODULE LIST");
        assert!(!format!("{modules:?}").contains("librl"), "{args:?}");
    }
    // Good arguments load it.
    let c = &mut s.conn();
    run::<String>(c, &format!("MODULE LOAD {}", module_path().display()));
    assert_eq!(rl(c, "RL.FIXED f 5 1h")[..3], [1, 5, 4]);
}

fn the_command_table_describes_every_command(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    for (cmd, arity) in [
        ("rl.gcra", -4),
        ("rl.tokenbucket", -5),
        ("rl.leaky", -5),
        ("rl.sliding", -4),
        ("rl.slidinglog", -4),
        ("rl.fixed", -4),
        ("rl.all", -5),
        ("rl.acquire", -5),
        ("rl.limit", -3),
        ("rl.release", 3),
        ("cl.throttle", -5),
    ] {
        let info: Vec<Vec<Value>> = run(c, &format!("COMMAND INFO {cmd}"));
        let name: String = redis::from_redis_value(info[0][0].clone()).unwrap();
        let got: i64 = redis::from_redis_value(info[0][1].clone()).unwrap();
        assert_eq!((name.as_str(), got), (cmd, arity));
        let specs = format!("{:?}", info[0][8]);
        assert!(
            specs.contains("RW") && specs.contains("begin_search"),
            "{cmd}: {specs}"
        );
        let docs = format!("{:?}", run::<Value>(c, &format!("COMMAND DOCS {cmd}")));
        assert!(
            docs.contains("summary") && docs.contains("arguments"),
            "{cmd}: {docs}"
        );
    }
    let docs = format!("{:?}", run::<Value>(c, "COMMAND DOCS rl.gcra"));
    for token in ["BURST", "COST", "REFUND", "PEEK"] {
        assert!(docs.contains(token), "{token} missing from {docs}");
    }
    let keys: Vec<String> = run(c, "COMMAND GETKEYS RL.ALL 2 x y GCRA 1 1s FIXED 1 1s");
    assert_eq!(keys, ["x", "y"]);
}

/// The module refuses to load with bad arguments at startup too: the server exits.
fn bad_arguments_at_startup_stop_the_server(flavor: Flavor) {
    let binary = match flavor {
        Flavor::Redis => "redis-server".to_string(),
        Flavor::Valkey => std::env::var("RL_VALKEY_SERVER")
            .unwrap_or_else(|_| format!("{}/.tools/bin/valkey-server", env!("CARGO_MANIFEST_DIR"))),
    };
    let out = Command::new(binary)
        .args(["--port", "0", "--unixsocket"])
        .arg(std::env::temp_dir().join(format!("rl-bad-args-{}.sock", std::process::id())))
        .args(["--save", "", "--loadmodule"])
        .arg(module_path())
        .args(["sliding-log-max-limit", "0"])
        .output()
        .expect("run the server");
    assert!(!out.status.success());
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("sliding-log-max-limit must be an integer from 1 to 100000000"),
        "{log}"
    );
}

server_tests! {
    fn info_counts_a_known_workload_and_resetstat_clears_it(flavor) { super::info_counts_a_known_workload(flavor) }
    fn the_sliding_log_cap_is_configurable(flavor) { super::sliding_log_cap_is_configurable(flavor) }
    fn bad_module_arguments_are_refused(flavor) { super::bad_module_arguments_refuse_the_load(flavor) }
    fn bad_module_arguments_at_startup_stop_the_server(flavor) { super::bad_arguments_at_startup_stop_the_server(flavor) }
    fn command_info_and_docs_describe_every_command(flavor) { super::the_command_table_describes_every_command(flavor) }
}
