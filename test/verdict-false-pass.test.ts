// Paths by which the verdict used to pass what it must not: synthetic replay reports through
// the real engine comparison (compareReplays), coverageOf, decideVerdict and exitCodeOfVerdict,
// in the order run-gate.ts uses them. Each case passed (exit 0) before its fix.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baselineReport, compareWithBaseline } from '../src/action/baseline.js';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { runCompare } from '../src/cli/compare.js';
import { gateCommand } from '../src/gate/options.js';
import { compareReplays, type FingerprintReport, type ReplayReport } from '../src/engine/index.js';
import { ExitCode, InputError } from '../src/exit-codes.js';
import { sideAccounting } from '../src/verdict/accounting.js';
import { coverageOf } from '../src/verdict/coverage.js';
import type { Thresholds } from '../src/verdict/report-types.js';
import { decideVerdict, exitCodeOfVerdict } from '../src/verdict/decide.js';
import { allowRegressions } from '../src/pg-retest-config/variants.js';
import { parseReport } from '../src/report/index.js';
import { NO_LATENCY, replayReportOf } from './support/replay-report.js';

const Z = NO_LATENCY;
const id = (name: string): string => name.padStart(16, '0');

interface Fp {
  name: string;
  /** successful latencies (µs) */
  ok: number[];
  errors?: { sqlstate: string; message: string; count: number }[];
  /** skipped because an earlier statement of the transaction failed */
  skipped?: number;
  /** not sent because the session never connected */
  notExecuted?: number;
}

function report(fps: Fp[], extra: Partial<ReplayReport> = {}): ReplayReport {
  const fingerprints: FingerprintReport[] = fps.map(({ name, ok, errors = [], skipped = 0, notExecuted = 0 }) => {
    const failed = errors.reduce((n, e) => n + e.count, 0);
    return {
      fingerprint: id(name),
      normalized: `SELECT * FROM ${name} WHERE id = $1`,
      kind: 'select',
      counts: {
        captured: ok.length + failed + skipped + notExecuted,
        executed: ok.length + failed,
        ok: ok.length,
        errors: failed,
        skipped,
        not_executed: notExecuted,
        skipped_by_reason: skipped ? { transaction_aborted: skipped } : {},
        not_executed_by_reason: notExecuted ? { connect_failed: notExecuted } : {},
      },
      latency: Z,
      captured_latency: Z,
      rows: 0,
      errors,
      samples: ok,
    };
  });
  return replayReportOf(fingerprints, extra);
}

/** n latencies around `us` (±5 %), deterministic */
const around = (n: number, us: number) => Array.from({ length: n }, (_, i) => Math.round(us * (0.95 + ((i * 37) % n) / n / 10)));

const thresholds: Thresholds = {
  p95_threshold: 0.2,
  min_delta_ms: 0.5,
  min_calls: 20,
  max_new_errors: 0,
  confidence: 0.95,
  min_coverage: 0.95,
};
const options = { p95Threshold: 0.2, minDeltaMs: 0.5, minCalls: 20 };

/** What run-gate.ts does after the replays (compare, coverage, verdict, exit status). */
async function gateVerdict(base: ReplayReport[], noise: ReplayReport, head: ReplayReport[], t: Thresholds = thresholds) {
  const comparison = await compareReplays({ base, head, noise: [base[0]!, noise], options });
  const coverage = coverageOf(base, head, t.min_coverage!);
  const inputs = { comparison, coverage, headAccounting: sideAccounting(head), migrationFailure: null, thresholds: t };
  const decided = decideVerdict(inputs);
  return { comparison, coverage, inputs, decided, exit: exitCodeOfVerdict(decided.verdict) };
}

const three = (make: () => ReplayReport): ReplayReport[] => [make(), make(), make()];

