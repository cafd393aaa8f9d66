/**
 * Express (or plain Node http) middleware: the seed's layers (per client IP, per API key, per
 * endpoint, ...) decided together by ONE `RL.ALL` per request, all or nothing.
 *
 * Every response carries the binding layer's headers (`Decision.allHeaders`); a denial is
 * answered by the middleware itself: 429 with those headers, `Retry-After` among them unless
 * the request can never be admitted, and a JSON body naming the layer. Nothing is spent
 * unless every layer admits. An error from the server is of one of two classes
 * (classify.ts): the server cannot decide right now (out of reach, or `LOADING`, `BUSY`,
 * `MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`: a ServerUnavailableError),
 * which the middleware answers 503 `{"error":"rate limiter unavailable"}`, or with
 * `failOpen: true` lets through (one `console.warn` line per request either way); or any
 * other error, a configuration's (ConfigurationError: a policy the server refuses;
 * ForeignKeyError; LibraryUnavailableError; `NOPERM` ...), which goes to `next(err)`, so the
 * request fails (Express answers 500) whatever `failOpen` says: it is never let through
 * unchecked.
 *
 * A layer's policy may be a server policy's name (`RL.POLICY SET`): its clause is `POLICY
 * name`, its IETF policy that name, `q` the reply's limit, no `w`.
 *
 * Would-be denials: with `shadow: true` a request the layers deny is let through (`next()`),
 * with the decision's headers less `Retry-After`, nothing spent; a layer whose server
 * policy is `SHADOW` lets it through by itself (its decision is `shadowed`). Either is
 * reported, once per request, to `onShadowDenied` (default: one `console.warn` line).
 *
 * The limiter's denial cache (on by default: `new Limiter(client, { denialCache })`) answers a
 * request one of whose layers is cached denied with the same 429, body and headers as the
 * server's denial, without a call. Each request is counted once in `limiter.metrics`, under
 * the layer that decided it (metrics.ts).
 *
 * The limiter's insurance (off by default: `new Limiter(client, { insurance: { nodes: 4 } })`,
 * insurance.ts) decides a request the server cannot decide by this process's share of each
 * layer's policy, answered as the server's decision would be (a 429 with the same body and
 * headers); a request it cannot insure (a layer by a server policy's name) is answered 503, or
 * let through with `failOpen`, as without it.
 *
 * On Redis Cluster, `tag` names the layer whose identity (escaped) is every key's hash tag,
 * so the keys of one request share a slot; `clientIp` keys an IPv6 client by its /56.
 */
import type { Layer as Clause } from "./commands.js";
import type { Decision } from "./decision.js";
import { ServerUnavailableError, refused } from "./errors.js";
import type { Limiter } from "./limiter.js";
import { type PolicyOrName, named, policyOrName } from "./policy.js";

/** What the middleware reads of a request (Express's, or Node's with `path` added). */
export interface RequestLike {
  ip?: string;
  path?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string };
}

/** What the middleware writes of a response (Express's or Node's). */
export interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  /** Node's and Express's: reads a header an outer middleware set. */
  getHeader?(name: string): unknown;
  end(body?: string): unknown;
}

/** A request's identity for a layer, or undefined to skip the layer for this request. */
export type Identify = (req: RequestLike) => string | undefined;

export interface LayerSpec {
  /** Names the layer in keys, headers and the denial's body. */
  name: string;
  identify: Identify;
  /** The layer's policy (a policy object, or a server policy's name), or a function of the
   * request returning one (undefined: skip). */
  policy: PolicyOrName | ((req: RequestLike) => PolicyOrName | undefined);
}

/** A request the layers would have refused, let through (`shadow: true`, or a layer's
 * `SHADOW` server policy). */
export interface ShadowDenial {
  /** The layer that would deny it: the denying one, else the first shadowed. */
  readonly layer: string;
  readonly key: string;
  /** That layer's decision (`retryAfterMs`: the wait enforcing would ask, -1 for never). */
  readonly decision: Decision;
}

