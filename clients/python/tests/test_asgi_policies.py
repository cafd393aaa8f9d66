"""The ASGI middleware with layers naming policies on the server, and its shadow switch: the
example service (examples/fastapi_policies.py) and small apps inside FastAPI, served by
uvicorn and driven over HTTP, on Redis 7.0 and Valkey 9.1 with the module (the policies made
with RL.POLICY SET) and on both without it (the library written with them by
scripts/library-policies.py): the same statuses, headers and warnings on each."""

from __future__ import annotations

import contextlib
import logging

import httpx
import pytest
import redis
import redis.asyncio
from apps import app_with, example, served_asgi

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip, header


@contextlib.contextmanager
def service(server, monkeypatch, shadow: bool):
    """examples/fastapi_policies.py against `server` (RL_SHADOW=1 with `shadow`), served: a
    function making one request to /hello from an address, with an API key."""
    monkeypatch.setenv("REDIS_URL", server.url)
    monkeypatch.setenv("RL_SHADOW", "1" if shadow else "0")
    with served_asgi(example("fastapi_policies").app) as base:
        def get(key: str | None = "free-key", address: str = "203.0.113.7") -> httpx.Response:
            headers = {"x-forwarded-for": address, **({"x-api-key": key} if key else {})}
            return httpx.get(base + "/hello", headers=headers, timeout=10)

        yield get


@pytest.fixture
def plans(define):
    """The example's policies, small: 5 an hour per address, plans of 3 and 100 an hour."""
    define("FIXED 5 1h", name="per-ip")
    define("TOKENBUCKET 100 100 1h", name="plan-pro")
    return lambda definition: define(definition, name="plan-free")


def would_deny(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "redis_rl.asgi"]


def remaining(server, key: str, name: str) -> int:
    limiter = redis_rl.Limiter(redis.Redis(port=server.port))
    return limiter.peek(key, name, cost=0).remaining


def test_layers_by_name_decide_and_answer_429(policy_server, plans, monkeypatch, caplog):
    plans("TOKENBUCKET 3 3 1h")
    with service(policy_server, monkeypatch, shadow=False) as get:
        got = [get() for _ in range(4)]
        anonymous = get(key=None)  # no API key: the address layer alone
        pro = get("pro-key", "198.51.100.1")
    assert [r.status_code for r in got] == [200, 200, 200, 429]
    first, denied = got[0], got[3]
    # The plan binds (2 of 3 left against 4 of 5): named after its policy, without `w`.
    assert first.headers["RateLimit-Policy"] == '"plan-free";q=3'
    assert first.headers["RateLimit"].startswith('"plan-free";r=2;t=')
    assert first.headers["X-RateLimit-Limit"] == "3" and "Retry-After" not in first.headers
    assert denied.json() == {"error": "rate limited", "layer": "plan"}
    assert denied.headers["X-RateLimit-Remaining"] == "0"
    assert 1 <= int(denied.headers["Retry-After"]) <= 1200
    assert anonymous.status_code == 200 and anonymous.headers["RateLimit-Policy"] == (
        '"per-ip";q=5')
    assert anonymous.headers["X-RateLimit-Remaining"] == "1"  # the 429 spent nothing here
    assert pro.status_code == 200 and pro.headers["X-RateLimit-Remaining"] == "4"
    assert sorted(k.decode() for k in redis.Redis(port=policy_server.port).keys("*")) == [
        "rl:ip:198.51.100.1", "rl:ip:203.0.113.7", "rl:plan:free-key", "rl:plan:pro-key"]
    assert would_deny(caplog) == []  # a request answered 429 is refused, not logged


