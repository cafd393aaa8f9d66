"""ASGI middleware (Starlette, FastAPI, any ASGI app): the seed's layers (per client IP, per
API key, per endpoint, ...) decided together by ONE `RL.ALL` per request, all or nothing.

Every HTTP response carries the binding layer's headers (`Decision.all_headers`); a denial
is answered by the middleware itself: 429 with those headers, `Retry-After` among them
unless the request can never be admitted, and a JSON body naming the layer. Nothing is
spent unless every layer admits. An error from the server is of one of two classes
(classify.py): the server cannot decide right now (out of reach, or `LOADING`, `BUSY`,
`MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`: a ServerUnavailableError), which
the middleware answers 503 `{"error": "rate limiter unavailable"}`, or with `fail_open=True`
lets through (one warning logged per request either way); or any other error, a
configuration's (ConfigurationError: a layer's policy the server refuses, a policy's name it
does not hold; ForeignKeyError; LibraryUnavailableError; `NOPERM` ...), raised to the ASGI
server as any exception is, so the request fails with a 500 whatever `fail_open` says: it is
never let through unchecked. A configuration refused here (no layers, a tag naming none of
them, a bad policy name) is a ConfigurationError, a ValueError (a TypeError for a type).

A layer's policy may be a Policy or the name of a policy on the server (`"free"`: an
`RL.ALL` clause `POLICY free`). A request that would have been refused but is let through is
logged, one warning on the `redis_rl.asgi` logger per such request: under `shadow=True`
(every denial is let through, with its headers but no `Retry-After`), and wherever a layer's
`SHADOW` policy on the server denied what the other layers admitted.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Awaitable, MutableMapping
from dataclasses import dataclass
from typing import Any, Callable, Union

from .aio import AsyncLimiter
from .decision import Decision
from .errors import ServerUnavailableError, refused
from .metrics import (
    ERROR,
    INSURED_OVER,
    INSURED_WITHIN,
    OVER,
    OVER_CACHED,
    SHADOW,
    UNAVAILABLE,
    UNAVAILABLE_OPEN,
    WITHIN,
)
from .policy import Policy, PolicyOrName, policy_arg

__all__ = ["ASGIApp", "Identify", "Layer", "RateLimitMiddleware", "client_ip", "client_subnet",
           "header", "ip_key", "path"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Where the middleware logs the requests it lets through that would have been refused.
logger = logging.getLogger(__name__)

#: A request's identity for a layer (an IP, an API key, an endpoint), or None to skip it.
Identify = Callable[[Scope], Union[str, None]]


@dataclass(frozen=True)
class Layer:
    """One limit: `identify(scope)` names whose limit it is (None: the layer does not apply
    to this request), `policy` is its Policy or the name of a policy on the server (a str),
    or a function of the scope returning either (or None to skip), e.g. the policy of the
    caller's plan. Its key is `<prefix>:<name>:<identity>`, or
    `<prefix>:{<tag>}:<name>:<identity>` with a tag. An identity may be any text, braces
    included."""

    name: str
    identify: Identify
    policy: PolicyOrName | Callable[[Scope], PolicyOrName | None]


def _check_bits(ipv6_bits: int) -> None:
    if isinstance(ipv6_bits, bool) or not isinstance(ipv6_bits, int) or not 1 <= ipv6_bits <= 128:
        raise refused(f"ipv6_bits must be an integer from 1 to 128: {ipv6_bits!r}")


def ip_key(address: str, ipv6_bits: int = 56) -> str:
    """The key text of one client address: an IPv4 address itself; an IPv6 address its
    /`ipv6_bits` network, in canonical compressed form with the prefix length
    (`2001:db8:1:1::1` is `2001:db8:1::/56`, express-rate-limit 8's `ipKeyGenerator` text),
    since every IPv6 customer holds at least a /64; an IPv4-mapped IPv6 address
    (`::ffff:1.2.3.4`) its IPv4 address. A zone index (`fe80::1%eth0`) is dropped. Text that
    is not an IP address (Starlette's `testclient`, a Unix socket path) is returned as it is."""
    _check_bits(ipv6_bits)
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return ipaddress.IPv6Network((ip, ipv6_bits), strict=False).compressed


def client_subnet(ipv6_bits: int = 56) -> Identify:
    """The client's address keyed by `ip_key(address, ipv6_bits)`: an IPv6 client by its
    /`ipv6_bits` network. Checks `ipv6_bits` (1 to 128; 128 keys every address by itself)."""
    _check_bits(ipv6_bits)

    def identify(scope: Scope) -> str | None:
        client = scope.get("client")
        return ip_key(client[0], ipv6_bits) if client else None

    return identify


#: The client's address, an IPv6 one by its /56 (`client_subnet(56)`): `scope["client"]`,
#: which the ASGI server sets from the peer, or behind a proxy from `X-Forwarded-For` when it
#: trusts the proxy (uvicorn: `--proxy-headers`, on by default, and `--forwarded-allow-ips`,
#: default 127.0.0.1 and ::1), so this is the client's, not the proxy's.
client_ip: Identify = client_subnet(56)


def _tag_text(identity: str | None) -> str:
    """The hash tag of a request whose tagged layer's identity is `identity`: `%`, `{` and
    `}` escaped (`%25`, `%7B`, `%7D`), so it never holds a brace and two identities never
    share one; `%none` when there is no identity (no escaped text is `%none`: an escaped `%`
    is always followed by two hex digits)."""
    if not identity:
        return "%none"
    return identity.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def header(name: str) -> Identify:
    """The value of request header `name` (e.g. "x-api-key"); None when absent or empty."""
    wanted = name.lower().encode("latin-1")

    def identify(scope: Scope) -> str | None:
        for key, value in scope.get("headers", ()):
            if key.lower() == wanted:
                return value.decode("latin-1") or None
        return None

    return identify


def path(scope: Scope) -> str:
    """The request's path (`/export`): a layer per endpoint."""
    return str(scope.get("path", ""))


class RateLimitMiddleware:
    """`app.add_middleware(RateLimitMiddleware, limiter=AsyncLimiter(client), layers=[...])`.

    `prefix` starts every key. `tag` (for Redis Cluster) names one of the layers: its
    identity for the request, escaped (`_tag_text`), becomes the hash tag of every key of
    the request, `<prefix>:{<tag>}:<name>:<identity>`, so `RL.ALL` can take them. The
    tagged layer then counts by its own identity alone, every other layer per (tag
    identity, its identity): tag the layer the client cannot choose, the address. A request
    no layer applies to passes without a call.

    `shadow=True` rehearses the limits: each request is decided and spent as usual and
    carries its headers, but a denial is let through (without `Retry-After`) and logged
    instead of answered 429.

    When the server cannot decide (a ServerUnavailableError) the request is answered 503,
    or with `fail_open=True` let through; both are logged. Every other error is raised (a
    500), whatever `fail_open` says.

    The limiter's denial cache (on by default: `AsyncLimiter(client, denial_cache=...)`)
    answers a request one of whose layers is cached denied with the same 429, body and
    headers as the server's denial, without a call. Each request is counted once in
    `limiter.metrics`, under the layer that decided it (metrics.py).

    The limiter's insurance (off by default: `AsyncLimiter(client,
    insurance=Insurance(nodes=4))`, insurance.py) decides a request the server cannot decide
    by this process's share of each layer's policy, answered as the server's decision would
    be (a 429 with the same body and headers); a request it cannot insure (a layer by a
    server policy's name) is answered 503, or let through with `fail_open`, as without it."""

    def __init__(self, app: ASGIApp, limiter: AsyncLimiter, layers: list[Layer],
                 prefix: str = "rl", tag: str | None = None, shadow: bool = False,
                 fail_open: bool = False) -> None:
        if not layers:
            raise refused("RateLimitMiddleware needs at least one Layer")
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise refused(f"layer names must be distinct: {names}")
        if not isinstance(limiter, AsyncLimiter):
            raise refused("RateLimitMiddleware takes a redis_rl.AsyncLimiter", wrong_type=True)
        if tag is not None and not isinstance(tag, str):
            raise refused(f"tag names a layer (one of {names}), not {tag!r}", wrong_type=True)
        if tag is not None and tag not in names:
            raise refused(f"tag names a layer, one of {names}: {tag!r} is none of them")
        if tag is not None and ("{" in prefix or "}" in prefix):
            raise refused(f"with a tag, the prefix holds no brace (the tag is the keys' "
                          f"hash tag): {prefix!r}")
        if not isinstance(shadow, bool):
            raise refused(f"shadow is a bool: {shadow!r}", wrong_type=True)
        if not isinstance(fail_open, bool):
            raise refused(f"fail_open is a bool: {fail_open!r}", wrong_type=True)
        for layer in layers:
            if not callable(layer.policy):
                policy_arg(layer.policy)  # a Policy, or a name the server could hold
        self.app, self.limiter, self.layers = app, limiter, layers
        self.prefix, self.tag, self.shadow, self.fail_open = prefix, tag, shadow, fail_open

    def _applying(self, scope: Scope) -> list[tuple[str, str, PolicyOrName]]:
        """(layer name, key, policy) of each layer that applies to the request; a Policy
        named after its layer unless it has a name of its own."""
        identities = {layer.name: layer.identify(scope) for layer in self.layers}
        base = self.prefix
        if self.tag is not None:
            base = f"{base}:{{{_tag_text(identities[self.tag])}}}"
        out = []
        for layer in self.layers:
            identity = identities[layer.name]
            if identity is None:
                continue
            p = layer.policy(scope) if callable(layer.policy) else layer.policy
            if isinstance(p, Policy):
                p = p.named(p.name or layer.name)
            if p is not None:
                out.append((layer.name, f"{base}:{layer.name}:{identity}", p))
        return out

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        layers = self._applying(scope)
        if not layers:
            await self.app(scope, receive, send)
            return
        metrics = self.limiter.metrics
        try:
            result = await self.limiter._all([(key, p) for _, key, p in layers], False, False)
        except ServerUnavailableError as err:  # any other error is raised: a 500
            _log_unavailable(scope, err, self.fail_open)
            metrics.add("+".join(name for name, _, _ in layers),
                        UNAVAILABLE_OPEN if self.fail_open else UNAVAILABLE)
            if self.fail_open:
                await self.app(scope, receive, send)
            else:
                await _unavailable(send)
            return
        except Exception:
            metrics.add("+".join(name for name, _, _ in layers), ERROR)
            raise
        decision = result.binding
        if not decision.allowed and not self.shadow:
            metrics.add(layers[result.index][0], OVER_CACHED if decision.cached
                        else INSURED_OVER if decision.insured else OVER)
            await _too_many(send, _encoded(decision.all_headers()),
                            _label(decision, layers[result.index][0]))
            return
        refused_by = result.index if not decision.allowed else next(iter(result.shadowed), None)
        if refused_by is not None:
            name, key, _ = layers[refused_by]
            metrics.add(name, SHADOW)
            shadowed = result.layers[refused_by]
            _log_would_deny(scope, shadowed if shadowed is not None else decision, name, key)
        else:
            metrics.add(layers[result.index][0], INSURED_WITHIN if decision.insured else WITHIN)
        headers = _encoded({k: v for k, v in decision.all_headers().items()
                            if k != "Retry-After"})

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = _binding_headers(
                    list(message.get("headers", [])), message.get("status"), headers,
                    decision.remaining)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def _label(decision: Decision, layer: str) -> str:
    """The name a response gives a layer: its Policy's name (the layer's unless the Policy
    has its own), or for a policy named on the server, the layer's."""
    return decision.policy.name if isinstance(decision.policy, Policy) else layer


def _log_would_deny(scope: Scope, decision: Decision, name: str, key: str) -> None:
    """One warning for a request let through that layer `name` (its `decision`, on `key`)
    would have refused: denied under `shadow=True`, or by the layer's SHADOW policy."""
    why = f"SHADOW policy '{decision.policy}'" if decision.shadowed else "shadow=True"
    logger.warning(
        "rate limit would deny %s %s: layer %s, key %s, retry after %d ms (%s)",
        scope.get("method", ""), scope.get("path", ""), name, key, decision.retry_after_ms,
        why, extra={"rl_layer": name, "rl_key": key, "rl_policy": decision.policy_name,
                    "rl_retry_after_ms": decision.retry_after_ms, "rl_shadow": why})


def _log_unavailable(scope: Scope, err: ServerUnavailableError, fail_open: bool) -> None:
    """One warning for a request the server could not decide: let through or answered 503."""
    what = "let through (fail_open)" if fail_open else "answered 503"
    logger.warning("rate limiter unavailable, %s %s %s: %s", scope.get("method", ""),
                   scope.get("path", ""), what, err, extra={"rl_fail_open": fail_open})


async def _too_many(send: Send, headers: list[tuple[bytes, bytes]], layer: str) -> None:
    await _answer(send, 429, {"error": "rate limited", "layer": layer}, headers)


async def _unavailable(send: Send) -> None:
    await _answer(send, 503, {"error": "rate limiter unavailable"}, [])


async def _answer(send: Send, status: int, content: dict[str, str],
                  headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps(content).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *headers]})
    await send({"type": "http.response.body", "body": body})


def _binding_headers(present: list[tuple[bytes, bytes]], status: int | None,
                     ours: list[tuple[bytes, bytes]], remaining: int) -> list[tuple[bytes, bytes]]:
    """The response's headers with this decision's (`ours`, `remaining` left). Behind another
    RateLimitMiddleware (a second instance, for a limit tagged by another layer) the response
    already has that one's: it keeps whichever decision has fewer remaining, the inner one's
    on a tie or a 429 (a denial's headers stay whole, Retry-After among them), never both."""
    inner = [value for name, value in present if name.lower() == b"x-ratelimit-remaining"]
    if inner and (status == 429 or not inner[0].isdigit() or int(inner[0]) <= remaining):
        return present
    names = {name for name, _ in ours}
    return [*(h for h in present if h[0].lower() not in names), *ours]
