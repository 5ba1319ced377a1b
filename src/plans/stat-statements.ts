/**
 * pg_stat_statements: per-statement calls, rows, shared buffers and server execution time of
 * each replay, read from the server's own accounting. The gate preloads it on servers it
 * starts; on a `database-url` server it is used when the server has it loaded.
 *
 * Each replay runs on a fresh database, so its entries are told apart by `dbid`. Before the
 * replay the gate resets that database's entries where it may (superuser or a granted reset)
 * and takes a snapshot in any case; after it, the replay's numbers are the difference, so a
 * reused database OID or a refused reset cannot leak other numbers in. Entries are keyed by
 * `queryid`; joining them to fingerprints is the prober's job (probe.ts).
 */
import pg from 'pg';
import { createDatabase, dropDatabase } from '../provision/database.js';
import { passwordOf, redact } from '../provision/url.js';

/** One pg_stat_statements entry (top level, one database), numbers summed over its users. */
export interface StatementCounters {
  calls: number;
  rows: number;
  sharedHit: number;
  sharedRead: number;
  sharedDirtied: number;
  sharedWritten: number;
  localHit: number;
  localRead: number;
  localDirtied: number;
  localWritten: number;
  tempRead: number;
  /** Blocks written to temporary files: sorts, hashes and materializations that did not fit in work_mem. */
  tempWritten: number;
  /** WAL the statement generated (pg_stat_statements 1.8 and later; 0 before, see {@link hasWalCounters}). */
  walRecords: number;
  walFpi: number;
  walBytes: number;
  totalMs: number;
}

/** The counters, in the order the view's columns are read. */
const COUNTER_COLUMNS = {
  calls: 'calls',
  rows: 'rows',
  sharedHit: 'shared_blks_hit',
  sharedRead: 'shared_blks_read',
  sharedDirtied: 'shared_blks_dirtied',
  sharedWritten: 'shared_blks_written',
  localHit: 'local_blks_hit',
  localRead: 'local_blks_read',
  localDirtied: 'local_blks_dirtied',
  localWritten: 'local_blks_written',
  tempRead: 'temp_blks_read',
  tempWritten: 'temp_blks_written',
  walRecords: 'wal_records',
  walFpi: 'wal_fpi',
  walBytes: 'wal_bytes',
  totalMs: 'total_exec_time',
} as const satisfies Record<keyof StatementCounters, string>;

const COUNTERS = Object.keys(COUNTER_COLUMNS) as (keyof StatementCounters)[];
const WAL_COUNTERS: ReadonlySet<keyof StatementCounters> = new Set(['walRecords', 'walFpi', 'walBytes']);

/**
 * Whether this version of the extension counts WAL per statement (1.8, PostgreSQL 13, and later;
 * a server upgraded in place keeps the version its extension was created with until
 * `ALTER EXTENSION pg_stat_statements UPDATE`).
 * @param version the extension's version (`1.10`)
 * @returns true when the view has wal_records, wal_fpi and wal_bytes
 */
export function hasWalCounters(version: string): boolean {
  const [major, minor] = version.split('.').map((n) => Number.parseInt(n, 10));
  return (major ?? 0) > 1 || ((major ?? 0) === 1 && (minor ?? 0) >= 8);
}

/** Counters by queryid (decimal text). */
export type CountersByQuery = Map<string, StatementCounters>;

/** A replay's side: base, head, or base again for the noise pair. */
export type ReplaySide = 'base' | 'head' | 'noise';

/** The replays' counters, summed per side and each replay's own. */
export interface MeasuredCounters {
  base: CountersByQuery;
  head: CountersByQuery;
  /** Each replay's counters by side, in the order replayed, for the spread of work per call. */
  replays: Record<ReplaySide, CountersByQuery[]>;
  version: string;
  /** Whether WAL was counted (pg_stat_statements 1.8 and later, on both servers). */
  wal: boolean;
  /** Replays during which pg_stat_statements evicted entries. */
  evictions: number;
}

