// The Limiter on every backend and through every kind of client: each method decides what
// the command itself decides (the raw command on a twin key, same history, is the
// reference), and reports the backend that answered.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createClient } from "redis";
import { Limiter, policy } from "redis-rl";

import { CLIENTS as BOTH_CLIENTS } from "./clients.mjs";
import { closeAll, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

/** The three ways to hand the limiter a client, with how to close each. */
const CLIENTS = {
  ...BOTH_CLIENTS,
  sendCommand: async (url) => {
    const c = await createClient({ url }).connect();
    const send = (args) => c.sendCommand(args);
    return { client: send, raw: send, close: () => c.close() };
  },
};

const tuple = (d) => [d.allowed ? 1 : 0, d.limit, d.remaining];

for (const server of servers) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`${server.label} through ${kind}`, () => {
      let c;
      const expected = server.withModule ? "module" : "library";
      before(async () => {
        server.reset();
        c = await connect(server.url);
      });
      after(() => c.close());

      const raw = (cmd, key, ...args) =>
        server.withModule ? c.raw([`RL.${cmd}`, key, ...args]) : c.raw(["FCALL", `rl_${cmd.toLowerCase()}`, "1", key, ...args]);

      const METHODS = [
        ["gcra", "GCRA", [10, "1s", { burst: 5, cost: 2 }], ["10", "1s", "BURST", "5"]],
        ["tokenBucket", "TOKENBUCKET", [5, 1, "1s", { cost: 2 }], ["5", "1", "1s"]],
        ["leaky", "LEAKY", [5, 1, "1s", { cost: 2 }], ["5", "1", "1s"]],
        ["sliding", "SLIDING", [5, "1m", { cost: 2 }], ["5", "1m"]],
        ["slidingLog", "SLIDINGLOG", [5, "1m", { cost: 2 }], ["5", "1m"]],
        ["fixed", "FIXED", [5, "1h", { cost: 2 }], ["5", "1h"]],
      ];
      for (const [method, cmd, args, words] of METHODS) {
        test(`${method} decides as ${cmd}`, async () => {
          const limiter = new Limiter(c.client);
          assert.equal(limiter.backend, undefined);
          const got = [];
          for (let i = 0; i < 4; i++) got.push(await limiter[method](`${kind}:${method}`, ...args));
          assert.equal(limiter.backend, expected);
          for (const g of got) {
            const w = (await raw(cmd, `${kind}:${method}:twin`, ...words, "COST", "2")).map(Number);
            assert.deepEqual(tuple(g), w.slice(0, 3));
            assert.ok(Math.abs(g.resetAfterMs - w[4]) < 1000);
            assert.equal(g.backend, expected);
          }
          assert.deepEqual(got.map((d) => d.allowed), [true, true, false, false]);
        });
      }

      test("peek, refund and all", async () => {
        const limiter = new Limiter(c.client);
        const bucket = policy.tokenBucket(100, 10, "1s");
        assert.equal((await limiter.decide(`${kind}:b`, bucket, { cost: 5 })).remaining, 95);
        assert.equal((await limiter.decide(`${kind}:b`, bucket, { cost: 3, peek: true })).remaining, 92);
        const peeked = await limiter.peek(`${kind}:b`, bucket, { cost: 3 });
        assert.deepEqual([peeked.allowed, peeked.remaining, peeked.backend], [true, 92, expected]);
        assert.equal((await limiter.refund(`${kind}:b`, bucket, 2)).remaining, 97);
        const layers = [
          [`{${kind}}:ip`, policy.gcra(100, "1m", { burst: 20, name: "ip" })],
          [`{${kind}}:export`, policy.fixed(2, "1h", { name: "export" })],
        ];
        assert.ok((await limiter.all(layers)).allowed);
        assert.ok((await limiter.all(layers)).allowed);
        const denied = await limiter.all(layers);
        assert.equal(denied.allowed, false);
        assert.equal(denied.index, 1);
        assert.equal(denied.binding.ietfHeaders()["RateLimit-Policy"], '"export";q=2;w=3600');
        assert.equal(denied.layers[0].remaining, 18); // the denial spent nothing
      });

      test("acquire and release", async () => {
        const limiter = new Limiter(c.client);
        assert.ok((await limiter.acquire(`${kind}:inflight`, 1, "30s", "a")).allowed);
        const denied = await limiter.acquire(`${kind}:inflight`, 1, "30s", "b");
        assert.equal(denied.allowed, false);
        assert.ok(denied.retryAfterMs > 29_000);
        assert.equal(await limiter.release(`${kind}:inflight`, "a"), true);
        assert.equal(await limiter.release(`${kind}:inflight`, "a"), false);
      });

      test("errors are the commands' own", async () => {
        const limiter = new Limiter(c.client);
        await assert.rejects(limiter.fixed(`${kind}:e`, 0, "1m"), /limit must be an integer/);
        assert.equal(limiter.backend, expected);
        await assert.rejects(limiter.fixed(`${kind}:e`, "5", "1m"), TypeError);
        await assert.rejects(limiter.all([]), RangeError);
      });

      test("a key that is not a string, or a cost that is not an integer, is refused before anything is sent", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.fixed(5, "1h");
        for (const bad of [null, undefined, 42, ["k"]]) {
          for (const call of [
            () => limiter.decide(bad, p), () => limiter.fixed(bad, 5, "1h"), () => limiter.gcra(bad, 5, "1s"),
            () => limiter.peek(bad, p), () => limiter.refund(bad, p, 1), () => limiter.all([[`${kind}:ok`, p], [bad, p]]),
            () => limiter.acquire(bad, 1, "30s", "a"), () => limiter.release(bad, "a"),
          ]) {
            await assert.rejects(call(), { name: "TypeError", message: /key must be a string/ });
          }
          await assert.rejects(limiter.acquire(`${kind}:lease`, 1, "30s", bad), /leaseId must be a string/);
        }
        for (const cost of [1.5, Number.NaN, Infinity, "2", null]) {
          await assert.rejects(limiter.decide(`${kind}:cost`, p, { cost }), { name: "TypeError", message: /cost is an integer/ });
          await assert.rejects(limiter.all([[`${kind}:cost`, p, cost]]), TypeError);
        }
        // Nothing was sent: none of the keys these would name (ioredis makes "" of null).
        const named = ["", "null", "undefined", "42", "k", `${kind}:ok`, `${kind}:lease`, `${kind}:cost`];
        assert.equal(Number(await c.raw(["EXISTS", ...named])), 0);
        assert.equal((await limiter.decide(`${kind}:cost`, p, { cost: 1.0 })).remaining, 4); // 1.0 is the integer 1
      });
    });
  }
}
