// Calendar quotas through the package (`policy.quota`: `RL.QUOTA key limit DAY|WEEK|MONTH [TZ
// zone] [ANCHOR a]`): the words sent in calls, RL.ALL clauses and RL.PEEK, the headers
// (`RateLimit-Policy`'s `w` is the current period's length in whole days, `X-RateLimit-Reset`
// the renewal), and on real servers single calls, layers, named policies, peeks, reservations,
// the denial cache (a quota's denial cached until the renewal), the insurance (the count
// divided by the processes, per period) and the Express middleware over HTTP. On Redis 7.0 and
// Valkey 9.1, with the module and without it (the Functions library), through node-redis and
// ioredis. The renewals expected are computed here with Intl's time zones, independently of
// the package's arithmetic.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConfigurationError, Decision, Limiter, header, policy, rateLimitLayers } from "redis-rl";

import { CLIENTS } from "./clients.mjs";
import { serve } from "./http.mjs";
import { closeAll, libraryWithPolicies, noQuota, startAll } from "./servers.mjs";

const servers = await startAll();
after(() => closeAll(servers));

const DAY = 86_400_000;
const utc = (y, m, d, h = 0) => Date.UTC(y, m - 1, d, h);

/** The server's clock in ms. */
async function serverMs(raw) {
  const [s, us] = await raw(["TIME"]);
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** `ms` as a wall time in `zone`: [year, month, day, hour, minute]. */
function wall(ms, zone) {
  const parts = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric",
    day: "numeric", hour: "numeric", minute: "numeric" }).formatToParts(new Date(ms));
  const get = (t) => Number(parts.find((p) => p.type === t).value);
  return [get("year"), get("month"), get("day"), get("hour"), get("minute")];
}

/** The instant of midnight starting local date y-m-d in `zone` (no DST change at midnight). */
function midnight(y, m, d, zone) {
  let t = Date.UTC(y, m - 1, d);
  for (let i = 0; i < 2; i++) {
    const [wy, wm, wd, wh, wmin] = wall(t, zone);
    t -= Date.UTC(wy, wm - 1, wd, wh, wmin) - Date.UTC(y, m - 1, d);
  }
  return t;
}

/** A month's renewals around `now` for an anchor on `day` at 00:00 in `zone`: { start, end,
 * days } (instants in ms, and the period's length in calendar days). */
function renewals(now, zone, day) {
  const on = (y, m) => {
    const [ny, nm] = m === 12 ? [y + 1, 1] : [y, m + 1];
    const last = (Date.UTC(ny, nm - 1, 1) - Date.UTC(y, m - 1, 1)) / DAY;
    return [y, m, Math.min(day, last)];
  };
  const [y, m] = wall(now, zone);
  let cur = on(y, m);
  let next;
  if (midnight(...cur, zone) > now) {
    next = cur;
    cur = on(...(m === 1 ? [y - 1, 12] : [y, m - 1]));
  } else {
    next = on(...(m === 12 ? [y + 1, 1] : [y, m + 1]));
  }
  const days = (Date.UTC(next[0], next[1] - 1, next[2]) - Date.UTC(cur[0], cur[1] - 1, cur[2])) / DAY;
  return { start: midnight(...cur, zone), end: midnight(...next, zone), days };
}