describe('the verdict does not pass', () => {
  it('an error base saw once that head has on every execution, aborting the rest of each transaction', async () => {
    // Transaction: INSERT a (then b). Base: `a` hits 23505 once per replay (a retry in the
    // capture). Head (a new UNIQUE constraint): `a` fails every time, so `b` is skipped.
    const dup = (count: number) => [{ sqlstate: '23505', message: 'duplicate key value violates unique constraint', count }];
    const baseReplay = () =>
      report([
        { name: 'a', ok: around(99, 800), errors: dup(1) },
        { name: 'b', ok: around(99, 800), skipped: 1 },
        { name: 'c', ok: around(100, 500) },
      ]);
    const headReplay = () =>
      report([
        { name: 'a', ok: [], errors: dup(100) },
        { name: 'b', ok: [], skipped: 100 },
        { name: 'c', ok: around(100, 500) },
      ]);
    const { comparison, decided, exit } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    // A unique violation depends on timing, so base's one per replay makes it a rate question: head
    // fails it on every call in every replay.
    expect(comparison.new_errors.map((e) => [e.base_count, e.head_count, e.rule])).toEqual([[3, 300, 'rate']]);
    expect(decided.verdict).toBe('regression');
    expect(exit).toBe(ExitCode.Regression);
    expect(decided.reasons.some((r) => r.startsWith('SQLSTATE 23505 in') && r.includes('head 300 of 300 calls, base 3 of 300'))).toBe(true);
    expect(decided.reasons.some((r) => r.startsWith('head executed 67 %'))).toBe(true);
  });

  it("a statement timing out on half of head's calls, once on base: the survivors are fast", async () => {
    const timeout = (count: number) => [{ sqlstate: '57014', message: 'canceling statement due to statement timeout', count }];
    const baseReplay = () => report([{ name: 'a', ok: around(199, 1000), errors: timeout(1) }]);
    const headReplay = () => report([{ name: 'a', ok: around(100, 1000), errors: timeout(100) }]);
    const { decided, exit } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(exit).toBe(ExitCode.Regression);
    expect(decided.headline).toMatch(/new error/);
  });

  it("base's own rare failure that head repeats a few times more is listed as varying, not gated", async () => {
    const deadlock = (count: number) => [{ sqlstate: '40P01', message: 'deadlock detected', count }];
    const baseReplay = () => report([{ name: 'a', ok: around(199, 1000), errors: deadlock(1) }]);
    const headReplay = () => report([{ name: 'a', ok: around(198, 1000), errors: deadlock(2) }]);
    const { comparison, decided } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(decided.verdict).toBe('pass');
    // (The noise replay here is identical to a round, so it is taken as that round.)
    expect(comparison.varying_errors.map((e) => [e.base_replays, e.head_replays])).toEqual([
      [
        [1, 1, 1],
        [2, 2, 2],
      ],
    ]);
    expect(
      decided.warnings.some((w) => w.startsWith('1 statement group fails now and then, varying between replays (6 failures on head')),
    ).toBe(true);
  });

  it('a deterministic failure base has once that head repeats a few times more stays a fidelity warning', async () => {
    const check = (count: number) => [{ sqlstate: '23514', message: 'new row violates check constraint', count }];
    const baseReplay = () => report([{ name: 'a', ok: around(199, 1000), errors: check(1) }]);
    const headReplay = () => report([{ name: 'a', ok: around(198, 1000), errors: check(2) }]);
    const { decided } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(decided.verdict).toBe('pass');
    expect(decided.warnings).toContain('1 statement group fail on both sides about as often (workload fidelity, not gated)');
  });

  it('a run in which nothing was compared, even with new errors allowed', async () => {
    const baseReplay = () => report([{ name: 'a', ok: around(100, 800) }]);
    const headReplay = () => report([{ name: 'a', ok: [], errors: [{ sqlstate: '42703', message: 'column does not exist', count: 100 }] }]);
    const { decided, exit } = await gateVerdict([baseReplay()], baseReplay(), [headReplay()], { ...thresholds, max_new_errors: 1 });
    expect(decided.verdict).toBe('error');
    expect(exit).toBe(ExitCode.Infrastructure);
  });

  it('a tenfold slowdown when no query had min-calls successful calls: inconclusive', async () => {
    const baseReplay = () => report([{ name: 'a', ok: around(5, 1000) }]);
    const headReplay = () => report([{ name: 'a', ok: around(5, 10_000) }]);
    const { decided, exit } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(decided.verdict).toBe('inconclusive');
    expect(decided.headline).toBe('inconclusive: no query had 20 successful calls on both sides, so no latency was judged');
    expect(exit).toBe(ExitCode.Inconclusive);
  });

  it('a pass with a rare statement three times slower says so in its headline and warning (too few calls to judge)', async () => {
    const baseReplay = () =>
      report([
        { name: 'hot', ok: around(200, 300) },
        { name: 'report', ok: around(4, 4000) },
      ]);
    const headReplay = () =>
      report([
        { name: 'hot', ok: around(200, 300) },
        { name: 'report', ok: around(4, 12_000) },
      ]);
    const { decided, exit } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(decided.verdict).toBe('pass');
    expect(exit).toBe(ExitCode.Ok);
    expect(decided.headline).toBe(
      'pass: 2 fingerprints compared, none slower beyond 20 % (1 with too few calls to judge looks slower), no new errors',
    );
    expect(decided.warnings).toContainEqual(
      expect.stringMatching(/^1 fingerprint had fewer than 20 successful calls .*; 1 of them looks slower beyond the thresholds/),
    );
  });

  it('a rare statement slower in one replay only is not said to look slower (noise on a few calls)', async () => {
    // Pooled, head's p95 is three times base's (one replay's 4 calls were slow), over the threshold
    // and the floor; but the other replays are as fast as base's, which the rule itself requires.
    const replay = (reportUs: number) => () =>
      report([
        { name: 'hot', ok: around(200, 300) },
        { name: 'report', ok: around(4, reportUs) },
      ]);
    const { comparison, decided } = await gateVerdict(three(replay(4000)), replay(4000)(), [
      replay(12_000)(),
      replay(4000)(),
      replay(4000)(),
    ]);
    const rare = comparison.fingerprints.find((f) => f.fingerprint === id('report'))!;
    expect(rare.checks).toMatchObject({ over_threshold: true, over_min_delta: true, enough_calls: false, slower_in_every_replay: false });
    expect(decided.verdict).toBe('pass');
    expect(decided.headline).toBe('pass: 2 fingerprints compared, none slower beyond 20 %, no new errors');
    expect(decided.warnings).toContain('1 fingerprint had fewer than 20 successful calls on a side and was not gated on latency');
  });

  it('run [[variants]]: slower queries within regression_max_count do not make too little coverage a pass', async () => {
    const baseReplay = () =>
      report([
        { name: 'a', ok: around(100, 1000) },
        { name: 'c', ok: around(2000, 500) },
        { name: 'b', ok: [], skipped: 2000 },
      ]);
    const headReplay = () =>
      report([
        { name: 'a', ok: around(100, 4000) },
        { name: 'c', ok: around(2000, 500) },
        { name: 'b', ok: [], skipped: 2000 },
      ]);
    const { coverage, inputs, decided } = await gateVerdict(three(baseReplay), baseReplay(), three(headReplay));
    expect(coverage.sufficient).toBe(false);
    expect(decided.verdict).toBe('regression');
    const allowed = allowRegressions(inputs, decided, 1);
    expect(allowed.verdict).toBe('inconclusive');
    expect(allowed.warnings[0]).toMatch(/^allowed by regression_max_count: /);
  });

  it('compare: a head replay whose sessions did not all connect is refused, not compared', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-compare-'));
    const write = (name: string, r: ReplayReport) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, JSON.stringify(r));
      return file;
    };
    const base = [0, 1, 2].map((i) =>
      write(
        `b${i}.json`,
        report([
          { name: 'a', ok: around(100, 800) },
          { name: 'b', ok: around(100, 800) },
        ]),
      ),
    );
    const head = [0, 1, 2].map((i) =>
      write(
        `h${i}.json`,
        report(
          [
            { name: 'a', ok: around(100, 800) },
            { name: 'b', ok: [], notExecuted: 100 },
          ],
          { sessions_completed: 5, sessions_failed: 5 },
        ),
      ),
    );
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} } as never;
    const t = {
      p95Threshold: 0.2,
      minDeltaMs: 0.5,
      minCalls: 20,
      maxNewErrors: 0,
      confidence: 0.95,
      minCoverage: 0.95,
      p95MaxMs: null,
      p99MaxMs: null,
      errorRateMax: null,
    };
    const run = runCompare({ base, head, noise: undefined, thresholds: t, outputs: {} } as never, io);
    await expect(run).rejects.toThrow(InputError);
    await expect(run).rejects.toThrow(/option --head: the replay in .*h0\.json did not run in full: 5 sessions of 10 did not complete/);
  });

  it('--error-rate-max-pct 1 is refused, not read as 100 %', () => {
    const parse = (value: string) => {
      const { values } = tokenize(
        'gate',
        ['--workload', 'w', '--migrations', 'x', '--base-ref', 'm', '--error-rate-max-pct', value],
        gateCommand.options,
      );
      return parseOptions(gateCommand, values).thresholds.errorRateMax;
    };
    expect(() => parse('1')).toThrow(/a plain number is a fraction here: write '1%'/);
    expect(parse('1%')).toBe(0.01);
    expect(parse('0.01')).toBe(0.01);
    expect(parse('100%')).toBe(1);
  });

  it('action with baseline-report: an inconclusive run stays inconclusive', () => {
    const stored = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');
    const now = structuredClone(stored);
    now.verdict = 'inconclusive';
    now.headline = 'inconclusive: 46 % of the captured statements did not run on base';
    const result = compareWithBaseline(now, stored, 'baseline.json');
    expect(result.verdict).toBe('pass');
    const published = baselineReport(now, result, stored, 'baseline.json');
    expect(published.verdict).toBe('inconclusive');
    expect(published.headline).toBe(now.headline);
  });

  it('action with baseline-report: an absolute limit this run exceeded stays a regression', () => {
    const stored = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');
    const now = structuredClone(stored);
    now.thresholds = { ...now.thresholds, p95_max_ms: 0.001 };
    const published = baselineReport(now, compareWithBaseline(now, stored, 'baseline.json'), stored, 'baseline.json');
    expect(published.verdict).toBe('regression');
    expect(published.reasons.some((r) => /exceeds the 0\.001 ms limit/.test(r))).toBe(true);
  });
});
