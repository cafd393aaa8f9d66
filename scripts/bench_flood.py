#!/usr/bin/env python3
"""NGINX under a flood: clients flood a limit of 1 request per second each (bursts of 5)
while a legitimate client sends 100 requests a second alongside, on a location of its own
with a limit it stays under (1,000 a second): what the flood costs everyone else. Rows:
NGINX's own `limit_req`; resty.rl on the module asking Redis on every request (the denial
cache off); resty.rl with its denial cache (a `lua_shared_dict`) on the module, with and
without its exhaustion (`denial_cache_exhausted`), and on the Functions library; the same
with a penalty (`PENALTY 10s`), which makes a denial's wait long; and a scraper's limit of
one a minute. Two floods: one identity, and 1,000 identities (a wrk script draws one of 1,000
`X-Client` values per request), each over its limit.

Each row reports the flood's requests per second (wrk, 64 connections, as fast as they are
answered), the Redis calls per denied request after the first denials (INFO commandstats,
less the legitimate client's requests, one call each; wrk counts the 429s), and of those the
calls made for denied requests (less one per admission of the flood: Redis decides every
admission), and the legitimate client's p50 and p99 latency in ms beside that flood; then
beside a paced flood (each connection waiting PACE_MS between requests: about 10,000 a
second, which every row serves without saturating the machine); next to its p50 and p99 with
no flood. Every identity is `$http_x_client` (so that wrk, on one address, can be many
clients).

Usage: scripts/bench_flood.py [--module PATH] [--seconds N] [--quick] [--only TEXT]
       (or bench.py --flood-only)
Figures are as measured; nothing here is a test.
"""

