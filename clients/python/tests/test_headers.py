"""The headers of docs/commands.md's tables ("The shared reply", "The IETF RateLimit
fields"), from decisions built by hand: no server needed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from redis_rl import Decision, policy


def decision(allowed, limit, remaining, retry, reset, p=None):
    return Decision(allowed, limit, remaining, retry, reset, "module", p)


def test_the_x_ratelimit_headers_round_seconds_up():
    d = decision(True, 20, 19, 0, 1_001)
    assert d.headers() == {"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19",
                           "X-RateLimit-Reset": "2"}
    assert decision(True, 5, 5, 0, 0).headers()["X-RateLimit-Reset"] == "0"


def test_retry_after_is_sent_on_a_denial_only_and_never_for_never():
    assert decision(False, 5, 0, 27_000, 27_000).headers()["Retry-After"] == "27"
    assert decision(False, 5, 0, 1, 1).headers()["Retry-After"] == "1"
    assert "Retry-After" not in decision(False, 5, 5, -1, 0).headers()
    # An admitted leaky-bucket call carries its delay in retry_after_ms: still no header.
    assert "Retry-After" not in decision(True, 5, 3, 400, 800).headers()


@pytest.mark.parametrize("p,field", [
    (policy.gcra(100, "1s", 20), 'q=100;w=1'),
    (policy.token_bucket(60, 10, "1m"), 'q=10;w=60'),
    (policy.leaky(5, 1, timedelta(seconds=2)), 'q=1;w=2'),
    (policy.sliding(100, "1500ms"), 'q=100;w=2'),
    (policy.sliding_log(7, 3600), 'q=7;w=3600'),
    (policy.fixed(10_000, "1d"), 'q=10000;w=86400'),
])
def test_the_ietf_policy_is_the_rate_or_the_window(p, field):
    d = decision(True, 20, 19, 0, 1_500, p)
    assert d.ietf_headers("api") == {"RateLimit-Policy": f'"api";{field}',
                                     "RateLimit": '"api";r=19;t=2'}


def test_the_policy_name_defaults_to_the_policys_own():
    d = decision(False, 5, 0, 9_001, 9_001, policy.fixed(5, "1m", name="export"))
    assert d.ietf_headers() == {"RateLimit-Policy": '"export";q=5;w=60',
                                "RateLimit": '"export";r=0;t=10', "Retry-After": "10"}
    assert decision(True, 5, 4, 0, 10).ietf_headers()["RateLimit"] == '"default";r=4;t=1'
    merged = d.all_headers()
    assert merged["X-RateLimit-Remaining"] == "0" and merged["RateLimit"].startswith('"export"')


def test_durations_go_as_the_commands_take_them():
    assert policy.gcra(10, timedelta(milliseconds=1500)).params == ("10", "1500ms")
    assert policy.fixed(1, 60).params == ("1", "60")
    with pytest.raises(ValueError):
        policy.fixed(1, timedelta(microseconds=1))
    with pytest.raises(TypeError):
        policy.fixed(1, 1.5)  # type: ignore[arg-type]
