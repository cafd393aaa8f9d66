"""The denial cache: once the server denies a layer's identity (a key and a policy) with a
`retry_after_ms` R > 0, that identity's calls are denied here, without a call, until R has
passed (Upstash ratelimit's ephemeral cache, bounded).

- Only a denial is written (`allowed` 0 and R > 0): never an admission, never a `SHADOW`
  policy's denial (which is admitted), never a request that can never be admitted (R = -1).
- An entry holds the denied cost: a call of a cost at least that one is denied from it (a
  larger cost is denied at least as long as a smaller one, by every limiter); a smaller cost
  is sent to the server, whose answer (a denial of the smaller cost) replaces the entry.
- The deadline counts from the moment the call was sent, not from when its reply came back:
  the server's R ran from a moment after the send, so the cache never denies past the
  server's own deadline (it ends earlier by at most the call's round trip, and the call then
  made is the server's to decide).
- The decision it gives is the server's denial as it would be now: `allowed` False, the
  same `limit` and `remaining` (0 for a denied cost of 1; for a larger cost what was left,
  less than the cost, as the server said it), `retry_after_ms` and `reset_after_ms`
  counting down from the server's; its `cached` is True.
- Bounded: at most `max_entries`, the least recently used evicted first (a flooding identity
  is looked up on each of its requests, so it stays; a one-off denial goes first), and an
  expired entry dropped when it is met (looked up). A key longer than `HELD_KEY_CHARS`
  characters is held as its SHA-256 digest (`held`), so an entry's size does not grow with
  its key's (a header-keyed layer's 8 KB keys take no more than short ones).

What it gives up: a `REFUND`, a raised policy or a lifted ban made elsewhere (another process,
`redis-cli`) is seen at the latest when R ends; the same limiter's own `refund` and `ban`
drop the key's entries at once.

With `exhausted=True` (off by default), an admission that left nothing is written too: a
spending call of a spelled-out policy without a penalty, admitted with `remaining` 0, whose
algorithm says from the reply when the next unit is free (`exhausted_wait`). The calls until
then are denied here, so a flooding identity's denials never reach the server, not even the
first after each admission; the server then counts no denial of it (INFO rl, RL.TOP): only
this process's counters do.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

from .decision import Decision
from .policy import Policy, PolicyOrName, duration_ms

#: Entries kept by default: about 2 MB of Python objects at most.
DEFAULT_MAX_ENTRIES = 10_000
#: The longest key held as it is; a longer one is held as its digest.
HELD_KEY_CHARS = 64


def held(key: str) -> str | bytes:
    """How the caches (this one and the insurance's windows) hold `key`: as it is up to
    HELD_KEY_CHARS characters, else its SHA-256 digest (32 bytes, a `bytes`, so never equal
    to a short key, a `str`): what one entry holds is bounded whatever the key's length."""
    if len(key) <= HELD_KEY_CHARS:
        return key
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def now_ms() -> float:
    return time.monotonic() * 1000.0


def policy_id(policy: PolicyOrName) -> Any:
    """What identifies a policy in the cache: a Policy by its algorithm, parameters and
    penalty (its name is only the headers'), a server-side policy by its name."""
    if isinstance(policy, Policy):
        return (policy.algo, policy.params, policy.penalty)
    return ("POLICY", policy)


#: The limiters whose admission leaving `remaining` 0 says when the next unit is free: those
#: at a rate (one instant, the time they are idle: the next unit frees `limit - 1` units'
#: time before it) and those on windows (at the window's end, the renewal).
_RATES = frozenset({"GCRA", "TOKENBUCKET", "LEAKY"})
_WINDOWS = frozenset({"FIXED", "QUOTA"})


def exhausted_wait(policy: PolicyOrName, decision: Decision) -> float | None:
    """For a spending admission of `policy` that left `remaining` 0: how long (ms, from the
    call's send) every call of the same key and policy is denied, or None when the reply does
    not say it (another algorithm, a policy named on the server, a penalty: the denial that
    starts it must reach the server) or when it is under 1 ms. With `T` the time one unit
    costs and `limit` the burst (capacity), the next unit is free when the limiter is
    `(limit - 1) * T` from idle (CONTRACT: admitted iff debt + T <= limit * T); a window's,
    at its end. The reply's `reset_after_ms` is rounded up, so 1 ms less never denies a call
    the server would admit."""
    if (not isinstance(policy, Policy) or policy.penalty or not decision.allowed
            or decision.remaining != 0 or decision.cached or decision.insured):
        return None
    if policy.algo in _WINDOWS:
        wait = decision.reset_after_ms - 1.0
    elif policy.algo in _RATES:
        period = duration_ms(policy.window)
        if period is None:
            return None
        wait = decision.reset_after_ms - 1.0 - (decision.limit - 1) * period / policy.quota
    else:
        return None
    return wait if wait >= 1 else None


class _Entry(NamedTuple):
    cost: int
    remaining: int
    until: float  # ms (now_ms): the denial's end
    reset_at: float  # ms (now_ms): the limiter idle
    limit: int
    backend: str


class DenialCache:
    """A bounded map of denied identities (`max_entries`, at least 1). Thread-safe: a
    `Limiter` may be shared by a threaded server's threads. `clock` returns milliseconds
    (monotonic)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES,
                 clock: Callable[[], float] = now_ms, *, exhausted: bool = False) -> None:
        from .errors import refused
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise refused(f"max_entries is an int of at least 1: {max_entries!r}",
                          wrong_type=not isinstance(max_entries, int))
        if not isinstance(exhausted, bool):
            raise refused(f"exhausted is a bool: {exhausted!r}", wrong_type=True)
        self.max_entries = max_entries
        #: Whether an admission that left nothing is written too (`exhausted_wait`).
        self.exhausted = exhausted
        self.clock = clock
        self._map: OrderedDict[tuple[str | bytes, Any], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        #: The most entries ever held at once (never above max_entries).
        self.high_water = 0

    def __len__(self) -> int:
        return len(self._map)

    def get(self, key: str, policy: PolicyOrName, cost: int) -> Decision | None:
        """The cached denial of `cost` on (key, policy), or None: nothing cached, expired
        (then dropped), or a cost smaller than the denied one."""
        ident = (held(key), policy_id(policy))
        with self._lock:
            entry = self._map.get(ident)
            if entry is None:
                return None
            now = self.clock()
            if entry.until <= now:
                del self._map[ident]
                return None
            if cost < entry.cost:
                return None
            self._map.move_to_end(ident)
        retry = max(1, math.ceil(entry.until - now))
        reset = max(0, math.ceil(entry.reset_at - now))
        return Decision(False, entry.limit, entry.remaining, retry, reset, entry.backend,
                        policy, False, cached=True)

    def put(self, key: str, policy: PolicyOrName, cost: int, decision: Decision,
            sent: float, spent: bool = False) -> None:
        """Records `decision` (the server's answer to a call of `cost` sent at `sent`, ms) if
        it is a denial with retry_after_ms > 0, or, with `exhausted` on, a spending (`spent`)
        admission that left nothing (`exhausted_wait`), as a denial of any cost until then;
        anything else is not written."""
        if decision.allowed:
            wait = exhausted_wait(policy, decision) if spent and self.exhausted else None
            if wait is None:
                return
            entry = _Entry(1, 0, sent + wait, sent + decision.reset_after_ms, decision.limit,
                           decision.backend)
        elif decision.retry_after_ms <= 0 or decision.cached:
            return
        else:
            entry = _Entry(cost, decision.remaining, sent + decision.retry_after_ms,
                           sent + decision.reset_after_ms, decision.limit, decision.backend)
        ident = (held(key), policy_id(policy))
        with self._lock:
            self._map[ident] = entry
            self._map.move_to_end(ident)
            if len(self._map) > self.max_entries:
                self._evict()
            self.high_water = max(self.high_water, len(self._map))

    def _evict(self) -> None:
        """Down to max_entries: the least recently used first."""
        while len(self._map) > self.max_entries:
            self._map.popitem(last=False)

    def drop(self, key: str, policy: PolicyOrName | None = None) -> None:
        """Forgets (key, policy), or every entry of `key` when `policy` is None."""
        kept = held(key)
        with self._lock:
            if policy is not None:
                self._map.pop((kept, policy_id(policy)), None)
                return
            for ident in [i for i in self._map if i[0] == kept]:
                del self._map[ident]

    def clear(self) -> None:
        with self._lock:
            self._map.clear()
