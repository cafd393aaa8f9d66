//! What docs/clients.md ("Rust web frameworks") and docs/rust.md say of `tower_governor` 0.8.0,
//! checked on the released crate served in an axum app over HTTP (reqwest on 127.0.0.1):
//!
//! - `SmartIpKeyExtractor` keys by the leftmost address of `X-Forwarded-For`, then `X-Real-IP`,
//!   then `Forwarded`, then the peer, whatever the peer: a client that writes the header gets a
//!   fresh quota; two IPv6 addresses of one /56 have a quota each;
//! - `PeerIpKeyExtractor` keys by the peer (127.0.0.1 and 127.0.0.2) and ignores the headers;
//! - a denial is a 429 `Too Many Requests! Wait for Ns`, N the seconds until one more request
//!   (GCRA: one period, not the burst's), rounded down, in `x-ratelimit-after` and
//!   `retry-after`; with `use_headers()`, admitted responses carry `x-ratelimit-limit` and
//!   `-remaining`, and denials those too (remaining 0);
//! - the counts are each instance's: two instances admit twice the limit, and a new one (a
//!   restart) admits the client again;
//! - stacked layers spend their quotas one by one: a request the inner layer denies has spent
//!   the outer layer's;
//! - the limiter keeps an entry per key ever seen, stale or not, until `retain_recent`.
#![cfg(feature = "tower")]

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::http::Request;
use axum::routing::get;
use axum::Router;
use common::serve;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, KeyExtractor, SmartIpKeyExtractor};
use tower_governor::{GovernorError, GovernorLayer};

/// One more request an hour (GCRA's period), bursts of `burst`.
const HOUR: u64 = 3600;

fn ok() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// A client whose connections come from `local` (any address of 127.0.0.0/8 is this host's).
fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

