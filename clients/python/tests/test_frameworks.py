"""Flask + Flask-Limiter and FastAPI + slowapi switched to rl by their storage URI alone
(examples/flask_app.py, examples/slowapi_app.py), served for real and called over HTTP, on
Redis 7.0 with the module, Redis without it (the library) and Valkey 9.1 with the module:
each strategy admits its limit then answers 429 with its headers, many clients at once get
no more than the limit, the apps ride out a restart of the server and a failover to a server
without the module, and a wrong configuration fails at start-up or as an error, never open."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
import requests
from apps import EXAMPLES, served
from conftest import Cluster

FRAMEWORKS = ["flask", "fastapi"]
STRATEGIES = ["moving-window", "sliding-window-counter", "fixed-window"]
HTTP_BACKENDS = [("redis", True), ("redis", False), ("valkey", True)]

#: What each strategy leaves in the server under the prefix: the module's sorted-set log,
#: its one-key sliding counter, and limits' own integer for the fixed window.
STATE = {
    "moving-window": lambda c, k: c.type(k) == b"zset",
    "sliding-window-counter": lambda c, k: c.get(k).startswith(b"sliding:"),
    "fixed-window": lambda c, k: c.get(k).isdigit(),
}


@pytest.fixture(params=HTTP_BACKENDS, ids=lambda p: f"{p[0]}-{'module' if p[1] else 'library'}")
def http_server(request, servers):
    s = servers(*request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    yield s
    c.close()


def statuses(url: str, n: int, path: str = "/ping") -> list[requests.Response]:
    with requests.Session() as session:
        return [session.get(url + path, timeout=10) for _ in range(n)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_limit_admits_its_count_then_answers_429(http_server, framework, strategy):
    with served(framework, "rl+" + http_server.url, strategy) as url:
        got = statuses(url, 7)
        costly = statuses(url, 3, "/export")
    assert [r.status_code for r in got] == [200] * 5 + [429] * 2
    assert [r.headers["X-RateLimit-Remaining"] for r in got[:5]] == ["4", "3", "2", "1", "0"]
    assert {r.headers["X-RateLimit-Limit"] for r in got} == {"5"}
    for denied in got[5:]:
        assert 0 < int(denied.headers["Retry-After"]) <= 61
    # COST 2: two requests spend 4 of 5, the third would need 6.
    assert [r.status_code for r in costly] == [200, 200, 429]
    c = redis.Redis(port=http_server.port)
    keys = c.keys("*")
    assert keys and all(k.startswith(b"LIMITS_RL:") for k in keys), keys
    assert all(STATE[strategy](c, k) for k in keys)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_many_clients_at_once_get_no_more_than_the_limit(servers, framework, strategy):
    s = servers("redis", True)
    redis.Redis(port=s.port).flushall()
    with served(framework, "rl+" + s.url, strategy, "20/minute") as url:
        def call(_):
            with requests.Session() as session:
                return session.get(url + "/ping", timeout=30).status_code

        with ThreadPoolExecutor(24) as pool:
            codes = list(pool.map(call, range(60)))
    assert codes.count(200) == 20 and codes.count(429) == 40


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_restart_and_a_failover_to_a_server_without_the_module(fresh_server, framework):
    s = fresh_server("redis", True, ("--appendonly", "yes", "--appendfsync", "always"))
    with served(framework, "rl+" + s.url, "moving-window") as url:
        assert [r.status_code for r in statuses(url, 2)] == [200, 200]
        s.restart()  # the same server again: its log came back from the append-only file
        assert [r.status_code for r in statuses(url, 1)] == [200]
        # The same address now answers without the module: the library takes over, loaded
        # by the storage's limiter, and reads the log the module wrote.
        s.with_module = False
        s.restart()
        got = statuses(url, 4)
        loaded = redis.Redis(port=s.port).function_list()
    assert [r.status_code for r in got] == [200, 200, 429, 429]
    assert loaded, "the library answered, so the storage's limiter loaded it"
    assert [r.headers["X-RateLimit-Remaining"] for r in got[:2]] == ["1", "0"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_moving_window_above_the_cap_is_an_error_not_an_open_door(servers, framework):
    s = servers("redis", True)
    redis.Redis(port=s.port).flushall()
    with served(framework, "rl+" + s.url, "moving-window", "200000/hour") as url:
        # A new connection each: uvicorn closes one whose request raised.
        got = [requests.get(url + "/ping", timeout=10).status_code for _ in range(2)]
    # limits.errors.ConfigurationError (the server's sliding-log-max-limit) reaches the app:
    # a 500, as for any storage error, and nothing admitted or stored.
    assert got == [500, 500]
    assert redis.Redis(port=s.port).dbsize() == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_limit_of_zero_answers_429_as_the_stock_storage_does(http_server, framework, strategy):
    """`0/minute` admits nothing: 429 on limits' own `redis://` storage, and on ours (where
    it was a ConfigurationError, a 500, on the moving window and sliding window counter)."""
    got = []
    for uri in (http_server.url, "rl+" + http_server.url):
        with served(framework, uri, strategy, "0/minute") as url:
            answers = statuses(url, 2) + statuses(url, 1, "/export")
        got.append([(r.status_code, r.headers.get("X-RateLimit-Remaining")) for r in answers])
    assert got[0] == [(429, "0")] * 3
    assert got[1] == got[0]


APP_WITHOUT_IMPORT = {
    "flask": (
        "import flask, flask_limiter\n"
        "from flask_limiter.util import get_remote_address\n"
        "app = flask.Flask(__name__)\n"
        "app.config['RATELIMIT_STORAGE_URI'] = {uri!r}\n"
        "flask_limiter.Limiter(get_remote_address, app=app)\n"
    ),
    "fastapi": (
        "import slowapi\n"
        "from slowapi.util import get_remote_address\n"
        "slowapi.Limiter(key_func=get_remote_address, storage_uri={uri!r})\n"
    ),
}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_without_import_redis_rl_the_uri_fails_at_start_up(framework, servers):
    s = servers("redis", True)
    code = APP_WITHOUT_IMPORT[framework].format(uri="rl+" + s.url)
    bare = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=EXAMPLES)
    assert bare.returncode != 0
    assert "ConfigurationError" in bare.stderr and "rl+redis" in bare.stderr
    imported = subprocess.run([sys.executable, "-c", "import redis_rl\n" + code],
                              capture_output=True, text=True, timeout=60, cwd=EXAMPLES,
                              env=dict(os.environ))
    assert imported.returncode == 0, imported.stderr


@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_flask_on_a_cluster(clusters, with_module):
    cluster: Cluster = clusters(with_module)
    for n in cluster.nodes:
        node = redis.Redis(port=n.port)
        node.flushall()
        node.function_flush()
    uri = "rl+redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in cluster.nodes)
    for strategy in ["moving-window", "sliding-window-counter"]:
        with served("flask", uri, strategy, "3/minute") as url:
            assert [r.status_code for r in statuses(url, 4)] == [200, 200, 200, 429]
