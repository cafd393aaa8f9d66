/**
 * `Limiter`: the commands over your client, on the module or the Functions library.
 *
 * A limiter sends the module's command first. A server that answers `unknown command` has no
 * module: from then on the limiter calls the library with `FCALL`, and where the library is
 * missing (`Function not found`: never loaded, `FUNCTION FLUSH`, a failover to a server
 * without it) it loads the copy shipped in this package (`FUNCTION LOAD REPLACE`) and calls
 * again, once; where it cannot (the load refused, no Functions) it rejects with a
 * LibraryUnavailableError (a ServerUnavailableError where the server cannot load it right
 * now: `OOM`, `READONLY`). Concurrent calls that find the library missing make one load,
 * and a failed load is tried again only after a backoff (loading.ts). Any other error is the
 * command's own, as its case (errors.ts: ConfigurationError, ForeignKeyError,
 * ServerUnavailableError) or as the driver gave it.
 *
 * The six limiters and their policies take `{ penalty, escalate }` (`PENALTY d [ESCALATE
 * max]`): a denial starts a penalty of `penalty` on the key, during which every call on it is
 * denied (an ordinary denial, `retryAfterMs` to the penalty's end); with `escalate`, a
 * penalty that starts within `escalate` of the previous one's end lasts twice as long, at
 * most `escalate`. `ban(key, ms)` sets a key's penalty by hand.
 *
 * Wherever a policy is taken, a string names a policy defined on the server (`RL.POLICY
 * SET`, or the lines written into the library by scripts/library-policies.py):
 * `limit(key, "free")` is `RL.LIMIT key free` (`FCALL rl_limit 1 key free`).
 *
 * Every method returns a promise, and an argument it cannot send (a key or lease id that is
 * not a string, a count that is not an integer, a policy that is neither a policy object nor
 * a string) rejects it with a TypeError (a RangeError for `all([])` and for a string that
 * cannot be a policy's name) before anything is sent, each also a ConfigurationError:
 * ioredis would send `null` as "", one bucket shared by every such call.
 */
import * as commands from "./commands.js";
import type { Command, DecideOptions, Layer } from "./commands.js";
import { DenialCache } from "./cache.js";
import { Insurance, type InsuranceOptions } from "./insurance.js";
import type { AllDecision, Backend, Decision, TopEntry } from "./decision.js";
import { topEntries } from "./decision.js";
import { Metrics, type Result } from "./metrics.js";
import { LIBRARY_SOURCE } from "./library.js";
import * as policy from "./policy.js";
import { countArg, policyOrName } from "./policy.js";
import type { Duration, PolicyOrName } from "./policy.js";
import { functionMissing, isReplyError, libraryUnavailable, unknownCommand } from "./classify.js";
import { NOT_LOADED, NO_FUNCTIONS, ServerUnavailableError, refused } from "./errors.js";
import { LoadGate } from "./loading.js";
import { Reservation, type Reserved } from "./reservation.js";
import { readShadowed } from "./reserving.js";
import { type Transport, transportOf } from "./transport.js";

/** A spelt-out limiter's options: the call's (`cost`, `peek`, `blockMs`) and its policy's
 * (`name`, `penalty`, `escalate`). */
type Named = DecideOptions & policy.PolicyOptions;

/** `value`, if it is a string, else a TypeError naming it. */
function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw refused(TypeError, `${what} must be a string, not ${value === null ? "null" : typeof value}`);
  return value;
}

/** A call's `layer` label: its policy's name, `default` for a policy object without one. */
export const policyLabel = (p: PolicyOrName): string => (typeof p === "string" ? p : p.name || "default");

/** The counter a decision (or the error instead) adds to. */
export function resultOf(d: { allowed: boolean; cached?: boolean; shadowed?: boolean; insured?: boolean } | undefined,
  err?: unknown): Result {
  if (d === undefined) return err instanceof ServerUnavailableError ? "unavailable" : "error";
  if (d.cached) return "over_limit_with_local_cache";
  if (d.insured) return d.allowed ? "insured_within_limit" : "insured_over_limit";
  if (!d.allowed) return "over_limit";
  return d.shadowed ? "shadow_mode" : "within_limit";
}

