/**
 * Failures over shards (docs/gate-statistics.md, "Shards"). Failures are counts, and counts add
 * up: per (fingerprint, SQLSTATE), the shards' failures and executions are summed and each
 * shard's per-replay counts are kept, shard after shard. Which rule it falls under is then
 * decided over the whole workload, from each shard's judgement of its own part:
 *
 * - `every_replay` (the same statements failed in every head replay of a shard and in none of
 *   its base replays) stands: a statement belongs to one shard, and the test is the statement's;
 * - `rate` stands when it holds against the number of shards that ran the fingerprint on head:
 *   its p-value times that number below the engine's 0.001 (Bonferroni), since the same test now
 *   had that many chances; otherwise it varies between replays;
 * - a failure a shard counts as `deterministic` (base never had it) or `more_often` is judged
 *   again on the pooled counts when base had it in any shard: more often by the engine's rule
 *   (twice base's rate and 5 more than it predicts), or shared (fidelity); a failure of base in
 *   one shard is a failure base has, whichever runner saw it;
 * - what no shard counts is varying if any shard says so, shared if any shard says so, else fixed.
 */
import type { Comparison, ErrorDiff, ErrorRule } from '../engine/index.js';
import type { Executions } from './partial.js';

/** The engine's level for the interleaving tests (native/core/src/compare/errors.rs, RATE_ALPHA). */
const RATE_ALPHA = 0.001;
const MORE_OFTEN_FACTOR = 2;
const MORE_OFTEN_AT_LEAST = 5;

type ErrorLists = Pick<Comparison, 'new_errors' | 'varying_errors' | 'shared_errors' | 'fixed_errors'>;

/** One shard's judgement of a failure, with the shard's executions of its fingerprint. */
interface Seen {
  diff: ErrorDiff;
  list: keyof ErrorLists;
}

/** A shard's errors and executions. */
export interface ShardErrors {
  comparison: ErrorLists;
  executions: Record<string, Executions>;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function moreOften(baseFailed: number, baseExecuted: number, headFailed: number, headExecuted: number): boolean {
  const expected = (baseFailed / Math.max(baseExecuted, 1)) * headExecuted;
  return headFailed >= MORE_OFTEN_FACTOR * expected && headFailed - expected >= MORE_OFTEN_AT_LEAST;
}

/**
 * Pools the shards' failures.
 * @param shards each shard's error lists and executions
 * @returns the four lists, sorted as the engine sorts them
 */
export function poolErrors(shards: readonly ShardErrors[]): ErrorLists {
  const byKey = new Map<string, Seen[]>();
  for (const shard of shards) {
    for (const list of ['new_errors', 'varying_errors', 'shared_errors', 'fixed_errors'] as const) {
      for (const diff of shard.comparison[list] ?? []) {
        const key = `${diff.fingerprint}/${diff.sqlstate}`;
        const seen = byKey.get(key) ?? [];
        seen.push({ diff, list });
        byKey.set(key, seen);
      }
    }
  }
  const pooled: ErrorLists = { new_errors: [], varying_errors: [], shared_errors: [], fixed_errors: [] };
  for (const seen of byKey.values()) {
    const diff = pooledDiff(seen, shards);
    pooled[listOf(diff.rule)].push(diff);
  }
  for (const list of Object.values(pooled) as ErrorDiff[][]) {
    list.sort(
      (a, b) =>
        b.head_count - a.head_count ||
        b.base_count - a.base_count ||
        a.fingerprint.localeCompare(b.fingerprint) ||
        a.sqlstate.localeCompare(b.sqlstate),
    );
  }
  return pooled;
}

function listOf(rule: ErrorRule): keyof ErrorLists {
  if (rule === 'varies') return 'varying_errors';
  if (rule === 'fidelity') return 'shared_errors';
  if (rule === 'fixed') return 'fixed_errors';
  return 'new_errors';
}

/** The failure over all shards: counts summed (executions from shards where it did not fail too), the rule decided. */
function pooledDiff(seen: Seen[], shards: readonly ShardErrors[]): ErrorDiff {
  const diffs = seen.map((s) => s.diff);
  const first = diffs[0]!;
  const fingerprint = first.fingerprint;
  // Executions of the fingerprint in every shard, whether it failed there or not.
  const ran = shards.map((s) => s.executions[fingerprint]).filter((e): e is Executions => e !== undefined);
  const baseExecuted = sum(ran.map((e) => e.base + e.noise));
  const headExecuted = sum(ran.map((e) => e.head));
  const captures = diffs.map((d) => d.capture_count).filter((c): c is number => c !== null);
  const headMessage = seen.find((s) => s.list !== 'fixed_errors' && s.diff.head_count > 0)?.diff.message;
  const pooled: ErrorDiff = {
    ...first,
    message: headMessage ?? first.message,
    base_count: sum(diffs.map((d) => d.base_count)),
    head_count: sum(diffs.map((d) => d.head_count)),
    base_replays: diffs.flatMap((d) => d.base_replays),
    head_replays: diffs.flatMap((d) => d.head_replays),
    base_executed: Math.max(baseExecuted, sum(diffs.map((d) => d.base_executed))),
    head_executed: Math.max(headExecuted, sum(diffs.map((d) => d.head_executed))),
    capture_count: captures.length > 0 ? sum(captures) : null,
    siblings_failing: sum(diffs.map((d) => d.siblings_failing)),
    every_head_replay: sum(diffs.map((d) => d.every_head_replay)),
    p_value: minimum(diffs.map((d) => d.p_value)),
  };
  pooled.rule = ruleOf(seen, pooled, ran.filter((e) => e.head > 0).length);
  return pooled;
}

function minimum(values: (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length > 0 ? Math.min(...present) : null;
}

/** The rule over the whole workload (see the top of this file). */
function ruleOf(seen: Seen[], pooled: ErrorDiff, headShards: number): ErrorRule {
  const counted = seen.filter((s) => s.list === 'new_errors').map((s) => s.diff);
  if (counted.some((d) => d.rule === 'every_replay')) return 'every_replay';
  if (counted.some((d) => d.rule === 'rate' && d.p_value !== null && d.p_value * Math.max(headShards, 1) < RATE_ALPHA)) return 'rate';
  if (counted.some((d) => d.rule === 'deterministic' || d.rule === 'more_often')) {
    const baseFailed = sum(pooled.base_replays);
    if (baseFailed === 0) return 'deterministic';
    return moreOften(baseFailed, pooled.base_executed, pooled.head_count, pooled.head_executed) ? 'more_often' : 'fidelity';
  }
  if (counted.length > 0 || seen.some((s) => s.list === 'varying_errors')) return 'varies';
  if (seen.some((s) => s.list === 'shared_errors')) return 'fidelity';
  return 'fixed';
}
