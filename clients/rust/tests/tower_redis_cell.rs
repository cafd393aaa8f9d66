//! `tower-redis-cell` (a tower layer over redis-cell's `CL.THROTTLE`), unchanged, in an axum
//! app over HTTP, against this module's `CL.THROTTLE` on Redis and on Valkey: its admissions,
//! denials, `Retry-After` and remaining counts are the ones docs/commands.md documents
//! (redis-cell 0.5's rules), and 60 concurrent requests admit exactly the limit. A cost above
//! the limit is replied with `retry_after -1`, as redis-cell does, which tower-redis-cell's
//! parser refuses: its error handler gets an error (a 500 here), as on redis-cell. Its rule
//! provider sees the request (a request it refuses reaches no server), each request is one
//! `CL.THROTTLE`, and with the server down its error handler gets the connection's error.
#![cfg(feature = "tower")]

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use common::{serve, server_time_ns, Kind, Server};
use tower_redis_cell::redis_cell::Policy;
use tower_redis_cell::{
    Error, ProvideRule, ProvideRuleResult, RateLimitConfig, RateLimitLayer, Rule,
};

const HOUR: Duration = Duration::from_secs(3600);
/// Bursts of 5 (`max_burst` 4), one more an hour: T = 3600 s.
const FIVE: Policy = Policy::new(4, 1, HOUR, 1);
/// Bursts of 30 (`max_burst` 29).
const THIRTY: Policy = Policy::new(29, 1, HOUR, 1);
/// Cost 10 against a limit of 5: it can never pass.
const TOO_BIG: Policy = Policy::new(4, 1, HOUR, 10);

#[derive(Clone)]
struct ByKey;

impl<T> ProvideRule<Request<T>> for ByKey {
    fn provide<'a>(&self, req: &'a Request<T>) -> ProvideRuleResult<'a> {
        let key = req
            .headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .ok_or("no x-api-key")?;
        let policy = match req.uri().path() {
            "/thirty" => THIRTY,
            "/too-big" => TOO_BIG,
            _ => FIVE,
        };
        Ok(Some(Rule::new(key, policy)))
    }
}

