/**
 * `RateLimiterRl`: rate-limiter-flexible's `RateLimiterRedis` (its options, methods and
 * `RateLimiterRes`), decided by the rl commands.
 *
 * - A key's points live in one `RL.FIXED` key, `getKey(key)` = `<keyPrefix>:{<key>}`:
 *   `points` per window of `duration` seconds, windows aligned to the clock.
 *   `consume(key, n)` is `RL.FIXED ... COST n`: the module admits or denies, atomically;
 *   a denial spends nothing (RateLimiterRedis counts rejected points too).
 * - `reward(key, n)` is `REFUND n` (never below an idle window); `penalty(key, n)` is
 *   `COST n`, and where `n` does not fit, what is left (the count never exceeds `points`).
 * - Blocks live in a second key, `getKey(key) + ":block"` (same hash slot: the braces), a
 *   GCRA state whose theoretical arrival time is the block's end (`RL.GCRA k 1 1ms BURST b
 *   COST b` on an idle key ends a block in b ms; a key already blocked refuses it, so a
 *   block is never extended by another denial). `consume` reads it (`RL.PEEK GCRA k 1 1ms`)
 *   in the same round trip as it decides; a consume that passes while blocked is refunded.
 *   `blockDuration` sets a block when a consume is denied (the first denial: later ones
 *   find it set); `block(key, s)` replaces any block with one of `s` seconds.
 * - `RateLimiterRes` is rate-limiter-flexible's own class (so `instanceof` holds), loaded
 *   when the limiter is built: rate-limiter-flexible is an optional peer dependency,
 *   needed only by users of this class.
 * - Options the commands cannot honour throw when the limiter is built: `points` or
 *   `duration` out of the commands' range, `duration: 0` (no window ends), a custom Lua
 *   script, a missing `storeClient`.
 */
import { Limiter } from "./limiter.js";
import * as policies from "./policy.js";
import type { Decision } from "./decision.js";
import { MAX_DURATION_MS, checkCount, durationMsArg, spendUpTo } from "./stock.js";
import { type Transport, transportOf } from "./transport.js";

/** rate-limiter-flexible's `RateLimiterRes` fields. */
export interface RateLimiterResLike {
  remainingPoints: number;
  msBeforeNext: number;
  consumedPoints: number;
  isFirstInDuration: boolean;
}
type ResClass = new (remaining?: number, msBeforeNext?: number, consumed?: number, first?: boolean) => RateLimiterResLike;

/** A limiter `insuranceLimiter` may be: any rate-limiter-flexible limiter. */
export interface InsuranceLimiter {
  consume(key: string | number, points?: number, options?: object): Promise<unknown>;
  [method: string]: unknown;
}

/** `RateLimiterRedis`' options that `RateLimiterRl` takes. */
export interface RateLimiterRlOptions {
  /** node-redis or ioredis (a client or a cluster). */
  storeClient: unknown;
  /** Points per window: an integer from 1 to 10^12. */
  points: number;
  /** The window in seconds (whole milliseconds, up to 3650 days). */
  duration: number;
  /** Seconds to block a key when a consume is denied (0: no block). */
  blockDuration?: number;
  /** Keys are `<keyPrefix>:{<key>}`; default "rlflx". */
  keyPrefix?: string;
  execEvenly?: boolean;
  execEvenlyMinDelayMs?: number;
  inMemoryBlockOnConsumed?: number;
  inMemoryBlockDuration?: number;
  insuranceLimiter?: InsuranceLimiter;
  rejectIfRedisNotReady?: boolean;
  /** Accepted and ignored (the client is recognised by itself). */
  useRedisPackage?: boolean;
  /** Refused: node-redis 3 is not supported. */
  useRedis3AndLowerPackage?: boolean;
  /** Refused: the decisions are the rl commands'. */
  customIncrTtlLuaScript?: string;
}

/** Per-call options: `customDuration` (seconds) replaces `duration` for this call. */
export interface CallOptions {
  customDuration?: number;
}

let resClass: Promise<ResClass> | undefined;
/** rate-limiter-flexible's `RateLimiterRes`, imported once (both builds resolve it from
 * this package's location, so it is the class the application imports). */
function loadRes(): Promise<ResClass> {
  resClass ??= import("rate-limiter-flexible").then(
    (m: any) => (m.RateLimiterRes ?? m.default?.RateLimiterRes) as ResClass,
    (err: unknown) => {
      throw new Error(`RateLimiterRl needs rate-limiter-flexible (npm install rate-limiter-flexible): ${String(err)}`);
    });
  return resClass;
}

const secondsToMs = (s: number, what: string): number => {
  const ms = s * 1000;
  if (typeof s !== "number" || !Number.isFinite(s) || !Number.isSafeInteger(Math.round(ms)) || Math.abs(ms - Math.round(ms)) > 1e-6) {
    throw new RangeError(`${what} must be a number of seconds in whole milliseconds: ${String(s)}`);
  }
  return Math.round(ms);
};

