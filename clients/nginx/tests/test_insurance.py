"""Insurance (docs/nginx.md, "Insurance"), over HTTP on real NGINX: with Redis killed while
requests are in flight, a limiter with `insurance` decides on the node alone, each layer's
policy divided by `nodes`, in a lua_shared_dict its two workers share (a burst over both admits
the node's share, no more), answers a local denial as a 429 with the usual headers, counts its
decisions (`insured_within_limit`, `insured_over_limit`), logs the switch once, and hands back to Redis
(logged once) when Redis is started again on its port. A limiter without it fails closed or
open as before, and so does one whose layer names a server policy."""

from __future__ import annotations

import re
import subprocess
import threading
import time

import pytest
from conftest import Server, burst, custom_conf
from test_denial_cache import counters

DICTS = "lua_shared_dict rl_insurance 1m; lua_shared_dict rl_metrics 1m;"
INSURED = 'insurance = { dict = "rl_insurance", nodes = 2 }, metrics = "rl_metrics",'
LAYERS = ('{ name = "ip", by = "ip", policy = "FIXED 1000 1h" }, '
          '{ name = "user", by = "$http_x_user", policy = "FIXED 10 1h" }')
ON = "rl: Redis unavailable, insurance on: this node decides alone, each policy divided by 2"
OFF = "rl: Redis answers again, insurance off: decisions are Redis's again"


def limiter(name: str, port: int, options: str, layers: str = LAYERS) -> str:
    return f'{name} = rl.new({{ redis = {{ port = {port} }}, {options} layers = {{ {layers} }} }})'


def conf(port: int, upstream: int, redis_port: int) -> str:
    init = "\n".join([
        limiter("limiter", redis_port, INSURED),
        limiter("closed", redis_port, ""),
        limiter("opened", redis_port, "fail_open = true,"),
        limiter("named", redis_port, 'insurance = { dict = "rl_insurance", nodes = 2 },',
                '{ name = "plan", by = "$http_x_user", policy = "free" }'),
    ])
    more = "".join(f"""
        location = /{name} {{ access_by_lua_block {{ {name}:access() }} proxy_pass http://127.0.0.1:{upstream}; }}
""" for name in ("closed", "opened", "named"))
    more += """
        location = /metrics { content_by_lua_block { require("resty.rl").metrics("rl_metrics") } }
"""
    return custom_conf(port, upstream, init, http=DICTS, server=more)


def wait_until(done, limit: float = 60) -> None:
    """Until `done()`; a bound on a hang, not on a speed."""
    deadline = time.monotonic() + limit
    while not done():
        assert time.monotonic() < deadline, "the load did not go on"
        time.sleep(0.01)


def count(n, line: str) -> int:
    return n.log().count(line)


@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_redis_killed_under_load_the_node_decides_its_share_then_hands_back(nginx_for, upstream, with_module):
    server = Server("redis", with_module).start()
    try:
        n = nginx_for(lambda port: conf(port, upstream.port, server.port))
        status, headers, _ = n.get("/a", {"X-User": "alice"})
        assert status == 200 and headers["x-ratelimit-limit"] == "10", (status, headers)
        assert count(n, "insurance") == 0

        # Requests in flight, one after the other on four threads, while Redis is killed.
        stop, seen, killed = threading.Event(), [], []

        def load() -> None:
            while not stop.is_set():
                status = n.request("/a", {"X-User": "load"})[0]
                seen.append((bool(killed), status))

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: len(seen) >= 20)
            server.stop()
            killed.append(True)
            wait_until(lambda: sum(1 for after, _ in seen if after) >= 40)
        finally:
            stop.set()
            for t in threads:
                t.join()
        # No request failed: Redis's decisions, then the node's (a call cut off included).
        assert {status for _, status in seen} <= {200, 429}, seen
        # The node admitted at most its share (10 / 2) beyond what Redis had admitted (10).
        assert sum(1 for _, status in seen if status == 200) <= 15, seen
        assert seen[-1][1] == 429
        assert count(n, ON) == 1, n.log()
        assert "refused with 503" not in n.log()

        before = counters(n)
        # A fresh identity, one request at a time: the share, then 429s shaped as Redis's.
        bob = [n.request("/a", {"X-User": "bob"}) for _ in range(8)]
        assert [status for status, _, _ in bob] == [200] * 5 + [429] * 3
        assert [h["x-ratelimit-remaining"] for _, h, _ in bob[:5]] == ["4", "3", "2", "1", "0"]
        status, headers, body = bob[5]
        assert body == b'{"error":"rate limited","layer":"user"}\n'
        assert headers["x-ratelimit-limit"] == "5" and headers["x-ratelimit-remaining"] == "0"
        assert 3500 <= int(headers["retry-after"]) <= 3600, headers
        assert headers["ratelimit-policy"] == '"user";q=10;w=3600'
        assert re.fullmatch(r'"user";r=0;t=\d+', headers["ratelimit"]), headers
        # Sixty at once over both workers: the node's share, not a worker's.
        statuses = burst([n], "/a", {"X-User": "carol"})
        assert sorted(statuses) == [200] * 5 + [429] * 55
        after = counters(n)
        assert after[("user", "insured_within_limit")] - before[("user", "insured_within_limit")] == 10
        assert after[("user", "insured_over_limit")] - before[("user", "insured_over_limit")] == 58
        assert sum(after.values()) - sum(before.values()) == 68
        # Without insurance, as before: 503, or let through; a server policy's name: as before.
        assert n.get("/closed")[0] == 503
        assert n.get("/opened")[0] == 200
        assert n.get("/named", {"X-User": "dave"})[0] == 503
        assert count(n, "request refused with 503 (fail closed)") == 2
        assert count(n, ON) == 1
        status, _, body = n.request("/metrics")
        check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
        assert check.returncode == 0 and check.stdout == b"" and check.stderr == b"", check

        # Redis again on its port (empty: a kill loses what it held): its decisions, logged once.
        server.start()
        for _ in range(3):
            status, headers, _ = n.get("/a", {"X-User": "bob"})
            assert status == 200 and headers["x-ratelimit-limit"] == "10", (status, headers)
        assert count(n, OFF) == 1, n.log()
        assert count(n, ON) == 1
        assert counters(n)[("user", "within_limit")] == before[("user", "within_limit")] + 3
        assert server.client().exists("rl:user:bob")
    finally:
        server.close()


