/**
 * Work per call (docs/plans.md, "Work per call"): what the server did per execution of a
 * fingerprint — pages touched, dirtied and written, WAL records, bytes and full-page images, rows,
 * temporary and local blocks — from the replays' own pg_stat_statements entries (every replay of a
 * side summed, divided by the calls, with each replay's own figure for the spread between rounds
 * and the noise replay's), or from one EXPLAIN (ANALYZE, BUFFERS, WAL), the weaker source.
 *
 * Unlike time, these counts hardly depend on how busy the machine is: an index added on a column
 * an UPDATE sets shows as more WAL and more pages per call whatever the runner's noise. Which
 * counters moved is reported here; nothing is gated on them.
 */
import type { RawPlanNode } from './shape.js';
import type { CountersByQuery, StatementCounters } from './stat-statements.js';
import type { WorkChange, WorkCounter, WorkPerCall, WorkStats } from './types.js';

/**
 * Per call, from pg_stat_statements counters.
 * @param c one entry's counters (calls > 0)
 * @param wal whether the view counts WAL
 * @returns the counters divided by the calls
 */
export function workOfCounters(c: StatementCounters, wal: boolean): WorkPerCall {
  const per = (n: number) => n / c.calls;
  return {
    shared_hit: per(c.sharedHit),
    shared_read: per(c.sharedRead),
    shared_dirtied: per(c.sharedDirtied),
    shared_written: per(c.sharedWritten),
    local_hit: per(c.localHit),
    local_read: per(c.localRead),
    local_dirtied: per(c.localDirtied),
    local_written: per(c.localWritten),
    temp_read: per(c.tempRead),
    temp_written: per(c.tempWritten),
    wal_records: wal ? per(c.walRecords) : null,
    wal_fpi: wal ? per(c.walFpi) : null,
    wal_bytes: wal ? per(c.walBytes) : null,
    rows: per(c.rows),
  };
}

/**
 * One execution's work, from EXPLAIN (ANALYZE, BUFFERS[, WAL]): the root node's counts include
 * every node below it. WAL is null when EXPLAIN did not count it (before PostgreSQL 13).
 * @param root the plan's root node
 * @returns its work
 */
export function workOfPlan(root: RawPlanNode): WorkPerCall {
  const n = (v: number | undefined) => v ?? 0;
  const walCounted = root['WAL Records'] !== undefined;
  return {
    shared_hit: n(root['Shared Hit Blocks']),
    shared_read: n(root['Shared Read Blocks']),
    shared_dirtied: n(root['Shared Dirtied Blocks']),
    shared_written: n(root['Shared Written Blocks']),
    local_hit: n(root['Local Hit Blocks']),
    local_read: n(root['Local Read Blocks']),
    local_dirtied: n(root['Local Dirtied Blocks']),
    local_written: n(root['Local Written Blocks']),
    temp_read: n(root['Temp Read Blocks']),
    temp_written: n(root['Temp Written Blocks']),
    wal_records: walCounted ? n(root['WAL Records']) : null,
    wal_fpi: walCounted ? n(root['WAL FPI']) : null,
    wal_bytes: walCounted ? n(root['WAL Bytes']) : null,
    rows: n(root['Actual Rows']),
  };
}

/**
 * A side's work per call from pg_stat_statements: all its replays, each replay's own for the
 * spread, the noise replay's beside (base only).
 * @param total the side's counters of this queryid, summed over its replays
 * @param replays each replay's counters (the side's)
 * @param noise the noise replay's counters, when this is base and they were read
 * @param queryId the fingerprint's queryid on this side
 * @param wal whether WAL was counted
 * @returns the work
 */
export function workOfReplays(
  total: StatementCounters,
  replays: CountersByQuery[],
  noise: CountersByQuery[],
  queryId: string,
  wal: boolean,
): WorkStats {
  const each = replays.flatMap((r) => {
    const c = r.get(queryId);
    return c && c.calls > 0 ? [workOfCounters(c, wal)] : [];
  });
  const noiseCounters = noise.map((r) => r.get(queryId)).find((c) => c !== undefined && c.calls > 0);
  return {
    per_call: workOfCounters(total, wal),
    rounds: each.length > 0 ? { replays: each.length, min: fold(each, Math.min), max: fold(each, Math.max), each } : null,
    noise: noiseCounters ? workOfCounters(noiseCounters, wal) : null,
  };
}

/** Counter by counter, the min or max of several. */
function fold(values: WorkPerCall[], pick: (a: number, b: number) => number): WorkPerCall {
  const out: Record<string, number | null> = { ...values[0]! };
  for (const v of values.slice(1)) {
    for (const k of Object.keys(v) as (keyof WorkPerCall)[]) {
      const a = out[k] ?? null;
      const b = v[k];
      out[k] = a === null || b === null ? null : pick(a, b);
    }
  }
  return out as unknown as WorkPerCall;
}

