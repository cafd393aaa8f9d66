"""Insurance (docs/python.md, "Insurance"): while the server cannot decide (a
ServerUnavailableError: out of reach, a timeout, `LOADING`, `BUSY`, `MASTERDOWN`,
`CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`), the process decides alone, in its own memory,
each layer's policy divided by the number of processes (`nodes`) that share the server
(rate-limiter-flexible's `insuranceLimiter`; the NGINX package's `insurance`, the same rules):

- Per layer key, a fixed window of the policy's duration admitting its count before the
  duration divided by `nodes`, rounded down, at least 1 (`gcra(100, "1s", burst=20)` on 4
  processes admits 25 a second per key). The count is GCRA's limit, a window's limit, the
  token bucket's refill, the leaky bucket's leak; a burst, a capacity, a penalty are not
  applied, and what the server had counted, its bans and penalties, are not known here. A
  window starts with the key's first request during the outage.
- The layers of a call are decided all or nothing, as `RL.ALL` does: a denied call spends
  nothing.
- A policy named on the server (a `str`) has no parameters here: a call one such layer is part
  of is not insured (the ServerUnavailableError is raised, as without insurance).
- Bounded: at most `max_windows` windows, the least recently used dropped first (a dropped
  window starts again); a long key held as its digest, as the denial cache holds it.
- One log line at each switch, not per request: `error` on the `redis_rl.insurance` logger
  when the first call is insured, `warning` when the server answers again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Callable

from .cache import held
from .decision import Decision
from .errors import refused
from .policy import Policy, PolicyOrName, duration_ms

#: Where the switches are logged.
logger = logging.getLogger(__name__)

#: Windows kept by default.
DEFAULT_MAX_WINDOWS = 10_000
#: The most nodes a policy is divided by (as the NGINX package's).
MAX_NODES = 1_000_000


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class _Window:
    __slots__ = ("count", "end")

    def __init__(self, end: float) -> None:
        self.count = 0
        self.end = end


class Insurance:
    """`Limiter(client, insurance=Insurance(nodes=4))`: while the server cannot decide, this
    process decides alone, each policy divided by `nodes` (the processes sharing the server,
    1 to 1,000,000), in at most `max_windows` windows (LRU). Thread-safe. `clock` returns
    milliseconds (monotonic)."""

    def __init__(self, nodes: int, max_windows: int = DEFAULT_MAX_WINDOWS,
                 clock: Callable[[], float] = _now_ms) -> None:
        for value, what, top in ((nodes, "nodes", MAX_NODES), (max_windows, "max_windows", None)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (
                    top is not None and value > top):
                bound = f"from 1 to {top:,}" if top else "of at least 1"
                raise refused(f"insurance's {what} is an int {bound}: {value!r}",
                              wrong_type=not isinstance(value, int) or isinstance(value, bool))
        self.nodes = nodes
        self.max_windows = max_windows
        self.clock = clock
        self._windows: OrderedDict[str | bytes, _Window] = OrderedDict()
        self._lock = threading.Lock()
        #: True while the process decides alone (between the two log lines).
        self.on = False
        #: The most windows ever held at once (never above max_windows).
        self.high_water = 0
        #: The switches on so far: a call's ticket (`ticket()` when it was sent).
        self._ons = 0

    def __len__(self) -> int:
        return len(self._windows)

    def share(self, policy: PolicyOrName) -> tuple[int, int] | None:
        """(this process's limit, the window in ms) for `policy`, or None for a policy
        named on the server (or a duration the server would refuse)."""
        if not isinstance(policy, Policy):
            return None
        window = duration_ms(policy.window)
        if window is None or window <= 0:
            return None
        return max(1, policy.quota // self.nodes), window

    def decide(self, layers: Sequence[tuple[str, PolicyOrName, int]], backend: str
               ) -> tuple[bool, int, list[Decision | None]] | None:
        """The process's decision of `layers` ((key, policy, cost) each), all or nothing:
        (allowed, the binding layer's index, each layer's decision: on a denial the denying
        layer's alone, the others None), or None when a layer cannot be insured."""
        shares = [self.share(p) for _, p, _ in layers]
        if any(s is None for s in shares):
            return None
        with self._lock:
            now = self.clock()
            windows = []
            for (key, _, _), share in zip(layers, shares):
                kept = held(key)
                w = self._windows.get(kept)
                if w is None or w.end <= now:
                    w = _Window(now + share[1])  # type: ignore[index]
                    self._windows[kept] = w
                self._windows.move_to_end(kept)
                windows.append(w)
            denied = next((i for i, ((_, _, cost), w, s) in enumerate(zip(layers, windows, shares))
                           if w.count + cost > s[0]), None)  # type: ignore[index]
            if denied is None:
                for (_, _, cost), w in zip(layers, windows):
                    w.count += cost
            while len(self._windows) > self.max_windows:
                self._windows.popitem(last=False)
            self.high_water = max(self.high_water, len(self._windows))
        out: list[Decision | None] = []
        for i, ((_, p, cost), w, s) in enumerate(zip(layers, windows, shares)):
            limit = s[0]  # type: ignore[index]
            reset = max(1, math.ceil(w.end - now))
            if denied is None:
                out.append(Decision(True, limit, limit - w.count, 0, reset, backend, p,
                                    False, insured=True))
            elif i == denied:
                retry = -1 if cost > limit else reset  # a cost no window holds: never
                out.append(Decision(False, limit, max(0, limit - w.count), retry, reset,
                                    backend, p, False, insured=True))
            else:
                out.append(None)
        if denied is not None:
            return False, denied, out
        index = min(range(len(out)), key=lambda i: (out[i].remaining, i))  # type: ignore[union-attr]
        return True, index, out

    def ticket(self) -> int:
        """A call's ticket, taken when it is sent: `switch(False, ticket=...)` when answered."""
        return self._ons

    def switch(self, on: bool, why: BaseException | None = None, ticket: int | None = None) -> None:
        """On when a call was insured, off when the server answered a call sent while on (its
        `ticket`): an answer to a call sent before the switch on (read after another call found
        the server gone) is not the server back. Logged at each change."""
        with self._lock:
            if self.on == on or (not on and ticket is not None and ticket != self._ons):
                return
            self.on = on
            if on:
                self._ons += 1
        if on:
            logger.error("rl: Redis unavailable, insurance on: this process decides alone, "
                         "each policy divided by %d (%s)", self.nodes, why,
                         extra={"rl_insurance": "on"})
        else:
            logger.warning("rl: Redis answers again, insurance off: decisions are Redis's again",
                           extra={"rl_insurance": "off"})

    def clear(self) -> None:
        with self._lock:
            self._windows.clear()
