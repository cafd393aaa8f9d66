"""Penalties and bans at the edge: the login example (examples/login.conf) served by real NGINX
in front of an upstream that checks passwords, on Redis and Valkey with the module and without
it (the Functions library): failures counted per account, successes given back by `refund()`
from the log phase, the penalty's 429 with its headers and `Retry-After` at its end, later
penalties escalating, and `ban()` then its lifting. Then confs of the tests' own: RL.ALL layers
with a penalty on one of them, a policy named on the server with a penalty, and `refund()`'s
and `ban()`'s answers.

A penalty's length is read from the key as the server stores it (facts/rl.toml's `penalty`:
`<tag>:<end>:<len>:<keep>` in ms): the replies give only the later of the penalty's end and the
limiter's own wait."""

from __future__ import annotations

import subprocess
import time

import pytest
import tomllib
from conftest import PASSWORDS, ROOT, custom_conf, free_port, login_conf
from test_layers import define, limiter

PENALTY = tomllib.loads((ROOT / "facts/rl.toml").read_text())["penalty"]
RIGHT = PASSWORDS["alice"]
HOUR = 3_600_000


def penalty_of(client, key: str) -> tuple[int, int, int] | None:
    """The key's penalty as stored: (end, length, keep) in ms, or None."""
    if client.type(key) == "zset":
        score = PENALTY["log_score"]
        members = client.zrangebyscore(key, score, score)
        text = members[0] if members else ""
    else:
        text = (client.get(key) or "").rsplit(PENALTY["separator"], 1)[-1]
    tag, _, fields = text.partition(":")
    if tag != PENALTY["tag"]:
        return None
    end, length, keep = (int(f) for f in fields.split(":"))
    return end, length, keep


def server_ms(client) -> int:
    seconds, micros = client.time()
    return seconds * 1000 + micros // 1000


