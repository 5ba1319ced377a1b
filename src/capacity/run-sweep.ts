/**
 * One capacity run: workload → server → schema template(s) → the sweep, step by step, each
 * replay on a fresh copy of its template (base and head interleaved, the side that goes first
 * alternating per step) → knees → verdict, with confirmation runs when base and head differ.
 * Like the gate, it always ends with a report, and removes whatever it created.
 */
import crypto from 'node:crypto';
import packageJson from '../../package.json' with { type: 'json' };
import { largestFactor } from '../options/class-scale-options.js';
import type { ReplayReport, Workload } from '../engine/index.js';
import { CliError, ExitCode, InfraError, InterruptedError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { checkSeed, loadGateWorkload } from '../gate/preflight.js';
import type { RunContext } from '../runtime/run-context.js';
import { changeUnderTest } from '../gate/ci-change.js';
import { replayOnce } from '../gate/replay-once.js';
import { releaseRun, toCliError } from '../gate/run-resources.js';
import { createDatabase, dropDatabase, runStatements } from '../provision/database.js';
import type { Server } from '../provision/index.js';
import { serverForRun } from '../provision/run-server.js';
import { passwordOf, redact, replayUrl } from '../provision/url.js';
import { type Checkout, checkoutBase } from '../templates/base-checkout.js';
import { buildTemplates, runTemplateInputs } from '../templates/build.js';
import { findKnee } from './knee.js';
import { combineRuns, type StepMetrics, type StepRun, stepRun } from './metrics.js';
import type { CapacityConfig } from './options.js';
import { CAPACITY_REPORT_VERSION, type CapacityReport, type CapacitySideReport, type SideName } from './report-types.js';
import { decideCapacity } from './verdict.js';

export interface CapacityOutcome {
  report: CapacityReport;
  exitCode: ExitCode;
  error?: CliError;
}

/** Where each side's replays run: a template to copy, or the user's database as it is. */
type Source = { kind: 'template'; name: string } | { kind: 'database'; url: string };

/**
 * Runs the sweep.
 * @param config validated options
 * @param context logger, progress, environment, interrupt
 * @returns the report and the exit status
 */
export async function runCapacity(config: CapacityConfig, context: RunContext): Promise<CapacityOutcome> {
  const { logger } = context;
  const startedAt = new Date();
  const warnings: string[] = [];
  const report: CapacityReport = {
    schema_version: CAPACITY_REPORT_VERSION,
    tool: { name: 'pg-retest-action', version: packageJson.version },
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
  const finish = (): CapacityReport => {
    report.environment.wall_time_ms = Date.now() - startedAt.getTime();
    return report;
  };
  if (config.allowWrites) {
    warnings.push('writes were replayed (--allow-writes): every step ran on a fresh copy of the schema, but within a step the scaled copies of each session write the same rows, so state multiplies and contention may be higher than in production');
  }

  let stage = 'loading the workload';
  let server: Server | undefined;
  let checkout: Checkout | undefined;
  const prefix = `pgc_${crypto.randomBytes(4).toString('hex')}`;
  const created: string[] = [];
  try {
    const workload = await loadGateWorkload(config.workload);
    const summary = workload.summary(0);
    const replayed = config.allowWrites ? summary.statements : summary.statements - summary.writes;
    report.environment.workload = {
      path: config.workload,
      sessions: workload.sessions,
      statements: workload.statements,
      captured_rate: summary.duration_us > 0 ? replayed / (summary.duration_us / 1e6) : null,
    };
    logger.info(`workload ${config.workload}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);
    warnings.push(...workload.warnings);
    if (!config.allowWrites && summary.writes > 0) {
      logger.info(`read-only sweep: ${plural(summary.writes, 'statement')} that can change data are skipped at every step (--allow-writes replays them)`);
    }
    checkSeed(config);

    const pr = changeUnderTest(context.env);
    const compare = config.schema !== null && (config.compare || pr !== undefined);
    let baseRoot = context.cwd;
    if (compare && config.schema!.kind === 'files' && config.schema!.base !== undefined) {
      report.environment.base = `files: ${config.schema!.base.join(', ')}`;
    } else if (compare) {
      stage = 'checking out the base commit';
      const ref = config.baseRef ?? pr!.baseRef;
      checkout = await checkoutBase(ref, context.cwd);
      baseRoot = checkout.root;
      report.environment.base = `${ref} (${checkout.sha.slice(0, 12)})`;
      logger.info(`base: ${ref} (${checkout.sha.slice(0, 12)}) checked out in ${checkout.root}`);
    }
    throwIfAborted(context.signal);

    stage = 'starting PostgreSQL';
    server = await serverForRun(config.target, {
      sessions: workload.sessions * largestFactor(config.scale, config.classScale),
      maxConnections: Math.max(...config.connections),
      // As in the gate: autovacuum waking during one step and not another is noise.
      settings: { autovacuum: 'off', ...config.postgresConfig },
      logger,
    });
    const serverUrl = server.url;
    const started = server;
    report.environment.server = server.description;
    report.environment.server_version = server.version;
    const shown = await runStatements(serverUrl, 'cannot read max_connections', ['SHOW max_connections']);
    report.environment.max_connections = Number(shown.rows[0]?.max_connections) || null;
    const over = config.connections.filter((c) => report.environment.max_connections !== null && c > report.environment.max_connections);
    if (over.length > 0) {
      logger.info(`the server allows ${report.environment.max_connections} connections: steps ${over.join(', ')} are above it, refused sessions will be counted`);
    }
    throwIfAborted(context.signal);

    const sources = new Map<SideName, Source>();
    if (config.schema === null) {
      sources.set('database', { kind: 'database', url: serverUrl });
      report.environment.head = 'the database behind --database-url, as it is';
    } else {
      stage = 'building the schemas';
      created.push(`${prefix}_base`, `${prefix}_head`);
      const source = compare ? config.schema : { ...config.schema, ...(config.schema.kind === 'files' ? { base: config.schema.head } : {}) };
      const templates = await buildTemplates(runTemplateInputs({ serverUrl, prefix, source, baseRoot }, config, context));
      if (templates.head === null) {
        const failure = templates.failure!;
        throw new InfraError(`head's migration ${failure.name} fails${failure.line ? ` at line ${failure.line}` : ''}: ${failure.message}; fix it, then measure capacity`);
      }
      report.environment.head = config.schema.kind === 'files' ? `files: ${config.schema.head.join(', ')}` : `migrate-command: ${config.schema.command}`;
      if (compare) {
        sources.set('base', { kind: 'template', name: templates.base });
        sources.set('head', { kind: 'template', name: templates.head });
      } else {
        sources.set('schema', { kind: 'template', name: templates.head });
      }
    }

    stage = 'sweeping';
    const runs = new Map<SideName, Map<number, StepRun[]>>([...sources.keys()].map((side) => [side, new Map()]));
    let replayCount = 0;
    const runStep = async (side: SideName, connections: number): Promise<void> => {
      throwIfAborted(context.signal);
      const source = sources.get(side)!;
      const name = `${prefix}_s${++replayCount}`;
      let url: string;
      if (source.kind === 'template') {
        created.push(name);
        url = await createDatabase(serverUrl, name, source.name);
      } else {
        url = source.url;
      }
      logger.info(`${side}: ${connections} connections (replay ${replayCount})`);
      const result = stepRun(await replayStep(config, workload, replayUrl(started, url), connections, context));
      if (source.kind === 'template') {
        await dropDatabase(serverUrl, name);
        created.pop();
      }
      const perStep = runs.get(side)!;
      perStep.set(connections, [...(perStep.get(connections) ?? []), result]);
      logger.info(
        `  ${result.throughput.toFixed(0)} statements/s, p95 ${(result.p95_us / 1000).toFixed(2)} ms, ${plural(result.errors, 'error')}, ${plural(result.refused_sessions, 'refused session')}`,
      );
    };
    const sides = [...sources.keys()];
    for (const [index, connections] of config.connections.entries()) {
      // Alternate which side goes first, so a drift over the run hits both alike.
      for (const side of index % 2 === 0 ? sides : [...sides].reverse()) await runStep(side, connections);
    }

    const sideReport = (side: SideName): CapacitySideReport => {
      const steps: StepMetrics[] = config.connections.map((c) => combineRuns(c, runs.get(side)!.get(c)!));
      const knee = findKnee(steps, config.kneeRule);
      const rate = report.environment.workload.captured_rate;
      const ref = knee.connections ?? knee.recommended_connections;
      return {
        side,
        steps,
        knee,
        headroom_to_knee: knee.throughput !== null && rate ? knee.throughput / rate : null,
        headroom_to_refusal: knee.refusal_connections !== null && ref !== null ? knee.refusal_connections / ref : null,
      };
    };

    if (!compare) {
      const only = sideReport(sides[0]!);
      report.sides = [only];
      report.verdict = 'report';
      report.headline =
        only.knee.connections !== null
          ? `knee at ${only.knee.connections} connections (${only.knee.throughput!.toFixed(0)} statements/s)`
          : `no knee within the sweep; recommended at most ${only.knee.recommended_connections ?? '–'} connections`;
    } else {
      let base = sideReport('base');
      let head = sideReport('head');
      let decided = decideCapacity(base, head, config.threshold);
      if (decided.verdict === 'fail' && config.confirmRuns > 0) {
        // One run per step can be unlucky on a shared machine: replay the steps the verdict
        // reads (both knees and the plateau it compares) again on both sides and decide on medians.
        const confirm = [...new Set([base.knee.connections, head.knee.connections, ...decided.compared_steps].filter((c): c is number => c !== null))].sort((a, b) => a - b);
        logger.info(`capacity loss suspected: replaying ${confirm.join(', ')} connections ${plural(config.confirmRuns, 'more time')} per side to confirm`);
        for (let round = 0; round < config.confirmRuns; round++) {
          for (const c of confirm) for (const side of round % 2 === 0 ? ['head', 'base'] as const : ['base', 'head'] as const) await runStep(side, c);
        }
        const suspected = decided.reasons.length;
        base = sideReport('base');
        head = sideReport('head');
        decided = decideCapacity(base, head, config.threshold);
        warnings.push(
          decided.verdict === 'fail'
            ? `the capacity loss was confirmed: steps ${confirm.join(', ')} were replayed ${config.confirmRuns} more times per side and the verdict is on the median runs`
            : `${plural(suspected, 'capacity rule')} fired on the first runs but not on the median of ${config.confirmRuns + 1} runs at steps ${confirm.join(', ')}: noise, not the PR`,
        );
      }
      report.sides = [base, head];
      report.verdict = decided.verdict;
      report.headline = decided.headline;
      report.reasons = decided.reasons;
      report.comparison = { compared_at: decided.compared_at, compared_steps: decided.compared_steps, throughput_change: decided.throughput_change };
    }
    for (const side of report.sides) {
      const failed = side.steps.filter((s) => s.failed_sessions > 0);
      if (failed.length > 0) warnings.push(`${side.side}: sessions failed to connect for a reason other than "too many clients" at ${failed.map((s) => `${s.connections} connections (${s.failed_sessions})`).join(', ')}`);
    }
    return { report: finish(), exitCode: report.verdict === 'fail' ? ExitCode.Regression : ExitCode.Ok };
  } catch (thrown) {
    const error = toCliError(thrown, stage);
    const message = server ? redact(error.message, passwordOf(server.url)) : error.message;
    report.verdict = 'error';
    report.headline = `error: ${stage} failed, no capacity verdict`;
    report.reasons = [message];
    report.error = { stage, message };
    return { report: finish(), exitCode: error.exitCode, error };
  } finally {
    await releaseRun(server, created, checkout, logger);
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the capacity sweep stopped before it finished');
}

/** One replay at one step: a refused session fails at once (no retries), so it is counted. */
async function replayStep(config: CapacityConfig, workload: Workload, url: string, connections: number, context: RunContext): Promise<ReplayReport> {
  const result = await replayOnce(
    workload,
    {
      conninfo: url,
      speed: config.speed,
      readOnly: !config.allowWrites,
      scale: config.scale,
      ...config.classScale,
      maxConnections: connections,
      // Retrying "too many clients" would queue refused sessions behind the server's limit and
      // hide exactly what the sweep must show.
      connectRetryMs: 0,
      statementTimeoutMs: config.statementTimeoutMs,
      deadlineMs: config.replayTimeoutMs,
      applicationName: 'pg-retest-action capacity',
    },
    context,
  );
  if (result.status === 'cancelled') throw new InterruptedError('interrupted; the capacity sweep stopped before it finished');
  if (result.status !== 'completed') {
    throw new InfraError(redact(`the replay at ${connections} connections did not complete (${result.status}${result.message ? `: ${result.message}` : ''})`, passwordOf(url)));
  }
  return result;
}

