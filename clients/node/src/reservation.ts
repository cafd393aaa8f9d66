/**
 * Reservations: spend an estimate now, settle the actual amount once it is known.
 *
 * `limiter.reserve(key, policy, estimate)` spends `COST estimate`; admitted, it hands back a
 * reservation whose `settle(actual)` sends the difference: `DEBIT actual - estimate` when the
 * request used more (charged whatever is left, never denied: the limiter may go into debt
 * and then denies until it has refilled), `REFUND estimate - actual` when it used less,
 * nothing when the estimate was exact. A debit is capped at `MAX_DEBT` (facts/rl.toml,
 * 10^12 units: the server's own cap on a debt). `limiter.reserveAll` does the same over one
 * `RL.ALL`: its settlement is one `RL.ALL` over the layers that reserved the estimate.
 *
 * A reservation settles at most once: it is marked settled before anything is sent, so a
 * settlement whose call fails (the server unreachable) is not sent again by a second
 * `settle`, which rejects with a ReservationSettledError like any second call.
 *
 * A reservation never gives back what was not spent, nor what no longer counts: a layer a
 * `SHADOW` policy denied (reserving.ts) is none of its layers, and a `REFUND` goes only to
 * the layers whose reply's `resetAfterMs` has not passed since just before the reserving call
 * was sent (a monotonic clock): past it, the layer is idle and its units count no more. A
 * `DEBIT` goes to every layer.
 */
import type { Charge } from "./commands.js";
import type { AllDecision, Decision } from "./decision.js";
import { ReservationSettledError, refused } from "./errors.js";
import { MAX_DEBT } from "./facts.js";
import { countArg } from "./policy.js";

export class Reservation<D extends Decision | AllDecision = Decision> {
  /** The units spent when the reservation was made. */
  readonly estimate: number;
  #settled = false;
  readonly #sentAt: number;
  readonly #resets: readonly number[];
  readonly #send: (charge: Charge, layers: number[]) => Promise<D>;

  /** Made by `Limiter.reserve` and `Limiter.reserveAll`: `sentAt` is `performance.now()` just
   * before the reserving call was sent, `resetAfterMs` each layer's (those that reserved the
   * estimate, in order) in its reply; `send` makes the settling call for the layers given (by
   * their positions there). */
  constructor(estimate: number, sentAt: number, resetAfterMs: readonly number[],
    send: (charge: Charge, layers: number[]) => Promise<D>) {
    this.estimate = estimate;
    this.#sentAt = sentAt;
    this.#resets = resetAfterMs;
    this.#send = send;
  }

  /** How many layers the reservation settles: 0 where a `SHADOW` policy denied it. */
  get layers(): number {
    return this.#resets.length;
  }

  /** True once `settle` was called (whether or not its call succeeded). */
  get settled(): boolean {
    return this.#settled;
  }

  /** Settles at `actual` units (an integer, 0 or more): `DEBIT actual - estimate` (at most
   * MAX_DEBT) when more, `REFUND estimate - actual` when less, to the layers whose
   * `resetAfterMs` has not passed since the reserving call. Resolves with that call's
   * decision, or null when nothing is sent (`actual` is the estimate, or no layer is left to
   * settle). An `actual` that is not such an integer is refused (a TypeError or RangeError, a
   * ConfigurationError) and leaves the reservation unsettled; a second settlement rejects
   * with a ReservationSettledError and sends nothing. */
  async settle(actual: number): Promise<D | null> {
    countArg(actual, "actual");
    if (actual < 0) throw refused(RangeError, `actual is 0 or more: ${actual}`);
    if (this.#settled) throw new ReservationSettledError("this reservation is already settled");
    this.#settled = true;
    const d = actual - this.estimate;
    const elapsed = performance.now() - this.#sentAt;
    const layers = this.#resets.flatMap((reset, i) => (d > 0 || elapsed < reset ? [i] : []));
    if (d === 0 || layers.length === 0) return null;
    return this.#send(d > 0 ? { debit: Math.min(d, MAX_DEBT) } : { refund: -d }, layers);
  }
}

/** What `reserve` resolves with: the decision, and the reservation to settle when admitted
 * (null when denied: nothing was spent). */
export interface Reserved<D extends Decision | AllDecision = Decision> {
  readonly decision: D;
  readonly reservation: Reservation<D> | null;
}
