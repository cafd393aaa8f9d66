"""The denial cache and the counters: the ASGI middleware served by uvicorn and driven over
HTTP on each backend, with the server's own INFO commandstats counting the calls that reach
it; the limiter's calls by cost; the bound under 100,000 distinct identities."""

from __future__ import annotations

import math
import shutil
import subprocess
import time

import httpx
import pytest
import redis
import redis.asyncio
from apps import served_asgi
from prometheus_client.parser import text_string_to_metric_families

import redis_rl
import redis_rl.commands
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, header


def calls(client: redis.Redis) -> int:
    """The rate-limit calls the server has run: the module's commands, or the library's
    FCALL and FCALL_RO (a new connection's CLIENT SETINFO and INFO itself are not)."""
    stats = client.info("commandstats")
    return sum(v["calls"] for k, v in stats.items()
               if k.startswith(("cmdstat_rl.", "cmdstat_fcall")))


def app_on(client, layers, limiter=None, **options):
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    limiter = limiter or redis_rl.AsyncLimiter(client)
    app = FastAPI()
    app.add_middleware(RateLimitMiddleware, limiter=limiter, layers=layers, **options)

    @app.get("/")
    async def root():
        return {"ok": True}

    @app.get("/metrics")
    async def metrics():
        return PlainTextResponse(limiter.metrics.prometheus())

    return app, limiter


def user_layer(p):
    return [Layer("user", header("x-user"), p)]


def get(base, user="alice"):
    return httpx.get(f"{base}/", headers={"x-user": user}, timeout=10)


COMPARED = ["x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit-policy", "content-type",
            "content-length"]
COUNTING = ["retry-after", "x-ratelimit-reset"]


def test_a_cached_denial_is_the_servers_without_a_call(server):
    """A 429 from the cache has the server's status, body and headers (Retry-After and the
    reset counting down, never past the server's), and reaches no server."""
    sync = redis.Redis(port=server.port)
    a = redis.asyncio.Redis(port=server.port)
    b = redis.asyncio.Redis(port=server.port)
    p = policy.sliding_log(2, "1h")
    cached_app, limiter = app_on(a, user_layer(p))
    plain_app, _ = app_on(b, user_layer(p),
                          limiter=redis_rl.AsyncLimiter(b, denial_cache=False))
    with served_asgi(cached_app) as cached, served_asgi(plain_app) as plain:
        assert [get(cached).status_code for _ in range(3)] == [200, 200, 429]
        assert limiter.metrics.snapshot()["user"]["over_limit"] == 1
        before = calls(sync)
        asked = time.monotonic()
        server_said = get(plain)  # the server's answer, now
        assert calls(sync) == before + 1
        before = calls(sync)
        ours = [get(cached) for _ in range(20)]
        took = math.ceil(time.monotonic() - asked)  # seconds the countdown may have run
        assert calls(sync) == before, "a cached denial reached the server"
        for r in ours:
            assert r.status_code == server_said.status_code == 429
            assert r.json() == server_said.json() == {"error": "rate limited", "layer": "user"}
            assert {h: r.headers.get(h) for h in COMPARED} == {
                h: server_said.headers.get(h) for h in COMPARED}
            assert r.headers["x-ratelimit-remaining"] == "0"
            t = int(r.headers["ratelimit"].rsplit("t=", 1)[1])
            assert t == int(r.headers["x-ratelimit-reset"])
        # Counted from the call's send, so never past the server's deadline; less by the time
        # the requests took (and a second's rounding).
        for h in COUNTING:
            assert int(server_said.headers[h]) - 1 - took <= int(ours[0].headers[h]) \
                <= int(server_said.headers[h])
        # Counting down: never up from one answer to the next.
        retries = [int(r.headers["retry-after"]) for r in ours]
        assert retries == sorted(retries, reverse=True)
        assert limiter.metrics.snapshot()["user"] == {
            "within_limit": 2, "over_limit": 1, "over_limit_with_local_cache": 20,
            "shadow_mode": 0, "unavailable": 0, "unavailable_fail_open": 0,
            "insured_within_limit": 0, "insured_over_limit": 0, "error": 0}
        # Another identity is not denied by it.
        assert get(cached, "bob").status_code == 200
    sync.close()


