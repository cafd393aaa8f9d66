//! An axum app behind the tower layer: every client address limited (an IPv6 client by its
//! /56; X-Forwarded-For believed from a proxy on this host only), each API key by its plan,
//! the export endpoint by a stricter limit of its own, and the counters at /metrics.
use std::net::SocketAddr;

use axum::routing::get;
use axum::Router;
use redis_rl::tower::{metrics_handler, Identify, RateLimitLayer, TrustedProxies};
use redis_rl::{Limiter, Policy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let bind = std::env::var("RL_BIND").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let client = redis::Client::open(url)?;
    let limiter = Limiter::new(client.get_connection_manager().await?);
    let address = Identify::client_ip(TrustedProxies::loopback());

    // Every request: its address's limit and its API key's plan, in one RL.ALL.
    let everywhere = RateLimitLayer::builder(limiter.clone())
        .layer("ip", address.clone(), Policy::gcra(20, "1s").burst(10))
        .layer_with("plan", Identify::header("x-api-key")?, |parts| {
            match parts.headers.get("x-api-key")?.as_bytes() {
                b"pro-key" => Some(Policy::sliding(1000, "1m")),
                b"free-key" => Some(Policy::sliding(5, "1m")),
                _ => None, // an unknown key: the address's limit alone
            }
        })
        .build()?;
    // The export endpoint: 2 a minute per address, besides the above.
    let export = RateLimitLayer::builder(limiter)
        .prefix("rl-export")
        .layer("export", address, Policy::fixed(2, "1m"))
        .build()?;
    let metrics = everywhere.metrics();

    let app = Router::new()
        .route("/export", get(|| async { "exported\n" }))
        .route_layer(export)
        .route("/hello", get(|| async { "hello\n" }))
        .layer(everywhere)
        .route("/metrics", get(metrics_handler(metrics))); // added after: not limited

    let listener = tokio::net::TcpListener::bind(bind).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await?;
    Ok(())
}
