"""Reservations: a request admitted for an estimate of its cost, settled once its actual cost
is known (an LLM call's tokens, a download's bytes).

`reserve(key, policy, estimate)` spends `COST estimate`; when admitted, its reservation's
`settle(actual)` sends the difference: `DEBIT actual - estimate` when the request cost more
(charged whatever is left, never denied: the key may go into debt, and stays denied until it
has refilled past it), `REFUND estimate - actual` when it cost less, nothing when it cost
the estimate. `reserve_all` does the same over the `RL.ALL` layers that reserved the
estimate, in one `RL.ALL`. A reservation settles at most once.

A reservation never gives back what was not spent, nor what no longer counts:

- a layer whose reply was a `SHADOW` policy's denial (reserving.py tells it apart) spent
  nothing, so it is not one of the reservation's layers: it is never settled;
- a `REFUND` goes only to the layers whose units still count: a layer whose reply's
  `reset_after_ms` has passed since just before the reserving call was sent (a monotonic
  clock) is idle by then, and is refunded nothing (a `DEBIT` still goes to every layer).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from . import commands
from .commands import Command
from .decision import AllDecision, Decision
from .errors import ReservationSettledError, refused
from .policy import PolicyOrName, count_arg


class BaseReservation:
    """What `Reservation` and `AsyncReservation` share: the layers to settle, the estimate
    they spent, and whether the reservation is settled."""

    def __init__(self, limiter: Any, layers: list[tuple[str, PolicyOrName]], estimate: int,
                 together: bool, sent_at: float | None = None,
                 reset_after_ms: Sequence[int] | None = None) -> None:
        self._limiter = limiter
        #: The (key, policy) layers that spent the estimate, and that `settle` adjusts.
        self.layers = tuple(layers)
        #: The units each of those layers spent (`COST estimate`).
        self.estimate = estimate
        self._together = together  # from reserve_all: settled with one RL.ALL
        self._settled = False
        # time.monotonic() just before the reserving call was sent, and each layer's
        # reset_after_ms in its reply: once that much time has passed, the layer's units no
        # longer count (None: they always do).
        self._sent_at = sent_at
        self._resets = tuple(reset_after_ms) if reset_after_ms is not None else None

    def _still_held(self) -> list[tuple[str, PolicyOrName]]:
        """The layers whose reserved units may still count: each whose reply's
        `reset_after_ms` has not passed since just before the reserving call was sent."""
        if self._sent_at is None or self._resets is None:
            return list(self.layers)
        elapsed_ms = (time.monotonic() - self._sent_at) * 1000
        return [layer for layer, reset in zip(self.layers, self._resets) if elapsed_ms < reset]

    @property
    def settled(self) -> bool:
        """True once `settle` was called (or a `with` block ended), whatever it sent."""
        return self._settled

    def _settling(self, actual: int) -> Command | None:
        """`actual` checked, the reservation marked settled, and the command that settles it
        (None when there is nothing to send)."""
        count_arg(actual, "actual")
        if actual < 0:
            raise refused(f"actual is at least 0: {actual!r}")
        if self._settled:
            raise ReservationSettledError("this reservation is settled already")
        self._settled = True
        difference = actual - self.estimate
        options = commands.settle_options(difference)
        layers = self._still_held() if difference < 0 else list(self.layers)
        if not options or not layers:
            return None
        if self._together:
            return commands.all_clauses(layers, [options] * len(layers))
        (key, policy), (word, n) = layers[0], options
        if word == "DEBIT":
            return commands.decide(key, policy, debit=int(n))
        return commands.decide(key, policy, refund=int(n))

    def __repr__(self) -> str:
        state = "settled" if self._settled else "open"
        return f"<{type(self).__name__} estimate={self.estimate} {state} layers={self.layers!r}>"


class Reservation(BaseReservation):
    """A `Limiter.reserve`/`reserve_all` admission, to `settle(actual)` once. As a context
    manager (`with reservation:`), a block that ends without settling (normally or by an
    exception, which goes on) settles the estimate: nothing is sent, the units stay spent."""

    def settle(self, actual: int) -> Decision | AllDecision | None:
        """Settle at `actual` units (an int >= 0): `DEBIT actual - estimate` when more (at
        most MAX_DEBT = MAX_COST, 10^12, the server's cap on a debt: a larger difference is
        sent as MAX_DEBT), `REFUND estimate - actual` when less, nothing when equal. No
        `REFUND` goes to a layer whose reply's `reset_after_ms` has passed since just before
        the reserving call was sent: its units no longer count. Returns that call's Decision
        (an AllDecision from `reserve_all`), or None when nothing was sent. A second call
        raises ReservationSettledError. The reservation is marked settled before the call is
        sent: a call that fails (the server unreachable) is not sent again, by this or a
        later `settle`."""
        cmd = self._settling(actual)
        return None if cmd is None else self._limiter._run(cmd)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._settled:
            self.settle(self.estimate)


class AsyncReservation(BaseReservation):
    """An `AsyncLimiter.reserve`/`reserve_all` admission: `await reservation.settle(actual)`
    once; `async with reservation:` settles the estimate if the block did not settle."""

    async def settle(self, actual: int) -> Decision | AllDecision | None:
        """As `Reservation.settle`, awaited (marked settled before anything is awaited)."""
        cmd = self._settling(actual)
        return None if cmd is None else await self._limiter._run(cmd)

    async def __aenter__(self) -> AsyncReservation:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not self._settled:
            await self.settle(self.estimate)

