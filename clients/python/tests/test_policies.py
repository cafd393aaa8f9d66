"""Named policies on the server through the limiters: a policy's name wherever a Policy goes
decides exactly as the policy's own command (RL.LIMIT, RL.PEEK POLICY, POLICY clauses in
RL.ALL), a SHADOW policy's denial is `shadowed`, names are checked before sending, and an
unknown name is the server's ConfigurationError. On Redis 7.0 and Valkey 9.1, with the module
(the policies made with RL.POLICY SET) and without it (the library written with them by
scripts/library-policies.py), and the library side by side with the module; the package's own
library, which holds no policies, answers a name with `no such policy`."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio
from conftest import library_with

import redis_rl
from redis_rl import policy
from redis_rl._facts import MAX_POLICY_NAME
from redis_rl.backend import library_source


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


def backend_of(server) -> str:
    return redis_rl.MODULE if server.with_module else redis_rl.LIBRARY


@pytest.fixture
def limiter(policy_server):
    c = redis.Redis(port=policy_server.port)
    # No denial cache: the tests redefine policies on the server between calls.
    yield redis_rl.Limiter(c, denial_cache=False)
    c.close()


@pytest.mark.parametrize("definition,spelt", ALGORITHMS, ids=[a[0].split()[0] for a in ALGORITHMS])
def test_a_name_decides_as_the_policys_own_command(limiter, define, definition, spelt,
                                                   policy_server):
    name = define(definition)
    got = [limiter.limit("mine", name, cost=2) for _ in range(4)]
    want = [limiter.decide("twin", spelt, cost=2) for _ in range(4)]
    for g, w in zip(got, want):
        assert as_list(g)[:3] == as_list(w)[:3]
        assert abs(g.retry_after_ms - w.retry_after_ms) < 1_000
        assert g.policy == name and g.backend == backend_of(policy_server) and not g.shadowed
    assert [d.allowed for d in got] == [True, True, False, False]
    # The key a name writes is the key its command writes: the spelt-out policy reads it.
    assert limiter.peek("mine", spelt, cost=0).remaining == limiter.peek("mine", name,
                                                                         cost=0).remaining
    # `decide` takes a name as `limit` does.
    assert limiter.decide("mine", name, cost=2, peek=True).allowed is False


def test_peek_refund_and_block_by_name(limiter, define, policy_server):
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
    took = time.monotonic() - started
    if policy_server.with_module:
        assert waited.allowed and 0.2 < took < 1.5
    else:  # the library takes BLOCK and decides at once
        assert not waited.allowed and 0 < waited.retry_after_ms <= 500 and took < 0.2


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


def test_a_shadow_policy_admits_its_denial_as_shadowed(limiter, define):
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


def test_an_unknown_policy_is_the_servers_configuration_error(limiter, define):
    define("FIXED 5 1h", name="silver")  # (without the module: a library with policies)
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'") as e:
        limiter.limit("user:21", "gold")
    assert isinstance(e.value, redis.ResponseError) and isinstance(e.value.__cause__,
                                                                   redis.ResponseError)
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
        limiter.peek("user:21", "gold")
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
        limiter.all([("rl:ip:1", policy.fixed(10, "1h")), ("user:21", "gold")])
    assert limiter.client.dbsize() == 0  # an RL.ALL with one fails whole


def empty(server) -> redis.Redis:
    """A client of `server`, emptied of keys and of the library."""
    c = redis.Redis(port=server.port)
    c.flushall()
    c.function_flush()
    return c


FLAVORS = pytest.mark.parametrize("flavor", ["redis", "valkey"])


def by_name(limiter, name: str) -> list:
    """Every call by a name but `limit`'s (RL.PEEK POLICY, REFUND, POLICY clauses)."""
    return [lambda: limiter.peek("k", name), lambda: limiter.peek("k", name, cost=2),
            lambda: limiter.refund("k", name, 1), lambda: limiter.all([("k", name)]),
            lambda: limiter.all([("j", policy.fixed(5, "1m")), ("k", name)]),
            lambda: limiter.all([("k", name), ("j", policy.fixed(5, "1m"))], peek=True)]


