"""`Limiter`: the commands over a synchronous redis-py client (`redis.Redis` or
`redis.cluster.RedisCluster`), on the module or the Functions library (backend.py)."""

from __future__ import annotations

import time
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
from .reservation import Reservation
from .reserving import Steps


class Limiter(Api[Decision, AllDecision, bool, tuple[Decision, Optional[Reservation]],
                  tuple[AllDecision, Optional[Reservation]]]):
    """Rate limits over `client`. `limiter.gcra("user:42", 10, "1s", burst=5).allowed`.

    `backend` is None until the first call, then MODULE or LIBRARY: the module's commands
    where the server has them, else the Functions library, loaded when missing.

    `denial_cache`: True (the default) for a `DenialCache()` of its own (10,000 entries), a
    `DenialCache(max_entries=...)` of your choosing, or False for none (cache.py).
    `metrics` counts its decisions (metrics.py)."""

    _reservation = Reservation

    def __init__(self, client: Any, *, denial_cache: bool | DenialCache = True,
                 insurance: Insurance | None = None) -> None:
        self.client = client
        self.backend: str | None = None
        self._cluster = is_cluster(client)
        self._setup(denial_cache, insurance)

    def _send(self, args: tuple[Any, ...], key: str) -> Any:
        if not (self._cluster and routed_by_us(args)):
            return self.client.execute_command(*args)
        for attempt in range(CLUSTER_ATTEMPTS):
            try:
                node = self.client.get_node_from_key(key)
                return self.client.execute_command(*args, target_nodes=node)
            except CLUSTER_RETRY:
                if attempt == CLUSTER_ATTEMPTS - 1:
                    raise
                self.client.nodes_manager.initialize()
        raise AssertionError("unreachable")

    def top(self, policy: str | None = None, *, command: str | None = None,
            count: int = 10) -> list[TopEntry]:
        """`RL.TOP policy [COUNT n]` (or, with `command="rl.gcra"`, `RL.TOP COMMAND rl.gcra
        [COUNT n]`): the keys the policy (or the command's spelled-out calls) denied most on
        the node asked since its counters were cleared, heaviest first. The module's only (the
        Functions library keeps no counters); on a cluster, ask each node's client."""
        try:
            reply = self.client.execute_command(*top_args(policy, command, count))
        except RedisError as err:
            reraise(classify(err), err)
        return TopEntry.from_reply(reply)

    def _run(self, cmd: Command) -> Any:
        try:
            return self._call(cmd)
        except RedisError as err:
            reraise(classify(err), err)

    def _through(self, cmd: Command, probe: Any, record: Any, count: Any,
                 insure: Any = None) -> Any:
        if probe is not None:
            hit = probe()
            if hit is not None:
                if count is not None:
                    count(hit, None)
                return hit
        sent, ticket = self._sent(), self._ticket()
        try:
            result = self._run(cmd)
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

    def _drive(self, steps: Steps) -> Any:
        try:
            cmd = next(steps)
            while True:
                cmd = steps.send(self._run(cmd))
        except StopIteration as done:
            return done.value

    def _call(self, cmd: Command) -> Any:
        key = cmd.node_key
        if self.backend != LIBRARY:
            try:
                reply = self._send(cmd.module, key)
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
            reply = self._send(cmd.library(), key)
        except ResponseError as err:
            if unknown_command(err):  # no FCALL: a server without Functions
                reraise(library_unavailable(err, NO_FUNCTIONS), err)
            if not function_missing(err):
                raise
            self._load_once(sent)
            try:
                reply = self._send(cmd.library(), key)
            except ResponseError as again:
                if function_missing(again):  # loaded, and gone again
                    reraise(library_unavailable(again, NOT_LOADED), again)
                raise
        return cmd.decode(reply, LIBRARY)

    def _load_once(self, sent: float) -> None:
        """The library loaded where a call found it missing: by this call, or by the load in
        flight, waited for (loading.py); the last failed load's error while backing off."""
        gate = gate_for(self.client, "sync")
        loading = gate.enter(sent)
        if isinstance(loading, BaseException):  # backing off after a failed load
            raise_failed(loading)
        if loading is not None:
            outcome = loading.result()
            if outcome is not None:  # the load waited for failed
                raise_failed(outcome)
            return
        error: BaseException | None = None
        failed = False
        try:
            self.client.function_load(library_source(), replace=True)
        except RedisError as err:
            error, failed = err, True
            reraise(library_unavailable(err, NOT_LOADABLE), err)
        except BaseException as err:
            error = err
            raise
        finally:
            gate.done(error, failed)

    def load_library(self) -> None:
        """`FUNCTION LOAD REPLACE` this package's `functions/rl.lua` (on every primary of a
        cluster). Calls do it by themselves where the library is missing. A server that refuses
        it raises LibraryUnavailableError (ServerUnavailableError when unreachable)."""
        try:
            self.client.function_load(library_source(), replace=True)
        except RedisError as err:
            reraise(library_unavailable(err, NOT_LOADABLE), err)

