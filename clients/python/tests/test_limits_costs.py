"""Limits and costs at the edges (a limit of 0, a cost of 0, a negative cost, a cost above
the commands' 10^12, costs that are not whole numbers) through the `limits` strategies, each
case run through limits' own Redis storage (`redis://`, `async+redis://`) and through ours
(`rl+redis://`, `async+rl+redis://`) on the same server: where the semantics agree the two
answer alike, hit for hit; where the stock answer is nonsense ours refuses, and says so."""

from __future__ import annotations

import asyncio
import inspect
import math
import time

import pytest
import redis
from limits import RateLimitItemPerMinute
from limits.aio import strategies as aio_strategies
from limits.errors import ConfigurationError
from limits.storage import storage_from_string
from limits.strategies import STRATEGIES

import redis_rl  # noqa: F401  (registers rl+redis:// with limits)

SERVERS = [("redis", True), ("redis", False), ("valkey", True)]
FLAVORS = ["sync", "async"]


@pytest.fixture(params=SERVERS, ids=lambda p: f"{p[0]}-{'module' if p[1] else 'library'}")
def url(request, servers):
    s = servers(*request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    c.close()
    return s.url


def limiter(flavor: str, strategy: str, url: str, ours: bool):
    """A strategy on limits' own storage (`ours` False) or on ours, sync or asyncio."""
    if flavor == "sync":
        return STRATEGIES[strategy](storage_from_string(("rl+" if ours else "") + url))
    uri = ("async+rl+" if ours else "async+") + url
    return aio_strategies.STRATEGIES[strategy](
        storage_from_string(uri, implementation="redispy"))


async def answer(value):
    return await value if inspect.isawaitable(value) else value


async def history(lim, item, ident: str, before: int, cost) -> list:
    """`before` hits of 1, then test(cost), hit(cost), the window's stats, test(1), and
    hits of 1 until the limit and two more: each answer, or the error's type."""
    out: list = []

    async def call(name, *args, **kwargs):
        try:
            got = await answer(getattr(lim, name)(item, ident, *args, **kwargs))
        except Exception as err:  # noqa: BLE001 (the error is the answer)
            got = type(err).__name__
        if name == "get_window_stats" and not isinstance(got, str):
            # (remaining, seconds to the reset, to the second)
            got = (got.remaining, round(max(0.0, got.reset_time - time.time())))
        out.append((name, got))

    for _ in range(before):
        await call("hit")
    await call("test", cost=cost)
    await call("hit", cost=cost)
    await call("get_window_stats")
    await call("test")
    for _ in range(max(item.amount, 0) + 2 - before):
        await call("hit")
    await call("get_window_stats")
    return out


def both(flavor: str, strategy: str, url: str, item, before: int, cost):
    """(stock's history, ours), each of a fresh identifier on the same server."""
    async def main():
        stock = await history(limiter(flavor, strategy, url, False), item, "stock", before, cost)
        ours = await history(limiter(flavor, strategy, url, True), item, "ours", before, cost)
        return stock, ours

    return asyncio.run(main())


def comparable(strategy: str, steps: list) -> list:
    """The sliding window counter's reset differs by design (windows aligned to the epoch,
    the reset when a unit frees: docs/python.md's differences), so only its remaining
    counts are compared."""
    if strategy != "sliding-window-counter":
        return steps
    return [(n, got[0] if n == "get_window_stats" else got) for n, got in steps]


#: (limit per minute, hits of 1 before, cost): cases where limits' own storage answers
#: something coherent, and ours answers the same.
AGREED = [
    (0, 0, 1),         # a limit of 0: denied (was a ConfigurationError)
    (0, 0, 0),         # ... a cost of 0 on it: admitted, nothing spent
    (0, 0, -1),        # ... a negative cost: admitted (nothing reaches a limit of 0)
    (5, 0, 0),         # a cost of 0: admitted, nothing spent
    (5, 3, -1),        # a negative cost after 3 hits: one unit back (moving window: none)
    (5, 5, -2),        # ... on a spent limit
    (5, 0, 10**13),    # a cost above the commands' 10^12: denied (was a ConfigurationError)
    (5, 2, 10**12),    # a cost above the limit: denied
    (5, 0, 1.0),       # a float with a whole value: that many
    (5, 1, 3.0),
]


#: Every strategy with every agreed case but one: a negative cost on the sliding window
#: counter's limit of 0 takes the stock count below idle (the last test of this file).
CASES = [(strategy, *case) for strategy in STRATEGIES for case in AGREED
         if (strategy, case) != ("sliding-window-counter", (0, 0, -1))]


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("strategy,limit,before,cost", CASES, ids=repr)
def test_edge_limits_and_costs_answer_as_limits_own_storage(url, flavor, strategy, limit,
                                                            before, cost):
    stock, ours = both(flavor, strategy, url, RateLimitItemPerMinute(limit), before, cost)
    assert "ConfigurationError" not in str(stock)
    assert comparable(strategy, ours) == comparable(strategy, stock)


#: Costs that are not whole numbers: limits' own storage raises redis-py's errors for some
#: and admits others, writing what later calls fail on (its sliding window counter stores
#: `nan` or `1.5`, and every later hit of that identifier raises until the key expires).
REFUSED = [math.nan, math.inf, -math.inf, 1.5, True, "2", None]


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("cost", REFUSED, ids=repr)
def test_a_cost_that_is_not_a_whole_number_is_a_configuration_error(url, flavor, strategy,
                                                                     cost):
    async def main():
        lim = limiter(flavor, strategy, url, True)
        item = RateLimitItemPerMinute(5)
        with pytest.raises(ConfigurationError, match="cost must be a whole number"):
            await answer(lim.hit(item, "k", cost=cost))
        # Nothing was written: the identifier's full limit is there.
        return [await answer(lim.hit(item, "k")) for _ in range(6)]

    assert asyncio.run(main()) == [True] * 5 + [False]
    assert redis.Redis.from_url(url).dbsize() == 1


def test_what_limits_own_storage_does_with_costs_that_are_not_whole_numbers(url):
    """Why they are refused rather than copied (docs/python.md's differences): redis-py's
    errors for a bool and for 1.5 on the fixed window, and on the sliding window counter a
    NaN cost admitted, stored as `nan`, and every later hit of that identifier failing."""
    item = RateLimitItemPerMinute(5)
    with pytest.raises(redis.DataError):
        limiter("sync", "moving-window", url, False).hit(item, "a", cost=True)
    with pytest.raises(redis.ResponseError):
        limiter("sync", "fixed-window", url, False).hit(item, "b", cost=1.5)
    stock = limiter("sync", "sliding-window-counter", url, False)
    assert stock.hit(item, "c", cost=math.nan) is True
    with pytest.raises(redis.ResponseError):
        stock.hit(item, "c")


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("limit", [5, 0])
def test_a_negative_cost_gives_back_only_units_that_were_counted(url, flavor, limit):
    """The sliding window counter's negative cost is `REFUND`: as limits' own script where
    units were counted (the agreed cases above), but never below an idle counter, where the
    stock script's count goes negative: it then admits more than the limit, or, on a limit
    of 0, reports a unit remaining that no hit can take."""
    item = RateLimitItemPerMinute(limit)
    stock, ours = both(flavor, "sliding-window-counter", url, item, 0, -1)

    def admitted(steps):
        return [got for name, got in steps if name == "hit"][1:].count(True)

    def remaining(steps):
        return [got[0] for name, got in steps if name == "get_window_stats"][0]

    assert (admitted(stock), admitted(ours)) == (limit + 1 if limit else 0, limit)
    assert (remaining(stock), remaining(ours)) == (limit + 1, limit)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_limit_the_server_refuses_is_a_configuration_error_on_every_call(url, flavor):
    """The moving window's limit above the server's cap: `hit`, `test` and
    `get_window_stats` alike raise limits' ConfigurationError, never redis-py's error."""
    from limits import RateLimitItemPerHour

    async def main():
        lim = limiter(flavor, "moving-window", url, True)
        item = RateLimitItemPerHour(200_000)
        for call in (lim.hit, lim.test, lim.get_window_stats):
            with pytest.raises(ConfigurationError, match="sliding-log-max-limit"):
                await answer(call(item, "k"))

    asyncio.run(main())
