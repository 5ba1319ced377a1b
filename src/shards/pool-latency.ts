/**
 * The latency rules over shards (docs/gate-statistics.md, "Shards"). Each shard is an A/B of
 * its own, on its own machine: its comparison says, per fingerprint, how much slower head was
 * than base *there* (a ratio of p95s, a shift of server medians) with a bootstrap interval. Raw
 * latencies of two machines are never put together; the shards' estimates are, stratified by
 * shard, as in a fixed-effect meta-analysis:
 *
 * - the pooled estimate is the weighted mean of the shards' estimates (of log ratios for the
 *   client p95 and the medians' ratio, of shifts in µs for the server time), each shard weighing
 *   its effective number of calls n_b·n_h / (n_b + n_h), which does not depend on the latencies;
 * - each half of the interval is pooled on its own, as the root of the weighted sum of squared
 *   half-widths over the sum of the weights (a shard's interval half-width is z times its
 *   standard error, so this is the weighted mean's z·SE), so one shard gives back its own interval;
 * - the noise floors (tail, body, server) are the weighted means of the shards' floors: a bound
 *   on the weighted mean of the shards' own systematic shifts;
 * - calls add up; the replay check is pooled the same way: each shard's separation (ln of its
 *   fastest head replay's median over its slowest base-schema replay's, from the figures in its
 *   partial) must be above 0 in each shard that could judge the fingerprint on its own (min-calls
 *   on each side; every shard that ran it when none could), and their mean with the same weights
 *   must clear ln(1 + threshold). Requiring every shard to separate on its own, with a quarter
 *   of the calls per replay, missed a +0.2 ms read that one runner catches every time.
 *
 * Every check of the one-runner rule is then applied to the pooled numbers, with the same
 * thresholds; a fingerprint that ran in one shard only is judged exactly as that shard judged it.
 */
import type { FingerprintComparison, LatencyChecks, LatencyComparison, Percentiles, ServerTimeComparison } from '../engine/index.js';
import type { Thresholds } from '../verdict/report-types.js';
import { type ReplaySides, separation } from './replay-figures.js';

/** How many body floors a median must move by (the engine's BODY_MARGIN, docs/gate-statistics.md). */
const BODY_MARGIN = 3;

/** One shard's estimate of one comparison, with what is pooled beside it. */
export interface ShardLatency<C> {
  comparison: C;
  /** The shard's tail floor (`noise_floor.value`), body floor, and server floor. */
  floors: { tail: number; body: number; server: number };
  /** The shard's per-replay figures for this comparison's replay check: medians, or the whole workload's p95s. */
  replays: ReplaySides;
}

/** A shard's comparison of one fingerprint, with the per-replay server medians beside the client's. */
export type ShardFingerprint = ShardLatency<FingerprintComparison> & { serverReplays: ReplaySides };

function effectiveCalls(base: number, head: number): number {
  return base + head === 0 ? 0 : (base * head) / (base + head);
}

/** The weighted mean of `value` over the shards; equal weights when every weight is 0. */
function mean<T>(items: readonly { item: T; w: number }[], value: (item: T) => number): number {
  const total = items.reduce((n, x) => n + x.w, 0);
  if (total === 0) return items.reduce((n, x) => n + value(x.item), 0) / items.length;
  return items.reduce((n, x) => n + x.w * value(x.item), 0) / total;
}

/** The weighted mean's half-width from the shards' half-widths: √(Σ w² h²) / Σ w. */
function halfWidth<T>(items: readonly { item: T; w: number }[], half: (item: T) => number): number {
  const total = items.reduce((n, x) => n + x.w, 0);
  if (total === 0) return Math.sqrt(items.reduce((n, x) => n + half(x.item) ** 2, 0)) / items.length;
  return Math.sqrt(items.reduce((n, x) => n + (x.w * half(x.item)) ** 2, 0)) / total;
}

function pooledPercentiles<T>(items: readonly { item: T; w: number }[], of: (item: T) => Percentiles): Percentiles {
  return {
    p50_us: Math.round(mean(items, (x) => of(x).p50_us)),
    p95_us: Math.round(mean(items, (x) => of(x).p95_us)),
    p99_us: Math.round(mean(items, (x) => of(x).p99_us)),
  };
}