@FLAVORS
def test_the_packaged_library_answers_a_name_with_no_such_policy(servers, flavor):
    s = servers(flavor, False)
    c = empty(s)
    limiter = redis_rl.Limiter(c)
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'free'") as e:
        limiter.limit("k", "free")  # the library missing: the package's loaded, and called
    assert isinstance(e.value, redis.ResponseError) and limiter.backend == redis_rl.LIBRARY
    assert c.fcall_ro("rl_policy", 0, "LIST") == []  # the package's library, no policies
    for call in by_name(limiter, "free"):
        with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'free'"):
            call()
    assert c.dbsize() == 0  # nothing decided
    assert limiter.fixed("j", 5, "1m").remaining == 4  # spelt-out calls run on it
    c.function_flush()

    async def run():
        client = redis.asyncio.Redis(port=s.port)
        try:
            await redis_rl.AsyncLimiter(client).all([("j", policy.fixed(5, "1m")), ("k", "free")])
        finally:
            await client.aclose()

    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'free'"):
        asyncio.run(run())
    assert c.fcall_ro("rl_policy", 0, "LIST") == [] and c.get("k") is None
    c.close()


@FLAVORS
def test_a_library_older_than_rl_limit_is_replaced_by_the_packages(servers, flavor):
    c = empty(servers(flavor, False))
    registered = "redis.register_function('rl_limit', handler('limit'))\n"
    assert registered in library_source()
    c.function_load(library_source().replace(registered, ""))  # as a library before policies
    limiter = redis_rl.Limiter(c)
    assert limiter.fixed("j", 5, "1m").remaining == 4  # it answers what it has
    with pytest.raises(redis.ResponseError, match="Function not found"):
        c.fcall("rl_limit", 1, "k", "free")
    with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'free'"):
        limiter.limit("k", "free")  # `Function not found`: the package's library loaded
    with pytest.raises(redis.ResponseError, match="no such policy 'free'"):
        c.fcall("rl_limit", 1, "k", "free")  # it has rl_limit now
    assert c.get("j") is not None and limiter.fixed("j", 5, "1m").remaining == 3
    c.close()


@FLAVORS
def test_a_bad_policy_line_is_the_librarys_error(servers, flavor, tmp_path):
    c = empty(servers(flavor, False))
    c.function_load(library_with(["free FIXED 5 1h", "pro GCRA 0 1s"], tmp_path))
    limiter = redis_rl.Limiter(c)
    with pytest.raises(redis.ResponseError, match=r"\Apolicy file \S*rl-policies.conf line 2: "):
        limiter.limit("k", "free")  # all or nothing: no policy is held
    for call in by_name(limiter, "free"):
        with pytest.raises(redis.ResponseError, match="rl-policies.conf line 2: "):
            call()
    assert limiter.fixed("j", 5, "1m").remaining == 4  # the other functions work
    with pytest.raises(redis.ResponseError, match="rl-policies.conf line 2: "):
        c.fcall_ro("rl_policy", 0, "LIST")  # still the library written, not the package's
    c.close()


#: The policies of the tests above (each algorithm's, a SHADOW one, a large bucket), held by
#: the module and by the library alike.
SIDE_BY_SIDE = {
    **{f"p-{definition.split()[0].lower()}": definition for definition, _ in ALGORITHMS},
    "p-shadow": "FIXED 2 1h SHADOW", "p-big": "TOKENBUCKET 100 1 1h",
}


def side_by_side_calls() -> list[tuple[str, tuple, dict]]:
    """(method, args, kwargs): each policy by name with costs, peeks, a refund and a cost it
    can never admit, then RL.ALL with named (a SHADOW one among them) and spelt-out layers."""
    out: list[tuple[str, tuple, dict]] = []
    for name in SIDE_BY_SIDE:
        key = f"k:{name}"
        out += [("limit", (key, name), {"cost": 2})] * 4 + [
            ("limit", (key, name), {"peek": True}), ("peek", (key, name), {"cost": 3}),
            ("peek", (key, name), {}), ("refund", (key, name, 1), {}),
            ("limit", (key, name), {"cost": 1_000}), ("decide", (key, name), {})]
    layers = [("rl:ip", policy.fixed(100, "1h", name="ip")), ("k:all", "p-fixed", 2),
              ("k:trial", "p-shadow")]
    out += [("all", (layers,), {})] * 4 + [("all", (layers,), {"peek": True})]
    out += [("all", ([layers[0], layers[2]],), {})] * 2  # the shadow layer alone denies
    out += [("all", ([("k:big", "p-big", 7), layers[0]],), {})]
    return out


