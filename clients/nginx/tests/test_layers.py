"""The package's layers and options, each on a conf of the tests' own: policies named on the
server (changed live, SHADOW), `shadow`, IPv6 clients by subnet, whose text chooses a counter,
errors that are never let through, configurations NGINX refuses to start with, and
OpenResty's `resty.redis` in place of Debian's `nginx.redis`."""

from __future__ import annotations

import ipaddress
import random
import subprocess
import sys
import time

import pytest
import redis
from conftest import ROOT, Server, custom_conf, free_port

LOCAL = 'redis = { host = "127.0.0.1", port = %d }'


def limiter(redis_port: int, layers: str, options: str = "") -> str:
    return f"limiter = rl.new({{ {LOCAL % redis_port}, {options} layers = {{ {layers} }} }})"


def start(nginx_for, upstream, init: str, **kw):
    return nginx_for(lambda port: custom_conf(port, upstream.port, init, **kw))


def library_with(lines: list[str], tmp_path) -> str:
    """The Functions library holding these policies (docs/managed-redis.md, "Named policies")."""
    path = tmp_path / "rl-policies.conf"
    path.write_text("".join(f"{line}\n" for line in lines))
    out = subprocess.run([sys.executable, str(ROOT / "scripts/library-policies.py"), str(path)],
                         capture_output=True, text=True, timeout=30, check=True)
    return out.stdout


def define(server: Server, lines: list[str], tmp_path) -> None:
    """Policies on the server: RL.POLICY SET with the module, the library written with them
    without it."""
    c = server.client()
    if server.with_module:
        for line in lines:
            c.execute_command("RL.POLICY", "SET", *line.split())
    else:
        c.function_load(library_with(lines, tmp_path), replace=True)


def test_a_policy_named_on_the_server_is_decided_and_changed_live(server, nginx_for, upstream, tmp_path):
    define(server, ["edge-free SLIDINGLOG 3 1h"], tmp_path)
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "api", by = "ip", policy = "edge-free" }'))
    assert [n.get("/a")[0] for _ in range(4)] == [200, 200, 200, 429]
    status, headers, body = n.get("/a")
    assert status == 429 and body == {"error": "rate limited", "layer": "api"}
    # The client knows the name, not the window: no `w`, and `q` is the reply's limit.
    assert headers["ratelimit-policy"] == '"api";q=3'
    define(server, ["edge-free SLIDINGLOG 5 1h"], tmp_path)
    assert [n.get("/a")[0] for _ in range(3)] == [200, 200, 429]


def test_shadow_lets_denials_through_with_their_headers_and_logs_them(server, nginx_for, upstream):
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "api", by = "ip", policy = "FIXED 2 1h" }',
                                           "shadow = true,"))
    results = [n.get("/a") for _ in range(4)]
    assert [r[0] for r in results] == [200] * 4
    assert [r[1]["x-ratelimit-remaining"] for r in results] == ["1", "0", "0", "0"]
    assert all("retry-after" not in r[1] for r in results)
    log = n.log()
    assert log.count("rl: rate limit would deny GET /a: layer api, key rl:api:127.0.0.1 (shadow = true)") == 2


def test_a_shadow_policy_on_the_server_is_let_through_and_logged(server, nginx_for, upstream, tmp_path):
    define(server, ["edge-try FIXED 2 1h SHADOW"], tmp_path)
    n = start(nginx_for, upstream, limiter(
        server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }, '
                     '{ name = "try", by = "ip", policy = "edge-try" }'))
    assert [n.get("/a")[0] for _ in range(4)] == [200] * 4
    assert n.log().count("layer try, key rl:try:127.0.0.1 (SHADOW policy 'edge-try')") == 2


def test_ipv6_clients_share_their_subnets_counter(server, nginx_for, upstream):
    # Behind a proxy NGINX trusts (here 127.0.0.1), the client's address is X-Forwarded-For's.
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 3 1h" }'),
              server="set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;")

    def get(address):
        return n.get("/a", {"X-Forwarded-For": address})[0]

    same_56 = ["2001:db8:1:1::1", "2001:db8:1:ff::2", "2001:db8:1:0:ffff::9"]
    assert [get(a) for a in same_56] == [200] * 3
    assert get("2001:db8:1:42::1") == 429  # a fourth address of the same /56
    assert get("2001:db8:1:100::1") == 200  # another /56
    assert get("::ffff:192.0.2.7") == 200  # an IPv4-mapped address is its IPv4 address
    assert sorted(server.client().keys("*")) == [
        "rl:ip:192.0.2.7", "rl:ip:2001:db8:1:100::/56", "rl:ip:2001:db8:1::/56"]


