#!/usr/bin/env python3
"""NGINX at the edge: requests per second through a private NGINX with no limit, with NGINX's
own `limit_req`, with the usual hand-written Lua (lua-resty-redis, the seed article's gcra.lua
by EVALSHA) and with resty.rl (clients/nginx) on the module and on the Functions library; and
the Redis server time each spends per request (INFO commandstats).

Each row is one NGINX (worker_processes 1) proxying to a second server block of its conf that
answers "ok" from content_by_lua: the same upstream for every row. Each limit is keyed by the
client's address and high enough that nothing is denied: every row measures the admitted
path. wrk drives each row in rounds (every row once per round); the table shows medians.
Figures are as measured; nothing here is a test.

Usage: scripts/bench_nginx.py [--module PATH] [--rounds N] [--seconds N] [--quick]
       (or bench.py --nginx-only)
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA_LIB = os.path.join(ROOT, "clients/nginx/lib")
NGINX_MODULES = "/usr/lib/nginx/modules"
CONNECTIONS = 32
HUGE = 1_000_000_000  # every limit: 10^9 per period, nothing is denied
API_KEY = "bench-key"  # the X-Api-Key header every request carries (the three-layer row's key)

# gcra.lua from the seed article's "GCRA" section, verbatim.
GCRA_LUA = """-- gcra.lua
local key = KEYS[1]
local emission_interval = tonumber(ARGV[1])
local burst_offset = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local tat = tonumber(redis.call('GET', key))

if tat == nil then
 tat = now + emission_interval
 redis.call('SET', key, tat)
 redis.call('PEXPIRE', key, burst_offset + emission_interval)
 return {1, 0}
end

local allow_at = tat - burst_offset
if now < allow_at then
 return {0, allow_at - now}
else
 local new_tat = math.max(now, tat) + emission_interval
 redis.call('SET', key, new_tat)
 redis.call('PEXPIRE', key, burst_offset + emission_interval)
 return {1, 0}
end
"""

# The hand-written access phase: a pooled connection, EVALSHA (SCRIPT LOAD on NOSCRIPT), the
# client's clock in ms; 429 when the script says 0. The script counts whole ms: its emission
# interval is 1 ms (1,000 per second, the finest it can say: the article's int(1000 / rate)
# is 0 at 10^9 per second, and its PEXPIRE of 0 would delete the key), its burst offset 10^9 ms.
HAND_WRITTEN = """    init_by_lua_block {
        GCRA = [==[%(script)s]==]
        GCRA_SHA = (ngx.sha1_bin(GCRA):gsub(".", function(c) return string.format("%%02x", c:byte()) end))
    }
""", """            access_by_lua_block {
                local red = require("nginx.redis"):new()
                red:set_timeout(500)
                local ok, err = red:connect("127.0.0.1", %(port)d)
                if not ok then ngx.log(ngx.ERR, err) return ngx.exit(503) end
                local key = "gcra:" .. ngx.var.remote_addr
                local res, e = red:evalsha(GCRA_SHA, 1, key, 1, %(huge)d, ngx.now() * 1000)
                if not res and e and e:find("NOSCRIPT", 1, true) then
                    red:script("load", GCRA)
                    res, e = red:evalsha(GCRA_SHA, 1, key, 1, %(huge)d, ngx.now() * 1000)
                end
                if res == nil then red:close() ngx.log(ngx.ERR, e) return ngx.exit(503) end
                red:set_keepalive(60000, 100)
                if not res then ngx.log(ngx.ERR, e) return ngx.exit(500) end
                if res[1] == 0 then return ngx.exit(429) end
            }
"""

# resty.rl with `layers` (Lua table text) on the Redis at `port`.
RESTY_RL = """    map $http_x_api_key $plan { default ""; %(key)s "SLIDING %(huge)d 1m"; }
    init_by_lua_block {
        limiter = require("resty.rl").new({
            redis = { host = "127.0.0.1", port = %(port)d }, layers = { %(layers)s } })
    }
