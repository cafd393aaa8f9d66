import os

import redis

import redis_rl

client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
limiter = redis_rl.Limiter(client)

try:
    limiter.fixed("plan:free", 0, "1m")  # a limit of 0: the server refuses it
except redis_rl.ConfigurationError as err:  # also a ValueError, and here a redis.ResponseError
    print(type(err).__name__, isinstance(err, ValueError))  # ConfigurationError True
    print(err)  # limit must be an integer from 1 to 1000000000000

client.set("user:42:name", "Ada")  # not a limiter's key: refused, and left as it is
try:
    limiter.gcra("user:42:name", 10, "1s")
except redis_rl.ForeignKeyError as err:
    print(err.holds, client.get("user:42:name"))  # value b'Ada'

down = redis_rl.Limiter(redis.Redis(port=1, retry=None))  # nothing listens on port 1
try:
    down.gcra("user:42", 10, "1s")
except redis_rl.RateLimitError as e:  # the base of every case
    print(type(e).__name__, type(e.__cause__).__name__)  # ServerUnavailableError ConnectionError
