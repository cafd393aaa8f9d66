//! The tower layer's examples (docs/rust.md shows them verbatim) served as they are, against
//! redis-server with the module and without it, and a three-master cluster, and driven over
//! HTTP: the plan, the export endpoint and the address each deny at their limit with the
//! layer's 429, and /metrics counts what they decided.
#![cfg(feature = "tower")]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{Cluster, Kind, Server};

/// The example's binary, which `cargo test` builds beside this test's.
fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "{} is not built (cargo test --features tower builds it)",
        path.display()
    );
    path
}

/// The example serving on a free port: the process (killed on drop) and its base URL.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(name: &str, env: &[(&str, String)]) -> (Served, String) {
    let mut child = Command::new(example(name))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("RL_BIND", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("examples/{name}.rs said {line:?}"))
        .to_string();
    (Served(child), base)
}

async fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut r = reqwest::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_axum_example_on_the_module_and_the_library() {
    for kind in [Kind::Module, Kind::Library] {
        let server = Server::start(kind);
        let (_app, base) = serve("axum", &[("RL_REDIS_URL", server.url())]);
        let free = [
            ("x-forwarded-for", "203.0.113.7"),
            ("x-api-key", "free-key"),
        ];
        let mut got = Vec::new();
        for _ in 0..6 {
            got.push(get(&base, "/hello", &free).await);
        }
        assert_eq!(got[..5], vec![(200, "hello\n".to_string()); 5][..]);
        assert_eq!(
            got[5],
            (
                429,
                r#"{"error": "rate limited", "layer": "plan"}"#.to_string()
            )
        );
        // The export endpoint's own limit, from another address with a pro key.
        let pro = [
            ("x-forwarded-for", "198.51.100.1"),
            ("x-api-key", "pro-key"),
        ];
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(get(&base, "/export", &pro).await.0);
        }
        assert_eq!(got, [200, 200, 429]);
        let (status, text) = get(&base, "/metrics", &[]).await;
        assert_eq!(status, 200);
        assert!(
            text.contains("rl_decisions_total{layer=\"plan\",result=\"over_limit\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("rl_decisions_total{layer=\"export\",result=\"over_limit\"} 1\n"),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_axum_cluster_example() {
    let cluster = Cluster::start(true);
    let urls = cluster
        .nodes
        .iter()
        .map(Server::url)
        .collect::<Vec<_>>()
        .join(" ");
    let (_app, base) = serve("axum_cluster", &[("RL_CLUSTER_URLS", urls)]);
    let mut got = Vec::new();
    for user in ["ann", "ann", "ann", "ann", "bob", "{x}"] {
        got.push(
            get(
                &base,
                "/",
                &[("x-forwarded-for", "203.0.113.7"), ("x-user", user)],
            )
            .await
            .0,
        );
    }
    assert_eq!(got, [200, 200, 200, 429, 200, 200]);
    // No user: the address's layer alone, under the same tag.
    assert_eq!(
        get(&base, "/", &[("x-forwarded-for", "203.0.113.7")])
            .await
            .0,
        200
    );
}
