"""Errors in two classes, as the Node and NGINX packages classify them (docs/python.md,
"Errors"): "unavailable" (no connection, a timeout, and the codes LOADING, BUSY, MASTERDOWN,
CLUSTERDOWN, TRYAGAIN, OOM, READONLY) is a ServerUnavailableError, which the ASGI middleware
answers 503 or, with fail_open, lets through; any other error is a configuration's, answered
500 whatever fail_open says. From real servers: out of memory (maxmemory just above the used
memory, noeviction), a replica the client points at, a script keeping the server busy, a
server nothing listens on, a policy the server does not hold, a key of another type, a user
without the permission; on Redis 7.0 and Valkey 9.1, with the module and the library."""

from __future__ import annotations

import contextlib
import threading
import time

import httpx
import pytest
import redis
import redis.asyncio
from apps import app_with, served_asgi
from conftest import BACKENDS, backend_id, free_port
from redis._parsers.base import BaseParser

import redis_rl
from redis_rl import policy
from redis_rl._facts import UNAVAILABLE_CODES
from redis_rl.asgi import Layer, client_ip
from redis_rl.classify import classify

LAYERS = [Layer("ip", client_ip, policy.fixed(100, "1h"))]
UNAVAILABLE_BODY = {"error": "rate limiter unavailable"}


@pytest.mark.parametrize("reply", [
    "LOADING Redis is loading the dataset in memory",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.",
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    "CLUSTERDOWN The cluster is down",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "OOM command not allowed when used memory > 'maxmemory'.",
    "READONLY You can't write against a read only replica.",
])
def test_every_unavailable_code_is_a_server_unavailable_error(reply):
    """Each error redis-py makes of such a reply (its own class, the code dropped or not)."""
    assert reply.split()[0] in UNAVAILABLE_CODES
    err = BaseParser.parse_error(reply)
    assert isinstance(classify(err), redis_rl.ServerUnavailableError)
    assert isinstance(classify(err), type(err))


@pytest.mark.parametrize("reply", [
    "ERR no such policy 'gold'", "ERR unknown command 'RL.NOPE'",
    "WRONGTYPE Operation against a key holding the wrong kind of value",
    "NOPERM this user has no permissions to run the 'rl.all' command",
    "NOAUTH Authentication required.", "WRONGPASS invalid username-password pair",
    "CROSSSLOT Keys in request don't hash to the same slot", "EXECABORT Transaction discarded",
])
def test_any_other_error_is_not_unavailable(reply):
    assert not isinstance(classify(BaseParser.parse_error(reply)),
                          redis_rl.ServerUnavailableError)


@contextlib.contextmanager
def middleware(client, fail_open: bool):
    """A FastAPI app behind the middleware on `client`, served: a function GETting `/`."""
    with served_asgi(app_with(client, LAYERS, fail_open=fail_open)) as base:
        yield lambda: httpx.get(base + "/", timeout=10)


def answers(url: str) -> tuple[tuple[int, dict], int]:
    """(status, JSON body) of the middleware on `url` failing closed, and the status with
    fail_open."""
    with middleware(redis.asyncio.Redis.from_url(url), False) as get:
        closed = get()
    with middleware(redis.asyncio.Redis.from_url(url), True) as get:
        opened = get()
    return (closed.status_code, closed.json()), opened.status_code


def out_of_memory(c: redis.Redis) -> None:
    """`maxmemory` just above the used memory, then values written until a write is refused,
    then the ballast's 200 KB more (`maxmemory` lowered by as much): every write is refused
    from then on, whatever the memory the server frees meanwhile."""
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory", c.info("memory")["used_memory"] + 60_000)
    for i in range(100):
        try:
            c.set(f"ballast:{i}", "x" * 10_000)
        except redis.exceptions.OutOfMemoryError:
            c.config_set("maxmemory", c.info("memory")["used_memory"] - 200_000)
            return
    raise AssertionError("the memory was never full")


@pytest.fixture(params=BACKENDS, ids=backend_id)
def loaded(request, fresh_server):
    """A server of its own per backend, the library loaded where there is no module."""
    s = fresh_server(*request.param)
    c = redis.Redis(port=s.port)
    if not s.with_module:
        redis_rl.Limiter(c).load_library()
    yield s, c
    c.close()


def test_out_of_memory_is_unavailable(loaded):
    s, c = loaded
    out_of_memory(c)
    with pytest.raises(redis_rl.ServerUnavailableError) as caught:
        redis_rl.Limiter(redis.Redis(port=s.port)).fixed("k", 5, "1m")
    assert isinstance(caught.value, redis.exceptions.OutOfMemoryError)
    assert "maxmemory" in str(caught.value)
    assert answers(s.url) == ((503, UNAVAILABLE_BODY), 200)
    c.config_set("maxmemory", 0)
    assert answers(s.url) == ((200, {"ok": True}), 200)


