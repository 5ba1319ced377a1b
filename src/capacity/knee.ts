/**
 * The knee of a throughput curve (docs/capacity.md). The rule:
 *
 * - Growth between two steps is measured per doubling of concurrency: from step k to step m,
 *   g = (T_m / T_k)^(1 / log2(c_m / c_k)) − 1. Perfect scaling is +100 % per doubling; a flat
 *   curve is 0. Measuring per doubling makes the rule the same for sweeps of 1, 2, 4, 8 and of
 *   10, 25, 50, 90.
 * - The curve has flattened after step k when the growth from k to *every* later step is below
 *   `minGrowth` (default 10 % per doubling). Comparing step k with all later steps, not only the
 *   next one, is what makes the rule robust to noise: one step slowed by a burst of load (a dip,
 *   then a recovery) does not end the rise, because the recovery still climbs from k.
 * - The knee is the first such step k. At least `minSteps` (default 3) steps without refused
 *   sessions are needed, and the last step cannot be a knee (nothing shows the curve flat after
 *   it); otherwise: "no knee within the sweep".
 * - Steps with refused sessions are past the refusal point: their throughput is lost work, not a
 *   property of the curve, so the knee is searched among the steps below the first refusal.
 *
 * Throughput between steps is never interpolated: every figure is measured.
 */

export interface CurvePoint {
  connections: number;
  throughput: number;
  refused_sessions: number;
}

export interface KneeRule {
  /** The curve is flat when throughput grows by less than this fraction per doubling of connections. */
  minGrowth: number;
  /** Fewest steps (below the refusal point) before a knee can be named. */
  minSteps: number;
}

export const KNEE_DEFAULTS: KneeRule = { minGrowth: 0.1, minSteps: 3 };

export interface Knee {
  /** The knee's concurrency, or null: no knee within the sweep. */
  connections: number | null;
  /** Throughput at the knee (statements/s), or null. */
  throughput: number | null;
  /** Why there is (or is not) a knee, one sentence for the report. */
  reason: string;
  /** The smallest concurrency at which sessions were refused, or null. */
  refusal_connections: number | null;
  /** The highest concurrency to recommend: the knee, else the highest step below the refusal point. */
  recommended_connections: number | null;
}

/**
 * Finds the knee.
 * @param points the sweep's steps, in any order (sorted by concurrency here)
 * @param rule the thresholds
 * @returns the knee and the refusal point
 */
export function findKnee(points: readonly CurvePoint[], rule: KneeRule = KNEE_DEFAULTS): Knee {
  const sorted = [...points].sort((a, b) => a.connections - b.connections);
  const refusal = sorted.find((p) => p.refused_sessions > 0)?.connections ?? null;
  const usable = sorted.filter((p) => refusal === null || p.connections < refusal);
  const lastUsable = usable.at(-1)?.connections ?? null;
  const none = (reason: string): Knee => ({
    connections: null,
    throughput: null,
    reason,
    refusal_connections: refusal,
    recommended_connections: lastUsable,
  });

  if (usable.length < rule.minSteps) {
    return none(`no knee: ${usable.length} step(s) below the refusal point, at least ${rule.minSteps} are needed to see the curve flatten`);
  }
  if (!(usable[0]!.throughput > 0)) return none('no knee: the first step completed no statements');
  const pct = Math.round(rule.minGrowth * 100);
  for (let k = 0; k < usable.length - 1; k++) {
    const at = usable[k]!;
    const later = usable.slice(k + 1);
    if (later.every((m) => growthPerDoubling(at, m) < rule.minGrowth)) {
      return {
        connections: at.connections,
        throughput: at.throughput,
        reason: `from ${at.connections} connections on, throughput grows by less than ${pct}% per doubling of connections`,
        refusal_connections: refusal,
        recommended_connections: at.connections,
      };
    }
  }
  return none(
    `no knee within the sweep: throughput still grows by at least ${pct}% per doubling of connections up to ${lastUsable} connections`,
  );
}

/**
 * Throughput growth per doubling of concurrency between two steps.
 * @param from the lower step
 * @param to the higher step
 * @returns 1 = +100 % per doubling (linear scaling), 0 = flat, negative = falling
 */
export function growthPerDoubling(from: CurvePoint, to: CurvePoint): number {
  if (!(from.throughput > 0)) return to.throughput > 0 ? Infinity : 0;
  if (!(to.throughput > 0)) return -1;
  return (to.throughput / from.throughput) ** (1 / Math.log2(to.connections / from.connections)) - 1;
}