test("a quota is its limit, unit, zone and anchor, then its penalty", async () => {
  const sent = [];
  const limiter = new Limiter(async (args) => {
    sent.push(args);
    return args[0] === "RL.ALL" ? [1, 5, 4, 0, 0, [[1, 5, 4, 0, 0], [1, 5, 4, 0, 0]]] : [1, 5, 4, 0, 0];
  });
  const p = policy.quota(10000, "month", { tz: "Europe/Paris", anchor: "2026-01-15T00:00", penalty: "1h" });
  assert.deepEqual(p.params, ["10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR", "2026-01-15T00:00"]);
  assert.deepEqual(p.calendar, ["MONTH", 15]);
  await limiter.decide("k", p, { cost: 3 });
  await limiter.peek("k", p);
  await limiter.all([["a", policy.quota(5, "DAY")], ["b", policy.fixed(5, "1m")]]);
  await limiter.quota("k", 7, "week", { tz: "+05:30" });
  assert.deepEqual(sent, [
    ["RL.QUOTA", "k", "10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR", "2026-01-15T00:00", "PENALTY", "1h", "COST", "3"],
    ["RL.PEEK", "QUOTA", "k", "10000", "MONTH", "TZ", "Europe/Paris", "ANCHOR", "2026-01-15T00:00"],
    ["RL.ALL", "2", "a", "b", "QUOTA", "5", "DAY", "FIXED", "5", "1m"],
    ["RL.QUOTA", "k", "7", "WEEK", "TZ", "+05:30"],
  ]);
  assert.deepEqual(policy.named(p, "plan").calendar, p.calendar); // a name keeps the calendar
  assert.throws(() => policy.quota(1, "YEAR"), (e) => e instanceof ConfigurationError && /DAY, WEEK or MONTH/.test(e.message));
});

test("a month's period is its days from the renewal before", () => {
  for (const [day, renewal, days] of [
    [31, utc(2026, 2, 27, 23), 28], // Jan 31 -> Feb 28 (Paris midnight, 23:00 UTC)
    [31, utc(2026, 3, 30, 22), 31], // Feb 28 -> Mar 31 (summer time: 22:00 UTC)
    [31, utc(2026, 4, 29, 22), 30], // Mar 31 -> Apr 30
    [31, utc(2024, 2, 28, 23), 29], // a leap year's Jan 31 -> Feb 29
    [1, utc(2026, 2, 28, 23), 28], // Feb 1 -> Mar 1 in Paris, Feb 28 in UTC
    [1, utc(2026, 3, 1, 5), 28], // Mar 1 at 00:00 in New York
    [15, utc(2026, 1, 14, 23), 31], // Dec 15 -> Jan 15
    [1, utc(2026, 1, 1, 0), 31], // UTC: Dec 1 -> Jan 1
    [1, utc(2025, 12, 31, 10), 31], // Jan 1 at 00:00 in Kiritimati (+14:00)
  ]) {
    assert.equal(policy.quotaPeriodSeconds(["MONTH", day], renewal), days * 86_400, `${day} ${new Date(renewal).toISOString()}`);
  }
});

test("a quota's IETF policy is its current period, its reset the renewal", () => {
  const now = Date.now();
  const { end, days } = renewals(now, "Europe/Paris", 31);
  const reset = end - now;
  const p = policy.quota(10000, "MONTH", { tz: "Europe/Paris", anchor: "2026-01-31T00:00", name: "month" });
  const got = new Decision(true, 10000, 9999, 0, reset, "module", p).allHeaders();
  assert.equal(got["RateLimit-Policy"], `"month";q=10000;w=${days * 86_400}`);
  assert.equal(got["X-RateLimit-Reset"], String(Math.ceil(reset / 1000)));
  assert.equal(got.RateLimit, `"month";r=9999;t=${Math.ceil(reset / 1000)}`);
  assert.equal(new Decision(false, 3, 0, 5000, 5000, "module", policy.quota(3, "day", { name: "d" })).ietfHeaders()["RateLimit-Policy"],
    '"d";q=3;w=86400');
  assert.equal(new Decision(true, 3, 2, 0, 9, "module", policy.quota(3, "WEEK")).ietfHeaders()["RateLimit-Policy"],
    '"default";q=3;w=604800');
});

