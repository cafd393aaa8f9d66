// Errors in two classes, as the Python and NGINX packages classify them (docs/node.md,
// "Errors"): "unavailable" (no connection, a timeout, and the codes LOADING, BUSY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN, OOM, READONLY) is a ServerUnavailableError, which the Express
// middleware answers 503 or, with failOpen, lets through; any other error is a
// configuration's, answered 500 whatever failOpen says. From real servers: out of memory
// (maxmemory just above the used memory, noeviction), a replica the client points at, a
// replica whose primary is down (replica-serve-stale-data no), a cluster node serving no
// slot, a script keeping the server busy, a server nothing listens on, a policy the server
// does not hold, a key of another type, a user without the permission; on Redis 7.0 and
// Valkey 9.1, with the module and the library. Express 5 over HTTP.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, describe, test } from "node:test";

import Redis, { ReplyError } from "ioredis";
import { createClient, SimpleError } from "redis";
import { ConfigurationError, Limiter, ServerUnavailableError, header, policy, rateLimitLayers } from "redis-rl";

import { hit, serve, sleep } from "./http.mjs";
import { BACKENDS, Server, freePort } from "./servers.mjs";

const started = [];
const connected = []; // every client the tests make, closed at the end
after(async () => {
  await Promise.all(connected.map((c) => (c.disconnect ? c.disconnect() : c.close().catch(() => {}))));
  await Promise.all(started.map((s) => s.close()));
});

async function fresh(flavor, withModule, extra = []) {
  const s = new Server(flavor, withModule, extra);
  started.push(s);
  return s.start();
}

const UNAVAILABLE = JSON.stringify({ error: "rate limiter unavailable" });
const LAYERS = [{ name: "ip", identify: header("x-client"), policy: policy.fixed(100, "1h") }];

/** The middleware on `client` with `layers`, failing closed and with failOpen: each one's
 * answer to a request, as [status, body]. */
async function answers(client, layers = LAYERS) {
  const out = [];
  for (const failOpen of [false, true]) {
    const app = await serve(rateLimitLayers({ limiter: new Limiter(client), layers, failOpen }));
    const r = await hit(app.url, "acme");
    out.push([r.status, r.body]);
    await app.close();
  }
  return out;
}

const closed503 = [[503, UNAVAILABLE], [200, "ok"]];

/** A node-redis client of `server`, its errors (reconnections) silenced. */
async function nodeRedis(server, options = {}) {
  const c = createClient({ url: server.url, ...options });
  c.on("error", () => {});
  await c.connect();
  connected.push({ close: () => (c.isOpen ? c.close() : Promise.resolve()) });
  return c;
}

/** An ioredis client of `options`, its errors silenced. */
function ioredis(options) {
  const c = new Redis(options);
  c.on("error", () => {});
  connected.push(c);
  return c;
}

/** The call's rejection. */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("it did not reject");
}

const REPLIES = [
  "LOADING Redis is loading the dataset in memory",
  "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.",
  "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
  "CLUSTERDOWN The cluster is down",
  "TRYAGAIN Multiple keys request during rehashing of slot",
  "OOM command not allowed when used memory > 'maxmemory'.",
  "READONLY You can't write against a read only replica.",
];
const OTHERS = ["ERR no such policy 'gold'", "WRONGTYPE Operation against a key holding the wrong kind of value",
  "NOPERM this user has no permissions to run the 'rl.all' command", "NOAUTH Authentication required.",
  "WRONGPASS invalid username-password pair", "CROSSSLOT Keys in request don't hash to the same slot"];

test("each unavailable code, as node-redis and ioredis make its error, is a ServerUnavailableError; no other", async () => {
  for (const make of [(m) => new SimpleError(m), (m) => new ReplyError(m)]) {
    for (const [replies, unavailable] of [[REPLIES, true], [OTHERS, false]]) {
      for (const reply of replies) {
        const err = await rejection(new Limiter(async () => { throw make(reply); }).decide("k", policy.fixed(1, "1m")));
        assert.equal(err instanceof ServerUnavailableError, unavailable, reply);
        assert.equal(err.message, reply);
      }
    }
  }
});

/** `maxmemory` just above the used memory, then values written until a write is refused,
 * then 200 KB more (maxmemory lowered by as much): every write is refused from then on. */
