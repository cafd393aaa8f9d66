/**
 * Policies: an algorithm and its parameters, as the commands take them after the key.
 *
 * A policy also knows the quota and window the IETF `RateLimit-Policy` field reports
 * (docs/commands.md, "The IETF RateLimit fields"): for the windows `q` is the limit and `w`
 * the window; for a rate (GCRA's limit, the token bucket's refill, the leaky bucket's leak)
 * `q` is that count and `w` its period, in whole seconds.
 *
 * A quota (`quota(10000, "MONTH", { tz: "Europe/Paris", anchor: "2026-01-15T00:00" })`:
 * `RL.QUOTA`'s calendar) reports `q` = its limit and `w` = the current period's length in
 * whole days, in seconds (`quotaPeriodSeconds`): 86,400 for a day, 604,800 for a week, a
 * month's from its renewal back to the one before (28 to 31 days), offset changes not counted.
 *
 * A policy may carry a penalty (`{ penalty, escalate }`: `PENALTY d [ESCALATE max]`, sent after
 * its parameters in a call and in an `RL.ALL` clause, never in `RL.PEEK`, which sees a key's
 * penalty without it): a denial starts one, during which the key is denied whatever its rate.
 *
 * Wherever a policy is taken, a string is the name of a policy defined on the server
 * (`RL.POLICY SET name ALGO params [SHADOW]`, docs/commands.md, "Named policies"): the call
 * is then `RL.LIMIT key name`, `RL.PEEK POLICY key name` or an `RL.ALL` clause `POLICY name`.
 */
import { refused } from "./errors.js";
import * as facts from "./facts.js";

/** A duration: whole seconds (a number), or the commands' text ("1500ms", "1m", "1d"). */
export type Duration = number | string;

/** An algorithm's word (facts/rl.toml's `kinds`): "GCRA", "TOKENBUCKET", ... */
export type Algo = facts.Algo;

export interface Policy {
  readonly algo: Algo;
  /** The words after the key. */
  readonly params: readonly string[];
  readonly quota: number;
  readonly window: Duration;
  /** The name the IETF fields give it ("" for none). */
  readonly name: string;
  /** `PENALTY d [ESCALATE max]` as sent after the parameters; empty (or absent) without one. */
  readonly penalty?: readonly string[];
  /** A quota's calendar: its unit and its anchor's day of the month (`["MONTH", 15]`). */
  readonly calendar?: readonly [QuotaUnit, number];
}

/** A quota's unit. */
export type QuotaUnit = "DAY" | "WEEK" | "MONTH";

/** A penalty: a denial starts `penalty` (a duration) of denials on the key; with `escalate`,
 * each penalty that starts within `escalate` of the previous one's end lasts twice as long,
 * at most `escalate`. */
export interface PenaltyOptions {
  penalty?: Duration;
  escalate?: Duration;
}

/** A policy's options: its name in the IETF fields, and its penalty. */
export type PolicyOptions = PenaltyOptions & { name?: string };

/** A policy object, or the name of a policy defined on the server. */
export type PolicyOrName = Policy | string;

/** A server policy's name: 1 to `max_policy_name` (facts/rl.toml) of A-Z a-z 0-9 _ . : - */
const POLICY_NAME = new RegExp(`^[A-Za-z0-9_.:-]{1,${facts.MAX_POLICY_NAME}}$`);
/** The server's own text for a bad name, without its `ERR `. */
const POLICY_NAME_RULE = facts.ERRORS.policy_name.replace(/^ERR /, "").replace("{max}", String(facts.MAX_POLICY_NAME));

/** `name`, if it is a policy name the server takes: a TypeError for anything but a
 * string, a RangeError for a string that cannot be a name (both ConfigurationErrors). */
export function policyName(name: unknown): string {
  if (typeof name !== "string") {
    throw refused(TypeError, `a policy is a policy object or a policy's name, not ${name === null ? "null" : typeof name}`);
  }
  if (!POLICY_NAME.test(name)) {
    const shown = name.length > facts.MAX_POLICY_NAME ? `${name.length} characters` : JSON.stringify(name);
    throw refused(RangeError, `${POLICY_NAME_RULE}, not ${shown}`);
  }
  return name;
}

/** `p` checked: a policy object as this module makes them, or a server policy's name. */
export function policyOrName(p: unknown): PolicyOrName {
  if (typeof p === "string" || p === null || typeof p !== "object") return policyName(p);
  const { algo, params } = p as Partial<Policy>;
  if (typeof algo !== "string" || !Array.isArray(params)) {
    throw refused(TypeError, "a policy is a policy object (policy.gcra(...), policy.fixed(...), ...) or a policy's name");
  }
  return p as Policy;
}

