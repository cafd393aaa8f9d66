/**
 * Which case (errors.ts) a driver's error is: the one place that reads the servers' error
 * texts and the drivers' error shapes (node-redis, ioredis).
 *
 * The texts are facts/rl.toml's (the module's and the Functions library's, word for word),
 * and the servers' own (`unknown command`, `Function not found`, `WRONGTYPE`), read
 * after a leading `ERR `. An error that is none of the cases is returned as it is.
 *
 * Every error is of one of two classes, as in the Python and NGINX packages: "unavailable"
 * (the server out of reach, or an error whose code, its first word, is one of facts/rl.toml's
 * UNAVAILABLE_CODES: LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, OOM, READONLY), a
 * ServerUnavailableError, which a middleware answers 503 (or lets through with failOpen);
 * or any other error, a configuration's, which it answers 500 whatever failOpen says.
 */
import { ERROR_PATTERNS, MESSAGES, UNAVAILABLE_CODES } from "./facts.js";
import { ConfigurationError, ForeignKeyError, type Holds, LibraryUnavailableError, RlError, ServerUnavailableError } from "./errors.js";

/** A reply's text, less a leading `ERR `. */
const text = (err: unknown): string => (err instanceof Error ? err.message : String(err)).replace(/^ERR /, "");

/** The text of the error `name` of facts/rl.toml, whole. */
const whole = (name: keyof typeof ERROR_PATTERNS): RegExp => new RegExp(`^(?:${ERROR_PATTERNS[name]})$`);

/** `literal`, whole and as it is written. */
const exactly = (literal: string): RegExp => new RegExp("^" + literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$");

/** The module's refusals of an argument (facts/rl.toml's errors that name one, a policy's
 * name the server does not hold among them), and the
 * `syntax` error's fixed texts (its `messages`: RL.ALL's and RL.PEEK's shape, lease ids). */
const ARGUMENT: RegExp[] = [
  ...(["wrong_arity", "bad_integer", "bad_duration", "unknown_option", "unknown_clause_option", "repeated_option",
    "missing_value", "rate_too_high", "cost_with_refund", "clause_arity", "no_such_policy", "policy_name",
    "escalate_below_penalty", "bad_unit", "unknown_zone", "bad_anchor"] as const).map(whole),
  ...Object.values(MESSAGES).map(exactly),
];

/** What a foreign key holds, by the text refusing it (`WRONGTYPE` is the servers' own too). */
const FOREIGN: [RegExp, Holds][] = [
  [new RegExp(`^WRONGTYPE ${ERROR_PATTERNS.wrong_type}$`), "type"],
  [whole("other_algorithm"), "limiter"],
  [whole("foreign_value"), "value"],
];

/** Node's socket errors of a server out of reach. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH",
  "ENOTFOUND", "EAI_AGAIN", "ECONNABORTED"]);
/** The drivers' errors of a server out of reach (node-redis; ioredis, whose cluster's is
 * ClusterAllFailedError). Not node-redis' ClientClosedError: a client the app closed. */
const DRIVER_UNREACHABLE = new Set(["SocketClosedUnexpectedlyError", "ConnectionTimeoutError", "SocketTimeoutError",
  "ClientOfflineError", "ReconnectStrategyError", "MaxRetriesPerRequestError", "ClusterAllFailedError"]);
/** ioredis' texts of a connection it cannot use. */
const IOREDIS_UNREACHABLE = /^(Connection is closed\.|Stream isn't writeable and enableOfflineQueue options is false)/;

/** The server has no such command (no module; no `FCALL`). */
export const unknownCommand = (err: unknown): boolean => text(err).toLowerCase().startsWith("unknown command");

/** `FCALL` of a function the server does not have: the library is not loaded. */
export const functionMissing = (err: unknown): boolean => text(err).toLowerCase().includes("function not found");

/** A reply from the server that is an error (not a connection failure): the drivers' reply
 * errors, or the package's error made from one. */
export const isReplyError = (err: unknown): boolean =>
  err instanceof Error && (["ReplyError", "SimpleError", "ErrorReply", "BlobError"].includes(err.constructor.name)
    || err instanceof ConfigurationError || err instanceof ForeignKeyError);

/** A failure to reach the server: Node's socket errors (an AggregateError of several
 * addresses carries the code too), the drivers' connection errors. */
export function unreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && SOCKET_CODES.has(code)) return true;
  return DRIVER_UNREACHABLE.has(err.constructor.name) || IOREDIS_UNREACHABLE.test(err.message);
}

/** The code of a server's error reply (`OOM`, `READONLY`, `ERR` ...): its first word; undefined
 * for an error that is no reply. */
export function errorCode(err: unknown): string | undefined {
  if (!isReplyError(err)) return undefined;
  const message = err instanceof Error ? err.message : String(err);
  return /^[A-Z][A-Z0-9]*(?= |$)/.exec(message)?.[0];
}

/** The class of `err`: true when the server cannot decide right now (out of reach, or an error
 * whose code is one of UNAVAILABLE_CODES), false for every other error. */
export function unavailable(err: unknown): boolean {
  if (err instanceof RlError) return err instanceof ServerUnavailableError;
  const code = errorCode(err);
  return unreachable(err) || (code !== undefined && UNAVAILABLE_CODES.has(code));
}

/** What a key refused as foreign holds (`ForeignKeyError.holds`), or undefined. */
export function foreignHolds(err: unknown): Holds | undefined {
  const t = text(err);
  return FOREIGN.find(([pattern]) => pattern.test(t))?.[1];
}

/** The package's error for `err` (a command's failure), or `err` itself when it is none of
 * the cases. */
export function classify(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof RlError) return err;
  if (unavailable(err)) return new ServerUnavailableError(err.message, { cause: err });
  if (!isReplyError(err) || unknownCommand(err) || functionMissing(err)) return err;
  const holds = foreignHolds(err);
  if (holds) return new ForeignKeyError(err.message, holds, { cause: err });
  if (ARGUMENT.some((pattern) => pattern.test(text(err)))) return new ConfigurationError(err.message, { cause: err });
  return err;
}

/** The error of a library that cannot be used (`why`, then the server's text): a
 * LibraryUnavailableError, or a ServerUnavailableError where the reply's code says the server
 * cannot do it right now (`OOM`, `READONLY` ...); a failure to reach the server is a
 * ServerUnavailableError as any call's. */
export function libraryUnavailable(err: unknown, why: string): unknown {
  if (err instanceof RlError) return err;
  if (unreachable(err)) return classify(err);
  const Case = unavailable(err) ? ServerUnavailableError : LibraryUnavailableError;
  return new Case(`${why}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
