"""Which backend answers: the module's commands where they exist, else the Functions library.

A limiter starts on the module. A server that answers `unknown command` has no module: from
then on the limiter calls the library with `FCALL`, and where the library is missing
(`Function not found`: never loaded, `FUNCTION FLUSH`, a failover to a server without it)
it loads the copy shipped in this package (`FUNCTION LOAD REPLACE`: this package's version
of library `rl`) and calls again, once; where it cannot (the load refused, no Functions) that
is a LibraryUnavailableError. Any other error is the command's own, raised as its case
(classify.py: ConfigurationError, ForeignKeyError, ServerUnavailableError) or as it is: a call
by a policy's name (`rl_limit`, a `POLICY` clause) is sent as it is, and a library without
that policy (this package's copy holds none) answers `no such policy`, a ConfigurationError.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from redis.exceptions import ClusterDownError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

#: Errors after which a cluster client's topology is refreshed and the call sent again,
#: to the key's node as it is then (a failover, a resharding).
CLUSTER_RETRY = (RedisConnectionError, RedisTimeoutError, ClusterDownError)
#: How many times a call routed to its key's node is sent, at most.
CLUSTER_ATTEMPTS = 3


@lru_cache(maxsize=1)
def library_source() -> str:
    """`functions/rl.lua`, as shipped inside this package (a built package carries its copy,
    hatch_build.py; an editable install of a checkout reads the checkout's file)."""
    shipped = resources.files(__package__).joinpath("rl.lua")
    if not shipped.is_file():
        return (Path(__file__).resolve().parents[4] / "functions/rl.lua").read_text(
            encoding="utf-8")
    return shipped.read_text(encoding="utf-8")


def is_cluster(client: Any) -> bool:
    """A redis-py cluster client (sync or asyncio)."""
    return hasattr(client, "get_node_from_key")


def routed_by_us(args: tuple[Any, ...]) -> bool:
    """Commands whose keys redis-py would ask the server for on every call (`FCALL`,
    `RL.ALL`: their keys follow a count), and `RL.POLICY GET` (no key; a node's policies are
    its own): a cluster client sends them to their key's node instead (every key of `RL.ALL`
    must share its slot, which the server checks)."""
    return str(args[0]).upper() in ("FCALL", "FCALL_RO", "RL.ALL", "RL.POLICY")
