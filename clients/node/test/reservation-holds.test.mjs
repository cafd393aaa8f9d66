// A reservation never gives back what was not spent, nor what no longer counts (docs/node.md,
// "Reservations"): a SHADOW policy's denial reserves nothing (the application still proceeds,
// and its settlement writes nothing), a LEAKY policy's admissions (their retryAfterMs the
// queue's delay) are settled as admissions, a DEBIT or REFUND (a settlement's too) is never
// `shadowed`, a layer given a null cost reserves the estimate, and no REFUND goes to a layer
// whose reply's resetAfterMs has passed. On Redis 7.0 and Valkey 9.1, with the module and
// through the Functions library, through node-redis and ioredis.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Limiter, policy } from "redis-rl";

import { CLIENTS } from "./clients.mjs";
import { sleep } from "./http.mjs";
import { closeAll, libraryWithPolicies, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

const HOUR = 3_600_000;

/** The policies the tests name, defined once per server. */
const POLICIES = {
  shadow: "FIXED 8 1h SHADOW",
  enforced: "FIXED 8 1h",
  leaky: "LEAKY 3 1 1h",
  shadowLeaky: "LEAKY 2 1 1h SHADOW",
  bucket: "TOKENBUCKET 10 10 1h",
};

/** The deciding calls the server has run: the module's commands but RL.POLICY, and FCALL. */
async function decisionsSent(raw) {
  const info = String(await raw(["INFO", "commandstats"]));
  let n = 0;
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === "fcall" || (name.startsWith("rl.") && !name.startsWith("rl.policy"))) n += Number(calls);
  }
  return n;
}

/** What the server holds under `key`: its type, value and whether it expires. */
async function state(raw, key) {
  const type = String(await raw(["TYPE", key]));
  const value = type === "string" ? await raw(["GET", key]) : await raw(["ZRANGE", key, "0", "-1", "WITHSCORES"]);
  return JSON.stringify([type, value, Number(await raw(["PTTL", key])) > 0]);
}