def test_shadow_lets_denials_through_with_headers_and_logs_each(policy_server, plans,
                                                                monkeypatch, caplog):
    plans("TOKENBUCKET 3 3 1h")
    caplog.set_level(logging.WARNING, logger="redis_rl.asgi")
    with service(policy_server, monkeypatch, shadow=True) as get:
        got = [get() for _ in range(5)]
    assert [r.status_code for r in got] == [200] * 5
    assert [r.json() for r in got] == [{"message": "hello"}] * 5  # the app answered each
    assert [r.headers["X-RateLimit-Remaining"] for r in got] == ["2", "1", "0", "0", "0"]
    assert all("Retry-After" not in r.headers for r in got)
    records = would_deny(caplog)
    assert len(records) == 2  # one warning per would-be 429
    for record in records:
        assert record.levelno == logging.WARNING
        assert (record.rl_layer, record.rl_key, record.rl_policy, record.rl_shadow) == (
            "plan", "rl:plan:free-key", "plan-free", "shadow=True")
        assert 0 < record.rl_retry_after_ms <= 1_200_000
        assert "GET /hello" in record.getMessage() and "layer plan" in record.getMessage()
    # Decided as usual, all or nothing: the let-through denials spent nothing anywhere.
    assert remaining(policy_server, "rl:ip:203.0.113.7", "per-ip") == 2
    assert remaining(policy_server, "rl:plan:free-key", "plan-free") == 0


def test_a_shadow_policys_denial_is_logged_and_denies_nothing(policy_server, plans,
                                                              monkeypatch, caplog):
    plans("TOKENBUCKET 2 2 1h SHADOW")
    caplog.set_level(logging.WARNING, logger="redis_rl.asgi")
    with service(policy_server, monkeypatch, shadow=False) as get:
        got = [get() for _ in range(4)]
    assert [r.status_code for r in got] == [200] * 4
    assert [r.headers["X-RateLimit-Remaining"] for r in got] == ["1", "0", "0", "0"]
    records = would_deny(caplog)
    assert [r.rl_shadow for r in records] == ["SHADOW policy 'plan-free'"] * 2
    assert all(r.rl_layer == "plan" and r.rl_retry_after_ms > 0 for r in records)
    # The shadow layer denied nothing: the address layer committed every request.
    assert remaining(policy_server, "rl:ip:203.0.113.7", "per-ip") == 1


def test_a_named_policy_is_checked_when_the_app_starts():
    limiter = redis_rl.AsyncLimiter(redis.asyncio.Redis())
    with pytest.raises(redis_rl.ConfigurationError, match="a policy name is 1 to 64") as e:
        RateLimitMiddleware(None, limiter, [Layer("ip", client_ip, "per ip")])
    assert isinstance(e.value, ValueError) and not isinstance(e.value, TypeError)
    with pytest.raises(TypeError, match="a policy is a redis_rl.Policy or a policy's name"):
        RateLimitMiddleware(None, limiter, [Layer("ip", client_ip, 100)])  # type: ignore
    for wrong in ["yes", 1, None]:
        with pytest.raises(TypeError, match="shadow is a bool"):
            RateLimitMiddleware(None, limiter, [Layer("ip", client_ip, "per-ip")],
                                shadow=wrong)  # type: ignore[arg-type]
    RateLimitMiddleware(None, limiter, [Layer("ip", client_ip, "per-ip"),
                                        Layer("key", header("x-api-key"), lambda s: "x y")])


@pytest.mark.parametrize("shadow", [False, True], ids=["enforced", "shadow"])
def test_a_name_the_server_refuses_fails_the_request_never_open(policy_server, shadow):
    names = {"gold": "gold", "bad": "bad name"}  # unknown to the server; refused unsent
    layers = [Layer("ip", client_ip, policy.fixed(100, "1h")),
              Layer("plan", header("x-plan"), lambda scope: names[header("x-plan")(scope)])]
    client = redis.asyncio.Redis.from_url(policy_server.url)
    with served_asgi(app_with(client, layers, shadow=shadow)) as base:
        got = [httpx.get(base + "/", headers={"x-plan": plan}, timeout=10)
               for plan in ["gold", "bad"]]
    assert [r.status_code for r in got] == [500, 500]
    assert all("X-RateLimit-Limit" not in r.headers for r in got)
    assert redis.Redis(port=policy_server.port).dbsize() == 0  # the RL.ALL failed whole
