/**
 * The plan probe (design §3.6): every compared fingerprint's captured example EXPLAINed on the
 * base and head templates, its shapes compared, and its shared buffers and server time taken
 * from pg_stat_statements (joined exactly, by queryid) or, where that is unavailable or the
 * join is not exact, from one EXPLAIN (ANALYZE, BUFFERS) rolled back.
 *
 * The templates are what every replay copied (same data, same statistics, same relation
 * OIDs, hence the same queryids), so plans are those the replays ran with.
 */
import pg from 'pg';
import type { FingerprintComparison } from '../types.js';
import type { StatementExample } from '../engine/index.js';
import type { Logger } from '../runtime/logger.js';
import { EXPLAINABLE_KINDS, ExplainError, explainStatement } from './explain.js';
import { describeChange, planShape, type RawPlanNode, sameShape, seqScanSwitches, type ShapeNode, shapeLines } from './shape.js';
import type { CountersByQuery, MeasuredCounters, StatementCounters } from './stat-statements.js';
import { workChanges, workOfPlan, workOfReplays } from './work.js';
import {
  allIndexChanges,
  changesOn,
  type Indexes,
  type MigrationText,
  readIndexes,
  scannedIndexes,
  type TableIndexChange,
  writtenRelations,
} from './index-changes.js';
import { rowsRead } from './rows-read.js';
import type { FingerprintPlan, IndexChange, PlanRowsRead, PlanSide, PlansReport, SeqScanChange, StatementStats } from './types.js';

/** Buffers per call must grow by this factor (and by {@link MIN_BUFFER_DELTA}) for a plan change to count as costlier. */
const BUFFER_GROWTH_NOTICED = 1.2;
/** Pages per call below which a change in buffers is not worth a judgement (8 kB pages: 128 kB). */
export const MIN_BUFFER_DELTA = 16;

export interface ProbeInputs {
  baseUrl: string;
  headUrl: string;
  /** The major version of the server each template is on (base and head may run on different servers). */
  majors: { base: number; head: number };
  examples: StatementExample[];
  /** The compared fingerprints (successful executions on both sides). */
  fingerprints: FingerprintComparison[];
  /** pg_stat_statements counters of each side's replays, or why there are none. */
  counters: MeasuredCounters | { unavailable: string };
  logger: Logger;
  /** The migrations head applied, to name the line of an index change; absent: none named. */
  migrations?: MigrationText[];
}

interface SidePlan {
  shape: ShapeNode[];
  root: RawPlanNode;
  queryId: string | null;
}

/** A fingerprint explained on both sides, its example beside. */
interface Planned {
  f: FingerprintComparison;
  example: StatementExample;
  base: SidePlan;
  head: SidePlan;
}

type Clients = Record<'base' | 'head', pg.Client>;

/**
 * Probes every compared fingerprint on both templates.
 * @param inputs template URLs, examples, compared fingerprints, pg_stat_statements counters
 * @returns the plans report (probe failures recorded in it, never thrown)
 */
export async function probePlans(inputs: ProbeInputs): Promise<PlansReport> {
  const report = emptyReport(inputs.counters);
  const clients: Clients = { base: await connect(inputs.baseUrl), head: await connect(inputs.headUrl) };
  try {
    const planned = await explainBothSides(inputs, clients, report);
    // A queryid shared by two fingerprints cannot be split between them: neither is joined.
    const collisions = { base: sharedQueryIds(planned, 'base'), head: sharedQueryIds(planned, 'head') };
    const relationRows = new Map<string, number | null>();
    const indexes = await bothIndexes(clients, inputs.logger);
    // The catalogs' difference is the run's: found once, then picked per statement by the tables it writes.
    const changes = indexes ? allIndexChanges(indexes.base, indexes.head, inputs.migrations ?? []) : null;
    for (const p of planned) {
      const compared = await comparePlans(p, inputs, clients, { report, collisions, relationRows });
      if (compared.changed) compared.rows_read = await changedPlanRows(p, compared, inputs, clients, report);
      if (changes) compared.index_changes = explainingChanges(changes, p, compared.changed);
      report.fingerprints.push(compared);
    }
  } finally {
    await Promise.all([clients.base.end().catch(() => {}), clients.head.end().catch(() => {})]);
  }
  const order = { regression: 0, neutral: 1, improvement: 2 } as const;
  report.fingerprints.sort(
    (a, b) => Number(b.changed) - Number(a.changed) || (a.assessment && b.assessment ? order[a.assessment] - order[b.assessment] : 0),
  );
  const changed = report.fingerprints.filter((f) => f.changed).length;
  inputs.logger.info(
    `plans: ${report.fingerprints.length} fingerprints EXPLAINed on both sides, ${changed} changed` +
      `${report.failures.length > 0 ? `, ${report.failures.length} probe(s) failed` : ''}; buffers from ${report.stats.source}` +
      `${report.stats.unjoined > 0 ? ` (${report.stats.unjoined} not joined, from EXPLAIN ANALYZE)` : ''}`,
  );
  return report;
}

