/**
 * The JUnit XML report, for CI systems that show test results (GitLab's test report, Jenkins'
 * junit step, GitHub test-report actions). Two suites:
 * - `latency`: one test case per gated fingerprint (enough calls on both sides), failed when it
 *   regressed; `time` is head's p95, so the slowest statements sort first in a CI's view;
 * - `thresholds`: one test case per rule of the gate (whole-workload p95, new errors, PR
 *   migrations apply, every session replayed and accounted for), plus, for an `error` verdict, a
 *   test case with an `<error>` naming the stage. A rule that could not be evaluated is skipped.
 */
import { checkAbsoluteLimits } from '../verdict/absolute-limits.js';
import { inconclusiveHeadline, sharePercent } from '../verdict/coverage.js';
import { lostSessionFeatures } from '../verdict/session-features.js';
import type { GateReport } from '../verdict/report-types.js';
import type { Comparison, FingerprintComparison, LatencyComparison } from '../types.js';
import { workEvidence } from '../plans/work-rule.js';
import { evaluatePlanRules, type PlanRuleResult, reasonLine } from '../plans/rules.js';
import { oneLine } from '../format/table.js';
import { count, micros, plural } from '../format/units.js';
import { maskMessage } from '../format/mask.js';
import { fractionPercent, interval, ratioChange } from '../format/numbers.js';

export interface JunitOptions {
  /** Replace data values in error messages, as in the markdown report. Default true. */
  maskValues?: boolean;
}

export type Outcome = { kind: 'passed' } | { kind: 'failure' | 'error' | 'skipped'; message: string; type?: string; body?: string };

export interface TestCase {
  name: string;
  classname: string;
  /** Seconds. */
  time: number;
  outcome: Outcome;
}

export interface TestSuite {
  name: string;
  cases: TestCase[];
}

/**
 * Renders a gate report as JUnit XML.
 * @param report the gate's report
 * @param options masking
 * @returns the XML document, ending in a newline
 */
export function renderJunit(report: GateReport, options: JunitOptions = {}): string {
  return renderSuites(gateSuites(report, options), report.environment.wall_time_ms / 1_000);
}

/**
 * A gate report's test suites (`latency`, `thresholds`), for documents that hold more than one report.
 * @param report the gate's report
 * @param options masking
 * @returns the suites
 */
export function gateSuites(report: GateReport, options: JunitOptions = {}): TestSuite[] {
  return [latencySuite(report), thresholdSuite(report, options.maskValues ?? true)];
}

/**
 * A JUnit XML document of suites.
 * @param suites the suites
 * @param wallSeconds the run's wall time
 * @returns the XML document, ending in a newline
 */
