/**
 * What a gate run has found so far, which becomes its report. Each phase of the run adds what it
 * measured; however far the run got, its report comes from here: a run that stops early reports
 * the stage that failed and what it had, never a pass.
 */
import os from 'node:os';
import type { ReplayReport } from '../engine/index.js';
import { InterruptedError } from '../exit-codes.js';
import type { PlansReport } from '../plans/types.js';
import { currentCommit } from '../templates/base-checkout.js';
import type { MigrationFailure, Templates } from '../templates/build.js';
import { sideAccounting } from '../verdict/accounting.js';
import { coverageOf, keysSummary } from '../verdict/coverage.js';
import {
  type Environment,
  type GateReport,
  REPORT_SCHEMA_VERSION,
  type ReplayRun,
  type ServersReport,
  type Side,
  type Thresholds,
} from '../verdict/report-types.js';
import type { ChangeUnderTest } from './ci-change.js';
import { runnerDescription } from './github-event.js';
import type { GateConfig } from './options.js';
import type { PlannedReplay } from './round-plan.js';
import { toolInfo } from '../tool.js';

/** Where a run is, for the error report. */
export type Stage = 'workload' | 'base-checkout' | 'provision' | 'schema' | 'replay' | 'compare';

/** What the verdict decides: the fields of the report that are not a record of the run. */
export type Decided = Pick<GateReport, 'verdict' | 'headline' | 'reasons' | 'error' | 'warnings' | 'comparison'>;

export class GateRecord {
  /** Where the run is: what failed, if it stops. */
  stage: Stage = 'workload';
  /** The template databases, once built. */
  templates: Templates | undefined;
  /** A base migration that failed, or head's. */
  migrationFailure: MigrationFailure | null = null;
  /** Every replay that ran, in order, as the report lists them. */
  readonly replays: ReplayRun[] = [];
  /** Every replay's report with where it stood in the plan. */
  readonly reports: { planned: PlannedReplay; report: ReplayReport }[] = [];
  plans: PlansReport | null = null;
  servers: ServersReport | null = null;
  /** What the run noticed on the way, for a report with a verdict. */
  readonly warnings: string[] = [];

  private constructor(
    private readonly config: GateConfig,
    readonly startedAt: Date,
    readonly thresholds: Thresholds,
    readonly environment: Environment,
  ) {}

  /**
   * The record of a run that starts now.
   * @param config the run's options
   * @param change the change under test, when the CI system names one
   * @param context the environment and working directory
   * @returns the record, with the run's settings filled in
   */
  static async start(
    config: GateConfig,
    change: ChangeUnderTest | undefined,
    context: { env: NodeJS.ProcessEnv; cwd: string },
  ): Promise<GateRecord> {
    const startedAt = new Date();
    const environment: Environment = {
      server_version: null,
      server_kind: null,
      server: null,
      postgres_config: config.servers.base.kind === 'database-url' ? {} : config.servers.base.settings,
      rounds: config.rounds,
      speed: config.speed,
      workload: { path: config.workload, sessions: 0, statements: 0 },
      seed: config.seed ? (config.seed.kind === 'file' ? config.seed.path : `seed-command: ${config.seed.command}`) : null,
      base: { ref: null, sha: null, source: '' },
      head: { sha: change?.headSha || (await currentCommit(context.cwd)), source: describeSource(config, 'head') },
      head_from_scratch: null,
      runner: runnerDescription(context.env, os.hostname()),
      started_at: startedAt.toISOString(),
      wall_time_ms: 0,
    };
    return new GateRecord(config, startedAt, thresholdsOf(config), environment);
  }

  /**
   * Keeps a replay that ran.
   * @param planned where it stood in the plan
   * @param report the engine's report
   * @param run what the report lists of it
   */
  addReplay(planned: PlannedReplay, report: ReplayReport, run: ReplayRun): void {
    this.reports.push({ planned, report });
    this.replays.push(run);
  }

  /**
   * The replay reports of one side.
   * @param side base, head or noise
   * @returns its reports, in the order they ran
   */
  side(side: Side): ReplayReport[] {
    return this.reports.filter((r) => r.planned.side === side).map((r) => r.report);
  }

  /**
   * The report of the run as it stands.
   * @param decided the verdict and what goes with it
   * @returns the report
   */
  report(decided: Decided): GateReport {
    this.environment.wall_time_ms = Date.now() - this.startedAt.getTime();
    const ran = this.reports.length > 0;
    return {
      schema_version: REPORT_SCHEMA_VERSION,
      tool: toolInfo(),
      ...decided,
      thresholds: this.thresholds,
      environment: this.environment,
      migrations: this.templates?.migrations ?? [],
      migration_failure: this.migrationFailure,
      replays: this.replays,
      accounting: ran ? { base: sideAccounting(this.side('base')), head: sideAccounting(this.side('head')) } : null,
      coverage: ran ? coverageOf(this.side('base'), this.side('head'), this.config.thresholds.minCoverage) : null,
      keys: keysSummary(this.reports.map((r) => r.report)),
      plans: this.plans,
      servers: this.servers,
    };
  }

  /**
   * The report of a run that stopped: verdict `error`, naming the stage that failed.
   * @param message why it stopped, free of secrets
   * @returns the report
   */
  failed(message: string): GateReport {
    const stage = this.stage;
    return this.report({
      verdict: 'error',
      headline: `error: ${stageLabel(stage)} failed, nothing was compared`,
      reasons: [message],
      error: { stage, message },
      warnings: [],
      comparison: null,
    });
  }
}

/**
 * Stops the run when it was interrupted (Ctrl-C, the job cancelled), between two of its steps.
 * @param signal the run's interrupt
 * @throws InterruptedError when it fired
 */
export function throwIfInterrupted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the gate stopped before it could compare anything');
}

/**
 * What a stage does, in words.
 * @param stage the stage
 * @returns the phrase ("building the base and head schemas")
 */
export function stageLabel(stage: Stage): string {
  return {
    workload: 'loading the workload',
    'base-checkout': 'checking out the base commit',
    provision: 'starting PostgreSQL',
    schema: 'building the base and head schemas',
    replay: 'replaying the workload',
    compare: 'comparing the replays',
  }[stage];
}

/** The thresholds as the report states them. */
function thresholdsOf(config: GateConfig): Thresholds {
  const t = config.thresholds;
  return {
    p95_threshold: t.p95Threshold,
    min_delta_ms: t.minDeltaMs,
    min_calls: t.minCalls,
    max_new_errors: t.maxNewErrors,
    confidence: t.confidence,
    plan_rules: config.planRules,
    work_rule: config.workRule,
    min_coverage: t.minCoverage,
    p95_max_ms: t.p95MaxMs,
    p99_max_ms: t.p99MaxMs,
    error_rate_max: t.errorRateMax,
    server_threshold: t.serverThreshold,
    server_min_delta_ms: t.serverMinDeltaMs,
  };
}

/**
 * Where a side's schema comes from, in words.
 * @param config the run's options
 * @param side base or head
 * @returns `files: …` or `migrate-command: …`
 */
export function describeSource(config: GateConfig, side: 'base' | 'head'): string {
  if (config.schema.kind === 'command') return `migrate-command: ${config.schema.command}`;
  const files = side === 'base' && config.schema.base ? config.schema.base : config.schema.head;
  return `files: ${files.join(', ')}`;
}
