"""Policies: an algorithm and its parameters, as the commands take them after the key.

A policy is what `RL.<ALGO> key <params>` and an `RL.ALL` clause say; it also knows the
quota and window the IETF `RateLimit-Policy` field reports (docs/commands.md, "The IETF
RateLimit fields"): for the windows `q` is the limit and `w` the window; for a rate
(GCRA's limit, the token bucket's refill, the leaky bucket's leak) `q` is that count and
`w` its period, in whole seconds.

A policy may carry a penalty (`penalty=`, `escalate=`: `PENALTY d [ESCALATE max]`, sent after
its parameters in a call and in an `RL.ALL` clause, never in `RL.PEEK`, which sees a key's
penalty without it): a denial starts one, during which the key is denied whatever its rate.

A policy may also be named on the server (`RL.POLICY SET free SLIDING 100 1m`): wherever a
`Policy` goes, its name (`"free"`, a `str`) may go instead, and the call becomes `RL.LIMIT
key free`, `RL.PEEK POLICY key free` or an `RL.ALL` clause `POLICY free`. The client then knows
the name only, not the quota or the window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Union

from ._facts import DURATION_UNITS_MS, ERRORS, MAX_POLICY_NAME
from .errors import refused

#: A duration: whole seconds (int), a timedelta (sent in ms), or the commands' text
#: (`"1500ms"`, `"1s"`, `"1m"`, `"24h"`, `"1d"`; a bare integer is seconds).
Duration = Union[int, str, timedelta]

#: A server-side policy's name (RL.POLICY), as the server takes it.
_POLICY_NAME = re.compile(rf"\A[A-Za-z0-9_.:-]{{1,{MAX_POLICY_NAME}}}\Z")

#: Digits and an optional unit (facts/rl.toml's `durations`), longest units tried first.
_DURATION = re.compile(
    r"\A([0-9]+)(" + "|".join(sorted(filter(None, DURATION_UNITS_MS), key=len, reverse=True))
    + r")?\Z", re.IGNORECASE)


def duration_arg(d: Duration) -> str:
    """The command-line text of `d`. Text goes as given: the server checks it. A value it
    cannot be is a ConfigurationError (a TypeError too, for its type)."""
    if isinstance(d, bool):
        raise refused("a duration is an int (seconds), a str or a timedelta, not a bool",
                      wrong_type=True)
    if isinstance(d, int):
        return str(d)
    if isinstance(d, timedelta):
        ms = d // timedelta(milliseconds=1)
        if ms * timedelta(milliseconds=1) != d:
            raise refused(f"a duration is whole milliseconds: {d!r}")
        return f"{ms}ms"
    if isinstance(d, str):
        return d
    raise refused(f"a duration is an int (seconds), a str or a timedelta: {d!r}", wrong_type=True)


def duration_ms(d: Duration) -> int | None:
    """`d` in milliseconds, or None for text the server would refuse."""
    m = _DURATION.match(duration_arg(d))
    if not m:
        return None
    return int(m.group(1)) * DURATION_UNITS_MS[(m.group(2) or "").lower()]


def count_arg(n: int, what: str) -> str:
    if isinstance(n, bool) or not isinstance(n, int):
        raise refused(f"{what} is an int: {n!r}", wrong_type=True)
    return str(n)


def policy_name_arg(name: str) -> str:
    """`name` checked as the server checks a policy's name (1 to MAX_POLICY_NAME of
    `A-Z a-z 0-9 _ . : -`): a ConfigurationError before anything is sent (a TypeError too
    when it is not a str)."""
    if not isinstance(name, str):
        raise refused(f"a policy name is a str: {name!r}", wrong_type=True)
    if not _POLICY_NAME.match(name):
        rule = ERRORS["policy_name"][len("ERR "):].format(max=MAX_POLICY_NAME)
        raise refused(f"{rule}: {name!r}")
    return name


@dataclass(frozen=True)
class Policy:
    """One limiter's algorithm and parameters. Build one with `gcra`, `token_bucket`,
    `leaky`, `sliding`, `sliding_log` or `fixed`; `name` names it in the IETF fields."""

    algo: str
    params: tuple[str, ...]
    quota: int
    window: Duration
    name: str = ""
    #: `("PENALTY", d)` or `("PENALTY", d, "ESCALATE", max)`, as sent after the parameters;
    #: `()` without a penalty.
    penalty: tuple[str, ...] = ()

    @property
    def window_s(self) -> int | None:
        """The IETF `w`: the window (or the rate's period) in whole seconds, rounded up."""
        ms = duration_ms(self.window)
        return None if ms is None else max(1, math.ceil(ms / 1000))

    def named(self, name: str) -> Policy:
        """This policy, named `name` in the IETF fields."""
        return replace(self, name=name)


#: What a call takes as its policy: a `Policy`, or the name of a policy on the server.
PolicyOrName = Union[Policy, str]


def policy_arg(p: PolicyOrName) -> PolicyOrName:
    """`p` checked: a Policy as it is, a name by `policy_name_arg`; anything else is a
    TypeError (and a ConfigurationError)."""
    if isinstance(p, Policy):
        return p
    if isinstance(p, str):
        return policy_name_arg(p)
    raise refused(f"a policy is a redis_rl.Policy or a policy's name (a str): {p!r}",
                  wrong_type=True)


def penalty_words(penalty: Duration | None, escalate: Duration | None) -> tuple[str, ...]:
    """`PENALTY d [ESCALATE max]` (`Policy.penalty`), or `()` without a penalty. `escalate`
    without `penalty` is a ConfigurationError before anything is sent; the durations go as
    given, and the server checks them as it checks every duration (and that `max` is at
    least `d`: `ESCALATE max must be at least PENALTY d`, a ConfigurationError too)."""
    if penalty is None:
        if escalate is not None:
            raise refused(f"escalate={escalate!r} needs a penalty: escalate is the longest a "
                          "penalty grows to, doubling from penalty=")
        return ()
    words = ("PENALTY", duration_arg(penalty))
    if escalate is not None:
        words += ("ESCALATE", duration_arg(escalate))
    return words


def gcra(limit: int, period: Duration, burst: int | None = None, name: str = "", *,
         penalty: Duration | None = None, escalate: Duration | None = None) -> Policy:
    """`limit` per `period`, evenly spaced, bursts of `burst` (the command's default: 1).
    Each policy takes `penalty=d` (a denial starts a penalty of `d`, during which the key is
    denied) and `escalate=max` (each penalty within `max` of the previous one's end lasts
    twice as long, at most `max`): `PENALTY d [ESCALATE max]`."""
    params = [count_arg(limit, "limit"), duration_arg(period)]
    if burst is not None:
        params += ["BURST", count_arg(burst, "burst")]
    return Policy("GCRA", tuple(params), limit, period, name, penalty_words(penalty, escalate))


def token_bucket(capacity: int, refill: int, period: Duration, name: str = "", *,
                 penalty: Duration | None = None, escalate: Duration | None = None) -> Policy:
    """A bucket of `capacity` tokens, `refill` more per `period`."""
    params = (count_arg(capacity, "capacity"), count_arg(refill, "refill"), duration_arg(period))
    return Policy("TOKENBUCKET", params, refill, period, name, penalty_words(penalty, escalate))


def leaky(capacity: int, leak: int, period: Duration, name: str = "", *,
          penalty: Duration | None = None, escalate: Duration | None = None) -> Policy:
    """A leaky bucket as a queue of `capacity`, `leak` leaving per `period`."""
    params = (count_arg(capacity, "capacity"), count_arg(leak, "leak"), duration_arg(period))
    return Policy("LEAKY", params, leak, period, name, penalty_words(penalty, escalate))


def _window(algo: str, limit: int, window: Duration, name: str, penalty: Duration | None,
            escalate: Duration | None) -> Policy:
    return Policy(algo, (count_arg(limit, "limit"), duration_arg(window)), limit, window, name,
                  penalty_words(penalty, escalate))


def sliding(limit: int, window: Duration, name: str = "", *, penalty: Duration | None = None,
            escalate: Duration | None = None) -> Policy:
    """The sliding window counter: `limit` per `window`, estimated."""
    return _window("SLIDING", limit, window, name, penalty, escalate)


def sliding_log(limit: int, window: Duration, name: str = "", *,
                penalty: Duration | None = None, escalate: Duration | None = None) -> Policy:
    """The exact sliding log: `limit` per `window`."""
    return _window("SLIDINGLOG", limit, window, name, penalty, escalate)


def fixed(limit: int, window: Duration, name: str = "", *, penalty: Duration | None = None,
          escalate: Duration | None = None) -> Policy:
    """Fixed windows aligned to the clock: `limit` per `window`."""
    return _window("FIXED", limit, window, name, penalty, escalate)
