// `run --config .pg-retest.toml` against real PostgreSQL: a workload of lookups on a 120,000-row
// table, replayed in a single-target run judged by pg-retest's p95 limit (far below and far above
// what any replay measures), in A/B mode against a copy of the database that lost its index (a
// sequential scan of 120,000 rows per call against an index lookup) and against an identical copy,
// and from a captured csvlog into a server started for the run with restore_from loaded by psql.
// The lost index's regression is a ratio of latencies: this file runs alone (vitest.config.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run } from '../src/cli/main.js';
import type { Io } from '../src/runtime/io.js';
import { writeWorkload } from '../src/engine/index.js';
import type { RunReport } from '../src/pg-retest-config/report-types.js';
import { dockerUnavailable } from '../src/provision/docker.js';
import { VARIANTS_LATENCY_OUT_OF_REACH } from './support/latency-rule.js';
import { syntheticProfile } from './support/profile.js';
import { findClientProgram } from '../src/templates/seed.js';

const tag = `t_run_${Math.random().toString(36).slice(2, 8)}`;
const databases = { a: `${tag}_a`, noIndex: `${tag}_noidx`, same: `${tag}_same` };
let dir: string;

async function admin(sql: string[], database = 'postgres'): Promise<void> {
  const url = new URL(inject('pgUrl'));
  url.pathname = `/${database}`;
  const c = new pg.Client(url.toString());
  await c.connect();
  try {
    for (const statement of sql) await c.query(statement);
  } finally {
    await c.end();
  }
}

/** A libpq key=value connection string, as pg-retest configs write them. */
function conninfo(database: string): string {
  const url = new URL(inject('pgUrl'));
  return `host=${url.hostname} port=${url.port} user=${decodeURIComponent(url.username)} dbname=${database}`;
}

/** Runs the CLI in this process, collecting its output. */
async function cli(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { ...process.env, CI: 'true' },
  };
  const status = await run(args, io);
  return { status, stdout, stderr };
}

function config(name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, body);
  return file;
}

// The fallback without Docker is what is tested: where Docker answers, the image would be pulled instead.
const dockerHere = (await dockerUnavailable()) === undefined;

const readReport = (file: string): RunReport => JSON.parse(fs.readFileSync(file, 'utf8')) as RunReport;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-run-test-'));
  await admin([`CREATE DATABASE ${databases.a}`]);
  await admin(
    [
      'CREATE TABLE items (id int PRIMARY KEY, k int NOT NULL, payload text NOT NULL)',
      "INSERT INTO items SELECT g, g % 40000, repeat('x', 40) FROM generate_series(1, 120000) g",
      'CREATE INDEX items_k_idx ON items (k)',
      'VACUUM ANALYZE items',
    ],
    databases.a,
  );
  await admin([
    `CREATE DATABASE ${databases.noIndex} TEMPLATE ${databases.a}`,
    `CREATE DATABASE ${databases.same} TEMPLATE ${databases.a}`,
  ]);
  await admin(['DROP INDEX items_k_idx', 'ANALYZE items'], databases.noIndex);
  // Two sessions of 15 lookups by k (an index scan, or a sequential scan of 120,000 rows without
  // the index) and 15 by primary key each, 2 ms apart.
  const session = (id: number): [number, string][] =>
    Array.from({ length: 30 }, (_, i) => [
      i * 2000,
      i % 2 === 0 ? `SELECT id, payload FROM items WHERE k = ${id * 100 + i}` : `SELECT payload FROM items WHERE id = ${id * 1000 + i}`,
    ]);
  await writeWorkload(path.join(dir, 'lookups.wkl'), syntheticProfile([session(1), session(2)]));
}, 30 * 60_000);

