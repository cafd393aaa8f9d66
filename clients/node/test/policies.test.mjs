// Named policies (docs/commands.md, "Named policies"): a policy's name wherever the package
// takes a policy. On the module (Redis 7.0 and Valkey 9.1) each call by name decides as the
// policy's own command on a twin key; SHADOW policies' would-be denials are `shadowed`; names
// are refused before anything is sent as the server refuses them. On the library (no named
// policies yet) a call by name is a LibraryUnavailableError, its command lines the ones the
// library will take. Then the Express middleware inside real Express apps over HTTP: layers
// by name, and its shadow switch.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import Redis from "ioredis";
import { createClient } from "redis";
import {
  ConfigurationError, Decision, LibraryUnavailableError, Limiter, RlError, header, policy, rateLimitLayers, warnShadowDenied,
} from "redis-rl";

import { hit, roomInWindow, serve } from "./http.mjs";
import { closeAll, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

const HOUR = 3_600_000;
const tuple = (d) => [d.allowed ? 1 : 0, d.limit, d.remaining];

/** node-redis and ioredis, each with a `raw(args)` sending one command line. */
const CLIENTS = {
  "node-redis": async (url) => {
    const c = await createClient({ url }).connect();
    return { client: c, raw: (args) => c.sendCommand(args), close: () => c.close() };
  },
  ioredis: async (url) => {
    const c = new Redis(url);
    return { client: c, raw: (args) => c.call(args[0], ...args.slice(1)), close: () => c.disconnect() };
  },
};

/** A `sendCommand` function over node-redis recording every command line it sends. */
async function recording(url) {
  const c = await createClient({ url }).connect();
  const sent = [];
  const send = (args) => {
    sent.push(args);
    return c.sendCommand(args);
  };
  return { send, sent, raw: (args) => c.sendCommand(args), close: () => c.close() };
}

/** A name of every character a name may hold, 64 long (facts/rl.toml's max_policy_name). */
const LONGEST = "AZaz09_.:-".padEnd(64, "x");
const BAD_NAMES = ["", "no spaces", "é", "a/b", "a{b}", "x".repeat(65), `${LONGEST}y`, "tab\there"];
const NOT_NAMES = [42, null, undefined, {}, [], true];

for (const server of servers.filter((s) => s.withModule)) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`named policies on ${server.label} through ${kind}`, () => {
      let c;
      let limiter;
      const set = (...definition) => c.raw(["RL.POLICY", "SET", ...definition]);
      before(async () => {
        server.reset();
        c = await connect(server.url);
        limiter = new Limiter(c.client);
      });
      after(() => c.close());

      const ALGOS = [
        ["GCRA", ["10", "1s", "BURST", "5"]],
        ["TOKENBUCKET", ["5", "1", "1s"]],
        ["LEAKY", ["5", "1", "1s"]],
        ["SLIDING", ["5", "1m"]],
        ["SLIDINGLOG", ["5", "1m"]],
        ["FIXED", ["5", "1h"]],
      ];
      for (const [algo, params] of ALGOS) {
        test(`limit(key, name) decides as RL.${algo} on a twin key`, async () => {
          await roomInWindow(HOUR, 5_000);
          const name = `${kind}.${algo.toLowerCase()}`;
          assert.equal(await set(name, algo, ...params), "OK");
          const got = [];
          for (let i = 0; i < 4; i++) got.push(await limiter.limit(`${kind}:${algo}`, name, { cost: 2 }));
          for (const g of got) {
            const w = (await c.raw([`RL.${algo}`, `${kind}:${algo}:twin`, ...params, "COST", "2"])).map(Number);
            assert.deepEqual(tuple(g), w.slice(0, 3));
            assert.ok(Math.abs(g.resetAfterMs - w[4]) < 1000);
            assert.deepEqual([g.backend, g.policyName, g.policy, g.shadowed], ["module", name, undefined, false]);
          }
          assert.deepEqual(got.map((d) => d.allowed), [true, true, false, false]);
          // decide() takes a name too: the same command.
          assert.equal((await limiter.decide(`${kind}:${algo}`, name, { cost: 2 })).allowed, false);
        });
      }

      test("peek, refund, PEEK and BLOCK by name", async () => {
        await set(`${kind}-bucket`, "TOKENBUCKET", "100", "10", "1s");
        const key = `${kind}:bucket`;
        assert.equal((await limiter.limit(key, `${kind}-bucket`, { cost: 5 })).remaining, 95);
        assert.equal((await limiter.limit(key, `${kind}-bucket`, { cost: 3, peek: true })).remaining, 92);
        const peeked = await limiter.peek(key, `${kind}-bucket`, { cost: 3 });
        assert.deepEqual([peeked.allowed, peeked.remaining, peeked.policyName], [true, 92, `${kind}-bucket`]);
        assert.equal((await limiter.peek(key, `${kind}-bucket`, { cost: 200 })).allowed, false);
        assert.equal((await limiter.refund(key, `${kind}-bucket`, 2)).remaining, 97);
        assert.equal((await limiter.peek(key, `${kind}-bucket`)).remaining, 96); // the peeks wrote nothing
        assert.equal(Number(await c.raw(["EXISTS", `${kind}:never`])), 0);
        await limiter.peek(`${kind}:never`, `${kind}-bucket`);
        await limiter.limit(`${kind}:never`, `${kind}-bucket`, { peek: true });
        assert.equal(Number(await c.raw(["EXISTS", `${kind}:never`])), 0);

        // BLOCK: the second call of a 10 per second GCRA waits its ~100 ms and is admitted.
        await set(`${kind}-spaced`, "GCRA", "10", "1s");
        assert.ok((await limiter.limit(`${kind}:spaced`, `${kind}-spaced`)).allowed);
        assert.equal((await limiter.limit(`${kind}:spaced`, `${kind}-spaced`)).allowed, false);
        const started = Date.now();
        const waited = await limiter.limit(`${kind}:spaced`, `${kind}-spaced`, { blockMs: 2000 });
        assert.ok(waited.allowed);
        assert.ok(Date.now() - started >= 20, `admitted after ${Date.now() - started} ms`);
      });

      test("all: named and spelt-out layers together, all or nothing", async () => {
        await roomInWindow(HOUR, 5_000);
        await set(`${kind}-export`, "FIXED", "2", "1h");
        const layers = [
          [`{${kind}}:ip`, policy.gcra(100, "1m", { burst: 20, name: "ip" })],
          [`{${kind}}:export`, `${kind}-export`],
        ];
        assert.ok((await limiter.all(layers)).allowed);
        assert.ok((await limiter.all(layers, { peek: true })).allowed);
        assert.ok((await limiter.all(layers)).allowed);
        const denied = await limiter.all(layers);
        assert.deepEqual([denied.allowed, denied.index, denied.binding.policyName], [false, 1, `${kind}-export`]);
        assert.equal(denied.binding.ietfHeaders()["RateLimit-Policy"], `"${kind}-export";q=2`);
        assert.equal(denied.layers[0].ietfHeaders()["RateLimit-Policy"], '"ip";q=100;w=60');
        assert.equal(denied.layers[0].remaining, 18); // the denial (and the peek) spent nothing
        // A POLICY clause's COST.
        const costly = await limiter.all([[`{${kind}}:export2`, `${kind}-export`, 2]]);
        assert.deepEqual([costly.allowed, costly.binding.remaining], [true, 0]);
      });

      test("a SHADOW policy's would-be denial is admitted and shadowed; enforced, it denies", async () => {
        await roomInWindow(HOUR, 5_000);
        const name = `${kind}-trial`;
        await set(name, "FIXED", "1", "1h", "SHADOW");
        const first = await limiter.limit(`${kind}:trial`, name);
        assert.deepEqual([first.allowed, first.remaining, first.retryAfterMs, first.shadowed], [true, 0, 0, false]);
        const second = await limiter.limit(`${kind}:trial`, name);
        assert.deepEqual([second.allowed, second.remaining, second.shadowed], [true, 0, true]);
        assert.ok(second.retryAfterMs > 0);
        assert.equal(second.headers()["Retry-After"], undefined); // answered as admitted
        const never = await limiter.limit(`${kind}:trial`, name, { cost: 2 }); // more than the limit
        assert.deepEqual([never.allowed, never.retryAfterMs, never.shadowed], [true, -1, true]);

        // In RL.ALL a shadow layer denies nothing: the other layer is spent.
        const layers = [[`{${kind}:s}:ip`, policy.fixed(100, "1h")], [`{${kind}:s}:user`, name]];
        await limiter.all(layers);
        const both = await limiter.all(layers);
        assert.equal(both.allowed, true);
        assert.deepEqual(both.layers.map((d) => [d.remaining, d.shadowed]), [[98, false], [0, true]]);
        assert.ok(both.binding.shadowed);

        await set(name, "FIXED", "1", "1h"); // enforced now
        const enforced = await limiter.limit(`${kind}:trial`, name);
        assert.deepEqual([enforced.allowed, enforced.shadowed], [false, false]);
        assert.ok(Number(enforced.headers()["Retry-After"]) >= 1);
        // A spelt-out LEAKY admission with a delay and nothing left is never shadowed.
        await limiter.leaky(`${kind}:queue`, 2, 1, "1s");
        const queued = await limiter.leaky(`${kind}:queue`, 2, 1, "1s");
        assert.deepEqual([queued.allowed, queued.remaining, queued.retryAfterMs > 0, queued.shadowed], [true, 0, true, false]);
      });

      test("an unknown policy is the server's ConfigurationError, whatever the call, and nothing is written", async () => {
        for (const call of [
          () => limiter.limit(`${kind}:u`, "gold"), () => limiter.peek(`${kind}:u`, "gold"),
          () => limiter.refund(`${kind}:u`, "gold", 1),
          () => limiter.all([[`{${kind}}:u1`, policy.fixed(5, "1m")], [`{${kind}}:u2`, "gold"]]),
        ]) {
          await assert.rejects(call(), (err) => {
            assert.ok(err instanceof ConfigurationError);
            assert.equal(err.message, "ERR no such policy 'gold'");
            return true;
          });
        }
        assert.equal(Number(await c.raw(["EXISTS", `${kind}:u`, `{${kind}}:u1`, `{${kind}}:u2`])), 0);
        assert.equal(limiter.backend, "module");
      });
    });
  }

  describe(`policy names on ${server.label}`, () => {
    let r;
    before(async () => {
      r = await recording(server.url);
    });
    after(() => r.close());

    test("a name is refused before anything is sent, as the server refuses it", async () => {
      const limiter = new Limiter(r.send);
      for (const bad of BAD_NAMES) {
        for (const call of [
          () => limiter.limit("k", bad), () => limiter.decide("k", bad), () => limiter.peek("k", bad),
          () => limiter.refund("k", bad, 1), () => limiter.all([["{k}1", policy.fixed(5, "1m")], ["{k}2", bad]]),
        ]) {
          await assert.rejects(call(), (err) => {
            assert.equal(err.name, "RangeError");
            assert.ok(err instanceof ConfigurationError && err instanceof RlError);
            assert.match(err.message, /^a policy name is 1 to 64 of A-Z, a-z, 0-9 and _ \. : -, not /);
            return true;
          });
        }
        // The server refuses it too, with the same rule.
        await assert.rejects(r.raw(["RL.POLICY", "SET", bad, "FIXED", "5", "1m"]),
          { message: "ERR a policy name is 1 to 64 of A-Z, a-z, 0-9 and _ . : -" });
      }
      for (const notName of NOT_NAMES) {
        for (const call of [() => limiter.limit("k", notName), () => limiter.peek("k", notName),
          () => limiter.all([["k", notName]])]) {
          await assert.rejects(call(), (err) => err.name === "TypeError" && err instanceof ConfigurationError
            && /a policy is a policy object/.test(err.message));
        }
      }
      assert.deepEqual(r.sent, []);
      // The longest name, of every character a name may hold, is the server's too.
      assert.equal(await r.raw(["RL.POLICY", "SET", LONGEST, "FIXED", "5", "1m"]), "OK");
      const d = await limiter.limit("k", LONGEST);
      assert.deepEqual([d.remaining, d.policyName], [4, LONGEST]);
      assert.deepEqual(r.sent, [["RL.LIMIT", "k", LONGEST]]);
    });

    test("the module's command lines", async () => {
      const limiter = new Limiter(r.send);
      await r.raw(["RL.POLICY", "SET", "lines", "GCRA", "100", "1s", "BURST", "50"]);
      r.sent.length = 0;
      await limiter.limit("k1", "lines", { cost: 2, peek: true, blockMs: 10 });
      await limiter.refund("k1", "lines", 3);
      await limiter.peek("k1", "lines", { cost: 3 });
      await limiter.all([["{a}1", policy.fixed(5, "1m")], ["{a}2", "lines", 2]], { peek: true });
      assert.deepEqual(r.sent, [
        ["RL.LIMIT", "k1", "lines", "COST", "2", "PEEK", "BLOCK", "10"],
        ["RL.LIMIT", "k1", "lines", "REFUND", "3"],
        ["RL.PEEK", "POLICY", "k1", "lines", "COST", "3"],
        ["RL.ALL", "2", "{a}1", "{a}2", "FIXED", "5", "1m", "POLICY", "lines", "COST", "2", "PEEK"],
      ]);
    });
  });
}