export interface LimiterOptions {
  /** The denial cache (cache.ts): true (the default) for a `new DenialCache()` of its own
   * (10,000 entries), a `new DenialCache({ maxEntries })` of your choosing, or false for none. */
  denialCache?: boolean | DenialCache;
  /** Insurance (insurance.ts), off by default: `{ nodes }` (the processes sharing the server)
   * or a `new Insurance({ nodes, maxWindows, logger })`. While the server cannot decide, this
   * process decides alone, each policy divided by `nodes`. */
  insurance?: InsuranceOptions | Insurance;
}

export class Limiter {
  /** undefined until the first call, then "module" or "library". */
  backend: Backend | undefined;
  /** The denial cache, or undefined when off. */
  readonly cache: DenialCache | undefined;
  /** This limiter's counters (metrics.ts); `rateLimitLayers` counts its requests here too. */
  readonly metrics: Metrics;
  /** The insurance, or undefined when off (the default). */
  readonly insurance: Insurance | undefined;
  private readonly transport: Transport;
  /** The gate of a transport given without one. */
  private ownGate: LoadGate | undefined;

  /** `client`: node-redis or ioredis (a client or a cluster), or a `sendCommand(args)`
   * function resolving with the reply. */
  constructor(client: unknown, o: LimiterOptions = {}) {
    this.transport = transportOf(client);
    const c = o.denialCache ?? true;
    if (c instanceof DenialCache) this.cache = c;
    else if (c === true) this.cache = new DenialCache();
    else if (c === false) this.cache = undefined;
    else throw refused(TypeError, `denialCache is true, false or a DenialCache, not ${String(c)}`);
    this.metrics = new Metrics(this.cache);
    const i = o.insurance;
    if (i === undefined || i === null) this.insurance = undefined;
    else this.insurance = i instanceof Insurance ? i : new Insurance(i);
  }

  /** `cmd`, unless `probe()` answers it (a cached denial); `record(result, sent)` with its
   * result and the moment it was sent, `count(result, error)` either way; when the server
   * cannot decide, `insure(error)`'s decision if it gives one. Any other answer (an error
   * included) is the server's: the insurance, if on, switches off. */
  private async through<T>(cmd: Command<T>, probe?: () => T | undefined, record?: (r: T, sent: number) => void,
    count?: (r: T | undefined, err?: unknown) => void, insure?: (err: unknown) => T | undefined): Promise<T> {
    const hit = probe?.();
    if (hit !== undefined) {
      count?.(hit);
      return hit;
    }
    const sent = this.cache?.clock() ?? 0;
    const ticket = this.insurance?.ticket();
    let result: T;
    try {
      result = await this.run(cmd);
    } catch (err) {
      if (err instanceof ServerUnavailableError) {
        const insured = insure?.(err);
        if (insured !== undefined) {
          count?.(insured);
          return insured;
        }
      } else if (this.insurance?.on) {
        this.insurance.switch(false, undefined, ticket);
      }
      count?.(undefined, err);
      throw err;
    }
    if (this.insurance?.on) this.insurance.switch(false, undefined, ticket);
    record?.(result, sent);
    count?.(result);
    return result;
  }

  /** One (key, policy) through the denial cache (unless `cached` is false), counted under
   * the policy's name when `counted`; insured when both (a decision that spends). */
  private one(cmd: Command<Decision>, key: string, p: PolicyOrName, cost: number, counted: boolean, cached = true): Promise<Decision> {
    const cache = cached ? this.cache : undefined;
    const insure = cached && counted ? this.insure([[key, p, cost]]) : undefined;
    return this.through(cmd,
      cache && (() => cache.get(key, p, cost)),
      cache && ((d, sent) => cache.put(key, p, cost, d, sent, counted)),
      counted ? (d, err) => this.metrics.add(policyLabel(p), resultOf(d, err)) : undefined,
      insure && ((err) => insure(err)?.binding));
  }

