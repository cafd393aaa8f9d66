"""The examples (clients/python/examples, quoted whole in the docs) run against every
backend and print what their comments say: each `print(...)  # text` line's text is the
output line expected, in order."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PRINTED = re.compile(r"^\s*print\(.*\)  # (.*)$")


def expected_output(path: Path) -> list[str]:
    return [m[1] for line in path.read_text().splitlines() if (m := PRINTED.match(line))]


SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if expected_output(p))


def test_there_are_examples_to_run():
    assert [p.name for p in SCRIPTS] == ["errors.py", "layers.py", "limits_strategies.py",
                                         "quickstart.py"]
    # The framework apps print nothing: tests/test_frameworks.py, test_asgi.py and
    # test_asgi_keys.py serve them over HTTP.
    apps = {"flask_app.py", "slowapi_app.py", "fastapi_app.py", "fastapi_cluster.py"}
    assert apps <= {p.name for p in EXAMPLES.glob("*.py")}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_an_example_prints_what_it_shows(script, server):
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, REDIS_URL=server.url))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == expected_output(script)
