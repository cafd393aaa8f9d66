import express from "express";
import { rateLimit } from "express-rate-limit";
import { createClient } from "redis";
import { RlStore } from "redis-rl"; // was: import { RedisStore } from "rate-limit-redis";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();

const app = express();
app.use(rateLimit({
  windowMs: 60 * 60 * 1000, // an hour (RlStore: windows aligned to the clock)
  limit: 3,
  standardHeaders: "draft-8",
  store: new RlStore({ sendCommand: (...args) => client.sendCommand(args) }), // was: new RedisStore({ ... })
}));
app.get("/", (_req, res) => res.send("hello"));

const server = app.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const url = `http://127.0.0.1:${server.address().port}/`;
const answers = [];
for (let i = 0; i < 4; i++) answers.push((await fetch(url)).status);
console.log(answers.join(" ")); // 200 200 200 429
server.close();
await client.close();