async fn app(url: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    // One reconnection attempt, not six with their backoff: the server is stopped at the end.
    let config = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(1);
    let connection = redis::aio::ConnectionManager::new_with_config(client, config)
        .await
        .unwrap();
    let config = RateLimitConfig::new(ByKey, |err, _req: &Request<Body>| match err {
        Error::RateLimit(e) => {
            let mut r = StatusCode::TOO_MANY_REQUESTS.into_response();
            let h = r.headers_mut();
            h.insert("retry-after", HeaderValue::from(e.details.retry_after));
            h.insert("x-ratelimit-limit", HeaderValue::from(e.details.total));
            h.insert(
                "x-ratelimit-remaining",
                HeaderValue::from(e.details.remaining),
            );
            h.insert(
                "x-ratelimit-reset",
                HeaderValue::from(e.details.reset_after),
            );
            r
        }
        Error::ProvideRule(_) => StatusCode::UNAUTHORIZED.into_response(),
        // The server unreachable: the error handler decides (here, a 503).
        Error::Redis(e)
            if e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_timeout() =>
        {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    })
    .on_success(|d, r: &mut Response| {
        let h = r.headers_mut();
        h.insert("x-ratelimit-limit", HeaderValue::from(d.details.total));
        h.insert(
            "x-ratelimit-remaining",
            HeaderValue::from(d.details.remaining),
        );
        h.insert(
            "x-ratelimit-reset",
            HeaderValue::from(d.details.reset_after),
        );
    });
    let router = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/thirty", get(|| async { "ok" }))
        .route("/too-big", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(config, connection));
    serve(router).await
}

/// redis-cell 0.5's seconds: whole seconds, plus one if a whole millisecond is left over.
fn seconds(ns: i128) -> i128 {
    ns / 1_000_000_000 + i128::from(ns % 1_000_000_000 >= 1_000_000)
}

fn header(r: &reqwest::Response, name: &str) -> i128 {
    r.headers()[name].to_str().unwrap().parse().unwrap()
}

async fn check(kind: Kind) {
    let mut server = Server::start(kind);
    let mut c = server.conn();
    let base = app(&server.url()).await;
    let http = reqwest::Client::new();
    let get = |path: &str, key: &str| {
        http.get(format!("{base}{path}"))
            .header("x-api-key", key)
            .send()
    };

    // Five admitted, counting down; then denied.
    let mut remaining = Vec::new();
    for _ in 0..5 {
        let r = get("/", "a").await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header(&r, "x-ratelimit-limit"), 5);
        remaining.push(header(&r, "x-ratelimit-remaining"));
    }
    assert_eq!(remaining, [4, 3, 2, 1, 0]);
    // The state is redis-cell's: the TAT in nanoseconds, in a plain string.
    let tat: i128 = redis::cmd("GET")
        .arg("a")
        .query::<String>(&mut c)
        .unwrap()
        .parse()
        .unwrap();
    let t = i128::from(HOUR.as_secs()) * 1_000_000_000;
    for _ in 0..2 {
        let before = server_time_ns(&mut c);
        let r = get("/", "a").await.unwrap();
        let after = server_time_ns(&mut c) + 1_000;
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(header(&r, "x-ratelimit-remaining"), 0);
        // Limited: retry_after = new_tat - dvt - now with new_tat = tat + T, dvt = 5 T;
        // reset_after = tat - now; for a `now` between the two readings of the clock.
        let retry = |now: i128| seconds(tat + t - 5 * t - now);
        let reset = |now: i128| seconds(tat - now);
        let got = header(&r, "retry-after");
        assert!(
            retry(after) <= got && got <= retry(before),
            "Retry-After {got}"
        );
        let got = header(&r, "x-ratelimit-reset");
        assert!(reset(after) <= got && got <= reset(before), "reset {got}");
    }
    // A denial wrote nothing.
    let still: String = redis::cmd("GET").arg("a").query(&mut c).unwrap();
    assert_eq!(still.parse::<i128>().unwrap(), tat);
    // Another key has its own limit.
    assert_eq!(get("/", "b").await.unwrap().status(), StatusCode::OK);

    // 60 concurrent requests against bursts of 30: exactly 30 admitted.
    let all = futures_util::future::join_all((0..60).map(|_| get("/thirty", "c"))).await;
    let admitted = all
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == StatusCode::OK)
        .count();
    let denied = all
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((admitted, denied), (30, 30));

    // A cost above the limit: `CL.THROTTLE` replies limited with retry_after -1, which the
    // crate cannot parse (as against redis-cell): its error handler answers.
    let reply: Vec<i64> = redis::cmd("CL.THROTTLE")
        .arg("d")
        .arg(4)
        .arg(1)
        .arg(3600)
        .arg(10)
        .query(&mut c)
        .unwrap();
    assert_eq!(reply[..4], [1, 5, 5, -1]);
    assert_eq!(
        get("/too-big", "d").await.unwrap().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );

    // The rule provider sees the request: without the header it refuses, and the error
    // handler gets its error (a 401 here), with no call to the server.
    let before = throttle_calls(&mut c);
    let r = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(throttle_calls(&mut c), before);
    // One rule per request: one `CL.THROTTLE` each, admitted or denied.
    let statuses = futures_util::future::join_all((0..7).map(|_| get("/", "e"))).await;
    let admitted = statuses
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == StatusCode::OK)
        .count();
    assert_eq!(admitted, 5);
    assert_eq!(throttle_calls(&mut c), before + 7);

    // The server down: the error handler gets the connection's error (a 503 here).
    server.kill();
    for _ in 0..2 {
        assert_eq!(
            get("/", "a").await.unwrap().status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}

/// How many `CL.THROTTLE` the server has run (`INFO commandstats`).
fn throttle_calls(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_cl.throttle:calls="))
        .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tower_redis_cell_works_against_our_cl_throttle_on_redis() {
    check(Kind::Module).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tower_redis_cell_works_against_our_cl_throttle_on_valkey() {
    check(Kind::ValkeyModule).await;
}
