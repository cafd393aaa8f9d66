"""The LLM proxy example (examples/llm-proxy/app.py), run as a real HTTP server (uvicorn)
against a real redis-server, with the module and without it (the package's Functions
library), and a fake OpenAI-compatible upstream started here, which answers each request with the `usage.total_tokens` the test asks for (the body's
test-only `fake_usage`; `max_tokens` when absent) and `fake_status` as its status."""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

import redis
from conftest import ROOT, free_port, start_server, wait_until

APP = ROOT / "examples/llm-proxy/app.py"
RPM, TPM, MONTHLY = 60, 1000, 5000
#: Two API keys of one organisation, sharing its monthly budget.
SHARED = ["sk-shared-1", "sk-shared-2"]
DELAY = 0.1  # the upstream's answer time, so that requests overlap


def load_app():
    """The example as a module, for its estimate (importing it connects to nothing)."""
    sys.path.insert(0, str(ROOT / "clients/python/src"))
    spec = importlib.util.spec_from_file_location("llm_proxy_app", APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Upstream:
    """A fake OpenAI-compatible server: records every request it answered."""

    def __init__(self):
        self.answered = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(DELAY)
                status = body.get("fake_status", 200)
                used = body.get("fake_usage", body["max_tokens"])
                upstream.answered.append(body)
                answer = ({"error": {"message": "overloaded"}} if status >= 400 else {
                    "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "hi"}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": used,
                              "total_tokens": used}})
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def upstream():
    u = Upstream()
    yield u
    u.close()


@pytest.fixture(scope="module", params=["module", "library"])
def server_url(request, tmp_path_factory):
    """The session's server with the module, then one of this file's without it."""
    if request.param == "module":
        yield request.getfixturevalue("redis_url")
        return
    with start_server(tmp_path_factory.mktemp("no-module"), with_module=False) as (url, _):
        yield url


@pytest.fixture
def r(server_url):
    """A client on the proxy's server, flushed (keys, not the library)."""
    client = redis.Redis.from_url(server_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture(scope="module")
def proxy(server_url, upstream, tmp_path_factory):
    redis_url = server_url
    port = free_port()
    log = tmp_path_factory.mktemp("llm-proxy") / "proxy.log"
    env = dict(os.environ, REDIS_URL=redis_url, UPSTREAM_URL=upstream.url, PORT=str(port),
               RPM=str(RPM), TPM=str(TPM), MONTHLY_TOKENS=str(MONTHLY),
               API_KEYS=",".join([*KEYS, *(f"{k}:org-shared" for k in SHARED)]),
               PYTHONPATH=os.pathsep.join([str(ROOT / "clients/python/src"),
                                           os.environ.get("PYTHONPATH", "")]))
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, APP], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: requests.post(f"{base}/v1/chat/completions",
                                         timeout=1).status_code == 401, proc, "the proxy", log)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


MESSAGES = [{"role": "user", "content": "Say hi in one word, please."}]  # 27 chars: 7 + 4


def body(max_tokens, **fake):
    return {"model": "gpt-test", "messages": MESSAGES, "max_tokens": max_tokens, **fake}


def post(proxy, api_key, payload):
    return requests.post(f"{proxy}/v1/chat/completions", json=payload, timeout=30,
                         headers={"Authorization": f"Bearer {api_key}"})


# The API keys the proxy serves (API_KEYS): a fresh one per test.
KEYS = [f"sk-{uuid.uuid4().hex[:12]}" for _ in range(16)]
_unused = iter(KEYS)


def new_key():
    return next(_unused)


def used_by(r, api_key, layer, limit):
    """What a layer of the key has spent in the last minute (PEEK, COST 0: nothing written)."""
    key, words = f"rl:{{{api_key}}}:{layer}:{api_key}", ("SLIDINGLOG", limit, "1m", "COST", 0)
    try:
        reply = r.execute_command("RL.PEEK", words[0], key, *words[1:])
    except redis.ResponseError:  # no module: the library's
        reply = r.execute_command("FCALL_RO", "rl_peek", 1, key, *words)
    return limit - int(reply[2])