  /** The insurance's decision of `given` ([key, policy, cost] each) as an `RL.ALL`'s, when on
   * and every layer can be insured (the switch then on, logged once). */
  private insure(given: readonly (readonly [string, PolicyOrName, number])[]): ((err: unknown) => AllDecision | undefined) | undefined {
    const insurance = this.insurance;
    if (insurance === undefined) return undefined;
    return (err) => {
      const got = insurance.decide(given, this.backend ?? "module");
      if (got === undefined) return undefined;
      insurance.switch(true, err);
      return { allowed: got.allowed, binding: got.layers[got.index] as Decision, layers: got.layers, index: got.index, insured: true };
    };
  }

  /** `RL.ALL` through the denial cache: a request one of whose layers is cached denied is
   * denied here (the server would deny it too: all or nothing), reporting that layer (the one
   * denied longest, as the server's binding layer). A peek is always sent (it asks for every
   * layer's state); its denials are cached. Not counted here: `all` and the middleware do. */
  allDecided(layers: readonly Layer[], peek: boolean): { cmd: Command<AllDecision>; probe?: () => AllDecision | undefined;
    record?: (r: AllDecision, sent: number) => void; policies: PolicyOrName[]; insure?: (err: unknown) => AllDecision | undefined } {
    const cmd = commands.allOf(layers, peek);
    const given = layers.map(([key, p, cost]) => [key, policyOrName(p), cost ?? 1] as const);
    const policies = given.map((g) => g[1]);
    const cache = this.cache;
    const insure = peek ? undefined : this.insure(given);
    if (cache === undefined) return { cmd, policies, insure };
    const record = (r: AllDecision, sent: number): void => {
      r.layers.forEach((d, i) => d && cache.put(given[i][0], given[i][1], given[i][2], d, sent, !peek && r.allowed));
    };
    if (peek) return { cmd, record, policies };
    const probe = (): AllDecision | undefined => {
      const hits = given.map(([key, p, cost]) => cache.get(key, p, cost));
      let index = -1;
      hits.forEach((d, i) => {
        if (d !== undefined && (index < 0 || d.retryAfterMs > (hits[index] as Decision).retryAfterMs)) index = i;
      });
      if (index < 0) return undefined;
      return { allowed: false, binding: hits[index] as Decision, layers: hits, index, cached: true };
    };
    return { cmd, probe, record, policies, insure };
  }

  /** `RL.ALL` as the middleware sends it: through the denial cache and the insurance, not
   * counted. */
  decideAll(layers: readonly Layer[]): Promise<AllDecision> {
    const { cmd, probe, record, insure } = this.allDecided(layers, false);
    return this.through(cmd, probe, record, undefined, insure);
  }

  private async run<T>(cmd: Command<T>): Promise<T> {
    const key = commands.nodeKey(cmd);
    if (this.backend !== "library") {
      try {
        const reply = await this.transport.send([...cmd.module], key, cmd.readOnly);
        this.backend = "module";
        return cmd.decode(reply, "module");
      } catch (err) {
        if (!unknownCommand(err)) {
          if (isReplyError(err)) this.backend = "module"; // the module's own error
          throw err;
        }
        this.backend = "library";
      }
    }
    const args = commands.libraryArgs(cmd);
    let reply: unknown;
    const sent = performance.now();
    try {
      reply = await this.transport.send(args, key, cmd.readOnly);
    } catch (err) {
      if (unknownCommand(err)) throw libraryUnavailable(err, NO_FUNCTIONS); // no FCALL
      if (!functionMissing(err)) throw err;
      // One load at a time (the others wait for it), none while backing off after a failure;
      // a LibraryUnavailableError (ServerUnavailableError) if refused.
      const gate = this.transport.gate ?? (this.ownGate ??= new LoadGate());
      await gate.load(() => this.transport.loadLibrary(LIBRARY_SOURCE, key), sent);
      try {
        reply = await this.transport.send(args, key, cmd.readOnly);
      } catch (again) {
        throw functionMissing(again) ? libraryUnavailable(again, NOT_LOADED) : again; // loaded, and gone again
      }
    }
    return cmd.decode(reply, "library");
  }

