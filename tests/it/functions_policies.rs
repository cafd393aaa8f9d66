//! Named policies in the Functions library: `scripts/library-policies.py` writes a
//! policy file into `functions/rl.lua`, and the library then decides
//! `FCALL rl_limit`, `FCALL_RO rl_peek … POLICY` and `rl_all`'s `POLICY` clauses,
//! and answers `FCALL_RO rl_policy 0 LIST | GET | DIGEST`, as the module
//! loaded with the same file answers `RL.LIMIT`, `RL.PEEK POLICY`, `RL.ALL` and
//! `RL.POLICY`: the same replies (times within the real time between the calls)
//! and the same errors, on Redis 7.0 and Valkey 9.1, the library on a server
//! without the module. A bad line is the same error on both.

use crate::common::backend::{is_lua_runtime_error, library_source, replies_agree, Backend};
use crate::common::*;
use crate::functions::state;

use std::path::Path;
use std::process::Command;

const FILE: &str = "\
# every kind, a shadow, and a policy named as an algorithm
free   FIXED 3 1h
g      GCRA 10 1h burst 3
tb     TOKENBUCKET 3 1 1h
lk     LEAKY 3 1 1h
sl     SLIDING 3 1h
log    SLIDINGLOG 3 1h
trial  FIXED 1 1h SHADOW
FIXED  FIXED 1 1h\r
# penalties, a shadow one, SHADOW between PENALTY d and ESCALATE max
pen    FIXED 1 1h penalty 2h escalate 1d
spen   GCRA 1 1h PENALTY 2h SHADOW
lpen   SLIDINGLOG 1 1h PENALTY 30m SHADOW ESCALATE 2h
";

