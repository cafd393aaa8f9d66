"""Decisions: the commands' five integers, typed, and the HTTP headers they give.

The headers are those of docs/commands.md ("The shared reply" and "The IETF RateLimit
fields"): seconds are milliseconds divided by 1,000 and rounded up, so a client that waits
them is never early; `Retry-After` is sent on a denial only, and never for a request that
can never be admitted (`retry_after_ms == -1`). A quota's `RateLimit-Policy` `w` is its current
period's length in whole days (`Policy.period_s`: from the renewal, now + `reset_after_ms`).

A decision by a policy named on the server (its `policy` is the name, a `str`) knows the
reply, not the policy's quota or window: its `RateLimit-Policy` is `"<name>";q=<limit>`, `q`
the reply's `limit` (a window's limit; a rate's burst or capacity) and no `w`. A `SHADOW`
policy answers a denial as admitted, with nothing remaining and a non-zero `retry_after_ms`:
that decision is `shadowed`. A `DEBIT` or `REFUND` is never denied, so its decision (a
settlement's among them) is never `shadowed`, whatever its reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .policy import PolicyOrName

#: Which server side answered: the `rl` module's commands, or the Functions library.
MODULE = "module"
LIBRARY = "library"


def ceil_seconds(ms: int) -> int:
    return -(-ms // 1000)


@dataclass(frozen=True)
class Decision:
    """One limiter's decision (the shared reply), and where it came from."""

    allowed: bool
    limit: int
    remaining: int
    #: Denied: ms until the same request is admitted, -1 if it never can be. Allowed: 0
    #: (for the leaky bucket, the delay before performing the request).
    retry_after_ms: int
    #: ms until the limiter is idle again; 0 when idle.
    reset_after_ms: int
    #: MODULE or LIBRARY.
    backend: str
    #: The policy decided, for the IETF fields: a Policy, a server-side policy's name (a
    #: str), or None for leases.
    policy: PolicyOrName | None = None
    #: Whether this is a shadowed denial, where that is known besides the reply: False for a
    #: DEBIT's or a REFUND's (never denied), a reservation's as read from its policy's
    #: definition; None: read from the reply (`shadowed`).
    known_shadowed: bool | None = field(default=None, repr=False, compare=False)
    #: A denial given by the limiter's denial cache (cache.py), without a call: the server's
    #: denial as it stands now.
    cached: bool = field(default=False, compare=False)
    #: Decided by the limiter's insurance (insurance.py), the server unavailable: this
    #: process's share of the policy, in its own memory, nothing spent on the server.
    insured: bool = field(default=False, compare=False)

    @classmethod
    def from_reply(cls, reply: Sequence[int], backend: str, policy: PolicyOrName | None,
                   known_shadowed: bool | None = None) -> Decision:
        allowed, limit, remaining, retry, reset = (int(x) for x in reply[:5])
        return cls(allowed == 1, limit, remaining, retry, reset, backend, policy,
                   known_shadowed)

    @property
    def _looks_shadowed(self) -> bool:
        """The reply of a `SHADOW` policy's denial: by a policy named on the server, admitted,
        nothing remaining, a non-zero `retry_after_ms`."""
        return (isinstance(self.policy, str) and self.allowed and self.remaining == 0
                and self.retry_after_ms != 0)

    @property
    def shadowed(self) -> bool:
        """A `SHADOW` policy's denial, answered as admitted: a policy named on the server that
        admitted with nothing remaining and a non-zero `retry_after_ms` (what the enforced
        policy would have answered: when to retry, -1 for never). Always False for a Policy
        and a lease, which are never shadowed, and for a `DEBIT` or a `REFUND` (a
        settlement's too), which is never denied. (A named `LEAKY` policy's admission that
        takes the queue's last place reads so too: it is admitted, to be performed after its
        delay. `reserve` tells the two apart by the policy's definition: docs/python.md,
        "Reservations".)"""
        return self._looks_shadowed if self.known_shadowed is None else self.known_shadowed

    @property
    def policy_name(self) -> str:
        """The policy's name: a Policy's own `name` (may be ""), or the server-side policy's."""
        if isinstance(self.policy, str):
            return self.policy
        return self.policy.name if self.policy is not None else ""

    @property
    def retry_after(self) -> int | None:
        """`Retry-After` in seconds on a denial; None when allowed or never admissible."""
        if self.allowed or self.retry_after_ms < 0:
            return None
        return ceil_seconds(self.retry_after_ms)

    @property
    def reset_after(self) -> int:
        """`X-RateLimit-Reset` and the IETF `t`: seconds until idle, rounded up."""
        return ceil_seconds(self.reset_after_ms)

    def headers(self) -> dict[str, str]:
        """`X-RateLimit-Limit`, `-Remaining`, `-Reset`, and `Retry-After` on a denial."""
        out = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_after),
        }
        if self.retry_after is not None:
            out["Retry-After"] = str(self.retry_after)
        return out

    def ietf_headers(self, name: str | None = None) -> dict[str, str]:
        """The IETF draft's `RateLimit-Policy` and `RateLimit` fields (and `Retry-After` on a
        denial), for the policy named `name` (default: the policy's name, else "default").
        `RateLimit-Policy` needs the policy: a lease decision has only `RateLimit`; a
        server-side policy's is `"<name>";q=<limit>`, without `w` (its window is the
        server's)."""
        label = name or self.policy_name or "default"
        out = {}
        if isinstance(self.policy, str):
            out["RateLimit-Policy"] = f'"{label}";q={self.limit}'
        elif self.policy is not None:
            w = self.policy.period_s(self.reset_after_ms)
            if w is not None:
                out["RateLimit-Policy"] = f'"{label}";q={self.policy.quota};w={w}'
        out["RateLimit"] = f'"{label}";r={self.remaining};t={self.reset_after}'
        if self.retry_after is not None:
            out["Retry-After"] = str(self.retry_after)
        return out

    def all_headers(self, name: str | None = None) -> dict[str, str]:
        """`headers()` and `ietf_headers(name)` together."""
        return {**self.headers(), **self.ietf_headers(name)}


