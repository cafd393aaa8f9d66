//! Real time and real concurrency: decisions track the wall clock, and concurrent
//! clients can never get more than the limit out of one key.

use crate::common::*;
use std::time::{Duration, Instant};

/// Drives `cmd` as fast as one connection can for about two seconds and checks
/// that it admitted `burst + rate * elapsed` within 2%.
fn admits_burst_plus_rate(flavor: Flavor, cmd: &str, burst: f64, rate_per_s: f64) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    let mut admitted = 0u64;
    let mut calls = 0u64;
    let start = Instant::now();
    // Pipelines of 10 keep the limiter saturated even on a loaded machine.
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut pipe = redis::pipe();
    for _ in 0..10 {
        pipe.cmd(words[0]).arg(&words[1..]);
    }
    while start.elapsed() < Duration::from_secs(2) {
        let replies: Vec<Vec<i64>> = pipe.query(c).unwrap();
        admitted += replies.iter().map(|r| r[0] as u64).sum::<u64>();
        calls += replies.len() as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let expected = burst + rate_per_s * elapsed;
    let error = (admitted as f64 - expected).abs() / expected;
    assert!(
        error <= 0.02,
        "{cmd}: admitted {admitted} of {calls} calls in {elapsed:.3}s, expected {expected:.0}"
    );
    assert!(
        calls as f64 > expected * 2.0,
        "the limiter was not saturated"
    );
}

/// Eight connections hammer one key; together they must be admitted exactly
/// `limit` times (the limiter cannot refill during the test).
fn concurrent_clients_get_exactly_the_limit(flavor: Flavor, cmd: &'static str, limit: i64) {
    const CLIENTS: usize = 8;
    const CALLS_PER_CLIENT: usize = 400;
    let s = Server::start(flavor);
    let admitted: i64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let mut c = s.conn();
                scope.spawn(move || {
                    (0..CALLS_PER_CLIENT)
                        .map(|_| rl(&mut c, cmd)[0])
                        .sum::<i64>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert!(CLIENTS * CALLS_PER_CLIENT > 2 * limit as usize);
    assert_eq!(admitted, limit, "{cmd}");
}

server_tests! {
    fn gcra_tracks_real_time(flavor) {
        admits_burst_plus_rate(flavor, "RL.GCRA acc 200 1s BURST 50", 50.0, 200.0);
    }

    fn token_bucket_tracks_real_time(flavor) {
        admits_burst_plus_rate(flavor, "RL.TOKENBUCKET acc 100 2 10ms", 100.0, 200.0);
    }

    fn leaky_bucket_tracks_real_time(flavor) {
        admits_burst_plus_rate(flavor, "RL.LEAKY acc 20 200 1s", 20.0, 200.0);
    }

    fn gcra_is_atomic(flavor) {
        concurrent_clients_get_exactly_the_limit(flavor, "RL.GCRA hot 1 1h BURST 1000", 1000);
    }

    fn token_bucket_is_atomic(flavor) {
        concurrent_clients_get_exactly_the_limit(flavor, "RL.TOKENBUCKET hot 1000 1 1h", 1000);
    }

    fn leaky_bucket_is_atomic(flavor) {
        concurrent_clients_get_exactly_the_limit(flavor, "RL.LEAKY hot 1000 1 1h", 1000);
    }

    fn sliding_window_is_atomic(flavor) {
        // A 3650-day window: the next boundary is in 2029.
        concurrent_clients_get_exactly_the_limit(flavor, "RL.SLIDING hot 1000 3650d", 1000);
    }

    fn sliding_log_is_atomic(flavor) {
        concurrent_clients_get_exactly_the_limit(flavor, "RL.SLIDINGLOG hot 1000 1h", 1000);
    }

    fn fixed_window_is_atomic(flavor) {
        concurrent_clients_get_exactly_the_limit(flavor, "RL.FIXED hot 1000 3650d", 1000);
    }
}
