"""`limits` storages on the rl commands: `rl+redis://`, `rl+rediss://`, `rl+redis+unix://`
(`RlRedisStorage`) and `rl+redis+cluster://` (`RlRedisClusterStorage`), registered with
limits when this module is imported (`import redis_rl` does it where limits is installed:
limits registers a storage class's STORAGE_SCHEME when the class is defined).

They are limits' own `RedisStorage` and `RedisClusterStorage` (the URI, less `rl+`, and the
storage options go to redis-py as there) whose moving window and sliding window counter are
the commands `RL.SLIDINGLOG` and `RL.SLIDING`, through a `redis_rl.Limiter` (the module, or
the Functions library where the server has no module: limits_common.py says what maps to
what). The fixed window stays limits' own (`incr`: the strategy compares the count itself).
"""

from __future__ import annotations

import time
from typing import Any

from limits.storage import RedisClusterStorage, RedisStorage

from . import limits_common as common
from .decision import Decision
from .errors import ConfigurationError as RefusedError
from .limiter import Limiter
from .policy import Policy


class _RlCommands:
    """The moving window and sliding window counter methods, over `self.limiter`. Mixed in
    before limits' storage class, so these override its scripts."""

    limiter: Limiter
    prefixed_key: Any
    get_connection: Any

    def _decide(self, command: str, key: str, p: Policy, limit: int, expiry: int,
                amount: int) -> Decision:
        """`COST amount`, or for a negative amount `REFUND -amount` (`common.refund`)."""
        try:
            if amount < 0:
                return self.limiter.refund(key, p, common.refund(amount))
            return self.limiter.decide(key, p, cost=amount)
        except RefusedError as err:  # the server's refusal: limits' ConfigurationError
            raise common.configuration_error(err, command, key, limit, expiry, amount) from err

    def _peek(self, command: str, key: str, p: Policy, limit: int, expiry: int,
              cost: int) -> Decision:
        try:
            return self.limiter.peek(key, p, cost=cost)
        except RefusedError as err:  # the server's refusal: limits' ConfigurationError
            raise common.configuration_error(err, command, key, limit, expiry, cost) from err

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        """limits' own `incr` (the fixed window's), its cost checked first."""
        return super().incr(key, expiry, amount=common.cost_arg(amount))  # type: ignore[misc]

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """`RL.SLIDINGLOG key limit <expiry>s COST amount`: admitted and written at once. What
        limits' own script settles without counting is answered without a call, and so is a
        negative cost (its script admits it and pushes nothing)."""
        amount = common.cost_arg(amount)
        settled = common.settled(limit, amount)
        if settled is None and amount < 0:
            settled = True  # limits' own script admits it and pushes nothing
        if settled is not None:
            return settled
        key = self.prefixed_key(key)
        p = common.moving(limit, expiry)
        return self._decide("RL.SLIDINGLOG", key, p, limit, expiry, amount).allowed

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        """(the oldest live entry's time, units in the window), from one or two peeks; for a
        limit below 1 (which admits nothing), an empty window, as limits' own script finds."""
        if limit < 1:
            return time.time(), 0
        key = self.prefixed_key(key)
        p = common.moving(limit, expiry)
        cost = common.MOVING_FIRST_COST
        while True:
            d = self._peek("RL.PEEK SLIDINGLOG", key, p, limit, expiry, cost)
            step = common.moving_step(limit, expiry, d, cost)
            if not isinstance(step, int):
                return step
            cost = step

    def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int,
                                     amount: int = 1) -> bool:
        """`RL.SLIDING key limit <expiry>s COST amount`: admitted and written at once; a
        negative cost is `REFUND` (admitted), as limits' own script adds it to the count.
        What that script settles without counting is answered without a call."""
        amount = common.cost_arg(amount)
        settled = common.settled(limit, amount)
        if settled is not None:
            return settled
        key = self.prefixed_key(common.sliding_key(key))
        p = common.sliding(limit, expiry)
        return self._decide("RL.SLIDING", key, p, limit, expiry, amount).allowed

    def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        """The module's estimate as the current count, and when a unit frees (two peeks)."""
        key = self.prefixed_key(common.sliding_key(key))
        peek = "RL.PEEK SLIDING"
        first = self._peek(peek, key, common.sliding(common.MAX_COUNT, expiry), common.MAX_COUNT,
                           expiry, 0)
        used = common.sliding_used(first)
        second = None
        if used > 0:
            second = self._peek(peek, key, common.sliding(used, expiry), used, expiry, 1)
        return common.sliding_window(used, second, expiry)

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        self.get_connection().delete(self.prefixed_key(common.sliding_key(key)))

    def clear(self, key: str) -> None:
        """Every strategy's state for `key` (limits before 5.2 clears a sliding window counter
        through `clear`): two DELs, as the keys may live on two cluster nodes."""
        self.get_connection().delete(self.prefixed_key(key))
        self.get_connection().delete(self.prefixed_key(common.sliding_key(key)))


class RlRedisStorage(_RlCommands, RedisStorage):
    """limits' `RedisStorage` with the moving window and sliding window counter on the rl
    commands. `uri`: `rl+redis://[:password]@host:port[/db]`, `rl+rediss://...`,
    `rl+redis+unix:///path`; `key_prefix` defaults to `LIMITS_RL`; other options go to
    redis-py as for limits' `RedisStorage`."""

    STORAGE_SCHEME = ["rl+redis", "rl+rediss", "rl+redis+unix"]
    PREFIX = common.PREFIX

    def __init__(self, uri: str, connection_pool: Any = None, key_prefix: str = PREFIX,
                 wrap_exceptions: bool = False, **options: Any) -> None:
        super().__init__(common.strip_scheme(uri), connection_pool=connection_pool,
                         key_prefix=key_prefix, wrap_exceptions=wrap_exceptions, **options)
        self.limiter = Limiter(self.get_connection(), denial_cache=False)


class RlRedisClusterStorage(_RlCommands, RedisClusterStorage):
    """limits' `RedisClusterStorage` likewise: `rl+redis+cluster://[:password]@host:port,
    host:port`; each call goes to its key's node."""

    STORAGE_SCHEME = ["rl+redis+cluster"]
    PREFIX = common.PREFIX

    def __init__(self, uri: str, key_prefix: str = PREFIX, wrap_exceptions: bool = False,
                 **options: Any) -> None:
        super().__init__(common.strip_scheme(uri), key_prefix=key_prefix,
                         wrap_exceptions=wrap_exceptions, **options)
        self.limiter = Limiter(self.get_connection(), denial_cache=False)
