/**
 * The rest of the shards' reports as one run's record: statement accounting and coverage summed
 * (counts add up), key correlation summed, and the query plans of each fingerprint. A plan, its
 * buffers and its work per call are properties of the statement on a schema and its data, which
 * every shard builds alike; the aggregate takes each fingerprint's from the shard that measured
 * it over the most calls on head.
 */
import type { PlansReport } from '../plans/types.js';
import type { Coverage, GateReport, KeysSummary, NotCompared, SideCoverage } from '../verdict/report-types.js';

/**
 * Objects of counts summed field by field, records of counts (by reason) included.
 * @param items objects of one shape whose numbers are counts
 * @returns their sum, of the same shape
 */
function sumCounts<T extends object>(items: readonly T[]): T {
  const total: Record<string, unknown> = {};
  for (const item of items) {
    for (const [key, value] of Object.entries(item)) {
      if (typeof value === 'number') total[key] = ((total[key] as number | undefined) ?? 0) + value;
      else if (value !== null && typeof value === 'object') total[key] = sumCounts(total[key] ? [total[key] as object, value] : [value]);
    }
  }
  return total as T;
}

/**
 * Both sides' accounting, summed over the shards.
 * @param reports the shards' reports that have one
 * @returns the sums, or null when none has any
 */
export function pooledAccounting(reports: readonly GateReport[]): GateReport['accounting'] {
  const counted = reports.flatMap((r) => (r.accounting ? [r.accounting] : []));
  if (counted.length === 0) return null;
  return { base: sumCounts(counted.map((a) => a.base)), head: sumCounts(counted.map((a) => a.head)) };
}

/**
 * Coverage over the shards: each side's statements summed, what never ran anywhere.
 * @param reports the shards' reports
 * @param executed fingerprints some shard executed
 * @returns the coverage, or null when no shard has any
 */
export function pooledCoverage(reports: readonly GateReport[], executed: ReadonlySet<string>): Coverage | null {
  const covered = reports.map((r) => r.coverage).filter((c): c is Coverage => c !== null && c !== undefined);
  if (covered.length === 0) return null;
  const side = (which: 'base' | 'head'): SideCoverage => {
    const s = sumCounts(covered.map((c) => c[which]));
    return { ...s, executed_share: s.captured === 0 ? 1 : s.executed / s.captured };
  };
  const base = side('base');
  const notCompared = new Map<string, NotCompared>();
  for (const c of covered) {
    for (const n of c.not_compared) {
      if (executed.has(n.fingerprint)) continue;
      const seen = notCompared.get(n.fingerprint);
      notCompared.set(n.fingerprint, seen ? { ...seen, captured: seen.captured + n.captured } : { ...n });
    }
  }
  const minCoverage = covered[0]!.min_coverage;
  return {
    base,
    head: side('head'),
    min_coverage: minCoverage,
    sufficient: base.executed_share >= minCoverage,
    first_cause: covered.find((c) => c.first_cause !== null)?.first_cause ?? null,
    not_compared: [...notCompared.values()].sort((a, b) => b.captured - a.captured || a.fingerprint.localeCompare(b.fingerprint)),
  };
}

/**
 * Key correlation over the shards: producers, links and substitutions summed.
 * @param reports the shards' reports
 * @returns the summary, or null when no shard's workload has generated keys
 */
export function pooledKeys(reports: readonly GateReport[]): KeysSummary | null {
  const keys = reports.map((r) => r.keys).filter((k): k is KeysSummary => k !== null && k !== undefined);
  if (keys.length === 0) return null;
  const correlations = keys.map((k) => k.correlation).filter((c) => c !== null);
  const first = correlations[0];
  const total = (field: 'producers' | 'links' | 'inferred' | 'substituted' | 'unresolved') =>
    correlations.reduce((n, c) => n + c[field], 0);
  return {
    replays: keys.reduce((n, k) => n + k.replays, 0),
    correlation: first
      ? {
          ...first,
          producers: total('producers'),
          links: total('links'),
          inferred: total('inferred'),
          substituted: total('substituted'),
          unresolved: total('unresolved'),
        }
      : null,
    sequences: keys.find((k) => k.sequences !== null)?.sequences ?? null,
  };
}

/**
 * The plans over the shards: per fingerprint, the shard's that measured it over the most calls.
 * @param reports the shards' reports
 * @returns the plans, or null when no shard probed any
 */
export function pooledPlans(reports: readonly GateReport[]): PlansReport | null {
  const probed = reports.map((r) => r.plans).filter((p): p is PlansReport => p !== null && p !== undefined);
  if (probed.length === 0) return null;
  const calls = (f: PlansReport['fingerprints'][number]) => f.head.stats?.calls ?? 0;
  const best = new Map<string, PlansReport['fingerprints'][number]>();
  for (const plans of probed) {
    for (const f of plans.fingerprints) {
      const seen = best.get(f.fingerprint);
      if (!seen || calls(f) > calls(seen)) best.set(f.fingerprint, f);
    }
  }
  const failures = new Map(probed.flatMap((p) => p.failures).map((f) => [`${f.fingerprint}/${f.side}/${f.stage}`, f]));
  // Changed plans first, as one shard's report orders them.
  const fingerprints = [...best.values()].sort(
    (a, b) => Number(b.changed) - Number(a.changed) || a.fingerprint.localeCompare(b.fingerprint),
  );
  return {
    stats: probed[0]!.stats,
    not_explainable: Math.max(...probed.map((p) => p.not_explainable)),
    fingerprints,
    failures: [...failures.values()],
    error: probed.find((p) => p.error !== null)?.error ?? null,
  };
}