/**
 * The counters reports show, each a sum of per-call fields (null when one of them was not
 * counted), in the order reports list them: WAL and pages first, what an index on a written
 * column or a lost index costs.
 */
export const WORK_COUNTERS: Record<WorkCounter, (w: WorkPerCall) => number | null> = {
  wal_bytes: (w) => w.wal_bytes,
  pages: (w) => w.shared_hit + w.shared_read,
  wal_records: (w) => w.wal_records,
  wal_fpi: (w) => w.wal_fpi,
  dirtied: (w) => w.shared_dirtied,
  written: (w) => w.shared_written,
  rows: (w) => w.rows,
  temp_blocks: (w) => w.temp_read + w.temp_written,
  local_blocks: (w) => w.local_hit + w.local_read,
};

/** What a statement writes: WAL and the pages it dirties or writes out. */
const WRITES: ReadonlySet<WorkCounter> = new Set(['wal_bytes', 'wal_records', 'wal_fpi', 'dirtied', 'written']);

/**
 * How far a counter must move to be reported: a share of the larger side and an absolute
 * amount, so that 0.02 → 0.04 dirtied pages per call (one page in fifty calls) is not news.
 */
const MIN_CHANGE = 0.1;
const MIN_DELTA: Record<WorkCounter, number> = {
  pages: 0.5,
  dirtied: 0.5,
  written: 0.5,
  wal_records: 0.5,
  wal_bytes: 32,
  wal_fpi: 0.05,
  rows: 0.5,
  temp_blocks: 1,
  local_blocks: 1,
};

/**
 * The counters that moved between base and head, in the order of {@link WORK_COUNTERS}. A counter moved
 * when it differs by at least {@link MIN_CHANGE} of the larger side and its {@link MIN_DELTA},
 * and, where the replays were counted one by one, every head replay lies beyond every base
 * replay (no overlap of their ranges) and the change exceeds how far the noise replay (base
 * again) fell from base.
 *
 * A read's WAL and dirtied or written pages are left out: they come from on-access pruning and
 * hint bits, set by whichever statement first reads a page after the rows changed, so they follow
 * the state the templates and earlier statements left, not the read itself (on the shop, a report
 * query dirtied 3.7 pages per call in every base replay and none on head, with identical plans).
 * @param base base's work
 * @param head head's work
 * @param kind the statement's kind (`select`, `update`, …)
 * @returns the changes, more work and less alike (less work is an improvement)
 */
export function workChanges(base: WorkStats, head: WorkStats, kind: string): WorkChange[] {
  const out: WorkChange[] = [];
  for (const [counter, value] of Object.entries(WORK_COUNTERS) as [WorkCounter, (w: WorkPerCall) => number | null][]) {
    if (kind === 'select' && WRITES.has(counter)) continue;
    const b = value(base.per_call);
    const h = value(head.per_call);
    if (b === null || h === null) continue;
    const delta = Math.abs(h - b);
    if (delta < MIN_DELTA[counter] || delta < MIN_CHANGE * Math.max(b, h)) continue;
    if (base.rounds && head.rounds && overlap(value, base.rounds, head.rounds)) continue;
    const noise = base.noise === null ? null : value(base.noise);
    if (noise !== null && delta <= Math.abs(noise - b)) continue;
    out.push({ counter, base: b, head: h, change: b === 0 ? null : h / b - 1, direction: h > b ? 'more' : 'less' });
  }
  return out;
}

function overlap(value: (w: WorkPerCall) => number | null, base: WorkRounds, head: WorkRounds): boolean {
  const b = replayRange(value, base);
  const h = replayRange(value, head);
  if (b === null || h === null) return false;
  return h[0] <= b[1] && h[1] >= b[0];
}

type WorkRounds = NonNullable<WorkStats['rounds']>;

/**
 * A counter's lowest and highest replay: over each replay's own figures when the report has them
 * (a sum like pages = hit + read is steadier than its parts, whose split follows the cache), else
 * from the per-field extremes.
 * @param value the counter
 * @param rounds a side's replays
 * @returns [lowest, highest], or null when the counter was not counted
 */
export function replayRange(value: (w: WorkPerCall) => number | null, rounds: WorkRounds): [number, number] | null {
  const figures = rounds.each ? rounds.each.map(value) : [value(rounds.min), value(rounds.max)];
  if (figures.some((f) => f === null)) return null;
  const known = figures as number[];
  return [Math.min(...known), Math.max(...known)];
}
