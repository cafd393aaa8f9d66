// Insurance: while Redis cannot decide, this process decides alone, its share of each policy
// (the policy divided by the processes sharing Redis), logged once at each switch.
import { createClient } from "redis";
import { Limiter, ServerUnavailableError, policy } from "redis-rl";

const search = policy.fixed(8, "1h", { name: "search" }); // 8 an hour, across 4 processes

// Off by default. With it, while Redis cannot decide, this process admits its share: 8 / 4.
const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const insured = new Limiter(client, { insurance: { nodes: 4 } });
console.log((await insured.decide("rl:search:bob", search)).insured); // false
await client.close();

// Redis out of reach (here a port nothing listens on; without the offline queue a call fails
// at once while the client reconnects): the process decides alone, 2 an hour for bob, then the
// same 429 answer. The two switches are logged with console.error and console.warn, or the
// `logger` given.
const down = createClient({ url: "redis://127.0.0.1:1", disableOfflineQueue: true, socket: { reconnectStrategy: () => 1000 } });
down.on("error", () => {});
down.connect().catch(() => {}); // connecting, again and again
const limiter = new Limiter(down, { insurance: { nodes: 4, logger: { error: () => {}, warn: () => {} } } });
const got = [];
for (let i = 0; i < 3; i++) got.push(await limiter.decide("rl:search:bob", search));
console.log(got.map((d) => d.allowed).join(" "), got.map((d) => d.insured).join(" ")); // true true false true true true
console.log(got[2].limit, got[2].remaining, got[2].retryAfter); // 2 0 3600
console.log(limiter.metrics.snapshot().search.insured_within_limit); // 2
console.log(limiter.metrics.snapshot().search.insured_over_limit); // 1

// A server policy's name has no parameters here: not insured, unavailable as before.
try {
  await limiter.limit("rl:search:bob", "free");
} catch (err) {
  console.log(err instanceof ServerUnavailableError); // true
}
down.destroy();
