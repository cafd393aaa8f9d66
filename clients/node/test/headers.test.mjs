// The headers of docs/commands.md's tables ("The shared reply", "The IETF RateLimit fields"),
// from decisions built by hand: no server needed.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Decision, policy } from "redis-rl";

const decision = (allowed, limit, remaining, retry, reset, p) =>
  new Decision(allowed, limit, remaining, retry, reset, "module", p);

test("the X-RateLimit headers round seconds up", () => {
  assert.deepEqual(decision(true, 20, 19, 0, 1001).headers(),
    { "X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19", "X-RateLimit-Reset": "2" });
  assert.equal(decision(true, 5, 5, 0, 0).headers()["X-RateLimit-Reset"], "0");
});

test("Retry-After is sent on a denial only, and never for never", () => {
  assert.equal(decision(false, 5, 0, 27_000, 27_000).headers()["Retry-After"], "27");
  assert.equal(decision(false, 5, 0, 1, 1).headers()["Retry-After"], "1");
  assert.equal(decision(false, 5, 5, -1, 0).headers()["Retry-After"], undefined);
  assert.equal(decision(true, 5, 3, 400, 800).headers()["Retry-After"], undefined); // a leaky delay
});

test("the IETF policy is the rate or the window", () => {
  const cases = [
    [policy.gcra(100, "1s", { burst: 20 }), "q=100;w=1"],
    [policy.tokenBucket(60, 10, "1m"), "q=10;w=60"],
    [policy.leaky(5, 1, 2), "q=1;w=2"],
    [policy.sliding(100, "1500ms"), "q=100;w=2"],
    [policy.slidingLog(7, 3600), "q=7;w=3600"],
    [policy.fixed(10_000, "1d"), "q=10000;w=86400"],
  ];
  for (const [p, field] of cases) {
    assert.deepEqual(decision(true, 20, 19, 0, 1500, p).ietfHeaders("api"),
      { "RateLimit-Policy": `"api";${field}`, RateLimit: '"api";r=19;t=2' });
  }
});

test("the policy name defaults to the policy's own, else default", () => {
  const d = decision(false, 5, 0, 9001, 9001, policy.fixed(5, "1m", { name: "export" }));
  assert.deepEqual(d.ietfHeaders(),
    { "RateLimit-Policy": '"export";q=5;w=60', RateLimit: '"export";r=0;t=10', "Retry-After": "10" });
  assert.equal(decision(true, 5, 4, 0, 10).ietfHeaders().RateLimit, '"default";r=4;t=1');
  assert.equal(d.allHeaders()["X-RateLimit-Remaining"], "0");
});

test("durations and counts are checked before anything is sent", () => {
  assert.deepEqual(policy.gcra(10, "1500ms").params, ["10", "1500ms"]);
  assert.deepEqual(policy.fixed(1, 60).params, ["1", "60"]);
  assert.throws(() => policy.fixed(1, 1.5), TypeError);
  assert.throws(() => policy.fixed(1.5, 60), TypeError);
});
