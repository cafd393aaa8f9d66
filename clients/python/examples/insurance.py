import logging
import os

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import redis_rl
from redis_rl import policy

logging.basicConfig(format="%(levelname)s %(message)s")  # the two switches, on stderr
url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
search = policy.fixed(8, "1h", name="search")  # 8 an hour, across 4 processes

# Off by default. With it, while Redis cannot decide, this process admits its share: 8 / 4.
insured = redis_rl.Limiter(redis.Redis.from_url(url), insurance=redis_rl.Insurance(nodes=4))
print(insured.decide("rl:search:bob", search).insured)  # False

# Redis out of reach (here a port nothing listens on; no client-side retries, so each call
# fails at once): the process decides alone, 2 an hour for bob, then the same 429 answer.
down = redis.Redis(port=1, retry=Retry(NoBackoff(), 0))
limiter = redis_rl.Limiter(down, insurance=redis_rl.Insurance(nodes=4))
got = [limiter.decide("rl:search:bob", search) for _ in range(3)]
print([d.allowed for d in got], [d.insured for d in got])  # [True, True, False] [True, True, True]
print(got[2].limit, got[2].remaining, got[2].retry_after)  # 2 0 3600
print(limiter.metrics.snapshot()["search"]["insured_within_limit"])  # 2
print(limiter.metrics.snapshot()["search"]["insured_over_limit"])  # 1

# A policy named on the server has no parameters here: not insured, unavailable as before.
try:
    limiter.limit("rl:search:bob", "free")
except redis_rl.ServerUnavailableError:
    print("unavailable")  # unavailable