/**
 * The index changes that explain a statement's work or plan: those on the tables it writes (an
 * index added on an updated column) and, where its plan changed, those of the indexes either plan
 * scans (the `ORDER BY … LIMIT` index head dropped, the narrower one it added).
 */
function explainingChanges(changes: TableIndexChange[], p: Planned, changed: boolean): IndexChange[] {
  const written = new Set([...writtenRelations(p.base.root), ...writtenRelations(p.head.root)]);
  const scanned = changed ? new Set([...scannedIndexes(p.base.root), ...scannedIndexes(p.head.root)]) : new Set<string>();
  return changesOn(changes, written, scanned);
}

/**
 * The rows each side's changed plan reads: one EXPLAIN ANALYZE of the captured example on each
 * template, rolled back (rows-read.ts). Null, and a probe failure in the report, when either
 * cannot run: the rows are then not judged, and the rest of the probe stands.
 */
async function changedPlanRows(
  p: Planned,
  compared: FingerprintPlan,
  inputs: ProbeInputs,
  clients: Clients,
  report: PlansReport,
): Promise<PlanRowsRead | null> {
  const read = { base: 0, head: 0 };
  for (const side of ['base', 'head'] as const) {
    try {
      const analyzed = await explainStatement(clients[side], p.example.example, {
        analyze: true,
        major: inputs.majors[side],
        setup: p.example.setup,
      });
      read[side] = rowsRead(analyzed.plan);
    } catch (error) {
      report.failures.push({
        fingerprint: p.f.fingerprint,
        normalized: p.f.normalized,
        side,
        stage: 'rows',
        message: (error as Error).message,
        sqlstate: sqlstateOf(error),
      });
      return null;
    }
  }
  return { ...read, base_cost: compared.base.total_cost, head_cost: compared.head.total_cost };
}

/** Both templates' indexes, or null (logged) when they cannot be read: the index changes are then not named. */
async function bothIndexes(clients: Clients, logger: Logger): Promise<{ base: Indexes; head: Indexes } | null> {
  try {
    return { base: await readIndexes(clients.base), head: await readIndexes(clients.head) };
  } catch (error) {
    logger.info(
      `warning: the templates' indexes could not be read, so no index change is named: ${(error as Error).message.split('\n')[0]}`,
    );
    return null;
  }
}

/** The report before any probe: where buffers and server time will come from. */
function emptyReport(counters: ProbeInputs['counters']): PlansReport {
  return {
    stats: {
      source: 'base' in counters ? 'pg_stat_statements' : 'explain-analyze',
      pg_stat_statements: 'version' in counters ? counters.version : null,
      unavailable_reason: 'unavailable' in counters ? counters.unavailable : null,
      unjoined: 0,
      work_note: workNote(counters),
    },
    not_explainable: 0,
    fingerprints: [],
    failures: [],
    error: null,
  };
}

/** Said once for the run: which work counters the source leaves out. */
export function workNote(counters: ProbeInputs['counters']): string | null {
  if ('base' in counters && counters.wal === false) {
    return `pg_stat_statements ${counters.version} counts no WAL (1.8 and later do: ALTER EXTENSION pg_stat_statements UPDATE); WAL per call is left out`;
  }
  return null;
}

/**
 * Every explainable fingerprint's example EXPLAINed on both sides; a failure is recorded in the
 * report and leaves the fingerprint out.
 */
async function explainBothSides(inputs: ProbeInputs, clients: Clients, report: PlansReport): Promise<Planned[]> {
  const examples = new Map(inputs.examples.map((e) => [e.fingerprint, e]));
  const planned: Planned[] = [];
  for (const f of inputs.fingerprints) {
    if (!EXPLAINABLE_KINDS.has(f.kind)) {
      report.not_explainable++;
      continue;
    }
    const example = examples.get(f.fingerprint);
    const fail = (side: 'base' | 'head', stage: 'explain' | 'buffers', error: unknown) =>
      report.failures.push({
        fingerprint: f.fingerprint,
        normalized: f.normalized,
        side,
        stage,
        message: (error as Error).message,
        sqlstate: sqlstateOf(error),
      });
    if (example === undefined) {
      fail('base', 'explain', new Error('the workload has no captured statement with this fingerprint'));
      continue;
    }
    const sides: Partial<Record<'base' | 'head', SidePlan>> = {};
    for (const side of ['base', 'head'] as const) {
      try {
        const parsed = await explainStatement(clients[side], example.example, { analyze: false, major: inputs.majors[side] });
        sides[side] = { shape: planShape(parsed.plan), root: parsed.plan, queryId: parsed.queryId };
      } catch (error) {
        fail(side, 'explain', error);
      }
    }
    if (sides.base && sides.head) planned.push({ f, example, base: sides.base, head: sides.head });
  }
  return planned;
}

