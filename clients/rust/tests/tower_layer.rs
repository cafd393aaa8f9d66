//! The tower layer in a real axum server on 127.0.0.1:0, driven over HTTP by reqwest, on
//! redis-server with the module, without it (the Functions library), on valkey-server, and on
//! a three-master Redis Cluster: exactly the limit admitted out of 60 concurrent requests; the
//! headers and bodies of the Python package's ASGI middleware for the same decisions (computed
//! by the Python package itself); spoofed `X-Forwarded-For`, IPv6 rotation inside a /56, keys
//! with braces and of 8 KB; fail closed and fail open with the server down; cached denials that
//! reach no server; per-route layers; the counters' Prometheus text.
#![cfg(feature = "tower")]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use axum::extract::Extension;
use axum::response::Response;
use axum::routing::get as route_get;
use axum::Router;
use common::{serve, Cluster, Kind, Server};
use redis::aio::ConnectionLike;
use redis_rl::tower::{metrics_handler, Identify, RateLimitLayer, TrustedProxies};
use redis_rl::{Decision, Limiter, Policy};

/// Exposes the binding decision the layer put in the response's extensions as a header, so
/// the test can give the Python package the same decision.
async fn expose(mut r: Response) -> Response {
    if let Some(d) = r.extensions().get::<Decision>().cloned() {
        let text = format!(
            "{},{},{},{},{},{}",
            u8::from(d.allowed),
            d.limit,
            d.remaining,
            d.retry_after_ms,
            d.reset_after_ms,
            d.policy_name()
        );
        r.headers_mut()
            .insert("x-test-decision", text.parse().unwrap());
    }
    r
}

fn app<C>(layer: RateLimitLayer<C>) -> Router
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/", route_get(|| async { "ok" }))
        .route(
            "/remaining",
            route_get(|Extension(d): Extension<Decision>| async move { d.remaining.to_string() }),
        )
        .layer(layer)
        .layer(axum::middleware::map_response(expose))
}

fn by_address() -> Identify {
    Identify::client_ip(TrustedProxies::loopback())
}

async fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut r = reqwest::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

async fn from(base: &str, address: &str) -> u16 {
    get(base, "/", &[("x-forwarded-for", address)])
        .await
        .status()
        .as_u16()
}

