/**
 * Insurance (docs/node.md, "Insurance"): while the server cannot decide (a
 * ServerUnavailableError: out of reach, a timeout, `LOADING`, `BUSY`, `MASTERDOWN`,
 * `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`), the process decides alone, in its own memory,
 * each layer's policy divided by the number of processes (`nodes`) sharing the server
 * (rate-limiter-flexible's `insuranceLimiter`; the NGINX package's `insurance`, the same rules):
 *
 * - Per layer key, a fixed window of the policy's duration admitting its count before the
 *   duration divided by `nodes`, rounded down, at least 1 (`gcra(100, "1s", { burst: 20 })` on
 *   4 processes admits 25 a second per key). The count is GCRA's limit, a window's limit, the
 *   token bucket's refill, the leaky bucket's leak; a burst, a capacity, a penalty are not
 *   applied, and what the server had counted, its bans and penalties, are not known here. A
 *   window starts with the key's first request during the outage.
 * - The layers of a call are decided all or nothing, as `RL.ALL` does: a denied call spends
 *   nothing.
 * - A server policy's name has no parameters here: a call one such layer is part of is not
 *   insured (it rejects with the ServerUnavailableError, as without insurance).
 * - Bounded: at most `maxWindows` windows, the least recently used dropped first (a dropped
 *   window starts again); a long key held as its digest, as the denial cache holds it.
 * - One log line at each switch, not per request: `logger.error` when the first call is
 *   insured, `logger.warn` when the server answers again (default: `console`).
 */
import { held } from "./cache.js";
import { Decision } from "./decision.js";
import { refused } from "./errors.js";
import { type PolicyOrName, durationMs } from "./policy.js";

/** Windows kept by default. */
export const DEFAULT_MAX_WINDOWS = 10_000;
/** The most nodes a policy is divided by (as the NGINX package's). */
export const MAX_NODES = 1_000_000;

/** Where the switches are logged: `console` by default. */
export interface InsuranceLogger {
  error(message: string): void;
  warn(message: string): void;
}

export interface InsuranceOptions {
  /** The processes sharing the server, 1 to 1,000,000: each policy is divided by it. */
  nodes: number;
  /** The most windows held at once (default 10,000), the least recently used dropped first. */
  maxWindows?: number;
  /** Where the two switches are logged (default `console`). */
  logger?: InsuranceLogger;
  /** Milliseconds, monotonic (default `performance.now()`). */
  clock?: () => number;
}

interface Window {
  count: number;
  readonly end: number;
}

/** The process's decision of a call's layers: whether admitted, the binding layer, and each
 * layer's decision (on a denial the denying layer's alone). */
export interface Insured {
  readonly allowed: boolean;
  readonly index: number;
  readonly layers: (Decision | undefined)[];
}

export class Insurance {
  readonly nodes: number;
  readonly maxWindows: number;
  readonly logger: InsuranceLogger;
  readonly clock: () => number;
  /** Insertion order is recency: a window used is deleted and set again. */
  readonly #windows = new Map<string, Window>();
  /** True while the process decides alone (between the two log lines). */
  on = false;
  /** The switches on so far: a call's ticket (`ticket()` when it was sent). */
  #ons = 0;
  /** The most windows ever held at once (never above maxWindows). */
  highWater = 0;

  constructor(o: InsuranceOptions) {
    const check = (v: unknown, what: string, top?: number): number => {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || (top !== undefined && v > top)) {
        const bound = top !== undefined ? `from 1 to ${top}` : "of at least 1";
        throw refused(typeof v === "number" ? RangeError : TypeError, `insurance's ${what} is an integer ${bound}: ${String(v)}`);
      }
      return v;
    };
    if (typeof o !== "object" || o === null) throw refused(TypeError, "insurance is { nodes } (the processes sharing the server)");
    this.nodes = check(o.nodes, "nodes", MAX_NODES);
    this.maxWindows = check(o.maxWindows ?? DEFAULT_MAX_WINDOWS, "maxWindows");
    this.logger = o.logger ?? console;
    this.clock = o.clock ?? (() => performance.now());
  }

  get size(): number {
    return this.#windows.size;
  }

  /** [this process's limit, the window in ms] for `p`, or undefined for a server policy's
   * name (or a duration the server would refuse). */
  share(p: PolicyOrName): [number, number] | undefined {
    if (typeof p === "string") return undefined;
    const window = durationMs(p.window);
    if (window === undefined || window <= 0) return undefined;
    return [Math.max(1, Math.floor(p.quota / this.nodes)), window];
  }

  /** The process's decision of `layers` ([key, policy, cost] each), all or nothing, or
   * undefined when a layer cannot be insured. */
  decide(layers: readonly (readonly [string, PolicyOrName, number])[], backend: Decision["backend"]): Insured | undefined {
    const shares = layers.map(([, p]) => this.share(p));
    if (shares.some((s) => s === undefined)) return undefined;
    const now = this.clock();
    const windows = layers.map(([key], i) => {
      const kept = held(key);
      let w = this.#windows.get(kept);
      if (w === undefined || w.end <= now) w = { count: 0, end: now + (shares[i] as [number, number])[1] };
      this.#windows.delete(kept);
      this.#windows.set(kept, w);
      return w;
    });
    const denied = layers.findIndex(([, , cost], i) => windows[i].count + cost > (shares[i] as [number, number])[0]);
    if (denied < 0) layers.forEach(([, , cost], i) => (windows[i].count += cost));
    while (this.#windows.size > this.maxWindows) this.#windows.delete(this.#windows.keys().next().value as string);
    if (this.#windows.size > this.highWater) this.highWater = this.#windows.size;
    const out = layers.map(([, p, cost], i) => {
      const limit = (shares[i] as [number, number])[0];
      const w = windows[i];
      const reset = Math.max(1, Math.ceil(w.end - now));
      if (denied < 0) return new Decision(true, limit, limit - w.count, 0, reset, backend, p, false, false, true);
      if (i !== denied) return undefined;
      const retry = cost > limit ? -1 : reset; // a cost no window holds: never
      return new Decision(false, limit, Math.max(0, limit - w.count), retry, reset, backend, p, false, false, true);
    });
    if (denied >= 0) return { allowed: false, index: denied, layers: out };
    let index = 0;
    out.forEach((d, i) => {
      if ((d as Decision).remaining < (out[index] as Decision).remaining) index = i;
    });
    return { allowed: true, index, layers: out };
  }

  /** A call's ticket, taken when it is sent: `switch(false, ticket)` with it when answered. */
  ticket(): number {
    return this.#ons;
  }

  /** On when a call was insured, off when the server answered a call sent while on (its
   * `ticket`): an answer to a call sent before the switch on (read after another call found
   * the server gone) is not the server back. Logged at each change. */
  switch(on: boolean, why?: unknown, ticket?: number): void {
    if (this.on === on) return;
    if (!on && ticket !== undefined && ticket !== this.#ons) return;
    this.on = on;
    if (on) this.#ons += 1;
    if (on) {
      const text = why instanceof Error ? why.message : String(why);
      this.logger.error(`rl: Redis unavailable, insurance on: this process decides alone, each policy divided by ${this.nodes} (${text})`);
    } else {
      this.logger.warn("rl: Redis answers again, insurance off: decisions are Redis's again");
    }
  }

  clear(): void {
    this.#windows.clear();
  }
}
