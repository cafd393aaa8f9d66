#!/usr/bin/env python3
"""Writes the facts of facts/rl.toml (the kinds, the per-call bounds, the duration units, the
settings' defaults, the error texts) into each language that uses them:

  src/facts.rs                             the module (Rust)
  functions/parts/04-facts.lua             the Functions library (then scripts/build-library.sh
                                           joins the parts into functions/rl.lua)
  clients/python/src/redis_rl/_facts.py    the Python package
  clients/node/src/facts.ts                the Node package
  clients/nginx/lib/resty/rl/facts.lua     the NGINX package (a Lua module)
  clients/rust/src/facts.rs                the Rust client crate

Every file written starts with the line saying so; edit facts/rl.toml, not them.

  scripts/generate-facts.py           rewrite the generated files (`make facts`)
  scripts/generate-facts.py --check   exit 1 if a generated file is not what facts/rl.toml makes

Needs only Python 3.11's standard library (tomllib): no language's build has to run first.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "facts/rl.toml"
NOTICE = "generated from facts/rl.toml by scripts/generate-facts.py: do not edit"
DAY_MS = 86_400_000

#: `{name}` in an error text: the argument of that name.
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def load() -> dict:
    facts = tomllib.loads(SOURCE.read_text(encoding="utf-8"))
    check(facts)
    return facts


def check(facts: dict) -> None:
    """What the rows must agree on, so that a row cannot say two different things."""
    for k in facts["kinds"]:
        assert k["label"] == "RL." + k["algo"], k
        assert k["command"] == k["label"].lower(), k
        assert k["fcall"] == k["command"].replace(".", "_"), k
    days = facts["bounds"]["max_duration_ms"] / DAY_MS
    assert days == int(days), "max_duration_ms is whole days"
    assert f"to {int(days)}d" in facts["errors"]["bad_duration"]["text"], "bad_duration's bound"
    units = facts["durations"]["units_ms"]
    assert facts["durations"]["bare"] in units
    for name, e in facts["errors"].items():
        assert e["text"].isascii(), name
        assert set(e.get("integers", [])) <= set(arguments(e["text"])), name


def words(items: list[str]) -> str:
    """`items` as a message lists them: "A, B or C"."""
    return ", ".join(items[:-1]) + " or " + items[-1]


def messages(facts: dict) -> dict[str, str]:
    """The `syntax` error's fixed texts, their `{...}` filled from the other facts."""
    algos = [k["algo"] for k in facts["kinds"]]
    fills = {"algos": words(algos), "peek_algos": words([*algos, "ACQUIRE"]),
             "max_lease_id": str(facts["bounds"]["max_lease_id"]),
             "max_policy_line": str(facts["bounds"]["max_policy_line"]),
             "max_policy_file": str(facts["bounds"]["max_policy_file"])}
    return {name: text.format(**fills) for name, text in facts["messages"].items()}


def arguments(text: str) -> list[str]:
    """The arguments of an error text, in the order they first appear."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


def segments(text: str) -> list[tuple[str, str | None]]:
    """The text as (literal, argument or None) pairs, left to right."""
    out, at = [], 0
    for m in PLACEHOLDER.finditer(text):
        out.append((text[at:m.start()], m.group(1)))
        at = m.end()
    out.append((text[at:], None))
    return out


def units_ms(facts: dict) -> list[tuple[str, int]]:
    """The duration units, `""` (the bare unit) first."""
    d = facts["durations"]
    return [("", d["units_ms"][d["bare"]]), *d["units_ms"].items()]


def upper_snake(name: str) -> str:
    return name.replace("-", "_").upper()


def module(variant: str) -> str:
    """The Rust module of a kind's variant: `TokenBucket` -> `token_bucket`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", variant).lower()


