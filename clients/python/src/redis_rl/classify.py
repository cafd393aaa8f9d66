"""Which case (errors.py) a redis-py error is: the one place that reads the servers' error texts.

The texts are facts/rl.toml's (the module's and the Functions library's, word for word), and
the servers' own (`unknown command`, `Function not found`, `WRONGTYPE`). redis-py drops a
reply's leading `ERR `, so the patterns start after it. An error that is none of the cases is
returned as it is.

Every error is of one of two classes, as in the Node and NGINX packages: "unavailable" (the
server out of reach, or an error whose code is one of facts/rl.toml's UNAVAILABLE_CODES:
LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, OOM, READONLY), raised as a
ServerUnavailableError, which a middleware answers 503 (or lets through with fail_open); or
any other error, a configuration's, which it answers 500 whatever fail_open says.
"""

from __future__ import annotations

import re
from typing import NoReturn

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ._facts import ERROR_PATTERNS, MESSAGES, UNAVAILABLE_CODES
from .errors import (
    ConfigurationError,
    ForeignKeyError,
    LibraryUnavailableError,
    RateLimitError,
    ServerUnavailableError,
    as_case,
)


def _whole(name: str) -> re.Pattern[str]:
    """The text of the error `name` of facts/rl.toml, whole."""
    return re.compile(rf"\A(?:{ERROR_PATTERNS[name]})\Z")


#: The module's refusals of an argument (facts/rl.toml's errors that name one), and the
#: `syntax` error's fixed texts (its `messages`: RL.ALL's and RL.PEEK's shape, lease ids).
_ARGUMENT = tuple(_whole(name) for name in (
    "wrong_arity", "bad_integer", "bad_duration", "unknown_option", "unknown_clause_option",
    "repeated_option", "missing_value", "rate_too_high", "cost_with_refund", "clause_arity",
    "no_such_policy", "policy_name", "escalate_below_penalty", "bad_unit", "unknown_zone",
    "bad_anchor",
)) + tuple(re.compile(rf"\A{re.escape(text)}\Z") for text in MESSAGES.values())

#: What a foreign key holds, by the text refusing it (`WRONGTYPE` is the servers' own too).
_FOREIGN = (
    (re.compile(rf"\AWRONGTYPE {ERROR_PATTERNS['wrong_type']}\Z"), "type"),
    (_whole("other_algorithm"), "limiter"),
    (_whole("foreign_value"), "value"),
)

#: redis-py's errors of a server out of reach. Not their subclasses: a refused password
#: (`AuthenticationError`), a full pool (`MaxConnectionsError`) are the app's to fix.
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)

#: The code of each error class redis-py makes from a reply while dropping the code from its
#: text (redis-py 8 keeps it as `status_code`; older ones do not), by class name: not every
#: redis-py version has every class.
_CODES_OF_CLASSES = {
    "BusyLoadingError": "LOADING", "OutOfMemoryError": "OOM", "ReadOnlyError": "READONLY",
    "TryAgainError": "TRYAGAIN", "MasterDownError": "MASTERDOWN",
    "ClusterDownError": "CLUSTERDOWN", "NoPermissionError": "NOPERM",
}

#: An error code: capitals (and digits), the reply's first word.
_CODE = re.compile(r"\A[A-Z][A-Z0-9]*\Z")


def error_code(err: BaseException) -> str | None:
    """The code of the server's error reply `err` (`OOM`, `READONLY`, `ERR`, ...), or None
    for an error that is no reply."""
    code = getattr(err, "status_code", None)
    if isinstance(code, str) and code:
        return code
    for cls in type(err).__mro__:
        if cls.__name__ in _CODES_OF_CLASSES and cls.__module__.startswith("redis"):
            return _CODES_OF_CLASSES[cls.__name__]
    if not isinstance(err, ResponseError):
        return None
    first = str(err).split(" ", 1)[0]
    return first if _CODE.match(first) else "ERR"  # redis-py drops a leading `ERR `


def unavailable(err: BaseException) -> bool:
    """The class of `err`: True when the server cannot decide right now (out of reach, or an
    error whose code is one of UNAVAILABLE_CODES), False for every other error."""
    if isinstance(err, RateLimitError):
        return isinstance(err, ServerUnavailableError)
    return type(err) in _UNREACHABLE or error_code(err) in UNAVAILABLE_CODES


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
    if unavailable(err):
        return as_case(ServerUnavailableError, type(err), *err.args)
    if not isinstance(err, ResponseError) or unknown_command(err) or function_missing(err):
        return err
    holds = foreign_holds(err)
    if holds is not None:
        found = as_case(ForeignKeyError, type(err), *err.args)
        found.holds = holds  # type: ignore[attr-defined]
        return found
    if any(pattern.search(str(err)) for pattern in _ARGUMENT):
        return as_case(ConfigurationError, type(err), *err.args)
    return err


def library_unavailable(err: BaseException, why: str) -> BaseException:
    """The error of a library that cannot be used: `why`, then the server's text, for a
    reply: a LibraryUnavailableError, or a ServerUnavailableError where the reply's code says
    the server cannot do it right now (`OOM`, `READONLY`, ...); a connection failure is a
    ServerUnavailableError as any call's."""
    if isinstance(err, RateLimitError) or type(err) in _UNREACHABLE:
        return classify(err)
    if isinstance(err, ResponseError) or error_code(err) is not None:
        case = ServerUnavailableError if unavailable(err) else LibraryUnavailableError
        return as_case(case, type(err), f"{why}: {err}")
    return classify(err)


def reraise(mapped: BaseException, err: BaseException) -> NoReturn:
    """Raises `mapped` from `err` (or `err` itself when nothing mapped it)."""
    if mapped is err:
        raise err
    raise mapped from err

