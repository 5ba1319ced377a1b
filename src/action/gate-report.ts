/**
 * How the action shows a gate's report, in the fixed order every mode that ends with one keeps
 * (`mode: gate`, `mode: aggregate`): the report files, the job summary, the PR comment, the
 * outputs, the annotations on migration lines, and only then the verdict, so that a failing step
 * always leaves its explanation behind.
 */
import * as core from '@actions/core';
import type { CliError, ExitCode } from '../exit-codes.js';
import type { GateReport } from '../verdict/report-types.js';
import { capAnnotations, leftOutNote, migrationAnnotations, repositoryPath } from './annotations.js';
import { endStep } from './end-step.js';
import type { EventInfo } from './event.js';
import type { GitHubApi } from './github-api.js';
import type { ActionOptions } from './inputs.js';
import { scrub, scrubDeep } from './logger.js';
import { checkedOutputs, outputsOf, type ReportPaths } from './outputs.js';
import { printAnnotations, publishComment, writeSummary } from './publish.js';
import { reportMarkdown, writeGateReportFiles } from './report-files.js';

/** Where the report goes. */
export interface ReportPlace {
  options: ActionOptions;
  event: EventInfo;
  api: GitHubApi;
  workspace: string;
  /** The directory of the report files. */
  reportDir: string;
}

/** What a mode adds to the report: a section after the verdict, outputs that replace the report's. */
export interface ReportExtras {
  section?: string;
  overrides?: Record<string, string>;
}

/**
 * Shows the report everywhere and ends the step with its verdict.
 * @param outcome the report, the exit status and the failure behind an error
 * @param place where it goes
 * @param extras a section and outputs of the mode's own
 * @returns the step's exit status
 */
export async function showGateReport(
  outcome: { report: GateReport; exitCode: ExitCode; error?: CliError },
  place: ReportPlace,
  extras: ReportExtras = {},
): Promise<ExitCode> {
  const { options, event, api, workspace } = place;
  // The report files are uploaded as artifacts: what a command printed (a token it found) is
  // masked in them as in the log.
  const report = scrubDeep(outcome.report);
  const markdown = reportMarkdown(report, extras.section ?? '');
  const paths = writeGateReportFiles(report, markdown, place.reportDir);
  // The migration lines behind statements' work; the summary names those GitHub would not show.
  const annotations = capAnnotations(migrationAnnotations(report, options['fail-on-regression']), (file) =>
    repositoryPath(file, workspace),
  );
  await writeSummary(markdown + leftOutNote(annotations));
  const commentUrl = await publishComment(report, markdown, options, {
    api,
    repository: event.repository,
    pullRequest: event.pullRequest?.number,
  });
  setOutputs(report, paths, commentUrl, extras.overrides);
  printAnnotations(annotations.shown);
  const kind = report.verdict === 'pass' || report.verdict === 'regression' ? report.verdict : 'failed';
  return endStep(kind, report.headline, outcome.exitCode, outcome.error, options['fail-on-regression']);
}

/**
 * Sets the step's outputs from a report, each checked against what it may hold.
 * @param report the report
 * @param paths its files
 * @param commentUrl the PR comment, when there is one
 * @param overrides outputs that replace the report's
 */
export function setOutputs(
  report: GateReport,
  paths: ReportPaths | undefined,
  commentUrl: string | undefined,
  overrides: Record<string, string> = {},
): void {
  const outputs = checkedOutputs({ ...outputsOf(report, paths, commentUrl), ...overrides }, (message) => core.warning(message));
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, scrub(value));
}