import argparse
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import bench_nginx
from bench_nginx import (
    LUA_LIB,
    NGINX_MODULES,
    answers,
    free_port,
    missing,
    nginx_version,
    redis_figures,
    start,
    start_redis,
    stop,
    wait_until,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(ROOT, "target/release/librl.so")
CONNECTIONS = 64
LEGIT_RPS = 100
LIMIT = "GCRA 1 1s BURST 5"
PENALIZED = "GCRA 1 1s BURST 5 PENALTY 10s"
# A scraper's limit: one a minute. Each identity's admissions are Redis's to decide, so
# the calls per denial cannot fall below admitted ÷ denied (at 1 r/s and 40 r/s flooding,
# 1/39 = 0.026 with no re-check at all); at one a minute they can.
PER_MINUTE = "GCRA 1 1m"
LEGIT = "GCRA 1000 1s BURST 100"

# bench_nginx's conf, with the denial cache's dict and the legitimate client's location.
LEGIT_LOCATION = """        location /legit {
%(legit)s            proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection "";
        }
"""
_TAIL = "        }\n    }\n}\n"
_LUA_PATH = '    lua_package_path "%(lib)s/?.lua;;";\n'
assert bench_nginx.CONF.endswith(_TAIL) and _LUA_PATH in bench_nginx.CONF
CONF = (bench_nginx.CONF[:-len(_TAIL)] + "        }\n" + LEGIT_LOCATION + "    }\n}\n").replace(
    _LUA_PATH, _LUA_PATH + "    lua_shared_dict rl_denials 10m;\n")

LIMIT_REQ = (("    limit_req_zone $http_x_client zone=flood:10m rate=1r/s;\n"
              "    limit_req_zone $http_x_client zone=legit:1m rate=1000r/s;\n"
              "    limit_req_status 429;\n"),
             "            limit_req zone=flood burst=5 nodelay;\n",
             "            limit_req zone=legit burst=100 nodelay;\n")


def resty(policy, cache, exhausted=False):
    """resty.rl, one layer keyed by X-Client (the flood's policy, or the legitimate
    client's on /legit), with or without the denial cache (and its exhaustion)."""
    option = ', denial_cache = "rl_denials"' if cache else ""
    option += ", denial_cache_exhausted = true" if exhausted else ""

    def limiter(name, p):
        return (f"        {name} = require(\"resty.rl\").new({{ redis = {{ host = \"127.0.0.1\", "
                f"port = %(port)d }}{option},\n"
                f"            layers = {{ {{ name = \"{name}\", by = \"$http_x_client\", "
                f"policy = \"{p}\" }} }} }})\n")
    http = ("    init_by_lua_block {\n" + limiter("flood", policy) + limiter("legit", LEGIT)
            + "    }\n")
    return (http, "            access_by_lua_block { flood:access() }\n",
            "            access_by_lua_block { legit:access() }\n")


# (label, (http lines, location lines), which Redis: "module", "plain" or None, the commands
# a request sends as INFO commandstats names them).
ROWS = [
    ("NGINX `limit_req` (rate=1r/s, burst=5, nodelay)", LIMIT_REQ, None, []),
    (f"`resty.rl`, module, `{LIMIT}`, no cache (a Redis call per request)",
     resty(LIMIT, False), "module", ["rl.gcra"]),
    (f"`resty.rl`, module, `{LIMIT}`, denial cache", resty(LIMIT, True), "module", ["rl.gcra"]),
    (f"`resty.rl`, module, `{LIMIT}`, denial cache with exhaustion",
     resty(LIMIT, True, True), "module", ["rl.gcra"]),
    (f"`resty.rl`, library, `{LIMIT}`, denial cache", resty(LIMIT, True), "plain", ["fcall"]),
    (f"`resty.rl`, module, `{PENALIZED}`, denial cache",
     resty(PENALIZED, True), "module", ["rl.gcra"]),
    (f"`resty.rl`, module, `{PER_MINUTE}`, denial cache",
     resty(PER_MINUTE, True), "module", ["rl.gcra"]),
]

# A wrk script: each request's X-Client is one of 1,000 flooding identities.
MANY = """request = function()
  return wrk.format(nil, nil, { ["X-Client"] = "flood-" .. math.random(1, 1000) })
end
"""
# The paced flood: each connection waits PACE_MS after each reply before its next request,
# so 64 connections send at most 64,000 / PACE_MS requests a second (about 10,000), below
# what every row serves. A flood that saturates the machine makes every server, NGINX's own
# limit_req included, queue the legitimate client behind it: on two cores shared by wrk,
# NGINX, Redis and the client, its latency then measures the machine, not the limiter.
PACE_MS = 6
PACED = f"delay = function() return {PACE_MS} end\n"


def start_nginx(work, procs, row, redis_port):
    label, (http, access, legit_access), _, _ = row
    d, port = tempfile.mkdtemp(dir=work), free_port()
    conf = CONF % {"modules": NGINX_MODULES, "lib": LUA_LIB, "upstream": free_port(),
                   "port": port, "http": http % {"port": redis_port or 0}, "access": access,
                   "legit": legit_access}
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    log = os.path.join(d, "error.log")
    proc = start(["nginx", "-p", d + "/", "-c", os.path.join(d, "nginx.conf"), "-e", log],
                 os.path.join(d, "stdout.log"))
    procs.append(proc)
    get = b"GET / HTTP/1.0\r\nX-Client: probe\r\n\r\n"
    wait_until(lambda: answers(port, get, b"HTTP/1.1 200"), proc, f"nginx for {label!r}", log)
    return port


def legit(port, seconds, out):
    """The legitimate client: LEGIT_RPS requests a second on one kept-alive connection, its
    latencies in ms appended to `out` (a denial counts as a latency too, and as `denied`)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    end = time.monotonic() + seconds
    step = 1 / LEGIT_RPS
    next_at = time.monotonic()
    while next_at < end:
        time.sleep(max(0.0, next_at - time.monotonic()))
        t = time.perf_counter()
        conn.request("GET", "/legit", headers={"X-Client": "legitimate"})
        resp = conn.getresponse()
        resp.read()
        out["ms"].append((time.perf_counter() - t) * 1000)
        out["denied"] += resp.status == 429
        next_at += step
    conn.close()


def flood(port, seconds, work, many, paced=False):
    """One wrk flood, as fast as it is answered or paced: (requests, non-2xx replies,
    requests per second)."""
    argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s"]
    if not many:
        argv += ["-H", "X-Client: flood"]
    if many or paced:
        script = os.path.join(work, f"flood-{many}-{paced}.lua")
        with open(script, "w") as f:
            f.write((MANY if many else "") + (PACED if paced else ""))
        argv += ["-s", script]
    out = subprocess.run([*argv, f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return (int(re.search(r"(\d+) requests in", out)[1]), int(non2xx[1]) if non2xx else 0,
            float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]))


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def paced(port, seconds, work, many):
    """The legitimate client's p50 and p99 beside a paced flood, and the flood's rate."""
    seen = {"ms": [], "denied": 0}
    side = threading.Thread(target=legit, args=(port, seconds, seen))
    side.start()
    rps = flood(port, seconds, work, many, paced=True)[2]
    side.join()
    return percentile(seen["ms"], 50), percentile(seen["ms"], 99), rps


def measure(port, client, commands, seconds, work, many):
    """The flood and the legitimate client together; Redis calls counted after a warm-up
    second (the first denials fill the cache)."""
    flood(port, 1, work, many)
    before = redis_figures(client, commands)[0] if client else 0
    seen = {"ms": [], "denied": 0}
    side = threading.Thread(target=legit, args=(port, seconds, seen))
    side.start()
    requests, denied, rps = flood(port, seconds, work, many)
    side.join()
    # Each of the legitimate client's requests is one Redis call of its own (admitted,
    # never cached): what is left is the flood's. Of those, each admission is one (Redis's
    # to decide): the rest were made for the denied requests.
    calls = (redis_figures(client, commands)[0] - before - len(seen["ms"])) if client else None
    for_denials = None if calls is None else calls - (requests - denied)
    return {"rps": rps, "denied": denied / max(requests, 1),
            "calls": None if calls is None or not denied else calls / denied,
            "for_denials": None if for_denials is None or not denied
            else max(0, for_denials) / denied,
            "p50": percentile(seen["ms"], 50), "p99": percentile(seen["ms"], 99),
            "legit_denied": seen["denied"]}


def quiet(port, seconds):
    """The legitimate client alone: its p50 and p99."""
    seen = {"ms": [], "denied": 0}
    legit(port, seconds, seen)
    return percentile(seen["ms"], 50), percentile(seen["ms"], 99)


def flood_table(module=MODULE, seconds=5, only=None):
    lack = missing()
    if lack:
        print(f"\n## NGINX under a flood\n\nNot measured: {lack}.")
        return
    work = tempfile.mkdtemp(prefix="rl-flood-")
    procs = []
    results = []
    try:
        servers = {"module": start_redis(work, procs, module), "plain": start_redis(work, procs, None)}
        for row in [r for r in ROWS if not only or only in r[0]]:
            label, _, which, commands = row
            client, redis_port = servers[which] if which else (None, None)
            port = start_nginx(work, procs, row, redis_port)
            calm = quiet(port, 2)
            for many in (False, True):
                if client:
                    client.flushall()
                r = measure(port, client, commands, seconds, work, many)
                r["paced"] = paced(port, seconds, work, many)
                results.append((label, many, calm, r))
                print(f"bench_flood: {label} ({'1,000' if many else 'one'}): {r}", file=sys.stderr)
            stop(procs.pop())
    finally:
        for p in procs:
            stop(p)
    print(f"\n## NGINX under a flood (nginx {nginx_version()}, worker_processes 1, wrk -c{CONNECTIONS}, "
          f"{seconds} s per row; a legitimate client at {LEGIT_RPS} requests/s alongside)\n")
    print("| row | flood | flood rps | denied | Redis calls per denial | of which for denied "
          "requests | legitimate p50 / p99 ms | paced flood rps | legitimate p50 / p99 ms, paced "
          "| without flood p50 / p99 ms | legitimate denied |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, many, (q50, q99), r in results:
        calls = "–" if r["calls"] is None else f"{r['calls']:.4f}"
        for_denials = "–" if r["for_denials"] is None else f"{r['for_denials']:.4f}"
        p50, p99, rps = r["paced"]
        print(f"| {label} | {'1,000 identities' if many else 'one identity'} | {r['rps']:,.0f} "
              f"| {r['denied']:.1%} | {calls} | {for_denials} | {r['p50']:.2f} / {r['p99']:.2f} "
              f"| {rps:,.0f} | {p50:.2f} / {p99:.2f} | {q50:.2f} / {q99:.2f} "
              f"| {r['legit_denied']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", default=MODULE)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 s per row")
    ap.add_argument("--only", metavar="TEXT", help="only the rows whose label contains TEXT")
    a = ap.parse_args()
    flood_table(a.module, 2 if a.quick else a.seconds, a.only)


if __name__ == "__main__":
    main()