for (const server of servers.filter((s) => !s.withModule)) {
  describe(`named policies on ${server.label}`, () => {
    let r;
    before(async () => {
      server.reset();
      r = await recording(server.url);
    });
    after(() => r.close());

    test("a call naming a policy is a LibraryUnavailableError, and writes nothing", async () => {
      const limiter = new Limiter(r.send);
      for (const call of [
        () => limiter.limit("lib:k", "free"), () => limiter.peek("lib:k", "free", { cost: 2 }),
        () => limiter.refund("lib:k", "free", 1),
        () => limiter.all([["{lib}1", policy.fixed(5, "1m")], ["{lib}2", "free"]]),
      ]) {
        await assert.rejects(call(), (err) => {
          assert.ok(err instanceof LibraryUnavailableError && err instanceof RlError);
          assert.equal(err.code, "ERR_RL_LIBRARY_UNAVAILABLE");
          assert.match(err.message, /^the rl module is not loaded and the rl library on the server has no named policies \(no function rl_limit\).*: ERR /);
          assert.ok(err.cause instanceof Error);
          return true;
        });
      }
      assert.equal(limiter.backend, "library");
      assert.equal(Number(await r.raw(["DBSIZE"])), 0);
      // The same limiter's calls with a policy object are the library's as ever.
      const d = await limiter.fixed("lib:k", 3, "1h");
      assert.deepEqual([d.allowed, d.remaining, d.backend], [true, 2, "library"]);
      // And an error of a spelt-out call stays the library's own.
      await assert.rejects(limiter.fixed("lib:k", 0, "1h"), (err) => err instanceof ConfigurationError);
    });

    test("the library's command lines: rl_limit (no BLOCK), rl_peek POLICY, rl_all's POLICY clauses", async () => {
      const limiter = new Limiter(r.send);
      await limiter.fixed("lib:warm", 3, "1h"); // the library from now on
      r.sent.length = 0;
      const calls = [
        () => limiter.limit("k1", "free", { cost: 2, peek: true, blockMs: 10 }),
        () => limiter.refund("k1", "free", 3),
        () => limiter.peek("k1", "free", { cost: 3 }),
        () => limiter.all([["{a}1", policy.fixed(5, "1m")], ["{a}2", "free", 2]], { peek: true }),
      ];
      for (const call of calls) await assert.rejects(call(), LibraryUnavailableError);
      // rl_limit is missing: the library is loaded again and the call made again, once; then
      // FCALL_RO rl_limit 0 asks whether the library has named policies, writing nothing.
      const probe = ["FCALL_RO", "rl_limit", "0"];
      const load = ["FUNCTION", "LOAD", "REPLACE", "<library>"];
      const limit = ["FCALL", "rl_limit", "1", "k1", "free", "COST", "2", "PEEK"];
      const refund = ["FCALL", "rl_limit", "1", "k1", "free", "REFUND", "3"];
      assert.deepEqual(r.sent.map((a) => (a[0] === "FUNCTION" ? [...a.slice(0, 3), "<library>"] : a)), [
        limit, load, limit, probe,
        refund, load, refund, probe,
        ["FCALL_RO", "rl_peek", "1", "k1", "POLICY", "free", "COST", "3"], probe,
        ["FCALL", "rl_all", "2", "{a}1", "{a}2", "FIXED", "5", "1m", "POLICY", "free", "COST", "2", "PEEK"], probe,
      ]);
    });
  });
}

