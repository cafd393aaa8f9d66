"""Every internal link in the documentation (README.md, CONTRIBUTING.md, docs/*.md) resolves:
a relative link names a file or folder that exists, and a `#anchor` (in the same file or in
`other.md#anchor`) names a heading of its target file, by GitHub's anchor rules."""

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import ROOT
from doc_blocks import DOCS, name

FENCE = re.compile(r"^```.*?^```$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\n\s*\n).)+?\1", re.S)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
# [text](target) or ![alt](target), with an optional "title"; text holds no brackets once
# code spans are blanked (brackets inside code do not count, as in CommonMark).
INLINE_LINK = re.compile(r"!?\[[^\[\]]*\]\(\s*<?([^\s()<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def blank(match):
    """The match with every character but newlines replaced, so offsets and lines stay."""
    return re.sub(r"[^\n]", " ", match[0])


def prose(text):
    """The text outside fenced blocks and HTML comments (blanked, same lines)."""
    return HTML_COMMENT.sub(blank, FENCE.sub(blank, text))


def heading_text(source):
    """What GitHub renders of a heading's Markdown: links and images keep their text; code
    spans keep their content as it is; elsewhere emphasis markers and HTML tags go."""
    source = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", source)
    parts, at = [], 0
    for m in CODE_SPAN.finditer(source):
        parts.append(plain(source[at:m.start()]))
        code = m[0][len(m[1]):-len(m[1])]
        if code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]  # CommonMark strips one space on each side
        parts.append(code)
        at = m.end()
    parts.append(plain(source[at:]))
    return "".join(parts).strip()


def plain(markdown):
    """Inline Markdown outside code spans, without HTML tags and emphasis markers (`*`, and
    `_` at a word's edge: `rl_stats` keeps its underscore)."""
    return re.sub(r"\*+|\b_+|_+\b", "", re.sub(r"<[^>]+>", "", markdown))


def slug(text):
    """GitHub's anchor for a heading (github-slugger): lowercase; drop every character that is
    not a letter, mark, digit, connector punctuation (`_`), hyphen or space; each space becomes
    a hyphen."""
    kept = "".join(c for c in text.lower()
                   if c in " -" or unicodedata.category(c)[0] in "LMN"
                   or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


def anchors(text):
    """Every heading's anchor, in order; a repeated one gets `-1`, `-2`, ... as on GitHub."""
    seen, out = {}, []
    for m in HEADING.finditer(prose(text)):
        base = result = slug(heading_text(m[2]))
        while result in seen:
            seen[base] += 1
            result = f"{base}-{seen[base]}"
        seen[result] = 0
        out.append(result)
    return out


def links(text):
    """(line, target) of every link in the prose, inline or reference definition."""
    body = CODE_SPAN.sub(blank, prose(text))
    found = [(m.start(1), m[1]) for m in INLINE_LINK.finditer(body)]
    found += [(m.start(1), m[1]) for m in REFERENCE.finditer(body)]
    return sorted((body.count("\n", 0, at) + 1, target) for at, target in found)


def broken_links(path, read=lambda p: p.read_text()):
    """A message for every internal link of `path` that does not resolve."""
    path = Path(path)
    problems = []
    for line, target in links(read(path)):
        if not target or EXTERNAL.match(target):
            continue
        where = f"{name(path) if path.is_relative_to(ROOT) else path} line {line}: ({target})"
        file, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file)).resolve() if file else path
        if not dest.exists():
            problems.append(f"{where}: {file} does not exist")
            continue
        if not anchor:
            continue
        if dest.suffix != ".md":
            if not re.fullmatch(r"L\d+(-L\d+)?", anchor):  # a line of a source file
                problems.append(f"{where}: #{anchor} in a file that is not Markdown")
            continue
        if unquote(anchor) not in anchors(read(dest)):
            problems.append(f"{where}: no heading of {dest.name} has the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=name)
def test_every_internal_link_resolves(doc):
    problems = broken_links(doc)
    assert problems == [], "broken links:\n" + "\n".join(problems)


def test_the_docs_link_to_each_other():
    assert any(t.startswith("docs/commands.md#") for _, t in links((ROOT / "README.md").read_text()))
    assert sum(len(links(d.read_text())) for d in DOCS) >= 30


def test_anchors_follow_githubs_rules():
    text = """# Memory and eviction: choosing a `maxmemory-policy`
## RL.ACQUIRE / RL.RELEASE: in-flight limits
### RL.ALL numkeys key [key ...] ALGO params [COST n] [ALGO params [COST n] ...] [PEEK]
#### Scaling: server µs per call by number of keys
## CL.THROTTLE: a drop-in for [redis-cell](https://github.com/brandur/redis-cell)
## Tests
## Tests
## Tests-1
## rl_stats *and* __more__
```
# not a heading
```
"""
    assert anchors(text) == [
        "memory-and-eviction-choosing-a-maxmemory-policy",
        "rlacquire--rlrelease-in-flight-limits",
        "rlall-numkeys-key-key--algo-params-cost-n-algo-params-cost-n--peek",
        "scaling-server-µs-per-call-by-number-of-keys",
        "clthrottle-a-drop-in-for-redis-cell",
        "tests", "tests-1", "tests-1-1", "rl_stats-and-more",
    ]


def test_a_broken_link_is_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## A section: with `code`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## Here\n\n"
        "[ok](other.md) [ok](other.md#a-section-with-code) [ok](#here) [ok](#page)\n"
        "[ok](https://example.com/missing.md) `[not a link](missing.md)`\n"
        "[missing file](missing.md)\n"
        "[missing anchor](other.md#a-section)\n"
        "[missing here](#there)\n"
        "```\n[in a fence](missing.md)\n```\n"
        "[ref]: gone.md\n")
    assert broken_links(page) == [
        f"{page} line 7: (missing.md): missing.md does not exist",
        f"{page} line 8: (other.md#a-section): no heading of other.md has the anchor #a-section",
        f"{page} line 9: (#there): no heading of page.md has the anchor #there",
        f"{page} line 13: (gone.md): gone.md does not exist",
    ]
