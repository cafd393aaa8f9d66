"""Every example in README.md, run in README order against one fresh server with the module,
prints what the README shows (see readme_blocks.py for the markers)."""

import contextlib
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
import redis

from conftest import ROOT, free_port, start_server, wait_until
from readme_blocks import KINDS, accepts, blocks, strip_comment, transcript, unmarked_fences


def test_every_fenced_block_says_what_kind_of_example_it_is():
    assert unmarked_fences() == [], "README fences without an <!-- example: ... --> marker"
    for b in blocks():
        assert b.kind in KINDS, f"README line {b.line}: unknown kind {b.kind!r}"
        if b.kind in ("file", "quoted", "not-run"):
            assert b.argument, f"README line {b.line}: {b.kind} needs an argument"


def test_file_blocks_are_the_files_verbatim():
    for b in blocks():
        if b.kind == "file":
            assert (ROOT / b.argument).read_text() == b.body, f"README line {b.line}"
        if b.kind == "quoted":
            assert (ROOT / b.argument).exists(), f"README line {b.line}"


@pytest.fixture
def fresh(tmp_path):
    with start_server(tmp_path) as (url, port):
        yield url, port


class Gateway:
    """The gateway example against the README's server, started at its first curl block."""

    def __init__(self, url, tmp_path):
        self.url, self.tmp_path, self.proc, self.port = url, tmp_path, None, None

    def base(self):
        if self.proc is None:
            import requests
            self.port = free_port()
            log = self.tmp_path / "gateway.log"
            env = dict(os.environ, REDIS_URL=self.url, PORT=str(self.port))
            with open(log, "w") as out:
                self.proc = subprocess.Popen([sys.executable, ROOT / "examples/gateway/app.py"],
                                             env=env, stdout=out, stderr=subprocess.STDOUT)
            wait_until(lambda: requests.get(f"http://127.0.0.1:{self.port}/hello",
                                            timeout=1).status_code == 401,
                       self.proc, "the gateway", log)
        return f"localhost:{self.port}"

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def compare(block, command, expected, actual):
    where = f"README line {block.line}, `{command}`"
    assert len(actual) == len(expected), f"{where}:\nREADME:\n" + "\n".join(
        e for e, _ in expected) + "\nserver:\n" + "\n".join(actual)
    for (want, comment), got in zip(expected, actual):
        assert accepts(want, comment, got), f"{where}: README shows {want!r}, got {got!r}"


def run_cli(block, port):
    for command, expected in transcript(block.body, ("127.0.0.1:6379> ", "$ redis-cli ")):
        out = subprocess.run(["redis-cli", "--no-raw", "-p", str(port), *shlex.split(command)],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        compare(block, command, expected, out.stdout.rstrip("\n").split("\n"))


def run_python(block, url):
    r = redis.Redis.from_url(url, decode_responses=True)
    calls = []
    scope = {"r": r, "uuid": uuid, "api_key": "acme", "request": object(),
             "handle": lambda request: calls.append("handled") or "response",
             "too_many_requests": lambda retry_after: ("429", retry_after)}
    exec(f"def example():\n{textwrap.indent(block.body, '    ')}\n    return locals()\n", scope)
    names = scope["example"]()
    assert r.dbsize() > 0, f"README line {block.line}: the fragment wrote nothing"
    return names, calls


# curl's answer varies in these: the date and server, and seconds to the minute's end.
CURL_DROPPED = re.compile(r"^(Date|Server): ")
CURL_SECONDS = re.compile(r"^(X-RateLimit-Reset: |Retry-After: |RateLimit: .*;t=)(\d+)$")


def run_curl(block, gateway):
    # The block's /export calls share one minute's window: start well inside one.
    if time.time() % 60 > 50:
        time.sleep(60.5 - time.time() % 60)
    for command, expected in transcript(block.body, ("$ ",)):
        command = command.replace("localhost:8000", gateway.base())
        out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        lines = [ln.rstrip() for ln in out.stdout.split("\n")]
        actual = [ln for ln in lines if not CURL_DROPPED.match(ln)]
        if actual and actual[-1] == "":
            actual.pop()
        fixed = []
        for (want, comment), got in zip(expected, actual):
            w, g = CURL_SECONDS.match(want), CURL_SECONDS.match(got)
            if w and g and w[1] == g[1] and 1 <= int(g[2]) <= 60:
                got = want  # seconds until the minute ends: any in 1..60
            fixed.append(got)
        compare(block, command, expected, fixed + actual[len(expected):])


def test_readme_examples_run_in_order(fresh, tmp_path):
    url, port = fresh
    gateway = Gateway(url, tmp_path)
    others = contextlib.ExitStack()  # servers started with a cli block's arguments
    ports = {}
    ran = 0
    try:
        for b in blocks():
            if b.kind == "cli" and b.argument:
                if b.argument not in ports:
                    tmp = tmp_path / f"server-{len(ports)}"
                    tmp.mkdir()
                    ports[b.argument] = others.enter_context(
                        start_server(tmp, shlex.split(b.argument)))[1]
                run_cli(b, ports[b.argument])
            elif b.kind == "cli":
                run_cli(b, port)
            elif b.kind == "python":
                names, handled = run_python(b, url)
                # The headers fragment builds its headers; the lease one handles its request.
                assert "headers" in names or handled == ["handled"], f"README line {b.line}"
            elif b.kind == "curl":
                run_curl(b, gateway)
            else:
                continue
            ran += 1
    finally:
        gateway.stop()
        others.close()
    assert ran >= 10


def test_strip_comment_and_accepts():
    assert strip_comment("1) (integer) 1        # allowed") == ("1) (integer) 1", "allowed")
    assert strip_comment("# rl_stats") == ("# rl_stats", "")
    assert accepts("5) (integer) 100", "reset_after_ms", "5) (integer) 99")
    assert not accepts("5) (integer) 100", "reset_after_ms", "5) (integer) 101")
    assert not accepts("3) (integer) 4", "remaining", "3) (integer) 3")
    assert accepts("5) (integer) 7", "varies from 0 to 86,400,000", "5) (integer) 86400000")
