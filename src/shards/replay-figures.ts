/**
 * What a shard keeps of its replays for the replay check over shards (docs/gate-statistics.md,
 * "Shards"): per compared fingerprint, each replay's median latency (the client's and the
 * server's own), and per replay the p95 of the compared fingerprints pooled, as the engine
 * computes them for its replay check (native/core/src/compare/replays.rs). The engine says only
 * whether the shard's replays separated; the aggregate needs by how much, so the shard computes
 * the figures from the same samples while it still has them.
 */
import type { ReplayReport } from '../engine/index.js';
import { percentile } from './nearest-rank.js';

/** One statistic per replay: base's side holds the base rounds and the noise replay, in the order they ran. */
export interface ReplaySides {
  base: number[];
  head: number[];
}

/** A fingerprint's per-replay medians: of the client's round trips, and of the server's own times (empty when not measured). */
export interface ReplayMedians {
  client: ReplaySides;
  server: ReplaySides;
}

export interface ShardReplayFigures {
  /** By compared fingerprint. */
  fingerprints: Record<string, ReplayMedians>;
  /** Each replay's p95 over the compared fingerprints' samples pooled (the whole workload's replay check). */
  overall: ReplaySides;
}

type SideOf = 'base' | 'head' | 'noise';

/**
 * How far a side's replays stood apart: ln(fastest head replay / slowest base-schema replay),
 * each at least 1 µs as in the engine, so the engine's replay check holds exactly when it exceeds
 * ln(1 + threshold).
 * @returns null without a replay on a side
 */
export function separation(r: ReplaySides): number | null {
  if (r.base.length === 0 || r.head.length === 0) return null;
  return Math.log(Math.max(Math.min(...r.head), 1) / Math.max(Math.max(...r.base), 1));
}

/**
 * The shard's replay figures.
 * @param replays every replay of the shard with its side, samples included
 * @param compared the fingerprints its comparison compared
 * @returns the figures; a replay in which a fingerprint had no successful execution (or no
 *   server time) gives it no figure, as the engine leaves such a replay out
 */
export function replayFigures(replays: readonly { side: SideOf; report: ReplayReport }[], compared: readonly string[]): ShardReplayFigures {
  const wanted = new Set(compared);
  const fingerprints: Record<string, ReplayMedians> = {};
  for (const fp of compared) fingerprints[fp] = { client: { base: [], head: [] }, server: { base: [], head: [] } };
  const overall: ReplaySides = { base: [], head: [] };
  for (const { side, report } of replays) {
    const to = side === 'head' ? 'head' : 'base';
    const pooled: number[] = [];
    for (const f of report.fingerprints) {
      if (!wanted.has(f.fingerprint)) continue;
      const figures = fingerprints[f.fingerprint]!;
      const client = f.samples ?? [];
      const server = f.server_samples ?? [];
      if (client.length > 0) figures.client[to].push(percentile(client, 50));
      if (server.length > 0) figures.server[to].push(percentile(server, 50));
      // One value at a time: a spread of a large array would overflow the call stack.
      for (const v of client) pooled.push(v);
    }
    if (pooled.length > 0) {
      pooled.sort((a, b) => a - b);
      overall[to].push(percentile(pooled, 95));
    }
  }
  return { fingerprints, overall };
}