/** Points as rate-limiter-flexible takes them: a number, or a string of digits. */
const pointsOf = (p: unknown): unknown => (typeof p === "string" && /^[0-9]+$/.test(p) ? Number(p) : p);

/** The block key's policy: one unit per ms, so a GCRA state's TAT is the block's end. */
const BLOCK_CHECK = policies.gcra(1, "1ms");
const blockWrite = (ms: number) => policies.gcra(1, "1ms", { burst: ms });

export class RateLimiterRl {
  private _points!: number;
  private _duration!: number;
  private _blockDuration = 0;
  private _keyPrefix = "rlflx";
  execEvenly: boolean;
  execEvenlyMinDelayMs: number;
  readonly inMemoryBlockOnConsumed: number;
  readonly inMemoryBlockDuration: number;
  readonly insuranceLimiter: InsuranceLimiter | undefined;
  private readonly rejectIfNotReady: boolean;
  private readonly client: unknown;
  private readonly transport: Transport;
  private readonly limiter: Limiter;
  /** In-process blocks (`inMemoryBlockOnConsumed`): rlKey -> end (ms since the epoch). */
  private readonly memoryBlocks = new Map<string, number>();
  private readonly Res: Promise<ResClass>;

  constructor(opts: RateLimiterRlOptions) {
    if (!opts || typeof opts !== "object") throw new TypeError("RateLimiterRl: options are required");
    if (opts.storeClient === undefined || opts.storeClient === null) throw new Error("storeClient is not set");
    if (opts.customIncrTtlLuaScript !== undefined) {
      throw new TypeError("RateLimiterRl: customIncrTtlLuaScript is not supported: the rl commands decide");
    }
    if (opts.useRedis3AndLowerPackage) throw new TypeError("RateLimiterRl: node-redis 3 is not supported (node-redis 4+ or ioredis)");
    this.points = opts.points;
    this.duration = opts.duration;
    this.blockDuration = opts.blockDuration ?? 0;
    if (opts.keyPrefix !== undefined) this.keyPrefix = opts.keyPrefix;
    this.execEvenly = Boolean(opts.execEvenly);
    this.execEvenlyMinDelayMs = opts.execEvenlyMinDelayMs ?? Math.ceil((this.duration * 1000) / this.points);
    this.inMemoryBlockOnConsumed = opts.inMemoryBlockOnConsumed ? Math.trunc(opts.inMemoryBlockOnConsumed) : 0;
    if (this.inMemoryBlockOnConsumed > 0 && this.points > this.inMemoryBlockOnConsumed) {
      throw new Error('inMemoryBlockOnConsumed option must be greater or equal "points" option');
    }
    this.inMemoryBlockDuration = opts.inMemoryBlockDuration ? Math.trunc(opts.inMemoryBlockDuration) : 0;
    if (this.inMemoryBlockDuration > 0 && this.inMemoryBlockOnConsumed === 0) {
      throw new Error("inMemoryBlockOnConsumed option must be set up");
    }
    if (opts.insuranceLimiter !== undefined && typeof opts.insuranceLimiter?.consume !== "function") {
      throw new TypeError("insuranceLimiter must be a rate-limiter-flexible limiter");
    }
    this.insuranceLimiter = opts.insuranceLimiter;
    this.rejectIfNotReady = Boolean(opts.rejectIfRedisNotReady);
    this.client = opts.storeClient;
    this.transport = transportOf(opts.storeClient);
    this.limiter = new Limiter(this.transport);
    this.Res = loadRes();
    this.Res.catch(() => undefined); // reported by the first call
  }

  /** Points per window: an integer from 1 to 10^12 (`RL.FIXED`'s `limit`). */
  get points(): number {
    return this._points;
  }
  set points(value: number) {
    this._points = checkCount(value, "points");
  }

  /** The window, in seconds: whole milliseconds from 1 ms to 3650 days; 0 (a window that
   * never ends) is refused. */
  get duration(): number {
    return this._duration;
  }
  set duration(value: number) {
    if (value === 0) throw new RangeError("duration 0 (points that never expire) is not supported: give a window, up to 3650 days");
    durationMsArg(secondsToMs(value, "duration"), "duration");
    this._duration = value;
  }

  get msDuration(): number {
    return secondsToMs(this._duration, "duration");
  }

  /** Seconds a key is blocked after a denied consume; 0: none. */
  get blockDuration(): number {
    return this._blockDuration;
  }
  set blockDuration(value: number) {
    const ms = secondsToMs(value, "blockDuration");
    if (ms < 0 || ms > MAX_DURATION_MS) throw new RangeError(`blockDuration must be from 0 to 3650 days: ${value}`);
    this._blockDuration = value;
  }

