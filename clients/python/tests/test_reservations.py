"""DEBIT and reservations: `debit` charges after the fact and is never denied; `reserve` admits
at an estimate and its reservation settles once, with `DEBIT` or `REFUND` of the difference
(nothing when there is none); `reserve_all` settles only the layers that reserved the
estimate, in one `RL.ALL`. Sync and asyncio, on Redis 7.0 and Valkey 9.1, with the module and
through the Functions library."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio

import redis_rl
from redis_rl import policy
from redis_rl._facts import MAX_COST, MAX_DEBT
from redis_rl.reservation import Reservation

#: 10 tokens, one back every 6 minutes: nothing refills during a test, and a debt of d tokens
#: admits a request of cost 1 after (d + 1) * 360 s.
BUCKET = policy.token_bucket(10, 10, "1h")
TOKEN_MS = 360_000


def sent(client) -> dict[str, int]:
    """The commands the server has run, by name, less the INFO calls that read them."""
    stats = client.info("commandstats")
    return {k: v["calls"] for k, v in stats.items() if k != "cmdstat_info"}


def more_calls(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The calls made in between, by command: those a client sent (the library's FCALL also
    counts the commands its function runs, which are left out)."""
    sent_by_clients = ("cmdstat_rl.", "cmdstat_fcall")
    return {k: n - before.get(k, 0) for k, n in after.items()
            if n != before.get(k, 0) and k.startswith(sent_by_clients)}


def left(limiter, key, p=BUCKET) -> int:
    return limiter.peek(key, p, cost=0).remaining


def near(ms: int, want: int) -> bool:
    return want - 1_000 <= ms <= want


@pytest.fixture
def limiter(client):
    return redis_rl.Limiter(client)


def test_debit_charges_whatever_is_left_and_is_never_denied(limiter, expected_backend):
    assert limiter.decide("k", BUCKET, cost=4).remaining == 6
    d = limiter.debit("k", BUCKET, 9)  # 6 left: 3 in debt
    assert (d.allowed, d.limit, d.remaining, d.backend) == (True, 10, 0, expected_backend)
    assert near(d.retry_after_ms, 4 * TOKEN_MS)  # the debt, then one token
    assert d.reset_after_ms >= 13 * TOKEN_MS - 1_000  # 13 tokens short of full
    again = limiter.debit("k", BUCKET, 1)  # in debt: still admitted, one more owed
    assert again.allowed and again.remaining == 0
    assert near(again.retry_after_ms, 5 * TOKEN_MS)
    denied = limiter.decide("k", BUCKET)
    assert not denied.allowed and near(denied.retry_after_ms, 5 * TOKEN_MS)


def test_debit_by_a_policys_name(define, policy_server):
    import redis

    name = define("TOKENBUCKET 10 10 1h")
    c = redis.Redis(port=policy_server.port)
    limiter = redis_rl.Limiter(c)
    d = limiter.debit("named", name, 12)
    assert (d.allowed, d.remaining, d.policy) == (True, 0, name)
    assert near(d.retry_after_ms, 3 * TOKEN_MS)
    assert not limiter.limit("named", name).allowed
    c.close()


def test_debit_is_checked_before_sending_and_by_the_server(limiter, client):
    before = sent(client)
    for bad in (1.0, True, "2", None):
        with pytest.raises(TypeError, match="debit is an int"):
            limiter.debit("k", BUCKET, bad)
    assert sent(client) == before
    for n in (0, MAX_DEBT + 1):
        with pytest.raises(redis_rl.ConfigurationError,
                           match="DEBIT must be an integer from 1 to 1000000000000"):
            limiter.debit("k", BUCKET, n)


def test_reserve_admits_at_the_estimate_or_spends_nothing(limiter, expected_backend):
    d, reservation = limiter.reserve("k", BUCKET, 8)
    assert (d.allowed, d.remaining, d.backend) == (True, 2, expected_backend)
    assert isinstance(reservation, redis_rl.Reservation)
    assert (reservation.estimate, reservation.settled) == (8, False)
    assert reservation.layers == (("k", BUCKET),)
    denied, none = limiter.reserve("k", BUCKET, 5)
    assert not denied.allowed and none is None
    assert near(denied.retry_after_ms, 3 * TOKEN_MS)
    assert left(limiter, "k") == 2  # the denial spent nothing


