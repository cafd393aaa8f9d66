/**
 * `RateLimiterRl`, imported from `redis-rl/rate-limiter-flexible`: rate-limiter-flexible's
 * `RateLimiterRedis` with its counter decided by the rl commands. It extends
 * rate-limiter-flexible's own `RateLimiterStoreAbstract`, as `RateLimiterRedis` does, and
 * implements only what a store implements (`_upsert`, `_get`, `_delete`,
 * `_getRateLimiterRes`): blocks, `blockOnConsumed`, the in-memory blocks, `insuranceLimiter`,
 * `execEvenly`, keys, `set` and `block` are the base class's own code.
 *
 * - A key's count lives in `getKey(key)` = `<keyPrefix>:<key>`, as `RateLimiterRedis`' does:
 *   an `RL.FIXED` window of `duration` with a limit of 10^12, so that every consume is counted
 *   (denied ones too, as `RateLimiterRedis` counts them) and the base class compares the count
 *   with `points`. Windows are aligned to the clock.
 * - `block` and `set` write the stock format (`SET key <points> PX <ms>`). A key in that
 *   format (or a counter `RateLimiterRedis` left) is counted the stock way, `INCRBY`, until it
 *   expires; then `RL.FIXED` takes the key again.
 * - Argument errors reject with a TypeError or RangeError (each also a ConfigurationError)
 *   before the base class runs (which would hand any failure to `insuranceLimiter`); options
 *   the commands cannot honour throw at construction.
 * - A server failure is the package's error (errors.ts: ServerUnavailableError ...), which the
 *   base class rejects with, or hands to `insuranceLimiter`, as it does `RateLimiterRedis`'
 *   driver errors; `rejectIfRedisNotReady`'s is a ServerUnavailableError with the stock text.
 */
import { type IRateLimiterRedisOptions, RateLimiterRedis, RateLimiterRes, type RateLimiterStoreAbstract } from "rate-limiter-flexible";

import { ServerUnavailableError, refused } from "./errors.js";
import { Limiter } from "./limiter.js";
import { fixed } from "./policy.js";
import { MAX_COUNT, MAX_DURATION_MS, foreignState } from "./stock.js";
import { type Transport, transportOf } from "./transport.js";

/** rate-limiter-flexible's index does not export its store base class; `RateLimiterRedis`
 * extends it. */
const Base = Object.getPrototypeOf(RateLimiterRedis) as typeof RateLimiterStoreAbstract;
if (Base?.name !== "RateLimiterStoreAbstract") {
  throw new Error("redis-rl/rate-limiter-flexible: RateLimiterRedis does not extend RateLimiterStoreAbstract in this rate-limiter-flexible");
}

/** `RateLimiterRedis`' options (rate-limiter-flexible's `IRateLimiterRedisOptions`). */
export type RateLimiterRlOptions = IRateLimiterRedisOptions;

/** Per-call options: `customDuration` (seconds) replaces `duration` for this call. */
export interface CallOptions {
  customDuration?: number;
}

/** `RL.FIXED`'s limit: so high that the count, not the command, is what `points` limits. */
const COUNT_LIMIT = MAX_COUNT;

/** `seconds` in whole milliseconds from `minMs` to 3650 days, else an error naming `what`. */
function msOf(seconds: unknown, what: string, minMs: number): number {
  if (typeof seconds !== "number") throw refused(TypeError, `${what} must be a number of seconds: ${String(seconds)}`);
  const ms = Math.round(seconds * 1000);
  if (!Number.isFinite(seconds) || Math.abs(seconds * 1000 - ms) > 1e-6 || ms < minMs || ms > MAX_DURATION_MS) {
    throw refused(RangeError, `${what} must be seconds in whole milliseconds from ${minMs / 1000} to 3650 days: ${seconds}`);
  }
  return ms;
}

/** Points as a call takes them: an integer from 0 to 10^12, or a string of its digits
 * (which `RateLimiterRedis` takes too). */
function pointsOf(points: unknown, what: string): number {
  const n = typeof points === "string" && /^[0-9]+$/.test(points) ? Number(points) : points;
  if (typeof n !== "number") throw refused(TypeError, `${what} must be a number: ${String(points)}`);
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_COUNT) {
    throw refused(RangeError, `${what} must be an integer from 0 to ${MAX_COUNT}: ${String(points)}`);
  }
  return n;
}

