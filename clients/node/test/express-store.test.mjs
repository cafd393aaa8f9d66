// RlStore, the express-rate-limit store: rate-limit-redis' own test cases (test/store-test.ts
// of express-rate-limit/rate-limit-redis) where the semantics agree, every hit counted and
// given back as rate-limit-redis does, then Express 5 with express-rate-limit 8 over HTTP on
// Redis 7.0 with and without the module and on Valkey 9.1: the limit, its headers, the skip
// options, many clients at once, the same traffic through rate-limit-redis (`used` included,
// and `limit: Infinity`, `windowMs: "60000"`), a switch from rate-limit-redis under live keys,
// a restart of the server, and configurations refused at start-up.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, describe, test } from "node:test";

import { rateLimit } from "express-rate-limit";
import Redis from "ioredis";
import { RedisStore } from "rate-limit-redis";
import { createClient } from "redis";
import { RlStore } from "redis-rl";

import { STORE_BACKENDS, burst, hit, roomInWindow, serve, sleep, startStoreServers, statuses } from "./http.mjs";
import { Server, closeAll } from "./servers.mjs";

const servers = await startStoreServers();
after(() => closeAll(servers));

const DAY = 86_400_000;
const cli = (port, ...args) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout.trim();
const quiet = { validate: false }; // (express-rate-limit's start-up advice, not under test)