def test_a_cached_denial_expires_when_the_server_admits_again(server):
    """Once Retry-After has passed, the next request is the server's again, and admitted."""
    sync = redis.Redis(port=server.port)
    app, limiter = app_on(redis.asyncio.Redis(port=server.port),
                          user_layer(policy.gcra(1, "1s")))
    with served_asgi(app) as base:
        assert get(base).status_code == 200
        denied = get(base)
        replied = time.monotonic()  # after the server decided: its Retry-After ran from before
        assert denied.status_code == 429 and len(limiter.cache) == 1
        before = calls(sync)
        r = get(base)  # a 429 from the cache, or (under load) past the end, the server's 200
        assert (r.status_code, calls(sync)) in ((429, before), (200, before + 1))
        if r.status_code == 200:  # already past the end: the entry was dropped when met
            assert len(limiter.cache) == 0
            sync.close()
            return
        time.sleep(max(0.0, replied + int(denied.headers["retry-after"]) - time.monotonic()))
        before = calls(sync)
        again = get(base)
        assert again.status_code == 200, again.headers
        assert calls(sync) == before + 1
        assert len(limiter.cache) == 0  # the expired entry was dropped when met
    sync.close()


def test_a_smaller_cost_is_never_denied_from_the_cache(server):
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync)
    bucket = policy.token_bucket(5, 1, "1h")
    assert limiter.decide("k", bucket, cost=4).allowed  # 1 left
    denied = limiter.decide("k", bucket, cost=3)
    assert not denied.allowed and not denied.cached and denied.remaining == 1
    before = calls(sync)
    hit = limiter.decide("k", bucket, cost=3)
    bigger = limiter.decide("k", bucket, cost=5)
    assert hit.cached and bigger.cached and not hit.allowed and not bigger.allowed
    assert hit.remaining == 1 and hit.limit == denied.limit
    assert calls(sync) == before
    # Cost 1 would be admitted: it goes to the server, and is.
    one = limiter.decide("k", bucket, cost=1)
    assert one.allowed and not one.cached and calls(sync) == before + 1
    # Denied at cost 1 now: cached for every cost.
    assert not limiter.decide("k", bucket, cost=1).allowed
    assert limiter.decide("k", bucket, cost=1).cached
    assert limiter.metrics.snapshot()["default"] == {
        "within_limit": 2, "over_limit": 2, "over_limit_with_local_cache": 3,
        "shadow_mode": 0, "unavailable": 0, "unavailable_fail_open": 0,
            "insured_within_limit": 0, "insured_over_limit": 0, "error": 0}
    # This limiter's own REFUND drops the entry: the next call is the server's.
    limiter.refund("k", bucket, 5)
    assert limiter.decide("k", bucket, cost=3).allowed
    sync.close()


def test_rl_all_is_denied_by_a_cached_layer_and_peeks_read_it(server):
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync)
    tight, loose = policy.sliding_log(1, "1h", "tight"), policy.sliding_log(100, "1h", "loose")
    assert limiter.all([("t", tight), ("l", loose)]).allowed
    first = limiter.all([("t", tight), ("l", loose)])
    assert not first.allowed and first.index == 0 and not first.cached
    before = calls(sync)
    again = limiter.all([("l", loose), ("t", tight)])
    assert again.cached and not again.allowed and again.index == 1
    assert again.binding.policy == tight and again.layers[0] is None
    peeked = limiter.peek("t", tight)
    assert peeked.cached and not peeked.allowed
    assert limiter.decide("t", tight).cached
    assert calls(sync) == before
    # The loose layer was not spent by the denials (all or nothing): 99 left, 98 after the
    # request peeked.
    assert limiter.peek("l", loose).remaining == 98
    # RL.BAN through this limiter forgets the key's entries.
    limiter.ban("t", 0)
    assert not limiter.decide("t", tight).cached
    counted = limiter.metrics.snapshot()
    assert counted["tight"]["over_limit"] == 2
    assert counted["tight"]["over_limit_with_local_cache"] == 2
    assert counted["tight"]["within_limit"] == 1  # the binding layer: the least remaining
    assert limiter.metrics.total() == 5  # 3 RL.ALL and 2 decide; peeks are not counted
    sync.close()


