"""The asyncio storages (`async+rl+redis://`, `async+rl+redis+cluster://`) under limits.aio's
strategies: cases of limits' tests/aio/test_strategy.py and tests/aio/test_storage.py, as
written there, on Redis with the module and without it, and on a cluster."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
from limits import RateLimitItemPerHour, RateLimitItemPerMinute, RateLimitItemPerSecond
from limits.aio.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)
from limits.errors import ConfigurationError
from limits.storage import storage_from_string

from redis_rl.limits_aio import RlAsyncRedisClusterStorage, RlAsyncRedisStorage


@pytest.fixture(params=[True, False], ids=["module", "library"])
def uri(request, servers):
    s = servers("redis", request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    return "async+rl+" + s.url


def run(coro):
    return asyncio.run(coro)


def test_the_uri_makes_the_async_storage(uri):
    storage = storage_from_string(uri)
    assert isinstance(storage, RlAsyncRedisStorage)
    assert run(storage.check())
    with pytest.raises(ConfigurationError, match="redispy"):
        storage_from_string(uri, implementation="coredis")


def test_fixed_window_multiple_cost(uri):
    async def main():
        limiter = FixedWindowRateLimiter(storage_from_string(uri))
        limit = RateLimitItemPerMinute(10, 2)
        assert not await limiter.hit(limit, "k1", cost=11)
        assert await limiter.hit(limit, "k2", cost=5)
        assert (await limiter.get_window_stats(limit, "k2")).remaining == 5
        assert not await limiter.test(limit, "k2", cost=6)
        assert not await limiter.hit(limit, "k2", cost=6)

    run(main())


def test_moving_window_empty_stats_and_varying_cost(uri):
    async def main():
        limiter = MovingWindowRateLimiter(storage_from_string(uri))
        limit = RateLimitItemPerSecond(10, 2)
        assert (await limiter.get_window_stats(limit)).remaining == 10
        stats = await limiter.get_window_stats(limit)
        assert stats.reset_time == pytest.approx(time.time() + 2, 1e-2)
        five_per_min = RateLimitItemPerMinute(5)
        await limiter.hit(five_per_min, cost=5)
        assert not await limiter.hit(five_per_min, cost=2)
        await limiter.clear(five_per_min)
        assert await limiter.hit(five_per_min)

    run(main())


def test_test_moving_window(uri):
    async def main():
        limit = RateLimitItemPerHour(2, 1)
        limiter = MovingWindowRateLimiter(storage_from_string(uri))
        assert await limiter.hit(limit)
        assert await limiter.test(limit)
        assert await limiter.hit(limit)
        assert not await limiter.test(limit)
        assert not await limiter.hit(limit)
        assert (await limiter.get_window_stats(limit)).remaining == 0

    run(main())


def test_sliding_window_counter_multiple_cost_and_test(uri):
    async def main():
        limiter = SlidingWindowCounterRateLimiter(storage_from_string(uri))
        limit = RateLimitItemPerMinute(10, 2)
        assert not await limiter.hit(limit, "k1", cost=11)
        assert await limiter.hit(limit, "k2", cost=5)
        assert (await limiter.get_window_stats(limit, "k2")).remaining == 5
        assert not await limiter.test(limit, "k2", cost=6)
        assert not await limiter.hit(limit, "k2", cost=6)
        two = RateLimitItemPerHour(2, 1)
        assert await limiter.hit(two)
        assert await limiter.test(two)
        assert await limiter.hit(two)
        assert not await limiter.test(two)
        assert not await limiter.hit(two)
        await limiter.clear(two)
        assert (await limiter.get_window_stats(two)).remaining == 2

    run(main())


def test_many_concurrent_hits_admit_exactly_the_limit(uri):
    async def main():
        storage = storage_from_string(uri)
        results = {}
        for name, strategy in [("moving", MovingWindowRateLimiter),
                               ("sliding", SlidingWindowCounterRateLimiter)]:
            limiter = strategy(storage)
            limit = RateLimitItemPerHour(37)
            got = await asyncio.gather(*(limiter.hit(limit, name) for _ in range(100)))
            results[name] = sum(got)
        return results

    assert run(main()) == {"moving": 37, "sliding": 37}


@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_the_async_cluster_storage(clusters, with_module):
    cluster = clusters(with_module)
    for n in cluster.nodes:
        node = redis.Redis(port=n.port)
        node.flushall()
        node.function_flush()
    uri = "async+rl+redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in cluster.nodes)

    async def main():
        storage = storage_from_string(uri)
        assert isinstance(storage, RlAsyncRedisClusterStorage)
        limiter = MovingWindowRateLimiter(storage)
        limit = RateLimitItemPerMinute(2)
        keys = [f"user{i}" for i in range(12)]  # over the three masters' slots
        first = [await limiter.hit(limit, k) for k in keys for _ in range(3)]
        sliding = SlidingWindowCounterRateLimiter(storage)
        second = [await sliding.hit(limit, k) for k in keys for _ in range(3)]
        return first, second

    first, second = run(main())
    assert first == [True, True, False] * 12 and second == [True, True, False] * 12
