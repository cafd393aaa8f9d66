"""The README's client snippets: the redis-py and node-redis ones run here, exactly as the
README shows them (test_readme.py checks the quotes; the Rust one runs in tests/clients.rs)."""

import os
import shutil
import subprocess
import sys

from conftest import ROOT

SNIPPETS = ROOT / "examples/clients"
NODE = ROOT / ".tools/node"  # node-redis, installed by scripts/install-deps.sh


def gcra_calls(r):
    return r.info("commandstats").get("cmdstat_rl.gcra", {}).get("calls", 0)


def run_snippet(command, redis_url):
    out = subprocess.run(command, env=dict(os.environ, REDIS_URL=redis_url),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_redis_py_snippet(r, redis_url):
    before = gcra_calls(r)
    assert run_snippet([sys.executable, SNIPPETS / "redis_py.py"], redis_url) == [
        "1", "5", "4", "0", "100"]
    assert gcra_calls(r) == before + 1  # (the key itself lapses 100 ms later)


def test_node_redis_snippet_prints_the_reply_and_exits(r, redis_url, tmp_path):
    assert (NODE / "node_modules/redis/package.json").exists(), "run scripts/install-deps.sh"
    # An ES module resolves `redis` from node_modules beside it: run a copy from .tools/node.
    before = gcra_calls(r)
    copy = NODE / f"snippet-{os.getpid()}.mjs"
    shutil.copy(SNIPPETS / "node_redis.mjs", copy)
    try:
        # The 60 s timeout fails the test if the client keeps the process alive.
        assert run_snippet(["node", copy], redis_url) == ["1", "5", "4", "0", "100"]
    finally:
        copy.unlink()
    assert gcra_calls(r) == before + 1


def fcall_calls(r):
    return r.info("commandstats").get("cmdstat_fcall", {}).get("calls", 0)


def run_library_snippet(command, redis_url):
    env = dict(os.environ, REDIS_URL=redis_url, RL_LIBRARY=str(ROOT / "functions/rl.lua"))
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_redis_py_library_snippet(r, redis_url):
    """The Functions library from redis-py: FUNCTION LOAD REPLACE, then FCALL rl_gcra."""
    r.delete("user:43")
    before = fcall_calls(r)
    assert run_library_snippet([sys.executable, SNIPPETS / "redis_py_library.py"], redis_url) == [
        "1", "5", "4", "0", "100"]
    assert fcall_calls(r) == before + 1


def test_node_redis_library_snippet(r, redis_url):
    assert (NODE / "node_modules/redis/package.json").exists(), "run scripts/install-deps.sh"
    r.delete("user:43")
    before = fcall_calls(r)
    copy = NODE / f"snippet-library-{os.getpid()}.mjs"
    shutil.copy(SNIPPETS / "node_redis_library.mjs", copy)
    try:
        assert run_library_snippet(["node", copy], redis_url) == ["1", "5", "4", "0", "100"]
    finally:
        copy.unlink()
    assert fcall_calls(r) == before + 1
