"""Each call as the module's command and as the Functions library's `FCALL`, with its reply.

The two backends take the same words after the key (docs/managed-redis.md): `RL.<ALGO> key
params` is `FCALL rl_<algo> 1 key params`, `RL.ALL numkeys keys clauses` is `FCALL rl_all
numkeys keys clauses`, `RL.PEEK ALGO key params` is `FCALL_RO rl_peek 1 key ALGO params`.
Nothing here talks to a server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from ._facts import KINDS
from .decision import AllDecision, Decision
from .errors import refused
from .policy import Duration, Policy, count_arg, duration_arg


@dataclass(frozen=True)
class Command:
    """One call: `module` is the module's command line; the library's is `FCALL[_RO]
    function numkeys keys... rest`. `decode(reply, backend)` makes the result."""

    module: tuple[Any, ...]
    function: str
    keys: tuple[str, ...]
    rest: tuple[Any, ...]
    decode: Callable[[Any, str], Any]
    read_only: bool = False

    def library(self) -> tuple[Any, ...]:
        fcall = "FCALL_RO" if self.read_only else "FCALL"
        return (fcall, self.function, len(self.keys), *self.keys, *self.rest)


def _cost(cost: int) -> list[str]:
    """`COST n`, or nothing for the default 1. The type is checked first: `1.0` and `True`
    equal 1 but are refused (a ConfigurationError and a TypeError), as every other count that
    is not an int."""
    text = count_arg(cost, "cost")
    return [] if text == "1" else ["COST", text]


def _options(cost: int, refund: int | None, peek: bool, block_ms: int | None) -> list[str]:
    out = _cost(cost)
    if refund is not None:
        out = ["REFUND", count_arg(refund, "refund")]
    if peek:
        out.append("PEEK")
    if block_ms is not None:
        out += ["BLOCK", count_arg(block_ms, "block_ms")]
    return out


def decide(
    key: str,
    policy: Policy,
    cost: int = 1,
    refund: int | None = None,
    peek: bool = False,
    block_ms: int | None = None,
) -> Command:
    """`RL.<ALGO> key params [COST n | REFUND n] [PEEK] [BLOCK ms]`."""
    rest = (*policy.params, *_options(cost, refund, peek, block_ms))
    return Command(
        module=(f"RL.{policy.algo}", key, *rest),
        function=KINDS[policy.algo].fcall,
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: Decision.from_reply(reply, backend, policy),
    )


def peek(key: str, policy: Policy, cost: int = 1) -> Command:
    """`RL.PEEK ALGO key params [COST n]`: read-only, for replicas and read-only users."""
    rest = (policy.algo, *policy.params, *_options(cost, None, False, None))
    return Command(
        module=("RL.PEEK", policy.algo, key, *rest[1:]),
        function="rl_peek",
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: Decision.from_reply(reply, backend, policy),
        read_only=True,
    )


def all_of(layers: Sequence[tuple[str, Policy] | tuple[str, Policy, int]], peek: bool) -> Command:
    """`RL.ALL numkeys key... ALGO params [COST n] ... [PEEK]`: every layer or none."""
    if not layers:
        raise refused("all() needs at least one (key, policy) layer")
    keys = tuple(layer[0] for layer in layers)
    policies = [layer[1] for layer in layers]
    rest: list[Any] = []
    for layer in layers:
        policy, cost = layer[1], (layer[2] if len(layer) > 2 else 1)  # type: ignore[misc]
        rest += [policy.algo, *policy.params, *_cost(cost)]
    if peek:
        rest.append("PEEK")

    def decode(reply: Any, backend: str) -> AllDecision:
        per = [Decision.from_reply(r, backend, p) for r, p in zip(reply[5], policies)]
        head = [int(x) for x in reply[:5]]
        index = next(i for i, r in enumerate(reply[5]) if [int(x) for x in r] == head)
        return AllDecision(per[index], tuple(per), index)

    return Command(
        module=("RL.ALL", len(keys), *keys, *rest),
        function="rl_all",
        keys=keys,
        rest=tuple(rest),
        decode=decode,
    )


def acquire(
    key: str, limit: int, timeout: Duration, lease_id: str | bytes, peek: bool, block_ms: int | None
) -> Command:
    """`RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]`."""
    rest = (count_arg(limit, "limit"), duration_arg(timeout), lease_id,
            *_options(1, None, peek, block_ms))
    return Command(
        module=("RL.ACQUIRE", key, *rest),
        function="rl_acquire",
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: Decision.from_reply(reply, backend, None),
    )


def release(key: str, lease_id: str | bytes) -> Command:
    """`RL.RELEASE key lease_id`: True if the lease was held."""
    return Command(
        module=("RL.RELEASE", key, lease_id),
        function="rl_release",
        keys=(key,),
        rest=(lease_id,),
        decode=lambda reply, backend: int(reply) == 1,
    )
