/** `inspect`'s text output: what a workload holds, before anything is replayed. */
import type { WorkloadInspection } from '../types.js';
import { fields, oneLine, table } from './table.js';
import { count, micros, percent, plural, span } from './units.js';

/**
 * Renders a workload summary.
 * @param file the path as the user gave it
 * @param w the summary from inspectWorkload
 * @returns text ending in a newline
 */
export function renderWorkloadSummary(file: string, w: WorkloadInspection): string {
  const kinds = Object.entries(w.statements_by_kind)
    .filter(([, n]) => (n ?? 0) > 0)
    .sort(([, a], [, b]) => (b ?? 0) - (a ?? 0))
    .map(([kind, n]) => `${kind} ${count(n ?? 0)}`)
    .join(', ');
  const classes = Object.entries(w.sessions_by_class)
    .filter(([, n]) => n > 0)
    .map(([cls, n]) => `${cls} ${count(n)}`)
    .join(', ');
  const source = [w.source_host && `from ${w.source_host}`, w.pg_version && w.pg_version !== 'unknown' && `PostgreSQL ${w.pg_version}`, w.capture_method]
    .filter(Boolean)
    .join(', ');
  const duration =
    w.recorded_duration_us > 0 && Math.abs(w.recorded_duration_us - w.duration_us) > 1_000
      ? `${span(w.duration_us)} (recorded: ${span(w.recorded_duration_us)})`
      : span(w.duration_us);

  const lines = [
    ...fields([
      ['workload', file],
      ['captured', `${w.captured_at}${source ? ` (${source})` : ''}`],
      ['format', `pg-retest v${w.format_version}`],
      ['sessions', `${count(w.sessions)}${classes ? ` (${classes})` : ''}`],
      ['class', w.classification],
      [
        'statements',
        `${count(w.statements)} (${plural(w.fingerprints, 'fingerprint')}, ${plural(w.distinct_statements, 'distinct text')}), ` +
          `${count(w.writes)} may write (${percent(w.writes, w.statements)})`,
      ],
      ['by kind', kinds || 'none'],
      ['transactions', count(w.transactions)],
      ['duration', duration],
    ]),
  ];
  if (w.offsets_look_session_relative) {
    lines.push(
      '',
      'note: every session starts near offset 0, as in pg-retest proxy captures; at replay all sessions start together',
    );
  }
  if (w.warnings.length > 0) {
    lines.push('', `warnings (${w.warnings.length}):`, ...w.warnings.map((warning) => `  ${warning}`));
  }
  if (w.top_fingerprints.length > 0) {
    lines.push('', `top ${plural(w.top_fingerprints.length, 'fingerprint')} by calls:`);
    lines.push(
      ...table(
        ['calls', 'share', 'kind', 'captured total', 'statement'],
        w.top_fingerprints.map((f) => [
          count(f.count),
          percent(f.count, w.statements),
          f.kind,
          micros(f.captured_total_us),
          oneLine(f.normalized),
        ]),
        ['right', 'right', 'left', 'right', 'left'],
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}
