//! The crate against real servers: redis-server 7.0 with the module and without it (the
//! Functions library), valkey-server, and a Redis Cluster of three masters.

mod common;

use std::sync::Arc;

use common::{Cluster, Kind, Server};
use redis::aio::ConnectionLike;
use redis_rl::{Backend, Call, Error, Holds, Layer, Limiter, Policy, QuotaUnit, Settled};

type Step = (bool, i64, i64, i64);

/// A decision as compared across backends: allowed, limit, remaining, and retry_after_ms's
/// sign (0 admitted, -1 never, 1 later: its exact value depends on the moment).
fn step(d: &redis_rl::Decision) -> Step {
    (d.allowed, d.limit, d.remaining, d.retry_after_ms.signum())
}

/// One sequence of calls over every kind, through one limiter.
async fn sequence<C: ConnectionLike + Clone + Send + Sync + 'static>(
    limiter: &Limiter<C>,
    tag: &str,
) -> Vec<Step> {
    let policies = [
        Policy::gcra(3, "1h").burst(2),
        Policy::token_bucket(4, 1, "1h"),
        Policy::leaky(3, 1, "1h"),
        Policy::sliding(3, "1h"),
        Policy::sliding_log(3, "1h"),
        Policy::fixed(3, "1d"),
        Policy::quota(3, QuotaUnit::Month)
            .tz("Europe/Paris")
            .anchor("2026-01-15T00:00"),
        Policy::sliding_log(2, "1h").penalty("10m", Some("1h")),
    ];
    let mut out = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        let key = format!("{tag}:seq:{i}");
        for cost in [1, 2, 1, 5, 1] {
            out.push(step(&limiter.decide_cost(&key, p, cost).await.unwrap()));
        }
        out.push(step(&limiter.peek(&key, p, 1).await.unwrap()));
        out.push(step(&limiter.refund(&key, p, 1).await.unwrap()));
        out.push(step(&limiter.debit(&key, p, 2).await.unwrap()));
    }
    let a = Policy::sliding_log(5, "1h");
    let b = Policy::gcra(2, "1h").burst(2);
    for _ in 0..3 {
        let d = limiter
            .decide_all(&[(format!("{{{tag}}}:a"), &a), (format!("{{{tag}}}:b"), &b)])
            .await
            .unwrap();
        out.push(step(&d.binding));
        out.push((d.index == 1, d.layers.len() as i64, 0, 0));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_and_library_decide_alike() {
    let module = Server::start(Kind::Module);
    let library = Server::start(Kind::Library);
    let on_module = Limiter::with_cache(module.multiplexed().await, None);
    let on_library = Limiter::with_cache(library.multiplexed().await, None);
    let a = sequence(&on_module, "same").await;
    let b = sequence(&on_library, "same").await;
    assert_eq!(on_module.backend(), Some(Backend::Module));
    assert_eq!(on_library.backend(), Some(Backend::Library));
    assert_eq!(a, b);
    assert!(
        a.iter().any(|s| !s.0) && a.iter().any(|s| s.0),
        "the sequence admits and denies"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valkey_decides_on_module_and_library() {
    let with = Server::start(Kind::ValkeyModule);
    let without = Server::start(Kind::ValkeyLibrary);
    let reference = Server::start(Kind::Module);
    let r = sequence(
        &Limiter::with_cache(reference.multiplexed().await, None),
        "v",
    )
    .await;
    let m = Limiter::with_cache(with.multiplexed().await, None);
    let l = Limiter::with_cache(without.manager().await, None);
    assert_eq!(sequence(&m, "v").await, r);
    assert_eq!(sequence(&l, "v").await, r);
    assert_eq!(m.backend(), Some(Backend::Module));
    assert_eq!(l.backend(), Some(Backend::Library));
}

/// 60 concurrent tasks on one limiter: exactly the limit is admitted.
async fn exactly_the_limit<C: ConnectionLike + Clone + Send + Sync + 'static>(
    limiter: Limiter<C>,
    key: &str,
) {
    let policy = Arc::new(Policy::sliding_log(17, "1h"));
    let mut tasks = Vec::new();
    for _ in 0..60 {
        let (limiter, policy, key) = (limiter.clone(), policy.clone(), key.to_string());
        tasks.push(tokio::spawn(async move {
            limiter.decide(&key, &policy).await.unwrap().allowed
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 17);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_tasks_admit_exactly_the_limit() {
    for kind in [
        Kind::Module,
        Kind::Library,
        Kind::ValkeyModule,
        Kind::ValkeyLibrary,
    ] {
        let s = Server::start(kind);
        exactly_the_limit(Limiter::new(s.multiplexed().await), "herd:60").await;
        exactly_the_limit(Limiter::new(s.manager().await), "herd:60:manager").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_is_loaded_once_by_a_herd() {
    let s = Server::start(Kind::Library);
    let limiter = Limiter::new(s.multiplexed().await);
    let policy = Arc::new(Policy::gcra(100, "1s").burst(100));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (limiter, policy) = (limiter.clone(), policy.clone());
        tasks.push(tokio::spawn(async move {
            limiter.decide(&format!("load:{i}"), &policy).await.unwrap()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().allowed);
    }
    assert_eq!(s.function_loads(), 1);
    // Flushed behind its back: loaded again, once.
    s.cli(&["function", "flush"]);
    let d = limiter.decide("load:again", &policy).await.unwrap();
    assert_eq!((d.allowed, d.backend), (true, Backend::Library));
    assert_eq!(s.function_loads(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_keys() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let p = Policy::fixed(2, "1d");
        let long = "k".repeat(8192);
        for key in [
            "{",
            "}",
            "{}",
            "a{b}c",
            "}{",
            "{{x}}",
            long.as_str(),
            "sp ace\n\0",
        ] {
            let got: Vec<bool> = [
                limiter.decide(key, &p).await.unwrap().allowed,
                limiter.decide(key, &p).await.unwrap().allowed,
                limiter.decide(key, &p).await.unwrap().allowed,
            ]
            .to_vec();
            assert_eq!(
                got,
                [true, true, false],
                "key {:?}",
                &key[..key.len().min(10)]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_by_case() {
    let mut s = Server::start(Kind::Module);
    let plain = Server::start(Kind::Library);
    for limiter in [
        Limiter::new(s.multiplexed().await),
        Limiter::new(plain.multiplexed().await),
    ] {
        let e = limiter
            .decide("e:1", &Policy::gcra(0, "1s"))
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        assert!(e.to_string().contains("must be an integer from"), "{e}");
        let e = limiter
            .decide("e:2", &Policy::sliding(5, "1 minute"))
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        let e = limiter
            .decide("e:3", &Policy::named("bad name"))
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Configuration { source: None, .. }),
            "{e:?}"
        );
        let e = limiter
            .decide("e:4", &Policy::named("nosuch"))
            .await
            .unwrap_err();
        assert!(
            e.is_configuration() && e.to_string() == "ERR no such policy 'nosuch'",
            "{e:?}"
        );
        let e = limiter
            .decide(
                "e:5",
                &Policy::sliding(5, std::time::Duration::from_micros(10)),
            )
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        let e = limiter
            .decide("e:6", &Policy::fixed(5, "1m").shadow())
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        let e = limiter
            .decide("e:7", &Policy::fixed(5, "1m").penalty("1h", Some("1m")))
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        let e = limiter
            .decide("e:8", &Policy::quota(5, QuotaUnit::Day).tz("Mars/Olympus"))
            .await
            .unwrap_err();
        assert!(e.is_configuration(), "{e:?}");
        // Foreign keys.
        let mut c = limiter.connection().clone();
        let _: () = redis::cmd("SET")
            .arg("e:str")
            .arg("x")
            .query_async(&mut c)
            .await
            .unwrap();
        let _: () = redis::cmd("LPUSH")
            .arg("e:list")
            .arg("x")
            .query_async(&mut c)
            .await
            .unwrap();
        let e = limiter
            .decide("e:list", &Policy::fixed(5, "1m"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::ForeignKey {
                    holds: Holds::Type,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = limiter
            .decide("e:str", &Policy::fixed(5, "1m"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::ForeignKey {
                    holds: Holds::Value,
                    ..
                }
            ),
            "{e:?}"
        );
        limiter
            .decide("e:gcra", &Policy::gcra(5, "1m"))
            .await
            .unwrap();
        let e = limiter
            .decide("e:gcra", &Policy::fixed(5, "1m"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::ForeignKey {
                    holds: Holds::Limiter,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.is_unavailable());
    }
    // A server gone: unavailable.
    let limiter = Limiter::new(s.multiplexed().await);
    limiter
        .decide("u:1", &Policy::fixed(5, "1m"))
        .await
        .unwrap();
    s.kill();
    let e = limiter
        .decide("u:1", &Policy::fixed(5, "1m"))
        .await
        .unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
    let snapshot = limiter.metrics().snapshot();
    assert_eq!(snapshot["default"]["unavailable"], 1);
    assert_eq!(snapshot["default"]["within_limit"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_functions_or_loads_is_library_unavailable() {
    let s = Server::start(Kind::Library);
    s.cli(&[
        "acl",
        "setuser",
        "app",
        "on",
        ">pw",
        "~*",
        "+@all",
        "-function",
    ]);
    let client = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", s.port)).unwrap();
    let limiter = Limiter::new(client.get_multiplexed_async_connection().await.unwrap());
    let e = limiter
        .decide("x", &Policy::fixed(5, "1m"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::LibraryUnavailable { .. }), "{e:?}");
    // Backing off: the same error, no second load.
    let e = limiter
        .decide("x", &Policy::fixed(5, "1m"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::LibraryUnavailable { .. }), "{e:?}");
    assert!(!e.is_unavailable());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserve_and_settle() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let tokens = Policy::token_bucket(100, 1, "1h");
        let (d, r) = limiter.reserve("r:1", &tokens, 50).await.unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 50));
        let mut r = r.unwrap();
        let Some(Settled::One(after)) = r.settle(20).await.unwrap() else {
            panic!("sent nothing")
        };
        assert_eq!(after.remaining, 80);
        assert!(matches!(r.settle(20).await, Err(Error::ReservationSettled)));
        let (_, r) = limiter.reserve("r:1", &tokens, 30).await.unwrap();
        let Some(Settled::One(after)) = r.unwrap().settle(200).await.unwrap() else {
            panic!()
        };
        assert_eq!((after.allowed, after.remaining), (true, 0), "a debt");
        let (d, r) = limiter.reserve("r:1", &tokens, 1).await.unwrap();
        assert!(!d.allowed && r.is_none());
        // Equal: nothing sent.
        let (_, r) = limiter.reserve("r:2", &tokens, 10).await.unwrap();
        assert!(r.unwrap().settle(10).await.unwrap().is_none());
        // Together: the request count is not settled, the token budget is.
        let rpm = Policy::sliding_log(10, "1h");
        let layers = [
            Layer::new("{o}:rpm", &rpm).cost(1),
            Layer::new("{o}:tpm", &tokens),
        ];
        let (d, r) = limiter.reserve_all(&layers, 40).await.unwrap();
        assert!(d.allowed());
        let mut r = r.unwrap();
        assert_eq!(r.layers().len(), 1);
        let Some(Settled::All(all)) = r.settle(10).await.unwrap() else {
            panic!()
        };
        assert_eq!(all.layers[0].as_ref().unwrap().remaining, 90);
        let peek = limiter.peek("{o}:rpm", &rpm, 1).await.unwrap();
        assert_eq!(peek.remaining, 8);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn penalties_bans_and_the_denial_cache() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let login = Policy::fixed(2, "1d")
            .penalty("10m", Some("1h"))
            .name("login");
        assert!(limiter.decide("p:1", &login).await.unwrap().allowed);
        assert!(limiter.decide("p:1", &login).await.unwrap().allowed);
        let d = limiter.decide("p:1", &login).await.unwrap();
        assert!(!d.allowed && !d.cached);
        assert!(
            d.retry_after_ms > 9 * 60_000,
            "the penalty's: {}",
            d.retry_after_ms
        );
        let cached = limiter.decide("p:1", &login).await.unwrap();
        assert!(cached.cached && !cached.allowed && cached.retry_after_ms <= d.retry_after_ms);
        assert_eq!(limiter.cache().unwrap().len(), 1);
        let m = limiter.metrics().snapshot();
        assert_eq!(
            (
                m["login"]["within_limit"],
                m["login"]["over_limit"],
                m["login"]["over_limit_with_local_cache"]
            ),
            (2, 1, 1)
        );
        // A ban lifted (0) lifts the penalty too, and drops the cached denial.
        assert!(limiter.ban("p:1", 0).await.unwrap());
        assert!(limiter.cache().unwrap().is_empty());
        let after = limiter.decide("p:1", &login).await.unwrap();
        assert!(!after.allowed && !after.cached, "the window is still full");
        // A ban on a fresh key.
        assert!(!limiter.ban("p:2", 60_000).await.unwrap());
        let d = limiter
            .decide("p:2", &Policy::gcra(10, "1s"))
            .await
            .unwrap();
        assert!(!d.allowed && d.retry_after_ms > 50_000);
        let text = limiter.metrics().prometheus();
        assert!(
            text.contains(
                "rl_decisions_total{layer=\"login\",result=\"over_limit_with_local_cache\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("rl_denial_cache_max_entries 10000\n"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_limiter_is_denied_here_never_past_its_next_unit() {
    use redis_rl::DenialCache;
    use std::time::Instant;
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let conn = s.multiplexed().await;
        let truth = Limiter::with_cache(conn.clone(), None);
        let cache = DenialCache::new(100).exhausted(true);
        let limiter = Limiter::with_cache(conn, Some(cache));
        let exhaustible = [
            Policy::gcra(1, "1s").burst(3),
            Policy::token_bucket(3, 1, "1s"),
            Policy::leaky(3, 1, "1s"),
            Policy::fixed(3, "1h"),
            Policy::quota(3, QuotaUnit::Day),
        ];
        for (i, p) in exhaustible.iter().enumerate() {
            let key = format!("x:{i}");
            for _ in 0..3 {
                assert!(limiter.decide(&key, p).await.unwrap().allowed);
            }
            // Denied here, the first call past the limit included, never past the moment the
            // server admits one (its own wait, read right after, bounds the cached one).
            let started = Instant::now();
            let hit = limiter.decide_cost(&key, p, 2).await.unwrap();
            let server = truth.peek(&key, p, 1).await.unwrap();
            let elapsed = started.elapsed().as_millis() as i64 + 1;
            assert!(
                hit.cached && !hit.allowed && hit.remaining == 0 && hit.limit == 3,
                "{p:?}"
            );
            assert!(!server.allowed && server.retry_after_ms > 0, "{p:?}");
            assert!(
                hit.retry_after_ms >= 1 && hit.retry_after_ms <= server.retry_after_ms + elapsed,
                "{p:?}: {} against {}",
                hit.retry_after_ms,
                server.retry_after_ms
            );
        }
        let counted = limiter.metrics().snapshot();
        assert_eq!(counted["default"]["within_limit"], 15);
        assert_eq!(counted["default"]["over_limit"], 0);
        assert_eq!(counted["default"]["over_limit_with_local_cache"], 5);
        // What the reply does not time is not kept: the sliding windows, a penalty, a peek.
        let before = limiter.cache().unwrap().len();
        for (i, p) in [
            Policy::sliding(1, "1h"),
            Policy::sliding_log(1, "1h"),
            Policy::fixed(1, "1h").penalty("1m", None),
        ]
        .iter()
        .enumerate()
        {
            let d = limiter.decide(&format!("y:{i}"), p).await.unwrap();
            assert!(d.allowed && d.remaining == 0);
        }
        assert!(
            limiter
                .peek("z", &Policy::fixed(1, "1h"), 1)
                .await
                .unwrap()
                .allowed
        );
        assert_eq!(limiter.cache().unwrap().len(), before);
        // Off by default.
        assert!(!DenialCache::default().is_exhausted());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_and_their_headers() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let monthly = Policy::quota(2, QuotaUnit::Month)
            .tz("Europe/Paris")
            .anchor("2026-01-31T00:00")
            .name("month");
        assert!(limiter.decide("q:1", &monthly).await.unwrap().allowed);
        assert!(limiter.decide("q:1", &monthly).await.unwrap().allowed);
        let d = limiter.decide("q:1", &monthly).await.unwrap();
        assert!(!d.allowed);
        let headers = d.all_headers(None);
        let policy = &headers
            .iter()
            .find(|(k, _)| *k == "RateLimit-Policy")
            .unwrap()
            .1;
        let w: u64 = policy.rsplit("w=").next().unwrap().parse().unwrap();
        assert!(
            (28..=31).contains(&(w / 86_400)) && w % 86_400 == 0,
            "{policy}"
        );
        assert!(policy.starts_with("\"month\";q=2;w="));
        let daily = Policy::quota(1, QuotaUnit::Day);
        let d = limiter.decide("q:2", &daily).await.unwrap();
        assert_eq!(
            d.ietf_headers(Some("day"))[0],
            ("RateLimit-Policy", "\"day\";q=1;w=86400".to_string())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_and_shadow_policies() {
    let s = Server::start(Kind::Module);
    let limiter = Limiter::new(s.multiplexed().await);
    limiter
        .define("free", &Policy::fixed(1, "1d"))
        .await
        .unwrap();
    limiter
        .define("watch", &Policy::fixed(1, "1d").shadow())
        .await
        .unwrap();
    let free = Policy::named("free");
    let watch = Policy::named("watch");
    assert!(limiter.decide("n:1", &free).await.unwrap().allowed);
    let d = limiter.decide("n:1", &free).await.unwrap();
    assert!(!d.allowed);
    assert_eq!(
        d.ietf_headers(None)[0],
        ("RateLimit-Policy", "\"free\";q=1".to_string())
    );
    assert!(limiter.decide("n:2", &watch).await.unwrap().allowed);
    let d = limiter.decide("n:2", &watch).await.unwrap();
    assert!(d.allowed && d.shadowed(), "{d:?}");
    assert_eq!(limiter.metrics().snapshot()["watch"]["shadow_mode"], 1);
    // Reserved by a shadow policy's denial: nothing to settle.
    let (d, r) = limiter.reserve("n:2", &watch, 1).await.unwrap();
    assert!(d.allowed && d.shadowed());
    assert!(r.unwrap().layers().is_empty());
    // RL.ALL: the shadow layer denies nothing; the enforced one does.
    let all = limiter
        .decide_all(&[("{n}:a", &watch), ("{n}:b", &watch)])
        .await
        .unwrap();
    assert!(all.allowed() && all.shadowed().is_empty());
    let all = limiter
        .decide_all(&[("{n}:a", &watch), ("{n}:b", &watch)])
        .await
        .unwrap();
    assert!(all.allowed());
    assert_eq!(all.shadowed(), vec![0, 1]);
    let top = limiter.top("free", 5).await.unwrap();
    assert_eq!(top[0].key, "n:1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_and_the_cache() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let burst = Policy::sliding_log(3, "1h").name("burst");
        let day = Policy::sliding_log(1000, "1d").name("day");
        for _ in 0..3 {
            assert!(limiter
                .decide_all(&[("{u}:burst", &burst), ("{u}:day", &day)])
                .await
                .unwrap()
                .allowed());
        }
        let d = limiter
            .decide_all(&[("{u}:burst", &burst), ("{u}:day", &day)])
            .await
            .unwrap();
        assert!(!d.allowed() && !d.cached() && d.index == 0);
        assert_eq!(
            d.layers[1].as_ref().unwrap().remaining,
            997,
            "nothing spent"
        );
        let c = limiter
            .decide_all(&[("{u}:burst", &burst), ("{u}:day", &day)])
            .await
            .unwrap();
        assert!(c.cached() && c.layers[1].is_none());
        let peek = limiter
            .peek_all(&[("{u}:burst", &burst), ("{u}:day", &day)])
            .await
            .unwrap();
        assert!(!peek.allowed() && !peek.cached());
        // A smaller cost is not denied from the cache unless it would be: cost 1 was denied.
        let e = limiter
            .decide_with("{u}:burst", &burst, Call::new().cost(1))
            .await
            .unwrap();
        assert!(e.cached);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_without_the_module() {
    let cluster = Cluster::start(false);
    let limiter = Limiter::new(cluster.connection().await);
    exactly_the_limit(limiter.clone(), "c:60").await;
    assert_eq!(limiter.backend(), Some(Backend::Library));
    // Keys on every node, so the library is on every master.
    let p = Policy::fixed(1, "1d");
    for i in 0..30 {
        assert!(limiter.decide(&format!("c:{i}"), &p).await.unwrap().allowed);
    }
    for n in &cluster.nodes {
        assert!(
            n.cli(&["function", "list"]).contains("rl"),
            "node {}",
            n.port
        );
    }
    let a = Policy::sliding_log(2, "1h");
    for tag in ["x", "y", "z", "{", "a}b"] {
        let keys = [format!("{{{tag}}}:1"), format!("{{{tag}}}:2")];
        assert!(limiter
            .decide_all(&[(&keys[0], &a), (&keys[1], &a)])
            .await
            .unwrap()
            .allowed());
        assert!(limiter
            .decide_all(&[(&keys[0], &a), (&keys[1], &a)])
            .await
            .unwrap()
            .allowed());
        assert!(!limiter
            .decide_all(&[(&keys[0], &a), (&keys[1], &a)])
            .await
            .unwrap()
            .allowed());
    }
    let (_, r) = limiter
        .reserve_all(&[("{r}:a", &a), ("{r}:b", &a)], 1)
        .await
        .unwrap();
    assert!(r.unwrap().settle(0).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_with_the_module() {
    let cluster = Cluster::start(true);
    let limiter = Limiter::new(cluster.connection().await);
    exactly_the_limit(limiter.clone(), "m:60").await;
    assert_eq!(limiter.backend(), Some(Backend::Module));
    let a = Policy::gcra(2, "1h").burst(2);
    for tag in ["x", "y", "z"] {
        let keys = [format!("{{{tag}}}:1"), format!("{{{tag}}}:2")];
        assert!(limiter
            .decide_all(&[(&keys[0], &a), (&keys[1], &a)])
            .await
            .unwrap()
            .allowed());
    }
    // A shadow policy defined on every node, read back through the key's node.
    for n in &cluster.nodes {
        n.cli(&["rl.policy", "set", "w", "FIXED", "1", "1d", "SHADOW"]);
    }
    let w = Policy::named("w");
    for key in ["s:1", "s:2", "s:3"] {
        limiter.decide(key, &w).await.unwrap();
        let (d, r) = limiter.reserve(key, &w, 1).await.unwrap();
        assert!(d.shadowed() && r.unwrap().layers().is_empty());
    }
}

/// The futures are `Send` (a tower service's must be), for each kind of connection.
#[allow(dead_code)]
fn futures_are_send() {
    fn send<T: Send>(_: T) {}
    fn all<C: ConnectionLike + Clone + Send + Sync + 'static>(l: Limiter<C>, p: Policy) {
        send(async move {
            let _ = l.decide("k", &p).await;
            let _ = l.decide_all(&[("k", &p)]).await;
            let _ = l.peek("k", &p, 1).await;
            let _ = l.ban("k", 1).await;
            let _ = l.refund("k", &p, 1).await;
            if let Ok((_, Some(mut r))) = l.reserve("k", &p, 2).await {
                let _ = r.settle(1).await;
            }
        });
    }
    let _ = all::<redis::aio::MultiplexedConnection>;
    let _ = all::<redis::aio::ConnectionManager>;
    let _ = all::<redis::cluster_async::ClusterConnection>;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let d = limiter.acquire("l:1", 2, "30s", "a").await.unwrap();
        assert_eq!((d.allowed, d.limit, d.remaining), (true, 2, 1));
        assert!(d
            .ietf_headers(None)
            .iter()
            .all(|(k, _)| *k != "RateLimit-Policy"));
        assert!(limiter.acquire("l:1", 2, 30u64, "b").await.unwrap().allowed);
        assert!(!limiter.acquire("l:1", 2, "30s", "c").await.unwrap().allowed);
        assert!(limiter.release("l:1", "a").await.unwrap());
        assert!(!limiter.release("l:1", "a").await.unwrap());
        assert!(limiter.acquire("l:1", 2, "30s", "c").await.unwrap().allowed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_waits_in_the_server_and_a_manager_reports_an_outage() {
    let mut s = Server::start(Kind::Module);
    let limiter = Limiter::new(s.manager().await);
    let p = Policy::gcra(10, "1s");
    assert!(limiter.decide("b:1", &p).await.unwrap().allowed);
    assert!(!limiter.decide("b:1", &p).await.unwrap().allowed);
    // Denied now (100 ms apart), admitted within the wait; the cached denial is not read.
    let d = limiter
        .decide_with("b:1", &p, Call::new().block_ms(400))
        .await
        .unwrap();
    assert!(d.allowed && !d.cached, "{d:?}");
    s.kill();
    let e = limiter.decide("b:2", &p).await.unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_is_unavailable() {
    for kind in [Kind::Module, Kind::Library] {
        let s = Server::start(kind);
        let limiter = Limiter::new(s.multiplexed().await);
        let p = Policy::fixed(5, "1m");
        if kind == Kind::Library {
            // The library loaded first: then the call's own OOM.
            limiter.decide("o:0", &p).await.unwrap();
        }
        s.cli(&["config", "set", "maxmemory", "1"]);
        let e = limiter.decide("o:1", &p).await.unwrap_err();
        assert!(e.is_unavailable() && e.code() == Some("OOM"), "{e:?}");
        assert_eq!(limiter.metrics().snapshot()["default"]["unavailable"], 1);
    }
    // The library's load refused for memory: unavailable too, not a configuration's.
    let s = Server::start(Kind::Library);
    s.cli(&["config", "set", "maxmemory", "1"]);
    let limiter = Limiter::new(s.multiplexed().await);
    let e = limiter
        .decide("o:2", &Policy::fixed(5, "1m"))
        .await
        .unwrap_err();
    assert!(e.is_unavailable(), "{e:?}");
}
