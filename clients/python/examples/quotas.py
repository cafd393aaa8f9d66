"""Calendar quotas (RL.QUOTA): a plan's units per day, week or month, renewing at a local wall
time in the customer's zone: "3 exports a month, renewing on the 15th at midnight in Paris"."""

import os

import redis

import redis_rl
from redis_rl import policy

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
limiter = redis_rl.Limiter(client)

plan = policy.quota(3, "MONTH", tz="Europe/Paris", anchor="2026-01-15T00:00", name="exports")
print([limiter.decide("rl:exports:org9", plan).remaining for _ in range(3)])  # [2, 1, 0]
d = limiter.decide("rl:exports:org9", plan)
# Denied until the renewal, the 15th at 00:00 in Paris: Retry-After and X-RateLimit-Reset.
print(d.allowed, d.retry_after_ms == d.reset_after_ms > 0)  # False True
# RateLimit-Policy's w is the current period's length in whole days: 28 to 31 for a month.
w = int(d.ietf_headers()["RateLimit-Policy"].split(";w=")[1])
print(w in (28 * 86_400, 29 * 86_400, 30 * 86_400, 31 * 86_400))  # True
print(policy.quota_period_s(("MONTH", 31), 1_772_233_200_000))  # 2419200

# A quota is a layer as any other: a daily quota beside a per-minute rate, in one RL.ALL.
layers = [("rl:{org9}:minute", policy.sliding_log(10, "1m", name="minute")),
          ("rl:{org9}:day", policy.quota(2, "day", tz="+05:30", name="day"))]
print([limiter.all(layers).allowed for _ in range(3)])  # [True, True, False]
print(limiter.all(layers).binding.policy_name)  # day

# And a monthly token budget reserved at an estimate, settled at what was used.
budget = policy.quota(10_000, "MONTH", name="budget")
decision, reservation = limiter.reserve_all([("rl:{org9}:month", budget)], 500)
print(reservation.settle(420).binding.remaining)  # 9580
client.close()
