// Insurance: the Express middleware served on a free port and driven over HTTP by several
// concurrent clients while its Redis (with the module, and without it: the Functions
// library) is killed and started again on the same port; the limiter's own calls.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { createClient } from "redis";
import { ConfigurationError, Insurance, Limiter, ServerUnavailableError, header, policy, rateLimitLayers } from "redis-rl";

import { serve, sleep } from "./http.mjs";
import { Server } from "./servers.mjs";

const NODES = 4;
const LIMIT = 40; // per hour: the process's share is 10
const SHARE = LIMIT / NODES;
const CLIENTS = 8;

const started = [];
after(() => Promise.all(started.map((s) => s.close())));

/** The rate-limit calls the server has run (the module's commands, or FCALL). */
async function calls(port) {
  const c = await createClient({ url: `redis://127.0.0.1:${port}` }).connect();
  const info = String(await c.sendCommand(["INFO", "commandstats"]));
  await c.close();
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(rl\.[a-z]+|fcall(?:_ro)?):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

/** A logger keeping its lines. */
function keeping() {
  const lines = [];
  return { lines, error: (m) => lines.push(["error", m]), warn: (m) => lines.push(["warn", m]) };
}

async function waitFor(what, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!what()) {
    assert.ok(Date.now() < deadline, "waited too long");
    await sleep(20);
  }
}

/** `CLIENTS` loops sending requests until stopped, each as the identity `who(loop)` names at
 * that moment: every response's [identity, status, X-RateLimit-Limit] kept, and any failure
 * (a rejected fetch, a status other than 200 or 429). */
class Load {
  constructor(url) {
    Object.assign(this, { url, phase: "before", got: [], failures: [], stopped: false });
    this.loops = Array.from({ length: CLIENTS }, (_, t) => this.run(t));
  }

  who(t) {
    return this.phase === "before" ? "crowd" : `${this.phase}-${t}`;
  }

  async run(t) {
    while (!this.stopped) {
      const user = this.who(t);
      try {
        const r = await fetch(`${this.url}/`, { headers: { "x-user": user } });
        const body = await r.text();
        this.got.push([user, r.status, r.headers.get("x-ratelimit-limit") ?? ""]);
        if (r.status !== 200 && r.status !== 429) this.failures.push(`${user}: ${r.status} ${body}`);
      } catch (err) {
        this.failures.push(`${user}: ${err}`);
      }
    }
  }

  seen(user, limit) {
    return this.got.filter(([u, , l]) => u === user && (limit === undefined || l === limit)).map(([, s]) => s);
  }

