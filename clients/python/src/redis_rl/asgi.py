"""ASGI middleware (Starlette, FastAPI, any ASGI app): the seed's layers (per client IP, per
API key, per endpoint, ...) decided together by ONE `RL.ALL` per request, all or nothing.

Every HTTP response carries the binding layer's headers (`Decision.all_headers`); a denial
is answered by the middleware itself: 429 with those headers, `Retry-After` among them
unless the request can never be admitted, and a JSON body naming the layer. Nothing is
spent unless every layer admits. An error from the server (unreachable, a bad policy) is
raised to the server as any exception is, so the request fails (a 500): it is never let
through unchecked.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, MutableMapping
from dataclasses import dataclass
from typing import Any, Callable, Union

from .aio import AsyncLimiter
from .decision import Decision
from .policy import Policy

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: A request's identity for a layer (an IP, an API key, an endpoint), or None to skip it.
Identify = Callable[[Scope], Union[str, None]]


@dataclass(frozen=True)
class Layer:
    """One limit: `identify(scope)` names whose limit it is (None: the layer does not apply
    to this request), `policy` is its Policy, or a function of the scope returning one (or
    None to skip), e.g. the policy of the caller's plan. Its key is
    `<prefix>:<name>:<identity>`."""

    name: str
    identify: Identify
    policy: Policy | Callable[[Scope], Policy | None]


def client_ip(scope: Scope) -> str | None:
    """The peer's address as the ASGI server reports it. Behind a proxy, run the server with
    its proxy-headers option (uvicorn `--proxy-headers --forwarded-allow-ips`) so this is
    the client's, not the proxy's."""
    client = scope.get("client")
    return client[0] if client else None


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

    `prefix` starts every key; `tag(scope)` (for Redis Cluster) puts one hash tag in every
    key of a request so `RL.ALL` can take them (`<prefix>:{<tag>}:<name>:<identity>`). A
    request no layer applies to passes without a call."""

    def __init__(self, app: ASGIApp, limiter: AsyncLimiter, layers: list[Layer],
                 prefix: str = "rl", tag: Identify | None = None) -> None:
        if not layers:
            raise ValueError("RateLimitMiddleware needs at least one Layer")
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layer names must be distinct: {names}")
        if not isinstance(limiter, AsyncLimiter):
            raise TypeError("RateLimitMiddleware takes a redis_rl.AsyncLimiter")
        self.app, self.limiter, self.layers = app, limiter, layers
        self.prefix, self.tag = prefix, tag

    def _applying(self, scope: Scope) -> list[tuple[str, Policy]]:
        base = self.prefix
        if self.tag is not None:
            base = f"{base}:{{{self.tag(scope) or ''}}}"
        out = []
        for layer in self.layers:
            identity = layer.identify(scope)
            if identity is None:
                continue
            p = layer.policy(scope) if callable(layer.policy) else layer.policy
            if p is not None:
                out.append((f"{base}:{layer.name}:{identity}", p.named(p.name or layer.name)))
        return out

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        layers = self._applying(scope)
        if not layers:
            await self.app(scope, receive, send)
            return
        decision = (await self.limiter.all(layers)).binding
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                   for k, v in decision.all_headers().items()]
        if not decision.allowed:
            await _too_many(send, decision, headers)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _too_many(send: Send, decision: Decision, headers: list[tuple[bytes, bytes]]) -> None:
    layer = decision.policy.name if decision.policy else ""
    body = json.dumps({"error": "rate limited", "layer": layer}).encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *headers]})
    await send({"type": "http.response.body", "body": body})
