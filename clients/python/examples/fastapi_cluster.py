"""The FastAPI service on Redis Cluster. RL.ALL takes keys of one slot, so each middleware
names one of its layers as the hash tag of every key of a request (`tag=`). The tag is the
client's address, the one identity the client cannot choose: the IP layer counts every
request of that address, whatever else it sends, and the endpoint layer counts per address.
The plan must count an API key over all its addresses, so it is a second middleware, tagged
by its own layer.

Run: REDIS_URL=redis://127.0.0.1:7000 uvicorn fastapi_cluster:app --port 8000
"""

import os

import redis.asyncio.cluster
from fastapi import FastAPI

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip, header, path

PLANS = {"free-key": 10, "pro-key": 100}  # requests per hour, by API key, over all addresses
ENDPOINTS = {"/search": 10, "/export": 5}  # the expensive ones, per minute and address


def known_key(scope):
    key = header("x-api-key")(scope)  # only known keys: a key name is never the client's text
    return key if key in PLANS else None


def plan(scope):
    quota = PLANS[known_key(scope)]
    return policy.token_bucket(quota, quota, "1h")


def endpoint(scope):
    quota = ENDPOINTS.get(scope["path"])  # other paths: no limit, so no key
    return policy.fixed(quota, "1m") if quota else None


client = redis.asyncio.cluster.RedisCluster.from_url(
    os.environ.get("REDIS_URL", "redis://127.0.0.1:7000"))
limiter = redis_rl.AsyncLimiter(client)
app = FastAPI()
# Added first, so it runs second: the plan, keys rl:{free-key}:plan:free-key.
app.add_middleware(RateLimitMiddleware, limiter=limiter, tag="plan",
                   layers=[Layer("plan", known_key, plan)])
# Runs first: per address, keys rl:{203.0.113.7}:ip:203.0.113.7 and
# rl:{203.0.113.7}:endpoint:/export (an IPv6 client's address is its /56: 2001:db8:1::/56).
app.add_middleware(RateLimitMiddleware, limiter=limiter, tag="ip", layers=[
    Layer("ip", client_ip, policy.gcra(100, "1s", burst=20)),
    Layer("endpoint", path, endpoint),
])


@app.get("/hello")
async def hello():
    return {"message": "hello"}


@app.get("/export")
async def export():
    return {"export": "ok"}
