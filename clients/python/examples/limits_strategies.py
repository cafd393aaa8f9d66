import os

from limits import parse
from limits.storage import storage_from_string
from limits.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

import redis_rl  # noqa: F401  (registers rl+redis:// with limits)

url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
storage = storage_from_string("rl+" + url)  # keys under LIMITS_RL:
three_a_minute = parse("3/minute")

moving = MovingWindowRateLimiter(storage)  # RL.SLIDINGLOG, one call per hit
print([moving.hit(three_a_minute, "alice") for _ in range(4)])  # [True, True, True, False]
print(moving.get_window_stats(three_a_minute, "alice").remaining)  # 0
print(moving.test(three_a_minute, "bob"), moving.hit(three_a_minute, "bob", cost=2))  # True True

sliding = SlidingWindowCounterRateLimiter(storage)  # RL.SLIDING, one call per hit
print([sliding.hit(three_a_minute, "alice") for _ in range(4)])  # [True, True, True, False]

fixed = FixedWindowRateLimiter(storage)  # limits' own INCR script: the strategy compares
print([fixed.hit(three_a_minute, "carol") for _ in range(4)])  # [True, True, True, False]