export function renderSuites(suites: TestSuite[], wallSeconds: number): string {
  const totals = tally(suites.flatMap((s) => s.cases));
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attributes({ name: 'pg-retest', ...totals, time: seconds(wallSeconds) })}>`,
    ...suites.flatMap(suiteLines),
    '</testsuites>',
  ];
  return `${lines.join('\n')}\n`;
}

function latencySuite(report: GateReport): TestSuite {
  const fingerprints = report.comparison?.fingerprints.filter((f) => f.checks.enough_calls) ?? [];
  return {
    name: 'latency',
    cases: fingerprints.map((f) => ({
      name: `${oneLine(f.normalized, 80)} (${f.fingerprint})`,
      classname: 'pg-retest.fingerprint',
      time: f.head.p95_us / 1_000_000,
      outcome: f.regressed
        ? {
            kind: 'failure',
            type: 'regression',
            message: f.rules.includes('client_p95') ? latencyLine(f) : serverTimeLine(f),
            body: fingerprintBody(f),
          }
        : { kind: 'passed' },
    })),
  };
}

/** `p95 480 µs → 4.90 ms (+921 %, CI [+850 %, +990 %])` */
function latencyLine(l: LatencyComparison): string {
  return `p95 ${micros(l.base.p95_us)} → ${micros(l.head.p95_us)} (${ratioChange(l.ratio)}, CI ${interval(l.ci_low, l.ci_high)})`;
}

/** `server time 40 µs → 340 µs median (+300 µs, CI +290 µs–+310 µs)` */
function serverTimeLine(f: FingerprintComparison): string {
  const s = f.server_time;
  if (!s) return 'server time not measured';
  return `server time ${micros(s.base.p50_us)} → ${micros(s.head.p50_us)} median (+${micros(s.shift_us)}, CI +${micros(s.ci_low_us)}–+${micros(s.ci_high_us)})`;
}

function fingerprintBody(f: FingerprintComparison): string {
  return [
    f.normalized,
    '',
    `fingerprint ${f.fingerprint} (${f.kind})`,
    `calls base ${count(f.calls_base)}, head ${count(f.calls_head)}`,
    `p50 ${micros(f.base.p50_us)} → ${micros(f.head.p50_us)}`,
    `p95 ${micros(f.base.p95_us)} → ${micros(f.head.p95_us)}, ratio ${f.ratio.toFixed(2)}, CI [${f.ci_low.toFixed(2)}, ${f.ci_high.toFixed(2)}]`,
    `p99 ${micros(f.base.p99_us)} → ${micros(f.head.p99_us)}`,
    ...(f.server_time ? [serverTimeLine(f)] : []),
    `rules fired: ${f.rules.join(', ') || 'none'}`,
  ].join('\n');
}

function thresholdSuite(report: GateReport, mask: boolean): TestSuite {
  const c = report.comparison;
  const t = report.thresholds;
  const notMeasured: Outcome = {
    kind: 'skipped',
    message:
      report.migration_failure?.side === 'head'
        ? "not measured: the PR's migrations fail"
        : `not measured${report.error ? `: ${report.error.stage} failed` : ''}`,
  };
  const cases: TestCase[] = [];

  if (report.verdict === 'error') {
    const e = report.error;
    cases.push(
      thresholdCase('run completes', {
        kind: 'error',
        type: e?.stage ?? 'error',
        message: e ? `${e.stage}: ${firstLine(e.message)}` : report.headline,
        body: [e?.message ?? '', ...report.reasons].filter((line) => line !== '').join('\n'),
      }),
    );
  }

  cases.push(
    thresholdCase(
      `whole-workload p95 within ${fractionPercent(t.p95_threshold)}`,
      c === null
        ? notMeasured
        : c.overall.regressed
          ? { kind: 'failure', type: 'regression', message: latencyLine(c.overall) }
          : { kind: 'passed' },
      c === null ? 0 : c.overall.head.p95_us / 1_000_000,
    ),
  );
  cases.push(thresholdCase(`new errors ≤ ${count(t.max_new_errors)}`, c === null ? notMeasured : newErrorsOutcome(report, c, mask)));

  // The plan rules, when asked for (docs/plans.md): their own case, so that a run failed by
  // them alone has a failing case too.
  const rules = t.plan_rules;
  if (c !== null && rules && (rules.fail_on_plan_change !== 'none' || rules.max_buffers_growth !== null)) {
    cases.push(thresholdCase('query plans within the plan rules', planRulesOutcome(evaluatePlanRules(report.plans ?? null, rules))));
  }

  // The work rule, when on: its own case, as the plan rules have.
  if (c !== null && t.work_rule) cases.push(thresholdCase('work per call within the work rule', workRuleOutcome(report)));

  cases.push(headMigrationsCase(report, mask));

  if (c !== null) {
    // One case per absolute limit set (and per fingerprint over it), passed or failed.
    for (const limit of checkAbsoluteLimits(c, report.accounting?.head ?? null, t)) {
      cases.push(
        thresholdCase(
          `head ${limit.name} within its limit`,
          limit.exceeded ? { kind: 'failure', type: 'limit', message: limit.line } : { kind: 'passed' },
        ),
      );
    }
  }
  cases.push(thresholdCase('all sessions replayed and accounted for', accountingOutcome(report)));
  cases.push(
    thresholdCase(
      `min-coverage: base executes at least ${sharePercent(report.thresholds.min_coverage ?? 0)} of the captured statements`,
      coverageOutcome(report),
    ),
  );
  return { name: 'thresholds', cases };
}

function thresholdCase(name: string, outcome: Outcome, time = 0): TestCase {
  return { name, classname: 'pg-retest.threshold', time, outcome };
}

/** The new errors of head and the session features its server lost, against the limit. */
function newErrorsOutcome(report: GateReport, c: Comparison, mask: boolean): Outcome {
  const lost = lostSessionFeatures(report.servers);
  const total = c.new_errors.length + lost.length;
  if (total <= report.thresholds.max_new_errors) return { kind: 'passed' };
  const list = [
    ...lost.map((f) => `${f.label}, which head's server does not keep (${f.breaks}): ${oneLine(f.normalized, 200)}`),
    ...c.new_errors.map(
      (e) =>
        `${e.sqlstate} ${mask ? maskMessage(e.message, e.sqlstate) : e.message} (${plural(e.head_count, 'failed call')}): ${oneLine(e.normalized, 200)}`,
    ),
  ];
  return { kind: 'failure', type: 'new-errors', message: `${plural(total, 'new error')}`, body: list.join('\n') };
}

