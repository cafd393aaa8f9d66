#!/usr/bin/env python3
"""Server time per hit of `limits`' stock Redis storage (`redis://`) next to the rl storage
(`rl+redis://`, redis_rl from clients/python/src), for each strategy, on the same traffic:
`limits.strategies.*RateLimiter(storage).hit(item, id)` driven from Python on N random
identifiers, then on one hot identifier; and the same with `get_window_stats` after each hit
(what Flask-Limiter and slowapi do per request when their headers are on).

A storage may send several commands per hit (EVALSHA, GET, TTL, RL.PEEK...): the figure is
their server time summed per hit, from INFO commandstats deltas over exactly the commands the
client sent (counted client-side; a script's inner calls, counted by the server under their
own names, are left out so nothing counts twice), and, as a check, the server's CPU time
(INFO cpu: parsing and replies included) per hit. Needs redis-py and limits (make deps puts
them in .tools/venv). Figures are as measured; nothing here is a test.

Usage: scripts/bench_limits.py [--module PATH] [--hits N] [--ids N]   (or bench.py --limits-only)
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients/python/src"))

STRATEGIES = [
    ("fixed window", "FixedWindowRateLimiter"),
    ("moving window", "MovingWindowRateLimiter"),
    ("sliding window counter", "SlidingWindowCounterRateLimiter"),
]
#: One limit for every row: the hot identifier goes over it (most of its hits are denied).
LIMIT = "1000/minute"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Counting:
    """Wraps a redis-py client's execute_command to count the commands it sends by name."""

    def __init__(self, client) -> None:
        self.sent: Counter[str] = Counter()
        original = client.execute_command

        def execute_command(*args, **options):
            self.sent[str(args[0]).lower()] += 1
            return original(*args, **options)

        client.execute_command = execute_command


def commandstats(client) -> dict[str, tuple[int, int]]:
    """{command: (calls, usec)} from INFO commandstats."""
    out = {}
    for name, stat in client.info("commandstats").items():
        out[name.removeprefix("cmdstat_")] = (int(stat["calls"]), int(stat["usec"]))
    return out


def cpu_seconds(client) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def run(url: str, scheme: str, strategy: str, ids: list[str], stats: bool):
    """(server µs per hit from commandstats, server CPU µs per hit, commands per hit) for
    `ids` hit in order through a fresh storage."""
    import redis
    from limits import parse, strategies
    from limits.storage import storage_from_string

    import redis_rl  # noqa: F401  (registers rl+redis://)

    admin = redis.Redis.from_url(url)
    admin.flushall()
    storage = storage_from_string(scheme + url)
    counting = Counting(storage.get_connection())
    limiter = getattr(strategies, strategy)(storage)
    item = parse(LIMIT)
    limiter.hit(item, "warm-up")  # loads scripts (EVALSHA's first miss), picks the backend
    if stats:
        limiter.get_window_stats(item, "warm-up")
    admin.config_resetstat()
    counting.sent.clear()
    cpu = cpu_seconds(admin)
    for i in ids:
        limiter.hit(item, i)
        if stats:
            limiter.get_window_stats(item, i)
    cpu = cpu_seconds(admin) - cpu
    stat = commandstats(admin)
    usec = sum(stat.get(name, (0, 0))[1] for name in counting.sent)
    # Each command the client sent reached the server: the counts agree.
    for name, n in counting.sent.items():
        assert stat.get(name, (0, 0))[0] == n, (name, n, stat.get(name))
    hits = len(ids)
    per = "+".join(f"{round(n / hits, 2):g} {name.upper()}"
                   for name, n in sorted(counting.sent.items()))
    return usec / hits, cpu * 1e6 / hits, per


def limits_table(module: str, hits: int = 20_000, keyspace: int = 10_000,
                 server: str = "redis-server") -> None:
    """Prints the Markdown table: stock `redis://` and `rl+redis://` per strategy, random ids
    and one hot id, hit alone and hit + get_window_stats."""
    port = free_port()
    work = tempfile.mkdtemp(prefix="rl-bench-limits-")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", work, "--loadmodule", module], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        import limits
        import redis

        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(200):
            try:
                if redis.Redis(port=port).ping():
                    break
            except redis.ConnectionError:
                time.sleep(0.05)
        version = redis.Redis(port=port).info("server")["redis_version"]
        rng = random.Random(1)
        traffic = {
            f"{keyspace:,} random ids": [f"id{rng.randrange(keyspace)}" for _ in range(hits)],
            "one hot id": ["hot"] * hits,
        }
        print(f"\n### limits storages: server time per hit (Redis {version}, limits "
              f"{limits.__version__}, {hits:,} hits per row, limit {LIMIT})\n")
        print("| strategy | traffic | storage | commands per hit | µs per hit | "
              "CPU µs per hit | with get_window_stats: µs | commands |")
        print("|---|---|---|---|---|---|---|---|")
        for label, strategy in STRATEGIES:
            for name, ids in traffic.items():
                for scheme in ("", "rl+"):
                    usec, cpu, per = run(url, scheme, strategy, ids, False)
                    s_usec, _, s_per = run(url, scheme, strategy, ids, True)
                    print(f"| {label} | {name} | `{scheme}redis://` | {per} | {usec:.2f} | "
                          f"{cpu:.2f} | {s_usec:.2f} | {s_per} |", flush=True)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--module", default=os.path.join(ROOT, "target/release/librl.so"))
    p.add_argument("--hits", type=int, default=20_000, help="hits per row (default 20,000)")
    p.add_argument("--ids", type=int, default=10_000, help="random identifiers (default 10,000)")
    a = p.parse_args()
    limits_table(a.module, a.hits, a.ids)


if __name__ == "__main__":
    main()
