// The statistics of a sharded run (docs/gate-statistics.md, "Shards"): each shard's A/B pooled
// per fingerprint, stratified by shard; failures summed and judged over the whole workload.
import { describe, expect, it } from 'vitest';
import type { ErrorDiff, LatencyComparison } from '../src/engine/index.js';
import type { Executions } from '../src/shards/partial.js';
import { poolErrors } from '../src/shards/pool-errors.js';
import { poolLatency, type ShardLatency } from '../src/shards/pool-latency.js';
import type { Thresholds } from '../src/verdict/report-types.js';

const thresholds: Thresholds = {
  p95_threshold: 0.2,
  min_delta_ms: 0.5,
  min_calls: 20,
  max_new_errors: 0,
  confidence: 0.95,
  server_threshold: 0.2,
  server_min_delta_ms: 0.05,
};

const floors = { tail: 0.1, body: 0.05, server: 0.1 };

/**
 * A shard's comparison of a fingerprint: base p95 1 ms, head `ratio` times that, an interval ±
 * `half` in log terms; its replays' medians 500 µs on base and `separation` times that on head
 * (by default `ratio`), in three base-schema replays and three head ones.
 */
function shard(ratio: number, calls: number, half: number, separation = ratio): ShardLatency<LatencyComparison> {
  const base = { p50_us: 500, p95_us: 1000, p99_us: 1500 };
  const head = { p50_us: Math.round(500 * ratio), p95_us: Math.round(1000 * ratio), p99_us: Math.round(1500 * ratio) };
  const comparison: LatencyComparison = {
    calls_base: calls,
    calls_head: calls,
    base,
    head,
    ratio,
    ci_low: ratio * Math.exp(-half),
    ci_high: ratio * Math.exp(half),
    delta_us: head.p95_us - base.p95_us,
    noise_floor: 0.1,
    checks: {
      over_threshold: true,
      ci_above_noise: true,
      over_min_delta: true,
      enough_calls: calls >= 20,
      slower_in_every_replay: separation > 1.2,
    },
    regressed: false,
    rules: [],
  };
  const top = Math.round(500 * separation);
  return { comparison, floors, replays: { base: [480, 500, 490], head: [top, top + 40, top + 20] } };
}

describe('latency over shards', () => {
  it('one shard: its own comparison, exactly', () => {
    const only = shard(2, 100, 0.1);
    const pooled = poolLatency([{ ...only, comparison: { ...only.comparison, regressed: true, rules: ['client_p95'] } }], thresholds);
    expect(pooled).toMatchObject({ ratio: 2, ci_low: only.comparison.ci_low, ci_high: only.comparison.ci_high, regressed: true });
    expect(pooled.rules).toEqual(['client_p95']);
  });

  it('equal shards: the same ratio, an interval narrower by √n, calls added', () => {
    const pooled = poolLatency(
      Array.from({ length: 4 }, () => shard(1.5, 30, 0.2)),
      thresholds,
    );
    expect(pooled.ratio).toBeCloseTo(1.5, 10);
    expect(Math.log(pooled.ci_high / pooled.ratio)).toBeCloseTo(0.1, 10);
    expect(pooled.calls_base).toBe(120);
    expect(pooled.checks.enough_calls).toBe(true);
  });

  it('shards weigh their calls: a shard with few calls moves the estimate little', () => {
    const pooled = poolLatency([shard(1, 1000, 0.05), shard(3, 10, 0.5)], thresholds);
    expect(pooled.ratio).toBeLessThan(1.05);
    expect(pooled.regressed).toBe(false);
  });

  it('fewer than min-calls in every shard, enough together: judged, and a slowdown in every shard is caught', () => {
    const pooled = poolLatency(
      Array.from({ length: 4 }, () => shard(2, 8, 0.3)),
      thresholds,
    );
    expect(pooled.checks.enough_calls).toBe(true);
    expect(pooled.checks.ci_above_noise).toBe(true);
    expect(pooled.regressed).toBe(true);
  });

  it('the replay check is pooled: one noisy shard whose replays overlap does not veto a slowdown the others separate', () => {
    // The sharded shop's +0.2 ms read: three shards' head replays 1.7× base's, one shard's only
    // 1.1× its slowest base replay. Each shard failing alone vetoed it, where one runner, with
    // four times the calls per replay, separates it every time.
    const pooled = poolLatency([shard(1.7, 120, 0.1), shard(1.7, 100, 0.1), shard(1.7, 80, 0.1), shard(1.7, 120, 0.1, 1.1)], thresholds);
    expect(pooled.checks.slower_in_every_replay).toBe(true);
    expect(pooled.regressed).toBe(true);
  });

  it('the replay check is pooled: one shard that separates does not carry shards that do not, nor a shard with few calls a heavy one', () => {
    // What chance gives identical schemas: one shard's head replays all above its base ones, the
    // others' overlapping (fastest head replay below the slowest base one).
    const chance = [shard(1.3, 100, 0.1, 1.5), shard(1.3, 100, 0.1, 0.9), shard(1.3, 100, 0.1, 0.9), shard(1.3, 100, 0.1, 0.9)];
    expect(poolLatency(chance, thresholds).checks.slower_in_every_replay).toBe(false);
    // Nor do three shards far apart carry one whose fastest head replay is below its slowest base one.
    const reversed = [shard(2, 100, 0.1, 3), shard(2, 100, 0.1, 3), shard(2, 100, 0.1, 3), shard(2, 100, 0.1, 0.95)];
    expect(poolLatency(reversed, thresholds).checks.slower_in_every_replay).toBe(false);
    expect(poolLatency([shard(1.3, 1000, 0.1, 1.0), shard(1.3, 30, 0.1, 3)], thresholds).checks.slower_in_every_replay).toBe(false);
  });

  it('the replay check counts the shards that could judge alone, or every shard when none could', () => {
    // Too few calls to judge on its own: its replays do not count.
    const split = [shard(2, 100, 0.1), shard(2, 5, 0.4, 0.5)];
    expect(poolLatency(split, thresholds).checks.slower_in_every_replay).toBe(true);
    expect(poolLatency([shard(2, 5, 0.4), shard(2, 5, 0.4, 0.5)], thresholds).checks.slower_in_every_replay).toBe(false);
    // A shard without replays on a side does not veto, as in the engine.
    const empty = { ...shard(2, 100, 0.1), replays: { base: [], head: [600] } };
    expect(poolLatency([shard(2, 100, 0.1), empty], thresholds).checks.slower_in_every_replay).toBe(true);
  });
});

