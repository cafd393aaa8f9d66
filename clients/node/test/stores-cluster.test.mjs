// RlStore and RateLimiterRl on three-master clusters, with the module and without it (the
// library): each key's state on its node, the block key in its key's slot.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { Cluster } from "ioredis";
import { createCluster } from "redis";
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
      for (const k of keys) assert.equal((await store.increment(k)).totalHits, 3); // over: denied
      for (const k of keys) assert.equal((await store.get(k)).totalHits, 2); // the denial wrote nothing
    } finally {
      await cluster.close();
    }
  });

  test(`RateLimiterRl on a ${label} cluster, through ioredis`, async () => {
    for (const n of nodes) n.reset();
    const cluster = new Cluster([{ host: "127.0.0.1", port: nodes[0].port }], { slotsRefreshTimeout: 5000 });
    try {
      const limiter = new RateLimiterRl({ storeClient: cluster, points: 2, duration: 3600, blockDuration: 600 });
      for (const k of keys) assert.equal((await limiter.consume(k)).remainingPoints, 1);
      for (const k of keys) assert.equal((await limiter.consume(k)).remainingPoints, 0);
      for (const k of keys) {
        const res = await limiter.consume(k).then(() => assert.fail("admitted over the limit"), (r) => r);
        assert.equal(res.remainingPoints, 0);
        assert.ok(res.msBeforeNext > 590_000); // blocked for blockDuration
      }
    } finally {
      cluster.disconnect();
    }
  });
}
