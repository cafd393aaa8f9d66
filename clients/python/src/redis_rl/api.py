"""The methods both limiters share: each builds its command (commands.py) and hands it to
`_run`, which the synchronous `Limiter` and the asyncio `AsyncLimiter` implement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Callable, Generic, TypeVar, Union

from . import commands, policy
from .cache import DenialCache
from .commands import Command
from .decision import MODULE, AllDecision, Decision
from .errors import ServerUnavailableError, refused
from .insurance import Insurance
from .metrics import (
    ERROR,
    INSURED_OVER,
    INSURED_WITHIN,
    OVER,
    OVER_CACHED,
    SHADOW,
    UNAVAILABLE,
    WITHIN,
    Metrics,
)
from .policy import Duration, Policy, PolicyOrName, count_arg, policy_arg
from .reservation import BaseReservation
from .reserving import Steps, reserving

D = TypeVar("D")  # Decision, or an awaitable of one
A = TypeVar("A")  # AllDecision, or an awaitable of one
B = TypeVar("B")  # bool, or an awaitable of one
R = TypeVar("R")  # (Decision, Reservation | None), or an awaitable of one
S = TypeVar("S")  # (AllDecision, Reservation | None), or an awaitable of one

#: One layer of `all`: (key, policy) or (key, policy, cost); a policy may be a server-side name.
Layer = Union[tuple[str, PolicyOrName], tuple[str, PolicyOrName, int]]


class Api(Generic[D, A, B, R, S]):
    """One method per command. `cost` is the request's weight (`COST n`), `peek` decides
    without writing, `block_ms` waits inside the server until admitted or that many ms pass
    (0: no limit; the library decides at once). Keep the client's socket timeout above
    `block_ms`.

    The six limiters take `penalty=d` and `escalate=max` (`PENALTY d [ESCALATE max]`): a
    denial starts a penalty of `d` on the key, during which every call on it is denied (an
    ordinary denial, `retry_after_ms` to the penalty's end); with `escalate`, a penalty that
    starts within `max` of the previous one's end lasts twice as long, at most `max`.

    Wherever a method takes a `policy` it also takes the name of a policy defined on the
    server (`RL.POLICY SET free SLIDING 100 1m`; a `str`, checked as the server checks names):
    `RL.LIMIT key free`, `RL.PEEK POLICY key free`, an `RL.ALL` clause `POLICY free`."""

    #: The class of the reservations `reserve` and `reserve_all` return.
    _reservation: type[BaseReservation] = BaseReservation

    #: The denial cache (cache.py), or None when off.
    cache: DenialCache | None
    #: This limiter's counters (metrics.py); the middlewares count theirs here too.
    metrics: Metrics
    #: The insurance (insurance.py), or None when off (the default).
    insurance: Insurance | None
    backend: str | None

    def _setup(self, denial_cache: bool | DenialCache | None,
               insurance: Insurance | None = None) -> None:
        if insurance is not None and not isinstance(insurance, Insurance):
            raise refused(f"insurance is None or a redis_rl.Insurance: {insurance!r}",
                          wrong_type=True)
        self.insurance = insurance
        if isinstance(denial_cache, DenialCache):
            self.cache = denial_cache
        elif denial_cache is True:
            self.cache = DenialCache()
        elif denial_cache is False or denial_cache is None:
            self.cache = None
        else:
            raise refused(f"denial_cache is a bool or a redis_rl.DenialCache: {denial_cache!r}",
                          wrong_type=True)
        self.metrics = Metrics(self.cache)

    def _run(self, cmd: Command) -> Any:
        raise NotImplementedError

    def _through(self, cmd: Command, probe: Callable[[], Any] | None,
                 record: Callable[[Any, float], None] | None,
                 count: Callable[[Any, BaseException | None], None] | None,
                 insure: Callable[[BaseException], Any] | None = None) -> Any:
        """`cmd` run by `_run`, unless `probe()` answers it (a cached denial); `record(result,
        sent)` with its result and the moment it was sent, `count(result, error)` either
        way; when the server cannot decide, `insure(error)`'s decision if it gives one
        (`_unanswered`). Implemented by each limiter (awaited by the asyncio one)."""
        raise NotImplementedError

    def _unanswered(self, err: BaseException,
                    insure: Callable[[BaseException], Any] | None, ticket: int) -> Any:
        """The insurance's decision of a call that failed with `err`, or None (then `err` is
        raised). Any error but an unavailable one is the server's answer: insurance off."""
        if not isinstance(err, ServerUnavailableError):
            self._answered(ticket)
            return None
        return insure(err) if insure is not None else None

    def _ticket(self) -> int:
        """Taken when a call is sent, for `_answered` (0 without insurance)."""
        return self.insurance.ticket() if self.insurance is not None else 0

    def _answered(self, ticket: int) -> None:
        """The server answered the call sent with `ticket`: the insurance, if on and that
        call was sent while on, switches off (logged once)."""
        if self.insurance is not None and self.insurance.on:
            self.insurance.switch(False, ticket=ticket)

    def _insure_one(self, key: str, policy: PolicyOrName, cost: int
                    ) -> Callable[[BaseException], Decision | None] | None:
        insurance = self.insurance
        if insurance is None:
            return None

        def insure(err: BaseException) -> Decision | None:
            got = insurance.decide([(key, policy, cost)], self.backend or MODULE)
            if got is None:
                return None
            insurance.switch(True, err)
            return got[2][0]

        return insure

    def _insure_all(self, given: list[tuple[str, PolicyOrName, int]]
                    ) -> Callable[[BaseException], AllDecision | None] | None:
        insurance = self.insurance
        if insurance is None:
            return None

        def insure(err: BaseException) -> AllDecision | None:
            got = insurance.decide(given, self.backend or MODULE)
            if got is None:
                return None
            insurance.switch(True, err)
            _, index, layers = got
            return AllDecision(layers[index], tuple(layers), index)  # type: ignore[arg-type]

        return insure

    def _sent(self) -> float:
        return self.cache.clock() if self.cache is not None else 0.0

    def _one(self, cmd: Command, key: str, policy: PolicyOrName, cost: int, counted: bool,
             cached: bool = True) -> Any:
        """A call on one (key, policy) through the denial cache (when `cached` and on), counted
        under the policy's name when `counted`; insured when both (a decision that spends)."""
        cache = self.cache if cached else None
        insure = self._insure_one(key, policy, cost) if cached and counted else None
        probe = record = count = None
        if cache is not None:
            def probe() -> Decision | None:
                return cache.get(key, policy, cost)

            def record(decision: Decision, sent: float) -> None:
                cache.put(key, policy, cost, decision, sent, spent=counted)
        if counted:
            def count(decision: Decision | None, error: BaseException | None) -> None:
                label = policy_label(policy)
                self.metrics.add(label, result_of(decision, error))
        return self._through(cmd, probe, record, count, insure)

    def _all(self, layers: Sequence[Layer], peek: bool, counted: bool) -> Any:
        """`RL.ALL` through the denial cache: a request one of whose layers is cached denied
        is denied here (the server would deny it too: all or nothing), reporting that layer
        (the one denied longest, as the server's binding layer)."""
        cmd = commands.all_of(layers, peek)
        given = [(layer[0], policy_arg(layer[1]), layer[2] if len(layer) > 2 else 1)
                 for layer in layers]  # type: ignore[misc]
        cache = self.cache
        probe = record = count = None
        if cache is not None and not peek:
            def probe() -> AllDecision | None:
                hits = [cache.get(k, p, c) for k, p, c in given]
                found = [(i, d) for i, d in enumerate(hits) if d is not None]
                if not found:
                    return None
                index, binding = max(found, key=lambda f: (f[1].retry_after_ms, -f[0]))
                return AllDecision(binding, tuple(hits), index)

            def record(result: AllDecision, sent: float) -> None:
                for (k, p, c), d in zip(given, result.layers):
                    if d is not None:
                        cache.put(k, p, c, d, sent, spent=result.allowed)
        elif cache is not None:  # a peek asks for every layer's state: it only writes
            def record(result: AllDecision, sent: float) -> None:
                for (k, p, c), d in zip(given, result.layers):
                    if d is not None:
                        cache.put(k, p, c, d, sent)
        if counted:
            def count(result: AllDecision | None, error: BaseException | None) -> None:
                if result is None:
                    label = "+".join(policy_label(p) for _, p, _ in given)
                    self.metrics.add(label, result_of(None, error))
                    return
                at = result.index if not result.allowed else next(iter(result.shadowed),
                                                                 result.index)
                self.metrics.add(policy_label(given[at][1]), all_result(result))
        return self._through(cmd, probe, record, count, None if peek else self._insure_all(given))

    def decide(
        self, key: str, policy: PolicyOrName, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None,
    ) -> D:
        """`RL.<ALGO> key params [COST n] [PEEK] [BLOCK ms]` for any policy, or `RL.LIMIT key
        name [COST n] [PEEK] [BLOCK ms]` for a policy's name.

        Through the denial cache (docs/python.md, "The denial cache"): a cached denial of
        (key, policy) for this cost or less answers without a call, and the server's denial
        is cached. A `block_ms` call neither reads nor writes it (it waits in the server).
        Counted in `metrics`, unless `peek`."""
        cmd = commands.decide(key, policy, cost, None, peek, block_ms)
        return self._one(cmd, key, policy_arg(policy), cost, not peek, block_ms is None)

    def limit(
        self, key: str, policy: PolicyOrName, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None,
    ) -> D:
        """`RL.LIMIT key name [COST n] [PEEK] [BLOCK ms]`: the request decided by the policy
        the server holds under `policy` (`limiter.limit("user:42", "free")`); the same as
        `decide`, which a Policy may be given too."""
        return self.decide(key, policy, cost=cost, peek=peek, block_ms=block_ms)

    def gcra(
        self, key: str, limit: int, period: Duration, *, burst: int | None = None,
        cost: int = 1, peek: bool = False, block_ms: int | None = None, name: str = "",
        penalty: Duration | None = None, escalate: Duration | None = None,
    ) -> D:
        """`RL.GCRA key limit period [BURST burst] [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.gcra(limit, period, burst, name, penalty=penalty,
                                            escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def token_bucket(
        self, key: str, capacity: int, refill: int, period: Duration, *, cost: int = 1,
        peek: bool = False, block_ms: int | None = None, name: str = "",
        penalty: Duration | None = None, escalate: Duration | None = None,
    ) -> D:
        """`RL.TOKENBUCKET key capacity refill period [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.token_bucket(capacity, refill, period, name,
                                                    penalty=penalty, escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def leaky(
        self, key: str, capacity: int, leak: int, period: Duration, *, cost: int = 1,
        peek: bool = False, block_ms: int | None = None, name: str = "",
        penalty: Duration | None = None, escalate: Duration | None = None,
    ) -> D:
        """`RL.LEAKY key capacity leak period [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.leaky(capacity, leak, period, name, penalty=penalty,
                                             escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def sliding(
        self, key: str, limit: int, window: Duration, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None, name: str = "", penalty: Duration | None = None,
        escalate: Duration | None = None,
    ) -> D:
        """`RL.SLIDING key limit window [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.sliding(limit, window, name, penalty=penalty,
                                            escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def sliding_log(
        self, key: str, limit: int, window: Duration, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None, name: str = "", penalty: Duration | None = None,
        escalate: Duration | None = None,
    ) -> D:
        """`RL.SLIDINGLOG key limit window [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.sliding_log(limit, window, name, penalty=penalty,
                                            escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def fixed(
        self, key: str, limit: int, window: Duration, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None, name: str = "", penalty: Duration | None = None,
        escalate: Duration | None = None,
    ) -> D:
        """`RL.FIXED key limit window [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.fixed(limit, window, name, penalty=penalty,
                                            escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def quota(
        self, key: str, limit: int, unit: str, *, tz: str | None = None,
        anchor: str | datetime | None = None, cost: int = 1, peek: bool = False,
        block_ms: int | None = None, name: str = "", penalty: Duration | None = None,
        escalate: Duration | None = None,
    ) -> D:
        """`RL.QUOTA key limit DAY|WEEK|MONTH [TZ zone] [ANCHOR a] [PENALTY d [ESCALATE max]]`."""
        return self.decide(key, policy.quota(limit, unit, name, tz=tz, anchor=anchor,
                                             penalty=penalty, escalate=escalate),
                           cost=cost, peek=peek, block_ms=block_ms)

    def refund(self, key: str, policy: PolicyOrName, n: int) -> D:
        """`RL.<ALGO> key params REFUND n` (`RL.LIMIT key name REFUND n`): give `n` units back
        (always admitted). Drops (key, policy) from the denial cache."""
        cmd = commands.decide(key, policy, 1, n, False, None)
        if self.cache is not None:
            self.cache.drop(key, policy_arg(policy))
        return self._run(cmd)

    def debit(self, key: str, policy: PolicyOrName, n: int) -> D:
        """`RL.<ALGO> key params DEBIT n` (`RL.LIMIT key name DEBIT n`): charge `n` units
        (1 to 10^12) after the fact, whatever is left: never denied. The key may go into debt
        (`remaining` 0, `retry_after_ms` until a request of cost 1 is admitted), and stays in
        it until it has refilled past it; a debt is at most 10^12 units."""
        count_arg(n, "debit")  # (None is no DEBIT at all to commands.decide)
        return self._run(commands.decide(key, policy, debit=n))

    def _drive(self, steps: Steps) -> Any:
        """Runs `steps` (reserving.py), each command by `_run`: their result."""
        raise NotImplementedError

    def reserve(self, key: str, policy: PolicyOrName, estimate: int) -> R:
        """`(decision, reservation)`: the request decided at `COST estimate`, and when it is
        admitted a reservation to `settle(actual)` once its actual cost is known (None when
        denied). Settling sends `DEBIT` or `REFUND` of the difference (docs/python.md,
        "Reservations"). A `SHADOW` policy's denial, admitted, reserved nothing: its
        reservation has no layers, and settles by sending nothing."""
        layer = (key, policy_arg(policy))
        cmd = commands.decide(key, layer[1], estimate)
        return self._drive(reserving(self, cmd, [layer], [0], estimate, False))

    def reserve_all(self, layers: Sequence[Layer], estimate: int) -> S:
        """`(all_decision, reservation)` from one `RL.ALL`: each `(key, policy)` layer (or
        `(key, policy, None)`) spends `COST estimate` and is settled by the reservation; each
        `(key, policy, cost)` layer spends its own cost and is never settled (a request count
        next to a token budget), nor is a layer a `SHADOW` policy denied (it spent nothing).
        The reservation is None when denied."""
        if not layers:
            raise refused("reserve_all() needs at least one (key, policy) layer")
        given = [(layer[0], policy_arg(layer[1]), layer[2] if len(layer) > 2 else None)
                 for layer in layers]
        count_arg(estimate, "estimate")
        spent = [i for i, (_, _, cost) in enumerate(given) if cost is None]
        cmd = commands.all_of([(key, p, estimate if cost is None else cost)
                               for key, p, cost in given], False)
        return self._drive(reserving(self, cmd, [(key, p) for key, p, _ in given], spent,
                                     estimate, True))

    def peek(self, key: str, policy: PolicyOrName, *, cost: int = 1) -> D:
        """`RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name [COST n]`): what the
        call would decide, writing nothing (a read-only command: it runs on replicas and for
        read-only ACL users). A cached denial answers it without a call, and its denial is
        cached (the server's denial as much as a call's: nothing is spent either way); it is
        not counted."""
        cmd = commands.peek(key, policy, cost)
        return self._one(cmd, key, policy_arg(policy), cost, False)

    def all(self, layers: Sequence[Layer], *, peek: bool = False) -> A:
        """`RL.ALL`: every (key, policy[, cost]) layer admits, and is spent, or none is. A
        layer whose policy is a `SHADOW` one on the server denies nothing. Through the
        denial cache: a layer cached denied denies the call without one (its other layers
        are then None in `layers`), and each denied layer of the server's reply is cached;
        with `peek` (every layer's state asked for) it is sent whatever the cache holds.
        Counted in `metrics` (under the binding layer's policy name), unless `peek`."""
        return self._all(layers, peek, not peek)

    def acquire(
        self, key: str, limit: int, timeout: Duration, lease_id: str | bytes, *,
        peek: bool = False, block_ms: int | None = None,
    ) -> D:
        """`RL.ACQUIRE key limit timeout lease_id`: take (or renew) one of `limit` leases."""
        return self._run(commands.acquire(key, limit, timeout, lease_id, peek, block_ms))

    def ban(self, key: str, ms: int) -> B:
        """`RL.BAN key ms`: `key` denied for `ms` milliseconds from now (an int, 0 to 3650 days)
        whatever its limiter and its rate, replacing any penalty (a later penalty escalates
        from it); `ms=0` lifts a ban or a penalty. The key may hold any limiter's state, or
        nothing (it then holds the ban alone, until it ends). True if the key existed.
        Drops the key's entries from the denial cache."""
        cmd = commands.ban(key, ms)
        if self.cache is not None:
            self.cache.drop(key)
        return self._run(cmd)

    def release(self, key: str, lease_id: str | bytes) -> B:
        """`RL.RELEASE key lease_id`: True if the lease was held."""
        return self._run(commands.release(key, lease_id))


def policy_label(policy: PolicyOrName) -> str:
    """A call's `layer` label: its policy's name, `default` for a Policy without one."""
    if isinstance(policy, Policy):
        return policy.name or "default"
    return policy


def result_of(decision: Decision | None, error: BaseException | None) -> str:
    """The counter a decision (or the error raised instead) adds to."""
    if decision is None:
        return UNAVAILABLE if isinstance(error, ServerUnavailableError) else ERROR
    if decision.cached:
        return OVER_CACHED
    if decision.insured:
        return INSURED_WITHIN if decision.allowed else INSURED_OVER
    if not decision.allowed:
        return OVER
    return SHADOW if decision.shadowed else WITHIN


def all_result(result: AllDecision) -> str:
    if result.cached:
        return OVER_CACHED
    if result.insured:
        return INSURED_WITHIN if result.allowed else INSURED_OVER
    if not result.allowed:
        return OVER
    return SHADOW if result.shadowed else WITHIN
