"""INFO rl_policies as Prometheus series: one per policy and counter, labelled by the
policy's name (a `:` in a name is written %3A in INFO)."""

import os

import redis

r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
for field, counters in sorted(r.info("rl_policies").items()):
    policy = field.removeprefix("rl_policy_").replace("%3A", ":")
    for counter, value in counters.items():
        print(f'rl_policy_{counter}_total{{policy="{policy}"}} {value}')
