"""What `reserve` and `reserve_all` do, as steps both limiters run (`Api._drive`): the call
that spends the estimate, then, where a layer's reply reads as a `SHADOW` policy's denial,
the policy's definition, then the reservation.

A `SHADOW` policy answers a denial as admitted (`allowed 1`, `remaining 0`, a non-zero
`retry_after_ms`) and writes nothing: a layer so answered reserved nothing, and its
reservation must settle nothing there. A named `LEAKY` policy's admission that takes its
queue's last place reads the same (its `retry_after_ms` is the queue's delay) and did spend,
so where a reply reads so, the policy's definition (`RL.POLICY GET name`, the library's
`rl_policy`) decides: an enforced `LEAKY` policy's reply is an admission; any other policy's
is a shadowed denial. A `SHADOW` `LEAKY` policy's two replies cannot be told apart: it is read
as a shadowed denial, settling nothing (never giving back what may not have been spent).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from . import commands
from .commands import Command
from .decision import AllDecision, Decision
from .policy import PolicyOrName

#: The steps of a reservation: each yields a command and is sent its result; they return
#: (decision, reservation or None).
Steps = Generator[Command, Any, tuple[Any, Any]]


def enforced_leaky(line: str | None) -> bool:
    """A policy's line (`name LEAKY capacity leak period [SHADOW]`) is an enforced LEAKY
    policy's: one whose admissions carry a delay, and which never shadows."""
    words = (line or "").upper().split()
    return len(words) > 1 and words[1] == "LEAKY" and "SHADOW" not in words[2:]


def reserving(limiter: Any, cmd: Command, layers: Sequence[tuple[str, PolicyOrName]],
              spent: Sequence[int], estimate: int, together: bool) -> Steps:
    """Sends `cmd` (spending the estimate on the layers at positions `spent` of `layers`,
    in key order), reads which of those a `SHADOW` policy denied, and makes the reservation
    of the others: (decision, reservation), the reservation None when denied."""
    sent_at = time.monotonic()
    decision = yield cmd
    if not decision.allowed:
        return decision, None
    per: list[Decision] = list(decision.layers) if together else [decision]
    definitions: dict[str, str | None] = {}
    for i in spent:
        d = per[i]
        if not d._looks_shadowed:
            continue
        name = str(d.policy)
        if name not in definitions:
            definitions[name] = yield commands.policy_definition(layers[i][0], name)
        per[i] = replace(d, known_shadowed=not enforced_leaky(definitions[name]))
    if together:
        decision = AllDecision(per[decision.index], tuple(per), decision.index)
    else:
        decision = per[0]
    held = [i for i in spent if not per[i].shadowed]
    reservation = limiter._reservation(
        limiter, [(layers[i][0], layers[i][1]) for i in held], estimate, together, sent_at,
        [per[i].reset_after_ms for i in held])
    return decision, reservation
