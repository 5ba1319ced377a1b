// Check annotations on the migration lines behind a statement's extra work (docs/action.md,
// "Annotations"). First from a stored report: which lines, which level, the cap GitHub's limits
// call for, paths relative to the repository. Then the action's entry point in this process, as a
// runner calls it, on a pull request that adds an index on the column the shop's hottest UPDATE
// sets, against a real server of this file's own that preloads pg_stat_statements (the shared
// one does not): the step prints a `::warning` with `file=…,line=2` for the CREATE INDEX line. What is
// asserted is deterministic (the index, its line, the direction of the work); the latency rules
// are out of reach, so the run passes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_CAPS,
  capAnnotations,
  leftOutNote,
  type MigrationAnnotation,
  migrationAnnotations,
  repositoryPath,
} from '../src/action/annotations.js';
import { run } from '../src/action/main.js';
import type { FingerprintPlan } from '../src/plans/types.js';
import { parseReport } from '../src/report/index.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { captureStdout, readCommandFile, setupStep, useFakeGitHub } from './support/action-in-process.js';
import { git, repoWithPr, useGateFixtures } from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { startPostgres } from './support/postgres.js';

const fixture = fileURLToPath(new URL('./fixtures/reports/work-index.json', import.meta.url));
const INDEX_FILE = 'test/fixtures/reports/work-index/head/006_customers_last_login_idx.sql';
const UPDATE = '54eaed597b60b3ba';

/** The stored report of a PR adding `customers_last_login_idx`: a pass whose UPDATE and INSERT do more work. */
const stored = (): GateReport => parseReport(fs.readFileSync(fixture, 'utf8'), fixture);

/** The report with the UPDATE a regression of the gate. */
function withRegressedUpdate(): GateReport {
  const report = stored();
  report.verdict = 'regression';
  const update = report.comparison!.fingerprints.find((f) => f.fingerprint === UPDATE)!;
  update.regressed = true;
  update.rules = ['client_p95'];
  return report;
}

describe('which migration lines are annotated', () => {
  it('a pass: one warning on the CREATE INDEX line, naming both statements (the larger growth first), their work and the index', () => {
    const annotations = migrationAnnotations(stored(), true);
    expect(annotations).toHaveLength(1);
    const [a] = annotations as [MigrationAnnotation];
    expect(a).toMatchObject({ level: 'warning', file: INDEX_FILE, line: 2 });
    expect(a.title).toBe('pg-retest: index customers_last_login_idx added, more work per call');
    const lines = a.message.split('\n');
    expect(lines[0]).toMatch(
      /^UPDATE customers SET last_login = now\(\) WHERE id = \$1: WAL 91 B → 307 B per call \(\+239 %\), 7\.0 → 17\.4 pages/,
    );
    expect(lines[1]).toMatch(/^INSERT INTO customers \(email, name, country\) VALUES \(\$1, \$2, \$3\): WAL 370 B → 434 B per call/);
    expect(lines[2]).toBe(
      'index customers_last_login_idx added on public.customers: an UPDATE that sets an indexed column is no longer heap-only, so every index of the table gets a new entry',
    );
  });

  it('a regression that fails the gate is an error, with its latency; a warning when fail-on-regression is false', () => {
    const [failing] = migrationAnnotations(withRegressedUpdate(), true) as [MigrationAnnotation];
    expect(failing.level).toBe('error');
    expect(failing.title).toBe('pg-retest: index customers_last_login_idx added, a statement it affects regressed');
    expect(failing.message.split('\n')[0]).toMatch(/: slower \(p95 2\.81 ms → 2\.90 ms\), fails the gate; WAL 91 B → 307 B per call/);
    const [lenient] = migrationAnnotations(withRegressedUpdate(), false) as [MigrationAnnotation];
    expect(lenient.level).toBe('warning');
    expect(lenient.message).not.toContain('fails the gate');
    // The server-time rule: its medians.
    const byServerTime = withRegressedUpdate();
    byServerTime.comparison!.fingerprints.find((f) => f.fingerprint === UPDATE)!.rules = ['server_time'];
    const [server] = migrationAnnotations(byServerTime, true) as [MigrationAnnotation];
    expect(server.message.split('\n')[0]).toMatch(/: slower \(server time median 173 µs → 193 µs\), fails the gate; WAL/);
  });

  it('nothing for statements whose work did not move and that did not regress, nor for a change no migration line names', () => {
    const quiet = stored();
    for (const f of quiet.plans!.fingerprints) f.work_changes = [];
    expect(migrationAnnotations(quiet, true)).toEqual([]);
    const unnamed = stored();
    for (const f of unnamed.plans!.fingerprints) for (const c of f.index_changes ?? []) c.migration = null;
    expect(migrationAnnotations(unnamed, true)).toEqual([]);
  });

  it('less work only is a notice', () => {
    const less = stored();
    for (const f of less.plans!.fingerprints)
      f.work_changes = (f.work_changes ?? []).map((c) => ({ ...c, base: c.head, head: c.base, direction: 'less' as const }));
    const [a] = migrationAnnotations(less, true) as [MigrationAnnotation];
    expect(a.level).toBe('notice');
    expect(a.title).toMatch(/less work per call$/);
  });
});

