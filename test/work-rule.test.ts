// The work rule (docs/gate-statistics.md, "The work rule"): which fingerprints it fails, and how the
// verdict, the markdown, JUnit and the annotations say it. Pure functions of work counts: the
// gate runs against PostgreSQL are in test/work.test.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { gateCommand } from '../src/gate/options.js';
import { parseReport, renderJunit, renderMarkdown } from '../src/report/index.js';
import type { FingerprintPlan, PlanSide, PlansReport, WorkPerCall, WorkStats } from '../src/plans/types.js';
import { workChanges } from '../src/plans/work.js';
import { applyWorkRule, unjudgedByWorkRule, WORK_RULE_DEFAULTS, workEvidence } from '../src/plans/work-rule.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { migrationAnnotations } from '../src/action/annotations.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { NO_WORK } from './support/work.js';

const zero = NO_WORK;

/** Work whose replays are `replays` (per call each), the mean their average; base's noise replay beside. */
function work(replays: Partial<WorkPerCall>[], noise?: Partial<WorkPerCall>): WorkStats {
  const each = replays.map((r) => ({ ...zero, ...r }));
  const mean = { ...zero };
  for (const k of Object.keys(zero) as (keyof WorkPerCall)[]) {
    (mean as Record<string, number>)[k] = each.reduce((sum, r) => sum + (r[k] ?? 0), 0) / each.length;
  }
  return {
    per_call: mean,
    rounds: { replays: each.length, min: each[0]!, max: each[0]!, each },
    noise: noise ? { ...zero, ...noise } : null,
  };
}

function side(w: WorkStats, calls: number, source: 'pg_stat_statements' | 'explain-analyze' = 'pg_stat_statements'): PlanSide {
  return {
    shape: ['Update on customers'],
    total_cost: 8,
    plan_rows: 1,
    query_id: '1',
    stats: {
      source,
      calls,
      rows: calls,
      shared_hit: 0,
      shared_read: 0,
      buffers_per_call: 0,
      total_ms: 1,
      mean_ms: 0.1,
      work: source === 'pg_stat_statements' ? w : { ...w, rounds: null, noise: null },
    },
    stats_note: null,
  };
}

function plan(fp: string, normalized: string, base: WorkStats, head: WorkStats, calls = 1000): FingerprintPlan {
  const kind = normalized.split(' ')[0]!.toLowerCase();
  return {
    fingerprint: fp,
    normalized,
    kind,
    base: side(base, calls),
    head: side(head, calls),
    changed: false,
    change: null,
    assessment: null,
    seq_scans: [],
    buffers_ratio: 1,
    work_changes: workChanges(base, head, kind),
  };
}

function report(fingerprints: FingerprintPlan[]): PlansReport {
  return {
    stats: { source: 'pg_stat_statements', pg_stat_statements: '1.10', unavailable_reason: null, unjoined: 0, work_note: null },
    not_explainable: 0,
    fingerprints,
    failures: [],
    error: null,
  };
}

/** A hot UPDATE whose index on the column it sets makes it write every index. */
const indexedUpdate = () =>
  plan(
    'aa01',
    'UPDATE customers SET last_login = now() WHERE id = $1',
    work(
      [
        { shared_hit: 7.0, wal_records: 1.2, wal_bytes: 91 },
        { shared_hit: 7.0, wal_records: 1.2, wal_bytes: 90 },
        { shared_hit: 7.1, wal_records: 1.2, wal_bytes: 92 },
      ],
      { shared_hit: 7.0, wal_records: 1.2, wal_bytes: 91 },
    ),
    work([
      { shared_hit: 17.4, wal_records: 4.2, wal_bytes: 307 },
      { shared_hit: 17.3, wal_records: 4.2, wal_bytes: 306 },
      { shared_hit: 17.5, wal_records: 4.2, wal_bytes: 309 },
    ]),
  );

