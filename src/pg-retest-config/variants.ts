/**
 * A/B mode (`[[variants]]`, two or more): every variant after the first is gated against the
 * first with the gate's statistics, where pg-retest's `ab` replays each target once, pairs the
 * i-th result of one with the i-th of the other (so one missing session shifts every later
 * pair), and exits 0 whatever it finds.
 *
 * Per candidate, as the gate does for base and head (docs/gate.md): alternating rounds
 * (baseline, candidate), (candidate, baseline), …; a second replay of the baseline in round 1
 * for the noise floor; per fingerprint p95 with a bootstrap confidence interval that must clear
 * it; confirmation rounds when a latency regression is suspected; new errors by (fingerprint,
 * SQLSTATE); the plans of the compared queries on both variants. Each candidate's result is a
 * gate report, rendered by the gate's own markdown and JUnit.
 *
 * The variants are the user's databases. Each replay runs on a fresh copy
 * (`CREATE DATABASE … TEMPLATE`) of a copy of its variant taken at the start and vacuumed, as the
 * gate's templates are, so that no replay sees another's writes and the user's databases are left
 * as they were. Where a copy cannot be made (no CREATEDB, other sessions connected), replays run
 * in the database itself, as pg-retest's do, and the report says so.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { fromEngineError } from '../engine/errors.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import { GATE_DEFAULTS } from '../gate/options.js';
import { compareReplays, type ReplayReport, type Workload } from '../engine/index.js';
import { InfraError, InterruptedError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { sideAccounting } from '../verdict/accounting.js';
import { coverageOf, keysSummary } from '../verdict/coverage.js';
import { runnerDescription } from '../gate/github-event.js';
import { replayOnce } from '../gate/replay-once.js';
import { replayLine, replayRecord } from '../gate/replay-record.js';
import { type Coverage, type GateReport, REPORT_SCHEMA_VERSION, type ReplayRun, type Thresholds } from '../verdict/report-types.js';
import type { Comparison } from '../types.js';
import { planConfirmation, planReplays, type PlannedReplay } from '../gate/round-plan.js';
import type { RunContext } from '../runtime/run-context.js';
import { decideVerdict, type VerdictInputs, type VerdictResult } from '../verdict/decide.js';
import { PLAN_DEFAULTS } from '../plans/options.js';
import { probePlans } from '../plans/probe.js';
import type { PlansReport } from '../plans/types.js';
import { serverVersion } from '../provision/database-url.js';
import { checkpoint, dropDatabase, runStatements } from '../provision/database.js';
import { describeTarget, passwordOf, redact, withDatabase } from '../provision/url.js';
import { settleCopyStatistics } from './copy-statistics.js';
import { refuseUnaskedWrites } from './single-target.js';
import type { ReplaySettings } from './plan.js';
import { toolInfo } from '../tool.js';

/** One variant, ready to replay. */
interface PreparedVariant {
  label: string;
  /** The user's database. */
  url: string;
  version: string;
  /** A URL of another database on its server, from which copies are made and dropped. */
  maintenanceUrl: string | null;
  /** Our vacuumed copy of it, which every replay copies; null when replays run in place. */
  copy: string | null;
  /** Why there is no copy. */
  inPlace: string | null;
}

export interface VariantsInputs {
  variants: { label: string; url: string }[];
  workload: Workload;
  workloadPath: string;
  replay: ReplaySettings;
  /** A fraction (regression_threshold_pct / 100). */
  p95Threshold: number;
  /** Slower queries a candidate may have; undefined: none. */
  regressionMaxCount: number | undefined;
}

/** One candidate gated against the baseline. */
export interface CandidateResult {
  label: string;
  report: GateReport;
  /** The candidate's replays, for the absolute limits. */
  replays: ReplayReport[];
}

/**
 * Gates every candidate against the baseline, one after the other.
 * @param inputs the variants (baseline first), the workload and the settings
 * @param context logger, progress, environment, interrupt
 * @returns one result per candidate
 * @throws CliError when a variant cannot be reached or a replay fails (nothing is passed unmeasured)
 */
