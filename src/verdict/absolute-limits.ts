/**
 * Absolute limits on head (`--p95-max-ms`, `--p99-max-ms`, `--error-rate-max-pct`), beside the
 * relative rules: "p95 must stay under 50 ms" is what a service-level objective says, and the
 * only kind of threshold pg-retest's pipeline config has. They are judged on head alone, all
 * rounds pooled:
 *
 * - p95 and p99 limits: the whole workload, and every fingerprint with at least `min-calls`
 *   successful calls on head (fewer calls make a percentile of a handful of samples);
 * - the error rate: the whole workload only (head's failed executions / executed), since one
 *   fingerprint that fails by design (a unique violation the application expects) would
 *   otherwise be over any limit.
 */
import { micros } from '../format/units.js';
import { reasonLine, type StatementReason } from '../plans/rules.js';
import type { SideAccounting, Thresholds } from './report-types.js';
import type { Comparison } from '../types.js';

/** One limit and how head measured against it. */
export interface LimitCheck {
  /** `p95`, `p99` or `error rate`, for the whole workload or one fingerprint. */
  name: string;
  /** The limit, in its unit (µs for latencies, a fraction for the error rate). */
  limit: number;
  measured: number;
  exceeded: boolean;
  /** One line: what was measured against what. */
  line: string;
  /** For a fingerprint's limit: the statement and the line without it, so that a statement's reasons can be joined. */
  statement: StatementReason | null;
}

function percent(fraction: number): string {
  const pct = fraction * 100;
  return `${pct >= 10 || pct === 0 ? pct.toFixed(0) : pct.toFixed(2)} %`;
}

/**
 * Evaluates the absolute limits that were set.
 * @param comparison the run's comparison (head's percentiles)
 * @param head head's accounting (its errors), or null when nothing was replayed
 * @param t the thresholds
 * @returns one check per limit and subject; only exceeded ones for fingerprints, so that a report
 *   of a thousand fingerprints does not list a thousand passes
 */
export function checkAbsoluteLimits(comparison: Comparison, head: SideAccounting | null, t: Thresholds): LimitCheck[] {
  const checks: LimitCheck[] = [];
  for (const [name, limitMs, pick] of [
    ['p95', t.p95_max_ms, (p: { p95_us: number; p99_us: number }) => p.p95_us],
    ['p99', t.p99_max_ms, (p: { p95_us: number; p99_us: number }) => p.p99_us],
  ] as const) {
    if (limitMs === undefined || limitMs === null) continue;
    const limit = limitMs * 1000;
    const whole = pick(comparison.overall.head);
    checks.push({
      name: `whole-workload ${name}`,
      limit,
      measured: whole,
      exceeded: whole > limit,
      line: `head's whole-workload ${name} ${micros(whole)} ${whole > limit ? 'exceeds' : 'is within'} the ${limitMs} ms limit (${name}-max-ms)`,
      statement: null,
    });
    for (const f of comparison.fingerprints) {
      if (f.calls_head < t.min_calls) continue;
      const measured = pick(f.head);
      if (measured <= limit) continue;
      const statement = {
        fingerprint: f.fingerprint,
        normalized: f.normalized,
        evidence: `head ${name} ${micros(measured)} exceeds the ${limitMs} ms limit (${name}-max-ms)`,
      };
      checks.push({ name: `${name} of ${f.fingerprint}`, limit, measured, exceeded: true, line: reasonLine(statement), statement });
    }
  }
  const maxRate = t.error_rate_max;
  if (maxRate !== undefined && maxRate !== null && head !== null) {
    const rate = head.executed === 0 ? 0 : head.errors / head.executed;
    checks.push({
      name: 'error rate',
      limit: maxRate,
      measured: rate,
      exceeded: rate > maxRate,
      line: `head's error rate ${percent(rate)} (${head.errors} of ${head.executed} executed) ${rate > maxRate ? 'exceeds' : 'is within'} the ${percent(maxRate)} limit (error-rate-max-pct)`,
      statement: null,
    });
  }
  return checks;
}
