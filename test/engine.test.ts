// The native engine through src/engine/index.ts, against a real PostgreSQL server from the test
// harness (test/support). Needs the addon: `npm run build:native` (npm test builds it).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  EngineError,
  inspectWorkload,
  loadWorkload,
  replay,
  writeWorkload,
  type ReplayProgress,
  type ReplayReport,
  type WorkloadProfileJson,
} from '../src/engine/index.js';
import { candidatePaths, platformProblem } from '../src/engine/native.js';
import { syntheticProfile } from './support/profile.js';
import { randomPassword, startPostgres } from './support/postgres.js';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/wkl/${name}`, import.meta.url));

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-engine-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function writeProfile(name: string, sessions: [number, string][][]): Promise<string> {
  const file = path.join(tmp, name);
  await writeWorkload(file, syntheticProfile(sessions));
  return file;
}

async function sql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** A fresh database on the shared server, dropped after the file's tests. */
async function freshDatabase(): Promise<string> {
  const admin = inject('pgUrl');
  const name = `engine_${randomBytes(4).toString('hex')}`;
  await sql(admin, `create database ${name}`);
  databases.push(name);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
const databases: string[] = [];
afterAll(async () => {
  for (const name of databases) await sql(inject('pgUrl'), `drop database if exists ${name} with (force)`);
});

/** What `replay()` rejected with, as an EngineError. */
async function rejection(promise: Promise<unknown>): Promise<EngineError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EngineError);
  return err as EngineError;
}

function expectAddsUp(report: ReplayReport): void {
  const { totals } = report;
  expect(totals.captured).toBe(totals.executed + totals.skipped + totals.not_executed);
  expect(totals.executed).toBe(totals.ok + totals.errors);
  for (const session of report.sessions) {
    const c = session.counts;
    expect(c.captured).toBe(c.executed + c.skipped + c.not_executed);
  }
  expect(report.fingerprints.reduce((n, f) => n + f.counts.captured, 0)).toBe(totals.captured);
}

/**
 * A port on 127.0.0.1 that nothing listens on: 1 (tcpmux). A free port taken and released could
 * be given to a test server started meanwhile; the servers here only get ports above 1023.
 */
const CLOSED_PORT = 1;

describe('finding the addon', () => {
  it('the action looks only beside its bundle, checked against the manifest there; the CLI also in build/; the sources only in build/', () => {
    const checked = (file: string) => ({ file, manifest: '/repo/dist/engines.sha256' });
    // A build/ directory in the repository a workflow checks out must not decide what the action runs.
    expect(candidatePaths('file:///repo/dist/index.js', 'linux-x64-gnu', 'action')).toEqual([
      checked('/repo/dist/engine.linux-x64-gnu.node'),
    ]);
    expect(candidatePaths('file:///repo/dist/index.js', 'linux-arm64-gnu', 'action')).toEqual([
      checked('/repo/dist/engine.linux-arm64-gnu.node'),
    ]);
    expect(candidatePaths('file:///repo/dist/cli.js', 'linux-x64-musl', 'cli')).toEqual([
      checked('/repo/dist/engine.linux-x64-musl.node'),
      { file: '/repo/build/engine.linux-x64-musl.node' },
    ]);
    expect(candidatePaths('file:///repo/src/engine/native.ts', 'linux-x64-gnu', 'sources')).toEqual([
      { file: '/repo/build/engine.linux-x64-gnu.node' },
    ]);
  });

  it('picks by CPU and C library, and names the platforms there are in one line', () => {
    expect(platformProblem('linux', 'x64', '2.35')).toBeUndefined();
    expect(platformProblem('linux', 'arm64', '2.39')).toBeUndefined();
    expect(platformProblem('linux', 'x64', undefined)).toBeUndefined();
    expect(platformProblem('darwin', 'arm64', undefined)).toBeUndefined();
    const all = 'linux-x64-gnu, linux-arm64-gnu, linux-x64-musl and darwin-arm64';
    expect(platformProblem('linux', 'arm64', undefined)).toBe(
      `the pg-retest engine does not run on linux-arm64-musl; it is built for ${all}`,
    );
    expect(platformProblem('win32', 'x64', undefined)).toBe(`the pg-retest engine does not run on win32-x64; it is built for ${all}`);
    expect(platformProblem('darwin', 'x64', undefined)).toMatch(/^[^\n]*darwin-x64; it is built for linux-x64-gnu/);
  });
});

describe('loading workloads', () => {
  it.each([
    ['workload.wkl', 8, 357],
    ['sample-ecommerce.wkl', 5, 5],
    ['synthetic-ecommerce.wkl', 20, 1707],
  ])('loads %s with its sessions and statements', async (name, sessions, statements) => {
    const workload = await loadWorkload(fixture(name));
    expect(workload.sessions).toBe(sessions);
    expect(workload.statements).toBe(statements);
    expect(workload.warnings).toEqual([]);

    const summary = workload.summary(3);
    expect(summary.sessions).toBe(sessions);
    expect(summary.statements).toBe(statements);
    expect(summary.top_fingerprints.length).toBeLessThanOrEqual(3);
    expect(summary.top_fingerprints[0]?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(Object.values(summary.statements_by_kind).reduce((a, b) => a + b, 0)).toBe(statements);

    const inspection = await inspectWorkload(fixture(name), 3);
    expect(inspection).toEqual({ ...summary, warnings: [] });
  });

  it('warns, naming the file, about what it decoded but did not use', async () => {
    // A map-form profile (as pg-retest's Python generator writes) with a key the format does not
    // have on its query, and stale totals. MessagePack by hand: fixmap 0x80|n, fixarray 0x90|n,
    // fixstr 0xa0|len (all strings here are under 32 bytes), positive fixint.
    const enc = (v: unknown): number[] => {
      if (typeof v === 'number') return [v];
      if (typeof v === 'string') return [0xa0 | v.length, ...Buffer.from(v)];
      if (Array.isArray(v)) return [0x90 | v.length, ...v.flatMap(enc)];
      const entries = Object.entries(v as Record<string, unknown>);
      return [0x80 | entries.length, ...entries.flatMap(([k, x]) => [...enc(k), ...enc(x)])];
    };
    const query = { sql: 'SELECT 1', start_offset_us: 0, duration_us: 1, kind: 'Select', app_name: 'web' };
    const profile = {
      version: 2,
      captured_at: '2026-03-19T15:27:48Z',
      source_host: 'h',
      pg_version: '16',
      capture_method: 'proxy',
      sessions: [{ id: 1, user: 'u', database: 'd', queries: [query] }],
      metadata: { total_queries: 5, total_sessions: 1, capture_duration_us: 0 },
    };
    const file = path.join(tmp, 'extra-key.wkl');
    fs.writeFileSync(file, Buffer.from(enc(profile)));
    const workload = await loadWorkload(file);
    expect(workload.statements).toBe(1);
    expect(workload.warnings).toEqual([
      `${file}: ignored unknown field(s) app_name (written by a newer or different tool)`,
      `${file}: metadata.total_queries says 5 but the file holds 1; using 1`,
    ]);
    expect((await inspectWorkload(file)).warnings).toEqual(workload.warnings);
  });

  it('rejects a corrupt file with one line naming it', async () => {
    const bytes = fs.readFileSync(fixture('workload.wkl'));
    const file = path.join(tmp, 'cut-short.wkl');
    fs.writeFileSync(file, bytes.subarray(0, bytes.length / 2));
    const err = await rejection(loadWorkload(file));
    expect(err.code).toBe('E_WORKLOAD');
    expect(err.message).toContain(file);
    expect(err.message).toContain('truncated');
    expect(err.message).not.toContain('\n');
  });

  it('refuses a pg-retest results file, saying what it is', async () => {
    // [[1, [["SELECT 1", 10, 12, true, nil, 0]]]]: one session with one result, as
    // `pg-retest replay --output` writes it (MessagePack, positional arrays).
    const results = Buffer.from([0x91, 0x92, 0x01, 0x91, 0x96, 0xa8, ...Buffer.from('SELECT 1'), 0x0a, 0x0c, 0xc3, 0xc0, 0x00]);
    const file = path.join(tmp, 'results.wkl');
    fs.writeFileSync(file, results);
    const err = await rejection(inspectWorkload(file));
    expect(err.code).toBe('E_WORKLOAD');
    expect(err.message).toMatch(new RegExp(`^${file}: this is a pg-retest replay results file`));
  });

  it('says when the file does not exist', async () => {
    const err = await rejection(loadWorkload(path.join(tmp, 'missing.wkl')));
    expect(err.code).toBe('E_WORKLOAD');
    expect(err.message).toMatch(/missing\.wkl: cannot read the file.*check the path/);
  });

  it('refuses a bad summary size', async () => {
    const workload = await loadWorkload(fixture('sample-ecommerce.wkl'));
    const err = await rejection(Promise.resolve().then(() => workload.summary(-1)));
    expect(err.code).toBe('E_OPTIONS');
  });
});

describe('writeWorkload', () => {
  it('writes a file that loads back', async () => {
    const file = await writeProfile('written.wkl', [
      [
        [0, 'select 1'],
        [1_000, 'select 2'],
      ],
      // Offsets beyond 2^32 µs (71 minutes) must survive the trip through JavaScript numbers.
      [[5_000_000_000, 'select 3']],
    ]);
    const workload = await loadWorkload(file);
    expect(workload.sessions).toBe(2);
    expect(workload.statements).toBe(3);
    expect(workload.summary().duration_us).toBe(5_000_000_100);
  });

  it('refuses an object of the wrong shape', async () => {
    const bad = { ...syntheticProfile([[[0, 'select 1']]]), sessions: [{ id: 1 }] } as unknown as WorkloadProfileJson;
    const err = await rejection(writeWorkload(path.join(tmp, 'bad.wkl'), bad));
    expect(err.code).toBe('E_WORKLOAD');
    expect(err.message).toMatch(/not in pg-retest's workload shape: missing field `user`/);
    expect(fs.existsSync(path.join(tmp, 'bad.wkl'))).toBe(false);
  });
});

describe('replay', () => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase();
    await sql(url, 'create table items (id int primary key, name text)');
  });

  it('accounts for every statement and groups errors by SQLSTATE', async () => {
    const file = await writeProfile('small.wkl', [
      [
        [0, "insert into items values (1, 'a')"],
        [100, 'select count(*) from items'],
        [200, 'select * from missing_table'],
      ],
      [
        [0, "insert into items values (2, 'b')"],
        [100, "insert into items values (2, 'again')"],
        [200, 'select * from missing_table'],
      ],
    ]);
    const workload = await loadWorkload(file);
    const snapshots: ReplayProgress[] = [];
    const report = await replay(
      workload,
      { conninfo: url, speed: 0, includeSamples: true, progressIntervalMs: 10 },
      { onProgress: (p) => snapshots.push(p) },
    );

    expect(report.status).toBe('completed');
    expectAddsUp(report);
    expect(report.totals).toMatchObject({ captured: 6, executed: 6, ok: 3, errors: 3, skipped: 0, not_executed: 0 });
    expect(report.sessions.map((s) => s.status)).toEqual(['completed', 'completed']);

    const missing = report.fingerprints.find((f) => f.normalized.includes('missing_table'));
    expect(missing?.errors).toEqual([
      { sqlstate: '42P01', message: expect.stringContaining('missing_table'), count: 2, instances: expect.any(Array) },
    ]);
    // Each failure names its captured statement: session and statement index in the workload.
    expect(missing?.errors[0]?.instances).toHaveLength(2);
    const inserts = report.fingerprints.find((f) => f.kind === 'insert');
    expect(inserts?.counts).toMatchObject({ captured: 3, ok: 2, errors: 1 });
    expect(inserts?.errors).toEqual([{ sqlstate: '23505', message: expect.any(String), count: 1, instances: [expect.any(Array)] }]);
    for (const f of report.fingerprints) {
      expect(f.samples).toHaveLength(f.latency.count);
    }
    expect(await sql(url, 'select count(*)::int as n from items')).toEqual([{ n: 2 }]);

    // The last snapshot says done, arrives before the promise resolves, and is the only one.
    expect(snapshots.at(-1)).toMatchObject({ done: true, executed: 6, errors: 3, statements_planned: 6 });
    expect(snapshots.filter((p) => p.done)).toHaveLength(1);
  });

  it('leaves out samples unless asked', async () => {
    const workload = await loadWorkload(await writeProfile('one.wkl', [[[0, 'select 1']]]));
    const report = await replay(workload, { conninfo: url, speed: 0 });
    expect(report.totals.ok).toBe(1);
    expect(report.fingerprints[0]).not.toHaveProperty('samples');
  });

  it('keeps going when the progress callback throws, and warns once', async () => {
    const workload = await loadWorkload(await writeProfile('one.wkl', [[[0, 'select 1']]]));
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const report = await replay(
        workload,
        { conninfo: url, speed: 0, progressIntervalMs: 5 },
        {
          onProgress: () => {
            throw new Error('the display broke');
          },
        },
      );
      expect(report.status).toBe('completed');
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.includes('the display broke'))).toHaveLength(1);
  });

  it('stops when its AbortSignal fires, reporting what was not sent', async () => {
    // Two sessions with a statement every second for 30 s, at captured speed.
    const session = (): [number, string][] => Array.from({ length: 31 }, (_, i) => [i * 1_000_000, 'select 1']);
    const workload = await loadWorkload(await writeProfile('long.wkl', [session(), session()]));
    const controller = new AbortController();
    let abortedAt = 0;
    const report = await replay(
      workload,
      { conninfo: url, speed: 1, progressIntervalMs: 20 },
      {
        signal: controller.signal,
        onProgress: (p) => {
          if (p.executed >= 2 && !controller.signal.aborted) {
            abortedAt = Date.now();
            controller.abort();
          }
        },
      },
    );
    expect(abortedAt).toBeGreaterThan(0);
    // Well under the 29 s the replay had left: cancellation does not wait for the timeline.
    expect(Date.now() - abortedAt).toBeLessThan(10_000);
    expect(report.status).toBe('cancelled');
    expect(report.message).toBe('the replay was cancelled');
    expectAddsUp(report);
    expect(report.totals.not_executed).toBeGreaterThan(0);
    expect(report.totals.not_executed_by_reason.cancelled).toBe(report.totals.not_executed);
  });

  it('reports a signal aborted before the start as E_CANCELLED', async () => {
    const workload = await loadWorkload(await writeProfile('one.wkl', [[[0, 'select 1']]]));
    const err = await rejection(replay(workload, { conninfo: url }, { signal: AbortSignal.abort() }));
    expect(err.code).toBe('E_CANCELLED');
  });

  it('refuses invalid options with E_OPTIONS', async () => {
    const workload = await loadWorkload(fixture('sample-ecommerce.wkl'));
    for (const options of [
      { conninfo: url, speed: -1 },
      { conninfo: url, scale: 0 },
      { conninfo: url, maxConnections: 1.5 },
      { conninfo: '' },
      { conninfo: 'port=notaport' },
    ]) {
      const err = await rejection(replay(workload, options));
      expect(err.code).toBe('E_OPTIONS');
      expect(err.message).not.toContain('\n');
    }
  });

  it('rejects a wrong password with E_CONNECT, without showing the password', async () => {
    const password = randomPassword();
    const server = await startPostgres({ password });
    try {
      const wrong = `wrong-${randomPassword()}`;
      const target = new URL(server.url);
      target.password = encodeURIComponent(wrong);
      const workload = await loadWorkload(fixture('sample-ecommerce.wkl'));
      const err = await rejection(replay(workload, { conninfo: target.toString() }));
      expect(err.code).toBe('E_CONNECT');
      expect(err.message).toMatch(/password authentication failed.*check the user name and password/);
      expect(err.message).not.toContain(wrong);
      expect(err.message).not.toContain(password);
    } finally {
      await server.stop();
    }
  });

  it('rejects a closed port with E_CONNECT, without showing the password', async () => {
    const port = CLOSED_PORT;
    const secret = 'hunter2-very-secret';
    const workload = await loadWorkload(fixture('sample-ecommerce.wkl'));
    const err = await rejection(
      replay(workload, { conninfo: `postgres://postgres:${secret}@127.0.0.1:${port}/postgres`, connectRetryMs: 500 }),
    );
    expect(err.code).toBe('E_CONNECT');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).not.toContain(secret);
  });
});

describe('process lifetime', () => {
  it('lets a script that replays with a progress callback exit by itself', async () => {
    const file = await writeProfile('exit.wkl', [
      [
        [0, 'select 1'],
        [0, 'select pg_sleep(0.05)'],
      ],
      [[0, 'select 2']],
    ]);
    const script = fileURLToPath(new URL('./fixtures/exit-after-replay.mjs', import.meta.url));
    const child = spawn(process.execPath, [script, file], {
      env: { ...process.env, PG_RETEST_TEST_URL: inject('pgUrl') },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A hang shows up as a kill with SIGKILL, which the assertions below tell apart.
      timeout: 60_000,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('close', (c, s) => resolve([c, s])),
    );
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(JSON.parse(stdout)).toMatchObject({ status: 'completed', executed: 3, lastDone: true });
  });
});
