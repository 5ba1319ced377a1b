// pg-retest's pipeline config (.pg-retest.toml) without a server: every section and key read with
// pg-retest's types and defaults, unknown keys as warnings, wrong values as one line naming the
// key, connection strings turned into URLs without ever being repeated, and how each key is
// understood in a single-target run and in A/B mode.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'smol-toml';
import { InputError } from '../src/exit-codes.js';
import { pipelineConfigFrom } from '../src/pg-retest-config/config.js';
import { conninfoToUrl } from '../src/pg-retest-config/conninfo.js';
import { checkLimits, sideFigures } from '../src/pg-retest-config/limits.js';
import { majorOfImage, planRun } from '../src/pg-retest-config/plan.js';
import { allowRegressions } from '../src/pg-retest-config/variants.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { parseReport } from '../src/report/index.js';

const read = (toml: string) => pipelineConfigFrom(parse(toml), '.pg-retest.toml');

function rejected(toml: string): string {
  try {
    planRun(read(toml));
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
}

/** A config as pg-retest's docs write one, every section used. */
const FULL = `
[capture]
source_log = "logs/postgresql.csv"
source_type = "pg-csv"
source_host = "db-primary"
pg_version = "16.4"
mask_values = false

[provision]
backend = "docker"
image = "postgres:16"
restore_from = "backup.sql"
port = 0

[replay]
speed = 2.0
read_only = false
scale = 2
stagger_ms = 500
scale_analytical = 0

[thresholds]
p95_max_ms = 50.0
p99_max_ms = 200.0
error_rate_max_pct = 1.0
regression_threshold_pct = 20.0
regression_max_count = 5

[output]
json_report = "report.json"
junit_xml = "results.xml"
`;

describe('reading .pg-retest.toml', () => {
  it('reads every section and key with its type, and fills in pg-retest defaults', () => {
    const c = read(FULL);
    expect(c.capture).toMatchObject({
      sourceLog: 'logs/postgresql.csv',
      sourceType: 'pg-csv',
      sourceHost: 'db-primary',
      pgVersion: '16.4',
      maskValues: false,
    });
    expect(c.provision).toEqual({
      backend: 'docker',
      image: 'postgres:16',
      restoreFrom: 'backup.sql',
      connectionString: undefined,
      port: 0,
    });
    expect(c.replay).toMatchObject({ speed: 2, readOnly: false, scale: 2, staggerMs: 500, scaleAnalytical: 0 });
    expect(c.thresholds).toEqual({ p95MaxMs: 50, p99MaxMs: 200, errorRateMaxPct: 1, regressionThresholdPct: 20, regressionMaxCount: 5 });
    expect(c.output).toEqual({ jsonReport: 'report.json', junitXml: 'results.xml' });
    expect(c.warnings).toEqual([]);
    const d = read('[capture]\nworkload = "w.wkl"\n');
    expect(d.provision).toBeNull();
    expect(d.replay).toMatchObject({ speed: 1, readOnly: false, scale: 1, staggerMs: 0 });
    expect(d.thresholds.regressionThresholdPct).toBe(20);
  });

  it('warns about unknown keys and sections instead of failing', () => {
    const c = read('[capture]\nworkload = "w.wkl"\n[replay]\nmax_connections = 5\n[tuning]\nx = 1\n');
    expect(c.warnings).toEqual([
      '[replay] max_connections: unknown key, ignored (pg-retest ignores it too); known keys: speed, read_only, allow_writes, allow_server_wide, scale, stagger_ms, scale_analytical, scale_transactional, scale_mixed, scale_bulk, target',
      "config .pg-retest.toml: unknown section 'tuning' is ignored (pg-retest ignores it too); known sections: [capture], [provision], [replay], [thresholds], [output], [variants]",
    ]);
  });

  it('a wrong value is one line naming the key; a connection string is never repeated', () => {
    const cases: [string, string][] = [
      ['[replay]\nspeed = "fast"', '[replay] speed: expected a number ≥ 0 (1 = captured timing, 0 = as fast as possible), got "fast"'],
      ['[replay]\nscale = 1.5', '[replay] scale: expected a whole number of copies, 1 or more, got 1.5'],
      ['[provision]\nport = 70000', '[provision] port: expected a port number from 0 (any free port) to 65535, got 70000'],
      ['[thresholds]\nerror_rate_max_pct = 250', '[thresholds] error_rate_max_pct: expected a percentage from 0 to 100, got 250'],
      ['[capture]\nmask_values = "yes"', '[capture] mask_values: expected true or false, got "yes"'],
      ['[capture]\nsource_type = "oracle"', '[capture] source_type: expected one of pg-csv, mysql-slow, rds, got "oracle"'],
      ['replay = 3', '[replay]: expected a section ([replay] followed by its keys), got 3'],
      ['[[variants]]\nlabel = "a"', '[[variants]] #1 target: is required'],
      [
        '[[variants]]\nlabel = "a"\ntarget = 5',
        '[[variants]] #1 target: expected a connection string (host=… port=… user=… dbname=…, or a postgres:// URL), got a number',
      ],
    ];
    for (const [toml, message] of cases) expect(rejected(toml)).toContain(`config .pg-retest.toml: ${message}`);
    const secret = rejected('[capture]\nworkload = "w.wkl"\n[replay]\ntarget = "host=db password=hunter2 port=x"');
    expect(secret).toBe('config .pg-retest.toml: [replay] target: port= must be a number');
    expect(rejected('[capture]\nworkload = "w.wkl"\n[replay]\ntarget = "password=hunter2"')).not.toContain('hunter2');
  });
});

describe('connection strings', () => {
  it('libpq key=value strings become postgres:// URLs; URLs stay as they are', () => {
    expect(conninfoToUrl('host=127.0.0.1 port=5433 user=app password=s3cr=t dbname=shop sslmode=disable')).toBe(
      'postgres://app:s3cr%3Dt@127.0.0.1:5433/shop?sslmode=disable',
    );
    expect(conninfoToUrl("host=db user='my user' password='it\\'s' dbname=x")).toBe("postgres://my%20user:it's@db/x");
    expect(conninfoToUrl('host=/var/run/postgresql dbname=app user=app')).toBe('postgres://app@%2Fvar%2Frun%2Fpostgresql/app');
    expect(conninfoToUrl('postgresql://u:p@h:1/d')).toBe('postgresql://u:p@h:1/d');
    expect(() => conninfoToUrl('dbname=x')).toThrow(/no host=/);
  });

  it('the image names the major', () => {
    expect(
      [
        'postgres:16',
        'postgres:16.4-alpine',
        'docker.io/library/postgres:17',
        'postgis/postgis:15-3.4',
        'timescale/timescaledb:latest-pg14',
        'postgres',
        'postgres:latest',
      ].map(majorOfImage),
    ).toEqual([16, 16, 17, 15, 14, undefined, undefined]);
  });
});

describe('what a config asks for', () => {
  it('single target: the target wins over [provision], regressions cannot be judged without a baseline', () => {
    const plan = planRun(read(FULL.replace('[replay]\n', '[replay]\ntarget = "host=staging user=app dbname=shop"\n')));
    expect(plan.mode).toBe('single-target');
    expect(plan.target).toEqual({ kind: 'url', url: 'postgres://app@staging/shop', key: 'replay.target' });
    expect(plan.notes.get('provision.restore_from')).toBe('not used: [replay] target is set, and pg-retest ignores [provision] then too');
    expect(plan.notes.get('thresholds.regression_max_count')).toMatch(/^not evaluated: a single target has no baseline replay/);
    expect(plan.workload).toEqual({ kind: 'capture', log: 'logs/postgresql.csv', sourceHost: 'db-primary', pgVersion: '16.4' });
  });

  it('docker backend: the image gives the major; restore_from goes with it', () => {
    const plan = planRun(read(FULL));
    expect(plan.target).toEqual({ kind: 'start', backend: 'docker', image: 'postgres:16', major: 16, restoreFrom: 'backup.sql' });
    expect(plan.limits).toEqual({ p95MaxMs: 50, p99MaxMs: 200, errorRateMaxPct: 1 });
  });

  it('A/B: two variants are gated against the first; regression_threshold_pct is the p95 threshold', () => {
    const plan = planRun(
      read(
        `${FULL}\n[[variants]]\nlabel = "main"\ntarget = "host=db dbname=main"\n[[variants]]\nlabel = "pr"\ntarget = "postgres://db/pr"\n`,
      ),
    );
    expect(plan.mode).toBe('variants');
    expect(plan.variants).toEqual([
      { label: 'main', url: 'postgres://db/main' },
      { label: 'pr', url: 'postgres://db/pr' },
    ]);
    expect(plan.p95Threshold).toBe(0.2);
    expect(plan.regressionMaxCount).toBe(5);
    expect(plan.notes.get('provision.backend')).toMatch(/^not used: with \[\[variants\]\]/);
    expect(plan.warnings.join('\n')).toMatch(/regression_max_count = 5 lets 5 queries confirmed slower than the baseline pass/);
  });

  it('refuses what it cannot do, naming the key and the alternative', () => {
    expect(rejected('[capture]\nsource_type = "rds"\nrds_instance = "prod"')).toMatch(
      /\[capture\] source_type: 'rds' is not supported here: pg-retest-action does not call AWS\. Download the logs first \(aws rds download-db-log-file-portion/,
    );
    expect(rejected('[capture]\nsource_log = "slow.log"\nsource_type = "mysql-slow"\n[replay]\ntarget = "host=x"')).toMatch(
      /'mysql-slow' is not supported here/,
    );
    expect(rejected('[replay]\ntarget = "host=x"')).toMatch(/\[capture\]: no workload: set workload/);
    expect(rejected('[capture]\nworkload = "w.wkl"')).toMatch(/\[replay\] target: no target: set \[replay\] target/);
    expect(rejected('[capture]\nworkload = "w.wkl"\n[provision]\nbackend = "k8s"')).toMatch(/\[provision\] backend: expected "docker"/);
  });
});

describe('pg-retest limits', () => {
  it('inclusive: a measured value equal to the limit passes', () => {
    const figures = { ok: 10, executed: 10, errors: 1, p95_us: 50_000, p99_us: 50_001 };
    const checks = checkLimits({ p95MaxMs: 50, p99MaxMs: 50, errorRateMaxPct: 10 }, figures, null);
    expect(checks.map((c) => [c.name, c.status])).toEqual([
      ['p95_latency', 'passed'],
      ['p99_latency', 'failed'],
      ['error_rate', 'passed'],
    ]);
    expect(checks[1]!.message).toBe('P99 latency 50.0 ms exceeds the 50 ms limit (thresholds.p99_max_ms)');
  });

  it('pooled over replays: nearest rank of every successful execution', () => {
    const replay = (samples: number[]) =>
      ({
        totals: { executed: samples.length, errors: 0, ok: samples.length },
        latency: { p95_us: 0, p99_us: 0 },
        fingerprints: [{ samples }],
      }) as never;
    const f = sideFigures([replay([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), replay([11, 12, 13, 14, 15, 16, 17, 18, 19, 20])]);
    expect(f).toEqual({ ok: 20, executed: 20, errors: 0, p95_us: 19, p99_us: 20 });
  });
});

describe('regression_max_count in A/B mode', () => {
  // The stored regression: one fingerprint slower (5c2e9b1a7d3f4e60) and the whole workload.
  const stored = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');

  it('lets that many slower queries pass when they are the only finding, and says so', () => {
    const comparison = structuredClone(stored.comparison!);
    comparison.overall.regressed = false;
    const inputs = { comparison, migrationFailure: null, thresholds: stored.thresholds };
    const decided = decideVerdict(inputs);
    expect(decided.verdict).toBe('regression');
    expect(allowRegressions(inputs, decided, undefined)).toBe(decided);
    expect(allowRegressions(inputs, decided, 0)).toBe(decided);
    const allowed = allowRegressions(inputs, decided, 1);
    expect(allowed.verdict).toBe('pass');
    expect(allowed.headline).toBe('pass: 1 query slower, within regression_max_count 1, no new errors');
    expect(allowed.warnings[0]).toMatch(/^allowed by regression_max_count: `SELECT o\.id/);
  });

  it('a whole-workload regression is another finding: not allowed by the count', () => {
    const inputs = { comparison: stored.comparison!, migrationFailure: null, thresholds: stored.thresholds };
    expect(allowRegressions(inputs, decideVerdict(inputs), 5).verdict).toBe('regression');
  });
});