def test_settling_above_the_estimate_debits_the_difference(limiter):
    _, reservation = limiter.reserve("k", BUCKET, 6)
    d = reservation.settle(13)  # 7 more: 4 left, 3 in debt
    assert reservation.settled
    assert isinstance(d, redis_rl.Decision)
    assert (d.allowed, d.remaining) == (True, 0)
    assert near(d.retry_after_ms, 4 * TOKEN_MS)
    denied = limiter.decide("k", BUCKET)
    assert not denied.allowed
    assert d.retry_after_ms - 1_000 <= denied.retry_after_ms <= d.retry_after_ms


def test_settling_below_the_estimate_refunds_the_difference(limiter):
    _, reservation = limiter.reserve("k", BUCKET, 6)
    d = reservation.settle(2)
    assert (d.allowed, d.remaining) == (True, 8)
    assert left(limiter, "k") == 8
    _, nothing = limiter.reserve("zero", BUCKET, 10)
    assert nothing.settle(0).remaining == 10  # all back


def test_settling_at_the_estimate_sends_nothing(limiter, client):
    _, reservation = limiter.reserve("k", BUCKET, 6)
    before = sent(client)
    assert reservation.settle(6) is None
    assert reservation.settled
    assert sent(client) == before
    assert left(limiter, "k") == 4


def test_a_reservation_settles_once(limiter, client):
    _, reservation = limiter.reserve("k", BUCKET, 6)
    # A refused `actual` settles nothing: it is checked first.
    with pytest.raises(TypeError, match="actual is an int"):
        reservation.settle(2.0)
    with pytest.raises(redis_rl.ConfigurationError, match="actual is at least 0"):
        reservation.settle(-1)
    assert not reservation.settled
    reservation.settle(3)
    before = sent(client)
    for actual in (3, 6, 20):
        with pytest.raises(redis_rl.ReservationSettledError, match="settled already"):
            reservation.settle(actual)
    assert issubclass(redis_rl.ReservationSettledError, redis_rl.RateLimitError)
    assert sent(client) == before
    assert left(limiter, "k") == 7


def test_the_context_manager_settles_the_estimate_when_nothing_was(limiter, client):
    _, reservation = limiter.reserve("k", BUCKET, 6)
    before = sent(client)
    with pytest.raises(ValueError, match="upstream"), reservation:
        raise ValueError("upstream failed")
    assert reservation.settled and sent(client) == before  # the estimate: nothing sent
    with pytest.raises(redis_rl.ReservationSettledError):
        reservation.settle(0)
    assert left(limiter, "k") == 4
    # A normal exit settles the estimate too; a block that settled is left as it settled.
    _, quiet = limiter.reserve("k", BUCKET, 1)
    with quiet as same:
        assert same is quiet
    assert quiet.settled and left(limiter, "k") == 3
    _, used = limiter.reserve("k", BUCKET, 3)
    with used:
        used.settle(1)
    assert left(limiter, "k") == 2


RPM = policy.fixed(5, "1h", name="rpm")
TPM = policy.token_bucket(100, 100, "1h", name="tpm")  # a token every 36 s


def test_reserve_all_settles_only_the_layers_that_reserved_the_estimate(limiter, client,
                                                                         one_window):
    layers = [("{u}:rpm", RPM, 1), ("{u}:tpm", TPM)]
    both, reservation = limiter.reserve_all(layers, 30)
    assert both.allowed and [d.remaining for d in both.layers] == [4, 70]
    assert reservation.layers == (("{u}:tpm", TPM),)
    before = sent(client)
    less = reservation.settle(10)
    assert isinstance(less, redis_rl.AllDecision)
    assert [d.remaining for d in less.layers] == [90]
    assert list(more_calls(before, sent(client)).values()) == [1]  # one RL.ALL (or FCALL)
    _, over = limiter.reserve_all(layers, 30)  # tpm 60 left
    debt = over.settle(95)  # 65 more: 5 in debt
    assert debt.allowed and debt.binding.remaining == 0
    assert debt.binding.retry_after_ms > 5 * 36_000
    assert limiter.peek("{u}:rpm", RPM, cost=0).remaining == 3  # settled never: 2 spent
    denied, none = limiter.reserve_all(layers, 1)
    assert not denied.allowed and none is None and denied.index == 1
    assert limiter.peek("{u}:rpm", RPM, cost=0).remaining == 3  # the denial spent nothing
    # Several estimate layers are settled together, each by the difference.
    two = [("{v}:a", BUCKET), ("{v}:b", TPM), ("{v}:rpm", RPM, 1)]
    _, r2 = limiter.reserve_all(two, 4)
    assert [d.remaining for d in r2.settle(1).layers] == [9, 99]
    _, equal = limiter.reserve_all(two, 4)
    before = sent(client)
    assert equal.settle(4) is None and sent(client) == before
    # A reservation of no estimate layers settles by sending nothing.
    _, costs_only = limiter.reserve_all([("{w}:rpm", RPM, 1)], 9)
    assert costs_only.layers == () and costs_only.settle(50) is None


