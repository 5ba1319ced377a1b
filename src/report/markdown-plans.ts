/**
 * The markdown of the plan probe (docs/plans.md): the "Plan changes" section, and the cells the
 * regressions table gains when a report has plans (server time next to client p95, and whether
 * the plan changed). Plans hold node types, relation and index names only, never literals;
 * probe error messages are masked like every other message.
 */
import type { GateReport } from '../verdict/report-types.js';
import { count, plural } from '../format/units.js';
import { factor } from '../plans/rules.js';
import { rowsReadFigures } from '../plans/rows-read.js';
import type { FingerprintPlan, PlanProbeFailure, PlansReport, StatementStats } from '../plans/types.js';
import { maskMessage } from '../format/mask.js';
import type { Context } from './markdown-context.js';
import { code, mdTable, text } from './markdown-text.js';

const SQL_CHARS = 120;
/** Rows of the plan changes table and of the failures list. */
const CAP = 20;

function ms(value: number): string {
  if (value >= 100) return `${value.toFixed(0)} ms`;
  if (value >= 1) return `${value.toFixed(1)} ms`;
  return `${value.toFixed(2)} ms`;
}

function pages(value: number): string {
  return count(Math.round(value));
}

const ASSESSMENT = { regression: '❌ costlier', improvement: '✅ improvement', neutral: 'changed' } as const;

function stat(s: StatementStats | null, pick: (s: StatementStats) => string): string {
  return s === null ? '–' : pick(s);
}

/** `15 → 1,230 (85×)` */
function buffersCell(f: FingerprintPlan): string {
  const b = f.base.stats;
  const h = f.head.stats;
  const ratio = f.buffers_ratio === null ? '' : ` (${factor(f.buffers_ratio)})`;
  return `${stat(b, (s) => pages(s.buffers_per_call))} → ${stat(h, (s) => pages(s.buffers_per_call))}${f.buffers_ratio !== null && f.buffers_ratio > 1.05 ? ratio : ''}`;
}

function serverCell(f: FingerprintPlan): string {
  return `${stat(f.base.stats, (s) => ms(s.mean_ms))} → ${stat(f.head.stats, (s) => ms(s.mean_ms))}`;
}

/** Where the buffer counts come from, in one sentence. */
function sourceLine(p: PlansReport): string {
  const unjoined =
    p.stats.unjoined > 0 ? ` (${plural(p.stats.unjoined, 'fingerprint')} not matched exactly: one EXPLAIN (ANALYZE, BUFFERS) instead)` : '';
  if (p.stats.source === 'pg_stat_statements') {
    return `Buffers and server time per call: pg_stat_statements ${text(p.stats.pg_stat_statements ?? '')}, every replay of each side${unjoined}.`;
  }
  const why = p.stats.unavailable_reason === null ? '' : ` (pg_stat_statements not available: ${text(p.stats.unavailable_reason)})`;
  return `Buffers and server time per call: one EXPLAIN (ANALYZE, BUFFERS) per fingerprint and side, rolled back${why}.`;
}

/**
 * The "Plan changes" section: the changed plans, worst first, with buffers and server time; a
 * line when none changed; the probes that failed. Rows beyond the report's row limit are left
 * out and counted, like the other tables' (markdown.ts).
 * @param ctx the report, its limits and masking
 * @returns its lines, empty when the report has no plans
 */
export function planChangesSection(ctx: Context): string[] {
  const { report, mask } = ctx;
  const cap = Math.min(CAP, ctx.limits.rows);
  const p = report.plans;
  if (p === null || p === undefined) return [];
  const lines = ['#### Plan changes', ''];
  if (p.error !== null) {
    lines.push(`Query plans could not be probed: ${text(mask ? maskMessage(p.error, null) : p.error)}`, '');
    return lines;
  }
  const changed = p.fingerprints.filter((f) => f.changed);
  const explained = plural(p.fingerprints.length, 'fingerprint');
  if (changed.length === 0) {
    lines.push(`No plan changed: ${explained} EXPLAINed on base and head. ${sourceLine(p)}`, '');
  } else {
    lines.push(`${count(changed.length)} of ${explained} EXPLAINed on base and head changed plan. ${sourceLine(p)}`, '');
    const shown = changed.slice(0, cap);
    if (ctx.limits.rows < CAP) ctx.hiddenRows += Math.min(changed.length, CAP) - shown.length;
    // Reports written before the rows were counted have no such column.
    const withRows = shown.some((f) => f.rows_read !== undefined);
    const rows = shown.map((f) => [
      code(f.normalized, SQL_CHARS, true),
      // Node, relation and index names only: shown as code, so that identifiers stay readable.
      code(f.change ?? '', Infinity, true),
      f.assessment === null ? '' : ASSESSMENT[f.assessment],
      buffersCell(f),
      serverCell(f),
      `${count(Math.round(f.base.total_cost))} → ${count(Math.round(f.head.total_cost))}`,
      ...(withRows ? [f.rows_read ? rowsReadFigures(f.rows_read) : '–'] : []),
    ]);
    const headers = ['statement', 'change (base → head)', '', 'shared buffers per call', 'server mean', 'estimated cost'];
    lines.push(
      ...mdTable(withRows ? [...headers, 'rows read (example)'] : headers, rows, [
        'left',
        'left',
        'left',
        'right',
        'right',
        'right',
        ...(withRows ? (['right'] as const) : []),
      ]),
      ...(changed.length > shown.length
        ? ['', `_… ${plural(changed.length - shown.length, 'plan change')} more in the JSON report._`]
        : []),
      '',
    );
  }
  lines.push(...spillLines(ctx, p, cap));
  if (p.failures.length > 0) {
    lines.push(`${plural(p.failures.length, 'probe')} failed; these fingerprints are not judged on what failed:`, '');
    const listed = p.failures.slice(0, cap);
    if (ctx.limits.rows < CAP) ctx.hiddenRows += Math.min(p.failures.length, CAP) - listed.length;
    for (const f of listed) {
      const message = mask ? maskMessage(f.message, f.sqlstate) : f.message;
      lines.push(`- ${code(f.normalized, 80)} on ${f.side} (${PROBE_STAGES[f.stage]}): ${text(message)}`);
    }
    if (p.failures.length > listed.length) lines.push(`- _… ${count(p.failures.length - listed.length)} more in the JSON report._`);
    lines.push('');
  }
  return lines;
}