/** Digits and an optional unit (facts/rl.toml's `durations`), longest units tried first. */
const DURATION = new RegExp(
  `^([0-9]+)(${Object.keys(facts.DURATION_UNITS_MS).filter(Boolean).sort((a, b) => b.length - a.length).join("|")})?$`, "i");

/** The command-line text of `d`: text goes as given (the server checks it). */
export function durationArg(d: Duration): string {
  if (typeof d === "number") {
    if (!Number.isSafeInteger(d)) throw refused(TypeError, `a duration in seconds is an integer: ${d}`);
    return String(d);
  }
  if (typeof d === "string") return d;
  throw refused(TypeError, `a duration is a number of seconds or a string: ${String(d)}`);
}

/** `d` in milliseconds, or undefined for text the server would refuse. */
export function durationMs(d: Duration): number | undefined {
  const m = DURATION.exec(durationArg(d));
  if (!m) return undefined;
  return Number(m[1]) * facts.DURATION_UNITS_MS[(m[2] ?? "").toLowerCase()];
}

/** The IETF `w`: the window (or the rate's period) in whole seconds, rounded up. */
export function windowSeconds(p: Policy): number | undefined {
  const ms = durationMs(p.window);
  return ms === undefined ? undefined : Math.max(1, Math.ceil(ms / 1000));
}

export function countArg(n: number, what: string): string {
  if (typeof n !== "number" || !Number.isSafeInteger(n)) {
    throw refused(TypeError, `${what} is an integer: ${String(n)}`);
  }
  return String(n);
}

/** `PENALTY d [ESCALATE max]`, or nothing without a penalty. `escalate` without `penalty` is
 * a RangeError (a ConfigurationError) before anything is sent; the durations go as given, and
 * the server checks them as every duration (and that `max` is at least `d`: its
 * `ESCALATE max must be at least PENALTY d`, a ConfigurationError too). */
export function penaltyWords(o: PenaltyOptions = {}): string[] {
  if (o.penalty === undefined) {
    if (o.escalate !== undefined) {
      throw refused(RangeError, `escalate (${String(o.escalate)}) needs a penalty: escalate is the longest a penalty grows to, doubling from penalty`);
    }
    return [];
  }
  const words = ["PENALTY", durationArg(o.penalty)];
  if (o.escalate !== undefined) words.push("ESCALATE", durationArg(o.escalate));
  return words;
}

function policy(algo: Algo, params: string[], quota: number, window: Duration, name = "", penalty: readonly string[] = [],
  calendar?: readonly [QuotaUnit, number]): Policy {
  const made = { algo, params: Object.freeze(params), quota, window, name, penalty: Object.freeze([...penalty]) };
  return Object.freeze(calendar ? { ...made, calendar: Object.freeze([...calendar]) as readonly [QuotaUnit, number] } : made);
}

/** `limit` per `period`, evenly spaced, bursts of `burst` (the command's default: 1). Every
 * policy takes `{ penalty, escalate }` (`PenaltyOptions`) beside its name. */
export function gcra(limit: number, period: Duration, opts: PolicyOptions & { burst?: number } = {}): Policy {
  const params = [countArg(limit, "limit"), durationArg(period)];
  if (opts.burst !== undefined) params.push("BURST", countArg(opts.burst, "burst"));
  return policy("GCRA", params, limit, period, opts.name, penaltyWords(opts));
}

/** A bucket of `capacity` tokens, `refill` more per `period`. */
export function tokenBucket(capacity: number, refill: number, period: Duration, opts: PolicyOptions = {}): Policy {
  const params = [countArg(capacity, "capacity"), countArg(refill, "refill"), durationArg(period)];
  return policy("TOKENBUCKET", params, refill, period, opts.name, penaltyWords(opts));
}

/** A leaky bucket as a queue of `capacity`, `leak` leaving per `period`. */
export function leaky(capacity: number, leak: number, period: Duration, opts: PolicyOptions = {}): Policy {
  const params = [countArg(capacity, "capacity"), countArg(leak, "leak"), durationArg(period)];
  return policy("LEAKY", params, leak, period, opts.name, penaltyWords(opts));
}

function windowed(algo: Algo, limit: number, window: Duration, opts: PolicyOptions): Policy {
  return policy(algo, [countArg(limit, "limit"), durationArg(window)], limit, window, opts.name, penaltyWords(opts));
}

/** The sliding window counter: `limit` per `window`, estimated. */
export const sliding = (limit: number, window: Duration, opts: PolicyOptions = {}) =>
  windowed("SLIDING", limit, window, opts);
/** The exact sliding log: `limit` per `window`. */
export const slidingLog = (limit: number, window: Duration, opts: PolicyOptions = {}) =>
  windowed("SLIDINGLOG", limit, window, opts);