export interface LayersOptions {
  limiter: Limiter;
  layers: LayerSpec[];
  /** Starts every key: `<prefix>:<name>:<identity>` (default "rl"). */
  prefix?: string;
  /** For Redis Cluster: the NAME of the layer whose identity is every key's hash tag
   * (`<prefix>:{<T>}:<name>:<identity>`, `T` that identity escaped, or `%none`). Tag the
   * layer the client cannot choose (its address): that layer then counts every request of
   * the address, and the others count per address. */
  tag?: string;
  /** Decide, set the headers and report would-be denials, but refuse nothing: a denied
   * request goes on (`next()`), without `Retry-After`, having spent nothing. Default false. */
  shadow?: boolean;
  /** Called once per request let through that the layers would have refused (`shadow`, or a
   * `SHADOW` server policy). Default: `console.warn` of one line naming the layer, the key and
   * the retry. */
  onShadowDenied?: (denial: ShadowDenial, req: RequestLike) => void;
  /** When the server cannot decide (a ServerUnavailableError: out of reach, `OOM`,
   * `READONLY` ...), let the request through instead of answering 503. Any other error goes
   * to `next(err)` (500) whatever this says. Default false. */
  failOpen?: boolean;
}

/** The default `onShadowDenied`: one line per would-be denial. */
export function warnShadowDenied({ layer, key, decision }: ShadowDenial): void {
  const retry = decision.retryAfterMs < 0 ? "never admissible" : `retry after ${decision.retryAfterMs} ms`;
  console.warn(`rl: shadow: would deny layer ${layer} key ${key}: ${retry}`);
}

/** The hash tag of a request whose tagged layer gives no identity. No escaped identity
 * is `%none`: an escaped `%` is always followed by two hex digits. */
export const NO_TAG = "%none";

const ESCAPES: Record<string, string> = { "%": "%25", "{": "%7B", "}": "%7D" };

/** `identity` as a hash tag: `%`, `{` and `}` escaped in one pass, so the text has no
 * brace (the tag ends at its own `}`), and two identities never escape alike. */
export const escapeTag = (identity: string): string => identity.replace(/[%{}]/g, (c) => ESCAPES[c]);

// --- IP addresses: Python ipaddress's grammar, and its canonical (RFC 5952) text ---------

const OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

/** Dotted IPv4 text (four decimal octets, no leading zeros) as a 32-bit integer. */
function parseIPv4(text: string): number | undefined {
  const octets = text.split(".");
  if (octets.length !== 4) return undefined;
  let n = 0;
  for (const o of octets) {
    if (!OCTET.test(o) || Number(o) > 255) return undefined;
    n = n * 256 + Number(o);
  }
  return n;
}

/** IPv6 text as its eight 16-bit groups: one `::` at most, standing for one group or more;
 * a dotted IPv4 tail is the last two groups. */
function parseIPv6(text: string): number[] | undefined {
  const parts = text.split(":");
  if (parts.length < 3) return undefined;
  if (parts[parts.length - 1].includes(".")) {
    const v4 = parseIPv4(parts.pop() as string);
    if (v4 === undefined) return undefined;
    parts.push((v4 >>> 16).toString(16), (v4 & 0xffff).toString(16));
  }
  if (parts.length > 9) return undefined;
  let skip = -1; // the index of the empty part that `::` leaves inside
  for (let i = 1; i < parts.length - 1; i++) {
    if (parts[i] !== "") continue;
    if (skip >= 0) return undefined;
    skip = i;
  }
  let hi = parts.length; // groups before the `::`, and after it
  let lo = 0;
  if (skip >= 0) {
    hi = skip;
    lo = parts.length - skip - 1;
    if (parts[0] === "" && --hi !== 0) return undefined; // a leading `:` only as `::`
    if (parts[parts.length - 1] === "" && --lo !== 0) return undefined; // a trailing one too
    if (hi + lo > 7) return undefined;
  } else if (parts.length !== 8) {
    return undefined;
  }
  const given = [...parts.slice(0, hi), ...parts.slice(parts.length - lo)];
  if (!given.every((g) => HEXTET.test(g))) return undefined;
  const groups = given.map((g) => parseInt(g, 16));
  return [...groups.slice(0, hi), ...new Array(8 - hi - lo).fill(0), ...groups.slice(hi)];
}

/** RFC 5952 text: lowercase, no leading zeros, the longest run of two or more zero groups
 * (the first of equal runs) as `::`. */
