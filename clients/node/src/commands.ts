/**
 * Each call as the module's command and as the Functions library's `FCALL`, with its reply.
 * The two take the same words after the key (docs/managed-redis.md): `RL.<ALGO> key params`
 * is `FCALL rl_<algo> 1 key params`, `RL.ALL numkeys keys clauses` is `FCALL rl_all numkeys
 * keys clauses`, `RL.PEEK ALGO key params` is `FCALL_RO rl_peek 1 key ALGO params`. Nothing
 * here talks to a server.
 *
 * A policy named by a string is the server's: `RL.LIMIT key name [COST n | REFUND n | DEBIT n] [PEEK]
 * [BLOCK ms]` (`FCALL rl_limit 1 key name ...`), `RL.PEEK POLICY key name [COST n]`
 * (`FCALL_RO rl_peek 1 key POLICY name [COST n]`), and `POLICY name [COST n | REFUND n |
 * DEBIT n]` clauses in `RL.ALL` (and `rl_all`). A policy's `PENALTY d [ESCALATE max]` goes
 * right after its parameters (not in `RL.PEEK`, which takes none). `RL.BAN key ms` is `FCALL
 * rl_ban 1 key ms`.
 */
import { type AllDecision, type Backend, Decision } from "./decision.js";
import { refused } from "./errors.js";
import { KINDS } from "./facts.js";
import { type Duration, type PolicyOrName, countArg, durationArg, policyOrName } from "./policy.js";

export interface Command<T> {
  readonly module: readonly string[];
  readonly fn: string;
  readonly keys: readonly string[];
  readonly rest: readonly string[];
  readonly readOnly: boolean;
  /** The key whose node the call goes to, where it is not `keys[0]` (a call without keys). */
  readonly route?: string;
  decode(reply: unknown, backend: Backend): T;
}

/** The key whose node `cmd` goes to. */
export const nodeKey = (cmd: Command<unknown>): string => cmd.route ?? cmd.keys[0];

/** A charge that is never denied (`REFUND`, `DEBIT`), so never a shadowed denial: false;
 * undefined for one that may be. */
const neverDenied = (o: Charge): false | undefined => (o.refund !== undefined || o.debit !== undefined ? false : undefined);

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

/** What a call spends: `COST n` (the default 1 sends nothing), `REFUND n` (units back) or
 * `DEBIT n` (charged whatever is left, never denied). At most one is given. */
export interface Charge {
  cost?: number;
  refund?: number;
  debit?: number;
}

function charge(o: Charge): string[] {
  if (o.debit !== undefined) return ["DEBIT", countArg(o.debit, "debit")];
  if (o.refund !== undefined) return ["REFUND", countArg(o.refund, "refund")];
  if (o.cost !== undefined && o.cost !== 1) return ["COST", countArg(o.cost, "cost")];
  return [];
}

function options(o: DecideOptions & Charge): string[] {
  const out = charge(o);
  if (o.peek) out.push("PEEK");
  if (o.blockMs !== undefined) out.push("BLOCK", countArg(o.blockMs, "blockMs"));
  return out;
}

/** `RL.<ALGO> key params [PENALTY d [ESCALATE max]] [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK
 * ms]`, or for a name `RL.LIMIT key name [...]` (a named policy's penalty is the server's). */
export function decide(key: string, p: PolicyOrName, o: DecideOptions & Charge = {}): Command<Decision> {
  const policy = policyOrName(p);
  const known = neverDenied(o);
  const decode = (reply: unknown, backend: Backend) => Decision.fromReply(reply, backend, policy, known);
  const [command, fn, params]: [string, string, readonly string[]] = typeof policy === "string"
    ? ["RL.LIMIT", "rl_limit", [policy]] : [`RL.${policy.algo}`, KINDS[policy.algo].fcall, [...policy.params, ...(policy.penalty ?? [])]];
  const rest = [...params, ...options(o)];
  return { module: [command, key, ...rest], fn, keys: [key], rest, readOnly: false, decode };
}