  async stop() {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

for (const withModule of [true, false]) {
  describe(`insurance on redis-${withModule ? "module" : "library"}`, () => {
    test("Redis killed under load: each client gets the process's share, then Redis decides again", async () => {
      const server = new Server("redis", withModule);
      started.push(server);
      await server.start();
      // Offline commands fail at once (not queued till the reconnection), reconnecting every 50 ms.
      const c = createClient({ url: server.url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } });
      c.on("error", () => {});
      await c.connect();
      const logger = keeping();
      const limiter = new Limiter(c, { insurance: { nodes: NODES, logger } });
      const app = await serve(rateLimitLayers({ limiter, layers: [
        { name: "user", identify: header("x-user"), policy: policy.slidingLog(LIMIT, "1h") },
        { name: "site", identify: () => "all", policy: policy.fixed(1_000_000, "1h") },
      ] }));
      const load = new Load(app.url);
      let got;
      try {
        // Redis decides (an exact sliding log: no window boundary to cross): the crowd spends its
        // 40 and is denied (then from the denial cache).
        await waitFor(() => load.seen("crowd").filter((s) => s === 429).length >= CLIENTS);
        assert.equal(load.seen("crowd").filter((s) => s === 200).length, LIMIT);
        assert.deepEqual(logger.lines, []);

        await server.stop(); // killed: every request from now on is this process's to decide
        load.phase = "outage";
        await waitFor(() => Array.from({ length: CLIENTS }, (_, t) => t)
          .every((t) => load.seen(`outage-${t}`, String(SHARE)).length > SHARE + 2));
        // A fresh identity: the share, then a 429 with the headers and body Redis's has.
        got = [];
        for (let i = 0; i <= SHARE; i++) {
          const r = await fetch(`${app.url}/`, { headers: { "x-user": "fresh" } });
          got.push({ status: r.status, headers: r.headers, body: await r.text() });
        }
        assert.deepEqual(got.map((r) => r.status), [...Array(SHARE).fill(200), 429]);
        assert.deepEqual(got.map((r) => r.headers.get("x-ratelimit-remaining")),
          [...Array.from({ length: SHARE }, (_, i) => String(SHARE - 1 - i)), "0"]);
        const denied = got[SHARE];
        assert.equal(denied.headers.get("x-ratelimit-limit"), String(SHARE));
        const retry = Number(denied.headers.get("retry-after"));
        assert.ok(retry >= 3500 && retry <= 3600, String(retry));
        assert.equal(denied.headers.get("ratelimit-policy"), `"user";q=${LIMIT};w=3600`);
        assert.match(denied.headers.get("ratelimit"), /^"user";r=0;t=\d+$/);
        assert.deepEqual(JSON.parse(denied.body), { error: "rate limited", layer: "user" });
        // The crowd's denial, cached before the outage, answers first: never insured.
        const crowd = await fetch(`${app.url}/`, { headers: { "x-user": "crowd" } });
        assert.equal(crowd.status, 429);
        assert.equal(crowd.headers.get("x-ratelimit-limit"), String(LIMIT));

        load.phase = "after";
        await server.start(); // the same port; its data gone (no persistence)
        await waitFor(() => Array.from({ length: CLIENTS }, (_, t) => t)
          .every((t) => load.seen(`after-${t}`, String(LIMIT)).length > 0));
        // Redis decides again: a new identity is counted there, against the whole limit.
        const before = await calls(server.port);
        const later = await fetch(`${app.url}/`, { headers: { "x-user": "later" } });
        assert.equal(later.status, 200);
        assert.equal(later.headers.get("x-ratelimit-limit"), String(LIMIT));
        assert.equal(later.headers.get("x-ratelimit-remaining"), String(LIMIT - 1));
        assert.ok((await calls(server.port)) > before);
      } finally {
        await load.stop();
        await app.close();
        await c.close().catch(() => {});
      }
      assert.deepEqual(load.failures, []);
      // Each flooding client had its share during the outage, and no more.
      for (let t = 0; t < CLIENTS; t++) {
        assert.equal(load.seen(`outage-${t}`, String(SHARE)).filter((s) => s === 200).length, SHARE);
      }
      assert.equal(load.seen("crowd").filter((s) => s === 200).length, LIMIT);
      assert.deepEqual(load.seen("crowd", String(SHARE)), []);
      // Logged once each way.
      assert.equal(logger.lines.length, 2, JSON.stringify(logger.lines));
      assert.equal(logger.lines[0][0], "error");
      assert.ok(logger.lines[0][1].startsWith(
        `rl: Redis unavailable, insurance on: this process decides alone, each policy divided by ${NODES} (`), logger.lines[0][1]);
      assert.deepEqual(logger.lines[1], ["warn", "rl: Redis answers again, insurance off: decisions are Redis's again"]);
      const snap = limiter.metrics.snapshot().user;
      const insured = [...load.got.filter(([, , l]) => l === String(SHARE)).map(([, s]) => s), ...got.map((r) => r.status)];
      assert.equal(snap.insured_within_limit, insured.filter((s) => s === 200).length);
      assert.equal(snap.insured_over_limit, insured.filter((s) => s === 429).length);
      assert.equal(snap.unavailable, 0);
      assert.equal(snap.error, 0);
    });
  });
}

/** A limiter whose server is out of reach: every call is unavailable. */
const closedLimiter = (o) => new Limiter(async () => {
  throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
}, o);

test("the limiter's calls are insured, all or nothing; a server policy's name, a peek, a refund are not", async () => {
  const logger = keeping();
  const limiter = closedLimiter({ insurance: { nodes: 3, logger } });
  // GCRA 10/s on 3 processes: 3 a second.
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await limiter.gcra("k", 10, "1s", { burst: 20 }));
  assert.deepEqual(got.map((d) => d.allowed), [true, true, true, false]);
  assert.ok(got.every((d) => d.insured && d.limit === 3));
  assert.ok(got[3].remaining === 0 && got[3].retryAfterMs > 0 && got[3].retryAfterMs <= 1000);
  const wide = policy.fixed(30, "1h");
  const narrow = policy.fixed(2, "1h");
  const first = await limiter.all([["a", wide], ["b", narrow]]);
  assert.ok(first.allowed && first.insured && first.index === 1 && first.binding.remaining === 0);
  const denied = await limiter.all([["a", wide], ["b", narrow]]);
  assert.ok(!denied.allowed && denied.index === 1 && denied.layers[0] === undefined);
  assert.equal((await limiter.fixed("a", 30, "1h")).remaining, 8); // 10 - 1 (first) - 1 (this)
  assert.equal((await limiter.decide("big", narrow, { cost: 2 })).retryAfterMs, -1); // never
  await assert.rejects(limiter.limit("k", "free"), ServerUnavailableError);
  await assert.rejects(limiter.all([["a", wide], ["n", "free"]]), ServerUnavailableError);
  await assert.rejects(limiter.refund("b", narrow, 1), ServerUnavailableError); // nothing given back
  assert.equal((await limiter.all([["a", wide], ["b", narrow]])).allowed, false);
  await assert.rejects(limiter.peek("k", policy.gcra(10, "1s")), ServerUnavailableError);
  const snap = limiter.metrics.snapshot();
  assert.equal(snap.default.insured_within_limit, 5);
  assert.equal(snap.default.insured_over_limit, 4);
  assert.equal(snap.free.unavailable, 1);
  assert.equal(logger.lines.length, 1);
});