def test_the_address_key_is_the_python_and_node_packages_text(nginx_for, upstream):
    n = start(nginx_for, upstream, "", server="set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;")
    rng = random.Random(7)
    cases = [("192.0.2.1", 56), ("::1", 128), ("::", 56), ("2001:db8::", 32), ("fe80::1:0:0:1", 64)]
    for _ in range(150):  # addresses with runs of zero groups, at every prefix length
        groups = [rng.choice([0, 0, rng.randrange(1 << 16)]) for _ in range(8)]
        cases.append((":".join(f"{g:x}" for g in groups), rng.randrange(1, 129)))
    for address, bits in cases:
        got = n.text(f"/ipkey?bits={bits}", {"X-Forwarded-For": address})
        ip = ipaddress.ip_address(address)
        want = str(ip) if ip.version == 4 else ipaddress.IPv6Network((ip, bits), strict=False).compressed
        assert got == want, (address, bits)


def test_the_clients_own_forwarded_for_does_not_choose_its_counter(server, nginx_for, upstream):
    # No proxy is trusted: X-Forwarded-For is the client's own text, ignored.
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }'))
    for i in range(5):
        assert n.get("/a", {"X-Forwarded-For": f"198.51.100.{i}"})[0] == 200
    assert server.client().keys("*") == ["rl:ip:127.0.0.1"]
    assert server.client().get("rl:ip:127.0.0.1") is not None


def test_a_request_no_layer_applies_to_passes_without_a_call(nginx_for, upstream):
    # Nothing listens on the port: a call would be refused (503).
    layer = '{ name = "key", by = "$http_x_api_key", policy = "FIXED 5 1m" }'
    n = start(nginx_for, upstream, limiter(free_port(), layer))
    status, headers, body = n.get("/a")
    assert status == 200 and body == {"path": "/a"} and "x-ratelimit-limit" not in headers
    assert n.get("/a", {"X-API-Key": "k"})[0] == 503


@pytest.mark.parametrize("fail_open", ["false", "true"])
def test_errors_other_than_an_unreachable_redis_are_never_let_through(
        servers, nginx_for, upstream, fail_open):
    server = servers("redis", True)
    c = server.client()
    c.flushall()
    c.set("rl:ip:127.0.0.1", "hello")  # a key the limiter did not write
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 5 1m" }',
                                           f"fail_open = {fail_open},"))
    served = len(upstream.served)
    status, _, body = n.get("/a")
    assert status == 500 and body == {"error": "rate limiter error"}
    assert len(upstream.served) == served
    assert "rl: request refused with 500: ERR key holds a value that RL.FIXED did not write" in n.log()
    assert c.get("rl:ip:127.0.0.1") == "hello"


def test_a_policy_variable_holding_no_policy_is_an_error(servers, nginx_for, upstream):
    server = servers("redis", True)
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "api", by = "ip", policy = "$http_x_plan" }'),
              http='map $http_x_api_key $plan { default ""; k "FIXED 1 1m"; }')
    assert n.get("/a", {"X-Plan": "FIXED 0 1m"})[0] == 500
    assert "layer 'api': policy 'FIXED 0 1m': limit must be an integer from 1" in n.log()
    # The client's text reaches the log line escaped, never as a line of its own.
    assert n.get("/a", {"X-Plan": "FIXED 0\t1m\x7f"})[0] == 500
    assert "policy 'FIXED 0\\x091m\\x7f'" in n.log()


