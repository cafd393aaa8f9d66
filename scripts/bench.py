#!/usr/bin/env python3
"""Side-by-side benchmark: Redis's own INCR, each RL.* command, the matching
Lua script from the seed articles run with EVALSHA (reading the server's TIME),
and the same command through the Functions library (functions/rl.lua, FCALL).

Starts its own redis-server with the module, drives it with redis-benchmark
(pipelining 16, 50 clients; 100,000 random keys, then one hot key), and reads the
server's own time per call from INFO commandstats. Each side-by-side table is
measured in rounds, every row once per round, and shows the median over rounds of
each figure and of each row's ratios to the same round's floor. The library ÷ seed
script column is FCALL µs/call ÷ EVALSHA µs/call in the same round; after the Redis
and Valkey tables, a summary gathers it for every function, random keys and hot key,
on each server measured. Then `DEBIT 5` next to `COST 5` for each limiter (--debit-only
runs that table alone). Also measures memory per key, how the cost of a call
scales, and the worst single call (SLOWLOG) of the expensive shapes (COST at the
cap, 100,000 lapsed entries, a 64-layer RL.ALL) with a module-less replica attached.
Figures are as measured; nothing here is a test.

Last, the framework stores: `limits`' stock Redis storage next to the rl storage
(rl+redis://) per strategy, in server time per hit (scripts/bench_limits.py; --limits-only
runs that table alone); and rate-limit-redis next to RlStore and rate-limiter-flexible's
RateLimiterRedis next to RateLimiterRl, on the same traffic
(clients/node/scripts/bench-stores.mjs drives each through ioredis), with the server's time
per request summed over every command in INFO commandstats, and its CPU from INFO cpu
(--stores runs that table alone). Then NGINX at the edge: requests per second and Redis time per
request with no limit, NGINX's limit_req, a hand-written EVALSHA script and resty.rl
(scripts/bench_nginx.py; --nginx-only runs that table alone). Last, NGINX under a flood:
limit_req, resty.rl asking Redis per request, and resty.rl with its denial cache, with a
legitimate client alongside (scripts/bench_flood.py; --flood-only runs that table alone); and
the Python and Node middlewares under the same flood, each in its own server (uvicorn,
Express), next to a stock store (scripts/bench_flood_pkg.py; --flood-pkg-only runs that table
alone). Then Rust: an axum app with no limit, tower_governor, tower-redis-cell and the redis-rl
crate's tower layer, per request (scripts/bench_rust.py; --rust-only runs that table alone).

Usage: scripts/bench.py [--module PATH] [--library PATH] [--requests N] [--rounds N]
                       [--quick] [--valkey PATH] [--bounds-only] [--limits-only] [--stores]
                       [--debit-only] [--nginx-only] [--flood-only] [--flood-pkg-only]
                       [--rust-only]
"""

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import bench_flood
import bench_flood_pkg
import bench_limits
import bench_nginx
import bench_rust

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The seed articles' scripts, reading the server's clock (TIME) instead of a
# client timestamp so both sides use server time.
NOW_MS = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

LUA = {
    "gcra": NOW_MS + """
local key = KEYS[1]
local emission_interval = tonumber(ARGV[1])
local burst_offset = tonumber(ARGV[2])
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
""",
    "token_bucket": NOW_MS + """
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local requested = tonumber(ARGV[3])
local data = redis.call('HMGET', key, 'tokens', 'last_refill')
local tokens = tonumber(data[1])
local last_refill = tonumber(data[2])
if tokens == nil then
  tokens = capacity
  last_refill = now
end
local elapsed = (now - last_refill) / 1000.0
tokens = math.min(capacity, tokens + elapsed * rate)
local allowed = 0
if tokens >= requested then
  tokens = tokens - requested
  allowed = 1
end
redis.call('HMSET', key, 'tokens', tokens, 'last_refill', now)
redis.call('PEXPIRE', key, math.ceil(capacity / rate * 1000) + 1000)
return {allowed, math.floor(tokens)}
""",
    # The seeds have no leaky-bucket script; this is the usual queue form.
    "leaky": NOW_MS + """
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local leak_per_ms = tonumber(ARGV[2])
local data = redis.call('HMGET', key, 'level', 'ts')
local level = tonumber(data[1]) or 0
local ts = tonumber(data[2]) or now
level = math.max(0, level - (now - ts) * leak_per_ms)
if level + 1 <= capacity then
  redis.call('HSET', key, 'level', level + 1, 'ts', now)
  redis.call('PEXPIRE', key, math.ceil((level + 1) / leak_per_ms))
  return {1, math.floor(level / leak_per_ms)}
end
return {0, math.ceil((level + 1 - capacity) / leak_per_ms)}
""",
    "sliding": NOW_MS + """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local current_window = math.floor(now / window)
local previous_window = current_window - 1
local elapsed = (now % window) / window
local current_count = tonumber(redis.call('GET', key .. ':' .. current_window) or '0')
local previous_count = tonumber(redis.call('GET', key .. ':' .. previous_window) or '0')
local estimated = previous_count * (1 - elapsed) + current_count
if estimated < limit then
  redis.call('INCR', key .. ':' .. current_window)
  redis.call('PEXPIRE', key .. ':' .. current_window, window * 2)
  return {1, math.floor(limit - estimated - 1)}
else
  return {0, 0}
end
""",
    "sliding_log": NOW_MS + """
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, now .. ':' .. math.random(1000000))
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1}
else
  return {0, 0}
end
""",
    "fixed": NOW_MS + """
local key = KEYS[1] .. ':' .. math.floor(now / (tonumber(ARGV[2]) * 1000))
local current = redis.call('INCR', key)
if current == 1 then
  redis.call('EXPIRE', key, ARGV[2])
end
return {current <= tonumber(ARGV[1]) and 1 or 0, math.max(0, tonumber(ARGV[1]) - current)}
""",
}

