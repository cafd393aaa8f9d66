// The Express middleware inside a real Express app (examples/express_app.mjs), served on a
// free port and driven over HTTP, on every backend; then layers from chosen client addresses
// (X-Forwarded-For from loopback, Express's `trust proxy`): the tag, IPv6 subnets, IPv4-mapped
// addresses; and ipKey's text, checked against Python's ipaddress and express-rate-limit.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ipKeyGenerator } from "express-rate-limit";
import { createClient } from "redis";
import { Limiter, clientIp, clientSubnet, header, ipKey, policy, rateLimitLayers } from "redis-rl";

import { from, roomInWindow, serve, startExample } from "./http.mjs";
import { Server, closeAll, startAll } from "./servers.mjs";

/** examples/express_app.mjs on a free port, against `redisUrl`. */
async function startApp(redisUrl) {
  const app = await startExample("express_app.mjs", redisUrl);
  const get = (path, key = "free-key") => app.get(path, key ? { "X-API-Key": key } : {});
  return { get, stop: app.stop };
}

/** Waits, if needed, so the next `seconds` fall inside one minute's fixed window. */
async function insideOneMinute(seconds) {
  const into = (Date.now() / 1000) % 60;
  if (into > 60 - seconds) await new Promise((r) => setTimeout(r, (60.5 - into) * 1000));
}

const servers = await startAll();
after(() => closeAll(servers));

for (const server of servers) {
  describe(`express on ${server.label}`, () => {
    let app;
    before(async () => {
      server.reset();
      app = await startApp(server.url);
    });
    after(() => app.stop());

    test("every answer carries the binding layer's headers", async () => {
      const r = await app.get("/hello", "pro-key");
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { message: "hello" });
      assert.equal(r.headers.get("x-ratelimit-limit"), "20"); // the IP layer binds
      assert.equal(r.headers.get("ratelimit-policy"), '"ip";q=100;w=1');
      assert.match(r.headers.get("ratelimit"), /^"ip";r=\d+;t=1$/);
      assert.equal(r.headers.get("retry-after"), null);
    });

    test("an endpoint layer denies with 429 and spends nothing elsewhere", async () => {
      await insideOneMinute(10);
      for (let i = 0; i < 5; i++) assert.equal((await app.get("/export")).status, 200);
      const r = await app.get("/export");
      assert.equal(r.status, 429);
      assert.deepEqual(await r.json(), { error: "rate limited", layer: "endpoint" });
      assert.equal(r.headers.get("ratelimit-policy"), '"endpoint";q=5;w=60');
      const retry = Number(r.headers.get("retry-after"));
      assert.ok(retry >= 1 && retry <= 60);
      const c = await createClient({ url: server.url }).connect();
      const limiter = new Limiter(c);
      const plan = policy.tokenBucket(60, 60, "1m");
      const before = (await limiter.peek("rl:plan:free-key", plan)).remaining;
      assert.ok(before <= 55);
      assert.equal((await app.get("/export")).status, 429);
      assert.ok((await limiter.peek("rl:plan:free-key", plan)).remaining >= before); // only refills
      await c.close();
    });

    test("unknown API keys name no key but the IP's", async () => {
      // The IP layer's GCRA key lives a few milliseconds: the keys written are read from the
      // calls' keyspace events rather than from KEYS afterwards.
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      const events = await c.duplicate().connect();
      const written = new Set();
      try {
        await c.configSet("notify-keyspace-events", "KA");
        await events.pSubscribe("__keyspace@*__:*", (_event, channel) => {
          written.add(channel.slice(channel.indexOf(":") + 1));
        });
        for (const key of ["constructor", "__proto__", "x".repeat(4000), "FREE-KEY"]) {
          assert.equal((await app.get("/export", key)).status, 200);
        }
        await new Promise((r) => setTimeout(r, 300)); // the last events' delivery
        assert.deepEqual([...written], ["rl:ip:127.0.0.1"]);
      } finally {
        await c.configSet("notify-keyspace-events", "");
        await events.close();
        await c.close();
      }
    });

    test("many clients at once are admitted to the limit and no further", async () => {
      await insideOneMinute(10);
      const codes = await Promise.all(Array.from({ length: 40 }, () => app.get("/export", "pro-key").then((r) => r.status)));
      assert.equal(codes.filter((s) => s === 200).length, 5);
      assert.equal(codes.filter((s) => s === 429).length, 35);
    });

    test("a denied client is answered from the denial cache, and /metrics counts it", async () => {
      // /search (10 a minute per key) has no route: 404, but the layers decide it first, and
      // no other test uses it.
      await insideOneMinute(10);
      const counters = async () => {
        const text = await (await app.get("/metrics")).text();
        return new Map([...text.matchAll(/^rl_decisions_total\{layer="([^"]+)",result="([^"]+)"\} (\d+)$/gm)]
          .map((m) => [`${m[1]} ${m[2]}`, Number(m[3])]));
      };
      const c = await createClient({ url: server.url }).connect();
      const calls = async () => [...String(await c.sendCommand(["INFO", "commandstats"]))
        .matchAll(/^cmdstat_(?:rl\.[a-z]+|fcall(?:_ro)?):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
      try {
        const before = await counters();
        for (let i = 0; i < 10; i++) assert.equal((await app.get("/search")).status, 404);
        const asked = performance.now();
        const first = await app.get("/search");
        const n = await calls();
        const second = await app.get("/search");
        const took = Math.ceil((performance.now() - asked) / 1000); // seconds the countdown may have run
        assert.equal(await calls(), n, "the cached denial reached the server");
        assert.deepEqual([first.status, second.status], [429, 429]);
        assert.deepEqual(await second.json(), await first.json());
        for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit-policy"]) {
          assert.equal(second.headers.get(h), first.headers.get(h));
        }
        const drop = Number(first.headers.get("retry-after")) - Number(second.headers.get("retry-after"));
        assert.ok(drop >= 0 && drop <= 1 + took, `Retry-After ${drop} s less`);
        const after = await counters();
        const grew = (k) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
        assert.equal(grew("endpoint over_limit"), 1);
        assert.equal(grew("endpoint over_limit_with_local_cache"), 1);
        // The 10 admitted, each under its binding layer, and the /metrics call before `after`.
        assert.equal(["ip", "plan", "endpoint"].reduce((t, l) => t + grew(`${l} within_limit`), 0), 11);
      } finally {
        await c.close();
      }
    });
  });
}