def test_the_estimate_is_the_prompts_tokens_and_max_tokens():
    app = load_app()
    assert app.estimate_tokens(body(89)) == 7 + 4 + 89 == 100
    parts = {"role": "user", "content": [{"type": "text", "text": "12345678"}]}
    assert app.estimate_tokens({"messages": [parts], "max_tokens": 1}) == 2 + 4 + 1


def test_an_admitted_request_is_settled_at_its_usage(proxy, upstream, r):
    key = new_key()
    resp = post(proxy, key, body(89, fake_usage=30))
    assert resp.status_code == 200
    assert resp.json()["usage"]["total_tokens"] == 30
    assert resp.headers["RateLimit-Policy"] in ('"tokens";q=1000;w=60', '"requests";q=60;w=60')
    assert used_by(r, key, "tpm", TPM) == 30  # reserved 100, 70 refunded
    assert used_by(r, key, "rpm", RPM) == 1
    resp = post(proxy, key, body(89, fake_usage=250))  # 150 beyond the estimate: debited
    assert resp.status_code == 200
    assert used_by(r, key, "tpm", TPM) == 280
    assert used_by(r, key, "rpm", RPM) == 2  # the request layer is never settled


def test_fifty_concurrent_requests_are_charged_at_most_the_budget_and_one_overrun(proxy, r):
    """Estimates of 100, usages of 40 (60 refunded each), one request using 300 (an overrun
    of 200): the tokens charged stay within TPM + 200, and the refunds admit more requests
    than TPM / estimate."""
    key = new_key()
    overrun = 300 - 100

    def one(i):
        time.sleep(i * 0.015)  # staggered: several in flight at once, settling as others start
        # The overrunning request first: on a loaded machine the later ones may run before a
        # request started a few ms after them, and spend the budget it was meant to find.
        return post(proxy, key, body(89, fake_usage=300 if i == 0 else 40))

    with ThreadPoolExecutor(max_workers=50) as pool:
        replies = list(pool.map(one, range(50)))
    codes = [resp.status_code for resp in replies]
    assert set(codes) == {200, 429}, codes
    admitted = [resp for resp in replies if resp.status_code == 200]
    charged = sum(resp.json()["usage"]["total_tokens"] for resp in admitted)
    assert codes[0] == 200  # the overrunning request was admitted
    assert charged <= TPM + overrun, (charged, codes)
    # What the server charged is what the upstream used (past TPM, the key is in debt).
    assert used_by(r, key, "tpm", TPM) == min(charged, TPM)
    assert len(admitted) > TPM // 100, codes  # the refunds let more through
    assert used_by(r, key, "rpm", RPM) == len(admitted)  # denials spent no request either
    denied = next(resp for resp in replies if resp.status_code == 429)
    retry = int(denied.headers["Retry-After"])
    assert 1 <= retry <= 60
    assert denied.headers["RateLimit-Policy"] == '"tokens";q=1000;w=60'
    assert denied.headers["RateLimit"].startswith('"tokens";r=')
    assert denied.json()["error"]["type"] == "tokens"
    assert denied.json()["error"]["code"] == "rate_limit_exceeded"


def test_estimates_that_cover_the_usage_never_overrun(proxy, r):
    """Fifty requests at once, each estimated at 100 and using all of it: exactly TPM / 100
    are admitted and exactly TPM tokens charged."""
    key = new_key()
    start = threading.Barrier(50)

    def one(_):
        start.wait()
        return post(proxy, key, body(89, fake_usage=100))

    with ThreadPoolExecutor(max_workers=50) as pool:
        replies = list(pool.map(one, range(50)))
    admitted = [resp for resp in replies if resp.status_code == 200]
    assert len(admitted) == TPM // 100
    assert sum(resp.json()["usage"]["total_tokens"] for resp in admitted) == TPM
    assert used_by(r, key, "tpm", TPM) == TPM


def test_a_debt_denies_the_key_until_paid_off(proxy, r):
    key = new_key()
    assert post(proxy, key, body(89, fake_usage=TPM + 200)).status_code == 200  # 200 in debt
    resp = post(proxy, key, body(1))  # a request of 12 tokens: denied, the debt first
    assert resp.status_code == 429
    assert resp.headers["RateLimit"].startswith('"tokens";r=0;')
    assert 1 <= int(resp.headers["Retry-After"]) <= 60


