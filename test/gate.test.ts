// The gate's verdicts on the example app: identical schemas, a PR that slows it down (a trigger
// that sleeps), a PR that speeds it up, the run's lifecycle and bad input. The PRs that break it in
// other ways (a renamed column, failing or edited migrations, a migrate command) are in
// gate-schemas.test.ts, beside this file, so that both run at once; the dropped index, whose
// regression is a ratio of latencies, in gate-regression.test.ts, which runs alone.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import fs from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { localMajors, startPostgres } from './support/postgres.js';
import {
  GATE_TIMEOUT_MS,
  exampleArgs,
  explain,
  gate,
  git,
  leftoverDatabases,
  prGate,
  repoWithPr,
  shop,
  tmpDir,
  useGateFixtures,
  variant,
} from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';

useGateFixtures();

describe('gate on identical schemas (A/A)', () => {
  it(
    'finds nothing to report: no new error, no plan change, every statement accounted for, a pass',
    async () => {
      // One run, asserting on what cannot flip under load: errors, plans, accounting, coverage.
      // The verdict's latency rule is a statistic; its false-alarm rate is measured by
      // `npm run calibrate` (docs/gate-statistics.md), not here, so it is put out of reach.
      const migrations = shop('migrations', '*.sql');
      const run = await gate([
        ...exampleArgs(shop()),
        '--base-migrations',
        migrations,
        '--migrations',
        migrations,
        ...LATENCY_RULE_OUT_OF_REACH,
      ]);
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
      // No migration on head: it plans with base's statistics, table for table.
      expect(report!.environment.head_statistics).toEqual({ analyzed: [] });
      expect(await leftoverDatabases(run)).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );
});

describe('gate on the PR variants (base from git)', () => {
  it(
    'add-index: pass',
    async () => {
      // The shared server does not load pg_stat_statements: buffers come from the fallback, one
      // EXPLAIN (ANALYZE, BUFFERS) per fingerprint, and every fingerprint must give them, or the
      // buffers rule could not be evaluated and the verdict would be an error.
      // This test is about plans; a latency false alarm on a loaded runner is the calibration
      // bench's business (docs/testing.md, "Timing"), so the latency rule is out of reach.
      // One round: plans do not need more, and its verdict is not the rounds' to make.
      const run = await prGate(repoWithPr(variant('add-index')), [
        '--rounds',
        '1',
        '--confirm-rounds',
        '0',
        '--fail-on-plan-change',
        'seq-scan',
        '--max-buffers-growth',
        '10x',
        ...LATENCY_RULE_OUT_OF_REACH,
      ]);
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
      // A new index needs no fresh sample of its table (only an expression index would).
      expect(run.report!.environment.head_statistics).toEqual({ analyzed: [] });
      expect(run.stdout).toContain('✅ improvement');
    },
    GATE_TIMEOUT_MS,
  );

  it(
    'slow-trigger: a regression on the statement that writes the table',
    async () => {
      // One round: a 50 ms sleep on a statement of ~0.1 ms stands out of a single pair of
      // replays, and is first by its ratio whatever else a busy runner slows.
      const run = await prGate(repoWithPr(variant('slow-trigger')), ['--rounds', '1', '--confirm-rounds', '0']);
      expect(run.code, explain(run)).toBe(1);
      const regressed = run.report!.comparison!.fingerprints.filter((f) => f.regressed);
      expect(regressed.length).toBeGreaterThan(0);
      expect(regressed[0]!.kind).toBe('insert');
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
        [
          'gate',
          '--provision',
          'auto',
          '--workload',
          'db/workload.wkl',
          '--seed',
          'db/seed.sql',
          '--migrations',
          'db/migrations/*.sql',
          '--base-ref',
          'HEAD~1',
        ],
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
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
      expect(open).toBe(false);
      expect(run.report!.verdict).toBe('error');
      expect(git(dir, 'worktree', 'list').split('\n')).toHaveLength(1);
    },
    GATE_TIMEOUT_MS,
  );

  it('--provision docker without a Docker engine: exit 3 saying so', async () => {
    const run = await gate([
      'gate',
      '--provision',
      'docker',
      '--workload',
      shop('workload.wkl'),
      '--migrations',
      shop('migrations', '*.sql'),
      '--base-migrations',
      shop('migrations', '*.sql'),
    ]);
    expect(run.code, explain(run)).toBe(3);
    expect(run.stderr).toMatch(
      /^error: cannot start a docker server: no Docker engine .*; start Docker, or use --provision embedded or local/m,
    );
  });
});

describe('gate on bad input', () => {
  const migrations = () => ['--migrations', shop('migrations', '*.sql'), '--base-migrations', shop('migrations', '*.sql')];

  it('a missing workload file: exit 2, one line naming it', async () => {
    const run = await gate([...exampleArgs(shop()).slice(0, 3), '--workload', path.join(tmpDir(), 'nope.wkl'), ...migrations()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: option --workload: file .*nope\.wkl does not exist/m);
    expect(run.report!.verdict).toBe('error');
  });

  it('a corrupt workload: exit 2', async () => {
    const bad = path.join(tmpDir(), 'corrupt.wkl');
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
    const run = await gate(
      [
        'gate',
        '--database-url',
        inject('pgUrl'),
        '--workload',
        'db/workload.wkl',
        '--migrations',
        'db/migrations/*.sql',
        '--base-ref',
        'deadbeef',
      ],
      dir,
    );
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
    const run = await gate([
      'gate',
      '--database-url',
      `postgres://app:${password}@127.0.0.1:${port}/shop`,
      '--workload',
      shop('workload.wkl'),
      ...migrations(),
    ]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/^error: cannot connect to 127\.0\.0\.1:\d+\/shop as app: .*nothing is listening there/m);
    expect(run.stdout + run.stderr + JSON.stringify(run.report)).not.toContain(password);
  });

  it('a wrong password: exit 3 naming the fix, password never printed', async () => {
    const server = await startPostgres({ password: `right-${randomBytes(6).toString('hex')}` });
    try {
      const wrong = `Wr0ng-${randomBytes(6).toString('hex')}`;
      const run = await gate([
        'gate',
        '--database-url',
        `postgres://postgres:${wrong}@127.0.0.1:${server.port}/postgres`,
        '--workload',
        shop('workload.wkl'),
        ...migrations(),
      ]);
      expect(run.code).toBe(3);
      expect(run.stderr).toMatch(/^error: cannot connect to .*password authentication failed.*check the user name and password/m);
      expect(run.stdout + run.stderr + JSON.stringify(run.report)).not.toContain(wrong);
    } finally {
      await server.stop();
    }
  });

  it('a failing base migration: exit 3 naming file and line', async () => {
    const dir = fs.mkdtempSync(path.join(tmpDir(), 'broken-base-'));
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