def until(condition, what: str) -> None:
    """Until `condition()` holds (a refund sent from a timer, a penalty's end): at most 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


def in_one_window() -> None:
    """Starts a test at least ten seconds before a minute ends, so that its calls fall in one
    aligned one-minute fixed window."""
    if time.time() % 60 > 50:
        time.sleep(60.5 - time.time() % 60)


def remaining(server, key: str, policy: str) -> int:
    """What `policy` has left on `key` (`COST 0`: nothing spent)."""
    c = server.client()
    if server.with_module:
        reply = c.execute_command("RL.PEEK", *policy.split()[:1], key, *policy.split()[1:], "COST", "0")
    else:
        reply = c.execute_command("FCALL_RO", "rl_peek", 1, key, *policy.split(), "COST", "0")
    return int(reply[2])


def start_login(nginx_for, upstream, server, policy: str | None = None):
    n = nginx_for(lambda port: login_conf(
        f'redis = {{ host = "127.0.0.1", port = {server.port} }}', upstream.port, port, policy))

    def login(account: str, password: str):
        return n.get("/login", body=f"account={account}&password={password.replace(' ', '+')}")

    return n, login


def test_a_login_flow_reaches_the_penalty_and_escalates(server, nginx_for, upstream):
    in_one_window()
    n, login = start_login(nginx_for, upstream, server, '"FIXED 3 1h PENALTY 1s ESCALATE 1m"')
    c = server.client()
    status, _, body = login("alice", RIGHT)
    assert status == 200 and body == {"account": "alice"}
    # The success is given back from the log phase, by a timer right after it.
    until(lambda: remaining(server, "rl:login:alice", "FIXED 3 1h") == 3, "the refund")
    assert [login("alice", "guess")[0] for _ in range(3)] == [401] * 3
    served = len(upstream.served)
    status, headers, body = login("alice", RIGHT)  # the 4th attempt: denied, the penalty starts
    assert status == 429 and body == {"error": "rate limited", "layer": "login"}
    assert headers["x-ratelimit-remaining"] == "0" and int(headers["retry-after"]) >= 1
    assert len(upstream.served) == served  # the password was never checked
    end, length, keep = penalty_of(c, "rl:login:alice")
    assert length == 1000 and keep == end + 60_000  # a second: the next attempt comes within it
    assert login("alice", RIGHT)[0] == 429  # during it: no new penalty
    assert penalty_of(c, "rl:login:alice") == (end, 1000, end + 60_000)
    assert login("bob", "guess")[0] == 401  # another account: none
    until(lambda: server_ms(c) > end, "the penalty's end")
    # The failures still count in this window: the next attempt starts a penalty twice as long,
    # and the one after that twice as long again.
    for want in (2000, 4000):
        status, headers, _ = login("alice", "guess")
        assert status == 429 and "retry-after" in headers
        end, length, _ = penalty_of(c, "rl:login:alice")
        assert length == want
        until(lambda end=end: server_ms(c) > end, "the penalty's end")
    assert "refund failed" not in n.log()


def test_the_429_of_a_login_penalty_says_when_it_ends(server, nginx_for, upstream):
    in_one_window()
    _, login = start_login(nginx_for, upstream, server, '"FIXED 3 1m PENALTY 2h"')
    assert [login("alice", "guess")[0] for _ in range(3)] == [401] * 3
    for _ in range(2):  # the attempt that starts it, then the right password during it
        status, headers, _ = login("alice", RIGHT)
        assert status == 429
        assert headers["retry-after"] in ("7200", "7201"), headers
        assert headers["x-ratelimit-reset"] == headers["retry-after"]
        assert headers["x-ratelimit-limit"] == "3"
        assert headers["ratelimit-policy"] == '"login";q=3;w=60'
        assert headers["ratelimit"] == f'"login";r=0;t={headers["retry-after"]}'


def test_a_login_without_one_account_is_refused_before_anything_is_spent(server, nginx_for, upstream):
    n, _ = start_login(nginx_for, upstream, server)
    served = len(upstream.served)
    for body in ("password=guess", "account=&password=guess", "account=a&account=b&password=guess"):
        status, _, answer = n.get("/login", body=body)
        assert status == 400 and answer == {"error": "an account and a password"}
    assert server.client().keys("*") == [] and len(upstream.served) == served


def test_a_ban_over_http_then_lifted(server, nginx_for, upstream):
    n, login = start_login(nginx_for, upstream, server)
    c = server.client()
    assert n.get("/ban?account=alice&ms=3600000", body="")[::2] == (200, {"existed": False})
    assert n.get("/ban?account=alice&ms=3600000", body="")[::2] == (200, {"existed": True})
    status, headers, _ = login("alice", RIGHT)
    assert status == 429 and headers["retry-after"] in ("3599", "3600", "3601"), headers
    assert n.get("/ban?account=alice&ms=0", body="")[2] == {"existed": True}
    assert c.exists("rl:login:alice") == 0  # it held the ban alone
    assert login("alice", RIGHT)[0] == 200
    assert login("alice", "guess")[0] == 401
    assert n.get("/ban?account=alice&ms=60000", body="")[2] == {"existed": True}
    assert login("alice", RIGHT)[0] == 429
    assert n.get("/ban?account=alice&ms=0", body="")[2] == {"existed": True}
    assert c.exists("rl:login:alice") == 1  # the count stays: one failure
    assert login("alice", RIGHT)[0] == 200
    # Refused: a bad ms (by the package), a key no limiter wrote (by the server).
    assert n.get("/ban?account=alice&ms=-1", body="")[0] == 500
    c.set("rl:login:ada", "a value")
    assert n.get("/ban?account=ada&ms=1000", body="")[0] == 500
    assert c.get("rl:login:ada") == "a value"
    log = n.log()
    assert "ban: ms is an integer from 0 to 315360000000" in log
    assert "did not write" in log


# --- confs of the tests' own ---------------------------------------------------------------------


def test_a_penalty_on_one_layer_of_rl_all_denies_the_request_and_spends_nothing_elsewhere(
        server, nginx_for, upstream):
    in_one_window()
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(
        server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1m" }, '
                     '{ name = "key", by = "$http_x_api_key", policy = "FIXED 2 1m PENALTY 1h" }')))
    acme = {"X-API-Key": "acme"}
    assert [n.get("/a", acme)[0] for _ in range(2)] == [200, 200]
    for _ in range(2):  # the denial that starts it, then one during it
        status, headers, body = n.get("/a", acme)
        assert status == 429 and body == {"error": "rate limited", "layer": "key"}
        assert headers["x-ratelimit-remaining"] == "0"
        assert 3599 <= int(headers["retry-after"]) <= 3601, headers
    assert n.get("/a", {"X-API-Key": "globex"})[0] == 200  # another key: no penalty
    c = server.client()
    assert penalty_of(c, "rl:key:acme")[1] == HOUR
    assert penalty_of(c, "rl:ip:127.0.0.1") is None
    assert remaining(server, "rl:ip:127.0.0.1", "FIXED 100 1m") == 97  # the denials spent nothing


def test_a_policy_named_on_the_server_with_a_penalty(server, nginx_for, upstream, tmp_path):
    define(server, ["edge-login FIXED 2 1h PENALTY 1h ESCALATE 4h"], tmp_path)
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(
        server.port, '{ name = "login", by = "ip", policy = "edge-login" }')))
    assert [n.get("/a")[0] for _ in range(2)] == [200, 200]
    status, headers, _ = n.get("/a")
    assert status == 429 and headers["retry-after"] in ("3600", "3601"), headers
    assert penalty_of(server.client(), "rl:login:127.0.0.1")[1] == HOUR


REFUNDS = """
location = /spend {
    access_by_lua_block { limiter:access() }
    content_by_lua_block {
        local name = ngx.var.arg_layer
        local a, e1 = limiter:refund(name)
        local b = limiter:refund(name)
        ngx.say(tostring(a), " ", tostring(b), " ", tostring(e1))
    }
}
location = /ban {
    content_by_lua_block {
        local ok, err, kind = limiter:ban(ngx.var.arg_key, tonumber(ngx.var.arg_ms) or ngx.var.arg_ms)
        ngx.say(tostring(ok), " ", tostring(err), " ", tostring(kind))
    }
}
"""


def test_refund_gives_back_once_and_only_what_was_spent(server, nginx_for, upstream, tmp_path):
    in_one_window()
    define(server, ["edge-try FIXED 1 1h SHADOW"], tmp_path)
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(
        server.port, '{ name = "ip", by = "ip", policy = "FIXED 10 1m" }, '
                     '{ name = "key", by = "$http_x_api_key", policy = "FIXED 3 1m" }, '
                     '{ name = "try", by = "ip", policy = "edge-try" }'), server=REFUNDS))
    acme = {"X-API-Key": "acme"}
    # Every layer given back, once; the second refund finds nothing.
    assert n.text("/spend", acme) == "true false nil"
    assert remaining(server, "rl:ip:127.0.0.1", "FIXED 10 1m") == 10
    assert remaining(server, "rl:key:acme", "FIXED 3 1m") == 3
    # One layer by name: the other keeps its unit.
    assert n.text("/spend?layer=key", acme) == "true false nil"
    assert remaining(server, "rl:ip:127.0.0.1", "FIXED 10 1m") == 9
    assert remaining(server, "rl:key:acme", "FIXED 3 1m") == 3
    # The SHADOW policy's layer spent one unit, then denied (shadowed): nothing of it given back.
    c = server.client()
    shadow_before = c.get("rl:try:127.0.0.1")
    assert n.text("/spend?layer=try", acme) == "false false nil"
    assert c.get("rl:try:127.0.0.1") == shadow_before


def test_ban_answers_and_refusals(server, nginx_for, upstream):
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(
        server.port, '{ name = "ip", by = "ip", policy = "FIXED 10 1m" }'), server=REFUNDS))
    assert n.text("/ban?key=k&ms=1000") == "false nil nil"
    assert n.text("/ban?key=k&ms=0") == "true nil nil"
    assert n.text("/ban?key=k&ms=1.5").startswith("nil ban: ms is an integer from 0 to 315360000000 error")
    assert n.text("/ban?key=k&ms=x").startswith("nil ban: ms is an integer")
    assert n.text("/ban?ms=5").startswith("nil ban: the key is a string")
    server.client().rpush("list", "x")
    assert n.text("/ban?key=list&ms=5") == "nil WRONGTYPE Operation against a key holding the wrong kind of value error"


@pytest.mark.parametrize("policy, message", [
    ("FIXED 5 15m PENALTY", "PENALTY needs a duration from 1ms to 3650d"),
    ("FIXED 5 15m PENALTY 1y", "PENALTY needs a duration"),
    ("FIXED 5 15m PENALTY 1h ESCALATE", "ESCALATE needs a duration"),
    ("FIXED 5 15m PENALTY 1h ESCALATE 15m", "ESCALATE max must be at least PENALTY d"),
    ("FIXED 5 15m ESCALATE 1h", "ESCALATE max follows PENALTY d"),
    ("FIXED 5 15m PENALTY 1h PENALTY 2h", "PENALTY given more than once"),
    ("GCRA 5 1s BURST 2 BURST 3", "BURST given more than once"),
    ("SLIDING 5 1m BURST 2", "unexpected 'BURST'"),
])
def test_a_policys_penalty_is_checked_when_the_limiter_is_made(tmp_path, upstream, policy, message):
    conf = tmp_path / "nginx.conf"
    conf.write_text(custom_conf(free_port(), upstream.port, limiter(
        6379, f'{{ name = "a", by = "ip", policy = "{policy}" }}')))
    out = subprocess.run(["nginx", "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert f"init_by_lua error: resty.rl: layer 'a': policy '{policy}': {message}" in out.stderr, out.stderr


def test_policies_with_penalties_in_any_order_are_decided(server, nginx_for, upstream):
    n = nginx_for(lambda port: custom_conf(port, upstream.port, limiter(
        server.port, '{ name = "g", by = "ip", policy = "GCRA 1 1h PENALTY 1h ESCALATE 2h BURST 2" }, '
                     '{ name = "s", by = "ip", policy = "slidinglog 5 1h penalty 30m" }')))
    assert [n.get("/a")[0] for _ in range(3)] == [200, 200, 429]
    c = server.client()
    assert penalty_of(c, "rl:g:127.0.0.1")[1] == HOUR
    assert penalty_of(c, "rl:s:127.0.0.1") is None
