"""The example apps (examples/flask_app.py, examples/slowapi_app.py) served for real on
127.0.0.1: Flask through werkzeug's threaded server, FastAPI through uvicorn, each in a
thread of the test process, until the `with` block ends."""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    """examples/<name>.py, imported as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def served_flask(app):
    """The Flask `app` on werkzeug's threaded server (a thread per request): its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


@contextlib.contextmanager
def served_asgi(app):
    """The ASGI `app` on uvicorn (its own event loop, in a thread): its base URL. uvicorn
    trusts `X-Forwarded-For` from 127.0.0.1 (as by default), so a test chooses a request's
    client address, IPv4 or IPv6, by sending that header."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           proxy_headers=True, forwarded_allow_ips="127.0.0.1"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def app_with(client, layers, **options):
    """A FastAPI app answering `/` behind one RateLimitMiddleware on `client` (a redis.asyncio
    client) with `layers` and `options`."""
    from fastapi import FastAPI

    import redis_rl
    from redis_rl.asgi import RateLimitMiddleware

    app = FastAPI()
    app.add_middleware(RateLimitMiddleware, limiter=redis_rl.AsyncLimiter(client),
                       layers=layers, **options)

    @app.get("/")
    async def root():
        return {"ok": True}

    return app


@contextlib.contextmanager
def served(framework: str, storage_uri: str, strategy: str, limit: str = "5/minute"):
    """examples/flask_app.py (framework "flask") or examples/slowapi_app.py ("fastapi"),
    made with `storage_uri`, `strategy` and `limit`, served."""
    if framework == "flask":
        app = example("flask_app").create_app(storage_uri, strategy, limit)
        with served_flask(app) as url:
            yield url
    else:
        app = example("slowapi_app").create_app(storage_uri, strategy, limit)
        with served_asgi(app) as url:
            yield url
