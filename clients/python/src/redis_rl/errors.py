"""The package's errors: one base, `RateLimitError`, and one class per case a caller handles.

- `ConfigurationError` (a ValueError): a limit or a call's arguments refused, by this package
  before anything is sent or by the server (the module's or the library's `ERR` about an
  argument). Refused for its type (a bool where an int goes), it is a TypeError too.
- `ServerUnavailableError`: the server cannot be reached (refused, reset, timed out).
- `LibraryUnavailableError`: the server has no module, and the Functions library is missing and
  cannot be loaded (`FUNCTION LOAD` refused or failing, or no Functions at all).
- `ForeignKeyError`: the key holds another Redis type, another limiter's state, or a value no
  limiter wrote (`holds` says which); the key is left as it is.
- `ReservationSettledError`: a reservation (`reserve`, `reserve_all`) settled a second time;
  raised by this package, nothing sent.

An error that comes from redis-py is raised as a class that is both the case's and redis-py's
own (`ForeignKeyError` from a `ResponseError` is a `ResponseError`, one from a
`NoPermissionError` a `NoPermissionError`), with redis-py's error as its `__cause__` and its
text: what callers caught before still catches. classify.py decides which case an error is.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = [
    "ConfigurationError", "ForeignKeyError", "LibraryUnavailableError", "RateLimitError",
    "ReservationSettledError", "ServerUnavailableError",
]


class RateLimitError(Exception):
    """The base of every error this package raises for a case a caller handles."""

    def __reduce__(self) -> Any:
        # A class made by `as_case` is not importable by name: pickle it as its recipe.
        bases = type(self).__bases__
        if len(bases) == 2 and bases[0] in CASES:
            return (_rebuild, (bases[0], bases[1], self.args), self.__dict__)
        return super().__reduce__()


class ConfigurationError(RateLimitError, ValueError):
    """A limit or a call's arguments refused: by this package before sending (then also a
    TypeError when the type is wrong), or by the server (then also a redis-py
    `ResponseError`, its text the server's)."""


class ServerUnavailableError(RateLimitError):
    """The server cannot be reached: connection refused or reset, or a timeout. Raised as a
    subclass of redis-py's `ConnectionError` or `TimeoutError` as well."""


class LibraryUnavailableError(RateLimitError):
    """The module is not loaded and the Functions library is missing and cannot be loaded
    (an ACL user who may not run `FUNCTION LOAD`, a read-only replica, a server without
    Functions). Also a subclass of the redis-py error the server gave."""


class ForeignKeyError(RateLimitError):
    """The key holds what this call may not touch. `holds` is `"type"` (another Redis
    type: `WRONGTYPE`), `"limiter"` (another limiter kind's state) or `"value"` (a value of
    the right type that no limiter wrote). Also a redis-py `ResponseError`."""

    holds: str = ""


class ReservationSettledError(RateLimitError):
    """A reservation's `settle` called again (or after its `with` block settled it): a
    reservation settles once. Raised before anything is sent."""


#: The cases, each the first base of the classes `as_case` makes.
CASES = (ConfigurationError, ServerUnavailableError, LibraryUnavailableError, ForeignKeyError)


@cache
def case_class(case: type[RateLimitError], original: type[BaseException]) -> type[Exception]:
    """The class of `case` that is also an `original` (made once per pair)."""
    if issubclass(case, original):
        return case

    def __init__(self: Exception, *args: Any) -> None:
        # `original`'s own (redis-py's sets what its __repr__ reads), not ValueError's, which
        # comes first in a ConfigurationError.
        original.__init__(self, *args)

    return type(case.__name__, (case, original), {"__module__": __name__,
                                                   "__qualname__": case.__qualname__,
                                                   "__init__": __init__})


def as_case(case: type[RateLimitError], original: type[BaseException], *args: Any) -> Exception:
    """An instance of `case` that is also an `original`, with `args` (its text)."""
    return case_class(case, original)(*args)


def _rebuild(case: type[RateLimitError], original: type[BaseException],
             args: tuple[Any, ...]) -> Exception:
    return as_case(case, original, *args)


def refused(message: str, *, wrong_type: bool = False) -> ConfigurationError:
    """A ConfigurationError raised before anything is sent; a TypeError too when the value's
    type is what is wrong."""
    if wrong_type:
        return as_case(ConfigurationError, TypeError, message)  # type: ignore[return-value]
    return ConfigurationError(message)

#: What a LibraryUnavailableError says before the server's text.
NOT_LOADABLE = "the rl module is not loaded and the rl library could not be loaded"
NO_FUNCTIONS = "the rl module is not loaded and the server has no Functions (FCALL) for the library"
NOT_LOADED = "the rl library was loaded but the server does not have it"
