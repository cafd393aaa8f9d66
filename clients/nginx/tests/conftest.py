"""Real servers for the NGINX package's tests: Redis 7.0 and Valkey 9.1 with the rl module and
without it (the package then runs the Functions library), three-master Redis Clusters, NGINX
from Debian's packages (`nginx -p DIR -c DIR/nginx.conf`), and an upstream for it to proxy to.

Environment: RL_MODULE (default target/release/librl.so), RL_REDIS_SERVER (redis-server),
RL_VALKEY_SERVER (default .tools/bin/valkey-server, else valkey-server on PATH), RL_NGINX
(nginx), RL_NGINX_LIB (the package's lib/ to serve: scripts/test-nginx-package.sh sets the
packed archive's; default this checkout's clients/nginx/lib)."""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import redis

ROOT = Path(__file__).resolve().parents[3]
CHECKOUT_LIB = ROOT / "clients/nginx/lib"
LIB = Path(os.environ.get("RL_NGINX_LIB", CHECKOUT_LIB))
EXAMPLE = ROOT / "clients/nginx/examples/nginx.conf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(ready, what: str, proc: subprocess.Popen | None, log, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}):\n{log()}")
        try:
            if ready():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start in {timeout}s:\n{log()}")


class Server:
    """One redis-server or valkey-server on a fixed port: `start`, `stop` (a kill, as a
    crash), `restart` on the same port."""

    def __init__(self, flavor: str, with_module: bool, extra: tuple[str, ...] = (),
                 port: int | None = None) -> None:
        self.flavor, self.with_module, self.extra = flavor, with_module, extra
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix=f"rl-nginx-{flavor}-")
        self.proc: subprocess.Popen | None = None

    def binary(self) -> str:
        if self.flavor == "redis":
            return os.environ.get("RL_REDIS_SERVER", "redis-server")
        local = ROOT / ".tools/bin/valkey-server"
        return os.environ.get("RL_VALKEY_SERVER") or (str(local) if local.exists() else "valkey-server")

    def start(self) -> Server:
        args = [self.binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--logfile", "server.log", *self.extra]
        if self.with_module:
            args += ["--loadmodule", os.environ.get("RL_MODULE", str(ROOT / "target/release/librl.so"))]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        password = self.extra[self.extra.index("--requirepass") + 1] if "--requirepass" in self.extra else None
        # Itself, not another test's server that took the port meanwhile, with its data
        # loaded (PING answers LOADING till then).
        def ready() -> bool:
            c = redis.Redis(port=self.port, password=password, socket_timeout=1)
            return c.info("server")["process_id"] == self.proc.pid and c.ping()

        wait_for(ready, self.flavor, self.proc, lambda: Path(self.dir, "server.log").read_text())
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """Three masters joined into one cluster, with or without the module."""

    def __init__(self, with_module: bool) -> None:
        self.nodes = []
        for _ in range(3):
            while True:  # a port whose cluster bus port (10,000 above) is free too
                port = random.randrange(20_000, 45_000)
                try:
                    for p in (port, port + 10_000):
                        with socket.socket() as s:
                            s.bind(("127.0.0.1", p))
                    break
                except OSError:
                    continue
            flags = ("--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
            self.nodes.append(Server("redis", with_module, flags, port).start())
        subprocess.run(["redis-cli", "--cluster", "create",
                        *(f"127.0.0.1:{n.port}" for n in self.nodes), "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(redis.Redis(port=n.port).cluster("info")["cluster_state"] == "ok"
                   for n in self.nodes):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not become ok")

    def close(self) -> None:
        for n in self.nodes:
            n.close()


#: The accounts of the upstream's login (examples/upstream.py's).
PASSWORDS = {"alice": "correct horse battery staple"}


class Upstream:
    """The service behind NGINX: answers every GET with 200 and a JSON body naming its path
    (and an `X-RateLimit-Remaining` of its own when asked, by `X-Upstream-Limits`), a login
    (`POST /login`, a form) as examples/upstream.py does, 200 or 401, and counts the requests
    that reached it."""

    def __init__(self) -> None:
        served = self.served = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                served.append(self.path)
                self.answer(200, {"path": self.path}, self.headers.get("X-Upstream-Limits"))

            def do_POST(self) -> None:  # noqa: N802
                served.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                account, password = (form.get(f, [""])[0] for f in ("account", "password"))
                if account in PASSWORDS and PASSWORDS[account] == password:
                    self.answer(200, {"account": account})
                else:
                    self.answer(401, {"error": "wrong account or password"})

            def answer(self, status: int, content: dict, limits: str | None = None) -> None:
                body = json.dumps(content).encode()
                self.send_response(status)
                if limits:  # an app that limits too
                    self.send_header("X-RateLimit-Remaining", "999")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        class Listener(ThreadingHTTPServer):
            request_queue_size = 256  # 60 connections at once, not the default 5's SYN retries

        self.server = Listener(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Nginx:
    """A private NGINX serving `conf` (its text) from a directory of its own."""

    def __init__(self, conf: str, port: int) -> None:
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="rl-nginx-"))
        (self.dir / "nginx.conf").write_text(conf)
        binary = os.environ.get("RL_NGINX", "nginx")
        with open(self.dir / "stderr.log", "wb") as stderr:
            self.proc = subprocess.Popen(
                [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL, stderr=stderr)
        wait_for(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() is None,
                 "nginx", self.proc, self.log)

    def log(self) -> str:
        """What NGINX wrote: its error log (the package's lines), and what it said on start."""
        return "".join(p.read_text() for p in (self.dir / "stderr.log", self.dir / "error.log")
                       if p.exists())

    def request(self, path: str, headers: dict[str, str] | None = None, body: str | None = None):
        """One GET (a POST of a form `body`) on a connection of its own: (status, headers,
        body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            if body is not None:
                headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
            conn.request("GET" if body is None else "POST", path, body=body, headers=headers or {})
            res = conn.getresponse()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str] | None = None, body: str | None = None):
        """(status, headers, the JSON body parsed); a POST of the form `body` when given."""
        status, got, answer = self.request(path, headers, body)
        return status, got, json.loads(answer or b"null")

    def text(self, path: str, headers: dict[str, str] | None = None) -> str:
        """The body of a 200 answer, as text."""
        status, _, body = self.request(path, headers)
        assert status == 200, (status, body)
        return body.decode().strip()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def example_conf(redis_line: str, upstream: int, port: int, options: str = "",
                 metrics_port: int | None = None) -> str:
    """The example nginx.conf as the docs show it, with this checkout's package, these ports
    (its metrics on `metrics_port`, a free port if not given), two workers, the error log at
    `info` (the package's log lines), `redis_line` in place of its Redis connection (a
    cluster's, a port's) and `options` added to both limiters'."""
    conf = EXAMPLE.read_text()
    swaps = [
        ('"/opt/rl-nginx-0.1.0/lib/?.lua;;"', f'"{LIB}/?.lua;;"'),
        ('local redis = { host = "127.0.0.1", port = 6379 }', redis_line),
        ("server 127.0.0.1:8080;", f"server 127.0.0.1:{upstream};"),
        ("listen 127.0.0.1:8000;", f"listen 127.0.0.1:{port};"),
        ("listen 127.0.0.1:9145;", f"listen 127.0.0.1:{metrics_port or free_port()};"),
        ("worker_processes auto;", "worker_processes 2;"),
        ("error_log error.log notice;", "error_log error.log info;"),
    ]
    for old, new in swaps:
        assert conf.count(old) == 1, f"the example no longer has {old!r}"
        conf = conf.replace(old, new)
    assert conf.count("rl.new({ redis = redis, ") == 2
    return conf.replace("rl.new({ redis = redis, ", "rl.new({ redis = redis, " + options)


LOGIN = ROOT / "clients/nginx/examples/login.conf"
LOGIN_POLICY = '"FIXED 5 15m PENALTY 15m ESCALATE 24h"'


def login_conf(redis_line: str, upstream: int, port: int, policy: str | None = None) -> str:
    """examples/login.conf as the docs show it, with this checkout's package, these ports, two
    workers, the error log at `info`, `redis_line` in place of its Redis connection and
    `policy` (Lua text: a string) in place of its login layer's policy."""
    conf = LOGIN.read_text()
    swaps = [
        ('"/opt/rl-nginx-0.1.0/lib/?.lua;;"', f'"{LIB}/?.lua;;"'),
        ('redis = { host = "127.0.0.1", port = 6379 },', redis_line + ","),
        ("server 127.0.0.1:8080;", f"server 127.0.0.1:{upstream};"),
        ("listen 127.0.0.1:8000;", f"listen 127.0.0.1:{port};"),
        ("worker_processes auto;", "worker_processes 2;"),
        ("error_log error.log notice;", "error_log error.log info;"),
        (f"policy = {LOGIN_POLICY}", f"policy = {policy or LOGIN_POLICY}"),
    ]
    for old, new in swaps:
        assert conf.count(old) == 1, f"the login example no longer has {old!r}"
        conf = conf.replace(old, new)
    return conf


def burst(nginx_list: list[Nginx], path: str, headers: dict[str, str], clients: int = 60):
    """`clients` requests at once (their connections opened first, then sent together), spread
    over the NGINX instances in turn: their statuses."""
    start = threading.Barrier(clients)

    def one(i: int) -> int:
        n = nginx_list[i % len(nginx_list)]
        conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=30)
        conn.connect()
        start.wait()
        try:
            conn.request("GET", path, headers=headers)
            res = conn.getresponse()
            res.read()
            return res.status
        finally:
            conn.close()

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(one, range(clients)))


BACKENDS = [("redis", True), ("redis", False), ("valkey", True), ("valkey", False)]


def backend_id(param: tuple[str, bool]) -> str:
    return f"{param[0]}-{'module' if param[1] else 'library'}"


@pytest.fixture(scope="session")
def servers():
    started: dict[tuple[str, bool], Server] = {}
    yield lambda flavor, with_module: started.get((flavor, with_module)) or started.setdefault(
        (flavor, with_module), Server(flavor, with_module).start())
    for s in started.values():
        s.close()


@pytest.fixture(params=BACKENDS, ids=backend_id)
def server(request, servers) -> Server:
    """Each server in turn, emptied of keys and of the library."""
    s = servers(*request.param)
    c = s.client()
    c.flushall()
    c.function_flush()
    return s


@pytest.fixture(scope="session")
def upstream():
    u = Upstream()
    yield u
    u.close()


@pytest.fixture
def nginx_for(upstream):
    """`nginx_for(conf_text_of_port)`: an NGINX serving the conf made for its port; all are
    stopped after the test."""
    started: list[Nginx] = []

    def start(make_conf) -> Nginx:
        port = free_port()
        n = Nginx(make_conf(port), port)
        started.append(n)
        return n

    yield start
    for n in started:
        n.close()


def custom_conf(port: int, upstream: int, init: str, access: str = "limiter:access()",
                http: str = "", server: str = "", package_path: str = "", lib: Path = LIB,
                workers: int = 2) -> str:
    """An NGINX conf of the tests' own, with `workers` worker processes: `init` runs in
    init_by_lua (`rl` is the package), every location runs `access` in its access phase then
    proxies to the upstream; `/ipkey` answers the key of the client's address (`?bits=`);
    `http` and `server` add directives."""
    return f"""
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes {workers};
pid nginx.pid;
error_log error.log info;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    lua_package_path "{package_path}{lib}/?.lua;;";
    {http}
    init_by_lua_block {{
        rl = require "resty.rl"
        {init}
    }}
    server {{
        listen 127.0.0.1:{port};
        default_type application/json;
        {server}
        location = /ipkey {{
            content_by_lua_block {{
                ngx.say(rl.ip_key(ngx.var.binary_remote_addr, tonumber(ngx.var.arg_bits)))
            }}
        }}
        location / {{
            access_by_lua_block {{ {access} }}
            proxy_pass http://127.0.0.1:{upstream};
        }}
    }}
}}
"""


def need_quota(server: Server) -> Server:
    """`server`, for a quota test: the one place where the library's servers are skipped while
    the Functions library the package loads has no `rl_quota` (RL.QUOTA is then the module's
    alone)."""
    shipped = LIB / "resty/rl/library.lua"
    source = (shipped if shipped.exists() else ROOT / "functions/rl.lua").read_text()
    if not server.with_module and "register_function('rl_quota'" not in source:
        pytest.skip("the Functions library has no rl_quota yet: RL.QUOTA is module-only")
    return server


@pytest.fixture
def quota_server(server) -> Server:
    """`server` (each in turn, emptied), through `need_quota`."""
    return need_quota(server)
