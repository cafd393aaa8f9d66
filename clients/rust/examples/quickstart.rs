//! One limit on one key, and the HTTP headers of its decisions.
use redis_rl::{Limiter, Policy};

#[tokio::main]
async fn main() -> Result<(), redis_rl::Error> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url).map_err(redis_rl::Error::Redis)?;
    let conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(redis_rl::Error::Redis)?;
    let limiter = Limiter::new(conn);

    // 10 a second, bursts of 5, named "api" in the headers and the counters.
    let api = Policy::gcra(10, "1s").burst(5).name("api");
    let d = limiter.decide("quickstart:user:42", &api).await?;
    assert!(d.allowed);
    println!(
        "allowed={} remaining={} on the {}",
        d.allowed,
        d.remaining,
        d.backend.as_str()
    );

    // Six at once: the sixth is denied, with the headers a 429 carries.
    let mut last = d;
    for _ in 0..5 {
        last = limiter.decide("quickstart:user:42", &api).await?;
    }
    assert!(!last.allowed);
    for (name, value) in last.all_headers(None) {
        println!("{name}: {value}");
    }
    Ok(())
}
