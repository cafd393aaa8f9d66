"""The denial cache and the metrics, over HTTP on real NGINX: a cached denial is answered as
Redis answers it (status, body, headers, `Retry-After` counting down) without a call (counted
in the server's `INFO commandstats`), ends with its wait (then Redis is asked again), is never
a SHADOW policy's would-be denial nor another policy's, nor a smaller cost's; 100,000 distinct identities flooding
stay within the configured lua_shared_dict and none is admitted that Redis denies; the
counters equal the requests sent and their endpoint passes `promtool check metrics`."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time

import pytest
from conftest import Server, custom_conf, free_port
from test_layers import define

DICTS = "lua_shared_dict rl_denials 1m; lua_shared_dict rl_metrics 1m;"
OPTIONS = 'denial_cache = "rl_denials", metrics = "rl_metrics",'
SECONDS = ("retry-after", "x-ratelimit-reset")


def decisions(server: Server) -> int:
    """The rate-limiting calls the server has answered: the module's RL.* commands, or FCALL."""
    total = 0
    for name, stats in server.client().info("commandstats").items():
        command = name.removeprefix("cmdstat_").lower()
        if command.startswith("rl.") or command in ("fcall", "fcall_ro"):
            total += int(stats["calls"])
    return total


def limiter_init(port: int, layers: str, options: str = OPTIONS, name: str = "limiter") -> str:
    return (f'{name} = rl.new({{ redis = {{ host = "127.0.0.1", port = {port} }}, {options} '
            f"layers = {{ {layers} }} }})")


METRICS = """
        location = /metrics { content_by_lua_block { require("resty.rl").metrics("rl_metrics") } }
        location = /cache { content_by_lua_block {
            local d = ngx.shared.rl_denials
            ngx.say(#d:get_keys(0), " ", d:capacity())
        } }
"""


def start(nginx_for, upstream, init: str, server: str = "", **kw):
    return nginx_for(lambda port: custom_conf(port, upstream.port, init, http=DICTS,
                                              server=METRICS + server, **kw))


def counters(n) -> dict[tuple[str, str], int]:
    """The metrics endpoint's counters: {(layer, result): count}."""
    out = {}
    for line in n.text("/metrics").split("\n"):
        m = re.match(r'^rl_decisions_total\{layer="([^"]*)",result="([^"]*)"\} (\d+)$', line)
        if m:
            out[(m[1], m[2])] = int(m[3])
    return out


def without_times(headers: dict[str, str]) -> dict[str, str]:
    drop = {"date", "retry-after", "x-ratelimit-reset", "ratelimit", "connection"}
    return {k: v for k, v in headers.items() if k not in drop}


def close_in_time(a: dict[str, str], b: dict[str, str]) -> bool:
    """The same counts of seconds, or one apart (the two answers fell either side of a second)."""
    return all(abs(int(a[h]) - int(b[h])) <= 1 for h in SECONDS)


TWO_LAYERS = ('{ name = "ip", by = "ip", policy = "FIXED 1000 1h" }, '
              '{ name = "user", by = "$http_x_user", policy = "FIXED 2 1h" }')


