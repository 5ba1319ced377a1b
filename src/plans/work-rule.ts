/**
 * The work rule (docs/gate-statistics.md, "The work rule"): a fingerprint fails the gate when it
 * does materially more work per call on head — pages touched, WAL written — than on base, beyond
 * what base's own replays and the noise replay show, and it carries a real share of the workload.
 *
 * Time cannot see the change teams merge most: an index added on a column a hot UPDATE sets costs
 * tens of µs per call, below the server-time floor and a loaded runner's noise, but the update
 * stops being heap-only and writes every index, so its WAL and pages per call double or triple.
 * Those counts are nearly the same in every replay of a schema (pg_stat_statements counts them per
 * statement; the replays start from the same template), so a growth that clears every base replay
 * is the PR's, whatever the runner's load.
 *
 * Judged only from pg_stat_statements, counted in every replay: one EXPLAIN ANALYZE of an example
 * has no replays to measure a spread against, so with that source work is reported, not gated.
 * The exception is what no counter sees: the rows a *changed* plan reads (rows-read.ts), counted by
 * one EXPLAIN ANALYZE of the same example on the same data on both sides, without spread.
 */
import { separatedBeyondSpread } from './replay-separation.js';
import { rowsReadPhrase } from './rows-read.js';
import { WORK_COUNTERS } from './work.js';
import { workPhrase } from './work-phrase.js';
import { fractionPercent } from '../format/numbers.js';
import type {
  FingerprintPlan,
  PlanRowsRead,
  PlansReport,
  WorkChange,
  WorkCounter,
  WorkPerCall,
  WorkRegression,
  WorkRule,
  WorkStats,
} from './types.js';

/** Defaults, chosen by calibration (docs/gate-statistics.md, "Calibration"). */
export const WORK_RULE_DEFAULTS: WorkRule = { growth: 0.1, min_share: 0.01 };

/**
 * The counters the rule judges, with the least growth per call that counts: a page, half a WAL
 * record, 32 bytes of WAL. WAL bytes are judged only where no replay wrote a full-page image (a
 * checkpoint's timing decides those; the servers the gate starts write none); WAL records are
 * judged whatever the checkpoints.
 */
const GATED: Partial<Record<WorkCounter, number>> = { wal_bytes: 32, wal_records: 0.5, pages: 1 };

/** What a read writes (hint bits, on-access pruning) follows the pages' state, not the read: reads are judged on pages. */
const WRITE_COUNTERS: ReadonlySet<WorkCounter> = new Set(['wal_bytes', 'wal_records']);

/**
 * Judges every fingerprint of a plans report.
 * @param plans the plan probe's report
 * @param rule the thresholds, or null when the rule is off
 * @param minCalls the calls each side needs (the latency rules' `min-calls`)
 * @returns the report with each judged fingerprint's `work_regression` (left out where it could not be judged)
 */
export function applyWorkRule(plans: PlansReport, rule: WorkRule | null, minCalls: number): PlansReport {
  if (rule === null || plans.error !== null) return plans;
  const totals = headTotals(plans.fingerprints);
  const fingerprints = plans.fingerprints.map((f) => {
    const base = countedWork(f, 'base');
    const head = countedWork(f, 'head');
    if (base === null || head === null || Math.min(f.base.stats!.calls, f.head.stats!.calls) < minCalls) return f;
    return { ...f, work_regression: judge(f, base, head, rule, totals) };
  });
  return { ...plans, fingerprints };
}

/**
 * The compared fingerprints whose work the rule cannot judge: counted by one EXPLAIN ANALYZE on a
 * side (pg_stat_statements unavailable, or its entry not matched exactly).
 * @param plans the plan probe's report
 * @returns how many
 */
export function unjudgedByWorkRule(plans: PlansReport): number {
  if (plans.error !== null) return 0;
  return plans.fingerprints.filter((f) => countedWork(f, 'base') === null || countedWork(f, 'head') === null).length;
}

/**
 * The rule's finding on a statement, for the verdict: what grew, that it cleared every base replay,
 * its share of the workload, and the index change that explains it with its migration line.
 * @param f a fingerprint with a work regression
 * @returns the evidence (without the statement)
 */
export function workEvidence(f: FingerprintPlan & { work_regression: WorkRegression }): string {
  const r = f.work_regression;
  const shares = [
    ['calls', r.share.calls],
    ['pages', r.share.pages],
    ['WAL', r.share.wal],
  ] as const;
  const [name, share] = shares.reduce((best, s) => ((s[1] ?? 0) > (best[1] ?? 0) ? s : best));
  const read = r.rows_read ? rowsReadPhrase(r.rows_read) : null;
  const replays = r.counters.length > 0 ? `${workPhrase(r.counters)}, every head replay above every base replay` : null;
  const what = [replays, read && `${read} (one EXPLAIN ANALYZE of the captured example on each template)`].filter((x) => x !== null);
  const explained = (f.index_changes ?? []).map(
    (c) => `index ${c.index} ${c.change} on ${c.relation}${c.migration ? ` (${c.migration.file}, line ${c.migration.line})` : ''}`,
  );
  if (f.changed && f.change) explained.push(`plan changed: ${f.change}`);
  return (
    `more work per call: ${what.join('; ')} ` +
    `(${fractionPercent(share ?? 0)} of head's ${name})${explained.length > 0 ? `; ${explained.join('; ')}` : ''}`
  );
}