def test_the_request_layer_denies_past_rpm(proxy, r):
    key = new_key()
    codes = [post(proxy, key, body(1, fake_usage=1)).status_code for _ in range(RPM + 1)]
    assert codes == [200] * RPM + [429]
    resp = post(proxy, key, body(1))
    assert resp.status_code == 429
    assert resp.json()["error"]["type"] == "requests"
    assert resp.headers["RateLimit-Policy"] == f'"requests";q={RPM};w=60'
    assert resp.headers["RateLimit"].startswith('"requests";r=0;t=')
    assert 1 <= int(resp.headers["Retry-After"]) <= 60
    assert used_by(r, key, "tpm", TPM) == RPM  # denied requests reserved no tokens


def test_an_upstream_failure_refunds_the_reservation(proxy, upstream, r):
    key = new_key()
    resp = post(proxy, key, body(89, fake_status=503))
    assert resp.status_code == 502
    assert resp.json()["error"]["type"] == "api_error"
    assert used_by(r, key, "tpm", TPM) == 0  # all 100 back
    assert used_by(r, key, "rpm", RPM) == 1  # the request still counts


def test_requests_refused_before_any_limit(proxy, r):
    key = new_key()
    assert requests.post(f"{proxy}/v1/chat/completions", json=body(1),
                         timeout=5).status_code == 401
    # A key the proxy does not serve is refused: a client cannot mint itself a new budget.
    unknown = post(proxy, "sk-made-up", body(1))
    assert unknown.status_code == 401
    assert unknown.json()["error"]["code"] == "invalid_api_key"
    assert post(proxy, key, {"model": "m"}).status_code == 400  # no messages
    too_big = post(proxy, key, body(TPM))
    assert too_big.status_code == 400
    assert too_big.json()["error"]["code"] == "context_length_exceeded"
    assert post(proxy, key, dict(body(1), stream=True)).status_code == 400
    assert r.dbsize() == 0


def test_a_full_redis_is_a_503_and_spends_nothing(proxy, r):
    """OOM (maxmemory reached) means the limiter cannot decide right now: 503, which clients
    and load balancers retry, never a 500 and never a request let through unchecked."""
    key = new_key()
    app = load_app()
    # The library loaded where it serves (by a read, which writes nothing), so that the proxy's
    # call is refused for the memory, not for a load.
    assert app.redis_rl.Limiter(r).peek(f"rl:{{{key}}}:tpm:{key}", app.TOKENS, cost=0).allowed
    r.config_set("maxmemory", "1")
    try:
        resp = post(proxy, key, body(89))
    finally:
        r.config_set("maxmemory", "0")
    assert resp.status_code == 503
    assert resp.json()["error"]["code"] == "limiter_unavailable"
    assert r.dbsize() == 0
    assert post(proxy, key, body(89)).status_code == 200


def test_an_organisations_keys_share_its_monthly_budget_till_the_renewal(proxy, r):
    """The month's layer is the organisation's: one key's usage spends it for the other, whose
    minute is its own, and its denial says when the month renews (the 1st, 00:00 UTC)."""
    first, second = SHARED
    assert post(proxy, first, body(89, fake_usage=MONTHLY - 100)).status_code == 200  # a debt
    assert post(proxy, second, body(89, fake_usage=100)).status_code == 200  # the last 100
    before = time.time()
    denied = post(proxy, second, body(1))
    after = time.time()
    assert denied.status_code == 429
    assert denied.json()["error"]["type"] == "budget"
    assert denied.json()["error"]["code"] == "insufficient_quota"
    now = datetime.fromtimestamp(before, timezone.utc)
    start = datetime(now.year, now.month, 1, tzinfo=timezone.utc)
    end = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=timezone.utc)
    days = (end - start).days
    assert denied.headers["RateLimit-Policy"] == f'"budget";q={MONTHLY};w={days * 86_400}'
    assert denied.headers["RateLimit"].startswith('"budget";r=0;t=')
    retry = int(denied.headers["Retry-After"])
    assert end.timestamp() - after <= retry <= end.timestamp() - before + 1
    assert r.get("rl:{org-shared}:month").split(":")[3] == str(MONTHLY)