for (const server of servers) {
  describe(`layers from chosen addresses on ${server.label}`, { concurrency: false }, () => {
    let c;
    let limiter;
    before(async () => {
      server.reset();
      c = await createClient({ url: server.url }).connect();
      limiter = new Limiter(c);
    });
    after(() => c.close());
    const keys = async (pattern) => (await c.keys(pattern)).sort();
    /** `middleware` in an Express app that takes req.ip from X-Forwarded-For (sent from
     * loopback, as a proxy on the same host would): `fn(url)`, then the app is closed. */
    const behind = async (middleware, fn) => {
      const app = await serve(middleware, { trustProxy: "loopback" });
      try {
        return await fn(app.url);
      } finally {
        await app.close();
      }
    };
    const ipAndKey = (tag, prefix) => rateLimitLayers({
      limiter, tag, prefix,
      layers: [
        { name: "ip", identify: clientIp, policy: policy.fixed(3, "1m") },
        { name: "key", identify: header("x-api-key"), policy: policy.fixed(100, "1m") },
      ],
    });

    test("tag: the IP layer counts every request of its address, whatever the API key", async () => {
      await roomInWindow(60_000, 5_000); // (one fixed minute for the whole test)
      await behind(ipAndKey("ip", "t1"), async (url) => {
        const codes = [];
        for (let i = 0; i < 10; i++) codes.push((await from(url, "203.0.113.7", { "x-api-key": `k${i}` })).status);
        assert.deepEqual(codes, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
        // The other layer counts per (address, key); only admitted requests spent.
        assert.deepEqual(await keys("t1:*203.0.113.7*"), ["t1:{203.0.113.7}:ip:203.0.113.7",
          "t1:{203.0.113.7}:key:k0", "t1:{203.0.113.7}:key:k1", "t1:{203.0.113.7}:key:k2"]);
        // Without the header: admitted, no error, its one key under its address's tag.
        assert.equal((await from(url, "203.0.113.8")).status, 200);
        assert.deepEqual(await keys("t1:*203.0.113.8*"), ["t1:{203.0.113.8}:ip:203.0.113.8"]);
      });
    });

    test("tag: a request without the tagged identity is under {%none}, and braces are escaped", async () => {
      await behind(ipAndKey("key", "t2"), async (url) => {
        assert.equal((await from(url, "203.0.113.9")).status, 200);
        assert.deepEqual(await keys("t2:*"), ["t2:{%none}:ip:203.0.113.9"]);
        assert.equal((await from(url, "203.0.113.9", { "x-api-key": "a}b{%" })).status, 200);
        assert.deepEqual(await keys("t2:{a*"), ["t2:{a%7Db%7B%25}:ip:203.0.113.9", "t2:{a%7Db%7B%25}:key:a}b{%"]);
      });
    });

    test("IPv6: a /56 is one client, another /56 another; IPv4-mapped is IPv4", async () => {
      await roomInWindow(60_000, 5_000);
      const mw = rateLimitLayers({ limiter, prefix: "v6", layers: [{ name: "ip", identify: clientIp, policy: policy.fixed(3, "1m") }] });
      await behind(mw, async (url) => {
        const codes = [];
        for (let i = 1; i <= 10; i++) codes.push((await from(url, `2001:db8:1:1::${i.toString(16)}`)).status);
        assert.deepEqual(codes.filter((x) => x === 200).length, 3);
        assert.equal((await from(url, "2001:db8:1:200::1")).status, 200); // another /56
        const mixed = [];
        for (const a of ["::ffff:192.0.2.1", "192.0.2.1", "::FFFF:192.0.2.1", "192.0.2.1"]) mixed.push((await from(url, a)).status);
        assert.deepEqual(mixed, [200, 200, 200, 429]); // one counter
        assert.deepEqual(await keys("v6:*"), ["v6:ip:192.0.2.1", "v6:ip:2001:db8:1:200::/56", "v6:ip:2001:db8:1::/56"]);
      });
      const by64 = rateLimitLayers({ limiter, prefix: "v64",
        layers: [{ name: "ip", identify: clientSubnet(64), policy: policy.fixed(1, "1m") }] });
      await behind(by64, async (url) => {
        const codes = [];
        for (const a of ["2001:db8:1:1::1", "2001:db8:1:1::2", "2001:db8:1:2::1"]) codes.push((await from(url, a)).status);
        assert.deepEqual(codes, [200, 429, 200]); // the second is in the first one's /64
      });
    });
  });
}

test("the app follows its server's restart and a failover to a server without the module", async () => {
  const s = await new Server("redis", true, ["--appendonly", "yes", "--appendfsync", "always"]).start();
  const app = await startApp(s.url);
  try {
    await insideOneMinute(15);
    for (let i = 0; i < 3; i++) assert.equal((await app.get("/export")).status, 200);
    await s.restart(); // the AOF keeps the window's count
    let r = await app.get("/export");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ratelimit-remaining"), "1");
    s.withModule = false;
    s.extra = [];
    await s.restart();
    r = await app.get("/export");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ratelimit-remaining"), "4");
  } finally {
    await app.stop();
    await s.close();
  }
});

test("an unreachable server fails the request, not open", async () => {
  const limiter = new Limiter(async () => { throw new Error("connect ECONNREFUSED"); });
  const mw = rateLimitLayers({ limiter, layers: [{ name: "ip", identify: () => "x", policy: policy.gcra(1, "1s") }] });
  const err = await new Promise((resolve) => mw({ headers: {} }, { setHeader() {}, end() {}, statusCode: 200 }, resolve));
  assert.match(String(err), /ECONNREFUSED/);
});

test("a wrong configuration is refused at start-up", () => {
  const limiter = new Limiter(async () => [1, 1, 0, 0, 0]);
  const layer = { name: "ip", identify: () => "x", policy: policy.gcra(1, "1s") };
  assert.throws(() => rateLimitLayers({ limiter, layers: [] }), RangeError);
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer, layer] }), /distinct/);
  assert.throws(() => rateLimitLayers({ limiter: {}, layers: [layer] }), TypeError);
  // The tag names a layer: a function (the old form) or another name is refused.
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer], tag: () => "x" }), { name: "TypeError", message: /tag names a layer/ });
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer], tag: "key" }), { name: "RangeError", message: /tag names a layer.*"key" is not one of ip/ });
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer], tag: "ip", prefix: "a{b}" }), /prefix must not contain braces/);
  assert.throws(() => clientSubnet(0), RangeError);
});

