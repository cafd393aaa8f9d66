"""The example nginx.conf on a three-master Redis Cluster, with the module and without it: the
package routes each request to its keys' master (lua-resty-redis does not), follows MOVED,
and loads the library on each master that lacks it."""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis
from conftest import Cluster, burst, example_conf

FREE = {"X-API-Key": "free-key"}


@pytest.fixture(scope="module")
def clusters():
    started: dict[bool, Cluster] = {}
    yield lambda with_module: started.get(with_module) or started.setdefault(
        with_module, Cluster(with_module))
    for c in started.values():
        c.close()


@pytest.fixture(params=[True, False], ids=["module", "library"])
def cluster(request, clusters) -> Cluster:
    c = clusters(request.param)
    for n in c.nodes:
        node = redis.Redis(port=n.port)
        node.flushall()
        node.function_flush()
    return c


def cluster_conf(cluster: Cluster, upstream: int, port: int) -> str:
    """The example, its Redis a cluster (two seed nodes of three) and every key of a request
    tagged by its API key."""
    seeds = ", ".join(f'{{ host = "127.0.0.1", port = {n.port} }}' for n in cluster.nodes[:2])
    return example_conf(f"local redis = {{ cluster = {{ {seeds} }} }}", upstream, port,
                        options='tag = "key", ')


def owner(cluster: Cluster, slot: int) -> int:
    """The index in `cluster.nodes` of the master serving `slot`."""
    for lo, hi, master, *_ in redis.Redis(port=cluster.nodes[0].port).execute_command("CLUSTER SLOTS"):
        if lo <= slot <= hi:
            return next(i for i, n in enumerate(cluster.nodes) if n.port == master[1])
    raise AssertionError(f"no master serves slot {slot}")


def slot_of(cluster: Cluster, key: str) -> int:
    return redis.Redis(port=cluster.nodes[0].port).execute_command("CLUSTER KEYSLOT", key)


def test_60_concurrent_clients_admit_exactly_the_limit_on_a_cluster(cluster, nginx_for, upstream):
    n = nginx_for(lambda port: cluster_conf(cluster, upstream.port, port))
    statuses = burst([n], "/export", FREE)
    assert sorted(statuses) == [200] * 10 + [429] * 50, n.log()
    # Every key of the request lives in the API key's slot, on that slot's master.
    node = redis.Redis(port=cluster.nodes[owner(cluster, slot_of(cluster, "free-key"))].port,
                       decode_responses=True)
    assert set(node.keys("rl:*")) >= {"rl:{free-key}:key:free-key", "rl:{free-key}:export:free-key"}


def test_a_moved_slot_is_followed_with_its_state(cluster, nginx_for, upstream):
    n = nginx_for(lambda port: cluster_conf(cluster, upstream.port, port))
    assert [n.get("/export", FREE)[0] for _ in range(6)] == [200] * 6
    # Move the API key's slot, with its keys, to another master (as redis-cli --cluster
    # reshard does): the package's map still names the old one.
    slot = slot_of(cluster, "free-key")
    src = cluster.nodes[owner(cluster, slot)]
    dst = next(x for x in cluster.nodes if x is not src)
    s, d = redis.Redis(port=src.port), redis.Redis(port=dst.port)
    src_id, dst_id = s.execute_command("CLUSTER MYID"), d.execute_command("CLUSTER MYID")
    d.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    s.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    keys = s.execute_command("CLUSTER GETKEYSINSLOT", slot, 100)
    assert keys
    s.execute_command("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS", *keys)
    for node in cluster.nodes:
        redis.Redis(port=node.port).execute_command("CLUSTER SETSLOT", slot, "NODE", dst_id)
    statuses = [n.get("/export", FREE)[0] for _ in range(6)]
    assert statuses == [200] * 4 + [429] * 2, n.log()


def test_a_master_out_of_reach_fails_closed_then_decisions_resume(cluster, nginx_for, upstream):
    n = nginx_for(lambda port: cluster_conf(cluster, upstream.port, port))
    assert n.get("/export", FREE)[0] == 200
    node = cluster.nodes[owner(cluster, slot_of(cluster, "free-key"))]
    node.stop()  # its slots are served by no one: no replica here
    try:
        status, _, body = n.get("/export", FREE)
        assert status == 503 and body == {"error": "rate limiter unavailable"}
        assert "rl: Redis unavailable, request refused with 503 (fail closed)" in n.log()
    finally:
        node.start()  # the same port and nodes.conf: it rejoins as the slots' master
    deadline = time.monotonic() + 30
    while redis.Redis(port=cluster.nodes[0].port).cluster("info")["cluster_state"] != "ok":
        assert time.monotonic() < deadline, "the cluster did not recover"
        time.sleep(0.1)
    # The restarted master lost its keys (no persistence) and, without the module, its library.
    statuses = burst([n], "/export", FREE)
    assert sorted(statuses) == [200] * 10 + [429] * 50, n.log()


def test_a_silent_master_fails_closed_within_the_timeout(cluster, nginx_for, upstream):
    n = nginx_for(lambda port: cluster_conf(cluster, upstream.port, port))
    assert n.get("/export", FREE)[0] == 200
    node = cluster.nodes[owner(cluster, slot_of(cluster, "free-key"))]
    os.kill(node.proc.pid, signal.SIGSTOP)  # connected, and silent
    try:
        began = time.monotonic()
        assert n.get("/export", FREE)[0] == 503
        assert time.monotonic() - began < 1.5  # timeout_ms is 500: the command is not sent again
        assert "timeout" in n.log()
    finally:
        os.kill(node.proc.pid, signal.SIGCONT)
    assert n.get("/export", FREE)[0] == 200


def test_a_server_without_cluster_support_named_as_a_seed_is_an_error(servers, nginx_for, upstream):
    # Not a Redis out of reach: a configuration to fix, refused with 500 even with fail_open.
    server = servers("redis", True)
    seeds = f'{{ host = "127.0.0.1", port = {server.port} }}'
    n = nginx_for(lambda port: example_conf(f"local redis = {{ cluster = {{ {seeds} }} }}", upstream.port, port,
                                            options='tag = "key", fail_open = true, '))
    assert n.get("/export", FREE)[0] == 500
    assert "cluster slots: ERR This instance has cluster support disabled" in n.log()
