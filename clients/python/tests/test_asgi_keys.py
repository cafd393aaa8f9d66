"""The ASGI middleware's keys against clients that choose what they send: `tag=` names a
layer, whose identity (escaped) is the hash tag of every key of the request, and IPv6 clients
are keyed by their /56. Inside FastAPI served by uvicorn and driven over HTTP, on every
backend and on a three-master cluster; a request's client address is chosen by sending
`X-Forwarded-For`, which uvicorn trusts from 127.0.0.1 (tests/apps.py)."""

from __future__ import annotations

import contextlib

import httpx
import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
from apps import app_with, example, served_asgi
from redis.cluster import RedisCluster, key_slot

import redis_rl
from redis_rl import policy
from redis_rl.asgi import Layer, RateLimitMiddleware, client_ip, client_subnet, header, ip_key


@contextlib.contextmanager
def serving(client, layers: list[Layer], **options):
    """The app on uvicorn, and a function making one request from an address, with headers."""
    with served_asgi(app_with(client, layers, **options)) as base:
        def get(address: str = "203.0.113.7", **headers: str) -> httpx.Response:
            sent = {"x-forwarded-for": address, **{k.replace("_", "-"): v
                                                   for k, v in headers.items()}}
            return httpx.get(base + "/", headers=sent, timeout=10)

        yield get


def keys(server) -> list[str]:
    return sorted(k.decode() for k in redis.Redis(port=server.port).keys("*"))


IP3 = Layer("ip", client_ip, policy.fixed(3, "1m"))
KEY = Layer("key", header("x-api-key"), policy.fixed(100, "1m"))


def test_a_client_cannot_choose_its_ip_counter_by_the_tag(server, one_window):
    """Ten requests from one address, each with another API key: the IP layer is the tag,
    so all ten spend from one counter, and 3 are admitted (with the API key as the tag,
    each key was a new IP counter: all ten were)."""
    with serving(redis.asyncio.Redis.from_url(server.url), [IP3, KEY], tag="ip") as get:
        got = [get(x_api_key=f"key-{i}").status_code for i in range(10)]
    assert got == [200] * 3 + [429] * 7
    tag = "rl:{203.0.113.7}"
    assert keys(server) == [f"{tag}:ip:203.0.113.7", *(f"{tag}:key:key-{i}" for i in range(3))]


def test_a_request_without_the_header_is_admitted_under_its_address(server, one_window):
    """No API key: the key layer is skipped, and the request's one key is under its address
    (with the header as the tag, it was `rl:{}:...`, CROSSSLOT on a cluster)."""
    with serving(redis.asyncio.Redis.from_url(server.url), [IP3, KEY], tag="ip") as get:
        r = get()
    assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == "2"
    assert keys(server) == ["rl:{203.0.113.7}:ip:203.0.113.7"]


USER = Layer("user", header("x-user"), policy.fixed(5, "1m"))


def test_a_missing_tag_identity_is_the_fixed_tag_none_and_braces_are_escaped(server, one_window):
    with serving(redis.asyncio.Redis.from_url(server.url), [IP3, USER], tag="user") as get:
        assert get().status_code == 200  # no x-user: the tagged layer has no identity
        assert keys(server) == ["rl:{%none}:ip:203.0.113.7"]
        redis.Redis(port=server.port).flushdb()
        assert get(x_user="a}{%b").status_code == 200
    # `%` is escaped first (%25), then the braces (%7B, %7D); the layer's identity as sent.
    tag = "rl:{a%7D%7B%25b}"
    assert keys(server) == [f"{tag}:ip:203.0.113.7", f"{tag}:user:a}}{{%b"]


def test_a_tag_that_is_not_a_layer_name_is_refused_at_construction():
    limiter = redis_rl.AsyncLimiter(redis.asyncio.Redis())
    with pytest.raises(TypeError, match="tag names a layer"):
        RateLimitMiddleware(None, limiter, [IP3, KEY], tag=header("x-api-key"))
    with pytest.raises(ValueError, match="tag names a layer"):
        RateLimitMiddleware(None, limiter, [IP3, KEY], tag="plan")
    with pytest.raises(ValueError, match="prefix holds no brace"):
        RateLimitMiddleware(None, limiter, [IP3, KEY], prefix="rl{}", tag="ip")
    RateLimitMiddleware(None, limiter, [IP3, KEY], prefix="rl{}")  # no tag: any prefix


