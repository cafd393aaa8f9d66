// The Express LLM proxy (examples/llm-proxy/server.mjs, docs/node.md "An LLM proxy with Express") over
// HTTP, in front of a fake OpenAI-style upstream that answers each chat completion with the
// usage its last message names (`usage:N`), on Redis 7.0 with the module and without it (the
// library) and Valkey 9.1 with it: 50 requests at once on one API key charge at most the
// tokens-per-minute budget plus the overrun of the one request that used more than it
// reserved; 429s carry Retry-After, the IETF RateLimit fields and an OpenAI-style error;
// refunds let more requests through than the budget over the estimate; an underestimate is
// debt that blocks the key; an upstream failure (or none reachable) gives the tokens back;
// the requests-per-minute layer is never settled; an organisation's keys share its monthly
// token budget, whose 429 gives the month's length and its renewal.
import assert from "node:assert/strict";
import { copyFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { once } from "node:events";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { createClient } from "redis";
import { Limiter, policy } from "redis-rl";

import { sleep, startExample, startStoreServers } from "./http.mjs";
import { ROOT, closeAll, freePort } from "./servers.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
// The example resolves express, redis and redis-rl from the node_modules above it: run a copy here.
const PROXY = join(HERE, `llm-proxy-${process.pid}.mjs`);
copyFileSync(join(ROOT, "examples/llm-proxy/server.mjs"), PROXY);

const servers = await startStoreServers();
after(async () => {
  rmSync(PROXY, { force: true });
  await closeAll(servers);
});

const TPM = policy.slidingLog(10_000, "1m");
const RPM = policy.slidingLog(60, "1m");
/** The example's organisations of its API keys. */
const ORGS = { "key-a": "acme", "key-b": "globex", "key-d": "globex" };

/** The fake upstream: answers `POST /v1/chat/completions` after `delayMs` with
 * usage.total_tokens = the N of `usage:N` in the last message (else 10), or 500 for a last
 * message "fail". `received(content)` resolves when a request with that content arrives. */
async function fakeUpstream() {
  const state = { delayMs: 0, bodies: [], waiting: new Map() };
  const http = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    const content = body.messages.at(-1).content;
    state.bodies.push(body);
    state.waiting.get(content)?.();
    await sleep(state.delayMs);
    res.setHeader("content-type", "application/json");
    if (content === "fail") {
      res.statusCode = 500;
      return res.end(JSON.stringify({ error: { message: "the model is down", type: "server_error", param: null, code: null } }));
    }
    const total = Number(/usage:(\d+)/.exec(content)?.[1] ?? 10);
    res.end(JSON.stringify({
      id: "chatcmpl-test", object: "chat.completion", model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 0, completion_tokens: total, total_tokens: total },
    }));
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  return Object.assign(state, {
    url: `http://127.0.0.1:${http.address().port}`,
    received: (content) => new Promise((r) => state.waiting.set(content, r)),
    close: () => new Promise((r) => { http.closeAllConnections(); http.close(r); }),
  });
}

/** One chat completion through the proxy: { status, headers, body }. */
async function chat(base, apiKey, content, maxTokens) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content }], max_tokens: maxTokens }),
  });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

/** The proxy's estimate: ceil(characters / 4) + max_tokens. */
const estimateOf = (content, maxTokens) => Math.ceil([...content].length / 4) + maxTokens;

function assertDenied(r, layer, quota) {
  assert.equal(r.status, 429);
  assert.match(r.headers.get("retry-after"), /^[1-9][0-9]*$/);
  assert.equal(r.headers.get("ratelimit-policy"), `"${layer}";q=${quota};w=60`);
  assert.match(r.headers.get("ratelimit"), new RegExp(`^"${layer}";r=[0-9]+;t=[0-9]+$`));
  assert.equal(r.body.error.code, "rate_limit_exceeded");
  assert.equal(r.body.error.type, layer === "tpm" ? "tokens" : "requests");
  assert.match(r.body.error.message, /Rate limit reached/);
}

