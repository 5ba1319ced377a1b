// The plan probe's pure parts, without a server: EXPLAIN JSON to shapes, the change line,
// sequential-scan switches, the plan rules and the verdict they give, and the options' values.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseReport, renderJunit, renderMarkdown } from '../src/report/index.js';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { gateCommand } from '../src/gate/options.js';
import { InputError } from '../src/exit-codes.js';
import type { Thresholds } from '../src/verdict/report-types.js';
import type { Comparison } from '../src/types.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { evaluatePlanRules, reasonLine } from '../src/plans/rules.js';
import { describeChange, parseExplain, planShape, type RawPlanNode, sameShape, seqScanSwitches, shapeLines } from '../src/plans/shape.js';
import type { FingerprintPlan, PlanRules, PlansReport } from '../src/plans/types.js';

const scan = (type: string, relation: string, extra: Partial<RawPlanNode> = {}): RawPlanNode => ({
  'Node Type': type,
  'Relation Name': relation,
  Schema: 'public',
  ...extra,
});
const node = (type: string, plans: RawPlanNode[], extra: Partial<RawPlanNode> = {}): RawPlanNode => ({
  'Node Type': type,
  Plans: plans,
  ...extra,
});

const indexed = node('Limit', [
  node('Sort', [
    scan('Bitmap Heap Scan', 'orders', { Plans: [{ 'Node Type': 'Bitmap Index Scan', 'Index Name': 'orders_customer_created_idx' }] }),
  ]),
]);
const sequential = node('Limit', [node('Sort', [scan('Seq Scan', 'orders')])]);

describe('plan shapes', () => {
  it('reads EXPLAIN JSON, keeping the 64-bit query identifier exact', () => {
    const json = `[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "orders", "Schema": "public", "Total Cost": 2728.0, "Plan Rows": 10}, "Query Identifier": -8936855378193510912}]`;
    const parsed = parseExplain(json);
    expect(parsed.queryId).toBe('-8936855378193510912');
    expect(planShape(parsed.plan)).toEqual([{ depth: 0, node: 'Seq Scan', relation: 'orders', index: null }]);
    expect(() => parseExplain('[{"Plan": {}}]')).toThrow(/unexpected EXPLAIN output/);
  });

  it('names nodes as EXPLAIN text does, and leaves conditions and costs out', () => {
    const plan = node(
      'Hash Join',
      [
        node('Aggregate', [scan('Seq Scan', 'order_items', { 'Parallel Aware': true })], { Strategy: 'Hashed' }),
        scan('Index Scan', 'products', { 'Index Name': 'products_pkey', 'Scan Direction': 'Backward', 'Total Cost': 4 }),
      ],
      { 'Join Type': 'Left' },
    );
    expect(shapeLines(planShape(plan))).toEqual([
      'Hash Left Join',
      '  HashAggregate',
      '    Parallel Seq Scan on order_items',
      '  Index Scan Backward using products_pkey on products',
    ]);
  });

  it('says what replaced what on which relation', () => {
    const base = planShape(indexed);
    const head = planShape(sequential);
    expect(sameShape(base, base)).toBe(true);
    expect(sameShape(base, head)).toBe(false);
    expect(describeChange(base, head)).toBe('orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan');
    expect(describeChange(head, base)).toBe('orders: Seq Scan → Bitmap Heap Scan using orders_customer_created_idx');
    expect(describeChange(base, base)).toBe('');
    expect(seqScanSwitches(base, head)).toEqual([{ relation: 'orders', indexes: ['orders_customer_created_idx'] }]);
    expect(seqScanSwitches(head, base)).toEqual([]);
    // Nodes that appear without a change of access are named too.
    const nested = planShape(node('Nested Loop', [scan('Seq Scan', 'a'), scan('Index Scan', 'b', { 'Index Name': 'b_pkey' })]));
    const hashed = planShape(
      node('Hash Join', [scan('Seq Scan', 'a'), node('Hash', [scan('Index Scan', 'b', { 'Index Name': 'b_pkey' })])]),
    );
    expect(describeChange(nested, hashed)).toBe('added Hash Join, Hash; removed Nested Loop');
  });
});

