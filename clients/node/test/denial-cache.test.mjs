// The denial cache and the counters: the Express middleware served on a free port and driven
// over HTTP on every backend, with the server's own INFO commandstats counting the calls that
// reach it; the limiter's calls by cost; the bound under 100,000 distinct identities.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, describe, test } from "node:test";

import { createClient } from "redis";
import { Decision, DenialCache, Limiter, RESULTS, header, policy, rateLimitLayers } from "redis-rl";

import { serve } from "./http.mjs";
import { closeAll, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

/** The rate-limit calls the server has run: the module's commands, or FCALL and FCALL_RO (a
 * new connection's CLIENT SETINFO and INFO itself are not). */
async function calls(c) {
  const info = await c.sendCommand(["INFO", "commandstats"]);
  let n = 0;
  for (const m of String(info).matchAll(/^cmdstat_(rl\.[a-z]+|fcall(?:_ro)?):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

const zero = () => Object.fromEntries(RESULTS.map((r) => [r, 0]));

async function get(url, headers) {
  const r = await fetch(url + "/", { headers });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

const COMPARED = ["x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit-policy", "content-type", "content-length"];

/** Parses Prometheus text strictly enough: every line a comment (HELP, TYPE) or a sample; the
 * samples by name and labels. promtool checks it too, where installed. */
function parsePrometheus(text) {
  const samples = new Map();
  for (const line of text.trimEnd().split("\n")) {
    if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.e+]+)$/.exec(line);
    assert.ok(m, `not a Prometheus sample: ${line}`);
    samples.set(m[1] + (m[2] ?? ""), Number(m[3]));
  }
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (check.error === undefined) assert.equal(check.status, 0, check.stdout + check.stderr);
  return samples;
}

for (const server of servers) {
  describe(`the denial cache on ${server.label}`, () => {
    test("a cached denial is the server's answer, without a call", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      const p = policy.slidingLog(2, "1h");
      const layers = [{ name: "user", identify: header("x-user"), policy: p }];
      const limiter = new Limiter(c);
      const cached = await serve(rateLimitLayers({ limiter, layers }));
      const plain = await serve(rateLimitLayers({ limiter: new Limiter(c, { denialCache: false }), layers }));
      try {
        const alice = { "x-user": "alice" };
        const first = [];
        for (let i = 0; i < 3; i++) first.push((await get(cached.url, alice)).status);
        assert.deepEqual(first, [200, 200, 429]);
        assert.equal(limiter.metrics.snapshot().user.over_limit, 1);
        let before = await calls(c);
        const asked = performance.now();
        const serverSaid = await get(plain.url, alice); // the server's answer, now
        assert.equal(await calls(c), before + 1);
        before = await calls(c);
        const ours = [];
        for (let i = 0; i < 20; i++) ours.push(await get(cached.url, alice));
        const took = Math.ceil((performance.now() - asked) / 1000); // seconds the countdown may have run
        assert.equal(await calls(c), before, "a cached denial reached the server");
        for (const r of ours) {
          assert.equal(r.status, 429);
          assert.equal(r.body, serverSaid.body);
          assert.deepEqual(JSON.parse(r.body), { error: "rate limited", layer: "user" });
          for (const h of COMPARED) assert.equal(r.headers.get(h), serverSaid.headers.get(h), h);
          assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
          assert.equal(r.headers.get("ratelimit").split("t=")[1], r.headers.get("x-ratelimit-reset"));
        }
        // Never past the server's deadline; less by the time the requests took (and rounding).
        for (const h of ["retry-after", "x-ratelimit-reset"]) {
          const theirs = Number(serverSaid.headers.get(h));
          const mine = Number(ours[0].headers.get(h));
          assert.ok(theirs - 1 - took <= mine && mine <= theirs, `${h}: ${mine} against ${theirs}`);
        }
        const retries = ours.map((r) => Number(r.headers.get("retry-after")));
        assert.deepEqual(retries, [...retries].sort((a, b) => b - a)); // counting down
        assert.deepEqual(limiter.metrics.snapshot().user, { ...zero(), within_limit: 2, over_limit: 1, over_limit_with_local_cache: 20 });
        assert.equal((await get(cached.url, { "x-user": "bob" })).status, 200);
      } finally {
        await cached.close();
        await plain.close();
        await c.close();
      }
    });

    test("a cached denial expires when the server admits again", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      const limiter = new Limiter(c);
      const app = await serve(rateLimitLayers({ limiter, layers: [{ name: "user", identify: header("x-user"), policy: policy.gcra(1, "1s") }] }));
      try {
        const alice = { "x-user": "alice" };
        assert.equal((await get(app.url, alice)).status, 200);
        const denied = await get(app.url, alice);
        const sent = performance.now(); // after the server decided: its Retry-After ran from before
        assert.equal(denied.status, 429);
        assert.equal(limiter.cache.size, 1);
        const n = await calls(c);
        const r = await get(app.url, alice); // a 429 from the cache, or (under load) past the end, the server's 200
        assert.ok((r.status === 429 && (await calls(c)) === n) || (r.status === 200 && (await calls(c)) === n + 1));
        if (r.status === 200) { // already past the end: the entry was dropped when met
          assert.equal(limiter.cache.size, 0);
          return;
        }
        const wait = sent + Number(denied.headers.get("retry-after")) * 1000 - performance.now();
        await new Promise((r) => setTimeout(r, Math.max(0, wait)));
        const before = await calls(c);
        const again = await get(app.url, alice);
        assert.equal(again.status, 200);
        assert.equal(await calls(c), before + 1);
        assert.equal(limiter.cache.size, 0); // the expired entry was dropped when met
      } finally {
        await app.close();
        await c.close();
      }
    });

    test("a smaller cost is never denied from the cache", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      try {
        const limiter = new Limiter(c);
        const bucket = policy.tokenBucket(5, 1, "1h");
        assert.ok((await limiter.decide("k", bucket, { cost: 4 })).allowed); // 1 left
        const denied = await limiter.decide("k", bucket, { cost: 3 });
        assert.ok(!denied.allowed && !denied.cached && denied.remaining === 1);
        const before = await calls(c);
        const hit = await limiter.decide("k", bucket, { cost: 3 });
        const bigger = await limiter.decide("k", bucket, { cost: 5 });
        assert.ok(hit.cached && bigger.cached && !hit.allowed && !bigger.allowed);
        assert.equal(hit.remaining, 1);
        assert.equal(await calls(c), before);
        const one = await limiter.decide("k", bucket, { cost: 1 });
        assert.ok(one.allowed && !one.cached);
        assert.equal(await calls(c), before + 1);
        assert.ok(!(await limiter.decide("k", bucket)).allowed);
        assert.ok((await limiter.decide("k", bucket)).cached);
        assert.deepEqual(limiter.metrics.snapshot().default,
          { ...zero(), within_limit: 2, over_limit: 2, over_limit_with_local_cache: 3 });
        await limiter.refund("k", bucket, 5); // this limiter's own REFUND drops the entry
        assert.ok((await limiter.decide("k", bucket, { cost: 3 })).allowed);
      } finally {
        await c.close();
      }
    });

    test("RL.ALL is denied by a cached layer, peeks read it, RL.BAN drops it", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      try {
        const limiter = new Limiter(c);
        const tight = policy.slidingLog(1, "1h", { name: "tight" });
        const loose = policy.slidingLog(100, "1h", { name: "loose" });
        assert.ok((await limiter.all([["t", tight], ["l", loose]])).allowed);
        const first = await limiter.all([["t", tight], ["l", loose]]);
        assert.ok(!first.allowed && first.index === 0 && !first.cached);
        const before = await calls(c);
        const again = await limiter.all([["l", loose], ["t", tight]]);
        assert.ok(again.cached && !again.allowed && again.index === 1);
        assert.equal(again.binding.policy, tight);
        assert.equal(again.layers[0], undefined);
        assert.ok((await limiter.peek("t", tight)).cached);
        assert.ok((await limiter.decide("t", tight)).cached);
        assert.equal(await calls(c), before);
        assert.equal((await limiter.peek("l", loose)).remaining, 98); // 99 left: the denials spent nothing
        await limiter.ban("t", 0);
        assert.ok(!(await limiter.decide("t", tight)).cached);
        const counted = limiter.metrics.snapshot();
        assert.equal(counted.tight.over_limit, 2);
        assert.equal(counted.tight.over_limit_with_local_cache, 2);
        assert.equal(counted.tight.within_limit, 1); // the binding layer: the least remaining
        assert.equal(limiter.metrics.total(), 5); // 3 RL.ALL and 2 decide; peeks are not counted
      } finally {
        await c.close();
      }
    });

    test("counters equal the requests sent, and their text parses", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      const limiter = new Limiter(c);
      const layers = [
        { name: "user", identify: header("x-user"), policy: policy.slidingLog(3, "1h") },
        { name: "key", identify: header("x-key"), policy: policy.slidingLog(5, "1h") },
      ];
      const app = await serve(rateLimitLayers({ limiter, layers }));
      const codes = [];
      try {
        for (let i = 0; i < 12; i++) codes.push((await get(app.url, { "x-user": `u${i % 2}`, "x-key": "k" })).status);
      } finally {
        await app.close();
      }
      assert.equal(codes.filter((s) => s === 200).length, 5);
      const snap = limiter.metrics.snapshot();
      assert.equal(snap.key.over_limit, 1);
      assert.equal(snap.key.over_limit + snap.key.over_limit_with_local_cache, 7);
      assert.equal(Object.values(snap).reduce((n, r) => n + r.within_limit, 0), 5);
      assert.equal(limiter.metrics.total(), 12);
      const samples = parsePrometheus(limiter.metrics.prometheus());
      for (const [layer, results] of Object.entries(snap)) {
        for (const [result, n] of Object.entries(results)) {
          assert.equal(samples.get(`rl_decisions_total{layer="${layer}",result="${result}"}`), n);
        }
      }
      assert.equal(samples.get("rl_denial_cache_entries"), 1);
      await c.close();
    });

    for (const p of [policy.gcra(1, "1s", { burst: 3 }), policy.tokenBucket(3, 1, "1s"), policy.leaky(3, 1, "1s"),
      policy.fixed(3, "1h"), policy.quota(3, "DAY")]) {
      test(`with exhausted, ${p.algo}'s admission that left nothing denies here, never past its next unit`, async () => {
        server.reset();
        const c = await createClient({ url: server.url }).connect();
        try {
          const limiter = new Limiter(c, { denialCache: new DenialCache({ exhausted: true }) });
          const truth = new Limiter(c, { denialCache: false });
          for (let i = 0; i < 3; i++) assert.ok((await limiter.decide("k", p)).allowed);
          const before = await calls(c);
          const started = performance.now();
          const hit = await limiter.decide("k", p, { cost: 2 });
          const serverSaid = await truth.peek("k", p);
          const elapsed = Math.ceil(performance.now() - started);
          assert.ok(hit.cached && !hit.allowed && hit.remaining === 0 && hit.limit === 3);
          assert.equal(await calls(c), before + 1); // the peek only
          assert.ok(!serverSaid.allowed && serverSaid.retryAfterMs > 0);
          assert.ok(hit.retryAfterMs >= 1 && hit.retryAfterMs <= serverSaid.retryAfterMs + elapsed, `${hit.retryAfterMs} against ${serverSaid.retryAfterMs}`);
          assert.ok(hit.resetAfterMs <= serverSaid.resetAfterMs + elapsed + 1); // both rounded up
          assert.deepEqual(limiter.metrics.snapshot().default, { ...zero(), within_limit: 3, over_limit_with_local_cache: 1 });
        } finally {
          await c.close();
        }
      });
    }

    test("with exhausted, the entry ends when the next unit is free", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      try {
        const limiter = new Limiter(c, { denialCache: new DenialCache({ exhausted: true }) });
        const p = policy.gcra(10, "1s"); // one every 100 ms
        const first = await limiter.decide("k", p);
        const replied = performance.now();
        assert.ok(first.allowed && first.remaining === 0 && limiter.cache.size === 1);
        await new Promise((r) => setTimeout(r, Math.max(0, replied + 150 - performance.now()))); // past the server's 100 ms
        const before = await calls(c);
        const again = await limiter.decide("k", p);
        assert.ok(again.allowed && !again.cached);
        assert.equal(await calls(c), before + 1);
      } finally {
        await c.close();
      }
    });

    test("an exhaustion the reply does not time is not cached", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      try {
        const on = new Limiter(c, { denialCache: new DenialCache({ exhausted: true }) });
        for (const p of [policy.sliding(1, "1h"), policy.slidingLog(1, "1h"), policy.fixed(1, "1h", { penalty: "1m" })]) {
          const d = await on.decide(`k:${p.algo}:${p.penalty.length}`, p);
          assert.ok(d.allowed && d.remaining === 0);
        }
        assert.equal(on.cache.size, 0);
        const fixed = policy.fixed(1, "1h");
        assert.ok((await on.peek("g", fixed)).allowed); // a peek spends nothing
        assert.equal(on.cache.size, 0);
        const off = new Limiter(c);
        assert.ok((await off.decide("f", fixed)).allowed);
        assert.equal(off.cache.size, 0);
        assert.equal(off.cache.exhausted, false);
        assert.throws(() => new DenialCache({ exhausted: 1 }), TypeError);
      } finally {
        await c.close();
      }
    });

    test("with exhausted, a flood past the limit never reaches the server", async () => {
      server.reset();
      const c = await createClient({ url: server.url }).connect();
      const limiter = new Limiter(c, { denialCache: new DenialCache({ exhausted: true }) });
      const app = await serve(rateLimitLayers({ limiter, layers: [{ name: "user", identify: header("x-user"), policy: policy.fixed(2, "1h") }] }));
      try {
        assert.equal((await get(app.url, { "x-user": "warm" })).status, 200); // the library loaded, where it is used
        const before = await calls(c);
        const codes = [];
        for (const user of ["a", "b"]) for (let i = 0; i < 6; i++) codes.push((await get(app.url, { "x-user": user })).status);
        assert.deepEqual(codes, [200, 200, 429, 429, 429, 429, 200, 200, 429, 429, 429, 429]);
        assert.equal(await calls(c), before + 4);
        assert.deepEqual(limiter.metrics.snapshot().user, { ...zero(), within_limit: 5, over_limit_with_local_cache: 8 });
      } finally {
        await app.close();
        await c.close();
      }
    });
  });
}

