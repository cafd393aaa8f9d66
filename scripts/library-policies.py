#!/usr/bin/env python3
"""Writes the Functions library with named policies in it, from a policy file.

The library cannot read files or run FUNCTION LOAD, so its policies are written into it:
this copies functions/rl.lua (or --library PATH) with its one line

    local POLICY_SOURCE, POLICY_LINES = nil, {}

replaced by the file's name and its policy lines (each after its number in the file), and writes the result to standard output (or
--output PATH). The file is the module's policy-file format (docs/commands.md, "The policy
file"). This checks what the library cannot report at FUNCTION LOAD: the file's size and
each line's length (facts/rl.toml's bounds). The library reads the lines as the module reads
its file, at its first call, all or nothing: a bad line is answered, with its number, by
every call by a policy (FCALL_RO rl_policy 0 LIST shows it at once).

    scripts/library-policies.py /etc/redis/rl-policies.conf > rl-with-policies.lua
    redis-cli -x FUNCTION LOAD REPLACE < rl-with-policies.lua
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "local POLICY_SOURCE, POLICY_LINES = nil, {}\n"


# A line's words are split as the module splits them (Rust's ASCII whitespace).
WORDS = re.compile(r"[ \t\n\f\r]+")


def bounds() -> tuple[int, int, int]:
    """The longest line, the largest file, and rl.max-policies' default (the library's)."""
    facts = tomllib.loads((ROOT / "facts/rl.toml").read_text())
    b = facts["bounds"]
    return b["max_policy_line"], b["max_policy_file"], facts["settings"]["max-policies"]["default"]


def lua_string(text: str) -> str:
    """`text` as a Lua long string whose brackets it does not contain."""
    level = 0
    while f"]{'=' * level}]" in text or text.endswith("]" + "=" * level):
        level += 1
    eq = "=" * level
    # A long string drops a newline right after its opening bracket: none can be there.
    return f"[{eq}[{text}]{eq}]"


def block(source: str, data: bytes) -> str:
    max_line, max_file, max_policies = bounds()
    if len(data) > max_file:
        raise SystemExit(f"{source}: larger than {max_file} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SystemExit(f"{source}: not UTF-8 text ({e})") from None
    kept: list[tuple[int, str]] = []
    for n, line in enumerate(text.split("\n"), 1):
        if len(line.encode()) > max_line:
            raise SystemExit(f"{source} line {n}: a line is longer than {max_line} bytes")
        words = WORDS.split(line.removesuffix("\r").strip(" \t\n\f\r"))
        if words[0] and not words[0].startswith("#") and len(kept) <= max_policies:
            kept.append((n, line))
    # Blank and comment lines are left out, each line kept after its number in the file:
    # the library's errors name the file's lines. Past max_policies + 1 lines nothing can
    # change what the library reads (the next line is either an error or one too many).
    items = ", ".join(f"{n}, {lua_string(line)}" for n, line in kept)
    return f"local POLICY_SOURCE, POLICY_LINES = {lua_string(source)}, {{ {items} }}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("policy_file", type=Path)
    ap.add_argument("--library", type=Path, default=ROOT / "functions/rl.lua")
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()
    library = args.library.read_text()
    if library.count(MARKER) != 1:
        raise SystemExit(f"{args.library}: not the rl library (its policy line is not there once)")
    out = library.replace(MARKER, block(str(args.policy_file), args.policy_file.read_bytes()))
    if args.output:
        args.output.write_text(out)
    else:
        sys.stdout.write(out)


if __name__ == "__main__":
    main()
