/**
 * `RlStore`: an express-rate-limit (8) `Store` on `RL.FIXED`, built like rate-limit-redis'
 * `RedisStore` (`new RlStore({ sendCommand, prefix })`), so an app switches by changing
 * that one constructor.
 *
 * express-rate-limit counts hits per fixed window (`windowMs`) and compares the count to its
 * `limit` itself. The store keeps the count in one `RL.FIXED` key, `prefix + key`, windows
 * aligned to the clock, in one of two modes chosen in `init` from the middleware's options:
 *
 * - **deciding** (`limit` a number, and neither `skipFailedRequests` nor
 *   `skipSuccessfulRequests`): `RL.FIXED key <limit> <windowMs>ms`. The module admits or
 *   denies; a denial writes nothing and reports `totalHits = limit + 1`, which
 *   express-rate-limit denies too. Admitted: `totalHits = limit - remaining`.
 * - **counting** (otherwise: a `limit` function, or hits that `decrement` gives back):
 *   `RL.FIXED key 10^12 <windowMs>ms`, every hit counted, as rate-limit-redis does;
 *   `totalHits = 10^12 - remaining`, each hit's own count (atomic), which
 *   express-rate-limit compares to the request's limit. `decrement` is `REFUND 1`, so a hit
 *   given back was always one that was counted. (In the deciding mode a denied hit is not
 *   counted, and `decrement` cannot tell it from a counted one: the mode is never used
 *   where express-rate-limit decrements.)
 *
 * Either way `resetTime = now + reset_after_ms` (the window's end). A wrong configuration
 * (`windowMs` or `limit` beyond what the command takes, an option the store cannot honour)
 * throws from `init`, which express-rate-limit logs when the app starts, and every later
 * call rejects with the same error: requests fail (500, or `passOnStoreError`) rather than
 * pass unlimited.
 */
import { Limiter } from "./limiter.js";
import * as policies from "./policy.js";
import type { Policy } from "./policy.js";
import {
  MAX_COUNT, type SendCommandClusterFn, type SendCommandFn, checkCount, durationMsArg, foreignState,
  sendCommandTransport, spendUpTo, takeOverCounter,
} from "./stock.js";
import { type Transport, transportOf } from "./transport.js";

/** `RlStore`'s options: one of `sendCommand` (rate-limit-redis' form, `(...args) =>
 * reply`), `sendCommandCluster` (its cluster form) or `client` (node-redis or ioredis, a
 * client or a cluster). */
export interface RlStoreOptions {
  sendCommand?: SendCommandFn;
  sendCommandCluster?: SendCommandClusterFn;
  client?: unknown;
  /** Prepended to express-rate-limit's keys; default `"rl:"`, as rate-limit-redis. */
  prefix?: string;
  /** rate-limit-redis 5's option: only `false` is accepted (windows are aligned to the
   * clock, not restarted by each hit). */
  resetExpiryOnChange?: boolean;
}

/** What `init` reads of express-rate-limit's options. */
export interface RlStoreInit {
  windowMs: number;
  limit?: unknown;
  skipFailedRequests?: boolean;
  skipSuccessfulRequests?: boolean;
}

/** express-rate-limit's `ClientRateLimitInfo`. */
export interface RlStoreInfo {
  totalHits: number;
  resetTime: Date | undefined;
}

/** A plain object is options; anything else (a client instance) is the client. */
function isOptions(o: unknown): o is RlStoreOptions {
  if (!o || typeof o !== "object") return false;
  const proto = Object.getPrototypeOf(o);
  return proto === Object.prototype || proto === null;
}

export class RlStore {
  /** Prepended to every key. */
  readonly prefix: string;
  /** The counts are on the server: express-rate-limit must not assume they are local. */
  readonly localKeys = false;
  /** undefined until the first call, then "module" or "library". */
  get backend() {
    return this.limiter.backend;
  }

  /** Set by `init`: the window, and whether the module decides (see above). */
  windowMs: number | undefined;
  deciding = false;
  private policy: Policy | undefined;
  private failure: Error | undefined = new Error("RlStore: init(options) was not called (pass the store to rateLimit({ store }))");
  private readonly transport: Transport;
  private readonly limiter: Limiter;

