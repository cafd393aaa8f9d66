"""An HTTP gateway that rate-limits every request with ONE `RL.ALL` call.

Three layers, decided together (a request denied by one spends nothing from the others):
  - per client IP:      GCRA 100/s, bursts of 20          key rl:ip:<ip> (IPv6: its /56)
  - per API key (plan): token bucket, free 60/min, pro 600/min   key rl:key:<api_key>
  - per costly endpoint: /search 10/min, /export 5/min    key rl:ep:<api_key>:<endpoint>

Run: REDIS_URL=redis://127.0.0.1:6379/0 PORT=8000 python app.py
Set TRUST_PROXY=1 behind one reverse proxy, to take the client IP from X-Forwarded-For.
"""

import ipaddress
import os

import redis
from flask import Flask, g, jsonify, request
from werkzeug.middleware.proxy_fix import ProxyFix

# Demo API keys and their plans; a real gateway looks them up in its own store.
API_KEYS = {"free-key": "free", "pro-key": "pro"}
PLANS = {"free": 60, "pro": 600}  # requests per minute, and the bucket's capacity
ENDPOINTS = {"search": 10, "export": 5}  # the expensive ones: requests per minute per API key

app = Flask(__name__)
app.wsgi_app = ProxyFix(app.wsgi_app, x_for=int(os.environ.get("TRUST_PROXY", "0")))
r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


def ceil_seconds(ms):
    return -(-ms // 1000)


def client_network(address):
    """Whose IP limit a request spends: an IPv4 address itself (also when IPv4-mapped), an
    IPv6 address's /56, since every IPv6 customer holds at least a /64 and could otherwise
    take a fresh counter per address."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return address
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    return ipaddress.ip_network(f"{ip}/56", strict=False).compressed


@app.before_request
def rate_limit():
    api_key = request.headers.get("X-API-Key", "")
    plan = API_KEYS.get(api_key)
    if plan is None:  # (a real gateway would also rate-limit these, per IP, against key guessing)
        return jsonify(error="unknown or missing API key"), 401

    # One layer per key: (key, clause, policy name, quota, window in seconds). The quota is the
    # sustained rate; the reply's `limit` is what passes at once (the IP layer: 100/s, 20 at once).
    cap = PLANS[plan]
    layers = [
        (f"rl:ip:{client_network(request.remote_addr)}", ["GCRA", 100, "1s", "BURST", 20], "ip", 100, 1),
        (f"rl:key:{api_key}", ["TOKENBUCKET", cap, cap, "1m"], plan, cap, 60),
    ]
    endpoint = request.path.strip("/")
    if endpoint in ENDPOINTS:
        n = ENDPOINTS[endpoint]
        layers.append((f"rl:ep:{api_key}:{endpoint}", ["FIXED", n, "1m"], endpoint, n, 60))

    # RL.ALL numkeys key... clause...: all layers are decided first and written only if all
    # admit. The reply: the binding layer's five integers, then every layer's five.
    args = [len(layers)] + [key for key, *_ in layers]
    for _, clause, *_ in layers:
        args += clause
    *binding, per_layer = r.execute_command("RL.ALL", *args)
    allowed, limit, remaining, retry_ms, reset_ms = binding

    # Name the binding layer in the IETF headers: the first layer whose reply is the binding one.
    _, _, name, quota, window = layers[[list(x) for x in per_layer].index(binding)]
    reset = ceil_seconds(reset_ms)
    g.rate_headers = {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset),
        # draft-ietf-httpapi-ratelimit-headers: the policy, then what is left of it.
        "RateLimit-Policy": f'"{name}";q={quota};w={window}',
        "RateLimit": f'"{name}";r={remaining};t={reset}',
    }
    if not allowed:
        # COST is 1 and every limit is at least 1, so retry_ms is never -1 ("never") here.
        headers = {**g.rate_headers, "Retry-After": str(ceil_seconds(retry_ms))}
        return jsonify(error="rate limited", layer=name), 429, headers
    return None  # admitted: go on to the view


@app.after_request
def add_rate_headers(response):
    # Admitted requests carry the same headers as denied ones (the 429 already has them).
    for header, value in g.get("rate_headers", {}).items():
        response.headers.setdefault(header, value)
    return response


@app.get("/hello")
def hello():
    return jsonify(message="hello")


@app.get("/search")
def search():
    return jsonify(results=[], query=request.args.get("q", ""))


@app.get("/export")
def export():
    return jsonify(export="queued")


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
