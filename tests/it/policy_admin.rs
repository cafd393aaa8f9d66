//! `RL.POLICY` as an administrative surface: its changing subcommands are
//! refused inside scripts and functions (as Redis's `CONFIG SET` and `ACL
//! SETUSER` are), `RL.POLICY HELP` answers as `CONFIG HELP` does, and no
//! policy's name can make its `INFO` line collide with a field of the module's
//! own.

use crate::common::*;

use std::collections::BTreeSet;

fn ok(c: &mut redis::Connection, words: &str) {
    assert_eq!(run::<String>(c, words), "OK", "{words}");
}

/// The field names of `INFO section`, in order, repeats kept.
fn info_fields(c: &mut redis::Connection, section: &str) -> Vec<String> {
    let text: String = run(c, &format!("INFO {section}"));
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_once(':').expect("name:value").0.to_owned())
        .collect()
}

server_tests! {
    fn no_policy_name_collides_with_the_modules_own_info_fields(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let own = info_fields(c, "rl");
        // `digest`, whose line would be `rl_policy_digest`, the digest's own field
        // (a second field of that name, which redis-py's info("rl") then read as
        // the digest), is refused, by SET and by a policy file, and nothing changes.
        let reserved = "ERR the policy name 'digest' is reserved: \
                        INFO rl's field rl_policy_digest is the module's own";
        assert_eq!(rl_err(c, "RL.POLICY SET digest FIXED 3 1m"), reserved);
        assert_eq!(info(c, "rl", "rl_policies"), "0");
        // A policy named after each of the module's other fields, with and without
        // the per-policy lines' prefix (`rl_policy_`).
        let mut names = BTreeSet::new();
        for field in &own {
            let name = field.strip_prefix("rl_").expect("the module's prefix");
            names.insert(name.to_owned());
            if let Some(rest) = name.strip_prefix("policy_") {
                names.insert(rest.to_owned());
            }
        }
        names.remove("digest");
        for name in &names {
            ok(c, &format!("RL.POLICY SET {name} FIXED 3 1m"));
        }
        let fields = info_fields(c, "rl");
        let unique: BTreeSet<&String> = fields.iter().collect();
        assert_eq!(unique.len(), fields.len(), "a field name written twice: {fields:?}");
        assert_eq!(fields.len(), own.len() + names.len());
        // Every field the module wrote before any policy means what it meant.
        let digest: String = run(c, "RL.POLICY DIGEST");
        assert_eq!(info(c, "rl", "rl_policy_digest"), digest);
        assert_eq!(info(c, "rl", "rl_policies"), names.len().to_string());
        assert!(info(c, "rl", "rl_waits").starts_with("waiting="));
        for name in &names {
            let line = info(c, "rl_policies", &format!("rl_policy_{name}"));
            assert!(line.starts_with("calls=0,"), "{name}: {line}");
        }
    }

    fn changing_policies_is_refused_in_scripts_and_functions(flavor) {
        let dir = temp_folder(&format!("scripts-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, "free FIXED 3 1m\n").unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        let lib = "#!lua name=admin\n\
                   redis.register_function{function_name='change', callback=function(_, args) return redis.call(unpack(args)) end}\n\
                   redis.register_function{function_name='change_ro', callback=function(_, args) return redis.call(unpack(args)) end, flags={'no-writes'}}";
        let _: String = redis::cmd("FUNCTION").arg("LOAD").arg(lib).query(c).unwrap();
        let script = "return redis.call(unpack(ARGV))";
        let changes: [&[&str]; 4] = [
            &["SET", "new", "FIXED", "1", "1s"],
            &["DEL", "free"],
            &["LOAD"],
            &["SAVE"],
        ];
        for change in changes {
            let calls = [
                redis::cmd("EVAL").arg(script).arg(0).arg("RL.POLICY").arg(change).clone(),
                redis::cmd("EVAL_RO").arg(script).arg(0).arg("RL.POLICY").arg(change).clone(),
                redis::cmd("FCALL").arg("change").arg(0).arg("RL.POLICY").arg(change).clone(),
                redis::cmd("FCALL_RO").arg("change_ro").arg(0).arg("RL.POLICY").arg(change).clone(),
            ];
            for call in calls {
                let err = call.query::<redis::Value>(c).unwrap_err();
                assert!(error_text(&err).contains("not allowed from script"), "{change:?}: {err}");
            }
        }
        std::fs::write(&path, "other FIXED 3 1m\n").unwrap();
        assert_eq!(run::<Vec<String>>(c, "RL.POLICY LIST"), ["free FIXED 3 1m"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "other FIXED 3 1m\n");
        // Reading them is no change: scripts may.
        for read in [&["GET", "free"][..], &["LIST"], &["DIGEST"]] {
            let got: redis::Value = redis::cmd("EVAL_RO").arg(script).arg(0).arg("RL.POLICY").arg(read).query(c).unwrap();
            assert_ne!(got, redis::Value::Nil, "{read:?}");
        }
        // Outside scripts, as ever.
        ok(c, "RL.POLICY SET new FIXED 1 1s");
        ok(c, "RL.POLICY LOAD");
        assert_eq!(run::<Vec<String>>(c, "RL.POLICY LIST"), ["other FIXED 3 1m"]);
    }

    fn help_lists_the_subcommands(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let unknown = rl_err(c, "RL.POLICY FOO");
        assert!(unknown.contains("Try RL.POLICY HELP"), "{unknown}");
        let help: Vec<String> = run(c, "RL.POLICY HELP");
        assert_eq!(help[0], "RL.POLICY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        assert_eq!(help[help.len() - 2..], ["HELP", "    Print this help."]);
        for sub in ["SET", "DEL", "GET", "LIST", "DIGEST", "LOAD", "SAVE", "HELP"] {
            assert!(help.iter().any(|l| l.split(' ').next() == Some(sub)), "{sub}: {help:?}");
        }
        // As Redis's own: one line names a subcommand, the next lines say what it does.
        assert!(help[1..].iter().all(|l| l.starts_with("    ") || l.starts_with(|c: char| c.is_ascii_uppercase())));
        assert_eq!(rl_err(c, "RL.POLICY HELP me"), "ERR wrong number of arguments for 'rl.policy|help' command");
        // A user who may change nothing may read it.
        ok(c, "ACL SETUSER app on >pw ~* +@all -@admin");
        let mut app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", s.port))
            .unwrap()
            .get_connection()
            .unwrap();
        assert_eq!(run::<Vec<String>>(&mut app, "RL.POLICY HELP"), help);
    }
}
