import os

import redis

import redis_rl
from redis_rl import policy

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
limiter = redis_rl.Limiter(client)
tokens = policy.token_bucket(1000, 1000, "1h", name="tokens")  # a token every 3.6 s

# Reserve an estimate, settle at the actual cost: the difference goes back (REFUND) ...
d, reservation = limiter.reserve("tpm:acme", tokens, 300)
print(d.allowed, d.remaining)  # True 700
print(reservation.settle(120).remaining)  # 880
try:
    reservation.settle(120)
except redis_rl.ReservationSettledError as err:  # a reservation settles once
    print(err)  # this reservation is settled already

# ... or is charged (DEBIT), whatever is left: 780 left after the estimate, and 1,000 more
# is 220 in debt, paid off (with one token for the next request) in 221 * 3.6 s.
_, reservation = limiter.reserve("tpm:acme", tokens, 100)
d = reservation.settle(1100)
print(d.allowed, d.remaining, d.retry_after_ms // 1000)  # True 0 795
print(limiter.decide("tpm:acme", tokens).allowed)  # False

# A block that raises before settling leaves the estimate spent, sending nothing.
_, reservation = limiter.reserve("tpm:globex", tokens, 50)
try:
    with reservation:
        raise TimeoutError("the upstream did not answer")
except TimeoutError:
    print(reservation.settled, limiter.peek("tpm:globex", tokens, cost=0).remaining)  # True 950

# One RL.ALL: the request layer spends its own cost and is never settled; the token layer
# reserves the estimate and is settled.
layers = [("{initech}:rpm", policy.sliding_log(60, "1m", name="requests"), 1),
          ("{initech}:tpm", tokens)]
both, reservation = limiter.reserve_all(layers, 400)
print([layer.remaining for layer in both.layers])  # [59, 600]
print([layer.remaining for layer in reservation.settle(250).layers])  # [750]

# debit charges after the fact, never denied: 750 left, 800 more is 50 in debt.
print(limiter.debit("{initech}:tpm", tokens, 800).remaining)  # 0
