// A login endpoint: 5 failed logins per account per 15 minutes; the next attempt starts a
// penalty, 15 minutes of 429s for that account, twice as long for each penalty that starts
// within a day of the end of the one before (30 min, 1 h ...), at most a day.
import express from "express";
import { createClient } from "redis";
import { Limiter, policy } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const limiter = new Limiter(client);
const failures = policy.fixed(5, "15m", { penalty: "15m", escalate: "24h", name: "login" });
const passwords = new Map([["alice", "correct horse battery staple"]]); // your accounts' store

const app = express();
app.post("/login", express.urlencoded({ extended: false }), async (req, res) => {
  const { account, password } = req.body;
  if (typeof account !== "string" || typeof password !== "string") return res.status(400).json({ error: "account and password" });
  // Every attempt is charged before the password is checked (concurrent guesses cannot all
  // pass a check made before any of them counts) ...
  const { decision, reservation } = await limiter.reserve(`login:${account}`, failures, 1);
  if (!reservation) return res.status(429).set(decision.headers()).json({ error: "too many failed logins" });
  if (passwords.get(account) !== password) return res.status(401).json({ error: "wrong account or password" });
  await reservation.settle(0); // ... and a success is given back: only failures count
  res.json({ account });
});

const server = app.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const login = (account, password) => fetch(`http://127.0.0.1:${server.address().port}/login`, {
  method: "POST", body: new URLSearchParams({ account, password }),
});

console.log((await login("alice", "correct horse battery staple")).status); // 200
const failed = [];
for (let i = 0; i < 5; i++) failed.push((await login("alice", "guess")).status);
console.log(failed.join(" ")); // 401 401 401 401 401
let r = await login("alice", "correct horse battery staple"); // the 6th attempt starts the penalty
console.log(r.status, Math.floor(Number(r.headers.get("retry-after")) / 60)); // 429 15
console.log(r.headers.get("x-ratelimit-remaining"), JSON.stringify(await r.json())); // 0 {"error":"too many failed logins"}

// A ban by hand: an hour of 429s for the account (false: it had no key yet); 0 lifts it
// (true: the key existed, and held the ban alone, so it is deleted).
console.log(await limiter.ban("login:mallory", 3_600_000)); // false
r = await login("mallory", "anything");
console.log(r.status, Math.floor(Number(r.headers.get("retry-after")) / 60)); // 429 60
console.log(await limiter.ban("login:mallory", 0)); // true
console.log((await login("mallory", "anything")).status); // 401
server.close();
await client.close();
