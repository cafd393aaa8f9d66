import os

import redis

import redis_rl
from redis_rl import policy

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
limiter = redis_rl.Limiter(client)

# The seed's three layers, decided together by RL.ALL: a request denied by one spends nothing
# from the others. (On Redis Cluster the keys of one call need one hash tag: docs/python.md.)
layers = [
    ("rl:ip:203.0.113.7", policy.gcra(100, "1m", burst=20, name="ip")),
    ("rl:key:acme", policy.token_bucket(60, 60, "1h", name="plan")),
    ("rl:ep:acme:export", policy.fixed(5, "1h", name="export")),
]
for _ in range(5):
    limiter.all(layers)
d = limiter.all(layers)
print(d.allowed, d.binding.policy.name)  # False export
print([layer.remaining for layer in d.layers])  # [15, 55, 0]
print(d.binding.ietf_headers()["RateLimit-Policy"])  # "export";q=5;w=3600
