"""Every `install` block of the documentation, run exactly as written, as a new user runs it.

The user's machine is a fresh HOME holding `~/rl`, a copy of this checkout's files as a fresh
clone has them (tracked and new files, nothing ignored: no node_modules, dist or .tools), and
`~/my-app`, an empty project of the user's (`npm init -y`). Each distinct block runs once, in
bash with `-e`, from `~/rl`, in its own HOME; then what it installed is imported from where
the user would import it. Only the package caches are shared with this machine (npm's and
pip's), so nothing already installed here can stand in for a step the docs forgot.
`install library` (docs/managed-redis.md) runs against module-less servers on the ports it
names; `install release` (the README's archives, the packages' release files in docs/python.md and
docs/node.md) is run by scripts/check-dist.sh.
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import textwrap

import pytest
import redis
from conftest import ROOT, wait_until
from doc_blocks import DOCS, blocks

INSTALL = {}  # body -> the places that show it
for _doc in DOCS:
    for _b in blocks(_doc):
        if _b.kind == "install" and not _b.argument:
            INSTALL.setdefault(_b.body, []).append(_b.where)

# What each step must leave behind, by the package it installs: a command run in the
# project folder the step installed into, and what it must print.
CHECKS = {
    "npm install": ("my-app", ["node", "--input-type=module", "-e",
                               "const m = await import('redis-rl');"
                               "console.log(typeof m.Limiter, typeof m.rateLimitLayers)"],
                    "function function"),
    "pip install ./clients/python ": ("rl", [".venv/bin/python", "-c",
                                             "import redis_rl; print(redis_rl.Limiter.__name__)"],
                                      "Limiter"),
    'pip install "./clients/python[limits]"': (
        "rl", [".venv/bin/python", "-c",
               "import limits.storage, redis_rl;"
               "print(sorted(s for s in limits.storage.SCHEMES if s.startswith('rl+'))[0])"],
        "rl+redis"),
    "apt-get install -y nginx libnginx-mod-http-lua lua-nginx-redis": (
        "rl", ["bash", "-c", "nginx -v 2>&1 | cut -d/ -f1; ls /usr/lib/nginx/modules/ngx_http_lua_module.so"
               " /usr/share/lua/5.1/nginx/redis.lua >/dev/null && echo lua"], "nginx version: nginx\nlua"),
    "pip install -r examples/gateway/requirements.txt": (
        "rl", [".venv/bin/python", "-c", "import flask, redis; print('ok')"], "ok"),
}


def fresh_clone(dest):
    """The checkout's files as `git clone` of them would give (new files included)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, files):
        src = ROOT / os.fsdecode(f)
        if src.is_file():  # a file deleted but not yet staged is not in the clone
            (dest / os.fsdecode(f)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(f))


def check_for(body):
    found = [c for key, c in CHECKS.items() if key in body]
    assert len(found) == 1, f"an install block with no (or several) checks here:\n{body}"
    return found[0]


def test_the_docs_show_install_steps():
    assert len(INSTALL) >= 4, INSTALL
    for body in INSTALL:
        check_for(body)