@dataclass(frozen=True)
class AllDecision:
    """`RL.ALL`'s reply: the binding layer's decision, and every layer's in key order."""

    binding: Decision
    #: Every layer's decision. A denial from the denial cache knows only its cached layers:
    #: the others are None (no call was made).
    layers: tuple[Decision | None, ...]
    #: The binding layer's position in `layers` (the first whose reply is the binding one).
    index: int

    @property
    def cached(self) -> bool:
        """Denied by the denial cache, without a call."""
        return self.binding.cached

    @property
    def insured(self) -> bool:
        """Decided by the limiter's insurance, the server unavailable (a denial knows only
        its denying layer: the others are None)."""
        return self.binding.insured

    @property
    def allowed(self) -> bool:
        return self.binding.allowed

    @property
    def shadowed(self) -> tuple[int, ...]:
        """The positions in `layers` of the layers whose `SHADOW` policy denied (each layer's
        `shadowed`): empty when none did. The call was decided by the other layers."""
        return tuple(i for i, layer in enumerate(self.layers)
                     if layer is not None and layer.shadowed)


@dataclass(frozen=True)
class TopEntry:
    """One entry of `RL.TOP` (`Limiter.top`): a key the policy (or command) denied, its
    denials counted, and how much that count may exceed the true number (Space-Saving:
    the true denials lie between `denials - overestimate` and `denials`). A key longer than
    128 bytes is its first 128 bytes followed by `...`."""

    key: str
    denials: int
    overestimate: int

    @classmethod
    def from_reply(cls, reply: Any) -> list[TopEntry]:
        def text(k: Any) -> str:
            return k.decode("utf-8", "surrogateescape") if isinstance(k, bytes) else str(k)
        return [cls(text(k), int(n), int(over)) for k, n, over in reply]
