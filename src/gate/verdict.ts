/**
 * The verdict from what was measured (design §4): a regression when the PR's migrations fail,
 * when a fingerprint's or the whole workload's p95 regressed (the engine evaluates the latency
 * rule, see docs/gate-statistics.md), when more (fingerprint, SQLSTATE) pairs fail on head
 * than allowed (new ones, and ones base saw that head fails far more often), or when head ran
 * clearly less of the workload than base. Everything else that looks odd becomes a warning,
 * never a silent pass.
 */
import { ExitCode } from '../exit-codes.js';
import { oneLine } from '../format/table.js';
import { micros, plural } from '../format/units.js';
import { maskMessage } from '../report/mask.js';
import { evaluatePlanRules } from '../plans/rules.js';
import type { PlansReport } from '../plans/types.js';
import { inconclusiveHeadline, notComparedWarnings, sharePercent } from './coverage.js';
import { checkAbsoluteLimits } from './absolute-limits.js';
import type { Comparison, Coverage, ErrorDiff, LatencyComparison, MigrationFailure, ServersReport, SideAccounting, Thresholds, Verdict } from './report-types.js';
import { serverDifferenceLine } from './server-differences.js';
import { likelyCause, lostSessionFeatures } from './session-features.js';

export interface VerdictInputs {
  comparison: Comparison | null;
  /** What share of the workload ran; a pass needs base to have run `min_coverage` of it. */
  coverage?: Coverage | null;
  /** Head's accounting, for the error-rate limit. */
  headAccounting?: SideAccounting | null;
  migrationFailure: MigrationFailure | null;
  thresholds: Thresholds;
  /** The plan probe's findings; absent or null when none ran. */
  plans?: PlansReport | null;
  /** Base's and head's servers when head ran on its own; absent or null otherwise. */
  servers?: ServersReport | null;
}

export interface VerdictResult {
  verdict: Verdict;
  headline: string;
  reasons: string[];
  warnings: string[];
}

/**
 * A (fingerprint, SQLSTATE) that fails on both sides counts as new errors when head fails it at
 * least this many times as often as base, all replays pooled and scaled to the statements each
 * side was given...
 */
const MORE_OFTEN_FACTOR = 2;
/** ...and at least this many more times: base's own rare failures (a duplicate the capture
 * retried, a deadlock) that head repeats a few times more stay a fidelity warning. */
const MORE_OFTEN_AT_LEAST = 5;
/** Head ran less of the workload than base by more than this share (statements skipped in
 * transactions its failures aborted): what the PR keeps from running is a regression. */
const HEAD_COVERAGE_DROP = 0.05;

/**
 * The errors base also had that head has far more often (see MORE_OFTEN_FACTOR).
 * @param shared the (fingerprint, SQLSTATE) pairs failing on both sides
 * @param coverage both sides' statement counts, to scale base's count to head's replays
 * @returns those that count as new errors
 */
export function moreOftenOnHead(shared: ErrorDiff[], coverage: Coverage | null): ErrorDiff[] {
  const scale = coverage && coverage.base.captured > 0 ? coverage.head.captured / coverage.base.captured : 1;
  return shared.filter((e) => {
    const expected = e.base_count * scale;
    return e.head_count >= MORE_OFTEN_FACTOR * expected && e.head_count - expected >= MORE_OFTEN_AT_LEAST;
  });
}

/** `+312 %` */
function change(ratio: number): string {
  const pct = (ratio - 1) * 100;
  return `${pct >= 0 ? '+' : '−'}${Math.abs(pct) >= 10 ? Math.abs(pct).toFixed(0) : Math.abs(pct).toFixed(1)} %`;
}

function latencyLine(what: string, c: LatencyComparison, confidence: number): string {
  return `${what}: p95 ${micros(c.base.p95_us)} → ${micros(c.head.p95_us)} (${change(c.ratio)}, ${Math.round(confidence * 100)} % CI ${c.ci_low.toFixed(2)}×–${c.ci_high.toFixed(2)}×)`;
}

/**
 * Decides the verdict. When head ran on a server of its own, the headline ends with what
 * differs between the servers, so that a verdict is never read as the schema's alone.
 * @param inputs the comparison (null when head's migrations failed) and the thresholds
 * @returns verdict, one-line headline, the rules that fired, warnings
 */
export function decideVerdict(inputs: VerdictInputs): VerdictResult {
  const result = decide(inputs);
  if (inputs.servers) result.headline = `${result.headline} (head's server: ${serverDifferenceLine(inputs.servers)})`;
  return result;
}