@pytest.mark.parametrize("layers", [
    TWO_LAYERS,
    '{ name = "user", by = "$http_x_user", policy = "GCRA 2 2h BURST 2" }',
    '{ name = "user", by = "$http_x_user", policy = "GCRA 2 1m BURST 2 PENALTY 2h" }',  # R: the penalty's 2 hours
], ids=["rl-all", "one-layer", "penalty"])
def test_a_cached_denial_is_redis_s_answer_without_a_call(server, nginx_for, upstream, layers):
    cached = start(nginx_for, upstream, limiter_init(server.port, layers))
    plain = start(nginx_for, upstream, limiter_init(server.port, layers, options=""))
    alice = {"X-User": "alice"}
    assert [cached.request("/a", alice)[0] for _ in range(2)] == [200, 200]
    first = cached.request("/a", alice)
    assert first[0] == 429
    before, served = decisions(server), len(upstream.served)
    again = [cached.request("/a", alice) for _ in range(5)]
    assert decisions(server) == before and len(upstream.served) == served  # no call, no upstream
    asked = plain.request("/a", alice)  # Redis's answer now, through an NGINX without the cache
    assert decisions(server) == before + 1
    for status, headers, body in [*again, asked]:
        assert status == 429 and body == first[2], (status, body)
        assert without_times(headers) == without_times(first[1])
        assert headers["x-ratelimit-remaining"] == "0"
        assert headers["ratelimit"] == f'"user";r=0;t={headers["x-ratelimit-reset"]}'
        assert close_in_time(headers, first[1]), (headers, first[1])
    assert close_in_time(again[-1][1], asked[1]), (again[-1][1], asked[1])
    if "PENALTY" in layers:
        assert int(first[1]["retry-after"]) > 7000  # kept for the penalty, not the limiter's 30 s
    # Retry-After counts down: after a second and a bit, at least one less.
    time.sleep(1.1)
    later = cached.request("/a", alice)
    assert later[0] == 429 and decisions(server) == before + 1
    assert int(later[1]["retry-after"]) <= int(first[1]["retry-after"]) - 1
    assert counters(cached)[("user", "over_limit_with_local_cache")] == 6
    # Another identity is not denied by alice's entry.
    assert cached.request("/a", {"X-User": "bob"})[0] == 200


def test_a_cached_denial_ends_with_its_wait_then_redis_decides(server, nginx_for, upstream):
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "user", by = "$http_x_user", '
                                                             'policy = "GCRA 1 1500ms" }'))
    alice = {"X-User": "alice"}
    assert n.request("/a", alice)[0] == 200
    status, headers, _ = n.request("/a", alice)
    assert status == 429 and headers["retry-after"] == "2"
    statuses = []
    while not statuses or statuses[-1] != 200:
        statuses.append(n.request("/a", alice)[0])
        assert len(statuses) < 2000, "the denial never ended"
        time.sleep(0.02)
    got = counters(n)
    # Each request was answered once: by the cache until the wait ended, then by Redis (which
    # may deny the few that arrive in the milliseconds between the cache's end, counted from
    # before Redis decided, and Redis's).
    assert got[("user", "within_limit")] == 2
    assert got[("user", "over_limit")] + got[("user", "over_limit_with_local_cache")] == len(statuses)
    assert got[("user", "over_limit_with_local_cache")] >= 1 and got[("user", "over_limit")] <= 4, got


def test_a_shadow_policy_s_would_be_denial_is_not_cached(server, nginx_for, upstream, tmp_path):
    define(server, ["edge-try FIXED 1 1h SHADOW"], tmp_path)
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "try", by = "ip", policy = "edge-try" }'))
    before = decisions(server)
    assert [n.request("/a")[0] for _ in range(4)] == [200] * 4
    assert decisions(server) == before + 4  # each asked Redis
    got = counters(n)
    assert got[("try", "within_limit")] == 1 and got[("try", "shadow_mode")] == 3
    assert got[("try", "over_limit_with_local_cache")] == 0


