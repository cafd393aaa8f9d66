import os

import redis

r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
allowed, limit, remaining, retry_after_ms, reset_after_ms = r.execute_command(
    "RL.GCRA", "user:42", 10, "1s", "BURST", 5
)
print(allowed, limit, remaining, retry_after_ms, reset_after_ms)  # 1 5 4 0 100