async fn status(http: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> u16 {
    let mut r = http.get(url);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap().status().as_u16()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smart_ip_key_extractor_takes_the_headers_of_any_peer_in_order() {
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(2)
        .key_extractor(SmartIpKeyExtractor)
        .finish()
        .unwrap();
    let base = serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await;
    let url = format!("{base}/");
    let one = client_from("127.0.0.1");
    let other = client_from("127.0.0.2");

    // The leftmost address of X-Forwarded-For is the key: what follows it changes nothing.
    let xff = "x-forwarded-for";
    assert_eq!(
        status(&one, &url, &[(xff, "198.51.100.1, 10.0.0.1")]).await,
        200
    );
    assert_eq!(
        status(&one, &url, &[(xff, "198.51.100.1, 10.0.0.2")]).await,
        200
    );
    assert_eq!(
        status(&one, &url, &[(xff, "198.51.100.1, 10.0.0.3")]).await,
        429
    );
    // From another peer, the same header is the same key.
    assert_eq!(status(&other, &url, &[(xff, "198.51.100.1")]).await, 429);
    // A client that writes another address gets a fresh quota, from any peer.
    assert_eq!(
        status(&one, &url, &[(xff, "198.51.100.2, 10.0.0.1")]).await,
        200
    );
    assert_eq!(status(&other, &url, &[(xff, "198.51.100.3")]).await, 200);

    // Without X-Forwarded-For, X-Real-IP; X-Forwarded-For first when both are there.
    let real = "x-real-ip";
    assert_eq!(status(&one, &url, &[(real, "192.0.2.1")]).await, 200);
    assert_eq!(status(&one, &url, &[(real, "192.0.2.1")]).await, 200);
    assert_eq!(status(&one, &url, &[(real, "192.0.2.1")]).await, 429);
    assert_eq!(
        status(&one, &url, &[(real, "192.0.2.1"), (xff, "192.0.2.9")]).await,
        200
    );

    // Then Forwarded; X-Real-IP first when both are there.
    let fwd = "forwarded";
    assert_eq!(
        status(&one, &url, &[(fwd, "for=192.0.2.60;proto=http")]).await,
        200
    );
    assert_eq!(status(&one, &url, &[(fwd, "for=192.0.2.60")]).await, 200);
    assert_eq!(status(&one, &url, &[(fwd, "for=192.0.2.60")]).await, 429);
    assert_eq!(
        status(&one, &url, &[(fwd, "for=192.0.2.60"), (real, "192.0.2.61")]).await,
        200
    );

    // None of them: the peer, each its own.
    assert_eq!(status(&one, &url, &[]).await, 200);
    assert_eq!(status(&one, &url, &[]).await, 200);
    assert_eq!(status(&one, &url, &[]).await, 429);
    assert_eq!(status(&other, &url, &[]).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smart_ip_key_extractor_gives_each_ipv6_address_its_own_quota() {
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(1)
        .key_extractor(SmartIpKeyExtractor)
        .finish()
        .unwrap();
    let base = serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await;
    let url = format!("{base}/");
    let http = reqwest::Client::new();
    let from = |address| {
        let url = url.clone();
        let http = http.clone();
        async move { status(&http, &url, &[("x-forwarded-for", address)]).await }
    };
    assert_eq!(from("2001:db8:0:100::1").await, 200);
    assert_eq!(from("2001:db8:0:100::1").await, 429);
    // The same /64, and the same /56: each a fresh quota.
    assert_eq!(from("2001:db8:0:100::2").await, 200);
    assert_eq!(from("2001:db8:0:1ff::1").await, 200);
    assert_eq!(from("2001:db8:0:1ff::1").await, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_ip_key_extractor_keys_by_the_peer() {
    // The default key extractor.
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(2)
        .finish()
        .unwrap();
    let base = serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await;
    let url = format!("{base}/");
    let one = client_from("127.0.0.1");
    let xff = "x-forwarded-for";
    assert_eq!(status(&one, &url, &[(xff, "198.51.100.1")]).await, 200);
    assert_eq!(status(&one, &url, &[(xff, "198.51.100.2")]).await, 200);
    assert_eq!(status(&one, &url, &[(xff, "198.51.100.3")]).await, 429);
    assert_eq!(status(&client_from("127.0.0.2"), &url, &[]).await, 200);
}

/// The denial after a burst of 3, one more an hour: its status, body and headers, and the
/// wait, one period less the time the test took, rounded down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_is_a_429_with_the_wait_in_its_body_and_headers() {
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(3)
        .finish()
        .unwrap();
    let base = serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await;
    let http = reqwest::Client::new();
    let start = Instant::now();
    for _ in 0..3 {
        let r = http.get(format!("{base}/")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        // Without use_headers(), an admitted response has none of its headers.
        for name in ["x-ratelimit-limit", "x-ratelimit-remaining", "retry-after"] {
            assert_eq!(header(&r, name), None, "{name}");
        }
        assert_eq!(r.text().await.unwrap(), "ok");
    }
    for _ in 0..2 {
        let r = http.get(format!("{base}/")).send().await.unwrap();
        let elapsed = start.elapsed().as_secs();
        assert_eq!(r.status(), 429);
        let after = header(&r, "x-ratelimit-after").unwrap();
        assert_eq!(header(&r, "retry-after"), Some(after.clone()));
        assert_eq!(header(&r, "x-ratelimit-limit"), None);
        assert_eq!(header(&r, "x-ratelimit-remaining"), None);
        let wait: u64 = after.parse().unwrap();
        // GCRA: one period until one more request (not the three of the burst), rounded down.
        assert!(
            HOUR - elapsed - 1 <= wait && wait < HOUR,
            "wait {wait} s after {elapsed} s"
        );
        assert_eq!(
            r.text().await.unwrap(),
            format!("Too Many Requests! Wait for {wait}s")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_headers_adds_the_limit_and_remaining() {
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(3)
        .use_headers()
        .finish()
        .unwrap();
    let base = serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await;
    let http = reqwest::Client::new();
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let r = http.get(format!("{base}/")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-ratelimit-limit").as_deref(), Some("3"));
        assert_eq!(header(&r, "retry-after"), None);
        assert_eq!(header(&r, "x-ratelimit-after"), None);
        remaining.push(header(&r, "x-ratelimit-remaining").unwrap());
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    // A denial has them too, with the wait.
    let r = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "x-ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(header(&r, "x-ratelimit-remaining").as_deref(), Some("0"));
    let after = header(&r, "x-ratelimit-after").unwrap();
    assert_eq!(header(&r, "retry-after"), Some(after.clone()));
    assert_eq!(
        r.text().await.unwrap(),
        format!("Too Many Requests! Wait for {after}s")
    );
}

/// An instance of the app: its own config, so its own limiter (as each process has).
async fn instance(burst: u32) -> String {
    let config = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(burst)
        .finish()
        .unwrap();
    serve(ok().layer(GovernorLayer::new(Arc::new(config)))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_admit_twice_the_limit_and_a_restart_forgets() {
    let http = reqwest::Client::new();
    let instances = [instance(3).await, instance(3).await];
    let mut admitted = 0;
    for i in 0..20 {
        let url = format!("{}/", instances[i % 2]);
        admitted += usize::from(status(&http, &url, &[]).await == 200);
    }
    assert_eq!(admitted, 6);
    // A new instance (the same app restarted) has forgotten the client.
    let restarted = format!("{}/", instance(3).await);
    assert_eq!(status(&http, &restarted, &[]).await, 200);
}

/// A key extractor of the crate's trait: the `x-api-key` header.
#[derive(Clone)]
struct ApiKey;

impl KeyExtractor for ApiKey {
    type Key = String;

    fn extract<T>(&self, req: &Request<T>) -> Result<String, GovernorError> {
        req.headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or(GovernorError::UnableToExtractKey)
    }
}

/// An API key's layer (4 a burst) around the app, a global one (2 a burst) on `/both`: the
/// requests the global layer denies have spent the API key's quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stacked_layers_spend_each_others_quota_one_by_one() {
    let by_key = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(4)
        .key_extractor(ApiKey)
        .finish()
        .unwrap();
    let global = GovernorConfigBuilder::default()
        .per_second(HOUR)
        .burst_size(2)
        .key_extractor(GlobalKeyExtractor)
        .finish()
        .unwrap();
    let app = Router::new()
        .route(
            "/both",
            get(|| async { "ok" }).layer(GovernorLayer::new(Arc::new(global))),
        )
        .route("/key", get(|| async { "ok" }))
        .layer(GovernorLayer::new(Arc::new(by_key)));
    let base = serve(app).await;
    let http = reqwest::Client::new();
    let both = format!("{base}/both");
    let key = format!("{base}/key");
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(status(&http, &both, &[("x-api-key", "a")]).await);
    }
    assert_eq!(got, [200, 200, 429, 429]);
    // Two requests served, and the key's quota of four is spent.
    assert_eq!(status(&http, &key, &[("x-api-key", "a")]).await, 429);
    assert_eq!(status(&http, &key, &[("x-api-key", "b")]).await, 200);
    // The global layer's own key: every client's (the peer is the same, the key another).
    assert_eq!(status(&http, &both, &[("x-api-key", "c")]).await, 429);
    // No key: the extractor's error, a 500.
    assert_eq!(status(&http, &key, &[]).await, 500);
}

/// An entry per address ever seen: stale entries (a period of 1 ns: every one is as fresh as
/// a new key a moment later) stay until `retain_recent`, which drops them and only them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limiter_keeps_every_key_until_retain_recent() {
    let build = |builder: &mut GovernorConfigBuilder<_, _>| {
        Arc::new(
            builder
                .burst_size(1)
                .key_extractor(SmartIpKeyExtractor)
                .finish()
                .unwrap(),
        )
    };
    let long = build(GovernorConfigBuilder::default().per_second(HOUR));
    let short = build(GovernorConfigBuilder::default().per_nanosecond(1));
    let app = Router::new()
        .route(
            "/long",
            get(|| async { "ok" }).layer(GovernorLayer::new(long.clone())),
        )
        .route(
            "/short",
            get(|| async { "ok" }).layer(GovernorLayer::new(short.clone())),
        );
    let base = serve(app).await;
    let http = reqwest::Client::new();
    for i in 0..50 {
        let address = format!("198.51.100.{i}");
        for path in ["long", "short"] {
            let url = format!("{base}/{path}");
            assert_eq!(
                status(&http, &url, &[("x-forwarded-for", &address)]).await,
                200
            );
        }
        // Seen again: denied for an hour, admitted at once.
        for (path, expected) in [("long", 429), ("short", 200)] {
            let url = format!("{base}/{path}");
            assert_eq!(
                status(&http, &url, &[("x-forwarded-for", &address)]).await,
                expected
            );
        }
    }
    assert_eq!(long.limiter().len(), 50);
    assert_eq!(short.limiter().len(), 50);
    long.limiter().retain_recent();
    short.limiter().retain_recent();
    assert_eq!(long.limiter().len(), 50);
    assert_eq!(short.limiter().len(), 0);
}