  /** `FUNCTION LOAD REPLACE` this package's `functions/rl.lua` (on every master of a
   * cluster). Calls do it by themselves where the library is missing. */
  loadLibrary(): Promise<void> {
    return this.transport.loadLibrary(LIBRARY_SOURCE);
  }

  /** `RL.<ALGO> key params [COST n] [PEEK] [BLOCK ms]` for any policy; for a server
   * policy's name, `RL.LIMIT key name [COST n] [PEEK] [BLOCK ms]`. Through the denial cache
   * (docs/node.md, "The denial cache"): a cached denial of (key, policy) for this cost or
   * less answers without a call, and the server's denial is cached; a `blockMs` call neither
   * reads nor writes it. Counted in `metrics`, unless `peek`. */
  async decide(key: string, p: PolicyOrName, o: DecideOptions = {}): Promise<Decision> {
    const cmd = commands.decide(text(key, "key"), p, o);
    return this.one(cmd, key, policyOrName(p), o.cost ?? 1, !o.peek, o.blockMs === undefined);
  }

  /** `RL.LIMIT key name [COST n] [PEEK] [BLOCK ms]`: decides by the policy the server holds
   * under `name` (`RL.POLICY SET`, or written into the library), exactly as its own command
   * would. A policy object is decided as `decide` does. */
  async limit(key: string, p: PolicyOrName, o: DecideOptions = {}): Promise<Decision> {
    return this.decide(key, p, o);
  }

  /** `RL.GCRA key limit period [BURST burst] [PENALTY d [ESCALATE max]]`. */
  async gcra(key: string, limit: number, period: Duration, o: Named & { burst?: number } = {}): Promise<Decision> {
    return this.decide(key, policy.gcra(limit, period, o), o);
  }

  /** `RL.TOKENBUCKET key capacity refill period [PENALTY d [ESCALATE max]]`. */
  async tokenBucket(key: string, capacity: number, refill: number, period: Duration, o: Named = {}): Promise<Decision> {
    return this.decide(key, policy.tokenBucket(capacity, refill, period, o), o);
  }

  /** `RL.LEAKY key capacity leak period [PENALTY d [ESCALATE max]]`. */
  async leaky(key: string, capacity: number, leak: number, period: Duration, o: Named = {}): Promise<Decision> {
    return this.decide(key, policy.leaky(capacity, leak, period, o), o);
  }

  /** `RL.SLIDING key limit window [PENALTY d [ESCALATE max]]`. */
  async sliding(key: string, limit: number, window: Duration, o: Named = {}): Promise<Decision> {
    return this.decide(key, policy.sliding(limit, window, o), o);
  }

  /** `RL.SLIDINGLOG key limit window [PENALTY d [ESCALATE max]]`. */
  async slidingLog(key: string, limit: number, window: Duration, o: Named = {}): Promise<Decision> {
    return this.decide(key, policy.slidingLog(limit, window, o), o);
  }

  /** `RL.FIXED key limit window [PENALTY d [ESCALATE max]]`. */
  async fixed(key: string, limit: number, window: Duration, o: Named = {}): Promise<Decision> {
    return this.decide(key, policy.fixed(limit, window, o), o);
  }

  /** `RL.QUOTA key limit DAY|WEEK|MONTH [TZ zone] [ANCHOR a] [PENALTY d [ESCALATE max]]`. */
  async quota(key: string, limit: number, unit: string, o: DecideOptions & policy.QuotaOptions = {}): Promise<Decision> {
    return this.decide(key, policy.quota(limit, unit, o), o);
  }

  /** `RL.<ALGO> key params REFUND n` (`RL.LIMIT key name REFUND n`): give `n` units back
   * (always admitted). */
  async refund(key: string, p: PolicyOrName, n: number): Promise<Decision> {
    const cmd = commands.decide(text(key, "key"), p, { refund: n });
    this.cache?.drop(key, policyOrName(p)); // seen at once here
    return this.run(cmd);
  }