// --- The Express middleware ---------------------------------------------------------------

/** `middleware` in an Express app (the client is its `x-client` header): `fn(url)`. */
async function served(middleware, fn) {
  const app = await serve(middleware);
  try {
    return await fn(app.url);
  } finally {
    await app.close();
  }
}

/** console.warn's lines while `fn` runs. */
async function warnings(fn) {
  const lines = [];
  const original = console.warn;
  console.warn = (...args) => lines.push(args.join(" "));
  try {
    await fn();
  } finally {
    console.warn = original;
  }
  return lines;
}

for (const server of servers.filter((s) => s.withModule)) {
  describe(`express layers by name on ${server.label}`, () => {
    let c;
    let limiter;
    const set = (...definition) => c.sendCommand(["RL.POLICY", "SET", ...definition]);
    before(async () => {
      server.reset();
      c = await createClient({ url: server.url }).connect();
      limiter = new Limiter(c);
    });
    after(() => c.close());

    test("a layer names the server's policy: its limit, its headers, 429 naming the layer", async () => {
      await roomInWindow(HOUR, 5_000);
      await set("web-free", "FIXED", "3", "1h");
      await set("web-pro", "FIXED", "5", "1h");
      const mw = rateLimitLayers({
        limiter, prefix: "byname",
        layers: [
          { name: "client", identify: header("x-client"), policy: (req) => (req.headers["x-client"] === "pro" ? "web-pro" : "web-free") },
          { name: "all", identify: () => "everyone", policy: policy.fixed(1000, "1h") },
        ],
      });
      await served(mw, async (url) => {
        const first = await hit(url, "acme");
        assert.equal(first.status, 200);
        assert.equal(first.headers.get("x-ratelimit-limit"), "3");
        assert.equal(first.headers.get("ratelimit-policy"), '"web-free";q=3');
        assert.match(first.headers.get("ratelimit"), /^"web-free";r=2;t=\d+$/);
        assert.equal((await hit(url, "acme")).status, 200);
        assert.equal((await hit(url, "acme")).status, 200);
        const denied = await hit(url, "acme");
        assert.equal(denied.status, 429);
        assert.deepEqual(JSON.parse(denied.body), { error: "rate limited", layer: "client" });
        assert.ok(Number(denied.headers.get("retry-after")) >= 1);
        const pro = [];
        for (let i = 0; i < 6; i++) pro.push((await hit(url, "pro")).status);
        assert.deepEqual(pro, [200, 200, 200, 200, 200, 429]);
      });
      // One key per layer and identity, under the layer's name; the denials spent nothing.
      assert.equal((await limiter.peek("byname:all:everyone", policy.fixed(1000, "1h"), { cost: 0 })).remaining, 992);
      assert.equal((await limiter.peek("byname:client:acme", "web-free", { cost: 0 })).remaining, 0);
    });

    test("shadow: true lets would-be denials through with the headers, spends nothing, reports each once", async () => {
      await roomInWindow(HOUR, 5_000);
      await set("web-rehearsed", "FIXED", "2", "1h");
      const denials = [];
      const mw = rateLimitLayers({
        limiter, prefix: "shadow", shadow: true,
        layers: [
          { name: "client", identify: header("x-client"), policy: "web-rehearsed" },
          { name: "all", identify: () => "everyone", policy: policy.fixed(1000, "1h") },
        ],
        onShadowDenied: (denial, req) => denials.push([denial, req.headers["x-client"]]),
      });
      await served(mw, async (url) => {
        const answers = [];
        for (let i = 0; i < 4; i++) answers.push(await hit(url, "acme"));
        assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
        assert.deepEqual(answers.map((a) => a.body), ["ok", "ok", "ok", "ok"]);
        const last = answers[3].headers;
        assert.equal(last.get("x-ratelimit-remaining"), "0");
        assert.equal(last.get("ratelimit-policy"), '"web-rehearsed";q=2');
        assert.equal(last.get("retry-after"), null); // not a refusal
        assert.equal(answers[1].headers.get("x-ratelimit-remaining"), "0");
      });
      assert.equal(denials.length, 2);
      for (const [denial, client] of denials) {
        assert.deepEqual([denial.layer, denial.key, client], ["client", "shadow:client:acme", "acme"]);
        assert.ok(denial.decision instanceof Decision);
        assert.deepEqual([denial.decision.allowed, denial.decision.policyName], [false, "web-rehearsed"]);
        assert.ok(denial.decision.retryAfterMs > 0);
      }
      // All or nothing: the two would-be denials spent nothing in the other layer.
      assert.equal((await limiter.peek("shadow:all:everyone", policy.fixed(1000, "1h"), { cost: 0 })).remaining, 998);
    });

    test("a SHADOW server policy passes by itself, warned once per request by default; enforced, it answers 429", async () => {
      await roomInWindow(HOUR, 5_000);
      await set("web-trial", "FIXED", "1", "1h", "SHADOW");
      const mw = rateLimitLayers({
        limiter, prefix: "trial",
        layers: [
          { name: "ip", identify: () => "203.0.113.7", policy: policy.fixed(100, "1h") },
          { name: "client", identify: header("x-client"), policy: "web-trial" },
        ],
      });
      await served(mw, async (url) => {
        let codes = [];
        const lines = await warnings(async () => {
          for (let i = 0; i < 3; i++) codes.push((await hit(url, "acme")).status);
        });
        assert.deepEqual(codes, [200, 200, 200]);
        assert.equal(lines.length, 2);
        for (const line of lines) assert.match(line, /^rl: shadow: would deny layer client key trial:client:acme: retry after \d+ ms$/);
        await set("web-trial", "FIXED", "1", "1h"); // enforced now
        codes = [];
        const none = await warnings(async () => {
          for (let i = 0; i < 2; i++) codes.push((await hit(url, "acme")).status);
        });
        assert.deepEqual([codes, none], [[429, 429], []]);
      });
      // The shadowed requests were spent by the other layer; the denials were not.
      assert.equal((await limiter.peek("trial:ip:203.0.113.7", policy.fixed(100, "1h"), { cost: 0 })).remaining, 97);
    });

    test("a layer naming an unknown policy fails the request with the server's error", async () => {
      const mw = rateLimitLayers({
        limiter, prefix: "unknown", shadow: true,
        layers: [{ name: "client", identify: header("x-client"), policy: (req) => `web-${req.headers["x-client"]}` }],
      });
      await set("web-known", "FIXED", "1", "1h");
      await served(mw, async (url) => {
        const unknown = await hit(url, "gold");
        assert.deepEqual([unknown.status, unknown.body], [500, "ERR no such policy 'web-gold'"]);
        assert.equal((await hit(url, "known")).status, 200);
      });
      assert.equal(Number(await c.sendCommand(["EXISTS", "unknown:client:gold"])), 0);
    });

    test("a report that throws fails the request, as any error of the middleware", async () => {
      await set("web-one", "FIXED", "1", "1h", "SHADOW");
      const mw = rateLimitLayers({
        limiter, prefix: "throws",
        layers: [{ name: "client", identify: header("x-client"), policy: "web-one" }],
        onShadowDenied: () => { throw new Error("the log is full"); },
      });
      await served(mw, async (url) => {
        assert.equal((await hit(url, "acme")).status, 200);
        const r = await hit(url, "acme");
        assert.deepEqual([r.status, r.body], [500, "the log is full"]);
      });
    });
  });
}