function fingerprintPlan(over: Partial<FingerprintPlan> = {}): FingerprintPlan {
  const side = (bpc: number, cost: number) => ({
    shape: [],
    total_cost: cost,
    plan_rows: 10,
    query_id: '1',
    stats: {
      source: 'pg_stat_statements' as const,
      calls: 144,
      rows: 1440,
      shared_hit: bpc * 144,
      shared_read: 0,
      buffers_per_call: bpc,
      total_ms: 1,
      mean_ms: 0.01,
    },
    stats_note: null,
  });
  return {
    fingerprint: 'd426d21d3c8ce61a',
    normalized: 'SELECT o.id FROM orders o WHERE o.customer_id = $1',
    kind: 'select',
    base: side(14.5, 42),
    head: side(1229.5, 2728),
    changed: true,
    change: 'orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan',
    assessment: 'regression',
    seq_scans: [{ relation: 'orders', indexes: ['orders_customer_created_idx'], relation_rows: 120_000 }],
    buffers_ratio: 1229.5 / 14.5,
    ...over,
  };
}

function plansReport(fingerprints: FingerprintPlan[], over: Partial<PlansReport> = {}): PlansReport {
  return {
    stats: { source: 'pg_stat_statements', pg_stat_statements: '1.10', unavailable_reason: null, unjoined: 0 },
    not_explainable: 4,
    fingerprints,
    failures: [],
    error: null,
    ...over,
  };
}

const rules = (over: Partial<PlanRules> = {}): PlanRules => ({
  fail_on_plan_change: 'none',
  plan_min_rows: 10_000,
  max_buffers_growth: null,
  ...over,
});

describe('plan rules', () => {
  it('none gates nothing; seq-scan needs a large enough table; any takes every change', () => {
    const report = plansReport([fingerprintPlan()]);
    expect(evaluatePlanRules(report, rules()).reasons).toEqual([]);
    const seq = evaluatePlanRules(report, rules({ fail_on_plan_change: 'seq-scan' }));
    expect(seq.reasons.map(reasonLine)).toEqual([
      '`SELECT o.id FROM orders o WHERE o.customer_id = $1` (d426d21d3c8ce61a): sequential scan on orders (120,000 rows): ' +
        '`orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan`; shared buffers per call 15 → 1,230',
    ]);
    expect(evaluatePlanRules(report, rules({ fail_on_plan_change: 'seq-scan', plan_min_rows: 200_000 })).reasons).toEqual([]);
    const improvement = plansReport([fingerprintPlan({ seq_scans: [], assessment: 'improvement' })]);
    expect(evaluatePlanRules(improvement, rules({ fail_on_plan_change: 'seq-scan' })).reasons).toEqual([]);
    expect(evaluatePlanRules(improvement, rules({ fail_on_plan_change: 'any' })).reasons).toHaveLength(1);
  });

  it('max-buffers-growth compares buffers per call, and ignores a few pages', () => {
    expect(evaluatePlanRules(plansReport([fingerprintPlan()]), rules({ max_buffers_growth: 10 })).reasons[0]!.evidence).toMatch(
      /shared buffers per call 15 → 1,230 \(85×, allowed: 10×\)$/,
    );
    expect(evaluatePlanRules(plansReport([fingerprintPlan()]), rules({ max_buffers_growth: 100 })).reasons).toEqual([]);
    const small = fingerprintPlan({ changed: false, buffers_ratio: 12 });
    small.base.stats!.buffers_per_call = 1;
    small.head.stats!.buffers_per_call = 12;
    expect(evaluatePlanRules(plansReport([small]), rules({ max_buffers_growth: 10 })).reasons).toEqual([]);
  });

  it('a rule that could not be evaluated makes the verdict an error, never a pass', () => {
    const comparison = {
      fingerprints: [],
      new_errors: [],
      shared_errors: [],
      fixed_errors: [],
      only_base: [],
      only_head: [],
      noise_floor: { value: 0.05, method: 'm', fingerprints: 3 },
      overall: { regressed: false },
    } as unknown as Comparison;
    comparison.fingerprints.push({ regressed: false, checks: { enough_calls: true } } as Comparison['fingerprints'][number]);
    const thresholds = (r: PlanRules): Thresholds => ({
      p95_threshold: 0.2,
      min_delta_ms: 0.5,
      min_calls: 20,
      max_new_errors: 0,
      confidence: 0.95,
      plan_rules: r,
    });
    const failed = plansReport([], {
      failures: [{ fingerprint: 'ab', normalized: 'SELECT $1', side: 'head', stage: 'explain', message: 'boom', sqlstate: null }],
    });
    expect(decideVerdict({ comparison, migrationFailure: null, thresholds: thresholds(rules()), plans: failed }).verdict).toBe('pass');
    const gated = decideVerdict({
      comparison,
      migrationFailure: null,
      thresholds: thresholds(rules({ fail_on_plan_change: 'seq-scan' })),
      plans: failed,
    });
    expect(gated.verdict).toBe('error');
    expect(gated.reasons[0]).toMatch(/1 plan probe failed; first: `SELECT \$1` \(ab\) on head \(explain\): boom/);
    const whole = decideVerdict({
      comparison,
      migrationFailure: null,
      thresholds: thresholds(rules({ max_buffers_growth: 10 })),
      plans: null,
    });
    expect(whole.verdict).toBe('error');
    const noBuffers = fingerprintPlan({ changed: false, buffers_ratio: null });
    noBuffers.head.stats = null;
    noBuffers.head.stats_note = 'EXPLAIN ANALYZE failed: x';
    expect(
      decideVerdict({
        comparison,
        migrationFailure: null,
        thresholds: thresholds(rules({ max_buffers_growth: 10 })),
        plans: plansReport([noBuffers]),
      }).verdict,
    ).toBe('error');
    const regressed = decideVerdict({
      comparison,
      migrationFailure: null,
      thresholds: thresholds(rules({ fail_on_plan_change: 'seq-scan' })),
      plans: plansReport([fingerprintPlan()]),
    });
    expect(regressed.verdict).toBe('regression');
    expect(regressed.headline).toBe('regression: 1 plan change');
  });
});

