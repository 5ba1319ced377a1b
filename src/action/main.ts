/**
 * The action's main step. `mode: gate` runs the gate on this repository and reports it;
 * `mode: comment` posts the report of an earlier run (the fork-safe pattern); `mode: capacity`
 * sweeps concurrency (src/action/capacity-mode.ts); `shard: i/N` runs one part of a sharded gate
 * and `mode: aggregate` pools the parts into one report (src/action/shard-modes.ts). Effects happen in
 * a fixed order: report files, job summary, PR comment, outputs, the annotations on migration
 * lines (src/action/annotations.ts), and only then the verdict (src/action/gate-report.ts), so
 * a failing step always leaves its explanation behind. The verdict decides the exit status:
 * 0 pass, 1 regression (0 with `fail-on-regression: false`), 2 bad input, 3 infrastructure.
 *
 * Before anything else: the secrets are registered with the masker, the credentials are taken
 * out of the environment every started process inherits (src/action/child-env.ts), and a run
 * that would execute a PR's code with a write token in reach is refused (src/action/trust.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as core from '@actions/core';
import type { GateConfig } from '../gate/options.js';
import { ExitCode, InputError, exitCodeOf } from '../exit-codes.js';
import { runGate } from '../gate/run-gate.js';
import { exitCodeOfVerdict } from '../verdict/decide.js';
import type { GateReport } from '../verdict/report-types.js';
import { ENGINE_PLATFORMS, glibcVersion } from '../engine-platforms.mjs';
import { platformProblem } from '../engine/native.js';
import { parseReport } from '../report/index.js';
import { maskUrlsIn, passwordForms } from '../provision/url.js';
import { removeCredentials, RUNNER_TOKENS } from './child-env.js';
import { type EventInfo, readEvent } from './event.js';
import { createGitHubApi, type GitHubApi, type RetryPolicy } from './github-api.js';
import { type ActionOptions, inputReader, readActionOptions, readGateConfig } from './inputs.js';
import { addSecret, scrub, scrubDeep } from './logger.js';
import { capacityMode } from './capacity-mode.js';
import { baselineReport, baselineSection, compareWithBaseline } from './baseline.js';
import { ActionInput } from './names.js';
import { baselineOutputs } from './outputs.js';
import { publishComment, writeSummary } from './publish.js';
import { reportMarkdown } from './report-files.js';
import { setOutputs, showGateReport } from './gate-report.js';
import { aggregateMode, reportDirOf, shardMode } from './shard-modes.js';
import { inRunDir } from './state.js';
import { checkTrust } from './trust.js';
import { prose } from '../report/markdown-text.js';

export interface RunOptions {
  /** How rate-limited REST calls are retried (tests give a sleep that does not wait). */
  retry?: Partial<RetryPolicy>;
}

/**
 * Runs the main step.
 * @param env the runner's environment
 * @param options what tests change
 * @returns the exit status
 */
export async function run(env: NodeJS.ProcessEnv = process.env, { retry }: RunOptions = {}): Promise<ExitCode> {
  try {
    const read = inputReader(env);
    // Secrets first: nothing below may print them, not even in an error about another input.
    const tokens = [read(ActionInput.GithubToken), ...RUNNER_TOKENS.map((name) => env[name])];
    for (const token of tokens) addSecret(token);
    for (const url of ['database-url', 'base-database-url', 'head-database-url'])
      for (const form of passwordForms(read(url))) addSecret(form);
    // Then, before anything is started, the credentials out of what every child inherits.
    for (const target of new Set([env, process.env])) {
      const removed = removeCredentials(target, tokens);
      if (removed.length > 0) core.debug(`not passed on to the commands and programs this step starts: ${removed.join(', ')}`);
    }
    const options = readActionOptions(read);
    const event = readEvent(env);
    checkTrust(event, options.mode, options[ActionInput.AllowUntrustedPrCode]);
    const workspace = env.GITHUB_WORKSPACE || process.cwd();
    process.chdir(workspace);
    const api = createGitHubApi(env.GITHUB_API_URL || 'https://api.github.com', options[ActionInput.GithubToken] ?? '', retry);
    if (options.mode === 'comment') return await commentMode(options, event, api);
    if (options.mode === 'aggregate') {
      const place = { options, event, api, workspace, reportDir: reportDirOf(options, env) };
      return await aggregateMode(place, options[ActionInput.Partials]);
    }
    checkPlatform();
    if (options.mode === 'capacity') return await capacityMode(read, options, event, api, env, workspace);
    return await gateMode(read, options, event, api, env, workspace);
  } catch (error) {
    const message = maskUrlsIn(scrub(error instanceof Error ? error.message : String(error)));
    // The summary is the one place every run leaves its outcome, also when nothing ran.
    await writeSummary(`### ❌ pg-retest: error\n\n${prose(message)}\n`);
    core.setFailed(message);
    return exitCodeOf(error);
  }
}

