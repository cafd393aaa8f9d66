"""How the package classifies what Redis answers (docs/nginx.md, "When Redis cannot decide"):
a server out of memory (`OOM`, maxmemory reached under noeviction) and a replica (`READONLY`,
as after a failover) cannot decide right now, like a server out of reach: 503, or let through
with fail_open. Any other error is a configuration to fix: 500 whatever fail_open says."""

from __future__ import annotations

import re
import time

import pytest
from conftest import BACKENDS, ROOT, Server, backend_id, custom_conf

LIBRARY = ROOT / "functions/rl.lua"
LAYER = '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }'


def limiter(port: int, options: str = "") -> str:
    return f'limiter = rl.new({{ redis = {{ port = {port} }}, {options} layers = {{ {LAYER} }} }})'


def closed_and_open(nginx_for, upstream, port: int):
    """Two NGINX on the server at `port`: fail closed, and fail_open."""
    return [nginx_for(lambda p, o=options: custom_conf(p, upstream.port, limiter(port, o)))
            for options in ("", "fail_open = true,")]


def rl_lines(n) -> list[str]:
    return [line for line in n.log().splitlines() if " rl: " in line]


def assert_unavailable(closed, opened, code: str, upstream) -> None:
    served = len(upstream.served)
    status, _, body = closed.get("/a")
    assert status == 503 and body == {"error": "rate limiter unavailable"}, (status, body, rl_lines(closed))
    assert len(upstream.served) == served
    # (where the library is missing, its load is what the server refused)
    said = rf"\(%s\): (loading the Functions library: )?{code} "
    assert re.search(said % "fail closed", closed.log()), rl_lines(closed)
    status, _, body = opened.get("/a")
    assert status == 200 and body == {"path": "/a"}, (status, body, rl_lines(opened))
    assert re.search(said % "fail_open", opened.log()), rl_lines(opened)


def out_of_memory(c) -> None:
    """maxmemory below the memory in use, nothing to evict: every write is refused with OOM."""
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory", max(1, int(c.info("memory")["used_memory"]) // 2))


def test_a_server_out_of_memory_is_unavailable(server, nginx_for, upstream):
    c = server.client()
    out_of_memory(c)
    try:
        # With the module its command is refused; without it the library's load (missing).
        closed, opened = closed_and_open(nginx_for, upstream, server.port)
        assert_unavailable(closed, opened, "OOM", upstream)
        if not server.with_module:  # and the library's call (there)
            c.config_set("maxmemory", 0)
            c.function_load(LIBRARY.read_text())
            out_of_memory(c)
            assert_unavailable(*closed_and_open(nginx_for, upstream, server.port), "OOM", upstream)
        assert c.keys("*") == []
    finally:
        c.config_set("maxmemory", 0)
    # Decisions resume (without the library, once the failed load's backoff has passed).
    deadline = time.monotonic() + 10
    while (status := closed.get("/a")[0]) == 503 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status == 200
    assert c.keys("*") == ["rl:ip:127.0.0.1"]


@pytest.mark.parametrize("flavor, with_module", BACKENDS, ids=map(backend_id, BACKENDS))
def test_a_replica_is_unavailable(nginx_for, upstream, flavor, with_module):
    # A replica the configuration still names after a failover: writes are refused READONLY,
    # the library there or not (its load is a write too).
    master = Server(flavor, with_module).start()
    replica = None
    try:
        replica = Server(flavor, with_module, ("--replicaof", "127.0.0.1", str(master.port))).start()
        r = replica.client()
        deadline = time.monotonic() + 15
        while r.info("replication")["master_link_status"] != "up":
            assert time.monotonic() < deadline, "the replica did not sync"
            time.sleep(0.05)
        closed, opened = closed_and_open(nginx_for, upstream, replica.port)
        assert_unavailable(closed, opened, "READONLY", upstream)
        if not with_module:
            master.client().function_load(LIBRARY.read_text())
            while not r.function_list():
                assert time.monotonic() < deadline, "the library did not reach the replica"
                time.sleep(0.05)
            a, b = closed_and_open(nginx_for, upstream, replica.port)
            assert_unavailable(a, b, "READONLY", upstream)
        assert r.keys("*") == []
        # Promoted, it decides.
        r.replicaof("no", "one")
        assert closed.get("/a")[0] == 200
    finally:
        if replica:
            replica.close()
        master.close()