function formatIPv6(groups: number[]): string {
  let at = -1;
  let len = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > len) [at, len] = [i, j - i];
    i = Math.max(j, i + 1);
  }
  const hex = groups.map((g) => g.toString(16));
  if (at < 0) return hex.join(":");
  return `${hex.slice(0, at).join(":")}::${hex.slice(at + len).join(":")}`;
}

function checkBits(bits: unknown): number {
  if (typeof bits !== "number" || !Number.isInteger(bits) || bits < 1 || bits > 128) {
    throw refused(RangeError, `ipv6Bits must be an integer from 1 to 128: ${String(bits)}`);
  }
  return bits;
}

/**
 * A client address as a key: IPv4 as itself, an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`)
 * as its IPv4 address, any other IPv6 address as its network of `ipv6Bits` (default 56:
 * `2001:db8:1:1ff::1` is `2001:db8:1:100::/56`, express-rate-limit 8's `ipKeyGenerator`
 * text). A zone index (`fe80::1%eth0`) is dropped first; text that is not an address (a
 * Unix socket path) is returned as it is.
 */
export function ipKey(address: string, ipv6Bits = 56): string {
  const bits = checkBits(ipv6Bits);
  if (typeof address !== "string") throw refused(TypeError, `ipKey: address must be a string: ${String(address)}`);
  const text = address.split("%", 1)[0];
  if (parseIPv4(text) !== undefined) return text;
  const groups = parseIPv6(text);
  if (!groups) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join(".");
  }
  const network = groups.map((g, i) => {
    const kept = Math.min(16, Math.max(0, bits - 16 * i)); // this group's bits in the prefix
    return g & ((0xffff << (16 - kept)) & 0xffff);
  });
  return `${formatIPv6(network)}/${bits}`;
}

/** The client's address (`req.ip`, as Express reports it: set `trust proxy` behind a
 * proxy), keyed by `ipKey(address, ipv6Bits)`. Bits out of 1..128 throw here. */
export function clientSubnet(ipv6Bits = 56): Identify {
  const bits = checkBits(ipv6Bits);
  return (req) => {
    const address = req.ip ?? req.socket?.remoteAddress;
    return address === undefined ? undefined : ipKey(address, bits);
  };
}

/** The client's address, an IPv6 client by its /56: `clientSubnet(56)`. */
export const clientIp: Identify = clientSubnet(56);

/** The value of request header `name` (e.g. "x-api-key"); undefined when absent or empty. */
export function header(name: string): Identify {
  const wanted = name.toLowerCase();
  return (req) => {
    const v = req.headers[wanted];
    const value = Array.isArray(v) ? v[0] : v;
    return value || undefined;
  };
}

/** The request's path (`/export`): a layer per endpoint. */
export const path: Identify = (req) => req.path ?? req.url?.split("?")[0];

