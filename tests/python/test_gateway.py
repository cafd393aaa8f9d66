"""The gateway example (examples/gateway/app.py), run as a real HTTP server against a real
redis-server with the module, driven with `requests`."""

import itertools
import os
import subprocess
import sys
import time

import pytest
import requests

from conftest import ROOT, free_port, wait_until

FREE = {"X-API-Key": "free-key"}
PRO = {"X-API-Key": "pro-key"}
_ips = (f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}" for i in itertools.count(1))


@pytest.fixture(scope="module")
def gateway(redis_url, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("gateway") / "gateway.log"
    # TRUST_PROXY=1: the client IP is taken from X-Forwarded-For, so a test picks its IPs.
    env = dict(os.environ, REDIS_URL=redis_url, PORT=str(port), TRUST_PROXY="1")
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, ROOT / "examples/gateway/app.py"], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        # A request with no API key spends nothing: it is answered 401 before any limiter.
        wait_until(lambda: requests.get(f"{base}/hello", timeout=1).status_code == 401,
                   proc, "the gateway", log)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def get(gateway, path, headers, ip=None):
    """GET from a given client IP (a fresh one by default, so the IP layer does not bind)."""
    return requests.get(gateway + path, timeout=5,
                        headers=dict(headers, **{"X-Forwarded-For": ip or next(_ips)}))


def rate_headers(resp):
    names = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
             "RateLimit-Policy", "RateLimit", "Retry-After"]
    return {n: resp.headers.get(n) for n in names}


def away_from_minute_boundary():
    """FIXED windows reset on the minute: keep a test's requests inside one window."""
    second = time.time() % 60
    if second > 55:
        time.sleep(60.2 - second)


def key_layer(r, api_key, cap=60):
    """The API-key layer as it is, spending nothing (COST 0)."""
    return r.execute_command("RL.TOKENBUCKET", f"rl:key:{api_key}", cap, cap, "1m", "COST", 0)


def test_unknown_or_missing_api_key_is_401(gateway, r):
    for headers in ({"X-API-Key": "nope"}, {}):
        resp = get(gateway, "/hello", headers)
        assert resp.status_code == 401
        assert resp.headers.get("X-RateLimit-Limit") is None
    assert r.dbsize() == 0  # no limiter was touched


def test_admitted_requests_carry_the_binding_layers_headers(gateway, r):
    # /hello: two layers; a fresh IP has 19 of 20 left, the pro key 599 of 600: the IP binds.
    resp = get(gateway, "/hello", PRO)
    assert resp.status_code == 200 and resp.json() == {"message": "hello"}
    assert rate_headers(resp) == {
        "X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19", "X-RateLimit-Reset": "1",
        "RateLimit-Policy": '"ip";q=100;w=1', "RateLimit": '"ip";r=19;t=1', "Retry-After": None,
    }
    assert key_layer(r, "pro-key", 600)[:3] == [1, 600, 599]
    # /search: three layers; the endpoint's 9 of 10 left binds.
    away_from_minute_boundary()
    resp = get(gateway, "/search?q=x", FREE)
    assert resp.status_code == 200 and resp.json() == {"results": [], "query": "x"}
    h = rate_headers(resp)
    reset = int(h["X-RateLimit-Reset"])
    assert 1 <= reset <= 60
    assert h == {
        "X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": str(reset),
        "RateLimit-Policy": '"search";q=10;w=60', "RateLimit": f'"search";r=9;t={reset}',
        "Retry-After": None,
    }


def test_free_key_gets_exactly_60_per_minute_and_pro_more(gateway, r):
    start = time.monotonic()
    replies = [get(gateway, "/hello", FREE) for _ in range(75)]
    elapsed = time.monotonic() - start
    codes = [resp.status_code for resp in replies]
    assert set(codes) == {200, 429}
    # The bucket holds 60 and regains one per second: exactly 60 within the first second.
    assert codes[:60] == [200] * 60
    assert 60 <= codes.count(200) <= 60 + int(elapsed), (elapsed, codes)
    denied = replies[codes.index(429)]
    h = rate_headers(denied)
    assert h["Retry-After"] == "1"  # a token every second
    reset = int(h["X-RateLimit-Reset"])
    assert 58 <= reset <= 60  # the bucket is full again in a minute
    assert h == {
        "X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset),
        "RateLimit-Policy": '"free";q=60;w=60', "RateLimit": f'"free";r=0;t={reset}',
        "Retry-After": "1",
    }
    assert denied.json()["layer"] == "free"
    # The pro plan: 600 per minute, so the same burst and more all pass.
    assert all(get(gateway, "/hello", PRO).status_code == 200 for _ in range(100))


