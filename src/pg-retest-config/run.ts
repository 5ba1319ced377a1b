/**
 * `run --config .pg-retest.toml`: what pg-retest's pipeline does — get the workload (a file, or
 * captured from a log), replay it, judge the thresholds, write the reports — with this tool's
 * engine and rules: a target that cannot be reached or a session that never ran is an error
 * (exit 3), never a pass; regressions are judged against a baseline replay, never against the
 * durations recorded at capture; and A/B mode is a gate that can fail.
 *
 * Always ends with a report, whatever failed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fromEngineError } from '../engine/errors.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import { captureWorkload, type ReplayReport, type Workload } from '../engine/index.js';
import { ExitCode, InfraError, InputError, InterruptedError } from '../exit-codes.js';
import { oneLine } from '../format/table.js';
import { plural } from '../format/units.js';
import { toCliError } from '../gate/run-resources.js';
import { loadGateWorkload } from '../gate/preflight.js';
import type { RunContext, RunOutcome } from '../runtime/run-context.js';
import type { Verdict } from '../verdict/report-types.js';
import { exitCodeOfVerdict } from '../verdict/decide.js';
import { passwordOf, redact } from '../provision/url.js';
import { checkLimits, checkRegressionCount, regressionCountNotEvaluated, sideFigures } from './limits.js';
import type { RunPlan } from './plan.js';
import { RUN_REPORT_SCHEMA_VERSION, type RunReport } from './report-types.js';
import { replaySingleTarget } from './single-target.js';
import { gateVariants } from './variants.js';
import { toolInfo } from '../tool.js';

/** The share of the runnable statements a single-target replay must execute for a pass (the gate's min-coverage). */
const MIN_COVERAGE = 0.95;

type Stage = 'workload' | 'replay' | 'variants';

/**
 * Runs a planned pipeline.
 * @param plan the resolved config
 * @param context logger, progress, environment, interrupt
 * @returns the report and the exit status
 */
