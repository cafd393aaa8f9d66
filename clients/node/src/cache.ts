/**
 * The denial cache: once the server denies a layer's identity (a key and a policy) with a
 * `retryAfterMs` R > 0, that identity's calls are denied here, without a call, until R has
 * passed (Upstash ratelimit's ephemeral cache, bounded).
 *
 * - Only a denial is written (`allowed` false and R > 0): never an admission, never a
 *   `SHADOW` policy's denial (which is admitted), never a request that can never be admitted
 *   (R = -1).
 * - An entry holds the denied cost: a call of a cost at least that one is denied from it (a
 *   larger cost is denied at least as long as a smaller one, by every limiter); a smaller
 *   cost is sent to the server, whose denial of it then replaces the entry.
 * - The deadline counts from the moment the call was sent, not from its reply: the server's R
 *   ran from a moment after the send, so the cache never denies past the server's deadline.
 * - The decision it gives is the server's denial as it would be now: `allowed` false, the
 *   same `limit` and `remaining` (0 for a denied cost of 1), `retryAfterMs` and
 *   `resetAfterMs` counting down from the server's; its `cached` is true.
 * - Bounded: at most `maxEntries`, the least recently used evicted first (a flooding
 *   identity is looked up on each of its requests, so it stays; a one-off denial goes first),
 *   and an expired entry dropped when it is met. A key longer than `HELD_KEY_CHARS`
 *   characters is held as its SHA-256 digest (`held`), so an entry's size does not grow with
 *   its key's (a header-keyed layer's 8 KB keys take no more than short ones).
 *
 * What it gives up: a `REFUND`, a raised policy or a lifted ban made elsewhere (another
 * process, `redis-cli`) is seen at the latest when R ends; the same limiter's own `refund`
 * and `ban` drop the key's entries at once.
 *
 * With `exhausted: true` (off by default), an admission that left nothing is written too: a
 * spending call of a spelled-out policy without a penalty, admitted with `remaining` 0, whose
 * algorithm says from the reply when the next unit is free (`exhaustedWait`). The calls until
 * then are denied here, so a flooding identity's denials never reach the server, not even the
 * first after each admission; the server then counts no denial of it (INFO rl, RL.TOP): only
 * this process's counters do.
 */
import { createHash } from "node:crypto";

import { Decision } from "./decision.js";
import { refused } from "./errors.js";
import { durationMs, type PolicyOrName } from "./policy.js";

/** Entries kept by default. */
export const DEFAULT_MAX_ENTRIES = 10_000;
/** The longest key held as it is; a longer one is held as its digest. */
export const HELD_KEY_CHARS = 64;

/** How the caches (this one and the insurance's windows) hold `key`: as it is up to
 * HELD_KEY_CHARS characters, else "\u0001" and its SHA-256 digest in hex (65 characters, so
 * never equal to a short key): what one entry holds is bounded whatever the key's length. */
export function held(key: string): string {
  if (key.length <= HELD_KEY_CHARS) return key;
  return `\u0001${createHash("sha256").update(key, "utf8").digest("hex")}`;
}

interface Entry {
  readonly cost: number;
  readonly remaining: number;
  readonly until: number; // ms (the clock's): the denial's end
  readonly resetAt: number; // ms: the limiter idle
  readonly limit: number;
  readonly backend: Decision["backend"];
}

/** What identifies a policy in the cache: a policy object by its algorithm, parameters and
 * penalty (its name is only the headers'), a server policy by its name. */
export function policyId(p: PolicyOrName): string {
  if (typeof p === "string") return `POLICY ${p}`;
  return [p.algo, ...p.params, ...(p.penalty ?? [])].join(" ");
}

/** The limiters whose admission leaving `remaining` 0 says when the next unit is free: those
 * at a rate (one instant, the time they are idle: the next unit frees `limit - 1` units' time
 * before it) and those on windows (at the window's end, the renewal). */
const RATES = new Set(["GCRA", "TOKENBUCKET", "LEAKY"]);
const WINDOWS = new Set(["FIXED", "QUOTA"]);

/** For a spending admission of `p` that left `remaining` 0: how long (ms, from the call's
 * send) every call of the same key and policy is denied, or undefined when the reply does not
 * say it (another algorithm, a policy named on the server, a penalty: the denial that starts
 * it must reach the server) or when it is under 1 ms. With `T` the time one unit costs and
 * `limit` the burst (capacity), the next unit is free when the limiter is `(limit - 1) * T`
 * from idle (admitted iff debt + T <= limit * T); a window's, at its end. The reply's
 * `resetAfterMs` is rounded up, so 1 ms less never denies a call the server would admit. */
