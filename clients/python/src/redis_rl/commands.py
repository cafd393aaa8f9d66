"""Each call as the module's command and as the Functions library's `FCALL`, with its reply.

The two backends take the same words after the key (docs/managed-redis.md): `RL.<ALGO> key
params` is `FCALL rl_<algo> 1 key params`, `RL.ALL numkeys keys clauses` is `FCALL rl_all
numkeys keys clauses`, `RL.PEEK ALGO key params` is `FCALL_RO rl_peek 1 key ALGO params`.
A policy named on the server (a `str`) is `RL.LIMIT key name [options]` (`FCALL rl_limit 1
key name [options]`), `RL.PEEK POLICY key name [COST n]` (`FCALL_RO rl_peek 1 key POLICY name
[COST n]`) and the `RL.ALL` clause `POLICY name [COST n]`. `COST n`, `REFUND n` and `DEBIT n`
go after a policy's parameters (or name) in each, and a policy's `PENALTY d [ESCALATE max]`
right after its parameters (not in `RL.PEEK`, which takes none). `RL.BAN key ms` is `FCALL
rl_ban 1 key ms`. Nothing here talks to a server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from ._facts import KINDS, MAX_DEBT
from .decision import AllDecision, Decision
from .errors import refused
from .policy import Duration, PolicyOrName, count_arg, duration_arg, policy_arg


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
    #: The key whose node the call goes to, where it is not `keys[0]` (a call without keys).
    route: str | None = None

    @property
    def node_key(self) -> str:
        return self.keys[0] if self.route is None else self.route

    def library(self) -> tuple[Any, ...]:
        fcall = "FCALL_RO" if self.read_only else "FCALL"
        return (fcall, self.function, len(self.keys), *self.keys, *self.rest)


def _cost(cost: int) -> list[str]:
    """`COST n`, or nothing for the default 1. The type is checked first: `1.0` and `True`
    equal 1 but are refused (a ConfigurationError and a TypeError), as every other count that
    is not an int."""
    text = count_arg(cost, "cost")
    return [] if text == "1" else ["COST", text]


def _options(cost: int, refund: int | None, peek: bool, block_ms: int | None,
             debit: int | None = None) -> list[str]:
    out = _cost(cost)
    if refund is not None:
        out = ["REFUND", count_arg(refund, "refund")]
    if debit is not None:
        out = ["DEBIT", count_arg(debit, "debit")]
    if peek:
        out.append("PEEK")
    if block_ms is not None:
        out += ["BLOCK", count_arg(block_ms, "block_ms")]
    return out


def _clause(policy: PolicyOrName, penalty: bool = True) -> list[str]:
    """What follows the key (or the keys, in `RL.ALL`) for `policy`: `ALGO params [PENALTY d
    [ESCALATE max]]` (without the penalty for `RL.PEEK`, which takes none), or `POLICY
    name`."""
    if isinstance(policy, str):
        return ["POLICY", policy]
    return [policy.algo, *policy.params, *(policy.penalty if penalty else ())]


def decide(
    key: str,
    policy: PolicyOrName,
    cost: int = 1,
    refund: int | None = None,
    peek: bool = False,
    block_ms: int | None = None,
    debit: int | None = None,
) -> Command:
    """`RL.<ALGO> key params [PENALTY d [ESCALATE max]] [COST n | REFUND n | DEBIT n] [PEEK]
    [BLOCK ms]`, or for a policy's name `RL.LIMIT key name [COST n | REFUND n | DEBIT n] [PEEK]
    [BLOCK ms]` (a named policy's penalty is the server's)."""
    policy = policy_arg(policy)
    options = _options(cost, refund, peek, block_ms, debit)
    if isinstance(policy, str):
        module: tuple[Any, ...] = ("RL.LIMIT", key, policy, *options)
        function, rest = "rl_limit", (policy, *options)
    else:
        rest = (*policy.params, *policy.penalty, *options)
        module, function = (f"RL.{policy.algo}", key, *rest), KINDS[policy.algo].fcall
    never_denied = False if refund is not None or debit is not None else None
    return Command(
        module=module,
        function=function,
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: Decision.from_reply(reply, backend, policy, never_denied),
    )


def policy_definition(key: str, name: str) -> Command:
    """`RL.POLICY GET name` (`FCALL_RO rl_policy 0 GET name`): the policy's line (`name ALGO
    params [SHADOW]`, a str) or None, from the node holding `key` (a node's policies are its
    own)."""
    return Command(
        module=("RL.POLICY", "GET", name),
        function="rl_policy",
        keys=(),
        rest=("GET", name),
        decode=lambda reply, backend: None if reply is None else (
            reply.decode() if isinstance(reply, bytes) else str(reply)),
        read_only=True,
        route=key,
    )


def peek(key: str, policy: PolicyOrName, cost: int = 1) -> Command:
    """`RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name [COST n]` for a policy's
    name): read-only, for replicas and read-only users. A policy's penalty is not sent (the
    command takes none): a penalized key's peek is denied whatever the policy says."""
    policy = policy_arg(policy)
    word, *params = _clause(policy, penalty=False)
    rest = (word, *params, *_cost(cost))
    return Command(
        module=("RL.PEEK", word, key, *rest[1:]),
        function="rl_peek",
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: Decision.from_reply(reply, backend, policy),
        read_only=True,
    )


def all_of(layers: Sequence[tuple[str, PolicyOrName] | tuple[str, PolicyOrName, int]],
           peek: bool) -> Command:
    """`RL.ALL numkeys key... ALGO params [COST n] ... [PEEK]`: every layer or none. A layer's
    policy may be a name: its clause is `POLICY name [COST n]`."""
    if not layers:
        raise refused("all() needs at least one (key, policy) layer")
    checked = [(layer[0], policy_arg(layer[1])) for layer in layers]
    costs = [_cost(layer[2] if len(layer) > 2 else 1) for layer in layers]  # type: ignore[misc]
    return all_clauses(checked, costs, peek)


def all_clauses(layers: Sequence[tuple[str, PolicyOrName]], options: Sequence[list[str]],
                peek: bool = False) -> Command:
    """`RL.ALL numkeys key... clause [options] ... [PEEK]`, each layer's clause followed by
    its options (`COST n`, `REFUND n`, `DEBIT n` or nothing)."""
    keys = tuple(layer[0] for layer in layers)
    policies = [policy_arg(layer[1]) for layer in layers]
    rest: list[Any] = []
    for policy, opts in zip(policies, options):
        rest += [*_clause(policy), *opts]
    if peek:
        rest.append("PEEK")

    # A layer with a REFUND or DEBIT is never denied, so never a shadowed denial.
    never_denied = [False if {"REFUND", "DEBIT"} & set(opts) else None for opts in options]

    def decode(reply: Any, backend: str) -> AllDecision:
        per = [Decision.from_reply(r, backend, p, n)
               for r, p, n in zip(reply[5], policies, never_denied)]
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


def settle_options(difference: int) -> list[str]:
    """What settles a reservation that spent `difference` too few units (too many, when
    negative): `DEBIT d` (at most MAX_DEBT), `REFUND -d`, or nothing for 0."""
    if difference > 0:
        return ["DEBIT", str(min(difference, MAX_DEBT))]
    if difference < 0:
        return ["REFUND", str(-difference)]
    return []


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


def ban(key: str, ms: int) -> Command:
    """`RL.BAN key ms` (`FCALL rl_ban 1 key ms`): the key's penalty set to end `ms` from now
    (0 lifts it), whatever limiter the key holds; True if the key existed."""
    rest = (count_arg(ms, "ms"),)
    return Command(
        module=("RL.BAN", key, *rest),
        function="rl_ban",
        keys=(key,),
        rest=rest,
        decode=lambda reply, backend: int(reply) == 1,
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


def top_args(policy: str | None, command: str | None, count: int) -> tuple[Any, ...]:
    """`RL.TOP`'s arguments: exactly one of a policy's name and a command's."""
    if (policy is None) == (command is None):
        raise TypeError("top() takes a policy's name or command=, not both")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise TypeError(f"count is a positive int: {count!r}")
    target = (policy,) if command is None else ("COMMAND", command)
    return ("RL.TOP", *target, "COUNT", count)
