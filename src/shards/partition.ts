/**
 * The workload's sessions cut into N shards: deterministic (the same workload and N give every
 * runner the same cut, so N runners that never talk to each other replay disjoint parts that
 * make up the whole), balanced by statements and captured time, with sessions linked by generated
 * keys kept together.
 *
 * Groups of sessions are taken in the order they start and cut into N contiguous runs. Contiguous
 * in time, because a replay keeps the captured timing: a shard whose sessions span a quarter of
 * the capture replays in about a quarter of its wall time, where a shard of every fourth session
 * would take the whole capture's time at a quarter of its load. Each group weighs half its share
 * of the statements and half its share of the captured statement time (the sum of the captured
 * durations), so that neither many cheap statements nor a few slow ones pile up on one runner.
 */
import type { WorkloadProfileJson } from '../engine/index.js';

/** One group's size. */
interface GroupSize {
  sessions: number[];
  start: number;
  statements: number;
  busyUs: number;
}

function sizeOf(profile: WorkloadProfileJson, sessions: number[]): GroupSize {
  let start = Number.POSITIVE_INFINITY;
  let statements = 0;
  let busyUs = 0;
  for (const s of sessions) {
    for (const q of profile.sessions[s]!.queries) {
      start = Math.min(start, q.start_offset_us);
      statements += 1;
      busyUs += q.duration_us;
    }
  }
  return { sessions, start: Number.isFinite(start) ? start : 0, statements, busyUs };
}

/**
 * Assigns groups of sessions to shards.
 * @param profile the workload
 * @param groups sessions that replay together (session-groups.ts)
 * @param count how many shards
 * @returns per shard (0-based), its session positions in the profile's order; every shard has at
 *   least one group when there are at least `count` groups, and the last shards are empty otherwise
 */
export function partitionSessions(profile: WorkloadProfileJson, groups: number[][], count: number): number[][] {
  const sized = groups.map((g) => sizeOf(profile, g)).sort((a, b) => a.start - b.start || a.sessions[0]! - b.sessions[0]!);
  const totalStatements = sized.reduce((n, g) => n + g.statements, 0);
  const totalBusy = sized.reduce((n, g) => n + g.busyUs, 0);
  const weight = (g: GroupSize) =>
    (totalStatements > 0 ? g.statements / totalStatements : 1 / sized.length) / 2 +
    (totalBusy > 0 ? g.busyUs / totalBusy : 1 / sized.length) / 2;
  const shards: number[][] = Array.from({ length: count }, () => []);
  let before = 0;
  let previous = 0;
  sized.forEach((g, i) => {
    const w = weight(g);
    // The shard whose share of the total holds the middle of this group's weight...
    const middle = Math.min(count - 1, Math.floor((before + w / 2) * count));
    // ...one shard further at most (no shard left empty behind a heavy group), and far enough
    // along that every shard still to come gets a group of its own.
    let shard = i === 0 ? 0 : Math.min(Math.max(middle, previous), previous + 1);
    if (sized.length >= count) shard = Math.max(shard, count - (sized.length - i));
    shards[shard]!.push(...g.sessions);
    before += w;
    previous = shard;
  });
  for (const shard of shards) shard.sort((a, b) => a - b);
  return shards;
}