/** Where the view can be read, or why it cannot. */
export type StatStatementsStatus =
  | { available: true; url: string; version: string; createdDatabase: string | null }
  | { available: false; reason: string };

const MIN_MAJOR = 14;

/**
 * Finds a usable pg_stat_statements on the server: the extension in the URL's database, or, when
 * the library is loaded but the extension is not created there, in a database of the gate's own
 * (so that a user's database is never changed).
 * @param serverUrl the run's server URL
 * @param major the server's major version
 * @param statsDatabase the name for the gate's own database, should one be needed
 * @returns where to read it, or why it cannot be used
 */
export async function findStatStatements(serverUrl: string, major: number, statsDatabase: string): Promise<StatStatementsStatus> {
  if (major < MIN_MAJOR) {
    return {
      available: false,
      reason: `PostgreSQL ${major} does not show the query identifier in EXPLAIN (14 and later do), which the exact join to fingerprints needs`,
    };
  }
  try {
    const found = await withClient(serverUrl, async (client) => {
      const loaded = (await client.query<{ v: string }>("SELECT current_setting('shared_preload_libraries') AS v")).rows[0]!.v;
      if (
        !loaded
          .split(',')
          .map((s) => s.trim().replace(/^"|"$/g, ''))
          .includes('pg_stat_statements')
      ) {
        return { available: false as const, reason: 'the server does not load it (add pg_stat_statements to shared_preload_libraries)' };
      }
      const computeQueryId = (await client.query<{ v: string }>("SELECT current_setting('compute_query_id') AS v")).rows[0]!.v;
      if (computeQueryId === 'off')
        return { available: false as const, reason: 'compute_query_id is off on the server (set it to auto or on)' };
      const ext = await client.query<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'");
      return ext.rows[0] ? { available: true as const, url: serverUrl, version: ext.rows[0].extversion, createdDatabase: null } : null;
    });
    if (found !== null) return found.available ? await checkReadable(found) : found;
    const url = await createDatabase(serverUrl, statsDatabase);
    try {
      const version = await withClient(url, async (client) => {
        await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
        return (await client.query<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'"))
          .rows[0]!.extversion;
      }).catch((error: unknown) => {
        throw new Error(`cannot create the extension in a database of the gate's own: ${messageOf(error)}`);
      });
      return await checkReadable({ available: true, url, version, createdDatabase: statsDatabase });
    } catch (error) {
      await dropDatabase(serverUrl, statsDatabase).catch(() => {});
      throw error;
    }
  } catch (error) {
    return { available: false, reason: redact(messageOf(error), passwordOf(serverUrl)) };
  }
}

async function checkReadable(status: StatStatementsStatus & { available: true }): Promise<StatStatementsStatus> {
  await withClient(status.url, (client) => client.query('SELECT 1 FROM pg_stat_statements LIMIT 1'));
  return status;
}

/** A replay's database, watched from before the replay to after it. */
export interface Watch {
  dbid: number;
  /** Whether the view counts WAL ({@link hasWalCounters}). */
  wal: boolean;
  before: CountersByQuery;
  reset: boolean;
  /** pg_stat_statements_info.dealloc before the replay (null before version 1.9). */
  dealloc: number | null;
}

/** One replay's counters, and whether entries were evicted meanwhile (counts may then be short). */
export interface ReplayCounters {
  counters: CountersByQuery;
  evicted: boolean;
}

/**
 * Prepares to measure one replay: resets the database's entries if allowed, then snapshots them.
 * @param statsUrl where the view is
 * @param database the replay's database (already created)
 * @param wal whether the view counts WAL ({@link hasWalCounters})
 * @returns what {@link readReplay} needs
 */
export async function watchReplay(statsUrl: string, database: string, wal: boolean): Promise<Watch> {
  return withClient(statsUrl, async (client) => {
    const dbid = (await client.query<{ oid: number }>('SELECT oid::int8::float8 AS oid FROM pg_database WHERE datname = $1', [database]))
      .rows[0]?.oid;
    if (dbid === undefined) throw new Error(`database ${database} does not exist`);
    let reset = true;
    try {
      await client.query('SELECT pg_stat_statements_reset(0, $1::oid, 0)', [dbid]);
    } catch {
      // Not allowed for this user: the snapshot below is subtracted instead.
      reset = false;
    }
    return { dbid, wal, before: await counters(client, dbid, wal), reset, dealloc: await deallocations(client) };
  });
}

/**
 * The replay's own numbers: the database's entries now, minus the snapshot.
 * @param statsUrl where the view is
 * @param watch from {@link watchReplay}
 * @returns counters by queryid
 */
export async function readReplay(statsUrl: string, watch: Watch): Promise<ReplayCounters> {
  const [after, dealloc] = await withClient(statsUrl, async (client) => {
    const read = [await counters(client, watch.dbid, watch.wal), await deallocations(client)] as const;
    // The replay's database is dropped next, but its entries would stay in the view: over the
    // replays of a run (and the runs of a long-lived server) they fill pg_stat_statements.max,
    // and the evictions that follow cost later replays their counts. Read, they can go.
    if (watch.reset) await client.query('SELECT pg_stat_statements_reset(0, $1::oid, 0)', [watch.dbid]).catch(() => {});
    return read;
  });
  const out: CountersByQuery = new Map();
  for (const [id, now] of after) {
    const was = watch.before.get(id);
    const d = was ? subtract(now, was) : now;
    if (d.calls > 0) out.set(id, d);
  }
  return { counters: out, evicted: watch.dealloc !== null && dealloc !== null && dealloc > watch.dealloc };
}

/**
 * How often pg_stat_statements has evicted entries to make room (`pg_stat_statements.max`
 * reached): an evicted entry loses its counts, so the replay's calls come up short. The exact
 * join notices that by the calls; this says why.
 */
async function deallocations(client: pg.Client): Promise<number | null> {
  try {
    return (await client.query<{ n: number }>('SELECT dealloc::float8 AS n FROM pg_stat_statements_info')).rows[0]?.n ?? null;
  } catch {
    return null;
  }
}

/**
 * Adds one replay's counters to a side's total.
 * @param total the side's counters so far (changed in place)
 * @param replay one replay's counters
 */
export function addCounters(total: CountersByQuery, replay: CountersByQuery): void {
  for (const [id, c] of replay) {
    const t = total.get(id);
    total.set(id, t ? combine(t, c, 1) : { ...c });
  }
}

/** a + sign × b, counter by counter. */
function combine(a: StatementCounters, b: StatementCounters, sign: 1 | -1): StatementCounters {
  const out = { ...a };
  for (const k of COUNTERS) out[k] = a[k] + sign * b[k];
  return out;
}

function subtract(a: StatementCounters, b: StatementCounters): StatementCounters {
  return combine(a, b, -1);
}

async function counters(client: pg.Client, dbid: number, wal: boolean): Promise<CountersByQuery> {
  // Top-level statements only: a function's inner statements are part of the caller's time.
  const sums = COUNTERS.map((k) => (WAL_COUNTERS.has(k) && !wal ? `0::float8 AS "${k}"` : `sum(${COUNTER_COLUMNS[k]})::float8 AS "${k}"`));
  const result = await client.query<StatementCounters & { queryid: string }>(
    `SELECT queryid::text AS queryid, ${sums.join(', ')}
       FROM pg_stat_statements
      WHERE dbid = $1::oid AND toplevel AND queryid IS NOT NULL
      GROUP BY queryid`,
    [dbid],
  );
  return new Map(
    result.rows.map((r) => {
      const c = {} as StatementCounters;
      for (const k of COUNTERS) c[k] = Number(r[k]);
      return [r.queryid, c];
    }),
  );
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