# --- Rust -----------------------------------------------------------------------------------


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rust(facts: dict) -> str:
    kinds, b, settings = facts["kinds"], facts["bounds"], facts["settings"]
    out = [
        f"// {NOTICE}",
        "//! The facts the module shares with the Functions library and the client packages",
        "//! (facts/rl.toml): the kinds, the per-call bounds, the duration units, the settings'",
        "//! defaults and ranges, and the error texts. Each language has every fact; the module",
        "//! uses most of them (`fcall` names the library's functions).",
        "#![allow(dead_code)]",
        "",
        "use std::ffi::CStr;",
        "",
        "/// The decision commands, one per algorithm.",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub enum Kind {",
        *(f"    {k['variant']}," for k in kinds),
        "}",
        "",
        "impl Kind {",
        f"    pub const ALL: [Kind; {len(kinds)}] = [",
        *(f"        Kind::{k['variant']}," for k in kinds),
        "    ];",
        "}",
        "",
        "/// One algorithm's names and positional parameters.",
        "pub struct KindFacts {",
        "    /// The word naming it in an `RL.ALL` clause and in `RL.PEEK`.",
        "    pub algo: &'static str,",
        "    /// Its name as registered (and as Redis reports it).",
        "    pub command: &'static CStr,",
        "    /// Its name as users write it (in error messages).",
        "    pub label: &'static str,",
        "    /// The prefix of the state it stores.",
        "    pub tag: &'static str,",
        "    /// Its positional parameters after the key.",
        "    pub params: &'static [&'static str],",
        "    /// The Functions library's function.",
        "    pub fcall: &'static str,",
        "}",
        "",
        "/// Each kind's facts, at `kind as usize`.",
        f"pub const KINDS: [KindFacts; {len(kinds)}] = [",
    ]
    for k in kinds:
        params = ", ".join(rust_str(p) for p in k["params"])
        out += [
            "    KindFacts {",
            f"        algo: {rust_str(k['algo'])},",
            f"        command: c{rust_str(k['command'])},",
            f"        label: {rust_str(k['label'])},",
            f"        tag: {rust_str(k['tag'])},",
            f"        params: &[{params}],",
            f"        fcall: {rust_str(k['fcall'])},",
            "    },",
        ]
    entries = ", ".join(f"{k['variant']}({module(k['variant'])})" for k in kinds)
    out += [
        "];",
        "",
        "/// Calls `$callback!` with every kind as `Variant(module)`, in `Kind::ALL` order: the",
        "/// one list the module's per-kind code is expanded from (the `grammar::Limiter` enum, its",
        "/// dispatch in `decision::limiter`, the commands). `module` names the kind's algorithm",
        "/// (`crate::algorithm::<module>::<Variant>`) and its file in `crate::kinds`.",
        "macro_rules! with_kinds {",
        "    ($callback:ident) => {",
        f"        $callback! {{ {entries} }}",
        "    };",
        "}",
        "pub(crate) use with_kinds;",
        "",
        f"pub const MAX_COUNT: u64 = {b['max_count']:_};",
        f"pub const MAX_COST: u64 = {b['max_cost']:_};",
        f"pub const MAX_DEBT: u64 = {b['max_debt']:_};",
        f"pub const MAX_DURATION_MS: u64 = {b['max_duration_ms'] // DAY_MS} * {DAY_MS:_};",
        f"pub const MAX_LAYERS: u64 = {b['max_layers']};",
        f"pub const MAX_LEASE_ID: usize = {b['max_lease_id']};",
        f"pub const MAX_POLICY_NAME: usize = {b['max_policy_name']};",
        f"pub const MAX_POLICY_LINE: usize = {b['max_policy_line']:_};",
        f"pub const MAX_POLICY_FILE: u64 = {b['max_policy_file']:_};",
        "",
        "/// A key's penalty: its tag, the separator after a string state, its sliding-log score.",
        f"pub const PENALTY_TAG: &str = {rust_str(facts['penalty']['tag'])};",
        f"pub const PENALTY_SEPARATOR: &str = {rust_str(facts['penalty']['separator'])};",
        f"pub const PENALTY_LOG_SCORE: f64 = {facts['penalty']['log_score']:.1f};",
        "",
        "/// Each duration unit (case-insensitive) in milliseconds; `\"\"` is a bare integer's.",
        f"pub const DURATION_UNITS_MS: [(&str, u64); {len(units_ms(facts))}] = [",
        *(f"    ({rust_str(u)}, {ms:_})," for u, ms in units_ms(facts)),
        "];",
        "",
        "/// The operator settings: defaults and ranges.",
        "pub mod settings {",
        "    /// An integer setting: its name, default and valid range.",
        "    pub struct Integer {",
        "        pub name: &'static str,",
        "        pub default: i64,",
        "        pub range: (i64, i64),",
        "    }",
    ]
    integers = [n for n, s in settings.items() if not isinstance(s["default"], bool)]
    for name, s in settings.items():
        if isinstance(s["default"], bool):
            out += ["", f"    pub const {upper_snake(name)}: bool = {str(s['default']).lower()};"]
        else:
            out += [
                "",
                f"    pub const {upper_snake(name)}: Integer = Integer {{",
                f"        name: {rust_str(name)},",
                f"        default: {s['default']:_},",
                f"        range: ({s['min']:_}, {s['max']:_}),",
                "    };",
            ]
    switches = [n for n in settings if n not in integers]
    out += [
        "",
        f"    pub const INTEGERS: [Integer; {len(integers)}] = [",
        *(f"        {upper_snake(n)}," for n in integers),
        "    ];",
        "    /// The yes/no settings.",
        f"    pub const SWITCHES: [&str; {len(switches)}] = [{', '.join(map(rust_str, switches))}];",
        "    /// Every setting's name, for messages.",
        f"    pub const NAMES: &str = {rust_str(', '.join(settings))};",
        "}",
        "",
        "/// The error replies' texts, each written by a function of its arguments (in the order",
        "/// they first appear) and the formatter: `#[error(fmt = ...)]` in `error.rs`.",
        "pub mod errors {",
        "    use std::fmt::{Display, Formatter, Result};",
    ]
    for name, e in facts["errors"].items():
        text, args = e["text"], arguments(e["text"])
        params = "".join(f"{a}: impl Display, " for a in args)
        out.append("")
        out.append(f"    pub fn {name}({params}f: &mut Formatter<'_>) -> Result {{")
        if args:
            literal = "".join(lit.replace("{", "{{").replace("}", "}}") + (f"{{{a}}}" if a else "")
                              for lit, a in segments(text))
            out.append(f"        write!(f, {rust_str(literal)})")
        else:
            out.append(f"        f.write_str({rust_str(text)})")
        out.append("    }")
    out += [
        "}",
        "",
        "/// The `syntax` error's fixed texts (`RlError::Syntax`).",
        "pub mod messages {",
        *(f"    pub const {upper_snake(n)}: &str = {rust_str(m)};" for n, m in messages(facts).items()),
        "}",
        "",
    ]
    return "\n".join(out)


# --- Lua ------------------------------------------------------------------------------------


def lua_str(s: str) -> str:
    s = s.replace("\\", "\\\\")
    if "'" not in s:
        return f"'{s}'"
    assert '"' not in s, s
    return f'"{s}"'


def lua(facts: dict) -> str:
    # Each line here is a local of the library's `build`, and Lua refuses a function with over
    # 200 (FUNCTION LOAD fails): only the bounds the library reads (it holds no policies).
    b = facts["bounds"]
    out = [
        f"  -- {NOTICE}",
        "  --------------------------------------------------------------------------------",
        "  -- The facts the library shares with the module and the client packages: the",
        "  -- kinds, the per-call bounds, the duration units, the settings' defaults and the",
        "  -- error texts (src/error.rs's, byte for byte).",
        "  --------------------------------------------------------------------------------",
        "",
        f"  local MAX_COUNT = {b['max_count']}",
        f"  local MAX_COST = {b['max_cost']}",
        f"  local MAX_DEBT = {b['max_debt']}",
        f"  local MAX_DURATION_MS = {b['max_duration_ms'] // DAY_MS} * {DAY_MS}",
        f"  local MAX_LAYERS = {b['max_layers']}",
        f"  local MAX_LEASE_ID = {b['max_lease_id']}",
        "  -- A key's penalty: its tag, the separator after a string state, its sliding-log score.",
        f"  local PENALTY = {{ tag = {lua_str(facts['penalty']['tag'])}, "
        f"separator = {lua_str(facts['penalty']['separator'])}, "
        f"log_score = {facts['penalty']['log_score']} }}",
        "  -- rl.sliding-log-max-limit's default (the library has no settings).",
        f"  local SLIDING_LOG_MAX = {facts['settings']['sliding-log-max-limit']['default']}",
        "  -- The named policies' bounds (rl.max-policies: its default); 09-policies.lua adds",
        "  -- the policies' functions to this table.",
        f"  local POLICY = {{ max_name = {b['max_policy_name']}, "
        f"max_count = {facts['settings']['max-policies']['default']} }}",
        "",
        "  -- Each duration unit in milliseconds, by its upper-case suffix ('' is a bare integer's).",
        "  local UNIT_MS = { "
        + ", ".join(f"[{lua_str(u.upper())}] = {ms}" for u, ms in units_ms(facts)) + " }",
        "",
        "  -- The algorithms, by their RL.ALL word: their command, label, stored tag, positional",
        "  -- parameters and function.",
        "  local KINDS = {",
    ]
    for k in facts["kinds"]:
        params = ", ".join(lua_str(p) for p in k["params"])
        out.append(
            f"    {k['algo']} = {{ command = {lua_str(k['command'])}, label = {lua_str(k['label'])}, "
            f"tag = {lua_str(k['tag'])}, params = {{ {params} }}, fcall = {lua_str(k['fcall'])} }},")
    out += [
        "  }",
        "",
        "  -- The error replies: a text, or a function of the text's arguments (in the order",
        "  -- they first appear) returning it.",
        "  local ERR = {",
    ]
    for name, e in facts["errors"].items():
        text, args, integers = e["text"], arguments(e["text"]), e.get("integers", [])
        if not args:
            out.append(f"    {name} = {lua_str(text)},")
            continue
        pattern = "".join(lit.replace("%", "%%") + ("" if a is None else
                                                   "%.0f" if a in integers else "%s")
                          for lit, a in segments(text))
        fills = ", ".join(a for _, a in segments(text) if a)
        out.append(f"    {name} = function({', '.join(args)}) return fmt({lua_str(pattern)}, "
                   f"{fills}) end,")
    out += [
        "  }",
        "",
        "  -- The syntax error's fixed replies, by name.",
        "  local MSG = {",
        *(f"    {n} = {lua_str('ERR ' + m)}," for n, m in messages(facts).items()),
        "  }",
        "",
    ]
    return "\n".join(out)


def nginx_lua(facts: dict) -> str:
    """The NGINX package's facts: a Lua module returning a table (what it checks a layer's
    policy against before anything is sent)."""
    b = facts["bounds"]
    out = [
        f"-- {NOTICE}",
        "-- The facts the NGINX package shares with the module, the library and the other",
        "-- packages: the kinds, the per-call bounds it checks layers against, the duration units.",
        "return {",
        f"  MAX_COUNT = {b['max_count']},",
        f"  MAX_DURATION_MS = {b['max_duration_ms']},",
        f"  MAX_LAYERS = {b['max_layers']},",
        f"  MAX_POLICY_NAME = {b['max_policy_name']},",
        "  -- rl.sliding-log-max-limit's default: the largest SLIDINGLOG limit (the library's",
        "  -- bound; a module loaded with another setting holds its own).",
        f"  SLIDING_LOG_MAX_LIMIT = {facts['settings']['sliding-log-max-limit']['default']},",
        "  -- The server's text (after `ERR `) for a policy's PENALTY d ESCALATE max with max below d.",
        f"  ESCALATE_BELOW_PENALTY = {lua_str(facts['errors']['escalate_below_penalty']['text'].split(' ', 1)[1])},",
        "  -- The error codes (a reply's first word) that mean Redis cannot decide right now: 503,",
        "  -- or fail_open. Every other error is a configuration error: 500.",
        "  UNAVAILABLE = {",
        *(f"    {c} = true," for c in facts["redis_errors"]["unavailable"]),
        "  },",
        "  -- Each duration unit in milliseconds, by its lower-case suffix ('' is a bare integer's).",
        "  UNIT_MS = { " + ", ".join(f"[{lua_str(u.lower())}] = {ms}" for u, ms in units_ms(facts))
        + " },",
        "  -- The algorithms, by their RL.ALL word: their positional parameters after the key,",
        "  -- their command and the Functions library's function.",
        "  KINDS = {",
    ]
    for k in facts["kinds"]:
        params = ", ".join(lua_str(p) for p in k["params"])
        out.append(f"    {k['algo']} = {{ params = {{ {params} }}, command = {lua_str(k['command'])}, "
                   f"fcall = {lua_str(k['fcall'])} }},")
    out += ["  },", "}", ""]
    return "\n".join(out)


# --- Python and TypeScript ------------------------------------------------------------------


def regex(text: str, group: str, again: str) -> str:
    """A regular expression matching the text after its error code: an argument's first
    appearance is `group`, a repeat `again` (a back-reference), `{}` in each its name."""
    body = text.split(" ", 1)[1]
    seen: set[str] = set()
    out = []
    for lit, a in segments(body):
        out.append(re.sub(r"([\\.^$|?*+()\[\]{}/])", r"\\\1", lit))
        if a and a in seen:
            out.append(again.format(a))
        elif a:
            seen.add(a)
            out.append(group.format(a))
    return "".join(out)


def python(facts: dict) -> str:
    b = facts["bounds"]
    out = [
        f"# {NOTICE}",
        "# ruff: noqa: E501",
        '"""The facts this package shares with the module and the Functions library',
        "(facts/rl.toml): the kinds, the per-call bounds, the duration units and the error texts.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "",
        "class Kind(NamedTuple):",
        '    """One algorithm: its `RL.ALL` word, command, label, stored tag, positional',
        '    parameters and the Functions library\'s function."""',
        "",
        "    algo: str",
        "    command: str",
        "    label: str",
        "    tag: str",
        "    params: tuple[str, ...]",
        "    fcall: str",
        "",
        "",
        "#: The algorithms, by their `RL.ALL` word.",
        "KINDS: dict[str, Kind] = {",
    ]
    for k in facts["kinds"]:
        params = "".join(f"{p!r}, " for p in k["params"]).rstrip(" ")
        out.append(f"    {k['algo']!r}: Kind({k['algo']!r}, {k['command']!r}, {k['label']!r}, "
                   f"{k['tag']!r}, ({params}), {k['fcall']!r}),")
    out += [
        "}",
        "",
        f"MAX_COUNT = {b['max_count']:_}",
        f"MAX_COST = {b['max_cost']:_}",
        f"MAX_DEBT = {b['max_debt']:_}",
        f"MAX_DURATION_MS = {b['max_duration_ms'] // DAY_MS} * {DAY_MS:_}",
        f"MAX_LAYERS = {b['max_layers']}",
        f"MAX_LEASE_ID = {b['max_lease_id']}",
        f"MAX_POLICY_NAME = {b['max_policy_name']}",
        f"MAX_POLICY_LINE = {b['max_policy_line']:_}",
        f"MAX_POLICY_FILE = {b['max_policy_file']:_}",
        "",
        "#: A key's penalty (`PENALTY d`, `RL.BAN`): `<tag>:<end>:<len>:<keep>` (milliseconds), after",
        "#: the separator in a string state (`gcra:<tat>|penalty:...`), alone in a key holding only",
        "#: a penalty, or a sliding log's member scored `PENALTY_LOG_SCORE`.",
        f"PENALTY_TAG = {facts['penalty']['tag']!r}",
        f"PENALTY_SEPARATOR = {facts['penalty']['separator']!r}",
        f"PENALTY_LOG_SCORE = {facts['penalty']['log_score']}",
        "",
        "#: Each duration unit (case-insensitive) in milliseconds; `\"\"` is a bare integer's.",
        "DURATION_UNITS_MS: dict[str, int] = {",
        *(f"    {u!r}: {ms:_}," for u, ms in units_ms(facts)),
        "}",
        "",
        "#: The error replies, as `str.format` templates of their arguments.",
        "ERRORS: dict[str, str] = {",
        *(f"    {n!r}: {e['text']!r}," for n, e in facts["errors"].items()),
        "}",
        "",
        "#: Regular expressions matching each error's text after its code (redis-py strips",
        "#: `ERR `), each argument a named group.",
        "ERROR_PATTERNS: dict[str, str] = {",
        *(f"    {n!r}: {regex(e['text'], '(?P<{}>.*?)', '(?P={})')!r}," for n, e in
          facts["errors"].items()),
        "}",
        "",
        "#: The error codes (a reply's first word) that mean Redis cannot decide right now: a",
        "#: middleware answers 503, or lets the request through with fail_open. Every other error",
        "#: is a configuration error: 500.",
        "UNAVAILABLE_CODES: frozenset[str] = frozenset({",
        *(f"    {c!r}," for c in facts["redis_errors"]["unavailable"]),
        "})",
        "",
        "#: The `syntax` error's fixed texts (after `ERR `), by name.",
        "MESSAGES: dict[str, str] = {",
        *(f"    {n!r}: {m!r}," for n, m in messages(facts).items()),
        "}",
        "",
    ]
    return "\n".join(out)


#: A TypeScript pattern's named group and its back-reference.
TS_GROUP, TS_AGAIN = "(?<{}>.*?)", "\\k<{}>"


def ts_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def typescript(facts: dict) -> str:
    b = facts["bounds"]
    kinds = facts["kinds"]
    out = [
        f"// {NOTICE}",
        "/**",
        " * The facts this package shares with the module and the Functions library",
        " * (facts/rl.toml): the kinds, the per-call bounds, the duration units and the error texts.",
        " */",
        "",
        "/** An algorithm's word in an `RL.ALL` clause and in `RL.PEEK`. */",
        "export type Algo = " + " | ".join(ts_str(k["algo"]) for k in kinds) + ";",
        "",
        "/** One algorithm: its command, label, stored tag, positional parameters and the",
        " * Functions library's function. */",
        "export interface KindFacts {",
        "  readonly algo: Algo;",
        "  readonly command: string;",
        "  readonly label: string;",
        "  readonly tag: string;",
        "  readonly params: readonly string[];",
        "  readonly fcall: string;",
        "}",
        "",
        "/** The algorithms, by their `RL.ALL` word. */",
        "export const KINDS: Readonly<Record<Algo, KindFacts>> = {",
    ]
    for k in kinds:
        params = ", ".join(ts_str(p) for p in k["params"])
        out.append(f"  {k['algo']}: {{ algo: {ts_str(k['algo'])}, command: {ts_str(k['command'])}, "
                   f"label: {ts_str(k['label'])}, tag: {ts_str(k['tag'])}, params: [{params}], "
                   f"fcall: {ts_str(k['fcall'])} }},")
    out += [
        "};",
        "",
        f"export const MAX_COUNT = {b['max_count']:_};",
        f"export const MAX_COST = {b['max_cost']:_};",
        f"export const MAX_DEBT = {b['max_debt']:_};",
        f"export const MAX_DURATION_MS = {b['max_duration_ms'] // DAY_MS} * {DAY_MS:_};",
        f"export const MAX_LAYERS = {b['max_layers']};",
        f"export const MAX_LEASE_ID = {b['max_lease_id']};",
        f"export const MAX_POLICY_NAME = {b['max_policy_name']};",
        f"export const MAX_POLICY_LINE = {b['max_policy_line']:_};",
        f"export const MAX_POLICY_FILE = {b['max_policy_file']:_};",
        "",
        "/** A key's penalty (`PENALTY d`, `RL.BAN`): `<tag>:<end>:<len>:<keep>` (milliseconds), after",
        " * the separator in a string state (`gcra:<tat>|penalty:...`), alone in a key holding only",
        " * a penalty, or a sliding log's member scored `PENALTY_LOG_SCORE`. */",
        f"export const PENALTY_TAG = {ts_str(facts['penalty']['tag'])};",
        f"export const PENALTY_SEPARATOR = {ts_str(facts['penalty']['separator'])};",
        f"export const PENALTY_LOG_SCORE = {facts['penalty']['log_score']};",
        "",
        "/** Each duration unit (case-insensitive) in milliseconds; \"\" is a bare integer's. */",
        "export const DURATION_UNITS_MS: Readonly<Record<string, number>> = {",
        *(f"  {ts_str(u)}: {ms:_}," for u, ms in units_ms(facts)),
        "};",
        "",
        "/** The error replies, as templates whose `{name}` is the argument of that name. */",
        "export const ERRORS = {",
        *(f"  {n}: {ts_str(e['text'])}," for n, e in facts["errors"].items()),
        "} as const;",
        "",
        "/** Regular expressions (sources) matching each error's text after its code, each",
        " * argument a named group. */",
        "export const ERROR_PATTERNS: Readonly<Record<keyof typeof ERRORS, string>> = {",
        *(f"  {n}: {ts_str(regex(e['text'], TS_GROUP, TS_AGAIN))}," for n, e in
          facts["errors"].items()),
        "};",
        "",
        "/** The error codes (a reply's first word) that mean Redis cannot decide right now: a",
        " * middleware answers 503, or lets the request through with failOpen. Every other error",
        " * is a configuration error: 500. */",
        "export const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([",
        *(f"  {ts_str(c)}," for c in facts["redis_errors"]["unavailable"]),
        "]);",
        "",
        "/** The `syntax` error's fixed texts (after `ERR `), by name. */",
        "export const MESSAGES = {",
        *(f"  {n}: {ts_str(m)}," for n, m in messages(facts).items()),
        "} as const;",
        "",
    ]
    return "\n".join(out)


# --- Rust client crate (clients/rust) ---------------------------------------------------------


def rust_client(facts: dict) -> str:
    kinds, b = facts["kinds"], facts["bounds"]
    out = [
        f"// {NOTICE}",
        "//! The facts this crate shares with the module, the Functions library and the other",
        "//! client packages (facts/rl.toml): the kinds, the per-call bounds, the duration units and",
        "//! the error texts.",
        "#![allow(dead_code)]",
        "",
        "/// One algorithm: its `RL.ALL` word, its command and the Functions library's function.",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub struct KindFacts {",
        "    /// The word naming it in an `RL.ALL` clause and in `RL.PEEK`.",
        "    pub algo: &'static str,",
        "    /// Its command as users write it.",
        "    pub label: &'static str,",
        "    /// Its positional parameters after the key.",
        "    pub params: &'static [&'static str],",
        "    /// The Functions library's function.",
        "    pub fcall: &'static str,",
        "}",
        "",
        "/// The algorithms, in facts/rl.toml's order.",
        f"pub const KINDS: [KindFacts; {len(kinds)}] = [",
    ]
    for k in kinds:
        params = ", ".join(rust_str(x) for x in k["params"])
        out.append(f"    KindFacts {{ algo: {rust_str(k['algo'])}, label: {rust_str(k['label'])}, "
                   f"params: &[{params}], fcall: {rust_str(k['fcall'])} }},")
    out += [
        "];",
        "",
        "/// The largest count a limit, capacity or rate may be.",
        f"pub const MAX_COUNT: u64 = {b['max_count']:_};",
        "/// The largest cost of one call (`COST n`, `REFUND n`, `DEBIT n`).",
        f"pub const MAX_COST: u64 = {b['max_cost']:_};",
        "/// The largest debt a key may hold (a larger `DEBIT` saturates at it).",
        f"pub const MAX_DEBT: u64 = {b['max_debt']:_};",
        "/// The longest duration, in milliseconds.",
        f"pub const MAX_DURATION_MS: u64 = {b['max_duration_ms'] // DAY_MS} * {DAY_MS:_};",
        "/// The most layers (keys) of one `RL.ALL`.",
        f"pub const MAX_LAYERS: u64 = {b['max_layers']};",
        "/// The longest lease id, in bytes.",
        f"pub const MAX_LEASE_ID: usize = {b['max_lease_id']};",
        "/// The longest server-side policy name.",
        f"pub const MAX_POLICY_NAME: usize = {b['max_policy_name']};",
        "",
        "/// Each duration unit (case-insensitive) in milliseconds; `\"\"` is a bare integer's.",
        f"pub const DURATION_UNITS_MS: [(&str, u64); {len(units_ms(facts))}] = [",
        *(f"    ({rust_str(u)}, {ms:_})," for u, ms in units_ms(facts)),
        "];",
        "",
        "/// The error replies, by name, as templates whose `{name}` is the argument of that name.",
        f"pub const ERRORS: [(&str, &str); {len(facts['errors'])}] = [",
        *(f"    ({rust_str(n)}, {rust_str(e['text'])})," for n, e in facts["errors"].items()),
        "];",
        "",
        "/// The error codes (a reply's first word) that mean Redis cannot decide right now: a",
        "/// middleware answers 503, or lets the request through with `fail_open`. Every other",
        "/// error is a configuration error: 500.",
        f"pub const UNAVAILABLE_CODES: [&str; {len(facts['redis_errors']['unavailable'])}] = [",
        *(f"    {rust_str(c)}," for c in facts["redis_errors"]["unavailable"]),
        "];",
        "",
        "/// The `syntax` error's fixed texts (after `ERR `), by name.",
        f"pub const MESSAGES: [(&str, &str); {len(messages(facts))}] = [",
        *(f"    ({rust_str(n)}, {rust_str(m)})," for n, m in messages(facts).items()),
        "];",
        "",
    ]
    return "\n".join(out)


OUTPUTS = {
    "src/facts.rs": rust,
    "functions/parts/04-facts.lua": lua,
    "clients/python/src/redis_rl/_facts.py": python,
    "clients/node/src/facts.ts": typescript,
    "clients/nginx/lib/resty/rl/facts.lua": nginx_lua,
    "clients/rust/src/facts.rs": rust_client,
}


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: scripts/generate-facts.py [--check]", file=sys.stderr)
        return 2
    facts = load()
    stale = []
    for path, write in OUTPUTS.items():
        text, target = write(facts), ROOT / path
        if argv:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            target.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path} is stale: run scripts/generate-facts.py (make facts)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
