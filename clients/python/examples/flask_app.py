"""A Flask app whose Flask-Limiter runs on rl: the storage URI is the only change (`rl+` before
`redis://`), and `import redis_rl` registers it with limits.

    REDIS_URL=redis://127.0.0.1:6379/0 flask --app flask_app:create_app run
"""

import os

from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

import redis_rl  # noqa: F401  (registers rl+redis://, rl+rediss://, rl+redis+cluster://)


def create_app(storage_uri=None, strategy="moving-window", limit="5/minute"):
    app = Flask(__name__)
    app.config.update(
        RATELIMIT_STORAGE_URI=storage_uri
        or "rl+" + os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        RATELIMIT_STRATEGY=strategy,  # moving-window, sliding-window-counter or fixed-window
        RATELIMIT_HEADERS_ENABLED=True,  # X-RateLimit-*, and Retry-After on a 429
    )
    limiter = Limiter(get_remote_address, app=app)

    @app.route("/ping")
    @limiter.limit(limit)
    def ping():
        return "pong"

    @app.route("/export")
    @limiter.limit(limit, cost=2)  # each request spends 2 of the limit (COST 2)
    def export():
        return "exported"

    return app
