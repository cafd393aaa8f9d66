// Express apps on free ports (the examples among them), driven over HTTP with fetch, for the
// framework stores' and the middleware's tests.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import express from "express";

import { Server, freePort } from "./servers.mjs";

const EXAMPLES = join(fileURLToPath(new URL(".", import.meta.url)), "../examples");

/** The three backends the framework stores are held to: Redis 7.0 with the module and
 * without it (the library), and Valkey 9.1 with the module. */
export const STORE_BACKENDS = [["redis", true], ["redis", false], ["valkey", true]];

export async function startStoreServers(extra = []) {
  return Promise.all(STORE_BACKENDS.map(([flavor, withModule]) => new Server(flavor, withModule, extra).start()));
}

/** An Express 5 app answering `GET /` (200) and `GET /fail` (500) behind `middleware`;
 * the client's identity is its `x-client` header. With `trustProxy` (Express's `trust
 * proxy`, e.g. "loopback"), `req.ip` is the address a request's X-Forwarded-For names.
 * Returns { url, close }. */
export async function serve(middleware, { trustProxy } = {}) {
  const app = express();
  if (trustProxy !== undefined) app.set("trust proxy", trustProxy);
  app.use(middleware);
  app.get("/", (_req, res) => res.send("ok"));
  app.get("/fail", (_req, res) => res.status(500).send("failed"));
  // Errors (a store's, a limiter's) answer 500 with their message, as Express does.
  app.use((err, _req, res, _next) => res.status(500).send(String(err?.message ?? err)));
  const http = app.listen(0, "127.0.0.1");
  await once(http, "listening");
  const url = `http://127.0.0.1:${http.address().port}`;
  return { url, close: () => new Promise((r) => { http.closeAllConnections(); http.close(r); }) };
}

/** One request as `client`: { status, headers, body }. */
export async function hit(url, client, path = "/") {
  const r = await fetch(url + path, { headers: { "x-client": client } });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

/** `n` requests as `client`, one after another: their statuses. */
export async function statuses(url, client, n, path = "/") {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await hit(url, client, path)).status);
  return out;
}

/** `n` requests as `client`, all at once: how many got each status. */
export async function burst(urls, client, n) {
  const all = await Promise.all(Array.from({ length: n }, (_, i) => hit(urls[i % urls.length], client)));
  const count = {};
  for (const r of all) count[r.status] = (count[r.status] ?? 0) + 1;
  return count;
}

/** One request from `address` (the X-Forwarded-For a proxy on loopback would send), with
 * `headers`: { status, headers, body }. */
export async function from(url, address, headers = {}, path = "/") {
  const r = await fetch(url + path, { headers: { "x-forwarded-for": address, ...headers } });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

/** examples/<name> (or the file `name`, given whole) run as a server on a free port against
 * `redisUrl` (its REDIS_URL and PORT, and `env`): { get(path, headers), stop }. */
export async function startExample(name, redisUrl, env = {}) {
  const port = await freePort();
  const proc = spawn(process.execPath, [name.startsWith("/") ? name : join(EXAMPLES, name)], {
    env: { ...process.env, ...env, REDIS_URL: redisUrl, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"],
  });
  let log = ""; // the app's stderr (reconnections), shown if it does not start
  proc.stderr.on("data", (chunk) => { log += chunk; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await fetch(`${base}/nothing`);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`${name} did not start:\n${log}`);
      await sleep(100);
    }
  }
  const get = (path, headers = {}) => fetch(`${base}${path}`, { headers });
  const stop = () => new Promise((r) => { proc.once("exit", r); proc.kill("SIGTERM"); });
  return { get, stop, url: base };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** ms until the next multiple of `windowMs` since the epoch (the aligned window's end). */
export const untilWindowEnd = (windowMs) => windowMs - (Date.now() % windowMs);

/** Waits, if needed, so that at least `ms` are left in the current aligned window: a test
 * that must stay in one window does not straddle two. */
export async function roomInWindow(windowMs, ms) {
  const left = untilWindowEnd(windowMs);
  if (left < ms) await sleep(left + 5);
}
