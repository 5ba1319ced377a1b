/**
 * The verdict from what was measured (design §4): a regression when the PR's migrations fail,
 * when a fingerprint's latency regressed (its client p95, or the server's own time per call) or
 * the whole workload's p95 did (the engine evaluates the rules, see docs/gate-statistics.md),
 * when more (fingerprint, SQLSTATE) pairs count as new errors than allowed (the engine judges
 * each failure by its kind and rate), or when head ran clearly less of the workload than base.
 * Everything else that looks odd becomes a warning, never a silent pass.
 */
import { ExitCode } from '../exit-codes.js';
import { oneLine } from '../format/table.js';
import { micros, plural } from '../format/units.js';
import { ratioChange } from '../format/numbers.js';
import { maskMessage } from '../format/mask.js';
import { evaluatePlanRules, type PlanRuleResult, type StatementReason } from '../plans/rules.js';
import type { FingerprintPlan, PlansReport, WorkRegression, WorkRule } from '../plans/types.js';
import { unjudgedByWorkRule, workEvidence } from '../plans/work-rule.js';
import { inconclusiveHeadline, notComparedWarnings, sharePercent } from './coverage.js';
import { checkAbsoluteLimits, type LimitCheck } from './absolute-limits.js';
import type { Coverage, ServersReport, SessionFeature, SideAccounting, Thresholds, Verdict } from './report-types.js';
import type { MigrationFailure } from '../templates/build.js';
import type { Comparison, ErrorDiff, FingerprintComparison, LatencyChecks, LatencyComparison, ServerTimeChecks } from '../types.js';
import { serverDifferenceLine } from './server-differences.js';
import { likelyCause, lostSessionFeatures } from './session-features.js';
import { ReasonList } from './statement-reasons.js';

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

/** Head ran less of the workload than base by more than this share (statements skipped in
 * transactions its failures aborted): what the PR keeps from running is a regression. */
const HEAD_COVERAGE_DROP = 0.05;

/**
 * Why a counted error counts, beyond being new, in one line; undefined for a deterministic
 * failure base never had (its SQLSTATE says it all).
 * @param e a counted error
 * @returns the reason line, or undefined
 */
