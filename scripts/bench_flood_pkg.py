#!/usr/bin/env python3
"""The Python and Node middlewares under a flood, in process: the flood of
scripts/bench_flood.py (one identity, then 1,000 drawn by a wrk script; wrk with 64
connections; a legitimate client at 100 requests a second on /legit, with a limit it stays
under), against each middleware in its own server, at a limit of 1 request a minute per
identity (`GCRA 1 1m`): one process serves a few thousand requests a second, at which 1,000
identities under the NGINX table's 1 a second with bursts of 5 would stay within their limits
and flood nothing.

- Python: a FastAPI app under uvicorn (one worker), with `redis_rl.asgi.RateLimitMiddleware`
  on the module without its denial cache (a Redis call per request), with it, and with it on
  the Functions library; next to a stock-store baseline: an ASGI middleware calling `limits`'
  `FixedWindowRateLimiter` over its `RedisStorage` (`async+redis://`, redis-py), the storage
  and strategy slowapi applies by default, at 1/minute on / and 1000/second on /legit.
- Node: an Express 5 app (one process), with `rateLimitLayers` in the same three rows; next
  to express-rate-limit 8 with rate-limit-redis (node-redis), `limit` 1 a minute on /, 1000
  a second on /legit.

A row with no limiter at all gives each framework's own ceiling on this machine. Each row
reports the flood's requests per second, the share denied, the Redis calls per
denied request after a warm-up that fills the cache (1 s; for 1,000 identities 3 s of each
drawn in turn) (every command in INFO commandstats but
the connections' own, less the legitimate client's, measured alone, over wrk's 429s), and the
legitimate client's p50 and p99 in ms,
next to its p50 and p99 with no flood. The Node package is built from this checkout
(clients/node: `npm ci` when its node_modules is missing, then `npm run build`); the Python
package is clients/python/src.

Usage: scripts/bench_flood_pkg.py [--module PATH] [--seconds N] [--quick] [--only python|node]
       (or bench.py --flood-pkg-only)
Figures are as measured; nothing here is a test.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading

from bench_flood import CONNECTIONS, LEGIT_RPS, flood, legit, percentile
from bench_nginx import answers, free_port, start_redis, stop, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(ROOT, "target/release/librl.so")
NODE = os.path.join(ROOT, "clients/node")

# Commands a connection sends for itself, not for a decision.
OWN = ("info", "ping", "hello", "select", "command", "config", "client|", "script|load",
       "function|", "flushall")

PY_APP = textwrap.dedent('''\
    import os

    import redis.asyncio
    from fastapi import FastAPI

    ROW, PORT = os.environ["ROW"], int(os.environ["REDIS_PORT"])
    app = FastAPI()


    @app.get("/")
    async def root():
        return {"ok": True}


    @app.get("/legit")
    async def legit():
        return {"ok": True}


    def client_of(scope):
        for k, v in scope["headers"]:
            if k == b"x-client":
                return v.decode("latin-1")
        return None


    if ROW == "none":
        pass
    elif ROW == "limits":
        from limits import parse
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import FixedWindowRateLimiter

        limiter = FixedWindowRateLimiter(RedisStorage(f"async+redis://127.0.0.1:{PORT}",
                                                      implementation="redispy"))
        FLOOD, LEGIT = parse("1/minute"), parse("1000/second")
        BODY = b'{"error":"rate limited"}'

        class Limits:
            def __init__(self, app):
                self.app = app

            async def __call__(self, scope, receive, send):
                if scope["type"] != "http":
                    return await self.app(scope, receive, send)
                item = LEGIT if scope["path"] == "/legit" else FLOOD
                if not await limiter.hit(item, scope["path"], client_of(scope) or ""):
                    await send({"type": "http.response.start", "status": 429, "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(BODY)).encode())]})
                    await send({"type": "http.response.body", "body": BODY})
                    return
                await self.app(scope, receive, send)

        app.add_middleware(Limits)
    else:
        import redis_rl
        from redis_rl import policy
        from redis_rl.asgi import Layer, RateLimitMiddleware

        limiter = redis_rl.AsyncLimiter(redis.asyncio.Redis(port=PORT),
                                        denial_cache=ROW != "rl-nocache")
        app.add_middleware(RateLimitMiddleware, limiter=limiter, layers=[
            Layer("flood", lambda s: None if s["path"] == "/legit" else client_of(s),
                  policy.gcra(1, "1m")),
            Layer("legit", lambda s: client_of(s) if s["path"] == "/legit" else None,
                  policy.gcra(1000, "1s", burst=100)),
        ])
''')

NODE_APP = textwrap.dedent('''\
    const { createRequire } = require("node:module");
    const from = createRequire(process.env.NODE_PKG + "/package.json");
    const express = from("express");
    const { createClient } = from("redis");
    const row = process.env.ROW;
    const client = createClient({ url: `redis://127.0.0.1:${process.env.REDIS_PORT}` });
    const who = (req) => req.headers["x-client"];
    (async () => {
      await client.connect();
      const app = express();
      if (row === "none") {
        // no limiter: the framework's own ceiling
      } else if (row === "express-rate-limit") {
        const { rateLimit } = from("express-rate-limit");
        const { RedisStore } = from("rate-limit-redis");
        const limited = (windowMs, limit, prefix) => rateLimit({
          windowMs, limit, keyGenerator: who, standardHeaders: "draft-7", legacyHeaders: false,
          store: new RedisStore({ prefix, sendCommand: (...args) => client.sendCommand(args) }),
        });
        const flood = limited(60_000, 1, "flood:");
        app.use("/legit", limited(1000, 1000, "legit:"));
        app.use((req, res, next) => (req.path === "/legit" ? next() : flood(req, res, next)));
      } else {
        const { Limiter, policy, rateLimitLayers } = from(process.env.NODE_PKG + "/dist/cjs/index.js");
        const limiter = new Limiter(client, { denialCache: row !== "rl-nocache" });
        app.use(rateLimitLayers({ limiter, layers: [
          { name: "flood", identify: (req) => (req.path === "/legit" ? undefined : who(req)),
            policy: policy.gcra(1, "1m") },
          { name: "legit", identify: (req) => (req.path === "/legit" ? who(req) : undefined),
            policy: policy.gcra(1000, "1s", { burst: 100 }) },
        ] }));
      }
      app.get("/", (_req, res) => res.json({ ok: true }));
      app.get("/legit", (_req, res) => res.json({ ok: true }));
      app.listen(Number(process.env.PORT), "127.0.0.1");
    })();
''')

# (package, label, row, which Redis: "module" or "plain")
ROWS = [
    ("python", "no limiter (FastAPI under uvicorn alone)", "none", "plain"),
    ("python", "`limits` `RedisStorage` (async, redis-py), fixed window 1/min: slowapi's store",
     "limits", "plain"),
    ("python", ("`RateLimitMiddleware`, module, `GCRA 1 1m`, no cache (a Redis call "
                "per request)"), "rl-nocache", "module"),
    ("python", "`RateLimitMiddleware`, module, `GCRA 1 1m`, denial cache", "rl", "module"),
    ("python", "`RateLimitMiddleware`, library, `GCRA 1 1m`, denial cache", "rl", "plain"),
    ("node", "no limiter (Express alone)", "none", "plain"),
    ("node", "express-rate-limit + rate-limit-redis (node-redis), 1 a minute",
     "express-rate-limit", "plain"),
    ("node", "`rateLimitLayers`, module, `GCRA 1 1m`, no cache (a Redis call per request)",
     "rl-nocache", "module"),
    ("node", "`rateLimitLayers`, module, `GCRA 1 1m`, denial cache", "rl", "module"),
    ("node", "`rateLimitLayers`, library, `GCRA 1 1m`, denial cache", "rl", "plain"),
]


def missing(packages):
    lack = [t for t in ("wrk", "redis-server") if not shutil.which(t)]
    if "python" in packages:
        try:
            import fastapi  # noqa: F401
            import limits  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError as err:
            lack.append(f"the Python module {err.name}")
    if "node" in packages and not shutil.which("npm"):
        lack.append("node and npm")
    if not lack:
        return None
    return (f"missing {', '.join(lack)}: `bash scripts/install-deps.sh test` (make deps) "
            "installs them, and runs it with .tools/venv/bin/python")


def build_node():
    """clients/node built from this checkout (its dev dependencies hold Express,
    express-rate-limit, rate-limit-redis and node-redis)."""
    if not os.path.isdir(os.path.join(NODE, "node_modules")):
        subprocess.run(["npm", "ci", "--silent", "--no-audit", "--no-fund"], cwd=NODE, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=NODE, check=True,
                   stdout=subprocess.DEVNULL)


def start_app(work, procs, package, row, redis_port):
    d, port = tempfile.mkdtemp(dir=work), free_port()
    env = dict(os.environ, ROW=row, REDIS_PORT=str(redis_port), PORT=str(port))
    if package == "python":
        with open(os.path.join(d, "app.py"), "w") as f:
            f.write(PY_APP)
        env["PYTHONPATH"] = os.path.join(ROOT, "clients/python/src")
        argv = [sys.executable, "-m", "uvicorn", "app:app", "--app-dir", d, "--host", "127.0.0.1",
                "--port", str(port), "--log-level", "warning", "--no-access-log"]
    else:
        with open(os.path.join(d, "app.cjs"), "w") as f:
            f.write(NODE_APP)
        env["NODE_PKG"] = NODE
        argv = ["node", os.path.join(d, "app.cjs")]
    log = os.path.join(d, "app.log")
    with open(log, "wb") as out:  # a process group of its own, as bench_nginx.start's
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    procs.append(proc)
    get = b"GET /legit HTTP/1.0\r\nX-Client: probe\r\n\r\n"
    wait_until(lambda: answers(port, get, b"HTTP/1.1 200"), proc, f"the {package} app ({row})",
               log)
    return port


def decision_calls(client):
    """Every command INFO commandstats counts, but a connection's own."""
    stats = client.info("commandstats")
    return sum(v["calls"] for k, v in stats.items()
               if not k[len("cmdstat_"):].startswith(OWN))