def test_a_smaller_cost_is_asked_of_redis_and_a_larger_one_denied_from_the_cache(server, nginx_for, upstream):
    weights = "".join(f"""
        location = /w{cost} {{
            access_by_lua_block {{ limiter:access({cost}) }}
            content_by_lua_block {{ ngx.say("{{}}") }}
        }}
""" for cost in (1, 3, 4))
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "user", by = "$http_x_user", '
                                                             'policy = "FIXED 5 1h" }'), server=weights)
    alice = {"X-User": "alice"}

    def step(path: str) -> tuple[int, int]:
        """The status of `path`, and the calls Redis answered for it."""
        before = decisions(server)
        status = n.request(path, alice)[0]
        return status, decisions(server) - before

    assert n.request("/w1", {"X-User": "first"})[0] == 200  # the library loaded, if it is used
    assert step("/w3") == (200, 1)  # 2 of 5 left
    assert step("/w3") == (429, 1)  # 3 does not fit: denied by Redis, kept for cost 3
    assert step("/w3") == (429, 0)  # from the cache
    assert step("/w4") == (429, 0)  # a larger cost does not fit either: from the cache
    assert step("/w1") == (200, 1)  # a smaller one is asked of Redis, which admits it
    assert step("/w1") == (200, 1)  # 0 left
    assert step("/w1") == (429, 1)  # denied by Redis, kept for cost 1
    assert [step(p) for p in ("/w1", "/w3")] == [(429, 0), (429, 0)]
    got = counters(n)
    user = [got[("user", r)] for r in ("within_limit", "over_limit", "over_limit_with_local_cache")]
    assert user == [1 + 3, 2, 4]


def test_a_cost_is_spent_on_every_layer_and_refunded_whole(server, nginx_for, upstream):
    more = """
        location = /spend { content_by_lua_block { limiter:access(3) ngx.say(tostring(limiter:refund())) } }
        location = /half { access_by_lua_block { limiter:access(1.5) } content_by_lua_block { ngx.say("{}") } }
"""
    n = start(nginx_for, upstream, limiter_init(server.port, TWO_LAYERS.replace("FIXED 2 1h", "FIXED 5 1h")),
              server=more)
    alice = {"X-User": "alice"}
    assert n.text("/spend", alice) == "true"  # 3 spent on each layer, then given back
    status, headers, _ = n.request("/a", alice)
    assert status == 200 and headers["x-ratelimit-remaining"] == "4"
    assert n.request("/half", alice)[0] == 500
    assert "the cost is an integer from 0 to 1000000000000: 1.5" in n.log()


def test_a_denial_under_one_policy_does_not_deny_under_another(server, nginx_for, upstream):
    # The layer's policy is read from a request header: a raised plan is decided by Redis.
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "user", by = "$http_x_user", '
                                                             'policy = "$http_x_plan" }'))
    small = {"X-User": "alice", "X-Plan": "FIXED 1 1h"}
    assert [n.request("/a", small)[0] for _ in range(3)] == [200, 429, 429]
    assert counters(n)[("user", "over_limit_with_local_cache")] == 1
    assert n.request("/a", {"X-User": "alice", "X-Plan": "FIXED 5 1h"})[0] == 200


def test_a_ban_lifted_or_a_refund_made_on_this_node_ends_its_cached_denials(server, nginx_for, upstream):
    init = limiter_init(server.port, '{ name = "user", by = "$http_x_user", policy = "FIXED 1 1h" }')
    lift = """
        location = /lift { content_by_lua_block {
            ngx.say(tostring(limiter:ban("rl:user:" .. ngx.var.arg_user, 0)))
        } }
        location = /refunded { content_by_lua_block {
            limiter:access()
            local second = limiter:decide()
            limiter:refund()
            ngx.say(tostring(second.allowed), " ", tostring(second.cached))
        } }
"""
    n = start(nginx_for, upstream, init, server=lift)
    alice = {"X-User": "alice"}
    assert [n.request("/a", alice)[0] for _ in range(3)] == [200, 429, 429]
    server.client().delete("rl:user:alice")  # as a refund elsewhere would: seen here only at R's end
    assert n.request("/a", alice)[0] == 429
    assert n.text("/lift?user=alice") == "false"
    assert n.request("/a", alice)[0] == 200  # asked again
    # A refund made here drops the entry too: admitted, then a second decision denied (and
    # kept), then the first's unit given back.
    bob = {"X-User": "bob"}
    assert n.text("/refunded", bob) == "false nil"
    assert n.request("/a", bob)[0] == 200


