// `capture` of traffic from drivers this project did not write: pgx (Go module proxy), pgjdbc
// (Maven Central), psycopg 3 (PyPI) and node-postgres each run the same app-like session
// (test/drivers/README.md: prepared statements, binary parameters where the driver sends them, a
// batch or pipeline, RETURNING ids used later, a transaction, a caught unique violation) as a
// user and database of their own, against a real PostgreSQL logging every statement to csvlog and
// stderr (Debian's log_line_prefix) at once. Each app's traffic is captured from both logs, which
// must give the same workload byte for byte, replayed on a fresh copy of the schema, and must run
// whole: every captured statement executed, the one expected error the only error, the RETURNING
// ids carried, and the replayed database holding exactly what the app wrote.
//
// The apps are built once by test/drivers/install.mjs (target/drivers/, skipped when up to date).
// A missing toolchain skips its driver, saying so in the test's title, except in CI (CI=true),
// where it fails.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureSummary } from '../src/types.js';
import { DRIVERS, type DriverName, installDriver, runDriver } from './drivers/install.mjs';
import { runCli as cli } from './support/cli.js';
import { extraStatements, replaysWhole, STATEMENTS, shopDatabase } from './support/driver-shop.js';
import { eventually, logged } from './support/eventually.js';
import { localMajors, startPostgres, type TestServer } from './support/postgres.js';

const major = localMajors().find((m) => m >= 15);
const inCi = Boolean(process.env.CI) && process.env.CI !== 'false';
const NAMES = Object.keys(DRIVERS) as DriverName[];
/** What is missing to build each app, null when its toolchain is here. */
const missing = Object.fromEntries(NAMES.map((d) => [d, DRIVERS[d].toolchain()])) as Record<DriverName, string | null>;

/** Producers: 25 sign-ups, 25 orders, the failed sign-up (no id). */
const PRODUCERS = 25 + 25 + 1;
/** Later literals carrying an id: each customer's in its order and its read (and 5 shipments), each order's in 3 items, the receipt and twice in the total. */
const LINKS = 25 * 2 + 5 + 25 * 6;
const extra = extraStatements;

/** Debian's log_line_prefix: milliseconds, pid, user and database (no session id). */
const PREFIX = '%m [%p] %q%u@%d ';

/** What two captures of the same traffic must agree on. */
const comparable = ({ sessions, statements, failed, keys, log_style, incomplete, first_statement_at }: CaptureSummary) => ({
  sessions,
  statements,
  failed,
  keys,
  log_style,
  incomplete,
  first_statement_at,
});

const title =
  major === undefined
    ? "capture of real drivers' traffic (skipped: needs the machine's own PostgreSQL 15+)"
    : `capture of real drivers' traffic from PostgreSQL ${major} logs`;

