// Absolute limits on head (docs/gate.md, "Absolute limits"): p95 and p99 in milliseconds for the
// whole workload and each fingerprint with min-calls calls, and the error rate of the whole
// workload. Pure functions of a comparison, tested on the stored regression report; one
// end-to-end run checks the options, the exit status and the message.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkAbsoluteLimits } from '../src/verdict/absolute-limits.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { parseReport, renderJunit, renderMarkdown, toJson } from '../src/report/index.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { shop, shopGate } from './support/shop-gate.js';

const stored: GateReport = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');

/** The stored report with limits set (and its relative rules out of the way). */
function withLimits(limits: Partial<GateReport['thresholds']>): GateReport {
  const r = structuredClone(stored);
  r.thresholds = { ...r.thresholds, ...limits };
  return r;
}

describe('checkAbsoluteLimits', () => {
  it('p95: the whole workload and every fingerprint with enough calls over it, nothing for those with fewer', () => {
    // Whole workload 1.98 ms; fingerprints at 5.21 ms (1,210 calls), 2.75 ms (6 calls), 905 µs (960).
    const r = withLimits({ p95_max_ms: 1 });
    const checks = checkAbsoluteLimits(r.comparison!, r.accounting!.head, r.thresholds);
    expect(checks.map((c) => [c.name, c.exceeded])).toEqual([
      ['whole-workload p95', true],
      ['p95 of 5c2e9b1a7d3f4e60', true],
    ]);
    expect(checks[0]!.line).toBe("head's whole-workload p95 1.98 ms exceeds the 1 ms limit (p95-max-ms)");
  });

  it('p99 and the error rate, within their limits', () => {
    const r = withLimits({ p99_max_ms: 50, error_rate_max: 0.01 });
    const checks = checkAbsoluteLimits(r.comparison!, r.accounting!.head, r.thresholds);
    expect(checks.map((c) => [c.name, c.exceeded])).toEqual([
      ['whole-workload p99', false],
      ['error rate', false],
    ]);
    expect(checks[1]!.line).toBe("head's error rate 0.08 % (12 of 14460 executed) is within the 1.00 % limit (error-rate-max-pct)");
  });

  it('no limit set: nothing checked', () => {
    expect(checkAbsoluteLimits(stored.comparison!, stored.accounting!.head, stored.thresholds)).toEqual([]);
  });
});

describe('the verdict and the reports with limits', () => {
  const r = withLimits({ error_rate_max: 0.0005, p95_threshold: 10 });

  it('a limit exceeded is a regression, named with the measured value, even when no relative rule fired', () => {
    const comparison = structuredClone(r.comparison!);
    for (const f of comparison.fingerprints) f.regressed = false;
    comparison.overall.regressed = false;
    const v = decideVerdict({ comparison, headAccounting: r.accounting!.head, migrationFailure: null, thresholds: r.thresholds });
    expect(v.verdict).toBe('regression');
    expect(v.headline).toBe('regression: 1 absolute limit exceeded');
    expect(v.reasons).toEqual(["head's error rate 0.08 % (12 of 14460 executed) exceeds the 0.05 % limit (error-rate-max-pct)"]);
  });

  it('JUnit has a case per limit; markdown lists the limits with the thresholds; JSON keeps them', () => {
    expect(renderJunit(r)).toMatch(
      /<testcase name="head error rate within its limit"[^>]*>\s*<failure message="head&apos;s error rate 0.08 %|<testcase name="head error rate within its limit"[^>]*>\s*<failure message="head's error rate 0.08 %/,
    );
    expect(renderMarkdown(r)).toContain('head error rate ≤ 0.05 %');
    expect(parseReport(toJson(r), 'again').thresholds.error_rate_max).toBe(0.0005);
  });
});

describe('the gate with limits', () => {
  const gate = (limit: string) =>
    shopGate('checkout.wkl', [
      '--seed',
      shop('seed.sql'),
      '--rounds',
      '1',
      '--confirm-rounds',
      '0',
      ...LATENCY_RULE_OUT_OF_REACH,
      '--p95-max-ms',
      limit,
    ]);

  it('a p95 limit below what head measures fails (exit 1) naming the limit and the value; far above it passes', () => {
    // 1 µs: no statement over a network round trip is that fast. 100 s: none is that slow. The
    // relative latency rule is out of reach: only the absolute limit decides.
    const tight = gate('0.001');
    expect(tight.status, tight.stderr).toBe(1);
    expect(tight.stdout).toMatch(/- head's whole-workload p95 [\d.]+ (µs|ms) exceeds the 0.001 ms limit \(p95-max-ms\)/);
    const loose = gate('100000');
    expect(loose.status, `${loose.stderr}\n${loose.stdout.slice(0, 2000)}`).toBe(0);
  }, 240_000);
});
