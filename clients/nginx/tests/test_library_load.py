"""The Functions library's load, on a server with neither the module nor the library: one load
at a time per NGINX (across its workers with `shared_dict`; without it, per worker), the
requests that find a load under way waiting for it; and after a failed load, no new one for
1 s, then 2, 4 ... up to 30 s, reset by a success, while requests answer as the failed load's
error is classified (docs/nginx.md, "The Functions library")."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from conftest import burst, custom_conf

LIBRARY_LESS = [("redis", False), ("valkey", False)]
SHARED = 'lua_shared_dict rl 1m;'


def limiter(port: int, options: str = "", redis: str = "") -> str:
    return (f'limiter = rl.new({{ redis = {{ port = {port}, {redis} }}, {options} '
            'layers = { { name = "ip", by = "ip", policy = "FIXED 100000 1h" } } })')


# For 128 requests at once on a test machine whose 2 cores other work may hold: a timeout that
# no load nor wait reaches (what is counted is loads and 503s).
PATIENT = "timeout_ms = 3000"


def loads(c) -> int:
    """FUNCTION LOAD calls the server received, refused ones included."""
    stats = c.info("commandstats").get("cmdstat_function|load", {})
    return sum(int(stats.get(field, 0)) for field in ("calls", "rejected_calls", "failed_calls"))


@pytest.fixture(params=LIBRARY_LESS, ids=lambda p: p[0])
def bare(request, servers):
    """A server without the module, emptied of keys and of the library, its counts reset."""
    s = servers(*request.param)
    c = s.client()
    c.flushall()
    c.function_flush()
    c.config_resetstat()
    return s


def test_concurrent_first_requests_make_one_load(bare, nginx_for, upstream):
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(bare.port, 'shared_dict = "rl",', PATIENT),
                                           http=SHARED, workers=4))
    statuses = burst([n], "/a", {}, clients=128)
    errors = [line for line in n.log().splitlines() if "[error]" in line]
    assert statuses == [200] * 128, (Counter(statuses), errors[:3])
    assert loads(bare.client()) == 1
    assert n.log().count("rl: loaded the Functions library") == 1


def test_without_a_shared_dict_each_worker_loads_once_at_most(bare, nginx_for, upstream):
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(bare.port, redis=PATIENT), workers=4))
    assert burst([n], "/a", {}, clients=128) == [200] * 128
    assert 1 <= loads(bare.client()) <= 4


def requests_for(n, seconds: float) -> list[int]:
    """The statuses of requests sent one after another for `seconds`."""
    began, statuses = time.monotonic(), []
    while time.monotonic() - began < seconds:
        statuses.append(n.get("/a")[0])
    return statuses


def test_a_failed_load_is_tried_again_only_after_its_backoff(bare, nginx_for, upstream):
    c = bare.client()
    closed = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(bare.port, 'shared_dict = "rl",'),
                                                http=SHARED))
    c.config_set("maxmemory-policy", "noeviction")
    try:
        c.config_set("maxmemory", 1)  # every write refused with OOM, FUNCTION LOAD among them
        # Loads at 0 s and after 1 s, the next not before 2 s more: 2 in 2.5 s.
        statuses = requests_for(closed, 2.5)
        assert set(statuses) == {503} and len(statuses) > 10
        assert loads(c) == 2
        log = closed.log()
        assert "fail closed): loading the Functions library: OOM command not allowed" in log
        assert "fail closed): the Functions library's load failed (OOM command not allowed" in log
        # Memory back: the next load after the backoff succeeds, and decisions resume.
        c.config_set("maxmemory", 0)
        deadline = time.monotonic() + 10
        while (status := closed.get("/a")[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200
        before = loads(c)
        assert before == 3
        # A success resets the backoff: after the next failure, 1 s again (not 8).
        c.function_flush()
        c.config_set("maxmemory", 1)
        assert set(requests_for(closed, 2.5)) == {503}
        assert loads(c) - before == 2
    finally:
        c.config_set("maxmemory", 0)


def test_fail_open_lets_requests_through_while_the_load_backs_off(bare, nginx_for, upstream):
    c = bare.client()
    opened = nginx_for(lambda port: custom_conf(
        port, upstream.port, limiter(bare.port, 'shared_dict = "rl", fail_open = true,'), http=SHARED))
    c.config_set("maxmemory-policy", "noeviction")
    try:
        c.config_set("maxmemory", 1)
        assert set(requests_for(opened, 0.5)) == {200}
        assert loads(c) == 1
        assert "request let through (fail_open): the Functions library's load failed" in opened.log()
    finally:
        c.config_set("maxmemory", 0)


def test_a_load_the_user_may_not_run_is_a_configuration_error(bare, nginx_for, upstream):
    # NOPERM: a 500 even with fail_open, for the load and for the requests of its backoff.
    c = bare.client()
    c.execute_command("ACL", "SETUSER", "edge", "on", ">edge-pw", "~*", "+@all", "-function")
    try:
        n = nginx_for(lambda port: custom_conf(port, upstream.port, (
            f'limiter = rl.new({{ redis = {{ port = {bare.port}, username = "edge", password = "edge-pw" }}, '
            'shared_dict = "rl", fail_open = true, '
            'layers = { { name = "ip", by = "ip", policy = "FIXED 100 1h" } } })'), http=SHARED))
        assert [n.get("/a")[0] for _ in range(3)] == [500] * 3
        assert loads(c) == 1
        log = n.log()
        assert "rl: request refused with 500: loading the Functions library: NOPERM" in log
        assert "rl: request refused with 500: the Functions library's load failed (NOPERM" in log
    finally:
        c.execute_command("ACL", "DELUSER", "edge")