test("an answer to a call sent before the switch is not the server back: each switch logged once", async () => {
  const server = new Server("redis", true);
  started.push(server);
  await server.start();
  const c = await createClient({ url: server.url }).connect();
  const admin = await createClient({ url: server.url }).connect();
  try {
    const logger = keeping();
    const insurance = new Insurance({ nodes: 2, logger });
    const live = new Limiter(c, { insurance });
    const closed = closedLimiter({ insurance }); // the same insurance, its server out of reach
    assert.ok(!(await live.fixed("k", 10, "1h")).insured);
    // A call sent to the live server, held there (its writes paused) until after the switch on.
    await admin.sendCommand(["CLIENT", "PAUSE", "30000", "WRITE"]);
    let late;
    try {
      late = live.fixed("k", 10, "1h");
      const blocked = async () => /blocked_clients:([1-9])/.test(String(await admin.sendCommand(["INFO", "clients"])));
      const deadline = Date.now() + 30_000;
      while (!(await blocked())) {
        assert.ok(Date.now() < deadline, "the call was not held");
        await sleep(10);
      }
      assert.ok((await closed.fixed("k", 10, "1h")).insured && insurance.on);
    } finally {
      await admin.sendCommand(["CLIENT", "UNPAUSE"]);
    }
    const answered = await late;
    assert.ok(answered.allowed && !answered.insured && answered.remaining === 8);
    assert.ok(insurance.on); // an answer to a call sent before the switch
    assert.ok((await closed.fixed("k", 10, "1h")).insured);
    assert.equal(logger.lines.length, 1);
    // A call sent while on, answered: the server is back, logged once.
    assert.equal((await live.fixed("k", 10, "1h")).remaining, 7);
    assert.ok(!insurance.on);
    assert.deepEqual(logger.lines.map(([level]) => level), ["error", "warn"]);
  } finally {
    await c.close();
    await admin.close();
  }
});

test("the windows are bounded, the option checked, and insurance off by default", async () => {
  const insurance = new Insurance({ nodes: 2, maxWindows: 100, logger: keeping() });
  const limiter = closedLimiter({ insurance });
  for (let i = 0; i < 1000; i++) assert.ok((await limiter.fixed(`k${i}`, 10, "1h")).insured);
  assert.equal(insurance.size, 100);
  assert.equal(insurance.highWater, 100);
  for (const bad of [0, -1, 1_000_001, 1.5, "4", true]) {
    assert.throws(() => new Limiter(async () => 1, { insurance: { nodes: bad } }), ConfigurationError);
  }
  assert.equal(new Limiter(async () => 1).insurance, undefined);
});
