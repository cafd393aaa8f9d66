"""Every example in the documentation (README.md, CONTRIBUTING.md, docs/*.md) prints what the
file shows: each file's examples run in the file's order against a fresh server of its own
with the module (see doc_blocks.py for the markers). Failures name the file and line."""

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
from doc_blocks import (DOCS, KINDS, accepts, blocks, name, strip_comment, transcript,
                        unmarked_fences)

RUN = ("cli", "python", "curl")
every_doc = pytest.mark.parametrize("doc", DOCS, ids=name)


def test_the_documentation_is_every_file_it_should_be():
    names = [name(d) for d in DOCS]
    for expected in ["README.md", "CONTRIBUTING.md", "docs/commands.md", "docs/managed-redis.md",
                     "docs/operations.md", "docs/speed.md", "docs/clients.md", "docs/design.md"]:
        assert expected in names, f"{expected} is missing from the documentation"
    ran = sum(b.kind in RUN for d in DOCS for b in blocks(d))
    # 21 when the README was split into these files: none may be lost.
    assert ran >= 21, f"only {ran} runnable examples in {names}"


@every_doc
def test_every_fenced_block_says_what_kind_of_example_it_is(doc):
    lines = unmarked_fences(doc)
    assert lines == [], f"{name(doc)}: fences without an <!-- example: ... -->, lines {lines}"
    for b in blocks(doc):
        assert b.kind in KINDS, f"{b.where}: unknown kind {b.kind!r}"
        if b.kind in ("file", "quoted", "not-run"):
            assert b.argument, f"{b.where}: {b.kind} needs an argument"


@every_doc
def test_file_blocks_are_the_files_verbatim(doc):
    for b in blocks(doc):
        if b.kind == "file":
            assert (ROOT / b.argument).read_text() == b.body, f"{b.where}: not {b.argument}'s text"
        if b.kind == "quoted":
            assert (ROOT / b.argument).exists(), f"{b.where}: {b.argument} does not exist"


class Gateway:
    """The gateway example against the file's server, started at its first curl block."""

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
    where = f"{block.where}, `{command}`"
    assert len(actual) == len(expected), f"{where}:\n{block.file}:\n" + "\n".join(
        e for e, _ in expected) + "\nserver:\n" + "\n".join(actual)
    for (want, comment), got in zip(expected, actual):
        assert accepts(want, comment, got), f"{where}: {block.file} shows {want!r}, got {got!r}"


def run_cli(block, port):
    prompts = ("127.0.0.1:6379> ", "$ redis-cli ")
    for command, expected in transcript(block.body, prompts, block.where):
        out = subprocess.run(["redis-cli", "--no-raw", "-p", str(port), *shlex.split(command)],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"{block.where}, `{command}`: {out.stderr}"
        compare(block, command, expected, out.stdout.rstrip("\n").split("\n"))


def run_python(block, url):
    r = redis.Redis.from_url(url, decode_responses=True)
    calls = []
    scope = {"r": r, "uuid": uuid, "api_key": "acme", "request": object(),
             "handle": lambda request: calls.append("handled") or "response",
             "too_many_requests": lambda retry_after: ("429", retry_after)}
    source = f"def example():\n{textwrap.indent(block.body, '    ')}\n    return locals()\n"
    exec(compile(source, f"<{block.where}>", "exec"), scope)  # tracebacks name the block
    names = scope["example"]()
    assert r.dbsize() > 0, f"{block.where}: the fragment wrote nothing"
    return names, calls


# curl's answer varies in these: the date and server, and seconds to the minute's end.
CURL_DROPPED = re.compile(r"^(Date|Server): ")
CURL_SECONDS = re.compile(r"^(X-RateLimit-Reset: |Retry-After: |RateLimit: .*;t=)(\d+)$")


def run_curl(block, gateway):
    # The block's /export calls share one minute's window: start well inside one.
    if time.time() % 60 > 50:
        time.sleep(60.5 - time.time() % 60)
    for command, expected in transcript(block.body, ("$ ",), block.where):
        command = command.replace("localhost:8000", gateway.base())
        out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"{block.where}, `{command}`: {out.stderr}"
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


# The files with examples to run (the others are checked for markers and links only).
WITH_EXAMPLES = [d for d in DOCS if any(b.kind in RUN for b in blocks(d))]


@pytest.mark.parametrize("doc", WITH_EXAMPLES, ids=name)
def test_examples_run_in_order(doc, tmp_path):
    runnable = [b for b in blocks(doc) if b.kind in RUN]
    with start_server(tmp_path) as (url, port):
        run_in_order(runnable, url, port, tmp_path)


def run_in_order(runnable, url, port, tmp_path):
    gateway = Gateway(url, tmp_path)
    others = contextlib.ExitStack()  # servers started with a cli block's arguments
    ports = {}
    try:
        for b in runnable:
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
                assert "headers" in names or handled == ["handled"], (
                    f"{b.where}: the fragment neither built headers nor handled the request")
            elif b.kind == "curl" and b.argument.split(" ")[0] != "nginx":  # (the package's tests)
                run_curl(b, gateway)
    finally:
        gateway.stop()
        others.close()


def test_strip_comment_and_accepts():
    assert strip_comment("1) (integer) 1        # allowed") == ("1) (integer) 1", "allowed")
    assert strip_comment("# rl_stats") == ("# rl_stats", "")
    assert accepts("5) (integer) 100", "reset_after_ms", "5) (integer) 99")
    assert not accepts("5) (integer) 100", "reset_after_ms", "5) (integer) 101")
    assert not accepts("3) (integer) 4", "remaining", "3) (integer) 3")
    assert accepts("5) (integer) 7", "varies from 0 to 86,400,000", "5) (integer) 86400000")
