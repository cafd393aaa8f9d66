#!/usr/bin/env python3
"""Instructions per call, counted by callgrind: repeatable where wall-clock time is not.

Runs redis-server (with the module) under `valgrind --tool=callgrind`, and for each command
zeroes the counters, sends a fixed number of calls with redis-benchmark (pipelined, random
keys, every call admitted), and dumps the counters. Instructions per call are the whole
server's (event loop, parsing, the command, the reply, propagation) divided by the calls;
the ratios are to `INCR` and to `SET key value PXAT ms`, the floor of an admitted call (a
string written with an absolute expiry, replicated). With --breakdown, also prints where
RL.GCRA's instructions go, by module API function (inclusive counts per call), and
what SET … PXAT's own command pays for the same ends. The column "in the module's code"
counts only the instructions executed in the module's own functions: the part a change to
the module moves, repeatable within a few instructions where the whole count moves by
hundreds with timing (the allocator's purges, rehashing).

With --library, also counts the Functions library (FCALL) against the seed articles'
scripts (EVALSHA, the same parameters as `make bench`) on servers without the module:
redis-server, then valkey-server (--valkey, default .tools/bin/valkey-server, which
`make deps` installs; skipped with a note when absent). With --library-only, prints
only those tables, without the module's rows (no module needed).

Usage: scripts/profile.py [--module PATH] [--calls N] [--keys N] [--breakdown]
                          [--library | --library-only] [--valkey PATH] [--only FUNCTION]
Figures are as measured; nothing here is a test.
"""

import argparse
import atexit
import glob
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from bench import CASES, LUA, VALKEY, function_name, server_label

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PXAT = int(time.time() * 1000) + 86_400_000  # a day ahead: every SET … PXAT writes a live key
# name -> command line for redis-benchmark; __rand_int__ is a random key number.
COMMANDS = [
    ("INCR", ["INCR", "k:__rand_int__"]),
    ("SET … PXAT", ["SET", "k:__rand_int__", "gcra:1796045952663730620", "PXAT", str(PXAT)]),
    ("RL.GCRA", ["RL.GCRA", "k:__rand_int__", "100", "1h", "BURST", "100"]),
    ("RL.TOKENBUCKET", ["RL.TOKENBUCKET", "k:__rand_int__", "100", "100", "1h"]),
    ("RL.LEAKY", ["RL.LEAKY", "k:__rand_int__", "100", "100", "1h"]),
    ("RL.SLIDING", ["RL.SLIDING", "k:__rand_int__", "100", "1h"]),
    ("RL.SLIDINGLOG", ["RL.SLIDINGLOG", "k:__rand_int__", "100", "1h"]),
    ("RL.FIXED", ["RL.FIXED", "k:__rand_int__", "100", "1h"]),
    # The calendar's fixed window: UTC by default, and a zone with DST and an anchor (a
    # period is computed on an absent key, then read from the key: no time zone work).
    ("RL.QUOTA", ["RL.QUOTA", "k:__rand_int__", "100", "DAY"]),
    ("RL.QUOTA TZ Europe/Paris ANCHOR", ["RL.QUOTA", "k:__rand_int__", "100", "MONTH", "TZ",
                                         "Europe/Paris", "ANCHOR", "2001-01-15T00:00"]),
    # The same limiters by name: RL.LIMIT against its command with the parameters spelt out.
    ("RL.LIMIT by RL.GCRA policy", ["RL.LIMIT", "k:__rand_int__", "gcra"]),
    ("RL.LIMIT by RL.SLIDINGLOG policy", ["RL.LIMIT", "k:__rand_int__", "log"]),
    ("CL.THROTTLE", ["CL.THROTTLE", "k:__rand_int__", "99", "100", "3600"]),
    ("GCRA", ["GCRA", "k:__rand_int__", "99", "100", "3600"]),
]
# Each limiter charging 5 units before (COST) and after the fact (DEBIT): both admitted
# and written on random keys, so the two do the same work.
COMMANDS += [(f"{words[0]} {amount} 5", [*words, amount, "5"])
             for _name, words in COMMANDS[2:8] for amount in ("COST", "DEBIT")]
# The policies the RL.LIMIT rows decide by: the RL.GCRA and RL.SLIDINGLOG rows' parameters.
POLICIES = [(["RL.POLICY", "SET", "gcra", "GCRA", "100", "1h", "BURST", "100"], None),
            (["RL.POLICY", "SET", "log", "SLIDINGLOG", "100", "1h"], None)]
