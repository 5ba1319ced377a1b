/**
 * One gate run (design §3): workload → server → base and head templates → interleaved replay
 * rounds on fresh copies → comparison → verdict. It always ends with a report: a run that
 * cannot measure something ends with verdict `error` and the exit status of what failed, never
 * with a pass. Whatever the run started (server, databases, base checkout) it removes, on
 * success, failure and interrupt.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import packageJson from '../../package.json' with { type: 'json' };
import { fromEngineError } from '../engine/errors.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import type { GateConfig } from './options.js';
import { compareReplays, loadWorkload, type ReplayReport, type Workload } from '../engine/index.js';
import { CliError, ExitCode, InfraError, InputError, InterruptedError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { checkpoint, createDatabase, dropDatabase, setDatabaseOwner } from '../provision/database.js';
import { sweepStaleDatabases } from '../provision/leftovers.js';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import type { RunContext } from '../runtime/run-context.js';
import { passwordOf, redact, replayUrl, withDatabase } from '../provision/url.js';
import { type Checkout, checkoutBase, currentCommit } from '../templates/base-checkout.js';
import { BaseSchemaError, buildBaseTemplate, buildTemplates, type MigrationFailure, runTemplateInputs, type TemplateInputs, type Templates } from '../templates/build.js';
import { sideAccounting } from '../verdict/accounting.js';
import { coverageOf, keysSummary } from '../verdict/coverage.js';
import { changeUnderTest } from './ci-change.js';
import { runnerDescription } from './github-event.js';
import { planConfirmation, planReplays, type PlannedReplay } from './round-plan.js';
import { type BudgetPlan, type Environment, type GateReport, type ReplayRun, REPORT_SCHEMA_VERSION, type ServersReport, type Thresholds } from '../verdict/report-types.js';
import type { Comparison } from '../types.js';
import { replayOnce } from './replay-once.js';
import { replayLine, replayRecord } from './replay-record.js';
import { planForBudget } from './time-budget.js';
import { type PlaceIdentity, prepareReplayRole, type RolePlace, roleUrl, settleIdentities } from './replay-role.js';
import { releaseRun, toCliError } from './run-resources.js';
import { decideVerdict, exitCodeOfVerdict } from '../verdict/decide.js';
import { majorOf, probeTemplates, sideCounters, StatementCounterLog } from '../plans/gate-probe.js';
import type { PlansReport } from '../plans/types.js';
import { compareServers, serverWarnings, startSideServer } from './run-servers.js';
import { captureEvidence } from './capture-evidence.js';
import { sendDurations, serverTimeSupport, type ServerTimeSupport } from './server-time.js';

export interface GateOutcome {
  report: GateReport;
  exitCode: ExitCode;
  /** The failure behind an `error` verdict (or an interrupt). */
  error?: CliError;
}

/** Where a run is, for the error report. */
type Stage = 'workload' | 'base-checkout' | 'provision' | 'schema' | 'replay' | 'compare';

/**
 * A server of the run and what the run keeps on it: base's, and head's when head replays on a
 * server of its own (then its databases get a prefix of their own, since a pooler in front of
 * base's server reaches the same databases).
 */
interface Place {
  server: Server;
  prefix: string;
  /** Databases created on it and not dropped yet. */
  created: string[];
  counters?: StatementCounterLog;
  /** The replay role made there, not dropped yet (replay-role.ts). */
  role?: string;
  /** Who its replays run as. */
  identity?: PlaceIdentity;
}

/**
 * Runs the gate.
 * @param config validated options
 * @param context logger, progress, environment, interrupt
 * @returns the report and the exit status
 */
