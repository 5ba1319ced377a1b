// Work per call (docs/plans.md, "Work per call"): pages, WAL, rows and temporary blocks per
// execution of each fingerprint on each side, from the replays' own pg_stat_statements entries,
// with each replay's figure for the spread and the noise replay's beside. On a server of this
// file's own that preloads pg_stat_statements (the shared test server does not). Two gate runs
// side by side on the shop: identical schemas, and head adding an index on the column the
// shop's hottest UPDATE sets, which the work rule fails (plans/work-rule.ts). What is asserted is
// the presence of the counters, the direction of the change and the verdict, never an amount;
// latency is not the subject, its rules are out of reach.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FingerprintPlan, WorkPerCall } from '../src/plans/types.js';
import { WORK_COUNTERS } from '../src/plans/work.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { startPostgres } from './support/postgres.js';
import { runCli, shop } from './support/shop-gate.js';

const MIGRATIONS = ['001_customers.sql', '002_products.sql', '003_orders.sql', '004_order_items.sql', '005_reviews.sql'].map((f) =>
  shop('migrations', f),
);
/** The shop's most frequent statement: 484 calls per replay, each a write of one row. */
const LAST_LOGIN = 'UPDATE customers SET last_login = now() WHERE id = $1';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  report: GateReport;
}

let server: Awaited<ReturnType<typeof startPostgres>>;
let tmp: string;
let same: Run;
let indexed: Run;
/** Identical schemas on the shared test server, which does not preload pg_stat_statements. */
let fallback: Run;
let narrower: Run;

/**
 * The gate on the shop, its base the shop's migrations.
 * @param name the report's file name
 * @param headFiles head's migrations
 * @param o.url the server: this file's (with pg_stat_statements) unless given
 * @param o.rounds rounds per side: two give each side a spread
 * @param o.speed the replay pace
 * @param o.workload the shop's workload replayed
 */
async function gate(
  name: string,
  headFiles: string[],
  {
    url = server.url,
    rounds = 2,
    speed = 1,
    workload = 'workload.wkl',
  }: { url?: string; rounds?: number; speed?: number; workload?: string } = {},
): Promise<Run> {
  const json = path.join(tmp, `${name}.json`);
  const run = await runCli([
    'gate',
    '--database-url',
    url,
    '--workload',
    shop(workload),
    '--seed',
    shop('seed.sql'),
    '--base-migrations',
    ...MIGRATIONS,
    '--migrations',
    ...headFiles,
    // At the captured pace, where the work per call of every frequent statement is steady: at
    // full speed a contended write's work follows how the sessions happened to interleave
    // (docs/gate-statistics.md, "The work rule"), a matter of chance a test must not depend on.
    '--rounds',
    String(rounds),
    '--speed',
    String(speed),
    '--confirm-rounds',
    '0',
    ...LATENCY_RULE_OUT_OF_REACH,
    '--json',
    json,
  ]);
  if (!fs.existsSync(json)) throw new Error(`no report (exit ${run.code}):\n${run.stderr}`);
  return { ...run, report: JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport };
}

beforeAll(async () => {
  server = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-work-'));
  const index = path.join(tmp, '006_customers_last_login_idx.sql');
  fs.writeFileSync(
    index,
    '-- Find the customers who logged in lately.\nCREATE INDEX customers_last_login_idx ON customers (last_login);\n',
  );
  // The category listing's (category, price) index, which serves its ORDER BY price LIMIT,
  // replaced by one on category alone.
  const narrowerIndex = path.join(tmp, '006_products_category_idx.sql');
  fs.writeFileSync(narrowerIndex, 'DROP INDEX products_category_price_idx;\nCREATE INDEX products_category_idx ON products (category);\n');
  [same, indexed, fallback, narrower] = await Promise.all([
    gate('same', MIGRATIONS),
    // Two rounds: on a loaded machine even the captured pace lets replays of one schema count
    // pages a little differently, and with one round (one degree of freedom) the rule's t-test
    // asks a gap of ~40 times that spread; with two, ~4 times.
    gate('indexed', [...MIGRATIONS, index]),
    // Not judged (EXPLAIN ANALYZE): as fast as the server goes.
    gate('fallback', MIGRATIONS, { url: inject('pgUrl'), rounds: 1, speed: 0 }),
    // One round: the rows a changed plan reads are counted once per side, without spread.
    gate('narrower', [...MIGRATIONS, narrowerIndex], { rounds: 1, workload: 'checkout.wkl' }),
  ]);
});

