// `capture` from stderr logs: one real PostgreSQL logs the same traffic to csvlog and to stderr at
// once, under each platform's log_line_prefix in turn (upstream/Docker, Debian, RDS, Cloud SQL,
// Azure); the workload captured from the stderr file must be the csvlog's: same sessions,
// statements (hence fingerprints), parameters, failures and keys. Only timing may differ, and only
// for the prefixes with seconds (%t). Cloud SQL's log is also captured wrapped in Cloud Logging
// JSON, as `gcloud logging read` prints it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureSummary } from '../src/types.js';
import { runCli as cli } from './support/cli.js';
import { logged } from './support/eventually.js';
import { rotateLogs } from './support/log-rotation.js';
import { wklSessions } from './support/msgpack.js';
import { localMajors, startPostgres, type TestServer } from './support/postgres.js';

const major = localMajors().find((m) => m >= 15);

/** One statement per line (log_min_duration_statement = 0, the server's setting here) … */
const ONE_LINE = {};
/** … or a line when it starts and a bare duration line when it ends: the extended protocol's parse
 * and bind steps then log bare durations too, which no prefix here tells apart by a command tag (%i). */
const SEPARATE_LINES = { log_min_duration_statement: '-1', log_statement: 'all', log_duration: 'on' };

const PHASES = [
  { platform: 'upstream/Docker', prefix: '%m [%p] ', exact: true, settings: ONE_LINE },
  { platform: 'Debian', prefix: '%m [%p] %q%u@%d ', exact: true, settings: ONE_LINE },
  { platform: 'RDS', prefix: '%t:%r:%u@%d:[%p]:', exact: false, settings: ONE_LINE },
  { platform: 'Cloud SQL', prefix: '%m [%p]: [%l-1] db=%d,user=%u ', exact: true, settings: ONE_LINE },
  { platform: 'Azure', prefix: '%t-%c-', exact: false, settings: ONE_LINE },
  // Last: it changes the settings for good.
  { platform: 'upstream/Docker, start and duration lines', prefix: '%m [%p] ', exact: true, settings: SEPARATE_LINES },
] as const;

/** Through psql: simple protocol, a statement over several lines, one that fails. */
const PSQL_SCRIPT = `SELECT 'first session' AS s;
SELECT count(*)
  FROM items
 WHERE note IS NOT NULL
   AND name <> 'it''s -- not a comment';
SELECT 1/0;
`;

/** pgbench prepared: named statements with bind parameters. */
const PREPARED_SCRIPT = `\\set n 42
SELECT :n::int + 1 AS next, :txt::text AS t;
`;

const title =
  major === undefined
    ? "capture from stderr logs (skipped: needs the machine's own PostgreSQL 15+ with pgbench and psql)"
    : `capture from PostgreSQL ${major} stderr logs, each platform's log_line_prefix`;

type Files = { csv: string; stderr: string };

