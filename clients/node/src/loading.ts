/**
 * One load of the Functions library at a time per server, and a backoff after a failed one.
 *
 * Where calls find the library missing, only the first loads it (`FUNCTION LOAD REPLACE` of a
 * 139 KB library); the others wait for that load to end and then send their call again, with
 * no error of their own (if it failed, they reject with its error). A load that fails starts
 * a backoff: no new load for 1 s, doubled after each failure in a row up to 30 s, ended by a
 * load that succeeds. While it lasts, a call that finds the library missing rejects with the
 * failed load's error (classify.ts: `OOM` is unavailable, `NOPERM` a configuration).
 *
 * The gates are per process, one per server: per node-redis or ioredis client's address (and
 * user), else per client (a cluster, a `sendCommand` function).
 */

/** The backoff after a first failed load, and its most, in ms. */
export const FIRST_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 30_000;

export class LoadGate {
  #loading: Promise<void> | undefined;
  #failures = 0; // failed loads in a row
  #until = 0; // performance.now() when the backoff ends
  #error: unknown; // the last failed load's error
  #loadedAt = -Infinity; // performance.now() when the last load succeeded

  /** For a call sent at `sent` (performance.now()) that found the library missing: loads by
   * `load`, or waits for the load in flight, or returns at once if a load has succeeded since
   * `sent` (the call was answered before it ended: call again); rejects with the last failed
   * load's error while the backoff lasts. */
  async load(load: () => Promise<void>, sent: number): Promise<void> {
    if (this.#loading) return this.#loading;
    if (this.#loadedAt >= sent) return;
    if (this.#failures > 0 && performance.now() < this.#until) throw this.#error;
    const loading = load().then(
      () => {
        this.#failures = 0;
        this.#error = undefined;
        this.#loadedAt = performance.now();
      },
      (err: unknown) => {
        this.#failures += 1;
        this.#error = err;
        this.#until = performance.now() + Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.#failures - 1));
        throw err;
      },
    ).finally(() => {
      this.#loading = undefined;
    });
    this.#loading = loading;
    return loading;
  }
}

const byAddress = new Map<string, LoadGate>();
const byClient = new WeakMap<object, LoadGate>();

/** What names the server of `client` (node-redis or ioredis, not a cluster): its address and
 * user, or undefined. */
function addressOf(client: any): string | undefined {
  if (!client || typeof client !== "object" || client.isCluster || client.masters) return undefined;
  const o = client.options;
  if (!o || typeof o !== "object") return undefined;
  if (typeof o.url === "string") { // node-redis: redis[s]://[user[:password]@]host[:port][/db]
    try {
      const u = new URL(o.url);
      return `tcp:${decodeURIComponent(u.username || o.username || "")}@${u.hostname}:${u.port || 6379}`;
    } catch {
      return undefined;
    }
  }
  const socket = o.socket ?? o; // node-redis: { socket: { host, port, path } }; ioredis: { host, port, path }
  const user = o.username ?? "";
  if (typeof socket.path === "string") return `unix:${user}@${socket.path}`;
  if (socket.host !== undefined || socket.port !== undefined) return `tcp:${user}@${socket.host ?? "localhost"}:${socket.port ?? 6379}`;
  return undefined;
}

/** The gate of `client`'s server. */
export function gateFor(client: unknown): LoadGate {
  const address = addressOf(client);
  if (address !== undefined) {
    let gate = byAddress.get(address);
    if (!gate) byAddress.set(address, (gate = new LoadGate()));
    return gate;
  }
  const key = (client && (typeof client === "object" || typeof client === "function") ? client : gateFor) as object;
  let gate = byClient.get(key);
  if (!gate) byClient.set(key, (gate = new LoadGate()));
  return gate;
}
