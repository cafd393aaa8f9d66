import { createClient } from "redis";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const [allowed, limit, remaining, retryAfterMs, resetAfterMs] = await client.sendCommand(
  ["RL.GCRA", "user:42", "10", "1s", "BURST", "5"]);
console.log(allowed, limit, remaining, retryAfterMs, resetAfterMs); // 1 5 4 0 100
await client.close();
