/**
 * The capacity gate: does the PR cost headroom? Two rules, both with `capacity-threshold`
 * (default 15 %), both measured against base's knee (docs/capacity.md):
 *
 * 1. Throughput at the knee: head's throughput at base's knee concurrency is lower than base's
 *    by more than the threshold. Both sides are read at the same concurrency, so the rule
 *    compares measured points, never a knee that jumped one step either way.
 * 2. The knee moves left: head's knee is at a concurrency more than the threshold below base's
 *    (head flattens earlier) while head's throughput at base's knee is lower than base's (by any
 *    amount), or head has no knee and is refused below base's knee.
 *
 * Without a knee on base, rule 1 uses base's recommended concurrency (the highest step below
 * the refusal point), and rule 2 has nothing to compare.
 */
import { fractionPercent, signedPercent } from '../report/numbers.js';
import type { Knee } from './knee.js';
import type { StepMetrics } from './metrics.js';

export interface CapacityVerdict {
  verdict: 'pass' | 'fail';
  headline: string;
  /** One line per rule that fired. */
  reasons: string[];
  /** The concurrency the throughput rule reads, or null when base has no usable step. */
  compared_at: number | null;
  /** (head − base) / base throughput at `compared_at`. */
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
  if (at !== null) {
    const b = base.steps.find((s) => s.connections === at);
    const h = head.steps.find((s) => s.connections === at);
    if (b && h && b.throughput > 0) {
      change = (h.throughput - b.throughput) / b.throughput;
      if (change < -threshold) {
        reasons.push(
          `throughput at ${at} connections${base.knee.connections !== null ? " (base's knee)" : ''} fell by ${fractionPercent(-change)}: ${h.throughput.toFixed(0)} statements/s on head vs ${b.throughput.toFixed(0)} on base (threshold ${fractionPercent(threshold)})`,
        );
      }
    }
  }
  const baseKnee = base.knee.connections;
  if (baseKnee !== null) {
    const headKnee = head.knee.connections;
    // A knee that moves left while head still matches base's throughput at base's knee is noise
    // in where a flat curve is first seen flat, not lost capacity.
    const lower = change !== null && change < 0;
    if (headKnee !== null && headKnee < baseKnee * (1 - threshold) && lower) {
      reasons.push(`the knee moved left: head flattens at ${headKnee} connections, base at ${baseKnee} (threshold ${fractionPercent(threshold)})`);
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
        : `pass: throughput at ${at} connections changed by ${signedPercent(change)} (threshold ${fractionPercent(threshold)})`;
  return { verdict, headline, reasons, compared_at: at, throughput_change: change };
}
