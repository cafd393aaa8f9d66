"""The methods both limiters share: each builds its command (commands.py) and hands it to
`_run`, which the synchronous `Limiter` and the asyncio `AsyncLimiter` implement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, Union

from . import commands, policy
from .commands import Command
from .errors import refused
from .policy import Duration, PolicyOrName, count_arg, policy_arg
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

    def _run(self, cmd: Command) -> Any:
        raise NotImplementedError

    def decide(
        self, key: str, policy: PolicyOrName, *, cost: int = 1, peek: bool = False,
        block_ms: int | None = None,
    ) -> D:
        """`RL.<ALGO> key params [COST n] [PEEK] [BLOCK ms]` for any policy, or `RL.LIMIT key
        name [COST n] [PEEK] [BLOCK ms]` for a policy's name."""
        return self._run(commands.decide(key, policy, cost, None, peek, block_ms))

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

    def refund(self, key: str, policy: PolicyOrName, n: int) -> D:
        """`RL.<ALGO> key params REFUND n` (`RL.LIMIT key name REFUND n`): give `n` units back
        (always admitted)."""
        return self._run(commands.decide(key, policy, 1, n, False, None))

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
        read-only ACL users)."""
        return self._run(commands.peek(key, policy, cost))

    def all(self, layers: Sequence[Layer], *, peek: bool = False) -> A:
        """`RL.ALL`: every (key, policy[, cost]) layer admits, and is spent, or none is. A
        layer whose policy is a `SHADOW` one on the server denies nothing."""
        return self._run(commands.all_of(layers, peek))

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
        nothing (it then holds the ban alone, until it ends). True if the key existed."""
        return self._run(commands.ban(key, ms))

    def release(self, key: str, lease_id: str | bytes) -> B:
        """`RL.RELEASE key lease_id`: True if the lease was held."""
        return self._run(commands.release(key, lease_id))
