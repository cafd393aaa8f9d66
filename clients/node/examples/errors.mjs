import Redis from "ioredis";
import { createClient } from "redis";
import { ConfigurationError, ForeignKeyError, Limiter, RlError, ServerUnavailableError } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const limiter = new Limiter(client);

try {
  await limiter.fixed("plan:free", 0, "1m"); // a limit of 0: the server refuses it
} catch (err) {
  if (!(err instanceof ConfigurationError)) throw err;
  console.log(err.name, err.message); // ConfigurationError ERR limit must be an integer from 1 to 1000000000000
}

await client.set("user:42:name", "Ada"); // not a limiter's key: refused, and left as it is
try {
  await limiter.gcra("user:42:name", 10, "1s");
} catch (err) {
  if (!(err instanceof ForeignKeyError)) throw err;
  console.log(err.holds, await client.get("user:42:name")); // value Ada
}

// Nothing listens on port 1; fail at once rather than retry.
const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
down.on("error", () => {});
try {
  await new Limiter(down).gcra("user:42", 10, "1s");
} catch (err) {
  if (!(err instanceof RlError)) throw err; // the base of every case
  console.log(err instanceof ServerUnavailableError, err.code, err.cause.message); // true ERR_RL_SERVER_UNAVAILABLE Connection is closed.
}

try {
  await limiter.gcra("user:42", 10.5, "1s"); // refused before anything is sent
} catch (err) {
  console.log(err.name, err instanceof ConfigurationError, err.message); // TypeError true limit is an integer: 10.5
}
await client.close();
