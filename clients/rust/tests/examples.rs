//! Every example in examples/ (which docs/rust.md shows verbatim: tests/python/test_docs.py
//! checks the text) runs to its end against real servers: the module's, and the Functions
//! library's where the example does not define server-side policies; cluster.rs on a Redis
//! Cluster of three masters without the module.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Cluster, Kind, Server};

/// The example's binary, which `cargo test` builds beside this test's.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built (cargo test builds the examples)",
        path.display()
    );
    path
}

fn run(name: &str, env: &[(&str, String)]) -> String {
    let out = Command::new(example(name))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "examples/{name}.rs failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn examples_on_the_module_and_the_library() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let env = [("RL_REDIS_URL", s.url())];
        let out = run("quickstart", &env);
        let backend = if kind == Kind::Module {
            "module"
        } else {
            "library"
        };
        // As docs/rust.md shows it.
        let expected = [
            format!("allowed=true remaining=4 on the {backend}"),
            "X-RateLimit-Limit: 5".into(),
            "X-RateLimit-Remaining: 0".into(),
            "X-RateLimit-Reset: 1".into(),
            "Retry-After: 1".into(),
            "RateLimit-Policy: \"api\";q=10;w=1".into(),
            "RateLimit: \"api\";r=0;t=1".into(),
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), expected);
        run("reservations", &env);
        run("errors", &env);
        run("denial_cache", &env);
        if kind == Kind::Module {
            let out = run("policies", &env);
            assert!(
                out.contains("login denied for 60") && out.contains("shadowed: true\n"),
                "{out}"
            );
        }
    }
}

#[test]
fn the_cluster_example() {
    let cluster = Cluster::start(false);
    let urls = cluster
        .nodes
        .iter()
        .map(Server::url)
        .collect::<Vec<_>>()
        .join(" ");
    let out = run("cluster", &[("RL_CLUSTER_URLS", urls)]);
    assert_eq!(out, "decided on the library\n");
}
