// Head's statistics on a copy of base (src/templates/head-statistics.ts): tables the PR's migrations
// leave alone keep base's statistics exactly; those they change are analyzed, each for its reason.
// Everything here is decided by the catalogs and the row counts, not by ANALYZE's random sample.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { settleCopyStatistics } from '../src/pg-retest-config/copy-statistics.js';
import { withDatabase } from '../src/provision/url.js';
import { refreshHeadStatistics } from '../src/templates/head-statistics.js';
import { silentLogger } from '../src/runtime/logger.js';
import { adminSql } from './support/admin-sql.js';
import { startPostgres } from './support/postgres.js';

const tag = `t_hstat_${Math.random().toString(36).slice(2, 8)}`;
const base = `${tag}_base`;
const url = (database: string): string => withDatabase(inject('pgUrl'), database);

async function run(database: string, ...statements: string[]): Promise<pg.QueryResultRow[]> {
  return runAt(url(database), ...statements);
}

async function runAt(databaseUrl: string, ...statements: string[]): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client(databaseUrl);
  await client.connect();
  try {
    let rows: pg.QueryResultRow[] = [];
    for (const sql of statements) rows = (await client.query(sql)).rows;
    return rows;
  } finally {
    await client.end();
  }
}

/** Every statistic of `table` that pg_stats shows, as text. */
async function statsOf(database: string, table: string): Promise<string> {
  const rows = await run(
    database,
    `SELECT attname, null_frac, n_distinct, most_common_vals::text, histogram_bounds::text, correlation FROM pg_stats WHERE tablename = '${table}' ORDER BY attname`,
  );
  return JSON.stringify(rows);
}

/** A copy of base with `migration` applied on a connection of its own, closed before returning. */
async function head(name: string, migration: string): Promise<string> {
  const database = `${tag}_${name}`;
  await adminSql(`CREATE DATABASE ${database} TEMPLATE ${base}`);
  await run(database, migration);
  return database;
}

beforeAll(async () => {
  await adminSql(`CREATE DATABASE ${base}`);
  // Random values, so that two samples of a table differ: a fresh ANALYZE would show it.
  const table = (name: string) =>
    `CREATE TABLE ${name} (id int PRIMARY KEY, k int NOT NULL, v text NOT NULL);
     INSERT INTO ${name} SELECT g, (random() * 5000)::int, md5(random()::text) FROM generate_series(1, 60000) g;`;
  await run(
    base,
    ['kept', 'written', 'widened', 'indexed', 'expr', 'truncated', 'renamed'].map(table).join('\n'),
    `CREATE TABLE events (id int, k int) PARTITION BY RANGE (id);
     CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (0) TO (50000);
     CREATE TABLE events_high PARTITION OF events FOR VALUES FROM (50000) TO (100000);
     INSERT INTO events SELECT g, (random() * 100)::int FROM generate_series(0, 99999) g;
     CREATE TABLE spare (id int, k int);
     INSERT INTO spare SELECT g, 1000 + (random() * 100)::int FROM generate_series(100000, 129999) g;
     CREATE TABLE par (id int, k int);
     CREATE TABLE kid () INHERITS (par);
     INSERT INTO kid SELECT g, (random() * 100)::int FROM generate_series(1, 20000) g;
     -- An expression index that never gets statistics: its predicate matches no sampled row.
     CREATE INDEX expr_none ON expr (lower(v)) WHERE k < 0;`,
    'VACUUM ANALYZE',
  );
});

afterAll(async () => {
  const rows = await run('postgres', `SELECT datname FROM pg_database WHERE starts_with(datname, '${tag}')`);
  for (const { datname } of rows) await adminSql(`DROP DATABASE IF EXISTS ${datname as string} WITH (FORCE)`);
});