describe.skipIf(major === undefined)(title, () => {
  let server: TestServer;
  let tmp: string;
  let logDir: string;
  let admin: pg.Client;
  const phases = new Map<string, Files>();

  const appUrl = () => {
    const url = new URL(server.url);
    url.pathname = '/app';
    return url.toString();
  };

  const tool = (name: string, args: string[]) => {
    const r = spawnSync(path.join(server.bindir, name), args, { encoding: 'utf8', cwd: tmp });
    if (r.status !== 0 && name !== 'psql') throw new Error(`${name} ${args.join(' ')} failed: ${r.stderr}`);
    return r;
  };

  /** Sets the prefix (and logging settings) and starts new log files; returns them. */
  const phase = (prefix: string, settings: Record<string, string>): Promise<Files> =>
    rotateLogs(admin, logDir, { ...settings, log_line_prefix: prefix }, { csv: '.csv', stderr: '.log' });

  /** The same traffic every time. */
  async function drive(): Promise<void> {
    const url = appUrl();
    tool('psql', ['-X', '-q', '-d', url, '-f', 'psql.sql']);
    tool('pgbench', ['-n', '-M', 'prepared', '-t', '2', '-D', 'txt=widget', '-f', 'prepared.sql', url]);
    const client = new pg.Client(url);
    await client.connect();
    try {
      // Extended protocol with parameters; the id RETURNING gives is used later.
      const { rows } = await client.query('INSERT INTO items (name, price, note) VALUES ($1, $2, $3) RETURNING id', [
        "o'brien",
        12.5,
        'multi\nline',
      ]);
      const id = rows[0].id as number;
      await client.query('UPDATE items SET price = price + $1 WHERE id = $2', [1, id]);
      await client.query('SELECT name, price FROM items WHERE id = $1', [id]);
      await client.query('SELECT $1::int / $2::int AS q', [1, 0]).catch(() => {});
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-capture-stderr-'));
    fs.writeFileSync(path.join(tmp, 'psql.sql'), PSQL_SCRIPT);
    fs.writeFileSync(path.join(tmp, 'prepared.sql'), PREPARED_SCRIPT);
    server = await startPostgres({
      major,
      settings: {
        logging_collector: 'on',
        log_destination: 'stderr,csvlog',
        log_filename: 'pg-%H%M%S.log',
        log_rotation_age: '0',
        log_rotation_size: '0',
        log_timezone: 'UTC',
        lc_messages: 'C',
        log_file_mode: '0644',
        log_min_duration_statement: '0',
        log_connections: 'on',
        log_disconnections: 'on',
        log_parameter_max_length_on_error: '-1',
      },
    });
    logDir = path.join(server.dataDir, 'log');
    admin = new pg.Client(server.url);
    await admin.connect();
    await admin.query('CREATE DATABASE app');
    const app = new pg.Client(appUrl());
    await app.connect();
    await app.query('CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, price numeric, note text)');
    await app.end();
    for (const [i, { platform, prefix, settings }] of PHASES.entries()) {
      const files = await phase(prefix, settings);
      await drive();
      await logged(admin, [files.csv, files.stderr]);
      // Copies as they are now: the next phase's first lines (its ALTER SYSTEM, the reload)
      // would go to these files, partly under the next prefix.
      const copies = { csv: path.join(tmp, `phase-${i}.csv`), stderr: path.join(tmp, `phase-${i}.log`) };
      fs.copyFileSync(files.csv, copies.csv);
      fs.copyFileSync(files.stderr, copies.stderr);
      phases.set(platform, copies);
    }
  }, 180_000);

  afterAll(async () => {
    await admin?.end().catch(() => {});
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  async function capture(log: string, output: string, ...extra: string[]): Promise<CaptureSummary> {
    const r = await cli(['capture', '--log', log, '--output', output, '--json', '--database', 'app', ...extra]);
    expect(r.stderr).not.toMatch(/error:/);
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as CaptureSummary;
  }

  /** A session as the comparison sees it: who, and each statement's text and keys. */
  const shape = (bytes: Buffer, timing: boolean) =>
    wklSessions(bytes)
      .map((s) => ({
        user: s.user,
        database: s.database,
        queries: s.queries.map((q) => ({
          sql: q.sql,
          kind: q.kind,
          transaction_id: q.transaction_id,
          response_values: q.response_values,
          ...(timing ? { start_offset_us: q.start_offset_us, duration_us: q.duration_us } : { duration_us: q.duration_us }),
        })),
      }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

  for (const { platform, prefix, exact } of PHASES) {
    it(`${platform} '${prefix}': the stderr log gives the csvlog's workload`, async () => {
      const files = phases.get(platform)!;
      const fromCsv = path.join(tmp, `csv-${platform.replace(/\W/g, '')}.wkl`);
      const fromStderr = path.join(tmp, `stderr-${platform.replace(/\W/g, '')}.wkl`);
      const c = await capture(files.csv, fromCsv);
      // Recognised without --log-line-prefix.
      const s = await capture(files.stderr, fromStderr);
      expect(s.inputs[0]).toMatchObject({ format: 'stderr', log_line_prefix: prefix });
      expect(s.sessions).toBe(c.sessions);
      expect(s.statements).toBe(c.statements);
      expect(c.statements).toBe(9);
      expect(s.keys).toEqual(c.keys);
      // Left out by the filters or as unreplayable: the same, but for the other databases (the
      // admin's pg_rotate_logfile() can be written to the old stderr file and the new csvlog one).
      const { database: _d1, ...leftOut } = s.excluded;
      const { database: _d2, ...csvLeftOut } = c.excluded;
      expect(leftOut).toEqual(csvLeftOut);
      // The failures, by place and message (stderr has no SQLSTATE without %e in the prefix). With
      // %t, sessions starting within one second may be numbered in another order.
      const failed = (x: CaptureSummary) =>
        x.failed.map((f) => JSON.stringify(exact ? [f.session_id, f.statement_index, f.message] : [f.statement_index, f.message])).sort();
      expect(failed(s)).toEqual(failed(c));
      expect(c.failed).toHaveLength(2);
      const csvBytes = fs.readFileSync(fromCsv);
      const stderrBytes = fs.readFileSync(fromStderr);
      expect(shape(stderrBytes, exact)).toEqual(shape(csvBytes, exact));
      if (exact) {
        // Same times to the millisecond: the same file, byte for byte.
        expect(stderrBytes.equals(csvBytes)).toBe(true);
        expect(s.warnings, JSON.stringify(s.warnings)).toEqual(c.warnings);
      } else {
        expect(s.warnings.some((w) => w.includes('%t'))).toBe(true);
      }
      const sqls = wklSessions(stderrBytes).flatMap((x) => x.queries.map((q) => q.sql));
      expect(sqls).toContain("SELECT count(*)\n  FROM items\n WHERE note IS NOT NULL\n   AND name <> 'it''s -- not a comment';");
      expect(sqls).toContain("INSERT INTO items (name, price, note) VALUES ('o''brien', '12.5', 'multi\nline') RETURNING id");
      expect(sqls).toContain("SELECT '42'::int + 1 AS next, 'widget'::text AS t;");

      // The prefix given verbatim reads the same.
      const given = path.join(tmp, `given-${platform.replace(/\W/g, '')}.wkl`);
      await capture(files.stderr, given, '--log-line-prefix', prefix);
      expect(fs.readFileSync(given).equals(stderrBytes)).toBe(true);
    });
  }

  it('Cloud SQL inside Cloud Logging JSON (newest first, as gcloud logging read prints it) gives the same workload', async () => {
    const files = phases.get('Cloud SQL')!;
    // One entry per line, as Cloud SQL sends them; a continuation line has its message's time.
    let time = '';
    const entries = fs
      .readFileSync(files.stderr, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line, i) => {
        const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3}) UTC /.exec(line);
        if (m) time = `${m[1]}T${m[2]}Z`;
        return {
          insertId: `e${i}`,
          logName: 'projects/shop/logs/cloudsql.googleapis.com%2Fpostgres.log',
          resource: { type: 'cloudsql_database', labels: { database_id: 'shop:db' } },
          severity: 'INFO',
          textPayload: line,
          timestamp: time,
        };
      })
      .reverse();
    const json = path.join(tmp, 'cloudsql-gcloud.json');
    fs.writeFileSync(json, JSON.stringify(entries, null, 2));
    const plain = path.join(tmp, 'cloudsql-plain.wkl');
    const wrapped = path.join(tmp, 'cloudsql-wrapped.wkl');
    await capture(files.stderr, plain);
    const s = await capture(json, wrapped);
    expect(s.inputs[0]).toMatchObject({ format: 'stderr', wrapper: 'cloud_logging', log_line_prefix: '%m [%p]: [%l-1] db=%d,user=%u ' });
    expect(fs.readFileSync(wrapped).equals(fs.readFileSync(plain))).toBe(true);
  });

  it('refuses a prefix that does not match, naming the line, and a log in another language', async () => {
    const files = phases.get('upstream/Docker')!;
    let r = await cli(['capture', '--log', files.stderr, '--output', path.join(tmp, 'x.wkl'), '--log-line-prefix', '%t-%c-']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line 1 does not match log_line_prefix '%t-%c-'/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const german = path.join(tmp, 'german.log');
    fs.writeFileSync(german, '2026-11-22 16:15:33.000 UTC [1] FEHLER:  Division durch Null\n');
    r = await cli(['capture', '--log', german, '--output', path.join(tmp, 'x.wkl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/lc_messages = 'C'/);
    const unknown = path.join(tmp, 'unknown.log');
    fs.writeFileSync(unknown, '[1] 16:15:33 LOG:  statement: select 1\n');
    r = await cli(['capture', '--log', unknown, '--output', path.join(tmp, 'x.wkl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--log-line-prefix/);
    expect(r.stderr).not.toMatch(/columns/);
  });
});
