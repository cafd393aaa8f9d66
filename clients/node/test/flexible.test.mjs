// RateLimiterRl, rate-limiter-flexible's limiter on the rl commands: RateLimiterRedis' own test
// cases (test/RateLimiterRedis.redis.test.js of animir/node-rate-limiter-flexible) where the
// semantics agree, then an Express 5 app with a rate-limiter-flexible middleware over HTTP on
// Redis 7.0 with and without the module and on Valkey 9.1: the limit, blocks, many clients at
// once, the same traffic through RateLimiterRedis, a restart of the server, and
// configurations refused at start-up.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, describe, test } from "node:test";

import Redis from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { createClient } from "redis";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible";

import { STORE_BACKENDS, burst, roomInWindow, serve, sleep, startStoreServers, statuses } from "./http.mjs";
import { Server, closeAll } from "./servers.mjs";

const servers = await startStoreServers();
after(() => closeAll(servers));

const cli = (port, ...args) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout.trim();
const rejection = async (promise) => {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("must not resolve");
};

/** The middleware one writes for rate-limiter-flexible: 429 with Retry-After when the
 * promise rejects with a RateLimiterRes, the error handler for anything else. */
const middleware = (limiter) => (req, res, next) => {
  limiter.consume(req.get("x-client"))
    .then((r) => {
      res.set("X-RateLimit-Remaining", String(r.remainingPoints));
      next();
    })
    .catch((r) => {
      if (!(r instanceof RateLimiterRes)) return next(r);
      res.set("Retry-After", String(Math.ceil(r.msBeforeNext / 1000))).status(429).send("Too Many Requests");
    });
};

