"""Penalties and bans through the package: a policy's `penalty=` / `escalate=` sent as `PENALTY d
[ESCALATE max]` in single calls and `RL.ALL` clauses (never in `RL.PEEK`), a named policy's
penalty used by its name, `ban(key, ms)` and its lifting, and the login example
(examples/login.py) served over HTTP: failures reach the penalty, whose 429 carries the
headers, and a second penalty escalates. On Redis 7.0 and Valkey 9.1, with the module and
without it (the Functions library).

A penalty's length is read from the key, as the server stores it (facts/rl.toml's `penalty`:
`<tag>:<end>:<len>:<keep>` in milliseconds): its replies give only the later of the penalty's
end and the limiter's own wait."""

from __future__ import annotations

import asyncio
import contextlib
import time

import httpx
import pytest
import redis
import redis.asyncio
from apps import app_with, example, served_asgi, served_flask

import redis_rl
from redis_rl import commands, policy
from redis_rl._facts import PENALTY_LOG_SCORE, PENALTY_SEPARATOR, PENALTY_TAG
from redis_rl.asgi import Layer, header

RIGHT = "correct horse battery staple"


def penalty_of(client: redis.Redis, key: str) -> tuple[int, int, int] | None:
    """The key's penalty as stored: (end, length, keep) in ms, or None."""
    if client.type(key) == b"zset":
        members = client.zrangebyscore(key, PENALTY_LOG_SCORE, PENALTY_LOG_SCORE)
        text = members[0].decode() if members else ""
    else:
        text = (client.get(key) or b"").decode().rsplit(PENALTY_SEPARATOR, 1)[-1]
    tag, _, fields = text.partition(":")
    if tag != PENALTY_TAG:
        return None
    end, length, keep = (int(f) for f in fields.split(":"))
    return end, length, keep


def server_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return seconds * 1000 + micros // 1000


def wait_past(client: redis.Redis, end_ms: int) -> None:
    """Until the server's clock is past `end_ms` (a penalty's end)."""
    deadline = time.monotonic() + 30
    while server_ms(client) <= end_ms:
        assert time.monotonic() < deadline, "the server's clock did not pass the penalty's end"
        time.sleep(0.02)