describe("head's statistics on a copy of base", () => {
  it('an unchanged copy keeps every statistic of base: nothing is analyzed', async () => {
    const copy = await head('same', 'SELECT 1');
    expect(await refreshHeadStatistics(url(base), url(copy), silentLogger)).toEqual([]);
    for (const table of ['kept', 'written', 'expr', 'events']) expect(await statsOf(copy, table)).toBe(await statsOf(base, table));
  });

  it('tables the migrations changed are analyzed, each with its reason; the others keep base’s statistics', async () => {
    const changed = await head(
      'pr',
      [
        'UPDATE written SET k = k + 1 WHERE id <= 10',
        'ALTER TABLE widened ADD COLUMN note text',
        'CREATE INDEX indexed_k ON indexed (k)',
        'CREATE INDEX expr_lower_v ON expr (lower(v))',
        'TRUNCATE truncated',
        'ALTER TABLE renamed RENAME COLUMN v TO value',
        'CREATE TABLE added (id int)',
        'INSERT INTO events VALUES (1, 1)',
      ].join(';\n'),
    );
    const analyzed = await refreshHeadStatistics(url(base), url(changed), silentLogger);
    expect(analyzed).toEqual([
      { table: 'public.written', reason: 'rows written' },
      { table: 'public.widened', reason: 'columns changed' },
      { table: 'public.expr', reason: 'new expression index or extended statistics' },
      { table: 'public.truncated', reason: 'rewritten' },
      { table: 'public.events', reason: 'a partition or child table changed' },
      { table: 'public.events_low', reason: 'rows written' },
      { table: 'public.added', reason: 'new' },
    ]);
    // A plain index needs no statistics of its own, and a renamed column keeps its own.
    // (Not events_high: before PostgreSQL 17 and its ANALYZE ONLY, analyzing a partitioned table
    // analyzes every partition too.)
    for (const table of ['kept', 'indexed']) expect(await statsOf(changed, table)).toBe(await statsOf(base, table));
    expect(await statsOf(changed, 'renamed')).toBe((await statsOf(base, 'renamed')).replace('"attname":"v"', '"attname":"value"'));
    // The analyzed tables have fresh statistics: the expression index's, the new column's.
    expect(await run(changed, "SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'expr_lower_v'")).toEqual([{ n: 1 }]);
    expect(await run(changed, "SELECT null_frac FROM pg_stats WHERE tablename = 'widened' AND attname = 'note'")).toEqual([
      { null_frac: 1 },
    ]);
  });

  it('a parent that gained or lost a partition or child is analyzed, though no row moved', async () => {
    const cases: [string, string, string][] = [
      ['attach', 'ALTER TABLE events ATTACH PARTITION spare FOR VALUES FROM (100000) TO (130000)', 'public.events'],
      ['detach', 'ALTER TABLE events DETACH PARTITION events_high', 'public.events'],
      ['dropped', 'DROP TABLE events_high', 'public.events'],
      ['inherit', 'ALTER TABLE spare INHERIT par', 'public.par'],
      ['noinherit', 'ALTER TABLE kid NO INHERIT par', 'public.par'],
    ];
    for (const [name, migration, parent] of cases) {
      const copy = await head(name, migration);
      expect(await refreshHeadStatistics(url(base), url(copy), silentLogger), name).toEqual([
        { table: parent, reason: 'a partition or child table changed' },
      ]);
    }
  });

  it('a new expression index or statistics object is analyzed even where base lacked statistics for another', async () => {
    // expr_none has no statistics on base, which used to hide any new one on the same table.
    for (const [name, migration] of [
      ['exprindex', 'CREATE INDEX expr_lower_v ON expr (lower(v))'],
      ['extstats', 'CREATE STATISTICS expr_kv (ndistinct) ON k, v FROM expr'],
    ]) {
      const copy = await head(name!, migration!);
      expect(await refreshHeadStatistics(url(base), url(copy), silentLogger), name).toEqual([
        { table: 'public.expr', reason: 'new expression index or extended statistics' },
      ]);
    }
  });

  it("an idle session of the run's user left on head (a pooler's server connection) is ended, and the statistics are read as usual", async () => {
    const copy = await head('idle', 'SELECT 1');
    const lingering = new pg.Client(url(copy));
    lingering.on('error', () => {});
    await lingering.connect();
    try {
      expect(await refreshHeadStatistics(url(base), url(copy), silentLogger, 5_000)).toEqual([]);
      await expect(lingering.query('SELECT 1')).rejects.toThrow();
    } finally {
      await lingering.end().catch(() => {});
    }
  });

  it('while a session on head is still busy, every table is analyzed (what it wrote may not be counted yet)', async () => {
    const copy = await head('busy', 'SELECT 1');
    const busy = new pg.Client(url(copy));
    busy.on('error', () => {});
    await busy.connect();
    // Busy for as long as the test needs (it is ended below), and seen busy before the refresh
    // starts: no fixed pause that a loaded machine could outlast.
    const [{ pid }] = (await busy.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    const sleeping = busy.query('SELECT pg_sleep(600)').catch(() => {});
    try {
      while ((await run(copy, `SELECT 1 FROM pg_stat_activity WHERE pid = ${pid} AND state = 'active'`)).length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const analyzed = await refreshHeadStatistics(url(base), url(copy), silentLogger, 200);
      expect(analyzed.map((a) => a.table)).toEqual([
        ...[
          'kept',
          'written',
          'widened',
          'indexed',
          'expr',
          'truncated',
          'renamed',
          'events',
          'events_low',
          'events_high',
          'spare',
          'par',
          'kid',
        ].map((t) => `public.${t}`),
      ]);
      expect(new Set(analyzed.map((a) => a.reason))).toEqual(new Set(['migrations still connected']));
    } finally {
      await run(copy, `SELECT pg_terminate_backend(${pid})`);
      await sleeping;
      await busy.end().catch(() => {});
    }
  });
});

describe("a variant's copy (run with [[variants]])", () => {
  it("keeps its database's statistics; only a table that has none is analyzed", async () => {
    const source = `${tag}_variant`;
    await adminSql(`CREATE DATABASE ${source}`);
    await run(
      source,
      'CREATE TABLE kept (id int PRIMARY KEY, v text); INSERT INTO kept SELECT g, md5(random()::text) FROM generate_series(1, 60000) g; ANALYZE kept',
      // Not analyzed, as after a restore; autovacuum is kept away so that it stays so.
      'CREATE TABLE fresh (id int PRIMARY KEY, v text) WITH (autovacuum_enabled = false); INSERT INTO fresh SELECT g, md5(random()::text) FROM generate_series(1, 1000) g',
      'CREATE TABLE empty (id int)',
    );
    const copy = `${tag}_variant_copy`;
    await adminSql(`CREATE DATABASE ${copy} TEMPLATE ${source}`);
    expect(await settleCopyStatistics(url(copy))).toEqual(['public.fresh']);
    expect(await statsOf(copy, 'kept')).toBe(await statsOf(source, 'kept'));
    expect(await run(copy, "SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'fresh'")).toEqual([{ n: 2 }]);
  });
});

describe('before PostgreSQL 15', () => {
  // Rows a session wrote reach the statistics views through the statistics collector, late or
  // not at all: a data migration's UPDATE read as no rows written kept base's stale statistics.
  it('every table is analyzed, whatever the migrations did', async () => {
    const server = await startPostgres({ major: 14 });
    try {
      const on = (database: string): string => withDatabase(server.url, database);
      await runAt(on('postgres'), 'CREATE DATABASE b');
      await runAt(
        on('b'),
        "CREATE TABLE orders (id int PRIMARY KEY, status text); INSERT INTO orders SELECT g, 'pending' FROM generate_series(1, 1000) g; CREATE TABLE kept (id int)",
        'VACUUM ANALYZE',
      );
      await runAt(on('postgres'), 'CREATE DATABASE h TEMPLATE b');
      await runAt(on('h'), "UPDATE orders SET status = 'archived' WHERE id > 50");
      expect(await refreshHeadStatistics(on('b'), on('h'), silentLogger)).toEqual(
        ['public.orders', 'public.kept'].map((table) => ({ table, reason: 'rows written not countable before PostgreSQL 15' })),
      );
    } finally {
      await server.stop();
    }
  });
});