/** The engine's ratio: a 0 µs percentile counts as 1 µs. */
function ratioOf(base: number, head: number): number {
  return Math.max(head, 1) / Math.max(base, 1);
}

/**
 * The replay check over shards: every shard's head replays above its base ones (separation > 0),
 * and the shards' separations, weighted as their estimates are, above ln(1 + threshold). Over the shards that could judge alone, else every shard; a shard with no
 * replay on a side is left out, and when none is left the check does not veto (the engine's rule
 * for a fingerprint without replays).
 */
function separatedOverShards<C extends { calls_base: number; calls_head: number }>(
  shards: readonly ShardLatency<C>[],
  minCalls: number,
  threshold: number,
): boolean {
  const able = shards.filter((s) => s.comparison.calls_base >= minCalls && s.comparison.calls_head >= minCalls);
  const items = (able.length > 0 ? able : shards).flatMap((s) => {
    const item = separation(s.replays);
    return item === null ? [] : [{ item, w: effectiveCalls(s.comparison.calls_base, s.comparison.calls_head) }];
  });
  if (items.length === 0) return true;
  // Every shard's head replays above its base ones at all keeps the product of the shards'
  // chances under identical schemas; only the margin of the threshold is pooled.
  return items.every((x) => x.item > 0) && mean(items, (x) => x) > Math.log(1 + threshold);
}

/**
 * The client p95 rule over shards.
 * @param shards each shard's comparison of it (a fingerprint's, or the whole workload's) with its floors
 * @param t the thresholds
 * @returns the pooled comparison, `regressed` and `rules` for the client p95 rule only
 */
export function poolLatency<C extends LatencyComparison>(shards: readonly ShardLatency<C>[], t: Thresholds): LatencyComparison {
  if (shards.length === 1) {
    const c = shards[0]!.comparison;
    const clientFired = c.rules.includes('client_p95');
    return { ...pick(c), regressed: clientFired, rules: clientFired ? ['client_p95'] : [] };
  }
  const items = shards.map((s) => ({ item: s, w: effectiveCalls(s.comparison.calls_base, s.comparison.calls_head) }));
  const log = mean(items, (s) => Math.log(s.comparison.ratio));
  const low = halfWidth(items, (s) => Math.max(0, Math.log(s.comparison.ratio) - Math.log(Math.max(s.comparison.ci_low, 1e-9))));
  const high = halfWidth(items, (s) => Math.max(0, Math.log(Math.max(s.comparison.ci_high, 1e-9)) - Math.log(s.comparison.ratio)));
  const ratio = Math.exp(log);
  const ciLow = Math.exp(log - low);
  const noiseFloor = mean(items, (s) => s.floors.tail);
  const bodyFloor = mean(items, (s) => s.floors.body);
  const medianRatio = Math.exp(mean(items, (s) => Math.log(ratioOf(s.comparison.base.p50_us, s.comparison.head.p50_us))));
  const callsBase = shards.reduce((n, s) => n + s.comparison.calls_base, 0);
  const callsHead = shards.reduce((n, s) => n + s.comparison.calls_head, 0);
  const deltaUs = Math.round(mean(items, (s) => s.comparison.delta_us));
  const checks: LatencyChecks = {
    over_threshold: ratio - 1 > t.p95_threshold,
    ci_above_noise:
      ciLow > 1 + noiseFloor || (ciLow > 1 + t.p95_threshold && medianRatio - 1 > Math.max(t.p95_threshold, BODY_MARGIN * bodyFloor)),
    over_min_delta: deltaUs > t.min_delta_ms * 1000,
    enough_calls: callsBase >= t.min_calls && callsHead >= t.min_calls,
    slower_in_every_replay: separatedOverShards(shards, t.min_calls, t.p95_threshold),
  };
  const regressed = Object.values(checks).every(Boolean);
  return {
    calls_base: callsBase,
    calls_head: callsHead,
    base: pooledPercentiles(items, (s) => s.comparison.base),
    head: pooledPercentiles(items, (s) => s.comparison.head),
    ratio,
    ci_low: ciLow,
    ci_high: Math.exp(log + high),
    delta_us: deltaUs,
    noise_floor: noiseFloor,
    checks,
    regressed,
    rules: regressed ? ['client_p95'] : [],
  };
}