export function exhaustedWait(p: PolicyOrName, d: Decision): number | undefined {
  if (typeof p === "string" || (p.penalty?.length ?? 0) > 0 || !d.allowed || d.remaining !== 0 || d.cached || d.insured) {
    return undefined;
  }
  let wait: number;
  if (WINDOWS.has(p.algo)) {
    wait = d.resetAfterMs - 1;
  } else if (RATES.has(p.algo)) {
    const period = durationMs(p.window);
    if (period === undefined) return undefined;
    wait = d.resetAfterMs - 1 - ((d.limit - 1) * period) / p.quota;
  } else {
    return undefined;
  }
  return wait >= 1 ? wait : undefined;
}

export interface DenialCacheOptions {
  /** The most entries held at once (default 10,000). */
  maxEntries?: number;
  /** Milliseconds, monotonic (default `performance.now()`). */
  clock?: () => number;
  /** Whether an admission that left nothing is written too (`exhaustedWait`; default false). */
  exhausted?: boolean;
}

export class DenialCache {
  readonly maxEntries: number;
  readonly clock: () => number;
  /** Whether an admission that left nothing is written too (`exhaustedWait`). */
  readonly exhausted: boolean;
  /** Insertion order is recency: a hit is deleted and set again, the first is the LRU. */
  readonly #map = new Map<string, Entry>();
  /** The most entries ever held at once (never above maxEntries). */
  highWater = 0;

  constructor(o: DenialCacheOptions = {}) {
    const max = o.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (typeof max !== "number" || !Number.isInteger(max) || max < 1) {
      throw refused(typeof max === "number" ? RangeError : TypeError, `maxEntries is an integer of at least 1: ${String(max)}`);
    }
    if (o.exhausted !== undefined && typeof o.exhausted !== "boolean") {
      throw refused(TypeError, `exhausted is a boolean: ${String(o.exhausted)}`);
    }
    this.maxEntries = max;
    this.clock = o.clock ?? (() => performance.now());
    this.exhausted = o.exhausted ?? false;
  }

  get size(): number {
    return this.#map.size;
  }

  static #id(key: string, p: PolicyOrName): string {
    return `${policyId(p)}\u0000${held(key)}`;
  }

  /** The cached denial of `cost` on (key, policy), or undefined: nothing cached, expired
   * (then dropped), or a cost smaller than the denied one. */
  get(key: string, p: PolicyOrName, cost: number): Decision | undefined {
    const id = DenialCache.#id(key, p);
    const e = this.#map.get(id);
    if (e === undefined) return undefined;
    const now = this.clock();
    if (e.until <= now) {
      this.#map.delete(id);
      return undefined;
    }
    if (cost < e.cost) return undefined;
    this.#map.delete(id);
    this.#map.set(id, e);
    const retry = Math.max(1, Math.ceil(e.until - now));
    const reset = Math.max(0, Math.ceil(e.resetAt - now));
    return new Decision(false, e.limit, e.remaining, retry, reset, e.backend, p, false, true);
  }

  /** Records `d` (the server's answer to a call of `cost` sent at `sent`) if it is a denial
   * with retryAfterMs > 0, or, with `exhausted` on, a spending (`spent`) admission that left
   * nothing (`exhaustedWait`), as a denial of any cost until then; anything else is not
   * written. */
  put(key: string, p: PolicyOrName, cost: number, d: Decision, sent: number, spent = false): void {
    let entry: Entry;
    if (d.allowed) {
      const wait = spent && this.exhausted ? exhaustedWait(p, d) : undefined;
      if (wait === undefined) return;
      entry = { cost: 1, remaining: 0, until: sent + wait, resetAt: sent + d.resetAfterMs, limit: d.limit, backend: d.backend };
    } else {
      if (d.retryAfterMs <= 0 || d.cached) return;
      entry = {
        cost, remaining: d.remaining, until: sent + d.retryAfterMs, resetAt: sent + d.resetAfterMs, limit: d.limit,
        backend: d.backend,
      };
    }
    const id = DenialCache.#id(key, p);
    this.#map.delete(id);
    this.#map.set(id, entry);
    while (this.#map.size > this.maxEntries) this.#map.delete(this.#map.keys().next().value as string);
    if (this.#map.size > this.highWater) this.highWater = this.#map.size;
  }

  /** Forgets (key, policy), or every entry of `key` when no policy is given. */
  drop(key: string, p?: PolicyOrName): void {
    if (p !== undefined) {
      this.#map.delete(DenialCache.#id(key, p));
      return;
    }
    const tail = `\u0000${held(key)}`;
    for (const id of [...this.#map.keys()]) if (id.endsWith(tail) && id.indexOf("\u0000") === id.length - tail.length) this.#map.delete(id);
  }

  clear(): void {
    this.#map.clear();
  }
}
