// From a log of thousands of sessions to a CI workload, end to end: a real PostgreSQL logs the
// sample shop's checkouts and payments from pgbench (a connection per transaction, so every
// transaction is a session of its own), `capture --budget` captures and condenses the log, and
// the gate on the condensed workload catches a PR that slows a hot statement, within its time
// budget. Checked on the way: every hot fingerprint keeps enough calls to be gated,
// transactions stay whole, and payments keep the checkouts that created the orders they pay.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { GateReport } from '../src/verdict/report-types.js';
import type { CaptureSummary, CondenseSummary } from '../src/types.js';
import { runCli as cli } from './support/cli.js';
import { eventually, logged } from './support/eventually.js';
import { wklSessions } from './support/msgpack.js';
import { splitSql } from '../src/provision/sql-script.js';
import { localMajors, startPostgres, type TestServer } from './support/postgres.js';
import { shop } from './support/shop-gate.js';

const major = localMajors().find((m) => m >= 15);

/** A checkout: the order's id comes back from RETURNING and goes into its line and total. */
const CHECKOUT = `\\set customer random(1, 12000)
\\set product random(1, 2000)
\\set qty random(1, 3)
BEGIN;
INSERT INTO orders (customer_id, status, total) VALUES (:customer, 'pending', 0) RETURNING id AS order_id \\gset
INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES (:order_id, :product, :qty, 9.99);
UPDATE products SET stock = stock - :qty WHERE id = :product;
UPDATE orders SET total = :qty * 9.99 WHERE id = :order_id;
COMMIT;
`;

/**
 * A payment, in another session: the oldest order still pending among those created (by some
 * checkout) at least 2.5 s earlier on the server's clock, so that every payment comes more than
 * 2.5 s after the checkout that created its order, longer than the 1.5 s the workload is
 * condensed to, whatever the relative speed of the two pgbench processes. When no order is old
 * enough, the SELECT gives 0 and the payment ends there (a session of one SELECT).
 */
const PAYMENT = `SELECT coalesce((SELECT id FROM orders WHERE status = 'pending' AND id > 120000 AND created_at < now() - interval '2.5 s' ORDER BY id LIMIT 1), 0) AS pay_id \\gset
\\if :pay_id > 0
UPDATE orders SET status = 'paid' WHERE id = :pay_id;
\\endif
`;

/** Orders old enough to be paid: the payments start when this many exist. */
const PAYABLE = 100;

/** The statement the PR slows down, as the gate names it (pgbench sends the semicolon). */
const STOCK_UPDATE = 'UPDATE products SET stock = stock - $1 WHERE id = $2;';

const title =
  major === undefined
    ? "condense (skipped: needs the machine's own PostgreSQL 15+ with pgbench and psql)"
    : `condense a PostgreSQL ${major} log of thousands of sessions`;

