// Penalties and bans through the package: a policy's `{ penalty, escalate }` sent as `PENALTY d
// [ESCALATE max]` in single calls and RL.ALL clauses (never in RL.PEEK), a named policy's
// penalty used by its name, `ban(key, ms)` and its lifting, and a login endpoint in a real
// Express app (examples/express_login.mjs's) over HTTP: failures reach the penalty, whose 429
// carries the headers, and later penalties escalate; the Express middleware with a penalty on
// one of its layers. On Redis 7.0 and Valkey 9.1, with the module and without it (the
// Functions library), through node-redis and ioredis.
//
// A penalty's length is read from the key as the server stores it (facts/rl.toml's `penalty`:
// `<tag>:<end>:<len>:<keep>` in ms): the replies give only the later of the penalty's end and
// the limiter's own wait.
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";

import express from "express";
import { ConfigurationError, ForeignKeyError, Limiter, header, policy, rateLimitLayers } from "redis-rl";

import { CLIENTS } from "./clients.mjs";
import { hit, roomInWindow, serve, sleep } from "./http.mjs";
import { closeAll, libraryWithPolicies, startAll } from "./servers.mjs";

// The facts as the package ships them (its generated facts.js, beside index.js).
const facts = await import(new URL("facts.js", import.meta.resolve("redis-rl")).href);

const servers = await startAll();
after(() => closeAll(servers));

const HOUR = 3_600_000;
const RIGHT = "correct horse battery staple";

/** The key's penalty as stored: { end, length, keep } in ms, or null. */
async function penaltyOf(raw, key) {
  let text;
  if ((await raw(["TYPE", key])) === "zset") {
    const score = String(facts.PENALTY_LOG_SCORE);
    text = (await raw(["ZRANGEBYSCORE", key, score, score]))[0] ?? "";
  } else {
    text = String((await raw(["GET", key])) ?? "").split(facts.PENALTY_SEPARATOR).pop();
  }
  const [tag, end, length, keep] = text.split(":");
  return tag === facts.PENALTY_TAG ? { end: Number(end), length: Number(length), keep: Number(keep) } : null;
}

/** The server's clock in ms. */
async function serverMs(raw) {
  const [s, us] = await raw(["TIME"]);
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Until the server's clock is past `end` (a penalty's end). */
async function waitPast(raw, end) {
  const deadline = Date.now() + 30_000;
  while ((await serverMs(raw)) <= end) {
    assert.ok(Date.now() < deadline, "the server's clock did not pass the penalty's end");
    await sleep(20);
  }
}

/** A login endpoint as examples/express_login.mjs has it, counting failures by `failures`:
 * { login(account, password) -> Response, close }. */
async function loginApp(limiter, failures) {
  const passwords = new Map([["alice", RIGHT]]);
  const app = express();
  app.post("/login", express.urlencoded({ extended: false }), async (req, res) => {
    const { account, password } = req.body;
    if (typeof account !== "string" || typeof password !== "string") return res.status(400).json({ error: "account and password" });
    const { decision, reservation } = await limiter.reserve(`login:${account}`, failures, 1);
    if (!reservation) return res.status(429).set(decision.headers()).json({ error: "too many failed logins" });
    if (passwords.get(account) !== password) return res.status(401).json({ error: "wrong account or password" });
    await reservation.settle(0);
    res.json({ account });
  });
  const http = app.listen(0, "127.0.0.1");
  await once(http, "listening");
  const url = `http://127.0.0.1:${http.address().port}/login`;
  return {
    login: (account, password) => fetch(url, { method: "POST", body: new URLSearchParams({ account, password }) }),
    close: () => new Promise((r) => { http.closeAllConnections(); http.close(r); }),
  };
}

