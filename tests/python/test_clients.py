"""The client snippets of docs/clients.md and docs/managed-redis.md: the redis-py and
node-redis ones run here, exactly as the docs show them (test_docs.py checks the quotes; the
Rust one runs in tests/it/clients.rs)."""

import os
import shutil
import subprocess
import sys

from conftest import ROOT

SNIPPETS = ROOT / "examples/clients"
NODE = ROOT / ".tools/node"  # node-redis, installed by scripts/install-deps.sh


def calls(r, command):
    """Redis's own count of `command` calls (INFO commandstats)."""
    return r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def run_snippet(command, redis_url):
    env = dict(os.environ, REDIS_URL=redis_url, RL_LIBRARY=str(ROOT / "functions/rl.lua"))
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def run_node_snippet(name, redis_url):
    """An ES module resolves `redis` from node_modules beside it: run a copy from .tools/node.
    The 60 s timeout fails the test if the client keeps the process alive."""
    assert (NODE / "node_modules/redis/package.json").exists(), "run scripts/install-deps.sh"
    copy = NODE / f"snippet-{os.getpid()}-{name}"
    shutil.copy(SNIPPETS / name, copy)
    try:
        return run_snippet(["node", copy], redis_url)
    finally:
        copy.unlink()


def test_redis_py_snippet(r, redis_url):
    before = calls(r, "rl.gcra")
    assert run_snippet([sys.executable, SNIPPETS / "redis_py.py"], redis_url) == [
        "1", "5", "4", "0", "100"]
    assert calls(r, "rl.gcra") == before + 1  # (the key itself lapses 100 ms later)


def test_node_redis_snippet_prints_the_reply_and_exits(r, redis_url):
    before = calls(r, "rl.gcra")
    assert run_node_snippet("node_redis.mjs", redis_url) == ["1", "5", "4", "0", "100"]
    assert calls(r, "rl.gcra") == before + 1


def test_redis_py_library_snippet(r, redis_url):
    """The Functions library from redis-py: FUNCTION LOAD REPLACE, then FCALL rl_gcra."""
    r.delete("user:43")
    before = calls(r, "fcall")
    assert run_snippet([sys.executable, SNIPPETS / "redis_py_library.py"], redis_url) == [
        "1", "5", "4", "0", "100"]
    assert calls(r, "fcall") == before + 1


def test_node_redis_library_snippet(r, redis_url):
    r.delete("user:43")
    before = calls(r, "fcall")
    assert run_node_snippet("node_redis_library.mjs", redis_url) == ["1", "5", "4", "0", "100"]
    assert calls(r, "fcall") == before + 1


def test_policy_metrics_snippet(r, redis_url):
    """INFO rl_policies turned into Prometheus series, as docs/operations.md shows them."""
    for name in r.execute_command("RL.POLICY", "LIST"):
        r.execute_command("RL.POLICY", "DEL", name.split()[0])
    r.execute_command("RL.POLICY", "SET", "tier:free", "FIXED", "1", "1h", "SHADOW")
    r.delete("metrics:a")
    for _ in range(3):
        r.execute_command("RL.LIMIT", "metrics:a", "tier:free")
    out = subprocess.run([sys.executable, SNIPPETS / "policy_metrics.py"], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ, REDIS_URL=redis_url))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        'rl_policy_calls_total{policy="tier:free"} 3',
        'rl_policy_admitted_total{policy="tier:free"} 1',
        'rl_policy_denied_total{policy="tier:free"} 0',
        'rl_policy_shadow_denied_total{policy="tier:free"} 2',
        'rl_policy_errors_total{policy="tier:free"} 0',
        'rl_policy_penalties_total{policy="tier:free"} 0',
        'rl_policy_near_limit_total{policy="tier:free"} 1',
    ]
    r.execute_command("RL.POLICY", "DEL", "tier:free")