describe.skipIf(major === undefined)(title, () => {
  let server: TestServer;
  let tmp: string;
  let log: string;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-condense-'));
    server = await startPostgres({
      major,
      settings: {
        logging_collector: 'on',
        log_destination: 'csvlog',
        log_filename: 'pg.log',
        log_rotation_age: '0',
        log_rotation_size: '0',
        log_min_duration_statement: '0',
        lc_messages: 'C',
        log_file_mode: '0644',
        max_connections: '40',
      },
    });
    const admin = new pg.Client(server.url);
    await admin.connect();
    await admin.query('CREATE DATABASE shop');
    await admin.end();
    const url = new URL(server.url);
    url.pathname = '/shop';
    const tool = (name: string) => path.join(server.bindir, name);
    // The shop's schema, and of its seed what the traffic refers to: customers and products;
    // orders are numbered after the seed's 120,000, as the gate's seeded databases number them.
    const split = splitSql(fs.readFileSync(shop('seed.sql'), 'utf8'));
    if (!split.ok) throw new Error(`seed.sql line ${split.line}: ${split.problem}`);
    const seed = split.statements.map((s) => s.text).filter((t) => /^\s*(--.*\n\s*)*INSERT INTO (customers|products) /.test(t));
    const files = fs
      .readdirSync(shop('migrations'))
      .sort()
      .map((f) => shop('migrations', f));
    fs.writeFileSync(path.join(tmp, 'seed.sql'), `${seed.join(';\n')};\nSELECT setval('orders_id_seq', 120000);\n`);
    for (const f of [...files, path.join(tmp, 'seed.sql')]) {
      const r = spawnSync(tool('psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url.toString(), '-f', f], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`psql -f ${f}: ${r.stderr}`);
    }
    fs.writeFileSync(path.join(tmp, 'checkout.sql'), CHECKOUT);
    fs.writeFileSync(path.join(tmp, 'payment.sql'), PAYMENT);
    // A fixed --random-seed: the same customers, products and quantities every run.
    const pgbench = (script: string, clients: number, transactions: number, seed: number) =>
      new Promise<void>((resolve, reject) => {
        const args = [
          '-n',
          '-C',
          '-M',
          'extended',
          `--random-seed=${seed}`,
          '-c',
          String(clients),
          '-j',
          String(clients),
          '-t',
          String(transactions),
          '-f',
          script,
          url.toString(),
        ];
        const p = spawn(tool('pgbench'), args, { cwd: tmp });
        let err = '';
        p.stderr.on('data', (d: Buffer) => (err += d.toString()));
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pgbench ${script}: ${err}`))));
      });
    const db = new pg.Client(url.toString());
    await db.connect();
    try {
      // Checkouts in rounds of 200 (8 clients × 25), at least 6 of them, and on until the payments
      // are done: the two kinds of traffic overlap however fast either goes.
      let paymentsDone = false;
      let checkoutsDone = false;
      const checkouts = async () => {
        try {
          for (let round = 0; round < 6 || !paymentsDone; round++) await pgbench('checkout.sql', 8, 25, 1_000 + round);
        } finally {
          checkoutsDone = true;
        }
      };
      // Payments start once PAYABLE orders are 2.5 s old on the server's clock (counted, not slept).
      const payments = async () => {
        try {
          await eventually(
            async () => {
              if (checkoutsDone) throw new Error('the checkouts stopped');
              const { rows } = await db.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM orders WHERE id > 120000 AND created_at < now() - interval '2.5 s'",
              );
              return rows[0]!.n >= PAYABLE;
            },
            `${PAYABLE} orders created 2.5 s ago`,
            120_000,
            100,
          );
          await pgbench('payment.sql', 4, 200, 2_000);
        } finally {
          paymentsDone = true;
        }
      };
      await Promise.all([checkouts(), payments()]);
      log = path.join(server.dataDir, 'log', 'pg.csv');
      await logged(db, [log]);
    } finally {
      await db.end();
    }
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('--shards N condenses to N budgets: each of the N runners replays about one', async () => {
    const sharded = path.join(tmp, 'sharded.wkl');
    const r = await cli([
      'capture',
      '--log',
      log,
      '--output',
      sharded,
      '--application-name',
      'pgbench',
      '--budget',
      '0.5s',
      '--shards',
      '3',
      '--json',
    ]);
    expect(r.stderr).not.toMatch(/error:/);
    const { condense } = JSON.parse(r.stdout) as { condense: CondenseSummary };
    expect(condense.budget.duration_us).toBe(1_500_000);
    const refused = await cli(['capture', '--log', log, '--output', sharded, '--shards', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--shards.*only goes with --budget/);
  });

  it('keeps every hot fingerprint gated, transactions whole and the creators of the ids used; the gate catches a slowed hot statement within its time budget', async () => {
    const ci = path.join(tmp, 'ci.wkl');
    const r = await cli(['capture', '--log', log, '--output', ci, '--application-name', 'pgbench', '--budget', '1.5s', '--json']);
    expect(r.stderr).not.toMatch(/error:/);
    expect(r.code).toBe(0);
    const { capture, condense } = JSON.parse(r.stdout) as { capture: CaptureSummary; condense: CondenseSummary };
    // pgbench -C: a session per transaction.
    expect(capture.sessions).toBeGreaterThanOrEqual(2_000);
    expect(capture.workload).toBe(path.join(tmp, 'ci.full.wkl'));
    expect(condense.fits, JSON.stringify({ warnings: condense.warnings, windows: condense.windows, pulled_in: condense.pulled_in })).toBe(
      true,
    );
    expect(condense.comparison.condensed.duration_us).toBeLessThanOrEqual(1_500_000);
    expect(condense.comparison.condensed.statements).toBeLessThan(capture.statements);
    const hot = condense.comparison.fingerprints.filter((f) => f.hot);
    expect(hot.map((f) => f.normalized)).toContain(STOCK_UPDATE);
    expect(hot.filter((f) => !f.gated)).toEqual([]);
    expect(condense.pulled_in.transactions).toBeGreaterThan(0);

    const sessions = wklSessions(fs.readFileSync(ci));
    const created = new Map<string, number>();
    for (const s of sessions) {
      // Whole transactions: a checkout session keeps its transaction from BEGIN to COMMIT; a
      // payment's two statements are transactions of their own (a window may hold either).
      const kinds = s.queries.map((q) => q.kind).join(' ');
      expect(['Begin Insert Insert Update Update Commit', 'Select Update', 'Select', 'Update']).toContain(kinds);
      for (const q of s.queries) {
        // The order's id, recorded on its INSERT … RETURNING id AS order_id by capture.
        const id = q.response_values?.[0]?.find(([column]) => column === 'order_id')?.[1];
        if (id !== undefined) created.set(id, q.start_offset_us);
      }
    }
    const payments = sessions.flatMap((s) => s.queries).filter((q) => q.sql.startsWith("UPDATE orders SET status = 'paid'"));
    expect(payments.length).toBeGreaterThanOrEqual(20);
    for (const p of payments) {
      const id = /id = '(\d+)'/.exec(p.sql)![1]!;
      // The checkout that created the order is there, and replays before the payment.
      expect(created.get(id), `order ${id}`).toBeLessThan(p.start_offset_us);
    }

    const inspected = await cli(['inspect', ci, '--against', capture.workload]);
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toMatch(/hot fingerprints \(\d+: at least 1\.0% of calls or of server time\)/);
    expect(inspected.stdout).toMatch(/✓ [\d,]+ → [\d,]+ {2}UPDATE products SET stock = stock - \$1 WHERE id = \$2;/);
    expect(inspected.stdout).not.toMatch(/✗/);

    // A PR whose trigger sleeps 50 ms on every stock decrement, gated on the condensed workload.
    const migrations = shop('migrations', '*.sql');
    const report = path.join(tmp, 'report.json');
    const gate = await cli([
      'gate',
      '--database-url',
      inject('pgUrl'),
      '--workload',
      ci,
      '--base-migrations',
      migrations,
      '--migrations',
      migrations,
      shop('variants', 'stock-trigger', '*.sql'),
      '--seed',
      shop('seed.sql'),
      '--rounds',
      '2',
      '--confirm-rounds',
      '0',
      // Far more than the 5 replays of ≤ 1.5 s (+ 2 s each) and the schemas built before them
      // can take inside this test's own 240 s timeout: the plan cannot change with load.
      '--time-budget',
      '10m',
      '--json',
      report,
    ]);
    expect(gate.code, gate.stderr).toBe(1);
    const g = JSON.parse(fs.readFileSync(report, 'utf8')) as GateReport;
    const regressed = g.comparison!.fingerprints.filter((f) => f.regressed).map((f) => f.normalized);
    expect(regressed).toContain(STOCK_UPDATE);
    // Every payment found its order: nothing failed on base.
    expect(g.accounting!.base.errors).toBe(0);
    expect(g.accounting!.base.executed).toBe(g.accounting!.base.captured);
    expect(g.environment.time_budget).toMatchObject({ rounds: 2, confirm_rounds: 0, speed: 1 });
    expect(gate.stderr).toMatch(/time budget: 5 replays estimated at .* of the 10 min 00 s budget; everything asked for fits/);
  }, 240_000);
});
