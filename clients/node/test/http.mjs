// Express apps on free ports, driven over HTTP with fetch, for the framework stores' tests.
import { once } from "node:events";

import express from "express";

import { Server } from "./servers.mjs";

/** The three backends the framework stores are held to: Redis 7.0 with the module and
 * without it (the library), and Valkey 9.1 with the module. */
export const STORE_BACKENDS = [["redis", true], ["redis", false], ["valkey", true]];

export async function startStoreServers(extra = []) {
  return Promise.all(STORE_BACKENDS.map(([flavor, withModule]) => new Server(flavor, withModule, extra).start()));
}

/** An Express 5 app answering `GET /` (200) and `GET /fail` (500) behind `middleware`;
 * the client's identity is its `x-client` header. Returns { url, close }. */
export async function serve(middleware) {
  const app = express();
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

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** ms until the next multiple of `windowMs` since the epoch (the aligned window's end). */
export const untilWindowEnd = (windowMs) => windowMs - (Date.now() % windowMs);

/** Waits, if needed, so that at least `ms` are left in the current aligned window: a test
 * that must stay in one window does not straddle two. */
export async function roomInWindow(windowMs, ms) {
  const left = untilWindowEnd(windowMs);
  if (left < ms) await sleep(left + 5);
}
