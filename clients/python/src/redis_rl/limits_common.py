"""What the `limits` storages (limits_storage.py, limits_aio.py) share: their key prefix, the
policies a strategy's calls become, the windows a strategy reads back, computed from the
commands' replies, and the errors that are a configuration's. Nothing here talks to a server.

A strategy hands the storage the limit for two of its three strategies:

- moving window: `acquire_entry(key, limit, expiry, amount)` is `RL.SLIDINGLOG key limit
  <expiry>s COST amount`, decided and written in the server in one call;
- sliding window counter: `acquire_sliding_window_entry(key, limit, expiry, amount)` is
  `RL.SLIDING key limit <expiry>s COST amount`, likewise;
- fixed window: the strategy calls `incr` and compares the count with the limit itself, so the
  storage never sees the limit; the storages keep limits' own `incr` (its script) for it.

`get_moving_window` and `get_sliding_window` (what `test()` and `get_window_stats()` read) are
answered from `RL.PEEK` replies: they write nothing and re-implement no limiter here.
"""

from __future__ import annotations

import time
from typing import Union

from limits.errors import ConfigurationError

from . import _facts, errors, policy
from .decision import Decision
from .policy import Policy

#: The default key prefix. limits' own Redis storage uses `LIMITS`; the module's states are
#: other values (a sorted set of `<ns>:<cost>:<sum>` members, `sliding:...` strings), so a
#: service switched over starts from fresh counters under this prefix instead of failing on
#: keys the commands did not write.
PREFIX = "LIMITS_RL"

#: The largest count the commands take (`limit`, `COST`): 10^12.
MAX_COUNT = _facts.MAX_COUNT

#: A moving window as limits reads it: (the oldest live entry's time, units in the window).
MovingWindow = tuple[float, int]
#: A sliding window counter as limits reads it: (previous count, its TTL, current count,
#: its TTL), TTLs in seconds.
SlidingWindow = tuple[int, float, int, float]
#: A window, or the cost of the next peek that completes it.
Step = Union[MovingWindow, int]


def strip_scheme(uri: str, prefix: str = "") -> str:
    """`[prefix]rl+redis://...` as redis-py (or limits' own storage) takes it: the `rl+`
    after `prefix` removed (`rl+redis+unix://` becomes limits' `redis+unix://`)."""
    head = f"{prefix}rl+"
    if not uri.startswith(head):
        raise ConfigurationError(f"not an rl storage uri: {uri!r} (expected {head}redis://...)")
    return prefix + uri[len(head):]


def window(expiry: int) -> str:
    """The commands' duration for a strategy's expiry (whole seconds)."""
    return f"{int(expiry)}s"


def moving(limit: int, expiry: int) -> Policy:
    return policy.sliding_log(int(limit), window(expiry))


def sliding(limit: int, expiry: int) -> Policy:
    return policy.sliding(int(limit), window(expiry))


def sliding_key(key: str) -> str:
    """The sliding window counter's key (before the prefix): limits' own current-window key
    name, so a limit's three strategies never share a key. The module keeps both windows'
    counts in this one key."""
    return f"{{{key}}}"


def configuration_error(err: Exception, command: str, key: str, limit: int,
                        expiry: int, amount: int) -> Exception:
    """The error to raise for the limiter's error `err`: limits' ConfigurationError (from
    `err`) when the server refused the limit, window or cost (`redis_rl.ConfigurationError`:
    a limit above RL.SLIDINGLOG's cap, the server's `sliding-log-max-limit`, 100,000 by
    default), as limits' own storages raise for a configuration; else `err` itself (the
    limiter's ServerUnavailableError, ForeignKeyError ..., each a redis-py error too)."""
    if not isinstance(err, errors.ConfigurationError):
        return err
    return ConfigurationError(
        f"{command} refused {amount} of {limit} per {expiry}s for {key!r}: {err}. The moving "
        "window's limit is capped by the server's sliding-log-max-limit (100,000 by default; "
        "the sliding window counter takes up to 10^12); counts are 1 to 10^12, windows 1 ms "
        "to 3650 days.")


