//! The README's redis-rs snippet, run against real servers, and quoted verbatim by the README.

mod common;
use common::*;

/// The README's "Clients" section quotes the lines between the markers.
fn readme_snippet(url: &str) -> redis::RedisResult<(i64, i64, i64, i64, i64)> {
    // README: begin
    let mut con = redis::Client::open(url)?.get_connection()?;
    let (allowed, limit, remaining, retry_after_ms, reset_after_ms): (i64, i64, i64, i64, i64) =
        redis::cmd("RL.GCRA")
            .arg("user:42")
            .arg(10)
            .arg("1s")
            .arg("BURST")
            .arg(5)
            .query(&mut con)?;
    // README: end
    Ok((allowed, limit, remaining, retry_after_ms, reset_after_ms))
}

/// The snippet's lines, without the function body's indentation.
fn snippet_text() -> String {
    let source = include_str!("clients.rs");
    let begin = source.find("// README: begin\n").unwrap() + "// README: begin\n".len();
    let end = source[begin..].find("    // README: end").unwrap() + begin;
    source[begin..end]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn readme_quotes_the_redis_rs_snippet() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let snippet = snippet_text();
    assert!(snippet.contains("RL.GCRA"), "{snippet}");
    assert!(
        readme.contains(&snippet),
        "README.md does not quote tests/clients.rs verbatim:\n{snippet}"
    );
}

server_tests! {
    fn redis_rs_snippet(flavor) {
        let s = Server::start(flavor);
        assert_eq!(readme_snippet(&s.url()).unwrap(), (1, 5, 4, 0, 100));
        let state: String = run(&mut s.conn(), "GET user:42");
        assert!(state.starts_with("gcra:"), "{state}");
    }
}
