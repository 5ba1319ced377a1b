/**
 * One shard of a sharded run (`gate --shard i/N`, docs/scale-out.md): cut the shard's part of the
 * workload, run the gate on it as on any workload (its own server; base, head and the noise
 * replay; confirmation rounds when its own comparison suspects a regression), and keep what the
 * aggregate pools: the shard's report with the executions per fingerprint, the body floor and the
 * replays' medians.
 * The shard's verdict is on its part only; the run's verdict is the aggregate's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ReplayReport } from '../engine/index.js';
import { CliError, InfraError } from '../exit-codes.js';
import type { GateRecord } from '../gate/gate-record.js';
import type { GateConfig } from '../gate/options.js';
import { runGate } from '../gate/run-gate.js';
import type { ShardSpec } from '../gate/shard-option.js';
import type { RunContext, RunOutcome } from '../runtime/run-context.js';
import { type Executions, PARTIAL_FORMAT, PARTIAL_VERSION, type PartialReport } from './partial.js';
import { bodyFloor } from './body-floor.js';
import { replayFigures } from './replay-figures.js';
import { writeWorkloadPart } from './workload-part.js';

/** What a shard's run ends with: its partial report (null when its part could not even be cut). */
export interface ShardOutcome {
  headline: string;
  partial: PartialReport | null;
}

/**
 * Runs one shard.
 * @param config the gate's options, `shard` set
 * @param shard which part
 * @param context logger, environment, interrupt
 * @returns the partial report and the exit status: 0 whatever the shard's own verdict, the
 *   failure's status (2, 3, 130) when the shard could not measure its part
 */
export async function runShard(config: GateConfig, shard: ShardSpec, context: RunContext): Promise<RunOutcome<ShardOutcome>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-shard-'));
  try {
    const part = await writeWorkloadPart(config.workload, shard, dir);
    context.logger.info(
      `shard ${shard.index}/${shard.count}: ${part.sessions} of ${part.whole.sessions} sessions, ` +
        `${part.statements} of ${part.whole.statements} statements, ${(part.duration_us / 1e6).toFixed(1)} s captured`,
    );
    let record: GateRecord | undefined;
    const outcome = await runGate({ ...config, workload: part.file }, context, (r) => {
      record = r;
    });
    const report = outcome.report;
    report.environment.workload = { path: config.workload, sessions: part.sessions, statements: part.statements };
    const reports = record?.reports ?? [];
    const partial: PartialReport = {
      format: PARTIAL_FORMAT,
      version: PARTIAL_VERSION,
      shard: { index: shard.index, count: shard.count },
      workload: part.whole,
      part: { sessions: part.sessions, statements: part.statements, groups: part.groups, duration_us: part.duration_us },
      executions: executionsOf(reports),
      body_floor: bodyFloor(
        reports.find((r) => r.planned.side === 'base')?.report,
        reports.find((r) => r.planned.side === 'noise')?.report,
        config.thresholds.minCalls,
      ),
      replays: replayFigures(
        reports.map((r) => ({ side: r.planned.side, report: r.report })),
        (report.comparison?.fingerprints ?? []).map((f) => f.fingerprint),
      ),
      report,
    };
    const headline = `shard ${shard.index}/${shard.count} (its part only; the aggregate decides): ${report.headline}`;
    // A shard that measured its part has done its job, whatever it found there.
    const exitCode = report.verdict === 'error' ? outcome.exitCode : 0;
    return { report: { headline, partial }, exitCode, error: report.verdict === 'error' ? outcome.error : undefined };
  } catch (error) {
    // Only cutting the part can throw here (runGate reports its own failures): bad input mostly.
    const failure = error instanceof CliError ? error : new InfraError(error instanceof Error ? error.message : String(error));
    return {
      report: { headline: `shard ${shard.index}/${shard.count}: ${failure.message}`, partial: null },
      exitCode: failure.exitCode,
      error: failure,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Every fingerprint's executions on each side, over the shard's replays. */
function executionsOf(reports: { planned: { side: 'base' | 'head' | 'noise' }; report: ReplayReport }[]): Record<string, Executions> {
  const executions: Record<string, Executions> = {};
  for (const { planned, report } of reports) {
    for (const f of report.fingerprints) {
      const e = executions[f.fingerprint] ?? { normalized: f.normalized, kind: f.kind, base: 0, noise: 0, head: 0 };
      e[planned.side] += f.counts.executed;
      executions[f.fingerprint] = e;
    }
  }
  return executions;
}
