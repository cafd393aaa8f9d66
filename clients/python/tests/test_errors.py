"""The package's errors (redis_rl/errors.py), each case raised by real servers: a configuration
refused (before sending, by the module and by the library), a server nothing listens on or
that does not answer in time, a library missing that cannot be loaded, a foreign key. Each
stays the error it was (a ValueError, redis-py's), its cause redis-py's own."""

from __future__ import annotations

import asyncio
import pickle
import time
from datetime import timedelta

import pytest
import redis
import redis.asyncio
from conftest import free_port
from redis.backoff import NoBackoff
from redis.retry import Retry

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip


def cause(err: BaseException) -> BaseException:
    """The redis-py error behind `err`, which is none of the package's."""
    assert err.__cause__ is not None and not isinstance(err.__cause__, redis_rl.RateLimitError)
    return err.__cause__


def test_every_case_is_a_rate_limit_error_exported_from_the_package():
    cases = [redis_rl.ConfigurationError, redis_rl.ServerUnavailableError,
             redis_rl.LibraryUnavailableError, redis_rl.ForeignKeyError]
    assert all(issubclass(c, redis_rl.RateLimitError) for c in cases)
    assert issubclass(redis_rl.ConfigurationError, ValueError)
    assert set(redis_rl.__all__) >= {c.__name__ for c in [*cases, redis_rl.RateLimitError]}


def test_a_configuration_refused_before_sending(client):
    limiter = redis_rl.Limiter(client)
    with pytest.raises(redis_rl.ConfigurationError, match="limit is an int") as bad_type:
        limiter.fixed("k", True, "1m")
    assert isinstance(bad_type.value, TypeError)
    with pytest.raises(redis_rl.ConfigurationError, match="whole milliseconds") as bad_value:
        policy.fixed(1, timedelta(microseconds=1))
    assert isinstance(bad_value.value, ValueError) and not isinstance(bad_value.value, TypeError)
    with pytest.raises(redis_rl.ConfigurationError, match="cost is an int"):
        limiter.gcra("k", 10, "1s", cost=1.5)  # type: ignore[arg-type]
    with pytest.raises(redis_rl.ConfigurationError, match="at least one"):
        limiter.all([])
    with pytest.raises(redis_rl.ConfigurationError, match="at least one Layer"):
        RateLimitMiddleware(None, redis_rl.AsyncLimiter(client), [])  # type: ignore[arg-type]
    assert client.dbsize() == 0 and limiter.backend is None


#: Calls the server refuses for an argument, and a word of its refusal (the same text on the
#: module and the library).
REFUSED = [
    (lambda lim: lim.fixed("k", 0, "1m"), "limit must be an integer from 1 to 1000000000000"),
    (lambda lim: lim.gcra("k", 10, "1 minute"), "period must be a duration"),
    (lambda lim: lim.sliding_log("k", 200_000, "1m"), "limit must be an integer from 1 to 100000"),
    (lambda lim: lim.fixed("k", 5, "1m", cost=10**13), "COST must be an integer"),
    (lambda lim: lim.gcra("k", 10**9, "1ms"), "must be at most 1 per nanosecond"),
    (lambda lim: lim.acquire("k", 1, "30s", "x" * 300), "lease_id must be 1 to 256 bytes"),
]


@pytest.mark.parametrize("call,text", REFUSED, ids=[t for _, t in REFUSED])
def test_a_configuration_the_server_refuses(client, server, call, text):
    limiter = redis_rl.Limiter(client)
    with pytest.raises(redis_rl.ConfigurationError) as caught:
        call(limiter)
    err = caught.value
    assert isinstance(err, redis.ResponseError) and text in str(err)
    assert type(cause(err)) is redis.ResponseError and str(cause(err)) == str(err)
    # redis-py's attributes are set (its __repr__ reads them): repr() names the case.
    assert repr(err) == repr(cause(err)).replace("ResponseError", "ConfigurationError")
    assert limiter.backend == (redis_rl.MODULE if server.with_module else redis_rl.LIBRARY)
    assert client.dbsize() == 0


