// Type-checked against the installed package (test/types.test.mjs): the declarations let a
// TypeScript user write this, and reject the lines marked @ts-expect-error.
import express from "express";
import { type Decision, Limiter, clientIp, clientSubnet, ipKey, policy, rateLimitLayers } from "redis-rl";

// The middleware is an Express request handler.
express().use(rateLimitLayers({
  limiter: new Limiter(async (args: string[]) => args),
  layers: [{ name: "ip", identify: clientIp, policy: (req) => (req.path === "/x" ? policy.gcra(1, 1) : undefined) }],
}));

// A tag names one of the layers; it is not a function of the request.
const ipLayer = { name: "ip", identify: clientSubnet(64), policy: policy.fixed(3, "1m") };
express().use(rateLimitLayers({ limiter: new Limiter(async (args: string[]) => args), tag: "ip", layers: [ipLayer] }));
// @ts-expect-error the tag is a layer's name
rateLimitLayers({ limiter: new Limiter(async (args: string[]) => args), tag: (req) => req.ip, layers: [ipLayer] });
export const subnet: string = ipKey("2001:db8::1", 48);

export async function check(limiter: Limiter): Promise<string> {
  const d: Decision = await limiter.gcra("user:42", 10, "1s", { burst: 5 });
  const all = await limiter.all([["{a}:1", policy.fixed(5, "1m")], ["{a}:2", policy.sliding(9, 60), 2]]);
  const released: boolean = await limiter.release("k", "lease");
  // @ts-expect-error a count is a number
  await limiter.fixed("k", "5", "1m");
  // @ts-expect-error decisions are read-only
  d.allowed = false;
  return `${d.remaining} ${all.binding.retryAfterMs} ${released} ${d.headers()["X-RateLimit-Limit"]}`;
}

// Named policies: a server policy's name wherever a policy is taken, and the middleware's
// shadow switch.
import { type PolicyOrName, type ShadowDenial, header } from "redis-rl";

export async function byName(limiter: Limiter): Promise<boolean> {
  const d: Decision = await limiter.limit("user:42", "free", { cost: 2, blockMs: 100 });
  const p: PolicyOrName = "pro";
  const peeked = await limiter.peek("user:42", p, { cost: 3 });
  const all = await limiter.all([["{a}:1", "free"], ["{a}:2", policy.fixed(5, "1m"), 2]]);
  const name: string | undefined = d.policyName;
  // @ts-expect-error a policy is a policy object or a name
  await limiter.limit("k", 42);
  // @ts-expect-error shadowed is read, not written
  d.shadowed = true;
  return d.shadowed && peeked.allowed && all.layers[0]?.shadowed === true && name !== undefined;
}

const report = (denial: ShadowDenial, req: { path?: string }) => console.log(denial.layer, denial.key, denial.decision.retryAfterMs, req.path);
express().use(rateLimitLayers({
  limiter: new Limiter(async (args: string[]) => args), shadow: true, onShadowDenied: report,
  layers: [{ name: "user", identify: header("x-user"), policy: "free" },
    { name: "plan", identify: header("x-plan"), policy: (req) => (req.path === "/x" ? "pro" : policy.fixed(5, "1m")) }],
}));
// @ts-expect-error shadow is true or false
rateLimitLayers({ limiter: new Limiter(async (args: string[]) => args), shadow: "yes", layers: [ipLayer] });

// The framework adapters: RlStore is an express-rate-limit Store, RateLimiterRl resolves
// rate-limiter-flexible's RateLimiterRes fields.
import type { Store } from "express-rate-limit";
import { RlStore } from "redis-rl";
import { RateLimiterRl } from "redis-rl/rate-limiter-flexible";

export function stores(send: (...args: string[]) => Promise<unknown>, client: unknown): [Store, Promise<number>] {
  const store: Store = new RlStore({ sendCommand: send, prefix: "rl:" });
  const limiter = new RateLimiterRl({ storeClient: client, points: 10, duration: 60, blockDuration: 30 });
  // @ts-expect-error points are a number
  new RateLimiterRl({ storeClient: client, points: "10", duration: 60 });
  return [store, limiter.consume("ip").then((r) => r.msBeforeNext + r.remainingPoints)];
}

// The errors: one base, a class per case, narrowed by instanceof.
import { ConfigurationError, ForeignKeyError, LibraryUnavailableError, RlError, ServerUnavailableError } from "redis-rl";

export function handled(err: unknown): string {
  if (err instanceof ForeignKeyError) return `foreign ${err.holds} ${err.code}`;
  if (err instanceof ServerUnavailableError || err instanceof LibraryUnavailableError) return `retry later: ${String(err.cause)}`;
  if (err instanceof ConfigurationError) return err.message;
  // @ts-expect-error a foreign key's `holds` is one of three words
  const holds: ForeignKeyError["holds"] = "list";
  return err instanceof RlError ? err.code : holds;
}

// DEBIT and reservations: reserve resolves a decision and a reservation (null when denied);
// settle resolves the decision of its call, or null when nothing was sent.
import { type AllDecision, type Reservation, type Reserved, ReservationSettledError } from "redis-rl";

export async function reserved(limiter: Limiter): Promise<number> {
  const debited: Decision = await limiter.debit("user:42", policy.slidingLog(10_000, "1m"), 120);
  const { decision, reservation }: Reserved<Decision> = await limiter.reserve("user:42", "tpm", 500);
  const settled: Decision | null = reservation ? await reservation.settle(420) : null;
  const both = await limiter.reserveAll([["{k}:rpm", policy.fixed(60, "1m"), 1], ["{k}:tpm", policy.slidingLog(10_000, "1m")]], 300);
  const layers: Reservation<AllDecision> | null = both.reservation;
  const again: AllDecision | null = layers ? await layers.settle(250) : null;
  // @ts-expect-error an actual is a number
  await reservation?.settle("420");
  // @ts-expect-error settled is read, not written
  if (reservation) reservation.settled = false;
  // @ts-expect-error a single reservation's settlement is a Decision, not an AllDecision
  const wrong: AllDecision | null = reservation ? await reservation.settle(1) : null;
  try {
    await layers?.settle(250);
  } catch (err) {
    if (err instanceof ReservationSettledError) return layers?.estimate ?? 0;
  }
  return debited.remaining + decision.remaining + (settled?.remaining ?? 0) + (again?.binding.remaining ?? 0)
    + both.decision.layers.length + (wrong ? 1 : 0);
}

// Penalties and bans: a policy's { penalty, escalate }, the limiters' too, and ban().
import type { PenaltyOptions } from "redis-rl";

export async function penalties(limiter: Limiter): Promise<boolean> {
  const login = policy.fixed(5, "15m", { penalty: "15m", escalate: "24h", name: "login" });
  const opts: PenaltyOptions = { penalty: 60 };
  const d: Decision = await limiter.gcra("ip:1", 10, "1s", { burst: 5, ...opts, cost: 2 });
  const { reservation } = await limiter.reserve("login:alice", login, 1);
  const existed: boolean = await limiter.ban("login:mallory", 3_600_000);
  // @ts-expect-error a penalty is a duration
  policy.sliding(5, "1m", { penalty: true });
  // @ts-expect-error ban takes milliseconds, a number
  await limiter.ban("k", "1h");
  return existed && d.allowed && reservation !== null;
}