for (const server of servers) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`${server.label} through ${kind}`, () => {
      let c;
      const key = (k) => `${kind}:${k}`;
      before(async () => {
        server.reset();
        c = await connect(server.url);
        if (server.withModule) {
          for (const [name, d] of Object.entries(POLICIES)) await c.raw(["RL.POLICY", "SET", name, ...d.split(" ")]);
        } else {
          const lines = Object.entries(POLICIES).map(([name, d]) => `${name} ${d}`);
          await c.raw(["FUNCTION", "LOAD", "REPLACE", libraryWithPolicies(lines)]);
        }
      });
      after(() => c.close());

      test("a shadowed denial reserves nothing, and its settlement writes nothing", async () => {
        const limiter = new Limiter(c.client);
        assert.equal((await limiter.limit(key("s"), "shadow", { cost: 8 })).allowed, true);
        assert.equal((await limiter.limit(key("e"), "enforced", { cost: 8 })).allowed, true);
        assert.equal((await limiter.limit(key("e"), "enforced", { cost: 5 })).allowed, false); // what enforcement answers
        const held = await state(c.raw, key("s"));
        const { decision, reservation } = await limiter.reserve(key("s"), "shadow", 5);
        assert.deepEqual([decision.allowed, decision.shadowed, decision.remaining], [true, true, 0]);
        assert.ok(decision.retryAfterMs > 0);
        assert.ok(reservation !== null); // proceed
        const before = await decisionsSent(c.raw);
        const settled = await reservation.settle(0);
        assert.equal(await state(c.raw, key("s")), held); // no REFUND 5: nothing was spent
        assert.equal(await decisionsSent(c.raw), before);
        assert.deepEqual([settled, reservation.settled, reservation.layers], [null, true, 0]);
        // The shadow key holds what enforcement holds: 8 of 8, as its twin.
        assert.equal((await limiter.peek(key("s"), "shadow", { cost: 0 })).remaining, 0);
        assert.equal((await limiter.peek(key("e"), "enforced", { cost: 0 })).remaining, 0);
        const more = await limiter.reserve(key("s"), "shadow", 5);
        assert.equal(await more.reservation.settle(50), null); // no DEBIT either
        assert.equal(await state(c.raw, key("s")), held);
      });

      test("reserveAll settles no layer a SHADOW policy denied", async () => {
        const limiter = new Limiter(c.client);
        const s = `{${kind}:u}:s`;
        await limiter.limit(s, "shadow", { cost: 8 });
        const held = await state(c.raw, s);
        const both = await limiter.reserveAll([[`{${kind}:u}:rpm`, policy.fixed(100, "1h"), 1], [s, "shadow"]], 5);
        assert.deepEqual([both.decision.allowed, both.decision.layers[1].shadowed], [true, true]);
        const none = await both.reservation.settle(0);
        assert.equal(await state(c.raw, s), held);
        assert.deepEqual([none, both.reservation.layers], [null, 0]);
        const two = await limiter.reserveAll([[s, "shadow"], [`{${kind}:u}:tpm`, policy.fixed(100, "1h")]], 30);
        assert.equal(two.reservation.layers, 1);
        const settled = await two.reservation.settle(10); // REFUND 20 on tpm alone
        assert.deepEqual(settled.layers.map((d) => d.remaining), [90]);
        assert.equal(await state(c.raw, s), held);
      });

      test("a LEAKY policy's admissions are settled as admissions", async () => {
        const limiter = new Limiter(c.client);
        const q = key("q");
        await limiter.reserve(q, "leaky", 1);
        const second = await limiter.reserve(q, "leaky", 1);
        assert.ok(second.decision.retryAfterMs > 0 && second.decision.remaining === 1 && !second.decision.shadowed);
        const last = await limiter.reserve(q, "leaky", 1); // the queue's last place: 2 hours ahead
        assert.deepEqual([last.decision.allowed, last.decision.remaining, last.decision.shadowed], [true, 0, false]);
        assert.ok(last.decision.retryAfterMs > HOUR);
        assert.equal(last.reservation.layers, 1);
        assert.equal((await last.reservation.settle(0)).remaining, 1); // REFUND 1: its place back
        assert.equal((await second.reservation.settle(3)).remaining, 0); // DEBIT 2
        const denied = await limiter.reserve(q, "leaky", 1);
        assert.deepEqual([denied.decision.allowed, denied.reservation], [false, null]);
      });

      test("a SHADOW LEAKY policy reads its last place as a shadowed denial", async () => {
        const limiter = new Limiter(c.client);
        const q = key("sq");
        assert.equal((await limiter.reserve(q, "shadowLeaky", 1)).reservation.layers, 1);
        const last = await limiter.reserve(q, "shadowLeaky", 1);
        assert.deepEqual([last.decision.shadowed, last.reservation.layers], [true, 0]);
        const denied = await limiter.reserve(q, "shadowLeaky", 1); // a shadowed denial: nothing written
        const held = await state(c.raw, q);
        assert.deepEqual([denied.decision.allowed, denied.decision.shadowed], [true, true]);
        assert.equal(await denied.reservation.settle(0), null);
        assert.equal(await state(c.raw, q), held);
      });

      test("a DEBIT, a REFUND and a settlement into debt are never shadowed", async () => {
        const limiter = new Limiter(c.client);
        const debt = await limiter.debit(key("d"), "bucket", 15);
        assert.deepEqual([debt.allowed, debt.remaining, debt.shadowed], [true, 0, false]);
        assert.ok(debt.retryAfterMs > 0);
        const { reservation } = await limiter.reserve(key("r"), "bucket", 5);
        const settled = await reservation.settle(20); // DEBIT 15: into debt
        assert.deepEqual([settled.remaining, settled.shadowed], [0, false]);
        const together = await limiter.reserveAll([[`{${kind}:t}:a`, "bucket"], [`{${kind}:t}:b`, "bucket"]], 5);
        const intoDebt = await together.reservation.settle(30);
        assert.deepEqual(intoDebt.layers.map((d) => [d.remaining, d.shadowed]), [[0, false], [0, false]]);
        assert.equal((await limiter.refund(key("d"), "bucket", 1)).shadowed, false);
      });

      test("a layer of a null or undefined cost reserves the estimate and is settled", async () => {
        const limiter = new Limiter(c.client);
        const tokens = policy.fixed(100, "1h");
        for (const none of [null, undefined]) {
          const k = `{${kind}:n:${none}}`;
          const { decision, reservation } = await limiter.reserveAll([[`${k}:rpm`, policy.fixed(5, "1h"), 1], [`${k}:tpm`, tokens, none]], 30);
          assert.deepEqual(decision.layers.map((d) => d.remaining), [4, 70]);
          assert.equal(reservation.layers, 1);
          assert.deepEqual((await reservation.settle(10)).layers.map((d) => d.remaining), [90]);
        }
      });

      test("no REFUND once the reserved units no longer count; a DEBIT still", async () => {
        const limiter = new Limiter(c.client);
        const window = policy.fixed(10, "2s");
        const w = key("w");
        const first = await limiter.reserve(w, window, 6);
        await sleep(first.decision.resetAfterMs + 50);
        assert.equal((await limiter.decide(w, window, { cost: 8 })).remaining, 2); // the next window's own
        const held = await state(c.raw, w);
        const before = await decisionsSent(c.raw);
        assert.equal(await first.reservation.settle(1), null); // no REFUND 5
        assert.equal(await decisionsSent(c.raw), before);
        assert.equal(await state(c.raw, w), held);
        const over = await limiter.reserve(key("v"), window, 2);
        await sleep(over.decision.resetAfterMs + 50);
        assert.equal((await over.reservation.settle(5)).remaining, 7); // DEBIT 3, in the window it lands in
        // reserveAll: each layer by its own reply's resetAfterMs.
        const both = await limiter.reserveAll([[`{${kind}:a}:short`, policy.fixed(10, "2s")],
          [`{${kind}:a}:long`, policy.slidingLog(10, "1h")]], 6);
        await sleep(2_050);
        const settled = await both.reservation.settle(1); // REFUND 5 on the hour's log alone
        assert.deepEqual(settled.layers.map((d) => d.remaining), [9]);
        assert.equal(Number(await c.raw(["EXISTS", `{${kind}:a}:short`])), 0);
      });
    });
  }
}
