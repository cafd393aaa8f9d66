"""Redis Cluster through redis-py's cluster clients: each key's call goes to its node, the
library is loaded on every primary, and `all` takes keys that share a hash tag."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio.cluster
from redis.cluster import RedisCluster

import redis_rl
from redis_rl import policy


def test_keys_on_every_node_are_decided_there(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster.port)
    limiter = redis_rl.Limiter(rc)
    keys = [f"user:{i}" for i in range(30)]  # spread over the three masters' slots
    for key in keys:
        assert limiter.fixed(key, 2, "1h").remaining == 1
    backend = redis_rl.MODULE if cluster.nodes[0].with_module else redis_rl.LIBRARY
    assert limiter.backend == backend
    assert {rc.keyslot(k) // 5462 for k in keys} == {0, 1, 2}
    for key in keys:
        assert rc.get(key) is not None  # each state lives on its key's node
    assert [limiter.fixed(k, 2, "1h").remaining for k in keys] == [0] * 30
    if backend == redis_rl.LIBRARY:  # the library was loaded on every primary
        assert all(redis.Redis(port=n.port).function_list() for n in cluster.nodes)
    rc.close()


def test_all_takes_keys_with_one_hash_tag_and_refuses_others(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster.port)
    limiter = redis_rl.Limiter(rc)
    layers = [("rl:{acme}:ip", policy.gcra(10, "1s", 5)), ("rl:{acme}:plan", policy.fixed(3, "1m"))]
    assert [d.remaining for d in limiter.all(layers).layers] == [4, 2]
    with pytest.raises(redis.ResponseError, match="same slot"):
        limiter.all([("rl:{a}:x", policy.fixed(3, "1m")), ("rl:{b}:y", policy.fixed(3, "1m"))])
    rc.close()


def test_the_asyncio_cluster_client(cluster):
    async def main():
        rc = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.port)
        limiter = redis_rl.AsyncLimiter(rc)
        got = [await limiter.sliding(f"k{i}", 1, "1m") for i in range(12)]
        again = [await limiter.sliding(f"k{i}", 1, "1m") for i in range(12)]
        both = await limiter.all([("{t}a", policy.fixed(1, "1m")), ("{t}b", policy.fixed(1, "1m"))])
        await rc.aclose()
        return got, again, both

    got, again, both = asyncio.run(main())
    assert all(d.allowed for d in got) and not any(d.allowed for d in again)
    assert both.allowed


def fresh_calls():
    """Every method's first call, as (name, call of an AsyncLimiter)."""
    fixed = policy.fixed(2, "1m")
    return [
        ("all", lambda lim: lim.all([("rl:{t}:a", policy.fixed(1, "1m")), ("rl:{t}:b", fixed)])),
        ("gcra", lambda lim: lim.gcra("g", 10, "1s", burst=5)),
        ("token_bucket", lambda lim: lim.token_bucket("tb", 5, 1, "1s")),
        ("leaky", lambda lim: lim.leaky("lk", 5, 1, "1s")),
        ("sliding", lambda lim: lim.sliding("sl", 2, "1m")),
        ("sliding_log", lambda lim: lim.sliding_log("sg", 2, "1m")),
        ("fixed", lambda lim: lim.fixed("fx", 2, "1m")),
        ("decide", lambda lim: lim.decide("dc", fixed)),
        ("refund", lambda lim: lim.refund("rf", fixed, 1)),
        ("peek", lambda lim: lim.peek("pk", fixed)),
        ("acquire", lambda lim: lim.acquire("lease", 2, "1m", "a")),
        ("release", lambda lim: lim.release("lease2", "a")),
    ]


@pytest.mark.parametrize("name,call", fresh_calls(), ids=[n for n, _ in fresh_calls()])
def test_every_call_works_first_on_a_fresh_asyncio_cluster_client(cluster, name, call):
    """A fresh asyncio cluster client knows no slots until it is initialised: RL.ALL and
    FCALL, which the limiter routes itself, initialise it first (they raised
    SlotNotCoveredError until another command had)."""

    async def main():
        rc = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.port)
        try:
            return await call(redis_rl.AsyncLimiter(rc))
        finally:
            await rc.aclose()

    got = asyncio.run(main())
    if name == "release":
        assert got is False
    elif name == "all":
        assert got.allowed and [d.remaining for d in got.layers] == [0, 1]
    else:
        assert got.allowed

