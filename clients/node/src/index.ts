/**
 * redis-rl: the rl rate limiter's commands over node-redis or ioredis, on the module or the
 * Functions library, with typed decisions and their HTTP headers.
 *
 *   const limiter = new Limiter(client);
 *   const d = await limiter.gcra("user:42", 10, "1s", { burst: 5 });
 *   d.allowed, d.remaining, d.headers()
 *   await limiter.limit("user:42", "free");   // the server's policy "free" (RL.POLICY SET)
 *   await limiter.fixed("login:alice", 5, "15m", { penalty: "15m", escalate: "24h" });
 *   await limiter.ban("login:mallory", 3_600_000);   // RL.BAN: true if the key existed
 *
 *   const { decision, reservation } = await limiter.reserve("user:42", tpm, 500);
 *   await reservation?.settle(420);            // REFUND 80 (DEBIT when more), once
 *
 * Errors (errors.ts): every case a caller handles is an `RlError`: ConfigurationError,
 * ServerUnavailableError, LibraryUnavailableError, ForeignKeyError,
 * ReservationSettledError, the driver's error kept as its `cause`.
 */
export { Limiter, type LimiterOptions } from "./limiter.js";
export { DenialCache, type DenialCacheOptions } from "./cache.js";
export { Insurance, type InsuranceLogger, type InsuranceOptions } from "./insurance.js";
export { Metrics, RESULTS, type Result } from "./metrics.js";
export {
  ConfigurationError, ForeignKeyError, LibraryUnavailableError, ReservationSettledError, RlError,
  ServerUnavailableError, type ErrorCode, type Holds,
} from "./errors.js";
export { Decision, type AllDecision, type Backend, type TopEntry } from "./decision.js";
export type { DecideOptions, Layer } from "./commands.js";
export { Reservation, type Reserved } from "./reservation.js";
export type { SendCommand } from "./transport.js";
export * as policy from "./policy.js";
export type { Duration, PenaltyOptions, Policy, PolicyOptions, PolicyOrName, QuotaOptions, QuotaUnit } from "./policy.js";
export { NO_TAG, clientIp, clientSubnet, escapeTag, header, ipKey, path, rateLimitLayers, warnShadowDenied } from "./express.js";
export type { Identify, LayerSpec, LayersOptions, RequestLike, ResponseLike, ShadowDenial } from "./express.js";
export { RlStore, type RlStoreOptions, type RlStoreInit, type RlStoreInfo } from "./express-store.js";
export type { SendCommandFn, SendCommandClusterFn } from "./stock.js";
