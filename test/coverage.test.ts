// Coverage (docs/gate.md, "Coverage"): what share of the workload each side ran, what never ran
// and why, and the inconclusive verdict below min-coverage. The rules are pure functions of
// replay reports and gate reports, tested here on built inputs and on a stored report (the gate
// on the shop's checkout.wkl without its seed: every order insert fails its foreign key to
// customers, and the rest of each checkout is skipped); one end-to-end run checks the exit status.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { coverageOf } from '../src/verdict/coverage.js';
import type { GateReport, Thresholds } from '../src/verdict/report-types.js';
import type { Accounting, Comparison, FingerprintReport, ReplayReport } from '../src/types.js';
import { decideVerdict, exitCodeOfVerdict } from '../src/verdict/decide.js';
import { parseReport, renderJunit, renderMarkdown, toJson } from '../src/report/index.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { shopGate } from './support/shop-gate.js';

function accounting(executed: number, skipped: Record<string, number> = {}, notExecuted: Record<string, number> = {}): Accounting {
  const s = Object.values(skipped).reduce((a, b) => a + b, 0);
  const n = Object.values(notExecuted).reduce((a, b) => a + b, 0);
  return {
    captured: executed + s + n,
    executed,
    ok: executed,
    errors: 0,
    skipped: s,
    not_executed: n,
    skipped_by_reason: skipped,
    not_executed_by_reason: notExecuted,
  };
}

function fingerprint(id: string, normalized: string, counts: Accounting, errors: FingerprintReport['errors'] = []): FingerprintReport {
  return {
    fingerprint: id,
    normalized,
    kind: 'insert',
    counts,
    latency: {} as FingerprintReport['latency'],
    captured_latency: {} as FingerprintReport['latency'],
    rows: 0,
    errors,
  };
}

/** A replay of a checkout where the order insert fails in 3 of 4 transactions. */
function replay(): ReplayReport {
  const insert = fingerprint('aaaa', 'INSERT INTO orders (customer_id) VALUES ($1) RETURNING id', { ...accounting(4), ok: 1, errors: 3 }, [
    {
      sqlstate: '23503',
      message: 'insert or update on table "orders" violates foreign key constraint "orders_customer_id_fkey"',
      count: 3,
    },
  ]);
  const lines = fingerprint('bbbb', 'INSERT INTO order_items (order_id) VALUES ($1)', accounting(1, { transaction_aborted: 3 }));
  const stock = fingerprint('cccc', 'UPDATE products SET stock = stock - $1 WHERE id = $2', accounting(0, { transaction_aborted: 4 }));
  const totals = accounting(5, { transaction_aborted: 7 });
  return { totals: { ...totals, ok: 2, errors: 3 }, fingerprints: [insert, lines, stock] } as unknown as ReplayReport;
}

const thresholds: Thresholds = {
  p95_threshold: 0.2,
  min_delta_ms: 0.5,
  min_calls: 20,
  max_new_errors: 0,
  confidence: 0.95,
  min_coverage: 0.95,
};

function comparison(overrides: Partial<Comparison> = {}): Comparison {
  return {
    fingerprints: [],
    overall: { regressed: false } as Comparison['overall'],
    new_errors: [],
    shared_errors: [],
    fixed_errors: [],
    only_base: [],
    only_head: [],
    noise_floor: { value: 0.1, fingerprints: 3, method: 'test' },
    server_time: { measured: true, reason: null, noise_floor: { value: 0.05, fingerprints: 3, method: 'test' } },
    varying_errors: [],
    ...overrides,
  } as Comparison;
}

describe('coverageOf', () => {
  it('adds up each side, names what never ran with its reason, and finds the error behind skipped transactions', () => {
    const c = coverageOf([replay(), replay()], [replay()], 0.95);
    expect(c.base).toMatchObject({
      captured: 24,
      executed: 10,
      skipped: 14,
      not_executed: 0,
      skipped_by_reason: { transaction_aborted: 14 },
    });
    expect(c.base.executed_share).toBeCloseTo(10 / 24);
    expect(c.head.captured).toBe(12);
    expect(c.sufficient).toBe(false);
    // Only the stock UPDATE never executed anywhere; the line insert ran once per replay.
    expect(c.not_compared).toEqual([
      {
        fingerprint: 'cccc',
        normalized: 'UPDATE products SET stock = stock - $1 WHERE id = $2',
        captured: 12,
        reason: 'an earlier statement of its transaction failed',
      },
    ]);
    expect(c.first_cause).toMatch(
      /^23503 on `INSERT INTO orders \(customer_id\) VALUES \(\$1\) RETURNING id`: insert or update on table "orders"/,
    );
  });

  it('is sufficient at the threshold and says nothing is missing when everything ran', () => {
    const full = { totals: accounting(10), fingerprints: [fingerprint('aaaa', 'SELECT 1', accounting(10))] } as unknown as ReplayReport;
    const c = coverageOf([full], [full], 1);
    expect(c.sufficient).toBe(true);
    expect(c.not_compared).toEqual([]);
    expect(c.first_cause).toBeNull();
  });
});

