"""The synchronous Limiter on every backend: each method decides what the command itself
decides (the raw command on a twin key, same history, is the reference), and reports the
backend that answered."""

from __future__ import annotations

import uuid

import pytest
import redis

import redis_rl
from redis_rl import policy


def raw(client, with_module: bool, cmd: str, key: str, *args):
    """The command's own reply: `RL.<CMD> key args` on the module, `FCALL rl_<cmd>` on the
    library (loaded by the limiter's first call)."""
    if with_module:
        return client.execute_command(f"RL.{cmd}", key, *args)
    return client.execute_command("FCALL", f"rl_{cmd.lower()}", 1, key, *args)


def as_tuple(d: redis_rl.Decision):
    return [int(d.allowed), d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


METHODS = [
    ("gcra", "GCRA", (10, "1s"), {"burst": 5}, ["10", "1s", "BURST", "5"]),
    ("token_bucket", "TOKENBUCKET", (5, 1, "1s"), {}, ["5", "1", "1s"]),
    ("leaky", "LEAKY", (5, 1, "1s"), {}, ["5", "1", "1s"]),
    ("sliding", "SLIDING", (5, "1m"), {}, ["5", "1m"]),
    ("sliding_log", "SLIDINGLOG", (5, "1m"), {}, ["5", "1m"]),
    ("fixed", "FIXED", (5, "1h"), {}, ["5", "1h"]),
]


@pytest.mark.parametrize("method,cmd,args,kwargs,words", METHODS, ids=[m[0] for m in METHODS])
def test_each_method_decides_as_its_command(client, server, expected_backend, method, cmd,
                                            args, kwargs, words):
    limiter = redis_rl.Limiter(client)
    assert limiter.backend is None
    got = [getattr(limiter, method)("mine", *args, cost=2, **kwargs) for _ in range(4)]
    assert limiter.backend == expected_backend
    want = [raw(client, server.with_module, cmd, "twin", *words, "COST", "2") for _ in range(4)]
    # Times run between the two sequences: the instants differ by a few ms at most.
    for g, w in zip(got, want):
        assert as_tuple(g)[:3] == list(w[:3])
        assert abs(g.retry_after_ms - w[3]) < 1_000 and abs(g.reset_after_ms - w[4]) < 1_000
        assert g.backend == expected_backend
    assert [d.allowed for d in got] == [True, True, False, False]


def test_peek_refund_and_block_are_the_options(client, expected_backend):
    limiter = redis_rl.Limiter(client)
    p = policy.token_bucket(100, 10, "1s")
    spent = limiter.decide("bucket", p, cost=5)
    assert (spent.allowed, spent.remaining) == (True, 95)
    assert limiter.decide("bucket", p, cost=3, peek=True).remaining == 92
    peeked = limiter.peek("bucket", p, cost=3)
    assert (peeked.allowed, peeked.remaining, peeked.backend) == (True, 92, expected_backend)
    assert limiter.refund("bucket", p, 2).remaining == 97
    # BLOCK on an admissible request decides at once on both backends.
    assert limiter.decide("bucket", p, block_ms=100).remaining == 96


def test_a_denied_call_blocks_on_the_module_and_decides_at_once_on_the_library(
        client, server):
    limiter = redis_rl.Limiter(client)
    assert limiter.gcra("wait", 10, "1s", burst=1).allowed  # one per 100 ms, bursts of 1
    d = limiter.gcra("wait", 10, "1s", burst=1, block_ms=1_000)
    # The module waits until admitted; the library (a script cannot wait) denies at once.
    assert d.allowed is server.with_module


def test_all_spends_every_layer_or_none(client, expected_backend):
    limiter = redis_rl.Limiter(client)
    # A unit an hour on the first layer: nothing refills between the calls, however slow.
    layers = [("{u1}:ip", policy.gcra(100, "100h", 20, name="ip")),
              ("{u1}:key", policy.token_bucket(60, 60, "1m", name="plan")),
              ("{u1}:export", policy.fixed(2, "1m", name="export"))]
    first = limiter.all(layers)
    assert first.allowed and first.binding.backend == expected_backend
    assert [d.remaining for d in first.layers] == [19, 59, 1]
    assert first.index == 2 and first.binding.policy.name == "export"
    assert limiter.all(layers).allowed
    denied = limiter.all(layers)
    assert not denied.allowed and denied.index == 2
    assert denied.binding.ietf_headers()["RateLimit-Policy"] == '"export";q=2;w=60'
    # Nothing was spent from the other layers by the denial.
    assert [d.remaining for d in denied.layers[:2]] == [18, 58]
    assert limiter.all(layers, peek=True).layers[0].remaining == 18


def test_acquire_and_release(client, expected_backend):
    limiter = redis_rl.Limiter(client)
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    assert limiter.acquire("inflight", 1, "30s", a).allowed
    denied = limiter.acquire("inflight", 1, "30s", b)
    assert not denied.allowed and denied.retry_after_ms > 29_000
    assert denied.backend == expected_backend
    assert "RateLimit-Policy" not in denied.ietf_headers()
    assert limiter.release("inflight", a) is True
    assert limiter.release("inflight", a) is False
    assert limiter.acquire("inflight", 1, "30s", b).allowed


def test_errors_are_the_commands_own(client, server):
    limiter = redis_rl.Limiter(client)
    with pytest.raises(redis.ResponseError, match="limit must be an integer"):
        limiter.fixed("k", 0, "1m")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        client.lpush("list", "x")
        limiter.fixed("list", 5, "1m")
    # An error is not taken for a missing module: the backend stays what answered.
    assert limiter.backend == (redis_rl.MODULE if server.with_module else redis_rl.LIBRARY)


def test_bad_arguments_are_refused_before_sending(client):
    limiter = redis_rl.Limiter(client)
    with pytest.raises(TypeError):
        limiter.fixed("k", "5", "1m")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.fixed("k", True, "1m")
    with pytest.raises(ValueError):
        limiter.all([])
    assert client.dbsize() == 0


#: Every public call that takes a cost, given the cost.
COSTED = [
    ("decide", lambda lim, c: lim.decide("k", policy.fixed(5, "1m"), cost=c)),
    ("gcra", lambda lim, c: lim.gcra("k", 10, "1s", cost=c)),
    ("token_bucket", lambda lim, c: lim.token_bucket("k", 5, 1, "1s", cost=c)),
    ("leaky", lambda lim, c: lim.leaky("k", 5, 1, "1s", cost=c)),
    ("sliding", lambda lim, c: lim.sliding("k", 5, "1m", cost=c)),
    ("sliding_log", lambda lim, c: lim.sliding_log("k", 5, "1m", cost=c)),
    ("fixed", lambda lim, c: lim.fixed("k", 5, "1m", cost=c)),
    ("peek", lambda lim, c: lim.peek("k", policy.fixed(5, "1m"), cost=c)),
    ("all", lambda lim, c: lim.all([("{a}x", policy.fixed(5, "1m"), c)])),
]


def sent(client) -> dict[str, int]:
    """The commands the server has run, by name, less the INFO calls that read them."""
    stats = client.info("commandstats")
    return {k: v["calls"] for k, v in stats.items() if k != "cmdstat_info"}


@pytest.mark.parametrize("cost", [1.0, True, 2.0, 2.5, "2", None], ids=repr)
def test_a_cost_that_is_not_an_int_is_a_type_error_before_anything_is_sent(client, server,
                                                                            cost):
    """`1.0` and `True` equal 1 (the default, sent as no COST at all): they are refused as
    every other cost that is not an int, by every method, sync and asyncio alike."""
    import asyncio

    import redis.asyncio

    before = sent(client)
    limiter = redis_rl.Limiter(client)
    for _, call in COSTED:
        with pytest.raises(TypeError, match="cost is an int"):
            call(limiter, cost)

    async def main():
        c = redis.asyncio.Redis.from_url(server.url)
        limiter = redis_rl.AsyncLimiter(c)
        for _, call in COSTED:
            with pytest.raises(TypeError, match="cost is an int"):
                await call(limiter, cost)
        await c.aclose()

    asyncio.run(main())
    assert sent(client) == before
    assert limiter.backend is None
