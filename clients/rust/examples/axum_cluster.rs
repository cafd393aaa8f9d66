//! The tower layer on a Redis Cluster: every key of a request under its address's hash tag
//! (`rl:{203.0.113.7}:ip:203.0.113.7`, `rl:{203.0.113.7}:user:ann`), so that one RL.ALL
//! takes them; the address layer counts every request of the address.
use std::net::SocketAddr;

use axum::routing::get;
use axum::Router;
use redis_rl::tower::{Identify, RateLimitLayer, TrustedProxies};
use redis_rl::{Limiter, Policy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RL_CLUSTER_URLS: the nodes, separated by spaces.
    let urls = std::env::var("RL_CLUSTER_URLS").unwrap_or_else(|_| "redis://127.0.0.1:7000".into());
    let bind = std::env::var("RL_BIND").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let client = redis::cluster::ClusterClient::new(urls.split_whitespace().collect::<Vec<_>>())?;
    let limiter = Limiter::new(client.get_async_connection().await?);

    let layer = RateLimitLayer::builder(limiter)
        .layer(
            "ip",
            Identify::client_ip(TrustedProxies::loopback()),
            Policy::fixed(100, "1m"),
        )
        .layer("user", Identify::header("x-user")?, Policy::fixed(3, "1m"))
        .tag("ip") // the layer the client cannot choose
        .build()?;

    let app = Router::new()
        .route("/", get(|| async { "ok\n" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind(bind).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await?;
    Ok(())
}
