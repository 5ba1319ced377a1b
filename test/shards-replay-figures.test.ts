// The figures a shard keeps for the replay check over shards (src/shards/replay-figures.ts) are the
// engine's own: on synthetic replays whose fingerprints separate by anything from nothing to 2×,
// each fingerprint's separation from the figures clears the threshold exactly when the engine's
// replay check holds, for the client's times, the server's and the whole workload.
import { describe, expect, it } from 'vitest';
import { compareReplays, type FingerprintReport, type ReplayReport } from '../src/engine/index.js';
import { type ReplaySides, replayFigures, separation } from '../src/shards/replay-figures.js';
import { NO_LATENCY, replayReportOf } from './support/replay-report.js';

/** A deterministic generator in [0, 1). */
function generator(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** One replay: per fingerprint `calls` latencies around `level(i)` µs, the server's own 60 % of each. */
function replay(fingerprints: number, calls: number, level: (i: number) => number, random: () => number): ReplayReport {
  const fps: FingerprintReport[] = Array.from({ length: fingerprints }, (_, i) => {
    const ok = Array.from({ length: calls }, () => Math.round(level(i) * (0.7 + 0.6 * random()))).sort((a, b) => a - b);
    const counts = {
      captured: calls,
      executed: calls,
      ok: calls,
      errors: 0,
      skipped: 0,
      not_executed: 0,
      skipped_by_reason: {},
      not_executed_by_reason: {},
    };
    return {
      fingerprint: String(i + 1).padStart(16, '0'),
      normalized: `SELECT * FROM t${i} WHERE id = $1`,
      kind: 'select',
      counts,
      latency: NO_LATENCY,
      captured_latency: NO_LATENCY,
      rows: 0,
      errors: [],
      samples: ok,
      server_samples: ok.map((v) => Math.round(v * 0.6)),
    };
  });
  return replayReportOf(fps, { server_time: { ok: fingerprints * calls, timed: fingerprints * calls } });
}

/** The engine's check on the figures, as the aggregate reads them. */
const separates = (r: ReplaySides, threshold: number) => separation(r)! > Math.log(1 + threshold);

describe('a shard’s replay figures', () => {
  it('separate exactly when the engine’s replay check holds: client, server and the whole workload', async () => {
    const random = generator(7);
    const fingerprints = 40;
    // Fingerprint i is slower on head by 0 % to 100 %; every replay moves by up to ±15 % of its own.
    const slowdown = (i: number) => 1 + i / (fingerprints - 1);
    const side = (head: boolean) => {
      const drift = Array.from({ length: fingerprints }, () => 0.85 + 0.3 * random());
      return replay(fingerprints, 30, (i) => 400 * drift[i]! * (head ? slowdown(i) : 1), random);
    };
    const base = [side(false), side(false), side(false)];
    const noise = side(false);
    const head = [side(true), side(true), side(true)];
    const comparison = await compareReplays({
      base,
      head,
      noise: [base[0]!, noise],
      options: { p95Threshold: 0.2, minDeltaMs: 0, minCalls: 20, serverThreshold: 0.2, serverMinDeltaMs: 0 },
    });
    expect(comparison.server_time.measured).toBe(true);
    const compared = comparison.fingerprints.map((f) => f.fingerprint);
    expect(compared).toHaveLength(fingerprints);
    const figures = replayFigures(
      [
        ...base.map((report) => ({ side: 'base' as const, report })),
        { side: 'noise' as const, report: noise },
        ...head.map((report) => ({ side: 'head' as const, report })),
      ],
      compared,
    );
    let held = 0;
    for (const f of comparison.fingerprints) {
      const medians = figures.fingerprints[f.fingerprint]!;
      expect(medians.client.base).toHaveLength(4);
      expect(medians.client.head).toHaveLength(3);
      expect(separates(medians.client, 0.2), f.fingerprint).toBe(f.checks.slower_in_every_replay);
      expect(separates(medians.server, 0.2), f.fingerprint).toBe(f.server_time!.checks.slower_in_every_replay);
      if (f.checks.slower_in_every_replay) held += 1;
    }
    // The cases span the threshold: some fingerprints separate, some do not.
    expect(held).toBeGreaterThan(5);
    expect(held).toBeLessThan(fingerprints - 5);
    expect(separates(figures.overall, 0.2)).toBe(comparison.overall.checks.slower_in_every_replay);
    expect(separates(figures.overall, 0.05)).toBe(true);
  });

  it('leave out a replay in which a fingerprint had no success, and keep only the compared fingerprints', () => {
    const random = generator(3);
    const a = replay(2, 25, () => 300, random);
    const b = replay(2, 25, () => 300, random);
    b.fingerprints[0] = { ...b.fingerprints[0]!, samples: [], server_samples: [] };
    const figures = replayFigures(
      [
        { side: 'base', report: a },
        { side: 'head', report: b },
      ],
      [a.fingerprints[0]!.fingerprint],
    );
    expect(Object.keys(figures.fingerprints)).toEqual([a.fingerprints[0]!.fingerprint]);
    expect(figures.fingerprints[a.fingerprints[0]!.fingerprint]!.client.head).toEqual([]);
    expect(figures.fingerprints[a.fingerprints[0]!.fingerprint]!.client.base).toHaveLength(1);
    // The head replay's only compared fingerprint had no success: no whole-workload figure either.
    expect(figures.overall).toEqual({ base: [expect.any(Number)], head: [] });
  });
});