def test_a_shadow_policys_denial_is_not_cached(policy_server, define):
    sync = redis.Redis(port=policy_server.port)
    name = define("SLIDINGLOG 1 1h SHADOW")
    limiter = redis_rl.Limiter(sync)
    assert limiter.limit("s", name).allowed
    d = limiter.limit("s", name)
    assert d.allowed and d.shadowed and not d.cached
    assert len(limiter.cache) == 0
    before = calls(sync)
    assert limiter.limit("s", name).shadowed
    assert calls(sync) > before
    assert limiter.metrics.snapshot()[name]["shadow_mode"] == 2
    sync.close()


def test_the_cache_can_be_switched_off(server):
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync, denial_cache=False)
    p = policy.sliding_log(1, "1h")
    assert limiter.decide("k", p).allowed
    assert not any(limiter.decide("k", p).cached for _ in range(3))
    assert limiter.cache is None
    with pytest.raises(TypeError):
        redis_rl.Limiter(sync, denial_cache=10)
    with pytest.raises(ValueError):
        redis_rl.DenialCache(max_entries=0)
    sync.close()


@pytest.mark.parametrize("module", [True, False], ids=["module", "library"])
def test_the_bound_holds_under_100000_distinct_identities(servers, module):
    """100,000 identities denied by the server (their one request of the hour spent, then
    each denied: the replies of one pipeline, each recorded as the limiter records a call's),
    then 3,000 through the limiter's own calls: the map never holds more than its bound,
    the last identities are the ones held (LRU), and every call is counted."""
    server = servers("redis", module)
    client = redis.Redis(port=server.port)
    client.flushall()
    bound, n = 1000, 100_000
    limiter = redis_rl.Limiter(client, denial_cache=redis_rl.DenialCache(bound))
    p = policy.sliding_log(1, "1h", "flood")
    limiter.decide("warm", p, peek=True)  # the backend known, the library loaded
    cache = limiter.cache
    for start in range(0, n, 10_000):
        keys = [f"f:{i}" for i in range(start, start + 10_000)]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            cmd = redis_rl.commands.decide(key, p)
            args = cmd.library() if limiter.backend == redis_rl.LIBRARY else cmd.module
            pipe.execute_command(*args)
            pipe.execute_command(*args)
        replies = pipe.execute()
        sent = cache.clock()
        for key, reply in zip(keys, replies[1::2]):
            denied = redis_rl.Decision.from_reply(reply, limiter.backend, p)
            assert not denied.allowed and denied.retry_after_ms > 0
            cache.put(key, p, 1, denied, sent)
            assert len(cache) <= bound
    assert cache.high_water == bound and len(cache) == bound
    assert cache.get(f"f:{n - 1}", p, 1) is not None and cache.get("f:0", p, 1) is None
    # Through the limiter: new identities, each admitted then denied by the server.
    for i in range(1500):
        limiter.decide(f"g:{i}", p)
        assert not limiter.decide(f"g:{i}", p).allowed
        assert len(cache) <= bound
    assert cache.high_water == bound
    assert limiter.metrics.snapshot()["flood"]["over_limit"] == 1500
    assert limiter.metrics.total() == 3000
    client.close()


