/**
 * The action's side of a sharded run (docs/scale-out.md). With `shard: i/N` the gate replays one
 * part of the workload and writes its partial report (output `json-report-path`, for an
 * `actions/upload-artifact` step): it shows its part in the job summary, posts no comment, and
 * fails the step only when the shard could not measure (a regression is the aggregate's to
 * judge). `mode: aggregate` reads the partial reports (`partials`, after
 * `actions/download-artifact`) and reports the run as the gate reports one: files, summary,
 * sticky comment, outputs, then the verdict.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as core from '@actions/core';
import { type ExitCode, ExitCode as Codes } from '../exit-codes.js';
import type { GateConfig } from '../gate/options.js';
import type { ShardSpec } from '../gate/shard-option.js';
import { aggregatePartials } from '../shards/aggregate.js';
import { partialJson } from '../shards/partial.js';
import { partialFiles } from '../shards/partial-files.js';
import { runShard } from '../shards/run-shard.js';
import { endStep } from './end-step.js';
import { type ReportPlace, setOutputs, showGateReport } from './gate-report.js';
import type { ActionOptions } from './inputs.js';
import { actionLogger, scrub, scrubDeep } from './logger.js';
import { reportMarkdown } from './report-files.js';
import { writeSummary } from './publish.js';
import { inRunDir } from './state.js';

/**
 * Where a mode's report files go: `report-dir`, else a directory of the comment id under RUNNER_TEMP.
 * @param options the action's options
 * @param env the runner's environment
 * @returns an absolute path
 */
export function reportDirOf(options: ActionOptions, env: NodeJS.ProcessEnv): string {
  return path.resolve(options['report-dir'] ?? path.join(env.RUNNER_TEMP || os.tmpdir(), 'pg-retest-action', options['comment-id']));
}

/**
 * One shard: its part replayed, its partial report written.
 * @param config the gate's inputs
 * @param shard which part
 * @param where the environment, the workspace and the report directory
 * @returns 0 when the shard measured its part, the failure's status when it could not
 */
export async function shardMode(
  config: GateConfig,
  shard: ShardSpec,
  where: { env: NodeJS.ProcessEnv; workspace: string; reportDir: string },
): Promise<ExitCode> {
  const outcome = await inRunDir(where.env, where.workspace, (context) => runShard(config, shard, context));
  const partial = outcome.report.partial ? scrubDeep(outcome.report.partial) : null;
  if (partial) {
    fs.mkdirSync(where.reportDir, { recursive: true });
    const file = path.join(where.reportDir, `pg-retest-partial-${shard.index}-of-${shard.count}.json`);
    fs.writeFileSync(file, partialJson(partial));
    await writeSummary(
      `${reportMarkdown(partial.report)}\n_Shard ${shard.index} of ${shard.count}: its part of the workload only; the aggregate job gives the verdict._\n`,
    );
    setOutputs(partial.report, { markdown: '', json: file, junit: '' }, undefined);
  } else {
    await writeSummary(`### ❌ pg-retest: shard ${shard.index}/${shard.count} failed\n\n${scrub(outcome.report.headline)}\n`);
  }
  if (outcome.exitCode === Codes.Ok) {
    core.info(scrub(outcome.report.headline));
    return Codes.Ok;
  }
  return endStep('failed', outcome.report.headline, outcome.exitCode, outcome.error, true);
}

/**
 * The aggregate: the partial reports pooled and reported as one gate run.
 * @param place where the report goes
 * @param patterns the `partials` input: paths or globs
 * @returns the verdict's exit status
 */
export async function aggregateMode(place: ReportPlace, patterns: readonly string[]): Promise<ExitCode> {
  const files = await partialFiles(patterns, place.workspace, 'input `partials`');
  return showGateReport(aggregatePartials(files, actionLogger), place);
}
