/**
 * One gate run (design §3), in its phases: the workload and the base commit (preflight.ts), the
 * servers (places.ts), the base and head templates (schemas.ts), interleaved replay rounds on
 * fresh copies and their comparison (rounds.ts), then the verdict. It always ends with a report
 * (gate-record.ts): a run that cannot measure something ends with verdict `error` and the exit
 * status of what failed, never with a pass. Whatever the run started (servers, databases, the
 * base checkout) it removes, on success, failure and interrupt.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { ExitCode, InfraError } from '../exit-codes.js';
import { majorOf, probeTemplates, sideCounters } from '../plans/gate-probe.js';
import { applyWorkRule } from '../plans/work-rule.js';
import { redact, withDatabase } from '../provision/url.js';
import type { RunContext, RunOutcome } from '../runtime/run-context.js';
import type { Comparison } from '../types.js';
import { decideVerdict, exitCodeOfVerdict } from '../verdict/decide.js';
import { coverageOf } from '../verdict/coverage.js';
import { sideAccounting } from '../verdict/accounting.js';
import type { GateReport } from '../verdict/report-types.js';
import { changeUnderTest } from './ci-change.js';
import { GateRecord, stageLabel, throwIfInterrupted } from './gate-record.js';
import type { GateConfig } from './options.js';
import { type Holdings, type Places, prepareReplays, releaseHoldings, secretsOf, startServers } from './places.js';
import { checkOutBaseSchema, type GateWorkload, readGateWorkload } from './preflight.js';
import { replayAndCompare } from './rounds.js';
import { toCliError } from './run-resources.js';
import { buildSchemas } from './schemas.js';

/**
 * Runs the gate.
 * @param config validated options
 * @param context logger, progress, environment, interrupt
 * @param onRecord given the run's record as soon as it exists, for a caller that needs the replays
 *   themselves once the run is over (a shard's partial report)
 * @returns the report and the exit status
 */
export async function runGate(
  config: GateConfig,
  context: RunContext,
  onRecord?: (record: GateRecord) => void,
): Promise<RunOutcome<GateReport>> {
  const change = changeUnderTest(context.env);
  const record = await GateRecord.start(config, change, context);
  onRecord?.(record);
  const prefix = `pgr_${crypto.randomBytes(4).toString('hex')}`;
  record.environment.database_prefix = prefix;
  const held: Holdings = {};
  try {
    const workload = await readGateWorkload(config, record, context.logger);

    record.stage = 'base-checkout';
    const baseRoot = await checkOutBaseSchema(config, change, record, held, context);
    throwIfInterrupted(context.signal);

    record.stage = 'provision';
    const places = await startServers(config, record, held, workload.workload, prefix, context);
    throwIfInterrupted(context.signal);

    record.stage = 'schema';
    const templates = await buildSchemas(config, record, places, baseRoot, context);
    if (templates.head === null) return headMigrationsFailed(record, templates.failure);
    const built = { base: templates.base, head: templates.head };
    const setup = await prepareReplays(config, record, places, built, context.logger);

    const comparison = await replayAndCompare({
      config,
      record,
      context,
      workload: workload.workload,
      evidence: workload.evidence,
      places,
      templates: built,
      setup,
    });
    return await judge(config, record, workload, comparison, { places, templates: built, secrets: secretsOf(held) }, context);
  } catch (thrown) {
    const error = toCliError(thrown, stageLabel(record.stage));
    let message = error.message;
    for (const secret of secretsOf(held)) message = redact(message, secret);
    return { report: record.failed(message), exitCode: error.exitCode, error };
  } finally {
    await releaseHoldings(held, context.logger);
  }
}

/** Head's migrations failed: the PR's change fails, a regression, with nothing to replay. */
function headMigrationsFailed(record: GateRecord, failure: GateReport['migration_failure']): RunOutcome<GateReport> {
  record.migrationFailure = failure;
  const decided = decideVerdict({ comparison: null, migrationFailure: failure, thresholds: record.thresholds, servers: record.servers });
  return { report: record.report({ ...decided, error: null, warnings: record.warnings, comparison: null }), exitCode: ExitCode.Regression };
}

/**
 * The verdict on what the rounds measured, with the query plans of the fingerprints that changed.
 * @param config the run's options
 * @param record the run so far
 * @param workload the workload, for the plan probe
 * @param comparison the rounds' comparison
 * @param where the servers, the templates the plans are probed on, and the secrets to keep out of messages
 * @param context the log
 * @returns the report and the exit status
 */
async function judge(
  config: GateConfig,
  record: GateRecord,
  workload: GateWorkload,
  comparison: Comparison,
  where: { places: Places; templates: { base: string; head: string }; secrets: (string | undefined)[] },
  context: RunContext,
): Promise<RunOutcome<GateReport>> {
  const { base, head } = where.places;
  const targets = {
    base: { url: withDatabase(base.server.url, where.templates.base), major: majorOf(base.server.version) },
    head: { url: withDatabase(head.server.url, where.templates.head), major: majorOf(head.server.version) },
  };
  const plans = await probeTemplates(
    workload.workload,
    comparison,
    targets,
    sideCounters(base.counters!, head.counters!),
    context.logger,
    where.secrets,
    // The files head applied (not a migrate command), to name the line of an index change.
    (record.templates?.migrations ?? [])
      .filter((m) => m.side === 'head' && m.ok && m.name !== 'migrate-command')
      .map((m) => ({ name: m.name, path: path.resolve(context.cwd, m.name) })),
  );
  record.plans = applyWorkRule(plans, record.thresholds.work_rule ?? null, record.thresholds.min_calls);
  const decided = decideVerdict({
    comparison,
    coverage: coverageOf(record.side('base'), record.side('head'), config.thresholds.minCoverage),
    headAccounting: sideAccounting(record.side('head')),
    migrationFailure: null,
    thresholds: record.thresholds,
    plans: record.plans,
    servers: record.servers,
  });
  const exitCode = exitCodeOfVerdict(decided.verdict);
  const error = decided.verdict === 'error' ? new InfraError(decided.reasons[0] ?? decided.headline) : undefined;
  return {
    report: record.report({
      ...decided,
      warnings: [...record.warnings, ...decided.warnings],
      error: error ? { stage: 'compare', message: error.message } : null,
      comparison,
    }),
    exitCode,
    error,
  };
}
