// The Express layers on Redis Cluster. The keys of one RL.ALL must share a slot, so each
// middleware names the layer whose identity is every key's hash tag: here the client's
// address, which the client cannot choose. That layer counts every request of the address;
// the middleware's other layers count per address. A limit that counts an API key over all
// its addresses is a second middleware, tagged by that layer.
// Run: REDIS_URL=redis://127.0.0.1:7000 PORT=8000 node express_cluster.mjs
import express from "express";
import { createCluster } from "redis";
import { Limiter, clientIp, header, path, policy, rateLimitLayers } from "redis-rl";

const PLANS = new Map([["free-key", 60], ["pro-key", 600]]); // requests per minute, by API key
const ENDPOINTS = new Map([["/search", 10], ["/export", 5]]); // per minute and client address
const apiKey = header("x-api-key");

const cluster = createCluster({ rootNodes: [{ url: process.env.REDIS_URL ?? "redis://127.0.0.1:7000" }] });
cluster.on("error", (err) => console.error("redis:", err.message));
await cluster.connect();
const limiter = new Limiter(cluster);

const app = express();
app.set("trust proxy", "loopback"); // req.ip: X-Forwarded-For's client, from a proxy on this host
app.use(rateLimitLayers({ // keys rl:{203.0.113.7}:ip:203.0.113.7, rl:{203.0.113.7}:endpoint:/export
  limiter,
  tag: "ip",
  layers: [
    { name: "ip", identify: clientIp, policy: policy.gcra(100, "1s", { burst: 20 }) },
    { name: "endpoint", identify: path, policy: (req) => {
      const quota = ENDPOINTS.get(req.path); // (known endpoints only: others name no key)
      return quota ? policy.fixed(quota, "1m") : undefined;
    } },
  ],
}));
app.use(rateLimitLayers({ // key rl:{free-key}:plan:free-key, whatever the address
  limiter,
  tag: "plan",
  layers: [
    { name: "plan", identify: (req) => (PLANS.has(apiKey(req)) ? apiKey(req) : undefined), policy: (req) => {
      const quota = PLANS.get(apiKey(req));
      return policy.tokenBucket(quota, quota, "1m");
    } },
  ],
}));
app.get("/hello", (_req, res) => res.json({ message: "hello" }));
app.get("/export", (_req, res) => res.json({ export: "ok" }));

const server = app.listen(Number(process.env.PORT ?? 8000), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => cluster.close()));
