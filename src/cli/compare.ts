/**
 * `compare`: the gate's comparison and verdict over replay reports someone else produced
 * (`replay --json`), e.g. replays on two servers or two branches run in separate jobs.
 */
import fs from 'node:fs';
import os from 'node:os';
import { z } from 'zod';
import { compareReplays, type ReplayReport } from '../engine/index.js';
import { ExitCode, InputError } from '../exit-codes.js';
import { runnerDescription } from '../gate/github-event.js';
import { type GateReport, REPORT_SCHEMA_VERSION } from '../verdict/report-types.js';
import { decideVerdict, exitCodeOfVerdict } from '../verdict/decide.js';
import { sideAccounting } from '../verdict/accounting.js';
import { coverageOf } from '../verdict/coverage.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import type { CompareConfig } from './compare-options.js';
import { fromEngineError } from '../engine/errors.js';
import { type Io, stderrLogger } from '../runtime/io.js';
import { comparisonOptions } from '../gate/options.js';
import { gateReportFiles } from './gate-report-files.js';
import { checkReportDirs, printAndWriteReport } from '../runtime/report-files.js';
import { renderMarkdown } from '../report/markdown.js';
import { toolInfo } from '../tool.js';

/** Just enough of a replay report to know it is one, with samples. */
const replayReportShape = z
  .object({
    status: z.string(),
    server_version: z.string(),
    sessions_failed: z.number(),
    totals: z
      .object({
        captured: z.number(),
        executed: z.number(),
        ok: z.number(),
        errors: z.number(),
        skipped: z.number(),
        not_executed: z.number(),
      })
      .passthrough(),
    fingerprints: z.array(z.object({ fingerprint: z.string(), samples: z.array(z.number()).optional() }).passthrough()),
  })
  .passthrough();

function readReport(file: string, option: string): ReplayReport {
  let data: unknown;
  try {
    data = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`option --${option}: cannot read ${file} as JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = replayReportShape.safeParse(data);
  if (!parsed.success)
    throw new InputError(`option --${option}: ${file} is not a replay report (write one with pg-retest-action replay --json)`);
  if (parsed.data.status !== 'completed') {
    throw new InputError(
      `option --${option}: the replay in ${file} did not complete (status ${parsed.data.status}); its latencies cannot be compared`,
    );
  }
  // A replay that left sessions or statements out did not measure what the other side did.
  const outcome = replayOutcome(data as ReplayReport);
  if (outcome.exitCode !== ExitCode.Ok) {
    throw new InputError(
      `option --${option}: the replay in ${file} did not run in full: ${outcome.problem ?? 'see its report'}; compare only complete replays`,
    );
  }
  if (parsed.data.fingerprints.some((f) => f.samples === undefined)) {
    throw new InputError(`option --${option}: ${file} has no latency samples; write it with this version's replay --json`);
  }
  return data as ReplayReport;
}

/**
 * Runs `compare`.
 * @param config validated options
 * @param io where to print
 * @returns 0 pass, 1 regression
 */
export async function runCompare(config: CompareConfig, io: Io): Promise<ExitCode> {
  const files = gateReportFiles(config.outputs);
  checkReportDirs(files);
  const base = config.base.map((file) => readReport(file, 'base'));
  const head = config.head.map((file) => readReport(file, 'head'));
  const noise = config.noise
    ? (config.noise.map((file) => readReport(file, 'noise')) as [ReplayReport, ReplayReport])
    : base.length >= 2
      ? ([base[0]!, base[1]!] as [ReplayReport, ReplayReport])
      : null;
  const t = config.thresholds;
  const comparison = await compareReplays({
    base,
    head,
    noise,
    options: comparisonOptions(t),
  }).catch((error: unknown) => {
    throw fromEngineError(error);
  });
  const thresholds = {
    p95_threshold: t.p95Threshold,
    min_delta_ms: t.minDeltaMs,
    min_calls: t.minCalls,
    max_new_errors: t.maxNewErrors,
    confidence: t.confidence,
    min_coverage: t.minCoverage,
    server_threshold: t.serverThreshold,
    server_min_delta_ms: t.serverMinDeltaMs,
  };
  const coverage = coverageOf(base, head, t.minCoverage);
  const decided = decideVerdict({ comparison, coverage, migrationFailure: null, thresholds });
  const report: GateReport = {
    schema_version: REPORT_SCHEMA_VERSION,
    tool: toolInfo(),
    ...decided,
    error: decided.verdict === 'error' ? { stage: 'compare', message: decided.reasons[0] ?? decided.headline } : null,
    thresholds,
    environment: {
      server_version: base[0]!.server_version,
      server_kind: null,
      server: null,
      postgres_config: {},
      rounds: Math.min(base.length, head.length),
      speed: base[0]!.speed,
      workload: { path: '', sessions: base[0]!.sessions_planned, statements: base[0]!.totals.captured },
      seed: null,
      base: { ref: null, sha: null, source: `replay reports: ${config.base.join(', ')}` },
      head: { sha: null, source: `replay reports: ${config.head.join(', ')}` },
      head_from_scratch: null,
      runner: runnerDescription(io.env, os.hostname()),
      started_at: base[0]!.started_at,
      wall_time_ms: 0,
    },
    migrations: [],
    migration_failure: null,
    replays: [],
    accounting: { base: sideAccounting(base), head: sideAccounting(head) },
    coverage,
    comparison,
  };
  printAndWriteReport(io, report, (r) => renderMarkdown(r), files);
  stderrLogger(io).info(report.headline);
  return exitCodeOfVerdict(decided.verdict);
}
