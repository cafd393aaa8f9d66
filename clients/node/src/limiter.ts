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
import type { AllDecision, Backend, Decision } from "./decision.js";
import { LIBRARY_SOURCE } from "./library.js";
import * as policy from "./policy.js";
import { countArg } from "./policy.js";
import type { Duration, PolicyOrName } from "./policy.js";
import { functionMissing, isReplyError, libraryUnavailable, unknownCommand } from "./classify.js";
import { NOT_LOADED, NO_FUNCTIONS, refused } from "./errors.js";
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

export class Limiter {
  /** undefined until the first call, then "module" or "library". */
  backend: Backend | undefined;
  private readonly transport: Transport;
  /** The gate of a transport given without one. */
  private ownGate: LoadGate | undefined;

  /** `client`: node-redis or ioredis (a client or a cluster), or a `sendCommand(args)`
   * function resolving with the reply. */
  constructor(client: unknown) {
    this.transport = transportOf(client);
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
   * policy's name, `RL.LIMIT key name [COST n] [PEEK] [BLOCK ms]`. */
  async decide(key: string, p: PolicyOrName, o: DecideOptions = {}): Promise<Decision> {
    return this.run(commands.decide(text(key, "key"), p, o));
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

  /** `RL.<ALGO> key params REFUND n` (`RL.LIMIT key name REFUND n`): give `n` units back
   * (always admitted). */
  async refund(key: string, p: PolicyOrName, n: number): Promise<Decision> {
    return this.run(commands.decide(text(key, "key"), p, { refund: n }));
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
    const per = await readShadowed((cmd) => this.run(cmd), layers.map((l) => l[0]), replied.layers, spent);
    const decision: AllDecision = { ...replied, binding: per[replied.index], layers: per };
    const held = spent.filter((i) => !per[i].shadowed);
    const reservation = new Reservation<AllDecision>(estimate, sentAt, held.map((i) => per[i].resetAfterMs),
      (charge, which) => this.run(commands.allCharged(which.map((j) => [layers[held[j]][0], layers[held[j]][1], charge]))));
    return { decision, reservation };
  }

  /** `RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name [COST n]`): what the call
   * would decide, writing nothing. */
  async peek(key: string, p: PolicyOrName, o: { cost?: number } = {}): Promise<Decision> {
    return this.run(commands.peek(text(key, "key"), p, o.cost));
  }

  /** `RL.ALL`: every [key, policy, cost?] layer admits, and is spent, or none is. A layer's
   * policy may be a server policy's name (a `POLICY name` clause); a `SHADOW` one denies
   * nothing, and its would-be denial is its decision's `shadowed`. */
  async all(layers: readonly Layer[], o: { peek?: boolean } = {}): Promise<AllDecision> {
    if (!Array.isArray(layers)) throw refused(TypeError, "all() takes an array of [key, policy, cost?] layers");
    layers.forEach((l, i) => text(l?.[0], `layer ${i}'s key`));
    return this.run(commands.allOf(layers, o.peek ?? false));
  }

  /** `RL.ACQUIRE key limit timeout lease_id`: take (or renew) one of `limit` leases. */
  async acquire(key: string, limit: number, timeout: Duration, leaseId: string,
    o: { peek?: boolean; blockMs?: number } = {}): Promise<Decision> {
    return this.run(commands.acquire(text(key, "key"), limit, timeout, text(leaseId, "leaseId"), o));
  }

  /** `RL.BAN key ms`: `key` denied for `ms` milliseconds from now (an integer, 0 to 3650 days)
   * whatever its limiter and its rate, replacing any penalty (a later penalty escalates from
   * it); `ms` 0 lifts a ban or a penalty. The key may hold any limiter's state, or nothing (it
   * then holds the ban alone, until it ends). Resolves true if the key existed. */
  async ban(key: string, ms: number): Promise<boolean> {
    return this.run(commands.ban(text(key, "key"), ms));
  }

  /** `RL.RELEASE key lease_id`: true if the lease was held. */
  async release(key: string, leaseId: string): Promise<boolean> {
    return this.run(commands.release(text(key, "key"), text(leaseId, "leaseId")));
  }
}