export async function gateVariants(inputs: VariantsInputs, context: RunContext): Promise<CandidateResult[]> {
  const { logger } = context;
  const prefix = `pgr_${crypto.randomBytes(4).toString('hex')}`;
  const created: { serverUrl: string; name: string }[] = [];
  try {
    const prepared: PreparedVariant[] = [];
    for (const [i, v] of inputs.variants.entries()) {
      prepared.push(await prepareVariant(v, `${prefix}_v${i}`, created, context));
    }
    // A copy is the run's own; a variant replayed in place is the user's database.
    for (const v of prepared)
      if (v.copy === null)
        refuseUnaskedWrites(inputs.workload, inputs.replay, `variant '${v.label}' (${describeTarget(v.url)}, which could not be copied)`);
    const results: CandidateResult[] = [];
    for (const candidate of prepared.slice(1)) {
      throwIfAborted(context.signal);
      results.push(await gateOne(prepared[0]!, candidate, inputs, prefix, created, context));
    }
    return results;
  } finally {
    for (const { serverUrl, name } of created.reverse()) {
      await dropDatabase(serverUrl, name).catch((e: Error) => logger.info(`warning: ${redact(e.message, passwordOf(serverUrl))}`));
    }
  }
}

/** Connects, then copies the variant's database for the run (or says why it cannot). */
async function prepareVariant(
  v: { label: string; url: string },
  copyName: string,
  created: { serverUrl: string; name: string }[],
  context: RunContext,
): Promise<PreparedVariant> {
  const version = await serverVersion(v.url);
  const database = decodeURIComponent(new URL(v.url).pathname.slice(1));
  context.logger.info(`variant '${v.label}': PostgreSQL ${version} at ${describeTarget(v.url)}`);
  let lastError = 'its URL names no database';
  for (const maintenance of database === '' ? [] : ['postgres', 'template1'].filter((m) => m !== database)) {
    const maintenanceUrl = withDatabase(v.url, maintenance);
    try {
      await runStatements(maintenanceUrl, `cannot copy database ${database}`, [
        `CREATE DATABASE ${copyName} TEMPLATE ${quoteIdent(database)}`,
      ]);
    } catch (error) {
      lastError = redact((error as Error).message, passwordOf(v.url));
      // No such maintenance database (or no access to it): try the next one.
      if (/does not exist|permission denied for database|no pg_hba/.test(lastError) && maintenance === 'postgres') continue;
      break;
    }
    created.push({ serverUrl: maintenanceUrl, name: copyName });
    const copyUrl = withDatabase(v.url, copyName);
    // Visibility settled as on the gate's templates; statistics are the database's own (a fresh
    // sample per copy could plan two identical variants differently), except where it has none.
    const analyzed = await settleCopyStatistics(copyUrl);
    context.logger.info(
      `variant '${v.label}': copied to ${copyName} (every replay runs on a fresh copy of it)` +
        (analyzed.length > 0 ? `; analyzed ${analyzed.join(', ')}, which had no statistics` : ''),
    );
    return { label: v.label, url: v.url, version, maintenanceUrl, copy: copyName, inPlace: null };
  }
  context.logger.info(`warning: variant '${v.label}': replays run in the database itself: ${lastError}`);
  return { label: v.label, url: v.url, version, maintenanceUrl: null, copy: null, inPlace: lastError };
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Baseline against one candidate: the gate's rounds, comparison, plan probe and verdict. */
async function gateOne(
  baseline: PreparedVariant,
  candidate: PreparedVariant,
  inputs: VariantsInputs,
  prefix: string,
  created: { serverUrl: string; name: string }[],
  context: RunContext,
): Promise<CandidateResult> {
  const { logger } = context;
  const startedAt = new Date();
  const rounds = GATE_DEFAULTS.rounds;
  const thresholds = variantThresholds(inputs.p95Threshold);
  const done: { planned: PlannedReplay; report: ReplayReport }[] = [];
  const runs: ReplayRun[] = [];
  const of = (side: string) => done.filter((d) => d.planned.side === side).map((d) => d.report);
  const variantOf = (planned: PlannedReplay) => (planned.side === 'head' ? candidate : baseline);

  const replayAll = async (plan: PlannedReplay[], total: number) => {
    for (const [index, planned] of plan.entries()) {
      throwIfAborted(context.signal);
      const variant = variantOf(planned);
      logger.info(
        `'${candidate.label}' against '${baseline.label}', round ${planned.round}/${total}: replay ${index + 1} of ${plan.length} on '${variant.label}'${planned.side === 'noise' ? ' again (noise)' : ''}`,
      );
      const report = await replayVariant(variant, `${prefix}_r${planned.round}_${planned.side}`, inputs, created, context);
      done.push({ planned, report });
      runs.push(replayRecord(planned, report));
      logger.info(replayLine(report));
      const outcome = replayOutcome(report);
      if (outcome.problem)
        throw new InfraError(redact(`variant '${variant.label}', round ${planned.round}: ${outcome.problem}`, passwordOf(variant.url)));
    }
  };
  const compare = (): Promise<Comparison> =>
    compareReplays({
      base: of('base'),
      head: of('head'),
      noise: [of('base')[0]!, of('noise')[0]!],
      options: {
        p95Threshold: thresholds.p95_threshold,
        minDeltaMs: thresholds.min_delta_ms,
        minCalls: thresholds.min_calls,
        confidence: thresholds.confidence,
      },
    }).catch((error: unknown) => {
      throw fromEngineError(error);
    });

  await replayAll(planReplays(rounds), rounds);
  let comparison = await compare();
  let totalRounds = rounds;
  const suspected = comparison.fingerprints.filter((f) => f.regressed).length + (comparison.overall.regressed ? 1 : 0);
  if (suspected > 0 && GATE_DEFAULTS.confirmRounds > 0) {
    totalRounds = rounds + GATE_DEFAULTS.confirmRounds;
    logger.info(
      `${plural(suspected, 'latency regression')} after ${rounds} rounds: replaying ${GATE_DEFAULTS.confirmRounds} more to confirm`,
    );
    await replayAll(planConfirmation(rounds, GATE_DEFAULTS.confirmRounds), totalRounds);
    comparison = await compare();
  }

  const plans = await probeVariants(baseline, candidate, inputs.workload, comparison, logger);
  const coverage = readOnlyAware(coverageOf(of('base'), of('head'), thresholds.min_coverage!), inputs.replay.readOnly);
  const verdictInputs = { comparison, coverage, headAccounting: sideAccounting(of('head')), migrationFailure: null, thresholds, plans };
  const decided = allowRegressions(verdictInputs, decideVerdict(verdictInputs), inputs.regressionMaxCount);

  const describe = (v: PreparedVariant) =>
    `[[variants]] '${v.label}': PostgreSQL ${v.version} at ${describeTarget(v.url)}${v.copy ? ', replayed on fresh copies' : ', replayed in place'}`;
  const report: GateReport = {
    schema_version: REPORT_SCHEMA_VERSION,
    tool: toolInfo(),
    verdict: decided.verdict,
    headline: decided.headline,
    reasons: decided.reasons,
    error: decided.verdict === 'error' ? { stage: 'compare', message: decided.reasons[0] ?? decided.headline } : null,
    thresholds,
    environment: {
      server_version: baseline.version === candidate.version ? baseline.version : `${baseline.version} / ${candidate.version}`,
      server_kind: 'database-url',
      server: `${describeTarget(baseline.url)} / ${describeTarget(candidate.url)}`,
      postgres_config: {},
      rounds: totalRounds,
      speed: inputs.replay.speed,
      workload: { path: inputs.workloadPath, sessions: inputs.workload.sessions, statements: inputs.workload.statements },
      seed: null,
      base: { ref: baseline.label, sha: null, source: describe(baseline) },
      head: { sha: null, source: describe(candidate) },
      head_from_scratch: null,
      runner: runnerDescription(context.env, os.hostname()),
      started_at: startedAt.toISOString(),
      wall_time_ms: Date.now() - startedAt.getTime(),
      database_prefix: prefix,
    },
    migrations: [],
    migration_failure: null,
    replays: runs,
    accounting: { base: sideAccounting(of('base')), head: sideAccounting(of('head')) },
    comparison,
    plans,
    coverage,
    keys: keysSummary(done.map((d) => d.report)),
    warnings: [...inPlaceWarnings([baseline, candidate]), ...decided.warnings],
  };
  return { label: candidate.label, report, replays: of('head') };
}

/** The gate's thresholds, but for the p95 threshold the configuration sets. */
function variantThresholds(p95Threshold: number): Thresholds {
  return {
    p95_threshold: p95Threshold,
    min_delta_ms: GATE_DEFAULTS.minDeltaMs,
    min_calls: GATE_DEFAULTS.minCalls,
    max_new_errors: GATE_DEFAULTS.maxNewErrors,
    confidence: GATE_DEFAULTS.confidence,
    plan_rules: { fail_on_plan_change: PLAN_DEFAULTS.failOnPlanChange, plan_min_rows: PLAN_DEFAULTS.planMinRows, max_buffers_growth: null },
    min_coverage: GATE_DEFAULTS.minCoverage,
  };
}

/** One warning per variant replayed in place, whose replays saw each other's writes. */
function inPlaceWarnings(variants: PreparedVariant[]): string[] {
  return variants
    .filter((v) => v.inPlace !== null)
    .map(
      (v) =>
        `variant '${v.label}' was replayed in its own database, not on copies (a copy could not be made: ${v.inPlace}); each replay's writes stayed there for the next one`,
    );
}

/** One replay of a variant: on a fresh copy of its copy, or in place. */
async function replayVariant(
  variant: PreparedVariant,
  name: string,
  inputs: VariantsInputs,
  created: { serverUrl: string; name: string }[],
  context: RunContext,
): Promise<ReplayReport> {
  let url = variant.url;
  if (variant.copy !== null && variant.maintenanceUrl !== null) {
    await runStatements(variant.maintenanceUrl, `cannot create database ${name}`, [`CREATE DATABASE ${name} TEMPLATE ${variant.copy}`]);
    created.push({ serverUrl: variant.maintenanceUrl, name });
    await checkpoint(variant.maintenanceUrl);
    url = withDatabase(variant.url, name);
  }
  try {
    const r = inputs.replay;
    return await replayOnce(
      inputs.workload,
      // Copies or not, every variant is on a server the run did not start.
      {
        conninfo: url,
        speed: r.speed,
        readOnly: r.readOnly,
        skipServerWide: !r.allowServerWide,
        scale: r.scale,
        staggerMs: r.staggerMs,
        ...r.classScale,
        includeSamples: true,
      },
      context,
    );
  } finally {
    if (variant.copy !== null && variant.maintenanceUrl !== null) {
      await dropDatabase(variant.maintenanceUrl, name);
      created.pop();
    }
  }
}

/** The compared queries' plans on both variants (their copies when there are copies). */
async function probeVariants(
  baseline: PreparedVariant,
  candidate: PreparedVariant,
  workload: Workload,
  comparison: Comparison,
  logger: RunContext['logger'],
): Promise<PlansReport> {
  const at = (v: PreparedVariant) => (v.copy === null ? v.url : withDatabase(v.url, v.copy));
  try {
    return await probePlans({
      baseUrl: at(baseline),
      headUrl: at(candidate),
      majors: { base: Number.parseInt(baseline.version, 10) || 0, head: Number.parseInt(candidate.version, 10) || 0 },
      examples: workload.examples(),
      fingerprints: comparison.fingerprints,
      // The variants may live on different servers: buffers come from EXPLAIN (ANALYZE, BUFFERS).
      counters: { unavailable: 'not collected for [[variants]], which may live on different servers' },
      logger,
    });
  } catch (error) {
    const message = redact((error as Error).message.split('\n')[0]!, passwordOf(baseline.url));
    logger.info(`warning: query plans could not be probed: ${message}`);
    return {
      stats: { source: 'explain-analyze', pg_stat_statements: null, unavailable_reason: null, unjoined: 0 },
      not_explainable: 0,
      fingerprints: [],
      failures: [],
      error: message,
    };
  }
}

/**
 * With `read_only`, the statements that may write are skipped on purpose: coverage is judged on
 * the rest, not held against the run.
 */
function readOnlyAware(coverage: Coverage, readOnly: boolean): Coverage {
  if (!readOnly) return coverage;
  const writes = coverage.base.skipped_by_reason.read_only ?? 0;
  const runnable = coverage.base.captured - writes;
  return { ...coverage, sufficient: runnable <= 0 || coverage.base.executed / runnable >= coverage.min_coverage };
}

/**
 * regression_max_count above 0: a candidate whose only finding is that many slower queries, or
 * fewer, is decided again without them, and says so: it passes unless the run falls short
 * otherwise (too little coverage, nothing judged), which a regression used to outrank.
 * @param inputs what the verdict was decided on
 * @param decided the gate's verdict
 * @param max regression_max_count, undefined when not set
 * @returns the verdict, decided without the slower queries when they are within the count and nothing else was found
 */
export function allowRegressions(inputs: VerdictInputs, decided: VerdictResult, max: number | undefined): VerdictResult {
  const comparison = inputs.comparison;
  if (decided.verdict !== 'regression' || max === undefined || max === 0 || comparison === null) return decided;
  const slower = comparison.fingerprints.filter((f) => f.regressed).length;
  // decideVerdict lists the slower queries' reasons first; anything after them is another finding.
  if (slower > max || decided.reasons.length > slower) return decided;
  const allowed = decided.reasons.map((r) => `allowed by regression_max_count: ${r}`);
  const without = decideVerdict({
    ...inputs,
    comparison: { ...comparison, fingerprints: comparison.fingerprints.map((f) => ({ ...f, regressed: false })) },
  });
  if (without.verdict !== 'pass') return { ...without, warnings: [...allowed, ...without.warnings] };
  return {
    verdict: 'pass',
    headline: `pass: ${plural(slower, 'query', 'queries')} slower, within regression_max_count ${max}, no new errors`,
    reasons: [],
    warnings: [...allowed, ...decided.warnings],
  };
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the variants were not all compared');
}
