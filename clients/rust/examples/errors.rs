//! Errors by case, and failing open where the server cannot decide.
use redis_rl::{Decision, Error, Holds, Limiter, Policy};

/// The decision, or, when Redis cannot decide, what `fail_open` says.
async fn admit<C>(
    limiter: &Limiter<C>,
    key: &str,
    policy: &Policy,
    fail_open: bool,
) -> Result<bool, Error>
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
{
    match limiter.decide(key, policy).await {
        Ok(Decision { allowed, .. }) => Ok(allowed),
        // Unreachable, LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, OOM, READONLY: 503,
        // or let the request through.
        Err(e) if e.is_unavailable() && fail_open => Ok(true),
        // Anything else is a configuration's error: 500 whatever fail_open says.
        Err(e) => Err(e),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let limiter = Limiter::new(conn.clone());

    // Refused by the server: a configuration error, with the server's text.
    let err = limiter
        .decide("errors:a", &Policy::sliding(0, "1m"))
        .await
        .unwrap_err();
    assert!(err.is_configuration());
    println!("{err}");

    // A key holding something else is left as it is.
    let _: () = redis::cmd("SET")
        .arg("errors:b")
        .arg("hello")
        .query_async(&mut conn)
        .await?;
    match limiter.decide("errors:b", &Policy::fixed(5, "1m")).await {
        Err(Error::ForeignKey {
            holds: Holds::Value,
            message,
            ..
        }) => println!("{message}"),
        other => panic!("{other:?}"),
    }

    assert!(admit(&limiter, "errors:c", &Policy::fixed(5, "1m"), true).await?);
    Ok(())
}
