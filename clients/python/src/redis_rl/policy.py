"""Policies: an algorithm and its parameters, as the commands take them after the key.

A policy is what `RL.<ALGO> key <params>` and an `RL.ALL` clause say; it also knows the
quota and window the IETF `RateLimit-Policy` field reports (docs/commands.md, "The IETF
RateLimit fields"): for the windows `q` is the limit and `w` the window; for a rate
(GCRA's limit, the token bucket's refill, the leaky bucket's leak) `q` is that count and
`w` its period, in whole seconds.

A policy may carry a penalty (`penalty=`, `escalate=`: `PENALTY d [ESCALATE max]`, sent after
its parameters in a call and in an `RL.ALL` clause, never in `RL.PEEK`, which sees a key's
penalty without it): a denial starts one, during which the key is denied whatever its rate.

A quota (`quota(10_000, "MONTH", tz="Europe/Paris", anchor="2026-01-15T00:00")`: `RL.QUOTA`'s
calendar) reports `q` = its limit and `w` = the current period's length in whole days, in
seconds (`quota_period_s`): 86,400 for a day, 604,800 for a week, a month's from its renewal
back to the one before (28 to 31 days), offset changes not counted.

A policy may also be named on the server (`RL.POLICY SET free SLIDING 100 1m`): wherever a
`Policy` goes, its name (`"free"`, a `str`) may go instead, and the call becomes `RL.LIMIT
key free`, `RL.PEEK POLICY key free` or an `RL.ALL` clause `POLICY free`. The client then knows
the name only, not the quota or the window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
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
    `leaky`, `sliding`, `sliding_log`, `fixed` or `quota`; `name` names it in the IETF
    fields."""

    algo: str
    params: tuple[str, ...]
    quota: int
    window: Duration
    name: str = ""
    #: `("PENALTY", d)` or `("PENALTY", d, "ESCALATE", max)`, as sent after the parameters;
    #: `()` without a penalty.
    penalty: tuple[str, ...] = ()
    #: A quota's calendar, `(unit, anchor's day of the month)` (`("MONTH", 15)`); None for
    #: the other algorithms.
    calendar: tuple[str, int] | None = None

    @property
    def window_s(self) -> int | None:
        """The IETF `w`: the window (or the rate's period) in whole seconds, rounded up."""
        ms = duration_ms(self.window)
        return None if ms is None else max(1, math.ceil(ms / 1000))

    def period_s(self, reset_after_ms: int, now_ms: int | None = None) -> int | None:
        """The IETF `w` of a decision whose reply said `reset_after_ms`: a quota's current
        period (`quota_period_s`, its renewal `now + reset_after_ms`), else `window_s`."""
        if self.calendar is None:
            return self.window_s
        if now_ms is None:
            now_ms = int(datetime.now(timezone.utc).timestamp() * 1000)
        return quota_period_s(self.calendar, now_ms + max(0, reset_after_ms))

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


#: A quota's units, and the window its insurance counts in (the longest such period).
QUOTA_UNITS = {"DAY": "1d", "WEEK": "7d", "MONTH": "31d"}
_ANCHOR = re.compile(r"\A[0-9]{4}-[0-9]{2}-([0-9]{2})T[0-9]{2}:[0-9]{2}\Z")


def _days_in_month(year: int, month: int) -> int:
    return ((date(year + month // 12, month % 12 + 1, 1)) - date(year, month, 1)).days


def _renewal_date(year: int, month: int, day: int) -> date:
    """The month's renewal date of an anchor on `day`: that day, or the month's last."""
    return date(year, month, min(day, _days_in_month(year, month)))


def quota_period_s(calendar: tuple[str, int], renewal_ms: int) -> int:
    """The length in seconds of the quota period that ends at `renewal_ms` (epoch ms), on
    `calendar` `(unit, anchor's day)`: a day 86,400, a week 604,800, a month the whole days
    from the renewal before it to it (an anchor on the 31st: 28 to 31). The renewal's local
    date is within a day of its UTC date (a zone's offset is under 24 hours), and renewals
    are at least 28 days apart, so it is the first renewal date from the day before the UTC
    date on: no time zone database is needed. A change of offset inside the period (DST) is
    not counted."""
    unit, day = calendar
    if unit != "MONTH":
        return 86_400 if unit == "DAY" else 604_800
    utc = datetime.fromtimestamp(renewal_ms / 1000, timezone.utc).date() - timedelta(days=1)
    y, m = utc.year, utc.month
    if utc > _renewal_date(y, m, day):
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    py, pm = (y - 1, 12) if m == 1 else (y, m - 1)
    return (_renewal_date(y, m, day) - _renewal_date(py, pm, day)).days * 86_400


def _anchor_arg(anchor: str | datetime) -> str:
    if isinstance(anchor, datetime):
        if anchor.tzinfo is not None:
            raise refused("an anchor is a local wall time: a naive datetime or "
                          f"'yyyy-mm-ddThh:mm' with the zone in tz=, not {anchor!r}")
        return anchor.strftime("%Y-%m-%dT%H:%M")
    if not isinstance(anchor, str):
        raise refused(f"an anchor is a str 'yyyy-mm-ddThh:mm' or a naive datetime: {anchor!r}",
                      wrong_type=True)
    return anchor


def quota(limit: int, unit: str, name: str = "", *, tz: str | None = None,
          anchor: str | datetime | None = None, penalty: Duration | None = None,
          escalate: Duration | None = None) -> Policy:
    """A quota on the calendar (`RL.QUOTA`): `limit` per `unit` (`"DAY"`, `"WEEK"` or
    `"MONTH"`, any case), renewing at `anchor`'s local wall time (`"yyyy-mm-ddThh:mm"` or a
    naive datetime; default `2001-01-01T00:00`: midnight, Mondays, the 1st) in `tz` (an IANA
    name, `"+05:30"`, default UTC). The zone and the anchor go as given: the server checks
    them (`unknown time zone`, `ANCHOR must be ...`: ConfigurationErrors)."""
    if not isinstance(unit, str):
        raise refused(f"a quota's unit is a str, DAY, WEEK or MONTH: {unit!r}", wrong_type=True)
    word = unit.upper()
    if word not in QUOTA_UNITS:
        raise refused(f"{ERRORS['bad_unit'][len('ERR '):]}: {unit!r}")
    params = [count_arg(limit, "limit"), word]
    day = 1
    if tz is not None:
        if not isinstance(tz, str):
            raise refused(f"a quota's tz is a str (an IANA name, +05:30, UTC): {tz!r}",
                          wrong_type=True)
        params += ["TZ", tz]
    if anchor is not None:
        text = _anchor_arg(anchor)
        params += ["ANCHOR", text]
        m = _ANCHOR.match(text)
        day = int(m.group(1)) if m else 1  # the server refuses an anchor that is no date
    return Policy("QUOTA", tuple(params), limit, QUOTA_UNITS[word], name,
                  penalty_words(penalty, escalate), (word, day))