test("a SHADOW policy's denial is not cached", async () => {
  for (const server of servers.filter((s) => s.withModule)) {
    server.reset();
    const c = await createClient({ url: server.url }).connect();
    try {
      await c.sendCommand(["RL.POLICY", "SET", "rehearse", "SLIDINGLOG", "1", "1h", "SHADOW"]);
      const limiter = new Limiter(c);
      assert.ok((await limiter.limit("s", "rehearse")).allowed);
      const d = await limiter.limit("s", "rehearse");
      assert.ok(d.allowed && d.shadowed && !d.cached);
      assert.equal(limiter.cache.size, 0);
      const before = await calls(c);
      assert.ok((await limiter.limit("s", "rehearse")).shadowed);
      assert.equal(await calls(c), before + 1);
      assert.equal(limiter.metrics.snapshot().rehearse.shadow_mode, 2);
    } finally {
      await c.sendCommand(["RL.POLICY", "DEL", "rehearse"]);
      await c.close();
    }
  }
});

test("an unavailable server is counted, answered 503 or let through", async () => {
  const layers = [{ name: "user", identify: header("x-user"), policy: policy.slidingLog(3, "1h") },
    { name: "key", identify: header("x-key"), policy: policy.slidingLog(5, "1h") }];
  for (const [failOpen, status, result] of [[false, 503, "unavailable"], [true, 200, "unavailable_fail_open"]]) {
    // A sendCommand function that cannot reach its server: node-redis's own error.
    const limiter = new Limiter(async () => { throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }); });
    const warn = console.warn;
    console.warn = () => {};
    const app = await serve(rateLimitLayers({ limiter, layers, failOpen }));
    try {
      assert.equal((await get(app.url, { "x-user": "u", "x-key": "k" })).status, status);
    } finally {
      console.warn = warn;
      await app.close();
    }
    assert.deepEqual(limiter.metrics.snapshot(), { "user+key": { ...zero(), [result]: 1 } });
  }
});