async function gateMode(
  read: (name: string) => string,
  options: ActionOptions,
  event: EventInfo,
  api: GitHubApi,
  env: NodeJS.ProcessEnv,
  workspace: string,
): Promise<ExitCode> {
  let config = readGateConfig(read);
  const baselineFile = usesBaseline(config, event, options) ? options['baseline-report']! : undefined;
  const baseline = baselineFile === undefined ? undefined : readBaseline(baselineFile);
  // Against a baseline report, this run measures the current commit on both sides (an A/A
  // run): the numbers to hold against the report, and this run's own noise floor.
  if (baselineFile !== undefined) config = sameCommitOnBothSides(config);
  else requireBase(config, event);
  // Decided before the run directory becomes TMPDIR: the reports must outlive it.
  const reportDir = reportDirOf(options, env);
  if (config.shard) return await shardMode(config, config.shard, { env, workspace, reportDir });
  const outcome = await inRunDir(env, workspace, (context) => runGate(config, context));
  const place = { options, event, api, workspace, reportDir };
  const { report } = outcome;
  if (baseline !== undefined && baselineFile !== undefined && report.comparison !== null && report.verdict !== 'error') {
    const result = compareWithBaseline(report, baseline, baselineFile);
    const compared = baselineReport(report, result, baseline, baselineFile);
    return showGateReport({ report: compared, exitCode: exitCodeOfVerdict(compared.verdict) }, place, {
      section: baselineSection(result),
      overrides: baselineOutputs(result),
    });
  }
  return showGateReport(outcome, place);
}

/**
 * Before anything is started: on a machine whose engine dist/ does not carry, say so in one line
 * (macOS has an engine, but as an npm package only).
 */
function checkPlatform(): void {
  const problem = platformProblem(
    process.platform,
    process.arch,
    glibcVersion(),
    ENGINE_PLATFORMS.filter((entry) => entry.dist),
  );
  if (problem) throw new InputError(`${problem} in the action; use runs-on: ubuntu-24.04 or ubuntu-24.04-arm (or an Alpine container job)`);
}

async function commentMode(options: ActionOptions, event: EventInfo, api: GitHubApi): Promise<ExitCode> {
  const file = options.report;
  if (file === undefined)
    throw new InputError(
      'input `report` is required with mode: comment: the JSON report (json-report-path) of the gate run, e.g. from a downloaded artifact',
    );
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new InputError(`input \`report\`: cannot read ${file}; check the path of the downloaded artifact`);
  }
  const report = scrubDeep(parseReport(text, file));
  // The summary first: a PR that cannot be looked up must not cost the report its one sure place.
  const markdown = reportMarkdown(report);
  await writeSummary(markdown);
  const pr = await pullRequestOf(event, api);
  const commentUrl = await publishComment(report, markdown, options, { api, repository: event.repository, pullRequest: pr });
  setOutputs(report, { markdown: '', json: path.resolve(file), junit: '' }, commentUrl);
  // The gate's own job is the check that passes or fails; this one only posts.
  return ExitCode.Ok;
}

/**
 * The PR a workflow_run was for: from the event (GitHub fills `pull_requests` for branches of
 * this repository), else the open PR whose head is the run's branch at the run's commit (fork
 * PRs, for which the event's list is empty).
 */
async function pullRequestOf(event: EventInfo, api: GitHubApi): Promise<number | undefined> {
  if (event.pullRequest) return event.pullRequest.number;
  const run = event.workflowRun;
  if (!run)
    throw new InputError(`mode: comment runs on a workflow_run (or pull_request) event, not on ${event.name || 'an unknown event'}`);
  const listed = run.pullRequests.find((p) => p.headSha === run.headSha);
  if (listed) return listed.number;
  let open: Awaited<ReturnType<GitHubApi['pullRequestsForHead']>>;
  try {
    open = await api.pullRequestsForHead(event.repository, `${run.headOwner}:${run.headBranch}`);
  } catch (error) {
    // Posting is this job's only work, and a comment that cannot be written is a warning.
    core.warning(
      `cannot look up the pull request of ${run.headOwner}:${run.headBranch}: ${error instanceof Error ? error.message : String(error)}; the report is in the job summary`,
    );
    return undefined;
  }
  const match = open.find((p) => p.head.sha === run.headSha);
  if (!match)
    core.info(
      `no open pull request has ${run.headOwner}:${run.headBranch} at ${run.headSha.slice(0, 12)} as its head: nothing to comment on`,
    );
  return match?.number;
}

/** Whether a base is given: the PR's, base-ref or base-migrations. */
function hasBase(config: GateConfig, event: EventInfo): boolean {
  if (event.pullRequest || config.baseRef !== undefined) return true;
  return config.schema.kind === 'files' && config.schema.base !== undefined;
}

/** A baseline report counts only where there is no base to replay: a base always wins. */
function usesBaseline(config: GateConfig, event: EventInfo, options: ActionOptions): boolean {
  if (options['baseline-report'] === undefined) return false;
  if (hasBase(config, event)) {
    core.info('baseline-report is ignored: this run has a base commit to replay (the pull request, base-ref or base-migrations)');
    return false;
  }
  return true;
}

/** Without a pull request there is no default base: say which input gives one. */
function requireBase(config: GateConfig, event: EventInfo): void {
  if (hasBase(config, event)) return;
  throw new InputError(
    `input \`base-ref\`: a ${event.name || 'non-pull_request'} event has no pull request to take the base commit from; ` +
      'set base-ref (e.g. ${{ github.event.before }} on push), base-migrations, or baseline-report (the JSON report of an earlier run)',
  );
}

function readBaseline(file: string): GateReport {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new InputError(`input \`baseline-report\`: cannot read ${file}; give the JSON report (json-report-path) of an earlier run`);
  }
  const report = parseReport(text, file);
  if (report.comparison === null) {
    throw new InputError(
      `input \`baseline-report\`: ${file} has no comparison (its run ended with ${report.verdict}); give the report of a run that measured`,
    );
  }
  return report;
}

/** The same schema on both sides: the working tree's migrations (or command) twice. */
function sameCommitOnBothSides(config: GateConfig): GateConfig {
  if (config.schema.kind === 'files') return { ...config, schema: { ...config.schema, base: config.schema.head } };
  return { ...config, baseRef: 'HEAD' };
}
