// Issue #37: the gate sharded over a CI matrix, one verdict. Three shards of the sample shop's
// captured checkouts (checkout.wkl: orders and their lines linked by generated ids; identical
// schemas, one round each, run at once against the shared test server as
// three matrix jobs would run on three machines) write partial reports; `aggregate` pools them
// into one report and one exit status, refuses a partial of another commit (exit 2) and is
// inconclusive naming a missing shard (exit 4); in the action a shard writes its partial and
// posts nothing, and `mode: aggregate` posts one PR comment and ends the step with one status.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { run } from '../src/action/main.js';
import type { PartialReport } from '../src/shards/partial.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { readCommandFile, setupStep, useFakeGitHub } from './support/action-in-process.js';
import { GATE_TIMEOUT_MS, gate, shop, tmpDir, useGateFixtures } from './support/gate-run.js';

useGateFixtures();
const fake = useFakeGitHub();

const SHARDS = 3;
let partials: string[] = [];

function aggregate(files: string[]) {
  const json = path.join(tmpDir(), `aggregate-${Math.random().toString(16).slice(2)}.json`);
  return gate(['aggregate', '--partial', ...files, '--json', json, '--junit', `${json}.xml`]).then((r) => ({
    ...r,
    report: fs.existsSync(json) ? (JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport) : undefined,
    junit: fs.existsSync(`${json}.xml`) ? fs.readFileSync(`${json}.xml`, 'utf8') : '',
  }));
}

/** A pull request of this repository, as the runner describes it. */
const pullRequest = {
  name: 'pull_request',
  payload: {
    number: 42,
    pull_request: {
      number: 42,
      base: { sha: 'a'.repeat(40), repo: { full_name: 'acme/shop' } },
      head: { sha: 'b'.repeat(40), repo: { full_name: 'acme/shop' } },
    },
    repository: { full_name: 'acme/shop' },
  },
};

const readPartial = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as PartialReport;