export function errorRuleLine(e: ErrorDiff): string | undefined {
  const where = `SQLSTATE ${e.sqlstate} in \`${oneLine(e.normalized, 80)}\` (${e.fingerprint})`;
  const counts = () => `head ${e.head_count} of ${e.head_executed} calls, base ${sum(e.base_replays)} of ${e.base_executed}`;
  const message = maskMessage(e.message, e.sqlstate);
  switch (e.rule) {
    case 'more_often':
      return `${where}: ${counts()} (all replays): it failed on base too, but head fails it far more often: ${message}`;
    case 'every_replay':
      return `${where}: the same ${plural(e.every_head_replay, 'statement')} failed in every head replay and in no base replay (${counts()}): ${message}`;
    case 'rate':
      return `${where}: fails more often on head in every replay (${counts()}; p = ${e.p_value === null ? '?' : e.p_value.toExponential(1)}), more than races between sessions explain: ${message}`;
    default:
      return undefined;
  }
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** `p95 2.25 ms → 55.6 ms (+2378 %, 95 % CI 13.82×–29.44×)` */
function latencyEvidence(c: LatencyComparison, confidence: number): string {
  return `p95 ${micros(c.base.p95_us)} → ${micros(c.head.p95_us)} (${ratioChange(c.ratio)}, ${Math.round(confidence * 100)} % CI ${c.ci_low.toFixed(2)}×–${c.ci_high.toFixed(2)}×)`;
}

/**
 * The evidence of each latency rule that fired on a fingerprint: the client p95's, the server
 * time's (with the client p95 beside it when that rule did not fire too).
 * @param f the fingerprint
 * @param confidence the intervals' level
 * @returns one reason per rule, to be joined into the fingerprint's line
 */
export function fingerprintReasons(f: FingerprintComparison, confidence: number): StatementReason[] {
  const evidence: string[] = [];
  const clientFired = f.rules.includes('client_p95');
  if (clientFired) evidence.push(latencyEvidence(f, confidence));
  const s = f.server_time;
  if (s && f.rules.includes('server_time')) {
    const client = clientFired ? '' : `; client p95 ${micros(f.base.p95_us)} → ${micros(f.head.p95_us)}`;
    evidence.push(
      `server time per call ${micros(s.base.p50_us)} → ${micros(s.head.p50_us)} median (+${micros(s.shift_us)}, ` +
        `${Math.round(confidence * 100)} % CI +${micros(s.ci_low_us)}–+${micros(s.ci_high_us)}${client})`,
    );
  }
  return evidence.map((e) => ({ fingerprint: f.fingerprint, normalized: f.normalized, evidence: e }));
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
  if (migrationFailure) return migrationsFail(migrationFailure);
  if (!comparison) throw new Error('decideVerdict: no comparison and no migration failure');
  const coverage = inputs.coverage ?? null;
  const plans = inputs.plans ?? null;
  const found = findRegressions(inputs, comparison, coverage);
  const warnings = [
    // What never ran comes first: it is what the comparison below cannot speak for.
    ...(coverage ? notComparedWarnings(coverage) : []),
    ...planWarnings(plans, found.planned, inputs.thresholds.work_rule ?? null),
    ...comparisonWarnings(comparison, thresholds),
  ];
  if (found.reasons.length > 0) return regression(found, comparison, coverage, warnings);
  return withoutRegression(found, comparison, coverage, thresholds, warnings);
}

/** The PR's migrations fail: a regression, whatever else. */
function migrationsFail(failure: MigrationFailure): VerdictResult {
  const where = failure.line === null ? '' : `, line ${failure.line}`;
  const reason = `the PR's migrations fail: ${failure.name}${where}: ${maskMessage(failure.message, failure.sqlstate ?? null)}`;
  return { verdict: 'regression', headline: "regression: the PR's migrations fail", reasons: [reason], warnings: [] };
}

/** What the rules found against head: the reasons, in the report's order, and what each rule contributed. */
interface Regressions {
  reasons: string[];
  slower: FingerprintComparison[];
  /** New errors, statement groups that lost their session state included. */
  newErrors: number;
  /** More new errors than allowed. */
  tooManyErrors: boolean;
  headRanLess: boolean;
  overLimits: LimitCheck[];
  planned: PlanRuleResult;
  /** Statements the work rule failed. */
  moreWork: number;
}

/** The fingerprints the work rule failed (plans/work-rule.ts), in the plans report's order. */
function workRegressions(plans: PlansReport | null): (FingerprintPlan & { work_regression: WorkRegression })[] {
  return (plans?.fingerprints ?? []).filter((f): f is FingerprintPlan & { work_regression: WorkRegression } => !!f.work_regression);
}

/**
 * Every rule against the comparison: latency, new errors, what head kept from running, the
 * absolute limits, the plan rules.
 */
function findRegressions(inputs: VerdictInputs, comparison: Comparison, coverage: Coverage | null): Regressions {
  const { thresholds } = inputs;
  const reasons = new ReasonList();
  const slower = comparison.fingerprints.filter((f) => f.regressed);
  for (const f of slower) for (const r of fingerprintReasons(f, thresholds.confidence)) reasons.addFor(r);
  if (comparison.overall.regressed) reasons.add(`whole workload: ${latencyEvidence(comparison.overall, thresholds.confidence)}`);
  // Session state head's server does not keep: named, not left to which connection a statement lands on.
  const lost = lostSessionFeatures(inputs.servers);
  const newErrors = comparison.new_errors.length + lost.length;
  const tooManyErrors = newErrors > thresholds.max_new_errors;
  if (tooManyErrors) for (const line of newErrorReasons(comparison, lost, newErrors, thresholds.max_new_errors)) reasons.add(line);
  const headRanLess = coverage !== null && coverage.head.executed_share < coverage.base.executed_share - HEAD_COVERAGE_DROP;
  if (headRanLess) {
    reasons.add(
      `head executed ${sharePercent(coverage.head.executed_share)} of the captured statements, base ${sharePercent(coverage.base.executed_share)}: ` +
        'the PR keeps statements from running (skipped in transactions that its failures aborted)',
    );
  }
  const overLimits = checkAbsoluteLimits(comparison, inputs.headAccounting ?? null, thresholds).filter((c) => c.exceeded);
  for (const c of overLimits) {
    if (c.statement) reasons.addFor(c.statement);
    else reasons.add(c.line);
  }
  const planned = evaluatePlanRules(
    inputs.plans ?? null,
    thresholds.plan_rules ?? { fail_on_plan_change: 'none', plan_min_rows: 0, max_buffers_growth: null },
  );
  for (const r of planned.reasons) reasons.addFor(r);
  const moreWork = workRegressions(inputs.plans ?? null);
  for (const f of moreWork) reasons.addFor({ fingerprint: f.fingerprint, normalized: f.normalized, evidence: workEvidence(f) });
  return { reasons: reasons.lines(), slower, newErrors, tooManyErrors, headRanLess, overLimits, planned, moreWork: moreWork.length };
}

/** The new errors beyond the allowed number: the count with the first, then why each counts. */
function newErrorReasons(comparison: Comparison, lost: SessionFeature[], newErrors: number, allowed: number): string[] {
  const first = comparison.new_errors.find((e) => e.rule === 'deterministic');
  const cause = first ? likelyCause(first, lost) : undefined;
  const firstLine = first
    ? `; first: SQLSTATE ${first.sqlstate} in \`${oneLine(first.normalized, 80)}\`: ${maskMessage(first.message, first.sqlstate)}${cause ? ` (likely the ${cause.label} \`${oneLine(cause.normalized, 60)}\`)` : ''}`
    : '';
  const ofWhich =
    lost.length > 0 ? `, ${plural(lost.length, 'statement group')} depending on session state that head's server does not keep` : '';
  const reasons = [`${plural(newErrors, 'new error')} (allowed: ${allowed})${ofWhich}${firstLine}`];
  for (const e of comparison.new_errors) {
    const line = errorRuleLine(e);
    if (line) reasons.push(line);
  }
  for (const f of lost) {
    reasons.push(
      `${f.label} in \`${oneLine(f.normalized, 80)}\` (${f.fingerprint}): head's server does not keep a client on one server connection (a transaction pooler), and ${f.breaks}`,
    );
  }
  return reasons;
}

/** What the plan probe could not do, when it was not asked to gate (then it is an error instead). */
function planWarnings(plans: PlansReport | null, planned: PlanRuleResult, rule: WorkRule | null): string[] {
  const warnings: string[] = [];
  if (plans !== null && planned.unmeasured.length === 0) {
    if (plans.error !== null) warnings.push(`query plans could not be probed: ${plans.error}`);
    else if (plans.failures.length > 0) warnings.push(`${plural(plans.failures.length, 'plan probe')} failed (listed under Plan changes)`);
  }
  const unjudged = rule && plans ? unjudgedByWorkRule(plans) : 0;
  if (unjudged > 0) {
    warnings.push(
      `the work rule judged no work of ${plural(unjudged, 'fingerprint')} counted by one EXPLAIN ANALYZE instead of pg_stat_statements ` +
        '(one execution, no replays to measure a spread against): their work per call is reported, not gated',
    );
  }
  if (plans?.stats.unavailable_reason) {
    warnings.push(
      `pg_stat_statements is not available (${plans.stats.unavailable_reason}): buffers and server time come from one EXPLAIN (ANALYZE, BUFFERS) per fingerprint`,
    );
  }
  return warnings;
}

/** What in the comparison weakens it without failing the PR: noise, errors on both sides, what was not judged. */
function comparisonWarnings(comparison: Comparison, thresholds: Thresholds): string[] {
  const warnings: string[] = [];
  const noise = comparison.noise_floor.value;
  if (noise > thresholds.p95_threshold) {
    warnings.push(
      `the noise floor (${(noise * 100).toFixed(0)} %) is above the p95 threshold (${(thresholds.p95_threshold * 100).toFixed(0)} %): ` +
        'this runner is too noisy to see smaller regressions; use a quieter runner, more rounds, or a higher threshold',
    );
  }
  if (comparison.shared_errors.length > 0) {
    warnings.push(
      `${plural(comparison.shared_errors.length, 'statement group')} fail on both sides about as often (workload fidelity, not gated)`,
    );
  }
  const varying = comparison.varying_errors ?? [];
  if (varying.length > 0) {
    const failures = sum(varying.map((e) => e.head_count));
    warnings.push(
      `${plural(varying.length, 'statement group')} ${varying.length === 1 ? 'fails' : 'fail'} now and then, varying between replays ` +
        `(${plural(failures, 'failure')} on head; unique violations between concurrent sessions, deadlocks, lock or statement timeouts): ` +
        'within what base and the capture show, not gated (listed with their counts)',
    );
  }
  if (comparison.server_time && !comparison.server_time.measured && comparison.server_time.reason) {
    warnings.push(`the server's own time per statement was not compared: ${comparison.server_time.reason}`);
  }
  if (comparison.only_base.length + comparison.only_head.length > 0) {
    warnings.push(`${comparison.only_base.length} fingerprint(s) ran only on base and ${comparison.only_head.length} only on head`);
  }
  const ungated = comparison.fingerprints.filter((f) => !f.checks.enough_calls).length;
  const slower = comparison.fingerprints.filter(slowerOnFewCalls).length;
  if (ungated > 0)
    warnings.push(
      `${plural(ungated, 'fingerprint')} had fewer than ${thresholds.min_calls} successful calls on a side and ${ungated === 1 ? 'was' : 'were'} not gated on latency` +
        (slower > 0
          ? `; ${slower} of them ${slower === 1 ? 'looks' : 'look'} slower beyond the thresholds on the calls ${slower === 1 ? 'it' : 'they'} had (listed as not gated): ` +
            'replay more rounds, a longer workload, or shard it over several runners (docs/scale-out.md)'
          : ''),
    );
  return warnings;
}

/**
 * A fingerprint too rare to be judged that a latency rule would have failed on its few calls:
 * every condition of the rule holds but enough calls. min-calls keeps it from failing the PR; a
 * pass must not read as "nothing got slower" because of it (a condensed workload's rare reports,
 * docs/scale-out.md). Threshold and floor alone are not enough: on three calls a side, replays of
 * the same schema cross them often (the shop's A/A in 4 shards: in 9 of 20 runs), and a headline
 * that says so on every PR would teach its readers to skip it.
 */
function slowerOnFewCalls(f: FingerprintComparison): boolean {
  // One of the fingerprints the "fewer than min-calls" warning counts, so that its "N of them" holds.
  if (f.regressed || f.checks.enough_calls) return false;
  return allButCalls(f.checks) || (f.server_time !== null && allButCalls(f.server_time.checks));
}

/** Every condition of a latency rule holds but the number of calls. */
function allButCalls(checks: LatencyChecks | ServerTimeChecks): boolean {
  return Object.entries(checks).every(([condition, holds]) => condition === 'enough_calls' || holds);
}

/** A rule fired: a regression, its headline naming each kind of finding. */
function regression(found: Regressions, comparison: Comparison, coverage: Coverage | null, warnings: string[]): VerdictResult {
  const { planned } = found;
  const parts = [];
  if (found.slower.length > 0) parts.push(`${plural(found.slower.length, 'query', 'queries')} slower`);
  if (comparison.overall.regressed) parts.push('the whole workload slower');
  if (found.tooManyErrors) parts.push(plural(found.newErrors, 'new error'));
  if (found.headRanLess) parts.push('less of the workload ran on head');
  if (planned.planChanges > 0) parts.push(plural(planned.planChanges, 'plan change'));
  if (planned.bufferGrowth > 0) parts.push(`${plural(planned.bufferGrowth, 'query', 'queries')} reading more buffers`);
  if (found.moreWork > 0) parts.push(`${plural(found.moreWork, 'query', 'queries')} doing more work per call`);
  if (found.overLimits.length > 0) parts.push(`${plural(found.overLimits.length, 'absolute limit')} exceeded`);
  if (planned.unmeasured.length > 0) warnings.push(...planned.unmeasured.map((u) => `not evaluated by the plan rules: ${u}`));
  // A regression in what did run stands, whatever did not run; the gap is said, not hidden.
  if (coverage && !coverage.sufficient)
    warnings.unshift(
      `only ${sharePercent(coverage.base.executed_share)} of the captured statements ran on base: ${inconclusiveHeadline(coverage)}`,
    );
  return { verdict: 'regression', headline: `regression: ${parts.join(', ')}`, reasons: found.reasons, warnings };
}

/** No rule fired: a pass, unless something kept the comparison from speaking for the PR. */
function withoutRegression(
  found: Regressions,
  comparison: Comparison,
  coverage: Coverage | null,
  thresholds: Thresholds,
  warnings: string[],
): VerdictResult {
  // The plan rules were asked for and could not be evaluated everywhere: no pass.
  if (found.planned.unmeasured.length > 0) {
    return {
      verdict: 'error',
      headline: 'error: the plan rules could not be evaluated',
      reasons: found.planned.unmeasured.map(
        (u) => `${u}; the plan rules (fail-on-plan-change, max-buffers-growth) need every plan measured`,
      ),
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
  const newErrors = found.newErrors;
  const rareSlower = comparison.fingerprints.filter(slowerOnFewCalls).length;
  const headline =
    `pass: ${plural(comparison.fingerprints.length, 'fingerprint')} compared, none slower beyond ${(thresholds.p95_threshold * 100).toFixed(0)} %` +
    (rareSlower > 0 ? ` (${rareSlower} with too few calls to judge ${rareSlower === 1 ? 'looks' : 'look'} slower)` : '') +
    `${newErrors > 0 ? `, ${plural(newErrors, 'new error')} (allowed: ${thresholds.max_new_errors})` : ', no new errors'}`;
  return { verdict: 'pass', headline, reasons: found.reasons, warnings };
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