describe("GitHub's limits and paths", () => {
  /** The UPDATE's plan copied onto `n` statements, each explained by a migration line of its own, all regressions. */
  function manyLines(n: number): GateReport {
    const report = withRegressedUpdate();
    const plan = report.plans!.fingerprints.find((f) => f.fingerprint === UPDATE)!;
    const comparison = report.comparison!.fingerprints.find((f) => f.fingerprint === UPDATE)!;
    const copies: FingerprintPlan[] = [];
    for (let i = 0; i < n; i++) {
      const fingerprint = i.toString(16).padStart(16, '0');
      copies.push({
        ...plan,
        fingerprint,
        // Growth falls with i: line i+1 is the (i+1)th most important.
        work_changes: plan.work_changes!.map((c) => ({ ...c, change: 10 - i / 10 })),
        index_changes: plan.index_changes!.map((c) => ({ ...c, migration: { file: `db/migrations/${100 + i}.sql`, line: i + 1 } })),
      });
      report.comparison!.fingerprints.push({ ...comparison, fingerprint });
    }
    report.plans!.fingerprints = copies;
    return report;
  }

  it(`at most ${ANNOTATION_CAPS.error} errors, the most important; the summary names the lines left out`, () => {
    const plan = capAnnotations(migrationAnnotations(manyLines(12), true), (file) => file);
    expect(plan.shown.map((a) => a.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(plan.shown.every((a) => a.level === 'error')).toBe(true);
    expect(plan.left.map((l) => [l.annotation.line, l.reason])).toEqual([
      [10, 'limit'],
      [11, 'limit'],
      [12, 'limit'],
    ]);
    const note = leftOutNote(plan);
    expect(note).toContain('Annotated 9 migration lines; 3 more lines');
    expect(note).toContain("3 over GitHub's limit of 10 annotations of a kind per step");
    expect(note).toContain('db/migrations/109.sql line 10, db/migrations/110.sql line 11, db/migrations/111.sql line 12');
    expect(leftOutNote(capAnnotations(migrationAnnotations(stored(), true), (file) => file))).toBe('');
  });

  it('paths relative to the root of the repository the file is in, also when the checkout is a subdirectory of the workspace', () => {
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'annotations-'));
    try {
      const repo = path.join(workspace, 'app');
      fs.mkdirSync(path.join(repo, 'db', 'migrations'), { recursive: true });
      fs.writeFileSync(path.join(repo, 'db', 'migrations', '006.sql'), 'CREATE INDEX i ON t (c);\n');
      git(repo, 'init', '--quiet');
      expect(repositoryPath('app/db/migrations/006.sql', workspace)).toBe('db/migrations/006.sql');
      expect(repositoryPath('db/migrations/006.sql', repo)).toBe('db/migrations/006.sql');
      // Not in a repository: relative to the workspace; outside both: none.
      fs.writeFileSync(path.join(workspace, 'loose.sql'), '');
      expect(repositoryPath('loose.sql', workspace)).toBe('loose.sql');
      expect(repositoryPath('../elsewhere.sql', workspace)).toBeNull();
      // A file of another repository, outside the workspace: no line of this PR.
      const other = fs.mkdtempSync(path.join(os.tmpdir(), 'annotations-other-'));
      try {
        fs.writeFileSync(path.join(other, '001.sql'), '');
        git(other, 'init', '--quiet');
        expect(repositoryPath(path.join(other, '001.sql'), repo)).toBeNull();
      } finally {
        fs.rmSync(other, { recursive: true, force: true });
      }
    } finally {
      fs.rmSync(workspace, { recursive: true, force: true });
    }
  });
});

