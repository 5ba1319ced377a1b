/**
 * What the report keeps of one replay of a run, and the line the log shows for it: shared by the
 * gate's rounds and the A/B rounds of `run` (src/pg-retest-config/variants.ts).
 */
import { micros, plural } from '../format/units.js';
import type { ReplayReport } from '../types.js';
import type { ReplayRun } from '../verdict/report-types.js';
import type { PlannedReplay } from './round-plan.js';

/**
 * @param planned where the replay stood in the run
 * @param report the engine's report
 * @returns the report's record of it
 */
export function replayRecord(planned: PlannedReplay, report: ReplayReport): ReplayRun {
  return {
    round: planned.round,
    side: planned.side,
    position: planned.position,
    status: report.status,
    wall_time_ms: Math.round(report.wall_time_us / 1000),
    statements_executed: report.totals.executed,
    errors: report.totals.errors,
    p95_us: report.latency.p95_us,
  };
}

/**
 * @param report the engine's report
 * @returns `  1.2 s, 618 statements, 0 errors, p95 617 µs`
 */
export function replayLine(report: ReplayReport): string {
  return `  ${(report.wall_time_us / 1e6).toFixed(1)} s, ${plural(report.totals.executed, 'statement')}, ${plural(report.totals.errors, 'error')}, p95 ${micros(report.latency.p95_us)}`;
}
