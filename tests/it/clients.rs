//! The redis-rs snippet of docs/clients.md, run against real servers, and quoted verbatim there.

use crate::common::*;

/// docs/clients.md (the redis-rs snippet) quotes the lines between the markers.
fn clients_md_snippet(url: &str) -> redis::RedisResult<(i64, i64, i64, i64, i64)> {
    // docs/clients.md: begin
    let mut con = redis::Client::open(url)?.get_connection()?;
    let (allowed, limit, remaining, retry_after_ms, reset_after_ms): (i64, i64, i64, i64, i64) =
        redis::cmd("RL.GCRA")
            .arg("user:42")
            .arg(10)
            .arg("1s")
            .arg("BURST")
            .arg(5)
            .query(&mut con)?;
    // docs/clients.md: end
    Ok((allowed, limit, remaining, retry_after_ms, reset_after_ms))
}

/// The markers. BEGIN's search (for a real newline) skips this literal, which holds `\n`
/// as two characters; END is searched for after BEGIN, where the marker comes first.
const BEGIN: &str = "// docs/clients.md: begin\n";
const END: &str = "    // docs/clients.md: end";

/// The snippet's lines, without the function body's indentation.
fn snippet_text() -> String {
    let source = include_str!("clients.rs");
    let begin = source.find(BEGIN).unwrap() + BEGIN.len();
    let end = source[begin..].find(END).unwrap() + begin;
    source[begin..end]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn clients_md_quotes_the_redis_rs_snippet() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/clients.md");
    let doc = std::fs::read_to_string(path).expect("read docs/clients.md");
    let snippet = snippet_text();
    assert!(snippet.contains("RL.GCRA"), "{snippet}");
    assert!(
        doc.contains(&snippet),
        "docs/clients.md does not quote tests/it/clients.rs verbatim:\n{snippet}"
    );
}

server_tests! {
    fn redis_rs_snippet(flavor) {
        let s = Server::start(flavor);
        assert_eq!(clients_md_snippet(&s.url()).unwrap(), (1, 5, 4, 0, 100));
        let state: String = run(&mut s.conn(), "GET user:42");
        assert!(state.starts_with("gcra:"), "{state}");
    }
}