def as_list(d: redis_rl.Decision) -> list[int]:
    return [int(d.allowed), d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


@pytest.fixture
def limiter(client):
    return redis_rl.Limiter(client, denial_cache=False)  # the server's clock is moved


# --- the commands sent --------------------------------------------------------------------------


def test_a_penalty_follows_the_parameters_in_calls_and_clauses_but_not_in_peek():
    p = policy.gcra(10, "1s", burst=5, penalty="15m", escalate="24h")
    assert p.penalty == ("PENALTY", "15m", "ESCALATE", "24h")
    assert commands.decide("k", p, cost=2).module == (
        "RL.GCRA", "k", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE", "24h", "COST", "2")
    assert commands.decide("k", p).library() == (
        "FCALL", "rl_gcra", 1, "k", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE", "24h")
    assert commands.all_of([("a", p), ("b", policy.fixed(5, "1m"), 3)], False).module == (
        "RL.ALL", 2, "a", "b", "GCRA", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE",
        "24h", "FIXED", "5", "1m", "COST", "3")
    assert commands.peek("k", p).module == ("RL.PEEK", "GCRA", "k", "10", "1s", "BURST", "5")
    assert commands.decide("k", p, refund=1).module[-2:] == ("REFUND", "1")
    assert policy.fixed(5, "1m", penalty=90).penalty == ("PENALTY", "90")
    assert p.named("login").penalty == p.penalty  # a name keeps the penalty
    assert commands.ban("k", 0).module == ("RL.BAN", "k", "0")
    assert commands.ban("k", 5).library() == ("FCALL", "rl_ban", 1, "k", "5")


def test_escalate_needs_a_penalty_and_is_refused_before_sending(limiter, client):
    for make in (lambda: policy.fixed(5, "1m", escalate="1h"),
                 lambda: limiter.sliding("k", 5, "1m", escalate="1h")):
        with pytest.raises(redis_rl.ConfigurationError, match="needs a penalty"):
            make()
    with pytest.raises(TypeError):
        policy.fixed(5, "1m", penalty=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.ban("k", True)  # type: ignore[arg-type]
    assert client.dbsize() == 0


def test_the_servers_refusals_are_configuration_errors(limiter, client, expected_backend):
    with pytest.raises(redis_rl.ConfigurationError, match="ESCALATE max must be at least"):
        limiter.fixed("k", 5, "1m", penalty="1h", escalate="15m")
    with pytest.raises(redis_rl.ConfigurationError, match="PENALTY must be a duration"):
        limiter.fixed("k", 5, "1m", penalty="0s")
    with pytest.raises(redis_rl.ConfigurationError, match="ms must be an integer from 0 to"):
        limiter.ban("k", -1)
    assert limiter.backend == expected_backend and client.dbsize() == 0


# --- the limiters ---------------------------------------------------------------------------------


def test_a_denial_starts_the_penalty_which_denies_every_call_till_its_end(
        limiter, client, expected_backend, one_window):
    f = policy.fixed(2, "1m", penalty="1h")
    assert [limiter.decide("k", f).allowed for _ in range(2)] == [True, True]
    d = limiter.decide("k", f)  # the denial that starts it is already the penalty's
    assert as_list(d)[:3] == [0, 2, 0] and 3_600_000 <= d.retry_after_ms <= 3_600_001
    assert d.backend == expected_backend and d.retry_after == 3_600 + (d.retry_after_ms % 1000 > 0)
    assert d.headers()["Retry-After"] == str(d.retry_after)
    end, length, keep = penalty_of(client, "k")
    assert length == 3_600_000 and keep == end
    # Every call is denied, PEEK and RL.PEEK and a call without PENALTY included, writing nothing.
    stored = client.get("k")
    for call in (lambda: limiter.decide("k", f), lambda: limiter.fixed("k", 2, "1m"),
                 lambda: limiter.decide("k", f, peek=True), lambda: limiter.peek("k", f),
                 lambda: limiter.fixed("k", 100, "1m")):
        d = call()
        assert not d.allowed and d.remaining == 0 and d.retry_after_ms > 3_500_000, as_list(d)
    assert client.get("k") == stored
    # COST 0 reports it; a refund leaves it.
    d = limiter.decide("k", f, cost=0)
    assert d.allowed and d.remaining == 0 and d.retry_after_ms > 3_500_000
    assert limiter.refund("k", f, 2).allowed
    assert not limiter.decide("k", f).allowed and penalty_of(client, "k")[1] == 3_600_000


@pytest.mark.parametrize("spelt", [
    policy.gcra(1, "1h", penalty="1h"),
    policy.token_bucket(1, 1, "1h", penalty="1h"),
    policy.leaky(1, 1, "1h", penalty="1h"),
    policy.sliding(1, "1h", penalty="1h"),
    policy.sliding_log(1, "1h", penalty="1h"),
    policy.fixed(1, "1h", penalty="1h"),
], ids=lambda p: p.algo)
def test_each_limiter_takes_a_penalty(limiter, client, spelt):
    decisions = [limiter.decide("k", spelt) for _ in range(2)]
    assert [d.allowed for d in decisions] == [True, False]
    assert penalty_of(client, "k")[1] == 3_600_000
    assert decisions[-1].retry_after_ms >= 3_600_000 and not limiter.peek("k", spelt).allowed


def test_a_penalty_escalates_from_the_previous_one(limiter, client, one_window):
    f = policy.fixed(1, "1m", penalty="200ms", escalate="1m")
    assert limiter.decide("k", f).allowed
    lengths = []
    for _ in range(3):
        assert not limiter.decide("k", f).allowed  # the window is spent: a penalty starts
        end, length, _ = penalty_of(client, "k")
        lengths.append(length)
        wait_past(client, end)
    assert lengths == [200, 400, 800]


def test_ban_and_lift(limiter, client, expected_backend):
    f = policy.sliding(100, "1m")
    assert limiter.ban("banned", 3_600_000) is False  # no key before: it holds the ban alone
    d = limiter.decide("banned", f)
    assert not d.allowed and d.remaining == 0 and 3_599_000 < d.retry_after_ms <= 3_600_001
    assert d.backend == expected_backend
    assert limiter.ban("banned", 0) is True and client.exists("banned") == 0
    assert limiter.decide("banned", f).allowed
    # On a key holding a limiter: its state stays, and lifting leaves it.
    assert limiter.ban("banned", 60_000) is True
    assert not limiter.decide("banned", f).allowed and not limiter.peek("banned", f).allowed
    assert limiter.ban("banned", 0) is True
    d = limiter.decide("banned", f)
    assert d.allowed and d.remaining == 98


def test_ban_refuses_a_key_no_limiter_wrote(limiter, client):
    client.set("name", "Ada")
    client.rpush("list", "x")
    with pytest.raises(redis_rl.ForeignKeyError) as err:
        limiter.ban("name", 1_000)
    assert err.value.holds == "value" and client.get("name") == b"Ada"
    with pytest.raises(redis_rl.ForeignKeyError) as err:
        limiter.ban("list", 1_000)
    assert err.value.holds == "type"


def test_the_asyncio_limiter_bans_and_takes_penalties(server, expected_backend):
    async def main() -> tuple[bool, bool, redis_rl.Decision, bool]:
        c = redis.asyncio.Redis.from_url(server.url)
        try:
            limiter = redis_rl.AsyncLimiter(c)
            first = await limiter.ban("a", 60_000)
            again = await limiter.ban("a", 60_000)
            await limiter.fixed("b", 1, "1h", penalty="1h", escalate="2h")
            d = await limiter.fixed("b", 1, "1h", penalty="1h", escalate="2h")
            return first, again, d, await limiter.ban("b", 0)
        finally:
            await c.aclose()

    first, again, d, lifted = asyncio.run(main())
    assert (first, again, lifted) == (False, True, True)
    assert not d.allowed and d.retry_after_ms >= 3_600_000 and d.backend == expected_backend


# --- RL.ALL ---------------------------------------------------------------------------------------


def test_in_all_only_the_denying_layer_with_a_penalty_starts_one(limiter, client, one_window):
    ip, account = policy.fixed(100, "1m", name="ip"), policy.fixed(2, "1m", penalty="1h",
                                                                    name="account")
    layers = [("{u}:ip", ip), ("{u}:account", account)]
    assert [limiter.all(layers).allowed for _ in range(2)] == [True, True]
    d = limiter.all(layers)
    assert not d.allowed and d.index == 1 and d.binding.policy.name == "account"
    assert d.binding.retry_after_ms >= 3_600_000
    assert penalty_of(client, "{u}:account")[1] == 3_600_000
    assert penalty_of(client, "{u}:ip") is None  # it would admit: no penalty, nothing spent
    assert limiter.peek("{u}:ip", ip, cost=0).remaining == 98
    # The penalized layer denies every call, whatever the other layer says.
    assert not limiter.all(layers).allowed and limiter.peek("{u}:ip", ip, cost=0).remaining == 98
    assert limiter.all([("{u}:ip", ip)]).allowed


def test_the_middleware_answers_a_penalized_layer_429_till_the_penalty_ends(server, one_window):
    c = redis.asyncio.Redis.from_url(server.url)
    layers = [Layer("ip", lambda scope: "203.0.113.7", policy.fixed(100, "1m")),
              Layer("key", header("x-api-key"), policy.fixed(2, "1m", penalty="1h"))]
    with served_asgi(app_with(c, layers)) as base:
        def get(key: str) -> httpx.Response:
            return httpx.get(f"{base}/", headers={"X-API-Key": key}, timeout=10)

        assert [get("acme").status_code for _ in range(2)] == [200, 200]
        for _ in range(2):  # the denial that starts it, then one during it
            r = get("acme")
            assert r.status_code == 429 and r.json() == {"error": "rate limited", "layer": "key"}
            assert r.headers["X-RateLimit-Remaining"] == "0"
            assert 3_599 <= int(r.headers["Retry-After"]) <= 3_601, r.headers
        assert get("globex").status_code == 200  # another key: no penalty
    sync = redis.Redis.from_url(server.url)
    assert penalty_of(sync, "rl:key:acme")[1] == 3_600_000
    ip = redis_rl.Limiter(sync).peek("rl:ip:203.0.113.7", policy.fixed(100, "1m"), cost=0)
    assert ip.remaining == 97  # the denials spent nothing from the address's layer
    sync.close()


# --- named policies -------------------------------------------------------------------------------


def test_a_named_policys_penalty_is_used_by_its_name(policy_server, define):
    c = redis.Redis(port=policy_server.port)
    limiter = redis_rl.Limiter(c)
    name = define("FIXED 2 1h PENALTY 1h ESCALATE 4h")
    assert [limiter.limit("n", name).allowed for _ in range(2)] == [True, True]
    d = limiter.limit("n", name)
    assert not d.allowed and d.retry_after_ms >= 3_600_000 and d.policy == name
    assert not d.shadowed
    assert penalty_of(c, "n")[1] == 3_600_000
    assert not limiter.peek("n", name).allowed and not limiter.limit("n", name).allowed
    # In RL.ALL, by name beside a spelt-out layer.
    layers = [("{m}:a", name), ("{m}:b", policy.fixed(5, "1h"))]
    assert [limiter.all(layers).allowed for _ in range(2)] == [True, True]
    d = limiter.all(layers)
    assert not d.allowed and d.index == 0 and penalty_of(c, "{m}:a")[1] == 3_600_000
    c.close()


def test_a_shadow_policys_penalty_is_answered_as_shadowed_denials(policy_server, define):
    c = redis.Redis(port=policy_server.port)
    limiter = redis_rl.Limiter(c)
    name = define("FIXED 1 1h PENALTY 1h SHADOW")
    assert not limiter.limit("s", name).shadowed
    for _ in range(2):  # the penalty's start, then a call during it
        d = limiter.limit("s", name)
        seconds, micros = c.time()
        after = seconds * 1000 + micros // 1000
        # The wait runs to the penalty's end (however long the calls took under load).
        assert d.allowed and d.shadowed and d.retry_after_ms >= penalty_of(c, "s")[0] - after
    assert penalty_of(c, "s")[1] == 3_600_000  # stored as if enforced
    c.close()


# --- the login example over HTTP ------------------------------------------------------------------


@pytest.fixture
def login_app(client):
    """`login_app(failures)`: examples/login.py's app with `failures`, served on 127.0.0.1: a
    function posting (account, password) to its /login."""
    with contextlib.ExitStack() as apps:

        def serve(failures: redis_rl.Policy):
            app = example("login").create_app(redis_rl.Limiter(client), failures)
            base = apps.enter_context(served_flask(app))
            return lambda account, password: httpx.post(
                f"{base}/login", data={"account": account, "password": password}, timeout=10)

        yield serve


def test_a_login_flow_reaches_the_penalty_and_escalates(login_app, client, one_window):
    login = login_app(policy.fixed(3, "1h", penalty="1s", escalate="1m", name="login"))
    assert login("alice", RIGHT).status_code == 200  # given back: only failures count
    assert [login("alice", "guess").status_code for _ in range(3)] == [401] * 3
    r = login("alice", RIGHT)  # the 4th attempt: denied, and the penalty starts
    assert r.status_code == 429 and r.json() == {"error": "too many failed logins"}
    assert r.headers["X-RateLimit-Remaining"] == "0" and int(r.headers["Retry-After"]) >= 1
    end, length, _ = penalty_of(client, "login:alice")
    assert length == 1000  # a second: the next attempt comes well within it, however slow
    assert login("alice", RIGHT).status_code == 429  # during it: no new penalty
    assert penalty_of(client, "login:alice") == (end, 1000, end + 60_000)
    assert login("bob", "guess").status_code == 401  # another account: none
    wait_past(client, end)
    # The second round: the failures still count in this window, so the next attempt is denied
    # and starts a penalty twice as long, and the one after that twice as long again.
    for want in (2000, 4000):
        r = login("alice", "guess")
        assert r.status_code == 429 and "Retry-After" in r.headers
        end, length, _ = penalty_of(client, "login:alice")
        assert length == want
        wait_past(client, end)


def test_the_429_of_a_login_penalty_says_when_it_ends(login_app, client, one_window):
    login = login_app(policy.fixed(3, "1m", penalty="2h", name="login"))
    assert [login("alice", "guess").status_code for _ in range(3)] == [401] * 3
    for _ in range(2):  # the attempt that starts it, then the right password during it
        r = login("alice", RIGHT)
        assert r.status_code == 429
        assert r.headers["Retry-After"] in ("7200", "7201"), r.headers
        assert r.headers["X-RateLimit-Reset"] == r.headers["Retry-After"]
        assert r.headers["X-RateLimit-Limit"] == "3" and r.headers["X-RateLimit-Remaining"] == "0"


def test_a_ban_over_http_then_lifted(login_app, limiter, client):
    login = login_app(policy.fixed(5, "15m", penalty="15m", escalate="24h", name="login"))
    assert limiter.ban("login:alice", 3_600_000) is False
    r = login("alice", RIGHT)
    assert r.status_code == 429 and r.headers["Retry-After"] in ("3600", "3601"), r.headers
    assert limiter.ban("login:alice", 0) is True
    assert login("alice", RIGHT).status_code == 200
    assert login("alice", "guess").status_code == 401
    assert limiter.ban("login:alice", 60_000) is True  # a key with its count: it stays
    assert login("alice", RIGHT).status_code == 429
    assert limiter.ban("login:alice", 0) is True and client.exists("login:alice") == 1
    assert login("alice", RIGHT).status_code == 200
