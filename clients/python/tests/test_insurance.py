"""Insurance: the ASGI middleware served by uvicorn and driven over HTTP by several concurrent
clients while its Redis (with the module, and without it: the Functions library) is killed
and started again on the same port."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter

import httpx
import pytest
import redis
import redis.asyncio
from apps import served_asgi
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, header

NODES = 4
LIMIT = 40  # per hour: the process's share is 10
SHARE = LIMIT // NODES
CLIENTS = 8


def app_on(port: int, **options):
    from fastapi import FastAPI

    # No client-side retries: an unavailable server is seen at once (redis-py 6 retries three
    # times with a backoff by default, which each request would wait before being insured).
    client = redis.asyncio.Redis(port=port, socket_timeout=2, socket_connect_timeout=2,
                                 retry=Retry(NoBackoff(), 0))
    limiter = redis_rl.AsyncLimiter(client, **options)
    app = FastAPI()
    app.add_middleware(RateLimitMiddleware, limiter=limiter, layers=[
        Layer("user", header("x-user"), policy.sliding_log(LIMIT, "1h")),
        Layer("site", lambda scope: "all", policy.fixed(1_000_000, "1h")),
    ])

    @app.get("/")
    async def root():
        return {"ok": True}

    return app, limiter


def calls(port: int) -> int:
    stats = redis.Redis(port=port).info("commandstats")
    return sum(v["calls"] for k, v in stats.items()
               if k.startswith(("cmdstat_rl.", "cmdstat_fcall")))


class Load:
    """`CLIENTS` threads sending requests until stopped, each as the identity `who(thread)`
    names at that moment: every response's (identity, status, X-RateLimit-Limit) kept, and
    any failure (an exception, a status other than 200 or 429)."""

    def __init__(self, base: str) -> None:
        self.base, self.phase = base, "before"
        self.got: list[tuple[str, int, str]] = []
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(t,)) for t in range(CLIENTS)]

    def who(self, t: int) -> str:
        return "crowd" if self.phase == "before" else f"{self.phase}-{t}"

    def run(self, t: int) -> None:
        with httpx.Client(timeout=10) as http:
            while not self.stop.is_set():
                user = self.who(t)
                try:
                    r = http.get(f"{self.base}/", headers={"x-user": user})
                except httpx.HTTPError as err:
                    with self.lock:
                        self.failures.append(f"{user}: {err!r}")
                    continue
                with self.lock:
                    self.got.append((user, r.status_code, r.headers.get("x-ratelimit-limit", "")))
                    if r.status_code not in (200, 429):
                        self.failures.append(f"{user}: {r.status_code} {r.text}")

    def seen(self, user: str, limit: str | None = None) -> list[int]:
        with self.lock:
            return [s for u, s, lim in self.got if u == user and (limit is None or lim == limit)]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def wait_for(what, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.02)


def switches(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "redis_rl.insurance"]


@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_redis_killed_under_load_is_insured_and_decides_again_after_a_restart(
        fresh_server, caplog, with_module):
    server = fresh_server("redis", with_module)
    caplog.set_level(logging.WARNING, logger="redis_rl.insurance")
    app, limiter = app_on(server.port, insurance=redis_rl.Insurance(nodes=NODES))
    with served_asgi(app) as base, Load(base) as load:
        # Redis decides (an exact sliding log: no window boundary to cross): the crowd spends
        # its 40 and is denied (then from the denial cache).
        wait_for(lambda: load.seen("crowd").count(429) >= CLIENTS)
        assert load.seen("crowd").count(200) == LIMIT
        assert switches(caplog) == []

        server.stop()  # killed: every request from now on is this process's to decide
        load.phase = "outage"
        wait_for(lambda: all(len(load.seen(f"outage-{t}", str(SHARE))) > SHARE + 2
                             for t in range(CLIENTS)))
        # A fresh identity: the share, then a 429 with the headers and body Redis's has.
        with httpx.Client(timeout=10) as http:
            got = [http.get(f"{base}/", headers={"x-user": "fresh"}) for _ in range(SHARE + 1)]
        assert [r.status_code for r in got] == [200] * SHARE + [429]
        assert [r.headers["x-ratelimit-remaining"] for r in got] == [
            str(SHARE - 1 - i) for i in range(SHARE)] + ["0"]
        denied = got[-1]
        assert denied.headers["x-ratelimit-limit"] == str(SHARE)
        assert 3500 <= int(denied.headers["retry-after"]) <= 3600
        assert denied.headers["ratelimit-policy"] == f'"user";q={LIMIT};w=3600'
        assert denied.headers["ratelimit"].startswith('"user";r=0;t=')
        assert json.loads(denied.text) == {"error": "rate limited", "layer": "user"}
        # The crowd's denial, cached before the outage, answers first: never insured.
        with httpx.Client(timeout=10) as http:
            crowd = http.get(f"{base}/", headers={"x-user": "crowd"})
        assert crowd.status_code == 429 and crowd.headers["x-ratelimit-limit"] == str(LIMIT)

        load.phase = "after"
        server.start()  # the same port; its data gone (no persistence)
        wait_for(lambda: all(str(LIMIT) in [lim for u, _, lim in load.got if u == f"after-{t}"]
                             for t in range(CLIENTS)))
        # Redis decides again: a new identity is counted there, against the whole limit.
        before = calls(server.port)
        with httpx.Client(timeout=10) as http:
            later = http.get(f"{base}/", headers={"x-user": "later"})
        assert later.status_code == 200 and later.headers["x-ratelimit-limit"] == str(LIMIT)
        assert later.headers["x-ratelimit-remaining"] == str(LIMIT - 1)
        assert calls(server.port) > before
    assert load.failures == []
    # Each flooding client had its share during the outage, and no more.
    for t in range(CLIENTS):
        assert load.seen(f"outage-{t}", str(SHARE)).count(200) == SHARE
    assert load.seen("crowd").count(200) == LIMIT and load.seen("crowd", str(SHARE)) == []
    logged = switches(caplog)
    assert len(logged) == 2, logged
    assert logged[0].startswith(f"rl: Redis unavailable, insurance on: this process decides "
                                f"alone, each policy divided by {NODES} (")
    assert logged[1] == "rl: Redis answers again, insurance off: decisions are Redis's again"
    snap = limiter.metrics.snapshot()["user"]
    insured = Counter(s for u, s, lim in load.got if lim == str(SHARE)) + Counter(
        r.status_code for r in got)
    assert snap["insured_within_limit"] == insured[200]
    assert snap["insured_over_limit"] == insured[429]
    assert snap["unavailable"] == 0 and snap["error"] == 0


def closed_limiter(**options) -> redis_rl.Limiter:
    """A limiter whose server is out of reach (a closed port): every call is unavailable."""
    from redis.backoff import NoBackoff as NoWait
    from redis.retry import Retry as SyncRetry

    client = redis.Redis(port=1, socket_connect_timeout=1, retry=SyncRetry(NoWait(), 0))
    return redis_rl.Limiter(client, **options)


def test_the_limiters_calls_are_insured_all_or_nothing(caplog):
    caplog.set_level(logging.WARNING, logger="redis_rl.insurance")
    limiter = closed_limiter(insurance=redis_rl.Insurance(nodes=3))
    # GCRA 10/s on 3 processes: 3 a second; a window 2 an hour, 1 on 3 processes (at least 1).
    got = [limiter.gcra("k", 10, "1s", burst=20) for _ in range(4)]
    assert [d.allowed for d in got] == [True, True, True, False]
    assert all(d.insured and d.limit == 3 for d in got)
    assert got[-1].remaining == 0 and 0 < got[-1].retry_after_ms <= 1000
    # All or nothing: a denied layer spends nothing on the others.
    wide, narrow = policy.fixed(30, "1h"), policy.fixed(2, "1h")
    first = limiter.all([("a", wide), ("b", narrow)])
    assert first.allowed and first.insured and first.index == 1 and first.binding.remaining == 0
    denied = limiter.all([("a", wide), ("b", narrow)])
    assert not denied.allowed and denied.index == 1 and denied.layers[0] is None
    assert limiter.fixed("a", 30, "1h").remaining == 8  # 10 - 1 (first) - 1 (this): 8 left
    # A cost no window holds is never admitted: no Retry-After.
    assert limiter.decide("big", narrow, cost=2).retry_after_ms == -1
    # A server policy's name has no parameters here: not insured, unavailable as before.
    with pytest.raises(redis_rl.ServerUnavailableError):
        limiter.limit("k", "free")
    with pytest.raises(redis_rl.ServerUnavailableError):
        limiter.all([("a", wide), ("n", "free")])
    # A refund gives nothing back here (nothing was spent on the server): it is unavailable.
    with pytest.raises(redis_rl.ServerUnavailableError):
        limiter.refund("b", narrow, 1)
    assert not limiter.all([("a", wide), ("b", narrow)]).allowed
    # A peek spends nothing: not insured.
    with pytest.raises(redis_rl.ServerUnavailableError):
        limiter.peek("k", policy.gcra(10, "1s"))
    snap = limiter.metrics.snapshot()
    assert snap["default"]["insured_within_limit"] == 5
    assert snap["default"]["insured_over_limit"] == 4
    assert snap["free"]["unavailable"] == 1
    assert len(switches(caplog)) == 1  # on, once


def test_an_answer_to_a_call_sent_before_the_switch_is_not_the_server_back(fresh_server, caplog):
    """A call sent while the server worked, answered after another call found it gone (read
    late), does not switch the insurance off: only an answer to a call sent while on does, so
    each switch is logged once however the answers interleave."""
    server = fresh_server("redis", True)
    caplog.set_level(logging.WARNING, logger="redis_rl.insurance")
    insurance = redis_rl.Insurance(nodes=2)
    live = redis_rl.Limiter(redis.Redis(port=server.port), insurance=insurance)
    closed = closed_limiter(insurance=insurance)  # the same insurance, its server out of reach
    admin = redis.Redis(port=server.port)
    assert not live.fixed("k", 10, "1h").insured
    # A call sent to the live server, held there (its writes paused) until after the switch on.
    admin.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")
    late: list[redis_rl.Decision] = []
    sent = threading.Thread(target=lambda: late.append(live.fixed("k", 10, "1h")))
    sent.start()
    try:
        deadline = time.monotonic() + 30
        while admin.info("clients")["blocked_clients"] < 1:
            assert time.monotonic() < deadline, "the call was not held"
            time.sleep(0.01)
        assert closed.fixed("k", 10, "1h").insured and insurance.on
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        sent.join()
    assert late[0].allowed and not late[0].insured and late[0].remaining == 8
    assert insurance.on  # an answer to a call sent before the switch
    assert closed.fixed("k", 10, "1h").insured
    assert len(switches(caplog)) == 1
    # A call sent while on, answered: the server is back, logged once.
    assert live.fixed("k", 10, "1h").remaining == 7
    assert not insurance.on
    assert [m.split(":")[1].strip() for m in switches(caplog)] == [
        "Redis unavailable, insurance on", "Redis answers again, insurance off"]


def test_the_windows_are_bounded_and_the_option_checked():
    insurance = redis_rl.Insurance(nodes=2, max_windows=100)
    limiter = closed_limiter(insurance=insurance)
    for i in range(1000):
        assert limiter.fixed(f"k{i}", 10, "1h").insured
    assert len(insurance) == 100 and insurance.high_water == 100
    for bad in (0, -1, 1_000_001, True, 1.5, "4"):
        with pytest.raises(redis_rl.ConfigurationError):
            redis_rl.Insurance(nodes=bad)
    with pytest.raises(TypeError):
        redis_rl.Limiter(redis.Redis(), insurance={"nodes": 4})
    assert redis_rl.Limiter(redis.Redis()).insurance is None  # off by default