def test_counters_equal_the_requests_and_their_text_parses(server, tmp_path):
    """Per layer and result, the counters are the requests sent (a denial by the server, by
    the cache, an unavailable server let through and not); the text parses, by
    prometheus_client's parser and by promtool where installed."""
    a = redis.asyncio.Redis(port=server.port)
    layers = [Layer("user", header("x-user"), policy.sliding_log(3, "1h")),
              Layer("key", header("x-key"), policy.sliding_log(5, "1h"))]
    app, limiter = app_on(a, layers)
    sent = {"within_limit": 0, "over_limit": 0, "over_limit_with_local_cache": 0}
    statuses = []
    with served_asgi(app) as base:
        for i in range(12):
            r = httpx.get(f"{base}/", headers={"x-user": f"u{i % 2}", "x-key": "k"},
                          timeout=10)
            statuses.append(r.status_code)
        text = httpx.get(f"{base}/metrics", timeout=10).text
    assert statuses.count(200) == 5 and statuses.count(429) == 7
    snap = limiter.metrics.snapshot()
    sent["within_limit"] = statuses.count(200)
    total_429 = snap["key"]["over_limit"] + snap["key"]["over_limit_with_local_cache"]
    assert total_429 == 7 and snap["key"]["over_limit"] == 1
    assert sum(r["within_limit"] for r in snap.values()) == 5
    assert limiter.metrics.total() == 12
    # The text: every series, its labels and values.
    families = {f.name: f for f in text_string_to_metric_families(text)}
    series = {(s.labels["layer"], s.labels["result"]): s.value
              for s in families["rl_decisions"].samples}
    assert families["rl_decisions"].type == "counter"
    for layer, results in snap.items():
        for result, count in results.items():
            assert series[(layer, result)] == count
    assert families["rl_denial_cache_entries"].samples[0].value == 1
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr

    # Unavailable: a closed port, answered 503, or let through with fail_open.
    closed = redis.asyncio.Redis(port=1, socket_connect_timeout=1)
    for fail_open, status in ((False, 503), (True, 200)):
        app, limiter = app_on(closed, layers, fail_open=fail_open)
        with served_asgi(app) as base:
            r = httpx.get(f"{base}/", headers={"x-user": "u", "x-key": "k"}, timeout=10)
        assert r.status_code == status
        result = "unavailable_fail_open" if fail_open else "unavailable"
        assert limiter.metrics.snapshot() == {"user+key": {
            **dict.fromkeys(redis_rl.metrics.RESULTS, 0), result: 1}}


EXHAUSTIBLE = [policy.gcra(1, "1s", 3), policy.token_bucket(3, 1, "1s"), policy.leaky(3, 1, "1s"),
               policy.fixed(3, "1h"), policy.quota(3, "DAY")]


@pytest.mark.parametrize("p", EXHAUSTIBLE, ids=lambda p: p.algo)
def test_an_exhausted_limiter_is_denied_here_never_past_its_next_unit(server, p):
    """With `exhausted=True`, the admission that leaves nothing is cached as a denial: the
    next calls are denied without a call, never past the moment the server would admit
    one (the server's own wait, read right after, bounds the cached one)."""
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync, denial_cache=redis_rl.DenialCache(exhausted=True))
    truth = redis_rl.Limiter(sync, denial_cache=False)
    assert [limiter.decide("k", p).allowed for _ in range(3)] == [True, True, True]
    before = calls(sync)
    started = time.monotonic()
    hit = limiter.decide("k", p, cost=2)
    server_said = truth.peek("k", p)
    elapsed_ms = (time.monotonic() - started) * 1000
    assert hit.cached and not hit.allowed and hit.remaining == 0 and hit.limit == 3
    assert calls(sync) == before + 1  # the peek only
    assert not server_said.allowed and server_said.retry_after_ms > 0
    assert 1 <= hit.retry_after_ms <= server_said.retry_after_ms + math.ceil(elapsed_ms)
    assert hit.reset_after_ms <= server_said.reset_after_ms + math.ceil(elapsed_ms) + 1  # both up
    assert limiter.metrics.snapshot()["default"]["over_limit_with_local_cache"] == 1
    assert limiter.metrics.snapshot()["default"]["over_limit"] == 0
    sync.close()


def test_an_exhausted_entry_ends_when_the_next_unit_is_free(server):
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync, denial_cache=redis_rl.DenialCache(exhausted=True))
    p = policy.gcra(10, "1s")  # one every 100 ms
    first = limiter.decide("k", p)
    replied = time.monotonic()
    assert first.allowed and first.remaining == 0 and len(limiter.cache) == 1
    time.sleep(max(0.0, replied + 0.15 - time.monotonic()))  # past the server's 100 ms
    before = calls(sync)
    again = limiter.decide("k", p)
    assert again.allowed and not again.cached and calls(sync) == before + 1
    sync.close()


