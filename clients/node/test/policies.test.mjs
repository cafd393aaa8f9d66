// Named policies (docs/commands.md, "Named policies"): a policy's name wherever the package
// takes a policy. On Redis 7.0 and Valkey 9.1, with the module (policies set by RL.POLICY SET)
// and without it (the same policies written into the library by scripts/library-policies.py,
// docs/managed-redis.md "Named policies"), each call by name decides as the policy's own
// command on a twin key, and the library's calls decide as the module's; SHADOW policies'
// would-be denials are `shadowed`; names are refused before anything is sent as the server
// refuses them; the plain library (no policies) answers a name with `no such policy`. Then
// the Express middleware inside real Express apps over HTTP: layers by name, and its shadow
// switch.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createClient } from "redis";
import {
  ConfigurationError, Decision, Limiter, RlError, header, policy, rateLimitLayers, warnShadowDenied,
} from "redis-rl";

import { hit, roomInWindow, serve } from "./http.mjs";
import { CLIENTS } from "./clients.mjs";
import { closeAll, libraryWithPolicies, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

const HOUR = 3_600_000;
const tuple = (d) => [d.allowed ? 1 : 0, d.limit, d.remaining];
const backendOf = (server) => (server.withModule ? "module" : "library");

/** `define(name, ...definition)` on `server` through `raw(args)`: on the module `RL.POLICY SET
 * name ...definition`; on the library, the library written with every policy defined so far
 * (one line each, the last definition of a name kept) loaded with FUNCTION LOAD REPLACE. */
function definer(server, raw) {
  const lines = new Map();
  return async (name, ...definition) => {
    if (server.withModule) return raw(["RL.POLICY", "SET", name, ...definition]);
    lines.set(name, [name, ...definition].join(" "));
    assert.equal(await raw(["FUNCTION", "LOAD", "REPLACE", libraryWithPolicies([...lines.values()])]), "rl");
    return "OK";
  };
}

/** The spelt-out command of `algo` on `server`'s backend: `RL.ALGO key ...` or `FCALL rl_algo 1 key ...`. */
const spelt = (server, algo, key, ...rest) =>
  (server.withModule ? [`RL.${algo}`, key, ...rest] : ["FCALL", `rl_${algo.toLowerCase()}`, "1", key, ...rest]);

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

for (const server of servers) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`named policies on ${server.label} through ${kind}`, () => {
      let c;
      let limiter;
      let set;
      before(async () => {
        server.reset();
        c = await connect(server.url);
        set = definer(server, c.raw);
        limiter = new Limiter(c.client, { denialCache: false }); // policies are redefined between calls
      });
      after(() => c.close());

      // (Rates of an hour: nothing refills between the calls, however slow the machine.)
      const ALGOS = [
        ["GCRA", ["10", "1h", "BURST", "5"]],
        ["TOKENBUCKET", ["5", "1", "1h"]],
        ["LEAKY", ["5", "1", "1h"]],
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
            const w = (await c.raw(spelt(server, algo, `${kind}:${algo}:twin`, ...params, "COST", "2"))).map(Number);
            assert.deepEqual(tuple(g), w.slice(0, 3));
            assert.ok(Math.abs(g.resetAfterMs - w[4]) < 1000);
            assert.deepEqual([g.backend, g.policyName, g.policy, g.shadowed], [backendOf(server), name, undefined, false]);
          }
          assert.deepEqual(got.map((d) => d.allowed), [true, true, false, false]);
          // decide() takes a name too: the same command.
          assert.equal((await limiter.decide(`${kind}:${algo}`, name, { cost: 2 })).allowed, false);
        });
      }

      test("peek, refund, PEEK and BLOCK by name", async () => {
        // (10 per hour: no token comes back between the calls, however slow the machine)
        await set(`${kind}-bucket`, "TOKENBUCKET", "100", "10", "1h");
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

        // BLOCK: the third call of a 10 per 10 s GCRA waits its ~1 s and is admitted on the
        // module (the second, a second apart at most, is denied); the library takes BLOCK and
        // decides at once.
        await set(`${kind}-spaced`, "GCRA", "10", "10s");
        assert.ok((await limiter.limit(`${kind}:spaced`, `${kind}-spaced`)).allowed);
        assert.equal((await limiter.limit(`${kind}:spaced`, `${kind}-spaced`)).allowed, false);
        const started = Date.now();
        const waited = await limiter.limit(`${kind}:spaced`, `${kind}-spaced`, { blockMs: 2000 });
        const took = Date.now() - started;
        if (server.withModule) {
          assert.ok(waited.allowed);
          assert.ok(took >= 20, `admitted after ${took} ms`);
        } else {
          assert.deepEqual([waited.allowed, waited.retryAfterMs > 0, took < 1000], [false, true, true], `denied after ${took} ms`);
        }
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
        assert.equal(limiter.backend, backendOf(server));
      });
    });
  }

}

