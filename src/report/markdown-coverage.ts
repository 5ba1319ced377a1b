/**
 * The coverage parts of the markdown report: how much of the captured workload each side ran,
 * what never ran and why, and what key correlation and sequence alignment did (docs/gate.md,
 * "Coverage"; docs/keys.md). A reader must see a blind spot where the verdict is, not only in
 * the JSON report.
 */
import { reasonInWords, sharePercent } from '../verdict/coverage.js';
import type { Coverage, GateReport, KeysSummary, SideCoverage } from '../verdict/report-types.js';
import { count, plural } from '../format/units.js';
import { maskMessage } from '../format/mask.js';
import { code, mdTable, prose } from './markdown-text.js';

/** Rows of the summary table: captured, executed (with its share), skipped, not executed. */
export function coverageRows(c: Coverage): string[][] {
  const executed = (s: SideCoverage) => `${count(s.executed)} (${sharePercent(s.executed_share)})`;
  return [
    ['statements captured', count(c.base.captured), count(c.head.captured), '', ''],
    ['executed', executed(c.base), executed(c.head), '', ''],
    ['skipped', count(c.base.skipped), count(c.head.skipped), '', ''],
    ['not executed', count(c.base.not_executed), count(c.head.not_executed), '', ''],
  ];
}

function reasonsOf(side: SideCoverage): string[] {
  const out: string[] = [];
  for (const [reason, n] of Object.entries(side.skipped_by_reason)) if (n > 0) out.push(`${count(n)} skipped: ${reasonInWords(reason)}`);
  for (const [reason, n] of Object.entries(side.not_executed_by_reason))
    if (n > 0) out.push(`${count(n)} not sent: ${reasonInWords(reason)}`);
  return out;
}

/**
 * The lines under the summary table: the coverage against `min-coverage`, and per side what did
 * not run and why.
 * @param c the run's coverage (its error messages are masked when it is built)
 * @returns markdown lines
 */
export function coverageLines(c: Coverage): string[] {
  const lines = [
    `Coverage: base executed ${sharePercent(c.base.executed_share)} of the captured statements, head ${sharePercent(c.head.executed_share)} ` +
      `(all rounds; a pass needs ${sharePercent(c.min_coverage)} on base).`,
  ];
  for (const side of ['base', 'head'] as const) {
    const reasons = reasonsOf(c[side]);
    if (reasons.length > 0) lines.push(`- ${side}: ${prose(reasons.join('; '))}`);
  }
  if (c.first_cause !== null && (c.base.skipped_by_reason.transaction_aborted ?? 0) > 0) {
    lines.push(`- the error most often behind skipped transactions on base: ${prose(c.first_cause)}`);
  }
  return lines;
}

/**
 * `#### Not compared`: fingerprints that never executed on either side, first among what the
 * report warns about.
 * @param report the gate report
 * @returns markdown lines (none when everything ran somewhere)
 */
export function notComparedSection(report: GateReport): string[] {
  const c = report.coverage;
  if (!c || c.not_compared.length === 0) return [];
  const shown = c.not_compared.slice(0, 20);
  const rows = shown.map((n) => [code(n.normalized, 100, true), count(n.captured), prose(n.reason, true)]);
  const more = c.not_compared.length - shown.length;
  return [
    `#### ⚠️ Not compared: ${plural(c.not_compared.length, 'statement')} never executed`,
    '',
    'These were captured but executed on neither side, so nothing about them was measured: a slowdown or a new error in them cannot show here.' +
      (c.first_cause ? ` The error most often behind skipped transactions on base: ${prose(c.first_cause)}.` : ''),
    '',
    ...mdTable(['statement', 'captured (all replays)', 'why'], rows, ['left', 'right', 'left']),
    ...(more > 0 ? ['', `_… ${plural(more, 'more statement')} in the JSON report._`] : []),
    '',
  ];
}

/**
 * Environment rows for generated keys and sequences.
 * @param keys what the replays did
 * @returns table rows (none when the workload has no generated keys)
 */
export function keysRows(keys: KeysSummary | null | undefined): [string, string][] {
  if (!keys) return [];
  const rows: [string, string][] = [];
  const k = keys.correlation;
  if (k) {
    const source =
      k.source === 'inferred'
        ? 'inferred from the statements that use them'
        : k.source === 'mixed'
          ? 'recorded or inferred'
          : 'recorded in the workload';
    rows.push([
      'generated keys',
      `${plural(k.producers, 'statement')} returning keys (${source}), ${plural(k.links, 'literal')} carrying them; ` +
        `over ${plural(keys.replays, 'replay')}: ${count(k.substituted)} sent with the replayed id, ${count(k.unresolved)} unresolved`,
    ]);
  }
  if (keys.sequences && keys.sequences.length > 0) {
    const described = keys.sequences.map((s) =>
      s.action === 'set'
        ? `${code(s.sequence, Infinity, true)} → ${s.value ?? '–'} (${s.source})`
        : `${code(s.sequence, Infinity, true)} kept: ${prose(maskMessage(s.reason ?? '', null), true)}`,
    );
    rows.push(['sequences at capture time', described.join('; ')]);
  }
  return rows;
}
