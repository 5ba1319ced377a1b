/**
 * The body floor of a shard (docs/gate-statistics.md, "The body path"): how far the medians of
 * the noise pair (base's first round and the noise replay) moved, computed as the engine computes
 * it (native/core/src/compare/noise.rs). The engine reports it only inside a sentence
 * (`noise_floor.method`); the aggregate needs the number, so the shard computes it from the same
 * samples while it still has them.
 */
import type { ReplayReport } from '../engine/index.js';
import { percentile } from './nearest-rank.js';

/** The same cap as the engine's floors: above 100 % the runner is too unstable to judge anyway. */
const MAX_FLOOR = 1;

/** |max(b, 1) / max(a, 1) − 1|: the engine's ratio, a 0 µs median counting as 1 µs. */
function shift(a: number, b: number): number {
  return Math.abs(Math.max(b, 1) / Math.max(a, 1) - 1);
}

function median(values: number[]): number {
  values.sort((x, y) => x - y);
  const n = values.length;
  return n % 2 === 1 ? values[(n - 1) / 2]! : (values[n / 2 - 1]! + values[n / 2]!) / 2;
}

/**
 * The body floor from the noise pair.
 * @param a base's first round (with samples)
 * @param b the noise replay (with samples)
 * @param minCalls the fewest successes a fingerprint needs in both
 * @returns the floor (a fraction, at most 1); 0 without a pair or a fingerprint that qualifies, as in the engine
 */
export function bodyFloor(a: ReplayReport | undefined, b: ReplayReport | undefined, minCalls: number): number {
  if (!a || !b) return 0;
  const min = Math.max(minCalls, 1);
  const inB = new Map(b.fingerprints.map((f) => [f.fingerprint, f.samples ?? []]));
  const shifts: number[] = [];
  const allA: number[] = [];
  const allB: number[] = [];
  for (const f of a.fingerprints) {
    const sa = f.samples ?? [];
    const sb = inB.get(f.fingerprint);
    if (sb === undefined || sa.length < min || sb.length < min) continue;
    shifts.push(shift(percentile(sa, 50), percentile(sb, 50)));
    // One value at a time: a spread of a large array would overflow the call stack.
    for (const v of sa) allA.push(v);
    for (const v of sb) allB.push(v);
  }
  if (shifts.length === 0) return 0;
  allA.sort((x, y) => x - y);
  allB.sort((x, y) => x - y);
  return Math.min(MAX_FLOOR, Math.max(median(shifts), shift(percentile(allA, 50), percentile(allB, 50))));
}
