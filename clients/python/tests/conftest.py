"""Real servers for the package's tests: Redis 7.0 and Valkey 9.1, each with the rl module
and without it (where the package runs the Functions library), started once per session on
free ports.

Environment: RL_MODULE (the module, default target/release/librl.so of this checkout),
RL_REDIS_SERVER (default redis-server), RL_VALKEY_SERVER (default .tools/bin/valkey-server,
else valkey-server on PATH)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def one_window():
    """Starts the test at least ten seconds before a minute ends, so that its calls (and the
    keys it reads afterwards) fall in one aligned one-minute fixed window."""
    if time.time() % 60 > 50:
        time.sleep(60.5 - time.time() % 60)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above) is free too."""
    import random

    while True:
        port = random.randrange(20_000, 45_000)
        try:
            for p in (port, port + 10_000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue


def binary(flavor: str) -> str:
    if flavor == "redis":
        return os.environ.get("RL_REDIS_SERVER", "redis-server")
    local = ROOT / ".tools/bin/valkey-server"
    return os.environ.get("RL_VALKEY_SERVER") or (str(local) if local.exists() else "valkey-server")


def module_path() -> str:
    module = Path(os.environ.get("RL_MODULE", ROOT / "target/release/librl.so"))
    assert module.exists(), f"{module} not found: run `cargo build --release` (or make test)"
    return str(module)


class Server:
    """One server process on a fixed port and directory: `start`, `stop` (a kill, like a
    crash), `restart` (the same port, the same files)."""

    def __init__(self, flavor: str, with_module: bool, extra: tuple[str, ...] = (),
                 port: int | None = None) -> None:
        self.flavor, self.with_module, self.extra = flavor, with_module, extra
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix=f"rl-py-{flavor}-")
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def label(self) -> str:
        return f"{self.flavor}{'+module' if self.with_module else ' (library)'}"

    def start(self) -> Server:
        args = [binary(self.flavor), "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--logfile", str(Path(self.dir, "server.log")), *self.extra]
        if self.with_module:
            args += ["--loadmodule", module_path()]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited:\n{self.log()}")
            try:
                # Itself, not another test's server that took the port meanwhile (this one
                # then exits, unable to bind), with its data loaded (PING: LOADING till then).
                c = redis.Redis(port=self.port, socket_timeout=1)
                if c.info("server")["process_id"] == self.proc.pid and c.ping():
                    return self
            except redis.RedisError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.label} did not start:\n{self.log()}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log(self) -> str:
        path = Path(self.dir, "server.log")
        return path.read_text() if path.exists() else "(no log)"

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """Three Redis masters (no replicas) joined into one cluster, with or without the module."""

    def __init__(self, with_module: bool) -> None:
        flags = ("--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
        self.nodes = [Server("redis", with_module, flags, free_cluster_port()) for _ in range(3)]
        for n in self.nodes:
            n.start()  # (nodes.conf is written in the node's own directory)
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            infos = [redis.Redis(port=n.port).cluster("info") for n in self.nodes]
            if all(i["cluster_state"] == "ok" for i in infos):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not become ok")

    @property
    def port(self) -> int:
        return self.nodes[0].port

    def close(self) -> None:
        for n in self.nodes:
            n.close()


@pytest.fixture(scope="session")
def clusters():
    started: dict[bool, Cluster] = {}
    yield lambda with_module: started.get(with_module) or started.setdefault(
        with_module, Cluster(with_module))
    for c in started.values():
        c.close()


@pytest.fixture(params=[True, False], ids=["module", "library"])
def cluster(request, clusters) -> Cluster:
    """A three-master cluster with the module, then without it, emptied of keys and of the
    library."""
    c = clusters(request.param)
    for n in c.nodes:
        node = redis.Redis(port=n.port)
        node.flushall()
        node.function_flush()
    return c


BACKENDS = [("redis", True), ("redis", False), ("valkey", True), ("valkey", False)]


@pytest.fixture(scope="session")
def servers():
    started: dict[tuple[str, bool], Server] = {}
    yield lambda flavor, with_module: started.get((flavor, with_module)) or started.setdefault(
        (flavor, with_module), Server(flavor, with_module).start())
    for s in started.values():
        s.close()


def backend_id(param: tuple[str, bool]) -> str:
    return f"{param[0]}-{'module' if param[1] else 'library'}"


@pytest.fixture(params=BACKENDS, ids=backend_id)
def server(request, servers) -> Server:
    """Each server in turn, emptied: no keys, no functions."""
    s = servers(*request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.function_flush()
    c.close()
    return s


#: The servers with the module: what only the module has (RL.POLICY SET, its memory).
MODULE_BACKENDS = [b for b in BACKENDS if b[1]]


@pytest.fixture(params=MODULE_BACKENDS, ids=backend_id)
def module_server(request, servers) -> Server:
    """Each server with the module in turn (Redis 7.0, Valkey 9.1), emptied of keys. Its
    policies (RL.POLICY) are the module's memory, which FLUSHALL leaves: `define` them."""
    s = servers(*request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    c.close()
    return s


def library_with(lines: list[str], directory: Path) -> str:
    """The library with these policy lines in it: `python3 scripts/library-policies.py FILE`
    (docs/managed-redis.md, "Named policies") of a policy file holding them."""
    path = directory / "rl-policies.conf"
    path.write_text("".join(f"{line}\n" for line in lines))
    out = subprocess.run([sys.executable, str(ROOT / "scripts/library-policies.py"), str(path)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


class Policies:
    """Named policies on one server: `define("FIXED 3 1m SHADOW")` makes a policy of a new
    name (`define(..., name="free")` for a chosen one, again to change it) and returns the
    name. With the module, RL.POLICY SET (and RL.POLICY DEL of each at `close`); without it,
    the library written with every policy defined so far, loaded with FUNCTION LOAD REPLACE
    (and FUNCTION FLUSH at `close`)."""

    def __init__(self, server: Server, directory: Path) -> None:
        self.server, self.directory = server, directory
        self.client = redis.Redis(port=server.port)
        self.made: dict[str, str] = {}

    def define(self, definition: str, name: str | None = None) -> str:
        name = name or f"t-{os.urandom(6).hex()}"
        if self.server.with_module:
            self.client.execute_command("RL.POLICY", "SET", name, *definition.split())
        self.made[name] = definition
        if not self.server.with_module:
            lines = [f"{n} {d}" for n, d in self.made.items()]
            self.client.function_load(library_with(lines, self.directory), replace=True)
        return name

    def close(self) -> None:
        if self.server.with_module:
            for name in self.made:
                self.client.execute_command("RL.POLICY", "DEL", name)
        else:
            self.client.function_flush()
        self.client.close()


@pytest.fixture(params=BACKENDS, ids=backend_id)
def policy_server(request, servers) -> Server:
    """Each server in turn, for named policies: Redis 7.0 and Valkey 9.1 with the module
    (RL.POLICY SET) and without it (the library written with the policies), emptied of keys
    (and of the library, without the module): `define` the policies."""
    s = servers(*request.param)
    c = redis.Redis(port=s.port)
    c.flushall()
    if not s.with_module:
        c.function_flush()
    c.close()
    return s


@pytest.fixture
def policies_on(tmp_path):
    """`policies_on(server)`: a Policies for `server`, closed after the test."""
    made: list[Policies] = []

    def make(server: Server) -> Policies:
        made.append(Policies(server, tmp_path / f"p{len(made)}"))
        made[-1].directory.mkdir()
        return made[-1]

    yield make
    for p in made:
        p.close()


@pytest.fixture
def define(policy_server, policies_on):
    """`define("FIXED 3 1m SHADOW")`: a policy of a new name on `policy_server` (Policies),
    gone after the test."""
    return policies_on(policy_server).define


@pytest.fixture
def client(server):
    c = redis.Redis.from_url(server.url)
    yield c
    c.close()


@pytest.fixture
def expected_backend(server) -> str:
    import redis_rl

    return redis_rl.MODULE if server.with_module else redis_rl.LIBRARY


@pytest.fixture
def fresh_server():
    """A server of its own (Redis with the module), for tests that kill or restart it."""
    made: list[Server] = []

    def make(flavor: str = "redis", with_module: bool = True, extra: tuple[str, ...] = ()):
        made.append(Server(flavor, with_module, extra).start())
        return made[-1]

    yield make
    for s in made:
        s.close()



def need_quota(server: Server) -> Server:
    """`server`, for a quota test: the one place where the library's servers are skipped
    while the Functions library this package ships has no `rl_quota` (RL.QUOTA is then the
    module's alone)."""
    from redis_rl.backend import library_source

    if not server.with_module and "register_function('rl_quota'" not in library_source():
        pytest.skip("the Functions library has no rl_quota yet: RL.QUOTA is module-only")
    return server


@pytest.fixture
def quota_server(server) -> Server:
    """`server` (each in turn, emptied), through `need_quota`."""
    return need_quota(server)
