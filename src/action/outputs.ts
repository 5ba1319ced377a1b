/**
 * The step's outputs, from a report: the verdict, the report files, the whole-workload p95 on
 * each side, and what regressed. Values the report does not have (no comparison) are empty.
 */
import type { GateReport } from '../gate/report-types.js';
import { lostSessionFeatures } from '../gate/session-features.js';
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
    [Output.RegressedFingerprints]: comparison ? comparison.fingerprints.filter((f) => f.regressed).map((f) => f.fingerprint).join(',') : '',
  };
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
    [Output.RegressedFingerprints]: result.rows.filter((r) => r.regressed).map((r) => r.fingerprint).join(','),
  };
}
