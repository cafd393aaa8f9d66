//! The denial cache's memory whatever the keys' length: measured by a global allocator that
//! counts the bytes live, against a real server (with the module).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use common::{Kind, Server};
use redis_rl::{Limiter, Policy};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The rate-limit calls the server has run (the module's commands).
fn calls(s: &Server) -> u64 {
    s.cli(&["info", "commandstats"])
        .lines()
        .filter(|l| l.starts_with("cmdstat_rl."))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// 1,000 identities of 8 KB keys (a header-keyed layer's worst), each denied by the server
/// then answered from the cache: the cache holds their digests, not the keys (8 MB, twice:
/// its map and its recency order), a key one byte apart is another identity, and a lifted ban
/// drops a long key's entry.
#[tokio::test(flavor = "current_thread")]
async fn long_keys_are_held_as_digests_in_bounded_memory() {
    let s = Server::start(Kind::Module);
    let limiter = Limiter::new(s.multiplexed().await);
    let p = Policy::fixed(1, "1h");
    let key = |i: usize| format!("{i}:{}", "x".repeat(8192));
    assert!(limiter.decide("warm", &p).await.unwrap().allowed);
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..1000 {
        assert!(limiter.decide(&key(i), &p).await.unwrap().allowed);
        assert!(!limiter.decide(&key(i), &p).await.unwrap().allowed);
    }
    let grown = LIVE.load(Ordering::Relaxed) - before;
    assert_eq!(limiter.cache().unwrap().len(), 1000);
    assert!(grown < 2_000_000, "{grown}"); // the keys themselves would be 16 MB
    let sent = calls(&s);
    for i in 0..1000 {
        assert!(limiter.decide(&key(i), &p).await.unwrap().cached);
    }
    assert_eq!(calls(&s), sent, "every one answered here");
    // Another key, the same but for its last byte: the server's to decide (it admits).
    let mut other = key(0);
    other.pop();
    other.push('y');
    assert!(limiter.decide(&other, &p).await.unwrap().allowed);
    assert_eq!(calls(&s), sent + 1);
    // A ban lifted drops the long key's entry: its next call reaches the server.
    limiter.ban(&key(1), 0).await.unwrap();
    assert!(!limiter.decide(&key(1), &p).await.unwrap().cached);
    // Just under the bound a key is held as it is, just over as its digest: both are found.
    for k in ["k".repeat(64), "k".repeat(65)] {
        limiter.decide(&k, &p).await.unwrap();
        assert!(!limiter.decide(&k, &p).await.unwrap().cached);
        assert!(limiter.decide(&k, &p).await.unwrap().cached);
    }
}
