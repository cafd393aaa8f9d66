//! Reserve an estimate, settle the actual cost (an LLM call's tokens).
use redis_rl::{Layer, Limiter, Policy, Settled};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url)?;
    let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);

    // 10,000 tokens a minute: admit a request estimated at 500 tokens.
    let tpm = Policy::token_bucket(10_000, 10_000, "1m").name("tpm");
    let (decision, reservation) = limiter.reserve("reservations:org:1", &tpm, 500).await?;
    assert!(decision.allowed);
    let mut reservation = reservation.expect("admitted: a reservation");
    // ... the call used 320 tokens: REFUND 180.
    if let Some(Settled::One(after)) = reservation.settle(320).await? {
        println!("after the refund: {} left", after.remaining);
        assert!(after.remaining >= 9_680);
    }
    // A reservation settles once.
    assert!(matches!(
        reservation.settle(320).await,
        Err(redis_rl::Error::ReservationSettled)
    ));

    // Requests a minute and tokens a minute in one RL.ALL: the request count (a cost of its
    // own) is spent and never settled; the token budget reserves the estimate.
    let rpm = Policy::sliding_log(60, "1m").name("rpm");
    let layers = [
        Layer::new("{org:2}:rpm", &rpm).cost(1),
        Layer::new("{org:2}:tpm", &tpm),
    ];
    let (all, reservation) = limiter.reserve_all(&layers, 1_000).await?;
    assert!(all.allowed());
    // ... it used 1,500: DEBIT 500, charged whatever is left.
    reservation.expect("admitted").settle(1_500).await?;
    let left = limiter.peek("{org:2}:tpm", &tpm, 1).await?;
    println!("tokens left: {}", left.remaining);
    Ok(())
}