/** A side's work when pg_stat_statements counted it replay by replay; null otherwise. */
function countedWork(f: FingerprintPlan, side: 'base' | 'head'): WorkStats | null {
  const stats = f[side].stats;
  if (stats?.source !== 'pg_stat_statements' || !stats.work?.rounds?.each) return null;
  return stats.work;
}

interface Totals {
  calls: number;
  pages: number;
  wal: number | null;
}

/** Head's calls, pages and WAL over every compared fingerprint counted by pg_stat_statements: what a share is of. */
function headTotals(fingerprints: FingerprintPlan[]): Totals {
  const totals: Totals = { calls: 0, pages: 0, wal: 0 };
  for (const f of fingerprints) {
    const stats = f.head.stats;
    if (!stats?.work || stats.source !== 'pg_stat_statements') continue;
    const t = totalsOf(stats.work.per_call, stats.calls);
    totals.calls += t.calls;
    totals.pages += t.pages;
    totals.wal = totals.wal === null || t.wal === null ? null : totals.wal + t.wal;
  }
  return totals;
}

function totalsOf(w: WorkPerCall, calls: number): Totals {
  return { calls, pages: (WORK_COUNTERS.pages(w) ?? 0) * calls, wal: w.wal_bytes === null ? null : w.wal_bytes * calls };
}

function judge(f: FingerprintPlan, base: WorkStats, head: WorkStats, rule: WorkRule, totals: Totals): WorkRegression | null {
  const grown: WorkChange[] = [];
  for (const counter of Object.keys(WORK_COUNTERS) as WorkCounter[]) {
    const minDelta = GATED[counter];
    if (minDelta === undefined) continue;
    if (f.kind === 'select' && WRITE_COUNTERS.has(counter)) continue;
    if (counter === 'wal_bytes' && wroteFullPages(base, head)) continue;
    const change = grownBeyondBase(counter, minDelta, base, head, rule.growth);
    if (change) grown.push(change);
  }
  const rows = moreRowsRead(f, rule.growth);
  if (grown.length === 0 && rows === null) return null;
  const own = totalsOf(head.per_call, f.head.stats!.calls);
  const share = {
    calls: fraction(own.calls, totals.calls),
    pages: fraction(own.pages, totals.pages),
    wal: own.wal === null || totals.wal === null ? null : fraction(own.wal, totals.wal),
  };
  if (Math.max(share.calls, share.pages, share.wal ?? 0) < rule.min_share) return null;
  return rows === null ? { counters: grown, share } : { counters: grown, share, rows_read: rows };
}

/** Rows per call below which a changed plan's extra reading is not worth a judgement. */
const MIN_ROWS_DELTA = 10;

/**
 * A changed plan that reads more rows per call than base's, by more than `growth` and
 * {@link MIN_ROWS_DELTA}, and that the planner too costs higher by more than `growth`: head's
 * schema offers no plan as cheap as base's. Both conditions, because a plan that reads more rows
 * can be the cheaper one (a hash join reading a small table whole instead of probing it row by row).
 * @returns the rows, or null when they did not grow so (or were not counted)
 */
function moreRowsRead(f: FingerprintPlan, growth: number): PlanRowsRead | null {
  const r = f.rows_read;
  if (!f.changed || !r) return null;
  if (r.head - r.base < MIN_ROWS_DELTA || r.head <= r.base * (1 + growth)) return null;
  return r.head_cost > r.base_cost * (1 + growth) ? r : null;
}

function fraction(part: number, whole: number): number {
  return whole > 0 ? part / whole : 0;
}

function wroteFullPages(base: WorkStats, head: WorkStats): boolean {
  return [base.per_call, head.per_call, base.noise].some((w) => (w?.wal_fpi ?? 0) > 0);
}

/**
 * A counter that grew: by more than `growth` of base's per-call figure and by `minDelta`, with the
 * lowest head replay above the highest of base's replays and the noise replay by more than `growth`
 * of base's figure as well, and head's replays apart from base's beyond their spread.
 * @returns the change, or null when it did not grow so
 */
function grownBeyondBase(counter: WorkCounter, minDelta: number, base: WorkStats, head: WorkStats, growth: number): WorkChange | null {
  const value = WORK_COUNTERS[counter];
  const b = value(base.per_call);
  const h = value(head.per_call);
  if (b === null || h === null || h - b < minDelta || h <= b * (1 + growth)) return null;
  const baseFigures = figures(value, [...base.rounds!.each!, ...(base.noise ? [base.noise] : [])]);
  const headFigures = figures(value, head.rounds!.each!);
  if (baseFigures === null || headFigures === null) return null;
  // Not only above every base replay: above it by the threshold too. At full speed a contended
  // write's WAL moves ±12 % between replays (interleavings, pruning), and with two replays a side
  // an ordering alone comes one time in ten.
  if (Math.min(...headFigures) - Math.max(...baseFigures) <= b * growth) return null;
  // And beyond the spread the replays themselves show: with one round, a 10 % gap on such a
  // write comes one time in fifteen (replay-separation.ts).
  if (!separatedBeyondSpread(baseFigures, headFigures)) return null;
  return { counter, base: b, head: h, change: b === 0 ? null : h / b - 1, direction: 'more' };
}

/** A counter's figure in each replay, or null when a replay did not count it. */
function figures(value: (w: WorkPerCall) => number | null, replays: WorkPerCall[]): number[] | null {
  const each = replays.map(value);
  return each.some((x) => x === null) ? null : (each as number[]);
}
