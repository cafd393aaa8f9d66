"""Calendar quotas through the package (`policy.quota`: `RL.QUOTA key limit DAY|WEEK|MONTH [TZ
zone] [ANCHOR a]`): the words sent in calls, `RL.ALL` clauses and `RL.PEEK`, the headers
(`RateLimit-Policy`'s `w` is the current period's length in whole days, `X-RateLimit-Reset`
the renewal), and on real servers single calls, layers, named policies, peeks, reservations,
the denial cache (a quota's denial cached until the renewal), the insurance (the count divided
by the processes, per period) and the ASGI middleware over HTTP. The renewals expected are
computed here with the host's zoneinfo, independently of the package's arithmetic."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import httpx
import pytest
import redis
import redis.asyncio
from apps import app_with, served_asgi
from conftest import need_quota

import redis_rl
from redis_rl import Decision, commands, policy
from redis_rl.asgi import Layer, header
from redis_rl.policy import quota_period_s

PARIS = ZoneInfo("Europe/Paris")


def utc_ms(*a: int) -> int:
    return int(datetime(*a, tzinfo=timezone.utc).timestamp() * 1000)


def server_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return seconds * 1000 + micros // 1000


def renewals(now_ms: int, zone: ZoneInfo, day: int) -> tuple[datetime, datetime]:
    """The month's renewals around `now_ms` for an anchor on `day` at 00:00 local: (the latest
    at or before now, the next), as local datetimes (a zone without DST gap at midnight)."""
    local = datetime.fromtimestamp(now_ms / 1000, zone)

    def on(y: int, m: int) -> datetime:
        last = ((datetime(y + m // 12, m % 12 + 1, 1) - datetime(y, m, 1)).days)
        return datetime(y, m, min(day, last), tzinfo=zone)

    y, m = local.year, local.month
    this = on(y, m)
    if this > local:
        prev_y, prev_m = (y - 1, 12) if m == 1 else (y, m - 1)
        return on(prev_y, prev_m), this
    next_y, next_m = (y + 1, 1) if m == 12 else (y, m + 1)
    return this, on(next_y, next_m)


# --- the words sent, and the headers --------------------------------------------------------------


def test_a_quota_is_its_limit_unit_zone_and_anchor_then_its_penalty():
    p = policy.quota(10_000, "month", tz="Europe/Paris", anchor="2026-01-15T00:00",
                     penalty="1h")
    assert p.params == ("10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR", "2026-01-15T00:00")
    assert commands.decide("k", p, cost=3).module == (
        "RL.QUOTA", "k", "10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR", "2026-01-15T00:00",
        "PENALTY", "1h", "COST", "3")
    assert commands.decide("k", p).library()[:4] == ("FCALL", "rl_quota", 1, "k")
    assert commands.peek("k", p, 1).module == (
        "RL.PEEK", "QUOTA", "k", "10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR",
        "2026-01-15T00:00")
    assert commands.all_of([("a", policy.quota(5, "DAY")), ("b", policy.fixed(5, "1m"))],
                           False).module == (
        "RL.ALL", 2, "a", "b", "QUOTA", "5", "DAY", "FIXED", "5", "1m")
    assert policy.quota(1, "WEEK", anchor=datetime(2026, 3, 1, 9, 30)).params == (
        "1", "WEEK", "ANCHOR", "2026-03-01T09:30")
    with pytest.raises(redis_rl.ConfigurationError, match="DAY, WEEK or MONTH"):
        policy.quota(1, "YEAR")
    with pytest.raises(redis_rl.ConfigurationError, match="local wall time"):
        policy.quota(1, "DAY", anchor=datetime(2026, 3, 1, tzinfo=timezone.utc))


@pytest.mark.parametrize("day,renewal,days", [
    (31, utc_ms(2026, 2, 27, 23), 28),   # Jan 31 -> Feb 28 (Paris midnight, 23:00 UTC)
    (31, utc_ms(2026, 3, 30, 22), 31),   # Feb 28 -> Mar 31 (summer time: 22:00 UTC)
    (31, utc_ms(2026, 4, 29, 22), 30),   # Mar 31 -> Apr 30
    (31, utc_ms(2024, 2, 28, 23), 29),   # a leap year's Jan 31 -> Feb 29
    (1, utc_ms(2026, 2, 28, 23), 28),    # Feb 1 -> Mar 1 in Paris, Feb 28 in UTC
    (1, utc_ms(2026, 3, 1, 5), 28),      # Mar 1 at 00:00 in New York
    (15, utc_ms(2026, 1, 14, 23), 31),   # Dec 15 -> Jan 15
    (1, utc_ms(2026, 1, 1, 0), 31),      # UTC: Dec 1 -> Jan 1
    (1, utc_ms(2025, 12, 31, 10), 31),   # Jan 1 at 00:00 in Kiritimati (+14:00)
])
def test_a_months_period_is_its_days_from_the_renewal_before(day, renewal, days):
    assert quota_period_s(("MONTH", day), renewal) == days * 86_400


def test_a_quotas_ietf_policy_is_its_current_period_and_its_reset_the_renewal():
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    start, end = renewals(now, PARIS, 31)
    reset = int(end.timestamp() * 1000) - now
    p = policy.quota(10_000, "MONTH", tz="Europe/Paris", anchor="2026-01-31T00:00", name="month")
    got = Decision(True, 10_000, 9_999, 0, reset, "module", p).all_headers()
    days = (end.date() - start.date()).days
    assert got["RateLimit-Policy"] == f'"month";q=10000;w={days * 86_400}'
    assert got["X-RateLimit-Reset"] == str(math.ceil(reset / 1000))
    assert got["RateLimit"] == f'"month";r=9999;t={math.ceil(reset / 1000)}'
    day = Decision(False, 3, 0, 5_000, 5_000, "module", policy.quota(3, "day", name="d"))
    assert day.ietf_headers()["RateLimit-Policy"] == '"d";q=3;w=86400'
    assert Decision(True, 3, 2, 0, 9, "module", policy.quota(3, "WEEK")).ietf_headers()[
        "RateLimit-Policy"] == '"default";q=3;w=604800'


# --- on the servers ---------------------------------------------------------------------------


@pytest.fixture
def limiter(quota_server):
    c = redis.Redis.from_url(quota_server.url)
    yield redis_rl.Limiter(c)
    c.close()


def test_a_quota_counts_until_the_renewal_in_its_zone(limiter):
    c = limiter.client
    p = policy.quota(3, "MONTH", tz="Europe/Paris", anchor="2026-01-15T00:00")
    before = server_ms(c)
    got = [limiter.decide("q", p) for _ in range(4)]
    after = server_ms(c)
    assert [d.allowed for d in got] == [True, True, True, False]
    assert [d.remaining for d in got] == [2, 1, 0, 0]
    renewal = int(renewals(before, PARIS, 15)[1].timestamp() * 1000)
    denied = got[-1]
    assert renewal - after <= denied.retry_after_ms <= renewal - before
    assert denied.reset_after_ms == denied.retry_after_ms
    stored = c.get("q").decode()
    assert stored.startswith("quota:") and stored.endswith(
        f":{renewal}:3:MONTH 2026-01-15T00:00 Europe/Paris")
    ttl = c.pttl("q")
    assert renewal - server_ms(c) <= ttl <= renewal - before
    assert limiter.peek("q", p, cost=0).remaining == 0
    assert limiter.refund("q", p, 2).remaining == 2
    assert limiter.debit("q", p, 5).remaining == 0


def test_a_quota_layer_in_rl_all_and_its_unknown_zone(limiter):
    month = policy.quota(2, "MONTH", name="month")
    minute = policy.sliding_log(10, "1m", name="minute")
    layers = [("{o}:minute", minute), ("{o}:month", month)]
    assert [limiter.all(layers).allowed for _ in range(3)] == [True, True, False]
    denied = limiter.all(layers)
    assert denied.index == 1 and denied.binding.policy_name == "month"
    assert limiter.peek("{o}:minute", minute, cost=0).remaining == 8  # denials spent nothing
    assert limiter.all(layers, peek=True).layers[1].remaining == 0
    with pytest.raises(redis_rl.ConfigurationError, match="unknown time zone 'Mars/Olympus'"):
        limiter.decide("z", policy.quota(1, "DAY", tz="Mars/Olympus"))


def test_a_quotas_denial_is_cached_until_the_renewal(limiter):
    c = limiter.client
    p = policy.quota(1, "DAY", tz="+05:30")
    assert limiter.decide("d", p).allowed
    first = limiter.decide("d", p)
    assert not first.allowed and not first.cached
    cached = limiter.decide("d", p)
    assert cached.cached and not cached.allowed
    assert cached.retry_after_ms <= first.retry_after_ms
    assert cached.retry_after_ms > first.retry_after_ms - 60_000  # counts down to the renewal
    entry = limiter.cache._map[("d", ("QUOTA", p.params, ()))]
    assert entry.until - limiter.cache.clock() > 0
    # The server's renewal: midnight at +05:30, 18:30 UTC.
    now = datetime.fromtimestamp(server_ms(c) / 1000, timezone.utc)
    renewal = now.replace(hour=18, minute=30, second=0, microsecond=0)
    if renewal <= now:
        renewal += timedelta(days=1)
    assert cached.reset_after_ms <= int(renewal.timestamp() * 1000) - server_ms(c) + 1000


def test_a_named_quota_is_used_by_its_name(policy_server, define):
    need_quota(policy_server)
    c = redis.Redis(port=policy_server.port)
    limiter = redis_rl.Limiter(c)
    name = define("QUOTA 2 WEEK TZ America/New_York ANCHOR 2026-03-01T09:00")
    assert [limiter.limit("n", name).allowed for _ in range(3)] == [True, True, False]
    assert limiter.peek("n", name, cost=0).remaining == 0
    layered = limiter.all([("{n}:a", name), ("{n}:b", policy.quota(9, "DAY"))])
    assert layered.allowed and layered.binding.remaining == 1
    assert c.get("n").decode().endswith(":2:WEEK 2026-03-01T09:00 America/New_York")
    c.close()


def test_reserve_all_settles_a_monthly_budget_beside_the_minute(limiter):
    rpm = policy.sliding_log(5, "1m", name="rpm")
    budget = policy.quota(100, "MONTH", name="budget")
    layers = [("{org}:rpm", rpm, 1), ("{org}:month", budget)]
    decision, reservation = limiter.reserve_all(layers, 40)
    assert decision.allowed and [d.remaining for d in decision.layers] == [4, 60]
    assert reservation.settle(25).layers[0].remaining == 75
    _, again = limiter.reserve_all(layers, 70)
    assert again.settle(90).binding.remaining == 0  # 15 over: debt to the renewal
    denied, none = limiter.reserve_all(layers, 1)
    assert none is None and denied.binding.policy_name == "budget"
    assert denied.binding.retry_after_ms > 0
    assert limiter.peek("{org}:rpm", rpm, cost=0).remaining == 3


def test_insurance_gives_each_process_its_share_of_the_period():
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis(port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
    limiter = redis_rl.Limiter(client, insurance=redis_rl.Insurance(nodes=4))
    p = policy.quota(10, "MONTH", tz="Europe/Paris")
    got = [limiter.decide("k", p) for _ in range(3)]
    assert [d.allowed for d in got] == [True, True, False] and all(d.insured for d in got)
    assert got[-1].limit == 2 and got[-1].retry_after_ms > 30 * 86_400_000
    assert limiter.insurance.share(policy.quota(7, "DAY")) == (1, 86_400_000)
    assert limiter.insurance.share(policy.quota(70, "WEEK")) == (17, 7 * 86_400_000)


def test_the_middleware_sends_a_quotas_period_and_renewal(quota_server):
    c = redis.asyncio.Redis.from_url(quota_server.url)
    sync = redis.Redis.from_url(quota_server.url)
    month = policy.quota(2, "MONTH", tz="Europe/Paris", anchor="2026-01-31T00:00")
    layers = [Layer("month", header("x-api-key"), month)]
    with served_asgi(app_with(c, layers)) as base:
        before = server_ms(sync)
        got = [httpx.get(f"{base}/", headers={"X-API-Key": "acme"}, timeout=10)
               for _ in range(3)]
        after = server_ms(sync)
    sync.close()
    assert [r.status_code for r in got] == [200, 200, 429]
    start, end = renewals(before, PARIS, 31)
    days = (end.date() - start.date()).days
    renewal = int(end.timestamp() * 1000)
    for r in got:
        assert r.headers["RateLimit-Policy"] == f'"month";q=2;w={days * 86_400}'
        reset = int(r.headers["X-RateLimit-Reset"])
        assert math.ceil((renewal - after) / 1000) <= reset <= math.ceil((renewal - before) / 1000)
    assert got[-1].headers["Retry-After"] == got[-1].headers["X-RateLimit-Reset"]