async function outOfMemory(raw) {
  const used = async () => Number(/used_memory:(\d+)/.exec(String(await raw(["INFO", "memory"])))[1]);
  await raw(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
  await raw(["CONFIG", "SET", "maxmemory", String((await used()) + 60_000)]);
  for (let i = 0; i < 100; i++) {
    try {
      await raw(["SET", `ballast:${i}`, "x".repeat(10_000)]);
    } catch (err) {
      assert.match(err.message, /^OOM/);
      await raw(["CONFIG", "SET", "maxmemory", String((await used()) - 200_000)]);
      return;
    }
  }
  assert.fail("the memory was never full");
}

for (const [flavor, withModule] of BACKENDS) {
  describe(`${flavor}-${withModule ? "module" : "library"}`, () => {
    test("out of memory is unavailable: 503, or through with failOpen", async () => {
      const s = await fresh(flavor, withModule);
      const c = await nodeRedis(s);
      const raw = (args) => c.sendCommand(args);
      if (!withModule) await new Limiter(c).loadLibrary();
      await outOfMemory(raw);
      const err = await rejection(new Limiter(c).fixed("k", 5, "1m"));
      assert.ok(err instanceof ServerUnavailableError && /maxmemory/.test(err.message), String(err));
      assert.deepEqual(await answers(c), closed503);
      assert.deepEqual(await answers(ioredis(s.url)), closed503);
      await raw(["CONFIG", "SET", "maxmemory", "0"]);
      assert.deepEqual((await answers(c)).map(([status]) => status), [200, 200]);
      await c.close();
    });

    test("a replica the client points at is unavailable: 503, or through with failOpen", async () => {
      const primary = await fresh(flavor, withModule);
      const p = await nodeRedis(primary);
      if (!withModule) await new Limiter(p).loadLibrary(); // the library, replicated
      const replica = await fresh(flavor, withModule, ["--replicaof", "127.0.0.1", String(primary.port)]);
      const c = await nodeRedis(replica);
      for (let i = 0; !/master_link_status:up/.test(String(await c.sendCommand(["INFO", "replication"]))); i++) {
        assert.ok(i < 200, "the replica did not connect");
        await sleep(50);
      }
      for (let i = 0; !withModule && (await c.sendCommand(["FUNCTION", "LIST"])).length === 0; i++) {
        assert.ok(i < 200, "the library did not reach the replica");
        await sleep(50);
      }
      const err = await rejection(new Limiter(c).fixed("k", 5, "1m"));
      assert.ok(err instanceof ServerUnavailableError && /^READONLY/.test(err.message), String(err));
      assert.deepEqual(await answers(c), closed503);
      if (!withModule) { // where the library is missing there too, its load is refused alike
        await p.sendCommand(["FUNCTION", "FLUSH"]);
        for (let i = 0; (await c.sendCommand(["FUNCTION", "LIST"])).length > 0; i++) {
          assert.ok(i < 200, "the flush did not reach the replica");
          await sleep(50);
        }
        const load = await rejection(new Limiter(await nodeRedis(replica)).fixed("k", 5, "1m"));
        assert.ok(load instanceof ServerUnavailableError && /could not be loaded: READONLY/.test(load.message), String(load));
        assert.deepEqual(await answers(await nodeRedis(replica)), closed503);
      }
      await c.close();
      await p.close();
    });

    test("a configuration error is a 500 whatever failOpen says", async () => {
      const s = await fresh(flavor, withModule);
      const c = await nodeRedis(s);
      await c.sendCommand(["SET", "rl:ip:acme", "not a limiter's"]);
      const byName = [{ name: "ip", identify: header("x-client"), policy: "gold" }];
      for (const layers of [byName, LAYERS]) {
        assert.deepEqual((await answers(c, layers)).map(([status]) => status), [500, 500]);
      }
      assert.equal(await c.sendCommand(["GET", "rl:ip:acme"]), "not a limiter's");
      const denied = withModule ? "-rl.all" : "-fcall"; // (ACL knows the loaded commands alone)
      await c.sendCommand(["ACL", "SETUSER", "nope", "on", ">pw", "~*", "+@all", denied]);
      const nope = await nodeRedis(s, { username: "nope", password: "pw" });
      assert.deepEqual((await answers(nope, [{ name: "ip", identify: header("x-client"), policy: policy.fixed(5, "1m") }]))
        .map(([status]) => status), [500, 500]);
      await nope.close();
      await c.close();
    });
  });
}

test("a replica whose primary is down is unavailable (MASTERDOWN, to a read; a write is READONLY)", async () => {
  const s = await fresh("redis", true, ["--replicaof", "127.0.0.1", String(await freePort())]);
  const c = await nodeRedis(s);
  try {
    await c.sendCommand(["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    const err = await rejection(new Limiter(c).peek("k", policy.fixed(5, "1m")));
    assert.ok(err instanceof ServerUnavailableError && /^MASTERDOWN/.test(err.message), String(err));
  } finally {
    await c.close();
  }
});

test("a cluster node that serves no slot is unavailable (CLUSTERDOWN)", async () => {
  const s = await fresh("valkey", true, ["--cluster-enabled", "yes"]);
  const c = await nodeRedis(s);
  const err = await rejection(new Limiter(c).fixed("k", 5, "1m"));
  assert.ok(err instanceof ServerUnavailableError && /^CLUSTERDOWN/.test(err.message), String(err));
  assert.deepEqual(await answers(c), closed503);
  await c.close();
});

test("a server busy with a script is unavailable (BUSY)", async () => {
  const s = await fresh("redis", true, ["--busy-reply-threshold", "50"]);
  const script = spawn("redis-cli", ["-p", String(s.port), "EVAL", "while true do end", "0"], { stdio: "ignore" });
  const c = await nodeRedis(s, { disableClientInfo: true });
  try {
    for (let i = 0; ; i++) { // until the script has run past the threshold
      const busy = await c.sendCommand(["PING"]).then(() => false, (err) => /^BUSY/.test(err.message));
      if (busy) break;
      assert.ok(i < 200, "the script did not start");
      await sleep(50);
    }
    const err = await rejection(new Limiter(c).fixed("k", 5, "1m"));
    assert.ok(err instanceof ServerUnavailableError && /^BUSY/.test(err.message), String(err));
    assert.deepEqual(await answers(c), closed503);
  } finally {
    await c.sendCommand(["SCRIPT", "KILL"]);
    await new Promise((r) => (script.exitCode !== null ? r() : script.once("exit", r)));
    await c.close();
  }
});

test("a server nothing listens on is unavailable", async () => {
  const down = ioredis({ port: await freePort(), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  assert.deepEqual(await answers(down), closed503);
  assert.ok((await rejection(new Limiter(down).fixed("k", 5, "1m"))) instanceof ServerUnavailableError);
});

test("failOpen is a boolean", () => {
  assert.throws(() => rateLimitLayers({ limiter: new Limiter(() => 0), layers: LAYERS, failOpen: "yes" }),
    (err) => err instanceof TypeError && err instanceof ConfigurationError && /failOpen/.test(err.message));
});