def replica_of(fresh_server, primary, with_module: bool):
    replica = fresh_server(primary.flavor, with_module,
                           ("--replicaof", "127.0.0.1", str(primary.port)))
    c = redis.Redis(port=replica.port)
    deadline = time.monotonic() + 10
    while c.info("replication")["master_link_status"] != "up":
        assert time.monotonic() < deadline, "the replica did not connect"
        time.sleep(0.05)
    return replica, c


@pytest.mark.parametrize("flavor", ["redis", "valkey"])
@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_a_replica_the_client_points_at_is_unavailable(fresh_server, flavor, with_module):
    primary = fresh_server(flavor, with_module)
    if not with_module:  # the library, replicated
        redis_rl.Limiter(redis.Redis(port=primary.port)).load_library()
    replica, c = replica_of(fresh_server, primary, with_module)
    deadline = time.monotonic() + 10
    while not with_module and not c.function_list():
        assert time.monotonic() < deadline, "the library did not reach the replica"
        time.sleep(0.05)
    with pytest.raises(redis_rl.ServerUnavailableError) as caught:
        redis_rl.Limiter(c).fixed("k", 5, "1m")
    assert isinstance(caught.value, redis.exceptions.ReadOnlyError)
    assert answers(replica.url) == ((503, UNAVAILABLE_BODY), 200)
    # Where the library is missing there too, its load is refused alike: unavailable.
    if not with_module:
        redis.Redis(port=primary.port).function_flush()
        deadline = time.monotonic() + 10
        while c.function_list():
            assert time.monotonic() < deadline, "the flush did not reach the replica"
            time.sleep(0.05)
        with pytest.raises(redis_rl.ServerUnavailableError, match="could not be loaded"):
            redis_rl.Limiter(redis.Redis(port=replica.port)).fixed("k", 5, "1m")
        assert answers(replica.url) == ((503, UNAVAILABLE_BODY), 200)


def test_a_server_busy_with_a_script_is_unavailable(fresh_server):
    s = fresh_server("redis", True, ("--busy-reply-threshold", "50"))
    busy = threading.Thread(target=_spin, args=(s.port,), daemon=True)
    busy.start()
    try:
        c = redis.Redis(port=s.port)
        deadline = time.monotonic() + 10
        while True:  # until the script has run past the threshold
            try:
                c.ping()
            except redis.exceptions.ResponseError as err:
                assert str(err).startswith("BUSY")
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(redis_rl.ServerUnavailableError, match="BUSY"):
            redis_rl.Limiter(c).fixed("k", 5, "1m")
        assert answers(s.url) == ((503, UNAVAILABLE_BODY), 200)
    finally:
        redis.Redis(port=s.port).script_kill()
        busy.join(10)


def _spin(port: int) -> None:
    """A script that runs until SCRIPT KILL."""
    with contextlib.suppress(redis.exceptions.ResponseError):
        redis.Redis(port=port, socket_timeout=30).eval("while true do end", 0)


def test_a_server_nothing_listens_on_is_unavailable():
    assert answers(f"redis://127.0.0.1:{free_port()}") == ((503, UNAVAILABLE_BODY), 200)


@contextlib.contextmanager
def failing(client, layers, fail_open: bool):
    with served_asgi(app_with(client, layers, fail_open=fail_open)) as base:
        yield lambda: httpx.get(base + "/", timeout=10).status_code


def test_a_configuration_error_is_a_500_whatever_fail_open_says(server, client):
    client.set("rl:ip:127.0.0.1", "not a limiter's")
    layers = {
        "no such policy": [Layer("ip", client_ip, "gold")],
        "a key of another type": [Layer("ip", client_ip, policy.fixed(5, "1m"))],
    }
    for fail_open in (False, True):
        for name, given in layers.items():
            with failing(redis.asyncio.Redis.from_url(server.url), given, fail_open) as get:
                assert get() == 500, (name, fail_open)
    assert client.get("rl:ip:127.0.0.1") == b"not a limiter's"


def test_a_user_without_the_permission_is_a_500_whatever_fail_open_says(server, client):
    denied = ["-rl.all"] if server.with_module else ["-fcall"]  # (ACL knows loaded commands)
    client.acl_setuser("nope", enabled=True, passwords=["+pw"], keys=["*"],
                       commands=["+@all", *denied], reset=True)
    try:
        url = f"redis://nope:pw@127.0.0.1:{server.port}/0"
        for fail_open in (False, True):
            with failing(redis.asyncio.Redis.from_url(url), LAYERS, fail_open) as get:
                assert get() == 500
    finally:
        client.acl_deluser("nope")