def test_the_asyncio_limiter_raises_the_same(server):
    async def main():
        c = redis.asyncio.Redis.from_url(server.url)
        limiter = redis_rl.AsyncLimiter(c)
        with pytest.raises(redis_rl.ConfigurationError, match="limit must be an integer"):
            await limiter.fixed("k", 0, "1m")
        await c.lpush("list", "x")
        with pytest.raises(redis_rl.ForeignKeyError, match="WRONGTYPE"):
            await limiter.fixed("list", 5, "1m")
        await c.aclose()
        down = redis_rl.AsyncLimiter(redis.asyncio.Redis(port=free_port()))
        with pytest.raises(redis_rl.ServerUnavailableError) as caught:
            await down.fixed("k", 5, "1m")
        assert isinstance(caught.value, redis.ConnectionError)
        await down.client.aclose()

    asyncio.run(main())


def test_a_server_nothing_listens_on_is_unavailable():
    limiter = redis_rl.Limiter(redis.Redis(port=free_port()))
    with pytest.raises(redis_rl.ServerUnavailableError) as caught:
        limiter.gcra("k", 10, "1s")
    err = caught.value
    assert isinstance(err, redis.ConnectionError) and "refused" in str(err).lower()
    assert type(cause(err)) is redis.ConnectionError
    assert limiter.backend is None
    with pytest.raises(redis_rl.ServerUnavailableError):
        limiter.load_library()


def test_a_server_that_does_not_answer_in_time_is_unavailable(servers):
    s = servers("redis", True)
    admin = redis.Redis(port=s.port)
    slow = redis.Redis(port=s.port, socket_timeout=0.2, retry=Retry(NoBackoff(), 0))
    slow.ping()  # connected before the pause: the call itself times out
    admin.client_pause(10_000, all=True)
    try:
        with pytest.raises(redis_rl.ServerUnavailableError) as caught:
            redis_rl.Limiter(slow).fixed("k", 5, "1m")
        assert isinstance(caught.value, redis.TimeoutError)
        assert type(cause(caught.value)) is redis.TimeoutError
    finally:
        admin.client_unpause()


@pytest.mark.parametrize("flavor", ["redis", "valkey"])
def test_a_library_an_acl_user_may_not_load_is_unavailable(servers, flavor):
    s = servers(flavor, False)
    admin = redis.Redis(port=s.port)
    admin.flushall()
    admin.function_flush()
    admin.acl_setuser("noload", enabled=True, passwords=["+pw"], keys=["*"],
                      commands=["+@all", "-function"], reset=True)
    try:
        limiter = redis_rl.Limiter(redis.Redis(port=s.port, username="noload", password="pw"))
        with pytest.raises(redis_rl.LibraryUnavailableError) as caught:
            limiter.fixed("k", 3, "1h")
        err = caught.value
        assert isinstance(err, redis.exceptions.NoPermissionError)  # what it was before
        assert "could not be loaded" in str(err) and "function" in str(cause(err)).lower()
        with pytest.raises(redis_rl.LibraryUnavailableError):
            limiter.load_library()
        with pytest.raises(redis_rl.LibraryUnavailableError, match="could not be loaded"):
            limiter.limit("k", "free")  # a call by a policy's name alike
        assert admin.dbsize() == 0 and admin.function_list() == []
    finally:
        admin.acl_deluser("noload")


def test_a_library_a_read_only_replica_cannot_load_is_unavailable(fresh_server):
    primary = fresh_server("redis", False)
    replica = fresh_server("redis", False, ("--replicaof", "127.0.0.1", str(primary.port)))
    c = redis.Redis(port=replica.port)
    deadline = time.monotonic() + 10
    while c.info("replication")["master_link_status"] != "up":
        assert time.monotonic() < deadline, "the replica did not connect"
        time.sleep(0.05)
    limiter = redis_rl.Limiter(c)
    with pytest.raises(redis_rl.ServerUnavailableError, match="could not be loaded") as caught:
        limiter.peek("k", policy.fixed(5, "1m"))  # READONLY: a failover may end it
    assert isinstance(caught.value, redis.exceptions.ReadOnlyError)
    assert type(cause(caught.value)) is redis.exceptions.ReadOnlyError
    assert limiter.backend == redis_rl.LIBRARY


def test_a_key_of_another_type_or_limiter_is_foreign(client, server):
    limiter = redis_rl.Limiter(client)
    client.lpush("list", "x")
    client.set("text", "hello")
    client.set("shaped", "fixed:not a state")
    limiter.gcra("gcra", 10, "1h")
    stored = client.get("gcra")
    for key, holds in [("list", "type"), ("text", "value"), ("shaped", "value"),
                       ("gcra", "limiter")]:
        with pytest.raises(redis_rl.ForeignKeyError) as caught:
            limiter.fixed(key, 5, "1m")
        err = caught.value
        assert (key, err.holds) == (key, holds)
        assert isinstance(err, redis.ResponseError) and type(cause(err)) is redis.ResponseError
    assert client.lrange("list", 0, -1) == [b"x"] and client.get("text") == b"hello"
    assert client.get("shaped") == b"fixed:not a state" and client.get("gcra") == stored


