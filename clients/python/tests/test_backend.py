"""The module or the library, transparently: the library is loaded where it is missing and
loaded again, once, when it vanished; a server swapped under the client (a failover, a
restart) is followed; what cannot be loaded is a clear error, not an open door."""

from __future__ import annotations

import redis

import redis_rl
from redis_rl.backend import library_source

ROOT_LIBRARY = "functions/rl.lua"


def libraries(c: redis.Redis) -> list[bytes]:
    """The names of the loaded libraries (`FUNCTION LIST` in RESP2: flat field lists)."""
    return [dict(zip(lib[::2], lib[1::2]))[b"library_name"] for lib in c.function_list()]


def test_the_shipped_library_is_the_repository_library():
    from conftest import ROOT

    assert library_source() == (ROOT / ROOT_LIBRARY).read_text()


def test_the_library_is_loaded_where_missing_and_again_after_a_flush(servers):
    s = servers("redis", False)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    limiter = redis_rl.Limiter(c)
    assert limiter.fixed("k", 3, "1h").remaining == 2
    assert limiter.backend == redis_rl.LIBRARY
    assert libraries(c) == [b"rl"]
    c.function_flush()  # an operator's FUNCTION FLUSH: the state stays, the code goes
    d = limiter.fixed("k", 3, "1h")
    assert (d.remaining, d.backend) == (1, redis_rl.LIBRARY)
    assert libraries(c) == [b"rl"]


def test_a_library_that_cannot_be_loaded_is_an_error(servers):
    s = servers("redis", False)
    admin = redis.Redis(port=s.port)
    admin.flushall()
    admin.function_flush()
    admin.acl_setuser("noload", enabled=True, passwords=["+pw"], keys=["*"],
                      commands=["+@all", "-function"], reset=True)
    try:
        c = redis.Redis(port=s.port, username="noload", password="pw")
        limiter = redis_rl.Limiter(c)
        try:
            limiter.fixed("k", 3, "1h")
            raise AssertionError("a decision without the library")
        except redis.exceptions.NoPermissionError as err:
            assert "function" in str(err).lower()
        assert admin.dbsize() == 0
    finally:
        admin.acl_deluser("noload")


def test_a_failover_to_a_server_without_the_module_moves_to_the_library(fresh_server):
    s = fresh_server("redis", True)
    c = redis.Redis(port=s.port, retry_on_error=[redis.exceptions.ConnectionError])
    limiter = redis_rl.Limiter(c)
    assert limiter.sliding("k", 5, "1m").backend == redis_rl.MODULE
    # The same address now answers without the module (and without the library).
    s.with_module = False
    s.restart()
    d = limiter.sliding("k", 5, "1m")
    assert (d.allowed, d.remaining, d.backend) == (True, 4, redis_rl.LIBRARY)
    # And back to a server with the module but without the library: the library is loaded
    # there, and keeps answering (its state formats are the module's).
    s.with_module = True
    s.restart()
    d = limiter.sliding("k", 5, "1m")
    assert (d.allowed, d.remaining, d.backend) == (True, 4, redis_rl.LIBRARY)


def test_a_restart_keeps_the_state_the_server_kept(fresh_server):
    s = fresh_server("redis", True, ("--appendonly", "yes", "--appendfsync", "always"))
    limiter = redis_rl.Limiter(redis.Redis(port=s.port, retry_on_error=[
        redis.exceptions.ConnectionError]))
    for _ in range(3):
        limiter.fixed("k", 5, "1h")
    s.restart()
    assert limiter.fixed("k", 5, "1h").remaining == 1
