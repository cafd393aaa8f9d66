//! The test vectors (`tests/vectors/*.txt`), every one on both backends and on
//! both servers: the module's commands sent as they are written, on a server with
//! the module loaded; and the same lines as `FCALL` through the Functions library,
//! on a server started without the module. (`tests/it/functions.rs` also runs them
//! on the two backends side by side and compares replies and stored state.)

use crate::common::vectors::{self, Report};
use crate::common::*;

fn report(what: &str, backend: Backend, report: &Report) {
    eprintln!(
        "{what}: {} scenarios, {} lines, {} replies checked through {backend:?}",
        report.scenarios, report.lines, report.checked
    );
    assert!(
        report.failures.is_empty(),
        "{} of {} vectors failed through {backend:?}:\n{}",
        report.failures.len(),
        report.checked,
        report.failures.join("\n")
    );
}

/// Deliberately wrong vectors, one per kind of expectation: each must be reported.
const WRONG: &str = "
== wrong on purpose
RL.GCRA K 1 1h BURST 5 -> 1 5 3 0 3600000
RL.GCRA K 1 1h BURST 5 -> 1 5 3 0 ~7199000
RL.GCRA K 1 1h BURST 5 -> 0 5 2 0 *
RL.GCRA K 1 1h BURST 5 -> 1 5 1 0 1..2
RL.FIXED K2 2 1h -> 1 2 1 0 @1h+1m
RL.GCRA K 10 -> (error) ERR wrong number of arguments for 'rl.fixed' command
RL.GCRA K 1 1h BURST 5 COST 0 -> (error) ERR anything
RL.GCRA K 0 1h -> 1 1 0 0 0
GET K4 -> \"world\"
EXISTS K -> (nil)
RL.ALL 1 K3 FIXED 2 1h -> 1 2 1 0 * [[1 2 0 0 *]]
RL.GCRA K6 1 1h -> 1 1 0 0 3600000 0
";

/// The example of the format in CONTRIBUTING.md ("Test vectors"), as written there.
fn contributing_example() -> Vec<vectors::Scenario> {
    let text = std::fs::read_to_string(manifest_dir().join("CONTRIBUTING.md")).unwrap();
    let section = &text[text
        .find("### Test vectors")
        .expect("the Test vectors section")..];
    let block = section.split("```\n").nth(1).expect("the example's block");
    vectors::parse("CONTRIBUTING.md", block)
}

fn wrong_vectors_are_reported(backend: Backend, s: &Server) {
    let scenarios = vectors::parse("wrong.txt", WRONG);
    let expected = scenarios[0].checked();
    let found = vectors::run_all(backend, &mut s.conn(), &scenarios, "wrong");
    assert_eq!(
        found.failures.len(),
        expected,
        "{backend:?}: every wrong vector must fail:\n{}",
        found.failures.join("\n")
    );
}

server_tests! {
    fn the_module_replies_every_vector(flavor) {
        let s = Server::start(flavor);
        let found = vectors::run_all(Backend::Module, &mut s.conn(), &vectors::load(), "v");
        report("the module", Backend::Module, &found);
    }

    fn the_library_without_the_module_replies_every_vector(flavor) {
        let s = Server::start_library(flavor, false);
        let found = vectors::run_all(Backend::Library, &mut s.conn(), &vectors::load(), "v");
        report("the library", Backend::Library, &found);
        // The module's commands are absent there: the lines went through FCALL.
        assert!(rl_err(&mut s.conn(), "RL.GCRA k 1 1s").contains("unknown command"));
    }

    fn the_formats_example_holds_on_either_backend(flavor) {
        let example = contributing_example();
        assert!(example.iter().map(vectors::Scenario::checked).sum::<usize>() >= 5);
        for (backend, s) in [
            (Backend::Module, Server::start(flavor)),
            (Backend::Library, Server::start_library(flavor, false)),
        ] {
            let found = vectors::run_all(backend, &mut s.conn(), &example, "doc");
            report("CONTRIBUTING.md's example", backend, &found);
        }
    }

    fn a_wrong_vector_fails_on_either_backend(flavor) {
        wrong_vectors_are_reported(Backend::Module, &Server::start(flavor));
        wrong_vectors_are_reported(Backend::Library, &Server::start_library(flavor, false));
    }
}
