/**
 * One capacity run, in its phases: the workload, the base commit, the server and the templates
 * (sweep-setup.ts), the sweep, step by step, each replay on a fresh copy of its template
 * (sweep.ts: base and head interleaved, the side that goes first alternating per step), then the
 * knees and the verdict, with confirmation runs when base and head differ. Like the gate, it
 * always ends with a report, and removes whatever it created.
 */
import crypto from 'node:crypto';
import { ExitCode } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { changeUnderTest } from '../gate/ci-change.js';
import { releaseRun, toCliError } from '../gate/run-resources.js';
import { passwordOf, redact } from '../provision/url.js';
import type { Logger } from '../runtime/logger.js';
import type { RunContext, RunOutcome } from '../runtime/run-context.js';
import type { CapacityConfig } from './options.js';
import { CAPACITY_REPORT_VERSION, type CapacityReport } from './report-types.js';
import { Sweep, throwIfInterrupted } from './sweep.js';
import { checkOutSweepBase, readSweepWorkload, startSweepServer, type SweepHoldings, sweepsBase, sweepSources } from './sweep-setup.js';
import { decideCapacity } from './verdict.js';
import { toolInfo } from '../tool.js';

/**
 * Runs the sweep.
 * @param config validated options
 * @param context logger, progress, environment, interrupt
 * @returns the report and the exit status
 */
export async function runCapacity(config: CapacityConfig, context: RunContext): Promise<RunOutcome<CapacityReport>> {
  const { logger } = context;
  const startedAt = new Date();
  const report = emptyReport(config, startedAt);
  const finish = (): CapacityReport => {
    report.environment.wall_time_ms = Date.now() - startedAt.getTime();
    return report;
  };
  let stage = 'loading the workload';
  const held: SweepHoldings = { created: [] };
  const databases = { prefix: `pgc_${crypto.randomBytes(4).toString('hex')}`, created: held.created };
  try {
    const workload = await readSweepWorkload(config, report, logger);

    const change = changeUnderTest(context.env);
    const compare = sweepsBase(config, change);
    let baseRoot = context.cwd;
    const schema = config.schema;
    if (compare && schema!.kind === 'files' && schema!.base !== undefined) {
      report.environment.base = `files: ${schema!.base.join(', ')}`;
    } else if (compare) {
      stage = 'checking out the base commit';
      baseRoot = await checkOutSweepBase(config.baseRef ?? change!.baseRef, report, held, context);
    }
    throwIfInterrupted(context.signal);

    stage = 'starting PostgreSQL';
    const server = await startSweepServer(config, report, held, workload, logger);
    throwIfInterrupted(context.signal);

    if (config.schema !== null) stage = 'building the schemas';
    const sources = await sweepSources(config, report, { server, databases, compare, baseRoot }, context);

    stage = 'sweeping';
    const sweep = new Sweep(config, context, workload, server, sources, databases);
    await sweep.sweepAll();
    if (compare) await decideAgainstBase(config, report, sweep, logger);
    else reportOneSchema(report, sweep);
    warnFailedSessions(report);
    return { report: finish(), exitCode: report.verdict === 'fail' ? ExitCode.Regression : ExitCode.Ok };
  } catch (thrown) {
    const error = toCliError(thrown, stage);
    const message = held.server ? redact(error.message, passwordOf(held.server.url)) : error.message;
    report.verdict = 'error';
    report.headline = `error: ${stage} failed, no capacity verdict`;
    report.reasons = [message];
    report.error = { stage, message };
    return { report: finish(), exitCode: error.exitCode, error };
  } finally {
    await releaseRun(held.server, held.created, held.checkout, logger);
  }
}