test("a penalty follows the parameters in calls and clauses, never in RL.PEEK", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => {
    sent.push(args);
    return args[0] === "RL.BAN" ? 1 : args[0] === "RL.ALL" ? [1, 5, 4, 0, 0, [[1, 5, 4, 0, 0], [1, 5, 4, 0, 0]]] : [1, 5, 4, 0, 0];
  });
  const p = policy.gcra(10, "1s", { burst: 5, penalty: "15m", escalate: "24h" });
  assert.deepEqual(p.penalty, ["PENALTY", "15m", "ESCALATE", "24h"]);
  await limiter.decide("k", p, { cost: 2 });
  await limiter.fixed("k", 5, "1m", { penalty: 90 });
  await limiter.all([["a", p], ["b", policy.fixed(5, "1m"), 3]]);
  await limiter.peek("k", p);
  await limiter.refund("k", p, 1);
  assert.equal(await limiter.ban("k", 0), true);
  assert.deepEqual(sent, [
    ["RL.GCRA", "k", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE", "24h", "COST", "2"],
    ["RL.FIXED", "k", "5", "1m", "PENALTY", "90"],
    ["RL.ALL", "2", "a", "b", "GCRA", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE", "24h", "FIXED", "5", "1m", "COST", "3"],
    ["RL.PEEK", "GCRA", "k", "10", "1s", "BURST", "5"],
    ["RL.GCRA", "k", "10", "1s", "BURST", "5", "PENALTY", "15m", "ESCALATE", "24h", "REFUND", "1"],
    ["RL.BAN", "k", "0"],
  ]);
  assert.deepEqual(policy.named(p, "login").penalty, p.penalty); // a name keeps the penalty
});

test("escalate needs a penalty, refused before anything is sent", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => sent.push(args));
  assert.throws(() => policy.fixed(5, "1m", { escalate: "1h" }), (e) => e instanceof ConfigurationError && e instanceof RangeError && /needs a penalty/.test(e.message));
  await assert.rejects(limiter.sliding("k", 5, "1m", { escalate: "1h" }), ConfigurationError);
  assert.throws(() => policy.fixed(5, "1m", { penalty: 1.5 }), TypeError);
  await assert.rejects(limiter.ban("k", true), TypeError);
  await assert.rejects(limiter.ban("k", 1.5), TypeError);
  assert.deepEqual(sent, []);
});

