"""The example nginx.conf (clients/nginx/examples/nginx.conf), served by real NGINX in front of
a real upstream, driven over HTTP on Redis and Valkey, with the module and without it (the
Functions library, loaded by the package where missing)."""

from __future__ import annotations

from collections import Counter
from urllib.request import urlopen

from conftest import Server, burst, example_conf, free_port

FREE = {"X-API-Key": "free-key"}


def redis_at(port: int) -> str:
    return f'local redis = {{ host = "127.0.0.1", port = {port} }}'


def start_example(nginx_for, upstream, server, **kw):
    return nginx_for(lambda port: example_conf(redis_at(server.port), upstream.port, port, **kw))


def test_an_admitted_request_reaches_the_upstream_with_the_binding_layers_headers(
        server, nginx_for, upstream):
    n = start_example(nginx_for, upstream, server)
    status, headers, body = n.get("/hello", FREE)
    assert status == 200 and body == {"path": "/hello"}
    # The address layer binds: 19 of its burst of 20 left, against 59 of the plan's 60.
    assert headers["x-ratelimit-limit"] == "20"
    assert headers["x-ratelimit-remaining"] == "19"
    assert headers["x-ratelimit-reset"] == "1"
    assert headers["ratelimit-policy"] == '"ip";q=100;w=1'
    assert headers["ratelimit"] == '"ip";r=19;t=1'
    assert "retry-after" not in headers
    keys = server.client().keys("*")
    assert "rl:key:free-key" in keys, keys


def test_an_unknown_api_key_is_answered_401_and_spends_nothing(server, nginx_for, upstream):
    n = start_example(nginx_for, upstream, server)
    served = len(upstream.served)
    for headers in ({}, {"X-API-Key": "made-up"}):
        status, _, body = n.get("/export", headers)
        assert status == 401 and body == {"error": "unknown API key"}
    assert server.client().keys("*") == [] and len(upstream.served) == served


def test_a_denial_is_429_with_the_binding_layers_headers_and_retry_after(
        server, nginx_for, upstream):
    n = start_example(nginx_for, upstream, server)
    statuses = [n.get("/export", FREE)[0] for _ in range(10)]
    assert statuses == [200] * 10
    served = len(upstream.served)
    status, headers, body = n.get("/export", FREE)
    assert status == 429 and body == {"error": "rate limited", "layer": "export"}
    assert headers["content-type"] == "application/json"
    assert headers["x-ratelimit-limit"] == "10" and headers["x-ratelimit-remaining"] == "0"
    assert headers["ratelimit-policy"] == '"export";q=10;w=60'
    assert 55 <= int(headers["retry-after"]) <= 60, headers
    assert headers["ratelimit"] == f'"export";r=0;t={headers["x-ratelimit-reset"]}'
    assert len(upstream.served) == served  # a denial never reaches the upstream
    # All or nothing: the denied request spent nothing from the plan (10 of 60 spent).
    status, headers, _ = n.get("/hello", FREE)
    assert status == 200


def test_60_concurrent_clients_admit_exactly_the_limit(server, nginx_for, upstream):
    n = start_example(nginx_for, upstream, server)
    statuses = burst([n], "/export", FREE)
    assert sorted(statuses) == [200] * 10 + [429] * 50


def test_two_nginx_instances_sharing_one_redis_admit_the_limit_once(server, nginx_for, upstream):
    # NGINX's own limit_req counts in each instance's shared memory, so two instances behind a
    # load balancer admit twice its limit; here both count in the one Redis.
    # With the example's denial cache on each: it never admits, so the limit holds exactly.
    ports = [free_port(), free_port()]
    a = start_example(nginx_for, upstream, server, metrics_port=ports[0])
    b = start_example(nginx_for, upstream, server, metrics_port=ports[1])
    statuses = burst([a, b], "/export", FREE)
    assert sorted(statuses) == [200] * 10 + [429] * 50
    assert a.get("/export", FREE)[0] == 429 and b.get("/export", FREE)[0] == 429
    # Their counters, on each one's metrics port, add up to the requests sent.
    got = Counter()
    for port in ports:
        for line in urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode().splitlines():
            if line.startswith('rl_decisions_total{layer="export"'):
                got[line.split('result="')[1].split('"')[0]] += int(line.split()[-1])
    assert got["within_limit"] == 10 and got["over_limit"] + got["over_limit_with_local_cache"] == 52, got
    assert got["over_limit_with_local_cache"] >= 2, got  # the last two at least: their NGINX had a denial kept
    assert sum(got.values()) == 62