/** Fixed windows aligned to the clock: `limit` per `window`. */
export const fixed = (limit: number, window: Duration, opts: PolicyOptions = {}) =>
  windowed("FIXED", limit, window, opts);

/** `p`, named `name` in the IETF fields (its penalty kept). */
export function named(p: Policy, name: string): Policy {
  return policy(p.algo, [...p.params], p.quota, p.window, name, p.penalty ?? [], p.calendar);
}

/** A quota's units, and the window its insurance counts in (the longest such period). */
const QUOTA_UNITS: Record<QuotaUnit, string> = { DAY: "1d", WEEK: "7d", MONTH: "31d" };
const ANCHOR = /^[0-9]{4}-[0-9]{2}-([0-9]{2})T[0-9]{2}:[0-9]{2}$/;
const DAY_MS = 86_400_000;

/** A quota's options: its zone (an IANA name, "+05:30", default UTC) and its anchor
 * ("yyyy-mm-ddThh:mm", a local wall time; default 2001-01-01T00:00: midnight, Mondays, the 1st). */
export type QuotaOptions = PolicyOptions & { tz?: string; anchor?: string };

/** A quota on the calendar (`RL.QUOTA`): `limit` per `unit` ("DAY", "WEEK" or "MONTH", any
 * case), renewing at the anchor's local wall time in `tz`. The zone and the anchor go as
 * given: the server checks them (`unknown time zone`, `ANCHOR must be ...`: ConfigurationErrors). */
export function quota(limit: number, unit: string, opts: QuotaOptions = {}): Policy {
  const word = typeof unit === "string" ? unit.toUpperCase() : "";
  if (!(word in QUOTA_UNITS)) {
    throw refused(typeof unit === "string" ? RangeError : TypeError,
      `${facts.ERRORS.bad_unit.replace(/^ERR /, "")}: ${String(unit)}`);
  }
  const params = [countArg(limit, "limit"), word];
  let day = 1;
  if (opts.tz !== undefined) {
    if (typeof opts.tz !== "string") throw refused(TypeError, `a quota's tz is a string (an IANA name, +05:30, UTC): ${String(opts.tz)}`);
    params.push("TZ", opts.tz);
  }
  if (opts.anchor !== undefined) {
    if (typeof opts.anchor !== "string") throw refused(TypeError, `a quota's anchor is a string yyyy-mm-ddThh:mm: ${String(opts.anchor)}`);
    params.push("ANCHOR", opts.anchor);
    const m = ANCHOR.exec(opts.anchor);
    day = m ? Number(m[1]) : 1; // the server refuses an anchor that is no date
  }
  return policy("QUOTA", params, limit, QUOTA_UNITS[word as QuotaUnit], opts.name, penaltyWords(opts), [word as QuotaUnit, day]);
}

/** Days since 1970-01-01 of a UTC date (month 1-12, overflowing into the next years). */
const epochDay = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d) / DAY_MS;
const daysIn = (y: number, m: number) => epochDay(y, m + 1, 1) - epochDay(y, m, 1);
/** The month's renewal day of an anchor on `day`: that day, or the month's last. */
const renewalDay = (y: number, m: number, day: number) => epochDay(y, m, Math.min(day, daysIn(y, m)));

/** The length in seconds of the quota period that ends at `renewalMs` (epoch ms), on
 * `calendar`: a day 86,400, a week 604,800, a month the whole days from the renewal before it
 * to it (an anchor on the 31st: 28 to 31). The renewal's local date is within a day of its
 * UTC date (a zone's offset is under 24 hours) and renewals are at least 28 days apart, so it
 * is the first renewal date from the day before the UTC date on: no time zone database is
 * needed. A change of offset inside the period (DST) is not counted. */
export function quotaPeriodSeconds(calendar: readonly [QuotaUnit, number], renewalMs: number): number {
  const [unit, day] = calendar;
  if (unit !== "MONTH") return unit === "DAY" ? 86_400 : 604_800;
  const from = new Date(renewalMs - DAY_MS);
  let y = from.getUTCFullYear(), m = from.getUTCMonth() + 1;
  if (epochDay(y, m, from.getUTCDate()) > renewalDay(y, m, day)) [y, m] = m === 12 ? [y + 1, 1] : [y, m + 1];
  const [py, pm] = m === 1 ? [y - 1, 12] : [y, m - 1];
  return (renewalDay(y, m, day) - renewalDay(py, pm, day)) * 86_400;
}

/** The IETF `w` of a decision whose reply said `resetAfterMs`: a quota's current period (its
 * renewal `now + resetAfterMs`), else `windowSeconds`. */
export function periodSeconds(p: Policy, resetAfterMs: number, nowMs: number = Date.now()): number | undefined {
  return p.calendar ? quotaPeriodSeconds(p.calendar, nowMs + Math.max(0, resetAfterMs)) : windowSeconds(p);
}