  /** `RL.<ALGO> key params DEBIT n` (`RL.LIMIT key name DEBIT n`): charge `n` units after
   * the fact, whatever is left (always admitted; the limiter may go into debt, and then
   * denies until it has refilled: the decision's `retryAfterMs` is when a cost of 1 is
   * admitted again). */
  async debit(key: string, p: PolicyOrName, n: number): Promise<Decision> {
    return this.run(commands.decide(text(key, "key"), p, { debit: n }));
  }

  /** Spends `COST estimate` now; admitted, `reservation.settle(actual)` later sends the
   * difference (`DEBIT` or `REFUND`), once. Denied, `reservation` is null (nothing spent). A
   * `SHADOW` policy's denial, admitted, reserved nothing: its reservation settles by sending
   * nothing (see reserving.ts). */
  async reserve(key: string, p: PolicyOrName, estimate: number): Promise<Reserved<Decision>> {
    const k = text(key, "key");
    countArg(estimate, "estimate");
    const sentAt = performance.now();
    const replied = await this.run(commands.decide(k, p, { cost: estimate }));
    if (!replied.allowed) return { decision: replied, reservation: null };
    const [decision] = await readShadowed((cmd) => this.run(cmd), [k], [replied], [0]);
    const held = decision.shadowed ? [] : [decision.resetAfterMs];
    const reservation = new Reservation<Decision>(estimate, sentAt, held, (charge) => this.run(commands.decide(k, p, charge)));
    return { decision, reservation };
  }

  /** One `RL.ALL` reserving `estimate` on every `[key, policy]` layer (or `[key, policy,
   * null]`) and spending its own cost on every `[key, policy, cost]` one; admitted,
   * `reservation.settle(actual)` sends one `RL.ALL` over the layers that reserved the
   * estimate alone (not one a `SHADOW` policy denied, which spent nothing), each with the
   * difference (`DEBIT` or `REFUND`). At least one layer must reserve the estimate. */
  async reserveAll(layers: readonly Layer[], estimate: number): Promise<Reserved<AllDecision>> {
    if (!Array.isArray(layers)) throw refused(TypeError, "reserveAll() takes an array of [key, policy, cost?] layers");
    layers.forEach((l, i) => text(l?.[0], `layer ${i}'s key`));
    countArg(estimate, "estimate");
    // A cost of null or undefined is no cost: the layer reserves the estimate.
    const spent = layers.flatMap((l, i) => (l[2] === undefined || l[2] === null ? [i] : []));
    if (layers.length > 0 && spent.length === 0) {
      throw refused(RangeError, "reserveAll() needs a [key, policy] layer (without a cost) to reserve the estimate on");
    }
    const sentAt = performance.now();
    const replied = await this.run(commands.allCharged(layers.map(([key, pol, cost]) => [key, pol, { cost: cost ?? estimate }])));
    if (!replied.allowed) return { decision: replied, reservation: null };
    const per = await readShadowed((cmd) => this.run(cmd), layers.map((l) => l[0]), replied.layers as readonly Decision[], spent);
    const decision: AllDecision = { ...replied, binding: per[replied.index], layers: per };
    const held = spent.filter((i) => !per[i].shadowed);
    const reservation = new Reservation<AllDecision>(estimate, sentAt, held.map((i) => per[i].resetAfterMs),
      (charge, which) => this.run(commands.allCharged(which.map((j) => [layers[held[j]][0], layers[held[j]][1], charge]))));
    return { decision, reservation };
  }

  /** `RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name [COST n]`): what the call
   * would decide, writing nothing. A cached denial answers it without a call, and its denial
   * is cached (the server's denial as much as a call's); it is not counted. */
  async peek(key: string, p: PolicyOrName, o: { cost?: number } = {}): Promise<Decision> {
    const cmd = commands.peek(text(key, "key"), p, o.cost);
    return this.one(cmd, key, policyOrName(p), o.cost ?? 1, false);
  }

