// The denial cache: once Redis denies a key under a policy, its calls are denied in this
// process, the same decision, without a call, until its Retry-After ends; every decision
// counted.
import { createClient } from "redis";
import { DenialCache, Limiter, policy } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
// On by default (new DenialCache() of 10,000 entries); { denialCache: false } turns it off.
const limiter = new Limiter(client, { denialCache: new DenialCache({ maxEntries: 1_000 }) });
const search = policy.fixed(2, "1h", { name: "search" });

const three = [];
for (let i = 0; i < 3; i++) three.push((await limiter.decide("rl:search:bob", search)).allowed);
console.log(three.join(" ")); // true true false
// The server denied bob until the hour ends: until then his calls are denied here.
const d = await limiter.decide("rl:search:bob", search);
console.log(d.allowed, d.cached, d.remaining, d.retryAfter > 0); // false true 0 true
console.log((await limiter.decide("rl:search:alice", search)).allowed); // true

// Every decision counted, per layer (the policy's name) and result.
console.log(limiter.metrics.snapshot().search.over_limit_with_local_cache); // 1
console.log(limiter.metrics.snapshot().search.within_limit); // 3
console.log(limiter.metrics.prometheus().split("\n")[2]); // rl_decisions_total{layer="search",result="within_limit"} 3
await client.close();
