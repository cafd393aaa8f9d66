"""The documentation's fenced blocks: README.md, CONTRIBUTING.md, every docs/*.md and the
packages' READMEs (whose examples their own tests run: clients/python/tests,
clients/node/test, clients/nginx/tests, clients/rust/tests). Each block is preceded by a marker that says what kind of example it is:

    <!-- example: KIND [ARGUMENT] -->

Kinds and how tests/python/test_docs.py treats them:
  cli [ARGS]     a redis-cli transcript (`127.0.0.1:6379> CMD` or `$ redis-cli CMD`, then the
                 output): run in the file's order against a fresh server of the file's own,
                 output compared; with ARGS (e.g. `--enable-module-command yes`), against a
                 second fresh server started with them
  python         a redis-py fragment: run in the file's order against the same server
  curl           a curl transcript against the gateway example: run, output compared;
                 `curl nginx`, against the NGINX example (docs/nginx.md), and `curl nginx
                 login`, against its login example: the NGINX package's tests run them
                 (clients/nginx/tests/test_docs.py)
  file PATH      the block is PATH's whole text; PATH runs in its own test
  quoted PATH    the block is quoted from PATH, which checks the quote and runs it
  not-run WHY    shown but not run here, for the reason given (e.g. no Go toolchain)
  install [WHAT] install steps: tests/python/test_install.py runs each exactly as written in
                 a fresh copy of the checkout (`library`: against servers on the ports it
                 names); `release` (the module's archives in README.md, the client
                 packages' files in docs/python.md and docs/node.md): scripts/check-dist.sh
  shell          commands to type (make targets, servers); `make test` itself is CI's command
  text           not an example: a grammar synopsis, a file layout, a configuration excerpt
"""

import re
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT

README = ROOT / "README.md"
# Every file whose examples run and whose links are checked, README first.
DOCS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "clients/python/README.md", ROOT / "clients/node/README.md",
        ROOT / "clients/nginx/README.md", ROOT / "clients/rust/README.md"]
MARKER = re.compile(r"^<!-- example: (\S+)(?: ([^\n]*?))? -->\n```(\w*)\n(.*?)^```$", re.M | re.S)
FENCE = re.compile(r"^```\w*\n.*?^```$", re.M | re.S)
KINDS = {"cli", "python", "curl", "file", "quoted", "not-run", "install", "shell", "text"}


def name(path):
    """A documentation file's path from the repository root (`docs/commands.md`)."""
    return Path(path).relative_to(ROOT).as_posix()


@dataclass
class Block:
    kind: str
    argument: str
    lang: str
    body: str
    line: int  # the line of the opening fence
    file: str = "README.md"

    @property
    def where(self):
        return f"{self.file} line {self.line}"


def blocks(path=README, text=None):
    text = Path(path).read_text() if text is None else text
    return [Block(m[1], m[2] or "", m[3], m[4], text.count("\n", 0, m.start(3)) + 1, name(path))
            for m in MARKER.finditer(text)]


def unmarked_fences(path=README, text=None):
    """Opening lines of fenced blocks that carry no marker."""
    text = Path(path).read_text() if text is None else text
    marked = {m.start(3) - 3 for m in MARKER.finditer(text)}
    return [text.count("\n", 0, m.start()) + 1 for m in FENCE.finditer(text)
            if m.start() not in marked]


def strip_comment(line):
    """(the line without a trailing `  # comment`, the comment). A `#` that starts a line
    (`# rl_stats`) is output, not a comment."""
    m = re.match(r"^(.*?\S)\s+# (.*)$", line)
    return (m[1], m[2]) if m else (line.rstrip(), "")


def transcript(body, prompts, where="the transcript"):
    """[(command, [(expected line, comment)])] from a transcript whose command lines start
    with one of `prompts`."""
    steps = []
    for raw in body.splitlines():
        prompt = next((p for p in prompts if raw.startswith(p)), None)
        if prompt is not None:
            steps.append((strip_comment(raw[len(prompt):])[0], []))
        else:
            assert steps, f"{where}: output before any command: {raw!r}"
            steps[-1][1].append(strip_comment(raw))
    return steps


INTEGER = re.compile(r"^(\s*(?:\d+\) )*)\(integer\) (-?\d+)$")


def accepts(expected, comment, actual):
    """Whether an output line matches the documented one. Exact, except for a time (a comment
    naming `retry_after`/`reset_after`, or `varies from A to B`), or a comment starting
    `varies:` (any value of the same shape). For a time the docs show the
    value right after the previous call; a slower machine may see up to 2 s less."""
    if expected == actual:
        return True
    if comment.startswith("varies:"):  # any value of the same shape (digits for digits)
        return re.sub(r"\d", "0", expected) == re.sub(r"\d", "0", actual)
    e, a = INTEGER.match(expected), INTEGER.match(actual)
    if not (e and a and e[1] == a[1]):
        return False
    want, got = int(e[2]), int(a[2])
    span = re.search(r"varies from (-?[\d,]+) to (-?[\d,]+)", comment)
    if span:
        lo, hi = (int(s.replace(",", "")) for s in span.groups())
        return lo <= got <= hi
    if re.search(r"retry_after|reset_after", comment):
        return max(0, want - 2000) <= got <= want
    return False