/** A read that does the same work on both sides, with most of the workload's pages. */
const steadyRead = () =>
  plan(
    'bb02',
    'SELECT id, name FROM products WHERE id = $1',
    work([{ shared_hit: 3 }, { shared_hit: 3 }, { shared_hit: 3 }], { shared_hit: 3 }),
    work([{ shared_hit: 3 }, { shared_hit: 3 }, { shared_hit: 3 }]),
    20_000,
  );

const judged = (fingerprints: FingerprintPlan[], rule = WORK_RULE_DEFAULTS, minCalls = 20) =>
  applyWorkRule(report(fingerprints), rule, minCalls).fingerprints;

describe('applyWorkRule', () => {
  it('fails an UPDATE whose pages and WAL grew beyond every base replay, naming what grew and its share', () => {
    const [update, read] = judged([indexedUpdate(), steadyRead()]);
    expect(update!.work_regression?.counters.map((c) => c.counter)).toEqual(['wal_bytes', 'pages', 'wal_records']);
    expect(update!.work_regression?.share.wal).toBe(1);
    expect(update!.work_regression?.share.calls).toBeCloseTo(1000 / 21_000, 5);
    expect(read!.work_regression).toBeNull();
  });

  it('does not fail identical schemas whose replays differ: a growth inside base’s range, or one the noise replay shows', () => {
    const overlapping = plan(
      'cc03',
      'UPDATE t SET v = $1 WHERE id = $2',
      work([
        { shared_hit: 7, wal_records: 1, wal_bytes: 80 },
        { shared_hit: 7, wal_records: 1, wal_bytes: 140 },
      ]),
      work([
        { shared_hit: 7, wal_records: 1, wal_bytes: 120 },
        { shared_hit: 7, wal_records: 1, wal_bytes: 150 },
      ]),
    );
    const noisy = plan(
      'dd04',
      'UPDATE t SET w = $1 WHERE id = $2',
      work([{ shared_hit: 7 }, { shared_hit: 7 }], { shared_hit: 11 }),
      work([{ shared_hit: 10 }, { shared_hit: 10 }]),
    );
    expect(judged([overlapping, noisy]).map((f) => f.work_regression)).toEqual([null, null]);
  });

  it('with one round, needs the gap large against the spread of the replays: a contended write at full speed passes, an index still fails', () => {
    // Measured: the shop's stock UPDATE at speed 0, one round, identical schemas (base, noise, head).
    const contended = plan(
      'c0d1',
      'UPDATE products SET stock = stock - $1 WHERE id = $2',
      work([{ shared_hit: 12.36, wal_records: 3.03, wal_bytes: 238.76 }], { shared_hit: 11.83, wal_records: 2.84, wal_bytes: 223 }),
      work([{ shared_hit: 13.44, wal_records: 3.51, wal_bytes: 278.56 }]),
    );
    // The same run's login UPDATE, indexed on head.
    const indexed = plan(
      'c0d2',
      'UPDATE customers SET last_login = now() WHERE id = $1',
      work([{ shared_hit: 7.72, wal_records: 1.32, wal_bytes: 100.44 }], { shared_hit: 7.58, wal_records: 1.31, wal_bytes: 101 }),
      work([{ shared_hit: 20.77, wal_records: 4.14, wal_bytes: 303.74 }]),
    );
    const [a, b] = judged([contended, indexed]);
    expect(a!.work_regression).toBeNull();
    expect(b!.work_regression?.counters.map((c) => c.counter)).toEqual(['wal_bytes', 'pages', 'wal_records']);
    // Replays that count the same work have no spread: any gap past the threshold is the PR's.
    const steady = plan(
      'c0d3',
      'UPDATE t SET v = $1 WHERE id = $2',
      work([{ shared_hit: 7 }], { shared_hit: 7 }),
      work([{ shared_hit: 8.5 }]),
    );
    expect(judged([steady])[0]!.work_regression?.counters.map((c) => c.counter)).toEqual(['pages']);
  });

  it('fails a changed plan that reads more rows per call at a higher cost, although its pages did not move', () => {
    // Checkout's category listing, its (category, price) index replaced by one on category alone:
    // the same pages, 24 rows read in order on base, all 250 of the category read and sorted on head.
    const listing = (rows: { base: number; head: number; base_cost: number; head_cost: number }, changed = true) => ({
      ...plan(
        'ab07',
        'SELECT id, name, price FROM products WHERE category = $1 ORDER BY price LIMIT $2',
        work([{ shared_hit: 26 }, { shared_hit: 26 }], { shared_hit: 26 }),
        work([{ shared_hit: 26.7 }, { shared_hit: 26.6 }]),
      ),
      changed,
      change: changed ? 'products: Index Scan using products_category_price_idx → Bitmap Heap Scan, Sort' : null,
      rows_read: rows,
    });
    const narrower = { base: 24, head: 250, base_cost: 10.6, head_cost: 40.6 };
    const [f] = judged([listing(narrower)]);
    expect(f!.work_regression).toMatchObject({ counters: [], rows_read: narrower });
    expect(workEvidence({ ...f!, work_regression: f!.work_regression! })).toMatch(
      /^more work per call: 24 → 250 rows read per call \(\+942 %\), plan cost 10\.6 → 40\.6 \(one EXPLAIN ANALYZE of the captured example on each template\) \([\d.]+ % of head's \w+\); plan changed: products: Index Scan/,
    );
    // A plan that reads more rows but that the planner costs lower (a small table hashed whole): not failed.
    expect(judged([listing({ ...narrower, head_cost: 10.6 })])[0]!.work_regression).toBeNull();
    // Fewer than ten rows more, or within the threshold: not failed.
    expect(judged([listing({ ...narrower, base: 2, head: 11 })])[0]!.work_regression).toBeNull();
    expect(judged([listing({ ...narrower, base: 240, head: 250 })])[0]!.work_regression).toBeNull();
    // Only a changed plan is judged on its rows.
    expect(judged([listing(narrower, false)])[0]!.work_regression).toBeNull();
  });

  it('needs the growth above the threshold and above a page, half a record, 32 bytes', () => {
    const small = plan(
      'ee05',
      'UPDATE t SET v = $1 WHERE id = $2',
      work([
        { shared_hit: 7, wal_records: 1, wal_bytes: 100 },
        { shared_hit: 7, wal_records: 1, wal_bytes: 100 },
      ]),
      work([
        { shared_hit: 8.5, wal_records: 1.2, wal_bytes: 120 },
        { shared_hit: 8.5, wal_records: 1.2, wal_bytes: 120 },
      ]),
    );
    expect(judged([small], { growth: 0.25, min_share: 0.01 })[0]!.work_regression).toBeNull();
    // The same moves clear the default 10 % where they are large enough: pages by 1.5, not WAL by 20 B.
    expect(judged([small])[0]!.work_regression?.counters.map((c) => c.counter)).toEqual(['pages']);
  });

  it('judges a read on its pages only: what it writes follows the pages’ state', () => {
    const read = plan(
      'ff06',
      'SELECT * FROM orders WHERE id = $1',
      work([
        { shared_hit: 4, wal_records: 0, wal_bytes: 0 },
        { shared_hit: 4, wal_records: 0, wal_bytes: 0 },
      ]),
      work([
        { shared_hit: 4, wal_records: 2, wal_bytes: 400 },
        { shared_hit: 4, wal_records: 2, wal_bytes: 400 },
      ]),
    );
    expect(judged([read])[0]!.work_regression).toBeNull();
    const wider = plan(
      'ff07',
      'SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at DESC LIMIT $2',
      work([{ shared_hit: 8 }, { shared_hit: 8 }]),
      work([{ shared_hit: 16 }, { shared_hit: 16.2 }]),
    );
    expect(judged([wider])[0]!.work_regression?.counters.map((c) => c.counter)).toEqual(['pages']);
  });

  it('leaves WAL bytes out where full-page images were written, and judges WAL records', () => {
    const f = plan(
      'gg08',
      'UPDATE t SET v = $1 WHERE id = $2',
      work([
        { shared_hit: 7, wal_records: 1, wal_bytes: 100, wal_fpi: 0.1 },
        { shared_hit: 7, wal_records: 1, wal_bytes: 100 },
      ]),
      work([
        { shared_hit: 7, wal_records: 3, wal_bytes: 300 },
        { shared_hit: 7, wal_records: 3, wal_bytes: 300 },
      ]),
    );
    expect(judged([f])[0]!.work_regression?.counters.map((c) => c.counter)).toEqual(['wal_records']);
  });

  it('needs min-calls on each side and a share of the workload', () => {
    const rare = plan('hh09', indexedUpdate().normalized, indexedUpdate().base.stats!.work!, indexedUpdate().head.stats!.work!, 3);
    const [few] = judged([rare, steadyRead()]);
    expect(few!.work_regression).toBeUndefined();
    // Beside a write that does most of the workload's WAL and pages: 1,000 calls of 21,000 (4.8 %),
    // 17 % of the pages, 23 % of the WAL.
    const busyWriter = plan(
      'hh10',
      'INSERT INTO events (payload) VALUES ($1)',
      work(
        [
          { shared_hit: 4, wal_bytes: 50 },
          { shared_hit: 4, wal_bytes: 50 },
        ],
        { shared_hit: 4, wal_bytes: 50 },
      ),
      work([
        { shared_hit: 4, wal_bytes: 50 },
        { shared_hit: 4, wal_bytes: 50 },
      ]),
      20_000,
    );
    const share = (min: number) => judged([indexedUpdate(), busyWriter], { growth: 0.25, min_share: min })[0]!.work_regression;
    expect(share(0.2)?.share).toEqual({ calls: 1000 / 21_000, pages: expect.closeTo(0.179, 3), wal: expect.closeTo(0.235, 3) });
    expect(share(0.25)).toBeNull();
  });

  it('off, or work counted by EXPLAIN ANALYZE: nothing judged, and the weaker source counted', () => {
    expect(applyWorkRule(report([indexedUpdate()]), null, 20).fingerprints[0]!.work_regression).toBeUndefined();
    const explained = indexedUpdate();
    explained.base = side(explained.base.stats!.work!, 1, 'explain-analyze');
    const plans = applyWorkRule(report([explained, steadyRead()]), WORK_RULE_DEFAULTS, 20);
    expect(plans.fingerprints[0]!.work_regression).toBeUndefined();
    expect(unjudgedByWorkRule(plans)).toBe(1);
  });
});

describe('the verdict and the reports', () => {
  const stored = parseReport(readFileSync(new URL('./fixtures/reports/work-index.json', import.meta.url), 'utf8'), 'work-index');

  /** The stored run (an index on customers.last_login, reported and not gated then) judged by the rule. */
  function judgedReport(): GateReport {
    const thresholds = { ...stored.thresholds, work_rule: WORK_RULE_DEFAULTS };
    const plans = applyWorkRule(stored.plans!, WORK_RULE_DEFAULTS, thresholds.min_calls);
    const decided = decideVerdict({ comparison: stored.comparison, migrationFailure: null, thresholds, plans, coverage: stored.coverage });
    return { ...stored, ...decided, thresholds, plans };
  }

  it('a real run with an index on the updated column: a regression naming the UPDATE, its work, the index and the line', () => {
    const r = judgedReport();
    expect(r.verdict).toBe('regression');
    expect(r.headline).toBe('regression: 1 query doing more work per call');
    expect(r.reasons).toHaveLength(1);
    expect(r.reasons[0]).toMatch(
      /^`UPDATE customers SET last_login = now\(\) WHERE id = \$1` \([0-9a-f]+\): more work per call: WAL 91 B → 307 B per call \(\+239 %\), 7\.0 → 17\.4 pages \(\+14\d %\), 1\.2 → 4\.2 WAL records \(\+2\d\d %\), every head replay above every base replay \(\d+ % of head's WAL\); index customers_last_login_idx added on public\.customers \(test\/fixtures\/reports\/work-index\/head\/006_customers_last_login_idx\.sql, line \d+\)$/,
    );
  });

  it('the markdown marks it and says the rule failed it; JUnit has a failing case of its own', () => {
    const r = judgedReport();
    const md = renderMarkdown(r);
    expect(md).toMatch(/^### ❌ pg-retest: regression — 1 query doing more work per call\n/);
    expect(md).toMatch(
      /did more work per call on head, \d+ less \(the work rule failed 1: pages or WAL per call more than 10 % above base in every replay/,
    );
    expect(md).toMatch(/\| `UPDATE customers SET last_login[^|]*` \| ❌ more \|/);
    const junit = renderJunit(r);
    expect(junit).toMatch(
      /<testcase name="work per call within the work rule"[^>]*>\s*<failure message="1 statement doing more work per call" type="work">`UPDATE customers SET last_login/,
    );
    // With the rule off the same run has no such case.
    expect(renderJunit({ ...stored, thresholds: { ...stored.thresholds, work_rule: null } })).not.toContain('within the work rule');
  });

  it('the index line is annotated as an error: it fails the gate', () => {
    const [annotation] = migrationAnnotations(judgedReport(), true);
    expect(annotation).toMatchObject({ level: 'error', file: 'test/fixtures/reports/work-index/head/006_customers_last_login_idx.sql' });
    expect(annotation!.message).toContain('fails the gate (the work rule)');
  });

  it('a changed plan whose rows could not be counted is listed among the failed probes, not left out', () => {
    const r = judgedReport();
    const failure = {
      fingerprint: 'ab07',
      normalized: 'SELECT id FROM products WHERE category = $1',
      side: 'head' as const,
      stage: 'rows' as const,
    };
    const plans = { ...r.plans!, failures: [{ ...failure, message: 'canceling statement due to statement timeout', sqlstate: '57014' }] };
    expect(renderMarkdown({ ...r, plans })).toContain(
      '- `SELECT id FROM products WHERE category = $1` on head (rows read not counted): canceling statement due to statement timeout',
    );
    // The JSON report keeps it.
    expect(parseReport(JSON.stringify({ ...r, plans }), 'rows-failure').plans!.failures[0]!.stage).toBe('rows');
  });

  it('a warning names the fingerprints it could not judge', () => {
    const plans = structuredClone(stored.plans!);
    plans.fingerprints[0]!.base.stats!.source = 'explain-analyze';
    const thresholds = { ...stored.thresholds, work_rule: WORK_RULE_DEFAULTS };
    const decided = decideVerdict({ comparison: stored.comparison, migrationFailure: null, thresholds, plans, coverage: stored.coverage });
    expect(decided.warnings).toContain(
      'the work rule judged no work of 1 fingerprint counted by one EXPLAIN ANALYZE instead of pg_stat_statements (one execution, no replays to measure a spread against): their work per call is reported, not gated',
    );
  });
});

describe('options', () => {
  const base = ['--workload', 'w.wkl', '--migrations', 'm/*.sql', '--database-url', 'postgres://u@127.0.0.1/d'];
  const parseGateOptions = (argv: string[]) => parseOptions(gateCommand, tokenize('gate', [...base, ...argv], gateCommand.options).values);
  it('work-threshold and work-min-share, off, and what is refused', () => {
    expect(parseGateOptions([]).workRule).toEqual({ growth: 0.1, min_share: 0.01 });
    expect(parseGateOptions(['--work-threshold', '40%', '--work-min-share', '0.5%']).workRule).toEqual({ growth: 0.4, min_share: 0.005 });
    expect(parseGateOptions(['--work-threshold', 'off']).workRule).toBeNull();
    expect(() => parseGateOptions(['--work-threshold', 'none'])).toThrow(
      /option --work-threshold: expected a percentage such as 25% \(or a fraction such as 0\.25\), above 0 and at most 1000%, or off, got 'none'/,
    );
  });
});