@pytest.mark.parametrize("p", [policy.sliding(1, "1h"), policy.sliding_log(1, "1h"),
                               policy.fixed(1, "1h", penalty="1m")], ids=["sliding", "log",
                                                                         "penalty"])
def test_an_exhaustion_the_reply_does_not_time_is_not_cached(server, p):
    """The sliding windows' replies do not say when the next unit is free; a penalty's denial
    must reach the server (it starts the penalty); a peek spends nothing; without
    `exhausted` (the default) an admission is never cached."""
    sync = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(sync, denial_cache=redis_rl.DenialCache(exhausted=True))
    d = limiter.decide("k", p)
    assert d.allowed and d.remaining == 0 and len(limiter.cache) == 0
    off = redis_rl.Limiter(sync)
    fixed = policy.fixed(1, "1h")
    assert off.peek("f", fixed).remaining == 0 and off.decide("f", fixed).allowed
    assert len(off.cache) == 0 and not off.cache.exhausted
    on = redis_rl.Limiter(sync, denial_cache=redis_rl.DenialCache(exhausted=True))
    assert on.peek("g", fixed).allowed and len(on.cache) == 0
    with pytest.raises(TypeError):
        redis_rl.DenialCache(exhausted=1)
    sync.close()


def test_a_flood_past_an_exhausted_limit_never_reaches_the_server(server):
    """Over HTTP: each identity's admissions are the server's, and every request after them
    is denied by the middleware without a call, the first denial included."""
    sync = redis.Redis(port=server.port)
    a = redis.asyncio.Redis(port=server.port)
    limiter = redis_rl.AsyncLimiter(a, denial_cache=redis_rl.DenialCache(exhausted=True))
    app, _ = app_on(a, user_layer(policy.fixed(2, "1h")), limiter=limiter)
    with served_asgi(app) as base:
        assert get(base, "warm").status_code == 200  # the library loaded, where it is used
        before = calls(sync)
        codes = [get(base, user).status_code for user in ("a", "b") for _ in range(6)]
        assert codes == [200, 200, 429, 429, 429, 429] * 2
        assert calls(sync) == before + 4
        counted = limiter.metrics.snapshot()["user"]
        assert (counted["within_limit"], counted["over_limit"],
                counted["over_limit_with_local_cache"]) == (5, 0, 8)
    sync.close()


def test_long_keys_are_held_as_digests_in_bounded_memory(server):
    """1,000 identities of 8 KB keys (a header-keyed layer's worst), each denied by the server
    then answered from the cache: the cache holds their digests, not the keys (about 8 MB),
    a key one byte apart is another identity, and a lifted ban drops a long key's entry."""
    import tracemalloc

    client = redis.Redis(port=server.port)
    limiter = redis_rl.Limiter(client)
    p = policy.fixed(1, "1h", "long")
    limiter.decide("warm", p, peek=True)  # the backend known, the library loaded
    tail = "x" * 8192

    def key(i: int) -> str:
        return f"{i}:{tail}"

    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(1000):
            assert limiter.decide(key(i), p).allowed
            assert not limiter.decide(key(i), p).allowed
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert len(limiter.cache) == 1000
    assert grown < 1_000_000, grown  # the keys themselves would be 8.2 MB
    sent = calls(client)
    assert all(limiter.decide(key(i), p).cached for i in range(1000))
    assert calls(client) == sent  # every one answered here
    # Another key, the same but for its last byte: the server's to decide (and it admits).
    other = key(0)[:-1] + "y"
    assert limiter.decide(other, p).allowed and calls(client) == sent + 1
    # A ban lifted drops the long key's entry: its next call reaches the server.
    limiter.ban(key(1), 0)
    assert not limiter.decide(key(1), p).cached
    # Just under the bound a key is held as it is, just over as its digest: both are found.
    for k in ("k" * 64, "k" * 65):
        limiter.decide(k, p)
        assert limiter.decide(k, p).cached is False and limiter.decide(k, p).cached
    client.close()