/** The latency fields of a comparison, without what a fingerprint adds. */
function pick(c: LatencyComparison): Omit<LatencyComparison, 'regressed' | 'rules'> {
  return {
    calls_base: c.calls_base,
    calls_head: c.calls_head,
    base: c.base,
    head: c.head,
    ratio: c.ratio,
    ci_low: c.ci_low,
    ci_high: c.ci_high,
    delta_us: c.delta_us,
    noise_floor: c.noise_floor,
    checks: c.checks,
  };
}

/**
 * The server-time rule over shards, for a fingerprint the shards measured it for.
 * @param shards each shard's server-time comparison of the fingerprint with its floors
 * @param t the thresholds
 * @returns the pooled comparison, or null when no shard has one
 */
export function poolServerTime(shards: readonly ShardLatency<ServerTimeComparison>[], t: Thresholds): ServerTimeComparison | null {
  if (shards.length === 0) return null;
  if (shards.length === 1) return shards[0]!.comparison;
  const items = shards.map((s) => ({ item: s, w: effectiveCalls(s.comparison.calls_base, s.comparison.calls_head) }));
  const shift = mean(items, (s) => s.comparison.shift_us);
  const ciLow = shift - halfWidth(items, (s) => Math.max(0, s.comparison.shift_us - s.comparison.ci_low_us));
  const ciHigh = shift + halfWidth(items, (s) => Math.max(0, s.comparison.ci_high_us - s.comparison.shift_us));
  const ratio = Math.exp(mean(items, (s) => Math.log(s.comparison.ratio)));
  const base = pooledPercentiles(items, (s) => s.comparison.base);
  const floor = mean(items, (s) => s.floors.server);
  const callsBase = shards.reduce((n, s) => n + s.comparison.calls_base, 0);
  const callsHead = shards.reduce((n, s) => n + s.comparison.calls_head, 0);
  const threshold = t.server_threshold ?? 0.2;
  const checks = {
    over_threshold: ratio - 1 > threshold,
    ci_above_noise: ciLow > 0 && ciLow / Math.max(base.p50_us, 1) > floor,
    over_min_delta: shift > (t.server_min_delta_ms ?? 0.05) * 1000,
    enough_calls: callsBase >= t.min_calls && callsHead >= t.min_calls,
    slower_in_every_replay: separatedOverShards(shards, t.min_calls, threshold),
  };
  return {
    calls_base: callsBase,
    calls_head: callsHead,
    base,
    head: pooledPercentiles(items, (s) => s.comparison.head),
    ratio,
    shift_us: Math.round(shift),
    ci_low_us: Math.round(ciLow),
    ci_high_us: Math.round(ciHigh),
    noise_floor: floor,
    checks,
    regressed: Object.values(checks).every(Boolean),
  };
}

/**
 * One fingerprint over the shards that compared it: both rules pooled.
 * @param shards each shard's comparison of it, with the shard's floors
 * @param t the thresholds
 * @returns the fingerprint's pooled comparison
 */
export function poolFingerprint(shards: readonly ShardFingerprint[], t: Thresholds): FingerprintComparison {
  const first = shards[0]!.comparison;
  const latency = poolLatency(shards, t);
  const server = poolServerTime(
    shards.flatMap((s) =>
      s.comparison.server_time ? [{ comparison: s.comparison.server_time, floors: s.floors, replays: s.serverReplays }] : [],
    ),
    t,
  );
  const rules = [...latency.rules];
  if (server?.regressed) rules.push('server_time');
  return {
    ...latency,
    fingerprint: first.fingerprint,
    normalized: first.normalized,
    kind: first.kind,
    server_time: server,
    regressed: rules.length > 0,
    rules,
  };
}