test("the bound holds under 100,000 distinct identities", async () => {
  // 100,000 identities denied by the server (each key's one request of the hour spent, then
  // denied: one pipeline's replies, each recorded as the limiter records a call's), then
  // 1,500 through the limiter's own calls: the map never holds more than its bound.
  const server = servers.find((s) => s.withModule && s.flavor === "redis");
  server.reset();
  const c = await createClient({ url: server.url }).connect();
  const bound = 1000;
  const n = 100_000;
  const cache = new DenialCache({ maxEntries: bound });
  const limiter = new Limiter(c, { denialCache: cache });
  const p = policy.fixed(1, "1h", { name: "flood" });
  try {
    for (let start = 0; start < n; start += 10_000) {
      const keys = Array.from({ length: 10_000 }, (_, i) => `f:${start + i}`);
      const multi = c.multi();
      for (const k of keys) {
        multi.addCommand(["RL.FIXED", k, ...p.params]);
        multi.addCommand(["RL.FIXED", k, ...p.params]);
      }
      const sent = cache.clock();
      const replies = await multi.execAsPipeline();
      keys.forEach((k, i) => {
        const d = Decision.fromReply(replies[2 * i + 1], "module", p);
        assert.ok(!d.allowed && d.retryAfterMs > 0);
        cache.put(k, p, 1, d, sent);
        assert.ok(cache.size <= bound);
      });
    }
    assert.equal(cache.highWater, bound);
    assert.equal(cache.size, bound);
    assert.ok(cache.get(`f:${n - 1}`, p, 1) !== undefined && cache.get("f:0", p, 1) === undefined);
    for (let i = 0; i < 1500; i++) {
      await limiter.decide(`g:${i}`, p);
      assert.ok(!(await limiter.decide(`g:${i}`, p)).allowed);
      assert.ok(cache.size <= bound);
    }
    assert.equal(cache.highWater, bound);
    assert.equal(limiter.metrics.snapshot().flood.over_limit, 1500);
    assert.equal(limiter.metrics.total(), 3000);
  } finally {
    await c.close();
  }
});