def test_denial_cache_max_ms_shortens_the_time_kept(server, nginx_for, upstream):
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "user", by = "$http_x_user", '
                                                             'policy = "FIXED 1 1h" }',
                                                options=OPTIONS + " denial_cache_max_ms = 1,"))
    alice = {"X-User": "alice"}
    assert n.request("/a", alice)[0] == 200
    before = decisions(server)
    for _ in range(3):
        time.sleep(0.01)  # past the millisecond the denial is kept
        status, headers, _ = n.request("/a", alice)
        assert status == 429 and headers["retry-after"] == headers["x-ratelimit-reset"]
    assert decisions(server) == before + 3


ENTRY = """
        location = /entry { content_by_lua_block {
            ngx.say(ngx.shared.rl_denials:get(ngx.var.arg_k) or "none")
        } }
"""


@pytest.mark.parametrize("policy,next_free_ms", [
    # GCRA: the TAT less (burst - 1) units (1 s each); a fixed window: its end.
    ("GCRA 1 1s BURST 3", lambda state: int(state.split(":")[1]) / 1e6 - 2000),
    ("FIXED 3 1h", lambda state: int(state.split(":")[1]) + 3_600_000),
], ids=["gcra", "fixed"])
def test_with_exhausted_an_admission_that_left_nothing_denies_until_the_next_unit(
        server, nginx_for, upstream, policy, next_free_ms):
    """`denial_cache_exhausted`: the admission that leaves nothing is kept as a denial, whose
    end is never past the instant Redis admits again (read from the key's state), and the
    requests after it are denied without a call, the first included."""
    n = start(nginx_for, upstream, limiter_init(
        server.port, f'{{ name = "user", by = "$http_x_user", policy = "{policy}" }}',
        options=OPTIONS + " denial_cache_exhausted = true,"), server=ENTRY)
    alice = {"X-User": "alice"}
    assert [n.request("/a", alice)[0] for _ in range(3)] == [200, 200, 200]
    entry = n.text("/entry?k=rl:user:alice").split()
    free = next_free_ms(server.client().get("rl:user:alice"))
    retry_end = int(entry[1])
    assert free - 1000 < retry_end <= free, (entry, free)
    assert (entry[4], entry[5]) == ("0", "1")  # remaining 0, for every cost
    before, served = decisions(server), len(upstream.served)
    denied = [n.request("/a", alice) for _ in range(5)]
    assert [d[0] for d in denied] == [429] * 5
    assert decisions(server) == before and len(upstream.served) == served
    assert denied[0][1]["x-ratelimit-remaining"] == "0" and int(denied[0][1]["retry-after"]) >= 1
    got = counters(n)
    assert (got[("user", "within_limit")], got[("user", "over_limit")],
            got[("user", "over_limit_with_local_cache")]) == (3, 0, 5)


@pytest.mark.parametrize("policy", ["SLIDING 1 1h", "SLIDINGLOG 1 1h", "FIXED 1 1h PENALTY 1m"])
def test_with_exhausted_what_the_reply_does_not_time_is_asked_of_redis(
        server, nginx_for, upstream, policy):
    """The sliding windows' replies do not say when the next unit is free; a penalty's first
    denial must reach Redis (it starts the penalty)."""
    n = start(nginx_for, upstream, limiter_init(
        server.port, f'{{ name = "user", by = "$http_x_user", policy = "{policy}" }}',
        options=OPTIONS + " denial_cache_exhausted = true,"), server=ENTRY)
    alice = {"X-User": "alice"}
    assert n.request("/a", alice)[0] == 200
    assert n.text("/entry?k=rl:user:alice").strip() == "none"
    before = decisions(server)
    assert n.request("/a", alice)[0] == 429
    assert decisions(server) == before + 1


