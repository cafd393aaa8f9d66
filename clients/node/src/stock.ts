/**
 * What the framework adapters share: the bounds the commands accept (both), checked when the
 * adapter is configured rather than at the first request; recognising a key a stock store
 * wrote (both). For `RlStore`: a transport from rate-limit-redis' `sendCommand` /
 * `sendCommandCluster` options; spending "as much as fits" of a fixed window; and taking over
 * a counter rate-limit-redis left on a key (a plain integer written by `INCR`), so that
 * switching stores under live traffic neither fails nor resets anyone. (`RateLimiterRl`
 * counts such a key the stock way instead, until it expires.)
 */
import type { Limiter } from "./limiter.js";
import type { Decision } from "./decision.js";
import { ForeignKeyError, refused } from "./errors.js";
import type { Policy } from "./policy.js";
import { MAX_COUNT, MAX_DURATION_MS } from "./facts.js";
import { type Transport, transport } from "./transport.js";

/** The largest count the commands take (`limit`, `COST`, `REFUND`): 10^12; the longest
 * duration: 3650 days, in ms (facts/rl.toml's `bounds`). */
export { MAX_COUNT, MAX_DURATION_MS };

/** `ms` as the commands' duration text, or a RangeError naming `what` (whole ms, 1 ms to
 * 3650 days). */
export function durationMsArg(ms: number, what: string): string {
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_DURATION_MS) {
    throw refused(RangeError, `${what} must be a whole number of milliseconds from 1 to ${MAX_DURATION_MS} (3650 days): ${String(ms)}`);
  }
  return `${ms}ms`;
}

/** rate-limit-redis' `sendCommand(...args)`. */
export type SendCommandFn = (...args: string[]) => Promise<unknown>;
/** rate-limit-redis' `sendCommandCluster({ key, isReadOnly, command })`. */
export type SendCommandClusterFn = (details: { key?: string; isReadOnly: boolean; command: string[] }) => Promise<unknown>;

/** The transport of rate-limit-redis-style options, each function called with `self` as
 * `this` (rate-limit-redis binds them to its store). */
export function sendCommandTransport(self: object, o: { sendCommand?: SendCommandFn; sendCommandCluster?: SendCommandClusterFn }): Transport {
  const load = (src: string) => ["FUNCTION", "LOAD", "REPLACE", src];
  if (typeof o.sendCommand === "function") {
    const send = o.sendCommand.bind(self);
    return transport({ send: (args) => send(...args), loadLibrary: async (src) => void (await send(...load(src))) });
  }
  const send = (o.sendCommandCluster as SendCommandClusterFn).bind(self);
  return transport({
    send: (command, key, isReadOnly) => send({ key, isReadOnly, command }),
    // On a cluster, the library goes to the node of the key that needed it.
    loadLibrary: async (src, key) => void (await send({ key, isReadOnly: false, command: load(src) })),
  });
}

/** The module's (or library's) refusal of a key holding a value it did not write. */
export const foreignState = (err: unknown): boolean => err instanceof ForeignKeyError && err.holds === "value";

/**
 * Takes over the counter a stock store (rate-limit-redis, RateLimiterRedis: `INCR` on a
 * plain string) left on `key`: `GETDEL` (atomic, so of several requests racing here exactly
 * one gets the count) and the count, or 0 when another request took it first. Anything
 * else on the key is not ours to delete: `err`, the command's refusal, is thrown again.
 */
export async function takeOverCounter(t: Transport, key: string, err: unknown): Promise<number> {
  const seen = await t.send(["GET", key], key, true).catch(() => { throw err; });
  if (seen === null || seen === undefined) return 0; // taken over (or expired) meanwhile
  if (!/^-?[0-9]{1,15}$/.test(String(seen))) throw err;
  const taken = await t.send(["GETDEL", key], key, false);
  if (taken === null || taken === undefined) return 0;
  if (!/^-?[0-9]{1,15}$/.test(String(taken))) throw err;
  return Math.max(0, Number(taken));
}

/**
 * Spends up to `n` units of `policy` on `key`: all of them if they fit, else what is left of
 * the limit (a penalty, or a counter taken over, beyond the limit fills the window: the
 * count never exceeds the limit). Each call is one atomic command; a denial writes nothing,
 * so a retry with the `remaining` it reported spends no unit twice. Returns the last
 * decision (the state after spending).
 */
export async function spendUpTo(limiter: Limiter, key: string, policy: Policy, n: number): Promise<Decision> {
  let want = Math.min(n, MAX_COUNT);
  for (;;) {
    const d = await limiter.decide(key, policy, { cost: want });
    if (d.allowed || d.remaining === 0) return d;
    want = Math.min(want, d.remaining);
  }
}
