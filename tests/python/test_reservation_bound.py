"""Reservations settled out of order on a sliding log hold its bound: 50 concurrent tasks
(the Python package's AsyncLimiter, on a real redis-server and valkey-server, through the
module and through the Functions library) each reserve an estimate, work for a while, and settle at a usage that
never exceeds the estimate. Whatever order they settle in, the units used by requests admitted
within any one window never pass the limit (an estimate that covers the usage never overruns).

A refund does not say which entry was its own, so the log gives back its oldest entries: had
it given back the newest, a request settling early would free a later request's units, and
once the early request's own time left the window the log would admit past the limit while
the later request's units still counted (1,147 units in a window of 1,000 here, before)."""

import asyncio
import random
import sys
import time

import pytest

import redis.asyncio
from conftest import ROOT, start_server

sys.path.insert(0, str(ROOT / "clients/python/src"))
import redis_rl  # noqa: E402
from redis_rl import policy  # noqa: E402

LIMIT, WINDOW_S, TASKS, RUN_S = 1000, 2.0, 50, 7.0


@pytest.fixture(params=["redis-module", "redis-library", "valkey-module", "valkey-library"])
def url(request, tmp_path):
    server, backend = request.param.split("-")
    with start_server(tmp_path, with_module=backend == "module",
                      valkey=server == "valkey") as (url, _):
        yield url


async def worker(limiter, log, seed, until):
    rng = random.Random(seed)
    tokens = policy.sliding_log(LIMIT, f"{int(WINDOW_S * 1000)}ms", name="tokens")
    while time.monotonic() < until:
        estimate = rng.randint(20, 120)
        sent = time.monotonic()
        decision, reservation = await limiter.reserve("tpm:bound", tokens, estimate)
        answered = time.monotonic()
        if reservation is None:
            await asyncio.sleep(decision.retry_after_ms / 1000 * rng.random() + 0.01)
            continue
        await asyncio.sleep(rng.uniform(0.05, 1.2))  # the work: settles out of order
        used = estimate if rng.random() < 0.7 else 0  # most use it all, some fail
        await reservation.settle(used)
        log.append((sent, answered, used))


def heaviest_window(log):
    """The most units used by requests whose admissions certainly fell within one window: those
    sent at or after one request was sent and answered less than a window after that."""
    log = sorted(log)
    return max(sum(used for sent, answered, used in log
                   if sent >= start and answered < start + WINDOW_S)
               for start, _, _ in log)


def test_out_of_order_settlements_never_pass_the_window(url):
    async def run():
        client = redis.asyncio.Redis.from_url(url)
        limiter = redis_rl.AsyncLimiter(client)
        log = []
        until = time.monotonic() + RUN_S
        await asyncio.gather(*(worker(limiter, log, seed, until) for seed in range(TASKS)))
        await client.aclose()
        return log

    log = asyncio.run(run())
    assert len(log) > 40, len(log)
    assert heaviest_window(log) <= LIMIT
