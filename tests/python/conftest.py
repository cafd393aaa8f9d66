"""Fixtures: a real redis-server with the module, on a free port, for the whole session."""

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read(path):
    return Path(path).read_text() if Path(path).exists() else "(no log)"


def wait_until(ready, proc, what, log, timeout=15):
    """Polls `ready()` until true; fails with the log if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{read(log)}")
        try:
            if ready():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.05)
    pytest.fail(f"{what} did not start in {timeout}s:\n{read(log)}")


@contextlib.contextmanager
def start_server(tmp, extra=(), with_module=True, valkey=False):
    """A redis-server (a valkey-server with `valkey=True`) with the module (without it,
    `with_module=False`) in directory `tmp` (and `extra` arguments): yields (url, port);
    killed on exit."""
    module = Path(os.environ.get("RL_MODULE", ROOT / "target/release/librl.so"))
    assert module.exists(), f"{module} not found: run `cargo build --release` (or make test)"
    server = (os.environ.get("RL_VALKEY_SERVER", str(ROOT / ".tools/bin/valkey-server"))
              if valkey else os.environ.get("RL_REDIS_SERVER", "redis-server"))
    log = Path(tmp, "server.log")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp), "--logfile", str(log),
         *(["--loadmodule", str(module)] if with_module else []), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        # Itself, not another test's server that took the port meanwhile, with its data
        # loaded (PING answers LOADING till then).
        def ready():
            c = redis.Redis.from_url(url)
            return c.info("server")["process_id"] == proc.pid and c.ping()

        wait_until(ready, proc, server, log)
        yield url, port
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def redis_url():
    with tempfile.TemporaryDirectory(prefix="rl-pytest-") as tmp, start_server(tmp) as (url, _):
        yield url


@pytest.fixture
def r(redis_url):
    """A client on a flushed database: every test starts with no limiter state."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()