def legit_calls(port, client):
    """The legitimate client alone for 2 s: its latencies' p50 and p99, and the Redis calls
    each of its requests makes."""
    before = decision_calls(client)
    seen = {"ms": [], "denied": 0}
    legit(port, 2, seen)
    calls = (decision_calls(client) - before) / max(len(seen["ms"]), 1)
    return percentile(seen["ms"], 50), percentile(seen["ms"], 99), calls


# The warm-up of the 1,000 identities' flood: each wrk connection draws them in turn, so that
# in 3 s at the rates one process serves every identity has been admitted and denied once.
CYCLE = """local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, { ["X-Client"] = "flood-" .. (n % 1000 + 1) })
end
"""


def warm(port, work, many):
    """The first admissions and denials, which only Redis can decide: 1 s of one identity's
    flood, 3 s of 1,000 identities drawn in turn."""
    if not many:
        flood(port, 1, work, False)
        return
    script = os.path.join(work, "cycle.lua")
    with open(script, "w") as f:
        f.write(CYCLE)
    subprocess.run(["wrk", "-t1", f"-c{CONNECTIONS}", "-d3s", "-s", script,
                    f"http://127.0.0.1:{port}/"], capture_output=True, check=True)


def measure(port, client, seconds, work, many, per_legit):
    """The flood and the legitimate client together; Redis calls counted after a warm-up
    (`warm`: the first denials fill the cache), less the legitimate client's (`per_legit`
    each)."""
    warm(port, work, many)
    before = decision_calls(client)
    seen = {"ms": [], "denied": 0}
    side = threading.Thread(target=legit, args=(port, seconds, seen))
    side.start()
    requests, denied, rps = flood(port, seconds, work, many)
    side.join()
    calls = max(0.0, decision_calls(client) - before - per_legit * len(seen["ms"]))
    return {"rps": rps, "denied": denied / max(requests, 1),
            "calls": calls / denied if denied else None,  # (none denied: no limiter)
            "p50": percentile(seen["ms"], 50), "p99": percentile(seen["ms"], 99),
            "legit_denied": seen["denied"]}


