"""How the package reaches Redis: a password (and an ACL user), a Unix socket, a database,
a server that stops answering (the timeout), the connection pool's bound, and where the
library it loads comes from."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import redis as redis_client
from conftest import CHECKOUT_LIB, Server, burst, custom_conf, free_port

LAYER = '{ name = "ip", by = "ip", policy = "FIXED 5 1h" }'


def start(nginx_for, upstream, init: str, **kw):
    return nginx_for(lambda port: custom_conf(port, upstream.port, init, **kw))


def limiter(redis: str, options: str = "") -> str:
    return f"limiter = rl.new({{ redis = {{ {redis} }}, {options} layers = {{ {LAYER} }} }})"


def test_a_password_an_acl_user_and_a_database(nginx_for, upstream):
    server = Server("redis", True, ("--requirepass", "s3cret")).start()
    try:
        c = redis_client.Redis(port=server.port, password="s3cret", decode_responses=True,
                               single_connection_client=True)
        c.execute_command("ACL", "SETUSER", "edge", "on", ">edge-pw", "~rl:*", "+@all")
        for redis, db in [(f'port = {server.port}, password = "s3cret", database = 3', 3),
                          (f'port = {server.port}, username = "edge", password = "edge-pw"', 0)]:
            c.flushall()
            n = start(nginx_for, upstream, limiter(redis))
            assert n.get("/a")[0] == 200
            c.select(db)
            assert c.keys("*") == ["rl:ip:127.0.0.1"]
            c.select(0)
        # A refused login is a configuration to fix: 500, not "out of reach".
        n = start(nginx_for, upstream, limiter(f'port = {server.port}, password = "wrong"', "fail_open = true,"))
        assert n.get("/a")[0] == 500
        assert "rl: request refused with 500: auth refused: WRONGPASS" in n.log()
    finally:
        server.close()


def test_a_unix_socket(nginx_for, upstream):
    # NGINX's workers run as another user (`nobody`, when started as root): they must be able
    # to reach the socket's folder.
    folder = Path(tempfile.mkdtemp(prefix="rl-nginx-sock-"))
    folder.chmod(0o755)
    sock = folder / "redis.sock"
    server = Server("redis", True, ("--unixsocket", str(sock), "--unixsocketperm", "777")).start()
    try:
        n = start(nginx_for, upstream, limiter(f'socket = "{sock}"'))
        assert [n.get("/a")[0] for _ in range(6)] == [200] * 5 + [429]
    finally:
        server.close()
        shutil.rmtree(folder)


def test_a_server_that_stops_answering_fails_closed_within_the_timeout(nginx_for, upstream):
    server = Server("redis", True).start()
    try:
        n = start(nginx_for, upstream, limiter(f"port = {server.port}, timeout_ms = 300"))
        assert n.get("/a")[0] == 200
        os.kill(server.proc.pid, signal.SIGSTOP)  # connected, and silent
        try:
            began = time.monotonic()
            assert n.get("/a")[0] == 503
            assert time.monotonic() - began < 3
            assert "fail closed" in n.log() and "timeout" in n.log()
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        # The refused request's command was sent: run once the server resumed, it was charged
        # (5 a hour: 1 admitted, 1 refused on the timeout, 3 left).
        assert [n.get("/a")[0] for _ in range(4)] == [200] * 3 + [429]
    finally:
        server.close()


def test_connections_are_pooled_and_bounded(nginx_for, upstream):
    server = Server("redis", True).start()
    try:
        layer = '{ name = "ip", by = "ip", policy = "FIXED 1000000 1h" }'
        init = (f"limiter = rl.new({{ redis = {{ port = {server.port}, pool_size = 4 }}, "
                f"layers = {{ {layer} }} }})")
        n = start(nginx_for, upstream, init)
        c = server.client()
        for _ in range(3):
            assert burst([n], "/a", {}) == [200] * 60
        # Two workers keep at most 4 idle connections each; the rest were closed.
        time.sleep(0.2)
        assert c.info("clients")["connected_clients"] <= 2 * 4 + 1
        before = c.info("stats")["total_connections_received"]
        for _ in range(20):
            assert n.get("/a")[0] == 200
        assert c.info("stats")["total_connections_received"] == before  # reused, none new
    finally:
        server.close()


def test_the_checkout_s_package_loads_the_checkout_s_library(nginx_for, upstream):
    # clients/nginx/lib as it is in a clone (no library.lua beside it): functions/rl.lua.
    server = Server("redis", False).start()
    try:
        n = start(nginx_for, upstream, limiter(f"port = {server.port}"), lib=CHECKOUT_LIB)
        assert n.get("/a")[0] == 200
        assert server.client().execute_command("FUNCTION", "LIST", "LIBRARYNAME", "rl")
        assert "loaded the Functions library" in n.log()
    finally:
        server.close()


def test_nothing_listening_is_out_of_reach(nginx_for, upstream):
    n = start(nginx_for, upstream, limiter(f"port = {free_port()}"))
    status, _, body = n.get("/a")
    assert status == 503 and body == {"error": "rate limiter unavailable"}
    assert "connection refused" in n.log()


def test_replies_are_read_whole_whatever_they_hold(nginx_for, upstream):
    # server.call as the package makes it, its reply printed: a bulk string holding CRLF, one of
    # 1 MB (read in several receives), a nil, nested arrays, an error reply.
    server = Server("redis", True).start()
    try:
        c = server.client()
        c.set("big", "x" * 1_000_000)
        c.rpush("list", "a", "b\r\nc")
        show = (
            f'local call = function(...) return require("resty.rl.server").call(limiter.o, "127.0.0.1", '
            f'{server.port}, {{ ... }}) end '
            'local v = call("ECHO", "a\\r\\nb") ngx.say(#v, " ", v == "a\\r\\nb") '
            'v = call("GET", "big") ngx.say(#v) '
            'v = call("GET", "none") ngx.say(tostring(v == ngx.null)) '
            'v = call("LRANGE", "list", 0, -1) ngx.say(#v, " ", v[2] == "b\\r\\nc") '
            'v = call("EVAL", "return {1, {2, {3, \'x\'}}, \'y\'}", 0) '
            'ngx.say(v[1], v[2][1], v[2][2][1], v[2][2][2], v[3]) '
            'local _, err, kind = call("INCR", "big") ngx.say(err, " ", kind) '
            'return ngx.exit(200)')
        n = start(nginx_for, upstream, limiter(f"port = {server.port}"), access=show)
        assert n.text("/a").split("\n") == [
            "4 true", "1000000", "true", "2 true", "123xy",
            "ERR value is not an integer or out of range reply"]
    finally:
        server.close()
