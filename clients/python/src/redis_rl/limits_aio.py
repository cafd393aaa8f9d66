"""`limits.aio` storages on the rl commands: `async+rl+redis://`, `async+rl+rediss://`,
`async+rl+redis+unix://` (`RlAsyncRedisStorage`) and `async+rl+redis+cluster://`
(`RlAsyncRedisClusterStorage`), registered when this module is imported (as
limits_storage.py, which imports it).

They are limits' asyncio `RedisStorage` and `RedisClusterStorage` on redis-py's asyncio client
(`implementation="redispy"`: the commands go through `redis_rl.AsyncLimiter`), with the same
mapping as the synchronous ones (limits_common.py).
"""

from __future__ import annotations

import time
from typing import Any

from limits.aio.storage import RedisClusterStorage, RedisStorage
from limits.errors import ConfigurationError

from . import limits_common as common
from .aio import AsyncLimiter
from .decision import Decision
from .errors import ConfigurationError as RefusedError
from .policy import Policy


def _implementation(options: dict[str, Any]) -> str:
    implementation = options.pop("implementation", "redispy")
    if implementation != "redispy":
        raise ConfigurationError(
            f"the rl storages run on redis-py's asyncio client: implementation "
            f"{implementation!r} is not supported (leave it out, or say 'redispy')")
    return "redispy"


class _RlAsyncCommands:
    """The moving window and sliding window counter methods, over `self.limiter`."""

    limiter: AsyncLimiter
    bridge: Any

    def _key(self, key: str) -> str:
        return self.bridge.prefixed_key(key)

    async def _decide(self, command: str, key: str, p: Policy, limit: int, expiry: int,
                      amount: int) -> Decision:
        """`COST amount`, or for a negative amount `REFUND -amount` (`common.refund`)."""
        try:
            if amount < 0:
                return await self.limiter.refund(key, p, common.refund(amount))
            return await self.limiter.decide(key, p, cost=amount)
        except RefusedError as err:  # the server's refusal: limits' ConfigurationError
            raise common.configuration_error(err, command, key, limit, expiry, amount) from err

    async def _peek(self, command: str, key: str, p: Policy, limit: int, expiry: int,
                    cost: int) -> Decision:
        try:
            return await self.limiter.peek(key, p, cost=cost)
        except RefusedError as err:  # the server's refusal: limits' ConfigurationError
            raise common.configuration_error(err, command, key, limit, expiry, cost) from err

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        """limits' own `incr` (the fixed window's), its cost checked first."""
        return await super().incr(key, expiry, amount=common.cost_arg(amount))  # type: ignore[misc]

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """As the synchronous storage's: what limits' own script settles without counting,
        and a negative cost (admitted, nothing pushed), need no call."""
        amount = common.cost_arg(amount)
        settled = common.settled(limit, amount)
        if settled is None and amount < 0:
            settled = True
        if settled is not None:
            return settled
        key = self._key(key)
        p = common.moving(limit, expiry)
        return (await self._decide("RL.SLIDINGLOG", key, p, limit, expiry, amount)).allowed

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        if limit < 1:  # admits nothing: an empty window, as limits' own script finds
            return time.time(), 0
        key = self._key(key)
        p = common.moving(limit, expiry)
        cost = common.MOVING_FIRST_COST
        while True:
            d = await self._peek("RL.PEEK SLIDINGLOG", key, p, limit, expiry, cost)
            step = common.moving_step(limit, expiry, d, cost)
            if not isinstance(step, int):
                return step
            cost = step

    async def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int,
                                           amount: int = 1) -> bool:
        """As the synchronous storage's: a negative cost is `REFUND`."""
        amount = common.cost_arg(amount)
        settled = common.settled(limit, amount)
        if settled is not None:
            return settled
        key = self._key(common.sliding_key(key))
        p = common.sliding(limit, expiry)
        return (await self._decide("RL.SLIDING", key, p, limit, expiry, amount)).allowed

    async def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        key = self._key(common.sliding_key(key))
        peek, most = "RL.PEEK SLIDING", common.MAX_COUNT
        first = await self._peek(peek, key, common.sliding(most, expiry), most, expiry, 0)
        used = common.sliding_used(first)
        second = None
        if used > 0:
            second = await self._peek(peek, key, common.sliding(used, expiry), used, expiry, 1)
        return common.sliding_window(used, second, expiry)

    async def clear_sliding_window(self, key: str, expiry: int) -> None:
        await self.bridge.get_connection().delete(self._key(common.sliding_key(key)))

    async def clear(self, key: str) -> None:
        """Every strategy's state for `key` (as the synchronous storages' `clear`)."""
        await self.bridge.get_connection().delete(self._key(key))
        await self.bridge.get_connection().delete(self._key(common.sliding_key(key)))


class RlAsyncRedisStorage(_RlAsyncCommands, RedisStorage):
    """limits' asyncio `RedisStorage` with the moving window and sliding window counter on the
    rl commands: `async+rl+redis://[:password]@host:port[/db]`; `key_prefix` defaults to
    `LIMITS_RL`; other options go to `redis.asyncio.Redis`."""

    STORAGE_SCHEME = ["async+rl+redis", "async+rl+rediss", "async+rl+redis+unix"]
    PREFIX = common.PREFIX

    def __init__(self, uri: str, wrap_exceptions: bool = False, key_prefix: str = PREFIX,
                 **options: Any) -> None:
        super().__init__(common.strip_scheme(uri, "async+"), wrap_exceptions=wrap_exceptions,
                         implementation=_implementation(options), key_prefix=key_prefix,
                         **options)
        self.limiter = AsyncLimiter(self.bridge.get_connection(), denial_cache=False)


class RlAsyncRedisClusterStorage(_RlAsyncCommands, RedisClusterStorage):
    """limits' asyncio `RedisClusterStorage` likewise: `async+rl+redis+cluster://host:port,
    host:port`."""

    STORAGE_SCHEME = ["async+rl+redis+cluster"]
    PREFIX = common.PREFIX

    def __init__(self, uri: str, wrap_exceptions: bool = False, key_prefix: str = PREFIX,
                 **options: Any) -> None:
        super().__init__(common.strip_scheme(uri, "async+"), wrap_exceptions=wrap_exceptions,
                         implementation=_implementation(options), key_prefix=key_prefix,
                         **options)
        self.limiter = AsyncLimiter(self.bridge.get_connection(), denial_cache=False)
