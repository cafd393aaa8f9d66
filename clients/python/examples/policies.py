import os

import redis

import redis_rl
from redis_rl import policy

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
# The operator defines the limits once, on every node (RL.POLICY SET is administrative).
client.execute_command("RL.POLICY", "SET", "free", "SLIDING", "100", "1m")
client.execute_command("RL.POLICY", "SET", "beta", "FIXED", "1", "1h", "SHADOW")
limiter = redis_rl.Limiter(client)

d = limiter.limit("rl:user:42", "free")  # RL.LIMIT rl:user:42 free
print(d.allowed, d.limit, d.remaining, d.policy)  # True 100 99 free
print(d.ietf_headers()["RateLimit-Policy"])  # "free";q=100
print(limiter.peek("rl:user:42", "free", cost=3).remaining)  # 96

# A SHADOW policy rehearses a limit: its denial is admitted, and `shadowed`.
first, second = limiter.limit("rl:beta:42", "beta"), limiter.limit("rl:beta:42", "beta")
print(first.shadowed, second.allowed, second.shadowed)  # False True True

# Named and spelt-out layers in one RL.ALL: the shadow layer denies nothing.
d = limiter.all([("rl:ip:203.0.113.7", policy.fixed(100, "1h")), ("rl:beta:42", "beta")])
print(d.allowed, d.shadowed, [layer.remaining for layer in d.layers])  # True (1,) [99, 0]

try:
    limiter.limit("rl:user:42", "gold")
except redis_rl.ConfigurationError as err:  # the server's: an unknown policy
    print(err)  # no such policy 'gold'
try:
    limiter.limit("rl:user:42", "free plan")
except redis_rl.ConfigurationError as err:  # refused before sending
    print(err)  # a policy name is 1 to 64 of A-Z, a-z, 0-9 and _ . : -: 'free plan'