def test_ipv6_clients_are_limited_by_their_56(server, one_window):
    """Ten addresses of one /56 against a limit of 3: 3 admitted (each address had its own
    counter: all ten were); another /56 has its own."""
    with serving(redis.asyncio.Redis.from_url(server.url), [IP3]) as get:
        got = [get(f"2001:db8:1:1::{i:x}").status_code for i in range(1, 11)]
        other = get("2001:db8:1:200::1").status_code
    assert got == [200] * 3 + [429] * 7 and other == 200
    assert keys(server) == ["rl:ip:2001:db8:1:200::/56", "rl:ip:2001:db8:1::/56"]


def test_an_ipv4_mapped_address_shares_the_ipv4_counter(server, one_window):
    with serving(redis.asyncio.Redis.from_url(server.url), [IP3]) as get:
        got = [get(a).status_code for a in ["1.2.3.4", "::ffff:1.2.3.4", "1.2.3.4",
                                             "::ffff:1.2.3.4"]]
    assert got == [200, 200, 200, 429]
    assert keys(server) == ["rl:ip:1.2.3.4"]


def test_client_subnet_sets_the_ipv6_network(server, one_window):
    one = Layer("ip", client_subnet(64), policy.fixed(1, "1m"))
    with serving(redis.asyncio.Redis.from_url(server.url), [one]) as get:
        got = [get(a).status_code for a in ["2001:db8:1:1::1", "2001:db8:1:2::1",
                                             "2001:db8:1:1::2"]]
    assert got == [200, 200, 429]
    assert keys(server) == ["rl:ip:2001:db8:1:1::/64", "rl:ip:2001:db8:1:2::/64"]


@pytest.mark.parametrize("address,bits,key", [
    ("2001:db8:1:1::1", 56, "2001:db8:1::/56"),
    ("2001:db8:1:1ff::1", 56, "2001:db8:1:100::/56"),
    ("2001:DB8:0001:0001::0001", 64, "2001:db8:1:1::/64"),  # lowercase, no leading zeros
    ("2001:0:0:1::", 128, "2001:0:0:1::/128"),  # the longest run of zeros is ::
    ("2001:0:0:1:0:0:1:1", 128, "2001::1:0:0:1:1/128"),  # a tie: the first run
    ("2001:db8:0:1:1:1:1:1", 128, "2001:db8:0:1:1:1:1:1/128"),  # one zero group stays
    ("::", 56, "::/56"),
    ("::1", 128, "::1/128"),
    ("::1", 1, "::/1"),
    ("fe80::1%eth0", 64, "fe80::/64"),  # the zone index is dropped
    ("::ffff:1.2.3.4", 56, "1.2.3.4"),  # IPv4-mapped: the IPv4 address
    ("1.2.3.4", 56, "1.2.3.4"),
    ("testclient", 56, "testclient"),  # not an address: as it is
    ("/run/app.sock", 56, "/run/app.sock"),
    ("", 56, ""),
])
def test_ip_key(address, bits, key):
    assert ip_key(address, bits) == key


@pytest.mark.parametrize("bits", [0, 129, -1, True, 56.0, "56", None])
def test_ipv6_bits_are_an_integer_from_1_to_128(bits):
    with pytest.raises(ValueError, match="ipv6_bits must be an integer from 1 to 128"):
        client_subnet(bits)
    with pytest.raises(ValueError, match="ipv6_bits must be an integer from 1 to 128"):
        ip_key("::1", bits)


def test_client_ip_is_the_56_and_none_without_a_client():
    scope = {"type": "http", "client": ("2001:db8:1:1::1", 1234)}
    assert client_ip(scope) == client_subnet(56)(scope) == "2001:db8:1::/56"
    assert client_ip({"type": "http", "client": None}) is None


def test_tags_with_braces_and_without_an_identity_on_a_cluster(cluster, one_window):
    """On a fresh cluster client (its first call is RL.ALL), a tag identity with braces and
    `%`, and one missing, keep every key of a request in one slot: no CROSSSLOT."""
    client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.port)
    identities = ["}", "{", "%", "a}{b", "{x}", "%7B", None]
    with serving(client, [IP3, USER], tag="user") as get:
        got = [get(**({"x_user": u} if u else {})).status_code for u in identities]
    assert got == [200] * len(identities)
    rc = RedisCluster(host="127.0.0.1", port=cluster.port)
    stored = sorted(k.decode() for k in rc.keys(target_nodes=RedisCluster.ALL_NODES))
    rc.close()
    assert len(stored) == 2 * len(identities) - 1  # the missing identity has no user key
    by_tag: dict[str, set[int]] = {}
    for k in stored:
        by_tag.setdefault(k.split("}:", 1)[0], set()).add(key_slot(k.encode()))
    assert len(by_tag) == len(identities) and all(len(s) == 1 for s in by_tag.values())
    assert "rl:{%none}:ip:203.0.113.7" in stored and "rl:{%257B}:user:%7B" in stored


