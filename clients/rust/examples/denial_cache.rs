//! The denial cache, bans, and the counters in Prometheus' text format.
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

    // RL.BAN: a key denied for a while whatever its rate (0 lifts it); the limiter's own ban
    // drops the key's cached denials.
    assert!(limiter.ban("cache:1.2.3.4", 0).await?);
    assert!(limiter.cache().unwrap().is_empty());
    limiter.ban("cache:5.6.7.8", 3_600_000).await?;
    let banned = limiter.decide("cache:5.6.7.8", &scraper).await?;
    assert!(!banned.allowed && banned.retry_after_ms > 3_500_000);

    let text = limiter.metrics().prometheus();
    print!("{text}");
    assert!(text.contains(
        "rl_decisions_total{layer=\"scraper\",result=\"over_limit_with_local_cache\"} 1"
    ));
    assert!(text.contains("rl_denial_cache_max_entries 50000"));
    Ok(())
}
