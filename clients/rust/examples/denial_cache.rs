//! The denial cache and the counters, in Prometheus' text format.
use redis_rl::{DenialCache, Limiter, Policy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url)?;
    // At most 50,000 denied identities (Limiter::new keeps 10,000; with_cache(conn, None): none).
    let limiter = Limiter::with_cache(
        client.get_multiplexed_async_connection().await?,
        Some(DenialCache::new(50_000)),
    );

    let scraper = Policy::fixed(1, "1h").name("scraper");
    limiter.decide("cache:1.2.3.4", &scraper).await?; // admitted
    let denied = limiter.decide("cache:1.2.3.4", &scraper).await?; // denied by the server
    let again = limiter.decide("cache:1.2.3.4", &scraper).await?; // denied here, no call
    assert!(!denied.cached && again.cached && !again.allowed);

    let text = limiter.metrics().prometheus();
    print!("{text}");
    assert!(text.contains(
        "rl_decisions_total{layer=\"scraper\",result=\"over_limit_with_local_cache\"} 1"
    ));
    assert!(text.contains("rl_denial_cache_max_entries 50000"));
    Ok(())
}
