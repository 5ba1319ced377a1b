/**
 * `mode: capacity`: the sweep (src/capacity/run-sweep.ts) on this repository, reported like the
 * gate (report files, job summary, PR comment, outputs, then the verdict). On a pull_request
 * event the PR's base commit is swept too and the capacity gate decides; elsewhere, without
 * `base-ref` or `base-migrations`, one schema is swept and reported (result `report`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as core from '@actions/core';
import { renderCapacityMarkdown } from '../capacity/markdown.js';
import { type CapacityReport, capacityJson } from '../capacity/report-types.js';
import { runCapacity } from '../capacity/run-sweep.js';
import { renderCapacitySvg } from '../capacity/svg.js';
import type { ExitCode } from '../exit-codes.js';
import { endStep } from './end-step.js';
import type { EventInfo } from './event.js';
import type { GitHubApi } from './github-api.js';
import { type ActionOptions, type InputReader, readCapacityConfig } from './inputs.js';
import { scrub, scrubDeep } from './logger.js';
import { Output } from './names.js';
import { checkedOutputs } from './outputs.js';
import { publishComment, writeSummary } from './publish.js';
import { inRunDir } from './state.js';
import { writeReportFiles } from '../runtime/report-files.js';

/** The sticky comment's id when none is given: not the gate's, so both can live on one PR. */
const DEFAULT_COMMENT_ID = 'capacity';

/**
 * Runs the sweep and reports it.
 * @returns the exit status: 0 (a sweep, or the gate passed), 1 (the PR lowers capacity, unless fail-on-regression is false), 2, 3
 */
export async function capacityMode(
  read: InputReader,
  options: ActionOptions,
  event: EventInfo,
  api: GitHubApi,
  env: NodeJS.ProcessEnv,
  workspace: string,
): Promise<ExitCode> {
  const config = readCapacityConfig(read);
  const commentId = options['comment-id'] === 'default' ? DEFAULT_COMMENT_ID : options['comment-id'];
  const reportDir = path.resolve(options['report-dir'] ?? path.join(env.RUNNER_TEMP || os.tmpdir(), 'pg-retest-action', commentId));
  const outcome = await inRunDir(env, workspace, (context) => runCapacity(config, context));
  const { exitCode, error } = outcome;
  // Uploaded as artifacts: masked as the log is.
  const report = scrubDeep(outcome.report);
  const markdown = renderCapacityMarkdown(report);
  const paths = writeFiles(report, markdown, reportDir);
  await writeSummary(markdown);
  const gateVerdict = report.verdict === 'fail' ? 'regression' : report.verdict === 'error' ? 'error' : 'pass';
  const commentUrl = await publishComment(
    { verdict: gateVerdict },
    markdown,
    { ...options, 'comment-id': commentId },
    {
      api,
      repository: event.repository,
      pullRequest: event.pullRequest?.number,
    },
  );
  const outputs = checkedOutputs(capacityOutputs(report, paths, commentUrl), (message) => core.warning(message));
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, scrub(value));

  const kind = report.verdict === 'pass' || report.verdict === 'report' ? 'pass' : report.verdict === 'fail' ? 'regression' : 'failed';
  return endStep(kind, report.headline, exitCode, error, options['fail-on-regression']);
}

interface CapacityPaths {
  markdown: string;
  json: string;
  svg: string;
}

function writeFiles(report: CapacityReport, markdown: string, dir: string): CapacityPaths {
  fs.mkdirSync(dir, { recursive: true });
  const paths = {
    markdown: path.join(dir, 'pg-retest-capacity.md'),
    json: path.join(dir, 'pg-retest-capacity.json'),
    // A chart needs at least one swept side; an early error has none.
    svg: report.sides.length > 0 ? path.join(dir, 'pg-retest-capacity.svg') : '',
  };
  const askedAs = 'input report-dir';
  writeReportFiles(
    [
      { askedAs, path: paths.markdown, render: () => markdown },
      { askedAs, path: paths.json, render: capacityJson },
      { askedAs, path: paths.svg || undefined, render: renderCapacitySvg },
    ],
    report,
  );
  return paths;
}

/**
 * The outputs of a capacity run.
 * @returns `result` is pass, regression (the PR lowers capacity), report (one schema swept) or error
 */
export function capacityOutputs(report: CapacityReport, paths: CapacityPaths, commentUrl: string | undefined): Record<string, string> {
  const swept = report.sides.find((s) => s.side === 'head') ?? report.sides[0];
  const change = report.comparison?.throughput_change;
  return {
    [Output.Result]: report.verdict === 'fail' ? 'regression' : report.verdict,
    [Output.ReportPath]: paths.markdown,
    [Output.JsonReportPath]: paths.json,
    [Output.CapacitySvgPath]: paths.svg,
    [Output.CommentUrl]: commentUrl ?? '',
    [Output.KneeConnections]: swept?.knee.connections != null ? String(swept.knee.connections) : '',
    [Output.CapacityChangePct]: change != null ? String(Math.round(change * 1000) / 10) : '',
  };
}
