"""Counters of the decisions this process makes, per layer and result, as a snapshot (a plain
dict) and as Prometheus text (the text exposition format 0.0.4, written here: no dependency,
no global registry; serve it on the route you choose).

    rl_decisions_total{layer="ip",result="within_limit"} 41
    rl_decisions_total{layer="ip",result="over_limit_with_local_cache"} 1200

The results, named as envoy's ratelimit service names its stats:

- `within_limit`: admitted.
- `over_limit`: denied by the server.
- `over_limit_with_local_cache`: denied by the denial cache, without a call.
- `shadow_mode`: would have been denied, let through: a `SHADOW` policy's denial, or a
  middleware's `shadow=True` denial.
- `unavailable`: the server could not decide (a ServerUnavailableError): raised, or answered
  503 by a middleware.
- `unavailable_fail_open`: the same, let through by a middleware's `fail_open=True`.
- `insured_within_limit`: the server could not decide, admitted by the limiter's insurance
  (insurance.py).
- `insured_over_limit`: the same, denied by the insurance.
- `error`: any other error from the server (a configuration's), raised.

A limiter's calls are labelled by their policy's name (a Policy's `name`, a server-side
policy's name; `default` when a Policy has none), an `RL.ALL` by its binding layer's; a
middleware labels its requests by its layers' names. Each call or request counts once: the
sum over a limiter's or a middleware's counters is the calls or requests it decided.
`rl_denial_cache_entries` is the denial cache's size, `rl_denial_cache_max_entries` its bound.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cache import DenialCache

WITHIN = "within_limit"
OVER = "over_limit"
OVER_CACHED = "over_limit_with_local_cache"
SHADOW = "shadow_mode"
UNAVAILABLE = "unavailable"
UNAVAILABLE_OPEN = "unavailable_fail_open"
INSURED_WITHIN = "insured_within_limit"
INSURED_OVER = "insured_over_limit"
ERROR = "error"
RESULTS = (WITHIN, OVER, OVER_CACHED, SHADOW, UNAVAILABLE, UNAVAILABLE_OPEN, INSURED_WITHIN,
           INSURED_OVER, ERROR)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Thread-safe counters: `add(layer, result)`, `snapshot()`, `prometheus()`."""

    def __init__(self, cache: DenialCache | None = None) -> None:
        self.cache = cache
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def add(self, layer: str, result: str, n: int = 1) -> None:
        if result not in RESULTS:
            raise ValueError(f"unknown result {result!r}")
        with self._lock:
            self._counts[(layer, result)] = self._counts.get((layer, result), 0) + n

    def snapshot(self) -> dict[str, dict[str, int]]:
        """`{layer: {result: count}}`, every result present for each layer seen (0 when
        none)."""
        with self._lock:
            counts = dict(self._counts)
        out: dict[str, dict[str, int]] = {}
        for (layer, result), n in sorted(counts.items()):
            out.setdefault(layer, dict.fromkeys(RESULTS, 0))[result] = n
        return out

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def prometheus(self) -> str:
        """The counters (and the denial cache's size) in Prometheus' text format."""
        lines = [
            "# HELP rl_decisions_total Rate-limit decisions made by this process, per layer "
            "and result.",
            "# TYPE rl_decisions_total counter",
        ]
        for layer, results in self.snapshot().items():
            for result, n in results.items():
                lines.append(f'rl_decisions_total{{layer="{_label(layer)}",'
                             f'result="{result}"}} {n}')
        if self.cache is not None:
            lines += [
                "# HELP rl_denial_cache_entries Identities the denial cache holds.",
                "# TYPE rl_denial_cache_entries gauge",
                f"rl_denial_cache_entries {len(self.cache)}",
                "# HELP rl_denial_cache_max_entries The denial cache's bound.",
                "# TYPE rl_denial_cache_max_entries gauge",
                f"rl_denial_cache_max_entries {self.cache.max_entries}",
            ]
        return "\n".join(lines) + "\n"