/** An error as a shard's comparison lists it. */
function failure(rule: ErrorDiff['rule'], base: number[], head: number[], extra: Partial<ErrorDiff> = {}): ErrorDiff {
  const races = rule === 'rate' || rule === 'varies' || rule === 'every_replay';
  return {
    fingerprint: 'a1b2c3d4e5f60718',
    normalized: 'INSERT INTO t VALUES ($1)',
    sqlstate: races ? '23505' : '23502',
    message: 'boom',
    base_count: base.slice(0, -1).reduce((a, b) => a + b, 0),
    head_count: head.reduce((a, b) => a + b, 0),
    class: races ? 'interleaving' : 'deterministic',
    rule,
    base_replays: base,
    head_replays: head,
    base_executed: 400,
    head_executed: 300,
    capture_count: null,
    siblings_failing: 0,
    every_head_replay: 0,
    p_value: null,
    ...extra,
  };
}

const ran: Record<string, Executions> = {
  a1b2c3d4e5f60718: { normalized: 'INSERT INTO t VALUES ($1)', kind: 'insert', base: 300, noise: 100, head: 300 },
};
const lists = (diff: ErrorDiff, list: 'new_errors' | 'varying_errors' | 'shared_errors' | 'fixed_errors') => ({
  comparison: { new_errors: [], varying_errors: [], shared_errors: [], fixed_errors: [], [list]: [diff] },
  executions: ran,
});

describe('failures over shards', () => {
  it('new in one shard, never on base anywhere: counts, the counts summed', () => {
    const pooled = poolErrors([
      lists(failure('deterministic', [0, 0, 0, 0], [2, 2, 2]), 'new_errors'),
      {
        ...lists(failure('fixed', [0], [0]), 'fixed_errors'),
        comparison: { new_errors: [], varying_errors: [], shared_errors: [], fixed_errors: [] },
      },
    ]);
    expect(pooled.new_errors).toHaveLength(1);
    expect(pooled.new_errors[0]).toMatchObject({ rule: 'deterministic', head_count: 6, head_executed: 600, base_executed: 800 });
  });

  it('new in one shard, but base had it in another: judged by rate over the whole workload', () => {
    const seenOnBase = lists(failure('fixed', [3, 3, 3, 3], [0, 0, 0]), 'fixed_errors');
    const few = poolErrors([lists(failure('deterministic', [0, 0, 0, 0], [2, 1, 1]), 'new_errors'), seenOnBase]);
    expect(few.new_errors).toEqual([]);
    expect(few.shared_errors[0]?.rule).toBe('fidelity');
    const many = poolErrors([lists(failure('deterministic', [0, 0, 0, 0], [40, 40, 40]), 'new_errors'), seenOnBase]);
    expect(many.new_errors[0]?.rule).toBe('more_often');
  });

  it('a rate test that one shard of several passed is held to the number of shards (Bonferroni)', () => {
    const rate = (p: number) => lists(failure('rate', [0, 1, 0, 0], [4, 5, 6], { p_value: p }), 'new_errors');
    const quiet = lists(failure('varies', [1, 0, 1, 0], [1, 0, 0]), 'varying_errors');
    expect(poolErrors([rate(0.0004), quiet, quiet]).new_errors).toEqual([]);
    expect(poolErrors([rate(0.0001), quiet, quiet]).new_errors[0]?.rule).toBe('rate');
  });

  it('the same statements failing in every head replay of one shard count: a statement belongs to one shard', () => {
    const pooled = poolErrors([
      lists(failure('every_replay', [0, 0, 0, 0], [1, 1, 1], { every_head_replay: 1 }), 'new_errors'),
      lists(failure('varies', [1, 0, 0, 0], [0, 1, 0]), 'varying_errors'),
    ]);
    expect(pooled.new_errors[0]).toMatchObject({ rule: 'every_replay', head_replays: [1, 1, 1, 0, 1, 0] });
  });
});