def test_the_ip_tag_counts_every_request_of_an_address_on_a_cluster(cluster, one_window):
    client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.port)
    with serving(client, [IP3, KEY], tag="ip") as get:
        got = [get(x_api_key=f"key-{i}").status_code for i in range(10)]
        bare = get("198.51.100.1")  # no API key: its address's tag, no CROSSSLOT
    assert got == [200] * 3 + [429] * 7 and bare.status_code == 200


def test_the_cluster_example(cluster, monkeypatch, one_window):
    """examples/fastapi_cluster.py on a fresh cluster client: the address middleware is
    tagged by the IP layer and the plan's by the plan, so the plan counts one API key over
    all its addresses and every address's IP layer every request of that address; each
    response carries one set of headers, the binding decision's."""
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{cluster.port}")
    app = example("fastapi_cluster").app

    with served_asgi(app) as base:
        def get(route: str, address: str, key: str = "free-key") -> httpx.Response:
            return httpx.get(base + route, timeout=10,
                             headers={"x-forwarded-for": address, "x-api-key": key})

        first = get("/hello", "203.0.113.7")  # the plan's 9 left bind, not the IP's 19
        export = get("/export", "203.0.113.7")  # the endpoint's 4 bind, not the plan's 8
        others = [get("/hello", f"198.51.100.{i}") for i in range(8)]  # the plan's last 8
        denied = get("/hello", "2001:db8:1:1::1")  # the plan is spent, from any address
        pro = get("/hello", "203.0.113.7", "pro-key")  # another plan, the same IP counter
        # The plan denies after the address middleware admitted: its endpoint unit is spent.
        spent = get("/export", "203.0.113.7")
        # The address middleware denies first: the plan is not reached, nothing spent there.
        exports = [get("/export", "192.0.2.1", "pro-key").status_code for _ in range(6)]

    def remaining(r: httpx.Response) -> list[str]:
        return r.headers.get_list("x-ratelimit-remaining")

    assert first.status_code == 200 and remaining(first) == ["9"]
    assert first.headers.get_list("ratelimit-policy") == ['"plan";q=10;w=3600']
    assert export.status_code == 200 and remaining(export) == ["4"]
    assert export.headers["RateLimit-Policy"] == '"endpoint";q=5;w=60'
    assert [r.status_code for r in others] == [200] * 8
    assert denied.status_code == 429 and denied.json() == {"error": "rate limited",
                                                           "layer": "plan"}
    assert remaining(denied) == ["0"] and int(denied.headers["Retry-After"]) > 300
    assert pro.status_code == 200 and pro.headers["RateLimit-Policy"] == '"ip";q=100;w=1'
    assert 16 <= int(pro.headers["X-RateLimit-Remaining"]) <= 19
    assert spent.status_code == 429 and spent.json()["layer"] == "plan"
    assert exports == [200] * 5 + [429]
    rc = RedisCluster(host="127.0.0.1", port=cluster.port)
    limiter = redis_rl.Limiter(rc)
    export_limit = policy.fixed(5, "1m")
    assert limiter.peek("rl:{203.0.113.7}:endpoint:/export", export_limit, cost=0).remaining == 3
    pro_plan = policy.token_bucket(100, 100, "1h")
    assert limiter.peek("rl:{pro-key}:plan:pro-key", pro_plan, cost=0).remaining == 94
    stored = sorted(k.decode() for k in rc.keys(target_nodes=RedisCluster.ALL_NODES))
    rc.close()
    lasting = {"rl:{203.0.113.7}:endpoint:/export", "rl:{192.0.2.1}:endpoint:/export",
               "rl:{free-key}:plan:free-key", "rl:{pro-key}:plan:pro-key"}
    ips = {"rl:{203.0.113.7}:ip:203.0.113.7", "rl:{2001:db8:1::/56}:ip:2001:db8:1::/56",
           "rl:{192.0.2.1}:ip:192.0.2.1",
           *(f"rl:{{198.51.100.{i}}}:ip:198.51.100.{i}" for i in range(8))}
    # (An IP layer's GCRA state expires once idle again, 10 ms after its request.)
    assert lasting <= set(stored) <= lasting | ips
