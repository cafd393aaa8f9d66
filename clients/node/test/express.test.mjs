// The Express middleware inside a real Express app (examples/express_app.mjs), served on a
// free port and driven over HTTP, on every backend.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { createClient } from "redis";
import { Limiter, policy, rateLimitLayers } from "redis-rl";

import { Server, closeAll, freePort, startAll } from "./servers.mjs";

const EXAMPLES = join(fileURLToPath(new URL(".", import.meta.url)), "../examples");

/** examples/express_app.mjs on a free port, against `redisUrl`. */
async function startApp(redisUrl) {
  const port = await freePort();
  const proc = spawn(process.execPath, [join(EXAMPLES, "express_app.mjs")], {
    env: { ...process.env, REDIS_URL: redisUrl, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"],
  });
  let log = ""; // the app's stderr (reconnections), shown if it does not start
  proc.stderr.on("data", (chunk) => { log += chunk; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await fetch(`${base}/nothing`);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`the app did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const get = (path, key = "free-key") => fetch(`${base}${path}`, { headers: key ? { "X-API-Key": key } : {} });
  const stop = () => new Promise((r) => { proc.once("exit", r); proc.kill("SIGTERM"); });
  return { get, stop };
}

/** Waits, if needed, so the next `seconds` fall inside one minute's fixed window. */
async function insideOneMinute(seconds) {
  const into = (Date.now() / 1000) % 60;
  if (into > 60 - seconds) await new Promise((r) => setTimeout(r, (60.5 - into) * 1000));
}

const servers = await startAll();
after(() => closeAll(servers));

for (const server of servers) {
  describe(`express on ${server.label}`, () => {
    let app;
    before(async () => {
      server.reset();
      app = await startApp(server.url);
    });
    after(() => app.stop());

    test("every answer carries the binding layer's headers", async () => {
      const r = await app.get("/hello", "pro-key");
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { message: "hello" });
      assert.equal(r.headers.get("x-ratelimit-limit"), "20"); // the IP layer binds
      assert.equal(r.headers.get("ratelimit-policy"), '"ip";q=100;w=1');
      assert.match(r.headers.get("ratelimit"), /^"ip";r=\d+;t=1$/);
      assert.equal(r.headers.get("retry-after"), null);
    });

    test("an endpoint layer denies with 429 and spends nothing elsewhere", async () => {
      await insideOneMinute(10);
      for (let i = 0; i < 5; i++) assert.equal((await app.get("/export")).status, 200);
      const r = await app.get("/export");
      assert.equal(r.status, 429);
      assert.deepEqual(await r.json(), { error: "rate limited", layer: "endpoint" });
      assert.equal(r.headers.get("ratelimit-policy"), '"endpoint";q=5;w=60');
      const retry = Number(r.headers.get("retry-after"));
      assert.ok(retry >= 1 && retry <= 60);
      const c = await createClient({ url: server.url }).connect();
      const limiter = new Limiter(c);
      const plan = policy.tokenBucket(60, 60, "1m");
      const before = (await limiter.peek("rl:plan:free-key", plan)).remaining;
      assert.ok(before <= 55);
      assert.equal((await app.get("/export")).status, 429);
      assert.ok((await limiter.peek("rl:plan:free-key", plan)).remaining >= before); // only refills
      await c.close();
    });

    test("unknown API keys name no key but the IP's", async () => {
      server.reset();
      for (const key of ["constructor", "__proto__", "x".repeat(4000), "FREE-KEY"]) {
        assert.equal((await app.get("/export", key)).status, 200);
      }
      const c = await createClient({ url: server.url }).connect();
      assert.deepEqual(await c.keys("*"), ["rl:ip:127.0.0.1"]);
      await c.close();
    });

    test("many clients at once are admitted to the limit and no further", async () => {
      await insideOneMinute(10);
      const codes = await Promise.all(Array.from({ length: 40 }, () => app.get("/export", "pro-key").then((r) => r.status)));
      assert.equal(codes.filter((s) => s === 200).length, 5);
      assert.equal(codes.filter((s) => s === 429).length, 35);
    });
  });
}

test("the app follows its server's restart and a failover to a server without the module", async () => {
  const s = await new Server("redis", true, ["--appendonly", "yes", "--appendfsync", "always"]).start();
  const app = await startApp(s.url);
  try {
    await insideOneMinute(15);
    for (let i = 0; i < 3; i++) assert.equal((await app.get("/export")).status, 200);
    await s.restart(); // the AOF keeps the window's count
    let r = await app.get("/export");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ratelimit-remaining"), "1");
    s.withModule = false;
    s.extra = [];
    await s.restart();
    r = await app.get("/export");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ratelimit-remaining"), "4");
  } finally {
    await app.stop();
    await s.close();
  }
});

test("an unreachable server fails the request, not open", async () => {
  const limiter = new Limiter(async () => { throw new Error("connect ECONNREFUSED"); });
  const mw = rateLimitLayers({ limiter, layers: [{ name: "ip", identify: () => "x", policy: policy.gcra(1, "1s") }] });
  const err = await new Promise((resolve) => mw({ headers: {} }, { setHeader() {}, end() {}, statusCode: 200 }, resolve));
  assert.match(String(err), /ECONNREFUSED/);
});

test("a wrong configuration is refused at start-up", () => {
  const limiter = new Limiter(async () => [1, 1, 0, 0, 0]);
  const layer = { name: "ip", identify: () => "x", policy: policy.gcra(1, "1s") };
  assert.throws(() => rateLimitLayers({ limiter, layers: [] }), RangeError);
  assert.throws(() => rateLimitLayers({ limiter, layers: [layer, layer] }), /distinct/);
  assert.throws(() => rateLimitLayers({ limiter: {}, layers: [layer] }), TypeError);
});

test("a tag puts every key of a request in one slot", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => {
    sent.push(args);
    return [1, 5, 4, 0, 100, [[1, 5, 4, 0, 100], [1, 5, 4, 0, 100]]];
  });
  const mw = rateLimitLayers({
    limiter,
    layers: [
      { name: "ip", identify: (req) => req.ip, policy: policy.gcra(10, "1s") },
      { name: "plan", identify: (req) => req.headers["x-api-key"], policy: policy.fixed(5, "1m") },
    ],
    tag: (req) => req.headers["x-api-key"],
  });
  await new Promise((resolve, reject) =>
    mw({ ip: "203.0.113.7", headers: { "x-api-key": "acme" } }, { setHeader() {}, end: reject, statusCode: 200 },
      (err) => (err ? reject(err) : resolve())));
  assert.deepEqual(sent[0].slice(0, 4), ["RL.ALL", "2", "rl:{acme}:ip:203.0.113.7", "rl:{acme}:plan:acme"]);
});
