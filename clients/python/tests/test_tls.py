"""`rl+rediss://`: the limits storage over TLS, to a Redis with the module listening only on a
TLS port (a self-signed certificate made for the test)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis
from conftest import binary, free_port, module_path
from limits import RateLimitItemPerMinute
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

import redis_rl  # noqa: F401  (registers the rl+ schemes)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")


@pytest.fixture(scope="module")
def tls_server():
    tmp = Path(tempfile.mkdtemp(prefix="rl-py-tls-"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", tmp / "key.pem", "-out", tmp / "cert.pem", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        [binary("redis"), "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", tmp / "cert.pem", "--tls-key-file", tmp / "key.pem",
         "--tls-ca-cert-file", tmp / "cert.pem", "--tls-auth-clients", "no", "--save", "",
         "--dir", tmp, "--loadmodule", module_path()],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=str(tmp / "cert.pem"))
    deadline = time.monotonic() + 15
    while True:
        try:
            client.ping()
            break
        except redis.RedisError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)
    yield port, str(tmp / "cert.pem"), client
    proc.kill()
    proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def test_the_storage_decides_over_tls(tls_server):
    port, ca, client = tls_server
    storage = storage_from_string(f"rl+rediss://127.0.0.1:{port}", ssl_ca_certs=ca)
    limiter = MovingWindowRateLimiter(storage)
    item = RateLimitItemPerMinute(2)
    assert [limiter.hit(item, "tls") for _ in range(3)] == [True, True, False]
    # The decision was the module's: its sliding log, under the storage's prefix.
    (key,) = client.keys("LIMITS_RL:*")
    assert client.type(key) == b"zset"
    assert client.execute_command("RL.PEEK", "SLIDINGLOG", key, 2, "1m")[:3] == [0, 2, 0]


def test_plain_redis_is_refused_by_the_tls_port(tls_server):
    port, _, _ = tls_server
    storage = storage_from_string(f"rl+redis://127.0.0.1:{port}", socket_timeout=2)
    with pytest.raises(redis.RedisError):
        MovingWindowRateLimiter(storage).hit(RateLimitItemPerMinute(2), "plain")
