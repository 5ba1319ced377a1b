/**
 * What one sweep step measured, from the replay report(s) at that concurrency. Throughput counts
 * successful statements only (a statement that fails fast must not look like capacity), and
 * refused sessions (SQLSTATE 53300, "too many clients") are counted, never folded into errors.
 */
import type { ReplayReport } from '../types.js';

/** SQLSTATE of a connection refused because the server has no free slot. */
export const TOO_MANY_CONNECTIONS = '53300';

/** One replay at one step. */
export interface StepRun {
  /** Successful statements per second of wall time. */
  throughput: number;
  wall_time_ms: number;
  ok: number;
  errors: number;
  /** Statements not sent because they could change data (read-only sweep). */
  skipped_writes: number;
  /** Statements not sent for another reason (their session was refused, the deadline…). */
  not_executed: number;
  /** Sessions the server refused with "too many clients". */
  refused_sessions: number;
  /** Sessions that failed to connect for another reason. */
  failed_sessions: number;
  sessions: number;
  p50_us: number;
  p95_us: number;
  p99_us: number;
  status: ReplayReport['status'];
}

/** A step: its concurrency cap and every replay run there (more than one when confirmed). */
export interface StepMetrics extends StepRun {
  connections: number;
  /** Every run at this step; the figures above are the median run's (by throughput). */
  runs: StepRun[];
}

/**
 * @param report one replay
 * @returns its figures
 */
export function stepRun(report: ReplayReport): StepRun {
  const refused = report.sessions.filter((s) => s.status === 'connect_failed' && s.sqlstate === TOO_MANY_CONNECTIONS).length;
  const failed = report.sessions.filter((s) => s.status === 'connect_failed').length - refused;
  const seconds = report.wall_time_us / 1e6;
  return {
    throughput: seconds > 0 ? report.totals.ok / seconds : 0,
    wall_time_ms: Math.round(report.wall_time_us / 1000),
    ok: report.totals.ok,
    errors: report.totals.errors,
    skipped_writes: report.totals.skipped_by_reason.read_only ?? 0,
    not_executed: report.totals.not_executed,
    refused_sessions: refused,
    failed_sessions: failed,
    sessions: report.sessions_planned,
    p50_us: report.latency.p50_us,
    p95_us: report.latency.p95_us,
    p99_us: report.latency.p99_us,
    status: report.status,
  };
}

/**
 * Combines the runs of one step: the run with the median throughput stands for the step (with
 * an even count, the lower middle one: a confirmation never makes a side look better than its
 * runs), so one run slowed by a burst of load on a shared machine does not decide alone.
 * @param connections the step's cap
 * @param runs at least one
 * @returns the step
 */
export function combineRuns(connections: number, runs: StepRun[]): StepMetrics {
  if (runs.length === 0) throw new Error(`step ${connections}: no runs`);
  const sorted = [...runs].sort((a, b) => a.throughput - b.throughput);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return { ...median, connections, runs };
}
