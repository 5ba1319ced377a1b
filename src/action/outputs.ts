/**
 * The step's outputs, from a report: the verdict, the report files, the whole-workload p95 on
 * each side, and what regressed. Values the report does not have (no comparison) are empty.
 *
 * Every value is checked against what its output may hold before it is set
 * ({@link checkedOutputs}): a later step may expand an output into a shell script
 * (`run: echo ${{ steps.gate.outputs.regressed-fingerprints }}`), and in `mode: comment` the
 * report is an artifact that the PR's own code wrote.
 */
import type { GateReport } from '../verdict/report-types.js';
import { lostSessionFeatures } from '../verdict/session-features.js';
import type { BaselineComparison } from './baseline.js';
import { Output } from './names.js';

export interface ReportPaths {
  markdown: string;
  json: string;
  junit: string;
}

/**
 * The outputs of one run.
 * @param report the gate's report
 * @param paths where the report files are
 * @param commentUrl the PR comment, when there is one
 * @returns output name → value
 */
export function outputsOf(report: GateReport, paths: ReportPaths | undefined, commentUrl: string | undefined): Record<string, string> {
  const comparison = report.comparison;
  const ms = (us: number) => String(Math.round(us) / 1000);
  return {
    [Output.Result]: report.verdict,
    [Output.ReportPath]: paths?.markdown ?? '',
    [Output.JsonReportPath]: paths?.json ?? '',
    [Output.JunitPath]: paths?.junit ?? '',
    [Output.CommentUrl]: commentUrl ?? '',
    [Output.P95BaseMs]: comparison ? ms(comparison.overall.base.p95_us) : '',
    [Output.P95HeadMs]: comparison ? ms(comparison.overall.head.p95_us) : '',
    [Output.P95DeltaPct]: comparison ? String(Math.round((comparison.overall.ratio - 1) * 1000) / 10) : '',
    [Output.NewErrors]: comparison ? String(comparison.new_errors.length + lostSessionFeatures(report.servers).length) : '',
    [Output.RegressedFingerprints]: comparison ? regressedFingerprints(report).join(',') : '',
  };
}

/** Slower (the latency rules) or doing more work per call (the work rule): each once, slower first. */
function regressedFingerprints(report: GateReport): string[] {
  const slower = (report.comparison?.fingerprints ?? []).filter((f) => f.regressed).map((f) => f.fingerprint);
  const moreWork = (report.plans?.fingerprints ?? []).filter((f) => f.work_regression).map((f) => f.fingerprint);
  return [...new Set([...slower, ...moreWork])];
}

/**
 * The measured outputs of a comparison with a baseline report: its p95 and this run's.
 * @param result the comparison
 * @returns the outputs that replace the A/A run's
 */
export function baselineOutputs(result: BaselineComparison): Record<string, string> {
  const ms = (us: number) => String(Math.round(us) / 1000);
  return {
    [Output.P95BaseMs]: ms(result.overall.p95BaselineUs),
    [Output.P95HeadMs]: ms(result.overall.p95NowUs),
    [Output.P95DeltaPct]: String(Math.round((result.overall.ratio - 1) * 1000) / 10),
    [Output.NewErrors]: String(result.newErrors.length),
    [Output.RegressedFingerprints]: result.rows
      .filter((r) => r.regressed)
      .map((r) => r.fingerprint)
      .join(','),
  };
}

/** The number forms `String(number)` writes. */
const NUMBER = /^-?\d+(\.\d+)?(e[+-]\d+)?$/;

/** What each output may hold, and how the warning names it. */
const OUTPUT_RULES: Record<string, { valid: (value: string) => boolean; expected: string }> = {
  [Output.Result]: {
    valid: (v) => ['pass', 'regression', 'inconclusive', 'error', 'report'].includes(v),
    expected: 'a verdict (pass, regression, inconclusive, error, report)',
  },
  [Output.ReportPath]: { valid: isPath, expected: 'an absolute path' },
  [Output.JsonReportPath]: { valid: isPath, expected: 'an absolute path' },
  [Output.JunitPath]: { valid: isPath, expected: 'an absolute path' },
  [Output.CapacitySvgPath]: { valid: isPath, expected: 'an absolute path' },
  [Output.CommentUrl]: { valid: (v) => /^https?:\/\/[A-Za-z0-9.-]+(:\d+)?\/[A-Za-z0-9._~/#-]*$/.test(v), expected: 'the URL of a comment' },
  [Output.P95BaseMs]: { valid: (v) => NUMBER.test(v), expected: 'a number' },
  [Output.P95HeadMs]: { valid: (v) => NUMBER.test(v), expected: 'a number' },
  [Output.P95DeltaPct]: { valid: (v) => NUMBER.test(v), expected: 'a number' },
  [Output.CapacityChangePct]: { valid: (v) => NUMBER.test(v), expected: 'a number' },
  [Output.NewErrors]: { valid: (v) => /^\d+$/.test(v), expected: 'a count' },
  [Output.KneeConnections]: { valid: (v) => /^\d+$/.test(v), expected: 'a count' },
  [Output.RegressedFingerprints]: {
    valid: (v) => /^[0-9a-f]{16}(,[0-9a-f]{16})*$/.test(v),
    expected: 'fingerprints (16 hex digits, comma-separated)',
  },
};

/** An absolute path of printable characters (a path never needs a control character or a quote). */
function isPath(value: string): boolean {
  return value.startsWith('/') && !/[\u0000-\u001f\u007f"'`$]/.test(value);
}

/**
 * The outputs with every value that is not what its output holds left empty, with a warning
 * that names the output (never the value: it may be an attack on whatever reads the log).
 * @param outputs output name → value
 * @param warn reports a dropped value
 * @returns the outputs safe to set
 */
export function checkedOutputs(outputs: Record<string, string>, warn: (message: string) => void): Record<string, string> {
  const checked: Record<string, string> = {};
  for (const [name, value] of Object.entries(outputs)) {
    const rule = OUTPUT_RULES[name];
    if (value === '' || rule?.valid(value)) {
      checked[name] = value;
      continue;
    }
    checked[name] = '';
    warn(
      `output \`${name}\` left empty: the report's value is not ${rule?.expected ?? 'a known output'} (a report is not trusted where a pull request could have written it)`,
    );
  }
  return checked;
}
