//! On a Redis Cluster: the async cluster client, layers under one hash tag.
use redis_rl::{Limiter, Policy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RL_CLUSTER_URLS: the nodes, separated by spaces.
    let urls = std::env::var("RL_CLUSTER_URLS").unwrap_or_else(|_| "redis://127.0.0.1:7000".into());
    let client = redis::cluster::ClusterClient::new(urls.split_whitespace().collect::<Vec<_>>())?;
    let limiter = Limiter::new(client.get_async_connection().await?);

    let per_second = Policy::gcra(10, "1s").burst(10);
    for user in ["ann", "bob", "cid", "dee"] {
        // Each key goes to its own node (the library loaded on every master if needed).
        assert!(
            limiter
                .decide(&format!("cluster:{user}"), &per_second)
                .await?
                .allowed
        );
    }
    // The keys of one RL.ALL share a hash tag: one slot, one node.
    let daily = Policy::sliding(1_000, "1d");
    let all = limiter
        .decide_all(&[
            ("{cluster:ann}:s", &per_second),
            ("{cluster:ann}:d", &daily),
        ])
        .await?;
    assert!(all.allowed());
    println!("decided on the {}", all.binding.backend.as_str());
    Ok(())
}
