"""`Limiter.top` and `AsyncLimiter.top`: RL.TOP's entries, typed, on the module."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio

from redis_rl import AsyncLimiter, Limiter, TopEntry


def test_top_lists_who_a_policy_and_a_command_denied(module_server):
    redis_url = module_server.url
    r = redis.Redis.from_url(redis_url)
    r.execute_command("RL.POLICY", "SET", "top:login", "FIXED", "1", "1h")
    r.delete("top:u1", "top:u2", "top:k")
    # The per-command summaries are the server's, shared by this worker's earlier tests (their
    # denials of spelled-out RL.FIXED calls can fill them): cleared, as RL.TOP's reset is.
    r.config_resetstat()
    limiter = Limiter(r, denial_cache=False)
    for key, n in (("top:u1", 4), ("top:u2", 2)):
        for _ in range(n):
            limiter.limit(key, "top:login")
    for _ in range(3):
        limiter.fixed("top:k", 1, "1h")
    assert limiter.top("top:login") == [TopEntry("top:u1", 3, 0), TopEntry("top:u2", 1, 0)]
    assert limiter.top("top:login", count=1) == [TopEntry("top:u1", 3, 0)]
    assert TopEntry("top:k", 2, 0) in limiter.top(command="rl.fixed")
    with pytest.raises(TypeError):
        limiter.top()
    with pytest.raises(Exception, match="no such policy"):
        limiter.top("top:nope")

    async def asynchronous() -> list[TopEntry]:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await AsyncLimiter(client, denial_cache=False).top("top:login")
        finally:
            await client.aclose()

    assert asyncio.run(asynchronous())[0] == TopEntry("top:u1", 3, 0)
    r.execute_command("RL.POLICY", "DEL", "top:login")
