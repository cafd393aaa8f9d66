/**
 * `RlStore`: an express-rate-limit (8) `Store` on `RL.FIXED`, built like rate-limit-redis'
 * `RedisStore` (`new RlStore({ sendCommand, prefix })`), so an app switches by changing
 * that one constructor.
 *
 * express-rate-limit counts hits per fixed window (`windowMs`) and compares the count to its
 * `limit` itself. The store counts every hit, as rate-limit-redis does, in one `RL.FIXED`
 * key, `prefix + key`, windows aligned to the clock: `RL.FIXED key 10^12 <windowMs>ms`, so
 * `totalHits = 10^12 - remaining`, each hit's own count (atomic). `decrement` is
 * `REFUND 1`: every hit was counted, so a hit given back is always one that was counted,
 * and the count never goes below an idle window. The store needs nothing of `limit` (a
 * number, `Infinity` or a function: express-rate-limit's to compare) nor of the skip
 * options. `resetTime = now + reset_after_ms` (the window's end).
 *
 * A wrong configuration (an unknown option, a `windowMs` the command cannot take) throws
 * from the constructor or from `init`, which express-rate-limit logs when the app starts,
 * and every later call rejects with the same error: requests fail (500, or
 * `passOnStoreError`) rather than pass unlimited. Those are TypeErrors and RangeErrors, each
 * also a ConfigurationError; a server failure rejects with the package's error (errors.ts),
 * which express-rate-limit handles as any store's.
 */
import { refused } from "./errors.js";
import { Limiter } from "./limiter.js";
import * as policies from "./policy.js";
import type { Policy } from "./policy.js";
import {
  MAX_COUNT, type SendCommandClusterFn, type SendCommandFn, durationMsArg, foreignState, sendCommandTransport,
  spendUpTo, takeOverCounter,
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

/** What `init` reads of express-rate-limit's options: the window, in milliseconds (a
 * number, or its decimal text, as express-rate-limit and rate-limit-redis take it). */
export interface RlStoreInit {
  windowMs: number | string;
}

const OPTIONS = ["sendCommand", "sendCommandCluster", "client", "prefix", "resetExpiryOnChange"];

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

  /** Set by `init`: the window in milliseconds. */
  windowMs: number | undefined;
  private policy: Policy | undefined;
  private failure: Error | undefined = new Error("RlStore: init(options) was not called (pass the store to rateLimit({ store }))");
  private readonly transport: Transport;
  private readonly limiter: Limiter;

  /** `new RlStore({ sendCommand, prefix })` as rate-limit-redis' store, `{ sendCommandCluster }`,
   * `{ client }`, or a node-redis / ioredis client itself. */
  constructor(options: RlStoreOptions | object) {
    const o: RlStoreOptions = isOptions(options) ? options : { client: options };
    const unknown = Object.keys(o).filter((k) => !OPTIONS.includes(k));
    if (unknown.length) throw refused(TypeError, `RlStore: unknown option ${unknown.join(", ")} (it takes ${OPTIONS.join(", ")})`);
    const given = ["sendCommand", "sendCommandCluster", "client"].filter((k) => o[k as keyof RlStoreOptions] !== undefined);
    if (given.length !== 1) {
      throw refused(TypeError, "RlStore: options must include exactly one of sendCommand, sendCommandCluster or client"
        + (given.length ? ` (got ${given.join(", ")})` : ""));
    }
    if (o.resetExpiryOnChange) {
      throw refused(TypeError, "RlStore: resetExpiryOnChange is not supported: windows are aligned to the clock, "
        + "and a hit never moves a window's end");
    }
    if (o.prefix !== undefined && typeof o.prefix !== "string") throw refused(TypeError, "RlStore: prefix must be a string");
    this.prefix = o.prefix ?? "rl:";
    this.transport = o.client !== undefined ? transportOf(o.client) : sendCommandTransport(this, o);
    this.limiter = new Limiter(this.transport);
  }

  /** Reads `windowMs`; throws on one the command cannot take (and every later call
   * rejects with that error). */
  init(options: RlStoreInit): void {
    try {
      // express-rate-limit hands over `windowMs` as the app gave it: "60000" is 60000 ms.
      const w = options?.windowMs;
      const ms = typeof w === "string" && /^[0-9]{1,16}$/.test(w) ? Number(w) : w;
      this.policy = policies.fixed(MAX_COUNT, durationMsArg(ms as number, "RlStore: windowMs"));
      this.windowMs = ms as number;
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

  /** A decision as express-rate-limit's info: a denial comes only after 10^12 hits. */
  private info(d: { allowed: boolean; remaining: number; resetAfterMs: number }): RlStoreInfo {
    return { totalHits: d.allowed ? MAX_COUNT - d.remaining : MAX_COUNT + 1, resetTime: new Date(Date.now() + d.resetAfterMs) };
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
    return this.info(d);
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
      return this.info(d);
    } catch (err) {
      if (!foreignState(err)) throw err;
      const [hits, ttl] = await Promise.all([this.transport.send(["GET", k], k, true), this.transport.send(["PTTL", k], k, true)]);
      return { totalHits: Number(hits ?? 0), resetTime: new Date(Date.now() + Math.max(0, Number(ttl))) };
    }
  }
}
