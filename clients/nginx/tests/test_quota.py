"""Calendar quotas in resty.rl's policies (`QUOTA limit DAY|WEEK|MONTH [TZ zone] [ANCHOR a]
[PENALTY d ...]`, RL.QUOTA's), over HTTP on real NGINX: a quota layer beside another in one
RL.ALL, its headers (`RateLimit-Policy`'s `w` the current period's length in whole days, as the
Python and Node packages give it; `X-RateLimit-Reset` and `Retry-After` the renewal), a named
quota, its denial cached until the renewal, the insurance's share of it, and the policies the
package refuses to start with. The renewals expected are computed with the host's zoneinfo."""

from __future__ import annotations

import math
import subprocess
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from conftest import custom_conf, free_port
from test_denial_cache import DICTS, METRICS, counters, decisions
from test_layers import define

PARIS = ZoneInfo("Europe/Paris")
MONTH = "QUOTA 2 MONTH TZ Europe/Paris ANCHOR 2026-01-31T00:00"


def server_ms(server) -> int:
    seconds, micros = server.client().time()
    return seconds * 1000 + micros // 1000


def renewals(now_ms: int, zone: ZoneInfo, day: int) -> tuple[datetime, datetime]:
    """The month's renewals around `now_ms` for an anchor on `day` at 00:00 local: (the latest
    at or before now, the next)."""
    local = datetime.fromtimestamp(now_ms / 1000, zone)

    def on(y: int, m: int) -> datetime:
        last = (datetime(y + m // 12, m % 12 + 1, 1) - datetime(y, m, 1)).days
        return datetime(y, m, min(day, last), tzinfo=zone)

    this = on(local.year, local.month)
    if this > local:
        y, m = (local.year - 1, 12) if local.month == 1 else (local.year, local.month - 1)
        return on(y, m), this
    y, m = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    return this, on(y, m)


def init(port: int, layers: str, options: str = "") -> str:
    return (f'limiter = rl.new({{ redis = {{ host = "127.0.0.1", port = {port} }}, {options} '
            f"layers = {{ {layers} }} }})")


def start(nginx_for, upstream, text: str):
    return nginx_for(lambda port: custom_conf(port, upstream.port, text, http=DICTS, server=METRICS))


def test_a_quota_layer_beside_a_minute_sends_its_period_and_renewal(quota_server, nginx_for, upstream):
    n = start(nginx_for, upstream, init(quota_server.port,
        '{ name = "minute", by = "$http_x_user", policy = "SLIDINGLOG 10 1m" }, '
        f'{{ name = "month", by = "$http_x_user", policy = "{MONTH}" }}'))
    before = server_ms(quota_server)
    got = [n.get("/a", {"X-User": "acme"}) for _ in range(3)]
    after = server_ms(quota_server)
    assert [g[0] for g in got] == [200, 200, 429]
    assert got[2][2] == {"error": "rate limited", "layer": "month"}
    start_, end = renewals(before, PARIS, 31)
    renewal = int(end.timestamp() * 1000)
    policy = f'"month";q=2;w={(end.date() - start_.date()).days * 86_400}'
    assert got[1][1]["ratelimit-policy"] == policy  # the month binds: 0 left
    denied = got[2][1]
    assert denied["ratelimit-policy"] == policy
    reset = int(denied["x-ratelimit-reset"])
    assert math.ceil((renewal - after) / 1000) <= reset <= math.ceil((renewal - before) / 1000)
    assert denied["retry-after"] == denied["x-ratelimit-reset"]
    c = quota_server.client()
    assert c.get("rl:month:acme").endswith(f":{renewal}:2:MONTH 2026-01-31T00:00 Europe/Paris")
    assert c.zcard("rl:minute:acme") == 2  # the denial spent nothing from the minute


def test_a_quotas_denial_is_cached_until_the_renewal(quota_server, nginx_for, upstream):
    n = start(nginx_for, upstream, init(
        quota_server.port, '{ name = "day", by = "$http_x_user", policy = "QUOTA 1 DAY TZ +05:30" }',
        'denial_cache = "rl_denials", metrics = "rl_metrics",'))
    assert n.get("/a", {"X-User": "acme"})[0] == 200
    first = n.get("/a", {"X-User": "acme"})
    assert first[0] == 429 and first[1]["ratelimit-policy"] == '"day";q=1;w=86400'
    calls = decisions(quota_server)
    again = [n.get("/a", {"X-User": "acme"}) for _ in range(3)]
    assert [g[0] for g in again] == [429] * 3
    assert decisions(quota_server) == calls  # answered from the cache
    assert counters(n)[("day", "over_limit_with_local_cache")] == 3
    assert all(int(g[1]["retry-after"]) <= int(first[1]["retry-after"]) for g in again)
    assert all(int(g[1]["retry-after"]) > int(first[1]["retry-after"]) - 60 for g in again)


def test_a_named_quota_is_decided_by_its_name(quota_server, nginx_for, upstream, tmp_path):
    define(quota_server, ["plan-month QUOTA 2 MONTH TZ Europe/Paris"], tmp_path)
    n = start(nginx_for, upstream, init(
        quota_server.port, '{ name = "plan", by = "$http_x_user", policy = "plan-month" }'))
    assert [n.get("/a", {"X-User": "acme"})[0] for _ in range(3)] == [200, 200, 429]
    status, headers, _ = n.get("/a", {"X-User": "acme"})
    # The client knows the name, not the calendar: no `w`, and `q` is the reply's limit.
    assert status == 429 and headers["ratelimit-policy"] == '"plan";q=2'
    assert int(headers["retry-after"]) > 0


def test_the_insurance_gives_the_node_its_share_of_a_quota(nginx_for, upstream):
    text = init(free_port(), '{ name = "month", by = "$http_x_user", policy = "QUOTA 10 MONTH" }',
                'insurance = { dict = "rl_insurance", nodes = 4 },')
    n = nginx_for(lambda port: custom_conf(port, upstream.port, text,
                                           http="lua_shared_dict rl_insurance 1m;"))
    got = [n.get("/a", {"X-User": "acme"}) for _ in range(3)]
    assert [g[0] for g in got] == [200, 200, 429]  # 10 a month on 4 nodes: 2
    assert got[2][1]["x-ratelimit-limit"] == "2"
    assert int(got[2][1]["retry-after"]) > 30 * 86_400  # the longest month's window
    assert got[2][1]["ratelimit-policy"].startswith('"month";q=10;w=')


@pytest.mark.parametrize("policy, message", [
    ("QUOTA 5 YEAR", "unit must be DAY, WEEK or MONTH"),
    ("QUOTA 0 DAY", "limit must be an integer from 1 to"),
    ("QUOTA 5 DAY TZ", "TZ needs a zone"),
    ("QUOTA 5 DAY ANCHOR 2026-1-5", "ANCHOR must be a local date and time yyyy-mm-ddThh:mm"),
    ("QUOTA 5 DAY PENALTY 1h ESCALATE 1m", "ESCALATE max must be at least PENALTY d"),
    ("QUOTA 5 DAY BURST 2", "unexpected 'BURST'"),
])
def test_nginx_refuses_to_start_with_a_quota_it_cannot_run(tmp_path, upstream, policy, message):
    conf = tmp_path / "nginx.conf"
    conf.write_text(custom_conf(free_port(), upstream.port,
                                init(6379, f'{{ name = "a", by = "ip", policy = "{policy}" }}')))
    out = subprocess.run(["nginx", "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "init_by_lua error: resty.rl: " in out.stderr and message in out.stderr, out.stderr


def test_an_unknown_zone_is_the_servers_error_on_each_request(quota_server, nginx_for, upstream):
    n = start(nginx_for, upstream, init(
        quota_server.port, '{ name = "d", by = "ip", policy = "QUOTA 5 DAY TZ Mars/Olympus" }'))
    assert n.get("/a")[0] == 500
    assert "ERR unknown time zone 'Mars/Olympus'" in n.log()
