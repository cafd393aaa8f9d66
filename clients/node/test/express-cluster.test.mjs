// The Express middleware on three-master clusters, with the module and without it (the
// library): examples/express_cluster.mjs over HTTP (the IP layer as the tag, a second
// middleware per API key), and tag identities that would break a hash tag unescaped.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { createCluster } from "redis";
import { Limiter, clientIp, header, policy, rateLimitLayers } from "redis-rl";

import { from, roomInWindow, serve, startExample } from "./http.mjs";
import { closeAll, startCluster } from "./servers.mjs";

for (const withModule of [true, false]) {
  const label = withModule ? "module" : "library";
  const nodes = await startCluster(withModule);
  after(() => closeAll(nodes));
  const connect = () => createCluster({ rootNodes: [{ url: nodes[0].url }] }).connect();

  test(`examples/express_cluster.mjs on a ${label} cluster`, async () => {
    for (const n of nodes) n.reset();
    const app = await startExample("express_cluster.mjs", nodes[0].url);
    const cluster = await connect();
    try {
      await roomInWindow(60_000, 10_000); // (one fixed minute for the endpoint layer)
      const as = (address, key, path = "/export") => app.get(path, { "x-forwarded-for": address, "x-api-key": key });
      const codes = [];
      for (let i = 0; i < 6; i++) codes.push((await as("203.0.113.7", "free-key")).status);
      assert.deepEqual(codes, [200, 200, 200, 200, 200, 429]); // the endpoint layer, per address
      const denied = await as("203.0.113.7", "pro-key");
      assert.equal(denied.status, 429); // whatever key the address sends
      assert.deepEqual(await denied.json(), { error: "rate limited", layer: "endpoint" });
      const other = await as("203.0.113.8", "free-key"); // another address: its own endpoint counter
      assert.equal(other.status, 200);
      const plan = await as("203.0.113.9", "free-key", "/hello");
      assert.equal(plan.status, 200);
      // The plan counts the key over every address: 6, then 7 spent (less what refilled
      // meanwhile, 1 a second), where per address it would be 1. Its 53 or so left are more
      // than the IP layer's 19, so the response carries the IP layer's headers.
      const planLeft = await new Limiter(cluster).peek("rl:{free-key}:plan:free-key",
        policy.tokenBucket(60, 60, "1m"), { cost: 0 });
      assert.ok(planLeft.remaining <= 57, `${planLeft.remaining}`);
      assert.equal(plan.headers.get("ratelimit-policy"), '"ip";q=100;w=1');
      assert.equal(plan.headers.get("x-ratelimit-remaining"), "19");
      // Both middlewares admitted `other`: its headers are the decision with fewer remaining,
      // the endpoint's 4 (the outer middleware's), not the plan's.
      assert.equal(other.headers.get("ratelimit-policy"), '"endpoint";q=5;w=60');
      assert.equal(other.headers.get("x-ratelimit-remaining"), "4");
      for (const key of ["rl:{203.0.113.7}:endpoint:/export", "rl:{203.0.113.8}:endpoint:/export",
        "rl:{free-key}:plan:free-key"]) {
        assert.equal(await cluster.exists(key), 1, key);
      }
      assert.equal(await cluster.exists("rl:{pro-key}:plan:pro-key"), 0); // its request was denied first
    } finally {
      await app.stop();
      await cluster.close();
    }
  });

  test(`tag identities with braces and percents on a ${label} cluster: one slot per request`, async () => {
    for (const n of nodes) n.reset();
    const cluster = await connect();
    const mw = rateLimitLayers({
      limiter: new Limiter(cluster),
      tag: "key",
      layers: [
        { name: "key", identify: header("x-api-key"), policy: policy.fixed(2, "1h") },
        // An hour per unit: the keys checked below outlive a slow machine.
        { name: "ip", identify: clientIp, policy: policy.gcra(100, "100h", { burst: 50 }) },
      ],
    });
    const app = await serve(mw, { trustProxy: "loopback" });
    try {
      // Unescaped, "}" would make `{}`, no hash tag at all, and each key its own slot.
      const identities = ["}", "}x", "{", "{}", "%", "%7D", "a}b", "a"];
      for (const id of identities) {
        const codes = [];
        for (let i = 0; i < 3; i++) codes.push((await from(app.url, "198.51.100.1", { "x-api-key": id })).status);
        assert.deepEqual(codes, [200, 200, 429], id); // each its own counter: no two escape alike
      }
      assert.equal((await from(app.url, "198.51.100.1")).status, 200); // no key: under {%none}
      assert.equal(await cluster.exists("rl:{%none}:ip:198.51.100.1"), 1);
      assert.equal(await cluster.exists("rl:{%7D}:key:}"), 1);
      assert.equal(await cluster.exists("rl:{%257D}:key:%7D"), 1);
    } finally {
      await app.close();
      await cluster.close();
    }
  });
}
