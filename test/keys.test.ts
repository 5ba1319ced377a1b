// Generated keys end to end (docs/keys.md), on the sample shop's checkout.wkl: traffic captured
// through our own log capture, where every order's id comes from `INSERT … RETURNING id` and is
// then sent back as a literal. The CLI (dist/cli.js, bundled by the test run's global setup) runs
// against the shared test server.
//
// Nothing here depends on timing: correlation either carries the ids or the line inserts fail
// their foreign key (every one of them, on a database whose sequence stands far from capture
// time), and the stock-trigger variant adds 50 ms to a statement whose server time is ~0.05 ms.
// One thing would: an id used by another session (the back office ships orders the shop's
// sessions created) is only carried over if its creator has run first, and at captured speed the
// closest such pair is 127 ms apart; the replay that counts the links runs ten times slower.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { GateReport } from '../src/verdict/report-types.js';
import type { ReplayReport } from '../src/types.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { runCli } from './support/shop-gate.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
const workload = shop('checkout.wkl');
const TIMEOUT_MS = 240_000;

let tmp: string;
/** A database with the shop's schema and seed, copied for each replay. */
let template: string;
const created: string[] = [];

function dbUrl(name: string): string {
  const url = new URL(inject('pgUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(inject('pgUrl'));
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** A copy of the template; `sql` runs in it first. */
async function copyOfShop(sql?: string): Promise<string> {
  const name = `t_keys_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  created.push(name);
  if (sql) {
    const c = new pg.Client(dbUrl(name));
    await c.connect();
    await c.query(sql);
    await c.end();
  }
  return dbUrl(name);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const run = (args: string[]): Promise<Run> => runCli(args);

const explain = (r: Run): string => `exit ${r.code}\n--- stderr ---\n${r.stderr.slice(-3000)}\n--- stdout ---\n${r.stdout.slice(0, 3000)}`;

async function replay(url: string, ...flags: string[]): Promise<ReplayReport> {
  const json = path.join(tmp, `replay-${randomBytes(4).toString('hex')}.json`);
  const r = await run(['replay', '--database-url', url, '--allow-writes', '--workload', workload, '--json', json, ...flags]);
  expect(r.code, explain(r)).toBe(0);
  const out = JSON.parse(fs.readFileSync(json, 'utf8')) as { report?: ReplayReport } & ReplayReport;
  return out.report ?? out;
}

function errorsWith(r: ReplayReport, sqlstate: string): number {
  return r.fingerprints
    .flatMap((f) => f.errors)
    .filter((e) => e.sqlstate === sqlstate)
    .reduce((n, e) => n + e.count, 0);
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-keys-'));
  template = `t_keys_tpl_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${template}`));
  created.push(template);
  const c = new pg.Client(dbUrl(template));
  await c.connect();
  for (const file of fs.readdirSync(shop('migrations')).sort()) await c.query(fs.readFileSync(shop('migrations', file), 'utf8'));
  await c.query(fs.readFileSync(shop('seed.sql'), 'utf8'));
  await c.end();
}, TIMEOUT_MS);

afterAll(async () => {
  await admin(async (c) => {
    for (const name of created.reverse()) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('checkout.wkl: ids from RETURNING', () => {
  it('inspect says how many keys and links the workload has, and where its sequence stood', async () => {
    const r = await run(['inspect', workload]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(
      /keys\s+36 statements return generated keys, 36 with a known value \(inferred at capture, recorded in the workload\); \d+ later literals carry them/,
    );
    expect(r.stdout).toMatch(/sequences\s+orders\.id from 120001/);
  });

  it(
    "replayed where the sequence stands elsewhere: every statement runs with correlation; without it every order's lines fail",
    async () => {
      // The seed's sequence moved far from capture time, and left there: only correlation can
      // make the line inserts find their orders.
      const moved = "SELECT setval('orders_id_seq', 500000)";
      const without = await replay(await copyOfShop(moved), '--no-key-correlation', '--no-sequence-alignment');
      expect(errorsWith(without, '23503')).toBe(36);
      expect(without.totals.skipped_by_reason.transaction_aborted).toBeGreaterThan(100);

      // At a tenth of the captured speed: the closest pair of a creator and another session's
      // use of its id is then 1.27 s apart instead of 127 ms, so a session that lags on a
      // loaded runner still creates the id before it is used (a link left unresolved would
      // send the captured id, and the counts below would flip).
      const withKeys = await replay(await copyOfShop(moved), '--no-sequence-alignment', '--speed', '0.1');
      expect(withKeys.totals.executed).toBe(withKeys.totals.captured);
      expect(withKeys.totals.errors).toBe(0);
      const c = withKeys.correlation!;
      expect(c.unresolved).toBe(0);
      expect(c.substituted).toBe(c.links);
      expect(withKeys.sequences).toBeUndefined();

      // Both on (the default): the sequence is put back where capture had it, so the replay's
      // orders get the captured ids themselves.
      const aligned = await replay(await copyOfShop(moved));
      expect(aligned.totals.errors).toBe(0);
      expect(aligned.sequences).toEqual([
        { sequence: 'public.orders_id_seq', value: 120001, source: 'inferred', action: 'set', reason: null },
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    'a sequence is never set back under ids the seed holds',
    async () => {
      // A seed with more orders than production had at capture time (its sequence past them).
      const r = await replay(
        await copyOfShop(
          "INSERT INTO orders (id, customer_id) SELECT g, 1 FROM generate_series(120001, 120100) g; SELECT setval('orders_id_seq', 120100)",
        ),
      );
      expect(r.sequences![0]).toMatchObject({ action: 'kept', value: 120001 });
      expect(r.sequences![0]!.reason).toMatch(/up to 120100/);
      expect(r.totals.errors).toBe(0);
    },
    TIMEOUT_MS,
  );
});

describe('gate on checkout.wkl', () => {
  const gateArgs = (variant: string[]): string[] => [
    'gate',
    '--database-url',
    inject('pgUrl'),
    '--workload',
    workload,
    '--seed',
    shop('seed.sql'),
    '--base-migrations',
    shop('migrations', '*.sql'),
    '--migrations',
    shop('migrations', '*.sql'),
    ...variant,
  ];

  async function gate(args: string[]): Promise<{ r: Run; report: GateReport }> {
    const json = path.join(tmp, `gate-${randomBytes(4).toString('hex')}.json`);
    const r = await run([...args, '--json', json]);
    expect(fs.existsSync(json), explain(r)).toBe(true);
    return { r, report: JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport };
  }

  /** Every captured statement executed without an error on both sides: the ids met. */
  function expectEverythingRan(report: GateReport): void {
    for (const side of ['base', 'head'] as const) {
      const a = report.accounting![side];
      expect(a.executed, side).toBe(a.captured);
      expect(a.errors, side).toBe(0);
    }
    expect(report.coverage!.not_compared).toEqual([]);
  }

  it(
    'stock-trigger: the stock UPDATE that only runs after a RETURNING id is measured and named',
    async () => {
      const { r, report } = await gate(gateArgs([shop('variants', 'stock-trigger', '*.sql')]));
      expect(r.code, explain(r)).toBe(1);
      const regressed = report.comparison!.fingerprints.filter((f) => f.regressed);
      // Named, and first: a statement waiting on the slowed one's row locks may be slower too.
      expect(regressed[0]?.normalized).toBe('UPDATE products SET stock = stock - $1 WHERE id = $2');
      expect(r.stdout).toContain('UPDATE products SET stock = stock - $1 WHERE id = $2');
      expect(report.comparison!.new_errors).toEqual([]);
      expectEverythingRan(report);
    },
    TIMEOUT_MS,
  );

  it(
    'A/A: identical schemas pass, every captured statement executed on both sides',
    async () => {
      // What is under test is that the writes replay faithfully (no error, nothing skipped), not
      // the latency statistics (those have their calibration bench): that rule is out of reach,
      // and one round replays every statement on both sides as well as three would.
      const { r, report } = await gate([...gateArgs([]), '--rounds', '1', '--confirm-rounds', '0', ...LATENCY_RULE_OUT_OF_REACH]);
      expect(r.code, explain(r)).toBe(0);
      expect(report.verdict).toBe('pass');
      expect(report.comparison!.new_errors).toEqual([]);
      expectEverythingRan(report);
    },
    TIMEOUT_MS,
  );
});
