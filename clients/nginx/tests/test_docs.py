"""docs/nginx.md's curl transcripts (`<!-- example: curl nginx -->`) run against the example
nginx.conf, served as in test_example.py on Redis with the module in front of the upstream the
page starts (its "terminal 2" line, on another port; the metrics' port 9145 is another too),
and those of the login example (`<!-- example: curl nginx login -->`) against
examples/login.conf in front of the same upstream; each prints what the page shows: the `Date`
and `Server` headers left out, a count of seconds until a window ends (`X-RateLimit-Reset`,
`Retry-After`, the IETF `t`, shown as at most 60) accepted anywhere from 1 to 60, and a longer
one (a penalty's end) up to 2 s less than shown."""

from __future__ import annotations

import re
import socket
import subprocess

import pytest
from conftest import ROOT, example_conf, free_port, login_conf, wait_for

DOC = ROOT / "docs/nginx.md"
BLOCK = re.compile(r"^<!-- example: curl nginx -->\n```\n(.*?)^```$", re.M | re.S)
LOGIN_BLOCK = re.compile(r"^<!-- example: curl nginx login -->\n```\n(.*?)^```$", re.M | re.S)
DROPPED = re.compile(r"^(Date|Server): ")
TRY = re.compile(r"^<!-- example: shell -->\n```sh\n(.*?)^```$", re.M | re.S)
SECONDS = re.compile(r"^(X-RateLimit-Reset: |Retry-After: |RateLimit: .*;t=)(\d+)$")


def transcript(body: str) -> list[tuple[str, list[str]]]:
    """(command, the lines it prints) for each `$ ` line of a block."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def same(want: str, got: str) -> bool:
    w, g = SECONDS.match(want), SECONDS.match(got)
    if w and g and int(w[2]) > 60:  # a penalty's end, counted from the call before
        return w[1] == g[1] and int(w[2]) - 2 <= int(g[2]) <= int(w[2])
    if w and g:
        return w[1] == g[1] and 1 <= int(g[2]) <= 60
    return want == got


def test_the_page_has_its_transcripts():
    text = DOC.read_text()
    assert len(BLOCK.findall(text)) >= 1 and len(LOGIN_BLOCK.findall(text)) >= 1


def run_transcripts(blocks: list[str], port: int, metrics_port: int | None = None) -> None:
    for body in blocks:
        for command, want in transcript(body):
            command = command.replace("localhost:8000", f"127.0.0.1:{port}")
            if metrics_port:
                command = command.replace("localhost:9145", f"127.0.0.1:{metrics_port}")
            out = subprocess.run(["bash", "-c", command],
                                 capture_output=True, text=True, timeout=30)
            assert out.returncode == 0, (command, out.stderr)
            got = [line.rstrip() for line in out.stdout.replace("\r", "").split("\n")
                   if not DROPPED.match(line)]
            while got and got[-1] == "":
                got.pop()
            assert len(got) == len(want) and all(map(same, want, got)), (
                f"docs/nginx.md, `{command}`:\nshows:\n" + "\n".join(want) + "\ngot:\n" + "\n".join(got))


@pytest.fixture
def docs_upstream():
    """The upstream the page's "try it from a checkout" starts, as it is written, on a free
    port in place of 8080: that port."""
    lines = [line for block in TRY.findall(DOC.read_text()) for line in block.split("\n")
             if line.endswith("# terminal 2: an upstream")]
    assert len(lines) == 1, "docs/nginx.md no longer starts an upstream in terminal 2"
    command, port = lines[0].split("#")[0].strip(), free_port()
    assert command.count("8080") == 1, command
    proc = subprocess.Popen(["bash", "-c", "exec " + command.replace("8080", str(port))], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() is None,
                 "the page's upstream", proc, lambda: proc.stderr.read().decode())
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_curl_transcripts_print_what_the_page_shows(servers, nginx_for, docs_upstream):
    server = servers("redis", True)
    server.client().flushall()
    metrics_port = free_port()
    n = nginx_for(lambda port: example_conf(
        f'local redis = {{ host = "127.0.0.1", port = {server.port} }}', docs_upstream, port,
        metrics_port=metrics_port))
    run_transcripts(BLOCK.findall(DOC.read_text()), n.port, metrics_port)


def test_the_login_transcripts_print_what_the_page_shows(servers, nginx_for, docs_upstream):
    server = servers("redis", True)
    server.client().flushall()
    n = nginx_for(lambda port: login_conf(
        f'redis = {{ host = "127.0.0.1", port = {server.port} }}', docs_upstream, port))
    run_transcripts(LOGIN_BLOCK.findall(DOC.read_text()), n.port)
