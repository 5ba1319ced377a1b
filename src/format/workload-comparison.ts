/** A condensed workload against its original, and what condense did, as text. */
import type { CondenseSummary, WorkloadComparison, WorkloadTotals } from '../types.js';
import { fields, oneLine, table } from './table.js';
import { count, percent, plural, span } from './units.js';

/** Fingerprints listed by name in the "dropped" line. */
const DROPPED_LISTED = 3;

function concurrency(t: WorkloadTotals): string {
  return `mean ${t.concurrency.mean.toFixed(1)}, p95 ${count(t.concurrency.p95)}, max ${count(t.concurrency.max)}`;
}

/**
 * The comparison: totals side by side, every hot fingerprint with its calls on each side and
 * whether the gate can use it, and what is missing.
 * @param c the comparison
 * @returns lines
 */
export function renderComparison(c: WorkloadComparison): string[] {
  const o = c.original;
  const k = c.condensed;
  const lines = table(
    ['', 'original', 'condensed'],
    [
      ['sessions', count(o.sessions), count(k.sessions)],
      ['statements', count(o.statements), `${count(k.statements)} (${percent(k.statements, o.statements)})`],
      ['duration', span(o.duration_us), span(k.duration_us)],
      ['server time', span(o.server_time_us), span(k.server_time_us)],
      ['concurrency', concurrency(o), concurrency(k)],
      ['fingerprints', count(o.fingerprints), count(k.fingerprints)],
    ],
    ['left', 'right', 'right'],
  );
  lines.push('', `mix distance ${c.mix_distance.toFixed(3)} (0: the same mix of calls per fingerprint, 1: nothing in common)`);
  const hot = c.fingerprints.filter((f) => f.hot);
  lines.push(
    '',
    `hot fingerprints (${hot.length}: at least ${percent(c.min_share, 1)} of calls or of server time), calls original → condensed; ` +
      `gated with at least ${count(c.min_calls)} (or all it has):`,
  );
  for (const f of hot) {
    const mark = f.gated ? '✓' : '✗';
    const note = f.gated ? '' : ' — not gated';
    lines.push(`  ${mark} ${count(f.original_calls)} → ${count(f.condensed_calls)}${note}  ${oneLine(f.normalized, 90)}`);
  }
  const d = c.dropped;
  if (d.fingerprints > 0) {
    const named = d.fingerprints_top.slice(0, DROPPED_LISTED).map((f) => oneLine(f.normalized, 60));
    lines.push(
      '',
      `dropped: ${plural(d.fingerprints, 'fingerprint')} with no call left (${percent(d.fingerprints_calls_share, 1)} of the calls, ` +
        `${percent(d.fingerprints_time_share, 1)} of the server time): ${named.join('; ')}${d.fingerprints > named.length ? '; …' : ''}`,
    );
  } else {
    lines.push('', 'dropped: no fingerprint; every one has calls left');
  }
  return lines;
}

/**
 * What condense did, then the comparison and the warnings.
 * @param s the summary (the sidecar's content)
 * @returns text ending in a newline
 */
export function renderCondenseSummary(s: CondenseSummary): string {
  const budget = [
    s.budget.duration_us !== null ? span(s.budget.duration_us) : undefined,
    s.budget.statements !== null ? plural(s.budget.statements, 'statement') : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const windows = s.windows.map((w) => `+${span(w.from_us)} → +${span(w.to_us)} (${span(w.duration_us)})`);
  const lines = fields([
    ['condensed', `${s.workload} (sidecar ${s.sidecar}) from ${s.source}, seed ${count(s.seed)}`],
    [
      'budget',
      `${budget}: ${span(s.comparison.condensed.duration_us)} and ${plural(s.comparison.condensed.statements, 'statement')}, ${s.fits ? 'fits' : 'does not fit'}`,
    ],
    ['windows', `${plural(s.windows.length, 'window')} of the capture: ${windows.join(', ')}`],
    [
      'pulled in',
      s.pulled_in.transactions > 0
        ? `${plural(s.pulled_in.transactions, 'transaction')} (${plural(s.pulled_in.statements, 'statement')}) that created ids the windows use, replayed first, in the first ${span(s.pulled_in.duration_us)}`
        : 'none: the windows create the ids they use',
    ],
    ['settings', `${count(s.carried_settings)} carried into sessions cut after their start`],
  ]);
  lines.push('', ...renderComparison(s.comparison));
  if (s.warnings.length > 0) lines.push('', `warnings (${s.warnings.length}):`, ...s.warnings.map((w) => `  ${w}`));
  return `${lines.join('\n')}\n`;
}