describe.skipIf(major === undefined)(title, () => {
  let server: TestServer;
  let tmp: string;
  let admin: pg.Client;
  let csvLog: string;
  let stderrLog: string;
  const installed = new Map<DriverName, Error | null>();
  const apps = new Map<DriverName, Awaited<ReturnType<typeof runDriver>>>();

  const dbUrl = (user: string, db: string) => {
    const url = new URL(server.url);
    url.username = user;
    url.pathname = `/${db}`;
    return url.toString();
  };

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-drivers-'));
    const toBuild = NAMES.filter((d) => missing[d] === null);
    // Built side by side: the downloads overlap, and a build already up to date costs nothing.
    const builds = await Promise.allSettled(toBuild.map((d) => installDriver(d)));
    for (const [i, d] of toBuild.entries()) {
      const b = builds[i]!;
      installed.set(d, b.status === 'fulfilled' ? null : (b.reason as Error));
    }

    server = await startPostgres({
      major,
      settings: {
        logging_collector: 'on',
        log_destination: 'stderr,csvlog',
        log_filename: 'postgresql.log',
        log_rotation_age: '0',
        log_rotation_size: '0',
        log_file_mode: '0644',
        log_min_duration_statement: '0',
        log_parameter_max_length: '-1',
        log_parameter_max_length_on_error: '-1',
        lc_messages: 'C',
        log_line_prefix: PREFIX,
        log_connections: 'on',
        log_disconnections: 'on',
      },
    });
    csvLog = path.join(server.dataDir, 'log', 'postgresql.csv');
    stderrLog = path.join(server.dataDir, 'log', 'postgresql.log');
    admin = new pg.Client(server.url);
    await admin.connect();
    const ready = NAMES.filter((d) => installed.get(d) === null);
    for (const d of ready) {
      await admin.query(`CREATE ROLE drv_${d} LOGIN`);
      for (const db of [`drv_${d}`, `drv_${d}_replay`]) await shopDatabase(admin, dbUrl(server.user, db), `drv_${d}`, db);
    }
    // The four apps at once, each in its own database as its own user.
    const runs = await Promise.all(ready.map((d) => runDriver(d, dbUrl(`drv_${d}`, `drv_${d}`))));
    for (const [i, d] of ready.entries()) apps.set(d, runs[i]!);
    await eventually(() => fs.existsSync(csvLog) && fs.existsSync(stderrLog), `${csvLog} and ${stderrLog} written`, 30_000, 50);
    await logged(admin, [csvLog, stderrLog]);
  }, 600_000);

  afterAll(async () => {
    await admin?.end().catch(() => {});
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  async function capture(d: DriverName, log: string, output: string, ...extraArgs: string[]): Promise<CaptureSummary> {
    const r = await cli(['capture', '--log', log, '--output', output, '--database', `drv_${d}`, '--json', ...extraArgs]);
    expect(r.stderr).not.toMatch(/error:/);
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as CaptureSummary;
  }

  for (const d of NAMES) {
    const label = DRIVERS[d].label;
    const skip = missing[d] !== null && !inCi;
    const name = skip
      ? `${label} (skipped: ${missing[d]})`
      : `${label}: captured from csvlog and from the stderr log alike, replayed whole, its RETURNING ids carried`;

    it.skipIf(skip)(name, async () => {
      if (missing[d] !== null) throw new Error(`${label}: ${missing[d]} (CI=true: a missing toolchain fails the suite)`);
      const built = installed.get(d);
      if (built) throw built;
      const app = apps.get(d)!;
      expect(app.code, `${label} app failed: ${app.stderr}`).toBe(0);
      expect(JSON.parse(app.stdout)).toMatchObject({ customers: 25, orders: 25, items: 75, duplicate: '23505' });

      const wkl = path.join(tmp, `${d}.wkl`);
      const s = await capture(d, csvLog, wkl);
      // One connection; node-postgres's pool adds three.
      expect(s.sessions).toBe(d === 'node' ? 4 : 1);
      expect(s.statements).toBe(STATEMENTS + extra(d));
      expect(s.failed).toEqual([expect.objectContaining({ sqlstate: '23505' })]);
      expect(s.warnings).toEqual([]);
      expect(s.incomplete).toBe(false);
      // Every id a RETURNING gave back is known (the failed sign-up returned none) and carried.
      expect(s.keys).toMatchObject({ source: 'inferred', producers: PRODUCERS, producers_with_values: PRODUCERS - 1 });
      expect(s.keys!.links).toBe(LINKS + extra(d));
      const sidecar = JSON.parse(fs.readFileSync(`${wkl}.capture.json`, 'utf8')) as CaptureSummary;
      expect(sidecar.keys).toEqual(s.keys);

      // The same server's stderr log (Debian's prefix, connection lines, no session id), with
      // the prefix given and recognised without it: the very same workload, byte for byte.
      const fromStderr = path.join(tmp, `${d}-stderr.wkl`);
      for (const prefixArgs of [['--log-line-prefix', PREFIX], []]) {
        const e = await capture(d, stderrLog, fromStderr, ...prefixArgs);
        expect(e.inputs[0]!.format).toBe('stderr');
        expect(e.warnings).toEqual([]);
        // The prefix has no %e, and at the default log_error_verbosity the line no SQLSTATE:
        // the failure is the same statement, its code unknown.
        expect(e.failed).toEqual(s.failed.map((f) => ({ ...f, sqlstate: '' })));
        expect(comparable({ ...e, failed: s.failed })).toEqual(comparable(s));
        expect(fs.readFileSync(fromStderr).equals(fs.readFileSync(wkl)), `${label}: stderr ${prefixArgs.join(' ')} and csvlog differ`).toBe(
          true,
        );
      }

      // The stderr capture is replayed (the same bytes as the csvlog's, with a sidecar of its own).
      const { report: rep, coverage } = await replaysWhole(
        fromStderr,
        dbUrl(`drv_${d}`, `drv_${d}_replay`),
        dbUrl(`drv_${d}`, `drv_${d}`),
        s.statements,
        path.join(tmp, d),
      );
      console.log(
        `${label}: ${s.statements} statements captured, ${rep.totals.executed} executed (${(coverage * 100).toFixed(1)} %), ` +
          `1 expected error; keys: ${s.keys!.producers_with_values}/${s.keys!.producers} producers with their id, ${s.keys!.links} links, ` +
          `${rep.correlation?.substituted ?? 0} substituted at replay`,
      );
    });
  }
});
