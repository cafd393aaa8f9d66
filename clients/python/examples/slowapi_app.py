"""A FastAPI app whose slowapi limiter runs on rl: the storage URI is the only change (`rl+`
before `redis://`), and `import redis_rl` registers it with limits.

    REDIS_URL=redis://127.0.0.1:6379/0 uvicorn --factory slowapi_app:create_app
"""

import os

from fastapi import FastAPI, Request, Response
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address

import redis_rl  # noqa: F401  (registers rl+redis://, rl+rediss://, rl+redis+cluster://)


def create_app(storage_uri=None, strategy="moving-window", limit="5/minute"):
    limiter = Limiter(
        key_func=get_remote_address,
        storage_uri=storage_uri or "rl+" + os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        strategy=strategy,  # moving-window, sliding-window-counter or fixed-window
        headers_enabled=True,  # X-RateLimit-*, and Retry-After on a 429
    )
    app = FastAPI()
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

    @app.get("/ping")
    @limiter.limit(limit)
    async def ping(request: Request, response: Response):
        return {"pong": True}

    @app.get("/export")
    @limiter.limit(limit, cost=2)  # each request spends 2 of the limit (COST 2)
    async def export(request: Request, response: Response):
        return {"exported": True}

    return app
