// RateLimiterRl (redis-rl/rate-limiter-flexible), rate-limiter-flexible's store on the rl
// commands: RateLimiterRedis' own test cases (test/RateLimiterRedis.redis.test.js of
// animir/node-rate-limiter-flexible), then the same calls through RateLimiterRl and the real
// RateLimiterRedis on the same server, compared; then an Express 5 app with a
// rate-limiter-flexible middleware over HTTP. On Redis 7.0 with and without the module and on
// Valkey 9.1.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, beforeEach, describe, test } from "node:test";

import Redis from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { createClient } from "redis";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible";

import { STORE_BACKENDS, burst, hit, roomInWindow, serve, sleep, startStoreServers, statuses, untilWindowEnd } from "./http.mjs";
import { Server, closeAll } from "./servers.mjs";

const require = createRequire(import.meta.url);
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
/** A call's outcome: { how: "resolved" | "rejected", res }; an Error is thrown. */
const settle = (promise) => promise.then((res) => ({ how: "resolved", res }), (res) => {
  if (!(res instanceof RateLimiterRes)) throw res;
  return { how: "rejected", res };
});
/** What RateLimiterRl answers exactly as RateLimiterRedis (msBeforeNext differs where it is
 * the window's end: aligned windows). */
const points = ({ how, res }) => (res === null ? [how, null] : [how, res.consumedPoints, res.remainingPoints, res.isFirstInDuration]);

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
    // Each case starts well inside a 5 s window and a 1 s one: the cases' consecutive calls
    // on fixed windows never straddle a boundary, however slow the machine.
    beforeEach(async () => {
      await roomInWindow(5000, 1500);
      await roomInWindow(1000, 400);
    });
    let c;
    const client = async () => (c ??= await createClient({ url: server.url }).connect());
    after(() => c?.close());
    const make = async (o) => new RateLimiterRl({ storeClient: await client(), ...o });
    let prefixes = 0;
    /** RateLimiterRedis and RateLimiterRl with the same options, each under its own prefix. */
    const pair = async (o) => {
      const p = `p${++prefixes}`;
      const both = { storeClient: await client(), useRedisPackage: true, ...o }; // ours ignores useRedisPackage
      return [new RateLimiterRedis({ ...both, keyPrefix: `stock-${p}` }), new RateLimiterRl({ ...both, keyPrefix: `ours-${p}` })];
    };
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

    test("rejected when consume more than maximum points (also after points is changed), or when points is 0", async () => {
      const rl = await make({ points: 1, duration: 5 });
      const rej = await rejection(rl.consume("consume2", 2));
      assert.ok(rej instanceof RateLimiterRes && rej.msBeforeNext >= 0 && rej.remainingPoints === 0);
      rl.points = 3;
      assert.equal((await rl.consume("consume3", 2)).consumedPoints, 2);
      assert.ok((await rejection(rl.consume("consume2", 4))) instanceof RateLimiterRes);
      const zero = await make({ points: 0, duration: 5 });
      assert.ok((await rejection(zero.consume("consumezero"))).msBeforeNext >= 0);
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

      assert.throws(() => new RateLimiterRl({ storeClient: c, points: 1, duration: 1, inMemoryBlockDuration: 2 }), /inMemoryBlockOnConsumed/);
      assert.throws(() => new RateLimiterRl({ storeClient: c, points: 2, duration: 1, inMemoryBlockOnConsumed: 1 }), /inMemoryBlockOnConsumed/);
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
      assert.equal((await rl.get("blockcustom")).consumedPoints, 3); // points + 1, and the consume counted
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
      await roomInWindow(5000, 2000); // both consumes in one fixed window
      await rl.consume("blockmem+blockduration");
      const rej = await rejection(rl.consume("blockmem+blockduration"));
      const got = await rl.get("blockmem+blockduration");
      assert.ok(got.msBeforeNext > 5000 && rej.remainingPoints === 0 && rej.msBeforeNext > 5000);
    });

    test("rejectIfRedisNotReady: a closed client is not called", async () => {
      const rl = new RateLimiterRl({ storeClient: await closedClient(), points: 2, duration: 1, rejectIfRedisNotReady: true });
      await assert.rejects(rl.get("k"), /Redis connection is not ready/);
      await assert.rejects(rl.consume("k"), /Redis connection is not ready/);
      await assert.rejects(rl.block("k", 1), /Redis connection is not ready/);
    });

    test("block key forever (secDuration 0), set points by key, for a duration and forever", async () => {
      const [stock, ours] = await pair({ points: 1, duration: 1 });
      const run = async (rl) => {
        await rl.block("neverexpire", 0);
        await rl.set("set", 12);
        await rl.set("setforever", 12, 0);
        const set = await rl.get("set");
        await sleep(1100);
        return [await rl.get("neverexpire"), set, await rl.get("set"), await rl.get("setforever")];
      };
      const [s, r] = await Promise.all([run(stock), run(ours)]);
      const seen = (res) => res && [res.consumedPoints, res.msBeforeNext === -1];
      assert.deepEqual(r.map(seen), [[2, true], [12, false], null, [12, true]]);
      assert.deepEqual(r.map(seen), s.map(seen));
    });

    test("a consume gives a block forever the window's expiry, as RateLimiterRedis; block durations are kept to the ms", async () => {
      const [stock, ours] = await pair({ points: 1, duration: 5 });
      const run = async (rl) => {
        await rl.block("forever", 0);
        const res = await rejection(rl.consume("forever"));
        await rl.block("brief", 150.5);
        await rl.block("briefer", 0.5);
        return [res.consumedPoints, res.msBeforeNext, ...["forever", "brief", "briefer"].map((k) => Number(cli(server.port, "pttl", rl.getKey(k))))];
      };
      const [s, r] = [await run(stock), await run(ours)];
      for (const [consumed, ms, pttl] of [s, r]) assert.ok(consumed === 3 && ms === 5000 && pttl > 4000 && pttl <= 5000, String([consumed, ms, pttl]));
      // Times far from a second's multiples, so that a slow machine cannot blur them.
      assert.ok(r[3] > 150000 && r[3] <= 150500, String(r[3])); // PX 150500
      assert.ok(s[3] > 140000 && s[3] <= 150000, String(s[3])); // RateLimiterRedis: EX 150
      assert.ok(r[4] > 0 && r[4] <= 500, String(r[4])); // PX 500
      assert.equal(s[4], -1); // RateLimiterRedis: under a second, no expiry
    });

    // --- The same calls through RateLimiterRedis ----------------------------------------
    test("consume, penalty, reward, get and delete count the points RateLimiterRedis counts", async () => {
      await roomInWindow(60_000, 3000);
      const [stock, ours] = await pair({ points: 4, duration: 60 });
      const run = async (rl) => [
        await settle(rl.consume("k")), await settle(rl.consume("k", "2")), await settle(rl.penalty("k", 2)),
        await settle(rl.get("k")), await settle(rl.reward("k")), await settle(rl.consume("k")),
        await settle(rl.get("k")), await rl.delete("k"), await settle(rl.get("k")),
      ];
      const [s, r] = [await run(stock), await run(ours)];
      const view = (x) => (typeof x === "boolean" ? x : points(x));
      assert.deepEqual(r.map(view), s.map(view));
      assert.deepEqual(r.map(view).slice(5, 7), [["rejected", 5, 0, false], ["resolved", 5, 0, false]]);
    });

    test("points 3, blockOnConsumed 5, blockDuration 10: the 4th consume is denied until the window's end, the 5th blocks for 10 s", async () => {
      await roomInWindow(60_000, 3000);
      const [stock, ours] = await pair({ points: 3, duration: 60, blockOnConsumed: 5, blockDuration: 10 });
      const run = async (rl) => {
        const out = [];
        for (let i = 0; i < 6; i++) out.push({ ...(await settle(rl.consume("k"))), stored: cli(server.port, "get", rl.getKey("k")) });
        return out;
      };
      const [s, r] = [await run(stock), await run(ours)];
      assert.deepEqual(r.map(points), s.map(points));
      assert.deepEqual(r.map((x) => x.how), ["resolved", "resolved", "resolved", "rejected", "rejected", "rejected"]);
      // The 4th: denied, not blocked: ours until the aligned window's end, stock's 59,999.
      assert.ok(s[3].res.msBeforeNext > 59_000, String(s[3].res.msBeforeNext));
      assert.ok(Math.abs(r[3].res.msBeforeNext - untilWindowEnd(60_000)) < 1000, String(r[3].res.msBeforeNext));
      assert.match(r[3].stored, /^fixed:[0-9]+:4$/);
      // The 5th: blocked for blockDuration, in stock's format; the 6th is counted in it.
      for (const x of [s, r]) {
        assert.equal(x[4].res.msBeforeNext, 10_000);
        assert.deepEqual([x[4].stored, x[5].stored], ["5", "6"]);
        assert.ok(x[5].res.msBeforeNext > 9000 && x[5].res.msBeforeNext <= 10_000);
      }
    });

    test('keys are <keyPrefix>:<key>, as RateLimiterRedis\': "", "}" and "{tag}" are keys like any other', async () => {
      const [stock, ours] = await pair({ points: 2, duration: 60 });
      for (const key of ["", "}", "{tag}", 42]) {
        const run = async (rl) => [await settle(rl.consume(key)), await settle(rl.consume(key)), await settle(rl.get(key))];
        assert.deepEqual((await run(ours)).map(points), (await run(stock)).map(points), JSON.stringify(key));
        assert.equal(ours.getKey(key), `${ours.keyPrefix}:${key}`);
        assert.match(cli(server.port, "get", ours.getKey(key)), /^fixed:[0-9]+:2$/);
      }
      assert.equal(new RateLimiterRl({ storeClient: c, points: 1, duration: 1 }).getKey("a"), "rlflx:a");
    });

    test("argument errors reject with a TypeError or RangeError while Redis is up, never the insuranceLimiter's decision", async () => {
      const insurance = new RateLimiterMemory({ points: 100, duration: 60 });
      const rl = await make({ points: 2, duration: 60, keyPrefix: "args", insuranceLimiter: insurance });
      for (const [call, error, message] of [
        [() => rl.consume("k", -1), RangeError, /points to consume/],
        [() => rl.consume("k", 1.5), RangeError, /points to consume/],
        [() => rl.consume("k", "1.5"), TypeError, /points to consume/],
        [() => rl.consume("k", 1e13), RangeError, /points to consume/],
        [() => rl.consume("k", 1, { customDuration: 0.0001 }), RangeError, /customDuration/],
        [() => rl.consume("k", 1, { customDuration: 0 }), RangeError, /customDuration/],
        [() => rl.consume("k", 1, { customDuration: -1 }), RangeError, /customDuration/],
        [() => rl.consume("k", 1, { customDuration: "5" }), TypeError, /customDuration/],
        [() => rl.consume(null), TypeError, /key/],
        [() => rl.consume(undefined), TypeError, /key/],
        [() => rl.consume({}), TypeError, /key/],
        [() => rl.penalty("k", -1), RangeError, /penalty points/],
        [() => rl.reward("k", 0.5), RangeError, /reward points/],
        [() => rl.get(null), TypeError, /key/],
        [() => rl.delete(undefined), TypeError, /key/],
        [() => rl.block("k", -1), RangeError, /block duration/],
        [() => rl.block("k", 0.0001), RangeError, /block duration/],
        [() => rl.set("k", -2, 10), RangeError, /points to set/],
        [() => rl.set("k", 2, -1), RangeError, /set duration/],
      ]) {
        await assert.rejects(call(), (err) => err instanceof error && message.test(err.message), String(call));
      }
      assert.equal(await insurance.get("k"), null);
      assert.equal(cli(server.port, "exists", "args:k"), "0");
      assert.equal((await rl.consume("k", "2")).consumedPoints, 2); // digits, as RateLimiterRedis takes them
    });

    test("RateLimiterRedis takes those arguments otherwise: a reward, the insuranceLimiter, no expiry, its duration", async () => {
      const insurance = new RateLimiterMemory({ points: 100, duration: 60 });
      const stock = new RateLimiterRedis({ storeClient: await client(), useRedisPackage: true, points: 2, duration: 60,
        keyPrefix: "stockargs", insuranceLimiter: insurance });
      assert.equal((await stock.consume("negative", -1)).consumedPoints, -1);
      await stock.consume("decimal", 1.5);
      assert.notEqual(await insurance.get("decimal"), null); // decided in memory, Redis up
      assert.equal(cli(server.port, "exists", "stockargs:decimal"), "0");
      await stock.consume("sub-second", 1, { customDuration: 0.0001 });
      assert.equal(cli(server.port, "pttl", "stockargs:sub-second"), "-1");
      assert.ok((await stock.consume("negative-duration", 1, { customDuration: -1 })).msBeforeNext > 59_000);
    });

    test("Redis down: the insuranceLimiter decides with the blockDuration it inherits, as RateLimiterRedis' (30,000 ms)", async () => {
      const closed = await closedClient();
      const o = { storeClient: closed, points: 1, duration: 60, blockDuration: 30, execEvenly: true };
      const run = async (rl) => [await settle(rl.consume("down")), await settle(rl.consume("down"))];
      const s = await run(new RateLimiterRedis({ ...o, useRedisPackage: true, insuranceLimiter: new RateLimiterMemory({ points: 1, duration: 60 }) }));
      const ours = new RateLimiterRl({ ...o, insuranceLimiter: new RateLimiterMemory({ points: 1, duration: 60 }) });
      const r = await run(ours);
      assert.deepEqual(r.map(points), s.map(points));
      assert.deepEqual([s[1].res.msBeforeNext, r[1].res.msBeforeNext], [30_000, 30_000]);
      assert.deepEqual([ours.insuranceLimiter.blockDuration, ours.insuranceLimiter.execEvenly], [30, true]);
    });

    test("consume(key, 0) answers the time left in the window, as RateLimiterRedis (60,000 on a fresh key)", async () => {
      await roomInWindow(60_000, 3000);
      const [stock, ours] = await pair({ points: 3, duration: 60 });
      const [s, r] = [await settle(stock.consume("zero", 0)), await settle(ours.consume("zero", 0))];
      assert.deepEqual(points(r), points(s));
      // RateLimiterRedis reads its new key's PTTL: 60,000, or 59,999 when a millisecond
      // turned between its SET and its PTTL.
      assert.ok(s.res.msBeforeNext >= 59_999 && s.res.msBeforeNext <= 60_000, String(s.res.msBeforeNext));
      assert.ok(r.res.msBeforeNext > 0 && Math.abs(r.res.msBeforeNext - untilWindowEnd(60_000)) < 1000, String(r.res.msBeforeNext));
      assert.equal(cli(server.port, "exists", ours.getKey("zero")), "0"); // it writes nothing
      assert.equal(await ours.get("zero"), null);
      assert.equal((await stock.get("zero")).consumedPoints, 0); // RateLimiterRedis created the key
      await ours.consume("zero", 2);
      assert.equal((await ours.consume("zero", 0)).consumedPoints, 2);
    });

    test("ioredis: a null or undefined key rejects with a TypeError, never one shared counter", async () => {
      const io = new Redis(server.url);
      try {
        const rl = new RateLimiterRl({ storeClient: io, points: 1, duration: 60, keyPrefix: "ionull" });
        await assert.rejects(rl.consume(null), TypeError);
        await assert.rejects(rl.consume(undefined), TypeError);
        assert.deepEqual(await io.keys("ionull*"), []);
        const stock = new RateLimiterRedis({ storeClient: io, points: 1, duration: 60, keyPrefix: "stocknull" });
        await stock.consume(null);
        await stock.consume(undefined);
        assert.deepEqual((await io.keys("stocknull*")).sort(), ["stocknull:null", "stocknull:undefined"]);
      } finally {
        io.disconnect();
      }
    });

    test("reward never takes a key below idle (RateLimiterRedis' count goes negative)", async () => {
      const [stock, ours] = await pair({ points: 2, duration: 60 });
      assert.deepEqual(points(await settle(stock.reward("r", 2))), ["resolved", -2, 4, true]);
      assert.deepEqual(points(await settle(ours.reward("r", 2))), ["resolved", 0, 2, false]);
      assert.equal(await ours.get("r"), null);
      assert.equal((await ours.consume("r", 2)).remainingPoints, 0);
    });

    test("the count stops at 10^12: a consume past it is denied and not counted", async () => {
      const rl = await make({ points: 1e12, duration: 60 });
      assert.equal((await rl.consume("top", 1e12)).remainingPoints, 0);
      const over = await rejection(rl.consume("top", 5));
      assert.deepEqual([over.consumedPoints, over.remainingPoints], [1e12 + 5, 0]);
      assert.equal((await rl.get("top")).consumedPoints, 1e12);
    });

    test("switching from RateLimiterRedis under live keys: its counters and blocks carry on, then RL.FIXED takes the key", async () => {
      const o = { points: 3, duration: 2, blockDuration: 60, keyPrefix: "live" };
      const stock = new RateLimiterRedis({ storeClient: await client(), useRedisPackage: true, ...o });
      const ours = await make(o);
      await stock.consume("counter", 2);
      await stock.consume("expiring");
      await stock.block("blocked", 60);
      const res = await ours.consume("counter");
      assert.ok(res.consumedPoints === 3 && res.msBeforeNext > 1000 && res.msBeforeNext <= 2000, String(res));
      const denied = await rejection(ours.consume("counter")); // over: blockDuration, as stock
      assert.deepEqual([denied.consumedPoints, denied.msBeforeNext], [4, 60_000]);
      assert.ok((await rejection(ours.consume("blocked"))).msBeforeNext > 59_000);
      assert.equal((await ours.get("blocked")).consumedPoints, 5);
      assert.equal((await ours.reward("blocked")).consumedPoints, 4); // INCRBY -1 there, as stock
      await sleep(2100);
      await roomInWindow(2000, 1500); // the window the key is written in outlasts the GET
      assert.equal((await ours.consume("expiring")).consumedPoints, 1);
      assert.match(cli(server.port, "get", "live:expiring"), /^fixed:[0-9]+:1$/);
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

    test("Express: blockOnConsumed as RateLimiterRedis: 429 from points + 1, Retry-After 10 from blockOnConsumed", async () => {
      await roomInWindow(60_000, 3000);
      const [stock, ours] = await pair({ points: 3, duration: 60, blockOnConsumed: 5, blockDuration: 10 });
      const apps = [await serve(middleware(stock)), await serve(middleware(ours))];
      try {
        const [s, r] = await Promise.all(apps.map(async (app) => {
          const out = [];
          for (let i = 0; i < 6; i++) out.push(await hit(app.url, "c"));
          return out.map((x) => [x.status, x.headers.get("retry-after")]);
        }));
        assert.deepEqual(r.map(([status]) => status), [200, 200, 200, 429, 429, 429]);
        assert.deepEqual(r.map(([status]) => status), s.map(([status]) => status));
        assert.deepEqual(r.slice(4), [[429, "10"], [429, "10"]]);
        assert.deepEqual(s.slice(4), r.slice(4));
        // The window's end: the seconds left when the 4th answered, rounded up, so no fewer
        // than are left now, and at most 1 more plus the (loaded machine's) time since.
        const left = untilWindowEnd(60_000) / 1000;
        assert.ok(Number(r[3][1]) >= left && Number(r[3][1]) <= left + 3, `${r[3][1]} against ${left}`);
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    test("Express with ioredis: a request without its key is a 500 with the error, not a shared counter", async () => {
      const io = new Redis(server.url);
      const app = await serve(middleware(new RateLimiterRl({ storeClient: io, points: 1, duration: 60, keyPrefix: "nokey" })));
      try {
        const r = await fetch(`${app.url}/`);
        assert.equal(r.status, 500);
        assert.match(await r.text(), /key must be a string or a number: undefined/);
        assert.deepEqual(await io.keys("nokey*"), []);
      } finally {
        await app.close();
        io.disconnect();
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
      const [stock, ours] = await pair({ points: 3, duration: 86_400 });
      const apps = [await serve(middleware(ours)), await serve(middleware(stock))];
      try {
        assert.deepEqual(await statuses(apps[0].url, "same", 6), await statuses(apps[1].url, "same", 6));
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    test("configurations the commands cannot honour throw when the limiter is built, naming the option", async () => {
      await client();
      for (const [o, message] of [
        [{ points: 5, duration: 1 }, /storeClient is not set/],
        [{ storeClient: null, points: 5, duration: 1 }, /storeClient is not set/],
        [{ storeClient: {}, points: 5, duration: 1 }, /storeClient: .*node-redis or ioredis/],
        [{ storeClient: c, duration: 1 }, /points/],
        [{ storeClient: c, points: 2.5, duration: 1 }, /points must be an integer/],
        [{ storeClient: c, points: 1e13, duration: 1 }, /points must be an integer up to 1000000000000/],
        [{ storeClient: c, points: 5, duration: 0 }, /duration 0/],
        [{ storeClient: c, points: 5, duration: 3651 * 86_400 }, /duration/],
        [{ storeClient: c, points: 5, duration: 0.0005 }, /duration must be seconds in whole milliseconds/],
        [{ storeClient: c, points: 5, duration: 1, blockDuration: 0.0005 }, /blockDuration/],
        [{ storeClient: c, points: 5, duration: 1, blockDuration: 3651 * 86_400 }, /blockDuration/],
        [{ storeClient: c, points: 5, duration: 1, blockOnConsumed: 4 }, /blockOnConsumed/],
        [{ storeClient: c, points: 5, duration: 1, customIncrTtlLuaScript: "return 1" }, /customIncrTtlLuaScript/],
        [{ storeClient: c, points: 5, duration: 1, useRedis3AndLowerPackage: true }, /useRedis3AndLowerPackage/],
      ]) {
        assert.throws(() => new RateLimiterRl(o), message);
      }
      const rl = await make({ points: 5, duration: 1 });
      rl.duration = 0; // assigned later: refused at the next call
      await assert.rejects(rl.consume("k"), /duration 0/);
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

test("redis-rl/rate-limiter-flexible loads in both builds; redis-rl loads without rate-limiter-flexible", () => {
  const cjs = require("redis-rl/rate-limiter-flexible");
  assert.notEqual(cjs.RateLimiterRl, RateLimiterRl);
  const limiter = new cjs.RateLimiterRl({ storeClient: () => Promise.resolve(null), points: 1, duration: 1 });
  // rate-limiter-flexible takes it where it takes its own limiters.
  assert.doesNotThrow(() => new RateLimiterMemory({ points: 1, duration: 1, insuranceLimiter: limiter }));
  assert.equal(require("redis-rl").RateLimiterRl, undefined);

  // The package alone (its files, no rate-limiter-flexible next to it).
  const pkg = join(dirname(require.resolve("redis-rl")), "../..");
  const dir = mkdtempSync(join(tmpdir(), "rl-no-flexible-"));
  try {
    for (const part of ["package.json", "dist"]) cpSync(join(pkg, part), join(dir, "node_modules/redis-rl", part), { recursive: true });
    const run = (code) => spawnSync(process.execPath, ["--input-type=module", "-e", code], { cwd: dir, encoding: "utf8" });
    const main = run('const m = await import("redis-rl"); console.log(typeof m.Limiter, typeof m.RlStore);');
    assert.equal(main.stdout.trim(), "function function", main.stderr);
    const sub = run('await import("redis-rl/rate-limiter-flexible");');
    assert.notEqual(sub.status, 0);
    assert.match(sub.stderr, /Cannot find package 'rate-limiter-flexible'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
