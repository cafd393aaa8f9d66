"""An OpenAI-compatible proxy that limits each API key by requests and by tokens per minute,
and each organisation by a monthly token budget, all decided in ONE RL.ALL (redis_rl's
`reserve_all`):

  - requests per minute: SLIDINGLOG RPM 1m, cost 1, never settled;
  - tokens per minute:   SLIDINGLOG TPM 1m (exact), reserving an estimate of the request's
    tokens (the prompt's, roughly, plus `max_tokens`), settled with the upstream's
    `usage.total_tokens`: a REFUND of what was not used, or a DEBIT of what was used beyond;
  - the organisation's tokens per month: QUOTA MONTHLY_TOKENS MONTH [TZ BUDGET_TZ]
    [ANCHOR BUDGET_ANCHOR] (a calendar month renewing on the anchor's day, at its local time:
    the 1st at midnight UTC by default), reserving and settled as the minute's tokens.

A request denied by one layer spends nothing from the others. Tokens charged in a minute are
at most TPM plus the overruns (usage beyond the estimate) of the requests in flight when the
budget ran out: an overrun is charged as debt, which denies the key until it is paid off (and
the organisation, for its month, until the renewal).

The API keys it serves are API_KEYS (comma-separated, each `key` or `key:organisation`; a key
without one is an organisation of its own; "key-a:acme,key-b:acme" by default): any other is a
401 that spends nothing, so a client cannot make itself a fresh budget with a new key.

Run: REDIS_URL=redis://127.0.0.1:6379/0 UPSTREAM_URL=https://api.openai.com \
     UPSTREAM_API_KEY=sk-... PORT=8000 python app.py
"""

import contextlib
import logging
import os

import httpx
import redis.asyncio
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import redis_rl
from redis_rl import policy

# The API keys served, and each one's organisation; a real proxy looks its keys up in its own
# store.
API_KEYS = {key: org or key for key, _, org in (
    entry.partition(":")
    for entry in os.environ.get("API_KEYS", "key-a:acme,key-b:acme").split(","))}
RPM = int(os.environ.get("RPM", "60"))
TPM = int(os.environ.get("TPM", "10000"))
MONTHLY_TOKENS = int(os.environ.get("MONTHLY_TOKENS", "5000000"))
DEFAULT_MAX_TOKENS = 256  # given to a request without max_tokens, so its estimate bounds it
UPSTREAM_URL = os.environ.get("UPSTREAM_URL", "https://api.openai.com").rstrip("/")
UPSTREAM_KEY = os.environ.get("UPSTREAM_API_KEY")  # the proxy's own key for the upstream
REQUESTS = policy.sliding_log(RPM, "1m", name="requests")
TOKENS = policy.sliding_log(TPM, "1m", name="tokens")
BUDGET = policy.quota(MONTHLY_TOKENS, "MONTH", name="budget",
                      tz=os.environ.get("BUDGET_TZ", "UTC"),
                      anchor=os.environ.get("BUDGET_ANCHOR", "2001-01-01T00:00"))


def estimate_tokens(body):
    """The tokens a request may use: its prompt's, roughly (4 characters a token, and 4 a
    message for its framing), plus the completion's `max_tokens`."""
    chars = 0
    for message in body["messages"]:
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts: count their text
            content = "".join(part.get("text", "") for part in content)
        chars += len(str(content))
    return -(-chars // 4) + 4 * len(body["messages"]) + body["max_tokens"]


def error(status, message, kind, code=None, headers=None):
    """An OpenAI-style error answer."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


async def settle(reservation, used):
    """Settles at `used`; if the limiter's server is unavailable, the estimate stays spent."""
    try:
        await reservation.settle(used)
    except redis_rl.ServerUnavailableError as err:
        logging.getLogger("llm-proxy").warning("settle: %s", err)


@contextlib.asynccontextmanager
async def lifespan(app):
    app.state.limiter = redis_rl.AsyncLimiter(redis.asyncio.Redis.from_url(
        os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")))
    auth = {"authorization": f"Bearer {UPSTREAM_KEY}"} if UPSTREAM_KEY else {}
    app.state.upstream = httpx.AsyncClient(base_url=UPSTREAM_URL, headers=auth, timeout=120)
    yield
    await app.state.upstream.aclose()
    await app.state.limiter.client.aclose()


app = FastAPI(lifespan=lifespan)


@app.post("/v1/chat/completions")
async def chat_completions(request: Request):
    scheme, _, api_key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or api_key not in API_KEYS:
        return error(401, "Incorrect API key provided.", "invalid_request_error",
                     "invalid_api_key")
    try:
        body = await request.json()
        body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        estimate = estimate_tokens(body)
    except (ValueError, KeyError, TypeError, AttributeError):
        return error(400, "a chat completion takes messages and max_tokens",
                     "invalid_request_error")
    if body.get("stream"):
        return error(400, "this example does not stream", "invalid_request_error")
    if estimate > TPM:  # could never be admitted
        return error(400, f"the request may use {estimate} tokens, more than {TPM} a minute",
                     "invalid_request_error", "context_length_exceeded")

    # One RL.ALL: the request counts 1 on the first layer and reserves the estimate on the
    # others (keys share the organisation's hash tag, for Redis Cluster).
    org = API_KEYS[api_key]
    layers = [(f"rl:{{{org}}}:rpm:{api_key}", REQUESTS, 1),
              (f"rl:{{{org}}}:tpm:{api_key}", TOKENS), (f"rl:{{{org}}}:month", BUDGET)]
    try:
        decision, reservation = await request.app.state.limiter.reserve_all(layers, estimate)
    except redis_rl.ServerUnavailableError:  # Redis down, full or read-only: retry later
        return error(503, "the rate limiter is unavailable", "api_error", "limiter_unavailable")
    # (Any other error, a policy the server refuses, is the proxy's fault: 500.)
    headers = decision.binding.ietf_headers()  # RateLimit-Policy, RateLimit (and Retry-After)
    if reservation is None:
        kind = decision.binding.policy_name  # "requests", "tokens" or "budget"
        if kind == "budget":  # the month's: Retry-After is the renewal
            return error(429, f"the organisation's {MONTHLY_TOKENS} tokens for this month are "
                         "spent", kind, "insufficient_quota", headers)
        return error(429, f"rate limit reached for {kind} per minute", kind,
                     "rate_limit_exceeded", headers)

    async with reservation:  # an exception before settling leaves the estimate spent
        # A settlement that fails (Redis unavailable) is not sent again: the estimate stays
        # spent, and the answer goes out even so.
        try:
            upstream = await request.app.state.upstream.post("/v1/chat/completions", json=body)
        except httpx.ConnectError:  # never reached: nothing used, all of it back
            await settle(reservation, 0)
            return error(502, "the upstream cannot be reached", "api_error", None, headers)
        # (Any other failure, a timeout, may have used tokens: the estimate stays spent.)
        try:
            answer = upstream.json()
            used = int(answer["usage"]["total_tokens"])
        except (ValueError, KeyError, TypeError):  # an error answer carries no usage
            await settle(reservation, 0)
            return error(502, f"the upstream answered {upstream.status_code} without usage",
                         "api_error", None, headers)
        await settle(reservation, max(used, 0))
    return JSONResponse(answer, status_code=upstream.status_code, headers=headers)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")),
                log_level="warning")