for (const server of servers) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`penalties on ${server.label} through ${kind}`, () => {
      let c;
      let limiter;
      before(async () => {
        server.reset();
        c = await connect(server.url);
        limiter = new Limiter(c.client, { denialCache: false }); // the server's clock is moved
      });
      after(() => c.close());

      test("the server's refusals are ConfigurationErrors", async () => {
        await assert.rejects(limiter.fixed("r", 5, "1m", { penalty: "1h", escalate: "15m" }),
          (e) => e instanceof ConfigurationError && /ESCALATE max must be at least PENALTY d/.test(e.message));
        await assert.rejects(limiter.fixed("r", 5, "1m", { penalty: "0s" }), ConfigurationError);
        await assert.rejects(limiter.ban("r", -1), (e) => e instanceof ConfigurationError && /ms must be an integer from 0 to/.test(e.message));
        assert.equal(limiter.backend, server.withModule ? "module" : "library");
      });

      test("a denial starts the penalty, which denies every call till its end", async () => {
        await roomInWindow(60_000, 10_000);
        const f = policy.fixed(2, "1m", { penalty: "1h" });
        const key = `deny:${kind}`;
        assert.deepEqual([(await limiter.decide(key, f)).allowed, (await limiter.decide(key, f)).allowed], [true, true]);
        const d = await limiter.decide(key, f); // the denial that starts it is already the penalty's
        assert.deepEqual([d.allowed, d.limit, d.remaining], [false, 2, 0]);
        assert.ok(d.retryAfterMs >= HOUR && d.retryAfterMs <= HOUR + 1, String(d.retryAfterMs));
        assert.equal(d.headers()["Retry-After"], String(Math.ceil(d.retryAfterMs / 1000)));
        const stored = await penaltyOf(c.raw, key);
        assert.equal(stored.length, HOUR);
        const before = await c.raw(["GET", key]);
        for (const call of [() => limiter.decide(key, f), () => limiter.fixed(key, 100, "1m"),
          () => limiter.decide(key, f, { peek: true }), () => limiter.peek(key, f)]) {
          const x = await call();
          assert.ok(!x.allowed && x.remaining === 0 && x.retryAfterMs > HOUR - 100_000, JSON.stringify(x));
        }
        assert.equal(await c.raw(["GET", key]), before); // denials write nothing
        const zero = await limiter.decide(key, f, { cost: 0 });
        assert.ok(zero.allowed && zero.remaining === 0 && zero.retryAfterMs > HOUR - 100_000);
      });

      for (const spelt of [policy.gcra(1, "1h", { penalty: "1h" }), policy.tokenBucket(1, 1, "1h", { penalty: "1h" }),
        policy.leaky(1, 1, "1h", { penalty: "1h" }), policy.sliding(1, "1h", { penalty: "1h" }),
        policy.slidingLog(1, "1h", { penalty: "1h" }), policy.fixed(1, "1h", { penalty: "1h" })]) {
        test(`${spelt.algo} takes a penalty`, async () => {
          const key = `each:${kind}:${spelt.algo}`;
          assert.equal((await limiter.decide(key, spelt)).allowed, true);
          assert.equal((await limiter.decide(key, spelt)).allowed, false);
          assert.equal((await penaltyOf(c.raw, key)).length, HOUR);
          assert.equal((await limiter.peek(key, spelt)).allowed, false);
        });
      }

      test("a penalty escalates from the previous one", async () => {
        await roomInWindow(60_000, 10_000);
        const f = policy.fixed(1, "1m", { penalty: "200ms", escalate: "1m" });
        const key = `escalate:${kind}`;
        assert.equal((await limiter.decide(key, f)).allowed, true);
        const lengths = [];
        for (let i = 0; i < 3; i++) {
          assert.equal((await limiter.decide(key, f)).allowed, false); // the window is spent: a penalty starts
          const p = await penaltyOf(c.raw, key);
          lengths.push(p.length);
          await waitPast(c.raw, p.end);
        }
        assert.deepEqual(lengths, [200, 400, 800]);
      });

      test("ban, then lift", async () => {
        const key = `ban:${kind}`;
        const s = policy.sliding(100, "1m");
        assert.equal(await limiter.ban(key, HOUR), false); // no key before: it holds the ban alone
        const d = await limiter.decide(key, s);
        assert.ok(!d.allowed && d.remaining === 0 && d.retryAfterMs > HOUR - 1000 && d.retryAfterMs <= HOUR + 1);
        assert.equal(await limiter.ban(key, 0), true);
        assert.equal(Number(await c.raw(["EXISTS", key])), 0);
        assert.equal((await limiter.decide(key, s)).allowed, true);
        assert.equal(await limiter.ban(key, 60_000), true); // on a limiter's key: its state stays
        assert.equal((await limiter.decide(key, s)).allowed, false);
        assert.equal(await limiter.ban(key, 0), true);
        assert.equal((await limiter.decide(key, s)).remaining, 98);
        await c.raw(["SET", `name:${kind}`, "Ada"]);
        await assert.rejects(limiter.ban(`name:${kind}`, 1000), (e) => e instanceof ForeignKeyError && e.holds === "value");
        await c.raw(["RPUSH", `list:${kind}`, "x"]);
        await assert.rejects(limiter.ban(`list:${kind}`, 1000), (e) => e instanceof ForeignKeyError && e.holds === "type");
        assert.equal(await c.raw(["GET", `name:${kind}`]), "Ada");
      });

      test("in RL.ALL only the denying layer with a penalty starts one", async () => {
        await roomInWindow(60_000, 10_000);
        const ip = policy.fixed(100, "1m", { name: "ip" });
        const account = policy.fixed(2, "1m", { penalty: "1h", name: "account" });
        const layers = [[`{${kind}}:ip`, ip], [`{${kind}}:account`, account]];
        for (let i = 0; i < 2; i++) assert.equal((await limiter.all(layers)).allowed, true);
        const d = await limiter.all(layers);
        assert.ok(!d.allowed && d.index === 1 && d.binding.policy.name === "account" && d.binding.retryAfterMs >= HOUR);
        assert.equal((await penaltyOf(c.raw, `{${kind}}:account`)).length, HOUR);
        assert.equal(await penaltyOf(c.raw, `{${kind}}:ip`), null);
        assert.equal((await limiter.peek(`{${kind}}:ip`, ip, { cost: 0 })).remaining, 98); // the denial spent nothing
        assert.equal((await limiter.all(layers)).allowed, false);
        assert.equal((await limiter.peek(`{${kind}}:ip`, ip, { cost: 0 })).remaining, 98);
      });

      test("a login over HTTP reaches the penalty, and the next ones escalate", async () => {
        await roomInWindow(60_000, 10_000);
        const app = await loginApp(limiter, policy.fixed(3, "1h", { penalty: "1s", escalate: "1m", name: "login" }));
        try {
          const key = "login:alice";
          await c.raw(["DEL", key]);
          assert.equal((await app.login("alice", RIGHT)).status, 200); // given back: only failures count
          for (let i = 0; i < 3; i++) assert.equal((await app.login("alice", "guess")).status, 401);
          let r = await app.login("alice", RIGHT); // the 4th attempt: denied, and the penalty starts
          assert.equal(r.status, 429);
          assert.deepEqual(await r.json(), { error: "too many failed logins" });
          assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
          assert.ok(Number(r.headers.get("retry-after")) >= 1);
          let p = await penaltyOf(c.raw, key);
          assert.equal(p.length, 1000);
          assert.equal((await app.login("alice", RIGHT)).status, 429); // during it: no new penalty
          assert.deepEqual(await penaltyOf(c.raw, key), { end: p.end, length: 1000, keep: p.end + 60_000 });
          assert.equal((await app.login("bob", "guess")).status, 401); // another account: none
          await waitPast(c.raw, p.end);
          // The failures still count in this window: the next attempt starts a penalty twice as
          // long, and the one after that twice as long again.
          for (const want of [2000, 4000]) {
            r = await app.login("alice", "guess");
            assert.equal(r.status, 429);
            assert.ok(r.headers.get("retry-after") !== null);
            p = await penaltyOf(c.raw, key);
            assert.equal(p.length, want);
            await waitPast(c.raw, p.end);
          }
        } finally {
          await app.close();
        }
      });

      test("the 429 of a login penalty says when it ends; a ban over HTTP, lifted", async () => {
        await roomInWindow(60_000, 10_000);
        const app = await loginApp(limiter, policy.fixed(3, "1m", { penalty: "2h", name: "login" }));
        try {
          await c.raw(["DEL", "login:alice"]);
          for (let i = 0; i < 3; i++) assert.equal((await app.login("alice", "guess")).status, 401);
          for (let i = 0; i < 2; i++) { // the attempt that starts it, then the right password during it
            const r = await app.login("alice", RIGHT);
            assert.equal(r.status, 429);
            assert.ok(["7200", "7201"].includes(r.headers.get("retry-after")), r.headers.get("retry-after"));
            assert.equal(r.headers.get("x-ratelimit-reset"), r.headers.get("retry-after"));
            assert.equal(r.headers.get("x-ratelimit-limit"), "3");
          }
          assert.equal(await limiter.ban("login:alice", 0), true); // lifted: the count stays (3 failures)
          assert.equal((await app.login("alice", RIGHT)).status, 429); // ... so the next attempt is denied again
          await c.raw(["DEL", "login:alice"]);
          assert.equal(await limiter.ban("login:alice", HOUR), false);
          const r = await app.login("alice", RIGHT);
          assert.ok(r.status === 429 && ["3600", "3601"].includes(r.headers.get("retry-after")));
          assert.equal(await limiter.ban("login:alice", 0), true);
          assert.equal((await app.login("alice", RIGHT)).status, 200);
        } finally {
          await app.close();
        }
      });

      test("the middleware answers a penalized layer 429, and the other layer spends nothing", async () => {
        await roomInWindow(60_000, 10_000);
        const prefix = `mw-${kind}`;
        const http = await serve(rateLimitLayers({
          limiter, prefix,
          layers: [{ name: "ip", identify: () => "203.0.113.7", policy: policy.fixed(100, "1m") },
            { name: "key", identify: header("x-client"), policy: policy.fixed(2, "1m", { penalty: "1h" }) }],
        }));
        try {
          for (let i = 0; i < 2; i++) assert.equal((await hit(http.url, "acme")).status, 200);
          for (let i = 0; i < 2; i++) { // the denial that starts it, then one during it
            const r = await hit(http.url, "acme");
            assert.equal(r.status, 429);
            assert.deepEqual(JSON.parse(r.body), { error: "rate limited", layer: "key" });
            assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
            const retry = Number(r.headers.get("retry-after"));
            assert.ok(retry >= 3599 && retry <= 3601, String(retry));
          }
          assert.equal((await hit(http.url, "globex")).status, 200); // another key: no penalty
          assert.equal((await penaltyOf(c.raw, `${prefix}:key:acme`)).length, HOUR);
          const ip = await limiter.peek(`${prefix}:ip:203.0.113.7`, policy.fixed(100, "1m"), { cost: 0 });
          assert.equal(ip.remaining, 97);
        } finally {
          await http.close();
        }
      });
    });
  }

  describe(`a named policy's penalty on ${server.label}`, () => {
    let c;
    let limiter;
    const lines = new Map();
    /** `define(name, ...definition)`: RL.POLICY SET on the module, the library written with
     * the policies defined so far without it. */
    const define = async (name, ...definition) => {
      if (server.withModule) return c.raw(["RL.POLICY", "SET", name, ...definition]);
      lines.set(name, [name, ...definition].join(" "));
      return c.raw(["FUNCTION", "LOAD", "REPLACE", libraryWithPolicies([...lines.values()])]);
    };
    before(async () => {
      server.reset();
      c = await CLIENTS["node-redis"](server.url);
      limiter = new Limiter(c.client, { denialCache: false }); // policies redefined between calls
    });
    after(async () => {
      if (server.withModule) for (const name of ["pen-login", "pen-shadow"]) await c.raw(["RL.POLICY", "DEL", name]);
      await c.close();
    });

    test("is used by its name, alone and in RL.ALL", async () => {
      await define("pen-login", "FIXED", "2", "1h", "PENALTY", "1h", "ESCALATE", "4h");
      for (let i = 0; i < 2; i++) assert.equal((await limiter.limit("n", "pen-login")).allowed, true);
      const d = await limiter.limit("n", "pen-login");
      assert.ok(!d.allowed && !d.shadowed && d.retryAfterMs >= HOUR && d.policyName === "pen-login");
      assert.equal((await penaltyOf(c.raw, "n")).length, HOUR);
      assert.equal((await limiter.peek("n", "pen-login")).allowed, false);
      const layers = [["{m}:a", "pen-login"], ["{m}:b", policy.fixed(5, "1h")]];
      for (let i = 0; i < 2; i++) assert.equal((await limiter.all(layers)).allowed, true);
      const all = await limiter.all(layers);
      assert.ok(!all.allowed && all.index === 0);
      assert.equal((await penaltyOf(c.raw, "{m}:a")).length, HOUR);
    });

    test("a SHADOW one's penalty is answered as shadowed denials", async () => {
      await define("pen-shadow", "FIXED", "1", "1h", "PENALTY", "1h", "SHADOW");
      assert.equal((await limiter.limit("s", "pen-shadow")).shadowed, false);
      for (let i = 0; i < 2; i++) { // the penalty's start, then a call during it
        const d = await limiter.limit("s", "pen-shadow");
        const after = await serverMs(c.raw);
        const { end } = await penaltyOf(c.raw, "s");
        // The wait runs to the penalty's end (however long the calls took under load).
        assert.ok(d.allowed && d.shadowed && d.retryAfterMs >= end - after, JSON.stringify(d));
      }
      assert.equal((await penaltyOf(c.raw, "s")).length, HOUR); // stored as if enforced
    });
  });
}
