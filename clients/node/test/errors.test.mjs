// The package's errors (src/errors.ts), each case from real servers: a configuration refused
// (before sending, by the module and by the library), a server that cannot be reached, a
// library missing that cannot be loaded, a foreign key; and what the adapters hand on. Each
// keeps the driver's error as its cause and the server's text as its message.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";

import Redis from "ioredis";
import { createClient } from "redis";
import {
  ConfigurationError, ForeignKeyError, LibraryUnavailableError, Limiter, ReservationSettledError, RlError, RlStore,
  ServerUnavailableError,
  clientIp, policy, rateLimitLayers,
} from "redis-rl";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible";

import { Server, closeAll, freePort, startAll } from "./servers.mjs";

const cli = (port, ...args) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout.trim();

const servers = await startAll();
after(() => closeAll(servers));

/** The driver's error behind `err`, which is none of the package's. */
function cause(err) {
  assert.ok(err.cause instanceof Error && !(err.cause instanceof RlError), `no driver error behind ${err}`);
  return err.cause;
}

/** `promise`'s rejection (it must reject). */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("it did not reject");
}

/** An ioredis client of a port nothing listens on, failing at once. */
async function deadIoredis() {
  const c = new Redis({ port: await freePort(), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  return c;
}

test("every case is an RlError with its code, exported from the package", () => {
  const cases = [ConfigurationError, ServerUnavailableError, LibraryUnavailableError, ForeignKeyError, ReservationSettledError];
  for (const Case of cases) {
    const err = Case === ForeignKeyError ? new Case("m", "type") : new Case("m", { cause: 1 });
    assert.ok(err instanceof RlError && err instanceof Case && err instanceof Error);
    assert.deepEqual([err.name, err.code, err.cause ?? 1], [Case.name, Case.code, 1]);
    for (const Other of cases.filter((o) => o !== Case)) assert.ok(!(err instanceof Other));
  }
  assert.throws(() => new RlError("m"), TypeError);
});

test("a configuration refused before sending stays a TypeError or RangeError, and is a ConfigurationError", async () => {
  const limiter = new Limiter(() => assert.fail("nothing is sent"));
  const checks = [
    [() => limiter.fixed("k", "5", "1m"), TypeError, /limit is an integer/],
    [() => limiter.all([]), RangeError, /at least one/],
    [() => limiter.decide(null, policy.fixed(1, "1m")), TypeError, /key must be a string/],
    [() => policy.fixed(1, 1.5), TypeError, /a duration in seconds is an integer/],
    [() => rateLimitLayers({ limiter, layers: [] }), RangeError, /at least one layer/],
    [() => new RlStore({ sendCommand: () => 0 }).init({ windowMs: 0 }), RangeError, /windowMs/],
    [() => new RateLimiterRl({ storeClient: () => 0, points: 1, duration: 1 }).consume("k", -1), RangeError, /points to consume/],
  ];
  for (const [call, Kind, message] of checks) {
    const err = await rejection((async () => call())());
    assert.ok(err instanceof Kind && err.name === Kind.name && message.test(err.message), String(err));
    assert.ok(err instanceof ConfigurationError && err instanceof RlError && !(err instanceof ForeignKeyError), String(call));
    assert.equal(err.code, "ERR_RL_CONFIGURATION");
  }
});

test("instanceof holds across the package's ESM and CommonJS builds", async () => {
  const cjs = createRequire(import.meta.url)("redis-rl");
  assert.notEqual(cjs.ConfigurationError, ConfigurationError);
  const err = await rejection(new Limiter(() => 0).fixed("k", "5", "1m"));
  assert.ok(err instanceof cjs.ConfigurationError && err instanceof cjs.RlError && !(err instanceof cjs.ForeignKeyError));
  const theirs = new cjs.ForeignKeyError("WRONGTYPE", "type");
  assert.ok(theirs instanceof ForeignKeyError && !(theirs instanceof ConfigurationError));
});

/** The two drivers, connected to `url`. */
const DRIVERS = {
  "node-redis": async (url) => {
    const c = await createClient({ url }).connect();
    return { client: c, close: () => c.close() };
  },
  ioredis: async (url) => {
    const c = new Redis(url);
    return { client: c, close: () => c.disconnect() };
  },
};

/** Calls the server refuses for an argument, and its text (the module's and the library's). */
const REFUSED = [
  [(l) => l.fixed("k", 0, "1m"), /^ERR limit must be an integer from 1 to 1000000000000$/],
  [(l) => l.gcra("k", 10, "1 minute"), /^ERR period must be a duration/],
  [(l) => l.slidingLog("k", 200_000, "1m"), /^ERR limit must be an integer from 1 to 100000$/],
  [(l) => l.fixed("k", 5, "1m", { cost: 1e13 }), /^ERR COST must be an integer/],
  [(l) => l.gcra("k", 1e9, "1ms"), /must be at most 1 per nanosecond/],
  [(l) => l.acquire("k", 1, "30s", "x".repeat(300)), /^ERR lease_id must be 1 to 256 bytes$/],
];

for (const server of servers) {
  for (const [driver, connect] of Object.entries(DRIVERS)) {
    describe(`${server.label} through ${driver}`, () => {
      let c;
      before(async () => {
        server.reset();
        c = await connect(server.url);
      });
      after(() => c.close());

      test("the server's refusal of an argument is a ConfigurationError", async () => {
        for (const [call, text] of REFUSED) {
          const limiter = new Limiter(c.client);
          const err = await rejection(call(limiter));
          assert.ok(err instanceof ConfigurationError && text.test(err.message), String(err));
          assert.equal(cause(err).message, err.message);
          assert.equal(limiter.backend, server.withModule ? "module" : "library");
        }
        assert.equal(cli(server.port, "dbsize"), "0");
      });

      test("a key of another type, another limiter or holding another value is a ForeignKeyError", async () => {
        const limiter = new Limiter(c.client);
        cli(server.port, "rpush", `${driver}:list`, "x");
        cli(server.port, "set", `${driver}:text`, "hello");
        cli(server.port, "set", `${driver}:shaped`, "fixed:not a state");
        await limiter.gcra(`${driver}:gcra`, 10, "1h");
        const stored = cli(server.port, "get", `${driver}:gcra`);
        for (const [key, holds] of [["list", "type"], ["text", "value"], ["shaped", "value"], ["gcra", "limiter"]]) {
          const err = await rejection(limiter.fixed(`${driver}:${key}`, 5, "1m"));
          assert.ok(err instanceof ForeignKeyError, String(err));
          assert.deepEqual([key, err.holds, cause(err).message], [key, holds, err.message]);
        }
        assert.equal(cli(server.port, "get", `${driver}:text`), "hello");
        assert.equal(cli(server.port, "get", `${driver}:shaped`), "fixed:not a state");
        assert.equal(cli(server.port, "get", `${driver}:gcra`), stored);
      });

      test("an error that is none of the cases is the driver's", async () => {
        if (!server.withModule) await new Limiter(c.client).loadLibrary(); // (a refused load is a LibraryUnavailableError)
        // A user who may not run the command (ACL knows the loaded commands alone).
        cli(server.port, "acl", "setuser", "nocall", "reset", "on", ">pw", "~*", "+@all", server.withModule ? "-rl.fixed" : "-fcall");
        const user = await connect(`redis://nocall:pw@127.0.0.1:${server.port}`);
        try {
          const err = await rejection(new Limiter(user.client).fixed(`${driver}:noperm`, 5, "1m"));
          assert.ok(/^NOPERM /.test(err.message) && !(err instanceof RlError), String(err));
        } finally {
          await user.close();
          cli(server.port, "acl", "deluser", "nocall");
        }
      });
    });
  }
}

describe("a server that cannot be reached", () => {
  test("ioredis on a port nothing listens on: ServerUnavailableError", async () => {
    const c = await deadIoredis();
    const limiter = new Limiter(c);
    const err = await rejection(limiter.gcra("k", 10, "1s"));
    assert.ok(err instanceof ServerUnavailableError && err.message === cause(err).message, String(err));
    assert.equal(limiter.backend, undefined);
    assert.ok((await rejection(limiter.loadLibrary())) instanceof ServerUnavailableError);
    c.disconnect();
  });

  test("node-redis whose server went away: ServerUnavailableError", async () => {
    const s = await new Server("redis", true).start();
    // Reconnecting, with no offline queue: a call rejects at once (node-redis' default would
    // queue it until the server is back).
    const c = createClient({ url: s.url, disableOfflineQueue: true });
    c.on("error", () => {});
    await c.connect();
    try {
      const limiter = new Limiter(c);
      assert.equal((await limiter.fixed("k", 5, "1m")).remaining, 4);
      await s.stop();
      await new Promise((r) => setTimeout(r, 100));
      const err = await rejection(limiter.fixed("k", 5, "1m"));
      assert.ok(err instanceof ServerUnavailableError, String(err));
      cause(err);
    } finally {
      c.destroy();
      await s.close();
    }
  });

  test("the adapters hand it on: a 503 (or next() with failOpen), the store's rejection, RateLimiterRl's rejection or its insuranceLimiter", async () => {
    const dead = await deadIoredis();
    const layers = [{ name: "ip", identify: clientIp, policy: policy.fixed(5, "1m") }];
    const answer = (middleware) => new Promise((resolve) => {
      const res = { statusCode: 200, headers: {}, setHeader(n, v) { this.headers[n] = v; }, end: (body) => resolve([res.statusCode, body]) };
      middleware({ ip: "10.0.0.1", headers: {} }, res, (err) => resolve(["next", err]));
    });
    assert.deepEqual(await answer(rateLimitLayers({ limiter: new Limiter(dead), layers })),
      [503, JSON.stringify({ error: "rate limiter unavailable" })]);
    assert.deepEqual(await answer(rateLimitLayers({ limiter: new Limiter(dead), layers, failOpen: true })), ["next", undefined]);

    const store = new RlStore({ client: dead });
    store.init({ windowMs: 60_000 });
    assert.ok((await rejection(store.increment("k"))) instanceof ServerUnavailableError);

    const alone = new RateLimiterRl({ storeClient: dead, points: 2, duration: 1 });
    assert.ok((await rejection(alone.consume("k"))) instanceof ServerUnavailableError);
    const up = await DRIVERS.ioredis(servers[0].url);
    try {
      const insured = new RateLimiterRl({ storeClient: dead, points: 2, duration: 1,
        insuranceLimiter: new RateLimiterRl({ storeClient: up.client, points: 3, duration: 1 }) });
      assert.equal((await insured.consume("insured")).remainingPoints, 2);
    } finally {
      up.close();
    }
    const notReady = new RateLimiterRl({ storeClient: dead, points: 2, duration: 1, rejectIfRedisNotReady: true });
    const err = await rejection(notReady.consume("k"));
    assert.ok(err instanceof ServerUnavailableError && /Redis connection is not ready/.test(err.message));
    dead.disconnect();
  });
});

describe("a library missing that cannot be loaded", () => {
  for (const flavor of ["redis", "valkey"]) {
    for (const [driver, connect] of Object.entries(DRIVERS)) {
      test(`${flavor} through ${driver}: an ACL user who may not run FUNCTION LOAD`, async () => {
        const s = servers.find((x) => x.flavor === flavor && !x.withModule);
        s.reset();
        cli(s.port, "acl", "setuser", "noload", "reset", "on", ">pw", "~*", "+@all", "-function");
        const c = await connect(`redis://noload:pw@127.0.0.1:${s.port}`);
        try {
          const limiter = new Limiter(c.client);
          const err = await rejection(limiter.fixed("k", 3, "1h"));
          assert.ok(err instanceof LibraryUnavailableError && /could not be loaded: .*NOPERM/.test(err.message), String(err));
          assert.match(cause(err).message, /NOPERM/);
          assert.ok((await rejection(limiter.loadLibrary())) instanceof LibraryUnavailableError);
          assert.equal(cli(s.port, "dbsize"), "0");
        } finally {
          await c.close();
          cli(s.port, "acl", "deluser", "noload");
        }
      });
    }
  }

  test("a read-only replica of a server without the module", async () => {
    const primary = await new Server("redis", false).start();
    const replica = await new Server("redis", false, ["--replicaof", "127.0.0.1", String(primary.port)]).start();
    const c = await createClient({ url: replica.url }).connect();
    try {
      const deadline = Date.now() + 10_000;
      while (!cli(replica.port, "info", "replication").includes("master_link_status:up")) {
        assert.ok(Date.now() < deadline, "the replica did not connect");
        await new Promise((r) => setTimeout(r, 50));
      }
      const limiter = new Limiter(c);
      const err = await rejection(limiter.peek("k", policy.fixed(5, "1m")));
      // READONLY: the server cannot load it now (a failover may end it), unavailable.
      assert.ok(err instanceof ServerUnavailableError && /could not be loaded: READONLY/.test(err.message), String(err));
      assert.equal(limiter.backend, "library");
    } finally {
      await c.close();
      await replica.close();
      await primary.close();
    }
  });
});
