/** Statement accounting of one side: its replays' totals summed. */
import type { ReplayReport } from '../types.js';
import type { SideAccounting } from './report-types.js';

/**
 * Sums the replays of one side.
 * @param reports that side's replay reports
 * @returns their accounting
 */
export function sideAccounting(reports: ReplayReport[]): SideAccounting {
  const total: SideAccounting = {
    replays: 0,
    sessions_planned: 0,
    sessions_completed: 0,
    captured: 0,
    executed: 0,
    ok: 0,
    errors: 0,
    skipped: 0,
    not_executed: 0,
  };
  for (const report of reports) {
    total.replays += 1;
    total.sessions_planned += report.sessions_planned;
    total.sessions_completed += report.sessions_completed;
    for (const key of ['captured', 'executed', 'ok', 'errors', 'skipped', 'not_executed'] as const) total[key] += report.totals[key];
  }
  return total;
}