# What SET … PXAT's command does for the same ends (inclusive instructions): the
# command (options, the key, the expiry, the events, `+OK`), and rewriting its own
# argument vector into the `SET key value PXAT ms` it propagates.
SET_PARTS = ["setCommand", "setKey", "setExpire", "rewriteClientCommandVector",
             "createStringObjectFromLongLong", "notifyKeyspaceEvent", "addReply"]
# The module API functions worth naming in RL.GCRA's breakdown (inclusive instructions);
# the server names `RedisModule_X` internally `RM_X`.
API = ["RedisModuleCommandDispatcher", "RedisModule_Replicate", "RedisModule_ReplyWithLongLong",
       "RedisModule_ReplyWithArray", "RedisModule_OpenKey", "RedisModule_CloseKey",
       "RedisModule_SetAbsExpire", "RedisModule_StringDMA", "RedisModule_StringTruncate",
       "RedisModule_StringPtrLen", "RedisModule_KeyType", "RedisModule_SignalModifiedKey",
       "RedisModule_NotifyKeyspaceEvent", "RedisModule_GetContextFlags"]


def free_port():
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, *args):
    """redis-cli's reply to one command, stripped."""
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


def control(pid, *args):
    """callgrind_control on the server under valgrind (--zero, --dump=…)."""
    subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, check=True)


def total_ir(dump):
    """The `summary:`/`totals:` line of a callgrind dump: instructions executed."""
    with open(dump) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {dump}")


def own_ir(dump, module):
    """Instructions executed in `module`'s own code (its object file's functions,
    not the server's, the allocator's or libc's): the part of a call the module's
    changes move. The server's share of the same calls is the same call for call,
    but the whole count also carries work that depends on timing (the allocator's
    purges, rehashing), hundreds of instructions apart between runs; this part
    repeats within a few."""
    name = os.path.basename(module)
    objects, current, total, after_call = {}, None, 0, False
    with open(dump) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
                if m[2]:
                    objects[m[1]] = m[2]
                if line.startswith("ob="):
                    current = objects[m[1]]
            elif line.startswith("calls="):
                after_call = True  # the next cost line is the call's, not this function's
            elif line[:1] in "0123456789+-*":
                if not after_call and current and os.path.basename(current) == name:
                    total += int(line.split()[-1])
                after_call = False
    return total