describe('the action on a pull request adding an index on an updated column', () => {
  const fake = useFakeGitHub();
  useGateFixtures();
  let server: Awaited<ReturnType<typeof startPostgres>>;
  const cwd = process.cwd();

  beforeAll(async () => {
    server = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
  });
  afterAll(async () => {
    process.chdir(cwd);
    await server?.stop();
  });

  it('fails on the work rule and puts an error on the CREATE INDEX line, relative to the repository, naming the UPDATE and its work', async () => {
    const repo = repoWithPr({
      'db/migrations/006_customers_last_login_idx.sql':
        '-- Find the customers who logged in lately.\nCREATE INDEX customers_last_login_idx ON customers (last_login);\n',
    });
    const event = {
      name: 'pull_request',
      payload: {
        number: 7,
        pull_request: {
          number: 7,
          base: { sha: git(repo, 'rev-parse', 'HEAD~1'), repo: { full_name: 'acme/shop' } },
          head: { sha: git(repo, 'rev-parse', 'HEAD'), repo: { full_name: 'acme/shop' } },
        },
        repository: { full_name: 'acme/shop' },
      },
    };
    const outOfReach = Object.fromEntries(
      Array.from({ length: LATENCY_RULE_OUT_OF_REACH.length / 2 }, (_, i) => [
        LATENCY_RULE_OUT_OF_REACH[2 * i]!.slice(2),
        LATENCY_RULE_OUT_OF_REACH[2 * i + 1]!,
      ]),
    );
    const step = setupStep(event, fake().url, {
      workload: 'db/workload.wkl',
      migrations: 'db/migrations/*.sql',
      seed: 'db/seed.sql',
      'database-url': server.url,
      // Two rounds at the captured pace: at full speed a contended write's work follows the
      // sessions' interleaving, which is chance, and with one round the rule's t-test (one degree
      // of freedom) asks a gap of ~40 times the replays' spread, which a loaded machine can widen.
      rounds: '2',
      speed: '1',
      'confirm-rounds': '0',
      comment: 'never',
      ...outOfReach,
    });
    process.env.GITHUB_WORKSPACE = repo;
    const stdout = captureStdout();
    const code = await run(process.env);
    const printed = stdout();
    // Time cannot see this index (the latency rules are out of reach); the work rule does.
    expect(code, printed).toBe(1);
    expect(readCommandFile(step.output).result).toBe('regression');
    expect(readCommandFile(step.output)['regressed-fingerprints']).toBe(UPDATE);
    expect(fs.readFileSync(step.summary, 'utf8')).toMatch(/regression: 1 query doing more work per call/);
    const annotations = printed.split('\n').flatMap((line) => {
      const m = /^::(warning|error|notice) ([^:]*)::(.*)$/.exec(line);
      if (!m) return [];
      const properties = Object.fromEntries(m[2]!.split(',').map((p) => p.split('=', 2) as [string, string]));
      return [{ level: m[1], properties, message: m[3]! }];
    });
    const onFiles = annotations.filter((a) => a.properties.file !== undefined);
    expect(onFiles, printed).toHaveLength(1);
    const [a] = onFiles as [(typeof onFiles)[number]];
    // The runner's form: properties escaped (`:` as %3A, `,` as %2C), the message's `%` as %25 and newlines as %0A.
    expect(a.level).toBe('error');
    expect(a.properties).toEqual({
      file: 'db/migrations/006_customers_last_login_idx.sql',
      line: '2',
      title: 'pg-retest%3A index customers_last_login_idx added%2C a statement it affects regressed',
    });
    expect(a.message).toMatch(
      /^UPDATE customers SET last_login = now\(\) WHERE id = \$1: WAL \d+ B → \d+ B per call \(\+\d+ %25\).*, fails the gate \(the work rule\)%0A/,
    );
    expect(a.message).toContain('%0Aindex customers_last_login_idx added on public.customers: an UPDATE that sets an indexed column');
    // Nothing was left out: the summary has no note about it.
    expect(fs.readFileSync(step.summary, 'utf8')).not.toContain('not annotated');
  });
});