@pytest.mark.parametrize("init, message", [
    ('rl.new({ layers = { { name = "a", by = "ip", policy = "GCRA 10 1s" } } })', "`redis` is a table"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "QUEUE 10 1s" }'), "unknown algorithm 'QUEUE'"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "GCRA 10 1s BURST" }'), "BURST needs an integer"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "FIXED 10 1y" }'), "window must be a duration"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "free plan" }'), "unknown algorithm 'free'"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "GCRA 1 1s" }, { name = "a", by = "ip", policy = "p" }'),
     "layer names are distinct"),
    (limiter(6379, '{ name = "a b", by = "ip", policy = "p" }'), "`name` is 1 or more of"),
    (limiter(6379, '{ name = "a:b", by = "ip", policy = "p" }'), "`name` is 1 or more of A-Z, a-z, 0-9 and _ . -"),
    (limiter(6379, '{ name = "a", by = "header", policy = "p" }'), "`by` is \"ip\", an nginx variable"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'tag = "b",'), "`tag` names a layer"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', "ipv6_bits = 0,"), "`ipv6_bits` is an integer"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'fail_open = "yes",'), "`fail_open` is true or false"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', "fail_opn = true,"), "fail_opn is not an option"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p", cost = 2 }'), "cost is not a field of layer 'a'"),
    ('rl.new({ redis = { hots = "x" }, layers = { { name = "a", by = "ip", policy = "p" } } })',
     "hots is not a field of `redis`"),
    ('rl.new({ redis = { cluster = { { host = "127.0.0.1", port = 7000 } } }, layers = { '
     '{ name = "a", by = "ip", policy = "p" }, { name = "b", by = "ip", policy = "q" } } })',
     "on a cluster, `tag` names the layer"),
    # Policies over the server's bounds, which it would refuse on every request.
    (limiter(6379, '{ name = "a", by = "ip", policy = "SLIDINGLOG 1000000 1m" }'),
     "policy 'SLIDINGLOG 1000000 1m': limit must be an integer from 1 to 100000 (rl.sliding-log-max-limit"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "GCRA 1000000000000 1ms" }'),
     "policy 'GCRA 1000000000000 1ms': limit per period must be at most 1 per nanosecond"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "TOKENBUCKET 5 2000001 2ms" }'),
     "refill per period must be at most 1 per nanosecond"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "LEAKY 5 1000001 1ms" }'),
     "leak per period must be at most 1 per nanosecond"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'shared_dict = "nope",'),
     "`shared_dict` names a lua_shared_dict the configuration declares"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'denial_cache = "nope",'),
     "`denial_cache` names a lua_shared_dict the configuration declares"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'metrics = "nope",'),
     "`metrics` names a lua_shared_dict the configuration declares"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'denial_cache = "d", metrics = "d",'),
     "`denial_cache` is a lua_shared_dict of its own"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'denial_cache = "d", denial_cache_max_ms = 0,'),
     "`denial_cache_max_ms` is an integer from 1 to 315360000000: 0"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', "denial_cache_max_ms = 1000,"),
     "`denial_cache_max_ms` bounds the denial cache: name its lua_shared_dict in `denial_cache`"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', 'denial_cache = "d", denial_cache_exhausted = 1,'),
     "`denial_cache_exhausted` is true or false: 1"),
    (limiter(6379, '{ name = "a", by = "ip", policy = "p" }', "denial_cache_exhausted = true,"),
     "`denial_cache_exhausted` keeps admissions in the denial cache: name its lua_shared_dict in"),
])
def test_nginx_refuses_to_start_with_a_configuration_the_package_cannot_run(tmp_path, upstream, init, message):
    conf = tmp_path / "nginx.conf"
    conf.write_text(custom_conf(free_port(), upstream.port, init, http="lua_shared_dict d 1m;"))
    # (`nginx -t` does not run init_by_lua: start it, and it must exit at once.)
    out = subprocess.run(["nginx", "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "init_by_lua error: resty.rl: " in out.stderr and message in out.stderr, out.stderr


def test_policies_at_the_servers_bounds_are_decided(server, nginx_for, upstream):
    n = start(nginx_for, upstream, limiter(
        server.port, '{ name = "log", by = "ip", policy = "SLIDINGLOG 100000 1m" }, '
                     '{ name = "rate", by = "ip", policy = "GCRA 1000000 1ms" }'))
    # (the server refusing either would be a 500)
    assert [n.get("/a")[0] for _ in range(3)] == [200] * 3
    assert server.client().exists("rl:log:127.0.0.1")


def test_a_module_with_a_lower_sliding_log_bound_refuses_on_each_request(servers, nginx_for, upstream):
    server = servers("redis", True)
    c = server.client()
    c.flushall()
    c.config_set("rl.sliding-log-max-limit", 10)
    try:
        layer = '{ name = "log", by = "ip", policy = "SLIDINGLOG 100 1m" }'
        n = start(nginx_for, upstream, limiter(server.port, layer))
        assert n.get("/a")[0] == 500
        assert "rl: request refused with 500: ERR limit must be an integer from 1 to 10" in n.log()
    finally:
        c.config_set("rl.sliding-log-max-limit", 100000)


def test_nginx_t_passes_what_the_package_refuses_and_a_reload_keeps_the_old_configuration(
        servers, nginx_for, upstream, tmp_path):
    # `nginx -t` checks NGINX's own configuration: it does not run init_by_lua.
    refused = '{ name = "ip", by = "ip", policy = "FIXED 3 1y" }'
    conf = tmp_path / "nginx.conf"
    conf.write_text(custom_conf(free_port(), upstream.port, limiter(6379, refused)))
    out = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(conf)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "test is successful" in out.stderr, out.stderr
    # `nginx -s reload` does: the master logs the refusal and keeps the configuration it had.
    server = servers("redis", True)
    server.client().flushall()
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 3 1h" }'))
    assert n.get("/a")[0] == 200
    conf = n.dir / "nginx.conf"
    conf.write_text(custom_conf(n.port, upstream.port, limiter(server.port, refused)))
    out = subprocess.run(["nginx", "-p", str(n.dir), "-c", str(conf), "-s", "reload"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 10
    while "init_by_lua error: resty.rl: layer 'ip': policy 'FIXED 3 1y'" not in n.log():
        assert time.monotonic() < deadline, n.log()
        time.sleep(0.05)
    assert [n.get("/a")[0] for _ in range(3)] == [200, 200, 429]
    assert n.proc.poll() is None


@pytest.mark.parametrize("socket_field", ["_sock", "_socket"])
def test_openresty_s_resty_redis_is_used_where_it_is(servers, nginx_for, upstream, tmp_path, socket_field):
    # OpenResty installs lua-resty-redis as resty.redis: the same file, under that name here;
    # with its socket field renamed too, as a version keeping it elsewhere would, the package
    # asks it for its commands the usual way.
    shim = tmp_path / "openresty/resty"
    shim.mkdir(parents=True)
    debian = open("/usr/share/lua/5.1/nginx/redis.lua").read()
    assert debian.count("_M._VERSION = '") == 1 and '"_sock"' in debian
    text = debian.replace("_M._VERSION = '", "_M._VERSION = 'openresty-")
    (shim / "redis.lua").write_text(text.replace('"_sock"', f'"{socket_field}"').replace(
        "_sock = sock", f"{socket_field} = sock"))
    server = servers("redis", True)
    server.client().flushall()
    init = limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 5 1m" }, '
                                '{ name = "all", by = "$host", policy = "FIXED 5 1m" }') + \
        '\n        assert(require("resty.rl.server").redis._VERSION:find("^openresty%-"))'
    n = start(nginx_for, upstream, init, package_path=f"{tmp_path}/openresty/?.lua;")
    assert [n.get("/a")[0] for _ in range(6)] == [200] * 5 + [429]
    assert sorted(server.client().keys("*")) == ["rl:all:127.0.0.1", "rl:ip:127.0.0.1"]


def test_the_tag_is_escaped_and_a_request_without_it_is_tagged_none(servers, nginx_for, upstream):
    server = servers("redis", True)
    c = server.client()
    c.flushall()
    n = start(nginx_for, upstream, limiter(
        server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }, '
                     '{ name = "key", by = "$http_x_api_key", policy = "FIXED 100 1h" }', 'tag = "key",'))
    assert n.get("/a", {"X-API-Key": "a{b}%"})[0] == 200
    assert n.get("/a")[0] == 200
    assert sorted(c.keys("*")) == ["rl:{%none}:ip:127.0.0.1", "rl:{a%7Bb%7D%25}:ip:127.0.0.1",
                                   "rl:{a%7Bb%7D%25}:key:a{b}%"]


def test_ipv6_bits_chooses_the_subnet(servers, nginx_for, upstream):
    server = servers("redis", True)
    c = server.client()
    c.flushall()
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }',
                                           "ipv6_bits = 64,"),
              server="set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;")
    for address in ("2001:db8:1:1::1", "2001:db8:1:1:ffff::2", "2001:db8:1:2::1"):
        assert n.get("/a", {"X-Forwarded-For": address})[0] == 200
    assert sorted(c.keys("*")) == ["rl:ip:2001:db8:1:1::/64", "rl:ip:2001:db8:1:2::/64"]


