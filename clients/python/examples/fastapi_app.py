"""A FastAPI service limited by the seed's three layers, with ONE RL.ALL per request:
per client IP (GCRA, 100 per second, bursts of 20), per API key (a token bucket sized by the
key's plan), and per expensive endpoint and API key (fixed windows). A request denied by one
layer spends nothing from the others. A client denied is then denied from the limiter's
denial cache, without a call to Redis, until its Retry-After ends; /metrics counts the
decisions.

Run: REDIS_URL=redis://127.0.0.1:6379/0 uvicorn fastapi_app:app --port 8000
"""

import os

import redis.asyncio
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip, header

PLANS = {"free-key": 60, "pro-key": 600}  # requests per minute, by API key
ENDPOINTS = {"/search": 10, "/export": 5}  # the expensive ones, per minute and API key


def plan(scope):
    quota = PLANS.get(header("x-api-key")(scope) or "")
    return policy.token_bucket(quota, quota, "1m") if quota else None


def endpoint(scope):
    quota = ENDPOINTS.get(scope["path"])
    return policy.fixed(quota, "1m") if quota else None


def endpoint_of_key(scope):
    key = header("x-api-key")(scope)  # only known keys: a key name is never the client's text
    return f"{key}:{scope['path']}" if key in PLANS else None


client = redis.asyncio.Redis.from_url(
    os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
    retry_on_error=[redis.exceptions.ConnectionError],  # a restart or failover: connect again
)
# The denial cache is on by default; its bound is the most identities it holds at once.
limiter = redis_rl.AsyncLimiter(client, denial_cache=redis_rl.DenialCache(max_entries=10_000))
app = FastAPI()
app.add_middleware(
    RateLimitMiddleware,
    limiter=limiter,
    layers=[
        Layer("ip", client_ip, policy.gcra(100, "1s", burst=20)),
        Layer("plan", header("x-api-key"), plan),
        Layer("endpoint", endpoint_of_key, endpoint),
    ],
)


@app.get("/hello")
async def hello():
    return {"message": "hello"}


@app.get("/export")
async def export():
    return {"export": "ok"}


@app.get("/metrics")  # Prometheus: rl_decisions_total{layer,result}; behind the layers too
async def metrics():
    return PlainTextResponse(limiter.metrics.prometheus())
