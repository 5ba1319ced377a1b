// `proxy` with traffic from drivers this project did not write: pgx, pgjdbc, psycopg 3 and
// node-postgres each run the app-like session of test/drivers/README.md (prepared statements,
// binary timestamp/numeric/uuid/jsonb/array/bytea parameters, a batch or pipeline, RETURNING ids
// used later, a caught unique violation) through the proxy, as a user and database of their own.
// Each capture must hold every statement, its RETURNING rows as response_values, and replay whole
// on a fresh copy of the schema, writing exactly the rows the app wrote.
//
// The apps are built by test/drivers/install.mjs (skipped when up to date). A missing toolchain
// skips its driver, saying so in the test's title, except in CI (CI=true), where it fails.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../src/cli/main.js';
import type { ProxySummary } from '../src/engine/index.js';
import { DRIVERS, type DriverName, installDriver, runDriver } from './drivers/install.mjs';
import { extraStatements, replaysWhole, STATEMENTS, shopDatabase } from './support/driver-shop.js';
import { eventually } from './support/eventually.js';
import { wklSessions } from './support/msgpack.js';
import { localMajors, startPostgres, type TestServer } from './support/postgres.js';

const major = localMajors().find((m) => m >= 15);
const inCi = Boolean(process.env.CI) && process.env.CI !== 'false';
const NAMES = Object.keys(DRIVERS) as DriverName[];
const missing = Object.fromEntries(NAMES.map((d) => [d, DRIVERS[d].toolchain()])) as Record<DriverName, string | null>;

/** RETURNING producers that returned a row: 25 sign-ups and 25 orders (the failed sign-up none). */
const PRODUCERS_WITH_ROWS = 25 + 25;

const title =
  major === undefined
    ? "proxy capture of real drivers' traffic (skipped: needs the machine's own PostgreSQL 15+)"
    : `proxy capture of real drivers' traffic (PostgreSQL ${major})`;

describe.skipIf(major === undefined)(title, () => {
  let server: TestServer;
  let tmp: string;
  let admin: pg.Client;
  const installed = new Map<DriverName, Error | null>();

  const dbUrl = (user: string, db: string, port = server.port) => {
    const url = new URL(server.url);
    url.username = user;
    url.port = String(port);
    url.pathname = `/${db}`;
    return url.toString();
  };

  /** Runs the driver's app through a proxy started by the CLI, stopped with SIGINT. */
  async function throughProxy(d: DriverName, output: string) {
    let stdout = '';
    let stderr = '';
    const running = run(['proxy', '--listen', '127.0.0.1:0', '--target', dbUrl(`drv_${d}`, `drv_${d}`), '--output', output, '--json'], {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      env: { ...process.env, CI: 'true' },
    });
    await eventually(() => /listening on 127\.0\.0\.1:\d+/.test(stderr), 'the proxy listening', 30_000, 50);
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]);
    const app = await runDriver(d, dbUrl(`drv_${d}`, `drv_${d}`, port));
    // The app has ended its connections; the stop waits for the proxy's side of them.
    process.emit('SIGINT', 'SIGINT');
    const code = await running;
    return { app, code, stderr, summary: code === 0 ? (JSON.parse(stdout) as ProxySummary) : undefined };
  }

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-proxy-drivers-'));
    const toBuild = NAMES.filter((d) => missing[d] === null);
    const builds = await Promise.allSettled(toBuild.map((d) => installDriver(d)));
    for (const [i, d] of toBuild.entries()) {
      const b = builds[i]!;
      installed.set(d, b.status === 'fulfilled' ? null : (b.reason as Error));
    }
    server = await startPostgres({ major });
    admin = new pg.Client(server.url);
    await admin.connect();
    for (const d of NAMES.filter((n) => installed.get(n) === null)) {
      await admin.query(`CREATE ROLE drv_${d} LOGIN`);
      for (const db of [`drv_${d}`, `drv_${d}_replay`]) await shopDatabase(admin, dbUrl(server.user, db), `drv_${d}`, db);
    }
  }, 600_000);

  afterAll(async () => {
    await admin?.end().catch(() => {});
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  for (const d of NAMES) {
    const label = DRIVERS[d].label;
    const skip = missing[d] !== null && !inCi;
    const name = skip
      ? `${label} (skipped: ${missing[d]})`
      : `${label}: every statement recorded through the proxy, its RETURNING rows as response_values, replayed whole`;

    it.skipIf(skip)(
      name,
      async () => {
        if (missing[d] !== null) throw new Error(`${label}: ${missing[d]} (CI=true: a missing toolchain fails the suite)`);
        const built = installed.get(d);
        if (built) throw built;
        const wkl = path.join(tmp, `${d}.wkl`);
        const { app, code, stderr, summary } = await throughProxy(d, wkl);
        expect(app.code, `${label} app failed: ${app.stderr}`).toBe(0);
        expect(JSON.parse(app.stdout)).toMatchObject({ customers: 25, orders: 25, items: 75, duplicate: '23505' });
        expect(code, stderr).toBe(0);
        const s = summary!;
        expect(s.sessions).toBe(d === 'node' ? 4 : 1);
        expect(s.statements).toBe(STATEMENTS + extraStatements(d));
        expect(s.failed).toEqual([expect.objectContaining({ sqlstate: '23505' })]);
        expect(s.not_replayable).toEqual({});
        expect(s.warnings).toEqual([]);
        expect(s.incomplete).toBe(false);
        expect(s.statements_with_returned_rows).toBe(PRODUCERS_WITH_ROWS);
        const queries = wklSessions(fs.readFileSync(wkl)).flatMap((x) => x.queries);
        expect(queries.filter((q) => q.sql.includes('$1'))).toEqual([]);
        expect(queries.filter((q) => q.response_values !== null).every((q) => /RETURNING/i.test(q.sql))).toBe(true);

        const { report: rep, coverage } = await replaysWhole(
          wkl,
          dbUrl(`drv_${d}`, `drv_${d}_replay`),
          dbUrl(`drv_${d}`, `drv_${d}`),
          s.statements,
          path.join(tmp, d),
        );
        expect(rep.correlation?.source).toBe('response_values');
        console.log(
          `${label} through the proxy: ${s.statements} statements, ${rep.totals.executed} executed (${(coverage * 100).toFixed(1)} %), ` +
            `${s.statements_with_returned_rows} with their RETURNING rows, ${rep.correlation?.substituted ?? 0} ids substituted at replay`,
        );
      },
      120_000,
    );
  }
});