  /** `RL.ALL`: every [key, policy, cost?] layer admits, and is spent, or none is. A layer's
   * policy may be a server policy's name (a `POLICY name` clause); a `SHADOW` one denies
   * nothing, and its would-be denial is its decision's `shadowed`. Through the denial cache:
   * a layer cached denied denies the call without one (its other layers are then undefined in
   * `layers`); each denied layer of the server's reply is cached; with `peek` it is always
   * sent. Counted in `metrics` (under the binding layer's policy name), unless `peek`. */
  async all(layers: readonly Layer[], o: { peek?: boolean } = {}): Promise<AllDecision> {
    if (!Array.isArray(layers)) throw refused(TypeError, "all() takes an array of [key, policy, cost?] layers");
    layers.forEach((l, i) => text(l?.[0], `layer ${i}'s key`));
    const peek = o.peek ?? false;
    const { cmd, probe, record, policies, insure } = this.allDecided(layers, peek);
    const count = peek ? undefined : (r: AllDecision | undefined, err?: unknown): void => {
      if (r === undefined) {
        this.metrics.add(policies.map(policyLabel).join("+"), resultOf(undefined, err));
        return;
      }
      const shadowAt = r.layers.findIndex((d) => d?.shadowed);
      const at = !r.allowed || shadowAt < 0 ? r.index : shadowAt;
      this.metrics.add(policyLabel(policies[at]), allResult(r));
    };
    return this.through(cmd, probe, record, count, insure);
  }

  /** `RL.ACQUIRE key limit timeout lease_id`: take (or renew) one of `limit` leases. */
  async acquire(key: string, limit: number, timeout: Duration, leaseId: string,
    o: { peek?: boolean; blockMs?: number } = {}): Promise<Decision> {
    return this.run(commands.acquire(text(key, "key"), limit, timeout, text(leaseId, "leaseId"), o));
  }

  /** `RL.BAN key ms`: `key` denied for `ms` milliseconds from now (an integer, 0 to 3650 days)
   * whatever its limiter and its rate, replacing any penalty (a later penalty escalates from
   * it); `ms` 0 lifts a ban or a penalty. The key may hold any limiter's state, or nothing (it
   * then holds the ban alone, until it ends). Resolves true if the key existed. Drops the
   * key's entries from the denial cache. */
  async ban(key: string, ms: number): Promise<boolean> {
    const cmd = commands.ban(text(key, "key"), ms);
    this.cache?.drop(key); // the key's entries: seen at once here
    return this.run(cmd);
  }

  /** `RL.TOP policy [COUNT n]` (or, with `{ command: "rl.gcra" }`, `RL.TOP COMMAND rl.gcra
   * [COUNT n]`): the keys the policy (or the command's spelled-out calls) denied most on the
   * node asked since its counters were cleared, heaviest first. The module's only (the
   * Functions library keeps no counters); on a cluster it asks the node of the policy's (or
   * command's) name's slot: give each node's client to ask them all. */
  async top(policyName: string | null, o: { command?: string; count?: number } = {}): Promise<TopEntry[]> {
    if ((policyName === null) === (o.command === undefined)) {
      throw new TypeError("top() takes a policy's name or { command }, not both");
    }
    const count = countArg(o.count ?? 10, "count");
    const target = o.command === undefined ? [text(policyName ?? "", "policy")] : ["COMMAND", text(o.command, "command")];
    const reply = await this.transport.send(["RL.TOP", ...target, "COUNT", count], target[target.length - 1], true);
    return topEntries(reply);
  }

  /** `RL.RELEASE key lease_id`: true if the lease was held. */
  async release(key: string, leaseId: string): Promise<boolean> {
    return this.run(commands.release(text(key, "key"), text(leaseId, "leaseId")));
  }
}

/** An `RL.ALL` decision's counter. */
export function allResult(r: AllDecision): Result {
  if (r.cached) return "over_limit_with_local_cache";
  if (r.insured) return r.allowed ? "insured_within_limit" : "insured_over_limit";
  if (!r.allowed) return "over_limit";
  return r.layers.some((d) => d?.shadowed) ? "shadow_mode" : "within_limit";
}
