"""`AsyncLimiter`: the commands over an asyncio redis-py client (`redis.asyncio.Redis` or
`redis.asyncio.cluster.RedisCluster`), on the module or the Functions library (backend.py).
The same methods as `Limiter`, awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, Optional

from redis.exceptions import RedisError, ResponseError

from .api import Api
from .backend import CLUSTER_ATTEMPTS, CLUSTER_RETRY, is_cluster, library_source, routed_by_us
from .cache import DenialCache
from .classify import classify, function_missing, library_unavailable, reraise, unknown_command
from .commands import Command, top_args
from .decision import LIBRARY, MODULE, AllDecision, Decision, TopEntry
from .errors import NO_FUNCTIONS, NOT_LOADABLE, NOT_LOADED
from .insurance import Insurance
from .loading import gate_for, raise_failed
from .reservation import AsyncReservation
from .reserving import Steps


class AsyncLimiter(Api[Awaitable[Decision], Awaitable[AllDecision], Awaitable[bool],
                       Awaitable[tuple[Decision, Optional[AsyncReservation]]],
                       Awaitable[tuple[AllDecision, Optional[AsyncReservation]]]]):
    """Rate limits over an asyncio `client`:
    `(await limiter.gcra("user:42", 10, "1s", burst=5)).allowed`.

    `backend` is None until the first call, then MODULE or LIBRARY. `denial_cache`: as
    `Limiter`'s."""

    _reservation = AsyncReservation

    def __init__(self, client: Any, *, denial_cache: bool | DenialCache = True,
                 insurance: Insurance | None = None) -> None:
        self.client = client
        self.backend: str | None = None
        self._cluster = is_cluster(client)
        self._setup(denial_cache, insurance)

    async def _send(self, args: tuple[Any, ...], key: str) -> Any:
        if not (self._cluster and routed_by_us(args)):
            return await self.client.execute_command(*args)
        # A fresh asyncio cluster client knows no slots until `initialize()` (which its own
        # commands await first, and which returns at once once done): route only after it.
        await self.client.initialize()
        for attempt in range(CLUSTER_ATTEMPTS):
            try:
                node = self.client.get_node_from_key(key)
                return await self.client.execute_command(*args, target_nodes=node)
            except CLUSTER_RETRY:
                if attempt == CLUSTER_ATTEMPTS - 1:
                    raise
                await self.client.nodes_manager.initialize()
        raise AssertionError("unreachable")

    async def top(self, policy: str | None = None, *, command: str | None = None,
                  count: int = 10) -> list[TopEntry]:
        """`Limiter.top`, awaited."""
        try:
            reply = await self.client.execute_command(*top_args(policy, command, count))
        except RedisError as err:
            reraise(classify(err), err)
        return TopEntry.from_reply(reply)

    async def _run(self, cmd: Command) -> Any:  # type: ignore[override]
        try:
            return await self._call(cmd)
        except RedisError as err:
            reraise(classify(err), err)

    async def _through(  # type: ignore[override]
        self, cmd: Command, probe: Any, record: Any, count: Any, insure: Any = None,
    ) -> Any:
        if probe is not None:
            hit = probe()
            if hit is not None:
                if count is not None:
                    count(hit, None)
                return hit
        sent, ticket = self._sent(), self._ticket()
        try:
            result = await self._run(cmd)
        except Exception as err:
            insured = self._unanswered(err, insure, ticket)
            if insured is not None:
                if count is not None:
                    count(insured, None)
                return insured
            if count is not None:
                count(None, err)
            raise
        self._answered(ticket)
        if record is not None:
            record(result, sent)
        if count is not None:
            count(result, None)
        return result

    async def _drive(self, steps: Steps) -> Any:  # type: ignore[override]
        try:
            cmd = next(steps)
            while True:
                cmd = steps.send(await self._run(cmd))
        except StopIteration as done:
            return done.value

    async def _call(self, cmd: Command) -> Any:
        key = cmd.node_key
        if self.backend != LIBRARY:
            try:
                reply = await self._send(cmd.module, key)
                self.backend = MODULE
                return cmd.decode(reply, MODULE)
            except RedisError as err:
                if not unknown_command(err):
                    if isinstance(err, ResponseError):
                        self.backend = MODULE  # the module's own error
                    raise
                self.backend = LIBRARY
        sent = time.monotonic()
        try:
            reply = await self._send(cmd.library(), key)
        except ResponseError as err:
            if unknown_command(err):  # no FCALL: a server without Functions
                reraise(library_unavailable(err, NO_FUNCTIONS), err)
            if not function_missing(err):
                raise
            await self._load_once(sent)
            try:
                reply = await self._send(cmd.library(), key)
            except ResponseError as again:
                if function_missing(again):  # loaded, and gone again
                    reraise(library_unavailable(again, NOT_LOADED), again)
                raise
        return cmd.decode(reply, LIBRARY)

    async def _load_once(self, sent: float) -> None:
        """As `Limiter._load_once`: this call loads, or waits for the load in flight."""
        gate = gate_for(self.client, "asyncio")
        loading = gate.enter(sent)
        if isinstance(loading, BaseException):  # backing off after a failed load
            raise_failed(loading)
        if loading is not None:
            # shielded: a waiter cancelled leaves the load and the other waiters be
            outcome = await asyncio.shield(asyncio.wrap_future(loading))
            if outcome is not None:  # the load waited for failed
                raise_failed(outcome)
            return
        error: BaseException | None = None
        failed = False
        try:
            await self.client.function_load(library_source(), replace=True)
        except RedisError as err:
            error, failed = err, True
            reraise(library_unavailable(err, NOT_LOADABLE), err)
        except BaseException as err:  # cancelled: another call may load
            error = err
            raise
        finally:
            gate.done(error, failed)

    async def load_library(self) -> None:
        """`FUNCTION LOAD REPLACE` this package's `functions/rl.lua` (on every primary of a
        cluster). Calls do it by themselves where the library is missing. A server that refuses
        it raises LibraryUnavailableError (ServerUnavailableError when unreachable)."""
        try:
            await self.client.function_load(library_source(), replace=True)
        except RedisError as err:
            reraise(library_unavailable(err, NOT_LOADABLE), err)