test("long keys are held as digests in bounded memory", async () => {
  // 1,000 identities of 8 KB keys (a header-keyed layer's worst), each denied by the server
  // then answered from the cache: the cache holds their digests, not the keys (about 8 MB),
  // a key one character apart is another identity, and a lifted ban drops a long key's entry.
  const { randomBytes } = await import("node:crypto");
  const v8 = await import("node:v8");
  const vm = await import("node:vm");
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc");
  const server = servers.find((s) => s.withModule && s.flavor === "redis");
  server.reset();
  const c = await createClient({ url: server.url }).connect();
  const limiter = new Limiter(c);
  const p = policy.fixed(1, "1h", { name: "long" });
  try {
    // Flat strings of their own (not views of one shared string): what a parsed header is.
    const prefixes = Array.from({ length: 1000 }, () => randomBytes(8).toString("hex"));
    const key = (i) => prefixes[i] + ":" + "x".repeat(8192);
    await limiter.decide("warm", p);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1000; i++) {
      assert.ok((await limiter.decide(key(i), p)).allowed);
      assert.ok(!(await limiter.decide(key(i), p)).allowed);
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.equal(limiter.cache.size, 1000);
    assert.ok(grown < 2_000_000, String(grown)); // the keys themselves would be 8.2 MB
    const sent = await calls(c);
    for (let i = 0; i < 1000; i++) assert.ok((await limiter.decide(key(i), p)).cached);
    assert.equal(await calls(c), sent); // every one answered here
    // Another key, the same but for its last character: the server's to decide (it admits).
    const other = key(0).slice(0, -1) + "y";
    assert.ok((await limiter.decide(other, p)).allowed);
    assert.equal(await calls(c), sent + 1);
    // A ban lifted drops the long key's entry: its next call reaches the server.
    await limiter.ban(key(1), 0);
    assert.ok(!(await limiter.decide(key(1), p)).cached);
    // Just under the bound a key is held as it is, just over as its digest: both are found.
    for (const k of ["k".repeat(64), "k".repeat(65)]) {
      await limiter.decide(k, p);
      assert.equal((await limiter.decide(k, p)).cached, false);
      assert.ok((await limiter.decide(k, p)).cached);
    }
  } finally {
    await c.close();
  }
});
