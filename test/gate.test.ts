// The gate end to end, as users run it: the bundled dist/cli.js in a child process against the
// shared test server (--database-url; the gate creates and drops databases of its own), on the
// example app (examples/shop) and its PR variants. Variants run from a throwaway git
// repository whose HEAD~1 is the base commit, so the base schema comes from a real
// `git worktree` of that commit, as on a pull request.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { GateReport } from '../src/gate/report-types.js';
import { localMajors, startPostgres } from './support/postgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliPath = path.join(root, 'dist', 'cli.js');
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
/** A gate run here takes well under a minute; ten of them in one test need room. */
const GATE_TIMEOUT_MS = 180_000;

let tmp: string;

beforeAll(() => {
  const build = spawnSync('npm', ['run', '--silent', 'build:cli'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build:cli failed:\n${build.stdout}${build.stderr}`);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-gate-'));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

interface GateRun {
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
function gate(args: string[], cwd = root, onStderr?: (soFar: string, child: ReturnType<typeof spawn>) => void): Promise<GateRun> {
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
function exampleArgs(dir: string): string[] {
  return ['gate', '--database-url', inject('pgUrl'), '--workload', path.join(dir, 'workload.wkl'), '--seed', path.join(dir, 'seed.sql')];
}

function git(cwd: string, ...args: string[]): string {
  const run = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * A repository whose first commit is the example app (db/migrations, db/seed.sql,
 * db/workload.wkl) and whose second adds the files given: the PR.
 */
function repoWithPr(prFiles: Record<string, string>, baseFiles: Record<string, string> = {}): string {
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
function variant(name: string): Record<string, string> {
  const dir = shop('variants', name);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.sql'));
  expect(files).toHaveLength(1);
  return { [path.join('db', 'migrations', files[0]!)]: fs.readFileSync(path.join(dir, files[0]!), 'utf8') };
}

function prGate(dir: string, extra: string[] = []): Promise<GateRun> {
  return gate(
    ['gate', '--database-url', inject('pgUrl'), '--workload', 'db/workload.wkl', '--seed', 'db/seed.sql', '--migrations', 'db/migrations/*.sql', '--base-ref', 'HEAD~1', ...extra],
    dir,
  );
}

/**
 * The databases of this gate run still on the server (none, after any run). Other test files run
 * gates on the same server at the same time, so only this run's prefix is looked for.
 */
async function leftoverDatabases(run: GateRun): Promise<string[]> {
  const prefix = run.report?.environment.database_prefix;
  if (!prefix) throw new Error(`the run wrote no report with its database prefix:\n${explain(run)}`);
  const client = new pg.Client(inject('pgUrl'));
  await client.connect();
  try {
    const result = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`${prefix}_`]);
    return result.rows.map((r) => r.datname);
  } finally {
    await client.end();
  }
}

function explain(run: GateRun): string {
  return `exit ${run.code}\n--- stderr ---\n${run.stderr}\n--- stdout ---\n${run.stdout.slice(0, 4000)}`;
}

describe('gate on identical schemas (A/A)', () => {
  it(
    'finds nothing to report: no new error, no plan change, every statement accounted for, a pass',
    async () => {
      // One run, asserting on what cannot flip under load: errors, plans, accounting, coverage.
      // The verdict's latency rule is a statistic; its false-alarm rate is measured by
      // `npm run calibrate` (docs/gate-statistics.md), not here. A 50 % threshold keeps this
      // run's pass out of reach of a loaded runner (docs/testing.md, "Timing").
      const migrations = shop('migrations', '*.sql');
      const run = await gate([...exampleArgs(shop()), '--base-migrations', migrations, '--migrations', migrations, '--p95-threshold', '50%']);
      const report = run.report;
      expect(report, explain(run)).toBeDefined();
      expect(run.code, explain(run)).toBe(0);
      expect(report!.verdict).toBe('pass');
      expect(report!.comparison!.new_errors).toEqual([]);
      expect(report!.comparison!.fingerprints.filter((f) => f.regressed)).toEqual([]);
      // Three rounds and the noise replay; two confirmation rounds when a regression was
      // suspected (and then not confirmed: the verdict above is a pass).
      const sides = report!.replays.map((r) => r.side);
      const planned = ['base', 'head', 'noise', 'head', 'base', 'base', 'head'];
      expect([planned, [...planned, 'head', 'base', 'base', 'head']]).toContainEqual(sides);
      // Identical schemas, identical plans: every fingerprint EXPLAIN can plan was probed on
      // both sides and none changed.
      const plans = report!.plans!;
      expect(plans.error).toBeNull();
      expect(plans.failures.filter((f) => f.stage === 'explain')).toEqual([]);
      expect(plans.fingerprints.length).toBeGreaterThan(20);
      expect(plans.fingerprints.filter((f) => f.changed).map((f) => f.change)).toEqual([]);
      // Everything replayed on both sides is accounted for; the sample's two expected skips
      // (a sign-up whose email exists) are the only statements that did not run.
      for (const side of ['base', 'head'] as const) {
        const a = report!.accounting![side];
        expect(a.executed + a.skipped + a.not_executed).toBe(a.captured);
        expect(a.not_executed).toBe(0);
        expect(a.sessions_completed).toBe(a.sessions_planned);
        expect(report!.coverage![side].skipped_by_reason).toEqual({ transaction_aborted: 2 * a.replays });
      }
      expect(report!.coverage!.sufficient).toBe(true);
      expect(await leftoverDatabases(run)).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );
});

describe('gate on the PR variants (base from git)', () => {
  it(
    'drop-index: a regression, the query that lost its index named first',
    async () => {
      const run = await prGate(repoWithPr(variant('drop-index')));
      expect(run.code, explain(run)).toBe(1);
      const report = run.report!;
      expect(report.verdict).toBe('regression');
      const first = report.comparison!.fingerprints[0]!;
      expect(first.regressed).toBe(true);
      expect(first.ratio).toBeGreaterThan(2);
      // Suspected after 3 rounds, then confirmed over 2 more: the verdict is on 5 rounds.
      expect(report.environment.rounds).toBe(5);
      expect(report.replays.filter((r) => r.round > 3).map((r) => r.side)).toEqual(['head', 'base', 'base', 'head']);
      expect(report.warnings.join('\n')).toMatch(/2 confirmation rounds were replayed and the verdict is on all 5: \d+ confirmed/);
      // The plan change, on exactly the fingerprint that lost its index.
      const changed = report.plans!.fingerprints.filter((f) => f.changed);
      expect(changed.map((f) => [f.fingerprint, f.change])).toEqual([[first.fingerprint, 'orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan']]);
      expect(changed[0]!.buffers_ratio).toBeGreaterThan(10);
      expect(report.environment.base.sha).toMatch(/^[0-9a-f]{40}$/);
      expect(report.migrations.filter((m) => m.side === 'head').map((m) => m.name)).toHaveLength(1);
      expect(run.stdout).toContain(first.fingerprint);
      expect(await leftoverDatabases(run)).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'rename-column: new errors with SQLSTATE 42703 naming the statement, exit 1',
    async () => {
      const run = await prGate(repoWithPr(variant('rename-column')));
      expect(run.code, explain(run)).toBe(1);
      const report = run.report!;
      expect(report.verdict).toBe('regression');
      const errors = report.comparison!.new_errors;
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((e) => e.sqlstate === '42703')).toBe(true);
      expect(errors[0]!.normalized.length).toBeGreaterThan(0);
      expect(errors[0]!.head_count).toBeGreaterThan(0);
      expect(run.stdout).toContain('42703');
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'add-index: pass',
    async () => {
      // The shared server does not load pg_stat_statements: buffers come from the fallback, one
      // EXPLAIN (ANALYZE, BUFFERS) per fingerprint, and every fingerprint must give them, or the
      // buffers rule could not be evaluated and the verdict would be an error.
      // A 50 % threshold: this test is about plans; a latency false alarm on a loaded runner is
      // the calibration bench's business (docs/testing.md, "Timing").
      const run = await prGate(repoWithPr(variant('add-index')), ['--fail-on-plan-change', 'seq-scan', '--max-buffers-growth', '10x', '--p95-threshold', '50%']);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.verdict).toBe('pass');
      expect(run.report!.plans!.stats.source).toBe('explain-analyze');
      expect(run.report!.plans!.failures).toEqual([]);
      // The partial covering index serves the daily revenue report and nothing else
      // (examples/shop/README.md): exactly one plan change, and it is an improvement.
      const changed = run.report!.plans!.fingerprints.filter((f) => f.changed);
      expect(changed.map((f) => [f.change, f.assessment])).toEqual([
        ['orders: Index Scan using orders_created_idx → Index Only Scan using orders_paid_created_idx', 'improvement'],
      ]);
      expect(changed[0]!.normalized).toMatch(/^SELECT date_trunc\(/);
      expect(run.stdout).toContain('✅ improvement');
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'slow-trigger: a regression on the statement that writes the table',
    async () => {
      const run = await prGate(repoWithPr(variant('slow-trigger')));
      expect(run.code, explain(run)).toBe(1);
      const regressed = run.report!.comparison!.fingerprints.filter((f) => f.regressed);
      expect(regressed.length).toBeGreaterThan(0);
      expect(regressed[0]!.kind).toBe('insert');
    },
    GATE_TIMEOUT_MS,
  );

  it(
    "a failing PR migration: regression \"the PR's migrations fail\" with file and line, exit 1",
    async () => {
      const dir = repoWithPr({ 'db/migrations/900_broken.sql': 'ALTER TABLE orders ADD COLUMN note text;\n\nALTER TABLE no_such_table ADD COLUMN x int;\n' });
      const run = await prGate(dir);
      expect(run.code, explain(run)).toBe(1);
      expect(run.report!.verdict).toBe('regression');
      expect(run.report!.migration_failure).toMatchObject({ side: 'head', name: 'db/migrations/900_broken.sql', line: 3 });
      expect(run.report!.migration_failure!.message).toMatch(/no_such_table/);
      expect(run.report!.headline).toMatch(/the PR's migrations fail/);
      expect(await leftoverDatabases(run)).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'a base migration edited in place: head is built from scratch, and the report says why',
    async () => {
      const dir = repoWithPr({});
      const file = path.join(dir, 'db', 'migrations', fs.readdirSync(path.join(dir, 'db', 'migrations')).sort()[0]!);
      fs.appendFileSync(file, '\n-- edited after it was applied\n');
      git(dir, 'commit', '--quiet', '-am', 'edit');
      const run = await prGate(dir);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.environment.head_from_scratch).toMatch(/edited in place/);
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'migrate-command: base migrated in the base commit, head by the same command here',
    async () => {
      // A migration tool in miniature, in both commits: applies db/migrations/*.sql not yet recorded in a table.
      const tool = [
        `const pg = require(${JSON.stringify(path.join(root, 'node_modules', 'pg'))});`,
        "const fs = require('fs');",
        '(async () => {',
        '  const c = new pg.Client(process.env.DATABASE_URL); await c.connect();',
        "  await c.query('CREATE TABLE IF NOT EXISTS applied (name text primary key)');",
        "  const done = new Set((await c.query('SELECT name FROM applied')).rows.map((r) => r.name));",
        "  for (const f of fs.readdirSync('db/migrations').sort()) {",
        '    if (done.has(f)) continue;',
        "    await c.query(fs.readFileSync('db/migrations/' + f, 'utf8'));",
        "    await c.query('INSERT INTO applied VALUES ($1)', [f]); console.log('applied ' + f);",
        '  }',
        '  await c.end();',
        '})().catch((e) => { console.error(e.message); process.exit(1); });',
      ].join('\n');
      const pr = variant('drop-index');
      const prFile = path.basename(Object.keys(pr)[0]!);
      const dir = repoWithPr(pr, { 'migrate.cjs': tool });
      const run = await gate(
        ['gate', '--database-url', inject('pgUrl'), '--workload', 'db/workload.wkl', '--seed', 'db/seed.sql', '--migrate-command', `node migrate.cjs`, '--base-ref', 'HEAD~1'],
        dir,
      );
      expect(run.code, explain(run)).toBe(1);
      expect(run.stderr).toContain(`applied ${prFile}`);
      expect(run.report!.migrations.filter((m) => m.side === 'head')).toEqual([expect.objectContaining({ name: 'migrate-command', ok: true })]);
    },
    GATE_TIMEOUT_MS,
  );
});

describe('gate lifecycle', () => {
  it(
    'on SIGINT mid-round: exit 130, the server it started stopped, the base worktree removed',
    async () => {
      const dir = repoWithPr(variant('add-index'));
      let signalled = false;
      // auto picks the machine's PostgreSQL here when it has one (else the embedded one).
      const run = await gate(
        ['gate', '--provision', 'auto', '--workload', 'db/workload.wkl', '--seed', 'db/seed.sql', '--migrations', 'db/migrations/*.sql', '--base-ref', 'HEAD~1'],
        dir,
        (soFar, child) => {
          if (!signalled && soFar.includes('replay 2 of 7')) {
            signalled = true;
            setTimeout(() => child.kill('SIGINT'), 500);
          }
        },
      );
      expect(signalled, explain(run)).toBe(true);
      expect(run.code, explain(run)).toBe(130);
      expect(run.stderr).toMatch(new RegExp(`provision auto: using ${localMajors().length > 0 ? 'local' : 'embedded'}`));
      expect(run.stderr).toContain('stopping the server and removing its data directory');
      const port = Number(/started PostgreSQL .* on 127\.0\.0\.1:(\d+)/.exec(run.stderr)?.[1]);
      const open = await new Promise<boolean>((resolve) => {
        const socket = net.connect({ host: '127.0.0.1', port });
        socket.once('connect', () => (socket.destroy(), resolve(true)));
        socket.once('error', () => resolve(false));
      });
      expect(open).toBe(false);
      expect(run.report!.verdict).toBe('error');
      expect(git(dir, 'worktree', 'list').split('\n')).toHaveLength(1);
    },
    GATE_TIMEOUT_MS,
  );

  it('--provision docker without a Docker engine: exit 3 saying so', async () => {
    const run = await gate(['gate', '--provision', 'docker', '--workload', shop('workload.wkl'), '--migrations', shop('migrations', '*.sql'), '--base-migrations', shop('migrations', '*.sql')]);
    expect(run.code, explain(run)).toBe(3);
    expect(run.stderr).toMatch(/^error: cannot start a docker server: no Docker engine .*; start Docker, or use --provision embedded or local/m);
  });
});

describe('compare', () => {
  it(
    'applies the gate rules to replay reports: same reports pass, a slowed fingerprint regresses',
    async () => {
      const base = path.join(tmp, 'replay-base.json');
      const replayed = await gate(['replay', '--database-url', await exampleDatabase(), '--workload', shop('workload.wkl'), '--json', base]);
      expect(replayed.code, explain(replayed)).toBe(0);
      const report = JSON.parse(fs.readFileSync(base, 'utf8')) as { fingerprints: { fingerprint: string; samples: number[]; counts: { executed: number } }[] };
      expect(report.fingerprints.every((f) => Array.isArray(f.samples))).toBe(true);

      const same = await gate(['compare', '--base', base, base, '--head', base]);
      expect(same.code, explain(same)).toBe(0);
      expect(same.report!.verdict).toBe('pass');

      // The busiest fingerprint, 3× and 2 ms slower in the head "replay" (a multiple, so that
      // the slowdown clears the threshold however slow the replay was on a busy machine).
      const target = [...report.fingerprints].sort((a, b) => b.samples.length - a.samples.length)[0]!;
      target.samples = target.samples.map((us) => us * 3 + 2_000);
      const head = path.join(tmp, 'replay-head.json');
      fs.writeFileSync(head, JSON.stringify(report));
      const slower = await gate(['compare', '--base', base, '--head', head]);
      expect(slower.code, explain(slower)).toBe(1);
      expect(slower.report!.comparison!.fingerprints[0]).toMatchObject({ fingerprint: target.fingerprint, regressed: true });

      const bad = await gate(['compare', '--base', shop('workload.wkl'), '--head', head]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^error: option --base: cannot read .*workload\.wkl as JSON/m);
    },
    GATE_TIMEOUT_MS,
  );
});

describe('seed from a pg_dump archive', () => {
  it(
    'restores a custom-format archive (detected by its header) into base with pg_restore',
    async () => {
      const archive = path.join(tmp, 'seed.pgdump');
      // Data only: the schema comes from the migrations, as with a SQL seed.
      const dumped = spawnSync('pg_dump', ['--format=custom', '--data-only', '--file', archive, '--dbname', await exampleDatabase()], { encoding: 'utf8' });
      expect(dumped.status, dumped.stderr).toBe(0);
      expect(fs.readFileSync(archive).subarray(0, 5).toString('latin1')).toBe('PGDMP');
      const migrations = shop('migrations', '*.sql');
      const run = await gate(['gate', '--database-url', inject('pgUrl'), '--workload', shop('workload.wkl'), '--seed', archive, '--base-migrations', migrations, '--migrations', migrations, '--rounds', '1']);
      expect(run.code, explain(run)).toBe(0);
      expect(run.stderr).toContain(`loading the seed (${archive})`);
      // Without the data, the checkout's inserts would fail their foreign keys (23503); only the
      // workload's two intended unique violations remain.
      expect(new Set(run.report!.comparison!.shared_errors.map((e) => e.sqlstate))).toEqual(new Set(['23505']));
      expect(run.report!.comparison!.new_errors).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );
});

/** A database on the shared server with the example's schema and data (for `replay`). */
async function exampleDatabase(): Promise<string> {
  const name = `t_gate_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client(inject('pgUrl'));
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(inject('pgUrl'));
  url.pathname = `/${name}`;
  const target = new pg.Client(url.toString());
  await target.connect();
  try {
    for (const file of fs.readdirSync(shop('migrations')).sort()) await target.query(fs.readFileSync(shop('migrations', file), 'utf8'));
    await target.query(fs.readFileSync(shop('seed.sql'), 'utf8'));
    await target.query('ANALYZE');
  } finally {
    await target.end();
  }
  return url.toString();
}

describe('gate on bad input', () => {
  const migrations = () => ['--migrations', shop('migrations', '*.sql'), '--base-migrations', shop('migrations', '*.sql')];

  it('a missing workload file: exit 2, one line naming it', async () => {
    const run = await gate([...exampleArgs(shop()).slice(0, 3), '--workload', path.join(tmp, 'nope.wkl'), ...migrations()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: option --workload: file .*nope\.wkl does not exist/m);
    expect(run.report!.verdict).toBe('error');
  });

  it('a corrupt workload: exit 2', async () => {
    const bad = path.join(tmp, 'corrupt.wkl');
    fs.writeFileSync(bad, Buffer.from([0x93, 0x01, 0x02, 0xff, 0xff]));
    const run = await gate([...exampleArgs(shop()).slice(0, 3), '--workload', bad, ...migrations()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: .*corrupt\.wkl/m);
  });

  it('a migration glob that matches nothing: exit 2', async () => {
    const run = await gate([...exampleArgs(shop()), '--migrations', 'no/such/dir/*.sql', '--base-migrations', shop('migrations', '*.sql')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: option --migrations: 'no\/such\/dir\/\*\.sql' matches no file/m);
    expect(await leftoverDatabases(run)).toEqual([]);
  });

  it('no base schema outside a pull request: exit 2 saying what to give', async () => {
    const run = await gate([...exampleArgs(shop()), '--migrations', shop('migrations', '*.sql')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: no base schema: give --base-ref/m);
  });

  it('a base ref the clone does not have: exit 2 with the fetch-depth hint', async () => {
    const dir = repoWithPr({});
    const run = await gate(['gate', '--database-url', inject('pgUrl'), '--workload', 'db/workload.wkl', '--migrations', 'db/migrations/*.sql', '--base-ref', 'deadbeef'], dir);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/'deadbeef' is not a commit in this clone; fetch it first \(actions\/checkout with fetch-depth: 0/);
  });

  it('an unreachable --database-url: exit 3, password never printed', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (server.address() as net.AddressInfo).port;
        server.close(() => resolve(p));
      });
    });
    const password = `Sekr1t-${randomBytes(6).toString('hex')}`;
    const run = await gate(['gate', '--database-url', `postgres://app:${password}@127.0.0.1:${port}/shop`, '--workload', shop('workload.wkl'), ...migrations()]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/^error: cannot connect to 127\.0\.0\.1:\d+\/shop as app: .*nothing is listening there/m);
    expect(run.stdout + run.stderr + JSON.stringify(run.report)).not.toContain(password);
  });

  it('a wrong password: exit 3 naming the fix, password never printed', async () => {
    const server = await startPostgres({ password: `right-${randomBytes(6).toString('hex')}` });
    try {
      const wrong = `Wr0ng-${randomBytes(6).toString('hex')}`;
      const run = await gate(['gate', '--database-url', `postgres://postgres:${wrong}@127.0.0.1:${server.port}/postgres`, '--workload', shop('workload.wkl'), ...migrations()]);
      expect(run.code).toBe(3);
      expect(run.stderr).toMatch(/^error: cannot connect to .*password authentication failed.*check the user name and password/m);
      expect(run.stdout + run.stderr + JSON.stringify(run.report)).not.toContain(wrong);
    } finally {
      await server.stop();
    }
  });

  it('a failing base migration: exit 3 naming file and line', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'broken-base-'));
    fs.writeFileSync(path.join(dir, '001.sql'), 'CREATE TABLE t (id int);\nCREATE TABLE t (id int);\n');
    const run = await gate([...exampleArgs(shop()), '--migrations', path.join(dir, '*.sql'), '--base-migrations', path.join(dir, '*.sql')]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/^error: the base schema cannot be built: migration file .*001\.sql, line 2: relation "t" already exists/m);
    expect(run.report!.migration_failure).toMatchObject({ side: 'base', line: 2 });
    expect(await leftoverDatabases(run)).toEqual([]);
  });

  it('invalid options: exit 2 naming the option, before anything starts', async () => {
    const run = await gate([...exampleArgs(shop()), ...migrations(), '--p95-threshold', 'a lot']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: option --p95-threshold: expected a percentage/m);
  });
});