export async function runPipeline(plan: RunPlan, context: RunContext): Promise<RunOutcome<RunReport>> {
  const { logger } = context;
  const startedAt = new Date();
  const report: RunReport = {
    schema_version: RUN_REPORT_SCHEMA_VERSION,
    tool: toolInfo(),
    command: 'run',
    config: { file: plan.config.file, mode: plan.mode, keys: [] },
    verdict: 'error',
    headline: '',
    reasons: [],
    error: null,
    warnings: [...plan.warnings],
    thresholds: [],
    workload: null,
    target: null,
    replay: null,
    variants: null,
    started_at: startedAt.toISOString(),
    wall_time_ms: 0,
  };
  const finish = (): RunReport => {
    report.config.keys = plan.config.given.map((g) => ({ key: g.key, value: g.value, understood: plan.notes.get(g.key) ?? 'as given' }));
    report.wall_time_ms = Date.now() - startedAt.getTime();
    return report;
  };
  for (const warning of plan.warnings) logger.info(`warning: ${warning}`);

  let stage: Stage = 'workload';
  let scratch: string | undefined;
  try {
    const source = plan.workload;
    if (source.kind === 'capture') scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-run-'));
    const { workload, info } = await obtainWorkload(source, scratch);
    report.workload = info;
    report.warnings.push(...workload.warnings, ...(info.capture?.warnings ?? []).map((w) => `capture of ${info.path}: ${w}`));
    logger.info(`workload ${info.path}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);

    const notReached: string[] = [];
    if (plan.mode === 'single-target') {
      stage = 'replay';
      const result = await replaySingleTarget(plan.target!, workload, plan.replay, context, (key, text) => plan.notes.set(key, text));
      report.target = result.target;
      report.replay = replaySummary(result.report);
      if (result.target.restore && result.target.restore.error_count > 0) {
        const r = result.target.restore;
        report.warnings.push(
          `restore_from ${r.file}: ${plural(r.error_count, 'statement')} failed and psql went on (as pg-retest does); first: ${r.errors[0]}`,
        );
      }
      const outcome = replayOutcome(result.report);
      if (outcome.problem) {
        if (outcome.exitCode === ExitCode.Interrupted) throw new InterruptedError(outcome.problem);
        const secret = plan.target!.kind === 'url' ? passwordOf(plan.target!.url) : undefined;
        throw new InfraError(redact(`the replay against ${result.target.description}: ${outcome.problem}`, secret));
      }
      report.thresholds.push(...checkLimits(plan.limits, sideFigures([result.report]), null));
      if (plan.regressionMaxCount !== undefined) report.thresholds.push(regressionCountNotEvaluated(plan.regressionMaxCount));
      if (report.replay.executed_share < MIN_COVERAGE) {
        notReached.push(
          `only ${(report.replay.executed_share * 100).toFixed(1)} % of the captured statements executed (a pass needs ${MIN_COVERAGE * 100} %): ` +
            `${describeSkipped(result.report)}; what did not run was not measured`,
        );
      }
    } else {
      stage = 'variants';
      const candidates = await gateVariants(
        {
          variants: plan.variants,
          workload,
          workloadPath: report.workload.path,
          replay: plan.replay,
          p95Threshold: plan.p95Threshold,
          regressionMaxCount: plan.regressionMaxCount,
        },
        context,
      );
      report.variants = { baseline: plan.variants[0]!.label, candidates: candidates.map((c) => ({ label: c.label, report: c.report })) };
      for (const c of candidates) {
        report.thresholds.push(...checkLimits(plan.limits, sideFigures(c.replays), c.label));
        if (plan.regressionMaxCount !== undefined) {
          const slower = c.report.comparison?.fingerprints.filter((f) => f.regressed) ?? [];
          report.thresholds.push(checkRegressionCount(plan.regressionMaxCount, slower, c.label));
        }
      }
    }
    const decided = decide(report, notReached);
    report.verdict = decided.verdict;
    report.headline = decided.headline;
    report.reasons = decided.reasons;
    const exitCode = exitCodeOfVerdict(decided.verdict);
    const error = decided.verdict === 'error' ? new InfraError(decided.reasons[0] ?? decided.headline) : undefined;
    if (error) report.error = { stage, message: error.message };
    return { report: finish(), exitCode, error };
  } catch (thrown) {
    const error = toCliError(thrown, stage === 'workload' ? 'getting the workload' : 'replaying');
    report.verdict = 'error';
    report.headline = `error: ${{ workload: 'getting the workload', replay: 'the replay', variants: 'comparing the variants' }[stage]} failed`;
    report.reasons = [error.message];
    report.error = { stage, message: error.message };
    return { report: finish(), exitCode: error.exitCode, error };
  } finally {
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The workload file, or the log captured into one in `scratch`.
 * @returns the loaded workload and what the report says of it
 */
async function obtainWorkload(
  source: RunPlan['workload'],
  scratch: string | undefined,
): Promise<{ workload: Workload; info: NonNullable<RunReport['workload']> }> {
  if (source.kind === 'file') {
    const workload = await loadWorkloadFor(source.path, 'file');
    return {
      workload,
      info: { path: source.path, source: 'file', sessions: workload.sessions, statements: workload.statements, capture: null },
    };
  }
  const file = path.join(scratch!, 'captured.wkl');
  const summary = await capture(source, file);
  const workload = await loadWorkloadFor(file, 'capture');
  return {
    workload,
    info: { path: source.log, source: 'capture', sessions: workload.sessions, statements: workload.statements, capture: summary },
  };
}

async function capture(
  source: Extract<RunPlan['workload'], { kind: 'capture' }>,
  output: string,
): Promise<NonNullable<NonNullable<RunReport['workload']>['capture']>> {
  if (!fs.existsSync(source.log) || !fs.statSync(source.log).isFile()) {
    throw new InputError(`[capture] source_log: file ${source.log} does not exist; check the path (relative to ${process.cwd()})`);
  }
  try {
    const summary = await captureWorkload({ logs: [source.log], output, sourceHost: source.sourceHost, pgVersion: source.pgVersion });
    return {
      log: source.log,
      statements: summary.statements,
      failed_statements: summary.failed_statements,
      excluded: summary.excluded,
      warnings: summary.warnings,
    };
  } catch (error) {
    const mapped = fromEngineError(error);
    throw mapped instanceof InputError ? new InputError(`[capture] source_log: ${mapped.message}`) : mapped;
  }
}

async function loadWorkloadFor(file: string, kind: 'file' | 'capture'): Promise<Workload> {
  try {
    return await loadGateWorkload(file);
  } catch (error) {
    if (kind === 'file' && error instanceof InputError)
      throw new InputError(error.message.replace(/^option --workload/, '[capture] workload'));
    throw error;
  }
}

function replaySummary(r: ReplayReport): NonNullable<RunReport['replay']> {
  const readOnly = r.totals.skipped_by_reason.read_only ?? 0;
  const runnable = r.totals.captured - readOnly;
  return {
    status: r.status,
    wall_time_ms: Math.round(r.wall_time_us / 1000),
    sessions_planned: r.sessions_planned,
    sessions_completed: r.sessions_completed,
    totals: r.totals,
    latency: r.latency,
    executed_share: runnable <= 0 ? 1 : r.totals.executed / runnable,
    slowest: [...r.fingerprints]
      .filter((f) => f.latency.count > 0)
      .sort((a, b) => b.latency.p95_us - a.latency.p95_us)
      .slice(0, 10)
      .map((f) => ({
        fingerprint: f.fingerprint,
        normalized: f.normalized,
        calls: f.counts.executed,
        p95_us: f.latency.p95_us,
        errors: f.counts.errors,
      })),
  };
}

function describeSkipped(r: ReplayReport): string {
  const parts = Object.entries({ ...r.totals.skipped_by_reason, ...r.totals.not_executed_by_reason })
    .filter(([reason, n]) => reason !== 'read_only' && (n ?? 0) > 0)
    .map(([reason, n]) => `${plural(n ?? 0, 'statement')} ${reason.replaceAll('_', ' ')}`);
  return parts.join(', ') || 'statements were not sent';
}

/**
 * The verdict: regression when a threshold failed or a candidate regressed; inconclusive when
 * something asked for could not be measured; else pass.
 */
function decide(report: RunReport, notReached: string[]): { verdict: Verdict; headline: string; reasons: string[] } {
  const failed = report.thresholds.filter((t) => t.status === 'failed');
  const reasons = failed.map((t) => t.message);
  const candidates = report.variants?.candidates ?? [];
  const errored = candidates.find((c) => c.report.verdict === 'error');
  if (errored) {
    return {
      verdict: 'error',
      headline: `error: '${errored.label}' could not be compared: ${errored.report.headline}`,
      reasons: errored.report.reasons,
    };
  }
  const regressed = candidates.filter((c) => c.report.verdict === 'regression');
  for (const c of regressed) reasons.push(...c.report.reasons.map((r) => `'${c.label}' against '${report.variants!.baseline}': ${r}`));
  if (reasons.length > 0) {
    const parts = [];
    if (failed.length > 0)
      parts.push(`${plural(failed.length, 'threshold')} exceeded (${[...new Set(failed.map((t) => t.name))].join(', ')})`);
    if (regressed.length > 0)
      parts.push(
        `${regressed.map((c) => `'${c.label}'`).join(', ')} regressed against '${report.variants!.baseline}': ${regressed.map((c) => c.report.headline.replace(/^regression: /, '')).join('; ')}`,
      );
    // One finding is its own headline: the limit and the measured value, or the query.
    return { verdict: 'regression', headline: `regression: ${reasons.length === 1 ? reasons[0] : parts.join('; ')}`, reasons };
  }
  const unmeasured = [
    ...report.thresholds.filter((t) => t.status === 'not_evaluated').map((t) => t.message),
    ...notReached,
    ...candidates.filter((c) => c.report.verdict === 'inconclusive').map((c) => `'${c.label}': ${c.report.headline}`),
  ];
  if (unmeasured.length > 0)
    return { verdict: 'inconclusive', headline: `inconclusive: ${oneLine(unmeasured[0]!, 300)}`, reasons: unmeasured };
  const judged = report.thresholds.filter((t) => t.status === 'passed');
  const what = [
    ...(judged.length > 0 ? [`${plural(judged.length, 'threshold')} met`] : []),
    ...candidates.map((c) => `'${c.label}' against '${report.variants!.baseline}': ${c.report.headline.replace(/^pass: /, '')}`),
  ];
  return { verdict: 'pass', headline: `pass: ${what.join('; ') || 'no thresholds configured, the replay completed'}`, reasons: [] };
}