/** The queryids of one side that more than one fingerprint has. */
function sharedQueryIds(planned: Planned[], side: 'base' | 'head'): Set<string> {
  const seen = new Map<string, number>();
  for (const p of planned) if (p[side].queryId) seen.set(p[side].queryId!, (seen.get(p[side].queryId!) ?? 0) + 1);
  return new Set([...seen].filter(([, n]) => n > 1).map(([id]) => id));
}

/**
 * A fingerprint's plans side by side: each side's shape and statistics, whether the shape
 * changed, which index scans became sequential scans (with their tables' sizes), buffers growth.
 */
async function comparePlans(
  p: Planned,
  inputs: ProbeInputs,
  clients: Clients,
  shared: { report: PlansReport; collisions: Record<'base' | 'head', Set<string>>; relationRows: Map<string, number | null> },
): Promise<PlansReport['fingerprints'][number]> {
  const sides = {} as Record<'base' | 'head', PlanSide>;
  let unjoined = false;
  for (const side of ['base', 'head'] as const) {
    const measured = await sideStatistics(p, side, inputs, clients[side], shared);
    unjoined ||= measured.unjoined;
    const plan = p[side];
    sides[side] = {
      shape: shapeLines(plan.shape),
      total_cost: plan.root['Total Cost'] ?? 0,
      plan_rows: plan.root['Plan Rows'] ?? 0,
      query_id: plan.queryId,
      stats: measured.stats,
      stats_note: measured.note,
    };
  }
  if (unjoined) shared.report.stats.unjoined++;
  const changed = !sameShape(p.base.shape, p.head.shape);
  const seqScans: SeqScanChange[] = [];
  if (changed) {
    for (const s of seqScanSwitches(p.base.shape, p.head.shape)) {
      if (!shared.relationRows.has(s.relation)) shared.relationRows.set(s.relation, await reltuples(clients.base, s.relation));
      seqScans.push({ relation: s.relation, indexes: s.indexes, relation_rows: shared.relationRows.get(s.relation) ?? null });
    }
  }
  return {
    fingerprint: p.f.fingerprint,
    normalized: p.f.normalized,
    kind: p.f.kind,
    base: sides.base,
    head: sides.head,
    changed,
    change: changed ? describeChange(p.base.shape, p.head.shape) : null,
    assessment: changed ? assess(sides.base, sides.head) : null,
    seq_scans: seqScans,
    buffers_ratio: buffersRatio(sides.base.stats, sides.head.stats),
    work_changes:
      sides.base.stats?.work && sides.head.stats?.work ? workChanges(sides.base.stats.work, sides.head.stats.work, p.f.kind) : [],
  };
}

/**
 * One side's shared buffers and server time for a fingerprint: from pg_stat_statements when its
 * counters join exactly, else from one EXPLAIN (ANALYZE, BUFFERS); a failure is recorded.
 */
async function sideStatistics(
  p: Planned,
  side: 'base' | 'head',
  inputs: ProbeInputs,
  client: pg.Client,
  shared: { report: PlansReport; collisions: Record<'base' | 'head', Set<string>> },
): Promise<{ stats: StatementStats | null; note: string | null; unjoined: boolean }> {
  const calls = side === 'base' ? p.f.calls_base : p.f.calls_head;
  let stats: StatementStats | null = null;
  let note: string | null = null;
  let unjoined = false;
  if ('base' in inputs.counters) {
    const joined = joinCounters(inputs.counters[side], p[side].queryId, calls, shared.collisions[side]);
    if ('stats' in joined) {
      const { replays, wal } = inputs.counters;
      const work = workOfReplays(joined.counters, replays[side], side === 'base' ? replays.noise : [], p[side].queryId!, wal);
      stats = { ...joined.stats, work };
    } else {
      const evicted =
        inputs.counters.evictions > 0
          ? `, and it evicted entries during ${inputs.counters.evictions} replay(s): raise pg_stat_statements.max`
          : '';
      note = `pg_stat_statements not joined (${joined.why}${evicted}); buffers from one EXPLAIN (ANALYZE, BUFFERS)`;
      unjoined = true;
    }
  }
  if (stats === null) {
    try {
      const analyzed = await explainStatement(client, p.example.example, {
        analyze: true,
        major: inputs.majors[side],
        setup: p.example.setup,
      });
      stats = statsOfAnalyze(analyzed.plan, analyzed.executionMs);
    } catch (error) {
      const message = (error as Error).message;
      note = note === null ? `EXPLAIN ANALYZE failed: ${message}` : `${note}, which failed: ${message}`;
      shared.report.failures.push({
        fingerprint: p.f.fingerprint,
        normalized: p.f.normalized,
        side,
        stage: 'buffers',
        message,
        sqlstate: sqlstateOf(error),
      });
    }
  }
  return { stats, note, unjoined };
}

