// An OpenAI-style LLM proxy with Express: per API key, requests per minute and tokens per
// minute, and per organisation a monthly token budget, decided together in ONE RL.ALL per
// request (a request denied by one layer spends nothing from the others).
//   - rpm: 60 requests a minute (SLIDINGLOG), key {llm:<org>}:rpm:<api key>, cost 1, never settled
//   - tpm: 10,000 tokens a minute (SLIDINGLOG, so the budget is exact), key
//     {llm:<org>}:tpm:<api key>: reserves an estimate, ceil(characters of the messages'
//     contents / 4) + max_tokens (default 256), and settles it at the upstream's
//     usage.total_tokens (DEBIT when more, REFUND when less)
//   - budget: MONTHLY_TOKENS (5,000,000) tokens a calendar month for the organisation (QUOTA
//     ... MONTH, renewing on BUDGET_ANCHOR's day and time in BUDGET_TZ: the 1st at midnight
//     UTC by default), key {llm:<org>}:month, reserved and settled as tpm
// The keys share the hash tag {llm:<org>}, so RL.ALL works on Redis Cluster too.
// Run: REDIS_URL=redis://127.0.0.1:6379 UPSTREAM_URL=https://api.example.com PORT=8000 node server.mjs
// (POST /v1/chat/completions is sent on to UPSTREAM_URL's /v1/chat/completions.)
import express from "express";
import { createClient } from "redis";
import { Limiter, policy, ServerUnavailableError } from "redis-rl";

// Demo API keys and their organisations (a Map: a client's text, "constructor", finds no
// inherited property).
const API_KEYS = new Map([["key-a", "acme"], ["key-b", "globex"], ["key-d", "globex"]]);
const RPM = policy.slidingLog(60, "1m", { name: "rpm" });
const TPM = policy.slidingLog(10_000, "1m", { name: "tpm" });
const MONTHLY_TOKENS = Number(process.env.MONTHLY_TOKENS ?? 5_000_000);
const BUDGET = policy.quota(MONTHLY_TOKENS, "MONTH", {
  name: "budget", tz: process.env.BUDGET_TZ ?? "UTC", anchor: process.env.BUDGET_ANCHOR ?? "2001-01-01T00:00",
});
const DEFAULT_MAX_TOKENS = 256;
const UPSTREAM_URL = (process.env.UPSTREAM_URL ?? "http://127.0.0.1:8001").replace(/\/+$/, "");

const client = createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" });
client.on("error", (err) => console.error("redis:", err.message)); // node-redis reconnects by itself
await client.connect();
const limiter = new Limiter(client);

/** An OpenAI-style error: { error: { message, type, param, code } }. */
function fail(res, status, message, type, code = null) {
  res.status(status).json({ error: { message, type, param: null, code } });
}

/** The text of a message's content: a string, or the text parts of an array. */
function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
}

/** ceil(characters of every message's content / 4) + max_tokens: a prompt-token estimate
 * (about 4 characters a token) plus the most the completion may take. Characters are code
 * points, as Python counts them. */
function estimate(messages, maxTokens) {
  const chars = messages.reduce((n, m) => n + [...contentText(m?.content)].length, 0);
  return Math.ceil(chars / 4) + maxTokens;
}

/** A settlement that failed (the limiter's server unreachable) is not sent again: the
 * estimate stays spent. */
const unsettled = (err) => console.error("settle:", err.message);

const app = express();
app.post("/v1/chat/completions", express.json({ limit: "1mb" }), async (req, res, next) => {
  try {
    const apiKey = /^Bearer (.+)$/.exec(req.get("authorization") ?? "")?.[1];
    if (!API_KEYS.has(apiKey)) return fail(res, 401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key");
    const body = req.body ?? {};
    const maxTokens = body.max_tokens ?? DEFAULT_MAX_TOKENS;
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return fail(res, 400, "messages must be a non-empty array.", "invalid_request_error");
    }
    if (!Number.isSafeInteger(maxTokens) || maxTokens < 1) {
      return fail(res, 400, "max_tokens must be a positive integer.", "invalid_request_error");
    }
    if (body.stream) return fail(res, 400, "This proxy does not stream.", "invalid_request_error");

    const wanted = estimate(body.messages, maxTokens);
    const org = API_KEYS.get(apiKey);
    const { decision, reservation } = await limiter.reserveAll([
      [`{llm:${org}}:rpm:${apiKey}`, RPM, 1], // spends 1, never settled
      [`{llm:${org}}:tpm:${apiKey}`, TPM], // reserves the estimate, settled below
      [`{llm:${org}}:month`, BUDGET], // the organisation's month: reserved and settled too
    ], wanted);
    res.set(decision.binding.ietfHeaders()); // RateLimit-Policy, RateLimit, and Retry-After on a denial
    if (!reservation) {
      const d = decision.binding;
      if (d.policy === BUDGET) { // Retry-After is the renewal
        return fail(res, 429, `Your organisation's ${MONTHLY_TOKENS} tokens for this month are spent.`, "budget", "insufficient_quota");
      }
      const what = d.policy === RPM ? "requests per min (RPM)" : "tokens per min (TPM)";
      const when = d.retryAfter === undefined ? "This request is larger than the limit." : `Please try again in ${d.retryAfter}s.`;
      return fail(res, 429, `Rate limit reached on ${what}: Limit ${d.limit}, Requested ${d.policy === RPM ? 1 : wanted}. ${when}`,
        d.policy === RPM ? "requests" : "tokens", "rate_limit_exceeded");
    }

    // The completion can take no more than the max_tokens the estimate counted.
    let upstream;
    try {
      upstream = await fetch(`${UPSTREAM_URL}/v1/chat/completions`, {
        method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, max_tokens: maxTokens }),
      });
    } catch {
      await reservation.settle(0).catch(unsettled); // nothing reached the model: every reserved token back
      return fail(res, 502, "The upstream could not be reached.", "api_error", "upstream_unavailable");
    }
    const reply = await upstream.json().catch(() => undefined);
    const used = reply?.usage?.total_tokens;
    // A success is settled at its usage (the estimate if it reports none); a failure at what it
    // reports, else 0.
    const actual = Number.isSafeInteger(used) && used >= 0 ? used : upstream.ok ? wanted : 0;
    await reservation.settle(actual).catch(unsettled); // the answer goes out even so
    if (reply === undefined) return fail(res, 502, "The upstream's answer was not JSON.", "api_error", "bad_upstream_response");
    res.status(upstream.status).json(reply);
  } catch (err) {
    // The limiter's server down, full or read-only: 503, retry later (never let through
    // unchecked); any other error, a policy the server refuses, is the proxy's fault: 500.
    if (err instanceof ServerUnavailableError) {
      return fail(res, 503, "The rate limiter is unavailable.", "api_error", "limiter_unavailable");
    }
    next(err);
  }
});

const server = app.listen(Number(process.env.PORT ?? 8000), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => client.close()));