describe('plan options', () => {
  const base = ['--workload', 'w.wkl', '--migrations', 'db/*.sql', '--base-ref', 'main'];
  const parse = (argv: string[]) => parseOptions(gateCommand, tokenize('gate', argv, gateCommand.options).values);

  it('default to showing plans only', () => {
    expect(parse(base).planRules).toEqual({ fail_on_plan_change: 'none', plan_min_rows: 10_000, max_buffers_growth: null });
    expect(
      parse([...base, '--fail-on-plan-change', 'seq-scan', '--plan-min-rows', '5000', '--max-buffers-growth', '10x']).planRules,
    ).toEqual({
      fail_on_plan_change: 'seq-scan',
      plan_min_rows: 5000,
      max_buffers_growth: 10,
    });
    expect(parse([...base, '--max-buffers-growth', '2.5×']).planRules.max_buffers_growth).toBe(2.5);
  });

  it('reject bad values in one line naming the option and what is allowed', () => {
    const error = (argv: string[]) => {
      try {
        parse([...base, ...argv]);
      } catch (e) {
        expect(e).toBeInstanceOf(InputError);
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    expect(error(['--fail-on-plan-change', 'sometimes'])).toMatch(
      /option --fail-on-plan-change: expected one of none, seq-scan, any, got 'sometimes'/,
    );
    expect(error(['--max-buffers-growth', '0.5x'])).toMatch(
      /option --max-buffers-growth: expected a growth factor above 1 such as 10x, got '0.5x'/,
    );
  });
});

describe('reports with plans', () => {
  const withPlans = () => {
    const report = parseReport(readFileSync(new URL('./fixtures/reports/pass.json', import.meta.url), 'utf8'));
    report.thresholds.plan_rules = rules({ fail_on_plan_change: 'seq-scan' });
    const first = report.comparison!.fingerprints[0]!;
    report.plans = plansReport([fingerprintPlan({ fingerprint: first.fingerprint, normalized: first.normalized })]);
    return report;
  };

  it('round-trip through the JSON reader, and old reports without plans still read', () => {
    const report = withPlans();
    expect(parseReport(JSON.stringify(report))).toEqual(report);
  });

  it('markdown: a Plan changes section and the plan column; JUnit: a failing plan case', () => {
    const report = withPlans();
    const md = renderMarkdown(report);
    expect(md).toContain('#### Plan changes');
    expect(md).toContain('`orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan`');
    expect(md).toContain('15 → 1,230 (85×)');
    expect(md).toContain('pg_stat_statements 1.10');
    expect(md).toContain('| buffers and server time | pg_stat_statements 1.10 |');
    report.verdict = 'regression';
    expect(renderMarkdown(report).split('\n')[0]).toBe('### ❌ pg-retest: regression — 1 plan change');
    const xml = renderJunit(report);
    expect(xml).toMatch(/<testcase name="query plans within the plan rules"[^>]*>\s*<failure[^>]*message="1 plan rule violation"/);
    report.plans = null;
    expect(renderJunit(report)).toMatch(
      /<testcase name="query plans within the plan rules"[^>]*>\s*<skipped message="not measured: plans could not be probed"/,
    );
  });
});