// The backends run side by side (the cases wait for windows and blocks to pass), each one's
// cases one after another.
describe("RateLimiterRl", { concurrency: true }, () => {
for (const server of servers) {
  describe(`on ${server.label}`, { concurrency: false }, () => {
    let c;
    const client = async () => (c ??= await createClient({ url: server.url }).connect());
    after(() => c?.close());
    const make = async (o) => new RateLimiterRl({ storeClient: await client(), ...o });
    const closedClient = async () => {
      const closed = await createClient({ url: server.url }).connect();
      await closed.quit();
      return closed;
    };

    // --- RateLimiterRedis' cases -------------------------------------------------------
    test("consume 1 point", async () => {
      const rl = await make({ points: 2, duration: 5 });
      const res = await rl.consume("consume1");
      assert.ok(res instanceof RateLimiterRes);
      assert.deepEqual([res.consumedPoints, res.remainingPoints, res.isFirstInDuration], [1, 1, true]);
      assert.match(cli(server.port, "get", rl.getKey("consume1")), /^fixed:[0-9]+:1$/);
    });

    test("rejected when consume more than maximum points (also after points is changed)", async () => {
      const rl = await make({ points: 1, duration: 5 });
      const rej = await rejection(rl.consume("consume2", 2));
      assert.ok(rej instanceof RateLimiterRes && rej.msBeforeNext >= 0 && rej.remainingPoints === 0);
      rl.points = 3;
      assert.equal((await rl.consume("consume3", 2)).consumedPoints, 2);
      assert.ok((await rejection(rl.consume("consume2", 4))) instanceof RateLimiterRes);
    });

    test("execute evenly over duration, with a minimum delay", async () => {
      await roomInWindow(5000, 3000);
      const rl = await make({ points: 2, duration: 5, execEvenly: true });
      await rl.consume("evenly");
      const t = Date.now();
      const res = await rl.consume("evenly");
      // rate-limiter-flexible's spacing: ms left in the window / (remaining + 2).
      const waited = Date.now() - t;
      assert.ok(waited >= (res.msBeforeNext + waited) / 2 - 20, `${waited} ${res.msBeforeNext}`);
      const quick = await make({ points: 100, duration: 1, execEvenly: true, execEvenlyMinDelayMs: 20 });
      await quick.consume("evenly-min");
      const t2 = Date.now();
      await quick.consume("evenly-min");
      assert.ok(Date.now() - t2 >= 20);
    });

    test("makes penalty, rewards points", async () => {
      const rl = await make({ points: 3, duration: 5 });
      await rl.consume("penalty1");
      assert.equal((await rl.penalty("penalty1")).consumedPoints, 2);
      assert.equal((await rl.get("penalty1")).consumedPoints, 2);
      assert.equal((await rl.reward("penalty1")).consumedPoints, 1);
      assert.equal((await rl.get("penalty1")).consumedPoints, 1);
    });

    test("in-memory blocks: options, msBeforeNext, expiry", async () => {
      const rl = await make({ points: 1, duration: 5, inMemoryBlockOnConsumed: 2, inMemoryBlockDuration: 10 });
      await rl.consume("blockmem");
      const rej = await rejection(rl.consume("blockmem"));
      assert.ok(rej.msBeforeNext > 5000 && rej.remainingPoints === 0);
      cli(server.port, "del", rl.getKey("blockmem")); // the block is in this process, not the server
      assert.ok((await rejection(rl.consume("blockmem"))) instanceof RateLimiterRes);

      const own = await make({ points: 1, duration: 5, inMemoryBlockOnConsumed: 1 });
      await own.consume("blockmempoints"); // consumed 1 >= 1: blocked for msBeforeNext
      cli(server.port, "flushall");
      assert.ok((await rejection(own.consume("blockmempoints"))).msBeforeNext > 0);
      assert.ok((await rejection(own.consume("blockmempointsreject", 2))) instanceof RateLimiterRes);

      const brief = await make({ points: 1, duration: 1, inMemoryBlockOnConsumed: 2, inMemoryBlockDuration: 2 });
      await rejection(brief.consume("blockmem2", 2));
      await sleep(2001);
      const res = await brief.consume("blockmem2");
      assert.ok(res.msBeforeNext <= 1000 && res.remainingPoints === 0);

      assert.throws(() => new RateLimiterRl({ storeClient: c, points: 1, duration: 1, inMemoryBlockDuration: 2 }), Error);
      assert.throws(() => new RateLimiterRl({ storeClient: c, points: 2, duration: 1, inMemoryBlockOnConsumed: 1 }), Error);
    });

    test("a server error rejects with an Error, or goes to the insuranceLimiter", async () => {
      const closed = await closedClient();
      const alone = new RateLimiterRl({ storeClient: closed, points: 4, duration: 1 });
      const err = await rejection(alone.consume("rediserror"));
      assert.ok(err instanceof Error && !(err instanceof RateLimiterRes));
      await assert.rejects(alone.delete("deleteerr"));

      const insured = (points, duration) => new RateLimiterRl({ storeClient: closed, points: 1, duration: 1,
        insuranceLimiter: new RateLimiterRl({ storeClient: c, points, duration }) });
      const res = await insured(2, 2).consume("rediserror2");
      assert.ok(res.remainingPoints === 1 && res.msBeforeNext > 0 && res.msBeforeNext <= 2000);
      const viaCustom = await insured(2, 3).consume("rediserror2b", 1, { customDuration: 1 });
      assert.ok(viaCustom.remainingPoints === 1 && viaCustom.msBeforeNext <= 1000);
      const rl3 = insured(2, 2);
      await rl3.penalty("rediserror3");
      assert.equal((await rl3.insuranceLimiter.get("rediserror3")).consumedPoints, 1);
      const rl4 = insured(2, 2);
      await rl4.consume("rediserror4", 2);
      await rl4.reward("rediserror4");
      assert.equal((await rl4.insuranceLimiter.get("rediserror4")).consumedPoints, 1);
      const blocked = await insured(1, 1).block("rediserrorblock", 3);
      assert.ok(blocked.msBeforeNext > 2000 && blocked.msBeforeNext <= 3000);
    });

    test("blocks: blockDuration after a denial, its expiry, and block() of any key", async () => {
      const rl = await make({ points: 1, duration: 1, blockDuration: 2 });
      const rej = await rejection(rl.consume("block", 2));
      assert.ok(rej.msBeforeNext > 1000);
      const held = await rejection(rl.consume("block")); // blocked past the 1 s window
      assert.ok(held.msBeforeNext > 0 && held.msBeforeNext <= 2000);
      await sleep(2010);
      assert.equal((await rl.consume("block")).consumedPoints, 1);

      await rl.block("blockcustom", 2);
      assert.ok((await rejection(rl.consume("blockcustom"))).msBeforeNext > 1000);
      assert.equal((await rl.get("blockcustom")).consumedPoints, 2); // points + 1, as RateLimiterRedis
    });

    test("get points, get null for a key never used, delete", async () => {
      const rl = await make({ points: 2, duration: 1 });
      await rl.consume("get");
      assert.equal((await rl.get("get")).consumedPoints, 1);
      assert.equal(await rl.get("getnull"), null);
      assert.equal(await rl.delete("get"), true);
      assert.equal(await rl.delete("deletefalse"), false);
    });

    test("consume applies options.customDuration", async () => {
      const rl = await make({ points: 2, duration: 5 });
      assert.ok((await rl.consume("consume.customDuration", 1, { customDuration: 1 })).msBeforeNext <= 1000);
    });

    test("in-memory block with blockDuration on the store", async () => {
      const rl = await make({ points: 1, duration: 5, blockDuration: 10, inMemoryBlockOnConsumed: 2, inMemoryBlockDuration: 10 });
      await rl.consume("blockmem+blockduration");
      const rej = await rejection(rl.consume("blockmem+blockduration"));
      const got = await rl.get("blockmem+blockduration");
      assert.ok(got.msBeforeNext > 5000 && rej.remainingPoints === 0 && rej.msBeforeNext > 5000);
    });

    test("rejectIfRedisNotReady: a closed client is not called", async () => {
      const rl = new RateLimiterRl({ storeClient: await closedClient(), points: 2, duration: 1, rejectIfRedisNotReady: true });
      await assert.rejects(rl.get("k"), /Redis connection is not ready/);
    });

    test("keys: <keyPrefix>:{<key>} and its block key in one cluster slot", async () => {
      const rl = await make({ keyPrefix: "test", points: 4, duration: 1 });
      assert.equal(rl.getKey("key"), "test:{key}");
      await rl.block("key", 5);
      const slots = [rl.getKey("key"), `${rl.getKey("key")}:block`].map((k) => cli(server.port, "cluster", "keyslot", k));
      assert.equal(slots[0], slots[1]);
      assert.equal(cli(server.port, "exists", "test:{key}:block"), "1");
    });

    // --- Express over HTTP -------------------------------------------------------------
    test("Express: the limit, then 429 with Retry-After; a client over the limit is blocked past the window", async () => {
      await roomInWindow(2000, 1000);
      const rl = await make({ points: 3, duration: 2, blockDuration: 4, keyPrefix: `http${server.port}` });
      const app = await serve(middleware(rl));
      try {
        assert.deepEqual(await statuses(app.url, "a", 5), [200, 200, 200, 429, 429]);
        await sleep(2100); // the window is over; the block (4 s) is not
        assert.deepEqual(await statuses(app.url, "a", 1), [429]);
        assert.deepEqual(await statuses(app.url, "b", 1), [200]);
      } finally {
        await app.close();
      }
    });

    test("Express: 60 clients at once (two app instances, node-redis and ioredis), exactly the points admitted", async () => {
      const io = new Redis(server.url);
      const a = await serve(middleware(await make({ points: 10, duration: 86_400, keyPrefix: "crowd" })));
      const b = await serve(middleware(new RateLimiterRl({ storeClient: io, points: 10, duration: 86_400, keyPrefix: "crowd" })));
      try {
        assert.deepEqual(await burst([a.url, b.url], "crowd", 60), { 200: 10, 429: 50 });
      } finally {
        await Promise.all([a.close(), b.close()]);
        io.disconnect();
      }
    });

    test("Express: the same traffic through RateLimiterRedis gives the same answers", async () => {
      const o = { points: 3, duration: 86_400 };
      const ours = await serve(middleware(await make({ ...o, keyPrefix: "ours" })));
      const stock = await serve(middleware(new RateLimiterRedis({ storeClient: c, ...o, keyPrefix: "stock", useRedisPackage: true })));
      try {
        assert.deepEqual(await statuses(ours.url, "same", 6), await statuses(stock.url, "same", 6));
      } finally {
        await Promise.all([ours.close(), stock.close()]);
      }
    });

    test("configurations the commands cannot honour throw when the limiter is built", async () => {
      await client();
      for (const [o, message] of [
        [{ points: 5, duration: 1 }, /storeClient is not set/],
        [{ storeClient: c, points: 2.5, duration: 1 }, /points must be an integer from 1/],
        [{ storeClient: c, points: 0, duration: 1 }, /points must be an integer from 1/],
        [{ storeClient: c, points: 1e13, duration: 1 }, /points must be an integer from 1 to 1000000000000/],
        [{ storeClient: c, duration: 1 }, /points/],
        [{ storeClient: c, points: 5, duration: 0 }, /duration 0/],
        [{ storeClient: c, points: 5, duration: 3651 * 86_400 }, /duration/],
        [{ storeClient: c, points: 5, duration: 0.0005 }, /whole milliseconds/],
        [{ storeClient: c, points: 5, duration: 1, customIncrTtlLuaScript: "return 1" }, /customIncrTtlLuaScript/],
        [{ storeClient: {}, points: 5, duration: 1 }, /node-redis or ioredis/],
      ]) {
        assert.throws(() => new RateLimiterRl(o), message);
      }
      const rl = await make({ points: 5, duration: 1 });
      await assert.rejects(rl.consume("k", 1.5), /points to consume must be an integer/);
      await assert.rejects(rl.block("k", 0), /forever/);
      await assert.rejects(rl.set("k", 3), /set\(\)/);
    });
  });
}
});

test("Express: a restart of the server under the limiter keeps the points (AOF) and the service", async () => {
  for (const [flavor, withModule] of STORE_BACKENDS.slice(0, 2)) {
    const s = await new Server(flavor, withModule, ["--appendonly", "yes", "--appendfsync", "always"]).start();
    const io = new Redis({ port: s.port, maxRetriesPerRequest: 50, retryStrategy: () => 50 });
    const app = await serve(middleware(new RateLimiterRl({ storeClient: io, points: 4, duration: 86_400 })));
    try {
      assert.deepEqual(await statuses(app.url, "r", 2), [200, 200]);
      await s.restart();
      assert.deepEqual(await statuses(app.url, "r", 3), [200, 200, 429], s.label);
    } finally {
      await app.close();
      io.disconnect();
      await s.close();
    }
  }
});
