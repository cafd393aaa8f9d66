/**
 * How a call reaches the server, whatever the client: node-redis (a client or a cluster),
 * ioredis (a client or a cluster), or a `sendCommand(args)` function like rate-limit-redis
 * takes. A transport sends one command line and loads the library (on every master of a
 * cluster). Every transport rejects with the package's errors (classify.ts): a command's
 * failure classified, a load's failure a LibraryUnavailableError (a ServerUnavailableError
 * where the server cannot load right now: out of reach, `OOM`, `READONLY` ...). It carries
 * the gate its server's loads go through (loading.ts).
 */
import { classify, libraryUnavailable } from "./classify.js";
import { NOT_LOADABLE, refused } from "./errors.js";
import { LoadGate, gateFor } from "./loading.js";

/** A function sending one command line and resolving with its reply. */
export type SendCommand = (args: string[]) => Promise<unknown>;

export interface Transport {
  send(args: string[], key: string, readOnly: boolean): Promise<unknown>;
  /** Loads the library where `key` lives (on every master of a cluster client). */
  loadLibrary(source: string, key?: string): Promise<void>;
  /** The loads of the server's library, one at a time (set on the transports built here). */
  readonly gate?: LoadGate;
}

/** Marks a `Transport` built by this package, which `transportOf` takes as it is. */
const BUILT = Symbol("redis-rl transport");

/** A transport from its two functions: what the framework stores build from the
 * `sendCommand` / `sendCommandCluster` options they take. Their failures are the package's
 * errors; its library loads go through `gate` (default: its own). */
export function transport(t: Transport, gate: LoadGate = new LoadGate()): Transport {
  const built: Transport = {
    gate,
    async send(args, key, readOnly) {
      try {
        return await t.send(args, key, readOnly);
      } catch (err) {
        throw classify(err);
      }
    },
    async loadLibrary(source, key) {
      try {
        await t.loadLibrary(source, key);
      } catch (err) {
        throw libraryUnavailable(err, NOT_LOADABLE);
      }
    },
  };
  return Object.assign(Object.create(null), built, { [BUILT]: true }) as Transport;
}

const LOAD = (source: string) => ["FUNCTION", "LOAD", "REPLACE", source];

/** The transport of `client` (a transport already built is taken as it is). */
export function transportOf(client: unknown): Transport {
  if (client && typeof client === "object" && (client as Record<symbol, unknown>)[BUILT]) return client as Transport;
  return transport(clientTransport(client), gateFor(client));
}

function clientTransport(client: unknown): Transport {
  if (typeof client === "function") {
    const send = client as SendCommand;
    return { send: (args) => send(args), loadLibrary: async (src) => void (await send(LOAD(src))) };
  }
  const c = client as any;
  if (c && typeof c.call === "function") {
    // ioredis: Redis, or Cluster (which routes by key and follows MOVED itself).
    const call = (target: any, args: string[]) => target.call(args[0], ...args.slice(1));
    if (c.isCluster) {
      return {
        send: (args) => call(c, args),
        loadLibrary: async (src) => void (await Promise.all(c.nodes("master").map((n: any) => call(n, LOAD(src))))),
      };
    }
    return { send: (args) => call(c, args), loadLibrary: async (src) => void (await call(c, LOAD(src))) };
  }
  if (c && typeof c.sendCommand === "function" && typeof c.nodeClient === "function") {
    // node-redis cluster: sendCommand(firstKey, isReadonly, args).
    return {
      send: (args, key, readOnly) => c.sendCommand(key, readOnly, args),
      loadLibrary: async (src) => {
        for (const master of c.masters) await (await c.nodeClient(master)).sendCommand(LOAD(src));
      },
    };
  }
  if (c && typeof c.sendCommand === "function") {
    return { send: (args) => c.sendCommand(args), loadLibrary: async (src) => void (await c.sendCommand(LOAD(src))) };
  }
  throw refused(TypeError, "redis-rl needs a node-redis or ioredis client (or cluster), or a sendCommand(args) function");
}
