"""redis_rl: the `rl` rate limiter's commands over redis-py, on the module or the Functions
library, with typed decisions and their HTTP headers.

    import redis, redis_rl
    limiter = redis_rl.Limiter(redis.Redis())
    d = limiter.gcra("user:42", 10, "1s", burst=5)
    d.allowed, d.remaining, d.headers()
"""

from .aio import AsyncLimiter
from .decision import LIBRARY, MODULE, AllDecision, Decision
from .limiter import Limiter
from .policy import Policy, fixed, gcra, leaky, sliding, sliding_log, token_bucket

__version__ = "0.1.0"

__all__ = [
    "LIBRARY", "MODULE", "AllDecision", "AsyncLimiter", "Decision", "Limiter", "Policy",
    "fixed", "gcra", "leaky", "sliding", "sliding_log", "token_bucket",
]
