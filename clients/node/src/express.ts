/**
 * Express (or plain Node http) middleware: the seed's layers (per client IP, per API key, per
 * endpoint, ...) decided together by ONE `RL.ALL` per request, all or nothing.
 *
 * Every response carries the binding layer's headers (`Decision.allHeaders`); a denial is
 * answered by the middleware itself: 429 with those headers, `Retry-After` among them unless
 * the request can never be admitted, and a JSON body naming the layer. Nothing is spent
 * unless every layer admits. An error from the server (unreachable, a bad policy) goes to
 * `next(err)`, so the request fails (Express answers 500): it is never let through unchecked.
 */
import type { Layer as Clause } from "./commands.js";
import type { Limiter } from "./limiter.js";
import { type Policy, named } from "./policy.js";

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
  end(body?: string): unknown;
}

/** A request's identity for a layer, or undefined to skip the layer for this request. */
export type Identify = (req: RequestLike) => string | undefined;

export interface LayerSpec {
  /** Names the layer in keys, headers and the denial's body. */
  name: string;
  identify: Identify;
  /** The layer's policy, or a function of the request returning one (undefined: skip). */
  policy: Policy | ((req: RequestLike) => Policy | undefined);
}

export interface LayersOptions {
  limiter: Limiter;
  layers: LayerSpec[];
  /** Starts every key: `<prefix>:<name>:<identity>` (default "rl"). */
  prefix?: string;
  /** For Redis Cluster: one hash tag in every key of a request (`<prefix>:{<tag>}:...`). */
  tag?: Identify;
}

/** The client's address as Express reports it (`req.ip`: set `trust proxy` behind one). */
export const clientIp: Identify = (req) => req.ip ?? req.socket?.remoteAddress;

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
  if (!o.layers?.length) throw new RangeError("rateLimitLayers needs at least one layer");
  const names = o.layers.map((l) => l.name);
  if (new Set(names).size !== names.length) throw new RangeError(`layer names must be distinct: ${names.join(", ")}`);
  if (typeof o.limiter?.all !== "function") throw new TypeError("rateLimitLayers takes a redis-rl Limiter");
  const prefix = o.prefix ?? "rl";

  const applying = (req: RequestLike): Clause[] => {
    const base = o.tag ? `${prefix}:{${o.tag(req) ?? ""}}` : prefix;
    const out: Clause[] = [];
    for (const layer of o.layers) {
      const identity = layer.identify(req);
      if (identity === undefined) continue;
      const p = typeof layer.policy === "function" ? layer.policy(req) : layer.policy;
      if (p) out.push([`${base}:${layer.name}:${identity}`, named(p, p.name || layer.name)]);
    }
    return out;
  };

  return (req: RequestLike, res: ResponseLike, next: (err?: unknown) => void): void => {
    const layers = applying(req);
    if (layers.length === 0) return next();
    o.limiter.all(layers).then(({ binding }) => {
      for (const [name, value] of Object.entries(binding.allHeaders())) res.setHeader(name, value);
      if (binding.allowed) return next();
      const body = JSON.stringify({ error: "rate limited", layer: binding.policy?.name ?? "" });
      res.statusCode = 429;
      res.setHeader("Content-Type", "application/json");
      res.end(body);
    }, next);
  };
}
