// `capacity` end to end where nothing compares throughput: an A/A at the widest threshold, the
// per-class factors, an existing database swept as it is, bad input. Counts and structure do not
// move with load, so these run beside the other files; the sweeps whose assertions are about
// throughput are in capacity.test.ts, which runs alone.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { CapacityReport } from '../src/capacity/report-types.js';
import { useCapacityServer } from './support/capacity-run.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliPath = path.join(root, 'dist', 'cli.js');
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
/** A sweep of both sides takes under a minute here; room for a slow runner. */
const SWEEP_TIMEOUT_MS = 300_000;

const fixture = useCapacityServer();
const { capacity } = fixture;

const base = ['--base-migrations', shop('migrations', '*.sql')];

describe('capacity on the example shop: counts and structure', () => {
  it(
    'A/A (head = base) passes',
    async () => {
      // The widest threshold the option takes: what this checks is that identical schemas give a
      // comparison and a pass; how often the 15 % default alarms on identical schemas is a property
      // of the rule under load, measured over many runs (docs/capacity.md), not something one run
      // can show. Three steps are enough for a knee and a plateau; the full sweep is capacity.test.ts's.
      const run = await capacity('a-a', [
        ...base,
        '--migrations',
        shop('migrations', '*.sql'),
        '--connections',
        '1,4,16',
        '--capacity-threshold',
        '99%',
      ]);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.report.verdict).toBe('pass');
      expect(run.report.comparison!.throughput_change).not.toBeNull();
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'per-class factors and --allow-writes: every step replays the writes on a fresh copy, with a warning',
    async () => {
      // The shop's 40 sessions are 30 mixed and 10 transactional (checkouts): leave the checkouts out.
      const run = await capacity('writes', [
        '--migrations',
        shop('migrations', '*.sql'),
        '--connections',
        '1,2,4',
        '--scale',
        '2',
        '--scale-transactional',
        '0',
        '--allow-writes',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const { report } = run;
      expect(report.settings.read_only).toBe(false);
      expect(report.settings.class_scale).toEqual({ scaleTransactional: 0 });
      expect(report.warnings.join('\n')).toMatch(/writes were replayed.*state multiplies/);
      for (const step of report.sides[0]!.steps) {
        expect(step.sessions).toBe(60);
        expect(step.skipped_writes).toBe(0);
        expect(step.refused_sessions).toBe(0);
      }
      // Fresh copies: every step sees the same data, so the same statements succeed and fail.
      const [a, b, c] = report.sides[0]!.steps;
      expect(b!.ok).toBe(a!.ok);
      expect(c!.ok).toBe(a!.ok);
      expect(run.stdout).toContain('writes included');
    },
    SWEEP_TIMEOUT_MS,
  );

  it('plain replay takes the per-class factors too', async () => {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: fixture.url });
    await client.connect();
    await client.query('CREATE DATABASE class_scale');
    await client.end();
    const json = path.join(fixture.tmp, 'replay.json');
    const url = fixture.url.replace(/\/postgres$/, '/class_scale');
    const replay = spawnSync(
      process.execPath,
      [
        cliPath,
        'replay',
        '--database-url',
        url,
        '--workload',
        shop('workload.wkl'),
        '--read-only',
        '--speed',
        '0',
        '--scale',
        '3',
        '--scale-mixed',
        '0',
        '--json',
        json,
      ],
      { encoding: 'utf8' },
    );
    // An empty database: the statements fail (SQL errors are results), the plan is what counts.
    expect(replay.status, replay.stderr).toBe(0);
    const report = JSON.parse(fs.readFileSync(json, 'utf8')) as { sessions_planned: number; sessions_excluded: number };
    expect(report.sessions_planned).toBe(30);
    expect(report.sessions_excluded).toBe(30);
  });

  it(
    'an existing database is swept as it is, read-only, and the run leaves no database behind',
    async () => {
      const pg = (await import('pg')).default;
      const admin = new pg.Client({ connectionString: fixture.url });
      await admin.connect();
      await admin.query('CREATE DATABASE shop_as_is');
      const url = fixture.url.replace(/\/postgres$/, '/shop_as_is');
      const shopDb = new pg.Client({ connectionString: url });
      await shopDb.connect();
      for (const file of fs.readdirSync(shop('migrations')).sort()) await shopDb.query(fs.readFileSync(shop('migrations', file), 'utf8'));
      await shopDb.query(fs.readFileSync(shop('seed.sql'), 'utf8'));
      const orders = await shopDb.query('SELECT count(*)::int AS n FROM orders');
      await shopDb.end();
      const json = path.join(fixture.tmp, 'as-is.json');
      const sweep = spawnSync(
        process.execPath,
        [cliPath, 'capacity', '--database-url', url, '--workload', shop('workload.wkl'), '--connections', '1,2,4', '--json', json],
        { encoding: 'utf8' },
      );
      expect(sweep.status, sweep.stderr).toBe(0);
      const report = JSON.parse(fs.readFileSync(json, 'utf8')) as CapacityReport;
      expect(report.sides.map((s) => s.side)).toEqual(['database']);
      expect(report.sides[0]!.steps.every((s) => s.ok > 0 && s.skipped_writes > 0)).toBe(true);
      // Read-only: the data is as it was; and no copies or templates were left on the server.
      const after = new pg.Client({ connectionString: url });
      await after.connect();
      expect((await after.query('SELECT count(*)::int AS n FROM orders')).rows[0].n).toBe(orders.rows[0].n);
      await after.end();
      const left = await admin.query("SELECT datname FROM pg_database WHERE datname LIKE 'pgc\\_%'");
      await admin.end();
      expect(left.rows).toEqual([]);
    },
    SWEEP_TIMEOUT_MS,
  );

  it('bad input is one line naming the fix (exit 2), before any server work', () => {
    const bad = spawnSync(
      process.execPath,
      [cliPath, 'capacity', '--workload', shop('workload.wkl'), '--database-url', fixture.url, '--allow-writes'],
      { encoding: 'utf8' },
    );
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/--allow-writes: needs a schema to copy/);
  });
});
