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
 *   and an expired entry dropped when it is met.
 *
 * What it gives up: a `REFUND`, a raised policy or a lifted ban made elsewhere (another
 * process, `redis-cli`) is seen at the latest when R ends; the same limiter's own `refund`
 * and `ban` drop the key's entries at once.
 */
import { Decision } from "./decision.js";
import { refused } from "./errors.js";
import type { PolicyOrName } from "./policy.js";

/** Entries kept by default. */
export const DEFAULT_MAX_ENTRIES = 10_000;

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

export interface DenialCacheOptions {
  /** The most entries held at once (default 10,000). */
  maxEntries?: number;
  /** Milliseconds, monotonic (default `performance.now()`). */
  clock?: () => number;
}

export class DenialCache {
  readonly maxEntries: number;
  readonly clock: () => number;
  /** Insertion order is recency: a hit is deleted and set again, the first is the LRU. */
  readonly #map = new Map<string, Entry>();
  /** The most entries ever held at once (never above maxEntries). */
  highWater = 0;

  constructor(o: DenialCacheOptions = {}) {
    const max = o.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (typeof max !== "number" || !Number.isInteger(max) || max < 1) {
      throw refused(typeof max === "number" ? RangeError : TypeError, `maxEntries is an integer of at least 1: ${String(max)}`);
    }
    this.maxEntries = max;
    this.clock = o.clock ?? (() => performance.now());
  }

  get size(): number {
    return this.#map.size;
  }

  static #id(key: string, p: PolicyOrName): string {
    return `${policyId(p)}\u0000${key}`;
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
   * with retryAfterMs > 0; anything else is not written. */
  put(key: string, p: PolicyOrName, cost: number, d: Decision, sent: number): void {
    if (d.allowed || d.retryAfterMs <= 0 || d.cached) return;
    const id = DenialCache.#id(key, p);
    this.#map.delete(id);
    this.#map.set(id, {
      cost, remaining: d.remaining, until: sent + d.retryAfterMs, resetAt: sent + d.resetAfterMs, limit: d.limit,
      backend: d.backend,
    });
    while (this.#map.size > this.maxEntries) this.#map.delete(this.#map.keys().next().value as string);
    if (this.#map.size > this.highWater) this.highWater = this.#map.size;
  }

  /** Forgets (key, policy), or every entry of `key` when no policy is given. */
  drop(key: string, p?: PolicyOrName): void {
    if (p !== undefined) {
      this.#map.delete(DenialCache.#id(key, p));
      return;
    }
    const tail = `\u0000${key}`;
    for (const id of [...this.#map.keys()]) if (id.endsWith(tail) && id.indexOf("\u0000") === id.length - tail.length) this.#map.delete(id);
  }

  clear(): void {
    this.#map.clear();
  }
}