def agree(m, lib) -> None:
    """The module's decision `m` and the library's `lib` are the same integers (times within a
    second, the real time between the calls), and so shadowed alike."""
    if isinstance(m, redis_rl.AllDecision):
        assert (m.allowed, m.index, m.shadowed) == (lib.allowed, lib.index, lib.shadowed)
        for a, b in zip(m.layers, lib.layers, strict=True):
            agree(a, b)
        return
    assert (m.backend, lib.backend) == (redis_rl.MODULE, redis_rl.LIBRARY)
    assert as_list(m)[:3] == as_list(lib)[:3] and m.policy == lib.policy
    assert m.shadowed == lib.shadowed
    for x, y in [(m.retry_after_ms, lib.retry_after_ms), (m.reset_after_ms, lib.reset_after_ms)]:
        assert x == y if min(x, y) <= 0 else abs(x - y) < 1_000


@pytest.fixture
def pair(servers, policies_on):
    """`pair(flavor)`: the server of `flavor` with the module and the one without it, emptied,
    each holding SIDE_BY_SIDE (RL.POLICY SET; the library written with them)."""
    def make(flavor: str):
        both = servers(flavor, True), servers(flavor, False)
        for s in both:
            redis.Redis(port=s.port).flushall()
            policies = policies_on(s)
            for name, definition in SIDE_BY_SIDE.items():
                policies.define(definition, name=name)
        m, lib = (redis.Redis(port=s.port) for s in both)
        assert lib.fcall_ro("rl_policy", 0, "DIGEST") == m.execute_command("RL.POLICY", "DIGEST")
        assert sorted(lib.fcall_ro("rl_policy", 0, "LIST")) == sorted(
            m.execute_command("RL.POLICY", "LIST"))
        m.close()
        lib.close()
        return both

    return make


@FLAVORS
def test_the_library_decides_by_name_as_the_module(pair, flavor):
    module, library = (redis_rl.Limiter(redis.Redis(port=s.port), denial_cache=False)
                       for s in pair(flavor))
    decided = []
    for method, args, kwargs in side_by_side_calls():
        decided.append(getattr(module, method)(*args, **kwargs))
        agree(decided[-1], getattr(library, method)(*args, **kwargs))
    assert len(decided) > 80 and not all(d.allowed for d in decided)
    assert any(d.shadowed for d in decided if isinstance(d, redis_rl.Decision))
    assert any(d.shadowed for d in decided if isinstance(d, redis_rl.AllDecision))
    for limiter in (module, library):  # a name the server does not hold, alike
        with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
            limiter.all([("rl:ip", policy.fixed(100, "1h")), ("k", "gold")])
    assert sorted(module.client.keys("*")) == sorted(library.client.keys("*"))
    module.client.close()
    library.client.close()


@FLAVORS
def test_the_asyncio_library_decides_by_name_as_the_module(pair, flavor):
    ports = [s.port for s in pair(flavor)]

    async def run():
        clients = [redis.asyncio.Redis(port=port) for port in ports]
        module, library = (redis_rl.AsyncLimiter(c, denial_cache=False) for c in clients)
        for method, args, kwargs in side_by_side_calls():
            m = await getattr(module, method)(*args, **kwargs)
            agree(m, await getattr(library, method)(*args, **kwargs))
        for limiter in (module, library):
            with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
                await limiter.limit("k", "gold")
        for c in clients:
            await c.aclose()

    asyncio.run(run())


def test_the_asyncio_limiter_takes_names(policy_server, define):
    name = define("FIXED 2 1h SHADOW")

    async def run():
        client = redis.asyncio.Redis(port=policy_server.port)
        limiter = redis_rl.AsyncLimiter(client)
        got = [await limiter.limit("a", name) for _ in range(3)]
        peeked = await limiter.peek("a", name, cost=0)
        both = await limiter.all([("b", policy.fixed(5, "1h")), ("a", name)])
        refunded = await limiter.refund("a", name, 1)
        with pytest.raises(redis_rl.ConfigurationError, match="no such policy 'gold'"):
            await limiter.limit("a", "gold")
        with pytest.raises(redis_rl.ConfigurationError, match="a policy name"):
            await limiter.limit("a", "no such")
        await client.aclose()
        return got, peeked, both, refunded

    got, peeked, both, refunded = asyncio.run(run())
    assert [(d.allowed, d.remaining, d.shadowed) for d in got] == [
        (True, 1, False), (True, 0, False), (True, 0, True)]
    assert {d.backend for d in got} == {backend_of(policy_server)}
    assert peeked.remaining == 0 and peeked.policy == name
    assert both.allowed and both.shadowed == (1,) and both.layers[0].remaining == 4
    assert refunded.allowed and refunded.remaining == 1
