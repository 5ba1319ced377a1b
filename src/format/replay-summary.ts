/** `replay`'s text output: how the run ended, where every statement went, and what was slow or failed. */
import type { ReplayReport, SessionReport } from '../types.js';
import { fields, oneLine, table } from './table.js';
import { count, micros, plural, reasonCounts, span } from './units.js';

export interface ReplaySummaryOptions {
  /** How many fingerprints to list by p95. Default 10. */
  top?: number;
  /** The server, as it should be named (never with a password). */
  server?: string;
}

/**
 * Renders a replay report.
 * @param report what the engine returned
 * @param options how much to show
 * @returns text ending in a newline
 */
export function renderReplaySummary(report: ReplayReport, options: ReplaySummaryOptions = {}): string {
  const top = options.top ?? 10;
  const t = report.totals;
  const settings = [`speed ${report.speed === 0 ? '0 (as fast as possible)' : `${report.speed}×`}`];
  if (report.read_only) settings.push('read-only');
  const status =
    report.status === 'completed'
      ? `completed in ${span(report.wall_time_us)}`
      : `${report.status.toUpperCase()} after ${span(report.wall_time_us)}${report.message ? `: ${report.message}` : ''}`;

  const sessionLine = [`${count(report.sessions_completed)}/${count(report.sessions_planned)} completed`];
  if (report.sessions_failed > 0) sessionLine.push(`${count(report.sessions_failed)} failed`);
  if (report.sessions_excluded > 0) sessionLine.push(`${count(report.sessions_excluded)} left out by class factor 0`);

  const statementLine =
    `${count(t.captured)} planned: ${count(t.executed)} executed (${count(t.ok)} ok, ${count(t.errors)} errors), ` +
    `${count(t.skipped)} skipped${reasons(t.skipped_by_reason)}, ${count(t.not_executed)} not executed${reasons(t.not_executed_by_reason)}`;

  const latency =
    report.latency.count > 0
      ? `p50 ${micros(report.latency.p50_us)}, p95 ${micros(report.latency.p95_us)}, p99 ${micros(report.latency.p99_us)}, ` +
        `max ${micros(report.latency.max_us)} (${plural(report.latency.count, 'successful execution')})`
      : 'no successful executions';

  const lines = fields([
    ['status', status],
    ['server', options.server ?? `PostgreSQL ${report.server_version}`],
    ['settings', settings.join(', ')],
    ['sessions', sessionLine.join(', ')],
    ['statements', statementLine],
    ['latency', latency],
  ]);

  const failed = failedSessions(report.sessions);
  if (failed.length > 0) lines.push('', 'sessions that did not complete:', ...failed);

  const slowest = report.fingerprints
    .filter((f) => f.latency.count > 0)
    .sort((a, b) => b.latency.p95_us - a.latency.p95_us || b.latency.count - a.latency.count)
    .slice(0, top);
  if (slowest.length > 0) {
    lines.push('', `top ${plural(slowest.length, 'fingerprint')} by p95:`);
    lines.push(
      ...table(
        ['p50', 'p95', 'p99', 'calls', 'errors', 'statement'],
        slowest.map((f) => [
          micros(f.latency.p50_us),
          micros(f.latency.p95_us),
          micros(f.latency.p99_us),
          count(f.counts.executed),
          count(f.counts.errors),
          oneLine(f.normalized),
        ]),
        ['right', 'right', 'right', 'right', 'right', 'left'],
      ),
    );
  }

  const errors = errorsBySqlstate(report);
  if (errors.length > 0) {
    lines.push('', 'errors by SQLSTATE:');
    lines.push(
      ...table(
        ['sqlstate', 'count', 'message', 'statement'],
        errors.map((e) => [e.sqlstate, count(e.count), oneLine(e.message, 70), oneLine(e.statement, 60)]),
        ['left', 'right', 'left', 'left'],
      ),
    );
  }

  if (report.warnings.length > 0) {
    lines.push('', `warnings (${report.warnings.length}):`, ...report.warnings.map((w) => `  ${w}`));
  }
  return `${lines.join('\n')}\n`;
}

function reasons(byReason: Partial<Record<string, number>>): string {
  const parts = reasonCounts(byReason);
  return parts ? ` (${parts})` : '';
}

/** Failed sessions grouped by what happened to them, so a hundred identical failures take one line. */
function failedSessions(sessions: SessionReport[]): string[] {
  const groups = new Map<string, SessionReport[]>();
  for (const s of sessions) {
    if (s.status === 'completed') continue;
    const key = `${s.status}\u0000${s.sqlstate ?? ''}\u0000${s.message ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0]!;
    const ids = group.map((s) => s.id);
    const shown = ids.length > 8 ? `${ids.slice(0, 8).join(', ')}, …` : ids.join(', ');
    const state = first.sqlstate ? ` [SQLSTATE ${first.sqlstate}]` : '';
    const lost = group.reduce((sum, s) => sum + s.counts.not_executed, 0);
    return (
      `  ${first.status}: ${plural(group.length, 'session')} (${shown})${state}` +
      `${first.message ? `: ${oneLine(first.message, 160)}` : ''}; ${plural(lost, 'statement')} not executed`
    );
  });
}

interface SqlstateErrors {
  sqlstate: string;
  count: number;
  message: string;
  statement: string;
}

/**
 * Errors by SQLSTATE, then by statement: one row per (SQLSTATE, fingerprint) with the first
 * message seen, SQLSTATEs with the most errors first.
 */
function errorsBySqlstate(report: ReplayReport): SqlstateErrors[] {
  const rows: SqlstateErrors[] = [];
  const totals = new Map<string, number>();
  for (const f of report.fingerprints) {
    for (const e of f.errors) {
      rows.push({ sqlstate: e.sqlstate, count: e.count, message: e.message, statement: f.normalized });
      totals.set(e.sqlstate, (totals.get(e.sqlstate) ?? 0) + e.count);
    }
  }
  return rows.sort(
    (a, b) =>
      (totals.get(b.sqlstate) ?? 0) - (totals.get(a.sqlstate) ?? 0) ||
      a.sqlstate.localeCompare(b.sqlstate) ||
      b.count - a.count ||
      a.statement.localeCompare(b.statement),
  );
}