/// 60 concurrent requests of one address against a limit of 30: exactly 30 admitted; every
/// denial a 429 with the JSON body and a Retry-After.
async fn sixty_concurrent<C>(limiter: Limiter<C>, tag: bool)
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut b = RateLimitLayer::builder(limiter)
        .layer("ip", by_address(), Policy::fixed(30, "1h"))
        .layer(
            "key",
            Identify::header("x-api-key").unwrap(),
            Policy::fixed(1000, "1h"),
        );
    if tag {
        b = b.tag("ip");
    }
    let base = serve(app(b.build().unwrap())).await;
    let http = reqwest::Client::new();
    let all = futures_util::future::join_all((0..60).map(|i| {
        http.get(format!("{base}/"))
            .header("x-forwarded-for", "203.0.113.7")
            .header("x-api-key", format!("key-{}", i % 7))
            .send()
    }))
    .await;
    let mut admitted = 0;
    for r in all {
        let r = r.unwrap();
        match r.status().as_u16() {
            200 => admitted += 1,
            429 => {
                assert!(
                    r.headers()["retry-after"]
                        .to_str()
                        .unwrap()
                        .parse::<u64>()
                        .unwrap()
                        > 0
                );
                assert_eq!(r.headers()["content-type"], "application/json");
                assert_eq!(
                    r.text().await.unwrap(),
                    r#"{"error": "rate limited", "layer": "ip"}"#
                );
            }
            other => panic!("status {other}"),
        }
    }
    assert_eq!(admitted, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_concurrent_clients_admit_exactly_the_limit_on_every_backend() {
    for kind in [
        Kind::Module,
        Kind::Library,
        Kind::ValkeyModule,
        Kind::ValkeyLibrary,
    ] {
        let server = Server::start(kind);
        sixty_concurrent(Limiter::new(server.multiplexed().await), false).await;
    }
    let cluster = Cluster::start(true);
    sixty_concurrent(Limiter::new(cluster.connection().await), true).await;
}

const PYTHON_HEADERS: &str = r#"
import json, sys
from redis_rl import policy
from redis_rl.decision import Decision
from redis_rl.policy import Policy
P = {"ip": policy.gcra(10, "1m", burst=3, name="ip"), "key": policy.sliding(5, "1m", name="key"),
     "free": "free"}
LAYER = {"ip": "ip", "key": "key", "free": "plan"}
out = []
for c in json.load(sys.stdin):
    allowed, limit, remaining, retry, reset, name = c.split(",")
    d = Decision(allowed == "1", int(limit), int(remaining), int(retry), int(reset), "module", P[name])
    h = {k.lower(): v for k, v in d.all_headers().items()}
    if d.allowed:
        h.pop("retry-after", None)
        body = None
    else:
        label = d.policy.name if isinstance(d.policy, Policy) else LAYER[name]
        body = json.dumps({"error": "rate limited", "layer": label})
    out.append({"headers": h, "body": body})
json.dump(out, sys.stdout)
"#;

const RATE_HEADERS: [&str; 6] = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "retry-after",
    "ratelimit-policy",
    "ratelimit",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_bodies_equal_the_python_packages() {
    let root = common::root();
    let server = Server::start(Kind::Module);
    server.cli(&["RL.POLICY", "SET", "free", "FIXED", "4", "1m"]);
    let limiter = Limiter::new(server.multiplexed().await);
    let layer = RateLimitLayer::builder(limiter)
        .layer("ip", by_address(), Policy::gcra(10, "1m").burst(3))
        .layer(
            "key",
            Identify::header("x-api-key").unwrap(),
            Policy::sliding(5, "1m"),
        )
        .layer(
            "plan",
            Identify::header("x-plan").unwrap(),
            Policy::named("free"),
        )
        .build()
        .unwrap();
    let base = serve(app(layer)).await;
    let mut seen = Vec::new();
    // The address's burst of 3 binds, then the key's 5 (from other addresses), then the
    // server-side plan's 4; admissions and denials of each.
    let mut sent: Vec<Vec<(&str, String)>> = Vec::new();
    for i in 0..5 {
        sent.push(vec![
            ("x-forwarded-for", "198.51.100.1".into()),
            ("x-api-key", format!("a{i}")),
        ]);
    }
    for i in 0..7 {
        sent.push(vec![
            ("x-forwarded-for", format!("198.51.100.{}", 10 + i)),
            ("x-api-key", "k".into()),
        ]);
    }
    for i in 0..6 {
        sent.push(vec![
            ("x-forwarded-for", format!("192.0.2.{i}")),
            ("x-plan", "p".into()),
        ]);
    }
    for headers in &sent {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = get(&base, "/", &h).await;
        let status = r.status().as_u16();
        let decision = r.headers()["x-test-decision"].to_str().unwrap().to_string();
        let mut got = serde_json::Map::new();
        for name in RATE_HEADERS {
            if let Some(v) = r.headers().get(name) {
                got.insert(name.into(), v.to_str().unwrap().into());
            }
        }
        let content_type = r.headers().get("content-type").cloned();
        let body = r.text().await.unwrap();
        if status == 429 {
            assert_eq!(content_type.unwrap(), "application/json");
        } else {
            assert_eq!((status, body.as_str()), (200, "ok"));
        }
        seen.push((decision, got, (status == 429).then_some(body)));
    }
    let statuses: Vec<bool> = seen.iter().map(|s| s.2.is_none()).collect();
    assert_eq!(
        statuses.iter().filter(|s| !**s).count(),
        2 + 2 + 2,
        "{statuses:?}"
    );
    let input =
        serde_json::to_string(&seen.iter().map(|s| s.0.clone()).collect::<Vec<_>>()).unwrap();
    let mut child = Command::new(root.join(".tools/venv/bin/python"))
        .args(["-c", PYTHON_HEADERS])
        .env("PYTHONPATH", root.join("clients/python/src"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the venv's python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let expected: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for ((decision, got, body), want) in seen.iter().zip(&expected) {
        assert_eq!(
            &serde_json::Value::Object(got.clone()),
            &want["headers"],
            "{decision}"
        );
        assert_eq!(body.as_deref(), want["body"].as_str(), "{decision}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_addresses_and_keys() {
    let server = Server::start(Kind::Module);
    let limiter = Limiter::new(server.multiplexed().await);
    // No trusted proxy: X-Forwarded-For is the client's own text, ignored.
    let untrusting = RateLimitLayer::builder(limiter.clone())
        .prefix("spoof")
        .layer(
            "ip",
            Identify::client_ip(TrustedProxies::none()),
            Policy::fixed(3, "1h"),
        )
        .build()
        .unwrap();
    let base = serve(app(untrusting)).await;
    let mut got = Vec::new();
    for i in 0..10 {
        got.push(from(&base, &format!("203.0.113.{i}")).await);
    }
    assert_eq!(got, [[200; 3].as_slice(), &[429; 7]].concat());
    assert_eq!(server.cli(&["exists", "spoof:ip:127.0.0.1"]).trim(), "1");

    // A trusted proxy: ten addresses of one /56 spend one counter; another /56 its own;
    // IPv4-mapped is IPv4.
    let layer = RateLimitLayer::builder(limiter.clone())
        .layer("ip", by_address(), Policy::fixed(3, "1h"))
        .build()
        .unwrap();
    let base = serve(app(layer)).await;
    let mut got = Vec::new();
    for i in 1..=10 {
        got.push(from(&base, &format!("2001:db8:1:{i:x}::{i:x}")).await);
    }
    assert_eq!(got, [[200; 3].as_slice(), &[429; 7]].concat());
    assert_eq!(from(&base, "2001:db8:1:100::1").await, 200);
    let mapped = [
        from(&base, "1.2.3.4").await,
        from(&base, "::ffff:1.2.3.4").await,
        from(&base, "1.2.3.4").await,
        from(&base, "::ffff:1.2.3.4").await,
    ];
    assert_eq!(mapped, [200, 200, 200, 429]);
    // The trusted proxy's client is the rightmost untrusted hop: a spoofed leftmost is not.
    assert_eq!(from(&base, "6.6.6.6, 2001:db8:1:77::1").await, 429);
    for key in [
        "rl:ip:2001:db8:1::/56",
        "rl:ip:2001:db8:1:100::/56",
        "rl:ip:1.2.3.4",
    ] {
        assert_eq!(server.cli(&["exists", key]).trim(), "1", "{key}");
    }

    // Keys a client chooses: braces, and 8 KB.
    let layer = RateLimitLayer::builder(limiter)
        .layer(
            "key",
            Identify::header("x-api-key").unwrap(),
            Policy::fixed(1, "1h"),
        )
        .build()
        .unwrap();
    let base = serve(app(layer)).await;
    let long = "k".repeat(8192);
    for key in ["a{b}c", "}{", "{", "}", "{}", long.as_str()] {
        let first = get(&base, "/", &[("x-api-key", key)])
            .await
            .status()
            .as_u16();
        let second = get(&base, "/", &[("x-api-key", key)])
            .await
            .status()
            .as_u16();
        assert_eq!((first, second), (200, 429), "{:.20}", key);
        let stored = format!("rl:key:{key}");
        let mut c = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let n: i64 = redis::cmd("EXISTS").arg(&stored).query(&mut c).unwrap();
        assert_eq!(n, 1);
    }
    // No header: the layer does not apply, nothing is spent.
    assert_eq!(get(&base, "/", &[]).await.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn braces_in_the_tag_on_a_cluster() {
    let cluster = Cluster::start(true);
    let limiter = Limiter::new(cluster.connection().await);
    let layer = RateLimitLayer::builder(limiter)
        .layer("ip", by_address(), Policy::fixed(100, "1h"))
        .layer(
            "user",
            Identify::header("x-user").unwrap(),
            Policy::fixed(1, "1h"),
        )
        .tag("user")
        .build()
        .unwrap();
    let base = serve(app(layer)).await;
    let long = "u{".repeat(4096);
    for user in ["}", "{", "%", "a}{b", "{x}", "%7B", long.as_str()] {
        let h = [("x-forwarded-for", "203.0.113.7"), ("x-user", user)];
        let first = get(&base, "/", &h).await.status().as_u16();
        let second = get(&base, "/", &h).await.status().as_u16();
        assert_eq!((first, second), (200, 429), "{:.20}", user);
    }
    // Without the tagged identity: the tag is %none, no CROSSSLOT.
    assert_eq!(from(&base, "203.0.113.7").await, 200);
}

/// A layer by address and, where the request has an API key, by key too (one layer: its own
/// command; both: one `RL.ALL`), and its counters at /metrics (not limited).
fn with_metrics<C>(limiter: Limiter<C>, fail_open: bool) -> Router
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let layer = RateLimitLayer::builder(limiter)
        .layer("ip", by_address(), Policy::fixed(100, "1h"))
        .layer(
            "key",
            Identify::header("x-api-key").unwrap(),
            Policy::fixed(100, "1h"),
        )
        .fail_open(fail_open)
        .build()
        .unwrap();
    let metrics = layer.metrics();
    app(layer).route("/metrics", route_get(metrics_handler(metrics)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_by_default_and_open_when_asked() {
    let mut server = Server::start(Kind::Module);
    let conn = server.multiplexed().await;
    let closed = serve(with_metrics(Limiter::new(conn.clone()), false)).await;
    let open = serve(with_metrics(Limiter::new(conn), true)).await;
    assert_eq!(from(&closed, "203.0.113.7").await, 200);
    server.kill();
    // Per layer: 3 requests by address only (its own command), 2 with a key too (RL.ALL).
    for base in [&closed, &open] {
        for i in 0..5 {
            let r = if i < 3 {
                get(base, "/", &[]).await
            } else {
                get(base, "/", &[("x-api-key", "k1")]).await
            };
            assert!(r.headers().get("x-ratelimit-remaining").is_none());
            if base == &closed {
                assert_eq!(r.status().as_u16(), 503);
                assert_eq!(r.headers()["content-type"], "application/json");
                assert_eq!(
                    r.text().await.unwrap(),
                    r#"{"error": "rate limiter unavailable"}"#
                );
            } else {
                assert_eq!(r.status().as_u16(), 200);
                assert_eq!(r.text().await.unwrap(), "ok");
            }
        }
    }
    // Each request counted once: `unavailable` where answered 503, `unavailable_fail_open`
    // where let through, never both.
    let count = |text: &str, layer: &str, result: &str| -> u64 {
        let line = format!("rl_decisions_total{{layer=\"{layer}\",result=\"{result}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .map_or(0, |n| n.parse().unwrap())
    };
    let text = get(&closed, "/metrics", &[]).await.text().await.unwrap();
    assert_eq!(count(&text, "ip", "within_limit"), 1, "{text}");
    assert_eq!(count(&text, "ip", "unavailable"), 3, "{text}");
    assert_eq!(count(&text, "ip+key", "unavailable"), 2, "{text}");
    assert_eq!(count(&text, "ip", "unavailable_fail_open"), 0, "{text}");
    assert_eq!(count(&text, "ip+key", "unavailable_fail_open"), 0, "{text}");
    let text = get(&open, "/metrics", &[]).await.text().await.unwrap();
    assert_eq!(count(&text, "ip", "unavailable_fail_open"), 3, "{text}");
    assert_eq!(count(&text, "ip+key", "unavailable_fail_open"), 2, "{text}");
    assert_eq!(count(&text, "ip", "unavailable"), 0, "{text}");
    assert_eq!(count(&text, "ip+key", "unavailable"), 0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_denials_reach_no_server_and_the_counters_say_so() {
    let server = Server::start(Kind::Module);
    let layer = RateLimitLayer::builder(Limiter::new(server.multiplexed().await))
        .layer("ip", by_address(), Policy::fixed(2, "1h"))
        .build()
        .unwrap();
    let metrics = layer.metrics();
    let router = app(layer).route("/metrics", route_get(metrics_handler(metrics)));
    let base = serve(router).await;
    // Every rl command the server ran (one layer: its own command, RL.FIXED).
    let calls = || {
        let stats = server.cli(&["info", "commandstats"]);
        stats
            .lines()
            .filter(|l| l.starts_with("cmdstat_rl."))
            .filter_map(|l| l.split("calls=").nth(1))
            .filter_map(|s| s.split(',').next())
            .map(|n| n.parse::<u64>().unwrap())
            .sum::<u64>()
    };
    assert_eq!(calls(), 0);
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(from(&base, "203.0.113.7").await);
        }
        v
    };
    assert_eq!(statuses, [200, 200, 429]);
    let before = calls();
    let server_denial = get(&base, "/", &[("x-forwarded-for", "203.0.113.7")]).await;
    for _ in 0..20 {
        let r = get(&base, "/", &[("x-forwarded-for", "203.0.113.7")]).await;
        assert_eq!(r.status().as_u16(), 429);
        assert_eq!(r.headers()["x-ratelimit-remaining"], "0");
        let retry: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let first: u64 = server_denial.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry <= first && retry > 0);
        assert_eq!(
            r.text().await.unwrap(),
            r#"{"error": "rate limited", "layer": "ip"}"#
        );
    }
    assert!(before >= 3);
    assert_eq!(calls(), before, "cached denials made no call");
    // Another address still reaches the server.
    assert_eq!(from(&base, "203.0.113.8").await, 200);
    let text = get(&base, "/metrics", &[]).await.text().await.unwrap();
    assert!(
        text.contains("rl_decisions_total{layer=\"ip\",result=\"within_limit\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "rl_decisions_total{layer=\"ip\",result=\"over_limit_with_local_cache\"} 21\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("rl_decisions_total{layer=\"ip\",result=\"over_limit\"} 1\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_route_layers_plans_and_errors_as_responses() {
    let server = Server::start(Kind::Module);
    let limiter = Limiter::new(server.multiplexed().await);
    let everywhere = RateLimitLayer::builder(limiter.clone())
        .layer("ip", by_address(), Policy::fixed(100, "1h"))
        .layer_with(
            "plan",
            Identify::header("x-api-key").unwrap(),
            |parts| match parts.headers.get("x-api-key")?.as_bytes() {
                b"pro" => Some(Policy::fixed(50, "1h")),
                b"free" => Some(Policy::fixed(5, "1h")),
                _ => None,
            },
        )
        .build()
        .unwrap();
    let export = RateLimitLayer::builder(limiter.clone())
        .prefix("export")
        .layer("ip", by_address(), Policy::fixed(1, "1h"))
        .build()
        .unwrap();
    let router = Router::new()
        .route("/export", route_get(|| async { "exported" }))
        .route_layer(export)
        .route("/", route_get(|| async { "ok" }))
        .layer(everywhere);
    let base = serve(router).await;
    let h = [("x-forwarded-for", "203.0.113.7"), ("x-api-key", "free")];
    let first = get(&base, "/export", &h).await;
    // Both layers' headers: the one with fewer remaining (the export's 0) binds.
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(first.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(first.headers()["ratelimit-policy"], "\"ip\";q=1;w=3600");
    let second = get(&base, "/export", &h).await;
    assert_eq!(second.status().as_u16(), 429);
    let home = get(&base, "/", &h).await;
    assert_eq!(home.status().as_u16(), 200);
    assert_eq!(home.headers()["ratelimit-policy"], "\"plan\";q=5;w=3600");
    // An unknown plan: the plan layer does not apply; the address's binds.
    let other = get(
        &base,
        "/",
        &[("x-forwarded-for", "203.0.113.9"), ("x-api-key", "x")],
    )
    .await;
    assert_eq!(other.headers()["ratelimit-policy"], "\"ip\";q=100;w=3600");

    // A policy the server refuses: a 500, never let through, even with fail_open.
    let refused = RateLimitLayer::builder(limiter.clone())
        .layer("ip", by_address(), Policy::named("no-such-policy"))
        .fail_open(true)
        .build()
        .unwrap();
    let base = serve(app(refused)).await;
    let r = get(&base, "/", &[]).await;
    assert_eq!(r.status().as_u16(), 500);
    assert_eq!(
        r.text().await.unwrap(),
        r#"{"error": "rate limiter error"}"#
    );

    // A server without ConnectInfo: no address to key by, a 500, not a pass.
    let layer = RateLimitLayer::builder(limiter.clone())
        .layer("ip", by_address(), Policy::fixed(1, "1h"))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(layer)).await.unwrap() });
    let r = get(&format!("http://{addr}"), "/", &[]).await;
    assert_eq!(r.status().as_u16(), 500);

    // The handler reads the decision.
    let layer = RateLimitLayer::builder(limiter.clone())
        .layer("ip", by_address(), Policy::fixed(7, "1h"))
        .prefix("handler")
        .build()
        .unwrap();
    let base = serve(app(layer)).await;
    assert_eq!(
        get(&base, "/remaining", &[]).await.text().await.unwrap(),
        "6"
    );

    // Configurations refused at build.
    let refusals = [
        RateLimitLayer::builder(limiter.clone())
            .build()
            .unwrap_err()
            .to_string(),
        RateLimitLayer::builder(limiter.clone())
            .layer("a", by_address(), Policy::fixed(1, "1h"))
            .layer("a", by_address(), Policy::fixed(1, "1h"))
            .build()
            .unwrap_err()
            .to_string(),
        RateLimitLayer::builder(limiter.clone())
            .layer("a", by_address(), Policy::fixed(1, "1h"))
            .tag("b")
            .build()
            .unwrap_err()
            .to_string(),
        RateLimitLayer::builder(limiter.clone())
            .layer("a", by_address(), Policy::named("no such name"))
            .build()
            .unwrap_err()
            .to_string(),
    ];
    assert!(
        refusals[0].contains("at least one layer"),
        "{}",
        refusals[0]
    );
    assert!(refusals[1].contains("distinct"), "{}", refusals[1]);
    assert!(refusals[2].contains("tag names a layer"), "{}", refusals[2]);
    assert!(refusals[3].starts_with("layer \"a\""), "{}", refusals[3]);
}
