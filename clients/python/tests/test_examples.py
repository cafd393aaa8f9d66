"""The examples (clients/python/examples, quoted whole in the docs) run against every
backend (those of named policies on the module's) and print what their comments say: each
`print(...)  # text` line's text is the output line expected, in order."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PRINTED = re.compile(r"^\s*print\(.*\)  # (.*)$")


def expected_output(path: Path) -> list[str]:
    return [m[1] for line in path.read_text().splitlines() if (m := PRINTED.match(line))]


#: The examples of what only the module has (named policies): run on the module's servers.
MODULE_ONLY = {"policies.py"}
PRINTING = sorted(p for p in EXAMPLES.glob("*.py") if expected_output(p))
SCRIPTS = [p for p in PRINTING if p.name not in MODULE_ONLY]


def test_there_are_examples_to_run():
    assert [p.name for p in PRINTING] == ["denial_cache.py", "errors.py", "insurance.py",
                                          "layers.py", "limits_strategies.py", "login.py",
                                          "policies.py", "quickstart.py", "quotas.py",
                                          "reservations.py"]
    # The framework apps print nothing: tests/test_frameworks.py, test_asgi.py,
    # test_asgi_keys.py and test_asgi_policies.py serve them over HTTP.
    apps = {"flask_app.py", "slowapi_app.py", "fastapi_app.py", "fastapi_cluster.py",
            "fastapi_policies.py"}
    assert apps <= {p.name for p in EXAMPLES.glob("*.py")}


def prints_what_it_shows(script: Path, url: str) -> None:
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, REDIS_URL=url))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == expected_output(script)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_an_example_prints_what_it_shows(script, server):
    prints_what_it_shows(script, server.url)


@pytest.mark.parametrize("name", sorted(MODULE_ONLY))
def test_a_module_example_prints_what_it_shows(name, module_server):
    try:
        prints_what_it_shows(EXAMPLES / name, module_server.url)
    finally:  # its policies: module memory, which the next test's FLUSHALL leaves
        c = redis.Redis(port=module_server.port)
        c.execute_command("RL.POLICY", "DEL", "free")
        c.execute_command("RL.POLICY", "DEL", "beta")
        c.close()