const isInteger = (v: unknown): boolean => /^-?[0-9]{1,16}$/.test(String(v));

/** [consumed points, ms before the key's count ends], what `_getRateLimiterRes` reads. */
type StoreResult = [number, number];

export class RateLimiterRl extends Base {
  private readonly transport: Transport;
  private readonly limiter: Limiter;
  private readonly rejectIfNotReady: boolean;
  /** The base class's `storeClient` (its setter refuses undefined). */
  declare client: unknown;

  constructor(opts: RateLimiterRlOptions) {
    if (!opts || typeof opts !== "object") throw refused(TypeError, "RateLimiterRl: options are required");
    if (opts.storeClient === undefined || opts.storeClient === null) throw new Error("storeClient is not set");
    if (opts.customIncrTtlLuaScript !== undefined) {
      throw refused(TypeError, "customIncrTtlLuaScript is not supported: the rl commands count");
    }
    if (opts.useRedis3AndLowerPackage) throw refused(TypeError, "useRedis3AndLowerPackage: node-redis 3 is not supported (node-redis 4+ or ioredis)");
    super(opts);
    this.checkSettings();
    this.client = opts.storeClient;
    try {
      this.transport = transportOf(opts.storeClient);
    } catch (err) {
      throw refused(TypeError, `storeClient: ${(err as Error).message}`);
    }
    this.limiter = new Limiter(this.transport);
    this.rejectIfNotReady = Boolean(opts.rejectIfRedisNotReady);
  }

  /** What the commands cannot honour, checked at construction and at every call (the
   * settings are assignable). */
  private checkSettings(): void {
    // Any integer, as RateLimiterRedis (0 or less denies everything), up to the largest count;
    // an integer so that a block's `points + 1` is a count `INCRBY` takes.
    if (!Number.isSafeInteger(this.points) || this.points > COUNT_LIMIT) {
      throw refused(RangeError, `points must be an integer up to ${COUNT_LIMIT} (the largest count): ${this.points}`);
    }
    if (this.duration === 0) throw refused(RangeError, "duration 0 (points that never expire) is not supported: give a window, up to 3650 days");
    msOf(this.duration, "duration", 1);
    msOf(this.blockDuration, "blockDuration", 0);
  }

  /** The checks every call makes before the base class: the key, the settings and
   * `customDuration`. */
  private checkCall(key: unknown, options: CallOptions | undefined): void {
    if (typeof key !== "string" && typeof key !== "number") throw refused(TypeError, `key must be a string or a number: ${String(key)}`);
    this.checkSettings();
    if (options?.customDuration !== undefined) msOf(options.customDuration, "customDuration", 1);
  }

  override async consume(key: string | number, points: number | string = 1, options: CallOptions = {}): Promise<RateLimiterRes> {
    this.checkCall(key, options);
    return super.consume(key, pointsOf(points, "points to consume"), options);
  }

  override async penalty(key: string | number, points: number | string = 1, options: CallOptions = {}): Promise<RateLimiterRes> {
    this.checkCall(key, options);
    return super.penalty(key, pointsOf(points, "penalty points"), options);
  }

  /** Gives `points` back: never below an idle window (`REFUND`). */
  override async reward(key: string | number, points: number | string = 1, options: CallOptions = {}): Promise<RateLimiterRes> {
    this.checkCall(key, options);
    return super.reward(key, pointsOf(points, "reward points"), options);
  }

  override async get(key: string | number, options: CallOptions = {}): Promise<RateLimiterRes | null> {
    this.checkCall(key, options);
    return super.get(key, options);
  }

  override async delete(key: string | number, options: CallOptions = {}): Promise<boolean> {
    this.checkCall(key, options);
    return super.delete(key, options);
  }

  /** Blocks the key for `secDuration` seconds (0: until a consume gives it an expiry, as
   * `RateLimiterRedis`). */
  override async block(key: string | number, secDuration: number, options: CallOptions = {}): Promise<RateLimiterRes> {
    this.checkCall(key, options);
    msOf(secDuration, "block duration", 0);
    return super.block(key, secDuration, options);
  }

  /** Sets the key's count to `points` for `secDuration` seconds (0: no expiry; omitted:
   * `duration`, as `RateLimiterRedis`). */
  override async set(key: string | number, points: number | string, secDuration?: number, options: CallOptions = {}): Promise<RateLimiterRes> {
    this.checkCall(key, options);
    const seconds = secDuration ?? this.duration;
    msOf(seconds, "set duration", 0);
    return super.set(key, pointsOf(points, "points to set"), seconds, options);
  }

