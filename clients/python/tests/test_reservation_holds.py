"""A reservation never gives back what was not spent, nor what no longer counts: a `SHADOW`
policy's denial reserves nothing (the application still proceeds, and its settlement writes
nothing), a LEAKY policy's admissions (their `retry_after_ms` the queue's delay) are settled
as admissions, a `DEBIT` or `REFUND` (a settlement's too) is never `shadowed`, and no REFUND
goes to a layer whose reply's `reset_after_ms` has passed. On Redis 7.0 and Valkey 9.1, with
the module and through the Functions library, sync and asyncio."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio

import redis_rl
from redis_rl import policy

HOUR = 3_600_000


def state(c: redis.Redis, key: str):
    """What the server holds under `key`: its value (a string or a sorted set) and whether it
    expires."""
    kind = c.type(key).decode()
    value = c.get(key) if kind == "string" else c.zrange(key, 0, -1, withscores=True)
    return kind, value, c.pttl(key) > 0


def decisions_sent(c: redis.Redis) -> int:
    """The deciding calls the server has run: the module's commands but RL.POLICY, and
    FCALL (not FCALL_RO)."""
    stats = c.info("commandstats")
    return sum(v["calls"] for k, v in stats.items()
               if k == "cmdstat_fcall" or k.startswith("cmdstat_rl.")
               and not k.startswith("cmdstat_rl.policy"))


@pytest.fixture
def c(policy_server):
    client = redis.Redis(port=policy_server.port)
    yield client
    client.close()


def test_a_shadowed_denial_reserves_nothing_and_its_settlement_writes_nothing(define, c):
    shadow, enforced = define("FIXED 8 1h SHADOW"), define("FIXED 8 1h")
    limiter = redis_rl.Limiter(c)
    assert limiter.limit("s", shadow, cost=8).allowed
    assert limiter.limit("e", enforced, cost=8).allowed
    assert not limiter.limit("e", enforced, cost=5).allowed  # what enforcement answers
    held = state(c, "s")

    d, reservation = limiter.reserve("s", shadow, 5)
    assert d.allowed and d.shadowed and d.remaining == 0 and d.retry_after_ms > 0
    assert reservation is not None  # proceed
    before = decisions_sent(c)
    settled = reservation.settle(0)
    assert state(c, "s") == held  # no REFUND 5 (count 8 -> 3): nothing was spent
    assert decisions_sent(c) == before
    assert settled is None and reservation.settled and reservation.layers == ()
    # The shadow key shows what enforcement holds: 8 of 8, as its twin.
    assert limiter.peek("s", shadow, cost=0).remaining == 0
    assert limiter.peek("e", enforced, cost=0).remaining == 0
    _, more = limiter.reserve("s", shadow, 5)
    assert more.settle(50) is None and state(c, "s") == held  # no DEBIT either
    with more:  # the context manager settles nothing too
        pass


def test_reserve_all_settles_no_layer_a_shadow_policy_denied(define, c):
    shadow = define("FIXED 8 1h SHADOW")
    limiter = redis_rl.Limiter(c)
    limiter.limit("{u}:s", shadow, cost=8)
    held = state(c, "{u}:s")
    count = policy.fixed(100, "1h")
    both, reservation = limiter.reserve_all([("{u}:rpm", count, 1), ("{u}:s", shadow)], 5)
    assert both.allowed and both.shadowed == (1,)
    settled = reservation.settle(0)
    assert state(c, "{u}:s") == held
    assert settled is None and reservation.layers == ()
    # Beside a layer that reserved the estimate, only that one is settled.
    tokens = policy.fixed(100, "1h")
    _, two = limiter.reserve_all([("{u}:s", shadow), ("{u}:tpm", tokens)], 30)
    assert two.layers == (("{u}:tpm", tokens),)
    refunded = two.settle(10)  # REFUND 20 on tpm alone
    assert [d.remaining for d in refunded.layers] == [90]
    assert state(c, "{u}:s") == held
    assert limiter.peek("{u}:s", shadow, cost=0).remaining == 0


def test_a_leaky_policys_admissions_are_settled_as_admissions(define, c):
    """LEAKY admissions carry the queue's delay in retry_after_ms, and the one that takes the
    queue's last place reads as a shadowed denial does: an enforced LEAKY policy's is read
    from its definition, and settled."""
    leaky = define("LEAKY 3 1 1h")  # a place frees every hour
    limiter = redis_rl.Limiter(c)
    limiter.reserve("q", leaky, 1)
    second, r2 = limiter.reserve("q", leaky, 1)
    assert second.retry_after_ms > 0 and second.remaining == 1 and not second.shadowed
    last, r3 = limiter.reserve("q", leaky, 1)  # the last place: 2 hours of queue ahead
    assert (last.allowed, last.remaining, last.shadowed) == (True, 0, False)
    assert last.retry_after_ms > HOUR
    assert r3.layers == (("q", leaky),)
    assert r3.settle(0).remaining == 1  # REFUND 1: its place back
    assert r2.settle(3).remaining == 0  # DEBIT 2
    denied, none = limiter.reserve("q", leaky, 1)
    assert not denied.allowed and none is None


def test_a_shadow_leaky_policy_reads_its_last_place_as_a_shadowed_denial(define, c):
    """A SHADOW LEAKY policy's admission into the last place and its denial give the same
    reply: both reserve nothing, so neither gives anything back."""
    leaky = define("LEAKY 2 1 1h SHADOW")
    limiter = redis_rl.Limiter(c)
    _, first = limiter.reserve("q", leaky, 1)
    assert first.layers == (("q", leaky),)
    last, r = limiter.reserve("q", leaky, 1)
    assert last.shadowed and r.layers == ()
    denied, r = limiter.reserve("q", leaky, 1)  # a shadowed denial: nothing written
    held = state(c, "q")
    assert denied.allowed and denied.shadowed and r.settle(0) is None
    assert state(c, "q") == held


def test_a_debit_and_a_settlement_into_debt_are_never_shadowed(define, c):
    enforced = define("TOKENBUCKET 10 10 1h")
    limiter = redis_rl.Limiter(c)
    debt = limiter.debit("d", enforced, 15)  # allowed 1, remaining 0, the wait for 1 token
    assert (debt.allowed, debt.remaining) == (True, 0) and debt.retry_after_ms > 0
    assert not debt.shadowed
    _, reservation = limiter.reserve("r", enforced, 5)
    settled = reservation.settle(20)  # DEBIT 15: into debt
    assert settled.remaining == 0 and settled.retry_after_ms > 0 and not settled.shadowed
    _, together = limiter.reserve_all([("{t}:a", enforced), ("{t}:b", enforced)], 5)
    into_debt = together.settle(30)
    assert into_debt.shadowed == () and not into_debt.binding.shadowed
    assert not limiter.refund("d", enforced, 1).shadowed


def test_the_asyncio_limiter_reserves_nothing_on_a_shadowed_denial(define, policy_server):
    shadow = define("FIXED 8 1h SHADOW")

    async def main():
        client = redis.asyncio.Redis(port=policy_server.port)
        limiter = redis_rl.AsyncLimiter(client)
        await limiter.limit("s", shadow, cost=8)
        d, reservation = await limiter.reserve("s", shadow, 5)
        both, together = await limiter.reserve_all([("s", shadow)], 5)
        out = (d.shadowed, reservation.layers, await reservation.settle(0), both.shadowed,
               together.layers, await together.settle(0),
               (await limiter.peek("s", shadow, cost=0)).remaining)
        await client.aclose()
        return out

    assert asyncio.run(main()) == (True, (), None, (0,), (), None, 0)


def test_a_layer_of_no_cost_reserves_the_estimate_and_is_settled(server, client):
    limiter = redis_rl.Limiter(client)
    tokens = policy.fixed(100, "1h")
    d, reservation = limiter.reserve_all([("{n}:rpm", policy.fixed(5, "1h"), 1),
                                          ("{n}:tpm", tokens, None)], 30)
    assert [x.remaining for x in d.layers] == [4, 70]
    assert reservation.layers == (("{n}:tpm", tokens),)
    assert [x.remaining for x in reservation.settle(10).layers] == [90]


def wait_past(reset_after_ms: int) -> None:
    time.sleep(reset_after_ms / 1000 + 0.05)


def test_no_refund_once_the_reserved_units_no_longer_count(server, client):
    """A fixed window reserved in, then passed: a REFUND would give the next window units it
    never spent. None is sent; a DEBIT for an overrun still is."""
    limiter = redis_rl.Limiter(client)
    window = policy.fixed(10, "2s")
    d, reservation = limiter.reserve("w", window, 6)
    wait_past(d.reset_after_ms)
    assert limiter.decide("w", window, cost=8).remaining == 2  # the next window's own
    held = client.get("w")
    before = decisions_sent(client)
    assert reservation.settle(1) is None  # no REFUND 5
    assert decisions_sent(client) == before and client.get("w") == held
    assert limiter.peek("w", window, cost=0).remaining == 2
    d, over = limiter.reserve("v", window, 2)
    wait_past(d.reset_after_ms)
    assert over.settle(5).remaining == 7  # DEBIT 3, in the window it lands in
    # reserve_all: each layer by its own reply's reset_after_ms.
    _, both = limiter.reserve_all([("{a}:short", policy.fixed(10, "2s")),
                                   ("{a}:long", policy.sliding_log(10, "1h"))], 6)
    wait_past(2_000)
    settled = both.settle(1)  # REFUND 5 on the hour's window alone
    assert [x.remaining for x in settled.layers] == [9]
    assert client.exists("{a}:short") == 0


def test_the_asyncio_limiter_sends_no_refund_once_the_units_no_longer_count(server):
    async def main():
        client = redis.asyncio.Redis.from_url(server.url)
        limiter = redis_rl.AsyncLimiter(client)
        window = policy.sliding_log(10, "1s")
        d, reservation = await limiter.reserve("log", window, 6)
        await asyncio.sleep(d.reset_after_ms / 1000 + 0.05)
        await limiter.decide("log", window, cost=9)
        held = await client.zrange("log", 0, -1, withscores=True)
        settled = await reservation.settle(0)
        out = (settled, held == await client.zrange("log", 0, -1, withscores=True),
               (await limiter.peek("log", window, cost=0)).remaining)
        await client.aclose()
        return out

    assert asyncio.run(main()) == (None, True, 1)