  /** `new RlStore({ sendCommand, prefix })` as rate-limit-redis' store, `{ sendCommandCluster }`,
   * `{ client }`, or a node-redis / ioredis client itself. */
  constructor(options: RlStoreOptions | object) {
    const o: RlStoreOptions = isOptions(options) ? options : { client: options };
    const given = ["sendCommand", "sendCommandCluster", "client"].filter((k) => o[k as keyof RlStoreOptions] !== undefined);
    if (given.length !== 1) {
      throw new TypeError("RlStore: options must include exactly one of sendCommand, sendCommandCluster or client"
        + (given.length ? ` (got ${given.join(", ")})` : ""));
    }
    if (o.resetExpiryOnChange) {
      throw new TypeError("RlStore: resetExpiryOnChange is not supported: windows are aligned to the clock, "
        + "and a hit never moves a window's end");
    }
    if (o.prefix !== undefined && typeof o.prefix !== "string") throw new TypeError("RlStore: prefix must be a string");
    this.prefix = o.prefix ?? "rl:";
    this.transport = o.client !== undefined ? transportOf(o.client) : sendCommandTransport(this, o);
    this.limiter = new Limiter(this.transport);
  }

  /** Reads `windowMs`, `limit` and the skip options; throws on a configuration the
   * commands cannot honour (and every later call rejects with that error). */
  init(options: RlStoreInit): void {
    try {
      const windowArg = durationMsArg(options.windowMs, "RlStore: windowMs");
      const limit = options.limit;
      if (typeof limit === "number" && limit > MAX_COUNT) {
        throw new RangeError(`RlStore: limit must be at most ${MAX_COUNT} (the largest count RL.FIXED takes): ${limit}`);
      }
      const decrements = Boolean(options.skipFailedRequests || options.skipSuccessfulRequests);
      this.deciding = typeof limit === "number" && Number.isSafeInteger(limit) && limit >= 1 && !decrements;
      this.policy = policies.fixed(this.deciding ? checkCount(limit, "limit") : MAX_COUNT, windowArg);
      this.windowMs = options.windowMs;
      this.failure = undefined;
    } catch (err) {
      this.failure = err as Error;
      throw err;
    }
  }

  private ready(): Policy {
    if (this.failure) throw this.failure;
    return this.policy as Policy;
  }

  private info(limit: number, remaining: number, resetAfterMs: number, allowed = true): RlStoreInfo {
    return { totalHits: allowed ? limit - remaining : limit + 1, resetTime: new Date(Date.now() + resetAfterMs) };
  }

  /** Counts a hit (`RL.FIXED`), taking over a stock store's counter found on the key. */
  async increment(key: string): Promise<RlStoreInfo> {
    const policy = this.ready();
    const k = this.prefix + key;
    let d;
    try {
      d = await this.limiter.decide(k, policy);
    } catch (err) {
      if (!foreignState(err)) throw err;
      const carried = await takeOverCounter(this.transport, k, err);
      if (carried > 0) await spendUpTo(this.limiter, k, policy, carried);
      d = await this.limiter.decide(k, policy);
    }
    return this.info(policy.quota, d.remaining, d.resetAfterMs, d.allowed);
  }

  /** Gives one hit back (`REFUND 1`); never below an idle window. */
  async decrement(key: string): Promise<void> {
    const policy = this.ready();
    const k = this.prefix + key;
    try {
      await this.limiter.refund(k, policy, 1);
    } catch (err) {
      if (!foreignState(err)) throw err;
      await this.transport.send(["DECR", k], k, false); // a stock store's counter: its own way
    }
  }

  /** Forgets the key's hits (`DEL`). */
  async resetKey(key: string): Promise<void> {
    this.ready();
    const k = this.prefix + key;
    await this.transport.send(["DEL", k], k, false);
  }

  /** The key's hits and window end, read without writing (`RL.PEEK FIXED ... COST 0`);
   * an idle key has `totalHits: 0`, `resetTime` now, as rate-limit-redis reports it. */
  async get(key: string): Promise<RlStoreInfo | undefined> {
    const policy = this.ready();
    const k = this.prefix + key;
    try {
      const d = await this.limiter.peek(k, policy, { cost: 0 });
      return this.info(policy.quota, d.remaining, d.resetAfterMs);
    } catch (err) {
      if (!foreignState(err)) throw err;
      const [hits, ttl] = await Promise.all([this.transport.send(["GET", k], k, true), this.transport.send(["PTTL", k], k, true)]);
      return { totalHits: Number(hits ?? 0), resetTime: new Date(Date.now() + Math.max(0, Number(ttl))) };
    }
  }
}
