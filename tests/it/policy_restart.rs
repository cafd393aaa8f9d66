//! Whatever `RL.POLICY SAVE` writes, the next start loads, as Redis loads the
//! RDB it wrote whatever `maxmemory` says by then: at start the policy file is
//! read against the largest values the settings can take, so settings raised
//! with `CONFIG SET` (and not saved) or lowered since never stop a restart; a
//! set larger than a policy file may hold is refused by `SAVE`, not by the
//! next start.

use crate::common::*;

fn ok(c: &mut redis::Connection, words: &str) {
    assert_eq!(run::<String>(c, words), "OK", "{words}");
}

/// Sets every `(name, definition)` in one round trip.
fn set_all(c: &mut redis::Connection, policies: impl Iterator<Item = (String, String)>) {
    let mut pipe = redis::pipe();
    for (name, definition) in policies {
        pipe.cmd("RL.POLICY")
            .arg("SET")
            .arg(name)
            .arg(definition.split(' ').collect::<Vec<_>>());
    }
    let replies: Vec<String> = pipe.query(c).unwrap();
    assert!(replies.iter().all(|r| r == "OK"));
}

server_tests! {
    fn more_policies_than_max_policies_load_after_a_restart(flavor) {
        let dir = temp_folder(&format!("count-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, "").unwrap();
        let mut s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let _: () = run(&mut s.conn(), "CONFIG SET rl.max-policies 1001");
        set_all(&mut s.conn(), (0..1001).map(|i| (format!("p{i:04}"), "FIXED 5 1m".into())));
        ok(&mut s.conn(), "RL.POLICY SAVE");
        // The setting was not saved: the server starts again with 1,000.
        s.restart();
        let c = &mut s.conn();
        assert_eq!(run::<Vec<String>>(c, "CONFIG GET rl.max-policies"), ["rl.max-policies", "1000"]);
        let held: Vec<String> = run(c, "RL.POLICY LIST");
        assert_eq!(held.len(), 1001, "LIST answers every policy held");
        assert_eq!(info(c, "rl", "rl_policies"), "1001");
        let log = s.log();
        assert!(log.contains(&format!(
            "rl: policy file {} holds 1001 policies, more than rl.max-policies (1000): all are loaded; RL.POLICY SET of a new name is refused until fewer are held",
            path.display()
        )), "{log}");
        // As after lowering the setting: held ones may change, no new name is added.
        ok(c, "RL.POLICY SET p0000 FIXED 6 1m");
        assert_eq!(rl_err(c, "RL.POLICY SET new FIXED 1 1m"), "ERR at most 1000 policies (rl.max-policies)");
        assert_eq!(rl(c, "RL.LIMIT k p1000")[..3], [1, 5, 4]);
    }

    fn a_policy_beyond_a_cap_set_at_start_loads_after_a_restart(flavor) {
        let dir = temp_folder(&format!("cap-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, "").unwrap();
        let mut s = Server::start_with(
            flavor,
            &["--rl.policy-file", path.to_str().unwrap(), "--rl.sliding-log-max-limit", "1000"],
        );
        let _: () = run(&mut s.conn(), "CONFIG SET rl.sliding-log-max-limit 10000");
        ok(&mut s.conn(), "RL.POLICY SET big SLIDINGLOG 5000 1m");
        ok(&mut s.conn(), "RL.POLICY SET small SLIDINGLOG 5 1m");
        ok(&mut s.conn(), "RL.POLICY SAVE");
        s.restart();
        let c = &mut s.conn();
        assert_eq!(run::<Vec<String>>(c, "RL.POLICY LIST"), ["big SLIDINGLOG 5000 1m", "small SLIDINGLOG 5 1m"]);
        let log = s.log();
        assert!(log.contains(&format!(
            "rl: policy file {} line 1: policy 'big' is loaded, but calls by it are refused until the settings allow it: limit must be an integer from 1 to 1000",
            path.display()
        )), "{log}");
        // It is refused at the call, as its command is; raising the cap again enables it.
        assert_eq!(rl_err(c, "RL.LIMIT k big"), "ERR limit must be an integer from 1 to 1000");
        assert_eq!(rl_err(c, "RL.SLIDINGLOG k 5000 1m"), "ERR limit must be an integer from 1 to 1000");
        assert_eq!(rl(c, "RL.LIMIT k2 small")[..3], [1, 5, 4]);
        let _: () = run(c, "CONFIG SET rl.sliding-log-max-limit 5000");
        assert_eq!(rl(c, "RL.LIMIT k big")[..3], [1, 5000, 4999]);
        // RL.POLICY LOAD is a change made now: it is held to the settings in force.
        let _: () = run(c, "CONFIG SET rl.sliding-log-max-limit 1000");
        assert_eq!(
            rl_err(c, "RL.POLICY LOAD"),
            format!("ERR policy file {} line 1: limit must be an integer from 1 to 1000", path.display())
        );
    }

    fn save_refuses_more_than_a_policy_file_may_hold(flavor) {
        let dir = temp_folder(&format!("large-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, "free FIXED 3 1m\n").unwrap();
        let mut s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let _: () = run(&mut s.conn(), "CONFIG SET rl.max-policies 20000");
        // 16,500 lines of 1,021 bytes (a limit written with leading zeros): more than 16 MiB.
        let limit = format!("{}1", "0".repeat(1_003));
        set_all(&mut s.conn(), (0..16_500).map(|i| (format!("p{i:05}"), format!("FIXED {limit} 1h"))));
        let line: Option<String> = run(&mut s.conn(), "RL.POLICY GET p00000");
        assert_eq!(line.unwrap().len() + 1, 1_021);
        assert_eq!(
            rl_err(&mut s.conn(), "RL.POLICY SAVE"),
            format!(
                "ERR policy file {}: the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written",
                path.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "free FIXED 3 1m\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left");
        s.restart();
        assert_eq!(run::<Vec<String>>(&mut s.conn(), "RL.POLICY LIST"), ["free FIXED 3 1m"]);
    }
}
