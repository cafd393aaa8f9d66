// Drives one framework store with the traffic scripts/bench.py measures (`make bench`,
// `scripts/bench.py --stores`): `--requests` hits over `--keys` keys (0: one hot key), 50 in
// flight, through ioredis, as the middleware would send them (express-rate-limit's
// `store.increment(key)`, rate-limiter-flexible's `limiter.consume(key)`). The server's time
// is read by bench.py around this run; this prints what the store answered, as JSON.
//
//   node scripts/bench-stores.mjs --port 6379 --store rl-store --requests 20000 --keys 10000
//
// Stores: rate-limit-redis, rl-store (RlStore), rate-limiter-redis (RateLimiterRedis),
// rate-limiter-rl (RateLimiterRl). The policy is bench.py's: 100 per hour.
import { parseArgs } from "node:util";

import Redis from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { RedisStore } from "rate-limit-redis";

import { RlStore } from "../dist/esm/index.js";
import { RateLimiterRl } from "../dist/esm/flexible.js";

const { values: a } = parseArgs({
  options: {
    port: { type: "string" }, store: { type: "string" }, requests: { type: "string", default: "20000" },
    keys: { type: "string", default: "10000" }, inflight: { type: "string", default: "50" },
  },
});
const requests = Number(a.requests), keys = Number(a.keys), inflight = Number(a.inflight);
const io = new Redis({ port: Number(a.port), host: "127.0.0.1" });
const sendCommand = (command, ...args) => io.call(command, ...args);
const LIMIT = 100, WINDOW_MS = 3_600_000;

/** One request for `key`: true if admitted. */
async function makeHit(store) {
  if (store === "rate-limit-redis" || store === "rl-store") {
    const s = store === "rl-store" ? new RlStore({ sendCommand }) : new RedisStore({ sendCommand });
    await s.init({ windowMs: WINDOW_MS, limit: LIMIT });
    return async (key) => (await s.increment(key)).totalHits <= LIMIT; // express-rate-limit's comparison
  }
  const o = { storeClient: io, points: LIMIT, duration: WINDOW_MS / 1000 };
  const limiter = store === "rl-flexible" || store === "rate-limiter-rl" ? new RateLimiterRl(o) : new RateLimiterRedis(o);
  return (key) => limiter.consume(key).then(() => true, (r) => {
    if (r instanceof Error) throw r;
    return false;
  });
}

const hit = await makeHit(a.store);
await hit("warm-up"); // scripts loaded, the backend known
let next = 0, admitted = 0;
const started = process.hrtime.bigint();
await Promise.all(Array.from({ length: inflight }, async () => {
  while (next < requests) {
    const i = next++;
    if (await hit(keys ? `k:${(i * 7919) % keys}` : "hot")) admitted++;
  }
}));
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
io.disconnect();
console.log(JSON.stringify({ store: a.store, requests, admitted, seconds }));