def versions():
    out = []
    try:
        import uvicorn
        out.append(f"Python {sys.version.split()[0]}, uvicorn {uvicorn.__version__}")
    except ImportError:
        pass
    if shutil.which("node"):
        node = subprocess.run(["node", "--version"], capture_output=True, text=True,
                              check=False).stdout.strip()
        out.append(f"Node {node}")
    return ", ".join(out)


def flood_pkg_table(module=MODULE, seconds=3, packages=("python", "node")):
    lack = missing(packages)
    if lack:
        print(f"\n## The Python and Node middlewares under a flood\n\nNot measured: {lack}.")
        return
    if "node" in packages:
        build_node()
    work = tempfile.mkdtemp(prefix="rl-flood-pkg-")
    procs, results = [], []
    try:
        servers = {"module": start_redis(work, procs, module), "plain": start_redis(work, procs, None)}
        for package, label, row, which in ROWS:
            if package not in packages:
                continue
            client, redis_port = servers[which]
            client.flushall()
            port = start_app(work, procs, package, row, redis_port)
            q50, q99, per_legit = legit_calls(port, client)
            calm = (q50, q99)
            for many in (False, True):
                client.flushall()
                r = measure(port, client, seconds, work, many, per_legit)
                results.append((package, label, many, calm, r))
                print(f"bench_flood_pkg: {package} {label} ({'1,000' if many else 'one'}): {r}",
                      file=sys.stderr)
            stop(procs.pop())
    finally:
        for p in procs:
            stop(p)
    print(f"\n## The Python and Node middlewares under a flood ({versions()}; one process each, "
          f"wrk -c{CONNECTIONS}, {seconds} s per row; a legitimate client at {LEGIT_RPS} "
          "requests/s alongside)\n")
    print("| package | row | flood | flood rps | denied | Redis calls per denial "
          "| legitimate p50 / p99 ms | without flood p50 / p99 ms | legitimate denied |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for package, label, many, (q50, q99), r in results:
        calls = "–" if r["calls"] is None else f"{r['calls']:.4f}"
        print(f"| {package} | {label} | {'1,000 identities' if many else 'one identity'} "
              f"| {r['rps']:,.0f} | {r['denied']:.1%} | {calls} | {r['p50']:.2f} / {r['p99']:.2f} "
              f"| {q50:.2f} / {q99:.2f} | {r['legit_denied']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", default=MODULE)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2 s per row")
    ap.add_argument("--only", choices=("python", "node"), help="one package's rows")
    a = ap.parse_args()
    flood_pkg_table(a.module, 2 if a.quick else a.seconds,
                    (a.only,) if a.only else ("python", "node"))


if __name__ == "__main__":
    main()