for (const server of servers.filter((s) => !s.withModule)) {
  test(`express on ${server.label}: a layer naming a policy fails the request with the library's error`, async () => {
    server.reset();
    const c = await createClient({ url: server.url }).connect();
    try {
      const limiter = new Limiter(c);
      const named = rateLimitLayers({ limiter, layers: [{ name: "client", identify: header("x-client"), policy: "web" }], shadow: true });
      await served(named, async (url) => {
        const r = await hit(url, "acme");
        assert.equal(r.status, 500);
        assert.match(r.body, /^the rl module is not loaded and the rl library on the server has no named policies/);
      });
      const spelt = rateLimitLayers({ limiter, layers: [{ name: "client", identify: header("x-client"), policy: policy.fixed(2, "1h") }] });
      await served(spelt, async (url) => assert.equal((await hit(url, "acme")).status, 200));
    } finally {
      await c.close();
    }
  });
}

test("the middleware refuses a bad name, shadow or onShadowDenied when it is made", () => {
  const limiter = new Limiter(async () => [1, 1, 0, 0, 0]);
  const layer = (p) => ({ name: "client", identify: header("x-client"), policy: p });
  for (const bad of BAD_NAMES) {
    assert.throws(() => rateLimitLayers({ limiter, layers: [layer(bad)] }),
      (err) => err.name === "RangeError" && err instanceof ConfigurationError && /a policy name is 1 to 64/.test(err.message));
  }
  for (const notName of [42, null, {}]) {
    assert.throws(() => rateLimitLayers({ limiter, layers: [layer(notName)] }), { name: "TypeError", message: /a policy is a policy object/ });
  }
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer("ok")], shadow: "yes" }), { name: "TypeError", message: /shadow is true or false/ });
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer("ok")], onShadowDenied: "log" }), { name: "TypeError", message: /onShadowDenied must be a function/ });
  assert.equal(typeof rateLimitLayers({ limiter, layers: [layer("ok")], shadow: false, onShadowDenied: () => {} }), "function");
});