def test_an_answer_to_a_request_sent_before_the_switch_is_not_redis_back(nginx_for, upstream):
    """A request sent while Redis worked, answered after another found Redis gone (read late),
    does not switch the insurance off: only an answer to a request sent after the switch on
    does, so each switch is logged once however the workers' answers interleave. Two limiters
    on the same Redis and dict: `slow` waits for Redis, `fast` gives up after 200 ms."""
    server = Server("redis", True).start()
    try:
        layers = '{ name = "user", by = "$http_x_user", policy = "FIXED 10 1h" }'
        init = "\n".join(
            f'{name} = rl.new({{ redis = {{ port = {server.port}, timeout_ms = {ms} }}, {INSURED} '
            f'layers = {{ {layers} }} }})' for name, ms in (("slow", 30_000), ("fast", 200)))
        more = "".join(f"""
        location = /{name} {{ access_by_lua_block {{ {name}:access() }} proxy_pass http://127.0.0.1:{upstream.port}; }}
""" for name in ("slow", "fast"))
        n = nginx_for(lambda port: custom_conf(port, upstream.port, init, http=DICTS, server=more))
        assert n.get("/slow", {"X-User": "bob"})[0] == 200
        admin = server.client()
        # A request held in Redis (its writes paused) until after the switch on.
        admin.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")
        late: list[tuple] = []
        sent = threading.Thread(target=lambda: late.append(n.request("/slow", {"X-User": "bob"})))
        sent.start()
        try:
            wait_until(lambda: admin.info("clients")["blocked_clients"] >= 1)
            status, headers, _ = n.request("/fast", {"X-User": "carol"})
            assert status == 200 and headers["x-ratelimit-limit"] == "5", (status, headers)
            assert count(n, ON) == 1
        finally:
            admin.execute_command("CLIENT", "UNPAUSE")
            sent.join()
        status, headers, _ = late[0]
        assert status == 200 and headers["x-ratelimit-limit"] == "10", (status, headers)
        assert headers["x-ratelimit-remaining"] == "8"
        assert count(n, OFF) == 0, n.log()  # an answer to a request sent before the switch
        # A request sent after the switch on, answered by Redis: the switch off, logged once.
        status, headers, _ = n.request("/fast", {"X-User": "carol"})
        assert status == 200 and headers["x-ratelimit-limit"] == "10", (status, headers)
        assert (count(n, ON), count(n, OFF)) == (1, 1), n.log()
    finally:
        server.close()


@pytest.mark.parametrize("insurance, said", [
    ('"rl_insurance"', "`insurance` is a table"),
    ('{ dict = "nope", nodes = 2 }', "insurance.dict names a lua_shared_dict"),
    ('{ dict = "rl_metrics", nodes = 2 }', "insurance.dict is a lua_shared_dict of its own"),
    ('{ dict = "rl_insurance", nodes = 0 }', "insurance.nodes is the number of NGINX nodes"),
    ('{ dict = "rl_insurance", nodes = 2, node = 1 }', "node is not a field of `insurance`"),
])
def test_an_insurance_it_cannot_run_is_refused(nginx_for, upstream, insurance, said):
    check = f"""
        location = /check {{ content_by_lua_block {{
            local ok, err = pcall(rl.new, {{ redis = {{ port = 1 }}, metrics = "rl_metrics",
                insurance = {insurance}, layers = {{ {{ name = "ip", by = "ip", policy = "FIXED 1 1s" }} }} }})
            ngx.say(ok and "made" or err)
        }} }}
"""
    n = nginx_for(lambda port: custom_conf(port, upstream.port, "", http=DICTS, server=check))
    assert said in n.text("/check")
