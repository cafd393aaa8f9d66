"""Prometheus for real: Debian's redis_exporter (`--script deploy/prometheus/rl-exporter.lua`)
scrapes a redis-server with the module, and Debian's NGINX with resty.rl serves its metrics
location; Prometheus scrapes both with deploy/prometheus/rl-scrape.yml's jobs, evaluates
rl-rules.yml, and its HTTP API answers what the traffic sent implies (INFO rl, INFO
rl_policies, RL.TOP; the edge's rl_decisions_total per layer and result, the layer whose
denials come from its denial cache named; the edge's alert pending while its limiter cannot
reach Redis); the alerting rules pass `promtool test rules`."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import redis
from conftest import ROOT, free_port, start_server, wait_until

DEPLOY = ROOT / "deploy/prometheus"
EXPORTER = shutil.which("prometheus-redis-exporter")
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
NGINX = os.environ.get("RL_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
NGINX_LIB = Path(os.environ.get("RL_NGINX_LIB", ROOT / "clients/nginx/lib"))


def test_alerting_rules_pass_their_unit_tests():
    assert PROMTOOL, "promtool not found: scripts/install-deps.sh installs prometheus"
    out = subprocess.run([PROMTOOL, "check", "rules", "rl-rules.yml"], cwd=DEPLOY, check=False,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([PROMTOOL, "test", "rules", "rl-rules-test.yml"], cwd=DEPLOY, check=False,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


def test_the_edge_alert_names_the_results_the_nginx_package_counts():
    """RlLimiterUnavailableAtEdge reads rl_decisions_total with every result of
    resty.rl's metrics that means Redis gave no decision, and no other."""
    rules = (DEPLOY / "rl-rules.yml").read_text()
    alert = rules[rules.index("alert: RlLimiterUnavailableAtEdge"):]
    expr = re.search(r"expr: (.*)", alert)[1]
    assert "rate(rl_decisions_total{" in expr, expr
    in_rule = set(re.search(r'result=~"([^"]*)"', expr)[1].split("|"))
    lua = (NGINX_LIB / "resty/rl/metrics.lua").read_text()
    results = re.findall(r'^\s*"(\w+)",\s*--', lua[lua.index("_M.RESULTS"):], re.MULTILINE)
    assert "over_limit_with_local_cache" in results, results
    assert in_rule == {r for r in results if r.startswith(("unavailable", "insured"))}, (in_rule, results)


def query(port: int, expr: str) -> dict[tuple, float]:
    """An instant query's result: {labels (sorted, without job/instance): value}."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    out = {}
    for r in body["data"]["result"]:
        labels = tuple(sorted((k, v) for k, v in r["metric"].items()
                              if k not in ("job", "instance")))
        out[labels] = float(r["value"][1])
    return out


def value(port: int, expr: str) -> float | None:
    result = query(port, expr)
    assert len(result) <= 1, result
    return next(iter(result.values()), None)


def nginx_conf(port: int, metrics_port: int, redis_port: int, down_port: int) -> str:
    """An NGINX with resty.rl: `/api` limited per client address (FIXED 1000 1h) and per
    `X-User` (FIXED 3 1h) by Redis on `redis_port`, with the denial cache on; `/down` by a
    limiter whose Redis (`down_port`) is not there, fail-open; both counted in one metrics
    dict, served on `metrics_port` as docs/nginx.md shows."""
    return f"""
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 2;
pid nginx.pid;
error_log error.log info;
events {{ worker_connections 256; }}
http {{
    access_log off;
    lua_package_path "{NGINX_LIB}/?.lua;;";
    lua_shared_dict rl 1m;
    lua_shared_dict rl_denials 1m;
    lua_shared_dict rl_metrics 1m;
    init_by_lua_block {{
        local rl = require "resty.rl"
        local ip = {{ name = "ip", by = "ip", policy = "FIXED 1000 1h" }}
        local user = {{ name = "user", by = "$http_x_user", policy = "FIXED 3 1h" }}
        local edge = {{ name = "edge", by = "ip", policy = "FIXED 1000 1h" }}
        limits = {{
            api = rl.new({{ redis = {{ host = "127.0.0.1", port = {redis_port} }}, shared_dict = "rl",
                           denial_cache = "rl_denials", metrics = "rl_metrics", layers = {{ ip, user }} }}),
            down = rl.new({{ redis = {{ host = "127.0.0.1", port = {down_port} }}, shared_dict = "rl",
                            fail_open = true, metrics = "rl_metrics", layers = {{ edge }} }}),
        }}
    }}
    server {{
        listen 127.0.0.1:{port};
        location = /api {{
            access_by_lua_block {{ limits.api:access() }}
            content_by_lua_block {{ ngx.say("ok") }}
        }}
        location = /down {{
            access_by_lua_block {{ limits.down:access() }}
            content_by_lua_block {{ ngx.say("ok") }}
        }}
    }}
    server {{
        listen 127.0.0.1:{metrics_port};
        location = /metrics {{
            content_by_lua_block {{ require("resty.rl").metrics("rl_metrics") }}
        }}
    }}
}}
"""


def get(port: int, path: str, headers: dict[str, str] | None = None) -> int:
    """One GET on a connection of its own: its status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        res = conn.getresponse()
        res.read()
        return res.status
    finally:
        conn.close()


