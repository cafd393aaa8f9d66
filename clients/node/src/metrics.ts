/**
 * Counters of the decisions this process makes, per layer and result, as a snapshot (a plain
 * object) and as Prometheus text (the text exposition format 0.0.4, written here: no
 * dependency, no global registry; serve it on the route you choose).
 *
 *   rl_decisions_total{layer="ip",result="within_limit"} 41
 *   rl_decisions_total{layer="ip",result="over_limit_with_local_cache"} 1200
 *
 * The results, named as envoy's ratelimit service names its stats: `within_limit`
 * (admitted), `over_limit` (denied by the server), `over_limit_with_local_cache` (denied by
 * the denial cache, without a call), `shadow_mode` (would have been denied, let through: a
 * `SHADOW` policy's denial, or a middleware's `shadow: true`), `unavailable` (the server
 * could not decide: rejected, or answered 503), `unavailable_fail_open` (the same, let
 * through by `failOpen`), `insured_within_limit` and `insured_over_limit` (the server could
 * not decide: admitted or denied by the limiter's insurance, insurance.ts), `error` (any other
 * error, rejected).
 *
 * A limiter's calls are labelled by their policy's name (`default` for a policy object
 * without one), an `RL.ALL` by its binding layer's; a middleware labels its requests by its
 * layers' names. Each call or request counts once.
 */
import type { DenialCache } from "./cache.js";

export const RESULTS = ["within_limit", "over_limit", "over_limit_with_local_cache", "shadow_mode", "unavailable",
  "unavailable_fail_open", "insured_within_limit", "insured_over_limit", "error"] as const;
export type Result = (typeof RESULTS)[number];

const label = (v: string): string => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

export class Metrics {
  readonly #counts = new Map<string, Map<Result, number>>();

  constructor(readonly cache?: DenialCache) {}

  add(layer: string, result: Result, n = 1): void {
    if (!RESULTS.includes(result)) throw new RangeError(`unknown result ${String(result)}`);
    let per = this.#counts.get(layer);
    if (per === undefined) this.#counts.set(layer, (per = new Map()));
    per.set(result, (per.get(result) ?? 0) + n);
  }

  /** `{ layer: { result: count } }`, every result present for each layer seen (0 when none). */
  snapshot(): Record<string, Record<Result, number>> {
    const out: Record<string, Record<Result, number>> = {};
    for (const layer of [...this.#counts.keys()].sort()) {
      const per = this.#counts.get(layer) as Map<Result, number>;
      out[layer] = Object.fromEntries(RESULTS.map((r) => [r, per.get(r) ?? 0])) as Record<Result, number>;
    }
    return out;
  }

  /** Every decision counted. */
  total(): number {
    let n = 0;
    for (const per of this.#counts.values()) for (const v of per.values()) n += v;
    return n;
  }

  /** The counters (and the denial cache's size and bound) in Prometheus' text format. */
  prometheus(): string {
    const lines = [
      "# HELP rl_decisions_total Rate-limit decisions made by this process, per layer and result.",
      "# TYPE rl_decisions_total counter",
    ];
    for (const [layer, results] of Object.entries(this.snapshot())) {
      for (const [result, n] of Object.entries(results)) lines.push(`rl_decisions_total{layer="${label(layer)}",result="${result}"} ${n}`);
    }
    if (this.cache !== undefined) {
      lines.push(
        "# HELP rl_denial_cache_entries Identities the denial cache holds.",
        "# TYPE rl_denial_cache_entries gauge",
        `rl_denial_cache_entries ${this.cache.size}`,
        "# HELP rl_denial_cache_max_entries The denial cache's bound.",
        "# TYPE rl_denial_cache_max_entries gauge",
        `rl_denial_cache_max_entries ${this.cache.maxEntries}`,
      );
    }
    return lines.join("\n") + "\n";
  }
}
