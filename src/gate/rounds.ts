/**
 * The gate's replays and their comparison: rounds of base and head replays, each on a fresh copy
 * of its template (round-plan.ts orders them), compared by the engine; when the comparison
 * suspects a regression, confirmation rounds, and the comparison again on all of them.
 */
import { fromEngineError } from '../engine/errors.js';
import { compareReplays, type ReplayReport, type Workload } from '../engine/index.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import { ExitCode, InfraError, InterruptedError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { checkpoint, createDatabase, dropDatabase, setDatabaseOwner } from '../provision/database.js';
import { passwordOf, redact, replayUrl } from '../provision/url.js';
import type { RunContext } from '../runtime/run-context.js';
import type { Comparison } from '../types.js';
import type { CaptureEvidence } from './capture-evidence.js';
import { type GateRecord, throwIfInterrupted } from './gate-record.js';
import { comparisonOptions, type GateConfig } from './options.js';
import type { Places, ReplaySetup } from './places.js';
import { replayOnce } from './replay-once.js';
import { replayLine, replayRecord } from './replay-record.js';
import { roleUrl } from './replay-role.js';
import { planConfirmation, planReplays, type PlannedReplay } from './round-plan.js';
import { sendDurations } from './server-time.js';
import { replayPlan } from './time-budget.js';

/** What the rounds need of the run. */
export interface Rounds {
  config: GateConfig;
  record: GateRecord;
  context: RunContext;
  workload: Workload;
  evidence: CaptureEvidence;
  places: Places;
  templates: { base: string; head: string };
  setup: ReplaySetup;
}

/**
 * Replays the rounds the time budget (or the options) allow, compares, and confirms a suspected
 * regression with more rounds.
 * @param rounds what the rounds need
 * @returns the comparison of all the rounds replayed
 */
export async function replayAndCompare(rounds: Rounds): Promise<Comparison> {
  const { config, record, workload, context } = rounds;
  record.stage = 'replay';
  const plan = replayPlan(config, workload, Date.now() - record.startedAt.getTime());
  if (plan.budget) {
    record.environment.time_budget = plan.budget;
    context.logger.info(`time budget: ${plan.budget.note}`);
  }
  record.environment.rounds = plan.rounds;
  record.environment.speed = plan.speed;
  await replayRounds(rounds, planReplays(plan.rounds), plan.rounds, plan.speed);

  record.stage = 'compare';
  const comparison = await compareSides(rounds);
  const suspected = suspectedRegressions(comparison);
  if (plan.confirmRounds === 0 || suspected === 0) return comparison;

  // One unlucky burst on a shared runner can make the head replays of a few rounds the
  // slowest ones (docs/gate-statistics.md); more rounds make that chance negligible, and
  // cost time only when a regression is suspected.
  const total = plan.rounds + plan.confirmRounds;
  context.logger.info(
    `${plural(suspected, 'suspected regression')} after ${plural(plan.rounds, 'round')}: replaying ${plan.confirmRounds} more to confirm`,
  );
  record.stage = 'replay';
  await replayRounds(rounds, planConfirmation(plan.rounds, plan.confirmRounds), total, plan.speed);
  record.environment.rounds = total;
  record.stage = 'compare';
  const confirmedComparison = await compareSides(rounds);
  const confirmed = suspectedRegressions(confirmedComparison);
  record.warnings.push(
    confirmed > 0
      ? `${plural(suspected, 'suspected regression')} after ${plan.rounds} rounds; ${plan.confirmRounds} confirmation rounds were replayed and the verdict is on all ${total}: ${confirmed} confirmed`
      : `${plural(suspected, 'suspected regression')} after ${plan.rounds} rounds did not hold over ${plan.confirmRounds} confirmation rounds (the verdict is on all ${total}): runner noise, not the PR`,
  );
  return confirmedComparison;
}

/**
 * Replays the planned replays one after another, each on a fresh copy of its side's template.
 * @param rounds the run
 * @param plan the replays, in order
 * @param totalRounds the rounds of the run so far, for the log
 * @param speed the replay speed
 * @throws InfraError (or InterruptedError) when a replay did not run in full
 */
async function replayRounds(rounds: Rounds, plan: PlannedReplay[], totalRounds: number, speed: number): Promise<void> {
  const { record, places, templates, setup, context } = rounds;
  for (const [index, planned] of plan.entries()) {
    throwIfInterrupted(context.signal);
    const place = planned.side === 'head' ? places.head : places.base;
    const template = planned.side === 'head' ? templates.head : templates.base;
    const name = `${place.prefix}_r${planned.round}_${planned.side}`;
    context.logger.info(
      `round ${planned.round}/${totalRounds}: replay ${index + 1} of ${plan.length} on ${planned.side === 'noise' ? 'base again (noise)' : planned.side}`,
    );
    place.created.push(name);
    const url = await createDatabase(place.server.url, name, template);
    if (setup.serverTime.available) await sendDurations(place.server.url, name);
    const role = place.identity?.role;
    if (role) await setDatabaseOwner(place.server.url, name, role.name);
    await checkpoint(place.server.url);
    // The other server sits idle through this replay: with its writes flushed now (and
    // autovacuum off on servers the gate starts) it has nothing to do meanwhile
    // (docs/gate.md, "Gating server changes").
    if (places.separate) await checkpoint((place === places.head ? places.base : places.head).server.url);
    const watch = await place.counters!.watch(name);
    const target = replayUrl(place.server, url);
    const report = await replayRound(rounds, speed, role ? roleUrl(target, role) : target);
    if (watch) await place.counters!.collect(planned.side, watch);
    await dropDatabase(place.server.url, name);
    place.created.pop();
    record.addReplay(planned, report, replayRecord(planned, report));
    context.logger.info(replayLine(report));
    const timeoutMs = rounds.config.replayTimeoutMs;
    const outcome = replayOutcome(report, { deadlineS: timeoutMs === undefined ? undefined : timeoutMs / 1000 });
    if (outcome.problem) {
      const where = `round ${planned.round}, ${planned.side} replay`;
      const message = redact(redact(`${where}: ${outcome.problem}`, passwordOf(url)), role?.password);
      if (outcome.exitCode === ExitCode.Interrupted) throw new InterruptedError(message);
      throw new InfraError(message);
    }
  }
}

/** One replay of a round, with the run's options. */
function replayRound(rounds: Rounds, speed: number, url: string): Promise<ReplayReport> {
  const { config, setup } = rounds;
  return replayOnce(
    rounds.workload,
    {
      conninfo: url,
      speed,
      skipServerWide: setup.skipServerWide,
      maxConnections: config.maxConnections,
      statementTimeoutMs: config.statementTimeoutMs,
      deadlineMs: config.replayTimeoutMs,
      includeSamples: true,
      serverTime: setup.serverTime.available,
      ...config.keys,
    },
    rounds.context,
  );
}

/** The engine's comparison of base's replays with head's, the noise pair beside. */
async function compareSides(rounds: Rounds): Promise<Comparison> {
  const { config, record, setup } = rounds;
  const base = record.side('base');
  let comparison: Comparison;
  try {
    comparison = await compareReplays({
      base,
      head: record.side('head'),
      noise: [base[0]!, record.side('noise')[0]!],
      capture: rounds.evidence.failures,
      options: comparisonOptions(config.thresholds),
    });
  } catch (error) {
    throw fromEngineError(error);
  }
  const serverTime = setup.serverTime;
  return serverTime.available ? comparison : { ...comparison, server_time: { ...comparison.server_time, reason: serverTime.reason } };
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
