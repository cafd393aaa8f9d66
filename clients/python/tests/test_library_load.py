"""The Functions library loaded once for concurrent first calls, and a failed load retried
only as the backoff allows (redis_rl/loading.py): 64 threads (and 64 asyncio tasks) calling
a library-less Redis or Valkey at once make exactly one `FUNCTION LOAD` and get no error; a
load refused for memory (`OOM`, with `maxmemory` just above the used memory and `noeviction`)
is tried again only after 1 s, then 2 s, and a success ends the backoff. The loads are
counted by the server (`INFO commandstats`: cmdstat_function|load, refused ones included)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
import redis.asyncio

import redis_rl
from redis_rl import policy

WINDOW = policy.fixed(1000, "1h")
CALLERS = 64


def loads(c: redis.Redis) -> int:
    """`FUNCTION LOAD`s the server has had, refused and failed ones included."""
    stat = c.info("commandstats").get("cmdstat_function|load", {})
    return sum(stat.get(k, 0) for k in ("calls", "rejected_calls", "failed_calls"))


@pytest.mark.parametrize("flavor", ["redis", "valkey"])
def test_concurrent_first_calls_load_the_library_once(fresh_server, flavor):
    s = fresh_server(flavor, False)
    admin = redis.Redis(port=s.port)
    client = redis.Redis(port=s.port)

    def first_call(i: int) -> bool:
        return redis_rl.Limiter(client).fixed(f"k{i}", 1000, "1h").allowed

    with ThreadPoolExecutor(CALLERS) as pool:
        assert all(pool.map(first_call, range(CALLERS)))
    assert loads(admin) == 1

    async def main() -> list[bool]:
        aio = redis.asyncio.Redis(port=s.port)
        decided = await asyncio.gather(*(redis_rl.AsyncLimiter(aio).fixed(f"a{i}", 1000, "1h")
                                         for i in range(CALLERS)))
        await aio.aclose()
        return [d.allowed for d in decided]

    admin.function_flush()  # missing again: one more load, by one of the tasks
    assert asyncio.run(main()) == [True] * CALLERS
    assert loads(admin) == 2


def out_of_memory(c: redis.Redis) -> None:
    """`maxmemory` just above what the server uses: a 180 KB library does not fit."""
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory", c.info("memory")["used_memory"] + 60_000)


def refused_for_memory(calls) -> None:
    """Each of `calls` raised the failed load's error: unavailable, the server's OOM."""
    for outcome in calls:
        assert isinstance(outcome, redis_rl.ServerUnavailableError), repr(outcome)
        assert isinstance(outcome, redis.exceptions.OutOfMemoryError)
        assert "could not be loaded" in str(outcome) and "maxmemory" in str(outcome)


def attempt(limiter_of, n: int) -> list[BaseException | bool]:
    """`n` first calls at once, each by a new limiter: their outcomes."""
    def one(i: int) -> BaseException | bool:
        try:
            return limiter_of().fixed(f"k{i}", 1000, "1h").allowed
        except redis.RedisError as err:
            return err

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def test_a_failed_load_is_tried_again_only_as_the_backoff_allows(fresh_server):
    s = fresh_server("redis", False)
    admin = redis.Redis(port=s.port)
    client = redis.Redis(port=s.port)
    out_of_memory(admin)

    refused_for_memory(attempt(lambda: redis_rl.Limiter(client), CALLERS))
    assert loads(admin) == 1  # one load, refused; the others waited for it
    first_failure = time.monotonic()
    refused_for_memory(attempt(lambda: redis_rl.Limiter(client), 8))
    assert loads(admin) == 1  # backing off for 1 s: no load

    time.sleep(max(0.0, first_failure + 1.1 - time.monotonic()))
    refused_for_memory(attempt(lambda: redis_rl.Limiter(client), 8))
    assert loads(admin) == 2  # the 1 s passed: one load, refused again
    second_failure = time.monotonic()
    time.sleep(1.1)
    refused_for_memory(attempt(lambda: redis_rl.Limiter(client), 8))
    assert loads(admin) == 2  # now 2 s

    admin.config_set("maxmemory", 0)
    time.sleep(max(0.0, second_failure + 2.1 - time.monotonic()))
    assert attempt(lambda: redis_rl.Limiter(client), 8) == [True] * 8
    assert loads(admin) == 3  # loaded: the backoff is over
    admin.function_flush()
    assert redis_rl.Limiter(client).fixed("again", 1000, "1h").allowed
    assert loads(admin) == 4  # at once, with no backoff left


def test_the_asyncio_limiter_backs_off_alike(fresh_server):
    s = fresh_server("valkey", False)
    admin = redis.Redis(port=s.port)
    out_of_memory(admin)

    async def calls(n: int) -> list[BaseException | bool]:
        aio = redis.asyncio.Redis(port=s.port)
        outcomes = await asyncio.gather(
            *(redis_rl.AsyncLimiter(aio).fixed(f"k{i}", 1000, "1h") for i in range(n)),
            return_exceptions=True)
        await aio.aclose()
        return [o if isinstance(o, BaseException) else o.allowed for o in outcomes]

    refused_for_memory(asyncio.run(calls(CALLERS)))
    assert loads(admin) == 1
    failure = time.monotonic()
    refused_for_memory(asyncio.run(calls(8)))
    assert loads(admin) == 1
    admin.config_set("maxmemory", 0)
    time.sleep(max(0.0, failure + 1.1 - time.monotonic()))
    assert asyncio.run(calls(8)) == [True] * 8
    assert loads(admin) == 2