function decide(inputs: VerdictInputs): VerdictResult {
  const { comparison, migrationFailure, thresholds } = inputs;
  if (migrationFailure) {
    const where = migrationFailure.line === null ? '' : `, line ${migrationFailure.line}`;
    const reason = `the PR's migrations fail: ${migrationFailure.name}${where}: ${maskMessage(migrationFailure.message, migrationFailure.sqlstate ?? null)}`;
    return { verdict: 'regression', headline: "regression: the PR's migrations fail", reasons: [reason], warnings: [] };
  }
  if (!comparison) throw new Error('decideVerdict: no comparison and no migration failure');

  const reasons: string[] = [];
  // What never ran comes first: it is what the comparison below cannot speak for.
  const coverage = inputs.coverage ?? null;
  const warnings: string[] = coverage ? notComparedWarnings(coverage) : [];
  const slower = comparison.fingerprints.filter((f) => f.regressed);
  for (const f of slower) reasons.push(latencyLine(`\`${oneLine(f.normalized, 80)}\` (${f.fingerprint})`, f, thresholds.confidence));
  if (comparison.overall.regressed) reasons.push(latencyLine('whole workload', comparison.overall, thresholds.confidence));
  // Session state head's server does not keep: named, not left to which connection a statement lands on.
  const lost = lostSessionFeatures(inputs.servers);
  const moreOften = moreOftenOnHead(comparison.shared_errors, coverage);
  const newErrors = comparison.new_errors.length + moreOften.length + lost.length;
  if (newErrors > thresholds.max_new_errors) {
    const first = comparison.new_errors[0];
    const cause = first ? likelyCause(first, lost) : undefined;
    const firstLine = first
      ? `; first: SQLSTATE ${first.sqlstate} in \`${oneLine(first.normalized, 80)}\`: ${maskMessage(first.message, first.sqlstate)}${cause ? ` (likely the ${cause.label} \`${oneLine(cause.normalized, 60)}\`)` : ''}`
      : '';
    const ofWhich = lost.length > 0 ? `, ${plural(lost.length, 'statement group')} depending on session state that head's server does not keep` : '';
    reasons.push(`${plural(newErrors, 'new error')} (allowed: ${thresholds.max_new_errors})${ofWhich}${firstLine}`);
    for (const e of moreOften) {
      reasons.push(
        `SQLSTATE ${e.sqlstate} in \`${oneLine(e.normalized, 80)}\` (${e.fingerprint}) on head ${e.head_count} times, on base ${e.base_count} (all replays): ` +
          `it failed on base too, but head fails it far more often: ${maskMessage(e.message, e.sqlstate)}`,
      );
    }
    for (const f of lost) {
      reasons.push(`${f.label} in \`${oneLine(f.normalized, 80)}\` (${f.fingerprint}): head's server does not keep a client on one server connection (a transaction pooler), and ${f.breaks}`);
    }
  }
  const headRanLess = coverage !== null && coverage.head.executed_share < coverage.base.executed_share - HEAD_COVERAGE_DROP;
  if (headRanLess) {
    reasons.push(
      `head executed ${sharePercent(coverage.head.executed_share)} of the captured statements, base ${sharePercent(coverage.base.executed_share)}: ` +
        'the PR keeps statements from running (skipped in transactions that its failures aborted)',
    );
  }

  const overLimits = checkAbsoluteLimits(comparison, inputs.headAccounting ?? null, thresholds).filter((c) => c.exceeded);
  reasons.push(...overLimits.map((c) => c.line));

  const planned = evaluatePlanRules(inputs.plans ?? null, thresholds.plan_rules ?? { fail_on_plan_change: 'none', plan_min_rows: 0, max_buffers_growth: null });
  reasons.push(...planned.reasons);
  const plans = inputs.plans ?? null;
  if (plans !== null && planned.unmeasured.length === 0) {
    if (plans.error !== null) warnings.push(`query plans could not be probed: ${plans.error}`);
    else if (plans.failures.length > 0) warnings.push(`${plural(plans.failures.length, 'plan probe')} failed (listed under Plan changes)`);
  }
  if (plans?.stats.unavailable_reason) {
    warnings.push(
      `pg_stat_statements is not available (${plans.stats.unavailable_reason}): buffers and server time come from one EXPLAIN (ANALYZE, BUFFERS) per fingerprint`,
    );
  }

  const noise = comparison.noise_floor.value;
  if (noise > thresholds.p95_threshold) {
    warnings.push(
      `the noise floor (${(noise * 100).toFixed(0)} %) is above the p95 threshold (${(thresholds.p95_threshold * 100).toFixed(0)} %): ` +
        'this runner is too noisy to see smaller regressions; use a quieter runner, more rounds, or a higher threshold',
    );
  }
  const sharedOnly = comparison.shared_errors.length - moreOften.length;
  if (sharedOnly > 0) {
    warnings.push(`${plural(sharedOnly, 'statement group')} fail on both sides about as often (workload fidelity, not gated)`);
  }
  if (comparison.only_base.length + comparison.only_head.length > 0) {
    warnings.push(`${comparison.only_base.length} fingerprint(s) ran only on base and ${comparison.only_head.length} only on head`);
  }
  const ungated = comparison.fingerprints.filter((f) => !f.checks.enough_calls).length;
  if (ungated > 0) warnings.push(`${plural(ungated, 'fingerprint')} had fewer than ${thresholds.min_calls} successful calls on a side and were not gated on latency`);

  if (reasons.length > 0) {
    const parts = [];
    if (slower.length > 0) parts.push(`${plural(slower.length, 'query', 'queries')} slower`);
    if (comparison.overall.regressed) parts.push('the whole workload slower');
    if (newErrors > thresholds.max_new_errors) parts.push(plural(newErrors, 'new error'));
    if (headRanLess) parts.push('less of the workload ran on head');
    if (planned.planChanges > 0) parts.push(plural(planned.planChanges, 'plan change'));
    if (planned.bufferGrowth > 0) parts.push(`${plural(planned.bufferGrowth, 'query', 'queries')} reading more buffers`);
    if (overLimits.length > 0) parts.push(plural(overLimits.length, 'absolute limit') + ' exceeded');
    if (planned.unmeasured.length > 0) warnings.push(...planned.unmeasured.map((u) => `not evaluated by the plan rules: ${u}`));
    // A regression in what did run stands, whatever did not run; the gap is said, not hidden.
    if (coverage && !coverage.sufficient) warnings.unshift(`only ${sharePercent(coverage.base.executed_share)} of the captured statements ran on base: ${inconclusiveHeadline(coverage)}`);
    return { verdict: 'regression', headline: `regression: ${parts.join(', ')}`, reasons, warnings };
  }
  // The plan rules were asked for and could not be evaluated everywhere: no pass.
  if (planned.unmeasured.length > 0) {
    return {
      verdict: 'error',
      headline: 'error: the plan rules could not be evaluated',
      reasons: planned.unmeasured.map((u) => `${u}; the plan rules (fail-on-plan-change, max-buffers-growth) need every plan measured`),
      warnings,
    };
  }
  // Allowed new errors do not make up for nothing compared.
  if (comparison.fingerprints.length === 0) {
    return {
      verdict: 'error',
      headline: 'error: no statement succeeded on both sides, so nothing could be compared',
      reasons: ['no fingerprint had successful executions on both base and head; check the workload against the schema'],
      warnings,
    };
  }
  // Nothing had min-calls successful calls on both sides: no latency was judged at all.
  if (comparison.fingerprints.every((f) => !f.checks.enough_calls) && !comparison.overall.checks.enough_calls) {
    return {
      verdict: 'inconclusive',
      headline: `inconclusive: no query had ${thresholds.min_calls} successful calls on both sides, so no latency was judged`,
      reasons: [
        `neither the whole workload nor any fingerprint had min-calls (${thresholds.min_calls}) successful calls on each side: ` +
          'replay more rounds, a larger workload, or lower min-calls',
      ],
      warnings,
    };
  }
  if (coverage && !coverage.sufficient) {
    return {
      verdict: 'inconclusive',
      headline: inconclusiveHeadline(coverage),
      reasons: [
        `base executed ${sharePercent(coverage.base.executed_share)} of the captured statements, less than the ${sharePercent(coverage.min_coverage)} min-coverage: ` +
          'what did not run was not measured, so no regression in it could be seen; make the workload replay (seed the rows it reads, see docs/keys.md for generated ids) or lower min-coverage',
      ],
      warnings,
    };
  }
  const headline =
    `pass: ${plural(comparison.fingerprints.length, 'fingerprint')} compared, none slower beyond ${(thresholds.p95_threshold * 100).toFixed(0)} %` +
    `${newErrors > 0 ? `, ${plural(newErrors, 'new error')} (allowed: ${thresholds.max_new_errors})` : ', no new errors'}`;
  return { verdict: 'pass', headline, reasons, warnings };
}

/**
 * The exit status of a verdict: 0 pass, 1 regression, 4 inconclusive, 3 when something could not be measured.
 * @param verdict the verdict
 * @returns the exit status
 */
export function exitCodeOfVerdict(verdict: Verdict): ExitCode {
  switch (verdict) {
    case 'pass':
      return ExitCode.Ok;
    case 'regression':
      return ExitCode.Regression;
    case 'inconclusive':
      return ExitCode.Inconclusive;
    case 'error':
      return ExitCode.Infrastructure;
  }
}