describe('a gate sharded three ways', () => {
  beforeAll(async () => {
    const migrations = shop('migrations', '*.sql');
    const runs = await Promise.all(
      Array.from({ length: SHARDS }, async (_, i) => {
        const file = path.join(tmpDir(), `partial-${i + 1}.json`);
        const r = await gate([
          'gate',
          '--shard',
          `${i + 1}/${SHARDS}`,
          '--database-url',
          inject('pgUrl'),
          '--workload',
          shop('checkout.wkl'),
          '--seed',
          shop('seed.sql'),
          '--migrations',
          migrations,
          '--base-migrations',
          migrations,
          '--rounds',
          '1',
          '--confirm-rounds',
          '0',
          ...LATENCY_RULE_OUT_OF_REACH,
          '--json',
          file,
        ]);
        return { ...r, file };
      }),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    partials = runs.map((r) => r.file);
  }, GATE_TIMEOUT_MS);

  it('each shard replays its own part, and the parts make up the workload once', () => {
    const read = partials.map(readPartial);
    expect(read.map((p) => p.shard)).toEqual([1, 2, 3].map((index) => ({ index, count: SHARDS })));
    expect(read.reduce((n, p) => n + p.part.sessions, 0)).toBe(read[0]!.workload.sessions);
    expect(read.reduce((n, p) => n + p.part.statements, 0)).toBe(read[0]!.workload.statements);
    for (const p of read) {
      expect(p.report.environment.workload.path).toBe(shop('checkout.wkl'));
      expect(p.report.comparison).not.toBeNull();
      expect(p.report.replays.map((r) => r.side).sort()).toEqual(['base', 'head', 'noise']);
      // The replay check's figures: every compared fingerprint's median in each replay that ran it.
      const compared = p.report.comparison!.fingerprints.map((f) => f.fingerprint);
      expect(Object.keys(p.replays.fingerprints).sort()).toEqual([...compared].sort());
      for (const fp of compared) {
        expect(p.replays.fingerprints[fp]!.client.base.length).toBeGreaterThan(0);
        expect(p.replays.fingerprints[fp]!.client.head.length).toBe(1);
      }
      expect(p.replays.overall).toEqual({ base: [expect.any(Number), expect.any(Number)], head: [expect.any(Number)] });
    }
  });

  it('aggregate: one report and one verdict over every shard, exit 0', async () => {
    const r = await aggregate(partials);
    expect(r.code, r.stderr).toBe(0);
    const report = r.report!;
    expect(report.verdict).toBe('pass');
    expect(report.shards?.map((s) => s.verdict)).toEqual(['pass', 'pass', 'pass']);
    expect(report.environment.workload.statements).toBe(readPartial(partials[0]!).workload.statements);
    // Counts add up: every shard's base statements, in one coverage.
    const shardsCaptured = partials.map(readPartial).reduce((n, p) => n + p.report.coverage!.base.captured, 0);
    expect(report.coverage!.base.captured).toBe(shardsCaptured);
    expect(report.comparison!.fingerprints.length).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/^### ✅ pg-retest: pass/);
    expect(r.stdout).toContain('3 shards');
    expect(r.junit).toContain('<testsuite');
  });

  it('a missing shard: inconclusive, exit 4, naming it', async () => {
    const r = await aggregate([partials[0]!, partials[2]!]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.report!.verdict).toBe('inconclusive');
    expect(r.report!.headline).toContain('shard 2/3 is missing');
    expect(r.report!.shards?.[1]?.verdict).toBe('missing');
  });

  it('a partial of another commit: refused, exit 2', async () => {
    const other = readPartial(partials[1]!);
    other.report.environment.head.sha = 'f'.repeat(40);
    const file = path.join(tmpDir(), 'other-commit.json');
    fs.writeFileSync(file, JSON.stringify(other));
    const r = await aggregate([partials[0]!, file, partials[2]!]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/partial report .*other-commit\.json is of another run: its head commit is f{40}/);
  });

  it('a partial of another release: refused, exit 2, naming its version', async () => {
    const older = { ...readPartial(partials[1]!), version: 1 };
    const file = path.join(tmpDir(), 'older-release.json');
    fs.writeFileSync(file, JSON.stringify(older));
    const r = await aggregate([partials[0]!, file, partials[2]!]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /partial report .*older-release\.json: version 1, this aggregate reads version 2; run the shards and the aggregate with the same release/,
    );
  });

  it('a shard in the action: its partial report written and output, no PR comment, the step passes', async () => {
    const migrations = shop('migrations', '*.sql');
    const { output, summary } = setupStep(pullRequest, fake().url, {
      workload: shop('checkout.wkl'),
      seed: shop('seed.sql'),
      migrations,
      'base-migrations': migrations,
      'database-url': inject('pgUrl'),
      rounds: '1',
      'confirm-rounds': '0',
      shard: '2/3',
      'github-token': 'test-token',
    });
    // The step makes its run directory the temporary directory, and removes it at its end.
    const tmpdir = process.env.TMPDIR;
    try {
      expect(await run(process.env)).toBe(0);
    } finally {
      process.env.TMPDIR = tmpdir;
    }
    expect(fake().comments).toHaveLength(0);
    const file = readCommandFile(output)['json-report-path']!;
    expect(path.basename(file)).toBe('pg-retest-partial-2-of-3.json');
    const partial = readPartial(file);
    expect(partial.shard).toEqual({ index: 2, count: 3 });
    expect(partial.workload.sha256).toBe(readPartial(partials[1]!).workload.sha256);
    expect(partial.part.sessions).toBe(readPartial(partials[1]!).part.sessions);
    expect(fs.readFileSync(summary, 'utf8')).toContain('Shard 2 of 3');
  });

  it('mode aggregate in the action: one PR comment, one status', async () => {
    const dir = path.join(tmpDir(), 'downloaded');
    for (const [i, file] of partials.entries()) {
      fs.mkdirSync(path.join(dir, `pg-retest-partial-${i + 1}`), { recursive: true });
      fs.copyFileSync(file, path.join(dir, `pg-retest-partial-${i + 1}`, 'partial.json'));
    }
    const { output } = setupStep(pullRequest, fake().url, {
      mode: 'aggregate',
      partials: `${dir}/**/*.json`,
      'github-token': 'test-token',
    });
    expect(await run(process.env)).toBe(0);
    expect(fake().comments).toHaveLength(1);
    expect(fake().comments[0]!.body).toContain('pg-retest: pass');
    expect(readCommandFile(output).result).toBe('pass');
    // (The job summary's file is the first step's in this process: @actions/core keeps its path.)
    expect(fs.readFileSync(readCommandFile(output)['report-path']!, 'utf8')).toContain('3 shards');
  });
});
