// Workloads written for a test, in pg-retest's JSON profile shape (what `writeWorkload` takes).
import type { WorkloadProfileJson } from '../../src/engine.js';

/** Where the sessions of a synthetic profile say they ran; the replay's URL decides where they run. */
export interface ProfileOrigin {
  user?: string;
  database?: string;
}

/**
 * A profile of sessions given as `[offset µs, sql]` pairs.
 * @param sessions one list of statements per session, in order
 * @param origin the user and database each session records (default `app`/`app`)
 * @returns the profile
 */
export function syntheticProfile(sessions: [number, string][][], { user = 'app', database = 'app' }: ProfileOrigin = {}): WorkloadProfileJson {
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
      queries: queries.map(([start_offset_us, sql]) => ({
        sql,
        start_offset_us,
        duration_us: 100,
        kind: 'Other',
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
