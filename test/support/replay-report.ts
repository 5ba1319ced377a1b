// A synthetic replay report around given fingerprints, for tests that feed the engine's
// comparison without replaying: the totals are the fingerprints' counts summed.
import type { FingerprintReport, ReplayReport } from '../../src/engine/index.js';

/** An empty latency summary. */
export const NO_LATENCY = { count: 0, mean_us: 0, min_us: 0, p50_us: 0, p95_us: 0, p99_us: 0, max_us: 0 };

/**
 * A completed replay of these fingerprints.
 * @param fingerprints what it ran
 * @param extra fields to set over the defaults
 */
export function replayReportOf(fingerprints: FingerprintReport[], extra: Partial<ReplayReport> = {}): ReplayReport {
  const sum = (k: 'captured' | 'executed' | 'ok' | 'errors' | 'skipped' | 'not_executed') =>
    fingerprints.reduce((n, f) => n + f.counts[k], 0);
  const skipped = sum('skipped');
  const notExecuted = sum('not_executed');
  return {
    status: 'completed',
    message: null,
    server_version: '15.0',
    started_at: '2026-01-01T00:00:00Z',
    wall_time_us: 0,
    speed: 1,
    read_only: false,
    sessions_planned: 10,
    sessions_completed: 10,
    sessions_failed: 0,
    sessions_excluded: 0,
    statements_excluded: 0,
    totals: {
      captured: sum('captured'),
      executed: sum('executed'),
      ok: sum('ok'),
      errors: sum('errors'),
      skipped,
      not_executed: notExecuted,
      skipped_by_reason: skipped ? { transaction_aborted: skipped } : {},
      not_executed_by_reason: notExecuted ? { connect_failed: notExecuted } : {},
    },
    latency: NO_LATENCY,
    sessions: [],
    fingerprints,
    warnings: [],
    ...extra,
  };
}
