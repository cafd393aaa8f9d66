"""One load of the Functions library at a time per server, and a backoff after a failed one.

Where calls find the library missing, only the first loads it (`FUNCTION LOAD REPLACE` of a
139 KB library); the others wait for that load to end and then send their call again, with
no error of their own (if it failed, they raise its error). A load that fails starts a
backoff: no new load for 1 s, doubled after each failure in a row up to 30 s, ended by a load
that succeeds. While it lasts a call that finds the library missing raises the failed load's
error (classify.py: `OOM` is unavailable, `NOPERM` a configuration).

The gates are per process, one per server (its address and the client's user; a cluster
client's seed nodes) and per kind of limiter: the synchronous limiters share one, the asyncio
limiters another, so a synchronous call never blocks waiting for a load that an event loop on
its own thread runs.
"""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import Future
from typing import Any, NoReturn

from .backend import is_cluster
from .classify import library_unavailable
from .errors import NOT_LOADABLE

#: The backoff after a first failed load, and its most, in seconds.
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0


class LoadGate:
    """The loads of one server: the one in flight, and the backoff after failures."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # The load in flight: its outcome is its error, None when it loaded (or was abandoned)
        self._loading: Future[BaseException | None] | None = None
        self._failures = 0  # failed loads in a row
        self._until = 0.0  # time.monotonic() when the backoff ends
        self._error: BaseException | None = None  # the last failed load's error
        self._loaded_at = float("-inf")  # time.monotonic() when the last load succeeded

    def enter(self, sent: float) -> Future[BaseException | None] | BaseException | None:
        """For a call sent at `sent` (time.monotonic()) that found the library missing. None:
        the caller loads, then calls `done` whatever happens. A Future: the load in flight, to
        wait for (or a load that succeeded since `sent`, done): its outcome is its error, or
        None (then call again). An error: the last failed load's, while the backoff lasts
        (`raise_failed` it)."""
        with self._lock:
            if self._loading is not None:
                return self._loading
            if self._loaded_at >= sent:  # answered "missing" before a load that has ended
                return LOADED
            if self._error is not None and time.monotonic() < self._until:
                return self._error
            self._loading = Future()
            return None

    def done(self, error: BaseException | None, failed: bool) -> None:
        """Ends the caller's load: `failed` with `error` (a load the server refused or did not
        answer), or not (`error` None: loaded; else the load was abandoned, by a
        cancellation, which leaves the backoff as it was)."""
        with self._lock:
            if failed:
                self._failures += 1
                self._error = error
                backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (self._failures - 1))
                self._until = time.monotonic() + backoff
            elif error is None:
                self._failures, self._error, self._until = 0, None, 0.0
                self._loaded_at = time.monotonic()
            loading, self._loading = self._loading, None
        if loading is not None and not loading.done():
            loading.set_result(error if failed else None)


#: What `LoadGate.enter` answers a call whose library went missing before a load that has
#: ended since: a load done, with nothing to wait for.
LOADED: Future[BaseException | None] = Future()
LOADED.set_result(None)


def raise_failed(err: BaseException) -> NoReturn:
    """Raises a failed load's error `err` as the package's case, a new exception each time
    (`err` itself, raised by every call of a backoff, would grow its traceback each time)."""
    mapped = library_unavailable(err, NOT_LOADABLE)
    raise (copy.copy(err) if mapped is err else mapped) from err


_GATES: dict[tuple[Any, ...], LoadGate] = {}
_GATES_LOCK = threading.Lock()


def server_key(client: Any) -> tuple[Any, ...]:
    """What names `client`'s server: a cluster client's seed nodes, a client's address (its
    Unix socket, or host and port) and user, else the client itself."""
    if is_cluster(client):
        manager = getattr(client, "nodes_manager", None)
        nodes = getattr(manager, "startup_nodes", None)
        if nodes:
            return ("cluster", *sorted(nodes))
        return ("client", id(client))
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    user = kwargs.get("username")  # (users may differ in what they may load)
    if kwargs.get("path"):
        return ("unix", kwargs["path"], user)
    if kwargs.get("host") is not None:
        return ("tcp", kwargs["host"], kwargs.get("port"), user)
    return ("client", id(client))


def gate_for(client: Any, kind: str) -> LoadGate:
    """The gate of `client`'s server for limiters of `kind` ("sync" or "asyncio")."""
    key = (kind, *server_key(client))
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = LoadGate()
        return gate