""", "            access_by_lua_block { limiter:access() }\n"
ONE_LAYER = '{ name = "ip", by = "ip", policy = "GCRA %(huge)d 1s BURST %(huge)d" }'
# The example conf's three: per address, per API key by its plan, per API key on /export (the
# sliding log's limit at most rl.sliding-log-max-limit, 100,000 by default: so per second).
THREE_LAYERS = ONE_LAYER + """,
            { name = "key", by = "$http_x_api_key", policy = "$plan" },
            { name = "export", by = "$http_x_api_key", policy = "SLIDINGLOG 100000 1s" }"""

LIMIT_REQ = ("    limit_req_zone $binary_remote_addr zone=ip:10m rate=%(huge)dr/s;\n",
             "            limit_req zone=ip burst=%(huge)d nodelay;\n")

# (label, (http lines, location lines), which Redis: "module", "plain" or None, the commands
# the row sends per request as INFO commandstats names them, resty.rl's layers).
ROWS = [
    ("no limit (nginx and the upstream only)", ("", ""), None, [], ""),
    ("NGINX `limit_req` (this machine's shared memory)", LIMIT_REQ, None, [], ""),
    ("hand-written Lua: gcra.lua by `EVALSHA`", HAND_WRITTEN, "plain", ["evalsha"], ""),
    ("`resty.rl`, module (one layer: `RL.GCRA`)", RESTY_RL, "module", ["rl.gcra"], ONE_LAYER),
    ("`resty.rl`, Functions library (`FCALL rl_gcra`)", RESTY_RL, "plain", ["fcall"], ONE_LAYER),
    ("`resty.rl`, module, the example's 3 layers (`RL.ALL`)", RESTY_RL, "module", ["rl.all"], THREE_LAYERS),
]

CONF = """load_module %(modules)s/ndk_http_module.so;
load_module %(modules)s/ngx_http_lua_module.so;
worker_processes 1;
daemon off;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path body; proxy_temp_path proxy; fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi; scgi_temp_path scgi;
    lua_package_path "%(lib)s/?.lua;;";
%(http)s
    upstream app { server 127.0.0.1:%(upstream)d; keepalive 32; }
    server {  # the upstream
        listen 127.0.0.1:%(upstream)d;
        location / { content_by_lua_block { ngx.say("ok") } }
    }
    server {
        listen 127.0.0.1:%(port)d;
        location / {
%(access)s            proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection "";
        }
    }
}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing():
    """What this table needs and the machine lacks, as a sentence, or None."""
    lack = [t for t in ("nginx", "wrk", "redis-server") if not shutil.which(t)]
    lack += [f for f in ("ndk_http_module.so", "ngx_http_lua_module.so")
             if not os.path.exists(os.path.join(NGINX_MODULES, f))]
    if not lack:
        return None
    return (f"missing {', '.join(lack)}: `bash scripts/install-deps.sh test` (make deps) installs "
            "nginx, libnginx-mod-http-lua, lua-nginx-redis and wrk")


def start(argv, log):
    """A process in a process group of its own (stop() ends the whole group)."""
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(proc):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def wait_until(ready, proc, what, log):
    """Returns once ready() holds; exits with the log's tail when `proc` ends or 10 s pass."""
    for _ in range(200):
        if proc.poll() is not None:
            break
        if ready():
            return
        time.sleep(0.05)
    with open(log, errors="replace") as f:
        sys.exit(f"bench_nginx: {what} did not start:\n{f.read()[-2000:]}")


def start_redis(work, procs, module):
    """A redis-server on a free port (the module loaded when `module`): (redis-py client, port)."""
    import redis

    port, d = free_port(), tempfile.mkdtemp(dir=work)
    load = ["--loadmodule", os.path.abspath(module)] if module else []
    proc = start(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                  "--appendonly", "no", "--dir", d, *load], os.path.join(d, "log"))
    procs.append(proc)
    wait_until(lambda: answers(port, b"PING\r\n", b"+PONG"), proc, "redis-server",
               os.path.join(d, "log"))
    return redis.Redis(port=port), port


def answers(port, request, start):
    """True when 127.0.0.1:`port` answers `request` with a reply starting with `start`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(request)
            return s.recv(64).startswith(start)
    except OSError:
        return False


def start_nginx(work, procs, row, redis_port):
    """The row's nginx (its conf in a directory of its own): its port and master process."""
    label, (http, access), _, _, layers = row
    d, port = tempfile.mkdtemp(dir=work), free_port()
    values = {"port": redis_port or 0, "huge": HUGE, "key": API_KEY, "script": GCRA_LUA}
    values["layers"] = layers % values
    conf = CONF % {"modules": NGINX_MODULES, "lib": LUA_LIB, "upstream": free_port(),
                   "port": port, "http": http % values, "access": access % values}
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    log = os.path.join(d, "error.log")
    proc = start(["nginx", "-p", d + "/", "-c", os.path.join(d, "nginx.conf"), "-e", log],
                 os.path.join(d, "stdout.log"))
    procs.append(proc)
    get = f"GET / HTTP/1.0\r\nX-Api-Key: {API_KEY}\r\n\r\n".encode()
    wait_until(lambda: answers(port, get, b"HTTP/1.1 200"), proc, f"nginx for {label!r}", log)
    return port, proc


def ms(text):
    """wrk's latency text (850.00us, 1.20ms, 1.01s) in ms."""
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]


def wrk(port, seconds):
    """{rps, requests, p50, p99} of one wrk run; exits when any reply was not 2xx or 3xx."""
    out = subprocess.run(["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency",
                          "-H", f"X-Api-Key: {API_KEY}", f"http://127.0.0.1:{port}/"],
                         capture_output=True, text=True, check=True).stdout
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        sys.exit(f"bench_nginx: {bad[1]} requests were refused on port {port}:\n{out}")
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]),
            "requests": int(re.search(r"(\d+) requests in", out)[1]),
            "p50": ms(re.search(r"^\s+50%\s+(\S+)", out, re.MULTILINE)[1]),
            "p99": ms(re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE)[1])}


