// The CLI as users run it: the bundled dist/cli.js in a child process, against the shared test
// server (inject('pgUrl')) or a server it starts itself. Each test that writes gets a database
// of its own. The bundle is rebuilt once before the tests (npm run build:cli, about a second),
// so the tests never run a stale dist/cli.js; the native engine must be built
// (npm run build:native, which npm test does).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { capacityCommand } from '../src/capacity/options.js';
import { commandHelp, type CommandSpec, parseOptions, tokenize } from '../src/options/argv.js';
import { replayCommand } from '../src/cli/replay-options.js';
import { gateCommand } from '../src/gate/options.js';
import { replayOutcome } from '../src/engine/replay-outcome.js';
import { ExitCode } from '../src/exit-codes.js';
import { splitSql } from '../src/provision/sql-script.js';
import { maskUrl } from '../src/provision/url.js';
import type { ReplayReport } from '../src/types.js';
import { localMajors, startPostgres } from './support/postgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliPath = path.join(root, 'dist', 'cli.js');
const fixtureWkl = path.join(root, 'test', 'fixtures', 'wkl', 'workload.wkl');
const shop = (name: string): string => path.join(root, 'examples', 'shop', name);
/** The sample shop's schema: its migrations, in apply order. */
const shopMigrations = (): string[] =>
  fs
    .readdirSync(shop('migrations'))
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => shop(path.join('migrations', name)));

let tmp: string;

