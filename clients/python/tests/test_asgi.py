"""The ASGI middleware inside FastAPI, served by uvicorn and driven over HTTP: the example
service (examples/fastapi_app.py) on every backend."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis
import redis.asyncio
from conftest import BACKENDS, backend_id, free_port

import redis_rl
from redis_rl import policy

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class Service:
    """examples/fastapi_app.py under uvicorn, on a free port, against `redis_url`."""

    def __init__(self, redis_url: str) -> None:
        self.port, self.redis_url = free_port(), redis_url
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "fastapi_app:app", "--port", str(self.port),
             "--log-level", "warning"],
            cwd=EXAMPLES, env=dict(os.environ, REDIS_URL=redis_url),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited:\n{self.proc.stdout.read()}")
            try:
                httpx.get(f"{self.base}/docs", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("uvicorn did not start")

    def get(self, path: str, key: str | None = "free-key") -> httpx.Response:
        headers = {"X-API-Key": key} if key else {}
        return httpx.get(f"{self.base}{path}", headers=headers, timeout=10)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module", params=BACKENDS, ids=backend_id)
def running(request, servers):
    """One service per backend for the whole file."""
    s = Service(servers(*request.param).url)
    yield s
    s.close()


@pytest.fixture
def service(running):
    """The service on an emptied server: no limiter state, no library."""
    c = redis.Redis.from_url(running.redis_url)
    c.flushall()
    c.function_flush()
    c.close()
    return running


def test_every_answer_carries_the_binding_layers_headers(service):
    r = service.get("/hello")
    assert r.status_code == 200 and r.json() == {"message": "hello"}
    # The IP layer binds (19 of 20 left against 59 of 60 for the key).
    assert r.headers["X-RateLimit-Limit"] == "20"
    assert r.headers["X-RateLimit-Remaining"] == "19"
    assert r.headers["RateLimit-Policy"] == '"ip";q=100;w=1'
    assert r.headers["RateLimit"].startswith('"ip";r=19;t=')
    assert "Retry-After" not in r.headers


def rl_calls(redis_url: str) -> int:
    """The rate-limit calls the server has run (the module's commands, or FCALL)."""
    c = redis.Redis.from_url(redis_url)
    stats = c.info("commandstats")
    c.close()
    return sum(v["calls"] for k, v in stats.items()
               if k.startswith(("cmdstat_rl.", "cmdstat_fcall")))


def counters(service: Service) -> dict[tuple[str, str], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = service.get("/metrics").text
    family = next(f for f in text_string_to_metric_families(text) if f.name == "rl_decisions")
    return {(s.labels["layer"], s.labels["result"]): s.value for s in family.samples}


def test_a_denied_client_is_answered_from_the_cache_and_counted(service, one_window):
    """The example's denial cache: once the server denies /search (10 a minute for the key),
    the next denial is the same answer without a call; /metrics counts both. /search has no
    route (404), but the layers decide it first: no other test uses it."""
    before = counters(service)
    assert [service.get("/search").status_code for _ in range(10)] == [404] * 10
    asked = time.monotonic()
    first = service.get("/search")
    calls = rl_calls(service.redis_url)
    second = service.get("/search")
    took = math.ceil(time.monotonic() - asked)  # seconds the countdown may have run
    assert rl_calls(service.redis_url) == calls
    assert first.status_code == second.status_code == 429
    assert first.json() == second.json() == {"error": "rate limited", "layer": "endpoint"}
    for h in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "RateLimit-Policy"):
        assert first.headers[h] == second.headers[h]
    assert 0 <= int(first.headers["Retry-After"]) - int(second.headers["Retry-After"]) <= 1 + took
    after = counters(service)

    def grew(layer, result):
        return after.get((layer, result), 0) - before.get((layer, result), 0)

    assert grew("endpoint", "over_limit") == 1
    assert grew("endpoint", "over_limit_with_local_cache") == 1
    # The 10 admitted (each under its binding layer) and the /metrics call before `after`.
    assert sum(grew(layer, "within_limit") for layer in ("ip", "plan", "endpoint")) == 11


def test_an_endpoint_layer_denies_with_429_and_spends_nothing_elsewhere(service, one_window):
    started = time.monotonic()
    for _ in range(5):
        assert service.get("/export").status_code == 200
    r = service.get("/export")
    assert r.status_code == 429
    assert r.json() == {"error": "rate limited", "layer": "endpoint"}
    assert r.headers["X-RateLimit-Remaining"] == "0"
    assert r.headers["RateLimit-Policy"] == '"endpoint";q=5;w=60'
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    # A denied /export takes nothing from the plan (which only refills meanwhile).
    limiter = redis_rl.Limiter(redis.Redis.from_url(service.redis_url))
    plan = policy.token_bucket(60, 60, "1m")
    before = limiter.peek("rl:plan:free-key", plan).remaining
    # The five admitted calls were spent; the plan refills one a second meanwhile.
    assert before <= 55 + math.ceil(time.monotonic() - started)
    assert service.get("/export").status_code == 429
    assert limiter.peek("rl:plan:free-key", plan).remaining >= before


def test_a_request_no_layer_names_is_limited_by_the_others(service):
    r = service.get("/hello", key=None)  # no API key: the IP layer alone
    assert r.status_code == 200 and r.headers["RateLimit-Policy"] == '"ip";q=100;w=1'


def test_many_clients_at_once_are_admitted_to_the_limit_and_no_further(service, one_window):
    with ThreadPoolExecutor(max_workers=16) as pool:
        codes = list(pool.map(lambda _: service.get("/export", key="pro-key").status_code,
                              range(40)))
    assert codes.count(200) == 5 and codes.count(429) == 35


def test_a_wrong_configuration_is_refused_at_start_up():
    from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip

    limiter = redis_rl.AsyncLimiter(redis.asyncio.Redis())
    layer = Layer("ip", client_ip, policy.gcra(1, "1s"))
    with pytest.raises(ValueError, match="at least one"):
        RateLimitMiddleware(None, limiter, [])
    with pytest.raises(ValueError, match="distinct"):
        RateLimitMiddleware(None, limiter, [layer, layer])
    with pytest.raises(TypeError, match="AsyncLimiter"):
        RateLimitMiddleware(None, redis_rl.Limiter(redis.Redis()), [layer])


def test_an_unreachable_server_fails_the_request_not_open(servers):
    s = Service(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    try:
        r = s.get("/hello")
        assert r.status_code == 503 and r.json() == {"error": "rate limiter unavailable"}
        assert "X-RateLimit-Limit" not in r.headers
    finally:
        s.close()


def test_the_service_follows_a_restart_and_a_failover_of_its_server(fresh_server):
    backing = fresh_server("redis", True, ("--appendonly", "yes", "--appendfsync", "always"))
    s = Service(backing.url)
    if time.time() % 60 > 50:  # the calls (after the service's start) share one window
        time.sleep(60.5 - time.time() % 60)
    try:
        assert [s.get("/export").status_code for _ in range(3)] == [200] * 3
        backing.restart()  # the same server back, its AOF replayed: the window's count kept
        r = s.get("/export")
        if r.status_code != 200:
            s.close()
            raise AssertionError(s.proc.stdout.read())
        assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == "1"
        # A failover to a server without the module (an empty one): the library answers.
        backing.with_module = False
        backing.extra = ()
        backing.restart()
        r = s.get("/export")
        assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == "4"
    finally:
        s.close()


def test_unknown_api_keys_name_no_key_but_the_ips(service):
    # The IP layer's GCRA key lives a few milliseconds, so the keys written are read from the
    # keyspace events of the calls rather than from KEYS afterwards.
    c = redis.Redis.from_url(service.redis_url)
    c.config_set("notify-keyspace-events", "KA")
    events = c.pubsub()
    events.psubscribe("__keyspace@*__:*")
    try:
        events.get_message(timeout=1)  # the psubscribe confirmation
        for key in ["constructor", "x" * 4000, "FREE-KEY"]:
            assert service.get("/export", key=key).status_code == 200
        written = set()
        while (m := events.get_message(timeout=0.5)) is not None:
            written.add(m["channel"].decode().split(":", 1)[1])
        assert written == {"rl:ip:127.0.0.1"}
    finally:
        events.close()
        c.config_set("notify-keyspace-events", "")
        c.close()
