/**
 * `baseline-report`: without a pull request (a push, a schedule), the current commit is compared
 * with the report of an earlier run instead of with a base commit replayed in the same job.
 *
 * What is compared, and why it is weaker than the PR gate: the earlier report carries per-query
 * percentiles, not latency samples, so its side is a set of numbers (the *head* side of that run:
 * the code it measured), and this run measures the current commit twice (an A/A run: base and
 * head both built from this commit). A query regresses when this run's p95 exceeds the report's
 * by more than the p95 threshold and by more than this run's own base-vs-base noise floor, by
 * more than min-delta-ms, with min-calls on both sides. There is no confidence interval, and the
 * noise *between* the two runs (another day, another machine) is not measured; the report says
 * all of this where the verdict is.
 */
import { checkAbsoluteLimits } from '../verdict/absolute-limits.js';
import type { GateReport } from '../verdict/report-types.js';
import type { ErrorDiff } from '../types.js';
import { micros, plural } from '../format/units.js';
import { code, text } from '../report/markdown-text.js';

/** One query (or the whole workload) compared with the baseline. */
export interface BaselineRow {
  fingerprint: string;
  normalized: string;
  callsBaseline: number;
  callsNow: number;
  p95BaselineUs: number;
  p95NowUs: number;
  ratio: number;
  regressed: boolean;
}

export interface BaselineComparison {
  verdict: 'pass' | 'regression';
  headline: string;
  reasons: string[];
  /** Explains what was compared; first among the report's warnings. */
  note: string;
  overall: BaselineRow;
  rows: BaselineRow[];
  newErrors: ErrorDiff[];
  /** Fingerprints measured now that the baseline does not have. */
  notInBaseline: number;
}

/**
 * Compares this run (an A/A run of the current commit) with an earlier run's report.
 * @param now this run's report, with a comparison
 * @param baseline the earlier report, with a comparison
 * @param source the baseline file, for the note
 * @returns the verdict and its rows
 */
export function compareWithBaseline(now: GateReport, baseline: GateReport, source: string): BaselineComparison {
  const c = now.comparison!;
  const b = baseline.comparison!;
  const t = now.thresholds;
  const noise = c.noise_floor.value;
  const byFingerprint = new Map(b.fingerprints.map((f) => [f.fingerprint, f]));
  const judge = (
    fingerprint: string,
    normalized: string,
    callsBaseline: number,
    callsNow: number,
    p95BaselineUs: number,
    p95NowUs: number,
  ): BaselineRow => {
    const ratio = Math.max(p95NowUs, 1) / Math.max(p95BaselineUs, 1);
    const regressed =
      callsBaseline >= t.min_calls &&
      callsNow >= t.min_calls &&
      ratio - 1 > Math.max(t.p95_threshold, noise) &&
      (p95NowUs - p95BaselineUs) / 1000 > t.min_delta_ms;
    return { fingerprint, normalized, callsBaseline, callsNow, p95BaselineUs, p95NowUs, ratio, regressed };
  };
  const rows: BaselineRow[] = [];
  let notInBaseline = 0;
  for (const f of c.fingerprints) {
    const old = byFingerprint.get(f.fingerprint);
    if (!old) {
      notInBaseline++;
      continue;
    }
    rows.push(judge(f.fingerprint, f.normalized, old.calls_head, f.calls_head, old.head.p95_us, f.head.p95_us));
  }
  rows.sort((x, y) => Number(y.regressed) - Number(x.regressed) || y.ratio - x.ratio);
  const overall = judge('', 'whole workload', b.overall.calls_head, c.overall.calls_head, b.overall.head.p95_us, c.overall.head.p95_us);

  // Errors of the baseline's head side, against every error this run saw; failures that depend on
  // how sessions interleave count only when this run's own replays judged them (docs/gate-statistics.md).
  const key = (e: ErrorDiff) => `${e.fingerprint}/${e.sqlstate}`;
  const before = new Set([...b.new_errors, ...b.shared_errors, ...b.varying_errors].map(key));
  const counted = (e: ErrorDiff) => e.class !== 'interleaving' || e.rule === 'every_replay' || e.rule === 'rate';
  const seen = new Map<string, ErrorDiff>();
  for (const e of [...c.new_errors, ...c.shared_errors, ...c.fixed_errors].filter(counted))
    if (!before.has(key(e)) && !seen.has(key(e))) seen.set(key(e), e);
  const newErrors = [...seen.values()];

  const slower = rows.filter((r) => r.regressed);
  const reasons = [
    ...slower.map(
      (r) =>
        `\`${r.normalized.slice(0, 80)}\` (${r.fingerprint}): p95 ${micros(r.p95BaselineUs)} in the baseline report → ${micros(r.p95NowUs)} now`,
    ),
    ...(overall.regressed
      ? [`whole workload: p95 ${micros(overall.p95BaselineUs)} in the baseline report → ${micros(overall.p95NowUs)} now`]
      : []),
    ...(newErrors.length > t.max_new_errors
      ? newErrors.map((e) => `new error ${e.sqlstate} in \`${e.normalized.slice(0, 80)}\` (${e.fingerprint})`)
      : []),
  ];
  const regression = reasons.length > 0;
  const threshold = `${Math.round(Math.max(t.p95_threshold, noise) * 100)} %`;
  const headline = regression
    ? `regression against the baseline report: ${[slower.length ? `${slower.length} ${slower.length === 1 ? 'query' : 'queries'} slower` : '', overall.regressed ? 'the whole workload slower' : '', newErrors.length > t.max_new_errors ? `${newErrors.length} new error(s)` : ''].filter(Boolean).join(', ')}`
    : `pass against the baseline report: no query slower than in it by more than ${threshold}, no new error`;
  const at = baseline.environment.head.sha ? ` of commit ${baseline.environment.head.sha.slice(0, 12)}` : '';
  const note =
    `compared with the baseline report ${source} (the head side of a run${at} started ${baseline.environment.started_at} on ${baseline.environment.runner}), ` +
    `not with a base commit replayed in this job: its p95 numbers against this run's; the report has no latency samples, so there is no confidence interval, ` +
    `and the noise between the two runs is not measured (this run's own base-vs-base noise floor was ${Math.round(noise * 100)} %, used as the least threshold). ` +
    `The tables after the baseline section compare this commit with itself.`;
  return { verdict: regression ? 'regression' : 'pass', headline, reasons, note, overall, rows, newErrors, notInBaseline };
}

