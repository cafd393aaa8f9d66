// The Functions library loaded once for concurrent first calls, and a failed load tried again
// only as the backoff allows (src/loading.ts): 64 calls at once (Promise.all, each by a new
// Limiter) on a library-less Redis or Valkey make exactly one FUNCTION LOAD and get no error;
// a load refused for memory (OOM: maxmemory just above the used memory, noeviction) is tried
// again only after 1 s, then 2 s, and a success ends the backoff. The server counts the loads
// (INFO commandstats: cmdstat_function|load, refused ones included).
import assert from "node:assert/strict";
import { after, test } from "node:test";

import Redis from "ioredis";
import { createClient } from "redis";
import { Limiter, ServerUnavailableError, policy } from "redis-rl";

import { sleep } from "./http.mjs";
import { Server } from "./servers.mjs";

const WINDOW = policy.fixed(1000, "1h");
const CALLERS = 64;

const started = [];
after(() => Promise.all(started.map((s) => s.close())));

async function libraryLess(flavor) {
  const s = new Server(flavor, false);
  started.push(s);
  return s.start();
}

/** FUNCTION LOADs the server has had, refused and failed ones included. */
async function loads(raw) {
  const info = String(await raw(["INFO", "commandstats"]));
  const line = /^cmdstat_function\|load:(.*)$/m.exec(info)?.[1] ?? "";
  return ["calls", "rejected_calls", "failed_calls"].reduce((n, k) => n + Number(new RegExp(`${k}=(\\d+)`).exec(line)?.[1] ?? 0), 0);
}

/** `n` first calls at once, each by a new limiter on `client`: each one's `allowed`, or its
 * error. */
const attempt = (client, n) => Promise.all(Array.from({ length: n }, (_, i) =>
  new Limiter(client).decide(`k${i}`, WINDOW).then((d) => d.allowed, (err) => err)));

/** Each of `outcomes` is the failed load's error: unavailable, the server's OOM. */
function refusedForMemory(outcomes) {
  for (const o of outcomes) {
    assert.ok(o instanceof ServerUnavailableError, String(o));
    assert.match(o.message, /could not be loaded: OOM command not allowed when used memory > 'maxmemory'/);
  }
}

for (const flavor of ["redis", "valkey"]) {
  test(`${CALLERS} first calls on a library-less ${flavor} load the library once`, async () => {
    const s = await libraryLess(flavor);
    const nodeRedis = await createClient({ url: s.url }).connect();
    const raw = (args) => nodeRedis.sendCommand(args);
    assert.deepEqual(await attempt(nodeRedis, CALLERS), Array(CALLERS).fill(true));
    assert.equal(await loads(raw), 1);
    await raw(["FUNCTION", "FLUSH"]); // missing again: one more load, through ioredis
    const io = new Redis(s.url);
    assert.deepEqual(await attempt(io, CALLERS), Array(CALLERS).fill(true));
    assert.equal(await loads(raw), 2);
    io.disconnect();
    await nodeRedis.close();
  });
}

test("a failed load is tried again only as the backoff allows", async () => {
  const s = await libraryLess("redis");
  const client = await createClient({ url: s.url }).connect();
  const raw = (args) => client.sendCommand(args);
  const used = Number(/used_memory:(\d+)/.exec(String(await raw(["INFO", "memory"])))[1]);
  await raw(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
  await raw(["CONFIG", "SET", "maxmemory", String(used + 60_000)]);

  refusedForMemory(await attempt(client, CALLERS));
  assert.equal(await loads(raw), 1); // one load, refused; the others waited for it
  const firstFailure = performance.now();
  refusedForMemory(await attempt(client, 8));
  assert.equal(await loads(raw), 1); // backing off for 1 s: no load

  await sleep(firstFailure + 1_100 - performance.now());
  refusedForMemory(await attempt(client, 8));
  assert.equal(await loads(raw), 2); // the 1 s passed: one load, refused again
  const secondFailure = performance.now();
  await sleep(1_100);
  refusedForMemory(await attempt(client, 8));
  assert.equal(await loads(raw), 2); // now 2 s

  await raw(["CONFIG", "SET", "maxmemory", "0"]);
  await sleep(secondFailure + 2_100 - performance.now());
  assert.deepEqual(await attempt(client, 8), Array(8).fill(true));
  assert.equal(await loads(raw), 3); // loaded: the backoff is over
  await raw(["FUNCTION", "FLUSH"]);
  assert.equal((await new Limiter(client).decide("again", WINDOW)).allowed, true);
  assert.equal(await loads(raw), 4); // at once, with no backoff left
  await client.close();
});
