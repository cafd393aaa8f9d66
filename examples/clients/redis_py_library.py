import os

import redis

r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
with open(os.environ.get("RL_LIBRARY", "functions/rl.lua")) as f:
    r.function_load(f.read(), replace=True)  # once per deploy: it persists and replicates
allowed, limit, remaining, retry_after_ms, reset_after_ms = r.fcall(
    "rl_gcra", 1, "user:43", 10, "1s", "BURST", 5
)
print(allowed, limit, remaining, retry_after_ms, reset_after_ms)  # 1 5 4 0 100