beforeAll(() => {
  const build = spawnSync('npm', ['run', '--silent', 'build:cli'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build:cli failed:\n${build.stdout}${build.stderr}`);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-cli-'));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion. `onStderr` sees stderr as it arrives (to act mid-run). */
function cli(args: string[], options: { onStderr?: (soFar: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    delete env.PG_RETEST_DEBUG;
    const child = spawn(process.execPath, [cliPath, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      options.onStderr?.(stderr, child);
    });
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** A fresh database on the shared server; dropped by the returned cleanup. */
async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const serverUrl = inject('pgUrl');
  const name = `t_cli_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client(serverUrl);
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A port on 127.0.0.1 that nothing listens on: 1 (tcpmux). A free port taken and released could
 * be given to a test server started meanwhile; the servers here only get ports above 1023.
 */
const CLOSED_PORT = 1;

function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The port of the server the CLI says it started. */
function startedPort(stderr: string): number {
  const match = /started PostgreSQL .* on 127\.0\.0\.1:(\d+)/.exec(stderr);
  if (!match) throw new Error(`the CLI did not say which server it started:\n${stderr}`);
  return Number(match[1]);
}

function expectCountsAddUp(report: ReplayReport): void {
  const t = report.totals;
  expect(t.executed + t.skipped + t.not_executed).toBe(t.captured);
  expect(t.ok + t.errors).toBe(t.executed);
  const perSession = report.sessions.reduce((sum, s) => sum + s.counts.captured, 0);
  expect(perSession).toBe(t.captured);
}

describe('inspect', () => {
  it('prints the summary of a workload as text', async () => {
    const run = await cli(['inspect', fixtureWkl]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^workload\s+.*workload\.wkl$/m);
    expect(run.stdout).toMatch(/^sessions\s+8 \(/m);
    expect(run.stdout).toMatch(/^statements\s+357 \(/m);
    expect(run.stdout).toMatch(/^transactions\s+50$/m);
    expect(run.stdout).toMatch(/^by kind\s+.*insert 98/m);
    expect(run.stdout).toMatch(/^class\s+mixed$/m);
    expect(run.stdout).toContain('top 10 fingerprints by calls:');
    // Literals never reach the output: fingerprints are shown normalized.
    expect(run.stdout).toContain('UPDATE products SET stock = stock - $1 WHERE id = $2');
  });

  it('prints the summary as JSON with --json, honouring --top', async () => {
    const run = await cli(['inspect', fixtureWkl, '--json', '--top', '3']);
    expect(run.code).toBe(0);
    const json = JSON.parse(run.stdout);
    expect(json).toMatchObject({ file: fixtureWkl, sessions: 8, statements: 357, transactions: 50, classification: 'mixed' });
    expect(json.statements_by_kind).toMatchObject({ insert: 98, select: 83, update: 76 });
    expect(json.top_fingerprints).toHaveLength(3);
    expect(json.warnings).toEqual([]);
  });

  it('summarises the sample shop workload', async () => {
    const run = await cli(['inspect', shop('workload.wkl'), '--json']);
    expect(run.code).toBe(0);
    const json = JSON.parse(run.stdout);
    expect(json.sessions).toBe(40);
    expect(json.offsets_look_session_relative).toBe(false);
    expect(json.duration_us).toBeGreaterThan(3_000_000);
    expect(json.duration_us).toBeLessThan(8_000_000);
    expect(json.statements_by_kind.transaction).toBeGreaterThan(0);
  });

  it('refuses a corrupt .wkl with exit 2, naming the file', async () => {
    const corrupt = path.join(tmp, 'corrupt.wkl');
    fs.writeFileSync(corrupt, Buffer.from([0x92, 0x01, 0xff, 0x13, 0x37]));
    const run = await cli(['inspect', corrupt]);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toContain(corrupt);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stdout).toBe('');
  });

  it('refuses a missing file with exit 2, naming it', async () => {
    const missing = path.join(tmp, 'nope.wkl');
    const run = await cli(['inspect', missing]);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toContain(missing);
  });
});

describe('options', () => {
  it('names an unknown option and exits 2', async () => {
    const run = await cli(['replay', '--workload', fixtureWkl, '--bogus', '1']);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toMatch(/unknown option --bogus/);
  });

  it('suggests the option meant by a typo', async () => {
    const run = await cli(['replay', '--workload', fixtureWkl, '--speeed', '2']);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toContain('did you mean --speed?');
  });

  it.each([['fast'], ['-1'], ['']])('names --speed and what it accepts for %j', async (speed) => {
    const run = await cli(['replay', '--workload', fixtureWkl, `--speed=${speed}`]);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toMatch(/option --speed/);
    if (speed) expect(run.stderr).toMatch(/expected a number ≥ 0.*got '/);
  });

  it('rejects --provision with --database-url, and an unsupported --postgres-version', async () => {
    const both = await cli(['replay', '--workload', fixtureWkl, '--database-url', 'postgres://u@h/db', '--provision', 'local']);
    expect(both.code).toBe(ExitCode.BadInput);
    expect(both.stderr).toContain('option --provision');
    const version = await cli(['replay', '--workload', fixtureWkl, '--postgres-version', '12']);
    expect(version.code).toBe(ExitCode.BadInput);
    expect(version.stderr).toMatch(/option --postgres-version: expected a PostgreSQL major version: 13, 14, 15, 16, 17, 18, got '12'/);
  });

  it('requires --workload, and refuses an unknown command', async () => {
    const missing = await cli(['replay']);
    expect(missing.code).toBe(ExitCode.BadInput);
    expect(missing.stderr).toMatch(/option --workload: is required/);
    const command = await cli(['replya']);
    expect(command.code).toBe(ExitCode.BadInput);
    expect(command.stderr).toContain("unknown command 'replya'");
  });

  it('refuses a corrupt --workload before touching any server', async () => {
    const corrupt = path.join(tmp, 'corrupt-replay.wkl');
    fs.writeFileSync(corrupt, '{"not": "a workload"}');
    const port = CLOSED_PORT;
    const run = await cli(['replay', '--workload', corrupt, '--database-url', `postgres://postgres@127.0.0.1:${port}/x`]);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toContain(corrupt);
  });

  it('prints help for a command with exit 0', async () => {
    const run = await cli(['replay', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--database-url URL');
    expect(run.stdout).toContain('--setup FILE...');
  });
});

describe('replay against the shared server', () => {
  it('replays the sample shop into a fresh database: exit 0, counts that add up', async () => {
    const db = await freshDatabase();
    const reportFile = path.join(tmp, 'shop-report.json');
    const resultsFile = path.join(tmp, 'shop-results.jsonl');
    const pgRetestFile = path.join(tmp, 'shop-pg-retest-results.wkl');
    try {
      const run = await cli([
        'replay',
        '--workload',
        shop('workload.wkl'),
        '--database-url',
        db.url,
        '--allow-writes',
        '--setup',
        ...shopMigrations(),
        '--seed',
        shop('seed.sql'),
        '--speed',
        '4',
        '--json',
        reportFile,
        '--results',
        resultsFile,
        '--pg-retest-results',
        pgRetestFile,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^status\s+completed in /m);
      expect(run.stdout).toMatch(/^sessions\s+40\/40 completed$/m);
      expect(run.stdout).toContain('top 10 fingerprints by p95:');
      expect(run.stdout).toContain('errors by SQLSTATE:');
      expect(run.stdout).toMatch(/23505\s+1\s+duplicate key value violates unique constraint "customers_email_key"/);
      expect(run.stderr).toMatch(/setup .*003_orders\.sql: \d+ statements/);

      const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as ReplayReport;
      expect(report.status).toBe('completed');
      expect(report.sessions_planned).toBe(40);
      expect(report.sessions_completed).toBe(40);
      expect(report.sessions_failed).toBe(0);
      expectCountsAddUp(report);
      // The workload's two intended failures: the gift item (recovered with ROLLBACK TO
      // SAVEPOINT) and the taken email, whose transaction's remaining statements are skipped.
      expect(report.totals.errors).toBe(2);
      expect(report.totals.skipped).toBe(2);
      expect(report.totals.skipped_by_reason).toEqual({ transaction_aborted: 2 });
      expect(report.totals.not_executed).toBe(0);
      const errorStates = report.fingerprints.flatMap((f) => f.errors.map((e) => e.sqlstate));
      expect(errorStates).toEqual(['23505', '23505']);
      // The summary's figures are the report's.
      expect(run.stdout).toContain(
        `${report.totals.captured.toLocaleString('en-US')} planned: ${report.totals.executed.toLocaleString('en-US')} executed`,
      );

      const lines = fs.readFileSync(resultsFile, 'utf8').trim().split('\n');
      expect(lines).toHaveLength(report.totals.captured + 2); // header, statements, summary

      // pg-retest's results format: a .wkl, but not a workload, and inspect says so.
      const inspected = await cli(['inspect', pgRetestFile]);
      expect(inspected.code).toBe(ExitCode.BadInput);
      expect(inspected.stderr).toContain('this is a pg-retest replay results file (40 sessions');
    } finally {
      await db.drop();
    }
  });

  it('fails with exit 3 when the deadline passes before the replay ends', async () => {
    const db = await freshDatabase();
    const reportFile = path.join(tmp, 'deadline-report.json');
    try {
      const run = await cli([
        'replay',
        '--workload',
        shop('workload.wkl'),
        '--database-url',
        db.url,
        '--allow-writes',
        '--setup',
        ...shopMigrations(),
        '--seed',
        shop('seed.sql'),
        // The option's former name: still accepted, with a note.
        '--deadline-s',
        '1',
        '--json',
        reportFile,
      ]);
      expect(run.code, run.stderr).toBe(ExitCode.Infrastructure);
      expect(run.stdout).toMatch(/^status\s+DEADLINE_EXCEEDED/m);
      expect(run.stderr.split('\n')[0]).toBe(
        'warning: option --deadline-s is deprecated: it is now called --replay-timeout-s, which works the same',
      );
      expect(run.stderr).toMatch(/error: the replay did not finish within the deadline of 1 s; raise --replay-timeout-s/);
      const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as ReplayReport;
      expect(report.status).toBe('deadline_exceeded');
      expect(report.totals.not_executed_by_reason.deadline).toBeGreaterThan(0);
      expectCountsAddUp(report);
    } finally {
      await db.drop();
    }
  });

  it('fails with exit 3 naming the file and line when setup SQL fails', async () => {
    const db = await freshDatabase();
    const setup = path.join(tmp, 'broken-schema.sql');
    fs.writeFileSync(
      setup,
      [
        '-- a schema with a typo',
        'CREATE TABLE ok_table (id int PRIMARY KEY);',
        '',
        "INSERT INTO ok_table VALUES (1), ('two');",
        'CREATE TABLE never_created (id int);',
        '',
      ].join('\n'),
    );
    try {
      const run = await cli(['replay', '--workload', shop('workload.wkl'), '--database-url', db.url, '--allow-writes', '--setup', setup]);
      expect(run.code).toBe(ExitCode.Infrastructure);
      const error = run.stderr.trim().split('\n').at(-1)!;
      expect(error).toContain(`setup file ${setup}, line 4:`);
      expect(error).toContain('invalid input syntax for type integer');
      expect(error).toContain('SQLSTATE 22P02');
      expect(run.stdout).toBe('');
    } finally {
      await db.drop();
    }
  });

  it('fails with exit 3 on an unreachable --database-url and never prints its password', async () => {
    const password = `Sekr1t-${randomBytes(8).toString('hex')}`;
    const port = CLOSED_PORT;
    const url = `postgres://app:${password}@127.0.0.1:${port}/shop`;
    const run = await cli(['replay', '--workload', shop('workload.wkl'), '--database-url', url, '--allow-writes']);
    expect(run.code).toBe(ExitCode.Infrastructure);
    expect(run.stderr).toContain(`127.0.0.1:${port}/shop as app`);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^error: cannot connect to .*; nothing is listening there/);
    expect(run.stdout + run.stderr).not.toContain(password);
  });

  it('fails with exit 3 on a socket directory where no server listens', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'no-server-'));
    try {
      const url = `postgres://app:s3cret-pw@${encodeURIComponent(dir)}:5999/shop`;
      const run = await cli(['replay', '--workload', shop('workload.wkl'), '--database-url', url, '--allow-writes']);
      expect(run.code).toBe(ExitCode.Infrastructure);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(
        new RegExp(`^error: cannot connect to ${dir}:5999/shop as app: .*; no server socket there`),
      );
      expect(run.stdout + run.stderr).not.toContain('s3cret-pw');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never prints a password given in a malformed --database-url', async () => {
    const password = `Sekr1t-${randomBytes(8).toString('hex')}`;
    const run = await cli(['replay', '--workload', shop('workload.wkl'), '--database-url', `postgres://app:${password}@`]);
    expect(run.code).toBe(ExitCode.BadInput);
    expect(run.stderr).toContain('option --database-url');
    expect(run.stdout + run.stderr).not.toContain(password);
  });
});

describe('replay when the server dies', () => {
  it('reports server_unavailable and exits 3 when the server is killed mid-replay', async () => {
    const server = await startPostgres();
    try {
      let killed = false;
      const run = await cli(
        [
          'replay',
          '--workload',
          shop('workload.wkl'),
          '--database-url',
          server.url,
          '--allow-writes',
          '--setup',
          ...shopMigrations(),
          '--seed',
          shop('seed.sql'),
          // 3.4 s captured, 13.6 s replayed: the kill 3 s in lands mid-replay however slow the
          // engine's preflight connection is (before it, the engine would fail to connect instead).
          '--speed',
          '0.25',
        ],
        {
          onStderr(soFar) {
            if (!killed && soFar.includes('replaying against')) {
              killed = true;
              setTimeout(() => server.kill('SIGKILL'), 3_000);
            }
          },
        },
      );
      expect(killed, run.stderr).toBe(true);
      expect(run.code, run.stderr).toBe(ExitCode.Infrastructure);
      expect(run.stdout).toMatch(/^status\s+SERVER_UNAVAILABLE/m);
      expect(run.stderr).toMatch(/error: the replay stopped because the server went away \(.+\); check its log, memory and disk/);
    } finally {
      await server.stop();
    }
  });
});

describe('replay on a server the CLI starts', () => {
  it('--provision embedded: starts PostgreSQL from npm, replays, and removes the server', async () => {
    const run = await cli([
      'replay',
      '--workload',
      shop('workload.wkl'),
      '--provision',
      'embedded',
      '--setup',
      ...shopMigrations(),
      '--seed',
      shop('seed.sql'),
      '--speed',
      '0',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^server\s+PostgreSQL 18\.\d+ \(embedded, /m);
    expect(run.stdout).toMatch(/^sessions\s+40\/40 completed$/m);
    // Over the server's own Unix-domain socket, not TCP: a socket directory names the target.
    expect(run.stderr).toMatch(/^replaying against \/\S*pg-retest-server-\w+:\d+\/\w+ as postgres$/m);
    expect(run.stderr).toContain('stopping the server and removing its data directory');
    expect(await portAccepts(startedPort(run.stderr))).toBe(false);
    // The server's password is random and must not be shown either.
    expect(run.stdout + run.stderr).not.toMatch(/postgres:\/\/postgres:[^*@]+@/);
  });

  it('on SIGTERM mid-replay: stops the replay and the server, exits 130', async () => {
    let signalled = false;
    const run = await cli(
      // local when the machine has PostgreSQL (faster to start), else embedded.
      [
        'replay',
        '--workload',
        shop('workload.wkl'),
        '--provision',
        localMajors().length > 0 ? 'local' : 'embedded',
        '--setup',
        ...shopMigrations(),
        '--seed',
        shop('seed.sql'),
        // As above: a signal 3 s into a 13.6 s replay cancels the replay, not its start.
        '--speed',
        '0.25',
      ],
      {
        onStderr(soFar, child) {
          if (!signalled && soFar.includes('replaying against')) {
            signalled = true;
            setTimeout(() => child.kill('SIGTERM'), 3_000);
          }
        },
      },
    );
    expect(signalled, run.stderr).toBe(true);
    expect(run.code, run.stderr).toBe(ExitCode.Interrupted);
    expect(run.stderr).toContain('received SIGTERM');
    expect(run.stdout).toMatch(/^status\s+CANCELLED/m);
    expect(await portAccepts(startedPort(run.stderr))).toBe(false);
  });
});

describe('building blocks', () => {
  const report = (overrides: Partial<ReplayReport>): ReplayReport => ({
    status: 'completed',
    message: null,
    server_version: '16.4',
    started_at: '2026-01-01T00:00:00Z',
    wall_time_us: 1_000_000,
    speed: 1,
    read_only: false,
    sessions_planned: 2,
    sessions_completed: 2,
    sessions_failed: 0,
    sessions_excluded: 0,
    statements_excluded: 0,
    totals: { captured: 4, executed: 4, ok: 4, errors: 0, skipped: 0, not_executed: 0, skipped_by_reason: {}, not_executed_by_reason: {} },
    latency: { count: 4, mean_us: 10, min_us: 5, p50_us: 10, p95_us: 15, p99_us: 15, max_us: 15 },
    sessions: [],
    fingerprints: [],
    warnings: [],
    ...overrides,
  });

  it('exits 0 only for a completed run in which every session ran', () => {
    expect(replayOutcome(report({})).exitCode).toBe(ExitCode.Ok);
    expect(replayOutcome(report({ status: 'server_unavailable', message: 'gone' })).exitCode).toBe(ExitCode.Infrastructure);
    expect(replayOutcome(report({ status: 'deadline_exceeded' }), { deadlineS: 5 }).problem).toContain('deadline of 5 s');
    expect(replayOutcome(report({ status: 'cancelled' })).exitCode).toBe(ExitCode.Interrupted);
    const failed = replayOutcome(
      report({
        sessions_completed: 1,
        sessions_failed: 1,
        sessions: [
          {
            id: 2,
            source_id: 2,
            copy: 0,
            status: 'connect_failed',
            message: 'sorry, too many clients already',
            sqlstate: '53300',
            connect_attempts: 5,
            scheduled_start_us: 0,
            actual_start_us: null,
            counts: {
              captured: 2,
              executed: 0,
              ok: 0,
              errors: 0,
              skipped: 0,
              not_executed: 2,
              skipped_by_reason: {},
              not_executed_by_reason: { connect_failed: 2 },
            },
          },
        ],
      }),
    );
    expect(failed.exitCode).toBe(ExitCode.Infrastructure);
    expect(failed.problem).toContain('--max-connections');
    const unbalanced = report({
      totals: {
        captured: 5,
        executed: 4,
        ok: 4,
        errors: 0,
        skipped: 0,
        not_executed: 0,
        skipped_by_reason: {},
        not_executed_by_reason: {},
      },
    });
    expect(replayOutcome(unbalanced).exitCode).toBe(ExitCode.Infrastructure);
  });

  it('splits SQL files the way psql does and keeps the line of each statement', () => {
    const sql = [
      '-- comment; not a statement',
      "INSERT INTO t VALUES ('a;b', E'it\\'s;');",
      'CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;',
      '/* block; /* nested; */ still comment */ SELECT "odd;name" FROM t',
      'WHERE x = 1;',
      'CREATE FUNCTION g() RETURNS int LANGUAGE sql',
      'BEGIN ATOMIC',
      '  SELECT 1;',
      '  SELECT CASE WHEN true THEN 2 END;',
      'END;',
      'SELECT 3',
    ].join('\n');
    const split = splitSql(sql);
    expect(split.ok).toBe(true);
    if (!split.ok) return;
    expect(split.statements.map((s) => s.line)).toEqual([2, 3, 4, 6, 11]);
    expect(split.statements[1]!.text).toContain('$body$ SELECT 1; $body$');
    expect(split.statements[3]!.text.trim().endsWith('END')).toBe(true);
  });

  it('refuses psql meta-commands and COPY FROM STDIN, with their line', () => {
    expect(splitSql('SELECT 1;\n\\i other.sql\n')).toMatchObject({ ok: false, line: 2 });
    expect(splitSql('SELECT 1;\nCOPY t (a) FROM stdin;\n1\n\\.\n')).toMatchObject({ ok: false, line: 2 });
  });

  it('takes several --setup files after one option, and repeated options, in order', () => {
    const { values } = tokenize(
      'replay',
      ['--setup', 'a.sql', 'b.sql', '--seed', 's.sql', '--setup=c.sql', '--read-only'],
      replayCommand.options,
    );
    expect(values).toEqual({ setup: ['a.sql', 'b.sql', 'c.sql'], seed: 's.sql', 'read-only': true });
    expect(() => tokenize('replay', ['--speed', '1', '--speed', '2'], replayCommand.options)).toThrow(/--speed is given more than once/);
    expect(() => tokenize('replay', ['--read-only=yes'], replayCommand.options)).toThrow(/--read-only takes no value/);
    expect(() => tokenize('replay', ['--seed'], replayCommand.options)).toThrow(/--seed needs a value/);
    expect(() => tokenize('replay', ['stray'], replayCommand.options)).toThrow(/unexpected argument 'stray'/);
  });

  it('names each replay limit once: --replay-timeout-s in every command, replay still reads --deadline-s with a note', () => {
    const parse = <C>(spec: CommandSpec<C>, argv: string[]) => {
      const { values, notes } = tokenize(spec.name, argv, spec.options);
      return { config: parseOptions(spec, values), notes };
    };
    const limits = ['--replay-timeout-s', '2', '--statement-timeout-ms', '100'];
    const replay = parse(replayCommand, ['--workload', 'w.wkl', ...limits, '--max-connections', '5']);
    expect(replay.notes).toEqual([]);
    expect(replay.config).toMatchObject({ replayTimeoutMs: 2000, statementTimeoutMs: 100, maxConnections: 5 });
    const gate = parse(gateCommand, ['--workload', 'w.wkl', '--migrations', 'm.sql', ...limits, '--max-connections', '5']);
    expect(gate.config).toMatchObject({ replayTimeoutMs: 2000, statementTimeoutMs: 100, maxConnections: 5 });
    expect(parse(capacityCommand, ['--workload', 'w.wkl', '--migrations', 'm.sql', ...limits]).config).toMatchObject({
      replayTimeoutMs: 2000,
      statementTimeoutMs: 100,
    });

    const former = parse(replayCommand, ['--workload', 'w.wkl', '--deadline-s', '2']);
    expect(former.config.replayTimeoutMs).toBe(2000);
    expect(former.notes).toEqual(['option --deadline-s is deprecated: it is now called --replay-timeout-s, which works the same']);
    expect(commandHelp(replayCommand)).toMatch(/^ {2}--replay-timeout-s S +stop a replay .*\(formerly --deadline-s\)$/m);

    // One declaration, so one help text in every command.
    for (const name of ['max-connections', 'statement-timeout-ms', 'replay-timeout-s'] as const) {
      expect(replayCommand.options[name], name).toBe(gateCommand.options[name]);
    }
    expect(capacityCommand.options['replay-timeout-s']).toBe(gateCommand.options['replay-timeout-s']);
  });

  it('masks passwords in URLs', () => {
    expect(maskUrl('postgres://app:s3cret@db:5432/shop')).toBe('postgres://app:****@db:5432/shop');
    expect(maskUrl('postgres://db/shop?password=s3cret&sslmode=disable')).toBe('postgres://db/shop?password=****&sslmode=disable');
    expect(maskUrl('host=db password=s3cret user=app')).toBe('host=db password=**** user=app');
  });
});
