// The gate end to end, as users run it: the bundled dist/cli.js in a child process against the
// shared test server (--database-url; the gate creates and drops databases of its own), on the
// example app (examples/shop) and its PR variants. Variants run from a throwaway git repository
// whose HEAD~1 is the base commit, so the base schema comes from a real `git worktree` of that
// commit, as on a pull request. Shared by the gate's test files.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { withDatabase } from '../../src/provision/url.js';
import type { GateReport } from '../../src/verdict/report-types.js';
import { adminSql } from './admin-sql.js';
import { root, shop } from './shop-gate.js';

export { root, shop };
const cliPath = path.join(root, 'dist', 'cli.js');
/** A gate run here takes well under a minute; ten of them in one test need room. */
export const GATE_TIMEOUT_MS = 180_000;

let tmp: string;

/** A temporary directory for the calling file (global setup builds the CLI bundle); call at its top level. */
export function useGateFixtures(): void {
  beforeAll(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-gate-'));
  });
  afterAll(() => {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });
}

/** The calling file's temporary directory (removed after its tests). */
export function tmpDir(): string {
  return tmp;
}

export interface GateRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The JSON report, when the run wrote one. */
  report: GateReport | undefined;
}

/**
 * Runs `pg-retest-action <args>` in `cwd` and reads the JSON report it wrote. `onStderr` sees
 * stderr as it arrives (to act mid-run).
 */
export function gate(args: string[], cwd = root, onStderr?: (soFar: string, child: ReturnType<typeof spawn>) => void): Promise<GateRun> {
  const json = path.join(tmp, `report-${randomBytes(4).toString('hex')}.json`);
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    for (const name of ['PG_RETEST_DEBUG', 'GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS']) delete env[name];
    // A run that names its own --json keeps it (and `report` stays undefined).
    const full = args.includes('--json') ? args : [...args, '--json', json];
    const child = spawn(process.execPath, [cliPath, ...full], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      onStderr?.(stderr, child);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      const report = fs.existsSync(json) ? (JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport) : undefined;
      resolve({ code, stdout, stderr, report });
    });
  });
}

/** Options shared by the runs on the example app, against the shared server. */
export function exampleArgs(dir: string): string[] {
  return ['gate', '--database-url', inject('pgUrl'), '--workload', path.join(dir, 'workload.wkl'), '--seed', path.join(dir, 'seed.sql')];
}

export function git(cwd: string, ...args: string[]): string {
  const run = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * A repository whose first commit is the example app (db/migrations, db/seed.sql,
 * db/workload.wkl) and whose second adds the files given: the PR.
 */
export function repoWithPr(prFiles: Record<string, string>, baseFiles: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(tmp, 'repo-'));
  fs.mkdirSync(path.join(dir, 'db'));
  fs.cpSync(shop('migrations'), path.join(dir, 'db', 'migrations'), { recursive: true });
  fs.copyFileSync(shop('seed.sql'), path.join(dir, 'db', 'seed.sql'));
  fs.copyFileSync(shop('workload.wkl'), path.join(dir, 'db', 'workload.wkl'));
  for (const [file, text] of Object.entries(baseFiles)) fs.writeFileSync(path.join(dir, file), text);
  git(dir, 'init', '--quiet', '--initial-branch=main');
  git(dir, 'add', '.');
  git(dir, 'commit', '--quiet', '-m', 'base');
  for (const [file, text] of Object.entries(prFiles)) fs.writeFileSync(path.join(dir, file), text);
  git(dir, 'add', '.');
  git(dir, 'commit', '--quiet', '--allow-empty', '-m', 'pr');
  return dir;
}

/** The one migration file of a variant (examples/shop/variants/<name>/), as a PR adds it. */
export function variant(name: string): Record<string, string> {
  const dir = shop('variants', name);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.sql'));
  expect(files).toHaveLength(1);
  return { [path.join('db', 'migrations', files[0]!)]: fs.readFileSync(path.join(dir, files[0]!), 'utf8') };
}

export function prGate(dir: string, extra: string[] = []): Promise<GateRun> {
  return gate(
    [
      'gate',
      '--database-url',
      inject('pgUrl'),
      '--workload',
      'db/workload.wkl',
      '--seed',
      'db/seed.sql',
      '--migrations',
      'db/migrations/*.sql',
      '--base-ref',
      'HEAD~1',
      ...extra,
    ],
    dir,
  );
}

/**
 * The databases of this gate run still on the server (none, after any run). Other test files run
 * gates on the same server at the same time, so only this run's prefix is looked for.
 */
export async function leftoverDatabases(run: GateRun): Promise<string[]> {
  const prefix = run.report?.environment.database_prefix;
  if (!prefix) throw new Error(`the run wrote no report with its database prefix:\n${explain(run)}`);
  const client = new pg.Client(inject('pgUrl'));
  await client.connect();
  try {
    const result = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [
      `${prefix}_`,
    ]);
    return result.rows.map((r) => r.datname);
  } finally {
    await client.end();
  }
}

export function explain(run: GateRun): string {
  return `exit ${run.code}\n--- stderr ---\n${run.stderr}\n--- stdout ---\n${run.stdout.slice(0, 4000)}`;
}

/**
 * The example's schema and data, seeded once per server as a template database (seeding costs
 * ~4 s of server CPU; a copy of the template a tenth of that). Its name carries a digest of the
 * migrations and the seed, so an edit to either builds a new one. An advisory lock serialises
 * the files that race to build it: the first builds, the others find it ready. Marked a
 * template only once complete, so a half-built one (a run killed mid-seed) is built again.
 */
async function exampleTemplate(): Promise<string> {
  const files = [
    ...fs
      .readdirSync(shop('migrations'))
      .sort()
      .map((f) => shop('migrations', f)),
    shop('seed.sql'),
  ];
  const digest = createHash('sha256');
  for (const file of files) digest.update(fs.readFileSync(file));
  const name = `t_shop_template_${digest.digest('hex').slice(0, 12)}`;
  const admin = new pg.Client(inject('pgUrl'));
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    const ready = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name]);
    if (ready.rowCount) return name;
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    const target = new pg.Client(withDatabase(inject('pgUrl'), name));
    await target.connect();
    try {
      for (const file of files) await target.query(fs.readFileSync(file, 'utf8'));
      await target.query('ANALYZE');
    } finally {
      await target.end();
    }
    await admin.query(`ALTER DATABASE ${name} IS_TEMPLATE true`);
    return name;
  } finally {
    await admin.end();
  }
}

/** A database on the shared server with the example's schema and data (for `replay`). */
export async function exampleDatabase(): Promise<string> {
  const template = await exampleTemplate();
  const name = `t_gate_${randomBytes(5).toString('hex')}`;
  await adminSql(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  return withDatabase(inject('pgUrl'), name);
}
