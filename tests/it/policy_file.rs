//! The policy file (`policy-file PATH`), read and written as Redis reads and
//! writes an ACL file: read at load (a bad file refuses the load, its line
//! named), `RL.POLICY LOAD` all or nothing, `RL.POLICY SAVE` through a
//! temporary file renamed over it; the path is fixed at load.

use crate::common::*;

use redis::Value;

fn ok(c: &mut redis::Connection, words: &str) {
    assert_eq!(run::<String>(c, words), "OK", "{words}");
}

fn list(c: &mut redis::Connection) -> Vec<String> {
    run(c, "RL.POLICY LIST")
}

/// `MODULE LOAD` with `args` on a server started without the module.
fn module_load(s: &Server, args: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd("MODULE")
        .arg("LOAD")
        .arg(module_path().to_str().unwrap())
        .arg(args)
        .query(&mut s.conn())
}

const FILE: &str =
    "# tiers\nfree FIXED 3 1m\n\n   # indented comment\npro\tGCRA 10 1s burst 5 SHADOW\r\n";

server_tests! {
    fn the_file_is_read_at_load_and_after_a_restart(flavor) {
        let dir = temp_folder(&format!("start-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        let file = path.to_str().unwrap();
        // As a module argument.
        let s = Server::start_with(flavor, &["--no-module", "--enable-module-command", "yes"]);
        module_load(&s, &["policy-file", file]).unwrap();
        let c = &mut s.conn();
        assert_eq!(list(c), ["free FIXED 3 1m", "pro GCRA 10 1s BURST 5 SHADOW"]);
        assert_eq!(run::<Vec<String>>(c, "CONFIG GET rl.policy-file"), ["rl.policy-file", file]);
        // Fixed at load: no command points the module at another file.
        assert!(redis::cmd("CONFIG").arg("SET").arg("rl.policy-file").arg("/etc/passwd").query::<Value>(c).is_err());
        // As a setting in the server's configuration, and again after a restart.
        let mut s = Server::start_with(flavor, &["--rl.policy-file", file]);
        assert_eq!(list(&mut s.conn()), ["free FIXED 3 1m", "pro GCRA 10 1s BURST 5 SHADOW"]);
        ok(&mut s.conn(), "RL.POLICY SET gold SLIDING 1000 1m");
        ok(&mut s.conn(), "RL.POLICY SAVE");
        s.restart();
        assert_eq!(list(&mut s.conn()), ["free FIXED 3 1m", "gold SLIDING 1000 1m", "pro GCRA 10 1s BURST 5 SHADOW"]);
    }

    fn a_bad_file_refuses_the_load_and_names_its_line(flavor) {
        let dir = temp_folder(&format!("bad-{flavor:?}"));
        let s = Server::start_with(flavor, &["--no-module", "--enable-module-command", "yes"]);
        let cases = [
            ("free FIXED 3 1m\nfree FIXED 4 1m\n", "line 2: a policy of this name is on an earlier line"),
            ("# ok\nfree FIXED 0 1m\n", "line 2: limit must be an integer from 1 to 1000000000000"),
            ("a{b} FIXED 3 1m\n", "line 1: a policy name is 1 to 64"),
            ("free NOPE 3 1m\n", "line 1: RL.POLICY SET expects an algorithm"),
            ("free FIXED 3 1m COST 2\n", "line 1: unknown option 'COST'"),
            ("free FIXED 3 1m\ndigest FIXED 3 1m\n", "line 2: the policy name 'digest' is reserved"),
        ];
        for (i, (text, message)) in cases.iter().enumerate() {
            let path = dir.join(format!("bad-{i}.conf"));
            std::fs::write(&path, text).unwrap();
            assert!(module_load(&s, &["policy-file", path.to_str().unwrap()]).is_err(), "{text:?}");
            let log = s.log();
            assert!(log.contains(&format!("policy file {} {message}", path.display())), "{message}: {log}");
        }
        let missing = dir.join("missing.conf");
        assert!(module_load(&s, &["policy-file", missing.to_str().unwrap()]).is_err());
        assert!(s.log().contains(&format!("policy file {}: No such file", missing.display())));
        let modules: Value = run(&mut s.conn(), "MODULE LIST");
        assert!(!format!("{modules:?}").contains("librl"), "{modules:?}");
    }

    fn load_is_all_or_nothing(flavor) {
        let dir = temp_folder(&format!("load-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SET extra FIXED 1 1s");
        let before = list(c);
        let file = path.display();
        for (text, error) in [
            ("free FIXED 5 1m\nbroken\n", format!("ERR policy file {file} line 2: RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA")),
            ("free GCRA 5 1m\n", format!("ERR policy file {file} line 1: policy 'free' is FIXED: DEL it before giving it another algorithm")),
            (&format!("free FIXED 5 1m\n{}\n", "#".repeat(1_025)), format!("ERR policy file {file} line 2: a line is longer than 1024 bytes")),
            ("digest FIXED 5 1m\n", format!("ERR policy file {file} line 1: the policy name 'digest' is reserved: INFO rl's field rl_policy_digest is the module's own")),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(rl_err(c, "RL.POLICY LOAD"), error);
            assert_eq!(list(c), before, "{text:?}");
        }
        let _: () = run(c, "CONFIG SET rl.max-policies 1");
        std::fs::write(&path, "a FIXED 1 1s\nb FIXED 1 1s\n").unwrap();
        assert_eq!(rl_err(c, "RL.POLICY LOAD"), format!("ERR policy file {file} line 2: at most 1 policies (rl.max-policies)"));
        let _: () = run(c, "CONFIG SET rl.max-policies 1000");
        // A file past the bound is refused without being read whole.
        let big = std::fs::File::create(&path).unwrap();
        big.set_len(16_777_217).unwrap();
        assert_eq!(rl_err(c, "RL.POLICY LOAD"), format!("ERR policy file {file}: larger than 16777216 bytes"));
        assert_eq!(list(c), before);
        // A good file replaces the whole set.
        std::fs::write(&path, "free FIXED 5 1m\nnew SLIDING 2 1s\n").unwrap();
        let digest_before = info(c, "rl", "rl_policy_digest");
        ok(c, "RL.POLICY LOAD");
        assert_eq!(list(c), ["free FIXED 5 1m", "new SLIDING 2 1s"]);
        let digest: String = run(c, "RL.POLICY DIGEST");
        assert_eq!(info(c, "rl", "rl_policy_digest"), digest);
        assert_ne!(digest, digest_before);
        assert_eq!(rl(c, "RL.LIMIT k free")[..3], [1, 5, 4]);
    }

    fn save_writes_the_list_through_a_renamed_temporary_file(flavor) {
        let dir = temp_folder(&format!("save-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        let _: i64 = run(c, "RL.POLICY DEL free");
        ok(c, "RL.POLICY SET alpha leaky 5 1 1s");
        ok(c, "RL.POLICY SAVE");
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(saved, "alpha LEAKY 5 1 1s\npro GCRA 10 1s BURST 5 SHADOW\n");
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(files, ["rl.conf"], "no temporary file is left");
        // A write that cannot happen (the folder is gone) is an error and changes nothing.
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(rl_err(c, "RL.POLICY SAVE").starts_with(&format!("ERR policy file {}: ", path.display())));
        assert_eq!(list(c), ["alpha LEAKY 5 1 1s", "pro GCRA 10 1s BURST 5 SHADOW"]);
    }

    fn without_a_file_load_and_save_are_errors(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        for call in ["RL.POLICY LOAD", "RL.POLICY SAVE"] {
            assert_eq!(rl_err(c, call), "ERR no policy file: load the module with policy-file PATH");
        }
    }

    fn load_and_save_are_admin(flavor) {
        let dir = temp_folder(&format!("acl-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        ok(&mut s.conn(), "ACL SETUSER app on >pw ~* +@all -@admin");
        let mut app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", s.port))
            .unwrap()
            .get_connection()
            .unwrap();
        for call in ["RL.POLICY LOAD", "RL.POLICY SAVE"] {
            assert!(rl_err(&mut app, call).starts_with("NOPERM"), "{call}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FILE);
    }
}