def test_decide_answers_without_answering_the_request(servers, nginx_for, upstream):
    server = servers("redis", True)
    server.client().flushall()
    show = ('local r, err, kind = limiter:decide() '
            'if r then ngx.say(r.allowed, " ", r.layer.name, " ", r.layer.key, " ", table.concat(r.reply, " ")) '
            'else ngx.say(tostring(err), " ", tostring(kind)) end return ngx.exit(200)')
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "GCRA 1 1h" }'),
              access=show)
    assert n.text("/a") == "true ip rl:ip:127.0.0.1 1 1 0 0 3600000"
    got = n.text("/a").split()
    assert got[:6] == ["false", "ip", "rl:ip:127.0.0.1", "0", "1", "0"] and 0 < int(got[6]) <= 3600000


def test_an_upstreams_own_headers_are_hidden_with_proxy_hide_header(servers, nginx_for, upstream):
    server = servers("redis", True)
    server.client().flushall()
    init = limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }')
    both = start(nginx_for, upstream, init)
    raw = subprocess.run(["curl", "-s", "-D", "-", "-o", "/dev/null", "-H", "X-Upstream-Limits: 1",
                          f"http://127.0.0.1:{both.port}/a"], capture_output=True, text=True).stdout
    assert raw.count("X-RateLimit-Remaining:") == 2, raw
    hidden = start(nginx_for, upstream, init, server="proxy_hide_header X-RateLimit-Remaining;")
    raw = subprocess.run(["curl", "-s", "-D", "-", "-o", "/dev/null", "-H", "X-Upstream-Limits: 1",
                          f"http://127.0.0.1:{hidden.port}/a"], capture_output=True, text=True).stdout
    assert raw.count("X-RateLimit-Remaining:") == 1 and "X-RateLimit-Remaining: 999" not in raw, raw


