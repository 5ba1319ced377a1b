/**
 * pg-retest's `[thresholds]`, judged as pg-retest judges them — only the keys that are set,
 * each an inclusive limit (`measured <= limit` passes) on the replayed side, named as pg-retest
 * names them in its JUnit report (`p95_latency`, `p99_latency`, `error_rate`, `regression_count`)
 * — but on honest figures: latencies of successful statements only (pg-retest counted failed and
 * skipped statements as 0 µs, which pulls its percentiles down), the error rate over statements
 * that were executed, and regressions counted against a baseline replay, never against the
 * durations recorded at capture.
 */
import { micros } from '../format/units.js';
import type { ReplayReport } from '../types.js';
import type { PipelineLimits } from './plan.js';

export type ThresholdName = 'p95_latency' | 'p99_latency' | 'error_rate' | 'regression_count';

/** One threshold as evaluated, for one variant in A/B mode. */
export interface ThresholdCheck {
  name: ThresholdName;
  /** The config key, e.g. `thresholds.p95_max_ms`. */
  key: string;
  /** The variant it was judged on (A/B mode), else null. */
  variant: string | null;
  /** The limit in its unit: ms, percent, or a count. */
  limit: number;
  /** The measured value in the same unit; null when it could not be measured. */
  measured: number | null;
  status: 'passed' | 'failed' | 'not_evaluated';
  /** One line: what was measured against what. */
  message: string;
}

/** What the latency and error limits are judged on: one side's statements, all its replays pooled. */
export interface SideFigures {
  /** Successful executions. */
  ok: number;
  executed: number;
  errors: number;
  p95_us: number;
  p99_us: number;
}

/**
 * Figures of one or more replays of the same side: percentiles of every successful execution,
 * pooled (nearest rank, as the engine computes them). A single replay uses the engine's own.
 * @param reports the side's replays (with samples when more than one)
 * @returns the figures
 */
export function sideFigures(reports: ReplayReport[]): SideFigures {
  const executed = reports.reduce((n, r) => n + r.totals.executed, 0);
  const errors = reports.reduce((n, r) => n + r.totals.errors, 0);
  if (reports.length === 1) {
    const r = reports[0]!;
    return { ok: r.totals.ok, executed, errors, p95_us: r.latency.p95_us, p99_us: r.latency.p99_us };
  }
  const samples = Float64Array.from(reports.flatMap((r) => r.fingerprints.flatMap((f) => f.samples ?? []))).sort();
  const rank = (p: number) => (samples.length === 0 ? 0 : samples[Math.max(0, Math.ceil(p * samples.length) - 1)]!);
  return { ok: samples.length, executed, errors, p95_us: rank(0.95), p99_us: rank(0.99) };
}

/**
 * The latency and error-rate limits that are set, judged on one side.
 * @param limits the limits
 * @param figures the side's figures
 * @param variant the variant's label in A/B mode, else null
 * @returns one check per limit set, in pg-retest's order
 */
export function checkLimits(limits: PipelineLimits, figures: SideFigures, variant: string | null): ThresholdCheck[] {
  const checks: ThresholdCheck[] = [];
  const on = variant === null ? '' : ` on '${variant}'`;
  for (const [name, key, limitMs, us, label] of [
    ['p95_latency', 'thresholds.p95_max_ms', limits.p95MaxMs, figures.p95_us, 'P95'],
    ['p99_latency', 'thresholds.p99_max_ms', limits.p99MaxMs, figures.p99_us, 'P99'],
  ] as const) {
    if (limitMs === undefined) continue;
    if (figures.ok === 0) {
      checks.push({
        name,
        key,
        variant,
        limit: limitMs,
        measured: null,
        status: 'not_evaluated',
        message: `${label} latency${on}: not measured, no statement succeeded (${key})`,
      });
      continue;
    }
    const ms = us / 1000;
    const failed = ms > limitMs;
    checks.push({
      name,
      key,
      variant,
      limit: limitMs,
      measured: ms,
      status: failed ? 'failed' : 'passed',
      message: `${label} latency${on} ${micros(us)} ${failed ? 'exceeds' : 'is within'} the ${limitMs} ms limit (${key})`,
    });
  }
  if (limits.errorRateMaxPct !== undefined) {
    const pct = figures.executed === 0 ? 0 : (100 * figures.errors) / figures.executed;
    const failed = pct > limits.errorRateMaxPct;
    checks.push({
      name: 'error_rate',
      key: 'thresholds.error_rate_max_pct',
      variant,
      limit: limits.errorRateMaxPct,
      measured: pct,
      status: failed ? 'failed' : 'passed',
      message: `error rate${on} ${pct.toFixed(2)} % (${figures.errors} of ${figures.executed} executed) ${failed ? 'exceeds' : 'is within'} the ${limits.errorRateMaxPct} % limit (thresholds.error_rate_max_pct)`,
    });
  }
  return checks;
}

/**
 * regression_max_count in A/B mode: the queries a candidate's comparison found slower.
 * @param max the limit
 * @param slower the slower queries (normalized SQL and fingerprint), worst first
 * @param variant the candidate's label
 * @returns the check
 */
export function checkRegressionCount(max: number, slower: { normalized: string; fingerprint: string }[], variant: string): ThresholdCheck {
  const failed = slower.length > max;
  const named =
    slower.length > 0
      ? `: ${slower
          .slice(0, 3)
          .map((s) => s.fingerprint)
          .join(', ')}${slower.length > 3 ? ', …' : ''}`
      : '';
  return {
    name: 'regression_count',
    key: 'thresholds.regression_max_count',
    variant,
    limit: max,
    measured: slower.length,
    status: failed ? 'failed' : 'passed',
    message: `${slower.length} ${slower.length === 1 ? 'query' : 'queries'} slower on '${variant}'${named}; ${failed ? 'more than' : 'within'} the ${max} allowed (thresholds.regression_max_count)`,
  };
}

/**
 * regression_max_count in a single-target run: not measurable.
 * @param max the limit
 * @returns the check, not evaluated
 */
export function regressionCountNotEvaluated(max: number): ThresholdCheck {
  return {
    name: 'regression_count',
    key: 'thresholds.regression_max_count',
    variant: null,
    limit: max,
    measured: null,
    status: 'not_evaluated',
    message:
      'regressions not evaluated: a single target has no baseline replay to compare with (thresholds.regression_max_count); ' +
      'give two [[variants]], the baseline first, to gate regressions',
  };
}