function workRuleOutcome(report: GateReport): Outcome {
  const failed = (report.plans?.fingerprints ?? []).filter((f) => f.work_regression);
  if (failed.length === 0) return { kind: 'passed' };
  return {
    kind: 'failure',
    type: 'work',
    message: `${plural(failed.length, 'statement')} doing more work per call`,
    body: failed
      .map((f) =>
        reasonLine({
          fingerprint: f.fingerprint,
          normalized: f.normalized,
          evidence: workEvidence({ ...f, work_regression: f.work_regression! }),
        }),
      )
      .join('\n'),
  };
}

function planRulesOutcome(planned: PlanRuleResult): Outcome {
  if (planned.reasons.length > 0) {
    return {
      kind: 'failure',
      type: 'plan',
      message: plural(planned.reasons.length, 'plan rule violation'),
      body: planned.reasons.map(reasonLine).join('\n'),
    };
  }
  if (planned.unmeasured.length > 0) return { kind: 'skipped', message: `not measured: ${firstLine(planned.unmeasured[0]!)}` };
  return { kind: 'passed' };
}

/** Whether the PR's migrations applied, timed by their runs on head. */
function headMigrationsCase(report: GateReport, mask: boolean): TestCase {
  const name = 'PR migrations apply';
  const failure = report.migration_failure;
  const headRuns = report.migrations.filter((m) => m.side === 'head');
  const headTime = headRuns.reduce((sum, m) => sum + m.wall_time_ms, 0) / 1_000;
  if (failure?.side === 'head') {
    const where = failure.line === null ? failure.name : `${failure.name}:${failure.line}`;
    const text = mask ? maskMessage(failure.message, null) : failure.message;
    return thresholdCase(name, { kind: 'failure', type: 'migration', message: `${where}: ${firstLine(text)}`, body: text }, headTime);
  }
  if (failure?.side === 'base') return thresholdCase(name, { kind: 'skipped', message: "not run: the base branch's migrations fail" });
  if (headRuns.length === 0 && report.verdict === 'error') {
    return thresholdCase(name, { kind: 'skipped', message: `not run: ${report.error?.stage ?? 'the run'} failed first` });
  }
  return thresholdCase(name, { kind: 'passed' }, headTime);
}