/** `app.use(rateLimitLayers({ limiter, layers: [...] }))`. */
export function rateLimitLayers(o: LayersOptions) {
  if (!o.layers?.length) throw refused(RangeError, "rateLimitLayers needs at least one layer");
  const names = o.layers.map((l) => l.name);
  if (new Set(names).size !== names.length) throw refused(RangeError, `layer names must be distinct: ${names.join(", ")}`);
  if (typeof o.limiter?.decideAll !== "function") throw refused(TypeError, "rateLimitLayers takes a redis-rl Limiter");
  const prefix = o.prefix ?? "rl";
  if (typeof prefix !== "string") throw refused(TypeError, `rateLimitLayers: prefix must be a string: ${String(prefix)}`);
  let at = -1; // the tagged layer's index
  if (o.tag !== undefined) {
    if (typeof o.tag !== "string") {
      throw refused(TypeError, `rateLimitLayers: tag names a layer (one of ${names.join(", ")}), not a ${typeof o.tag}`);
    }
    at = names.indexOf(o.tag);
    if (at < 0) throw refused(RangeError, `rateLimitLayers: tag names a layer, and ${JSON.stringify(o.tag)} is not one of ${names.join(", ")}`);
    // A brace in the prefix would come before the tag's and end up as the hash tag.
    if (/[{}]/.test(prefix)) throw refused(RangeError, `rateLimitLayers: with a tag, the prefix must not contain braces: ${prefix}`);
  }
  // A policy given as it is (not as a function) is checked now: a bad name throws here.
  for (const layer of o.layers) if (typeof layer.policy !== "function") policyOrName(layer.policy);
  const shadow = o.shadow ?? false;
  if (typeof shadow !== "boolean") throw refused(TypeError, `rateLimitLayers: shadow is true or false, not ${String(shadow)}`);
  const report = o.onShadowDenied ?? warnShadowDenied;
  if (typeof report !== "function") throw refused(TypeError, "rateLimitLayers: onShadowDenied must be a function");
  const failOpen = o.failOpen ?? false;
  if (typeof failOpen !== "boolean") throw refused(TypeError, `rateLimitLayers: failOpen is true or false, not ${String(failOpen)}`);

  /** A request the server could not decide: let through (failOpen) or answered 503; any
   * other error to `next(err)`. */
  const failed = (err: unknown, res: ResponseLike, next: (err?: unknown) => void): void => {
    if (!(err instanceof ServerUnavailableError)) return next(err);
    console.warn(`rl: rate limiter unavailable, request ${failOpen ? "let through (failOpen)" : "answered 503"}: ${err.message}`);
    if (failOpen) return next();
    res.statusCode = 503;
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ error: "rate limiter unavailable" }));
  };

  /** The layers applying to `req`: their clauses, and each one's layer name. */
  const applying = (req: RequestLike): { clauses: Clause[]; names: string[] } => {
    const identities = o.layers.map((layer) => layer.identify(req));
    let base = prefix;
    if (at >= 0) {
      const t = identities[at];
      base = `${prefix}:{${t === undefined || t === "" ? NO_TAG : escapeTag(String(t))}}`;
    }
    const clauses: Clause[] = [];
    const names: string[] = [];
    o.layers.forEach((layer, i) => {
      if (identities[i] === undefined) return;
      const p = typeof layer.policy === "function" ? layer.policy(req) : layer.policy;
      if (!p) return;
      // A server policy is named by its own name in the IETF fields; an object by its own, else the layer's.
      clauses.push([`${base}:${layer.name}:${identities[i]}`, typeof p === "string" ? p : named(p, p.name || layer.name)]);
      names.push(layer.name);
    });
    return { clauses, names };
  };

  const metrics = o.limiter.metrics;
  return (req: RequestLike, res: ResponseLike, next: (err?: unknown) => void): void => {
    const { clauses, names } = applying(req);
    if (clauses.length === 0) return next();
    o.limiter.decideAll(clauses).then(({ binding, layers, index }) => {
      const passes = binding.allowed || shadow;
      const shadowAt = binding.allowed ? layers.findIndex((d) => d?.shadowed) : index;
      if (!passes) {
        metrics?.add(names[index], binding.cached ? "over_limit_with_local_cache" : binding.insured ? "insured_over_limit" : "over_limit");
      } else {
        metrics?.add(names[shadowAt >= 0 ? shadowAt : index],
          shadowAt >= 0 ? "shadow_mode" : binding.insured ? "insured_within_limit" : "within_limit");
      }
      if (!passes || !outerBindsMore(res, binding.remaining)) {
        for (const [name, value] of Object.entries(binding.allHeaders())) {
          if (!(passes && name === "Retry-After")) res.setHeader(name, value);
        }
      }
      if (passes) {
        const at = shadowAt;
        try {
          if (at >= 0) report({ layer: names[at], key: clauses[at][0], decision: layers[at] ?? binding }, req);
        } catch (err) {
          return next(err); // the report's own failure fails the request, as any error here
        }
        return next();
      }
      const body = JSON.stringify({ error: "rate limited", layer: binding.policy?.name ?? names[index] });
      res.statusCode = 429;
      res.setHeader("Content-Type", "application/json");
      res.end(body);
    }, (err) => {
      const result = err instanceof ServerUnavailableError ? (failOpen ? "unavailable_fail_open" : "unavailable") : "error";
      metrics?.add(names.join("+"), result);
      failed(err, res, next);
    });
  };
}

/** Behind another `rateLimitLayers` (a second middleware, for a limit tagged by another
 * layer) the response already carries that one's headers: an admitted request keeps
 * whichever decision has fewer remaining, this inner one's on a tie, never a mix of both (a
 * denial always answers with its own). */
function outerBindsMore(res: ResponseLike, remaining: number): boolean {
  const outer = res.getHeader?.("X-RateLimit-Remaining");
  return typeof outer === "string" && /^[0-9]+$/.test(outer) && Number(outer) < remaining;
}
