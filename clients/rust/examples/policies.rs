//! The seven kinds, a penalty, a cost, layers in one RL.ALL, and policies kept on the server.
use redis_rl::{Limiter, Policy, QuotaUnit};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url)?;
    let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);

    let kinds = [
        Policy::gcra(10, "1s").burst(5),     // RL.GCRA key 10 1s BURST 5
        Policy::token_bucket(100, 10, "1s"), // RL.TOKENBUCKET key 100 10 1s
        Policy::leaky(20, 5, "1s"),          // RL.LEAKY key 20 5 1s
        Policy::sliding(100, "1m"),          // RL.SLIDING key 100 1m
        Policy::sliding_log(5, "15m"),       // RL.SLIDINGLOG key 5 15m
        Policy::fixed(10_000, "1d"),         // RL.FIXED key 10000 1d
        Policy::quota(1_000_000, QuotaUnit::Month) // RL.QUOTA key 1000000 MONTH TZ ...
            .tz("Europe/Paris")
            .anchor("2026-01-15T00:00"),
    ];
    for (i, policy) in kinds.iter().enumerate() {
        let d = limiter.decide(&format!("policies:{i}"), policy).await?;
        println!("{policy}: allowed={} remaining={}", d.allowed, d.remaining);
        assert!(d.allowed);
    }

    // A request of cost 3 (COST 3), and a penalty: a denial bans the key for 10 minutes,
    // doubling up to a day for a key denied again soon after.
    let login = Policy::fixed(5, "1m")
        .penalty("10m", Some("1d"))
        .name("login");
    let d = limiter
        .decide_cost("policies:login:alice", &login, 3)
        .await?;
    assert_eq!(d.remaining, 2);
    let d = limiter
        .decide_cost("policies:login:alice", &login, 3)
        .await?;
    assert!(!d.allowed && d.retry_after_ms > 9 * 60_000);
    println!("login denied for {} s", d.retry_after().unwrap());

    // Layers in one RL.ALL: all admit and are spent, or none is. On a cluster, one hash tag.
    let burst = Policy::sliding_log(3, "1s").name("burst");
    let daily = Policy::sliding(1_000, "1d").name("daily");
    let all = limiter
        .decide_all(&[("{user:7}:burst", &burst), ("{user:7}:daily", &daily)])
        .await?;
    assert!(all.allowed());
    println!("binding layer {} of {}", all.index, all.layers.len());

    // A policy kept on the server (the module's RL.POLICY), called by its name; a SHADOW one
    // decides and counts as if enforced but answers its denials as admitted.
    limiter.define("free", &Policy::sliding(100, "1m")).await?;
    limiter
        .define("trial", &Policy::fixed(1, "1h").shadow())
        .await?;
    let d = limiter
        .decide("policies:user:9", &Policy::named("free"))
        .await?;
    assert_eq!(d.ietf_headers(None)[0].1, "\"free\";q=100");
    let trial = Policy::named("trial");
    limiter.decide("policies:user:10", &trial).await?;
    let d = limiter.decide("policies:user:10", &trial).await?;
    assert!(d.allowed && d.shadowed());
    println!("shadowed: {}", d.shadowed());
    Ok(())
}
