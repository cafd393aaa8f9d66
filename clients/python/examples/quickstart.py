import os

import redis

import redis_rl

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
limiter = redis_rl.Limiter(client)

d = limiter.gcra("user:42", 10, "1s", burst=5)  # 10 per second, bursts of 5
print(d.allowed, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms)  # True 5 4 0 100
headers = d.all_headers("api")  # X-RateLimit-*, RateLimit-Policy, RateLimit (+ Retry-After)
print(headers["X-RateLimit-Remaining"], headers["X-RateLimit-Reset"])  # 4 1
print(headers["RateLimit-Policy"])  # "api";q=10;w=1
print(headers["RateLimit"])  # "api";r=4;t=1
