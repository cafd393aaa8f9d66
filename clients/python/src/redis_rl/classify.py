"""Which case (errors.py) a redis-py error is: the one place that reads the servers' error texts.

The texts are the module's (src/error.rs), which the Functions library answers word for word,
and the servers' own (`unknown command`, `Function not found`, `WRONGTYPE`). redis-py drops a
reply's leading `ERR `, so the patterns start after it. An error that is none of the cases is
returned as it is.
"""

from __future__ import annotations

import re
from typing import NoReturn

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .errors import (
    ConfigurationError,
    ForeignKeyError,
    LibraryUnavailableError,
    RateLimitError,
    ServerUnavailableError,
    as_case,
)

#: The module's refusals of an argument (src/error.rs, each `RlError` that names one), and the
#: library's that src/error.rs has as `Syntax` (RL.PEEK, RL.ALL, lease ids).
_ARGUMENT = re.compile("|".join((
    r"\Awrong number of arguments for '",  # WrongArity
    r"\A\S+ must be an integer from \d+ to \d+\Z",  # BadInteger
    r"\A\S+ must be a duration from 1ms to 3650d",  # BadDuration
    r"\Aunknown option '.*' (for '|in RL\.ALL clause )",  # UnknownOption, UnknownClauseOption
    r"\Aoption \S+ given more than once\Z",  # RepeatedOption
    r"\Aoption \S+ needs a value\Z",  # MissingValue
    r"\A\S+ per \S+ must be at most 1 per nanosecond",  # RateTooHigh
    r"\ACOST and REFUND cannot be used together\Z",  # CostWithRefund
    r"\ARL\.ALL clause \S+ has too few parameters\Z",  # ClauseArity
    r"\ARL\.ALL (needs|expects|keys must be distinct)",  # Syntax: RL.ALL's shape
    r"\ARL\.PEEK expects an algorithm",  # Syntax: RL.PEEK's algorithm
    r"\Alease_id must be 1 to 256 bytes\Z",  # Syntax: a lease id
)))

#: What a foreign key holds, by the text refusing it.
_FOREIGN = (
    (re.compile(r"\AWRONGTYPE "), "type"),  # WrongType, and the server's own
    (re.compile(r"\Akey holds \S+ state, not \S+ state"), "limiter"),  # OtherAlgorithm
    (re.compile(r"\Akey holds a value that \S+ did not write"), "value"),  # ForeignValue
)

#: redis-py's errors of a server out of reach. Not their subclasses: a refused password
#: (`AuthenticationError`), a full pool (`MaxConnectionsError`) are the app's to fix.
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


def unknown_command(err: BaseException) -> bool:
    """The server has no such command: its `unknown command` error, or redis-py's cluster
    client refusing a command its servers do not list."""
    text = str(err).lower()
    return text.startswith("unknown command") or text.endswith(
        "command doesn't exist in redis commands")


def function_missing(err: BaseException) -> bool:
    """`FCALL` of a function the server does not have: the library is not loaded."""
    return isinstance(err, ResponseError) and "function not found" in str(err).lower()


def foreign_holds(err: BaseException) -> str | None:
    """What a key refused as foreign holds (`ForeignKeyError.holds`), or None."""
    if not isinstance(err, ResponseError):
        return None
    text = str(err)
    return next((holds for pattern, holds in _FOREIGN if pattern.search(text)), None)


def classify(err: BaseException) -> BaseException:
    """The package's error for `err`, or `err` itself when it is none of the cases."""
    if isinstance(err, RateLimitError):
        return err
    if type(err) in _UNREACHABLE:
        return as_case(ServerUnavailableError, type(err), *err.args)
    if not isinstance(err, ResponseError) or unknown_command(err) or function_missing(err):
        return err
    holds = foreign_holds(err)
    if holds is not None:
        found = as_case(ForeignKeyError, type(err), *err.args)
        found.holds = holds  # type: ignore[attr-defined]
        return found
    if _ARGUMENT.search(str(err)):
        return as_case(ConfigurationError, type(err), *err.args)
    return err


def library_unavailable(err: BaseException, why: str) -> BaseException:
    """The error of a library that cannot be used: `why`, then the server's text, for a
    reply; a connection failure is still a ServerUnavailableError."""
    if isinstance(err, ResponseError) and not isinstance(err, RateLimitError):
        return as_case(LibraryUnavailableError, type(err), f"{why}: {err}")
    return classify(err)


def reraise(mapped: BaseException, err: BaseException) -> NoReturn:
    """Raises `mapped` from `err` (or `err` itself when nothing mapped it)."""
    if mapped is err:
        raise err
    raise mapped from err