for (const server of servers) {
  describe(`RlStore on ${server.label}`, { concurrency: false }, () => {
    let c;
    const sendCommand = (...args) => c.sendCommand(args);
    const open = async () => {
      c ??= await createClient({ url: server.url }).connect();
      return c;
    };
    after(() => c?.close());

    // --- rate-limit-redis' cases -------------------------------------------------------
    test("supports custom prefixes", async () => {
      await open();
      const store = new RlStore({ sendCommand, prefix: "test-" });
      store.init({ windowMs: 10_000 });
      await store.increment("store");
      // One key, prefix + key, expiring within the window (at the aligned window's end).
      const pttl = Number(cli(server.port, "pttl", "test-store"));
      assert.ok(pttl > 0 && pttl <= 10_000, String(pttl));
    });

    test("sets the value to 1 on first call to increment, and counts on", async () => {
      const store = new RlStore({ sendCommand });
      store.init({ windowMs: DAY, limit: 5 });
      assert.equal((await store.increment("first")).totalHits, 1);
      assert.equal((await store.increment("first")).totalHits, 2);
      assert.equal((await store.get("first")).totalHits, 2);
      assert.match(cli(server.port, "get", "rl:first"), /^fixed:[0-9]+:2$/);
    });

    test("decrement gives one hit back", async () => {
      const store = new RlStore({ sendCommand });
      store.init({ windowMs: DAY, limit: 5 });
      await store.increment("dec");
      await store.increment("dec");
      await store.decrement("dec");
      assert.equal((await store.increment("dec")).totalHits, 2);
    });

    test("every hit is counted and decrement gives back a counted one, as rate-limit-redis does", async () => {
      // Limit 3: five hits, two given back, one more (the sequence), on both stores.
      const run = async (store) => {
        store.init({ windowMs: DAY, limit: 3 });
        const hits = [];
        for (let i = 0; i < 5; i++) hits.push((await store.increment("count")).totalHits);
        await store.decrement("count");
        await store.decrement("count");
        hits.push((await store.increment("count")).totalHits);
        return hits;
      };
      const ours = await run(new RlStore({ sendCommand, prefix: "ours:" }));
      const stock = await run(new RedisStore({ sendCommand, prefix: "stock:" }));
      assert.deepEqual(ours, [1, 2, 3, 4, 5, 4]); // the last one still over the limit: denied
      assert.deepEqual(ours, stock);
      // More decrements than hits in a window: the count stops at 0 here, goes to -1 there.
      const credit = async (store) => {
        store.init({ windowMs: DAY, limit: 3 });
        await store.increment("credit");
        await store.decrement("credit");
        await store.decrement("credit");
        return (await store.increment("credit")).totalHits;
      };
      assert.equal(await credit(new RlStore({ sendCommand, prefix: "ours:" })), 1);
      assert.equal(await credit(new RedisStore({ sendCommand, prefix: "stock:" })), 0);
    });

    test("resetKey resets the count", async () => {
      const store = new RlStore({ sendCommand });
      store.init({ windowMs: DAY, limit: 5 });
      await store.increment("reset");
      await store.increment("reset");
      await store.resetKey("reset");
      assert.equal((await store.increment("reset")).totalHits, 1);
    });

    test("get fetches the count and a reset time", async () => {
      const store = new RlStore({ sendCommand });
      store.init({ windowMs: DAY, limit: 5 });
      await store.increment("get");
      await store.increment("get");
      const info = await store.get("get");
      assert.equal(info.totalHits, 2);
      assert.ok(info.resetTime instanceof Date && info.resetTime > new Date() && info.resetTime - Date.now() <= DAY);
      assert.equal((await store.get("never")).totalHits, 0);
    });

    test("the counts reset when the window is over, and a new window starts at 1", async () => {
      const store = new RlStore({ sendCommand });
      store.init({ windowMs: 50, limit: 5 });
      await store.increment("one");
      await store.increment("two");
      await sleep(110); // past the end of the (aligned) 50 ms window
      assert.equal(cli(server.port, "exists", "rl:one", "rl:two"), "0");
      assert.equal((await store.increment("one")).totalHits, 1);
    });

    test("sendCommand and sendCommandCluster are called with the store as this", async () => {
      class CustomStore extends RlStore {
        constructor() {
          super({
            sendCommand: async function (...args) {
              if (!(this instanceof CustomStore)) throw new TypeError("this is not the store");
              if (args.includes("REFUND")) throw new Error("no refunds here");
              return c.sendCommand(args);
            },
          });
        }
      }
      const store = new CustomStore();
      store.init({ windowMs: 60_000 });
      assert.equal((await store.increment("bind")).totalHits, 1);
      await assert.rejects(store.decrement("bind"), /no refunds here/);
      const seen = [];
      const cluster = new RlStore({
        sendCommandCluster: async function ({ key, isReadOnly, command }) {
          assert.ok(this instanceof RlStore);
          seen.push([key, isReadOnly]);
          return c.sendCommand(command);
        },
      });
      cluster.init({ windowMs: 60_000 });
      assert.equal((await cluster.increment("bind2")).totalHits, 1);
      assert.deepEqual(seen.at(-1), ["rl:bind2", false]);
    });

    // --- Express over HTTP -------------------------------------------------------------
    test("Express: the limit, the headers, then 429 with Retry-After", async () => {
      const store = new RlStore({ sendCommand });
      const app = await serve(rateLimit({ windowMs: DAY, limit: 3, standardHeaders: "draft-7", legacyHeaders: true,
        keyGenerator: (req) => req.get("x-client"), store, ...quiet }));
      try {
        const seen = [];
        for (let i = 0; i < 4; i++) seen.push(await hit(app.url, "http-a"));
        assert.deepEqual(seen.map((r) => r.status), [200, 200, 200, 429]);
        assert.deepEqual(seen.map((r) => r.headers.get("x-ratelimit-remaining")), ["2", "1", "0", "0"]);
        assert.match(seen[0].headers.get("ratelimit"), /^limit=3, remaining=2, reset=[0-9]+$/);
        const retry = Number(seen[3].headers.get("retry-after"));
        assert.ok(retry > 0 && retry <= DAY / 1000, String(retry));
        assert.equal((await hit(app.url, "http-b")).status, 200); // another client is apart
        assert.equal(store.backend, server.withModule ? "module" : "library");
      } finally {
        await app.close();
      }
    });

    test("Express: a limit per request (a function) and skipFailedRequests count every hit", async () => {
      const store = new RlStore({ sendCommand });
      const app = await serve(rateLimit({ windowMs: DAY, limit: (req) => (req.get("x-client") === "gold" ? 4 : 2),
        skipFailedRequests: true, keyGenerator: (req) => req.get("x-client"), store, ...quiet }));
      try {
        assert.deepEqual(await statuses(app.url, "gold", 5), [200, 200, 200, 200, 429]);
        assert.deepEqual(await statuses(app.url, "free", 3), [200, 200, 429]);
        // Failed requests give their hit back; so do the 429s (failed too): the door stays
        // shut after any number of them, and opens to nobody beyond the limit.
        assert.deepEqual(await statuses(app.url, "flaky", 3, "/fail"), [500, 500, 500]);
        await sleep(50); // (the decrements run after the responses)
        assert.deepEqual(await statuses(app.url, "flaky", 4), [200, 200, 429, 429]);
        await sleep(50);
        assert.deepEqual(await statuses(app.url, "flaky", 2), [429, 429]);
      } finally {
        await app.close();
      }
    });

    test("Express: 60 clients at once (two app instances, two connections), exactly the limit admitted", async () => {
      const other = await createClient({ url: server.url }).connect();
      const mk = (send) => rateLimit({ windowMs: DAY, limit: 10, keyGenerator: (req) => req.get("x-client"),
        store: new RlStore({ sendCommand: (...a) => send(a) }), ...quiet });
      const a = await serve(mk((x) => c.sendCommand(x)));
      const b = await serve(mk((x) => other.sendCommand(x)));
      try {
        assert.deepEqual(await burst([a.url, b.url], "crowd", 60), { 200: 10, 429: 50 });
      } finally {
        await Promise.all([a.close(), b.close()]);
        await other.close();
      }
    });

    test("Express: the same traffic through rate-limit-redis gives the same answers", async () => {
      const mk = (Store, prefix, skip) => rateLimit({ windowMs: DAY, limit: 3, skipSuccessfulRequests: skip,
        keyGenerator: (req) => req.get("x-client"), store: new Store({ sendCommand, prefix }), ...quiet });
      for (const skip of [false, true]) {
        const ours = await serve(mk(RlStore, `same${skip}:`, skip));
        const stock = await serve(mk(RedisStore, `stock${skip}:`, skip));
        try {
          const paths = ["/", "/fail", "/", "/", "/fail", "/", "/", "/"];
          const run = async (url) => {
            const out = [];
            for (const p of paths) {
              const r = await hit(url, "same", p);
              out.push(`${r.status}:${r.headers.get("x-ratelimit-remaining") ?? r.headers.get("ratelimit")}`);
              await sleep(skip ? 20 : 0);
            }
            return out;
          };
          assert.deepEqual(await run(ours.url), await run(stock.url));
        } finally {
          await Promise.all([ours.close(), stock.close()]);
        }
      }
    });

    test("Express: the same traffic through rate-limit-redis: req.rateLimit.used, limit Infinity, windowMs as text", async () => {
      const used = (req, res, next) => {
        res.set("x-used", String(req.rateLimit.used));
        next();
      };
      const handler = (req, res) => res.status(429).set("x-used", String(req.rateLimit.used)).send("limited");
      const configs = [
        { windowMs: DAY, limit: 3 }, // denied hits are counted: used grows past the limit
        { windowMs: DAY, limit: Infinity }, // unlimited, every hit counted
        { windowMs: "60000", limit: 2 }, // as express-rate-limit hands it over: text
        { windowMs: String(DAY), limit: 3, skipFailedRequests: true },
      ];
      for (const [i, config] of configs.entries()) {
        const mk = (Store, prefix) => [rateLimit({ ...config, keyGenerator: (req) => req.get("x-client"), handler,
          store: new Store({ sendCommand, prefix }), ...quiet }), used];
        await roomInWindow(60_000, 2_000); // (RlStore's 60 s windows are aligned to the clock)
        const ours = await serve(mk(RlStore, `ours${i}:`));
        const stock = await serve(mk(RedisStore, `stock${i}:`));
        try {
          const run = async (url) => {
            const out = [];
            for (const p of ["/", "/", "/fail", "/", "/", "/"]) {
              const r = await hit(url, "used", p);
              out.push(`${p} ${r.status} used ${r.headers.get("x-used")} remaining ${r.headers.get("x-ratelimit-remaining")}`);
              if (config.skipFailedRequests) await sleep(20); // (the decrements run after the responses)
            }
            return out;
          };
          const got = await run(ours.url);
          assert.deepEqual(got, await run(stock.url), JSON.stringify(config));
          assert.ok(got.every((a) => !a.startsWith("/ 500")), got.join(", ")); // (only /fail fails)
        } finally {
          await Promise.all([ours.close(), stock.close()]);
        }
      }
    });

    test("Express: switching from rate-limit-redis under live keys takes their counts over", async () => {
      const mk = (Store) => rateLimit({ windowMs: DAY, limit: 5, keyGenerator: (req) => req.get("x-client"),
        store: new Store({ sendCommand, prefix: "live:" }), ...quiet });
      const before = await serve(mk(RedisStore));
      assert.deepEqual(await statuses(before.url, "mover", 3), [200, 200, 200]);
      await before.close();
      assert.equal(cli(server.port, "get", "live:mover"), "3"); // rate-limit-redis' INCR counter
      const afterSwitch = await serve(mk(RlStore));
      try {
        // Concurrent first requests race to take the counter over: it is taken once.
        const first = await burst([afterSwitch.url], "mover", 2);
        assert.deepEqual(first, { 200: 2 });
        assert.deepEqual(await statuses(afterSwitch.url, "mover", 2), [429, 429]);
        assert.match(cli(server.port, "get", "live:mover"), /^fixed:[0-9]+:7$/); // 3 carried over, 4 hits since
      } finally {
        await afterSwitch.close();
      }
    });

    test("configurations the commands cannot honour fail at start-up, and requests fail closed", async () => {
      assert.throws(() => new RlStore({ prefix: "x:" }), /exactly one of sendCommand, sendCommandCluster or client/);
      assert.throws(() => new RlStore({ sendCommand, client: c }), /exactly one/);
      assert.throws(() => new RlStore({ sendCommand, resetExpiryOnChange: true }), /resetExpiryOnChange/);
      assert.throws(() => new RlStore({ sendCommand, perfix: "x:" }), /unknown option perfix/);
      assert.throws(() => new RlStore({ sendCommand, prefix: 5 }), /prefix must be a string/);
      const logged = [];
      const logger = { error: (e) => logged.push(String(e?.message ?? e)), warn: () => {}, info: () => {}, debug: () => {} };
      for (const [options, message] of [
        [{ windowMs: 3651 * DAY, limit: 5 }, /windowMs must be a whole number of milliseconds/],
        [{ windowMs: 1.5, limit: 5 }, /windowMs/],
        [{ windowMs: "1m", limit: 5 }, /windowMs must be a whole number of milliseconds/],
        [{ windowMs: "60000.5", limit: 5 }, /windowMs/],
      ]) {
        logged.length = 0;
        const store = new RlStore({ sendCommand });
        const app = await serve(rateLimit({ ...options, store, logger, keyGenerator: () => "k", ...quiet }));
        try {
          assert.match(logged.join("\n"), message); // logged when the app starts
          const r = await hit(app.url, "k");
          assert.equal(r.status, 500); // not an open door
          assert.match(r.body, message);
        } finally {
          await app.close();
        }
      }
      assert.throws(() => new RlStore({ sendCommand }).init({ windowMs: 0 }), /windowMs/);
      await assert.rejects(new RlStore({ sendCommand }).increment("k"), /init\(options\) was not called/);
    });

    test("a node-redis or ioredis client is taken as it is", async () => {
      const io = new Redis(server.url);
      try {
        for (const store of [new RlStore(c), new RlStore({ client: io, prefix: "io:" })]) {
          store.init({ windowMs: DAY, limit: 2 });
          assert.deepEqual([(await store.increment("x")).totalHits, (await store.increment("x")).totalHits,
            (await store.increment("x")).totalHits], [1, 2, 3]);
        }
      } finally {
        io.disconnect();
      }
    });
  });
}

test("Express: a restart of the server under the store keeps the counts (AOF) and the service", async () => {
  for (const [flavor, withModule] of STORE_BACKENDS.slice(0, 2)) {
    const s = await new Server(flavor, withModule, ["--appendonly", "yes", "--appendfsync", "always"]).start();
    const io = new Redis({ port: s.port, maxRetriesPerRequest: 50, retryStrategy: () => 50 });
    const app = await serve(rateLimit({ windowMs: DAY, limit: 4, keyGenerator: (req) => req.get("x-client"),
      store: new RlStore({ sendCommand: (cmd, ...args) => io.call(cmd, ...args) }), ...quiet }));
    try {
      assert.deepEqual(await statuses(app.url, "r", 2), [200, 200]);
      await s.restart(); // SIGKILL, then the same port and files
      assert.deepEqual(await statuses(app.url, "r", 3), [200, 200, 429], s.label);
    } finally {
      await app.close();
      io.disconnect();
      await s.close();
    }
  }
});