# name, INFO commandstats name, module args after the key, Lua script, its args
# (None for a module-only row: no seed script, no library function). Each pair
# decides the same limit: 100 per hour, bursts of 100 (an API quota).
# With 100,000 random keys every call is admitted and writes, and the state
# outlives the run as an INCR counter does; with one hot key almost every call
# is denied.
CASES = [
    ("RL.GCRA", "rl.gcra", ["100", "1h", "BURST", "100"], "gcra", ["36000", "3564000"]),
    # redis-cell's command: 100 per hour, bursts of 100 (max_burst 99); its seed is gcra.lua.
    ("CL.THROTTLE", "cl.throttle", ["99", "100", "3600"], "gcra", ["36000", "3564000"]),
    # Redis's designed GCRA command, module only: the same decision on RL.GCRA's state.
    ("GCRA", "gcra", ["99", "100", "3600"], None, None),
    ("RL.TOKENBUCKET", "rl.tokenbucket", ["100", "100", "1h"], "token_bucket", ["100", "0.027777778", "1"]),
    ("RL.LEAKY", "rl.leaky", ["100", "100", "1h"], "leaky", ["100", "0.000027777778"]),
    ("RL.SLIDING", "rl.sliding", ["100", "1h"], "sliding", ["100", "3600000"]),
    ("RL.SLIDINGLOG", "rl.slidinglog", ["100", "1h"], "sliding_log", ["3600000", "100"]),
    ("RL.FIXED", "rl.fixed", ["100", "1h"], "fixed", ["100", "3600"]),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


VALKEY = os.path.join(ROOT, ".tools/bin/valkey-server")


class Server:
    def __init__(self, module, extra=(), binary="redis-server"):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rl-bench-")
        load = ["--loadmodule", module] if module else []
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, *load,
             "--logfile", os.path.join(self.dir, "server.log"), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if self.cli("PING").strip() == "PONG":
                return
            time.sleep(0.05)
        sys.exit("redis-server did not start")

    def cli(self, *args, stdin=None):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], input=stdin,
                           capture_output=True, text=True, check=False)
        return r.stdout

    def info(self, section):
        fields = {}
        for line in self.cli("INFO", section).splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                fields[k] = v.strip()
        return fields

    def usec_per_call(self, command):
        """(µs per call, calls) from INFO commandstats: total usec ÷ calls, which is
        finer than the usec_per_call field (two decimals)."""
        stat = self.info("commandstats").get("cmdstat_" + command, "")
        parts = dict(p.split("=") for p in stat.split(",") if "=" in p)
        calls = int(parts.get("calls", "0"))
        return (int(parts["usec"]) / calls if calls else float("nan")), calls

    def cpu_seconds(self):
        cpu = self.info("cpu")
        return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    def stop(self):
        self.cli("SHUTDOWN", "NOSAVE")
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def benchmark(server, requests, keyspace, args):
    """Runs redis-benchmark; returns requests per second."""
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(requests), "-c", "50",
           "-P", "16", "--csv"]
    if keyspace:
        cmd += ["-r", str(keyspace)]
    r = subprocess.run(cmd + args, capture_output=True, text=True, check=False)
    for line in r.stdout.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if len(cells) > 1 and cells[0] != "test":
            return float(cells[1])
    sys.exit("redis-benchmark failed: " + r.stderr + r.stdout)