  /** `rejectIfRedisNotReady`: the client's own state, as `RateLimiterRedis` reads it. */
  private checkReady(): void {
    if (!this.rejectIfNotReady) return;
    const c = this.client as { status?: unknown; isReady?: unknown; isOpen?: unknown };
    const ready = typeof c.status === "string" ? c.status === "ready"
      : typeof c.isReady === "boolean" ? c.isReady
        : typeof c.isOpen === "boolean" ? c.isOpen : true;
    if (!ready) throw new ServerUnavailableError("Redis connection is not ready");
  }

  private send(args: string[], key: string, readOnly = false): Promise<unknown> {
    return this.transport.send(args, key, readOnly);
  }

  /** Called by the base class: `points` > 0 consumes (or penalises), < 0 rewards, 0 reads;
   * `forceExpire` (block, set, blockDuration) writes the stock format. */
  async _upsert(rlKey: string, points: number, msDuration: number, forceExpire = false): Promise<StoreResult> {
    this.checkReady();
    const ms = Math.round(msDuration);
    if (forceExpire) {
      await this.send(["SET", rlKey, String(points), ...(ms > 0 ? ["PX", String(ms)] : [])], rlKey);
      return [points, ms > 0 ? ms : -1];
    }
    const window = fixed(COUNT_LIMIT, `${ms}ms`);
    try {
      if (points < 0) {
        const d = await this.limiter.refund(rlKey, window, -points);
        return [COUNT_LIMIT - d.remaining, d.resetAfterMs];
      }
      // Points 0: what one more point would be told (the window's end, even on an idle key,
      // as RateLimiterRedis answers), without writing.
      const cost = points > 0 ? points : 1;
      const d = await this.limiter.decide(rlKey, window, { cost, peek: points === 0 });
      // Denied only where the count would pass 10^12: reported with this request, not kept.
      const consumed = COUNT_LIMIT - d.remaining + (d.allowed ? points - cost : points);
      return [consumed, d.resetAfterMs];
    } catch (err) {
      if (!foreignState(err)) throw err;
      return this.stockUpsert(rlKey, points, ms);
    }
  }

  /** A key in the stock format, counted as RateLimiterRedis' script does. `PEXPIRE NX`: a key
   * that expired and was recreated by `INCRBY` gets the window, never lives forever; one that
   * has an expiry keeps it. */
  private async stockUpsert(rlKey: string, points: number, ms: number): Promise<StoreResult> {
    const consumed = Number(await this.send(["INCRBY", rlKey, String(points)], rlKey));
    if (Number(await this.send(["PEXPIRE", rlKey, String(ms), "NX"], rlKey)) === 1) return [consumed, ms];
    const ttl = Number(await this.send(["PTTL", rlKey], rlKey, true));
    return [consumed, Math.max(ttl, 0)]; // -2: it expired meanwhile
  }

  /** Called by the base class' `get`: null for an idle or absent key. */
  async _get(rlKey: string, options: CallOptions = {}): Promise<StoreResult | null> {
    this.checkReady();
    const ms = msOf(options?.customDuration ?? this.duration, "duration", 1);
    try {
      const d = await this.limiter.peek(rlKey, fixed(COUNT_LIMIT, `${ms}ms`), { cost: 0 });
      const consumed = COUNT_LIMIT - d.remaining;
      return consumed > 0 ? [consumed, d.resetAfterMs] : null;
    } catch (err) {
      if (!foreignState(err)) throw err;
      const value = await this.send(["GET", rlKey], rlKey, true);
      if (value === null || value === undefined) return null;
      if (!isInteger(value)) throw err;
      return [Number(value), Number(await this.send(["PTTL", rlKey], rlKey, true))];
    }
  }

  /** Called by the base class' `delete`. */
  async _delete(rlKey: string): Promise<boolean> {
    return Number(await this.send(["DEL", rlKey], rlKey)) > 0;
  }

  /** `RateLimiterRedis`' own: the count against `points`. */
  _getRateLimiterRes(_rlKey: string, changedPoints: number, [consumed, ms]: StoreResult): RateLimiterRes {
    return new RateLimiterRes(Math.max(this.points - consumed, 0), ms, consumed, consumed === changedPoints);
  }
}