afterAll(async () => {
  await server?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function plan(run: Run, normalized: string): FingerprintPlan {
  const f = run.report.plans?.fingerprints.find((x) => x.normalized === normalized);
  if (!f) throw new Error(`${normalized} not in the plans report:\n${run.stderr}`);
  return f;
}

const pages = (w: WorkPerCall) => WORK_COUNTERS.pages(w)!;

describe('work per call from pg_stat_statements', () => {
  it('identical schemas: each side has work counters, their spread over the rounds and, on base, the noise replay; the gate passes', () => {
    expect(same.code, same.stderr).toBe(0);
    expect(same.report.plans?.stats).toMatchObject({ source: 'pg_stat_statements', work_note: null });
    const update = plan(same, LAST_LOGIN);
    for (const side of ['base', 'head'] as const) {
      const work = update[side].stats?.work;
      expect(work, side).toBeDefined();
      // A write: WAL in every call, and the pages of the row and its index lookup.
      expect(work!.per_call.wal_records!, side).toBeGreaterThan(0);
      expect(work!.per_call.wal_bytes!, side).toBeGreaterThan(0);
      expect(pages(work!.per_call), side).toBeGreaterThan(0);
      expect(work!.per_call.rows, side).toBe(1);
      expect(work!.rounds?.replays, side).toBe(2);
      for (const k of Object.keys(work!.per_call) as (keyof WorkPerCall)[]) {
        expect(work!.rounds!.min[k]!, `${side} ${k}`).toBeLessThanOrEqual(work!.per_call[k]! + 1e-9);
        expect(work!.rounds!.max[k]!, `${side} ${k}`).toBeGreaterThanOrEqual(work!.per_call[k]! - 1e-9);
      }
    }
    expect(update.base.stats!.work!.noise?.wal_bytes).toBeGreaterThan(0);
    expect(update.head.stats!.work!.noise).toBeNull();
    // Reads: pages and no WAL of their own.
    const reads = same.report.plans!.fingerprints.filter((f) => f.kind === 'select' && f.base.stats?.work);
    expect(reads.length).toBeGreaterThan(0);
    for (const f of reads) expect(pages(f.base.stats!.work!.per_call), f.normalized).toBeGreaterThan(0);
    expect(same.stdout).toContain('#### Work per call');
    expect(same.stdout).toMatch(/Counted by pg_stat_statements [\d.]+ in every replay of each side/);
  });

  it('identical schemas: the replays count different work now and then, and the work rule fails none', () => {
    // Sessions interleave a little differently in each replay, even at the captured pace: pruning,
    // hint bits and the pages a lookup meets differ. Over every fingerprint and counter, some differ.
    const differing = same.report.plans!.fingerprints.filter((f) =>
      (['base', 'head'] as const).some((side) => {
        const each = f[side].stats?.work?.rounds?.each ?? [];
        return Object.values(WORK_COUNTERS).some((value) => new Set(each.map((w) => value(w))).size > 1);
      }),
    );
    expect(differing.length).toBeGreaterThan(0);
    expect(same.report.thresholds.work_rule).toEqual({ growth: 0.1, min_share: 0.01 });
    const judged = same.report.plans!.fingerprints.filter((f) => f.work_regression !== undefined);
    expect(judged.length).toBeGreaterThan(0);
    expect(judged.filter((f) => f.work_regression !== null)).toEqual([]);
    expect(same.stdout).toMatch(/\(none failed the work rule: /);
  });

  it('an index on the column an UPDATE sets: the work rule fails the gate naming the UPDATE, its WAL and pages per call, the index and its line', () => {
    expect(indexed.code, indexed.stderr).toBe(1);
    expect(indexed.report.headline).toBe('regression: 1 query doing more work per call');
    expect(indexed.report.reasons).toEqual([
      expect.stringMatching(
        /^`UPDATE customers SET last_login = now\(\) WHERE id = \$1` \([0-9a-f]{16}\): more work per call: WAL \d+ B → \d+ B per call \(\+\d+ %\), [\d.]+ → [\d.]+ pages \(\+\d+ %\).*, every head replay above every base replay \([\d.]+ % of head's \w+\); index customers_last_login_idx added on public\.customers \([^)]*006_customers_last_login_idx\.sql, line 2\)$/,
      ),
    ]);
    expect(plan(indexed, LAST_LOGIN).work_regression?.counters.map((c) => c.counter)).toEqual(
      expect.arrayContaining(['wal_bytes', 'pages', 'wal_records']),
    );
    const update = plan(indexed, LAST_LOGIN);
    const base = update.base.stats!.work!.per_call;
    const head = update.head.stats!.work!.per_call;
    expect(head.wal_bytes!).toBeGreaterThan(base.wal_bytes!);
    expect(pages(head)).toBeGreaterThan(pages(base));
    const changes = update.work_changes ?? [];
    expect(changes.find((c) => c.counter === 'wal_bytes')).toMatchObject({ direction: 'more' });
    expect(changes.find((c) => c.counter === 'pages')).toMatchObject({ direction: 'more' });
    const row = indexed.stdout.split('\n').find((l) => l.startsWith('| `UPDATE customers SET last_login') && l.includes('WAL'));
    expect(row, indexed.stdout).toMatch(/\| ❌ more \| .*WAL \d+ B → \d+ B.* pages/);
  });

  it('names the index head added on the table the UPDATE writes, and the migration line that created it', () => {
    expect(plan(indexed, LAST_LOGIN).index_changes).toEqual([
      {
        relation: 'public.customers',
        index: 'customers_last_login_idx',
        change: 'added',
        definition: 'CREATE INDEX customers_last_login_idx ON public.customers USING btree (last_login)',
        migration: { file: expect.stringMatching(/006_customers_last_login_idx\.sql$/), line: 2 },
      },
    ]);
    // A read of the table writes nothing: no index change is its to explain.
    expect(plan(indexed, 'SELECT id, name, email FROM customers WHERE id = $1').index_changes).toEqual([]);
    expect(plan(same, LAST_LOGIN).index_changes).toEqual([]);
    expect(indexed.stdout).toMatch(
      /- `UPDATE customers SET last_login = now\(\) WHERE id = \$1`: index `customers_last_login_idx` added on public\.customers by `[^`]*006_customers_last_login_idx\.sql`, line 2 — an UPDATE that sets an indexed column is no longer heap-only/,
    );
  });
});

describe('rows a changed plan reads', () => {
  const LISTING = 'SELECT id, name, price FROM products WHERE category = $1 ORDER BY price LIMIT $2';

  it('an ORDER BY … LIMIT index replaced by one on the filter column: the same pages, every row of the category read; the work rule fails it', () => {
    expect(narrower.code, narrower.stderr).toBe(1);
    const f = plan(narrower, LISTING);
    expect(f.changed).toBe(true);
    // Read in price order and stopped at the LIMIT on base; the whole category (250 products) on head.
    expect(f.rows_read!.head).toBe(250);
    expect(f.rows_read!.base).toBeLessThan(100);
    expect(f.rows_read!.head_cost).toBeGreaterThan(f.rows_read!.base_cost);
    expect(f.work_regression?.rows_read).toEqual(f.rows_read);
    // What explains it: the index base's plan scanned, dropped, and the one head's scans, added, with their lines.
    expect(f.index_changes?.map((c) => [c.index, c.change, c.migration?.line])).toEqual([
      ['products_category_idx', 'added', 2],
      ['products_category_price_idx', 'dropped', 1],
    ]);
    expect(narrower.report.reasons).toContainEqual(
      expect.stringMatching(
        /^`SELECT id, name, price FROM products WHERE category = \$1 ORDER BY price LIMIT \$2` \([0-9a-f]{16}\): more work per call: .*\d+ → 250 rows read per call \(\+\d+ %\), plan cost [\d.]+ → [\d.]+ \(one EXPLAIN ANALYZE of the captured example on each template\).*; plan changed: /,
      ),
    );
    const row = narrower.stdout
      .split('\n')
      .find((l) => l.startsWith('| `SELECT id, name, price FROM products WHERE category') && l.includes('rows read'));
    expect(row, narrower.stdout).toMatch(/\| ❌ more \| .*→ 250 rows read per call/);
    // The Plan changes table counts the rows beside the estimated cost.
    expect(narrower.stdout).toMatch(/\| estimated cost \| rows read \(example\) \|/);
    expect(narrower.stdout).toMatch(/\| \d+ → 250 \|$/m);
  });

  it('unchanged plans are not counted again: identical schemas have none', () => {
    expect(same.report.plans!.fingerprints.filter((f) => f.rows_read !== undefined)).toEqual([]);
  });
});

describe('work per call without pg_stat_statements', () => {
  it('one EXPLAIN (ANALYZE, BUFFERS, WAL) per fingerprint and side, named as the weaker source', () => {
    expect(fallback.code, fallback.stderr).toBe(0);
    expect(fallback.report.plans?.stats).toMatchObject({ source: 'explain-analyze' });
    const work = plan(fallback, LAST_LOGIN).base.stats!.work!;
    // One execution of the captured example: its WAL and pages, no replays to spread over.
    expect(work.per_call.wal_bytes!).toBeGreaterThan(0);
    expect(pages(work.per_call)).toBeGreaterThan(0);
    expect(work.rounds).toBeNull();
    expect(work.noise).toBeNull();
    expect(fallback.stdout).toMatch(/Counted by one EXPLAIN \(ANALYZE, BUFFERS, WAL\) .*: a weaker source than pg_stat_statements/);
    // The work rule has no replays to measure a spread against: it judges nothing, and says so.
    expect(fallback.report.plans!.fingerprints.filter((f) => f.work_regression !== undefined)).toEqual([]);
    expect(fallback.report.warnings).toContainEqual(
      expect.stringMatching(
        /^the work rule judged no work of \d+ fingerprints counted by one EXPLAIN ANALYZE instead of pg_stat_statements/,
      ),
    );
  });
});