def measure(server, requests, keyspace, stat_name, args):
    """(requests per second, server µs per call from INFO commandstats, server CPU µs
    per call from INFO cpu) for one command. commandstats times the command alone;
    the CPU figure also counts what the server does around it: reading and parsing
    the request, writing the reply, and feeding replicas and the AOF."""
    server.cli("FLUSHALL")
    server.cli("CONFIG", "RESETSTAT")
    cpu = server.cpu_seconds()
    rps = benchmark(server, requests, keyspace, args)
    cpu = server.cpu_seconds() - cpu
    usec, calls = server.usec_per_call(stat_name)
    return rps, usec, cpu * 1e6 / max(calls, 1)


def key_arg(keyspace):
    return "k:__rand_int__" if keyspace else "hot"


PXAT = str(int(time.time() * 1000) + 30 * 86_400_000)  # a month ahead: every SET writes


def function_name(command):
    """The library's function for a module command: RL.GCRA -> rl_gcra."""
    return command.lower().replace(".", "_")


def run_round(server, requests, shas, keyspace):
    """One round: INCR, the floor (SET … PXAT or, for the hot key, GET), then each
    command followed, when `shas` is given, by its seed Lua script (EVALSHA, with
    requests // 2) and the same command through the Functions library (FCALL, with
    requests // 4; the server must have it loaded). Returns one row per line of the
    table, (name, native, script, library), INCR first and the floor second; each
    figure is measure()'s (req/s, µs/call, CPU µs/call) or None."""
    key = key_arg(keyspace)
    rows = [("INCR", measure(server, requests, keyspace, "incr", ["INCR", key]), None, None)]
    if keyspace:
        floor = measure(server, requests, keyspace, "set",
                        ["SET", key, "gcra:1796045952663730620", "PXAT", PXAT])
        rows.append(("SET … PXAT", floor, None, None))
    else:
        rows.append(("GET", measure(server, requests, keyspace, "get", ["GET", key]), None, None))
    for name, stat, args, lua, lua_args in CASES:
        native = measure(server, requests, keyspace, stat, [name, key, *args])
        script = library = None
        if shas and lua:
            script = measure(server, requests // 2, keyspace, "evalsha",
                             ["EVALSHA", shas[lua], "1", key, *lua_args])
            library = measure(server, requests // 4, keyspace, "fcall",
                              ["FCALL", function_name(name), "1", key, *args])
        rows.append((name, native, script, library))
    return rows


def row_figures(row, incr, floor):
    """One row's figures in one round; the ratios are against that round's INCR, floor
    and seed script: µs/call ÷ floor µs/call, CPU µs/call ÷ floor CPU µs/call, µs/call
    ÷ INCR µs/call, Lua µs/call ÷ module µs/call, library µs/call ÷ module µs/call,
    and library µs/call ÷ seed-script (Lua) µs/call."""
    _name, (rps, usec, cpu), script, library = row
    f = {"rps": rps, "usec": usec, "cpu": cpu, "x_floor": usec / floor[1],
         "cpu_x_floor": cpu / floor[2], "x_incr": usec / incr[1]}
    if script:
        f["lua"], f["lua_x"] = script[1], script[1] / usec
    if library:
        f["lib"], f["lib_x"] = library[1], library[1] / usec
    if script and library:
        f["lib_seed"] = library[1] / script[1]
    return f


def row_series(rounds):
    """For each line of the table, in order: (name, [row_figures() of each round])."""
    return [(row[0], [row_figures(r[i], r[0][1], r[1][1]) for r in rounds])
            for i, row in enumerate(rounds[0])]


def median(figures, key):
    """The median over the rounds of one figure."""
    return statistics.median(f[key] for f in figures)


def spread(figures, key):
    """A per-round ratio as `median (lowest–highest)` over the rounds."""
    values = [f[key] for f in figures]
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def table_cells(figures):
    """One line of print_table(), after the name: medians, with spreads for the × floor,
    CPU × floor and library ÷ seed-script ratios; Lua and library cells are empty on
    rows (and tables) without them."""
    cells = [f"{median(figures, 'rps'):,.0f}", f"{median(figures, 'usec'):.2f}",
             spread(figures, "x_floor"), f"{median(figures, 'cpu'):.2f}",
             spread(figures, "cpu_x_floor"), f"{median(figures, 'x_incr'):.2f}"]
    has = figures[0]
    cells += ([f"{median(figures, 'lua'):.2f}", f"{median(figures, 'lua_x'):.1f}×"]
              if "lua" in has else ["", ""])
    cells += ([f"{median(figures, 'lib'):.2f}", f"{median(figures, 'lib_x'):.1f}×"]
              if "lib" in has else ["", ""])
    cells.append(spread(figures, "lib_seed") if "lib_seed" in has else "")
    return cells


