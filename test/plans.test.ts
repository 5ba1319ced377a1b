// Query plans, buffers and server time per fingerprint (docs/plans.md), on the example
// app against a server of this file's own that preloads pg_stat_statements. The shared test
// server does not preload it, so the gate runs in test/gate.test.ts cover the fallback
// (EXPLAIN (ANALYZE, BUFFERS)); these cover the exact join by queryid.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorkload } from '../src/engine/index.js';
import type { GateReport } from '../src/verdict/report-types.js';
import type { FingerprintComparison } from '../src/types.js';
import { MIN_BUFFER_DELTA, probePlans } from '../src/plans/probe.js';
import type { PlansReport } from '../src/plans/types.js';
import { silentLogger } from '../src/runtime/logger.js';
import { refreshHeadStatistics } from '../src/templates/head-statistics.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { startPostgres } from './support/postgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
/** The storefront's order history, the query orders_customer_created_idx serves. */
const ORDER_HISTORY = /FROM orders o WHERE o\.customer_id = \$1 ORDER BY o\.created_at DESC LIMIT \$2/;

let server: Awaited<ReturnType<typeof startPostgres>>;
let tmp: string;

beforeAll(async () => {
  server = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-plans-'));
  const build = spawnSync('npm', ['run', '--silent', 'build:cli'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build:cli failed:\n${build.stdout}${build.stderr}`);
});

afterAll(async () => {
  await server?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function gate(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; report: GateReport }> {
  const json = path.join(tmp, `report-${Math.random().toString(16).slice(2)}.json`);
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    for (const name of ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS']) delete env[name];
    const child = spawn(process.execPath, [path.join(root, 'dist', 'cli.js'), ...args, '--json', json], { cwd: root, env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => {
      if (!fs.existsSync(json)) return reject(new Error(`no report (exit ${code}):\n${stderr}`));
      resolve({ code, stdout, stderr, report: JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport });
    });
  });
}

function shopArgs(baseFiles: string[], headFiles: string[], extra: string[] = []): string[] {
  return [
    'gate',
    '--database-url',
    server.url,
    '--workload',
    shop('workload.wkl'),
    '--seed',
    shop('seed.sql'),
    '--base-migrations',
    ...baseFiles,
    '--migrations',
    ...headFiles,
    ...extra,
  ];
}

async function query<T extends pg.QueryResultRow>(database: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, `/${database}`) });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** What the seed implies for the order history's pages per call (see the first test). */
interface SeedPages {
  /** Heap pages of orders: what a sequential scan reads. */
  ordersPages: number;
  /** Pages from the root of orders_customer_created_idx to a leaf. */
  indexLevels: number;
}

let seedPages: SeedPages;

/** Runs a SQL file (several statements, no psql commands) on a database. */
async function runFile(database: string, file: string): Promise<void> {
  await query(database, fs.readFileSync(file, 'utf8'));
}

/**
 * The probe without a gate run: every fingerprint of the workload as the comparison would list
 * it, buffers from EXPLAIN ANALYZE.
 */
/** A database on this file's server. */
const databaseUrl = (db: string): string => server.url.replace(/\/postgres$/, `/${db}`);

async function probeDatabases(baseDb: string, headDb: string): Promise<PlansReport> {
  const workload = await loadWorkload(shop('workload.wkl'));
  const examples = workload.examples();
  const fingerprints = examples.map(
    (e) => ({ fingerprint: e.fingerprint, normalized: e.normalized, kind: e.kind, calls_base: 1, calls_head: 1 }) as FingerprintComparison,
  );
  return probePlans({
    baseUrl: databaseUrl(baseDb),
    headUrl: databaseUrl(headDb),
    majors: { base: server.major, head: server.major },
    examples,
    fingerprints,
    counters: { unavailable: 'not used by this test' },
    logger: silentLogger,
  });
}

describe('plans with pg_stat_statements', () => {
  beforeAll(async () => {
    // Templates as the gate builds them for the drop-index variant: base = migrations + seed,
    // VACUUM ANALYZE; head = a copy of base + the variant's migration, then head's statistics
    // as the gate refreshes them (a dropped index leaves every table's statistics as they were).
    await query('postgres', 'CREATE DATABASE plans_base');
    for (const file of fs.readdirSync(shop('migrations')).sort()) await runFile('plans_base', shop('migrations', file));
    await runFile('plans_base', shop('seed.sql'));
    await query('plans_base', 'VACUUM ANALYZE');
    await query('postgres', 'CREATE DATABASE plans_head TEMPLATE plans_base');
    await runFile('plans_head', shop('variants', 'drop-index', '100_drop_orders_customer_index.sql'));
    expect(await refreshHeadStatistics(databaseUrl('plans_base'), databaseUrl('plans_head'), silentLogger)).toEqual([]);
    await query('plans_base', 'CREATE EXTENSION pgstattuple');
    const [pages] = await query<{ relpages: number }>('plans_base', "SELECT relpages FROM pg_class WHERE relname = 'orders'");
    const [index] = await query<{ tree_level: number }>('plans_base', "SELECT tree_level FROM pgstatindex('orders_customer_created_idx')");
    seedPages = { ordersPages: pages!.relpages, indexLevels: index!.tree_level + 1 };
  }, 120_000);

  /**
   * The factor the seed implies for the order history (examples/shop/seed.sql): a customer's
   * 10 orders are 12,000 ids apart, so they lie on 10 different heap pages. With the index,
   * a call reads those 10 pages and the index from root to leaf; without it, every heap page
   * of orders. Stated tolerances: head from the orders table's size up to that plus 512 pages:
   * the replays add a few dozen orders, about one page on a quiet machine (1,229.5 pages per
   * call against 1,228), but when sessions wait on the table's extension lock PostgreSQL
   * extends it by 20 pages per waiter, up to 512 at once (a loaded run measured 1,255.2).
   * Base from the 10 + levels pages up to 1.5 times that (a customer's entries may straddle
   * two leaves, and the bitmap heap scan touches a page or two of its own); the factor
   * therefore lies between expected / 1.5 and expected × (1 + 512 / the table's pages).
   */
  function expectSeedFactor(base: number, head: number): void {
    const expectedBase = 10 + seedPages.indexLevels;
    const grown = (seedPages.ordersPages + 512) / seedPages.ordersPages;
    expect(head).toBeGreaterThanOrEqual(seedPages.ordersPages);
    expect(head).toBeLessThanOrEqual(seedPages.ordersPages * grown);
    expect(base).toBeGreaterThanOrEqual(expectedBase);
    expect(base).toBeLessThanOrEqual(expectedBase * 1.5);
    const expected = seedPages.ordersPages / expectedBase;
    expect(head / base).toBeGreaterThanOrEqual(expected / 1.5);
    expect(head / base).toBeLessThanOrEqual(expected * grown);
  }

  it('drop-index: the order history, and only it, switches to a sequential scan; buffers grow as the seed implies; the plan rules fail the run', async () => {
    const migrations = shop('migrations', '*.sql');
    const run = await gate(
      shopArgs(
        [migrations],
        [migrations, shop('variants', 'drop-index', '*.sql')],
        // One round: the plans and their buffers are what this test reads, and the confirmation
        // rounds the slower history would bring add minutes of replays and nothing to check.
        ['--fail-on-plan-change', 'seq-scan', '--max-buffers-growth', '10x', '--rounds', '1', '--confirm-rounds', '0'],
      ),
    );
    const plans = run.report.plans!;
    expect(plans, run.stderr).toBeTruthy();
    expect(plans.error).toBeNull();
    expect(plans.stats).toMatchObject({ source: 'pg_stat_statements', unavailable_reason: null, unjoined: 0 });
    expect(plans.failures).toEqual([]);
    // Every compared fingerprint EXPLAIN can plan was probed (the rest is transaction control).
    const compared = run.report.comparison!.fingerprints;
    const explainable = compared.filter((f) => ['select', 'insert', 'update', 'delete'].includes(f.kind));
    expect(plans.fingerprints).toHaveLength(explainable.length);
    expect(plans.not_explainable).toBe(compared.length - explainable.length);

    const changed = plans.fingerprints.filter((f) => f.changed);
    expect(changed.map((f) => f.normalized)).toEqual([expect.stringMatching(ORDER_HISTORY)]);
    const history = changed[0]!;
    expect(history.change).toBe('orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan');
    expect(history.assessment).toBe('regression');
    expect(history.seq_scans).toEqual([{ relation: 'orders', indexes: ['orders_customer_created_idx'], relation_rows: 120_000 }]);
    // Joined exactly: pg_stat_statements counted every successful execution of the replays,
    // for every probed fingerprint.
    for (const f of plans.fingerprints) {
      const c = compared.find((x) => x.fingerprint === f.fingerprint)!;
      expect(f.base.stats, f.normalized).toMatchObject({ source: 'pg_stat_statements', calls: c.calls_base });
      expect(f.head.stats, f.normalized).toMatchObject({ source: 'pg_stat_statements', calls: c.calls_head });
      expect(f.base.query_id).toMatch(/^-?\d+$/);
    }
    expectSeedFactor(history.base.stats!.buffers_per_call, history.head.stats!.buffers_per_call);
    // Server time follows the buffers: the sequential scan costs more per call (about 8× the
    // index lookup's mean here; 2× leaves room for a burst of load on the head rounds alone).
    expect(history.head.stats!.mean_ms).toBeGreaterThan(history.base.stats!.mean_ms * 2);
    // Unchanged plans of reads keep their buffers, within what concurrent writes move. Not the
    // writes': a write that extends a table under contention may touch the pages it adds,
    // which depends on how many sessions wait on the extension lock at that moment.
    // Small reads may also fetch a heap page per dead index entry not yet killed, which depends
    // on when the scans' snapshots end: within 1.5× or MIN_BUFFER_DELTA pages, which the
    // gate's buffers rule does not count either.
    for (const f of plans.fingerprints.filter((x) => !x.changed && x.kind === 'select')) {
      const grown = f.head.stats!.buffers_per_call - f.base.stats!.buffers_per_call;
      expect(
        f.buffers_ratio! < 1.5 || grown < MIN_BUFFER_DELTA,
        `${f.normalized}: ${f.base.stats!.buffers_per_call} → ${f.head.stats!.buffers_per_call}`,
      ).toBe(true);
    }

    expect(run.code).toBe(1);
    expect(run.report.verdict).toBe('regression');
    expect(run.report.reasons.filter((r) => r.includes('sequential scan on orders (120,000 rows)'))).toHaveLength(1);
    expect(run.report.reasons.filter((r) => /shared buffers per call .* allowed: 10×/.test(r))).toHaveLength(1);
    expect(run.stdout).toContain('#### Plan changes');
    expect(run.stdout).toContain('orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan');
    // Literals of the captured example never reach the comment.
    expect(run.stdout).not.toMatch(/customer_id = \d/);
  }, 240_000);

  it('the plan probe on the drop-index templates gives the same result 10 times in 10 (EXPLAIN ANALYZE fallback)', async () => {
    const results: string[] = [];
    let last: PlansReport | undefined;
    for (let i = 0; i < 10; i++) {
      const plans = await probeDatabases('plans_base', 'plans_head');
      results.push(
        JSON.stringify(plans.fingerprints.map((f) => [f.fingerprint, f.base.shape, f.head.shape, f.change, f.assessment, f.seq_scans])),
      );
      last = plans;
    }
    expect(new Set(results).size).toBe(1);
    // Every plan was probed and every statement executed: the checkout's line insert refers
    // to the order its transaction inserted just before, so the probe replays that
    // transaction's earlier statements first (alone, it fails the foreign key).
    expect(last!.failures).toEqual([]);
    const lineInsert = last!.fingerprints.find(
      (f) => f.normalized.startsWith('INSERT INTO order_items') && f.normalized.includes('currval'),
    );
    expect(lineInsert?.base.stats?.source).toBe('explain-analyze');
    expect(lineInsert?.head.stats?.calls).toBe(1);
    const changed = last!.fingerprints.filter((f) => f.changed);
    expect(changed.map((f) => f.normalized)).toEqual([expect.stringMatching(ORDER_HISTORY)]);
    expect(changed[0]!.change).toBe('orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan');
    // The fallback's one execution shows the same pages as the replays' averages.
    expect(changed[0]!.base.stats!.source).toBe('explain-analyze');
    expectSeedFactor(changed[0]!.base.stats!.buffers_per_call, changed[0]!.head.stats!.buffers_per_call);
    // Writes were explained inside transactions that were rolled back.
    const rows = await query<{ n: number }>(
      'plans_base',
      "SELECT count(*)::int AS n FROM customers WHERE email = 'new.customer@example.com'",
    );
    expect(rows[0]!.n).toBe(0);
  }, 120_000);

  it('A/A: a head copied from base keeps its statistics and plans every fingerprint as base does, 3 times in 3', async () => {
    // An A/A gate run's head is a copy of base with no migration: its statistics stay base's
    // (src/templates/head-statistics.ts). A fresh ANALYZE of the copy instead planned the order
    // history differently in 1 of 10 copies on a fresh-clone run (bitmap heap scan and sort →
    // index scan): two samples of orders, not the PR.
    const changes: string[][] = [];
    for (let i = 0; i < 3; i++) {
      await query('postgres', 'CREATE DATABASE plans_aa TEMPLATE plans_base');
      try {
        expect(await refreshHeadStatistics(databaseUrl('plans_base'), databaseUrl('plans_aa'), silentLogger)).toEqual([]);
        const plans = await probeDatabases('plans_base', 'plans_aa');
        expect(plans.fingerprints.length).toBeGreaterThan(20);
        expect(plans.failures.filter((f) => f.stage === 'explain')).toEqual([]);
        changes.push(plans.fingerprints.filter((f) => f.changed).map((f) => `${f.normalized}: ${f.change}`));
      } finally {
        await query('postgres', 'DROP DATABASE plans_aa');
      }
    }
    expect(changes).toEqual(Array(3).fill([]));
  }, 180_000);

  it('a PR that adds the index back: the plan change is an improvement, and even seq-scan gating passes', async () => {
    const index = path.join(tmp, '101_orders_customer_index.sql');
    fs.writeFileSync(index, 'CREATE INDEX orders_customer_created_idx ON orders (customer_id, created_at DESC);\n');
    const base = [shop('migrations', '*.sql'), shop('variants', 'drop-index', '*.sql')];
    // About plans: the latency rule is out of reach (docs/testing.md, "Timing").
    const run = await gate(
      shopArgs(
        base,
        [...base, index],
        // The work rule off: the index makes the inserts into orders write one more entry, more
        // work the rule fails (test/work.test.ts); this test is about the plan rules.
        [
          '--fail-on-plan-change',
          'seq-scan',
          '--work-threshold',
          'off',
          '--rounds',
          '1',
          '--confirm-rounds',
          '0',
          ...LATENCY_RULE_OUT_OF_REACH,
        ],
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.report.verdict).toBe('pass');
    const changed = run.report.plans!.fingerprints.filter((f) => f.changed);
    expect(changed.map((f) => [f.change, f.assessment])).toEqual([
      ['orders: Seq Scan → Bitmap Heap Scan using orders_customer_created_idx', 'improvement'],
    ]);
    expect(changed[0]!.seq_scans).toEqual([]);
    expect(run.stdout).toContain('✅ improvement');
  }, 240_000);
});
