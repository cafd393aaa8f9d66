// Limits defined on the server by name, and called by name: an administrator defines them
// once (RL.POLICY SET, or the module's policy file), every service names them.
// Needs the rl module, for RL.POLICY SET: without it, the policies are written into the
// Functions library (docs/managed-redis.md, "Named policies") and called by name the same way.
import { createClient } from "redis";
import { ConfigurationError, Limiter, policy } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
// The administrator's part (RL.POLICY SET is an admin command):
await client.sendCommand(["RL.POLICY", "SET", "free", "GCRA", "10", "1m", "BURST", "5"]);
await client.sendCommand(["RL.POLICY", "SET", "trial", "FIXED", "1", "1h", "SHADOW"]);

const limiter = new Limiter(client);
const d = await limiter.limit("user:21", "free", { cost: 2 }); // RL.LIMIT user:21 free COST 2
console.log(d.allowed, d.limit, d.remaining, d.policyName); // true 5 3 free
const headers = d.allHeaders(); // the client knows the name, not the window: no w
console.log(headers["RateLimit-Policy"], headers["RateLimit"]); // "free";q=5 "free";r=3;t=12
const peeked = await limiter.peek("user:21", "free", { cost: 3 }); // RL.PEEK POLICY user:21 free COST 3
console.log(peeked.allowed, peeked.remaining); // true 0

// A SHADOW policy answers a would-be denial as admitted, and says so.
await limiter.limit("user:22", "trial");
const rehearsed = await limiter.limit("user:22", "trial");
console.log(rehearsed.allowed, rehearsed.shadowed, rehearsed.retryAfterMs > 0); // true true true

// Named and spelt-out layers in one RL.ALL (keys of one hash tag, for a cluster).
const all = await limiter.all([["{user:23}:ip", policy.fixed(100, "1h")], ["{user:23}:plan", "free"]]);
console.log(all.allowed, all.layers.map((l) => l.remaining).join(" ")); // true 99 4

try {
  await limiter.limit("user:21", "gold");
} catch (err) {
  console.log(err instanceof ConfigurationError, err.message); // true ERR no such policy 'gold'
}
try {
  await limiter.limit("user:21", "no spaces"); // refused before anything is sent
} catch (err) {
  console.log(err.name, err instanceof ConfigurationError); // RangeError true
}
await client.close();