def test_a_busy_server_is_out_of_reach(nginx_for, upstream):
    server = Server("redis", True, ("--busy-reply-threshold", "50")).start()
    try:
        n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 100 1h" }'))
        script = subprocess.Popen(["redis-cli", "-p", str(server.port), "EVAL",
                                   "local t = redis.call('TIME') while true do end", "0"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            assert n.get("/a")[0] == 503
            assert "fail closed): BUSY" in n.log()
        finally:
            redis.Redis(port=server.port).script_kill()
            script.wait(timeout=10)
        assert n.get("/a")[0] == 200
    finally:
        server.close()


def test_headers_write_the_largest_counts_in_digits(servers, nginx_for, upstream):
    server = servers("redis", True)
    server.client().flushall()
    big = "GCRA 1000000000000 3650d BURST 1000000000000"
    n = start(nginx_for, upstream, limiter(server.port, f'{{ name = "ip", by = "ip", policy = "{big}" }}'))
    status, headers, _ = n.get("/a")
    assert status == 200
    assert headers["x-ratelimit-limit"] == "1000000000000"
    assert headers["x-ratelimit-remaining"] == "999999999999"
    assert headers["ratelimit-policy"] == '"ip";q=1000000000000;w=315360000'
    assert headers["ratelimit"] == f'"ip";r=999999999999;t={headers["x-ratelimit-reset"]}'


def test_headers_false_leaves_admitted_responses_bare_and_denials_whole(servers, nginx_for, upstream):
    server = servers("redis", True)
    server.client().flushall()
    n = start(nginx_for, upstream, limiter(server.port, '{ name = "ip", by = "ip", policy = "FIXED 1 1h" }',
                                           "headers = false,"))
    status, headers, _ = n.get("/a")
    assert status == 200 and not any(h.startswith(("x-ratelimit", "ratelimit")) for h in headers)
    status, headers, _ = n.get("/a")
    assert status == 429 and headers["x-ratelimit-limit"] == "1" and "retry-after" in headers