@pytest.mark.parametrize("body", sorted(INSTALL), ids=lambda b: INSTALL[b][0])
def test_install_steps_run_as_written(body, tmp_path):
    home = tmp_path / "home"
    (home / "rl").mkdir(parents=True)
    (home / "my-app").mkdir()
    fresh_clone(home / "rl")
    real_home = os.path.expanduser("~")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
           "npm_config_cache": os.path.join(real_home, ".npm"),
           "PIP_CACHE_DIR": os.path.join(real_home, ".cache", "pip"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "npm_config_fund": "false",
           "npm_config_audit": "false", "npm_config_update_notifier": "false"}
    # PATH without this suite's virtualenv: its python and pip are not the user's.
    venv_bin = os.path.dirname(os.path.realpath(sys.executable))
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if os.path.realpath(p) != venv_bin)
    subprocess.run(["npm", "init", "-y"], cwd=home / "my-app", env=env, check=True,
                   capture_output=True, timeout=120)
    where = ", ".join(INSTALL[body])
    run = subprocess.run(["bash", "-e", "-c", body], cwd=home / "rl", env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (
        f"{where}: the install steps failed (exit {run.returncode}):\n{textwrap.indent(body, '  ')}"
        f"\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}")
    folder, command, expected = check_for(body)
    out = subprocess.run(command, cwd=home / folder, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == expected, f"{where}: after the steps, {command} gave " \
        f"{out.stdout!r} {out.stderr[-2000:]!r}"


# The library's install steps (docs/managed-redis.md) talk to the servers the docs name: a
# Redis on 127.0.0.1:6379 and a cluster whose first master is 127.0.0.1:7000 (make cluster's).
LIBRARY = [b for d in DOCS for b in blocks(d) if b.kind == "install" and b.argument == "library"]
WITH_POLICIES = [b for d in DOCS for b in blocks(d)
                 if b.kind == "install" and b.argument == "library-policies"]
CLUSTER_PORTS = (7000, 7001, 7002)


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@contextlib.contextmanager
def servers_the_docs_name(tmp):
    """Module-less servers (where the library is what users load) on the docs' ports."""
    busy = [p for p in (6379, *CLUSTER_PORTS, *(p + 10_000 for p in CLUSTER_PORTS))
            if not port_free(p)]
    assert not busy, f"ports {busy} are in use (make run or make cluster?): stop them first"
    procs = []
    try:
        for port in (6379, *CLUSTER_PORTS):
            d = tmp / str(port)
            d.mkdir()
            cluster = ["--cluster-enabled", "yes"] if port != 6379 else []
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(d), *cluster],
                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        for port in (6379, *CLUSTER_PORTS):
            wait_until(lambda p=port: redis.Redis(port=p).ping(), procs[0], "redis-server",
                       tmp / "none")
        subprocess.run(["redis-cli", "--cluster", "create",
                        *(f"127.0.0.1:{p}" for p in CLUSTER_PORTS), "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        wait_until(lambda: all(b"cluster_state:ok" in redis.Redis(port=p).execute_command(
            "CLUSTER", "INFO") for p in CLUSTER_PORTS), procs[0], "the cluster", tmp / "none")
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextlib.contextmanager
def library_block_run(blocks, tmp_path):
    """The one block of `blocks`, run as written from a fresh copy against the servers the
    docs name (kept up while the caller checks them); its output lines, checked to start
    with the `rl` that FUNCTION LOAD prints."""
    assert len(blocks) == 1, [b.where for b in blocks]
    block = blocks[0]
    copy = tmp_path / "rl"
    copy.mkdir()
    fresh_clone(copy)
    with servers_the_docs_name(tmp_path):
        run = subprocess.run(["bash", "-e", "-c", block.body], cwd=copy, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, f"{block.where}: {run.stdout}\n{run.stderr}"
        lines = run.stdout.splitlines()
        assert lines[0] == "rl", f"{block.where} says it prints rl: {run.stdout}"
        yield block, lines


def test_the_library_loads_as_the_docs_say(tmp_path):
    with library_block_run(LIBRARY, tmp_path) as (block, _):
        for port in (6379, *CLUSTER_PORTS):
            listed = redis.Redis(port=port).execute_command("FUNCTION", "LIST", "LIBRARYNAME", "rl")
            assert len(listed) == 1, f"{block.where}: the library is not on port {port}"


def test_the_library_takes_policies_as_the_docs_say(tmp_path):
    with library_block_run(WITH_POLICIES, tmp_path) as (_, lines):
        r = redis.Redis(port=6379, decode_responses=True)
        assert r.execute_command("FCALL_RO", "rl_policy", 0, "LIST") == [
            "free SLIDING 100 1m", "pro GCRA 50 1s BURST 100"]
        assert r.execute_command("FCALL", "rl_limit", 1, "user:1", "free")[:3] == [1, 100, 99]
        assert lines[1] == r.execute_command("FCALL_RO", "rl_policy", 0, "DIGEST"), lines
