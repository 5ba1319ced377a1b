/**
 * The capacity gate: does the PR cost headroom? Two rules, both with `capacity-threshold`
 * (default 15 %), both measured against base's knee (docs/capacity.md):
 *
 * 1. Throughput at the knee: head's throughput at base's knee is lower than base's by more than
 *    the threshold. Past the knee the curve is flat, so throughput "at the knee" is read as the
 *    median over the plateau: the steps from base's knee on where neither side refused sessions,
 *    each step's own figure being its median run. One step hit by a burst of load on a shared
 *    machine moves a single point by 15–25 % here; it does not move the median of the plateau.
 *    Both sides are read at the same, measured concurrencies.
 * 2. The knee moves left: head's knee is at a concurrency more than the threshold below base's
 *    (head flattens earlier) while head's plateau throughput is lower than base's by more than
 *    half the threshold, or head has no knee and is refused below base's knee.
 *
 * Without a knee on base, rule 1 reads base's recommended concurrency (the highest step below
 * the refusal point) alone, and rule 2 has nothing to compare.
 */
import { fractionPercent, signedPercent } from '../format/numbers.js';
import type { Knee } from './knee.js';
import type { StepMetrics } from './metrics.js';

export interface CapacityVerdict {
  verdict: 'pass' | 'fail';
  headline: string;
  /** One line per rule that fired. */
  reasons: string[];
  /** The concurrency the throughput rule reads, or null when base has no usable step. */
  compared_at: number | null;
  /** The steps whose median throughput rule 1 compares (the plateau from `compared_at` on). */
  compared_steps: number[];
  /** (head − base) / base of the plateau's median throughput. */
  throughput_change: number | null;
}

export interface CapacitySide {
  steps: StepMetrics[];
  knee: Knee;
}

/**
 * @param base the base schema's sweep
 * @param head the head schema's sweep (same steps)
 * @param threshold a fraction: 0.15 fails at more than 15 % lost
 * @returns the verdict
 */
export function decideCapacity(base: CapacitySide, head: CapacitySide, threshold: number): CapacityVerdict {
  const reasons: string[] = [];
  const at = base.knee.connections ?? base.knee.recommended_connections;
  let change: number | null = null;
  let plateau: number[] = [];
  if (at !== null) {
    const usable = (side: CapacitySide, c: number) => side.steps.find((s) => s.connections === c && s.refused_sessions === 0);
    plateau = base.steps
      .map((s) => s.connections)
      .filter((c) => c >= at && (base.knee.connections !== null || c === at) && usable(base, c) && usable(head, c));
    const b = median(plateau.map((c) => usable(base, c)!.throughput));
    const h = median(plateau.map((c) => usable(head, c)!.throughput));
    if (plateau.length > 0 && b > 0) {
      change = (h - b) / b;
      if (change < -threshold) {
        const where =
          plateau.length > 1
            ? `base's knee (median of ${plateau.join(', ')} connections, where base is flat)`
            : `${at} connections${base.knee.connections !== null ? " (base's knee)" : ''}`;
        reasons.push(
          `throughput at ${where} fell by ${fractionPercent(-change)}: ${h.toFixed(0)} statements/s on head vs ${b.toFixed(0)} on base (threshold ${fractionPercent(threshold)})`,
        );
      }
    }
  }
  const baseKnee = base.knee.connections;
  if (baseKnee !== null) {
    const headKnee = head.knee.connections;
    // A knee that moves left while head keeps (nearly) base's throughput on the plateau is noise
    // in where a flat curve is first seen flat, not lost capacity: on this project's CI runner
    // A/A sweeps moved the knee one step either way with plateau changes of 4–6 %.
    const lower = change !== null && change < -threshold / 2;
    if (headKnee !== null && headKnee < baseKnee * (1 - threshold) && lower) {
      reasons.push(
        `the knee moved left: head flattens at ${headKnee} connections, base at ${baseKnee} (threshold ${fractionPercent(threshold)})`,
      );
    } else if (headKnee === null && head.knee.refusal_connections !== null && head.knee.refusal_connections <= baseKnee * (1 - threshold)) {
      reasons.push(`head refuses sessions at ${head.knee.refusal_connections} connections, below base's knee at ${baseKnee}`);
    }
  }
  const verdict = reasons.length > 0 ? 'fail' : 'pass';
  const headline =
    verdict === 'fail'
      ? `fail: the PR lowers capacity (${reasons.length === 1 ? 'one rule' : `${reasons.length} rules`} beyond ${fractionPercent(threshold)})`
      : change === null
        ? 'pass: no capacity loss found (no step to compare throughput at)'
        : `pass: throughput at ${at} connections${plateau.length > 1 ? ` and above (the plateau)` : ''} changed by ${signedPercent(change)} (threshold ${fractionPercent(threshold)})`;
  return { verdict, headline, reasons, compared_at: at, compared_steps: plateau, throughput_change: change };
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
