// The module or the library, transparently: the library loaded where it is missing and again,
// once, after it vanished; a server swapped under the client followed; a library that cannot
// be loaded is an error; and clusters through node-redis and ioredis.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, test } from "node:test";

import Redis, { Cluster } from "ioredis";
import { createClient, createCluster } from "redis";
import { Limiter, policy } from "redis-rl";

import { Server, closeAll, startCluster } from "./servers.mjs";

const cli = (port, ...args) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout.trim();

test("the library is loaded where missing, and again after FUNCTION FLUSH", async () => {
  const s = await new Server("redis", false).start();
  const c = await createClient({ url: s.url }).connect();
  try {
    const limiter = new Limiter(c);
    assert.equal((await limiter.fixed("k", 3, "1h")).remaining, 2);
    assert.equal(limiter.backend, "library");
    assert.match(cli(s.port, "function", "list"), /rl/);
    cli(s.port, "function", "flush"); // the state stays, the code goes
    const d = await limiter.fixed("k", 3, "1h");
    assert.deepEqual([d.remaining, d.backend], [1, "library"]);
  } finally {
    await c.close();
    await s.close();
  }
});

test("a library that cannot be loaded is an error, and nothing is decided", async () => {
  const s = await new Server("redis", false).start();
  cli(s.port, "acl", "setuser", "noload", "on", ">pw", "~*", "+@all", "-function");
  const c = new Redis({ port: s.port, username: "noload", password: "pw" });
  try {
    await assert.rejects(new Limiter(c).fixed("k", 3, "1h"), /NOPERM/);
    assert.equal(cli(s.port, "dbsize"), "0");
  } finally {
    c.disconnect();
    await s.close();
  }
});

test("a failover to a server without the module moves to the library", async () => {
  const s = await new Server("redis", true).start();
  const c = new Redis({ port: s.port, maxRetriesPerRequest: 20 });
  try {
    const limiter = new Limiter(c);
    assert.equal((await limiter.sliding("k", 5, "1m")).backend, "module");
    s.withModule = false;
    await s.restart();
    const d = await limiter.sliding("k", 5, "1m");
    assert.deepEqual([d.allowed, d.remaining, d.backend], [true, 4, "library"]);
  } finally {
    c.disconnect();
    await s.close();
  }
});

for (const withModule of [true, false]) {
  const label = withModule ? "module" : "library";
  const nodes = await startCluster(withModule);
  after(() => closeAll(nodes));
  const keys = Array.from({ length: 30 }, (_, i) => `user:${i}`);

  const CLUSTER_CLIENTS = {
    "node-redis": async () => {
      const c = await createCluster({ rootNodes: [{ url: nodes[0].url }] }).connect();
      return { client: c, close: () => c.close() };
    },
    ioredis: async () => {
      // (a busy test machine can take over the default second to answer CLUSTER SLOTS)
      const c = new Cluster([{ host: "127.0.0.1", port: nodes[0].port }], { slotsRefreshTimeout: 5000 });
      return { client: c, close: () => c.disconnect() };
    },
  };
  for (const [kind, connect] of Object.entries(CLUSTER_CLIENTS)) {
    test(`a ${label} cluster through ${kind}: each key on its node, all with one hash tag`, async () => {
      for (const n of nodes) n.reset();
      const c = await connect();
      try {
        const limiter = new Limiter(c.client);
        for (const k of keys) assert.equal((await limiter.fixed(k, 2, "1h")).remaining, 1);
        assert.equal(limiter.backend, label);
        // Every master holds some of the states, and (library) the library.
        for (const n of nodes) {
          assert.ok(Number(cli(n.port, "dbsize")) > 0);
          if (!withModule) assert.match(cli(n.port, "function", "list"), /rl/);
        }
        for (const k of keys) assert.equal((await limiter.fixed(k, 2, "1h")).remaining, 0);
        const both = await limiter.all([["rl:{acme}:ip", policy.gcra(10, "1s", { burst: 5 })],
          ["rl:{acme}:plan", policy.fixed(3, "1m")]]);
        assert.deepEqual(both.layers.map((d) => d.remaining), [4, 2]);
        await assert.rejects(limiter.all([["{a}x", policy.fixed(3, "1m")], ["{b}y", policy.fixed(3, "1m")]]),
          /same slot|CROSSSLOT/);
      } finally {
        await c.close();
      }
    });
  }
}
