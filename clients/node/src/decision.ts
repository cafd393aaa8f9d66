/**
 * Decisions: the commands' five integers, typed, and the HTTP headers they give, as
 * docs/commands.md's tables say ("The shared reply", "The IETF RateLimit fields"): seconds
 * are milliseconds divided by 1,000 and rounded up, so a client that waits them is never
 * early; `Retry-After` is sent on a denial only, and never for a request that can never be
 * admitted (`retryAfterMs === -1`).
 *
 * A decision by a server policy's name knows the name, not the quota and window: its
 * `RateLimit-Policy` is `"<name>";q=<limit>`, the reply's limit (the burst or capacity for a
 * rate), without `w`. A `SHADOW` policy's denial is answered admitted, with nothing left
 * and a non-zero `retry_after_ms`: `shadowed`. A `DEBIT` or `REFUND` is never denied, so its
 * decision (a settlement's among them) is never `shadowed`, whatever its reply.
 */
import { type Policy, type PolicyOrName, periodSeconds } from "./policy.js";

/** Which server side answered: the rl module's commands, or the Functions library. */
export type Backend = "module" | "library";

export const ceilSeconds = (ms: number): number => Math.ceil(ms / 1000);

export class Decision {
  /** The policy decided, for the IETF fields (undefined for leases and server policies). */
  readonly policy?: Policy;
  /** The server policy decided, by name (`RL.LIMIT`, `RL.PEEK POLICY`, a `POLICY` clause). */
  readonly policyName?: string;
  /** Whether this is a shadowed denial, where that is known besides the reply: false for a
   * DEBIT's or a REFUND's (never denied), a reservation's as read from its policy's
   * definition; undefined: read from the reply. */
  readonly #knownShadowed: boolean | undefined;

  constructor(
    readonly allowed: boolean,
    readonly limit: number,
    readonly remaining: number,
    /** Denied: ms until the same request is admitted, -1 if never. Allowed: 0 (the leaky
     * bucket: the delay before performing the request). */
    readonly retryAfterMs: number,
    /** ms until the limiter is idle again; 0 when idle. */
    readonly resetAfterMs: number,
    readonly backend: Backend,
    /** The policy decided: a policy object, or a server policy's name. */
    policy?: PolicyOrName,
    /** Whether it is a shadowed denial, where known besides the reply (see `shadowed`). */
    knownShadowed?: boolean,
    /** A denial given by the limiter's denial cache (cache.ts), without a call: the server's
     * denial as it stands now. */
    readonly cached = false,
    /** Decided by the limiter's insurance (insurance.ts), the server unavailable: this
     * process's share of the policy, in its own memory, nothing spent on the server. */
    readonly insured = false,
  ) {
    if (typeof policy === "string") this.policyName = policy;
    else this.policy = policy;
    this.#knownShadowed = knownShadowed;
  }

  static fromReply(reply: unknown, backend: Backend, policy?: PolicyOrName, knownShadowed?: boolean): Decision {
    const [allowed, limit, remaining, retry, reset] = (reply as unknown[]).slice(0, 5).map(Number);
    return new Decision(allowed === 1, limit, remaining, retry, reset, backend, policy, knownShadowed);
  }

  /** This decision, known to be a shadowed denial or not. */
  knownAs(shadowed: boolean): Decision {
    return new Decision(this.allowed, this.limit, this.remaining, this.retryAfterMs, this.resetAfterMs, this.backend,
      this.policy ?? this.policyName, shadowed, this.cached, this.insured);
  }

  /** A server `SHADOW` policy's denial, answered as admitted: allowed, nothing remaining, and
   * a non-zero `retryAfterMs` (when enforced, the request would wait that long, or never be
   * admitted: -1). Only a decision by a policy's name can be one, and never a `DEBIT`'s or a
   * `REFUND`'s (a settlement's too), which is never denied. A named LEAKY policy's admission
   * that fills its queue to the brim reads the same (its `retryAfterMs` is the delay before
   * performing it); `reserve` tells the two apart by the policy's definition (docs/node.md,
   * "Reservations"). */
  get shadowed(): boolean {
    return this.#knownShadowed ?? looksShadowed(this);
  }