// ipKey(address, bits) -> key. Each row was checked against Python's ipaddress
// (`ip_network(f"{ip}/{bits}", strict=False).compressed`, the IPv4 address for IPv4 and for
// IPv4-mapped IPv6, the text unchanged when it is not an address).
const IP_KEYS = [
  ["2001:db8:1:1::1", 56, "2001:db8:1::/56"],
  ["2001:db8:1:1ff::1", 56, "2001:db8:1:100::/56"],
  ["2001:db8:1:ff::9", 56, "2001:db8:1::/56"],
  ["2001:db8:1:1::1", 64, "2001:db8:1:1::/64"],
  ["2001:db8:1:2::1", 64, "2001:db8:1:2::/64"],
  ["2001:DB8:0001:0001:0000:0000:0000:0001", 56, "2001:db8:1::/56"],
  ["2001:db8:1:200::1", 56, "2001:db8:1:200::/56"],
  ["2001:0:0:1::", 128, "2001:0:0:1::/128"], // the longest run of zeros is the one compressed
  ["2001:0:0:1:0:0:1:1", 128, "2001::1:0:0:1:1/128"], // the first of two equal runs
  ["1:0:1:0:1:0:1:0", 128, "1:0:1:0:1:0:1:0/128"], // a single zero group stays
  ["0:0:1:0:0:0:1:0", 128, "0:0:1::1:0/128"],
  ["::", 56, "::/56"],
  ["::", 128, "::/128"],
  ["::1", 128, "::1/128"],
  ["::1", 56, "::/56"],
  ["::ffff:1.2.3.4", 56, "1.2.3.4"],
  ["::FFFF:102:304", 128, "1.2.3.4"],
  ["::1.2.3.4", 56, "::/56"], // IPv4-compatible (deprecated) is IPv6
  ["::1.2.3.4", 128, "::102:304/128"],
  ["1.2.3.4", 56, "1.2.3.4"],
  ["0.0.0.0", 56, "0.0.0.0"],
  ["fe80::1%eth0", 56, "fe80::/56"],
  ["fe80::1%eth0", 128, "fe80::1/128"],
  ["1.2.3.4%eth0", 56, "1.2.3.4"],
  ["1:2:3:4:5:6:7:8", 128, "1:2:3:4:5:6:7:8/128"],
  ["1:2:3:4:5:6:7::", 128, "1:2:3:4:5:6:7:0/128"],
  ["::2:3:4:5:6:7:8", 128, "0:2:3:4:5:6:7:8/128"],
  ["1:2:3:4:5:6:1.2.3.4", 128, "1:2:3:4:5:6:102:304/128"],
  ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1, "8000::/1"],
  ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 127, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127"],
  ["2001:db8:abcd:12ff::1", 60, "2001:db8:abcd:12f0::/60"],
  // Not addresses: unchanged.
  ["testclient", 56, "testclient"],
  ["/tmp/app.sock", 56, "/tmp/app.sock"],
  ["", 56, ""],
  ["01.2.3.4", 56, "01.2.3.4"],
  ["1.2.3", 56, "1.2.3"],
  ["256.1.1.1", 56, "256.1.1.1"],
  ["1:2:3:4:5:6:7:8:9", 56, "1:2:3:4:5:6:7:8:9"],
  ["1::2::3", 56, "1::2::3"],
  [":1::", 56, ":1::"],
  ["1:::", 56, "1:::"],
  ["12345::", 56, "12345::"],
  ["::1.2.3.04", 56, "::1.2.3.04"],
  ["1.2.3.4::", 56, "1.2.3.4::"],
  ["1::2:3:4:5:6:7:8", 56, "1::2:3:4:5:6:7:8"], // `::` must stand for one group at least
  ["[::1]", 56, "[::1]"],
  ["::g", 56, "::g"],
];

