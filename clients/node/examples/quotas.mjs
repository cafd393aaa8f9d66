// Calendar quotas (RL.QUOTA): a plan's units per day, week or month, renewing at a local wall
// time in the customer's zone: "3 exports a month, renewing on the 15th at midnight in Paris".
import { createClient } from "redis";
import { Limiter, policy } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const limiter = new Limiter(client);

const plan = policy.quota(3, "MONTH", { tz: "Europe/Paris", anchor: "2026-01-15T00:00", name: "exports" });
const left = [];
for (let i = 0; i < 3; i++) left.push((await limiter.decide("rl:exports:org9", plan)).remaining);
console.log(left.join(" ")); // 2 1 0
const d = await limiter.decide("rl:exports:org9", plan);
// Denied until the renewal, the 15th at 00:00 in Paris: Retry-After and X-RateLimit-Reset.
console.log(d.allowed, d.retryAfterMs === d.resetAfterMs && d.resetAfterMs > 0); // false true
// RateLimit-Policy's w is the current period's length in whole days: 28 to 31 for a month.
const w = Number(d.ietfHeaders()["RateLimit-Policy"].split(";w=")[1]);
console.log([28, 29, 30, 31].map((days) => days * 86_400).includes(w)); // true
console.log(policy.quotaPeriodSeconds(["MONTH", 31], 1_772_233_200_000)); // 2419200

// A quota is a layer as any other: a daily quota beside a per-minute rate, in one RL.ALL.
const layers = [["rl:{org9}:minute", policy.slidingLog(10, "1m", { name: "minute" })],
  ["rl:{org9}:day", policy.quota(2, "day", { tz: "+05:30", name: "day" })]];
const allowed = [];
for (let i = 0; i < 3; i++) allowed.push((await limiter.all(layers)).allowed);
console.log(allowed.join(" ")); // true true false
console.log((await limiter.all(layers)).binding.policy.name); // day

// And a monthly token budget reserved at an estimate, settled at what was used.
const budget = policy.quota(10_000, "MONTH", { name: "budget" });
const { reservation } = await limiter.reserveAll([["rl:{org9}:month", budget]], 500);
console.log((await reservation.settle(420)).binding.remaining); // 9580
await client.close();
