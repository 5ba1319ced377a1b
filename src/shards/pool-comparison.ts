/**
 * The shards' comparisons as one comparison, in the engine's shape (so the verdict, the markdown,
 * the JUnit XML and the outputs read it as they read one runner's): fingerprints and the whole
 * workload pooled stratified by shard (pool-latency.ts), failures summed and judged over the
 * whole workload (pool-errors.ts), and what ran on one side only told from every shard's
 * executions: a fingerprint one shard ran on base only and another on both ran on both sides.
 */
import type { Comparison, FingerprintRef, NoiseFloor } from '../engine/index.js';
import type { Thresholds } from '../verdict/report-types.js';
import type { PartialReport } from './partial.js';
import { poolErrors } from './pool-errors.js';
import { poolFingerprint, poolLatency, type ShardFingerprint, type ShardLatency } from './pool-latency.js';

/** A partial whose shard measured: its comparison is there. */
type Measured = PartialReport & { report: { comparison: Comparison } };

const noReplays = { base: [], head: [] };

function floorsOf(p: Measured): ShardLatency<unknown>['floors'] {
  const c = p.report.comparison;
  return { tail: c.noise_floor.value, body: p.body_floor, server: c.server_time.noise_floor.value };
}

/**
 * Pools the comparisons of the shards that measured.
 * @param partials those shards' partial reports, in shard order (at least one)
 * @param t the thresholds (every shard's)
 * @returns the pooled comparison
 */
export function poolComparisons(partials: readonly Measured[], t: Thresholds): Comparison {
  const byFingerprint = new Map<string, ShardFingerprint[]>();
  for (const p of partials) {
    for (const f of p.report.comparison.fingerprints) {
      const list = byFingerprint.get(f.fingerprint) ?? [];
      // A fingerprint without figures (a partial written by hand) has no replay to veto it, as in the engine.
      const medians = p.replays.fingerprints[f.fingerprint] ?? { client: noReplays, server: noReplays };
      list.push({ comparison: f, floors: floorsOf(p), replays: medians.client, serverReplays: medians.server });
      byFingerprint.set(f.fingerprint, list);
    }
  }
  const fingerprints = [...byFingerprint.values()].map((shards) => poolFingerprint(shards, t));
  fingerprints.sort((a, b) => Number(b.regressed) - Number(a.regressed) || b.ratio - a.ratio || a.fingerprint.localeCompare(b.fingerprint));
  const wholes = partials
    .filter((p) => p.report.comparison.overall.calls_base > 0)
    .map((p) => ({ comparison: p.report.comparison.overall, floors: floorsOf(p), replays: p.replays.overall }));
  // Nothing compared anywhere: the first shard's neutral comparison says so.
  const overall = wholes.length > 0 ? poolLatency(wholes, t) : partials[0]!.report.comparison.overall;
  const errors = poolErrors(partials.map((p) => ({ comparison: p.report.comparison, executions: p.executions })));
  const measured = partials.every((p) => p.report.comparison.server_time.measured);
  return {
    noise_floor: pooledFloor(partials, (c) => c.noise_floor),
    server_time: {
      measured,
      reason: measured
        ? null
        : (partials.find((p) => !p.report.comparison.server_time.measured)?.report.comparison.server_time.reason ?? null),
      noise_floor: pooledFloor(partials, (c) => c.server_time.noise_floor),
    },
    overall,
    fingerprints,
    ...errors,
    ...oneSided(partials),
  };
}

/** A run's floor over its shards: their values weighted as the whole workload's comparison weighs them. */
function pooledFloor(partials: readonly Measured[], of: (c: Comparison) => NoiseFloor): NoiseFloor {
  const weighted = partials.map((p) => {
    const o = p.report.comparison.overall;
    return {
      floor: of(p.report.comparison),
      w: o.calls_base + o.calls_head === 0 ? 0 : (o.calls_base * o.calls_head) / (o.calls_base + o.calls_head),
    };
  });
  const total = weighted.reduce((n, x) => n + x.w, 0);
  const value =
    total === 0 ? Math.max(...weighted.map((x) => x.floor.value)) : weighted.reduce((n, x) => n + x.w * x.floor.value, 0) / total;
  const each = weighted.map((x, i) => `shard ${partials[i]!.shard.index}: ${(x.floor.value * 100).toFixed(0)} %`).join(', ');
  return {
    value,
    method: `the shards' floors weighted as the whole workload's comparison weighs the shards (${each}); each shard's: ${weighted[0]!.floor.method}`,
    fingerprints: weighted.reduce((n, x) => n + x.floor.fingerprints, 0),
  };
}

/** Fingerprints executed on one side only, over every shard (the engine counts base's rounds, not its noise replay). */
function oneSided(partials: readonly Measured[]): Pick<Comparison, 'only_base' | 'only_head'> {
  const totals = new Map<string, FingerprintRef & { base: number; head: number }>();
  for (const p of partials) {
    for (const [fingerprint, e] of Object.entries(p.executions)) {
      const t = totals.get(fingerprint) ?? { fingerprint, normalized: e.normalized, kind: e.kind, calls: 0, base: 0, head: 0 };
      t.base += e.base;
      t.head += e.head;
      totals.set(fingerprint, t);
    }
  }
  const refs = (side: 'base' | 'head') =>
    [...totals.values()]
      .filter((t) => t[side] > 0 && t[side === 'base' ? 'head' : 'base'] === 0)
      .map((t) => ({ fingerprint: t.fingerprint, normalized: t.normalized, kind: t.kind, calls: t[side] }))
      .sort((a, b) => b.calls - a.calls || a.fingerprint.localeCompare(b.fingerprint));
  return { only_base: refs('base'), only_head: refs('head') };
}