def print_table(rounds, title):
    """Prints the rounds of run_round() as one table: each figure is the median over
    the rounds (ratios: the median of the per-round ratios), and the × floor, CPU ×
    floor and library ÷ seed script cells give the lowest–highest per-round ratio in
    brackets."""
    floor_name = rounds[0][1][0]
    print(f"\n#### {title}\n")
    print(f"| command | req/s | µs/call | × {floor_name} | CPU µs/call | CPU × {floor_name} "
          "| × INCR | Lua µs/call | speed-up vs Lua | library µs/call | library ÷ module "
          "| library ÷ seed script |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, figures in row_series(rounds):
        print(f"| {name} | {' | '.join(table_cells(figures))} |")
    print(f"\nEach figure is the median over {len(rounds)} rounds; a round measures every row "
          "once, in this order, and each ratio is the median of the per-round ratios to that "
          f"round's {floor_name}, INCR, module call or seed script. In brackets: the lowest "
          "and highest per-round ratio.")


def run_table(server, requests, shas, keyspace, label, rounds):
    """One table from `rounds` interleaved rounds of run_round(), each with
    `requests` requests per command (see run_round for the Lua and library).
    Returns the rounds."""
    results = [run_round(server, requests, shas, keyspace) for _ in range(rounds)]
    keys = f"{keyspace:,} random keys" if keyspace else "one hot key"
    per_round = f"{requests:,} requests per command"
    if shas:
        per_round += f", Lua {requests // 2:,}, library {requests // 4:,}"
    print_table(results, f"{keys}, {label} (redis-benchmark -P 16 -c 50; "
                         f"{rounds} rounds of {per_round})")
    return results


def library_vs_seed(rounds):
    """{command: `median (lowest–highest)`} of library µs/call ÷ seed-script µs/call
    over the rounds, for the rows measured both ways."""
    return {name: spread(figures, "lib_seed") for name, figures in row_series(rounds)
            if "lib_seed" in figures[0]}


# The side-by-side tables' two shapes: (name in the summary, random keys or 0 for one hot key).
SHAPES = [("random keys", 100_000), ("hot key", 0)]


def load_scripts(server, library):
    """Loads the seed scripts (SCRIPT LOAD) and the library file (FUNCTION LOAD
    REPLACE) into `server`; returns {script name: SHA1} for EVALSHA."""
    shas = {name: server.cli("SCRIPT", "LOAD", src).strip() for name, src in LUA.items()}
    with open(library) as f:
        loaded = server.cli("-x", "FUNCTION", "LOAD", "REPLACE", stdin=f.read()).strip()
    if loaded != "rl":
        sys.exit("FUNCTION LOAD of the library failed: " + loaded)
    return shas


def side_by_side(server, library, requests, rounds, label):
    """The random-keys and hot-key tables on `server` (module, seed scripts and
    library); returns {shape: library_vs_seed()} for summary_table()."""
    shas = load_scripts(server, library)
    return {shape: library_vs_seed(run_table(server, requests, shas, keyspace, label, rounds))
            for shape, keyspace in SHAPES}


def summary_table(servers, rounds):
    """The library ÷ seed script column of every side-by-side table, one line per
    function: `servers` is [(label, side_by_side())] in the order measured."""
    columns = [(f"{label}, {shape}", ratios[shape])
               for label, ratios in servers for shape, _keys in SHAPES]
    print("\n#### The library against the seed scripts (library µs/call ÷ seed-script "
          "µs/call)\n")
    print(f"| function | {' | '.join(heading for heading, _ in columns)} |")
    print(f"|---|{'---:|' * len(columns)}")
    for name, _stat, _args, lua, _lua_args in CASES:
        if lua is None:
            continue  # module only
        cells = [ratios.get(name, "") for _, ratios in columns]
        print(f"| {function_name(name)} | {' | '.join(cells)} |")
    print(f"\nFCALL of the library's function ÷ EVALSHA of the seed script with the same "
          f"limit (CL.THROTTLE's is the GCRA script), both from INFO commandstats: the median "
          f"over {rounds} rounds, the lowest and highest per-round ratio in brackets; below 1 "
          "the library is the faster.")


def deployment_tables(module, requests, rounds):
    """The random-key table with a module-less replica attached, and with an
    append-only file (everysec): propagation is outside commandstats, so read the
    CPU columns there."""
    master = Server(module, ["--repl-diskless-sync-delay", "0"])
    replica = Server(None, ["--replicaof", "127.0.0.1", str(master.port)])
    try:
        for _ in range(200):
            if replica.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        run_table(master, requests, None, 100_000, "one module-less replica attached", rounds)
    finally:
        replica.stop()
        master.stop()
    aof = Server(module, ["--appendonly", "yes", "--appendfsync", "everysec"])
    try:
        run_table(aof, requests, None, 100_000, "appendonly yes, appendfsync everysec", rounds)
    finally:
        aof.stop()


def load_keys(server, count, words):
    """Runs one command per key k:0..count-1 through redis-cli --pipe; the key
    goes where `words` has KEY (else right after the command name)."""
    if "KEY" not in words:
        words = [words[0], "KEY", *words[1:]]
    def resp(parts):
        out = [f"*{len(parts)}\r\n"]
        for p in parts:
            out.append(f"${len(p.encode())}\r\n{p}\r\n")
        return "".join(out)
    payload = "".join(resp([f"k:{i}" if w == "KEY" else w for w in words]) for i in range(count))
    subprocess.run(["redis-cli", "-p", str(server.port), "--pipe"], input=payload,
                   capture_output=True, text=True, check=True)


def debit_table(server, requests, rounds):
    """Per limiter, `COST 5` and `DEBIT 5` side by side on 100,000 random keys (every call
    admitted and written either way, so both do the same work): server µs per call from
    INFO commandstats, the median over `rounds` interleaved rounds, and the median of the
    per-round ratios DEBIT ÷ COST. (On one hot key the two are not comparable: a COST past
    the limit is denied and writes nothing, a DEBIT always writes.)"""
    keyspace = 100_000
    key = key_arg(keyspace)
    print(f"\n### DEBIT next to COST ({keyspace:,} random keys; {rounds} rounds of "
          f"{requests:,} requests per command)\n")
    print("| command | COST 5 µs/call | DEBIT 5 µs/call | DEBIT ÷ COST |")
    print("|---|---:|---:|---:|")
    for name, stat, args, _lua, _lua_args in CASES:
        if not name.startswith("RL."):
            continue
        cost, debit = [], []
        for _ in range(rounds):
            cost.append(measure(server, requests, keyspace, stat, [name, key, *args, "COST", "5"])[1])
            debit.append(measure(server, requests, keyspace, stat, [name, key, *args, "DEBIT", "5"])[1])
        ratio = statistics.median(d / c for d, c in zip(debit, cost))
        print(f"| {name} | {statistics.median(cost):.2f} | {statistics.median(debit):.2f} "
              f"| {ratio:.2f} |")


def memory_table(server, count):
    print(f"\n### Memory per key ({count:,} keys, INFO memory used_memory)\n")
    print("| state | bytes per key | × SET … PX |")
    print("|---|---:|---:|")
    cases = [("SET k v PX (plain key)", ["SET", "1764489600123", "PX", "60000"])]
    strings = [(name, args) for name, _s, args, lua, _a in CASES
               if name not in ("CL.THROTTLE", "GCRA")]  # (their state is RL.GCRA's size)
    cases += [(name, [name, *args]) for name, args in strings]
    cases += [(f"FCALL {function_name(name)}", ["FCALL", function_name(name), "1", "KEY", *args])
              for name, args in strings]
    base = None
    for name, words in cases:
        server.cli("FLUSHALL")
        before = int(server.info("memory")["used_memory"])
        load_keys(server, count, words)
        # INFO rl settles the module's per-call record (kept until the next cron
        # tick), so that only the keys are counted.
        server.info("rl")
        after = int(server.info("memory")["used_memory"])
        per_key = (after - before) / count
        base = base or per_key
        print(f"| {name} | {per_key:.0f} | {per_key / base:.2f} |")


def scaling_table(server, requests):
    print("\n### Scaling: server µs per call by number of keys\n")
    print("| command | 10,000 keys | 1,000,000 keys |")
    print("|---|---:|---:|")
    for name, stat, args in [("INCR", "incr", []), *[(n, s, a) for n, s, a, _l, _x in CASES]]:
        cells = []
        for keys in (10_000, 1_000_000):
            _rps, usec, _cpu = measure(server, requests, keys, stat, [name, "k:__rand_int__", *args])
            cells.append(f"{usec:.2f}")
        print(f"| {name} | {' | '.join(cells)} |")
    print("\n### RL.SLIDINGLOG by limit (one hot key, 10 s window: a full log, steady state)\n")
    print("| limit | server µs/call | entries in the log |")
    print("|---:|---:|---:|")
    for limit in (10, 100, 1_000, 10_000):
        # Fill the log with `limit` entries (one per request), then measure the steady state.
        server.cli("FLUSHALL")
        payload = (f"*4\r\n$13\r\nRL.SLIDINGLOG\r\n$3\r\nhot\r\n${len(str(limit))}\r\n"
                   f"{limit}\r\n$3\r\n10s\r\n") * limit
        subprocess.run(["redis-cli", "-p", str(server.port), "--pipe"], input=payload,
                       capture_output=True, text=True, check=True)
        server.cli("CONFIG", "RESETSTAT")
        benchmark(server, requests, 0, ["RL.SLIDINGLOG", "hot", str(limit), "10s"])
        usec, _ = server.usec_per_call("rl.slidinglog")
        entries = server.cli("ZCARD", "hot").strip()
        print(f"| {limit:,} | {usec:.2f} | {entries} |")


class Resp:
    """A minimal RESP2 client (SLOWLOG replies are nested arrays)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(1 << 16)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ValueError(line)

    def __call__(self, *args):
        out = [f"*{len(args)}\r\n".encode()]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(f"${len(a)}\r\n".encode() + a + b"\r\n")
        self.sock.sendall(b"".join(out))
        return self._read()


def worst_call(c, command, run):
    """Runs `run()` with every call logged (slowlog-log-slower-than 0); returns
    the longest and the median duration in µs of the calls to `command`, from SLOWLOG."""
    c("CONFIG", "SET", "slowlog-max-len", "100000")
    c("CONFIG", "SET", "slowlog-log-slower-than", "0")
    c("SLOWLOG", "RESET")
    run()
    c("CONFIG", "SET", "slowlog-log-slower-than", "10000")
    entries = c("SLOWLOG", "GET", "-1")
    c("SLOWLOG", "RESET")
    durations = sorted(e[2] for e in entries if e[3][0].decode().upper() == command)
    return durations[-1], durations[len(durations) // 2], len(durations)


def bounds_table(module, label):
    """The worst call of each expensive shape, on a master with a module-less
    replica attached that must stay connected (one full sync, no second)."""
    master = Server(module, ["--repl-diskless-sync-delay", "0"])
    replica = Server(None, ["--replicaof", "127.0.0.1", str(master.port)])
    try:
        c = Resp(master.port)
        for _ in range(200):
            if replica.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        rows = []

        def shape(name, command, run, setup=lambda: None):
            c("FLUSHALL")
            setup()
            before = int(master.info("memory")["used_memory"])
            offset = int(master.info("replication")["master_repl_offset"])
            worst, median, calls = worst_call(c, command, run)
            grown = int(master.info("memory")["used_memory"]) - before
            sent = int(master.info("replication")["master_repl_offset"]) - offset
            rows.append((name, calls, worst, median, grown, sent))

        # At the cap: 20 fresh keys each, COST 1 vs COST 100000 (after a warm-up).
        for cost in (1, 1, 100_000):
            shape(f"RL.SLIDINGLOG k 100000 1h COST {cost:,} (20 fresh keys)", "RL.SLIDINGLOG",
                  lambda cost=cost: [c("RL.SLIDINGLOG", f"k{i}", 100_000, "1h", "COST", cost)
                                     for i in range(20)])
        del rows[0]

        # 100,000 entries the module wrote (COST 1 each), lapsed for a 1 s window.
        def fill():
            payload = "".join(
                "*6\r\n$13\r\nRL.SLIDINGLOG\r\n$4\r\nfull\r\n$6\r\n100000\r\n$2\r\n1h\r\n"
                "$4\r\nCOST\r\n$1\r\n1\r\n" for _ in range(100_000))
            subprocess.run(["redis-cli", "-p", str(master.port), "--pipe"], input=payload,
                           capture_output=True, text=True, check=True)
            time.sleep(1.1)
        shape("RL.SLIDINGLOG full 10 1s after its 100,000 entries lapsed (10 calls)",
              "RL.SLIDINGLOG", lambda: [c("RL.SLIDINGLOG", "full", 10, "1s") for _ in range(10)],
              fill)

        keys = [f"rl:{{z}}:L{i}" for i in range(64)]
        clauses = ["SLIDINGLOG", 100_000, "1h", "COST", 100_000] * 64
        shape("RL.ALL, 64 layers SLIDINGLOG 100000 1h COST 100000 (1 call)", "RL.ALL",
              lambda: c("RL.ALL", 64, *keys, *clauses))

        link = replica.info("replication").get("master_link_status")
        syncs = master.info("stats").get("sync_full")
        print(f"\n### Worst call (SLOWLOG), {label}\n")
        print("| shape | calls | worst µs | median µs | used_memory added | replication bytes |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, calls, worst, median, grown, sent in rows:
            print(f"| {name} | {calls} | {worst:,} | {median:,} | {grown:,} | {sent:,} |")
        print(f"\nModule-less replica: master_link_status {link}; full syncs on the master: "
              f"{syncs} (1 = the initial one only)")
    finally:
        replica.stop()
        master.stop()


NODE_DIR = os.path.join(ROOT, "clients/node")

# (label, bench-stores.mjs --store, needs the module): the stock store first, then ours.
STORES = [
    ("express-rate-limit: rate-limit-redis (EVALSHA)", "rate-limit-redis", False),
    ("express-rate-limit: RlStore", "rl-store", True),
    ("express-rate-limit: RlStore, library", "rl-store", False),
    ("rate-limiter-flexible: RateLimiterRedis (EVALSHA)", "rate-limiter-redis", False),
    ("rate-limiter-flexible: RateLimiterRl", "rate-limiter-rl", True),
    ("rate-limiter-flexible: RateLimiterRl, library", "rate-limiter-rl", False),
]


def node_package_ready():
    """clients/node with its dev dependencies (the frameworks) installed and built."""
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules")):
        subprocess.run(["npm", "ci", "--silent", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=NODE_DIR, check=True)


# The commands a client sends (the rest appear in commandstats only as a script's or a
# function's inner calls, whose time is already inside the EVALSHA's or FCALL's).
SENT = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script", "function",
        "multi", "exec"}


def all_commands(server):
    """(total usec, calls) over the commands clients sent, from INFO commandstats."""
    usec = calls = 0
    for name, stat in server.info("commandstats").items():
        command = name[len("cmdstat_"):]
        if name.startswith("cmdstat_") and (command in SENT or command.startswith(("rl.", "cl."))):
            parts = dict(p.split("=") for p in stat.split(",") if "=" in p)
            usec += int(parts["usec"])
            calls += int(parts["calls"])
    return usec, calls


def store_run(server, store, requests, keys):
    """One store on `server`: (server µs per request over every command, commands per
    request, server CPU µs per request, share admitted, requests per second at the client)."""
    server.cli("FLUSHALL")
    server.cli("FUNCTION", "FLUSH")
    server.cli("SCRIPT", "FLUSH")
    server.cli("CONFIG", "RESETSTAT")
    cpu = server.cpu_seconds()
    out = subprocess.run(["node", "scripts/bench-stores.mjs", "--port", str(server.port), "--store", store,
                          "--requests", str(requests), "--keys", str(keys)],
                         cwd=NODE_DIR, capture_output=True, text=True, check=True)
    cpu = server.cpu_seconds() - cpu
    usec, calls = all_commands(server)
    r = __import__("json").loads(out.stdout)
    n = requests + 1  # and the warm-up request
    return usec / n, calls / n, cpu * 1e6 / n, r["admitted"] / requests, requests / r["seconds"]


def stores_table(module, requests, rounds):
    """The framework stores side by side: the median over `rounds` rounds of each figure,
    every store measured once per round, on random keys (all admitted) and a hot key."""
    node_package_ready()
    with_module, without = Server(module), Server(None)
    try:
        for shape, keys in [("10,000 random keys", 10_000), ("one hot key", 0)]:
            results = {label: [] for label, _s, _m in STORES}
            for _ in range(rounds):
                for label, store, needs_module in STORES:
                    results[label].append(store_run(with_module if needs_module else without,
                                                    store, requests, keys))
            print(f"\n#### Framework stores, {shape}: 100 per hour, {requests:,} requests per store, "
                  f"50 in flight, ioredis ({rounds} rounds)\n")
            print("| store | server µs/request | commands/request | server CPU µs/request "
                  "| × stock (µs) | admitted | req/s at the client |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            stock = None
            for label, _store, _m in STORES:
                rows = results[label]
                med = [statistics.median(r[i] for r in rows) for i in range(5)]
                if "(EVALSHA)" in label:
                    stock = med[0]
                print(f"| {label} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[0] / stock:.2f} "
                      f"| {med[3]:.1%} | {med[4]:,.0f} |")
        print("\nServer µs/request: the usec in INFO commandstats of every command the clients "
              "sent (EVALSHA and FCALL with the calls inside them; SCRIPT LOAD and FUNCTION LOAD "
              "included) ÷ requests; CPU: INFO cpu, which also counts reading requests and writing "
              "replies. The stock stores and the library rows run on a server without the module.")
    finally:
        with_module.stop()
        without.stop()


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    redis_v = server_version("redis-server")
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Redis {redis_v}"


def server_version(binary):
    """The version a redis-server or valkey-server binary reports (v=X.Y.Z)."""
    words = subprocess.run([binary, "--version"], capture_output=True, text=True,
                           check=False).stdout.split()
    return next((w[2:] for w in words if w.startswith("v=")), "?")


def server_label(binary, name):
    """`name` and the binary's major.minor version, e.g. "Valkey 9.1"."""
    return f"{name} {server_version(binary).rsplit('.', 1)[0]}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", default=os.path.join(ROOT, "target/release/librl.so"))
    p.add_argument("--library", default=os.path.join(ROOT, "functions/rl.lua"))
    p.add_argument("--requests", type=int,
                   help="requests per command over all rounds (default 400,000; --quick 100,000)")
    p.add_argument("--rounds", type=int,
                   help="rounds per side-by-side table (default 5; --quick 3)")
    p.add_argument("--quick", action="store_true",
                   help="fewer requests and rounds, no scaling tables")
    p.add_argument("--valkey", default=VALKEY, help="valkey-server for the Valkey tables")
    p.add_argument("--bounds-only", action="store_true", help="only the worst-call table")
    p.add_argument("--limits-only", action="store_true",
                   help="only the limits storages' table (stock redis:// and rl+redis://)")
    p.add_argument("--stores", action="store_true",
                   help="only the framework stores (express-rate-limit, rate-limiter-flexible)")
    p.add_argument("--debit-only", action="store_true", help="only the DEBIT next to COST table")
    p.add_argument("--nginx-only", action="store_true",
                   help="only the NGINX table (limit_req, EVALSHA, resty.rl; scripts/bench_nginx.py)")
    p.add_argument("--flood-only", action="store_true",
                   help="only the NGINX flood table (limit_req, resty.rl with and without its "
                        "denial cache; scripts/bench_flood.py)")
    p.add_argument("--flood-pkg-only", action="store_true",
                   help="only the Python and Node middlewares' flood table (uvicorn, Express; "
                        "scripts/bench_flood_pkg.py)")
    p.add_argument("--rust-only", action="store_true",
                   help="only the Rust table (axum with tower_governor, tower-redis-cell and the "
                        "redis-rl tower layer; scripts/bench_rust.py)")
    a = p.parse_args()
    requests = a.requests or (100_000 if a.quick else 400_000)
    rounds = max(a.rounds or (3 if a.quick else 5), 1)
    per_round = max(requests // rounds, 20_000)
    print(f"Machine: {machine()}; {time.strftime('%Y-%m-%d')}")
    if a.bounds_only:
        bounds_table(a.module, os.path.basename(a.module))
        return
    if a.limits_only:
        bench_limits.limits_table(a.module, 5_000 if a.quick else 20_000)
        return
    if a.nginx_only:
        bench_nginx.nginx_table(a.module, rounds, 2 if a.quick else 5)
        return
    if a.flood_only:
        bench_flood.flood_table(a.module, 2 if a.quick else 5)
        return
    if a.flood_pkg_only:
        bench_flood_pkg.flood_pkg_table(a.module, 2 if a.quick else 3)
        return
    if a.rust_only:
        bench_rust.rust_table(a.module, rounds, 2 if a.quick else 5)
        return
    if a.stores:
        stores_table(a.module, a.requests or 20_000, rounds)
        return
    if a.debit_only:
        server = Server(a.module)
        try:
            debit_table(server, per_round, rounds)
        finally:
            server.stop()
        return
    label = server_label("redis-server", "Redis")
    server = Server(a.module)
    try:
        summary = [(label, side_by_side(server, a.library, per_round, rounds, label))]
        debit_table(server, per_round, rounds)
        memory_table(server, 100_000)
        if not a.quick:
            scaling_table(server, requests)
    finally:
        server.stop()
    deployment_tables(a.module, per_round, rounds)
    if os.path.exists(a.valkey):
        label = server_label(a.valkey, "Valkey")
        valkey = Server(a.module, binary=a.valkey)
        try:
            summary.append((label, side_by_side(valkey, a.library, per_round, rounds, label)))
        finally:
            valkey.stop()
    summary_table(summary, rounds)
    bounds_table(a.module, "this build")
    bench_limits.limits_table(a.module, 5_000 if a.quick else 20_000)
    stores_table(a.module, 20_000, rounds)
    bench_nginx.nginx_table(a.module, rounds, 2 if a.quick else 5)
    bench_flood.flood_table(a.module, 2 if a.quick else 5)
    bench_flood_pkg.flood_pkg_table(a.module, 2 if a.quick else 3)
    bench_rust.rust_table(a.module, rounds, 2 if a.quick else 5)


if __name__ == "__main__":
    main()
