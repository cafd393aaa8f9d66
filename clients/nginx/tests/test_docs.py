"""docs/nginx.md's curl transcripts (`<!-- example: curl nginx -->`) run against the example
nginx.conf, served as in test_example.py on Redis with the module, and print what the page
shows: the `Date` and `Server` headers left out, and a count of seconds until a window ends
(`X-RateLimit-Reset`, `Retry-After`, the IETF `t`) accepted anywhere from 1 to 60."""

from __future__ import annotations

import re
import subprocess

from conftest import ROOT, example_conf

DOC = ROOT / "docs/nginx.md"
BLOCK = re.compile(r"^<!-- example: curl nginx -->\n```\n(.*?)^```$", re.M | re.S)
DROPPED = re.compile(r"^(Date|Server): ")
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
    if w and g:
        return w[1] == g[1] and 1 <= int(g[2]) <= 60
    return want == got


def test_the_page_has_its_transcripts():
    assert len(BLOCK.findall(DOC.read_text())) >= 1


def test_the_curl_transcripts_print_what_the_page_shows(servers, nginx_for, upstream):
    server = servers("redis", True)
    server.client().flushall()
    n = nginx_for(lambda port: example_conf(
        f'local redis = {{ host = "127.0.0.1", port = {server.port} }}', upstream.port, port))
    for body in BLOCK.findall(DOC.read_text()):
        for command, want in transcript(body):
            out = subprocess.run(["bash", "-c", command.replace("localhost:8000", f"127.0.0.1:{n.port}")],
                                 capture_output=True, text=True, timeout=30)
            assert out.returncode == 0, (command, out.stderr)
            got = [line.rstrip() for line in out.stdout.replace("\r", "").split("\n")
                   if not DROPPED.match(line)]
            while got and got[-1] == "":
                got.pop()
            assert len(got) == len(want) and all(map(same, want, got)), (
                f"docs/nginx.md, `{command}`:\nshows:\n" + "\n".join(want) + "\ngot:\n" + "\n".join(got))