def cost_arg(amount: object) -> int:
    """limits' `cost` as a whole number: an int, or a float with a whole value (limits' own
    scripts read `1.0` as 1). Anything else (a bool, NaN, an infinity, `1.5`, text) is a
    ConfigurationError naming it: limits' own storage raises redis-py's error for some, and
    for others admits and writes what no later call can read (its sliding window counter
    stores `nan`, then fails every hit of that key until it expires)."""
    if isinstance(amount, int) and not isinstance(amount, bool):
        return amount
    if isinstance(amount, float) and amount.is_integer():
        return int(amount)
    raise ConfigurationError(f"cost must be a whole number (an int), not {amount!r}")


def settled(limit: int, amount: int) -> bool | None:
    """The hit's answer where limits' own scripts give it without counting, else None (the
    command decides). Their first test is `amount > limit`: denied, so a limit of 0 admits
    no positive cost and a cost above the commands' 10^12 is a denial, not an error. A cost
    of 0 is admitted and changes nothing; so is a negative cost on a limit below 1, which no
    positive cost can reach either way."""
    if amount > limit:
        return False
    if amount == 0 or (amount < 0 and limit < 1):
        return True
    return None


def refund(amount: int) -> int:
    """The `REFUND n` of a negative cost on the sliding window counter (limits' own script
    adds it to the current window's count): at most 10^12, as no count is larger and a
    refund never goes below an idle counter."""
    return min(-amount, MAX_COUNT)


def moving_step(limit: int, expiry: int, d: Decision, cost: int) -> Step:
    """From `RL.PEEK SLIDINGLOG key limit window COST cost`, the window limits reads, or the
    cost of the next peek. Invariants: a peek at cost c is denied iff count + c > limit, and
    then `retry_after_ms` is the time until enough of the oldest entries leave; so denied at
    cost limit - count + 1 it is the time until the oldest entry leaves, and the window's
    start (that entry's time) is now + retry - expiry, as limits' own storage reports it."""
    now = time.time()
    if not d.allowed and d.retry_after_ms >= 0:
        return now + d.retry_after_ms / 1000 - expiry, limit - d.remaining
    count = max(0, limit - d.remaining - cost)
    if count == 0:
        return now, 0  # empty: the window starts now, as for limits' own storage
    if cost == 1:
        return d.remaining + 2  # = limit - count + 1: denied, and says when the oldest leaves
    return now, count  # entries left between the two peeks: the start is unknown, say now


#: The first peek's cost for a moving window.
MOVING_FIRST_COST = 1


def sliding_used(d: Decision) -> int:
    """Units in use from `RL.PEEK SLIDING key 10^12 window COST 0`: the module's estimate
    `previous * (1 - elapsed/window) + current`, rounded up (its `remaining` is the limit less
    that). Admission (estimate + n <= limit) is then used + n <= limit, exactly."""
    return MAX_COUNT - d.remaining


def sliding_window(used: int, d: Decision | None, expiry: int) -> SlidingWindow:
    """What limits reads from `used` and `RL.PEEK SLIDING key <used> window COST 1` (`d`):
    denied at that limit, `retry_after_ms` is the time until the estimate drops by one unit.

    The strategy computes `previous * previous_ttl / expiry + current` (here `used`, so
    `test()` and `remaining` are the module's) and resets at `current_ttl % expiry` from now:
    the time until a unit frees (limits' own storage's meaning). A wait of a window or more
    (the whole limit spent in the current window) cannot be told through that modulo and is
    reported as just under one window."""
    if used <= 0:
        return 0, 0.0, 0, 0.0
    if d is None or d.allowed:  # the estimate fell between the two peeks
        return 0, 0.0, used if d is None else max(0, used - d.remaining - 1), 0.0
    ttl = min(d.retry_after_ms / 1000, expiry * (1 - 1e-6))
    return 0, 0.0, used - d.remaining, ttl