for (const server of servers.filter((s) => s.withModule)) {
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
  const twin = servers.find((s) => s.withModule && s.flavor === server.flavor);
  describe(`named policies on ${server.label}`, () => {
    let r;
    before(async () => {
      server.reset();
      r = await recording(server.url);
    });
    after(() => r.close());

    test(`calls by name decide as on ${twin.label}, both holding the same policies`, async () => {
      await roomInWindow(HOUR, 5_000);
      twin.reset();
      const m = await recording(twin.url);
      try {
        const POLICIES = [
          ["same-gcra", "GCRA", "10", "1s", "BURST", "5"], ["same-bucket", "TOKENBUCKET", "100", "10", "1s"],
          ["same-sliding", "SLIDING", "3", "1m"], ["same-fixed", "FIXED", "3", "1h"], ["same-trial", "FIXED", "1", "1h", "SHADOW"],
        ];
        const [onModule, onLibrary] = [definer(twin, m.raw), definer(server, r.raw)];
        for (const p of POLICIES) {
          await onModule(...p);
          await onLibrary(...p);
        }
        const ip = policy.fixed(100, "1h");
        const calls = [
          ...Array(4).fill((l) => l.limit("g", "same-gcra", { cost: 2 })),
          ...Array(4).fill((l) => l.decide("s", "same-sliding")),
          (l) => l.limit("b", "same-bucket", { cost: 5 }), (l) => l.limit("b", "same-bucket", { cost: 3, peek: true }),
          (l) => l.peek("b", "same-bucket", { cost: 200 }), (l) => l.refund("b", "same-bucket", 2), (l) => l.peek("b", "same-bucket"),
          ...Array(2).fill((l) => l.limit("t", "same-trial")), (l) => l.limit("t", "same-trial", { cost: 2 }),
          ...Array(4).fill((l) => l.all([["{a}ip", ip], ["{a}f", "same-fixed"]])),
          (l) => l.all([["{a}ip", ip], ["{a}f", "same-fixed"]], { peek: true }),
          ...Array(2).fill((l) => l.all([["{b}ip", ip], ["{b}t", "same-trial", 1]])),
          (l) => l.limit("u", "gold"), (l) => l.all([["{c}1", ip], ["{c}2", "gold"]]),
        ];
        const one = (d) => ({ ints: [d.allowed, d.limit, d.remaining, d.shadowed, d.policyName ?? null],
          times: [d.retryAfterMs, d.resetAfterMs], backend: d.backend });
        const outcome = (p) => p.then((d) => ("layers" in d ? { index: d.index, layers: d.layers.map(one) } : one(d)),
          (err) => ({ error: [err instanceof ConfigurationError, err.message] }));
        const [lm, ll] = [new Limiter(m.send), new Limiter(r.send)];
        const got = [];
        for (const call of calls) got.push([await outcome(call(lm)), await outcome(call(ll))]);
        const errors = got.filter(([a]) => a.error).map(([a, b]) => [a.error, b.error]);
        assert.deepEqual(errors, Array(2).fill([[true, "ERR no such policy 'gold'"], [true, "ERR no such policy 'gold'"]]));
        for (const [i, [a, b]] of got.entries()) {
          if (a.error) continue;
          const [da, db] = a.layers ? [a.layers, b.layers] : [[a], [b]];
          assert.equal(a.index, b.index, `call ${i}`);
          assert.equal(da.length, db.length, `call ${i}`);
          for (const [j, x] of da.entries()) {
            const y = db[j];
            assert.deepEqual([x.backend, y.backend], ["module", "library"]);
            assert.deepEqual(y.ints, x.ints, `call ${i} layer ${j}`);
            for (const k of [0, 1]) {
              assert.ok((x.times[k] < 0) === (y.times[k] < 0) && Math.abs(x.times[k] - y.times[k]) < 1000,
                `call ${i} layer ${j}: ${x.times} on the module, ${y.times} on the library`);
            }
          }
        }
        // Both decided, denied and shadowed: the sequence is not vacuous.
        const flat = got.flatMap(([, b]) => b.layers ?? (b.ints ? [b] : []));
        assert.deepEqual(["allowed", "denied", "shadowed"].map((what, k) =>
          flat.some((d) => (k === 0 ? d.ints[0] && !d.ints[3] : k === 1 ? !d.ints[0] : d.ints[3]))), [true, true, true]);
      } finally {
        await m.close();
      }
    });

    test("the library's command lines: rl_limit (BLOCK included), rl_peek POLICY, rl_all's POLICY clauses, sent as they are", async () => {
      await definer(server, r.raw)("lines", "GCRA", "100", "1s", "BURST", "50");
      const limiter = new Limiter(r.send);
      r.sent.length = 0;
      const limited = await limiter.limit("k1", "lines", { cost: 2, peek: true, blockMs: 10 });
      const refunded = await limiter.refund("k1", "lines", 3);
      const peeked = await limiter.peek("k1", "lines", { cost: 3 });
      const all = await limiter.all([["{a}1", policy.fixed(5, "1m")], ["{a}2", "lines", 2]], { peek: true });
      assert.deepEqual([limited, refunded, peeked, ...all.layers].map((d) => [d.allowed, d.remaining, d.backend, d.policyName ?? null]), [
        [true, 48, "library", "lines"], [true, 50, "library", "lines"], [true, 47, "library", "lines"],
        [true, 4, "library", null], [true, 48, "library", "lines"],
      ]);
      assert.deepEqual(r.sent, [
        ["RL.LIMIT", "k1", "lines", "COST", "2", "PEEK", "BLOCK", "10"],
        ["FCALL", "rl_limit", "1", "k1", "lines", "COST", "2", "PEEK", "BLOCK", "10"],
        ["FCALL", "rl_limit", "1", "k1", "lines", "REFUND", "3"],
        ["FCALL_RO", "rl_peek", "1", "k1", "POLICY", "lines", "COST", "3"],
        ["FCALL", "rl_all", "2", "{a}1", "{a}2", "FIXED", "5", "1m", "POLICY", "lines", "COST", "2", "PEEK"],
      ]);
    });

    test("the package's own library, loaded where missing, holds no policy: a name is its ConfigurationError", async () => {
      server.reset(); // no library on the server
      const limiter = new Limiter(r.send);
      r.sent.length = 0;
      for (const call of [
        () => limiter.limit("lib:k", "free"), () => limiter.peek("lib:k", "free", { cost: 2 }),
        () => limiter.refund("lib:k", "free", 1),
        () => limiter.all([["{lib}1", policy.fixed(5, "1m")], ["{lib}2", "free"]]),
      ]) {
        await assert.rejects(call(), (err) => {
          assert.ok(err instanceof ConfigurationError && err instanceof RlError);
          assert.deepEqual([err.code, err.message], ["ERR_RL_CONFIGURATION", "ERR no such policy 'free'"]);
          assert.ok(err.cause instanceof Error);
          return true;
        });
      }
      // Loaded once (FUNCTION LOAD REPLACE), the call made again; nothing else sent.
      const limit = ["FCALL", "rl_limit", "1", "lib:k", "free"];
      assert.deepEqual(r.sent.map((a) => (a[0] === "FUNCTION" ? [...a.slice(0, 3), "<library>"] : a)), [
        ["RL.LIMIT", "lib:k", "free"], limit, ["FUNCTION", "LOAD", "REPLACE", "<library>"], limit,
        ["FCALL_RO", "rl_peek", "1", "lib:k", "POLICY", "free", "COST", "2"],
        ["FCALL", "rl_limit", "1", "lib:k", "free", "REFUND", "1"],
        ["FCALL", "rl_all", "2", "{lib}1", "{lib}2", "FIXED", "5", "1m", "POLICY", "free"],
      ]);
      assert.deepEqual(await r.raw(["FCALL_RO", "rl_policy", "0", "LIST"]), []);
      assert.equal(limiter.backend, "library");
      assert.equal(Number(await r.raw(["DBSIZE"])), 0);
      // The same limiter's calls with a policy object are the library's as ever.
      const d = await limiter.fixed("lib:k", 3, "1h");
      assert.deepEqual([d.allowed, d.remaining, d.backend], [true, 2, "library"]);
    });

    test("a library older than named policies (no rl_limit) is replaced by the package's on a call by name", async () => {
      server.reset();
      await r.raw(["FUNCTION", "LOAD", "#!lua name=rl\nredis.register_function('rl_fixed', function() return {1, 5, 4, 0, 0} end)"]);
      const limiter = new Limiter(r.send);
      await assert.rejects(limiter.limit("old:k", "free"), { name: "ConfigurationError", message: "ERR no such policy 'free'" });
      assert.deepEqual(r.sent.slice(-3).map((a) => a.slice(0, 3)), [
        ["FCALL", "rl_limit", "1"], ["FUNCTION", "LOAD", "REPLACE"], ["FCALL", "rl_limit", "1"]]);
      const d = await limiter.fixed("old:k", 3, "1h"); // the package's rl_fixed now
      assert.deepEqual([d.allowed, d.limit, d.remaining], [true, 3, 2]);
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

for (const server of servers) {
  describe(`express layers by name on ${server.label}`, () => {
    let c;
    let limiter;
    let set;
    before(async () => {
      server.reset();
      c = await createClient({ url: server.url }).connect();
      set = definer(server, (args) => c.sendCommand(args));
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
  test(`express on ${server.label} with the package's own library: a layer naming a policy fails the request with no such policy`, async () => {
    server.reset();
    const c = await createClient({ url: server.url }).connect();
    try {
      const limiter = new Limiter(c);
      const named = rateLimitLayers({ limiter, layers: [{ name: "client", identify: header("x-client"), policy: "web" }], shadow: true });
      await served(named, async (url) => {
        const r = await hit(url, "acme");
        assert.deepEqual([r.status, r.body], [500, "ERR no such policy 'web'"]);
      });
      const spelt = rateLimitLayers({ limiter, layers: [{ name: "client", identify: header("x-client"), policy: policy.fixed(2, "1h") }] });
      await served(spelt, async (url) => assert.equal((await hit(url, "acme")).status, 200));
      assert.equal(limiter.backend, "library");
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