/// The library with `file`'s policies written in, as the script writes it.
pub(crate) fn library_with(file: &Path) -> String {
    let out = Command::new("python3")
        .arg(manifest_dir().join("scripts/library-policies.py"))
        .arg(file)
        .output()
        .expect("run scripts/library-policies.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn load(c: &mut redis::Connection, source: &str) {
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(source)
        .query(c)
        .unwrap();
    assert_eq!(name, "rl");
}

/// The module with `file` as its policy file, and a module-less server with the
/// library holding the same policies.
fn pair(flavor: Flavor, file: &Path) -> (Server, Server) {
    let module = Server::start_with(flavor, &["--rl.policy-file", file.to_str().unwrap()]);
    let library = Server::start_with(flavor, &["--no-module"]);
    load(&mut library.conn(), &library_with(file));
    (module, library)
}

/// Runs `call` (module words) on both and checks the replies agree.
fn both(m: &mut redis::Connection, l: &mut redis::Connection, call: &str) -> Result<Value, String> {
    let a = Backend::Module.value(m, call);
    let b = Backend::Library.value(l, call);
    if let Err(e) = &b {
        assert!(!is_lua_runtime_error(e), "{call}: {e}");
    }
    assert!(
        replies_agree(&a, &b, 1_000),
        "{call}:\n  module  {a:?}\n  library {b:?}"
    );
    a
}

server_tests! {
    fn the_library_decides_by_policies_as_the_module(flavor) {
        let dir = temp_folder(&format!("decide-{flavor:?}"));
        let file = dir.join("rl.conf");
        std::fs::write(&file, FILE).unwrap();
        let (module, library) = pair(flavor, &file);
        let (m, l) = (&mut module.conn(), &mut library.conn());
        for p in ["free", "g", "tb", "lk", "sl", "log"] {
            for call in [
                "RL.LIMIT k p COST 2",
                "RL.PEEK POLICY k p COST 1",
                "RL.LIMIT k p",
                "RL.LIMIT k p",
                "RL.LIMIT k p PEEK",
                "RL.LIMIT k p REFUND 1",
                "RL.LIMIT k p BLOCK 10",
                "RL.LIMIT k p COST 0",
                "RL.PEEK POLICY k p",
                // A debit goes into debt past the limit, and is never denied.
                "RL.LIMIT k p DEBIT 5",
                "RL.LIMIT k p",
                "RL.LIMIT k p DEBIT 1000000000000",
                "RL.PEEK POLICY k p",
                "RL.LIMIT k p REFUND 1000000000000",
            ] {
                let _ = both(m, l, &call.replace(" k p", &format!(" k{p} {p}")));
            }
        }
        for call in [
            // A shadow: its denials answered as admitted, nothing written by them.
            "RL.LIMIT t trial",
            "RL.LIMIT t trial",
            "RL.PEEK POLICY t trial COST 5",
            // A shadowed denial with units left: answered with none left.
            "RL.LIMIT t2 trial COST 2",
            "RL.PEEK POLICY t2 trial COST 2",
            "RL.ALL 2 a2 b2 FIXED 5 1h POLICY trial COST 2",
            // Layers by name beside layers spelt out; a shadow layer denies nothing.
            "RL.ALL 3 a b c FIXED 5 1h POLICY trial POLICY free COST 2",
            "RL.ALL 3 a b c FIXED 5 1h POLICY trial POLICY free COST 2",
            "RL.ALL 3 a b c FIXED 5 1h POLICY trial POLICY free COST 2",
            "RL.ALL 2 a c FIXED 5 1h POLICY free PEEK",
            // A policy named as an algorithm's word is a name after POLICY.
            "RL.ALL 2 y z POLICY FIXED FIXED 5 1h",
            "RL.PEEK POLICY z FIXED",
            // POLICY clauses take REFUND and DEBIT; a denied call spends no layer's.
            "RL.ALL 2 d1 d2 POLICY g DEBIT 4 POLICY free COST 2",
            "RL.ALL 2 d1 d2 POLICY g POLICY free DEBIT 9",
            "RL.ALL 2 d1 d6 POLICY g REFUND 2 POLICY log DEBIT 4",
            "RL.ALL 2 d1 d3 POLICY g POLICY sl DEBIT 4",
            "RL.ALL 2 d1 d3 POLICY g REFUND 9 POLICY sl REFUND 1",
            "RL.LIMIT d4 trial DEBIT 3",
            "RL.ALL 2 d4 d5 POLICY trial DEBIT 2 POLICY tb",
            // Penalties: started by a denial, seen by every call; a shadow records
            // its own (BLOCK never keeps it from starting one) and answers as admitted.
            "RL.LIMIT pk pen",
            "RL.LIMIT pk pen",
            "RL.LIMIT pk pen",
            "RL.PEEK POLICY pk pen",
            "RL.PEEK POLICY pk pen COST 0",
            "RL.LIMIT pk pen REFUND 1",
            "RL.LIMIT pk pen COST 0",
            "RL.LIMIT pk free",
            "RL.LIMIT ps spen",
            "RL.LIMIT ps spen BLOCK 100000",
            "RL.LIMIT ps spen",
            "RL.PEEK POLICY ps spen",
            "RL.LIMIT pl lpen",
            "RL.LIMIT pl lpen PEEK",
            "RL.LIMIT pl lpen",
            "RL.LIMIT pl lpen",
            "RL.ALL 2 pa pb POLICY pen POLICY free",
            "RL.ALL 2 pa pb POLICY pen POLICY free",
            "RL.ALL 2 pa pb POLICY pen POLICY free",
            "RL.ALL 2 pc pd POLICY spen POLICY lpen",
            "RL.ALL 2 pc pd POLICY spen POLICY lpen",
            "RL.ALL 2 pc pd POLICY spen POLICY lpen PEEK",
            "RL.BAN pe 60000",
            "RL.LIMIT pe free",
            "RL.PEEK POLICY pe spen",
        ] {
            let _ = both(m, l, call);
        }
        // The same state on both: penalties included (their end and keep within the
        // real time between the calls).
        for key in ["pk", "ps", "pl", "pa", "pb", "pc", "pd", "pe"] {
            let ((sm, im), (sl, il)) = (state(m, key), state(l, key));
            assert_eq!(sm, sl, "{key}");
            assert!(sm.contains("penalty") || key == "pb", "{key}: {sm}");
            for (x, y) in im.iter().zip(&il) {
                assert!((x - y).abs() <= 1_000_000_000, "{key}: {x} vs {y}");
            }
        }
        let _: () = run(m, "SET wrong x");
        let _: () = run(l, "SET wrong x");
        for call in [
            "RL.LIMIT k nope",
            "RL.LIMIT k bad{name}",
            "RL.LIMIT k free WAIT 1",
            "RL.LIMIT k free COST 1 REFUND 1",
            "RL.LIMIT k free COST",
            "RL.LIMIT k free COST x",
            "RL.LIMIT k free PEEK PEEK",
            "RL.LIMIT k free BLOCK 1 BLOCK 2",
            "RL.LIMIT kg free",
            "RL.LIMIT wrong free",
            "RL.PEEK POLICY k free REFUND 1",
            "RL.PEEK POLICY k free COST x FOO",
            "RL.PEEK POLICY k nope",
            "RL.PEEK POLICY k",
            "RL.ALL 1 k POLICY",
            "RL.ALL 1 k POLICY free BURST 2",
            "RL.ALL 1 k POLICY free COST 1 COST 2",
            "RL.ALL 2 a b POLICY nope FIXED 1 1s",
            "RL.ALL 2 a b POLICY free",
            "RL.LIMIT k free DEBIT 0",
            "RL.LIMIT k free DEBIT",
            "RL.LIMIT k free DEBIT 1 DEBIT 1",
            "RL.LIMIT k free DEBIT 1 PEEK",
            "RL.LIMIT k free BLOCK 5 DEBIT 1",
            "RL.LIMIT k free COST 1 DEBIT 1",
            "RL.LIMIT k free DEBIT 1 REFUND 1",
            "RL.LIMIT k free DEBIT 1 XYZ",
            "RL.PEEK POLICY k free DEBIT 1",
            "RL.ALL 1 k POLICY free DEBIT 1 PEEK",
            "RL.ALL 1 k POLICY free DEBIT 1000000000001",
            "RL.ALL 1 k POLICY free REFUND 1 COST 1",
            "RL.ALL 1 k POLICY free REFUND 1 DEBIT 1",
            "RL.ALL 1 k POLICY free PEEK 1",
            "RL.ALL 2 a b POLICY free DEBIT 1 FIXED 1 1s PEEK",
            "RL.LIMIT k pen PENALTY 1m",
            "RL.ALL 1 k POLICY pen PENALTY 1m",
            "RL.PEEK POLICY k pen PENALTY 1m",
        ] {
            assert!(both(m, l, call).is_err(), "{call}");
        }
        // The policies as RL.POLICY's read-only subcommands give them.
        let list: Vec<String> = run(m, "RL.POLICY LIST");
        assert_eq!(run::<Vec<String>>(l, "FCALL_RO rl_policy 0 LIST"), list);
        assert!(list.contains(&"g GCRA 10 1h BURST 3".to_owned()), "{list:?}");
        assert_eq!(run::<String>(l, "FCALL_RO rl_policy 0 DIGEST"), run::<String>(m, "RL.POLICY DIGEST"));
        assert_eq!(run::<String>(l, "FCALL_RO rl_policy 0 GET trial"), "trial FIXED 1 1h SHADOW");
        assert!(list.contains(&"pen FIXED 1 1h PENALTY 2h ESCALATE 1d".to_owned()), "{list:?}");
        assert!(list.contains(&"lpen SLIDINGLOG 1 1h PENALTY 30m SHADOW ESCALATE 2h".to_owned()), "{list:?}");
        assert_eq!(run::<Option<String>>(l, "FCALL_RO rl_policy 0 GET nope"), None);
        // Every read comes before the first write: a shadow layer's penalty start reads
        // its key's expiry, so an ACL without PEXPIRETIME refuses the call before the
        // admitting layer is written.
        let _: () = run(l, "ACL SETUSER nox on >pw ~* resetchannels +@all -pexpiretime");
        let u = &mut library.conn();
        let _: () = run(u, "AUTH nox pw");
        assert_eq!(Backend::Library.rl(u, "RL.LIMIT sx spen")[0], 1);
        let refused = Backend::Library.err(u, "RL.ALL 2 ax sx FIXED 5 1h POLICY spen");
        assert!(refused.starts_with("ERR ") && !is_lua_runtime_error(&refused), "{refused}");
        assert_eq!(run::<i64>(l, "EXISTS ax"), 0);
    }

    fn a_bad_line_is_the_same_error_on_both_and_no_policy_is_held(flavor) {
        let dir = temp_folder(&format!("bad-{flavor:?}"));
        let file = dir.join("rl.conf");
        std::fs::write(&file, FILE).unwrap();
        let (module, library) = pair(flavor, &file);
        let (m, l) = (&mut module.conn(), &mut library.conn());
        // Comment lines are not written into the library: their numbers still count.
        let comments = "# a comment\n\n".repeat(20_000);
        // One policy too many (rl.max-policies' default, 1,000), and lines after it.
        let too_many: String = (0..1_005).map(|i| format!("ok{i} FIXED 1 1h\n")).collect();
        for bad in [
            "ok FIXED 1 1h\nsecond FIXED 0 1h\n",
            "ok FIXED 1 1h\nok SLIDING 1 1h\n",
            "ok GCRA 1 1h COST 2\n",
            "ok GCRA 1 1h SHADOW SHADOW\n",
            "ok NOPE 1 1h\n",
            "ok FIXED 1\n",
            "o{k} FIXED 1 1h\n",
            "ok FIXED 1 1h\ndigest FIXED 1 1h\n",
            "ok FIXED 1 1h PENALTY 1h ESCALATE 1m\n",
            "ok FIXED 1 1h PENALTY\n",
            "ok FIXED 1 1h PENALTY SHADOW\n",
            "ok GCRA 1 1h ESCALATE 1h\n",
            "ok FIXED 1 1h PENALTY 1m PENALTY 1m\n",
            "ok FIXED 1 1h PENALTY 0 SHADOW\n",
            &format!("{comments}ok FIXED 1 1h\nsecond FIXED 0 1h\n"),
            &too_many,
        ] {
            std::fs::write(&file, bad).unwrap();
            let expected = rl_err(m, "RL.POLICY LOAD");
            assert!(expected.starts_with(&format!("ERR policy file {} line ", file.display())), "{expected}");
            let source = library_with(&file);
            // What the library holds of the file: its policy lines, at most 1,001 of them.
            assert!(source.len() < library_source().len() + 40_000, "{} bytes", source.len());
            load(l, &source);
            for call in ["RL.LIMIT k ok", "RL.PEEK POLICY k ok", "RL.ALL 1 k POLICY ok"] {
                assert_eq!(Backend::Library.err(l, call), expected, "{bad:?}: {call}");
            }
            assert_eq!(rl_err(l, "FCALL_RO rl_policy 0 LIST"), expected);
            // Every other function still answers.
            assert_eq!(Backend::Library.rl(l, "RL.FIXED f 1 1h")[0], 1);
            let _: () = run(l, "DEL f");
        }
    }

    fn a_library_without_policies_holds_none(flavor) {
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        assert_eq!(run::<Vec<String>>(c, "FCALL_RO rl_policy 0 LIST"), Vec::<String>::new());
        assert_eq!(Backend::Library.err(c, "RL.LIMIT k free"), "ERR no such policy 'free'");
        // The empty set's digest, as a module holding none gives it.
        let m = Server::start(flavor);
        assert_eq!(run::<String>(c, "FCALL_RO rl_policy 0 DIGEST"), run::<String>(&mut m.conn(), "RL.POLICY DIGEST"));
    }
}
