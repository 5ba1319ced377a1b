// The gate on PRs that break the example app's schema rather than slow it down: a renamed
// column, a failing migration, a base migration edited in place, a migrate command; and the
// inputs around a run (compare on stored replays, a pg_dump seed). What these assert does not
// depend on timing (errors, migrations, the schema each side was built from), so they replay one
// round per side and keep latency out of the verdict with a threshold no replay reaches.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import {
  GATE_TIMEOUT_MS,
  exampleDatabase,
  explain,
  gate,
  git,
  leftoverDatabases,
  prGate,
  repoWithPr,
  root,
  shop,
  tmpDir,
  useGateFixtures,
  variant,
} from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';

useGateFixtures();

/** One round per side, no confirmation, and no latency verdict: what these tests assert is not timing. */
const NO_TIMING = ['--rounds', '1', '--confirm-rounds', '0', ...LATENCY_RULE_OUT_OF_REACH];

describe('gate on the PR variants (base from git)', () => {
  it(
    'rename-column: new errors with SQLSTATE 42703 naming the statement, exit 1',
    async () => {
      const run = await prGate(repoWithPr(variant('rename-column')), NO_TIMING);
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
    'a failing PR migration: regression "the PR\'s migrations fail" with file and line, exit 1',
    async () => {
      const dir = repoWithPr({
        'db/migrations/900_broken.sql': 'ALTER TABLE orders ADD COLUMN note text;\n\nALTER TABLE no_such_table ADD COLUMN x int;\n',
      });
      const run = await prGate(dir, NO_TIMING);
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
      const run = await prGate(dir, NO_TIMING);
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
        [
          'gate',
          '--database-url',
          inject('pgUrl'),
          '--workload',
          'db/workload.wkl',
          '--seed',
          'db/seed.sql',
          '--migrate-command',
          `node migrate.cjs`,
          '--base-ref',
          'HEAD~1',
          ...NO_TIMING,
          '--fail-on-plan-change',
          'seq-scan',
        ],
        dir,
      );
      expect(run.code, explain(run)).toBe(1);
      expect(run.stderr).toContain(`applied ${prFile}`);
      expect(run.report!.migrations.filter((m) => m.side === 'head')).toEqual([
        expect.objectContaining({ name: 'migrate-command', ok: true }),
      ]);
    },
    GATE_TIMEOUT_MS,
  );
});

describe('compare', () => {
  it(
    'applies the gate rules to replay reports: same reports pass, a slowed fingerprint regresses',
    async () => {
      const base = path.join(tmpDir(), 'replay-base.json');
      const replayed = await gate([
        'replay',
        '--database-url',
        await exampleDatabase(),
        '--allow-writes',
        '--workload',
        shop('workload.wkl'),
        '--json',
        base,
      ]);
      expect(replayed.code, explain(replayed)).toBe(0);
      const report = JSON.parse(fs.readFileSync(base, 'utf8')) as {
        fingerprints: { fingerprint: string; samples: number[]; counts: { executed: number } }[];
      };
      expect(report.fingerprints.every((f) => Array.isArray(f.samples))).toBe(true);

      const same = await gate(['compare', '--base', base, base, '--head', base]);
      expect(same.code, explain(same)).toBe(0);
      expect(same.report!.verdict).toBe('pass');

      // The busiest fingerprint, 3× and 2 ms slower in the head "replay" (a multiple, so that
      // the slowdown clears the threshold however slow the replay was on a busy machine).
      const target = [...report.fingerprints].sort((a, b) => b.samples.length - a.samples.length)[0]!;
      target.samples = target.samples.map((us) => us * 3 + 2_000);
      const head = path.join(tmpDir(), 'replay-head.json');
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
      const archive = path.join(tmpDir(), 'seed.pgdump');
      // Data only: the schema comes from the migrations, as with a SQL seed.
      const dumped = spawnSync('pg_dump', ['--format=custom', '--data-only', '--file', archive, '--dbname', await exampleDatabase()], {
        encoding: 'utf8',
      });
      expect(dumped.status, dumped.stderr).toBe(0);
      expect(fs.readFileSync(archive).subarray(0, 5).toString('latin1')).toBe('PGDMP');
      const migrations = shop('migrations', '*.sql');
      const run = await gate([
        'gate',
        '--database-url',
        inject('pgUrl'),
        '--workload',
        shop('workload.wkl'),
        '--seed',
        archive,
        '--base-migrations',
        migrations,
        '--migrations',
        migrations,
        ...NO_TIMING,
      ]);
      expect(run.code, explain(run)).toBe(0);
      expect(run.stderr).toContain(`loading the seed (${archive})`);
      // Without the data, the checkout's inserts would fail their foreign keys (23503); only the
      // workload's two intended unique violations remain, on both sides (listed as varying: a
      // unique violation is judged by its rate).
      expect(new Set(run.report!.comparison!.varying_errors.map((e) => e.sqlstate))).toEqual(new Set(['23505']));
      expect(run.report!.comparison!.shared_errors).toEqual([]);
      expect(run.report!.comparison!.new_errors).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );
});
