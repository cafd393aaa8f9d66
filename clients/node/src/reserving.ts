/**
 * Which layers of a reservation a `SHADOW` policy denied, and so reserved nothing.
 *
 * A `SHADOW` policy answers a denial as admitted (`allowed 1`, `remaining 0`, a non-zero
 * `retryAfterMs`) and writes nothing: a layer so answered spent nothing, and its reservation
 * must settle nothing there. A named `LEAKY` policy's admission that takes its queue's last
 * place reads the same (its `retryAfterMs` is the queue's delay) and did spend, so where a
 * reply reads so, the policy's definition (`RL.POLICY GET name`, the library's `rl_policy`)
 * decides: an enforced `LEAKY` policy's reply is an admission; any other policy's is a
 * shadowed denial. A `SHADOW` `LEAKY` policy's two replies cannot be told apart: it is read as
 * a shadowed denial, settling nothing (never giving back what may not have been spent).
 */
import * as commands from "./commands.js";
import type { Command } from "./commands.js";
import { type Decision, looksShadowed } from "./decision.js";

/** A policy's line (`name LEAKY capacity leak period [SHADOW]`) is an enforced LEAKY
 * policy's: one whose admissions carry a delay, and which never shadows. */
export function enforcedLeaky(line: string | null): boolean {
  const words = (line ?? "").toUpperCase().split(/\s+/).filter(Boolean);
  return words.length > 1 && words[1] === "LEAKY" && !words.slice(2).includes("SHADOW");
}

/** `decisions` (each layer's, in key order; `keys` theirs) with those at positions `spent`
 * that read as a shadowed denial known to be one or not, from their policy's definition
 * (one `run` per policy asked). */
export async function readShadowed(run: <T>(cmd: Command<T>) => Promise<T>, keys: readonly string[],
  decisions: readonly Decision[], spent: readonly number[]): Promise<Decision[]> {
  const out = [...decisions];
  const definitions = new Map<string, string | null>();
  for (const i of spent) {
    const d = out[i];
    if (!looksShadowed(d)) continue;
    const name = d.policyName as string;
    if (!definitions.has(name)) definitions.set(name, await run(commands.policyDefinition(keys[i], name)));
    out[i] = d.knownAs(!enforcedLeaky(definitions.get(name) ?? null));
  }
  return out;
}
