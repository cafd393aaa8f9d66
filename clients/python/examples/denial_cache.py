import os

import redis

import redis_rl
from redis_rl import policy

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
# On by default (DenialCache(max_entries=10_000)); denial_cache=False turns it off.
limiter = redis_rl.Limiter(client, denial_cache=redis_rl.DenialCache(max_entries=1_000))
search = policy.fixed(2, "1h", name="search")

print([limiter.decide("rl:search:bob", search).allowed for _ in range(3)])  # [True, True, False]
# The server denied bob until the hour ends: until then his calls are denied here, the same
# decision as the server's (Retry-After counting down), without a call to Redis.
d = limiter.decide("rl:search:bob", search)
print(d.allowed, d.cached, d.remaining, d.retry_after > 0)  # False True 0 True
print(limiter.decide("rl:search:alice", search).allowed)  # True

# Every decision counted, per layer (the policy's name) and result.
print(limiter.metrics.snapshot()["search"]["over_limit_with_local_cache"])  # 1
print(limiter.metrics.snapshot()["search"]["within_limit"])  # 3
text = limiter.metrics.prometheus()
print(text.splitlines()[2])  # rl_decisions_total{layer="search",result="within_limit"} 3
