"""Prometheus for real: Debian's redis_exporter (`--script deploy/prometheus/rl-exporter.lua`)
scrapes a redis-server with the module, Prometheus scrapes the exporter with the relabelling
of deploy/prometheus/rl-scrape.yml, and its HTTP API answers what the traffic sent implies
(INFO rl, INFO rl_policies, RL.TOP); the alerting rules pass `promtool test rules`."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import redis
from conftest import ROOT, free_port, start_server, wait_until

DEPLOY = ROOT / "deploy/prometheus"
EXPORTER = shutil.which("prometheus-redis-exporter")
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


def test_alerting_rules_pass_their_unit_tests():
    assert PROMTOOL, "promtool not found: scripts/install-deps.sh installs prometheus"
    out = subprocess.run([PROMTOOL, "check", "rules", "rl-rules.yml"], cwd=DEPLOY, check=False,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([PROMTOOL, "test", "rules", "rl-rules-test.yml"], cwd=DEPLOY, check=False,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


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


@pytest.fixture
def stack(tmp_path):
    """(redis client, prometheus port): a server with the module, the exporter, Prometheus."""
    assert EXPORTER and PROMETHEUS, "scripts/install-deps.sh installs prometheus-redis-exporter and prometheus"
    procs = []
    with (start_server(tmp_path) as (url, port), open(tmp_path / "exporter.log", "w") as exporter_log,
          open(tmp_path / "prometheus.log", "w") as prometheus_log):
        exporter_port, prometheus_port = free_port(), free_port()
        procs.append(subprocess.Popen(
            [EXPORTER, "--redis.addr", f"redis://127.0.0.1:{port}",
             "--web.listen-address", f"127.0.0.1:{exporter_port}",
             "--script", str(DEPLOY / "rl-exporter.lua")],
            stdout=exporter_log, stderr=subprocess.STDOUT))
        config = (DEPLOY / "rl-scrape.yml").read_text().replace(
            "localhost:9121", f"127.0.0.1:{exporter_port}").replace(
            "scrape_configs:", "global:\n  scrape_interval: 1s\nscrape_configs:", 1)
        (tmp_path / "prometheus.yml").write_text(config)
        procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=prometheus_log, stderr=subprocess.STDOUT))
        try:
            wait_until(lambda: query(prometheus_port, "up") != {}, procs[1], "prometheus",
                       tmp_path / "prometheus.log", timeout=30)
            yield redis.Redis.from_url(url, decode_responses=True), prometheus_port
        finally:
            for p in procs:
                p.kill()
                p.wait()


def test_prometheus_scrapes_the_modules_counters_and_top_keys(stack):
    r, prom = stack
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
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(value(prom, expr) == want for expr, want in expected.items()):
            break
        time.sleep(0.2)
    for expr, want in expected.items():
        assert value(prom, expr) == want, expr
    # Only the script's pairs are renamed: no raw pair is left.
    assert query(prom, 'redis_script_values{key=~"redis_rl_.*"}') == {}


def test_the_exporter_script_passes_luacheck():
    luacheck = shutil.which("luacheck")
    assert luacheck, "scripts/install-deps.sh installs lua-check"
    out = subprocess.run([luacheck, "--no-color", "--std", "lua51", "rl-exporter.lua"], cwd=DEPLOY,
                         check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
