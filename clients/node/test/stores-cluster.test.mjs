// RlStore and RateLimiterRl on three-master clusters, with the module and without it (the
// library): each key's state on its node; RateLimiterRl beside RateLimiterRedis on the same
// cluster, its blocks in the key itself, in RateLimiterRedis' format.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { RlStore } from "redis-rl";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible";

import { closeAll, startCluster } from "./servers.mjs";

for (const withModule of [true, false]) {
  const label = withModule ? "module" : "library";
  const nodes = await startCluster(withModule);
  after(() => closeAll(nodes));
  const keys = Array.from({ length: 20 }, (_, i) => `client-${i}`);

  test(`RlStore on a ${label} cluster, through node-redis' sendCommandCluster`, async () => {
    for (const n of nodes) n.reset();
    const cluster = await createCluster({ rootNodes: [{ url: nodes[0].url }] }).connect();
    try {
      const store = new RlStore({
        sendCommandCluster: ({ key, isReadOnly, command }) => cluster.sendCommand(key, isReadOnly, command),
      });
      store.init({ windowMs: 3_600_000, limit: 2 });
      for (const k of keys) assert.equal((await store.increment(k)).totalHits, 1);
      for (const k of keys) assert.equal((await store.increment(k)).totalHits, 2);
      for (const k of keys) assert.equal((await store.increment(k)).totalHits, 3); // over: denied, and counted
      for (const k of keys) await store.decrement(k);
      for (const k of keys) assert.equal((await store.get(k)).totalHits, 2);
    } finally {
      await cluster.close();
    }
  });

  test(`RateLimiterRl on a ${label} cluster, through ioredis, as RateLimiterRedis: blockOnConsumed, blocks`, async () => {
    for (const n of nodes) n.reset();
    const cluster = new Cluster([{ host: "127.0.0.1", port: nodes[0].port }], { slotsRefreshTimeout: 5000 });
    try {
      const o = { storeClient: cluster, points: 2, duration: 3600, blockOnConsumed: 4, blockDuration: 600 };
      const stock = new RateLimiterRedis({ ...o, keyPrefix: "stock" });
      const limiter = new RateLimiterRl({ ...o, keyPrefix: "ours" });
      const run = async (rl, k) => {
        const out = [];
        for (let i = 0; i < 4; i++) {
          out.push(await rl.consume(k).then((r) => ["resolved", r], (r) => {
            if (!(r instanceof RateLimiterRes)) throw r;
            return ["rejected", r];
          }));
        }
        return out;
      };
      for (const k of keys) {
        const [s, r] = [await run(stock, k), await run(limiter, k)];
        const view = ([how, res]) => [how, res.consumedPoints, res.remainingPoints];
        assert.deepEqual(r.map(view), s.map(view));
        assert.deepEqual(r.map(view), [["resolved", 1, 1], ["resolved", 2, 0], ["rejected", 3, 0], ["rejected", 4, 0]]);
        assert.ok(r[2][1].msBeforeNext <= 3_600_000 && r[2][1].msBeforeNext !== 600_000); // the window's end
        assert.equal(r[3][1].msBeforeNext, 600_000); // blocked for blockDuration
        assert.equal(await cluster.get(limiter.getKey(k)), "4");
      }
      await limiter.block("blocked", 60);
      assert.ok((await limiter.get("blocked")).msBeforeNext > 59_000);
      assert.equal(await limiter.delete("blocked"), true);
    } finally {
      cluster.disconnect();
    }
  });
}
