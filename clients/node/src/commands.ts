/**
 * Each call as the module's command and as the Functions library's `FCALL`, with its reply.
 * The two take the same words after the key (docs/managed-redis.md): `RL.<ALGO> key params`
 * is `FCALL rl_<algo> 1 key params`, `RL.ALL numkeys keys clauses` is `FCALL rl_all numkeys
 * keys clauses`, `RL.PEEK ALGO key params` is `FCALL_RO rl_peek 1 key ALGO params`. Nothing
 * here talks to a server.
 */
import { type AllDecision, type Backend, Decision } from "./decision.js";
import { refused } from "./errors.js";
import { KINDS } from "./facts.js";
import { type Duration, type Policy, countArg, durationArg } from "./policy.js";

export interface Command<T> {
  readonly module: readonly string[];
  readonly fn: string;
  readonly keys: readonly string[];
  readonly rest: readonly string[];
  readonly readOnly: boolean;
  decode(reply: unknown, backend: Backend): T;
}

/** The library's command line of `cmd`. */
export function libraryArgs(cmd: Command<unknown>): string[] {
  return [cmd.readOnly ? "FCALL_RO" : "FCALL", cmd.fn, String(cmd.keys.length), ...cmd.keys, ...cmd.rest];
}

/** Options common to the decision commands. */
export interface DecideOptions {
  /** The request's weight (`COST n`), default 1. */
  cost?: number;
  /** Decide without writing (`PEEK`). */
  peek?: boolean;
  /** Wait inside the server until admitted or this many ms pass (`BLOCK ms`; 0: no limit).
   * The library, a script, decides at once. */
  blockMs?: number;
}

function options(o: DecideOptions & { refund?: number }): string[] {
  const out: string[] = [];
  if (o.refund !== undefined) out.push("REFUND", countArg(o.refund, "refund"));
  else if (o.cost !== undefined && o.cost !== 1) out.push("COST", countArg(o.cost, "cost"));
  if (o.peek) out.push("PEEK");
  if (o.blockMs !== undefined) out.push("BLOCK", countArg(o.blockMs, "blockMs"));
  return out;
}

/** `RL.<ALGO> key params [COST n | REFUND n] [PEEK] [BLOCK ms]`. */
export function decide(key: string, policy: Policy, o: DecideOptions & { refund?: number } = {}): Command<Decision> {
  const rest = [...policy.params, ...options(o)];
  return {
    module: [`RL.${policy.algo}`, key, ...rest], fn: KINDS[policy.algo].fcall, keys: [key], rest,
    readOnly: false, decode: (reply, backend) => Decision.fromReply(reply, backend, policy),
  };
}

/** `RL.PEEK ALGO key params [COST n]`: read-only. */
export function peek(key: string, policy: Policy, cost = 1): Command<Decision> {
  const tail = [...policy.params, ...options({ cost })];
  return {
    module: ["RL.PEEK", policy.algo, key, ...tail], fn: "rl_peek", keys: [key], rest: [policy.algo, ...tail],
    readOnly: true, decode: (reply, backend) => Decision.fromReply(reply, backend, policy),
  };
}

/** One layer of `all`: its key, its policy and, optionally, its cost. */
export type Layer = readonly [key: string, policy: Policy, cost?: number];

/** `RL.ALL numkeys key... ALGO params [COST n] ... [PEEK]`: every layer or none. */
export function allOf(layers: readonly Layer[], peekOnly: boolean): Command<AllDecision> {
  if (layers.length === 0) throw refused(RangeError, "all() needs at least one [key, policy] layer");
  const keys = layers.map((l) => l[0]);
  const rest: string[] = [];
  for (const [, policy, cost] of layers) {
    rest.push(policy.algo, ...policy.params);
    if (cost !== undefined && cost !== 1) rest.push("COST", countArg(cost, "cost"));
  }
  if (peekOnly) rest.push("PEEK");
  return {
    module: ["RL.ALL", String(keys.length), ...keys, ...rest], fn: "rl_all", keys, rest, readOnly: false,
    decode(reply, backend) {
      const r = reply as unknown[];
      const per = (r[5] as unknown[]).map((x, i) => Decision.fromReply(x, backend, layers[i][1]));
      const head = r.slice(0, 5).map(Number).join(" ");
      const index = (r[5] as unknown[][]).findIndex((x) => x.map(Number).join(" ") === head);
      return { allowed: per[index].allowed, binding: per[index], layers: per, index };
    },
  };
}

/** `RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]`. */
export function acquire(key: string, limit: number, timeout: Duration, leaseId: string,
  o: { peek?: boolean; blockMs?: number } = {}): Command<Decision> {
  const rest = [countArg(limit, "limit"), durationArg(timeout), leaseId, ...options(o)];
  return {
    module: ["RL.ACQUIRE", key, ...rest], fn: "rl_acquire", keys: [key], rest, readOnly: false,
    decode: (reply, backend) => Decision.fromReply(reply, backend),
  };
}

/** `RL.RELEASE key lease_id`: true if the lease was held. */
export function release(key: string, leaseId: string): Command<boolean> {
  return {
    module: ["RL.RELEASE", key, leaseId], fn: "rl_release", keys: [key], rest: [leaseId], readOnly: false,
    decode: (reply) => Number(reply) === 1,
  };
}
