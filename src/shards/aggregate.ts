/**
 * `aggregate`: the shards' partial reports → one report and one verdict (docs/scale-out.md).
 * Partials of another workload, commit pair, shard count or thresholds are refused (exit 2): a
 * verdict pooled from two different runs would speak for neither. A shard with no partial, or
 * whose partial says it could not measure its part, makes the run inconclusive (exit 4) naming
 * it: the shards that happened to finish never pass for the whole. A regression found in the
 * shards that did measure stands, with the missing ones named beside it, as a regression found in
 * what ran stands when coverage is short.
 */
import { InputError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import type { Logger } from '../runtime/logger.js';
import type { RunOutcome } from '../runtime/run-context.js';
import { toolInfo } from '../tool.js';
import type { Comparison } from '../types.js';
import { decideVerdict, exitCodeOfVerdict, type VerdictResult } from '../verdict/decide.js';
import { type GateReport, REPORT_SCHEMA_VERSION, type ShardRun } from '../verdict/report-types.js';
import { type PartialReport, readPartial } from './partial.js';
import { poolComparisons } from './pool-comparison.js';
import { pooledAccounting, pooledCoverage, pooledKeys, pooledPlans } from './pool-record.js';

type Measured = PartialReport & { report: { comparison: Comparison } };

/** What the shards that measured add up to. */
interface Pooled {
  comparison: Comparison | null;
  accounting: GateReport['accounting'];
  coverage: GateReport['coverage'];
  plans: GateReport['plans'];
  keys: GateReport['keys'];
}

function pool(measured: readonly Measured[]): Pooled {
  const reports = measured.map((p) => p.report);
  const executed = new Set(
    measured.flatMap((p) =>
      Object.entries(p.executions)
        .filter(([, e]) => e.base + e.noise + e.head > 0)
        .map(([fingerprint]) => fingerprint),
    ),
  );
  return {
    comparison: measured.length > 0 ? poolComparisons(measured, measured[0]!.report.thresholds) : null,
    accounting: pooledAccounting(reports),
    coverage: pooledCoverage(reports, executed),
    plans: pooledPlans(reports),
    keys: pooledKeys(reports),
  };
}

/**
 * Reads the partial reports and gives the run's report.
 * @param files the partial reports (`gate --shard i/N --json FILE`), in any order
 * @param logger progress lines
 * @returns the report and the exit status
 * @throws InputError for no file, an unreadable one, or partials of different runs
 */
export function aggregatePartials(files: readonly string[], logger: Logger): RunOutcome<GateReport> {
  if (files.length === 0) throw new InputError('option --partial: give the partial reports of the shards (gate --shard i/N --json FILE)');
  const partials = files.map((file) => ({ file, partial: readPartial(file) }));
  checkOneRun(partials);
  const sorted = partials.map((p) => p.partial).sort((a, b) => a.shard.index - b.shard.index);
  const count = sorted[0]!.shard.count;
  logger.info(`aggregate: ${plural(sorted.length, 'partial report')} of ${plural(count, 'shard')}`);
  const pooled = pool(sorted.filter(isMeasured));
  const report = assemble(sorted, decide(sorted, pooled), pooled);
  return { report, exitCode: exitCodeOfVerdict(report.verdict) };
}

/**
 * What every partial of one run shares, in words, for the message when one does not. The
 * workload is told by its digest: its path may differ between runners.
 */
function identity(p: PartialReport): [string, string][] {
  const env = p.report.environment;
  return [
    ['shard count', String(p.shard.count)],
    ['workload', `sha256 ${p.workload.sha256.slice(0, 12)} (${p.workload.path})`],
    ['base commit', env.base.sha ?? env.base.source],
    ['head commit', env.head.sha ?? env.head.source],
    ['thresholds', JSON.stringify(p.report.thresholds)],
  ];
}

/** What must be equal: what {@link identity} says, the workload by its digest alone. */
function runParts(p: PartialReport): string[] {
  return identity(p).map(([what, value]) => (what === 'workload' ? p.workload.sha256 : value));
}

function runKey(p: PartialReport): string {
  return JSON.stringify(runParts(p));
}

/** Refuses partials of different runs (naming one that differs from most), and two partials of one shard. */
function checkOneRun(partials: readonly { file: string; partial: PartialReport }[]): void {
  const runs = new Map<string, number>();
  for (const { partial } of partials) runs.set(runKey(partial), (runs.get(runKey(partial)) ?? 0) + 1);
  const most = [...runs.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  const reference = partials.find((p) => runKey(p.partial) === most)!;
  const odd = partials.find((p) => runKey(p.partial) !== most);
  if (odd) {
    const at = runParts(odd.partial).findIndex((part, i) => part !== runParts(reference.partial)[i]);
    const [what, value] = identity(odd.partial)[at]!;
    const theirs = identity(reference.partial)[at]![1];
    throw new InputError(
      `partial report ${odd.file} is of another run: its ${what} is ${value}, ${reference.file}'s ${theirs}; ` +
        'aggregate the partials of one run (one workload, one commit pair, one shard count, the same thresholds)',
    );
  }
  const seen = new Map<number, string>();
  for (const { file, partial } of partials) {
    const other = seen.get(partial.shard.index);
    if (other !== undefined)
      throw new InputError(`partial reports ${other} and ${file} are both of shard ${partial.shard.index}/${partial.shard.count}`);
    seen.set(partial.shard.index, file);
  }
}

function isMeasured(p: PartialReport): p is Measured {
  return p.report.comparison !== null && p.report.verdict !== 'error';
}

/** The verdict: on the pooled comparison, then held to every shard having measured. */
function decide(partials: readonly PartialReport[], pooled: Pooled): VerdictResult {
  const first = partials[0]!.report;
  const count = partials[0]!.shard.count;
  const headFailure = partials.find((p) => p.report.migration_failure?.side === 'head')?.report.migration_failure ?? null;
  if (headFailure) {
    return decideVerdict({ comparison: null, migrationFailure: headFailure, thresholds: first.thresholds });
  }
  const present = new Set(partials.map((p) => p.shard.index));
  const gaps = [
    ...Array.from({ length: count }, (_, i) => i + 1)
      .filter((i) => !present.has(i))
      .map((i) => `shard ${i}/${count} is missing (no partial report of it was given)`),
    ...partials
      .filter((p) => !isMeasured(p))
      .map((p) => `shard ${p.shard.index}/${count} failed: ${p.report.error?.message ?? p.report.headline}`),
  ];
  if (pooled.comparison === null) return inconclusive(gaps, []);
  const result = decideVerdict({
    comparison: pooled.comparison,
    coverage: pooled.coverage,
    headAccounting: pooled.accounting?.head ?? null,
    migrationFailure: null,
    thresholds: first.thresholds,
    plans: pooled.plans,
    servers: first.servers ?? null,
  });
  if (gaps.length === 0) return result;
  // A regression in what was measured stands; anything else would speak for shards that did not.
  if (result.verdict === 'regression') return { ...result, warnings: [...gaps, ...result.warnings] };
  return inconclusive(gaps, result.warnings);
}

function inconclusive(gaps: string[], warnings: string[]): VerdictResult {
  return {
    verdict: 'inconclusive',
    headline: `inconclusive: ${gaps[0]}${gaps.length > 1 ? ` (and ${plural(gaps.length - 1, 'more shard')})` : ''}; the shards that finished do not speak for the whole workload`,
    reasons: [...gaps, 'rerun the missing or failed shards (their jobs, then this one); no verdict is given on part of the workload'],
    warnings,
  };
}

/** One report for the run, from the shards' reports and the verdict. */
function assemble(partials: readonly PartialReport[], result: VerdictResult, pooled: Pooled): GateReport {
  const first = partials[0]!;
  const reports = partials.map((p) => p.report);
  const shardWarnings = new Set(partials.flatMap((p) => p.report.warnings.map((w) => `shard ${p.shard.index}/${p.shard.count}: ${w}`)));
  const runners = [...new Set(reports.map((r) => r.environment.runner))];
  return {
    schema_version: REPORT_SCHEMA_VERSION,
    tool: toolInfo(),
    verdict: result.verdict,
    headline: result.headline,
    reasons: result.reasons,
    error: null,
    thresholds: first.report.thresholds,
    environment: {
      ...first.report.environment,
      rounds: Math.max(...reports.map((r) => r.environment.rounds)),
      workload: { path: first.workload.path, sessions: first.workload.sessions, statements: first.workload.statements },
      runner: `${plural(first.shard.count, 'shard')}: ${runners.join('; ')}`,
      started_at: reports.map((r) => r.environment.started_at).sort()[0]!,
      // The matrix's wall time is its slowest shard's; each shard's is in `shards`.
      wall_time_ms: Math.max(...reports.map((r) => r.environment.wall_time_ms)),
    },
    migrations: first.report.migrations,
    migration_failure: reports.find((r) => r.migration_failure)?.migration_failure ?? null,
    replays: reports.flatMap((r) => r.replays),
    accounting: pooled.accounting,
    comparison: pooled.comparison,
    plans: pooled.plans,
    coverage: pooled.coverage,
    keys: pooled.keys,
    servers: first.report.servers ?? null,
    shards: shardRuns(partials),
    warnings: [...result.warnings, ...shardWarnings],
  };
}

/** Every shard of the run, in order, those without a partial report as missing. */
function shardRuns(partials: readonly PartialReport[]): ShardRun[] {
  const count = partials[0]!.shard.count;
  const byIndex = new Map(partials.map((p) => [p.shard.index, p]));
  return Array.from({ length: count }, (_, i): ShardRun => {
    const p = byIndex.get(i + 1);
    if (!p)
      return {
        index: i + 1,
        count,
        verdict: 'missing',
        headline: 'no partial report',
        sessions: 0,
        statements: 0,
        rounds: 0,
        wall_time_ms: 0,
        runner: '',
      };
    const env = p.report.environment;
    return {
      index: i + 1,
      count,
      verdict: p.report.verdict,
      headline: p.report.headline,
      sessions: p.part.sessions,
      statements: p.part.statements,
      rounds: env.rounds,
      wall_time_ms: env.wall_time_ms,
      runner: env.runner,
    };
  });
}
