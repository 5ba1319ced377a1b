// compareReplays through src/engine/index.ts, on synthetic replay reports: no server needed, only the
// addon (`npm run build:native`; npm test builds it). The statistics themselves are tested in
// Rust (native/core/src/compare); this checks what crosses the boundary.
import { describe, expect, it } from 'vitest';
import { compareReplays, EngineError, type FingerprintReport, type ReplayReport } from '../src/engine/index.js';
import type { Comparison } from '../src/types.js';

const ZERO_LATENCY = { count: 0, mean_us: 0, min_us: 0, p50_us: 0, p95_us: 0, p99_us: 0, max_us: 0 };

interface Fp {
  name: string;
  /** Successful latencies, µs; `null` leaves `samples` out, as a replay without includeSamples does. */
  samples: number[] | null;
  errors?: { sqlstate: string; message: string; count: number }[];
}

/** A fingerprint id: the name padded to 16 hex-looking characters. */
const id = (name: string): string => name.padStart(16, '0');

/** A replay report holding only what the comparison reads filled in; the rest is zero. */
function report(fps: Fp[]): ReplayReport {
  const fingerprints: FingerprintReport[] = fps.map(({ name, samples, errors = [] }) => {
    const failed = errors.reduce((n, e) => n + e.count, 0);
    const ok = samples?.length ?? 0;
    const fp: FingerprintReport = {
      fingerprint: id(name),
      normalized: `SELECT * FROM ${name} WHERE id = $1`,
      kind: 'select',
      counts: {
        captured: ok + failed,
        executed: ok + failed,
        ok,
        errors: failed,
        skipped: 0,
        not_executed: 0,
        skipped_by_reason: {},
        not_executed_by_reason: {},
      },
      latency: ZERO_LATENCY,
      captured_latency: ZERO_LATENCY,
      rows: 0,
      errors,
    };
    return samples ? { ...fp, samples } : fp;
  });
  const totals = { ...fingerprints[0]!.counts, captured: 0, executed: 0 };
  for (const f of fingerprints) {
    totals.captured += f.counts.captured;
    totals.executed += f.counts.executed;
  }
  return {
    status: 'completed',
    message: null,
    server_version: '17.0',
    started_at: '2026-01-01T00:00:00Z',
    wall_time_us: 0,
    speed: 0,
    read_only: false,
    sessions_planned: 0,
    sessions_completed: 0,
    sessions_failed: 0,
    sessions_excluded: 0,
    statements_excluded: 0,
    totals,
    latency: ZERO_LATENCY,
    sessions: [],
    fingerprints,
    warnings: [],
  };
}

/** `n` latencies spread evenly over [lo, hi] µs, shuffled by a fixed stride. */
function spread(n: number, lo: number, hi: number): number[] {
  return Array.from({ length: n }, (_, i) => lo + Math.round(((hi - lo) * ((i * 37) % n)) / (n - 1)));
}

const options = { p95Threshold: 0.2, minDeltaMs: 0.5, minCalls: 20 };

