// Express layers naming the server's policies, rehearsed: with `shadow: true` the middleware
// decides as usual and sets the headers, but lets a would-be denial through (nothing spent)
// and reports it to onShadowDenied (by default one console.warn line per request).
// Needs the rl module, for RL.POLICY SET (the Functions library has its policies written in).
import express from "express";
import { createClient } from "redis";
import { Limiter, header, rateLimitLayers } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
await client.sendCommand(["RL.POLICY", "SET", "web", "FIXED", "2", "1h"]); // the administrator's, once

const denials = [];
const app = express();
app.use(rateLimitLayers({
  limiter: new Limiter(client),
  layers: [{ name: "client", identify: header("x-client"), policy: "web" }], // the server's policy "web"
  shadow: true,
  onShadowDenied: ({ layer, key, decision }, _req) => denials.push(`${layer} ${key} ${decision.retryAfterMs > 0}`),
}));
app.get("/", (_req, res) => res.send("hello"));

const server = app.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const url = `http://127.0.0.1:${server.address().port}/`;
const answers = [];
for (let i = 0; i < 3; i++) answers.push(await fetch(url, { headers: { "x-client": "acme" } }));
console.log(answers.map((r) => r.status).join(" ")); // 200 200 200
const last = answers[2].headers;
console.log(last.get("ratelimit-policy"), last.get("x-ratelimit-remaining"), last.get("retry-after")); // "web";q=2 0 null
console.log(denials.join(", ")); // client rl:client:acme true
server.close();
await client.close();