/** What a failed probe left unmeasured. */
const PROBE_STAGES: Record<PlanProbeFailure['stage'], string> = {
  explain: 'no plan',
  buffers: 'no buffer counts',
  rows: 'rows read not counted',
};

/** Temporary blocks per call must grow by this factor (and by one block) to be listed. */
const SPILL_GROWTH = 1.2;

/**
 * The statements that wrote more to temporary files on head: a sort, hash or materialization
 * that no longer fits in work_mem (a smaller work_mem, another major's memory accounting). A
 * count per call, so it does not depend on the runner's speed.
 * @returns a table, or nothing when no statement spills more on head
 */
function spillLines(ctx: Context, p: PlansReport, cap: number): string[] {
  const temp = (s: StatementStats | null) => s?.temp_written_per_call;
  const spills = p.fingerprints.filter((f) => {
    const b = temp(f.base.stats);
    const h = temp(f.head.stats);
    return b !== undefined && h !== undefined && h >= b * SPILL_GROWTH && h - b >= 1;
  });
  if (spills.length === 0) return [];
  const shown = spills.slice(0, cap);
  if (ctx.limits.rows < CAP) ctx.hiddenRows += Math.min(spills.length, CAP) - shown.length;
  const rows = shown.map((f) => [
    code(f.normalized, SQL_CHARS, true),
    `${pages(temp(f.base.stats)!)} → ${pages(temp(f.head.stats)!)}`,
    serverCell(f),
  ]);
  return [
    `${plural(spills.length, 'statement')} wrote more to temporary files on head (a sort, hash or materialization larger than work_mem):`,
    '',
    ...mdTable(['statement', 'temp blocks written per call', 'server mean'], rows, ['left', 'right', 'right']),
    ...(spills.length > shown.length ? ['', `_… ${plural(spills.length - shown.length, 'statement')} more in the JSON report._`] : []),
    '',
  ];
}

/**
 * The cells the regressions tables gain when the report has plans: server mean base → head and
 * the plan's state.
 * @param report the gate's report
 * @param fingerprint the row's fingerprint
 * @returns the two cells, or none when the report has no plans
 */
export function planCells(report: GateReport, fingerprint: string): string[] {
  if (!report.plans) return [];
  const f = report.plans.fingerprints.find((x) => x.fingerprint === fingerprint);
  if (!f) return ['–', '–'];
  return [serverCell(f), f.changed ? (f.assessment === null ? 'changed' : ASSESSMENT[f.assessment]) : 'same'];
}

/**
 * Where buffers and server time came from, for the environment table.
 * @param p the plans report
 * @returns e.g. `pg_stat_statements 1.10` or `EXPLAIN (ANALYZE, BUFFERS): pg_stat_statements not available (…)`
 */
export function statsSource(p: PlansReport): string {
  if (p.stats.source === 'pg_stat_statements') {
    return `pg_stat_statements ${text(p.stats.pg_stat_statements ?? '')}${p.stats.unjoined > 0 ? `, EXPLAIN (ANALYZE, BUFFERS) for ${plural(p.stats.unjoined, 'fingerprint')} not joined` : ''}`;
  }
  return `one EXPLAIN (ANALYZE, BUFFERS) per fingerprint${p.stats.unavailable_reason ? `: pg_stat_statements not available (${text(p.stats.unavailable_reason)})` : ''}`;
}

/** The headers of {@link planCells}. */
export function planHeaders(report: GateReport): string[] {
  return report.plans ? ['server mean', 'plan'] : [];
}