/**
 * A fingerprint's pg_stat_statements counters, when they are exactly its own: its queryid is
 * known, no other fingerprint has it, and the calls counted equal the replays' successful
 * executions (a fingerprint spread over several queryids, or an entry evicted, shows up there).
 */
function joinCounters(
  counters: CountersByQuery,
  queryId: string | null,
  calls: number,
  collisions: Set<string>,
): { stats: StatementStats; counters: StatementCounters } | { why: string } {
  if (queryId === null) return { why: 'EXPLAIN showed no query identifier' };
  if (collisions.has(queryId)) return { why: `queryid ${queryId} is shared with another fingerprint` };
  const c = counters.get(queryId);
  if (!c) return { why: `no entry for queryid ${queryId}` };
  if (c.calls !== calls) return { why: `${c.calls} calls counted for queryid ${queryId}, ${calls} successful executions replayed` };
  return {
    counters: c,
    stats: {
      source: 'pg_stat_statements',
      calls: c.calls,
      rows: c.rows,
      shared_hit: c.sharedHit,
      shared_read: c.sharedRead,
      buffers_per_call: (c.sharedHit + c.sharedRead) / c.calls,
      temp_written_per_call: c.tempWritten / c.calls,
      total_ms: c.totalMs,
      mean_ms: c.totalMs / c.calls,
    },
  };
}

/** Buffers of the root node include those of every node below it. */
function statsOfAnalyze(root: RawPlanNode, executionMs: number | null): StatementStats {
  const hit = root['Shared Hit Blocks'] ?? 0;
  const read = root['Shared Read Blocks'] ?? 0;
  const ms = executionMs ?? 0;
  return {
    source: 'explain-analyze',
    calls: 1,
    rows: root['Actual Rows'] ?? 0,
    shared_hit: hit,
    shared_read: read,
    buffers_per_call: hit + read,
    temp_written_per_call: root['Temp Written Blocks'] ?? 0,
    total_ms: ms,
    mean_ms: ms,
    work: { per_call: workOfPlan(root), rounds: null, noise: null },
  };
}

function buffersRatio(base: StatementStats | null, head: StatementStats | null): number | null {
  if (base === null || head === null) return null;
  return head.buffers_per_call / Math.max(base.buffers_per_call, 1);
}

function assess(base: PlanSide, head: PlanSide): 'improvement' | 'regression' | 'neutral' {
  const b = base.stats?.buffers_per_call;
  const h = head.stats?.buffers_per_call;
  const known = b !== undefined && h !== undefined;
  const buffersGrew = known && h > Math.max(b, 1) * BUFFER_GROWTH_NOTICED && h - b >= MIN_BUFFER_DELTA;
  const buffersFell = known && b > Math.max(h, 1) * BUFFER_GROWTH_NOTICED && b - h >= MIN_BUFFER_DELTA;
  if (head.total_cost > base.total_cost || buffersGrew) return 'regression';
  if (head.total_cost < base.total_cost || buffersFell) return 'improvement';
  return 'neutral';
}

function sqlstateOf(error: unknown): string | null {
  return error instanceof ExplainError ? (error.sqlstate ?? null) : null;
}

async function reltuples(client: pg.Client, relation: string): Promise<number | null> {
  try {
    const result = await client.query<{ n: number | null }>('SELECT reltuples::float8 AS n FROM pg_class WHERE oid = to_regclass($1)', [
      relation,
    ]);
    const n = result.rows[0]?.n;
    // -1: never analyzed (PostgreSQL 14+).
    return n === undefined || n === null || n < 0 ? null : n;
  } catch {
    return null;
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, application_name: 'pg-retest-action plans' });
  client.on('error', () => {});
  client.on('notice', () => {});
  await client.connect();
  return client;
}
