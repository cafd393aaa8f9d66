//! The app scripts/bench_rust.py drives with wrk: axum 0.8 answering "ok" on `/`, behind one
//! rate-limit layer keyed by the client's address, with limits so high that nothing is denied
//! (every request measures the admitted path):
//!
//! - `none`: no layer (the baseline);
//! - `governor`: tower_governor, in-process (its `PeerIpKeyExtractor`), without headers;
//! - `governor-headers`: the same with its `x-ratelimit-*` headers;
//! - `redis-cell`: tower-redis-cell over `CL.THROTTLE` on the module;
//! - `rl`: this crate's layer (one `RL.ALL` per request, its headers on every response), on
//!   the module or, against a server without it, the Functions library.
//!
//! Usage: `axum_layer MODE PORT [REDIS_URL]`; it serves until killed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use redis_rl::tower::{Identify, RateLimitLayer, TrustedProxies};
use redis_rl::{Limiter, Policy};

#[derive(Clone)]
struct ByPeer;

impl<T> tower_redis_cell::ProvideRule<Request<T>> for ByPeer {
    fn provide<'a>(&self, req: &'a Request<T>) -> tower_redis_cell::ProvideRuleResult<'a> {
        let peer = req
            .extensions()
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .ok_or("no peer address")?;
        let policy = tower_redis_cell::redis_cell::Policy::new(
            1_000_000_000,
            1_000_000_000,
            Duration::from_secs(1),
            1,
        );
        Ok(Some(tower_redis_cell::Rule::new(
            peer.0.ip().to_string(),
            policy,
        )))
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, port) = match &args[..] {
        [mode, port, ..] => (mode.as_str(), port.parse::<u16>().expect("a port")),
        _ => {
            eprintln!(
                "usage: axum_layer none|governor|governor-headers|redis-cell|rl PORT [REDIS_URL]"
            );
            std::process::exit(2);
        }
    };
    let url = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let app = Router::new().route("/", get(|| async { "ok" }));
    let app = match mode {
        "none" => app,
        "governor" => {
            let config = tower_governor::governor::GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .finish()
                .expect("a governor config");
            app.layer(tower_governor::GovernorLayer::new(Arc::new(config)))
        }
        "governor-headers" => {
            let config = tower_governor::governor::GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .use_headers()
                .finish()
                .expect("a governor config");
            app.layer(tower_governor::GovernorLayer::new(Arc::new(config)))
        }
        "redis-cell" => {
            let client = redis::Client::open(url.as_str()).expect("a Redis URL");
            // No response timeout (redis-rs's is 500 ms): a stall of the shared machine is
            // measured, not failed.
            let config = redis::aio::ConnectionManagerConfig::new().set_response_timeout(None);
            let connection = redis::aio::ConnectionManager::new_with_config(client, config)
                .await
                .expect("connect to Redis");
            let config =
                tower_redis_cell::RateLimitConfig::new(ByPeer, |_err, _req: &Request<Body>| {
                    StatusCode::TOO_MANY_REQUESTS.into_response()
                });
            app.layer(tower_redis_cell::RateLimitLayer::new(config, connection))
        }
        "rl" => {
            let client = redis::Client::open(url.as_str()).expect("a Redis URL");
            let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
            let conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .expect("connect to Redis");
            let layer = RateLimitLayer::builder(Limiter::new(conn))
                .layer(
                    "ip",
                    Identify::client_ip(TrustedProxies::none()),
                    Policy::gcra(1_000_000_000, "1s").burst(1_000_000_000),
                )
                .build()
                .expect("a layer");
            app.layer(layer)
        }
        other => {
            eprintln!("axum_layer: unknown mode {other:?}");
            std::process::exit(2);
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind the port");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
    .expect("serve");
}