test("a policy function's bad name fails the request, and nothing is sent", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => {
    sent.push(args);
    return [1, 1, 0, 0, 0];
  });
  const mw = rateLimitLayers({ limiter, layers: [{ name: "client", identify: header("x-client"), policy: () => "no spaces" }] });
  await served(mw, async (url) => {
    const r = await hit(url, "acme");
    assert.deepEqual([r.status, r.body], [500, 'a policy name is 1 to 64 of A-Z, a-z, 0-9 and _ . : -, not "no spaces"']);
  });
  assert.deepEqual(sent, []);
});

test("the default report is one console.warn line: the layer, the key, the retry (or never)", async () => {
  const denial = (retry) => ({ layer: "client", key: "rl:client:acme", decision: new Decision(true, 1, 0, retry, 5000, "module", "web") });
  const lines = await warnings(async () => {
    warnShadowDenied(denial(1800));
    warnShadowDenied(denial(-1));
  });
  assert.deepEqual(lines, [
    "rl: shadow: would deny layer client key rl:client:acme: retry after 1800 ms",
    "rl: shadow: would deny layer client key rl:client:acme: never admissible",
  ]);
});

test("the IETF fields of a decision by name: q the reply's limit, no w", () => {
  const d = new Decision(true, 20, 7, 0, 1500, "module", "api:free");
  assert.deepEqual(d.ietfHeaders(), { "RateLimit-Policy": '"api:free";q=20', RateLimit: '"api:free";r=7;t=2' });
  assert.deepEqual(d.ietfHeaders("api").RateLimit, '"api";r=7;t=2');
  assert.deepEqual([d.policyName, d.policy, d.shadowed], ["api:free", undefined, false]);
  const shadowed = new Decision(true, 20, 0, 900, 900, "module", "api:free");
  assert.equal(shadowed.shadowed, true);
  assert.equal(shadowed.allHeaders()["Retry-After"], undefined);
  assert.equal(new Decision(true, 20, 0, 900, 900, "module", policy.leaky(20, 1, "1s")).shadowed, false);
  assert.equal(new Decision(false, 20, 0, 900, 900, "module", "api:free").shadowed, false);
});
