"""redis_rl: the `rl` rate limiter's commands over redis-py, on the module or the Functions
library, with typed decisions and their HTTP headers.

    import redis, redis_rl
    limiter = redis_rl.Limiter(redis.Redis())
    d = limiter.gcra("user:42", 10, "1s", burst=5)
    d.allowed, d.remaining, d.headers()

Errors (errors.py): every case a caller handles is a `RateLimitError`: ConfigurationError,
ServerUnavailableError, LibraryUnavailableError, ForeignKeyError, each also the error it was
before (a ValueError; redis-py's error, kept as its `__cause__`); ReservationSettledError, a
reservation settled twice.

Where the `limits` package is installed, importing redis_rl also registers its `limits`
storages (`rl+redis://`, `rl+rediss://`, `rl+redis+unix://`, `rl+redis+cluster://` and their
`async+` twins: limits_storage.py, limits_aio.py), so Flask-Limiter and slowapi take them as
`storage_uri`. limits has no plugin entry points: its storages register when their classes are
defined, so the import is what registers them.
"""

from .aio import AsyncLimiter
from .cache import DenialCache
from .decision import LIBRARY, MODULE, AllDecision, Decision, TopEntry
from .errors import (
    ConfigurationError,
    ForeignKeyError,
    LibraryUnavailableError,
    RateLimitError,
    ReservationSettledError,
    ServerUnavailableError,
)
from .insurance import Insurance
from .limiter import Limiter
from .metrics import Metrics
from .policy import Policy, fixed, gcra, leaky, quota, sliding, sliding_log, token_bucket
from .reservation import AsyncReservation, Reservation

__version__ = "0.1.0"

try:  # registers the `limits` storages' schemes, where limits is installed
    from . import limits_aio, limits_storage  # noqa: F401
except ModuleNotFoundError as err:  # no limits: the package is the limiters alone
    if (err.name or "").split(".")[0] != "limits":
        raise

__all__ = [
    "LIBRARY", "MODULE", "AllDecision", "AsyncLimiter", "AsyncReservation",
    "ConfigurationError", "Decision", "DenialCache", "ForeignKeyError", "Insurance",
    "LibraryUnavailableError", "Limiter", "Metrics", "Policy", "RateLimitError", "Reservation",
    "ReservationSettledError",
    "ServerUnavailableError", "TopEntry", "fixed", "gcra", "leaky", "quota", "sliding",
    "sliding_log",
    "token_bucket",
]