describe('compareReplays', () => {
  it('finds the slowed-down fingerprint and the new error, in the report shape', async () => {
    const base = report([
      { name: 'a', samples: spread(200, 900, 1100) },
      { name: 'b', samples: spread(200, 400, 600) },
      { name: 'gone', samples: spread(30, 100, 200) },
    ]);
    const head = report([
      { name: 'a', samples: spread(200, 900, 1100) },
      {
        name: 'b',
        samples: spread(200, 2400, 2600),
        errors: [
          { sqlstate: '42703', message: 'column "x" does not exist', count: 3 },
          // A statement timeout in one replay: it depends on timing, and one occurrence is no rate.
          { sqlstate: '57014', message: 'canceling statement', count: 1 },
        ],
      },
      { name: 'added', samples: [10, 20] },
    ]);
    const c: Comparison = await compareReplays({ base: [base, base], head: [head], options });

    expect(c.fingerprints.map((f) => f.fingerprint)).toEqual([id('b'), id('a')]);
    const [b, a] = c.fingerprints;
    expect(b).toMatchObject({
      fingerprint: id('b'),
      normalized: 'SELECT * FROM b WHERE id = $1',
      kind: 'select',
      calls_base: 400,
      calls_head: 200,
      regressed: true,
      checks: { over_threshold: true, ci_above_noise: true, over_min_delta: true, enough_calls: true },
    });
    expect(b!.base.p95_us).toBeGreaterThanOrEqual(580);
    expect(b!.head.p95_us).toBeGreaterThanOrEqual(2580);
    expect(b!.delta_us).toBe(b!.head.p95_us - b!.base.p95_us);
    expect(b!.ratio).toBeCloseTo(b!.head.p95_us / b!.base.p95_us, 12);
    expect(b!.ci_low).toBeLessThanOrEqual(b!.ratio);
    expect(b!.ci_high).toBeGreaterThanOrEqual(b!.ratio);
    expect(a).toMatchObject({ ratio: 1, delta_us: 0, regressed: false });

    expect(c.overall).toMatchObject({ calls_base: 800, calls_head: 400 });
    expect(c.noise_floor).toEqual({ value: 0, method: expect.stringMatching(/^not measured/), fingerprints: 0 });
    expect(c.new_errors).toEqual([
      {
        fingerprint: id('b'),
        normalized: 'SELECT * FROM b WHERE id = $1',
        sqlstate: '42703',
        message: 'column "x" does not exist',
        base_count: 0,
        head_count: 3,
        class: 'deterministic',
        rule: 'deterministic',
        base_replays: [0, 0],
        head_replays: [3],
        base_executed: 400,
        head_executed: 204,
        capture_count: null,
        siblings_failing: 0,
        every_head_replay: 0,
        p_value: null,
      },
    ]);
    expect(c.varying_errors).toMatchObject([{ sqlstate: '57014', class: 'interleaving', rule: 'varies', head_replays: [1] }]);
    expect(c.shared_errors).toEqual([]);
    expect(c.fixed_errors).toEqual([]);
    expect(c.only_base).toEqual([{ fingerprint: id('gone'), normalized: 'SELECT * FROM gone WHERE id = $1', kind: 'select', calls: 60 }]);
    expect(c.only_head.map((r) => [r.fingerprint, r.calls])).toEqual([[id('added'), 2]]);
  });

  it('is deterministic for a seed and uses the noise pair', async () => {
    const base = report([{ name: 'a', samples: spread(300, 900, 1100) }]);
    const head = report([{ name: 'a', samples: spread(300, 1200, 1500) }]);
    const noisy = report([{ name: 'a', samples: spread(300, 900, 1300) }]);
    const noise: [ReplayReport, ReplayReport] = [base, noisy];
    const input = { base: [base], head: [head], noise, options: { ...options, seed: 7 } };
    const first = await compareReplays(input);
    expect(await compareReplays(input)).toEqual(first);
    expect(first.noise_floor.fingerprints).toBe(1);
    expect(first.noise_floor.value).toBeCloseTo(1290 / 1090 - 1, 1);
    const [a] = first.fingerprints;
    expect(a!.checks.ci_above_noise).toBe(a!.ci_low > 1 + first.noise_floor.value);
  });

  it('refuses reports without samples', async () => {
    const base = report([{ name: 'a', samples: null }]);
    const err = await compareReplays({ base: [base], head: [base], options }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'E_OPTIONS' });
    expect((err as Error).message).toMatch(/^replay reports need latency samples: replay with includeSamples/);
  });

  it('refuses invalid options by their name', async () => {
    const base = report([{ name: 'a', samples: [1, 2, 3] }]);
    const err = await compareReplays({ base: [base], head: [base], options: { ...options, confidence: 1.5 } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_OPTIONS', message: expect.stringMatching(/^confidence /) });
    const none = await compareReplays({ base: [], head: [base], options }).catch((e: unknown) => e);
    expect(none).toMatchObject({ code: 'E_OPTIONS', message: expect.stringMatching(/^no base replay/) });
  });
});
