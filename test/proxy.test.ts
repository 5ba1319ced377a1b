// `proxy` end to end: the CLI in this process, node-postgres (a driver we did not write) through
// it — a named prepared statement, a RETURNING id used by later statements, a batch of queries
// sent without waiting, one error — then SIGINT, which writes the workload; the workload replays
// on a fresh copy of the schema with the ids carried. Bad input: a port in use (exit 2), a target
// nothing listens on (exit 3).
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../src/cli/main.js';
import type { ProxySummary, ReplayReport } from '../src/engine/index.js';
import { runCli as cli } from './support/cli.js';
import { eventually } from './support/eventually.js';
import { wklSessions } from './support/msgpack.js';
import { localMajors, startPostgres, type TestServer } from './support/postgres.js';

const SCHEMA = `CREATE TABLE orders (id bigserial PRIMARY KEY, customer text NOT NULL, placed_at timestamptz NOT NULL);
CREATE TABLE lines (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES orders (id), sku text NOT NULL, qty int NOT NULL CHECK (qty > 0))`;

describe.skipIf(localMajors().length === 0)('proxy', () => {
  let server: TestServer;
  let tmp: string;
  let admin: pg.Client;

  const dbUrl = (db: string, port = server.port) => {
    const url = new URL(server.url);
    url.port = String(port);
    url.pathname = `/${db}`;
    return url.toString();
  };

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-proxy-'));
    server = await startPostgres({});
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    for (const db of ['shop', 'fresh']) {
      await admin.query(`CREATE DATABASE ${db}`);
      const c = new pg.Client({ connectionString: dbUrl(db) });
      await c.connect();
      await c.query(SCHEMA);
      await c.end();
    }
  }, 120_000);

  afterAll(async () => {
    await admin?.end();
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('records node-postgres traffic until SIGINT, and the workload replays with its ids carried', async () => {
    const output = path.join(tmp, 'shop.wkl');
    let stderr = '';
    let stdout = '';
    const running = run(['proxy', '--listen', '127.0.0.1:0', '--target', dbUrl('shop'), '--output', output, '--json'], {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      env: { ...process.env, CI: 'true' },
    });
    await eventually(() => /listening on 127\.0\.0\.1:\d+/.test(stderr), 'the proxy listening', 30_000, 50);
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]);

    const client = new pg.Client({ connectionString: dbUrl('shop', port) });
    await client.connect();
    await client.query('BEGIN');
    const order = await client.query({
      name: 'new-order',
      text: 'INSERT INTO orders (customer, placed_at) VALUES ($1, $2) RETURNING id',
      values: ["O'Brien", new Date('2026-05-01T12:00:00Z')],
    });
    const orderId = String(order.rows[0].id);
    // Sent one after another without waiting: node-postgres queues them on the connection.
    await Promise.all(
      [1, 2, 3].map((n) =>
        client.query({
          name: 'add-line',
          text: 'INSERT INTO lines (order_id, sku, qty) VALUES ($1, $2, $3)',
          values: [orderId, `sku-${n}`, n],
        }),
      ),
    );
    await client.query('COMMIT');
    await expect(client.query('INSERT INTO lines (order_id, sku, qty) VALUES ($1, $2, $3)', [orderId, 'none', 0])).rejects.toThrow(
      /check constraint/,
    );
    const total = await client.query('SELECT sum(qty) AS n FROM lines WHERE order_id = $1', [orderId]);
    expect(total.rows[0].n).toBe('6');
    await client.end();

    // Sessions still open at the signal may end within the grace period: this one has.
    process.emit('SIGINT', 'SIGINT');
    const code = await running;
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('SIGINT received');
    const summary = JSON.parse(stdout) as ProxySummary;
    expect(summary.capture_method).toBe('proxy');
    expect(summary.statements).toBe(8);
    expect(summary.failed.map((f) => f.sqlstate)).toEqual(['23514']);
    expect(summary.not_replayable).toEqual({});

    const queries = wklSessions(fs.readFileSync(output)).flatMap((s) => s.queries);
    expect(queries.map((q) => q.sql)).toEqual([
      'BEGIN',
      `INSERT INTO orders (customer, placed_at) VALUES ('O''Brien', '${queries[1]!.sql.match(/'(2026-05-01[^']*)'/)?.[1]}') RETURNING id`,
      `INSERT INTO lines (order_id, sku, qty) VALUES ('${orderId}', 'sku-1', '1')`,
      `INSERT INTO lines (order_id, sku, qty) VALUES ('${orderId}', 'sku-2', '2')`,
      `INSERT INTO lines (order_id, sku, qty) VALUES ('${orderId}', 'sku-3', '3')`,
      'COMMIT',
      `INSERT INTO lines (order_id, sku, qty) VALUES ('${orderId}', 'none', '0')`,
      `SELECT sum(qty) AS n FROM lines WHERE order_id = '${orderId}'`,
    ]);
    expect(queries[1]!.response_values).toEqual([[['id', orderId]]]);

    // The fresh copy hands out other ids; the lines must follow the order's new one.
    const fresh = new pg.Client({ connectionString: dbUrl('fresh') });
    await fresh.connect();
    await fresh.query("SELECT setval('orders_id_seq', 9000)");
    const report = path.join(tmp, 'report.json');
    const r = await cli([
      'replay',
      '--workload',
      output,
      '--database-url',
      dbUrl('fresh'),
      '--allow-writes',
      '--no-sequence-alignment',
      '--json',
      report,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(fs.readFileSync(report, 'utf8')) as ReplayReport;
    expect(rep.totals.ok).toBe(7);
    expect(rep.totals.errors).toBe(1);
    const lines = await fresh.query('SELECT o.id, count(*) AS n FROM lines l JOIN orders o ON o.id = l.order_id GROUP BY o.id');
    await fresh.end();
    expect(lines.rows).toEqual([{ id: '9001', n: '3' }]);
  }, 120_000);

  it('a port in use is bad input (exit 2, naming it); a target nothing listens on is exit 3', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const output = path.join(tmp, 'bad.wkl');
    const inUse = await cli(['proxy', '--listen', `127.0.0.1:${port}`, '--target', dbUrl('shop'), '--output', output]);
    expect(inUse.code).toBe(2);
    expect(inUse.stderr).toMatch(new RegExp(`^error: cannot listen on 127\\.0\\.0\\.1:${port}: .*; choose another --listen port`, 'm'));

    await new Promise<void>((resolve) => taken.close(() => resolve()));
    const nowhere = await cli(['proxy', '--listen', '127.0.0.1:0', '--target', dbUrl('shop', port), '--output', output]);
    expect(nowhere.code).toBe(3);
    expect(nowhere.stderr).toMatch(/^error: cannot reach the target 127\.0\.0\.1:\d+: /m);
    expect(nowhere.stderr.trim().split('\n')).toHaveLength(1);
    expect(fs.existsSync(output)).toBe(false);

    // A URL PostgreSQL's clients would read differently is refused without being echoed.
    const ambiguous = await cli(['proxy', '--listen', '127.0.0.1:0', '--target', 'postgres://u:p@ss@127.0.0.1/db', '--output', output]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/--target/);
    expect(ambiguous.stderr).not.toContain('p@ss');
    const noKey = await cli(['proxy', '--listen', '127.0.0.1:0', '--target', dbUrl('shop'), '--output', output, '--tls-cert', output]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/--tls-key/);
  });
});
