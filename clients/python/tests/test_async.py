"""The asyncio AsyncLimiter: the same decisions as Limiter, on every backend."""

from __future__ import annotations

import asyncio

import redis.asyncio

import redis_rl
from redis_rl import policy


def run(coro):
    return asyncio.run(coro)


def test_async_decisions_equal_the_sync_ones(server, client, expected_backend):
    async def main():
        c = redis.asyncio.Redis.from_url(server.url)
        limiter = redis_rl.AsyncLimiter(c)
        got = [await limiter.sliding_log("a", 3, "1m") for _ in range(4)]
        both = await limiter.all([("{x}1", policy.fixed(2, "1h")),
                                  ("{x}2", policy.gcra(5, "1s"))])
        lease = await limiter.acquire("lease", 1, "10s", "job-1")
        released = await limiter.release("lease", "job-1")
        await c.aclose()
        return limiter.backend, got, both, lease, released

    backend, got, both, lease, released = run(main())
    sync = redis_rl.Limiter(client)
    want = [sync.sliding_log("b", 3, "1m") for _ in range(4)]
    assert backend == expected_backend
    assert [(d.allowed, d.remaining) for d in got] == [(d.allowed, d.remaining) for d in want]
    assert [d.allowed for d in got] == [True, True, True, False]
    assert both.allowed and [d.remaining for d in both.layers] == [1, 0]
    assert lease.allowed and released is True


def test_many_concurrent_calls_admit_exactly_the_limit(server):
    async def main():
        pool = redis.asyncio.BlockingConnectionPool.from_url(server.url, max_connections=50)
        c = redis.asyncio.Redis(connection_pool=pool)
        limiter = redis_rl.AsyncLimiter(c)
        results = await asyncio.gather(*(limiter.fixed("crowd", 37, "1h") for _ in range(300)))
        await c.aclose()
        return results

    results = run(main())
    assert sum(d.allowed for d in results) == 37
    assert sorted(d.remaining for d in results if d.allowed) == list(range(37))
