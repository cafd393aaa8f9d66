import { createClient } from "redis";
import { Limiter } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const limiter = new Limiter(client); // node-redis or ioredis, a cluster, or a sendCommand function

const d = await limiter.gcra("user:42", 10, "1s", { burst: 5 }); // 10 per second, bursts of 5
console.log(d.allowed, d.limit, d.remaining, d.retryAfterMs, d.resetAfterMs); // true 5 4 0 100
const headers = d.allHeaders("api"); // X-RateLimit-*, RateLimit-Policy, RateLimit (+ Retry-After)
console.log(headers["X-RateLimit-Remaining"], headers["X-RateLimit-Reset"]); // 4 1
console.log(headers["RateLimit-Policy"]); // "api";q=10;w=1
console.log(headers["RateLimit"]); // "api";r=4;t=1
await client.close();
