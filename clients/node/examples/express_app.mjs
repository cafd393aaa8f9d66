// An Express service limited by the seed's three layers, with ONE RL.ALL per request: per
// client IP (GCRA, 100 per second, bursts of 20; an IPv6 client by its /56), per API key (a
// token bucket sized by the key's plan) and per expensive endpoint and API key (fixed
// windows). A request denied by one layer spends nothing from the others. A client denied is
// then denied from the limiter's denial cache, without a call to Redis, until its
// Retry-After ends; /metrics counts the decisions.
// Run: REDIS_URL=redis://127.0.0.1:6379 PORT=8000 node express_app.mjs
import express from "express";
import { createClient } from "redis";
import { DenialCache, Limiter, clientIp, header, policy, rateLimitLayers } from "redis-rl";

// Maps, not objects: a client's text ("constructor") never finds an inherited property.
const PLANS = new Map([["free-key", 60], ["pro-key", 600]]); // requests per minute, by API key
const ENDPOINTS = new Map([["/search", 10], ["/export", 5]]); // per minute and API key
const apiKey = header("x-api-key");

const client = createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" });
client.on("error", (err) => console.error("redis:", err.message)); // node-redis reconnects by itself
await client.connect();
// The denial cache is on by default; its bound is the most identities it holds at once.
const limiter = new Limiter(client, { denialCache: new DenialCache({ maxEntries: 10_000 }) });
const app = express();
app.set("trust proxy", "loopback"); // req.ip: X-Forwarded-For's client, from a proxy on this host
app.use(rateLimitLayers({
  limiter,
  layers: [
    { name: "ip", identify: clientIp, policy: policy.gcra(100, "1s", { burst: 20 }) },
    { name: "plan", identify: apiKey, policy: (req) => {
      const quota = PLANS.get(apiKey(req));
      return quota ? policy.tokenBucket(quota, quota, "1m") : undefined;
    } },
    // (known keys only: no key name is text a client chose)
    { name: "endpoint", identify: (req) => (PLANS.has(apiKey(req)) ? `${apiKey(req)}:${req.path}` : undefined), policy: (req) => {
      const quota = ENDPOINTS.get(req.path);
      return quota ? policy.fixed(quota, "1m") : undefined;
    } },
  ],
}));
app.get("/hello", (_req, res) => res.json({ message: "hello" }));
app.get("/export", (_req, res) => res.json({ export: "ok" }));
// Prometheus: rl_decisions_total{layer,result}; behind the layers too
app.get("/metrics", (_req, res) => res.type("text/plain; version=0.0.4").send(limiter.metrics.prometheus()));

const server = app.listen(Number(process.env.PORT ?? 8000), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => client.close()));