def cpu_seconds(master):
    """User + system CPU of nginx's workers (the master's children), in seconds."""
    with open(f"/proc/{master.pid}/task/{master.pid}/children") as f:
        pids = f.read().split()
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def redis_figures(client, commands):
    """(calls, usec) summed over `commands` in INFO commandstats, and the server's CPU s."""
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    calls = sum(stats.get("cmdstat_" + c, {}).get("calls", 0) for c in commands)
    usec = sum(stats.get("cmdstat_" + c, {}).get("usec", 0) for c in commands)
    return calls, usec, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def measure(port, master, client, commands, seconds):
    """One wrk run on a row, with nginx's and Redis's costs per request."""
    before = redis_figures(client, commands) if client else None
    cpu = cpu_seconds(master)
    run = wrk(port, seconds)
    n = run["requests"]
    run["nginx_cpu"] = (cpu_seconds(master) - cpu) * 1e6 / n
    if client:
        after = redis_figures(client, commands)
        run["calls"] = (after[0] - before[0]) / n
        run["usec"] = (after[1] - before[1]) / n
        run["redis_cpu"] = (after[2] - before[2]) * 1e6 / n
    return run


def nginx_version():
    out = subprocess.run(["nginx", "-v"], capture_output=True, text=True, check=False).stderr
    return out.strip().rsplit("/", 1)[-1]


def print_table(rounds, seconds, version):
    """The Markdown table of the medians over rounds."""
    cores = os.cpu_count()
    print(f"\n## NGINX at the edge: one limit per request by client address, nothing denied "
          f"(nginx {nginx_version()} with worker_processes 1, Redis {version}; wrk -t1 "
          f"-c{CONNECTIONS}, {len(rounds)} × {seconds} s per row; nginx, Redis and wrk "
          f"share the machine's {cores} cores)\n")
    print("| row | Redis per request | requests/s | × no limit | p50 ms | p99 ms | "
          "nginx CPU µs/request | Redis µs/request | Redis CPU µs/request |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for i, (label, _, _, commands, _) in enumerate(ROWS):
        runs = [r[i] for r in rounds]

        def med(key, fmt, runs=runs):
            return format(statistics.median(r[key] for r in runs), fmt) if key in runs[0] else "-"
        ratio = statistics.median(r[i]["rps"] / r[0]["rps"] for r in rounds)
        sent = (f"{statistics.median(r['calls'] for r in runs):.2f} "
                + "+".join(c.upper() for c in commands)) if commands else "-"
        print(f"| {label} | {sent} | {med('rps', ',.0f')} | {ratio:.2f} | {med('p50', '.2f')} | "
              f"{med('p99', '.2f')} | {med('nginx_cpu', '.1f')} | {med('usec', '.2f')} | "
              f"{med('redis_cpu', '.1f')} |")
    print("\nRedis µs/request: the usec INFO commandstats adds for the row's command (a script's "
          "or function's inner calls run inside it) ÷ the requests wrk completed; Redis CPU (INFO "
          "cpu: reading requests and writing replies too) and nginx CPU (its worker's user + "
          "system time, upstream included) ÷ the same. The EVALSHA and library rows run on a "
          "server without the module. Medians over the rounds; a round runs every row once.")


def nginx_table(module, rounds=5, seconds=5):
    """Starts the servers and one nginx per row, measures `rounds` rounds, prints the table,
    and ends every process it started (and deletes its files) whatever happens."""
    why = missing()
    if why:
        print(f"\n## NGINX at the edge: skipped ({why})")
        return
    work = tempfile.mkdtemp(prefix="rl-bench-nginx-")
    os.chmod(work, 0o755)  # nginx's workers run as another user
    procs = []
    try:
        redis = {"module": start_redis(work, procs, module), "plain": start_redis(work, procs, None)}
        version = redis["plain"][0].info("server")["redis_version"]
        fronts = []
        for row in ROWS:
            client, port = redis[row[2]] if row[2] else (None, None)
            fronts.append((*start_nginx(work, procs, row, port), client, row[3]))
        for port, master, client, commands in fronts:  # pools, the script, the library, the JIT
            measure(port, master, client, commands, 1)
        results = []
        for _ in range(rounds):
            results.append([measure(*f, seconds) for f in fronts])
        print_table(results, seconds, version)
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", default=os.path.join(ROOT, "target/release/librl.so"))
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5; --quick 1)")
    p.add_argument("--seconds", type=int, default=5, help="seconds of wrk per row and round")
    p.add_argument("--quick", action="store_true", help="1 round of 2 s per row")
    a = p.parse_args()
    if missing():
        sys.exit(f"bench_nginx: {missing()}")
    nginx_table(a.module, 1 if a.quick else max(a.rounds, 1), 2 if a.quick else a.seconds)


if __name__ == "__main__":
    main()
