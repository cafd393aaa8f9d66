import express from "express";
import { RateLimiterRes } from "rate-limiter-flexible";
import { createClient } from "redis";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible"; // was: import { RateLimiterRedis } from "rate-limiter-flexible";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
// was: new RateLimiterRedis({ ... }), with the same options
const limiter = new RateLimiterRl({ storeClient: client, points: 3, duration: 3600, blockDuration: 600 });

const app = express();
app.use((req, res, next) => {
  limiter.consume(req.ip)
    .then(() => next())
    .catch((r) => {
      if (!(r instanceof RateLimiterRes)) return next(r); // the server failed: not a denial
      res.set("Retry-After", String(Math.ceil(r.msBeforeNext / 1000))).status(429).send("Too Many Requests");
    });
});
app.get("/", (_req, res) => res.send("hello"));

const server = app.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const url = `http://127.0.0.1:${server.address().port}/`;
const answers = [];
for (let i = 0; i < 4; i++) answers.push((await fetch(url)).status);
console.log(answers.join(" ")); // 200 200 200 429
const denied = await fetch(url);
console.log(denied.status, denied.headers.get("retry-after")); // 429 600
server.close();
await client.close();