test("ipKey: Python ipaddress' text, and express-rate-limit's ipKeyGenerator's for IPv6", () => {
  for (const [address, bits, key] of IP_KEYS) {
    assert.equal(ipKey(address, bits), key, `${address} /${bits}`);
    if (bits === 56 || bits === 64) {
      if (key.endsWith(`/${bits}`) && !address.includes("%") && !address.includes(".")) {
        assert.equal(ipKeyGenerator(address, bits), key, `ipKeyGenerator(${address}, ${bits})`);
      }
    }
  }
  assert.equal(ipKey("2001:db8:1:1::1"), "2001:db8:1::/56"); // /56 by default
  assert.equal(clientIp({ ip: "2001:db8:1:1::1", headers: {} }), "2001:db8:1::/56");
  assert.equal(clientIp({ headers: {}, socket: { remoteAddress: "::ffff:127.0.0.1" } }), "127.0.0.1");
  assert.equal(clientIp({ headers: {} }), undefined);
  for (const bits of [0, 129, 1.5, "56", Number.NaN, null]) {
    assert.throws(() => ipKey("::1", bits), { name: "RangeError", message: /ipv6Bits must be an integer from 1 to 128/ });
    assert.throws(() => clientSubnet(bits), RangeError);
  }
  assert.throws(() => ipKey(undefined), TypeError);
});
