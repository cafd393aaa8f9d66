"""The README's client snippets: the redis-py one runs here, exactly as the README shows it
(the Rust one runs in tests/clients.rs)."""

import os
import subprocess
import sys

from conftest import ROOT

SNIPPET = ROOT / "examples/clients/redis_py.py"


def test_readme_quotes_the_redis_py_snippet():
    assert SNIPPET.read_text() in (ROOT / "README.md").read_text()


def test_redis_py_snippet(r, redis_url):
    out = subprocess.run([sys.executable, SNIPPET], env=dict(os.environ, REDIS_URL=redis_url),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "5", "4", "0", "100"]
    assert r.get("user:42").startswith("gcra:")