  get msBlockDuration(): number {
    return secondsToMs(this._blockDuration, "blockDuration");
  }

  get keyPrefix(): string {
    return this._keyPrefix;
  }
  set keyPrefix(value: string) {
    if (typeof value !== "string") throw new Error("keyPrefix must be string");
    this._keyPrefix = value;
  }

  /** `<keyPrefix>:{<key>}`: the braces keep the block key in the same cluster slot. */
  getKey(key: string | number): string {
    const k = String(key);
    if (k === "" || k.startsWith("}")) throw new TypeError(`RateLimiterRl: a key must not be empty or start with "}": ${JSON.stringify(k)}`);
    return this._keyPrefix.length > 0 ? `${this._keyPrefix}:{${k}}` : `{${k}}`;
  }

  parseKey(rlKey: string): string {
    const body = this._keyPrefix.length > 0 ? rlKey.substring(this._keyPrefix.length + 1) : rlKey;
    return body.slice(1, -1);
  }

  private window(options: CallOptions): policies.Policy {
    const seconds = options?.customDuration !== undefined && options.customDuration >= 0 ? options.customDuration : this._duration;
    const ms = secondsToMs(seconds, "customDuration");
    return policies.fixed(this._points, durationMsArg(ms, "customDuration"));
  }

  private checkReady(): void {
    if (!this.rejectIfNotReady) return;
    const c = this.client as any;
    const ready = typeof c.status === "string" ? c.status === "ready"
      : typeof c.isReady === "boolean" ? c.isReady
        : typeof c.isOpen === "boolean" ? c.isOpen : true;
    if (!ready) throw new Error("Redis connection is not ready");
  }

  private async res(remaining: number, ms: number, consumed: number, first: boolean): Promise<RateLimiterResLike> {
    return new (await this.Res)(remaining, ms, consumed, first);
  }