FLOOD = """
local threads, made = {}, 0
function setup(thread)
    made = made + 1
    thread:set("index", made)
    threads[made] = thread
end
function init(args)
    total, step, marks, sent, seen, other = tonumber(args[1]), tonumber(args[2]), args[3], 0, 0, 0
end
function request()
    local id = (index - 1) + sent * step
    sent = sent + 1
    return wrk.format("GET", "/flood", { ["X-Id"] = "c" .. (id % total) })
end
function response(status)
    seen = seen + 1
    if status ~= 429 then
        other = other + 1
    end
    if seen == total / step then -- its share answered: stopped, and said so
        wrk.thread:stop()
        io.open(marks .. "/" .. index, "w"):close()
    end
end
function done(summary)
    local other = 0
    for _, t in ipairs(threads) do
        other = other + t:get("other")
    end
    io.write(string.format("requests %d other %d\\n", summary.requests, other))
end
"""


@pytest.mark.parametrize("with_module", [True, False], ids=["module", "library"])
def test_100000_flooding_identities_stay_within_the_dict_and_none_is_admitted(
        servers, nginx_for, upstream, tmp_path, with_module):
    server = servers("redis", with_module)
    c = server.client()
    c.flushall()
    c.function_flush()
    total = 100_000
    flood = 'location = /flood { access_by_lua_block { limiter:access() } content_by_lua_block { ngx.say("{}") } }'
    n = start(nginx_for, upstream,
              limiter_init(server.port, '{ name = "id", by = "$http_x_id", policy = "FIXED 1 1h" }'), server=flood)
    assert n.request("/flood", {"X-Id": "first"})[0] == 200  # the library loaded, if it is used
    pipe = c.pipeline(transaction=False)
    for i in range(total):  # every identity banned: Redis denies each of them for an hour
        if with_module:
            pipe.execute_command("RL.BAN", f"rl:id:c{i}", 3_600_000)
        else:
            pipe.execute_command("FCALL", "rl_ban", 1, f"rl:id:c{i}", 3_600_000)
    pipe.execute()
    assert shutil.which("wrk"), "wrk drives the flood: scripts/install-deps.sh"
    script, marks = tmp_path / "flood.lua", tmp_path / "marks"
    script.write_text(FLOOD)
    marks.mkdir()
    # wrk runs for its duration whatever its threads do: stopped (SIGINT) once both threads
    # have had their share answered, it prints the summary.
    wrk = subprocess.Popen(["wrk", "-t2", "-c16", "-d300s", "-s", str(script), f"http://127.0.0.1:{n.port}/",
                            "--", str(total), "2", str(marks)], stdout=subprocess.PIPE, text=True)
    try:
        while len(list(marks.iterdir())) < 2 and wrk.poll() is None:
            time.sleep(0.2)
        wrk.send_signal(signal.SIGINT)
        out, _ = wrk.communicate(timeout=30)
    finally:
        if wrk.poll() is None:
            wrk.kill()
            wrk.wait()
    m = re.search(r"requests (\d+) other (\d+)", out)
    assert m, out
    assert int(m[1]) >= total and int(m[2]) == 0, out  # all denied: none admitted
    keys, capacity = (int(x) for x in n.text("/cache").split())
    # The dict held what its megabyte holds: its least recently used made room for the rest.
    assert capacity == 1024 * 1024 and 0 < keys < total / 4, keys
    assert "no memory" not in n.log() and "did not keep" not in n.log()
    got = counters(n)
    # Every request wrk counted was counted here (and those in flight when it stopped).
    assert got[("id", "within_limit")] == 1
    assert got[("id", "over_limit")] + got[("id", "over_limit_with_local_cache")] >= int(m[1])
    # Identities evicted long ago are asked of Redis, which still denies them (the first few
    # came round again in the requests in flight when the threads stopped); kept again, they
    # are then denied without a call.
    before = decisions(server)
    again = [{"X-Id": f"c{i}"} for i in range(1000, 1020)]
    assert [n.request("/flood", h)[0] for h in again] == [429] * 20
    assert decisions(server) == before + 20
    assert [n.request("/flood", h)[0] for h in again] == [429] * 20
    assert decisions(server) == before + 20


