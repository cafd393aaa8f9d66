#!/usr/bin/env python3
"""Rust at the edge: an axum 0.8 app answering "ok", with no limit, with tower_governor
(in-process, keyed by the peer's address, with and without its headers), with
tower-redis-cell over the module's CL.THROTTLE, and with the redis-rl crate's tower layer
(clients/rust, one RL.ALL per request, its headers on every response) on the module and on
the Functions library: requests per second, the app's CPU per request and what the layer adds
to it, and the Redis server time each spends per request (INFO commandstats).

Each row is one process of clients/rust/benches/axum_layer.rs (a tokio runtime of one worker
thread; its Redis connection without a response timeout), keyed by the client's address, with
limits so high that nothing is denied: every row measures the admitted path. wrk drives each row in rounds (every row once per round); the
table shows medians. Figures are as measured; nothing here is a test.

Usage: scripts/bench_rust.py [--module PATH] [--rounds N] [--seconds N] [--quick]
       (or bench.py --rust-only)
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import bench_nginx
from bench_nginx import answers, free_port, start, start_redis, stop, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "clients/rust")
CONNECTIONS = bench_nginx.CONNECTIONS

# (label, the app's mode, the Redis it uses: "module", "plain" or None, the commands it sends
# as INFO commandstats names them: a function's inner calls run inside its FCALL)
ROWS = [
    ("no limit", "none", None, []),
    ("tower_governor 0.8 (in-process)", "governor", None, []),
    ("tower_governor 0.8 with its headers", "governor-headers", None, []),
    ("tower-redis-cell 0.3 (CL.THROTTLE, module)", "redis-cell", "module", ["cl.throttle"]),
    ("redis-rl tower layer (module: one layer, RL.GCRA)", "rl", "module", ["rl.all", "rl.gcra"]),
    ("redis-rl tower layer (library: FCALL rl_gcra)", "rl", "plain", ["fcall", "fcall_ro"]),
]


def missing():
    lack = [t for t in ("cargo", "wrk", "redis-server") if not shutil.which(t)]
    if not lack:
        return None
    return f"missing {', '.join(lack)}: `bash scripts/install-deps.sh test` (make deps) installs wrk"


def build():
    """Builds the bench app (release, the tower feature): the executable's path."""
    out = subprocess.run(
        ["cargo", "bench", "--features", "tower", "--bench", "axum_layer", "--no-run",
         "--message-format=json"], cwd=CRATE, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"bench_rust: the bench app did not build:\n{out.stderr[-3000:]}")
    for line in out.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "axum_layer" \
                and msg.get("executable"):
            return msg["executable"]
    sys.exit("bench_rust: cargo named no executable for benches/axum_layer.rs")


def cpu_seconds(proc):
    """User + system CPU of the app process, in seconds."""
    with open(f"/proc/{proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(port, proc, client, commands, seconds):
    before = bench_nginx.redis_figures(client, commands) if client else None
    cpu = cpu_seconds(proc)
    run = bench_nginx.wrk(port, seconds)
    n = run["requests"]
    run["app_cpu"] = (cpu_seconds(proc) - cpu) * 1e6 / n
    if client:
        after = bench_nginx.redis_figures(client, commands)
        run["calls"] = (after[0] - before[0]) / n
        run["usec"] = (after[1] - before[1]) / n
        run["redis_cpu"] = (after[2] - before[2]) * 1e6 / n
    return run


def print_table(rounds, seconds, version):
    cores = os.cpu_count()
    print(f"\n## Rust at the edge: axum 0.8, one limit per request by client address, nothing "
          f"denied (Redis {version}; a tokio runtime of one worker thread; wrk -t1 "
          f"-c{CONNECTIONS}, {len(rounds)} × {seconds} s per row; the app, Redis and wrk share "
          f"the machine's {cores} cores)\n")
    print("| row | requests/s | × no limit | p50 ms | p99 ms | app CPU µs/request | "
          "added by the layer µs | Redis calls/request | Redis µs/request | "
          "Redis CPU µs/request |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, (label, _, _, _) in enumerate(ROWS):
        runs = [r[i] for r in rounds]

        def med(key, fmt, runs=runs):
            return format(statistics.median(r[key] for r in runs), fmt) if key in runs[0] else "-"
        ratio = statistics.median(r[i]["rps"] / r[0]["rps"] for r in rounds)
        added = statistics.median(r[i]["app_cpu"] - r[0]["app_cpu"] for r in rounds)
        print(f"| {label} | {med('rps', ',.0f')} | {ratio:.2f} | {med('p50', '.2f')} | "
              f"{med('p99', '.2f')} | {med('app_cpu', '.1f')} | "
              f"{'-' if i == 0 else format(added, '.1f')} | {med('calls', '.2f')} | "
              f"{med('usec', '.2f')} | {med('redis_cpu', '.1f')} |")
    print("\napp CPU: the app process's user + system time ÷ the requests wrk completed; added "
          "by the layer: that, less the no-limit row's in the same round. Redis µs/request: the "
          "usec INFO commandstats adds for the row's command (a function's inner calls run inside "
          "its FCALL) ÷ the same; Redis CPU (INFO cpu: "
          "reading requests and writing replies too) ÷ the same. The library row runs on a "
          "server without the module. Medians over the rounds; a round runs every row once.")


def rust_table(module, rounds=5, seconds=5):
    """Builds the app, starts the servers and one app per row, measures `rounds` rounds,
    prints the table, and ends every process it started whatever happens."""
    why = missing()
    if why:
        print(f"\n## Rust at the edge: skipped ({why})")
        return
    app = build()
    work = tempfile.mkdtemp(prefix="rl-bench-rust-")
    procs = []
    try:
        redis = {"module": start_redis(work, procs, module), "plain": start_redis(work, procs, None)}
        version = redis["plain"][0].info("server")["redis_version"]
        apps = []
        for label, mode, backend, commands in ROWS:
            client, rport = redis[backend] if backend else (None, None)
            port = free_port()
            log = os.path.join(work, f"{mode}-{port}.log")
            argv = [app, mode, str(port)] + ([f"redis://127.0.0.1:{rport}/"] if rport else [])
            proc = start(argv, log)
            procs.append(proc)
            wait_until(lambda p=port: answers(p, b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n", b"HTTP/1.1 200"),
                       proc, f"the app for {label!r}", log)
            apps.append((port, proc, client, commands))
        for a in apps:  # connections, the library's load
            measure(*a, 1)
        results = [[measure(*a, seconds) for a in apps] for _ in range(rounds)]
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
    if a.quick:
        rust_table(a.module, 1, 2)
    else:
        rust_table(a.module, a.rounds, a.seconds)


if __name__ == "__main__":
    main()
