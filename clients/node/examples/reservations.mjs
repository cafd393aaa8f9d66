import { createClient } from "redis";
import { Limiter, ReservationSettledError, policy } from "redis-rl";

const client = await createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" }).connect();
const limiter = new Limiter(client);
const tpm = policy.slidingLog(10_000, "1m", { name: "tpm" }); // tokens per minute, exactly

// Reserve an estimate, settle at what was used: less gives the difference back (REFUND).
const { decision, reservation } = await limiter.reserve("tpm:key-a", tpm, 1_200);
console.log(decision.allowed, decision.remaining, reservation.estimate); // true 8800 1200
const refunded = await reservation.settle(900); // REFUND 300
console.log(refunded.remaining, reservation.settled); // 9100 true
try {
  await reservation.settle(900); // once only
} catch (err) {
  console.log(err instanceof ReservationSettledError, err.code); // true ERR_RL_RESERVATION_SETTLED
}

// More is charged after the fact (DEBIT), never denied: the key is in debt until it refills.
const big = await limiter.reserve("tpm:key-a", tpm, 9_000);
const debited = await big.reservation.settle(12_000); // DEBIT 3000: 2,900 in debt
console.log(debited.allowed, debited.remaining); // true 0
console.log((await limiter.decide("tpm:key-a", tpm)).allowed); // false

// One RL.ALL: a [key, policy] layer reserves the estimate and is settled; a [key, policy, cost]
// layer spends its own cost and is not.
const rpm = policy.slidingLog(60, "1m", { name: "rpm" });
const both = await limiter.reserveAll([["{key-b}:rpm", rpm, 1], ["{key-b}:tpm", tpm]], 500);
console.log(both.decision.layers.map((d) => d.remaining).join(" ")); // 59 9500
const settled = await both.reservation.settle(200); // RL.ALL 1 {key-b}:tpm SLIDINGLOG 10000 1m REFUND 300
console.log(settled.layers.length, settled.binding.remaining); // 1 9800
await client.close();