def test_the_counters_equal_the_requests_sent_and_pass_promtool(server, nginx_for, upstream):
    dead = free_port()
    init = "\n".join([
        limiter_init(server.port, TWO_LAYERS),
        limiter_init(server.port, '{ name = "dry", by = "ip", policy = "FIXED 1 1h" }',
                     options=OPTIONS + " shadow = true,", name="dry"),
        limiter_init(dead, '{ name = "down_open", by = "ip", policy = "FIXED 1 1h" }',
                     options=OPTIONS + " fail_open = true,", name="down_open"),
        limiter_init(dead, '{ name = "down_closed", by = "ip", policy = "FIXED 1 1h" }', name="down_closed"),
        limiter_init(server.port, '{ name = "bad", by = "ip", policy = "$http_x_policy" }', name="bad"),
    ])
    more = "".join(f"""
        location = /{name} {{ access_by_lua_block {{ {name}:access() }} proxy_pass http://127.0.0.1:{upstream.port}; }}
""" for name in ("dry", "down_open", "down_closed", "bad"))
    n = start(nginx_for, upstream, init, server=more)
    alice = {"X-User": "alice"}
    sent = [n.request("/a", alice)[0] for _ in range(7)]  # 2 admitted, 1 denied, 4 from the cache
    sent += [n.request("/a")[0] for _ in range(3)]  # no user: the ip layer alone, admitted
    sent += [n.request("/dry")[0] for _ in range(3)]  # 1 admitted, 2 shadow
    sent += [n.request("/down_open")[0] for _ in range(2)]
    sent += [n.request("/down_closed")[0] for _ in range(2)]
    sent += [n.request("/bad", {"X-Policy": "NOT A POLICY"})[0] for _ in range(2)]
    assert sent == [200, 200] + [429] * 5 + [200] * 3 + [200] * 3 + [200] * 2 + [503] * 2 + [500] * 2
    got = counters(n)
    want = {("user", "within_limit"): 2, ("user", "over_limit"): 1, ("user", "over_limit_with_local_cache"): 4,
            ("ip", "within_limit"): 3, ("dry", "within_limit"): 1, ("dry", "shadow_mode"): 2,
            ("down_open", "unavailable_fail_open"): 2, ("down_closed", "unavailable"): 2, ("bad", "error"): 2}
    assert {k: v for k, v in got.items() if v} == want
    assert sum(got.values()) == len(sent)
    # Every layer's every result is listed, from 0.
    assert len(got) == 6 * 9
    status, headers, body = n.request("/metrics")
    assert status == 200 and headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert shutil.which("promtool"), "promtool (Debian's prometheus) checks the format: scripts/install-deps.sh"
    check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert check.returncode == 0 and check.stdout == b"" and check.stderr == b"", check


def test_label_values_are_escaped_as_the_format_says(servers, nginx_for, upstream):
    # Layer names hold nothing to escape; a dict written by hand shows the renderer's escaping.
    server = servers("redis", True)
    show = """
        location = /hand { content_by_lua_block {
            local d = ngx.shared.rl_metrics
            d:flush_all()
            d:set('a"b\\\\c\\nd' .. string.char(31) .. "over_limit", 7)
            ngx.print(require("resty.rl.metrics").render(d))
        } }
"""
    n = start(nginx_for, upstream, limiter_init(server.port, '{ name = "ip", by = "ip", policy = "FIXED 1 1h" }'),
              server=show)
    status, _, body = n.request("/hand")
    assert status == 200
    assert body.decode().split("\n")[2] == 'rl_decisions_total{layer="a\\"b\\\\c\\nd",result="over_limit"} 7'
    check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert check.returncode == 0 and check.stdout == b"" and check.stderr == b"", check