export async function runGate(config: GateConfig, context: RunContext): Promise<GateOutcome> {
  const { logger } = context;
  const startedAt = new Date();
  const thresholds: Thresholds = {
    p95_threshold: config.thresholds.p95Threshold,
    min_delta_ms: config.thresholds.minDeltaMs,
    min_calls: config.thresholds.minCalls,
    max_new_errors: config.thresholds.maxNewErrors,
    confidence: config.thresholds.confidence,
    plan_rules: config.planRules,
    min_coverage: config.thresholds.minCoverage,
    p95_max_ms: config.thresholds.p95MaxMs,
    p99_max_ms: config.thresholds.p99MaxMs,
    error_rate_max: config.thresholds.errorRateMax,
    server_threshold: config.thresholds.serverThreshold,
    server_min_delta_ms: config.thresholds.serverMinDeltaMs,
  };
  const pr = changeUnderTest(context.env);
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
    head: { sha: pr?.headSha || (await currentCommit(context.cwd)), source: describeSource(config, 'head') },
    head_from_scratch: null,
    runner: runnerDescription(context.env, os.hostname()),
    started_at: startedAt.toISOString(),
    wall_time_ms: 0,
  };
  const state: {
    stage: Stage;
    templates?: Templates;
    migrationFailure: MigrationFailure | null;
    replays: ReplayRun[];
    reports: { planned: PlannedReplay; report: ReplayReport }[];
    plans: PlansReport | null;
    servers: ServersReport | null;
  } = { stage: 'workload', migrationFailure: null, replays: [], reports: [], plans: null, servers: null };
  const of = (side: string) => state.reports.filter((r) => r.planned.side === side).map((r) => r.report);
  const finish = (fields: Pick<GateReport, 'verdict' | 'headline' | 'reasons' | 'error' | 'warnings' | 'comparison'>): GateReport => {
    environment.wall_time_ms = Date.now() - startedAt.getTime();
    return {
      schema_version: REPORT_SCHEMA_VERSION,
      tool: { name: 'pg-retest-action', version: packageJson.version },
      ...fields,
      thresholds,
      environment,
      migrations: state.templates?.migrations ?? [],
      migration_failure: state.migrationFailure,
      replays: state.replays,
      accounting: state.reports.length > 0 ? { base: sideAccounting(of('base')), head: sideAccounting(of('head')) } : null,
      coverage: state.reports.length > 0 ? coverageOf(of('base'), of('head'), config.thresholds.minCoverage) : null,
      keys: keysSummary(state.reports.map((r) => r.report)),
      plans: state.plans,
      servers: state.servers,
    };
  };

  const places: { base?: Place; head?: Place } = {};
  let checkout: Checkout | undefined;
  const prefix = `pgr_${crypto.randomBytes(4).toString('hex')}`;
  environment.database_prefix = prefix;
  const secrets = () => [
    ...[places.base?.server.url, places.head?.server.url].map((url) => (url === undefined ? undefined : passwordOf(url))),
    ...[places.base?.identity, places.head?.identity].map((identity) => identity?.role?.password),
  ];
  try {
    const workload = await loadGateWorkload(config.workload);
    environment.workload = { path: config.workload, sessions: workload.sessions, statements: workload.statements };
    logger.info(`workload ${config.workload}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);
    const warnings = [...workload.warnings];
    const evidence = captureEvidence(config.workload, workload);
    warnings.push(...evidence.warnings);
    // A budget the workload cannot fit even once is refused before any server work.
    if (config.timeBudgetMs !== undefined) budgetPlan(config, workload, 0);
    checkSeed(config);

    state.stage = 'base-checkout';
    let baseRoot = context.cwd;
    if (config.schema.kind === 'files' && config.schema.base !== undefined) {
      environment.base.source = `files: ${config.schema.base.join(', ')}`;
    } else {
      const ref = config.baseRef ?? pr?.baseRef;
      if (ref === undefined) {
        throw new InputError(
          'no base schema: give --base-ref (the commit to compare against, e.g. origin/main) or --base-migrations; ' +
            "on a GitHub pull_request event, a GitLab merge request pipeline or a Jenkins change request the change's base is used",
        );
      }
      if (config.baseRef === undefined && pr) logger.info(`base: ${pr.describe} (${ref})`);
      checkout = await checkoutBase(ref, context.cwd);
      baseRoot = checkout.root;
      environment.base = { ref, sha: checkout.sha, source: `${describeSource(config, 'base')} at ${checkout.sha.slice(0, 12)}` };
      logger.info(`base: ${ref} (${checkout.sha.slice(0, 12)}) checked out in ${checkout.root}`);
    }
    throwIfAborted(context.signal);

    state.stage = 'provision';
    const sizing = { sessions: workload.sessions, maxConnections: config.maxConnections };
    places.base = { server: await startSideServer(config.servers.base, sizing, logger, 'base'), prefix, created: [] };
    const server = places.base.server;
    environment.server_version = server.version;
    environment.server_kind = server.kind;
    environment.server = server.description;
    if (config.servers.head !== null) {
      throwIfAborted(context.signal);
      places.head = { server: await startSideServer(config.servers.head, sizing, logger, 'head'), prefix: `${prefix}_h`, created: [] };
    }
    await sweepStaleDatabases([places.base.server, places.head?.server], logger);
    const basePlace = places.base;
    const headPlace = places.head ?? places.base;
    const separate = places.head !== undefined;
    if (config.servers.head !== null) {
      state.servers = await compareServers({ base: config.servers.base, head: config.servers.head }, { base: basePlace.server, head: headPlace.server }, workload, logger);
      warnings.push(...serverWarnings(state.servers));
    }
    throwIfAborted(context.signal);

    state.stage = 'schema';
    const templateInputs = (place: Place): TemplateInputs => runTemplateInputs({ serverUrl: place.server.url, prefix: place.prefix, source: config.schema, baseRoot }, config, context);
    try {
      if (separate) {
        // Base's server needs base's template only; head's builds both, as one server would.
        basePlace.created.push(`${prefix}_base`);
        const base = await buildBaseTemplate(templateInputs(basePlace));
        headPlace.created.push(`${headPlace.prefix}_base`, `${headPlace.prefix}_head`);
        logger.info("building base's and head's schemas again on head's server");
        const head = await buildHeadServerTemplates(templateInputs(headPlace));
        state.templates = { ...head, base: base.name, migrations: [...base.migrations, ...head.migrations.filter((m) => m.side === 'head')] };
      } else {
        basePlace.created.push(`${prefix}_base`, `${prefix}_head`);
        state.templates = await buildTemplates(templateInputs(basePlace));
      }
    } catch (error) {
      if (error instanceof BaseSchemaError) state.migrationFailure = error.failure;
      throw error;
    }
    environment.head_from_scratch = state.templates.headFromScratch;
    environment.head_statistics = state.templates.headStatistics;
    if (state.templates.head === null) {
      state.migrationFailure = state.templates.failure;
      const decided = decideVerdict({ comparison: null, migrationFailure: state.migrationFailure, thresholds, servers: state.servers });
      return { report: finish({ ...decided, error: null, warnings, comparison: null }), exitCode: ExitCode.Regression };
    }

    // The server's own time per statement, on every replay of both sides or on none.
    const serverTime = await serverTimeOf(separate ? [basePlace, headPlace] : [basePlace]);
    if (!serverTime.available) logger.info(`server time per statement not measured: ${serverTime.reason}`);

    // Buffers and server time per statement, from each server's own accounting when it has it.
    for (const place of separate ? [basePlace, headPlace] : [basePlace]) {
      place.counters = new StatementCounterLog(place.server, `${place.prefix}_stats`, logger);
      await place.counters.open();
      if (place.counters.createdDatabase) place.created.push(place.counters.createdDatabase);
    }

    const templates = { base: state.templates.base, head: state.templates.head };
    const isolation = await isolateReplays(config, { base: basePlace, head: separate ? headPlace : undefined }, templates, logger);
    environment.replay_user = isolation.note;
    warnings.push(...isolation.warnings);

    state.stage = 'replay';
    const replayAll = async (plan: PlannedReplay[], totalRounds: number): Promise<void> => {
      for (const [index, planned] of plan.entries()) {
        throwIfAborted(context.signal);
        const place = planned.side === 'head' ? headPlace : basePlace;
        const template = planned.side === 'head' ? templates.head : templates.base;
        const name = `${place.prefix}_r${planned.round}_${planned.side}`;
        logger.info(`round ${planned.round}/${totalRounds}: replay ${index + 1} of ${plan.length} on ${planned.side === 'noise' ? 'base again (noise)' : planned.side}`);
        place.created.push(name);
        const url = await createDatabase(place.server.url, name, template);
        if (serverTime.available) await sendDurations(place.server.url, name);
        const role = place.identity?.role;
        if (role) await setDatabaseOwner(place.server.url, name, role.name);
        await checkpoint(place.server.url);
        // The other server sits idle through this replay: with its writes flushed now (and
        // autovacuum off on servers the gate starts) it has nothing to do meanwhile
        // (docs/gate.md, "Gating server changes").
        if (separate) await checkpoint((place === headPlace ? basePlace : headPlace).server.url);
        const watch = planned.side === 'noise' ? undefined : await place.counters!.watch(name);
        const target = replayUrl(place.server, url);
        const report = await replayRound(config, shape.speed, workload, role ? roleUrl(target, role) : target, { serverTime: serverTime.available, skipServerWide: isolation.skipServerWide }, context);
        if (watch && planned.side !== 'noise') await place.counters!.collect(planned.side, watch);
        await dropDatabase(place.server.url, name);
        place.created.pop();
        state.reports.push({ planned, report });
        state.replays.push(replayRecord(planned, report));
        logger.info(replayLine(report));
        const outcome = replayOutcome(report, { deadlineS: config.replayTimeoutMs === undefined ? undefined : config.replayTimeoutMs / 1000 });
        if (outcome.problem) {
          const where = `round ${planned.round}, ${planned.side} replay`;
          const message = redact(redact(`${where}: ${outcome.problem}`, passwordOf(url)), role?.password);
          if (outcome.exitCode === ExitCode.Interrupted) throw new InterruptedError(message);
          throw new InfraError(message);
        }
      }
    };
    const shape = budgetPlan(config, workload, Date.now() - startedAt.getTime());
    if (shape.budget) {
      environment.time_budget = shape.budget;
      logger.info(`time budget: ${shape.budget.note}`);
    }
    environment.rounds = shape.rounds;
    environment.speed = shape.speed;
    await replayAll(planReplays(shape.rounds), shape.rounds);

    state.stage = 'compare';
    const compareAll = (): Promise<Comparison> => {
      const baseReports = of('base');
      return compareReplays({
        base: baseReports,
        head: of('head'),
        noise: [baseReports[0]!, of('noise')[0]!],
        capture: evidence.failures,
        options: {
          p95Threshold: config.thresholds.p95Threshold,
          minDeltaMs: config.thresholds.minDeltaMs,
          minCalls: config.thresholds.minCalls,
          confidence: config.thresholds.confidence,
          serverThreshold: config.thresholds.serverThreshold,
          serverMinDeltaMs: config.thresholds.serverMinDeltaMs,
        },
      })
        .then((c) => (serverTime.available ? c : { ...c, server_time: { ...c.server_time, reason: serverTime.reason } }))
        .catch((error: unknown) => {
          throw fromEngineError(error);
        });
    };
    let comparison = await compareAll();
    const suspected = suspectedRegressions(comparison);
    if (shape.confirmRounds > 0 && suspected > 0) {
      // One unlucky burst on a shared runner can make the head replays of a few rounds the
      // slowest ones (docs/gate-statistics.md); more rounds make that chance negligible, and
      // cost time only when a regression is suspected.
      const total = shape.rounds + shape.confirmRounds;
      logger.info(`${plural(suspected, 'suspected regression')} after ${plural(shape.rounds, 'round')}: replaying ${shape.confirmRounds} more to confirm`);
      state.stage = 'replay';
      await replayAll(planConfirmation(shape.rounds, shape.confirmRounds), total);
      environment.rounds = total;
      state.stage = 'compare';
      comparison = await compareAll();
      const confirmed = suspectedRegressions(comparison);
      warnings.push(
        confirmed > 0
          ? `${plural(suspected, 'suspected regression')} after ${shape.rounds} rounds; ${shape.confirmRounds} confirmation rounds were replayed and the verdict is on all ${total}: ${confirmed} confirmed`
          : `${plural(suspected, 'suspected regression')} after ${shape.rounds} rounds did not hold over ${shape.confirmRounds} confirmation rounds (the verdict is on all ${total}): runner noise, not the PR`,
      );
    }
    const built = state.templates;
    const targets =
      built.head === null
        ? null
        : {
            base: { url: withDatabase(basePlace.server.url, built.base), major: majorOf(basePlace.server.version) },
            head: { url: withDatabase(headPlace.server.url, built.head), major: majorOf(headPlace.server.version) },
          };
    state.plans = await probeTemplates(workload, comparison, targets, sideCounters(basePlace.counters!, headPlace.counters!), logger, secrets());
    const coverage = coverageOf(of('base'), of('head'), config.thresholds.minCoverage);
    const decided = decideVerdict({
      comparison,
      coverage,
      headAccounting: sideAccounting(of('head')),
      migrationFailure: null,
      thresholds,
      plans: state.plans,
      servers: state.servers,
    });
    const exitCode = exitCodeOfVerdict(decided.verdict);
    const error = decided.verdict === 'error' ? new InfraError(decided.reasons[0] ?? decided.headline) : undefined;
    return {
      report: finish({ ...decided, warnings: [...warnings, ...decided.warnings], error: error ? { stage: 'compare', message: error.message } : null, comparison }),
      exitCode,
      error,
    };
  } catch (thrown) {
    const error = asCliError(thrown, state.stage);
    const stage = state.stage;
    let message = error.message;
    for (const secret of secrets()) message = redact(message, secret);
    return {
      report: finish({
        verdict: 'error',
        headline: `error: ${stageLabel(stage)} failed, nothing was compared`,
        reasons: [message],
        error: { stage, message },
        warnings: [],
        comparison: null,
      }),
      exitCode: error.exitCode,
      error,
    };
  } finally {
    if (places.head) await releaseRun(places.head.server, places.head.created, undefined, logger, places.head);
    await releaseRun(places.base?.server, places.base?.created ?? [], checkout, logger, places.base);
  }
}

/**
 * Base's and head's templates on head's server. Base's migrations come first there too, and a
 * failure among them is the change under test failing (an upgrade that breaks an old migration):
 * a head failure, not a run that cannot start.
 */
async function buildHeadServerTemplates(inputs: TemplateInputs): Promise<Templates> {
  try {
    return await buildTemplates(inputs);
  } catch (error) {
    if (!(error instanceof BaseSchemaError)) throw error;
    inputs.logger.info(`head: ${error.message}`);
    const failure = { ...error.failure, side: 'head' as const, name: `${error.failure.name} (base's migration, on head's server)` };
    return { base: `${inputs.prefix}_base`, head: null, migrations: [], failure, headFromScratch: null, headStatistics: null };
  }
}

/**
 * Who the replays run as on each server, and whether statements that act beyond the replay's
 * database are sent (docs/gate.md, "Replay isolation"). Both sides get the same: a statement
 * skipped on one side only, or refused there for a role's missing privilege, would read as the
 * change's doing.
 * @param config the options (`allowServerWide`)
 * @param places base's server, and head's when it has one of its own
 * @param templates the template databases the replays copy
 * @param logger progress lines
 * @returns whether to skip server-wide statements, the environment's line and warnings
 */
async function isolateReplays(
  config: GateConfig,
  places: { base: Place; head: Place | undefined },
  templates: { base: string; head: string },
  logger: Logger,
): Promise<{ skipServerWide: boolean; note: string; warnings: string[] }> {
  const all = places.head ? [places.base, places.head] : [places.base];
  const foreign = all.some((place) => place.server.kind === 'database-url');
  const asked = foreign && config.allowServerWide ? 'allow-server-wide: the workload runs with its privileges, statements that act beyond the database included' : undefined;
  const identities: PlaceIdentity[] = [];
  for (const place of all) {
    const replayed = places.head ? [place === places.head ? templates.head : templates.base] : [templates.base, templates.head];
    const rolePlace: RolePlace = { server: place.server, prefix: place.prefix, templates: replayed, readsCounters: place.counters?.unavailable === null };
    try {
      identities.push(await prepareReplayRole(rolePlace, logger, asked));
    } finally {
      place.role = rolePlace.role;
    }
  }
  const settled = settleIdentities(identities);
  all.forEach((place, i) => (place.identity = settled.identities[i]));
  const skipServerWide = foreign && !config.allowServerWide;
  const sent = skipServerWide ? 'statements that act beyond the database (roles, settings, files, other sessions) skipped' : 'every statement sent';
  if (skipServerWide) logger.info('statements that act beyond the replay database (roles, server settings, other databases, server files, other sessions) are skipped: the server is not one the gate started (--allow-server-wide sends them)');
  return { skipServerWide, note: `${settled.note}; ${sent}`, warnings: settled.warnings };
}

/** Rounds, confirmation rounds and speed: as asked, or as the time budget allows. */
function budgetPlan(config: GateConfig, workload: Workload, spentMs: number): { rounds: number; confirmRounds: number; speed: number; budget: BudgetPlan | null } {
  if (config.timeBudgetMs === undefined) return { rounds: config.rounds, confirmRounds: config.confirmRounds, speed: config.speed, budget: null };
  const durationUs = workload.summary(0).duration_us;
  const budget = planForBudget(config.timeBudgetMs, spentMs, durationUs, { rounds: config.rounds, confirmRounds: config.confirmRounds, speed: config.speed });
  return { rounds: budget.rounds, confirmRounds: budget.confirm_rounds, speed: budget.speed, budget };
}

/**
 * What more rounds could overturn: fingerprints (and the whole workload) whose latency rule
 * fired, and failures that count because of how they fell across the replays (the same
 * statements in every head replay, or a rate) rather than by their kind.
 */
function suspectedRegressions(comparison: Comparison): number {
  const byReplays = comparison.new_errors.filter((e) => e.rule === 'every_replay' || e.rule === 'rate').length;
  return comparison.fingerprints.filter((f) => f.regressed).length + (comparison.overall.regressed ? 1 : 0) + byReplays;
}

/**
 * Whether every server of the run lets the gate turn on the server's duration line.
 * @param places the run's servers
 * @returns available on all, or the first reason one cannot
 */
async function serverTimeOf(places: Place[]): Promise<ServerTimeSupport> {
  for (const place of places) {
    const support = await serverTimeSupport(place.server.url);
    if (!support.available) return support;
  }
  return { available: true };
}

function stageLabel(stage: Stage): string {
  return {
    workload: 'loading the workload',
    'base-checkout': 'checking out the base commit',
    provision: 'starting PostgreSQL',
    schema: 'building the base and head schemas',
    replay: 'replaying the workload',
    compare: 'comparing the replays',
  }[stage];
}

function asCliError(error: unknown, stage: Stage): CliError {
  return toCliError(error, stageLabel(stage));
}

function describeSource(config: GateConfig, side: 'base' | 'head'): string {
  if (config.schema.kind === 'command') return `migrate-command: ${config.schema.command}`;
  const files = side === 'base' && config.schema.base ? config.schema.base : config.schema.head;
  return `files: ${files.join(', ')}`;
}

export async function loadGateWorkload(file: string): Promise<Workload> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new InputError(`option --workload: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
  }
  if (!stat.isFile()) throw new InputError(`option --workload: ${file} is not a file`);
  try {
    return await loadWorkload(file);
  } catch (error) {
    throw fromEngineError(error);
  }
}

export function checkSeed(config: Pick<GateConfig, 'seed'>): void {
  if (config.seed?.kind !== 'file') return;
  const file = config.seed.path;
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    throw new InputError(`option --seed: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the gate stopped before it could compare anything');
}

function replayRound(
  config: GateConfig,
  speed: number,
  workload: Workload,
  url: string,
  flags: { serverTime: boolean; skipServerWide: boolean },
  context: RunContext,
): Promise<ReplayReport> {
  return replayOnce(
    workload,
    {
      conninfo: url,
      speed,
      skipServerWide: flags.skipServerWide,
      maxConnections: config.maxConnections,
      statementTimeoutMs: config.statementTimeoutMs,
      deadlineMs: config.replayTimeoutMs,
      includeSamples: true,
      serverTime: flags.serverTime,
      ...config.keys,
    },
    context,
  );
}