/** `RL.POLICY GET name` (`FCALL_RO rl_policy 0 GET name`): the policy's line (`name ALGO
 * params [SHADOW]`) or null, from the node holding `key` (a node's policies are its own). */
export function policyDefinition(key: string, name: string): Command<string | null> {
  return {
    module: ["RL.POLICY", "GET", name], fn: "rl_policy", keys: [], rest: ["GET", name], readOnly: true, route: key,
    decode: (reply) => (reply === null || reply === undefined ? null : String(reply)),
  };
}

/** `RL.PEEK ALGO key params [COST n]`, or for a name `RL.PEEK POLICY key name [COST n]`: read-only.
 * A policy's penalty is not sent (the command takes none): a penalized key's peek is denied
 * whatever the policy says. */
export function peek(key: string, p: PolicyOrName, cost = 1): Command<Decision> {
  const policy = policyOrName(p);
  const [word, params]: [string, readonly string[]] = typeof policy === "string" ? ["POLICY", [policy]] : [policy.algo, policy.params];
  const tail = [...params, ...options({ cost })];
  return {
    module: ["RL.PEEK", word, key, ...tail], fn: "rl_peek", keys: [key], rest: [word, ...tail],
    readOnly: true, decode: (reply, backend) => Decision.fromReply(reply, backend, policy),
  };
}

/** One layer of `all`: its key, its policy (or a server policy's name) and, optionally, its cost. */
export type Layer = readonly [key: string, policy: PolicyOrName, cost?: number];

/** `RL.ALL numkeys key... ALGO params [COST n] ... [PEEK]`: every layer or none. */
export function allOf(layers: readonly Layer[], peekOnly: boolean): Command<AllDecision> {
  return allCharged(layers.map(([key, p, cost]) => [key, p, { cost }]), peekOnly);
}

/** `RL.ALL` with each layer's own charge: `ALGO params [PENALTY d [ESCALATE max]] [COST n |
 * REFUND n | DEBIT n]` (or `POLICY name [...]`) per layer. */
export function allCharged(layers: readonly (readonly [string, PolicyOrName, Charge])[], peekOnly = false): Command<AllDecision> {
  if (layers.length === 0) throw refused(RangeError, "all() needs at least one [key, policy] layer");
  const keys = layers.map((l) => l[0]);
  const policies = layers.map((l) => policyOrName(l[1]));
  const rest: string[] = [];
  layers.forEach(([, , c], i) => {
    const p = policies[i];
    if (typeof p === "string") rest.push("POLICY", p);
    else rest.push(p.algo, ...p.params, ...(p.penalty ?? []));
    rest.push(...charge(c));
  });
  if (peekOnly) rest.push("PEEK");
  return {
    module: ["RL.ALL", String(keys.length), ...keys, ...rest], fn: "rl_all", keys, rest, readOnly: false,
    decode(reply, backend) {
      const r = reply as unknown[];
      const per = (r[5] as unknown[]).map((x, i) => Decision.fromReply(x, backend, policies[i], neverDenied(layers[i][2])));
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

/** `RL.BAN key ms` (`FCALL rl_ban 1 key ms`): the key's penalty set to end `ms` from now (0
 * lifts it), whatever limiter the key holds; true if the key existed. */
export function ban(key: string, ms: number): Command<boolean> {
  const rest = [countArg(ms, "ms")];
  return {
    module: ["RL.BAN", key, ...rest], fn: "rl_ban", keys: [key], rest, readOnly: false,
    decode: (reply) => Number(reply) === 1,
  };
}

/** `RL.RELEASE key lease_id`: true if the lease was held. */
export function release(key: string, leaseId: string): Command<boolean> {
  return {
    module: ["RL.RELEASE", key, leaseId], fn: "rl_release", keys: [key], rest: [leaseId], readOnly: false,
    decode: (reply) => Number(reply) === 1,
  };
}
