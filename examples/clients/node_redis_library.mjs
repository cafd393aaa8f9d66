import { readFile } from "node:fs/promises";
import { createClient } from "redis";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const source = await readFile(process.env.RL_LIBRARY ?? "functions/rl.lua", "utf8");
await client.functionLoad(source, { REPLACE: true }); // once per deploy: it persists and replicates
const [allowed, limit, remaining, retryAfterMs, resetAfterMs] = await client.fCall("rl_gcra", {
  keys: ["user:43"],
  arguments: ["10", "1s", "BURST", "5"],
});
console.log(allowed, limit, remaining, retryAfterMs, resetAfterMs); // 1 5 4 0 100
await client.close();