for (const server of servers) {
  describe(`the LLM proxy on ${server.label}`, () => {
    let upstream, proxy, c, limiter;
    /** The tokens `apiKey` has left this minute (0 in debt). */
    const tokensLeft = async (apiKey) => (await limiter.peek(`{llm:${ORGS[apiKey]}}:tpm:${apiKey}`, TPM, { cost: 0 })).remaining;
    before(async () => {
      upstream = await fakeUpstream();
      proxy = await startExample(PROXY, server.url, { UPSTREAM_URL: upstream.url });
      c = await createClient({ url: server.url }).connect();
      limiter = new Limiter(c, { denialCache: false }); // the server is emptied between tests
    });
    after(async () => {
      await proxy.stop();
      await upstream.close();
      await c.close();
    });

    test("50 requests at once charge at most the budget plus the one overrun", async () => {
      server.reset();
      upstream.delayMs = 100; // every admitted request in flight together
      const estimate = estimateOf("usage:400", 400); // 403, settled at 400: 3 back each
      const overrun = 2000 - estimateOf("usage:2000", 400); // 1597 over its reservation
      const first = chat(proxy.url, "key-a", "usage:2000", 400);
      await upstream.received("usage:2000"); // the overrunning request is admitted first
      const rest = await Promise.all(Array.from({ length: 49 }, () => chat(proxy.url, "key-a", "usage:400", 400)));
      const all = [await first, ...rest];
      assert.equal(all[0].status, 200);
      const admitted = all.filter((r) => r.status === 200);
      const denied = all.filter((r) => r.status !== 200);
      const charged = admitted.reduce((n, r) => n + r.body.usage.total_tokens, 0);
      assert.ok(charged <= 10_000 + overrun, `${charged} tokens charged`);
      assert.ok(charged > 10_000 - estimate - overrun, `${charged} tokens charged: the budget was spent`);
      assert.ok(denied.length > 0);
      for (const r of denied) assertDenied(r, "tpm", 10_000);
      for (const r of admitted) assert.match(r.headers.get("ratelimit"), /^"(rpm|tpm)";r=[0-9]+;t=[0-9]+$/); // the binding layer's
      // Every settlement landed: the log holds exactly the usage charged.
      assert.equal(await tokensLeft("key-a"), Math.max(0, 10_000 - charged));
      assert.equal(upstream.bodies.at(-1).max_tokens, 400);
    });

    test("refunds let more requests through than the budget over the estimate", async () => {
      server.reset();
      upstream.delayMs = 0;
      const estimate = estimateOf("usage:50", 1000); // 1002, settled at 50
      const statuses = [];
      for (let i = 0; i < 30; i++) statuses.push((await chat(proxy.url, "key-b", "usage:50", 1000)).status);
      assert.deepEqual(statuses, Array(30).fill(200));
      assert.ok(statuses.length > Math.floor(10_000 / estimate)); // 9 without the refunds
      assert.equal(await tokensLeft("key-b"), 10_000 - 30 * 50);
    });

    test("an underestimate is debt: the key is refused until it is paid off", async () => {
      server.reset();
      upstream.delayMs = 0;
      const r = await chat(proxy.url, "key-b", "usage:12000", 1000); // reserved 1003, used 12,000
      assert.equal(r.status, 200);
      assert.equal(await tokensLeft("key-b"), 0);
      const next = await chat(proxy.url, "key-b", "usage:1", 1);
      assertDenied(next, "tpm", 10_000);
      assert.ok(Number(next.headers.get("retry-after")) > 50);
      assert.equal((await chat(proxy.url, "key-a", "usage:1", 1)).status, 200); // another key's budget is its own
    });

    test("an upstream failure gives the reserved tokens back; the request still counts", async () => {
      server.reset();
      upstream.delayMs = 0;
      const r = await chat(proxy.url, "key-a", "fail", 500);
      assert.equal(r.status, 500);
      assert.equal(r.body.error.message, "the model is down");
      assert.equal(await tokensLeft("key-a"), 10_000);
      assert.equal((await limiter.peek("{llm:acme}:rpm:key-a", RPM, { cost: 0 })).remaining, 59);
    });

    test("an upstream that cannot be reached: 502, every reserved token back", async () => {
      server.reset();
      const nowhere = await startExample(PROXY, server.url, { UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` });
      try {
        const r = await chat(nowhere.url, "key-b", "hello", 100);
        assert.deepEqual([r.status, r.body.error.code], [502, "upstream_unavailable"]);
        assert.equal(await tokensLeft("key-b"), 10_000);
      } finally {
        await nowhere.stop();
      }
    });

    test("the 61st request in a minute is refused by the rpm layer, which spends no tokens", async () => {
      server.reset();
      upstream.delayMs = 0;
      for (let i = 0; i < 60; i++) assert.equal((await chat(proxy.url, "key-a", "usage:1", 1)).status, 200);
      assertDenied(await chat(proxy.url, "key-a", "usage:1", 1), "rpm", 60);
      assert.equal(await tokensLeft("key-a"), 10_000 - 60);
    });

    test("a full Redis (OOM) is a 503, retried later, and spends nothing", async () => {
      server.reset();
      await tokensLeft("key-a"); // the library loaded, where it serves: a read writes nothing
      await c.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      try {
        const r = await chat(proxy.url, "key-a", "usage:5", 10);
        assert.deepEqual([r.status, r.body.error.code], [503, "limiter_unavailable"]);
      } finally {
        await c.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      }
      assert.equal(Number(await c.sendCommand(["DBSIZE"])), 0);
      assert.equal((await chat(proxy.url, "key-a", "usage:5", 10)).status, 200);
    });

    test("unknown API keys and malformed bodies are refused as OpenAI does", async () => {
      server.reset();
      for (const key of [undefined, "key-c", "constructor"]) {
        const r = await chat(proxy.url, key, "hello", 10);
        assert.deepEqual([r.status, r.body.error.code], [401, "invalid_api_key"]);
      }
      const bad = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST", headers: { "content-type": "application/json", authorization: "Bearer key-a" },
        body: JSON.stringify({ model: "gpt-test", messages: [], max_tokens: 10 }),
      });
      assert.equal(bad.status, 400);
      assert.equal((await bad.json()).error.type, "invalid_request_error");
      assert.equal((await chat(proxy.url, "key-a", "hello", 0)).status, 400);
      assert.equal(Number(await c.sendCommand(["DBSIZE"])), 0); // nothing spent
      // Without max_tokens, 256: the estimate counts it, and the upstream is held to it.
      assert.equal((await chat(proxy.url, "key-a", "usage:7", undefined)).status, 200);
      assert.equal(upstream.bodies.at(-1).max_tokens, 256);
      assert.equal(await tokensLeft("key-a"), 10_000 - 7);
    });

    test("an organisation's keys share its monthly budget, denied till the renewal", async () => {
      server.reset();
      upstream.delayMs = 0;
      const monthly = 5000;
      const small = await startExample(PROXY, server.url, { UPSTREAM_URL: upstream.url, MONTHLY_TOKENS: String(monthly) });
      try {
        assert.equal((await chat(small.url, "key-b", `usage:${monthly - 100}`, 90)).status, 200); // overrun: debt
        assert.equal((await chat(small.url, "key-d", "usage:100", 90)).status, 200); // globex's last 100
        const t0 = Date.now();
        const r = await chat(small.url, "key-d", "usage:1", 1);
        const t1 = Date.now();
        assert.equal(r.status, 429);
        assert.deepEqual([r.body.error.type, r.body.error.code], ["budget", "insufficient_quota"]);
        const now = new Date(t0);
        const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
        const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
        assert.equal(r.headers.get("ratelimit-policy"), `"budget";q=${monthly};w=${(end - start) / 1000}`);
        assert.match(r.headers.get("ratelimit"), /^"budget";r=0;t=[0-9]+$/);
        const retry = Number(r.headers.get("retry-after"));
        assert.ok((end - t1) / 1000 <= retry && retry <= (end - t0) / 1000 + 1, String(retry));
        assert.equal((await chat(small.url, "key-a", "usage:1", 1)).status, 200); // acme's month is its own
        assert.equal(await tokensLeft("key-d"), 10_000 - 100); // the minute is the key's own
      } finally {
        await small.stop();
      }
    });
  });
}