describe('the verdict with coverage', () => {
  const low = coverageOf([replay()], [replay()], 0.95);

  it('below min-coverage and nothing slower: inconclusive, exit 4, the blind spot first among the warnings', () => {
    const v = decideVerdict({
      comparison: comparison({
        fingerprints: [{ regressed: false, checks: { enough_calls: true } } as Comparison['fingerprints'][number]],
      }),
      coverage: low,
      migrationFailure: null,
      thresholds,
    });
    expect(v.verdict).toBe('inconclusive');
    expect(exitCodeOfVerdict(v.verdict)).toBe(4);
    expect(v.headline).toMatch(
      /^inconclusive: 58 % of the captured statements did not run on base \(minimum coverage 95 %\): 7 statements skipped because an earlier statement of its transaction failed; the most frequent error: 23503/,
    );
    expect(v.warnings[0]).toMatch(/^not compared: `UPDATE products SET stock/);
  });

  it('a regression in what did run is still a regression, with the coverage said first', () => {
    const v = decideVerdict({
      comparison: comparison({
        new_errors: [
          {
            fingerprint: 'x',
            normalized: 'SELECT 1',
            sqlstate: '42703',
            message: 'column does not exist',
            base_count: 0,
            head_count: 3,
            rule: 'deterministic',
          },
        ] as Comparison['new_errors'],
      }),
      coverage: low,
      migrationFailure: null,
      thresholds,
    });
    expect(v.verdict).toBe('regression');
    expect(v.warnings[0]).toMatch(/^only 42 % of the captured statements ran on base/);
  });

  it('with enough coverage the pass is a pass', () => {
    const full = coverageOf([replay()], [replay()], 0.4);
    const v = decideVerdict({
      comparison: comparison({
        fingerprints: [{ regressed: false, checks: { enough_calls: true } } as Comparison['fingerprints'][number]],
      }),
      coverage: full,
      migrationFailure: null,
      thresholds,
    });
    expect(v.verdict).toBe('pass');
  });
});

describe('reports of an inconclusive run (stored: checkout.wkl without its seed)', () => {
  const report: GateReport = parseReport(
    readFileSync(new URL('./fixtures/reports/inconclusive.json', import.meta.url), 'utf8'),
    'inconclusive',
  );

  it('markdown: the headline says what did not run and why; coverage rows per side; the blind spots before the summary', () => {
    const md = renderMarkdown(report);
    expect(md).toMatch(/^### ⚠️ pg-retest: inconclusive — 46 % of the captured workload did not run on base/);
    expect(md).toContain('| statements captured | 1,854 | 1,854 |');
    expect(md).toContain('| executed | 999 (54 %) | 999 (54 %) |');
    expect(md).toContain('| skipped | 855 | 855 |');
    expect(md).toContain('| not executed | 0 | 0 |');
    expect(md).toContain('- base: 855 skipped: an earlier statement of its transaction failed');
    const notCompared = md.indexOf('#### ⚠️ Not compared: 5 statements never executed');
    expect(notCompared).toBeGreaterThan(0);
    expect(notCompared).toBeLessThan(md.indexOf('#### Summary'));
    expect(md).toContain('`UPDATE products SET stock = stock - $1 WHERE id = $2` | 426 | an earlier statement of its transaction failed |');
    // Keys and sequences in the environment table: the producers failed, so nothing was substituted.
    expect(md).toMatch(
      /generated keys \| 36 statements returning keys \(recorded in the workload\), 152 literals carrying them; over 7 replays: 0 sent with the replayed id, 315 unresolved/,
    );
    expect(md).toMatch(/sequences at capture time \| `public.orders_id_seq` → 120001 \(inferred\)/);
  });

  it('JUnit: the min-coverage case fails with the headline and the per-side figures', () => {
    const xml = renderJunit(report);
    expect(xml).toMatch(
      /<testcase name="min-coverage: base executes at least 95 % of the captured statements"[^>]*>\s*<failure message="inconclusive: 46 %/,
    );
    expect(xml).toContain('base: 1,854 captured, 999 executed (54 %), 855 skipped (transaction_aborted 855), 0 not executed\n');
  });

  it('JSON: coverage and keys survive a round trip through the schema', () => {
    const again = parseReport(toJson(report), 'again');
    expect(again.verdict).toBe('inconclusive');
    expect(again.coverage!.not_compared).toHaveLength(5);
    expect(again.keys!.sequences![0]!.action).toBe('set');
  });
});

describe('the gate end to end', () => {
  it('checkout.wkl on a schema without its seed: inconclusive, exit 4, never a green pass', () => {
    // The latency rule out of reach: a slower statement on one side would make it a regression
    // (exit 1), which is right for a gate and not what this test is about.
    const r = shopGate('checkout.wkl', ['--rounds', '1', ...LATENCY_RULE_OUT_OF_REACH]);
    expect(r.status, `${r.stderr}\n${r.stdout}`).toBe(4);
    expect(r.stdout).toMatch(/^### ⚠️ pg-retest: inconclusive/);
    expect(r.stdout).toContain('#### ⚠️ Not compared');
  }, 240_000);
});
