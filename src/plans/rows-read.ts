/**
 * Rows a changed plan reads (docs/gate-statistics.md, "Rows a changed plan reads"): what the work
 * counters cannot see when a PR swaps one plan for another that touches the same pages.
 *
 * Replacing an `ORDER BY … LIMIT` index by one on the filter column alone makes the statement read
 * every row of its category and sort them, where base read the first rows in order and stopped:
 * on a small table whose rows sit one per page both read the same pages, so pages and WAL are
 * unmoved, and the cost is CPU (tens of µs per call) that only timing sees, through the noise.
 * The rows the plan's scans read are a count of that work: one EXPLAIN ANALYZE of the captured
 * example on each template — the same data, the same parameters — gives them without spread.
 */
import { ratioChange } from '../format/numbers.js';
import { count } from '../format/units.js';
import type { RawPlanNode } from './shape.js';
import type { PlanRowsRead } from './types.js';

/** Nodes that read a relation (or an index's entries for one): their rows are rows read. */
const SCANS: ReadonlySet<string> = new Set([
  'Seq Scan',
  'Index Scan',
  'Index Only Scan',
  'Bitmap Heap Scan',
  'Tid Scan',
  'Tid Range Scan',
  'Sample Scan',
]);

/**
 * The rows a plan's scans read in one execution: those they returned and those their filters and
 * rechecks removed, over every loop. A Bitmap Index Scan's rows are not counted (its heap scan
 * reads them); nor are what joins, sorts and aggregates pass on (computed from rows already read).
 * @param node an EXPLAIN ANALYZE plan
 * @returns the rows read
 */
export function rowsRead(node: RawPlanNode): number {
  const loops = node['Actual Loops'] ?? 1;
  const own = SCANS.has(node['Node Type'])
    ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * loops
    : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
}

/**
 * Rows read in words: `24 → 250 rows read per call (+942 %), plan cost 8.9 → 40.0`.
 * @param r both sides' rows and costs
 * @returns the phrase
 */
export function rowsReadPhrase(r: PlanRowsRead): string {
  const change = r.base > 0 ? ratioChange(r.head / r.base) : 'from 0';
  return `${rowsReadFigures(r)} rows read per call (${change}), plan cost ${r.base_cost.toFixed(1)} → ${r.head_cost.toFixed(1)}`;
}

/**
 * Both sides' rows: `24 → 250`.
 * @param r both sides' rows
 * @returns the figures
 */
export function rowsReadFigures(r: PlanRowsRead): string {
  return `${count(Math.round(r.base))} → ${count(Math.round(r.head))}`;
}