def test_reserve_all_checks_its_arguments_before_sending(limiter, client):
    before = sent(client)
    with pytest.raises(redis_rl.ConfigurationError, match="at least one"):
        limiter.reserve_all([], 1)
    with pytest.raises(TypeError, match="estimate is an int"):
        limiter.reserve_all([("k", BUCKET)], 1.0)
    with pytest.raises(TypeError, match="cost is an int"):
        limiter.reserve("k", BUCKET, True)
    with pytest.raises(TypeError, match="a policy is"):
        limiter.reserve_all([("k", 42)], 1)
    assert sent(client) == before


class Recorder:
    """A limiter that records the commands a reservation sends."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def _run(self, cmd):
        self.sent.append(cmd.module)
        return "reply"


def test_a_debit_is_capped_at_max_debt():
    assert MAX_DEBT == MAX_COST == 10**12
    rec = Recorder()
    one = Reservation(rec, [("k", BUCKET)], 5, False)
    assert one.settle(5 + MAX_DEBT + 7) == "reply"
    together = Reservation(rec, [("{k}a", BUCKET), ("{k}b", TPM)], 5, True)
    together.settle(2)
    assert rec.sent == [
        ("RL.TOKENBUCKET", "k", "10", "10", "1h", "DEBIT", str(MAX_DEBT)),
        ("RL.ALL", 2, "{k}a", "{k}b", "TOKENBUCKET", "10", "10", "1h", "REFUND", "3",
         "TOKENBUCKET", "100", "100", "1h", "REFUND", "3"),
    ]


def test_async_debit_reserve_and_settle(server, expected_backend):
    async def main():
        c = redis.asyncio.Redis.from_url(server.url)
        limiter = redis_rl.AsyncLimiter(c)
        debit = await limiter.debit("d", BUCKET, 12)
        d, reservation = await limiter.reserve("k", BUCKET, 6)
        more = await reservation.settle(13)
        after_more = await limiter.decide("k", BUCKET)
        with pytest.raises(redis_rl.ReservationSettledError):
            await reservation.settle(13)
        _, less = await limiter.reserve("l", BUCKET, 6)
        refunded = await less.settle(1)
        _, same = await limiter.reserve("s", BUCKET, 6)
        equal = await same.settle(6)
        _, ctx = await limiter.reserve("c", BUCKET, 4)
        with pytest.raises(KeyError):
            async with ctx:
                raise KeyError("boom")
        ctx_left = (await limiter.peek("c", BUCKET, cost=0)).remaining
        layers = [("{u}:rpm", RPM, 1), ("{u}:tpm", TPM)]
        _, all_res = await limiter.reserve_all(layers, 30)
        settled_all = await all_res.settle(5)
        rpm_left = (await limiter.peek("{u}:rpm", RPM, cost=0)).remaining
        denied, none = await limiter.reserve("d", BUCKET, 1)
        await c.aclose()
        return (debit, d, reservation, more, after_more, refunded, same, equal, ctx,
                ctx_left, all_res, settled_all, rpm_left, denied, none)

    (debit, d, reservation, more, after_more, refunded, same, equal, ctx, ctx_left, all_res,
     settled_all, rpm_left, denied, none) = asyncio.run(main())
    assert debit.allowed and debit.remaining == 0 and debit.backend == expected_backend
    assert near(debit.retry_after_ms, 3 * TOKEN_MS)
    assert isinstance(reservation, redis_rl.AsyncReservation)
    assert d.allowed and d.remaining == 4 and reservation.settled
    assert more.allowed and more.remaining == 0 and near(more.retry_after_ms, 4 * TOKEN_MS)
    assert not after_more.allowed and after_more.retry_after_ms <= more.retry_after_ms
    assert refunded.remaining == 9
    assert equal is None and same.settled
    assert ctx.settled and ctx_left == 6
    assert all_res.layers == (("{u}:tpm", TPM),)
    assert [x.remaining for x in settled_all.layers] == [95] and rpm_left == 4
    assert not denied.allowed and none is None