  /** Runs `op`; a failure that is not a decision goes to `insuranceLimiter[method]`. */
  private async insured<T>(method: string, args: unknown[], op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      const Res = await this.Res;
      if (err instanceof Res || !this.insuranceLimiter) throw err;
      const fallback = this.insuranceLimiter[method] as (...a: unknown[]) => Promise<T>;
      return fallback.apply(this.insuranceLimiter, args);
    }
  }

  private fromDecision(d: Decision, changed: number): Promise<RateLimiterResLike> {
    const consumed = this._points - d.remaining;
    return this.res(d.remaining, d.resetAfterMs, consumed, consumed === changed);
  }

  /** Spends `points` (default 1): resolves with the `RateLimiterRes` when admitted, rejects
   * with it when denied (or blocked), rejects with an Error when the server fails. */
  consume(key: string | number, points = 1, options: CallOptions = {}): Promise<RateLimiterResLike> {
    return this.insured("consume", [key, points, options], async () => {
      const n = checkCount(pointsOf(points), "points to consume", 0);
      const rlKey = this.getKey(key);
      const memory = this.memoryBlocks.get(rlKey);
      if (memory !== undefined) {
        if (memory > Date.now()) throw await this.res(0, memory - Date.now(), 0, false);
        this.memoryBlocks.delete(rlKey);
      }
      this.checkReady();
      const policy = this.window(options);
      const blockKey = `${rlKey}:block`;
      const [block, d] = await Promise.all([
        this.limiter.peek(blockKey, BLOCK_CHECK),
        this.limiter.decide(rlKey, policy, { cost: n }),
      ]);
      if (!block.allowed) {
        if (d.allowed && n > 0) await this.limiter.refund(rlKey, policy, n);
        const consumed = Math.max(this._points - d.remaining + n, this._points + 1);
        throw await this.res(0, block.retryAfterMs, consumed, false);
      }
      if (d.allowed) return this.afterAdmitted(rlKey, d, n);
      return this.afterDenied(rlKey, blockKey, d, n);
    });
  }

  private async afterAdmitted(rlKey: string, d: Decision, n: number): Promise<RateLimiterResLike> {
    const res = await this.fromDecision(d, n);
    if (this.inMemoryBlockOnConsumed > 0 && !(this.inMemoryBlockDuration > 0) && res.consumedPoints >= this.inMemoryBlockOnConsumed) {
      this.memoryBlocks.set(rlKey, Date.now() + res.msBeforeNext);
    } else if (this.execEvenly && res.msBeforeNext > 0 && !res.isFirstInDuration) {
      // rate-limiter-flexible's own spacing, in this process.
      let delay = Math.ceil(res.msBeforeNext / (res.remainingPoints + 2));
      if (delay < this.execEvenlyMinDelayMs) delay = res.consumedPoints * this.execEvenlyMinDelayMs;
      res.msBeforeNext = Math.max(res.msBeforeNext - delay, 0);
      await new Promise((r) => setTimeout(r, delay));
    }
    return res;
  }

  private async afterDenied(rlKey: string, blockKey: string, d: Decision, n: number): Promise<never> {
    // What the count would be with this request: above `points`, as RateLimiterRedis reports.
    const consumed = this._points - d.remaining + n;
    // A request larger than `points` never passes: told to wait a whole window.
    const wait = d.retryAfterMs >= 0 ? d.retryAfterMs : secondsToMs(this._duration, "duration");
    const res = await this.res(0, wait, consumed, false);
    if (this.inMemoryBlockOnConsumed > 0 && !(this.inMemoryBlockDuration > 0) && consumed >= this.inMemoryBlockOnConsumed) {
      this.memoryBlocks.set(rlKey, Date.now() + res.msBeforeNext);
      throw res;
    }
    if (this._blockDuration > 0) {
      const ms = this.msBlockDuration;
      await this.limiter.decide(blockKey, blockWrite(ms), { cost: ms }); // refused if already blocked
      res.msBeforeNext = ms;
    }
    if (this.inMemoryBlockOnConsumed > 0 && consumed >= this.inMemoryBlockOnConsumed) {
      this.memoryBlocks.set(rlKey, Date.now() + this.inMemoryBlockDuration * 1000);
      res.msBeforeNext = this.inMemoryBlockDuration * 1000;
    }
    throw res;
  }

  /** Adds `points` to the key (`COST n`, or what is left when they do not fit); resolves. */
  penalty(key: string | number, points = 1, options: CallOptions = {}): Promise<RateLimiterResLike> {
    return this.insured("penalty", [key, points, options], async () => {
      const n = checkCount(pointsOf(points), "penalty points", 0);
      this.checkReady();
      return this.fromDecision(await spendUpTo(this.limiter, this.getKey(key), this.window(options), n), n);
    });
  }

  /** Gives `points` back (`REFUND n`); never below an idle window. */
  reward(key: string | number, points = 1, options: CallOptions = {}): Promise<RateLimiterResLike> {
    return this.insured("reward", [key, points, options], async () => {
      const n = checkCount(pointsOf(points), "reward points", 0);
      this.checkReady();
      const d = await this.limiter.refund(this.getKey(key), this.window(options), n);
      return this.fromDecision(d, -n);
    });
  }

  /** The key's state without writing: null for an idle key; a blocked key reports the
   * block (`consumedPoints` above `points`, `msBeforeNext` until the block ends). */
  get(key: string | number, options: CallOptions = {}): Promise<RateLimiterResLike | null> {
    return this.insured("get", [key, options], async () => {
      this.checkReady();
      const rlKey = this.getKey(key);
      const [block, d] = await Promise.all([
        this.limiter.peek(`${rlKey}:block`, BLOCK_CHECK),
        this.limiter.peek(rlKey, this.window(options), { cost: 0 }),
      ]);
      const consumed = this._points - d.remaining;
      if (!block.allowed) return this.res(0, block.retryAfterMs, Math.max(consumed, this._points + 1), false);
      if (consumed === 0) return null;
      return this.res(d.remaining, d.resetAfterMs, consumed, false);
    });
  }

  /** Forgets the key (its points and any block): true if there was something to forget. */
  delete(key: string | number, options: CallOptions = {}): Promise<boolean> {
    return this.insured("delete", [key, options], async () => {
      this.checkReady();
      const rlKey = this.getKey(key);
      const removed = await this.transport.send(["DEL", rlKey, `${rlKey}:block`], rlKey, false);
      this.memoryBlocks.delete(rlKey);
      return Number(removed) > 0;
    });
  }

  /** Blocks the key for `secDuration` seconds (replacing any block); rejects 0 (forever). */
  block(key: string | number, secDuration: number, options: CallOptions = {}): Promise<RateLimiterResLike> {
    return this.insured("block", [key, secDuration, options], async () => {
      const ms = secondsToMs(secDuration, "block duration");
      durationMsArg(ms, "block duration (a block forever, 0, is not supported)");
      this.checkReady();
      const blockKey = `${this.getKey(key)}:block`;
      await this.transport.send(["DEL", blockKey], blockKey, false);
      await this.limiter.decide(blockKey, blockWrite(ms), { cost: ms });
      return this.res(0, ms, this._points + 1, false);
    });
  }

  /** Not supported: a window's count is the module's to keep. */
  set(): Promise<never> {
    return Promise.reject(new Error("RateLimiterRl does not support set(): use penalty(), reward() or delete()"));
  }

  /** Forgets every in-process block. */
  deleteInMemoryBlockedAll(): void {
    this.memoryBlocks.clear();
  }
}
