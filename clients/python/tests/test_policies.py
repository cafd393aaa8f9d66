"""Named policies (RL.POLICY on the server) through the limiters: a policy's name wherever a
Policy goes decides exactly as the policy's own command (RL.LIMIT, RL.PEEK POLICY, POLICY
clauses in RL.ALL), a SHADOW policy's denial is `shadowed`, names are checked before
sending, and a library without named policies is a LibraryUnavailableError. On Redis 7.0 and
Valkey 9.1 with the module; the library's refusal on both without it."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio

import redis_rl
from redis_rl import policy
from redis_rl._facts import MAX_POLICY_NAME


def as_list(d: redis_rl.Decision) -> list[int]:
    return [int(d.allowed), d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


#: Each algorithm's policy, as RL.POLICY SET takes it and as a Policy.
ALGORITHMS = [
    ("GCRA 10 1s BURST 5", policy.gcra(10, "1s", burst=5)),
    ("TOKENBUCKET 5 1 1s", policy.token_bucket(5, 1, "1s")),
    ("LEAKY 5 1 1s", policy.leaky(5, 1, "1s")),
    ("SLIDING 5 1m", policy.sliding(5, "1m")),
    ("SLIDINGLOG 5 1m", policy.sliding_log(5, "1m")),
    ("FIXED 5 1h", policy.fixed(5, "1h")),
]


@pytest.fixture
def limiter(module_server):
    c = redis.Redis(port=module_server.port)
    yield redis_rl.Limiter(c)
    c.close()


@pytest.mark.parametrize("definition,spelt", ALGORITHMS, ids=[a[0].split()[0] for a in ALGORITHMS])
def test_a_name_decides_as_the_policys_own_command(limiter, define, definition, spelt):
    name = define(definition)
    got = [limiter.limit("mine", name, cost=2) for _ in range(4)]
    want = [limiter.decide("twin", spelt, cost=2) for _ in range(4)]
    for g, w in zip(got, want):
        assert as_list(g)[:3] == as_list(w)[:3]
        assert abs(g.retry_after_ms - w.retry_after_ms) < 1_000
        assert g.policy == name and g.backend == redis_rl.MODULE and not g.shadowed
    assert [d.allowed for d in got] == [True, True, False, False]
    # The key a name writes is the key its command writes: the spelt-out policy reads it.
    assert limiter.peek("mine", spelt, cost=0).remaining == limiter.peek("mine", name,
                                                                         cost=0).remaining
    # `decide` takes a name as `limit` does.
    assert limiter.decide("mine", name, cost=2, peek=True).allowed is False


def test_peek_refund_and_block_by_name(limiter, define):
    name = define("TOKENBUCKET 100 1 1h")
    assert limiter.limit("bucket", name, cost=5).remaining == 95
    assert limiter.limit("bucket", name, cost=3, peek=True).remaining == 92
    peeked = limiter.peek("bucket", name, cost=3)  # RL.PEEK POLICY: read-only
    assert (peeked.allowed, peeked.remaining, peeked.policy) == (True, 92, name)
    assert limiter.peek("bucket", name).remaining == 94
    assert limiter.refund("bucket", name, 4).remaining == 99
    spaced = define("GCRA 2 1s")  # one every 500 ms
    assert limiter.limit("spaced", spaced).allowed
    assert not limiter.limit("spaced", spaced).allowed
    started = time.monotonic()
    waited = limiter.limit("spaced", spaced, block_ms=2_000)  # RL.LIMIT ... BLOCK 2000
    assert waited.allowed and 0.2 < time.monotonic() - started < 1.5


def test_all_mixes_named_and_spelt_out_layers(limiter, define):
    export = define("FIXED 2 1h")
    layers = [("rl:ip:1", policy.fixed(100, "1h", name="ip")), ("rl:ep:1", export, 1)]
    assert [limiter.all(layers).allowed for _ in range(3)] == [True, True, False]
    d = limiter.all(layers)
    assert (d.allowed, d.index, d.binding.policy) == (False, 1, export)
    assert d.shadowed == ()
    assert [layer.remaining for layer in d.layers] == [98, 0]  # the denials spent nothing
    heavy = limiter.all([("rl:ip:2", policy.fixed(100, "1h")), ("rl:ep:2", export, 2)])
    assert heavy.allowed and [layer.remaining for layer in heavy.layers] == [99, 0]
    assert limiter.all(layers, peek=True).layers[0].remaining == 98


def test_a_shadow_policy_admits_its_denial_as_shadowed(limiter, define, module_server):
    name = define("FIXED 1 1h SHADOW")
    first, second = limiter.limit("trial", name), limiter.limit("trial", name)
    assert first.allowed and first.remaining == 0 and not first.shadowed
    assert second.allowed and second.shadowed and 0 < second.retry_after_ms <= 3_600_000
    assert "Retry-After" not in second.all_headers() and second.retry_after is None
    heavy = limiter.limit("trial-2", name, cost=2)  # never admissible: retry_after_ms -1
    assert heavy.allowed and heavy.retry_after_ms == -1 and heavy.shadowed
    # Enforced, the same key is denied (the shadow admitted nothing more).
    define("FIXED 1 1h", name=name)
    third = limiter.limit("trial", name)
    assert not third.allowed and not third.shadowed and third.retry_after is not None
    # A shadow layer in RL.ALL denies nothing: the others decide, and commit.
    define("FIXED 1 1h SHADOW", name=name)
    d = limiter.all([("rl:ip:9", policy.fixed(100, "1h")), ("trial", name)])
    assert d.allowed and d.shadowed == (1,) and d.layers[1].shadowed
    assert [layer.remaining for layer in d.layers] == [99, 0]
    assert limiter.all([("rl:ip:9", policy.fixed(100, "1h")), ("trial", name)]).layers[
        0].remaining == 98


def test_a_leaky_buckets_delayed_admission_is_not_shadowed(limiter, define):
    # A leaky bucket's admission carries its delay in retry_after_ms: by name with room
    # left, and spelt out (never shadowed) with nothing left.
    name = define("LEAKY 5 1 1s")
    d = [limiter.limit("queue", name) for _ in range(2)][1]
    assert d.allowed and d.remaining == 3 and d.retry_after_ms > 0 and not d.shadowed
    leaky = policy.leaky(2, 1, "1s")
    d = [limiter.decide("spelt", leaky) for _ in range(2)][1]
    assert d.allowed and d.remaining == 0 and d.retry_after_ms > 0 and not d.shadowed


def test_a_named_policys_headers_state_its_name_and_the_replys_limit(limiter, define):
    name = define("GCRA 10 1s BURST 5")
    d = limiter.limit("user:21", name, cost=2)
    assert d.ietf_headers() == {"RateLimit-Policy": f'"{name}";q=5',
                                "RateLimit": f'"{name}";r=3;t=1'}
    assert d.ietf_headers("api")["RateLimit-Policy"] == '"api";q=5'
    assert d.headers() == {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "3",
                           "X-RateLimit-Reset": "1"}
    assert d.policy_name == name
    spent = limiter.limit("user:21", name, cost=5)
    assert not spent.allowed and spent.all_headers()["Retry-After"] == "1"


BAD_NAMES = ["", "free plan", "plan/free", "plän", "x" * (MAX_POLICY_NAME + 1), "free\n"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_bad_name_is_refused_before_sending(client, name):
    limiter = redis_rl.Limiter(client)
    calls = [lambda: limiter.limit("k", name), lambda: limiter.peek("k", name),
             lambda: limiter.refund("k", name, 1), lambda: limiter.all([("k", name)]),
             lambda: limiter.all([("j", policy.fixed(1, "1m")), ("k", name, 2)])]
    for call in calls:
        with pytest.raises(redis_rl.ConfigurationError, match="a policy name is 1 to 64 of") as e:
            call()
        assert not isinstance(e.value, TypeError)
    assert limiter.backend is None and client.dbsize() == 0


@pytest.mark.parametrize("wrong", [3, None, b"free", ("FIXED", 1, "1m")], ids=repr)
def test_a_policy_of_another_type_is_a_type_error(client, wrong):
    limiter = redis_rl.Limiter(client)
    for call in [lambda: limiter.limit("k", wrong), lambda: limiter.decide("k", wrong),
                 lambda: limiter.peek("k", wrong), lambda: limiter.all([("k", wrong)])]:
        with pytest.raises(TypeError, match="a policy is a redis_rl.Policy or a policy's name"):
            call()
    with pytest.raises(redis_rl.ConfigurationError):
        limiter.limit("k", wrong)
    assert limiter.backend is None and client.dbsize() == 0


def test_the_longest_name_is_sent(limiter):
    name = "a" * MAX_POLICY_NAME  # the server's bound: sent, and refused as unknown only
    with pytest.raises(redis_rl.ConfigurationError, match=f"no such policy '{name}'"):
        limiter.limit("k", name)


def test_an_unknown_policy_is_the_servers_configuration_error(limiter):
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'") as e:
        limiter.limit("user:21", "gold")
    assert isinstance(e.value, redis.ResponseError) and isinstance(e.value.__cause__,
                                                                   redis.ResponseError)
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
        limiter.peek("user:21", "gold")
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
        limiter.all([("rl:ip:1", policy.fixed(10, "1h")), ("user:21", "gold")])
    assert limiter.client.dbsize() == 0  # an RL.ALL with one fails whole


LIBRARY_SERVERS = [("redis", False), ("valkey", False)]


@pytest.mark.parametrize("flavor,with_module", LIBRARY_SERVERS, ids=["redis", "valkey"])
def test_the_library_without_named_policies_is_unavailable(servers, flavor, with_module):
    s = servers(flavor, with_module)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    limiter = redis_rl.Limiter(c)
    with pytest.raises(redis_rl.LibraryUnavailableError, match="no named policies") as e:
        limiter.limit("k", "free")
    assert isinstance(e.value, redis.ResponseError) and limiter.backend == redis_rl.LIBRARY
    assert c.function_list() == []  # the package's library has no rl_limit: not loaded for it
    for call in [lambda: limiter.peek("k", "free"), lambda: limiter.peek("k", "free", cost=2),
                 lambda: limiter.all([("k", "free")]),
                 lambda: limiter.all([("j", policy.fixed(5, "1m")), ("k", "free")]),
                 lambda: limiter.all([("k", "free"), ("j", policy.fixed(5, "1m"))], peek=True)]:
        with pytest.raises(redis_rl.LibraryUnavailableError, match="load the module"):
            call()
    assert c.dbsize() == 0  # nothing decided
    assert limiter.fixed("j", 5, "1m").remaining == 4  # spelt-out calls run on the library
    c.close()


def test_the_asyncio_limiter_takes_names(module_server, define, servers):
    name = define("FIXED 2 1h SHADOW")

    async def run():
        client = redis.asyncio.Redis(port=module_server.port)
        limiter = redis_rl.AsyncLimiter(client)
        got = [await limiter.limit("a", name) for _ in range(3)]
        peeked = await limiter.peek("a", name, cost=0)
        both = await limiter.all([("b", policy.fixed(5, "1h")), ("a", name)])
        with pytest.raises(redis_rl.ConfigurationError, match="no such policy"):
            await limiter.limit("a", "gold")
        with pytest.raises(redis_rl.ConfigurationError, match="a policy name"):
            await limiter.limit("a", "no such")
        await client.aclose()
        library = redis.asyncio.Redis(port=servers("redis", False).port)
        with pytest.raises(redis_rl.LibraryUnavailableError, match="no named policies"):
            await redis_rl.AsyncLimiter(library).all([("a", name)])
        await library.aclose()
        return got, peeked, both

    got, peeked, both = asyncio.run(run())
    assert [(d.allowed, d.remaining, d.shadowed) for d in got] == [
        (True, 1, False), (True, 0, False), (True, 0, True)]
    assert peeked.remaining == 0 and peeked.policy == name
    assert both.allowed and both.shadowed == (1,) and both.layers[0].remaining == 4