@pytest.mark.parametrize("endpoint, limit", [("export", 5), ("search", 10)])
def test_endpoint_limit_then_429_spending_nothing_else(gateway, r, endpoint, limit):
    away_from_minute_boundary()
    ip = next(_ips)
    for i in range(limit):
        resp = get(gateway, f"/{endpoint}", FREE, ip)
        assert resp.status_code == 200
        assert resp.headers["X-RateLimit-Limit"] == str(limit)
        assert resp.headers["X-RateLimit-Remaining"] == str(limit - 1 - i)
        assert resp.headers["RateLimit-Policy"] == f'"{endpoint}";q={limit};w=60'

    before = key_layer(r, "free-key")
    state = [r.get(k) for k in ("rl:key:free-key", f"rl:ip:{ip}", f"rl:ep:free-key:{endpoint}")]
    resp = get(gateway, f"/{endpoint}", FREE, ip)
    after = key_layer(r, "free-key")

    assert resp.status_code == 429 and resp.json()["layer"] == endpoint
    h = rate_headers(resp)
    retry = int(h["Retry-After"])
    assert 1 <= retry <= 60
    assert h == {  # a fixed window: retry and reset both at the window's end
        "X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": str(retry), "RateLimit-Policy": f'"{endpoint}";q={limit};w=60',
        "RateLimit": f'"{endpoint}";r=0;t={retry}', "Retry-After": str(retry),
    }
    # The denied request spent nothing from the API-key layer: as many tokens left (or more,
    # refilled meanwhile), and the bucket no further from full. Nor from any other layer.
    assert before[:2] == after[:2] == [1, 60]
    assert 60 - limit <= before[2] <= after[2]
    assert 0 < after[4] <= before[4]
    now = [r.get(k) for k in ("rl:key:free-key", f"rl:ip:{ip}", f"rl:ep:free-key:{endpoint}")]
    assert now[0] == state[0] and now[2] == state[2]
    # The IP layer (GCRA 100/s) is idle again within tens of milliseconds: on a slow
    # machine its key may have expired meanwhile, but it was never written.
    assert now[1] in (state[1], None)
    # The limit is per API key: the pro key still gets through.
    assert get(gateway, f"/{endpoint}", PRO, ip).status_code == 200


def test_ip_layer_binds_and_spends_nothing_from_the_key(gateway, r):
    ip = "198.51.100.9"
    # Spend this IP's next 10 s in one go (a larger burst, same rate: the stored instant
    # keeps its meaning), so the gateway's GCRA 100/s BURST 20 must wait about 9.8 s.
    assert r.execute_command("RL.GCRA", f"rl:ip:{ip}", 100, "1s", "BURST", 1000,
                             "COST", 1000)[0] == 1
    get(gateway, "/hello", FREE)  # the key layer: 59 left
    before = r.get("rl:key:free-key")
    resp = get(gateway, "/hello", FREE, ip)
    assert resp.status_code == 429 and resp.json()["layer"] == "ip"
    h = rate_headers(resp)
    assert h["Retry-After"] in ("9", "10")
    assert h["X-RateLimit-Reset"] == "10"
    assert h["X-RateLimit-Limit"] == "20" and h["X-RateLimit-Remaining"] == "0"
    assert h["RateLimit-Policy"] == '"ip";q=100;w=1'
    assert h["RateLimit"] == '"ip";r=0;t=10'
    assert r.get("rl:key:free-key") == before


def spend_ten_seconds(r, key):
    """Spends the IP layer's next 10 s at `key`, as the test above does."""
    assert r.execute_command("RL.GCRA", key, 100, "1s", "BURST", 1000, "COST", 1000)[0] == 1


def test_an_ipv6_client_is_limited_by_its_56_and_a_mapped_ipv4_as_ipv4(gateway, r):
    spend_ten_seconds(r, "rl:ip:2001:db8:1::/56")
    # Every address of that /56 spends from it (before: one fresh counter per address).
    for last in ["1:1::1", "1:1::a", "1:ff:ffff::1", "1:0:1::"]:
        resp = get(gateway, "/hello", PRO, f"2001:db8:{last}")
        assert resp.status_code == 429 and resp.json()["layer"] == "ip", last
    # The next /56 is another client's: a counter of its own, fresh (its key lives 10 ms, so
    # the reply says so, not the key).
    resp = get(gateway, "/hello", PRO, "2001:db8:1:100::1")
    assert resp.status_code == 200 and resp.headers["RateLimit"] == '"ip";r=19;t=1', resp.headers
    spend_ten_seconds(r, "rl:ip:198.51.100.77")
    resp = get(gateway, "/hello", PRO, "::ffff:198.51.100.77")
    assert resp.status_code == 429 and resp.json()["layer"] == "ip"