def settles(prom: int, expected: dict[str, float], deadline_s: float = 60) -> None:
    """Polls Prometheus (scraping every second) until every query answers its value, then
    asserts them (the first that differs is named)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if all(value(prom, expr) == want for expr, want in expected.items()):
            break
        time.sleep(0.2)
    for expr, want in expected.items():
        assert value(prom, expr) == want, expr


@pytest.fixture
def stack(tmp_path):
    """(redis client, prometheus port, nginx port): a server with the module, the exporter,
    NGINX with resty.rl, and Prometheus scraping the exporter and NGINX's metrics location
    with rl-scrape.yml's jobs and evaluating rl-rules.yml every second."""
    assert EXPORTER and PROMETHEUS, "scripts/install-deps.sh installs prometheus-redis-exporter and prometheus"
    assert Path(NGINX).exists(), "scripts/install-deps.sh installs nginx and libnginx-mod-http-lua"
    procs = []
    with (start_server(tmp_path) as (url, port), open(tmp_path / "exporter.log", "w") as exporter_log,
          open(tmp_path / "prometheus.log", "w") as prometheus_log,
          open(tmp_path / "nginx-stderr.log", "w") as nginx_log, socket.socket() as down):
        exporter_port, prometheus_port = free_port(), free_port()
        nginx_port, metrics_port = free_port(), free_port()
        # The down limiter's Redis: a port held bound and never listening (refused).
        down.bind(("127.0.0.1", 0))
        down_port = down.getsockname()[1]
        procs.append(subprocess.Popen(
            [EXPORTER, "--redis.addr", f"redis://127.0.0.1:{port}",
             "--web.listen-address", f"127.0.0.1:{exporter_port}",
             "--script", str(DEPLOY / "rl-exporter.lua")],
            stdout=exporter_log, stderr=subprocess.STDOUT))
        nginx_dir = tmp_path / "nginx"
        nginx_dir.mkdir()
        (nginx_dir / "nginx.conf").write_text(nginx_conf(nginx_port, metrics_port, port, down_port))
        procs.append(subprocess.Popen(
            [NGINX, "-p", str(nginx_dir), "-c", str(nginx_dir / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=nginx_log))
        wait_until(lambda: socket.create_connection(("127.0.0.1", metrics_port), timeout=1).close() is None,
                   procs[-1], "nginx", nginx_dir / "error.log")
        scrape = (DEPLOY / "rl-scrape.yml").read_text()
        for old, new in [("localhost:9121", f"127.0.0.1:{exporter_port}"),
                         ("localhost:9145", f"127.0.0.1:{metrics_port}")]:
            assert scrape.count(old) == 1, f"rl-scrape.yml no longer has {old}"
            scrape = scrape.replace(old, new)
        config = scrape.replace(
            "scrape_configs:",
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {DEPLOY / 'rl-rules.yml'}\nscrape_configs:", 1)
        (tmp_path / "prometheus.yml").write_text(config)
        procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=prometheus_log, stderr=subprocess.STDOUT))
        try:
            # Both targets scraped once: the edge's counters are there, from 0, before any traffic.
            wait_until(lambda: value(prometheus_port, "count(up == 1)") == 2, procs[-1], "prometheus",
                       tmp_path / "prometheus.log", timeout=60)
            yield redis.Redis.from_url(url, decode_responses=True), prometheus_port, nginx_port
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def test_prometheus_scrapes_the_modules_counters_and_top_keys(stack):
    r, prom, _ = stack
    r.execute_command("RL.POLICY", "SET", "api:free", "FIXED", "3", "1h")
    sent = {"u1": 10, "u2": 4}
    for key, n in sent.items():
        for _ in range(n):
            r.execute_command("RL.LIMIT", key, "api:free")
    for _ in range(5):
        r.execute_command("RL.FIXED", "k", "1", "1h")
    digest = r.execute_command("RL.POLICY", "DIGEST")
    expected = {
        'redis_rl_policy_calls_total{policy="api:free"}': 14,
        'redis_rl_policy_admitted_total{policy="api:free"}': 6,
        'redis_rl_policy_denied_total{policy="api:free"}': 8,
        # remaining 0 of 3 (a fifth rounds down to 0): each key's third call.
        'redis_rl_policy_near_limit_total{policy="api:free"}': 2,
        'redis_rl_calls_total{command="rl.fixed"}': 5,
        'redis_rl_denied_total{command="rl.fixed"}': 4,
        'redis_rl_calls_total{command="rl.limit"}': 14,
        'redis_rl_top_denials{policy="api:free",key="u1"}': 7,
        'redis_rl_top_denials{policy="api:free",key="u2"}': 1,
        'redis_rl_top_overestimate{policy="api:free",key="u1"}': 0,
        'redis_rl_top_denials{command="rl.fixed",key="k"}': 4,
        f'redis_rl_policy_digest_info{{digest="{digest}"}}': 1,
        "redis_rl_policies": 1,
        "redis_rl_waiting": 0,
    }

    # Scraped every second: wait for a scrape after the traffic (then every value is there).
    settles(prom, expected)
    # Only the script's pairs are renamed: no raw pair is left.
    assert query(prom, 'redis_script_values{key=~"redis_rl_.*"}') == {}


def test_the_exporter_script_passes_luacheck():
    luacheck = shutil.which("luacheck")
    assert luacheck, "scripts/install-deps.sh installs lua-check"
    out = subprocess.run([luacheck, "--no-color", "--std", "lua51", "rl-exporter.lua"], cwd=DEPLOY,
                         check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_prometheus_scrapes_the_edges_decisions_and_names_the_cached_layer(stack):
    _, prom, nginx = stack
    # The edge's counters, listed from 0 when its limiters were made, are in Prometheus before
    # any traffic: rate() then sees them rise.
    settles(prom, {'rl_decisions_total{layer="user",result="over_limit_with_local_cache"}': 0,
                   'rl_decisions_total{layer="edge",result="unavailable_fail_open"}': 0})

    # FIXED 3 1h per user: each user's fourth request is denied by Redis, and the denial cache
    # answers the ones after it without a call.
    sent = {"a": 6, "b": 5}
    for user, n in sent.items():
        statuses = [get(nginx, "/api", {"X-User": user}) for _ in range(n)]
        assert statuses == [200] * 3 + [429] * (n - 3), (user, statuses)
    # The second limiter's Redis is not there: fail-open lets both through, unavailable.
    assert [get(nginx, "/down") for _ in range(2)] == [200, 200]

    admitted = sum(min(n, 3) for n in sent.values())
    denied_by_redis = len(sent)
    denied_from_cache = sum(n - 4 for n in sent.values())
    expected = {
        'rl_decisions_total{layer="user",result="within_limit"}': admitted,
        'rl_decisions_total{layer="user",result="over_limit"}': denied_by_redis,
        'rl_decisions_total{layer="user",result="over_limit_with_local_cache"}': denied_from_cache,
        'rl_decisions_total{layer="edge",result="unavailable_fail_open"}': 2,
        # Each request counted once, under one layer: none under ip, which never binds.
        'sum(rl_decisions_total{job="rl_nginx"})': sum(sent.values()) + 2,
        'sum(rl_decisions_total{layer="ip"})': 0,
        # Redis saw only the calls the cache did not answer (redis_exporter's commandstats).
        'redis_commands_total{cmd="rl.all"}': admitted + denied_by_redis,
        'redis_rl_calls_total{command="rl.all"}': admitted + denied_by_redis,
        'redis_rl_denied_total{command="rl.all"}': denied_by_redis,
        # rl-rules.yml's edge alert, on the series the endpoint exports: pending (firing after
        # its `for`, 2 minutes, on a slow machine) for the layer whose Redis is not there, and
        # for no other.
        'count(ALERTS{alertname="RlLimiterUnavailableAtEdge",layer="edge"})': 1,
    }
    settles(prom, expected)
    # The layer whose denials come from the cache is named, and it is the only one.
    cached = query(prom, 'rl_decisions_total{result="over_limit_with_local_cache"}')
    assert {dict(labels)["layer"]: v for labels, v in cached.items() if v > 0} == {"user": denied_from_cache}
    assert query(prom, 'ALERTS{alertname="RlLimiterUnavailableAtEdge",layer!="edge"}') == {}