/** ` (transaction_aborted 855)`, or nothing when there are no reasons. */
function byReason(reasons: Record<string, number>): string {
  const parts = Object.entries(reasons).map(([reason, n]) => `${reason} ${count(n)}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

/** Base ran enough of the workload for its comparison to speak for it (inconclusive: a failure). */
function coverageOutcome(report: GateReport): Outcome {
  const c = report.coverage;
  if (!c) return { kind: 'skipped', message: 'not measured: no replay ran' };
  const body = [
    ...(['base', 'head'] as const).map(
      (side) =>
        `${side}: ${count(c[side].captured)} captured, ${count(c[side].executed)} executed (${sharePercent(c[side].executed_share)}), ` +
        `${count(c[side].skipped)} skipped${byReason(c[side].skipped_by_reason)}, ${count(c[side].not_executed)} not executed${byReason(c[side].not_executed_by_reason)}`,
    ),
    ...c.not_compared.map((n) => `not compared: ${n.normalized} (${n.fingerprint}): ${n.reason}`),
  ].join('\n');
  return c.sufficient ? { kind: 'passed' } : { kind: 'failure', type: 'inconclusive', message: inconclusiveHeadline(c), body };
}

/** Every planned session completed and every captured statement executed, skipped or reported. */
function accountingOutcome(report: GateReport): Outcome {
  const a = report.accounting;
  if (a === null) return { kind: 'skipped', message: 'not measured: no replay ran' };
  const problems: string[] = [];
  for (const side of ['base', 'head'] as const) {
    const s = a[side];
    if (s.sessions_completed < s.sessions_planned) {
      problems.push(`${side}: ${count(s.sessions_completed)} of ${plural(s.sessions_planned, 'session')} completed`);
    }
    if (s.not_executed > 0) problems.push(`${side}: ${plural(s.not_executed, 'statement')} not executed`);
    if (s.executed + s.skipped + s.not_executed !== s.captured) {
      problems.push(
        `${side}: ${count(s.captured)} captured but ${count(s.executed)} executed + ${count(s.skipped)} skipped + ` +
          `${count(s.not_executed)} not executed`,
      );
    }
  }
  for (const replay of report.replays) {
    if (replay.status !== 'completed') {
      problems.push(`round ${replay.round} ${replay.side}: ${replay.status.replace(/_/g, ' ')}`);
    }
  }
  return problems.length === 0
    ? { kind: 'passed' }
    : { kind: 'failure', type: 'accounting', message: problems[0] ?? '', body: problems.join('\n') };
}

function tally(cases: TestCase[]): { tests: number; failures: number; errors: number; skipped: number } {
  const n = (kind: Outcome['kind']) => cases.filter((c) => c.outcome.kind === kind).length;
  return { tests: cases.length, failures: n('failure'), errors: n('error'), skipped: n('skipped') };
}

function suiteLines(suite: TestSuite): string[] {
  const time = suite.cases.reduce((sum, c) => sum + c.time, 0);
  const open = `  <testsuite${attributes({ name: suite.name, ...tally(suite.cases), time: seconds(time) })}`;
  if (suite.cases.length === 0) return [`${open}/>`];
  return [`${open}>`, ...suite.cases.flatMap(caseLines), '  </testsuite>'];
}

function caseLines(test: TestCase): string[] {
  const open = `    <testcase${attributes({ name: test.name, classname: test.classname, time: seconds(test.time) })}`;
  const o = test.outcome;
  if (o.kind === 'passed') return [`${open}/>`];
  const attrs = attributes({ message: o.message, ...(o.type === undefined ? {} : { type: o.type }) });
  const element =
    o.body === undefined || o.body === '' ? `      <${o.kind}${attrs}/>` : `      <${o.kind}${attrs}>${escapeText(o.body)}</${o.kind}>`;
  return [`${open}>`, element, '    </testcase>'];
}

function attributes(values: Record<string, string | number>): string {
  return Object.entries(values)
    .map(([key, value]) => ` ${key}="${escapeAttribute(String(value))}"`)
    .join('');
}

/** Seconds with millisecond precision, as JUnit readers expect. */
function seconds(value: number): string {
  return (Math.round(value * 1_000) / 1_000).toFixed(3);
}

function firstLine(value: string): string {
  return (
    value
      .split(/\r?\n/)
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}

/**
 * Characters XML 1.0 cannot hold at all (C0 controls but tab, newline and carriage return;
 * U+FFFE, U+FFFF; unpaired surrogates). Written as `\uXXXX` text so the reader still sees that
 * something was there.
 */
const ILLEGAL =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function legal(value: string): string {
  return value.replace(ILLEGAL, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
}

/**
 * Text content: `&`, `<` and `>` escaped (`>` for `]]>`), illegal characters replaced.
 * @param value any text
 * @returns XML character data
 */
export function escapeText(value: string): string {
  return legal(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * An attribute value in double quotes. Tabs and line breaks are written as character references,
 * since a parser would otherwise turn them into spaces.
 * @param value any text
 * @returns the escaped value
 */
export function escapeAttribute(value: string): string {
  return escapeText(value)
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\t/g, '&#9;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;');
}
