// The verdict's reasons, one per statement (docs/gate.md, "The verdict"): every rule that fired on
// a fingerprint joined into its one line, instead of a line per rule. Pure functions of the stored
// regression report, its one regressed fingerprint made to break every per-statement rule.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseReport } from '../src/report/index.js';
import { decideVerdict } from '../src/verdict/decide.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { ReasonList } from '../src/verdict/statement-reasons.js';

const stored: GateReport = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');

/** The stored comparison, its slower SELECT regressed by the client p95 and by the server's time. */
function bothRules(): NonNullable<GateReport['comparison']> {
  const comparison = structuredClone(stored.comparison!);
  const f = comparison.fingerprints[0]!;
  f.rules = ['client_p95', 'server_time'];
  f.server_time = {
    calls_base: f.calls_base,
    calls_head: f.calls_head,
    base: { p50_us: 82, p95_us: 120, p99_us: 150 },
    head: { p50_us: 4500, p95_us: 4900, p99_us: 5100 },
    ratio: 54.9,
    shift_us: 4418,
    ci_low_us: 4300,
    ci_high_us: 4520,
    noise_floor: 0.03,
    checks: { over_threshold: true, ci_above_noise: true, over_min_delta: true, enough_calls: true, slower_in_every_replay: true },
    regressed: true,
  };
  return comparison;
}

describe('one reason per statement', () => {
  it('the client p95 and the server time of one statement make one line, each rule its evidence', () => {
    const v = decideVerdict({ comparison: bothRules(), migrationFailure: null, thresholds: stored.thresholds });
    expect(v.verdict).toBe('regression');
    const lines = v.reasons.filter((r) => r.includes('5c2e9b1a7d3f4e60'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^`SELECT o\.id, .*` \(5c2e9b1a7d3f4e60\): p95 505 µs → 5\.21 ms \(\+932 %, 95 % CI 9\.90×–10\.73×\); server time per call 82 µs → 4\.50 ms median \(\+4\.42 ms, 95 % CI \+4\.30 ms–\+4\.52 ms\)$/,
    );
    // The whole workload is no statement: a line of its own.
    expect(v.reasons.filter((r) => r.startsWith('whole workload: p95 1.42 ms → 1.98 ms (+39 %'))).toHaveLength(1);
  });

  it('the server time alone still says the client p95 beside it', () => {
    const comparison = bothRules();
    comparison.fingerprints[0]!.rules = ['server_time'];
    const v = decideVerdict({ comparison, migrationFailure: null, thresholds: stored.thresholds });
    expect(v.reasons[0]).toMatch(/\): server time per call 82 µs → 4\.50 ms median \(.*; client p95 505 µs → 5\.21 ms\)$/);
  });

  it('an absolute limit on the same statement joins its line, the whole-workload limit stays apart', () => {
    const thresholds = { ...stored.thresholds, p95_max_ms: 1 };
    const v = decideVerdict({ comparison: bothRules(), migrationFailure: null, thresholds });
    const lines = v.reasons.filter((r) => r.includes('5c2e9b1a7d3f4e60'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/median \(.*\); head p95 5\.21 ms exceeds the 1 ms limit \(p95-max-ms\)$/);
    expect(v.reasons).toContain("head's whole-workload p95 1.98 ms exceeds the 1 ms limit (p95-max-ms)");
  });

  it('keeps the order of first appearance', () => {
    const list = new ReasonList();
    list.addFor({ fingerprint: 'a', normalized: 'SELECT 1', evidence: 'one' });
    list.add('whole workload: two');
    list.addFor({ fingerprint: 'b', normalized: 'SELECT 2', evidence: 'three' });
    list.addFor({ fingerprint: 'a', normalized: 'SELECT 1', evidence: 'four' });
    expect(list.lines()).toEqual(['`SELECT 1` (a): one; four', 'whole workload: two', '`SELECT 2` (b): three']);
  });
});