test("insurance gives each process its share of the period", async () => {
  const limiter = new Limiter(async () => {
    throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
  }, { insurance: { nodes: 4, logger: { error() {}, warn() {} } } });
  const p = policy.quota(10, "MONTH", { tz: "Europe/Paris" });
  const got = [];
  for (let i = 0; i < 3; i++) got.push(await limiter.decide("k", p));
  assert.deepEqual(got.map((d) => [d.allowed, d.insured]), [[true, true], [true, true], [false, true]]);
  assert.ok(got[2].limit === 2 && got[2].retryAfterMs > 30 * DAY, JSON.stringify(got[2]));
  assert.deepEqual(limiter.insurance.share(policy.quota(7, "DAY")), [1, DAY]);
  assert.deepEqual(limiter.insurance.share(policy.quota(70, "WEEK")), [17, 7 * DAY]);
});

for (const server of servers) {
  const skip = await noQuota(server);
  for (const [kind, connect] of Object.entries(CLIENTS)) {
    describe(`quotas on ${server.label} through ${kind}`, { skip }, () => {
      let c;
      let limiter;
      before(async () => {
        server.reset();
        c = await connect(server.url);
        limiter = new Limiter(c.client);
      });
      after(() => c?.close());

      test("a quota counts until the renewal in its zone", async () => {
        const key = `q:${kind}`;
        const p = policy.quota(3, "MONTH", { tz: "Europe/Paris", anchor: "2026-01-15T00:00" });
        const t0 = await serverMs(c.raw);
        const got = [];
        for (let i = 0; i < 4; i++) got.push(await limiter.decide(key, p));
        const t1 = await serverMs(c.raw);
        assert.deepEqual(got.map((d) => [d.allowed, d.remaining]), [[true, 2], [true, 1], [true, 0], [false, 0]]);
        const { end } = renewals(t0, "Europe/Paris", 15);
        const denied = got[3];
        assert.ok(end - t1 <= denied.retryAfterMs && denied.retryAfterMs <= end - t0, `${denied.retryAfterMs} ${end - t0}`);
        assert.equal(denied.resetAfterMs, denied.retryAfterMs);
        assert.ok(String(await c.raw(["GET", key])).endsWith(`:${end}:3:MONTH 2026-01-15T00:00 Europe/Paris`));
        assert.equal((await limiter.peek(key, p, { cost: 0 })).remaining, 0);
        assert.equal((await limiter.refund(key, p, 2)).remaining, 2);
        assert.equal((await limiter.debit(key, p, 5)).remaining, 0);
      });

      test("a quota layer in RL.ALL, and an unknown zone", async () => {
        const month = policy.quota(2, "MONTH", { name: "month" });
        const minute = policy.slidingLog(10, "1m", { name: "minute" });
        const layers = [[`{${kind}}:minute`, minute], [`{${kind}}:month`, month]];
        const allowed = [];
        for (let i = 0; i < 3; i++) allowed.push((await limiter.all(layers)).allowed);
        assert.deepEqual(allowed, [true, true, false]);
        const denied = await limiter.all(layers);
        assert.equal(denied.index, 1);
        assert.equal(denied.binding.policy.name, "month");
        assert.equal((await limiter.peek(`{${kind}}:minute`, minute, { cost: 0 })).remaining, 8);
        await assert.rejects(limiter.decide(`z:${kind}`, policy.quota(1, "DAY", { tz: "Mars/Olympus" })),
          (e) => e instanceof ConfigurationError && /unknown time zone 'Mars\/Olympus'/.test(e.message));
      });

      test("a quota's denial is cached until the renewal", async () => {
        const key = `d:${kind}`;
        const p = policy.quota(1, "DAY", { tz: "+05:30" });
        assert.equal((await limiter.decide(key, p)).allowed, true);
        const first = await limiter.decide(key, p);
        assert.ok(!first.allowed && !first.cached);
        const cached = await limiter.decide(key, p);
        assert.ok(cached.cached && !cached.allowed);
        assert.ok(cached.retryAfterMs <= first.retryAfterMs && cached.retryAfterMs > first.retryAfterMs - 60_000);
        // The server's renewal: midnight at +05:30, 18:30 UTC.
        const now = await serverMs(c.raw);
        let renewal = Math.floor(now / DAY) * DAY + 18.5 * 3_600_000;
        if (renewal <= now) renewal += DAY;
        assert.ok(first.retryAfterMs <= renewal - now + 1000, `${first.retryAfterMs} ${renewal - now}`);
      });

      test("reserveAll settles a monthly budget beside the minute", async () => {
        const rpm = policy.slidingLog(5, "1m", { name: "rpm" });
        const budget = policy.quota(100, "MONTH", { name: "budget" });
        const layers = [[`{o${kind}}:rpm`, rpm, 1], [`{o${kind}}:month`, budget]];
        const first = await limiter.reserveAll(layers, 40);
        assert.deepEqual(first.decision.layers.map((d) => d.remaining), [4, 60]);
        assert.equal((await first.reservation.settle(25)).layers[0].remaining, 75);
        const again = await limiter.reserveAll(layers, 70);
        assert.equal((await again.reservation.settle(90)).binding.remaining, 0); // 15 over: debt to the renewal
        const denied = await limiter.reserveAll(layers, 1);
        assert.equal(denied.reservation, null);
        assert.equal(denied.decision.binding.policy.name, "budget");
        assert.equal((await limiter.peek(`{o${kind}}:rpm`, rpm, { cost: 0 })).remaining, 3);
      });

      test("the middleware sends a quota's period and renewal", async () => {
        const prefix = `mw${kind}`;
        const month = policy.quota(2, "MONTH", { tz: "Europe/Paris", anchor: "2026-01-31T00:00" });
        const http = await serve(rateLimitLayers({ limiter, prefix, layers: [{ name: "month", identify: header("x-client"), policy: month }] }));
        try {
          const t0 = await serverMs(c.raw);
          const got = [];
          for (let i = 0; i < 3; i++) got.push(await fetch(`${http.url}/`, { headers: { "x-client": "acme" } }));
          const t1 = await serverMs(c.raw);
          assert.deepEqual(got.map((r) => r.status), [200, 200, 429]);
          const { end, days } = renewals(t0, "Europe/Paris", 31);
          for (const r of got) {
            assert.equal(r.headers.get("ratelimit-policy"), `"month";q=2;w=${days * 86_400}`);
            const reset = Number(r.headers.get("x-ratelimit-reset"));
            assert.ok(Math.ceil((end - t1) / 1000) <= reset && reset <= Math.ceil((end - t0) / 1000), String(reset));
          }
          assert.equal(got[2].headers.get("retry-after"), got[2].headers.get("x-ratelimit-reset"));
        } finally {
          await http.close();
        }
      });
    });
  }

  describe(`a named quota on ${server.label}`, { skip }, () => {
    let c;
    let limiter;
    before(async () => {
      server.reset();
      c = await CLIENTS["node-redis"](server.url);
      limiter = new Limiter(c.client);
      const definition = ["QUOTA", "2", "WEEK", "TZ", "America/New_York", "ANCHOR", "2026-03-01T09:00"];
      if (server.withModule) await c.raw(["RL.POLICY", "SET", "plan-week", ...definition]);
      else await c.raw(["FUNCTION", "LOAD", "REPLACE", libraryWithPolicies([["plan-week", ...definition].join(" ")])]);
    });
    after(async () => {
      if (server.withModule) await c?.raw(["RL.POLICY", "DEL", "plan-week"]);
      await c?.close();
    });

    test("a named quota is used by its name", async () => {
      const allowed = [];
      for (let i = 0; i < 3; i++) allowed.push((await limiter.limit("n", "plan-week")).allowed);
      assert.deepEqual(allowed, [true, true, false]);
      assert.equal((await limiter.peek("n", "plan-week", { cost: 0 })).remaining, 0);
      const layered = await limiter.all([["{n}:a", "plan-week"], ["{n}:b", policy.quota(9, "DAY")]]);
      assert.ok(layered.allowed && layered.binding.remaining === 1);
      assert.ok(String(await c.raw(["GET", "n"])).endsWith(":2:WEEK 2026-03-01T09:00 America/New_York"));
    });
  });
}