def test_redis_out_of_reach_fails_closed_then_decisions_resume(nginx_for, upstream, tmp_path):
    # A server of this test's own, stopped (as a crash) and started again on its port: the
    # library (without the module) is loaded again where the restart lost it.
    for with_module in (True, False):
        server = Server("redis", with_module).start()
        try:
            n = start_example(nginx_for, upstream, server)
            assert n.get("/export", FREE)[0] == 200
            server.stop()
            served = len(upstream.served)
            status, _, body = n.get("/export", FREE)
            assert status == 503 and body == {"error": "rate limiter unavailable"}
            assert len(upstream.served) == served
            assert "rl: Redis unavailable, request refused with 503 (fail closed)" in n.log()
            server.start()
            statuses = burst([n], "/export", FREE)
            assert sorted(statuses) == [200] * 10 + [429] * 50
        finally:
            server.close()


def test_fail_open_lets_requests_through_while_redis_is_out_of_reach(nginx_for, upstream):
    server = Server("redis", True).start()
    try:
        n = nginx_for(lambda port: example_conf(redis_at(server.port), upstream.port, port,
                                                options="fail_open = true, "))
        server.stop()
        served = len(upstream.served)
        status, headers, body = n.get("/export", FREE)
        assert status == 200 and body == {"path": "/export"}
        assert "x-ratelimit-limit" not in headers  # nothing was decided
        assert len(upstream.served) == served + 1
        assert "rl: Redis unavailable, request let through (fail_open)" in n.log()
        server.start()
        assert [n.get("/export", FREE)[0] for _ in range(11)] == [200] * 10 + [429]
    finally:
        server.close()


def test_every_spelling_of_an_api_key_spends_from_its_one_counter(server, nginx_for, upstream):
    # NGINX's map finds a plan without regard to case: `FREE-KEY` gets free-key's plan, and
    # must spend from free-key's counters, not from fresh ones of its own. (The address layer
    # is widened here, so that only the key's layers decide.)
    n = nginx_for(lambda port: example_conf(redis_at(server.port), upstream.port, port).replace(
        '"GCRA 100 1s BURST 20"', '"GCRA 1000 1s BURST 1000"'))
    spellings = ["free-key", "FREE-KEY", "Free-key", "free-Key", "fRee-key", "frEe-key", "freE-key", "free-kEy"]
    export = [n.get("/export", {"X-API-Key": key})[0] for key in spellings * 2]
    assert sorted(export) == [200] * 10 + [429] * 6  # SLIDINGLOG 10 1m, once
    hello = [n.get("/hello", {"X-API-Key": key})[0] for key in spellings * 7]
    # The plan's 60, 10 of them spent on /export (SLIDING weighs the minute before the current
    # one in too: fewer when the test spans two).
    assert hello.count(200) <= 50 and hello[-1] == 429
    assert sorted(server.client().keys("rl:[ek]*")) == ["rl:export:free-key", "rl:key:free-key"]


def test_a_map_of_case_sensitive_expressions_refuses_other_spellings(servers, nginx_for, upstream):
    # docs/nginx.md's other choice: the first map's keys as `~^free-key$`.
    server = servers("redis", True)
    server.client().flushall()

    def conf(port: int) -> str:
        text = example_conf(redis_at(server.port), upstream.port, port)
        for key in ("free-key", "pro-key"):
            text = text.replace(f"        {key} ", f"        ~^{key}$ ", 1)
        assert "~^free-key$ free-key;" in text
        return text

    n = nginx_for(conf)
    assert n.get("/hello", FREE)[0] == 200
    assert [n.get("/hello", {"X-API-Key": key})[0] for key in ("FREE-KEY", "Free-key")] == [401, 401]
