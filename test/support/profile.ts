// Workloads written by tests: sessions of statements at given offsets, in pg-retest's JSON shape
// (`writeWorkload()` turns it into a .wkl).
import type { QueryKind, WorkloadProfileJson } from '../../src/types.js';

/** One statement: its offset from the start (µs), its text, and its kind (default `Other`). */
export type ProfileStatement = [offsetUs: number, sql: string, kind?: QueryKind];

/**
 * Sessions as a workload profile.
 * @param sessions each session's statements, in order
 * @returns the profile
 */
export function profileOf(sessions: ProfileStatement[][]): WorkloadProfileJson {
  const total = sessions.reduce((n, s) => n + s.length, 0);
  return {
    version: 2,
    captured_at: '2026-01-01T00:00:00Z',
    source_host: 'test',
    pg_version: '16',
    capture_method: 'synthetic',
    sessions: sessions.map((queries, i) => ({
      id: i + 1,
      user: 'app',
      database: 'app',
      queries: queries.map(([start_offset_us, sql, kind]) => ({ sql, start_offset_us, duration_us: 100, kind: kind ?? 'Other', transaction_id: null })),
    })),
    metadata: {
      total_queries: total,
      total_sessions: sessions.length,
      capture_duration_us: Math.max(0, ...sessions.flat().map(([offset]) => offset)),
    },
  };
}
