/**
 * The package's errors: one base, `RlError`, and one class per case a caller handles. Each
 * has a `code` and keeps the error it came from as its `cause`; a rejection from the server
 * keeps the server's text as its message.
 *
 * - `ConfigurationError` (`ERR_RL_CONFIGURATION`): a limit or a call's arguments refused, by
 *   the server (the module's or the library's `ERR` about an argument) or by this package
 *   before anything is sent. The latter stay the TypeError or RangeError they were (their
 *   `name` and `instanceof` unchanged) and carry the code, so `instanceof ConfigurationError`
 *   (and `instanceof RlError`) holds for them too.
 * - `ServerUnavailableError` (`ERR_RL_SERVER_UNAVAILABLE`): the server cannot be reached
 *   (refused, reset, timed out, the client offline).
 * - `LibraryUnavailableError` (`ERR_RL_LIBRARY_UNAVAILABLE`): the server has no module, and the
 *   Functions library is missing and cannot be loaded.
 * - `ForeignKeyError` (`ERR_RL_FOREIGN_KEY`): the key holds another Redis type, another
 *   limiter's state, or a value no limiter wrote (`holds`); the key is left as it is.
 * - `ReservationSettledError` (`ERR_RL_RESERVATION_SETTLED`): a reservation's `settle` called
 *   again; nothing is sent (a reservation settles once).
 *
 * `instanceof` reads the code, so it also holds across the package's ESM and CommonJS builds.
 * classify.ts decides which case an error is.
 */

export type ErrorCode = "ERR_RL_CONFIGURATION" | "ERR_RL_SERVER_UNAVAILABLE" | "ERR_RL_LIBRARY_UNAVAILABLE" | "ERR_RL_FOREIGN_KEY"
  | "ERR_RL_RESERVATION_SETTLED";

const PREFIX = "ERR_RL_";

export class RlError extends Error {
  /** The class's code; undefined on the base, which every code matches. */
  static readonly code: ErrorCode | undefined = undefined;
  readonly code: ErrorCode;
  declare readonly cause?: unknown;

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message);
    const code = (new.target as typeof RlError).code;
    if (code === undefined) throw new TypeError("RlError is a base class: throw one of its cases");
    this.code = code;
    Object.defineProperty(this, "name", { value: new.target.name, configurable: true, writable: true });
    if ("cause" in options) Object.defineProperty(this, "cause", { value: options.cause, configurable: true, writable: true });
  }

  /** An error of this class, or an Error carrying its code (the package's TypeErrors and
   * RangeErrors, an error of the package's other build). */
  static [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    const code = value instanceof Error ? (value as { code?: unknown }).code : undefined;
    if (typeof code !== "string") return false;
    return this.code === undefined ? code.startsWith(PREFIX) : code === this.code;
  }
}

/** A limit or a call's arguments refused (by the server, or before sending). */
export class ConfigurationError extends RlError {
  static override readonly code = "ERR_RL_CONFIGURATION";
}

/** The server cannot be reached: connection refused or reset, a timeout, the client offline. */
export class ServerUnavailableError extends RlError {
  static override readonly code = "ERR_RL_SERVER_UNAVAILABLE";
}

/** The module is not loaded and the Functions library is missing and cannot be loaded (an
 * ACL user who may not run `FUNCTION LOAD`, a read-only replica, a server without Functions). */
export class LibraryUnavailableError extends RlError {
  static override readonly code = "ERR_RL_LIBRARY_UNAVAILABLE";
}

/** What a foreign key holds: another Redis type (`WRONGTYPE`), another limiter kind's state,
 * or a value of the right type that no limiter wrote. */
export type Holds = "type" | "limiter" | "value";

/** The key holds what this call may not touch (`holds` says what); it is left as it is. */
export class ForeignKeyError extends RlError {
  static override readonly code = "ERR_RL_FOREIGN_KEY";
  readonly holds: Holds;

  constructor(message: string, holds: Holds, options: { cause?: unknown } = {}) {
    super(message, options);
    this.holds = holds;
  }
}

/** A reservation settled a second time (`settle` resolves or rejects once, then this): nothing
 * is sent. */
export class ReservationSettledError extends RlError {
  static override readonly code = "ERR_RL_RESERVATION_SETTLED";
}

/** What a LibraryUnavailableError says before the server's text: the load failed; the server
 * has no `FCALL`; the library, loaded, was not there for the call. */
export const NOT_LOADABLE = "the rl module is not loaded and the rl library could not be loaded";
export const NO_FUNCTIONS = "the rl module is not loaded and the server has no Functions (FCALL) for the library";
export const NOT_LOADED = "the rl library was loaded but the server does not have it";

/** A check made before sending: `new Kind(message)` (a TypeError or RangeError, as the package
 * threw before) carrying ConfigurationError's code. */
export function refused(Kind: TypeErrorConstructor | RangeErrorConstructor, message: string): TypeError | RangeError {
  return Object.assign(new Kind(message), { code: ConfigurationError.code });
}