/** The report of a sweep that has not run yet: its settings, and `error` until a verdict replaces it. */
function emptyReport(config: CapacityConfig, startedAt: Date): CapacityReport {
  const warnings: string[] = [];
  if (config.allowWrites) {
    warnings.push(
      'writes were replayed (--allow-writes): every step ran on a fresh copy of the schema, but within a step the scaled copies of each session write the same rows, so state multiplies and contention may be higher than in production',
    );
  }
  return {
    schema_version: CAPACITY_REPORT_VERSION,
    tool: toolInfo(),
    verdict: 'error',
    headline: '',
    reasons: [],
    warnings,
    error: null,
    settings: {
      connections: config.connections,
      scale: config.scale,
      class_scale: { ...config.classScale },
      speed: config.speed,
      read_only: !config.allowWrites,
      capacity_threshold: config.threshold,
      knee_rule: config.kneeRule,
      confirm_runs: config.confirmRuns,
    },
    environment: {
      server: null,
      server_version: null,
      max_connections: null,
      workload: { path: config.workload, sessions: 0, statements: 0, captured_rate: null },
      base: null,
      head: null,
      started_at: startedAt.toISOString(),
      wall_time_ms: 0,
    },
    sides: [],
    comparison: null,
  };
}

/** One schema (or database) swept: its knee, reported; nothing to gate. */
function reportOneSchema(report: CapacityReport, sweep: Sweep): void {
  const only = sweep.sideReport(sweep.sides[0]!, report.environment.workload.captured_rate);
  report.sides = [only];
  report.verdict = 'report';
  report.headline =
    only.knee.connections !== null
      ? `knee at ${only.knee.connections} connections (${only.knee.throughput!.toFixed(0)} statements/s)`
      : `no knee within the sweep; recommended at most ${only.knee.recommended_connections ?? '–'} connections`;
}

/**
 * Base and head swept: the capacity verdict, and when it fails, the steps it reads replayed again
 * on both sides and the verdict on the median runs.
 * @param config the sweep's options
 * @param report where the sides and the verdict go
 * @param sweep the sweep, to replay steps again
 * @param logger progress lines
 */
async function decideAgainstBase(config: CapacityConfig, report: CapacityReport, sweep: Sweep, logger: Logger): Promise<void> {
  const rate = report.environment.workload.captured_rate;
  let base = sweep.sideReport('base', rate);
  let head = sweep.sideReport('head', rate);
  let decided = decideCapacity(base, head, config.threshold);
  if (decided.verdict === 'fail' && config.confirmRuns > 0) {
    // One run per step can be unlucky on a shared machine: replay the steps the verdict
    // reads (both knees and the plateau it compares) again on both sides and decide on medians.
    const confirm = [
      ...new Set([base.knee.connections, head.knee.connections, ...decided.compared_steps].filter((c): c is number => c !== null)),
    ].sort((a, b) => a - b);
    logger.info(
      `capacity loss suspected: replaying ${confirm.join(', ')} connections ${plural(config.confirmRuns, 'more time')} per side to confirm`,
    );
    for (let round = 0; round < config.confirmRuns; round++) {
      for (const c of confirm)
        for (const side of round % 2 === 0 ? (['head', 'base'] as const) : (['base', 'head'] as const)) await sweep.step(side, c);
    }
    const suspected = decided.reasons.length;
    base = sweep.sideReport('base', rate);
    head = sweep.sideReport('head', rate);
    decided = decideCapacity(base, head, config.threshold);
    report.warnings.push(
      decided.verdict === 'fail'
        ? `the capacity loss was confirmed: steps ${confirm.join(', ')} were replayed ${config.confirmRuns} more times per side and the verdict is on the median runs`
        : `${plural(suspected, 'capacity rule')} fired on the first runs but not on the median of ${config.confirmRuns + 1} runs at steps ${confirm.join(', ')}: noise, not the PR`,
    );
  }
  report.sides = [base, head];
  report.verdict = decided.verdict;
  report.headline = decided.headline;
  report.reasons = decided.reasons;
  report.comparison = {
    compared_at: decided.compared_at,
    compared_steps: decided.compared_steps,
    throughput_change: decided.throughput_change,
  };
}

/** A warning for each side whose sessions failed to connect for another reason than the server's limit. */
function warnFailedSessions(report: CapacityReport): void {
  for (const side of report.sides) {
    const failed = side.steps.filter((s) => s.failed_sessions > 0);
    if (failed.length > 0)
      report.warnings.push(
        `${side.side}: sessions failed to connect for a reason other than "too many clients" at ${failed.map((s) => `${s.connections} connections (${s.failed_sessions})`).join(', ')}`,
      );
  }
}
