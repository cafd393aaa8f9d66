"""A FastAPI service limited by policies named on the server: its layers say which limit, the
server holds the numbers. Define them once on every node (RL.POLICY is administrative):

    RL.POLICY SET per-ip GCRA 100 1s BURST 20
    RL.POLICY SET plan-free TOKENBUCKET 60 60 1m
    RL.POLICY SET plan-pro TOKENBUCKET 600 600 1m

Without the module, write them into the library instead: the same lines without `RL.POLICY
SET` in a policy file, then scripts/library-policies.py and FUNCTION LOAD REPLACE
(docs/managed-redis.md, "Named policies").

A changed policy applies at each key's next request, with no redeploy. RL_SHADOW=1 rehearses
the limits: every request is decided and carries its headers, and a would-be 429 is let
through and logged (a WARNING on logger `redis_rl.asgi`).

Run: REDIS_URL=redis://127.0.0.1:6379/0 uvicorn fastapi_policies:app --port 8000
"""

import os

import redis.asyncio
from fastapi import FastAPI

import redis_rl
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip, header

PLANS = {"free-key": "plan-free", "pro-key": "plan-pro"}  # API key: its plan's policy


def plan(scope):
    return PLANS.get(header("x-api-key")(scope) or "")  # an unknown key: no plan layer


client = redis.asyncio.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
app = FastAPI()
app.add_middleware(
    RateLimitMiddleware,
    limiter=redis_rl.AsyncLimiter(client),
    layers=[
        Layer("ip", client_ip, "per-ip"),  # RL.ALL ... POLICY per-ip
        Layer("plan", header("x-api-key"), plan),  # POLICY plan-free or POLICY plan-pro
    ],
    shadow=os.environ.get("RL_SHADOW") == "1",
)


@app.get("/hello")
async def hello():
    return {"message": "hello"}
