/** `inspect`'s text output: what a workload holds, before anything is replayed. */
import type { CaptureSummary, FingerprintCount, WorkloadInspection } from '../types.js';
import { describeKeys, describeSequenceHints } from './keys.js';
import { fields, oneLine, table } from './table.js';
import { count, micros, percent, plural, reasonCounts, span } from './units.js';

/**
 * Renders a workload summary.
 * @param file the path as the user gave it
 * @param w the summary from inspectWorkload
 * @param capture the capture sidecar next to the file, when there is one
 * @returns text ending in a newline
 */
export function renderWorkloadSummary(file: string, w: WorkloadInspection, capture?: CaptureSummary): string {
  const kinds = Object.entries(w.statements_by_kind)
    .filter(([, n]) => (n ?? 0) > 0)
    .sort(([, a], [, b]) => (b ?? 0) - (a ?? 0))
    .map(([kind, n]) => `${kind} ${count(n ?? 0)}`)
    .join(', ');
  const classes = Object.entries(w.sessions_by_class)
    .filter(([, n]) => n > 0)
    .map(([cls, n]) => `${cls} ${count(n)}`)
    .join(', ');
  const source = [
    w.source_host && `from ${w.source_host}`,
    w.pg_version && w.pg_version !== 'unknown' && `PostgreSQL ${w.pg_version}`,
    w.capture_method,
  ]
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
          `${count(w.writes)} may write (${percent(w.writes, w.statements)})` +
          (w.server_wide > 0
            ? `, ${count(w.server_wide)} act beyond their database (roles, server settings, files: not sent to a server the run did not start)`
            : ''),
      ],
      ['by kind', kinds || 'none'],
      ['transactions', count(w.transactions)],
      ['duration', duration],
      ['keys', describeKeys(w.keys, (capture?.keys?.inferred ?? 0) > 0)],
      ...(describeSequenceHints(w.sequence_hints)
        ? [['sequences', `${describeSequenceHints(w.sequence_hints)} (set there before each replay)`] as [string, string]]
        : []),
    ]),
  ];
  if (w.offsets_look_session_relative) {
    lines.push('', 'note: every session starts near offset 0, as in pg-retest proxy captures; at replay all sessions start together');
  }
  if (w.warnings.length > 0) {
    lines.push('', `warnings (${w.warnings.length}):`, ...w.warnings.map((warning) => `  ${warning}`));
  }
  if (capture) lines.push('', ...renderCaptureNotes(capture));
  const ranked: [string, FingerprintCount[] | undefined][] = [
    ['calls', w.top_fingerprints],
    ['captured total time', w.top_fingerprints_by_time],
  ];
  for (const [by, list] of ranked) {
    if (!list || list.length === 0) continue;
    lines.push('', `top ${plural(list.length, 'fingerprint')} by ${by}:`);
    lines.push(
      ...table(
        ['calls', 'share', 'kind', 'captured total', 'statement'],
        list.map((f) => [count(f.count), percent(f.count, w.statements), f.kind, micros(f.captured_total_us), oneLine(f.normalized)]),
        ['right', 'right', 'left', 'right', 'left'],
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * What the capture sidecar says: how the log was read, what was left out, and whether the
 * capture is known to be incomplete.
 * @param c the sidecar's content
 * @returns lines
 */
function renderCaptureNotes(c: CaptureSummary): string[] {
  const left = reasonCounts(c.excluded);
  const lines = fields([
    [
      'capture',
      `from ${plural(c.inputs.length, 'log file')} (${c.log_style.replaceAll('_', ' + ')} logging), ${count(c.statements)} statements`,
    ],
    ['failed', `${count(c.failed_statements)} statement(s) failed at capture time (expected failures at replay)`],
    ['left out', left || 'none'],
  ]);
  if (c.warnings.length > 0) {
    lines.push(
      `${c.incomplete ? 'the capture is incomplete: ' : ''}capture warnings (${c.warnings.length}):`,
      ...c.warnings.map((x) => `  ${x}`),
    );
  }
  return lines;
}