afterAll(async () => {
  for (const name of Object.values(databases)) await admin([`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]).catch(() => {});
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('run: one target, pg-retest thresholds', () => {
  const single = (limit: string, name: string) =>
    config(
      `${name}.toml`,
      [
        '[capture]',
        `workload = "${path.join(dir, 'lookups.wkl')}"`,
        '[replay]',
        `target = "${conninfo(databases.a)}"`,
        'speed = 0',
        '[thresholds]',
        `p95_max_ms = ${limit}`,
        '[output]',
        `json_report = "${path.join(dir, `${name}.json`)}"`,
        `junit_xml = "${path.join(dir, `${name}.xml`)}"`,
      ].join('\n'),
    );

  it('fails (exit 1) naming the limit and the measured p95 when the limit is below it, and writes the JSON report and JUnit', async () => {
    // 1 µs: no statement over a connection is that fast.
    const result = await cli(['run', '--config', single('0.001', 'tight')]);
    expect(result.status, result.stderr).toBe(1);
    // The last line of the log is the headline: the limit and the measured value.
    expect(result.stderr.trim().split('\n').pop()).toMatch(
      /^regression: P95 latency [\d.]+ (µs|ms) exceeds the 0\.001 ms limit \(thresholds\.p95_max_ms\)$/,
    );
    const report = readReport(path.join(dir, 'tight.json'));
    expect(report.verdict).toBe('regression');
    expect(report.thresholds).toMatchObject([{ name: 'p95_latency', status: 'failed', limit: 0.001 }]);
    expect(report.replay!.totals).toMatchObject({ captured: 60, executed: 60, errors: 0 });
    expect(report.config.keys.find((k) => k.key === 'replay.target')).toMatchObject({ value: '(connection string)' });
    const junit = fs.readFileSync(path.join(dir, 'tight.xml'), 'utf8');
    expect(junit).toMatch(
      /<testcase name="p95_latency" classname="pg-retest.threshold" time="0.000">\s*<failure message="P95 latency [^"]+ exceeds the 0.001 ms limit/,
    );
  });

  it('passes (exit 0) when the limit is far above it', async () => {
    // 60 s: no lookup here is that slow.
    const result = await cli(['run', '--config', single('60000', 'loose')]);
    expect(result.status, result.stderr).toBe(0);
    expect(readReport(path.join(dir, 'loose.json'))).toMatchObject({
      verdict: 'pass',
      thresholds: [{ name: 'p95_latency', status: 'passed' }],
    });
    expect(fs.readFileSync(path.join(dir, 'loose.xml'), 'utf8')).toMatch(
      /<testcase name="p95_latency" classname="pg-retest.threshold" time="0.000"\/>/,
    );
  });

  it('regression_max_count without variants: not evaluated, the run is inconclusive (exit 4) with its limits met', async () => {
    const file = config(
      'count.toml',
      fs.readFileSync(single('60000', 'count'), 'utf8').replace('[output]', 'regression_max_count = 5\n[output]'),
    );
    const result = await cli(['run', '--config', file]);
    expect(result.status, result.stderr).toBe(4);
    expect(readReport(path.join(dir, 'count.json')).thresholds.map((t) => [t.name, t.status])).toEqual([
      ['p95_latency', 'passed'],
      ['regression_count', 'not_evaluated'],
    ]);
  });
});

describe('run: [[variants]]', () => {
  const variants = (name: string, second: string, extra = '') =>
    config(
      `${name}.toml`,
      [
        '[capture]',
        `workload = "${path.join(dir, 'lookups.wkl')}"`,
        '[replay]',
        'speed = 0',
        '[thresholds]',
        extra,
        '[output]',
        `json_report = "${path.join(dir, `${name}.json`)}"`,
        '[[variants]]',
        'label = "baseline"',
        `target = "${conninfo(databases.a)}"`,
        '[[variants]]',
        `label = "${name}"`,
        `target = "${conninfo(second)}"`,
      ].join('\n'),
    );

  it('a variant without the index fails, naming the query and the sequential scan', async () => {
    const result = await cli(['run', '--config', variants('noindex', databases.noIndex)]);
    expect(result.status, result.stderr).toBe(1);
    expect(result.stdout).toContain("#### 'noindex' against 'baseline'");
    expect(result.stdout).toMatch(/`SELECT id, payload FROM items WHERE k = \$1`/);
    const report = readReport(path.join(dir, 'noindex.json'));
    const gate = report.variants!.candidates[0]!.report;
    expect(gate.verdict).toBe('regression');
    // The lookup by k regressed; the others may too on a busy runner (they share its two cores with the scans).
    expect(gate.comparison!.fingerprints.filter((f) => f.regressed).map((f) => f.normalized)).toContain(
      'SELECT id, payload FROM items WHERE k = $1',
    );
    const plan = gate.plans!.fingerprints.find((f) => f.normalized === 'SELECT id, payload FROM items WHERE k = $1')!;
    expect(plan.seq_scans.map((s) => s.relation)).toEqual(['items']);
    expect(report.reasons).toContainEqual(
      expect.stringMatching(/^'noindex' against 'baseline': `SELECT id, payload FROM items WHERE k = \$1` \(\w+\): p95 /),
    );
    // The user's databases are left as they were: only copies were replayed.
    expect(gate.environment.base.source).toMatch(/replayed on fresh copies/);
  });

  it('two identical variants pass: no new errors, no plan change', async () => {
    // What is asserted (errors, plans) is deterministic; the latency rule is out of reach, as in
    // the gate's own A/A tests.
    const result = await cli(['run', '--config', variants('same', databases.same, VARIANTS_LATENCY_OUT_OF_REACH)]);
    expect(result.status, `${result.stderr}\n${result.stdout.slice(0, 3000)}`).toBe(0);
    const gate = readReport(path.join(dir, 'same.json')).variants!.candidates[0]!.report;
    expect(gate.verdict).toBe('pass');
    expect(gate.comparison!.new_errors).toEqual([]);
    expect(gate.plans!.fingerprints.filter((f) => f.changed)).toEqual([]);
    expect(gate.thresholds.p95_threshold).toBe(1000);
  });
});

describe('run: captured from a csvlog, into a server started for the run', () => {
  it.skipIf(dockerHere || findClientProgram('psql') === undefined)(
    'backend = "docker" without Docker starts PostgreSQL 15 and loads restore_from with psql, COPY included',
    async () => {
      const log = path.join(dir, 'postgresql.csv');
      const line = (i: number, sql: string) =>
        `2026-01-15 10:00:0${i}.000 UTC,"app","shop",4321,"127.0.0.1:5000",65a4f000.10e1,${i + 1},"SELECT",2026-01-15 10:00:00 UTC,3/1,0,LOG,00000,"duration: 0.250 ms  statement: ${sql}",,,,,,,,,"psql","client backend",,0`;
      fs.writeFileSync(log, `${[0, 1, 2, 3].map((i) => line(i, `SELECT name FROM products WHERE id = ${i + 1}`)).join('\n')}\n`);
      fs.writeFileSync(
        path.join(dir, 'backup.sql'),
        [
          'CREATE TABLE products (id int PRIMARY KEY, name text);',
          'ALTER TABLE products OWNER TO app_owner;',
          'COPY products (id, name) FROM stdin;',
          '1\tpen',
          '2\tink',
          '3\tpad',
          '4\tcup',
          '\\.',
          '',
        ].join('\n'),
      );
      const file = config(
        'captured.toml',
        [
          '[capture]',
          `source_log = "${log}"`,
          'mask_values = true',
          '[provision]',
          'backend = "docker"',
          'image = "postgres:15"',
          `restore_from = "${path.join(dir, 'backup.sql')}"`,
          '[replay]',
          'speed = 0',
          '[thresholds]',
          'error_rate_max_pct = 0',
          '[output]',
          `json_report = "${path.join(dir, 'captured.json')}"`,
        ].join('\n'),
      );
      const result = await cli(['run', '--config', file]);
      expect(result.status, result.stderr).toBe(0);
      const report = readReport(path.join(dir, 'captured.json'));
      expect(report.workload).toMatchObject({ source: 'capture', statements: 4 });
      expect(report.target!.version).toMatch(/^15\./);
      // The dump's ALTER … OWNER TO a role the fresh server lacks fails; psql goes on, and it is reported.
      expect(report.target!.restore).toMatchObject({ method: 'psql', error_count: 1 });
      expect(report.warnings.join('\n')).toMatch(/restore_from .*backup\.sql: 1 statement failed .*app_owner/);
      expect(report.replay!.totals).toMatchObject({ executed: 4, errors: 0 });
      expect(report.thresholds).toMatchObject([{ name: 'error_rate', status: 'passed', measured: 0 }]);
      const understood = Object.fromEntries(report.config.keys.map((k) => [k.key, k.understood]));
      expect(understood['provision.backend']).toMatch(/^docker, where a Docker engine answers; here there is no Docker engine/);
      expect(understood['capture.mask_values']).toMatch(/^not applied/);
    },
  );
});

describe('run: bad and unknown keys', () => {
  it('an unknown key is a warning, not an error; a malformed value is exit 2 naming the key', async () => {
    const workload = path.join(dir, 'lookups.wkl');
    const warned = await cli([
      'run',
      '--config',
      config(
        'unknown.toml',
        `[capture]\nworkload = "${workload}"\n[replay]\ntarget = "${conninfo(databases.a)}"\nspeed = 0\nmax_connections = 5\n`,
      ),
    ]);
    expect(warned.status, warned.stderr).toBe(0);
    expect(warned.stderr).toContain('warning: [replay] max_connections: unknown key, ignored (pg-retest ignores it too)');
    const bad = await cli(['run', '--config', config('bad.toml', `[capture]\nworkload = "${workload}"\n[replay]\nspeed = "fast"\n`)]);
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      `error: config ${path.join(dir, 'bad.toml')}: [replay] speed: expected a number ≥ 0 (1 = captured timing, 0 = as fast as possible), got "fast"`,
    ]);
  });
});

describe('run: a target that does not answer', () => {
  it('is an error (exit 3), not the pass pg-retest gives it, and its password is never printed', async () => {
    const file = config(
      'dead.toml',
      `[capture]\nworkload = "${path.join(dir, 'lookups.wkl')}"\n[replay]\ntarget = "host=127.0.0.1 port=1 user=app password=hunter22 dbname=shop"\n[output]\njson_report = "${path.join(dir, 'dead.json')}"\n`,
    );
    const result = await cli(['run', '--config', file]);
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(/^error: cannot connect to 127\.0\.0\.1:1\/shop as app: .*ECONNREFUSED/m);
    const json = fs.readFileSync(path.join(dir, 'dead.json'), 'utf8');
    expect(JSON.parse(json)).toMatchObject({ verdict: 'error', error: { stage: 'replay' } });
    expect(`${result.stdout}${result.stderr}${json}`).not.toContain('hunter22');
  });
});
