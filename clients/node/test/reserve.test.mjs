// DEBIT and reservations (docs/node.md, "Reservations") on Redis 7.0 and Valkey 9.1, with the
// module and with the Functions library, through node-redis, ioredis and a recording
// sendCommand function: `debit` answers as the command itself on a twin key; `reserve`
// spends the estimate, and its reservation settles the difference once (DEBIT when more,
// whose debt denies the next request for the server's retry, REFUND when less, nothing when
// equal); `reserveAll` settles only the layers that reserved the estimate.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createClient } from "redis";
import {
  ConfigurationError, Limiter, Reservation, ReservationSettledError, RlError, policy,
} from "redis-rl";

import { CLIENTS as BOTH_CLIENTS } from "./clients.mjs";
import { closeAll, libraryWithPolicies, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

/** node-redis, ioredis, and a sendCommand function recording every line it sends. */
const CLIENTS = {
  ...BOTH_CLIENTS,
  recording: async (url) => {
    const c = await createClient({ url }).connect();
    const sent = [];
    const send = (args) => {
      sent.push(args);
      return c.sendCommand(args);
    };
    return { client: send, raw: (args) => c.sendCommand(args), sent, close: () => c.close() };
  },
};

const tuple = (d) => [d.allowed ? 1 : 0, d.limit, d.remaining];

/** The calls of `command` so far (INFO commandstats). */
async function calls(raw, command) {
  const info = String(await raw(["INFO", "commandstats"]));
  const m = new RegExp(`cmdstat_${command.replace(".", "\\.")}:calls=(\\d+)`, "i").exec(info);
  return m ? Number(m[1]) : 0;
}

for (const server of servers) {
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`${server.label} through ${kind}`, () => {
      let c;
      const backend = server.withModule ? "module" : "library";
      const spelt = (algo, key, ...rest) =>
        (server.withModule ? [`RL.${algo}`, key, ...rest] : ["FCALL", `rl_${algo.toLowerCase()}`, "1", key, ...rest]);
      const command = server.withModule ? "rl.slidinglog" : "fcall";
      // The lines the backend answered: a limiter's first call on a server without the
      // module is sent as the module's command first (refused), then as FCALL.
      const answered = (l) => (server.withModule ? l[0] !== "FCALL" : l[0] === "FCALL");
      before(async () => {
        server.reset();
        c = await connect(server.url);
        if (server.withModule) await c.raw(["RL.POLICY", "SET", "tpm", "SLIDINGLOG", "100", "1m"]);
        else await c.raw(["FUNCTION", "LOAD", "REPLACE", libraryWithPolicies(["tpm SLIDINGLOG 100 1m"])]);
      });
      after(() => c.close());

      test("debit answers as DEBIT on a twin key, never denied", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.fixed(5, "1m");
        for (const n of [3, 5, 1]) {
          const d = await limiter.debit(`${kind}:debit`, p, n);
          const w = (await c.raw(spelt("FIXED", `${kind}:debit:twin`, "5", "1m", "DEBIT", String(n)))).map(Number);
          assert.deepEqual(tuple(d), w.slice(0, 3));
          assert.ok(Math.abs(d.retryAfterMs - w[3]) < 1000 && Math.abs(d.resetAfterMs - w[4]) < 1000);
          assert.equal(d.allowed, true);
          assert.equal(d.backend, backend);
        }
        const denied = await limiter.decide(`${kind}:debit`, p);
        assert.equal(denied.allowed, false);
        assert.ok(denied.retryAfterMs > 0);
        // By a server policy's name: RL.LIMIT key name DEBIT n (FCALL rl_limit ... DEBIT n).
        const named = await limiter.debit(`${kind}:debit:named`, "tpm", 130);
        assert.deepEqual([named.allowed, named.remaining, named.policyName], [true, 0, "tpm"]);
        assert.ok(named.retryAfterMs > 59_000);
        assert.equal((await limiter.limit(`${kind}:debit:named`, "tpm")).allowed, false);
      });

      test("debit's arguments are refused as the server refuses them", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.fixed(5, "1m");
        await assert.rejects(limiter.debit(`${kind}:debit:bad`, p, 0),
          (err) => err instanceof ConfigurationError && /DEBIT must be an integer from 1 to 1000000000000/.test(err.message));
        await assert.rejects(limiter.debit(`${kind}:debit:bad`, p, 1.5), { name: "TypeError", message: /debit is an integer/ });
        await assert.rejects(limiter.debit(null, p, 1), { name: "TypeError", message: /key must be a string/ });
        assert.equal(Number(await c.raw(["EXISTS", `${kind}:debit:bad`])), 0);
      });

      test("reserve spends the estimate; denied, there is no reservation and nothing is spent", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.slidingLog(100, "1m");
        const { decision, reservation } = await limiter.reserve(`${kind}:r`, p, 60);
        assert.deepEqual([decision.allowed, decision.remaining, decision.backend], [true, 40, backend]);
        assert.ok(reservation instanceof Reservation);
        assert.deepEqual([reservation.estimate, reservation.settled], [60, false]);
        const denied = await limiter.reserve(`${kind}:r`, p, 50);
        assert.equal(denied.decision.allowed, false);
        assert.equal(denied.reservation, null);
        assert.equal((await limiter.peek(`${kind}:r`, p)).remaining, 39); // (what one more would leave)
        await assert.rejects(limiter.reserve(`${kind}:r`, p, 2.5), { name: "TypeError", message: /estimate is an integer/ });
      });

      test("settling more debits the difference: the debt denies the next request for the server's retry", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.tokenBucket(100, 10, "1s"); // 10 a second
        const { reservation } = await limiter.reserve(`${kind}:more`, p, 60);
        const settled = await reservation.settle(130); // DEBIT 70: 30 in debt
        assert.equal(reservation.settled, true);
        assert.deepEqual([settled.allowed, settled.remaining], [true, 0]);
        assert.ok(settled.retryAfterMs > 2_900 && settled.retryAfterMs <= 3_100, String(settled.retryAfterMs)); // 31 tokens
        const next = await limiter.decide(`${kind}:more`, p);
        assert.equal(next.allowed, false);
        assert.ok(next.retryAfterMs <= settled.retryAfterMs && next.retryAfterMs > settled.retryAfterMs - 500);
        if (kind === "recording") {
          assert.deepEqual(c.sent.filter((l) => answered(l) && l.includes(`${kind}:more`)).map((l) => l.slice(-2)),
            [["COST", "60"], ["DEBIT", "70"], ["10", "1s"]]);
        }
      });

      test("settling less refunds the difference", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.slidingLog(100, "1m");
        const { reservation } = await limiter.reserve(`${kind}:less`, p, 60);
        const settled = await reservation.settle(20); // REFUND 40
        assert.deepEqual([settled.allowed, settled.remaining], [true, 80]);
        assert.equal((await limiter.peek(`${kind}:less`, p)).remaining, 79);
        // By name, the same: RL.LIMIT key tpm COST 60, then REFUND 60.
        const byName = await limiter.reserve(`${kind}:less:named`, "tpm", 60);
        assert.equal((await byName.reservation.settle(0)).remaining, 100);
      });

      test("settling the estimate sends nothing", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.slidingLog(100, "1m");
        const { reservation } = await limiter.reserve(`${kind}:equal`, p, 60);
        const before = await calls(c.raw, command);
        const sentBefore = c.sent?.length;
        assert.equal(await reservation.settle(60), null);
        assert.equal(reservation.settled, true);
        assert.equal(await calls(c.raw, command), before);
        assert.equal(c.sent?.length, sentBefore);
        assert.equal((await limiter.peek(`${kind}:equal`, p)).remaining, 39);
      });

      test("a reservation settles once; an actual that is not a count is refused and settles nothing", async () => {
        const limiter = new Limiter(c.client);
        const p = policy.slidingLog(100, "1m");
        const { reservation } = await limiter.reserve(`${kind}:twice`, p, 10);
        for (const bad of [-1, 1.5, Number.NaN, "3", null]) {
          await assert.rejects(reservation.settle(bad), (err) => err instanceof ConfigurationError && /actual/.test(err.message));
        }
        assert.equal(reservation.settled, false);
        assert.equal((await reservation.settle(4)).remaining, 96);
        for (const actual of [4, 0, 50]) {
          await assert.rejects(reservation.settle(actual), (err) => err instanceof ReservationSettledError
            && err instanceof RlError && err.code === "ERR_RL_RESERVATION_SETTLED" && err.name === "ReservationSettledError");
        }
        assert.equal((await limiter.peek(`${kind}:twice`, p)).remaining, 95);
      });

      test("reserveAll reserves on the [key, policy] layers and settles them alone", async () => {
        const limiter = new Limiter(c.client);
        const rpm = policy.fixed(60, "1m", { name: "rpm" });
        const tpm = policy.slidingLog(1000, "1m", { name: "tpm" });
        const layers = [[`{${kind}}:rpm`, rpm, 1], [`{${kind}}:tpm`, tpm]];
        const { decision, reservation } = await limiter.reserveAll(layers, 300);
        assert.equal(decision.allowed, true);
        assert.deepEqual(decision.layers.map((d) => d.remaining), [59, 700]);
        const less = await reservation.settle(100); // REFUND 200 on tpm
        assert.deepEqual(less.layers.map((d) => d.remaining), [900]);
        assert.equal(less.binding.policy, tpm);
        const more = (await limiter.reserveAll(layers, 300)).reservation;
        assert.deepEqual((await more.settle(1500)).layers.map((d) => [d.allowed, d.remaining]), [[true, 0]]); // DEBIT 1200
        await assert.rejects(more.settle(1500), ReservationSettledError);
        const peeked = await limiter.all(layers, { peek: true });
        assert.deepEqual(peeked.layers.map((d) => d.remaining), [58, 0]); // rpm: its two requests only (the peek is denied by tpm)
        const denied = await limiter.reserveAll(layers, 1);
        assert.deepEqual([denied.decision.allowed, denied.decision.index, denied.reservation], [false, 1, null]);
        assert.equal((await limiter.peek(`{${kind}}:rpm`, rpm)).remaining, 57); // the denial spent nothing
        if (kind === "recording") {
          const alls = c.sent.filter((l) => answered(l) && l.includes(`{${kind}}:tpm`) && !l.includes("PEEK"));
          assert.deepEqual(alls.map((l) => l.slice(server.withModule ? 1 : 2).join(" ")), [
            `2 {${kind}}:rpm {${kind}}:tpm FIXED 60 1m SLIDINGLOG 1000 1m COST 300`,
            `1 {${kind}}:tpm SLIDINGLOG 1000 1m REFUND 200`,
            `2 {${kind}}:rpm {${kind}}:tpm FIXED 60 1m SLIDINGLOG 1000 1m COST 300`,
            `1 {${kind}}:tpm SLIDINGLOG 1000 1m DEBIT 1200`,
            `2 {${kind}}:rpm {${kind}}:tpm FIXED 60 1m SLIDINGLOG 1000 1m`,
          ]);
        }
      });

      test("reserveAll by names, and its arguments refused before anything is sent", async () => {
        const limiter = new Limiter(c.client);
        const { decision, reservation } = await limiter.reserveAll([[`{${kind}}:n:rpm`, policy.fixed(5, "1m"), 1], [`{${kind}}:n:tpm`, "tpm"]], 30);
        assert.deepEqual(decision.layers.map((d) => d.remaining), [4, 70]);
        assert.deepEqual((await reservation.settle(45)).layers.map((d) => [d.policyName, d.remaining]), [["tpm", 55]]);
        const p = policy.fixed(5, "1m");
        await assert.rejects(limiter.reserveAll([[`{${kind}}:x`, p, 1]], 3), { name: "RangeError", message: /reserve the estimate/ });
        await assert.rejects(limiter.reserveAll([], 3), RangeError);
        await assert.rejects(limiter.reserveAll([[`{${kind}}:x`, p]], 0.5), TypeError);
        await assert.rejects(limiter.reserveAll([[null, p]], 3), { name: "TypeError", message: /key must be a string/ });
        assert.equal(Number(await c.raw(["EXISTS", `{${kind}}:x`])), 0);
      });
    });
  }
}

test("a debit past the cap is sent as the cap (MAX_DEBT)", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => {
    sent.push(args);
    return [1, 5, 0, 0, 0];
  });
  const { reservation } = await limiter.reserve("k", policy.fixed(5, "1m"), 5);
  await reservation.settle(Number.MAX_SAFE_INTEGER);
  assert.deepEqual(sent.at(-1).slice(-2), ["DEBIT", "1000000000000"]);
});