  /** `Retry-After` in seconds on a denial; undefined when allowed or never admissible. */
  get retryAfter(): number | undefined {
    if (this.allowed || this.retryAfterMs < 0) return undefined;
    return ceilSeconds(this.retryAfterMs);
  }

  /** `X-RateLimit-Reset` and the IETF `t`: seconds until idle, rounded up. */
  get resetAfter(): number {
    return ceilSeconds(this.resetAfterMs);
  }

  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset`, and `Retry-After` on a denial. */
  headers(): Record<string, string> {
    const out: Record<string, string> = {
      "X-RateLimit-Limit": String(this.limit),
      "X-RateLimit-Remaining": String(this.remaining),
      "X-RateLimit-Reset": String(this.resetAfter),
    };
    if (this.retryAfter !== undefined) out["Retry-After"] = String(this.retryAfter);
    return out;
  }

  /** The IETF draft's `RateLimit-Policy` and `RateLimit` fields (and `Retry-After` on a
   * denial), for the policy named `name` (default: the policy's name, or the server
   * policy's, else "default"). A server policy's is `q=<limit>` without `w` (its window is
   * the server's). A lease's decision has no policy: `RateLimit` alone. */
  ietfHeaders(name?: string): Record<string, string> {
    const label = name || this.policy?.name || this.policyName || "default";
    const out: Record<string, string> = {};
    const w = this.policy ? periodSeconds(this.policy, this.resetAfterMs) : undefined;
    if (this.policy && w !== undefined) out["RateLimit-Policy"] = `"${label}";q=${this.policy.quota};w=${w}`;
    else if (this.policyName !== undefined) out["RateLimit-Policy"] = `"${label}";q=${this.limit}`;
    out["RateLimit"] = `"${label}";r=${this.remaining};t=${this.resetAfter}`;
    if (this.retryAfter !== undefined) out["Retry-After"] = String(this.retryAfter);
    return out;
  }

  /** `headers()` and `ietfHeaders(name)` together. */
  allHeaders(name?: string): Record<string, string> {
    return { ...this.headers(), ...this.ietfHeaders(name) };
  }
}

/** The reply of a `SHADOW` policy's denial: by a policy's name, allowed, nothing remaining,
 * a non-zero `retryAfterMs`. */
export function looksShadowed(d: Decision): boolean {
  return d.policyName !== undefined && d.allowed && d.remaining === 0 && d.retryAfterMs !== 0;
}

/** `RL.ALL`'s reply: the binding layer's decision, and every layer's in key order. */
export interface AllDecision {
  readonly allowed: boolean;
  readonly binding: Decision;
  /** Every layer's decision. A denial from the denial cache knows only its cached layers: the
   * others are undefined (no call was made). */
  readonly layers: readonly (Decision | undefined)[];
  /** The binding layer's position in `layers` (the first whose reply is the binding one). */
  readonly index: number;
  /** Denied by the denial cache, without a call. */
  readonly cached?: boolean;
  /** Decided by the limiter's insurance, the server unavailable (a denial knows only its
   * denying layer: the others are undefined). */
  readonly insured?: boolean;
}

/** One entry of `RL.TOP` (`Limiter.top`): a key the policy (or command) denied, its denials
 * counted, and how much that count may exceed the true number (Space-Saving: the true
 * denials lie between `denials - overestimate` and `denials`). A key longer than 128 bytes
 * is its first 128 bytes followed by `...`. */
export interface TopEntry {
  readonly key: string;
  readonly denials: number;
  readonly overestimate: number;
}

/** `RL.TOP`'s reply as entries. */
export function topEntries(reply: unknown): TopEntry[] {
  if (!Array.isArray(reply)) throw new TypeError(`RL.TOP replied ${String(reply)}`);
  return reply.map((e: unknown) => {
    const [key, denials, overestimate] = e as [unknown, unknown, unknown];
    return { key: String(key), denials: Number(denials), overestimate: Number(overestimate) };
  });
}