/**
 * The report of a baseline run: this run's report with the baseline's verdict, and the base
 * named as the baseline report.
 * @param now this run's report
 * @param result the comparison with the baseline
 * @param baseline the baseline report
 * @param source the baseline file
 * @returns the report to publish
 */
export function baselineReport(now: GateReport, result: BaselineComparison, baseline: GateReport, source: string): GateReport {
  const report: GateReport = {
    ...now,
    verdict: result.verdict,
    headline: result.headline,
    reasons: result.reasons,
    warnings: [result.note, ...now.warnings],
    environment: {
      ...now.environment,
      base: { ref: 'baseline-report', sha: baseline.environment.head.sha, source: `baseline-report: ${source}` },
    },
  };
  // What this run found on its own, which the baseline cannot speak for, stands: absolute limits
  // it exceeded, and too little of the workload run to call anything a pass.
  const limits = now.comparison
    ? checkAbsoluteLimits(now.comparison, now.accounting?.head ?? null, now.thresholds).filter((c) => c.exceeded)
    : [];
  if (limits.length > 0) {
    report.verdict = 'regression';
    report.reasons = [...result.reasons, ...limits.map((c) => c.line)];
    if (result.verdict !== 'regression') report.headline = `regression: ${plural(limits.length, 'absolute limit')} exceeded`;
  } else if (result.verdict !== 'regression' && now.verdict === 'inconclusive') {
    report.verdict = 'inconclusive';
    report.headline = now.headline;
    report.reasons = now.reasons;
  }
  return report;
}

/**
 * The markdown section with the baseline's rows: the regressions, then the largest changes.
 * @param result the comparison
 * @param rows at most this many rows
 * @returns markdown lines
 */
export function baselineSection(result: BaselineComparison, rows = 15): string {
  const fmt = (r: BaselineRow) =>
    `| ${r.fingerprint ? code(r.normalized, 80, true) : text(r.normalized)} | ${r.callsBaseline} / ${r.callsNow} | ${micros(r.p95BaselineUs)} | ${micros(r.p95NowUs)} | ${r.ratio >= 1 ? '+' : '−'}${Math.abs(Math.round((r.ratio - 1) * 100))} % | ${r.regressed ? '❌' : ''} |`;
  const lines = [
    '#### Against the baseline report',
    '',
    text(result.note),
    '',
    '| statement | calls baseline / now | p95 baseline | p95 now | Δ p95 | regressed |',
    '| --- | ---: | ---: | ---: | ---: | :---: |',
    fmt(result.overall),
    ...result.rows.slice(0, rows).map(fmt),
    '',
  ];
  if (result.rows.length > rows) lines.push(`${result.rows.length - rows} more in the JSON report's comparison.`, '');
  if (result.notInBaseline > 0)
    lines.push(`${result.notInBaseline} measured statement(s) are not in the baseline report and were not compared.`, '');
  return `${lines.join('\n')}\n`;
}