def test_an_error_pickles_as_its_case(client):
    client.lpush("list", "x")
    with pytest.raises(redis_rl.ForeignKeyError) as caught:
        redis_rl.Limiter(client).fixed("list", 5, "1m")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(copy, redis_rl.ForeignKeyError) and isinstance(copy, redis.ResponseError)
    assert (copy.holds, str(copy)) == ("type", str(caught.value))


def test_an_error_that_is_none_of_the_cases_is_raised_as_it_is(client, server):
    """A user who may not run the command: neither a configuration of the call nor a key, nor
    a server that cannot decide (with the library loaded first: a load the server refuses is
    a LibraryUnavailableError)."""
    if not server.with_module:
        redis_rl.Limiter(client).load_library()
    denied = "-rl.fixed" if server.with_module else "-fcall"  # (ACL knows loaded commands)
    client.acl_setuser("nocall", enabled=True, passwords=["+pw"], keys=["*"],
                       commands=["+@all", denied], reset=True)
    try:
        limiter = redis_rl.Limiter(redis.Redis(port=server.port, username="nocall", password="pw"))
        with pytest.raises(redis.exceptions.NoPermissionError) as caught:
            limiter.fixed("k", 5, "1m")
        assert not isinstance(caught.value, redis_rl.RateLimitError)
    finally:
        client.acl_deluser("nocall")


def test_the_asgi_middleware_raises_a_configuration_error(client):
    """A key of another type: the request fails with the ForeignKeyError (a 500 from the ASGI
    server), never let through, fail_open or not (tests/test_unavailable.py: a server that
    cannot decide is a 503)."""
    async def app(scope, receive, send):  # never reached
        raise AssertionError("the request passed")

    client.lpush("rl:ip:10.0.0.1", "x")

    async def main():
        c = redis.asyncio.Redis(port=client.connection_pool.connection_kwargs["port"])
        for fail_open in (False, True):
            mw = RateLimitMiddleware(app, redis_rl.AsyncLimiter(c),
                                     [Layer("ip", client_ip, policy.fixed(5, "1m"))],
                                     fail_open=fail_open)
            scope = {"type": "http", "path": "/", "headers": [], "client": ("10.0.0.1", 1)}
            with pytest.raises(redis_rl.ForeignKeyError):
                await mw(scope, None, None)  # type: ignore[arg-type]
        await c.aclose()

    asyncio.run(main())


def test_the_limits_storages_raise_as_limits_own_do(servers):
    """A refused limit is limits' ConfigurationError (from the package's); an unreachable
    server is the limiter's ServerUnavailableError, a redis-py ConnectionError as limits' own
    storage raises, wrapped in limits' StorageError under `wrap_exceptions`."""
    from limits import RateLimitItemPerMinute
    from limits.errors import ConfigurationError as LimitsConfigurationError
    from limits.errors import StorageError
    from limits.storage import storage_from_string
    from limits.strategies import MovingWindowRateLimiter

    s = servers("redis", True)
    storage = storage_from_string(f"rl+redis://127.0.0.1:{s.port}")
    with pytest.raises(LimitsConfigurationError) as refused:
        MovingWindowRateLimiter(storage).hit(RateLimitItemPerMinute(200_000), "big")
    assert isinstance(refused.value.__cause__, redis_rl.ConfigurationError)

    down = f"rl+redis://127.0.0.1:{free_port()}"
    with pytest.raises(redis_rl.ServerUnavailableError) as caught:
        MovingWindowRateLimiter(storage_from_string(down)).hit(RateLimitItemPerMinute(5), "a")
    assert isinstance(caught.value, redis.ConnectionError)
    wrapped = storage_from_string(down, wrap_exceptions=True)
    with pytest.raises(StorageError) as storage_error:
        MovingWindowRateLimiter(wrapped).hit(RateLimitItemPerMinute(5), "a")
    assert isinstance(storage_error.value.storage_error, redis_rl.ServerUnavailableError)
