//! When `GCRA` is registered, and what the server says about it: the
//! `gcra-command` setting turns it off, a server with a `GCRA` command of its
//! own keeps it (here, a core command renamed to `GCRA`), the server log says
//! which; and its `COMMAND INFO`, `COMMAND DOCS` and ACL categories.

use crate::common::*;

const REGISTERED: &str = "rl: GCRA registered";
const OFF: &str = "rl: GCRA not registered: gcra-command is no";
const TAKEN: &str = "rl: GCRA not registered: the server already has a GCRA command";

fn has_info_line(c: &mut redis::Connection) -> bool {
    run::<String>(c, "INFO rl").contains("rl_gcra_command:")
}

server_tests! {
    fn registered_by_default_and_logged(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        assert_eq!(rl(c, "GCRA k 1 1 60")[..3], [0, 2, 1]);
        assert_eq!(
            run::<Vec<String>>(c, "CONFIG GET rl.gcra-command"),
            ["rl.gcra-command", "yes"]
        );
        assert!(has_info_line(c));
        let log = s.log();
        assert!(log.contains(REGISTERED) && !log.contains(OFF), "{log}");
    }

    fn the_setting_turns_it_off(flavor) {
        let s = Server::start_with(flavor, &["gcra-command", "no"]);
        let c = &mut s.conn();
        let err = rl_err(c, "GCRA k 1 1 60");
        assert!(err.starts_with("ERR unknown command"), "{err}");
        assert_eq!(run::<Vec<Value>>(c, "COMMAND INFO gcra"), [Value::Nil]);
        assert!(!has_info_line(c));
        // The rest of the module is there.
        assert_eq!(rl(c, "RL.GCRA k 1 1h")[..3], [1, 1, 0]);
        assert_eq!(
            run::<Vec<String>>(c, "CONFIG GET rl.gcra-command"),
            ["rl.gcra-command", "no"]
        );
        // Fixed at load: the command table cannot change afterwards.
        let err = rl_err(c, "CONFIG SET rl.gcra-command yes");
        assert!(err.contains("immutable"), "{err}");
        assert!(s.log().contains(OFF), "{}", s.log());
    }

    fn a_gcra_command_of_the_server_is_kept(flavor) {
        // SET renamed to GCRA: the server has a GCRA command of its own.
        let s = Server::start_with(flavor, &["--rename-command", "SET", "GCRA"]);
        let c = &mut s.conn();
        assert_eq!(run::<String>(c, "GCRA k hello"), "OK");
        assert_eq!(run::<String>(c, "GET k"), "hello");
        assert!(!has_info_line(c));
        assert_eq!(rl(c, "RL.GCRA j 1 1h")[..3], [1, 1, 0]);
        assert!(s.log().contains(TAKEN), "{}", s.log());
    }

    fn bad_values_of_the_setting_refuse_the_load(flavor) {
        let s = Server::start_with(flavor, &["--enable-module-command", "yes", "--no-module"]);
        let c = &mut s.conn();
        for (args, message) in [
            (&["gcra-command", "off"][..], "gcra-command must be yes or no"),
            (&["gcra-command", "YES"][..], "gcra-command must be yes or no"),
            (&["gcra-command"][..], "module argument 'gcra-command' needs a value"),
        ] {
            let mut load = redis::cmd("MODULE");
            load.arg("LOAD").arg(module_path().to_str().unwrap()).arg(args);
            assert!(load.query::<Value>(c).is_err(), "{args:?}");
            assert!(s.log().contains(message), "{args:?}: log lacks {message:?}");
        }
        let mut load = redis::cmd("MODULE");
        load.arg("LOAD").arg(module_path().to_str().unwrap()).arg(&["gcra-command", "yes"]);
        assert_eq!(load.query::<String>(c).unwrap(), "OK");
        assert_eq!(rl(c, "GCRA k 0 1 1"), [0, 1, 0, -1, 1]);
    }

    fn command_info_docs_and_acl_categories(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let info: Vec<Vec<Value>> = run(c, "COMMAND INFO gcra");
        let name: String = redis::from_redis_value(info[0][0].clone()).unwrap();
        let arity: i64 = redis::from_redis_value(info[0][1].clone()).unwrap();
        assert_eq!((name.as_str(), arity), ("gcra", -5));
        let flags: Vec<String> = redis::from_redis_value(info[0][2].clone()).unwrap();
        for flag in ["write", "denyoom", "fast"] {
            assert!(flags.iter().any(|f| f == flag), "{flag} in {flags:?}");
        }
        let keys: Vec<i64> = info[0][3..6]
            .iter()
            .map(|v| redis::from_redis_value(v.clone()).unwrap())
            .collect();
        assert_eq!(keys, [1, 1, 1]);
        let specs = format!("{:?}", info[0][8]);
        assert!(specs.contains("RW") && specs.contains("update"), "{specs}");
        // The same ACL categories as RL.GCRA and CL.THROTTLE: @write @fast
        // where the server lets modules declare them (Redis 7.0 does not).
        let mut categories = |cmd: &str| {
            let info: Vec<Vec<Value>> = run(c, &format!("COMMAND INFO {cmd}"));
            format!("{:?}", info[0][6])
        };
        let gcra = categories("gcra");
        assert_eq!(gcra, categories("rl.gcra"));
        assert_eq!(gcra, categories("cl.throttle"));
        let declared = flavor == Flavor::Valkey;
        assert_eq!(gcra.contains("@write") && gcra.contains("@fast"), declared, "{gcra}");
        let write: Vec<String> = run(c, "ACL CAT write");
        assert_eq!(write.iter().any(|n| n == "gcra"), declared, "{write:?}");
        let keys: Vec<String> = run(c, "COMMAND GETKEYS GCRA user:42 5 1 60 TOKENS 2");
        assert_eq!(keys, ["user:42"]);
        let docs = format!("{:?}", run::<Value>(c, "COMMAND DOCS gcra"));
        for word in [
            "summary", "O(1)", "max-burst", "tokens-per-period", "period", "double", "count",
            "TOKENS", "optional", "\"module\"", "rl",
        ] {
            assert!(docs.contains(word), "{word} missing from {docs}");
        }
    }
}
