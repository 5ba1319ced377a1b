// Workloads written for a test, in pg-retest's JSON profile shape (what `writeWorkload` takes).
import type { QueryKind, WorkloadProfileJson } from '../../src/types.js';

/** One statement: its offset from the start (µs), its text, and its kind (default `Other`). */
export type ProfileStatement = [offsetUs: number, sql: string, kind?: QueryKind];

/** Where the sessions of a synthetic profile say they ran; the replay's URL decides where they run. */
export interface ProfileOrigin {
  user?: string;
  database?: string;
}

/**
 * A profile of sessions given as their statements.
 * @param sessions one list of statements per session, in order
 * @param origin the user and database each session records (default `app`/`app`)
 * @returns the profile
 */
export function syntheticProfile(
  sessions: ProfileStatement[][],
  { user = 'app', database = 'app' }: ProfileOrigin = {},
): WorkloadProfileJson {
  const total = sessions.reduce((n, s) => n + s.length, 0);
  return {
    version: 2,
    captured_at: '2026-01-01T00:00:00Z',
    source_host: 'test',
    pg_version: '16',
    capture_method: 'synthetic',
    sessions: sessions.map((queries, i) => ({
      id: i + 1,
      user,
      database,
      queries: queries.map(([start_offset_us, sql, kind]) => ({
        sql,
        start_offset_us,
        duration_us: 100,
        kind: kind ?? 'Other',
        transaction_id: null,
      })),
    })),
    metadata: {
      total_queries: total,
      total_sessions: sessions.length,
      capture_duration_us: Math.max(0, ...sessions.flat().map(([offset]) => offset)),
    },
  };
}