def inclusive(dump, names):
    """Inclusive instruction counts of the named functions (callgrind_annotate)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) ", line)
        fn = m and re.search(r"[:\s](\w+)(?: \[|$)", line)
        if fn and fn[1] in names and fn[1] not in found:
            found[fn[1]] = int(m[1].replace(",", ""))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", default=os.path.join(ROOT, "target/release/librl.so"))
    ap.add_argument("--calls", type=int, default=50_000,
                    help="calls counted per module row (default 50,000); the library rows "
                         "count calls // 25, at least 1,000")
    ap.add_argument("--keys", type=int, default=8_000,
                    help="random keys the calls are spread over (default 8,000)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also where RL.GCRA's instructions go, and SET … PXAT's")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--library", action="store_true",
                       help="also count the Functions library (FCALL) against the seed "
                            "scripts (EVALSHA) on servers without the module")
    which.add_argument("--library-only", action="store_true",
                       help="only the library against the seed scripts (no module rows)")
    ap.add_argument("--valkey", default=VALKEY,
                    help="valkey-server for the library tables (skipped when absent)")
    ap.add_argument("--only", metavar="FUNCTION", action="append",
                    help="library tables: only this function (rl_gcra, …; repeatable)")
    args = ap.parse_args()
    if args.library_only and args.breakdown:
        ap.error("--breakdown needs the module's rows; drop --library-only")

    if not args.library_only:
        module_table(args.module, args.calls, args.keys, args.breakdown)
    if args.library or args.library_only:
        cases = [c for c in CASES if c[3] is not None  # module-only rows have no library function
                 and (not args.only or function_name(c[0]) in args.only)]
        if not cases:
            ap.error(f"--only names no library function: {', '.join(args.only)}")
        library(max(args.calls // 25, 1_000), args.keys, servers(args.valkey), cases)


def module_table(module, calls, keys, with_breakdown):
    """INCR, SET … PXAT and every command with the module loaded: instructions per
    call (the whole server's over the calls), × INCR and × SET … PXAT; with
    `with_breakdown`, also where RL.GCRA's instructions go."""
    rows = measure(["--loadmodule", module], POLICIES, COMMANDS, calls, keys,
                   keep=[name for name, _ in COMMANDS])
    incr, floor = rows[0][1], rows[1][1]
    print(f"#### Instructions per call (callgrind; {calls:,} calls each, "
          f"{keys:,} random keys, every call admitted)\n")
    print("| command | instructions/call | in the module's code | × INCR | × `SET … PXAT` |")
    print("|---|---:|---:|---:|---:|")
    for name, ir, dump in rows:
        own = own_ir(dump, module) / calls
        print(f"| {name} | {ir:,.0f} | {own:,.0f} | {ir / incr:.2f} | {ir / floor:.2f} |")
    if with_breakdown:
        breakdown(rows, calls)


def servers(valkey):
    """[(label, binary)] of the servers the library is counted on: redis-server, and
    `valkey` when it exists (else a note says it was skipped)."""
    found = [(server_label("redis-server", "Redis"), "redis-server")]
    if os.path.exists(valkey):
        found.append((server_label(valkey, "Valkey"), valkey))
    else:
        print(f"\n(Valkey skipped: no valkey-server at {valkey}; `make deps` installs it, "
              "--valkey PATH names another.)")
    return found


def measure(server_args, setup, commands, calls, keys, keep=(), binary="redis-server"):
    """Starts `binary` (redis-server or valkey-server) under callgrind with
    `server_args`, runs each `setup` command (a redis-cli argument list, with the
    text to send on stdin or None), then for each (name, words) of `commands` counts
    the instructions of `calls` calls on random keys. Returns [(name,
    instructions/call, dump)]; the dumps of the rows named in `keep` stay readable
    until the caller's next call."""
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="rl-profile-")
    atexit.register(shutil.rmtree, tmp, True)
    out = os.path.join(tmp, "callgrind.out")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p",
         "--dump-instr=no", "--collect-jumps=no",
         binary, "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", tmp, *server_args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                if cli(port, "PING") == "PONG":
                    break
            except subprocess.CalledProcessError:
                pass
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"{binary} did not start under valgrind")
            time.sleep(0.2)
        for words, stdin in setup:
            subprocess.run(["redis-cli", "-p", str(port), *words], input=stdin,
                           capture_output=True, text=True, check=True)
        rows = []
        for name, words in commands:
            cli(port, "FLUSHALL")
            # Warm up (allocator, dict sizes), then count exactly `calls` calls.
            bench(port, words, calls // 5, keys)
            control(server.pid, "--zero")
            bench(port, words, calls, keys)
            before = set(glob.glob(out + ".*"))
            control(server.pid, "--dump=" + name)
            dump = wait_new_dump(out, before)
            ir = total_ir(dump) / calls
            rows.append((name, ir, dump if name in keep else None))
            print(f"{os.path.basename(binary)} {name}: {ir:,.0f} instructions/call",
                  file=sys.stderr)
        return rows
    finally:
        server.terminate()
        server.wait(timeout=120)


def breakdown(rows, calls):
    """Where RL.GCRA's instructions go, and what SET … PXAT's command pays."""
    dump = next(d for n, _, d in rows if n == "RL.GCRA")
    found = inclusive(dump, [fn.replace("RedisModule_", "RM_") for fn in API])
    print("\n#### Where RL.GCRA's instructions go (inclusive, per call)\n")
    print("| function | instructions/call |")
    print("|---|---:|")
    for fn in API:
        ir = found.get(fn.replace("RedisModule_", "RM_"))
        if ir is not None:
            print(f"| `{fn}` | {ir / calls:,.0f} |")
    dump = next(d for n, _, d in rows if n == "SET … PXAT")
    found = inclusive(dump, SET_PARTS)
    print("\n#### What SET … PXAT's command pays for the same (inclusive, per call)\n")
    print("| function | instructions/call |")
    print("|---|---:|")
    for fn in SET_PARTS:
        if fn in found:
            print(f"| `{fn}` | {found[fn] / calls:,.0f} |")


# The library tables' two shapes: (the key redis-benchmark sends, the shape's short
# name, what its tables show; {keys} is the number of random keys).
SHAPES = [("k:__rand_int__", "random keys", "{keys:,} random keys, admitted"),
          ("hot", "hot key", "one hot key, denied")]


def library(calls, keys, on, cases):
    """The Functions library (FCALL) against the seed articles' scripts (EVALSHA)
    with the same parameters, on each (label, binary) of `on` without the module:
    instructions per call and the library ÷ seed-script ratio, the figure a change
    to the library is compared by between builds. Prints, for each shape, one table
    per server, then every ratio side by side."""
    counts = {label: library_counts(binary, calls, keys, cases) for label, binary in on}
    for _key, short, shape in SHAPES:
        for label, _binary in on:
            library_table(counts[label][short], f"{label}, {shape.format(keys=keys)}", calls,
                          cases)
    ratio_table(counts, keys, cases)


def library_counts(binary, calls, keys, cases):
    """Instructions per call of every seed script and library function in both
    shapes, on one server under callgrind (library and scripts loaded, no module):
    {short shape name: {"<command> seed" or "<command> library": instructions/call}}."""
    with open(os.path.join(ROOT, "functions/rl.lua")) as f:
        setup = [(["-x", "FUNCTION", "LOAD", "REPLACE"], f.read())]
    setup += [(["SCRIPT", "LOAD", src], None) for src in LUA.values()]
    shas = {name: sha1(src) for name, src in LUA.items()}
    commands, row_of = [], {}
    for key, short, _shape in SHAPES:
        for name, _stat, params, lua, lua_args in cases:
            for side, words in [("seed", ["EVALSHA", shas[lua], "1", key, *lua_args]),
                                ("library", ["FCALL", function_name(name), "1", key, *params])]:
                row = f"{name} {side}"
                row_of[f"{row}, {short}"] = (short, row)
                commands.append((f"{row}, {short}", words))
    counts = {short: {} for _key, short, _shape in SHAPES}
    for measured, ir, _ in measure([], setup, commands, calls, keys, binary=binary):
        short, row = row_of[measured]
        counts[short][row] = ir
    return counts


def library_table(rows, title, calls, cases):
    """One server and shape: seed script and library instructions per call (the whole
    server's over the calls) and library ÷ seed script, one line per command."""
    print(f"\n#### The library against the seed scripts: {title} (callgrind; {calls:,} "
          "calls each, no module loaded)\n")
    print("| command | seed script instructions/call | library instructions/call "
          "| library ÷ seed script |")
    print("|---|---:|---:|---:|")
    for name, *_ in cases:
        seed, lib = rows[f"{name} seed"], rows[f"{name} library"]
        print(f"| {name} | {seed:,.0f} | {lib:,.0f} | {lib / seed:.2f} |")


def ratio_table(counts, keys, cases):
    """Library ÷ seed script instructions per call, every server and shape side by
    side: `counts` is {label: library_counts()}."""
    columns = [(f"{label}, {short}", rows[short])
               for label, rows in counts.items() for _key, short, _shape in SHAPES]
    print(f"\n#### Library ÷ seed script, instructions per call ({keys:,} random keys, "
          "admitted; one hot key, denied)\n")
    print(f"| function | {' | '.join(heading for heading, _ in columns)} |")
    print(f"|---|{'---:|' * len(columns)}")
    for name, *_ in cases:
        cells = [f"{rows[f'{name} library'] / rows[f'{name} seed']:.2f}" for _, rows in columns]
        print(f"| {function_name(name)} | {' | '.join(cells)} |")


def sha1(text):
    """The SHA1 EVALSHA names a script by."""
    return hashlib.sha1(text.encode()).hexdigest()


def bench(port, words, calls, keys):
    """Sends `calls` calls of `words` with redis-benchmark (10 clients, pipelining 16,
    __rand_int__ drawn from `keys` numbers)."""
    subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(calls), "-r", str(keys),
                    "-c", "10", "-P", "16", "-q", *words],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def wait_new_dump(out, before, timeout=120):
    """The path of the dump callgrind writes after `before` (the dumps already there)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        new = set(glob.glob(out + ".*")) - before
        if new:
            dump = new.pop()
            time.sleep(0.5)  # let callgrind finish writing it
            return dump
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


if __name__ == "__main__":
    main()
